//! A PersistentVolume's volume source: exactly one, each checked as upstream's
//! `ValidatePersistentVolumeSpec` checks it (`validate*PersistentVolumeSource`,
//! `validateISCSIPersistentVolumeSource`, `validateCSIPersistentVolumeSource`, …), and the
//! mount-options annotation only some sources accept (`pkg/volume/validation`).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use crate::error::Cause;
use crate::validation::enums::{self, Order};
use crate::validation::names::{
    child, dns1123_label, dns1123_subdomain, go_quote, invalid_rendered, invalid_value,
};

/// The volume sources of a PersistentVolume in upstream's order, each with the path segment
/// its "more than 1 volume type" error names.
pub(super) const SOURCES: [(&str, &str); 22] = [
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];
/// The sources whose plugins accept mount options (`checkMountOption`).
const MOUNT_OPTION_SOURCES: [&str; 13] = [
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "nfs",
    "rbd",
    "quobyte",
    "iscsi",
    "cinder",
    "cephfs",
    "azureFile",
    "vsphereVolume",
    "azureDisk",
    "photonPersistentDisk",
];
/// The deprecated annotation carrying mount options.
const MOUNT_OPTIONS_ANNOTATION: &str = "volume.beta.kubernetes.io/mount-options";
/// Upstream's `pdPartitionErrorMsg`.
const PARTITION_RANGE: &str = "must be between 1 and 255, inclusive";
/// Upstream's range message for a LUN.
const LUN_RANGE: &str = "must be between 0 and 255, inclusive";
/// Upstream's message for an iSCSI name of no known form.
const VALID_FORMAT: &str = "must be valid format";

/// `iscsiInitiatorIqnRegex` (unanchored at the start, as upstream).
static IQN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$").ok());
/// `iscsiInitiatorEuiRegex`.
static EUI: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^eui.[[:alnum:]]{16}$").ok());
/// `iscsiInitiatorNaaRegex`.
static NAA: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^naa.[[:alnum:]]{32}$").ok());

/// The string at `field` of `v`, empty when absent.
fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The value at `field` of `v` unless absent or null.
fn set<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    v.get(field).filter(|x| !x.is_null())
}

/// The length of the list at `field` of `v`.
fn count(v: &Value, field: &str) -> usize {
    v.get(field).and_then(Value::as_array).map_or(0, Vec::len)
}

/// A `Required` cause at `path.field` when the string there is empty.
fn required(v: &Value, field: &str, path: &str, errs: &mut Vec<Cause>) {
    if text(v, field).is_empty() {
        errs.push(Cause::required(child(path, field), ""));
    }
}

/// `validatePathNoBacksteps`.
fn no_backsteps(p: &str, path: &str, errs: &mut Vec<Cause>) {
    if p.split(['/', '\\']).any(|part| part == "..") {
        errs.push(invalid_value(path, &json!(p), "must not contain '..'"));
    }
}

/// Whether `s` matches the optional regular expression.
fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// The iSCSI name format checks of upstream's PV source (the same message whatever fails).
fn iscsi_name(name: &str, path: &str, errs: &mut Vec<Cause>) {
    let bad = if name.starts_with("iqn") {
        !matches(&IQN, name)
    } else if name.starts_with("eui") {
        !matches(&EUI, name)
    } else if name.starts_with("naa") {
        !matches(&NAA, name)
    } else {
        false
    };
    if bad {
        errs.push(invalid_value(path, &json!(name), VALID_FORMAT));
    }
}

/// A partition number of a cloud disk: 0 (whole disk) to 255 as upstream checks it.
fn partition(v: &Value, path: &str, errs: &mut Vec<Cause>) {
    if let Some(p) = v.get("partition").and_then(Value::as_i64)
        && !(0..=255).contains(&p)
    {
        errs.push(invalid_value(
            &child(path, "partition"),
            &json!(p),
            PARTITION_RANGE,
        ));
    }
}

/// `validatePVSecretReference`: a name (a DNS subdomain) and a namespace (a DNS label).
fn pv_secret_reference(r: &Value, path: &str, errs: &mut Vec<Cause>) {
    for (field, check) in [
        ("name", dns1123_subdomain as fn(&str) -> Vec<String>),
        ("namespace", dns1123_label),
    ] {
        let value = text(r, field);
        let at = child(path, field);
        if value.is_empty() {
            errs.push(Cause::required(at, ""));
        } else {
            errs.extend(
                check(value)
                    .iter()
                    .map(|m| invalid_value(&at, &json!(value), m)),
            );
        }
    }
}

