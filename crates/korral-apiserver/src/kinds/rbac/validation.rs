//! Upstream's `pkg/apis/rbac/validation` for `rbac.authorization.k8s.io/v1` objects (besides
//! object metadata, which the generic store checks with path-segment names): every policy rule
//! has verbs and either resources with API groups or, in ClusterRoles only, non-resource URLs;
//! aggregation rules hold valid label selectors; bindings refer to a role of this group by a
//! valid name and name known kinds of subjects; a binding's `roleRef` never changes.

use serde_json::Value;

use crate::error::Cause;
use crate::validation::names::{
    NameRule, child, go_quote, index, invalid_rendered, invalid_value, path_segment_name,
    validate_name,
};
use crate::validation::selectors::validate_label_selector;

/// The API group of roles and bindings (upstream's `rbac.GroupName`).
pub(super) const GROUP: &str = "rbac.authorization.k8s.io";

/// The string at `key` of `obj`, empty when absent (a Go zero value).
fn text<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The array at `key` of `obj`, empty when absent or null.
fn list<'a>(obj: &'a Value, key: &str) -> &'a [Value] {
    obj.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Upstream's `field.NotSupported` for a string value, with the values Go quotes.
fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    let listed: Vec<String> = supported.iter().map(|v| go_quote(v)).collect();
    Cause::new(
        "FieldValueNotSupported",
        field,
        format!(
            "Unsupported value: {}: supported values: {}",
            go_quote(value),
            listed.join(", ")
        ),
    )
}

/// `ValidateRole`: each rule as a namespaced rule.
pub(super) fn validate_role(role: &Value) -> Vec<Cause> {
    validate_rules(role, true)
}

