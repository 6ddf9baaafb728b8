//! Finalizers: add or remove one with optimistic concurrency, and a finalizer flow
//! ([`finalize`]) with kube-runtime's semantics.

use std::fmt::Debug;
use std::future::Future;

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::reconcile::{Action, ReconcileError, ReconcileResult};

/// Why adding or removing a finalizer failed.
#[derive(Debug, thiserror::Error)]
pub enum FinalizerError {
    /// The object has no `metadata.name`.
    #[error("changing finalizer {finalizer:?}: the object has no name")]
    ObjectWithoutName {
        /// The finalizer.
        finalizer: String,
    },
    /// The patch adding the finalizer was rejected (a 409 Conflict means the object changed
    /// since it was read).
    #[error("adding finalizer {finalizer:?} to {name}: {source}")]
    AddFinalizer {
        /// The object's name.
        name: String,
        /// The finalizer.
        finalizer: String,
        /// The API error.
        source: kube::Error,
    },
    /// The patch removing the finalizer was rejected (a 409 Conflict means the object changed
    /// since it was read).
    #[error("removing finalizer {finalizer:?} from {name}: {source}")]
    RemoveFinalizer {
        /// The object's name.
        name: String,
        /// The finalizer.
        finalizer: String,
        /// The API error.
        source: kube::Error,
    },
}

/// Whether `obj` lists the finalizer `name`.
pub fn has_finalizer<K: Resource>(obj: &K, name: &str) -> bool {
    obj.meta()
        .finalizers
        .as_deref()
        .is_some_and(|f| f.iter().any(|x| x == name))
}

/// Writes `finalizers` with a JSON merge patch carrying the object's `resourceVersion`, so the
/// server answers 409 Conflict if the object changed since it was read.
async fn patch_finalizers<K>(
    api: &Api<K>,
    name: &str,
    resource_version: Option<&str>,
    finalizers: &[String],
) -> Result<K, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let mut metadata = json!({ "finalizers": finalizers });
    if let Some(rv) = resource_version {
        metadata["resourceVersion"] = json!(rv);
    }
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": metadata })),
    )
    .await
}

/// Adds the finalizer `finalizer` to `obj` and returns the object as stored. Does nothing (and
/// returns a copy of `obj`) if the finalizer is already there.
///
/// The patch carries `obj`'s `resourceVersion`: if the object changed since it was read the
/// server answers 409 Conflict ([`FinalizerError::AddFinalizer`]); read it again and retry.
pub async fn add_finalizer<K>(api: &Api<K>, obj: &K, finalizer: &str) -> Result<K, FinalizerError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    if has_finalizer(obj, finalizer) {
        return Ok(obj.clone());
    }
    let name = obj
        .meta()
        .name
        .clone()
        .ok_or_else(|| FinalizerError::ObjectWithoutName {
            finalizer: finalizer.to_owned(),
        })?;
    let mut finalizers = obj.finalizers().to_vec();
    finalizers.push(finalizer.to_owned());
    tracing::debug!(%name, finalizer, "adding finalizer");
    patch_finalizers(
        api,
        &name,
        obj.meta().resource_version.as_deref(),
        &finalizers,
    )
    .await
    .map_err(|source| FinalizerError::AddFinalizer {
        name,
        finalizer: finalizer.to_owned(),
        source,
    })
}

/// Removes the finalizer `finalizer` from `obj` and returns the object as stored, or `None` if
/// that was its last finalizer of a deleted object and it is now gone. Does nothing (and returns
/// a copy of `obj`) if the finalizer is absent.
///
/// Optimistic concurrency as in [`add_finalizer`].
pub async fn remove_finalizer<K>(
    api: &Api<K>,
    obj: &K,
    finalizer: &str,
) -> Result<Option<K>, FinalizerError>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    if !has_finalizer(obj, finalizer) {
        return Ok(Some(obj.clone()));
    }
    let name = obj
        .meta()
        .name
        .clone()
        .ok_or_else(|| FinalizerError::ObjectWithoutName {
            finalizer: finalizer.to_owned(),
        })?;
    let finalizers: Vec<String> = obj
        .finalizers()
        .iter()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect();
    tracing::debug!(%name, finalizer, "removing finalizer");
    match patch_finalizers(
        api,
        &name,
        obj.meta().resource_version.as_deref(),
        &finalizers,
    )
    .await
    {
        Ok(obj) => Ok(Some(obj)),
        // The object was being deleted and this was its last finalizer: it is gone.
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
        Err(source) => Err(FinalizerError::RemoveFinalizer {
            name,
            finalizer: finalizer.to_owned(),
            source,
        }),
    }
}

/// What the finalizer flow asks the reconciler to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<K> {
    /// The object is live and carries the finalizer: bring the world to its desired state.
    Apply(K),
    /// The object is being deleted: release what it owns outside the cluster. The finalizer
    /// is removed once this returns `Ok`; an error keeps it (and the object) for a retry.
    Cleanup(K),
}

/// The finalizer flow, with kube-runtime's `finalizer` semantics:
///
/// | object                                  | effect                                          |
/// |-----------------------------------------|-------------------------------------------------|
/// | live, finalizer absent                  | finalizer added, then `Apply` on the stored copy |
/// | live, finalizer present                 | `Apply`                                         |
/// | deleting, finalizer present             | `Cleanup`; on `Ok` the finalizer is removed      |
/// | deleting, finalizer absent              | nothing: `Ok(Action::Done)`                      |
///
/// Unlike kube-runtime, which stops after adding the finalizer and waits for the resulting
/// watch event, `Apply` runs right away on the object returned by the patch.
///
/// Errors from the finalizer patches are transient (a conflict is retried with backoff); an
/// object without a name is a terminal error; the reconciler's own errors pass through.
pub async fn finalize<K, F, Fut>(
    api: &Api<K>,
    obj: &K,
    finalizer_name: &str,
    reconcile: F,
) -> ReconcileResult
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = ReconcileResult>,
{
    let deleting = obj.meta().deletion_timestamp.is_some();
    let present = has_finalizer(obj, finalizer_name);
    let to_reconcile_error = |err: FinalizerError| match err {
        FinalizerError::ObjectWithoutName { .. } => ReconcileError::terminal(err),
        _ => ReconcileError::transient(err),
    };
    match (deleting, present) {
        (false, true) => reconcile(Event::Apply(obj.clone())).await,
        (false, false) => {
            let stored = add_finalizer(api, obj, finalizer_name)
                .await
                .map_err(to_reconcile_error)?;
            reconcile(Event::Apply(stored)).await
        }
        (true, true) => {
            let action = reconcile(Event::Cleanup(obj.clone())).await?;
            remove_finalizer(api, obj, finalizer_name)
                .await
                .map_err(to_reconcile_error)?;
            Ok(action)
        }
        (true, false) => {
            tracing::debug!(
                name = obj.meta().name.as_deref().unwrap_or_default(),
                finalizer = finalizer_name,
                "object is being deleted and the finalizer is gone: nothing to do"
            );
            Ok(Action::Done)
        }
    }
}
