//! batch/v1 through the server: upstream's Job and CronJob validation (pod failure and success
//! policies, per-index backoff limits, `managedBy`, `/status` rules) answered as 422 `Invalid`
//! with upstream's message and causes, nothing stored on a refusal; and the simulated CronJob
//! (`concurrencyPolicy`, `suspend`, history limits) and TTL-after-finished controllers.
//!
//! Time: the CronJob controller reads the wall clock, and a test does not wait for the next
//! minute. It backdates `status.lastScheduleTime` through `/status` (the controller then owes
//! the current minute's run), and a Job the test creates under the CronJob (controller
//! reference, suspended so it stays active) stands for a run in progress.

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
const CRON_JOBS: &str = "/apis/batch/v1/namespaces/default/cronjobs";
const WAIT: Duration = Duration::from_secs(20);
const MERGE: &str = "application/merge-patch+json";

/// A Job named `name` whose pods never restart, with a container `c` and an init container
/// `i`, `spec` merged over its spec.
fn job(name: &str, spec: Value) -> Value {
    let mut job = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}],
            "initContainers": [{"name": "i", "image": "busybox"}]}}},
    });
    for (k, v) in spec.as_object().expect("spec") {
        job["spec"][k] = v.clone();
    }
    job
}

/// A refused Job: one cause, the message upstream aggregates from it.
fn one(
    kind: &str,
    name: &str,
    reason: &str,
    field: &str,
    message: &str,
) -> (String, Vec<(String, String, String)>) {
    (
        format!("{kind}.batch \"{name}\" is invalid: {field}: {message}"),
        vec![(reason.to_string(), message.to_string(), field.to_string())],
    )
}

