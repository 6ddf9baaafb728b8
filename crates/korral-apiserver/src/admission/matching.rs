//! Which webhooks a request reaches: configurations by name, webhooks in order, each matched by
//! its rules (operation, group, version, resource and subresource, scope), `matchPolicy`
//! (`Equivalent`: another served version of the same resource), `namespaceSelector` and
//! `objectSelector`. Match conditions are evaluated where the review is built.

use std::sync::Arc;

use serde_json::Value;

use super::Request;
use crate::meta;
use crate::objects::ListOptions;
use crate::registry::ResourceInfo;
use crate::selector::from_label_selector_json;

/// The group of webhook configurations and policies.
const GROUP: &str = "admissionregistration.k8s.io";

/// A webhook a request reaches, and the version of the resource it matched.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// The webhook as configured (defaults filled in).
    pub hook: Value,
    /// The resource version the webhook matched (the request's, or an equivalent one).
    pub matched: Arc<ResourceInfo>,
}

impl Candidate {
    /// The webhook's name.
    pub fn name(&self) -> &str {
        self.hook.get("name").and_then(Value::as_str).unwrap_or("")
    }

    /// A string field of the webhook (`failurePolicy`, `sideEffects`...), or `default`.
    pub fn field<'a>(&'a self, key: &str, default: &'a str) -> &'a str {
        self.hook
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
    }
}

/// Whether the resource is exempt from webhooks, as upstream exempts the admission
/// configuration resources themselves (a broken webhook could otherwise never be removed).
pub(crate) fn exempt(info: &ResourceInfo) -> bool {
    info.group == GROUP
}

/// Whether anything of the admission registration group exists: a cheap test that lets
/// requests skip the webhook and policy machinery when there is none (a policy without a
/// binding answers yes, and the machinery then finds nothing to call).
pub(crate) fn any_configuration(objects: &crate::objects::Objects) -> bool {
    static PREFIX: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| format!("/{GROUP}/"));
    objects.storage().any_under(&PREFIX)
}

/// The webhooks of every Mutating- (`mutating`) or ValidatingWebhookConfiguration that match the
/// request, configurations sorted by name.
pub(crate) fn candidates(
    req: &Request<'_>,
    mutating: bool,
    object: Option<&Value>,
) -> Vec<Candidate> {
    let resource = if mutating {
        "mutatingwebhookconfigurations"
    } else {
        "validatingwebhookconfigurations"
    };
    let registry = req.objects.registry();
    let Some(info) = registry.get(GROUP, "v1", resource) else {
        return Vec::new();
    };
    let Ok(page) = req.objects.list(&info, None, &ListOptions::default()) else {
        return Vec::new();
    };
    let mut configs: Vec<_> = page.items;
    if configs.is_empty() {
        return Vec::new();
    }
    configs.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
    let namespace_labels = namespace_labels(req);
    let mut out = Vec::new();
    for config in configs {
        let hooks = config
            .get("webhooks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for hook in hooks {
            let Some(matched) = match_rules(req, &hook) else {
                continue;
            };
            if !selectors_match(req, &hook, namespace_labels.as_ref(), object) {
                continue;
            }
            out.push(Candidate { hook, matched });
        }
    }
    out
}

/// The labels the namespace selector is matched against: the namespace's (a Namespace's own
/// for a write of a Namespace); `None` for cluster-scoped resources (the selector is ignored).
fn namespace_labels(req: &Request<'_>) -> Option<Value> {
    let objects = req.objects;
    if req.info.group.is_empty() && req.info.resource == "namespaces" {
        let labels = req
            .old
            .and_then(|o| meta::metadata(o))
            .and_then(|m| m.get("labels"))
            .cloned();
        return Some(labels.unwrap_or(Value::Null));
    }
    let ns = req.namespace.filter(|_| req.info.namespaced)?;
    let info = objects.registry().get("", "v1", "namespaces")?;
    let labels = objects
        .get(&info, None, ns)
        .ok()
        .and_then(|n| meta::metadata(&n).and_then(|m| m.get("labels")).cloned());
    Some(labels.unwrap_or(Value::Null))
}

/// Whether a selector (absent or `{}`: everything) matches labels.
fn selector_matches(selector: Option<&Value>, labels: Option<&Value>) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return true;
    };
    match from_label_selector_json(selector) {
        Ok(sel) => sel.matches(labels.and_then(Value::as_object)),
        Err(_) => false,
    }
}

/// The webhook's namespace and object selectors (the object selector matches the new or the
/// old object's labels).
fn selectors_match(
    req: &Request<'_>,
    hook: &Value,
    namespace_labels: Option<&Value>,
    object: Option<&Value>,
) -> bool {
    if let Some(labels) = namespace_labels
        && !selector_matches(hook.get("namespaceSelector"), Some(labels))
    {
        return false;
    }
    let object_selector = hook.get("objectSelector");
    let labels_of = |o: Option<&Value>| {
        o.and_then(|o| meta::metadata(o))
            .and_then(|m| m.get("labels"))
            .cloned()
    };
    let new_labels = labels_of(object);
    let old_labels = labels_of(req.old);
    selector_matches(object_selector, new_labels.as_ref())
        || (req.old.is_some() && selector_matches(object_selector, old_labels.as_ref()))
}

