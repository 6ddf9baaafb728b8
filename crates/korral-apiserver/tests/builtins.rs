//! Built-in kinds: defaults, the scale subresource, Service cluster IPs, discovery.

mod common;

use common::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}
            }
        }
    }))
    .expect("deployment")
}

#[tokio::test]
async fn deployments_get_defaults_and_scale() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    let created = api
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .expect("create");
    let spec = created.spec;
    assert_eq!(spec.revision_history_limit, Some(10));
    assert_eq!(spec.progress_deadline_seconds, Some(600));
    let container = &spec.template.spec.expect("pod spec").containers[0];
    assert_eq!(container.image_pull_policy.as_deref(), Some("IfNotPresent"));
    assert_eq!(
        container.termination_message_path.as_deref(),
        Some("/dev/termination-log")
    );
    assert_eq!(created.metadata.generation, Some(1));

    let scale = api.get_scale("web").await.expect("scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(2));
    assert_eq!(
        scale.status.and_then(|s| s.selector).as_deref(),
        Some("app=web")
    );
    let scaled = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("patch scale");
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(5));
    let after = api.get("web").await.expect("get");
    assert_eq!(after.spec.replicas, Some(5));
    assert_eq!(
        after.metadata.generation,
        Some(2),
        "scaling changes the spec"
    );
    let err = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": -1}})),
        )
        .await
        .expect_err("negative");
    assert_eq!(code(err), 422);
}

#[tokio::test]
async fn services_get_a_cluster_ip_that_updates_keep() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<Service> = Api::namespaced(env.client(), "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "svc"},
        "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]}
    }))
    .expect("svc");
    let created = api
        .create(&PostParams::default(), &svc)
        .await
        .expect("create");
    let spec = created.spec.expect("spec");
    let ip = spec.cluster_ip.clone().expect("cluster ip");
    assert!(ip.starts_with("10.9") || ip.starts_with("10.1"), "{ip}");
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    let port = &spec.ports.expect("ports")[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    // A second service gets another address.
    let mut other = svc.clone();
    other.metadata.name = Some("svc2".into());
    let ip2 = api
        .create(&PostParams::default(), &other)
        .await
        .expect("create")
        .spec
        .and_then(|s| s.cluster_ip)
        .expect("ip");
    assert_ne!(ip, ip2);
    // Replacing without the IP keeps it.
    let mut replaced = svc.clone();
    replaced.metadata.resource_version = None;
    let updated = api
        .replace("svc", &PostParams::default(), &replaced)
        .await
        .expect("replace");
    assert_eq!(updated.spec.and_then(|s| s.cluster_ip), Some(ip.clone()));
    // Services are selectable by `spec.clusterIP` and `spec.type`, as upstream's.
    let by_ip = api
        .list(&kube::api::ListParams::default().fields(&format!("spec.clusterIP={ip}")))
        .await
        .expect("list by clusterIP");
    let names: Vec<_> = by_ip
        .items
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    assert_eq!(names, vec!["svc".to_string()]);
    let by_type = api
        .list(
            &kube::api::ListParams::default()
                .fields("spec.type=ClusterIP,metadata.name!=kubernetes"),
        )
        .await
        .expect("list by type");
    assert_eq!(by_type.items.len(), 2);
    let none = api
        .list(&kube::api::ListParams::default().fields("spec.type=NodePort"))
        .await
        .expect("list NodePort");
    assert!(none.items.is_empty());
}

