//! HorizontalPodAutoscaler defaults and validation (upstream's `pkg/apis/autoscaling/v2`
//! defaults and `pkg/apis/autoscaling/validation`), on the v2 shape.

use serde_json::{Map, Value, json};

use crate::error::Cause;
use crate::validation::names::{child, index, invalid_value, path_segment_name};

/// Upstream's v2 defaults and zero values: one replica at least, an 80% CPU utilization target when no metric
/// is given, and the default scaling rules filled into a given `behavior`.
pub(super) fn default_v2(obj: &mut Value) {
    // The status fields v2 always writes (`desiredReplicas` is not optional, `currentMetrics`
    // is written as null when empty).
    if let Some(root) = obj.as_object_mut() {
        let status = root.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            status.entry("desiredReplicas").or_insert(json!(0));
            status.entry("currentMetrics").or_insert(Value::Null);
        }
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("minReplicas").is_none_or(Value::is_null) {
        spec.insert("minReplicas".into(), json!(1));
    }
    if spec
        .get("metrics")
        .is_none_or(|m| m.as_array().is_none_or(Vec::is_empty))
    {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15},
            {"type": "Percent", "value": 100, "periodSeconds": 15}]});
        let down = json!({"selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]});
        for (field, defaults) in [("scaleUp", up), ("scaleDown", down)] {
            let mut rules: Map<String, Value> = defaults.as_object().cloned().unwrap_or_default();
            if let Some(given) = behavior.get(field).and_then(Value::as_object) {
                for (k, v) in given {
                    if !v.is_null() {
                        rules.insert(k.clone(), v.clone());
                    }
                }
            }
            behavior.insert(field.into(), Value::Object(rules));
        }
    }
}

