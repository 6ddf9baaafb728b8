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

/// A test server that enforces RBAC.
pub async fn rbac_env() -> TestEnv {
    TestEnv::builder()
        .authorization(korral_testenv::AuthorizationMode::Rbac)
        .start()
        .await
        .expect("start RBAC test env")
}

/// One exchange through the kube client with these request headers: the status code, the
/// response headers and the body bytes.
pub async fn exchange(
    client: &Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, http::HeaderMap, Vec<u8>) {
    let mut builder = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(body).expect("request");
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("send");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes()
        .to_vec();
    (status, headers, bytes)
}

/// Raw request through the kube client, returning status code and JSON body.
pub async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (u16, Value) {
    let headers: Vec<(&str, &str)> = content_type
        .map(|ct| ("content-type", ct))
        .into_iter()
        .collect();
    let (status, _, bytes) = exchange(client, method, path, &headers, body).await;
    let value = serde_json::from_slice(&bytes)
        .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

/// A server with the workload simulation on.
pub async fn sim_env() -> TestEnv {
    TestEnv::builder()
        .simulation(true)
        .start()
        .await
        .expect("env")
}

/// One request with a JSON body (or none) through `env`'s client: the status code and the
/// JSON answer.
pub async fn call(env: &TestEnv, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let content_type = body.map(|_| "application/json");
    raw(&env.client(), method, path, content_type, bytes).await
}

/// POSTs `obj` to `collection`, which must answer 201: the created object.
pub async fn create_ok(env: &TestEnv, collection: &str, obj: &Value) -> Value {
    let (code, created) = call(env, "POST", collection, Some(obj)).await;
    assert_eq!(code, 201, "POST {collection}: {created}");
    created
}

/// One request with `body` sent as `content_type` (a patch type, say) through `env`'s client:
/// the status code and the JSON answer.
pub async fn call_as(
    env: &TestEnv,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> (u16, Value) {
    raw(
        &env.client(),
        method,
        path,
        Some(content_type),
        body.to_string().into_bytes(),
    )
    .await
}

/// Checks a refusal against upstream's: a 422 `Invalid` `Status` with `message` and exactly
/// `causes` in order, each `(reason, message, field)`.
pub fn assert_invalid(answer: &(u16, Value), message: &str, causes: &[(&str, &str, &str)]) {
    let (code, body) = answer;
    assert_eq!(*code, 422, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["code"], 422, "{body}");
    assert_eq!(body["reason"], "Invalid", "{body}");
    assert_eq!(body["message"], message, "{body}");
    let got: Vec<(String, String, String)> = body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("reason"), s("message"), s("field"))
        })
        .collect();
    let want: Vec<(String, String, String)> = causes
        .iter()
        .map(|(r, m, f)| (r.to_string(), m.to_string(), f.to_string()))
        .collect();
    assert_eq!(got, want, "{body}");
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

/// What a test https server received: the path and the JSON body (with the URL's query
/// added as `query`).
pub type Received = std::sync::Arc<std::sync::Mutex<Vec<(String, Value)>>>;

/// A running https server standing in for a webhook.
pub struct HttpsHook {
    /// Where it listens.
    pub address: std::net::SocketAddr,
    /// The base64 PEM of the CA that signed its certificate (a webhook's `caBundle`).
    pub ca_bundle: String,
    /// Everything it received, in order.
    pub received: Received,
}

impl HttpsHook {
    /// `https://<address><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.address)
    }

    /// The bodies received on `path`.
    pub fn reviews(&self, path: &str) -> Vec<Value> {
        self.received
            .lock()
            .expect("lock")
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Forgets what was received.
    pub fn clear(&self) {
        self.received.lock().expect("lock").clear();
    }
}

