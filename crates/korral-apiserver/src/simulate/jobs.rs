//! The Job controller: Pods per `parallelism` until `completions` succeeded, then `Complete`;
//! failed Pods are counted, replaced after a back-off, and fail the Job as upstream's do.
//!
//! Pods are named `<job>-<suffix>` (`<job>-<index>-<suffix>` for `Indexed` Jobs, which also
//! get the completion-index annotation and label, the hostname `<job>-<index>` and the
//! `JOB_COMPLETION_INDEX` environment variable). A suspended Job has its active Pods deleted
//! and a `Suspended` condition; resuming sets it `False` and starts Pods again. Status follows
//! upstream: `startTime`, `active`, `ready`, `succeeded`, `failed`, `terminating`,
//! `uncountedTerminatedPods`, `failedIndexes`, and on completion `completionTime` with the
//! `SuccessCriteriaMet` and `Complete` conditions. An Indexed Job whose `successPolicy` rule
//! matches its succeeded indexes completes then (reason `SuccessPolicy`, `Matched rules at
//! index <i>`), its other Pods deleted; a finished Job's active Pods are deleted.
//!
//! Its selector claims Pods as upstream's `getPodsForJob` does ([`super::claim`]): orphans it
//! selects (with a `manualSelector`) are adopted with the tracking finalizer and count like its
//! own, Pods it no longer selects are released. Each sync creates at most
//! [`MAX_POD_CREATE_DELETE_PER_SYNC`] Pods, in slow-start batches (1, 2, 4…, stopping after a
//! batch with a refused creation), or deletes at most as many Pods beyond its parallelism (or,
//! Indexed, of repeated or invalid indexes), released first so that they are not counted.
//!
//! Failures (Pods fail through the simulated kubelet's `korral.dev/exit-code` annotation, see
//! [`super::pods`], or a client writing `status.phase: Failed`), decided in [`job_failures`]:
//!
//! * `status.failed` counts failed Pods (and, once the Job fails, the active Pods it deletes)
//!   that the `podFailurePolicy` does not `Ignore`; it never decreases. Pods are tracked with
//!   the `batch.kubernetes.io/job-tracking` finalizer (see [`reconcile`]), so failed Pods that
//!   a client deletes before the Job counted them are counted once, then go.
//! * Failed Pods are replaced after upstream's back-off (10s doubling per consecutive failure
//!   since the last success, at most 10 minutes, remembered per Job in memory so that deleting
//!   the failed Pods does not shorten it; per index with `backoffLimitPerIndex`,
//!   which also gives replacements the `job-index-failure-count` annotations): the Job asks
//!   to be reconciled again when it ends. With `podReplacementPolicy: Failed` (the default
//!   with a `podFailurePolicy`) terminating Pods are not replaced until they are gone.
//! * The Job fails (`BackoffLimitExceeded`) once more Pods failed than `backoffLimit`, or,
//!   for `restartPolicy: OnFailure`, the restarts of its running Pods' containers reach it;
//!   `DeadlineExceeded` once it ran `activeDeadlineSeconds` (it asks to be reconciled then);
//!   `PodFailurePolicy` when a `FailJob` rule matches a failed Pod; `MaxFailedIndexesExceeded`
//!   or `FailedIndexes` for `backoffLimitPerIndex` (failed indexes in `status.failedIndexes`,
//!   `FailIndex` rules fail an index at once). It first gets `FailureTarget`, its active Pods
//!   are deleted, and once none is terminating it gets `Failed` with the same reason and
//!   message; a failed Job is left alone.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::access::{self, Actor, pod_active, pod_ready};
use super::claim::{Managed, SelectorShape, claim_pods};
use super::events::{Note, Recorder};
use super::job_failures::{
    self as failures, BackoffRecord, INDEX_FAILURE_COUNT, INDEX_IGNORED_FAILURE_COUNT,
};
use super::replicaset::owned_pods;
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::Object;

/// Jobs (`batch/v1`) as they claim Pods (upstream's `getPodsForJob`): every Pod their
/// selector selects, finished or not; adopted Pods get the tracking finalizer.
pub const JOB: Managed = Managed {
    group: "batch",
    version: "v1",
    resource: "jobs",
    kind: "Job",
    selector: SelectorShape::LabelSelector,
    actor: Actor::Job,
    active_only: false,
    finalizers: &[TRACKING_FINALIZER],
};

/// Upstream's `MaxPodCreateDeletePerSync`: at most this many Pods are created, or deleted,
/// in one sync of a Job; the next sync does more.
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;

/// Upstream's `SlowStartInitialBatchSize`: the first batch of a sync's creations.
const SLOW_START_INITIAL_BATCH_SIZE: usize = 1;

/// The batches in which one sync creates `missing` Pods (upstream's `manageJob`): at most
/// [`MAX_POD_CREATE_DELETE_PER_SYNC`] in all, in batches of 1, 2, 4… (slow start); a batch
/// with a refused creation is the last.
fn creation_batches(missing: usize) -> Vec<usize> {
    let mut left = missing.min(MAX_POD_CREATE_DELETE_PER_SYNC);
    let mut batches = Vec::new();
    let mut size = left.min(SLOW_START_INITIAL_BATCH_SIZE);
    while left > 0 {
        batches.push(size);
        left -= size;
        size = (2 * size).min(left);
    }
    batches
}

/// Upstream's `backoffRecordStore`: the back-off records of one server's Jobs, in memory, by
/// namespace and name with the uid of the Job they belong to; dropped with the Job (when it
/// is gone or finished). One per simulation (see [`super::Cluster`]).
#[derive(Debug, Clone, Default)]
pub struct BackoffRecords(Arc<Mutex<RecordsByJob>>);

/// Back-off records by the Job's `(namespace, name)`, with the uid of the Job they belong to.
type RecordsByJob = HashMap<(String, String), (String, BackoffRecord)>;

impl BackoffRecords {
    /// Runs `f` on the records.
    fn with<T>(&self, f: impl FnOnce(&mut RecordsByJob) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The record of the Job `ns/name` with `uid` (empty for a Job not seen failing).
    fn get(&self, ns: &str, name: &str, uid: &str) -> BackoffRecord {
        self.with(|jobs| {
            jobs.get(&(ns.to_string(), name.to_string()))
                .filter(|(owner, _)| owner == uid)
                .map(|(_, record)| *record)
                .unwrap_or_default()
        })
    }

    /// Keeps `record` for the Job `ns/name` with `uid` (upstream's `updateBackoffRecord`).
    fn store(&self, ns: &str, name: &str, uid: &str, record: BackoffRecord) {
        self.with(|jobs| {
            if record == BackoffRecord::default() {
                jobs.remove(&(ns.to_string(), name.to_string()));
            } else {
                jobs.insert(
                    (ns.to_string(), name.to_string()),
                    (uid.to_string(), record),
                );
            }
        });
    }

    /// Forgets the record of the Job `ns/name` (upstream's `removeBackoffRecord`).
    fn remove(&self, ns: &str, name: &str) {
        self.with(|jobs| {
            jobs.remove(&(ns.to_string(), name.to_string()));
        });
    }
}

const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
const COMPLETED: &str = "Reached expected number of succeeded pods";
/// The reason of a Job done by its completions.
const COMPLETIONS_REACHED: &str = "CompletionsReached";
/// The reason of a Job done by its success policy.
const SUCCESS_POLICY: &str = "SuccessPolicy";
const TIMES: [&str; 2] = ["lastProbeTime", "lastTransitionTime"];

/// The terminal condition a reconcile decided on: `FailureTarget` first, `Failed` once the
/// Job's Pods are gone.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    /// `FailureTarget` or `Failed`.
    kind: &'static str,
    reason: String,
    message: String,
}

