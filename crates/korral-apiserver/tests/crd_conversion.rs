//! CRD conversion by webhook end to end: a Widget CRD with v1 (storage, `spec.size`) and v2
//! (`spec.replicas`) served through an https conversion webhook run by the test. Every read,
//! list, watch and write in the non-storage version goes through a ConversionReview, compared
//! with the reference captures of kube-apiserver v1.36; failures, unreachable and misbehaving
//! webhooks answer upstream's 500s and store nothing; `status.storedVersions` and deprecation
//! warnings follow upstream.

mod common;

use futures::StreamExt;
use serde_json::{Value, json};

use common::{HttpsHook, TestEnv, request};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const CRD: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.ref.example.com";
const V1: &str = "/apis/ref.example.com/v1/namespaces/conv/widgets";
const V2: &str = "/apis/ref.example.com/v2/namespaces/conv/widgets";

fn fixture(text: &str) -> Value {
    serde_json::from_str(text).expect("fixture")
}

/// `spec.size` (v1) <-> `spec.replicas` (v2); everything else is kept.
fn convert(object: &Value, desired: &str) -> Value {
    let mut out = object.clone();
    out["apiVersion"] = json!(desired);
    let spec = object.get("spec").cloned().unwrap_or(json!({}));
    out["spec"] = if desired.ends_with("/v2") {
        json!({"replicas": spec.get("size").cloned().unwrap_or(Value::Null)})
    } else {
        json!({"size": spec.get("replicas").cloned().unwrap_or(Value::Null)})
    };
    out
}

/// The test's conversion webhook: `/convert` converts, `/convert-fail` refuses (`/no-v2`
/// refuses only conversions to v2), `/rename`
/// changes the name, `/labels` adds a label, `/drop` answers no objects, `/garbage` no review.
async fn answer(path: String, review: Value) -> (u16, Value) {
    let request = &review["request"];
    if review["kind"] == "AdmissionReview" {
        // An admission webhook that allows everything (and records what it saw).
        let response = json!({"uid": request["uid"], "allowed": true});
        return (
            200,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
        );
    }
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let objects = request["objects"].as_array().cloned().unwrap_or_default();
    let mut converted: Vec<Value> = objects.iter().map(|o| convert(o, desired)).collect();
    let mut result = json!({"status": "Success"});
    match path.as_str() {
        "/convert-fail" => {
            result = json!({"status": "Failure", "message": "conversion refused by test"});
            converted.clear();
        }
        "/no-v2" if desired.ends_with("/v2") => {
            result = json!({"status": "Failure", "message": "conversion refused by test"});
            converted.clear();
        }
        "/rename" => {
            for o in &mut converted {
                o["metadata"]["name"] = json!("other");
            }
        }
        "/labels" => {
            for o in &mut converted {
                o["metadata"]["labels"] = json!({"converted": "yes"});
                o["metadata"]["generation"] = json!(99);
            }
        }
        "/drop" => converted.clear(),
        "/garbage" => return (200, json!({"hello": "world"})),
        _ => {}
    }
    (
        200,
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": {"uid": request["uid"], "convertedObjects": converted, "result": result},
        }),
    )
}

fn version(name: &str, storage: bool, property: &str) -> Value {
    json!({
        "name": name, "served": true, "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {property: {"type": "integer"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}},
        "subresources": {"status": {}}
    })
}

/// A Widget of `version` (`v1`: `spec.size`, `v2`: `spec.replicas`).
fn widget(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("ref.example.com/{version}"), "kind": "Widget",
        "metadata": {"name": name}, "spec": spec})
}

/// The two-version Widget CRD of the capture, converting through `url`.
fn widget_crd(url: &str, ca_bundle: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ref.example.com"},
        "spec": {
            "group": "ref.example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [version("v1", true, "size"), version("v2", false, "replicas")],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": url, "caBundle": ca_bundle},
                "conversionReviewVersions": ["v1"]
            }}
        }
    })
}

