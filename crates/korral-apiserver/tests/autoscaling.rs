//! HorizontalPodAutoscalers: one stored object served as `autoscaling/v2` and `autoscaling/v1`,
//! converted on every read, write, list and watch as upstream converts them
//! (`k8s-reference/builtin/{create-hpa-v2,get-hpa-as-v1,invalid-hpa-min-over-max}.json`).

mod common;

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::autoscaling::{v1, v2};
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

const V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
const V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";

fn hpa_v2(name: &str, min: i64, max: i64) -> Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": min, "maxReplicas": max,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}],
        },
    })
}

async fn send(env: &TestEnv, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let content_type = body.map(|_| "application/json");
    raw(&env.client(), method, path, content_type, bytes).await
}

#[tokio::test]
async fn one_hpa_is_served_in_both_versions() {
    let env = TestEnv::start().await.expect("env");
    let (code, created) = send(&env, "POST", V2, Some(&hpa_v2("hpa", 1, 3))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["status"],
        json!({"desiredReplicas": 0, "currentMetrics": null}),
        "{created}"
    );
    assert!(
        created["metadata"]["managedFields"][0]["fieldsV1"]
            .get("f:status")
            .is_none()
    );

    // Read through v1: upstream's get-hpa-as-v1.json.
    let (code, v1) = send(&env, "GET", &format!("{V1}/hpa"), None).await;
    assert_eq!(code, 200, "{v1}");
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(
        v1["spec"],
        json!({
            "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 80,
        })
    );
    assert_eq!(
        v1["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    assert_eq!(
        v1["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    // A v1 client changes the CPU target; v2 sees its metric changed.
    let mut update = v1.clone();
    update["spec"]["targetCPUUtilizationPercentage"] = json!(50);
    let (code, updated) = send(&env, "PUT", &format!("{V1}/hpa"), Some(&update)).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["targetCPUUtilizationPercentage"], 50);
    let (_, v2) = send(&env, "GET", &format!("{V2}/hpa"), None).await;
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}])
    );
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
}

#[tokio::test]
async fn what_v1_cannot_say_survives_v1_writes() {
    let env = TestEnv::start().await.expect("env");
    let mut hpa = hpa_v2("multi", 2, 10);
    hpa["spec"]["metrics"] = json!([
        {"type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": "1024Mi"}}},
        {"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 70}}},
    ]);
    hpa["spec"]["behavior"] = json!({"scaleDown": {"stabilizationWindowSeconds": 60}});
    let (code, created) = send(&env, "POST", V2, Some(&hpa)).await;
    assert_eq!(code, 201, "{created}");
    // Defaults fill the behavior's rules.
    assert_eq!(
        created["spec"]["behavior"]["scaleUp"]["selectPolicy"],
        "Max"
    );

    // A merge patch through v1 changes maxReplicas only.
    let api: Api<v1::HorizontalPodAutoscaler> = Api::namespaced(env.client(), "default");
    let patched = api
        .patch(
            "multi",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"maxReplicas": 12}})),
        )
        .await
        .expect("v1 patch");
    assert_eq!(patched.spec.max_replicas, 12);
    assert_eq!(patched.spec.target_cpu_utilization_percentage, Some(70));
    let annotations = patched.metadata.annotations.unwrap_or_default();
    assert!(
        annotations.contains_key("autoscaling.alpha.kubernetes.io/metrics"),
        "{annotations:?}"
    );

    let api2: Api<v2::HorizontalPodAutoscaler> = Api::namespaced(env.client(), "default");
    let back = api2.get("multi").await.expect("v2 get");
    let back = serde_json::to_value(&back).expect("json");
    assert_eq!(back["spec"]["maxReplicas"], 12);
    assert_eq!(
        back["spec"]["metrics"], created["spec"]["metrics"],
        "{back}"
    );
    assert_eq!(back["spec"]["behavior"], created["spec"]["behavior"]);
    assert!(back["metadata"].get("annotations").is_none(), "{back}");

    // Lists and watches of v1 are converted too.
    let list = api.list(&Default::default()).await.expect("v1 list");
    assert_eq!(list.items.len(), 1);
    assert_eq!(
        list.items[0].spec.target_cpu_utilization_percentage,
        Some(70)
    );
    let mut events = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    match events.try_next().await.expect("event") {
        Some(WatchEvent::Added(o)) => {
            assert_eq!(o.spec.target_cpu_utilization_percentage, Some(70));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn v1_creates_are_stored_in_v2_and_refusals_are_upstreams() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<v1::HorizontalPodAutoscaler> = Api::namespaced(env.client(), "default");
    let hpa: v1::HorizontalPodAutoscaler = serde_json::from_value(json!({
        "metadata": {"name": "from-v1"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "maxReplicas": 4},
    }))
    .expect("hpa");
    let created = api
        .create(&PostParams::default(), &hpa)
        .await
        .expect("create");
    assert_eq!(created.spec.min_replicas, Some(1));
    // v2's default CPU target, seen by both versions.
    assert_eq!(created.spec.target_cpu_utilization_percentage, Some(80));
    let (_, v2) = send(&env, "GET", &format!("{V2}/from-v1"), None).await;
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );

    let (code, refused) = send(&env, "POST", V2, Some(&hpa_v2("hpa2", 5, 3))).await;
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        refused["message"],
        "HorizontalPodAutoscaler.autoscaling \"hpa2\" is invalid: spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`"
    );
    assert_eq!(
        refused["details"]["causes"],
        json!([{"reason": "FieldValueInvalid",
            "message": "Invalid value: 3: must be greater than or equal to `minReplicas`",
            "field": "spec.maxReplicas"}])
    );
    let (code, _) = send(&env, "GET", &format!("{V2}/hpa2"), None).await;
    assert_eq!(code, 404);

    // Discovery: both versions, v2 preferred; the table's columns as upstream's.
    let (_, group) = send(&env, "GET", "/apis/autoscaling", None).await;
    assert_eq!(group["preferredVersion"]["version"], "v2", "{group}");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, ["v2", "v1"]);
    let request = http::Request::builder()
        .uri(V1)
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .expect("request");
    let table: Value = env.client().request(request).await.expect("table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        columns,
        [
            "Name",
            "Reference",
            "Targets",
            "MinPods",
            "MaxPods",
            "Replicas",
            "Age"
        ]
    );
    assert_eq!(
        table["rows"][0]["cells"]
            .as_array()
            .map(|c| c[..6].to_vec()),
        Some(vec![
            json!("from-v1"),
            json!("Deployment/web"),
            json!("cpu: <unknown>/80%"),
            json!("1"),
            json!(4),
            json!(0)
        ])
    );
}

