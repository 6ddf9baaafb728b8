//! PersistentVolumes and PersistentVolumeClaims: quantities canonicalized on decode, upstream's
//! defaults (`pkg/apis/core/v1/defaults.go`, the PV strategy's pending phase) and validation
//! (`ValidatePersistentVolume`, `ValidatePersistentVolumeClaim` and their update rules: a claim's
//! spec is immutable but for its storage request once bound, which may not go below the
//! capacity).

use serde_json::{Value, json};

use super::go_diff::{GoValue, marshal_indent, unified};
use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::kinds::workload::immutable;
use crate::objects::FieldValidation;
use crate::registry::ResourceInfo;
use crate::validation::enums::{self, Enum, Order};
use crate::validation::names::invalid_value;
use crate::{ApiError, meta, quantity};

/// The access modes.
const ACCESS_MODES: &Enum = &enums::PERSISTENT_VOLUME_ACCESS_MODE;
/// The volume modes.
const VOLUME_MODES: &Enum = &enums::PERSISTENT_VOLUME_MODE;
/// The reclaim policies.
const RECLAIM_POLICIES: &Enum = &enums::PERSISTENT_VOLUME_RECLAIM_POLICY;
/// The volume sources a PersistentVolume may name (exactly one of them).
const PV_SOURCES: [&str; 21] = [
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "nfs",
    "rbd",
    "quobyte",
    "cinder",
    "cephfs",
    "iscsi",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
];
/// The volume source a CSI driver serves (checked after the in-tree ones, as upstream).
const CSI: &str = "csi";

/// A `NotSupported` cause listing `supported`.
fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Cause {
    let supported: Vec<Value> = supported.iter().map(|s| json!(s)).collect();
    Cause::not_supported(field, value, &supported)
}

/// Canonicalizes the quantities of the resource lists at `paths` (dotted) of `obj`.
fn canonicalize_lists(obj: &mut Value, paths: &[&str]) -> Result<(), quantity::QuantityError> {
    for path in paths {
        let mut cur = Some(&mut *obj);
        for part in path.split('.') {
            cur = cur.and_then(|v| v.get_mut(part));
        }
        if let Some(list) = cur {
            quantity::canonicalize_resource_list(list)?;
        }
    }
    Ok(())
}

