//! The scale subresource (deployments, replicasets, statefulsets, CRDs that declare it) through
//! kube-rs, and server-side Tables: built-in columns as upstream (reference captures), CRD
//! printer columns with priorities, and tables in watches.

mod common;

use common::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// A GET with the Table Accept header.
async fn get_table(client: &kube::Client, path: &str) -> (u16, Value) {
    let request = http::Request::builder()
        .method("GET")
        .uri(path)
        .header("accept", TABLE_ACCEPT)
        .body(Vec::new())
        .expect("request");
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("send");
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn reference_columns(name: &str) -> Vec<(String, i64)> {
    let path = format!(
        "{}/tests/fixtures/reference/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("reference capture");
    let doc: Value = serde_json::from_str(&text).expect("json");
    columns(&doc["body"])
}

fn columns(table: &Value) -> Vec<(String, i64)> {
    table["columnDefinitions"]
        .as_array()
        .expect("columnDefinitions")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_string(),
                c["priority"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

fn workload(kind: &str, name: &str) -> Value {
    let mut spec = json!({
        "replicas": 1,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    });
    if kind == "StatefulSet" {
        spec["serviceName"] = json!(name);
    }
    json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn scale_subresource_on_builtin_workloads() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let replicasets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(workload("Deployment", "web")).expect("d"),
        )
        .await
        .expect("deployment");
    replicasets
        .create(
            &PostParams::default(),
            &serde_json::from_value(workload("ReplicaSet", "rs")).expect("rs"),
        )
        .await
        .expect("replicaset");
    statefulsets
        .create(
            &PostParams::default(),
            &serde_json::from_value(workload("StatefulSet", "ss")).expect("ss"),
        )
        .await
        .expect("statefulset");

    // GET /scale matches get-deployment-scale.json's shape.
    let scale = deployments.get_scale("web").await.expect("scale");
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(1));
    assert_eq!(
        scale
            .status
            .as_ref()
            .and_then(|s| s.selector.clone())
            .as_deref(),
        Some("app=web")
    );
    assert_eq!(scale.metadata.name.as_deref(), Some("web"));

    // PATCH /scale on each kind.
    let pp = PatchParams::default();
    let patch = Patch::Merge(json!({"spec": {"replicas": 3}}));
    let s = deployments
        .patch_scale("web", &pp, &patch)
        .await
        .expect("d");
    assert_eq!(s.spec.and_then(|s| s.replicas), Some(3));
    let s = replicasets
        .patch_scale("rs", &pp, &patch)
        .await
        .expect("rs");
    assert_eq!(s.spec.and_then(|s| s.replicas), Some(3));
    let s = statefulsets
        .patch_scale("ss", &pp, &patch)
        .await
        .expect("ss");
    assert_eq!(s.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(
        deployments.get("web").await.expect("get").spec.replicas,
        Some(3)
    );
    assert_eq!(
        statefulsets.get("ss").await.expect("get").spec.replicas,
        Some(3)
    );

    // PUT /scale with a stale resourceVersion: 409, nothing changes.
    let mut stale = deployments.get_scale("web").await.expect("scale");
    stale.metadata.resource_version = Some("1".into());
    stale.spec = Some(k8s_openapi::api::autoscaling::v1::ScaleSpec { replicas: Some(7) });
    let err = deployments
        .replace_scale("web", &PostParams::default(), &stale)
        .await
        .expect_err("stale");
    assert_eq!(code(err), 409);
    // A negative replica count is refused.
    let err = deployments
        .patch_scale("web", &pp, &Patch::Merge(json!({"spec": {"replicas": -1}})))
        .await
        .expect_err("negative");
    assert_eq!(code(err), 422);
    assert_eq!(
        deployments.get("web").await.expect("get").spec.replicas,
        Some(3)
    );
}

#[tokio::test]
async fn scale_subresource_on_custom_resources() {
    let env = TestEnv::start().await.expect("env");
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["subresources"]["scale"] = json!({
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.ready",
    });
    let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        serde_json::from_value(crd).expect("crd");
    env.install_crd(crd).await.expect("install");
    let api = widgets(&env, "default");
    api.create(
        &PostParams::default(),
        &widget("w1", json!({"replicas": 2})),
    )
    .await
    .expect("create");
    let scale = api.get_scale("w1").await.expect("scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(2));
    let s = api
        .patch_scale(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("patch scale");
    assert_eq!(s.spec.and_then(|s| s.replicas), Some(5));
    assert_eq!(
        api.get("w1").await.expect("get").data["spec"]["replicas"],
        5
    );
    // The schema still applies through /scale (minimum: 1), and nothing changes.
    let err = api
        .patch_scale(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 0}})),
        )
        .await
        .expect_err("below minimum");
    assert_eq!(code(err), 422);
    assert_eq!(
        api.get("w1").await.expect("get").data["spec"]["replicas"],
        5
    );
    // A CRD without scale has no /scale.
    let (status, _) = raw(
        &env.client(),
        "GET",
        "/apis/ref.example.org/v1beta1/namespaces/default/widgets/w1/scale",
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn builtin_tables_have_upstream_columns() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "p1"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}
        }))
        .expect("pod"),
    )
    .await
    .expect("pod");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(workload("Deployment", "web")).expect("d"),
        )
        .await
        .expect("deployment");
    let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    statefulsets
        .create(
            &PostParams::default(),
            &serde_json::from_value(workload("StatefulSet", "ss")).expect("ss"),
        )
        .await
        .expect("statefulset");
    for (path, reference) in [
        ("/api/v1/namespaces/default/pods", "table-pods"),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            "table-deployments",
        ),
        (
            "/apis/apps/v1/namespaces/default/statefulsets",
            "table-statefulsets",
        ),
    ] {
        let (status, table) = get_table(&client, path).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(table["kind"], "Table");
        assert_eq!(columns(&table), reference_columns(reference), "{path}");
        assert_eq!(table["rows"].as_array().map(Vec::len), Some(1), "{path}");
    }
    let (_, pods_table) = get_table(&client, "/api/v1/namespaces/default/pods").await;
    let cells = &pods_table["rows"][0]["cells"];
    assert_eq!(cells[0], "p1");
    assert_eq!(cells[1], "0/1");
    assert_eq!(cells.as_array().map(Vec::len), Some(9));
    assert_eq!(cells[7], "<none>", "nominated node");
    assert_eq!(cells[8], "<none>", "readiness gates");
    let (_, deploy_table) =
        get_table(&client, "/apis/apps/v1/namespaces/default/deployments").await;
    let cells = &deploy_table["rows"][0]["cells"];
    assert_eq!(cells[0], "web");
    assert_eq!(cells[5], "c");
    assert_eq!(cells[6], "nginx");
    assert_eq!(cells[7], "app=web");
}

