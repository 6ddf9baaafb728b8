//! Aggregated API servers as kube-aggregator v1.36 serves them, against a real extension
//! server written here: an HTTPS server for `wardle.example.com/v1alpha1` (flunders) that
//! trusts only the front-proxy CA the server publishes in
//! `kube-system/extension-apiserver-authentication` and records the `X-Remote-*` identity of
//! each request. Covered: the availability check, proxying of get/list/create and watches,
//! SPDY and WebSocket upgrades, the user's identity, discovery, the merged OpenAPI documents
//! (a clashing definition renamed), an unreachable backend and a wrong `caBundle`.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use common::*;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

const GROUP: &str = "wardle.example.com";
const VERSION: &str = "v1alpha1";
const APISERVICE: &str = "v1alpha1.wardle.example.com";
const APISERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";
const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
const WAIT: Duration = Duration::from_secs(20);

/// One request as the extension server saw it: method, path and query, and its headers.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: http::HeaderMap,
}

/// The extension server.
struct Backend {
    address: SocketAddr,
    /// The base64 PEM of the CA of its serving certificate.
    ca_bundle: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// TCP connections accepted.
    connections: Arc<std::sync::atomic::AtomicUsize>,
    /// The tasks serving its connections.
    open: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Backend {
    /// The requests seen on paths starting with `prefix`.
    fn seen(&self, prefix: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .expect("lock")
            .iter()
            .filter(|s| s.path.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// Stops accepting connections and closes the open ones.
    fn stop(&self) {
        self.accept.abort();
        for task in self.open.lock().expect("lock").drain(..) {
            task.abort();
        }
    }
}

/// The extension server's state: flunders by name and the watch feed.
#[derive(Clone)]
struct Wardle {
    flunders: Arc<Mutex<Vec<Value>>>,
    events: tokio::sync::broadcast::Sender<Value>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

type Reply =
    http::Response<http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>>;

fn json_reply(code: u16, body: &Value) -> Reply {
    http::Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(body.to_string())).boxed())
        .expect("response")
}

impl Wardle {
    async fn serve(&self, mut req: http::Request<hyper::body::Incoming>) -> Reply {
        let path = req.uri().path().to_string();
        let query = req.uri().query().unwrap_or("").to_string();
        self.seen.lock().expect("lock").push(Seen {
            path: format!("{path}?{query}"),
            headers: req.headers().clone(),
        });
        if path.ends_with("/exec") && req.headers().contains_key("upgrade") {
            return echo(&mut req);
        }
        let method = req.method().clone();
        let body = req
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        let collection = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
        match (method.as_str(), path.as_str()) {
            ("GET", "/apis/wardle.example.com/v1alpha1") => json_reply(
                200,
                &json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": "wardle.example.com/v1alpha1",
                "resources": [
                    {"name": "flunders", "singularName": "flunder", "namespaced": true,
                     "kind": "Flunder", "verbs": ["create", "get", "list", "watch"],
                     "shortNames": ["fl"]},
                    {"name": "flunders/status", "singularName": "", "namespaced": true,
                     "kind": "Flunder", "verbs": ["get"]},
                ]}),
            ),
            ("GET", "/openapi/v2") => json_reply(200, &wardle_v2()),
            ("GET", "/openapi/v3") => json_reply(
                200,
                &json!({"paths": {"apis/wardle.example.com/v1alpha1": {
                    "serverRelativeURL": "/openapi/v3/apis/wardle.example.com/v1alpha1?hash=0123ABCD"}}}),
            ),
            ("GET", "/openapi/v3/apis/wardle.example.com/v1alpha1") => {
                json_reply(200, &wardle_v3())
            }
            ("GET", p) if p == collection && query.contains("watch=true") => {
                let existing = self.flunders.lock().expect("lock").clone();
                let mut feed = self.events.subscribe();
                let (tx, rx) = tokio::sync::mpsc::channel(16);
                tokio::spawn(async move {
                    for object in existing {
                        let line = format!("{}\n", json!({"type": "ADDED", "object": object}));
                        if tx.send(bytes::Bytes::from(line)).await.is_err() {
                            return;
                        }
                    }
                    while let Ok(event) = feed.recv().await {
                        if tx
                            .send(bytes::Bytes::from(format!("{event}\n")))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                });
                http::Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Feed(rx).boxed())
                    .expect("response")
            }
            ("GET", p) if p == collection => json_reply(
                200,
                &json!({"kind": "FlunderList", "apiVersion": "wardle.example.com/v1alpha1",
                        "metadata": {"resourceVersion": "1"},
                        "items": self.flunders.lock().expect("lock").clone()}),
            ),
            ("POST", p) if p == collection => {
                let mut flunder: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                flunder["metadata"]["namespace"] = json!("default");
                flunder["metadata"]["resourceVersion"] = json!("2");
                self.flunders.lock().expect("lock").push(flunder.clone());
                let _ = self
                    .events
                    .send(json!({"type": "ADDED", "object": flunder}));
                json_reply(201, &flunder)
            }
            ("GET", p) if p.starts_with(&format!("{collection}/")) => {
                let name = &p[collection.len() + 1..];
                let found = self
                    .flunders
                    .lock()
                    .expect("lock")
                    .iter()
                    .find(|f| f["metadata"]["name"] == name)
                    .cloned();
                match found {
                    Some(f) => json_reply(200, &f),
                    None => json_reply(
                        404,
                        &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                "reason": "NotFound", "code": 404,
                                "message": format!("flunders.wardle.example.com {name:?} not found")}),
                    ),
                }
            }
            _ => json_reply(404, &json!({"kind": "Status", "code": 404})),
        }
    }
}

/// The schema of a Flunder.
fn flunder_schema() -> Value {
    json!({
        "description": "Flunder is an example type with a spec.",
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion defines the versioned schema."},
            "kind": {"type": "string", "description": "Kind is a string value representing the REST resource."},
            "metadata": {"type": "object", "description": "Standard object's metadata."},
            "spec": {
                "description": "FlunderSpec is the specification of a Flunder.",
                "type": "object",
                "properties": {
                    "reference": {"type": "string", "description": "A name of another flunder, fischer or a wardle."}
                }
            }
        },
        "x-kubernetes-group-version-kind": [
            {"group": "wardle.example.com", "version": "v1alpha1", "kind": "Flunder"}
        ]
    })
}

