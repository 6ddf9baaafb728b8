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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::review::decode_request;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    /// Allows creates with a warning, refuses every update.
    struct CreateOnly;

    impl Validator<ConfigMap> for CreateOnly {
        async fn validate_create(
            &self,
            _request: &AdmissionRequest<DynamicObject>,
            _cm: &ConfigMap,
        ) -> Result<Warnings, Denial> {
            Ok(vec!["created".to_owned()])
        }

        async fn validate_update(
            &self,
            _request: &AdmissionRequest<DynamicObject>,
            _old: &ConfigMap,
            _new: &ConfigMap,
        ) -> Result<Warnings, Denial> {
            Err(Denial::new("immutable").with_warnings(["told you".to_owned()]))
        }
    }

    fn request(
        operation: &str,
        object: serde_json::Value,
        old: serde_json::Value,
    ) -> AdmissionRequest<DynamicObject> {
        let body = json!({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",
            "request":{"uid":"u","kind":{"group":"","version":"v1","kind":"ConfigMap"},
            "resource":{"group":"","version":"v1","resource":"configmaps"},
            "name":"c","namespace":"ns","operation":operation,"userInfo":{},
            "object":object,"oldObject":old}});
        decode_request(body.to_string().as_bytes()).expect("decode")
    }

    #[tokio::test]
    async fn each_operation_reaches_its_method() {
        let handler = ValidatingHandler::<ConfigMap, _>::new(CreateOnly);
        let cm = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}});
        let created = handler
            .handle(request("CREATE", cm.clone(), serde_json::Value::Null))
            .await;
        assert!(created.allowed);
        assert_eq!(created.warnings, Some(vec!["created".to_owned()]));
        let updated = handler
            .handle(request("UPDATE", cm.clone(), cm.clone()))
            .await;
        assert!(!updated.allowed);
        assert_eq!(updated.result.message, "immutable");
        assert_eq!(updated.result.code, 403);
        assert_eq!(updated.warnings, Some(vec!["told you".to_owned()]));
        // Delete is allowed by default.
        let deleted = handler
            .handle(request("DELETE", serde_json::Value::Null, cm))
            .await;
        assert!(deleted.allowed && deleted.warnings.is_none());
        // An update without its old object is a bad request.
        let broken = handler
            .handle(request(
                "UPDATE",
                json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}),
                serde_json::Value::Null,
            ))
            .await;
        assert_eq!(broken.result.code, 400);
        assert_eq!(broken.result.message, "the request has no oldObject");
    }
}