/// The version of the resource the webhook's rules match: the request's, else (with
/// `matchPolicy: Equivalent`) another served version of the same group and resource.
fn match_rules(req: &Request<'_>, hook: &Value) -> Option<Arc<ResourceInfo>> {
    let rules = hook.get("rules").and_then(Value::as_array)?;
    let exact = hook.get("matchPolicy").and_then(Value::as_str) == Some("Exact");
    rules_select(req, rules, exact)
}

/// The version of the request's resource that one of `rules` selects: the request's own when
/// a rule selects it, else (unless `exact`) the first other served version of the same group
/// and resource a rule selects, as upstream's `matchesResourceRules` with `Equivalent`.
pub(crate) fn rules_select(
    req: &Request<'_>,
    rules: &[Value],
    exact: bool,
) -> Option<Arc<ResourceInfo>> {
    let matches = |info: &ResourceInfo| rules.iter().any(|r| rule_matches(req, info, r));
    if matches(req.info) {
        return Some(req.info.clone());
    }
    if exact {
        return None;
    }
    req.objects
        .registry()
        .versions_of(&req.info.group, &req.info.resource)
        .into_iter()
        .find(|other| other.version != req.info.version && matches(other))
}

/// The strings of a rule field.
fn list<'a>(rule: &'a Value, key: &str) -> Vec<&'a str> {
    rule.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Upstream's rule matcher for one resource version.
fn rule_matches(req: &Request<'_>, info: &ResourceInfo, rule: &Value) -> bool {
    let op = req.operation.as_str();
    let any_or = |items: Vec<&str>, want: &str| items.iter().any(|x| *x == "*" || *x == want);
    if !any_or(list(rule, "operations"), op)
        || !any_or(list(rule, "apiGroups"), &info.group)
        || !any_or(list(rule, "apiVersions"), &info.version)
    {
        return false;
    }
    let sub = req.subresource.unwrap_or("");
    let resource_ok = list(rule, "resources").iter().any(|entry| {
        if *entry == "*/*" {
            return true;
        }
        match entry.split_once('/') {
            Some((r, s)) => (r == "*" || r == info.resource) && (s == "*" || s == sub),
            None => sub.is_empty() && (*entry == "*" || *entry == info.resource),
        }
    });
    if !resource_ok {
        return false;
    }
    match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => !info.namespaced,
        "Namespaced" => info.namespaced,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;
    use crate::objects::Objects;
    use crate::registry::Registry;
    use crate::storage::MemoryStorage;
    use serde_json::json;

    fn objects() -> Objects {
        Objects::new(
            Arc::new(MemoryStorage::new()),
            Arc::new(Registry::with_builtins()),
        )
    }

    /// Whether `rule` selects a write of `group/version/resource[/sub]` with `op`.
    fn selects(
        objects: &Objects,
        (group, version, resource): (&str, &str, &str),
        sub: Option<&'static str>,
        op: super::super::Operation,
        rule: Value,
    ) -> bool {
        let info = objects
            .registry()
            .get(group, version, resource)
            .expect("served");
        let user = UserInfo::default();
        let req = Request {
            objects,
            info: &info,
            operation: op,
            subresource: sub,
            subresource_kind: None,
            generated_name: false,
            namespace: Some("ns"),
            name: "x",
            old: None,
            user: &user,
            dry_run: false,
            options: Default::default(),
        };
        rule_matches(&req, &info, &rule)
    }

    #[test]
    fn rules_match_as_upstream() {
        use super::super::Operation::{Create, Delete, Update};
        let o = objects();
        let deployments = ("apps", "v1", "deployments");
        let rule = |resources: &[&str], scope: &str| json!({"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["*"], "resources": resources, "scope": scope});
        // (subresource, operation, rule resources, rule scope, selected)
        let cases: [(Option<&'static str>, _, &[&str], &str, bool); 10] = [
            (None, Create, &["deployments"], "*", true),
            (None, Delete, &["deployments"], "*", false),
            // A subresource is matched only by a rule naming it.
            (Some("status"), Update, &["deployments"], "*", false),
            (Some("status"), Update, &["deployments/status"], "*", true),
            (Some("status"), Update, &["*/status"], "*", true),
            (Some("status"), Update, &["deployments/*"], "*", true),
            (Some("status"), Update, &["*/*"], "*", true),
            (Some("status"), Update, &["*"], "*", false),
            (None, Update, &["*"], "*", true),
            // Scope.
            (None, Create, &["*"], "Namespaced", true),
        ];
        for (sub, op, resources, scope, want) in cases {
            assert_eq!(
                selects(&o, deployments, sub, op, rule(resources, scope)),
                want,
                "{sub:?} {} {resources:?} {scope}",
                op.as_str()
            );
        }
        assert!(!selects(
            &o,
            deployments,
            None,
            Create,
            rule(&["*"], "Cluster")
        ));
        let crb = ("rbac.authorization.k8s.io", "v1", "clusterrolebindings");
        let any = json!({"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"});
        assert!(selects(&o, crb, None, Delete, any));
        // Groups and versions.
        let core = json!({"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["*"]});
        assert!(!selects(&o, deployments, None, Create, core));
    }

    #[test]
    fn admission_configuration_kinds_are_exempt() {
        let o = objects();
        let info = o
            .registry()
            .get(GROUP, "v1", "validatingwebhookconfigurations")
            .expect("served");
        assert!(exempt(&info));
        let cms = o.registry().get("", "v1", "configmaps").expect("served");
        assert!(!exempt(&cms));
        assert!(!any_configuration(&o));
    }
}
