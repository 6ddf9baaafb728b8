//! What a Pod references by name (ConfigMaps, Secrets, PersistentVolumeClaims) and what a
//! cluster does while one is missing, as upstream v1.36's scheduler and kubelet do:
//!
//! * the scheduler's volume plugins (`VolumeRestrictions`, `VolumeBinding`) reject a Pod whose
//!   `persistentVolumeClaim` volume names a claim that does not exist, is `Lost` or is being
//!   deleted, or that is not bound while its class binds at once (no class, a class that does
//!   not exist or an `Immediate` one); claims of a `WaitForFirstConsumer` class let it through
//!   (they are provisioned once the Pod is scheduled) ([`unschedulable`]);
//! * the kubelet's volume manager cannot set up a `configMap`, `secret` or `projected`
//!   volume whose object (or one of whose `items` keys) is missing: the Pod waits in
//!   `ContainerCreating` ([`unmountable_volumes`], [`hold_for_volumes`]);
//! * the kubelet cannot make the configuration of a container whose `env` / `envFrom` names
//!   a missing object or key: the container waits in `CreateContainerConfigError`, the others
//!   run ([`config_errors`], [`hold_for_config`]).
//!
//! `optional: true` references never hold a Pod. When a referenced object appears or
//! changes, the Pods of its namespace still waiting on it are queued again
//! ([`waiting_pods`]). Generic ephemeral volumes are not checked (no controller makes their
//! claims here). On a server without TLS no `kube-root-ca.crt` is published (there is no CA),
//! so references to it (every service account volume has one) count as satisfied.

use std::sync::Arc;

use serde_json::{Value, json};

use super::Cluster;
use super::access;
use super::namespaces::ROOT_CA_CONFIG_MAP;
use crate::meta;
use crate::objects::Objects;
use crate::storage::{Event, EventType, Object, collection_prefix, object_key};

/// The claims resource.
const CLAIMS: &str = "persistentvolumeclaims";
/// The ConfigMaps resource.
const CONFIG_MAPS: &str = "configmaps";
/// The Secrets resource.
const SECRETS: &str = "secrets";
/// The StorageClasses resource (looked up by name, cluster-wide).
const CLASSES: &str = "storageclasses";
/// The annotation the volume controller puts on a claim whose binding is complete.
const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// The beta annotation naming a claim's class (it wins over `spec.storageClassName`).
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// The `VolumeBinding` plugin's reason for claims that should have been bound already.
const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// The objects a Pod's references resolve to: `(resource, name)` to the stored object of the
/// Pod's namespace (`storageclasses`: the cluster's).
pub trait Lookup {
    /// The stored object, if any.
    fn find(&self, resource: &str, name: &str) -> Option<Object>;
}

impl<F: Fn(&str, &str) -> Option<Object>> Lookup for F {
    fn find(&self, resource: &str, name: &str) -> Option<Object> {
        self(resource, name)
    }
}

/// The lookup of a Pod of `ns`, with the root CA ConfigMap taken as published on a cluster
/// without a CA (nothing publishes it there).
pub fn lookup<'a>(objects: &'a Objects, cluster: &'a Cluster, ns: &'a str) -> impl Lookup + 'a {
    move |resource: &str, name: &str| {
        if resource == CLASSES {
            return objects
                .storage()
                .get(&object_key("storage.k8s.io", CLASSES, None, name));
        }
        let found = access::get(objects, "", resource, ns, name);
        if found.is_none()
            && resource == CONFIG_MAPS
            && name == ROOT_CA_CONFIG_MAP
            && cluster.ca_bundle.is_none()
        {
            return Some(Arc::new(json!({"data": {"ca.crt": ""}})));
        }
        found
    }
}

/// A string at `path` of `obj` (empty when unset).
fn text<'a>(obj: &'a Value, path: &str) -> &'a str {
    meta::path(obj, path).and_then(Value::as_str).unwrap_or("")
}

/// Whether a reference says `optional: true`.
fn optional(reference: &Value) -> bool {
    reference.get("optional").and_then(Value::as_bool) == Some(true)
}

