//! `pods/eviction` honours PodDisruptionBudgets (429 as upstream when a budget would be
//! violated), whose status the server keeps current; `pods/binding` assigns a node once.

mod common;

use common::*;
use serde_json::{Value, json};

/// A request through a client that does not retry 429s by itself (kube-rs's default client
/// does, for minutes, as it would against a real cluster).
async fn send(env: &TestEnv, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(env.kubeconfig_path()).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    let content_type = body.as_ref().map(|_| "application/json");
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    raw(&client, method, path, content_type, bytes).await
}

const PODS: &str = "/api/v1/namespaces/default/pods";

async fn ready_pod(env: &TestEnv, name: &str) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
    let (code, body) = send(env, "POST", PODS, Some(pod)).await;
    assert_eq!(code, 201, "{body}");
}

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
}

#[tokio::test]
async fn evictions_respect_disruption_budgets() {
    let env = TestEnv::builder()
        .simulation(false)
        .start()
        .await
        .expect("env");
    ready_pod(&env, "web-1").await;
    ready_pod(&env, "web-2").await;
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    let budgets = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let (code, body) = send(&env, "POST", budgets, Some(pdb)).await;
    assert_eq!(code, 201, "{body}");
    wait_until(WAIT, "the budget's status", || async {
        let (_, b) = send(&env, "GET", &format!("{budgets}/pdb"), None).await;
        b["status"]["disruptionsAllowed"] == 1 && b["status"]["currentHealthy"] == 2
    })
    .await
    .expect("status");
    let (_, b) = send(&env, "GET", &format!("{budgets}/pdb"), None).await;
    assert_eq!(b["status"]["desiredHealthy"], 1);
    assert_eq!(b["status"]["expectedPods"], 2);
    assert_eq!(b["status"]["conditions"][0]["reason"], "SufficientPods");

    let (code, body) = send(
        &env,
        "POST",
        &format!("{PODS}/web-1/eviction"),
        Some(eviction("web-1")),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"], "Success");
    let (code, _) = send(&env, "GET", &format!("{PODS}/web-1"), None).await;
    assert_eq!(code, 404, "the evicted pod is gone");

    let (code, refused) = send(
        &env,
        "POST",
        &format!("{PODS}/web-2/eviction"),
        Some(eviction("web-2")),
    )
    .await;
    assert_eq!(code, 429, "{refused}");
    assert_eq!(refused["reason"], "TooManyRequests");
    assert_eq!(
        refused["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        refused["details"]["causes"][0]["reason"],
        "DisruptionBudget"
    );
    assert_eq!(
        refused["details"]["causes"][0]["message"],
        "The disruption budget pdb needs 1 healthy pods and has 1 currently"
    );
    let (code, _) = send(&env, "GET", &format!("{PODS}/web-2"), None).await;
    assert_eq!(code, 200, "a refused eviction deletes nothing");

    // The subresources are discovered as upstream lists them.
    let (_, core) = send(&env, "GET", "/api/v1", None).await;
    let eviction_entry = core["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["name"] == "pods/eviction")
        .cloned()
        .expect("pods/eviction");
    assert_eq!(eviction_entry["group"], "policy");
    assert_eq!(eviction_entry["kind"], "Eviction");
    assert_eq!(eviction_entry["verbs"], json!(["create"]));

    // A missing pod: 404.
    let (code, _) = send(
        &env,
        "POST",
        &format!("{PODS}/nope/eviction"),
        Some(eviction("nope")),
    )
    .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn bindings_assign_a_node_once() {
    let env = TestEnv::builder()
        .simulation(false)
        .start()
        .await
        .expect("env");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let (code, body) = send(&env, "POST", PODS, Some(pod)).await;
    assert_eq!(code, 201, "{body}");
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
    let (code, body) = send(
        &env,
        "POST",
        &format!("{PODS}/p/binding"),
        Some(binding.clone()),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (_, p) = send(&env, "GET", &format!("{PODS}/p"), None).await;
    assert_eq!(p["spec"]["nodeName"], "node-1");
    let (code, body) = send(&env, "POST", &format!("{PODS}/p/binding"), Some(binding)).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node-1\""
    );
}

#[tokio::test]
async fn concurrent_evictions_spend_an_allowed_disruption_once() {
    // On durable storage (as `korral up` runs), where a delete takes an fsync to land: the
    // window in which another eviction could read the budget's pods unchanged.
    let dir = tempfile::tempdir().expect("tempdir");
    let env = TestEnv::builder()
        .server_config(korral_apiserver::ServerConfig::durable(
            dir.path().join("data"),
        ))
        .simulation(false)
        .start()
        .await
        .expect("env");
    const PODS_PER_ROUND: usize = 6;
    let budgets = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "pdb"},
        "spec": {"minAvailable": PODS_PER_ROUND - 1, "selector": {"matchLabels": {"app": "web"}}}});
    let (code, body) = send(&env, "POST", budgets, Some(pdb)).await;
    assert_eq!(code, 201, "{body}");
    for round in 0..5 {
        let names: Vec<String> = (0..PODS_PER_ROUND)
            .map(|i| format!("web-{round}-{i}"))
            .collect();
        for name in &names {
            ready_pod(&env, name).await;
        }
        // `kubectl drain` evicts every pod of the node at once.
        let answers = futures::future::join_all(names.iter().map(|name| {
            let path = format!("{PODS}/{name}/eviction");
            let env = &env;
            async move { send(env, "POST", &path, Some(eviction(name))).await }
        }))
        .await;
        let codes: Vec<u16> = answers.iter().map(|(code, _)| *code).collect();
        assert_eq!(
            codes.iter().filter(|c| **c == 201).count(),
            1,
            "round {round}: one eviction allowed, the others refused: {answers:?}"
        );
        assert!(codes.iter().all(|c| *c == 201 || *c == 429), "{answers:?}");
        let (_, list) = send(
            &env,
            "GET",
            &format!("{PODS}?labelSelector=app%3Dweb"),
            None,
        )
        .await;
        let left = list["items"].as_array().map_or(0, Vec::len);
        assert_eq!(left, PODS_PER_ROUND - 1, "round {round}");
        // Clear the round's pods for the next one.
        for name in &names {
            send(&env, "DELETE", &format!("{PODS}/{name}"), None).await;
        }
    }
    // A dry-run eviction decides but records nothing and deletes nothing.
    for i in 0..PODS_PER_ROUND {
        ready_pod(&env, &format!("web-{}", (b'a' + i as u8) as char)).await;
    }
    wait_until(WAIT, "the budget sees the pods", || async {
        let (_, b) = send(&env, "GET", &format!("{budgets}/pdb"), None).await;
        b["status"]["currentHealthy"] == PODS_PER_ROUND && b["status"]["disruptionsAllowed"] == 1
    })
    .await
    .expect("status");
    let (code, body) = send(
        &env,
        "POST",
        &format!("{PODS}/web-a/eviction?dryRun=All"),
        Some(eviction("web-a")),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (_, b) = send(&env, "GET", &format!("{budgets}/pdb"), None).await;
    assert!(b["status"].get("disruptedPods").is_none(), "{b}");
    let (code, _) = send(&env, "GET", &format!("{PODS}/web-a"), None).await;
    assert_eq!(code, 200);
    // So does one asked for in the Eviction's deleteOptions (`kubectl drain --dry-run=server`),
    // every time: no disruption is spent.
    for _ in 0..2 {
        let mut dry = eviction("web-b");
        dry["deleteOptions"] = json!({"dryRun": ["All"]});
        let (code, body) = send(&env, "POST", &format!("{PODS}/web-b/eviction"), Some(dry)).await;
        assert_eq!(code, 201, "{body}");
    }
    let (_, b) = send(&env, "GET", &format!("{budgets}/pdb"), None).await;
    assert!(b["status"].get("disruptedPods").is_none(), "{b}");
    let (code, _) = send(&env, "GET", &format!("{PODS}/web-b"), None).await;
    assert_eq!(code, 200);
}
