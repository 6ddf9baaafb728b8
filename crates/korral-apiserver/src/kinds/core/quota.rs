//! ResourceQuotas and LimitRanges: quantities canonicalized on decode, upstream's
//! `ValidateResourceQuota` (resource names for quota, non-negative whole counts, scopes and
//! scope selectors, scopes fixed on update, the `/status` rules) and
//! `ValidateLimitRange` (types, forbidden Pod defaults, `min ≤ defaultRequest ≤ default ≤ max`,
//! ratios).

use serde_json::{Map, Value, json};

use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::objects::FieldValidation;
use crate::quantity::{self, Quantity};
use crate::registry::ResourceInfo;
use crate::validation::names::{invalid_value, validate_label_key};
use crate::validation::podspec::{resource_name, resource_quantity};
use crate::{ApiError, meta};

mod scopes;

/// The unprefixed resource names a quota may limit (`IsStandardQuotaResourceName`).
const QUOTA_RESOURCES: [&str; 19] = [
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
];
/// The quota resources counted in whole objects (`IsIntegerResourceName`).
const INTEGER_RESOURCES: [&str; 9] = [
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];
/// The standard LimitRange types.
const LIMIT_TYPES: [&str; 3] = ["Pod", "Container", "PersistentVolumeClaim"];

/// Canonicalizes every resource list at `paths` (dotted) of `obj`; `[*]` steps into each item
/// of an array.
fn canonicalize_lists(obj: &mut Value, paths: &[&str]) -> Result<(), quantity::QuantityError> {
    fn walk(v: &mut Value, parts: &[&str]) -> Result<(), quantity::QuantityError> {
        let Some((first, rest)) = parts.split_first() else {
            return quantity::canonicalize_resource_list(v);
        };
        if let Some(name) = first.strip_suffix("[*]") {
            for item in v
                .get_mut(name)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                walk(item, rest)?;
            }
            return Ok(());
        }
        match v.get_mut(*first) {
            Some(next) => walk(next, rest),
            None => Ok(()),
        }
    }
    for path in paths {
        let parts: Vec<&str> = path.split('.').collect();
        walk(obj, &parts)?;
    }
    Ok(())
}

/// Upstream's `validateResourceQuotaResourceName` and `ValidateResourceQuantityValue` for each
/// entry of the resource list at `path`.
fn quota_list(list: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (key, value) in list.and_then(Value::as_object).into_iter().flatten() {
        let field = format!("{path}[{key}]");
        let shown = json!(key);
        let name_errs: Vec<Cause> = validate_label_key(key)
            .iter()
            .map(|m| invalid_value(&field, &shown, m))
            .collect();
        let name_ok = name_errs.is_empty();
        errs.extend(name_errs);
        if name_ok
            && !key.contains('/')
            && !QUOTA_RESOURCES.contains(&key.as_str())
            && !key.starts_with("hugepages-")
            && !key.starts_with("requests.hugepages-")
        {
            errs.push(invalid_value(
                &field,
                &shown,
                "must be a standard resource for quota",
            ));
        }
        if let Ok(q) = quantity::from_json(value) {
            if q.is_negative() {
                errs.push(invalid_value(
                    &field,
                    &json!(q.canonical()),
                    "must be greater than or equal to 0",
                ));
            }
            let integer = INTEGER_RESOURCES.contains(&key.as_str()) || key.starts_with("count/");
            if integer && !q.is_integer() {
                errs.push(invalid_value(
                    &field,
                    &json!(q.canonical()),
                    "must be an integer",
                ));
            }
        }
    }
    errs
}

/// The strategy of `v1/ResourceQuota`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResourceQuotaStrategy;

/// Upstream's `ValidateResourceQuotaSpec`: the hard limits, then the scopes and the scope
/// selector against them (see [`scopes`]).
fn validate_quota_spec(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = quota_list(spec.get("hard"), "spec.hard");
    errs.extend(scopes::validate_scopes(spec));
    errs.extend(scopes::validate_scope_selector(spec));
    errs
}