/// The items of an array at `path` (none when unset).
fn items<'a>(obj: &'a Value, path: &str) -> &'a [Value] {
    meta::path(obj, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Whether `obj` has `key` in its `data` (or, when `binary`, its `binaryData`).
fn has_key(obj: &Value, key: &str, binary: bool) -> bool {
    let holds = |field: &str| obj.get(field).and_then(|d| d.get(key)).is_some();
    holds("data") || (binary && holds("binaryData"))
}

/// Every object a Pod names: `(resource, name)` of its volumes (claims, ConfigMaps, Secrets,
/// projected sources) and of its containers' `env` and `envFrom`.
pub fn referenced(pod: &Value) -> Vec<(&'static str, &str)> {
    let mut found = Vec::new();
    for volume in items(pod, "spec.volumes") {
        found.extend(meta::path(volume, "persistentVolumeClaim.claimName").map(|n| (CLAIMS, n)));
        found.extend(meta::path(volume, "configMap.name").map(|n| (CONFIG_MAPS, n)));
        found.extend(meta::path(volume, "secret.secretName").map(|n| (SECRETS, n)));
        for source in items(volume, "projected.sources") {
            found.extend(meta::path(source, "configMap.name").map(|n| (CONFIG_MAPS, n)));
            found.extend(meta::path(source, "secret.name").map(|n| (SECRETS, n)));
        }
    }
    for list in ["spec.initContainers", "spec.containers"] {
        for container in items(pod, list) {
            for from in items(container, "envFrom") {
                found.extend(meta::path(from, "configMapRef.name").map(|n| (CONFIG_MAPS, n)));
                found.extend(meta::path(from, "secretRef.name").map(|n| (SECRETS, n)));
            }
            for var in items(container, "env") {
                let cm = meta::path(var, "valueFrom.configMapKeyRef.name");
                found.extend(cm.map(|n| (CONFIG_MAPS, n)));
                let secret = meta::path(var, "valueFrom.secretKeyRef.name");
                found.extend(secret.map(|n| (SECRETS, n)));
            }
        }
    }
    found
        .into_iter()
        .filter_map(|(resource, name)| name.as_str().map(|n| (resource, n)))
        .collect()
}

/// The scheduler's message for a Pod its volume plugins reject at PreFilter (the only node
/// then is not one preemption could help on).
pub fn prefilter_rejection(reason: &str) -> String {
    format!(
        "0/1 nodes are available: {reason}. preemption: 0/1 nodes are available: \
         1 Preemption is not helpful for scheduling."
    )
}

/// Why the scheduler cannot place a Pod because of its claims (the condition's message), or
/// `None` when its claims let it be scheduled.
pub fn unschedulable(pod: &Value, lookup: &impl Lookup) -> Option<String> {
    let names: Vec<&str> = items(pod, "spec.volumes")
        .iter()
        .filter_map(|v| meta::path(v, "persistentVolumeClaim.claimName")?.as_str())
        .collect();
    // `VolumeRestrictions` first: every claim must exist.
    let mut claims = Vec::with_capacity(names.len());
    for name in names {
        let Some(claim) = lookup.find(CLAIMS, name) else {
            return Some(prefilter_rejection(&format!(
                "persistentvolumeclaim \"{name}\" not found"
            )));
        };
        claims.push(claim);
    }
    // Then `VolumeBinding`: no claim lost or going, and the immediate ones bound.
    for claim in &claims {
        let name = meta::name(claim);
        if text(claim, "status.phase") == "Lost" {
            let volume = text(claim, "spec.volumeName");
            return Some(prefilter_rejection(&format!(
                "persistentvolumeclaim \"{name}\" bound to non-existent persistentvolume \"{volume}\""
            )));
        }
        if meta::is_deleting(claim) {
            return Some(prefilter_rejection(&format!(
                "persistentvolumeclaim \"{name}\" is being deleted"
            )));
        }
    }
    claims
        .iter()
        .any(|claim| !fully_bound(claim) && !waits_for_consumer(claim, lookup))
        .then(|| prefilter_rejection(UNBOUND_IMMEDIATE))
}

/// Whether the volume controller finished binding a claim (a volume named and the
/// `bind-completed` annotation set).
fn fully_bound(claim: &Value) -> bool {
    let annotated = meta::path(claim, "metadata.annotations")
        .and_then(|a| a.get(BIND_COMPLETED))
        .is_some();
    !text(claim, "spec.volumeName").is_empty() && annotated
}

/// Whether an unbound claim is left to bind once a Pod using it is scheduled: its class
/// exists with `volumeBindingMode: WaitForFirstConsumer`, and it names no volume of its own.
fn waits_for_consumer(claim: &Value, lookup: &impl Lookup) -> bool {
    let annotated = meta::path(claim, "metadata.annotations")
        .and_then(|a| a.get(BETA_CLASS_ANNOTATION))
        .and_then(Value::as_str);
    let class = annotated.unwrap_or_else(|| text(claim, "spec.storageClassName"));
    if class.is_empty() || !text(claim, "spec.volumeName").is_empty() {
        return false;
    }
    lookup
        .find(CLASSES, class)
        .is_some_and(|c| text(&c, "volumeBindingMode") == "WaitForFirstConsumer")
}

/// Why the kubelet cannot set up one source of a `configMap`/`secret` volume (or projected
/// source): the object named at `name_field` of `source` is missing, or one of its `items`
/// keys; `None` when it can (or the reference is optional).
fn source_error(source: &Value, resource: &str, lookup: &impl Lookup) -> Option<String> {
    let (name_field, kind, missing_key) = match resource {
        CONFIG_MAPS => (
            "name",
            "configmap",
            "configmap references non-existent config key",
        ),
        _ => ("secretName", "secret", "references non-existent secret key"),
    };
    let name = source
        .get(name_field)
        .or_else(|| source.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let optional = optional(source);
    let Some(object) = lookup.find(resource, name) else {
        return (!optional).then(|| format!("{kind} \"{name}\" not found"));
    };
    let binary = resource == CONFIG_MAPS;
    items(source, "items")
        .iter()
        .filter_map(|item| item.get("key").and_then(Value::as_str))
        .find(|key| !optional && !has_key(&object, key, binary))
        .map(|key| format!("{missing_key}: {key}"))
}

/// The volumes the kubelet cannot set up, in the Pod's order, with the error of each (as
/// `MountVolume.SetUp` reports it).
pub fn unmountable_volumes(pod: &Value, lookup: &impl Lookup) -> Vec<(String, String)> {
    let mut failed = Vec::new();
    for volume in items(pod, "spec.volumes") {
        let name = text(volume, "name").to_string();
        let error = if let Some(source) = volume.get("configMap").filter(|s| s.is_object()) {
            source_error(source, CONFIG_MAPS, lookup)
        } else if let Some(source) = volume.get("secret").filter(|s| s.is_object()) {
            source_error(source, SECRETS, lookup)
        } else if let Some(sources) = meta::path(volume, "projected.sources") {
            let mut errors: Vec<String> = Vec::new();
            for source in sources.as_array().into_iter().flatten() {
                let error = if let Some(cm) = source.get("configMap").filter(|s| s.is_object()) {
                    source_error(cm, CONFIG_MAPS, lookup)
                } else if let Some(s) = source.get("secret").filter(|s| s.is_object()) {
                    source_error(s, SECRETS, lookup)
                } else {
                    None
                };
                // An aggregate of errors names each distinct one once.
                if let Some(error) = error.filter(|e| !errors.contains(e)) {
                    errors.push(error);
                }
            }
            match errors.len() {
                0 => None,
                1 => errors.pop(),
                _ => Some(format!("[{}]", errors.join(", "))),
            }
        } else {
            None
        };
        if let Some(error) = error {
            failed.push((name, error));
        }
    }
    failed
}

/// The event message of a volume the kubelet cannot set up.
pub fn mount_failure(volume: &str, error: &str) -> String {
    format!("MountVolume.SetUp failed for volume \"{volume}\" : {error}")
}

/// A container whose configuration the kubelet cannot make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Whether it is an init container.
    pub init: bool,
    /// Its name.
    pub container: String,
    /// The error (`configmap "x" not found`, ...).
    pub message: String,
}

/// The first reference of a container's environment that cannot be resolved, in the
/// kubelet's order (`envFrom`, then `env`).
fn env_error(container: &Value, ns: &str, lookup: &impl Lookup) -> Option<String> {
    for from in items(container, "envFrom") {
        for (field, resource, kind) in [
            ("configMapRef", CONFIG_MAPS, "configmap"),
            ("secretRef", SECRETS, "secret"),
        ] {
            let Some(reference) = from.get(field).filter(|r| r.is_object()) else {
                continue;
            };
            let name = text(reference, "name");
            if lookup.find(resource, name).is_none() && !optional(reference) {
                return Some(format!("{kind} \"{name}\" not found"));
            }
        }
    }
    for var in items(container, "env") {
        for (field, resource, kind, title) in [
            ("configMapKeyRef", CONFIG_MAPS, "configmap", "ConfigMap"),
            ("secretKeyRef", SECRETS, "secret", "Secret"),
        ] {
            let Some(reference) = var.pointer(&format!("/valueFrom/{field}")) else {
                continue;
            };
            if !reference.is_object() || optional(reference) {
                continue;
            }
            let (name, key) = (text(reference, "name"), text(reference, "key"));
            let Some(object) = lookup.find(resource, name) else {
                return Some(format!("{kind} \"{name}\" not found"));
            };
            if !has_key(&object, key, false) {
                return Some(format!("couldn't find key {key} in {title} {ns}/{name}"));
            }
        }
    }
    None
}

/// The containers whose configuration cannot be made: the first init container that cannot
/// (the later ones are not tried), else every container that cannot.
pub fn config_errors(pod: &Value, lookup: &impl Lookup) -> Vec<ConfigError> {
    let ns = meta::namespace(pod).unwrap_or("default");
    let error = |init: bool, container: &Value| {
        env_error(container, ns, lookup).map(|message| ConfigError {
            init,
            container: text(container, "name").to_string(),
            message,
        })
    };
    if let Some(first) = items(pod, "spec.initContainers")
        .iter()
        .find_map(|c| error(true, c))
    {
        return vec![first];
    }
    items(pod, "spec.containers")
        .iter()
        .filter_map(|c| error(false, c))
        .collect()
}

/// The status of a container the kubelet has not created, waiting for `reason` (and
/// `message`).
fn waiting(container: &Value, reason: &str, message: Option<&str>) -> Value {
    let mut state = json!({"reason": reason});
    if let Some(message) = message {
        state["message"] = json!(message);
    }
    json!({
        "name": text(container, "name"),
        "image": text(container, "image"),
        "imageID": "",
        "ready": false,
        "started": false,
        "restartCount": 0,
        "state": {"waiting": state},
        "lastState": {},
    })
}

/// The names of the containers of `list` (`initContainers` or `containers`).
fn names(pod: &Value, list: &str) -> Vec<String> {
    items(pod, &format!("spec.{list}"))
        .iter()
        .map(|c| text(c, "name").to_string())
        .collect()
}

/// Sets the Pod's conditions as the kubelet reports them, in its order: the sandbox's,
/// `Initialized` (`incomplete`: the init containers not done), `Ready` and `ContainersReady`
/// (`unready`: the containers not ready), then the scheduler's `PodScheduled` as it is. A
/// condition whose status does not change keeps its `lastTransitionTime`.
fn set_conditions(
    status: &mut Value,
    sandbox: bool,
    incomplete: &[String],
    unready: &[String],
    now: &str,
) {
    let old: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let find = |kind: &str| old.iter().find(|c| c["type"] == kind);
    let condition = |kind: &str, ok: bool, why: Option<(&str, String)>| {
        let wanted = if ok { "True" } else { "False" };
        let since = find(kind)
            .filter(|c| c["status"] == wanted)
            .and_then(|c| c.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(now));
        let mut c = json!({"type": kind, "status": wanted, "lastProbeTime": null,
            "lastTransitionTime": since});
        if let Some((reason, message)) = why {
            c["reason"] = json!(reason);
            c["message"] = json!(message);
        }
        c
    };
    let list = |names: &[String]| format!("[{}]", names.join(" "));
    let initialized = (!incomplete.is_empty()).then(|| {
        let message = format!("containers with incomplete status: {}", list(incomplete));
        ("ContainersNotInitialized", message)
    });
    let ready = (!unready.is_empty()).then(|| {
        let message = format!("containers with unready status: {}", list(unready));
        ("ContainersNotReady", message)
    });
    let scheduled = find("PodScheduled").cloned().unwrap_or_else(
        || json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}),
    );
    status["conditions"] = json!([
        condition("PodReadyToStartContainers", sandbox, None),
        condition("Initialized", incomplete.is_empty(), initialized),
        condition("Ready", unready.is_empty(), ready.clone()),
        condition("ContainersReady", unready.is_empty(), ready),
        scheduled,
    ]);
}

