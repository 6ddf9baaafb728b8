//! A ResourceQuota's scopes: upstream's `validateResourceQuotaScopes`,
//! `validateScopedResourceSelectorRequirement` and the `spec.scopes` rule of
//! `ValidateResourceQuotaUpdate`, with the scope facts of `pkg/apis/core/helper`
//! (`IsStandardResourceQuotaScope`, `IsResourceQuotaScopeValidForResource`).
//!
//! Upstream reports these as `Invalid` with the whole list (or selector) as the bad value,
//! printed with Go's `%#v` of the internal types.

use serde_json::Value;

use crate::error::Cause;
use crate::validation::names::{go_json_slice, go_quote, invalid_rendered};

/// The scopes upstream accepts (`IsStandardResourceQuotaScope`).
const STANDARD_SCOPES: [&str; 7] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];
/// The scopes a selector may only name with `Exists`.
const EXISTS_ONLY_SCOPES: [&str; 5] = [
    "BestEffort",
    "NotBestEffort",
    "Terminating",
    "NotTerminating",
    "CrossNamespacePodAffinity",
];
/// The pod compute resources a pod-matching scope may limit (besides `pods`).
const POD_COMPUTE_RESOURCES: [&str; 6] = [
    "cpu",
    "memory",
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];
/// Pairs of scopes that may not be used together.
const CONFLICTING: [(&str, &str); 2] = [
    ("BestEffort", "NotBestEffort"),
    ("Terminating", "NotTerminating"),
];

/// `IsResourceQuotaScopeValidForResource`: which resources a scope may limit.
fn valid_for_resource(scope: &str, resource: &str) -> bool {
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => {
            resource == "pods" || POD_COMPUTE_RESOURCES.contains(&resource)
        }
        "BestEffort" => resource == "pods",
        "VolumeAttributesClass" => {
            resource == "persistentvolumeclaims" || resource == "requests.storage"
        }
        _ => true,
    }
}

/// `IsStandardQuotaResourceName`: the parent's list and the huge page names.
fn standard_quota_resource(name: &str) -> bool {
    super::QUOTA_RESOURCES.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// The standard quota resources of `spec.hard`, sorted (upstream's `sets.List`).
fn standard_hard(spec: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = spec
        .get("hard")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .filter(|k| standard_quota_resource(k))
        .collect();
    names.sort_unstable();
    names
}

/// The strings of a JSON list (non-strings as empty).
fn strings(list: Option<&Value>) -> Vec<&str> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or(""))
        .collect()
}

/// Go's `%#v` of `spec.scopes` (`[]core.ResourceQuotaScope`).
fn render_scopes(spec: &Value) -> String {
    go_json_slice("core.ResourceQuotaScope", spec.get("scopes"))
}

/// Go's `%#v` of a `core.ScopeSelector`.
fn render_selector(selector: &Value) -> String {
    let items: Vec<String> = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let text = |k: &str| go_quote(e.get(k).and_then(Value::as_str).unwrap_or(""));
            format!(
                "core.ScopedResourceSelectorRequirement{{ScopeName:{}, Operator:{}, Values:{}}}",
                text("scopeName"),
                text("operator"),
                go_json_slice("string", e.get("values"))
            )
        })
        .collect();
    let list = if selector
        .get("matchExpressions")
        .is_some_and(Value::is_array)
    {
        format!(
            "[]core.ScopedResourceSelectorRequirement{{{}}}",
            items.join(", ")
        )
    } else {
        "[]core.ScopedResourceSelectorRequirement(nil)".to_string()
    };
    format!("core.ScopeSelector{{MatchExpressions:{list}}}")
}

/// `conflicting scopes` causes for every conflicting pair found in `seen`.
fn conflicts(seen: &[&str], path: &str, spec: &Value) -> Vec<Cause> {
    CONFLICTING
        .iter()
        .filter(|(a, b)| seen.contains(a) && seen.contains(b))
        .map(|_| invalid_rendered(path, &render_scopes(spec), "conflicting scopes"))
        .collect()
}

