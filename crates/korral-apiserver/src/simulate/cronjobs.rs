//! The CronJob controller (upstream's `cronjob_controllerv2`): at each scheduled time a Job
//! `<cronjob>-<scheduled unix minutes>` from the job template, owned by the CronJob, with the
//! `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation; only the most recent missed
//! time runs, and not once `startingDeadlineSeconds` has passed; `concurrencyPolicy` `Forbid`
//! skips while a Job is active and `Replace` deletes the active ones first; a suspended
//! CronJob starts nothing. Status keeps `active` (references to running Jobs),
//! `lastScheduleTime` and `lastSuccessfulTime`; finished Jobs beyond
//! `successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are deleted, oldest first.
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
    let Some(cron_job) = access::get(objects, "batch", "cronjobs", ns, name) else {
        return Ok(None);
    };
    if meta::is_deleting(&cron_job) {
        return Ok(None);
    }
    let info = access::info(objects, "batch", "v1", "cronjobs")?;
    let job_info = access::info(objects, "batch", "v1", "jobs")?;
    let jobs: Vec<Object> = access::list(objects, "batch", "jobs", ns)
        .into_iter()
        .filter(|j| access::controlled_by(j, meta::uid(&cron_job)))
        .collect();
    let running: Vec<&Object> = jobs
        .iter()
        .filter(|j| outcome(j).is_none() && !meta::is_deleting(j))
        .collect();
    let last_success = jobs
        .iter()
        .filter(|j| outcome(j) == Some(true))
        .filter_map(|j| meta::path(j, "status.completionTime").cloned())
        .max_by_key(|t| t.as_str().and_then(|s| s.parse::<Timestamp>().ok()));

    let now = Timestamp::now();
    let zone_name = match text(&cron_job, "spec.timeZone") {
        "" => "UTC",
        zone => zone,
    };
    let schedule = crate::cron::compile(text(&cron_job, "spec.schedule")).ok();
    let zone = crate::cron::zone_named(zone_name);
    let suspended = meta::path(&cron_job, "spec.suspend") == Some(&Value::Bool(true));

    let mut scheduled = None;
    let mut active: Vec<&Object> = running.clone();
    if let (Some(schedule), Some(zone), false) = (&schedule, &zone, suspended)
        && let Some(time) = due(&cron_job, schedule, zone, now)
    {
        let name = job_name(meta::name(&cron_job), time);
        let handled = jobs.iter().any(|j| meta::name(j) == name)
            || time_at(&cron_job, "status.lastScheduleTime") == Some(time);
        let policy = text(&cron_job, "spec.concurrencyPolicy");
        let forbidden = policy == "Forbid" && !running.is_empty();
        if !handled && !forbidden {
            if policy == "Replace" {
                for job in &running {
                    delete_job(objects, events, &job_info, &cron_job, job).await?;
                }
                active.clear();
            }
            let job = new_job(&cron_job, &name, time, zone);
            match access::create(objects, Actor::CronJob, &job_info, Some(ns), job).await {
                Ok(job) => {
                    let message = format!("Created job {}", meta::name(&job));
                    record(objects, events, &cron_job, "SuccessfulCreate", message).await;
                    scheduled = Some(time);
                }
                Err(ApiError { code: 409, .. }) => scheduled = Some(time),
                Err(e) => return Err(e),
            }
        }
    }
    let created = scheduled.map(|time| job_name(meta::name(&cron_job), time));
    let created_job = created
        .as_deref()
        .and_then(|n| access::get(objects, "batch", "jobs", ns, n));
    let mut refs: Vec<Value> = active.iter().map(|j| reference(j)).collect();
    if let Some(job) = created_job.as_ref().filter(|j| outcome(j).is_none()) {
        refs.push(reference(job));
    }
    // Jobs listed active before and finished now (upstream's `SawCompletedJob`).
    let was_active: Vec<&str> = meta::path(&cron_job, "status.active")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("name").and_then(Value::as_str))
        .collect();
    for job in jobs.iter().filter(|j| was_active.contains(&meta::name(j))) {
        if let Some(succeeded) = outcome(job) {
            let condition = if succeeded { "Complete" } else { "Failed" };
            let message = format!(
                "Saw completed job: {}, condition: {condition}",
                meta::name(job)
            );
            record(objects, events, &cron_job, "SawCompletedJob", message).await;
        }
    }
    let schedule_time = scheduled.map(|t| t.to_string());
    access::update_status(objects, Actor::CronJob, &info, &cron_job, move |cj| {
        let status = &mut cj["status"];
        if !status.is_object() {
            *status = json!({});
        }
        if refs.is_empty() {
            if let Some(map) = status.as_object_mut() {
                map.remove("active");
            }
        } else {
            status["active"] = Value::Array(refs.clone());
        }
        if let Some(time) = &schedule_time {
            status["lastScheduleTime"] = json!(time);
        }
        if let Some(time) = &last_success {
            status["lastSuccessfulTime"] = time.clone();
        }
    })
    .await?;
    clean_history(objects, events, &cron_job, &jobs).await?;

    let next = match (&schedule, &zone, suspended) {
        (Some(schedule), Some(zone), false) => schedule.next(now, zone),
        _ => None,
    };
    Ok(next.map(|next| {
        let wait = next.duration_since(now).unsigned_abs();
        wait.saturating_add(NEXT_DELTA)
    }))
}

