//! Admission webhooks end to end: webhook configurations (defaults, refusals) and the server
//! calling small https webhooks run by the test (mutation, denial, failures, timeouts, warnings,
//! dry run, selectors, delete), compared with the reference captures of kube-apiserver v1.36.

mod common;

use std::time::Duration;

use base64::Engine;
use http_body_util::BodyExt;
use serde_json::{Value, json};

use common::HttpsHook as Hook;
use common::TestEnv;

/// The answer of the test webhook for a path.
async fn answer(path: &str, review: &Value) -> Value {
    let uid = review["request"]["uid"].clone();
    let mut response = json!({"uid": uid, "allowed": true});
    match path {
        "/patch" => {
            let has_annotations = review["request"]["object"]["metadata"]
                .get("annotations")
                .is_some();
            let op = if has_annotations {
                json!([{"op": "add", "path": "/metadata/annotations/patched", "value": "yes"}])
            } else {
                json!([{"op": "add", "path": "/metadata/annotations", "value": {"patched": "yes"}}])
            };
            let b64 = base64::engine::general_purpose::STANDARD.encode(op.to_string());
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(b64);
        }
        "/badpatch" => {
            let op = json!([{"op": "add", "path": "/data", "value": 5}]);
            let b64 = base64::engine::general_purpose::STANDARD.encode(op.to_string());
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(b64);
        }
        "/deny-invalid" => {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": 422, "reason": "Invalid",
                "message": "ConfigMap \"x\" is invalid: data.k: Invalid value: \"v\": not allowed",
                "details": {"name": "x", "kind": "ConfigMap", "causes": [
                    {"reason": "FieldValueInvalid", "message": "Invalid value: \"v\": not allowed", "field": "data.k"}]}});
        }
        "/deny-success-code" => {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": 200, "message": "no"});
        }
        "/deny" => {
            response["allowed"] = json!(false);
            response["status"] = json!({"message": "denied by test hook", "code": 403});
        }
        "/scale-cap" => {
            let replicas = review["request"]["object"]["spec"]["replicas"]
                .as_i64()
                .unwrap_or(0);
            if replicas > 5 {
                let op = json!([{"op": "replace", "path": "/spec/replicas", "value": 5}]);
                let b64 = base64::engine::general_purpose::STANDARD.encode(op.to_string());
                response["patchType"] = json!("JSONPatch");
                response["patch"] = json!(b64);
                response["warnings"] = json!(["replicas capped at 5"]);
            }
        }
        "/warn" => {
            response["warnings"] = json!(["test hook warning one", "test hook warning two"]);
        }
        "/slow" => tokio::time::sleep(Duration::from_secs(3)).await,
        _ => {}
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// Starts the https webhook server on a free port, with a certificate for 127.0.0.1.
async fn start_hook() -> Hook {
    common::serve_https(|path: String, review: Value| async move {
        let code = if path == "/error" { 500 } else { 200 };
        (code, answer(&path, &review).await)
    })
    .await
}

/// A request through the kube client answering status, headers and JSON body.
async fn request(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Vec<String>, Value) {
    common::request(client, method, path, None, body).await
}

/// A webhook on ConfigMaps in namespaces labelled `hooks: on`.
fn webhook(name: &str, url: String, ca: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"hooks": "on"}},
        "sideEffects": "None",
        "timeoutSeconds": 5,
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(h), Some(e)) = (hook.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            h.insert(k.clone(), v.clone());
        }
    }
    hook
}

const VWC: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const MWC: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";

async fn configure(client: &kube::Client, collection: &str, name: &str, hooks: Vec<Value>) {
    let kind = if collection == VWC {
        "ValidatingWebhookConfiguration"
    } else {
        "MutatingWebhookConfiguration"
    };
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": hooks});
    let (code, _, created) = request(client, "POST", collection, Some(body)).await;
    assert_eq!(code, 201, "{created}");
}

/// A configuration of one webhook named `name` calling `path` of the test hook (the defaults of
/// [`webhook`]).
async fn configure_hook(
    client: &kube::Client,
    collection: &str,
    name: &str,
    hook: &Hook,
    path: &str,
) {
    configure(
        client,
        collection,
        name,
        vec![webhook(name, hook.url(path), &hook.ca_bundle, json!({}))],
    )
    .await;
}

async fn unconfigure(client: &kube::Client, collection: &str, name: &str) {
    let (code, _, body) = request(client, "DELETE", &format!("{collection}/{name}"), None).await;
    assert_eq!(code, 200, "{body}");
}

async fn namespace(client: &kube::Client, name: &str, hooks: bool) {
    let labels = if hooks {
        json!({"hooks": "on"})
    } else {
        json!({})
    };
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}});
    let (code, _, b) = request(client, "POST", "/api/v1/namespaces", Some(body)).await;
    assert_eq!(code, 201, "{b}");
}

fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

/// The keys of a JSON object, sorted.
fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

