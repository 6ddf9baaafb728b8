//! Reading and writing objects for the simulated controllers.
//!
//! Reads come straight from storage (always current: a write is visible once it returns), so
//! the controllers need no upstream-style "expectations". Every write goes through the write
//! pipeline as the [`Actor`] making it, with upstream's identity and field manager: creates,
//! updates with a resourceVersion precondition and deletes with a uid precondition through
//! [`Objects`], status through the `/status` rules ([`update_status`]). Defaults, validation,
//! generation handling and admission (webhooks and policies included) apply as they do to the
//! writes of upstream's controllers, scheduler and kubelet, and watchers see ordinary events.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::meta;
use crate::objects::{DeleteOptions, Objects, Part, Propagation, WriteOptions};
use crate::registry::ResourceInfo;
use crate::storage::{Object, collection_prefix, object_key};

/// `metadata.generation`, as the simulated controllers read it.
pub use crate::meta::generation;

/// Who makes a simulated write: upstream's controllers (with kube-controller-manager's
/// per-controller service accounts), the scheduler and the kubelet of the simulated node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    /// The Deployment controller.
    Deployment,
    /// The ReplicaSet controller.
    ReplicaSet,
    /// The ReplicationController manager (upstream's ReplicaSet controller run on
    /// ReplicationControllers).
    ReplicationController,
    /// The StatefulSet controller.
    StatefulSet,
    /// The Job controller.
    Job,
    /// The CronJob controller.
    CronJob,
    /// The horizontal pod autoscaler.
    Autoscaler,
    /// The DaemonSet controller.
    DaemonSet,
    /// The Endpoints controller.
    Endpoints,
    /// The EndpointSlice controller.
    EndpointSlice,
    /// The ServiceAccounts controller.
    ServiceAccounts,
    /// The root CA certificate publisher.
    RootCaPublisher,
    /// The persistent volume controller (binding and reclaiming volumes).
    VolumeBinder,
    /// The simulated external provisioner of StorageClasses.
    Provisioner,
    /// The PVC protection controller.
    PvcProtection,
    /// The PV protection controller.
    PvProtection,
    /// The node lifecycle controller (taints of node conditions).
    NodeLifecycle,
    /// The CSR signing controller.
    CertificateSigner,
    /// The ResourceClaim controller (claims from templates, reservations released).
    ResourceClaim,
    /// The pod garbage collector.
    PodGarbageCollector,
    /// The scheduler.
    Scheduler,
    /// The simulated node's kubelet.
    Kubelet,
}

impl Actor {
    /// The identity upstream's component authenticates as.
    pub fn user(self) -> UserInfo {
        let controller = match self {
            Self::Deployment => "deployment-controller",
            Self::ReplicaSet => "replicaset-controller",
            Self::ReplicationController => "replication-controller",
            Self::StatefulSet => "statefulset-controller",
            Self::Job => "job-controller",
            Self::CronJob => "cronjob-controller",
            Self::Autoscaler => "horizontal-pod-autoscaler",
            Self::DaemonSet => "daemon-set-controller",
            Self::Endpoints => "endpoint-controller",
            Self::EndpointSlice => "endpointslice-controller",
            Self::ServiceAccounts => "service-account-controller",
            Self::RootCaPublisher => "root-ca-cert-publisher",
            Self::VolumeBinder => "persistent-volume-binder",
            Self::PvcProtection => "pvc-protection-controller",
            Self::PvProtection => "pv-protection-controller",
            Self::NodeLifecycle => "node-controller",
            Self::CertificateSigner => "certificate-controller",
            Self::ResourceClaim => "resource-claim-controller",
            Self::PodGarbageCollector => "pod-garbage-collector",
            Self::Provisioner => {
                return UserInfo::service_account("kube-system", "korral-volume-provisioner", "");
            }
            Self::Scheduler => {
                return UserInfo {
                    name: "system:kube-scheduler".into(),
                    groups: vec![crate::auth::user::AUTHENTICATED_GROUP.into()],
                    ..UserInfo::default()
                };
            }
            Self::Kubelet => {
                return UserInfo {
                    name: format!("system:node:{}", super::pods::NODE_NAME),
                    groups: vec![
                        "system:nodes".into(),
                        crate::auth::user::AUTHENTICATED_GROUP.into(),
                    ],
                    ..UserInfo::default()
                };
            }
        };
        UserInfo::service_account("kube-system", controller, "")
    }

    /// The field manager of its writes (upstream's component name).
    pub fn field_manager(self) -> &'static str {
        match self {
            Self::Scheduler => "kube-scheduler",
            Self::Kubelet => "kubelet",
            Self::Provisioner => "korral-volume-provisioner",
            _ => FIELD_MANAGER,
        }
    }

    fn write_options(self) -> WriteOptions {
        WriteOptions {
            field_manager: Some(self.field_manager().to_string()),
            requester: Some(self.user()),
            ..WriteOptions::default()
        }
    }
}

/// The field manager of the simulated controllers' writes (upstream's controllers run in
/// `kube-controller-manager`).
pub const FIELD_MANAGER: &str = "kube-controller-manager";

