//! The ReplicaSet controller: keeps `spec.replicas` Pods from the template and reports status.
//!
//! Upstream runs ReplicationControllers (core v1) through this same controller (its
//! ReplicationManager converts them to ReplicaSets), so one reconcile serves both kinds,
//! parameterised by a [`Managed`] kind: [`REPLICA_SET`] and [`REPLICATION_CONTROLLER`].
//!
//! Pods are created as upstream names them (`generateName: <owner>-`, five characters of
//! the safe alphabet), with the template's labels and annotations and a controller owner
//! reference. The owner's selector claims Pods as upstream's `ClaimPods` does: active orphans
//! it selects are adopted, Pods it controls but no longer selects are released. Missing Pods
//! are replaced; extra ones are deleted, not-ready and newest first.

use serde_json::{Value, json};

use std::sync::Arc;

use super::access::{self, Actor, pod_active, pod_ready};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;
use crate::selector::{LabelSelector, from_label_selector_json};
use crate::storage::Object;

/// The condition a ReplicaSet reports while it cannot create or delete its Pods.
const REPLICA_FAILURE: &str = "ReplicaFailure";

/// How a managed kind spells its Pod selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorShape {
    /// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions`), as ReplicaSets have.
    LabelSelector,
    /// A plain label map, as ReplicationControllers have (the API server defaults it from the
    /// template's labels).
    Map,
}

/// A kind the ReplicaSet controller keeps Pods for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Managed {
    /// API group (`""` for core).
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Plural resource name.
    pub resource: &'static str,
    /// Kind, as its Pods' owner references name it.
    pub kind: &'static str,
    /// The shape of `spec.selector`.
    pub selector: SelectorShape,
    /// Who writes for it (upstream's controller identity).
    pub actor: Actor,
}

/// ReplicaSets (`apps/v1`).
pub const REPLICA_SET: Managed = Managed {
    group: "apps",
    version: "v1",
    resource: "replicasets",
    kind: "ReplicaSet",
    selector: SelectorShape::LabelSelector,
    actor: Actor::ReplicaSet,
};

/// ReplicationControllers (core `v1`), run by upstream's ReplicationManager.
pub const REPLICATION_CONTROLLER: Managed = Managed {
    group: "",
    version: "v1",
    resource: "replicationcontrollers",
    kind: "ReplicationController",
    selector: SelectorShape::Map,
    actor: Actor::ReplicationController,
};

/// The managed kinds.
pub const MANAGED: [&Managed; 2] = [&REPLICA_SET, &REPLICATION_CONTROLLER];

impl Managed {
    /// The `apiVersion` of its objects (`apps/v1`, `v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The Pod selector of `obj`. An empty one selects nothing here: validation requires a
    /// non-empty selector of both kinds, and adopting every orphan of the namespace would be
    /// the wrong way to fail.
    pub fn selector_of(&self, obj: &Value) -> Result<LabelSelector, String> {
        let raw = meta::path(obj, "spec.selector")
            .cloned()
            .unwrap_or(Value::Null);
        let selector = match self.selector {
            SelectorShape::LabelSelector => raw,
            SelectorShape::Map => json!({"matchLabels": raw}),
        };
        let empty = |key: &str| {
            selector.get(key).is_none_or(|v| {
                v.is_null()
                    || v.as_object().is_some_and(|m| m.is_empty())
                    || v.as_array().is_some_and(Vec::is_empty)
            })
        };
        if empty("matchLabels") && empty("matchExpressions") {
            return Ok(LabelSelector::nothing());
        }
        from_label_selector_json(&selector)
    }
}

/// Brings the Pods of one object of `kind` to its `spec.replicas` and writes its status.
pub async fn reconcile(
    objects: &Objects,
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
        create_pods(objects, kind, &pod_info, &rs, desired - active.len()).await
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
        delete_pods(objects, kind, &pod_info, &active[..surplus]).await
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

/// What the controller makes of one active Pod of its namespace (upstream's `ClaimObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// Controlled and selected: one of its Pods.
    Owned,
    /// An orphan it selects: adopted.
    Adopt,
    /// Controlled but no longer selected: released.
    Release,
    /// Another controller's, or an orphan it does not select.
    Ignore,
}

/// How the owner with `uid` and `selector` claims `pod`.
fn claim(pod: &Value, uid: &str, selector: &LabelSelector) -> Claim {
    let selected = selector.matches(meta::labels(pod));
    match access::controller_of(pod) {
        Some((_, _, owner)) if owner != uid => Claim::Ignore,
        Some(_) if selected => Claim::Owned,
        Some(_) => Claim::Release,
        None if selected => Claim::Adopt,
        None => Claim::Ignore,
    }
}

/// The active Pods `owner` controls once it has claimed them (upstream's `ClaimPods`): it
/// adopts the orphans it selects and releases the Pods it controls but no longer selects.
async fn claim_pods(
    objects: &Objects,
    kind: &Managed,
    pod_info: &Arc<ResourceInfo>,
    owner: &Value,
    selector: &LabelSelector,
) -> Result<Vec<Object>, ApiError> {
    let ns = meta::namespace(owner).unwrap_or("");
    let uid = meta::uid(owner).to_string();
    let mut owned = Vec::new();
    for pod in access::list(objects, "", "pods", ns) {
        if !pod_active(&pod) {
            continue;
        }
        match claim(&pod, &uid, selector) {
            Claim::Owned => owned.push(pod),
            Claim::Ignore => {}
            Claim::Adopt => {
                let reference = access::owner_ref(owner, &kind.api_version(), kind.kind);
                let adopted = access::update(objects, kind.actor, pod_info, &pod, move |p| {
                    adopt(p, &reference)
                })
                .await?;
                if let Some(pod) = adopted.filter(|p| access::controlled_by(p, &uid)) {
                    tracing::debug!(kind = kind.kind, pod = meta::name(&pod), "adopted pod");
                    owned.push(pod);
                }
            }
            Claim::Release => {
                let ours = uid.clone();
                access::update(objects, kind.actor, pod_info, &pod, move |p| {
                    release(p, &ours)
                })
                .await?;
                tracing::debug!(kind = kind.kind, pod = meta::name(&pod), "released pod");
            }
        }
    }
    Ok(owned)
}