/// Access modes: at least one, each supported.
fn access_modes(spec: &Value, required_detail: &str) -> Vec<Cause> {
    let modes = spec.get("accessModes").and_then(Value::as_array);
    let mut errs = Vec::new();
    if modes.is_none_or(Vec::is_empty) {
        errs.push(Cause::required("spec.accessModes", required_detail));
    }
    for mode in modes.into_iter().flatten() {
        if !ACCESS_MODES.contains(mode.as_str().unwrap_or("")) {
            errs.push(ACCESS_MODES.not_supported("spec.accessModes", mode, Order::Sorted));
        }
    }
    if let Some(modes) = modes
        && modes.len() > 1
        && modes.iter().any(|m| m == "ReadWriteOncePod")
    {
        errs.push(Cause::forbidden(
            "spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

/// `volumeMode` when set: supported.
fn volume_mode(spec: &Value) -> Option<Cause> {
    let mode = spec.get("volumeMode").filter(|m| !m.is_null())?;
    (!VOLUME_MODES.contains(mode.as_str().unwrap_or("")))
        .then(|| VOLUME_MODES.not_supported("spec.volumeMode", mode, Order::Sorted))
}

// ---------------------------------------------------------------------------------------------
// PersistentVolume
// ---------------------------------------------------------------------------------------------

/// The strategy of `v1/PersistentVolume`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PersistentVolumeStrategy;

/// Upstream's `ValidatePersistentVolumeSpec`.
fn validate_pv(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = access_modes(spec, "");
    let capacity = spec.get("capacity").and_then(Value::as_object);
    match capacity {
        None => errs.push(Cause::required("spec.capacity", "")),
        Some(c) if c.is_empty() => errs.push(Cause::required("spec.capacity", "")),
        Some(c) => {
            if !c.contains_key("storage") || c.len() > 1 {
                for key in c.keys().filter(|k| *k != "storage") {
                    errs.push(not_supported("spec.capacity", &json!(key), &["storage"]));
                }
            }
            for (key, value) in c {
                let mut out = Vec::new();
                crate::validation::podspec::resource_quantity(
                    key,
                    value,
                    &format!("spec.capacity[{key}]"),
                    &mut out,
                );
                errs.extend(out);
            }
        }
    }
    if let Some(policy) = spec
        .get("persistentVolumeReclaimPolicy")
        .filter(|p| !p.is_null())
        && !RECLAIM_POLICIES.contains(policy.as_str().unwrap_or(""))
    {
        errs.push(RECLAIM_POLICIES.not_supported(
            "spec.persistentVolumeReclaimPolicy",
            policy,
            Order::Sorted,
        ));
    }
    let mut sources = 0;
    for source in PV_SOURCES.iter().chain(std::iter::once(&CSI)) {
        let Some(value) = spec.get(*source).filter(|v| !v.is_null()) else {
            continue;
        };
        sources += 1;
        if sources > 1 {
            errs.push(Cause::forbidden(
                format!("spec.{source}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        if *source == "hostPath" || *source == "local" {
            let path = value.get("path").and_then(Value::as_str).unwrap_or("");
            if path.is_empty() {
                errs.push(Cause::required(format!("spec.{source}.path"), ""));
            }
        }
        if *source == "nfs" {
            if value
                .get("server")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                errs.push(Cause::required("spec.nfs.server", ""));
            }
            if value
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                errs.push(Cause::required("spec.nfs.path", ""));
            }
        }
        if *source == "csi" {
            if value
                .get("driver")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                errs.push(Cause::required("spec.csi.driver", ""));
            }
            if value
                .get("volumeHandle")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                errs.push(Cause::required("spec.csi.volumeHandle", ""));
            }
        }
    }
    if sources == 0 {
        errs.push(Cause::required("spec", "must specify a volume type"));
    }
    errs.extend(volume_mode(spec));
    errs
}

/// The volume source of a PV spec: every field but the claim-side ones.
fn pv_source(spec: &Value) -> Value {
    let mut source = serde_json::Map::new();
    for key in PV_SOURCES.iter().chain(std::iter::once(&CSI)) {
        if let Some(v) = spec.get(*key).filter(|v| !v.is_null()) {
            source.insert((*key).to_string(), v.clone());
        }
    }
    Value::Object(source)
}

impl Strategy for PersistentVolumeStrategy {
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        canonicalize_lists(obj, &["spec.capacity"]).map_err(|e| quantity::undecodable(info, e))?;
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    /// `SetDefaults_PersistentVolume` and the strategy's pending phase on create.
    fn default(&self, obj: &mut Value) {
        let Some(root) = obj.as_object_mut() else {
            return;
        };
        if let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) {
            spec.entry("persistentVolumeReclaimPolicy")
                .or_insert_with(|| json!("Retain"));
            spec.entry("volumeMode")
                .or_insert_with(|| json!("Filesystem"));
            if let Some(host_path) = spec.get_mut("hostPath").and_then(Value::as_object_mut) {
                host_path.entry("type").or_insert_with(|| json!(""));
            }
        }
        let status = root.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut()
            && status.get("phase").is_none_or(Value::is_null)
        {
            status.insert("phase".into(), json!("Pending"));
            status.insert("lastPhaseTransitionTime".into(), json!(meta::now_rfc3339()));
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_pv(obj)
    }

    /// `ValidatePersistentVolumeUpdate`: the volume source and mode are fixed at creation.
    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        let mut errs = validate_pv(obj);
        let (spec, old_spec) = (
            obj.get("spec").unwrap_or(&Value::Null),
            old.get("spec").unwrap_or(&Value::Null),
        );
        if pv_source(spec) != pv_source(old_spec) {
            errs.push(Cause::forbidden(
                "spec.persistentvolumesource",
                "spec.persistentvolumesource is immutable after creation",
            ));
        }
        errs.extend(immutable(spec, old_spec, "volumeMode", "spec"));
        if old_spec.get("nodeAffinity").is_some_and(|a| !a.is_null()) {
            errs.extend(immutable(spec, old_spec, "nodeAffinity", "spec"));
        }
        errs
    }
}

// ---------------------------------------------------------------------------------------------
// PersistentVolumeClaim
// ---------------------------------------------------------------------------------------------

/// The strategy of `v1/PersistentVolumeClaim`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PersistentVolumeClaimStrategy;

/// Upstream's `ValidatePersistentVolumeClaimSpec`.
fn validate_pvc(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = access_modes(spec, "at least 1 access mode is required");
    if let Some(selector) = spec.get("selector").filter(|s| !s.is_null()) {
        errs.extend(crate::validation::selectors::validate_label_selector(
            selector,
            "spec.selector",
        ));
    }
    let storage = meta::path(spec, "resources.requests.storage");
    match storage {
        None => errs.push(Cause::required("spec.resources[storage]", "")),
        Some(value) => {
            if let Ok(q) = quantity::from_json(value)
                && (q.is_zero() || q.is_negative())
            {
                errs.push(invalid_value(
                    "spec.resources[storage]",
                    &json!(q.canonical()),
                    "must be greater than zero",
                ));
            }
        }
    }
    for list in ["requests", "limits"] {
        for (key, value) in meta::path(spec, &format!("resources.{list}"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let mut out = Vec::new();
            crate::validation::podspec::resource_quantity(
                key,
                value,
                &format!("spec.resources.{list}[{key}]"),
                &mut out,
            );
            errs.extend(out);
        }
    }
    if let Some(class) = spec.get("storageClassName").and_then(Value::as_str)
        && !class.is_empty()
    {
        errs.extend(
            crate::validation::names::dns1123_subdomain(class)
                .iter()
                .map(|m| invalid_value("spec.storageClassName", &json!(class), m)),
        );
    }
    errs.extend(volume_mode(spec));
    errs
}

/// A claim spec as upstream's internal type marshals it (Go field names and order), for the
/// diff in its immutability message.
fn go_claim_spec(spec: &Value) -> GoValue {
    let field = |name: &str| spec.get(name).cloned().unwrap_or(Value::Null);
    let text = |name: &str| json!(spec.get(name).and_then(Value::as_str).unwrap_or(""));
    let resources = spec.get("resources").unwrap_or(&Value::Null);
    let list = |name: &str| resources.get(name).cloned().unwrap_or(Value::Null);
    let reference = |name: &str, namespaced: bool| {
        let Some(r) = spec.get(name).filter(|r| !r.is_null()) else {
            return GoValue::Json(Value::Null);
        };
        let s = |k: &str| r.get(k).cloned().unwrap_or(Value::Null);
        let mut fields = vec![
            ("APIGroup", GoValue::Json(s("apiGroup"))),
            (
                "Kind",
                GoValue::Json(json!(r.get("kind").and_then(Value::as_str).unwrap_or(""))),
            ),
            (
                "Name",
                GoValue::Json(json!(r.get("name").and_then(Value::as_str).unwrap_or(""))),
            ),
        ];
        if namespaced {
            fields.push(("Namespace", GoValue::Json(s("namespace"))));
        }
        GoValue::Struct(fields)
    };
    GoValue::Struct(vec![
        ("AccessModes", GoValue::Json(field("accessModes"))),
        ("Selector", GoValue::Json(field("selector"))),
        (
            "Resources",
            GoValue::Struct(vec![
                ("Limits", GoValue::Json(list("limits"))),
                ("Requests", GoValue::Json(list("requests"))),
            ]),
        ),
        ("VolumeName", GoValue::Json(text("volumeName"))),
        ("StorageClassName", GoValue::Json(field("storageClassName"))),
        ("VolumeMode", GoValue::Json(field("volumeMode"))),
        ("DataSource", reference("dataSource", false)),
        ("DataSourceRef", reference("dataSourceRef", true)),
        (
            "VolumeAttributesClassName",
            GoValue::Json(field("volumeAttributesClassName")),
        ),
    ])
}

/// Upstream's `ValidatePersistentVolumeClaimUpdate`.
fn validate_pvc_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = validate_pvc(obj);
    let empty = Value::Null;
    let (spec, old_spec) = (
        obj.get("spec").unwrap_or(&empty),
        old.get("spec").unwrap_or(&empty),
    );
    let mut new_clone = spec.clone();
    let mut old_clone = old_spec.clone();
    // The volume controller binds a claim by setting its volume name.
    let old_volume = old_spec
        .get("volumeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if old_volume.is_empty()
        && let Some(map) = old_clone.as_object_mut()
    {
        match spec.get("volumeName") {
            Some(v) => map.insert("volumeName".into(), v.clone()),
            None => map.remove("volumeName"),
        };
    }
    // The volume attributes class may change.
    for clone in [&mut new_clone, &mut old_clone] {
        if let Some(map) = clone.as_object_mut() {
            map.remove("volumeAttributesClassName");
        }
    }
    let bound = meta::path(obj, "status.phase").and_then(Value::as_str) == Some("Bound");
    let new_size =
        meta::path(spec, "resources.requests.storage").and_then(|v| quantity::from_json(v).ok());
    let old_size = meta::path(old_spec, "resources.requests.storage")
        .and_then(|v| quantity::from_json(v).ok());
    let has_requests = meta::path(spec, "resources.requests").is_some_and(|r| !r.is_null());
    if bound && has_requests {
        let old_storage = meta::path(old_spec, "resources.requests.storage").cloned();
        if let Some(requests) = new_clone
            .get_mut("resources")
            .and_then(|r| r.get_mut("requests"))
            .and_then(Value::as_object_mut)
        {
            match old_storage {
                Some(s) => requests.insert("storage".into(), s),
                None => requests.remove("storage"),
            };
        }
    }
    let unchanged = |a: &Value, b: &Value| {
        let norm = |v: &Value| {
            let mut v = v.clone();
            if let Some(map) = v.as_object_mut() {
                map.retain(|_, x| !x.is_null());
            }
            v
        };
        norm(a) == norm(b)
    };
    if !unchanged(&new_clone, &old_clone) {
        let diff = unified(
            &marshal_indent(&go_claim_spec(&old_clone)),
            &marshal_indent(&go_claim_spec(&new_clone)),
        );
        errs.push(Cause::forbidden(
            "spec",
            &format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{diff}"
            ),
        ));
    }
    if bound
        && has_requests
        && let (Some(new_size), Some(old_size)) = (&new_size, &old_size)
        && new_size.cmp(old_size).is_lt()
    {
        let capacity =
            meta::path(old, "status.capacity.storage").and_then(|v| quantity::from_json(v).ok());
        let at_most_capacity = match &capacity {
            Some(c) => new_size.cmp(c).is_le(),
            None => new_size.is_zero() || new_size.is_negative(),
        };
        if at_most_capacity {
            errs.push(Cause::forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            ));
        }
    }
    errs.extend(immutable(spec, old_spec, "volumeMode", "spec"));
    errs
}

impl Strategy for PersistentVolumeClaimStrategy {
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        canonicalize_lists(
            obj,
            &[
                "spec.resources.requests",
                "spec.resources.limits",
                "status.capacity",
                "status.allocatedResources",
            ],
        )
        .map_err(|e| quantity::undecodable(info, e))?;
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "PersistentVolumeClaim", obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_pvc(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_pvc_update(obj, old)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_volumes_and_claims_never_panic(
            claim in crate::kinds::core::test_support::mutated(
                pvc("1Gi"),
                &["spec", "spec.accessModes", "spec.resources", "spec.resources.requests",
                  "spec.resources.requests.storage", "spec.volumeName", "spec.selector",
                  "spec.dataSource", "spec.dataSourceRef", "status", "status.phase", "status.capacity"],
            ),
            pv in crate::kinds::core::test_support::mutated(
                json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}}),
                &["spec", "spec.capacity", "spec.accessModes", "spec.hostPath", "spec.nfs", "spec.csi",
                  "spec.persistentVolumeReclaimPolicy", "spec.volumeMode", "spec.nodeAffinity"],
            ),
        ) {
            let mut bound = pvc("2Gi");
            bound["status"] = json!({"phase": "Bound", "capacity": {"storage": "2Gi"}});
            let _ = validate_pvc_update(&claim, &bound);
            let _ = validate_pvc_update(&bound, &claim);
            let mut pv = pv;
            let _ = validate_pv(&pv);
            PersistentVolumeStrategy.default(&mut pv);
        }
    }

    fn pvc(size: &str) -> Value {
        let mut obj = json!({"metadata": {"name": "pvc"}, "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}}}});
        crate::defaults::apply_builtin_defaults("", "PersistentVolumeClaim", &mut obj);
        obj
    }

    #[test]
    fn claims_need_modes_and_storage() {
        assert!(validate_pvc(&pvc("1Gi")).is_empty());
        assert_eq!(
            summaries(&validate_pvc(&json!({"spec": {}}))),
            [
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value"
            ]
        );
        assert_eq!(
            summaries(&validate_pvc(&pvc("0"))),
            ["spec.resources[storage]: Invalid value: \"0\": must be greater than zero"]
        );
    }

    #[test]
    fn claim_updates_as_upstream() {
        let old = pvc("1Gi");
        let shrunk = pvc("500Mi");
        assert_eq!(
            summaries(&validate_pvc_update(&shrunk, &old)),
            [
                "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n@@ -6,7 +6,7 @@\n  \"Resources\": {\n   \"Limits\": null,\n   \"Requests\": {\n-   \"storage\": \"1Gi\"\n+   \"storage\": \"500Mi\"\n   }\n  },\n  \"VolumeName\": \"\",\n"
            ]
        );
        let mut bound_old = old.clone();
        bound_old["status"] = json!({"phase": "Bound", "capacity": {"storage": "1Gi"}});
        let mut bound_new = shrunk.clone();
        bound_new["status"] = bound_old["status"].clone();
        assert_eq!(
            summaries(&validate_pvc_update(&bound_new, &bound_old)),
            [
                "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
            ]
        );
        let mut grown = pvc("2Gi");
        grown["status"] = bound_old["status"].clone();
        assert!(validate_pvc_update(&grown, &bound_old).is_empty());
        assert!(validate_pvc_update(&old, &old).is_empty());
    }

    #[test]
    fn volumes_need_one_source_and_capacity() {
        let pv = |spec: Value| json!({"spec": spec});
        assert!(validate_pv(&pv(json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp"}}))).is_empty());
        assert_eq!(
            summaries(&validate_pv(&pv(json!({"accessModes": ["ReadWriteOnce"]})))),
            [
                "spec.capacity: Required value",
                "spec: Required value: must specify a volume type"
            ]
        );
        assert_eq!(
            summaries(&validate_pv(&pv(
                json!({"capacity": {"storage": "1Gi"}, "accessModes": ["Sometimes"],
                "hostPath": {"path": "/a"}, "nfs": {"server": "s", "path": "/"}})
            ))),
            [
                "spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
                "spec.nfs: Forbidden: may not specify more than 1 volume type"
            ]
        );
    }
}