#[tokio::test]
async fn job_specs_are_refused_as_upstream_refuses_them() {
    let env = TestEnv::start().await.expect("env");
    let rule = |r: Value| json!({"podFailurePolicy": {"rules": [r]}});
    let indexed = |extra: Value| {
        let mut spec = json!({"completionMode": "Indexed", "completions": 5});
        for (k, v) in extra.as_object().expect("extra") {
            spec[k] = v.clone();
        }
        spec
    };
    let cases: Vec<(&str, Value, &str, &str, &str)> = vec![
        (
            "pfp-empty",
            rule(json!({"action": "FailJob"})),
            "FieldValueInvalid",
            "spec.podFailurePolicy.rules[0]",
            "Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
        ),
        (
            "pfp-dup",
            rule(
                json!({"action": "FailJob", "onExitCodes": {"operator": "In", "values": [11, 11]}}),
            ),
            "FieldValueDuplicate",
            "spec.podFailurePolicy.rules[0].onExitCodes.values[1]",
            "Duplicate value: 11",
        ),
        (
            "pfp-order",
            rule(
                json!({"action": "FailJob", "onExitCodes": {"operator": "In", "values": [19, 11]}}),
            ),
            "FieldValueInvalid",
            "spec.podFailurePolicy.rules[0].onExitCodes.values",
            "Invalid value: []int32{19, 11}: must be ordered",
        ),
        (
            "pfp-action",
            rule(json!({"action": "Explode", "onExitCodes": {"operator": "In", "values": [1]}})),
            "FieldValueNotSupported",
            "spec.podFailurePolicy.rules[0].action",
            "Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
        ),
        (
            "pfp-container",
            rule(
                json!({"action": "Ignore", "onExitCodes": {"containerName": "xyz", "operator": "In", "values": [1]}}),
            ),
            "FieldValueInvalid",
            "spec.podFailurePolicy.rules[0].onExitCodes.containerName",
            "Invalid value: \"xyz\": must be one of the container or initContainer names in the pod template",
        ),
        // (A pattern without a status is defaulted to True, as upstream defaults it.)
        (
            "pfp-status",
            rule(
                json!({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]}),
            ),
            "FieldValueNotSupported",
            "spec.podFailurePolicy.rules[0].onPodConditions[0].status",
            "Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
        ),
        (
            "pfp-type",
            rule(
                json!({"action": "Ignore", "onPodConditions": [{"type": "Bad Type", "status": "True"}]}),
            ),
            "FieldValueInvalid",
            "spec.podFailurePolicy.rules[0].onPodConditions[0].type",
            "Invalid value: \"Bad Type\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            "pfp-failindex",
            rule(json!({"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}})),
            "FieldValueInvalid",
            "spec.podFailurePolicy.rules[0].action",
            "Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set",
        ),
        (
            "replacement",
            json!({"podReplacementPolicy": "TerminatingOrFailed", "podFailurePolicy": {"rules": []}}),
            "FieldValueNotSupported",
            "spec.podReplacementPolicy",
            "Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\"",
        ),
        (
            "success-mode",
            json!({"successPolicy": {"rules": [{"succeededCount": 1}]}}),
            "FieldValueInvalid",
            "spec.successPolicy",
            "Invalid value: batch.SuccessPolicy{Rules:[]batch.SuccessPolicyRule{batch.SuccessPolicyRule{SucceededIndexes:(*string)(nil), SucceededCount:(*int32)(0xc000000000)}}}: requires indexed completion mode",
        ),
        (
            "success-format",
            indexed(json!({"successPolicy": {"rules": [{"succeededIndexes": "invalid-format"}]}})),
            "FieldValueInvalid",
            "spec.successPolicy.rules[0].succeededIndexes",
            "Invalid value: \"invalid-format\": error parsing succeededIndexes: cannot convert string to integer for index: \"invalid\"",
        ),
        (
            "success-count",
            indexed(
                json!({"successPolicy": {"rules": [{"succeededCount": 4, "succeededIndexes": "0-2"}]}}),
            ),
            "FieldValueInvalid",
            "spec.successPolicy.rules[0].succeededCount",
            "Invalid value: 4: must be less than or equal to 3 (the number of indexes in the specified succeededIndexes field)",
        ),
        (
            "per-index",
            json!({"backoffLimitPerIndex": 1}),
            "FieldValueInvalid",
            "spec.backoffLimitPerIndex",
            "Invalid value: 1: requires indexed completion mode",
        ),
        (
            "max-failed",
            indexed(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 6})),
            "FieldValueInvalid",
            "spec.maxFailedIndexes",
            "Invalid value: 6: must be less than or equal to completions",
        ),
        (
            "managed",
            json!({"managedBy": "invalid custom controller name"}),
            "FieldValueInvalid",
            "spec.managedBy",
            "Invalid value: \"invalid custom controller name\": must be a domain-prefixed path (such as \"acme.io/foo\")",
        ),
    ];
    for (name, spec, reason, field, message) in cases {
        let (msg, causes) = one("Job", name, reason, field, message);
        let causes: Vec<(&str, &str, &str)> = causes
            .iter()
            .map(|(r, m, f)| (r.as_str(), m.as_str(), f.as_str()))
            .collect();
        assert_invalid(
            &call_as(&env, "POST", JOBS, "application/json", &job(name, spec)).await,
            &msg,
            &causes,
        );
        let (code, _) = call_as(
            &env,
            "GET",
            &format!("{JOBS}/{name}"),
            "application/json",
            &Value::Null,
        )
        .await;
        assert_eq!(code, 404, "{name}: nothing is stored");
    }

    // Several causes at once, in upstream's order; `Always` pods are refused as Required.
    let mut always = job("always", json!({"backoffLimitPerIndex": -1}));
    always["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    assert_invalid(
        &call_as(&env, "POST", JOBS, "application/json", &always).await,
        "Job.batch \"always\" is invalid: [spec.backoffLimitPerIndex: Invalid value: -1: must be greater than or equal to 0, spec.backoffLimitPerIndex: Invalid value: -1: requires indexed completion mode, spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"]",
        &[
            (
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 0",
                "spec.backoffLimitPerIndex",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: -1: requires indexed completion mode",
                "spec.backoffLimitPerIndex",
            ),
            (
                "FieldValueRequired",
                "Required value: valid values: \"OnFailure\", \"Never\"",
                "spec.template.spec.restartPolicy",
            ),
        ],
    );

    // The same rules hold for a CronJob's job template.
    let cron = json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {
            "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
            "template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}},
    });
    let (msg, causes) = one(
        "CronJob",
        "cj",
        "FieldValueInvalid",
        "spec.jobTemplate.spec.template.spec.restartPolicy",
        "Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified",
    );
    let causes: Vec<(&str, &str, &str)> = causes
        .iter()
        .map(|(r, m, f)| (r.as_str(), m.as_str(), f.as_str()))
        .collect();
    assert_invalid(
        &call_as(&env, "POST", CRON_JOBS, "application/json", &cron).await,
        &msg,
        &causes,
    );

    // Valid policies are stored as sent.
    let good = job(
        "good",
        json!({"completionMode": "Indexed", "completions": 5, "parallelism": 5, "backoffLimitPerIndex": 1,
               "maxFailedIndexes": 2, "podReplacementPolicy": "Failed", "managedBy": "example.com/foo",
               "podFailurePolicy": {"rules": [
                   {"action": "FailIndex", "onExitCodes": {"containerName": "c", "operator": "In", "values": [1, 2]}},
                   {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]},
               "successPolicy": {"rules": [{"succeededIndexes": "0,2-4", "succeededCount": 2}]}}),
    );
    let (code, body) = call_as(&env, "POST", JOBS, "application/json", &good).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["spec"]["successPolicy"]["rules"][0]["succeededIndexes"],
        "0,2-4"
    );

    // Elastic Indexed Jobs: completions change only together with parallelism.
    let path = format!("{JOBS}/good");
    let (code, body) = call_as(
        &env,
        "PATCH",
        &path,
        MERGE,
        &json!({"spec": {"completions": 6, "parallelism": 6}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (msg, causes) = one(
        "Job",
        "good",
        "FieldValueInvalid",
        "spec.completions",
        "Invalid value: 7: can only be modified in tandem with spec.parallelism",
    );
    let causes: Vec<(&str, &str, &str)> = causes
        .iter()
        .map(|(r, m, f)| (r.as_str(), m.as_str(), f.as_str()))
        .collect();
    assert_invalid(
        &call_as(
            &env,
            "PATCH",
            &path,
            MERGE,
            &json!({"spec": {"completions": 7}}),
        )
        .await,
        &msg,
        &causes,
    );
}

/// The causes of a refusal as `(reason, field, message)`.
fn causes_of(body: &Value) -> Vec<(String, String, String)> {
    body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("reason"), s("field"), s("message"))
        })
        .collect()
}

