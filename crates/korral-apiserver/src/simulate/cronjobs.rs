//! The CronJob controller (upstream's `cronjob_controllerv2`): at each scheduled time a Job
//! `<cronjob>-<scheduled unix minutes>` from the job template, owned by the CronJob, with the
//! `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation; only the most recent missed
//! time runs, and not once `startingDeadlineSeconds` has passed; `concurrencyPolicy` `Forbid`
//! skips while a Job is active and `Replace` deletes the active ones first; a suspended
//! CronJob starts nothing. Status keeps `active` (references to running Jobs),
//! `lastScheduleTime` and `lastSuccessfulTime`; finished Jobs beyond
//! `successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are deleted first, oldest first.
//!
//! Events, with upstream's reasons and messages: `SuccessfulCreate` ("Created job <name>"),
//! `SawCompletedJob` ("Saw completed job: <name>, condition: Complete"), `SuccessfulDelete`
//! ("Deleted job <name>") and `FailedDelete`, `UnexpectedJob` (a running Job of the CronJob
//! not in `active`), `MissingJob` (an active Job gone), `JobAlreadyActive` (Forbid),
//! `FailedCreate`, `FailedGet`, `TooManyMissedTimes` (more than 100 missed times, counted as
//! upstream approximates them), `MissSchedule`, `InvalidSchedule` (a schedule that never fires
//! twice), `UnparseableSchedule`, `UnsupportedSchedule` (`TZ=` in the schedule) and
//! `UnknownTimeZone`.
//!
//! Simplification: a running Job of the CronJob missing from `active` is listed there once
//! recorded as `UnexpectedJob` (upstream leaves it out).
//!
//! Schedules are read in `spec.timeZone` (or the schedule's `TZ=`), UTC otherwise (the zone of
//! upstream's controller manager). The controller asks to run again at the next scheduled
//! time; nothing polls.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Value, json};

use super::access::{self, Actor};
use super::events::{Note, Recorder};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;
use crate::storage::Object;

/// The annotation naming the time a Job was scheduled for.
const SCHEDULED_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// Past the next scheduled time, how long to wait before looking again (upstream's
/// `nextScheduleDelta`).
const NEXT_DELTA: Duration = Duration::from_millis(100);

/// A string at `path` of `obj` (empty when unset).
fn text<'a>(obj: &'a Value, path: &str) -> &'a str {
    meta::path(obj, path).and_then(Value::as_str).unwrap_or("")
}

/// A timestamp at `path` of `obj`.
fn time_at(obj: &Value, path: &str) -> Option<Timestamp> {
    text(obj, path).parse().ok()
}

/// Whether a Job finished, and whether it succeeded.
fn outcome(job: &Value) -> Option<bool> {
    if access::condition_status(job, "Complete") == Some("True") {
        Some(true)
    } else if access::condition_status(job, "Failed") == Some("True") {
        Some(false)
    } else {
        None
    }
}

/// The name of the Job of a scheduled time (upstream's `getJobName`).
pub fn job_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second().div_euclid(60))
}

/// An `ObjectReference` to a Job, as the controller keeps it in `status.active`.
fn reference(job: &Value) -> Value {
    json!({
        "kind": "Job",
        "namespace": meta::namespace(job),
        "name": meta::name(job),
        "uid": meta::uid(job),
        "apiVersion": "batch/v1",
        "resourceVersion": meta::resource_version(job),
    })
}

/// Reconciles one CronJob; `Some(delay)` asks to run again after `delay`. The Jobs it
/// creates, sees finish and deletes are recorded as events, with upstream's messages.
pub async fn reconcile(
    objects: &Objects,
    events: &Recorder,
    ns: &str,
    name: &str,
) -> Result<Option<Duration>, ApiError> {
    reconcile_at(objects, events, ns, name, Timestamp::now()).await
}

