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
        .map(|m| metric_to_v1(m, Half::Spec))
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
        let converted: Vec<Value> = current
            .iter()
            .map(|m| metric_to_v1(m, Half::Status))
            .collect();
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
        .map(|list| list.iter().map(|m| metric_from_v1(m, Half::Spec)).collect())
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
        Some(list) => list
            .iter()
            .map(|m| metric_from_v1(m, Half::Status))
            .collect(),
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

/// Which half of a metric a mapping is for: the target (`spec.metrics`) or the current value
/// (`status.currentMetrics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Half {
    Spec,
    Status,
}

/// The source field of a metric type (`Resource` → `resource`).
fn source_of(metric: &Value) -> Option<&'static str> {
    match metric.get("type").and_then(Value::as_str)? {
        "Resource" => Some("resource"),
        "ContainerResource" => Some("containerResource"),
        "Pods" => Some("pods"),
        "Object" => Some("object"),
        "External" => Some("external"),
        _ => None,
    }
}

/// The fields of one metric source: the v1 annotation's field and where v2 keeps it (upstream's
/// `Convert_autoscaling_Metric{Spec,Status}_To_v1_...` pairs), one table for both directions.
fn fields(source: &str, half: Half) -> &'static [(&'static str, &'static str)] {
    match (source, half) {
        ("resource" | "containerResource", Half::Spec) => &[
            ("name", "name"),
            ("container", "container"),
            ("targetAverageUtilization", "target.averageUtilization"),
            ("targetAverageValue", "target.averageValue"),
        ],
        ("resource" | "containerResource", Half::Status) => &[
            ("name", "name"),
            ("container", "container"),
            ("currentAverageUtilization", "current.averageUtilization"),
            ("currentAverageValue", "current.averageValue"),
        ],
        ("pods", Half::Spec) => &[
            ("metricName", "metric.name"),
            ("targetAverageValue", "target.averageValue"),
            ("selector", "metric.selector"),
        ],
        ("pods", Half::Status) => &[
            ("metricName", "metric.name"),
            ("currentAverageValue", "current.averageValue"),
            ("selector", "metric.selector"),
        ],
        ("object", Half::Spec) => &[
            ("target", "describedObject"),
            ("metricName", "metric.name"),
            ("targetValue", "target.value"),
            ("selector", "metric.selector"),
            ("averageValue", "target.averageValue"),
        ],
        ("object", Half::Status) => &[
            ("target", "describedObject"),
            ("metricName", "metric.name"),
            ("currentValue", "current.value"),
            ("selector", "metric.selector"),
            ("averageValue", "current.averageValue"),
        ],
        ("external", Half::Spec) => &[
            ("metricName", "metric.name"),
            ("metricSelector", "metric.selector"),
            ("targetValue", "target.value"),
            ("targetAverageValue", "target.averageValue"),
        ],
        ("external", Half::Status) => &[
            ("metricName", "metric.name"),
            ("metricSelector", "metric.selector"),
            ("currentValue", "current.value"),
            ("currentAverageValue", "current.averageValue"),
        ],
        _ => &[],
    }
}

/// A v2 `MetricSpec`/`MetricStatus` in the v1 annotation's shape.
fn metric_to_v1(m: &Value, half: Half) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(Value::Null));
    if let Some(source) = source_of(m) {
        let v2 = m.get(source).unwrap_or(&Value::Null);
        let mut v1 = Map::new();
        for (field, path) in fields(source, half) {
            put(
                &mut v1,
                field,
                crate::meta::path(v2, path).filter(|v| !v.is_null()),
            );
        }
        out.insert(source.into(), Value::Object(v1));
    }
    Value::Object(out)
}

/// A v1 annotation metric back in v2's shape; a target gets the type its values imply.
fn metric_from_v1(m: &Value, half: Half) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(Value::Null));
    if let Some(source) = source_of(m) {
        let v1 = m.get(source).unwrap_or(&Value::Null);
        let mut v2 = json!({});
        for (field, path) in fields(source, half) {
            if let Some(value) = v1.get(*field).filter(|v| !v.is_null()) {
                crate::meta::set_path(&mut v2, path, value.clone());
            }
        }
        // The structs v2 always writes, even when empty.
        if let Some(map) = v2.as_object_mut() {
            if matches!(source, "pods" | "object" | "external") {
                map.entry("metric").or_insert_with(|| json!({}));
            }
            if half == Half::Status {
                map.entry("current").or_insert_with(|| json!({}));
            }
        }
        if half == Half::Spec {
            let kind = if get(&v2, &["target", "averageUtilization"]).is_some() {
                "Utilization"
            } else if get(&v2, &["target", "value"]).is_some() {
                "Value"
            } else {
                "AverageValue"
            };
            crate::meta::set_path(&mut v2, "target.type", json!(kind));
        }
        out.insert(source.into(), v2);
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
