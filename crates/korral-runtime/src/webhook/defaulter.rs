//! Typed defaulting webhooks: a [`Defaulter`] mutates the typed object; the server answers with
//! the JSONPatch from the object before to the object after (controller-runtime's
//! `CustomDefaulter`: both sides are the typed object serialized, so fields the type does not
//! know are left alone).

use std::future::Future;
use std::marker::PhantomData;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::Resource;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::denial::Denial;
use super::handler::{AdmissionHandler, deny, patch_response, typed_object};

/// Sets defaults on objects of kind `K` when they are created or updated.
///
/// ```
/// use korral_runtime::webhook::{Defaulter, Denial};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::core::{DynamicObject, admission::AdmissionRequest};
///
/// struct DefaultData;
///
/// impl Defaulter<ConfigMap> for DefaultData {
///     async fn default(
///         &self,
///         _request: &AdmissionRequest<DynamicObject>,
///         cm: &mut ConfigMap,
///     ) -> Result<(), Denial> {
///         let data = cm.data.get_or_insert_with(Default::default);
///         data.entry("mode".to_owned()).or_insert_with(|| "standard".to_owned());
///         Ok(())
///     }
/// }
/// ```
pub trait Defaulter<K>: Send + Sync + 'static {
    /// Sets the defaults on `object` (the object of a CREATE or UPDATE `request`); an error
    /// denies the request.
    fn default(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        object: &mut K,
    ) -> impl Future<Output = Result<(), Denial>> + Send;
}

/// The admission handler of a [`Defaulter`] (see [`super::WebhookServer::defaulter`]).
pub struct DefaultingHandler<K, D> {
    defaulter: D,
    kind: PhantomData<fn() -> K>,
}

impl<K, D> DefaultingHandler<K, D> {
    /// Wraps `defaulter`.
    pub fn new(defaulter: D) -> Self {
        Self {
            defaulter,
            kind: PhantomData,
        }
    }
}

impl<K, D> DefaultingHandler<K, D>
where
    K: Resource + Serialize + DeserializeOwned + Send + Sync + 'static,
    D: Defaulter<K>,
{
    async fn respond(&self, request: AdmissionRequest<DynamicObject>) -> AdmissionResponse {
        // Nothing to default on a delete (or connect): allowed, as controller-runtime.
        if matches!(request.operation, Operation::Delete | Operation::Connect) {
            return AdmissionResponse::from(&request);
        }
        let mut object: K = match typed_object(&request, request.object.as_ref(), "object") {
            Ok(object) => object,
            Err(refused) => return *refused,
        };
        let before = match serde_json::to_value(&object) {
            Ok(before) => before,
            Err(e) => return super::review::errored(&request.uid, 500, e.to_string()),
        };
        if let Err(denial) = self.defaulter.default(&request, &mut object).await {
            return deny(&request, denial);
        }
        match serde_json::to_value(&object) {
            Ok(after) => patch_response(&request, &before, &after),
            Err(e) => super::review::errored(&request.uid, 500, e.to_string()),
        }
    }
}

impl<K, D> AdmissionHandler for DefaultingHandler<K, D>
where
    K: Resource + Serialize + DeserializeOwned + Send + Sync + 'static,
    D: Defaulter<K>,
{
    fn handle(&self, request: AdmissionRequest<DynamicObject>) -> BoxFuture<'_, AdmissionResponse> {
        self.respond(request).boxed()
    }
}