/// Upstream's `ValidateResourceQuotaStatus`: the names and values of `status.hard` and
/// `status.used`.
fn validate_quota_status(obj: &Value) -> Vec<Cause> {
    let mut errs = quota_list(meta::path(obj, "status.hard"), "status.hard");
    errs.extend(quota_list(meta::path(obj, "status.used"), "status.used"));
    errs
}

/// Upstream's `ValidateResourceQuota`.
fn validate_quota(obj: &Value) -> Vec<Cause> {
    let mut errs = validate_quota_spec(obj);
    errs.extend(validate_quota_status(obj));
    errs
}

/// Upstream's `ValidateResourceQuotaUpdate`: the spec as on create (not the status), and the
/// set of `spec.scopes` may not change.
fn validate_quota_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = validate_quota_spec(obj);
    errs.extend(scopes::scopes_unchanged(obj, old));
    errs
}

impl Strategy for ResourceQuotaStrategy {
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        canonicalize_lists(obj, &["spec.hard", "status.hard", "status.used"])
            .map_err(|e| quantity::undecodable(info, e))?;
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    /// The status starts empty (the quota controller fills it).
    fn default(&self, obj: &mut Value) {
        if let Some(root) = obj.as_object_mut() {
            root.entry("status").or_insert_with(|| json!({}));
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_quota(obj)
    }

    /// `ValidateResourceQuotaUpdate`, or `ValidateResourceQuotaStatusUpdate` (the status lists
    /// only) for a `/status` write.
    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            validate_quota_status(obj)
        } else {
            validate_quota_update(obj, old)
        }
    }
}

/// The strategy of `v1/LimitRange`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LimitRangeStrategy;

