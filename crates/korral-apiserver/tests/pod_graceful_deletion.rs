//! Graceful deletion of Pods, as kube-apiserver and the kubelet do it: a scheduled, running
//! Pod is only marked (`deletionTimestamp` = now + its grace period,
//! `deletionGracePeriodSeconds`) and lingers `Terminating` until its kubelet stopped it and
//! deletes it with grace period 0; a second delete may only shorten the wait. Pods no kubelet
//! runs (unscheduled) or that finished go at once.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/default/pods";
const WAIT: Duration = Duration::from_secs(20);

/// A pod bound to `node` (none when empty) with `extra` merged into its spec.
fn pod(name: &str, node: &str, extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
    if !node.is_empty() {
        spec["nodeName"] = json!(node);
    }
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

/// A server without the simulation: no kubelet runs any node.
async fn plain_env() -> TestEnv {
    TestEnv::builder()
        .simulation(false)
        .start()
        .await
        .expect("env")
}

/// `DELETE` of pod `name` with `options` as the body (none when `null`).
async fn delete(env: &TestEnv, name: &str, options: Value) -> (u16, Value) {
    let path = format!("{PODS}/{name}");
    let body = (!options.is_null()).then_some(&options);
    call(env, "DELETE", &path, body).await
}

async fn get(env: &TestEnv, name: &str) -> (u16, Value) {
    call(env, "GET", &format!("{PODS}/{name}"), None).await
}

/// Seconds from now until the RFC 3339 timestamp `at`.
fn seconds_until(at: &Value) -> i64 {
    let at: jiff::Timestamp = at.as_str().unwrap_or("").parse().expect("timestamp");
    at.duration_since(jiff::Timestamp::now()).as_secs()
}

fn grace(obj: &Value) -> Value {
    obj["metadata"]["deletionGracePeriodSeconds"].clone()
}

#[tokio::test]
async fn unscheduled_pods_are_deleted_at_once() {
    let env = plain_env().await;
    let created = create_ok(&env, PODS, &pod("loose", "", json!({}))).await;
    let (code, body) = delete(&env, "loose", Value::Null).await;
    assert_eq!(code, 200, "{body}");
    // Pods answer a delete with the deleted pod (upstream's `ReturnDeletedObject`), as do
    // Services; ConfigMaps answer a `Status`.
    assert_eq!(body["kind"], "Pod", "{body}");
    assert_eq!(body["metadata"]["name"], "loose");
    assert_eq!(get(&env, "loose").await.0, 404);
    let services = "/api/v1/namespaces/default/services";
    create_ok(
        &env,
        services,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    let (code, body) = call(&env, "DELETE", &format!("{services}/s"), None).await;
    assert_eq!((code, &body["kind"]), (200, &json!("Service")), "{body}");
    let configmaps = "/api/v1/namespaces/default/configmaps";
    create_ok(
        &env,
        configmaps,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    )
    .await;
    let (code, body) = call(&env, "DELETE", &format!("{configmaps}/c"), None).await;
    assert_eq!((code, &body["kind"]), (200, &json!("Status")), "{body}");
    // As upstream's graceful path with period 0: the pod is written with its deletion
    // timestamp, then removed.
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("");
    let events = events_after(&pods, "loose", rv, 2).await;
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["MODIFIED", "DELETED"]);
    for (_, obj) in &events {
        assert_eq!(grace(obj), 0, "{obj}");
        assert!(obj["metadata"]["deletionTimestamp"].is_string(), "{obj}");
    }
}

#[tokio::test]
async fn finished_pods_are_deleted_at_once() {
    let env = plain_env().await;
    for (name, phase) in [("done", "Succeeded"), ("broken", "Failed")] {
        let created = create_ok(&env, PODS, &pod(name, "node-1", json!({}))).await;
        let mut finished = created.clone();
        finished["status"] = json!({"phase": phase});
        let (code, body) = call(
            &env,
            "PUT",
            &format!("{PODS}/{name}/status"),
            Some(&finished),
        )
        .await;
        assert_eq!(code, 200, "{body}");
        let rv = body["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let (code, body) = delete(&env, name, Value::Null).await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(get(&env, name).await.0, 404, "{phase}");
        // Through the graceful path with period 0, whatever the pod's own period.
        let pods: Api<Pod> = Api::default_namespaced(env.client());
        let events = events_after(&pods, name, &rv, 2).await;
        let seen: Vec<(&str, Value)> = events.iter().map(|(k, o)| (k.as_str(), grace(o))).collect();
        assert_eq!(
            seen,
            [("MODIFIED", json!(0)), ("DELETED", json!(0))],
            "{phase}"
        );
    }
}

#[tokio::test]
async fn pods_on_a_node_without_kubelet_stay_terminating_and_may_only_be_shortened() {
    let env = plain_env().await;
    let created = create_ok(&env, PODS, &pod("stuck", "node-1", json!({}))).await;
    assert_eq!(created["metadata"]["generation"], 1);

    // A dry run changes nothing.
    let (code, body) = delete(&env, "stuck", json!({"dryRun": ["All"]})).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(grace(&body), 30, "{body}");
    let (_, current) = get(&env, "stuck").await;
    assert!(
        current["metadata"].get("deletionTimestamp").is_none(),
        "{current}"
    );

    // Preconditions still apply.
    let (code, body) = delete(&env, "stuck", json!({"preconditions": {"uid": "nope"}})).await;
    assert_eq!(code, 409, "{body}");

    // The pod's own period (30, defaulted): marked, answered with the object, kept.
    let (code, marked) = delete(&env, "stuck", Value::Null).await;
    assert_eq!(code, 200, "{marked}");
    assert_eq!(marked["kind"], "Pod", "{marked}");
    assert_eq!(grace(&marked), 30);
    let due = seconds_until(&marked["metadata"]["deletionTimestamp"]);
    assert!((28..=30).contains(&due), "due in {due}s");
    assert_eq!(marked["metadata"]["generation"], 2, "upstream bumps it");
    let (code, current) = get(&env, "stuck").await;
    assert_eq!(code, 200);
    assert_eq!(
        current["metadata"]["resourceVersion"],
        marked["metadata"]["resourceVersion"]
    );

    // An update does not remove it (its grace period is not over).
    let (code, body) = call_as(
        &env,
        "PATCH",
        &format!("{PODS}/stuck"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"seen": "yes"}}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let rv = body["metadata"]["resourceVersion"].clone();

    // Longer, or no period: nothing changes.
    for options in [json!({"gracePeriodSeconds": 60}), Value::Null] {
        let (code, body) = delete(&env, "stuck", options).await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["metadata"]["resourceVersion"], rv);
        assert_eq!(grace(&body), 30);
        assert_eq!(
            body["metadata"]["deletionTimestamp"],
            marked["metadata"]["deletionTimestamp"]
        );
    }

    // Shorter: the deletion timestamp moves earlier by the difference.
    let (code, shortened) = delete(&env, "stuck", json!({"gracePeriodSeconds": 10})).await;
    assert_eq!(code, 200, "{shortened}");
    assert_eq!(grace(&shortened), 10);
    let due = seconds_until(&shortened["metadata"]["deletionTimestamp"]);
    assert!((8..=10).contains(&due), "due in {due}s");
    assert_eq!(shortened["metadata"]["generation"], 2);

    // Period 0 (what a kubelet sends once the pod stopped): gone.
    let (code, body) = delete(&env, "stuck", json!({"gracePeriodSeconds": 0})).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(get(&env, "stuck").await.0, 404);
}

#[tokio::test]
async fn the_pods_termination_grace_period_and_finalizers_are_honoured() {
    let env = plain_env().await;
    let held = json!({"terminationGracePeriodSeconds": 5});
    let mut p = pod("held", "node-1", held);
    p["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create_ok(&env, PODS, &p).await;
    let (code, marked) = delete(&env, "held", Value::Null).await;
    assert_eq!(code, 200, "{marked}");
    assert_eq!(grace(&marked), 5);
    let due = seconds_until(&marked["metadata"]["deletionTimestamp"]);
    assert!((3..=5).contains(&due), "due in {due}s");
    // Period 0 with a finalizer left: kept, its grace period 0 and due now.
    let (code, kept) = delete(&env, "held", json!({"gracePeriodSeconds": 0})).await;
    assert_eq!(code, 200, "{kept}");
    assert_eq!(grace(&kept), 0);
    assert!(seconds_until(&kept["metadata"]["deletionTimestamp"]) <= 0);
    assert_eq!(get(&env, "held").await.0, 200);
    // The last finalizer goes: so does the pod.
    let (code, body) = call_as(
        &env,
        "PATCH",
        &format!("{PODS}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(get(&env, "held").await.0, 404);
}

#[tokio::test]
async fn delete_collection_deletes_each_pod_by_the_same_rules() {
    let env = plain_env().await;
    let mut bound = pod("bound", "node-1", json!({}));
    bound["metadata"]["labels"] = json!({"batch": "x"});
    let mut loose = pod("loose", "", json!({}));
    loose["metadata"]["labels"] = json!({"batch": "x"});
    create_ok(&env, PODS, &bound).await;
    create_ok(&env, PODS, &loose).await;
    let (code, body) = call(
        &env,
        "DELETE",
        &format!("{PODS}?labelSelector=batch%3Dx"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(get(&env, "loose").await.0, 404);
    let (code, bound) = get(&env, "bound").await;
    assert_eq!(code, 200);
    assert_eq!(grace(&bound), 30, "{bound}");
}

/// The next `n` watch events of pod `name` after resourceVersion `rv`: type and object.
async fn events_after(pods: &Api<Pod>, name: &str, rv: &str, n: usize) -> Vec<(String, Value)> {
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut stream = pods.watch(&params, rv).await.expect("watch").boxed();
    let mut events = Vec::new();
    while events.len() < n {
        let event = tokio::time::timeout(WAIT, stream.try_next())
            .await
            .expect("an event in time")
            .expect("a watch event")
            .expect("the watch goes on");
        let (kind, pod) = match event {
            WatchEvent::Added(p) => ("ADDED", p),
            WatchEvent::Modified(p) => ("MODIFIED", p),
            WatchEvent::Deleted(p) => ("DELETED", p),
            other => panic!("unexpected event {other:?}"),
        };
        events.push((kind.to_string(), serde_json::to_value(pod).expect("json")));
    }
    events
}

#[tokio::test]
async fn a_graceful_delete_is_watched_as_modified_then_deleted() {
    let env = plain_env().await;
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let created = create_ok(&env, PODS, &pod("seen", "node-1", json!({}))).await;
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    pods.delete("seen", &DeleteParams::default())
        .await
        .expect("delete");
    pods.delete("seen", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete at once");
    let events = events_after(&pods, "seen", &rv, 3).await;
    let seen: Vec<(&str, Value)> = events.iter().map(|(k, o)| (k.as_str(), grace(o))).collect();
    assert_eq!(
        seen,
        [
            ("MODIFIED", json!(30)),
            ("MODIFIED", json!(0)),
            ("DELETED", json!(0))
        ]
    );
}

/// Waits until the simulated kubelet runs pod `name`: the pod then.
async fn wait_running(pods: &Api<Pod>, name: &str) -> Pod {
    let phase = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.clone());
    wait_until(WAIT, format!("{name} running"), || {
        let pods = pods.clone();
        async move {
            pods.get(name)
                .await
                .is_ok_and(|p| phase(&p).as_deref() == Some("Running"))
        }
    })
    .await
    .expect("running");
    pods.get(name).await.expect("pod")
}

#[tokio::test]
async fn the_simulated_kubelet_stops_deleted_pods_then_removes_them() {
    let env = sim_env().await;
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let spec = |name: &str, annotations: Value, extra: Value| {
        let mut p = pod(name, "", extra);
        p["metadata"]["annotations"] = annotations;
        serde_json::from_value::<Pod>(p).expect("pod")
    };
    let cases = [
        // A default container exits on SIGTERM: 143, the pod Failed.
        ("app", json!({}), json!({}), 143, "Failed", 30),
        // One told to exit with 0 does: the pod Succeeded; its own grace period is honoured.
        (
            "tidy",
            json!({"korral.dev/exit-code": "0", "korral.dev/run-seconds": "3600"}),
            json!({"terminationGracePeriodSeconds": 7}),
            0,
            "Succeeded",
            7,
        ),
    ];
    for (name, annotations, extra, code, phase, period) in cases {
        pods.create(&PostParams::default(), &spec(name, annotations, extra))
            .await
            .expect("create");
        let running = wait_running(&pods, name).await;
        let rv = running
            .metadata
            .resource_version
            .clone()
            .unwrap_or_default();
        let started = Instant::now();
        pods.delete(name, &DeleteParams::default())
            .await
            .expect("delete");
        let mut events = Vec::new();
        let params = WatchParams::default().fields(&format!("metadata.name={name}"));
        let mut stream = pods.watch(&params, &rv).await.expect("watch").boxed();
        loop {
            let event = tokio::time::timeout(WAIT, stream.try_next())
                .await
                .expect("an event in time")
                .expect("a watch event")
                .expect("the watch goes on");
            match event {
                WatchEvent::Modified(p) => events.push(("MODIFIED", p)),
                WatchEvent::Deleted(p) => {
                    events.push(("DELETED", p));
                    break;
                }
                other => panic!("unexpected event {other:?}"),
            }
        }
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(5), "{name} took {elapsed:?}");
        // Marked with the grace period, then stopped by the kubelet, then deleted by it.
        let first = &events[0].1;
        assert_eq!(
            first.metadata.deletion_grace_period_seconds,
            Some(period),
            "{name}"
        );
        let stopped = events
            .iter()
            .find(|(_, p)| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some(phase))
            .unwrap_or_else(|| panic!("{name}: no {phase} pod in {events:?}"));
        let terminated = stopped
            .1
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.terminated.clone())
            .expect("terminated container");
        assert_eq!(terminated.exit_code, code, "{name}");
        let reason = if code == 0 { "Completed" } else { "Error" };
        assert_eq!(terminated.reason.as_deref(), Some(reason), "{name}");
        let (last, gone) = events.last().expect("events");
        assert_eq!(*last, "DELETED");
        assert_eq!(gone.metadata.deletion_grace_period_seconds, Some(0));
        assert!(pods.get_opt(name).await.expect("get").is_none());
    }
}

#[tokio::test]
async fn kubectl_delete_waits_for_the_simulated_kubelet() {
    let env = sim_env().await;
    let cache = tempfile::tempdir().expect("cache");
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let p: Pod = serde_json::from_value(pod("web", "", json!({}))).expect("pod");
    pods.create(&PostParams::default(), &p)
        .await
        .expect("create");
    let running = wait_running(&pods, "web").await;
    let rv = running.metadata.resource_version.unwrap_or_default();
    let started = Instant::now();
    let (ok, out, err) = kubectl(&env, cache.path(), &["delete", "pod", "web"]).await;
    let elapsed = started.elapsed();
    assert!(ok, "{out}{err}");
    assert!(out.starts_with("pod \"web\" deleted"), "{out}");
    assert!(
        elapsed < Duration::from_secs(10),
        "kubectl took {elapsed:?}"
    );
    assert!(pods.get_opt("web").await.expect("get").is_none());
    // kubectl waited for the kubelet: marked, stopped, grace period 0, gone.
    let events = events_after(&pods, "web", &rv, 4).await;
    let phases: Vec<(&str, Value)> = events
        .iter()
        .map(|(k, o)| (k.as_str(), o["status"]["phase"].clone()))
        .collect();
    assert_eq!(
        phases,
        [
            ("MODIFIED", json!("Running")),
            ("MODIFIED", json!("Failed")),
            ("MODIFIED", json!("Failed")),
            ("DELETED", json!("Failed")),
        ]
    );
}

#[tokio::test]
async fn kubectl_shows_pods_on_a_node_without_kubelet_terminating() {
    let env = plain_env().await;
    let cache = tempfile::tempdir().expect("cache");
    create_ok(&env, PODS, &pod("stuck", "node-1", json!({}))).await;
    let (ok, out, err) = kubectl(
        &env,
        cache.path(),
        &["delete", "pod", "stuck", "--wait=false"],
    )
    .await;
    assert!(ok, "{out}{err}");
    let (ok, out, err) =
        kubectl(&env, cache.path(), &["get", "pod", "stuck", "--no-headers"]).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("Terminating"), "{out}");
    // Forced: gone.
    let (ok, out, err) = kubectl(
        &env,
        cache.path(),
        &["delete", "pod", "stuck", "--grace-period=0", "--force"],
    )
    .await;
    assert!(ok, "{out}{err}");
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let left = pods.list(&ListParams::default()).await.expect("list");
    assert!(left.items.is_empty());
}

#[tokio::test]
async fn deleting_a_namespace_finishes_once_the_kubelet_stopped_its_pods() {
    let env = sim_env().await;
    create_namespace(&env.client(), "short-lived").await;
    let pods: Api<Pod> = Api::namespaced(env.client(), "short-lived");
    let p: Pod = serde_json::from_value(pod("app", "", json!({}))).expect("pod");
    pods.create(&PostParams::default(), &p)
        .await
        .expect("create");
    let running = wait_running(&pods, "app").await;
    let rv = running.metadata.resource_version.unwrap_or_default();
    let (code, body) = call(&env, "DELETE", "/api/v1/namespaces/short-lived", None).await;
    assert_eq!(code, 200, "{body}");
    wait_until(WAIT, "the namespace gone", || async {
        call(&env, "GET", "/api/v1/namespaces/short-lived", None)
            .await
            .0
            == 404
    })
    .await
    .expect("namespace gone");
    // Its pod was deleted gracefully, stopped by the kubelet, then deleted by it: marked,
    // stopped, grace period 0, gone.
    let events = events_after(&pods, "app", &rv, 4).await;
    let seen: Vec<(&str, Value, Value)> = events
        .iter()
        .map(|(k, o)| (k.as_str(), grace(o), o["status"]["phase"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            ("MODIFIED", json!(30), json!("Running")),
            ("MODIFIED", json!(30), json!("Failed")),
            ("MODIFIED", json!(0), json!("Failed")),
            ("DELETED", json!(0), json!("Failed")),
        ]
    );
}

#[tokio::test]
async fn foreground_deletion_of_a_replica_set_waits_for_its_pods_to_be_stopped() {
    let env = sim_env().await;
    let sets = "/apis/apps/v1/namespaces/default/replicasets";
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    create_ok(&env, sets, &rs).await;
    let pods: Api<Pod> = Api::default_namespaced(env.client());
    let running = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    wait_until(WAIT, "two pods running", || async {
        let list = pods.list(&ListParams::default().labels("app=web")).await;
        list.is_ok_and(|l| l.items.iter().filter(|p| running(p)).count() == 2)
    })
    .await
    .expect("running");
    let list = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("list");
    let rv = list.metadata.resource_version.unwrap_or_default();
    let (code, body) = call(
        &env,
        "DELETE",
        &format!("{sets}/web"),
        Some(&json!({"propagationPolicy": "Foreground"})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    wait_until(WAIT, "the replica set gone", || async {
        call(&env, "GET", &format!("{sets}/web"), None).await.0 == 404
    })
    .await
    .expect("gone");
    assert!(
        pods.list(&ListParams::default().labels("app=web"))
            .await
            .expect("list")
            .items
            .is_empty()
    );
    // Each pod was marked with its grace period, stopped (143), then deleted.
    let params = WatchParams::default().labels("app=web");
    let mut stream = pods.watch(&params, &rv).await.expect("watch").boxed();
    let mut deleted = Vec::new();
    let mut stopped = std::collections::BTreeSet::new();
    while deleted.len() < 2 {
        let event = tokio::time::timeout(WAIT, stream.try_next())
            .await
            .expect("an event in time")
            .expect("a watch event")
            .expect("the watch goes on");
        match event {
            WatchEvent::Modified(p) => {
                let code = p
                    .status
                    .as_ref()
                    .and_then(|s| s.container_statuses.as_ref())
                    .and_then(|c| c.first())
                    .and_then(|c| c.state.as_ref())
                    .and_then(|s| s.terminated.as_ref())
                    .map(|t| t.exit_code);
                if code == Some(143) {
                    stopped.insert(p.metadata.name.unwrap_or_default());
                }
            }
            WatchEvent::Deleted(p) => deleted.push(p.metadata.name.unwrap_or_default()),
            _ => {}
        }
    }
    deleted.sort();
    assert_eq!(
        stopped.into_iter().collect::<Vec<_>>(),
        deleted,
        "both pods stopped by SIGTERM before they went"
    );
}

#[tokio::test]
async fn replica_sets_and_deployments_count_their_terminating_pods() {
    let env = sim_env().await;
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let sets = "/apis/apps/v1/namespaces/default/replicasets";
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    create_ok(&env, deployments, &d).await;
    let status_of = |path: String| {
        let env = &env;
        async move { call(env, "GET", &path, None).await.1["status"].clone() }
    };
    wait_until(WAIT, "the deployment available", || async {
        let s = status_of(format!("{deployments}/web")).await;
        s["availableReplicas"] == 1 && s["terminatingReplicas"] == 0
    })
    .await
    .expect("available");
    let (_, list) = call(
        &env,
        "GET",
        &format!("{sets}?labelSelector=app%3Dweb"),
        None,
    )
    .await;
    let rs = list["items"][0].clone();
    let rs_name = rs["metadata"]["name"].as_str().unwrap_or("").to_string();
    assert_eq!(rs["status"]["terminatingReplicas"], 0, "{rs}");
    // A pod the ReplicaSet adopts on a node no kubelet runs: one too many, so the controller
    // deletes it (the unready one first); it stays terminating.
    let mut stray = pod("stray", "node-1", json!({}));
    stray["metadata"]["labels"] = rs["spec"]["selector"]["matchLabels"].clone();
    create_ok(&env, PODS, &stray).await;
    wait_until(WAIT, "the stray pod counted terminating", || async {
        let rs = status_of(format!("{sets}/{rs_name}")).await;
        let d = status_of(format!("{deployments}/web")).await;
        rs["terminatingReplicas"] == 1
            && rs["replicas"] == 1
            && d["terminatingReplicas"] == 1
            && d["replicas"] == 1
    })
    .await
    .expect("terminating counted");
    let (_, stray) = get(&env, "stray").await;
    assert_eq!(grace(&stray), 30, "{stray}");
    // Gone: counted no more.
    let (code, body) = delete(&env, "stray", json!({"gracePeriodSeconds": 0})).await;
    assert_eq!(code, 200, "{body}");
    wait_until(WAIT, "nothing terminating", || async {
        let rs = status_of(format!("{sets}/{rs_name}")).await;
        let d = status_of(format!("{deployments}/web")).await;
        rs["terminatingReplicas"] == 0 && d["terminatingReplicas"] == 0
    })
    .await
    .expect("none terminating");
}
