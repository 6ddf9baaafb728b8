//! OpenAPI documents for `kubectl explain`: built-in kinds with upstream descriptions, CRD
//! schemas with theirs, and `/openapi/v2` following CRD changes.

mod common;

use common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams};
use serde_json::{Value, json};

fn described_widget_crd() -> Value {
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["description"] =
        json!("WidgetSpec is what the widget should be.");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"]
        ["description"] = json!("How many widgets to run.");
    crd
}

#[tokio::test]
async fn builtin_kinds_have_schemas_with_descriptions() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (status, index) = raw(&client, "GET", "/openapi/v3", None, vec![]).await;
    assert_eq!(status, 200);
    let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .expect("apps/v1 listed")
        .to_string();
    let (status, apps) = raw(&client, "GET", &url, None, vec![]).await;
    assert_eq!(status, 200);
    let schemas = &apps["components"]["schemas"];
    let deploy = &schemas["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deploy["description"],
        "Deployment enables declarative updates for Pods and ReplicaSets."
    );
    assert_eq!(
        deploy["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    let replicas = &schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"];
    assert_eq!(replicas["type"], "integer");
    assert!(
        replicas["description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Number of desired pods")),
        "{replicas}"
    );
    // Every reference resolves inside the document.
    let mut refs = Vec::new();
    collect_refs(&apps, &mut refs);
    for r in refs {
        let name = r.trim_start_matches("#/components/schemas/");
        assert!(schemas.get(name).is_some(), "dangling reference {r}");
    }
    // Core: Pod containers.
    let (_, core) = raw(&client, "GET", "/openapi/v3/api/v1", None, vec![]).await;
    assert!(
        core["components"]["schemas"]["io.k8s.api.core.v1.Container"]["properties"]["image"]
            ["description"]
            .is_string()
    );
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                out.push(r.clone());
            }
            m.values().for_each(|x| collect_refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn openapi_v2_follows_crd_changes() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let model = "org.example.ref.v1.Widget";
    let (status, before) = raw(&client, "GET", "/openapi/v2", None, vec![]).await;
    assert_eq!(status, 200);
    assert!(before["definitions"].get(model).is_none());
    assert!(
        before["definitions"]["io.k8s.api.apps.v1.Deployment"]["description"].is_string(),
        "built-in definitions in v2 too"
    );
    let crd: CustomResourceDefinition =
        serde_json::from_value(described_widget_crd()).expect("crd");
    env.install_crd(crd).await.expect("install");
    let (_, after) = raw(&client, "GET", "/openapi/v2", None, vec![]).await;
    let widget = &after["definitions"][model];
    assert_eq!(
        widget["properties"]["spec"]["properties"]["replicas"]["description"],
        "How many widgets to run."
    );
    // v3 of the CRD's group version carries the same descriptions.
    let (_, v3) = raw(
        &client,
        "GET",
        "/openapi/v3/apis/ref.example.org/v1",
        None,
        vec![],
    )
    .await;
    assert_eq!(
        v3["components"]["schemas"][model]["properties"]["spec"]["description"],
        "WidgetSpec is what the widget should be."
    );
    // Removing the CRD removes it from the cached document.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("widgets.ref.example.org", &DeleteParams::default())
        .await
        .expect("delete");
    wait_until(WAIT, "the Widget definition leaves /openapi/v2", || {
        let client = client.clone();
        async move {
            let (_, doc) = raw(&client, "GET", "/openapi/v2", None, vec![]).await;
            doc["definitions"].get(model).is_none()
        }
    })
    .await
    .expect("definition removed");
}

#[tokio::test]
async fn aggregated_discovery_when_asked_for() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let client = env.client();
    let request = http::Request::builder()
        .method("GET")
        .uri("/apis")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )
        .body(Vec::new())
        .expect("request");
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("send");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    let doc: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    let widgets = doc["items"]
        .as_array()
        .and_then(|i| {
            i.iter()
                .find(|g| g["metadata"]["name"] == "ref.example.org")
        })
        .expect("the CRD's group");
    assert_eq!(widgets["versions"][0]["version"], "v1");
    assert_eq!(
        widgets["versions"][0]["resources"][0]["resource"],
        "widgets"
    );
    assert_eq!(
        widgets["versions"][0]["resources"][0]["subresources"][0]["subresource"],
        "status"
    );
    // Without the aggregated media type: the plain APIGroupList.
    let (_, plain) = raw(&client, "GET", "/apis", None, vec![]).await;
    assert_eq!(plain["kind"], "APIGroupList");
}