async fn setup() -> (TestEnv, kube::Client, HttpsHook) {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    common::create_namespace(&client, "conv").await;
    let hook = common::serve_https(answer).await;
    let (code, _, body) = request(
        &client,
        "POST",
        CRDS,
        None,
        Some(widget_crd(&hook.url("/convert"), &hook.ca_bundle)),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    env.wait_crd_established("widgets.ref.example.com", common::WAIT)
        .await
        .expect("established");
    (env, client, hook)
}

/// Points the CRD's conversion webhook at another path of the test webhook.
async fn point_webhook_at(client: &kube::Client, url: &str) {
    let patch = json!({"spec": {"conversion": {"webhook": {"clientConfig": {"url": url}}}}});
    let (code, _, body) = request(
        client,
        "PATCH",
        CRD,
        Some("application/merge-patch+json"),
        Some(patch),
    )
    .await;
    assert_eq!(code, 200, "{body}");
}

/// Metadata the server generates, blanked so objects compare with the captures.
fn scrub(mut v: Value) -> Value {
    if let Some(md) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["uid", "resourceVersion", "creationTimestamp"] {
            if md.contains_key(k) {
                md.insert(k.into(), json!("*"));
            }
        }
        if let Some(Value::Array(fields)) = md.get_mut("managedFields") {
            for f in fields {
                f["time"] = json!("*");
                f["manager"] = json!("*");
            }
        }
        md.insert("namespace".into(), json!("*"));
    }
    v
}