/// Upstream's `validateResourceQuotaScopes`: known scopes, each applicable to every standard
/// hard resource, no conflicting pair.
pub(super) fn validate_scopes(spec: &Value) -> Vec<Cause> {
    let scopes = strings(spec.get("scopes"));
    if scopes.is_empty() {
        return Vec::new();
    }
    const PATH: &str = "spec.scopes";
    let hard = standard_hard(spec);
    let mut errs = Vec::new();
    for scope in &scopes {
        if !STANDARD_SCOPES.contains(scope) {
            errs.push(invalid_rendered(
                PATH,
                &render_scopes(spec),
                "unsupported scope",
            ));
        }
        for resource in &hard {
            if !valid_for_resource(scope, resource) {
                errs.push(invalid_rendered(
                    PATH,
                    &render_scopes(spec),
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    errs.extend(conflicts(&scopes, PATH, spec));
    errs
}

/// Upstream's `validateScopeSelector` and `validateScopedResourceSelectorRequirement`: each
/// expression names a known scope applicable to the hard resources, with an operator and
/// values that fit it; no conflicting pair.
pub(super) fn validate_scope_selector(spec: &Value) -> Vec<Cause> {
    let Some(selector) = spec.get("scopeSelector").filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    const PATH: &str = "spec.scopeSelector.matchExpressions";
    let hard = standard_hard(spec);
    let mut errs = Vec::new();
    let mut seen = Vec::new();
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let scope = expression
            .get("scopeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let operator = expression
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !STANDARD_SCOPES.contains(&scope) {
            errs.push(invalid_rendered(
                &format!("{PATH}.scopeName"),
                &go_quote(scope),
                "unsupported scope",
            ));
        }
        for resource in &hard {
            if !valid_for_resource(scope, resource) {
                errs.push(invalid_rendered(
                    PATH,
                    &render_selector(selector),
                    "unsupported scope applied to resource",
                ));
            }
        }
        if EXISTS_ONLY_SCOPES.contains(&scope) && operator != "Exists" {
            errs.push(invalid_rendered(
                &format!("{PATH}.operator"),
                &go_quote(operator),
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        let values = strings(expression.get("values"));
        match operator {
            "In" | "NotIn" if values.is_empty() => errs.push(Cause::required(
                format!("{PATH}.values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(invalid_rendered(
                &format!("{PATH}.values"),
                &go_json_slice("string", expression.get("values")),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(invalid_rendered(
                &format!("{PATH}.operator"),
                &go_quote(other),
                "not a valid selector operator",
            )),
        }
        seen.push(scope);
    }
    errs.extend(conflicts(&seen, PATH, spec));
    errs
}

/// The set of an object's `spec.scopes`, sorted.
fn scope_set(obj: &Value) -> Vec<&str> {
    let mut set = strings(obj.get("spec").and_then(|s| s.get("scopes")));
    set.sort_unstable();
    set.dedup();
    set
}

/// `ValidateResourceQuotaUpdate`'s scope rule: the set of `spec.scopes` is immutable.
pub(super) fn scopes_unchanged(obj: &Value, old: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if scope_set(obj) == scope_set(old) {
        return Vec::new();
    }
    vec![invalid_rendered(
        "spec.scopes",
        &render_scopes(spec),
        "field is immutable",
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    #[test]
    fn scopes_fit_their_resources() {
        let table: &[(Value, &[&str])] = &[
            (
                json!({"hard": {"pods": "1", "cpu": "1"}, "scopes": ["NotBestEffort"]}),
                &[],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]}),
                &[],
            ),
            (
                json!({"hard": {"count/secrets": "1"}, "scopes": ["BestEffort"]}),
                &[],
            ),
            (
                json!({"hard": {"persistentvolumeclaims": "1", "requests.storage": "1Gi"},
                    "scopes": ["VolumeAttributesClass"]}),
                &[],
            ),
            (
                json!({"hard": {"cpu": "1", "secrets": "1"}, "scopes": ["BestEffort"]}),
                &[
                    "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope applied to resource",
                    "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope applied to resource",
                ],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopes": ["Sometimes"]}),
                &[
                    "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"Sometimes\"}: unsupported scope",
                ],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating"]}),
                &[
                    "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"Terminating\", \"NotTerminating\"}: conflicting scopes",
                ],
            ),
        ];
        for (spec, want) in table {
            assert_eq!(summaries(&validate_scopes(spec)), *want, "{spec}");
        }
    }

    #[test]
    fn selectors_need_fitting_operators_and_values() {
        let selector = |exprs: Value| json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": exprs}});
        let table: &[(Value, &[&str])] = &[
            (
                selector(
                    json!([{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]),
                ),
                &[],
            ),
            (
                selector(json!([{"scopeName": "BestEffort", "operator": "Exists"}])),
                &[],
            ),
            (
                selector(json!([{"scopeName": "PriorityClass", "operator": "In"}])),
                &[
                    "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                ],
            ),
            (
                selector(
                    json!([{"scopeName": "PriorityClass", "operator": "Exists", "values": ["a"]}]),
                ),
                &[
                    "spec.scopeSelector.matchExpressions.values: Invalid value: []string{\"a\"}: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                ],
            ),
            (
                selector(json!([{"scopeName": "Terminating", "operator": "In", "values": ["a"]}])),
                &[
                    "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                ],
            ),
            (
                selector(json!([{"scopeName": "PriorityClass", "operator": "Near"}])),
                &[
                    "spec.scopeSelector.matchExpressions.operator: Invalid value: \"Near\": not a valid selector operator",
                ],
            ),
            (
                selector(json!([{"scopeName": "Mine", "operator": "Exists"}])),
                &[
                    "spec.scopeSelector.matchExpressions.scopeName: Invalid value: \"Mine\": unsupported scope",
                ],
            ),
            (
                selector(json!([{"scopeName": "BestEffort", "operator": "Exists"},
                    {"scopeName": "NotBestEffort", "operator": "Exists"}])),
                &[
                    "spec.scopeSelector.matchExpressions: Invalid value: []core.ResourceQuotaScope(nil): conflicting scopes",
                ],
            ),
            (
                json!({"hard": {"services": "1"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["x"]}]}}),
                &[
                    "spec.scopeSelector.matchExpressions: Invalid value: core.ScopeSelector{MatchExpressions:[]core.ScopedResourceSelectorRequirement{core.ScopedResourceSelectorRequirement{ScopeName:\"PriorityClass\", Operator:\"In\", Values:[]string{\"x\"}}}}: unsupported scope applied to resource",
                ],
            ),
        ];
        for (spec, want) in table {
            assert_eq!(summaries(&validate_scope_selector(spec)), *want, "{spec}");
        }
    }

    #[test]
    fn scopes_are_fixed_on_update() {
        let quota = |scopes: Value| json!({"spec": {"hard": {"pods": "1"}, "scopes": scopes}});
        let old = quota(json!(["BestEffort", "NotTerminating"]));
        assert!(scopes_unchanged(&quota(json!(["NotTerminating", "BestEffort"])), &old).is_empty());
        assert_eq!(
            summaries(&scopes_unchanged(&quota(json!(["BestEffort"])), &old)),
            [
                "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: field is immutable"
            ]
        );
        assert_eq!(
            summaries(&scopes_unchanged(&json!({"spec": {"hard": {}}}), &old)),
            ["spec.scopes: Invalid value: []core.ResourceQuotaScope(nil): field is immutable"]
        );
    }
}
