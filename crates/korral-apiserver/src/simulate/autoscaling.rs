//! The horizontal pod autoscaler controller, on a cluster without a metrics API (Korral runs
//! no metrics server): it keeps the target's replicas within `minReplicas` … `maxReplicas`
//! through the target's `/scale` subresource and reports what upstream's controller reports
//! there: `currentReplicas`, `desiredReplicas`, `lastScaleTime` and the `AbleToScale`,
//! `ScalingActive` and `ScalingLimited` conditions (a target inside its bounds gets
//! `ScalingActive=False` with upstream's `FailedGetResourceMetric` for resource metrics, or
//! `FailedGetPodsMetric` / `FailedGetObjectMetric` / `FailedGetExternalMetric` /
//! `FailedGetContainerResourceMetric` for the others).

use serde_json::{Value, json};

use super::access::{self, Actor};
use super::events::{Note, Recorder};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;

/// The time fields of an HPA condition.
const TIMES: [&str; 1] = ["lastTransitionTime"];

/// A string at `path` of `obj` (empty when unset).
fn text<'a>(obj: &'a Value, path: &str) -> &'a str {
    meta::path(obj, path).and_then(Value::as_str).unwrap_or("")
}

/// A condition of the HPA status.
fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": message})
}

/// Why the first metric of the spec cannot be computed without a metrics API (upstream's
/// reason and message for its source).
fn metric_failure(hpa: &Value) -> (&'static str, String) {
    let metric = meta::path(hpa, "spec.metrics")
        .and_then(Value::as_array)
        .and_then(|m| m.first())
        .cloned()
        .unwrap_or_else(|| json!({"type": "Resource", "resource": {"name": "cpu"}}));
    let prefix = "the HPA was unable to compute the replica count: ";
    match text(&metric, "type") {
        "Pods" => (
            "FailedGetPodsMetric",
            format!(
                "{prefix}unable to get metric {}: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered",
                text(&metric, "pods.metric.name")
            ),
        ),
        "Object" => (
            "FailedGetObjectMetric",
            format!(
                "{prefix}unable to get metric {}: {} on {} {}/unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered",
                text(&metric, "object.metric.name"),
                text(&metric, "object.describedObject.kind"),
                meta::namespace(hpa).unwrap_or(""),
                text(&metric, "object.describedObject.name"),
            ),
        ),
        "External" => (
            "FailedGetExternalMetric",
            format!(
                "{prefix}unable to get external metric {}/{}/nil: unable to fetch metrics from external metrics API: no external metrics API (external.metrics.k8s.io) registered",
                meta::namespace(hpa).unwrap_or(""),
                text(&metric, "external.metric.name"),
            ),
        ),
        "ContainerResource" => {
            let resource = text(&metric, "containerResource.name");
            (
                "FailedGetContainerResourceMetric",
                format!(
                    "{prefix}failed to get {resource} resource metric value: failed to get {resource} utilization: unable to get metrics for resource {resource}: no metrics returned from resource metrics API"
                ),
            )
        }
        _ => {
            let resource = match text(&metric, "resource.name") {
                "" => "cpu",
                name => name,
            };
            (
                "FailedGetResourceMetric",
                format!(
                    "{prefix}failed to get {resource} resource metric value: failed to get {resource} utilization: unable to get metrics for resource {resource}: no metrics returned from resource metrics API"
                ),
            )
        }
    }
}

/// What the controller decides for a target with `current` replicas.
#[derive(Debug, PartialEq, Eq)]
struct Decision {
    /// The replicas to scale to (`None`: leave the target alone).
    scale_to: Option<i64>,
    /// `status.desiredReplicas` (`None`: keep the recorded one).
    desired: Option<i64>,
    /// The conditions besides `AbleToScale`.
    conditions: Vec<Value>,
}

