//! `storage.k8s.io/v1`: StorageClasses, CSIDrivers, CSINodes, VolumeAttachments,
//! CSIStorageCapacities and VolumeAttributesClasses, with upstream's
//! `pkg/apis/storage/validation` rules (allowed topologies in [`topology`], the update rules
//! printing Go values in [`updates`]) and `storage/v1` defaults.

use k8s_openapi::api::storage::v1 as api;

use serde_json::{Map, Value, json};

use super::KindDef;
use super::lists::{ListAt, ListRule};
use super::printer::{AGE, Column, Printer, age, text};
use super::strategy::{Context, Strategy};
use crate::error::{ApiError, Cause};
use crate::objects::FieldValidation;
use crate::quantity;
use crate::registry::ResourceInfo;
use crate::validation::enums::{self, Order};
use crate::validation::names::{
    child, dns1123_subdomain, go_quote, index, invalid_rendered, invalid_value,
    validate_qualified_name,
};
use crate::validation::selectors::validate_label_selector;

mod topology;
mod updates;

/// The API group of these kinds.
const GROUP: &str = "storage.k8s.io";

/// The longest CSI driver name.
const CSI_DRIVER_NAME_MAX_LENGTH: usize = 63;
/// The longest node ID a CSINode driver reports.
const CSI_NODE_ID_MAX_LENGTH: usize = 192;
/// The most provisioner parameters.
const MAX_PARAMETERS: usize = 512;
/// The largest total size of provisioner parameters.
const MAX_PARAMETERS_SIZE: usize = 256 * 1024;
/// The largest total size of a VolumeAttachment's attachment metadata.
const MAX_ATTACHMENT_METADATA_SIZE: usize = 256 * 1024;
/// The longest message of a VolumeAttachment's attach or detach error.
const MAX_VOLUME_ERROR_MESSAGE: usize = 1024;
/// The shortest service account token a CSI driver may request (10 minutes).
const MIN_TOKEN_SECONDS: i64 = 600;
/// The longest service account token a CSI driver may request (2^32 seconds).
const MAX_TOKEN_SECONDS: i64 = 1 << 32;

/// Which storage kind a [`StorageStrategy`] serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    StorageClass,
    CsiDriver,
    CsiNode,
    VolumeAttachment,
    CsiStorageCapacity,
    VolumeAttributesClass,
}

/// CSINode `spec.drivers`, keyed by `name`.
const CSI_NODE_LISTS: &[ListAt] = &[ListAt {
    path: "spec.drivers",
    rule: ListRule::keyed(&["name"]),
}];

/// CSIDriver `spec.volumeLifecycleModes`: a set for applies only.
const CSI_DRIVER_LISTS: &[ListAt] = &[ListAt {
    path: "spec.volumeLifecycleModes",
    rule: ListRule::ApplySet,
}];

/// The kinds of `storage.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            GROUP,
            "v1",
            "csidrivers",
            "CSIDriver",
            StorageStrategy(Kind::CsiDriver),
        )
        .schema::<api::CSIDriver>()
        .lists(CSI_DRIVER_LISTS)
        .cluster_scoped()
        .printer(CSI_DRIVERS),
        KindDef::new(
            GROUP,
            "v1",
            "csinodes",
            "CSINode",
            StorageStrategy(Kind::CsiNode),
        )
        .lists(CSI_NODE_LISTS)
        .schema::<api::CSINode>()
        .cluster_scoped()
        .printer(CSI_NODES),
        KindDef::new(
            GROUP,
            "v1",
            "csistoragecapacities",
            "CSIStorageCapacity",
            StorageStrategy(Kind::CsiStorageCapacity),
        )
        .schema::<api::CSIStorageCapacity>()
        .printer(CSI_STORAGE_CAPACITIES),
        KindDef::new(
            GROUP,
            "v1",
            "storageclasses",
            "StorageClass",
            StorageStrategy(Kind::StorageClass),
        )
        .returns_deleted_object()
        .schema::<api::StorageClass>()
        .cluster_scoped()
        .short(&["sc"])
        .printer(STORAGE_CLASSES),
        KindDef::new(
            GROUP,
            "v1",
            "volumeattachments",
            "VolumeAttachment",
            StorageStrategy(Kind::VolumeAttachment),
        )
        .schema::<api::VolumeAttachment>()
        .cluster_scoped()
        .status()
        .printer(VOLUME_ATTACHMENTS),
        KindDef::new(
            GROUP,
            "v1",
            "volumeattributesclasses",
            "VolumeAttributesClass",
            StorageStrategy(Kind::VolumeAttributesClass),
        )
        .schema::<api::VolumeAttributesClass>()
        .cluster_scoped()
        .short(&["vac"])
        .printer(VOLUME_ATTRIBUTES_CLASSES),
    ]
}