/// Makes `reference` the controller of `pod`, unless it has a controller already (replacing
/// a reference with the same uid, as upstream's adoption patch merges by uid).
fn adopt(pod: &mut Value, reference: &Value) {
    if access::controller_of(pod).is_some() {
        return;
    }
    let Some(md) = meta::metadata_mut(pod) else {
        return;
    };
    let refs = md.entry("ownerReferences").or_insert_with(|| json!([]));
    if !refs.is_array() {
        *refs = json!([]);
    }
    if let Some(refs) = refs.as_array_mut() {
        refs.retain(|r| r.get("uid") != reference.get("uid"));
        refs.push(reference.clone());
    }
}

/// Drops the owner reference with `uid` from `pod` (dropping the list once empty).
fn release(pod: &mut Value, uid: &str) {
    let Some(md) = meta::metadata_mut(pod) else {
        return;
    };
    let Some(refs) = md.get_mut("ownerReferences").and_then(Value::as_array_mut) else {
        return;
    };
    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
    if refs.is_empty() {
        md.remove("ownerReferences");
    }
}

/// The managed objects (kind and name) in `pod`'s namespace that would adopt it: those not
/// being deleted whose selector selects it. Empty for a Pod with a controller or one that is
/// not active (only active orphans are adopted).
pub fn claimants(objects: &Objects, pod: &Value) -> Vec<(&'static Managed, String)> {
    if access::controller_of(pod).is_some() || !pod_active(pod) {
        return Vec::new();
    }
    let ns = meta::namespace(pod).unwrap_or("");
    let mut found = Vec::new();
    for kind in MANAGED {
        for owner in access::list(objects, kind.group, kind.resource, ns) {
            let selects = kind
                .selector_of(&owner)
                .is_ok_and(|s| s.matches(meta::labels(pod)));
            if selects && !meta::is_deleting(&owner) {
                found.push((kind, meta::name(&owner).to_string()));
            }
        }
    }
    found
}

/// Creates `count` Pods from the owner's template; stops at the first refusal.
async fn create_pods(
    objects: &Objects,
    kind: &Managed,
    pod_info: &Arc<ResourceInfo>,
    rs: &Value,
    count: usize,
) -> Result<(), ApiError> {
    let ns = meta::namespace(rs);
    for _ in 0..count {
        access::create(
            objects,
            kind.actor,
            pod_info,
            ns,
            pod_from_template(kind, rs),
        )
        .await?;
    }
    Ok(())
}

/// Deletes the given Pods; stops at the first refusal.
async fn delete_pods(
    objects: &Objects,
    kind: &Managed,
    pod_info: &Arc<ResourceInfo>,
    pods: &[Object],
) -> Result<(), ApiError> {
    for pod in pods {
        access::delete(objects, kind.actor, pod_info, pod).await?;
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
    use super::*;

    fn pod(labels: Value, controller: Option<&str>) -> Value {
        let refs: Vec<Value> = controller
            .map(|uid| json!({"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": uid, "controller": true}))
            .into_iter()
            .collect();
        json!({"metadata": {"name": "p", "labels": labels, "ownerReferences": refs}})
    }

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
    fn pods_are_claimed_like_upstream() {
        let selector = REPLICATION_CONTROLLER
            .selector_of(&json!({"spec": {"selector": {"app": "web"}}}))
            .expect("selector");
        let web = json!({"app": "web"});
        assert_eq!(
            claim(&pod(web.clone(), Some("u1")), "u1", &selector),
            Claim::Owned
        );
        assert_eq!(
            claim(&pod(web.clone(), None), "u1", &selector),
            Claim::Adopt
        );
        assert_eq!(claim(&pod(web, Some("u2")), "u1", &selector), Claim::Ignore);
        let db = json!({"app": "db"});
        assert_eq!(
            claim(&pod(db.clone(), Some("u1")), "u1", &selector),
            Claim::Release
        );
        assert_eq!(claim(&pod(db, None), "u1", &selector), Claim::Ignore);
    }

    #[test]
    fn adoption_and_release_edit_the_owner_references() {
        let reference = json!({"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "u1", "controller": true, "blockOwnerDeletion": true});
        let mut p = json!({"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u9"}]}});
        adopt(&mut p, &reference);
        assert_eq!(
            access::controller_of(&p),
            Some(("ReplicationController", "rc", "u1"))
        );
        assert_eq!(meta::owner_references(&p).len(), 2);
        // A pod with a controller is left alone.
        let mut other = pod(json!({}), Some("u2"));
        let before = other.clone();
        adopt(&mut other, &reference);
        assert_eq!(other, before);
        release(&mut p, "u1");
        assert_eq!(access::controller_of(&p), None);
        assert_eq!(meta::owner_references(&p).len(), 1);
        release(&mut p, "u9");
        assert!(p["metadata"].get("ownerReferences").is_none());
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
