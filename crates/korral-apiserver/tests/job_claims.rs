//! How the simulated Job controller claims and manages its Pods, as upstream's: orphans its
//! selector selects (a `manualSelector`) are adopted with the tracking finalizer and counted
//! like its own, Pods that stop matching are released, and Pods beyond its parallelism are
//! deleted without being counted as failed.

mod common;

use common::*;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// The Job controller's tracking finalizer.
const FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// A Job `name` selecting `app: <name>` with a selector of its own (`manualSelector`), its
/// Pods annotated with `annotations`, `spec` merged over its spec.
fn manual_job(name: &str, annotations: Value, spec: Value) -> Job {
    let mut job = json!({
        "metadata": {"name": name},
        "spec": {
            "manualSelector": true,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
            },
        },
    });
    if let (Some(target), Some(extra)) = (job["spec"].as_object_mut(), spec.as_object()) {
        target.extend(extra.clone());
    }
    serde_json::from_value(job).expect("job")
}

/// A bare Pod `name` labelled `app: <app>`, annotated with `annotations`.
fn orphan(name: &str, app: &str, annotations: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}, "annotations": annotations},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }))
    .expect("pod")
}

/// The Job `name` as JSON.
async fn get_job(jobs: &Api<Job>, name: &str) -> Value {
    serde_json::to_value(jobs.get(name).await.expect("get job")).expect("json")
}

/// The Pods labelled `app: <app>` as a JSON array.
async fn app_pods(pods: &Api<Pod>, app: &str) -> Value {
    let params = ListParams::default().labels(&format!("app={app}"));
    let list = pods.list(&params).await.expect("pods").items;
    serde_json::to_value(list).expect("json")
}

/// The Pod `name` as JSON.
async fn get_pod(pods: &Api<Pod>, name: &str) -> Value {
    serde_json::to_value(pods.get(name).await.expect("get pod")).expect("json")
}

fn items(list: &Value) -> &[Value] {
    list.as_array().map_or(&[][..], Vec::as_slice)
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or("")
}

