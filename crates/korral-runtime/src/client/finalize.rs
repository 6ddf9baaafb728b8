//! Finalizers through the cached client: add, remove and the finalizer flow, each patch
//! counted and remembered like every write.

use std::future::Future;

use kube::Resource;

use super::{Client, Object, Verb};
use crate::helpers::finalizer::{self, FinalizerError, has_finalizer};
use crate::reconcile::{ObjectRef, ReconcileError, ReconcileResult};

impl Client {
    /// Adds the finalizer `finalizer` to `obj` (a merge patch carrying its `resourceVersion`: 409
    /// if it is stale) and returns the object as stored; no request if it is already there.
    pub async fn add_finalizer<K>(&self, obj: &K, finalizer: &str) -> Result<K, FinalizerError>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        if has_finalizer(obj, finalizer) {
            return Ok(obj.clone());
        }
        self.count(Verb::Patch);
        let stored = finalizer::add_finalizer(&self.api_for(&(), obj), obj, finalizer).await?;
        self.remember(&(), &stored);
        Ok(stored)
    }

    /// Removes the finalizer `finalizer` from `obj` and returns the object as stored, or `None`
    /// if that let a deleted object go; no request if it is absent.
    pub async fn remove_finalizer<K>(
        &self,
        obj: &K,
        finalizer: &str,
    ) -> Result<Option<K>, FinalizerError>
    where
        K: Object + Resource<DynamicType = ()>,
    {
        if !has_finalizer(obj, finalizer) {
            return Ok(Some(obj.clone()));
        }
        self.count(Verb::Patch);
        let stored = finalizer::remove_finalizer(&self.api_for(&(), obj), obj, finalizer).await?;
        match &stored {
            Some(stored) => self.remember(&(), stored),
            None => {
                if let Some(key) = ObjectRef::from_object(obj) {
                    self.inner
                        .written
                        .record_deleted::<K>(&(), key, Some(&self.inner.cache));
                }
            }
        }
        Ok(stored)
    }

    /// The finalizer flow of [`finalizer::finalize`] through this client (the finalizer
    /// patches are counted and remembered like every write).
    pub async fn finalize<K, F, Fut>(
        &self,
        obj: &K,
        finalizer_name: &str,
        reconcile: F,
    ) -> ReconcileResult
    where
        K: Object + Resource<DynamicType = ()>,
        F: FnOnce(finalizer::Event<K>) -> Fut,
        Fut: Future<Output = ReconcileResult>,
    {
        let deleting = obj.meta().deletion_timestamp.is_some();
        let present = has_finalizer(obj, finalizer_name);
        let to_reconcile_error = |err: FinalizerError| match err {
            FinalizerError::ObjectWithoutName { .. } => ReconcileError::terminal(err),
            _ => ReconcileError::transient(err),
        };
        match (deleting, present) {
            (false, true) => reconcile(finalizer::Event::Apply(obj.clone())).await,
            (false, false) => {
                let stored = self
                    .add_finalizer(obj, finalizer_name)
                    .await
                    .map_err(to_reconcile_error)?;
                reconcile(finalizer::Event::Apply(stored)).await
            }
            (true, true) => {
                let action = reconcile(finalizer::Event::Cleanup(obj.clone())).await?;
                self.remove_finalizer(obj, finalizer_name)
                    .await
                    .map_err(to_reconcile_error)?;
                Ok(action)
            }
            (true, false) => Ok(crate::reconcile::Action::Done),
        }
    }
}
