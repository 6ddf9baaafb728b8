//! Job tracking with finalizers in the workload simulation, as upstream's Job controller does
//! it: every Pod it creates carries `batch.kubernetes.io/job-tracking`; a finished Pod is
//! listed in `status.uncountedTerminatedPods`, released, then counted once (even when a
//! client deleted it first); deleted Jobs' Pods are released; and per-container exit codes
//! (`korral.dev/exit-code.<container>`) reach the container statuses and the pod failure
//! policy's `onExitCodes.containerName`.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

/// How long a test waits for the simulation.
const WAIT: Duration = Duration::from_secs(30);
/// The Job controller's tracking finalizer.
const FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// A Job `name` with containers `containers` (names), its Pods annotated with
/// `annotations`, `spec` merged over its spec.
fn job(name: &str, containers: &[&str], annotations: Value, spec: Value) -> Job {
    let containers: Vec<Value> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "busybox"}))
        .collect();
    let mut job = json!({
        "metadata": {"name": name},
        "spec": {"template": {
            "metadata": {"annotations": annotations},
            "spec": {"restartPolicy": "Never", "containers": containers},
        }},
    });
    if let (Some(target), Some(extra)) = (job["spec"].as_object_mut(), spec.as_object()) {
        target.extend(extra.clone());
    }
    serde_json::from_value(job).expect("job")
}

/// The Job `name` as JSON.
async fn get_job(jobs: &Api<Job>, name: &str) -> Value {
    serde_json::to_value(jobs.get(name).await.expect("get job")).expect("json")
}

/// The Pods of Job `name` as a JSON array.
async fn job_pods(pods: &Api<Pod>, name: &str) -> Value {
    let params = ListParams::default().labels(&format!("job-name={name}"));
    let list = pods.list(&params).await.expect("pods").items;
    serde_json::to_value(list).expect("json")
}

fn items(list: &Value) -> &[Value] {
    list.as_array().map_or(&[][..], Vec::as_slice)
}

fn has_finalizer(pod: &Value) -> bool {
    pod["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
}

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind && c["status"] == "True")
}

fn uncounted_is_empty(job: &Value) -> bool {
    let u = &job["status"]["uncountedTerminatedPods"];
    ["succeeded", "failed"]
        .iter()
        .all(|f| u[f].as_array().is_none_or(Vec::is_empty))
}

#[tokio::test]
async fn running_pods_carry_the_tracking_finalizer_and_are_released_when_counted() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let spec = json!({"completions": 2, "parallelism": 2});
    jobs.create(
        &PostParams::default(),
        &job(
            "tracked",
            &["main"],
            json!({"korral.dev/run-seconds": "1"}),
            spec,
        ),
    )
    .await
    .expect("create");
    let running = until(
        "two running pods",
        || job_pods(&pods, "tracked"),
        |l| items(l).len() == 2 && items(l).iter().all(|p| p["status"]["phase"] == "Running"),
    )
    .await;
    for pod in items(&running) {
        assert!(has_finalizer(pod), "a running pod is tracked: {pod:#}");
    }
    let done = until(
        "the job complete",
        || get_job(&jobs, "tracked"),
        |j| condition(j, "Complete").is_some(),
    )
    .await;
    assert_eq!(done["status"]["succeeded"], 2, "{done:#}");
    assert!(uncounted_is_empty(&done), "{done:#}");
    let list = job_pods(&pods, "tracked").await;
    assert_eq!(items(&list).len(), 2);
    for pod in items(&list) {
        assert_eq!(pod["status"]["phase"], "Succeeded");
        assert!(!has_finalizer(pod), "a counted pod is released: {pod:#}");
    }
}