#[tokio::test]
async fn generated_selectors_cannot_be_contradicted() {
    let env = TestEnv::start().await.expect("env");
    // A template label the server would generate, set to another value: the server keeps the
    // client's value and refuses it, showing the labels as they would be stored.
    let mut conflicting = job("named", json!({}));
    conflicting["spec"]["template"]["metadata"] = json!({"labels": {"job-name": "other"}});
    let (code, body) = call(&env, "POST", JOBS, Some(&conflicting)).await;
    assert_eq!(code, 422, "{body}");
    let causes = causes_of(&body);
    assert_eq!(causes.len(), 1, "{body}");
    let (reason, field, message) = &causes[0];
    assert_eq!(reason, "FieldValueInvalid");
    assert_eq!(field, "spec.template.metadata.labels[job-name]");
    let shown = message
        .strip_prefix("Invalid value: ")
        .and_then(|m| m.strip_suffix(": must be 'named'"))
        .and_then(|m| serde_json::from_str::<Value>(m).ok())
        .unwrap_or_else(|| panic!("unexpected message {message}"));
    let uid = shown["controller-uid"].as_str().unwrap_or_default();
    assert!(!uid.is_empty(), "{shown}");
    assert_eq!(
        shown,
        json!({
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": "named",
            "controller-uid": uid,
            "job-name": "other"
        })
    );
    // A selector of the client's own without `manualSelector`: the generated uid is added
    // to it, but it still selects on something the server did not generate.
    let mut own = job("own", json!({"selector": {"matchLabels": {"app": "x"}}}));
    own["spec"]["template"]["metadata"] = json!({"labels": {"app": "x"}});
    let (code, body) = call(&env, "POST", JOBS, Some(&own)).await;
    assert_eq!(code, 422, "{body}");
    let causes = causes_of(&body);
    assert_eq!(causes.len(), 1, "{body}");
    assert_eq!(causes[0].0, "FieldValueInvalid");
    assert_eq!(causes[0].1, "spec.selector");
    let shown = causes[0]
        .2
        .strip_prefix("Invalid value: ")
        .and_then(|m| m.strip_suffix(": `selector` not auto-generated"))
        .and_then(|m| serde_json::from_str::<Value>(m).ok())
        .unwrap_or_else(|| panic!("unexpected message {}", causes[0].2));
    assert_eq!(shown["matchLabels"]["app"], "x", "{shown}");
    assert!(shown["matchLabels"]["batch.kubernetes.io/controller-uid"].is_string());
    // With `manualSelector` the same Job is accepted, and without a selector the generated
    // one is.
    own["spec"]["manualSelector"] = json!(true);
    own["spec"]["selector"] = json!({"matchLabels": {"app": "x"}});
    let (code, body) = call(&env, "POST", JOBS, Some(&own)).await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = call(&env, "POST", JOBS, Some(&job("plain", json!({})))).await;
    assert_eq!(code, 201, "{body}");
    let (code, _) = call(&env, "GET", &format!("{JOBS}/named"), None).await;
    assert_eq!(code, 404, "a refused Job is not stored");
}