#[tokio::test]
async fn crd_tables_with_priority_columns_and_in_watches() {
    let env = TestEnv::start().await.expect("env");
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = json!([
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1,
         "description": "the color"}
    ]);
    let crd: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        serde_json::from_value(crd).expect("crd");
    env.install_crd(crd).await.expect("install");
    let api = widgets(&env, "default");
    api.create(
        &PostParams::default(),
        &widget("w1", json!({"replicas": 2})),
    )
    .await
    .expect("create");
    let client = env.client();
    let (status, table) = get_table(
        &client,
        "/apis/ref.example.org/v1/namespaces/default/widgets",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        columns(&table),
        [
            ("Name".to_string(), 0),
            ("Replicas".to_string(), 0),
            ("Color".to_string(), 1)
        ]
    );
    assert_eq!(table["columnDefinitions"][2]["description"], "the color");
    assert_eq!(table["rows"][0]["cells"], json!(["w1", 2, "red"]));
    // A watch with the Table Accept header streams Table rows.
    let request = http::Request::builder()
        .method("GET")
        .uri("/apis/ref.example.org/v1/namespaces/default/widgets?watch=true&timeoutSeconds=1")
        .header("accept", TABLE_ACCEPT)
        .body(Vec::new())
        .expect("request");
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("send");
    assert_eq!(response.status().as_u16(), 200);
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    let first: Value = serde_json::Deserializer::from_slice(&bytes)
        .into_iter::<Value>()
        .next()
        .expect("an event")
        .expect("json");
    assert_eq!(first["type"], "ADDED");
    assert_eq!(first["object"]["kind"], "Table");
    assert_eq!(first["object"]["rows"][0]["cells"], json!(["w1", 2, "red"]));
}
