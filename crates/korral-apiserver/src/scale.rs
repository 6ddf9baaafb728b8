//! The `/scale` subresource: an `autoscaling/v1` `Scale` view of an object's replicas.

use serde_json::{Value, json};

use crate::error::{ApiError, Cause};
use crate::meta;
use crate::registry::{ResourceInfo, ScalePaths};
use crate::selector;

/// The `Scale` object for `obj`.
pub fn to_scale(info: &ResourceInfo, paths: &ScalePaths, obj: &Value) -> Value {
    let spec_replicas = meta::path(obj, &paths.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = meta::path(obj, &paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let selector = if info.is_custom() {
        paths
            .label_selector
            .as_deref()
            .and_then(|p| meta::path(obj, p))
            .and_then(Value::as_str)
            .map(str::to_string)
    } else {
        // Built-in workloads: render `spec.selector` as a selector string, be it a
        // `LabelSelector` or a plain label map (ReplicationControllers).
        meta::path(obj, "spec.selector")
            .map(|s| match s.as_object() {
                Some(map)
                    if map
                        .keys()
                        .any(|k| k != "matchLabels" && k != "matchExpressions") =>
                {
                    serde_json::json!({"matchLabels": s})
                }
                _ => s.clone(),
            })
            .and_then(|s| selector::from_label_selector_json(&s).ok())
            .map(|s| s.to_string())
    };
    let mut metadata = json!({
        "name": meta::name(obj),
        "uid": meta::uid(obj),
        "resourceVersion": meta::resource_version(obj),
        "creationTimestamp": meta::meta_str(obj, "creationTimestamp"),
    });
    if let (Some(ns), Some(map)) = (meta::namespace(obj), metadata.as_object_mut()) {
        map.insert("namespace".into(), json!(ns));
    }
    let mut status = json!({"replicas": status_replicas});
    if let (Some(sel), Some(map)) = (selector, status.as_object_mut()) {
        map.insert("selector".into(), json!(sel));
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": spec_replicas},
        "status": status,
    })
}

/// Writes the desired replicas of a `Scale` into `obj`; returns the updated object.
pub fn apply_scale(
    info: &ResourceInfo,
    paths: &ScalePaths,
    obj: &Value,
    scale: &Value,
) -> Result<Value, ApiError> {
    let replicas = scale.get("spec").and_then(|s| s.get("replicas"));
    let replicas = match replicas {
        None | Some(Value::Null) => 0,
        Some(v) => match v.as_i64() {
            Some(n) if n >= 0 && n <= i64::from(i32::MAX) => n,
            _ => {
                return Err(ApiError::invalid(
                    "autoscaling",
                    "Scale",
                    meta::name(obj),
                    vec![Cause::invalid(
                        "spec.replicas",
                        v,
                        "must be greater than or equal to 0",
                    )],
                ));
            }
        },
    };
    let _ = info;
    let mut next = obj.clone();
    meta::set_path(&mut next, &paths.spec_replicas, json!(replicas));
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn deployment_scale_matches_upstream_shape() {
        let registry = Registry::with_builtins();
        let info = registry
            .get("apps", "v1", "deployments")
            .expect("deployments");
        let paths = info.scale.clone().expect("scale");
        let deploy = json!({
            "metadata": {"name": "web", "namespace": "ref", "uid": "u", "resourceVersion": "442", "creationTimestamp": "2026-11-22T00:41:41Z"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}},
        });
        let scale = to_scale(&info, &paths, &deploy);
        assert_eq!(
            scale["status"],
            json!({"replicas": 0, "selector": "app=web"})
        );
        assert_eq!(scale["spec"]["replicas"], 1);
        let next =
            apply_scale(&info, &paths, &deploy, &json!({"spec": {"replicas": 4}})).expect("scale");
        assert_eq!(next["spec"]["replicas"], 4);
        assert!(apply_scale(&info, &paths, &deploy, &json!({"spec": {"replicas": -1}})).is_err());
    }
}
