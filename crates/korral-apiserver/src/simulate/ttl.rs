//! The TTL-after-finished controller (upstream's `ttlafterfinished`): a finished Job with
//! `spec.ttlSecondsAfterFinished` is deleted, with foreground propagation (its Pods first) and
//! a uid precondition, once the time its `Complete` or `Failed` condition turned `True` plus
//! the TTL has passed. Until then it asks to run again when the TTL expires; nothing polls.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::access;
use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::meta;
use crate::objects::{DeleteOptions, Objects, Propagation};

/// The identity upstream's controller deletes as.
fn controller() -> UserInfo {
    UserInfo::service_account("kube-system", "ttl-after-finished-controller", "")
}

/// When a finished Job finished: the transition time of its `True` terminal condition
/// (upstream's `jobFinishTime`); `None` while it runs or when that time is missing.
fn finish_time(job: &Value) -> Option<Timestamp> {
    meta::path(job, "status.conditions")?
        .as_array()?
        .iter()
        .find(|c| {
            matches!(c["type"].as_str(), Some("Complete" | "Failed")) && c["status"] == "True"
        })?
        .get("lastTransitionTime")?
        .as_str()?
        .parse()
        .ok()
}

/// When a Job's TTL expires: its finish time plus `ttlSecondsAfterFinished`; `None` for a Job
/// without a TTL, not finished, or already being deleted.
pub(crate) fn expiry(job: &Value) -> Option<Timestamp> {
    if meta::is_deleting(job) {
        return None;
    }
    let ttl = meta::path(job, "spec.ttlSecondsAfterFinished")?.as_i64()?;
    finish_time(job)?
        .checked_add(SignedDuration::from_secs(ttl))
        .ok()
}

/// Deletes one Job whose TTL expired at `now`, or returns how long until it does.
pub async fn reconcile(
    objects: &Objects,
    ns: &str,
    name: &str,
    now: Timestamp,
) -> Result<Option<Duration>, ApiError> {
    let Some(job) = access::get(objects, "batch", "jobs", ns, name) else {
        return Ok(None);
    };
    let Some(expires) = expiry(&job) else {
        return Ok(None);
    };
    if expires > now {
        return Ok(Some(expires.duration_since(now).unsigned_abs()));
    }
    let info = access::info(objects, "batch", "v1", "jobs")?;
    let opts = DeleteOptions {
        propagation: Some(Propagation::Foreground),
        precondition_uid: Some(meta::uid(&job).to_string()),
        requester: Some(controller()),
        ..DeleteOptions::default()
    };
    match objects.delete(&info, Some(ns), name, &opts).await {
        Ok(_) => Ok(None),
        // Gone, or another incarnation by now (its own events queue it).
        Err(e) if e.code == 404 || e.code == 409 => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn job(ttl: Option<i64>, conditions: Value) -> Value {
        let mut job =
            json!({"metadata": {"name": "j"}, "spec": {}, "status": {"conditions": conditions}});
        if let Some(ttl) = ttl {
            job["spec"]["ttlSecondsAfterFinished"] = json!(ttl);
        }
        job
    }

    #[test]
    fn ttl_counts_from_the_terminal_condition() {
        let done = json!([
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": "2026-11-28T10:00:00Z"},
            {"type": "Complete", "status": "True", "lastTransitionTime": "2026-11-28T10:00:01Z"}]);
        assert_eq!(
            expiry(&job(Some(60), done.clone())),
            Some("2026-11-28T10:01:01Z".parse().expect("time"))
        );
        let failed = json!([{"type": "Failed", "status": "True", "lastTransitionTime": "2026-11-28T10:00:00Z"}]);
        assert_eq!(
            expiry(&job(Some(0), failed)),
            Some("2026-11-28T10:00:00Z".parse().expect("time"))
        );
        assert_eq!(expiry(&job(None, done.clone())), None, "no TTL");
        let running = json!([{"type": "Suspended", "status": "True", "lastTransitionTime": "2026-11-28T10:00:00Z"}]);
        assert_eq!(expiry(&job(Some(0), running)), None, "not finished");
        let mut deleting = job(Some(0), done);
        deleting["metadata"]["deletionTimestamp"] = json!("2026-11-28T10:00:02Z");
        assert_eq!(expiry(&deleting), None, "already being deleted");
    }
}
