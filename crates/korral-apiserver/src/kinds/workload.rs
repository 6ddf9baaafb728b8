//! Rules shared by the controllers of pods (`apps/v1` workloads, Jobs, CronJobs,
//! ReplicationControllers): numeric fields, int-or-percent values, the pod template, and the
//! template quantities canonicalized on decode.

use serde_json::Value;

use crate::error::Cause;
use crate::meta;
use crate::quantity::QuantityError;
pub(crate) use crate::validation::names::nonnegative;
use crate::validation::names::{
    NEGATIVE, child, invalid_value, validate_annotations, validate_labels,
};
use crate::validation::podspec;

/// Every `nonnegative` cause of the given integer fields of `obj`.
pub(crate) fn nonnegative_fields(obj: &Value, fields: &[&str], path: &str) -> Vec<Cause> {
    fields
        .iter()
        .filter_map(|f| nonnegative(obj, f, path))
        .collect()
}

/// Upstream's `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent` for an
/// int-or-string field: a non-negative integer or a `N%` string of at most 100%.
pub(crate) fn int_or_percent(value: &Value, path: &str) -> Vec<Cause> {
    match value {
        Value::String(s) => {
            let Some(digits) = s
                .strip_suffix('%')
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            else {
                return vec![invalid_value(
                    path,
                    value,
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )];
            };
            match digits.parse::<u64>() {
                Ok(p) if p <= 100 => Vec::new(),
                _ => vec![invalid_value(path, value, "must not be greater than 100%")],
            }
        }
        Value::Number(n) if n.as_i64().is_some_and(|i| i < 0) => {
            vec![invalid_value(path, value, NEGATIVE)]
        }
        _ => Vec::new(),
    }
}

/// Whether an int-or-percent value is zero (`0` or `0%`).
pub(crate) fn is_zero(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        Some(Value::String(s)) => {
            s.strip_suffix('%').and_then(|d| d.parse::<u64>().ok()) == Some(0)
        }
        _ => false,
    }
}

/// Upstream's `ValidatePodTemplateSpec` for the template at `path`: its labels and annotations,
/// then its pod spec.
pub(crate) fn validate_template(template: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let metadata_path = child(path, "metadata");
    if let Some(labels) = meta::path(template, "metadata.labels") {
        errs.extend(validate_labels(labels, &child(&metadata_path, "labels")));
    }
    if let Some(annotations) = meta::path(template, "metadata.annotations") {
        errs.extend(validate_annotations(
            annotations,
            &child(&metadata_path, "annotations"),
        ));
    }
    let spec = template.get("spec").unwrap_or(&Value::Null);
    errs.extend(podspec::validate_pod_spec(
        spec,
        &child(path, "spec"),
        podspec::PodSpecOptions {
            pod_name: meta::path(template, "metadata.name")
                .and_then(Value::as_str)
                .unwrap_or(""),
            ..podspec::PodSpecOptions::default()
        },
    ));
    errs
}

/// The restart policies a controller's template may use, upstream's `NotSupported` otherwise.
pub(crate) fn restart_policy_in(template: &Value, path: &str, allowed: &[&str]) -> Option<Cause> {
    let policy = meta::path(template, "spec.restartPolicy")?;
    if policy.as_str().is_some_and(|p| allowed.contains(&p)) {
        return None;
    }
    let supported: Vec<Value> = allowed.iter().map(|a| Value::from(*a)).collect();
    Some(Cause::not_supported(
        child(path, "spec.restartPolicy"),
        policy,
        &supported,
    ))
}

/// Canonicalizes the quantities of the pod template at `template_path` (dotted) of `obj`.
pub(crate) fn canonicalize_template(
    obj: &mut Value,
    template_path: &str,
) -> Result<(), QuantityError> {
    let mut cur = Some(obj);
    for part in template_path.split('.') {
        cur = cur.and_then(|v| v.get_mut(part));
    }
    match cur.and_then(|t| t.get_mut("spec")) {
        Some(spec) => podspec::canonicalize_pod_spec(spec),
        None => Ok(()),
    }
}

