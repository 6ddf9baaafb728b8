//! The persistent volume controller, a provisioner and the storage protection controllers.
//!
//! * A new PersistentVolume becomes `Available`; a claim binds to the smallest Available volume
//!   that fits it (class, access modes, volume mode, size, label selector) or to the volume it
//!   names, with upstream's bind annotations, `claimRef` and both objects' `Bound` status.
//! * A claim no volume fits, whose StorageClass has a provisioner (anything but
//!   `kubernetes.io/no-provisioner`), gets a volume provisioned for it: `pvc-<claim uid>`, a
//!   `hostPath` under `/var/lib/korral/volumes` on the simulated node (as kind's local-path
//!   provisioner makes them), the class's reclaim policy and mount options. A class with
//!   `volumeBindingMode: WaitForFirstConsumer` waits until a scheduled Pod uses the claim.
//! * A bound volume whose claim is gone is deleted (reclaim policy `Delete`) or `Released`
//!   (`Retain`); a bound claim whose volume is gone is `Lost`.
//! * Claims and volumes carry upstream's protection finalizers (the `StorageObjectInUseProtection`
//!   admission plugin adds them on simulating servers); a claim being deleted keeps its
//!   finalizer while a running Pod uses it, a volume being deleted while it is bound.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::access::{self, Actor};
use super::pods::NODE_NAME;
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::quantity::Quantity;
use crate::registry::ResourceInfo;
use crate::storage::{Object, collection_prefix, object_key};

/// The finalizer that keeps a claim while Pods use it.
pub const CLAIM_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// The finalizer that keeps a volume while a claim is bound to it.
pub const VOLUME_PROTECTION: &str = "kubernetes.io/pv-protection";
/// The provisioner of classes whose volumes are made by hand.
const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// Where provisioned volumes live on the simulated node.
const VOLUME_ROOT: &str = "/var/lib/korral/volumes";

/// The stored PersistentVolume `name`.
fn volume(objects: &Objects, name: &str) -> Option<Object> {
    objects
        .storage()
        .get(&object_key("", "persistentvolumes", None, name))
}

/// The stored StorageClass `name`.
fn class(objects: &Objects, name: &str) -> Option<Object> {
    objects
        .storage()
        .get(&object_key("storage.k8s.io", "storageclasses", None, name))
}

/// A string at `path` of `obj` (empty when unset).
fn text<'a>(obj: &'a Value, path: &str) -> &'a str {
    meta::path(obj, path).and_then(Value::as_str).unwrap_or("")
}

/// The storage a claim requests or a volume holds.
fn storage_at(obj: &Value, path: &str) -> Option<Quantity> {
    meta::path(obj, path)
        .and_then(Value::as_str)
        .and_then(|q| Quantity::parse(q).ok())
}

/// The strings of an array at `path`.
fn strings<'a>(obj: &'a Value, path: &str) -> Vec<&'a str> {
    meta::path(obj, path)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The claims a Pod's volumes name.
pub fn claims_of(pod: &Value) -> Vec<String> {
    meta::path(pod, "spec.volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            if let Some(claim) = meta::path(v, "persistentVolumeClaim.claimName") {
                return claim.as_str().map(str::to_string);
            }
            // A generic ephemeral volume's claim is `<pod>-<volume>`.
            v.get("ephemeral")
                .filter(|e| !e.is_null())
                .map(|_| format!("{}-{}", meta::name(pod), text(v, "name")))
        })
        .collect()
}

/// Whether a Pod has finished (`Succeeded` or `Failed`).
fn finished(pod: &Value) -> bool {
    matches!(text(pod, "status.phase"), "Succeeded" | "Failed")
}

/// The scheduled Pods of `ns` that use claim `name` and have not finished (being deleted
/// counts: the kubelet still holds the volume until the Pod is gone).
fn users(objects: &Objects, ns: &str, name: &str) -> Vec<Object> {
    access::list(objects, "", "pods", ns)
        .into_iter()
        .filter(|p| !finished(p) && !text(p, "spec.nodeName").is_empty())
        .filter(|p| claims_of(p).iter().any(|c| c == name))
        .collect()
}

/// Removes `finalizer` from `obj` as `actor` (a write of the main resource).
async fn drop_finalizer(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    obj: &Value,
    finalizer: &str,
) -> Result<(), ApiError> {
    if !meta::finalizers(obj).iter().any(|f| f == finalizer) {
        return Ok(());
    }
    let mut next = obj.clone();
    if let Some(list) = next
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        list.retain(|f| f.as_str() != Some(finalizer));
    }
    match access::replace(objects, actor, info, next).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Sets annotations on `obj` (a copy to write).
