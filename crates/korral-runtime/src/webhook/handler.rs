//! Admission handlers: the [`AdmissionHandler`] trait the server calls for a path, and raw
//! handlers for any kind built from a function ([`Raw`], [`RawAsync`]).

use std::future::Future;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionResponse};

use super::denial::Denial;

/// Answers one admission request. Implemented by the typed defaulting and validating handlers
/// and by [`Raw`] / [`RawAsync`]; implement it for anything else.
pub trait AdmissionHandler: Send + Sync + 'static {
    /// The response to `request` (its `uid` is filled in by the server if left empty).
    fn handle(&self, request: AdmissionRequest<DynamicObject>) -> BoxFuture<'_, AdmissionResponse>;
}

/// A raw handler for any kind from a function: `Fn(AdmissionRequest) -> AdmissionResponse`
/// (e.g. a Pod mutator). Build responses with kube's [`AdmissionResponse`] (`from(&request)`,
/// `deny`), [`deny`] or [`patch_response`].
pub struct Raw<F>(pub F);

impl<F> AdmissionHandler for Raw<F>
where
    F: Fn(AdmissionRequest<DynamicObject>) -> AdmissionResponse + Send + Sync + 'static,
{
    fn handle(&self, request: AdmissionRequest<DynamicObject>) -> BoxFuture<'_, AdmissionResponse> {
        let response = (self.0)(request);
        async move { response }.boxed()
    }
}

/// A raw handler from an async function.
pub struct RawAsync<F>(pub F);

impl<F, Fut> AdmissionHandler for RawAsync<F>
where
    F: Fn(AdmissionRequest<DynamicObject>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = AdmissionResponse> + Send + 'static,
{
    fn handle(&self, request: AdmissionRequest<DynamicObject>) -> BoxFuture<'_, AdmissionResponse> {
        (self.0)(request).boxed()
    }
}

/// The response denying `request` with `denial` (its Status, causes and warnings).
pub fn deny<T: kube::Resource>(
    request: &AdmissionRequest<T>,
    mut denial: Denial,
) -> AdmissionResponse {
    let mut response = AdmissionResponse::from(request);
    response.allowed = false;
    response.result = denial.to_status(&request.kind.group, &request.kind.kind, &request.name);
    let warnings = denial.take_warnings();
    if !warnings.is_empty() {
        response.warnings = Some(warnings);
    }
    response
}

/// The response allowing `request` with the JSONPatch turning `before` into `after` (no patch
/// when they are equal).
pub fn patch_response<T: kube::Resource>(
    request: &AdmissionRequest<T>,
    before: &serde_json::Value,
    after: &serde_json::Value,
) -> AdmissionResponse {
    let mut response = AdmissionResponse::from(request);
    let patch = json_patch::diff(before, after);
    if !patch.0.is_empty() {
        // A JSON Patch of serde_json values always serializes.
        response.patch = serde_json::to_vec(&patch).ok();
    }
    response
}

/// The typed `K` of an object in a request; the error is the response refusing it (400, as
/// controller-runtime answers an object it cannot decode).
pub(crate) fn typed_object<K, T>(
    request: &AdmissionRequest<T>,
    object: Option<&DynamicObject>,
    which: &str,
) -> Result<K, Box<AdmissionResponse>>
where
    K: serde::de::DeserializeOwned,
    T: kube::Resource,
{
    let refuse = |detail: String| {
        let mut response = super::review::errored(&request.uid, 400, detail);
        response.types = request.types.clone();
        Box::new(response)
    };
    let object = object.ok_or_else(|| refuse(format!("the request has no {which}")))?;
    serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .map_err(|e| refuse(format!("decoding the {which}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::review::decode_request;
    use serde_json::json;

    fn request() -> AdmissionRequest<DynamicObject> {
        let body = json!({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",
            "request":{"uid":"u","kind":{"group":"apps","version":"v1","kind":"Deployment"},
            "resource":{"group":"apps","version":"v1","resource":"deployments"},
            "name":"web","namespace":"ns","operation":"CREATE","userInfo":{},
            "object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}},
            "oldObject":null}});
        decode_request(body.to_string().as_bytes()).expect("decode")
    }

    #[test]
    fn patch_response_diffs_and_is_empty_when_equal() {
        let request = request();
        let before = json!({"spec": {"replicas": 1}});
        let after = json!({"spec": {"replicas": 1, "paused": false}});
        let response = patch_response(&request, &before, &after);
        let patch: serde_json::Value =
            serde_json::from_slice(response.patch.as_deref().expect("patch")).expect("json");
        assert_eq!(
            patch,
            json!([{"op": "add", "path": "/spec/paused", "value": false}])
        );
        assert!(patch_response(&request, &before, &before).patch.is_none());
    }

    #[tokio::test]
    async fn raw_handlers_and_deny() {
        let raw = Raw(|req: AdmissionRequest<DynamicObject>| {
            deny(&req, Denial::new("no").with_warnings(["w".to_owned()]))
        });
        let response = raw.handle(request()).await;
        assert!(!response.allowed);
        assert_eq!(response.uid, "u");
        assert_eq!(response.result.message, "no");
        assert_eq!(response.warnings, Some(vec!["w".to_owned()]));
        let raw_async = RawAsync(|req: AdmissionRequest<DynamicObject>| async move {
            AdmissionResponse::from(&req)
        });
        assert!(raw_async.handle(request()).await.allowed);
    }
}
