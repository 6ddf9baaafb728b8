//! Creating the bootstrap objects a server lacks, at start: straight into storage, one
//! guarded put per missing key, all issued before any is awaited (durable storage commits them
//! in one batch). The objects are constant and stored as the write pipeline would store them
//! (a server's own writes record no `managedFields`; the RBAC strategies change nothing of
//! these objects), which the tests check against the pipeline.

use serde_json::Value;

use super::{Bootstrap, RESOURCES, all, policy::GROUP};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::Write;

/// Creates the bootstrap objects that do not exist yet; existing ones (a user's changes on a
/// durable server included) are left as they are. Their namespaces exist: the server creates
/// its system namespaces first.
pub async fn ensure(objects: &Objects) -> Result<(), ApiError> {
    let registry = objects.registry();
    let mut infos = Vec::with_capacity(RESOURCES.len());
    for resource in RESOURCES {
        let Some(info) = registry.get(GROUP, "v1", resource) else {
            return Err(ApiError::internal("RBAC resources are not registered"));
        };
        infos.push(info);
    }
    let storage = objects.storage();
    let snapshot = storage.snapshot();
    let now = meta::now_rfc3339();
    let mut writes = Vec::new();
    for boot in all() {
        let Some(info) = infos.get(boot.resource) else {
            continue;
        };
        let key = Objects::key(info, boot.namespace, boot.name);
        if snapshot.objects.contains_key(&key) {
            continue;
        }
        let object = stored(boot, &now);
        writes.push(storage.update(
            key,
            Box::new(move |current| {
                Ok(match current {
                    // Created meanwhile: theirs is kept.
                    Some(_) => Write::Unchanged,
                    None => Write::Put(object),
                })
            }),
        ));
    }
    for written in futures::future::join_all(writes).await {
        written?;
    }
    Ok(())
}

/// `boot` with the system metadata a create gives it (its `resourceVersion` is the store's).
fn stored(boot: &Bootstrap, now: &str) -> Value {
    let mut object = boot.object.clone();
    if let Some(md) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        md.insert(
            "uid".into(),
            Value::String(uuid::Uuid::new_v4().to_string()),
        );
        md.insert("creationTimestamp".into(), Value::String(now.into()));
    }
    object
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::objects::WriteOptions;
    use crate::registry::Registry;
    use crate::storage::MemoryStorage;

    /// An object layer over fresh memory storage, with the server's system namespaces.
    async fn objects() -> Objects {
        let objects = Objects::new(
            Arc::new(MemoryStorage::new()),
            Arc::new(Registry::with_builtins()),
        );
        let namespaces = objects.registry().get("", "v1", "namespaces").expect("ns");
        for ns in ["kube-system", "kube-public"] {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            objects
                .create(&namespaces, None, obj, &WriteOptions::default())
                .await
                .expect("namespace");
        }
        objects
    }

    /// The stored object at `boot`'s key, without what differs between two creates.
    fn comparable(objects: &Objects, boot: &Bootstrap) -> Value {
        let info = objects
            .registry()
            .get(GROUP, "v1", RESOURCES[boot.resource])
            .expect("rbac");
        let key = Objects::key(&info, boot.namespace, boot.name);
        let mut stored = (*objects.storage().get(&key).expect("stored")).clone();
        let md = stored["metadata"].as_object_mut().expect("metadata");
        for field in ["uid", "creationTimestamp", "resourceVersion"] {
            assert!(md.remove(field).is_some(), "{key}: {field}");
        }
        stored
    }

    #[tokio::test]
    async fn objects_are_stored_as_the_write_pipeline_stores_them() {
        let direct = objects().await;
        ensure(&direct).await.expect("ensure");
        let pipeline = objects().await;
        for boot in all() {
            let info = pipeline
                .registry()
                .get(GROUP, "v1", RESOURCES[boot.resource])
                .expect("rbac");
            pipeline
                .create(
                    &info,
                    boot.namespace,
                    boot.object.clone(),
                    &WriteOptions::default(),
                )
                .await
                .expect("valid bootstrap object");
            assert_eq!(
                comparable(&direct, boot),
                comparable(&pipeline, boot),
                "{:?}/{}",
                boot.namespace,
                boot.name
            );
        }
    }

    #[tokio::test]
    async fn existing_objects_are_left_alone_and_missing_ones_created() {
        let objects = objects().await;
        ensure(&objects).await.expect("first start");
        let info = objects
            .registry()
            .get(GROUP, "v1", "clusterroles")
            .expect("clusterroles");
        // A user changes one role and deletes another.
        let key = Objects::key(&info, None, "system:heapster");
        let changed = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                             "metadata": {"name": "system:heapster"}, "rules": []});
        objects
            .storage()
            .update(key.clone(), Box::new(move |_| Ok(Write::Put(changed))))
            .await
            .expect("change");
        let deleted = Objects::key(&info, None, "system:kube-dns");
        objects
            .storage()
            .update(deleted.clone(), Box::new(|_| Ok(Write::Delete)))
            .await
            .expect("delete");
        let revision = objects.storage().revision();
        ensure(&objects).await.expect("restart");
        let heapster = objects.storage().get(&key).expect("kept");
        assert_eq!(heapster["rules"], json!([]));
        assert!(objects.storage().get(&deleted).is_some(), "re-created");
        // One write: the re-created role.
        assert_eq!(objects.storage().revision(), revision + 1);
    }
}