/// The paths both of the extension server's OpenAPI documents describe.
fn wardle_paths() -> Value {
    json!({"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders": {
        "get": {"operationId": "listWardleExampleComV1alpha1NamespacedFlunder",
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "list",
                "x-kubernetes-group-version-kind": {"group": "wardle.example.com",
                    "version": "v1alpha1", "kind": "Flunder"}}}})
}

/// The built-in definition the extension server's Swagger 2.0 document names too, with a
/// content of its own.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The extension server's Swagger 2.0 document: its Flunder's metadata refers to its own
/// `ObjectMeta`, whose name clashes with the server's.
fn wardle_v2() -> Value {
    let mut flunder = flunder_schema();
    flunder["properties"]["metadata"] = json!({"$ref": format!("#/definitions/{OBJECT_META}")});
    json!({
        "swagger": "2.0",
        "info": {"title": "Wardle", "version": "v0.1"},
        "paths": wardle_paths(),
        "definitions": {
            "com.example.wardle.v1alpha1.Flunder": flunder,
            OBJECT_META: {"description": "Wardle's own ObjectMeta.", "type": "object"},
        },
    })
}

/// The extension server's OpenAPI 3 document of `wardle.example.com/v1alpha1`.
fn wardle_v3() -> Value {
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Wardle", "version": "v0.1"},
        "paths": wardle_paths(),
        "components": {"schemas": {"com.example.wardle.v1alpha1.Flunder": flunder_schema()}},
    })
}

/// The `Sec-WebSocket-Accept` answering `key` (RFC 6455: base64 of the SHA-1 of the key
/// and the protocol's GUID).
fn websocket_accept(key: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA1_FOR_LEGACY_USE_ONLY,
        format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

/// Switches `req` to its `Upgrade` protocol and then echoes every byte, after a greeting. A
/// WebSocket handshake is answered as one (accept key, first subprotocol offered).
fn echo(req: &mut http::Request<hyper::body::Incoming>) -> Reply {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let protocol = req.headers()["upgrade"].clone();
    let websocket = req
        .headers()
        .get("sec-websocket-key")
        .and_then(|k| k.to_str().ok())
        .map(websocket_accept);
    let subprotocol = req
        .headers()
        .get("sec-websocket-protocol")
        .and_then(|p| p.to_str().ok())
        .and_then(|p| p.split(',').next())
        .map(|p| p.trim().to_string());
    let upgrade = hyper::upgrade::on(req);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else {
            return;
        };
        let mut io = hyper_util::rt::TokioIo::new(upgraded);
        if io.write_all(b"wardle says hi\n").await.is_err() {
            return;
        }
        let mut buf = [0u8; 1024];
        while let Ok(n) = io.read(&mut buf).await {
            if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    });
    let mut response = http::Response::builder()
        .status(101)
        .header("connection", "Upgrade")
        .header("upgrade", protocol);
    match (websocket, subprotocol) {
        (Some(accept), protocol) => {
            response = response.header("sec-websocket-accept", accept);
            if let Some(protocol) = protocol {
                response = response.header("sec-websocket-protocol", protocol);
            }
        }
        (None, _) => response = response.header("x-stream-protocol-version", "v4.channel.k8s.io"),
    }
    response
        .body(Full::new(bytes::Bytes::new()).boxed())
        .expect("response")
}

/// A watch body fed by a channel: each line as it comes.
struct Feed(tokio::sync::mpsc::Receiver<bytes::Bytes>);

impl http_body::Body for Feed {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|line| line.map(|l| Ok(http_body::Frame::data(l))))
    }
}

/// Starts the extension server: TLS for `api.wardle.svc`, client certificates required and
/// verified against the requestheader CA `env` publishes, the client named
/// `front-proxy-client` (`requestheader-allowed-names`).
async fn start_backend(env: &TestEnv) -> Backend {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (code, cm) = call(
        env,
        "GET",
        "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
        None,
    )
    .await;
    assert_eq!(code, 200, "{cm}");
    let allowed: Vec<String> = serde_json::from_str(
        cm["data"]["requestheader-allowed-names"]
            .as_str()
            .expect("allowed names"),
    )
    .expect("allowed names are a JSON list");
    let ca = cm["data"]["requestheader-client-ca-file"]
        .as_str()
        .expect("requestheader CA");
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .expect("client verifier");
    let material =
        korral_apiserver::tls::generate(&["api.wardle.svc".to_string()]).expect("serving TLS");
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(material.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .expect("chain");
    let key = PrivateKeyDer::from_pem_slice(material.key_pem.as_bytes()).expect("key");
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let connections: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
    let accepted = connections.clone();
    let open: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
    let tasks = open.clone();
    let wardle = Wardle {
        flunders: Arc::default(),
        events: tokio::sync::broadcast::channel(16).0,
        seen: seen.clone(),
    };
    let accept = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let acceptor = acceptor.clone();
            let wardle = wardle.clone();
            let allowed = allowed.clone();
            let task = tokio::spawn(async move {
                // Without a client certificate from the requestheader CA there is no handshake.
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let named = tls.get_ref().1.peer_certificates().is_some_and(|chain| {
                    chain.first().is_some_and(|leaf| {
                        allowed
                            .iter()
                            .any(|name| leaf.windows(name.len()).any(|w| w == name.as_bytes()))
                    })
                });
                if !named {
                    return;
                }
                let service =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let wardle = wardle.clone();
                        async move { Ok::<_, std::convert::Infallible>(wardle.serve(req).await) }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .with_upgrades()
                    .await;
            });
            tasks.lock().expect("lock").push(task.abort_handle());
        }
    });
    Backend {
        address,
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(&material.ca_cert_pem),
        seen,
        connections,
        open,
        accept,
    }
}