#[tokio::test]
async fn configurations_are_defaulted_and_refused_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let hook = webhook(
        "allow.ref.example.com",
        "https://127.0.0.1:30170/allow".into(),
        "Zm9v",
        json!({"timeoutSeconds": null, "namespaceSelector": null}),
    );
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": {"name": "patch.ref.example.com"}, "webhooks": [hook]});
    let (code, _, created) = request(&client, "POST", MWC, Some(body)).await;
    assert_eq!(code, 201, "{created}");
    let got = &created["webhooks"][0];
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(got["failurePolicy"], "Fail");
    assert_eq!(got["matchPolicy"], "Equivalent");
    assert_eq!(got["namespaceSelector"], json!({}));
    assert_eq!(got["objectSelector"], json!({}));
    assert_eq!(got["timeoutSeconds"], 10);
    assert_eq!(got["reinvocationPolicy"], "Never");
    assert_eq!(got["rules"][0]["scope"], "*");

    let bad = webhook(
        "two.segments",
        "http://127.0.0.1/x".into(),
        "Zm9v",
        json!({"timeoutSeconds": 31, "sideEffects": "Unknown"}),
    );
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "bad"}, "webhooks": [bad]});
    let (code, _, status) = request(&client, "POST", VWC, Some(body)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    let causes: Vec<String> = status["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    for want in [
        "webhooks[0].name: Invalid value: \"two.segments\": should be a domain with at least three segments separated by dots",
        "webhooks[0].sideEffects: Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\"",
        "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
    ] {
        assert!(
            causes.iter().any(|c| c == want),
            "missing {want}: {causes:?}"
        );
    }
    let bad_bundle = webhook(
        "bundle.ref.example.com",
        "https://127.0.0.1/x".into(),
        "not base64!",
        json!({}),
    );
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "bundle"}, "webhooks": [bad_bundle]});
    let (code, _, status) = request(&client, "POST", VWC, Some(body)).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "ValidatingWebhookConfiguration in version \"v1\" cannot be handled as a ValidatingWebhookConfiguration: illegal base64 data at input byte 3"
    );
    let (code, _, table) = {
        let req = http::Request::builder()
            .uri(MWC)
            .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
            .body(Vec::new())
            .expect("request");
        let resp = client
            .send(req.map(kube::client::Body::from))
            .await
            .expect("send");
        let code = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        (
            code,
            (),
            serde_json::from_slice::<Value>(&bytes).expect("json"),
        )
    };
    assert_eq!(code, 200);
    let _ = table;
    assert_eq!(table["columnDefinitions"][1]["name"], "Webhooks");
    assert_eq!(table["rows"][0]["cells"][1], 1);
}

