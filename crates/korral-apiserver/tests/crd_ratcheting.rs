//! CRD validation ratcheting over HTTP (GA since Kubernetes 1.33): after a CRD's schema is
//! tightened, objects stored under the old schema still accept updates that leave their invalid
//! values unchanged (labels, `/status`), while new objects and changed values meet the new
//! schema; a CEL rule failing on an unchanged value answers a `Warning` instead of a 422.

mod common;

use common::*;
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const CRD: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.ratchet.example.org";
const GADGETS: &str = "/apis/ratchet.example.org/v1/namespaces/default/gadgets";
const MERGE: &str = "application/merge-patch+json";

/// The Gadget CRD with `spec` as given and a status subresource.
fn gadget_crd(spec: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.ratchet.example.org"},
        "spec": {
            "group": "ratchet.example.org",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": spec,
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
                }}}
            }]
        }
    })
}

/// The first schema: anything goes.
fn loose() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "size": {"type": "integer"},
        "note": {"type": "string"},
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["port"],
            "items": {"type": "object", "required": ["port"], "properties": {
                "port": {"type": "integer"}, "protocol": {"type": "string"}
            }}
        }
    }})
}

/// The second schema: a pattern, a maximum, an enum in map-list items and a CEL rule.
fn tight() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$"},
        "size": {"type": "integer", "maximum": 100},
        "note": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self != 'x'", "message": "note must not be x"}
        ]},
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["port"],
            "items": {"type": "object", "required": ["port"], "properties": {
                "port": {"type": "integer"},
                "protocol": {"type": "string", "enum": ["TCP", "UDP"]}
            }}
        }
    }})
}

/// A gadget that the tight schema refuses on every field.
fn invalid_gadget(name: &str) -> Value {
    json!({
        "apiVersion": "ratchet.example.org/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {
            "name": "UPPER",
            "size": 500,
            "note": "x",
            "ports": [{"port": 80, "protocol": "tcp"}, {"port": 81, "protocol": "udp"}]
        }
    })
}

/// The fields of a refusal's causes.
fn cause_fields(body: &Value) -> Vec<String> {
    body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["field"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn objects_stored_under_a_looser_schema_keep_accepting_updates_that_leave_them_be() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let crd = gadget_crd(loose());
    let (code, _) = call(&env, "POST", CRDS, Some(&crd)).await;
    assert_eq!(code, 201);
    wait_until(WAIT, "gadgets served", || async {
        call(&env, "GET", GADGETS, None).await.0 == 200
    })
    .await
    .expect("served");
    let (code, body) = call(&env, "POST", GADGETS, Some(&invalid_gadget("old"))).await;
    assert_eq!(code, 201, "{body}");

    // Tighten the schema.
    let (_, mut stored) = call(&env, "GET", CRD, None).await;
    stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = tight();
    let (code, body) = call(&env, "PUT", CRD, Some(&stored)).await;
    assert_eq!(code, 200, "{body}");

    // A new object meets the new schema on every field.
    wait_until(WAIT, "the tight schema applies", || async {
        call(&env, "POST", GADGETS, Some(&invalid_gadget("new")))
            .await
            .0
            == 422
    })
    .await
    .expect("tight schema");
    let refused = call(&env, "POST", GADGETS, Some(&invalid_gadget("new"))).await;
    assert_eq!(
        cause_fields(&refused.1),
        [
            "spec.name",
            "spec.ports[0].protocol",
            "spec.ports[1].protocol",
            "spec.size",
            "<nil>"
        ],
        "{}",
        refused.1
    );

    // The old object: a label change leaves every invalid value as it was; the CEL rule's
    // failure comes back as a warning.
    let (code, warnings, body) = request(
        &client,
        "PATCH",
        &format!("{GADGETS}/old"),
        Some(MERGE),
        Some(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["labels"]["touched"], "yes");
    assert_eq!(
        warnings,
        ["299 - \"spec.note: Invalid value: \\\"x\\\": note must not be x\""]
    );

    // Its status can be written, as a controller does.
    let (code, body) = call_as(
        &env,
        "PATCH",
        &format!("{GADGETS}/old/status"),
        MERGE,
        &json!({"status": {"phase": "Ready"}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Ready");

    // Fixing one port (the ports reordered: items match by key) keeps the other ratcheted;
    // a changed size that is still too large is refused, and only that.
    let (code, body) = call_as(
        &env,
        "PATCH",
        &format!("{GADGETS}/old"),
        MERGE,
        &json!({"spec": {"size": 600, "ports": [{"port": 81, "protocol": "UDP"}, {"port": 80, "protocol": "tcp"}]}}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(cause_fields(&body), ["spec.size"], "{body}");
    let (code, body) = call_as(
        &env,
        "PATCH",
        &format!("{GADGETS}/old"),
        MERGE,
        &json!({"spec": {"size": 50, "ports": [{"port": 81, "protocol": "UDP"}, {"port": 80, "protocol": "tcp"}]}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["spec"]["size"], 50);

    // Changing the note to another value the rule refuses is enforced.
    let (code, _) = call_as(
        &env,
        "PATCH",
        &format!("{GADGETS}/old"),
        MERGE,
        &json!({"spec": {"note": "y"}}),
    )
    .await;
    assert_eq!(code, 200);
    let (code, body) = call_as(
        &env,
        "PATCH",
        &format!("{GADGETS}/old"),
        MERGE,
        &json!({"spec": {"note": "x"}}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Invalid value: \"x\": note must not be x"
    );
    // Nothing refused was stored.
    let (_, stored) = call(&env, "GET", &format!("{GADGETS}/old"), None).await;
    assert_eq!(stored["spec"]["note"], "y");
    assert_eq!(stored["spec"]["size"], 50);
}