fn has_finalizer(pod: &Value) -> bool {
    pod["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

/// The `(kind, name, uid)` of a Pod's controller.
fn controller(pod: &Value) -> Option<(String, String, String)> {
    pod["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
            (s("kind"), s("name"), s("uid"))
        })
}

#[tokio::test]
async fn orphans_the_selector_selects_are_adopted_tracked_and_counted() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    // One orphan still running, one that already succeeded.
    let running = json!({"korral.dev/run-seconds": "3600"});
    pods.create(
        &PostParams::default(),
        &orphan("busy", "adopt", running.clone()),
    )
    .await
    .expect("running orphan");
    pods.create(
        &PostParams::default(),
        &orphan("done", "adopt", json!({"korral.dev/exit-code": "0"})),
    )
    .await
    .expect("finished orphan");
    until(
        "the orphans run and succeed",
        || app_pods(&pods, "adopt"),
        |l| {
            let phases: Vec<&str> = items(l).iter().map(phase).collect();
            phases.contains(&"Running") && phases.contains(&"Succeeded")
        },
    )
    .await;
    // An orphan of another app is left alone.
    pods.create(
        &PostParams::default(),
        &orphan("other", "else", running.clone()),
    )
    .await
    .expect("other orphan");

    let spec = json!({"completions": 3, "parallelism": 2});
    let job = jobs
        .create(&PostParams::default(), &manual_job("adopt", running, spec))
        .await
        .expect("create job");
    let uid = job.metadata.uid.clone().expect("uid");
    // The succeeded orphan counts as one completion; the running one as one of the two
    // active Pods, so only one Pod is created.
    let status = until(
        "the job counts its adopted pods",
        || get_job(&jobs, "adopt"),
        |j| j["status"]["succeeded"] == 1 && j["status"]["active"] == 2,
    )
    .await;
    assert!(status["status"].get("failed").is_none(), "{status:#}");
    let list = until(
        "two active pods and the succeeded one",
        || app_pods(&pods, "adopt"),
        |l| items(l).len() == 3,
    )
    .await;
    for pod in items(&list) {
        assert_eq!(
            controller(pod),
            Some(("Job".to_string(), "adopt".to_string(), uid.clone())),
            "{pod:#}"
        );
    }
    // The running orphan carries the tracking finalizer from its adoption; the succeeded
    // one was counted and released.
    let busy = get_pod(&pods, "busy").await;
    assert!(has_finalizer(&busy), "{busy:#}");
    let done = get_pod(&pods, "done").await;
    assert!(!has_finalizer(&done), "{done:#}");
    assert_eq!(
        done["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
        true
    );
    let other = get_pod(&pods, "other").await;
    assert_eq!(controller(&other), None, "{other:#}");
    assert!(!has_finalizer(&other), "{other:#}");

    // An orphan created later is adopted too (it wakes the Job): it is the third Pod the
    // Job wants once one of the others is gone.
    pods.delete("busy", &Default::default())
        .await
        .expect("delete busy");
    pods.create(
        &PostParams::default(),
        &orphan("late", "adopt", json!({"korral.dev/run-seconds": "3600"})),
    )
    .await
    .expect("late orphan");
    let late = until(
        "the late orphan is adopted",
        || get_pod(&pods, "late"),
        |p| controller(p).is_some(),
    )
    .await;
    assert_eq!(controller(&late).map(|c| c.2), Some(uid));
    assert!(has_finalizer(&late), "{late:#}");
}

#[tokio::test]
async fn pods_that_stop_matching_are_released_and_replaced() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let running = json!({"korral.dev/run-seconds": "3600"});
    jobs.create(
        &PostParams::default(),
        &manual_job("keep", running, json!({"parallelism": 1})),
    )
    .await
    .expect("create job");
    let list = until(
        "one running pod",
        || app_pods(&pods, "keep"),
        |l| items(l).len() == 1 && items(l).iter().all(|p| phase(p) == "Running"),
    )
    .await;
    let first = items(&list)[0]["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_string();
    // The client relabels the Pod: the Job no longer selects it.
    let patch = json!({"metadata": {"labels": {"app": "gone"}}});
    pods.patch(&first, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("relabel");
    let released = until(
        "the pod is released",
        || get_pod(&pods, &first),
        |p| controller(p).is_none(),
    )
    .await;
    assert!(!has_finalizer(&released), "{released:#}");
    assert!(released["metadata"].get("ownerReferences").is_none());
    assert_eq!(phase(&released), "Running");
    // A replacement takes its place; the released Pod is not counted as failed.
    until(
        "a replacement runs",
        || app_pods(&pods, "keep"),
        |l| items(l).len() == 1 && items(l)[0]["metadata"]["name"] != first.as_str(),
    )
    .await;
    let job = until(
        "the job has one active pod",
        || get_job(&jobs, "keep"),
        |j| j["status"]["active"] == 1,
    )
    .await;
    assert!(job["status"].get("failed").is_none(), "{job:#}");
}

#[tokio::test]
async fn pods_beyond_the_parallelism_are_deleted_and_not_counted() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let running = json!({"korral.dev/run-seconds": "3600"});
    jobs.create(
        &PostParams::default(),
        &manual_job("shrink", running, json!({"parallelism": 3})),
    )
    .await
    .expect("create job");
    until(
        "three running pods",
        || app_pods(&pods, "shrink"),
        |l| items(l).len() == 3 && items(l).iter().all(|p| phase(p) == "Running"),
    )
    .await;
    let patch = json!({"spec": {"parallelism": 1}});
    jobs.patch("shrink", &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("scale down");
    let job = until(
        "the job runs one pod",
        || get_job(&jobs, "shrink"),
        |j| j["status"]["active"] == 1 && j["status"]["terminating"] == 0,
    )
    .await;
    assert!(job["status"].get("failed").is_none(), "{job:#}");
    let list = until(
        "two pods are gone",
        || app_pods(&pods, "shrink"),
        |l| items(l).len() == 1,
    )
    .await;
    assert_eq!(phase(&items(&list)[0]), "Running");
}