/// The status of a Pod bound to the node whose volumes cannot be set up: `Pending`, no
/// sandbox and no IP, every container waiting (`ContainerCreating`, or `PodInitializing`
/// with init containers), not initialized nor ready. The same Pod gives the same status
/// (times are kept), so holding it again writes nothing.
pub fn hold_for_volumes(pod: &mut Value, host_ip: &str, now: &str) {
    let inits = items(pod, "spec.initContainers").to_vec();
    let containers = items(pod, "spec.containers").to_vec();
    let reason = if inits.is_empty() {
        "ContainerCreating"
    } else {
        "PodInitializing"
    };
    let (incomplete, unready) = (names(pod, "initContainers"), names(pod, "containers"));
    let Some(root) = pod.as_object_mut() else {
        return;
    };
    let status = root.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    status["phase"] = json!("Pending");
    status["hostIP"] = json!(host_ip);
    status["hostIPs"] = json!([{"ip": host_ip}]);
    if status.get("startTime").is_none() {
        status["startTime"] = json!(now);
    }
    set_conditions(status, false, &incomplete, &unready, now);
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| waiting(c, reason, None))
        .collect();
    status["containerStatuses"] = Value::Array(statuses);
    if !inits.is_empty() {
        let statuses: Vec<Value> = inits
            .iter()
            .map(|c| waiting(c, "PodInitializing", None))
            .collect();
        status["initContainerStatuses"] = Value::Array(statuses);
    }
}