/// Whether a StorageClass is annotated as the cluster's default
/// (`storageclass.kubernetes.io/is-default-class: "true"`, or the beta annotation).
pub(crate) fn is_default_class(class: &Value) -> bool {
    [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|a| {
        crate::meta::path(class, "metadata.annotations")
            .and_then(|m| m.get(*a))
            .and_then(Value::as_str)
            == Some("true")
    })
}

/// The strategy of one storage kind.
#[derive(Debug, Clone, Copy)]
struct StorageStrategy(Kind);

/// Sets `field` of `map` to `value` unless it holds a non-null value.
fn default_field(map: &mut Map<String, Value>, field: &str, value: Value) {
    if map.get(field).is_none_or(Value::is_null) {
        map.insert(field.into(), value);
    }
}

impl Strategy for StorageStrategy {
    /// CSIStorageCapacity quantities are read and written back in canonical form.
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        if self.0 == Kind::CsiStorageCapacity
            && let Some(root) = obj.as_object_mut()
        {
            for field in ["capacity", "maximumVolumeSize"] {
                if let Some(value) = root.get_mut(field).filter(|v| !v.is_null()) {
                    quantity::canonicalize_value(value)
                        .map_err(|e| quantity::undecodable(info, e))?;
                }
            }
        }
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        let Some(root) = obj.as_object_mut() else {
            return;
        };
        match self.0 {
            Kind::StorageClass => {
                default_field(root, "reclaimPolicy", json!("Delete"));
                default_field(root, "volumeBindingMode", json!("Immediate"));
            }
            Kind::CsiDriver => {
                let Some(spec) = root
                    .entry("spec")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
                else {
                    return;
                };
                default_field(spec, "attachRequired", json!(true));
                default_field(spec, "podInfoOnMount", json!(false));
                default_field(spec, "storageCapacity", json!(false));
                default_field(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
                default_field(spec, "requiresRepublish", json!(false));
                default_field(spec, "seLinuxMount", json!(false));
                let modes_unset = spec
                    .get("volumeLifecycleModes")
                    .and_then(Value::as_array)
                    .is_none_or(Vec::is_empty);
                if modes_unset {
                    spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
                }
            }
            _ => {}
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        match self.0 {
            Kind::StorageClass => storage_class(obj),
            Kind::CsiDriver => csi_driver(obj),
            Kind::CsiNode => csi_node(obj),
            Kind::VolumeAttachment => volume_attachment(obj),
            Kind::CsiStorageCapacity => csi_storage_capacity(obj),
            Kind::VolumeAttributesClass => volume_attributes_class(obj),
        }
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if self.0 == Kind::VolumeAttributesClass {
            return volume_attributes_class_update(obj, old);
        }
        let mut errs = self.validate(obj, ctx);
        errs.extend(match self.0 {
            Kind::StorageClass => storage_class_update(obj, old),
            Kind::CsiDriver => csi_driver_update(obj, old),
            Kind::CsiNode => updates::csi_node(obj, old),
            Kind::VolumeAttachment => updates::attachment(obj, old).into_iter().collect(),
            Kind::CsiStorageCapacity => updates::capacity(obj, old),
            Kind::VolumeAttributesClass => Vec::new(),
        });
        errs
    }
}

/// The string at `field`, empty when absent.
fn string<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// Upstream's `ValidateCSIDriverName` (core validation): required, at most 63 characters, a
/// DNS-1123 subdomain once lowercased.
pub(crate) fn csi_driver_name(name: &str, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push(Cause::required(path, ""));
    }
    if name.len() > CSI_DRIVER_NAME_MAX_LENGTH {
        errs.push(crate::validation::names::too_long(
            path,
            CSI_DRIVER_NAME_MAX_LENGTH as i64,
        ));
    }
    for msg in dns1123_subdomain(&name.to_lowercase()) {
        errs.push(invalid_rendered(path, &go_quote(name), &msg));
    }
    errs
}

