//! Workload simulation: the controllers, scheduler and kubelet a real cluster would run, so
//! workloads created against the embedded server behave as on a cluster (on for `korral up`,
//! opt-in for tests through [`crate::ServerConfig::simulation`]).
//!
//! * Deployments get ReplicaSets (`<deployment>-<pod-template-hash>`), rollouts and status
//!   ([`deployment`]); ReplicaSets keep their Pods (`<replicaset>-<suffix>`) ([`replicaset`]).
//! * StatefulSets get Pods `<name>-0 … <name>-N-1`, in order ([`statefulset`]).
//! * Jobs run Pods to completion ([`jobs`]).
//! * DaemonSets get one Pod on the node ([`daemonset`]).
//! * Pods (owned or bare) are scheduled onto one simulated Node, then run and turn Ready
//!   ([`pods`]).
//! * Services with a selector get Endpoints ([`endpoints`]).
//!
//! Like the built-in controllers ([`crate::controllers`]) it is event-driven: one task watches
//! storage, turns each event into [`Work`] (the object itself and whatever depends on it), and
//! runs the queued work in a fixed order against the current state, writing through
//! [`crate::objects::Objects`] so watchers see ordinary events and resourceVersions. Deleting
//! an owner removes its dependents through the garbage collector. On start every stored
//! workload is queued, so a durable server picks up where it stopped. Failed work (a write
//! conflict, say) is retried on fresh state with backoff; nothing polls.

mod access;
pub mod daemonset;
pub mod deployment;
pub mod endpoints;
mod endpointslices;
pub mod jobs;
pub mod names;
pub mod pods;
pub mod replicaset;
pub mod statefulset;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::{Event, collection_prefix};

/// First retry delay after a failure; doubles per attempt.
const RETRY_BASE: Duration = Duration::from_millis(20);
/// Longest retry delay.
const RETRY_MAX: Duration = Duration::from_secs(5);

/// One unit of simulated controller work, in the order a batch runs it (owners before what
/// they own, so one pass sees the newest desired state).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Work {
    /// Register the simulated node.
    Node,
    /// Reconcile a Deployment.
    Deployment(String, String),
    /// Reconcile a StatefulSet.
    StatefulSet(String, String),
    /// Reconcile a Job.
    Job(String, String),
    /// Reconcile a DaemonSet.
    DaemonSet(String, String),
    /// Reconcile a ReplicaSet.
    ReplicaSet(String, String),
    /// Move a Pod along its lifecycle.
    Pod(String, String),
    /// Reconcile the Endpoints of a Service.
    Service(String, String),
    /// Reconcile the Endpoints of every Service in a namespace.
    Services(String),
}

/// Runs the simulation until `shutdown` turns `true` or its sender is dropped.
pub async fn run(objects: Arc<Objects>, mut shutdown: watch::Receiver<bool>) {
    if *shutdown.borrow() {
        return;
    }
    let mut sim = Simulator {
        objects,
        queue: BTreeSet::new(),
        retries: HashMap::new(),
        seen: 0,
    };
    sim.run(&mut shutdown).await;
    tracing::debug!("workload simulation stopped");
}

/// A failed work item waiting to be retried.
#[derive(Debug, Clone, Copy)]
struct Retry {
    attempts: u32,
    due: Instant,
}

struct Simulator {
    objects: Arc<Objects>,
    queue: BTreeSet<Work>,
    retries: HashMap<Work, Retry>,
    /// Every event up to this revision has been turned into work.
    seen: u64,
}