fn annotate(obj: &mut Value, pairs: &[(&str, &str)]) {
    let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = md
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    if let Some(map) = annotations.as_object_mut() {
        for (k, v) in pairs {
            map.insert((*k).to_string(), json!(v));
        }
    }
}

/// The claims waiting for a volume (`(namespace, name)`): unbound and not being deleted. A
/// volume that becomes available may fit one (upstream's controller finds it on its 15 s
/// resync; here the volume's event queues them at once).
pub fn unbound_claims(objects: &Objects) -> Vec<(String, String)> {
    access::list_all(objects, "", "persistentvolumeclaims")
        .iter()
        .filter(|c| {
            meta::path(c, "spec.volumeName")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
                && !meta::is_deleting(c)
        })
        .map(|c| {
            (
                meta::namespace(c).unwrap_or_default().to_string(),
                meta::name(c).to_string(),
            )
        })
        .collect()
}

/// Reconciles one claim: protection on deletion, binding, provisioning.
pub async fn reconcile_claim(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    let Some(claim) = access::get(objects, "", "persistentvolumeclaims", ns, name) else {
        return Ok(());
    };
    let info = access::info(objects, "", "v1", "persistentvolumeclaims")?;
    if meta::is_deleting(&claim) {
        if users(objects, ns, name).is_empty() {
            drop_finalizer(
                objects,
                Actor::PvcProtection,
                &info,
                &claim,
                CLAIM_PROTECTION,
            )
            .await?;
        }
        return Ok(());
    }
    let bound_to = text(&claim, "spec.volumeName").to_string();
    if text(&claim, "status.phase") == "Bound" {
        if volume(objects, &bound_to).is_none() {
            return access::update_status(objects, Actor::VolumeBinder, &info, &claim, |c| {
                c["status"]["phase"] = json!("Lost");
            })
            .await;
        }
        return Ok(());
    }
    if !bound_to.is_empty() {
        return match volume(objects, &bound_to) {
            Some(pv) if claim_ref_allows(&pv, &claim) => bind(objects, &claim, &pv, false).await,
            _ => Ok(()),
        };
    }
    let class_name = text(&claim, "spec.storageClassName").to_string();
    let storage_class = (!class_name.is_empty())
        .then(|| class(objects, &class_name))
        .flatten();
    let wait_for_consumer = storage_class
        .as_ref()
        .is_some_and(|c| text(c, "volumeBindingMode") == "WaitForFirstConsumer");
    if wait_for_consumer && users(objects, ns, name).is_empty() {
        return Ok(());
    }
    if let Some(pv) = best_fit(objects, &claim) {
        return bind(objects, &claim, &pv, true).await;
    }
    let Some(storage_class) = storage_class else {
        return Ok(());
    };
    let provisioner = text(&storage_class, "provisioner").to_string();
    let has_selector = meta::path(&claim, "spec.selector").is_some_and(|s| !s.is_null());
    if provisioner.is_empty() || provisioner == NO_PROVISIONER || has_selector {
        return Ok(());
    }
    provision(
        objects,
        &info,
        &claim,
        &storage_class,
        &provisioner,
        wait_for_consumer,
    )
    .await
}

/// Whether a volume's `claimRef` (if any) names this claim.
fn claim_ref_allows(pv: &Value, claim: &Value) -> bool {
    match pv.pointer("/spec/claimRef").filter(|r| !r.is_null()) {
        None => true,
        Some(r) => {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
            s("name") == meta::name(claim)
                && s("namespace") == meta::namespace(claim).unwrap_or("")
                && (s("uid").is_empty() || s("uid") == meta::uid(claim))
        }
    }
}

/// The smallest Available volume that fits the claim (upstream's `FindMatchingVolume`):
/// pre-bound to it or unclaimed, same class, the access modes it asks for, the same volume
/// mode, enough storage, and labels its selector matches.
fn best_fit(objects: &Objects, claim: &Value) -> Option<Object> {
    let wanted = storage_at(claim, "spec.resources.requests.storage")?;
    let class = text(claim, "spec.storageClassName");
    let modes = strings(claim, "spec.accessModes");
    let mode = match text(claim, "spec.volumeMode") {
        "" => "Filesystem",
        m => m,
    };
    let selector = meta::path(claim, "spec.selector")
        .filter(|s| !s.is_null())
        .map(crate::selector::from_label_selector_json);
    let snapshot = objects.storage().snapshot();
    let prefix = collection_prefix("", "persistentvolumes", None);
    snapshot
        .range(&prefix, None)
        .map(|(_, pv)| pv.clone())
        .filter(|pv| {
            let pv_mode = match text(pv, "spec.volumeMode") {
                "" => "Filesystem",
                m => m,
            };
            let pv_modes = strings(pv, "spec.accessModes");
            let selected = match &selector {
                None => true,
                Some(Ok(s)) => {
                    s.matches(meta::path(pv, "metadata.labels").and_then(Value::as_object))
                }
                Some(Err(_)) => false,
            };
            !meta::is_deleting(pv)
                && text(pv, "status.phase") == "Available"
                && claim_ref_allows(pv, claim)
                && text(pv, "spec.storageClassName") == class
                && modes.iter().all(|m| pv_modes.contains(m))
                && pv_mode == mode
                && selected
                && storage_at(pv, "spec.capacity.storage").is_some_and(|c| c.cmp(&wanted).is_ge())
        })
        .min_by(|a, b| {
            let size = |pv: &Value| storage_at(pv, "spec.capacity.storage");
            match (size(a), size(b)) {
                (Some(x), Some(y)) => x.cmp(&y),
                _ => std::cmp::Ordering::Equal,
            }
        })
}