/// The objects that make `wardle/api:443` a Service with a ready endpoint (the pre-checks of
/// availability), reached at `backend`'s address.
async fn install_service(env: &TestEnv, backend: &Backend) {
    env.server()
        .webhook_services()
        .insert("wardle", "api", 443, backend.address);
    create_ok(
        env,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wardle"}}),
    )
    .await;
    create_ok(
        env,
        "/api/v1/namespaces/wardle/services",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api"},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}),
    )
    .await;
    create_ok(
        env,
        "/apis/discovery.k8s.io/v1/namespaces/wardle/endpointslices",
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "api-1", "labels": {"kubernetes.io/service-name": "api"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.7"], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": 8443, "protocol": "TCP"}]}),
    )
    .await;
}

/// Registers `wardle.example.com/v1alpha1` as served by `wardle/api` with this `caBundle`.
async fn register(env: &TestEnv, ca_bundle: &str) {
    create_ok(
        env,
        APISERVICES,
        &json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": APISERVICE},
                "spec": {"group": GROUP, "version": VERSION, "caBundle": ca_bundle,
                         "groupPriorityMinimum": 1000, "versionPriority": 15,
                         "service": {"namespace": "wardle", "name": "api", "port": 443}}}),
    )
    .await;
}

/// Polls (until [`WAIT`]) for the `Available` condition of `name` to satisfy `check`.
async fn wait_condition(env: &TestEnv, name: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (_, obj) = call(env, "GET", &format!("{APISERVICES}/{name}"), None).await;
        let condition = obj["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Available"))
            .cloned()
            .unwrap_or(Value::Null);
        if check(&condition) {
            return condition;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition of {name} never matched: {condition}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// An env with the extension server registered and available.
async fn available_env() -> (TestEnv, Backend) {
    let env = TestEnv::start().await.expect("env");
    let backend = start_backend(&env).await;
    install_service(&env, &backend).await;
    register(&env, &backend.ca_bundle).await;
    let condition = wait_condition(&env, APISERVICE, |c| c["status"] == "True").await;
    assert_eq!(condition["reason"], "Passed", "{condition}");
    assert_eq!(condition["message"], "all checks passed", "{condition}");
    (env, backend)
}

/// The values of a header.
fn values(headers: &http::HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn requests_reach_the_extension_server_as_the_user() {
    let (env, backend) = available_env().await;
    // The availability check called discovery as the aggregator.
    let probe = backend.seen("/apis/wardle.example.com/v1alpha1?");
    let first = probe.first().expect("discovery check");
    assert_eq!(
        values(&first.headers, "x-remote-user"),
        ["system:kube-aggregator"]
    );
    assert_eq!(values(&first.headers, "x-remote-group"), ["system:masters"]);

    let (code, list) = call(&env, "GET", FLUNDERS, None).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "FlunderList");
    let flunder = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                         "metadata": {"name": "one"}, "spec": {"reference": "x"}});
    let (code, created) = call(&env, "POST", FLUNDERS, Some(&flunder)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["reference"], "x", "the body went through");
    let (code, got) = call(&env, "GET", &format!("{FLUNDERS}/one"), None).await;
    assert_eq!(code, 200, "{got}");
    assert_eq!(got["metadata"]["namespace"], "default");
    let (code, missing) = call(&env, "GET", &format!("{FLUNDERS}/nope"), None).await;
    assert_eq!(code, 404, "the backend's answer passes as is: {missing}");
    assert_eq!(missing["reason"], "NotFound");
    let (code, list) = call(&env, "GET", &format!("{FLUNDERS}?limit=5"), None).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["items"][0]["metadata"]["name"], "one");

    // The admin's identity, no credentials.
    let seen = backend.seen(FLUNDERS);
    assert!(
        seen.iter().any(|s| s.path.ends_with("?limit=5")),
        "query kept: {seen:?}"
    );
    for s in &seen {
        assert_eq!(
            values(&s.headers, "x-remote-user"),
            ["korral-admin"],
            "{s:?}"
        );
        assert!(
            values(&s.headers, "x-remote-group").contains(&"system:masters".to_string()),
            "{s:?}"
        );
        assert!(s.headers.get("authorization").is_none(), "{s:?}");
    }

    // An impersonated user arrives as that user, groups and extra one header per value.
    let before = backend.seen(FLUNDERS).len();
    let (code, _, body) = exchange(
        &env.client(),
        "GET",
        FLUNDERS,
        &[
            ("impersonate-user", "alice"),
            ("impersonate-group", "devs"),
            ("impersonate-group", "qa"),
            ("impersonate-extra-reason", "testing"),
            ("impersonate-extra-reason", "again"),
            ("x-remote-user", "mallory"),
        ],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let seen = backend.seen(FLUNDERS);
    let last = seen.get(before).expect("impersonated request");
    assert_eq!(values(&last.headers, "x-remote-user"), ["alice"]);
    let groups = values(&last.headers, "x-remote-group");
    assert!(
        groups.contains(&"devs".to_string()) && groups.contains(&"qa".to_string()),
        "{groups:?}"
    );
    assert_eq!(
        values(&last.headers, "x-remote-extra-reason"),
        ["testing", "again"]
    );
    assert!(
        last.headers
            .keys()
            .all(|k| !k.as_str().starts_with("impersonate-")),
        "{last:?}"
    );
    assert!(last.headers.get("authorization").is_none());
    backend.stop();
    env.shutdown().await;
}

#[tokio::test]
async fn the_requestheader_configmap_is_published() {
    let env = TestEnv::start().await.expect("env");
    let (code, cm) = call(
        &env,
        "GET",
        "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
        None,
    )
    .await;
    assert_eq!(code, 200, "{cm}");
    let data = &cm["data"];
    assert_eq!(
        data["requestheader-username-headers"],
        "[\"X-Remote-User\"]"
    );
    assert_eq!(data["requestheader-group-headers"], "[\"X-Remote-Group\"]");
    assert_eq!(data["requestheader-uid-headers"], "[\"X-Remote-Uid\"]");
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        "[\"X-Remote-Extra-\"]"
    );
    assert_eq!(
        data["requestheader-allowed-names"],
        "[\"front-proxy-client\"]"
    );
    let front_proxy_ca = data["requestheader-client-ca-file"].as_str().unwrap_or("");
    assert!(
        front_proxy_ca.starts_with("-----BEGIN CERTIFICATE-----"),
        "{cm}"
    );
    assert_eq!(
        data["client-ca-file"].as_str(),
        env.server().ca_pem(),
        "the client CA of the server"
    );
    env.shutdown().await;
}

