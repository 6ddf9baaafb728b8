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
//!
//! A finished Pod always concerns it (the threshold), so a run must not cost a listing of
//! every Pod: the simulation keeps a [`PodIndex`] up to date as Pods change (the node each is
//! bound to, whether it is terminated or being deleted, and the count of terminated Pods). A
//! run lists the Pods only when that count exceeds the threshold; the other passes read the
//! Pods being deleted and those of missing Nodes by key, and list only the (few) Nodes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
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

/// What the collector needs to know of one stored Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PodFacts {
    /// `spec.nodeName` (empty when unbound).
    node: String,
    /// In a terminal phase.
    terminated: bool,
    /// Being deleted.
    deleting: bool,
}

impl PodFacts {
    /// The facts of `pod`.
    fn of(pod: &Value) -> Self {
        Self {
            node: node_of(pod).to_string(),
            terminated: pods::terminal(pod),
            deleting: meta::is_deleting(pod),
        }
    }
}

/// The collector's view of the stored Pods, kept up to date one Pod at a time (see
/// [`PodIndex::observe`]) so that a run need not list them all: the Pods by node, those being
/// deleted, and how many are terminated. It only points at candidates; each pass reads them
/// again. One per simulation (see [`super::Cluster`]).
#[derive(Debug, Clone, Default)]
pub struct PodIndex(Arc<Mutex<Tally>>);

/// The state behind a [`PodIndex`].
#[derive(Debug, Default)]
struct Tally {
    /// Filled from a listing of every Pod (on the collector's first run).
    filled: bool,
    /// The facts of each Pod, by storage key.
    pods: HashMap<String, PodFacts>,
    /// The keys of the Pods bound to each node.
    by_node: HashMap<String, BTreeSet<String>>,
    /// The keys of the Pods being deleted.
    deleting: BTreeSet<String>,
    /// How many Pods are terminated.
    terminated: usize,
}

impl Tally {
    /// Records `facts` (`None`: gone) for the Pod at `key`.
    fn set(&mut self, key: &str, facts: Option<PodFacts>) {
        if self.pods.get(key) == facts.as_ref() {
            return;
        }
        if let Some(old) = self.pods.remove(key) {
            if old.terminated {
                self.terminated = self.terminated.saturating_sub(1);
            }
            if old.deleting {
                self.deleting.remove(key);
            }
            if let Some(keys) = self.by_node.get_mut(&old.node) {
                keys.remove(key);
                if keys.is_empty() {
                    self.by_node.remove(&old.node);
                }
            }
        }
        let Some(facts) = facts else {
            return;
        };
        if facts.terminated {
            self.terminated += 1;
        }
        if facts.deleting {
            self.deleting.insert(key.to_string());
        }
        if !facts.node.is_empty() {
            self.by_node
                .entry(facts.node.clone())
                .or_default()
                .insert(key.to_string());
        }
        self.pods.insert(key.to_string(), facts);
    }
}

