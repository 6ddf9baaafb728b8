//! The ReplicaSet controller: keeps `spec.replicas` Pods from the template and reports status.
//!
//! Upstream runs ReplicationControllers (core v1) through this same controller (its
//! ReplicationManager converts them to ReplicaSets), so one reconcile serves both kinds,
//! parameterised by a [`Managed`] kind: [`REPLICA_SET`] and [`REPLICATION_CONTROLLER`].
//!
//! Pods are created as upstream names them (`generateName: <owner>-`, five characters of
//! the safe alphabet), with the template's labels and annotations and a controller owner
//! reference. The owner's selector claims Pods as upstream's `ClaimPods` does (shared with
//! the Job controller, [`super::claim`]): active orphans it selects are adopted, Pods it
//! controls but no longer selects are released. Missing Pods
//! are replaced; extra ones are deleted, not-ready and newest first.

use serde_json::{Value, json};

use std::sync::Arc;

use super::access::{self, Actor, pod_active, pod_ready};
use super::claim::{self, claim_pods};
pub use super::claim::{Managed, SelectorShape};
use super::events::Recorder;
use super::jobs::JOB;
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;
use crate::selector::LabelSelector;
use crate::storage::Object;

/// The condition a ReplicaSet reports while it cannot create or delete its Pods.
const REPLICA_FAILURE: &str = "ReplicaFailure";

/// ReplicaSets (`apps/v1`).
pub const REPLICA_SET: Managed = Managed {
    group: "apps",
    version: "v1",
    resource: "replicasets",
    kind: "ReplicaSet",
    selector: SelectorShape::LabelSelector,
    actor: Actor::ReplicaSet,
    active_only: true,
    finalizers: &[],
};

/// ReplicationControllers (core `v1`), run by upstream's ReplicationManager.
pub const REPLICATION_CONTROLLER: Managed = Managed {
    group: "",
    version: "v1",
    resource: "replicationcontrollers",
    kind: "ReplicationController",
    selector: SelectorShape::Map,
    actor: Actor::ReplicationController,
    active_only: true,
    finalizers: &[],
};

/// Brings the Pods of one object of `kind` to its `spec.replicas` and writes its status.
pub async fn reconcile(
    objects: &Objects,
    events: &Recorder,
    kind: &Managed,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    let Some(rs) = access::get(objects, kind.group, kind.resource, ns, name) else {
        return Ok(());
    };
    if meta::is_deleting(&rs) {
        return Ok(());
    }
    let selector = match kind.selector_of(&rs) {
        Ok(selector) => selector,
        Err(error) => {
            // As upstream: an unusable selector is reported and the object left alone.
            tracing::warn!(kind = kind.kind, namespace = ns, name, %error, "invalid pod selector");
            return Ok(());
        }
    };
    let desired = access::int(&rs, "spec.replicas", 1).max(0) as usize;
    let pod_info = access::info(objects, "", "v1", "pods")?;
    let mut active = claim_pods(objects, kind, &pod_info, &rs, &selector).await?;
    let managed = if active.len() < desired {
        create_pods(
            objects,
            events,
            kind,
            &pod_info,
            &rs,
            desired - active.len(),
        )
        .await
    } else if active.len() > desired {
        // Not scheduled, then not ready, then newest first (upstream's ActivePods ordering).
        active.sort_by(|a, b| {
            let rank = |p: &Value| {
                let scheduled = !meta::path(p, "spec.nodeName")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty();
                (scheduled, pod_ready(p))
            };
            rank(a)
                .cmp(&rank(b))
                .then_with(|| created(b).cmp(created(a)))
                .then_with(|| meta::name(a).cmp(meta::name(b)))
        });
        // The first in that order go.
        let surplus = active.len() - desired;
        delete_pods(objects, events, kind, &pod_info, &rs, &active[..surplus]).await
    } else {
        Ok(())
    };
    // As upstream: a failure to create or delete Pods shows as the `ReplicaFailure` condition
    // (and the work is retried); success removes it.
    let failure = managed.as_ref().err().map(|e| {
        let reason = if active.len() < desired {
            "FailedCreate"
        } else {
            "FailedDelete"
        };
        (reason, e.message.clone())
    });
    write_status(objects, kind, &rs, &selector, failure).await?;
    managed
}

