//! Event handlers: turn a watched object into the keys of the primary objects to reconcile.

use std::marker::PhantomData;

use kube::Resource;

use crate::helpers::owner::controller_owner;
use crate::reconcile::ObjectRef;

/// Maps a watched object to the keys to enqueue.
pub trait Handler<T>: Send + Sync + 'static {
    /// The keys of the primary objects `object` should trigger a reconcile of.
    fn requests(&self, object: &T) -> Vec<ObjectRef>;
}

/// Enqueues the object's own key (the handler of the primary type).
#[derive(Clone, Copy, Debug, Default)]
pub struct EnqueueObject;

impl<T: Resource> Handler<T> for EnqueueObject {
    fn requests(&self, object: &T) -> Vec<ObjectRef> {
        ObjectRef::from_object(object).into_iter().collect()
    }
}

/// Enqueues the object's controller owner (its ownerReference with `controller: true`) when
/// the owner's group and kind are those of `O`. The owner is looked up in the object's
/// namespace (owners of namespaced objects live in the same namespace, or are cluster-scoped,
/// in which case the key has no namespace).
pub struct EnqueueOwner<O> {
    _owner: PhantomData<fn() -> O>,
}

impl<O> EnqueueOwner<O> {
    /// Enqueues controller owners of type `O`.
    pub fn new() -> Self {
        Self {
            _owner: PhantomData,
        }
    }
}

impl<O> Default for EnqueueOwner<O> {
    fn default() -> Self {
        Self::new()
    }
}

impl<O> Clone for EnqueueOwner<O> {
    fn clone(&self) -> Self {
        Self::new()
    }
}

impl<O> std::fmt::Debug for EnqueueOwner<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EnqueueOwner")
    }
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
fn group_of(api_version: &str) -> &str {
    api_version
        .rsplit_once('/')
        .map_or("", |(group, _version)| group)
}

impl<T, O> Handler<T> for EnqueueOwner<O>
where
    T: Resource,
    O: Resource<DynamicType = ()> + 'static,
    O::Scope: 'static,
{
    fn requests(&self, object: &T) -> Vec<ObjectRef> {
        let meta = object.meta();
        let Some(owner) = controller_owner(meta) else {
            return Vec::new();
        };
        if owner.kind != O::kind(&()) || group_of(&owner.api_version) != O::group(&()) {
            return Vec::new();
        }
        let namespaced = std::any::TypeId::of::<O::Scope>()
            == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>();
        let key = match (&meta.namespace, namespaced) {
            (Some(ns), true) => ObjectRef::namespaced(ns.clone(), owner.name.clone()),
            _ => ObjectRef::cluster_scoped(owner.name.clone()),
        };
        vec![key]
    }
}

/// Maps an object to any number of keys with a function (for example, every primary object
/// that references a shared ConfigMap, or the keys carried by an external event).
#[derive(Clone, Copy, Debug)]
pub struct MapFn<F>(pub F);

impl<T, F> Handler<T> for MapFn<F>
where
    F: Fn(&T) -> Vec<ObjectRef> + Send + Sync + 'static,
{
    fn requests(&self, object: &T) -> Vec<ObjectRef> {
        (self.0)(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

    fn owned(api_version: &str, kind: &str, controller: bool) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("child".into()),
                namespace: Some("ns".into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    name: "parent".into(),
                    uid: "u".into(),
                    controller: Some(controller),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn enqueue_owner_matches_group_and_kind() {
        let handler = EnqueueOwner::<Deployment>::new();
        assert_eq!(
            handler.requests(&owned("apps/v1", "Deployment", true)),
            vec![ObjectRef::namespaced("ns", "parent")]
        );
        assert!(
            handler
                .requests(&owned("apps/v1", "Deployment", false))
                .is_empty()
        );
        assert!(
            handler
                .requests(&owned("v1", "Deployment", true))
                .is_empty()
        );
        assert!(
            handler
                .requests(&owned("apps/v1", "StatefulSet", true))
                .is_empty()
        );
        let cluster = EnqueueOwner::<Namespace>::new();
        assert_eq!(
            cluster.requests(&owned("v1", "Namespace", true)),
            vec![ObjectRef::cluster_scoped("parent")]
        );
        assert_eq!(
            EnqueueObject.requests(&owned("v1", "x", true)),
            vec![ObjectRef::namespaced("ns", "child")]
        );
    }
}