#[tokio::test]
async fn mutating_then_validating_webhooks_see_reviews_as_upstream() {
    let hook = start_hook().await;
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    namespace(&client, "ref-adm", true).await;
    namespace(&client, "quiet", false).await;
    configure_hook(&client, MWC, "patch.test.example.com", &hook, "/patch").await;
    configure_hook(&client, VWC, "allow.test.example.com", &hook, "/allow").await;

    // Create: mutated (annotation), validated with the mutated object.
    let cms = "/api/v1/namespaces/ref-adm/configmaps";
    let (code, _, created) = request(
        &client,
        "POST",
        cms,
        Some(configmap("a", json!({"k": "v"}))),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["metadata"]["annotations"],
        json!({"patched": "yes"})
    );
    let (_, _, stored) = request(&client, "GET", &format!("{cms}/a"), None).await;
    assert_eq!(stored["metadata"]["annotations"], json!({"patched": "yes"}));
    // managedFields, as upstream: the mutation is not attributed to the client.
    assert_eq!(
        stored["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {".": {}, "f:k": {}}})
    );

    let expected: Value = serde_json::from_str(include_str!(
        "fixtures/admission/received-01-patch-CREATE-ConfigMap.json"
    ))
    .expect("fixture");
    let want = &expected["body"]["request"];
    let patch = hook.reviews("/patch");
    assert_eq!(patch.len(), 1);
    let review = &patch[0];
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    assert_eq!(review["query"], "timeout=5s");
    let got = &review["request"];
    assert_eq!(keys(got), keys(want));
    for field in [
        "kind",
        "resource",
        "requestKind",
        "requestResource",
        "name",
        "namespace",
        "operation",
        "oldObject",
        "dryRun",
        "options",
    ] {
        assert_eq!(got[field], want[field], "{field}");
    }
    // Our administrator has no uid (the captured one came from a token file that gave one).
    let mut user_keys = keys(&want["userInfo"]);
    user_keys.retain(|k| k != "uid");
    assert_eq!(keys(&got["userInfo"]), user_keys);
    assert!(
        got["userInfo"]["groups"]
            .as_array()
            .expect("groups")
            .contains(&json!("system:masters"))
    );
    // The mutating webhook sees the object before the server assigns uid and timestamp.
    assert_eq!(
        keys(&got["object"]["metadata"]),
        keys(&want["object"]["metadata"])
    );
    assert_eq!(got["object"]["data"], want["object"]["data"]);
    let allow = hook.reviews("/allow");
    assert_eq!(allow.len(), 1);
    let vmeta = &allow[0]["request"]["object"]["metadata"];
    assert_eq!(vmeta["annotations"], json!({"patched": "yes"}));
    assert!(vmeta["uid"].is_string() && vmeta["creationTimestamp"].is_string());

    // Update: the old object travels along.
    hook.clear();
    let mut next = stored.clone();
    next["data"] = json!({"k": "w"});
    let (code, _, updated) = request(&client, "PUT", &format!("{cms}/a"), Some(next)).await;
    assert_eq!(code, 200, "{updated}");
    let upd = hook.reviews("/allow");
    assert_eq!(upd.len(), 1);
    let r = &upd[0]["request"];
    assert_eq!(r["operation"], "UPDATE");
    assert_eq!(
        r["options"],
        json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"})
    );
    assert_eq!(r["oldObject"]["data"], json!({"k": "v"}));
    assert_eq!(r["object"]["data"], json!({"k": "w"}));
    assert_eq!(
        r["object"]["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );

    // Delete: object null, oldObject the stored one, DeleteOptions.
    hook.clear();
    let (code, _, _) = request(&client, "DELETE", &format!("{cms}/a"), None).await;
    assert_eq!(code, 200);
    let expected: Value = serde_json::from_str(include_str!(
        "fixtures/admission/received-07-patch-DELETE-ConfigMap.json"
    ))
    .expect("fixture");
    let want = &expected["body"]["request"];
    let del = hook.reviews("/patch");
    assert_eq!(del.len(), 1);
    let got = &del[0]["request"];
    assert_eq!(keys(got), keys(want));
    assert_eq!(got["object"], Value::Null);
    assert_eq!(got["options"], want["options"]);
    assert_eq!(got["oldObject"]["data"], json!({"k": "w"}));

    // Dry run: the webhooks declare no side effects, so they are called with dryRun.
    hook.clear();
    let (code, _, dry) = request(
        &client,
        "POST",
        &format!("{cms}?dryRun=All"),
        Some(configmap("dry", json!({}))),
    )
    .await;
    assert_eq!(code, 201, "{dry}");
    assert_eq!(dry["metadata"]["annotations"], json!({"patched": "yes"}));
    let (code, _, _) = request(&client, "GET", &format!("{cms}/dry"), None).await;
    assert_eq!(code, 404);
    let r = &hook.reviews("/patch")[0]["request"];
    assert_eq!(r["dryRun"], true);
    assert_eq!(
        r["options"],
        json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]})
    );

    // generateName: mutating webhooks see the object before the server names it.
    hook.clear();
    let unnamed =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}});
    let (code, _, generated) = request(&client, "POST", cms, Some(unnamed)).await;
    assert_eq!(code, 201, "{generated}");
    let r = &hook.reviews("/patch")[0]["request"];
    assert!(r.get("name").is_none(), "{r}");
    assert!(r["object"]["metadata"].get("name").is_none());
    assert_eq!(r["object"]["metadata"]["generateName"], "gen-");
    let v = &hook.reviews("/allow")[0]["request"];
    assert_eq!(v["name"], generated["metadata"]["name"]);

    // Namespace selector: nothing called in a namespace without the label.
    hook.clear();
    let (code, _, quiet) = request(
        &client,
        "POST",
        "/api/v1/namespaces/quiet/configmaps",
        Some(configmap("q", json!({}))),
    )
    .await;
    assert_eq!(code, 201);
    assert!(quiet["metadata"].get("annotations").is_none());
    assert!(hook.received.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn denials_failures_timeouts_and_warnings() {
    let hook = start_hook().await;
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    namespace(&client, "adm", true).await;
    let cms = "/api/v1/namespaces/adm/configmaps";

    let (code, _, _) = request(&client, "POST", cms, Some(configmap("keep", json!({})))).await;
    assert_eq!(code, 201);
    // Denial.
    configure_hook(&client, VWC, "deny.test.example.com", &hook, "/deny").await;
    let (code, _, status) = request(&client, "POST", cms, Some(configmap("d", json!({})))).await;
    let expected: Value =
        serde_json::from_str(include_str!("fixtures/admission/denied-by-webhook.json"))
            .expect("fixture");
    assert_eq!(code, 403);
    assert_eq!(
        status["message"],
        "admission webhook \"deny.test.example.com\" denied the request: denied by test hook"
    );
    assert_eq!(status["code"], expected["body"]["code"]);
    assert_eq!(status["status"], "Failure");
    // A denial without a reason carries none (upstream omits the empty field).
    assert_eq!(
        status.get("reason"),
        expected["body"].get("reason"),
        "{status}"
    );
    let (code, _, _) = request(&client, "GET", &format!("{cms}/d"), None).await;
    assert_eq!(code, 404, "a denied create stores nothing");
    // A collection delete calls the webhook for each object: denied, nothing removed.
    let (code, _, status) = request(&client, "DELETE", cms, None).await;
    assert_eq!(code, 403, "{status}");
    let (code, _, _) = request(&client, "GET", &format!("{cms}/keep"), None).await;
    assert_eq!(code, 200);
    unconfigure(&client, VWC, "deny.test.example.com").await;
    // A denial keeps the webhook's reason and details; a success code becomes 400.
    configure_hook(
        &client,
        VWC,
        "deny-invalid.test.example.com",
        &hook,
        "/deny-invalid",
    )
    .await;
    let (code, _, status) = request(
        &client,
        "POST",
        cms,
        Some(configmap("x", json!({"k": "v"}))),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "admission webhook \"deny-invalid.test.example.com\" denied the request: ConfigMap \"x\" is invalid: data.k: Invalid value: \"v\": not allowed"
    );
    assert_eq!(status["details"]["causes"][0]["field"], "data.k");
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "FieldValueInvalid"
    );
    assert_eq!(status["details"]["kind"], "ConfigMap");
    unconfigure(&client, VWC, "deny-invalid.test.example.com").await;
    configure_hook(
        &client,
        VWC,
        "deny-200.test.example.com",
        &hook,
        "/deny-success-code",
    )
    .await;
    let (code, _, status) = request(&client, "POST", cms, Some(configmap("y", json!({})))).await;
    assert_eq!(code, 400, "{status}");
    unconfigure(&client, VWC, "deny-200.test.example.com").await;

    // Unreachable, failurePolicy Fail then Ignore.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let down = format!("https://127.0.0.1:{port}/allow");
    configure(
        &client,
        VWC,
        "down.test.example.com",
        vec![webhook(
            "down.test.example.com",
            down.clone(),
            &hook.ca_bundle,
            json!({"timeoutSeconds": 2}),
        )],
    )
    .await;
    let (code, _, status) = request(&client, "POST", cms, Some(configmap("u", json!({})))).await;
    assert_eq!(code, 500, "{status}");
    let message = format!(
        "failed calling webhook \"down.test.example.com\": failed to call webhook: Post \"https://127.0.0.1:{port}/allow?timeout=2s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
    );
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(
        status["message"],
        format!("Internal error occurred: {message}")
    );
    assert_eq!(status["details"]["causes"][0]["message"], message);
    unconfigure(&client, VWC, "down.test.example.com").await;
    configure(
        &client,
        VWC,
        "down.test.example.com",
        vec![webhook(
            "down.test.example.com",
            down,
            &hook.ca_bundle,
            json!({"failurePolicy": "Ignore"}),
        )],
    )
    .await;
    let (code, _, _) = request(&client, "POST", cms, Some(configmap("u", json!({})))).await;
    assert_eq!(code, 201, "failurePolicy Ignore lets the write through");
    unconfigure(&client, VWC, "down.test.example.com").await;

    // A CA bundle that does not sign the webhook's certificate, and an HTTP error.
    let other_ca = korral_apiserver::tls::generate(&["127.0.0.1".to_string()]).expect("tls");
    let other_ca = base64::engine::general_purpose::STANDARD.encode(&other_ca.ca_cert_pem);
    configure(
        &client,
        VWC,
        "x509.test.example.com",
        vec![webhook(
            "x509.test.example.com",
            hook.url("/allow"),
            &other_ca,
            json!({}),
        )],
    )
    .await;
    let (code, _, status) = request(&client, "POST", cms, Some(configmap("x", json!({})))).await;
    assert_eq!(code, 500);
    assert_eq!(
        status["message"],
        format!(
            "Internal error occurred: failed calling webhook \"x509.test.example.com\": failed to call webhook: Post \"{}?timeout=5s\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
            hook.url("/allow")
        )
    );
    unconfigure(&client, VWC, "x509.test.example.com").await;
    configure_hook(&client, VWC, "error.test.example.com", &hook, "/error").await;
    let (code, _, status) = request(&client, "POST", cms, Some(configmap("e", json!({})))).await;
    assert_eq!(code, 500);
    let message = status["message"].as_str().expect("message");
    assert!(
        message.starts_with("Internal error occurred: failed calling webhook \"error.test.example.com\": failed to call webhook: an error on the server (\""),
        "{message}"
    );
    unconfigure(&client, VWC, "error.test.example.com").await;

    // Timeout (1 s against a webhook answering after 3 s).
    configure(
        &client,
        VWC,
        "slow.test.example.com",
        vec![webhook(
            "slow.test.example.com",
            hook.url("/slow"),
            &hook.ca_bundle,
            json!({"timeoutSeconds": 1}),
        )],
    )
    .await;
    let started = std::time::Instant::now();
    let (code, _, status) = request(&client, "POST", cms, Some(configmap("s", json!({})))).await;
    assert_eq!(code, 500);
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "timeout enforced"
    );
    assert_eq!(
        status["message"],
        format!(
            "Internal error occurred: failed calling webhook \"slow.test.example.com\": failed to call webhook: Post \"{}?timeout=1s\": context deadline exceeded",
            hook.url("/slow")
        )
    );
    unconfigure(&client, VWC, "slow.test.example.com").await;

    // Warnings become Warning headers.
    configure_hook(&client, VWC, "warn.test.example.com", &hook, "/warn").await;
    let (code, warnings, _) = request(&client, "POST", cms, Some(configmap("w", json!({})))).await;
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        vec![
            "299 - \"test hook warning one\"".to_string(),
            "299 - \"test hook warning two\"".to_string()
        ]
    );
    // A delete carries the webhook's warnings too.
    let (code, warnings, _) = request(&client, "DELETE", &format!("{cms}/w"), None).await;
    assert_eq!(code, 200);
    assert_eq!(
        warnings,
        vec![
            "299 - \"test hook warning one\"".to_string(),
            "299 - \"test hook warning two\"".to_string()
        ]
    );
    unconfigure(&client, VWC, "warn.test.example.com").await;

    // A patch that breaks validation: refused, nothing stored.
    configure_hook(&client, MWC, "bad.test.example.com", &hook, "/badpatch").await;
    let (code, _, status) = request(&client, "POST", cms, Some(configmap("b", json!({})))).await;
    assert!(code == 400 || code == 422, "{code} {status}");
    let (code, _, _) = request(&client, "GET", &format!("{cms}/b"), None).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn object_selectors_and_service_references() {
    let hook = start_hook().await;
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    namespace(&client, "adm", true).await;
    let cms = "/api/v1/namespaces/adm/configmaps";
    env.server()
        .webhook_services()
        .insert("hooks", "webhook-service", 443, hook.address);
    let mut by_service = webhook(
        "svc.test.example.com",
        String::new(),
        &hook.ca_bundle,
        json!({"objectSelector": {"matchLabels": {"check": "yes"}}}),
    );
    by_service["clientConfig"] = json!({"service": {"namespace": "hooks", "name": "webhook-service", "path": "/deny"}, "caBundle": hook.ca_bundle});
    configure(&client, VWC, "svc.test.example.com", vec![by_service]).await;
    let (code, _, _) = request(&client, "POST", cms, Some(configmap("plain", json!({})))).await;
    assert_eq!(code, 201, "not selected by the object selector");
    let mut labelled = configmap("labelled", json!({}));
    labelled["metadata"]["labels"] = json!({"check": "yes"});
    let (code, _, status) = request(&client, "POST", cms, Some(labelled)).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"svc.test.example.com\" denied the request: denied by test hook"
    );
}