/// Binds a claim and a volume as upstream's controller does: the volume's `claimRef` and
/// `Bound` phase first, then the claim's `volumeName` with the bind annotations and its `Bound`
/// status (access modes and capacity of the volume).
async fn bind(
    objects: &Objects,
    claim: &Value,
    pv: &Value,
    by_controller: bool,
) -> Result<(), ApiError> {
    let pv_info = access::info(objects, "", "v1", "persistentvolumes")?;
    let claim_info = access::info(objects, "", "v1", "persistentvolumeclaims")?;
    let claim_ref = json!({
        "kind": "PersistentVolumeClaim",
        "namespace": meta::namespace(claim),
        "name": meta::name(claim),
        "uid": meta::uid(claim),
        "apiVersion": "v1",
        "resourceVersion": meta::resource_version(claim),
    });
    let mut pv = pv.clone();
    if pv.pointer("/spec/claimRef") != Some(&claim_ref) {
        pv["spec"]["claimRef"] = claim_ref;
        if by_controller {
            annotate(&mut pv, &[("pv.kubernetes.io/bound-by-controller", "yes")]);
        }
        pv = access::replace(objects, Actor::VolumeBinder, &pv_info, pv)
            .await?
            .as_ref()
            .clone();
    }
    access::update_status(objects, Actor::VolumeBinder, &pv_info, &pv, |pv| {
        pv["status"]["phase"] = json!("Bound");
    })
    .await?;
    let mut claim = claim.clone();
    claim["spec"]["volumeName"] = json!(meta::name(&pv));
    let mut marks = vec![("pv.kubernetes.io/bind-completed", "yes")];
    if by_controller {
        marks.push(("pv.kubernetes.io/bound-by-controller", "yes"));
    }
    annotate(&mut claim, &marks);
    let claim = access::replace(objects, Actor::VolumeBinder, &claim_info, claim).await?;
    let modes = pv
        .pointer("/spec/accessModes")
        .cloned()
        .unwrap_or(json!([]));
    let capacity = pv.pointer("/spec/capacity").cloned().unwrap_or(json!({}));
    access::update_status(
        objects,
        Actor::VolumeBinder,
        &claim_info,
        &claim,
        move |c| {
            c["status"]["phase"] = json!("Bound");
            c["status"]["accessModes"] = modes.clone();
            c["status"]["capacity"] = capacity.clone();
        },
    )
    .await
}

/// Provisions a volume for a claim (the external provisioner's part) and binds them.
async fn provision(
    objects: &Objects,
    claim_info: &Arc<ResourceInfo>,
    claim: &Value,
    storage_class: &Value,
    provisioner: &str,
    on_node: bool,
) -> Result<(), ApiError> {
    // The controller hands the claim to the provisioner (and, for a waiting class, the
    // scheduler names the node): upstream's annotations.
    let mut marked = claim.clone();
    let mut marks = vec![
        ("volume.beta.kubernetes.io/storage-provisioner", provisioner),
        ("volume.kubernetes.io/storage-provisioner", provisioner),
    ];
    if on_node {
        marks.push(("volume.kubernetes.io/selected-node", NODE_NAME));
    }
    annotate(&mut marked, &marks);
    let claim = if marked == *claim {
        claim.clone()
    } else {
        access::replace(objects, Actor::VolumeBinder, claim_info, marked)
            .await?
            .as_ref()
            .clone()
    };
    let pv_info = access::info(objects, "", "v1", "persistentvolumes")?;
    let name = format!("pvc-{}", meta::uid(&claim));
    if let Some(existing) = volume(objects, &name) {
        return bind(objects, &claim, &existing, false).await;
    }
    let mut spec = json!({
        "capacity": {"storage": text(&claim, "spec.resources.requests.storage")},
        "accessModes": meta::path(&claim, "spec.accessModes").cloned().unwrap_or(json!(["ReadWriteOnce"])),
        "claimRef": {
            "kind": "PersistentVolumeClaim",
            "namespace": meta::namespace(&claim),
            "name": meta::name(&claim),
            "uid": meta::uid(&claim),
            "apiVersion": "v1",
            "resourceVersion": meta::resource_version(&claim),
        },
        "persistentVolumeReclaimPolicy": match text(storage_class, "reclaimPolicy") {
            "" => "Delete",
            policy => policy,
        },
        "storageClassName": meta::name(storage_class),
        "volumeMode": match text(&claim, "spec.volumeMode") {
            "" => "Filesystem",
            mode => mode,
        },
        "hostPath": {"path": format!("{VOLUME_ROOT}/{name}"), "type": "DirectoryOrCreate"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE_NAME]}
        ]}]}},
    });
    if let Some(options) = storage_class.get("mountOptions").filter(|o| !o.is_null()) {
        spec["mountOptions"] = options.clone();
    }
    let pv = json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "annotations": {"pv.kubernetes.io/provisioned-by": provisioner},
        },
        "spec": spec,
    });
    let pv = match access::create(objects, Actor::Provisioner, &pv_info, None, pv).await {
        Ok(pv) => pv.as_ref().clone(),
        Err(e) if e.code == 409 => return Ok(()),
        Err(e) => return Err(e),
    };
    bind(objects, &claim, &pv, false).await
}