impl Simulator {
    async fn run(&mut self, shutdown: &mut watch::Receiver<bool>) {
        let Some(mut live) = self.subscribe(shutdown).await else {
            return;
        };
        loop {
            if *shutdown.borrow() {
                return;
            }
            // Take in everything already buffered before working.
            loop {
                match live.try_recv() {
                    Ok(event) => self.apply(&event),
                    Err(broadcast::error::TryRecvError::Empty) => break,
                    Err(broadcast::error::TryRecvError::Lagged(_)) => {
                        match self.subscribe(shutdown).await {
                            Some(feed) => live = feed,
                            None => return,
                        }
                    }
                    Err(broadcast::error::TryRecvError::Closed) => return,
                }
            }
            let now = Instant::now();
            for (work, retry) in &self.retries {
                if retry.due <= now {
                    self.queue.insert(work.clone());
                }
            }
            if let Some(work) = self.queue.pop_first() {
                let result = tokio::select! {
                    r = execute(&self.objects, &work) => r,
                    _ = shutdown.changed() => return,
                };
                self.record(work, result);
                continue;
            }
            let next_due = self.retries.values().map(|r| r.due).min();
            tokio::select! {
                changed = shutdown.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                received = live.recv() => match received {
                    Ok(event) => self.apply(&event),
                    Err(RecvError::Lagged(_)) => match self.subscribe(shutdown).await {
                        Some(feed) => live = feed,
                        None => return,
                    },
                    Err(RecvError::Closed) => return,
                },
                () = tokio::time::sleep_until(next_due.unwrap_or_else(Instant::now)), if next_due.is_some() => {}
            }
        }
    }

    fn record(&mut self, work: Work, result: Result<(), ApiError>) {
        match result {
            Ok(()) => {
                self.retries.remove(&work);
            }
            Err(error) => {
                let attempts = self.retries.get(&work).map_or(0, |r| r.attempts) + 1;
                if error.code == 409 {
                    tracing::debug!(?work, %error, "simulation work conflicted; retrying");
                } else if error.code == 503 {
                    tracing::debug!(?work, %error, "storage closing; simulation work dropped");
                    self.retries.remove(&work);
                    return;
                } else {
                    tracing::warn!(?work, %error, attempts, "simulation work failed; retrying");
                }
                let delay = RETRY_BASE
                    .saturating_mul(1 << attempts.min(10))
                    .min(RETRY_MAX);
                self.retries.insert(
                    work,
                    Retry {
                        attempts,
                        due: Instant::now() + delay,
                    },
                );
            }
        }
    }

