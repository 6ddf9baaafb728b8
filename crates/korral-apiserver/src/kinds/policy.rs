//! `policy/v1`: PodDisruptionBudgets, with upstream's `pkg/apis/policy/validation` rules.

use k8s_openapi::api::policy::v1 as api;

use serde_json::{Value, json};

use super::KindDef;
use super::lists::{DirectiveAt, PatchDirective};
use super::printer::{AGE, Column, Printer, age, int};
use super::strategy::{Context, Strategy, strip_status};
use crate::error::Cause;
use crate::kinds::workload::{int_or_percent, nonnegative_fields};
use crate::registry::ResourceInfo;
use crate::validation::enums::{self, Order};
use crate::validation::names::{child, invalid_rendered};
use crate::validation::selectors::validate_label_selector;

/// The kinds of `policy/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            PdbStrategy,
        )
        .schema::<api::PodDisruptionBudget>()
        // `PodDisruptionBudgetSpec.selector` is `+patchStrategy=replace`.
        .patch_directives(&[DirectiveAt {
            path: "spec.selector",
            directive: PatchDirective::Replace,
        }])
        .short(&["pdb"])
        .status()
        .generation()
        .printer(PDBS),
    ]
}

/// The status a new PodDisruptionBudget starts with (upstream's zero-valued counters).
fn initial_status() -> Value {
    json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
}

/// PodDisruptionBudgets.
#[derive(Debug, Clone, Copy)]
struct PdbStrategy;

impl Strategy for PdbStrategy {
    fn prepare_for_create(&self, _info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        strip_status(obj);
        if let Some(root) = obj.as_object_mut() {
            root.insert("status".into(), initial_status());
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_pdb(obj)
    }
}

/// Upstream's `ValidatePodDisruptionBudget`: the spec, and the status counters (non-negative)
/// a status write may set.
fn validate_pdb(obj: &Value) -> Vec<Cause> {
    let mut errs = pdb_spec(obj.get("spec").unwrap_or(&Value::Null), "spec");
    if let Some(status) = obj.get("status") {
        errs.extend(nonnegative_fields(
            status,
            &[
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ],
            "status",
        ));
    }
    errs
}

/// The value at `field` unless absent or `null`.
fn set<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get(field).filter(|v| !v.is_null())
}

/// JSON text of a value (`null` when absent), as Go's `json.Marshal` prints it.
fn json_text(value: Option<&Value>) -> String {
    value.map_or_else(|| "null".to_string(), Value::to_string)
}

/// A label selector as Go marshals `metav1.LabelSelector`: `matchLabels` before
/// `matchExpressions` (each `key`, `operator`, `values`), empty parts left out.
fn selector_text(selector: Option<&Value>) -> String {
    let Some(selector) = selector else {
        return "null".to_string();
    };
    let mut parts = Vec::new();
    if let Some(labels) = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
    {
        parts.push(format!("\"matchLabels\":{}", Value::Object(labels.clone())));
    }
    if let Some(exprs) = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
    {
        let rendered: Vec<String> = exprs
            .iter()
            .map(|e| {
                let mut fields = vec![
                    format!(
                        "\"key\":{}",
                        json_text(Some(e.get("key").unwrap_or(&json!(""))))
                    ),
                    format!(
                        "\"operator\":{}",
                        json_text(Some(e.get("operator").unwrap_or(&json!(""))))
                    ),
                ];
                if let Some(values) = e
                    .get("values")
                    .and_then(Value::as_array)
                    .filter(|v| !v.is_empty())
                {
                    fields.push(format!("\"values\":{}", Value::Array(values.clone())));
                }
                format!("{{{}}}", fields.join(","))
            })
            .collect();
        parts.push(format!("\"matchExpressions\":[{}]", rendered.join(",")));
    }
    format!("{{{}}}", parts.join(","))
}