#[tokio::test]
async fn reads_and_writes_in_the_other_version_go_through_the_webhook() {
    let (_env, client, hook) = setup().await;

    // Create in v2: converted to the storage version v1 before it is stored, and back.
    let (code, _, created) = request(
        &client,
        "POST",
        V2,
        None,
        Some(widget("v2", "w1", json!({"replicas": 3}))),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let expected = fixture(include_str!(
        "fixtures/admission/create-widget-v2-through-webhook-and-conversion.json"
    ));
    assert_eq!(scrub(created.clone()), scrub(expected["body"].clone()));
    let reviews = hook.reviews("/convert");
    assert_eq!(reviews.len(), 2, "to storage and back: {reviews:?}");
    let captured = fixture(include_str!(
        "fixtures/admission/received-12-convert-convert-.json"
    ));
    let sent = &reviews[0];
    assert_eq!(sent["kind"], captured["body"]["kind"]);
    assert_eq!(sent["apiVersion"], captured["body"]["apiVersion"]);
    assert_eq!(sent["response"], captured["body"]["response"]);
    assert_eq!(sent["query"], "timeout=30s");
    assert_eq!(sent["request"]["desiredAPIVersion"], "ref.example.com/v1");
    assert_eq!(
        scrub(sent["request"]["objects"][0].clone()),
        scrub(captured["body"]["request"]["objects"][0].clone()),
        "the object is sent before it is stored (no resourceVersion yet)"
    );
    assert_eq!(
        reviews[1]["request"]["desiredAPIVersion"],
        "ref.example.com/v2"
    );

    // Stored in v1: reading v1 needs no webhook; reading v2 converts.
    hook.clear();
    let (code, _, v1) = request(&client, "GET", &format!("{V1}/w1"), None, None).await;
    assert_eq!(code, 200);
    assert_eq!(v1["apiVersion"], "ref.example.com/v1");
    assert_eq!(v1["spec"], json!({"size": 3}));
    assert!(
        hook.reviews("/convert").is_empty(),
        "no conversion for the stored version"
    );
    let (code, _, v2) = request(&client, "GET", &format!("{V2}/w1"), None, None).await;
    assert_eq!(code, 200);
    assert_eq!(v2["apiVersion"], "ref.example.com/v2");
    assert_eq!(v2["spec"], json!({"replicas": 3}));
    assert_eq!(v2["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(hook.reviews("/convert").len(), 1);

    // A list converts its items in one review.
    let (code, _, _) = request(
        &client,
        "POST",
        V1,
        None,
        Some(widget("v1", "w2", json!({"size": 7}))),
    )
    .await;
    assert_eq!(code, 201);
    hook.clear();
    let (code, _, list) = request(&client, "GET", V2, None, None).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["apiVersion"], "ref.example.com/v2");
    let replicas: Vec<&Value> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| &i["spec"]["replicas"])
        .collect();
    assert_eq!(replicas, [&json!(3), &json!(7)]);
    let reviews = hook.reviews("/convert");
    assert_eq!(reviews.len(), 1, "one review for the page");
    assert_eq!(
        reviews[0]["request"]["objects"].as_array().map(Vec::len),
        Some(2)
    );

    // A table of v2 shows converted objects too.
    let (code, _, table) = request(&client, "GET", &format!("{V2}?limit=1"), None, None).await;
    assert_eq!(code, 200);
    assert_eq!(table["items"][0]["spec"]["replicas"], 3);

    // Patch and update in v2: the current object is converted, the result converted back.
    let (code, _, patched) = request(
        &client,
        "PATCH",
        &format!("{V2}/w1"),
        Some("application/merge-patch+json"),
        Some(json!({"spec": {"replicas": 5}})),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"], json!({"replicas": 5}));
    assert_eq!(patched["metadata"]["generation"], 2);
    let (_, _, stored) = request(&client, "GET", &format!("{V1}/w1"), None, None).await;
    assert_eq!(stored["spec"], json!({"size": 5}));
    let mut put = patched.clone();
    put["spec"]["replicas"] = json!(6);
    let (code, _, updated) = request(&client, "PUT", &format!("{V2}/w1"), None, Some(put)).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["replicas"], 6);
    // A stale resourceVersion is still a conflict.
    let (code, _, _) = request(
        &client,
        "PUT",
        &format!("{V2}/w1"),
        None,
        Some(patched.clone()),
    )
    .await;
    assert_eq!(code, 409);
    // Server-side apply in v2.
    let (code, _, applied) = request(
        &client,
        "PATCH",
        &format!("{V2}/w1?fieldManager=tester&force=true"),
        Some("application/apply-patch+yaml"),
        Some(widget("v2", "w1", json!({"replicas": 8}))),
    )
    .await;
    assert_eq!(code, 200, "{applied}");
    assert_eq!(applied["spec"]["replicas"], 8);
    let (_, _, stored) = request(&client, "GET", &format!("{V1}/w1"), None, None).await;
    assert_eq!(stored["spec"], json!({"size": 8}));

    // Status written in v1 is seen in v2.
    let mut status = stored.clone();
    status["status"] = json!({"ready": true});
    let (code, _, _) = request(
        &client,
        "PUT",
        &format!("{V1}/w1/status"),
        None,
        Some(status),
    )
    .await;
    assert_eq!(code, 200);
    let (_, _, v2) = request(&client, "GET", &format!("{V2}/w1"), None, None).await;
    assert_eq!(v2["status"], json!({"ready": true}));
    assert_eq!(v2["spec"], json!({"replicas": 8}));

    // Dry run converts and stores nothing.
    let (code, _, dry) = request(
        &client,
        "POST",
        &format!("{V2}?dryRun=All"),
        None,
        Some(widget("v2", "dry", json!({"replicas": 1}))),
    )
    .await;
    assert_eq!(code, 201, "{dry}");
    assert_eq!(dry["spec"], json!({"replicas": 1}));
    let (code, _, _) = request(&client, "GET", &format!("{V1}/dry"), None, None).await;
    assert_eq!(code, 404);

    // Delete in v2 answers the converted object.
    let (code, _, deleted) = request(&client, "DELETE", &format!("{V2}/w2"), None, None).await;
    assert_eq!(code, 200, "{deleted}");
    assert_eq!(deleted["spec"], json!({"replicas": 7}));
}

#[tokio::test]
async fn watches_of_the_other_version_see_converted_objects() {
    let (env, client, _hook) = setup().await;
    let (code, _, _) = request(
        &client,
        "POST",
        V1,
        None,
        Some(widget("v1", "before", json!({"size": 2}))),
    )
    .await;
    assert_eq!(code, 201);
    let gvk = kube::core::GroupVersionKind::gvk("ref.example.com", "v2", "Widget");
    let resource = kube::core::ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let api: kube::Api<kube::core::DynamicObject> =
        kube::Api::namespaced_with(env.client(), "conv", &resource);
    let params = kube::api::WatchParams::default().timeout(30);
    let mut stream = api.watch(&params, "0").await.expect("watch").boxed();
    let mut seen = Vec::new();
    let created = async {
        request(
            &client,
            "POST",
            V1,
            None,
            Some(widget("v1", "after", json!({"size": 4}))),
        )
        .await
    };
    let (code, _, _) = created.await;
    assert_eq!(code, 201);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while seen.len() < 2 {
        let event = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("events in time")
            .expect("stream open")
            .expect("event");
        if let kube::api::WatchEvent::Added(obj) = event {
            let value = serde_json::to_value(&obj).expect("json");
            seen.push((
                value["metadata"]["name"].as_str().unwrap_or("").to_string(),
                value["apiVersion"].clone(),
                value["spec"].clone(),
            ));
        }
    }
    assert_eq!(
        seen,
        [
            (
                "before".to_string(),
                json!("ref.example.com/v2"),
                json!({"replicas": 2})
            ),
            (
                "after".to_string(),
                json!("ref.example.com/v2"),
                json!({"replicas": 4})
            ),
        ]
    );
}

#[tokio::test]
async fn failing_webhooks_answer_upstreams_errors_and_store_nothing() {
    let (_env, client, hook) = setup().await;
    let (code, _, _) = request(
        &client,
        "POST",
        V1,
        None,
        Some(widget("v1", "w1", json!({"size": 3}))),
    )
    .await;
    assert_eq!(code, 201);

    // The webhook refuses.
    point_webhook_at(&client, &hook.url("/convert-fail")).await;
    let (code, _, status) = request(&client, "GET", &format!("{V2}/w1"), None, None).await;
    let expected = fixture(include_str!(
        "fixtures/admission/conversion-failure-result.json"
    ));
    assert_eq!(code, 500);
    assert_eq!(status, expected["body"], "as upstream, without a reason");
    let (code, _, status) = request(
        &client,
        "POST",
        V2,
        None,
        Some(widget("v2", "w2", json!({"replicas": 1}))),
    )
    .await;
    assert_eq!(code, 500);
    assert_eq!(
        status["message"],
        "conversion webhook for ref.example.com/v2, Kind=Widget failed: conversion refused by test"
    );
    let (code, _, _) = request(&client, "GET", &format!("{V1}/w2"), None, None).await;
    assert_eq!(code, 404, "a create whose conversion failed stores nothing");
    let (code, _, status) = request(
        &client,
        "PATCH",
        &format!("{V2}/w1"),
        Some("application/merge-patch+json"),
        Some(json!({"spec": {"replicas": 9}})),
    )
    .await;
    assert_eq!(code, 500, "{status}");
    let (code, _, stored) = request(&client, "GET", &format!("{V1}/w1"), None, None).await;
    assert_eq!(code, 200, "the stored version is still readable");
    assert_eq!(stored["spec"], json!({"size": 3}), "nothing changed");
    let (code, _, status) = request(&client, "GET", V2, None, None).await;
    assert_eq!(code, 500);
    assert_eq!(
        status["message"],
        "conversion webhook for ref.example.com/v1, Kind=Widget failed: conversion refused by test"
    );

    // Unreachable.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr")
    };
    point_webhook_at(&client, &format!("https://{closed}/convert")).await;
    let (code, _, status) = request(&client, "GET", &format!("{V2}/w1"), None, None).await;
    let expected = fixture(include_str!(
        "fixtures/admission/conversion-unreachable.json"
    ));
    assert_eq!(code, 500);
    assert_eq!(status["code"], expected["body"]["code"]);
    assert_eq!(
        status["message"],
        format!(
            "conversion webhook for ref.example.com/v1, Kind=Widget failed: Post \"https://{closed}/convert?timeout=30s\": dial tcp {closed}: connect: connection refused"
        )
    );

    // A webhook that changes what it may not, or answers nonsense.
    let prefix = "conversion webhook for ref.example.com/v1, Kind=Widget";
    for (path, message) in [
        (
            "/rename",
            format!("{prefix} returned invalid object: must have the same name: w1 != other"),
        ),
        ("/drop", format!("{prefix} returned 0 objects, expected 1")),
        (
            "/garbage",
            format!(
                "{prefix} failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got , Kind="
            ),
        ),
    ] {
        point_webhook_at(&client, &hook.url(path)).await;
        let (code, _, status) = request(&client, "GET", &format!("{V2}/w1"), None, None).await;
        assert_eq!(code, 500, "{path}: {status}");
        assert_eq!(status["message"], message, "{path}");
    }

    // Labels and annotations may change; other metadata is restored.
    point_webhook_at(&client, &hook.url("/labels")).await;
    let (code, _, v2) = request(&client, "GET", &format!("{V2}/w1"), None, None).await;
    assert_eq!(code, 200, "{v2}");
    assert_eq!(v2["metadata"]["labels"], json!({"converted": "yes"}));
    assert_eq!(v2["metadata"]["generation"], 1);
}

