//! PersistentVolumes and PersistentVolumeClaims: quantities canonicalized on decode, upstream's
//! defaults (`pkg/apis/core/v1/defaults.go`, the PV strategy's pending phase, the status
//! strategy's phase transition time) and validation (`ValidatePersistentVolume` with its node
//! affinity, sources ([`sources`]) and classes, `ValidatePersistentVolumeClaim` with its data
//! sources ([`claims`]), their update and `/status` rules: a claim's spec is immutable but for
//! its storage request once bound, which may not go below the capacity).

use serde_json::{Value, json};

use super::go_diff::{GoValue, marshal_indent, unified};
use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::kinds::workload::immutable;
use crate::objects::FieldValidation;
use crate::registry::ResourceInfo;
use crate::validation::enums::{self, Enum, Order};
use crate::validation::names::{invalid_rendered, invalid_value};
use crate::{ApiError, meta, quantity};

mod claims;
mod sources;

/// The access modes.
const ACCESS_MODES: &Enum = &enums::PERSISTENT_VOLUME_ACCESS_MODE;
/// The volume modes.
const VOLUME_MODES: &Enum = &enums::PERSISTENT_VOLUME_MODE;
/// The reclaim policies.
const RECLAIM_POLICIES: &Enum = &enums::PERSISTENT_VOLUME_RECLAIM_POLICY;
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