/// Upstream's `ValidatePodDisruptionBudgetSpec`.
fn pdb_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let min = set(spec, "minAvailable");
    let max = set(spec, "maxUnavailable");
    if min.is_some() && max.is_some() {
        // Upstream prints the internal spec struct (Go field names, its field order).
        let rendered = format!(
            "{{\"MinAvailable\":{},\"Selector\":{},\"MaxUnavailable\":{},\"UnhealthyPodEvictionPolicy\":{}}}",
            json_text(min),
            selector_text(set(spec, "selector")),
            json_text(max),
            json_text(set(spec, "unhealthyPodEvictionPolicy")),
        );
        errs.push(invalid_rendered(
            path,
            &rendered,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (field, value) in [("minAvailable", min), ("maxUnavailable", max)] {
        if let Some(value) = value {
            errs.extend(int_or_percent(value, &child(path, field)));
        }
    }
    if let Some(selector) = set(spec, "selector") {
        errs.extend(validate_label_selector(selector, &child(path, "selector")));
    }
    if let Some(policy) = set(spec, "unhealthyPodEvictionPolicy")
        && !policy
            .as_str()
            .is_some_and(|p| enums::UNHEALTHY_POD_EVICTION_POLICY_TYPE.contains(p))
    {
        errs.push(enums::UNHEALTHY_POD_EVICTION_POLICY_TYPE.not_supported(
            child(path, "unhealthyPodEvictionPolicy"),
            policy,
            Order::Sorted,
        ));
    }
    errs
}

/// An int-or-string cell: the value as text, `N/A` when unset.
fn int_or_string_cell(value: Option<&Value>) -> Value {
    match value {
        Some(Value::String(s)) => json!(s),
        Some(Value::Number(n)) => json!(n.to_string()),
        _ => json!("N/A"),
    }
}

const PDBS: Printer = Printer {
    columns: &[
        Column::new(
            "Min Available",
            "The minimum number of pods that must be available.",
        ),
        Column::new(
            "Max Unavailable",
            "The maximum number of pods that may be unavailable.",
        ),
        Column::new(
            "Allowed Disruptions",
            "Calculated number of pods that may be disrupted at this time.",
        )
        .typed("integer"),
        AGE,
    ],
    cells: |obj| {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        vec![
            int_or_string_cell(set(spec, "minAvailable")),
            int_or_string_cell(set(spec, "maxUnavailable")),
            json!(int(obj, "status.disruptionsAllowed")),
            age(obj),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_bounds_print_the_spec_as_upstream() {
        let spec = json!({"minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}});
        let errs = pdb_spec(&spec, "spec");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec");
        assert_eq!(
            errs[0].message,
            "Invalid value: {\"MinAvailable\":1,\"Selector\":{\"matchLabels\":{\"app\":\"web\"}},\"MaxUnavailable\":1,\"UnhealthyPodEvictionPolicy\":null}: minAvailable and maxUnavailable cannot be both set"
        );
    }

    #[test]
    fn values_selectors_and_policies() {
        let spec = json!({
            "maxUnavailable": "150%",
            "selector": {"matchExpressions": [{"key": "app", "operator": "In"}]},
            "unhealthyPodEvictionPolicy": "Never",
        });
        let fields: Vec<String> = pdb_spec(&spec, "spec")
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(
            fields,
            vec![
                "spec.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%",
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
            ]
        );
        assert!(pdb_spec(&json!({"minAvailable": "50%"}), "spec").is_empty());
        assert_eq!(
            selector_text(Some(
                &json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]})
            )),
            "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\"}]}"
        );
    }

    #[test]
    fn status_counters_are_not_negative() {
        let obj = json!({"spec": {"minAvailable": 1}, "status": {"disruptionsAllowed": -1, "expectedPods": 2}});
        let errs = validate_pdb(&obj);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "status.disruptionsAllowed");
        assert_eq!(
            errs[0].message,
            "Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[test]
    fn rows_as_upstream() {
        let cells = (PDBS.cells)(
            &json!({"spec": {"minAvailable": 1}, "status": {"disruptionsAllowed": 0}}),
        );
        assert_eq!(cells[..3], [json!("1"), json!("N/A"), json!(0)]);
    }
}