#[tokio::test]
async fn a_pod_deleted_before_it_was_counted_is_counted_once_then_goes() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let spec = json!({"backoffLimit": 5});
    let annotations = json!({"korral.dev/run-seconds": "3600"});
    let created = jobs
        .create(
            &PostParams::default(),
            &job("flaky", &["main"], annotations, spec),
        )
        .await
        .expect("create");
    let running = until(
        "a running tracked pod",
        || job_pods(&pods, "flaky"),
        |l| {
            items(l).len() == 1
                && items(l)
                    .iter()
                    .all(|p| p["status"]["phase"] == "Running" && has_finalizer(p))
        },
    )
    .await;
    let pod = &items(&running)[0];
    let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
    let uid = pod["metadata"]["uid"].clone();
    // Every write of the Job from now on, to see it list the pod as uncounted.
    let params = WatchParams::default().fields("metadata.name=flaky");
    let from = created
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    let mut events = jobs.watch(&params, &from).await.expect("watch").boxed();
    // Deleted by a client before the Job counted it: a Pod being deleted counts as failed
    // (`podReplacementPolicy: TerminatingOrFailed`); the finalizer keeps it until counted.
    pods.delete(&name, &DeleteParams::default())
        .await
        .expect("delete");
    let deadline = Instant::now() + WAIT;
    let mut listed = false;
    let counted = loop {
        assert!(Instant::now() < deadline, "timed out: the failure counted");
        let event = tokio::time::timeout(WAIT, events.try_next())
            .await
            .expect("an event in time")
            .expect("watch event");
        let Some(WatchEvent::Modified(job)) = event else {
            continue;
        };
        let job = serde_json::to_value(job).expect("json");
        let uncounted = &job["status"]["uncountedTerminatedPods"]["failed"];
        if uncounted.as_array().is_some_and(|l| l.contains(&uid)) {
            assert!(
                job["status"].get("failed").is_none(),
                "not counted yet: {job:#}"
            );
            listed = true;
        }
        if job["status"]["failed"].as_i64().unwrap_or(0) >= 1 {
            break job;
        }
    };
    assert!(listed, "the pod was listed as uncounted first");
    assert_eq!(counted["status"]["failed"], 1, "{counted:#}");
    assert!(uncounted_is_empty(&counted), "{counted:#}");
    let gone = |l: &Value| !items(l).iter().any(|p| p["metadata"]["uid"] == uid);
    until("the deleted pod gone", || job_pods(&pods, "flaky"), gone).await;
    // Counted once: its replacement runs, nothing else failed.
    let job = until(
        "a replacement running",
        || get_job(&jobs, "flaky"),
        |j| j["status"]["active"] == 1,
    )
    .await;
    assert_eq!(job["status"]["failed"], 1, "{job:#}");
}

#[tokio::test]
async fn a_failed_job_has_no_uncounted_pods_left() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let spec = json!({"backoffLimit": 0, "parallelism": 2, "completions": 2});
    let annotations = json!({"korral.dev/exit-code": "1"});
    jobs.create(
        &PostParams::default(),
        &job("doomed", &["main"], annotations, spec),
    )
    .await
    .expect("create");
    let job = until(
        "the job failed",
        || get_job(&jobs, "doomed"),
        |j| condition(j, "Failed").is_some(),
    )
    .await;
    assert!(uncounted_is_empty(&job), "{job:#}");
    assert!(
        job["status"]["failed"].as_i64().unwrap_or(0) >= 1,
        "{job:#}"
    );
    let list = job_pods(&pods, "doomed").await;
    assert!(items(&list).iter().all(|p| !has_finalizer(p)), "{list:#}");
}

#[tokio::test]
async fn deleting_a_job_leaves_no_pod_stuck_on_the_finalizer() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    // (job, propagation): the Pods go with the Job, or stay without their finalizer.
    let table = [
        ("background", Some("Background"), true),
        ("foreground", Some("Foreground"), true),
        ("orphan", Some("Orphan"), false),
    ];
    for (name, _, _) in &table {
        let spec = json!({"parallelism": 2, "completions": 2});
        jobs.create(
            &PostParams::default(),
            &job(
                name,
                &["main"],
                json!({"korral.dev/run-seconds": "3600"}),
                spec,
            ),
        )
        .await
        .expect("create");
    }
    for (name, propagation, pods_go) in table {
        until(
            "two tracked running pods",
            || job_pods(&pods, name),
            |l| {
                items(l).len() == 2
                    && items(l)
                        .iter()
                        .all(|p| p["status"]["phase"] == "Running" && has_finalizer(p))
            },
        )
        .await;
        let params = DeleteParams {
            propagation_policy: match propagation {
                Some("Foreground") => Some(kube::api::PropagationPolicy::Foreground),
                Some("Orphan") => Some(kube::api::PropagationPolicy::Orphan),
                _ => Some(kube::api::PropagationPolicy::Background),
            },
            ..DeleteParams::default()
        };
        jobs.delete(name, &params).await.expect("delete");
        until(
            "the job gone",
            || async {
                match jobs.get_opt(name).await.expect("get") {
                    Some(j) => serde_json::to_value(j).expect("json"),
                    None => Value::Null,
                }
            },
            Value::is_null,
        )
        .await;
        if pods_go {
            until(
                "the pods gone",
                || job_pods(&pods, name),
                |l| items(l).is_empty(),
            )
            .await;
        } else {
            let left = until(
                "the orphans released",
                || job_pods(&pods, name),
                |l| items(l).len() == 2 && items(l).iter().all(|p| !has_finalizer(p)),
            )
            .await;
            for pod in items(&left) {
                assert!(pod["metadata"].get("deletionTimestamp").is_none());
                assert!(pod["metadata"].get("ownerReferences").is_none(), "{pod:#}");
            }
        }
    }
}

