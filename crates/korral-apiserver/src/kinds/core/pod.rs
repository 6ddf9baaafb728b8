//! Pods: quantities canonicalized on decode, upstream's pod validation on create
//! (`ValidatePodCreate`) and its update rules (`ValidatePodUpdate`, see [`pod_update`];
//! `ValidatePodStatusUpdate` through `/status`, see [`pod_status`]).

// The update rules live beside this file; declared here so the group module stays as it is.
#[path = "pod_status.rs"]
mod pod_status;
#[path = "pod_subresources.rs"]
mod pod_subresources;
#[path = "pod_update.rs"]
mod pod_update;

use pod_subresources::{EPHEMERAL_CONTAINERS, RESIZE};

use serde_json::Value;

use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::objects::FieldValidation;
use crate::registry::ResourceInfo;
use crate::validation::names;
use crate::validation::podspec::{self, PodSpecOptions};
use crate::{ApiError, quantity};

/// The strategy of `v1/Pod`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PodStrategy;

/// The spec of a pod (`null` when absent).
fn spec_of(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// The metadata of a pod (`null` when absent).
fn meta_of(obj: &Value) -> &Value {
    obj.get("metadata").unwrap_or(&Value::Null)
}

/// `validatePodMetadataAndSpec` minus the object metadata (the pipeline validates it): the
/// pod's AppArmor annotations, then the spec as a Pod's.
fn validate_spec(obj: &Value) -> Vec<Cause> {
    let opts = PodSpecOptions {
        resource_is_pod: true,
        pod_name: crate::meta::name(obj),
    };
    let spec = spec_of(obj);
    let mut causes =
        podspec::validate_app_armor_annotations(meta_of(obj), spec, "metadata.annotations");
    causes.extend(podspec::validate_pod_spec(spec, "spec", opts));
    causes.extend(podspec::validate_pod_only(spec, "spec"));
    causes
}

/// The seconds a pod's deletion waits for its kubelet (upstream's `podStrategy.
/// CheckGracefulDelete`): the `gracePeriodSeconds` asked for, else the pod's
/// `spec.terminationGracePeriodSeconds` (defaulted to 30), else 0; 0 for a pod no node runs
/// (not scheduled: `spec.nodeName` empty) or one that has finished (`Succeeded`, `Failed`);
/// a negative period is 1.
fn grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let spec = spec_of(pod);
    let mut period = requested
        .or_else(|| {
            spec.get("terminationGracePeriodSeconds")
                .and_then(Value::as_i64)
        })
        .unwrap_or(0);
    let node = spec.get("nodeName").and_then(Value::as_str).unwrap_or("");
    if node.is_empty() {
        period = 0;
    }
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Failed" | "Succeeded")) {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    period
}

impl Strategy for PodStrategy {
    fn prepare_for_create(&self, _info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        // As upstream's strategy: a new Pod's status is the server's (`Pending` and its QoS
        // class, filled in by the defaults); what a client sends is dropped.
        crate::kinds::strategy::strip_status(obj);
    }

