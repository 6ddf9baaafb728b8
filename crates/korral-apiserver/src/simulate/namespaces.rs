//! What kube-controller-manager keeps in every namespace: the `default` ServiceAccount (the
//! ServiceAccounts controller) and the `kube-root-ca.crt` ConfigMap holding the server's CA
//! bundle (the root CA certificate publisher). Both are re-created when deleted; the ConfigMap's
//! data and description are restored when changed. Nothing is written into a namespace being
//! deleted.

use serde_json::{Value, json};

use super::Cluster;
use super::access::{self, Actor};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::object_key;

/// The ServiceAccount every namespace gets.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// The ConfigMap carrying the CA bundle.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// Its data key.
const ROOT_CA_KEY: &str = "ca.crt";
/// The annotation describing it, and upstream's text.
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver \
    when using internal endpoints such as the internal service IP or kubernetes.default.svc. \
    No other usage is guaranteed across distributions of Kubernetes clusters.";

/// Whether a change of this object (`group` as in storage keys) concerns what a namespace is
/// kept with.
pub fn maintains(group: &str, resource: &str, name: &str) -> bool {
    group == "core"
        && matches!(
            (resource, name),
            ("serviceaccounts", DEFAULT_SERVICE_ACCOUNT) | ("configmaps", ROOT_CA_CONFIG_MAP)
        )
}

/// Brings one namespace's default ServiceAccount and root CA ConfigMap up to date.
pub async fn reconcile(objects: &Objects, cluster: &Cluster, name: &str) -> Result<(), ApiError> {
    let Some(namespace) = objects
        .storage()
        .get(&object_key("", "namespaces", None, name))
    else {
        return Ok(());
    };
    if meta::is_deleting(&namespace) {
        return Ok(());
    }
    ensure_service_account(objects, name).await?;
    if let Some(ca) = &cluster.ca_bundle {
        ensure_root_ca(objects, name, ca).await?;
    }
    Ok(())
}

/// Creates the `default` ServiceAccount when missing.
async fn ensure_service_account(objects: &Objects, ns: &str) -> Result<(), ApiError> {
    if access::get(objects, "", "serviceaccounts", ns, DEFAULT_SERVICE_ACCOUNT).is_some() {
        return Ok(());
    }
    let info = access::info(objects, "", "v1", "serviceaccounts")?;
    let account = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": ns},
    });
    ignore_races(access::create(objects, Actor::ServiceAccounts, &info, Some(ns), account).await)
}

/// Creates `kube-root-ca.crt` when missing, or restores its CA bundle and description.
async fn ensure_root_ca(objects: &Objects, ns: &str, ca: &str) -> Result<(), ApiError> {
    let info = access::info(objects, "", "v1", "configmaps")?;
    let Some(current) = access::get(objects, "", "configmaps", ns, ROOT_CA_CONFIG_MAP) else {
        let config_map = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": ROOT_CA_CONFIG_MAP,
                "namespace": ns,
                "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
            },
            "data": {ROOT_CA_KEY: ca},
        });
        return ignore_races(
            access::create(objects, Actor::RootCaPublisher, &info, Some(ns), config_map).await,
        );
    };
    if meta::is_deleting(&current) {
        return Ok(());
    }
    let data_ok = current.get("data") == Some(&json!({ROOT_CA_KEY: ca}));
    let described = meta::metadata(&current)
        .and_then(|md| md.get("annotations"))
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .and_then(Value::as_str)
        == Some(DESCRIPTION);
    if data_ok && described {
        return Ok(());
    }
    // As upstream's publisher: the data is replaced whole, the description set back.
    let mut next = (*current).clone();
    next["data"] = json!({ROOT_CA_KEY: ca});
    if let Some(map) = next.as_object_mut() {
        map.remove("binaryData");
    }
    if let Some(md) = meta::metadata_mut(&mut next) {
        let annotations = md.entry("annotations").or_insert_with(|| json!({}));
        if let Some(annotations) = annotations.as_object_mut() {
            annotations.insert(DESCRIPTION_ANNOTATION.into(), json!(DESCRIPTION));
        }
    }
    ignore_races(access::replace(objects, Actor::RootCaPublisher, &info, next).await)
}

/// A create that met an existing object, or a write that met a deleted one: the event of that
/// change queues this work again.
fn ignore_races<T>(result: Result<T, ApiError>) -> Result<(), ApiError> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || (e.code == 409 && e.reason == "AlreadyExists") => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_maintained_objects_concern_a_namespace() {
        assert!(maintains("core", "serviceaccounts", "default"));
        assert!(maintains("core", "configmaps", "kube-root-ca.crt"));
        assert!(!maintains("core", "configmaps", "other"));
        assert!(!maintains("core", "serviceaccounts", "robot"));
        assert!(!maintains("apps", "configmaps", "kube-root-ca.crt"));
    }
}
