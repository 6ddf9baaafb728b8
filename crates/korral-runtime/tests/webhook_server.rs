//! The webhook server over real TLS connections, fed the AdmissionReview bodies a real
//! kube-apiserver v1.36 posted (`tests/fixtures/admission/received-*`): typed defaulting
//! (JSONPatch), validation (warnings, denials shaped as the captured Status), raw handlers,
//! bad requests, panics, metrics, readiness and certificate rotation.

mod webhook_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use base64::Engine as _;
use k8s_openapi::api::core::v1::ConfigMap;
use korral_runtime::metrics::Registry;
use korral_runtime::webhook::{
    AdmissionRequest, AdmissionResponse, Defaulter, Denial, FieldError, RunningWebhookServer,
    Validator, Warnings, WebhookServer, patch_response,
};
use kube::core::DynamicObject;
use serde_json::{Value, json};
use webhook_support::{
    connector, der, fixture, peer_certificate, post, received_body, self_signed, write_cert,
};

const HOST: &str = "localhost";

/// Annotates ConfigMaps `patched: yes`, as the capture's mutating hook did.
struct MarkPatched;

impl Defaulter<ConfigMap> for MarkPatched {
    async fn default(
        &self,
        _request: &AdmissionRequest<DynamicObject>,
        cm: &mut ConfigMap,
    ) -> Result<(), Denial> {
        if cm.metadata.name.as_deref() == Some("refuse") {
            return Err(Denial::new("will not default this one"));
        }
        cm.metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert("patched".to_owned(), "yes".to_owned());
        Ok(())
    }
}

/// Denies `d`, warns on `w`, requires data elsewhere, keeps `data.k` immutable.
struct Rules;

impl Validator<ConfigMap> for Rules {
    async fn validate_create(
        &self,
        _request: &AdmissionRequest<DynamicObject>,
        cm: &ConfigMap,
    ) -> Result<Warnings, Denial> {
        match cm.metadata.name.as_deref() {
            Some("d") => Err(Denial::new("denied by capture hook")),
            Some("w") => Ok(vec![
                "capture hook warning one".to_owned(),
                "capture hook warning two".to_owned(),
            ]),
            _ if cm.data.as_ref().is_none_or(BTreeMap::is_empty) => Err(Denial::invalid([
                FieldError::required("data", ""),
                FieldError::invalid("metadata.name", cm.metadata.name.clone(), "needs data"),
            ])),
            _ => Ok(Vec::new()),
        }
    }

    async fn validate_update(
        &self,
        _request: &AdmissionRequest<DynamicObject>,
        old: &ConfigMap,
        new: &ConfigMap,
    ) -> Result<Warnings, Denial> {
        let value = |cm: &ConfigMap| cm.data.as_ref().and_then(|d| d.get("k")).cloned();
        if value(old) != value(new) {
            return Err(FieldError::forbidden("data.k", "may not change").into());
        }
        Ok(Vec::new())
    }

    async fn validate_delete(
        &self,
        _request: &AdmissionRequest<DynamicObject>,
        cm: &ConfigMap,
    ) -> Result<Warnings, Denial> {
        Ok(vec![format!(
            "deleting {}",
            cm.metadata.name.clone().unwrap_or_default()
        )])
    }
}

struct Served {
    running: RunningWebhookServer,
    registry: Registry,
    connector: tokio_rustls::TlsConnector,
    cert_dir: tempfile::TempDir,
}

impl Served {
    async fn post(&self, path: &str, body: &str) -> Result<webhook_support::Reply> {
        post(
            &self.connector,
            self.running.local_addr(),
            HOST,
            path,
            "application/json",
            body,
        )
        .await
    }

    /// Posts a capture's body to `path` and returns the AdmissionReview `response`.
    async fn review(&self, path: &str, capture: &str) -> Result<Value> {
        let reply = self.post(path, &received_body(capture)).await?;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert!(
            reply.head.contains("content-type: application/json"),
            "{}",
            reply.head
        );
        let review = reply.json();
        assert_eq!(review["kind"], "AdmissionReview");
        assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
        Ok(review["response"].clone())
    }
}