#[tokio::test]
async fn discovery_and_openapi_documents() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (status, core) = raw(&client, "GET", "/api/v1", None, vec![]).await;
    assert_eq!(status, 200);
    let pods = core["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["name"] == "pods")
        .cloned()
        .expect("pods");
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    let (_, apps) = raw(&client, "GET", "/apis/apps/v1", None, vec![]).await;
    let names: Vec<&str> = apps["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for expected in [
        "deployments",
        "deployments/status",
        "deployments/scale",
        "statefulsets",
        "daemonsets",
        "replicasets",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let (status, version) = raw(&client, "GET", "/version", None, vec![]).await;
    assert_eq!(status, 200);
    assert!(
        version["gitVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("v1.36."))
    );
    // The fields of the v1.36 capture (`k8s-reference/version.json`), without emulation.
    for (field, want) in [
        ("major", "1"),
        ("minor", "36"),
        ("emulationMajor", "1"),
        ("emulationMinor", "36"),
        ("minCompatibilityMajor", "1"),
        ("minCompatibilityMinor", "35"),
    ] {
        assert_eq!(version[field], want, "{field}: {version}");
    }
    let (status, index) = raw(&client, "GET", "/openapi/v3", None, vec![]).await;
    assert_eq!(status, 200);
    assert!(
        index["paths"]["apis/apps/v1"]["serverRelativeURL"].is_string(),
        "{index}"
    );
    let (status, v2) = raw(&client, "GET", "/openapi/v2", None, vec![]).await;
    assert_eq!(status, 200);
    assert_eq!(v2["swagger"], "2.0");
    for group in [
        "batch",
        "coordination.k8s.io",
        "rbac.authorization.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
    ] {
        let (status, _) = raw(&client, "GET", &format!("/apis/{group}"), None, vec![]).await;
        assert_eq!(status, 200, "{group}");
    }
    let (status, _) = raw(&client, "GET", "/readyz", None, vec![]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn the_kubernetes_service_is_served_on_the_first_service_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    // Twice on one data directory: the second server listens on another free port and the
    // Service follows it.
    for _ in 0..2 {
        let env = TestEnv::builder()
            .server_config(korral_apiserver::ServerConfig::durable(&data))
            .start()
            .await
            .expect("env");
        let port = env.server().addr().port();
        let api: Api<Service> = Api::namespaced(env.client(), "default");
        let svc = serde_json::to_value(api.get("kubernetes").await.expect("kubernetes service"))
            .expect("json");
        assert_eq!(
            svc["metadata"]["labels"],
            json!({"component": "apiserver", "provider": "kubernetes"})
        );
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
        assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.0.1"]));
        assert_eq!(svc["spec"].get("selector"), None);
        assert_eq!(
            svc["spec"]["ports"],
            json!([{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}])
        );
        // Nobody else gets its address.
        let taken: Service = serde_json::from_value(json!({
            "metadata": {"name": "impostor"},
            "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 80}]}
        }))
        .expect("svc");
        let err = api
            .create(&PostParams::default(), &taken)
            .await
            .expect_err("10.96.0.1 is taken");
        assert_eq!(code(err), 422);
        // Its endpoints name the server's port and (the server being bound to loopback, which
        // endpoints may not hold) the simulated node's address, as upstream's endpoint
        // reconciler writes them; they follow the port across restarts.
        let client = env.client();
        let get = |path: &'static str| {
            let client = client.clone();
            async move {
                let (status, body) = raw(&client, "GET", path, None, vec![]).await;
                assert_eq!(status, 200, "{path}: {body}");
                body
            }
        };
        let endpoints = get("/api/v1/namespaces/default/endpoints/kubernetes").await;
        assert_eq!(
            endpoints["metadata"]["labels"],
            json!({"endpointslice.kubernetes.io/skip-mirror": "true"})
        );
        assert_eq!(
            endpoints["subsets"],
            json!([{"addresses": [{"ip": "172.18.0.2"}],
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}])
        );
        let slice =
            get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes").await;
        assert_eq!(
            slice["metadata"]["labels"],
            json!({"kubernetes.io/service-name": "kubernetes"})
        );
        assert_eq!(slice["addressType"], "IPv4");
        assert_eq!(
            slice["endpoints"],
            json!([{"addresses": ["172.18.0.2"], "conditions": {"ready": true}}])
        );
        assert_eq!(
            slice["ports"],
            json!([{"name": "https", "port": port, "protocol": "TCP"}])
        );
        env.shutdown().await;
    }
}