/// Upstream's `reconcileAutoscaler` without metrics: bounds first, then the metric failure.
fn decide(hpa: &Value, current: i64) -> Decision {
    let min = meta::path(hpa, "spec.minReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let max = meta::path(hpa, "spec.maxReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(min);
    if current == 0 && min != 0 {
        return Decision {
            scale_to: None,
            desired: Some(0),
            conditions: vec![condition(
                "ScalingActive",
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
            )],
        };
    }
    if current > max || current < min {
        let (bound, reason, message) = if current > max {
            (
                max,
                "TooManyReplicas",
                "the desired replica count is more than the maximum replica count",
            )
        } else {
            (
                min,
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
            )
        };
        return Decision {
            scale_to: Some(bound),
            desired: Some(bound),
            conditions: vec![condition("ScalingLimited", "True", reason, message)],
        };
    }
    let (reason, message) = metric_failure(hpa);
    Decision {
        scale_to: None,
        desired: None,
        conditions: vec![condition("ScalingActive", "False", reason, &message)],
    }
}

/// Reconciles one HorizontalPodAutoscaler.
pub async fn reconcile(
    objects: &Objects,
    events: &Recorder,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    let Some(hpa) = access::get(objects, "autoscaling", "horizontalpodautoscalers", ns, name)
    else {
        return Ok(());
    };
    if meta::is_deleting(&hpa) {
        return Ok(());
    }
    let info = access::info(objects, "autoscaling", "v2", "horizontalpodautoscalers")?;
    let kind = text(&hpa, "spec.scaleTargetRef.kind").to_string();
    let target_name = text(&hpa, "spec.scaleTargetRef.name").to_string();
    let (group, version) = match text(&hpa, "spec.scaleTargetRef.apiVersion").split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (
            String::new(),
            text(&hpa, "spec.scaleTargetRef.apiVersion").to_string(),
        ),
    };
    let target = objects
        .registry()
        .by_kind(&group, &version, &kind)
        .filter(|t| t.scale.is_some());
    let scale = match &target {
        Some(target) => objects
            .get_scale(target, Some(ns), &target_name)
            .await
            .map_err(|e| e.message),
        None => Err(format!(
            "no matches for kind \"{kind}\" in group \"{group}\""
        )),
    };
    let scale = match scale {
        Ok(scale) => scale,
        Err(why) => {
            let message =
                format!("the HPA controller was unable to get the target's current scale: {why}");
            return access::update_status(objects, Actor::Autoscaler, &info, &hpa, move |hpa| {
                set_conditions(
                    hpa,
                    &[condition(
                        "AbleToScale",
                        "False",
                        "FailedGetScale",
                        &message,
                    )],
                );
            })
            .await;
        }
    };
    let current = meta::path(&scale, "spec.replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let decision = decide(&hpa, current);
    let mut able = condition(
        "AbleToScale",
        "True",
        "SucceededGetScale",
        "the HPA controller was able to get the target's current scale",
    );
    let mut scaled = false;
    if let (Some(to), Some(target)) = (decision.scale_to, &target) {
        let written =
            access::write_scale(objects, Actor::Autoscaler, target, ns, &target_name, to).await;
        // Upstream's rescale events; without metrics only the bounds move a target.
        let reason = if to > current {
            "Current number of replicas below Spec.MinReplicas"
        } else {
            "Current number of replicas above Spec.MaxReplicas"
        };
        let note = match &written {
            Ok(()) => Note::normal(
                "SuccessfulRescale",
                format!("New size: {to}; reason: {reason}"),
            ),
            Err(e) => Note::warning(
                "FailedRescale",
                format!("New size: {to}; reason: {reason}; error: {}", e.message),
            ),
        };
        events.record(objects, Actor::Autoscaler, &hpa, note).await;
        able = match written {
            Ok(()) => {
                scaled = true;
                condition(
                    "AbleToScale",
                    "True",
                    "SucceededRescale",
                    &format!("the HPA controller was able to update the target scale to {to}"),
                )
            }
            Err(e) => condition(
                "AbleToScale",
                "False",
                "FailedUpdateScale",
                &format!(
                    "the HPA controller was unable to update the target scale: {}",
                    e.message
                ),
            ),
        };
    }
    let mut conditions = vec![able];
    conditions.extend(decision.conditions);
    let desired = decision.desired;
    let now = meta::now_rfc3339();
    access::update_status(objects, Actor::Autoscaler, &info, &hpa, move |hpa| {
        hpa["status"]["currentReplicas"] = json!(current);
        if let Some(desired) = desired {
            hpa["status"]["desiredReplicas"] = json!(desired);
        }
        if scaled {
            hpa["status"]["lastScaleTime"] = json!(now);
        }
        set_conditions(hpa, &conditions);
    })
    .await
}

/// Sets conditions on an HPA's status as upstream's `setCondition` (a condition keeps its
/// transition time while its status stays).
fn set_conditions(hpa: &mut Value, conditions: &[Value]) {
    let mut list: Vec<Value> = meta::path(hpa, "status.conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in conditions {
        access::set_condition(&mut list, c.clone(), &TIMES);
    }
    if !hpa["status"].is_object() {
        hpa["status"] = json!({});
    }
    hpa["status"]["conditions"] = Value::Array(list);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hpa(min: i64, max: i64) -> Value {
        json!({"metadata": {"name": "web", "namespace": "ns"},
               "spec": {"minReplicas": min, "maxReplicas": max,
                        "metrics": [{"type": "Resource", "resource": {"name": "cpu"}}]}})
    }

    #[test]
    fn bounds_come_first() {
        let above = decide(&hpa(1, 3), 5);
        assert_eq!(above.scale_to, Some(3));
        assert_eq!(above.conditions[0]["reason"], "TooManyReplicas");
        let below = decide(&hpa(2, 3), 1);
        assert_eq!(below.scale_to, Some(2));
        assert_eq!(below.conditions[0]["reason"], "TooFewReplicas");
        let zero = decide(&hpa(1, 3), 0);
        assert_eq!(zero.scale_to, None);
        assert_eq!(zero.desired, Some(0));
        assert_eq!(zero.conditions[0]["reason"], "ScalingDisabled");
    }

    #[test]
    fn inside_the_bounds_the_metric_is_missing() {
        let inside = decide(&hpa(1, 3), 2);
        assert_eq!(inside.scale_to, None);
        assert_eq!(inside.desired, None);
        assert_eq!(inside.conditions[0]["reason"], "FailedGetResourceMetric");
        assert_eq!(
            inside.conditions[0]["message"],
            "the HPA was unable to compute the replica count: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API"
        );
    }
}
