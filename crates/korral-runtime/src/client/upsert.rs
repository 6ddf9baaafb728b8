//! Create-or-update and create-or-patch through the cached client: the current object read as
//! the client reads (the cache when current), a fallible mutate, writes to the API server, and
//! conflicts retried reading from the server.

use std::sync::Arc;

use kube::Resource;
use kube::api::{Patch, PatchParams};
use serde_json::Value;

use super::{Client, Object};
use crate::helpers::write::{
    MAX_ATTEMPTS, OperationResult, WriteError, conflict_error, is_already_exists, is_conflict,
    merge_patch_diff, to_json,
};

impl Client {
    /// Creates or updates the object named by `default`'s `metadata.name` (and namespace), as
    /// controller-runtime's `CreateOrUpdate`:
    ///
    /// - absent: `mutate` is applied to `default` and the result created
    ///   ([`OperationResult::Created`]);
    /// - present: `mutate` is applied to a copy of the current object, which is replaced (with
    ///   the read `resourceVersion`) only if the mutation changed something
    ///   ([`OperationResult::Updated`], else [`OperationResult::Unchanged`], no request).
    ///
    /// The current object is read as [`Client::get_opt`] reads (the cache when the type is
    /// cached, with read-your-writes). If `mutate` fails, its error is returned as is and
    /// nothing is written. A conflict (409 on replace, `AlreadyExists` on create) reads the
    /// object again from the API server and runs `mutate` again, up to [`MAX_ATTEMPTS`] times:
    /// `mutate` should set the desired state, not depend on how many times it ran, and must not
    /// change the name or namespace. Returns what happened and the object as stored.
    pub async fn create_or_update<K, F, E>(
        &self,
        default: K,
        mutate: F,
    ) -> Result<(OperationResult, K), E>
    where
        K: Object + Resource<DynamicType = ()>,
        F: FnMut(&mut K) -> Result<(), E>,
        E: From<WriteError>,
    {
        self.create_or_update_with(&(), default, mutate).await
    }