/// `validateParameters`: at most 512 non-empty keys of at most 256 KiB in all, and at least
/// one unless `allow_empty`.
fn parameters(obj: &Value, path: &str, allow_empty: bool) -> Vec<Cause> {
    let empty = serde_json::Map::new();
    let params = obj.get(path).and_then(Value::as_object).unwrap_or(&empty);
    let mut errs = Vec::new();
    if params.len() > MAX_PARAMETERS {
        errs.push(Cause::new(
            "FieldValueTooLong",
            path,
            format!("Too long: may not be more than {MAX_PARAMETERS} bytes"),
        ));
        return errs;
    }
    let mut total = 0;
    for (k, v) in params {
        if k.is_empty() {
            errs.push(invalid_rendered(path, "\"\"", "field can not be empty."));
        }
        total += k.len() + v.as_str().map_or(0, str::len);
    }
    if total > MAX_PARAMETERS_SIZE {
        errs.push(crate::validation::names::too_long(
            path,
            MAX_PARAMETERS_SIZE as i64,
        ));
    }
    if !allow_empty && params.is_empty() {
        errs.push(Cause::required(
            path,
            "must contain at least one key/value pair",
        ));
    }
    errs
}

/// `validateProvisioner` for the name at `field`: required, a qualified name once lowercased.
fn provisioner(obj: &Value, field: &str) -> Vec<Cause> {
    let name = string(obj, field);
    if name.is_empty() {
        return vec![Cause::required(field, "")];
    }
    let lower = name.to_lowercase();
    validate_qualified_name(&lower)
        .iter()
        .map(|msg| invalid_rendered(field, &go_quote(&lower), msg))
        .collect()
}

/// Upstream's `ValidateStorageClass` (besides object metadata).
fn storage_class(obj: &Value) -> Vec<Cause> {
    let mut errs = provisioner(obj, "provisioner");
    errs.extend(parameters(obj, "parameters", true));
    if let Some(policy) = obj.get("reclaimPolicy").and_then(Value::as_str)
        && !policy.is_empty()
        && !matches!(policy, "Delete" | "Retain")
    {
        errs.push(Cause::not_supported(
            "reclaimPolicy",
            &json!(policy),
            &[json!("Delete"), json!("Retain")],
        ));
    }
    match obj.get("volumeBindingMode").filter(|v| !v.is_null()) {
        None => errs.push(Cause::required("volumeBindingMode", "")),
        Some(mode)
            if mode
                .as_str()
                .is_some_and(|m| enums::VOLUME_BINDING_MODE.contains(m)) => {}
        Some(mode) => errs.push(enums::VOLUME_BINDING_MODE.not_supported(
            "volumeBindingMode",
            mode,
            Order::Sorted,
        )),
    }
    errs.extend(topology::allowed_topologies(obj));
    errs
}

/// Upstream's `ValidateStorageClassUpdate`: parameters, provisioner and reclaim policy are
/// forbidden to change; the binding mode is immutable.
fn storage_class_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (field, message) in [
        ("parameters", "updates to parameters are forbidden."),
        ("provisioner", "updates to provisioner are forbidden."),
        ("reclaimPolicy", "updates to reclaimPolicy are forbidden."),
    ] {
        if obj.get(field) != old.get(field) {
            errs.push(Cause::forbidden(field, message));
        }
    }
    errs.extend(crate::kinds::workload::immutable(
        obj,
        old,
        "volumeBindingMode",
        "",
    ));
    errs
}

/// Upstream's `validateCSIDriverSpec` (besides the fields defaulting always sets): a known FS
/// group policy, token requests with distinct audiences and bounded lifetimes, known lifecycle
/// modes, an allocatable update period of at least 10 seconds.
fn csi_driver(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    for field in ["attachRequired", "podInfoOnMount", "storageCapacity"] {
        if spec.get(field).is_some_and(Value::is_null) {
            let path = if field == "attachRequired" {
                "attachedRequired"
            } else {
                field
            };
            errs.push(Cause::required(format!("spec.{path}"), ""));
        }
    }
    if let Some(policy) = spec.get("fsGroupPolicy").filter(|v| !v.is_null())
        && !matches!(
            policy.as_str(),
            Some("File" | "None" | "ReadWriteOnceWithFSType")
        )
    {
        errs.push(Cause::not_supported(
            "spec.fsGroupPolicy",
            policy,
            &[
                json!("File"),
                json!("None"),
                json!("ReadWriteOnceWithFSType"),
            ],
        ));
    }
    errs.extend(token_requests(spec));
    for mode in spec
        .get("volumeLifecycleModes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !matches!(mode.as_str(), Some("Ephemeral" | "Persistent")) {
            errs.push(Cause::not_supported(
                "spec.volumeLifecycleModes",
                mode,
                &[json!("Persistent"), json!("Ephemeral")],
            ));
        }
    }
    if let Some(period) = spec
        .get("nodeAllocatableUpdatePeriodSeconds")
        .and_then(Value::as_i64)
        && period < 10
    {
        errs.push(invalid_value(
            "spec.nodeAllocatableUpdatePeriodSeconds",
            &json!(period),
            "must be greater than or equal to 10 seconds",
        ));
    }
    errs
}