/// Starts an https server on a free port (a certificate for 127.0.0.1 and
/// `webhook-service.hooks.svc`) that records each JSON request and answers what `answer`
/// returns for its path and body: the status code and the JSON body.
pub async fn serve_https<F, Fut>(answer: F) -> HttpsHook
where
    F: Fn(String, Value) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = (u16, Value)> + Send + 'static,
{
    use base64::Engine as _;
    use http_body_util::{BodyExt, Full};
    let material = korral_apiserver::tls::generate(&[
        "127.0.0.1".to_string(),
        "webhook-service.hooks.svc".to_string(),
    ])
    .expect("tls");
    let config = korral_apiserver::tls::server_config(&material).expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let received: Received = Default::default();
    let sink = received.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let sink = sink.clone();
            let answer = answer.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let sink = sink.clone();
                        let answer = answer.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let query = req.uri().query().unwrap_or("").to_string();
                            let bytes = req
                                .into_body()
                                .collect()
                                .await
                                .map(|c| c.to_bytes())
                                .unwrap_or_default();
                            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                            let mut recorded = body.clone();
                            recorded["query"] = json!(query);
                            sink.lock().expect("lock").push((path.clone(), recorded));
                            let (code, reply) = answer(path, body).await;
                            Ok::<_, std::convert::Infallible>(
                                http::Response::builder()
                                    .status(code)
                                    .header("content-type", "application/json")
                                    .body(Full::new(bytes::Bytes::from(reply.to_string())))
                                    .expect("response"),
                            )
                        }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    let ca_bundle = base64::engine::general_purpose::STANDARD.encode(&material.ca_cert_pem);
    HttpsHook {
        address,
        ca_bundle,
        received,
    }
}

/// A request through the kube client answering the status code, the `Warning` headers and
/// the JSON body.
pub async fn request(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Option<Value>,
) -> (u16, Vec<String>, Value) {
    let headers: Vec<(&str, &str)> = body
        .as_ref()
        .map(|_| ("content-type", content_type.unwrap_or("application/json")))
        .into_iter()
        .collect();
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let (status, headers, bytes) = exchange(client, method, path, &headers, bytes).await;
    let warnings = headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, warnings, value)
}

/// The `Accept` kubectl sends for `get`: a server-side `Table`, JSON otherwise.
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

/// GETs `path` as a `Table`: the status code and the JSON body (`null` when not JSON).
pub async fn table_with_code(env: &TestEnv, path: &str) -> (u16, Value) {
    let accept = [("accept", TABLE_ACCEPT)];
    let (code, _, bytes) = exchange(&env.client(), "GET", path, &accept, Vec::new()).await;
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// GETs `path` as a `Table`, which must answer 200.
pub async fn table(env: &TestEnv, path: &str) -> Value {
    let (code, body) = table_with_code(env, path).await;
    assert_eq!(code, 200, "{body}");
    body
}

/// The IPAddress collection.
pub const IP_ADDRESSES: &str = "/apis/networking.k8s.io/v1/ipaddresses";

/// Creates the Service `name` in `default` (selecting `app: <name>`, port 80) and waits until
/// its cluster IP has its IPAddress; answers the IP.
pub async fn service_with_address(env: &TestEnv, name: &str) -> String {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
                         "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}});
    let created = create_ok(env, "/api/v1/namespaces/default/services", &service).await;
    let ip = created["spec"]["clusterIP"]
        .as_str()
        .expect("cluster IP")
        .to_string();
    let path = format!("{IP_ADDRESSES}/{ip}");
    wait_until(
        Duration::from_secs(20),
        "the address is recorded",
        || async { call(env, "GET", &path, None).await.0 == 200 },
    )
    .await
    .expect("recorded");
    ip
}

/// The CRD of a namespaced kind `kind` (`plural`) of `group`, one version `v1` whose `spec` has
/// the schema `spec_schema`.
pub fn spec_crd(group: &str, kind: &str, plural: &str, spec_schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": spec_schema}
                }}
            }]
        }
    })
}

/// The objects of a [`spec_crd`] kind in namespace `default`.
pub fn spec_api(env: &TestEnv, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    Api::namespaced_with(
        env.client(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

/// An object of a [`spec_crd`] kind named `name` with `spec`.
pub fn spec_object(group: &str, kind: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": kind,
        "metadata": {"name": name}, "spec": spec
    }))
    .expect("object")
}

/// Runs the real `kubectl` against `env` (its own discovery cache): exit success, stdout,
/// stderr.
pub async fn kubectl(
    env: &TestEnv,
    cache: &std::path::Path,
    args: &[&str],
) -> (bool, String, String) {
    let run = tokio::process::Command::new("/usr/bin/kubectl")
        .arg("--kubeconfig")
        .arg(env.kubeconfig_path())
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("kubectl finishes")
        .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How long a test waits for the simulation (controllers, kubelet) to act.
pub const SIM_WAIT: Duration = Duration::from_secs(30);

/// Polls `get` until `check` holds for its value (panics with the last value after
/// [`SIM_WAIT`]).
pub async fn until<F, Fut>(what: &str, get: F, check: impl Fn(&Value) -> bool) -> Value
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Value>,
{
    let deadline = std::time::Instant::now() + SIM_WAIT;
    loop {
        let value = get().await;
        if check(&value) {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out: {what}: {value:#}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
