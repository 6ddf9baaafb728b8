//! The rules of a Job's `/status` writes: upstream's `ValidateJobUpdateStatus` with the options
//! its status strategy sets in v1.36 (`JobManagedBy` on): most rules run only when the status
//! fields they read changed, so a status that was already off can still be written. The
//! interim-condition rules (`Failed` only after `FailureTarget`, `Complete` only after
//! `SuccessCriteriaMet`) are not among the options that strategy sets.

use std::collections::BTreeSet;

use serde_json::Value;

use super::indexes;
use super::policies::{invalid_omitted, set};
use crate::error::Cause;
use crate::validation::names::{NEGATIVE, go_quote, index, invalid_rendered, invalid_value};

/// The Job as the status rules read it.
struct JobView<'a> {
    /// `spec`.
    spec: &'a Value,
    /// `status`.
    status: &'a Value,
}

impl<'a> JobView<'a> {
    /// The view of a whole Job object.
    fn of(job: &'a Value) -> Self {
        static NULL: Value = Value::Null;
        Self {
            spec: job.get("spec").unwrap_or(&NULL),
            status: job.get("status").unwrap_or(&NULL),
        }
    }

    /// Whether the condition `kind` is `True`.
    fn condition(&self, kind: &str) -> bool {
        self.status
            .get("conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| c.iter().any(|c| c["type"] == kind && c["status"] == "True"))
    }

    /// `Complete=True`.
    fn complete(&self) -> bool {
        self.condition("Complete")
    }

    /// `Failed=True`.
    fn failed(&self) -> bool {
        self.condition("Failed")
    }

    /// Complete or failed.
    fn finished(&self) -> bool {
        self.complete() || self.failed()
    }

    /// A status counter (0 when unset).
    fn count(&self, field: &str) -> i64 {
        self.status.get(field).and_then(Value::as_i64).unwrap_or(0)
    }

    /// A status field unless absent or null.
    fn field(&self, field: &str) -> Option<&'a Value> {
        set(self.status, field)
    }

    /// A spec field unless absent or null.
    fn spec_field(&self, field: &str) -> Option<&'a Value> {
        set(self.spec, field)
    }

    /// `status.completedIndexes` (empty when unset).
    fn completed_indexes(&self) -> &'a str {
        self.field("completedIndexes")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// Whether the Job is Indexed.
    fn indexed(&self) -> bool {
        self.spec.get("completionMode").and_then(Value::as_str) == Some("Indexed")
    }
}

/// Go's `String()` of a `metav1.Time` read from JSON (UTC): `2026-01-02 03:04:05 +0000 UTC`.
fn render_time(value: &Value) -> String {
    match value
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    {
        Some(t) => t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
        None => crate::validation::names::go_render(value),
    }
}

/// Go's `%#v` of an internal `batch.UncountedTerminatedPods`.
fn render_uncounted(value: &Value) -> String {
    let uids = |field: &str| match set(value, field).and_then(Value::as_array) {
        None => "[]types.UID(nil)".to_string(),
        Some(list) => {
            let items: Vec<String> = list
                .iter()
                .map(|u| go_quote(u.as_str().unwrap_or("")))
                .collect();
            format!("[]types.UID{{{}}}", items.join(", "))
        }
    };
    format!(
        "batch.UncountedTerminatedPods{{Succeeded:{}, Failed:{}}}",
        uids("succeeded"),
        uids("failed")
    )
}

/// Which status fields changed, deciding which of upstream's rules run.
struct Changed {
    /// Complete or Failed flipped.
    finished: bool,
    /// Complete flipped.
    complete: bool,
    /// Failed flipped.
    failed: bool,
    /// FailureTarget flipped.
    failure_target: bool,
    /// `completedIndexes`.
    completed_indexes: bool,
    /// `failedIndexes`.
    failed_indexes: bool,
    /// `active`.
    active: bool,
    /// `ready`.
    ready: bool,
    /// `terminating`.
    terminating: bool,
    /// `startTime`.
    start_time: bool,
    /// `completionTime`.
    completion_time: bool,
    /// `uncountedTerminatedPods`.
    uncounted: bool,
}