/// `validateTokenRequests`: each audience once (a repeated one is not checked further), an
/// expiration of at least 10 minutes and at most 2^32 seconds.
fn token_requests(spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut audiences = std::collections::HashSet::new();
    for (i, request) in spec
        .get("tokenRequests")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let path = index("spec.tokenRequests", i);
        let audience = string(request, "audience");
        if !audiences.insert(audience) {
            errs.push(Cause::duplicate(child(&path, "audience"), &json!(audience)));
            continue;
        }
        let Some(seconds) = request.get("expirationSeconds").and_then(Value::as_i64) else {
            continue;
        };
        let at = child(&path, "expirationSeconds");
        if seconds < MIN_TOKEN_SECONDS {
            errs.push(invalid_value(
                &at,
                &json!(seconds),
                "may not specify a duration less than 10 minutes",
            ));
        }
        if seconds > MAX_TOKEN_SECONDS {
            errs.push(invalid_value(
                &at,
                &json!(seconds),
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
    }
    errs
}

/// Go's `%#v` of a `[]storage.VolumeLifecycleMode` (`(nil)` when absent).
fn render_modes(modes: Option<&Value>) -> String {
    match modes.and_then(Value::as_array) {
        None => "[]storage.VolumeLifecycleMode(nil)".to_string(),
        Some(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|m| go_quote(m.as_str().unwrap_or("")))
                .collect();
            format!("[]storage.VolumeLifecycleMode{{{}}}", items.join(", "))
        }
    }
}

/// Upstream's `ValidateCSIDriverUpdate`: `attachRequired` (reported at upstream's
/// `spec.attachedRequired`) and `volumeLifecycleModes` never change.
fn csi_driver_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let (spec, old_spec) = (
        obj.get("spec").unwrap_or(&Value::Null),
        old.get("spec").unwrap_or(&Value::Null),
    );
    let mut errs = Vec::new();
    let attach = spec.get("attachRequired").unwrap_or(&Value::Null);
    if Some(attach) != old_spec.get("attachRequired").or(Some(&Value::Null)) {
        errs.push(invalid_value(
            "spec.attachedRequired",
            attach,
            "field is immutable",
        ));
    }
    let modes = |s: &Value| {
        s.get("volumeLifecycleModes")
            .filter(|m| !m.as_array().is_some_and(Vec::is_empty) && !m.is_null())
            .cloned()
    };
    if modes(spec) != modes(old_spec) {
        errs.push(invalid_rendered(
            "spec.volumeLifecycleModes",
            &render_modes(spec.get("volumeLifecycleModes")),
            "field is immutable",
        ));
    }
    errs
}