impl Failure {
    fn target((reason, message): (&str, &str)) -> Self {
        Self {
            kind: "FailureTarget",
            reason: reason.to_string(),
            message: message.to_string(),
        }
    }
}

/// The earlier of two optional delays.
fn earliest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The success policy rule the succeeded indexes satisfy, as upstream's
/// `matchSuccessPolicy`: `Matched rules at index <i>` for the first rule whose
/// `succeededIndexes` all succeeded (or at least `succeededCount` of them), or, without
/// indexes, whose `succeededCount` indexes succeeded.
fn success_policy_match(
    policy: Option<&Value>,
    completions: usize,
    succeeded: &BTreeSet<usize>,
) -> Option<String> {
    let rules = policy?.get("rules")?.as_array()?;
    if succeeded.is_empty() {
        return None;
    }
    rules.iter().enumerate().find_map(|(i, rule)| {
        let count = rule.get("succeededCount").and_then(Value::as_u64);
        let matched = match rule.get("succeededIndexes").and_then(Value::as_str) {
            Some(text) => {
                let required = failures::parse_indexes(text, completions);
                let contained = required.intersection(succeeded).count();
                !required.is_empty()
                    && (contained == required.len() || count.is_some_and(|n| contained as u64 >= n))
            }
            None => count.is_some_and(|n| succeeded.len() as u64 >= n),
        };
        matched.then(|| format!("Matched rules at index {i}"))
    })
}

/// The condition `kind` when `True`.
fn true_condition<'a>(conditions: &'a [Value], kind: &str) -> Option<&'a Value> {
    conditions
        .iter()
        .find(|c| c["type"] == kind && c["status"] == "True")
}

/// The finalizer the Job controller puts on every Pod it creates and removes once it counted
/// the Pod (upstream's `batch.JobTrackingFinalizer`).
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Whether a Pod carries the Job tracking finalizer.
pub fn tracked(pod: &Value) -> bool {
    meta::finalizers(pod)
        .iter()
        .any(|f| f == TRACKING_FINALIZER)
}

