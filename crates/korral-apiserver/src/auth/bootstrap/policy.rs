//! The shape of the bootstrap tables: rules, roles, subjects and bindings as compact constant
//! data, and their rendering into the objects the server stores (upstream's `PolicyRule`
//! fields and RBAC object layout, with the bootstrap label and auto-update annotation).

use serde_json::{Map, Value, json};

/// The RBAC API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// The label every bootstrap object carries (upstream's `bootstrappolicy.Label`).
pub const BOOTSTRAP_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");

/// The annotation every bootstrap object carries (upstream's `bootstrappolicy.Annotation`).
pub const AUTO_UPDATE: (&str, &str) = ("rbac.authorization.kubernetes.io/autoupdate", "true");

/// `get`, `list`, `watch`.
pub const READ: &[&str] = &["get", "list", "watch"];
/// Upstream's `Write`, sorted as its rule builder sorts verbs.
pub const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
/// Upstream's `ReadWrite`, sorted.
pub const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// The verbs of upstream's `eventsRule()`.
pub const EVENT_VERBS: &[&str] = &["create", "patch", "update"];

/// One policy rule. Lists are in upstream's (sorted) order; empty ones are left out.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// `apiGroups`.
    pub groups: &'static [&'static str],
    /// `resources`.
    pub resources: &'static [&'static str],
    /// `resourceNames`.
    pub names: &'static [&'static str],
    /// `nonResourceURLs`.
    pub urls: &'static [&'static str],
    /// `verbs`.
    pub verbs: &'static [&'static str],
}

/// A resource rule.
pub const fn rule(
    groups: &'static [&'static str],
    resources: &'static [&'static str],
    verbs: &'static [&'static str],
) -> Rule {
    Rule {
        groups,
        resources,
        names: &[],
        urls: &[],
        verbs,
    }
}

/// A resource rule limited to `names`.
pub const fn named(
    groups: &'static [&'static str],
    resources: &'static [&'static str],
    names: &'static [&'static str],
    verbs: &'static [&'static str],
) -> Rule {
    Rule {
        groups,
        resources,
        names,
        urls: &[],
        verbs,
    }
}

/// A non-resource URL rule.
pub const fn urls(urls: &'static [&'static str], verbs: &'static [&'static str]) -> Rule {
    Rule {
        groups: &[],
        resources: &[],
        names: &[],
        urls,
        verbs,
    }
}

/// Upstream's `eventsRule()`: writing events in the core and `events.k8s.io` groups.
pub const EVENTS: Rule = rule(&["", "events.k8s.io"], &["events"], EVENT_VERBS);

/// A bootstrap role: a ClusterRole, or a Role when it has a namespace.
#[derive(Debug, Clone, Copy)]
pub struct Role {
    /// `metadata.name`.
    pub name: &'static str,
    /// `metadata.namespace` of a Role; `None` for a ClusterRole.
    pub namespace: Option<&'static str>,
    /// Labels besides the bootstrap label.
    pub labels: &'static [(&'static str, &'static str)],
    /// The label of `aggregationRule.clusterRoleSelectors[0].matchLabels` (value `"true"`).
    pub aggregate: Option<&'static str>,
    /// `rules`.
    pub rules: &'static [Rule],
}

/// A ClusterRole with plain rules.
pub const fn cluster_role(name: &'static str, rules: &'static [Rule]) -> Role {
    Role {
        name,
        namespace: None,
        labels: &[],
        aggregate: None,
        rules,
    }
}

/// A Role of `namespace`.
pub const fn namespaced_role(
    namespace: &'static str,
    name: &'static str,
    rules: &'static [Rule],
) -> Role {
    Role {
        name,
        namespace: Some(namespace),
        labels: &[],
        aggregate: None,
        rules,
    }
}

