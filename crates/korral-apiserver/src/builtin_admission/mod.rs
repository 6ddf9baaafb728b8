//! The admission plugins a real cluster runs by default, run by the write pipeline after the
//! kind's strategy validated the object (upstream's validating admission chain).
//!
//! Plugins speak about kinds (as upstream's do); the generic store only calls [`validate`].

mod certificates;
mod claim_resize;
mod default_class;
mod limit_ranger;
mod node_taint;
mod pod_security;
pub(crate) mod quota;
mod runtime_class;
mod service_account;

use serde_json::Value;

use crate::ApiError;
use crate::kinds::Context;
use crate::meta;
use crate::registry::ResourceInfo;
use crate::storage::{Object, collection_prefix, object_key};

/// The built-in admission plugins a server may run or not (the others always run).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Plugins {
    /// ServiceAccount: a Pod's service account must exist, and its API token, CA and namespace
    /// are mounted into every container (upstream's default; envtest disables it).
    pub service_account: bool,
    /// StorageObjectInUseProtection: new PersistentVolumeClaims and PersistentVolumes carry
    /// the protection finalizers the simulated controllers release (upstream's default; on
    /// with the simulation, which runs those controllers).
    pub storage_protection: bool,
}

/// What the plugins may wait for before an object is created (outside the write): the
/// ServiceAccount plugin gives a new namespace's `default` account a moment to appear, as
/// upstream's does.
pub(crate) async fn await_prerequisites(info: &ResourceInfo, obj: &Value, ctx: &Context) {
    if ctx.plugins.service_account
        && info.group.is_empty()
        && !info.is_custom()
        && info.kind == "Pod"
    {
        service_account::await_default_account(obj, ctx.storage.as_ref()).await;
    }
}

/// Runs the mutating plugins on an object about to be created, after the kind's defaults, in
/// upstream's order: ServiceAccount, Priority, LimitRanger (missing container resources from
/// the namespace's LimitRanges) and RuntimeClass for Pods; TaintNodesByCondition for Nodes;
/// DefaultStorageClass and StorageObjectInUseProtection for claims (and volumes);
/// DefaultIngressClass for Ingresses. DefaultTolerationSeconds is part of the Pod defaults
/// (`crate::defaults`). Every one of them acts on creates only.
pub(crate) fn mutate(
    info: &ResourceInfo,
    obj: &mut Value,
    old: Option<&Value>,
    ctx: &Context,
) -> Result<(), ApiError> {
    if old.is_some() || info.is_custom() {
        return Ok(());
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Pod") => {
            if ctx.plugins.service_account {
                service_account::admit(info, obj, &ctx.storage.snapshot())?;
            }
            priority(info, obj, ctx)?;
            if let Some(namespace) = meta::namespace(obj).map(str::to_string) {
                let ranges = limit_ranger::limit_ranges(&ctx.storage.snapshot(), &namespace);
                limit_ranger::default_pod(&ranges, obj);
            }
            runtime_class::admit(info, obj, ctx)?;
        }
        ("", "Node") => node_taint::admit(obj),
        ("", "PersistentVolumeClaim") => {
            default_class::storage_class(obj, ctx);
            if ctx.plugins.storage_protection {
                add_finalizer(obj, crate::simulate::volumes::CLAIM_PROTECTION);
            }
        }
        ("", "PersistentVolume") if ctx.plugins.storage_protection => {
            add_finalizer(obj, crate::simulate::volumes::VOLUME_PROTECTION);
        }
        ("networking.k8s.io", "Ingress") => default_class::ingress_class(obj, ctx),
        _ => {}
    }
    Ok(())
}

/// Appends `finalizer` to a new object's finalizers unless it is there.
fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let mut finalizers = meta::finalizers(obj);
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(finalizer.to_string());
        meta::set_finalizers(obj, &finalizers);
    }
}