/// Removes the tracking finalizer from a Pod (this incarnation of it); a Pod being deleted
/// then goes. Gone already counts as done.
async fn release(
    objects: &Objects,
    pod_info: &std::sync::Arc<crate::registry::ResourceInfo>,
    pod: &Value,
) -> Result<(), ApiError> {
    let result = access::update(objects, access::Actor::Job, pod_info, pod, |pod| {
        let finalizers: Vec<String> = meta::finalizers(pod)
            .into_iter()
            .filter(|f| f != TRACKING_FINALIZER)
            .collect();
        meta::set_finalizers(pod, &finalizers);
    })
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Releases a Pod nobody tracks any more (upstream's `syncOrphanPod`): one with the tracking
/// finalizer and no controller, or controlled by a `batch/v1` Job that is gone (another Job
/// of the same name does not count) or finished.
pub async fn release_orphan(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    let Some(pod) = access::get(objects, "", "pods", ns, name) else {
        return Ok(());
    };
    if !tracked(&pod) || !orphaned(objects, ns, &pod) {
        return Ok(());
    }
    let pod_info = access::info(objects, "", "v1", "pods")?;
    release(objects, &pod_info, &pod).await
}

/// Whether no live Job tracks `pod` (see [`release_orphan`]).
fn orphaned(objects: &Objects, ns: &str, pod: &Value) -> bool {
    let Some(owner) = meta::owner_references(pod)
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
    else {
        return true;
    };
    let s = |k: &str| owner.get(k).and_then(Value::as_str).unwrap_or("");
    if s("kind") != "Job" || s("apiVersion") != "batch/v1" {
        // Another controller's Pod: not ours to release.
        return false;
    }
    match access::get(objects, "batch", "jobs", ns, s("name")) {
        Some(job) => meta::uid(&job) != s("uid") || finished(&job),
        None => true,
    }
}

/// Releases the tracked Pods in `ns` whose controller is a Job named `name` that is gone or
/// finished (upstream's `cleanupPodFinalizers` on a Job's deletion or end).
async fn release_all_orphans(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    let pod_info = access::info(objects, "", "v1", "pods")?;
    for pod in access::list(objects, "", "pods", ns) {
        let ours =
            access::controller_of(&pod).is_some_and(|(kind, n, _)| kind == "Job" && n == name);
        if ours && tracked(&pod) && orphaned(objects, ns, &pod) {
            release(objects, &pod_info, &pod).await?;
        }
    }
    Ok(())
}

/// The UIDs listed in `status.uncountedTerminatedPods.<field>`, in order.
fn uncounted_uids(status: &Value, field: &str) -> Vec<String> {
    meta::strings(status.pointer(&format!("/uncountedTerminatedPods/{field}")))
}

/// Moves the uncounted UIDs whose Pods no longer carry the finalizer (released, or gone)
/// into the `succeeded` / `failed` counters (upstream's
/// `cleanUncountedPodsWithoutFinalizers`); whether anything moved.
fn count_released(
    status: &mut Value,
    uncounted: &mut [Vec<String>; 2],
    still_tracked: &BTreeSet<String>,
) -> bool {
    let mut moved = false;
    for (field, uids) in ["succeeded", "failed"].iter().zip(uncounted.iter_mut()) {
        let before = uids.len();
        uids.retain(|uid| still_tracked.contains(uid));
        let released = before - uids.len();
        if released > 0 {
            let counted = status.get(*field).and_then(Value::as_u64).unwrap_or(0);
            status[*field] = json!(counted + released as u64);
            moved = true;
        }
    }
    moved
}

/// Reconciles one Job; `Some(delay)` asks to run again after `delay` (a replacement's
/// back-off ends, the active deadline passes).
///
/// Pods are tracked as upstream's controller tracks them: every Pod it creates carries
/// [`TRACKING_FINALIZER`]; a finished Pod is first listed by UID in
/// `status.uncountedTerminatedPods` (written), then released (its finalizer removed), then
/// moved into the `succeeded` / `failed` counters, so a Pod a client deletes before it was
/// counted stays (terminating) until it is, and is counted once. The Job gets `Complete` or
/// `Failed` only once nothing is uncounted and no Pod is terminating. The Pods of a Job being
/// deleted, gone or finished are released.
///
/// Upstream also keeps finalizer-removal expectations (`finalizerExpectations`): its informer
/// cache may still show a released Pod with the finalizer, which would count it again, so it
/// skips such Pods and waits for the removals to be observed. Here nothing lags: a sync reads
/// the Job and its Pods from storage, Job syncs run one at a time on the simulation's loop,
/// and a Pod moves from `uncountedTerminatedPods` into a counter only once the write removing
/// its finalizer has returned (or the Pod is gone), so a Pod seen with the finalizer is
/// always one not counted yet.
pub async fn reconcile(
    objects: &Objects,
    backoffs: &BackoffRecords,
    events: &Recorder,
    ns: &str,
    name: &str,
) -> Result<Option<Duration>, ApiError> {
    let Some(job) = access::get(objects, "batch", "jobs", ns, name) else {
        backoffs.remove(ns, name);
        release_all_orphans(objects, ns, name).await?;
        return Ok(None);
    };
    if finished(&job) {
        backoffs.remove(ns, name);
        release_all_orphans(objects, ns, name).await?;
        return Ok(None);
    }
    let deleting = meta::is_deleting(&job);
    let now = Timestamp::now();
    let pod_info = access::info(objects, "", "v1", "pods")?;
    let selector = match JOB.selector_of(&job) {
        Ok(selector) => selector,
        Err(error) => {
            tracing::warn!(job = %name, namespace = %ns, %error, "invalid pod selector");
            return Ok(None);
        }
    };
    // The Pods it selects and controls, orphans it selects adopted (with the tracking
    // finalizer), Pods it controls but no longer selects released (upstream's
    // `getPodsForJob`).
    let pods = claim_pods(objects, &JOB, &pod_info, &job, &selector).await?;
    let all: Vec<&Value> = pods.iter().map(|p| &**p).collect();
    let active: Vec<&Object> = pods.iter().filter(|p| pod_active(p)).collect();
    let suspended = meta::path(&job, "spec.suspend").and_then(Value::as_bool) == Some(true);
    let parallelism = access::int(&job, "spec.parallelism", 1).max(0) as usize;
    let completions = meta::path(&job, "spec.completions")
        .and_then(Value::as_i64)
        .map(|c| c.max(0) as usize);
    let indexed =
        meta::path(&job, "spec.completionMode").and_then(Value::as_str) == Some("Indexed");
    let policy = meta::path(&job, "spec.podFailurePolicy").filter(|p| !p.is_null());
    let only_replace_failed = policy.is_some()
        || meta::path(&job, "spec.podReplacementPolicy").and_then(Value::as_str) == Some("Failed");
    let per_index = meta::path(&job, "spec.backoffLimitPerIndex")
        .and_then(Value::as_i64)
        .filter(|_| indexed);
    let backoff_limit = access::int(&job, "spec.backoffLimit", 6);
    // Indexed Jobs only count Pods of their indexes.
    let valid = |p: &Value| !indexed || index_of(p).is_some_and(|i| i < completions.unwrap_or(0));
    let succeeded: Vec<&Object> = pods
        .iter()
        .filter(|p| phase(p) == "Succeeded" && valid(p))
        .collect();
    let failed_pods: Vec<&Value> = all
        .iter()
        .copied()
        .filter(|p| failures::pod_failed(p, only_replace_failed) && valid(p))
        .collect();
    let terminating = all.iter().filter(|p| failures::pod_terminating(p)).count();
    let stored_status = job.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut uncounted = [
        uncounted_uids(&stored_status, "succeeded"),
        uncounted_uids(&stored_status, "failed"),
    ];
    let is_uncounted = |i: usize, p: &Value| uncounted[i].iter().any(|u| u == meta::uid(p));
    // Finished Pods not counted yet: tracked and not listed as uncounted (upstream's
    // `getNewFinishedPods`).
    let new_succeeded_pods: Vec<&Value> = succeeded
        .iter()
        .map(|p| &***p)
        .filter(|p| tracked(p) && !is_uncounted(0, p))
        .collect();
    let new_failed_pods: Vec<&Value> = failed_pods
        .iter()
        .copied()
        .filter(|p| tracked(p) && !is_uncounted(1, p))
        .collect();
    let new_succeeded = new_succeeded_pods.len();
    let new_failed = new_failed_pods
        .iter()
        .filter(|p| failures::match_policy(policy, p).counts)
        .count();
    // The failures since the last success, kept across syncs (and the Pods' deletion), with
    // this sync's newly finished Pods (upstream's `newBackoffRecord`); kept once the status
    // listing them is written.
    let backoff = backoffs
        .get(ns, name, meta::uid(&job))
        .updated(&new_succeeded_pods, &new_failed_pods);
    let counter = |field: &str| {
        stored_status
            .get(field)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
    };
    let failed_count = counter("failed") + new_failed + uncounted[1].len();
    let previous_indexes = failures::parse_indexes(
        stored_status
            .get("completedIndexes")
            .and_then(Value::as_str)
            .unwrap_or(""),
        completions.unwrap_or(0),
    );
    let mut succeeded_indexes = previous_indexes.clone();
    if indexed {
        succeeded_indexes.extend(
            succeeded
                .iter()
                .filter(|p| tracked(p))
                .filter_map(|p| index_of(p)),
        );
    }
    let succeeded_count = if indexed {
        succeeded_indexes.len()
    } else {
        counter("succeeded") + new_succeeded + uncounted[0].len()
    };

    let mut status = stored_status.clone();
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !suspended && status.get("startTime").is_none() {
        status["startTime"] = json!(meta::now_rfc3339());
    }

    // Why the Job fails, in upstream's order; a Job that met its success criteria (and waits
    // for terminating Pods) is not failed any more.
    let criteria_met = true_condition(&conditions, "SuccessCriteriaMet").is_some();
    let mut again = None;
    let mut failure = true_condition(&conditions, "FailureTarget").map(|c| Failure {
        kind: "Failed",
        reason: c["reason"].as_str().unwrap_or("").to_string(),
        message: c["message"].as_str().unwrap_or("").to_string(),
    });
    if failure.is_none() && !criteria_met {
        failure = all
            .iter()
            .filter(|p| failures::pod_failed(p, only_replace_failed))
            .find_map(|p| failures::match_policy(policy, p).fail_job)
            .map(|message| Failure::target((failures::POD_FAILURE_POLICY, &message)));
    }
    if failure.is_none() && !criteria_met {
        let deadline = meta::path(&job, "spec.activeDeadlineSeconds").and_then(Value::as_i64);
        let started = status
            .get("startTime")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<Timestamp>().ok());
        if i64::try_from(failed_count).unwrap_or(i64::MAX) > backoff_limit
            || failures::past_backoff_limit_on_failure(&job, &all)
        {
            failure = Some(Failure::target(failures::BACKOFF_LIMIT_EXCEEDED));
        } else if let (Some(seconds), Some(started), false) = (deadline, started, suspended) {
            let ran = now.duration_since(started);
            let allowed = jiff::SignedDuration::from_secs(seconds);
            if ran >= allowed {
                failure = Some(Failure::target(failures::DEADLINE_EXCEEDED));
            } else {
                again = Some((allowed - ran).unsigned_abs());
            }
        }
    }
    let mut failed_indexes: BTreeSet<usize> = BTreeSet::new();
    if let (Some(limit), Some(c)) = (per_index, completions) {
        let previous = status
            .get("failedIndexes")
            .and_then(Value::as_str)
            .unwrap_or("");
        failed_indexes = failures::parse_indexes(previous, c);
        failed_indexes.extend(
            all.iter()
                .filter(|p| tracked(p))
                .filter(|p| failures::index_failed(policy, p, limit, only_replace_failed))
                .filter_map(|p| index_of(p))
                .filter(|i| *i < c),
        );
        if failure.is_none() && !criteria_met {
            let max = meta::path(&job, "spec.maxFailedIndexes").and_then(Value::as_u64);
            if max.is_some_and(|m| failed_indexes.len() as u64 > m) {
                failure = Some(Failure::target(failures::MAX_FAILED_INDEXES_EXCEEDED));
            } else if !failed_indexes.is_empty()
                && failed_indexes.len() + succeeded_indexes.len() >= c
            {
                failure = Some(Failure::target(failures::FAILED_INDEXES));
            }
        }
    }

    // Indexed Jobs may succeed early by their success policy (upstream's matchSuccessPolicy).
    let by_policy = match (&failure, criteria_met, completions) {
        (None, false, Some(c)) if indexed => success_policy_match(
            meta::path(&job, "spec.successPolicy"),
            c,
            &succeeded_indexes,
        ),
        _ => None,
    };
    let complete = failure.is_none()
        && (criteria_met
            || by_policy.is_some()
            || match completions {
                Some(c) => succeeded_count >= c,
                // Work-queue Jobs: done once one Pod succeeded and none is left running.
                None => succeeded_count > 0 && active.is_empty(),
            });
    // With `backoffLimitPerIndex`, the last failed Pod of an index waiting for its
    // replacement keeps its finalizer (and stays uncounted) until the replacement carries
    // its failure counts (upstream's `getPodsWithDelayedDeletionPerIndex`).
    let delayed: BTreeMap<usize, &Value> = if per_index.is_some() {
        let active_indexes: BTreeSet<usize> = active.iter().filter_map(|p| index_of(p)).collect();
        let waiting: Vec<&Value> = failed_pods
            .iter()
            .copied()
            .filter(|p| tracked(p))
            .filter(|p| {
                index_of(p).is_some_and(|i| {
                    !succeeded_indexes.contains(&i)
                        && !failed_indexes.contains(&i)
                        && !active_indexes.contains(&i)
                })
            })
            .collect();
        last_failed_per_index(&waiting)
    } else {
        BTreeMap::new()
    };
    let mut active_count = active.len();
    let mut ready = active.iter().filter(|p| pod_ready(p)).count();
    let mut terminating_count = terminating;
    // A refused creation or deletion: reported once the status is written (upstream's
    // `manageJobErr`), so that the sync is retried.
    let mut manage_error: Option<ApiError> = None;
    if let Some(failure) = &failure {
        // A failing Job's active Pods go (keeping their finalizers: they are counted as
        // failed below, upstream's `deleteActivePods`).
        for pod in &active {
            events
                .delete_pod(objects, Actor::Job, &pod_info, &job, pod)
                .await?;
        }
        terminating_count += active.len();
        (active_count, ready) = (0, 0);
        // `FailureTarget` is written with the uncounted Pods; `Failed` follows once they
        // are counted and none is terminating (upstream's `enactJobFinished`).
        access::set_condition(
            &mut conditions,
            json!({"type": "FailureTarget", "status": "True", "reason": failure.reason, "message": failure.message}),
            &TIMES,
        );
        tracing::debug!(job = %name, namespace = %ns, kind = failure.kind, reason = %failure.reason, "job failing");
    } else if deleting {
        // A Job being deleted neither starts nor stops Pods; its Pods are released below.
    } else if suspended {
        // Suspended Pods are released before they are deleted: they are not counted
        // (upstream's `deleteJobPods`).
        for pod in &active {
            release(objects, &pod_info, pod).await?;
            events
                .delete_pod(objects, Actor::Job, &pod_info, &job, pod)
                .await?;
        }
        terminating_count = owned_pods(objects, ns, meta::uid(&job))
            .iter()
            .filter(|p| failures::pod_terminating(p))
            .count();
        active_count = 0;
        access::set_condition(
            &mut conditions,
            json!({"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended"}),
            &TIMES,
        );
        if let Some(map) = status.as_object_mut() {
            map.remove("startTime");
        }
    } else {
        if conditions
            .iter()
            .any(|c| c["type"] == "Suspended" && c["status"] == "True")
        {
            access::set_condition(
                &mut conditions,
                json!({"type": "Suspended", "status": "False", "reason": "JobResumed", "message": "Job resumed"}),
                &TIMES,
            );
        }
        if complete && !active.is_empty() {
            // The Job is done (its success policy matched): the Pods still running go.
            for pod in &active {
                events
                    .delete_pod(objects, Actor::Job, &pod_info, &job, pod)
                    .await?;
            }
            terminating_count = owned_pods(objects, ns, meta::uid(&job))
                .iter()
                .filter(|p| failures::pod_terminating(p))
                .count();
            (active_count, ready) = (0, 0);
        }
        if !complete {
            // Upstream's `wantActive`: a work-queue Job with a success keeps what runs.
            let wanted = match completions {
                Some(c) => parallelism.min(c.saturating_sub(succeeded_count)),
                None if succeeded_count > 0 => active.len(),
                None => parallelism,
            };
            let mut surplus = pods_for_removal(
                &active,
                indexed.then(|| completions.unwrap_or(0)),
                active.len().saturating_sub(wanted),
            );
            surplus.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
            if !surplus.is_empty() {
                // Too many Pods (or, for an Indexed Job, repeated or invalid indexes): some go,
                // released first so that they are not counted, and nothing is created in the
                // same sync (upstream's `deleteJobPods`).
                tracing::debug!(job = %name, namespace = %ns, deleting = surplus.len(), wanted, "too many pods running for job");
                for pod in &surplus {
                    let gone = match release(objects, &pod_info, pod).await {
                        Ok(()) => {
                            events
                                .delete_pod(objects, Actor::Job, &pod_info, &job, pod)
                                .await
                        }
                        Err(e) => Err(e),
                    };
                    match gone {
                        Ok(()) => {
                            active_count = active_count.saturating_sub(1);
                            if pod_ready(pod) {
                                ready = ready.saturating_sub(1);
                            }
                        }
                        Err(e) => {
                            manage_error.get_or_insert(e);
                        }
                    }
                }
                terminating_count = owned_pods(objects, ns, meta::uid(&job))
                    .iter()
                    .filter(|p| failures::pod_terminating(p))
                    .count();
            } else {
                // With `podReplacementPolicy: Failed`, terminating Pods are not replaced yet.
                let waiting = if only_replace_failed { terminating } else { 0 };
                let missing = wanted.saturating_sub(active.len() + waiting);
                let wait = if missing > 0 && per_index.is_none() {
                    backoff.remaining(now)
                } else {
                    Duration::ZERO
                };
                // The Pods to create now: an Indexed Job's are those of its first free indexes
                // (with `backoffLimitPerIndex`, of those whose back-off ended).
                let mut to_create: Vec<Value> = Vec::new();
                if !wait.is_zero() {
                    again = earliest(again, Some(wait));
                } else if indexed {
                    let mut busy: BTreeSet<usize> =
                        active.iter().filter_map(|p| index_of(p)).collect();
                    if only_replace_failed {
                        busy.extend(
                            all.iter()
                                .filter(|p| failures::pod_terminating(p))
                                .filter_map(|p| index_of(p)),
                        );
                    }
                    let free: Vec<usize> = (0..completions.unwrap_or(0))
                        .filter(|i| {
                            !busy.contains(i)
                                && !succeeded_indexes.contains(i)
                                && !failed_indexes.contains(i)
                        })
                        .take(missing.min(MAX_POD_CREATE_DELETE_PER_SYNC))
                        .collect();
                    for index in free {
                        let replaced = delayed.get(&index).copied();
                        let mut pod = new_pod(&job, Some(index));
                        if per_index.is_some() {
                            let wait = failures::index_backoff(replaced, now);
                            if !wait.is_zero() {
                                again = earliest(again, Some(wait));
                                continue;
                            }
                            let (count, ignored) = failures::replacement_counts(policy, replaced);
                            pod["metadata"]["annotations"][INDEX_FAILURE_COUNT] =
                                json!(count.to_string());
                            if ignored > 0 {
                                pod["metadata"]["annotations"][INDEX_IGNORED_FAILURE_COUNT] =
                                    json!(ignored.to_string());
                            }
                        }
                        to_create.push(pod);
                    }
                } else {
                    to_create = (0..missing.min(MAX_POD_CREATE_DELETE_PER_SYNC))
                        .map(|_| new_pod(&job, None))
                        .collect();
                }
                // Slow start: batches of 1, 2, 4…; a batch with a refused creation is the
                // last of this sync (upstream's `manageJob`).
                let mut pods = to_create.into_iter();
                for size in creation_batches(pods.len()) {
                    let mut refused = false;
                    for pod in pods.by_ref().take(size) {
                        let created =
                            access::create(objects, Actor::Job, &pod_info, Some(ns), pod).await;
                        events
                            .pod_created(objects, Actor::Job, &job, created.as_ref().map(|p| &**p))
                            .await;
                        match created {
                            Ok(_) => active_count += 1,
                            Err(e) => {
                                refused = true;
                                manage_error.get_or_insert(e);
                            }
                        }
                    }
                    if refused {
                        tracing::debug!(job = %name, namespace = %ns, skipped = pods.len(), "slow-start failure, skipping pod creations");
                        break;
                    }
                }
            }
        }
    }
    set_count(&mut status, "active", active_count);
    status["ready"] = json!(if suspended { 0 } else { ready });
    if indexed && !succeeded_indexes.is_empty() {
        status["completedIndexes"] = json!(failures::render_indexes(&succeeded_indexes));
    }
    if indexed {
        set_count(&mut status, "succeeded", succeeded_indexes.len());
    }
    if per_index.is_some() && completions.is_some() {
        status["failedIndexes"] = json!(failures::render_indexes(&failed_indexes));
    }
    // `Complete` says what `SuccessCriteriaMet` said (the success policy's rule, or the
    // completions reached).
    let success = (complete && !suspended).then(|| {
        match (
            true_condition(&conditions, "SuccessCriteriaMet"),
            &by_policy,
        ) {
            (Some(c), _) => (
                c["reason"]
                    .as_str()
                    .unwrap_or(COMPLETIONS_REACHED)
                    .to_string(),
                c["message"].as_str().unwrap_or(COMPLETED).to_string(),
            ),
            (None, Some(message)) => (SUCCESS_POLICY.to_string(), message.clone()),
            (None, None) => (COMPLETIONS_REACHED.to_string(), COMPLETED.to_string()),
        }
    });
    if let Some((reason, message)) = &success {
        status["ready"] = json!(0);
        access::set_condition(
            &mut conditions,
            json!({"type": "SuccessCriteriaMet", "status": "True", "reason": reason, "message": message}),
            &TIMES,
        );
    }

    // Track the finished Pods (upstream's `trackJobStatusAndRemoveFinalizers`): list them as
    // uncounted, release them, count them.
    let finishing = failure.is_some() || success.is_some();
    let mut still_tracked: BTreeSet<String> = all
        .iter()
        .filter(|p| tracked(p))
        .map(|p| meta::uid(p).to_string())
        .collect();
    let mut to_release: Vec<&Value> = Vec::new();
    for pod in all.iter().copied().filter(|p| tracked(p)) {
        let uid = meta::uid(pod).to_string();
        let considered_failed = failures::pod_failed(pod, only_replace_failed);
        let waits = index_of(pod)
            .and_then(|i| delayed.get(&i))
            .is_some_and(|p| meta::uid(p) == uid);
        let can_release =
            deleting || finishing || phase(pod) == "Succeeded" || (considered_failed && !waits);
        if !can_release {
            continue;
        }
        to_release.push(pod);
        if phase(pod) == "Succeeded" && !uncounted[1].contains(&uid) {
            // Indexed Jobs count their succeeded indexes (in `completedIndexes` already).
            if !indexed && !uncounted[0].contains(&uid) {
                uncounted[0].push(uid);
            }
        } else if (considered_failed || failure.is_some())
            && !uncounted[1].contains(&uid)
            && valid(pod)
            && failures::match_policy(policy, pod).counts
        {
            // Once the Job fails, every Pod not finished counts as failed.
            uncounted[1].push(uid);
        }
    }
    count_released(&mut status, &mut uncounted, &still_tracked);
    status["uncountedTerminatedPods"] = uncounted_status(&uncounted);
    status["terminating"] = json!(terminating_count);
    put_conditions(&mut status, conditions.clone());
    if job.get("status") != Some(&status) {
        access::write_status(
            objects,
            access::Actor::Job,
            &access::info(objects, "batch", "v1", "jobs")?,
            &job,
            status.clone(),
        )
        .await?;
        // Upstream keeps the new back-off record with the status that lists the new Pods.
        backoffs.store(ns, name, meta::uid(&job), backoff);
    }
    for pod in &to_release {
        release(objects, &pod_info, pod).await?;
        still_tracked.remove(meta::uid(pod));
    }
    let flushed = status.clone();
    count_released(&mut status, &mut uncounted, &still_tracked);
    status["uncountedTerminatedPods"] = uncounted_status(&uncounted);
    // Released Pods being deleted are gone now.
    terminating_count = owned_pods(objects, ns, meta::uid(&job))
        .iter()
        .filter(|p| failures::pod_terminating(p))
        .count();
    status["terminating"] = json!(terminating_count);
    // The Job finishes once every finished Pod is counted and none is terminating
    // (upstream's `enactJobFinished`).
    let settled = uncounted.iter().all(Vec::is_empty) && terminating_count == 0;
    if settled {
        if let Some(failure) = &failure {
            access::set_condition(
                &mut conditions,
                json!({"type": "Failed", "status": "True", "reason": failure.reason, "message": failure.message}),
                &TIMES,
            );
        } else if let Some((reason, message)) = &success {
            status["completionTime"] = json!(meta::now_rfc3339());
            access::set_condition(
                &mut conditions,
                json!({"type": "Complete", "status": "True", "reason": reason, "message": message}),
                &TIMES,
            );
        }
    }
    put_conditions(&mut status, conditions);
    if status != flushed {
        access::write_status(
            objects,
            access::Actor::Job,
            &access::info(objects, "batch", "v1", "jobs")?,
            &job,
            status,
        )
        .await?;
        // Upstream's `recordJobFinished`, once the finishing condition is written.
        if settled && !finished(&job) {
            let note = match (&failure, &success) {
                (Some(failure), _) => Some(Note::warning(&failure.reason, failure.message.clone())),
                (None, Some(_)) => Some(Note::normal("Completed", "Job completed".to_string())),
                (None, None) => None,
            };
            if let Some(note) = note {
                events.record(objects, Actor::Job, &job, note).await;
            }
        }
    }
    match manage_error {
        Some(e) => Err(e),
        None => Ok(again),
    }
}

/// `status.uncountedTerminatedPods` for the uncounted UIDs (`{}` when none).
fn uncounted_status(uncounted: &[Vec<String>; 2]) -> Value {
    let mut map = Map::new();
    for (field, uids) in ["succeeded", "failed"].iter().zip(uncounted.iter()) {
        if !uids.is_empty() {
            map.insert((*field).into(), json!(uids));
        }
    }
    Value::Object(map)
}

/// Sets `status.conditions` (stamping `lastProbeTime` where missing), or removes it when
/// there are none.
fn put_conditions(status: &mut Value, mut conditions: Vec<Value>) {
    for c in conditions.iter_mut() {
        if c.get("lastProbeTime").is_none() {
            c["lastProbeTime"] = c.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
        }
    }
    if conditions.is_empty() {
        if let Some(map) = status.as_object_mut() {
            map.remove("conditions");
        }
    } else {
        status["conditions"] = Value::Array(conditions);
    }
}

/// The last failed Pod of each index (most earlier failures, then latest to finish), whose
/// failure counts its replacement inherits (upstream's `getPodsWithDelayedDeletionPerIndex`).
fn last_failed_per_index<'a>(failed: &[&'a Value]) -> BTreeMap<usize, &'a Value> {
    let mut last: BTreeMap<usize, &Value> = BTreeMap::new();
    for pod in failed {
        let Some(index) = index_of(pod) else {
            continue;
        };
        let key = |p: &Value| {
            (
                failures::absolute_failure_count(p),
                failures::finish_time(p),
            )
        };
        match last.get(&index) {
            Some(previous) if key(previous) > key(pod) => {}
            _ => {
                last.insert(index, pod);
            }
        }
    }
    last
}