/// The most recent scheduled time not handled yet, if it is still within the starting
/// deadline (upstream's `mostRecentScheduleTime` from the last schedule time or the creation,
/// bounded by `startingDeadlineSeconds`).
fn due(
    cron_job: &Value,
    schedule: &crate::cron::Schedule,
    zone: &TimeZone,
    now: Timestamp,
) -> Option<Timestamp> {
    let mut earliest = time_at(cron_job, "status.lastScheduleTime")
        .or_else(|| time_at(cron_job, "metadata.creationTimestamp"))?;
    let deadline = meta::path(cron_job, "spec.startingDeadlineSeconds").and_then(Value::as_i64);
    if let Some(seconds) = deadline
        && let Ok(start) = now.checked_sub(jiff::SignedDuration::from_secs(seconds))
        && start > earliest
    {
        earliest = start;
    }
    if earliest > now {
        return None;
    }
    let time = schedule.most_recent(earliest, now, zone)?;
    let too_late = deadline.is_some_and(|seconds| {
        time.checked_add(jiff::SignedDuration::from_secs(seconds))
            .is_ok_and(|end| end < now)
    });
    (!too_late).then_some(time)
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

/// Deletes the oldest finished Jobs beyond the history limits.
async fn clean_history(
    objects: &Objects,
    events: &Recorder,
    cron_job: &Value,
    jobs: &[Object],
) -> Result<(), ApiError> {
    let info = access::info(objects, "batch", "v1", "jobs")?;
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
            (
                time_at(j, "status.startTime"),
                meta::path(j, "metadata.creationTimestamp")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            )
        });
        let excess = finished.len() - limit;
        for job in finished.into_iter().take(excess) {
            delete_job(objects, events, &info, cron_job, job).await?;
        }
    }
    Ok(())
}

/// Records a Normal event about the CronJob.
async fn record(
    objects: &Objects,
    events: &Recorder,
    cron_job: &Value,
    reason: &str,
    message: String,
) {
    events
        .record(
            objects,
            Actor::CronJob,
            cron_job,
            Note::normal(reason, message),
        )
        .await;
}

/// Deletes a Job of the CronJob, recorded as `SuccessfulDelete` "Deleted job <name>".
async fn delete_job(
    objects: &Objects,
    events: &Recorder,
    job_info: &Arc<ResourceInfo>,
    cron_job: &Value,
    job: &Value,
) -> Result<(), ApiError> {
    access::delete(objects, Actor::CronJob, job_info, job).await?;
    let message = format!("Deleted job {}", meta::name(job));
    record(objects, events, cron_job, "SuccessfulDelete", message).await;
    Ok(())
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
            Some(at("2026-11-28T10:05:00Z"))
        );
        let late = json!({"metadata": {"creationTimestamp": "2026-11-28T09:00:00Z"},
                          "spec": {"startingDeadlineSeconds": 60}});
        assert_eq!(
            due(&late, &schedule, &utc, at("2026-11-28T10:07:00Z")),
            None
        );
        let handled = json!({"metadata": {"creationTimestamp": "2026-11-28T09:00:00Z"},
                             "status": {"lastScheduleTime": "2026-11-28T10:05:00Z"}});
        assert_eq!(
            due(&handled, &schedule, &utc, at("2026-11-28T10:07:00Z")),
            None
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
}