/// [`reconcile`] at `now`: upstream's `sync` (history clean-up, then `syncCronJob`, then one
/// status write).
async fn reconcile_at(
    objects: &Objects,
    events: &Recorder,
    ns: &str,
    name: &str,
    now: Timestamp,
) -> Result<Option<Duration>, ApiError> {
    let Some(cron_job) = access::get(objects, "batch", "cronjobs", ns, name) else {
        return Ok(None);
    };
    let info = access::info(objects, "batch", "v1", "cronjobs")?;
    let jobs: Vec<Object> = access::list(objects, "batch", "jobs", ns)
        .into_iter()
        .filter(|j| access::controlled_by(j, meta::uid(&cron_job)))
        .collect();
    let mut active: Vec<Value> = meta::path(&cron_job, "status.active")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let deleted = clean_history(objects, events, &cron_job, &jobs).await;
    active.retain(|r| !deleted.iter().any(|uid| r["uid"] == uid.as_str()));

    let mut last_success = time_at(&cron_job, "status.lastSuccessfulTime");
    for job in &jobs {
        let found = active.iter().any(|r| r["uid"] == meta::uid(job));
        match outcome(job) {
            None if !found => {
                let message = format!(
                    "Saw a job that the controller did not create or forgot: {}",
                    meta::name(job)
                );
                warn(objects, events, &cron_job, "UnexpectedJob", message).await;
                // Upstream leaves such a Job out of `active`; the simulation adopts it.
                if !meta::is_deleting(job) {
                    active.push(reference(job));
                }
            }
            Some(succeeded) => {
                if found {
                    active.retain(|r| r["uid"] != meta::uid(job));
                    let condition = if succeeded { "Complete" } else { "Failed" };
                    let message = format!(
                        "Saw completed job: {}, condition: {condition}",
                        meta::name(job)
                    );
                    record(objects, events, &cron_job, "SawCompletedJob", message).await;
                }
                let completed = time_at(job, "status.completionTime");
                if succeeded && completed > last_success {
                    last_success = completed;
                }
            }
            None => {}
        }
    }
    // Active Jobs gone meanwhile.
    let mut missing = Vec::new();
    for r in &active {
        let job_name = r["name"].as_str().unwrap_or_default();
        let listed = jobs.iter().any(|j| r["uid"] == meta::uid(j));
        if !listed && access::get(objects, "batch", "jobs", ns, job_name).is_none() {
            let message = format!("Active job went missing: {job_name}");
            record(objects, events, &cron_job, "MissingJob", message).await;
            missing.push(r["uid"].clone());
        }
    }
    active.retain(|r| !missing.contains(&r["uid"]));

    let mut state = Sync {
        active,
        last_schedule: None,
        requeue: None,
    };
    let synced = if meta::is_deleting(&cron_job) {
        Ok(())
    } else {
        schedule(objects, events, &cron_job, now, &mut state).await
    };
    let Sync {
        active,
        last_schedule,
        requeue,
    } = state;
    let last_schedule = last_schedule.map(|t| t.to_string());
    let last_success = last_success.map(|t| t.to_string());
    access::update_status(objects, Actor::CronJob, &info, &cron_job, move |cj| {
        let status = &mut cj["status"];
        if !status.is_object() {
            *status = json!({});
        }
        if active.is_empty() {
            if let Some(map) = status.as_object_mut() {
                map.remove("active");
            }
        } else {
            status["active"] = Value::Array(active.clone());
        }
        if let Some(time) = &last_schedule {
            status["lastScheduleTime"] = json!(time);
        }
        if let Some(time) = &last_success {
            status["lastSuccessfulTime"] = json!(time);
        }
    })
    .await?;
    synced.map(|()| requeue)
}

/// What the scheduling part of a sync changes.
struct Sync {
    /// References to the active Jobs.
    active: Vec<Value>,
    /// The time a Job was started (or found started) for.
    last_schedule: Option<Timestamp>,
    /// When to look again.
    requeue: Option<Duration>,
}

