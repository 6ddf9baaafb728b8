//! The simulated scheduler and kubelet: one Node, and Pods that get scheduled, start and turn
//! Ready (Job Pods then complete).
//!
//! The kubelet runs only the simulated node's Pods: a Pod bound to another node (by a client)
//! is left as it is, as no kubelet runs it.
//!
//! Every step is its own write, as upstream's scheduler and kubelet make them: a new Pod is
//! bound to the node (`spec.nodeName`, `PodScheduled`, still `Pending`); then it runs (IPs,
//! `startTime`, container statuses, all conditions `True`, `Running`); a Pod of a Job then
//! succeeds (containers terminated with exit code 0, `Succeeded`). While the node is cordoned
//! (`spec.unschedulable`), new Pods that do not tolerate `node.kubernetes.io/unschedulable`
//! stay `Pending` with upstream's `Unschedulable` condition, as on a one-node cluster, and are
//! scheduled once it is uncordoned.
//!
//! Pods wait for what they reference, as upstream's scheduler and kubelet make them (see
//! [`super::pod_references`]): a `persistentVolumeClaim` volume whose claim is missing, `Lost`,
//! being deleted or unbound while its class binds at once keeps the Pod `Unschedulable`
//! (`FailedScheduling`); a `configMap`, `secret` or projected volume whose object or key is
//! missing keeps it `Pending`, its containers `ContainerCreating` (`FailedMount`); a container
//! whose `env`/`envFrom` names a missing object or key waits in `CreateContainerConfigError`
//! (`Failed`) while the others run. `optional` references never hold a Pod; each proceeds once
//! the object or key is there.
//!
//! Containers that exit: two Pod annotations (on a Job's or Deployment's Pod template they
//! reach every Pod) make the containers of any Pod exit, and a Job's Pods fail:
//!
//! * `korral.dev/exit-code: "<int>"`: the exit code of every container, init containers
//!   included (default `0`);
//! * `korral.dev/exit-code.<container>: "<int>"`: the exit code of one container or init
//!   container (default: the Pod's `korral.dev/exit-code`); an init container that exits
//!   non-zero (by either annotation) in a Pod that never restarts fails the Pod before its
//!   containers start, so a `restartPolicy: Never` Pod with init containers and a non-zero
//!   `korral.dev/exit-code` fails at its first init container. Restartable (sidecar) init
//!   containers never fail the Pod (the kubelet restarts them);
//! * `korral.dev/run-seconds: "<int>"`: how long containers run before they exit (default
//!   `0`: at the kubelet's next step). A Job Pod without either annotation exits with `0` at
//!   once; other Pods without them run until deleted.
//!
//! On exit, each container is `terminated` (`exitCode`, reason `Completed` for 0 and `Error`
//! otherwise, `startedAt`, `finishedAt`, `containerID`). Then, as upstream's kubelet:
//! `restartPolicy: Never` (or `OnFailure` with every exit code 0) ends the Pod: `Succeeded`
//! when every container exited with 0, else `Failed`, `Ready` and `ContainersReady` `False`
//! with reason `PodCompleted` / `PodFailed`.
//! `Always` (and `OnFailure` with a non-zero code) restarts the containers: the first exit is
//! restarted at once (`restartCount` 1, `lastState.terminated`), later ones wait in
//! `CrashLoopBackOff` (`back-off 10s restarting failed container=<c> pod=<pod>_<ns>(<uid>)`,
//! doubling up to 5m0s, the Pod `Running` but not Ready with `ContainersNotReady`) and are
//! then restarted with `restartCount` one higher. Waits are timers of the controllers' loop
//! (the reconcile returns when to run again), so nothing spins. A Pod whose phase a client set
//! to `Succeeded` or `Failed` (through `/status`) is left as it is.
//!
//! Deleting a Pod bound to the simulated node is graceful, as on a cluster: the server marks
//! it (`deletionTimestamp` = now + its grace period, `deletionGracePeriodSeconds`), then the
//! kubelet stops it: its containers get SIGTERM and, being simulated applications, exit at once
//! (they do not make the Pod wait its grace period): with the container's `korral.dev/exit-code`
//! when the Pod has one, else 143 (128 + SIGTERM, reason `Error`); the Pod gets its terminal
//! phase (`Succeeded` when every container exited with 0, else `Failed`, whatever its
//! `restartPolicy`, as upstream's kubelet since v1.27), then the kubelet deletes it with grace
//! period 0 (finalizers still keep it, a Job's Pod with its tracking finalizer say). A Pod
//! bound to another node stays `Terminating` until someone deletes it with grace period 0 (the
//! pod garbage collector does once that node is gone, see [`super::pod_gc`]).
//!
//! Applications that are slow to stop: two more annotations make containers take their time
//! after SIGTERM (to test how an operator copes with slow shutdowns):
//!
//! * `korral.dev/stop-seconds: "<int>"`: how many seconds every container needs after SIGTERM
//!   to exit (default `0`: at once);
//! * `korral.dev/stop-seconds.<container>: "<int>"`: one container's (default: the Pod's
//!   `korral.dev/stop-seconds`).
//!
//! SIGTERM is sent when the Pod is deleted (its `deletionTimestamp` less its
//! `deletionGracePeriodSeconds`); the kubelet gives the containers the grace period (at least
//! 1 s, as upstream's pod workers). A container whose stop time fits exits after it, with its
//! SIGTERM exit code as above; one that needs longer is killed when the grace period ends:
//! exit code 137 (128 + SIGKILL), reason `Error`, as a runtime reports it. The Pod stays
//! `Terminating`, its status untouched, until every container stopped, then gets its terminal
//! phase (each container's `finishedAt` when it stopped) and the grace-period-0 delete as
//! above.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::Cluster;
use super::access::{self, Actor, controller_of, timestamp};
use super::events::{self, Kind as EventKind, Note, Recorder};
use super::names;
use super::pod_references;
use super::resource_claims::{self, Verdict};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;
use crate::storage::{collection_prefix, object_key};

/// The simulated node's name.
pub const NODE_NAME: &str = "korral-node";
/// The simulated node's address (pods' `hostIP`).
pub const NODE_IP: &str = "172.18.0.2";
/// The kubelet version the node reports.
const KUBELET_VERSION: &str = "v1.36.0";
/// The taint upstream puts on a cordoned node; pods must tolerate it to be scheduled there.
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";
/// The scheduler's message when the only node is cordoned (upstream's `NodeUnschedulable`
/// filter, then preemption).
const UNSCHEDULABLE_MESSAGE: &str = "0/1 nodes are available: 1 node(s) were unschedulable. \
    preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";

/// The annotation giving the exit code of a Pod's containers.
pub const EXIT_CODE_ANNOTATION: &str = "korral.dev/exit-code";
/// The prefix of the annotation giving the exit code of one container
/// (`korral.dev/exit-code.<container>`).
const CONTAINER_EXIT_CODE_PREFIX: &str = "korral.dev/exit-code.";
/// The exit code the kubelet reports for a container it could not find when the pod was
/// terminated (upstream's `ContainerStatusUnknown`: 128 + SIGKILL).
const KILLED_EXIT_CODE: i64 = 137;
/// The exit code of a container stopped by SIGTERM (128 + 15).
const SIGTERM_EXIT_CODE: i64 = 143;
/// The annotation giving how many seconds a Pod's containers run before they exit.
pub const RUN_SECONDS_ANNOTATION: &str = "korral.dev/run-seconds";
/// The annotation giving how many seconds a Pod's containers take to exit after SIGTERM.
pub const STOP_SECONDS_ANNOTATION: &str = "korral.dev/stop-seconds";
/// The prefix of the annotation giving one container's stop time
/// (`korral.dev/stop-seconds.<container>`).
const CONTAINER_STOP_SECONDS_PREFIX: &str = "korral.dev/stop-seconds.";
/// The shortest grace period the kubelet gives a deleted pod's containers before SIGKILL
/// (upstream's pod workers: "we always supply a grace period of 1").
const MIN_KILL_GRACE_SECONDS: i64 = 1;
/// The grace period of a pod that states none (the API default of
/// `terminationGracePeriodSeconds`).
const DEFAULT_GRACE_SECONDS: i64 = 30;
/// The kubelet's first back-off before restarting a crashed container.
const CONTAINER_BACKOFF: Duration = Duration::from_secs(10);
/// The kubelet's longest back-off before restarting a crashed container.
const MAX_CONTAINER_BACKOFF: Duration = Duration::from_secs(300);

/// Registers the node (when the server serves Nodes) and keeps its status Ready; its
/// registration is recorded as upstream's kubelet and node controller record it.
pub async fn ensure_node(objects: &Objects, events: &Recorder) -> Result<(), ApiError> {
    let Some(info) = objects.registry().get("", "v1", "nodes") else {
        return Ok(());
    };
    let key = object_key("", "nodes", None, NODE_NAME);
    let node = match objects.storage().get(&key) {
        Some(node) => node,
        None => {
            let node = json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": NODE_NAME,
                    "labels": {
                        "beta.kubernetes.io/arch": std::env::consts::ARCH.replace("x86_64", "amd64").replace("aarch64", "arm64"),
                        "beta.kubernetes.io/os": "linux",
                        "kubernetes.io/arch": std::env::consts::ARCH.replace("x86_64", "amd64").replace("aarch64", "arm64"),
                        "kubernetes.io/hostname": NODE_NAME,
                        "kubernetes.io/os": "linux",
                        "node-role.kubernetes.io/control-plane": "",
                    },
                },
                "spec": {"podCIDR": "10.244.0.0/16", "podCIDRs": ["10.244.0.0/16"]},
            });
            access::create(objects, access::Actor::Kubelet, &info, None, node).await?
        }
    };
    if meta::path(&node, "status.conditions").is_some() {
        return clear_not_ready_taint(objects, &info, &node).await;
    }
    let now = meta::now_rfc3339();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({
            "type": kind, "status": status,
            "lastHeartbeatTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message,
        })
    };
    let resources = json!({"cpu": "8", "ephemeral-storage": "100Gi", "hugepages-2Mi": "0", "memory": "32Gi", "pods": "110"});
    let status = json!({
        "addresses": [{"type": "InternalIP", "address": NODE_IP}, {"type": "Hostname", "address": NODE_NAME}],
        "allocatable": resources,
        "capacity": resources,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "architecture": std::env::consts::ARCH.replace("x86_64", "amd64").replace("aarch64", "arm64"),
            "bootID": meta::uid(&node),
            "containerRuntimeVersion": "korral://simulated",
            "kernelVersion": "simulated",
            "kubeProxyVersion": KUBELET_VERSION,
            "kubeletVersion": KUBELET_VERSION,
            "machineID": meta::uid(&node).replace('-', ""),
            "operatingSystem": "linux",
            "osImage": "Korral simulated node",
            "systemUUID": meta::uid(&node),
        },
    });
    access::write_status(objects, access::Actor::Kubelet, &info, &node, status).await?;
    node_registered(objects, events, &node).await;
    match objects.storage().get(&key) {
        Some(ready) => clear_not_ready_taint(objects, &info, &ready).await,
        None => Ok(()),
    }
}

