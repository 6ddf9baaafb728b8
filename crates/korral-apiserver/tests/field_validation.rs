//! `fieldValidation=Strict|Warn|Ignore` on create, update and patch: unknown and duplicate
//! fields, `Warning` headers, and rejected requests that change nothing.

mod common;

use common::*;
use kube::Client;
use serde_json::{Value, json};

/// A request through the kube client answering status, `Warning` headers and JSON body.
async fn send(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> (u16, Vec<String>, Value) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(body.as_bytes().to_vec())
        .expect("request");
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("send");
    let status = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, warnings, value)
}

const WIDGETS: &str = "/apis/ref.example.org/v1/namespaces/default/widgets";

#[tokio::test]
async fn unknown_fields_follow_the_reference_captures() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let client = env.client();
    let body = r#"{"apiVersion":"ref.example.org/v1","kind":"Widget","metadata":{"name":"w5"},"spec":{"replicas":1,"bogus":true}}"#;
    // Strict: error-400-strict-unknown.json.
    let (status, warnings, doc) = send(
        &client,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Strict"),
        "application/json",
        body,
    )
    .await;
    assert_eq!(status, 400);
    assert!(warnings.is_empty());
    assert_eq!(doc["reason"], "BadRequest");
    assert_eq!(
        doc["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.bogus\""
    );
    let (status, _, _) = send(&client, "GET", &format!("{WIDGETS}/w5"), "", "").await;
    assert_eq!(status, 404, "a rejected create stores nothing");
    // Warn (the default): warn-unknown-field.json.
    let (status, warnings, doc) = send(&client, "POST", WIDGETS, "application/json", body).await;
    assert_eq!(status, 201);
    assert_eq!(warnings, ["299 - \"unknown field \\\"spec.bogus\\\"\""]);
    assert!(doc["spec"].get("bogus").is_none());
    // Ignore: dropped silently.
    let (status, warnings, _) = send(
        &client,
        "PUT",
        &format!("{WIDGETS}/w5?fieldValidation=Ignore"),
        "application/json",
        body,
    )
    .await;
    assert_eq!(status, 200);
    assert!(warnings.is_empty(), "{warnings:?}");
    // Strict on a merge patch.
    let (status, _, doc) = send(
        &client,
        "PATCH",
        &format!("{WIDGETS}/w5?fieldValidation=Strict"),
        "application/merge-patch+json",
        r#"{"spec":{"replicas":3,"other":1}}"#,
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        doc["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("unknown field \"spec.other\"")),
        "{doc}"
    );
    let (_, _, stored) = send(&client, "GET", &format!("{WIDGETS}/w5"), "", "").await;
    assert_eq!(
        stored["spec"]["replicas"], 1,
        "a rejected patch changes nothing"
    );
    // An unsupported value is a 400 naming the choices.
    let (status, _, doc) = send(
        &client,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Loose"),
        "application/json",
        body,
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        doc["message"]
            .as_str()
            .is_some_and(|m| m.contains("Ignore, Warn, Strict"))
    );
}

#[tokio::test]
async fn duplicate_fields_are_rejected_or_warned() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let client = env.client();
    let body = r#"{"apiVersion":"ref.example.org/v1","kind":"Widget","metadata":{"name":"d1"},"spec":{"replicas":1,"color":"red","replicas":2}}"#;
    let (status, _, doc) = send(
        &client,
        "POST",
        &format!("{WIDGETS}?fieldValidation=Strict"),
        "application/json",
        body,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        doc["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: duplicate field \"spec.replicas\""
    );
    let (status, _, _) = send(&client, "GET", &format!("{WIDGETS}/d1"), "", "").await;
    assert_eq!(status, 404);
    let (status, warnings, doc) = send(&client, "POST", WIDGETS, "application/json", body).await;
    assert_eq!(status, 201);
    assert_eq!(
        warnings,
        ["299 - \"duplicate field \\\"spec.replicas\\\"\""]
    );
    assert_eq!(
        doc["spec"]["replicas"], 2,
        "the last value wins, as upstream"
    );
    // Update and patch see duplicates too.
    let (status, _, _) = send(
        &client,
        "PATCH",
        &format!("{WIDGETS}/d1?fieldValidation=Strict"),
        "application/merge-patch+json",
        r#"{"spec":{"replicas":5,"replicas":6}}"#,
    )
    .await;
    assert_eq!(status, 400);
    let (status, warnings, _) = send(
        &client,
        "PATCH",
        &format!("{WIDGETS}/d1"),
        "application/merge-patch+json",
        r#"{"spec":{"replicas":5,"replicas":6}}"#,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        warnings,
        ["299 - \"duplicate field \\\"spec.replicas\\\"\""]
    );
    let (status, warnings, _) = send(
        &client,
        "PUT",
        &format!("{WIDGETS}/d1?fieldValidation=Ignore"),
        "application/json",
        body,
    )
    .await;
    assert_eq!(status, 200);
    assert!(warnings.is_empty());
    // Built-in kinds as well.
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","name":"c2"},"data":{"a":"1"}}"#;
    let (status, _, doc) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
        "application/json",
        cm,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        doc["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\""
    );
}