/// The Priority plugin: `spec.priority` (and `preemptionPolicy`) from the named PriorityClass,
/// or from the global default class for a Pod naming none.
fn priority(info: &ResourceInfo, pod: &mut Value, ctx: &Context) -> Result<(), ApiError> {
    let snapshot = ctx.storage.snapshot();
    let prefix = collection_prefix("scheduling.k8s.io", "priorityclasses", None);
    let classes: Vec<Object> = snapshot
        .range(&prefix, None)
        .map(|(_, o)| o.clone())
        .collect();
    let name = meta::path(pod, "spec.priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let pod_name = meta::name(pod).to_string();
    let refuse =
        |why: String| ApiError::forbidden_object(&info.group, &info.resource, &pod_name, &why);
    let (class_name, value, policy) = if name.is_empty() {
        // The global default with the lowest value, if any.
        let default = classes
            .iter()
            .filter(|c| c.get("globalDefault") == Some(&Value::Bool(true)))
            .min_by_key(|c| c.get("value").and_then(Value::as_i64).unwrap_or(0));
        match default {
            None => return Ok(()),
            Some(c) => (
                Some(meta::name(c).to_string()),
                c.get("value").and_then(Value::as_i64).unwrap_or(0),
                c.get("preemptionPolicy").cloned(),
            ),
        }
    } else {
        match classes.iter().find(|c| meta::name(c) == name) {
            Some(c) => (
                None,
                c.get("value").and_then(Value::as_i64).unwrap_or(0),
                c.get("preemptionPolicy").cloned(),
            ),
            // The built-in system classes are stored when the server starts.
            None => {
                return Err(refuse(format!(
                    "no PriorityClass with name {name} was found"
                )));
            }
        }
    };
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if !name.is_empty()
        && let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != value
    {
        return Err(refuse(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        )));
    }
    if let Some(class_name) = class_name {
        spec.insert("priorityClassName".into(), Value::from(class_name));
    }
    spec.insert("priority".into(), Value::from(value));
    if let Some(policy) = policy.filter(|p| !p.is_null()) {
        spec.insert("preemptionPolicy".into(), policy);
    }
    Ok(())
}

/// Runs the validating plugins on an object about to be created (`old` is `None`) or updated;
/// answers their warnings, or the refusal of the first plugin that refuses.
pub(crate) fn validate(
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
    ctx: &Context,
) -> Result<Vec<String>, ApiError> {
    let warnings = if info.is_custom() {
        Vec::new()
    } else {
        pod_security_admission(info, obj, old, ctx)?
    };
    // LimitRanger's bounds, on creates.
    if old.is_none() && info.group.is_empty() && !info.is_custom() {
        let namespace = meta::namespace(obj).unwrap_or("");
        let errors = match info.kind.as_str() {
            "Pod" => limit_ranger::check_pod(
                &limit_ranger::limit_ranges(&ctx.storage.snapshot(), namespace),
                obj,
            ),
            "PersistentVolumeClaim" => limit_ranger::check_claim(
                &limit_ranger::limit_ranges(&ctx.storage.snapshot(), namespace),
                obj,
            ),
            _ => Vec::new(),
        };
        if !errors.is_empty() {
            return Err(ApiError::forbidden_object(
                &info.group,
                &info.resource,
                meta::name(obj),
                &limit_ranger::aggregate(&errors),
            ));
        }
    }
    if info.group.is_empty() && !info.is_custom() {
        match (info.kind.as_str(), old) {
            // PersistentVolumeClaimResize, on updates of the claim itself.
            ("PersistentVolumeClaim", Some(old)) if ctx.subresource.is_none() => {
                claim_resize::validate(info, obj, old, ctx)?;
            }
            // RuntimeClass, on creates.
            ("Pod", None) => runtime_class::validate(info, obj, ctx)?,
            _ => {}
        }
    }
    // CertificateApproval, CertificateSigning and CertificateSubjectRestriction.
    certificates::validate(info, obj, old, ctx)?;
    // ResourceQuota runs last, on writes in a namespace.
    quota_in_guarded_write(&info.group, &info.resource, info.namespaced, obj, old, ctx)?;
    Ok(warnings)
}

/// ResourceQuota (on a create, `old` is `None`, or an update of `ctx.subresource`), run again
/// inside the guarded write, where writers are serialised: two writes that each fit a quota
/// alone cannot both be stored when together they exceed it.
pub(crate) fn quota_in_guarded_write(
    group: &str,
    resource: &str,
    namespaced: bool,
    obj: &Value,
    old: Option<&Value>,
    ctx: &Context,
) -> Result<(), ApiError> {
    if !namespaced {
        return Ok(());
    }
    // Most namespaces have no quota: answer without a snapshot of the store.
    let Some(namespace) = meta::namespace(obj).filter(|n| !n.is_empty()) else {
        return Ok(());
    };
    if !ctx
        .storage
        .any_under(&collection_prefix("", "resourcequotas", Some(namespace)))
    {
        return Ok(());
    }
    let write = quota::Write {
        group,
        resource,
        subresource: ctx.subresource,
        obj,
        old,
    };
    quota::admit(&ctx.registry, &ctx.storage.snapshot(), &write)
}

/// PodSecurity: the namespace's `enforce` level refuses Pods; its `warn` level, and the
/// `enforce` level for workloads' pod templates, answer warnings.
fn pod_security_admission(
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
    ctx: &Context,
) -> Result<Vec<String>, ApiError> {
    let Some(spec_path) = info.pod_spec else {
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