    /// Subscribes to storage and queues every stored workload (taken after subscribing, so
    /// nothing is missed); `None` on shutdown.
    async fn subscribe(
        &mut self,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Option<broadcast::Receiver<Arc<Event>>> {
        let storage = self.objects.storage().clone();
        loop {
            if *shutdown.borrow() {
                return None;
            }
            match storage.watch(storage.revision()) {
                Ok(feed) => {
                    let snapshot = storage.snapshot();
                    self.queue.insert(Work::Node);
                    for (group, resource) in WATCHED {
                        let prefix = collection_prefix(group, resource, None);
                        for (key, _) in snapshot.range(&prefix, None) {
                            if let Some(work) = work_for(group, resource, key) {
                                self.queue.insert(work);
                            }
                        }
                    }
                    // Endpoints whose Service may have gone while the server was down.
                    let prefix = collection_prefix("", "endpoints", None);
                    for (key, _) in snapshot.range(&prefix, None) {
                        if let Some(work) = work_for("", "services", key) {
                            self.queue.insert(work);
                        }
                    }
                    self.seen = snapshot.revision;
                    for event in &feed.backlog {
                        self.apply(event);
                    }
                    return Some(feed.live);
                }
                Err(error) => {
                    tracing::warn!(%error, "simulation cannot watch storage; retrying");
                    tokio::select! {
                        changed = shutdown.changed() => {
                            if changed.is_err() {
                                return None;
                            }
                        }
                        () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    }
                }
            }
        }
    }

    /// Queues every pod not bound to a node yet: a change of the node (uncordoned, say) may
    /// let the scheduler place them now.
    fn queue_unbound_pods(&mut self) {
        let snapshot = self.objects.storage().snapshot();
        let prefix = collection_prefix("", "pods", None);
        for (key, pod) in snapshot.range(&prefix, None) {
            let bound = meta::path(pod, "spec.nodeName")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !bound && let Some(work) = work_for("", "pods", key) {
                self.queue.insert(work);
            }
        }
    }

    /// Queues the work one storage event calls for.
    fn apply(&mut self, event: &Event) {
        if event.revision <= self.seen {
            return;
        }
        self.seen = event.revision;
        if event.key.starts_with("/core/nodes/") {
            if meta::name(&event.object) == pods::NODE_NAME {
                self.queue.insert(Work::Node);
                self.queue_unbound_pods();
            }
            return;
        }
        let Some((group, resource, ns, _)) = split_key(&event.key) else {
            return;
        };
        if group == "core" && resource == "endpoints" {
            if let Some(work) = work_for("", "services", &event.key) {
                self.queue.insert(work);
            }
            return;
        }
        let group = if group == "core" { "" } else { group };
        let Some(work) = work_for(group, resource, &event.key) else {
            return;
        };
        self.queue.insert(work);
        // What depends on this object: its controller, and for Pods the Services.
        for obj in std::iter::once(&event.object).chain(event.previous.iter()) {
            if let Some((kind, name, _)) = access::controller_of(obj) {
                let owner = match kind {
                    "ReplicaSet" => Some(Work::ReplicaSet(ns.to_string(), name.to_string())),
                    "Deployment" => Some(Work::Deployment(ns.to_string(), name.to_string())),
                    "StatefulSet" => Some(Work::StatefulSet(ns.to_string(), name.to_string())),
                    "Job" => Some(Work::Job(ns.to_string(), name.to_string())),
                    "DaemonSet" => Some(Work::DaemonSet(ns.to_string(), name.to_string())),
                    _ => None,
                };
                self.queue.extend(owner);
            }
        }
        if resource == "pods" {
            self.queue.insert(Work::Services(ns.to_string()));
        }
    }
}

/// The collections the simulation reacts to.
const WATCHED: [(&str, &str); 7] = [
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("batch", "jobs"),
    ("apps", "daemonsets"),
    ("", "pods"),
    ("", "services"),
];

/// `(group or "core", resource, namespace, name)` of a storage key.
fn split_key(key: &str) -> Option<(&str, &str, &str, &str)> {
    let mut parts = key.strip_prefix('/')?.splitn(4, '/');
    Some((parts.next()?, parts.next()?, parts.next()?, parts.next()?))
}

fn work_for(group: &str, resource: &str, key: &str) -> Option<Work> {
    let (_, _, ns, name) = split_key(key)?;
    let (ns, name) = (ns.to_string(), name.to_string());
    Some(match (group, resource) {
        ("apps", "deployments") => Work::Deployment(ns, name),
        ("apps", "replicasets") => Work::ReplicaSet(ns, name),
        ("apps", "statefulsets") => Work::StatefulSet(ns, name),
        ("batch", "jobs") => Work::Job(ns, name),
        ("apps", "daemonsets") => Work::DaemonSet(ns, name),
        ("", "pods") => Work::Pod(ns, name),
        ("", "services") => Work::Service(ns, name),
        _ => return None,
    })
}

/// Runs one work item against the current state.
async fn execute(objects: &Objects, work: &Work) -> Result<(), ApiError> {
    match work {
        Work::Node => pods::ensure_node(objects).await,
        Work::Deployment(ns, name) => deployment::reconcile(objects, ns, name).await,
        Work::StatefulSet(ns, name) => statefulset::reconcile(objects, ns, name).await,
        Work::Job(ns, name) => jobs::reconcile(objects, ns, name).await,
        Work::DaemonSet(ns, name) => daemonset::reconcile(objects, ns, name).await,
        Work::ReplicaSet(ns, name) => replicaset::reconcile(objects, ns, name).await,
        Work::Pod(ns, name) => pods::reconcile(objects, ns, name).await,
        Work::Service(ns, name) => endpoints::reconcile(objects, ns, name).await,
        Work::Services(ns) => {
            let mut result = Ok(());
            for service in access::list(objects, "", "services", ns) {
                if let Err(e) = endpoints::reconcile(objects, ns, meta::name(&service)).await {
                    result = Err(e);
                }
            }
            result
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_work() {
        assert_eq!(
            work_for("apps", "deployments", "/apps/deployments/default/web"),
            Some(Work::Deployment("default".into(), "web".into()))
        );
        assert_eq!(
            work_for("", "pods", "/core/pods/ns1/p"),
            Some(Work::Pod("ns1".into(), "p".into()))
        );
        assert_eq!(work_for("", "configmaps", "/core/configmaps/ns/x"), None);
        assert!(
            Work::Deployment(String::new(), String::new())
                < Work::ReplicaSet(String::new(), String::new())
        );
        assert!(
            Work::ReplicaSet(String::new(), String::new())
                < Work::Pod(String::new(), String::new())
        );
    }
}
