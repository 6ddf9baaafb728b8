//! apps/v1 and batch/v1 validation through the server, against upstream's answers
//! (`k8s-reference/builtin/invalid-{deployment,job,cronjob}-*.json`): code, reason, message and
//! causes, and that a refused write changes nothing.

mod common;

use common::*;
use serde_json::{Value, json};

fn deployment(name: &str, replicas: i64, selector: &str, label: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": selector}},
            "template": {
                "metadata": {"labels": {"app": label}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
            },
        },
    })
}

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

async fn post(env: &TestEnv, path: &str, body: &Value) -> (u16, Value) {
    raw(
        &env.client(),
        "POST",
        path,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await
}

async fn put(env: &TestEnv, path: &str, body: &Value) -> (u16, Value) {
    raw(
        &env.client(),
        "PUT",
        path,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await
}

#[tokio::test]
async fn deployments_are_refused_as_upstream_refuses_them() {
    let env = TestEnv::start().await.expect("env");
    let negative = post(&env, DEPLOYMENTS, &deployment("web", -1, "web", "web")).await;
    assert_invalid(
        &negative,
        "Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        &[(
            "FieldValueInvalid",
            "Invalid value: -1: must be greater than or equal to 0",
            "spec.replicas",
        )],
    );
    let mismatch = post(&env, DEPLOYMENTS, &deployment("bad", 1, "a", "b")).await;
    assert_invalid(
        &mismatch,
        "Deployment.apps \"bad\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"b\"}: `selector` does not match template `labels`",
        &[(
            "FieldValueInvalid",
            "Invalid value: {\"app\":\"b\"}: `selector` does not match template `labels`",
            "spec.template.metadata.labels",
        )],
    );
    let (code, _) = raw(
        &env.client(),
        "GET",
        &format!("{DEPLOYMENTS}/bad"),
        None,
        vec![],
    )
    .await;
    assert_eq!(code, 404, "a refused create stores nothing");

    // The selector is immutable: the stored object is kept as it was.
    let (code, created) = post(&env, DEPLOYMENTS, &deployment("web", 1, "web", "web")).await;
    assert_eq!(code, 201, "{created}");
    let mut changed = created.clone();
    changed["spec"]["selector"] = json!({"matchLabels": {"app": "x"}});
    changed["spec"]["template"]["metadata"]["labels"] = json!({"app": "x"});
    let refused = put(&env, &format!("{DEPLOYMENTS}/web"), &changed).await;
    assert_invalid(
        &refused,
        "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"x\"}}: field is immutable",
        &[(
            "FieldValueInvalid",
            "Invalid value: {\"matchLabels\":{\"app\":\"x\"}}: field is immutable",
            "spec.selector",
        )],
    );
    let (_, stored) = raw(
        &env.client(),
        "GET",
        &format!("{DEPLOYMENTS}/web"),
        None,
        vec![],
    )
    .await;
    assert_eq!(
        stored["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
    assert_eq!(
        stored["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );

    // Pod template rules reach workloads: a container without an image.
    let mut no_image = deployment("noimg", 1, "n", "n");
    no_image["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .map(|c| c.remove("image"));
    let (code, body) = post(&env, DEPLOYMENTS, &no_image).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["field"], "spec.template.spec.containers[0].image",
        "{body}"
    );
}

#[tokio::test]
async fn job_templates_are_immutable_and_cron_schedules_parsed() {
    let env = TestEnv::start().await.expect("env");
    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "alpine"}]}}},
    });
    let (code, created) = post(&env, jobs, &job).await;
    assert_eq!(code, 201, "{created}");
    let mut changed = created.clone();
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox");
    let (code, body) = put(&env, &format!("{jobs}/j"), &changed).await;
    assert_eq!(code, 422, "{body}");
    let cause = &body["details"]["causes"][0];
    assert_eq!(cause["field"], "spec.template", "{body}");
    assert!(
        cause["message"]
            .as_str()
            .is_some_and(|m| m.ends_with(": field is immutable")),
        "{body}"
    );
    // A Job whose template restarts Always is refused (upstream: Required, as for a policy
    // left to the pod default).
    let mut always = job.clone();
    always["metadata"]["name"] = json!("always");
    always["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    let (code, body) = post(&env, jobs, &always).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Required value: valid values: \"OnFailure\", \"Never\""
    );

    let cron = json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj2"},
        "spec": {"schedule": "not a schedule", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}},
    });
    let refused = post(&env, "/apis/batch/v1/namespaces/default/cronjobs", &cron).await;
    assert_invalid(
        &refused,
        "CronJob.batch \"cj2\" is invalid: spec.schedule: Invalid value: \"not a schedule\": expected exactly 5 fields, found 3: [not a schedule]",
        &[(
            "FieldValueInvalid",
            "Invalid value: \"not a schedule\": expected exactly 5 fields, found 3: [not a schedule]",
            "spec.schedule",
        )],
    );
    let mut valid = cron.clone();
    valid["spec"]["schedule"] = json!("*/5 * * * *");
    let (code, body) = post(&env, "/apis/batch/v1/namespaces/default/cronjobs", &valid).await;
    assert_eq!(code, 201, "{body}");
}