#[tokio::test]
async fn per_container_exit_codes_reach_statuses_and_the_failure_policy() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    // The sidecar fails with 42, the main container succeeds: a rule naming `main` does not
    // match, one naming `sidecar` fails the Job.
    let annotations = json!({"korral.dev/exit-code.sidecar": "42"});
    let rule = |container: &str| {
        json!({"backoffLimit": 0, "podFailurePolicy": {"rules": [{"action": "FailJob",
            "onExitCodes": {"containerName": container, "operator": "In", "values": [42]}}]}})
    };
    for (name, container) in [("by-main", "main"), ("by-sidecar", "sidecar")] {
        jobs.create(
            &PostParams::default(),
            &job(
                name,
                &["main", "sidecar"],
                annotations.clone(),
                rule(container),
            ),
        )
        .await
        .expect("create");
    }
    let by_sidecar = until(
        "by-sidecar failed",
        || get_job(&jobs, "by-sidecar"),
        |j| condition(j, "Failed").is_some(),
    )
    .await;
    let list = job_pods(&pods, "by-sidecar").await;
    let pod = &items(&list)[0];
    let message = format!(
        "Container sidecar for pod default/{} failed with exit code 42 matching FailJob rule at index 0",
        pod["metadata"]["name"].as_str().unwrap_or("")
    );
    let failed = condition(&by_sidecar, "Failed")
        .cloned()
        .unwrap_or_default();
    assert_eq!(failed["reason"], "PodFailurePolicy", "{by_sidecar:#}");
    assert_eq!(failed["message"], message.as_str());
    // Each container reports its own exit.
    let statuses = pod["status"]["containerStatuses"].clone();
    let state = |name: &str| {
        items(&statuses)
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["state"]["terminated"].clone())
            .unwrap_or_default()
    };
    assert_eq!(state("main")["exitCode"], 0, "{statuses:#}");
    assert_eq!(state("main")["reason"], "Completed");
    assert_eq!(state("sidecar")["exitCode"], 42);
    assert_eq!(state("sidecar")["reason"], "Error");
    assert_eq!(pod["status"]["phase"], "Failed");

    let by_main = until(
        "by-main failed",
        || get_job(&jobs, "by-main"),
        |j| condition(j, "Failed").is_some(),
    )
    .await;
    let failed = condition(&by_main, "Failed").cloned().unwrap_or_default();
    assert_eq!(failed["reason"], "BackoffLimitExceeded", "{by_main:#}");
}

#[tokio::test]
async fn a_failing_init_container_fails_a_pod_that_never_restarts() {
    let env = sim_env().await;
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    // (pod, annotations, exit code): the init container's own code, or the Pod's, which is
    // every container's default, init containers included.
    let table = [
        ("init-fails", json!({"korral.dev/exit-code.setup": "5"}), 5),
        (
            "init-fails-pod-wide",
            json!({"korral.dev/exit-code": "3"}),
            3,
        ),
    ];
    for (name, annotations, code) in table {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"restartPolicy": "Never",
                "initContainers": [{"name": "setup", "image": "busybox"}],
                "containers": [{"name": "main", "image": "busybox"}]},
        }))
        .expect("pod");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create");
        let pod = until(
            "the pod failed",
            || async { serde_json::to_value(pods.get(name).await.expect("get")).expect("json") },
            |p| p["status"]["phase"] == "Failed",
        )
        .await;
        let init = &pod["status"]["initContainerStatuses"][0]["state"]["terminated"];
        assert_eq!(init["exitCode"], code, "{pod:#}");
        assert_eq!(init["reason"], "Error");
        assert_eq!(
            pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"], "PodInitializing",
            "{pod:#}"
        );
    }
}