impl Changed {
    /// What differs between the stored and the new Job.
    fn between(new: &JobView<'_>, old: &JobView<'_>) -> Self {
        let differs = |f: &str| new.field(f) != old.field(f);
        let uncounted = |j: &JobView<'_>| {
            j.field("uncountedTerminatedPods").map(|u| {
                let list = |f: &str| {
                    set(u, f)
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default()
                };
                (list("succeeded"), list("failed"))
            })
        };
        Self {
            finished: new.finished() != old.finished(),
            complete: new.complete() != old.complete(),
            failed: new.failed() != old.failed(),
            failure_target: new.condition("FailureTarget") != old.condition("FailureTarget"),
            completed_indexes: new.completed_indexes() != old.completed_indexes(),
            failed_indexes: differs("failedIndexes"),
            active: new.count("active") != old.count("active"),
            ready: differs("ready"),
            terminating: differs("terminating"),
            start_time: differs("startTime"),
            completion_time: differs("completionTime"),
            uncounted: uncounted(new) != uncounted(old),
        }
    }
}

/// Upstream's `ValidateJobStatusUpdate` for a `/status` write of `obj` over the stored `old`.
pub(super) fn job_status_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let (new, old) = (JobView::of(obj), JobView::of(old));
    let changed = Changed::between(&new, &old);
    let mut errs = job_status(&new, &changed);
    for kind in ["Failed", "Complete", "FailureTarget"] {
        if old.condition(kind) && !new.condition(kind) {
            errs.push(invalid_omitted(
                "status.conditions",
                &format!("cannot disable the terminal {kind}=True condition"),
            ));
        }
    }
    let failed = new.count("failed");
    if failed < old.count("failed") {
        errs.push(invalid_value(
            "status.failed",
            &Value::from(failed),
            "cannot decrease the failed counter",
        ));
    }
    let elastic = new.indexed()
        && new.spec_field("completions").is_some()
        && new.spec_field("completions") == new.spec_field("parallelism");
    let succeeded = new.count("succeeded");
    if !elastic && succeeded < old.count("succeeded") {
        errs.push(invalid_value(
            "status.succeeded",
            &Value::from(succeeded),
            "cannot decrease the succeeded counter",
        ));
    }
    if let (Some(now), Some(before)) = (new.field("completionTime"), old.field("completionTime"))
        && now != before
    {
        errs.push(invalid_rendered(
            "status.completionTime",
            &render_time(now),
            "completionTime cannot be mutated",
        ));
    }
    let suspended = new.spec.get("suspend") == Some(&Value::Bool(true));
    if changed.start_time && old.field("startTime").is_some() && !suspended {
        errs.push(Cause::required(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        ));
    }
    let criteria = |j: &JobView<'_>| j.condition("SuccessCriteriaMet");
    if criteria(&old) && !criteria(&new) {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot disable the SuccessCriteriaMet=True condition",
        ));
    }
    if old.complete() && !criteria(&old) && criteria(&new) {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ));
    }
    errs
}

