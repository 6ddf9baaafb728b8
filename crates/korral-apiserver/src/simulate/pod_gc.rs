//! The pod garbage collector (upstream's `pkg/controller/podgc`, with its v1.36 feature
//! defaults): it force-deletes Pods no kubelet will ever finish, in upstream's order:
//!
//! 1. **Terminated Pods over the threshold** (`--terminated-pod-gc-threshold`, 12500): the
//!    oldest (evicted first, then by `creationTimestamp`, then name) beyond it are deleted.
//! 2. **Terminating Pods on an out-of-service Node**: a Pod being deleted whose Node is not
//!    Ready and has the `node.kubernetes.io/out-of-service` taint.
//! 3. **Orphaned Pods**: bound to a Node that does not exist. The node name is quarantined
//!    first (40 s, [`Quarantine`]); if a fresh read still finds no such Node then, its Pods get
//!    the `DisruptionTarget` condition (`DeletionByPodGC`, "PodGC: node no longer exists").
//! 4. **Unscheduled terminating Pods**: being deleted and bound to no node (finalizers keep
//!    them, a Job's tracking finalizer say).
//!
//! Each is marked `Failed` first unless it reached a terminal phase (so a Job counts it as
//! failed), then deleted with grace period 0 under a uid precondition; finalizers still hold
//! it until their owners drop them. Upstream runs every 20 s; here the collector is one work
//! item of the simulation's loop, queued when a Pod or Node changes in a way that concerns it
//! ([`concerns`]) and run again when a quarantine ends.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::access::{self, Actor};
use super::pods;
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::{Object, object_key};

/// How long a missing node's name is quarantined before its Pods count as orphaned
/// (upstream's `quarantineTime`).
pub const QUARANTINE: Duration = Duration::from_secs(40);
/// How many terminated Pods are kept (upstream's `--terminated-pod-gc-threshold` default).
pub const TERMINATED_POD_THRESHOLD: usize = 12500;
/// The taint that lets Pods terminating on a not-ready Node be force-deleted.
const OUT_OF_SERVICE_TAINT: &str = "node.kubernetes.io/out-of-service";
/// The reason of the `DisruptionTarget` condition of an orphaned Pod.
const ORPHAN_REASON: &str = "DeletionByPodGC";
/// The message of the `DisruptionTarget` condition of an orphaned Pod.
const ORPHAN_MESSAGE: &str = "PodGC: node no longer exists";

/// The names of missing Nodes in quarantine, since when, and for how long (per server: each
/// simulation has its own).
#[derive(Debug, Clone)]
pub struct Quarantine {
    /// How long a name stays in quarantine.
    period: Duration,
    /// When each name was first found missing.
    since: Arc<Mutex<HashMap<String, Instant>>>,
}

impl Default for Quarantine {
    fn default() -> Self {
        Self::new(QUARANTINE)
    }
}

impl Quarantine {
    /// A quarantine of `period` (upstream: [`QUARANTINE`]; tests shorten it).
    pub fn new(period: Duration) -> Self {
        Self {
            period,
            since: Arc::default(),
        }
    }

    /// Quarantines every name in `missing` not quarantined yet, as of `now`, then answers the
    /// names whose quarantine is over and that `still_missing` confirms (they leave the
    /// quarantine either way, as upstream's delaying queue hands them out once), and how long
    /// until the next quarantine ends.
    fn discover(
        &self,
        missing: &BTreeSet<String>,
        now: Instant,
        still_missing: impl Fn(&str) -> bool,
    ) -> (BTreeSet<String>, Option<Duration>) {
        let mut since = self.since.lock().unwrap_or_else(|e| e.into_inner());
        for name in missing {
            since.entry(name.clone()).or_insert(now);
        }
        let due: Vec<String> = since
            .iter()
            .filter(|(_, t)| now.saturating_duration_since(**t) >= self.period)
            .map(|(name, _)| name.clone())
            .collect();
        let mut deleted = BTreeSet::new();
        for name in due {
            since.remove(&name);
            if missing.contains(&name) && still_missing(&name) {
                deleted.insert(name);
            }
        }
        let next = since
            .values()
            .map(|t| {
                self.period
                    .saturating_sub(now.saturating_duration_since(*t))
            })
            .min();
        (deleted, next)
    }
}

