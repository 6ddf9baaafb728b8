//! Protobuf request bodies, as kubectl ≥ 1.32 sends for `kubectl create <kind>`, are stored
//! exactly like the same objects sent as JSON.

mod common;

use common::*;
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/protobuf");

async fn create_both_ways(env: &TestEnv, fixture: &str, path: &str) {
    let client = env.client();
    let pb = std::fs::read(format!("{FIXTURES}/{fixture}.pb")).expect("fixture");
    let json: Value = serde_json::from_slice(
        &std::fs::read(format!("{FIXTURES}/{fixture}.json")).expect("fixture"),
    )
    .expect("json");
    let (status, from_pb) = raw(
        &client,
        "POST",
        path,
        Some("application/vnd.kubernetes.protobuf"),
        pb,
    )
    .await;
    assert_eq!(status, 201, "{fixture}: {from_pb}");
    // The same object as JSON under another name must come out the same.
    let mut renamed = json.clone();
    let name = format!("{}-json", json["metadata"]["name"].as_str().expect("name"));
    renamed["metadata"]["name"] = Value::String(name);
    let (status, from_json) = raw(
        &client,
        "POST",
        path,
        Some("application/json"),
        renamed.to_string().into_bytes(),
    )
    .await;
    assert_eq!(status, 201, "{fixture}: {from_json}");
    for field in ["spec", "data", "rules", "subjects", "roleRef", "type"] {
        assert_eq!(
            comparable(from_pb.get(field)),
            comparable(from_json.get(field)),
            "{fixture}: {field} differs"
        );
    }
    if fixture != "job" {
        // Jobs get labels derived from their own uid and name.
        assert_eq!(
            from_pb["metadata"]["labels"], from_json["metadata"]["labels"],
            "{fixture}: labels"
        );
    }
}

/// A field without what the server derives from the object's own uid and name (Jobs' selector
/// and template labels).
fn comparable(field: Option<&Value>) -> Option<Value> {
    let mut field = field.cloned()?;
    if let Some(map) = field.as_object_mut()
        && map
            .get("selector")
            .and_then(|s| s.get("matchLabels"))
            .is_some_and(|m| m.get("batch.kubernetes.io/controller-uid").is_some())
    {
        map.remove("selector");
        if let Some(template) = map.get_mut("template").and_then(Value::as_object_mut) {
            template.remove("metadata");
        }
    }
    Some(field)
}

#[tokio::test]
async fn kubectl_protobuf_creates_match_json_creates() {
    let env = TestEnv::start().await.expect("env");
    create_both_ways(&env, "configmap", "/api/v1/namespaces/default/configmaps").await;
    create_both_ways(&env, "secret", "/api/v1/namespaces/default/secrets").await;
    create_both_ways(
        &env,
        "serviceaccount",
        "/api/v1/namespaces/default/serviceaccounts",
    )
    .await;
    create_both_ways(
        &env,
        "deployment",
        "/apis/apps/v1/namespaces/default/deployments",
    )
    .await;
    create_both_ways(&env, "job", "/apis/batch/v1/namespaces/default/jobs").await;
    create_both_ways(
        &env,
        "role",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
    )
    .await;
    create_both_ways(
        &env,
        "clusterrolebinding",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    )
    .await;
    let pb = std::fs::read(format!("{FIXTURES}/namespace.pb")).expect("fixture");
    let (status, ns) = raw(
        &env.client(),
        "POST",
        "/api/v1/namespaces",
        Some("application/vnd.kubernetes.protobuf"),
        pb,
    )
    .await;
    assert_eq!(status, 201, "{ns}");
    assert_eq!(ns["status"]["phase"], "Active");
}

#[tokio::test]
async fn malformed_protobuf_is_a_400_and_stores_nothing() {
    let env = TestEnv::start().await.expect("env");
    let mut pb = std::fs::read(format!("{FIXTURES}/configmap.pb")).expect("fixture");
    pb.truncate(pb.len() / 2);
    let (status, body) = raw(
        &env.client(),
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/vnd.kubernetes.protobuf"),
        pb,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["reason"], "BadRequest");
    let (_, list) = raw(
        &env.client(),
        "GET",
        "/api/v1/namespaces/default/configmaps",
        None,
        vec![],
    )
    .await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(0));
}
