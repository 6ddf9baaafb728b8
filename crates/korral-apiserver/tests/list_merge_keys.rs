//! The merge keys and list types of built-in lists as upstream declares them (v1.36 OpenAPI):
//! two field managers applying their own items of a keyed list or a set both keep them, a
//! strategic merge patch merges by the key, and where upstream declares a list for one of the
//! two only (`+listType=set` without `+patchStrategy=merge`, or the reverse), the other
//! replaces or owns it whole.

mod common;

use common::{TestEnv, call, create_ok, raw};
use serde_json::{Value, json};

const APPLY: &str = "application/apply-patch+yaml";
const SMP: &str = "application/strategic-merge-patch+json";
const ADMISSION: &str = "/apis/admissionregistration.k8s.io/v1";

/// PATCHes `body` as `content_type` to `path` (with `query`): the code and the answer.
async fn patch(
    env: &TestEnv,
    path: &str,
    query: &str,
    content_type: &str,
    body: &Value,
) -> (u16, Value) {
    let bytes = serde_json::to_vec(body).expect("body");
    raw(
        &env.client(),
        "PATCH",
        &format!("{path}?{query}"),
        Some(content_type),
        bytes,
    )
    .await
}

/// Applies `body` to `path` as `manager`, which must succeed: the object.
async fn apply_ok(env: &TestEnv, path: &str, manager: &str, body: &Value) -> Value {
    let (code, obj) = patch(env, path, &format!("fieldManager={manager}"), APPLY, body).await;
    assert!(
        code == 200 || code == 201,
        "apply by {manager}: {code} {obj}"
    );
    obj
}

/// The `name`s of the items of a list.
fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .map(|items| items.iter().filter_map(|i| i["name"].as_str()).collect())
        .unwrap_or_default()
}

/// A validating webhook that intercepts nothing these tests write.
fn webhook(conditions: Value) -> Value {
    json!({
        "name": "check.lists.example.com",
        "clientConfig": {"url": "https://127.0.0.1:1/check"},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["lists.example.com"],
            "apiVersions": ["v1"], "resources": ["things"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Ignore",
        "matchConditions": conditions,
    })
}

#[tokio::test]
async fn webhook_match_conditions_merge_by_name_for_appliers_and_patches() {
    let env = TestEnv::start().await.expect("env");
    let path = format!("{ADMISSION}/validatingwebhookconfigurations/lists");
    let config = |webhooks: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "lists"},
            "webhooks": webhooks})
    };
    let first = json!([{"name": "first", "expression": "true"}]);
    apply_ok(&env, &path, "owner", &config(json!([webhook(first)]))).await;
    // A second manager applies only its own condition of the same webhook: both stay, each
    // owned by its applier (an atomic list would conflict with the first manager's).
    let second = json!([{"name": "second", "expression": "request.name != ''"}]);
    let obj = apply_ok(
        &env,
        &path,
        "extra",
        &config(json!([{"name": "check.lists.example.com", "matchConditions": second}])),
    )
    .await;
    assert_eq!(
        names(&obj["webhooks"][0]["matchConditions"]),
        ["first", "second"]
    );
    let extra = obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["manager"] == "extra"))
        .cloned()
        .expect("extra's entry");
    let owned = &extra["fieldsV1"]["f:webhooks"]["k:{\"name\":\"check.lists.example.com\"}"]["f:matchConditions"];
    assert!(owned.get("k:{\"name\":\"second\"}").is_some(), "{extra}");
    // A strategic merge patch merges by name: a changed condition and a new one.
    let body = json!({"webhooks": [{"name": "check.lists.example.com", "matchConditions": [
        {"name": "first", "expression": "false"}, {"name": "third", "expression": "true"}]}]});
    let (code, obj) = patch(&env, &path, "", SMP, &body).await;
    assert_eq!(code, 200, "{obj}");
    let conditions = &obj["webhooks"][0]["matchConditions"];
    assert_eq!(
        names(conditions),
        ["first", "third", "second"],
        "{conditions}"
    );
    assert_eq!(conditions[0]["expression"], "false");
}

/// A ValidatingAdmissionPolicy on ConfigMaps with the given variables.
fn policy(variables: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "lists"},
    "spec": {
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
            "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
        "validations": [{"expression": "true"}],
        "variables": variables,
    }})
}