/// Upstream's `validateJobStatus` with the options of v1.36's status strategy.
fn job_status(job: &JobView<'_>, changed: &Changed) -> Vec<Cause> {
    let mut errs = Vec::new();
    for field in ["active", "succeeded", "failed", "ready", "terminating"] {
        if let Some(value) = job
            .field(field)
            .filter(|v| v.as_i64().is_some_and(|n| n < 0))
        {
            errs.push(invalid_value(&format!("status.{field}"), value, NEGATIVE));
        }
    }
    let uncounted = job.field("uncountedTerminatedPods");
    if let Some(uncounted) = uncounted {
        let mut seen = BTreeSet::new();
        for field in ["succeeded", "failed"] {
            let path = format!("status.uncountedTerminatedPods.{field}");
            let uids = set(uncounted, field)
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice);
            for (i, uid) in uids.iter().enumerate() {
                let text = uid.as_str().unwrap_or("");
                if text.is_empty() {
                    errs.push(invalid_value(&index(&path, i), uid, "must not be empty"));
                } else if !seen.insert(text) {
                    errs.push(Cause::duplicate(index(&path, i), uid));
                }
            }
        }
    }
    let (complete, failed) = (job.complete(), job.failed());
    let failure_target = job.condition("FailureTarget");
    let criteria_met = job.condition("SuccessCriteriaMet");
    if (changed.complete || changed.failed) && complete && failed {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set Complete=True and Failed=true conditions",
        ));
    }
    if (changed.complete || changed.failure_target) && complete && failure_target {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    let completion_time = job.field("completionTime");
    let start_time = job.field("startTime");
    if changed.complete || changed.completion_time {
        if let Some(time) = completion_time.filter(|_| !complete) {
            errs.push(invalid_rendered(
                "status.completionTime",
                &render_time(time),
                "cannot set completionTime when there is no Complete=True condition",
            ));
        }
        if completion_time.is_none() && complete {
            errs.push(Cause::required(
                "status.completionTime",
                "completionTime is required for Complete jobs",
            ));
        }
    }
    if (changed.start_time || changed.completion_time)
        && let (Some(start), Some(end)) = (start_time, completion_time)
    {
        let parse = |v: &Value| v.as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok());
        if let (Some(s), Some(e)) = (parse(start), parse(end))
            && e < s
        {
            errs.push(invalid_rendered(
                "status.completionTime",
                &render_time(end),
                "completionTime cannot be set before startTime",
            ));
        }
    }
    let finished = job.finished();
    let active = job.count("active");
    if (changed.finished || changed.active) && active > 0 && finished {
        errs.push(invalid_value(
            "status.active",
            &Value::from(active),
            "active>0 is invalid for finished job",
        ));
    }
    if (changed.finished || changed.start_time) && start_time.is_none() && finished {
        errs.push(Cause::required(
            "status.startTime",
            "startTime is required for finished job",
        ));
    }
    if (changed.finished || changed.uncounted)
        && finished
        && let Some(u) = uncounted
    {
        let pending = ["succeeded", "failed"].iter().any(|f| {
            set(u, f)
                .and_then(Value::as_array)
                .is_some_and(|l| !l.is_empty())
        });
        if pending {
            errs.push(invalid_rendered(
                "status.uncountedTerminatedPods",
                &render_uncounted(u),
                "uncountedTerminatedPods needs to be empty for finished job",
            ));
        }
    }
    errs.extend(indexes_rules(job, changed));
    if let Some(terminating) = job.field("terminating")
        && (changed.finished || changed.terminating)
        && terminating.as_i64().is_some_and(|n| n > 0)
        && finished
    {
        errs.push(invalid_value(
            "status.terminating",
            terminating,
            "terminating>0 is invalid for finished job",
        ));
    }
    if let Some(ready) = job.field("ready")
        && (changed.ready || changed.active)
        && ready.as_i64().is_some_and(|n| n > active)
    {
        errs.push(invalid_value(
            "status.ready",
            ready,
            "cannot set more ready pods than active",
        ));
    }
    if criteria_met && failed {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ));
    }
    if criteria_met && failure_target {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ));
    }
    if job.spec_field("successPolicy").is_some() && !criteria_met && complete {
        errs.push(invalid_omitted(
            "status.conditions",
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ));
    }
    errs
}

