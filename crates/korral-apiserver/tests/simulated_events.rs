//! Events of the simulated components, as a cluster records them: what `kubectl describe`
//! shows for a Deployment, its ReplicaSet and Pods, a Job, a deleted Pod and a Pod the
//! scheduler cannot place.

mod common;

use common::*;
use serde_json::{Value, json};

/// The Events of `namespace` (core/v1), as one JSON list.
async fn events(env: &TestEnv, namespace: &str) -> Value {
    let path = format!("/api/v1/namespaces/{namespace}/events");
    let (status, list) = raw(&env.client(), "GET", &path, None, vec![]).await;
    assert_eq!(status, 200, "{list}");
    list
}

/// The Events about the object named `name` with `reason`.
fn about<'a>(list: &'a Value, name: &str, reason: &str) -> Vec<&'a Value> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["involvedObject"]["name"] == name && e["reason"] == reason)
        .collect()
}

async fn create(env: &TestEnv, path: &str, body: Value) -> Value {
    let (status, obj) = raw(
        &env.client(),
        "POST",
        path,
        Some("application/json"),
        serde_json::to_vec(&body).expect("body"),
    )
    .await;
    assert_eq!(status, 201, "{obj}");
    obj
}

#[tokio::test]
async fn a_deployment_rollout_is_recorded_as_upstreams_controllers_record_it() {
    let env = sim_env().await;
    create(
        &env,
        "/apis/apps/v1/namespaces/default/deployments",
        json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}}),
    )
    .await;
    let list = until(
        "every pod started",
        || events(&env, "default"),
        |list| {
            list["items"]
                .as_array()
                .is_some_and(|items| items.iter().filter(|e| e["reason"] == "Started").count() == 2)
        },
    )
    .await;
    // The Deployment controller scaled the new ReplicaSet up.
    let scaled = about(&list, "web", "ScalingReplicaSet");
    assert_eq!(scaled.len(), 1, "{list:#}");
    let scaled = scaled[0];
    let message = scaled["message"].as_str().expect("message");
    assert!(
        message.starts_with("Scaled up replica set web-") && message.ends_with(" from 0 to 2"),
        "{message}"
    );
    assert_eq!(scaled["type"], "Normal");
    assert_eq!(
        scaled["source"],
        json!({"component": "deployment-controller"})
    );
    assert_eq!(scaled["reportingComponent"], "deployment-controller");
    assert_eq!(scaled["involvedObject"]["kind"], "Deployment");
    assert_eq!(scaled["involvedObject"]["apiVersion"], "apps/v1");
    assert_eq!(scaled["count"], 1);
    let name = scaled["metadata"]["name"].as_str().expect("name");
    assert!(name.starts_with("web."), "{name}");
    let rs = message
        .trim_start_matches("Scaled up replica set ")
        .trim_end_matches(" from 0 to 2");
    // The ReplicaSet controller created two Pods.
    let created = about(&list, rs, "SuccessfulCreate");
    assert_eq!(created.len(), 2, "{list:#}");
    let pod = created[0]["message"]
        .as_str()
        .and_then(|m| m.strip_prefix("Created pod: "))
        .expect("pod name")
        .to_string();
    assert_eq!(
        created[0]["source"],
        json!({"component": "replicaset-controller"})
    );
    // The scheduler (events.k8s.io) and the kubelet on the Pod.
    let scheduled = about(&list, &pod, "Scheduled");
    assert_eq!(scheduled.len(), 1, "{list:#}");
    assert_eq!(
        scheduled[0]["message"],
        format!("Successfully assigned default/{pod} to korral-node")
    );
    assert_eq!(scheduled[0]["reportingComponent"], "default-scheduler");
    assert_eq!(scheduled[0]["action"], "Binding");
    assert!(scheduled[0]["eventTime"].is_string());
    for (reason, message) in [
        (
            "Pulled",
            "Container image \"nginx:1.25\" already present on machine",
        ),
        ("Created", "Created container: nginx"),
        ("Started", "Started container nginx"),
    ] {
        let found = about(&list, &pod, reason);
        assert_eq!(found.len(), 1, "{reason}: {list:#}");
        assert_eq!(found[0]["message"], message);
        assert_eq!(
            found[0]["involvedObject"]["fieldPath"],
            "spec.containers{nginx}"
        );
        assert_eq!(
            found[0]["source"],
            json!({"component": "kubelet", "host": "korral-node"})
        );
        assert_eq!(found[0]["reportingInstance"], "korral-node");
    }

    // Scaling up, down and up again repeats an identical event: counted, not written twice.
    for replicas in [3, 2, 3] {
        let (status, body) = raw(
            &env.client(),
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/web",
            Some("application/merge-patch+json"),
            serde_json::to_vec(&json!({"spec": {"replicas": replicas}})).expect("patch"),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let want = format!("from {} to {replicas}", if replicas == 3 { 2 } else { 3 });
        until(
            "the scaling recorded",
            || events(&env, "default"),
            |list| {
                about(list, "web", "ScalingReplicaSet")
                    .iter()
                    .any(|e| e["message"].as_str().is_some_and(|m| m.ends_with(&want)))
            },
        )
        .await;
    }
    let list = until(
        "the repeat counted",
        || events(&env, "default"),
        |list| {
            about(list, "web", "ScalingReplicaSet")
                .iter()
                .any(|e| e["count"] == 2)
        },
    )
    .await;
    let up = about(&list, "web", "ScalingReplicaSet")
        .into_iter()
        .filter(|e| e["message"] == format!("Scaled up replica set {rs} from 2 to 3"))
        .collect::<Vec<_>>();
    assert_eq!(up.len(), 1, "{list:#}");
    assert_eq!(up[0]["count"], 2);
    assert_ne!(up[0]["firstTimestamp"], Value::Null);

    // Deleting a Pod: the kubelet stops its container.
    let (status, pods) = raw(
        &env.client(),
        "GET",
        "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb",
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 200, "{pods}");
    let pod = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null())
        .and_then(|p| p["metadata"]["name"].as_str())
        .expect("a running pod")
        .to_string();
    let (status, body) = raw(
        &env.client(),
        "DELETE",
        &format!("/api/v1/namespaces/default/pods/{pod}"),
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let list = until(
        "the container stopped",
        || events(&env, "default"),
        |list| !about(list, &pod, "Killing").is_empty(),
    )
    .await;
    assert_eq!(
        about(&list, &pod, "Killing")[0]["message"],
        "Stopping container nginx"
    );
}

