//! Writes through an `Api<K>`: status patch/replace through the status subresource and
//! server-side apply; and what every write helper shares (results, errors, the merge-patch
//! diff). Create-or-update and create-or-patch live on the cached [`Client`], which reads the
//! current object from the shared cache when it can and from the server otherwise.

use std::fmt::Debug;

use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::reconcile::ReconcileError;

#[cfg(doc)]
use crate::client::Client;

/// How many times [`Client::create_or_update`] and [`Client::create_or_patch`] try before giving up on
/// conflicts (409 on update, or `AlreadyExists` on a create that raced another writer).
pub const MAX_ATTEMPTS: usize = 5;

/// What [`Client::create_or_update`] or [`Client::create_or_patch`] did.
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
