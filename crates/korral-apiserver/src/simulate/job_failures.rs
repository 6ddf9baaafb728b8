//! The Job controller's failure decisions, as pure functions of the Job and its Pods
//! (upstream's `pod_failure_policy.go`, `backoff_utils.go`, `indexed_job_utils.go` and the
//! failure parts of `job_controller.go`): which failed Pods count, what a pod failure policy
//! says about a Pod, how long replacements of failed Pods wait (the Job's [`BackoffRecord`]),
//! which indexes failed.

use std::collections::BTreeSet;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::access::timestamp;
use crate::meta;

/// First delay before a failed Pod is replaced (upstream's `DefaultJobPodFailureBackOff`).
pub const POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10);
/// Longest delay before a failed Pod is replaced (upstream's `MaxJobPodFailureBackOff`).
pub const MAX_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(600);
/// The annotation counting the earlier failures of a Pod's index.
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// The annotation counting the earlier failures of a Pod's index that the pod failure policy
/// ignored.
pub const INDEX_IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";

/// `BackoffLimitExceeded`: more failures than `spec.backoffLimit`.
pub const BACKOFF_LIMIT_EXCEEDED: (&str, &str) = (
    "BackoffLimitExceeded",
    "Job has reached the specified backoff limit",
);
/// `DeadlineExceeded`: active longer than `spec.activeDeadlineSeconds`.
pub const DEADLINE_EXCEEDED: (&str, &str) = (
    "DeadlineExceeded",
    "Job was active longer than specified deadline",
);
/// `MaxFailedIndexesExceeded`: more failed indexes than `spec.maxFailedIndexes`.
pub const MAX_FAILED_INDEXES_EXCEEDED: (&str, &str) = (
    "MaxFailedIndexesExceeded",
    "Job has exceeded the specified maximal number of failed indexes",
);
/// `FailedIndexes`: every index finished and some failed.
pub const FAILED_INDEXES: (&str, &str) = ("FailedIndexes", "Job has failed indexes");
/// The reason of a Job failed by a `FailJob` rule of its pod failure policy.
pub const POD_FAILURE_POLICY: &str = "PodFailurePolicy";

/// A pod failure policy action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Fail the whole Job.
    FailJob,
    /// Fail the Pod's index (with `backoffLimitPerIndex`).
    FailIndex,
    /// Do not count the failure.
    Ignore,
    /// Count the failure (the default).
    Count,
}

/// What a Job's pod failure policy says about one failed Pod (upstream's
/// `matchPodFailurePolicy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyMatch {
    /// The Job's failure message, when a `FailJob` rule matched.
    pub fail_job: Option<String>,
    /// Whether the failure counts towards `backoffLimit` (and `backoffLimitPerIndex`).
    pub counts: bool,
    /// The action of the matching rule.
    pub action: Option<Action>,
}

impl PolicyMatch {
    const NONE: Self = Self {
        fail_job: None,
        counts: true,
        action: None,
    };
}

/// Matches a failed Pod against the rules of `policy` (`spec.podFailurePolicy`), first match
/// wins; no policy or no match counts the failure.
pub fn match_policy(policy: Option<&Value>, pod: &Value) -> PolicyMatch {
    let Some(rules) = policy
        .and_then(|p| p.get("rules"))
        .and_then(Value::as_array)
    else {
        return PolicyMatch::NONE;
    };
    for (index, rule) in rules.iter().enumerate() {
        let action = match rule.get("action").and_then(Value::as_str) {
            Some("FailJob") => Action::FailJob,
            Some("FailIndex") => Action::FailIndex,
            Some("Ignore") => Action::Ignore,
            Some("Count") => Action::Count,
            _ => continue,
        };
        let message = if let Some(req) = rule.get("onExitCodes").filter(|r| !r.is_null()) {
            match matching_container(pod, req) {
                Some((container, code)) => format!(
                    "Container {container} for pod {}/{} failed with exit code {code} matching FailJob rule at index {index}",
                    meta::namespace(pod).unwrap_or(""),
                    meta::name(pod)
                ),
                None => continue,
            }
        } else if let Some(patterns) = rule.get("onPodConditions").and_then(Value::as_array) {
            match matching_condition(pod, patterns) {
                Some(kind) => format!(
                    "Pod {}/{} has condition {kind} matching FailJob rule at index {index}",
                    meta::namespace(pod).unwrap_or(""),
                    meta::name(pod)
                ),
                None => continue,
            }
        } else {
            continue;
        };
        return PolicyMatch {
            fail_job: (action == Action::FailJob).then_some(message),
            counts: action != Action::Ignore,
            action: Some(action),
        };
    }
    PolicyMatch::NONE
}