/// The annotation that ranks a Pod for deletion (upstream's `PodDeletionCost`).
const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// Upstream's `controller.ActivePods` order, the Pods to delete first first: unscheduled,
/// then pending before unknown before running, not ready, lower deletion cost, ready for
/// less time, more container restarts, newer (the name breaks ties).
fn removal_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    let scheduled = |p: &Value| {
        meta::path(p, "spec.nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
    };
    let phase_rank = |p: &Value| match phase(p) {
        "Unknown" => 1,
        "Running" => 2,
        _ => 0,
    };
    let cost = |p: &Value| {
        meta::path(p, "metadata.annotations")
            .and_then(|a| a.get(DELETION_COST))
            .and_then(Value::as_str)
            .and_then(|c| c.parse::<i32>().ok())
            .unwrap_or(0)
    };
    let ready_since = |p: &Value| {
        meta::path(p, "status.conditions")
            .and_then(Value::as_array)
            .and_then(|c| {
                c.iter()
                    .find(|c| c["type"] == "Ready" && c["status"] == "True")
            })
            .and_then(|c| access::timestamp(c.get("lastTransitionTime")))
    };
    let restarts = |p: &Value| {
        meta::path(p, "status.containerStatuses")
            .and_then(Value::as_array)
            .map_or(0, |s| {
                s.iter()
                    .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                    .max()
                    .unwrap_or(0)
            })
    };
    let created = |p: &Value| access::timestamp(meta::path(p, "metadata.creationTimestamp"));
    scheduled(a)
        .cmp(&scheduled(b))
        .then_with(|| phase_rank(a).cmp(&phase_rank(b)))
        .then_with(|| pod_ready(a).cmp(&pod_ready(b)))
        .then_with(|| cost(a).cmp(&cost(b)))
        .then_with(
            || match (pod_ready(a) && pod_ready(b), ready_since(a), ready_since(b)) {
                // Ready more recently (or for an unknown time) first.
                (true, Some(x), Some(y)) => y.cmp(&x),
                (true, None, Some(_)) => std::cmp::Ordering::Less,
                (true, Some(_), None) => std::cmp::Ordering::Greater,
                _ => std::cmp::Ordering::Equal,
            },
        )
        .then_with(|| restarts(b).cmp(&restarts(a)))
        .then_with(|| match (created(a), created(b)) {
            (Some(x), Some(y)) => y.cmp(&x),
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        })
        .then_with(|| meta::name(a).cmp(meta::name(b)))
}