#[tokio::test]
async fn job_status_writes_follow_upstreams_rules() {
    let env = TestEnv::start().await.expect("env");
    let (code, created) = call_as(
        &env,
        "POST",
        JOBS,
        "application/json",
        &job("s", json!({"completions": 1})),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let status_path = format!("{JOBS}/s/status");
    let patch = |status: Value| json!({"status": status});
    let start = "2026-11-28T10:00:00Z";
    let end = "2026-11-28T10:05:00Z";
    let stored = || async {
        call_as(
            &env,
            "GET",
            &format!("{JOBS}/s"),
            "application/json",
            &Value::Null,
        )
        .await
        .1
    };

    let refusals = [
        (
            json!({"active": -1}),
            "FieldValueInvalid",
            "status.active",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            json!({"startTime": start, "active": 1, "ready": 2}),
            "FieldValueInvalid",
            "status.ready",
            "Invalid value: 2: cannot set more ready pods than active",
        ),
        (
            json!({"startTime": start, "completionTime": end}),
            "FieldValueInvalid",
            "status.completionTime",
            "Invalid value: 2026-11-28 10:05:00 +0000 UTC: cannot set completionTime when there is no Complete=True condition",
        ),
        (
            json!({"startTime": start, "completedIndexes": "0"}),
            "FieldValueInvalid",
            "status.completedIndexes",
            "Invalid value: \"0\": cannot set non-empty completedIndexes when non-indexed completion mode",
        ),
        (
            json!({"startTime": start, "uncountedTerminatedPods": {"succeeded": ["a"], "failed": ["a"]}}),
            "FieldValueDuplicate",
            "status.uncountedTerminatedPods.failed[0]",
            "Duplicate value: \"a\"",
        ),
    ];
    for (status, reason, field, message) in refusals {
        let before = stored().await;
        let (msg, causes) = one("Job", "s", reason, field, message);
        let causes: Vec<(&str, &str, &str)> = causes
            .iter()
            .map(|(r, m, f)| (r.as_str(), m.as_str(), f.as_str()))
            .collect();
        assert_invalid(
            &call_as(&env, "PATCH", &status_path, MERGE, &patch(status)).await,
            &msg,
            &causes,
        );
        assert_eq!(
            stored().await["metadata"]["resourceVersion"],
            before["metadata"]["resourceVersion"],
            "a refused status write changes nothing"
        );
    }

    // A run, then completion, as the job controller reports them.
    let (code, body) = call_as(
        &env,
        "PATCH",
        &status_path,
        MERGE,
        &patch(json!({"startTime": start, "active": 1, "ready": 1})),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let done = json!({"active": null, "ready": 0, "succeeded": 1, "completionTime": end, "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": end},
        {"type": "Complete", "status": "True", "lastTransitionTime": end}]});
    let (code, body) = call_as(&env, "PATCH", &status_path, MERGE, &patch(done)).await;
    assert_eq!(code, 200, "{body}");

    // A finished Job stays finished and keeps its counters.
    let reopened = json!({"completionTime": null, "conditions": [
        {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": end}]});
    let (msg, causes) = one(
        "Job",
        "s",
        "FieldValueInvalid",
        "status.conditions",
        "Invalid value: cannot disable the terminal Complete=True condition",
    );
    let causes: Vec<(&str, &str, &str)> = causes
        .iter()
        .map(|(r, m, f)| (r.as_str(), m.as_str(), f.as_str()))
        .collect();
    assert_invalid(
        &call_as(&env, "PATCH", &status_path, MERGE, &patch(reopened)).await,
        &msg,
        &causes,
    );
    let (msg, causes) = one(
        "Job",
        "s",
        "FieldValueInvalid",
        "status.succeeded",
        "Invalid value: 0: cannot decrease the succeeded counter",
    );
    let causes: Vec<(&str, &str, &str)> = causes
        .iter()
        .map(|(r, m, f)| (r.as_str(), m.as_str(), f.as_str()))
        .collect();
    assert_invalid(
        &call_as(
            &env,
            "PATCH",
            &status_path,
            MERGE,
            &patch(json!({"succeeded": 0})),
        )
        .await,
        &msg,
        &causes,
    );
    let (msg, causes) = one(
        "Job",
        "s",
        "FieldValueInvalid",
        "status.active",
        "Invalid value: 1: active>0 is invalid for finished job",
    );
    let causes: Vec<(&str, &str, &str)> = causes
        .iter()
        .map(|(r, m, f)| (r.as_str(), m.as_str(), f.as_str()))
        .collect();
    assert_invalid(
        &call_as(
            &env,
            "PATCH",
            &status_path,
            MERGE,
            &patch(json!({"active": 1})),
        )
        .await,
        &msg,
        &causes,
    );

    // CronJob status writes are not validated beyond the schema (upstream's status strategy).
    let cron = json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}},
    });
    let (code, body) = call_as(&env, "POST", CRON_JOBS, "application/json", &cron).await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = call_as(
        &env,
        "PATCH",
        &format!("{CRON_JOBS}/cj/status"),
        MERGE,
        &json!({"status": {"lastScheduleTime": end, "lastSuccessfulTime": start}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["lastScheduleTime"], end);
}

// ---------------------------------------------------------------------------------------------
// Simulation
// ---------------------------------------------------------------------------------------------

/// A CronJob running every minute with `spec` merged over its spec.
fn cron_job(name: &str, spec: Value) -> CronJob {
    let mut cj = json!({"metadata": {"name": name}, "spec": {
        "schedule": "* * * * *",
        "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
    for (k, v) in spec.as_object().expect("spec") {
        cj["spec"][k] = v.clone();
    }
    serde_json::from_value(cj).expect("cronjob")
}

/// A suspended Job controlled by `owner` (it stays active: a run in progress).
fn owned_job(name: &str, owner: &CronJob) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "CronJob",
            "name": owner.metadata.name.clone().expect("name"),
            "uid": owner.metadata.uid.clone().expect("uid"),
            "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"suspend": true, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}))
    .expect("job")
}

/// The names in a CronJob's `status.active`.
fn active(cj: &CronJob) -> Vec<String> {
    cj.status
        .as_ref()
        .and_then(|s| s.active.clone())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|r| r.name)
        .collect()
}

/// The `lastScheduleTime` of a CronJob as stored.
fn last_schedule(cj: &CronJob) -> Option<String> {
    serde_json::to_value(cj).ok()?["status"]["lastScheduleTime"]
        .as_str()
        .map(str::to_string)
}

/// Ten minutes ago, as the API stores times.
fn ten_minutes_ago() -> String {
    jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_mins(10))
        .expect("past")
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The names of the Jobs `owner` controls.
async fn jobs_of(jobs: &Api<Job>, owner: &CronJob) -> Vec<String> {
    let uid = owner.metadata.uid.clone().unwrap_or_default();
    let mut names: Vec<String> = jobs
        .list(&ListParams::default())
        .await
        .expect("jobs")
        .items
        .into_iter()
        .filter(|j| {
            j.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid && o.controller == Some(true))
        })
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .filter_map(|j| j.metadata.name)
        .collect();
    names.sort();
    names
}

/// Starts a CronJob with a run in progress (`<name>-running`, suspended), waits for the
/// controller to list it as active, then backdates the last schedule time (clearing `active`)
/// and waits until the controller reconciled the backdated CronJob: it lists the run again.
/// Returns the CronJob and the backdated time.
async fn with_run_in_progress(
    cron_jobs: &Api<CronJob>,
    jobs: &Api<Job>,
    cj: CronJob,
) -> (CronJob, String) {
    let name = cj.metadata.name.clone().expect("name");
    let cj = cron_jobs
        .create(&PostParams::default(), &cj)
        .await
        .expect("cronjob");
    let running = format!("{name}-running");
    jobs.create(&PostParams::default(), &owned_job(&running, &cj))
        .await
        .expect("job");
    wait_until(WAIT, "the run in progress is active", || {
        let (cron_jobs, name, running) = (cron_jobs.clone(), name.clone(), running.clone());
        async move {
            cron_jobs
                .get(&name)
                .await
                .is_ok_and(|c| active(&c) == [running])
        }
    })
    .await
    .expect("active");
    let past = ten_minutes_ago();
    cron_jobs
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"lastScheduleTime": past, "active": null}})),
        )
        .await
        .expect("backdate");
    wait_until(WAIT, "the backdated CronJob reconciled", || {
        let (cron_jobs, name, running, past) = (
            cron_jobs.clone(),
            name.clone(),
            running.clone(),
            past.clone(),
        );
        async move {
            cron_jobs.get(&name).await.is_ok_and(|c| {
                active(&c) == [running.clone()] || last_schedule(&c).is_some_and(|t| t != past)
            })
        }
    })
    .await
    .expect("reconciled");
    (cj, past)
}

