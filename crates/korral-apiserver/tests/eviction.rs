//! `pods/eviction` honours PodDisruptionBudgets as upstream decides it: from the budget's
//! status, which the server's disruption controller keeps current (429 when it allows no
//! disruption; unready pods by the budget's `unhealthyPodEvictionPolicy`); `pods/binding`
//! assigns a node once.

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
    labelled_pod(env, "default", name, json!({"app": "web"}), true).await;
}

/// Creates `pod` in `namespace`, then writes `status` through `/status` (a new Pod's status is
/// the server's, as a kubelet's writes come after the create).
async fn create_with_status(env: &TestEnv, namespace: &str, pod: Value, status: Value) {
    let path = format!("/api/v1/namespaces/{namespace}/pods");
    let (code, mut created) = send(env, "POST", &path, Some(pod)).await;
    assert_eq!(code, 201, "{created}");
    created["status"] = status;
    let name = created["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (code, body) = send(env, "PUT", &format!("{path}/{name}/status"), Some(created)).await;
    assert_eq!(code, 200, "{body}");
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
    // Deleted gracefully: no kubelet runs node-1, so the pod stays terminating.
    let (code, evicted) = send(&env, "GET", &format!("{PODS}/web-1"), None).await;
    assert_eq!(code, 200, "{evicted}");
    assert!(
        evicted["metadata"]["deletionTimestamp"].is_string(),
        "the evicted pod is terminating: {evicted}"
    );
    assert_eq!(evicted["metadata"]["deletionGracePeriodSeconds"], 30);
    // The eviction spent the budget's one disruption in its status at once.
    let (_, b) = send(&env, "GET", &format!("{budgets}/pdb"), None).await;
    assert_eq!(b["status"]["disruptionsAllowed"], 0, "{b}");
    assert_eq!(
        b["status"]["conditions"][0]["reason"], "InsufficientPods",
        "{b}"
    );
    wait_until(WAIT, "the controller counts the pod gone", || async {
        let (_, b) = send(&env, "GET", &format!("{budgets}/pdb"), None).await;
        b["status"]["currentHealthy"] == 1
    })
    .await
    .expect("status");

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
        // Evictions decide from the budget's status: wait for it to count the round's pods.
        wait_until(WAIT, "the budget sees the round's pods", || async {
            let (_, b) = send(&env, "GET", &format!("{budgets}/pdb"), None).await;
            b["status"]["currentHealthy"] == PODS_PER_ROUND
                && b["status"]["disruptionsAllowed"] == 1
        })
        .await
        .expect("status");
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
        // The evicted pod is terminating (no kubelet runs node-1 to remove it).
        let left = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["metadata"].get("deletionTimestamp").is_none())
            .count();
        assert_eq!(left, PODS_PER_ROUND - 1, "round {round}");
        // Clear the round's pods for the next one (at once: no kubelet would).
        for name in &names {
            send(
                &env,
                "DELETE",
                &format!("{PODS}/{name}?gracePeriodSeconds=0"),
                None,
            )
            .await;
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

/// A pod labelled `labels`, Ready or not, in `namespace`.
async fn labelled_pod(env: &TestEnv, namespace: &str, name: &str, labels: Value, ready: bool) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]}});
    let status = json!({"phase": "Running",
        "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]});
    create_with_status(env, namespace, pod, status).await;
}

/// Creates a budget in `namespace` and waits until its status is current with `settled`.
async fn settled_budget(
    env: &TestEnv,
    namespace: &str,
    budget: Value,
    settled: fn(&Value) -> bool,
) {
    let budgets = format!("/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets");
    let name = budget["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let (code, body) = send(env, "POST", &budgets, Some(budget)).await;
    assert_eq!(code, 201, "{body}");
    wait_until(WAIT, "the budget's status", || async {
        let (_, b) = send(env, "GET", &format!("{budgets}/{name}"), None).await;
        b["status"]["observedGeneration"] == b["metadata"]["generation"] && settled(&b["status"])
    })
    .await
    .expect("status");
}

async fn evict_in(env: &TestEnv, namespace: &str, name: &str) -> (u16, Value) {
    let path = format!("/api/v1/namespaces/{namespace}/pods/{name}/eviction");
    send(env, "POST", &path, Some(eviction(name))).await
}

async fn namespace(env: &TestEnv, name: &str) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    let (code, body) = send(env, "POST", "/api/v1/namespaces", Some(ns)).await;
    assert_eq!(code, 201, "{body}");
}

#[tokio::test]
async fn unready_pods_go_by_the_unhealthy_pod_eviction_policy() {
    let env = TestEnv::builder()
        .simulation(false)
        .start()
        .await
        .expect("env");
    // Two pods, one of them unready, under a budget needing both: none may be disrupted.
    for (ns, policy) in [("default-policy", None), ("always", Some("AlwaysAllow"))] {
        namespace(&env, ns).await;
        labelled_pod(&env, ns, "well", json!({"app": "web"}), true).await;
        labelled_pod(&env, ns, "sick", json!({"app": "web"}), false).await;
        let mut spec = json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}});
        if let Some(policy) = policy {
            spec["unhealthyPodEvictionPolicy"] = json!(policy);
        }
        settled_budget(
            &env,
            ns,
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "pdb"}, "spec": spec}),
            |s| s["currentHealthy"] == 1 && s["desiredHealthy"] == 2,
        )
        .await;
    }
    // IfHealthyBudget (the default): the budget is not satisfied, so the unready pod stays.
    let (code, refused) = evict_in(&env, "default-policy", "sick").await;
    assert_eq!(code, 429, "{refused}");
    assert_eq!(
        refused["details"]["causes"][0]["message"],
        "The disruption budget pdb needs 2 healthy pods and has 1 currently"
    );
    // AlwaysAllow: the unready pod goes, spending nothing; the ready one is still guarded.
    let (code, body) = evict_in(&env, "always", "sick").await;
    assert_eq!(code, 201, "{body}");
    let (code, refused) = evict_in(&env, "always", "well").await;
    assert_eq!(code, 429, "{refused}");
}

