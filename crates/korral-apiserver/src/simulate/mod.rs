//! Workload simulation: the controllers, scheduler and kubelet a real cluster would run, so
//! workloads created against the embedded server behave as on a cluster (on for `korral up`,
//! opt-in for tests through [`crate::ServerConfig::simulation`]).
//!
//! * Deployments get ReplicaSets (`<deployment>-<pod-template-hash>`), rollouts and status
//!   ([`deployment`]); ReplicaSets keep their Pods (`<replicaset>-<suffix>`), and so do
//!   ReplicationControllers, through the same controller as upstream's ([`replicaset`]).
//! * StatefulSets get Pods `<name>-0 … <name>-N-1`, in order ([`statefulset`]).
//! * Jobs run Pods to completion, replace failed ones after a back-off and fail as upstream's
//!   do (`backoffLimit`, `activeDeadlineSeconds`, `podFailurePolicy`, `backoffLimitPerIndex`)
//!   ([`jobs`], [`job_failures`]); finished Jobs with `ttlSecondsAfterFinished`
//!   are deleted once it expires ([`ttl`]); CronJobs start Jobs on their schedule
//!   ([`cronjobs`]).
//! * DaemonSets get one Pod on the node ([`daemonset`]).
//! * HorizontalPodAutoscalers keep their target's replicas within their bounds (there is no
//!   metrics API) ([`autoscaling`]).
//! * Pods (owned or bare) are scheduled onto one simulated Node, then run and turn Ready
//!   ([`pods`]); Job Pods then succeed. As on a cluster, a Pod waits for what it references
//!   ([`pod_references`]): a missing (or deleting, or unbound `Immediate`) claim keeps it
//!   `Unschedulable`; a missing ConfigMap or Secret (or key) of a volume keeps it
//!   `ContainerCreating` (`FailedMount`), of a container's environment keeps that container in
//!   `CreateContainerConfigError`; it proceeds once the object (or key) is there. The
//!   `korral.dev/exit-code` and `korral.dev/run-seconds` annotations make any Pod's
//!   containers exit (and fail, restart or crash-loop as its `restartPolicy` says);
//!   `korral.dev/stop-seconds` makes them slow to stop on SIGTERM.
//! * Pods no kubelet will finish (bound to a missing Node, unscheduled or on an out-of-service
//!   Node while being deleted, terminated beyond the threshold) are failed and force-deleted
//!   by the pod garbage collector ([`pod_gc`]).
//! * Pods' ResourceClaims are made from their templates, allocated from the published
//!   ResourceSlices and reserved before the Pod is bound, then released and deallocated once
//!   it is done ([`resource_claims`]).
//! * Services with a selector get Endpoints ([`endpoints`]).
//! * PersistentVolumeClaims bind to fitting volumes or get one provisioned from their
//!   StorageClass; released volumes are reclaimed; protection finalizers hold claims in use
//!   ([`volumes`]).
//! * Every namespace gets the `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap
//!   ([`namespaces`]).
//! * Kubelet client CertificateSigningRequests whose requester may ask for them are approved
//!   ([`csr_approving`]); approved requests for the built-in signers get their certificates
//!   from the cluster's CA ([`csr_signing`]); old requests are deleted ([`csr_cleaner`]).
//!
//! The simulation has no loop of its own: it runs on the built-in controllers' loop
//! ([`crate::controllers`]), which watches storage once for everything. [`initial_work`] and
//! [`event_work`] turn the stored state and each storage event into [`Work`] (the object
//! itself and whatever depends on it: a ConfigMap, Secret or claim queues the Pods of its
//! namespace still waiting on it); the loop runs that work in [`Work`]'s order against the
//! current state through [`execute`], one item at a time (each item re-reads what it needs,
//! and pod IPs are handed out from what is stored), retrying failures with backoff. Writes go
//! through [`crate::objects::Objects`] so watchers see ordinary events and resourceVersions.
//! Deleting an owner removes its dependents through the garbage collector. On start every
//! stored workload is queued, so a durable server picks up where it stopped; nothing polls.

