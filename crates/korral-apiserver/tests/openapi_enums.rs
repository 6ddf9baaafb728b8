//! The enumerated fields of the built-in kinds in the served OpenAPI documents, as upstream
//! publishes them: `enum` (sorted) and the "Possible enum values" paragraph of the description,
//! in `/openapi/v3/...`, `/openapi/v2` and its protobuf form.

mod common;

use common::*;
use serde_json::{Value, json};

/// The v3 document of a group version, found through the `/openapi/v3` index.
async fn v3(client: &kube::Client, path: &str) -> Value {
    let (status, index) = raw(client, "GET", "/openapi/v3", None, vec![]).await;
    assert_eq!(status, 200);
    let url = index["paths"][path]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{path} listed in {index}"))
        .to_string();
    let (status, doc) = raw(client, "GET", &url, None, vec![]).await;
    assert_eq!(status, 200);
    doc
}

fn property<'a>(schemas: &'a Value, model: &str, name: &str) -> &'a Value {
    &schemas[model]["properties"][name]
}

#[tokio::test]
async fn v3_documents_publish_enum_values() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();

    let core = v3(&client, "api/v1").await;
    let schemas = &core["components"]["schemas"];
    let restart = property(schemas, "io.k8s.api.core.v1.PodSpec", "restartPolicy");
    assert_eq!(restart["enum"], json!(["Always", "Never", "OnFailure"]));
    assert!(
        restart["description"].as_str().is_some_and(|d| d.ends_with(
            "\n\nPossible enum values:\n - `\"Always\"`\n - `\"Never\"`\n - `\"OnFailure\"`"
        )),
        "{restart}"
    );
    assert_eq!(
        property(schemas, "io.k8s.api.core.v1.PodSpec", "dnsPolicy")["enum"],
        json!(["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"])
    );
    assert_eq!(
        property(schemas, "io.k8s.api.core.v1.Container", "imagePullPolicy")["enum"],
        json!(["Always", "IfNotPresent", "Never"])
    );
    assert_eq!(
        property(schemas, "io.k8s.api.core.v1.ServiceSpec", "type")["enum"],
        json!(["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"])
    );
    assert_eq!(
        property(schemas, "io.k8s.api.core.v1.ServicePort", "protocol")["enum"],
        json!(["SCTP", "TCP", "UDP"])
    );
    assert_eq!(
        property(schemas, "io.k8s.api.core.v1.Toleration", "effect")["enum"],
        json!(["NoExecute", "NoSchedule", "PreferNoSchedule"])
    );
    // A list of an enum type carries the values on its items.
    let modes = property(
        schemas,
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
        "accessModes",
    );
    assert_eq!(
        modes["items"]["enum"],
        json!([
            "ReadOnlyMany",
            "ReadWriteMany",
            "ReadWriteOnce",
            "ReadWriteOncePod"
        ])
    );

    // Other groups: the enums of their own models, and of the core models they embed.
    let apps = v3(&client, "apis/apps/v1").await;
    let schemas = &apps["components"]["schemas"];
    assert_eq!(
        property(schemas, "io.k8s.api.apps.v1.DeploymentStrategy", "type")["enum"],
        json!(["Recreate", "RollingUpdate"])
    );
    assert_eq!(
        property(
            schemas,
            "io.k8s.api.apps.v1.StatefulSetSpec",
            "podManagementPolicy"
        )["enum"],
        json!(["OrderedReady", "Parallel"])
    );
    assert_eq!(
        property(schemas, "io.k8s.api.core.v1.PodSpec", "restartPolicy")["enum"],
        json!(["Always", "Never", "OnFailure"])
    );
    let batch = v3(&client, "apis/batch/v1").await;
    let schemas = &batch["components"]["schemas"];
    assert_eq!(
        property(
            schemas,
            "io.k8s.api.batch.v1.CronJobSpec",
            "concurrencyPolicy"
        )["enum"],
        json!(["Allow", "Forbid", "Replace"])
    );
    assert_eq!(
        property(
            schemas,
            "io.k8s.api.batch.v1.PodFailurePolicyRule",
            "action"
        )["enum"],
        json!(["Count", "FailIndex", "FailJob", "Ignore"])
    );
    let networking = v3(&client, "apis/networking.k8s.io/v1").await;
    assert_eq!(
        property(
            &networking["components"]["schemas"],
            "io.k8s.api.networking.v1.HTTPIngressPath",
            "pathType"
        )["enum"],
        json!(["Exact", "ImplementationSpecific", "Prefix"])
    );
    let policy = v3(&client, "apis/policy/v1").await;
    assert_eq!(
        property(
            &policy["components"]["schemas"],
            "io.k8s.api.policy.v1.PodDisruptionBudgetSpec",
            "unhealthyPodEvictionPolicy"
        )["enum"],
        json!(["AlwaysAllow", "IfHealthyBudget"])
    );
    let storage = v3(&client, "apis/storage.k8s.io/v1").await;
    assert_eq!(
        property(
            &storage["components"]["schemas"],
            "io.k8s.api.storage.v1.StorageClass",
            "volumeBindingMode"
        )["enum"],
        json!(["Immediate", "WaitForFirstConsumer"])
    );
    let scheduling = v3(&client, "apis/scheduling.k8s.io/v1").await;
    assert_eq!(
        property(
            &scheduling["components"]["schemas"],
            "io.k8s.api.scheduling.v1.PriorityClass",
            "preemptionPolicy"
        )["enum"],
        json!(["Never", "PreemptLowerPriority"])
    );
    // A field that is no enum upstream stays without one.
    assert!(
        property(
            &apps["components"]["schemas"],
            "io.k8s.api.apps.v1.DeploymentSpec",
            "replicas"
        )
        .get("enum")
        .is_none()
    );
}

#[tokio::test]
async fn v2_document_and_its_protobuf_publish_enum_values() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (status, v2) = raw(&client, "GET", "/openapi/v2", None, vec![]).await;
    assert_eq!(status, 200);
    let definitions = &v2["definitions"];
    let restart = property(definitions, "io.k8s.api.core.v1.PodSpec", "restartPolicy");
    assert_eq!(restart["enum"], json!(["Always", "Never", "OnFailure"]));
    assert!(
        restart["description"]
            .as_str()
            .is_some_and(|d| d.contains("Possible enum values:\n - `\"Always\"`")),
        "{restart}"
    );
    assert_eq!(
        property(
            definitions,
            "io.k8s.api.apps.v1.StatefulSetUpdateStrategy",
            "type"
        )["enum"],
        json!(["OnDelete", "RollingUpdate"])
    );
    assert_eq!(
        property(definitions, "io.k8s.api.core.v1.ServiceSpec", "ipFamilies")["items"]["enum"],
        json!(["", "IPv4", "IPv6"])
    );

    // The protobuf form (what kubectl 1.27 asks for) carries the same text.
    let request = http::Request::builder()
        .method("GET")
        .uri("/openapi/v2")
        .header(
            "accept",
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        )
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
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("Possible enum values:\n - `\"Always\"`\n - `\"Never\"`\n - `\"OnFailure\"`")
    );
    assert!(text.contains("Possible enum values:\n - `\"Immediate\"`"));
}
