//! Writes of the cached client: create, replace, patch, status, delete and server-side apply,
//! always to the API server, each remembered for read-your-writes.

use kube::Resource;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::json;
use std::fmt::Debug;

use super::{ApiScope, Client, Object, Verb, namespace_opt, object_ref};
use crate::helpers::write::WriteError;

impl Client {
    pub(super) fn remember<K: Object>(&self, dt: &K::DynamicType, obj: &K) {
        self.inner.written.record(dt, obj, Some(&self.inner.cache));
    }

    pub(super) fn api_for<K: Object>(&self, dt: &K::DynamicType, obj: &K) -> kube::Api<K> {
        K::Scope::api::<K>(self.inner.kube.clone(), dt, obj.meta().namespace.as_deref())
    }

    /// Creates `obj` (in its `metadata.namespace`) and returns it as stored.
    pub async fn create<K>(&self, obj: &K) -> Result<K, WriteError>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        self.create_with(&(), obj).await
    }

    /// [`Client::create`] for a type known at run time.
    pub async fn create_with<K: Object>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
    ) -> Result<K, WriteError> {
        let name = obj
            .meta()
            .name
            .clone()
            .or_else(|| obj.meta().generate_name.clone())
            .unwrap_or_default();
        self.count(Verb::Create);
        let created = self
            .api_for(dt, obj)
            .create(&PostParams::default(), obj)
            .await
            .map_err(|source| WriteError::Create { name, source })?;
        self.remember(dt, &created);
        Ok(created)
    }

    /// Replaces `obj` (an update carrying its `resourceVersion`: 409 if it is stale) and returns
    /// it as stored.
    pub async fn replace<K>(&self, obj: &K) -> Result<K, WriteError>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        self.replace_with(&(), obj).await
    }

    /// [`Client::replace`] for a type known at run time.
    pub async fn replace_with<K: Object>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
    ) -> Result<K, WriteError> {
        let name = obj
            .meta()
            .name
            .clone()
            .ok_or(WriteError::ObjectWithoutName)?;
        self.count(Verb::Update);
        let updated = self
            .api_for(dt, obj)
            .replace(&name, &PostParams::default(), obj)
            .await
            .map_err(|source| WriteError::Update { name, source })?;
        self.remember(dt, &updated);
        Ok(updated)
    }

    /// Patches `namespace/name` (empty namespace: cluster-scoped) and returns it as stored.
    pub async fn patch<K, P>(
        &self,
        namespace: &str,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, WriteError>
    where
        K: Object + Resource<DynamicType = ()>,
        P: Serialize + Debug,
    {
        self.patch_with(&(), namespace, name, params, patch).await
    }

    /// [`Client::patch`] for a type known at run time.
    pub async fn patch_with<K: Object, P: Serialize + Debug>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, WriteError> {
        let api = K::Scope::api::<K>(self.inner.kube.clone(), dt, namespace_opt(namespace));
        self.count(Verb::Patch);
        let patched = api
            .patch(name, params, patch)
            .await
            .map_err(|source| WriteError::Patch {
                name: name.to_owned(),
                source,
            })?;
        self.remember(dt, &patched);
        Ok(patched)
    }

    /// Patches the status of `obj` through the status subresource with the JSON merge patch
    /// `{"status": status}` (spec and metadata untouched) and returns the object as stored.
    pub async fn patch_status<K, S>(&self, obj: &K, status: &S) -> Result<K, WriteError>
    where
        K: Object + Resource<DynamicType = ()>,
        S: Serialize,
    {
        self.patch_status_with(&(), obj, status).await
    }

    /// [`Client::patch_status`] for a type known at run time.
    pub async fn patch_status_with<K: Object, S: Serialize>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        status: &S,
    ) -> Result<K, WriteError> {
        let name = obj
            .meta()
            .name
            .clone()
            .ok_or(WriteError::ObjectWithoutName)?;
        let status = serde_json::to_value(status).map_err(|source| WriteError::Serialize {
            name: name.clone(),
            source,
        })?;
        self.count(Verb::Patch);
        let patched = self
            .api_for(dt, obj)
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .map_err(|source| WriteError::PatchStatus { name, source })?;
        self.remember(dt, &patched);
        Ok(patched)
    }

    /// Replaces the status of `obj` through the status subresource (an update carrying its
    /// `resourceVersion`: 409 if it is stale) and returns the object as stored.
    pub async fn replace_status<K>(&self, obj: &K) -> Result<K, WriteError>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        let name = obj
            .meta()
            .name
            .clone()
            .ok_or(WriteError::ObjectWithoutName)?;
        self.count(Verb::Update);
        let replaced = self
            .api_for(&(), obj)
            .replace_status(&name, &PostParams::default(), obj)
            .await
            .map_err(|source| WriteError::ReplaceStatus { name, source })?;
        self.remember(&(), &replaced);
        Ok(replaced)
    }

    /// Deletes `namespace/name` (empty namespace: cluster-scoped). Returns the object while its
    /// deletion waits (finalizers, a graceful deletion period, a Namespace's spec finalizers),
    /// `None` once it is gone (absent already counts as gone).
    pub async fn delete<K>(
        &self,
        namespace: &str,
        name: &str,
        params: &DeleteParams,
    ) -> Result<Option<K>, WriteError>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        self.delete_with(&(), namespace, name, params).await
    }

    /// [`Client::delete`] for a type known at run time.
    pub async fn delete_with<K: Object>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
        params: &DeleteParams,
    ) -> Result<Option<K>, WriteError> {
        let ns = namespace_opt(namespace);
        let api = K::Scope::api::<K>(self.inner.kube.clone(), dt, ns);
        self.count(Verb::Delete);
        let result = api.delete(name, params).await;
        let forget = || {
            self.inner.written.record_deleted::<K>(
                dt,
                object_ref(ns, name),
                Some(&self.inner.cache),
            );
        };
        match result {
            // A dry run changes nothing: nothing to remember.
            Ok(either) if params.dry_run => Ok(either.left()),
            Ok(either) => match either.left() {
                // Kinds with upstream's `ReturnDeletedObject` (Pods, Services, custom
                // resources...) answer the object whether it is gone or still held: what
                // the object says decides.
                Some(obj) => match deletion_state(&obj) {
                    DeletionState::Pending => {
                        self.remember(dt, &obj);
                        Ok(Some(obj))
                    }
                    DeletionState::Gone => {
                        forget();
                        Ok(None)
                    }
                    // Left to the cache, which the watch brings up to date.
                    DeletionState::Unknown => Ok(Some(obj)),
                },
                None => {
                    forget();
                    Ok(None)
                }
            },
            Err(kube::Error::Api(status)) if status.code == 404 => {
                forget();
                Ok(None)
            }
            Err(source) => Err(WriteError::Delete {
                name: name.to_owned(),
                source,
            }),
        }
    }

    /// Server-side applies `obj` (with `apiVersion` and `kind`, and only the fields this manager
    /// owns) as `field_manager` (`force` takes over fields of other managers) and returns the
    /// object as stored.
    pub async fn server_side_apply<K>(
        &self,
        obj: &K,
        field_manager: &str,
        force: bool,
    ) -> Result<K, WriteError>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        let name = obj
            .meta()
            .name
            .clone()
            .ok_or(WriteError::ObjectWithoutName)?;
        let mut params = PatchParams::apply(field_manager);
        params.force = force;
        self.count(Verb::Apply);
        let applied = self
            .api_for(&(), obj)
            .patch(&name, &params, &Patch::Apply(obj))
            .await
            .map_err(|source| WriteError::ServerSideApply {
                name,
                field_manager: field_manager.to_owned(),
                source,
            })?;
        self.remember(&(), &applied);
        Ok(applied)
    }
}

