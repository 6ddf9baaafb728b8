//! Validation of PersistentVolumes, PersistentVolumeClaims, ResourceQuotas and the
//! `storage.k8s.io` kinds through the server, as kube-apiserver v1.36 answers: each refusal a 422
//! `Invalid` with upstream's message and causes, that changed nothing stored; update and
//! `/status` rules included.

mod common;

use common::*;
use serde_json::{Value, json};

/// Checks a refusal: 422 `Invalid`, the message, the causes (reason, message, field) in order.
fn assert_invalid(answer: &(u16, Value), message: &str, causes: &[(&str, &str, &str)]) {
    let (code, body) = answer;
    assert_eq!(*code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid", "{body}");
    assert_eq!(body["code"], 422, "{body}");
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

/// One request with a JSON body (or none).
async fn call(env: &TestEnv, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let ct = body.map(|_| "application/json");
    raw(&env.client(), method, path, ct, bytes).await
}

/// Creates and expects 201, returning the stored object.
async fn created(env: &TestEnv, path: &str, body: &Value) -> Value {
    let (code, obj) = call(env, "POST", path, Some(body)).await;
    assert_eq!(code, 201, "{obj}");
    obj
}

/// Reads the object at `path`, changes it with `change` and writes it back to `path` +
/// `suffix` (`""` or `"/status"`); a write that lost a race with a controller (409) is redone
/// on the newer object, a few times at most.
async fn put_latest(
    env: &TestEnv,
    path: &str,
    suffix: &str,
    change: impl Fn(&mut Value),
) -> (u16, Value) {
    for _ in 0..20 {
        let (code, mut obj) = call(env, "GET", path, None).await;
        assert_eq!(code, 200, "{obj}");
        change(&mut obj);
        let answer = call(env, "PUT", &format!("{path}{suffix}"), Some(&obj)).await;
        if answer.0 != 409 {
            return answer;
        }
    }
    panic!("{path}{suffix}: every write conflicted");
}

/// Checks that nothing named `name` exists under `path` (a refused create stored nothing).
async fn absent(env: &TestEnv, path: &str, name: &str) {
    let (code, body) = call(env, "GET", &format!("{path}/{name}"), None).await;
    assert_eq!(code, 404, "{body}");
}

const QUOTAS: &str = "/api/v1/namespaces/default/resourcequotas";

/// A quota named `name` with `spec`.
fn quota(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn quota_scopes_and_selectors_are_checked_and_fixed() {
    let env = TestEnv::start().await.expect("env");
    // A scope that does not apply to a hard resource.
    let answer = call(
        &env,
        "POST",
        QUOTAS,
        Some(&quota(
            "q1",
            json!({"hard": {"secrets": "1"}, "scopes": ["BestEffort"]}),
        )),
    )
    .await;
    let detail = "Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope applied to resource";
    assert_invalid(
        &answer,
        &format!("ResourceQuota \"q1\" is invalid: spec.scopes: {detail}"),
        &[("FieldValueInvalid", detail, "spec.scopes")],
    );
    absent(&env, QUOTAS, "q1").await;

    // A selector whose operator and values do not fit its scope.
    let answer = call(
        &env,
        "POST",
        QUOTAS,
        Some(&quota(
            "q2",
            json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
                {"scopeName": "PriorityClass", "operator": "NotIn"}]}}),
        )),
    )
    .await;
    let operator = "Invalid value: \"In\": must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity";
    let values = "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector";
    assert_invalid(
        &answer,
        &format!(
            "ResourceQuota \"q2\" is invalid: [spec.scopeSelector.matchExpressions.operator: {operator}, spec.scopeSelector.matchExpressions.values: {values}]"
        ),
        &[
            (
                "FieldValueInvalid",
                operator,
                "spec.scopeSelector.matchExpressions.operator",
            ),
            (
                "FieldValueRequired",
                values,
                "spec.scopeSelector.matchExpressions.values",
            ),
        ],
    );
    absent(&env, QUOTAS, "q2").await;

    // Scopes may not change once set; a status update checks only the status lists.
    created(
        &env,
        QUOTAS,
        &quota(
            "q3",
            json!({"hard": {"pods": "2"}, "scopes": ["NotBestEffort"]}),
        ),
    )
    .await;
    let q3 = format!("{QUOTAS}/q3");
    let answer = put_latest(&env, &q3, "", |q| {
        q["spec"]["scopes"] = json!(["BestEffort"])
    })
    .await;
    let immutable = "Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: field is immutable";
    assert_invalid(
        &answer,
        &format!("ResourceQuota \"q3\" is invalid: spec.scopes: {immutable}"),
        &[("FieldValueInvalid", immutable, "spec.scopes")],
    );
    let answer = put_latest(&env, &q3, "/status", |q| {
        q["status"] = json!({"hard": {"pods": "2"}, "used": {"pods": "-1"}});
    })
    .await;
    let negative = "Invalid value: \"-1\": must be greater than or equal to 0";
    assert_invalid(
        &answer,
        &format!("ResourceQuota \"q3\" is invalid: status.used[pods]: {negative}"),
        &[("FieldValueInvalid", negative, "status.used[pods]")],
    );
    let (code, now) = call(&env, "GET", &format!("{QUOTAS}/q3"), None).await;
    assert_eq!(code, 200, "{now}");
    assert_eq!(now["spec"]["scopes"], json!(["NotBestEffort"]), "{now}");
    assert_ne!(now["status"]["used"]["pods"], "-1", "{now}");
}