const VAP: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const VAPB: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

/// A captured response's body.
fn captured(text: &str) -> Value {
    let v: Value = serde_json::from_str(text).expect("fixture");
    v["body"].clone()
}

async fn bind(client: &kube::Client, name: &str, policy: &str, actions: Value, extra: Value) {
    let mut spec = json!({
        "policyName": policy,
        "matchResources": {"namespaceSelector": {"matchLabels": {"hooks": "on"}}},
        "validationActions": actions,
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            s.insert(k.clone(), v.clone());
        }
    }
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": spec});
    let (code, _, b) = request(client, "POST", VAPB, Some(body)).await;
    assert_eq!(code, 201, "{b}");
}

#[tokio::test]
async fn validating_admission_policies_deny_and_warn_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    namespace(&client, "ref-adm", true).await;
    let cms = "/api/v1/namespaces/ref-adm/configmaps";
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "ref-small"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "validations": [
                {"expression": "!has(object.data) || object.data.size() <= 2", "message": "at most two keys"},
                {"expression": "!has(object.metadata.labels) || !(\"bad\" in object.metadata.labels)", "reason": "Forbidden", "messageExpression": "\"label bad is not allowed on \" + object.metadata.name"}
            ]
        }
    });
    let (code, _, created) = request(&client, "POST", VAP, Some(policy)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["failurePolicy"], "Fail");
    assert_eq!(
        created["spec"]["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    assert_eq!(created["status"], json!({}));
    bind(
        &client,
        "ref-small-deny",
        "ref-small",
        json!(["Deny"]),
        json!({}),
    )
    .await;
    // The type-checking controller writes the status first (as upstream's); a write based on
    // the created object would conflict with it.
    let started = std::time::Instant::now();
    let checked = loop {
        let (code, _, current) = request(&client, "GET", &format!("{VAP}/ref-small"), None).await;
        assert_eq!(code, 200, "{current}");
        if current["status"]["observedGeneration"] == 1 {
            break current;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "status never written: {current}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(checked["status"]["typeChecking"], json!({}));
    // Status is written through its subresource only.
    let mut with_status = checked.clone();
    with_status["status"] = json!({"observedGeneration": 1});
    let (code, _, b) = request(
        &client,
        "PUT",
        &format!("{VAP}/ref-small/status"),
        Some(with_status),
    )
    .await;
    assert_eq!(code, 200, "{b}");
    assert_eq!(b["status"], json!({"observedGeneration": 1}));
    let mut main = b.clone();
    main["status"] = json!({});
    let (code, _, b) = request(&client, "PUT", &format!("{VAP}/ref-small"), Some(main)).await;
    assert_eq!(code, 200, "{b}");
    assert_eq!(b["status"], json!({"observedGeneration": 1}));

    let (code, _, status) = request(
        &client,
        "POST",
        cms,
        Some(configmap("big", json!({"a": "1", "b": "2", "c": "3"}))),
    )
    .await;
    let want = captured(include_str!(
        "fixtures/admission/denied-by-policy-message.json"
    ));
    assert_eq!(code, 422);
    assert_eq!(status, want);
    let mut lab = configmap("lab", json!({}));
    lab["metadata"]["labels"] = json!({"bad": "x"});
    let (code, _, status) = request(&client, "POST", cms, Some(lab)).await;
    let want = captured(include_str!(
        "fixtures/admission/denied-by-policy-messageexpression.json"
    ));
    assert_eq!(code, 403);
    assert_eq!(status, want);
    let (code, _, _) = request(
        &client,
        "POST",
        cms,
        Some(configmap("small", json!({"a": "1"}))),
    )
    .await;
    assert_eq!(code, 201);

    // Warn instead of Deny.
    let (code, _, _) = request(&client, "DELETE", &format!("{VAPB}/ref-small-deny"), None).await;
    assert_eq!(code, 200);
    bind(
        &client,
        "ref-small-warn",
        "ref-small",
        json!(["Warn"]),
        json!({}),
    )
    .await;
    let (code, warnings, _) = request(
        &client,
        "POST",
        cms,
        Some(configmap("big2", json!({"a": "1", "b": "2", "c": "3"}))),
    )
    .await;
    assert_eq!(code, 201);
    let want: Value =
        serde_json::from_str(include_str!("fixtures/admission/warned-by-policy.json"))
            .expect("fixture");
    assert_eq!(
        json!(warnings),
        json!([want["headers"][1]
            .as_str()
            .expect("header")
            .trim_start_matches("warning: ")])
    );
    let (code, _, _) = request(&client, "DELETE", &format!("{VAPB}/ref-small-warn"), None).await;
    assert_eq!(code, 200);

    // Params: the limit comes from a ConfigMap named by the binding.
    let limited = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "limited"},
        "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "variables": [{"name": "keys", "expression": "has(object.data) ? object.data.size() : 0"}],
            "validations": [{"expression": "variables.keys <= int(params.data.max)", "messageExpression": "\"too many keys: \" + string(variables.keys)"}]
        }
    });
    let (code, _, b) = request(&client, "POST", VAP, Some(limited)).await;
    assert_eq!(code, 201, "{b}");
    let mut limit = configmap("limit", json!({"max": "1"}));
    limit["metadata"]["labels"] = json!({"role": "limit"});
    let (code, _, _) = request(&client, "POST", cms, Some(limit)).await;
    assert_eq!(code, 201);
    bind(&client, "limited-deny", "limited", json!(["Deny"]), json!({"paramRef": {"name": "limit", "parameterNotFoundAction": "Deny"}, "matchResources": {"namespaceSelector": {"matchLabels": {"hooks": "on"}}, "objectSelector": {"matchLabels": {"limited": "yes"}}}})).await;
    let mut two = configmap("two", json!({"a": "1", "b": "2"}));
    two["metadata"]["labels"] = json!({"limited": "yes"});
    let (code, _, status) = request(&client, "POST", cms, Some(two)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "configmaps \"two\" is forbidden: ValidatingAdmissionPolicy 'limited' with binding 'limited-deny' denied request: too many keys: 2"
    );
    let mut one = configmap("one", json!({"a": "1"}));
    one["metadata"]["labels"] = json!({"limited": "yes"});
    let (code, _, status) = request(&client, "POST", cms, Some(one)).await;
    assert_eq!(code, 201, "{status}");
}

