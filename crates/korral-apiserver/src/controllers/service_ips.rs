//! The `networking.k8s.io/v1` IPAddress of every Service cluster IP, as upstream's cluster IP
//! allocator keeps them (`pkg/registry/core/service/ipallocator`): one object named by the
//! address, labelled with its family and `ipaddress.kubernetes.io/managed-by:
//! ipallocator.k8s.io`, whose `spec.parentRef` names the Service; released (deleted) when the
//! Service gives the address up or is deleted.
//!
//! Upstream writes the IPAddress before the Service in the same request; here the allocation
//! itself stays with the Service strategy and this controller mirrors it right after each
//! write (so the object appears a moment after the Service). On start a repair pass, like
//! upstream's repair loop, creates what is missing and deletes managed addresses no Service
//! holds.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::meta;
use crate::objects::{DeleteOptions, Objects, WriteOptions};
use crate::storage::{Event, EventType, collection_prefix};

const GROUP: &str = "networking.k8s.io";
const RESOURCE: &str = "ipaddresses";
/// The label of the allocator's IPAddresses.
const MANAGED_BY: &str = "ipaddress.kubernetes.io/managed-by";
/// Upstream's allocator name, the value of [`MANAGED_BY`].
const ALLOCATOR: &str = "ipallocator.k8s.io";
/// The label naming an IPAddress's family.
const FAMILY: &str = "ipaddress.kubernetes.io/ip-family";

/// Where Services are stored (read on every storage event: built once).
static SERVICES: LazyLock<String> = LazyLock::new(|| collection_prefix("", "services", None));
/// Where IPAddresses are stored.
static ADDRESSES: LazyLock<String> = LazyLock::new(|| collection_prefix(GROUP, RESOURCE, None));

/// The cluster IPs a Service holds (`spec.clusterIPs`, or the legacy `spec.clusterIP`), without
/// `None` (headless) and empty values.
fn cluster_ips(service: Option<&Value>) -> BTreeSet<String> {
    let Some(spec) = service.and_then(|s| s.get("spec")) else {
        return BTreeSet::new();
    };
    let listed: Vec<&str> = match spec.get("clusterIPs").and_then(Value::as_array) {
        Some(ips) => ips.iter().filter_map(Value::as_str).collect(),
        None => spec
            .get("clusterIP")
            .and_then(Value::as_str)
            .into_iter()
            .collect(),
    };
    listed
        .into_iter()
        .filter(|ip| !ip.is_empty() && *ip != "None")
        .map(str::to_string)
        .collect()
}

/// The Service whose addresses an event calls to sync, with the addresses it no longer holds:
/// a Service whose cluster IPs changed (created, changed, deleted), or the holder of one of
/// the allocator's IPAddresses that was deleted (recreated while the Service holds it).
pub(super) fn work_for(event: &Event) -> Option<(String, Vec<String>)> {
    if event.key.starts_with(SERVICES.as_str()) {
        let now = match event.kind {
            EventType::Deleted => BTreeSet::new(),
            _ => cluster_ips(Some(&event.object)),
        };
        let before = cluster_ips(event.previous.as_deref());
        let released: Vec<String> = before.difference(&now).cloned().collect();
        return (now != before).then(|| (event.key.clone(), released));
    }
    if event.kind == EventType::Deleted
        && event.key.starts_with(ADDRESSES.as_str())
        && allocated(&event.object)
    {
        return Some((parent_key(&event.object), Vec::new()));
    }
    None
}

/// Whether an IPAddress is one of the allocator's.
fn allocated(address: &Value) -> bool {
    meta::labels(address)
        .and_then(|l| l.get(MANAGED_BY))
        .and_then(Value::as_str)
        == Some(ALLOCATOR)
}

/// The storage key of the Service an IPAddress's `parentRef` names.
fn parent_key(address: &Value) -> String {
    let parent = |f: &str| {
        meta::path(address, &format!("spec.parentRef.{f}"))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    format!(
        "{}{}/{}",
        SERVICES.as_str(),
        parent("namespace"),
        parent("name")
    )
}

/// The IPAddress the allocator keeps for `ip` of the Service `namespace/name`.
fn ip_address(ip: &str, namespace: &str, name: &str) -> Value {
    let family = if ip.contains(':') { "IPv6" } else { "IPv4" };
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {"name": ip, "labels": {FAMILY: family, MANAGED_BY: ALLOCATOR}},
        "spec": {"parentRef": {"resource": "services", "namespace": namespace, "name": name}},
    })
}