/// Whether a Pod's change may give the collector work: it is terminal (the threshold), being
/// deleted (out-of-service Nodes, unscheduled), or bound to a node other than the simulated
/// one (orphaned). Any Node change concerns it too.
pub fn concerns(pod: &Value) -> bool {
    let node = node_of(pod);
    pods::terminal(pod) || meta::is_deleting(pod) || (!node.is_empty() && node != pods::NODE_NAME)
}

/// `spec.nodeName` of a Pod (empty when unbound).
fn node_of(pod: &Value) -> &str {
    meta::path(pod, "spec.nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether a Node's `Ready` condition is `True` (upstream's `IsNodeReady`).
fn node_ready(node: &Value) -> bool {
    access::condition_status(node, "Ready") == Some("True")
}

/// Whether a Node has the out-of-service taint (any effect).
fn out_of_service(node: &Value) -> bool {
    meta::path(node, "spec.taints")
        .and_then(Value::as_array)
        .is_some_and(|t| {
            t.iter()
                .any(|t| t.get("key").and_then(Value::as_str) == Some(OUT_OF_SERVICE_TAINT))
        })
}

/// Whether a terminated Pod was evicted (upstream's `PodIsEvicted`).
fn evicted(pod: &Value) -> bool {
    meta::path(pod, "status.phase").and_then(Value::as_str) == Some("Failed")
        && meta::path(pod, "status.reason").and_then(Value::as_str) == Some("Evicted")
}

/// The terminated Pods beyond `threshold`, in the order upstream deletes them: evicted ones
/// first, then oldest `creationTimestamp`, then by name.
pub(crate) fn over_threshold(pods: &[Object], threshold: usize) -> Vec<&Object> {
    let mut terminated: Vec<&Object> = pods.iter().filter(|p| pods::terminal(p)).collect();
    let Some(excess) = terminated.len().checked_sub(threshold).filter(|n| *n > 0) else {
        return Vec::new();
    };
    let created = |p: &Value| access::timestamp(meta::path(p, "metadata.creationTimestamp"));
    terminated.sort_by(|a, b| {
        evicted(b)
            .cmp(&evicted(a))
            .then_with(|| created(a).cmp(&created(b)))
            .then_with(|| meta::name(a).cmp(meta::name(b)))
    });
    terminated.truncate(excess);
    terminated
}

/// The Pods being deleted on a Node that is not Ready and is out of service.
fn terminating_out_of_service<'a>(pods: &'a [Object], nodes: &[Object]) -> Vec<&'a Object> {
    let by_name: HashMap<&str, &Object> = nodes.iter().map(|n| (meta::name(n), n)).collect();
    pods.iter()
        .filter(|p| meta::is_deleting(p))
        .filter(|p| {
            by_name
                .get(node_of(p))
                .is_some_and(|n| !node_ready(n) && out_of_service(n))
        })
        .collect()
}

/// Runs the collector's passes over the stored Pods and Nodes; `Some(delay)` asks to run
/// again when the next quarantine ends. A failure on one Pod does not stop the others; the
/// first is answered (the loop retries).
pub async fn reconcile(
    objects: &Objects,
    quarantine: &Quarantine,
) -> Result<Option<Duration>, ApiError> {
    let pods = access::list_all(objects, "", "pods");
    let nodes_served = objects.registry().get("", "v1", "nodes").is_some();
    let nodes = if nodes_served {
        access::list_all(objects, "", "nodes")
    } else {
        Vec::new()
    };
    let info = access::info(objects, "", "v1", "pods")?;
    let mut result = Ok(());
    let mut record = |outcome: Result<(), ApiError>| {
        if let Err(error) = outcome {
            tracing::debug!(%error, "pod garbage collection failed; retrying");
            if result.is_ok() {
                result = Err(error);
            }
        }
    };
    for pod in over_threshold(&pods, TERMINATED_POD_THRESHOLD) {
        record(mark_failed_and_delete(objects, &info, pod, None).await);
    }
    for pod in terminating_out_of_service(&pods, &nodes) {
        record(mark_failed_and_delete(objects, &info, pod, None).await);
    }
    let mut next = None;
    if nodes_served {
        let existing: BTreeSet<&str> = nodes.iter().map(|n| meta::name(n)).collect();
        let missing: BTreeSet<String> = pods
            .iter()
            .map(|p| node_of(p))
            .filter(|n| !n.is_empty() && !existing.contains(n))
            .map(str::to_string)
            .collect();
        let storage = objects.storage();
        let (deleted, again) = quarantine.discover(&missing, Instant::now(), |name| {
            // A live read, as upstream's `checkIfNodeExists`.
            storage.get(&object_key("", "nodes", None, name)).is_none()
        });
        next = again;
        let condition = json!({
            "type": "DisruptionTarget", "status": "True",
            "reason": ORPHAN_REASON, "message": ORPHAN_MESSAGE,
        });
        for pod in pods.iter().filter(|p| deleted.contains(node_of(p))) {
            tracing::info!(pod = %meta::name(pod), node = node_of(pod), "deleting orphaned pod");
            record(mark_failed_and_delete(objects, &info, pod, Some(condition.clone())).await);
        }
    }
    for pod in pods
        .iter()
        .filter(|p| meta::is_deleting(p) && node_of(p).is_empty())
    {
        record(mark_failed_and_delete(objects, &info, pod, None).await);
    }
    result.map(|()| next)
}