/// A webhook on widgets (and their status) in namespaces labelled `hooks: on`.
fn widget_hook(name: &str, url: String, ca: &str, resources: Value, versions: Value) -> Value {
    webhook(
        name,
        url,
        ca,
        json!({"rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["ref.example.org"], "apiVersions": versions, "resources": resources}]}),
    )
}

#[tokio::test]
async fn status_match_conditions_reinvocation_and_equivalent_versions() {
    let hook = start_hook().await;
    let env = TestEnv::start().await.expect("env");
    common::install_widget_crd(&env).await;
    let client = env.client();
    namespace(&client, "ref-adm", true).await;
    let widgets = "/apis/ref.example.org/v1/namespaces/ref-adm/widgets";
    let ca = hook.ca_bundle.clone();

    // Status writes reach a webhook on widgets/status, with the subresource named.
    configure(
        &client,
        VWC,
        "status.test.example.com",
        vec![widget_hook(
            "status.test.example.com",
            hook.url("/allow"),
            &ca,
            json!(["widgets/status"]),
            json!(["v1"]),
        )],
    )
    .await;
    let w = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"replicas": 3}});
    let (code, _, created) = request(&client, "POST", widgets, Some(w)).await;
    assert_eq!(code, 201, "{created}");
    assert!(
        hook.reviews("/allow").is_empty(),
        "widgets/status does not match the main resource"
    );
    let mut with_status = created.clone();
    with_status["status"] = json!({"ready": 1});
    let (code, _, _) = request(
        &client,
        "PUT",
        &format!("{widgets}/w1/status"),
        Some(with_status),
    )
    .await;
    assert_eq!(code, 200);
    let want: Value = serde_json::from_str(include_str!(
        "fixtures/admission/received-18-allow-UPDATE-Widget-status.json"
    ))
    .expect("fixture");
    let want = &want["body"]["request"];
    let got = &hook.reviews("/allow")[0]["request"];
    assert_eq!(keys(got), keys(want));
    assert_eq!(got["subResource"], "status");
    assert_eq!(got["requestSubResource"], "status");
    assert_eq!(got["object"]["status"], json!({"ready": 1}));
    assert!(got["oldObject"].get("status").is_none());
    unconfigure(&client, VWC, "status.test.example.com").await;

    // matchPolicy Equivalent: a rule on v1beta1 sees a v1 request, converted to v1beta1.
    hook.clear();
    configure(
        &client,
        VWC,
        "beta.test.example.com",
        vec![widget_hook(
            "beta.test.example.com",
            hook.url("/allow"),
            &ca,
            json!(["widgets"]),
            json!(["v1beta1"]),
        )],
    )
    .await;
    let w = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "w2"}, "spec": {"replicas": 1}});
    let (code, _, _) = request(&client, "POST", widgets, Some(w)).await;
    assert_eq!(code, 201);
    let got = &hook.reviews("/allow")[0]["request"];
    assert_eq!(
        got["kind"],
        json!({"group": "ref.example.org", "version": "v1beta1", "kind": "Widget"})
    );
    assert_eq!(
        got["requestKind"],
        json!({"group": "ref.example.org", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(got["object"]["apiVersion"], "ref.example.org/v1beta1");
    unconfigure(&client, VWC, "beta.test.example.com").await;

    // matchConditions: the denying webhook is skipped where the condition is false.
    let mut conditional = widget_hook(
        "cond.test.example.com",
        hook.url("/deny"),
        &ca,
        json!(["widgets"]),
        json!(["v1"]),
    );
    conditional["matchConditions"] =
        json!([{"name": "not-skipped", "expression": "object.metadata.name != 'skipme'"}]);
    configure(&client, VWC, "cond.test.example.com", vec![conditional]).await;
    let skip = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "skipme"}, "spec": {"replicas": 1}});
    let (code, _, _) = request(&client, "POST", widgets, Some(skip)).await;
    assert_eq!(code, 201);
    let other = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "other"}, "spec": {"replicas": 1}});
    let (code, _, _) = request(&client, "POST", widgets, Some(other)).await;
    assert_eq!(code, 403);
    unconfigure(&client, VWC, "cond.test.example.com").await;

    // Reinvocation: an IfNeeded webhook runs again after a later webhook changed the object.
    hook.clear();
    let mut first = widget_hook(
        "first.test.example.com",
        hook.url("/allow"),
        &ca,
        json!(["widgets"]),
        json!(["v1"]),
    );
    first["reinvocationPolicy"] = json!("IfNeeded");
    let second = widget_hook(
        "second.test.example.com",
        hook.url("/patch"),
        &ca,
        json!(["widgets"]),
        json!(["v1"]),
    );
    configure(
        &client,
        MWC,
        "reinvoke.test.example.com",
        vec![first, second],
    )
    .await;
    let w = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "w3"}, "spec": {"replicas": 1}});
    let (code, _, created) = request(&client, "POST", widgets, Some(w)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["metadata"]["annotations"],
        json!({"patched": "yes"})
    );
    let firsts = hook.reviews("/allow");
    assert_eq!(firsts.len(), 2, "invoked again");
    assert_eq!(
        firsts[1]["request"]["object"]["metadata"]["annotations"],
        json!({"patched": "yes"})
    );
    assert_eq!(hook.reviews("/patch").len(), 1);
}