    /// Quantities are read as upstream's decoder reads them (a JSON number is a quantity too)
    /// and written back in canonical form; a malformed one makes the object undecodable (400).
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        if let Some(spec) = obj.get_mut("spec") {
            podspec::canonicalize_pod_spec(spec).map_err(|e| quantity::undecodable(info, e))?;
        }
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "Pod", obj);
    }

    /// `ValidatePodCreate`.
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        let spec = spec_of(obj);
        let mut causes = validate_spec(obj);
        let ephemeral = spec.get("ephemeralContainers").and_then(Value::as_array);
        if ephemeral.is_some_and(|e| !e.is_empty()) {
            causes.push(Cause::forbidden(
                "spec.ephemeralContainers",
                "cannot be set on create",
            ));
        }
        let node = spec.get("nodeName").and_then(Value::as_str).unwrap_or("");
        let gated = spec
            .get("schedulingGates")
            .and_then(Value::as_array)
            .is_some_and(|g| !g.is_empty());
        if !node.is_empty() && gated {
            causes.push(Cause::forbidden(
                "spec.nodeName",
                "cannot be set until all schedulingGates have been cleared",
            ));
        }
        causes.extend(podspec::validate_app_armor_annotations_match(
            meta_of(obj),
            spec,
            "spec",
        ));
        causes
    }

    /// `WarningsOnCreate`: a name that is no DNS label (it becomes the hostname), then
    /// upstream's pod spec warnings. (Upstream sends none on update.)
    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut warnings = Vec::new();
        let name = obj
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let msgs = names::dns1123_label(name);
        if !msgs.is_empty() {
            warnings.push(format!(
                "metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [{}]",
                msgs.join(" ")
            ));
        }
        let meta = obj.get("metadata").unwrap_or(&Value::Null);
        warnings.extend(podspec::warnings::pod_spec_warnings(
            None,
            meta,
            spec_of(obj),
        ));
        warnings
    }

    fn warnings_on_update(&self, _obj: &Value, _old: &Value) -> Vec<String> {
        Vec::new()
    }

    fn subresources(&self) -> &'static [&'static str] {
        &[EPHEMERAL_CONTAINERS, RESIZE]
    }

    /// Upstream's `CheckGracefulDelete`: Pods are always deleted gracefully.
    fn graceful_delete_period(&self, cur: &Value, requested: Option<i64>) -> Option<i64> {
        Some(grace_period(cur, requested))
    }

    /// A write through `ephemeralcontainers` or `resize` changes only its part; one through
    /// `status` keeps the QoS class and reads the IPs as upstream's conversion does.
    fn prepare_for_subresource_update(&self, subresource: &str, obj: &mut Value, old: &Value) {
        match subresource {
            "status" => pod_status::prepare_status_update(obj, old),
            EPHEMERAL_CONTAINERS => pod_subresources::keep_ephemeral_containers_only(obj, old),
            RESIZE => pod_subresources::keep_resize_only(obj, old),
            _ => {}
        }
    }

    /// `ValidatePodUpdate`, or the rules of the subresource written (`ValidatePodStatusUpdate`
    /// checks the status alone: the spec is the stored one).
    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return pod_status::validate_status_update(obj, old);
        }
        let spec = spec_of(obj);
        let mut causes = validate_spec(obj);
        causes.extend(match ctx.subresource {
            Some(EPHEMERAL_CONTAINERS) => {
                pod_subresources::validate_ephemeral_containers_update(obj, old)
            }
            Some(RESIZE) => pod_subresources::validate_resize(obj, old),
            _ => {
                let mut causes = pod_status::validate_annotation_updates(obj, old);
                causes.extend(pod_update::validate_spec_update(spec, spec_of(old)));
                causes
            }
        });
        causes
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::grace_period;

    #[test]
    fn grace_period_follows_upstream_check_graceful_delete() {
        let pod = |node: &str, tgps: Option<i64>, phase: &str| {
            let mut pod = json!({"spec": {"nodeName": node}, "status": {"phase": phase}});
            if let Some(t) = tgps {
                pod["spec"]["terminationGracePeriodSeconds"] = json!(t);
            }
            pod
        };
        // (pod, requested, period)
        let table = [
            // The pod's own period (30 once defaulted), unless the request names one.
            (pod("n", Some(30), "Running"), None, 30),
            (pod("n", Some(5), "Running"), None, 5),
            (pod("n", Some(30), "Running"), Some(7), 7),
            (pod("n", Some(30), "Running"), Some(0), 0),
            // No period anywhere: at once.
            (pod("n", None, "Running"), None, 0),
            // Not scheduled, or finished: at once, whatever was asked.
            (pod("", Some(30), "Pending"), Some(10), 0),
            (pod("n", Some(30), "Succeeded"), None, 0),
            (pod("n", Some(30), "Failed"), Some(10), 0),
            // Negative: the shortest graceful period.
            (pod("n", Some(30), "Running"), Some(-5), 1),
            (pod("n", Some(-3), "Running"), None, 1),
        ];
        for (pod, requested, period) in table {
            assert_eq!(grace_period(&pod, requested), period, "{pod} {requested:?}");
        }
    }
}