/// The active Pods to delete (upstream's `activePodsForRemoval`): for an Indexed Job
/// (`Some(completions)`) those without a valid index and all but one of each repeated index
/// (the one kept comes last in [`removal_order`]); then, up to `at_least`, the first others
/// in [`removal_order`].
fn pods_for_removal<'a>(
    active: &[&'a Object],
    completions: Option<usize>,
    at_least: usize,
) -> Vec<&'a Object> {
    let mut remove: Vec<&Object> = Vec::new();
    let mut left: Vec<&Object> = Vec::new();
    match completions {
        Some(c) => {
            let mut by_index: BTreeMap<usize, Vec<&Object>> = BTreeMap::new();
            for pod in active.iter().copied() {
                match index_of(pod).filter(|i| *i < c) {
                    Some(i) => by_index.entry(i).or_default().push(pod),
                    None => remove.push(pod),
                }
            }
            for mut pods in by_index.into_values() {
                pods.sort_by(|a, b| removal_order(a, b));
                if let Some(kept) = pods.pop() {
                    left.push(kept);
                }
                remove.extend(pods);
            }
        }
        None => left.extend(active.iter().copied()),
    }
    if remove.len() < at_least {
        left.sort_by(|a, b| removal_order(a, b));
        let more = (at_least - remove.len()).min(left.len());
        remove.extend(left.into_iter().take(more));
    }
    remove
}