/// The first terminated container (then init container) with a non-zero exit code matching
/// an `onExitCodes` requirement: its name and exit code.
fn matching_container(pod: &Value, req: &Value) -> Option<(String, i64)> {
    let only = req.get("containerName").and_then(Value::as_str);
    let values: Vec<i64> = req
        .get("values")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let operator = req.get("operator").and_then(Value::as_str).unwrap_or("");
    let matches = |code: i64| match operator {
        "In" => values.contains(&code),
        "NotIn" => !values.contains(&code),
        _ => false,
    };
    ["status.containerStatuses", "status.initContainerStatuses"]
        .iter()
        .filter_map(|path| meta::path(pod, path).and_then(Value::as_array))
        .flatten()
        .find_map(|status| {
            let name = status.get("name").and_then(Value::as_str).unwrap_or("");
            let code = status.pointer("/state/terminated/exitCode")?.as_i64()?;
            (only.is_none_or(|c| c == name) && code != 0 && matches(code))
                .then(|| (name.to_string(), code))
        })
}

/// The type of the first Pod condition matching one of `patterns` (type and status).
fn matching_condition(pod: &Value, patterns: &[Value]) -> Option<String> {
    let conditions = meta::path(pod, "status.conditions").and_then(Value::as_array)?;
    conditions.iter().find_map(|c| {
        let kind = c.get("type").and_then(Value::as_str)?;
        let status = c.get("status").and_then(Value::as_str)?;
        patterns
            .iter()
            .any(|p| {
                p.get("type").and_then(Value::as_str) == Some(kind)
                    && p.get("status").and_then(Value::as_str).unwrap_or("True") == status
            })
            .then(|| kind.to_string())
    })
}

