//! The ValidatingAdmissionPolicy status controller: a policy's expressions are type-checked
//! against the kinds it matches and the result written to `status.typeChecking` with
//! `status.observedGeneration`, as kube-controller-manager's
//! `validatingadmissionpolicy-status-controller` writes them; the warnings do not stop the
//! policy from being enforced, and fixing the expression clears them.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const WAIT: Duration = Duration::from_secs(10);

/// The broken message expression: `string + int` has no overload.
const BROKEN: &str = "'replicas: ' + object.spec.replicas";

/// Polls (until [`WAIT`]) for the status of policy `name` to satisfy `check`; answers it.
async fn wait_for_status(env: &TestEnv, name: &str, check: impl Fn(&Value) -> bool) -> Value {
    let path = format!("{POLICIES}/{name}");
    let last = Mutex::new(Value::Null);
    let result = wait_until(WAIT, format!("status of {name}"), || async {
        let (code, body) = call(env, "GET", &path, None).await;
        assert_eq!(code, 200, "{body}");
        let status = body["status"].clone();
        let done = check(&status);
        *last.lock().unwrap_or_else(|e| e.into_inner()) = status;
        done
    })
    .await;
    let last = last.into_inner().unwrap_or_else(|e| e.into_inner());
    assert!(
        result.is_ok(),
        "status of {name} never matched; last seen {last}"
    );
    last
}

#[tokio::test]
async fn type_checking_warnings_are_written_and_cleared() {
    let env = TestEnv::start().await.expect("env");
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "replica-limit"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"],
                "operations": ["CREATE", "UPDATE"],
            }]},
            "validations": [
                {"expression": "object.spec.replicas <= 5", "messageExpression": BROKEN},
                {"expression": "object.replicas > 1"},
            ],
        },
    });
    create_ok(&env, POLICIES, &policy).await;

    let status = wait_for_status(&env, "replica-limit", |s| {
        s["observedGeneration"] == json!(1)
    })
    .await;
    assert_eq!(
        status["typeChecking"],
        json!({"expressionWarnings": [
            {
                "fieldRef": "spec.validations[0].messageExpression",
                "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:14: found no matching \
                    overload for '_+_' applied to '(string, int)'\n \
                    | 'replicas: ' + object.spec.replicas\n | .............^\n",
            },
            {
                "fieldRef": "spec.validations[1].expression",
                "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field \
                    'replicas'\n | object.replicas > 1\n | ......^\n",
            },
        ]}),
        "{status}"
    );

    // Written by the controller through the status subresource, under its own name.
    let (_, stored) = call(&env, "GET", &format!("{POLICIES}/replica-limit"), None).await;
    let entries = stored["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let entry = entries
        .iter()
        .find(|e| e["manager"] == "validatingadmissionpolicy-status-controller")
        .unwrap_or_else(|| panic!("the controller's managedFields entry: {entries:?}"));
    assert_eq!(entry["subresource"], "status", "{entry}");
    assert!(
        entry["fieldsV1"]["f:status"]["f:typeChecking"].is_object(),
        "{entry}"
    );

    // kubectl reads them as from a cluster.
    let cache = tempfile::tempdir().expect("cache dir");
    let (ok, out, err) = kubectl(
        &env,
        cache.path(),
        &[
            "get",
            "validatingadmissionpolicy",
            "replica-limit",
            "-o",
            "jsonpath={.status.typeChecking.expressionWarnings[*].fieldRef}",
        ],
    )
    .await;
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "spec.validations[0].messageExpression spec.validations[1].expression"
    );

    // The policy is enforced all the same.
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "replica-limit"},
        "spec": {"policyName": "replica-limit", "validationActions": ["Deny"]},
    });
    create_ok(&env, BINDINGS, &binding).await;
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "big"},
        "spec": {
            "replicas": 10,
            "selector": {"matchLabels": {"app": "big"}},
            "template": {"metadata": {"labels": {"app": "big"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
    });
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    // Admission reads the bindings as they are stored: the next request meets this one.
    let refused = call(&env, "POST", deployments, Some(&deployment)).await;
    assert_eq!(refused.0, 422, "{}", refused.1);
    let message = refused.1["message"].as_str().unwrap_or("");
    assert!(
        message.contains(
            "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit' denied request"
        ),
        "{message}"
    );

    // Fixing the expressions clears the warnings at the next generation.
    let (code, fixed) = call_as(
        &env,
        "PATCH",
        &format!("{POLICIES}/replica-limit"),
        "application/merge-patch+json",
        &json!({"spec": {"validations": [
            {"expression": "object.spec.replicas <= 5",
             "messageExpression": "'replicas: ' + string(object.spec.replicas)"},
        ]}}),
    )
    .await;
    assert_eq!(code, 200, "{fixed}");
    assert_eq!(fixed["metadata"]["generation"], json!(2));
    let status = wait_for_status(&env, "replica-limit", |s| {
        s["observedGeneration"] == json!(2)
    })
    .await;
    assert_eq!(status["typeChecking"], json!({}), "{status}");

    // A metadata change is no new generation: nothing is written.
    let (code, labeled) = call_as(
        &env,
        "PATCH",
        &format!("{POLICIES}/replica-limit"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"team": "a"}}}),
    )
    .await;
    assert_eq!(code, 200, "{labeled}");
    assert_eq!(labeled["metadata"]["generation"], json!(2));
    assert_eq!(labeled["status"]["observedGeneration"], json!(2));
}

#[tokio::test]
async fn custom_resources_are_checked_against_their_published_schema() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "widgets"},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["ref.example.org"], "apiVersions": ["v1", "v1beta1"],
                "resources": ["widgets"], "operations": ["CREATE"],
            }]},
            "validations": [
                // Typed by the published schema: metadata is the full ObjectMeta.
                {"expression": "object.spec.replicas < 10 && object.metadata.labels['a'] != 'b'"},
                {"expression": "object.spec.size > 1"},
            ],
        },
    });
    create_ok(&env, POLICIES, &policy).await;
    let status = wait_for_status(&env, "widgets", |s| s["observedGeneration"] == json!(1)).await;
    // v1beta1's schema keeps unknown fields but declares none: `spec` is undefined there.
    assert_eq!(
        status["typeChecking"],
        json!({"expressionWarnings": [
            {
                "fieldRef": "spec.validations[0].expression",
                "warning": "ref.example.org/v1beta1, Kind=Widget: ERROR: <input>:1:7: undefined \
                    field 'spec'\n | object.spec.replicas < 10 && object.metadata.labels['a'] \
                    != 'b'\n | ......^\n",
            },
            {
                "fieldRef": "spec.validations[1].expression",
                "warning": "ref.example.org/v1, Kind=Widget: ERROR: <input>:1:12: undefined \
                    field 'size'\n | object.spec.size > 1\n | ...........^\n\n\
                    ref.example.org/v1beta1, Kind=Widget: ERROR: <input>:1:7: undefined field \
                    'spec'\n | object.spec.size > 1\n | ......^\n",
            },
        ]}),
        "{status}"
    );
}