#[tokio::test]
async fn watches_stream_through_the_proxy() {
    let (env, backend) = available_env().await;
    let flunder = |name: &str| {
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": name}})
    };
    let (code, body) = call(&env, "POST", FLUNDERS, Some(&flunder("first"))).await;
    assert_eq!(code, 201, "{body}");
    let request = http::Request::builder()
        .method("GET")
        .uri(format!("{FLUNDERS}?watch=true"))
        .body(Vec::new())
        .expect("request");
    let response = env
        .client()
        .send(request.map(kube::client::Body::from))
        .await
        .expect("watch");
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut text = String::new();
    // Reads the stream until `name` shows up; the stream never ends on its own.
    async fn until(body: &mut kube::client::Body, text: &mut String, name: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !text.contains(&format!("\"name\":\"{name}\"")) {
            let frame = tokio::time::timeout_at(deadline, body.frame())
                .await
                .unwrap_or_else(|_| panic!("{name} never streamed; got {text}"))
                .expect("stream open")
                .expect("frame");
            if let Ok(data) = frame.into_data() {
                text.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }
    until(&mut body, &mut text, "first").await;
    let (code, created) = call(&env, "POST", FLUNDERS, Some(&flunder("second"))).await;
    assert_eq!(code, 201, "{created}");
    until(&mut body, &mut text, "second").await;
    assert!(
        text.lines().all(|l| l.contains("\"type\":\"ADDED\"")),
        "{text}"
    );
    drop(body);
    backend.stop();
    env.shutdown().await;
}

#[tokio::test]
async fn discovery_lists_the_aggregated_group() {
    let (env, backend) = available_env().await;
    let (code, apis) = call(&env, "GET", "/apis", None).await;
    assert_eq!(code, 200, "{apis}");
    let group = apis["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == GROUP))
        .cloned()
        .unwrap_or_else(|| panic!("{GROUP} missing from /apis: {apis}"));
    assert_eq!(
        group["preferredVersion"],
        json!({"groupVersion": "wardle.example.com/v1alpha1", "version": VERSION})
    );
    // Placed by its group priority (1000): after every built-in group.
    let names: Vec<&str> = apis["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(|g| g["name"].as_str()).collect())
        .unwrap_or_default();
    let at = |name: &str| names.iter().position(|n| *n == name);
    assert!(at(GROUP) > at("storagemigration.k8s.io"), "{names:?}");
    assert!(at(GROUP) > at("apps"), "{names:?}");
    let (code, doc) = call(&env, "GET", "/apis/wardle.example.com", None).await;
    assert_eq!(code, 200, "{doc}");
    assert_eq!(doc["kind"], "APIGroup");
    assert_eq!(doc["versions"][0]["version"], VERSION);
    // The version's resource list is the extension server's.
    let (code, list) = call(&env, "GET", "/apis/wardle.example.com/v1alpha1", None).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["resources"][0]["name"], "flunders");
    // Aggregated discovery (what kubectl asks for) has the resources of the last check.
    let accept =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let (code, headers, bytes) = exchange(
        &env.client(),
        "GET",
        "/apis",
        &[("accept", accept)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        headers["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let doc: Value = serde_json::from_slice(&bytes).expect("json");
    let item = doc["items"]
        .as_array()
        .and_then(|i| i.iter().find(|i| i["metadata"]["name"] == GROUP))
        .cloned()
        .unwrap_or_else(|| panic!("{GROUP} missing: {doc}"));
    let order: Vec<&str> = doc["items"]
        .as_array()
        .map(|i| {
            i.iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let at = |name: &str| order.iter().position(|n| *n == name);
    assert!(at(GROUP) > at("apps"), "{order:?}");
    let version = &item["versions"][0];
    assert_eq!(version["version"], VERSION);
    assert_eq!(version["freshness"], "Current");
    let flunders = &version["resources"][0];
    assert_eq!(flunders["resource"], "flunders");
    assert_eq!(flunders["scope"], "Namespaced");
    assert_eq!(flunders["shortNames"], json!(["fl"]));
    assert_eq!(flunders["subresources"][0]["subresource"], "status");
    backend.stop();
    env.shutdown().await;
}

/// A plain-text answer: the status code and the body. The client does not retry (kube's
/// default client retries a 503 for minutes).
async fn plain(env: &TestEnv, path: &str) -> (u16, String) {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(env.server().kubeconfig_yaml()).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    let (code, _, bytes) = exchange(&client, "GET", path, &[], Vec::new()).await;
    (code, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn unreachable_and_unavailable_backends_answer_503() {
    let (env, backend) = available_env().await;
    backend.stop();
    let (code, body) = plain(&env, FLUNDERS).await;
    assert_eq!(code, 503, "{body}");
    assert_eq!(
        body,
        format!(
            "dial tcp {}: connect: connection refused\n",
            backend.address
        )
    );
    // The next check notices, and the APIService is no longer available.
    let condition = wait_condition(&env, APISERVICE, |c| c["status"] == "False").await;
    assert_eq!(condition["reason"], "FailedDiscoveryCheck", "{condition}");
    let url = format!(
        "https://{}/apis/wardle.example.com/v1alpha1",
        backend.address
    );
    assert_eq!(
        condition["message"],
        format!(
            "failing or missing response from {url}: Get \"{url}\": dial tcp {}: connect: connection refused",
            backend.address
        )
    );
    let (code, body) = plain(&env, FLUNDERS).await;
    assert_eq!((code, body.as_str()), (503, "service unavailable\n"));

    // An APIService whose Service is missing is never available: 503 as well.
    create_ok(
        &env,
        APISERVICES,
        &json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": "v1.other.example.com"},
                "spec": {"group": "other.example.com", "version": "v1",
                         "insecureSkipTLSVerify": true,
                         "groupPriorityMinimum": 1000, "versionPriority": 15,
                         "service": {"namespace": "wardle", "name": "missing"}}}),
    )
    .await;
    wait_condition(&env, "v1.other.example.com", |c| {
        c["reason"] == "ServiceNotFound"
    })
    .await;
    let (code, body) = plain(&env, "/apis/other.example.com/v1/things").await;
    assert_eq!((code, body.as_str()), (503, "service unavailable\n"));
    env.shutdown().await;
}

#[tokio::test]
async fn a_wrong_ca_bundle_fails_the_discovery_check() {
    let env = TestEnv::start().await.expect("env");
    let backend = start_backend(&env).await;
    install_service(&env, &backend).await;
    let other = korral_apiserver::tls::generate(&["api.wardle.svc".to_string()]).expect("tls");
    register(
        &env,
        &base64::engine::general_purpose::STANDARD.encode(&other.ca_cert_pem),
    )
    .await;
    let condition = wait_condition(&env, APISERVICE, |c| !c.is_null()).await;
    let url = format!(
        "https://{}/apis/wardle.example.com/v1alpha1",
        backend.address
    );
    assert_eq!(condition["status"], "False", "{condition}");
    assert_eq!(condition["reason"], "FailedDiscoveryCheck");
    assert_eq!(
        condition["message"],
        format!(
            "failing or missing response from {url}: Get \"{url}\": tls: failed to verify certificate: x509: certificate signed by unknown authority"
        )
    );
    let (code, body) = plain(&env, FLUNDERS).await;
    assert_eq!((code, body.as_str()), (503, "service unavailable\n"));
    assert!(backend.seen("").is_empty(), "no request got through");
    // Fixing the bundle makes it available.
    let (code, body) = raw(
        &env.client(),
        "PATCH",
        &format!("{APISERVICES}/{APISERVICE}"),
        Some("application/merge-patch+json"),
        json!({"spec": {"caBundle": backend.ca_bundle}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let condition = wait_condition(&env, APISERVICE, |c| c["status"] == "True").await;
    assert_eq!(condition["reason"], "Passed");
    backend.stop();
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reads_and_writes_the_aggregated_resources() {
    let (env, backend) = available_env().await;
    let cache = tempfile::tempdir().expect("cache dir");
    let cache = cache.path();
    let (ok, out, err) = kubectl(&env, cache, &["api-resources", "--api-group", GROUP]).await;
    assert!(ok, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("flunders"))
        .unwrap_or_else(|| panic!("no flunders in api-resources: {out}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "flunders",
            "fl",
            "wardle.example.com/v1alpha1",
            "true",
            "Flunder"
        ],
        "{out}"
    );
    let (ok, out, err) = kubectl(&env, cache, &["get", "apiservice", APISERVICE]).await;
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with(APISERVICE) && l.contains("wardle/api") && l.contains("True")),
        "{out}"
    );
    let manifest = cache.join("flunder.json");
    std::fs::write(
        &manifest,
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
               "metadata": {"name": "from-kubectl"}})
        .to_string(),
    )
    .expect("manifest");
    let manifest = manifest.display().to_string();
    let (ok, out, err) = kubectl(&env, cache, &["create", "-f", &manifest]).await;
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        "flunder.wardle.example.com/from-kubectl created"
    );
    let (ok, out, err) = kubectl(&env, cache, &["get", "fl", "-o", "name"]).await;
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "flunder.wardle.example.com/from-kubectl");
    let (ok, out, err) = kubectl(&env, cache, &["get", "flunders"]).await;
    assert!(ok, "{err}");
    assert!(out.lines().any(|l| l.starts_with("from-kubectl")), "{out}");
    // Who the extension server saw: the kubeconfig's user.
    let seen = backend.seen(FLUNDERS);
    let last = seen.last().expect("kubectl's request");
    assert_eq!(values(&last.headers, "x-remote-user"), ["korral-admin"]);

    // Unreachable: kubectl words the 503 as for any aggregated API down.
    backend.stop();
    let (ok, _, err) = kubectl(&env, cache, &["get", "flunders"]).await;
    assert!(!ok);
    assert!(
        err.contains("Error from server (ServiceUnavailable): the server is currently unable to handle the request"),
        "{err}"
    );
    env.shutdown().await;
}

#[tokio::test]
async fn the_server_authorizes_before_proxying() {
    let env = rbac_env().await;
    let backend = start_backend(&env).await;
    install_service(&env, &backend).await;
    register(&env, &backend.ca_bundle).await;
    wait_condition(&env, APISERVICE, |c| c["status"] == "True").await;
    // Without a role: refused here, as upstream's authorizer refuses before its proxy.
    let bob = env.client_as_user("bob", &[]).await.expect("client");
    let (code, body) = raw(&bob, "GET", FLUNDERS, None, Vec::new()).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "flunders.wardle.example.com is forbidden: User \"bob\" cannot list resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"default\""
    );
    assert!(
        backend.seen(FLUNDERS).is_empty(),
        "nothing reached the backend"
    );
    // With one: through, as bob.
    create_ok(
        &env,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "flunder-reader"},
                "rules": [{"apiGroups": [GROUP], "resources": ["flunders"], "verbs": ["list"]}]}),
    )
    .await;
    create_ok(
        &env,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "bob-reads-flunders"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                            "name": "flunder-reader"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                              "name": "bob"}]}),
    )
    .await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (code, body) = raw(&bob, "GET", FLUNDERS, None, Vec::new()).await;
        if code == 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never allowed: {code} {body}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let seen = backend.seen(FLUNDERS);
    let last = seen.last().expect("bob's request");
    assert_eq!(values(&last.headers, "x-remote-user"), ["bob"]);
    assert_eq!(
        values(&last.headers, "x-remote-group"),
        ["system:authenticated"]
    );
    backend.stop();
    env.shutdown().await;
}