/// Upstream's `ValidateCSINode` (besides object metadata): every driver has a valid name, a
/// node ID of at most 192 characters, a non-negative allocatable count, a unique name, and
/// unique qualified topology keys.
fn csi_node(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let drivers = crate::meta::path(obj, "spec.drivers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut names = std::collections::HashSet::new();
    for (i, driver) in drivers.iter().enumerate() {
        let at = index("spec.drivers", i);
        let name = string(driver, "name");
        errs.extend(csi_driver_name(name, &child(&at, "name")));
        let node_id = string(driver, "nodeID");
        if node_id.is_empty() {
            errs.push(Cause::required(child(&at, "nodeID"), ""));
        }
        if node_id.len() > CSI_NODE_ID_MAX_LENGTH {
            errs.push(invalid_value(
                &child(&at, "nodeID"),
                &json!(node_id),
                &format!("must be {CSI_NODE_ID_MAX_LENGTH} characters or less"),
            ));
        }
        if let Some(count) = crate::meta::path(driver, "allocatable.count").and_then(Value::as_i64)
            && count < 0
        {
            errs.push(invalid_value(
                &child(&at, "allocatable.count"),
                &json!(count),
                "must be greater than or equal to 0",
            ));
        }
        if !names.insert(name) {
            errs.push(Cause::duplicate(child(&at, "name"), &json!(name)));
        }
        let mut keys = std::collections::HashSet::new();
        let topology = driver
            .get("topologyKeys")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for key in topology.iter().map(|k| k.as_str().unwrap_or("")) {
            if key.is_empty() {
                errs.push(Cause::required(&at, ""));
            }
            if !keys.insert(key) {
                errs.push(Cause::duplicate(&at, &json!(key)));
            }
            for msg in validate_qualified_name(key) {
                errs.push(invalid_rendered(&at, &go_quote(key), &msg));
            }
        }
    }
    errs
}

/// Upstream's `ValidateVolumeAttachment` and `ValidateVolumeAttachmentV1`: an attacher, exactly
/// one source, a node name; then the attacher as a CSI driver name and the volume's name.
fn volume_attachment(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    let attacher = string(spec, "attacher");
    if attacher.is_empty() {
        errs.push(Cause::required("spec.attacher", ""));
    }
    let source = spec.get("source").unwrap_or(&Value::Null);
    let pv = source.get("persistentVolumeName").and_then(Value::as_str);
    let inline = source.get("inlineVolumeSpec").filter(|v| !v.is_null());
    const ONE_SOURCE: &str =
        "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (pv, inline) {
        (None, None) => errs.push(Cause::required("spec.source", ONE_SOURCE)),
        (Some(_), Some(_)) => errs.push(Cause::forbidden("spec.source", ONE_SOURCE)),
        (Some(""), None) => errs.push(Cause::required(
            "spec.source.persistentVolumeName",
            "must specify non empty persistentVolumeName",
        )),
        _ => {}
    }
    let node = string(spec, "nodeName");
    for msg in dns1123_subdomain(node) {
        errs.push(invalid_rendered("spec.nodeName", &go_quote(node), &msg));
    }
    errs.extend(attachment_status(obj));
    errs.extend(csi_driver_name(attacher, "spec.attacher"));
    if let Some(pv) = pv {
        for msg in dns1123_subdomain(pv) {
            errs.push(invalid_rendered(
                "spec.source.persistentVolumeName",
                &go_quote(pv),
                &msg,
            ));
        }
    }
    errs
}

/// `validateVolumeAttachmentStatus`: the attachment metadata's size, the errors' message
/// lengths (upstream names the metadata limit in that message) and codes.
fn attachment_status(obj: &Value) -> Vec<Cause> {
    let status = obj.get("status").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    let size: usize = status
        .get("attachmentMetadata")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > MAX_ATTACHMENT_METADATA_SIZE {
        errs.push(crate::validation::names::too_long(
            "status.attachmentMetadata",
            MAX_ATTACHMENT_METADATA_SIZE as i64,
        ));
    }
    for field in ["attachError", "detachError"] {
        let Some(error) = status.get(field).filter(|e| !e.is_null()) else {
            continue;
        };
        let path = format!("status.{field}");
        if string(error, "message").len() > MAX_VOLUME_ERROR_MESSAGE {
            errs.push(crate::validation::names::too_long(
                &child(&path, "message"),
                MAX_ATTACHMENT_METADATA_SIZE as i64,
            ));
        }
        if let Some(code) = error.get("errorCode").and_then(Value::as_i64)
            && code < 0
        {
            errs.push(invalid_value(
                &child(&path, "errorCode"),
                &json!(code),
                "must be between 0 and 2147483647, inclusive",
            ));
        }
    }
    errs
}

/// Upstream's `ValidateCSIStorageCapacity`: a valid node topology selector, a class name (a
/// DNS subdomain, even when empty), a non-negative capacity.
fn csi_storage_capacity(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    if let Some(selector) = obj.get("nodeTopology").filter(|v| !v.is_null()) {
        errs.extend(validate_label_selector(selector, "nodeTopology"));
    }
    let class = string(obj, "storageClassName");
    for msg in dns1123_subdomain(class) {
        errs.push(invalid_rendered("storageClassName", &go_quote(class), &msg));
    }
    if let Some(value) = obj.get("capacity").filter(|v| !v.is_null())
        && let Ok(q) = quantity::from_json(value)
        && q.is_negative()
    {
        errs.push(invalid_value(
            "capacity",
            &json!(q.canonical()),
            "must be greater than or equal to 0",
        ));
    }
    errs
}

