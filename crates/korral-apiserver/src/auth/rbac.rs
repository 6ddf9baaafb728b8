//! The RBAC authorizer: Roles, ClusterRoles and their bindings, evaluated against one
//! consistent storage snapshot.
//!
//! Semantics follow upstream's `rbac` authorizer: a request is allowed when any rule of any
//! role bound to the user (by user name, group or service account) matches it; ClusterRoleBindings
//! apply everywhere, RoleBindings only in their namespace (to a Role of that namespace or a
//! ClusterRole). Members of `system:masters` are always allowed.

use serde_json::{Value, json};

use super::attributes::Attributes;
use super::user::{MASTERS_GROUP, UserInfo, service_account_user};
use crate::meta::{self, strings};
use crate::storage::{Object, Snapshot, collection_prefix, object_key};

const GROUP: &str = "rbac.authorization.k8s.io";

/// An authorization decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed.
    pub allowed: bool,
    /// Why (allowed: which binding; denied: broken references), may be empty.
    pub reason: String,
}

impl Decision {
    /// Allowed, with a reason.
    pub fn allow(reason: impl Into<String>) -> Self {
        Self {
            allowed: true,
            reason: reason.into(),
        }
    }

    /// Denied, with a reason (may be empty).
    pub fn deny(reason: impl Into<String>) -> Self {
        Self {
            allowed: false,
            reason: reason.into(),
        }
    }
}

/// One `PolicyRule`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyRule {
    /// Verbs (`*` for all).
    pub verbs: Vec<String>,
    /// API groups (`*` for all, `""` for core).
    pub api_groups: Vec<String>,
    /// Resources, `resource/subresource`, `*/subresource` or `*`.
    pub resources: Vec<String>,
    /// Object names the rule is limited to (empty: any).
    pub resource_names: Vec<String>,
    /// Non-resource URLs (`/healthz`, `/apis/*`, `*`).
    pub non_resource_urls: Vec<String>,
}

impl PolicyRule {
    /// Reads a rule from its JSON form.
    pub fn from_json(rule: &Value) -> Self {
        Self {
            verbs: strings(rule.get("verbs")),
            api_groups: strings(rule.get("apiGroups")),
            resources: strings(rule.get("resources")),
            resource_names: strings(rule.get("resourceNames")),
            non_resource_urls: strings(rule.get("nonResourceURLs")),
        }
    }

    /// Whether the rule allows the request.
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if !self.verbs.iter().any(|v| v == "*" || *v == attrs.verb) {
            return false;
        }
        if !attrs.resource_request {
            return self.non_resource_urls.iter().any(|url| {
                url == "*"
                    || *url == attrs.path
                    || url
                        .strip_suffix('*')
                        .is_some_and(|prefix| attrs.path.starts_with(prefix))
            });
        }
        self.api_groups
            .iter()
            .any(|g| g == "*" || *g == attrs.api_group)
            && self.resource_matches(attrs)
            && (self.resource_names.is_empty() || self.resource_names.contains(&attrs.name))
    }

    fn resource_matches(&self, attrs: &Attributes) -> bool {
        let combined = attrs.combined_resource();
        self.resources.iter().any(|r| {
            r == "*"
                || *r == combined
                || (!attrs.subresource.is_empty()
                    && r.strip_prefix("*/") == Some(attrs.subresource.as_str()))
        })
    }
}

/// Reads the rules of a role object.
pub fn rules_of(role: &Value) -> Vec<PolicyRule> {
    role.get("rules")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().map(PolicyRule::from_json).collect())
        .unwrap_or_default()
}

/// Whether a binding subject names this user.
fn subject_matches(subject: &Value, user: &UserInfo, binding_namespace: &str) -> bool {
    let kind = subject.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = subject.get("name").and_then(Value::as_str).unwrap_or("");
    match kind {
        "User" => name == user.name,
        "Group" => user.in_group(name),
        "ServiceAccount" => {
            // A RoleBinding's service account subject without a namespace means the binding's.
            let ns = subject
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
                .unwrap_or(binding_namespace);
            !ns.is_empty() && service_account_user(ns, name) == user.name
        }
        _ => false,
    }
}

fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let kind = subject.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = subject.get("name").and_then(Value::as_str).unwrap_or("");
    if kind == "ServiceAccount" {
        let ns = subject
            .get("namespace")
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
            .unwrap_or(binding_namespace);
        format!("{kind} \"{name}/{ns}\"")
    } else {
        format!("{kind} {name:?}")
    }
}