#[tokio::test]
async fn stored_versions_and_deprecated_versions_follow_upstream() {
    let (_env, client, hook) = setup().await;
    let (code, _, _) = request(
        &client,
        "POST",
        V1,
        None,
        Some(widget("v1", "old", json!({"size": 2}))),
    )
    .await;
    assert_eq!(code, 201);
    let (_, _, crd) = request(&client, "GET", CRD, None, None).await;
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));

    // v2 becomes the storage version; v1 is deprecated.
    let mut v1 = version("v1", false, "size");
    v1["deprecated"] = json!(true);
    let patch = json!({"spec": {"versions": [v1, version("v2", true, "replicas")]}});
    let (code, _, crd) = request(
        &client,
        "PATCH",
        CRD,
        Some("application/merge-patch+json"),
        Some(patch),
    )
    .await;
    assert_eq!(code, 200, "{crd}");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1", "v2"]));

    // New writes in v2 are stored as v2 (no conversion); the old object is still converted.
    hook.clear();
    let (code, _, _) = request(
        &client,
        "POST",
        V2,
        None,
        Some(widget("v2", "new", json!({"replicas": 4}))),
    )
    .await;
    assert_eq!(code, 201);
    assert!(
        hook.reviews("/convert").is_empty(),
        "v2 is stored as written"
    );
    let (code, _, old) = request(&client, "GET", &format!("{V2}/old"), None, None).await;
    assert_eq!(code, 200);
    assert_eq!(old["spec"], json!({"replicas": 2}));
    assert_eq!(hook.reviews("/convert").len(), 1);

    // Reading the deprecated version warns, with upstream's default text.
    let (code, warnings, _) = request(&client, "GET", &format!("{V1}/new"), None, None).await;
    assert_eq!(code, 200);
    assert_eq!(
        warnings,
        ["299 - \"ref.example.com/v1 Widget is deprecated; use ref.example.com/v2 Widget\""]
    );

    // A version no longer served answers 404 and leaves discovery; its objects stay readable
    // through the served one.
    let mut unserved = version("v1", false, "size");
    unserved["served"] = json!(false);
    let patch = json!({"spec": {"versions": [unserved, version("v2", true, "replicas")]}});
    let (code, _, crd) = request(
        &client,
        "PATCH",
        CRD,
        Some("application/merge-patch+json"),
        Some(patch),
    )
    .await;
    assert_eq!(code, 200, "{crd}");
    let (code, _, _) = request(&client, "GET", &format!("{V1}/new"), None, None).await;
    assert_eq!(code, 404, "v1 is not served");
    let (code, _, group) = request(&client, "GET", "/apis/ref.example.com", None, None).await;
    assert_eq!(code, 200);
    assert_eq!(
        group["versions"].as_array().map(Vec::len),
        Some(1),
        "{group}"
    );
    assert_eq!(group["versions"][0]["version"], "v2");
    let (code, _, old) = request(&client, "GET", &format!("{V2}/old"), None, None).await;
    assert_eq!(code, 200);
    assert_eq!(old["spec"], json!({"replicas": 2}));

    // v1 cannot leave spec.versions while objects may still be stored in it...
    let patch = json!({"spec": {"versions": [version("v2", true, "replicas")]}});
    let (code, _, status) = request(
        &client,
        "PATCH",
        CRD,
        Some("application/merge-patch+json"),
        Some(patch.clone()),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"widgets.ref.example.com\" is invalid: status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
    );
    // ...until a migration removed it from status.storedVersions. As upstream's status
    // strategy, a /status write checks only the accepted names, not the stored versions.
    let (code, _, crd) = request(
        &client,
        "PATCH",
        &format!("{CRD}/status"),
        Some("application/merge-patch+json"),
        Some(json!({"status": {"storedVersions": ["v2"]}})),
    )
    .await;
    assert_eq!(code, 200, "{crd}");
    assert_eq!(crd["status"]["storedVersions"], json!(["v2"]));
    let (code, _, crd) = request(
        &client,
        "PATCH",
        CRD,
        Some("application/merge-patch+json"),
        Some(patch),
    )
    .await;
    assert_eq!(code, 200, "{crd}");
    let (code, _, _) = request(&client, "GET", &format!("{V1}/new"), None, None).await;
    assert_eq!(code, 404, "v1 is no longer served");
}