/// Starts the Job of the most recent scheduled time when it is due (upstream's part of
/// `syncCronJob` after the active list is brought up to date), recording what upstream
/// records when it cannot.
async fn schedule(
    objects: &Objects,
    events: &Recorder,
    cron_job: &Value,
    now: Timestamp,
    state: &mut Sync,
) -> Result<(), ApiError> {
    let zone_name = text(cron_job, "spec.timeZone");
    let Some(zone) = crate::cron::zone_named(zone_name) else {
        let message = format!("invalid timeZone: {zone_name:?}: unknown time zone {zone_name}");
        warn(objects, events, cron_job, "UnknownTimeZone", message).await;
        return Ok(());
    };
    if meta::path(cron_job, "spec.suspend") == Some(&Value::Bool(true)) {
        return Ok(());
    }
    let spec = text(cron_job, "spec.schedule");
    if spec.contains("TZ") {
        let message = format!(
            "CRON_TZ or TZ used in schedule {spec:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
        );
        warn(objects, events, cron_job, "UnsupportedSchedule", message).await;
    }
    let schedule = match crate::cron::compile(spec) {
        Ok(schedule) => schedule,
        Err(e) => {
            let message = format!("unparseable schedule: {spec:?} : {e}");
            warn(objects, events, cron_job, "UnparseableSchedule", message).await;
            return Ok(());
        }
    };
    let time = match due(cron_job, &schedule, &zone, now) {
        Due::Invalid => {
            let message = format!(
                "invalid schedule: {spec} : time difference between two schedules is less than 1 second"
            );
            warn(objects, events, cron_job, "InvalidSchedule", message).await;
            return Ok(());
        }
        due => {
            state.requeue = schedule.next(now, &zone).map(|next| {
                next.duration_since(now)
                    .unsigned_abs()
                    .saturating_add(NEXT_DELTA)
            });
            match due {
                Due::At { time, many_missed } => {
                    if many_missed {
                        let message = "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".to_string();
                        warn(objects, events, cron_job, "TooManyMissedTimes", message).await;
                    }
                    time
                }
                _ => return Ok(()),
            }
        }
    };
    let deadline = meta::path(cron_job, "spec.startingDeadlineSeconds").and_then(Value::as_i64);
    let too_late = deadline.is_some_and(|seconds| {
        time.checked_add(jiff::SignedDuration::from_secs(seconds))
            .is_ok_and(|end| end < now)
    });
    if too_late {
        let stamp = time.strftime("%a, %d %b %Y %H:%M:%S %z");
        let message = format!("Missed scheduled time to start a job: {stamp}");
        warn(objects, events, cron_job, "MissSchedule", message).await;
        return Ok(());
    }
    let name = job_name(meta::name(cron_job), time);
    if state.active.iter().any(|r| r["name"] == name.as_str())
        || time_at(cron_job, "status.lastScheduleTime") == Some(time)
    {
        return Ok(());
    }
    let policy = text(cron_job, "spec.concurrencyPolicy");
    if policy == "Forbid" && !state.active.is_empty() {
        let message =
            "Not starting job because prior execution is running and concurrency policy is Forbid";
        record(
            objects,
            events,
            cron_job,
            "JobAlreadyActive",
            message.to_string(),
        )
        .await;
        return Ok(());
    }
    let ns = meta::namespace(cron_job).unwrap_or_default();
    let job_info = access::info(objects, "batch", "v1", "jobs")?;
    if policy == "Replace" {
        for r in std::mem::take(&mut state.active) {
            let job_name = r["name"].as_str().unwrap_or_default();
            let Some(job) = access::get(objects, "batch", "jobs", ns, job_name) else {
                let e = ApiError::not_found("batch", "jobs", job_name);
                warn(
                    objects,
                    events,
                    cron_job,
                    "FailedGet",
                    format!("Get job: {}", e.message),
                )
                .await;
                return Err(e);
            };
            if delete_job(objects, events, &job_info, cron_job, &job)
                .await
                .is_err()
            {
                return Err(ApiError::internal(format!(
                    "could not replace job {ns}/{job_name}"
                )));
            }
        }
    }
    let job = new_job(cron_job, &name, time, &zone);
    let created = match access::create(objects, Actor::CronJob, &job_info, Some(ns), job).await {
        Ok(job) => {
            let message = format!("Created job {}", meta::name(&job));
            record(objects, events, cron_job, "SuccessfulCreate", message).await;
            job
        }
        Err(e) if e.code == 409 => {
            // Made before (the status write that would have said so failed): listed as
            // active again when it is the CronJob's own.
            let Some(job) = access::get(objects, "batch", "jobs", ns, &name) else {
                return Err(e);
            };
            let listed = state.active.iter().any(|r| r["uid"] == meta::uid(&job));
            if !access::controlled_by(&job, meta::uid(cron_job)) || listed {
                return Ok(());
            }
            job
        }
        // Nothing can be created in a namespace being deleted: no event.
        Err(e) if e.code == 403 && e.message.ends_with("because it is being terminated") => {
            return Err(e);
        }
        Err(e) => {
            let message = format!("Error creating job: {}", e.message);
            warn(objects, events, cron_job, "FailedCreate", message).await;
            return Err(e);
        }
    };
    state.active.push(reference(&created));
    state.last_schedule = Some(time);
    Ok(())
}