/// The events of a node's registration: the kubelet's (about the node by its name, as its
/// `nodeRef` names it) and the node lifecycle controller's `RegisteredNode`.
async fn node_registered(objects: &Objects, events: &Recorder, node: &Value) {
    let mut by_name = node.clone();
    meta::set_path(&mut by_name, "metadata.uid", json!(NODE_NAME));
    let status = |condition: &str| format!("Node {NODE_NAME} status is now: {condition}");
    let kubelet = [
        ("Starting", "Starting kubelet.".to_string()),
        ("NodeHasSufficientMemory", status("NodeHasSufficientMemory")),
        ("NodeHasNoDiskPressure", status("NodeHasNoDiskPressure")),
        ("NodeHasSufficientPID", status("NodeHasSufficientPID")),
        (
            "NodeAllocatableEnforced",
            "Updated Node Allocatable limit across pods".to_string(),
        ),
        ("NodeReady", status("NodeReady")),
    ];
    for (reason, message) in kubelet {
        let note = Note::normal(reason, message);
        events.record(objects, Actor::Kubelet, &by_name, note).await;
    }
    let note = Note::normal(
        "RegisteredNode",
        format!("Node {NODE_NAME} event: Registered Node {NODE_NAME} in Controller"),
    );
    events
        .record(objects, Actor::NodeLifecycle, node, note)
        .await;
}

/// The taint TaintNodesByCondition gives a new node, until it is Ready.
const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

/// Whether `taint` is the `not-ready` NoSchedule taint.
fn is_not_ready_taint(taint: &Value) -> bool {
    taint.get("key").and_then(Value::as_str) == Some(NOT_READY_TAINT)
        && taint.get("effect").and_then(Value::as_str) == Some("NoSchedule")
}

/// Upstream's node lifecycle controller: a node whose `Ready` condition is `True` loses the
/// `not-ready:NoSchedule` taint it was created with.
async fn clear_not_ready_taint(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    node: &Value,
) -> Result<(), ApiError> {
    let ready = access::condition_status(node, "Ready") == Some("True");
    let taints = meta::path(node, "spec.taints")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if !ready || !taints.iter().any(is_not_ready_taint) {
        return Ok(());
    }
    let kept: Vec<Value> = taints
        .iter()
        .filter(|t| !is_not_ready_taint(t))
        .cloned()
        .collect();
    let mut next = node.clone();
    if let Some(spec) = next.get_mut("spec").and_then(Value::as_object_mut) {
        if kept.is_empty() {
            spec.remove("taints");
        } else {
            spec.insert("taints".into(), Value::Array(kept));
        }
    }
    access::replace(objects, access::Actor::NodeLifecycle, info, next)
        .await
        .map(|_| ())
}

/// Moves one Pod one step along its lifecycle; `Some(delay)` asks to run again after `delay`
/// (its containers exit or restart then).
pub async fn reconcile(
    objects: &Objects,
    cluster: &Cluster,
    ns: &str,
    name: &str,
) -> Result<Option<Duration>, ApiError> {
    let events = &cluster.events;
    let Some(pod) = access::get(objects, "", "pods", ns, name) else {
        return Ok(None);
    };
    let info = access::info(objects, "", "v1", "pods")?;
    if meta::is_deleting(&pod) {
        return terminate(objects, events, &info, &pod).await;
    }
    if terminal(&pod) {
        return Ok(None);
    }
    let phase = meta::path(&pod, "status.phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    let node = meta::path(&pod, "spec.nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let lookup = pod_references::lookup(objects, cluster, ns);
    if node.is_empty() {
        // The ResourceClaim controller makes the pod's template claims whatever the
        // scheduler decides.
        let pod = if resource_claims::has_claims(&pod) {
            resource_claims::sync_pod(objects, &pod).await?;
            // The claims it recorded are in the pod's status now.
            match access::get(objects, "", "pods", ns, name) {
                Some(pod) => pod,
                None => return Ok(None),
            }
        } else {
            pod
        };
        // The PreFilter plugins (volumes, then DRA) reject the pod before any node is looked
        // at.
        let claims = match pod_references::unschedulable(&pod, &lookup) {
            Some(message) => Err(message),
            None if resource_claims::has_claims(&pod) => resource_claims::prefilter(objects, &pod),
            None => Ok(Vec::new()),
        };
        let verdict = match claims {
            Err(message) => Verdict::Unschedulable(message),
            Ok(_) if node_cordoned(objects) && !tolerates_unschedulable(&pod) => {
                // The scheduler finds no node: the pod waits, as upstream's does.
                Verdict::Unschedulable(UNSCHEDULABLE_MESSAGE.to_string())
            }
            // The DRA plugin allocates and reserves the pod's claims before it is bound.
            Ok(claims) => resource_claims::schedule(objects, &pod, claims).await?,
        };
        if let Verdict::Unschedulable(message) = verdict {
            unschedulable_event(objects, events, &pod, &message).await;
            return access::update_status(objects, Actor::Scheduler, &info, &pod, move |pod| {
                mark_unschedulable_because(pod, &message);
            })
            .await
            .map(|()| None);
        }
        // The scheduler binds the pod through `pods/binding` (which also sets `PodScheduled`).
        return bind(objects, events, &info, &pod).await.map(|()| None);
    }
    if node != NODE_NAME {
        // Bound to a node no simulated kubelet runs: it stays as it is, as on a cluster.
        return Ok(None);
    }
    if phase != "Running" {
        return start(objects, events, &info, &pod, &lookup)
            .await
            .map(|()| None);
    }
    let Some(exit) = exit_of(&pod) else {
        return Ok(None);
    };
    let now = Timestamp::now();
    let step = next_step(&pod, exit, now);
    if let Step::Wait(delay) = step {
        return Ok(Some(delay));
    }
    let at = meta::now_rfc3339();
    let fallback = pod_exit_code(&pod).unwrap_or(0);
    access::update_status(objects, Actor::Kubelet, &info, &pod, move |pod| {
        // A client may have ended the pod meanwhile: its status stands.
        if !terminal(pod) {
            apply(pod, step, fallback, &at);
        }
    })
    .await?;
    container_events(objects, events, &pod).await;
    Ok(None)
}

/// The scheduler's `FailedScheduling` event for a Pod it finds no node for, recorded when
/// the Pod does not say so already (each change of verdict is one attempt: as upstream's
/// scheduling queue, the scheduler's own status write is not a reason to try again).
async fn unschedulable_event(objects: &Objects, events: &Recorder, pod: &Value, message: &str) {
    let said = meta::path(pod, "status.conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c["type"] == "PodScheduled" && c["reason"] == "Unschedulable" && c["message"] == message
        });
    if !said {
        events
            .record(
                objects,
                Actor::Scheduler,
                pod,
                Note::warning("FailedScheduling", message.to_string()),
            )
            .await;
    }
}

/// The kubelet's events for pulling a container's image before it creates the container:
/// `Pulling` and `Pulled` when it always pulls, else `Pulled` (already present).
fn pull_notes(container: &Value) -> Vec<(EventKind, &'static str, String)> {
    let image = container["image"].as_str().unwrap_or("");
    if container["imagePullPolicy"] == "Always" {
        return vec![
            (
                EventKind::Normal,
                "Pulling",
                format!("Pulling image {image:?}"),
            ),
            (
                EventKind::Normal,
                "Pulled",
                format!(
                    "Successfully pulled image {image:?} in 0s (0s including waiting). Image size: 0 bytes."
                ),
            ),
        ];
    }
    vec![(
        EventKind::Normal,
        "Pulled",
        format!("Container image {image:?} already present on machine"),
    )]
}

/// The kubelet starts a Pod bound to its node once what it references is there (see
/// [`pod_references`]). While a `configMap`, `secret` or projected volume cannot be set up,
/// the Pod waits in `ContainerCreating` (a `FailedMount` warning per volume, each time it is
/// looked at). A container whose environment names a missing object or key waits in
/// `CreateContainerConfigError` while the others run: its image is `Pulled`, then a `Failed`
/// warning says why; the Pod stays `Pending`, not Ready, until the object is there.
async fn start(
    objects: &Objects,
    events: &Recorder,
    info: &Arc<ResourceInfo>,
    pod: &Value,
    lookup: &impl pod_references::Lookup,
) -> Result<(), ApiError> {
    // Volumes are set up before the sandbox: a Pod that has its IP has them (one of its
    // containers waited for its configuration), whatever happened to their objects since.
    let sandboxed = meta::path(pod, "status.podIP").is_some_and(|ip| !ip.is_null());
    let unmountable = match sandboxed {
        true => Vec::new(),
        false => pod_references::unmountable_volumes(pod, lookup),
    };
    if !unmountable.is_empty() {
        let now = meta::now_rfc3339();
        access::update_status(objects, Actor::Kubelet, info, pod, move |pod| {
            if !terminal(pod) {
                pod_references::hold_for_volumes(pod, NODE_IP, &now);
            }
        })
        .await?;
        for (volume, error) in unmountable {
            let message = pod_references::mount_failure(&volume, &error);
            let note = Note::warning("FailedMount", message);
            events.record(objects, Actor::Kubelet, pod, note).await;
        }
        return Ok(());
    }
    // A Pod whose containers waited for their configuration keeps its sandbox's IP.
    let ip = meta::path(pod, "status.podIP")
        .and_then(Value::as_str)
        .map_or_else(|| free_pod_ip(objects), str::to_string);
    let errors = pod_references::config_errors(pod, lookup);
    let held = errors.clone();
    let now = meta::now_rfc3339();
    access::update_status(objects, Actor::Kubelet, info, pod, move |pod| {
        if terminal(pod) {
            return;
        }
        let before = pod.clone();
        run(pod, &ip);
        if !held.is_empty() && !terminal(pod) {
            pod_references::hold_for_config(pod, &before, &held, &now);
        }
    })
    .await?;
    container_events(objects, events, pod).await;
    for error in errors {
        let list = if error.init {
            "spec.initContainers"
        } else {
            "spec.containers"
        };
        let container = meta::path(pod, list)
            .and_then(Value::as_array)
            .and_then(|l| l.iter().find(|c| c["name"] == error.container.as_str()))
            .cloned()
            .unwrap_or(Value::Null);
        let path = events::container_path(error.init, &error.container);
        let failed = (
            EventKind::Warning,
            "Failed",
            format!("Error: {}", error.message),
        );
        for (kind, reason, message) in pull_notes(&container).into_iter().chain([failed]) {
            let note = Note {
                field_path: Some(&path),
                kind,
                reason,
                message,
            };
            events.record(objects, Actor::Kubelet, pod, note).await;
        }
    }
    Ok(())
}