/// `validateISCSIPersistentVolumeSource` (`pv_name` for the portal length rule).
fn iscsi(s: &Value, pv_name: &str, path: &str, errs: &mut Vec<Cause>) {
    let portal = text(s, "targetPortal");
    if portal.is_empty() {
        errs.push(Cause::required(child(path, "targetPortal"), ""));
    }
    let initiator = set(s, "initiatorName").map(|i| i.as_str().unwrap_or(""));
    if initiator.is_some() && pv_name.len() + 1 + portal.len() > 64 {
        errs.push(invalid_value(
            &child(path, "targetportal"),
            &json!(portal),
            "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
        ));
    }
    let iqn = text(s, "iqn");
    if iqn.is_empty() {
        errs.push(Cause::required(child(path, "iqn"), ""));
    } else if !["iqn", "eui", "naa"].iter().any(|p| iqn.starts_with(p)) {
        errs.push(invalid_value(
            &child(path, "iqn"),
            &json!(iqn),
            VALID_FORMAT,
        ));
    } else {
        iscsi_name(iqn, &child(path, "iqn"), errs);
    }
    if let Some(lun) = s.get("lun").and_then(Value::as_i64)
        && !(0..=255).contains(&lun)
    {
        errs.push(invalid_value(&child(path, "lun"), &json!(lun), LUN_RANGE));
    }
    let chap = |f: &str| s.get(f).and_then(Value::as_bool).unwrap_or(false);
    let secret = set(s, "secretRef");
    if (chap("chapAuthDiscovery") || chap("chapAuthSession")) && secret.is_none() {
        errs.push(Cause::required(child(path, "secretRef"), ""));
    }
    if let Some(secret) = secret {
        required(secret, "name", &child(path, "secretRef"), errs);
    }
    if let Some(initiator) = initiator {
        let at = child(path, "initiatorname");
        if !["iqn", "eui", "naa"]
            .iter()
            .any(|p| initiator.starts_with(p))
        {
            errs.push(invalid_value(&at, &json!(initiator), VALID_FORMAT));
        }
        iscsi_name(initiator, &at, errs);
    }
}