#[tokio::test]
async fn budgets_guard_the_pods_their_selector_selects() {
    let env = TestEnv::builder()
        .simulation(false)
        .start()
        .await
        .expect("env");
    // policy/v1: an empty selector selects every pod of the namespace.
    namespace(&env, "everything").await;
    labelled_pod(&env, "everything", "a", json!({"x": "y"}), true).await;
    settled_budget(
        &env,
        "everything",
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "all"}, "spec": {"maxUnavailable": 0, "selector": {}}}),
        |s| s["currentHealthy"] == 1,
    )
    .await;
    let (code, refused) = evict_in(&env, "everything", "a").await;
    assert_eq!(code, 429, "{refused}");
    // No selector selects nothing.
    namespace(&env, "nothing").await;
    labelled_pod(&env, "nothing", "a", json!({"x": "y"}), true).await;
    settled_budget(
        &env,
        "nothing",
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "none"}, "spec": {"maxUnavailable": 0}}),
        |s| s["expectedPods"] == 0,
    )
    .await;
    let (code, body) = evict_in(&env, "nothing", "a").await;
    assert_eq!(code, 201, "{body}");
    // Two budgets over one pod: upstream's 500 Status, without a reason.
    labelled_pod(&env, "everything", "b", json!({"x": "y"}), true).await;
    settled_budget(
        &env,
        "everything",
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "xy"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"x": "y"}}}}),
        |s| s["currentHealthy"] == 2,
    )
    .await;
    let (code, body) = evict_in(&env, "everything", "b").await;
    assert_eq!(code, 500, "{body}");
    assert!(body.get("reason").is_none(), "{body}");
    assert_eq!(
        body["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
}