#[tokio::test]
async fn cron_job_forbid_starts_nothing_while_a_run_is_active() {
    let env = sim_env().await;
    let cron_jobs: Api<CronJob> = Api::namespaced(env.client(), "default");
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let (cj, past) = with_run_in_progress(
        &cron_jobs,
        &jobs,
        cron_job("forbid", json!({"concurrencyPolicy": "Forbid"})),
    )
    .await;
    let now = cron_jobs.get("forbid").await.expect("cronjob");
    assert_eq!(
        last_schedule(&now).as_deref(),
        Some(past.as_str()),
        "nothing scheduled"
    );
    assert_eq!(jobs_of(&jobs, &cj).await, ["forbid-running"]);

    // Once the run finishes, the owed run starts.
    jobs.patch(
        "forbid-running",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": false}})),
    )
    .await
    .expect("resume");
    wait_until(
        WAIT,
        "the owed run starts after the active one finished",
        || {
            let (jobs, cj) = (jobs.clone(), cj.clone());
            async move { jobs_of(&jobs, &cj).await.len() == 2 }
        },
    )
    .await
    .expect("scheduled");
    let scheduled = jobs_of(&jobs, &cj).await;
    assert!(
        scheduled[0].starts_with("forbid-") && scheduled[0] != "forbid-running",
        "{scheduled:?}"
    );
}