#[tokio::test]
async fn metric_quantities_are_stored_canonical_in_both_versions() {
    let env = TestEnv::start().await.expect("env");
    let mut hpa = hpa_v2("mem", 1, 4);
    hpa["spec"]["metrics"] = json!([
        {"type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": "0.5Gi"}}},
        {"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 60}}},
    ]);
    let (code, created) = send(&env, "POST", V2, Some(&hpa)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["metrics"][0]["resource"]["target"]["averageValue"], "512Mi",
        "{created}"
    );
    // The v1 view carries it canonical in its metrics annotation.
    let (_, v1) = send(&env, "GET", &format!("{V1}/mem"), None).await;
    let annotation = v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        annotation.contains(r#""targetAverageValue":"512Mi""#),
        "{v1}"
    );

    // A v1 write with a non-canonical quantity in the annotation is stored canonical.
    let mut update = v1.clone();
    update["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"] =
        json!(r#"[{"type":"Resource","resource":{"name":"memory","targetAverageValue":"1.5Gi"}}]"#);
    let (code, body) = send(&env, "PUT", &format!("{V1}/mem"), Some(&update)).await;
    assert_eq!(code, 200, "{body}");
    let (_, v2) = send(&env, "GET", &format!("{V2}/mem"), None).await;
    assert_eq!(
        v2["spec"]["metrics"][0]["resource"]["target"]["averageValue"], "1536Mi",
        "{v2}"
    );

    // A malformed quantity cannot be decoded: 400, nothing stored.
    let mut bad = hpa_v2("bad", 1, 4);
    bad["spec"]["metrics"] = json!([{"type": "Resource", "resource": {"name": "memory",
        "target": {"type": "AverageValue", "averageValue": "lots"}}}]);
    let (code, body) = send(&env, "POST", V2, Some(&bad)).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["reason"], "BadRequest");
    let (code, _) = send(&env, "GET", &format!("{V2}/bad"), None).await;
    assert_eq!(code, 404);
}

/// `/status` writes are checked with upstream's status rules (replica counts non-negative),
/// through both versions, and a refused one changes nothing.
#[tokio::test]
async fn status_writes_keep_replica_counts_non_negative() {
    let env = TestEnv::start().await.expect("env");
    let (code, created) = send(&env, "POST", V2, Some(&hpa_v2("counts", 1, 3))).await;
    assert_eq!(code, 201, "{created}");
    let mut good = created.clone();
    good["status"] = json!({"currentReplicas": 2, "desiredReplicas": 3});
    let (code, written) = send(&env, "PUT", &format!("{V2}/counts/status"), Some(&good)).await;
    assert_eq!(code, 200, "{written}");
    assert_eq!(written["status"]["desiredReplicas"], 3);

    let mut bad = written.clone();
    bad["status"]["desiredReplicas"] = json!(-1);
    let (code, body) = send(&env, "PUT", &format!("{V2}/counts/status"), Some(&bad)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "HorizontalPodAutoscaler.autoscaling \"counts\" is invalid: status.desiredReplicas: Invalid value: -1: must be greater than or equal to 0"
    );
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "status.desiredReplicas"
    );

    let (_, v1) = send(&env, "GET", &format!("{V1}/counts"), None).await;
    let mut bad_v1 = v1.clone();
    bad_v1["status"]["currentReplicas"] = json!(-4);
    let (code, body) = send(&env, "PUT", &format!("{V1}/counts/status"), Some(&bad_v1)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "status.currentReplicas"
    );

    let (_, stored) = send(&env, "GET", &format!("{V2}/counts"), None).await;
    assert_eq!(
        stored["status"], written["status"],
        "refused writes changed nothing"
    );
}