/// Whether a scheduled time is due (upstream's `mostRecentScheduleTime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Due {
    /// Nothing is due yet.
    No,
    /// The most recent scheduled time, and whether more than 100 were missed.
    At { time: Timestamp, many_missed: bool },
    /// The schedule never fires twice (February 30th).
    Invalid,
}

/// The most recent scheduled time not handled yet: from the last schedule time or the
/// creation, or `startingDeadlineSeconds` ago when that is later (upstream's
/// `mostRecentScheduleTime`, counting the missed times as upstream approximates them).
fn due(cron_job: &Value, schedule: &crate::cron::Schedule, zone: &TimeZone, now: Timestamp) -> Due {
    let Some(mut earliest) = time_at(cron_job, "status.lastScheduleTime")
        .or_else(|| time_at(cron_job, "metadata.creationTimestamp"))
    else {
        return Due::No;
    };
    let deadline = meta::path(cron_job, "spec.startingDeadlineSeconds").and_then(Value::as_i64);
    if let Some(seconds) = deadline
        && let Ok(start) = now.checked_sub(jiff::SignedDuration::from_secs(seconds))
        && start > earliest
    {
        earliest = start;
    }
    let Some(first) = schedule.next(earliest, zone) else {
        return Due::Invalid;
    };
    if now < first {
        return Due::No;
    }
    let Some(second) = schedule.next(first, zone) else {
        return Due::Invalid;
    };
    if now < second {
        return Due::At {
            time: first,
            many_missed: false,
        };
    }
    let interval = second.duration_since(first).as_secs();
    if interval < 1 {
        return Due::Invalid;
    }
    let missed = now.duration_since(first).as_secs() / interval + 1;
    match schedule.most_recent(earliest, now, zone) {
        Some(time) => Due::At {
            time,
            many_missed: missed > 100,
        },
        None => Due::No,
    }
}