/// A TLS connection to the server speaking HTTP/1.1 only (upgrades are HTTP/1.1).
async fn connect_raw(env: &TestEnv) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let ca = env.server().ca_pem().expect("TLS server");
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA");
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let address = env.server().addr();
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let name = rustls::pki_types::ServerName::IpAddress(address.ip().into());
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("TLS handshake")
}

/// Writes an HTTP/1.1 request head (no body) with the admin's token and `headers`.
async fn write_head<S: tokio::io::AsyncWrite + Unpin>(
    env: &TestEnv,
    stream: &mut S,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) {
    use tokio::io::AsyncWriteExt;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Length: 0\r\n",
        env.server().addr(),
        env.server().token()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.expect("write");
}

/// Reads from `stream` until `text` has come (after what `got` holds), within [`WAIT`].
async fn read_until<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    got: &mut Vec<u8>,
    text: &str,
) {
    use tokio::io::AsyncReadExt;
    let deadline = tokio::time::Instant::now() + WAIT;
    while !String::from_utf8_lossy(got).contains(text) {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf))
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{text:?} never came; got {:?}",
                    String::from_utf8_lossy(got)
                )
            })
            .expect("read");
        assert!(
            n > 0,
            "closed before {text:?}; got {:?}",
            String::from_utf8_lossy(got)
        );
        got.extend_from_slice(&buf[..n]);
    }
}

