//! Owner and controller references, with controller-runtime's rules
//! (`controllerutil.SetControllerReference` / `SetOwnerReference`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

/// Why an owner reference could not be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnerRefError {
    /// The owner has no `metadata.name` (it was never created).
    #[error("setting the owner reference: the {kind} owner has no name")]
    OwnerWithoutName {
        /// The owner's kind.
        kind: String,
    },
    /// The owner has no `metadata.uid` (it was never created, or was built locally).
    #[error("setting the owner reference: the {kind} owner {name:?} has no uid")]
    OwnerWithoutUid {
        /// The owner's kind.
        kind: String,
        /// The owner's name.
        name: String,
    },
    /// A namespaced owner cannot own a cluster-scoped object.
    #[error(
        "setting the owner reference: cluster-scoped object {object:?} cannot be owned by \
         namespaced {kind} {owner_namespace}/{owner}"
    )]
    ClusterScopedObject {
        /// The object's name (may be empty if not set yet).
        object: String,
        /// The owner's kind.
        kind: String,
        /// The owner's namespace.
        owner_namespace: String,
        /// The owner's name.
        owner: String,
    },
    /// Owner references cannot cross namespaces.
    #[error(
        "setting the owner reference: cross-namespace owner references are disallowed, owner \
         {kind} {owner_namespace}/{owner} and object namespace {object_namespace:?}"
    )]
    CrossNamespace {
        /// The owner's kind.
        kind: String,
        /// The owner's namespace.
        owner_namespace: String,
        /// The owner's name.
        owner: String,
        /// The object's namespace.
        object_namespace: String,
    },
    /// The object already has a different controller (controller-runtime's `AlreadyOwnedError`).
    #[error(
        "setting the controller reference: object is already owned by another {kind} \
         controller {name:?}"
    )]
    AlreadyOwned {
        /// The existing controller's kind.
        kind: String,
        /// The existing controller's name.
        name: String,
    },
}

/// The API group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Whether `a` and `b` refer to the same object (same group, kind and name; the version may
/// differ), as controller-runtime's `referSameObject`.
fn refer_same_object(a: &OwnerReference, b: &OwnerReference) -> bool {
    group_of(&a.api_version) == group_of(&b.api_version) && a.kind == b.kind && a.name == b.name
}

/// Checks the owner and builds a (non-controller) reference to it.
fn owner_reference<O>(owner: &O, obj_meta: &ObjectMeta) -> Result<OwnerReference, OwnerRefError>
where
    O: Resource<DynamicType = ()>,
{
    let kind = O::kind(&()).into_owned();
    let meta = owner.meta();
    let name = meta
        .name
        .clone()
        .ok_or_else(|| OwnerRefError::OwnerWithoutName { kind: kind.clone() })?;
    let uid = meta
        .uid
        .clone()
        .ok_or_else(|| OwnerRefError::OwnerWithoutUid {
            kind: kind.clone(),
            name: name.clone(),
        })?;
    if let Some(owner_ns) = meta.namespace.as_deref().filter(|ns| !ns.is_empty()) {
        match obj_meta.namespace.as_deref().filter(|ns| !ns.is_empty()) {
            None => {
                return Err(OwnerRefError::ClusterScopedObject {
                    object: obj_meta.name.clone().unwrap_or_default(),
                    kind,
                    owner_namespace: owner_ns.to_owned(),
                    owner: name,
                });
            }
            Some(obj_ns) if obj_ns != owner_ns => {
                return Err(OwnerRefError::CrossNamespace {
                    kind,
                    owner_namespace: owner_ns.to_owned(),
                    owner: name,
                    object_namespace: obj_ns.to_owned(),
                });
            }
            Some(_) => {}
        }
    }
    Ok(OwnerReference {
        api_version: O::api_version(&()).into_owned(),
        kind,
        name,
        uid,
        controller: None,
        block_owner_deletion: None,
    })
}

/// Adds `reference` to the owner references, replacing one that refers to the same object.
fn upsert(obj_meta: &mut ObjectMeta, reference: OwnerReference) {
    let refs = obj_meta.owner_references.get_or_insert_with(Vec::new);
    match refs.iter_mut().find(|r| refer_same_object(r, &reference)) {
        Some(existing) => *existing = reference,
        None => refs.push(reference),
    }
}

/// Makes `owner` the controller of the object with metadata `obj_meta`: adds (or updates) an
/// owner reference with `controller: true` and `blockOwnerDeletion: true`, so the object is
/// garbage-collected with its owner and `owns::<C>()` maps it back to the owner.
///
/// Fails if the owner has no name or uid, if another object is already the controller
/// ([`OwnerRefError::AlreadyOwned`]), if a namespaced owner would own a cluster-scoped object,
/// or if the namespaces differ. A cluster-scoped owner may own a namespaced object. As in
/// controller-runtime, an object whose `metadata.namespace` is unset counts as cluster-scoped,
/// so set the namespace before calling this for a namespaced object.
pub fn set_controller_reference<O>(
    owner: &O,
    obj_meta: &mut ObjectMeta,
) -> Result<(), OwnerRefError>
where
    O: Resource<DynamicType = ()>,
{
    let mut reference = owner_reference(owner, obj_meta)?;
    if let Some(existing) = controller_owner(obj_meta)
        && !refer_same_object(existing, &reference)
    {
        return Err(OwnerRefError::AlreadyOwned {
            kind: existing.kind.clone(),
            name: existing.name.clone(),
        });
    }
    reference.controller = Some(true);
    reference.block_owner_deletion = Some(true);
    tracing::debug!(owner_kind = %reference.kind, owner = %reference.name, "setting controller reference");
    upsert(obj_meta, reference);
    Ok(())
}

