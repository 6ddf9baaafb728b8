//! `autoscaling`: HorizontalPodAutoscalers, served as `autoscaling/v2` (stored, preferred) and
//! `autoscaling/v1` (converted on every read and write, see [`convert`]).

mod convert;
mod validation;

use k8s_openapi::api::autoscaling::{v1, v2};
use serde_json::{Value, json};

use super::KindDef;
use super::printer::{AGE, Column, Printer, age, int, text};
use super::strategy::{Context, Strategy};
use super::workload::{StatusRules, validate_status};
use crate::error::{ApiError, Cause};
use crate::objects::FieldValidation;
use crate::quantity::{self, Quantity, QuantityError};
use crate::registry::ResourceInfo;

/// What an HPA's `/status` write must keep: both replica counts non-negative (the same in
/// both versions' shapes).
const STATUS_RULES: StatusRules = StatusRules {
    nonnegative: &["currentReplicas", "desiredReplicas"],
    at_most_replicas: &[],
    available_over_ready: None,
    collision_count: false,
};

/// The kinds of `autoscaling`, the preferred version first.
pub(super) fn kinds() -> Vec<KindDef> {
    let hpa = |version, strategy, printer| {
        KindDef::new(
            "autoscaling",
            version,
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            strategy,
        )
        .short(&["hpa"])
        .in_all()
        .status()
        .printer(printer)
    };
    vec![
        hpa("v2", HpaStrategy { v1: false }, HPAS_V2).schema::<v2::HorizontalPodAutoscaler>(),
        hpa("v1", HpaStrategy { v1: true }, HPAS_V1).schema::<v1::HorizontalPodAutoscaler>(),
    ]
}

/// The strategy of HorizontalPodAutoscalers in one served version; objects are stored, defaulted
/// and validated in the v2 shape, as upstream does with its internal version.
#[derive(Debug, Clone, Copy)]
struct HpaStrategy {
    /// Served as `autoscaling/v1`.
    v1: bool,
}

/// The metric sources of a v2 `MetricSpec` and `MetricStatus`.
const METRIC_SOURCES: [&str; 5] = [
    "resource",
    "containerResource",
    "pods",
    "object",
    "external",
];

/// Rewrites the quantities of an HPA in the v2 shape into upstream's serialization (`0.5Gi` →
/// `512Mi`): the `value` and `averageValue` of each metric's target and of each current metric.
fn canonicalize_quantities(obj: &mut Value) -> Result<(), QuantityError> {
    for (list, part) in [
        ("/spec/metrics", "target"),
        ("/status/currentMetrics", "current"),
    ] {
        let Some(metrics) = obj.pointer_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for metric in metrics {
            for source in METRIC_SOURCES {
                let Some(values) = metric
                    .get_mut(source)
                    .and_then(|s| s.get_mut(part))
                    .and_then(Value::as_object_mut)
                else {
                    continue;
                };
                for field in ["value", "averageValue"] {
                    if let Some(value) = values.get_mut(field).filter(|v| !v.is_null()) {
                        quantity::canonicalize_value(value)?;
                    }
                }
            }
        }
    }
    Ok(())
}

impl Strategy for HpaStrategy {
    /// Quantities are read as upstream's decoder reads them and written back canonical; a
    /// malformed one makes the object undecodable (400). A v1 object's quantities (in the
    /// metrics annotations) are checked on its v2 form, canonicalized when it is stored.
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        let checked = if self.v1 {
            canonicalize_quantities(&mut convert::to_v2(obj.clone()))
        } else {
            canonicalize_quantities(obj)
        };
        checked.map_err(|e| quantity::undecodable(info, e))?;
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        if self.v1 {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
                && spec.get("minReplicas").is_none_or(Value::is_null)
            {
                spec.insert("minReplicas".into(), json!(1));
            }
        } else {
            validation::default_v2(obj);
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        if self.v1 {
            let v2 = self.convert_for_storage(obj.clone());
            validation::validate_spec(v2.get("spec").unwrap_or(&Value::Null))
        } else {
            validation::validate_spec(obj.get("spec").unwrap_or(&Value::Null))
        }
    }