/// The status of a Pod the kubelet started (see `pods::run`) except for the containers in
/// `errors`: each waits in `CreateContainerConfigError` with its error; when it is an init
/// container, the init containers after it and every container wait in `PodInitializing`.
/// The Pod stays `Pending`, not ready; `previous` (the Pod before it was started) gives the
/// conditions' times, so holding it again writes nothing.
pub fn hold_for_config(pod: &mut Value, previous: &Value, errors: &[ConfigError], now: &str) {
    let inits = items(pod, "spec.initContainers").to_vec();
    let containers = items(pod, "spec.containers").to_vec();
    let failing_init = errors
        .iter()
        .find(|e| e.init)
        .and_then(|e| inits.iter().position(|c| text(c, "name") == e.container));
    let error_of = |init: bool, name: &str| {
        errors
            .iter()
            .find(|e| e.init == init && e.container == name)
            .map(|e| e.message.as_str())
    };
    let old_conditions = previous
        .pointer("/status/conditions")
        .cloned()
        .unwrap_or(json!([]));
    let Some(status) = pod.get_mut("status").filter(|s| s.is_object()) else {
        return;
    };
    let mut incomplete = Vec::new();
    if let Some(statuses) = status
        .get_mut("initContainerStatuses")
        .and_then(Value::as_array_mut)
    {
        for (i, (s, c)) in statuses.iter_mut().zip(&inits).enumerate() {
            let name = text(c, "name");
            match failing_init {
                Some(f) if i == f => {
                    *s = waiting(c, "CreateContainerConfigError", error_of(true, name));
                }
                Some(f) if i > f => *s = waiting(c, "PodInitializing", None),
                _ => continue,
            }
            incomplete.push(name.to_string());
        }
    }
    let mut unready = Vec::new();
    if let Some(statuses) = status
        .get_mut("containerStatuses")
        .and_then(Value::as_array_mut)
    {
        for (s, c) in statuses.iter_mut().zip(&containers) {
            let name = text(c, "name");
            if failing_init.is_some() {
                *s = waiting(c, "PodInitializing", None);
            } else if let Some(message) = error_of(false, name) {
                *s = waiting(c, "CreateContainerConfigError", Some(message));
            } else {
                continue;
            }
            unready.push(name.to_string());
        }
    }
    status["phase"] = json!("Pending");
    status["conditions"] = old_conditions;
    set_conditions(status, true, &incomplete, &unready, now);
}