/// Upstream's `markFailedAndDeletePodWithCondition`: a Pod not in a terminal phase is marked
/// `Failed` (with `condition`, if any, set as upstream's `UpdatePodCondition` does), then it is
/// deleted with grace period 0 (skipped when that delete was made already and finalizers keep
/// it). A Pod gone or replaced meanwhile counts as done.
async fn mark_failed_and_delete(
    objects: &Objects,
    info: &Arc<crate::registry::ResourceInfo>,
    pod: &Value,
    condition: Option<Value>,
) -> Result<(), ApiError> {
    if !pods::terminal(pod) {
        let written = access::update_status(objects, Actor::PodGarbageCollector, info, pod, {
            move |pod| {
                if pods::terminal(pod) {
                    return;
                }
                mark_failed(pod, condition.clone());
            }
        })
        .await;
        match written {
            Ok(()) => {}
            Err(e) if e.code == 404 || e.code == 409 => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    if pods::already_deleted_at_once(pod) {
        return Ok(());
    }
    access::delete_at_once(objects, Actor::PodGarbageCollector, info, pod).await
}

/// Sets a Pod's phase to `Failed` and, when given, its `condition`.
fn mark_failed(pod: &mut Value, condition: Option<Value>) {
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    let status = root.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    status["phase"] = json!("Failed");
    if let Some(condition) = condition {
        let mut conditions: Vec<Value> = status
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        access::set_condition(&mut conditions, condition, &["lastTransitionTime"]);
        status["conditions"] = Value::Array(conditions);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored objects of `values`.
    fn objects(values: Vec<Value>) -> Vec<Object> {
        values.into_iter().map(Arc::new).collect()
    }

    fn pod(name: &str, created: &str, phase: &str) -> Value {
        json!({"metadata": {"name": name, "creationTimestamp": created},
            "spec": {"nodeName": pods::NODE_NAME}, "status": {"phase": phase}})
    }

    #[test]
    fn terminated_pods_over_the_threshold_go_oldest_first_evicted_before_all() {
        let mut evicted = pod("evicted", "2026-01-01T00:00:09Z", "Failed");
        evicted["status"]["reason"] = json!("Evicted");
        let pods = objects(vec![
            pod("new", "2026-01-01T00:00:05Z", "Succeeded"),
            pod("running", "2026-01-01T00:00:00Z", "Running"),
            pod("b-old", "2026-01-01T00:00:01Z", "Failed"),
            pod("a-old", "2026-01-01T00:00:01Z", "Succeeded"),
            evicted,
            pod("pending", "2026-01-01T00:00:00Z", "Pending"),
        ]);
        let names = |threshold: usize| -> Vec<&str> {
            over_threshold(&pods, threshold)
                .into_iter()
                .map(|p| meta::name(p))
                .collect()
        };
        assert_eq!(names(4), Vec::<&str>::new(), "4 terminated, none over");
        assert_eq!(names(10), Vec::<&str>::new());
        assert_eq!(names(3), ["evicted"]);
        assert_eq!(names(1), ["evicted", "a-old", "b-old"]);
        assert_eq!(names(0), ["evicted", "a-old", "b-old", "new"]);
        assert_eq!(TERMINATED_POD_THRESHOLD, 12500);
    }

    #[test]
    fn only_not_ready_out_of_service_nodes_release_terminating_pods() {
        let node = |name: &str, ready: &str, taint: bool| {
            let mut n = json!({"metadata": {"name": name},
                "status": {"conditions": [{"type": "Ready", "status": ready}]}});
            if taint {
                n["spec"] =
                    json!({"taints": [{"key": OUT_OF_SERVICE_TAINT, "effect": "NoExecute"}]});
            }
            n
        };
        let nodes = objects(vec![
            node("down", "False", true),
            node("up", "True", true),
            node("plain", "Unknown", false),
        ]);
        let on = |name: &str, node: &str, deleting: bool| {
            let mut p = json!({"metadata": {"name": name}, "spec": {"nodeName": node}});
            if deleting {
                p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            p
        };
        let pods = objects(vec![
            on("gone", "down", true),
            on("running", "down", false),
            on("ready-node", "up", true),
            on("untainted", "plain", true),
            on("missing-node", "nowhere", true),
        ]);
        let names: Vec<&str> = terminating_out_of_service(&pods, &nodes)
            .into_iter()
            .map(|p| meta::name(p))
            .collect();
        assert_eq!(names, ["gone"]);
    }

    #[test]
    fn missing_nodes_are_quarantined_then_confirmed_by_a_fresh_read() {
        let quarantine = Quarantine::new(Duration::from_secs(40));
        let start = Instant::now();
        let ghost: BTreeSet<String> = ["ghost".to_string()].into();
        let (deleted, next) = quarantine.discover(&ghost, start, |_| true);
        assert!(deleted.is_empty());
        assert_eq!(next, Some(Duration::from_secs(40)));
        // Seen again later: the first sighting stands.
        let later = start + Duration::from_secs(30);
        let (deleted, next) = quarantine.discover(&ghost, later, |_| true);
        assert!(deleted.is_empty());
        assert_eq!(next, Some(Duration::from_secs(10)));
        // Over: a fresh read that finds the node keeps its pods.
        let over = start + Duration::from_secs(40);
        let (deleted, next) = quarantine.discover(&ghost, over, |_| false);
        assert!(deleted.is_empty());
        assert_eq!(next, None);
        // A new quarantine, then the node is still missing.
        let (_, _) = quarantine.discover(&ghost, over, |_| true);
        let (deleted, _) = quarantine.discover(&ghost, over + QUARANTINE, |_| true);
        assert_eq!(deleted, ghost);
    }

    #[test]
    fn orphans_are_failed_with_upstreams_condition() {
        let mut p = pod("p", "2026-01-01T00:00:00Z", "Running");
        p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        mark_failed(
            &mut p,
            Some(json!({"type": "DisruptionTarget", "status": "True",
                "reason": ORPHAN_REASON, "message": ORPHAN_MESSAGE})),
        );
        assert_eq!(p["status"]["phase"], "Failed");
        let c = &p["status"]["conditions"][1];
        assert_eq!(c["type"], "DisruptionTarget");
        assert_eq!(c["reason"], "DeletionByPodGC");
        assert_eq!(c["message"], "PodGC: node no longer exists");
        assert!(c["lastTransitionTime"].is_string());
        assert_eq!(p["status"]["conditions"][0]["type"], "Ready");
        let mut bare = json!({"metadata": {"name": "b"}});
        mark_failed(&mut bare, None);
        assert_eq!(bare["status"], json!({"phase": "Failed"}));
    }

    #[test]
    fn what_concerns_the_collector() {
        assert!(concerns(&json!({"spec": {"nodeName": "ghost"}})));
        assert!(concerns(&json!({"metadata": {"deletionTimestamp": "t"}})));
        assert!(concerns(&json!({"status": {"phase": "Succeeded"}})));
        assert!(!concerns(
            &json!({"spec": {"nodeName": pods::NODE_NAME}, "status": {"phase": "Running"}})
        ));
        assert!(!concerns(&json!({"spec": {}})));
    }
}