/// Whether the IPAddress `address` belongs to the Service `namespace/name`.
fn held_by(address: &Value, namespace: &str, name: &str) -> bool {
    let parent = meta::path(address, "spec.parentRef");
    let field = |f: &str| {
        parent
            .and_then(|p| p.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    field("resource") == "services" && field("namespace") == namespace && field("name") == name
}

/// Brings the IPAddresses of the Service at `key` up to date: one for each address it holds,
/// and the ones it `released` (still naming it) deleted.
pub(super) async fn sync_service(
    objects: &Objects,
    key: &str,
    released: &[String],
) -> Result<(), ApiError> {
    let Some(info) = objects.registry().get(GROUP, "v1", RESOURCE) else {
        return Ok(());
    };
    let Some((namespace, name)) = key
        .strip_prefix(SERVICES.as_str())
        .and_then(|rest| rest.split_once('/'))
    else {
        return Ok(());
    };
    let service = objects.storage().get(key);
    let held = cluster_ips(service.as_deref());
    for ip in &held {
        if objects.get(&info, None, ip).is_err() {
            let address = ip_address(ip, namespace, name);
            match objects
                .create(&info, None, address, &WriteOptions::default())
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
    }
    for ip in released.iter().filter(|ip| !held.contains(*ip)) {
        if let Ok(address) = objects.get(&info, None, ip)
            && held_by(&address, namespace, name)
        {
            release(objects, &info, &address).await?;
        }
    }
    Ok(())
}

/// Deletes the IPAddress `address` (that incarnation only).
async fn release(
    objects: &Objects,
    info: &std::sync::Arc<crate::registry::ResourceInfo>,
    address: &Value,
) -> Result<(), ApiError> {
    let uid = meta::uid(address);
    let opts = DeleteOptions {
        precondition_uid: (!uid.is_empty()).then(|| uid.to_string()),
        ..DeleteOptions::default()
    };
    match objects.delete(info, None, meta::name(address), &opts).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// The repair pass: every Service's addresses exist, and the allocator's addresses whose
/// Service is gone or no longer holds them are deleted.
pub(super) async fn repair(objects: &Objects) -> Result<(), ApiError> {
    let Some(info) = objects.registry().get(GROUP, "v1", RESOURCE) else {
        return Ok(());
    };
    let snapshot = objects.storage().snapshot();
    let keys: Vec<String> = snapshot
        .range(SERVICES.as_str(), None)
        .map(|(key, _)| key.clone())
        .collect();
    let mut first_error = None;
    for key in &keys {
        if let Err(e) = sync_service(objects, key, &[]).await {
            first_error.get_or_insert(e);
        }
    }
    for (_, address) in snapshot.range(ADDRESSES.as_str(), None) {
        if !allocated(address) {
            continue;
        }
        let holder = snapshot.objects.get(&parent_key(address));
        if !cluster_ips(holder.map(|s| &**s)).contains(meta::name(address))
            && let Err(e) = release(objects, &info, address).await
        {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_ips_skip_headless_and_empty() {
        let svc = json!({"spec": {"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"]}});
        assert_eq!(cluster_ips(Some(&svc)).len(), 1);
        let headless = json!({"spec": {"clusterIP": "None", "clusterIPs": ["None"]}});
        assert!(cluster_ips(Some(&headless)).is_empty());
        let legacy = json!({"spec": {"clusterIP": "10.96.0.6"}});
        assert!(cluster_ips(Some(&legacy)).contains("10.96.0.6"));
        assert!(cluster_ips(None).is_empty());
    }

    #[test]
    fn addresses_name_their_service() {
        let address = ip_address("10.96.0.5", "default", "web");
        assert_eq!(address["metadata"]["labels"][FAMILY], "IPv4");
        assert_eq!(address["metadata"]["labels"][MANAGED_BY], ALLOCATOR);
        assert!(held_by(&address, "default", "web"));
        assert!(!held_by(&address, "default", "api"));
        assert_eq!(
            ip_address("fd00::5", "default", "web")["metadata"]["labels"][FAMILY],
            "IPv6"
        );
    }
}