/// Reconciles one volume: its phase, its reclaim once its claim is gone, and protection.
pub async fn reconcile_volume(objects: &Objects, name: &str) -> Result<(), ApiError> {
    let Some(pv) = volume(objects, name) else {
        return Ok(());
    };
    let info = access::info(objects, "", "v1", "persistentvolumes")?;
    let phase = text(&pv, "status.phase");
    if meta::is_deleting(&pv) {
        if phase != "Bound" {
            drop_finalizer(objects, Actor::PvProtection, &info, &pv, VOLUME_PROTECTION).await?;
        }
        return Ok(());
    }
    let claim_ref = pv.pointer("/spec/claimRef").filter(|r| !r.is_null());
    let Some(claim_ref) = claim_ref else {
        if phase != "Available" {
            return access::update_status(objects, Actor::VolumeBinder, &info, &pv, |pv| {
                pv["status"]["phase"] = json!("Available");
            })
            .await;
        }
        return Ok(());
    };
    let s = |k: &str| claim_ref.get(k).and_then(Value::as_str).unwrap_or("");
    let claim = access::get(
        objects,
        "",
        "persistentvolumeclaims",
        s("namespace"),
        s("name"),
    );
    let uid = s("uid");
    let claim_gone = !uid.is_empty() && claim.as_ref().is_none_or(|c| meta::uid(c) != uid);
    if !claim_gone {
        // Pre-bound to a claim not bound yet, or bound: Available until the claim binds.
        if phase.is_empty() || phase == "Pending" {
            return access::update_status(objects, Actor::VolumeBinder, &info, &pv, |pv| {
                pv["status"]["phase"] = json!("Available");
            })
            .await;
        }
        return Ok(());
    }
    match text(&pv, "spec.persistentVolumeReclaimPolicy") {
        "Retain" => {
            if phase != "Released" {
                return access::update_status(objects, Actor::VolumeBinder, &info, &pv, |pv| {
                    pv["status"]["phase"] = json!("Released");
                })
                .await;
            }
            Ok(())
        }
        // `Delete` (and the deprecated `Recycle`, which upstream scrubs first): the volume goes.
        _ => {
            if phase != "Released" {
                access::update_status(objects, Actor::VolumeBinder, &info, &pv, |pv| {
                    pv["status"]["phase"] = json!("Released");
                })
                .await?;
            }
            let Some(current) = volume(objects, name) else {
                return Ok(());
            };
            access::delete(objects, Actor::Provisioner, &info, &current).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_name_their_claims_and_ephemeral_ones() {
        let pod = json!({"metadata": {"name": "db-0"}, "spec": {"volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {"name": "cfg", "configMap": {"name": "x"}},
        ]}});
        assert_eq!(claims_of(&pod), vec!["data-db-0", "db-0-scratch"]);
    }

    #[test]
    fn claim_refs_allow_their_claim_only() {
        let claim = json!({"metadata": {"name": "c", "namespace": "ns", "uid": "u1"}});
        let free = json!({"spec": {}});
        assert!(claim_ref_allows(&free, &claim));
        let pre = json!({"spec": {"claimRef": {"name": "c", "namespace": "ns"}}});
        assert!(claim_ref_allows(&pre, &claim));
        let other = json!({"spec": {"claimRef": {"name": "c", "namespace": "ns", "uid": "u2"}}});
        assert!(!claim_ref_allows(&other, &claim));
    }
}