/// One binding that applies to a user, with the rules of the role it grants.
pub struct Grant {
    /// The binding object.
    pub binding: Object,
    /// Rules of the bound role (empty when it is missing).
    pub rules: Vec<PolicyRule>,
    /// Why the role could not be read, if it could not.
    pub error: Option<String>,
    /// The matching subject, described (`User "alice"`).
    pub subject: String,
}

impl Grant {
    fn describe(&self) -> String {
        let kind = self
            .binding
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let name = meta::name(&self.binding);
        let binding = match meta::namespace(&self.binding) {
            Some(ns) if !ns.is_empty() => format!("{kind} \"{name}/{ns}\""),
            _ => format!("{kind} {name:?}"),
        };
        let role_kind = self.binding["roleRef"]["kind"].as_str().unwrap_or("");
        let role_name = self.binding["roleRef"]["name"].as_str().unwrap_or("");
        format!("{binding} of {role_kind} {role_name:?} to {}", self.subject)
    }
}

/// The role a binding refers to, looked up in the snapshot.
fn role_rules(
    snapshot: &Snapshot,
    binding: &Value,
    namespace: &str,
) -> Result<Vec<PolicyRule>, String> {
    let kind = binding["roleRef"]["kind"].as_str().unwrap_or("");
    let name = binding["roleRef"]["name"].as_str().unwrap_or("");
    let key = match kind {
        "ClusterRole" => object_key(GROUP, "clusterroles", None, name),
        "Role" if !namespace.is_empty() => object_key(GROUP, "roles", Some(namespace), name),
        _ => return Err(format!("unsupported roleRef kind {kind:?}")),
    };
    match snapshot.objects.get(&key) {
        Some(role) => Ok(rules_of(role)),
        None if kind == "ClusterRole" => Err(format!("clusterrole.{GROUP} {name:?} not found")),
        None => Err(format!("role.{GROUP} {name:?} not found")),
    }
}

/// Every binding that applies to `user` for requests in `namespace` (cluster-wide bindings
/// always; RoleBindings of `namespace` when it is not empty), with their rules.
pub fn grants(snapshot: &Snapshot, user: &UserInfo, namespace: &str) -> Vec<Grant> {
    let mut out = Vec::new();
    let collect = |prefix: String, binding_ns: &str, out: &mut Vec<Grant>| {
        for (_, binding) in snapshot.range(&prefix, None) {
            let Some(subject) = binding
                .get("subjects")
                .and_then(Value::as_array)
                .and_then(|s| s.iter().find(|s| subject_matches(s, user, binding_ns)))
            else {
                continue;
            };
            let (rules, error) = match role_rules(snapshot, binding, binding_ns) {
                Ok(rules) => (rules, None),
                Err(e) => (Vec::new(), Some(e)),
            };
            out.push(Grant {
                binding: binding.clone(),
                rules,
                error,
                subject: describe_subject(subject, binding_ns),
            });
        }
    };
    collect(
        collection_prefix(GROUP, "clusterrolebindings", None),
        "",
        &mut out,
    );
    if !namespace.is_empty() {
        collect(
            collection_prefix(GROUP, "rolebindings", Some(namespace)),
            namespace,
            &mut out,
        );
    }
    out
}

/// Decides a request under RBAC.
pub fn authorize(snapshot: &Snapshot, attrs: &Attributes) -> Decision {
    if attrs.user.in_group(MASTERS_GROUP) {
        return Decision::allow(format!(
            "RBAC: allowed by membership in group {MASTERS_GROUP:?}"
        ));
    }
    let mut errors = Vec::new();
    for grant in grants(snapshot, &attrs.user, &attrs.namespace) {
        if let Some(e) = &grant.error {
            errors.push(e.clone());
            continue;
        }
        if grant.rules.iter().any(|r| r.allows(attrs)) {
            return Decision::allow(format!("RBAC: allowed by {}", grant.describe()));
        }
    }
    if errors.is_empty() {
        Decision::deny("")
    } else if errors.len() == 1 {
        Decision::deny(format!("RBAC: {}", errors[0]))
    } else {
        Decision::deny(format!("RBAC: [{}]", errors.join(", ")))
    }
}

