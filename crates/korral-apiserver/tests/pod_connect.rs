//! Connect subresources and top-level `bindings`: `pods/log` answers as upstream's `LogREST`
//! with the kubelet's answers for the simulated containers (kube-rs `Api::logs` and
//! `log_stream`), `exec`/`attach`/`portforward`/`proxy` refuse as upstream does without a
//! reachable node, discovery lists them as the v1.36 capture does, and a `Binding` posted to
//! the collection binds the pod it names.

mod common;

use std::time::Duration;

use common::*;
use futures::AsyncBufReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, LogParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);
const PODS: &str = "/api/v1/namespaces/default/pods";

fn pod(name: &str, containers: &[&str]) -> Pod {
    let containers: Vec<Value> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "busybox"}))
        .collect();
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"containers": containers}}))
        .expect("pod")
}

/// A client of `env` that does not retry 503 answers (kube-rs retries them by default).
async fn no_retry_client(env: &TestEnv) -> kube::Client {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(env.kubeconfig_path()).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

#[tokio::test]
async fn logs_of_unscheduled_pods_are_empty_and_options_checked() {
    let env = TestEnv::start().await.expect("env");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods.create(&PostParams::default(), &pod("two", &["app", "side"]))
        .await
        .expect("create");

    // Two containers and none named: upstream's 400 listing them.
    let (code, body) = call(&env, "GET", &format!("{PODS}/two/log"), None).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "a container name must be specified for pod two, choose one of: [app side]"
    );
    let (code, body) = call(&env, "GET", &format!("{PODS}/two/log?container=nope"), None).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["message"], "container nope is not valid for pod two");

    // Without a node the log is empty (upstream streams nothing).
    let text = pods
        .logs(
            "two",
            &LogParams {
                container: Some("app".into()),
                ..LogParams::default()
            },
        )
        .await
        .expect("log");
    assert_eq!(text, "");

    // Options are validated as upstream's ValidatePodLogOptions.
    let (code, body) = call(
        &env,
        "GET",
        &format!("{PODS}/two/log?container=app&tailLines=-3"),
        None,
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "PodLogOptions \"two\" is invalid: tailLines: Invalid value: -3: must be greater than or equal to 0"
    );
    let (code, _) = call(&env, "GET", &format!("{PODS}/missing/log"), None).await;
    assert_eq!(code, 404);
    let (code, _) = call(&env, "POST", &format!("{PODS}/two/log"), Some(&json!({}))).await;
    assert_eq!(code, 405);

    // exec, attach and port-forward need a node: upstream's 400.
    for sub in [
        "exec?container=app&command=ls",
        "attach?container=app",
        "portforward",
    ] {
        let (code, body) = call(&env, "POST", &format!("{PODS}/two/{sub}"), Some(&json!({}))).await;
        assert_eq!(code, 400, "{sub}: {body}");
        assert_eq!(
            body["message"], "pod two does not have a host assigned",
            "{sub}"
        );
    }
    let (code, body) = call(&env, "GET", &format!("{PODS}/two/proxy/healthz"), None).await;
    assert_eq!(code, 400, "{body}");
    // A service without endpoints: upstream's 503 (asked without the client's retries of 503).
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "lonely"},
                         "spec": {"ports": [{"port": 80}]}});
    create_ok(&env, "/api/v1/namespaces/default/services", &service).await;
    let once = no_retry_client(&env).await;
    let (code, body) = raw(
        &once,
        "GET",
        "/api/v1/namespaces/default/services/lonely/proxy/healthz",
        None,
        vec![],
    )
    .await;
    assert_eq!(code, 503, "{body}");
    assert_eq!(
        body["message"],
        "no endpoints available for service \"lonely\""
    );
}

#[tokio::test]
async fn bindings_collection_binds_the_named_pod() {
    let env = TestEnv::start().await.expect("env");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods.create(&PostParams::default(), &pod("web", &["app"]))
        .await
        .expect("create");
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"}});
    let bindings = "/api/v1/namespaces/default/bindings";
    let (code, body) = call(&env, "POST", bindings, Some(&binding)).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"], "Success");
    let bound = pods.get("web").await.expect("get");
    assert_eq!(
        bound.spec.and_then(|s| s.node_name).as_deref(),
        Some("node-a")
    );
    // Bound once: upstream's 409.
    let (code, body) = call(&env, "POST", bindings, Some(&binding)).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"node-a\""
    );
    // The Binding names a pod; nothing is stored and nothing listed.
    let (code, body) = call(
        &env,
        "POST",
        bindings,
        Some(&json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {}, "target": {"name": "node-a"}})),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let (code, _) = call(&env, "GET", bindings, None).await;
    assert_eq!(code, 405);

    // Now on a node without a running container: the kubelet's "waiting to start".
    let (code, body) = call(&env, "GET", &format!("{PODS}/web/log"), None).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "container \"app\" in pod \"web\" is waiting to start: ContainerCreating"
    );
    let (code, body) = call(
        &env,
        "POST",
        &format!("{PODS}/web/exec?command=ls"),
        Some(&json!({})),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("node \"node-a\" runs no kubelet")),
        "{body}"
    );
}