    /// Through `/status`, upstream's `ValidateHorizontalPodAutoscalerStatusUpdate` alone (the
    /// replica counts may not be negative; the spec is the stored one); otherwise the spec rules.
    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return validate_status(obj, old, &STATUS_RULES);
        }
        self.validate(obj, ctx)
    }

    /// The v1 view of the stored v2 object. An object already in the v1 shape is left as it
    /// is: the HTTP layer shows list items (already converted by `conversion::to_served`)
    /// through `objects::served` a second time, and converting v1 again would lose the CPU
    /// target and the spec's other v2-only fields.
    fn convert_stored(&self, _info: &ResourceInfo, stored: &Value) -> Option<Value> {
        (self.v1 && crate::meta::api_version(stored) != "autoscaling/v1")
            .then(|| convert::to_v1(stored))
    }

    fn convert_for_storage(&self, obj: Value) -> Value {
        if !self.v1 {
            return obj;
        }
        let mut v2 = convert::to_v2(obj);
        validation::default_v2(&mut v2);
        // Malformed quantities were refused when the object was decoded.
        let _ = canonicalize_quantities(&mut v2);
        v2
    }
}

/// The HPA columns, as upstream prints them (for both versions).
const COLUMNS: &[Column] = &[
    Column::new(
        "Reference",
        "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
    ),
    Column::new(
        "Targets",
        "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond. If not set, the default metric will be set to 80% average CPU utilization.",
    ),
    Column::new(
        "MinPods",
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.",
    ),
    Column::new(
        "MaxPods",
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.",
    ),
    Column::new(
        "Replicas",
        "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
    ),
    AGE,
];

const HPAS_V2: Printer = Printer {
    columns: COLUMNS,
    cells: hpa_cells,
};

const HPAS_V1: Printer = Printer {
    columns: COLUMNS,
    cells: |v1| hpa_cells(&convert::to_v2(v1.clone())),
};

/// One HPA's row (v2 shape): reference, targets, bounds, replicas, age.
fn hpa_cells(obj: &Value) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        text(obj, "spec.scaleTargetRef.kind"),
        text(obj, "spec.scaleTargetRef.name")
    );
    let min = obj
        .get("spec")
        .and_then(|s| s.get("minReplicas"))
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_string(), |m| m.to_string());
    vec![
        json!(reference),
        json!(targets(obj)),
        json!(min),
        json!(int(obj, "spec.maxReplicas")),
        json!(int(obj, "status.currentReplicas")),
        age(obj),
    ]
}

/// A quantity as upstream prints it (canonical form), the raw text when unparsable.
fn quantity(value: Option<&Value>) -> String {
    let raw = match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return "<unknown>".to_string(),
    };
    Quantity::parse(&raw).map_or(raw, |q| q.canonical())
}

