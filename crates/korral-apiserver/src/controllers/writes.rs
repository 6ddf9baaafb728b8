//! How the built-in controllers write: through the write pipeline as upstream's controllers do
//! (each with its own identity, so admission webhooks and policies see who writes, and with
//! kube-controller-manager's field manager), by a read-modify-write of the current object that
//! is retried on conflicts.

use std::sync::Arc;

use serde_json::Value;

use super::index::KeyParts;
use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::meta;
use crate::objects::{DeleteOptions, Objects, Part, WriteOptions};
use crate::registry::ResourceInfo;
use crate::storage::Write;

/// The field manager of the controllers' writes (upstream's run in kube-controller-manager).
const FIELD_MANAGER: &str = "kube-controller-manager";

/// Which built-in controller writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Writer {
    /// The garbage collector.
    GarbageCollector,
    /// The namespace controller.
    Namespace,
    /// The ResourceQuota controller.
    ResourceQuota,
    /// The disruption (PodDisruptionBudget) controller.
    Disruption,
    /// The CRD finalizer, which upstream runs inside the apiextensions server itself.
    CrdFinalizer,
    /// The CRD naming controller, also run inside the apiextensions server.
    CrdNaming,
}

impl Writer {
    /// The identity upstream's controller authenticates as.
    fn user(self) -> UserInfo {
        let account = match self {
            Self::GarbageCollector => "generic-garbage-collector",
            Self::Namespace => "namespace-controller",
            Self::ResourceQuota => "resourcequota-controller",
            Self::Disruption => "disruption-controller",
            Self::CrdFinalizer | Self::CrdNaming => {
                // The server's loopback identity.
                return UserInfo {
                    name: "system:apiserver".into(),
                    groups: vec![
                        crate::auth::user::MASTERS_GROUP.into(),
                        crate::auth::user::AUTHENTICATED_GROUP.into(),
                    ],
                    ..UserInfo::default()
                };
            }
        };
        UserInfo::service_account("kube-system", account, "")
    }

    /// The options of its writes.
    pub(super) fn write_options(self) -> WriteOptions {
        WriteOptions {
            field_manager: Some(FIELD_MANAGER.to_string()),
            requester: Some(self.user()),
            ..WriteOptions::default()
        }
    }

    /// The options of its deletes.
    pub(super) fn delete_options(self) -> DeleteOptions {
        DeleteOptions {
            requester: Some(self.user()),
            ..DeleteOptions::default()
        }
    }
}

/// The resource served for a storage collection (any version: they share storage; a custom
/// resource's storage version first).
pub(super) fn resource_info(objects: &Objects, parts: &KeyParts<'_>) -> Option<Arc<ResourceInfo>> {
    let infos = objects.registry().versions_of(parts.group, parts.resource);
    infos
        .iter()
        .find(|i| i.custom.as_ref().is_some_and(|c| c.is_storage(&i.version)))
        .or_else(|| infos.first())
        .cloned()
}

/// Applies `change` to the object at `key` while it is the incarnation `uid`, through the write
/// pipeline of `part` as `writer`; nothing is written when `change` leaves it as it is, and an
/// object being deleted whose last finalizer goes is removed. Objects of a resource nothing
/// serves any more (nothing could write them otherwise) are changed in storage directly.
pub(super) async fn modify<F>(
    objects: &Objects,
    writer: Writer,
    key: &str,
    uid: &str,
    part: Part,
    change: F,
) -> Result<(), ApiError>
where
    F: Fn(&mut Value) + Send + Sync + 'static,
{
    let Some(parts) = KeyParts::parse(key) else {
        return Ok(());
    };
    let Some(info) = resource_info(objects, &parts) else {
        return modify_unserved(objects, key, uid, change).await;
    };
    match objects
        .update_with(
            &info,
            parts.namespace,
            parts.name,
            uid,
            part,
            &writer.write_options(),
            change,
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if error.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// [`modify`] for an object whose resource is no longer served.
async fn modify_unserved<F>(
    objects: &Objects,
    key: &str,
    uid: &str,
    change: F,
) -> Result<(), ApiError>
where
    F: Fn(&mut Value) + Send + Sync + 'static,
{
    tracing::debug!(key, "changing an object of an unserved resource");
    let uid = uid.to_string();
    objects
        .storage()
        .update(
            key.to_string(),
            Box::new(move |cur| {
                let Some(cur) = cur.filter(|c| meta::uid(c) == uid) else {
                    return Ok(Write::Unchanged);
                };
                let mut next = (**cur).clone();
                change(&mut next);
                if next == **cur {
                    return Ok(Write::Unchanged);
                }
                if meta::is_deleting(&next) && meta::finalizers(&next).is_empty() {
                    return Ok(Write::Delete);
                }
                Ok(Write::Put(next))
            }),
        )
        .await
        .map(|_| ())
}
