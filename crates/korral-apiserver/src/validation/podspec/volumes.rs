//! Volumes of a pod spec and the container mounts that use them: upstream's `ValidateVolumes`,
//! `validateVolumeSource` for every in-tree source (projected and downward API files included),
//! `ValidateVolumeMounts` and `ValidateVolumeDevices`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use super::{
    PodSpecOptions, dns_label, int_at, list_at, local_descending_path, not_found, not_supported,
    set_at, str_at, validate_field_ref, validate_resource_field_ref,
};
use crate::error::Cause;
use crate::quantity;
use crate::validation::enums::{self, Order};
use crate::validation::names::{
    NameRule, child, dns1123_subdomain, go_quote, index, invalid_rendered, invalid_value, key,
    too_long, validate_annotations, validate_labels, validate_name,
};
use crate::validation::ports::inclusive_range;

/// Upstream's message for file modes.
const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// Upstream's `pdPartitionErrorMsg`.
const PARTITION: &str = "must be between 1 and 255, inclusive";

/// The valid volumes of a pod by name: what mounts and devices may refer to.
pub(super) type Volumes<'a> = BTreeMap<String, &'a Value>;

/// `ValidateVolumeMounts`: each mount names a valid volume, at a unique path that no volume
/// device of the container uses; sub-paths relative (none into an image volume), mount
/// propagation and recursive read-only as upstream allows them.
pub(super) fn validate_volume_mounts(
    c: &Value,
    path: &str,
    volumes: &Volumes<'_>,
    out: &mut Vec<Cause>,
) {
    let devices = list_at(c, "volumeDevices");
    for (i, m) in list_at(c, "volumeMounts").iter().enumerate() {
        let mpath = index(path, i);
        let name = str_at(m, "name");
        if name.is_empty() {
            out.push(Cause::required(child(&mpath, "name"), ""));
        }
        if !volumes.contains_key(name) {
            out.push(not_found(&child(&mpath, "name"), &json!(name)));
        }
        let mount_path = str_at(m, "mountPath");
        if mount_path.is_empty() {
            out.push(Cause::required(child(&mpath, "mountPath"), ""));
        }
        let earlier = list_at(c, "volumeMounts")[..i]
            .iter()
            .any(|e| str_at(e, "mountPath") == mount_path);
        if earlier {
            out.push(invalid_value(
                &child(&mpath, "mountPath"),
                &json!(mount_path),
                "must be unique",
            ));
        }
        if devices.iter().any(|d| str_at(d, "name") == name) {
            out.push(invalid_value(
                &child(&mpath, "name"),
                &json!(name),
                "must not already exist in volumeDevices",
            ));
        }
        if devices
            .iter()
            .any(|d| str_at(d, "devicePath") == mount_path)
        {
            out.push(invalid_value(
                &child(&mpath, "mountPath"),
                &json!(mount_path),
                "must not already exist as a path in volumeDevices",
            ));
        }
        let sub_path = str_at(m, "subPath");
        let sub_path_expr = str_at(m, "subPathExpr");
        if volumes
            .get(name)
            .is_some_and(|v| set_at(v, "image").is_some())
        {
            for (field, value) in [("subPath", sub_path), ("subPathExpr", sub_path_expr)] {
                if !value.is_empty() {
                    out.push(invalid_value(
                        &child(&mpath, field),
                        &json!(value),
                        "not allowed in image volume sources",
                    ));
                }
            }
        }
        // Upstream reports these under the list's path, without the index.
        if !sub_path.is_empty() {
            local_descending_path(sub_path, &child(path, "subPath"), out);
        }
        if !sub_path_expr.is_empty() {
            if !sub_path.is_empty() {
                out.push(invalid_value(
                    &child(&mpath, "subPathExpr"),
                    &json!(sub_path_expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            local_descending_path(sub_path_expr, &child(path, "subPathExpr"), out);
        }
        if set_at(m, "mountPropagation").is_some() {
            let mode = str_at(m, "mountPropagation");
            let field = child(path, "mountPropagation");
            if !enums::MOUNT_PROPAGATION_MODE.contains(mode) {
                out.push(enums::MOUNT_PROPAGATION_MODE.not_supported(
                    field,
                    &json!(mode),
                    Order::Sorted,
                ));
            } else if mode == "Bidirectional"
                && c.get("securityContext")
                    .and_then(|s| s.get("privileged"))
                    .and_then(Value::as_bool)
                    != Some(true)
            {
                out.push(Cause::forbidden(
                    field,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
        recursive_read_only(m, &child(path, "recursiveReadOnly"), out);
    }
}

/// `core.RecursiveReadOnlyMode` values, sorted as upstream lists its set.
const RECURSIVE_READ_ONLY: [&str; 3] = ["Disabled", "Enabled", "IfPossible"];

/// `validateMountRecursiveReadOnly`: `Enabled`/`IfPossible` only on a read-only mount without
/// propagation. Reported under the list's path, as upstream does.
fn recursive_read_only(m: &Value, field: &str, out: &mut Vec<Cause>) {
    if set_at(m, "recursiveReadOnly").is_none() {
        return;
    }
    match str_at(m, "recursiveReadOnly") {
        "Disabled" => {}
        "Enabled" | "IfPossible" => {
            if m.get("readOnly").and_then(Value::as_bool) != Some(true) {
                out.push(Cause::forbidden(
                    field,
                    "may only be specified when readOnly is true",
                ));
            }
            if set_at(m, "mountPropagation").is_some() && str_at(m, "mountPropagation") != "None" {
                out.push(Cause::forbidden(
                    field,
                    "may only be specified when mountPropagation is None or not specified",
                ));
            }
        }
        other => out.push(not_supported(field, &json!(other), &RECURSIVE_READ_ONLY)),
    }
}

/// `ValidateVolumeDevices`: each device names a claim-backed volume (a PVC or an ephemeral
/// volume), once, at a unique path without `..` that no mount of the container uses.
pub(super) fn validate_volume_devices(
    c: &Value,
    path: &str,
    volumes: &Volumes<'_>,
    out: &mut Vec<Cause>,
) {
    let mounts = list_at(c, "volumeMounts");
    let mut names = BTreeSet::new();
    let mut paths = BTreeSet::new();
    for (i, d) in list_at(c, "volumeDevices").iter().enumerate() {
        let dpath = index(path, i);
        let name = str_at(d, "name");
        let device_path = str_at(d, "devicePath");
        let volume = volumes.get(name);
        if name.is_empty() {
            out.push(Cause::required(child(&dpath, "name"), ""));
        }
        if names.contains(name) {
            out.push(invalid_value(
                &child(&dpath, "name"),
                &json!(name),
                "must be unique",
            ));
        }
        match volume {
            Some(v)
                if set_at(v, "persistentVolumeClaim").is_none()
                    && set_at(v, "ephemeral").is_none() =>
            {
                out.push(invalid_value(
                    &child(&dpath, "name"),
                    &json!(name),
                    "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
                ));
            }
            Some(_) => {}
            None => out.push(not_found(&child(&dpath, "name"), &json!(name))),
        }
        if device_path.is_empty() {
            out.push(Cause::required(child(&dpath, "devicePath"), ""));
        }
        if paths.contains(device_path) {
            out.push(invalid_value(
                &child(&dpath, "devicePath"),
                &json!(device_path),
                "must be unique",
            ));
        }
        if !device_path.is_empty() && has_backsteps(device_path) {
            out.push(invalid_value(
                &child(&dpath, "devicePath"),
                &json!(device_path),
                "can not contain backsteps ('..')",
            ));
        } else {
            paths.insert(device_path);
        }
        if mounts.iter().any(|m| str_at(m, "name") == name) {
            out.push(invalid_value(
                &child(&dpath, "name"),
                &json!(name),
                "must not already exist in volumeMounts",
            ));
        }
        if mounts.iter().any(|m| str_at(m, "mountPath") == device_path) {
            out.push(invalid_value(
                &child(&dpath, "devicePath"),
                &json!(device_path),
                "must not already exist as a path in volumeMounts",
            ));
        }
        if !name.is_empty() {
            names.insert(name);
        }
    }
}

/// `validatePathNoBacksteps`: whether a path has a `..` element.
fn has_backsteps(path: &str) -> bool {
    path.split('/').any(|part| part == "..")
}

/// `validatePathNoBacksteps` of the value at `field`.
fn no_backsteps(value: &str, field: &str, out: &mut Vec<Cause>) {
    if has_backsteps(value) {
        out.push(invalid_value(field, &json!(value), "must not contain '..'"));
    }
}

/// `ValidateLocalNonReservedPath`: relative, without `..` elements, not starting with `..`.
fn local_non_reserved_path(value: &str, field: &str, out: &mut Vec<Cause>) {
    local_descending_path(value, field, out);
    if value.starts_with("..") && !value.starts_with("../") {
        out.push(invalid_value(
            field,
            &json!(value),
            "must not start with '..'",
        ));
    }
}

/// The volume sources of upstream's `VolumeSource` in the order `validateVolumeSource` checks
/// them, each with the path upstream names when refusing it as a second source.
const VOLUME_SOURCES: [(&str, &str); 30] = [
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    // Upstream's spellings of these two paths.
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

/// `ValidateVolumes`: returns the valid volumes by name (what mounts may refer to).
pub(super) fn validate_volumes<'a>(
    volumes: &'a [Value],
    path: &str,
    opts: PodSpecOptions<'_>,
    out: &mut Vec<Cause>,
) -> Volumes<'a> {
    let mut valid = BTreeMap::new();
    for (i, v) in volumes.iter().enumerate() {
        let vpath = index(path, i);
        let mut errs = Vec::new();
        validate_volume_source(v, &vpath, opts, &mut errs);
        let name = str_at(v, "name");
        if name.is_empty() {
            errs.push(Cause::required(child(&vpath, "name"), ""));
        } else {
            dns_label(name, &child(&vpath, "name"), &mut errs);
        }
        if valid.contains_key(name) {
            errs.push(Cause::duplicate(child(&vpath, "name"), &json!(name)));
        }
        if errs.is_empty() {
            valid.insert(name.to_string(), v);
        } else {
            out.extend(errs);
        }
    }
    valid
}

/// `validateVolumeSource`: exactly one source, each checked as upstream does.
fn validate_volume_source(v: &Value, path: &str, opts: PodSpecOptions<'_>, out: &mut Vec<Cause>) {
    let resource_is_pod = opts.resource_is_pod;
    let mut count = 0;
    for (source, refused_at) in VOLUME_SOURCES {
        let Some(s) = set_at(v, source) else {
            continue;
        };
        if count > 0 {
            out.push(Cause::forbidden(
                child(path, refused_at),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        let spath = child(path, source);
        match source {
            "emptyDir" => {
                if let Some(limit) = set_at(s, "sizeLimit")
                    && quantity::from_json(limit).is_ok_and(|q| q.is_negative())
                {
                    out.push(Cause::forbidden(
                        child(&spath, "sizeLimit"),
                        "SizeLimit field must be a valid resource quantity",
                    ));
                }
            }
            "hostPath" => host_path(s, &spath, out),
            "gitRepo" => {
                required(s, "repository", &spath, out);
                local_descending_path(str_at(s, "directory"), &child(&spath, "directory"), out);
            }
            // Upstream names the GCE disk's fields under `persistentDisk`.
            "gcePersistentDisk" => {
                let ppath = child(path, "persistentDisk");
                required(s, "pdName", &ppath, out);
                partition(s, &ppath, out);
            }
            "awsElasticBlockStore" => {
                required(s, "volumeID", &spath, out);
                partition(s, &spath, out);
            }
            "secret" => {
                required(s, "secretName", &spath, out);
                file_mode(s, "defaultMode", &spath, out);
                key_to_paths(s, &spath, out);
            }
            "nfs" => {
                required(s, "server", &spath, out);
                required(s, "path", &spath, out);
                let p = str_at(s, "path");
                if !p.starts_with('/') {
                    out.push(invalid_value(
                        &child(&spath, "path"),
                        &json!(p),
                        "must be an absolute path",
                    ));
                }
            }
            "iscsi" => iscsi(v, s, path, &spath, out),
            "glusterfs" => {
                required(s, "endpoints", &spath, out);
                required(s, "path", &spath, out);
            }
            "flocker" => flocker(s, &spath, out),
            "persistentVolumeClaim" => required(s, "claimName", &spath, out),
            "rbd" => {
                required_list(s, "monitors", &spath, out);
                required(s, "image", &spath, out);
            }
            "cinder" => {
                required(s, "volumeID", &spath, out);
                secret_ref_name(s, &spath, out);
            }
            "cephfs" => required_list(s, "monitors", &spath, out),
            "quobyte" => quobyte(s, &spath, out),
            "downwardAPI" => {
                file_mode(s, "defaultMode", &spath, out);
                for item in list_at(s, "items") {
                    downward_api_file(item, &spath, out);
                }
            }
            "fc" => fibre_channel(s, &spath, out),
            "flexVolume" => flex_volume(s, &spath, out),
            "configMap" => {
                required(s, "name", &spath, out);
                file_mode(s, "defaultMode", &spath, out);
                key_to_paths(s, &spath, out);
            }
            "azureFile" => {
                required(s, "secretName", &spath, out);
                required(s, "shareName", &spath, out);
            }
            "vsphereVolume" => required(s, "volumePath", &spath, out),
            "photonPersistentDisk" => required(s, "pdID", &spath, out),
            "portworxVolume" => required(s, "volumeID", &spath, out),
            "azureDisk" => azure_disk(s, &spath, out),
            "storageos" => storage_os(s, &spath, out),
            "projected" => {
                file_mode(s, "defaultMode", &spath, out);
                projection_sources(s, &spath, out);
            }
            "scaleIO" => {
                for field in ["gateway", "system", "volumeName"] {
                    required(s, field, &spath, out);
                }
            }
            "csi" => csi(s, &spath, out),
            "ephemeral" => {
                ephemeral(s, &spath, out);
                ephemeral_claim_name(opts.pod_name, str_at(v, "name"), path, out);
            }
            "image" => {
                if resource_is_pod {
                    required(s, "reference", &spath, out);
                }
                let policy = str_at(s, "pullPolicy");
                if policy.is_empty() {
                    out.push(Cause::required(child(&spath, "pullPolicy"), ""));
                } else if !enums::PULL_POLICY.contains(policy) {
                    out.push(enums::PULL_POLICY.not_supported(
                        child(&spath, "pullPolicy"),
                        &json!(policy),
                        Order::Sorted,
                    ));
                }
            }
            _ => {}
        }
    }
    if count == 0 {
        out.push(Cause::required(path, "must specify a volume type"));
    }
}

/// `Required value` at `path.field` when the string there is empty.
fn required(s: &Value, field: &str, path: &str, out: &mut Vec<Cause>) {
    if str_at(s, field).is_empty() {
        out.push(Cause::required(child(path, field), ""));
    }
}

/// `Required value` at `path.field` when the list there is empty.
fn required_list(s: &Value, field: &str, path: &str, out: &mut Vec<Cause>) {
    if list_at(s, field).is_empty() {
        out.push(Cause::required(child(path, field), ""));
    }
}

/// A set `secretRef` needs a name.
fn secret_ref_name(s: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(secret) = set_at(s, "secretRef")
        && str_at(secret, "name").is_empty()
    {
        out.push(Cause::required(
            child(&child(path, "secretRef"), "name"),
            "",
        ));
    }
}

/// A disk partition: 0 (the whole disk) to 255.
fn partition(s: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(p) = int_at(s, "partition")
        && !(0..=255).contains(&p)
    {
        out.push(invalid_value(
            &child(path, "partition"),
            &json!(p),
            PARTITION,
        ));
    }
}

/// `validateHostPathVolumeSource`: a path without `..`, a known type.
fn host_path(s: &Value, path: &str, out: &mut Vec<Cause>) {
    let p = str_at(s, "path");
    if p.is_empty() {
        out.push(Cause::required(child(path, "path"), ""));
        return;
    }
    no_backsteps(p, &child(path, "path"), out);
    if set_at(s, "type").is_some() {
        let t = str_at(s, "type");
        if !enums::HOST_PATH_TYPE.contains(t) {
            out.push(enums::HOST_PATH_TYPE.not_supported(
                child(path, "type"),
                &json!(t),
                Order::Sorted,
            ));
        }
    }
}

/// An iSCSI qualified name (`iqn.yyyy-mm.naming-authority:unique`).
static IQN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$").ok());

/// An extended unique identifier (`eui.` and 16 characters).
static EUI: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^eui.[[:alnum:]]{16}$").ok());

/// A network address authority name (`naa.` and 32 characters).
static NAA: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^naa.[[:alnum:]]{32}$").ok());

/// Whether `value` matches a pattern compiled at first use.
fn matches(re: &LazyLock<Option<Regex>>, value: &str) -> bool {
    re.as_ref().is_some_and(|re| re.is_match(value))
}

/// The format errors of an iSCSI name: `prefix_msg` when it starts with none of `iqn`, `eui`,
/// `naa`, `must be valid format` when the form of its prefix does not match.
fn iscsi_name(value: &str, prefix_msg: &'static str) -> Option<&'static str> {
    if value.starts_with("iqn") {
        (!matches(&IQN, value)).then_some("must be valid format")
    } else if value.starts_with("eui") {
        (!matches(&EUI, value)).then_some("must be valid format")
    } else if value.starts_with("naa") {
        (!matches(&NAA, value)).then_some("must be valid format")
    } else {
        Some(prefix_msg)
    }
}

/// `validateISCSIVolumeSource`, and the length of `<volume name>:<target portal>` when an
/// initiator name is given (reported at the volume's name).
fn iscsi(v: &Value, s: &Value, vpath: &str, path: &str, out: &mut Vec<Cause>) {
    const PREFIX: &str = "must be valid format starting with iqn, eui, or naa";
    required(s, "targetPortal", path, out);
    let iqn = str_at(s, "iqn");
    if iqn.is_empty() {
        out.push(Cause::required(child(path, "iqn"), ""));
    } else if let Some(msg) = iscsi_name(iqn, PREFIX) {
        out.push(invalid_value(&child(path, "iqn"), &json!(iqn), msg));
    }
    let lun = int_at(s, "lun").unwrap_or(0);
    if !(0..=255).contains(&lun) {
        out.push(invalid_value(
            &child(path, "lun"),
            &json!(lun),
            &inclusive_range(0, 255),
        ));
    }
    let chap = |f: &str| s.get(f).and_then(Value::as_bool) == Some(true);
    if (chap("chapAuthDiscovery") || chap("chapAuthSession")) && set_at(s, "secretRef").is_none() {
        out.push(Cause::required(child(path, "secretRef"), ""));
    }
    if let Some(initiator) = set_at(s, "initiatorName") {
        let name = initiator.as_str().unwrap_or("");
        // Upstream names this field in lower case.
        let field = child(path, "initiatorname");
        let starts = ["iqn", "eui", "naa"].iter().any(|p| name.starts_with(p));
        if !starts {
            out.push(invalid_value(&field, &json!(name), PREFIX));
        } else if let Some(msg) = iscsi_name(name, PREFIX) {
            out.push(invalid_value(&field, &json!(name), msg));
        }
        let volume = str_at(v, "name");
        if volume.len() + 1 + str_at(s, "targetPortal").len() > 64 {
            out.push(invalid_value(
                &child(vpath, "name"),
                &json!(volume),
                "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
            ));
        }
    }
}

/// `validateFlockerVolumeSource`: exactly one of the dataset's name and UUID; no `/` in the name.
fn flocker(s: &Value, path: &str, out: &mut Vec<Cause>) {
    let name = str_at(s, "datasetName");
    let uuid = str_at(s, "datasetUUID");
    if name.is_empty() && uuid.is_empty() {
        out.push(Cause::required(
            path,
            "one of datasetName and datasetUUID is required",
        ));
    }
    if !name.is_empty() && !uuid.is_empty() {
        out.push(invalid_value(
            path,
            &json!("resource"),
            "datasetName and datasetUUID can not be specified simultaneously",
        ));
    }
    if name.contains('/') {
        out.push(invalid_value(
            &child(path, "datasetName"),
            &json!(name),
            "must not contain '/'",
        ));
    }
}

/// Go's `net.SplitHostPort` accepting `host:port` (`[v6]:port` for IPv6 hosts).
fn is_host_port(pair: &str) -> bool {
    match pair.strip_prefix('[') {
        Some(rest) => rest.split_once(']').is_some_and(|(host, tail)| {
            !host.contains(']') && tail.starts_with(':') && !tail[1..].contains(':')
        }),
        None => pair.matches(':').count() == 1 && !pair.contains(['[', ']']),
    }
}

/// `validateQuobyteVolumeSource`.
fn quobyte(s: &Value, path: &str, out: &mut Vec<Cause>) {
    const PAIRS: &str = "must be a host:port pair or multiple pairs separated by commas";
    let registry = str_at(s, "registry");
    if registry.is_empty() {
        out.push(Cause::required(child(path, "registry"), PAIRS));
    } else if str_at(s, "tenant").len() >= 65 {
        out.push(Cause::required(
            child(path, "tenant"),
            "must be a UUID and may not exceed a length of 64 characters",
        ));
    } else {
        for pair in registry.split(',') {
            if !is_host_port(pair) {
                out.push(invalid_value(
                    &child(path, "registry"),
                    &json!(registry),
                    PAIRS,
                ));
            }
        }
    }
    required(s, "volume", path, out);
}

/// Go's `%#v` of a `[]string`.
fn go_strings(values: &[Value]) -> String {
    let items: Vec<String> = values
        .iter()
        .map(|v| go_quote(v.as_str().unwrap_or("")))
        .collect();
    format!("[]string{{{}}}", items.join(", "))
}

/// `validateFCVolumeSource`: target WWNs (with a LUN) or WWIDs, not both.
fn fibre_channel(s: &Value, path: &str, out: &mut Vec<Cause>) {
    let wwns = list_at(s, "targetWWNs");
    let wwids = list_at(s, "wwids");
    if wwns.is_empty() && wwids.is_empty() {
        out.push(Cause::required(
            child(path, "targetWWNs"),
            "must specify either targetWWNs or wwids, but not both",
        ));
    }
    if !wwns.is_empty() && !wwids.is_empty() {
        out.push(invalid_rendered(
            &child(path, "targetWWNs"),
            &go_strings(wwns),
            "targetWWNs and wwids can not be specified simultaneously",
        ));
    }
    if !wwns.is_empty() {
        match int_at(s, "lun") {
            None => out.push(Cause::required(
                child(path, "lun"),
                "lun is required if targetWWNs is specified",
            )),
            Some(lun) if !(0..=255).contains(&lun) => out.push(invalid_value(
                &child(path, "lun"),
                &json!(lun),
                &inclusive_range(0, 255),
            )),
            Some(_) => {}
        }
    }
}

/// `validateFlexVolumeSource`: a driver; no options in the Kubernetes namespaces.
fn flex_volume(s: &Value, path: &str, out: &mut Vec<Cause>) {
    required(s, "driver", path, out);
    let options = s.get("options").and_then(Value::as_object);
    for k in options.into_iter().flat_map(|o| o.keys()) {
        let namespace = k.split_once('/').map_or(k.as_str(), |(ns, _)| ns);
        let normalized = format!(".{}", namespace.to_lowercase());
        if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
            out.push(invalid_value(
                &key(&child(path, "options"), k),
                &json!(k),
                "kubernetes.io and k8s.io namespaces are reserved",
            ));
        }
    }
}

/// `validateAzureDisk`: name and URI, known caching mode and kind, a URI of the kind's form.
fn azure_disk(s: &Value, path: &str, out: &mut Vec<Cause>) {
    required(s, "diskName", path, out);
    required(s, "diskURI", path, out);
    if set_at(s, "cachingMode").is_some() {
        let mode = str_at(s, "cachingMode");
        if !enums::AZURE_DATA_DISK_CACHING_MODE.contains(mode) {
            out.push(enums::AZURE_DATA_DISK_CACHING_MODE.not_supported(
                child(path, "cachingMode"),
                &json!(mode),
                Order::Sorted,
            ));
        }
    }
    if set_at(s, "kind").is_none() {
        return;
    }
    let kind = str_at(s, "kind");
    if !enums::AZURE_DATA_DISK_KIND.contains(kind) {
        out.push(enums::AZURE_DATA_DISK_KIND.not_supported(
            child(path, "kind"),
            &json!(kind),
            Order::Sorted,
        ));
    }
    let uri = str_at(s, "diskURI");
    if kind == "Managed" && !uri.starts_with("/subscriptions/") {
        out.push(not_supported(
            &child(path, "diskURI"),
            &json!(uri),
            &["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"],
        ));
    }
    if kind != "Managed" && !uri.starts_with("https://") {
        out.push(not_supported(
            &child(path, "diskURI"),
            &json!(uri),
            &["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"],
        ));
    }
}

/// `validateStorageOSVolumeSource`.
fn storage_os(s: &Value, path: &str, out: &mut Vec<Cause>) {
    let name = str_at(s, "volumeName");
    if name.is_empty() {
        out.push(Cause::required(child(path, "volumeName"), ""));
    } else {
        dns_label(name, &child(path, "volumeName"), out);
    }
    let namespace = str_at(s, "volumeNamespace");
    if !namespace.is_empty() {
        dns_label(namespace, &child(path, "volumeNamespace"), out);
    }
    secret_ref_name(s, path, out);
}

/// `validateCSIVolumeSource`: the driver's name, the node publish secret's name.
fn csi(s: &Value, path: &str, out: &mut Vec<Cause>) {
    let driver = str_at(s, "driver");
    let dpath = child(path, "driver");
    if driver.is_empty() {
        out.push(Cause::required(dpath.clone(), ""));
    }
    if driver.len() > 63 {
        out.push(too_long(&dpath, 63));
    }
    for msg in dns1123_subdomain(&driver.to_lowercase()) {
        out.push(invalid_value(&dpath, &json!(driver), &msg));
    }
    if let Some(secret) = set_at(s, "nodePublishSecretRef") {
        let name = str_at(secret, "name");
        if name.is_empty() {
            out.push(Cause::required(
                child(&child(path, "nodePublishSecretRef"), "name"),
                "",
            ));
        } else {
            // Upstream reports a bad name at `csi.name`.
            for msg in validate_name(name, NameRule::Subdomain, false) {
                out.push(invalid_value(&child(path, "name"), &json!(name), &msg));
            }
        }
    }
}

/// The metadata fields of a claim template besides labels and annotations, in the order of
/// upstream's `ObjectMeta`: none may be set.
const TEMPLATE_META_FORBIDDEN: [&str; 13] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The claim of an ephemeral volume is named `<pod>-<volume>`, which must be a valid claim
/// name (skipped while either name is missing: that is refused elsewhere).
fn ephemeral_claim_name(pod: &str, volume: &str, path: &str, out: &mut Vec<Cause>) {
    if pod.is_empty() || volume.is_empty() {
        return;
    }
    let claim = format!("{pod}-{volume}");
    for msg in dns1123_subdomain(&claim) {
        out.push(invalid_value(
            &child(path, "name"),
            &json!(volume),
            &format!("PVC name {}: {msg}", go_quote(&claim)),
        ));
    }
}

/// `validateEphemeralVolumeSource`: a claim template whose metadata has only labels and
/// annotations (`ValidateTemplateObjectMeta`). The claim spec itself is the PVC strategy's.
fn ephemeral(s: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(template) = set_at(s, "volumeClaimTemplate") else {
        out.push(Cause::required(child(path, "volumeClaimTemplate"), ""));
        return;
    };
    let mpath = child(&child(path, "volumeClaimTemplate"), "metadata");
    let Some(meta) = set_at(template, "metadata") else {
        return;
    };
    if let Some(annotations) = set_at(meta, "annotations") {
        out.extend(validate_annotations(
            annotations,
            &child(&mpath, "annotations"),
        ));
    }
    if let Some(labels) = set_at(meta, "labels") {
        out.extend(validate_labels(labels, &child(&mpath, "labels")));
    }
    for field in TEMPLATE_META_FORBIDDEN {
        if !super::is_zero(meta.get(field)) {
            out.push(Cause::forbidden(child(&mpath, field), "cannot be set"));
        }
    }
}

/// A file mode field: 0 to 0777.
fn file_mode(v: &Value, field: &str, path: &str, out: &mut Vec<Cause>) {
    if let Some(mode) = int_at(v, field)
        && !(0..=0o777).contains(&mode)
    {
        out.push(invalid_value(&child(path, field), &json!(mode), FILE_MODE));
    }
}

/// `validateKeyToPath` of one item at `ipath`.
fn key_to_path(item: &Value, ipath: &str, out: &mut Vec<Cause>) {
    required(item, "key", ipath, out);
    let p = str_at(item, "path");
    if p.is_empty() {
        out.push(Cause::required(child(ipath, "path"), ""));
    }
    local_non_reserved_path(p, &child(ipath, "path"), out);
    file_mode(item, "mode", ipath, out);
}

/// `validateKeyToPath` for each of a volume source's `items`.
fn key_to_paths(source: &Value, path: &str, out: &mut Vec<Cause>) {
    for (i, item) in list_at(source, "items").iter().enumerate() {
        key_to_path(item, &index(&child(path, "items"), i), out);
    }
}

/// The pod fields a downward API volume file may read.
const VOLUME_FIELD_PATHS: [&str; 5] = [
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

/// `validateDownwardAPIVolumeFile`, reported (as upstream does) at the source's path, not the
/// item's.
fn downward_api_file(file: &Value, path: &str, out: &mut Vec<Cause>) {
    let p = str_at(file, "path");
    if p.is_empty() {
        out.push(Cause::required(child(path, "path"), ""));
    }
    local_non_reserved_path(p, &child(path, "path"), out);
    match (set_at(file, "fieldRef"), set_at(file, "resourceFieldRef")) {
        (Some(field_ref), resource_ref) => {
            validate_field_ref(
                field_ref,
                &VOLUME_FIELD_PATHS,
                &child(path, "fieldRef"),
                out,
            );
            if resource_ref.is_some() {
                out.push(invalid_value(
                    path,
                    &json!("resource"),
                    "fieldRef and resourceFieldRef can not be specified simultaneously",
                ));
            }
        }
        (None, Some(resource_ref)) => {
            validate_resource_field_ref(resource_ref, true, &child(path, "resourceFieldRef"), out);
        }
        (None, None) => out.push(Cause::required(
            path,
            "one of fieldRef and resourceFieldRef is required",
        )),
    }
    file_mode(file, "mode", path, out);
}

/// Upstream's `ServiceAccountToken` projection limits: ten minutes to 2^32 seconds.
const TOKEN_MIN_SECONDS: i64 = 10 * 60;

/// `validateProjectionSources`: one source per entry; files at distinct paths across all of
/// them.
fn projection_sources(projected: &Value, path: &str, out: &mut Vec<Cause>) {
    let mut paths: BTreeSet<String> = BTreeSet::new();
    let mut claim_path = |p: &str, shown: &Value, out: &mut Vec<Cause>| {
        if !paths.insert(p.to_string()) {
            out.push(invalid_value(path, shown, "conflicting duplicate paths"));
        }
    };
    for (i, source) in list_at(projected, "sources").iter().enumerate() {
        let spath = index(&child(path, "sources"), i);
        let mut count = 0;
        for kind in ["secret", "configMap"] {
            let Some(s) = set_at(source, kind) else {
                continue;
            };
            count += 1;
            let ppath = child(&spath, kind);
            required(s, "name", &ppath, out);
            for (j, item) in list_at(s, "items").iter().enumerate() {
                key_to_path(item, &index(&child(&ppath, "items"), j), out);
                let p = str_at(item, "path");
                if !p.is_empty() {
                    // Upstream shows the source's name for these two.
                    claim_path(p, &json!(str_at(s, "name")), out);
                }
            }
        }
        if let Some(s) = set_at(source, "downwardAPI") {
            count += 1;
            let ppath = child(&spath, "downwardAPI");
            for item in list_at(s, "items") {
                downward_api_file(item, &ppath, out);
                let p = str_at(item, "path");
                if !p.is_empty() {
                    claim_path(p, &json!(p), out);
                }
            }
        }
        if let Some(s) = set_at(source, "serviceAccountToken") {
            count += 1;
            let ppath = child(&spath, "serviceAccountToken");
            let seconds = int_at(s, "expirationSeconds").unwrap_or(0);
            if seconds < TOKEN_MIN_SECONDS {
                out.push(invalid_value(
                    &child(&ppath, "expirationSeconds"),
                    &json!(seconds),
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if seconds > 1 << 32 {
                out.push(invalid_value(
                    &child(&ppath, "expirationSeconds"),
                    &json!(seconds),
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
            // Upstream reports the token's path at the projected volume's `path`.
            let p = str_at(s, "path");
            if p.is_empty() {
                out.push(Cause::required(child(path, "path"), ""));
            } else {
                local_non_reserved_path(p, &child(path, "path"), out);
            }
        }
        if let Some(s) = set_at(source, "clusterTrustBundle") {
            count += 1;
            let ppath = child(&spath, "clusterTrustBundle");
            cluster_trust_bundle(s, &ppath, out);
            let p = str_at(s, "path");
            claim_path(p, &json!(p), out);
        }
        if let Some(s) = set_at(source, "podCertificate") {
            count += 1;
            let ppath = child(&spath, "podCertificate");
            for p in pod_certificate(s, &ppath, out) {
                claim_path(p, &json!(p), out);
            }
        }
        if count > 1 {
            out.push(Cause::forbidden(
                spath,
                "may not specify more than 1 volume type per source",
            ));
        }
    }
}

/// The `clusterTrustBundle` projection: a bundle by name or by signer (with a selector), and a
/// path.
fn cluster_trust_bundle(s: &Value, path: &str, out: &mut Vec<Cause>) {
    let name = set_at(s, "name");
    let signer = set_at(s, "signerName");
    match (name, signer) {
        (Some(_), Some(_)) => out.push(invalid_value(
            path,
            s,
            "only one of name and signerName may be used",
        )),
        (Some(name), None) => {
            if name.as_str().unwrap_or("").is_empty() {
                out.push(Cause::required(
                    child(path, "name"),
                    "must be a valid object name",
                ));
            }
            if let Some(selector) = set_at(s, "labelSelector") {
                out.push(invalid_value(
                    &child(path, "labelSelector"),
                    selector,
                    "labelSelector must be unset if name is specified",
                ));
            }
        }
        (None, Some(signer)) => {
            if signer.as_str().unwrap_or("").is_empty() {
                out.push(Cause::required(
                    child(path, "signerName"),
                    "must be a valid signer name",
                ));
            }
        }
        (None, None) => out.push(Cause::required(
            path,
            "either name or signerName must be specified",
        )),
    }
    let p = str_at(s, "path");
    if p.is_empty() {
        out.push(Cause::required(child(path, "path"), ""));
    }
    local_non_reserved_path(p, &child(path, "path"), out);
}

/// The key types kubelet can generate for a pod certificate, in upstream's order.
const POD_CERTIFICATE_KEY_TYPES: [&str; 6] = [
    "RSA3072",
    "RSA4096",
    "ECDSAP256",
    "ECDSAP384",
    "ECDSAP521",
    "ED25519",
];

/// The longest certificate lifetime a pod may ask for: 91 days, one day for the built-in
/// `kubernetes.io/` signers.
fn max_certificate_seconds(signer: &str) -> i64 {
    if signer.starts_with("kubernetes.io/") {
        24 * 3600
    } else {
        91 * 24 * 3600
    }
}

/// The `podCertificate` projection: a signer, a key type, a lifetime of at least an hour, and
/// at least one path to write to. Returns the paths it writes (for the duplicate check).
fn pod_certificate<'a>(s: &'a Value, path: &str, out: &mut Vec<Cause>) -> Vec<&'a str> {
    let signer = str_at(s, "signerName");
    if signer.is_empty() {
        out.push(Cause::required(child(path, "signerName"), ""));
    }
    let key_type = str_at(s, "keyType");
    if !POD_CERTIFICATE_KEY_TYPES.contains(&key_type) {
        out.push(not_supported(
            &child(path, "keyType"),
            &json!(key_type),
            &POD_CERTIFICATE_KEY_TYPES,
        ));
    }
    if let Some(seconds) = int_at(s, "maxExpirationSeconds") {
        let field = child(path, "maxExpirationSeconds");
        if seconds < 3600 {
            out.push(invalid_value(
                &field,
                &json!(seconds),
                "if provided, maxExpirationSeconds must be >= 3600",
            ));
        }
        let max = max_certificate_seconds(signer);
        if seconds > max {
            out.push(invalid_value(
                &field,
                &json!(seconds),
                &format!("if provided, maxExpirationSeconds must be <= {max}"),
            ));
        }
    }
    let mut written = Vec::new();
    for field in ["credentialBundlePath", "keyPath", "certificateChainPath"] {
        let p = str_at(s, field);
        if !p.is_empty() {
            local_non_reserved_path(p, &child(path, field), out);
            written.push(p);
        }
    }
    if written.is_empty() {
        out.push(Cause::required(
            path,
            "specify at least one of credentialBundlePath, keyPath, and certificateChainPath",
        ));
    }
    written
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::validation::podspec::tests::{Change, check_table};

    /// Adds a second volume `v` with the given source to a valid spec (the first stays mounted).
    macro_rules! with_volume {
        ($source:tt) => {
            |s: &mut serde_json::Value| {
                let mut v = json!($source);
                v["name"] = json!("v");
                s["volumes"].as_array_mut().expect("list").push(v);
            }
        };
    }

    #[test]
    fn in_tree_sources_need_their_fields() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                with_volume!({"hostPath": {"path": "", "type": "Bogus"}}),
                vec!["spec.volumes[1].hostPath.path: Required value"],
            ),
            (
                with_volume!({"hostPath": {"path": "/a/../b"}}),
                vec![
                    "spec.volumes[1].hostPath.path: Invalid value: \"/a/../b\": must not contain '..'",
                ],
            ),
            (
                with_volume!({"gitRepo": {"directory": "../x"}}),
                vec![
                    "spec.volumes[1].gitRepo.repository: Required value",
                    "spec.volumes[1].gitRepo.directory: Invalid value: \"../x\": must not contain '..'",
                ],
            ),
            (
                with_volume!({"gcePersistentDisk": {"partition": 256}}),
                vec![
                    "spec.volumes[1].persistentDisk.pdName: Required value",
                    "spec.volumes[1].persistentDisk.partition: Invalid value: 256: must be between 1 and 255, inclusive",
                ],
            ),
            (
                with_volume!({"awsElasticBlockStore": {"volumeID": "vol"}}),
                vec![],
            ),
            (
                with_volume!({"nfs": {"server": "s", "path": "rel"}}),
                vec!["spec.volumes[1].nfs.path: Invalid value: \"rel\": must be an absolute path"],
            ),
            (
                with_volume!({"nfs": {"server": "s"}}),
                vec![
                    "spec.volumes[1].nfs.path: Required value",
                    "spec.volumes[1].nfs.path: Invalid value: \"\": must be an absolute path",
                ],
            ),
            (
                with_volume!({"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "foo", "lun": 300, "chapAuthSession": true}}),
                vec![
                    "spec.volumes[1].iscsi.iqn: Invalid value: \"foo\": must be valid format starting with iqn, eui, or naa",
                    "spec.volumes[1].iscsi.lun: Invalid value: 300: must be between 0 and 255, inclusive",
                    "spec.volumes[1].iscsi.secretRef: Required value",
                ],
            ),
            (
                with_volume!({"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:storage", "initiatorName": "iqn.bad"}}),
                vec![
                    "spec.volumes[1].iscsi.initiatorname: Invalid value: \"iqn.bad\": must be valid format",
                ],
            ),
            (
                with_volume!({"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "eui.02004567A425678D"}}),
                vec![],
            ),
            (
                with_volume!({"glusterfs": {}}),
                vec![
                    "spec.volumes[1].glusterfs.endpoints: Required value",
                    "spec.volumes[1].glusterfs.path: Required value",
                ],
            ),
            (
                with_volume!({"flocker": {"datasetName": "a/b", "datasetUUID": "u"}}),
                vec![
                    "spec.volumes[1].flocker: Invalid value: \"resource\": datasetName and datasetUUID can not be specified simultaneously",
                    "spec.volumes[1].flocker.datasetName: Invalid value: \"a/b\": must not contain '/'",
                ],
            ),
            (
                with_volume!({"flocker": {}}),
                vec![
                    "spec.volumes[1].flocker: Required value: one of datasetName and datasetUUID is required",
                ],
            ),
            (
                with_volume!({"rbd": {"monitors": []}}),
                vec![
                    "spec.volumes[1].rbd.monitors: Required value",
                    "spec.volumes[1].rbd.image: Required value",
                ],
            ),
            (
                with_volume!({"cinder": {"volumeID": "x", "secretRef": {}}}),
                vec!["spec.volumes[1].cinder.secretRef.name: Required value"],
            ),
            (
                with_volume!({"cephfs": {}}),
                vec!["spec.volumes[1].cephfs.monitors: Required value"],
            ),
            (
                with_volume!({"quobyte": {"registry": "host", "volume": "v"}}),
                vec![
                    "spec.volumes[1].quobyte.registry: Invalid value: \"host\": must be a host:port pair or multiple pairs separated by commas",
                ],
            ),
            (
                with_volume!({"quobyte": {"registry": "a:1,[::1]:2", "volume": "v"}}),
                vec![],
            ),
            (
                with_volume!({"fc": {"targetWWNs": ["a"], "wwids": ["b"]}}),
                vec![
                    "spec.volumes[1].fc.targetWWNs: Invalid value: []string{\"a\"}: targetWWNs and wwids can not be specified simultaneously",
                    "spec.volumes[1].fc.lun: Required value: lun is required if targetWWNs is specified",
                ],
            ),
            (
                with_volume!({"fc": {}}),
                vec![
                    "spec.volumes[1].fc.targetWWNs: Required value: must specify either targetWWNs or wwids, but not both",
                ],
            ),
            (
                with_volume!({"flexVolume": {"driver": "d", "options": {"kubernetes.io/x": "y", "example.com/ok": "z"}}}),
                vec![
                    "spec.volumes[1].flexVolume.options[kubernetes.io/x]: Invalid value: \"kubernetes.io/x\": kubernetes.io and k8s.io namespaces are reserved",
                ],
            ),
            (
                with_volume!({"azureFile": {}}),
                vec![
                    "spec.volumes[1].azureFile.secretName: Required value",
                    "spec.volumes[1].azureFile.shareName: Required value",
                ],
            ),
            (
                with_volume!({"azureDisk": {"diskName": "d", "diskURI": "http://x", "kind": "Shared", "cachingMode": "Bogus"}}),
                vec![
                    "spec.volumes[1].azureDisk.cachingMode: Unsupported value: \"Bogus\": supported values: \"None\", \"ReadOnly\", \"ReadWrite\"",
                    "spec.volumes[1].azureDisk.diskURI: Unsupported value: \"http://x\": supported values: \"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd\"",
                ],
            ),
            (
                with_volume!({"vsphereVolume": {}}),
                vec!["spec.volumes[1].vsphereVolume.volumePath: Required value"],
            ),
            (
                with_volume!({"storageos": {"secretRef": {}}}),
                vec![
                    "spec.volumes[1].storageos.volumeName: Required value",
                    "spec.volumes[1].storageos.secretRef.name: Required value",
                ],
            ),
            (
                with_volume!({"scaleIO": {"gateway": "g"}}),
                vec![
                    "spec.volumes[1].scaleIO.system: Required value",
                    "spec.volumes[1].scaleIO.volumeName: Required value",
                ],
            ),
            (
                with_volume!({"csi": {"driver": "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"}}),
                vec!["spec.volumes[1].csi.driver: Too long: may not be more than 63 bytes"],
            ),
            (
                with_volume!({"csi": {"driver": "csi.example.com", "nodePublishSecretRef": {}}}),
                vec!["spec.volumes[1].csi.nodePublishSecretRef.name: Required value"],
            ),
            (
                with_volume!({"ephemeral": {"volumeClaimTemplate": {"metadata": {"name": "x", "labels": {"a": "b"}}, "spec": {}}}}),
                vec![
                    "spec.volumes[1].ephemeral.volumeClaimTemplate.metadata.name: Forbidden: cannot be set",
                ],
            ),
            (
                with_volume!({"image": {"pullPolicy": "Sometimes"}}),
                vec![
                    "spec.volumes[1].image.pullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
                ],
            ),
            (
                with_volume!({"emptyDir": {}, "downwardAPI": {}}),
                vec![
                    "spec.volumes[1].downwarAPI: Forbidden: may not specify more than 1 volume type",
                ],
            ),
            (
                with_volume!({"cephfs": {"monitors": ["m"]}, "emptyDir": {}}),
                vec!["spec.volumes[1].cephFS: Forbidden: may not specify more than 1 volume type"],
            ),
        ];
        check_table(cases, false);
    }

    #[test]
    fn an_image_volume_of_a_pod_needs_a_reference() {
        let cases: Vec<(Change, Vec<&str>)> = vec![(
            with_volume!({"image": {"pullPolicy": "IfNotPresent"}}),
            vec!["spec.volumes[1].image.reference: Required value"],
        )];
        check_table(cases, true);
    }

    #[test]
    fn downward_api_and_projected_files() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                with_volume!({"downwardAPI": {"items": [{"path": "../p", "fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}]}}),
                vec![
                    "spec.volumes[1].downwardAPI.path: Invalid value: \"../p\": must not contain '..'",
                    "spec.volumes[1].downwardAPI.fieldRef.fieldPath: Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"",
                ],
            ),
            (
                with_volume!({"downwardAPI": {"items": [{"path": "..p", "mode": 512, "resourceFieldRef": {"resource": "limits.cpu"}}]}}),
                vec![
                    "spec.volumes[1].downwardAPI.path: Invalid value: \"..p\": must not start with '..'",
                    "spec.volumes[1].downwardAPI.resourceFieldRef.containerName: Required value",
                    "spec.volumes[1].downwardAPI.mode: Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive",
                ],
            ),
            (
                with_volume!({"downwardAPI": {"items": [{"path": "p", "resourceFieldRef": {"containerName": "c", "resource": "limits.memory", "divisor": "3"}}]}}),
                vec![
                    "spec.volumes[1].downwardAPI.resourceFieldRef.divisor: Invalid value: \"limits.memory\": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource",
                ],
            ),
            (
                with_volume!({"downwardAPI": {"items": [{"path": "p"}]}}),
                vec![
                    "spec.volumes[1].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required",
                ],
            ),
            (
                with_volume!({"projected": {"sources": [
                    {"serviceAccountToken": {"path": "t", "expirationSeconds": 60}},
                    {"configMap": {"name": "c", "items": [{"key": "k", "path": "t2"}]}},
                    {"secret": {"name": "s", "items": [{"key": "k", "path": "t2"}]}}
                ]}}),
                vec![
                    "spec.volumes[1].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                    "spec.volumes[1].projected: Invalid value: \"s\": conflicting duplicate paths",
                ],
            ),
            (
                with_volume!({"projected": {"sources": [{"serviceAccountToken": {"expirationSeconds": 3600}}]}}),
                vec!["spec.volumes[1].projected.path: Required value"],
            ),
            (
                with_volume!({"projected": {"sources": [{"configMap": {"name": "c"}, "secret": {"name": "s"}}]}}),
                vec![
                    "spec.volumes[1].projected.sources[0]: Forbidden: may not specify more than 1 volume type per source",
                ],
            ),
            (
                with_volume!({"projected": {"sources": [{"downwardAPI": {"items": [
                    {"path": "a", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                    {"path": "a", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.uid"}}
                ]}}]}}),
                vec![
                    "spec.volumes[1].projected: Invalid value: \"a\": conflicting duplicate paths",
                ],
            ),
            (
                with_volume!({"projected": {"sources": [{"clusterTrustBundle": {"path": "ca.pem"}}]}}),
                vec![
                    "spec.volumes[1].projected.sources[0].clusterTrustBundle: Required value: either name or signerName must be specified",
                ],
            ),
            (
                with_volume!({"projected": {"sources": [{"podCertificate": {"signerName": "example.com/x", "keyType": "DSA", "maxExpirationSeconds": 60}}]}}),
                vec![
                    "spec.volumes[1].projected.sources[0].podCertificate.keyType: Unsupported value: \"DSA\": supported values: \"RSA3072\", \"RSA4096\", \"ECDSAP256\", \"ECDSAP384\", \"ECDSAP521\", \"ED25519\"",
                    "spec.volumes[1].projected.sources[0].podCertificate.maxExpirationSeconds: Invalid value: 60: if provided, maxExpirationSeconds must be >= 3600",
                    "spec.volumes[1].projected.sources[0].podCertificate: Required value: specify at least one of credentialBundlePath, keyPath, and certificateChainPath",
                ],
            ),
            (
                with_volume!({"projected": {"sources": [{"podCertificate": {"signerName": "kubernetes.io/x", "keyType": "ED25519", "maxExpirationSeconds": 90000, "credentialBundlePath": "creds.pem"}}]}}),
                vec![
                    "spec.volumes[1].projected.sources[0].podCertificate.maxExpirationSeconds: Invalid value: 90000: if provided, maxExpirationSeconds must be <= 86400",
                ],
            ),
        ];
        check_table(cases, false);
    }

    #[test]
    fn mounts_and_devices() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                |s| {
                    s["volumes"].as_array_mut().expect("list").push(
                        json!({"name": "claim", "persistentVolumeClaim": {"claimName": "c"}}),
                    );
                    s["containers"][0]["volumeDevices"] = json!([
                        {"name": "claim", "devicePath": "/data"},
                        {"name": "data", "devicePath": "/dev/x/../y"}
                    ]);
                },
                vec![
                    "spec.containers[0].volumeMounts[0].name: Invalid value: \"data\": must not already exist in volumeDevices",
                    "spec.containers[0].volumeMounts[0].mountPath: Invalid value: \"/data\": must not already exist as a path in volumeDevices",
                    "spec.containers[0].volumeDevices[0].devicePath: Invalid value: \"/data\": must not already exist as a path in volumeMounts",
                    "spec.containers[0].volumeDevices[1].name: Invalid value: \"data\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
                    "spec.containers[0].volumeDevices[1].devicePath: Invalid value: \"/dev/x/../y\": can not contain backsteps ('..')",
                    "spec.containers[0].volumeDevices[1].name: Invalid value: \"data\": must not already exist in volumeMounts",
                ],
            ),
            (
                |s| {
                    s["volumes"].as_array_mut().expect("list").push(
                        json!({"name": "claim", "persistentVolumeClaim": {"claimName": "c"}}),
                    );
                    s["containers"][0]["volumeDevices"] = json!([
                        {"name": "claim", "devicePath": "/dev/a"},
                        {"name": "claim", "devicePath": "/dev/a"},
                        {"name": "gone", "devicePath": ""}
                    ]);
                },
                vec![
                    "spec.containers[0].volumeDevices[1].name: Invalid value: \"claim\": must be unique",
                    "spec.containers[0].volumeDevices[1].devicePath: Invalid value: \"/dev/a\": must be unique",
                    "spec.containers[0].volumeDevices[2].name: Not found: \"gone\"",
                    "spec.containers[0].volumeDevices[2].devicePath: Required value",
                ],
            ),
            (
                |s| {
                    s["containers"][0]["volumeMounts"][0]["recursiveReadOnly"] = json!("Enabled");
                    s["containers"][0]["volumeMounts"][0]["mountPropagation"] =
                        json!("HostToContainer");
                },
                vec![
                    "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true",
                    "spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None or not specified",
                ],
            ),
            (
                |s| {
                    s["containers"][0]["volumeMounts"][0]["recursiveReadOnly"] =
                        json!("IfPossible");
                    s["containers"][0]["volumeMounts"][0]["readOnly"] = json!(true);
                },
                vec![],
            ),
            (
                |s| s["containers"][0]["volumeMounts"][0]["recursiveReadOnly"] = json!("Sometimes"),
                vec![
                    "spec.containers[0].volumeMounts.recursiveReadOnly: Unsupported value: \"Sometimes\": supported values: \"Disabled\", \"Enabled\", \"IfPossible\"",
                ],
            ),
            (
                |s| {
                    s["containers"][0]["volumeMounts"][0]["subPath"] = json!("a");
                    s["containers"][0]["volumeMounts"][0]["subPathExpr"] = json!("$(B)");
                },
                vec![
                    "spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: \"$(B)\": subPathExpr and subPath are mutually exclusive",
                ],
            ),
            (
                |s| {
                    s["volumes"].as_array_mut().expect("list").push(
                        json!({"name": "img", "image": {"reference": "r", "pullPolicy": "Always"}}),
                    );
                    s["containers"][0]["volumeMounts"]
                        .as_array_mut()
                        .expect("list")
                        .push(json!({"name": "img", "mountPath": "/img", "subPath": "x"}));
                },
                vec![
                    "spec.containers[0].volumeMounts[1].subPath: Invalid value: \"x\": not allowed in image volume sources",
                ],
            ),
        ];
        check_table(cases, false);
    }
}
