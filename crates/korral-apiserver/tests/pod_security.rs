//! The PodSecurity admission plugin: namespaces labelled `pod-security.kubernetes.io/enforce`
//! refuse violating Pods with upstream's 403
//! (`k8s-reference/builtin/invalid-podsecurity-restricted.json`); `warn` and workloads answer
//! `Warning` headers.

mod common;

use common::*;
use serde_json::{Value, json};

/// A request's code, `Warning` headers and JSON body.
async fn send(env: &TestEnv, method: &str, path: &str, body: &Value) -> (u16, Vec<String>, Value) {
    request(
        &env.client(),
        method,
        path,
        Some("application/json"),
        Some(body.clone()),
    )
    .await
}

async fn namespace(env: &TestEnv, name: &str, labels: Value) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": labels}});
    let (code, _, body) = send(env, "POST", "/api/v1/namespaces", &ns).await;
    assert_eq!(code, 201, "{body}");
}

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn plain_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "busybox"}]})
}

fn hardened_spec() -> Value {
    json!({
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "busybox", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}],
    })
}

#[tokio::test]
async fn enforce_refuses_violating_pods_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    namespace(
        &env,
        "ref2",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    )
    .await;
    let pods = "/api/v1/namespaces/ref2/pods";
    let (code, _, body) = send(&env, "POST", pods, &pod("psa", plain_spec())).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "pods \"psa\" is forbidden: violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
    assert_eq!(body["details"], json!({"name": "psa", "kind": "pods"}));
    let (code, _, _) = send(&env, "GET", &format!("{pods}/psa"), &Value::Null).await;
    assert_eq!(code, 404, "a refused pod is not stored");

    let (code, warnings, body) = send(&env, "POST", pods, &pod("ok", hardened_spec())).await;
    assert_eq!(code, 201, "{body}");
    assert!(warnings.is_empty(), "{warnings:?}");

    // Workloads are not refused: their templates answer a warning.
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}}, "spec": plain_spec()}},
    });
    let (code, warnings, body) = send(
        &env,
        "POST",
        "/apis/apps/v1/namespaces/ref2/deployments",
        &deployment,
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("would violate PodSecurity \\\"restricted:latest\\\"")
            || warnings[0].contains("would violate PodSecurity \"restricted:latest\""),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn warn_answers_warnings_and_unchanged_specs_are_not_evaluated() {
    let env = TestEnv::start().await.expect("env");
    namespace(
        &env,
        "loose",
        json!({"pod-security.kubernetes.io/warn": "baseline"}),
    )
    .await;
    let pods = "/api/v1/namespaces/loose/pods";
    let privileged = json!({"containers": [{"name": "c", "image": "busybox",
        "securityContext": {"privileged": true}}]});
    let (code, warnings, created) = send(&env, "POST", pods, &pod("priv", privileged)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("privileged (container"),
        "{warnings:?}"
    );

    // A metadata-only update of the violating pod is not evaluated again.
    let mut labelled = created.clone();
    labelled["metadata"]["labels"] = json!({"x": "y"});
    let (code, warnings, body) = send(&env, "PUT", &format!("{pods}/priv"), &labelled).await;
    assert_eq!(code, 200, "{body}");
    assert!(warnings.is_empty(), "{warnings:?}");

    // Namespaces without labels check nothing.
    let (code, warnings, _) = send(
        &env,
        "POST",
        "/api/v1/namespaces/default/pods",
        &pod(
            "free",
            json!({"hostNetwork": true, "containers": [{"name": "c", "image": "i"}]}),
        ),
    )
    .await;
    assert_eq!(code, 201);
    assert!(warnings.is_empty(), "{warnings:?}");
}