/// A served resource, by group, version and plural.
pub fn info(
    objects: &Objects,
    group: &str,
    version: &str,
    resource: &str,
) -> Result<Arc<ResourceInfo>, ApiError> {
    objects
        .registry()
        .get(group, version, resource)
        .ok_or_else(|| ApiError::internal(format!("{resource}.{group} is not served")))
}

/// The stored object of a namespaced resource.
pub fn get(objects: &Objects, group: &str, resource: &str, ns: &str, name: &str) -> Option<Object> {
    objects
        .storage()
        .get(&object_key(group, resource, Some(ns), name))
}

/// Every stored object of a resource in one namespace.
pub fn list(objects: &Objects, group: &str, resource: &str, ns: &str) -> Vec<Object> {
    stored(objects, &collection_prefix(group, resource, Some(ns)))
}

/// Every stored object of a resource: of all namespaces, or cluster-scoped.
pub fn list_all(objects: &Objects, group: &str, resource: &str) -> Vec<Object> {
    stored(objects, &collection_prefix(group, resource, None))
}

/// The stored objects under a collection prefix.
fn stored(objects: &Objects, prefix: &str) -> Vec<Object> {
    let snapshot = objects.storage().snapshot();
    snapshot
        .range(prefix, None)
        .map(|(_, o)| o.clone())
        .collect()
}

/// A timestamp member (`None` when absent, empty or malformed, as Go's zero time).
pub fn timestamp(value: Option<&Value>) -> Option<jiff::Timestamp> {
    value?.as_str()?.parse().ok()
}

/// The controller owner reference of an object: `(kind, name, uid)`.
pub fn controller_of(obj: &Value) -> Option<(&str, &str, &str)> {
    meta::owner_references(obj)
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
            (s("kind"), s("name"), s("uid"))
        })
}

/// Whether `obj` is controlled by the object with `uid`.
pub fn controlled_by(obj: &Value, uid: &str) -> bool {
    controller_of(obj).is_some_and(|(_, _, u)| u == uid)
}

/// An owner reference to `owner` as a controller would set it.
pub fn owner_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": meta::name(owner),
        "uid": meta::uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// An integer field, `default` when unset.