#[tokio::test]
async fn jobs_and_unschedulable_pods_are_recorded() {
    let env = sim_env().await;
    create(
        &env,
        "/apis/batch/v1/namespaces/default/jobs",
        json!({"metadata": {"name": "once"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox:1.36"}]}}}}),
    )
    .await;
    let list = until(
        "the job completed",
        || events(&env, "default"),
        |list| !about(list, "once", "Completed").is_empty(),
    )
    .await;
    assert_eq!(
        about(&list, "once", "Completed")[0]["message"],
        "Job completed"
    );
    let created = about(&list, "once", "SuccessfulCreate");
    assert_eq!(created.len(), 1, "{list:#}");
    assert_eq!(created[0]["source"], json!({"component": "job-controller"}));

    // An autoscaler raising its target to `minReplicas`.
    create(
        &env,
        "/apis/apps/v1/namespaces/default/deployments",
        json!({"metadata": {"name": "scaled"}, "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "scaled"}},
            "template": {"metadata": {"labels": {"app": "scaled"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}}}),
    )
    .await;
    create(
        &env,
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
        json!({"metadata": {"name": "scaled"}, "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "scaled"},
            "minReplicas": 2, "maxReplicas": 3}}),
    )
    .await;
    let list = until(
        "the target rescaled",
        || events(&env, "default"),
        |list| {
            list["items"].as_array().into_iter().flatten().any(|e| {
                e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"
                    && e["reason"] == "SuccessfulRescale"
            })
        },
    )
    .await;
    let rescaled = about(&list, "scaled", "SuccessfulRescale");
    assert_eq!(
        rescaled[0]["message"],
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
    );
    assert_eq!(
        rescaled[0]["source"],
        json!({"component": "horizontal-pod-autoscaler"})
    );

    // A crashing container: the kubelet backs off restarting it.
    let crashing = create(
        &env,
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"name": "crashing", "annotations": {"korral.dev/exit-code": "1"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}),
    )
    .await;
    let list = until(
        "the container backing off",
        || events(&env, "default"),
        |list| !about(list, "crashing", "BackOff").is_empty(),
    )
    .await;
    let backoff = about(&list, "crashing", "BackOff");
    assert_eq!(backoff[0]["type"], "Warning");
    assert_eq!(
        backoff[0]["message"],
        format!(
            "Back-off restarting failed container main in pod crashing_default({})",
            crashing["metadata"]["uid"].as_str().expect("uid")
        )
    );
    assert_eq!(
        backoff[0]["involvedObject"]["fieldPath"],
        "spec.containers{main}"
    );

    // A cordoned node: the scheduler records why the Pod waits, once.
    let (status, body) = raw(
        &env.client(),
        "PATCH",
        "/api/v1/nodes/korral-node",
        Some("application/merge-patch+json"),
        serde_json::to_vec(&json!({"spec": {"unschedulable": true}})).expect("patch"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    create(
        &env,
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"name": "waiting"}, "spec": {
            "containers": [{"name": "main", "image": "busybox:1.36"}]}}),
    )
    .await;
    let list = until(
        "the pod found unschedulable",
        || events(&env, "default"),
        |list| !about(list, "waiting", "FailedScheduling").is_empty(),
    )
    .await;
    let failed = about(&list, "waiting", "FailedScheduling");
    assert_eq!(failed.len(), 1, "{list:#}");
    assert_eq!(failed[0]["type"], "Warning");
    assert_eq!(failed[0]["reportingComponent"], "default-scheduler");
    // The node's registration, as its kubelet and the node controller record it.
    for (reason, message, source) in [
        ("Starting", "Starting kubelet.", "kubelet"),
        (
            "NodeReady",
            "Node korral-node status is now: NodeReady",
            "kubelet",
        ),
        (
            "RegisteredNode",
            "Node korral-node event: Registered Node korral-node in Controller",
            "node-controller",
        ),
    ] {
        let found = about(&list, "korral-node", reason);
        assert_eq!(found.len(), 1, "{reason}: {list:#}");
        assert_eq!(found[0]["message"], message);
        assert_eq!(found[0]["source"]["component"], source);
        assert_eq!(found[0]["involvedObject"]["kind"], "Node");
    }
    assert_eq!(
        about(&list, "korral-node", "Starting")[0]["involvedObject"]["uid"],
        "korral-node"
    );
    assert!(
        failed[0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("0/1 nodes are available")),
        "{list:#}"
    );
}

#[tokio::test]
async fn stateful_sets_and_daemon_sets_record_their_pods() {
    let env = sim_env().await;
    let template = json!({"metadata": {"labels": {"app": "db"}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}});
    create(
        &env,
        "/apis/apps/v1/namespaces/default/statefulsets",
        json!({"metadata": {"name": "db"}, "spec": {"replicas": 1, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}}, "template": template}}),
    )
    .await;
    let mut agent = template.clone();
    agent["metadata"]["labels"] = json!({"app": "agent"});
    create(
        &env,
        "/apis/apps/v1/namespaces/default/daemonsets",
        json!({"metadata": {"name": "agent"}, "spec": {
            "selector": {"matchLabels": {"app": "agent"}}, "template": agent}}),
    )
    .await;
    let list = until(
        "both controllers recorded their pods",
        || events(&env, "default"),
        |list| {
            !about(list, "db", "SuccessfulCreate").is_empty()
                && !about(list, "agent", "SuccessfulCreate").is_empty()
        },
    )
    .await;
    let sts = about(&list, "db", "SuccessfulCreate");
    assert_eq!(
        sts[0]["message"],
        "create Pod db-0 in StatefulSet db successful"
    );
    assert_eq!(
        sts[0]["source"],
        json!({"component": "statefulset-controller"})
    );
    let ds = about(&list, "agent", "SuccessfulCreate");
    assert!(
        ds[0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Created pod: agent-")),
        "{list:#}"
    );
    assert_eq!(
        ds[0]["source"],
        json!({"component": "daemonset-controller"})
    );
    // Scaling the StatefulSet down deletes its Pod: recorded too.
    let (status, body) = raw(
        &env.client(),
        "PATCH",
        "/apis/apps/v1/namespaces/default/statefulsets/db",
        Some("application/merge-patch+json"),
        serde_json::to_vec(&json!({"spec": {"replicas": 0}})).expect("patch"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let list = until(
        "the pod deletion recorded",
        || events(&env, "default"),
        |list| !about(list, "db", "SuccessfulDelete").is_empty(),
    )
    .await;
    assert_eq!(
        about(&list, "db", "SuccessfulDelete")[0]["message"],
        "delete Pod db-0 in StatefulSet db successful"
    );
}

/// Sends a merge patch to `path` and expects it to succeed.
async fn merge_patch(env: &TestEnv, path: &str, patch: Value) -> Value {
    let (status, body) = raw(
        &env.client(),
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        serde_json::to_vec(&patch).expect("patch"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The messages of the Events about `name` with `reason`.
fn messages(list: &Value, name: &str, reason: &str) -> Vec<String> {
    about(list, name, reason)
        .iter()
        .filter_map(|e| e["message"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn more_than_ten_similar_events_are_combined() {
    let env = sim_env().await;
    create(
        &env,
        "/apis/apps/v1/namespaces/default/replicasets",
        json!({"metadata": {"name": "many"}, "spec": {"replicas": 12,
            "selector": {"matchLabels": {"app": "many"}},
            "template": {"metadata": {"labels": {"app": "many"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}}}),
    )
    .await;
    // Twelve pods: the first nine creations are Events of their own, the tenth is combined
    // and the last two count on it.
    let list = until(
        "the creations combined",
        || events(&env, "default"),
        |list| {
            about(list, "many", "SuccessfulCreate")
                .iter()
                .any(|e| e["count"] == 3)
        },
    )
    .await;
    let created = about(&list, "many", "SuccessfulCreate");
    assert_eq!(created.len(), 10, "{list:#}");
    let (combined, single): (Vec<&Value>, Vec<&Value>) = created.into_iter().partition(|e| {
        e["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("(combined from similar events): Created pod: many-"))
    });
    assert_eq!(combined.len(), 1, "{list:#}");
    assert_eq!(combined[0]["count"], 3);
    assert_eq!(combined[0]["type"], "Normal");
    assert_eq!(
        combined[0]["source"],
        json!({"component": "replicaset-controller"})
    );
    assert_eq!(combined[0]["reportingComponent"], "");
    assert_eq!(single.len(), 9);
    for event in single {
        assert_eq!(event["count"], 1);
        assert_eq!(event["reportingComponent"], "replicaset-controller");
    }
}

#[tokio::test]
async fn stateful_sets_record_the_claims_they_make() {
    let env = sim_env().await;
    let claim_spec = json!({"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "1Gi"}}});
    create(
        &env,
        "/apis/apps/v1/namespaces/default/statefulsets",
        json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "serviceName": "web",
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "www", "labels": {"tier": "storage"}},
                "spec": claim_spec}]}}),
    )
    .await;
    let list = until(
        "the claim and the pod recorded",
        || events(&env, "default"),
        |list| about(list, "web", "SuccessfulCreate").len() == 2,
    )
    .await;
    let created = messages(&list, "web", "SuccessfulCreate");
    assert!(
        created.contains(&"create Claim www-web-0 Pod web-0 in StatefulSet web success".into()),
        "{created:?}"
    );
    assert!(
        created.contains(&"create Pod web-0 in StatefulSet web successful".into()),
        "{created:?}"
    );
    let (status, claim) = raw(
        &env.client(),
        "GET",
        "/api/v1/namespaces/default/persistentvolumeclaims/www-web-0",
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 200, "{claim}");
    assert_eq!(
        claim["metadata"]["labels"],
        json!({"tier": "storage", "app": "web"})
    );

    // A claim being deleted: the Pod that would mount it is not created.
    create(
        &env,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        json!({"metadata": {"name": "www-web-1", "finalizers": ["example.com/hold"]},
            "spec": claim_spec}),
    )
    .await;
    let (status, body) = raw(
        &env.client(),
        "DELETE",
        "/api/v1/namespaces/default/persistentvolumeclaims/www-web-1",
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    merge_patch(
        &env,
        "/apis/apps/v1/namespaces/default/statefulsets/web",
        json!({"spec": {"replicas": 2}}),
    )
    .await;
    let list = until(
        "the pod's creation failed",
        || events(&env, "default"),
        |list| !about(list, "web", "FailedCreate").is_empty(),
    )
    .await;
    let failed = about(&list, "web", "FailedCreate");
    assert_eq!(failed[0]["type"], "Warning");
    assert_eq!(
        failed[0]["message"],
        "create Pod web-1 in StatefulSet web failed error: pvc www-web-1 is being deleted"
    );
    let (status, _) = raw(
        &env.client(),
        "GET",
        "/api/v1/namespaces/default/pods/web-1",
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 404, "no pod without its claim");
}

/// Two years ago, as the API writes times: a yearly schedule's latest time is due since.
fn two_years_ago() -> String {
    jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_hours(2 * 366 * 24))
        .expect("past")
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A CronJob running on New Year's Day (so no run comes due while a test runs unless its
/// last schedule time is moved back) with `job_spec` as its Jobs' spec and `spec` besides.
fn yearly(name: &str, job_spec: Value, spec: Value) -> Value {
    let mut cron_job = json!({"metadata": {"name": name}, "spec": {"schedule": "0 0 1 1 *",
        "jobTemplate": {"spec": job_spec}}});
    if let (Some(all), Some(extra)) = (cron_job["spec"].as_object_mut(), spec.as_object()) {
        all.extend(extra.clone());
    }
    cron_job
}

/// A Job spec whose Pod runs to completion.
fn job_spec(extra: Value) -> Value {
    let mut spec = json!({"template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox:1.36"}]}}});
    if let (Some(all), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        all.extend(extra.clone());
    }
    spec
}

#[tokio::test]
async fn cron_jobs_record_the_jobs_they_start_see_finish_and_delete() {
    let env = sim_env().await;
    let cron_job = create(
        &env,
        "/apis/batch/v1/namespaces/default/cronjobs",
        yearly(
            "nightly",
            job_spec(json!({})),
            json!({"successfulJobsHistoryLimit": 1}),
        ),
    )
    .await;
    // A Job made for it by someone else.
    create(
        &env,
        "/apis/batch/v1/namespaces/default/jobs",
        json!({"metadata": {"name": "nightly-manual", "ownerReferences": [{
                "apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly",
                "uid": cron_job["metadata"]["uid"], "controller": true}]},
            "spec": job_spec(json!({"suspend": true}))}),
    )
    .await;
    let list = until(
        "the unexpected job seen",
        || events(&env, "default"),
        |list| !about(list, "nightly", "UnexpectedJob").is_empty(),
    )
    .await;
    let unexpected = about(&list, "nightly", "UnexpectedJob");
    assert_eq!(unexpected[0]["type"], "Warning");
    assert_eq!(
        unexpected[0]["message"],
        "Saw a job that the controller did not create or forgot: nightly-manual"
    );
    assert_eq!(
        unexpected[0]["source"],
        json!({"component": "cronjob-controller"})
    );
    // That Job is an old run, finished long ago.
    until(
        "the job controller saw the suspended job",
        || async {
            let path = "/apis/batch/v1/namespaces/default/jobs/nightly-manual";
            raw(&env.client(), "GET", path, None, vec![]).await.1
        },
        |job| {
            job["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Suspended"))
        },
    )
    .await;
    let done = |t: &str| json!({"type": t, "status": "True", "lastTransitionTime": "2026-01-01T10:01:00Z"});
    merge_patch(
        &env,
        "/apis/batch/v1/namespaces/default/jobs/nightly-manual/status",
        json!({"status": {"startTime": "2026-01-01T10:00:00Z",
            "completionTime": "2026-01-01T10:01:00Z", "succeeded": 1,
            "conditions": [done("SuccessCriteriaMet"), done("Complete")]}}),
    )
    .await;
    // Its last scheduled time two years ago: this year's run is due.
    merge_patch(
        &env,
        "/apis/batch/v1/namespaces/default/cronjobs/nightly/status",
        json!({"status": {"lastScheduleTime": two_years_ago()}}),
    )
    .await;
    let list = until(
        "the scheduled job started, finished and the old one deleted",
        || events(&env, "default"),
        |list| {
            let saw = messages(list, "nightly", "SawCompletedJob");
            !about(list, "nightly", "SuccessfulDelete").is_empty()
                && saw.iter().any(|m| !m.contains("nightly-manual"))
        },
    )
    .await;
    let created = messages(&list, "nightly", "SuccessfulCreate");
    let job = created
        .iter()
        .find_map(|m| m.strip_prefix("Created job "))
        .expect("a job created")
        .to_string();
    assert!(
        job.strip_prefix("nightly-")
            .is_some_and(|minutes| minutes.parse::<i64>().is_ok()),
        "{job}"
    );
    assert!(
        messages(&list, "nightly", "SawCompletedJob")
            .contains(&format!("Saw completed job: {job}, condition: Complete")),
        "{list:#}"
    );
    assert_eq!(
        messages(&list, "nightly", "SuccessfulDelete"),
        ["Deleted job nightly-manual"],
        "the oldest successful job beyond the history limit"
    );
}

#[tokio::test]
async fn cron_jobs_record_an_active_job_gone_missing() {
    let env = sim_env().await;
    create(
        &env,
        "/apis/batch/v1/namespaces/default/cronjobs",
        yearly("paused", job_spec(json!({"suspend": true})), json!({})),
    )
    .await;
    merge_patch(
        &env,
        "/apis/batch/v1/namespaces/default/cronjobs/paused/status",
        json!({"status": {"lastScheduleTime": two_years_ago()}}),
    )
    .await;
    let cron_job = until(
        "the scheduled job is active",
        || async {
            let path = "/apis/batch/v1/namespaces/default/cronjobs/paused";
            raw(&env.client(), "GET", path, None, vec![]).await.1
        },
        |cj| {
            cj["status"]["active"]
                .as_array()
                .is_some_and(|a| a.len() == 1)
        },
    )
    .await;
    let job = cron_job["status"]["active"][0]["name"]
        .as_str()
        .expect("job name")
        .to_string();
    let (status, body) = raw(
        &env.client(),
        "DELETE",
        &format!("/apis/batch/v1/namespaces/default/jobs/{job}"),
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let list = until(
        "the missing job noticed",
        || events(&env, "default"),
        |list| !about(list, "paused", "MissingJob").is_empty(),
    )
    .await;
    assert_eq!(
        messages(&list, "paused", "MissingJob"),
        [format!("Active job went missing: {job}")]
    );
    assert_eq!(
        messages(&list, "paused", "SuccessfulCreate"),
        [format!("Created job {job}")]
    );
    assert!(
        about(&list, "paused", "UnexpectedJob").is_empty(),
        "{list:#}"
    );
}