#[tokio::test]
async fn cron_job_replace_deletes_the_active_run() {
    let env = sim_env().await;
    let cron_jobs: Api<CronJob> = Api::namespaced(env.client(), "default");
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let cj = cron_jobs
        .create(
            &PostParams::default(),
            &cron_job("replace", json!({"concurrencyPolicy": "Replace"})),
        )
        .await
        .expect("cronjob");
    jobs.create(&PostParams::default(), &owned_job("replace-running", &cj))
        .await
        .expect("job");
    wait_until(WAIT, "the run in progress is active", || {
        let cron_jobs = cron_jobs.clone();
        async move {
            cron_jobs
                .get("replace")
                .await
                .is_ok_and(|c| active(&c) == ["replace-running"])
        }
    })
    .await
    .expect("active");
    let past = ten_minutes_ago();
    cron_jobs
        .patch_status(
            "replace",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"lastScheduleTime": past}})),
        )
        .await
        .expect("backdate");
    wait_until(
        WAIT,
        "the active run is replaced by the scheduled one",
        || {
            let (jobs, cj) = (jobs.clone(), cj.clone());
            async move {
                let names = jobs_of(&jobs, &cj).await;
                names.len() == 1 && names[0] != "replace-running"
            }
        },
    )
    .await
    .expect("replaced");
    assert!(
        jobs.get_opt("replace-running")
            .await
            .expect("get")
            .is_none_or(|j| j.metadata.deletion_timestamp.is_some())
    );
    let now = cron_jobs.get("replace").await.expect("cronjob");
    assert_ne!(last_schedule(&now).as_deref(), Some(past.as_str()));
}