/// What an object returned by a delete says about its deletion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeletionState {
    /// Still stored: finalizers hold it, or its graceful deletion period has not run out.
    Pending,
    /// Removed: the answer is its last state (no deletion timestamp: removed without being
    /// marked; or marked with period 0 and nothing holding it).
    Gone,
    /// Marked with period 0 and no metadata finalizer, but its spec lists finalizers (a
    /// Namespace being terminated): the cache decides.
    Unknown,
}

/// Reads the deletion state from an object a delete answered with.
fn deletion_state<K: Object>(obj: &K) -> DeletionState {
    let meta = obj.meta();
    if meta.finalizers.as_ref().is_some_and(|f| !f.is_empty())
        || meta.deletion_grace_period_seconds.is_some_and(|g| g > 0)
    {
        return DeletionState::Pending;
    }
    if meta.deletion_timestamp.is_none() {
        return DeletionState::Gone;
    }
    let spec_finalizers = serde_json::to_value(obj).ok().is_some_and(|v| {
        v.pointer("/spec/finalizers")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|f| !f.is_empty())
    });
    if spec_finalizers {
        DeletionState::Unknown
    } else {
        DeletionState::Gone
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use serde_json::json;

    use super::{DeletionState, deletion_state};

    fn pod(metadata: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": metadata})).expect("pod")
    }

    /// A Pod deleted with period 0 is answered with its last state: gone, not pending (the
    /// client remembered it as still there, and cached reads kept showing it).
    #[test]
    fn returned_objects_say_whether_their_deletion_is_pending() {
        let at = "2026-01-01T00:00:00Z";
        let cases = [
            (json!({"name": "p"}), DeletionState::Gone),
            (
                json!({"name": "p", "deletionTimestamp": at, "deletionGracePeriodSeconds": 0}),
                DeletionState::Gone,
            ),
            (
                json!({"name": "p", "deletionTimestamp": at, "deletionGracePeriodSeconds": 30}),
                DeletionState::Pending,
            ),
            (
                json!({"name": "p", "deletionTimestamp": at, "deletionGracePeriodSeconds": 0,
                       "finalizers": ["example.com/f"]}),
                DeletionState::Pending,
            ),
        ];
        for (metadata, want) in cases {
            assert_eq!(deletion_state(&pod(metadata.clone())), want, "{metadata}");
        }
        let terminating: Namespace = serde_json::from_value(json!({
            "metadata": {"name": "ns", "deletionTimestamp": at, "deletionGracePeriodSeconds": 0},
            "spec": {"finalizers": ["kubernetes"]},
        }))
        .expect("namespace");
        assert_eq!(deletion_state(&terminating), DeletionState::Unknown);
    }
}
