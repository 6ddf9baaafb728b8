//! ReplicationControllers and PodTemplates: template quantities canonicalized on decode,
//! upstream's `ValidateReplicationController` (a non-empty map selector matching the template's
//! labels, non-negative counts, an `Always` template without a deadline) and
//! `ValidatePodTemplate`, both through the shared pod spec rules.

use serde_json::{Value, json};

use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::kinds::workload::{
    StatusRules, canonicalize_template, nonnegative_fields, restart_policy_in, validate_status,
    validate_template,
};
use crate::objects::FieldValidation;
use crate::registry::ResourceInfo;
use crate::validation::names::{invalid_value, validate_labels};
use crate::{ApiError, quantity};

/// The strategy of `v1/ReplicationController`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplicationControllerStrategy;

/// Upstream's `ValidateReplicationControllerSpec`.
fn validate_rc(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = nonnegative_fields(spec, &["minReadySeconds"], "spec");
    let selector = spec.get("selector").and_then(Value::as_object);
    match selector {
        Some(s) if !s.is_empty() => {
            errs.extend(validate_labels(&spec["selector"], "spec.selector"));
        }
        _ => errs.push(Cause::required("spec.selector", "")),
    }
    errs.extend(nonnegative_fields(spec, &["replicas"], "spec"));
    let Some(template) = spec.get("template").filter(|t| !t.is_null()) else {
        errs.push(Cause::required("spec.template", ""));
        return errs;
    };
    let labels = template.get("metadata").and_then(|m| m.get("labels"));
    if let Some(selector) = selector.filter(|s| !s.is_empty()) {
        let matches = selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
        if !matches {
            errs.push(invalid_value(
                "spec.template.metadata.labels",
                labels.unwrap_or(&Value::Null),
                "`selector` does not match template `labels`",
            ));
        }
    }
    errs.extend(validate_template(template, "spec.template"));
    errs.extend(restart_policy_in(template, "spec.template", &["Always"]));
    if template
        .get("spec")
        .and_then(|s| s.get("activeDeadlineSeconds"))
        .is_some_and(|v| !v.is_null())
    {
        errs.push(Cause::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicationController is not Supported",
        ));
    }
    errs
}

/// Upstream's `ValidateReplicationControllerStatus`: non-negative counts, none above
/// `status.replicas`, available ones not above ready ones.
const RC_STATUS: StatusRules = StatusRules {
    nonnegative: &[
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
    ],
    at_most_replicas: &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"],
    available_over_ready: Some("cannot be greater than readyReplicas"),
    collision_count: false,
};

/// The status rules of a ReplicationController.
fn validate_rc_status(obj: &Value) -> Vec<Cause> {
    validate_status(obj, &Value::Null, &RC_STATUS)
}

impl Strategy for ReplicationControllerStrategy {
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        canonicalize_template(obj, "spec.template").map_err(|e| quantity::undecodable(info, e))?;
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "ReplicationController", obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_rc(obj)
    }

    /// The spec rules again, and the status a controller reported (upstream checks it on
    /// `/status` writes; a main-resource update carries the stored status, so it passes).
    fn validate_update(&self, obj: &Value, _old: &Value, _ctx: &Context) -> Vec<Cause> {
        let mut errs = validate_rc(obj);
        errs.extend(validate_rc_status(obj));
        errs
    }
}

/// The strategy of `v1/PodTemplate`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PodTemplateStrategy;

impl Strategy for PodTemplateStrategy {
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        canonicalize_template(obj, "template").map_err(|e| quantity::undecodable(info, e))?;
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "PodTemplate", obj);
    }

    /// `ValidatePodTemplate`: the template as any pod template.
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        let template = obj.get("template").cloned().unwrap_or(json!({}));
        validate_template(&template, "template")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rc(selector: Value, labels: Value) -> Value {
        let mut obj = json!({"metadata": {"name": "rc"}, "spec": {"replicas": 0, "selector": selector,
            "template": {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
        crate::defaults::apply_builtin_defaults("", "ReplicationController", &mut obj);
        obj
    }

    #[test]
    fn status_counts_are_bounded() {
        let mut obj = rc(json!({"app": "rc"}), json!({"app": "rc"}));
        obj["status"] = json!({"replicas": 2, "readyReplicas": 3, "availableReplicas": 1});
        let got: Vec<String> = validate_rc_status(&obj)
            .iter()
            .map(Cause::summary)
            .collect();
        assert_eq!(
            got,
            ["status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas"]
        );
        obj["status"] = json!({"replicas": 2, "readyReplicas": 1, "availableReplicas": 2});
        let got: Vec<String> = validate_rc_status(&obj)
            .iter()
            .map(Cause::summary)
            .collect();
        assert_eq!(
            got,
            ["status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"]
        );
    }

    #[test]
    fn selector_must_match_the_template() {
        assert!(validate_rc(&rc(json!({"app": "rc"}), json!({"app": "rc"}))).is_empty());
        let got: Vec<String> = validate_rc(&rc(json!({"app": "x"}), json!({"app": "rc"})))
            .iter()
            .map(Cause::summary)
            .collect();
        assert_eq!(
            got,
            [
                "spec.template.metadata.labels: Invalid value: {\"app\":\"rc\"}: `selector` does not match template `labels`"
            ]
        );
        let mut negative = rc(json!({"app": "rc"}), json!({"app": "rc"}));
        negative["spec"]["replicas"] = json!(-1);
        negative["spec"]["template"]["spec"]["containers"][0]["image"] = json!("");
        let got: Vec<String> = validate_rc(&negative).iter().map(Cause::summary).collect();
        assert_eq!(
            got,
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.containers[0].image: Required value"
            ]
        );
    }
}