/// Upstream's `ValidateVolumeAttributesClass`: a driver named as a provisioner is, and at least
/// one parameter.
fn volume_attributes_class(obj: &Value) -> Vec<Cause> {
    let mut errs = provisioner(obj, "driverName");
    errs.extend(parameters(obj, "parameters", false));
    errs
}

/// Upstream's `ValidateVolumeAttributesClassUpdate`: the driver and parameters may not
/// change (checked first), then the class as on create.
fn volume_attributes_class_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    if obj.get("driverName") != old.get("driverName") {
        errs.push(Cause::forbidden(
            "driverName",
            "updates to driverName are forbidden.",
        ));
    }
    if obj.get("parameters") != old.get("parameters") {
        errs.push(Cause::forbidden(
            "parameters",
            "updates to parameters are forbidden.",
        ));
    }
    errs.extend(volume_attributes_class(obj));
    errs
}

/// A boolean cell, `false` when absent.
fn flag(obj: &Value, path: &str) -> Value {
    json!(
        crate::meta::path(obj, path)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    )
}

/// StorageClasses print their own `Name` column: the default class is marked `(default)`.
const STORAGE_CLASSES: Printer = Printer {
    columns: &[
        Column::new("Name", crate::kinds::printer::NAME_DESCRIPTION),
        Column::new(
            "Provisioner",
            "provisioner indicates the type of the provisioner.",
        ),
        Column::new(
            "ReclaimPolicy",
            "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
        ),
        Column::new(
            "VolumeBindingMode",
            "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
        ),
        Column::new(
            "AllowVolumeExpansion",
            "allowVolumeExpansion shows whether the storage class allow volume expand.",
        ),
        AGE,
    ],
    cells: |obj| {
        let or = |field: &str, fallback: &str| match string(obj, field) {
            "" => fallback.to_string(),
            v => v.to_string(),
        };
        let mut name = crate::meta::name(obj).to_string();
        if is_default_class(obj) {
            name.push_str(" (default)");
        }
        vec![
            json!(name),
            json!(string(obj, "provisioner")),
            json!(or("reclaimPolicy", "Delete")),
            json!(or("volumeBindingMode", "Immediate")),
            flag(obj, "allowVolumeExpansion"),
            age(obj),
        ]
    },
};

/// The table columns of CSIDrivers (upstream's printers).
const CSI_DRIVERS: Printer = Printer {
    columns: &[
        Column::new("AttachRequired", "Indicates this CSI volume driver requires an attach operation, and that Kubernetes should call attach and wait for any attach operation to complete before proceeding to mount.").typed("boolean"),
        Column::new("PodInfoOnMount", "Indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations.").typed("boolean"),
        Column::new("StorageCapacity", "Indicates this CSI volume driver supports storage capacity tracking.").typed("boolean"),
        Column::new("TokenRequests", "Indicates the CSI volume driver requests service account tokens from kubelet."),
        Column::new("RequiresRepublish", "Indicates the CSI volume driver requires NodePublishVolume being periodically called.").typed("boolean"),
        Column::new("Modes", "Defines the supported volume lifecycle modes for this CSI driver."),
        AGE,
    ],
    cells: |obj| {
        let tokens: Vec<&str> = crate::meta::path(obj, "spec.tokenRequests")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|t| string(t, "audience")).collect())
            .unwrap_or_default();
        let tokens = if tokens.is_empty() {
            "<unset>".to_string()
        } else {
            tokens.join(",")
        };
        let modes = crate::kinds::printer::joined(obj, "spec.volumeLifecycleModes");
        vec![
            flag(obj, "spec.attachRequired"),
            flag(obj, "spec.podInfoOnMount"),
            flag(obj, "spec.storageCapacity"),
            json!(tokens),
            flag(obj, "spec.requiresRepublish"),
            json!(crate::kinds::printer::or_none(&modes)),
            age(obj),
        ]
    },
};

/// The table columns of CSINodes.
const CSI_NODES: Printer = Printer {
    columns: &[
        Column::new(
            "Drivers",
            "Drivers indicates the number of CSI drivers registered on the node",
        )
        .typed("integer"),
        AGE,
    ],
    cells: |obj| {
        let drivers = crate::meta::path(obj, "spec.drivers")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        vec![json!(drivers), age(obj)]
    },
};

