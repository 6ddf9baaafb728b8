//! `admissionregistration.k8s.io/v1` MutatingAdmissionPolicies and their bindings, as
//! kube-apiserver v1.36 serves them: discovery, defaults, upstream's validation messages and
//! the `kubectl get` tables. (Their mutations are not applied.)

mod common;

use common::*;
use serde_json::{Value, json};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings";

async fn send(env: &TestEnv, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let content_type = body.map(|_| "application/json");
    raw(&env.client(), method, path, content_type, bytes).await
}

/// The column names and the first row's cells (Age aside) of a table.
fn headers_and_row(table: &Value) -> (Vec<String>, Vec<Value>) {
    let headers = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect();
    let mut cells = table["rows"][0]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    cells.pop();
    (headers, cells)
}

/// `field: message` of every cause of a 422.
fn causes(body: &Value) -> Vec<String> {
    body["details"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| {
                    format!(
                        "{}: {}",
                        c["field"].as_str().unwrap_or(""),
                        c["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn policy(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
           "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn discovery_matches_upstream() {
    let env = TestEnv::start().await.expect("env");
    let (code, list) = send(&env, "GET", "/apis/admissionregistration.k8s.io/v1", None).await;
    assert_eq!(code, 200);
    let reference: Value = serde_json::from_str(include_str!(
        "fixtures/admissionregistration/discovery-admissionregistration-k8s-io-v1.json"
    ))
    .expect("reference");
    // Every resource of the group, in the `api-extensions` category as upstream's.
    for name in [
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
        "mutatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "validatingwebhookconfigurations",
    ] {
        let find = |doc: &Value| {
            doc["resources"]
                .as_array()
                .and_then(|r| r.iter().find(|r| r["name"] == name).cloned())
                .unwrap_or(Value::Null)
        };
        let ours = find(&list);
        let theirs = find(&reference["body"]);
        for key in [
            "singularName",
            "namespaced",
            "kind",
            "verbs",
            "shortNames",
            "categories",
            "storageVersionHash",
        ] {
            assert_eq!(ours[key], theirs[key], "{name} {key}");
        }
    }
    assert!(
        !list["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .any(|r| r["name"] == "mutatingadmissionpolicies/status"),
        "no status subresource upstream"
    );
    let (code, doc) = send(
        &env,
        "GET",
        "/openapi/v3/apis/admissionregistration.k8s.io/v1",
        None,
    )
    .await;
    assert_eq!(code, 200);
    for model in ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"] {
        let schema =
            &doc["components"]["schemas"][format!("io.k8s.api.admissionregistration.v1.{model}")];
        assert!(
            schema["properties"]["spec"].is_object(),
            "{model}: {schema}"
        );
    }
    env.shutdown().await;
}

#[tokio::test]
async fn policies_are_defaulted_validated_and_printed() {
    let env = TestEnv::start().await.expect("env");
    let spec = json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
            "apiVersions": ["v1"], "resources": ["deployments"]}]},
        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
            "expression": "Object{metadata: Object.metadata{labels: {\"team\": params.data.team}}}"}}],
        "reinvocationPolicy": "IfNeeded",
    });
    let (code, created) = send(&env, "POST", POLICIES, Some(&policy("add-team", spec))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["failurePolicy"], "Fail");
    assert_eq!(created["metadata"]["generation"], 1);
    let constraints = &created["spec"]["matchConstraints"];
    assert_eq!(constraints["matchPolicy"], "Equivalent");
    assert_eq!(constraints["namespaceSelector"], json!({}));
    assert_eq!(constraints["objectSelector"], json!({}));
    assert_eq!(constraints["resourceRules"][0]["scope"], "*");

    let (headers, row) = headers_and_row(&table(&env, POLICIES).await);
    assert_eq!(headers, ["Name", "Mutations", "ParamKind", "Age"]);
    assert_eq!(row, [json!("add-team"), json!(1), json!("v1/ConfigMap")]);

    let bad = json!({
        "matchConstraints": {"resourceRules": [{"operations": ["DELETE"], "apiGroups": [""],
            "apiVersions": ["v1"], "resources": ["pods"]}]},
        "mutations": [{"patchType": "JSONPatch",
                       "applyConfiguration": {"expression": "Object{}"}},
                      {"patchType": "Strategic"}],
        "reinvocationPolicy": "Always",
    });
    let (code, body) = send(&env, "POST", POLICIES, Some(&policy("bad", bad))).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let got = causes(&body);
    for want in [
        "spec.matchConstraints.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
        "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch",
        "spec.mutations[0].applyConfiguration: Invalid value: \"{applyConfiguration}\": must not be specified when patchType is JSONPatch",
        "spec.mutations[1].patchType: Unsupported value: \"Strategic\": supported values: \"ApplyConfiguration\", \"JSONPatch\"",
        "spec.reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\"",
    ] {
        assert!(got.iter().any(|g| g == want), "missing {want}\n in {got:?}");
    }
    let (code, body) = send(
        &env,
        "POST",
        POLICIES,
        Some(&policy(
            "empty",
            json!({"matchConstraints": {"resourceRules": [{
            "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["pods"]}]}}),
        )),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        causes(&body),
        [
            "spec.mutations: Required value: mutations must contain at least one item",
            "spec.reinvocationPolicy: Required value",
        ]
    );
    let (code, _) = send(&env, "GET", &format!("{POLICIES}/empty"), None).await;
    assert_eq!(code, 404, "nothing stored");

    // An update is validated too, and bumps the generation.
    let mut changed = created.clone();
    changed["spec"]["reinvocationPolicy"] = json!("Never");
    let (code, body) = send(&env, "PUT", &format!("{POLICIES}/add-team"), Some(&changed)).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["generation"], 2);
    changed = body;
    changed["spec"]["mutations"] = json!([]);
    let (code, body) = send(&env, "PUT", &format!("{POLICIES}/add-team"), Some(&changed)).await;
    assert_eq!(code, 422, "{body}");
    env.shutdown().await;
}

#[tokio::test]
async fn bindings_are_validated_and_printed() {
    let env = TestEnv::start().await.expect("env");
    let binding = |name: &str, spec: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": spec})
    };
    let (code, created) = send(
        &env,
        "POST",
        BINDINGS,
        Some(&binding(
            "add-team-binding",
            json!({"policyName": "add-team",
                   "paramRef": {"name": "team", "parameterNotFoundAction": "Deny"},
                   "matchResources": {"namespaceSelector": {"matchLabels": {"env": "test"}}}}),
        )),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["matchResources"]["matchPolicy"],
        "Equivalent"
    );
    assert_eq!(
        created["spec"]["matchResources"]["objectSelector"],
        json!({})
    );
    let (headers, row) = headers_and_row(&table(&env, BINDINGS).await);
    assert_eq!(headers, ["Name", "PolicyName", "ParamRef", "Age"]);
    assert_eq!(
        row,
        [
            json!("add-team-binding"),
            json!("add-team"),
            json!("*/team")
        ]
    );

    let (code, body) = send(
        &env,
        "POST",
        BINDINGS,
        Some(&binding(
            "bad",
            json!({"policyName": "Not_A_Name",
                   "paramRef": {"parameterNotFoundAction": "Ignore"},
                   "matchResources": {"resourceRules": [{"operations": ["DELETE"],
                       "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}}),
        )),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let got = causes(&body);
    assert!(
        got[0].starts_with(
            "spec.policyName: Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain"
        ),
        "{got:?}"
    );
    assert_eq!(
        got[1..],
        [
            "spec.paramRef: Required value: one of name or selector must be specified",
            "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Ignore\": supported values: \"Deny\", \"Allow\"",
            "spec.matchResources.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
        ]
    );
    env.shutdown().await;
}
