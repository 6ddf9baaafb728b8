//! Built-in controllers: garbage collection, namespace and CRD cleanup, ResourceQuota and
//! PodDisruptionBudget status, ClusterRole aggregation.
//!
//! One task watches storage and keeps an incremental [`index::Index`] (uid → key, owner uid →
//! dependent keys, object counts per namespace and per collection, what is being torn down).
//! Each event updates the index in O(number of owner references) and queues [`Work`]; objects
//! without owner references that are not being deleted cost a few hash-map operations, so the
//! controllers add no per-event scans. Queued work runs concurrently, re-reads the current
//! state and writes through [`Objects::delete`] (so finalizers are honoured) or, for metadata
//! the controllers own (GC finalizers, dangling owner references, the namespace's
//! `kubernetes` finalizer), directly through [`crate::storage::Storage::update`].
//!
//! * **Garbage collector** (by uid, like upstream's `attemptToDeleteItem`): a dependent whose
//!   owners are all gone is deleted with background propagation; one whose remaining owners are
//!   all waiting for a foreground deletion is deleted with foreground propagation; one with a
//!   living owner loses its references to missing or foreground-deleting owners and stays.
//!   An owner with `foregroundDeletion` loses that finalizer once no dependent is left; an owner
//!   with `orphan` first has its references removed from every dependent.
//! * **Namespaces**: a terminating namespace has every object in it deleted (background); once
//!   none is left its `kubernetes` spec finalizer is removed and, if it has no
//!   `metadata.finalizers`, it is deleted.
//! * **CRDs**: a CRD being deleted with `customresourcecleanup.apiextensions.k8s.io` has every
//!   custom resource deleted; once none is left the finalizer is removed and its kinds are
//!   unregistered.
//!
//! * **ClusterRole aggregation**: any ClusterRole change brings the aggregated ClusterRoles up
//!   to date through the write pipeline (see [`crate::auth::aggregation`]).
//! * **Service IPAddresses**: the `networking.k8s.io` IPAddress of every Service cluster IP
//!   (see [`service_ips`]).
//! * **ValidatingAdmissionPolicy status**: policies whose generation was not observed yet
//!   are type-checked and get `status.typeChecking` (see [`policy_type_checking`]).
//! * **APIServices**: the local APIServices of the served group versions (built-in and CRD)
//!   and every APIService's `Available` condition (see [`apiservices`]).
//! * **Workload simulation** (when the server simulates workloads): Deployments, ReplicaSets,
//!   StatefulSets, Jobs, DaemonSets, the scheduler, the kubelet and Endpoints
//!   ([`crate::simulate`]). Its work is kept in its own ordered queue (owners before what they
//!   own) and runs one item at a time beside the other controllers' work, a bounded number of
//!   items per turn so the feed is read again between them.
//!
//! On start (and when the watch lags behind) the index is rebuilt from a snapshot, which also
//! picks up work left over from before a restart. Failed work is retried with backoff; a
//! periodic resync re-queues everything still being torn down.

mod apiservices;
mod index;
mod policy_type_checking;
mod service_ips;
#[cfg(test)]
mod tests;
mod writes;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::builtin_admission::quota;
use crate::crd;
use crate::error::ApiError;
use crate::kinds::disruption;
use crate::meta;
use crate::objects::{
    DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Objects, Part, Propagation,
};
use crate::storage::{Event, EventType, Object, Write, collection_prefix, object_key};

use index::{Index, KeyParts, Work, crd_prefixes, has_finalizer, owner_uids};
use writes::{Writer, modify, resource_info};

/// How many work items (and deletes within one item) run at once.
const CONCURRENCY: usize = 32;
/// Most events applied before queued work gets a turn.
const MAX_DRAIN: usize = 4096;
/// Most workload simulation items run per turn of the loop.
const WORKLOAD_PER_TURN: usize = 64;
/// First retry delay after a failure; doubles per attempt.
const RETRY_BASE: Duration = Duration::from_millis(20);
/// Longest retry delay.
const RETRY_MAX: Duration = Duration::from_secs(5);
/// How often everything still being torn down is looked at again.
const RESYNC: Duration = Duration::from_secs(5);
/// When a deleted CRD's kinds are unregistered a second time, in case a racing writer
/// re-registered them.
const CRD_GONE_RECHECK: Duration = Duration::from_secs(1);