/// The Job of a scheduled time (upstream's `getJobFromTemplate2`).
fn new_job(cron_job: &Value, name: &str, scheduled: Timestamp, zone: &TimeZone) -> Value {
    let template = meta::path(cron_job, "spec.jobTemplate")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut annotations = access::labels_of(&template, "metadata.annotations");
    let stamp = scheduled
        .to_zoned(zone.clone())
        .strftime("%Y-%m-%dT%H:%M:%S%:z")
        .to_string();
    let stamp = stamp.replace("+00:00", "Z");
    annotations.insert(SCHEDULED_ANNOTATION.into(), json!(stamp));
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": meta::namespace(cron_job),
            "labels": access::labels_of(&template, "metadata.labels"),
            "annotations": annotations,
            "ownerReferences": [access::owner_ref(cron_job, "batch/v1", "CronJob")],
        },
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Deletes the oldest finished Jobs beyond the history limits (upstream's
/// `cleanupFinishedJobs`: by start time, Jobs never started last, then by name); the uids of
/// the Jobs deleted.
async fn clean_history(
    objects: &Objects,
    events: &Recorder,
    cron_job: &Value,
    jobs: &[Object],
) -> Vec<String> {
    let mut deleted = Vec::new();
    let Ok(info) = access::info(objects, "batch", "v1", "jobs") else {
        return deleted;
    };
    for (succeeded, field, default) in [
        (true, "spec.successfulJobsHistoryLimit", 3),
        (false, "spec.failedJobsHistoryLimit", 1),
    ] {
        let limit = usize::try_from(access::int(cron_job, field, default).max(0)).unwrap_or(0);
        let mut finished: Vec<&Object> = jobs
            .iter()
            .filter(|j| outcome(j) == Some(succeeded) && !meta::is_deleting(j))
            .collect();
        if finished.len() <= limit {
            continue;
        }
        finished.sort_by_key(|j| {
            let start = time_at(j, "status.startTime");
            (start.is_none(), start, meta::name(j).to_string())
        });
        let excess = finished.len() - limit;
        for job in finished.into_iter().take(excess) {
            if delete_job(objects, events, &info, cron_job, job)
                .await
                .is_ok()
            {
                deleted.push(meta::uid(job).to_string());
            }
        }
    }
    deleted
}

/// Records a Normal event about the CronJob.
async fn record(
    objects: &Objects,
    events: &Recorder,
    cron_job: &Value,
    reason: &str,
    message: String,
) {
    let note = Note::normal(reason, message);
    events.record(objects, Actor::CronJob, cron_job, note).await;
}

/// Records a Warning event about the CronJob.
async fn warn(
    objects: &Objects,
    events: &Recorder,
    cron_job: &Value,
    reason: &str,
    message: String,
) {
    let note = Note::warning(reason, message);
    events.record(objects, Actor::CronJob, cron_job, note).await;
}

/// Deletes a Job of the CronJob, recorded as `SuccessfulDelete` "Deleted job <name>" (or a
/// `FailedDelete` warning "Deleted job: <error>").
async fn delete_job(
    objects: &Objects,
    events: &Recorder,
    job_info: &Arc<ResourceInfo>,
    cron_job: &Value,
    job: &Value,
) -> Result<(), ApiError> {
    match access::delete(objects, Actor::CronJob, job_info, job).await {
        Ok(()) => {
            let message = format!("Deleted job {}", meta::name(job));
            record(objects, events, cron_job, "SuccessfulDelete", message).await;
            Ok(())
        }
        Err(e) => {
            let message = format!("Deleted job: {}", e.message);
            warn(objects, events, cron_job, "FailedDelete", message).await;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("timestamp")
    }

    #[test]
    fn job_names_count_minutes() {
        assert_eq!(
            job_name("backup", at("2026-11-28T10:05:00Z")),
            "backup-29931005"
        );
    }

    #[test]
    fn only_the_latest_missed_time_runs_within_the_deadline() {
        let schedule = crate::cron::compile("*/5 * * * *").expect("schedule");
        let utc = TimeZone::UTC;
        let cj = json!({"metadata": {"creationTimestamp": "2026-11-28T09:00:00Z"}, "spec": {}});
        assert_eq!(
            due(&cj, &schedule, &utc, at("2026-11-28T10:07:00Z")),
            Due::At {
                time: at("2026-11-28T10:05:00Z"),
                many_missed: false
            }
        );
        let late = json!({"metadata": {"creationTimestamp": "2026-11-28T09:00:00Z"},
                          "spec": {"startingDeadlineSeconds": 60}});
        assert_eq!(
            due(&late, &schedule, &utc, at("2026-11-28T10:07:00Z")),
            Due::No
        );
        let handled = json!({"metadata": {"creationTimestamp": "2026-11-28T09:00:00Z"},
                             "status": {"lastScheduleTime": "2026-11-28T10:05:00Z"}});
        assert_eq!(
            due(&handled, &schedule, &utc, at("2026-11-28T10:07:00Z")),
            Due::No
        );
    }

    #[test]
    fn jobs_come_from_the_template() {
        let cj = json!({"metadata": {"name": "backup", "namespace": "ns", "uid": "u"},
            "spec": {"jobTemplate": {"metadata": {"labels": {"app": "b"}},
                                     "spec": {"template": {"spec": {"containers": []}}}}}});
        let job = new_job(&cj, "backup-1", at("2026-11-28T10:05:00Z"), &TimeZone::UTC);
        assert_eq!(job["metadata"]["labels"], json!({"app": "b"}));
        assert_eq!(
            job["metadata"]["annotations"][SCHEDULED_ANNOTATION],
            "2026-11-28T10:05:00Z"
        );
        assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
        assert_eq!(
            job["spec"],
            json!({"template": {"spec": {"containers": []}}})
        );
    }

    /// Creates CronJob `name` with `spec` besides its Jobs' template, last scheduled at
    /// `last` (when given).
    async fn cron_job(objects: &Objects, name: &str, spec: Value, last: Option<Timestamp>) {
        let mut body = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}}});
        if let (Some(all), Some(extra)) = (body["spec"].as_object_mut(), spec.as_object()) {
            all.extend(extra.clone());
        }
        let info = access::info(objects, "batch", "v1", "cronjobs").expect("info");
        let created = access::create(objects, Actor::CronJob, &info, Some("default"), body)
            .await
            .expect("cronjob");
        if let Some(last) = last {
            let last = last.to_string();
            access::update_status(objects, Actor::CronJob, &info, &created, move |cj| {
                cj["status"] = json!({"lastScheduleTime": last});
            })
            .await
            .expect("status");
        }
    }

    /// The `(type, reason, message)` of the Events about `name`, oldest first.
    fn recorded(objects: &Objects, name: &str) -> Vec<(String, String, String)> {
        let mut events = access::list(objects, "", "events", "default");
        events.sort_by_key(|e| e["metadata"]["name"].as_str().map(str::to_string));
        events
            .iter()
            .filter(|e| e["involvedObject"]["name"] == name)
            .map(|e| {
                let field = |f: &str| e[f].as_str().unwrap_or_default().to_string();
                (field("type"), field("reason"), field("message"))
            })
            .collect()
    }

    fn event(kind: &str, reason: &str, message: &str) -> (String, String, String) {
        (kind.into(), reason.into(), message.into())
    }

    #[tokio::test]
    async fn too_many_missed_times_and_a_forbidden_run_are_recorded() {
        let objects = crate::simulate::events::memory_store().await;
        let events = Recorder::default();
        let now = Timestamp::now();
        let long_ago = now - jiff::SignedDuration::from_mins(200);
        let spec = json!({"schedule": "* * * * *", "concurrencyPolicy": "Forbid"});
        cron_job(&objects, "cj", spec, Some(long_ago)).await;
        let again = reconcile_at(&objects, &events, "default", "cj", now)
            .await
            .expect("reconcile");
        assert!(again.is_some_and(|d| d <= Duration::from_secs(61)));
        let minute = Timestamp::from_second(now.as_second() - now.as_second().rem_euclid(60))
            .expect("minute");
        let job = job_name("cj", minute);
        assert_eq!(
            recorded(&objects, "cj"),
            [
                event(
                    "Warning",
                    "TooManyMissedTimes",
                    "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
                ),
                event("Normal", "SuccessfulCreate", &format!("Created job {job}")),
            ]
        );
        let stored = access::get(&objects, "batch", "cronjobs", "default", "cj").expect("cj");
        assert_eq!(stored["status"]["active"][0]["name"], job.as_str());
        assert_eq!(stored["status"]["lastScheduleTime"], minute.to_string());
        // A minute later the run is still active: Forbid starts nothing.
        let later = now + jiff::SignedDuration::from_secs(60);
        reconcile_at(&objects, &events, "default", "cj", later)
            .await
            .expect("reconcile");
        let all = recorded(&objects, "cj");
        assert_eq!(
            all.last(),
            Some(&event(
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid"
            ))
        );
        assert_eq!(access::list(&objects, "batch", "jobs", "default").len(), 1);
    }

    #[tokio::test]
    async fn a_schedule_that_never_fires_twice_is_recorded_invalid() {
        let objects = crate::simulate::events::memory_store().await;
        let events = Recorder::default();
        cron_job(&objects, "never", json!({"schedule": "0 0 30 2 *"}), None).await;
        let again = reconcile_at(&objects, &events, "default", "never", Timestamp::now())
            .await
            .expect("reconcile");
        assert_eq!(again, None, "not looked at again until it changes");
        assert_eq!(
            recorded(&objects, "never"),
            [event(
                "Warning",
                "InvalidSchedule",
                "invalid schedule: 0 0 30 2 * : time difference between two schedules is less than 1 second"
            )]
        );
    }
}