/// `ValidateClusterRole`: each rule as a cluster rule, then the aggregation rule's selectors.
/// `allow_invalid_label_values` is upstream's `AllowInvalidLabelValueInSelector` (set on
/// update when the stored role already had such selectors).
pub(super) fn validate_cluster_role(role: &Value, allow_invalid_label_values: bool) -> Vec<Cause> {
    let mut errs = validate_rules(role, false);
    let Some(rule) = role.get("aggregationRule").filter(|r| !r.is_null()) else {
        return errs;
    };
    let path = "aggregationRule.clusterRoleSelectors";
    let selectors = list(rule, "clusterRoleSelectors");
    if selectors.is_empty() {
        errs.push(Cause::required(
            path,
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, selector) in selectors.iter().enumerate() {
        let at = index(path, i);
        let causes = validate_label_selector(selector, &at);
        // `LabelSelectorAsSelector` refuses whatever the strict validation refuses; its nil
        // selector is the bad value.
        let unparsable = !causes.is_empty();
        errs.extend(
            causes
                .into_iter()
                .filter(|c| !(allow_invalid_label_values && is_expression_value_cause(c))),
        );
        if unparsable {
            errs.push(invalid_rendered(&at, "null", "invalid label selector."));
        }
    }
    errs
}

/// Whether a cause is about one of a selector requirement's values (what
/// `AllowInvalidLabelValueInSelector` lets through).
fn is_expression_value_cause(cause: &Cause) -> bool {
    cause.reason == "FieldValueInvalid"
        && cause.field.contains(".matchExpressions[")
        && cause.field.contains(".values[")
}

/// Upstream's `hasInvalidLabelValueInLabelSelector`: whether any aggregation selector of a
/// stored ClusterRole fails strict validation.
pub(super) fn has_invalid_aggregation_selector(role: &Value) -> bool {
    role.get("aggregationRule")
        .map(|rule| list(rule, "clusterRoleSelectors"))
        .unwrap_or(&[])
        .iter()
        .any(|selector| !validate_label_selector(selector, "").is_empty())
}

fn validate_rules(role: &Value, namespaced: bool) -> Vec<Cause> {
    list(role, "rules")
        .iter()
        .enumerate()
        .flat_map(|(i, rule)| validate_policy_rule(rule, namespaced, &index("rules", i)))
        .collect()
}

/// `ValidatePolicyRule`.
fn validate_policy_rule(rule: &Value, namespaced: bool, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if list(rule, "verbs").is_empty() {
        errs.push(Cause::required(
            child(path, "verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = list(rule, "nonResourceURLs");
    if !urls.is_empty() {
        let urls_value = rule.get("nonResourceURLs").unwrap_or(&Value::Null);
        let urls_path = child(path, "nonResourceURLs");
        if namespaced {
            errs.push(invalid_value(
                &urls_path,
                urls_value,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        let resourceful = ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|field| !list(rule, field).is_empty());
        if resourceful {
            errs.push(invalid_value(
                &urls_path,
                urls_value,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if list(rule, "apiGroups").is_empty() {
        errs.push(Cause::required(
            child(path, "apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if list(rule, "resources").is_empty() {
        errs.push(Cause::required(
            child(path, "resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

/// `ValidateRoleBinding` (`cluster` false) and `ValidateClusterRoleBinding` (`cluster` true):
/// the role reference, then every subject.
pub(super) fn validate_binding(binding: &Value, cluster: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
    let api_group = text(role_ref, "apiGroup");
    if api_group != GROUP {
        errs.push(not_supported("roleRef.apiGroup", api_group, &[GROUP]));
    }
    let kinds: &[&str] = if cluster {
        &["ClusterRole"]
    } else {
        &["Role", "ClusterRole"]
    };
    let kind = text(role_ref, "kind");
    if !kinds.contains(&kind) {
        errs.push(not_supported("roleRef.kind", kind, kinds));
    }
    let name = text(role_ref, "name");
    if name.is_empty() {
        errs.push(Cause::required("roleRef.name", ""));
    } else {
        for msg in path_segment_name(name) {
            errs.push(invalid_rendered("roleRef.name", &go_quote(name), &msg));
        }
    }
    for (i, subject) in list(binding, "subjects").iter().enumerate() {
        errs.extend(validate_subject(subject, !cluster, &index("subjects", i)));
    }
    errs
}

/// `ValidateRoleBindingUpdate` / `ValidateClusterRoleBindingUpdate`: the binding as on create,
/// and a role reference that stays as it was.
pub(super) fn validate_binding_update(binding: &Value, old: &Value, cluster: bool) -> Vec<Cause> {
    let mut errs = validate_binding(binding, cluster);
    let new_ref = role_ref_parts(binding);
    if new_ref != role_ref_parts(old) {
        errs.push(invalid_rendered(
            "roleRef",
            &render_role_ref(new_ref),
            "cannot change roleRef",
        ));
    }
    errs
}

/// A binding's `roleRef` as its three strings (absent ones empty, as Go's zero values).
fn role_ref_parts(binding: &Value) -> [&str; 3] {
    let role_ref = binding.get("roleRef").unwrap_or(&Value::Null);
    [
        text(role_ref, "apiGroup"),
        text(role_ref, "kind"),
        text(role_ref, "name"),
    ]
}

/// The internal `rbac.RoleRef` as upstream's field error prints it: Go's JSON of a struct
/// without JSON tags, so its Go field names.
fn render_role_ref([api_group, kind, name]: [&str; 3]) -> String {
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
    format!(
        "{{\"APIGroup\":{},\"Kind\":{},\"Name\":{}}}",
        quote(api_group),
        quote(kind),
        quote(name)
    )
}

/// `ValidateRoleBindingSubject`: a name, a known kind, the API group of that kind, and for a
/// ClusterRoleBinding's service accounts a namespace.
fn validate_subject(subject: &Value, namespaced: bool, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let name = text(subject, "name");
    if name.is_empty() {
        errs.push(Cause::required(child(path, "name"), ""));
    }
    let api_group = text(subject, "apiGroup");
    match text(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in validate_name(name, NameRule::Subdomain, false) {
                    errs.push(invalid_rendered(
                        &child(path, "name"),
                        &go_quote(name),
                        &msg,
                    ));
                }
            }
            if !api_group.is_empty() {
                errs.push(not_supported(&child(path, "apiGroup"), api_group, &[""]));
            }
            if !namespaced && text(subject, "namespace").is_empty() {
                errs.push(Cause::required(child(path, "namespace"), ""));
            }
        }
        "User" | "Group" => {
            if api_group != GROUP {
                errs.push(not_supported(&child(path, "apiGroup"), api_group, &[GROUP]));
            }
        }
        other => errs.push(not_supported(
            &child(path, "kind"),
            other,
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    fn rule(value: Value) -> Value {
        json!({"metadata": {"name": "r", "namespace": "ns"}, "rules": [value]})
    }

    #[test]
    fn policy_rules_as_upstream() {
        let cases: Vec<(Value, bool, Vec<&str>)> = vec![
            (
                json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}),
                true,
                vec![],
            ),
            (
                json!({"apiGroups": [""], "resources": ["pods"]}),
                true,
                vec!["rules[0].verbs: Required value: verbs must contain at least one value"],
            ),
            (
                json!({"verbs": ["get"]}),
                true,
                vec![
                    "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                    "rules[0].resources: Required value: resource rules must supply at least one resource",
                ],
            ),
            (
                json!({"apiGroups": [""], "resources": ["pods", "secrets"], "resourceNames": ["a"], "verbs": ["get"]}),
                true,
                vec![],
            ),
            (
                json!({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}),
                true,
                vec![
                    "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs",
                ],
            ),
            (
                json!({"nonResourceURLs": ["/healthz"], "verbs": ["get"]}),
                false,
                vec![],
            ),
            (
                json!({"nonResourceURLs": ["/healthz"], "resourceNames": ["x"]}),
                false,
                vec![
                    "rules[0].verbs: Required value: verbs must contain at least one value",
                    "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: rules cannot apply to both regular resources and non-resource URLs",
                ],
            ),
            (
                json!({"nonResourceURLs": ["/a"], "apiGroups": [""], "verbs": ["get"]}),
                true,
                vec![
                    "rules[0].nonResourceURLs: Invalid value: [\"/a\"]: namespaced rules cannot apply to non-resource URLs",
                    "rules[0].nonResourceURLs: Invalid value: [\"/a\"]: rules cannot apply to both regular resources and non-resource URLs",
                ],
            ),
        ];
        for (value, namespaced, want) in cases {
            let obj = rule(value.clone());
            let got = if namespaced {
                validate_role(&obj)
            } else {
                validate_cluster_role(&obj, false)
            };
            assert_eq!(summaries(&got), want, "{value}");
        }
    }

    #[test]
    fn aggregation_rules_hold_valid_selectors() {
        let role = |agg: Value| json!({"metadata": {"name": "agg"}, "aggregationRule": agg});
        assert!(validate_cluster_role(&role(json!(null)), false).is_empty());
        assert!(
            validate_cluster_role(
                &role(json!({"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]})),
                false
            )
            .is_empty()
        );
        assert_eq!(
            summaries(&validate_cluster_role(&role(json!({})), false)),
            vec![
                "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
            ]
        );
        let bad = role(json!({"clusterRoleSelectors": [
            {"matchExpressions": [{"key": "a", "operator": "Near"}]},
            {"matchExpressions": [{"key": "b", "operator": "In", "values": ["not valid"]}]},
        ]}));
        assert_eq!(
            summaries(&validate_cluster_role(&bad, false)),
            vec![
                "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator",
                "aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.",
                "aggregationRule.clusterRoleSelectors[1].matchExpressions[0].values[0]: Invalid value: \"not valid\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "aggregationRule.clusterRoleSelectors[1]: Invalid value: null: invalid label selector.",
            ]
        );
        // A stored role with invalid values lets them through on update (the selector still
        // cannot be parsed, as upstream).
        assert!(has_invalid_aggregation_selector(&bad));
        assert!(!has_invalid_aggregation_selector(&role(json!(
            {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}
        ))));
        assert_eq!(
            summaries(&validate_cluster_role(&bad, true)),
            vec![
                "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator",
                "aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.",
                "aggregationRule.clusterRoleSelectors[1]: Invalid value: null: invalid label selector.",
            ]
        );
    }

    fn binding(role_ref: Value, subjects: Value) -> Value {
        json!({"metadata": {"name": "b"}, "roleRef": role_ref, "subjects": subjects})
    }

    #[test]
    fn role_references_as_upstream() {
        let ok = json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"});
        assert!(validate_binding(&binding(ok.clone(), json!([])), false).is_empty());
        assert!(validate_binding(&binding(ok, json!([])), true).is_empty());
        let role = json!({"apiGroup": GROUP, "kind": "Role", "name": "r"});
        assert!(validate_binding(&binding(role.clone(), json!([])), false).is_empty());
        assert_eq!(
            summaries(&validate_binding(&binding(role, json!([])), true)),
            vec!["roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\""]
        );
        assert_eq!(
            summaries(&validate_binding(
                &binding(
                    json!({"apiGroup": "example.com", "kind": "Other"}),
                    json!([])
                ),
                false
            )),
            vec![
                "roleRef.apiGroup: Unsupported value: \"example.com\": supported values: \"rbac.authorization.k8s.io\"",
                "roleRef.kind: Unsupported value: \"Other\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.name: Required value",
            ]
        );
        assert_eq!(
            summaries(&validate_binding(
                &binding(
                    json!({"apiGroup": GROUP, "kind": "Role", "name": "a/b"}),
                    json!([])
                ),
                false
            )),
            vec!["roleRef.name: Invalid value: \"a/b\": may not contain '/'"]
        );
    }

    #[test]
    fn subjects_as_upstream() {
        let role_ref = json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"});
        let subjects = json!([
            {"kind": "ServiceAccount", "name": "default", "namespace": "ns"},
            {"kind": "ServiceAccount", "name": "default"},
            {"kind": "ServiceAccount", "name": "Bad_Name", "apiGroup": GROUP, "namespace": "ns"},
            {"kind": "User", "name": "alice", "apiGroup": GROUP},
            {"kind": "User", "name": "bob", "apiGroup": ""},
            {"kind": "Group", "apiGroup": GROUP},
            {"kind": "Robot", "name": "r2"},
        ]);
        let namespaced = summaries(&validate_binding(
            &binding(role_ref.clone(), subjects.clone()),
            false,
        ));
        let sa_name = "subjects[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        let rest = [
            "subjects[2].apiGroup: Unsupported value: \"rbac.authorization.k8s.io\": supported values: \"\"",
            "subjects[4].apiGroup: Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\"",
            "subjects[5].name: Required value",
            "subjects[6].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        ];
        let mut want = vec![sa_name];
        want.extend(rest);
        assert_eq!(namespaced, want);
        // A ClusterRoleBinding's service account needs its namespace.
        let cluster = summaries(&validate_binding(&binding(role_ref, subjects), true));
        let mut want = vec!["subjects[1].namespace: Required value", sa_name];
        want.extend(rest);
        assert_eq!(cluster, want);
    }

    #[test]
    fn role_ref_cannot_change() {
        let old = binding(
            json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}),
            json!([]),
        );
        let same = binding(
            json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}),
            json!([{"kind": "User", "name": "alice", "apiGroup": GROUP}]),
        );
        assert!(validate_binding_update(&same, &old, true).is_empty());
        let changed = binding(
            json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "edit"}),
            json!([]),
        );
        assert_eq!(
            summaries(&validate_binding_update(&changed, &old, false)),
            vec![
                "roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"
            ]
        );
    }

    #[test]
    fn bootstrap_objects_validate() {
        for role in crate::auth::bootstrap::cluster_roles() {
            assert!(
                validate_cluster_role(&role, false).is_empty(),
                "{}",
                role["metadata"]["name"]
            );
        }
        for binding in crate::auth::bootstrap::cluster_role_bindings() {
            assert!(
                validate_binding(&binding, true).is_empty(),
                "{}",
                binding["metadata"]["name"]
            );
        }
    }
}
