//! The PersistentVolumeClaim rules beyond access modes and sizes: data sources
//! (`validateDataSource`, `validateDataSourceRef` and their consistency), the volume attributes
//! class on update, the storage class upgrade paths of `ValidatePersistentVolumeClaimUpdate`,
//! and `ValidatePersistentVolumeClaimStatusUpdate`.

use serde_json::{Value, json};

use crate::error::Cause;
use crate::quantity;
use crate::validation::names::{
    dns1123_label, dns1123_subdomain, invalid_rendered, invalid_value, validate_qualified_name,
};

/// The beta annotation naming a claim's storage class.
pub(super) const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// Upstream's `resizeStatusSet`, sorted (as `sets.List` prints it).
const RESIZE_STATUSES: [&str; 5] = [
    "ControllerResizeInProgress",
    "ControllerResizeInfeasible",
    "NodeResizeInProgress",
    "NodeResizeInfeasible",
    "NodeResizePending",
];

/// Whether a claim spec names a data source or reference with an API group (an update may then
/// keep an API group upstream would refuse now).
pub(super) fn has_api_group(spec: &Value) -> bool {
    ["dataSource", "dataSourceRef"].iter().any(|f| {
        spec.get(*f)
            .and_then(|r| r.get("apiGroup"))
            .is_some_and(|g| !g.is_null())
    })
}