/// Sends an upgrade request that is not switched (`Connection: Upgrade, close`) and reads
/// the answer to its end: the status line and headers (lower-cased) and the body.
async fn refused_upgrade(env: &TestEnv, path: &str) -> (String, String) {
    use tokio::io::AsyncReadExt;
    let mut stream = connect_raw(env).await;
    write_head(
        env,
        &mut stream,
        "POST",
        path,
        &[("Connection", "Upgrade, close"), ("Upgrade", "SPDY/3.1")],
    )
    .await;
    let mut out = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut out))
        .await
        .expect("answer in time")
        .ok();
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_ascii_lowercase(), body.to_string())
}

#[tokio::test]
async fn upgrades_are_spliced_to_the_extension_server() {
    let (env, backend) = available_env().await;
    let exec = format!("{FLUNDERS}/one/exec?command=cat&stdin=true");
    let connections = backend
        .connections
        .load(std::sync::atomic::Ordering::SeqCst);
    let mut stream = connect_raw(&env).await;
    write_head(
        &env,
        &mut stream,
        "POST",
        &exec,
        &[
            ("Connection", "Upgrade"),
            ("Upgrade", "SPDY/3.1"),
            ("X-Stream-Protocol-Version", "v4.channel.k8s.io"),
            ("X-Forwarded-For", "203.0.113.9"),
        ],
    )
    .await;
    let mut got = Vec::new();
    read_until(&mut stream, &mut got, "\r\n\r\n").await;
    let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 101 "), "{text}");
    assert!(text.contains("\r\nupgrade: spdy/3.1\r\n"), "{text}");
    assert!(
        text.contains("\r\nx-stream-protocol-version: v4.channel.k8s.io\r\n"),
        "{text}"
    );
    // Bytes flow both ways: the backend's greeting, then an echo of what the client sends.
    read_until(&mut stream, &mut got, "wardle says hi\n").await;
    {
        use tokio::io::AsyncWriteExt;
        stream.write_all(b"ping\n").await.expect("write");
    }
    read_until(&mut stream, &mut got, "hi\nping\n").await;
    {
        use tokio::io::AsyncWriteExt;
        stream.write_all(b"and pong\n").await.expect("write");
    }
    read_until(&mut stream, &mut got, "ping\nand pong\n").await;
    drop(stream);
    assert_eq!(
        backend
            .connections
            .load(std::sync::atomic::Ordering::SeqCst),
        connections + 1,
        "the upgrade had a connection of its own"
    );

    // The backend saw the upgrade as the admin, from this client.
    let seen = backend.seen(&format!("{FLUNDERS}/one/exec"));
    let request = seen.first().expect("the exec request reached the backend");
    assert!(
        request.path.ends_with("?command=cat&stdin=true"),
        "{request:?}"
    );
    assert_eq!(values(&request.headers, "upgrade"), ["SPDY/3.1"]);
    assert_eq!(values(&request.headers, "connection"), ["Upgrade"]);
    assert_eq!(values(&request.headers, "x-remote-user"), ["korral-admin"]);
    assert!(
        values(&request.headers, "x-remote-group").contains(&"system:masters".to_string()),
        "{request:?}"
    );
    assert!(request.headers.get("authorization").is_none());
    assert_eq!(
        values(&request.headers, "x-forwarded-for"),
        ["203.0.113.9, 127.0.0.1"]
    );

    // A backend that answers without switching: upstream's 503; an error answer passes.
    let (head, body) = refused_upgrade(&env, FLUNDERS).await;
    assert!(head.starts_with("http/1.1 503 "), "{head}");
    assert_eq!(body, "invalid upgrade response: status code 201\n");
    let (head, body) = refused_upgrade(&env, &format!("{FLUNDERS}/nope/attach")).await;
    assert!(head.starts_with("http/1.1 404 "), "{head}\n{body}");
    backend.stop();
    let (head, body) = refused_upgrade(&env, &exec).await;
    assert!(head.starts_with("http/1.1 503 "), "{head}");
    assert_eq!(
        body,
        format!(
            "error dialing backend: dial tcp {}: connect: connection refused\n",
            backend.address
        )
    );
    env.shutdown().await;
}