mod access;
mod allocator;
pub mod autoscaling;
mod claim;
pub mod cronjobs;
mod csr_approving;
mod csr_cleaner;
mod csr_signing;
pub mod daemonset;
pub mod deployment;
pub mod endpoints;
mod endpointslices;
pub mod events;
mod history;
pub mod job_failures;
pub mod jobs;
pub mod names;
pub mod namespaces;
pub mod pod_gc;
pub mod pod_references;
pub mod pods;
pub mod replicaset;
pub mod resource_claims;
pub mod statefulset;
pub mod ttl;
pub mod volumes;

use std::collections::BTreeSet;

use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::{Event, Snapshot, collection_prefix, object_key};

/// One unit of simulated controller work, in the order a batch runs it (owners before what
/// they own, so one pass sees the newest desired state).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Work {
    /// Register the simulated node.
    Node,
    /// Keep a namespace's default ServiceAccount and root CA ConfigMap.
    Namespace(String),
    /// Reconcile a HorizontalPodAutoscaler.
    Autoscaler(String, String),
    /// Reconcile the HorizontalPodAutoscalers of a namespace (a scalable target changed).
    Autoscalers(String),
    /// Reconcile a Deployment.
    Deployment(String, String),
    /// Reconcile a StatefulSet.
    StatefulSet(String, String),
    /// Reconcile a CronJob.
    CronJob(String, String),
    /// Reconcile a Job.
    Job(String, String),
    /// Reconcile a DaemonSet.
    DaemonSet(String, String),
    /// Reconcile a ReplicaSet.
    ReplicaSet(String, String),
    /// Reconcile a ReplicationController.
    ReplicationController(String, String),
    /// Bind, provision or release a PersistentVolumeClaim.
    Claim(String, String),
    /// Keep a PersistentVolume's phase, reclaim it, release its protection.
    Volume(String),
    /// Move a Pod along its lifecycle.
    Pod(String, String),
    /// Run the pod garbage collector's passes.
    PodGarbageCollection,
    /// Release a ResourceClaim's reservations for Pods gone or done, deallocate it.
    ResourceClaim(String, String),
    /// Reconcile the Endpoints of a Service.
    Service(String, String),
    /// Reconcile the Endpoints of every Service in a namespace.
    Services(String),
    /// Sign (or fail) a CertificateSigningRequest.
    CertificateSigningRequest(String),
}

/// Queues the work the stored state calls for when the loop (re)starts: the node, every
/// stored workload, and the Services of stored Endpoints (their Service may have gone while
/// the server was down).
pub(crate) fn initial_work(snapshot: &Snapshot, queue: &mut BTreeSet<Work>) {
    queue.insert(Work::Node);
    queue.insert(Work::PodGarbageCollection);
    let prefix = collection_prefix("", "namespaces", None);
    for (_, namespace) in snapshot.range(&prefix, None) {
        queue.insert(Work::Namespace(meta::name(namespace).to_string()));
    }
    for (group, resource) in WATCHED {
        let prefix = collection_prefix(group, resource, None);
        for (key, _) in snapshot.range(&prefix, None) {
            queue.extend(work_for(group, resource, key));
        }
    }
    let prefix = collection_prefix("", "endpoints", None);
    for (key, _) in snapshot.range(&prefix, None) {
        queue.extend(work_for("", "services", key));
    }
    let prefix = collection_prefix("", "persistentvolumes", None);
    for (_, pv) in snapshot.range(&prefix, None) {
        queue.insert(Work::Volume(meta::name(pv).to_string()));
    }
    let prefix = collection_prefix(CSR_GROUP, csr_signing::RESOURCE, None);
    for (_, csr) in snapshot.range(&prefix, None) {
        queue.insert(Work::CertificateSigningRequest(meta::name(csr).to_string()));
    }
    let prefix = collection_prefix(DRA_GROUP, "resourceclaims", None);
    for (_, claim) in snapshot.range(&prefix, None) {
        let ns = meta::namespace(claim).unwrap_or_default().to_string();
        queue.insert(Work::ResourceClaim(ns, meta::name(claim).to_string()));
    }
}

/// The group of CertificateSigningRequests.
const CSR_GROUP: &str = "certificates.k8s.io";
/// The group of the dynamic resource allocation kinds.
const DRA_GROUP: &str = "resource.k8s.io";