fn phase(pod: &Value) -> &str {
    meta::path(pod, "status.phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether a Pod counts as failed (upstream's `isPodFailed`): `Failed`, or being deleted
/// without having succeeded unless only failed Pods are replaced.
pub fn pod_failed(pod: &Value, only_replace_failed: bool) -> bool {
    phase(pod) == "Failed"
        || (!only_replace_failed && meta::is_deleting(pod) && phase(pod) != "Succeeded")
}

/// Whether a Pod is terminating: being deleted and not finished.
pub fn pod_terminating(pod: &Value) -> bool {
    meta::is_deleting(pod) && !matches!(phase(pod), "Succeeded" | "Failed")
}

/// When a Pod finished (upstream's `getFinishedTime`): the latest finish of its containers
/// when all terminated, else when `Ready` turned `False`, else its deletion less the grace
/// period, else its creation.
pub fn finish_time(pod: &Value) -> Option<Timestamp> {
    let statuses = meta::path(pod, "status.containerStatuses")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let containers: Option<Vec<Timestamp>> = statuses
        .iter()
        .map(|s| timestamp(s.pointer("/state/terminated/finishedAt")))
        .collect();
    if let Some(latest) = containers.and_then(|c| c.into_iter().max()) {
        return Some(latest);
    }
    let ready = meta::path(pod, "status.conditions")
        .and_then(Value::as_array)
        .and_then(|c| {
            c.iter()
                .find(|c| c["type"] == "Ready" && c["status"] == "False")
        });
    if let Some(at) = ready.and_then(|c| timestamp(c.get("lastTransitionTime"))) {
        return Some(at);
    }
    if let Some(deleted) = timestamp(meta::path(pod, "metadata.deletionTimestamp")) {
        let grace = meta::path(pod, "metadata.deletionGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        return deleted.checked_sub(SignedDuration::from_secs(grace)).ok();
    }
    timestamp(meta::path(pod, "metadata.creationTimestamp"))
}

/// The back-off after `failures` consecutive failures: `base`, doubled per further failure,
/// at most `max`; none without failures.
pub fn backoff(failures: usize, base: Duration, max: Duration) -> Duration {
    if failures == 0 {
        return Duration::ZERO;
    }
    let mut delay = base;
    for _ in 1..failures {
        delay = delay.saturating_mul(2);
        if delay >= max {
            return max;
        }
    }
    delay
}

/// How long, at `now`, replacements still wait after `failures` consecutive failures, the
/// last at `last` (upstream's `getRemainingTimeForFailuresCount`).
pub fn remaining(failures: usize, last: Option<Timestamp>, now: Timestamp) -> Duration {
    let Some(last) = last.filter(|_| failures > 0) else {
        return Duration::ZERO;
    };
    let delay = backoff(failures, POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF);
    let elapsed = now.duration_since(last);
    if elapsed.is_negative() {
        return delay;
    }
    delay.saturating_sub(elapsed.unsigned_abs())
}

/// What a Job's controller remembers of its Pods' failures, across syncs and across the
/// Pods' deletion (upstream's `backoffRecord`): how many failed since the last success, and
/// when the last of them finished.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    /// Failures since the last success (`failuresAfterLastSuccess`).
    pub failures: usize,
    /// When the last of them finished (`lastFailureTime`).
    pub last_failure: Option<Timestamp>,
}

impl BackoffRecord {
    /// The record once the newly finished Pods of a sync are known (upstream's
    /// `newBackoffRecord`): new failures add to it, unless a Pod succeeded, which leaves only
    /// the failures that finished after the last success.
    pub fn updated(self, new_succeeded: &[&Value], new_failed: &[&Value]) -> Self {
        let finished = |p: &Value| finish_time(p).unwrap_or(Timestamp::UNIX_EPOCH);
        let mut failed: Vec<Timestamp> = new_failed.iter().map(|p| finished(p)).collect();
        failed.sort();
        let Some(last_success) = new_succeeded.iter().map(|p| finished(p)).max() else {
            return match failed.last() {
                Some(last) => Self {
                    failures: self.failures + failed.len(),
                    last_failure: Some(*last),
                },
                None => self,
            };
        };
        let after: Vec<Timestamp> = failed.into_iter().filter(|t| *t > last_success).collect();
        Self {
            failures: after.len(),
            last_failure: after.last().copied(),
        }
    }

    /// How long, at `now`, replacements of failed Pods still wait (upstream's
    /// `getRemainingTime`).
    pub fn remaining(&self, now: Timestamp) -> Duration {
        remaining(self.failures, self.last_failure, now)
    }
}

/// An index-failure-count annotation of a Pod (0 when missing or invalid).
pub fn failure_count(pod: &Value, annotation: &str) -> i64 {
    meta::path(pod, "metadata.annotations")
        .and_then(|a| a.get(annotation))
        .and_then(Value::as_str)
        .and_then(|v| v.parse::<i64>().ok())
        .filter(|n| (0..=i64::from(i32::MAX)).contains(n))
        .unwrap_or(0)
}

/// Both index-failure counts of a Pod (upstream's `getIndexAbsoluteFailureCount`).
pub fn absolute_failure_count(pod: &Value) -> i64 {
    failure_count(pod, INDEX_FAILURE_COUNT) + failure_count(pod, INDEX_IGNORED_FAILURE_COUNT)
}

/// The failure counts the replacement of `replaced` carries (upstream's
/// `getNewIndexFailureCounts`): `(failures, ignored failures)`.
pub fn replacement_counts(policy: Option<&Value>, replaced: Option<&Value>) -> (i64, i64) {
    let Some(pod) = replaced else {
        return (0, 0);
    };
    let (failures, ignored) = (
        failure_count(pod, INDEX_FAILURE_COUNT),
        failure_count(pod, INDEX_IGNORED_FAILURE_COUNT),
    );
    if match_policy(policy, pod).counts {
        (failures + 1, ignored)
    } else {
        (failures, ignored + 1)
    }
}

/// How long, at `now`, an index waits before its replacement, its last failed Pod being
/// `last` (upstream's `getRemainingTimePerIndex`).
pub fn index_backoff(last: Option<&Value>, now: Timestamp) -> Duration {
    let Some(pod) = last else {
        return Duration::ZERO;
    };
    let failures = usize::try_from(absolute_failure_count(pod) + 1).unwrap_or(1);
    remaining(failures, finish_time(pod), now)
}

/// Whether a failed Pod fails its index (upstream's `isIndexFailed`): a `FailIndex` rule
/// matched, or it counts and its index already failed `limit` times.
pub fn index_failed(
    policy: Option<&Value>,
    pod: &Value,
    limit: i64,
    only_replace_failed: bool,
) -> bool {
    if !pod_failed(pod, only_replace_failed) {
        return false;
    }
    let matched = match_policy(policy, pod);
    if matched.action == Some(Action::FailIndex) {
        return true;
    }
    matched.counts && failure_count(pod, INDEX_FAILURE_COUNT) >= limit
}

/// Whether the restarts of the containers of running or pending Pods reach `backoffLimit`
/// for a Job whose Pods restart `OnFailure` (upstream's `pastBackoffLimitOnFailure`).
pub fn past_backoff_limit_on_failure(job: &Value, pods: &[&Value]) -> bool {
    let policy = meta::path(job, "spec.template.spec.restartPolicy").and_then(Value::as_str);
    if policy != Some("OnFailure") {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(phase(p), "Running" | "Pending"))
        .flat_map(|p| {
            ["status.initContainerStatuses", "status.containerStatuses"]
                .into_iter()
                .filter_map(|path| meta::path(p, path).and_then(Value::as_array))
                .flatten()
        })
        .filter_map(|s| s.get("restartCount").and_then(Value::as_i64))
        .sum();
    let limit = meta::path(job, "spec.backoffLimit")
        .and_then(Value::as_i64)
        .unwrap_or(6);
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}

/// Parses `status.completedIndexes` / `status.failedIndexes` (`1,3-5`), keeping indexes
/// below `completions` and skipping malformed intervals (upstream's `parseIndexesFromString`).
pub fn parse_indexes(text: &str, completions: usize) -> BTreeSet<usize> {
    let mut indexes = BTreeSet::new();
    if text.is_empty() {
        return indexes;
    }
    for interval in text.split(',') {
        let (first, last) = match interval.split_once('-') {
            Some((a, b)) => (a.parse::<usize>(), b.parse::<usize>()),
            None => (interval.parse::<usize>(), interval.parse::<usize>()),
        };
        let (Ok(first), Ok(last)) = (first, last) else {
            continue;
        };
        if first >= completions {
            break;
        }
        indexes.extend(first..=last.min(completions.saturating_sub(1)));
    }
    indexes
}

/// Renders indexes as upstream's `orderedIntervals.String`: `0-2,4,6,7` (two adjacent
/// indexes are listed, longer runs are ranges).
pub fn render_indexes(indexes: &BTreeSet<usize>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(match end - start {
            0 => start.to_string(),
            1 => format!("{start},{end}"),
            _ => format!("{start}-{end}"),
        });
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn failed_pod(code: i64, container: &str, conditions: Value) -> Value {
        json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "status": {"phase": "Failed", "conditions": conditions, "containerStatuses": [
                {"name": container, "state": {"terminated": {"exitCode": code, "finishedAt": "2026-01-01T00:00:10Z"}}}]},
        })
    }

    #[test]
    fn pod_failure_policy_rules_match_like_upstream() {
        let disrupted = json!([{"type": "DisruptionTarget", "status": "True"}]);
        let rules = json!({"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [2]}},
        ]});
        let table: [(&str, Value, PolicyMatch); 6] = [
            (
                "condition rule first",
                failed_pod(42, "main", disrupted.clone()),
                PolicyMatch { fail_job: None, counts: false, action: Some(Action::Ignore) },
            ),
            (
                "exit code in, named container",
                failed_pod(42, "main", json!([])),
                PolicyMatch {
                    fail_job: Some("Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1".into()),
                    counts: true,
                    action: Some(Action::FailJob),
                },
            ),
            (
                "other container: NotIn counts",
                failed_pod(42, "side", json!([])),
                PolicyMatch { fail_job: None, counts: true, action: Some(Action::Count) },
            ),
            (
                "exit code in the last rule",
                failed_pod(2, "side", json!([])),
                PolicyMatch {
                    fail_job: Some("Container side for pod ns/p failed with exit code 2 matching FailJob rule at index 3".into()),
                    counts: true,
                    action: Some(Action::FailJob),
                },
            ),
            ("no rule matches", failed_pod(1, "main", json!([])), PolicyMatch::NONE),
            ("exit code 0 never matches", failed_pod(0, "main", json!([])), PolicyMatch::NONE),
        ];
        for (name, pod, want) in table {
            assert_eq!(match_policy(Some(&rules), &pod), want, "{name}");
        }
        assert_eq!(
            match_policy(None, &failed_pod(42, "main", json!([]))),
            PolicyMatch::NONE
        );
        let fail_on_condition = json!({"rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]});
        assert_eq!(
            match_policy(Some(&fail_on_condition), &failed_pod(1, "main", disrupted))
                .fail_job
                .as_deref(),
            Some("Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0")
        );
    }

    #[test]
    fn replacement_backoff_doubles_up_to_ten_minutes() {
        let table = [
            (0, 0),
            (1, 10),
            (2, 20),
            (3, 40),
            (6, 320),
            (7, 600),
            (40, 600),
        ];
        for (failures, secs) in table {
            assert_eq!(
                backoff(failures, POD_FAILURE_BACKOFF, MAX_POD_FAILURE_BACKOFF),
                Duration::from_secs(secs),
                "{failures} failures"
            );
        }
        let at = |s: &str| s.parse::<Timestamp>().ok();
        let now = at("2026-01-01T00:00:14Z").unwrap_or_default();
        assert_eq!(
            remaining(1, at("2026-01-01T00:00:10Z"), now),
            Duration::from_secs(6)
        );
        assert_eq!(
            remaining(1, at("2026-01-01T00:00:00Z"), now),
            Duration::ZERO
        );
        assert_eq!(
            remaining(0, at("2026-01-01T00:00:10Z"), now),
            Duration::ZERO
        );
    }

    #[test]
    fn backoff_records_count_failures_after_the_last_success() {
        let now: Timestamp = "2026-01-01T00:00:15Z".parse().unwrap_or_default();
        let finished = |phase: &str, at: &str| json!({"status": {"phase": phase, "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 1, "finishedAt": at}}}]}});
        let (f1, f2) = (
            finished("Failed", "2026-01-01T00:00:05Z"),
            finished("Failed", "2026-01-01T00:00:10Z"),
        );
        let none = BackoffRecord::default();
        // Two failures: 20s from the last one.
        let two = none.updated(&[], &[&f2, &f1]);
        assert_eq!(two.failures, 2);
        assert_eq!(two.remaining(now), Duration::from_secs(15));
        // Nothing new (the failed Pods are gone): the record stands.
        assert_eq!(two.updated(&[], &[]), two);
        // A later failure adds to the record: 40s from it.
        let f3 = finished("Failed", "2026-01-01T00:00:12Z");
        let three = two.updated(&[], &[&f3]);
        assert_eq!(three.failures, 3);
        assert_eq!(three.remaining(now), Duration::from_secs(37));
        // A success in between leaves the failures after it: 10s from the last.
        let ok = finished("Succeeded", "2026-01-01T00:00:07Z");
        let one = three.updated(&[&ok], &[&f1, &f2]);
        assert_eq!(one.failures, 1);
        assert_eq!(one.remaining(now), Duration::from_secs(5));
        // A success after every new failure clears it.
        let late_ok = finished("Succeeded", "2026-01-01T00:00:11Z");
        let cleared = three.updated(&[&late_ok], &[&f1, &f2]);
        assert_eq!(cleared, BackoffRecord::default());
        assert_eq!(cleared.remaining(now), Duration::ZERO);
    }

    #[test]
    fn finish_time_falls_back_like_upstream() {
        let pod = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:00:03Z"}],
                "containerStatuses": [{"name": "c", "state": {"running": {}}}]}});
        assert_eq!(finish_time(&pod), "2026-01-01T00:00:03Z".parse().ok());
        let created =
            json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}, "status": {}});
        assert_eq!(finish_time(&created), "2026-01-01T00:00:00Z".parse().ok());
        let deleted = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z",
            "deletionTimestamp": "2026-01-01T00:00:30Z", "deletionGracePeriodSeconds": 30}});
        assert_eq!(finish_time(&deleted), "2026-01-01T00:00:00Z".parse().ok());
    }

    #[test]
    fn restarts_count_against_the_backoff_limit_for_on_failure_pods() {
        let job = |limit: i64, policy: &str| json!({"spec": {"backoffLimit": limit, "template": {"spec": {"restartPolicy": policy}}}});
        let pod = |phase: &str, restarts: i64| json!({"status": {"phase": phase, "containerStatuses": [{"name": "c", "restartCount": restarts}]}});
        let (running, failed) = (pod("Running", 2), pod("Failed", 5));
        assert!(past_backoff_limit_on_failure(
            &job(2, "OnFailure"),
            &[&running]
        ));
        assert!(!past_backoff_limit_on_failure(
            &job(3, "OnFailure"),
            &[&running, &failed]
        ));
        assert!(!past_backoff_limit_on_failure(
            &job(2, "Never"),
            &[&running]
        ));
        assert!(past_backoff_limit_on_failure(
            &job(0, "OnFailure"),
            &[&pod("Pending", 1)]
        ));
        assert!(!past_backoff_limit_on_failure(
            &job(0, "OnFailure"),
            &[&pod("Running", 0)]
        ));
    }

    #[test]
    fn indexes_fail_after_their_own_limit_or_by_fail_index() {
        let pod = |count: &str| {
            let mut p = failed_pod(3, "main", json!([]));
            p["metadata"]["annotations"] = json!({INDEX_FAILURE_COUNT: count});
            p
        };
        assert!(!index_failed(None, &pod("0"), 1, false));
        assert!(index_failed(None, &pod("1"), 1, false));
        assert!(!index_failed(None, &pod("bogus"), 1, false));
        let fail_index = json!({"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]});
        assert!(index_failed(Some(&fail_index), &pod("0"), 5, true));
        let ignore = json!({"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}]});
        assert!(!index_failed(Some(&ignore), &pod("9"), 1, true));
        assert_eq!(replacement_counts(None, Some(&pod("1"))), (2, 0));
        assert_eq!(replacement_counts(Some(&ignore), Some(&pod("1"))), (1, 1));
        assert_eq!(replacement_counts(None, None), (0, 0));
    }

    #[test]
    fn indexes_render_and_parse_like_upstream() {
        let set: BTreeSet<usize> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(render_indexes(&set), "0-2,4,6,7");
        assert_eq!(parse_indexes("0-2,4,6,7", 10), set);
        assert_eq!(parse_indexes("1,x,3-9", 5), [1, 3, 4].into_iter().collect());
        assert!(parse_indexes("", 3).is_empty());
    }

    #[test]
    fn terminating_pods_count_as_failed_unless_only_failed_pods_are_replaced() {
        let pod = |phase: &str, deleting: bool| {
            let mut p = json!({"metadata": {"name": "p"}, "status": {"phase": phase}});
            if deleting {
                p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            p
        };
        // (pod, podReplacementPolicy Failed, failed, terminating)
        let table = [
            (pod("Failed", false), false, true, false),
            (pod("Failed", false), true, true, false),
            (pod("Running", true), false, true, true),
            (pod("Running", true), true, false, true),
            (pod("Succeeded", true), false, false, false),
            (pod("Running", false), false, false, false),
        ];
        for (pod, only_failed, failed, terminating) in table {
            assert_eq!(pod_failed(&pod, only_failed), failed, "{pod} {only_failed}");
            assert_eq!(pod_terminating(&pod), terminating, "{pod}");
        }
    }
}