fn phase(pod: &Value) -> &str {
    meta::path(pod, "status.phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether the Job already has a `Complete` or `Failed` condition.
fn finished(job: &Value) -> bool {
    matches!(access::condition_status(job, "Complete"), Some("True"))
        || matches!(access::condition_status(job, "Failed"), Some("True"))
}

fn set_count(status: &mut Value, field: &str, n: usize) {
    if let Some(map) = status.as_object_mut() {
        if n > 0 {
            map.insert(field.into(), json!(n));
        } else {
            map.remove(field);
        }
    }
}

fn index_of(pod: &Value) -> Option<usize> {
    meta::metadata(pod)?
        .get("annotations")?
        .get(INDEX_ANNOTATION)?
        .as_str()?
        .parse()
        .ok()
}

/// The environment variable an Indexed Job's containers read their index from.
const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The longest `generateName` prefix (a name is at most 63 characters, 5 of them random).
const MAX_GENERATED_PREFIX: usize = 58;

/// A Pod for `job` from its template; for an Indexed Job, the Pod of completion `index`: the
/// index annotation and label, the hostname `<job>-<index>`, `JOB_COMPLETION_INDEX` in every
/// container's environment (from the label), and the name prefix `<job>-<index>-` (the job
/// name cut so that the prefix fits), as upstream's controller builds them.
fn new_pod(job: &Value, index: Option<usize>) -> Value {
    let template = meta::path(job, "spec.template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut metadata = Map::new();
    let prefix = match index {
        Some(i) => {
            let suffix = format!("-{i}-");
            let mut name = meta::name(job).to_string();
            let room = MAX_GENERATED_PREFIX.saturating_sub(suffix.len());
            if name.len() + suffix.len() > MAX_GENERATED_PREFIX {
                // Names are ASCII (DNS subdomains), so any byte is a boundary.
                name.truncate(room);
            }
            if let Value::Object(spec) = &mut spec {
                spec.insert("hostname".into(), json!(format!("{}-{i}", meta::name(job))));
                for list in ["initContainers", "containers"] {
                    if let Some(Value::Array(containers)) = spec.get_mut(list) {
                        containers.iter_mut().for_each(add_completion_index_env);
                    }
                }
            }
            format!("{name}{suffix}")
        }
        None => format!("{}-", meta::name(job)),
    };
    metadata.insert("generateName".into(), json!(prefix));
    let mut labels = access::labels_of(&template, "metadata.labels");
    let mut annotations = access::labels_of(&template, "metadata.annotations");
    if let Some(i) = index {
        labels.insert(INDEX_ANNOTATION.into(), json!(i.to_string()));
        annotations.insert(INDEX_ANNOTATION.into(), json!(i.to_string()));
    }
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    // The template's finalizers, and the tracking finalizer (upstream's
    // `appendJobCompletionFinalizerIfNotFound`).
    let mut finalizers = meta::finalizers(&template);
    if !finalizers.iter().any(|f| f == TRACKING_FINALIZER) {
        finalizers.push(TRACKING_FINALIZER.to_string());
    }
    metadata.insert("finalizers".into(), json!(finalizers));
    metadata.insert(
        "ownerReferences".into(),
        json!([access::owner_ref(job, "batch/v1", "Job")]),
    );
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// Adds `JOB_COMPLETION_INDEX` (from the Pod's index label) to a container's environment
/// unless the container sets it.
fn add_completion_index_env(container: &mut Value) {
    let Value::Object(container) = container else {
        return;
    };
    let env = container
        .entry("env")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !env.is_array() {
        *env = Value::Array(Vec::new());
    }
    let Value::Array(env) = env else {
        return;
    };
    if env.iter().any(|v| v["name"] == COMPLETION_INDEX_ENV) {
        return;
    }
    env.push(json!({
        "name": COMPLETION_INDEX_ENV,
        "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.labels['{INDEX_ANNOTATION}']")}},
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_policies_match_as_upstreams() {
        let set = |v: &[usize]| v.iter().copied().collect::<BTreeSet<usize>>();
        let policy = json!({"rules": [{"succeededIndexes": "0,2-3"}, {"succeededCount": 2}]});
        let matched = |done: &[usize]| success_policy_match(Some(&policy), 5, &set(done));
        assert_eq!(matched(&[]), None);
        assert_eq!(matched(&[0, 2]), Some("Matched rules at index 1".into()));
        assert_eq!(matched(&[0, 2, 3]), Some("Matched rules at index 0".into()));
        assert_eq!(matched(&[4]), None);
        // Indexes with a count: enough of them suffice; indexes past completions are ignored.
        let some = json!({"rules": [{"succeededIndexes": "1-3,9", "succeededCount": 2}]});
        let m = |done: &[usize]| success_policy_match(Some(&some), 5, &set(done));
        assert_eq!(m(&[1, 4]), None);
        assert_eq!(m(&[1, 3]), Some("Matched rules at index 0".into()));
        assert_eq!(success_policy_match(None, 5, &set(&[1])), None);
    }

    #[test]
    fn indexed_pods_are_named_and_annotated() {
        let job = json!({"metadata": {"name": "pi", "uid": "u"}, "spec": {"template": {"metadata": {"labels": {"job-name": "pi"}}, "spec": {}}}});
        let pod = new_pod(&job, Some(3));
        assert_eq!(pod["metadata"]["generateName"], "pi-3-");
        assert_eq!(pod["metadata"]["annotations"][INDEX_ANNOTATION], "3");
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "Job");
        assert_eq!(new_pod(&job, None)["metadata"]["generateName"], "pi-");
    }

    #[test]
    fn indexed_pods_get_hostname_and_completion_index_env() {
        let job = json!({"metadata": {"name": "pi", "uid": "u"}, "spec": {"template": {"spec": {
        "hostname": "mine",
        "initContainers": [{"name": "init", "image": "i"}],
        "containers": [
            {"name": "a", "image": "i", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "i", "env": [{"name": "JOB_COMPLETION_INDEX", "value": "7"}]}
        ]}}}});
        let pod = new_pod(&job, Some(2));
        let from_label = json!({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef":
            {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}});
        assert_eq!(pod["spec"]["hostname"], "pi-2");
        assert_eq!(pod["metadata"]["labels"][INDEX_ANNOTATION], "2");
        assert_eq!(pod["spec"]["initContainers"][0]["env"], json!([from_label]));
        assert_eq!(
            pod["spec"]["containers"][0]["env"],
            json!([{"name": "X", "value": "1"}, from_label])
        );
        // A container's own value wins.
        assert_eq!(
            pod["spec"]["containers"][1]["env"],
            json!([{"name": "JOB_COMPLETION_INDEX", "value": "7"}])
        );
        // Non-indexed Pods keep their template as it is.
        let plain = new_pod(&job, None);
        assert_eq!(plain["spec"]["hostname"], "mine");
        assert_eq!(plain["spec"]["initContainers"][0].get("env"), None);
        // Long job names are cut so that the prefix leaves room for the random suffix.
        let long = "j".repeat(63);
        let job =
            json!({"metadata": {"name": long, "uid": "u"}, "spec": {"template": {"spec": {}}}});
        let prefix = new_pod(&job, Some(12))["metadata"]["generateName"].clone();
        assert_eq!(prefix, json!(format!("{}-12-", "j".repeat(54))));
    }

    #[test]
    fn released_uncounted_pods_move_into_the_counters() {
        let mut status = json!({"succeeded": 2, "failed": 1});
        let mut uncounted = [
            vec!["s1".to_string(), "s2".to_string()],
            vec!["f1".to_string()],
        ];
        let tracked: BTreeSet<String> = ["s2".to_string()].into_iter().collect();
        assert!(count_released(&mut status, &mut uncounted, &tracked));
        assert_eq!(status, json!({"succeeded": 3, "failed": 2}));
        assert_eq!(uncounted_status(&uncounted), json!({"succeeded": ["s2"]}));
        // Nothing released: nothing moves.
        assert!(!count_released(&mut status, &mut uncounted, &tracked));
        assert_eq!(uncounted_status(&[vec![], vec![]]), json!({}));
    }

    #[test]
    fn creations_start_slow_and_stop_at_the_per_sync_limit() {
        assert_eq!(creation_batches(0), Vec::<usize>::new());
        assert_eq!(creation_batches(1), vec![1]);
        assert_eq!(creation_batches(10), vec![1, 2, 4, 3]);
        assert_eq!(creation_batches(15), vec![1, 2, 4, 8]);
        // A Job wanting 1200 Pods gets 500 in one sync.
        let many = creation_batches(1200);
        assert_eq!(many, vec![1, 2, 4, 8, 16, 32, 64, 128, 245]);
        assert_eq!(many.iter().sum::<usize>(), MAX_POD_CREATE_DELETE_PER_SYNC);
    }

    #[test]
    fn surplus_pods_are_chosen_like_upstreams_active_pods_order() {
        let pod = |name: &str,
                   index: Option<usize>,
                   node: &str,
                   phase: &str,
                   ready: bool,
                   created: &str| {
            let mut p = json!({"metadata": {"name": name, "creationTimestamp": created},
                "spec": {"nodeName": node},
                "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
            if let Some(i) = index {
                p["metadata"]["annotations"] = json!({INDEX_ANNOTATION: i.to_string()});
            }
            Arc::new(p)
        };
        let unscheduled = pod("a", Some(0), "", "Pending", false, "2026-01-01T00:00:00Z");
        let running_old = pod("b", Some(0), "n", "Running", true, "2026-01-01T00:00:00Z");
        let running_new = pod("c", Some(1), "n", "Running", true, "2026-01-01T00:00:05Z");
        let not_ready = pod("d", Some(2), "n", "Running", false, "2026-01-01T00:00:01Z");
        let out_of_range = pod("e", Some(7), "n", "Running", true, "2026-01-01T00:00:01Z");
        let all = [
            &unscheduled,
            &running_old,
            &running_new,
            &not_ready,
            &out_of_range,
        ];
        let names = |pods: Vec<&Object>| {
            pods.iter()
                .map(|p| meta::name(p).to_string())
                .collect::<Vec<_>>()
        };
        // Not indexed: unscheduled, then not ready, then the newer running one.
        assert_eq!(names(pods_for_removal(&all, None, 3)), ["a", "d", "c"]);
        assert!(pods_for_removal(&all, None, 0).is_empty());
        // Indexed: the index past completions and the repeated index 0 (the unscheduled copy)
        // go even when none is too many.
        assert_eq!(names(pods_for_removal(&all, Some(3), 0)), ["e", "a"]);
        assert_eq!(names(pods_for_removal(&all, Some(3), 3)), ["e", "a", "d"]);
    }

    #[test]
    fn back_off_records_belong_to_one_incarnation_of_a_job() {
        let records = BackoffRecords::default();
        let record = BackoffRecord {
            failures: 2,
            last_failure: Some(Timestamp::UNIX_EPOCH),
        };
        records.store("ns", "j", "uid-1", record);
        assert_eq!(records.get("ns", "j", "uid-1"), record);
        // A Job of the same name made anew (a different uid) starts without it.
        assert_eq!(records.get("ns", "j", "uid-2"), BackoffRecord::default());
        assert_eq!(records.get("other", "j", "uid-1"), BackoffRecord::default());
        // Its own record replaces the old one; deleting the Job forgets it.
        records.store("ns", "j", "uid-2", BackoffRecord::default());
        assert_eq!(records.get("ns", "j", "uid-1"), BackoffRecord::default());
        records.store("ns", "j", "uid-1", record);
        records.remove("ns", "j");
        assert_eq!(records.get("ns", "j", "uid-1"), BackoffRecord::default());
    }

    #[test]
    fn job_pods_carry_the_tracking_finalizer() {
        let job = json!({"metadata": {"name": "pi", "uid": "u"}, "spec": {"template": {
            "metadata": {"finalizers": ["example.com/keep"]}, "spec": {}}}});
        let pod = new_pod(&job, None);
        assert_eq!(
            pod["metadata"]["finalizers"],
            json!(["example.com/keep", TRACKING_FINALIZER])
        );
        assert!(tracked(&pod));
    }
}