/// `validateDataSource` / `validateDataSourceRef` for the reference at `spec.<field>`.
fn data_source(reference: &Value, field: &str, allow_invalid_group: bool) -> Vec<Cause> {
    let path = format!("spec.{field}");
    let text = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or("");
    let mut errs = Vec::new();
    if text("name").is_empty() {
        errs.push(Cause::required(format!("{path}.name"), ""));
    }
    let kind = text("kind");
    if kind.is_empty() {
        errs.push(Cause::required(format!("{path}.kind"), ""));
    }
    let group = text("apiGroup");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        errs.push(invalid_value(
            &path,
            &json!(kind),
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    if !group.is_empty() && !allow_invalid_group {
        let at = format!("{path}.apiGroup");
        errs.extend(
            dns1123_subdomain(group)
                .iter()
                .map(|m| invalid_value(&at, &json!(group), m)),
        );
    }
    if field == "dataSourceRef" {
        let namespace = text("namespace");
        if !namespace.is_empty() {
            let at = format!("{path}.namespace");
            errs.extend(
                dns1123_label(namespace)
                    .iter()
                    .map(|m| invalid_value(&at, &json!(namespace), m)),
            );
        }
    }
    errs
}

/// Go's `%#v` of the `*field.Path` upstream passes as the bad value of the data source
/// consistency errors (its parent pointer's address is not reproducible; a fixed one stands in).
fn rendered_path(name: &str) -> String {
    format!("field.Path{{name:\"{name}\", index:\"\", parent:(*field.Path)(0xc000000000)}}")
}

/// The data source rules of `ValidatePersistentVolumeClaimSpec`.
pub(super) fn data_sources(spec: &Value, allow_invalid_group: bool) -> Vec<Cause> {
    let source = spec.get("dataSource").filter(|s| !s.is_null());
    let reference = spec.get("dataSourceRef").filter(|s| !s.is_null());
    let mut errs = Vec::new();
    if let Some(s) = source {
        errs.extend(data_source(s, "dataSource", allow_invalid_group));
    }
    if let Some(r) = reference {
        errs.extend(data_source(r, "dataSourceRef", allow_invalid_group));
    }
    let ref_namespace = reference
        .and_then(|r| r.get("namespace"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if ref_namespace {
        if source.is_some() {
            errs.push(invalid_rendered(
                "spec",
                &rendered_path("dataSource"),
                "may not be specified when dataSourceRef.namespace is specified",
            ));
        }
    } else if let (Some(s), Some(r)) = (source, reference) {
        let same = |k: &str| s.get(k).filter(|v| !v.is_null()) == r.get(k).filter(|v| !v.is_null());
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        if !(same("apiGroup")
            && text(s, "kind") == text(r, "kind")
            && text(s, "name") == text(r, "name"))
        {
            errs.push(invalid_rendered(
                "spec",
                &rendered_path("dataSource"),
                "must match dataSourceRef",
            ));
        }
    }
    errs
}

/// The volume attributes class rule of `ValidatePersistentVolumeClaimUpdate`: once set it may
/// be neither unset nor emptied.
pub(super) fn attributes_class_update(spec: &Value, old_spec: &Value) -> Option<Cause> {
    let class = |s: &Value| {
        s.get("volumeAttributesClassName")
            .filter(|c| !c.is_null())
            .cloned()
    };
    let (new, old) = (class(spec), class(old_spec));
    if new == old || old.is_none() {
        return None;
    }
    let detail = match &new {
        None => "update from non-nil value to nil is forbidden",
        Some(c) if c.as_str().unwrap_or("").is_empty() => {
            "update from non-nil value to an empty string is forbidden"
        }
        Some(_) => return None,
    };
    Some(Cause::forbidden("spec.volumeAttributesClassName", detail))
}

/// The beta storage class annotation of a claim.
fn beta_class(obj: &Value) -> Option<&str> {
    crate::meta::path(obj, "metadata.annotations")
        .and_then(|a| a.get(BETA_CLASS_ANNOTATION))
        .and_then(Value::as_str)
}

/// A claim's `spec.storageClassName` unless unset (`Some("")` for an empty one).
fn storage_class(obj: &Value) -> Option<&str> {
    crate::meta::path(obj, "spec.storageClassName")
        .filter(|c| !c.is_null())
        .map(|c| c.as_str().unwrap_or(""))
}

/// The storage class rules of `ValidatePersistentVolumeClaimUpdate`: whether the spec diff may
/// ignore a class set where none was (`validateStorageClassUpgradeFromAnnotation` /
/// `validateStorageClassUpgradeFromNil`), and otherwise the beta annotation's immutability.
pub(super) fn storage_class_upgrade(obj: &Value, old: &Value) -> (bool, Option<Cause>) {
    let (new_class, old_class) = (storage_class(obj), storage_class(old));
    let (new_ann, old_ann) = (beta_class(obj), beta_class(old));
    let from_annotation = old_ann.is_some()
        && old_class.is_none()
        && new_class.is_some_and(|c| Some(c) == old_ann)
        && (new_ann.is_none() || new_ann == old_ann);
    if from_annotation {
        return (true, None);
    }
    let immutable_annotation = (new_ann != old_ann).then(|| {
        invalid_value(
            &format!("metadata.annotations.{BETA_CLASS_ANNOTATION}"),
            &json!(new_ann.unwrap_or("")),
            "field is immutable",
        )
    });
    let from_nil =
        new_class.is_some() && old_class.is_none() && (old_ann.is_none() || new_class == old_ann);
    (from_nil, immutable_annotation)
}

/// `validatePersistentVolumeClaimResourceKey`: a qualified name, `storage` among native ones.
fn resource_key(key: &str, path: &str) -> Vec<Cause> {
    let errs: Vec<Cause> = validate_qualified_name(key)
        .iter()
        .map(|m| invalid_value(path, &json!(key), m))
        .collect();
    if !errs.is_empty() {
        return errs;
    }
    let native = !key.contains('/') || key.contains("kubernetes.io/");
    if native && key != "storage" {
        return vec![Cause::not_supported(path, &json!(key), &[json!("storage")])];
    }
    Vec::new()
}

/// The entries of the map at `field` of the status, sorted by key.
fn sorted_entries<'a>(status: &'a Value, field: &str) -> Vec<(&'a String, &'a Value)> {
    let mut entries: Vec<(&String, &Value)> = status
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// `validateBasicResource`: a quantity whose integer value (rounded up) is negative.
pub(super) fn basic_resource(value: &Value, path: &str) -> Option<Cause> {
    let q = quantity::from_json(value).ok()?;
    let integer = q.canonical_f64().ceil();
    (integer < 0.0).then(|| {
        // Upstream prints `Quantity.Value()`, an int64.
        #[allow(clippy::cast_possible_truncation)]
        let shown = integer as i64;
        invalid_value(path, &json!(shown), "must be a valid resource quantity")
    })
}

/// Upstream's `ValidatePersistentVolumeClaimStatusUpdate` (the expansion-recovery rules on, as
/// in v1.36): access modes still set, capacities not negative, allocated resources and their
/// statuses keyed by `storage` (or a qualified extended name) with known statuses.
pub(super) fn status_update(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let modes = crate::meta::path(obj, "spec.accessModes").and_then(Value::as_array);
    if modes.is_none_or(Vec::is_empty) {
        errs.push(Cause::required("Spec.accessModes", ""));
    }
    let status = obj.get("status").unwrap_or(&Value::Null);
    for (key, value) in sorted_entries(status, "capacity") {
        errs.extend(basic_resource(value, &format!("status.capacity[{key}]")));
    }
    const RESIZE_PATH: &str = "status.allocatedResourceStatus";
    for (key, value) in sorted_entries(status, "allocatedResourceStatuses") {
        errs.extend(resource_key(key, RESIZE_PATH));
        if !RESIZE_STATUSES.contains(&value.as_str().unwrap_or("")) {
            let supported: Vec<Value> = RESIZE_STATUSES.iter().map(|s| json!(s)).collect();
            errs.push(Cause::not_supported(RESIZE_PATH, &json!(key), &supported));
        }
    }
    const ALLOCATED_PATH: &str = "status.allocatedResources";
    for (key, value) in sorted_entries(status, "allocatedResources") {
        let key_errs = resource_key(key, ALLOCATED_PATH);
        if !key_errs.is_empty() {
            errs.extend(key_errs);
            continue;
        }
        let path = format!("{ALLOCATED_PATH}[{key}]");
        match basic_resource(value, &path) {
            Some(e) => errs.push(e),
            None => {
                if quantity::from_json(value).is_ok_and(|q| q.is_negative()) {
                    errs.push(invalid_value(
                        &path,
                        &json!(
                            quantity::from_json(value)
                                .map(|q| q.canonical())
                                .unwrap_or_default()
                        ),
                        "must be greater than or equal to 0",
                    ));
                }
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    #[test]
    fn data_sources_as_upstream() {
        let table: &[(Value, &[&str])] = &[
            (
                json!({"dataSource": {"kind": "PersistentVolumeClaim", "name": "src"}}),
                &[],
            ),
            (
                json!({"dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"},
                    "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"}}),
                &[],
            ),
            (
                json!({"dataSource": {}}),
                &[
                    "spec.dataSource.name: Required value",
                    "spec.dataSource.kind: Required value",
                    "spec.dataSource: Invalid value: \"\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                ],
            ),
            (
                json!({"dataSourceRef": {"kind": "Snapshot", "name": "s", "apiGroup": "Bad_Group", "namespace": "Other"}}),
                &[
                    "spec.dataSourceRef.apiGroup: Invalid value: \"Bad_Group\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                    "spec.dataSourceRef.namespace: Invalid value: \"Other\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
            (
                json!({"dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
                    "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "b"}}),
                &[
                    "spec: Invalid value: field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000000000)}: must match dataSourceRef",
                ],
            ),
            (
                json!({"dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
                    "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "a", "namespace": "other"}}),
                &[
                    "spec: Invalid value: field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000000000)}: may not be specified when dataSourceRef.namespace is specified",
                ],
            ),
        ];
        for (spec, want) in table {
            assert_eq!(summaries(&data_sources(spec, false)), *want, "{spec}");
        }
        let bad_group = json!({"dataSource": {"apiGroup": "Bad_Group", "kind": "K", "name": "n"}});
        assert!(data_sources(&bad_group, true).is_empty());
    }

    #[test]
    fn attributes_class_and_storage_class_updates() {
        let spec = |c: Value| json!({"volumeAttributesClassName": c});
        assert!(attributes_class_update(&spec(json!("b")), &spec(json!("a"))).is_none());
        assert!(attributes_class_update(&spec(json!("a")), &json!({})).is_none());
        assert_eq!(
            attributes_class_update(&json!({}), &spec(json!("a"))).map(|c| c.summary()),
            Some("spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden".to_string())
        );
        assert_eq!(
            attributes_class_update(&spec(json!("")), &spec(json!("a"))).map(|c| c.summary()),
            Some("spec.volumeAttributesClassName: Forbidden: update from non-nil value to an empty string is forbidden".to_string())
        );
        let claim = |ann: Option<&str>, class: Option<&str>| {
            let mut c = json!({"metadata": {}, "spec": {}});
            if let Some(a) = ann {
                c["metadata"]["annotations"] = json!({BETA_CLASS_ANNOTATION: a});
            }
            if let Some(s) = class {
                c["spec"]["storageClassName"] = json!(s);
            }
            c
        };
        let (ignore, err) = storage_class_upgrade(
            &claim(Some("fast"), Some("fast")),
            &claim(Some("fast"), None),
        );
        assert!(ignore && err.is_none());
        let (ignore, err) = storage_class_upgrade(&claim(None, Some("fast")), &claim(None, None));
        assert!(ignore && err.is_none());
        let (ignore, err) =
            storage_class_upgrade(&claim(Some("slow"), Some("x")), &claim(Some("fast"), None));
        assert!(!ignore);
        assert_eq!(
            err.map(|c| c.summary()),
            Some("metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value: \"slow\": field is immutable".to_string())
        );
    }

    #[test]
    fn status_updates_as_upstream() {
        let claim =
            |status: Value| json!({"spec": {"accessModes": ["ReadWriteOnce"]}, "status": status});
        assert!(
            status_update(&claim(json!({"capacity": {"storage": "1Gi"},
            "allocatedResources": {"storage": "2Gi"},
            "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"}})))
            .is_empty()
        );
        assert_eq!(
            summaries(&status_update(&claim(json!({
                "capacity": {"storage": "-2Gi"},
                "allocatedResources": {"cpu": "1", "example.com/x": "-1"},
                "allocatedResourceStatuses": {"storage": "Resizing"}})))),
            [
                "status.capacity[storage]: Invalid value: -2147483648: must be a valid resource quantity",
                "status.allocatedResourceStatus: Unsupported value: \"storage\": supported values: \"ControllerResizeInProgress\", \"ControllerResizeInfeasible\", \"NodeResizeInProgress\", \"NodeResizeInfeasible\", \"NodeResizePending\"",
                "status.allocatedResources: Unsupported value: \"cpu\": supported values: \"storage\"",
                "status.allocatedResources[example.com/x]: Invalid value: -1: must be a valid resource quantity",
            ]
        );
        assert_eq!(
            summaries(&status_update(&json!({"spec": {}}))),
            ["Spec.accessModes: Required value"]
        );
    }
}