/// Runs the built-in controllers (garbage collector, namespace lifecycle, CRD cleanup, quota and
/// budget status, role aggregation, and with `simulation` the workload simulation) until
/// `shutdown` turns `true` or its sender is dropped.
pub async fn run(
    objects: Arc<Objects>,
    mut shutdown: watch::Receiver<bool>,
    simulation: Option<crate::simulate::Cluster>,
) {
    if *shutdown.borrow() {
        return;
    }
    let mut controller = Controller {
        objects,
        index: Index::default(),
        queue: HashSet::new(),
        workload: simulation.as_ref().map(|_| BTreeSet::new()),
        cluster: simulation.unwrap_or_default(),
        retries: HashMap::new(),
        later: Vec::new(),
        seen: 0,
        cluster_roles: crate::auth::aggregation::prefix(),
        quotas: collection_prefix("", "resourcequotas", None),
        budgets: collection_prefix("policy", "poddisruptionbudgets", None),
    };
    // The built-in group versions' APIServices are synced once per run, as upstream's
    // autoregistration syncs them on start.
    controller.queue.insert(Work::ApiServices(true));
    controller.run(&mut shutdown).await;
    tracing::debug!("built-in controllers stopped");
}

/// A failed work item waiting to be retried.
#[derive(Debug, Clone, Copy)]
struct Retry {
    attempts: u32,
    due: Instant,
}

/// What running a work item produced.
#[derive(Debug, Default)]
struct Outcome {
    /// More work to queue.
    follow_ups: Vec<Work>,
    /// Whether the item failed and must be retried.
    retry: bool,
    /// Work to run at a given time regardless of success (a CronJob's next schedule).
    later: Option<(Instant, Work)>,
}

/// How draining the live feed ended.
enum Drain {
    /// Nothing more is buffered right now.
    Idle,
    /// The feed fell behind: rebuild from a snapshot.
    Lagged,
    /// Storage is gone.
    Closed,
}

/// The controllers' state: the index, queued work and scheduled retries.
struct Controller {
    objects: Arc<Objects>,
    index: Index,
    queue: HashSet<Work>,
    /// Queued workload simulation work, in the order it runs; `None` when the server does not
    /// simulate workloads.
    workload: Option<BTreeSet<crate::simulate::Work>>,
    /// What the simulated components know of the cluster.
    cluster: crate::simulate::Cluster,
    retries: HashMap<Work, Retry>,
    /// Work scheduled for later regardless of success.
    later: Vec<(Instant, Work)>,
    /// Where ClusterRoles are stored (their changes queue [`Work::RoleAggregation`]).
    cluster_roles: String,
    /// Where ResourceQuotas are stored.
    quotas: String,
    /// Where PodDisruptionBudgets are stored.
    budgets: String,
    /// The index reflects every event up to this revision.
    seen: u64,
}

/// Whether shutdown was requested.
fn stop_requested(shutdown: &watch::Receiver<bool>) -> bool {
    *shutdown.borrow()
}

