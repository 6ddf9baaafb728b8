//! The admission plugins a real cluster runs by default, run by the write pipeline after the
//! kind's strategy validated the object (upstream's validating admission chain).
//!
//! Plugins speak about kinds (as upstream's do); the generic store only calls [`validate`].

mod pod_security;

use serde_json::Value;

use crate::ApiError;
use crate::kinds::Context;
use crate::meta;
use crate::registry::ResourceInfo;
use crate::storage::object_key;

/// Where the pod spec of a kind's objects is: the kinds PodSecurity evaluates.
const POD_SPECS: [(&str, &str, &str); 9] = [
    ("", "Pod", "spec"),
    ("", "ReplicationController", "spec.template.spec"),
    ("", "PodTemplate", "template.spec"),
    ("apps", "Deployment", "spec.template.spec"),
    ("apps", "ReplicaSet", "spec.template.spec"),
    ("apps", "StatefulSet", "spec.template.spec"),
    ("apps", "DaemonSet", "spec.template.spec"),
    ("batch", "Job", "spec.template.spec"),
    ("batch", "CronJob", "spec.jobTemplate.spec.template.spec"),
];

/// Runs the validating plugins on an object about to be created (`old` is `None`) or updated;
/// answers their warnings, or the refusal of the first plugin that refuses.
pub(crate) fn validate(
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
    ctx: &Context,
) -> Result<Vec<String>, ApiError> {
    if info.is_custom() {
        return Ok(Vec::new());
    }
    pod_security_admission(info, obj, old, ctx)
}

/// PodSecurity: the namespace's `enforce` level refuses Pods; its `warn` level, and the
/// `enforce` level for workloads' pod templates, answer warnings.
fn pod_security_admission(
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
    ctx: &Context,
) -> Result<Vec<String>, ApiError> {
    let Some(&(_, _, spec_path)) = POD_SPECS
        .iter()
        .find(|(g, k, _)| *g == info.group && *k == info.kind)
    else {
        return Ok(Vec::new());
    };
    let spec = meta::path(obj, spec_path).unwrap_or(&Value::Null);
    // Updates that leave the pod spec alone (metadata, status) are not evaluated.
    if let Some(old) = old
        && meta::path(old, spec_path).unwrap_or(&Value::Null) == spec
    {
        return Ok(Vec::new());
    }
    let Some(namespace) = meta::namespace(obj).filter(|n| !n.is_empty()) else {
        return Ok(Vec::new());
    };
    let Some(ns) = ctx
        .storage
        .get(&object_key("", "namespaces", None, namespace))
    else {
        return Ok(Vec::new());
    };
    let metadata = if spec_path == "spec" {
        obj.get("metadata").unwrap_or(&Value::Null)
    } else {
        let template_meta = spec_path.trim_end_matches(".spec").to_string() + ".metadata";
        meta::path(obj, &template_meta).unwrap_or(&Value::Null)
    };
    let is_pod = spec_path == "spec";
    let mut warnings = Vec::new();
    let enforce = pod_security::Policy::of(&ns, "enforce");
    let warn = pod_security::Policy::of(&ns, "warn");
    if !enforce.is_privileged() {
        let violations = pod_security::check(metadata, spec, enforce.level());
        if !violations.is_empty() {
            let detail = pod_security::describe(&violations);
            if is_pod {
                return Err(ApiError::forbidden_object(
                    &info.group,
                    &info.resource,
                    meta::name(obj),
                    &format!("violates PodSecurity {:?}: {detail}", enforce.label()),
                ));
            }
            warnings.push(format!(
                "would violate PodSecurity {:?}: {detail}",
                enforce.label()
            ));
        }
    }
    if !warn.is_privileged() && warn != enforce {
        let violations = pod_security::check(metadata, spec, warn.level());
        if !violations.is_empty() {
            warnings.push(format!(
                "would violate PodSecurity {:?}: {}",
                warn.label(),
                pod_security::describe(&violations)
            ));
        }
    }
    Ok(warnings)
}