/// Adds (or updates) a plain owner reference to `owner` (neither controller nor blocking owner
/// deletion): the object is garbage-collected once all its owners are gone.
///
/// The same namespace rules as [`set_controller_reference`] apply. As in controller-runtime, an
/// existing reference to the same owner is replaced, which drops its controller flag.
pub fn set_owner_reference<O>(owner: &O, obj_meta: &mut ObjectMeta) -> Result<(), OwnerRefError>
where
    O: Resource<DynamicType = ()>,
{
    let reference = owner_reference(owner, obj_meta)?;
    upsert(obj_meta, reference);
    Ok(())
}

/// The owner reference marked `controller: true`, if any.
pub fn controller_owner(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .as_deref()?
        .iter()
        .find(|r| r.controller == Some(true))
}

/// Whether the object with metadata `obj_meta` is controlled by `owner` (its controller
/// reference carries the owner's uid).
pub fn is_controlled_by<O: Resource>(obj_meta: &ObjectMeta, owner: &O) -> bool {
    match (controller_owner(obj_meta), owner.meta().uid.as_deref()) {
        (Some(controller), Some(uid)) => controller.uid == uid,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    fn meta(ns: Option<&str>, name: &str, uid: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            namespace: ns.map(str::to_owned),
            name: Some(name.to_owned()),
            uid: uid.map(str::to_owned),
            ..ObjectMeta::default()
        }
    }

    fn deployment(ns: Option<&str>, name: &str, uid: Option<&str>) -> Deployment {
        Deployment {
            metadata: meta(ns, name, uid),
            ..Deployment::default()
        }
    }

    #[test]
    fn sets_controller_reference_once() -> Result<(), OwnerRefError> {
        let owner = deployment(Some("ns"), "web", Some("u1"));
        let mut obj = meta(Some("ns"), "cfg", None);
        set_controller_reference(&owner, &mut obj)?;
        set_controller_reference(&owner, &mut obj)?; // idempotent
        let refs = obj.owner_references.clone().unwrap_or_default();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].api_version, "apps/v1");
        assert_eq!(refs[0].kind, "Deployment");
        assert_eq!(refs[0].uid, "u1");
        assert_eq!(refs[0].controller, Some(true));
        assert_eq!(refs[0].block_owner_deletion, Some(true));
        assert!(is_controlled_by(&obj, &owner));
        assert_eq!(controller_owner(&obj).map(|r| r.name.as_str()), Some("web"));
        Ok(())
    }

    #[test]
    fn rejects_a_second_controller() -> Result<(), OwnerRefError> {
        let first = deployment(Some("ns"), "a", Some("u1"));
        let second = deployment(Some("ns"), "b", Some("u2"));
        let mut obj = meta(Some("ns"), "cfg", None);
        set_controller_reference(&first, &mut obj)?;
        assert_eq!(
            set_controller_reference(&second, &mut obj),
            Err(OwnerRefError::AlreadyOwned {
                kind: "Deployment".into(),
                name: "a".into()
            })
        );
        assert!(!is_controlled_by(&obj, &second));
        // A plain owner reference is still fine.
        set_owner_reference(&second, &mut obj)?;
        assert_eq!(obj.owner_references.as_ref().map(Vec::len), Some(2));
        assert!(is_controlled_by(&obj, &first));
        Ok(())
    }

    #[test]
    fn owner_needs_name_and_uid() {
        let mut obj = meta(Some("ns"), "cfg", None);
        let no_uid = deployment(Some("ns"), "a", None);
        assert!(matches!(
            set_controller_reference(&no_uid, &mut obj),
            Err(OwnerRefError::OwnerWithoutUid { .. })
        ));
        let no_name = Deployment::default();
        assert!(matches!(
            set_owner_reference(&no_name, &mut obj),
            Err(OwnerRefError::OwnerWithoutName { .. })
        ));
        assert!(obj.owner_references.is_none());
    }

    #[test]
    fn namespace_rules() -> Result<(), OwnerRefError> {
        // Cluster-scoped owner of a namespaced object: allowed.
        let ns_owner = Namespace {
            metadata: meta(None, "team", Some("u-ns")),
            ..Namespace::default()
        };
        let mut obj = meta(Some("team"), "cfg", None);
        set_controller_reference(&ns_owner, &mut obj)?;
        assert_eq!(
            controller_owner(&obj).map(|r| r.api_version.as_str()),
            Some("v1")
        );

        // Namespaced owner of a cluster-scoped object: rejected.
        let owner = ConfigMap {
            metadata: meta(Some("ns"), "o", Some("u")),
            ..ConfigMap::default()
        };
        let mut cluster_obj = meta(None, "node", None);
        assert!(matches!(
            set_controller_reference(&owner, &mut cluster_obj),
            Err(OwnerRefError::ClusterScopedObject { .. })
        ));

        // Different namespaces: rejected.
        let mut other = meta(Some("other"), "cfg", None);
        assert!(matches!(
            set_owner_reference(&owner, &mut other),
            Err(OwnerRefError::CrossNamespace { .. })
        ));
        Ok(())
    }

    #[test]
    fn same_group_different_version_is_the_same_owner() {
        let a = OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "x".into(),
            ..OwnerReference::default()
        };
        let b = OwnerReference {
            api_version: "apps/v1beta1".into(),
            ..a.clone()
        };
        assert!(refer_same_object(&a, &b));
        assert_eq!(group_of("v1"), "");
    }
}