impl PodIndex {
    /// Runs `f` on the tally.
    fn with<T>(&self, f: impl FnOnce(&mut Tally) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Records the current state of the Pod `ns/name` (gone: forgotten). The simulation calls
    /// it for every Pod it is told changed, before the collector runs.
    pub fn observe(&self, objects: &Objects, ns: &str, name: &str) {
        let key = object_key("", "pods", Some(ns), name);
        let pod = objects.storage().get(&key);
        self.with(|t| t.set(&key, pod.as_deref().map(PodFacts::of)));
    }

    /// Replaces what it knows by `pods`, every stored Pod.
    fn fill(&self, pods: &[Object]) {
        self.with(|t| {
            *t = Tally {
                filled: true,
                ..Tally::default()
            };
            for pod in pods {
                let key = object_key("", "pods", meta::namespace(pod), meta::name(pod));
                t.set(&key, Some(PodFacts::of(pod)));
            }
        });
    }

    /// Whether it was filled from a listing yet.
    fn filled(&self) -> bool {
        self.with(|t| t.filled)
    }

    /// How many Pods are terminated.
    fn terminated(&self) -> usize {
        self.with(|t| t.terminated)
    }

    /// The keys of the Pods being deleted.
    fn deleting(&self) -> BTreeSet<String> {
        self.with(|t| t.deleting.clone())
    }

    /// The names of the nodes Pods are bound to.
    fn nodes(&self) -> BTreeSet<String> {
        self.with(|t| t.by_node.keys().cloned().collect())
    }

    /// The keys of the Pods bound to `node`.
    fn on_node(&self, node: &str) -> BTreeSet<String> {
        self.with(|t| t.by_node.get(node).cloned().unwrap_or_default())
    }

    /// The Pods stored at `keys`, in key order (those gone are forgotten).
    fn read(&self, objects: &Objects, keys: BTreeSet<String>) -> BTreeMap<String, Object> {
        let storage = objects.storage();
        let mut found = BTreeMap::new();
        for key in keys {
            match storage.get(&key) {
                Some(pod) => {
                    found.insert(key, pod);
                }
                None => self.with(|t| t.set(&key, None)),
            }
        }
        found
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
fn terminating_out_of_service<'a>(
    pods: impl IntoIterator<Item = &'a Object>,
    nodes: &[Object],
) -> Vec<&'a Object> {
    let by_name: HashMap<&str, &Object> = nodes.iter().map(|n| (meta::name(n), n)).collect();
    pods.into_iter()
        .filter(|p| meta::is_deleting(p))
        .filter(|p| {
            by_name
                .get(node_of(p))
                .is_some_and(|n| !node_ready(n) && out_of_service(n))
        })
        .collect()
}

/// Runs the collector's passes over the stored Pods and Nodes, found through `index`;
/// `Some(delay)` asks to run again when the next quarantine ends. A failure on one Pod does
/// not stop the others; the first is answered (the loop retries).
pub async fn reconcile(
    objects: &Objects,
    quarantine: &Quarantine,
    index: &PodIndex,
) -> Result<Option<Duration>, ApiError> {
    collect(objects, quarantine, index, TERMINATED_POD_THRESHOLD).await
}

/// [`reconcile`] keeping `threshold` terminated Pods.
async fn collect(
    objects: &Objects,
    quarantine: &Quarantine,
    index: &PodIndex,
    threshold: usize,
) -> Result<Option<Duration>, ApiError> {
    if !index.filled() {
        index.fill(&access::list_all(objects, "", "pods"));
    }
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
    if index.terminated() > threshold {
        // Over the threshold: only a listing tells which are the oldest (and it corrects the
        // index, should it have drifted).
        let pods = access::list_all(objects, "", "pods");
        index.fill(&pods);
        for pod in over_threshold(&pods, threshold) {
            record(mark_failed_and_delete(objects, &info, pod, None).await);
        }
    }
    let deleting = index.read(objects, index.deleting());
    for pod in terminating_out_of_service(deleting.values(), &nodes) {
        record(mark_failed_and_delete(objects, &info, pod, None).await);
    }
    let mut next = None;
    if nodes_served {
        let existing: BTreeSet<&str> = nodes.iter().map(|n| meta::name(n)).collect();
        let missing: BTreeSet<String> = index
            .nodes()
            .into_iter()
            .filter(|n| !existing.contains(n.as_str()))
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
        for node in &deleted {
            let orphans = index.read(objects, index.on_node(node));
            for pod in orphans.values().filter(|p| node_of(p) == node) {
                tracing::info!(pod = %meta::name(pod), node = node_of(pod), "deleting orphaned pod");
                record(mark_failed_and_delete(objects, &info, pod, Some(condition.clone())).await);
            }
        }
    }
    for pod in deleting
        .values()
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
    fn the_index_counts_terminated_pods_as_they_change() {
        let mut tally = Tally::default();
        let facts = |p: Value| Some(PodFacts::of(&p));
        tally.set("a", facts(pod("a", "t", "Running")));
        tally.set("b", facts(pod("b", "t", "Succeeded")));
        assert_eq!(tally.terminated, 1);
        // The same facts twice count once; a change of phase moves the count.
        tally.set("b", facts(pod("b", "t", "Succeeded")));
        tally.set("a", facts(pod("a", "t", "Failed")));
        assert_eq!(tally.terminated, 2);
        let mut deleting = pod("c", "t", "Running");
        deleting["metadata"]["deletionTimestamp"] = json!("t");
        deleting["spec"]["nodeName"] = json!("ghost");
        tally.set("c", facts(deleting));
        assert_eq!(tally.deleting, BTreeSet::from(["c".to_string()]));
        assert_eq!(tally.by_node["ghost"], BTreeSet::from(["c".to_string()]));
        // Gone: forgotten everywhere.
        tally.set("a", None);
        tally.set("c", None);
        assert_eq!(tally.terminated, 1);
        assert!(tally.deleting.is_empty());
        assert!(!tally.by_node.contains_key("ghost"));
        assert_eq!(tally.by_node[pods::NODE_NAME].len(), 1);
    }

    /// An object layer over an empty in-memory store.
    fn store() -> Objects {
        Objects::new(
            Arc::new(crate::storage::MemoryStorage::new()),
            Arc::new(crate::registry::Registry::with_builtins()),
        )
    }

    /// Stores Pod `name` (in `ns`) as it is.
    async fn put(objects: &Objects, name: &str, created: &str, phase: &str) {
        let mut p = pod(name, created, phase);
        p["metadata"]["namespace"] = json!("ns");
        p["metadata"]["uid"] = json!(format!("uid-{name}"));
        p["apiVersion"] = json!("v1");
        p["kind"] = json!("Pod");
        p["spec"]["containers"] = json!([{"name": "c", "image": "busybox"}]);
        let key = object_key("", "pods", Some("ns"), name);
        objects
            .storage()
            .update(key, Box::new(move |_| Ok(crate::storage::Write::Put(p))))
            .await
            .expect("put");
    }

    /// The names of the stored Pods.
    fn stored(objects: &Objects) -> Vec<String> {
        access::list(objects, "", "pods", "ns")
            .iter()
            .map(|p| meta::name(p).to_string())
            .collect()
    }

    #[tokio::test]
    async fn the_threshold_pass_follows_the_index_count() {
        let objects = store();
        let (quarantine, index) = (Quarantine::default(), PodIndex::default());
        put(&objects, "old", "2026-01-01T00:00:01Z", "Succeeded").await;
        put(&objects, "mid", "2026-01-01T00:00:02Z", "Failed").await;
        put(&objects, "run", "2026-01-01T00:00:00Z", "Running").await;
        // The first run fills the index from a listing: 2 terminated, the threshold 2 keeps them.
        collect(&objects, &quarantine, &index, 2).await.expect("gc");
        assert_eq!(index.terminated(), 2);
        assert_eq!(stored(&objects), ["mid", "old", "run"]);
        // A third finished Pod the index was not told of: no run lists the Pods to find it.
        put(&objects, "new", "2026-01-01T00:00:03Z", "Succeeded").await;
        collect(&objects, &quarantine, &index, 2).await.expect("gc");
        assert_eq!(stored(&objects), ["mid", "new", "old", "run"]);
        // Told (as the simulation tells it of every changed Pod): over the threshold, the
        // oldest terminated Pod goes.
        index.observe(&objects, "ns", "new");
        assert_eq!(index.terminated(), 3);
        collect(&objects, &quarantine, &index, 2).await.expect("gc");
        assert_eq!(stored(&objects), ["mid", "new", "run"]);
        // The deleted Pod is forgotten once observed gone.
        assert_eq!(index.terminated(), 3);
        index.observe(&objects, "ns", "old");
        assert_eq!(index.terminated(), 2);
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
