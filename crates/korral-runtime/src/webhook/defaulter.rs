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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::review::decode_request;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    struct SetMode;

    impl Defaulter<ConfigMap> for SetMode {
        async fn default(
            &self,
            _request: &AdmissionRequest<DynamicObject>,
            cm: &mut ConfigMap,
        ) -> Result<(), Denial> {
            cm.data
                .get_or_insert_with(Default::default)
                .insert("mode".to_owned(), "standard".to_owned());
            Ok(())
        }
    }

    fn request(operation: &str, object: serde_json::Value) -> AdmissionRequest<DynamicObject> {
        let body = json!({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",
            "request":{"uid":"u","kind":{"group":"","version":"v1","kind":"ConfigMap"},
            "resource":{"group":"","version":"v1","resource":"configmaps"},
            "name":"c","namespace":"ns","operation":operation,"userInfo":{},
            "object":object,"oldObject":null}});
        decode_request(body.to_string().as_bytes()).expect("decode")
    }

    #[tokio::test]
    async fn patches_only_what_the_defaulter_changed() {
        let handler = DefaultingHandler::<ConfigMap, _>::new(SetMode);
        let object = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},
            "data":{"a":"b"}});
        let response = handler.handle(request("CREATE", object)).await;
        assert!(response.allowed);
        let patch: serde_json::Value =
            serde_json::from_slice(response.patch.as_deref().expect("patch")).expect("json");
        assert_eq!(
            patch,
            json!([{"op":"add","path":"/data/mode","value":"standard"}])
        );
        // Already defaulted: no patch.
        let object = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},
            "data":{"mode":"standard"}});
        assert!(
            handler
                .handle(request("UPDATE", object))
                .await
                .patch
                .is_none()
        );
    }

    #[tokio::test]
    async fn deletes_pass_and_undecodable_objects_get_400() {
        let handler = DefaultingHandler::<ConfigMap, _>::new(SetMode);
        let response = handler
            .handle(request("DELETE", serde_json::Value::Null))
            .await;
        assert!(response.allowed && response.patch.is_none());
        let object = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},
            "data":"not a map"});
        let response = handler.handle(request("CREATE", object)).await;
        assert!(!response.allowed);
        assert_eq!(response.result.code, 400);
        assert_eq!(response.uid, "u");
        assert!(
            response.result.message.starts_with("decoding the object: "),
            "{}",
            response.result.message
        );
    }
}