/// The rules a user has in `namespace` (for SelfSubjectRulesReview): resource rules and
/// non-resource rules, plus whether some bound role could not be read.
pub fn rules_for(
    snapshot: &Snapshot,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<Value>, Vec<Value>, Vec<String>) {
    if user.in_group(MASTERS_GROUP) {
        return (
            vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})],
            vec![json!({"verbs": ["*"], "nonResourceURLs": ["*"]})],
            Vec::new(),
        );
    }
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    let mut errors = Vec::new();
    for grant in grants(snapshot, user, namespace) {
        if let Some(e) = grant.error {
            errors.push(e);
            continue;
        }
        for rule in grant.rules {
            if !rule.resources.is_empty() {
                let mut r = json!({"verbs": rule.verbs, "apiGroups": rule.api_groups, "resources": rule.resources});
                if !rule.resource_names.is_empty()
                    && let Some(map) = r.as_object_mut()
                {
                    map.insert("resourceNames".into(), json!(rule.resource_names));
                }
                if !resource_rules.contains(&r) {
                    resource_rules.push(r);
                }
            }
            if !rule.non_resource_urls.is_empty() {
                let r = json!({"verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls});
                if !non_resource_rules.contains(&r) {
                    non_resource_rules.push(r);
                }
            }
        }
    }
    (resource_rules, non_resource_rules, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn snapshot(objects: Vec<(String, Value)>) -> Snapshot {
        Snapshot {
            revision: 1,
            objects: objects.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
        }
    }

    fn attrs(
        user: &str,
        groups: &[&str],
        verb: &str,
        group: &str,
        resource: &str,
        ns: &str,
    ) -> Attributes {
        Attributes {
            user: UserInfo {
                name: user.into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                ..UserInfo::default()
            },
            verb: verb.into(),
            resource_request: true,
            namespace: ns.into(),
            api_group: group.into(),
            resource: resource.into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn rule_matching_follows_upstream() {
        let rule = PolicyRule::from_json(&json!({
            "verbs": ["get", "update"], "apiGroups": ["apps"],
            "resources": ["deployments", "*/scale"], "resourceNames": ["web"]
        }));
        let mut a = attrs("u", &[], "get", "apps", "deployments", "ns");
        a.name = "web".into();
        assert!(rule.allows(&a));
        a.name = "other".into();
        assert!(!rule.allows(&a));
        a.name = "web".into();
        a.subresource = "status".into();
        assert!(
            !rule.allows(&a),
            "deployments does not cover deployments/status"
        );
        a.subresource = "scale".into();
        assert!(rule.allows(&a), "*/scale covers deployments/scale");
        a.verb = "delete".into();
        assert!(!rule.allows(&a));
        let url = PolicyRule::from_json(
            &json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*", "/healthz"]}),
        );
        let mut n = Attributes {
            verb: "get".into(),
            path: "/apis/apps/v1".into(),
            ..Attributes::default()
        };
        assert!(url.allows(&n));
        n.path = "/healthz".into();
        assert!(url.allows(&n));
        n.path = "/metrics".into();
        assert!(!url.allows(&n));
    }

    #[test]
    fn bindings_apply_to_users_groups_and_service_accounts() {
        let snap = snapshot(vec![
            (
                object_key(GROUP, "roles", Some("a"), "reader"),
                json!({"metadata": {"name": "reader", "namespace": "a"}, "rules": [{"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}]}),
            ),
            (
                object_key(GROUP, "rolebindings", Some("a"), "rb"),
                json!({"kind": "RoleBinding", "metadata": {"name": "rb", "namespace": "a"},
                       "roleRef": {"kind": "Role", "name": "reader"},
                       "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Group", "name": "devs"}]}),
            ),
            (
                object_key(GROUP, "clusterrolebindings", None, "broken"),
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": "broken"},
                       "roleRef": {"kind": "ClusterRole", "name": "missing"},
                       "subjects": [{"kind": "User", "name": "carol"}]}),
            ),
        ]);
        let sa = "system:serviceaccount:a:sa";
        assert!(authorize(&snap, &attrs(sa, &[], "list", "", "pods", "a")).allowed);
        assert!(!authorize(&snap, &attrs(sa, &[], "list", "", "pods", "b")).allowed);
        assert!(!authorize(&snap, &attrs(sa, &[], "list", "", "pods", "")).allowed);
        assert!(!authorize(&snap, &attrs(sa, &[], "get", "", "pods", "a")).allowed);
        assert!(authorize(&snap, &attrs("dave", &["devs"], "list", "", "pods", "a")).allowed);
        assert!(
            !authorize(
                &snap,
                &attrs("system:serviceaccount:b:sa", &[], "list", "", "pods", "a")
            )
            .allowed
        );
        let d = authorize(&snap, &attrs("carol", &[], "list", "", "pods", "a"));
        assert_eq!(
            d,
            Decision::deny("RBAC: clusterrole.rbac.authorization.k8s.io \"missing\" not found")
        );
        assert!(
            authorize(
                &snap,
                &attrs("root", &[MASTERS_GROUP], "delete", "x", "y", "")
            )
            .allowed
        );
    }
}