/// Queues every pod not bound to a node yet that `concerned` picks: a change of the node
/// (uncordoned, say) or of DRA objects may let the scheduler place them now.
fn queue_unbound_pods(
    objects: &Objects,
    queue: &mut BTreeSet<Work>,
    concerned: fn(&serde_json::Value) -> bool,
) {
    let snapshot = objects.storage().snapshot();
    let prefix = collection_prefix("", "pods", None);
    for (key, pod) in snapshot.range(&prefix, None) {
        let bound = meta::path(pod, "spec.nodeName")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|n| !n.is_empty());
        if !bound && concerned(pod) {
            queue.extend(work_for("", "pods", key));
        }
    }
}

/// Queues the work one storage event calls for: the object's own, its controller's, and for
/// Pods the Services of their namespace.
pub(crate) fn event_work(objects: &Objects, event: &Event, queue: &mut BTreeSet<Work>) {
    if event.key.starts_with("/core/namespaces/") {
        queue.insert(Work::Namespace(meta::name(&event.object).to_string()));
        return;
    }
    if event.key.starts_with("/core/nodes/") {
        queue.insert(Work::PodGarbageCollection);
        if meta::name(&event.object) == pods::NODE_NAME {
            queue.insert(Work::Node);
            queue_unbound_pods(objects, queue, |_| true);
        }
        return;
    }
    if event
        .key
        .starts_with(&collection_prefix(CSR_GROUP, csr_signing::RESOURCE, None))
    {
        queue.insert(Work::CertificateSigningRequest(
            meta::name(&event.object).to_string(),
        ));
        return;
    }
    if event.key.starts_with("/core/persistentvolumes/") {
        queue.insert(Work::Volume(meta::name(&event.object).to_string()));
        for pv in std::iter::once(&event.object).chain(event.previous.iter()) {
            if let Some(r) = pv.pointer("/spec/claimRef").filter(|r| !r.is_null()) {
                let s = |k: &str| r.get(k).and_then(serde_json::Value::as_str).unwrap_or("");
                queue.insert(Work::Claim(s("namespace").into(), s("name").into()));
            }
        }
        // A volume now free for any claim: the claims waiting for one may bind to it.
        let available = event
            .object
            .pointer("/status/phase")
            .and_then(serde_json::Value::as_str)
            == Some("Available")
            && event
                .object
                .pointer("/spec/claimRef")
                .is_none_or(serde_json::Value::is_null);
        let was_available = event.previous.as_ref().is_some_and(|p| {
            p.pointer("/status/phase")
                .and_then(serde_json::Value::as_str)
                == Some("Available")
        });
        if available && !was_available {
            for (ns, name) in volumes::unbound_claims(objects) {
                queue.insert(Work::Claim(ns, name));
            }
        }
        return;
    }
    if event.key.starts_with(&format!("/{DRA_GROUP}/")) {
        // Devices freed or published, classes or templates made: unbound Pods naming claims
        // may fit now.
        if event
            .key
            .starts_with(&collection_prefix(DRA_GROUP, "resourceclaims", None))
        {
            queue.insert(Work::ResourceClaim(
                meta::namespace(&event.object)
                    .unwrap_or_default()
                    .to_string(),
                meta::name(&event.object).to_string(),
            ));
        }
        queue_unbound_pods(objects, queue, resource_claims::has_claims);
        return;
    }
    let Some((group, resource, ns, _)) = split_key(&event.key) else {
        return;
    };
    if group == "core" {
        // What a waiting Pod names appeared or changed: it may proceed now.
        for pod in pod_references::waiting_pods(objects, event, resource, ns) {
            queue.insert(Work::Pod(ns.to_string(), pod));
        }
    }
    if group == "core" && resource == "endpoints" {
        queue.extend(work_for("", "services", &event.key));
        return;
    }
    if group == "core" && resource == "persistentvolumeclaims" {
        queue.insert(Work::Claim(
            ns.to_string(),
            meta::name(&event.object).to_string(),
        ));
        for claim in std::iter::once(&event.object).chain(event.previous.iter()) {
            let bound = meta::path(claim, "spec.volumeName").and_then(serde_json::Value::as_str);
            if let Some(pv) = bound.filter(|v| !v.is_empty()) {
                queue.insert(Work::Volume(pv.to_string()));
            }
        }
        return;
    }
    if group == "core" && resource == "pods" {
        if pod_gc::concerns(&event.object) {
            queue.insert(Work::PodGarbageCollection);
        }
        for pod in std::iter::once(&event.object).chain(event.previous.iter()) {
            for claim in volumes::claims_of(pod) {
                queue.insert(Work::Claim(ns.to_string(), claim));
            }
            for (_, claim) in resource_claims::claim_names(pod) {
                if let Some(claim) = claim {
                    queue.insert(Work::ResourceClaim(ns.to_string(), claim));
                }
            }
        }
    }
    if matches!(
        (group, resource),
        ("apps", "deployments" | "statefulsets" | "replicasets")
            | ("core", "replicationcontrollers")
    ) && !access::list(objects, "autoscaling", "horizontalpodautoscalers", ns).is_empty()
    {
        queue.insert(Work::Autoscalers(ns.to_string()));
    }
    if namespaces::maintains(group, resource, meta::name(&event.object)) {
        queue.insert(Work::Namespace(ns.to_string()));
        return;
    }
    let group = if group == "core" { "" } else { group };
    let Some(work) = work_for(group, resource, &event.key) else {
        return;
    };
    queue.insert(work);
    for obj in std::iter::once(&event.object).chain(event.previous.iter()) {
        if let Some((kind, name, _)) = access::controller_of(obj) {
            let (ns, name) = (ns.to_string(), name.to_string());
            queue.extend(match kind {
                "ReplicaSet" => Some(Work::ReplicaSet(ns, name)),
                "ReplicationController" => Some(Work::ReplicationController(ns, name)),
                "Deployment" => Some(Work::Deployment(ns, name)),
                "StatefulSet" => Some(Work::StatefulSet(ns, name)),
                "Job" => Some(Work::Job(ns, name)),
                "CronJob" => Some(Work::CronJob(ns, name)),
                "DaemonSet" => Some(Work::DaemonSet(ns, name)),
                _ => None,
            });
        }
    }
    if resource == "pods" {
        // An orphan wakes the owners that would adopt it (upstream's `addPod`/`updatePod`).
        for (kind, name) in replicaset::claimants(objects, &event.object) {
            let key = object_key(kind.group, kind.resource, Some(ns), &name);
            queue.extend(work_for(kind.group, kind.resource, &key));
        }
        queue.insert(Work::Services(ns.to_string()));
    }
}

