//! Typed validating webhooks: a [`Validator`] checks the typed object on create, update and
//! delete, returning warnings or a [`Denial`] (controller-runtime's `CustomValidator`).

use std::future::Future;
use std::marker::PhantomData;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::Resource;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation};
use serde::de::DeserializeOwned;

use super::denial::{Denial, Warnings};
use super::handler::{AdmissionHandler, deny, typed_object};

/// Validates objects of kind `K`.
///
/// ```
/// use korral_runtime::webhook::{Denial, FieldError, Validator, Warnings};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::core::{DynamicObject, admission::AdmissionRequest};
///
/// struct SmallData;
///
/// impl Validator<ConfigMap> for SmallData {
///     async fn validate_create(
///         &self,
///         _request: &AdmissionRequest<DynamicObject>,
///         cm: &ConfigMap,
///     ) -> Result<Warnings, Denial> {
///         let entries = cm.data.as_ref().map_or(0, |d| d.len());
///         if entries > 10 {
///             return Err(FieldError::too_many("data", entries, 10).into());
///         }
///         Ok(Vec::new())
///     }
///
///     async fn validate_update(
///         &self,
///         request: &AdmissionRequest<DynamicObject>,
///         _old: &ConfigMap,
///         new: &ConfigMap,
///     ) -> Result<Warnings, Denial> {
///         self.validate_create(request, new).await
///     }
/// }
/// ```
pub trait Validator<K>: Send + Sync + 'static {
    /// Validates `object` being created.
    fn validate_create(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        object: &K,
    ) -> impl Future<Output = Result<Warnings, Denial>> + Send;

    /// Validates the change from `old` to `new`.
    fn validate_update(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        old: &K,
        new: &K,
    ) -> impl Future<Output = Result<Warnings, Denial>> + Send;

    /// Validates deleting `object` (the stored object). Allows by default.
    fn validate_delete(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        object: &K,
    ) -> impl Future<Output = Result<Warnings, Denial>> + Send {
        let _ = (request, object);
        async { Ok(Vec::new()) }
    }
}

/// The admission handler of a [`Validator`] (see [`super::WebhookServer::validator`]).
pub struct ValidatingHandler<K, V> {
    validator: V,
    kind: PhantomData<fn() -> K>,
}

impl<K, V> ValidatingHandler<K, V> {
    /// Wraps `validator`.
    pub fn new(validator: V) -> Self {
        Self {
            validator,
            kind: PhantomData,
        }
    }
}

impl<K, V> ValidatingHandler<K, V>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
    V: Validator<K>,
{
    async fn verdict(
        &self,
        request: &AdmissionRequest<DynamicObject>,
    ) -> Result<Result<Warnings, Denial>, Box<AdmissionResponse>> {
        let object = || typed_object::<K, _>(request, request.object.as_ref(), "object");
        let old = || typed_object::<K, _>(request, request.old_object.as_ref(), "oldObject");
        Ok(match request.operation {
            Operation::Create => self.validator.validate_create(request, &object()?).await,
            Operation::Update => {
                let (old, new) = (old()?, object()?);
                self.validator.validate_update(request, &old, &new).await
            }
            Operation::Delete => self.validator.validate_delete(request, &old()?).await,
            Operation::Connect => Ok(Vec::new()),
        })
    }

    async fn respond(&self, request: AdmissionRequest<DynamicObject>) -> AdmissionResponse {
        match self.verdict(&request).await {
            Err(refused) => *refused,
            Ok(Err(denial)) => deny(&request, denial),
            Ok(Ok(warnings)) => {
                let mut response = AdmissionResponse::from(&request);
                if !warnings.is_empty() {
                    response.warnings = Some(warnings);
                }
                response
            }
        }
    }
}

impl<K, V> AdmissionHandler for ValidatingHandler<K, V>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
    V: Validator<K>,
{
    fn handle(&self, request: AdmissionRequest<DynamicObject>) -> BoxFuture<'_, AdmissionResponse> {
        self.respond(request).boxed()
    }
}