fn server() -> WebhookServer {
    let mut server = WebhookServer::new();
    server
        .defaulter::<ConfigMap, _>(MarkPatched)
        .expect("defaulter");
    server.validator::<ConfigMap, _>(Rules).expect("validator");
    // A raw handler for any kind: labels whatever it gets.
    server
        .raw(
            "/label-anything",
            |request: AdmissionRequest<DynamicObject>| {
                let Some(object) = request.object.as_ref() else {
                    return AdmissionResponse::from(&request);
                };
                let before = serde_json::to_value(object).unwrap_or_default();
                let mut after = before.clone();
                after["metadata"]["labels"] = json!({"seen-by": "raw"});
                patch_response(&request, &before, &after)
            },
        )
        .expect("raw");
    server
        .raw("/panic", |_request: AdmissionRequest<DynamicObject>| {
            panic!("handler bug")
        })
        .expect("raw");
    server
}

async fn serve(server: WebhookServer) -> Result<Served> {
    let cert_dir = tempfile::tempdir()?;
    let (cert, key) = self_signed(&[HOST, "127.0.0.1"]);
    write_cert(cert_dir.path(), &cert, &key);
    let registry = Registry::new();
    let running = server
        .host("127.0.0.1")
        .port(0)
        .cert_dir(cert_dir.path())
        .cert_poll_interval(Duration::from_millis(50))
        .metrics_registry(registry.clone())
        .serve()
        .await?;
    Ok(Served {
        running,
        registry,
        connector: connector(&cert),
        cert_dir,
    })
}

fn decoded_patch(response: &Value) -> Value {
    assert_eq!(response["patchType"], "JSONPatch", "{response}");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().expect("patch string"))
        .expect("base64");
    serde_json::from_slice(&bytes).expect("patch JSON")
}