#[tokio::test]
async fn conversion_settings_are_validated_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let mut crd = widget_crd("https://127.0.0.1:1/convert", "");
    crd["spec"]["conversion"] = json!({"strategy": "Webhook"});
    let (code, _, status) = request(&client, "POST", CRDS, None, Some(crd.clone())).await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.contains(
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"
        ),
        "{message}"
    );
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "http://127.0.0.1:1/convert"}, "conversionReviewVersions": ["v1"]}});
    let (code, _, status) = request(&client, "POST", CRDS, None, Some(crd.clone())).await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme")),
        "{status}"
    );
    crd["spec"]["conversion"] = json!({"strategy": "Sometimes"});
    let (code, _, status) = request(&client, "POST", CRDS, None, Some(crd)).await;
    assert_eq!(code, 422, "{status}");
    assert!(
        status["message"].as_str().is_some_and(|m| m.contains(
            "spec.conversion.strategy: Unsupported value: \"Sometimes\": supported values: \"None\", \"Webhook\""
        )),
        "{status}"
    );
}

#[tokio::test]
async fn admission_webhooks_matching_another_version_see_it_converted() {
    let (_env, client, hook) = setup().await;
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "widgets-v1"},
        "webhooks": [{
            "name": "v1.widgets.ref.example.com",
            "clientConfig": {"url": hook.url("/admit"), "caBundle": hook.ca_bundle},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["ref.example.com"],
                "apiVersions": ["v1"], "resources": ["widgets"]}],
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"]
        }]
    });
    let (code, _, body) = request(
        &client,
        "POST",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        None,
        Some(config),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, _, body) = request(
        &client,
        "POST",
        V2,
        None,
        Some(widget("v2", "w1", json!({"replicas": 3}))),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let reviews = hook.reviews("/admit");
    assert_eq!(reviews.len(), 1);
    let r = &reviews[0]["request"];
    assert_eq!(r["kind"]["version"], "v1");
    assert_eq!(r["requestKind"]["version"], "v2");
    assert_eq!(r["object"]["apiVersion"], "ref.example.com/v1");
    assert_eq!(
        r["object"]["spec"],
        json!({"size": 3}),
        "converted by the webhook"
    );
}