/// Upstream's `validateHorizontalPodAutoscalerSpec` on the v2 shape.
pub(super) fn validate_spec(spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let min = spec.get("minReplicas").and_then(Value::as_i64);
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    let metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let scales_to_zero_by = |t: &str| metrics.iter().any(|m| m["type"] == t);
    let lower_bound = if scales_to_zero_by("Object") || scales_to_zero_by("External") {
        0
    } else {
        1
    };
    if let Some(m) = min
        && m < lower_bound
    {
        errs.push(invalid_value(
            "spec.minReplicas",
            &json!(m),
            &format!("must be greater than or equal to {lower_bound}"),
        ));
    }
    if max < 1 {
        errs.push(invalid_value(
            "spec.maxReplicas",
            &json!(max),
            "must be greater than 0",
        ));
    }
    if let Some(m) = min
        && max < m
    {
        errs.push(invalid_value(
            "spec.maxReplicas",
            &json!(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    errs.extend(object_reference(
        spec.get("scaleTargetRef").unwrap_or(&Value::Null),
        "spec.scaleTargetRef",
    ));
    for (i, metric) in metrics.iter().enumerate() {
        errs.extend(metric_spec(metric, &index("spec.metrics", i)));
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        for field in ["scaleUp", "scaleDown"] {
            if let Some(rules) = behavior.get(field).filter(|r| !r.is_null()) {
                errs.extend(scaling_rules(rules, &child("spec.behavior", field)));
            }
        }
    }
    errs
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// `ValidateCrossVersionObjectReference`: kind and name required and valid path segments.
fn object_reference(reference: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    for field in ["kind", "name"] {
        let value = text(reference, field);
        if value.is_empty() {
            errs.push(Cause::required(child(path, field), ""));
        } else {
            for msg in path_segment_name(value) {
                errs.push(invalid_value(&child(path, field), &json!(value), &msg));
            }
        }
    }
    errs
}

/// `validateMetricIdentifier`.
fn metric_identifier(id: &Value, path: &str) -> Vec<Cause> {
    let name = text(id, "name");
    if name.is_empty() {
        return vec![Cause::required(
            child(path, "name"),
            "must specify a metric name",
        )];
    }
    path_segment_name(name)
        .into_iter()
        .map(|msg| invalid_value(&child(path, "name"), &json!(name), &msg))
        .collect()
}

/// Whether a quantity field is set and not positive.
fn not_positive(value: &Value) -> bool {
    crate::quantity::from_json(value).is_ok_and(|q| q.is_zero() || q.is_negative())
}

/// `validateMetricTarget`.
fn metric_target(target: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let kind = target.get("type").cloned().unwrap_or(json!(""));
    if kind == "" {
        errs.push(Cause::required(
            child(path, "type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(
        kind.as_str(),
        Some("Utilization" | "Value" | "AverageValue")
    ) {
        errs.push(invalid_value(
            &child(path, "type"),
            &kind,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for field in ["value", "averageValue"] {
        if let Some(v) = target.get(field).filter(|v| !v.is_null())
            && not_positive(v)
        {
            errs.push(invalid_value(&child(path, field), v, "must be positive"));
        }
    }
    if let Some(u) = target.get("averageUtilization").filter(|v| !v.is_null())
        && u.as_i64().is_some_and(|u| u < 1)
    {
        errs.push(invalid_value(
            &child(path, "averageUtilization"),
            u,
            "must be greater than 0",
        ));
    }
    errs
}

const SOURCES: [(&str, &str); 5] = [
    ("ContainerResource", "containerResource"),
    ("External", "external"),
    ("Object", "object"),
    ("Pods", "pods"),
    ("Resource", "resource"),
];

/// `validateMetricSpec`: a known type, its source present, no other source.
fn metric_spec(metric: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let kind = metric.get("type").cloned().unwrap_or(json!(""));
    if kind == "" {
        errs.push(Cause::required(
            child(path, "type"),
            "must specify a metric source type",
        ));
    }
    let present: Vec<&str> = SOURCES
        .iter()
        .map(|(_, field)| *field)
        .filter(|field| metric.get(*field).is_some_and(|v| !v.is_null()))
        .collect();
    let expected = SOURCES
        .iter()
        .find(|(t, _)| kind.as_str() == Some(*t))
        .map(|(_, field)| *field);
    match expected {
        None => errs.push(Cause::not_supported(
            child(path, "type"),
            &kind,
            &SOURCES.iter().map(|(t, _)| json!(t)).collect::<Vec<_>>(),
        )),
        Some(field) => match metric.get(field).filter(|v| !v.is_null()) {
            None => errs.push(Cause::required(
                child(path, field),
                "must populate information for the given metric source",
            )),
            Some(source) => errs.extend(metric_source(field, source, &child(path, field))),
        },
    }
    if present.len() != 1 {
        for field in present.iter().filter(|f| Some(**f) != expected) {
            errs.push(Cause::forbidden(
                child(path, field),
                "must populate the given metric source only",
            ));
        }
    }
    errs
}

/// The rules of one metric source.
fn metric_source(field: &str, src: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let target = src.get("target").unwrap_or(&Value::Null);
    let target_path = child(path, "target");
    let set = |f: &str| target.get(f).is_some_and(|v| !v.is_null());
    match field {
        "resource" | "containerResource" => {
            if text(src, "name").is_empty() {
                errs.push(Cause::required(
                    child(path, "name"),
                    "must specify a resource name",
                ));
            }
            if field == "containerResource" && text(src, "container").is_empty() {
                errs.push(Cause::required(
                    child(path, "container"),
                    "must specify a container",
                ));
            }
            errs.extend(metric_target(target, &target_path));
            if !set("averageUtilization") && !set("averageValue") {
                errs.push(Cause::required(
                    child(&target_path, "averageUtilization"),
                    "must set either a target raw value or a target utilization",
                ));
            }
            if set("averageUtilization") && set("averageValue") {
                errs.push(Cause::forbidden(
                    child(&target_path, "averageValue"),
                    "may not set both a target raw value and a target utilization",
                ));
            }
        }
        "pods" => {
            errs.extend(metric_identifier(
                src.get("metric").unwrap_or(&Value::Null),
                &child(path, "metric"),
            ));
            errs.extend(metric_target(target, &target_path));
            if !set("averageValue") {
                errs.push(Cause::required(
                    child(&target_path, "averageValue"),
                    "must specify a positive target averageValue",
                ));
            }
        }
        "object" => {
            errs.extend(object_reference(
                src.get("describedObject").unwrap_or(&Value::Null),
                &child(path, "describedObject"),
            ));
            errs.extend(metric_identifier(
                src.get("metric").unwrap_or(&Value::Null),
                &child(path, "metric"),
            ));
            errs.extend(metric_target(target, &target_path));
            if !set("value") && !set("averageValue") {
                errs.push(Cause::required(
                    child(&target_path, "averageValue"),
                    "must set either a target value or averageValue",
                ));
            }
        }
        _ => {
            errs.extend(metric_identifier(
                src.get("metric").unwrap_or(&Value::Null),
                &child(path, "metric"),
            ));
            errs.extend(metric_target(target, &target_path));
            if !set("value") && !set("averageValue") {
                errs.push(Cause::required(
                    child(&target_path, "averageValue"),
                    "must set either a target value for metric or a per-pod target",
                ));
            }
            if set("value") && set("averageValue") {
                errs.push(Cause::forbidden(
                    child(&target_path, "value"),
                    "may not set both a target value for metric and a per-pod target",
                ));
            }
        }
    }
    errs
}

/// `validateScalingRules`: the stabilization window, the select policy and the policies.
fn scaling_rules(rules: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if let Some(window) = rules
        .get("stabilizationWindowSeconds")
        .and_then(Value::as_i64)
    {
        if window < 0 {
            errs.push(invalid_value(
                &child(path, "stabilizationWindowSeconds"),
                &json!(window),
                "must be greater than or equal to zero",
            ));
        }
        if window > 3600 {
            errs.push(invalid_value(
                &child(path, "stabilizationWindowSeconds"),
                &json!(window),
                "must be less than or equal to 3600",
            ));
        }
    }
    if let Some(policy) = rules.get("selectPolicy").filter(|p| !p.is_null())
        && !matches!(policy.as_str(), Some("Max" | "Min" | "Disabled"))
    {
        errs.push(Cause::not_supported(
            child(path, "selectPolicy"),
            policy,
            &[json!("Disabled"), json!("Max"), json!("Min")],
        ));
    }
    let policies = rules
        .get("policies")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if policies.is_empty() {
        errs.push(Cause::required(
            child(path, "policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, policy) in policies.iter().enumerate() {
        let at = index(&child(path, "policies"), i);
        let kind = policy.get("type").cloned().unwrap_or(json!(""));
        if !matches!(kind.as_str(), Some("Pods" | "Percent")) {
            errs.push(Cause::not_supported(
                child(&at, "type"),
                &kind,
                &[json!("Percent"), json!("Pods")],
            ));
        }
        if policy.get("value").and_then(Value::as_i64).unwrap_or(0) <= 0 {
            errs.push(invalid_value(
                &child(&at, "value"),
                policy.get("value").unwrap_or(&json!(0)),
                "must be greater than zero",
            ));
        }
        let period = policy
            .get("periodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if period <= 0 {
            errs.push(invalid_value(
                &child(&at, "periodSeconds"),
                &json!(period),
                "must be greater than zero",
            ));
        }
        if period > 1800 {
            errs.push(invalid_value(
                &child(&at, "periodSeconds"),
                &json!(period),
                "must be less than or equal to 1800",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    fn spec(min: i64, max: i64) -> Value {
        let mut obj = json!({"spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": min, "maxReplicas": max}});
        default_v2(&mut obj);
        obj["spec"].take()
    }

    #[test]
    fn bounds_as_upstream() {
        assert!(validate_spec(&spec(1, 3)).is_empty());
        assert_eq!(
            summaries(validate_spec(&spec(5, 3))),
            ["spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"]
        );
        assert_eq!(
            summaries(validate_spec(&spec(0, 3))),
            ["spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"]
        );
    }

    #[test]
    fn metrics_and_behavior() {
        let mut s = spec(1, 3);
        s["metrics"] = json!([
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}},
            {"type": "Pods", "resource": {"name": "cpu"}},
            {"type": "Bogus"},
        ]);
        s["behavior"] = json!({"scaleDown": {"policies": [], "selectPolicy": "Sometimes"}});
        assert_eq!(
            summaries(validate_spec(&s)),
            [
                "spec.metrics[0].resource.target.averageUtilization: Required value: must set either a target raw value or a target utilization",
                "spec.metrics[1].pods: Required value: must populate information for the given metric source",
                "spec.metrics[2].type: Unsupported value: \"Bogus\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                "spec.behavior.scaleDown.selectPolicy: Unsupported value: \"Sometimes\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
            ]
        );
    }

    #[test]
    fn defaults_fill_the_cpu_target_and_behavior_rules() {
        let mut obj = json!({"spec": {"maxReplicas": 3, "behavior": {"scaleUp": {"stabilizationWindowSeconds": 30}}}});
        default_v2(&mut obj);
        assert_eq!(obj["spec"]["minReplicas"], 1);
        assert_eq!(
            obj["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        assert_eq!(
            obj["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"],
            30
        );
        assert_eq!(
            obj["spec"]["behavior"]["scaleUp"]["policies"][0]["value"],
            4
        );
        assert_eq!(obj["spec"]["behavior"]["scaleDown"]["selectPolicy"], "Max");
    }
}