/// The managed objects (kind and name) in `pod`'s namespace that would adopt it (see
/// [`claim::claimants`]): ReplicaSets, ReplicationControllers and Jobs.
pub fn claimants(objects: &Objects, pod: &Value) -> Vec<(&'static Managed, String)> {
    claim::claimants(objects, &[&REPLICA_SET, &REPLICATION_CONTROLLER, &JOB], pod)
}

/// Creates `count` Pods from the owner's template, each recorded as an event; stops at the
/// first refusal.
async fn create_pods(
    objects: &Objects,
    events: &Recorder,
    kind: &Managed,
    pod_info: &Arc<ResourceInfo>,
    rs: &Value,
    count: usize,
) -> Result<(), ApiError> {
    let ns = meta::namespace(rs);
    for _ in 0..count {
        let created = access::create(
            objects,
            kind.actor,
            pod_info,
            ns,
            pod_from_template(kind, rs),
        )
        .await;
        events
            .pod_created(objects, kind.actor, rs, created.as_ref().map(|p| &**p))
            .await;
        created?;
    }
    Ok(())
}

/// Deletes the given Pods, each recorded as an event; stops at the first refusal.
async fn delete_pods(
    objects: &Objects,
    events: &Recorder,
    kind: &Managed,
    pod_info: &Arc<ResourceInfo>,
    rs: &Value,
    pods: &[Object],
) -> Result<(), ApiError> {
    for pod in pods {
        events
            .delete_pod(objects, kind.actor, pod_info, rs, pod)
            .await?;
    }
    Ok(())
}

/// `metadata.creationTimestamp` (empty when unset).
fn created(obj: &Value) -> &str {
    meta::meta_str(obj, "creationTimestamp").unwrap_or("")
}

/// The Pods in `ns` controlled by the object with `uid`.
pub fn owned_pods(objects: &Objects, ns: &str, uid: &str) -> Vec<Object> {
    access::list(objects, "", "pods", ns)
        .into_iter()
        .filter(|p| access::controlled_by(p, uid))
        .collect()
}