/// A subject of a bootstrap binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    /// A group.
    Group(&'static str),
    /// A user.
    User(&'static str),
    /// A service account: namespace, name.
    ServiceAccount(&'static str, &'static str),
}

/// A bootstrap binding: a ClusterRoleBinding, or a RoleBinding (of a Role) when it has a
/// namespace.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.namespace` of a RoleBinding; `None` for a ClusterRoleBinding.
    pub namespace: Option<&'a str>,
    /// `roleRef.name`.
    pub role: &'a str,
    /// `subjects` (left out when empty, as upstream's `system:node` binding).
    pub subjects: &'a [Subject],
}

/// A ClusterRoleBinding of the ClusterRole `role`.
pub const fn cluster_binding(
    name: &'static str,
    role: &'static str,
    subjects: &'static [Subject],
) -> Binding<'static> {
    Binding {
        name,
        namespace: None,
        role,
        subjects,
    }
}

/// A RoleBinding in `namespace` of the Role `role` there.
pub const fn namespaced_binding(
    namespace: &'static str,
    name: &'static str,
    role: &'static str,
    subjects: &'static [Subject],
) -> Binding<'static> {
    Binding {
        name,
        namespace: Some(namespace),
        role,
        subjects,
    }
}

/// A list of strings as JSON.
fn strings(items: &[&str]) -> Value {
    Value::Array(items.iter().map(|s| Value::String((*s).into())).collect())
}

/// `metadata` of a bootstrap object.
fn metadata(
    name: &str,
    namespace: Option<&str>,
    extra_labels: &[(&'static str, &'static str)],
) -> Value {
    let mut labels = Map::new();
    for (key, value) in extra_labels.iter().chain([&BOOTSTRAP_LABEL]) {
        labels.insert((*key).into(), Value::String((*value).into()));
    }
    let mut md = Map::new();
    md.insert("name".into(), Value::String(name.into()));
    if let Some(ns) = namespace {
        md.insert("namespace".into(), Value::String(ns.into()));
    }
    md.insert("labels".into(), Value::Object(labels));
    md.insert("annotations".into(), json!({AUTO_UPDATE.0: AUTO_UPDATE.1}));
    Value::Object(md)
}

impl Rule {
    /// The rule as a `PolicyRule` object.
    pub fn to_json(self) -> Value {
        let mut out = Map::new();
        out.insert("verbs".into(), strings(self.verbs));
        let fields = [
            ("apiGroups", self.groups),
            ("resources", self.resources),
            ("resourceNames", self.names),
            ("nonResourceURLs", self.urls),
        ];
        for (key, items) in fields {
            if !items.is_empty() {
                out.insert(key.into(), strings(items));
            }
        }
        Value::Object(out)
    }
}

impl Role {
    /// The role as a ClusterRole or Role object.
    pub fn to_json(self) -> Value {
        let kind = if self.namespace.is_some() {
            "Role"
        } else {
            "ClusterRole"
        };
        let mut out = Map::new();
        out.insert("apiVersion".into(), Value::String(format!("{GROUP}/v1")));
        out.insert("kind".into(), Value::String(kind.into()));
        out.insert(
            "metadata".into(),
            metadata(self.name, self.namespace, self.labels),
        );
        if let Some(label) = self.aggregate {
            out.insert(
                "aggregationRule".into(),
                json!({"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]}),
            );
        }
        out.insert(
            "rules".into(),
            Value::Array(self.rules.iter().map(|r| r.to_json()).collect()),
        );
        Value::Object(out)
    }
}

impl Subject {
    /// The subject as an RBAC `Subject` object.
    pub fn to_json(self) -> Value {
        match self {
            Self::Group(name) => json!({"apiGroup": GROUP, "kind": "Group", "name": name}),
            Self::User(name) => json!({"apiGroup": GROUP, "kind": "User", "name": name}),
            Self::ServiceAccount(namespace, name) => {
                json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
            }
        }
    }
}

impl Binding<'_> {
    /// The binding as a ClusterRoleBinding or RoleBinding object.
    pub fn to_json(self) -> Value {
        let (kind, role_kind) = if self.namespace.is_some() {
            ("RoleBinding", "Role")
        } else {
            ("ClusterRoleBinding", "ClusterRole")
        };
        let mut out = Map::new();
        out.insert("apiVersion".into(), Value::String(format!("{GROUP}/v1")));
        out.insert("kind".into(), Value::String(kind.into()));
        out.insert("metadata".into(), metadata(self.name, self.namespace, &[]));
        out.insert(
            "roleRef".into(),
            json!({"apiGroup": GROUP, "kind": role_kind, "name": self.role}),
        );
        if !self.subjects.is_empty() {
            out.insert(
                "subjects".into(),
                Value::Array(self.subjects.iter().map(|s| s.to_json()).collect()),
            );
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_render_upstream_fields_and_leave_out_empty_ones() {
        assert_eq!(
            rule(&["apps"], &["deployments"], READ).to_json(),
            json!({"verbs": ["get", "list", "watch"], "apiGroups": ["apps"], "resources": ["deployments"]})
        );
        assert_eq!(
            named(&[""], &["configmaps"], &["cluster-info"], &["update"]).to_json(),
            json!({"verbs": ["update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"]})
        );
        assert_eq!(
            urls(&["/healthz"], &["get"]).to_json(),
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]})
        );
    }

