//! Reading and writing objects for the simulated controllers.
//!
//! Reads come straight from storage (always current: a write is visible once it returns), so
//! the controllers need no upstream-style "expectations". Writes go through [`Objects`] (create,
//! update with a resourceVersion precondition, delete with a uid precondition) so defaults,
//! validation and generation handling apply and watchers see ordinary events; status writes
//! are atomic read-modify-writes on storage that only touch `status`.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::meta;
use crate::objects::{DeleteOptions, Objects, Part, Propagation, WriteOptions};
use crate::registry::ResourceInfo;
use crate::storage::{Object, Write, collection_prefix, object_key};

/// The field manager of the simulated controllers' writes (upstream's controllers run in
/// `kube-controller-manager`).
pub const FIELD_MANAGER: &str = "kube-controller-manager";

fn write_options() -> WriteOptions {
    WriteOptions {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..WriteOptions::default()
    }
}

/// A served resource, by group, version and plural.
pub fn info(
    objects: &Objects,
    group: &str,
    version: &str,
    resource: &str,
) -> Result<Arc<ResourceInfo>, ApiError> {
    objects
        .registry()
        .get(group, version, resource)
        .ok_or_else(|| ApiError::internal(format!("{resource}.{group} is not served")))
}

/// The stored object of a namespaced resource.
pub fn get(objects: &Objects, group: &str, resource: &str, ns: &str, name: &str) -> Option<Object> {
    objects
        .storage()
        .get(&object_key(group, resource, Some(ns), name))
}

/// Every stored object of a resource in one namespace.
pub fn list(objects: &Objects, group: &str, resource: &str, ns: &str) -> Vec<Object> {
    let snapshot = objects.storage().snapshot();
    let prefix = collection_prefix(group, resource, Some(ns));
    snapshot
        .range(&prefix, None)
        .map(|(_, o)| o.clone())
        .collect()
}

/// The controller owner reference of an object: `(kind, name, uid)`.
pub fn controller_of(obj: &Value) -> Option<(&str, &str, &str)> {
    meta::owner_references(obj)
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
            (s("kind"), s("name"), s("uid"))
        })
}

/// Whether `obj` is controlled by the object with `uid`.
pub fn controlled_by(obj: &Value, uid: &str) -> bool {
    controller_of(obj).is_some_and(|(_, _, u)| u == uid)
}

/// An owner reference to `owner` as a controller would set it.
pub fn owner_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": meta::name(owner),
        "uid": meta::uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// An integer field, `default` when unset.