/// The kubelet's events for what its last write did to the Pod's containers (`before` is
/// the Pod as read before it): a container started anew is `Pulled` (`Pulling` first when
/// its image is always pulled), `Created` and `Started`; one entering its restart back-off
/// is a `BackOff` warning.
async fn container_events(objects: &Objects, events: &Recorder, before: &Value) {
    let Some(after) = access::get(
        objects,
        "",
        "pods",
        meta::namespace(before).unwrap_or(""),
        meta::name(before),
    ) else {
        return;
    };
    if meta::uid(&after) != meta::uid(before) {
        return;
    }
    for (init, spec_list, status_list) in [
        (true, "spec.initContainers", "status.initContainerStatuses"),
        (false, "spec.containers", "status.containerStatuses"),
    ] {
        let status_of = |pod: &Value, name: &str| -> Option<Value> {
            meta::path(pod, status_list)
                .and_then(Value::as_array)?
                .iter()
                .find(|s| s["name"] == name)
                .cloned()
        };
        let containers: Vec<Value> = meta::path(&after, spec_list)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for container in containers {
            let name = container["name"].as_str().unwrap_or("").to_string();
            let (Some(now), was) = (status_of(&after, &name), status_of(before, &name)) else {
                continue;
            };
            let mut notes: Vec<(EventKind, &str, String)> = Vec::new();
            let id = |s: &Value| s["containerID"].as_str().map(str::to_string);
            let new_instance = id(&now).is_some() && was.as_ref().and_then(id) != id(&now);
            if new_instance {
                notes.extend(pull_notes(&container));
                notes.push((
                    EventKind::Normal,
                    "Created",
                    format!("Created container: {name}"),
                ));
                notes.push((
                    EventKind::Normal,
                    "Started",
                    format!("Started container {name}"),
                ));
            }
            let backing_off =
                |s: &Value| s.pointer("/state/waiting/reason") == Some(&json!("CrashLoopBackOff"));
            if backing_off(&now) && !was.as_ref().is_some_and(backing_off) {
                notes.push((
                    EventKind::Warning,
                    "BackOff",
                    format!(
                        "Back-off restarting failed container {name} in pod {}_{}({})",
                        meta::name(&after),
                        meta::namespace(&after).unwrap_or(""),
                        meta::uid(&after)
                    ),
                ));
            }
            let path = events::container_path(init, &name);
            for (kind, reason, message) in notes {
                let note = Note {
                    field_path: Some(&path),
                    kind,
                    reason,
                    message,
                };
                events.record(objects, Actor::Kubelet, &after, note).await;
            }
        }
    }
}

/// The kubelet of the simulated node stops a Pod being deleted, as upstream's pod worker and
/// status manager do: the containers get SIGTERM and exit (see [`stop`]), the Pod's terminal
/// phase is written, then the Pod is deleted with grace period 0 under a uid precondition
/// (finalizers still keep it; the write is then a no-op once repeated). It does not wait out
/// the grace period: simulated applications stop on SIGTERM, at once unless they take a stop
/// time (`korral.dev/stop-seconds`): then nothing is written until every container stopped,
/// and `Some(delay)` asks to look again then. A Pod bound to another node stays
/// `Terminating`, as on a cluster whose node has no kubelet; an unbound Pod being deleted
/// (finalizers keep it) is no kubelet's (the pod garbage collector ends both).
async fn terminate(
    objects: &Objects,
    events: &Recorder,
    info: &Arc<ResourceInfo>,
    pod: &Value,
) -> Result<Option<Duration>, ApiError> {
    let node = meta::path(pod, "spec.nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node != NODE_NAME {
        return Ok(None);
    }
    if !terminal(pod) {
        let wait = stopping_for(pod, Timestamp::now());
        if !wait.is_zero() {
            return Ok(Some(wait));
        }
        for (init, list) in [
            (true, "status.initContainerStatuses"),
            (false, "status.containerStatuses"),
        ] {
            let running = meta::path(pod, list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|s| s.pointer("/state/running").is_some());
            for status in running {
                let name = status["name"].as_str().unwrap_or("");
                events
                    .record(
                        objects,
                        Actor::Kubelet,
                        pod,
                        Note::normal("Killing", format!("Stopping container {name}"))
                            .at(&events::container_path(init, name)),
                    )
                    .await;
            }
        }
        let at = meta::now_rfc3339();
        access::update_status(objects, Actor::Kubelet, info, pod, move |pod| {
            if !terminal(pod) {
                stop(pod, &at);
            }
        })
        .await?;
    }
    if already_deleted_at_once(pod) {
        return Ok(None);
    }
    access::delete_at_once(objects, Actor::Kubelet, info, pod)
        .await
        .map(|()| None)
}

/// Whether a pod's deletion has grace period 0 already (the kubelet's delete was made and
/// finalizers keep the pod).
pub(crate) fn already_deleted_at_once(pod: &Value) -> bool {
    meta::path(pod, "metadata.deletionGracePeriodSeconds").and_then(Value::as_i64) == Some(0)
}