/// A new Pod for an object of `kind` (`generateName: <name>-`, its template's labels,
/// annotations and spec, a controller owner reference to it).
fn pod_from_template(kind: &Managed, rs: &Value) -> Value {
    let template = meta::path(rs, "spec.template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut metadata = serde_json::Map::new();
    metadata.insert("generateName".into(), json!(format!("{}-", meta::name(rs))));
    for field in ["labels", "annotations"] {
        if let Some(v) = template.pointer(&format!("/metadata/{field}")) {
            metadata.insert(field.into(), v.clone());
        }
    }
    metadata.insert(
        "ownerReferences".into(),
        json!([access::owner_ref(rs, &kind.api_version(), kind.kind)]),
    );
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Writes the owner's status from the active Pods it controls and selects as stored now,
/// with the `ReplicaFailure` condition (`reason`, `message`) of a failed create or delete,
/// or without it (upstream's `calculateStatus`, the same for both kinds).
async fn write_status(
    objects: &Objects,
    kind: &Managed,
    rs: &Value,
    selector: &LabelSelector,
    failure: Option<(&str, String)>,
) -> Result<(), ApiError> {
    let ns = meta::namespace(rs).unwrap_or("");
    let (pods, others): (Vec<_>, Vec<_>) = owned_pods(objects, ns, meta::uid(rs))
        .into_iter()
        .filter(|p| selector.matches(meta::labels(p)))
        .partition(|p| pod_active(p));
    // Upstream's `terminatingReplicas` (DeploymentReplicaSetTerminatingReplicas, on by default
    // since v1.35): its pods being deleted that have not finished. ReplicationControllers have
    // no such field.
    let terminating = others
        .iter()
        .filter(|p| meta::is_deleting(p) && !super::pods::terminal(p))
        .count();
    let template_labels = access::labels_of(rs, "spec.template.metadata.labels");
    let fully_labeled = pods
        .iter()
        .filter(|p| {
            let labels = meta::labels(p);
            template_labels
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        })
        .count();
    let ready = pods.iter().filter(|p| pod_ready(p)).count();
    let mut status = rs.get("status").cloned().unwrap_or_else(|| json!({}));
    status["replicas"] = json!(pods.len());
    status["fullyLabeledReplicas"] = json!(fully_labeled);
    status["readyReplicas"] = json!(ready);
    status["availableReplicas"] = json!(ready);
    status["observedGeneration"] = json!(access::generation(rs));
    if kind.kind == REPLICA_SET.kind {
        status["terminatingReplicas"] = json!(terminating);
    }
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match failure {
        // Set once; a later failure leaves the first one standing (as upstream).
        Some((reason, message)) if !conditions.iter().any(|c| c["type"] == REPLICA_FAILURE) => {
            conditions.push(json!({
                "type": REPLICA_FAILURE, "status": "True",
                "lastTransitionTime": meta::now_rfc3339(),
                "reason": reason, "message": message,
            }));
        }
        Some(_) => {}
        None => conditions.retain(|c| c["type"] != REPLICA_FAILURE),
    }
    if let Some(map) = status.as_object_mut() {
        if conditions.is_empty() {
            map.remove("conditions");
        } else {
            map.insert("conditions".into(), Value::Array(conditions));
        }
        // Upstream omits zero counts (omitempty) except replicas.
        for field in ["fullyLabeledReplicas", "readyReplicas", "availableReplicas"] {
            if map.get(field) == Some(&json!(0)) {
                map.remove(field);
            }
        }
    }
    if rs.get("status") == Some(&status) {
        return Ok(());
    }
    access::write_status(
        objects,
        kind.actor,
        &access::info(objects, kind.group, kind.version, kind.resource)?,
        rs,
        status,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::super::claim::tests::pod;
    use super::*;

    #[test]
    fn selectors_are_read_per_kind() {
        let rc = json!({"spec": {"selector": {"app": "web"}}});
        let selector = REPLICATION_CONTROLLER
            .selector_of(&rc)
            .expect("map selector");
        assert!(selector.matches(meta::labels(&pod(json!({"app": "web", "x": "y"}), None))));
        assert!(!selector.matches(meta::labels(&pod(json!({"app": "db"}), None))));
        let rs = json!({"spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}}});
        let selector = REPLICA_SET.selector_of(&rs).expect("label selector");
        assert!(selector.matches(meta::labels(&pod(json!({"app": "api"}), None))));
        // An empty selector adopts nothing.
        let empty = REPLICATION_CONTROLLER
            .selector_of(&json!({"spec": {"selector": {}}}))
            .expect("empty");
        assert!(!empty.matches(meta::labels(&pod(json!({"app": "web"}), None))));
        assert!(REPLICA_SET
            .selector_of(&json!({"spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Foo"}]}}}))
            .is_err());
        assert_eq!(REPLICATION_CONTROLLER.api_version(), "v1");
        assert_eq!(REPLICA_SET.api_version(), "apps/v1");
    }

    #[test]
    fn pods_name_and_reference_their_owner_kind() {
        let rc = json!({"apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1"},
            "spec": {"replicas": 1, "selector": {"app": "web"},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        let p = pod_from_template(&REPLICATION_CONTROLLER, &rc);
        assert_eq!(p["metadata"]["generateName"], "web-");
        assert_eq!(p["metadata"]["labels"]["app"], "web");
        let owner = &p["metadata"]["ownerReferences"][0];
        assert_eq!(owner["apiVersion"], "v1");
        assert_eq!(owner["kind"], "ReplicationController");
        assert_eq!(owner["uid"], "u1");
        assert_eq!(owner["controller"], true);
    }
}