/// The parsed quantities of the resource list `name` of a limit item.
fn quantities(item: &Value, name: &str) -> Map<String, Value> {
    item.get(name)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Upstream's `ValidateLimitRange` for one `spec.limits` item.
fn limit_item(item: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let ty = item.get("type").and_then(Value::as_str).unwrap_or("");
    let type_path = format!("{path}.type");
    let type_errs: Vec<Cause> = validate_label_key(ty)
        .iter()
        .map(|m| invalid_value(&type_path, &json!(ty), m))
        .collect();
    if !type_errs.is_empty() {
        errs.extend(type_errs);
    } else if !ty.contains('/') && !LIMIT_TYPES.contains(&ty) {
        errs.push(invalid_value(
            &type_path,
            &json!(ty),
            "must be a standard limit type or fully qualified",
        ));
    }
    let lists = [
        "max",
        "min",
        "default",
        "defaultRequest",
        "maxLimitRequestRatio",
    ];
    for list in lists {
        for (key, value) in quantities(item, list) {
            let field = format!("{path}.{list}[{key}]");
            errs.extend(resource_name(&key, &field));
            resource_quantity(&key, &value, &field, &mut errs);
        }
    }
    if ty == "Pod" {
        for list in ["default", "defaultRequest"] {
            if !quantities(item, list).is_empty() {
                errs.push(Cause::forbidden(
                    format!("{path}.{list}"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
        }
    }
    if ty == "PersistentVolumeClaim" {
        let has_storage = |l: &str| quantities(item, l).contains_key("storage");
        if !has_storage("min") && !has_storage("max") {
            errs.push(Cause::required(
                format!("{path}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
    }
    let q = |list: &str, key: &str| -> Option<Quantity> {
        item.get(list)
            .and_then(|l| l.get(key))
            .and_then(|v| quantity::from_json(v).ok())
    };
    let mut keys: Vec<String> = lists
        .iter()
        .flat_map(|l| quantities(item, l).keys().cloned().collect::<Vec<_>>())
        .collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let (min, max) = (q("min", &key), q("max", &key));
        let (default, request) = (q("default", &key), q("defaultRequest", &key));
        let ratio = q("maxLimitRequestRatio", &key);
        let shown = |x: &Quantity| json!(x.canonical());
        let field = |list: &str| format!("{path}.{list}[{key}]");
        // Upstream's ordering checks, in its order: (lower, upper, the field blamed and its
        // value, the message's names of the lower and upper value).
        let orderings = [
            (&min, &max, "min", &min, "min value", "max value"),
            (
                &min,
                &request,
                "defaultRequest",
                &request,
                "min value",
                "default request value",
            ),
            (
                &request,
                &max,
                "defaultRequest",
                &request,
                "default request value",
                "max value",
            ),
            (
                &request,
                &default,
                "defaultRequest",
                &request,
                "default request value",
                "default limit value",
            ),
            (
                &min,
                &default,
                "default",
                &default,
                "min value",
                "default value",
            ),
            (
                &default,
                &max,
                "default",
                &default,
                "default value",
                "max value",
            ),
        ];
        for (lower, upper, blamed, value, lower_name, upper_name) in orderings {
            if let (Some(lower), Some(upper), Some(value)) = (lower, upper, value)
                && lower.cmp(upper).is_gt()
            {
                errs.push(invalid_value(
                    &field(blamed),
                    &shown(value),
                    &format!(
                        "{lower_name} {} is greater than {upper_name} {}",
                        lower.canonical(),
                        upper.canonical()
                    ),
                ));
            }
        }
        if let Some(ratio) = &ratio
            && ratio.canonical_f64() < 1.0
        {
            errs.push(invalid_value(
                &field("maxLimitRequestRatio"),
                &shown(ratio),
                &format!("ratio {} is less than 1", ratio.canonical()),
            ));
        }
        if let (Some(ratio), Some(min), Some(max)) = (&ratio, &min, &max)
            && !min.is_zero()
        {
            let bound = max.canonical_f64() / min.canonical_f64();
            if ratio.canonical_f64() > bound {
                errs.push(invalid_value(
                    &field("maxLimitRequestRatio"),
                    &shown(ratio),
                    &format!(
                        "ratio {} is greater than max/min = {bound:.6}",
                        ratio.canonical()
                    ),
                ));
            }
        }
    }
    errs
}

/// Upstream's `ValidateLimitRange`: each item, each type at most once.
fn validate_limit_range(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut seen = Vec::new();
    for (i, item) in meta::path(obj, "spec.limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = format!("spec.limits[{i}]");
        let ty = item.get("type").and_then(Value::as_str).unwrap_or("");
        if seen.contains(&ty) {
            errs.push(Cause::duplicate(format!("{path}.type"), &json!(ty)));
        }
        seen.push(ty);
        errs.extend(limit_item(item, &path));
    }
    errs
}

/// Upstream's `SetDefaults_LimitRangeItem`: a Container item's default limit falls back to its
/// max, its default request to the default limit, then to its min.
fn default_limit_item(item: &mut Value) {
    if item.get("type").and_then(Value::as_str) != Some("Container") {
        return;
    }
    let (max, min) = (quantities(item, "max"), quantities(item, "min"));
    let mut default = quantities(item, "default");
    for (k, v) in max {
        default.entry(k).or_insert(v);
    }
    let mut request = quantities(item, "defaultRequest");
    for (k, v) in default.iter().chain(min.iter()) {
        request.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let Some(map) = item.as_object_mut() else {
        return;
    };
    for (name, list) in [("default", default), ("defaultRequest", request)] {
        if !list.is_empty() {
            map.insert(name.into(), Value::Object(list));
        }
    }
}

impl Strategy for LimitRangeStrategy {
    fn default(&self, obj: &mut Value) {
        let items = obj
            .get_mut("spec")
            .and_then(|s| s.get_mut("limits"))
            .and_then(Value::as_array_mut);
        for item in items.into_iter().flatten() {
            default_limit_item(item);
        }
    }

    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        let lists: Vec<String> = [
            "max",
            "min",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
        ]
        .iter()
        .map(|l| format!("spec.limits[*].{l}"))
        .collect();
        let paths: Vec<&str> = lists.iter().map(String::as_str).collect();
        canonicalize_lists(obj, &paths).map_err(|e| quantity::undecodable(info, e))?;
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_limit_range(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_quotas_and_limit_ranges_never_panic(
            quota in crate::kinds::core::test_support::mutated(
                json!({"spec": {"hard": {"pods": "1"}}}),
                &["spec", "spec.hard", "spec.hard.pods", "spec.scopes", "status", "status.used",
                  "spec.scopeSelector", "spec.scopeSelector.matchExpressions"],
            ),
            range in crate::kinds::core::test_support::mutated(
                json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
                &["spec", "spec.limits"],
            ),
            item in crate::kinds::core::test_support::mutated(
                json!({"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "0"}}),
                &["type", "max", "min", "default", "defaultRequest", "maxLimitRequestRatio", "max.cpu", "min.cpu"],
            ),
        ) {
            let _ = validate_quota(&quota);
            let _ = validate_quota_update(&quota, &json!({"spec": {"scopes": ["BestEffort"]}}));
            let _ = (super::super::print::RESOURCE_QUOTAS.cells)(&quota);
            let mut range = range;
            LimitRangeStrategy.default(&mut range);
            let _ = validate_limit_range(&range);
            let mut item = item;
            default_limit_item(&mut item);
            let _ = limit_item(&item, "spec.limits[0]");
        }
    }

    #[test]
    fn quota_names_and_values() {
        let ok = json!({"spec": {"hard": {"count/configmaps": "50", "pods": "10", "requests.cpu": "2"}}});
        assert!(validate_quota(&ok).is_empty());
        assert_eq!(
            summaries(&validate_quota(
                &json!({"spec": {"hard": {"gpus": "1", "pods": "1500m", "cpu": "-1"}}})
            )),
            [
                "spec.hard[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
                "spec.hard[gpus]: Invalid value: \"gpus\": must be a standard resource for quota",
                "spec.hard[pods]: Invalid value: \"1500m\": must be an integer",
            ]
        );
    }

    #[test]
    fn quota_tables_show_used_over_hard() {
        let q = json!({"metadata": {"name": "q"}, "status": {
            "hard": {"pods": "10", "requests.cpu": "2", "limits.memory": "1Gi"},
            "used": {"pods": "1", "requests.cpu": "500m"}}});
        let cells = (super::super::print::RESOURCE_QUOTAS.cells)(&q);
        assert_eq!(cells[0], json!("pods: 1/10, requests.cpu: 500m/2"));
        assert_eq!(cells[1], json!("limits.memory: 0/1Gi"));
        // get-resourcequota-with-status.json before the controller ran: nothing to show.
        let fresh =
            json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}, "status": {}});
        let cells = (super::super::print::RESOURCE_QUOTAS.cells)(&fresh);
        assert_eq!((&cells[0], &cells[1]), (&json!(""), &json!("")));
    }

    #[test]
    fn quota_quantities_are_canonical() {
        let mut obj =
            json!({"spec": {"hard": {"requests.cpu": "0.5", "requests.memory": "1024Mi"}}});
        canonicalize_lists(&mut obj, &["spec.hard"]).expect("ok");
        assert_eq!(
            obj["spec"]["hard"],
            json!({"requests.cpu": "500m", "requests.memory": "1Gi"})
        );
    }

    #[test]
    fn container_limits_default_from_max_and_min() {
        let mut obj = json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}},
        ]}});
        LimitRangeStrategy.default(&mut obj);
        assert_eq!(
            obj["spec"]["limits"][0],
            json!({"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"},
                "default": {"cpu": "2"}, "defaultRequest": {"cpu": "2", "memory": "64Mi"}})
        );
        assert_eq!(
            obj["spec"]["limits"][1],
            json!({"type": "Pod", "max": {"cpu": "4"}})
        );
    }

    #[test]
    fn limit_ranges_order_their_bounds() {
        let ok = json!({"spec": {"limits": [{"type": "Container",
            "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "100m", "memory": "256Mi"}}]}});
        assert!(validate_limit_range(&ok).is_empty());
        let bad = json!({"spec": {"limits": [
            {"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "500m"}, "default": {"cpu": "2"}},
            {"type": "Pod", "default": {"cpu": "1"}},
            {"type": "Widget"},
        ]}});
        assert_eq!(
            summaries(&validate_limit_range(&bad)),
            [
                "spec.limits[0].min[cpu]: Invalid value: \"1\": min value 1 is greater than max value 500m",
                "spec.limits[0].default[cpu]: Invalid value: \"2\": default value 2 is greater than max value 500m",
                "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
                "spec.limits[2].type: Invalid value: \"Widget\": must be a standard limit type or fully qualified",
            ]
        );
    }
}