/// The table columns of VolumeAttachments.
const VOLUME_ATTACHMENTS: Printer = Printer {
    columns: &[
        Column::new("Attacher", "Attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName()."),
        Column::new("PV", "Name of the persistent volume to attach."),
        Column::new("Node", "The node that the volume should be attached to."),
        Column::new("Attached", "Indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.").typed("boolean"),
        AGE,
    ],
    cells: |obj| {
        vec![
            json!(text(obj, "spec.attacher")),
            json!(text(obj, "spec.source.persistentVolumeName")),
            json!(text(obj, "spec.nodeName")),
            flag(obj, "status.attached"),
            age(obj),
        ]
    },
};

/// The table columns of CSIStorageCapacities.
const CSI_STORAGE_CAPACITIES: Printer = Printer {
    columns: &[
        Column::new(
            "StorageClassName",
            "The name of the StorageClass that the reported capacity applies to.",
        ),
        Column::new(
            "Capacity",
            "Capacity is the value reported by the CSI driver in its GetCapacityResponse.",
        ),
        AGE,
    ],
    cells: |obj| {
        let capacity = match string(obj, "capacity") {
            "" => "<unset>",
            c => c,
        };
        vec![
            json!(string(obj, "storageClassName")),
            json!(capacity),
            age(obj),
        ]
    },
};