#[tokio::test]
async fn defaulter_answers_the_captured_create_with_a_json_patch() -> Result<()> {
    let served = serve(server()).await?;
    let response = served
        .review(
            "/mutate--v1-configmap",
            "received-01-patch-CREATE-ConfigMap.json",
        )
        .await?;
    assert_eq!(response["uid"], "108f7eee-73e3-47a0-a265-438033aca1b8");
    assert_eq!(response["allowed"], true);
    assert_eq!(response["status"], json!({"metadata": {}, "code": 200}));
    let patch = decoded_patch(&response);
    assert_eq!(
        patch,
        json!([{"op": "add", "path": "/metadata/annotations", "value": {"patched": "yes"}}])
    );
    // Applied to the captured object, it gives what the API server stored.
    let mut object =
        fixture("received-01-patch-CREATE-ConfigMap.json")["body"]["request"]["object"].clone();
    let patch: json_patch::Patch = serde_json::from_value(patch)?;
    json_patch::patch(&mut object, &patch)?;
    let stored = fixture("create-configmap-through-webhooks.json")["body"].clone();
    assert_eq!(
        object["metadata"]["annotations"],
        stored["metadata"]["annotations"]
    );
    assert_eq!(object["data"], stored["data"]);
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn defaulter_leaves_defaulted_updates_and_deletes_alone() -> Result<()> {
    let served = serve(server()).await?;
    // The update already carries the annotation: no patch.
    let update = served
        .review(
            "/mutate--v1-configmap",
            "received-03-patch-UPDATE-ConfigMap.json",
        )
        .await?;
    assert_eq!(update["uid"], "04a12115-80c9-4b32-9895-96d0ba392511");
    assert_eq!(update["allowed"], true);
    assert!(update.get("patch").is_none(), "{update}");
    let delete = served
        .review(
            "/mutate--v1-configmap",
            "received-07-patch-DELETE-ConfigMap.json",
        )
        .await?;
    assert_eq!(delete["allowed"], true);
    assert!(delete.get("patch").is_none(), "{delete}");
    // A defaulter's error denies.
    let mut body = fixture("received-01-patch-CREATE-ConfigMap.json")["body"].clone();
    body["request"]["object"]["metadata"]["name"] = json!("refuse");
    let reply = served
        .post("/mutate--v1-configmap", &body.to_string())
        .await?;
    let refused = &reply.json()["response"];
    assert_eq!(refused["allowed"], false);
    assert_eq!(refused["status"]["message"], "will not default this one");
    assert_eq!(refused["status"]["code"], 403);
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn validator_denial_has_the_captured_status_shape() -> Result<()> {
    let served = serve(server()).await?;
    let response = served
        .review(
            "/validate--v1-configmap",
            "received-08-deny-CREATE-ConfigMap.json",
        )
        .await?;
    assert_eq!(response["uid"], "77f2f66d-1667-46e0-9ded-01d01e021893");
    assert_eq!(response["allowed"], false);
    let status = &response["status"];
    // What the API server answered the client for this denial.
    let captured = fixture("denied-by-webhook.json")["body"].clone();
    assert_eq!(status["code"], captured["code"]);
    assert_eq!(status["status"], captured["status"]);
    assert_eq!(status.get("reason"), captured.get("reason"));
    assert_eq!(
        format!(
            "admission webhook \"deny.ref.example.com\" denied the request: {}",
            status["message"].as_str().unwrap_or_default()
        ),
        captured["message"]
    );
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn validator_field_errors_become_causes() -> Result<()> {
    let served = serve(server()).await?;
    // The captured create of `a` with its data removed.
    let mut body = fixture("received-01-patch-CREATE-ConfigMap.json")["body"].clone();
    body["request"]["object"]
        .as_object_mut()
        .expect("object")
        .remove("data");
    let reply = served
        .post("/validate--v1-configmap", &body.to_string())
        .await?;
    let status = reply.json()["response"]["status"].clone();
    assert_eq!(
        status,
        json!({
            "metadata": {},
            "status": "Failure",
            "message": "ConfigMap \"a\" is invalid: [data: Required value, metadata.name: \
                        Invalid value: \"a\": needs data]",
            "details": {
                "name": "a",
                "kind": "ConfigMap",
                "causes": [
                    {"reason": "FieldValueRequired", "message": "Required value", "field": "data"},
                    {"reason": "FieldValueInvalid", "message": "Invalid value: \"a\": needs data",
                     "field": "metadata.name"}
                ]
            },
            "code": 403
        })
    );
    // Update: the old and the new object reach validate_update.
    let update = served
        .review(
            "/validate--v1-configmap",
            "received-04-allow-UPDATE-ConfigMap.json",
        )
        .await?;
    assert_eq!(update["allowed"], false);
    assert_eq!(
        update["status"]["message"],
        "ConfigMap \"a\" is invalid: data.k: Forbidden: may not change"
    );
    assert_eq!(
        update["status"]["details"]["causes"][0]["reason"],
        "FieldValueForbidden"
    );
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn validator_warnings_reach_the_response() -> Result<()> {
    let served = serve(server()).await?;
    let response = served
        .review(
            "/validate--v1-configmap",
            "received-09-warn-CREATE-ConfigMap.json",
        )
        .await?;
    assert_eq!(response["allowed"], true);
    // The API server turns each into a `Warning: 299 - "..."` header, as captured.
    let captured: Vec<String> = fixture("warned-by-webhook.json")["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .filter_map(|h| h.as_str()?.strip_prefix("warning: 299 - "))
        .map(|w| w.trim_matches('"').to_owned())
        .collect();
    assert_eq!(response["warnings"], json!(captured));
    let delete = served
        .review(
            "/validate--v1-configmap",
            "received-07-patch-DELETE-ConfigMap.json",
        )
        .await?;
    assert_eq!(delete["allowed"], true);
    assert_eq!(delete["warnings"], json!(["deleting a"]));
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn raw_handler_serves_any_kind() -> Result<()> {
    let served = serve(server()).await?;
    let response = served
        .review("/label-anything", "received-11-allow-CREATE-Widget.json")
        .await?;
    assert_eq!(response["uid"], "0af537f1-b8a2-457f-a77a-c96a35da7b58");
    assert_eq!(
        decoded_patch(&response),
        json!([{"op": "add", "path": "/metadata/labels", "value": {"seen-by": "raw"}}])
    );
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn bad_requests_panics_and_unknown_paths() -> Result<()> {
    let served = serve(server()).await?;
    let addr = served.running.local_addr();
    let body = received_body("received-01-patch-CREATE-ConfigMap.json");
    let wrong_type = post(
        &served.connector,
        addr,
        HOST,
        "/validate--v1-configmap",
        "text/plain",
        &body,
    )
    .await?;
    assert_eq!(wrong_type.status, 200);
    let response = &wrong_type.json()["response"];
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 400);
    assert_eq!(
        response["status"]["message"],
        "contentType=text/plain, expected application/json"
    );
    let garbage = served.post("/validate--v1-configmap", "{not json").await?;
    assert_eq!(garbage.json()["response"]["status"]["code"], 400);
    let empty = served.post("/validate--v1-configmap", "").await?;
    assert_eq!(
        empty.json()["response"]["status"]["message"],
        "request body is empty"
    );
    let panicked = served.post("/panic", &body).await?;
    let response = &panicked.json()["response"];
    assert_eq!(response["allowed"], false);
    assert_eq!(response["uid"], "108f7eee-73e3-47a0-a265-438033aca1b8");
    assert_eq!(response["status"]["code"], 500);
    assert_eq!(
        response["status"]["message"],
        "panic: handler bug [recovered]"
    );
    assert_eq!(
        served
            .registry
            .total("controller_runtime_webhook_panics_total", &[]),
        1.0
    );
    let missing = served.post("/mutate-nothing", &body).await?;
    assert_eq!(missing.status, 404);
    // The server still serves after all that.
    let fine = served
        .review(
            "/validate--v1-configmap",
            "received-01-patch-CREATE-ConfigMap.json",
        )
        .await?;
    assert_eq!(fine["allowed"], true);
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn metrics_count_requests_by_webhook_and_code() -> Result<()> {
    let served = serve(server()).await?;
    // The API server adds `?timeout=10s`; the query is not part of the path.
    for path in [
        "/mutate--v1-configmap",
        "/mutate--v1-configmap?timeout=10s",
        "/mutate--v1-configmap",
    ] {
        let response = served
            .review(path, "received-01-patch-CREATE-ConfigMap.json")
            .await?;
        assert_eq!(response["allowed"], true);
    }
    served
        .review(
            "/validate--v1-configmap",
            "received-08-deny-CREATE-ConfigMap.json",
        )
        .await?;
    let total = |webhook: &str, code: &str| {
        served.registry.total(
            "controller_runtime_webhook_requests_total",
            &[("webhook", webhook), ("code", code)],
        )
    };
    assert_eq!(total("/mutate--v1-configmap", "200"), 3.0);
    // A denial is still an HTTP 200 AdmissionReview, as controller-runtime counts it.
    assert_eq!(total("/validate--v1-configmap", "200"), 1.0);
    assert_eq!(
        served.registry.total(
            "controller_runtime_webhook_requests_in_flight",
            &[("webhook", "/mutate--v1-configmap")]
        ),
        0.0
    );
    let text = served.registry.encode_text();
    assert!(
        text.contains(
            "controller_runtime_webhook_latency_seconds_count{webhook=\"/mutate--v1-configmap\"} 3"
        ),
        "{text}"
    );
    assert!(text.contains("# TYPE controller_runtime_webhook_latency_seconds histogram"));
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn readiness_follows_serving_and_shutdown_is_graceful() -> Result<()> {
    let server = server();
    let ready = server.ready_check();
    assert!(ready().is_err());
    let served = serve(server).await?;
    assert_eq!(ready(), Ok(()));
    let addr = served.running.local_addr();
    served.running.shutdown().await;
    assert!(ready().is_err());
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    Ok(())
}

#[tokio::test]
async fn start_waits_for_the_certificate_files() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let server = WebhookServer::new()
        .host("127.0.0.1")
        .port(0)
        .cert_dir(dir.path())
        .metrics_registry(Registry::new());
    let ready = server.ready_check();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.start(async move {
        let _ = stop_rx.await;
    }));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(ready().is_err(), "no certificate yet");
    let (cert, key) = self_signed(&[HOST]);
    write_cert(dir.path(), &cert, &key);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while ready().is_err() {
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop_tx.send(());
    task.await??;
    assert!(ready().is_err());
    Ok(())
}

#[tokio::test]
async fn a_rotated_certificate_is_served_to_new_connections() -> Result<()> {
    let served = serve(server()).await?;
    let addr = served.running.local_addr();
    let dir: &Path = served.cert_dir.path();
    let first = std::fs::read_to_string(dir.join("tls.crt"))?;
    assert_eq!(
        peer_certificate(&served.connector, addr, HOST).await?,
        der(&first)
    );

    let (cert, key) = self_signed(&[HOST, "127.0.0.1"]);
    write_cert(dir, &cert, &key);
    let rotated = connector(&cert);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(seen) = peer_certificate(&rotated, addr, HOST).await
            && seen == der(&cert)
        {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the new certificate was never served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The old certificate is no longer served; requests go through with the new one.
    assert!(
        peer_certificate(&served.connector, addr, HOST)
            .await
            .is_err()
    );
    let reply = post(
        &rotated,
        addr,
        HOST,
        "/mutate--v1-configmap",
        "application/json",
        &received_body("received-01-patch-CREATE-ConfigMap.json"),
    )
    .await?;
    assert_eq!(reply.json()["response"]["allowed"], true);
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn shutdown_lets_the_request_in_flight_finish() -> Result<()> {
    let entered = std::sync::Arc::new(tokio::sync::Notify::new());
    let mut server = WebhookServer::new();
    let signal = entered.clone();
    server.raw_async("/slow", move |request: AdmissionRequest<DynamicObject>| {
        let signal = signal.clone();
        async move {
            signal.notify_one();
            tokio::time::sleep(Duration::from_millis(300)).await;
            AdmissionResponse::from(&request)
        }
    })?;
    let Served {
        running,
        registry,
        connector,
        cert_dir: _cert_dir,
    } = serve(server).await?;
    let addr = running.local_addr();
    let client = connector.clone();
    let request = tokio::spawn(async move {
        post(
            &client,
            addr,
            HOST,
            "/slow",
            "application/json",
            &received_body("received-01-patch-CREATE-ConfigMap.json"),
        )
        .await
    });
    entered.notified().await;
    let in_flight = || {
        registry.total(
            "controller_runtime_webhook_requests_in_flight",
            &[("webhook", "/slow")],
        )
    };
    assert_eq!(in_flight(), 1.0);
    let shutdown = tokio::spawn(running.shutdown());
    let reply = request.await??;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["response"]["allowed"], true);
    shutdown.await?;
    assert_eq!(in_flight(), 0.0);
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    Ok(())
}

mod widget {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Widget v2 as a Rust type would often be written: `Option`s serialized as `null`.
    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "ref.example.com", version = "v2", kind = "Widget", namespaced)]
    pub struct WidgetSpec {
        /// How many.
        pub replicas: Option<i64>,
        /// Whether paused.
        pub paused: Option<bool>,
    }
}

/// Defaults `spec.paused` to false.
struct Unpaused;

impl Defaulter<widget::Widget> for Unpaused {
    async fn default(
        &self,
        _request: &AdmissionRequest<DynamicObject>,
        w: &mut widget::Widget,
    ) -> Result<(), Denial> {
        w.spec.paused.get_or_insert(false);
        Ok(())
    }
}

#[tokio::test]
async fn defaulter_patch_applies_to_the_object_the_api_server_holds() -> Result<()> {
    let mut server = WebhookServer::new();
    server.defaulter::<widget::Widget, _>(Unpaused)?;
    let served = serve(server).await?;
    let response = served
        .review(
            "/mutate-ref-example-com-v2-widget",
            "received-11-allow-CREATE-Widget.json",
        )
        .await?;
    // The typed object had `paused: null` where the API server's object has nothing: the
    // patch adds it rather than replacing a value that is not there.
    let patch = decoded_patch(&response);
    assert_eq!(
        patch,
        json!([{"op": "add", "path": "/spec/paused", "value": false}])
    );
    let mut object =
        fixture("received-11-allow-CREATE-Widget.json")["body"]["request"]["object"].clone();
    let patch: json_patch::Patch = serde_json::from_value(patch)?;
    json_patch::patch(&mut object, &patch)?;
    assert_eq!(object["spec"], json!({"replicas": 3, "paused": false}));
    served.running.shutdown().await;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn start_fails_on_a_certificate_that_never_loads() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (cert, _) = self_signed(&[HOST]);
    let (_, other_key) = self_signed(&[HOST]);
    write_cert(dir.path(), &cert, &other_key);
    let server = WebhookServer::new()
        .host("127.0.0.1")
        .port(0)
        .cert_dir(dir.path())
        .metrics_registry(Registry::new());
    let err = server
        .start(std::future::pending())
        .await
        .expect_err("a key of another certificate");
    assert!(
        matches!(
            err,
            korral_runtime::webhook::WebhookError::Certificate(
                korral_runtime::webhook::CertError::Load(_)
            )
        ),
        "{err:?}"
    );
    Ok(())
}

#[tokio::test]
async fn start_rereads_a_half_written_pair() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (cert, key) = self_signed(&[HOST]);
    let (_, other_key) = self_signed(&[HOST]);
    write_cert(dir.path(), &cert, &other_key);
    let server = WebhookServer::new()
        .host("127.0.0.1")
        .port(0)
        .cert_dir(dir.path())
        .metrics_registry(Registry::new());
    let ready = server.ready_check();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.start(async move {
        let _ = stop_rx.await;
    }));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(ready().is_err());
    std::fs::write(dir.path().join("tls.key"), &key)?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while ready().is_err() {
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = stop_tx.send(());
    task.await??;
    Ok(())
}