    /// [`Client::create_or_update`] for a type known at run time.
    pub async fn create_or_update_with<K, F, E>(
        &self,
        dt: &K::DynamicType,
        default: K,
        mut mutate: F,
    ) -> Result<(OperationResult, K), E>
    where
        K: Object,
        F: FnMut(&mut K) -> Result<(), E>,
        E: From<WriteError>,
    {
        let name = default
            .meta()
            .name
            .clone()
            .ok_or(WriteError::ObjectWithoutName)?;
        let mut from_server = false;
        let mut last_conflict = None;
        for attempt in 1..=MAX_ATTEMPTS {
            let (current, desired) = match self.step(dt, &default, &mut mutate, from_server).await?
            {
                Step::Created(created) => return Ok((OperationResult::Created, created)),
                Step::Raced => {
                    from_server = true;
                    continue;
                }
                Step::Existing { current, desired } => (current, desired),
            };
            if to_json(&name, current.as_ref())? == to_json(&name, &desired)? {
                return Ok((OperationResult::Unchanged, (*current).clone()));
            }
            match self.replace_with(dt, &desired).await {
                Ok(updated) => {
                    tracing::debug!(%name, "updated");
                    return Ok((OperationResult::Updated, updated));
                }
                Err(WriteError::Update { source, .. }) if is_conflict(&source) => {
                    tracing::debug!(%name, attempt, "conflict on update, reading from the server");
                    from_server = true;
                    last_conflict = Some(source);
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(conflict_error(&name, last_conflict).into())
    }

    /// Creates or patches the object named by `default`'s `metadata.name`, as
    /// controller-runtime's `CreateOrPatch`: like [`Client::create_or_update`], but an existing
    /// object is changed with a JSON merge patch of what the mutation changed (no
    /// `resourceVersion` precondition). Status changes are ignored by the main endpoint of a
    /// resource with a status subresource: write them with [`Client::patch_status`].
    pub async fn create_or_patch<K, F, E>(
        &self,
        default: K,
        mutate: F,
    ) -> Result<(OperationResult, K), E>
    where
        K: Object + Resource<DynamicType = ()>,
        F: FnMut(&mut K) -> Result<(), E>,
        E: From<WriteError>,
    {
        self.create_or_patch_with(&(), default, mutate).await
    }

    /// [`Client::create_or_patch`] for a type known at run time.
    pub async fn create_or_patch_with<K, F, E>(
        &self,
        dt: &K::DynamicType,
        default: K,
        mut mutate: F,
    ) -> Result<(OperationResult, K), E>
    where
        K: Object,
        F: FnMut(&mut K) -> Result<(), E>,
        E: From<WriteError>,
    {
        let name = default
            .meta()
            .name
            .clone()
            .ok_or(WriteError::ObjectWithoutName)?;
        let namespace = default.meta().namespace.clone();
        let mut from_server = false;
        for _ in 1..=MAX_ATTEMPTS {
            let (current, desired) = match self.step(dt, &default, &mut mutate, from_server).await?
            {
                Step::Created(created) => return Ok((OperationResult::Created, created)),
                Step::Raced => {
                    from_server = true;
                    continue;
                }
                Step::Existing { current, desired } => (current, desired),
            };
            let Some(mut patch) = merge_patch_diff(
                &to_json(&name, current.as_ref())?,
                &to_json(&name, &desired)?,
            ) else {
                return Ok((OperationResult::Unchanged, (*current).clone()));
            };
            if let Some(meta) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
            }
            let patched = self
                .patch_with(
                    dt,
                    namespace.as_deref().unwrap_or_default(),
                    &name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
            tracing::debug!(%name, "patched");
            return Ok((OperationResult::Updated, patched));
        }
        Err(conflict_error(&name, None).into())
    }

    /// One attempt's start, shared by create-or-update and create-or-patch: reads the current
    /// object (from the server when `from_server`), creates it from `default` when absent, and
    /// otherwise applies `mutate` to a copy of it.
    async fn step<K, F, E>(
        &self,
        dt: &K::DynamicType,
        default: &K,
        mutate: &mut F,
        from_server: bool,
    ) -> Result<Step<K>, E>
    where
        K: Object,
        F: FnMut(&mut K) -> Result<(), E>,
        E: From<WriteError>,
    {
        let name = default.meta().name.clone().unwrap_or_default();
        let namespace = default.meta().namespace.clone();
        let current = self
            .read_current::<K>(dt, namespace.as_deref(), &name, from_server)
            .await?;
        let Some(current) = current else {
            return Ok(match self.create_from(dt, default, mutate).await? {
                Some(created) => Step::Created(created),
                None => Step::Raced,
            });
        };
        let mut desired = (*current).clone();
        mutate(&mut desired)?;
        check_identity(&name, current.as_ref(), &desired)?;
        Ok(Step::Existing { current, desired })
    }

    async fn read_current<K: Object>(
        &self,
        dt: &K::DynamicType,
        namespace: Option<&str>,
        name: &str,
        from_server: bool,
    ) -> Result<Option<Arc<K>>, WriteError> {
        let read = if from_server {
            self.read_from_server(dt, namespace, name).await
        } else {
            self.read(dt, namespace, name, true).await
        };
        read.map_err(|source| WriteError::Get {
            name: name.to_owned(),
            source,
        })
    }

    /// Applies `mutate` to `default` and creates it; `Ok(None)` if it already exists (the cache
    /// was behind, or another writer won the race).
    async fn create_from<K, F, E>(
        &self,
        dt: &K::DynamicType,
        default: &K,
        mutate: &mut F,
    ) -> Result<Option<K>, E>
    where
        K: Object,
        F: FnMut(&mut K) -> Result<(), E>,
        E: From<WriteError>,
    {
        let mut obj = default.clone();
        let name = obj.meta().name.clone().unwrap_or_default();
        mutate(&mut obj)?;
        check_identity(&name, default, &obj)?;
        match self.create_with(dt, &obj).await {
            Ok(created) => {
                tracing::debug!(%name, "created");
                Ok(Some(created))
            }
            Err(WriteError::Create { source, .. }) if is_already_exists(&source) => {
                tracing::debug!(%name, "already exists, reading from the server");
                Ok(None)
            }
            Err(other) => Err(other.into()),
        }
    }
}

/// Where one attempt of create-or-update/patch stands.
enum Step<K> {
    /// The object was absent and is now created.
    Created(K),
    /// It was absent from what was read but exists (a stale cache or a racing writer): read
    /// again from the server.
    Raced,
    /// It exists: the current object and the mutated copy.
    Existing {
        /// As read.
        current: Arc<K>,
        /// After `mutate`.
        desired: K,
    },
}

/// Fails if `mutate` changed the name or namespace of `before`.
fn check_identity<K: Resource>(name: &str, before: &K, after: &K) -> Result<(), WriteError> {
    if after.meta().name != before.meta().name || after.meta().namespace != before.meta().namespace
    {
        return Err(WriteError::MutateChangedIdentity {
            name: name.to_owned(),
        });
    }
    Ok(())
}