/// `ValidateImmutableField`: `field is immutable` when `new` differs from `old` at `field`.
pub(crate) fn immutable(new: &Value, old: &Value, field: &str, path: &str) -> Option<Cause> {
    let (a, b) = (new.get(field), old.get(field));
    (a != b).then(|| {
        invalid_value(
            &child(path, field),
            a.unwrap_or(&Value::Null),
            "field is immutable",
        )
    })
}

/// The bounds upstream puts on the counters a pod controller reports in its status
/// (`ValidateDeploymentStatus`, `ValidateReplicaSetStatus`, `ValidateStatefulSetStatus`,
/// `validateDaemonSetStatus`, `ValidateReplicationControllerStatus`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StatusRules {
    /// The counters that may not be negative, in upstream's order.
    pub(crate) nonnegative: &'static [&'static str],
    /// The counters that may not exceed `status.replicas`, in upstream's order.
    pub(crate) at_most_replicas: &'static [&'static str],
    /// Upstream's message when `availableReplicas` exceeds `readyReplicas` (`None`: no rule).
    pub(crate) available_over_ready: Option<&'static str>,
    /// Whether `collisionCount` may not be decremented (`IsDecremented`).
    pub(crate) collision_count: bool,
}

/// The status rules of a pod controller's status write; `old` is the stored object.
pub(crate) fn validate_status(obj: &Value, old: &Value, rules: &StatusRules) -> Vec<Cause> {
    let null = Value::Null;
    let status = obj.get("status").unwrap_or(&null);
    let mut errs = nonnegative_fields(status, rules.nonnegative, "status");
    let count = |s: &Value, f: &str| s.get(f).and_then(Value::as_i64);
    let replicas = count(status, "replicas").unwrap_or(0);
    for field in rules.at_most_replicas {
        let value = count(status, field).unwrap_or(0);
        if value > replicas {
            errs.push(invalid_value(
                &child("status", field),
                &Value::from(value),
                "cannot be greater than status.replicas",
            ));
        }
    }
    if let Some(message) = rules.available_over_ready {
        let available = count(status, "availableReplicas").unwrap_or(0);
        if available > count(status, "readyReplicas").unwrap_or(0) {
            errs.push(invalid_value(
                "status.availableReplicas",
                &Value::from(available),
                message,
            ));
        }
    }
    let old_status = old.get("status").unwrap_or(&null);
    if rules.collision_count
        && let Some(before) = count(old_status, "collisionCount")
    {
        let now = count(status, "collisionCount");
        if now.is_none_or(|n| n < before) {
            errs.push(invalid_value(
                "status.collisionCount",
                &Value::from(now.unwrap_or(0)),
                "cannot be decremented",
            ));
        }
    }
    errs
}

/// `spec` with upstream's defaults filled into its `template` (tests build specs as clients
/// send them; validation sees them defaulted).
#[cfg(test)]
pub(crate) fn with_template_defaults(mut spec: Value) -> Value {
    if let Some(template) = spec.get_mut("template") {
        let mut holder = serde_json::json!({"template": template.take()});
        crate::defaults::apply_builtin_defaults("", "PodTemplate", &mut holder);
        *template = holder["template"].take();
    }
    spec
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn int_or_percent_values() {
        assert!(int_or_percent(&json!(3), "p").is_empty());
        assert!(int_or_percent(&json!("25%"), "p").is_empty());
        assert_eq!(
            int_or_percent(&json!("150%"), "p")[0].message,
            "Invalid value: \"150%\": must not be greater than 100%"
        );
        assert_eq!(
            int_or_percent(&json!(-1), "p")[0].message,
            "Invalid value: -1: must be greater than or equal to 0"
        );
        assert!(
            int_or_percent(&json!("x"), "p")[0]
                .message
                .contains("a valid percent string")
        );
        assert!(is_zero(Some(&json!("0%"))) && is_zero(Some(&json!(0))));
        assert!(!is_zero(Some(&json!("25%"))) && !is_zero(None));
    }
}