#[tokio::test]
async fn concurrent_patches_through_webhooks_all_apply() {
    let hook = start_hook().await;
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    namespace(&client, "ref-adm", true).await;
    let cms = "/api/v1/namespaces/ref-adm/configmaps";
    configure_hook(&client, VWC, "allow.test.example.com", &hook, "/allow").await;
    let (code, _, _) = request(&client, "POST", cms, Some(configmap("shared", json!({})))).await;
    assert_eq!(code, 201);
    let patches = (0..8).map(|i| {
        let client = client.clone();
        async move {
            let req = http::Request::builder()
                .method("PATCH")
                .uri(format!("{cms}/shared"))
                .header("content-type", "application/merge-patch+json")
                .body(
                    json!({"data": {format!("k{i}"): "v"}})
                        .to_string()
                        .into_bytes(),
                )
                .expect("request");
            let resp = client
                .send(req.map(kube::client::Body::from))
                .await
                .expect("send");
            resp.status().as_u16()
        }
    });
    let codes = futures::future::join_all(patches).await;
    assert!(codes.iter().all(|c| *c == 200), "{codes:?}");
    let (_, _, shared) = request(&client, "GET", &format!("{cms}/shared"), None).await;
    assert_eq!(
        shared["data"].as_object().map(|m| m.len()),
        Some(8),
        "{shared}"
    );
}