#[tokio::test]
async fn kube_rs_patch_with_strict_validation() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let api = widgets(&env, "default");
    api.create(&Default::default(), &widget("k1", json!({"replicas": 1})))
        .await
        .expect("create");
    let strict = kube::api::PatchParams {
        field_validation: Some(kube::api::ValidationDirective::Strict),
        ..Default::default()
    };
    let patch = kube::api::Patch::Merge(json!({"spec": {"replicas": 2, "extra": "x"}}));
    let err = api.patch("k1", &strict, &patch).await.expect_err("strict");
    assert_eq!(code(err), 400);
    assert_eq!(
        api.get("k1").await.expect("get").data["spec"]["replicas"],
        1
    );
    let ignore = kube::api::PatchParams {
        field_validation: Some(kube::api::ValidationDirective::Ignore),
        ..Default::default()
    };
    let patched = api.patch("k1", &ignore, &patch).await.expect("ignore");
    assert_eq!(patched.data["spec"]["replicas"], 2);
    assert!(patched.data["spec"].get("extra").is_none());
}

#[tokio::test]
async fn unknown_fields_of_builtin_kinds() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"},"data":{"a":"1"},"bogus":1}"#;
    let (status, _, doc) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
        "application/json",
        cm,
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        doc["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\""
    );
    let (status, _, _) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps/c1",
        "",
        "",
    )
    .await;
    assert_eq!(status, 404, "nothing stored");
    let deploy = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d1"},
        "spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},
        "spec":{"containers":[{"name":"c","image":"nginx","imagePullPolicyX":"Always"}]}}}}"#;
    let (status, warnings, doc) = send(
        &client,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        "application/json",
        deploy,
    )
    .await;
    assert_eq!(status, 201, "{doc}");
    assert_eq!(
        warnings,
        ["299 - \"unknown field \\\"spec.template.spec.containers[0].imagePullPolicyX\\\"\""]
    );
    assert!(
        doc["spec"]["template"]["spec"]["containers"][0]
            .get("imagePullPolicyX")
            .is_none()
    );
    assert_eq!(
        doc["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx"
    );
}

/// Regression: a built-in object with a value of the wrong JSON type (a ConfigMap `data` entry
/// that is an array) was stored; upstream's decoder refuses it with 400 naming the field.
#[tokio::test]
async fn wrong_json_types_in_builtin_kinds_are_refused() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let bad =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":{"a":["x"]}}"#;
    let (status, _, doc) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        bad,
    )
    .await;
    assert_eq!(status, 400, "{doc}");
    assert_eq!(doc["reason"], "BadRequest");
    assert_eq!(
        doc["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal array into field data.a of type string"
    );
    let (status, _, _) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps/typed",
        "",
        "",
    )
    .await;
    assert_eq!(status, 404, "nothing stored");

    let good =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"typed"},"data":{"a":"x"}}"#;
    let (status, _, created) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        good,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let (status, _, doc) = send(
        &client,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/none",
        "application/merge-patch+json",
        r#"{"spec":{"replicas":"three"}}"#,
    )
    .await;
    assert_eq!(status, 404, "{doc}");
    let (status, _, doc) = send(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/typed",
        "application/merge-patch+json",
        r#"{"data":{"a":{"nested":true}}}"#,
    )
    .await;
    assert_eq!(status, 400, "{doc}");
    let (_, _, after) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/configmaps/typed",
        "",
        "",
    )
    .await;
    assert_eq!(after["data"]["a"], "x");
    assert_eq!(
        after["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
}