pub fn int(obj: &Value, path: &str, default: i64) -> i64 {
    meta::path(obj, path)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

/// `metadata.generation`.
pub fn generation(obj: &Value) -> i64 {
    int(obj, "metadata.generation", 0)
}

/// The labels of an object as a JSON map (empty when none).
pub fn labels_of(obj: &Value, path: &str) -> Map<String, Value> {
    meta::path(obj, path)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Whether a Pod counts as active: not being deleted and not finished.
pub fn pod_active(pod: &Value) -> bool {
    !meta::is_deleting(pod)
        && !matches!(
            meta::path(pod, "status.phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        )
}

/// Whether a Pod's `Ready` condition is `True`.
pub fn pod_ready(pod: &Value) -> bool {
    condition_status(pod, "Ready") == Some("True")
}

/// The status of condition `kind` in `status.conditions`.
pub fn condition_status<'a>(obj: &'a Value, kind: &str) -> Option<&'a str> {
    meta::path(obj, "status.conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
}

/// Sets a condition the way upstream's `Set*Condition` helpers do: an unchanged status and
/// reason leaves the condition alone; an unchanged status keeps `lastTransitionTime`.
///
/// `condition` carries `type`, `status`, `reason`, `message` and the time fields to stamp.
pub fn set_condition(conditions: &mut Vec<Value>, mut condition: Value, time_fields: &[&str]) {
    let kind = condition.get("type").cloned().unwrap_or(Value::Null);
    let now = meta::now_rfc3339();
    let existing = conditions.iter().position(|c| c.get("type") == Some(&kind));
    if let Some(i) = existing {
        let old = &conditions[i];
        if old.get("status") == condition.get("status")
            && old.get("reason") == condition.get("reason")
            && old.get("message") == condition.get("message")
        {
            return;
        }
        for field in time_fields {
            let keep =
                *field == "lastTransitionTime" && old.get("status") == condition.get("status");
            let value = if keep {
                old.get(*field).cloned().unwrap_or_else(|| json!(now))
            } else {
                json!(now)
            };
            condition[*field] = value;
        }
        conditions[i] = condition;
    } else {
        for field in time_fields {
            condition[*field] = json!(now);
        }
        conditions.push(condition);
    }
}

/// Creates an object through the API layer (defaults, validation, uid, events).
pub async fn create(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    obj: Value,
) -> Result<Object, ApiError> {
    Ok(objects
        .create(info, ns, obj, &write_options())
        .await?
        .object)
}

/// Replaces an object through the API layer; `obj` carries the resourceVersion it was read
/// at, so a concurrent change makes this fail with 409 (the work item is then retried on
/// fresh state).
pub async fn replace(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    obj: Value,
) -> Result<Object, ApiError> {
    let ns = meta::namespace(&obj).map(str::to_string);
    let name = meta::name(&obj).to_string();
    Ok(objects
        .update(
            info,
            ns.as_deref(),
            &name,
            obj,
            Part::Main,
            &write_options(),
        )
        .await?
        .object)
}

/// Deletes this incarnation of `obj` (uid precondition) with background propagation;
/// already gone counts as done.
pub async fn delete(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    obj: &Value,
) -> Result<(), ApiError> {
    let opts = DeleteOptions {
        propagation: Some(Propagation::Background),
        precondition_uid: Some(meta::uid(obj).to_string()),
        ..DeleteOptions::default()
    };
    match objects
        .delete(info, meta::namespace(obj), meta::name(obj), &opts)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Atomically rewrites the object at `key` (if it is still the one with `uid` and not being
/// deleted) with `change`; nothing is written when `change` leaves it equal.
pub async fn modify<F>(
    objects: &Objects,
    key: String,
    uid: String,
    change: F,
) -> Result<(), ApiError>
where
    F: FnOnce(&mut Value) + Send + 'static,
{
    objects
        .storage()
        .update(
            key,
            Box::new(move |cur| {
                let Some(cur) = cur else {
                    return Ok(Write::Unchanged);
                };
                if meta::uid(cur) != uid {
                    return Ok(Write::Unchanged);
                }
                let mut next = (**cur).clone();
                change(&mut next);
                if next == **cur {
                    return Ok(Write::Unchanged);
                }
                Ok(Write::Put(next))
            }),
        )
        .await
        .map(|_| ())
}

/// Writes `status` of the object at `key` (if it is still the one with `uid`).
pub async fn write_status(
    objects: &Objects,
    key: String,
    uid: &str,
    status: Value,
) -> Result<(), ApiError> {
    modify(objects, key, uid.to_string(), move |obj| {
        if let Some(map) = obj.as_object_mut() {
            map.insert("status".into(), status);
        }
    })
    .await
}

/// The storage key of an object as stored.
pub fn key_of(group: &str, resource: &str, obj: &Value) -> String {
    object_key(group, resource, meta::namespace(obj), meta::name(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_condition_keeps_transition_time_and_skips_identical() {
        let mut conds = Vec::new();
        let fields = ["lastUpdateTime", "lastTransitionTime"];
        set_condition(
            &mut conds,
            json!({"type": "Available", "status": "True", "reason": "A", "message": "m"}),
            &fields,
        );
        assert_eq!(conds.len(), 1);
        conds[0]["lastTransitionTime"] = json!("2000-01-01T00:00:00Z");
        conds[0]["lastUpdateTime"] = json!("2000-01-01T00:00:00Z");
        let before = conds.clone();
        set_condition(
            &mut conds,
            json!({"type": "Available", "status": "True", "reason": "A", "message": "m"}),
            &fields,
        );
        assert_eq!(conds, before);
        set_condition(
            &mut conds,
            json!({"type": "Available", "status": "True", "reason": "B", "message": "m"}),
            &fields,
        );
        assert_eq!(conds[0]["lastTransitionTime"], "2000-01-01T00:00:00Z");
        assert_ne!(conds[0]["lastUpdateTime"], "2000-01-01T00:00:00Z");
        set_condition(
            &mut conds,
            json!({"type": "Available", "status": "False", "reason": "B", "message": "m"}),
            &fields,
        );
        assert_ne!(conds[0]["lastTransitionTime"], "2000-01-01T00:00:00Z");
    }
}