/// Status writes of the apps/v1 workloads follow upstream's status rules (counters not
/// negative, none above `status.replicas`, available not above ready, `collisionCount` never
/// decremented) and a refused write changes nothing; DaemonSets carry upstream's template
/// generation annotation, bumped when the template changes.
#[tokio::test]
async fn workload_status_writes_and_daemon_set_template_generation() {
    let env = TestEnv::start().await.expect("env");
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let (code, created) = post(&env, deployments, &deployment("web", 2, "web", "web")).await;
    assert_eq!(code, 201, "{created}");
    let status_path = format!("{deployments}/web/status");
    let mut good = created.clone();
    good["status"] =
        json!({"replicas": 2, "readyReplicas": 2, "availableReplicas": 1, "collisionCount": 3});
    let (code, stored) = put(&env, &status_path, &good).await;
    assert_eq!(code, 200, "{stored}");

    let mut bad = stored.clone();
    bad["status"] = json!({"replicas": 1, "updatedReplicas": -1, "readyReplicas": 1,
                           "availableReplicas": 2, "collisionCount": 2});
    let answer = put(&env, &status_path, &bad).await;
    assert_invalid(
        &answer,
        "Deployment.apps \"web\" is invalid: [status.updatedReplicas: Invalid value: -1: must be greater than or equal to 0, status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas, status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas, status.collisionCount: Invalid value: 2: cannot be decremented]",
        &[
            (
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 0",
                "status.updatedReplicas",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: 2: cannot be greater than status.replicas",
                "status.availableReplicas",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: 2: cannot be greater than readyReplicas",
                "status.availableReplicas",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: 2: cannot be decremented",
                "status.collisionCount",
            ),
        ],
    );
    let (_, now) = put(&env, &status_path, &stored).await;
    assert_eq!(
        now["status"], stored["status"],
        "the refused write changed nothing"
    );

    // A StatefulSet's bound on available replicas names `status.readyReplicas`.
    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "c", "image": "postgres"}]}}}});
    let statefulsets = "/apis/apps/v1/namespaces/default/statefulsets";
    let (code, created) = post(&env, statefulsets, &sts).await;
    assert_eq!(code, 201, "{created}");
    let mut bad = created.clone();
    bad["status"] = json!({"replicas": 3, "readyReplicas": 1, "availableReplicas": 2});
    let (code, body) = put(&env, &format!("{statefulsets}/db/status"), &bad).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Invalid value: 2: cannot be greater than status.readyReplicas"
    );

    // DaemonSets: generation annotation 1 on create, +1 on a template change only.
    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "c", "image": "agent:1"}]}}}});
    let daemonsets = "/apis/apps/v1/namespaces/default/daemonsets";
    let (code, created) = post(&env, daemonsets, &ds).await;
    assert_eq!(code, 201, "{created}");
    let annotation = |o: &Value| {
        o["metadata"]["annotations"]["deprecated.daemonset.template.generation"].clone()
    };
    assert_eq!(annotation(&created), json!("1"));
    let mut relabelled = created.clone();
    relabelled["metadata"]["labels"] = json!({"team": "infra"});
    let (code, same) = put(&env, &format!("{daemonsets}/agent"), &relabelled).await;
    assert_eq!(code, 200, "{same}");
    assert_eq!(annotation(&same), json!("1"));
    let mut retemplated = same.clone();
    retemplated["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
    let (code, bumped) = put(&env, &format!("{daemonsets}/agent"), &retemplated).await;
    assert_eq!(code, 200, "{bumped}");
    assert_eq!(annotation(&bumped), json!("2"));
    let mut negative = bumped.clone();
    negative["status"] = json!({"currentNumberScheduled": 0, "numberMisscheduled": -1,
                                "desiredNumberScheduled": 0, "numberReady": 0});
    let (code, body) = put(&env, &format!("{daemonsets}/agent/status"), &negative).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "status.numberMisscheduled"
    );
}

#[tokio::test]
async fn stateful_set_ordinals_and_claim_retention_are_validated() {
    let env = TestEnv::start().await.expect("env");
    let statefulsets = "/apis/apps/v1/namespaces/default/statefulsets";
    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "ordinals": {"start": -1},
                 "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Forget"},
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "c", "image": "postgres"}]}}}});
    let refused = post(&env, statefulsets, &sts).await;
    assert_invalid(
        &refused,
        "StatefulSet.apps \"db\" is invalid: [spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: \"Forget\": supported values: \"Retain\", \"Delete\", spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0]",
        &[
            (
                "FieldValueNotSupported",
                "Unsupported value: \"Forget\": supported values: \"Retain\", \"Delete\"",
                "spec.persistentVolumeClaimRetentionPolicy.whenScaled",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 0",
                "spec.ordinals.start",
            ),
        ],
    );
    // The defaults fill the policy the user left out; the start ordinal may change later.
    let mut fixed = sts.clone();
    fixed["spec"]["ordinals"] = json!({"start": 5});
    fixed["spec"]["persistentVolumeClaimRetentionPolicy"] = json!({"whenScaled": "Delete"});
    let (code, created) = post(&env, statefulsets, &fixed).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Delete"})
    );
    let mut moved = created.clone();
    moved["spec"]["ordinals"]["start"] = json!(7);
    let (code, updated) = put(&env, &format!("{statefulsets}/db"), &moved).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"]["ordinals"]["start"], 7);
}