#[tokio::test]
async fn websocket_upgrades_are_spliced_to_the_extension_server() {
    let (env, backend) = available_env().await;
    // kubectl's WebSocket exec: a GET with the handshake headers and the channel protocols.
    let exec = format!("{FLUNDERS}/one/exec?command=cat&stdin=true&stdout=true");
    let key = "dGhlIHNhbXBsZSBub25jZQ==";
    let protocols = "v5.channel.k8s.io, v4.channel.k8s.io";
    let mut stream = connect_raw(&env).await;
    write_head(
        &env,
        &mut stream,
        "GET",
        &exec,
        &[
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", key),
            ("Sec-WebSocket-Protocol", protocols),
        ],
    )
    .await;
    let mut got = Vec::new();
    read_until(&mut stream, &mut got, "\r\n\r\n").await;
    let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
    assert!(text.starts_with("http/1.1 101 "), "{text}");
    assert!(text.contains("\r\nupgrade: websocket\r\n"), "{text}");
    assert!(text.contains("\r\nconnection: upgrade\r\n"), "{text}");
    // The backend's handshake answer reaches the client unchanged (RFC 6455's example key).
    assert_eq!(websocket_accept(key), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    assert!(
        text.contains("\r\nsec-websocket-accept: s3pplmbitxaq9kygzzhzrbk+xoo=\r\n"),
        "{text}"
    );
    assert!(
        text.contains("\r\nsec-websocket-protocol: v5.channel.k8s.io\r\n"),
        "{text}"
    );
    // Bytes flow both ways.
    read_until(&mut stream, &mut got, "wardle says hi\n").await;
    {
        use tokio::io::AsyncWriteExt;
        let frame = [
            0x82u8,
            0x85,
            1,
            2,
            3,
            4,
            b'h' ^ 1,
            b'e' ^ 2,
            b'l' ^ 3,
            b'l' ^ 4,
            b'o' ^ 1,
        ];
        stream.write_all(&frame).await.expect("write");
        let start = got.len();
        let deadline = tokio::time::Instant::now() + WAIT;
        while got.len() < start + frame.len() {
            use tokio::io::AsyncReadExt;
            let mut buf = [0u8; 64];
            let n = tokio::time::timeout_at(deadline, stream.read(&mut buf))
                .await
                .expect("the echo in time")
                .expect("read");
            assert!(n > 0, "closed before the echo");
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(&got[start..], &frame, "binary bytes come back as sent");
    }
    drop(stream);

    // The backend saw the handshake as the client sent it, as the admin.
    let seen = backend.seen(&format!("{FLUNDERS}/one/exec"));
    let request = seen.first().expect("the exec request reached the backend");
    assert_eq!(values(&request.headers, "upgrade"), ["websocket"]);
    assert_eq!(values(&request.headers, "connection"), ["Upgrade"]);
    assert_eq!(values(&request.headers, "sec-websocket-key"), [key]);
    assert_eq!(values(&request.headers, "sec-websocket-version"), ["13"]);
    assert_eq!(
        values(&request.headers, "sec-websocket-protocol"),
        [protocols]
    );
    assert_eq!(values(&request.headers, "x-remote-user"), ["korral-admin"]);
    assert!(request.headers.get("authorization").is_none());
    backend.stop();
    env.shutdown().await;
}

/// Polls `path` (JSON) until `check` holds, within [`WAIT`].
async fn wait_doc(
    env: &TestEnv,
    path: &str,
    what: &str,
    check: impl Fn(u16, &Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (code, doc) = call(env, "GET", path, None).await;
        if check(code, &doc) {
            return doc;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path}: {what} never came"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extension_servers_openapi_is_served_and_dropped_with_its_apiservice() {
    const FLUNDER: &str = "com.example.wardle.v1alpha1.Flunder";
    const GV_PATH: &str = "apis/wardle.example.com/v1alpha1";
    let (env, backend) = available_env().await;
    let v2 = wait_doc(
        &env,
        "/openapi/v2",
        "the Flunder definition",
        |code, doc| code == 200 && doc["definitions"][FLUNDER].is_object(),
    )
    .await;
    assert_eq!(
        v2["definitions"][FLUNDER]["x-kubernetes-group-version-kind"][0]["kind"],
        "Flunder"
    );
    assert!(
        v2["paths"]["/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"]["get"]
            .is_object(),
        "the backend's paths are merged"
    );
    assert!(
        v2["definitions"]["io.k8s.api.core.v1.Pod"].is_object()
            && v2["paths"]["/api/v1/namespaces/{namespace}/pods"].is_object(),
        "the built-in document is still there"
    );
    // The backend's ObjectMeta differs from the server's: kept under `_v2`, its Flunder
    // pointing at it; the server's own is untouched.
    let renamed = format!("{OBJECT_META}_v2");
    assert_eq!(
        v2["definitions"][&renamed]["description"],
        "Wardle's own ObjectMeta."
    );
    assert_eq!(
        v2["definitions"][FLUNDER]["properties"]["metadata"]["$ref"],
        format!("#/definitions/{renamed}")
    );
    assert_ne!(
        v2["definitions"][OBJECT_META]["description"],
        "Wardle's own ObjectMeta."
    );
    assert!(v2["definitions"][OBJECT_META]["properties"]["name"].is_object());
    let pod_meta = &v2["definitions"]["io.k8s.api.core.v1.Pod"]["properties"]["metadata"];
    assert!(
        !pod_meta.to_string().contains(&renamed),
        "built-in references are untouched: {pod_meta}"
    );
    // The protobuf form (kubectl's) has it too.
    let (code, _, bytes) = exchange(
        &env.client(),
        "GET",
        "/openapi/v2",
        &[(
            "accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    assert!(
        bytes
            .windows(FLUNDER.len())
            .any(|w| w == FLUNDER.as_bytes()),
        "the protobuf document has the Flunder definition"
    );
    // OpenAPI v3: the group version is listed with its hash and serves the backend's document.
    let index = wait_doc(
        &env,
        "/openapi/v3",
        "the aggregated group version",
        |code, doc| code == 200 && doc["paths"][GV_PATH].is_object(),
    )
    .await;
    let url = index["paths"][GV_PATH]["serverRelativeURL"]
        .as_str()
        .expect("serverRelativeURL");
    assert!(
        url.starts_with(&format!("/openapi/v3/{GV_PATH}?hash=")) && url.len() > 40,
        "{url}"
    );
    assert!(
        index["paths"]["api/v1"].is_object(),
        "built-in versions stay"
    );
    let (code, headers, bytes) = exchange(&env.client(), "GET", url, &[], Vec::new()).await;
    assert_eq!(code, 200);
    let doc: Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(doc, wardle_v3());
    // Served as the backend sent it, so its hash is the one the backend itself would give
    // (upstream proxies this request to it): SHA-512 of the bytes, the ETag too.
    assert_eq!(bytes, wardle_v3().to_string().into_bytes());
    let hash: String = ring::digest::digest(&ring::digest::SHA512, &bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    assert_eq!(url, format!("/openapi/v3/{GV_PATH}?hash={hash}"));
    assert_eq!(headers["etag"], format!("\"{hash}\"").as_str());
    assert_eq!(headers["cache-control"], "public, immutable");
    let (code, headers, _) = exchange(
        &env.client(),
        "GET",
        &format!("/openapi/v3/{GV_PATH}?hash=0123ABCD"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 301);
    assert_eq!(headers["location"], url);
    // Downloaded as the aggregator.
    let seen = backend.seen("/openapi/v2");
    let fetch = seen.first().expect("the v2 download");
    assert_eq!(
        values(&fetch.headers, "x-remote-user"),
        ["system:aggregator"]
    );
    assert_eq!(values(&fetch.headers, "x-remote-group"), ["system:masters"]);

    // kubectl explain reads the remote type's schema.
    let cache = tempfile::tempdir().expect("cache dir");
    let (ok, out, err) = kubectl(&env, cache.path(), &["explain", "flunders"]).await;
    assert!(ok, "{err}");
    assert!(out.contains("Flunder"), "{out}");
    assert!(out.contains("wardle.example.com"), "{out}");
    assert!(
        out.contains("Flunder is an example type with a spec."),
        "{out}"
    );
    let (ok, out, err) = kubectl(&env, cache.path(), &["explain", "flunders.spec.reference"]).await;
    assert!(ok, "{err}");
    assert!(
        out.contains("A name of another flunder, fischer or a wardle."),
        "{out}"
    );

    // Deleting the APIService drops its documents.
    let (code, body) = call(&env, "DELETE", &format!("{APISERVICES}/{APISERVICE}"), None).await;
    assert_eq!(code, 200, "{body}");
    wait_doc(
        &env,
        "/openapi/v2",
        "the definition's removal",
        |code, doc| code == 200 && doc["definitions"].get(FLUNDER).is_none(),
    )
    .await;
    let index = wait_doc(
        &env,
        "/openapi/v3",
        "the group version's removal",
        |code, doc| code == 200 && doc["paths"].get(GV_PATH).is_none(),
    )
    .await;
    assert!(index["paths"]["api/v1"].is_object());
    let (code, _) = call(&env, "GET", &format!("/openapi/v3/{GV_PATH}"), None).await;
    assert_eq!(code, 404);
    backend.stop();
    env.shutdown().await;
}

#[tokio::test]
async fn backend_connections_are_reused_until_the_apiservice_changes() {
    use std::sync::atomic::Ordering::SeqCst;
    let (env, backend) = available_env().await;
    // The availability check's connection may be kept too: at most one more for five requests.
    let before = backend.connections.load(SeqCst);
    for _ in 0..5 {
        let (code, list) = call(&env, "GET", FLUNDERS, None).await;
        assert_eq!(code, 200, "{list}");
    }
    let after = backend.connections.load(SeqCst);
    assert!(
        after <= before + 1,
        "{before} connections before, {after} after"
    );
    // Each request names where it went, as upstream's proxy transport does.
    let seen = backend.seen(FLUNDERS);
    let last = seen.last().expect("a request");
    assert_eq!(values(&last.headers, "x-forwarded-proto"), ["https"]);
    assert_eq!(
        values(&last.headers, "x-forwarded-host"),
        [backend.address.to_string()]
    );
    assert_eq!(values(&last.headers, "x-forwarded-uri"), [FLUNDERS]);
    assert_eq!(values(&last.headers, "x-forwarded-for"), ["127.0.0.1"]);

    // A new caBundle (the same CA, written differently) is a new transport: new connections.
    let pem = base64::engine::general_purpose::STANDARD
        .decode(&backend.ca_bundle)
        .expect("base64");
    let mut rewritten = pem.clone();
    rewritten.extend_from_slice(b"\n");
    let (code, body) = raw(
        &env.client(),
        "PATCH",
        &format!("{APISERVICES}/{APISERVICE}"),
        Some("application/merge-patch+json"),
        json!({"spec": {"caBundle": base64::engine::general_purpose::STANDARD.encode(&rewritten)}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    wait_condition(&env, APISERVICE, |c| c["status"] == "True").await;
    let (code, list) = call(&env, "GET", FLUNDERS, None).await;
    assert_eq!(code, 200, "{list}");
    assert!(
        backend.connections.load(SeqCst) > after,
        "the new spec's check or request opened a connection"
    );
    backend.stop();
    env.shutdown().await;
}

#[tokio::test]
async fn a_durable_server_keeps_its_front_proxy_ca() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let path = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";
    let start = || async {
        TestEnv::builder()
            .server_config(korral_apiserver::ServerConfig::durable(&data))
            .start()
            .await
            .expect("env")
    };
    let env = start().await;
    let (code, first) = call(&env, "GET", path, None).await;
    assert_eq!(code, 200, "{first}");
    let ca = first["data"]["requestheader-client-ca-file"].clone();
    assert!(
        ca.as_str()
            .is_some_and(|c| c.starts_with("-----BEGIN CERTIFICATE-----"))
    );
    // An extension server that learnt the CA from the first server...
    let backend = start_backend(&env).await;
    env.shutdown().await;
    let env = start().await;
    let (code, again) = call(&env, "GET", path, None).await;
    assert_eq!(code, 200, "{again}");
    assert_eq!(
        again["data"]["requestheader-client-ca-file"], ca,
        "the same CA"
    );
    // ...accepts the restarted server's client certificate.
    install_service(&env, &backend).await;
    register(&env, &backend.ca_bundle).await;
    let condition = wait_condition(&env, APISERVICE, |c| !c.is_null()).await;
    let condition = if condition["status"] == "True" {
        condition
    } else {
        wait_condition(&env, APISERVICE, |c| c["status"] == "True").await
    };
    assert_eq!(condition["reason"], "Passed", "{condition}");
    backend.stop();
    env.shutdown().await;
}