/// The collections the simulation reacts to.
const WATCHED: [(&str, &str); 11] = [
    ("autoscaling", "horizontalpodautoscalers"),
    ("batch", "cronjobs"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("", "replicationcontrollers"),
    ("apps", "statefulsets"),
    ("batch", "jobs"),
    ("apps", "daemonsets"),
    ("", "pods"),
    ("", "services"),
    ("", "persistentvolumeclaims"),
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
        ("", "replicationcontrollers") => Work::ReplicationController(ns, name),
        ("apps", "statefulsets") => Work::StatefulSet(ns, name),
        ("batch", "jobs") => Work::Job(ns, name),
        ("batch", "cronjobs") => Work::CronJob(ns, name),
        ("autoscaling", "horizontalpodautoscalers") => Work::Autoscaler(ns, name),
        ("apps", "daemonsets") => Work::DaemonSet(ns, name),
        ("", "pods") => Work::Pod(ns, name),
        ("", "services") => Work::Service(ns, name),
        ("", "persistentvolumeclaims") => Work::Claim(ns, name),
        _ => return None,
    })
}

/// What the simulated components know of the cluster beyond its stored objects.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// The PEM CA bundle clients verify the server with (published in every namespace as
    /// `kube-root-ca.crt`); `None` for a server without TLS.
    pub ca_bundle: Option<String>,
    /// The CA approved CertificateSigningRequests get their certificates from (`None`:
    /// nothing is signed).
    pub signer: Option<std::sync::Arc<crate::signer::CertificateSigner>>,
    /// The pod garbage collector's quarantine of missing Nodes (upstream's 40 s by default).
    pub pod_gc_quarantine: pod_gc::Quarantine,
    /// The pod garbage collector's view of the Pods (so it need not list them all).
    pub pod_gc_pods: pod_gc::PodIndex,
    /// The Job controller's back-off records (upstream's `backoffRecordStore`).
    pub job_backoffs: jobs::BackoffRecords,
    /// The simulated components' event recorders.
    pub events: events::Recorder,
}

