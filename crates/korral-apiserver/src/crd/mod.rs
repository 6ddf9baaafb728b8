//! CustomResourceDefinitions: validation, status conditions and registration of served kinds.

mod columns;
mod internal;
mod names;
pub mod naming;
mod selectable;
mod subresources;
mod validation;

use std::sync::Arc;

use serde_json::{Value, json};

use crate::meta;
use crate::registry::{
    CustomResourceInfo, NameRule, PrinterColumn, Registry, ResourceInfo, ScalePaths,
};
use crate::storage::Snapshot;

pub use validation::{validate, validate_status_update};

/// The finalizer that holds a deleted CRD until its custom resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The string at a dotted path of `v`, empty when absent.
fn str_at<'a>(v: &'a Value, path: &str) -> &'a str {
    meta::path(v, path).and_then(Value::as_str).unwrap_or("")
}

/// A CRD condition stamped now.
fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({
        "type": kind,
        "status": status,
        "lastTransitionTime": meta::now_rfc3339(),
        "reason": reason,
        "message": message,
    })
}

/// Sets a condition, keeping its transition time when its status did not change.
fn set_condition(obj: &mut Value, cond: Value) {
    let mut conditions = meta::path(obj, "status.conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let kind = cond.get("type").cloned();
    match conditions
        .iter_mut()
        .find(|c| c.get("type") == kind.as_ref())
    {
        Some(existing) => {
            let same = existing.get("status") == cond.get("status");
            let last = existing.get("lastTransitionTime").cloned();
            *existing = cond;
            if same && let (Some(last), Some(map)) = (last, existing.as_object_mut()) {
                map.insert("lastTransitionTime".into(), last);
            }
        }
        None => conditions.push(cond),
    }
    meta::set_path(obj, "status.conditions", Value::Array(conditions));
}

/// `spec.names` with upstream's defaults (`listKind` `<Kind>List`, `singular` the lower-cased kind).
fn accepted_names(obj: &Value) -> Value {
    let mut names = meta::path(obj, "spec.names").cloned().unwrap_or(json!({}));
    if let Some(map) = names.as_object_mut() {
        let kind = map
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !map.contains_key("listKind") && !kind.is_empty() {
            map.insert("listKind".into(), json!(format!("{kind}List")));
        }
        if !map.contains_key("singular") && !kind.is_empty() {
            map.insert("singular".into(), json!(kind.to_ascii_lowercase()));
        }
    }
    names
}

/// The name of the version a CRD stores objects in (`storage: true`).
pub(crate) fn storage_version(obj: &Value) -> Option<String> {
    meta::path(obj, "spec.versions")
        .and_then(Value::as_array)?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .map(|v| str_at(v, "name").to_string())
}

/// Fills the spec defaults upstream's scheme fills (conversion strategy, singular and list
/// kind names).
pub fn default_spec(obj: &mut Value) {
    fill_spec_defaults(obj);
    let names = accepted_names(obj);
    meta::set_path(obj, "spec.names", names);
}

/// Fills defaults and the initial status of a new CRD: the names the naming controller
/// accepts (see [`naming`]) and, when all are, `Established`.
pub fn prepare_create(obj: &mut Value, registry: &Registry, snapshot: &Snapshot) {
    fill_spec_defaults(obj);
    let names = accepted_names(obj);
    meta::set_path(obj, "spec.names", names);
    accept_names(obj, registry, snapshot);
    let stored: Vec<Value> = storage_version(obj)
        .map(|v| vec![json!(v)])
        .unwrap_or_default();
    meta::set_path(obj, "status.storedVersions", Value::Array(stored));
}

/// Keeps a CRD's status in step with an updated spec: changed names are accepted where free.
pub fn prepare_update(obj: &mut Value, registry: &Registry, snapshot: &Snapshot) {
    fill_spec_defaults(obj);
    let names = accepted_names(obj);
    meta::set_path(obj, "spec.names", names);
    if naming::pending(obj) {
        accept_names(obj, registry, snapshot);
    }
}

/// The naming controller's decision for `obj`: the names its group's other CRDs (and the
/// group's built-in resources) have taken.
fn accept_names(obj: &mut Value, registry: &Registry, snapshot: &Snapshot) {
    let group = str_at(obj, "spec.group").to_string();
    let mut taken = naming::Taken::in_group(snapshot, &group);
    let plural = str_at(obj, "spec.names.plural").to_string();
    if registry.plural_taken(&group, &plural, meta::name(obj)) {
        taken.insert_plural(&plural);
    }
    naming::accept(obj, &taken);
}

/// `status.storedVersions` after a write of the main resource, as upstream's `PrepareForUpdate`
/// keeps it: the list as stored, plus the storage version when it is not there yet.
pub(crate) fn stored_versions_after_update(obj: &Value, old: &Value) -> Vec<Value> {
    let mut stored: Vec<Value> = meta::path(obj, "status.storedVersions")
        .or_else(|| meta::path(old, "status.storedVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(v) = storage_version(obj)
        && !stored.iter().any(|s| s == &json!(v))
    {
        stored.push(json!(v));
    }
    stored
}

/// Records the storage version in `status.storedVersions` of a CRD updated through the main
/// resource (see [`stored_versions_after_update`]). Not for `/status` writes: there the list is
/// the client's (a storage migration drops versions), as upstream's status strategy keeps it.
pub fn record_stored_version(obj: &mut Value, old: &Value) {
    let stored = stored_versions_after_update(obj, old);
    meta::set_path(obj, "status.storedVersions", Value::Array(stored));
}

/// Upstream's spec defaults besides names: conversion strategy `None`.
fn fill_spec_defaults(obj: &mut Value) {
    if meta::path(obj, "spec.conversion").is_none() {
        meta::set_path(obj, "spec.conversion", json!({"strategy": "None"}));
    }
}

/// Adds the `Terminating` condition to a CRD being deleted.
pub fn mark_terminating(obj: &mut Value) {
    set_condition(
        obj,
        condition(
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ),
    );
}

/// Whether a CRD is being deleted (its `Terminating` condition is true).
pub(crate) fn is_terminating(crd: &Value) -> bool {
    meta::path(crd, "status.conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Terminating" && c["status"] == "True")
        })
}

/// The verbs of custom resources, in the order upstream's discovery lists them (the
/// apiextensions discovery controller's, not sorted like built-ins'). While the CRD
/// terminates, discovery drops the verbs that would write new content (`patch`, `create`,
/// `update`), as upstream's does.
fn custom_resource_verbs(terminating: bool) -> Vec<String> {
    let verbs: &[&str] = if terminating {
        &["delete", "deletecollection", "get", "list", "watch"]
    } else {
        &[
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch",
        ]
    };
    verbs.iter().map(|v| v.to_string()).collect()
}

/// The resources a CRD serves, one per served version.
pub fn served_resources(obj: &Value) -> Vec<ResourceInfo> {
    let group = str_at(obj, "spec.group").to_string();
    let plural = str_at(obj, "status.acceptedNames.plural").to_string();
    // Upstream's handler serves a CRD whose names are accepted or that is established.
    if plural.is_empty()
        || !(naming::is_true(obj, "NamesAccepted") || naming::is_true(obj, "Established"))
    {
        return Vec::new();
    }
    let names = meta::path(obj, "status.acceptedNames")
        .cloned()
        .unwrap_or(json!({}));
    let kind = str_at(&names, "kind").to_string();
    let list_kind = match str_at(&names, "listKind") {
        "" => format!("{kind}List"),
        s => s.to_string(),
    };
    let singular = match str_at(&names, "singular") {
        "" => kind.to_ascii_lowercase(),
        s => s.to_string(),
    };
    let short_names = meta::strings(names.get("shortNames"));
    let categories = meta::strings(names.get("categories"));
    let namespaced = str_at(obj, "spec.scope") != "Cluster";
    let crd_name = meta::name(obj).to_string();
    let versions = meta::path(obj, "spec.versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let conversion = Arc::new(crate::conversion::CrdVersions::of(obj));
    let terminating = is_terminating(obj);
    versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .map(|v| {
            let scale = meta::path(v, "subresources.scale").map(|s| ScalePaths {
                spec_replicas: str_at(s, "specReplicasPath").to_string(),
                status_replicas: str_at(s, "statusReplicasPath").to_string(),
                label_selector: s
                    .get("labelSelectorPath")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            });
            let printer_columns = v
                .get("additionalPrinterColumns")
                .and_then(Value::as_array)
                .map(|cols| {
                    cols.iter()
                        .map(|c| PrinterColumn {
                            name: str_at(c, "name").to_string(),
                            column_type: str_at(c, "type").to_string(),
                            format: c.get("format").and_then(Value::as_str).map(str::to_string),
                            description: c
                                .get("description")
                                .and_then(Value::as_str)
                                .map(str::to_string),
                            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                            json_path: str_at(c, "jsonPath").to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            let selectable_fields: Vec<String> = v
                .get("selectableFields")
                .and_then(Value::as_array)
                .map(|f| {
                    f.iter()
                        .map(|x| str_at(x, "jsonPath").trim_start_matches('.').to_string())
                        .collect()
                })
                .unwrap_or_default();
            // The version's schema, shared with the conversion table (parsed once).
            let schema = conversion.schemas.get(str_at(v, "name")).cloned().flatten();
            ResourceInfo {
                group: group.clone(),
                version: str_at(v, "name").to_string(),
                resource: plural.clone(),
                singular: singular.clone(),
                kind: kind.clone(),
                list_kind: list_kind.clone(),
                namespaced,
                short_names: short_names.clone(),
                categories: categories.clone(),
                verbs: custom_resource_verbs(terminating),
                status_subresource: meta::path(v, "subresources.status").is_some(),
                scale,
                name_rule: NameRule::Subdomain,
                returns_deleted_object: true,
                tracks_generation: true,
                field_selectors: selectable_fields.clone(),
                actions: Vec::new(),
                connecters: Vec::new(),
                upstream_storage_version: None,
                deprecation: None,
                pod_spec: None,
                lists: &[],
                patch_directives: &[],
                printer: crate::kinds::printer::DEFAULT,
                strategy: Arc::new(crate::kinds::custom::CustomResourceStrategy::new(
                    schema.clone(),
                    crd_name.clone(),
                    terminating,
                )),
                custom: Some(CustomResourceInfo {
                    crd_name: crd_name.clone(),
                    schema,
                    printer_columns,
                    versions: conversion.clone(),
                    deprecation: deprecation_warning(obj, v),
                }),
            }
        })
        .collect()
}

/// The `Warning` of a deprecated version: its `deprecationWarning`, else upstream's default
/// (`<group>/<version> <Kind> is deprecated; use <group>/<newer> <Kind>`, naming the highest
/// served, not deprecated version above it).
fn deprecation_warning(crd: &Value, version: &Value) -> Option<String> {
    if version.get("deprecated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    if let Some(text) = version.get("deprecationWarning").and_then(Value::as_str) {
        return Some(text.to_string());
    }
    let group = str_at(crd, "spec.group");
    let kind = str_at(crd, "spec.names.kind");
    let name = str_at(version, "name");
    let message = format!("{group}/{name} {kind} is deprecated");
    let newer = meta::path(crd, "spec.versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| {
            v.get("served").and_then(Value::as_bool) != Some(false)
                && v.get("deprecated").and_then(Value::as_bool) != Some(true)
                && crate::registry::compare_versions(name, str_at(v, "name")).is_lt()
        })
        .map(|v| str_at(v, "name"))
        .max_by(|a, b| crate::registry::compare_versions(a, b));
    Some(match newer {
        Some(newer) => format!("{message}; use {group}/{newer} {kind}"),
        None => message,
    })
}

/// Registers (or refreshes) the kinds a stored CRD serves.
pub fn register(registry: &Registry, obj: &Value) {
    let resources = served_resources(obj);
    if resources.is_empty() {
        registry.remove_crd(meta::name(obj));
    } else {
        registry.put_crd(meta::name(obj), resources);
    }
}

/// Stops serving a deleted CRD's kinds.
pub fn unregister(registry: &Registry, obj: &Value) {
    registry.remove_crd(meta::name(obj));
}