/// The `completedIndexes` / `failedIndexes` rules: well-formed, within `completions`, only
/// for Indexed Jobs (with a per-index backoff limit for failed ones), not overlapping.
fn indexes_rules(job: &JobView<'_>, changed: &Changed) -> Vec<Cause> {
    let mut errs = Vec::new();
    let completions = job.spec_field("completions").and_then(Value::as_i64);
    let completed = job.completed_indexes();
    let failed_value = job.field("failedIndexes");
    let failed = failed_value.and_then(Value::as_str);
    if changed.completed_indexes
        && let Some(c) = completions
        && let Err(e) = indexes::validate_format(completed, c)
    {
        errs.push(invalid_value(
            "status.completedIndexes",
            &Value::from(completed),
            &format!("error parsing completedIndexes: {e}"),
        ));
    }
    let per_index = job.spec_field("backoffLimitPerIndex").is_some();
    if changed.failed_indexes
        && per_index
        && let (Some(c), Some(text), Some(value)) = (completions, failed, failed_value)
        && let Err(e) = indexes::validate_format(text, c)
    {
        errs.push(invalid_value(
            "status.failedIndexes",
            value,
            &format!("error parsing failedIndexes: {e}"),
        ));
    }
    if changed.completed_indexes && !completed.is_empty() && !job.indexed() {
        errs.push(invalid_value(
            "status.completedIndexes",
            &Value::from(completed),
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        ));
    }
    if changed.failed_indexes
        && !per_index
        && let Some(value) = failed_value
    {
        errs.push(invalid_value(
            "status.failedIndexes",
            value,
            "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
        ));
    }
    if (changed.failed_indexes || changed.completed_indexes)
        && let (Some(c), Some(text), Some(value)) = (completions, failed, failed_value)
        && let Some(message) = indexes::overlap(completed, text, c)
    {
        errs.push(invalid_value("status.failedIndexes", value, &message));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A NonIndexed Job with `status`.
    fn job(status: Value) -> Value {
        json!({"spec": {"completions": 1, "parallelism": 1}, "status": status})
    }

    fn check(new: Value, old: Value) -> Vec<String> {
        job_status_update(&new, &old)
            .iter()
            .map(Cause::summary)
            .collect()
    }

    const START: &str = "2026-11-28T10:00:00Z";
    const END: &str = "2026-11-28T10:05:00Z";

    fn complete() -> Value {
        json!({"startTime": START, "completionTime": END, "succeeded": 1, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"},
            {"type": "Complete", "status": "True"}]})
    }

    #[test]
    fn valid_transitions_pass() {
        assert_eq!(
            check(
                job(json!({"startTime": START, "active": 1, "ready": 1})),
                job(json!({}))
            ),
            Vec::<String>::new()
        );
        assert_eq!(
            check(
                job(complete()),
                job(json!({"startTime": START, "active": 1}))
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn status_rules_give_upstreams_messages() {
        let running = job(json!({"startTime": START, "active": 1, "succeeded": 2, "failed": 1}));
        for (status, want) in [
            (
                json!({"startTime": START, "active": -1, "succeeded": 2, "failed": 1}),
                "status.active: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                json!({"startTime": START, "active": 1, "ready": 2, "succeeded": 2, "failed": 1}),
                "status.ready: Invalid value: 2: cannot set more ready pods than active",
            ),
            (
                json!({"startTime": START, "active": 1, "succeeded": 2, "failed": 0}),
                "status.failed: Invalid value: 0: cannot decrease the failed counter",
            ),
            (
                json!({"startTime": START, "active": 1, "succeeded": 1, "failed": 1}),
                "status.succeeded: Invalid value: 1: cannot decrease the succeeded counter",
            ),
            (
                json!({"active": 1, "succeeded": 2, "failed": 1}),
                "status.startTime: Required value: startTime cannot be removed for unsuspended job",
            ),
            (
                json!({"startTime": START, "completionTime": END, "active": 1, "succeeded": 2, "failed": 1}),
                "status.completionTime: Invalid value: 2026-11-28 10:05:00 +0000 UTC: cannot set completionTime when there is no Complete=True condition",
            ),
            (
                json!({"startTime": START, "active": 1, "succeeded": 2, "failed": 1,
                       "uncountedTerminatedPods": {"succeeded": ["a", ""], "failed": ["a"]}}),
                "status.uncountedTerminatedPods.succeeded[1]: Invalid value: \"\": must not be empty",
            ),
            (
                json!({"startTime": START, "active": 1, "succeeded": 2, "failed": 1, "completedIndexes": "0"}),
                "status.completedIndexes: Invalid value: \"0\": cannot set non-empty completedIndexes when non-indexed completion mode",
            ),
            (
                json!({"startTime": START, "active": 1, "succeeded": 2, "failed": 1, "failedIndexes": "0"}),
                "status.failedIndexes: Invalid value: \"0\": cannot set non-null failedIndexes when backoffLimitPerIndex is null",
            ),
        ] {
            let got = check(job(status.clone()), running.clone());
            assert!(got.contains(&want.to_string()), "{status}: {got:?}");
        }
    }

    #[test]
    fn uncounted_uids_are_unique() {
        let got = check(
            job(
                json!({"startTime": START, "uncountedTerminatedPods": {"succeeded": ["a"], "failed": ["a"]}}),
            ),
            job(json!({"startTime": START})),
        );
        assert_eq!(
            got,
            ["status.uncountedTerminatedPods.failed[0]: Duplicate value: \"a\""]
        );
    }

    #[test]
    fn finished_jobs_follow_the_condition_rules() {
        let mut active = complete();
        active["active"] = json!(1);
        active["terminating"] = json!(2);
        let got = check(job(active), job(json!({"startTime": START, "active": 1})));
        assert_eq!(
            got,
            [
                "status.active: Invalid value: 1: active>0 is invalid for finished job",
                "status.terminating: Invalid value: 2: terminating>0 is invalid for finished job",
            ]
        );

        let bare = json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]});
        assert_eq!(
            check(job(bare), job(json!({}))),
            [
                "status.completionTime: Required value: completionTime is required for Complete jobs",
                "status.startTime: Required value: startTime is required for finished job",
            ]
        );

        // v1.36's status strategy leaves the interim-condition rules off.
        let failed = json!({"startTime": START, "failed": 1, "conditions": [{"type": "Failed", "status": "True"}]});
        assert!(check(job(failed), job(json!({"startTime": START}))).is_empty());
        let both = json!({"startTime": START, "completionTime": END, "conditions": [
            {"type": "Complete", "status": "True"}, {"type": "Failed", "status": "True"}]});
        assert_eq!(
            check(job(both), job(json!({"startTime": START}))),
            [
                "status.conditions: Invalid value: cannot set Complete=True and Failed=true conditions"
            ]
        );

        let mut reopened = complete();
        reopened["conditions"] = json!([{"type": "SuccessCriteriaMet", "status": "True"}]);
        reopened
            .as_object_mut()
            .expect("status")
            .remove("completionTime");
        assert_eq!(
            check(job(reopened), job(complete())),
            [
                "status.conditions: Invalid value: cannot disable the terminal Complete=True condition"
            ]
        );

        let mut moved = complete();
        moved["completionTime"] = json!("2026-11-28T09:00:00Z");
        assert_eq!(
            check(job(moved), job(complete())),
            [
                "status.completionTime: Invalid value: 2026-11-28 09:00:00 +0000 UTC: completionTime cannot be set before startTime",
                "status.completionTime: Invalid value: 2026-11-28 09:00:00 +0000 UTC: completionTime cannot be mutated",
            ]
        );
    }

    #[test]
    fn indexes_are_checked_when_they_change() {
        let indexed = |status: Value| {
            json!({"spec": {"completionMode": "Indexed", "completions": 3, "parallelism": 3,
                            "backoffLimitPerIndex": 1},
                   "status": status})
        };
        let old = indexed(json!({"startTime": START}));
        assert_eq!(
            check(
                indexed(json!({"startTime": START, "completedIndexes": "0-3"})),
                old.clone()
            ),
            [
                "status.completedIndexes: Invalid value: \"0-3\": error parsing completedIndexes: too large index: \"3\""
            ]
        );
        assert_eq!(
            check(
                indexed(
                    json!({"startTime": START, "completedIndexes": "0-1", "failedIndexes": "1"})
                ),
                old.clone()
            ),
            [
                "status.failedIndexes: Invalid value: \"1\": failedIndexes and completedIndexes overlap at index: 1"
            ]
        );
        // Unchanged (already wrong) indexes do not block other status writes.
        let wrong = indexed(json!({"startTime": START, "completedIndexes": "7"}));
        let mut next = wrong.clone();
        next["status"]["active"] = json!(1);
        assert!(check(next, wrong).is_empty());
        // Elastic Indexed Jobs (completions == parallelism) may lower succeeded.
        assert!(
            check(
                indexed(json!({"startTime": START, "succeeded": 1})),
                indexed(json!({"startTime": START, "succeeded": 2}))
            )
            .is_empty()
        );
    }
}