/// The table columns of VolumeAttributesClasses.
const VOLUME_ATTRIBUTES_CLASSES: Printer = Printer {
    columns: &[Column::new("DriverName", "Name of the CSI driver"), AGE],
    cells: |obj| vec![json!(string(obj, "driverName")), age(obj)],
};

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn arbitrary_storage_objects_never_panic(
            field in proptest::sample::select(vec![
                "spec", "allowedTopologies", "parameters", "provisioner", "driverName",
                "nodeTopology", "storageClassName", "capacity", "status",
            ]),
            inner in proptest::sample::select(vec![
                "tokenRequests", "volumeLifecycleModes", "drivers", "source", "attachError",
                "attachmentMetadata", "nodeAllocatableUpdatePeriodSeconds", "attachRequired",
            ]),
            value in crate::validation::podspec::tests::any_json(),
        ) {
            let mut outer = json!({"spec": {}, "status": {}});
            outer[field] = value.clone();
            let mut nested = json!({"spec": {}, "status": {}});
            nested["spec"][inner] = value.clone();
            nested["status"][inner] = value;
            for obj in [&outer, &nested] {
                let _ = storage_class(obj);
                let _ = csi_driver(obj);
                let _ = csi_node(obj);
                let _ = volume_attachment(obj);
                let _ = csi_storage_capacity(obj);
                let _ = volume_attributes_class(obj);
                let _ = csi_driver_update(obj, &outer);
                let _ = updates::csi_node(obj, &nested);
                let _ = updates::attachment(obj, &outer);
                let _ = updates::capacity(obj, &nested);
                let _ = volume_attributes_class_update(obj, &outer);
            }
        }
    }

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn storage_classes_validate_and_freeze() {
        let mut sc = json!({"metadata": {"name": "fast"}, "provisioner": "example.com/disk"});
        StorageStrategy(Kind::StorageClass).default(&mut sc);
        assert_eq!(sc["reclaimPolicy"], "Delete");
        assert_eq!(sc["volumeBindingMode"], "Immediate");
        assert!(storage_class(&sc).is_empty());
        assert_eq!(
            messages(storage_class(
                &json!({"reclaimPolicy": "Recycle", "volumeBindingMode": "Later"})
            )),
            vec![
                "provisioner: Required value",
                "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
                "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
            ]
        );
        let mut changed = sc.clone();
        changed["provisioner"] = json!("example.com/other");
        changed["parameters"] = json!({"type": "ssd"});
        changed["volumeBindingMode"] = json!("WaitForFirstConsumer");
        assert_eq!(
            messages(storage_class_update(&changed, &sc)),
            vec![
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable",
            ]
        );
    }

    #[test]
    fn csi_drivers_default_as_upstream() {
        let mut driver = json!({"metadata": {"name": "ref3.csi.example.com"}});
        StorageStrategy(Kind::CsiDriver).default(&mut driver);
        assert_eq!(
            driver["spec"],
            json!({"attachRequired": true, "podInfoOnMount": false, "volumeLifecycleModes": ["Persistent"], "storageCapacity": false, "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": false, "seLinuxMount": false})
        );
        assert!(csi_driver(&driver).is_empty());
        let mut changed = driver.clone();
        changed["spec"]["attachRequired"] = json!(false);
        changed["spec"]["podInfoOnMount"] = json!(true);
        assert_eq!(
            messages(csi_driver_update(&changed, &driver)),
            vec!["spec.attachedRequired: Invalid value: false: field is immutable"]
        );
        assert_eq!(
            messages(csi_driver_name("Bad_Driver", "spec.attacher")).len(),
            1
        );
        assert_eq!(
            messages(csi_driver_name("", "spec.attacher"))[0],
            "spec.attacher: Required value"
        );
    }

    #[test]
    fn attachments_and_capacities() {
        assert_eq!(
            messages(volume_attachment(
                &json!({"spec": {"attacher": "csi.example.com", "nodeName": "n1", "source": {}}})
            )),
            vec![
                "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"
            ]
        );
        assert_eq!(
            messages(csi_storage_capacity(
                &json!({"storageClassName": "fast", "capacity": "-1Gi"})
            )),
            vec!["capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0"]
        );
    }

    #[test]
    fn csi_driver_specs_as_upstream() {
        let driver = |spec: Value| {
            let mut d = json!({"metadata": {"name": "d.example.com"}, "spec": spec});
            StorageStrategy(Kind::CsiDriver).default(&mut d);
            d
        };
        let table: &[(Value, &[&str])] = &[
            (
                json!({"tokenRequests": [{"audience": "a", "expirationSeconds": 600}, {"audience": "b"}]}),
                &[],
            ),
            (
                json!({"tokenRequests": [{"audience": "a", "expirationSeconds": 599},
                {"audience": "b", "expirationSeconds": 4294967297_i64}, {"audience": "a", "expirationSeconds": 1}]}),
                &[
                    "spec.tokenRequests[0].expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes",
                    "spec.tokenRequests[1].expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds",
                    "spec.tokenRequests[2].audience: Duplicate value: \"a\"",
                ],
            ),
            (
                json!({"volumeLifecycleModes": ["Persistent", "Forever"]}),
                &[
                    "spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: \"Persistent\", \"Ephemeral\"",
                ],
            ),
            (
                json!({"nodeAllocatableUpdatePeriodSeconds": 5}),
                &[
                    "spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 5: must be greater than or equal to 10 seconds",
                ],
            ),
        ];
        for (spec, want) in table {
            assert_eq!(messages(csi_driver(&driver(spec.clone()))), *want, "{spec}");
        }
        let old = driver(json!({}));
        let mut changed = old.clone();
        changed["spec"]["volumeLifecycleModes"] = json!(["Ephemeral"]);
        assert_eq!(
            messages(csi_driver_update(&changed, &old)),
            [
                "spec.volumeLifecycleModes: Invalid value: []storage.VolumeLifecycleMode{\"Ephemeral\"}: field is immutable"
            ]
        );
    }

    #[test]
    fn attribute_classes_and_attachment_status() {
        assert_eq!(
            messages(volume_attributes_class(
                &json!({"driverName": "Bad Driver"})
            )),
            [
                "driverName: Invalid value: \"bad driver\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "parameters: Required value: must contain at least one key/value pair",
            ]
        );
        let class = json!({"driverName": "d.example.com", "parameters": {"iops": "1"}});
        let mut moved = class.clone();
        moved["driverName"] = json!("e.example.com");
        moved["parameters"] = json!({"iops": "2"});
        assert!(volume_attributes_class_update(&class, &class).is_empty());
        assert_eq!(
            messages(volume_attributes_class_update(&moved, &class)),
            [
                "driverName: Forbidden: updates to driverName are forbidden.",
                "parameters: Forbidden: updates to parameters are forbidden.",
            ]
        );
        let va = json!({"spec": {"attacher": "d.example.com", "nodeName": "n", "source": {"persistentVolumeName": "pv"}},
            "status": {"attached": false, "attachError": {"message": "x".repeat(1025), "errorCode": -1}}});
        assert_eq!(
            messages(volume_attachment(&va)),
            [
                "status.attachError.message: Too long: may not be more than 262144 bytes",
                "status.attachError.errorCode: Invalid value: -1: must be between 0 and 2147483647, inclusive",
            ]
        );
        assert_eq!(
            messages(csi_storage_capacity(&json!({"storageClassName": ""}))),
            [
                "storageClassName: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
    }
}