#[tokio::test]
async fn policies_matching_a_version_that_fails_to_convert_deny() {
    let (_env, client, hook) = setup().await;
    point_webhook_at(&client, &hook.url("/no-v2")).await;
    let create = |path: &'static str, body: Value| {
        let client = client.clone();
        async move { request(&client, "POST", path, None, Some(body)).await }
    };
    // A policy on v2 only: a v1 write is converted to v2 for it, and the conversion fails.
    let vaps = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let bindings = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
    let policy = |name: &str, params: bool| {
        let mut spec = json!({
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
                "apiGroups": ["ref.example.com"], "apiVersions": ["v2"], "resources": ["widgets"]}]},
            "validations": [{"expression": "true"}]});
        if params {
            spec["paramKind"] = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        }
        json!({"metadata": {"name": name}, "spec": spec})
    };
    // With params to find and none found (`Allow`), the policy is not evaluated: nothing is
    // converted for it.
    let (code, _, body) = create(vaps, policy("unparameterized", true)).await;
    assert_eq!(code, 201, "{body}");
    let binding = json!({"metadata": {"name": "unparameterized"}, "spec": {
        "policyName": "unparameterized", "validationActions": ["Deny"],
        "paramRef": {"name": "absent", "parameterNotFoundAction": "Allow"}}});
    let (code, _, body) = create(bindings, binding).await;
    assert_eq!(code, 201, "{body}");
    let (code, _, body) = create(V1, widget("v1", "w0", json!({"size": 1}))).await;
    assert_eq!(code, 201, "{body}");
    let (code, _, body) = create(vaps, policy("v2-only", false)).await;
    assert_eq!(code, 201, "{body}");
    let binding = json!({"metadata": {"name": "v2-only"},
        "spec": {"policyName": "v2-only", "validationActions": ["Deny"]}});
    let (code, _, body) = create(bindings, binding).await;
    assert_eq!(code, 201, "{body}");
    let (code, _, status) = create(V1, widget("v1", "w1", json!({"size": 3}))).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "widgets.ref.example.com \"w1\" is forbidden: ValidatingAdmissionPolicy 'v2-only' with binding 'v2-only' denied request: failed to configure binding: failed to convert object version: conversion webhook for ref.example.com/v1, Kind=Widget failed: conversion refused by test"
    );
    let (code, _, _) = request(&client, "GET", &format!("{V1}/w1"), None, None).await;
    assert_eq!(code, 404, "the denied write stored nothing");
}