/// Access modes: at least one, each supported, `ReadWriteOncePod` alone.
fn access_modes(spec: &Value, required_detail: &str) -> Vec<Cause> {
    let modes = spec.get("accessModes").and_then(Value::as_array);
    let mut errs = Vec::new();
    if modes.is_none_or(Vec::is_empty) {
        errs.push(Cause::required("spec.accessModes", required_detail));
    }
    let (mut once_pod, mut other) = (false, false);
    for mode in modes.into_iter().flatten() {
        let mode_str = mode.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(mode_str) {
            errs.push(ACCESS_MODES.not_supported("spec.accessModes", mode, Order::Sorted));
        } else if mode_str == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            other = true;
        }
    }
    if once_pod && other {
        errs.push(Cause::forbidden(
            "spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

/// A DNS-subdomain class name at `spec.<field>` (`ValidateClassName`), when non-empty.
fn class_name(spec: &Value, field: &str) -> Vec<Cause> {
    let Some(class) = spec
        .get(field)
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    else {
        return Vec::new();
    };
    crate::validation::names::dns1123_subdomain(class)
        .iter()
        .map(|m| invalid_value(&format!("spec.{field}"), &json!(class), m))
        .collect()
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

/// The beta node labels upstream lets a PV's node affinity move to their GA names.
const BETA_TO_GA: [(&str, &str); 5] = [
    (
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    ),
    ("beta.kubernetes.io/os", "kubernetes.io/os"),
    ("beta.kubernetes.io/arch", "kubernetes.io/arch"),
    (
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
    ),
];

/// `validateVolumeNodeAffinity` (through `ValidateNodeSelector`): required node selector terms,
/// each valid; label values are checked unless `check_values` is off (an update of a volume
/// whose stored terms already held invalid values). `None` when no affinity is set.
fn node_affinity(spec: &Value, check_values: bool) -> Option<Vec<Cause>> {
    let affinity = spec.get("nodeAffinity").filter(|a| !a.is_null())?;
    let mut errs = Vec::new();
    match affinity.get("required").filter(|r| !r.is_null()) {
        None => errs.push(Cause::required(
            "spec.nodeAffinity.required",
            "must specify required node constraints",
        )),
        Some(required) => {
            let path = "spec.nodeAffinity.required.nodeSelectorTerms";
            let terms = required
                .get("nodeSelectorTerms")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            if terms.is_empty() {
                errs.push(Cause::required(
                    path,
                    "must have at least one node selector term",
                ));
            }
            for (i, term) in terms.iter().enumerate() {
                crate::validation::podspec::node_selector_term(
                    term,
                    check_values,
                    &format!("{path}[{i}]"),
                    &mut errs,
                );
            }
        }
    }
    Some(errs)
}

/// Whether a stored spec's node affinity holds label values upstream would refuse now
/// (`HasInvalidLabelValueInNodeSelectorTerms`).
fn has_invalid_label_values(spec: &Value) -> bool {
    let strict = node_affinity(spec, true).map_or(0, |e| e.len());
    let lax = node_affinity(spec, false).map_or(0, |e| e.len());
    strict != lax
}

/// Upstream's `ValidatePersistentVolumeSpec` (not inline) and the volume plugins' mount
/// option check; `check_values` as for [`node_affinity`].
fn validate_pv_with(obj: &Value, check_values: bool) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = access_modes(spec, "");
    let capacity = spec.get("capacity").and_then(Value::as_object);
    match capacity {
        None => errs.push(Cause::required("spec.capacity", "")),
        Some(c) if c.is_empty() => errs.push(Cause::required("spec.capacity", "")),
        Some(c) => {
            for key in c.keys().filter(|k| *k != "storage") {
                errs.push(not_supported("spec.capacity", &json!(key), &["storage"]));
            }
            for (key, value) in c {
                let path = format!("spec.capacity[{key}]");
                errs.extend(claims::basic_resource(value, &path));
                if let Ok(q) = quantity::from_json(value)
                    && (q.is_zero() || q.is_negative())
                {
                    errs.push(invalid_value(
                        &path,
                        &json!(q.canonical()),
                        "must be greater than zero",
                    ));
                }
            }
        }
    }
    let policy = spec
        .get("persistentVolumeReclaimPolicy")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !policy.is_empty() && !RECLAIM_POLICIES.contains(policy) {
        errs.push(RECLAIM_POLICIES.not_supported(
            "spec.persistentVolumeReclaimPolicy",
            &json!(policy),
            Order::Sorted,
        ));
    }
    let affinity = node_affinity(spec, check_values);
    let affinity_set = affinity.is_some();
    errs.extend(affinity.into_iter().flatten());
    let name = meta::name(obj);
    errs.extend(sources::validate(spec, name, affinity_set));
    let host_path = meta::path(spec, "hostPath.path").and_then(Value::as_str);
    if host_path.is_some_and(clean_is_root) && policy == "Recycle" {
        errs.push(Cause::forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    errs.extend(class_name(spec, "storageClassName"));
    errs.extend(volume_mode(spec));
    if let Some(class) = spec
        .get("volumeAttributesClassName")
        .filter(|c| !c.is_null())
    {
        if class.as_str().unwrap_or("").is_empty() {
            errs.push(Cause::required(
                "spec.volumeAttributesClassName",
                "an empty string is disallowed",
            ));
        } else {
            errs.extend(class_name(spec, "volumeAttributesClassName"));
        }
        if spec.get("csi").is_none_or(Value::is_null) {
            errs.push(Cause::required(
                "spec.csi",
                "has to be specified when using volumeAttributesClassName",
            ));
        }
    }
    errs.extend(sources::mount_options(obj));
    errs
}

/// [`validate_pv_with`] for a new volume.
fn validate_pv(obj: &Value) -> Vec<Cause> {
    validate_pv_with(obj, true)
}

/// Whether Go's `path.Clean(p)` is `/`: an absolute path whose segments cancel out.
fn clean_is_root(p: &str) -> bool {
    if !p.starts_with('/') {
        return false;
    }
    let mut depth: i32 = 0;
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => depth = (depth - 1).max(0),
            _ => depth += 1,
        }
    }
    depth == 0
}

/// The volume source of a PV spec (every source field), with a CSI controller-expand secret
/// dropped when `drop_expand_secret` (upstream lets an update add one).
fn pv_source(spec: &Value, drop_expand_secret: bool) -> Value {
    let mut source = serde_json::Map::new();
    for (key, _) in sources::SOURCES {
        if let Some(v) = spec.get(key).filter(|v| !v.is_null()) {
            source.insert(key.to_string(), v.clone());
        }
    }
    if drop_expand_secret && let Some(csi) = source.get_mut("csi").and_then(Value::as_object_mut) {
        csi.remove("controllerExpandSecretRef");
    }
    Value::Object(source)
}

/// The fields of the internal `core.PersistentVolumeSource`, in declaration order, with the
/// spec field each holds.
const GO_PV_SOURCES: [(&str, &str); 22] = [
    ("GCEPersistentDisk", "gcePersistentDisk"),
    ("AWSElasticBlockStore", "awsElasticBlockStore"),
    ("HostPath", "hostPath"),
    ("Glusterfs", "glusterfs"),
    ("NFS", "nfs"),
    ("RBD", "rbd"),
    ("Quobyte", "quobyte"),
    ("ISCSI", "iscsi"),
    ("FlexVolume", "flexVolume"),
    ("Cinder", "cinder"),
    ("CephFS", "cephfs"),
    ("FC", "fc"),
    ("Flocker", "flocker"),
    ("AzureFile", "azureFile"),
    ("VsphereVolume", "vsphereVolume"),
    ("AzureDisk", "azureDisk"),
    ("PhotonPersistentDisk", "photonPersistentDisk"),
    ("PortworxVolume", "portworxVolume"),
    ("ScaleIO", "scaleIO"),
    ("Local", "local"),
    ("StorageOS", "storageos"),
    ("CSI", "csi"),
];

/// How a Go field of a modelled source marshals when unset.
#[derive(Clone, Copy)]
enum GoField {
    /// A `string` (`""`).
    Text,
    /// A `bool` (`false`).
    Flag,
    /// A pointer, map or slice (`null`).
    Nullable,
    /// A `*SecretReference` (`{"Name", "Namespace"}` or `null`).
    Secret,
}

/// The Go fields of the modelled source types, in declaration order.
fn go_fields(source: &str) -> Option<&'static [(&'static str, &'static str, GoField)]> {
    use GoField::{Flag, Nullable, Secret, Text};
    Some(match source {
        "hostPath" => &[("Path", "path", Text), ("Type", "type", Nullable)],
        "nfs" => &[
            ("Server", "server", Text),
            ("Path", "path", Text),
            ("ReadOnly", "readOnly", Flag),
        ],
        "local" => &[("Path", "path", Text), ("FSType", "fsType", Nullable)],
        "csi" => &[
            ("Driver", "driver", Text),
            ("VolumeHandle", "volumeHandle", Text),
            ("ReadOnly", "readOnly", Flag),
            ("FSType", "fsType", Text),
            ("VolumeAttributes", "volumeAttributes", Nullable),
            (
                "ControllerPublishSecretRef",
                "controllerPublishSecretRef",
                Secret,
            ),
            ("NodeStageSecretRef", "nodeStageSecretRef", Secret),
            ("NodePublishSecretRef", "nodePublishSecretRef", Secret),
            (
                "ControllerExpandSecretRef",
                "controllerExpandSecretRef",
                Secret,
            ),
            ("NodeExpandSecretRef", "nodeExpandSecretRef", Secret),
        ],
        _ => return None,
    })
}

/// A volume source as upstream's internal `core.PersistentVolumeSource` marshals (Go field
/// names and order), for the diff in its immutability message; `None` when a source is set
/// whose Go shape is not modelled.
fn go_pv_source(source: &Value) -> Option<GoValue> {
    let mut fields = Vec::new();
    for (go_name, name) in GO_PV_SOURCES {
        let Some(value) = source.get(name).filter(|v| !v.is_null()) else {
            fields.push((go_name, GoValue::Json(Value::Null)));
            continue;
        };
        let mut inner = Vec::new();
        for (go, json_name, kind) in go_fields(name)? {
            let v = value.get(*json_name).filter(|v| !v.is_null());
            let marshalled = match (kind, v) {
                (GoField::Text, None) => GoValue::Json(json!("")),
                (GoField::Flag, None) => GoValue::Json(json!(false)),
                (GoField::Nullable | GoField::Secret, None) => GoValue::Json(Value::Null),
                (GoField::Secret, Some(r)) => {
                    let text = |k: &str| json!(r.get(k).and_then(Value::as_str).unwrap_or(""));
                    GoValue::Struct(vec![
                        ("Name", GoValue::Json(text("name"))),
                        ("Namespace", GoValue::Json(text("namespace"))),
                    ])
                }
                (_, Some(v)) => GoValue::Json(v.clone()),
            };
            inner.push((*go, marshalled));
        }
        fields.push((go_name, GoValue::Struct(inner)));
    }
    Some(GoValue::Struct(fields))
}

/// A node affinity with its nulls and empty lists removed (upstream's semantic equality
/// treats them as unset).
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, x)| !x.is_null() && !x.as_array().is_some_and(Vec::is_empty))
                .map(|(k, x)| (k.clone(), normalized(x)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

/// `validatePvNodeAffinity`'s equality: equal but for requirement keys moved from a beta
/// node label to its GA name.
fn affinity_equal(new: &Value, old: &Value) -> bool {
    let mut old = normalized(old);
    let new = normalized(new);
    let new_terms = meta::path(&new, "required.nodeSelectorTerms").and_then(Value::as_array);
    let old_terms = old
        .get_mut("required")
        .and_then(|r| r.get_mut("nodeSelectorTerms"))
        .and_then(Value::as_array_mut);
    if let (Some(new_terms), Some(old_terms)) = (new_terms, old_terms) {
        for (new_term, old_term) in new_terms.iter().zip(old_terms.iter_mut()) {
            for list in ["matchExpressions", "matchFields"] {
                let new_reqs = new_term.get(list).and_then(Value::as_array);
                let old_reqs = old_term.get_mut(list).and_then(Value::as_array_mut);
                let (Some(new_reqs), Some(old_reqs)) = (new_reqs, old_reqs) else {
                    continue;
                };
                for (n, o) in new_reqs.iter().zip(old_reqs.iter_mut()) {
                    let new_key = n.get("key").and_then(Value::as_str).unwrap_or("");
                    let old_key = o.get("key").and_then(Value::as_str).unwrap_or("");
                    if BETA_TO_GA.contains(&(old_key, new_key))
                        && let Some(map) = o.as_object_mut()
                    {
                        map.insert("key".into(), json!(new_key));
                    }
                }
            }
        }
    }
    new == old
}

/// Go's `%#v` of a `*core.VolumeNodeAffinity` as upstream prints it (the pointer's address is
/// not reproducible; a fixed one stands in).
fn render_affinity(affinity: Option<&Value>) -> String {
    match affinity.filter(|a| !a.is_null()) {
        None => "null".to_string(),
        Some(a) if a.get("required").is_none_or(Value::is_null) => {
            "core.VolumeNodeAffinity{Required:(*core.NodeSelector)(nil)}".to_string()
        }
        Some(_) => {
            "core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000000000)}".to_string()
        }
    }
}

/// Upstream's `ValidatePersistentVolumeUpdate`: the volume source and mode are fixed at
/// creation (a CSI controller-expand secret may be added), node affinity too once set (but for
/// beta labels moving to GA), and a volume attributes class may not be unset.
fn validate_pv_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let (spec, old_spec) = (
        obj.get("spec").unwrap_or(&Value::Null),
        old.get("spec").unwrap_or(&Value::Null),
    );
    let mut errs = validate_pv_with(obj, !has_invalid_label_values(old_spec));
    let added_expand_secret = meta::path(old_spec, "csi").is_some_and(|c| !c.is_null())
        && meta::path(old_spec, "csi.controllerExpandSecretRef").is_none_or(Value::is_null)
        && meta::path(spec, "csi.controllerExpandSecretRef").is_some_and(|r| !r.is_null());
    let (new_source, old_source) = (
        pv_source(spec, added_expand_secret),
        pv_source(old_spec, false),
    );
    if new_source != old_source {
        // Upstream appends a diff of the internal sources; it is printed for the sources whose
        // Go shape is modelled here, and left off otherwise.
        let diff = match (go_pv_source(&old_source), go_pv_source(&new_source)) {
            (Some(old), Some(new)) => unified(&marshal_indent(&old), &marshal_indent(&new)),
            _ => String::new(),
        };
        errs.push(Cause::forbidden(
            "spec.persistentvolumesource",
            &format!("spec.persistentvolumesource is immutable after creation\n{diff}"),
        ));
    }
    errs.extend(immutable(spec, old_spec, "volumeMode", ""));
    if let Some(old_affinity) = old_spec.get("nodeAffinity").filter(|a| !a.is_null()) {
        let new_affinity = spec.get("nodeAffinity").unwrap_or(&Value::Null);
        if !affinity_equal(new_affinity, old_affinity) {
            errs.push(invalid_rendered(
                "nodeAffinity",
                &render_affinity(Some(new_affinity)),
                "field is immutable, except for updating from beta label to GA",
            ));
        }
    }
    let class = |s: &Value| {
        s.get("volumeAttributesClassName")
            .filter(|c| !c.is_null())
            .cloned()
    };
    if class(old_spec).is_some() && class(spec).is_none() {
        errs.push(Cause::forbidden(
            "spec.volumeAttributesClassName",
            "update from non-nil value to nil is forbidden",
        ));
    }
    errs
}

/// The PV status strategy's `PrepareForUpdate`: a phase change stamps
/// `lastPhaseTransitionTime` unless the writer set a new one.
fn stamp_phase_transition(obj: &mut Value, old: &Value) {
    let phase = |v: &Value| meta::path(v, "status.phase").cloned();
    let time = |v: &Value| {
        meta::path(v, "status.lastPhaseTransitionTime")
            .filter(|t| !t.is_null())
            .cloned()
    };
    if phase(obj) == phase(old) {
        return;
    }
    let new_time = time(obj);
    if new_time.is_some() && new_time != time(old) {
        return;
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        status.insert("lastPhaseTransitionTime".into(), json!(meta::now_rfc3339()));
    }
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
            crate::defaults::volume_sources(spec);
        }
        let status = root.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut()
            && status.get("phase").is_none_or(Value::is_null)
        {
            status.insert("phase".into(), json!("Pending"));
            status.insert("lastPhaseTransitionTime".into(), json!(meta::now_rfc3339()));
        }
    }

    /// A `/status` write whose phase changes gets a new transition time.
    fn prepare_for_subresource_update(&self, subresource: &str, obj: &mut Value, old: &Value) {
        if subresource == "status" {
            stamp_phase_transition(obj, old);
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_pv(obj)
    }

    /// `ValidatePersistentVolumeUpdate`; a `/status` write is checked only as metadata
    /// (`ValidatePersistentVolumeStatusUpdate`).
    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return Vec::new();
        }
        validate_pv_update(obj, old)
    }
}