/// Whether a pod's phase is `Succeeded` or `Failed` (set by the kubelet or a client).
pub fn terminal(pod: &Value) -> bool {
    matches!(
        meta::path(pod, "status.phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// How a pod's containers exit: with `code`, `after` they started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Exit {
    code: i64,
    after: Duration,
}

/// An integer annotation of a pod (malformed values count as absent).
fn int_annotation(pod: &Value, key: &str) -> Option<i64> {
    let value = meta::path(pod, "metadata.annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)?;
    let parsed = value.trim().parse::<i64>().ok();
    if parsed.is_none() {
        tracing::debug!(pod = %meta::name(pod), key, value, "ignoring a malformed annotation");
    }
    parsed
}

/// An exit code annotation (a 32-bit integer, as exit codes are).
fn exit_code_annotation(pod: &Value, key: &str) -> Option<i64> {
    int_annotation(pod, key).filter(|c| i32::try_from(*c).is_ok())
}

/// The pod-wide exit code (`korral.dev/exit-code`).
fn pod_exit_code(pod: &Value) -> Option<i64> {
    exit_code_annotation(pod, EXIT_CODE_ANNOTATION)
}

/// The exit code of container `name`: its own annotation, else `fallback`.
fn container_exit_code(pod: &Value, name: &str, fallback: i64) -> i64 {
    exit_code_annotation(pod, &format!("{CONTAINER_EXIT_CODE_PREFIX}{name}")).unwrap_or(fallback)
}

/// The names of the containers in `spec.<list>`.
fn container_names(pod: &Value, list: &str) -> Vec<String> {
    meta::path(pod, &format!("spec.{list}"))
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a pod has a well-formed per-container exit code annotation.
fn has_container_exit_code(pod: &Value) -> bool {
    meta::path(pod, "metadata.annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| {
            a.keys()
                .filter(|k| k.starts_with(CONTAINER_EXIT_CODE_PREFIX))
                .any(|k| exit_code_annotation(pod, k).is_some())
        })
}

/// The exit of a pod's containers: from its annotations, `0` at once for a Job's pod, none
/// for other pods without them (malformed values count as absent). Its code is the first
/// non-zero code of the containers (the one the restart policy looks at), else `0`.
fn exit_of(pod: &Value) -> Option<Exit> {
    let code = pod_exit_code(pod);
    let seconds = int_annotation(pod, RUN_SECONDS_ANNOTATION).and_then(|s| u32::try_from(s).ok());
    let job_pod = controller_of(pod).is_some_and(|(kind, _, _)| kind == "Job");
    if !job_pod && code.is_none() && seconds.is_none() && !has_container_exit_code(pod) {
        return None;
    }
    let fallback = code.unwrap_or(0);
    let names = container_names(pod, "containers");
    let decisive = names
        .iter()
        .map(|n| container_exit_code(pod, n, fallback))
        .find(|c| *c != 0)
        .unwrap_or(if names.is_empty() { fallback } else { 0 });
    Some(Exit {
        code: decisive,
        after: Duration::from_secs(u64::from(seconds.unwrap_or(0))),
    })
}

/// The kubelet's next step for a running pod whose containers exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Nothing until `delay` passed.
    Wait(Duration),
    /// The containers exit and the pod ends (`Succeeded` or `Failed`).
    End,
    /// The containers exit and are restarted (at once the first time, else after a back-off
    /// in `CrashLoopBackOff`).
    Crash,
    /// The back-off is over: the containers run again.
    Restart,
}

/// The kubelet's back-off after a container's `restarts` restarts (10s, doubling, at most
/// 5 minutes).
fn container_backoff(restarts: i64) -> Duration {
    let restarts = usize::try_from(restarts.max(1)).unwrap_or(usize::MAX);
    super::job_failures::backoff(restarts, CONTAINER_BACKOFF, MAX_CONTAINER_BACKOFF)
}

/// How long from `now` until `since + delay` (zero once passed).
fn until(since: Option<Timestamp>, delay: Duration, now: Timestamp) -> Duration {
    let Some(since) = since else {
        return Duration::ZERO;
    };
    let elapsed = now.duration_since(since);
    if elapsed.is_negative() {
        return delay;
    }
    delay.saturating_sub(elapsed.unsigned_abs())
}

/// What the kubelet does next with a running pod whose containers exit as `exit` says.
fn next_step(pod: &Value, exit: Exit, now: Timestamp) -> Step {
    let statuses = meta::path(pod, "status.containerStatuses")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if let Some(waiting) = statuses.iter().find(|s| {
        s.pointer("/state/waiting/reason").and_then(Value::as_str) == Some("CrashLoopBackOff")
    }) {
        let restarts = waiting
            .get("restartCount")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let finished = timestamp(waiting.pointer("/lastState/terminated/finishedAt"));
        return match until(finished, container_backoff(restarts), now) {
            d if d.is_zero() => Step::Restart,
            d => Step::Wait(d),
        };
    }
    let started = statuses
        .iter()
        .filter_map(|s| timestamp(s.pointer("/state/running/startedAt")))
        .min();
    let wait = until(started, exit.after, now);
    if !wait.is_zero() {
        return Step::Wait(wait);
    }
    let policy = meta::path(pod, "spec.restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always");
    match policy {
        "Never" => Step::End,
        "OnFailure" if exit.code == 0 => Step::End,
        _ => Step::Crash,
    }
}

/// Applies a kubelet step (not [`Step::Wait`]) to a running pod, at `now`.
fn apply(pod: &mut Value, step: Step, code: i64, now: &str) {
    match step {
        Step::Wait(_) => {}
        Step::End => end(pod, code, now),
        Step::Crash => crash(pod, code, now),
        Step::Restart => restart(pod, now),
    }
}

/// `state.terminated` of a container that ran until `now` and exited with `code`.
fn terminated(status: &Value, code: i64, now: &str) -> Value {
    let started = status
        .pointer("/state/running/startedAt")
        .cloned()
        .unwrap_or_else(|| json!(now));
    let reason = if code == 0 { "Completed" } else { "Error" };
    json!({"terminated": {
        "exitCode": code, "reason": reason, "startedAt": started, "finishedAt": now,
        "containerID": status.get("containerID").cloned().unwrap_or(Value::Null),
    }})
}

/// Sets the pod's `Ready` and `ContainersReady` conditions (and `PodReadyToStartContainers`
/// when given), stamping `lastTransitionTime` on a change of status.
fn set_readiness(
    status: &mut Value,
    ready: &str,
    reason: Option<&str>,
    message: Option<&str>,
    sandbox: Option<&str>,
    now: &str,
) {
    let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) else {
        return;
    };
    for c in conditions.iter_mut() {
        let kind = c
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let wanted = match kind.as_str() {
            "Ready" | "ContainersReady" => ready,
            "PodReadyToStartContainers" => match sandbox {
                Some(s) => s,
                None => continue,
            },
            _ => continue,
        };
        if c.get("status").and_then(Value::as_str) != Some(wanted) {
            c["status"] = json!(wanted);
            c["lastTransitionTime"] = json!(now);
        }
        let Some(map) = c.as_object_mut() else {
            continue;
        };
        let (reason, message) = match kind.as_str() {
            "PodReadyToStartContainers" => (None, None),
            _ => (reason, message),
        };
        match reason {
            Some(r) => map.insert("reason".into(), json!(r)),
            None => map.remove("reason"),
        };
        match message {
            Some(m) => map.insert("message".into(), json!(m)),
            None => map.remove("message"),
        };
    }
}

/// The exit code of each container status of `list`: its own annotation, else `fallback`.
fn codes_of(pod: &Value, list: &str, fallback: i64) -> Vec<i64> {
    meta::path(pod, &format!("status.{list}"))
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .map(|s| {
                    let name = s.get("name").and_then(Value::as_str).unwrap_or("");
                    container_exit_code(pod, name, fallback)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The pod's containers exit, each with its code (its annotation, else `fallback`), and the
/// pod ends: `Succeeded` when all exited with 0, else `Failed`.
fn end(pod: &mut Value, fallback: i64, now: &str) {
    let codes = codes_of(pod, "containerStatuses", fallback);
    finish(pod, |i, _| codes.get(i).copied().unwrap_or(fallback), now);
}

/// The exit code of container `name` stopped by SIGTERM: its `korral.dev/exit-code` (its own,
/// else the Pod's) when given, else 143 (128 + SIGTERM: what a runtime reports for a process
/// the signal ended, as most applications do on SIGTERM).
fn sigterm_exit_code(pod: &Value, name: &str) -> i64 {
    container_exit_code(pod, name, pod_exit_code(pod).unwrap_or(SIGTERM_EXIT_CODE))
}

/// How many seconds container `name` takes to exit after SIGTERM: its
/// `korral.dev/stop-seconds.<name>`, else the pod's `korral.dev/stop-seconds`; `None` (at once)
/// without either (malformed or negative values count as absent).
fn stop_seconds(pod: &Value, name: &str) -> Option<u32> {
    let own = int_annotation(pod, &format!("{CONTAINER_STOP_SECONDS_PREFIX}{name}"))
        .and_then(|s| u32::try_from(s).ok());
    own.or_else(|| int_annotation(pod, STOP_SECONDS_ANNOTATION).and_then(|s| u32::try_from(s).ok()))
}

/// When a pod being deleted got SIGTERM (its `deletionTimestamp` less its
/// `deletionGracePeriodSeconds`: when the deletion was asked for) and how long its containers
/// have before SIGKILL (that grace period, at least [`MIN_KILL_GRACE_SECONDS`]); `None` for a
/// pod not being deleted.
fn kill_window(pod: &Value) -> Option<(Timestamp, Duration)> {
    let deletion = timestamp(meta::path(pod, "metadata.deletionTimestamp"))?;
    let grace = meta::path(pod, "metadata.deletionGracePeriodSeconds")
        .or_else(|| meta::path(pod, "spec.terminationGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_GRACE_SECONDS)
        .max(0);
    let signalled = deletion
        .checked_sub(jiff::SignedDuration::from_secs(grace))
        .unwrap_or(deletion);
    let window = u64::try_from(grace.max(MIN_KILL_GRACE_SECONDS)).unwrap_or(1);
    Some((signalled, Duration::from_secs(window)))
}

/// How running container `name` of a pod being deleted exits: its exit code and, when it takes
/// a stop time, when it exits. Within the kill window it exits after its stop time with its
/// SIGTERM code ([`sigterm_exit_code`]); past it, it is killed when the window ends (137,
/// 128 + SIGKILL). Without a stop time it exits at the kubelet's step (`None`).
fn sigterm_exit(pod: &Value, name: &str) -> (i64, Option<Timestamp>) {
    let code = sigterm_exit_code(pod, name);
    let (Some(seconds), Some((signalled, window))) = (stop_seconds(pod, name), kill_window(pod))
    else {
        return (code, None);
    };
    let stop = Duration::from_secs(u64::from(seconds));
    let (code, after) = if stop > window {
        (KILLED_EXIT_CODE, window)
    } else {
        (code, stop)
    };
    let at = jiff::SignedDuration::try_from(after)
        .ok()
        .and_then(|d| signalled.checked_add(d).ok());
    (code, at)
}

/// How long until every running container of a pod being deleted has exited after SIGTERM
/// (zero once they all have: the kubelet writes the stopped pod then).
fn stopping_for(pod: &Value, now: Timestamp) -> Duration {
    meta::path(pod, "status.containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|s| s.pointer("/state/running").is_some())
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter_map(|name| sigterm_exit(pod, name).1)
        .map(|at| {
            if at > now {
                at.duration_since(now).unsigned_abs()
            } else {
                Duration::ZERO
            }
        })
        .max()
        .unwrap_or(Duration::ZERO)
}

/// A timestamp as the kubelet writes it (RFC 3339, whole seconds).
fn rfc3339(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The kubelet stops a pod being deleted (upstream's `killPod`, then `TerminatePod` and
/// `getPhase` of a terminal pod): a running container exits on SIGTERM (see
/// [`sigterm_exit`]), at `now` or, when it takes a stop time, when it stopped; a container
/// waiting to restart keeps its last exit; one that never ran is `ContainerStatusUnknown` with
/// exit code 137. The pod then ends whatever its restart policy: `Succeeded` when every
/// container exited with 0, else `Failed` (`Failed` too when no container ran).
fn stop(pod: &mut Value, now: &str) {
    let names = container_names(pod, "containers");
    let exits: Vec<(i64, Option<Timestamp>)> = names.iter().map(|n| sigterm_exit(pod, n)).collect();
    let exit_of = |s: &Value| {
        let name = s.get("name").and_then(Value::as_str).unwrap_or("");
        let (code, at) = names
            .iter()
            .position(|n| n == name)
            .and_then(|i| exits.get(i).copied())
            .unwrap_or((SIGTERM_EXIT_CODE, None));
        (code, at.map_or_else(|| now.to_string(), rfc3339))
    };
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    let status = root.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let mut ran = false;
    if let Some(statuses) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for s in statuses.iter_mut() {
            if s.pointer("/state/terminated").is_none() {
                s["state"] = if s.pointer("/state/running").is_some() {
                    let (code, at) = exit_of(s);
                    terminated(s, code, &at)
                } else if let Some(last) = s.pointer("/lastState/terminated").cloned() {
                    json!({"terminated": last})
                } else {
                    json!({"terminated": {
                        "exitCode": KILLED_EXIT_CODE, "reason": "ContainerStatusUnknown",
                        "message": "The container could not be located when the pod was terminated",
                        "startedAt": null, "finishedAt": null,
                    }})
                };
            }
            ran = true;
            s["ready"] = json!(false);
            s["started"] = json!(false);
        }
    }
    let failed = !ran
        || status
            .get("containerStatuses")
            .and_then(Value::as_array)
            .is_some_and(|l| {
                l.iter().any(|s| {
                    s.pointer("/state/terminated/exitCode")
                        .and_then(Value::as_i64)
                        != Some(0)
                })
            });
    end_phase(status, failed, now);
}

/// Writes a stopped pod's terminal phase (`Failed` when a container failed, else
/// `Succeeded`), its readiness conditions and drops its IPs.
fn end_phase(status: &mut Value, failed: bool, now: &str) {
    let (phase, reason) = if failed {
        ("Failed", "PodFailed")
    } else {
        ("Succeeded", "PodCompleted")
    };
    status["phase"] = json!(phase);
    set_readiness(status, "False", Some(reason), None, Some("False"), now);
    if let Some(map) = status.as_object_mut() {
        map.remove("podIP");
        map.remove("podIPs");
    }
}

/// Ends the pod, the container status at index `i` terminated with `code(i, status)` (a
/// container terminated already keeps its state).
fn finish(pod: &mut Value, code: impl Fn(usize, &Value) -> i64, now: &str) {
    let Some(status) = pod.get_mut("status") else {
        return;
    };
    let mut failed = false;
    if let Some(statuses) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for (i, s) in statuses.iter_mut().enumerate() {
            let code = code(i, s);
            failed |= code != 0;
            if s.pointer("/state/terminated").is_none() {
                s["state"] = terminated(s, code, now);
            }
            s["ready"] = json!(false);
            s["started"] = json!(false);
        }
    }
    end_phase(status, failed, now);
}

/// The pod's containers exit, each with its code (its annotation, else `fallback`), and are
/// restarted: the first time at once, later after a back-off in `CrashLoopBackOff` (the pod
/// stays `Running`, not Ready). Under `restartPolicy: OnFailure` a container that exits with
/// 0 is not restarted: it stays `Completed` while the others restart.
fn crash(pod: &mut Value, fallback: i64, now: &str) {
    let codes = codes_of(pod, "containerStatuses", fallback);
    let restart_succeeded =
        meta::path(pod, "spec.restartPolicy").and_then(Value::as_str) != Some("OnFailure");
    let who = format!(
        "{}_{}({})",
        meta::name(pod),
        meta::namespace(pod).unwrap_or(""),
        meta::uid(pod)
    );
    let Some(status) = pod.get_mut("status") else {
        return;
    };
    let Some(statuses) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for (i, s) in statuses.iter_mut().enumerate() {
        if s.pointer("/state/terminated").is_some() {
            // Completed earlier (OnFailure): it does not run again.
            continue;
        }
        let code = codes.get(i).copied().unwrap_or(fallback);
        if code == 0 && !restart_succeeded {
            s["state"] = terminated(s, 0, now);
            s["ready"] = json!(false);
            s["started"] = json!(false);
            continue;
        }
        let restarts = s.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
        s["lastState"] = terminated(s, code, now);
        if restarts == 0 {
            s["restartCount"] = json!(1);
            s["containerID"] = json!(format!("containerd://{}", names::random_container_id()));
            s["state"] = json!({"running": {"startedAt": now}});
            continue;
        }
        let container = s
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let message = format!(
            "back-off {} restarting failed container={container} pod={who}",
            crate::go_duration::format_std(container_backoff(restarts))
        );
        s["state"] = json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}});
        s["ready"] = json!(false);
        s["started"] = json!(false);
    }
    refresh_readiness(status, now);
}

/// `Ready` and `ContainersReady` of a running pod from its containers: `True` when all are
/// ready, else `False` with reason `ContainersNotReady` naming the unready ones.
fn refresh_readiness(status: &mut Value, now: &str) {
    let unready: Vec<&str> = status
        .get("containerStatuses")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter(|s| s.get("ready").and_then(Value::as_bool) != Some(true))
                .filter_map(|s| s.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if unready.is_empty() {
        set_readiness(status, "True", None, None, None, now);
        return;
    }
    let message = format!("containers with unready status: [{}]", unready.join(" "));
    set_readiness(
        status,
        "False",
        Some("ContainersNotReady"),
        Some(&message),
        None,
        now,
    );
}

/// The back-off is over: the pod's waiting containers run again, one restart more.
fn restart(pod: &mut Value, now: &str) {
    let Some(status) = pod.get_mut("status") else {
        return;
    };
    if let Some(statuses) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for s in statuses.iter_mut() {
            if s.pointer("/state/waiting").is_none() {
                continue;
            }
            let restarts = s.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
            s["restartCount"] = json!(restarts + 1);
            s["containerID"] = json!(format!("containerd://{}", names::random_container_id()));
            s["state"] = json!({"running": {"startedAt": now}});
            s["ready"] = json!(true);
            s["started"] = json!(true);
        }
    }
    refresh_readiness(status, now);
}

/// The scheduler's binding of a pod to the simulated node; a pod bound meanwhile (by the
/// scheduler or a client) counts as done.
async fn bind(
    objects: &Objects,
    events: &Recorder,
    info: &Arc<ResourceInfo>,
    pod: &Value,
) -> Result<(), ApiError> {
    let Some(action) = crate::kinds::actions::find(info, Some("binding")) else {
        return Ok(());
    };
    let binding = json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": meta::name(pod), "namespace": meta::namespace(pod), "uid": meta::uid(pod)},
        "target": {"apiVersion": "v1", "kind": "Node", "name": NODE_NAME},
    });
    let answer = crate::kinds::actions::serve(
        objects,
        info,
        action,
        meta::namespace(pod),
        meta::name(pod),
        binding,
        false,
    )
    .await;
    match answer {
        Ok(_) => {
            let message = format!(
                "Successfully assigned {}/{} to {NODE_NAME}",
                meta::namespace(pod).unwrap_or(""),
                meta::name(pod)
            );
            events
                .record(
                    objects,
                    Actor::Scheduler,
                    pod,
                    Note::normal("Scheduled", message),
                )
                .await;
            Ok(())
        }
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether the simulated node is cordoned (`spec.unschedulable: true`).
fn node_cordoned(objects: &Objects) -> bool {
    objects
        .storage()
        .get(&object_key("", "nodes", None, NODE_NAME))
        .is_some_and(|node| meta::path(&node, "spec.unschedulable") == Some(&Value::Bool(true)))
}

/// Whether one of the pod's tolerations tolerates the `NoSchedule` taint of a cordoned node
/// (upstream's `Toleration.ToleratesTaint`: matching effect or none, matching key or an empty
/// key with `Exists`, and `Exists` or an equal (empty) value).
fn tolerates_unschedulable(pod: &Value) -> bool {
    let field = |t: &Value, name: &str| {
        t.get(name)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    meta::path(pod, "spec.tolerations")
        .and_then(Value::as_array)
        .is_some_and(|tolerations| {
            tolerations.iter().any(|t| {
                let (effect, key) = (field(t, "effect"), field(t, "key"));
                let exists = field(t, "operator") == "Exists";
                (effect.is_empty() || effect == "NoSchedule")
                    && (key == UNSCHEDULABLE_TAINT || (key.is_empty() && exists))
                    && (exists || field(t, "value").is_empty())
            })
        })
}

/// Marks a pod `Pending` with the scheduler's `Unschedulable` condition saying `message`.
fn mark_unschedulable_because(pod: &mut Value, message: &str) {
    let mut conditions: Vec<Value> = meta::path(pod, "status.conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    access::set_condition(
        &mut conditions,
        json!({"type": "PodScheduled", "status": "False", "lastProbeTime": null,
            "reason": "Unschedulable", "message": message}),
        &["lastTransitionTime"],
    );
    meta::set_path(pod, "status.phase", json!("Pending"));
    meta::set_path(pod, "status.conditions", Value::Array(conditions));
}

/// The lowest pod IP (10.244.0.2 onwards) no stored pod holds.
fn free_pod_ip(objects: &Objects) -> String {
    let snapshot = objects.storage().snapshot();
    let prefix = collection_prefix("", "pods", None);
    let used: HashSet<&str> = snapshot
        .range(&prefix, None)
        .filter_map(|(_, p)| meta::path(p, "status.podIP").and_then(Value::as_str))
        .collect();
    for n in 2u32..65_534 {
        let ip = format!("10.244.{}.{}", n / 256, n % 256);
        if n % 256 != 0 && n % 256 != 255 && !used.contains(ip.as_str()) {
            return ip;
        }
    }
    "10.244.255.254".to_string()
}

fn image_of(container: &Value) -> String {
    container
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The image reference as a runtime reports it (`docker.io/library/nginx:latest`).
fn full_image(image: &str) -> String {
    let (name, tag) = match image.rsplit_once(':') {
        Some((n, t)) if !t.contains('/') => (n.to_string(), t.to_string()),
        _ => (image.to_string(), "latest".to_string()),
    };
    let name = if name.contains('/') {
        let first = name.split('/').next().unwrap_or("");
        if first.contains('.') || first.contains(':') || first == "localhost" {
            name
        } else {
            format!("docker.io/{name}")
        }
    } else {
        format!("docker.io/library/{name}")
    };
    format!("{name}:{tag}")
}

fn image_id(image: &str) -> String {
    let full = full_image(image);
    let repo = full.rsplit_once(':').map_or(full.as_str(), |(r, _)| r);
    format!("{repo}@sha256:{}", names::fake_digest(&full))
}

/// The kubelet starts the pod: running containers, IPs, every condition `True`.
fn run(pod: &mut Value, ip: &str) {
    let now = meta::now_rfc3339();
    let containers: Vec<Value> = meta::path(pod, "spec.containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let init_containers: Vec<Value> = meta::path(pod, "spec.initContainers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            json!({
                "name": c.get("name").cloned().unwrap_or(Value::Null),
                "image": full_image(&image_of(c)),
                "imageID": image_id(&image_of(c)),
                "containerID": format!("containerd://{}", names::random_container_id()),
                "ready": true,
                "started": true,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
                "lastState": {},
            })
        })
        .collect();
    let init_statuses: Vec<Value> = init_containers
        .iter()
        .map(|c| {
            json!({
                "name": c.get("name").cloned().unwrap_or(Value::Null),
                "image": full_image(&image_of(c)),
                "imageID": image_id(&image_of(c)),
                "containerID": format!("containerd://{}", names::random_container_id()),
                "ready": true,
                "started": false,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}},
                "lastState": {},
            })
        })
        .collect();
    // Containers already running (their Pod waited for another's configuration) and init
    // containers already done keep their status.
    let kept = |list: &str, fresh: Vec<Value>, done: &str| -> Vec<Value> {
        let old = meta::path(pod, list).and_then(Value::as_array);
        fresh
            .into_iter()
            .map(|s| {
                old.and_then(|l| l.iter().find(|o| o["name"] == s["name"]))
                    .filter(|o| o.pointer(done).is_some())
                    .filter(|o| {
                        o.pointer("/state/terminated/exitCode")
                            .is_none_or(|c| c == 0)
                    })
                    .cloned()
                    .unwrap_or(s)
            })
            .collect()
    };
    let statuses = kept("status.containerStatuses", statuses, "/state/running");
    let init_statuses = kept(
        "status.initContainerStatuses",
        init_statuses,
        "/state/terminated",
    );
    let scheduled_at = meta::path(pod, "status.conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "PodScheduled"))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let cond = |kind: &str, at: &Value| json!({"type": kind, "status": "True", "lastProbeTime": null, "lastTransitionTime": at});
    let now_v = json!(now);
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    status["phase"] = json!("Running");
    status["conditions"] = json!([
        cond("PodReadyToStartContainers", &now_v),
        cond("Initialized", &now_v),
        cond("Ready", &now_v),
        cond("ContainersReady", &now_v),
        cond("PodScheduled", &scheduled_at),
    ]);
    status["hostIP"] = json!(NODE_IP);
    status["hostIPs"] = json!([{"ip": NODE_IP}]);
    status["podIP"] = json!(ip);
    status["podIPs"] = json!([{"ip": ip}]);
    if status.get("startTime").is_none() {
        status["startTime"] = now_v;
    }
    status["containerStatuses"] = Value::Array(statuses);
    if !init_statuses.is_empty() {
        status["initContainerStatuses"] = Value::Array(init_statuses);
    }
    if status.get("qosClass").is_none() {
        status["qosClass"] = json!("BestEffort");
    }
    if let Some(map) = pod.as_object_mut() {
        map.insert("status".into(), status);
    }
    let never = meta::path(pod, "spec.restartPolicy").and_then(Value::as_str) == Some("Never");
    let failing_init = failing_init_container(pod);
    if let (true, Some((index, code))) = (never, failing_init) {
        fail_init(pod, index, code, &now);
    }
}

/// The first init container that exits non-zero, by index, with its code: its own
/// `korral.dev/exit-code.<name>`, else the Pod's `korral.dev/exit-code` (as for every other
/// container). Restartable (sidecar) init containers are left out: the kubelet restarts them
/// whatever the Pod's `restartPolicy`, so they never fail the Pod.
fn failing_init_container(pod: &Value) -> Option<(usize, i64)> {
    let fallback = pod_exit_code(pod).unwrap_or(0);
    meta::path(pod, "spec.initContainers")
        .and_then(Value::as_array)?
        .iter()
        .enumerate()
        .filter(|(_, c)| c.get("restartPolicy").and_then(Value::as_str) != Some("Always"))
        .map(|(i, c)| {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            (i, container_exit_code(pod, name, fallback))
        })
        .find(|(_, code)| *code != 0)
}

/// Init container `index` exited with `code` in a pod that never restarts: the init
/// containers after it and the containers never start, and the pod ends `Failed` (as
/// upstream's kubelet reports it).
fn fail_init(pod: &mut Value, index: usize, code: i64, now: &str) {
    let Some(status) = pod.get_mut("status") else {
        return;
    };
    let initializing = json!({"waiting": {"reason": "PodInitializing"}});
    let mut incomplete = Vec::new();
    if let Some(statuses) = status
        .get_mut("initContainerStatuses")
        .and_then(Value::as_array_mut)
    {
        for (i, s) in statuses.iter_mut().enumerate() {
            if i < index {
                continue;
            }
            let name = s.get("name").and_then(Value::as_str).unwrap_or("");
            incomplete.push(name.to_string());
            s["ready"] = json!(false);
            if i == index {
                let state = terminated(s, code, now);
                s["state"] = state;
            } else {
                s["state"] = initializing.clone();
                if let Some(map) = s.as_object_mut() {
                    map.remove("containerID");
                }
            }
        }
    }
    if let Some(statuses) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for s in statuses.iter_mut() {
            s["state"] = initializing.clone();
            s["ready"] = json!(false);
            s["started"] = json!(false);
            if let Some(map) = s.as_object_mut() {
                map.remove("containerID");
            }
        }
    }
    status["phase"] = json!("Failed");
    set_readiness(status, "False", Some("PodFailed"), None, Some("False"), now);
    if let Some(c) = status
        .get_mut("conditions")
        .and_then(Value::as_array_mut)
        .and_then(|c| c.iter_mut().find(|c| c["type"] == "Initialized"))
    {
        c["status"] = json!("False");
        c["reason"] = json!("ContainersNotInitialized");
        c["message"] = json!(format!(
            "containers with incomplete status: [{}]",
            incomplete.join(" ")
        ));
    }
    if let Some(map) = status.as_object_mut() {
        map.remove("podIP");
        map.remove("podIPs");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_reported_fully_qualified() {
        assert_eq!(full_image("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(
            full_image("memcached:1.6"),
            "docker.io/library/memcached:1.6"
        );
        assert_eq!(
            full_image("bitnami/redis"),
            "docker.io/bitnami/redis:latest"
        );
        assert_eq!(full_image("quay.io/x/y:2"), "quay.io/x/y:2");
        assert!(image_id("nginx").starts_with("docker.io/library/nginx@sha256:"));
    }

    #[test]
    fn only_pods_tolerating_the_unschedulable_taint_ignore_a_cordon() {
        let with = |tolerations: Value| json!({"spec": {"tolerations": tolerations}});
        assert!(!tolerates_unschedulable(&json!({"spec": {}})));
        assert!(tolerates_unschedulable(&with(json!([
            {"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"}
        ]))));
        assert!(tolerates_unschedulable(&with(
            json!([{"operator": "Exists"}])
        )));
        assert!(tolerates_unschedulable(&with(
            json!([{"key": UNSCHEDULABLE_TAINT}])
        )));
        assert!(!tolerates_unschedulable(&with(json!([
            {"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoExecute"}
        ]))));
        assert!(!tolerates_unschedulable(&with(json!([
            {"key": UNSCHEDULABLE_TAINT, "operator": "Equal", "value": "yes"}
        ]))));
        assert!(!tolerates_unschedulable(&with(json!([
            {"key": "other", "operator": "Exists"}
        ]))));
    }

    #[test]
    fn an_unschedulable_pod_waits_pending_and_is_written_once() {
        let mut pod = json!({"spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        mark_unschedulable_because(&mut pod, UNSCHEDULABLE_MESSAGE);
        assert_eq!(pod["status"]["phase"], "Pending");
        let condition = &pod["status"]["conditions"][0];
        assert_eq!(condition["type"], "PodScheduled");
        assert_eq!(condition["status"], "False");
        assert_eq!(condition["reason"], "Unschedulable");
        assert_eq!(condition["message"], UNSCHEDULABLE_MESSAGE);
        let once = pod.clone();
        mark_unschedulable_because(&mut pod, UNSCHEDULABLE_MESSAGE);
        assert_eq!(pod, once, "a second pass changes nothing (no write loop)");
    }

    #[test]
    fn running_pods_get_upstream_status_fields() {
        let mut pod = json!({"spec": {"nodeName": NODE_NAME, "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Pending", "qosClass": "BestEffort", "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "t0"}]}});
        run(&mut pod, "10.244.0.9");
        let s = &pod["status"];
        assert_eq!(s["phase"], "Running");
        assert_eq!(s["podIP"], "10.244.0.9");
        assert_eq!(s["hostIP"], NODE_IP);
        assert_eq!(s["containerStatuses"][0]["ready"], true);
        assert_eq!(s["containerStatuses"][0]["restartCount"], 0);
        assert!(s["containerStatuses"][0]["state"]["running"]["startedAt"].is_string());
        for kind in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
            let c = s["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == kind))
                .cloned();
            assert_eq!(
                c.map(|c| c["status"].clone()),
                Some(json!("True")),
                "{kind}"
            );
        }
        end(&mut pod, 0, "t1");
        assert_eq!(pod["status"]["phase"], "Succeeded");
        assert_eq!(
            pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
            0
        );
    }

    /// A running pod with one container `c` started at `started`.
    /// A Pod held for one container's configuration starts the rest when it is run again:
    /// what already ran keeps its status, what waited starts.
    #[test]
    fn running_a_held_pod_keeps_what_already_ran() {
        let mut pod = json!({"spec": {"nodeName": NODE_NAME,
                "initContainers": [{"name": "setup", "image": "busybox"}],
                "containers": [{"name": "app", "image": "busybox"}, {"name": "proxy", "image": "envoy"}]},
            "status": {"phase": "Pending", "startTime": "t0", "podIP": "10.244.0.7",
                "initContainerStatuses": [{"name": "setup", "containerID": "containerd://setup",
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
                "containerStatuses": [
                    {"name": "app", "state": {"waiting": {"reason": "CreateContainerConfigError"}}},
                    {"name": "proxy", "containerID": "containerd://proxy",
                        "state": {"running": {"startedAt": "t0"}}}]}});
        run(&mut pod, "10.244.0.7");
        let s = &pod["status"];
        assert_eq!(s["phase"], "Running");
        assert_eq!(s["startTime"], "t0");
        assert_eq!(
            s["initContainerStatuses"][0]["containerID"],
            "containerd://setup"
        );
        assert_eq!(
            s["containerStatuses"][1]["containerID"],
            "containerd://proxy"
        );
        assert_eq!(
            s["containerStatuses"][1]["state"]["running"]["startedAt"],
            "t0"
        );
        assert!(s["containerStatuses"][0]["state"]["running"].is_object());
        assert!(s["containerStatuses"][0]["containerID"].is_string());
    }

    fn running_pod(policy: &str, started: &str, annotations: Value) -> Value {
        json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "annotations": annotations},
            "spec": {"restartPolicy": policy, "nodeName": NODE_NAME, "containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Running", "podIP": "10.244.0.5", "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": started},
                {"type": "Ready", "status": "True", "lastTransitionTime": started},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": started}],
                "containerStatuses": [{"name": "c", "containerID": "containerd://old", "ready": true, "started": true,
                    "restartCount": 0, "state": {"running": {"startedAt": started}}, "lastState": {}}]},
        })
    }

    fn condition<'a>(pod: &'a Value, kind: &str) -> &'a Value {
        pod["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == kind))
            .unwrap_or(&Value::Null)
    }

    #[test]
    fn exit_annotations_decide_whether_and_how_containers_exit() {
        let mut job_pod = running_pod("Never", "t", json!({}));
        job_pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j", "controller": true}]);
        let zero = Some(Exit {
            code: 0,
            after: Duration::ZERO,
        });
        assert_eq!(exit_of(&job_pod), zero, "job pods complete at once");
        assert_eq!(
            exit_of(&running_pod("Always", "t", json!({}))),
            None,
            "other pods run"
        );
        let table = [
            (
                json!({EXIT_CODE_ANNOTATION: "3"}),
                Some(Exit {
                    code: 3,
                    after: Duration::ZERO,
                }),
            ),
            (
                json!({EXIT_CODE_ANNOTATION: "-1", RUN_SECONDS_ANNOTATION: "30"}),
                Some(Exit {
                    code: -1,
                    after: Duration::from_secs(30),
                }),
            ),
            (
                json!({RUN_SECONDS_ANNOTATION: "5"}),
                Some(Exit {
                    code: 0,
                    after: Duration::from_secs(5),
                }),
            ),
            (json!({EXIT_CODE_ANNOTATION: "x"}), None),
            (json!({RUN_SECONDS_ANNOTATION: "-5"}), None),
        ];
        for (annotations, want) in table {
            assert_eq!(
                exit_of(&running_pod("Always", "t", annotations.clone())),
                want,
                "{annotations}"
            );
        }
    }

    #[test]
    fn the_restart_policy_decides_what_an_exit_does() {
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap_or_default();
        let long_ago = "2026-01-01T00:00:00Z";
        let exit = |code: i64, after: u64| Exit {
            code,
            after: Duration::from_secs(after),
        };
        let table = [
            ("Never", exit(1, 0), Step::End),
            ("Never", exit(0, 0), Step::End),
            ("OnFailure", exit(0, 0), Step::End),
            ("OnFailure", exit(2, 0), Step::Crash),
            ("Always", exit(0, 0), Step::Crash),
            ("Never", exit(1, 90), Step::Wait(Duration::from_secs(30))),
        ];
        for (policy, exit, want) in table {
            assert_eq!(
                next_step(&running_pod(policy, long_ago, json!({})), exit, now),
                want,
                "{policy} {exit:?}"
            );
        }
    }

    /// Under OnFailure only the failing container restarts; the one that exited with 0 stays
    /// `Completed` (before, both restarted). Under Always both restart.
    #[test]
    fn on_failure_restarts_only_the_failing_containers() {
        let two = |policy: &str| {
            let mut pod = running_pod(
                policy,
                "2026-01-01T00:00:00Z",
                json!({"korral.dev/exit-code.sidecar": "0", "korral.dev/exit-code.c": "2"}),
            );
            let mut second = pod["status"]["containerStatuses"][0].clone();
            second["name"] = json!("sidecar");
            if let Some(list) = pod["status"]["containerStatuses"].as_array_mut() {
                list.push(second);
            }
            pod
        };
        let mut pod = two("OnFailure");
        crash(&mut pod, 0, "2026-01-01T00:00:01Z");
        let statuses = pod["status"]["containerStatuses"].clone();
        assert_eq!(statuses[0]["restartCount"], 1);
        assert!(statuses[0]["state"]["running"].is_object());
        assert_eq!(statuses[1]["restartCount"], 0, "{}", statuses[1]);
        assert_eq!(statuses[1]["state"]["terminated"]["reason"], "Completed");
        assert_eq!(statuses[1]["ready"], false);
        let ready = condition(&pod, "Ready");
        assert_eq!(ready["status"], "False");
        assert_eq!(
            ready["message"],
            "containers with unready status: [sidecar]"
        );
        // The next crash puts the failing one in back-off; the completed one stays.
        crash(&mut pod, 0, "2026-01-01T00:00:02Z");
        let statuses = pod["status"]["containerStatuses"].clone();
        assert_eq!(
            statuses[0]["state"]["waiting"]["reason"],
            "CrashLoopBackOff"
        );
        assert_eq!(
            statuses[1]["state"]["terminated"]["finishedAt"],
            "2026-01-01T00:00:01Z"
        );
        assert_eq!(
            condition(&pod, "Ready")["message"],
            "containers with unready status: [c sidecar]"
        );
        restart(&mut pod, "2026-01-01T00:00:20Z");
        let statuses = pod["status"]["containerStatuses"].clone();
        assert_eq!(statuses[0]["restartCount"], 2);
        assert!(statuses[1]["state"]["terminated"].is_object());
        assert_eq!(condition(&pod, "Ready")["status"], "False");

        let mut pod = two("Always");
        crash(&mut pod, 0, "2026-01-01T00:00:01Z");
        let statuses = pod["status"]["containerStatuses"].clone();
        assert_eq!(
            statuses[1]["restartCount"], 1,
            "Always restarts a container that exited 0"
        );
        assert_eq!(condition(&pod, "Ready")["status"], "True");
    }

    #[test]
    fn failing_containers_restart_then_crash_loop_with_the_kubelets_back_off() {
        let mut pod = running_pod("OnFailure", "2026-01-01T00:00:00Z", json!({}));
        crash(&mut pod, 3, "2026-01-01T00:00:01Z");
        let c = pod["status"]["containerStatuses"][0].clone();
        assert_eq!(c["restartCount"], 1, "the first exit restarts at once");
        assert_eq!(c["state"]["running"]["startedAt"], "2026-01-01T00:00:01Z");
        assert_eq!(
            c["lastState"]["terminated"],
            json!({"exitCode": 3, "reason": "Error",
            "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:01Z", "containerID": "containerd://old"})
        );
        assert_ne!(c["containerID"], "containerd://old");
        assert_eq!(condition(&pod, "Ready")["status"], "True");

        crash(&mut pod, 3, "2026-01-01T00:00:02Z");
        let c = pod["status"]["containerStatuses"][0].clone();
        assert_eq!(c["restartCount"], 1);
        assert_eq!(c["ready"], false);
        assert_eq!(c["state"]["waiting"]["reason"], "CrashLoopBackOff");
        assert_eq!(
            c["state"]["waiting"]["message"],
            "back-off 10s restarting failed container=c pod=p_ns(u)"
        );
        assert_eq!(pod["status"]["phase"], "Running");
        for kind in ["Ready", "ContainersReady"] {
            let ready = condition(&pod, kind);
            assert_eq!(ready["status"], "False", "{kind}");
            assert_eq!(ready["reason"], "ContainersNotReady");
            assert_eq!(ready["message"], "containers with unready status: [c]");
        }
        let exit = Exit {
            code: 3,
            after: Duration::ZERO,
        };
        let at = |t: &str| t.parse::<Timestamp>().unwrap_or_default();
        assert_eq!(
            next_step(&pod, exit, at("2026-01-01T00:00:07Z")),
            Step::Wait(Duration::from_secs(5))
        );
        assert_eq!(
            next_step(&pod, exit, at("2026-01-01T00:00:12Z")),
            Step::Restart
        );

        restart(&mut pod, "2026-01-01T00:00:12Z");
        let c = pod["status"]["containerStatuses"][0].clone();
        assert_eq!(c["restartCount"], 2);
        assert!(c["state"]["running"].is_object());
        assert_eq!(condition(&pod, "Ready")["status"], "True");
        assert!(condition(&pod, "Ready").get("reason").is_none());
        crash(&mut pod, 3, "2026-01-01T00:00:13Z");
        assert_eq!(
            pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"],
            "back-off 20s restarting failed container=c pod=p_ns(u)"
        );
        assert_eq!(container_backoff(6), MAX_CONTAINER_BACKOFF);
        assert_eq!(
            crate::go_duration::format_std(container_backoff(4)),
            "1m20s"
        );
        assert_eq!(
            crate::go_duration::format_std(MAX_CONTAINER_BACKOFF),
            "5m0s"
        );
    }

    #[test]
    fn a_failed_exit_ends_the_pod_failed() {
        let mut pod = running_pod("Never", "2026-01-01T00:00:00Z", json!({}));
        end(&mut pod, 7, "2026-01-01T00:00:05Z");
        assert_eq!(pod["status"]["phase"], "Failed");
        let c = &pod["status"]["containerStatuses"][0];
        assert_eq!(c["state"]["terminated"]["exitCode"], 7);
        assert_eq!(c["state"]["terminated"]["reason"], "Error");
        assert_eq!(c["state"]["terminated"]["containerID"], "containerd://old");
        assert_eq!(
            c["state"]["terminated"]["finishedAt"],
            "2026-01-01T00:00:05Z"
        );
        for kind in ["Ready", "ContainersReady"] {
            assert_eq!(condition(&pod, kind)["status"], "False");
            assert_eq!(condition(&pod, kind)["reason"], "PodFailed");
        }
        assert_eq!(
            condition(&pod, "PodReadyToStartContainers")["status"],
            "False"
        );
        assert!(pod["status"].get("podIP").is_none());
        assert!(terminal(&pod));
    }

    /// A running pod with containers `main` and `side`.
    fn two_container_pod(annotations: Value) -> Value {
        let mut pod = running_pod("Never", "2026-01-01T00:00:00Z", annotations);
        pod["spec"]["containers"] =
            json!([{"name": "main", "image": "busybox"}, {"name": "side", "image": "busybox"}]);
        let status = |name: &str| {
            json!({"name": name, "containerID": "containerd://old", "ready": true,
            "started": true, "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}})
        };
        pod["status"]["containerStatuses"] = json!([status("main"), status("side")]);
        pod
    }

    #[test]
    fn containers_exit_with_their_own_codes() {
        let pod = two_container_pod(json!({"korral.dev/exit-code.side": "42"}));
        assert_eq!(
            exit_of(&pod).map(|e| e.code),
            Some(42),
            "the failing one decides"
        );
        let mut ended = pod.clone();
        end(
            &mut ended,
            pod_exit_code(&pod).unwrap_or(0),
            "2026-01-01T00:00:05Z",
        );
        let state =
            |i: usize| ended["status"]["containerStatuses"][i]["state"]["terminated"].clone();
        assert_eq!(
            (state(0)["exitCode"].clone(), state(0)["reason"].clone()),
            (json!(0), json!("Completed"))
        );
        assert_eq!(
            (state(1)["exitCode"].clone(), state(1)["reason"].clone()),
            (json!(42), json!("Error"))
        );
        assert_eq!(ended["status"]["phase"], "Failed");
        // The pod-wide code applies to containers without their own.
        let pod =
            two_container_pod(json!({EXIT_CODE_ANNOTATION: "3", "korral.dev/exit-code.main": "0"}));
        assert_eq!(codes_of(&pod, "containerStatuses", 3), vec![0, 3]);
        // All zero: the pod succeeds.
        let mut ok = two_container_pod(json!({"korral.dev/exit-code.side": "0"}));
        end(&mut ok, 0, "2026-01-01T00:00:05Z");
        assert_eq!(ok["status"]["phase"], "Succeeded");
        // Malformed per-container codes count as absent, and only they make a pod exit.
        let bare = two_container_pod(json!({"korral.dev/exit-code.side": "x"}));
        assert_eq!(exit_of(&bare), None);
    }

    #[test]
    fn a_pod_being_deleted_is_stopped_by_sigterm() {
        let mut pod = two_container_pod(json!({}));
        pod["status"]["containerStatuses"][0]["state"] =
            json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
        stop(&mut pod, "2026-01-01T00:00:05Z");
        let state = |i: usize| pod["status"]["containerStatuses"][i]["state"]["terminated"].clone();
        assert_eq!(
            state(0)["exitCode"],
            0,
            "an exited container keeps its state"
        );
        assert_eq!(state(1)["exitCode"], SIGTERM_EXIT_CODE);
        assert_eq!(state(1)["reason"], "Error");
        assert_eq!(state(1)["startedAt"], "2026-01-01T00:00:00Z");
        assert_eq!(state(1)["finishedAt"], "2026-01-01T00:00:05Z");
        assert_eq!(pod["status"]["phase"], "Failed");
        assert_eq!(condition(&pod, "Ready")["reason"], "PodFailed");
        assert!(pod["status"].get("podIP").is_none());
        // Containers whose exit code the pod gives exit with it: all 0, the pod succeeds, even
        // one that would restart them.
        let mut ok = two_container_pod(json!({EXIT_CODE_ANNOTATION: "0"}));
        ok["spec"]["restartPolicy"] = json!("Always");
        stop(&mut ok, "2026-01-01T00:00:05Z");
        assert_eq!(ok["status"]["phase"], "Succeeded");
        assert_eq!(condition(&ok, "Ready")["reason"], "PodCompleted");
        let mut one = two_container_pod(json!({"korral.dev/exit-code.main": "0"}));
        stop(&mut one, "2026-01-01T00:00:05Z");
        let codes: Vec<Value> = (0..2)
            .map(|i| {
                one["status"]["containerStatuses"][i]["state"]["terminated"]["exitCode"].clone()
            })
            .collect();
        assert_eq!(codes, vec![json!(0), json!(SIGTERM_EXIT_CODE)]);
        // A container waiting to restart keeps its last exit; one that never ran is unknown.
        let mut waiting = two_container_pod(json!({}));
        waiting["status"]["containerStatuses"][0]["state"] =
            json!({"waiting": {"reason": "CrashLoopBackOff"}});
        waiting["status"]["containerStatuses"][0]["lastState"] =
            json!({"terminated": {"exitCode": 2, "reason": "Error"}});
        waiting["status"]["containerStatuses"][1]["state"] =
            json!({"waiting": {"reason": "ContainerCreating"}});
        stop(&mut waiting, "2026-01-01T00:00:05Z");
        let state =
            |i: usize| waiting["status"]["containerStatuses"][i]["state"]["terminated"].clone();
        assert_eq!(state(0)["exitCode"], 2);
        assert_eq!(
            (state(1)["exitCode"].clone(), state(1)["reason"].clone()),
            (json!(KILLED_EXIT_CODE), json!("ContainerStatusUnknown"))
        );
        // A bound pod that never ran ends Failed.
        let mut pending = json!({"metadata": {"name": "p"}, "spec": {"nodeName": NODE_NAME,
            "containers": [{"name": "c", "image": "busybox"}]}, "status": {"phase": "Pending"}});
        stop(&mut pending, "2026-01-01T00:00:05Z");
        assert_eq!(pending["status"]["phase"], "Failed");
    }

    /// Containers with a stop time exit after it, or are killed when the grace period ends;
    /// the kubelet waits for the last one before it writes the stopped pod.
    #[test]
    fn slow_containers_stop_after_their_stop_time_or_are_killed() {
        let at = |t: &str| t.parse::<Timestamp>().unwrap_or_default();
        // Deleted at 00:00:10 with a 5 s grace period.
        let deleted = |annotations: Value| {
            let mut pod = two_container_pod(annotations);
            pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:15Z");
            pod["metadata"]["deletionGracePeriodSeconds"] = json!(5);
            pod
        };
        let pod =
            deleted(json!({STOP_SECONDS_ANNOTATION: "3", "korral.dev/stop-seconds.side": "9"}));
        assert_eq!(
            sigterm_exit(&pod, "main"),
            (SIGTERM_EXIT_CODE, Some(at("2026-01-01T00:00:13Z")))
        );
        assert_eq!(
            sigterm_exit(&pod, "side"),
            (KILLED_EXIT_CODE, Some(at("2026-01-01T00:00:15Z"))),
            "killed when the grace period ends"
        );
        assert_eq!(
            stopping_for(&pod, at("2026-01-01T00:00:12Z")),
            Duration::from_secs(3)
        );
        assert_eq!(
            stopping_for(&pod, at("2026-01-01T00:00:16Z")),
            Duration::ZERO
        );
        let mut stopped = pod.clone();
        stop(&mut stopped, "2026-01-01T00:00:16Z");
        let state =
            |i: usize| stopped["status"]["containerStatuses"][i]["state"]["terminated"].clone();
        assert_eq!(
            (state(0)["exitCode"].clone(), state(0)["finishedAt"].clone()),
            (json!(SIGTERM_EXIT_CODE), json!("2026-01-01T00:00:13Z"))
        );
        assert_eq!(
            (
                state(1)["exitCode"].clone(),
                state(1)["reason"].clone(),
                state(1)["finishedAt"].clone()
            ),
            (
                json!(KILLED_EXIT_CODE),
                json!("Error"),
                json!("2026-01-01T00:00:15Z")
            )
        );
        assert_eq!(stopped["status"]["phase"], "Failed");
        // A stop time within the grace period keeps the container's own exit code.
        let pod = deleted(json!({STOP_SECONDS_ANNOTATION: "5", EXIT_CODE_ANNOTATION: "0"}));
        assert_eq!(
            sigterm_exit(&pod, "main"),
            (0, Some(at("2026-01-01T00:00:15Z")))
        );
        // A grace period of 0 still gives 1 s; no stop time exits at the kubelet's step.
        let mut forced = deleted(json!({"korral.dev/stop-seconds.main": "2"}));
        forced["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        assert_eq!(
            sigterm_exit(&forced, "main"),
            (KILLED_EXIT_CODE, Some(at("2026-01-01T00:00:16Z")))
        );
        assert_eq!(sigterm_exit(&forced, "side"), (SIGTERM_EXIT_CODE, None));
        // Malformed or negative stop times count as absent.
        let odd =
            deleted(json!({STOP_SECONDS_ANNOTATION: "-1", "korral.dev/stop-seconds.side": "x"}));
        assert_eq!(
            stopping_for(&odd, at("2026-01-01T00:00:10Z")),
            Duration::ZERO
        );
    }

    #[test]
    fn a_failing_init_container_fails_a_pod_that_never_restarts() {
        let pod = |policy: &str| {
            json!({
            "metadata": {"name": "p", "annotations": {"korral.dev/exit-code.setup": "5"}},
            "spec": {"restartPolicy": policy, "nodeName": NODE_NAME,
                "initContainers": [{"name": "setup", "image": "busybox"}, {"name": "later", "image": "busybox"}],
                "containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Pending"}})
        };
        let mut never = pod("Never");
        run(&mut never, "10.244.0.9");
        let s = &never["status"];
        assert_eq!(s["phase"], "Failed");
        assert_eq!(
            s["initContainerStatuses"][0]["state"]["terminated"]["exitCode"],
            5
        );
        assert_eq!(
            s["initContainerStatuses"][0]["state"]["terminated"]["reason"],
            "Error"
        );
        assert_eq!(
            s["initContainerStatuses"][1]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        assert_eq!(
            s["containerStatuses"][0]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        assert_eq!(
            condition(&never, "Initialized")["reason"],
            "ContainersNotInitialized"
        );
        assert!(s.get("podIP").is_none());
        // Pods that restart run (their init containers are not simulated failing).
        let mut always = pod("Always");
        run(&mut always, "10.244.0.9");
        assert_eq!(always["status"]["phase"], "Running");
    }

    #[test]
    fn the_pod_wide_exit_code_reaches_init_containers_but_not_sidecars() {
        let pod = |annotations: Value, sidecar: bool| {
            let mut first = json!({"name": "setup", "image": "busybox"});
            if sidecar {
                first["restartPolicy"] = json!("Always");
            }
            json!({
            "metadata": {"name": "p", "annotations": annotations},
            "spec": {"restartPolicy": "Never", "nodeName": NODE_NAME,
                "initContainers": [first, {"name": "later", "image": "busybox"}],
                "containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Pending"}})
        };
        // The Pod's code is every init container's default: the first one fails with it.
        let mut failing = pod(json!({EXIT_CODE_ANNOTATION: "3"}), false);
        run(&mut failing, "10.244.0.9");
        let s = &failing["status"];
        assert_eq!(s["phase"], "Failed");
        let exited = &s["initContainerStatuses"][0]["state"]["terminated"];
        assert_eq!(exited["exitCode"], 3);
        assert_eq!(
            s["containerStatuses"][0]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        // An init container's own code wins over the Pod's.
        let own = json!({EXIT_CODE_ANNOTATION: "3", "korral.dev/exit-code.setup": "0"});
        let mut later = pod(own, false);
        run(&mut later, "10.244.0.9");
        let s = &later["status"];
        assert_eq!(s["phase"], "Failed");
        assert_eq!(
            s["initContainerStatuses"][1]["state"]["terminated"]["exitCode"],
            3
        );
        let ok = json!({EXIT_CODE_ANNOTATION: "3", "korral.dev/exit-code.setup": "0",
            "korral.dev/exit-code.later": "0"});
        let mut started = pod(ok, false);
        run(&mut started, "10.244.0.9");
        assert_eq!(started["status"]["phase"], "Running");
        // A sidecar is restarted, not failed: the next init container decides.
        let mut with_sidecar = pod(json!({"korral.dev/exit-code.setup": "4"}), true);
        run(&mut with_sidecar, "10.244.0.9");
        assert_eq!(with_sidecar["status"]["phase"], "Running");
        let mut both = pod(json!({EXIT_CODE_ANNOTATION: "4"}), true);
        run(&mut both, "10.244.0.9");
        assert_eq!(
            both["status"]["initContainerStatuses"][1]["state"]["terminated"]["exitCode"],
            4
        );
    }
}