#[tokio::test]
async fn suspended_cron_job_starts_nothing_until_resumed() {
    let env = sim_env().await;
    let cron_jobs: Api<CronJob> = Api::namespaced(env.client(), "default");
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let (cj, past) = with_run_in_progress(
        &cron_jobs,
        &jobs,
        cron_job("sleepy", json!({"suspend": true})),
    )
    .await;
    let now = cron_jobs.get("sleepy").await.expect("cronjob");
    assert_eq!(
        last_schedule(&now).as_deref(),
        Some(past.as_str()),
        "nothing scheduled"
    );
    assert_eq!(jobs_of(&jobs, &cj).await, ["sleepy-running"]);

    cron_jobs
        .patch(
            "sleepy",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": false}})),
        )
        .await
        .expect("resume");
    wait_until(
        WAIT,
        "the resumed CronJob starts its owed run (Allow: beside the active one)",
        || {
            let (jobs, cj) = (jobs.clone(), cj.clone());
            async move { jobs_of(&jobs, &cj).await.len() == 2 }
        },
    )
    .await
    .expect("scheduled");
}

#[tokio::test]
async fn cron_job_history_limits_delete_the_oldest_finished_jobs() {
    let env = sim_env().await;
    let cron_jobs: Api<CronJob> = Api::namespaced(env.client(), "default");
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let cj = cron_jobs
        .create(
            &PostParams::default(),
            &cron_job("history", json!({"suspend": true, "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1})),
        )
        .await
        .expect("cronjob");
    let names = ["ok-old", "ok-new", "bad-old", "bad-new"];
    for name in names {
        jobs.create(&PostParams::default(), &owned_job(name, &cj))
            .await
            .expect("job");
    }
    for name in names {
        wait_until(WAIT, "the job controller saw the job", || {
            let jobs = jobs.clone();
            async move {
                jobs.get(name).await.is_ok_and(|j| {
                    j.status
                        .and_then(|s| s.conditions)
                        .is_some_and(|c| c.iter().any(|c| c.type_ == "Suspended"))
                })
            }
        })
        .await
        .expect("suspended");
    }
    let finish = |name: &str, start: &str, end: &str| {
        let condition = |t: &str| json!({"type": t, "status": "True", "lastTransitionTime": end});
        if name.starts_with("ok") {
            json!({"status": {"startTime": start, "completionTime": end, "succeeded": 1,
                              "conditions": [condition("SuccessCriteriaMet"), condition("Complete")]}})
        } else {
            json!({"status": {"startTime": start, "failed": 1,
                              "conditions": [condition("FailureTarget"), condition("Failed")]}})
        }
    };
    for (name, start, end) in [
        ("ok-old", "2026-11-28T10:00:00Z", "2026-11-28T10:01:00Z"),
        ("bad-old", "2026-11-28T10:00:00Z", "2026-11-28T10:01:00Z"),
        ("ok-new", "2026-11-28T11:00:00Z", "2026-11-28T11:01:00Z"),
        ("bad-new", "2026-11-28T11:00:00Z", "2026-11-28T11:01:00Z"),
    ] {
        jobs.patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(finish(name, start, end)),
        )
        .await
        .expect("finish");
    }
    wait_until(WAIT, "one Job of each outcome kept, the newest", || {
        let (jobs, cj) = (jobs.clone(), cj.clone());
        async move { jobs_of(&jobs, &cj).await == ["bad-new", "ok-new"] }
    })
    .await
    .expect("history trimmed");
}

#[tokio::test]
async fn finished_jobs_are_deleted_once_their_ttl_expires() {
    let env = sim_env().await;
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    let ttl = 3;
    for (name, spec) in [
        ("short", json!({"ttlSecondsAfterFinished": ttl})),
        ("kept", json!({})),
    ] {
        let job: Job =
            serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("job");
        let mut job = serde_json::to_value(job).expect("json");
        job["spec"]["template"] = json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
        jobs.create(
            &PostParams::default(),
            &serde_json::from_value(job).expect("job"),
        )
        .await
        .expect("create");
    }
    let complete = |name: &'static str| {
        let jobs = jobs.clone();
        async move {
            wait_until(WAIT, format!("{name} completes"), || {
                let jobs = jobs.clone();
                async move { finish_time(jobs.get_opt(name).await.ok().flatten()).is_some() }
            })
            .await
            .expect("complete");
        }
    };
    complete("short").await;
    let short_done = finish_time(jobs.get_opt("short").await.expect("get")).expect("finish time");
    complete("kept").await;
    wait_until(WAIT, "the expired Job is deleted", || {
        let jobs = jobs.clone();
        async move { jobs.get_opt("short").await.is_ok_and(|j| j.is_none()) }
    })
    .await
    .expect("deleted");
    let expiry = short_done
        .checked_add(jiff::SignedDuration::from_secs(ttl))
        .expect("expiry");
    assert!(
        jiff::Timestamp::now() >= expiry,
        "deleted before its TTL expired"
    );
    assert!(
        jobs.get_opt("kept").await.expect("get").is_some(),
        "a Job without a TTL stays"
    );
}

/// When a Job's `Complete=True` condition turned true.
fn finish_time(job: Option<Job>) -> Option<jiff::Timestamp> {
    job?.status?
        .conditions?
        .into_iter()
        .find(|c| c.type_ == "Complete" && c.status == "True")?
        .last_transition_time
        .map(|t| t.0)
}