#[tokio::test]
async fn policy_variables_and_match_conditions_are_keyed_by_name() {
    let env = TestEnv::start().await.expect("env");
    let path = format!("{ADMISSION}/validatingadmissionpolicies/lists");
    let mine = json!([{"name": "size", "expression": "object.data.size()"}]);
    apply_ok(&env, &path, "author", &policy(mine)).await;
    let theirs = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "lists"},
        "spec": {"variables": [{"name": "ns", "expression": "object.metadata.namespace"}]}});
    let obj = apply_ok(&env, &path, "helper", &theirs).await;
    assert_eq!(names(&obj["spec"]["variables"]), ["size", "ns"], "{obj}");
    // The author applies its own again without change: the helper's variable stays.
    let obj = apply_ok(
        &env,
        &path,
        "author",
        &policy(json!([{"name": "size", "expression": "object.data.size()"}])),
    )
    .await;
    assert_eq!(names(&obj["spec"]["variables"]), ["size", "ns"]);
    // Match conditions merge by name under a strategic merge patch.
    let add =
        |name: &str| json!({"spec": {"matchConditions": [{"name": name, "expression": "true"}]}});
    let (code, _) = patch(&env, &path, "", SMP, &add("a")).await;
    assert_eq!(code, 200);
    let (code, obj) = patch(&env, &path, "", SMP, &add("b")).await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(names(&obj["spec"]["matchConditions"]), ["b", "a"]);
}

#[tokio::test]
async fn binding_validation_actions_are_a_set_for_applies_and_replaced_by_patches() {
    let env = TestEnv::start().await.expect("env");
    let path = format!("{ADMISSION}/validatingadmissionpolicybindings/lists");
    let binding = |spec: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "lists"},
            "spec": spec})
    };
    apply_ok(
        &env,
        &path,
        "author",
        &binding(json!({"policyName": "lists", "validationActions": ["Deny"]})),
    )
    .await;
    // Upstream's `+listType=set`: a second applier owns its own value next to the first's.
    let obj = apply_ok(
        &env,
        &path,
        "auditor",
        &binding(json!({"validationActions": ["Audit"]})),
    )
    .await;
    assert_eq!(obj["spec"]["validationActions"], json!(["Deny", "Audit"]));
    let auditor = obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["manager"] == "auditor"))
        .cloned()
        .expect("auditor's entry");
    assert_eq!(
        auditor["fieldsV1"],
        json!({"f:spec": {"f:validationActions": {"v:\"Audit\"": {}}}})
    );
    // No `+patchStrategy=merge`: a strategic merge patch replaces the list.
    let body = json!({"spec": {"validationActions": ["Warn"]}});
    let (code, obj) = patch(&env, &path, "", SMP, &body).await;
    assert_eq!(code, 200, "{obj}");
    assert_eq!(obj["spec"]["validationActions"], json!(["Warn"]));
}

#[tokio::test]
async fn job_conditions_merge_for_patches_but_are_owned_whole_by_an_apply() {
    let env = TestEnv::start().await.expect("env");
    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "lists"},
        "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
    create_ok(&env, jobs, &job).await;
    let status = format!("{jobs}/lists/status");
    let condition = |kind: &str| {
        json!({"type": kind, "status": "True", "reason": "Testing", "message": "lists",
            "lastProbeTime": "2026-01-01T00:00:00Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z"})
    };
    // `+patchStrategy=merge` by type: a patch adds to the conditions.
    for kind in ["First", "Second"] {
        let body = json!({"status": {"conditions": [condition(kind)]}});
        let (code, obj) = patch(&env, &status, "", SMP, &body).await;
        assert_eq!(code, 200, "{obj}");
    }
    let (_, obj) = call(&env, "GET", &format!("{jobs}/lists"), None).await;
    let types: Vec<&str> = obj["status"]["conditions"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(types, ["Second", "First"], "{obj}");
    // `+listType=atomic`: one applier owns the whole list, so another's apply of its own
    // condition conflicts with it.
    let applied = |kind: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "lists"},
            "status": {"conditions": [condition(kind)]}})
    };
    let query = |manager: &str| format!("fieldManager={manager}");
    // (The first applier forces: the patches own the list.)
    let forced = format!("{}&force=true", query("one"));
    let (code, obj) = patch(&env, &status, &forced, APPLY, &applied("First")).await;
    assert_eq!(code, 200, "{obj}");
    let (code, obj) = patch(&env, &status, &query("two"), APPLY, &applied("Third")).await;
    assert_eq!(code, 409, "{obj}");
    let message = obj["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(".status.conditions") && message.contains("\"one\""),
        "{message}"
    );
}
