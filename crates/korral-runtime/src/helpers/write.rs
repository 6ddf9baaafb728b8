//! Writes: create-or-update, create-or-patch, status patch/replace through the status
//! subresource, and server-side apply.

use std::fmt::Debug;

use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::reconcile::ReconcileError;

/// How many times [`create_or_update`] and [`create_or_patch`] try before giving up on
/// conflicts (409 on update, or `AlreadyExists` on a create that raced another writer).
pub const MAX_ATTEMPTS: usize = 5;

/// What [`create_or_update`] or [`create_or_patch`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperationResult {
    /// The object did not exist and was created.
    Created,
    /// The object existed and was changed.
    Updated,
    /// The object existed and the mutation changed nothing: no write was made.
    Unchanged,
}

/// Why a write helper failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Reading the current object failed.
    #[error("getting {name}: {source}")]
    Get {
        /// The object's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Creating the object failed.
    #[error("creating {name}: {source}")]
    Create {
        /// The object's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Replacing the object failed.
    #[error("updating {name}: {source}")]
    Update {
        /// The object's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Patching the object failed.
    #[error("patching {name}: {source}")]
    Patch {
        /// The object's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Every attempt met a conflict.
    #[error("writing {name}: still conflicting after {attempts} attempts: {source}")]
    Conflict {
        /// The object's name.
        name: String,
        /// How many attempts were made.
        attempts: usize,
        /// The last conflict.
        source: kube::Error,
    },
    /// The mutate function changed the object's name or namespace.
    #[error("mutating {name}: the mutate function must not change the name or namespace")]
    MutateChangedIdentity {
        /// The object's name.
        name: String,
    },
    /// Serializing the object to JSON (to compare or diff it) failed.
    #[error("serializing {name}: {source}")]
    Serialize {
        /// The object's name.
        name: String,
        /// The serde error.
        source: serde_json::Error,
    },
    /// Patching the status subresource failed.
    #[error("patching the status of {name}: {source}")]
    PatchStatus {
        /// The object's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Replacing the status subresource failed.
    #[error("replacing the status of {name}: {source}")]
    ReplaceStatus {
        /// The object's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The object given to [`replace_status`] (or to a write of the cached client) has no name.
    #[error("writing an object: it has no name")]
    ObjectWithoutName,
    /// Deleting the object failed.
    #[error("deleting {name}: {source}")]
    Delete {
        /// The object's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The server-side apply request failed.
    #[error("server-side applying {name} as {field_manager:?}: {source}")]
    ServerSideApply {
        /// The object's name.
        name: String,
        /// The field manager.
        field_manager: String,
        /// The API error.
        source: kube::Error,
    },
}

impl WriteError {
    /// The API error behind this one, if any.
    pub fn kube_error(&self) -> Option<&kube::Error> {
        match self {
            Self::Get { source, .. }
            | Self::Create { source, .. }
            | Self::Update { source, .. }
            | Self::Patch { source, .. }
            | Self::Conflict { source, .. }
            | Self::PatchStatus { source, .. }
            | Self::ReplaceStatus { source, .. }
            | Self::ServerSideApply { source, .. }
            | Self::Delete { source, .. } => Some(source),
            Self::MutateChangedIdentity { .. }
            | Self::Serialize { .. }
            | Self::ObjectWithoutName => None,
        }
    }

    /// The HTTP status code the API server answered, if this is an API error.
    pub fn status_code(&self) -> Option<u16> {
        match self.kube_error()? {
            kube::Error::Api(status) => Some(status.code),
            _ => None,
        }
    }
}

/// A failed write is transient (a conflict, a throttled or unavailable server may all go away),
/// except when retrying cannot help: the mutate function changed the object's identity, the
/// object cannot be serialized or has no name. Those are terminal.
impl From<WriteError> for ReconcileError {
    fn from(err: WriteError) -> Self {
        match err {
            WriteError::MutateChangedIdentity { .. }
            | WriteError::Serialize { .. }
            | WriteError::ObjectWithoutName => Self::terminal(err),
            _ => Self::transient(err),
        }
    }
}

pub(crate) fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.is_conflict())
}

pub(crate) fn is_already_exists(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.is_already_exists() || s.code == 409)
}

pub(crate) fn to_json<K: Serialize>(name: &str, obj: &K) -> Result<Value, WriteError> {
    serde_json::to_value(obj).map_err(|source| WriteError::Serialize {
        name: name.to_owned(),
        source,
    })
}

/// Reads `name`; `None` if absent.
async fn get_opt<K>(api: &Api<K>, name: &str) -> Result<Option<K>, WriteError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    api.get_opt(name).await.map_err(|source| WriteError::Get {
        name: name.to_owned(),
        source,
    })
}

/// Applies `mutate` to `default` (named `name`) and creates it. `Ok(None)` if it already
/// exists (another writer won the race): the caller reads again.
async fn create_from_default<K, F>(
    api: &Api<K>,
    name: &str,
    default: &K,
    mutate: &mut F,
) -> Result<Option<K>, WriteError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    F: FnMut(&mut K),
{
    let mut obj = default.clone();
    obj.meta_mut().name = Some(name.to_owned());
    let namespace = obj.meta().namespace.clone();
    mutate(&mut obj);
    if obj.meta().name.as_deref() != Some(name) || obj.meta().namespace != namespace {
        return Err(WriteError::MutateChangedIdentity {
            name: name.to_owned(),
        });
    }
    match api.create(&PostParams::default(), &obj).await {
        Ok(created) => {
            tracing::debug!(name, "created");
            Ok(Some(created))
        }
        Err(err) if is_already_exists(&err) => {
            tracing::debug!(name, "created concurrently by another writer, retrying");
            Ok(None)
        }
        Err(source) => Err(WriteError::Create {
            name: name.to_owned(),
            source,
        }),
    }
}

/// Applies `mutate` to a copy of `current`; returns the copy and whether it differs.
fn mutate_copy<K, F>(name: &str, current: &K, mutate: &mut F) -> Result<(K, bool), WriteError>
where
    K: Resource + Clone + Serialize,
    F: FnMut(&mut K),
{
    let mut desired = current.clone();
    mutate(&mut desired);
    if desired.meta().name != current.meta().name
        || desired.meta().namespace != current.meta().namespace
    {
        return Err(WriteError::MutateChangedIdentity {
            name: name.to_owned(),
        });
    }
    let changed = to_json(name, current)? != to_json(name, &desired)?;
    Ok((desired, changed))
}

/// Creates or updates the object `name`, as controller-runtime's `CreateOrUpdate`:
///
/// - absent: `mutate` is applied to `default` (its name set to `name`) and the result created
///   ([`OperationResult::Created`]);
/// - present: `mutate` is applied to a copy of the stored object, which is replaced only if the
///   mutation changed something ([`OperationResult::Updated`], else
///   [`OperationResult::Unchanged`]). The replace carries the read `resourceVersion`.
///
/// On a conflict (409 on replace, `AlreadyExists` on create) the object is read again and
/// `mutate` runs again, up to [`MAX_ATTEMPTS`] times, which is why `mutate` is `FnMut`: it
/// should set the desired state, not depend on how many times it ran. It must not change the
/// name or namespace. Returns what happened and the object as stored.
pub async fn create_or_update<K, F>(
    api: &Api<K>,
    name: &str,
    default: K,
    mut mutate: F,
) -> Result<(OperationResult, K), WriteError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    F: FnMut(&mut K),
{
    let mut last_conflict = None;
    for attempt in 1..=MAX_ATTEMPTS {
        let Some(current) = get_opt(api, name).await? else {
            match create_from_default(api, name, &default, &mut mutate).await? {
                Some(created) => return Ok((OperationResult::Created, created)),
                None => continue,
            }
        };
        let (desired, changed) = mutate_copy(name, &current, &mut mutate)?;
        if !changed {
            return Ok((OperationResult::Unchanged, current));
        }
        match api.replace(name, &PostParams::default(), &desired).await {
            Ok(updated) => {
                tracing::debug!(name, "updated");
                return Ok((OperationResult::Updated, updated));
            }
            Err(err) if is_conflict(&err) => {
                tracing::debug!(name, attempt, "conflict on update, retrying");
                last_conflict = Some(err);
            }
            Err(source) => {
                return Err(WriteError::Update {
                    name: name.to_owned(),
                    source,
                });
            }
        }
    }
    Err(conflict_error(name, last_conflict))
}

pub(crate) fn conflict_error(name: &str, last: Option<kube::Error>) -> WriteError {
    let source = last.unwrap_or_else(|| {
        kube::Error::Api(Box::new(kube::core::Status::failure(
            "the object was created and deleted concurrently",
            "Conflict",
        )))
    });
    WriteError::Conflict {
        name: name.to_owned(),
        attempts: MAX_ATTEMPTS,
        source,
    }
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`, or `None` if they are equal.
/// Objects are diffed key by key (removed keys become `null`); anything else, arrays included,
/// is replaced whole.
pub fn merge_patch_diff(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            let mut patch = Map::new();
            for (key, old_value) in old {
                match new.get(key) {
                    None => {
                        patch.insert(key.clone(), Value::Null);
                    }
                    Some(new_value) => {
                        if let Some(diff) = merge_patch_diff(old_value, new_value) {
                            patch.insert(key.clone(), diff);
                        }
                    }
                }
            }
            for (key, new_value) in new {
                if !old.contains_key(key) {
                    patch.insert(key.clone(), new_value.clone());
                }
            }
            Some(Value::Object(patch))
        }
        _ => Some(new.clone()),
    }
}

/// Creates or patches the object `name`, as controller-runtime's `CreateOrPatch`: like
/// [`create_or_update`], but an existing object is changed with a JSON merge patch of the
/// difference the mutation made (no `resourceVersion` precondition, so concurrent writers of
/// other fields do not conflict).
///
/// The patch goes to the main endpoint: for a resource with a status subresource, status
/// changes are ignored there; write them with [`patch_status`].
pub async fn create_or_patch<K, F>(
    api: &Api<K>,
    name: &str,
    default: K,
    mut mutate: F,
) -> Result<(OperationResult, K), WriteError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    F: FnMut(&mut K),
{
    for _ in 1..=MAX_ATTEMPTS {
        let Some(current) = get_opt(api, name).await? else {
            match create_from_default(api, name, &default, &mut mutate).await? {
                Some(created) => return Ok((OperationResult::Created, created)),
                None => continue,
            }
        };
        let (desired, _) = mutate_copy(name, &current, &mut mutate)?;
        let Some(mut patch) =
            merge_patch_diff(&to_json(name, &current)?, &to_json(name, &desired)?)
        else {
            return Ok((OperationResult::Unchanged, current));
        };
        // Keep the patch to what the mutation changed (never the resourceVersion precondition).
        if let Some(meta) = patch.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
        }
        let patched = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| WriteError::Patch {
                name: name.to_owned(),
                source,
            })?;
        tracing::debug!(name, "patched");
        return Ok((OperationResult::Updated, patched));
    }
    Err(conflict_error(name, None))
}

/// Patches the status of `name` through the status subresource with the JSON merge patch
/// `{"status": status}`: only `status` changes (spec and metadata are untouched, and
/// `generation` does not move). Returns the object as stored.
pub async fn patch_status<K>(api: &Api<K>, name: &str, status: Value) -> Result<K, WriteError>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .map_err(|source| WriteError::PatchStatus {
        name: name.to_owned(),
        source,
    })
}

/// Replaces the status of `obj` through the status subresource (an update carrying `obj`'s
/// `resourceVersion`, so a stale object gets 409 Conflict). Everything but the status is
/// ignored by the server. Returns the object as stored.
pub async fn replace_status<K>(api: &Api<K>, obj: &K) -> Result<K, WriteError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = obj
        .meta()
        .name
        .clone()
        .ok_or(WriteError::ObjectWithoutName)?;
    api.replace_status(&name, &PostParams::default(), obj)
        .await
        .map_err(|source| WriteError::ReplaceStatus { name, source })
}

/// Server-side applies `obj` as `name` with the field manager `field_manager` (`force` takes
/// over fields owned by other managers instead of failing with 409). `obj` should hold only
/// the fields this manager wants to own, with `apiVersion` and `kind`.
///
/// The embedded API server does not support server-side apply yet and answers 415
/// `UnsupportedMediaType`, which comes back as [`WriteError::ServerSideApply`].
pub async fn server_side_apply<K>(
    api: &Api<K>,
    name: &str,
    obj: &K,
    field_manager: &str,
    force: bool,
) -> Result<K, WriteError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let mut params = PatchParams::apply(field_manager);
    params.force = force;
    tracing::debug!(name, field_manager, force, "server-side apply");
    api.patch(name, &params, &Patch::Apply(obj))
        .await
        .map_err(|source| WriteError::ServerSideApply {
            name: name.to_owned(),
            field_manager: field_manager.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_diff_of_objects() {
        let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "gone": true});
        let new = json!({"a": 1, "b": {"c": 2, "d": 4}, "e": [1], "added": "x"});
        assert_eq!(
            merge_patch_diff(&old, &new),
            Some(json!({"b": {"d": 4}, "e": [1], "gone": null, "added": "x"}))
        );
        assert_eq!(merge_patch_diff(&old, &old), None);
        assert_eq!(merge_patch_diff(&json!(1), &json!("x")), Some(json!("x")));
    }
}