/// `validateFCVolumeSource`.
fn fc(s: &Value, path: &str, errs: &mut Vec<Cause>) {
    let (wwns, wwids) = (count(s, "targetWWNs"), count(s, "wwids"));
    if wwns == 0 && wwids == 0 {
        errs.push(Cause::required(
            child(path, "targetWWNs"),
            "must specify either targetWWNs or wwids, but not both",
        ));
    }
    if wwns != 0 && wwids != 0 {
        let list: Vec<String> = s
            .get("targetWWNs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|w| go_quote(w.as_str().unwrap_or("")))
            .collect();
        errs.push(invalid_rendered(
            &child(path, "targetWWNs"),
            &format!("[]string{{{}}}", list.join(", ")),
            "targetWWNs and wwids can not be specified simultaneously",
        ));
    }
    if wwns != 0 {
        match s.get("lun").and_then(Value::as_i64) {
            None => errs.push(Cause::required(
                child(path, "lun"),
                "lun is required if targetWWNs is specified",
            )),
            Some(lun) if !(0..=255).contains(&lun) => {
                errs.push(invalid_value(&child(path, "lun"), &json!(lun), LUN_RANGE));
            }
            Some(_) => {}
        }
    }
}

/// `validateQuobyteVolumeSource`.
fn quobyte(s: &Value, path: &str, errs: &mut Vec<Cause>) {
    const PAIRS: &str = "must be a host:port pair or multiple pairs separated by commas";
    let registry = text(s, "registry");
    if registry.is_empty() {
        errs.push(Cause::required(child(path, "registry"), PAIRS));
    } else if text(s, "tenant").len() >= 65 {
        errs.push(Cause::required(
            child(path, "tenant"),
            "must be a UUID and may not exceed a length of 64 characters",
        ));
    } else {
        for pair in registry.split(',') {
            if !host_port(pair) {
                errs.push(invalid_value(
                    &child(path, "registry"),
                    &json!(registry),
                    PAIRS,
                ));
            }
        }
    }
    required(s, "volume", path, errs);
}

/// Whether Go's `net.SplitHostPort` accepts `s`: `host:port` or `[host]:port`, one colon
/// outside brackets.
fn host_port(s: &str) -> bool {
    let Some(colon) = s.rfind(':') else {
        return false;
    };
    let host = &s[..colon];
    if let Some(inner) = host.strip_prefix('[') {
        let Some(end) = inner.find(']') else {
            return false;
        };
        return end + 1 == inner.len() && !inner[..end].contains('[');
    }
    !host.contains(':') && !host.contains('[') && !host.contains(']') && !s[colon..].contains(']')
}

/// `validateFlockerVolumeSource`.
fn flocker(s: &Value, path: &str, errs: &mut Vec<Cause>) {
    let (name, uuid) = (text(s, "datasetName"), text(s, "datasetUUID"));
    if name.is_empty() && uuid.is_empty() {
        errs.push(Cause::required(
            path,
            "one of datasetName and datasetUUID is required",
        ));
    }
    if !name.is_empty() && !uuid.is_empty() {
        errs.push(invalid_value(
            path,
            &json!("resource"),
            "datasetName and datasetUUID can not be specified simultaneously",
        ));
    }
    if name.contains('/') {
        errs.push(invalid_value(
            &child(path, "datasetName"),
            &json!(name),
            "must not contain '/'",
        ));
    }
}

/// `validateFlexPersistentVolumeSource`: a driver, and options outside Kubernetes' namespaces.
fn flex(s: &Value, path: &str, errs: &mut Vec<Cause>) {
    required(s, "driver", path, errs);
    let mut keys: Vec<&String> = s
        .get("options")
        .and_then(Value::as_object)
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    keys.sort();
    for k in keys {
        let namespace = k.split_once('/').map_or(k.as_str(), |(ns, _)| ns);
        let normalized = format!(".{}", namespace.to_lowercase());
        if normalized.ends_with(".kubernetes.io") || normalized.ends_with(".k8s.io") {
            errs.push(invalid_value(
                &format!("{path}.options[{k}]"),
                &json!(k),
                "kubernetes.io and k8s.io namespaces are reserved",
            ));
        }
    }
}

/// `validateAzureDisk`.
fn azure_disk(s: &Value, path: &str, errs: &mut Vec<Cause>) {
    required(s, "diskName", path, errs);
    required(s, "diskURI", path, errs);
    if let Some(mode) = set(s, "cachingMode")
        && !enums::AZURE_DATA_DISK_CACHING_MODE.contains(mode.as_str().unwrap_or(""))
    {
        errs.push(enums::AZURE_DATA_DISK_CACHING_MODE.not_supported(
            child(path, "cachingMode"),
            mode,
            Order::Sorted,
        ));
    }
    let kind = set(s, "kind").map(|k| k.as_str().unwrap_or(""));
    if let Some(k) = kind
        && !enums::AZURE_DATA_DISK_KIND.contains(k)
    {
        errs.push(enums::AZURE_DATA_DISK_KIND.not_supported(
            child(path, "kind"),
            &json!(k),
            Order::Sorted,
        ));
    }
    let uri = text(s, "diskURI");
    let uri_path = child(path, "diskURI");
    match kind {
        Some("Managed") if !uri.starts_with("/subscriptions/") => {
            errs.push(Cause::not_supported(
                uri_path,
                &json!(uri),
                &[json!("/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}")],
            ));
        }
        Some(k) if k != "Managed" && !uri.starts_with("https://") => {
            errs.push(Cause::not_supported(
                uri_path,
                &json!(uri),
                &[json!(
                    "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"
                )],
            ));
        }
        _ => {}
    }
}

/// `validateStorageOSPersistentVolumeSource`.
fn storageos(s: &Value, path: &str, errs: &mut Vec<Cause>) {
    let name = text(s, "volumeName");
    let at = child(path, "volumeName");
    if name.is_empty() {
        errs.push(Cause::required(at, ""));
    } else {
        errs.extend(
            dns1123_label(name)
                .iter()
                .map(|m| invalid_value(&at, &json!(name), m)),
        );
    }
    let namespace = text(s, "volumeNamespace");
    if !namespace.is_empty() {
        let at = child(path, "volumeNamespace");
        errs.extend(
            dns1123_label(namespace)
                .iter()
                .map(|m| invalid_value(&at, &json!(namespace), m)),
        );
    }
    if let Some(secret) = set(s, "secretRef") {
        let at = child(path, "secretRef");
        required(secret, "name", &at, errs);
        required(secret, "namespace", &at, errs);
    }
}

/// `validateCSIPersistentVolumeSource`.
fn csi(s: &Value, path: &str, errs: &mut Vec<Cause>) {
    errs.extend(crate::kinds::storage::csi_driver_name(
        text(s, "driver"),
        &child(path, "driver"),
    ));
    required(s, "volumeHandle", path, errs);
    for field in [
        "controllerPublishSecretRef",
        "controllerExpandSecretRef",
        "nodePublishSecretRef",
        "nodeExpandSecretRef",
    ] {
        if let Some(r) = set(s, field) {
            pv_secret_reference(r, &child(path, field), errs);
        }
    }
}

/// The checks of one source (`name` as the spec names it) at `path`.
fn validate_source(name: &str, s: &Value, pv_name: &str, path: &str, errs: &mut Vec<Cause>) {
    match name {
        "hostPath" => {
            let p = text(s, "path");
            if p.is_empty() {
                errs.push(Cause::required(child(path, "path"), ""));
                return;
            }
            no_backsteps(p, &child(path, "path"), errs);
            if let Some(t) = set(s, "type")
                && !enums::HOST_PATH_TYPE.contains(t.as_str().unwrap_or(""))
            {
                errs.push(enums::HOST_PATH_TYPE.not_supported(
                    child(path, "type"),
                    t,
                    Order::Sorted,
                ));
            }
        }
        "gcePersistentDisk" => {
            // Upstream names this source `persistentDisk` in its paths.
            let path = "spec.persistentDisk";
            required(s, "pdName", path, errs);
            partition(s, path, errs);
        }
        "awsElasticBlockStore" => {
            required(s, "volumeID", path, errs);
            partition(s, path, errs);
        }
        "glusterfs" => {
            required(s, "endpoints", path, errs);
            required(s, "path", path, errs);
            if let Some(ns) = set(s, "endpointsNamespace") {
                let ns = ns.as_str().unwrap_or("");
                let at = child(path, "endpointsNamespace");
                if ns.is_empty() {
                    errs.push(invalid_value(
                        &at,
                        &json!(ns),
                        "if the endpointnamespace is set, it must be a valid namespace name",
                    ));
                } else {
                    errs.extend(
                        dns1123_label(ns)
                            .iter()
                            .map(|m| invalid_value(&at, &json!(ns), m)),
                    );
                }
            }
        }
        "flocker" => flocker(s, path, errs),
        "nfs" => {
            required(s, "server", path, errs);
            required(s, "path", path, errs);
            let p = text(s, "path");
            if !p.starts_with('/') {
                errs.push(invalid_value(
                    &child(path, "path"),
                    &json!(p),
                    "must be an absolute path",
                ));
            }
        }
        "rbd" => {
            if count(s, "monitors") == 0 {
                errs.push(Cause::required(child(path, "monitors"), ""));
            }
            required(s, "image", path, errs);
        }
        "quobyte" => quobyte(s, path, errs),
        "cephfs" if count(s, "monitors") == 0 => {
            errs.push(Cause::required(child(path, "monitors"), ""));
        }
        "iscsi" => iscsi(s, pv_name, path, errs),
        "cinder" => {
            required(s, "volumeID", path, errs);
            if let Some(secret) = set(s, "secretRef") {
                let at = child(path, "secretRef");
                required(secret, "name", &at, errs);
                required(secret, "namespace", &at, errs);
            }
        }
        "fc" => fc(s, path, errs),
        "flexVolume" => flex(s, path, errs),
        "azureFile" => {
            required(s, "secretName", path, errs);
            required(s, "shareName", path, errs);
            if set(s, "secretNamespace").is_some() {
                required(s, "secretNamespace", path, errs);
            }
        }
        "vsphereVolume" => required(s, "volumePath", path, errs),
        "photonPersistentDisk" => required(s, "pdID", path, errs),
        "portworxVolume" => required(s, "volumeID", path, errs),
        "azureDisk" => azure_disk(s, path, errs),
        "scaleIO" => {
            required(s, "gateway", path, errs);
            required(s, "system", path, errs);
            required(s, "volumeName", path, errs);
        }
        "local" => {
            let p = text(s, "path");
            if p.is_empty() {
                errs.push(Cause::required(child(path, "path"), ""));
            } else {
                no_backsteps(p, &child(path, "path"), errs);
            }
        }
        "storageos" => storageos(s, path, errs),
        "csi" => csi(s, path, errs),
        _ => {}
    }
}

/// Upstream's source checks of `ValidatePersistentVolumeSpec`, in its order: at most one
/// source (a second one is forbidden, FlexVolume never is), each checked, a local volume
/// requiring node affinity (`affinity_set`), at least one.
pub(super) fn validate(spec: &Value, pv_name: &str, affinity_set: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut sources = 0;
    for (name, forbidden_name) in SOURCES {
        let Some(s) = set(spec, name) else {
            continue;
        };
        if sources > 0 && name != "flexVolume" {
            errs.push(Cause::forbidden(
                format!("spec.{forbidden_name}"),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        sources += 1;
        validate_source(name, s, pv_name, &format!("spec.{name}"), &mut errs);
        if name == "local" && !affinity_set {
            errs.push(Cause::required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    if sources == 0 {
        errs.push(Cause::required("spec", "must specify a volume type"));
    }
    errs
}

/// `checkMountOption`: the mount-options annotation is forbidden unless the source supports
/// mount options.
pub(super) fn mount_options(obj: &Value) -> Option<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    if MOUNT_OPTION_SOURCES.iter().any(|s| set(spec, s).is_some()) {
        return None;
    }
    crate::meta::path(obj, "metadata.annotations")
        .and_then(|a| a.get(MOUNT_OPTIONS_ANNOTATION))
        .map(|_| {
            Cause::forbidden(
                format!("metadata.annotations.{MOUNT_OPTIONS_ANNOTATION}"),
                "may not specify mount options for this volume type",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    #[test]
    fn each_source_needs_what_upstream_needs() {
        let table: &[(Value, &[&str])] = &[
            (
                json!({"hostPath": {"path": "/a/../b"}}),
                &["spec.hostPath.path: Invalid value: \"/a/../b\": must not contain '..'"],
            ),
            (
                json!({"gcePersistentDisk": {"partition": 300}}),
                &[
                    "spec.persistentDisk.pdName: Required value",
                    "spec.persistentDisk.partition: Invalid value: 300: must be between 1 and 255, inclusive",
                ],
            ),
            (json!({"awsElasticBlockStore": {"volumeID": "v"}}), &[]),
            (
                json!({"glusterfs": {"endpoints": "e", "path": "p", "endpointsNamespace": ""}}),
                &[
                    "spec.glusterfs.endpointsNamespace: Invalid value: \"\": if the endpointnamespace is set, it must be a valid namespace name",
                ],
            ),
            (
                json!({"flocker": {"datasetName": "a/b", "datasetUUID": "u"}}),
                &[
                    "spec.flocker: Invalid value: \"resource\": datasetName and datasetUUID can not be specified simultaneously",
                    "spec.flocker.datasetName: Invalid value: \"a/b\": must not contain '/'",
                ],
            ),
            (
                json!({"nfs": {"server": "s", "path": "rel"}}),
                &["spec.nfs.path: Invalid value: \"rel\": must be an absolute path"],
            ),
            (
                json!({"rbd": {}}),
                &[
                    "spec.rbd.monitors: Required value",
                    "spec.rbd.image: Required value",
                ],
            ),
            (
                json!({"quobyte": {"registry": "host", "volume": "v"}}),
                &[
                    "spec.quobyte.registry: Invalid value: \"host\": must be a host:port pair or multiple pairs separated by commas",
                ],
            ),
            (
                json!({"quobyte": {"registry": "h:1,[::1]:2", "volume": "v"}}),
                &[],
            ),
            (
                json!({"cephfs": {}}),
                &["spec.cephfs.monitors: Required value"],
            ),
            (
                json!({"iscsi": {"targetPortal": "p", "iqn": "iqn.2001-04.com.example:storage", "lun": 256, "chapAuthSession": true}}),
                &[
                    "spec.iscsi.lun: Invalid value: 256: must be between 0 and 255, inclusive",
                    "spec.iscsi.secretRef: Required value",
                ],
            ),
            (
                json!({"iscsi": {"targetPortal": "p", "iqn": "foo"}}),
                &["spec.iscsi.iqn: Invalid value: \"foo\": must be valid format"],
            ),
            (
                json!({"iscsi": {"targetPortal": "p", "iqn": "eui.02004567A425678D", "initiatorName": "bad"}}),
                &["spec.iscsi.initiatorname: Invalid value: \"bad\": must be valid format"],
            ),
            (
                json!({"cinder": {"volumeID": "v", "secretRef": {"name": "s"}}}),
                &["spec.cinder.secretRef.namespace: Required value"],
            ),
            (
                json!({"fc": {"targetWWNs": ["a"]}}),
                &["spec.fc.lun: Required value: lun is required if targetWWNs is specified"],
            ),
            (
                json!({"fc": {}}),
                &[
                    "spec.fc.targetWWNs: Required value: must specify either targetWWNs or wwids, but not both",
                ],
            ),
            (
                json!({"flexVolume": {"driver": "d", "options": {"foo.k8s.io/x": "1"}}}),
                &[
                    "spec.flexVolume.options[foo.k8s.io/x]: Invalid value: \"foo.k8s.io/x\": kubernetes.io and k8s.io namespaces are reserved",
                ],
            ),
            (
                json!({"azureFile": {"secretName": "s", "shareName": "x", "secretNamespace": ""}}),
                &["spec.azureFile.secretNamespace: Required value"],
            ),
            (
                json!({"vsphereVolume": {}}),
                &["spec.vsphereVolume.volumePath: Required value"],
            ),
            (
                json!({"photonPersistentDisk": {}}),
                &["spec.photonPersistentDisk.pdID: Required value"],
            ),
            (
                json!({"portworxVolume": {}}),
                &["spec.portworxVolume.volumeID: Required value"],
            ),
            (
                json!({"azureDisk": {"diskName": "d", "diskURI": "/x", "kind": "Shared", "cachingMode": "Fast"}}),
                &[
                    "spec.azureDisk.cachingMode: Unsupported value: \"Fast\": supported values: \"None\", \"ReadOnly\", \"ReadWrite\"",
                    "spec.azureDisk.diskURI: Unsupported value: \"/x\": supported values: \"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd\"",
                ],
            ),
            (
                json!({"scaleIO": {"gateway": "g"}}),
                &[
                    "spec.scaleIO.system: Required value",
                    "spec.scaleIO.volumeName: Required value",
                ],
            ),
            (
                json!({"storageos": {"volumeName": "Bad_Name"}}),
                &[
                    "spec.storageos.volumeName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                ],
            ),
            (
                json!({"csi": {"driver": "d.example.com", "volumeHandle": "h", "nodePublishSecretRef": {"name": "s"}}}),
                &["spec.csi.nodePublishSecretRef.namespace: Required value"],
            ),
            (
                json!({"local": {"path": "/mnt"}}),
                &["spec.nodeAffinity: Required value: Local volume requires node affinity"],
            ),
            (
                json!({"hostPath": {"path": "/a"}, "cephfs": {"monitors": ["m"]}, "flexVolume": {"driver": "d"}}),
                &["spec.cephFS: Forbidden: may not specify more than 1 volume type"],
            ),
        ];
        for (spec, want) in table {
            assert_eq!(summaries(&validate(spec, "pv", false)), *want, "{spec}");
        }
        let local = json!({"local": {"path": "/mnt"}});
        assert!(validate(&local, "pv", true).is_empty());
        let long = json!({"iscsi": {"targetPortal": "x".repeat(62), "iqn": "naa.1", "initiatorName": "iqn.2001-04.com.example:a"}});
        assert_eq!(
            summaries(&validate(&long, "pv", true)),
            [
                format!(
                    "spec.iscsi.targetportal: Invalid value: \"{}\": Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
                    "x".repeat(62)
                ),
                "spec.iscsi.iqn: Invalid value: \"naa.1\": must be valid format".to_string(),
            ]
        );
    }

    #[test]
    fn mount_options_only_where_supported() {
        let pv = |source: Value| json!({"metadata": {"annotations": {MOUNT_OPTIONS_ANNOTATION: "ro"}}, "spec": source});
        assert_eq!(
            mount_options(&pv(json!({"hostPath": {"path": "/"}}))).map(|c| c.summary()),
            Some("metadata.annotations.volume.beta.kubernetes.io/mount-options: Forbidden: may not specify mount options for this volume type".to_string())
        );
        assert!(mount_options(&pv(json!({"nfs": {"server": "s", "path": "/"}}))).is_none());
    }
}