impl Controller {
    async fn run(&mut self, shutdown: &mut watch::Receiver<bool>) {
        let Some(mut live) = self.subscribe(shutdown).await else {
            return;
        };
        let mut resync = tokio::time::interval_at(Instant::now() + RESYNC, RESYNC);
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if stop_requested(shutdown) {
                return;
            }
            match self.drain(&mut live) {
                Drain::Idle => {}
                Drain::Closed => return,
                Drain::Lagged => {
                    tracing::warn!("controllers fell behind the storage watch; rebuilding");
                    match self.subscribe(shutdown).await {
                        Some(feed) => live = feed,
                        None => return,
                    }
                    continue;
                }
            }
            self.move_due(Instant::now());
            if self.has_work() {
                self.process_queue().await;
                continue;
            }
            let next_due = self.next_due();
            tokio::select! {
                changed = shutdown.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                received = live.recv() => match received {
                    Ok(event) => self.apply(&event),
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "controllers fell behind the storage watch; rebuilding");
                        match self.subscribe(shutdown).await {
                            Some(feed) => live = feed,
                            None => return,
                        }
                    }
                    Err(RecvError::Closed) => return,
                },
                () = tokio::time::sleep_until(next_due.unwrap_or_else(Instant::now)), if next_due.is_some() => {}
                _ = resync.tick() => self.index.resync(&mut self.queue),
            }
        }
    }

    /// Subscribes to storage and rebuilds the index from a snapshot taken after subscribing,
    /// so no event is missed; `None` on shutdown.
    async fn subscribe(
        &mut self,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Option<broadcast::Receiver<Arc<Event>>> {
        let storage = self.objects.storage().clone();
        loop {
            if stop_requested(shutdown) {
                return None;
            }
            match storage.watch(storage.revision()) {
                Ok(feed) => {
                    let snapshot = storage.snapshot();
                    self.index = Index::rebuild(&snapshot, &mut self.queue);
                    self.queue.insert(Work::RoleAggregation);
                    self.queue.insert(Work::ApiServices(false));
                    self.queue.insert(Work::ServiceIpRepair);
                    self.queue.insert(Work::PolicyTypeChecking);
                    if let Some(workload) = self.workload.as_mut() {
                        crate::simulate::initial_work(&snapshot, workload);
                    }
                    self.seen = snapshot.revision;
                    for event in &feed.backlog {
                        self.apply(event);
                    }
                    tracing::debug!(revision = snapshot.revision, "controllers indexed storage");
                    return Some(feed.live);
                }
                Err(error) => {
                    tracing::warn!(%error, "controllers cannot watch storage; retrying");
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

    /// Applies every buffered event (up to [`MAX_DRAIN`]).
    fn drain(&mut self, live: &mut broadcast::Receiver<Arc<Event>>) -> Drain {
        for _ in 0..MAX_DRAIN {
            match live.try_recv() {
                Ok(event) => self.apply(&event),
                Err(TryRecvError::Empty) => return Drain::Idle,
                Err(TryRecvError::Lagged(_)) => return Drain::Lagged,
                Err(TryRecvError::Closed) => return Drain::Closed,
            }
        }
        Drain::Idle
    }

    fn apply(&mut self, event: &Event) {
        if event.revision <= self.seen {
            return;
        }
        self.seen = event.revision;
        self.index.apply(event, &mut self.queue);
        if let Some(workload) = self.workload.as_mut() {
            crate::simulate::event_work(&self.objects, event, workload);
        }
        if event.key.starts_with(&self.cluster_roles) {
            self.queue.insert(Work::RoleAggregation);
        }
        if apiservices::concerns(&event.key) {
            self.queue.insert(Work::ApiServices(false));
        }
        if policy_type_checking::concerns(&event.key) {
            self.queue.insert(Work::PolicyTypeChecking);
        }
        if let Some((key, released)) = service_ips::work_for(event) {
            self.queue.insert(Work::ServiceIps(key, released));
        }
        // Quota and budget status need a look only where such objects exist at all (most
        // events, in most clusters, touch neither: no snapshot is taken for them).
        if let Some(namespace) = KeyParts::parse(&event.key).and_then(|p| p.namespace) {
            let quotas = self.index.holds_any(&self.quotas);
            let budgets = self.index.holds_any(&self.budgets);
            if quotas || budgets {
                let snapshot = self.objects.storage().snapshot();
                if quotas && !quota::quotas_in(&snapshot, namespace).is_empty() {
                    self.queue.insert(Work::Quota(namespace.to_string()));
                }
                if budgets && !disruption::budgets_in(&snapshot, namespace).is_empty() {
                    self.queue.insert(Work::Disruption(namespace.to_string()));
                }
            }
        }
        if KeyParts::parse(&event.key).is_some_and(|p| p.is_crd()) {
            let group = meta::path(&event.object, "spec.group")
                .and_then(Value::as_str)
                .unwrap_or("");
            self.queue.insert(Work::CrdNames(group.to_string()));
        }
        if event.kind == EventType::Deleted
            && KeyParts::parse(&event.key).is_some_and(|p| p.is_crd())
        {
            // A writer racing with the deletion may register the kinds again; look once more.
            self.later.push((
                Instant::now() + CRD_GONE_RECHECK,
                Work::CrdGone(event.key.clone()),
            ));
        }
    }

    /// Whether any work is queued.
    fn has_work(&self) -> bool {
        !self.queue.is_empty() || self.workload.as_ref().is_some_and(|w| !w.is_empty())
    }

    /// Queues one work item (workload simulation work in its own ordered queue).
    fn enqueue(&mut self, work: Work) {
        match (work, self.workload.as_mut()) {
            (Work::Workload(item), Some(workload)) => {
                workload.insert(item);
            }
            (Work::Workload(_), None) => {}
            (work, _) => {
                self.queue.insert(work);
            }
        }
    }

    /// Moves retries and scheduled work that are due into the queue.
    fn move_due(&mut self, now: Instant) {
        if !self.retries.is_empty() {
            let due: Vec<Work> = self
                .retries
                .iter()
                .filter(|(_, retry)| retry.due <= now)
                .map(|(work, _)| work.clone())
                .collect();
            for work in due {
                self.enqueue(work);
            }
        }
        if !self.later.is_empty() {
            let (due, waiting): (Vec<_>, Vec<_>) =
                self.later.drain(..).partition(|(due, _)| *due <= now);
            self.later = waiting;
            for (_, work) in due {
                self.enqueue(work);
            }
        }
    }

    fn next_due(&self) -> Option<Instant> {
        self.retries
            .values()
            .map(|r| r.due)
            .chain(self.later.iter().map(|(due, _)| *due))
            .min()
    }

    /// Runs everything queued for the controllers, concurrently, beside up to
    /// [`WORKLOAD_PER_TURN`] workload simulation items one after another in their order, and
    /// records follow-ups and failures.
    async fn process_queue(&mut self) {
        let batch: Vec<Work> = self.queue.drain().collect();
        let mut workload = Vec::new();
        if let Some(pending) = self.workload.as_mut() {
            while workload.len() < WORKLOAD_PER_TURN
                && let Some(item) = pending.pop_first()
            {
                workload.push(item);
            }
        }
        let objects = &*self.objects;
        let index = &self.index;
        let cluster = &self.cluster;
        let controllers = futures::stream::iter(batch)
            .map(|work| async move {
                let outcome = execute(objects, cluster, index, &work).await;
                (work, outcome)
            })
            .buffer_unordered(CONCURRENCY)
            .collect::<Vec<(Work, Outcome)>>();
        let simulated = async move {
            let mut done = Vec::with_capacity(workload.len());
            for item in workload {
                let outcome = simulate(objects, cluster, &item).await;
                done.push((Work::Workload(item), outcome));
            }
            done
        };
        let (mut results, simulated) = futures::join!(controllers, simulated);
        results.extend(simulated);
        let now = Instant::now();
        for (work, outcome) in results {
            for follow_up in outcome.follow_ups {
                self.enqueue(follow_up);
            }
            if let Some((due, again)) = outcome.later {
                // One pending timer per item: a newer schedule replaces the older one.
                self.later.retain(|(_, w)| *w != again);
                self.later.push((due, again));
            }
            if outcome.retry {
                let attempts = self.retries.get(&work).map_or(0, |r| r.attempts) + 1;
                let delay = RETRY_BASE
                    .saturating_mul(1 << attempts.min(10))
                    .min(RETRY_MAX);
                self.retries.insert(
                    work,
                    Retry {
                        attempts,
                        due: now + delay,
                    },
                );
            } else {
                self.retries.remove(&work);
            }
        }
    }
}

/// Runs one workload simulation item; a failure is retried, except when storage is closing.
async fn simulate(
    objects: &Objects,
    cluster: &crate::simulate::Cluster,
    item: &crate::simulate::Work,
) -> Outcome {
    let mut later = None;
    let retry = match crate::simulate::execute(objects, cluster, item).await {
        Ok(again) => {
            later = again
                .and_then(|delay| Instant::now().checked_add(delay))
                .map(|due| (due, Work::Workload(item.clone())));
            false
        }
        Err(error) if error.code == 503 => {
            tracing::debug!(?item, %error, "storage closing; simulation work dropped");
            false
        }
        Err(error) if error.code == 409 => {
            tracing::debug!(?item, %error, "simulation work conflicted; retrying");
            true
        }
        Err(error) => {
            tracing::warn!(?item, %error, "simulation work failed; retrying");
            true
        }
    };
    Outcome {
        follow_ups: Vec::new(),
        retry,
        later,
    }
}

/// Runs one work item against the current state.
async fn execute(
    objects: &Objects,
    cluster: &crate::simulate::Cluster,
    index: &Index,
    work: &Work,
) -> Outcome {
    let result = match work {
        Work::Dependent(key) => collect_dependent(objects, index, key).await,
        Work::Owner(key) => finish_owner(objects, index, key).await,
        Work::Namespace(name) => clean_namespace(objects, index, name).await,
        Work::Crd(key) => clean_crd(objects, key).await,
        Work::Quota(namespace) => update_quotas(objects, namespace).await,
        Work::Disruption(namespace) => update_budgets(objects, namespace).await,
        Work::RoleAggregation => crate::auth::aggregation::reconcile(objects)
            .await
            .map(|_| Vec::new()),
        Work::ApiServices(on_start) => apiservices::reconcile(objects, *on_start)
            .await
            .map(|()| Vec::new()),
        Work::ServiceIps(key, released) => service_ips::sync_service(objects, key, released)
            .await
            .map(|()| Vec::new()),
        Work::ServiceIpRepair => service_ips::repair(objects).await.map(|()| Vec::new()),
        Work::PolicyTypeChecking => policy_type_checking::reconcile(objects)
            .await
            .map(|()| Vec::new()),
        Work::CrdGone(key) => {
            if objects.storage().get(key).is_none()
                && let Some(parts) = KeyParts::parse(key)
            {
                objects.registry().remove_crd(parts.name);
            }
            Ok(Vec::new())
        }
        Work::CrdNames(group) => accept_crd_names(objects, group).await,
        Work::Workload(item) => return simulate(objects, cluster, item).await,
    };
    match result {
        Ok(follow_ups) => Outcome {
            follow_ups,
            later: quota_recheck(objects, work),
            ..Outcome::default()
        },
        Err(error) => {
            if error.code == 409 {
                tracing::debug!(?work, %error, "controller work conflicted; retrying");
            } else {
                tracing::warn!(?work, %error, "controller work failed; retrying");
            }
            Outcome {
                retry: true,
                ..Outcome::default()
            }
        }
    }
}

/// When a namespace's quota usage changes with time alone (a pod passes its deletion time
/// plus grace and stops being charged, see [`quota::pod_charged`]), its quotas are counted
/// again then, as upstream's quota controller would on its resync.
fn quota_recheck(objects: &Objects, work: &Work) -> Option<(Instant, Work)> {
    let Work::Quota(namespace) = work else {
        return None;
    };
    let now = jiff::Timestamp::now();
    let snapshot = objects.storage().snapshot();
    let at = quota::next_usage_change(&snapshot, namespace, now)?;
    // Past the release time, not at it: a pod is released once `now` is after it.
    let wait = at.duration_since(now).unsigned_abs() + Duration::from_millis(10);
    Some((Instant::now() + wait, work.clone()))
}

/// How an owner named by an owner reference stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OwnerState {
    /// No object with that uid is stored.
    Absent,
    /// Stored, being deleted in the foreground (waiting for its dependents).
    Waiting,
    /// Stored otherwise.
    Solid,
}

fn owner_state(objects: &Objects, index: &Index, uid: &str) -> OwnerState {
    let Some(key) = index.key_of(uid) else {
        return OwnerState::Absent;
    };
    match objects.storage().get(key) {
        Some(owner) if meta::uid(&owner) == uid => {
            if meta::is_deleting(&owner) && has_finalizer(&owner, FOREGROUND_FINALIZER) {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            }
        }
        _ => OwnerState::Absent,
    }
}

/// Garbage-collects one dependent according to the state of its owners.
async fn collect_dependent(
    objects: &Objects,
    index: &Index,
    key: &str,
) -> Result<Vec<Work>, ApiError> {
    let Some(obj) = objects.storage().get(key) else {
        return Ok(Vec::new());
    };
    if meta::is_deleting(&obj) {
        return Ok(Vec::new());
    }
    let owners = owner_uids(&obj);
    if owners.is_empty() {
        return Ok(Vec::new());
    }
    let mut solid = false;
    let mut waiting = false;
    let mut stale: Vec<String> = Vec::new();
    for uid in owners {
        match owner_state(objects, index, uid) {
            OwnerState::Solid => solid = true,
            OwnerState::Waiting => {
                waiting = true;
                stale.push(uid.to_string());
            }
            OwnerState::Absent => stale.push(uid.to_string()),
        }
    }
    if solid {
        if !stale.is_empty() {
            tracing::debug!(key, owners = ?stale, "removing references to missing owners");
            remove_owner_refs(objects, key, stale).await?;
        }
    } else if waiting {
        tracing::debug!(key, "deleting dependent of a foreground deletion");
        delete_object(
            objects,
            Writer::GarbageCollector,
            key,
            &obj,
            Propagation::Foreground,
        )
        .await?;
    } else {
        tracing::debug!(key, "deleting dependent whose owners are gone");
        delete_object(
            objects,
            Writer::GarbageCollector,
            key,
            &obj,
            Propagation::Background,
        )
        .await?;
    }
    Ok(Vec::new())
}

/// Handles an owner being deleted with the `orphan` or `foregroundDeletion` finalizer.
async fn finish_owner(objects: &Objects, index: &Index, key: &str) -> Result<Vec<Work>, ApiError> {
    let Some(obj) = objects.storage().get(key) else {
        return Ok(Vec::new());
    };
    if !meta::is_deleting(&obj) {
        return Ok(Vec::new());
    }
    let uid = meta::uid(&obj).to_string();
    let dependents = index.dependents_of(&uid);
    if has_finalizer(&obj, ORPHAN_FINALIZER) {
        let results: Vec<Result<(), ApiError>> = futures::stream::iter(dependents)
            .map(|dependent| {
                let uid = uid.clone();
                async move { remove_owner_refs(objects, &dependent, vec![uid]).await }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        first_error(results)?;
        tracing::debug!(key, "orphaned dependents");
        remove_finalizer(
            objects,
            Writer::GarbageCollector,
            key,
            &uid,
            ORPHAN_FINALIZER,
        )
        .await?;
        return Ok(Vec::new());
    }
    if has_finalizer(&obj, FOREGROUND_FINALIZER) {
        let remaining: Vec<String> = dependents
            .into_iter()
            .filter(|dependent| {
                objects
                    .storage()
                    .get(dependent)
                    .is_some_and(|d| owner_uids(&d).contains(&uid.as_str()))
            })
            .collect();
        if remaining.is_empty() {
            tracing::debug!(key, "foreground deletion complete");
            remove_finalizer(
                objects,
                Writer::GarbageCollector,
                key,
                &uid,
                FOREGROUND_FINALIZER,
            )
            .await?;
            return Ok(Vec::new());
        }
        return Ok(remaining.into_iter().map(Work::Dependent).collect());
    }
    Ok(Vec::new())
}

/// Deletes the contents of a terminating namespace, then the namespace.
async fn clean_namespace(
    objects: &Objects,
    index: &Index,
    name: &str,
) -> Result<Vec<Work>, ApiError> {
    let key = object_key("", "namespaces", None, name);
    let Some(namespace) = objects.storage().get(&key) else {
        return Ok(Vec::new());
    };
    if !meta::is_deleting(&namespace) {
        return Ok(Vec::new());
    }
    // Every collection that may hold objects of this namespace: what is stored, plus what is
    // served (all versions of a resource share one prefix).
    let mut prefixes: BTreeSet<String> = index.prefixes().cloned().collect();
    for info in objects.registry().all() {
        if info.namespaced {
            prefixes.insert(collection_prefix(&info.group, &info.resource, None));
        }
    }
    let snapshot = objects.storage().snapshot();
    let mut remaining = 0usize;
    let mut targets: Vec<(String, Object)> = Vec::new();
    for prefix in prefixes {
        let in_namespace = format!("{prefix}{name}/");
        for (key, obj) in snapshot.range(&in_namespace, None) {
            remaining += 1;
            if !meta::is_deleting(obj) {
                targets.push((key.clone(), obj.clone()));
            }
        }
    }
    if remaining == 0 {
        tracing::debug!(namespace = name, "namespace is empty; finalizing");
        finalize_namespace(objects, &key, meta::uid(&namespace)).await?;
        return Ok(Vec::new());
    }
    tracing::debug!(
        namespace = name,
        remaining,
        deleting = targets.len(),
        "deleting namespace contents"
    );
    delete_all(objects, Writer::Namespace, targets).await?;
    Ok(Vec::new())
}

/// Removes the `kubernetes` spec finalizer of an empty terminating namespace through its
/// `finalize` subresource (as upstream's namespace controller); the namespace goes once
/// nothing else holds it.
async fn finalize_namespace(objects: &Objects, key: &str, uid: &str) -> Result<(), ApiError> {
    modify(
        objects,
        Writer::Namespace,
        key,
        uid,
        Part::Subresource("finalize"),
        |namespace| {
            if !meta::is_deleting(namespace) {
                return;
            }
            let finalizers = namespace
                .get_mut("spec")
                .and_then(|spec| spec.get_mut("finalizers"))
                .and_then(Value::as_array_mut);
            if let Some(finalizers) = finalizers {
                finalizers.retain(|f| f.as_str() != Some("kubernetes"));
            }
        },
    )
    .await
}

/// Upstream's naming controller for one group: every CRD of `group` still waiting for some
/// of its names (not being deleted) gets those that are free now.
async fn accept_crd_names(objects: &Objects, group: &str) -> Result<Vec<Work>, ApiError> {
    let snapshot = objects.storage().snapshot();
    let prefix = collection_prefix("apiextensions.k8s.io", "customresourcedefinitions", None);
    let waiting: Vec<(String, Object)> = snapshot
        .range(&prefix, None)
        .filter(|(_, c)| {
            meta::path(c, "spec.group").and_then(Value::as_str) == Some(group)
                && !meta::is_deleting(c)
                && crd::naming::pending(c)
        })
        .map(|(k, c)| (k.clone(), c.clone()))
        .collect();
    for (key, current) in waiting {
        // Read the group afresh: a CRD accepted in an earlier round holds its names now, so
        // two CRDs waiting for the same freed name do not both get it.
        let taken = crd::naming::Taken::in_group(&objects.storage().snapshot(), group);
        let mut next = (*current).clone();
        crd::naming::accept(&mut next, &taken);
        if next == *current {
            continue;
        }
        tracing::debug!(crd = meta::name(&current), "accepting CRD names");
        modify(
            objects,
            Writer::CrdNaming,
            &key,
            meta::uid(&current),
            Part::Status,
            move |obj| crd::naming::accept(obj, &taken),
        )
        .await?;
    }
    Ok(Vec::new())
}

/// Deletes the custom resources of a CRD being deleted, then releases the CRD.
async fn clean_crd(objects: &Objects, key: &str) -> Result<Vec<Work>, ApiError> {
    let Some(crd_obj) = objects.storage().get(key) else {
        return Ok(Vec::new());
    };
    if !meta::is_deleting(&crd_obj) || !has_finalizer(&crd_obj, crd::CLEANUP_FINALIZER) {
        return Ok(Vec::new());
    }
    let snapshot = objects.storage().snapshot();
    let mut remaining = 0usize;
    let mut targets: Vec<(String, Object)> = Vec::new();
    for prefix in crd_prefixes(&crd_obj) {
        for (key, obj) in snapshot.range(&prefix, None) {
            remaining += 1;
            if !meta::is_deleting(obj) {
                targets.push((key.clone(), obj.clone()));
            }
        }
    }
    if remaining == 0 {
        tracing::debug!(
            crd = meta::name(&crd_obj),
            "custom resources gone; releasing CRD"
        );
        remove_finalizer(
            objects,
            Writer::CrdFinalizer,
            key,
            meta::uid(&crd_obj),
            crd::CLEANUP_FINALIZER,
        )
        .await?;
        crd::unregister(objects.registry(), &crd_obj);
        return Ok(Vec::new());
    }
    tracing::debug!(
        crd = meta::name(&crd_obj),
        remaining,
        deleting = targets.len(),
        "deleting custom resources"
    );
    delete_all(objects, Writer::CrdFinalizer, targets).await?;
    Ok(Vec::new())
}

/// The first error of a batch, after every item was attempted.
fn first_error(results: Vec<Result<(), ApiError>>) -> Result<(), ApiError> {
    results
        .into_iter()
        .find_map(Result::err)
        .map_or(Ok(()), Err)
}

/// Deletes objects concurrently with background propagation.
async fn delete_all(
    objects: &Objects,
    writer: Writer,
    targets: Vec<(String, Object)>,
) -> Result<(), ApiError> {
    let results: Vec<Result<(), ApiError>> = futures::stream::iter(targets)
        .map(|(key, obj)| async move {
            delete_object(objects, writer, &key, &obj, Propagation::Background).await
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    first_error(results)
}

/// Deletes the object `obj` stored at `key` (only that incarnation: the uid is a
/// precondition) through [`Objects::delete`]; already gone counts as success.
async fn delete_object(
    objects: &Objects,
    writer: Writer,
    key: &str,
    obj: &Value,
    propagation: Propagation,
) -> Result<(), ApiError> {
    let Some(parts) = KeyParts::parse(key) else {
        return Ok(());
    };
    let uid = meta::uid(obj);
    let Some(info) = resource_info(objects, &parts) else {
        // Nothing serves this collection any more, so nothing can finalize the object either.
        tracing::debug!(key, "deleting an object of an unserved resource");
        let uid = uid.to_string();
        return objects
            .storage()
            .update(
                key.to_string(),
                Box::new(move |cur| {
                    Ok(match cur {
                        Some(cur) if meta::uid(cur) == uid => Write::Delete,
                        _ => Write::Unchanged,
                    })
                }),
            )
            .await
            .map(|_| ());
    };
    let opts = DeleteOptions {
        propagation: Some(propagation),
        precondition_uid: (!uid.is_empty()).then(|| uid.to_string()),
        ..writer.delete_options()
    };
    match objects
        .delete(&info, parts.namespace, parts.name, &opts)
        .await
    {
        Ok(_) => Ok(()),
        Err(error) if error.code == 404 => Ok(()),
        Err(error) => Err(error),
    }
}

/// Removes the owner references with these uids from the object at `key`.
async fn remove_owner_refs(
    objects: &Objects,
    key: &str,
    uids: Vec<String>,
) -> Result<(), ApiError> {
    let Some(obj) = objects.storage().get(key) else {
        return Ok(());
    };
    modify(
        objects,
        Writer::GarbageCollector,
        key,
        meta::uid(&obj),
        Part::Main,
        move |obj| {
            let refs = meta::owner_references(obj);
            let kept: Vec<Value> = refs
                .iter()
                .filter(|r| {
                    r.get("uid")
                        .and_then(Value::as_str)
                        .is_none_or(|u| !uids.iter().any(|x| x == u))
                })
                .cloned()
                .collect();
            if kept.len() == refs.len() {
                return;
            }
            if let Some(md) = meta::metadata_mut(obj) {
                if kept.is_empty() {
                    md.remove("ownerReferences");
                } else {
                    md.insert("ownerReferences".into(), Value::Array(kept));
                }
            }
        },
    )
    .await
}

/// Writes the current `status` (hard and used) of every ResourceQuota in a namespace whose
/// status is out of date.
async fn update_quotas(objects: &Objects, namespace: &str) -> Result<Vec<Work>, ApiError> {
    let snapshot = objects.storage().snapshot();
    for current in quota::quotas_in(&snapshot, namespace) {
        let status = quota::status(objects.registry(), &snapshot, &current);
        if current.get("status") == Some(&status) {
            continue;
        }
        let key = object_key("", "resourcequotas", Some(namespace), meta::name(&current));
        modify(
            objects,
            Writer::ResourceQuota,
            &key,
            meta::uid(&current),
            Part::Status,
            move |quota| {
                if let Some(map) = quota.as_object_mut() {
                    map.insert("status".into(), status.clone());
                }
            },
        )
        .await?;
    }
    Ok(Vec::new())
}

/// Writes the current `status` of every PodDisruptionBudget in a namespace whose status is
/// out of date (healthy pods, disruptions allowed, the DisruptionAllowed condition).
async fn update_budgets(objects: &Objects, namespace: &str) -> Result<Vec<Work>, ApiError> {
    let snapshot = objects.storage().snapshot();
    for current in disruption::budgets_in(&snapshot, namespace) {
        let status = disruption::status(&snapshot, &current);
        if current.get("status") == Some(&status) {
            continue;
        }
        let key = object_key(
            "policy",
            "poddisruptionbudgets",
            Some(namespace),
            meta::name(&current),
        );
        // Only over the budget the status was computed from: an eviction may have recorded a
        // disruption since (its event queues this work again).
        let seen = meta::resource_version(&current).to_string();
        modify(
            objects,
            Writer::Disruption,
            &key,
            meta::uid(&current),
            Part::Status,
            move |budget| {
                if meta::resource_version(budget) != seen {
                    return;
                }
                if let Some(map) = budget.as_object_mut() {
                    map.insert("status".into(), status.clone());
                }
            },
        )
        .await?;
    }
    Ok(Vec::new())
}

/// Removes one finalizer from the object at `key` (if it is still the object with `uid`)
/// through the write pipeline; an object being deleted whose last finalizer goes is removed.
async fn remove_finalizer(
    objects: &Objects,
    writer: Writer,
    key: &str,
    uid: &str,
    finalizer: &'static str,
) -> Result<(), ApiError> {
    modify(objects, writer, key, uid, Part::Main, move |obj| {
        let mut finalizers = meta::finalizers(obj);
        let before = finalizers.len();
        finalizers.retain(|f| f != finalizer);
        if finalizers.len() != before {
            meta::set_finalizers(obj, &finalizers);
        }
    })
    .await
}