// ---------------------------------------------------------------------------------------------
// PersistentVolumeClaim
// ---------------------------------------------------------------------------------------------

/// The strategy of `v1/PersistentVolumeClaim`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PersistentVolumeClaimStrategy;

/// Upstream's `ValidatePersistentVolumeClaimSpec` for a new claim.
fn validate_pvc(obj: &Value) -> Vec<Cause> {
    validate_pvc_with(obj, false)
}

/// Upstream's `ValidatePersistentVolumeClaimSpec`; `allow_invalid_group` keeps a data source
/// API group upstream would refuse now (an update of a claim that already had one).
fn validate_pvc_with(obj: &Value, allow_invalid_group: bool) -> Vec<Cause> {
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
    // Upstream checks no other request or limit of a claim.
    errs.extend(class_name(spec, "storageClassName"));
    errs.extend(volume_mode(spec));
    errs.extend(claims::data_sources(spec, allow_invalid_group));
    errs.extend(class_name(spec, "volumeAttributesClassName"));
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
    let empty = Value::Null;
    let (spec, old_spec) = (
        obj.get("spec").unwrap_or(&empty),
        old.get("spec").unwrap_or(&empty),
    );
    let mut errs = validate_pvc_with(obj, claims::has_api_group(old_spec));
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
    // A storage class may be set where none was (from the beta annotation, or from nil).
    let (class_from_nil, annotation_err) = claims::storage_class_upgrade(obj, old);
    if class_from_nil && let Some(map) = new_clone.as_object_mut() {
        map.remove("storageClassName");
    }
    errs.extend(annotation_err);
    let bound = meta::path(obj, "status.phase").and_then(Value::as_str) == Some("Bound");
    // A bound claim's volume attributes class may change.
    if bound
        && spec
            .get("volumeAttributesClassName")
            .is_some_and(|c| !c.is_null())
    {
        let old_class = old_spec.get("volumeAttributesClassName").cloned();
        if let Some(map) = new_clone.as_object_mut() {
            match old_class {
                Some(c) => map.insert("volumeAttributesClassName".into(), c),
                None => map.remove("volumeAttributesClassName"),
            };
        }
    }
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
    // Requests may shrink back, but not to the capacity recorded in the old status or below
    // (an absent size counts as zero).
    let zero = quantity::Quantity::zero_value();
    let new_size = new_size.unwrap_or_else(|| zero.clone());
    let old_size = old_size.unwrap_or_else(|| zero.clone());
    if new_size.cmp(&old_size).is_lt() {
        let capacity = meta::path(old, "status.capacity.storage")
            .and_then(|v| quantity::from_json(v).ok())
            .unwrap_or(zero);
        if new_size.cmp(&capacity).is_le() {
            errs.push(Cause::forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            ));
        }
    }
    errs.extend(immutable(spec, old_spec, "volumeMode", ""));
    errs.extend(claims::attributes_class_update(spec, old_spec));
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

    /// `ValidatePersistentVolumeClaimUpdate`, or `ValidatePersistentVolumeClaimStatusUpdate`
    /// for a `/status` write.
    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            claims::status_update(obj)
        } else {
            validate_pvc_update(obj, old)
        }
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
                  "spec.dataSource", "spec.dataSourceRef", "status", "status.phase", "status.capacity",
                  "status.allocatedResources", "status.allocatedResourceStatuses", "spec.storageClassName",
                  "spec.volumeAttributesClassName", "metadata.annotations"],
            ),
            pv in crate::kinds::core::test_support::mutated(
                json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/x"}}}),
                &["spec", "spec.capacity", "spec.accessModes", "spec.hostPath", "spec.nfs", "spec.csi",
                  "spec.persistentVolumeReclaimPolicy", "spec.volumeMode", "spec.nodeAffinity",
                  "spec.nodeAffinity.required", "spec.iscsi", "spec.fc", "spec.rbd", "spec.quobyte",
                  "spec.flexVolume", "spec.azureDisk", "spec.storageos", "spec.local", "spec.flocker",
                  "spec.csi.nodePublishSecretRef", "metadata.annotations", "status"],
            ),
        ) {
            let mut bound = pvc("2Gi");
            bound["status"] = json!({"phase": "Bound", "capacity": {"storage": "2Gi"}});
            let _ = validate_pvc_update(&claim, &bound);
            let _ = validate_pvc_update(&bound, &claim);
            let mut pv = pv;
            let _ = validate_pv(&pv);
            PersistentVolumeStrategy.default(&mut pv);
            let base = json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/x"}, "nodeAffinity": {"required": {"nodeSelectorTerms": []}}}});
            let _ = validate_pv_update(&pv, &base);
            let _ = validate_pv_update(&base, &pv);
            let mut stamped = pv.clone();
            stamp_phase_transition(&mut stamped, &base);
            let _ = claims::status_update(&claim);
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
        // Only the positive rule speaks for a negative size; other entries are not checked.
        let mut negative = pvc("-1Gi");
        negative["spec"]["resources"]["limits"] = json!({"example.com/x": "-1"});
        assert_eq!(
            summaries(&validate_pvc(&negative)),
            ["spec.resources[storage]: Invalid value: \"-1Gi\": must be greater than zero"]
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

    /// A PV spec around `extra` (a hostPath source unless `extra` names another).
    fn pv_with(extra: Value) -> Value {
        let mut spec = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
        let has_source = extra.as_object().is_some_and(|m| {
            m.keys()
                .any(|k| sources::SOURCES.iter().any(|(s, _)| s == k))
        });
        if !has_source {
            spec["hostPath"] = json!({"path": "/tmp"});
        }
        for (k, v) in extra.as_object().into_iter().flatten() {
            spec[k] = v.clone();
        }
        json!({"metadata": {"name": "pv"}, "spec": spec})
    }

    #[test]
    fn volume_specs_as_upstream() {
        let affinity =
            |terms: Value| json!({"nodeAffinity": {"required": {"nodeSelectorTerms": terms}}});
        let table: &[(Value, &[&str])] = &[
            (json!({}), &[]),
            (
                json!({"nodeAffinity": {}}),
                &[
                    "spec.nodeAffinity.required: Required value: must specify required node constraints",
                ],
            ),
            (
                affinity(json!([])),
                &[
                    "spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term",
                ],
            ),
            (
                affinity(json!([{"matchExpressions": [{"key": "zone", "operator": "In"}]}])),
                &[
                    "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ],
            ),
            (
                json!({"local": {"path": "/mnt"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}}),
                &[],
            ),
            (
                json!({"capacity": {"storage": "-1Gi"}}),
                &[
                    "spec.capacity[storage]: Invalid value: -1073741824: must be a valid resource quantity",
                    "spec.capacity[storage]: Invalid value: \"-1Gi\": must be greater than zero",
                ],
            ),
            (
                json!({"capacity": {"storage": "0"}}),
                &["spec.capacity[storage]: Invalid value: \"0\": must be greater than zero"],
            ),
            (
                json!({"hostPath": {"path": "//"}, "persistentVolumeReclaimPolicy": "Recycle"}),
                &[
                    "spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'",
                ],
            ),
            (
                json!({"storageClassName": "Fast"}),
                &[
                    "spec.storageClassName: Invalid value: \"Fast\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ],
            ),
            (
                json!({"volumeAttributesClassName": ""}),
                &[
                    "spec.volumeAttributesClassName: Required value: an empty string is disallowed",
                    "spec.csi: Required value: has to be specified when using volumeAttributesClassName",
                ],
            ),
            (
                json!({"accessModes": ["ReadWriteOncePod", "Bogus"]}),
                &[
                    "spec.accessModes: Unsupported value: \"Bogus\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
                ],
            ),
        ];
        for (extra, want) in table {
            assert_eq!(
                summaries(&validate_pv(&pv_with(extra.clone()))),
                *want,
                "{extra}"
            );
        }
    }

    #[test]
    fn volume_updates_as_upstream() {
        let zone = |key: &str| {
            json!({"nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": ["z1"]}]}]}}})
        };
        let old = pv_with(zone("failure-domain.beta.kubernetes.io/zone"));
        assert!(validate_pv_update(&pv_with(zone("topology.kubernetes.io/zone")), &old).is_empty());
        assert_eq!(
            summaries(&validate_pv_update(
                &pv_with(zone("example.com/zone")),
                &old
            )),
            [
                "nodeAffinity: Invalid value: core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000000000)}: field is immutable, except for updating from beta label to GA"
            ]
        );
        assert_eq!(
            summaries(&validate_pv_update(&pv_with(json!({})), &old)),
            [
                "nodeAffinity: Invalid value: null: field is immutable, except for updating from beta label to GA"
            ]
        );
        // Setting node affinity where there was none is allowed.
        assert!(validate_pv_update(&old, &pv_with(json!({}))).is_empty());
        assert_eq!(
            summaries(&validate_pv_update(
                &pv_with(json!({"volumeMode": "Block"})),
                &pv_with(json!({"volumeMode": "Filesystem"}))
            )),
            ["volumeMode: Invalid value: \"Block\": field is immutable"]
        );
        let csi = |extra: Value| {
            let mut source = json!({"driver": "d.example.com", "volumeHandle": "h"});
            for (k, v) in extra.as_object().into_iter().flatten() {
                source[k] = v.clone();
            }
            pv_with(json!({"csi": source, "volumeAttributesClassName": "gold"}))
        };
        let secret = json!({"controllerExpandSecretRef": {"name": "s", "namespace": "ns"}});
        assert!(validate_pv_update(&csi(secret.clone()), &csi(json!({}))).is_empty());
        assert_eq!(
            summaries(&validate_pv_update(&csi(json!({})), &csi(secret))),
            [
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n@@ -29,10 +29,7 @@\n   \"ControllerPublishSecretRef\": null,\n   \"NodeStageSecretRef\": null,\n   \"NodePublishSecretRef\": null,\n-  \"ControllerExpandSecretRef\": {\n-   \"Name\": \"s\",\n-   \"Namespace\": \"ns\"\n-  },\n+  \"ControllerExpandSecretRef\": null,\n   \"NodeExpandSecretRef\": null\n  }\n }\n"
            ]
        );
        let host = |p: &str| pv_with(json!({"hostPath": {"path": p, "type": ""}}));
        assert_eq!(
            summaries(&validate_pv_update(&host("/b"), &host("/a"))),
            [
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n@@ -2,7 +2,7 @@\n  \"GCEPersistentDisk\": null,\n  \"AWSElasticBlockStore\": null,\n  \"HostPath\": {\n-  \"Path\": \"/a\",\n+  \"Path\": \"/b\",\n   \"Type\": \"\"\n  },\n  \"Glusterfs\": null,\n"
            ]
        );
        // A source whose Go shape is not modelled: the message without a diff.
        let rbd = |image: &str| pv_with(json!({"rbd": {"monitors": ["m"], "image": image}}));
        assert_eq!(
            summaries(&validate_pv_update(&rbd("b"), &rbd("a"))),
            [
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n"
            ]
        );
        let mut unset = csi(json!({}));
        unset["spec"]
            .as_object_mut()
            .expect("spec")
            .remove("volumeAttributesClassName");
        assert_eq!(
            summaries(&validate_pv_update(&unset, &csi(json!({})))),
            [
                "spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden"
            ]
        );
    }

    #[test]
    fn volume_sources_get_upstream_defaults() {
        let mut pv = json!({"spec": {"rbd": {"monitors": ["m"], "image": "i", "pool": ""},
            "azureDisk": {"diskName": "d", "diskURI": "https://x", "fsType": ""}}});
        PersistentVolumeStrategy.default(&mut pv);
        assert_eq!(
            pv["spec"]["rbd"],
            json!({"monitors": ["m"], "image": "i", "pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"})
        );
        assert_eq!(
            pv["spec"]["azureDisk"],
            json!({"diskName": "d", "diskURI": "https://x", "fsType": "", "cachingMode": "ReadWrite", "kind": "Shared", "readOnly": false})
        );
        // The defaulted kind makes the blob URI rule apply.
        let mut blob =
            pv_with(json!({"azureDisk": {"diskName": "d", "diskURI": "/subscriptions/x"}}));
        PersistentVolumeStrategy.default(&mut blob);
        assert_eq!(
            summaries(&validate_pv(&blob)),
            [
                "spec.azureDisk.diskURI: Unsupported value: \"/subscriptions/x\": supported values: \"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd\""
            ]
        );
    }

    #[test]
    fn status_writes_stamp_phase_changes() {
        let old = json!({"status": {"phase": "Pending", "lastPhaseTransitionTime": "2020-01-01T00:00:00Z"}});
        let mut same = old.clone();
        stamp_phase_transition(&mut same, &old);
        assert_eq!(same, old);
        let mut bound = json!({"status": {"phase": "Bound", "lastPhaseTransitionTime": "2020-01-01T00:00:00Z"}});
        stamp_phase_transition(&mut bound, &old);
        assert_ne!(
            bound["status"]["lastPhaseTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
        let mut own = json!({"status": {"phase": "Bound", "lastPhaseTransitionTime": "2021-01-01T00:00:00Z"}});
        stamp_phase_transition(&mut own, &old);
        assert_eq!(
            own["status"]["lastPhaseTransitionTime"],
            "2021-01-01T00:00:00Z"
        );
    }

    #[test]
    fn claim_specs_and_updates_as_upstream() {
        let mut claim = pvc("1Gi");
        claim["spec"]["dataSource"] = json!({"kind": "Snapshot", "name": "s"});
        claim["spec"]["volumeAttributesClassName"] = json!("Gold");
        assert_eq!(
            summaries(&validate_pvc(&claim)),
            [
                "spec.dataSource: Invalid value: \"Snapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                "spec.volumeAttributesClassName: Invalid value: \"Gold\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ]
        );
        // A pending claim may get a storage class where it had none, not a new attributes class.
        let old = pvc("1Gi");
        let mut classed = old.clone();
        classed["spec"]["storageClassName"] = json!("fast");
        assert!(validate_pvc_update(&classed, &old).is_empty());
        let mut attributed = old.clone();
        attributed["spec"]["volumeAttributesClassName"] = json!("gold");
        assert_eq!(validate_pvc_update(&attributed, &old).len(), 1);
        // Once bound it may.
        let mut bound_old = old.clone();
        bound_old["status"] = json!({"phase": "Bound", "capacity": {"storage": "1Gi"}});
        let mut bound_new = attributed.clone();
        bound_new["status"] = bound_old["status"].clone();
        assert!(validate_pvc_update(&bound_new, &bound_old).is_empty());
        assert_eq!(
            summaries(&validate_pvc_update(
                &{
                    let mut c = bound_new.clone();
                    c["spec"]["volumeMode"] = json!("Block");
                    c
                },
                &bound_old
            ))
            .last()
            .map(String::as_str),
            Some("volumeMode: Invalid value: \"Block\": field is immutable")
        );
    }
}
