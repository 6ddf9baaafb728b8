//! HorizontalPodAutoscalers between `autoscaling/v2` (the stored shape) and `autoscaling/v1`,
//! as upstream's `pkg/apis/autoscaling/v1/conversion.go`: v1 keeps the CPU utilization target
//! in `targetCPUUtilizationPercentage` and everything v1 cannot say in annotations
//! (`autoscaling.alpha.kubernetes.io/{metrics,current-metrics,behavior,conditions}`), so a
//! round trip through v1 loses nothing.

use serde_json::{Map, Value, json};

/// The annotation holding the v2 metrics v1 has no field for.
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// The annotation holding the current metrics of the status.
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// The annotation holding the scaling behavior.
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
/// The annotation holding the status conditions.
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter()
        .try_fold(v, |cur, key| cur.get(key))
        .filter(|v| !v.is_null())
}

/// Inserts `value` at `key` unless it is absent.
fn put(map: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(v) = value {
        map.insert(key.to_string(), v.clone());
    }
}

/// Whether a v2 metric is the CPU utilization target v1 has a field for.
fn is_cpu_utilization(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && get(metric, &["resource", "name"]).and_then(Value::as_str) == Some("cpu")
        && get(metric, &["resource", "target", "averageUtilization"]).is_some()
}