/// Whether a Pod may still be waiting on what it references: not started yet (`Pending`) and
/// not being deleted.
fn may_wait(pod: &Value) -> bool {
    matches!(text(pod, "status.phase"), "" | "Pending") && !meta::is_deleting(pod)
}

/// Whether a storage event of a ConfigMap or Secret changed what Pods read of it (its keys),
/// or, of a claim, anything (binding, deletion).
fn may_unblock(event: &Event, resource: &str) -> bool {
    if event.kind == EventType::Deleted {
        return false;
    }
    if resource == CLAIMS {
        return true;
    }
    let Some(previous) = &event.previous else {
        return true;
    };
    ["data", "binaryData"]
        .iter()
        .any(|field| previous.get(*field) != event.object.get(*field))
}

/// The Pods of `ns` that a storage event of one of its ConfigMaps, Secrets or claims may let
/// proceed: those not started yet that name it. Deletions and writes that leave a ConfigMap's
/// or Secret's data as it was concern none (the root CA publisher's rewrites, say), and only
/// the namespace's Pods are read.
pub fn waiting_pods(objects: &Objects, event: &Event, resource: &str, ns: &str) -> Vec<String> {
    if !matches!(resource, CONFIG_MAPS | SECRETS | CLAIMS) || !may_unblock(event, resource) {
        return Vec::new();
    }
    let name = meta::name(&event.object);
    let snapshot = objects.storage().snapshot();
    let prefix = collection_prefix("", "pods", Some(ns));
    snapshot
        .range(&prefix, None)
        .filter(|(_, pod)| may_wait(pod))
        .filter(|(_, pod)| referenced(pod).contains(&(resource, name)))
        .map(|(_, pod)| meta::name(pod).to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A lookup over `(resource, name)` → object.
    fn store(objects: &[(&str, &str, Value)]) -> impl Lookup + use<> {
        let map: HashMap<(String, String), Object> = objects
            .iter()
            .map(|(r, n, o)| ((r.to_string(), n.to_string()), Arc::new(o.clone())))
            .collect();
        move |resource: &str, name: &str| {
            map.get(&(resource.to_string(), name.to_string())).cloned()
        }
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec,
            "status": {"phase": "Pending"}})
    }

    fn claim(name: &str, extra: Value) -> Value {
        let mut c = json!({"metadata": {"name": name}, "spec": {}});
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                c.insert(k.clone(), v.clone());
            }
        }
        c
    }

    #[test]
    fn claims_decide_whether_the_pod_can_be_scheduled() {
        let using = |names: &[&str]| {
            let volumes: Vec<Value> = names
                .iter()
                .map(|n| json!({"name": n, "persistentVolumeClaim": {"claimName": n}}))
                .collect();
            pod(json!({"volumes": volumes}))
        };
        let suffix =
            ". preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
        let none = store(&[]);
        assert_eq!(
            unschedulable(&using(&["data"]), &none).as_deref(),
            Some(
                format!(
                    "0/1 nodes are available: persistentvolumeclaim \"data\" not found{suffix}"
                )
                .as_str()
            )
        );
        let bound = claim(
            "bound",
            json!({"metadata": {"name": "bound", "annotations": {BIND_COMPLETED: "yes"}},
                "spec": {"volumeName": "pv"}, "status": {"phase": "Bound"}}),
        );
        let deleting = claim(
            "going",
            json!({"metadata": {"name": "going", "deletionTimestamp": "2026-01-01T00:00:00Z"}}),
        );
        let lost = claim(
            "lost",
            json!({"spec": {"volumeName": "gone"}, "status": {"phase": "Lost"}}),
        );
        let waiting = claim("late", json!({"spec": {"storageClassName": "wffc"}}));
        let immediate = claim("now", json!({"spec": {"storageClassName": "fast"}}));
        let classless = claim("bare", json!({}));
        let unknown_class = claim("odd", json!({"spec": {"storageClassName": "nope"}}));
        let beta = claim(
            "beta",
            json!({"metadata": {"name": "beta", "annotations": {BETA_CLASS_ANNOTATION: "wffc"}},
                "spec": {"storageClassName": "fast"}}),
        );
        let lookup = store(&[
            (CLAIMS, "bound", bound),
            (CLAIMS, "going", deleting),
            (CLAIMS, "lost", lost),
            (CLAIMS, "late", waiting),
            (CLAIMS, "now", immediate),
            (CLAIMS, "bare", classless),
            (CLAIMS, "odd", unknown_class),
            (CLAIMS, "beta", beta),
            (
                CLASSES,
                "wffc",
                json!({"volumeBindingMode": "WaitForFirstConsumer"}),
            ),
            (CLASSES, "fast", json!({"volumeBindingMode": "Immediate"})),
        ]);
        assert_eq!(
            unschedulable(&using(&["bound", "late", "beta"]), &lookup),
            None
        );
        assert_eq!(
            unschedulable(&using(&["bound", "going"]), &lookup),
            Some(prefilter_rejection(
                "persistentvolumeclaim \"going\" is being deleted"
            ))
        );
        assert_eq!(
            unschedulable(&using(&["lost"]), &lookup),
            Some(prefilter_rejection(
                "persistentvolumeclaim \"lost\" bound to non-existent persistentvolume \"gone\""
            ))
        );
        // Every claim must exist before any other check.
        assert_eq!(
            unschedulable(&using(&["going", "missing"]), &lookup),
            Some(prefilter_rejection(
                "persistentvolumeclaim \"missing\" not found"
            ))
        );
        for name in ["now", "bare", "odd"] {
            assert_eq!(
                unschedulable(&using(&["late", name]), &lookup),
                Some(prefilter_rejection(UNBOUND_IMMEDIATE)),
                "{name}"
            );
        }
        // Generic ephemeral volumes and other volumes are not the scheduler's concern here.
        let other = pod(
            json!({"volumes": [{"name": "e", "ephemeral": {}}, {"name": "t", "emptyDir": {}}]}),
        );
        assert_eq!(unschedulable(&other, &none), None);
    }

    #[test]
    fn volumes_that_cannot_be_set_up_name_their_error() {
        let lookup = store(&[
            (
                CONFIG_MAPS,
                "cfg",
                json!({"data": {"a": "1"}, "binaryData": {"b": "AA=="}}),
            ),
            (SECRETS, "creds", json!({"data": {"user": "dQ=="}})),
        ]);
        let spec = json!({"volumes": [
            {"name": "ok", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a"}, {"key": "b", "path": "b"}]}},
            {"name": "gone", "configMap": {"name": "nope"}},
            {"name": "maybe", "configMap": {"name": "nope", "optional": true}},
            {"name": "key", "configMap": {"name": "cfg", "items": [{"key": "z", "path": "z"}]}},
            {"name": "optional-key", "configMap": {"name": "cfg", "optional": true, "items": [{"key": "z", "path": "z"}]}},
            {"name": "s", "secret": {"secretName": "missing"}},
            {"name": "s-ok", "secret": {"secretName": "creds"}},
            {"name": "s-key", "secret": {"secretName": "creds", "items": [{"key": "pass", "path": "p"}]}},
            {"name": "proj", "projected": {"sources": [
                {"configMap": {"name": "nope"}},
                {"secret": {"name": "creds", "items": [{"key": "pass", "path": "p"}]}},
                {"configMap": {"name": "nope"}},
                {"downwardAPI": {"items": []}},
                {"secret": {"name": "gone", "optional": true}}]}},
            {"name": "proj-one", "projected": {"sources": [{"secret": {"name": "missing"}}]}},
            {"name": "scratch", "emptyDir": {}}]});
        let failed = unmountable_volumes(&pod(spec), &lookup);
        let want: Vec<(String, String)> = [
            ("gone", "configmap \"nope\" not found"),
            ("key", "configmap references non-existent config key: z"),
            ("s", "secret \"missing\" not found"),
            ("s-key", "references non-existent secret key: pass"),
            (
                "proj",
                "[configmap \"nope\" not found, references non-existent secret key: pass]",
            ),
            ("proj-one", "secret \"missing\" not found"),
        ]
        .iter()
        .map(|(v, e)| (v.to_string(), e.to_string()))
        .collect();
        assert_eq!(failed, want);
        assert_eq!(
            mount_failure("gone", "configmap \"nope\" not found"),
            "MountVolume.SetUp failed for volume \"gone\" : configmap \"nope\" not found"
        );
    }

    #[test]
    fn environments_that_cannot_be_made_name_their_error() {
        let lookup = store(&[
            (
                CONFIG_MAPS,
                "cfg",
                json!({"data": {"mode": "x"}, "binaryData": {"bin": "AA=="}}),
            ),
            (SECRETS, "creds", json!({"data": {"user": "dQ=="}})),
        ]);
        let container = |name: &str, env: Value, env_from: Value| json!({"name": name, "image": "busybox", "env": env, "envFrom": env_from});
        let key = |kind: &str, name: &str, key: &str, optional: bool| json!({"name": "V", "valueFrom": {kind: {"name": name, "key": key, "optional": optional}}});
        let spec = json!({"containers": [
            container("fine", json!([key("configMapKeyRef", "cfg", "mode", false), key("secretKeyRef", "creds", "user", false),
                key("configMapKeyRef", "nope", "x", true), key("secretKeyRef", "creds", "pass", true)]),
                json!([{"configMapRef": {"name": "nope", "optional": true}}, {"secretRef": {"name": "creds"}}])),
            container("no-cm", json!([key("configMapKeyRef", "nope", "x", false)]), json!([])),
            container("no-key", json!([key("configMapKeyRef", "cfg", "bin", false)]), json!([])),
            container("no-secret-key", json!([key("secretKeyRef", "creds", "pass", false)]), json!([])),
            // `envFrom` is read before `env`.
            container("from-first", json!([key("configMapKeyRef", "nope", "x", false)]),
                json!([{"secretRef": {"name": "missing"}}])),
        ]});
        let errors = config_errors(&pod(spec.clone()), &lookup);
        let got: Vec<(bool, &str, &str)> = errors
            .iter()
            .map(|e| (e.init, e.container.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (false, "no-cm", "configmap \"nope\" not found"),
                (false, "no-key", "couldn't find key bin in ConfigMap ns/cfg"),
                (
                    false,
                    "no-secret-key",
                    "couldn't find key pass in Secret ns/creds"
                ),
                (false, "from-first", "secret \"missing\" not found"),
            ]
        );
        // A failing init container is the only one reported: the kubelet goes no further.
        let mut with_init = spec;
        with_init["initContainers"] = json!([
            container("setup", json!([]), json!([])),
            container(
                "migrate",
                json!([]),
                json!([{"configMapRef": {"name": "nope"}}])
            ),
            container("later", json!([]), json!([{"secretRef": {"name": "nope"}}])),
        ]);
        assert_eq!(
            config_errors(&pod(with_init), &lookup),
            vec![ConfigError {
                init: true,
                container: "migrate".into(),
                message: "configmap \"nope\" not found".into()
            }]
        );
    }

    #[test]
    fn references_list_every_named_object() {
        let p = pod(json!({
            "volumes": [{"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "b", "configMap": {"name": "cfg"}},
                {"name": "c", "secret": {"secretName": "tls"}},
                {"name": "d", "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}, {"secret": {"name": "extra"}}]}}],
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-env"}}]}],
            "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "env"}}],
                "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "key", "key": "k"}}},
                        {"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "one", "key": "k"}}},
                        {"name": "Z", "value": "plain"}]}]}));
        assert_eq!(
            referenced(&p),
            vec![
                (CLAIMS, "data"),
                (CONFIG_MAPS, "cfg"),
                (SECRETS, "tls"),
                (CONFIG_MAPS, "kube-root-ca.crt"),
                (SECRETS, "extra"),
                (SECRETS, "init-env"),
                (CONFIG_MAPS, "env"),
                (SECRETS, "key"),
                (CONFIG_MAPS, "one"),
            ]
        );
        assert!(may_wait(&p));
        let mut running = p.clone();
        running["status"]["phase"] = json!("Running");
        assert!(!may_wait(&running));
    }

    #[test]
    fn only_changes_pods_could_read_wake_them() {
        let event = |kind: EventType, previous: Option<Value>, object: Value| Event {
            revision: 2,
            kind,
            key: "/core/configmaps/ns/cfg".into(),
            object: Arc::new(object),
            previous: previous.map(Arc::new),
        };
        let cm = |data: Value| json!({"metadata": {"name": "cfg"}, "data": data});
        let added = event(EventType::Added, None, cm(json!({"a": "1"})));
        assert!(may_unblock(&added, CONFIG_MAPS));
        let keyed = event(
            EventType::Modified,
            Some(cm(json!({"a": "1"}))),
            cm(json!({"a": "1", "b": "2"})),
        );
        assert!(may_unblock(&keyed, SECRETS));
        let mut annotated = cm(json!({"a": "1"}));
        annotated["metadata"]["annotations"] = json!({"x": "y"});
        let relabelled = event(EventType::Modified, Some(cm(json!({"a": "1"}))), annotated);
        assert!(!may_unblock(&relabelled, CONFIG_MAPS));
        assert!(
            may_unblock(&relabelled, CLAIMS),
            "a claim's binding is not in its data"
        );
        let deleted = event(EventType::Deleted, Some(cm(json!({}))), cm(json!({})));
        assert!(!may_unblock(&deleted, CONFIG_MAPS));
        assert!(!may_unblock(&deleted, CLAIMS));
    }

    fn condition<'a>(pod: &'a Value, kind: &str) -> &'a Value {
        pod["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == kind))
            .unwrap_or(&Value::Null)
    }

    #[test]
    fn a_pod_whose_volumes_wait_is_container_creating() {
        let scheduled = json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
        let mut p = pod(json!({"nodeName": "korral-node",
            "containers": [{"name": "web", "image": "nginx"}, {"name": "side", "image": "busybox"}]}));
        p["status"]["conditions"] = scheduled.clone();
        hold_for_volumes(&mut p, "172.18.0.2", "2026-01-01T00:00:05Z");
        let s = &p["status"];
        assert_eq!(s["phase"], "Pending");
        assert_eq!(s["hostIP"], "172.18.0.2");
        assert!(s.get("podIP").is_none());
        assert_eq!(s["startTime"], "2026-01-01T00:00:05Z");
        assert_eq!(
            s["containerStatuses"][0],
            json!({"name": "web", "image": "nginx", "imageID": "", "ready": false, "started": false,
                "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}})
        );
        let kinds: Vec<&Value> = s["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| &c["type"])
            .collect();
        assert_eq!(
            kinds,
            vec![
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled"
            ]
        );
        assert_eq!(
            condition(&p, "PodReadyToStartContainers")["status"],
            "False"
        );
        assert_eq!(condition(&p, "Initialized")["status"], "True");
        assert!(condition(&p, "Initialized").get("reason").is_none());
        for kind in ["Ready", "ContainersReady"] {
            assert_eq!(condition(&p, kind)["status"], "False");
            assert_eq!(condition(&p, kind)["reason"], "ContainersNotReady");
            assert_eq!(
                condition(&p, kind)["message"],
                "containers with unready status: [web side]"
            );
        }
        assert_eq!(condition(&p, "PodScheduled"), &scheduled[0]);
        // Holding again changes nothing.
        let mut again = p.clone();
        hold_for_volumes(&mut again, "172.18.0.2", "2026-01-01T00:09:00Z");
        assert_eq!(again, p);
        // With init containers everything waits in PodInitializing.
        let mut init = pod(json!({"containers": [{"name": "web", "image": "nginx"}],
            "initContainers": [{"name": "setup", "image": "busybox"}]}));
        hold_for_volumes(&mut init, "172.18.0.2", "2026-01-01T00:00:05Z");
        assert_eq!(
            init["status"]["initContainerStatuses"][0]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        assert_eq!(
            init["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        assert_eq!(
            condition(&init, "Initialized")["message"],
            "containers with incomplete status: [setup]"
        );
    }

    /// A Pod as the kubelet's start leaves it: every container running.
    fn started(inits: &[&str], containers: &[&str]) -> Value {
        let status = |name: &&str, state: Value| {
            json!({"name": name, "image": "docker.io/library/busybox:latest", "containerID": format!("containerd://{name}"),
                "ready": true, "started": true, "restartCount": 0, "state": state, "lastState": {}})
        };
        let spec_of = |names: &[&str]| -> Vec<Value> {
            names
                .iter()
                .map(|n| json!({"name": n, "image": "busybox"}))
                .collect()
        };
        let at = "2026-01-01T00:00:05Z";
        let cond = |kind: &str| json!({"type": kind, "status": "True", "lastProbeTime": null, "lastTransitionTime": at});
        let mut p =
            pod(json!({"containers": spec_of(containers), "initContainers": spec_of(inits)}));
        p["status"] = json!({"phase": "Running", "podIP": "10.244.0.2", "startTime": at,
            "conditions": [cond("PodReadyToStartContainers"), cond("Initialized"), cond("Ready"),
                cond("ContainersReady"), cond("PodScheduled")],
            "containerStatuses": containers.iter().map(|n| status(n, json!({"running": {"startedAt": at}}))).collect::<Vec<_>>(),
            "initContainerStatuses": inits.iter().map(|n| status(n, json!({"terminated": {"exitCode": 0, "reason": "Completed"}}))).collect::<Vec<_>>()});
        p
    }

    #[test]
    fn a_container_without_its_configuration_waits_while_the_others_run() {
        let previous = pod(json!({}));
        let error = |init: bool, name: &str| ConfigError {
            init,
            container: name.into(),
            message: "configmap \"x\" not found".into(),
        };
        let mut p = started(&[], &["web", "side"]);
        hold_for_config(
            &mut p,
            &previous,
            &[error(false, "web")],
            "2026-01-01T00:00:06Z",
        );
        let s = &p["status"];
        assert_eq!(s["phase"], "Pending");
        assert_eq!(s["podIP"], "10.244.0.2", "the sandbox has its IP");
        assert_eq!(
            s["containerStatuses"][0]["state"],
            json!({"waiting": {"reason": "CreateContainerConfigError", "message": "configmap \"x\" not found"}})
        );
        assert_eq!(s["containerStatuses"][0]["ready"], false);
        assert!(s["containerStatuses"][1]["state"]["running"].is_object());
        assert_eq!(condition(&p, "PodReadyToStartContainers")["status"], "True");
        assert_eq!(condition(&p, "Initialized")["status"], "True");
        assert_eq!(
            condition(&p, "Ready")["message"],
            "containers with unready status: [web]"
        );
        // Held again from the held Pod: the same status, times kept.
        let mut again = started(&[], &["web", "side"]);
        hold_for_config(
            &mut again,
            &p,
            &[error(false, "web")],
            "2026-01-01T00:09:00Z",
        );
        assert_eq!(again["status"]["conditions"], p["status"]["conditions"]);

        // An init container that cannot start holds the later ones and every container.
        let mut init = started(&["setup", "migrate", "seed"], &["web"]);
        hold_for_config(
            &mut init,
            &previous,
            &[error(true, "migrate")],
            "2026-01-01T00:00:06Z",
        );
        let s = &init["status"];
        assert!(s["initContainerStatuses"][0]["state"]["terminated"].is_object());
        assert_eq!(
            s["initContainerStatuses"][1]["state"]["waiting"]["reason"],
            "CreateContainerConfigError"
        );
        assert_eq!(
            s["initContainerStatuses"][2]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        assert_eq!(
            s["containerStatuses"][0]["state"]["waiting"]["reason"],
            "PodInitializing"
        );
        assert_eq!(
            condition(&init, "Initialized")["message"],
            "containers with incomplete status: [migrate seed]"
        );
        assert_eq!(condition(&init, "Ready")["reason"], "ContainersNotReady");
    }
}
