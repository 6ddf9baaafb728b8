//! Pods no kubelet will finish, and Pods slow to finish, in the workload simulation: the pod
//! garbage collector (upstream's `podgc`) fails and force-deletes Pods bound to a missing
//! Node, unscheduled Pods being deleted, and Pods being deleted on an out-of-service Node;
//! ResourceQuota stops charging a Pod once its deletion time plus grace has passed; and a
//! container annotated with `korral.dev/stop-seconds` takes that long to stop on SIGTERM, or
//! is killed (137) when the grace period ends.

mod common;

use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod, ResourceQuota};
use korral_apiserver::ServerConfig;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// How long a test waits for the simulation.
const WAIT: Duration = Duration::from_secs(30);
/// The pod garbage collector's quarantine in these tests (upstream: 40 s).
const QUARANTINE: Duration = Duration::from_millis(500);
/// A finalizer that keeps a deleted Pod readable until the test drops it.
const HOLD: &str = "example.com/hold";

/// A simulating server whose pod garbage collector quarantines missing nodes for
/// [`QUARANTINE`].
async fn env() -> TestEnv {
    TestEnv::builder()
        .server_config(ServerConfig {
            pod_gc_quarantine: QUARANTINE,
            ..ServerConfig::in_memory()
        })
        .simulation(true)
        .start()
        .await
        .expect("env")
}

/// A Pod `name` bound to `node` (unbound when empty), with `metadata` merged into its
/// metadata.
fn pod(name: &str, node: &str, metadata: Value) -> Pod {
    let mut pod = json!({"metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    if !node.is_empty() {
        pod["spec"]["nodeName"] = json!(node);
    }
    if let (Some(target), Some(extra)) = (pod["metadata"].as_object_mut(), metadata.as_object()) {
        target.extend(extra.clone());
    }
    serde_json::from_value(pod).expect("pod")
}

/// A Node `name` without status (so not Ready) and with `taints`.
fn node(name: &str, taints: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"taints": taints}}))
        .expect("node")
}

/// Pod `name` as JSON (`null` once it is gone).
async fn get(pods: &Api<Pod>, name: &str) -> Value {
    match pods.get_opt(name).await.expect("get pod") {
        Some(pod) => serde_json::to_value(pod).expect("json"),
        None => Value::Null,
    }
}