/// The v1 view of a stored v2 HorizontalPodAutoscaler.
pub(super) fn to_v1(v2: &Value) -> Value {
    let mut metadata = v2
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut annotations = metadata
        .get("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let spec2 = v2.get("spec").cloned().unwrap_or(json!({}));
    let status2 = v2.get("status").cloned().unwrap_or(json!({}));

    let mut spec = Map::new();
    put(&mut spec, "scaleTargetRef", spec2.get("scaleTargetRef"));
    put(&mut spec, "minReplicas", get(&spec2, &["minReplicas"]));
    spec.insert(
        "maxReplicas".into(),
        spec2.get("maxReplicas").cloned().unwrap_or(json!(0)),
    );
    let metrics = get(&spec2, &["metrics"])
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization(m)) {
        put(
            &mut spec,
            "targetCPUUtilizationPercentage",
            get(cpu, &["resource", "target", "averageUtilization"]),
        );
    }
    let others: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(metric_to_v1)
        .collect();
    if !others.is_empty() {
        annotations.insert(METRICS.into(), json!(Value::Array(others).to_string()));
    }
    if let Some(behavior) = get(&spec2, &["behavior"]) {
        annotations.insert(BEHAVIOR.into(), json!(behavior.to_string()));
    }

    let mut status = Map::new();
    put(
        &mut status,
        "observedGeneration",
        get(&status2, &["observedGeneration"]),
    );
    put(
        &mut status,
        "lastScaleTime",
        get(&status2, &["lastScaleTime"]),
    );
    for field in ["currentReplicas", "desiredReplicas"] {
        status.insert(
            field.into(),
            get(&status2, &[field]).cloned().unwrap_or(json!(0)),
        );
    }
    let current = get(&status2, &["currentMetrics"])
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if let Some(cpu) = current.iter().find(|m| {
        m.get("type").and_then(Value::as_str) == Some("Resource")
            && get(m, &["resource", "name"]).and_then(Value::as_str) == Some("cpu")
            && get(m, &["resource", "current", "averageUtilization"]).is_some()
    }) {
        put(
            &mut status,
            "currentCPUUtilizationPercentage",
            get(cpu, &["resource", "current", "averageUtilization"]),
        );
    }
    if !current.is_empty() {
        let converted: Vec<Value> = current.iter().map(metric_status_to_v1).collect();
        annotations.insert(
            CURRENT_METRICS.into(),
            json!(Value::Array(converted).to_string()),
        );
    }
    if let Some(conditions) =
        get(&status2, &["conditions"]).filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
    {
        annotations.insert(CONDITIONS.into(), json!(conditions.to_string()));
    }
    if annotations.is_empty() {
        metadata.remove("annotations");
    } else {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    json!({
        "kind": "HorizontalPodAutoscaler",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// The v2 object to store for a v1 HorizontalPodAutoscaler.
pub(super) fn to_v2(v1: Value) -> Value {
    let mut metadata = v1
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut annotations = metadata
        .get("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut take_json = |key: &str| -> Option<Value> {
        let text = annotations.remove(key)?;
        serde_json::from_str(text.as_str()?).ok()
    };
    let other_metrics = take_json(METRICS);
    let current_metrics = take_json(CURRENT_METRICS);
    let behavior = take_json(BEHAVIOR);
    let conditions = take_json(CONDITIONS);
    if annotations.is_empty() {
        metadata.remove("annotations");
    } else {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    let spec1 = v1.get("spec").cloned().unwrap_or(json!({}));
    let status1 = v1.get("status").cloned().unwrap_or(json!({}));

    let mut spec = Map::new();
    put(&mut spec, "scaleTargetRef", spec1.get("scaleTargetRef"));
    put(&mut spec, "minReplicas", get(&spec1, &["minReplicas"]));
    put(&mut spec, "maxReplicas", spec1.get("maxReplicas"));
    let mut metrics: Vec<Value> = other_metrics
        .as_ref()
        .and_then(Value::as_array)
        .map(|list| list.iter().map(metric_from_v1).collect())
        .unwrap_or_default();
    if let Some(cpu) = get(&spec1, &["targetCPUUtilizationPercentage"]) {
        metrics.push(json!({"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}}}));
    }
    if !metrics.is_empty() {
        spec.insert("metrics".into(), Value::Array(metrics));
    }
    if let Some(b) = behavior {
        spec.insert("behavior".into(), b);
    }

    let mut status = Map::new();
    for field in [
        "observedGeneration",
        "lastScaleTime",
        "currentReplicas",
        "desiredReplicas",
    ] {
        put(&mut status, field, get(&status1, &[field]));
    }
    if status.get("currentReplicas") == Some(&json!(0)) {
        // v2's currentReplicas is optional: zero is not written.
        status.remove("currentReplicas");
    }
    let current: Vec<Value> = match current_metrics.as_ref().and_then(Value::as_array) {
        Some(list) => list.iter().map(metric_status_from_v1).collect(),
        None => get(&status1, &["currentCPUUtilizationPercentage"])
            .map(|cpu| {
                vec![json!({"type": "Resource", "resource": {
                    "name": "cpu", "current": {"averageUtilization": cpu}}})]
            })
            .unwrap_or_default(),
    };
    if !current.is_empty() {
        status.insert("currentMetrics".into(), Value::Array(current));
    }
    if let Some(c) = conditions {
        status.insert("conditions".into(), c);
    }
    json!({
        "kind": "HorizontalPodAutoscaler",
        "apiVersion": "autoscaling/v2",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// A v2 `MetricSpec` in the v1 annotation's shape.
fn metric_to_v1(m: &Value) -> Value {
    let kind = m.get("type").cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    out.insert("type".into(), kind.clone());
    let target = |src: &str, field: &str| get(m, &[src, "target", field]);
    match kind.as_str() {
        Some("Resource") | Some("ContainerResource") => {
            let src = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let mut r = Map::new();
            put(&mut r, "name", get(m, &[src, "name"]));
            put(&mut r, "container", get(m, &[src, "container"]));
            put(
                &mut r,
                "targetAverageUtilization",
                target(src, "averageUtilization"),
            );
            put(&mut r, "targetAverageValue", target(src, "averageValue"));
            out.insert(src.into(), Value::Object(r));
        }
        Some("Pods") => {
            let mut p = Map::new();
            put(&mut p, "metricName", get(m, &["pods", "metric", "name"]));
            put(&mut p, "targetAverageValue", target("pods", "averageValue"));
            put(&mut p, "selector", get(m, &["pods", "metric", "selector"]));
            out.insert("pods".into(), Value::Object(p));
        }
        Some("Object") => {
            let mut o = Map::new();
            put(&mut o, "target", get(m, &["object", "describedObject"]));
            put(&mut o, "metricName", get(m, &["object", "metric", "name"]));
            put(&mut o, "targetValue", target("object", "value"));
            put(
                &mut o,
                "selector",
                get(m, &["object", "metric", "selector"]),
            );
            put(&mut o, "averageValue", target("object", "averageValue"));
            out.insert("object".into(), Value::Object(o));
        }
        Some("External") => {
            let mut e = Map::new();
            put(
                &mut e,
                "metricName",
                get(m, &["external", "metric", "name"]),
            );
            put(
                &mut e,
                "metricSelector",
                get(m, &["external", "metric", "selector"]),
            );
            put(&mut e, "targetValue", target("external", "value"));
            put(
                &mut e,
                "targetAverageValue",
                target("external", "averageValue"),
            );
            out.insert("external".into(), Value::Object(e));
        }
        _ => {}
    }
    Value::Object(out)
}

/// A v1 annotation metric back in v2's `MetricSpec` shape.
fn metric_from_v1(m: &Value) -> Value {
    let kind = m.get("type").cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    out.insert("type".into(), kind.clone());
    let target = |value: Option<&Value>, utilization: Option<&Value>, average: Option<&Value>| {
        let mut t = Map::new();
        let kind = if utilization.is_some() {
            "Utilization"
        } else if value.is_some() {
            "Value"
        } else {
            "AverageValue"
        };
        t.insert("type".into(), json!(kind));
        put(&mut t, "value", value);
        put(&mut t, "averageUtilization", utilization);
        put(&mut t, "averageValue", average);
        Value::Object(t)
    };
    let metric = |name: Option<&Value>, selector: Option<&Value>| {
        let mut id = Map::new();
        put(&mut id, "name", name);
        put(&mut id, "selector", selector);
        Value::Object(id)
    };
    match kind.as_str() {
        Some("Resource") | Some("ContainerResource") => {
            let src = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let mut r = Map::new();
            put(&mut r, "name", get(m, &[src, "name"]));
            put(&mut r, "container", get(m, &[src, "container"]));
            r.insert(
                "target".into(),
                target(
                    None,
                    get(m, &[src, "targetAverageUtilization"]),
                    get(m, &[src, "targetAverageValue"]),
                ),
            );
            out.insert(src.into(), Value::Object(r));
        }
        Some("Pods") => {
            out.insert(
                "pods".into(),
                json!({
                    "metric": metric(get(m, &["pods", "metricName"]), get(m, &["pods", "selector"])),
                    "target": target(None, None, get(m, &["pods", "targetAverageValue"])),
                }),
            );
        }
        Some("Object") => {
            let mut o = Map::new();
            put(&mut o, "describedObject", get(m, &["object", "target"]));
            o.insert(
                "metric".into(),
                metric(
                    get(m, &["object", "metricName"]),
                    get(m, &["object", "selector"]),
                ),
            );
            o.insert(
                "target".into(),
                target(
                    get(m, &["object", "targetValue"]),
                    None,
                    get(m, &["object", "averageValue"]),
                ),
            );
            out.insert("object".into(), Value::Object(o));
        }
        Some("External") => {
            out.insert(
                "external".into(),
                json!({
                    "metric": metric(
                        get(m, &["external", "metricName"]),
                        get(m, &["external", "metricSelector"]),
                    ),
                    "target": target(
                        get(m, &["external", "targetValue"]),
                        None,
                        get(m, &["external", "targetAverageValue"]),
                    ),
                }),
            );
        }
        _ => {}
    }
    Value::Object(out)
}

/// A v2 `MetricStatus` in the v1 annotation's shape.
fn metric_status_to_v1(m: &Value) -> Value {
    let kind = m.get("type").cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    out.insert("type".into(), kind.clone());
    let current = |src: &str, field: &str| get(m, &[src, "current", field]);
    match kind.as_str() {
        Some("Resource") | Some("ContainerResource") => {
            let src = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let mut r = Map::new();
            put(&mut r, "name", get(m, &[src, "name"]));
            put(&mut r, "container", get(m, &[src, "container"]));
            put(
                &mut r,
                "currentAverageUtilization",
                current(src, "averageUtilization"),
            );
            put(&mut r, "currentAverageValue", current(src, "averageValue"));
            out.insert(src.into(), Value::Object(r));
        }
        Some("Pods") => {
            let mut p = Map::new();
            put(&mut p, "metricName", get(m, &["pods", "metric", "name"]));
            put(
                &mut p,
                "currentAverageValue",
                current("pods", "averageValue"),
            );
            put(&mut p, "selector", get(m, &["pods", "metric", "selector"]));
            out.insert("pods".into(), Value::Object(p));
        }
        Some("Object") => {
            let mut o = Map::new();
            put(&mut o, "target", get(m, &["object", "describedObject"]));
            put(&mut o, "metricName", get(m, &["object", "metric", "name"]));
            put(&mut o, "currentValue", current("object", "value"));
            put(
                &mut o,
                "selector",
                get(m, &["object", "metric", "selector"]),
            );
            put(&mut o, "averageValue", current("object", "averageValue"));
            out.insert("object".into(), Value::Object(o));
        }
        Some("External") => {
            let mut e = Map::new();
            put(
                &mut e,
                "metricName",
                get(m, &["external", "metric", "name"]),
            );
            put(
                &mut e,
                "metricSelector",
                get(m, &["external", "metric", "selector"]),
            );
            put(&mut e, "currentValue", current("external", "value"));
            put(
                &mut e,
                "currentAverageValue",
                current("external", "averageValue"),
            );
            out.insert("external".into(), Value::Object(e));
        }
        _ => {}
    }
    Value::Object(out)
}

/// A v1 annotation metric status back in v2's `MetricStatus` shape.
fn metric_status_from_v1(m: &Value) -> Value {
    let kind = m.get("type").cloned().unwrap_or(Value::Null);
    let mut out = Map::new();
    out.insert("type".into(), kind.clone());
    let current = |value: Option<&Value>, utilization: Option<&Value>, average: Option<&Value>| {
        let mut c = Map::new();
        put(&mut c, "value", value);
        put(&mut c, "averageUtilization", utilization);
        put(&mut c, "averageValue", average);
        Value::Object(c)
    };
    let metric = |name: Option<&Value>, selector: Option<&Value>| {
        let mut id = Map::new();
        put(&mut id, "name", name);
        put(&mut id, "selector", selector);
        Value::Object(id)
    };
    match kind.as_str() {
        Some("Resource") | Some("ContainerResource") => {
            let src = if kind == "Resource" {
                "resource"
            } else {
                "containerResource"
            };
            let mut r = Map::new();
            put(&mut r, "name", get(m, &[src, "name"]));
            put(&mut r, "container", get(m, &[src, "container"]));
            r.insert(
                "current".into(),
                current(
                    None,
                    get(m, &[src, "currentAverageUtilization"]),
                    get(m, &[src, "currentAverageValue"]),
                ),
            );
            out.insert(src.into(), Value::Object(r));
        }
        Some("Pods") => {
            out.insert(
                "pods".into(),
                json!({
                    "metric": metric(get(m, &["pods", "metricName"]), get(m, &["pods", "selector"])),
                    "current": current(None, None, get(m, &["pods", "currentAverageValue"])),
                }),
            );
        }
        Some("Object") => {
            let mut o = Map::new();
            put(&mut o, "describedObject", get(m, &["object", "target"]));
            o.insert(
                "metric".into(),
                metric(
                    get(m, &["object", "metricName"]),
                    get(m, &["object", "selector"]),
                ),
            );
            o.insert(
                "current".into(),
                current(
                    get(m, &["object", "currentValue"]),
                    None,
                    get(m, &["object", "averageValue"]),
                ),
            );
            out.insert("object".into(), Value::Object(o));
        }
        Some("External") => {
            out.insert(
                "external".into(),
                json!({
                    "metric": metric(
                        get(m, &["external", "metricName"]),
                        get(m, &["external", "metricSelector"]),
                    ),
                    "current": current(
                        get(m, &["external", "currentValue"]),
                        None,
                        get(m, &["external", "currentAverageValue"]),
                    ),
                }),
            );
        }
        _ => {}
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored() -> Value {
        json!({
            "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v2",
            "metadata": {"name": "hpa", "namespace": "ref2", "resourceVersion": "57024"},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 1, "maxReplicas": 3,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}],
            },
            "status": {"desiredReplicas": 0, "currentMetrics": null},
        })
    }

    #[test]
    fn the_v1_view_matches_upstreams() {
        // k8s-reference/builtin/get-hpa-as-v1.json (metadata trimmed).
        assert_eq!(
            to_v1(&stored()),
            json!({
                "kind": "HorizontalPodAutoscaler", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "hpa", "namespace": "ref2", "resourceVersion": "57024"},
                "spec": {
                    "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                    "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 80,
                },
                "status": {"currentReplicas": 0, "desiredReplicas": 0},
            })
        );
    }

    #[test]
    fn what_v1_cannot_say_survives_a_round_trip_through_annotations() {
        let mut v2 = stored();
        v2["spec"]["metrics"] = json!([
            {"type": "Pods", "pods": {"metric": {"name": "qps"},
                "target": {"type": "AverageValue", "averageValue": "10"}}},
            {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                "target": {"type": "Value", "value": "30"}}},
            {"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}},
        ]);
        v2["spec"]["behavior"] = json!({"scaleDown": {"stabilizationWindowSeconds": 60}});
        v2["status"] = json!({
            "currentReplicas": 2, "desiredReplicas": 2,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": 40, "averageValue": "200m"}}}],
            "conditions": [{"type": "AbleToScale", "status": "True"}],
        });
        let v1 = to_v1(&v2);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        assert!(v1["metadata"]["annotations"][METRICS].is_string());
        let back = to_v2(v1);
        // The CPU metric comes last, after the annotation's, as upstream orders them.
        assert_eq!(back["spec"]["metrics"][0], v2["spec"]["metrics"][0]);
        assert_eq!(back["spec"]["metrics"][1], v2["spec"]["metrics"][1]);
        assert_eq!(back["spec"]["metrics"][2], v2["spec"]["metrics"][2]);
        assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
        assert_eq!(back["status"], v2["status"]);
        assert!(back["metadata"].get("annotations").is_none());
    }
}