    #[test]
    fn roles_carry_the_bootstrap_label_annotation_and_aggregation() {
        const RULES: &[Rule] = &[EVENTS];
        let role = Role {
            name: "edit",
            namespace: None,
            labels: &[("rbac.authorization.k8s.io/aggregate-to-admin", "true")],
            aggregate: Some("rbac.authorization.k8s.io/aggregate-to-edit"),
            rules: RULES,
        };
        assert_eq!(
            role.to_json(),
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {
                    "name": "edit",
                    "labels": {
                        "rbac.authorization.k8s.io/aggregate-to-admin": "true",
                        "kubernetes.io/bootstrapping": "rbac-defaults",
                    },
                    "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
                },
                "aggregationRule": {"clusterRoleSelectors": [
                    {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}
                ]},
                "rules": [{"verbs": ["create", "patch", "update"], "apiGroups": ["", "events.k8s.io"], "resources": ["events"]}],
            })
        );
        let namespaced = namespaced_role("kube-system", "r", &[]).to_json();
        assert_eq!(namespaced["kind"], "Role");
        assert_eq!(namespaced["metadata"]["namespace"], "kube-system");
    }

    #[test]
    fn bindings_render_subjects_as_upstream() {
        const SUBJECTS: &[Subject] = &[
            Subject::Group("system:masters"),
            Subject::User("system:kube-proxy"),
            Subject::ServiceAccount("kube-system", "kube-dns"),
        ];
        let binding = cluster_binding("b", "r", SUBJECTS).to_json();
        assert_eq!(binding["kind"], "ClusterRoleBinding");
        assert_eq!(
            binding["roleRef"],
            json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "r"})
        );
        assert_eq!(
            binding["subjects"],
            json!([
                {"apiGroup": GROUP, "kind": "Group", "name": "system:masters"},
                {"apiGroup": GROUP, "kind": "User", "name": "system:kube-proxy"},
                {"kind": "ServiceAccount", "name": "kube-dns", "namespace": "kube-system"},
            ])
        );
        assert_eq!(
            binding["metadata"]["labels"],
            json!({"kubernetes.io/bootstrapping": "rbac-defaults"})
        );
        // No subjects: the field is left out (upstream's `system:node` binding).
        let bare = cluster_binding("system:node", "system:node", &[]).to_json();
        assert!(bare.get("subjects").is_none());
        let namespaced = namespaced_binding("kube-public", "b", "r", SUBJECTS).to_json();
        assert_eq!(namespaced["kind"], "RoleBinding");
        assert_eq!(namespaced["roleRef"]["kind"], "Role");
    }
}