#[tokio::test]
async fn scale_writes_reach_webhooks_on_the_scale_subresource_with_scale_objects() {
    let hook = start_hook().await;
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    namespace(&client, "scaled", true).await;
    let deployments = "/apis/apps/v1/namespaces/scaled/deployments";
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let (code, _, created) = request(&client, "POST", deployments, Some(deployment)).await;
    assert_eq!(code, 201, "{created}");
    let on = |resources: Value| {
        json!({"rules": [{"operations": ["UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
            "resources": resources}]})
    };
    configure(
        &client,
        MWC,
        "cap.test.example.com",
        vec![webhook(
            "cap.test.example.com",
            hook.url("/scale-cap"),
            &hook.ca_bundle,
            on(json!(["deployments/scale"])),
        )],
    )
    .await;
    // A webhook on the main resource only is not called for /scale.
    configure(
        &client,
        VWC,
        "main.test.example.com",
        vec![webhook(
            "main.test.example.com",
            hook.url("/main-only"),
            &hook.ca_bundle,
            on(json!(["deployments"])),
        )],
    )
    .await;
    let scale = format!("{deployments}/web/scale");
    let (code, warnings, body) = common::request(
        &client,
        "PATCH",
        &scale,
        Some("application/merge-patch+json"),
        Some(json!({"spec": {"replicas": 9}})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["kind"], "Scale");
    assert_eq!(
        body["spec"]["replicas"], 5,
        "the webhook's patch applies to the Scale"
    );
    assert_eq!(warnings, ["299 - \"replicas capped at 5\""]);
    let (_, _, stored) = request(&client, "GET", &format!("{deployments}/web"), None).await;
    assert_eq!(stored["spec"]["replicas"], 5);
    let reviews = hook.reviews("/scale-cap");
    assert_eq!(reviews.len(), 1);
    let r = &reviews[0]["request"];
    assert_eq!(
        r["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(r["requestKind"], r["kind"]);
    assert_eq!(
        r["resource"],
        json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(r["subResource"], "scale");
    assert_eq!(r["operation"], "UPDATE");
    assert_eq!(r["name"], "web");
    assert_eq!(r["object"]["kind"], "Scale");
    assert_eq!(r["object"]["spec"]["replicas"], 9);
    assert_eq!(r["object"]["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(r["oldObject"]["spec"]["replicas"], 1);
    assert!(
        hook.reviews("/main-only").is_empty(),
        "{:?}",
        hook.reviews("/main-only")
    );

    // A denial on /scale changes nothing.
    configure(
        &client,
        VWC,
        "deny-scale.test.example.com",
        vec![webhook(
            "deny-scale.test.example.com",
            hook.url("/deny"),
            &hook.ca_bundle,
            on(json!(["deployments/scale"])),
        )],
    )
    .await;
    let (code, _, status) = common::request(
        &client,
        "PUT",
        &scale,
        None,
        Some(json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "namespace": "scaled"}, "spec": {"replicas": 2}})),
    )
    .await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "admission webhook \"deny-scale.test.example.com\" denied the request: denied by test hook"
    );
    let (_, _, stored) = request(&client, "GET", &format!("{deployments}/web"), None).await;
    assert_eq!(stored["spec"]["replicas"], 5);
}

#[tokio::test]
async fn a_ca_bundle_injector_patches_one_webhook_by_name() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let ca = base64::engine::general_purpose::STANDARD.encode("old bundle");
    let hooks = vec![
        webhook(
            "a.ref.example.com",
            "https://127.0.0.1:9/a".into(),
            &ca,
            json!({}),
        ),
        webhook(
            "b.ref.example.com",
            "https://127.0.0.1:9/b".into(),
            &ca,
            json!({}),
        ),
    ];
    configure(&client, VWC, "injected.ref.example.com", hooks).await;
    let path = format!("{VWC}/injected.ref.example.com");
    let fresh = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);

    // A strategic merge patch names the webhook it changes; the other stays as it was.
    let patch = json!({"webhooks": [{"name": "b.ref.example.com", "clientConfig": {"caBundle": fresh("patched")}}]});
    let (code, _, body) = common::request(
        &client,
        "PATCH",
        &path,
        Some("application/strategic-merge-patch+json"),
        Some(patch),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let names: Vec<&str> = body["webhooks"]
        .as_array()
        .expect("webhooks")
        .iter()
        .filter_map(|w| w["name"].as_str())
        .collect();
    assert_eq!(names, ["a.ref.example.com", "b.ref.example.com"]);
    assert_eq!(body["webhooks"][0]["clientConfig"]["caBundle"], json!(ca));
    assert_eq!(
        body["webhooks"][1]["clientConfig"]["caBundle"],
        json!(fresh("patched"))
    );
    assert_eq!(
        body["webhooks"][1]["clientConfig"]["url"],
        "https://127.0.0.1:9/b"
    );

    // A server-side apply of one webhook's bundle by another manager owns just that.
    let apply = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "injected.ref.example.com"},
        "webhooks": [{"name": "a.ref.example.com", "clientConfig": {"caBundle": fresh("applied")}}]
    });
    let (code, _, body) = common::request(
        &client,
        "PATCH",
        &format!("{path}?fieldManager=injector&force=true"),
        Some("application/apply-patch+yaml"),
        Some(apply),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["webhooks"].as_array().map(Vec::len), Some(2), "{body}");
    assert_eq!(
        body["webhooks"][0]["clientConfig"]["caBundle"],
        json!(fresh("applied"))
    );
    assert_eq!(
        body["webhooks"][0]["clientConfig"]["url"],
        "https://127.0.0.1:9/a"
    );
    assert_eq!(
        body["webhooks"][1]["clientConfig"]["caBundle"],
        json!(fresh("patched"))
    );
}