pub fn int(obj: &Value, path: &str, default: i64) -> i64 {
    meta::path(obj, path)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

/// The labels of an object as a JSON map (empty when none).
pub fn labels_of(obj: &Value, path: &str) -> Map<String, Value> {
    meta::path(obj, path)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Whether a Pod counts as active: not being deleted and not finished.
pub fn pod_active(pod: &Value) -> bool {
    !meta::is_deleting(pod)
        && !matches!(
            meta::path(pod, "status.phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        )
}

/// Whether a Pod's `Ready` condition is `True`.
pub fn pod_ready(pod: &Value) -> bool {
    condition_status(pod, "Ready") == Some("True")
}

/// The status of condition `kind` in `status.conditions`.
pub fn condition_status<'a>(obj: &'a Value, kind: &str) -> Option<&'a str> {
    meta::path(obj, "status.conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
}

/// Sets a condition the way upstream's `Set*Condition` helpers do: an unchanged status and
/// reason leaves the condition alone; an unchanged status keeps `lastTransitionTime`.
///
/// `condition` carries `type`, `status`, `reason`, `message` and the time fields to stamp.
pub fn set_condition(conditions: &mut Vec<Value>, mut condition: Value, time_fields: &[&str]) {
    let kind = condition.get("type").cloned().unwrap_or(Value::Null);
    let now = meta::now_rfc3339();
    let existing = conditions.iter().position(|c| c.get("type") == Some(&kind));
    if let Some(i) = existing {
        let old = &conditions[i];
        if old.get("status") == condition.get("status")
            && old.get("reason") == condition.get("reason")
            && old.get("message") == condition.get("message")
        {
            return;
        }
        for field in time_fields {
            let keep =
                *field == "lastTransitionTime" && old.get("status") == condition.get("status");
            let value = if keep {
                old.get(*field).cloned().unwrap_or_else(|| json!(now))
            } else {
                json!(now)
            };
            condition[*field] = value;
        }
        conditions[i] = condition;
    } else {
        for field in time_fields {
            condition[*field] = json!(now);
        }
        conditions.push(condition);
    }
}

/// Creates an object through the write pipeline as `actor`.
pub async fn create(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    obj: Value,
) -> Result<Object, ApiError> {
    Ok(objects
        .create(info, ns, obj, &actor.write_options())
        .await?
        .object)
}

/// Replaces an object through the write pipeline as `actor`; `obj` carries the
/// resourceVersion it was read at, so a concurrent change makes this fail with 409 (the work
/// item is then retried on fresh state).
pub async fn replace(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    obj: Value,
) -> Result<Object, ApiError> {
    let ns = meta::namespace(&obj).map(str::to_string);
    let name = meta::name(&obj).to_string();
    Ok(objects
        .update(
            info,
            ns.as_deref(),
            &name,
            obj,
            Part::Main,
            &actor.write_options(),
        )
        .await?
        .object)
}

/// Deletes this incarnation of `obj` (uid precondition) with background propagation as
/// `actor`; already gone counts as done.
pub async fn delete(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    obj: &Value,
) -> Result<(), ApiError> {
    let opts = DeleteOptions {
        propagation: Some(Propagation::Background),
        ..DeleteOptions::default()
    };
    delete_incarnation(objects, actor, info, obj, opts).await
}

/// Deletes this incarnation of `obj` (uid precondition) with grace period 0 as `actor`, as
/// the kubelet deletes a Pod it stopped; already gone counts as done.
pub async fn delete_at_once(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    obj: &Value,
) -> Result<(), ApiError> {
    let opts = DeleteOptions {
        grace_period_seconds: Some(0),
        ..DeleteOptions::default()
    };
    delete_incarnation(objects, actor, info, obj, opts).await
}

/// Deletes this incarnation of `obj` with `opts` as `actor`: gone, or replaced by a new
/// object of the same name (the uid precondition fails), counts as done.
async fn delete_incarnation(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    obj: &Value,
    opts: DeleteOptions,
) -> Result<(), ApiError> {
    let opts = DeleteOptions {
        precondition_uid: Some(meta::uid(obj).to_string()),
        requester: Some(actor.user()),
        ..opts
    };
    match objects
        .delete(info, meta::namespace(obj), meta::name(obj), &opts)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        // A new object of the same name: this one is gone.
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Rewrites `obj` (while it is still the same incarnation) with `change` applied to the current
/// object, through the main resource's write pipeline as `actor`, retrying conflicts: the
/// object as written, or `None` when it is gone or `change` leaves it as it is.
pub async fn update<F>(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    obj: &Value,
    change: F,
) -> Result<Option<Object>, ApiError>
where
    F: Fn(&mut Value) + Send + Sync + 'static,
{
    rewrite(objects, actor, info, obj, Part::Main, change).await
}

/// Rewrites the status of `obj` (while it is still the same incarnation) with `change`
/// applied to the current object, through the `/status` write pipeline as `actor`; nothing is
/// written when `change` leaves it as it is.
pub async fn update_status<F>(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    obj: &Value,
    change: F,
) -> Result<(), ApiError>
where
    F: Fn(&mut Value) + Send + Sync + 'static,
{
    rewrite(objects, actor, info, obj, Part::Status, change)
        .await
        .map(|_| ())
}

/// [`update`] / [`update_status`] through the write pipeline of `part` (also an update
/// subresource such as `approval`).
pub async fn rewrite<F>(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    obj: &Value,
    part: Part,
    change: F,
) -> Result<Option<Object>, ApiError>
where
    F: Fn(&mut Value) + Send + Sync + 'static,
{
    objects
        .update_with(
            info,
            meta::namespace(obj),
            meta::name(obj),
            meta::uid(obj),
            part,
            &actor.write_options(),
            change,
        )
        .await
        .map(|written| written.map(|w| w.object))
}

/// Sets the replicas of `name` through its `/scale` subresource as `actor`.
pub async fn write_scale(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    ns: &str,
    name: &str,
    replicas: i64,
) -> Result<(), ApiError> {
    objects
        .write_scale(
            info,
            Some(ns),
            name,
            &actor.write_options(),
            move |current| {
                let mut scale = current.clone();
                scale["spec"]["replicas"] = json!(replicas);
                Ok(scale)
            },
        )
        .await
        .map(|_| ())
}

/// Writes `status` of `obj` (see [`update_status`]).
pub async fn write_status(
    objects: &Objects,
    actor: Actor,
    info: &Arc<ResourceInfo>,
    obj: &Value,
    status: Value,
) -> Result<(), ApiError> {
    update_status(objects, actor, info, obj, move |obj| {
        if let Some(map) = obj.as_object_mut() {
            map.insert("status".into(), status.clone());
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_condition_keeps_transition_time_and_skips_identical() {
        let mut conds = Vec::new();
        let fields = ["lastUpdateTime", "lastTransitionTime"];
        set_condition(
            &mut conds,
            json!({"type": "Available", "status": "True", "reason": "A", "message": "m"}),
            &fields,
        );
        assert_eq!(conds.len(), 1);
        conds[0]["lastTransitionTime"] = json!("2000-01-01T00:00:00Z");
        conds[0]["lastUpdateTime"] = json!("2000-01-01T00:00:00Z");
        let before = conds.clone();
        set_condition(
            &mut conds,
            json!({"type": "Available", "status": "True", "reason": "A", "message": "m"}),
            &fields,
        );
        assert_eq!(conds, before);
        set_condition(
            &mut conds,
            json!({"type": "Available", "status": "True", "reason": "B", "message": "m"}),
            &fields,
        );
        assert_eq!(conds[0]["lastTransitionTime"], "2000-01-01T00:00:00Z");
        assert_ne!(conds[0]["lastUpdateTime"], "2000-01-01T00:00:00Z");
        set_condition(
            &mut conds,
            json!({"type": "Available", "status": "False", "reason": "B", "message": "m"}),
            &fields,
        );
        assert_ne!(conds[0]["lastTransitionTime"], "2000-01-01T00:00:00Z");
    }
}