/// Upstream's `formatHPAMetrics`: each metric's current/target, two at most then `+ N more...`.
fn targets(obj: &Value) -> String {
    let empty = Vec::new();
    let specs = crate::meta::path(obj, "spec.metrics")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let statuses = crate::meta::path(obj, "status.currentMetrics")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut list = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        let at = |src: &str, part: &str, field: &str| {
            let base = if part == "current" {
                status
            } else {
                Some(spec)
            };
            base.and_then(|b| b.get(src))
                .and_then(|s| s.get(part))
                .and_then(|p| p.get(field))
                .filter(|v| !v.is_null())
        };
        let current_of = |src: &str, field: &str| {
            if at(src, "current", field).is_some() {
                quantity(at(src, "current", field))
            } else {
                "<unknown>".to_string()
            }
        };
        let entry = match spec.get("type").and_then(Value::as_str) {
            Some(src @ ("External" | "Object")) => {
                let src = if src == "External" {
                    "external"
                } else {
                    "object"
                };
                if at(src, "target", "averageValue").is_some() {
                    format!(
                        "{}/{} (avg)",
                        current_of(src, "averageValue"),
                        quantity(at(src, "target", "averageValue"))
                    )
                } else {
                    format!(
                        "{}/{}",
                        current_of(src, "value"),
                        quantity(at(src, "target", "value"))
                    )
                }
            }
            Some("Pods") => format!(
                "{}/{}",
                current_of("pods", "averageValue"),
                quantity(at("pods", "target", "averageValue"))
            ),
            Some(kind @ ("Resource" | "ContainerResource")) => {
                let src = if kind == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let name = spec
                    .get(src)
                    .and_then(|s| s.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if at(src, "target", "averageValue").is_some() {
                    format!(
                        "{name}: {}/{}",
                        current_of(src, "averageValue"),
                        quantity(at(src, "target", "averageValue"))
                    )
                } else {
                    let current = at(src, "current", "averageUtilization")
                        .and_then(Value::as_i64)
                        .map_or_else(|| "<unknown>".to_string(), |u| format!("{u}%"));
                    let target = at(src, "target", "averageUtilization")
                        .and_then(Value::as_i64)
                        .map_or_else(|| "<auto>".to_string(), |u| format!("{u}%"));
                    format!("{name}: {current}/{target}")
                }
            }
            _ => "<unknown type>".to_string(),
        };
        list.push(entry);
    }
    const MAX: usize = 2;
    if list.len() > MAX {
        let more = list.len() - MAX;
        list.truncate(MAX);
        return format!("{} + {more} more...", list.join(", "));
    }
    list.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_upstreams() {
        // k8s-reference/builtin/table-horizontalpodautoscalers.json
        let obj = json!({
            "metadata": {"name": "hpa"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]},
            "status": {"desiredReplicas": 0},
        });
        let cells = hpa_cells(&obj);
        assert_eq!(
            cells[..5],
            [
                json!("Deployment/web"),
                json!("cpu: <unknown>/80%"),
                json!("1"),
                json!(3),
                json!(0)
            ]
        );
        let v1 = convert::to_v1(&obj);
        assert_eq!((HPAS_V1.cells)(&v1)[..5], cells[..5]);
    }

    #[test]
    fn metric_quantities_are_canonicalized() {
        let mut obj = json!({
            "spec": {"metrics": [
                {"type": "Resource", "resource": {"name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "0.5Gi"}}},
                {"type": "Object", "object": {"metric": {"name": "qps"},
                    "target": {"type": "Value", "value": 1.5}}},
                {"type": "External", "external": {"metric": {"name": "q"},
                    "target": {"type": "AverageValue", "averageValue": "2000m"}}},
                {"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}},
            ]},
            "status": {"currentMetrics": [{"type": "Pods", "pods": {"metric": {"name": "m"},
                "current": {"averageValue": "1024Mi"}}}]},
        });
        canonicalize_quantities(&mut obj).expect("canonical");
        assert_eq!(
            obj["spec"]["metrics"][0]["resource"]["target"]["averageValue"],
            "512Mi"
        );
        assert_eq!(
            obj["spec"]["metrics"][1]["object"]["target"]["value"],
            "1500m"
        );
        assert_eq!(
            obj["spec"]["metrics"][2]["external"]["target"]["averageValue"],
            "2"
        );
        assert_eq!(
            obj["spec"]["metrics"][3]["resource"]["target"],
            json!({"type": "Utilization", "averageUtilization": 80})
        );
        assert_eq!(
            obj["status"]["currentMetrics"][0]["pods"]["current"]["averageValue"],
            "1Gi"
        );
        let mut bad = json!({"spec": {"metrics": [{"type": "Pods", "pods": {"metric": {"name": "m"},
            "target": {"type": "AverageValue", "averageValue": "lots"}}}]}});
        assert!(canonicalize_quantities(&mut bad).is_err());
    }

    #[test]
    fn targets_beyond_two_are_counted() {
        let metric = |v: &str| {
            json!({"type": "Pods", "pods": {"metric": {"name": "m"},
            "target": {"type": "AverageValue", "averageValue": v}}})
        };
        let obj = json!({"spec": {"metrics": [metric("1k"), metric("1000"), metric("0.5")]},
            "status": {"currentMetrics": [{"type": "Pods", "pods": {"current": {"averageValue": "500m"}}}]}});
        assert_eq!(targets(&obj), "500m/1k, <unknown>/1k + 1 more...");
    }
}