#[tokio::test]
async fn pods_updated_while_the_job_counts_them_are_counted_once() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    const COMPLETIONS: i64 = 8;
    let spec = json!({"completions": COMPLETIONS, "parallelism": 4});
    let created = jobs
        .create(
            &PostParams::default(),
            &job(
                "raced",
                &["main"],
                json!({"korral.dev/run-seconds": "1"}),
                spec,
            ),
        )
        .await
        .expect("create");
    // Every write of the Job from its creation on.
    let params = WatchParams::default().fields("metadata.name=raced");
    let from = created
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    let mut events = jobs.watch(&params, &from).await.expect("watch").boxed();
    // A client keeps updating the Job's Pods while they finish and the Job counts them, so
    // that Pod events and the Job's syncs (and its finalizer removals) interleave.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let toucher = tokio::spawn({
        let (pods, stop) = (pods.clone(), stop.clone());
        async move {
            let (mut round, mut patched) = (0u64, 0u64);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                round += 1;
                let list = job_pods(&pods, "raced").await;
                for pod in items(&list) {
                    let name = pod["metadata"]["name"].as_str().unwrap_or("");
                    let patch = json!({"metadata": {"annotations": {"example.com/touched": round.to_string()}}});
                    // A Pod gone meanwhile is no failure of the test.
                    let written = pods
                        .patch(
                            name,
                            &kube::api::PatchParams::default(),
                            &kube::api::Patch::Merge(&patch),
                        )
                        .await;
                    patched += u64::from(written.is_ok());
                }
                tokio::task::yield_now().await;
            }
            patched
        }
    });
    let deadline = Instant::now() + WAIT;
    let mut counted = 0;
    let done = loop {
        assert!(Instant::now() < deadline, "timed out: the job complete");
        let event = tokio::time::timeout(WAIT, events.try_next())
            .await
            .expect("an event in time")
            .expect("watch event");
        let Some(WatchEvent::Modified(job)) = event else {
            continue;
        };
        let job = serde_json::to_value(job).expect("json");
        let status = &job["status"];
        let succeeded = status["succeeded"].as_i64().unwrap_or(0);
        let uncounted: Vec<&Value> = status["uncountedTerminatedPods"]["succeeded"]
            .as_array()
            .map(|l| l.iter().collect())
            .unwrap_or_default();
        let distinct: std::collections::BTreeSet<String> =
            uncounted.iter().map(|u| u.to_string()).collect();
        assert_eq!(
            distinct.len(),
            uncounted.len(),
            "a pod listed twice: {job:#}"
        );
        // Never more successes (counted or about to be) than Pods the Job wanted.
        assert!(
            succeeded + uncounted.len() as i64 <= COMPLETIONS,
            "counted twice: {job:#}"
        );
        assert!(succeeded >= counted, "the count went back: {job:#}");
        counted = succeeded;
        assert!(status.get("failed").is_none(), "{job:#}");
        if condition(&job, "Complete").is_some() {
            break job;
        }
    };
    // Complete once every Pod was counted and released.
    let list = job_pods(&pods, "raced").await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let patched = toucher.await.expect("toucher");
    assert!(
        patched > COMPLETIONS as u64,
        "the pods were updated while the job ran: {patched} patches"
    );
    assert_eq!(done["status"]["succeeded"], COMPLETIONS, "{done:#}");
    assert!(uncounted_is_empty(&done), "{done:#}");
    // Each success counted is one Pod of its own: as many Pods succeeded as were counted.
    let succeeded: Vec<&Value> = items(&list)
        .iter()
        .filter(|p| p["status"]["phase"] == "Succeeded")
        .collect();
    assert_eq!(succeeded.len() as i64, COMPLETIONS, "{list:#}");
    assert_eq!(items(&list).len() as i64, COMPLETIONS, "{list:#}");
    for pod in items(&list) {
        assert!(!has_finalizer(pod), "released before Complete: {pod:#}");
    }
}
