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
use serde_json::{Map, Value};

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
        let (after, raw) = match (
            serde_json::to_value(&object),
            serde_json::to_value(&request.object),
        ) {
            (Ok(after), Ok(raw)) => (after, raw),
            (Err(e), _) | (_, Err(e)) => {
                return super::review::errored(&request.uid, 500, e.to_string());
            }
        };
        // The patch must apply to the object the API server holds, which may lack fields the
        // typed object serializes (a `null` of an `Option`, an empty struct).
        let target = rebase(&raw, &before, &after);
        patch_response(&request, &raw, &target)
    }
}

/// `raw` with the changes from `before` to `after` made to it: parents missing from `raw` are
/// created, so a change of a field the typed object serialized but `raw` lacked still lands.
fn rebase(raw: &Value, before: &Value, after: &Value) -> Value {
    let mut target = raw.clone();
    let changes = serde_json::to_value(json_patch::diff(before, after)).unwrap_or(Value::Null);
    for change in changes.as_array().into_iter().flatten() {
        let tokens: Vec<String> = change["path"]
            .as_str()
            .unwrap_or_default()
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        match change["op"].as_str() {
            Some("add") => set(&mut target, &tokens, change["value"].clone(), true),
            Some("replace") => set(&mut target, &tokens, change["value"].clone(), false),
            Some("remove") => remove(&mut target, &tokens),
            _ => {}
        }
    }
    target
}

/// Sets `value` at `tokens` (inserting into an array when `insert`), creating parents.
fn set(doc: &mut Value, tokens: &[String], value: Value, insert: bool) {
    let Some((last, parents)) = tokens.split_last() else {
        *doc = value;
        return;
    };
    let mut node = doc;
    for token in parents {
        if !(node.is_object() || node.is_array()) {
            *node = Value::Object(Map::new());
        }
        node = match node {
            Value::Array(items) => {
                let index = token.parse::<usize>().unwrap_or(items.len());
                if index >= items.len() {
                    items.push(Value::Object(Map::new()));
                    let end = items.len() - 1;
                    &mut items[end]
                } else {
                    &mut items[index]
                }
            }
            other => {
                if !other.is_object() {
                    *other = Value::Object(Map::new());
                }
                match other {
                    Value::Object(map) => map.entry(token.clone()).or_insert(Value::Null),
                    _ => return,
                }
            }
        };
    }
    match node {
        Value::Object(map) => {
            map.insert(last.clone(), value);
        }
        Value::Array(items) => {
            let index = last.parse::<usize>().unwrap_or(items.len());
            if index < items.len() && !insert {
                items[index] = value;
            } else if index <= items.len() {
                items.insert(index, value);
            } else {
                items.push(value);
            }
        }
        other => {
            let mut map = Map::new();
            map.insert(last.clone(), value);
            *other = Value::Object(map);
        }
    }
}

/// Removes what is at `tokens`, if anything.
fn remove(doc: &mut Value, tokens: &[String]) {
    let Some((last, parents)) = tokens.split_last() else {
        return;
    };
    let mut node = doc;
    for token in parents {
        let next = match node {
            Value::Object(map) => map.get_mut(token),
            Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
            _ => None,
        };
        let Some(next) = next else {
            return;
        };
        node = next;
    }
    match node {
        Value::Object(map) => {
            map.remove(last);
        }
        Value::Array(items) => {
            if let Some(index) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                items.remove(index);
            }
        }
        _ => {}
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

    #[test]
    fn rebase_lands_changes_on_fields_the_raw_object_lacks() {
        // The typed object serialized `spec.size: null` and `status: {}`; the raw one had neither.
        let raw = json!({"metadata": {"name": "m"}, "items": [1, 2]});
        let before = json!({"metadata": {"name": "m"}, "spec": {"size": null}, "status": {},
            "items": [1, 2]});
        let after = json!({"metadata": {"name": "m", "labels": {"a/b": "c"}},
            "spec": {"size": 1}, "status": {}, "items": [1, 3]});
        let target = rebase(&raw, &before, &after);
        assert_eq!(
            target,
            json!({"metadata": {"name": "m", "labels": {"a/b": "c"}}, "spec": {"size": 1},
                "items": [1, 3]})
        );
        // Removals of what the raw object does not have are no-ops.
        let gone = rebase(&raw, &json!({"x": {"y": 1}}), &json!({}));
        assert_eq!(gone, raw);
        let removed = rebase(&raw, &json!({"items": [1, 2]}), &json!({"items": [1]}));
        assert_eq!(removed["items"], json!([1]));
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