#[tokio::test]
async fn policies_use_the_kubernetes_cel_libraries() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    namespace(&client, "lib-adm", true).await;
    let cms = "/api/v1/namespaces/lib-adm/configmaps";
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "addresses"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "validations": [
                {"expression": "!has(object.data.ip) || (isIP(object.data.ip) && cidr('10.0.0.0/8').containsIP(object.data.ip))", "message": "ip must be in 10.0.0.0/8"},
                {"expression": "!has(object.data.size) || quantity(object.data.size).compareTo(quantity('1Gi')) <= 0", "message": "size at most 1Gi"}
            ]
        }
    });
    let (code, _, created) = request(&client, "POST", VAP, Some(policy)).await;
    assert_eq!(code, 201, "{created}");
    bind(
        &client,
        "addresses-deny",
        "addresses",
        json!(["Deny"]),
        json!({}),
    )
    .await;
    let (code, _, b) = request(
        &client,
        "POST",
        cms,
        Some(configmap("ok", json!({"ip": "10.1.2.3", "size": "512Mi"}))),
    )
    .await;
    assert_eq!(code, 201, "{b}");
    for (name, data, message) in [
        (
            "far",
            json!({"ip": "192.168.1.1"}),
            "ip must be in 10.0.0.0/8",
        ),
        ("big", json!({"size": "2Gi"}), "size at most 1Gi"),
    ] {
        let (code, _, status) = request(&client, "POST", cms, Some(configmap(name, data))).await;
        assert_eq!(code, 422, "{status}");
        assert_eq!(
            status["message"],
            format!(
                "configmaps \"{name}\" is forbidden: ValidatingAdmissionPolicy 'addresses' with binding 'addresses-deny' denied request: {message}"
            )
        );
    }
    // A value the library cannot parse fails the expression: the policy's failure policy
    // (Fail) refuses the request, naming the library's error.
    let (code, _, status) = request(
        &client,
        "POST",
        cms,
        Some(configmap("odd", json!({"size": "lots"}))),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("quantit")),
        "{status}"
    );
}