/// The condition `kind` of a Pod (`null` when absent).
fn condition<'a>(pod: &'a Value, kind: &str) -> &'a Value {
    pod["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

/// Drops every finalizer of pod `name`.
async fn release(pods: &Api<Pod>, name: &str) {
    pods.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("drop finalizers");
}

#[tokio::test]
async fn pods_bound_to_a_missing_node_are_failed_and_removed_after_the_quarantine() {
    let env = env().await;
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let nodes: Api<Node> = Api::all(env.client());
    let pp = PostParams::default();
    nodes
        .create(&pp, &node("real", json!([])))
        .await
        .expect("node");
    pods.create(&pp, &pod("kept", "real", json!({})))
        .await
        .expect("kept");
    let created = Instant::now();
    pods.create(&pp, &pod("held", "ghost", json!({"finalizers": [HOLD]})))
        .await
        .expect("held");
    pods.create(&pp, &pod("loose", "ghost", json!({})))
        .await
        .expect("loose");

    let held = until(
        "the orphan failed",
        || get(&pods, "held"),
        |p| p["status"]["phase"] == "Failed",
    )
    .await;
    assert!(
        created.elapsed() >= QUARANTINE,
        "the node name was quarantined first"
    );
    let target = condition(&held, "DisruptionTarget");
    assert_eq!(target["status"], "True", "{held:#}");
    assert_eq!(target["reason"], "DeletionByPodGC");
    assert_eq!(target["message"], "PodGC: node no longer exists");
    // Force-deleted: grace period 0, kept only by its finalizer.
    let held = until(
        "the orphan deleted",
        || get(&pods, "held"),
        |p| p["metadata"]["deletionTimestamp"].is_string(),
    )
    .await;
    assert_eq!(held["metadata"]["deletionGracePeriodSeconds"], 0);
    until(
        "the other orphan gone",
        || get(&pods, "loose"),
        Value::is_null,
    )
    .await;
    release(&pods, "held").await;
    until(
        "the held orphan gone",
        || get(&pods, "held"),
        Value::is_null,
    )
    .await;

    // A pod whose node exists is left alone.
    let kept = get(&pods, "kept").await;
    assert!(kept["metadata"]["deletionTimestamp"].is_null(), "{kept:#}");
    assert_ne!(kept["status"]["phase"], "Failed");
}

#[tokio::test]
async fn unscheduled_pods_being_deleted_are_failed_then_removed_with_their_finalizers() {
    let env = env().await;
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let nodes: Api<Node> = Api::all(env.client());
    wait_until(WAIT, "the simulated node", || {
        let nodes = nodes.clone();
        async move { nodes.get("korral-node").await.is_ok() }
    })
    .await
    .expect("node");
    // Cordoned: new pods stay unscheduled.
    nodes
        .patch(
            "korral-node",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon");
    pods.create(
        &PostParams::default(),
        &pod("waiting", "", json!({"finalizers": [HOLD]})),
    )
    .await
    .expect("pod");
    until(
        "the pod unschedulable",
        || get(&pods, "waiting"),
        |p| condition(p, "PodScheduled")["status"] == "False",
    )
    .await;
    pods.delete("waiting", &DeleteParams::default())
        .await
        .expect("delete");
    let failed = until(
        "the unscheduled pod failed",
        || get(&pods, "waiting"),
        |p| p["status"]["phase"] == "Failed",
    )
    .await;
    assert!(failed["spec"]["nodeName"].is_null(), "{failed:#}");
    assert!(condition(&failed, "DisruptionTarget").is_null());
    release(&pods, "waiting").await;
    until("the pod gone", || get(&pods, "waiting"), Value::is_null).await;

    // A Job's unscheduled Pod deleted: failed, so the Job counts it and drops its finalizer.
    let jobs: Api<Job> = Api::default_namespaced(env.client());
    let job: Job = serde_json::from_value(json!({"metadata": {"name": "j"}, "spec": {
        "backoffLimit": 0,
        "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}))
    .expect("job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("job");
    let listed = || async {
        let list = pods
            .list(&ListParams::default().labels("job-name=j"))
            .await
            .expect("pods");
        serde_json::to_value(list.items).expect("json")
    };
    let list = until("the job's pod", listed, |l| {
        l.as_array().is_some_and(|l| !l.is_empty())
    })
    .await;
    let name = list[0]["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    pods.delete(&name, &DeleteParams::default())
        .await
        .expect("delete job pod");
    until("the job pod gone", || get(&pods, &name), Value::is_null).await;
    let job = until(
        "the job counted a failure",
        || async { serde_json::to_value(jobs.get("j").await.expect("job")).expect("json") },
        |j| j["status"]["failed"] == 1,
    )
    .await;
    assert_eq!(job["status"]["failed"], 1, "{job:#}");
}

#[tokio::test]
async fn pods_terminating_on_an_out_of_service_node_are_force_deleted() {
    let env = env().await;
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let nodes: Api<Node> = Api::all(env.client());
    let pp = PostParams::default();
    let taint = json!([{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
        "effect": "NoExecute"}]);
    nodes
        .create(&pp, &node("shut-down", taint))
        .await
        .expect("node");
    nodes
        .create(&pp, &node("unreachable", json!([])))
        .await
        .expect("node");
    for (name, on) in [("stuck", "shut-down"), ("waiting", "unreachable")] {
        pods.create(&pp, &pod(name, on, json!({"finalizers": [HOLD]})))
            .await
            .expect("pod");
    }
    // Not being deleted: left alone, even on the out-of-service node.
    let quiet = Instant::now() + QUARANTINE * 2;
    while Instant::now() < quiet {
        let stuck = get(&pods, "stuck").await;
        assert!(
            stuck["metadata"]["deletionTimestamp"].is_null(),
            "{stuck:#}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for name in ["stuck", "waiting"] {
        pods.delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }
    let stuck = until(
        "the pod on the out-of-service node failed and force-deleted",
        || get(&pods, "stuck"),
        |p| p["status"]["phase"] == "Failed" && p["metadata"]["deletionGracePeriodSeconds"] == 0,
    )
    .await;
    assert!(condition(&stuck, "DisruptionTarget").is_null(), "{stuck:#}");
    release(&pods, "stuck").await;
    until("the pod gone", || get(&pods, "stuck"), Value::is_null).await;
    // A not-ready node without the taint keeps its pod terminating.
    let waiting = get(&pods, "waiting").await;
    assert_eq!(
        waiting["metadata"]["deletionGracePeriodSeconds"], 30,
        "{waiting:#}"
    );
    assert_ne!(waiting["status"]["phase"], "Failed");
}

#[tokio::test]
async fn quota_stops_charging_pods_past_their_deletion_grace() {
    let env = env().await;
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let nodes: Api<Node> = Api::all(env.client());
    let quotas: Api<ResourceQuota> = Api::default_namespaced(env.client());
    let pp = PostParams::default();
    // A node no kubelet runs: its pods stay terminating.
    nodes
        .create(&pp, &node("silent", json!([])))
        .await
        .expect("node");
    let quota: ResourceQuota = serde_json::from_value(json!({"metadata": {"name": "q"},
        "spec": {"hard": {"pods": "2", "count/pods": "10"}}}))
    .expect("quota");
    quotas.create(&pp, &quota).await.expect("quota");
    for name in ["brief", "patient"] {
        pods.create(&pp, &pod(name, "silent", json!({})))
            .await
            .expect("pod");
    }
    let used = || async {
        let q = quotas.get("q").await.expect("quota");
        serde_json::to_value(q.status.and_then(|s| s.used)).expect("json")
    };
    until("both pods charged", used, |u| u["pods"] == "2").await;
    let third = pods.create(&pp, &pod("third", "silent", json!({}))).await;
    assert!(third.is_err(), "over quota: {third:?}");

    pods.delete("brief", &DeleteParams::default().grace_period(1))
        .await
        .expect("delete");
    pods.delete("patient", &DeleteParams::default().grace_period(300))
        .await
        .expect("delete");
    let used = until("the brief pod released", used, |u| u["pods"] == "1").await;
    assert_eq!(used["count/pods"], "2", "both still stored: {used:#}");
    for name in ["brief", "patient"] {
        let pod = get(&pods, name).await;
        assert!(pod["metadata"]["deletionTimestamp"].is_string(), "{pod:#}");
    }
    // Admission agrees: the third pod fits now.
    pods.create(&pp, &pod("third", "silent", json!({})))
        .await
        .expect("the released pod leaves room");
}

/// Deletes pod `name` with `grace` seconds; its deletion time and grace period as written.
async fn delete_with_grace(pods: &Api<Pod>, name: &str, grace: u32) -> (jiff::Timestamp, i64) {
    let answer = pods
        .delete(name, &DeleteParams::default().grace_period(grace))
        .await
        .expect("delete");
    let pod = serde_json::to_value(answer.left().expect("a pod being deleted")).expect("json");
    let at = pod["metadata"]["deletionTimestamp"].as_str().unwrap_or("");
    let at: jiff::Timestamp = at.parse().expect("deletionTimestamp");
    let grace = pod["metadata"]["deletionGracePeriodSeconds"].as_i64();
    (at, grace.unwrap_or(-1))
}

/// The terminated state of the only container of pod `value`.
fn terminated(pod: &Value) -> Value {
    pod["status"]["containerStatuses"][0]["state"]["terminated"].clone()
}

/// Seconds from `from` to the RFC 3339 time `at`.
fn seconds_after(from: jiff::Timestamp, at: &Value) -> i64 {
    let at: jiff::Timestamp = at.as_str().unwrap_or("").parse().expect("timestamp");
    at.duration_since(from).as_secs()
}

#[tokio::test]
async fn slow_containers_stop_after_their_stop_time_or_are_killed_when_the_grace_ends() {
    let env = env().await;
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let pp = PostParams::default();
    let annotated = |name: &str, seconds: &str| {
        pod(
            name,
            "",
            json!({"finalizers": [HOLD], "annotations": {"korral.dev/stop-seconds": seconds}}),
        )
    };
    pods.create(&pp, &annotated("stubborn", "60"))
        .await
        .expect("pod");
    pods.create(&pp, &annotated("tidy", "3"))
        .await
        .expect("pod");
    for name in ["stubborn", "tidy"] {
        until(
            "running",
            || get(&pods, name),
            |p| p["status"]["phase"] == "Running",
        )
        .await;
    }

    // Needs longer than its 2 s grace period: killed when it ends.
    let (deadline, grace) = delete_with_grace(&pods, "stubborn", 2).await;
    assert_eq!(grace, 2);
    let signalled = deadline - jiff::SignedDuration::from_secs(2);
    let still = get(&pods, "stubborn").await;
    assert_eq!(
        still["status"]["phase"], "Running",
        "still stopping: {still:#}"
    );
    assert!(terminated(&still).is_null());
    let killed = until(
        "the stubborn pod killed",
        || get(&pods, "stubborn"),
        |p| p["status"]["phase"] == "Failed",
    )
    .await;
    let state = terminated(&killed);
    assert_eq!(state["exitCode"], 137, "{killed:#}");
    assert_eq!(state["reason"], "Error");
    assert_eq!(seconds_after(signalled, &state["finishedAt"]), 2, "{state}");
    assert!(jiff::Timestamp::now() >= deadline);

    // Needs 3 s of its 10: exits on SIGTERM after them.
    let (deadline, _) = delete_with_grace(&pods, "tidy", 10).await;
    let signalled = deadline - jiff::SignedDuration::from_secs(10);
    let done = until(
        "the tidy pod stopped",
        || get(&pods, "tidy"),
        |p| p["status"]["phase"] == "Failed",
    )
    .await;
    let state = terminated(&done);
    assert_eq!(state["exitCode"], 143, "{done:#}");
    assert_eq!(state["reason"], "Error");
    assert_eq!(seconds_after(signalled, &state["finishedAt"]), 3, "{state}");
    // Then the kubelet's grace-0 delete, as for any stopped pod.
    let done = until(
        "the kubelet's delete",
        || get(&pods, "tidy"),
        |p| p["metadata"]["deletionGracePeriodSeconds"] == 0,
    )
    .await;
    assert_eq!(done["status"]["phase"], "Failed");
    for name in ["stubborn", "tidy"] {
        release(&pods, name).await;
        until("gone", || get(&pods, name), Value::is_null).await;
    }
}
