//! The Job controller: Pods per `parallelism` until `completions` succeeded, then `Complete`.
//!
//! Pods are named `<job>-<suffix>` (`<job>-<index>-<suffix>` for `Indexed` Jobs, which also
//! get the completion-index annotation and label). A suspended Job has its active Pods deleted
//! and a `Suspended` condition; resuming sets it `False` and starts Pods again. Status follows
//! upstream: `startTime`, `active`, `ready`, `succeeded`, `terminating`,
//! `uncountedTerminatedPods`, and on completion `completionTime` with the `SuccessCriteriaMet`
//! and `Complete` conditions. Simulated Pods never fail, so `backoffLimit` never triggers.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::access::{self, pod_active, pod_ready};
use super::replicaset::owned_pods;
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::Object;

const INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
const COMPLETED: &str = "Reached expected number of succeeded pods";
const TIMES: [&str; 2] = ["lastProbeTime", "lastTransitionTime"];

/// Reconciles one Job.
pub async fn reconcile(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    let Some(job) = access::get(objects, "batch", "jobs", ns, name) else {
        return Ok(());
    };
    if meta::is_deleting(&job) || finished(&job) {
        return Ok(());
    }
    let pod_info = access::info(objects, "", "v1", "pods")?;
    let pods = owned_pods(objects, ns, meta::uid(&job));
    let active: Vec<&Object> = pods.iter().filter(|p| pod_active(p)).collect();
    let succeeded: Vec<&Object> = pods.iter().filter(|p| phase(p) == "Succeeded").collect();
    let failed = pods.iter().filter(|p| phase(p) == "Failed").count();
    let suspended = meta::path(&job, "spec.suspend").and_then(Value::as_bool) == Some(true);
    let parallelism = access::int(&job, "spec.parallelism", 1).max(0) as usize;
    let completions = meta::path(&job, "spec.completions")
        .and_then(Value::as_i64)
        .map(|c| c.max(0) as usize);
    let indexed =
        meta::path(&job, "spec.completionMode").and_then(Value::as_str) == Some("Indexed");
    let succeeded_indexes: BTreeSet<usize> = succeeded.iter().filter_map(|p| index_of(p)).collect();
    let succeeded_count = if indexed {
        succeeded_indexes.len()
    } else {
        succeeded.len()
    };

    let complete = match completions {
        Some(c) => succeeded_count >= c,
        // Work-queue Jobs: done once one Pod succeeded and none is left running.
        None => succeeded_count > 0 && active.is_empty(),
    };
    let mut status = job.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut active_count = active.len();
    if suspended {
        for pod in &active {
            access::delete(objects, access::Actor::Job, &pod_info, pod).await?;
        }
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
        if status.get("startTime").is_none() {
            status["startTime"] = json!(meta::now_rfc3339());
        }
        if !complete {
            let wanted = match completions {
                Some(c) => parallelism.min(c.saturating_sub(succeeded_count)),
                None if succeeded_count > 0 => 0,
                None => parallelism,
            };
            let missing = wanted.saturating_sub(active.len());
            if indexed {
                let busy: BTreeSet<usize> = active.iter().filter_map(|p| index_of(p)).collect();
                let free = (0..completions.unwrap_or(0))
                    .filter(|i| !busy.contains(i) && !succeeded_indexes.contains(i))
                    .take(missing);
                for index in free {
                    access::create(
                        objects,
                        access::Actor::Job,
                        &pod_info,
                        Some(ns),
                        new_pod(&job, Some(index)),
                    )
                    .await?;
                    active_count += 1;
                }
            } else {
                for _ in 0..missing {
                    access::create(
                        objects,
                        access::Actor::Job,
                        &pod_info,
                        Some(ns),
                        new_pod(&job, None),
                    )
                    .await?;
                    active_count += 1;
                }
            }
        }
    }
    let ready = active.iter().filter(|p| pod_ready(p)).count();
    // Counted pods stay counted once their Pods are gone (upstream tracks them with a
    // finalizer; the API refuses a status that lowers the failed or succeeded counter).
    let counted = |field: &str| {
        status
            .get(field)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
    };
    let (succeeded_total, failed_total) = (
        succeeded_count.max(counted("succeeded")),
        failed.max(counted("failed")),
    );
    set_count(&mut status, "active", active_count);
    set_count(&mut status, "succeeded", succeeded_total);
    set_count(&mut status, "failed", failed_total);
    status["ready"] = json!(if suspended { 0 } else { ready });
    status["terminating"] = json!(0);
    status["uncountedTerminatedPods"] = json!({});
    if indexed && !succeeded_indexes.is_empty() {
        status["completedIndexes"] = json!(ranges(&succeeded_indexes));
    }
    if complete && !suspended {
        let now = meta::now_rfc3339();
        status["completionTime"] = json!(now);
        status["ready"] = json!(0);
        for kind in ["SuccessCriteriaMet", "Complete"] {
            access::set_condition(
                &mut conditions,
                json!({"type": kind, "status": "True", "reason": "CompletionsReached", "message": COMPLETED}),
                &TIMES,
            );
        }
    }
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
    if job.get("status") == Some(&status) {
        return Ok(());
    }
    access::write_status(
        objects,
        access::Actor::Job,
        &access::info(objects, "batch", "v1", "jobs")?,
        &job,
        status,
    )
    .await
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

/// `0-2,4` style ranges, as in `status.completedIndexes`.
fn ranges(indexes: &BTreeSet<usize>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

fn new_pod(job: &Value, index: Option<usize>) -> Value {
    let template = meta::path(job, "spec.template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut metadata = Map::new();
    let prefix = match index {
        Some(i) => format!("{}-{i}-", meta::name(job)),
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
    metadata.insert(
        "ownerReferences".into(),
        json!([access::owner_ref(job, "batch/v1", "Job")]),
    );
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template.get("spec").cloned().unwrap_or_else(|| json!({}))})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_render_as_ranges() {
        let set: BTreeSet<usize> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(ranges(&set), "0-2,4,6-7");
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
}
