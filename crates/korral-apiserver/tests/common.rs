//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

pub use korral_testenv::TestEnv;
#[allow(unused_imports)]
pub use korral_testenv::wait_until;

/// Raw request through the kube client, returning status code and JSON body.
pub async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (u16, Value) {
    let mut builder = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        builder = builder.header("content-type", ct);
    }
    let request = builder.body(body).expect("request");
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("send");
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

/// The Widget CRD used across tests (`widgets.ref.example.org`), as in the reference captures.
pub fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ref.example.org"},
        "spec": {
            "group": "ref.example.org",
            "names": {"plural": "widgets", "singular": "widget", "shortNames": ["wdg"], "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "required": ["replicas"], "properties": {
                                "color": {"type": "string", "default": "red", "enum": ["red", "blue"]},
                                "replicas": {"type": "integer", "minimum": 1}
                            }},
                            "status": {"type": "object", "properties": {"ready": {"type": "integer"}}}
                        }
                    }},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]
                },
                {
                    "name": "v1beta1", "served": true, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                    "subresources": {"status": {}}
                }
            ]
        }
    })
}

/// Creates the Widget CRD and waits until it is established.
pub async fn install_widget_crd(env: &TestEnv) {
    let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        serde_json::from_value(widget_crd()).expect("crd");
    env.install_crd(crd).await.expect("install crd");
}

/// A dynamic API for widgets in a namespace.
pub fn widgets(env: &TestEnv, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("ref.example.org", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    Api::namespaced_with(env.client(), ns, &ar)
}

/// A widget object.
pub fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "ref.example.org/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .expect("widget")
}

/// Creates a namespace.
pub async fn create_namespace(client: &Client, name: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": name}})).expect("ns");
    api.create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

/// Five seconds: how long tests wait for asynchronous effects.
pub const WAIT: Duration = Duration::from_secs(5);

/// The status code of a kube error.
pub fn code(err: kube::Error) -> u16 {
    match err {
        kube::Error::Api(s) => s.code,
        other => panic!("not an API error: {other:?}"),
    }
}
