//! Failing Pods and failing Jobs in the workload simulation: the simulated kubelet honours the
//! `korral.dev/exit-code` / `korral.dev/run-seconds` annotations and client-written `Failed`
//! phases, and the Job controller counts failures, replaces failed Pods after its back-off and
//! fails Jobs as upstream's (`FailureTarget`, then `Failed` with the same reason and message);
//! an Indexed Job whose success policy matches completes early and stops its other Pods.

mod common;

use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// How long a test waits for the simulation (replacements wait a 10s back-off).
const WAIT: Duration = Duration::from_secs(40);

/// A Job `name` with `spec` merged over one container `main`, its pods annotated with
/// `annotations`.
fn job(name: &str, restart: &str, annotations: Value, spec: Value) -> Job {
    let mut job = json!({
        "metadata": {"name": name},
        "spec": {"template": {
            "metadata": {"annotations": annotations},
            "spec": {"restartPolicy": restart, "containers": [{"name": "main", "image": "busybox"}]},
        }},
    });
    if let (Some(target), Some(extra)) = (job["spec"].as_object_mut(), spec.as_object()) {
        for (k, v) in extra {
            target.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(job).expect("job")
}

/// Polls Job `name` until `check` holds (panics with the last state after [`WAIT`]).
async fn job_until(
    jobs: &Api<Job>,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let job = serde_json::to_value(jobs.get(name).await.expect("get job")).expect("json");
        if check(&job) {
            return job;
        }
        assert!(Instant::now() < deadline, "timed out: {what}: {job:#}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Polls the Pods of Job `name` until `check` holds for them.
async fn pods_until(
    pods: &Api<Pod>,
    name: &str,
    what: &str,
    check: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    let params = ListParams::default().labels(&format!("job-name={name}"));
    loop {
        let list: Vec<Value> = pods
            .list(&params)
            .await
            .expect("pods")
            .items
            .into_iter()
            .map(|p| serde_json::to_value(p).expect("json"))
            .collect();
        if check(&list) {
            return list;
        }
        assert!(Instant::now() < deadline, "timed out: {what}: {list:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind && c["status"] == "True")
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or("")
}

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or("")
}

/// Waits for the Job to fail; checks `FailureTarget` came first with the same reason and
/// message, and no Pod is left active.
async fn failed(env: &TestEnv, name: &str, reason: &str) -> Value {
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let job = job_until(&jobs, name, &format!("{name} failed"), |j| {
        condition(j, "Failed").is_some()
    })
    .await;
    let failed = condition(&job, "Failed").cloned().unwrap_or_default();
    let target = condition(&job, "FailureTarget")
        .cloned()
        .unwrap_or_default();
    assert_eq!(failed["reason"], reason, "{job:#}");
    assert_eq!(target["reason"], reason, "{job:#}");
    assert_eq!(target["message"], failed["message"]);
    let kinds: Vec<&str> = job["status"]["conditions"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["type"].as_str()).collect())
        .unwrap_or_default();
    let position = |k: &str| kinds.iter().position(|x| *x == k);
    assert!(position("FailureTarget") < position("Failed"), "{kinds:?}");
    assert!(job["status"].get("active").is_none(), "{job:#}");
    assert!(job["status"].get("completionTime").is_none());
    assert!(condition(&job, "Complete").is_none());
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    pods_until(&pods, name, "no active pod left", |list| {
        list.iter()
            .all(|p| matches!(phase(p), "Failed" | "Succeeded"))
    })
    .await;
    job
}

#[tokio::test]
async fn exceeding_the_backoff_limit_fails_the_job() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    // (name, restartPolicy, spec, status.failed): two failed Pods at once exceed a limit of
    // one; with OnFailure the first restart reaches it (the running Pod is deleted and
    // counted).
    let table = [
        (
            "never",
            "Never",
            json!({"completions": 2, "parallelism": 2, "backoffLimit": 1}),
            2,
        ),
        ("onfailure", "OnFailure", json!({"backoffLimit": 1}), 1),
    ];
    for (name, restart, spec, _) in &table {
        let job = job(
            name,
            restart,
            json!({"korral.dev/exit-code": "1"}),
            spec.clone(),
        );
        jobs.create(&PostParams::default(), &job)
            .await
            .expect("create");
    }
    for (name, restart, _, count) in table {
        let job = failed(&env, name, "BackoffLimitExceeded").await;
        assert_eq!(
            condition(&job, "Failed").map(|c| c["message"].clone()),
            Some(json!("Job has reached the specified backoff limit"))
        );
        assert_eq!(job["status"]["failed"], count, "{name}: {job:#}");
        let left = pods_until(&pods, name, "pods", |_| true).await;
        if restart == "Never" {
            assert_eq!(left.len(), 2, "{left:#?}");
            for pod in &left {
                assert_eq!(phase(pod), "Failed");
                let terminated = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
                assert_eq!(terminated["exitCode"], 1);
                assert_eq!(terminated["reason"], "Error");
                assert!(
                    terminated["finishedAt"].is_string() && terminated["containerID"].is_string()
                );
                let ready = pod["status"]["conditions"]
                    .as_array()
                    .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
                    .cloned()
                    .unwrap_or_default();
                assert_eq!(
                    (ready["status"].clone(), ready["reason"].clone()),
                    (json!("False"), json!("PodFailed"))
                );
            }
        } else {
            assert!(left.is_empty(), "the restarting pod is deleted: {left:#?}");
        }
    }
}

#[tokio::test]
async fn failed_pods_are_replaced_after_the_back_off() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let spec = json!({"backoffLimit": 1});
    let job = job("retry", "Never", json!({"korral.dev/exit-code": "2"}), spec);
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create");
    let first = job_until(&jobs, "retry", "one failure counted", |j| {
        j["status"]["failed"] == 1
    })
    .await;
    assert!(condition(&first, "FailureTarget").is_none(), "{first:#}");
    let list = pods_until(&pods, "retry", "two pods", |l| l.len() == 2).await;
    let finished = |p: &Value| {
        p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    let created = |p: &Value| {
        p["metadata"]["creationTimestamp"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    let failed_at = list
        .iter()
        .filter_map(finished)
        .min()
        .expect("a failed pod");
    let replaced_at = list.iter().filter_map(created).max().expect("created");
    assert!(
        replaced_at.duration_since(failed_at) >= jiff::SignedDuration::from_secs(10),
        "the replacement waits upstream's 10s back-off: failed {failed_at}, replaced {replaced_at}"
    );
    let job = failed(&env, "retry", "BackoffLimitExceeded").await;
    assert_eq!(job["status"]["failed"], 2);
}

#[tokio::test]
async fn pod_failure_policy_rules_decide() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let ignore_disruption =
        json!({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]});
    // (name, exit code of every container, rules, backoffLimit, reason, index of the FailJob
    // rule in the message)
    let table = [
        (
            "in",
            "42",
            json!([{"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}}]),
            6,
            "PodFailurePolicy",
            Some(0),
        ),
        (
            "notin",
            "3",
            json!([ignore_disruption, {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}}]),
            6,
            "PodFailurePolicy",
            Some(1),
        ),
        (
            "othercontainer",
            "42",
            json!([{"action": "FailJob", "onExitCodes": {"containerName": "init", "operator": "In", "values": [42]}}]),
            0,
            "BackoffLimitExceeded",
            None,
        ),
    ];
    for (name, code, rules, limit, _, _) in &table {
        let spec = json!({"backoffLimit": limit, "podFailurePolicy": {"rules": rules}});
        let mut job = job(name, "Never", json!({"korral.dev/exit-code": code}), spec);
        if *name == "othercontainer" {
            // The rule names the init container, which succeeded (its own code overrides the
            // Pod's): no match.
            let init: k8s_openapi::api::core::v1::Container =
                serde_json::from_value(json!({"name": "init", "image": "busybox"})).expect("init");
            if let Some(template) = job.spec.as_mut().map(|s| &mut s.template) {
                if let Some(spec) = template.spec.as_mut() {
                    spec.init_containers = Some(vec![init]);
                }
                if let Some(metadata) = template.metadata.as_mut() {
                    metadata
                        .annotations
                        .get_or_insert_default()
                        .insert("korral.dev/exit-code.init".into(), "0".into());
                }
            }
        }
        jobs.create(&PostParams::default(), &job)
            .await
            .expect("create");
    }
    for (name, code, _, _, reason, rule) in table {
        let job = failed(&env, name, reason).await;
        let list = pods_until(&pods, name, "the failed pod", |l| l.len() == 1).await;
        let message = match rule {
            Some(i) => format!(
                "Container main for pod default/{} failed with exit code {code} matching FailJob rule at index {i}",
                self::name(&list[0])
            ),
            None => "Job has reached the specified backoff limit".to_string(),
        };
        assert_eq!(
            condition(&job, "Failed").map(|c| c["message"].clone()),
            Some(json!(message))
        );
        assert_eq!(job["status"]["failed"], 1);
    }
}

/// Creates Job `name` (restart policy `Never`, `spec` merged in) whose Pods run for an hour,
/// and waits until `n` of them run: the Pods.
async fn running_job(
    jobs: &Api<Job>,
    pods: &Api<Pod>,
    name: &str,
    spec: Value,
    n: usize,
) -> Vec<Value> {
    let job = job(
        name,
        "Never",
        json!({"korral.dev/run-seconds": "3600"}),
        spec,
    );
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create");
    pods_until(pods, name, &format!("{n} running pods"), |l| {
        l.len() == n && l.iter().all(|p| phase(p) == "Running")
    })
    .await
}

/// Makes a running Pod `Failed` the way a client (an eviction, a test) does: through
/// `/status`, with `conditions`.
async fn fail_pod(pods: &Api<Pod>, pod: &str, conditions: Value) {
    let patch = json!({"status": {"phase": "Failed", "conditions": conditions}});
    pods.patch_status(pod, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("fail pod");
}

#[tokio::test]
async fn a_pod_failed_by_a_client_fails_the_job_and_stays_failed() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let spec = json!({"backoffLimit": 0});
    let list = running_job(&jobs, &pods, "evicted", spec, 1).await;
    let pod = name(&list[0]).to_string();
    let ready = json!({"type": "Ready", "status": "False", "reason": "PodFailed"});
    fail_pod(&pods, &pod, json!([ready])).await;
    let job = failed(&env, "evicted", "BackoffLimitExceeded").await;
    assert_eq!(job["status"]["failed"], 1);
    // The kubelet had its turn at the pod's write before the Job failed: the phase stands.
    let after = serde_json::to_value(pods.get(&pod).await.expect("pod")).expect("json");
    assert_eq!(phase(&after), "Failed", "{after:#}");
}

#[tokio::test]
async fn an_ignored_disruption_is_not_counted_and_the_pod_is_replaced() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let spec = json!({"backoffLimit": 0, "podFailurePolicy": {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}});
    let list = running_job(&jobs, &pods, "disrupted", spec, 1).await;
    let first = name(&list[0]).to_string();
    let disruption =
        json!({"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"});
    fail_pod(&pods, &first, json!([disruption])).await;
    let list = pods_until(&pods, "disrupted", "a replacement", |l| {
        l.iter().any(|p| name(p) != first && phase(p) == "Running")
    })
    .await;
    assert_eq!(list.len(), 2);
    let job = serde_json::to_value(jobs.get("disrupted").await.expect("job")).expect("json");
    assert!(
        job["status"].get("failed").is_none(),
        "not counted: {job:#}"
    );
    assert!(condition(&job, "FailureTarget").is_none() && condition(&job, "Failed").is_none());
    assert_eq!(job["status"]["active"], 1);
}

#[tokio::test]
async fn backoff_limit_per_index_fails_indexes() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let indexed = |extra: Value| {
        let mut spec = json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3, "backoffLimitPerIndex": 0});
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        spec
    };
    // Every index fails at its first failure.
    let table = [
        (
            "all",
            indexed(json!({})),
            "FailedIndexes",
            "Job has failed indexes",
        ),
        (
            "capped",
            indexed(json!({"maxFailedIndexes": 1})),
            "MaxFailedIndexesExceeded",
            "Job has exceeded the specified maximal number of failed indexes",
        ),
    ];
    for (name, spec, _, _) in &table {
        let job = job(
            name,
            "Never",
            json!({"korral.dev/exit-code": "1"}),
            spec.clone(),
        );
        jobs.create(&PostParams::default(), &job)
            .await
            .expect("create");
    }
    for (name, _, reason, message) in table {
        let job = failed(&env, name, reason).await;
        assert_eq!(
            condition(&job, "Failed").map(|c| c["message"].clone()),
            Some(json!(message))
        );
        let failed_indexes = job["status"]["failedIndexes"].as_str().unwrap_or("");
        if name == "all" {
            assert_eq!(failed_indexes, "0-2", "{job:#}");
            assert_eq!(job["status"]["failed"], 3);
        } else {
            assert!(failed_indexes.split([',', '-']).count() >= 2, "{job:#}");
        }
    }

    // With a limit of 1 per index, index 0's first failure is replaced (after the back-off),
    // carrying the failure count; its second failure fails the index, the Job runs on.
    let spec = json!({"completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimitPerIndex": 1});
    let index = |p: &Value| {
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"].clone()
    };
    let list = running_job(&jobs, &pods, "perindex", spec, 2).await;
    let first = list.iter().find(|p| index(p) == "0").expect("index 0");
    assert_eq!(
        first["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"],
        "0"
    );
    // Indexed Pods are addressable by index and read it from their environment.
    assert_eq!(first["spec"]["hostname"], "perindex-0");
    assert_eq!(
        first["spec"]["containers"][0]["env"],
        json!([{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"apiVersion": "v1",
            "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}])
    );
    fail_pod(&pods, name(first), json!([])).await;
    let list = pods_until(&pods, "perindex", "index 0 replaced", |l| {
        l.iter().any(|p| index(p) == "0" && phase(p) == "Running")
    })
    .await;
    let second = list
        .iter()
        .find(|p| index(p) == "0" && phase(p) == "Running")
        .expect("replacement");
    assert_eq!(
        second["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"],
        "1"
    );
    let job = job_until(&jobs, "perindex", "one failure", |j| {
        j["status"]["failed"] == 1
    })
    .await;
    assert_eq!(job["status"]["failedIndexes"], "", "{job:#}");
    fail_pod(&pods, name(second), json!([])).await;
    let job = job_until(&jobs, "perindex", "index 0 failed", |j| {
        j["status"]["failedIndexes"] == "0"
    })
    .await;
    assert_eq!(job["status"]["failed"], 2);
    assert_eq!(job["status"]["active"], 1, "index 1 runs on: {job:#}");
    assert!(condition(&job, "FailureTarget").is_none());
}

#[tokio::test]
async fn the_active_deadline_fails_the_job_and_deletes_its_pods() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let spec = json!({"parallelism": 2, "completions": 2, "activeDeadlineSeconds": 2});
    running_job(&jobs, &pods, "slow", spec, 2).await;
    let job = failed(&env, "slow", "DeadlineExceeded").await;
    assert_eq!(
        condition(&job, "Failed").map(|c| c["message"].clone()),
        Some(json!("Job was active longer than specified deadline"))
    );
    assert_eq!(
        job["status"]["failed"], 2,
        "the deleted pods count: {job:#}"
    );
    let left = pods_until(&pods, "slow", "pods deleted", |l| l.is_empty()).await;
    assert!(left.is_empty());
}

#[tokio::test]
async fn crashing_containers_restart_then_back_off() {
    let env = sim_env().await;
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "crasher", "annotations": {"korral.dev/exit-code": "1"}},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create");
    let deadline = Instant::now() + WAIT;
    let pod = loop {
        let pod = serde_json::to_value(pods.get("crasher").await.expect("get")).expect("json");
        if pod["status"]["containerStatuses"][0]["state"]["waiting"].is_object() {
            break pod;
        }
        assert!(Instant::now() < deadline, "no back-off: {pod:#}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let status = &pod["status"]["containerStatuses"][0];
    let uid = pod["metadata"]["uid"].as_str().unwrap_or("");
    assert_eq!(phase(&pod), "Running");
    assert_eq!(status["restartCount"], 1);
    assert_eq!(status["ready"], false);
    assert_eq!(status["lastState"]["terminated"]["exitCode"], 1);
    assert_eq!(status["lastState"]["terminated"]["reason"], "Error");
    assert_eq!(status["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert_eq!(
        status["state"]["waiting"]["message"],
        format!("back-off 10s restarting failed container=app pod=crasher_default({uid})")
    );
    let ready = pod["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(ready["status"], "False");
    assert_eq!(ready["reason"], "ContainersNotReady");
}

#[tokio::test]
async fn a_matched_success_policy_completes_the_job_early() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let spec = json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3,
        "successPolicy": {"rules": [{"succeededIndexes": "2"}, {"succeededIndexes": "0-1", "succeededCount": 1}]}});
    let list = running_job(&jobs, &pods, "leader", spec, 3).await;
    // Index 1 succeeds: the second rule (one of indexes 0-1) matches.
    let index_one = list
        .iter()
        .find(|p| p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1")
        .map(|p| name(p).to_string())
        .expect("index 1");
    let patch = json!({"status": {"phase": "Succeeded"}});
    pods.patch_status(&index_one, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("succeed pod");
    let done = job_until(&jobs, "leader", "complete", |j| {
        condition(j, "Complete").is_some_and(|c| c["status"] == "True")
    })
    .await;
    for kind in ["SuccessCriteriaMet", "Complete"] {
        let c = condition(&done, kind).expect(kind);
        assert_eq!(c["reason"], "SuccessPolicy", "{done:#}");
        assert_eq!(c["message"], "Matched rules at index 1", "{done:#}");
    }
    assert_eq!(done["status"]["succeeded"], 1);
    assert_eq!(done["status"]["completedIndexes"], "1");
    assert_eq!(
        done["status"]["active"].as_i64().unwrap_or(0),
        0,
        "{done:#}"
    );
    // The other indexes' Pods were stopped.
    pods_until(&pods, "leader", "the others gone", |l| {
        l.iter().all(|p| phase(p) == "Succeeded")
    })
    .await;
}

#[tokio::test]
async fn the_back_off_outlives_the_failed_pods() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let spec = json!({"backoffLimit": 3});
    let job = job(
        "forgets",
        "Never",
        json!({"korral.dev/exit-code": "2"}),
        spec,
    );
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create");
    job_until(&jobs, "forgets", "one failure counted", |j| {
        j["status"]["failed"] == 1
    })
    .await;
    // The counted Pod is released: the client deletes it before its replacement is due.
    let list = pods_until(&pods, "forgets", "the failed pod released", |l| {
        l.len() == 1 && phase(&l[0]) == "Failed" && l[0]["metadata"].get("finalizers").is_none()
    })
    .await;
    let failed_at = list[0]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .expect("finished");
    let first = name(&list[0]).to_string();
    pods.delete(&first, &Default::default())
        .await
        .expect("delete the failed pod");
    // The Job remembers the failure: its replacement still waits the 10s back-off.
    let list = pods_until(&pods, "forgets", "a replacement", |l| {
        l.iter().any(|p| name(p) != first)
    })
    .await;
    let replacement = list.iter().find(|p| name(p) != first).expect("replacement");
    let replaced_at = replacement["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .expect("created");
    assert!(
        replaced_at.duration_since(failed_at) >= jiff::SignedDuration::from_secs(10),
        "the replacement waits the back-off of the deleted failure: failed {failed_at}, replaced {replaced_at}"
    );
}

#[tokio::test]
async fn a_job_made_anew_under_the_same_name_owes_nothing_to_the_old_back_off() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let failing = job(
        "again",
        "Never",
        json!({"korral.dev/exit-code": "2"}),
        json!({"backoffLimit": 3}),
    );
    jobs.create(&PostParams::default(), &failing)
        .await
        .expect("create");
    job_until(&jobs, "again", "one failure counted", |j| {
        j["status"]["failed"] == 1
    })
    .await;
    let list = pods_until(&pods, "again", "the failed pod", |l| {
        l.iter().any(|p| phase(p) == "Failed")
    })
    .await;
    let failed_at = list
        .iter()
        .find(|p| phase(p) == "Failed")
        .and_then(|p| {
            p["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"].as_str()
        })
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .expect("finished");
    // The Job goes (its back-off record with it, as upstream's `removeBackoffRecord`) and one
    // of the same name is made at once, within the old one's 10s back-off.
    jobs.delete("again", &kube::api::DeleteParams::background())
        .await
        .expect("delete");
    let deadline = Instant::now() + WAIT;
    while jobs.get_opt("again").await.expect("get").is_some() {
        assert!(Instant::now() < deadline, "timed out: the old job gone");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let fresh = job(
        "again",
        "Never",
        json!({"korral.dev/run-seconds": "3600"}),
        json!({"backoffLimit": 3}),
    );
    let created = jobs
        .create(&PostParams::default(), &fresh)
        .await
        .expect("create anew");
    let uid = created.metadata.uid.clone().unwrap_or_default();
    let ours = |p: &Value| p["metadata"]["ownerReferences"][0]["uid"] == uid.as_str();
    let list = pods_until(&pods, "again", "the new job's pod", |l| l.iter().any(ours)).await;
    let started_at = list
        .iter()
        .find(|p| ours(p))
        .and_then(|p| p["metadata"]["creationTimestamp"].as_str())
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .expect("created");
    assert!(
        started_at.duration_since(failed_at) < jiff::SignedDuration::from_secs(10),
        "the new job waited the old one's back-off: failed {failed_at}, started {started_at}"
    );
    let job = serde_json::to_value(jobs.get("again").await.expect("get")).expect("json");
    assert!(job["status"].get("failed").is_none(), "{job:#}");
}