/// Runs one work item against the current state; `Some(delay)` asks to run it again after
/// `delay` (a CronJob's next scheduled time, a finished Job's TTL, the end of a failed Pod's
/// back-off or a Job's active deadline, a Pod's container exiting or restarting).
pub(crate) async fn execute(
    objects: &Objects,
    cluster: &Cluster,
    work: &Work,
) -> Result<Option<std::time::Duration>, ApiError> {
    if let Work::CronJob(ns, name) = work {
        return cronjobs::reconcile(objects, &cluster.events, ns, name).await;
    }
    if let Work::Job(ns, name) = work {
        let again =
            jobs::reconcile(objects, &cluster.job_backoffs, &cluster.events, ns, name).await?;
        let expiry = ttl::reconcile(objects, ns, name, jiff::Timestamp::now()).await?;
        return Ok(match (again, expiry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        });
    }
    if let Work::Pod(ns, name) = work {
        // Before anything that may fail: the collector runs after the Pods (`Work`'s order).
        cluster.pod_gc_pods.observe(objects, ns, name);
        jobs::release_orphan(objects, ns, name).await?;
        return pods::reconcile(objects, cluster, ns, name).await;
    }
    if let Work::PodGarbageCollection = work {
        return pod_gc::reconcile(objects, &cluster.pod_gc_quarantine, &cluster.pod_gc_pods).await;
    }
    if let Work::CertificateSigningRequest(name) = work {
        csr_approving::reconcile(objects, name).await?;
        csr_signing::reconcile(objects, cluster, name).await?;
        return csr_cleaner::reconcile(objects, name).await;
    }
    let done: Result<(), ApiError> = match work {
        Work::CronJob(..)
        | Work::Job(..)
        | Work::Pod(..)
        | Work::PodGarbageCollection
        | Work::CertificateSigningRequest(..) => Ok(()),
        Work::Node => pods::ensure_node(objects, &cluster.events).await,
        Work::Namespace(name) => namespaces::reconcile(objects, cluster, name).await,
        Work::Deployment(ns, name) => {
            deployment::reconcile(objects, &cluster.events, ns, name).await
        }
        Work::StatefulSet(ns, name) => {
            statefulset::reconcile(objects, &cluster.events, ns, name).await
        }
        Work::DaemonSet(ns, name) => daemonset::reconcile(objects, &cluster.events, ns, name).await,
        Work::ReplicaSet(ns, name) => {
            replicaset::reconcile(objects, &cluster.events, &replicaset::REPLICA_SET, ns, name)
                .await
        }
        Work::ReplicationController(ns, name) => {
            replicaset::reconcile(
                objects,
                &cluster.events,
                &replicaset::REPLICATION_CONTROLLER,
                ns,
                name,
            )
            .await
        }
        Work::Claim(ns, name) => volumes::reconcile_claim(objects, ns, name).await,
        Work::ResourceClaim(ns, name) => resource_claims::sync_claim(objects, ns, name).await,
        Work::Autoscaler(ns, name) => {
            autoscaling::reconcile(objects, &cluster.events, ns, name).await
        }
        Work::Autoscalers(ns) => {
            let mut result = Ok(());
            for hpa in access::list(objects, "autoscaling", "horizontalpodautoscalers", ns) {
                if let Err(e) =
                    autoscaling::reconcile(objects, &cluster.events, ns, meta::name(&hpa)).await
                {
                    result = Err(e);
                }
            }
            result
        }
        Work::Volume(name) => volumes::reconcile_volume(objects, name).await,
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
    };
    done.map(|()| None)
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
        assert_eq!(
            work_for(
                "",
                "replicationcontrollers",
                "/core/replicationcontrollers/ns1/rc"
            ),
            Some(Work::ReplicationController("ns1".into(), "rc".into()))
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
