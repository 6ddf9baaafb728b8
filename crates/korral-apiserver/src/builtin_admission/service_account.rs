//! The ServiceAccount admission plugin: a Pod runs as a service account that must exist
//! (`default` when it names none), and unless automounting is turned off (on the Pod, else on
//! the ServiceAccount) every container gets the projected `kube-api-access-<suffix>` volume with
//! the account's token, the cluster's CA bundle and the namespace, mounted read-only at
//! `/var/run/secrets/kubernetes.io/serviceaccount`. The account's image pull secrets become
//! the Pod's when it names none. Mirror pods are left alone.

use serde_json::{Value, json};

use crate::ApiError;
use crate::meta;
use crate::registry::ResourceInfo;
use crate::storage::{Snapshot, object_key};

/// The service account a Pod naming none runs as.
const DEFAULT_ACCOUNT: &str = "default";
/// Prefix of the token volume's name.
const VOLUME_PREFIX: &str = "kube-api-access-";
/// Where the token volume is mounted.
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// Lifetime of the projected token upstream asks for (an hour and seven seconds: the
/// kubelet refreshes it, and the odd value marks tokens that only warn when stale).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// The annotation of mirror pods (static pods reflected by a kubelet).
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// How often, and how far apart, a Pod create looks for its namespace's `default` service
/// account before refusing (upstream's plugin tries ten times, 100-200 ms apart: the
/// ServiceAccounts controller creates it just after the namespace).
const DEFAULT_ACCOUNT_ATTEMPTS: usize = 10;
const DEFAULT_ACCOUNT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(150);

/// Waits (bounded) for the `default` service account a Pod being created will run as, when it
/// does not exist yet; returns at once in every other case.
pub(super) async fn await_default_account(pod: &Value, storage: &dyn crate::storage::Storage) {
    let named = meta::path(pod, "spec.serviceAccountName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    if named.is_some_and(|n| n != DEFAULT_ACCOUNT) {
        return;
    }
    let key = object_key(
        "",
        "serviceaccounts",
        Some(meta::namespace(pod).unwrap_or("")),
        DEFAULT_ACCOUNT,
    );
    for attempt in 0..DEFAULT_ACCOUNT_ATTEMPTS {
        if storage.get(&key).is_some() {
            return;
        }
        if attempt + 1 < DEFAULT_ACCOUNT_ATTEMPTS {
            tokio::time::sleep(DEFAULT_ACCOUNT_INTERVAL).await;
        }
    }
}

/// Admits a Pod being created (see the module docs).
pub(super) fn admit(
    info: &ResourceInfo,
    pod: &mut Value,
    snapshot: &Snapshot,
) -> Result<(), ApiError> {
    let mirror = meta::metadata(pod)
        .and_then(|md| md.get("annotations"))
        .and_then(|a| a.get(MIRROR_ANNOTATION))
        .is_some();
    if mirror {
        return Ok(());
    }
    let namespace = meta::namespace(pod).unwrap_or("").to_string();
    let name = meta::name(pod).to_string();
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let account_name = match spec.get("serviceAccountName").and_then(Value::as_str) {
        Some(account) if !account.is_empty() => account.to_string(),
        _ => {
            spec.insert("serviceAccountName".into(), json!(DEFAULT_ACCOUNT));
            DEFAULT_ACCOUNT.to_string()
        }
    };
    let key = object_key("", "serviceaccounts", Some(&namespace), &account_name);
    let Some(account) = snapshot.objects.get(&key) else {
        return Err(ApiError::forbidden_object(
            &info.group,
            &info.resource,
            &name,
            &format!(
                "error looking up service account {namespace}/{account_name}: serviceaccount \"{account_name}\" not found"
            ),
        ));
    };
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            account
                .get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true);
    if automount {
        mount_token(spec);
    }
    let pull_secrets_unset = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if pull_secrets_unset
        && let Some(secrets) = account
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .filter(|s| !s.is_empty())
    {
        spec.insert("imagePullSecrets".into(), Value::Array(secrets.clone()));
    }
    Ok(())
}

/// The projected volume of the token, the CA bundle and the namespace.
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    })
}

/// Mounts the token volume into every init container and container that has nothing mounted
/// at [`MOUNT_PATH`], adding the volume (named `kube-api-access-<suffix>`, or the existing one
/// of that prefix) when some container needs it.
fn mount_token(spec: &mut serde_json::Map<String, Value>) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .and_then(|volumes| {
            volumes
                .iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .find(|n| n.starts_with(VOLUME_PREFIX))
                .map(str::to_string)
        });
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| format!("{VOLUME_PREFIX}{}", crate::objects::generate_suffix()));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": MOUNT_PATH});
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers.iter_mut() {
            let Some(container) = container.as_object_mut() else {
                continue;
            };
            let mounts = container.entry("volumeMounts").or_insert_with(|| json!([]));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            let taken = mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH));
            if !taken {
                mounts.push(mount.clone());
                needed = true;
            }
        }
    }
    if needed && existing.is_none() {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(token_volume(&volume_name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(value: Value) -> serde_json::Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn every_container_mounts_one_token_volume() {
        let mut s = spec(json!({
            "initContainers": [{"name": "init"}],
            "containers": [
                {"name": "a"},
                {"name": "b", "volumeMounts": [{"name": "own", "mountPath": MOUNT_PATH}]},
            ],
        }));
        mount_token(&mut s);
        let volumes = s["volumes"].as_array().cloned().unwrap_or_default();
        assert_eq!(volumes.len(), 1);
        let name = volumes[0]["name"].as_str().unwrap_or("").to_string();
        assert!(name.starts_with(VOLUME_PREFIX) && name.len() == VOLUME_PREFIX.len() + 5);
        assert_eq!(volumes[0], token_volume(&name));
        let mount = json!({"name": name, "readOnly": true, "mountPath": MOUNT_PATH});
        assert_eq!(s["initContainers"][0]["volumeMounts"], json!([mount]));
        assert_eq!(s["containers"][0]["volumeMounts"], json!([mount]));
        // A container with its own mount at the path keeps it alone.
        assert_eq!(
            s["containers"][1]["volumeMounts"].as_array().map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn an_existing_token_volume_is_reused_and_no_mount_means_no_volume() {
        let mut s = spec(json!({
            "volumes": [{"name": "kube-api-access-abcde", "emptyDir": {}}],
            "containers": [{"name": "a"}],
        }));
        mount_token(&mut s);
        assert_eq!(s["volumes"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            s["containers"][0]["volumeMounts"][0]["name"],
            "kube-api-access-abcde"
        );
        let mut s = spec(json!({
            "containers": [{"name": "a", "volumeMounts": [{"name": "x", "mountPath": MOUNT_PATH}]}],
        }));
        mount_token(&mut s);
        assert!(s.get("volumes").is_none());
    }
}