#[tokio::test]
async fn discovery_lists_connect_subresources_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let (code, doc) = call(&env, "GET", "/api/v1", None).await;
    assert_eq!(code, 200);
    let captured: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/discovery-core-v1-connect.json"
        ))
        .expect("fixture"),
    )
    .expect("json");
    let pick = |doc: &Value| -> Vec<Value> {
        doc["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| {
                let name = r["name"].as_str().unwrap_or("");
                name == "bindings"
                    || name.starts_with("pods")
                    || name.ends_with("/proxy")
            })
            .map(|r| json!({"name": r["name"], "kind": r["kind"], "verbs": r["verbs"],
                            "namespaced": r["namespaced"], "storageVersionHash": r["storageVersionHash"]}))
            .collect()
    };
    assert_eq!(pick(&doc), pick(&captured));
}

#[tokio::test]
async fn simulated_running_containers_have_empty_followable_logs() {
    let env = TestEnv::builder()
        .simulation(true)
        .start()
        .await
        .expect("env");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods.create(&PostParams::default(), &pod("runner", &["app"]))
        .await
        .expect("create");
    wait_until(WAIT, "the container runs", || {
        let pods = pods.clone();
        async move {
            pods.get("runner").await.ok().is_some_and(|p| {
                p.status
                    .and_then(|s| s.container_statuses)
                    .is_some_and(|s| {
                        s.iter()
                            .any(|c| c.state.as_ref().is_some_and(|st| st.running.is_some()))
                    })
            })
        }
    })
    .await
    .expect("running");
    assert_eq!(
        pods.logs("runner", &LogParams::default())
            .await
            .expect("log"),
        ""
    );
    let (code, body) = call(
        &env,
        "GET",
        &format!("{PODS}/runner/log?previous=true"),
        None,
    )
    .await;
    assert_eq!(code, 400, "{body}");

    // A followed log stays open while the container runs and ends when the pod goes.
    let mut lines = pods
        .log_stream(
            "runner",
            &LogParams {
                follow: true,
                ..LogParams::default()
            },
        )
        .await
        .expect("follow")
        .lines();
    // Still open while the container runs (a closed stream would answer at once).
    let open = tokio::time::timeout(
        Duration::from_millis(300),
        futures::StreamExt::next(&mut lines),
    )
    .await;
    assert!(open.is_err(), "the followed log ended early: {open:?}");
    pods.delete("runner", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete");
    let end = tokio::time::timeout(WAIT, futures::StreamExt::next(&mut lines))
        .await
        .expect("the followed log ends");
    assert!(end.is_none(), "no output: {end:?}");
}

/// A Service with ready endpoints and a node: the proxies have nothing to reach, and say so
/// with a 400 (not upstream's answer of the backend, which Korral cannot reach).
#[tokio::test]
async fn proxies_to_reachable_services_and_nodes_name_what_is_missing() {
    let env = TestEnv::start().await.expect("env");
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                         "spec": {"ports": [{"port": 80}]}});
    create_ok(&env, "/api/v1/namespaces/default/services", &service).await;
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
                           "subsets": [{"addresses": [{"ip": "10.244.0.9"}], "ports": [{"port": 80}]}]});
    create_ok(&env, "/api/v1/namespaces/default/endpoints", &endpoints).await;
    let (code, body) = call(
        &env,
        "GET",
        "/api/v1/namespaces/default/services/web/proxy/healthz",
        None,
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "service \"web\" has endpoints, but korral-apiserver has no pod network to reach them"
    );
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
    create_ok(&env, "/api/v1/nodes", &node).await;
    let (code, body) = call(&env, "GET", "/api/v1/nodes/n1/proxy/metrics", None).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(
        body["message"],
        "node \"n1\" runs no kubelet korral-apiserver can reach (the embedded control plane simulates nodes)"
    );
    let (code, _) = call(&env, "GET", "/api/v1/nodes/missing/proxy/metrics", None).await;
    assert_eq!(code, 404);
}
