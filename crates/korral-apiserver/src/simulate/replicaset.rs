//! The ReplicaSet controller: keeps `spec.replicas` Pods from the template and reports status.
//!
//! Pods are created as upstream names them (`generateName: <replicaset>-`, five characters of
//! the safe alphabet), with the template's labels and annotations and a controller owner
//! reference. Missing Pods are replaced; extra ones are deleted, not-ready and newest first.

use serde_json::{Value, json};

use std::sync::Arc;

use super::access::{self, controlled_by, pod_active, pod_ready};
use crate::error::ApiError;
use crate::meta;
use crate::registry::ResourceInfo;
use crate::storage::Object;

/// The condition a ReplicaSet reports while it cannot create or delete its Pods.
const REPLICA_FAILURE: &str = "ReplicaFailure";

/// Brings one ReplicaSet's Pods to `spec.replicas` and writes its status.
pub async fn reconcile(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    let Some(rs) = access::get(objects, "apps", "replicasets", ns, name) else {
        return Ok(());
    };
    if meta::is_deleting(&rs) {
        return Ok(());
    }
    let uid = meta::uid(&rs).to_string();
    let desired = access::int(&rs, "spec.replicas", 1).max(0) as usize;
    let mut active: Vec<_> = owned_pods(objects, ns, &uid)
        .into_iter()
        .filter(|p| pod_active(p))
        .collect();
    let pod_info = access::info(objects, "", "v1", "pods")?;
    let managed = if active.len() < desired {
        create_pods(objects, &pod_info, &rs, desired - active.len()).await
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
        delete_pods(objects, &pod_info, &active[desired..]).await
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
    write_status(objects, &rs, failure).await?;
    managed
}

/// Creates `count` Pods from the ReplicaSet's template; stops at the first refusal.
async fn create_pods(
    objects: &Objects,
    pod_info: &Arc<ResourceInfo>,
    rs: &Value,
    count: usize,
) -> Result<(), ApiError> {
    let ns = meta::namespace(rs);
    for _ in 0..count {
        access::create(
            objects,
            access::Actor::ReplicaSet,
            pod_info,
            ns,
            pod_from_template(rs),
        )
        .await?;
    }
    Ok(())
}

/// Deletes the given Pods; stops at the first refusal.
async fn delete_pods(
    objects: &Objects,
    pod_info: &Arc<ResourceInfo>,
    pods: &[Object],
) -> Result<(), ApiError> {
    for pod in pods {
        access::delete(objects, access::Actor::ReplicaSet, pod_info, pod).await?;
    }
    Ok(())
}

fn created(obj: &Value) -> &str {
    meta::meta_str(obj, "creationTimestamp").unwrap_or("")
}

/// The Pods in `ns` controlled by the object with `uid`.
pub fn owned_pods(objects: &Objects, ns: &str, uid: &str) -> Vec<crate::storage::Object> {
    access::list(objects, "", "pods", ns)
        .into_iter()
        .filter(|p| controlled_by(p, uid))
        .collect()
}

/// A new Pod for a ReplicaSet.
fn pod_from_template(rs: &Value) -> Value {
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
        json!([access::owner_ref(rs, "apps/v1", "ReplicaSet")]),
    );
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Writes the ReplicaSet's status from its Pods as stored now, with the `ReplicaFailure`
/// condition (`reason`, `message`) of a failed create or delete, or without it.
async fn write_status(
    objects: &Objects,
    rs: &Value,
    failure: Option<(&str, String)>,
) -> Result<(), ApiError> {
    let ns = meta::namespace(rs).unwrap_or("");
    let pods: Vec<_> = owned_pods(objects, ns, meta::uid(rs))
        .into_iter()
        .filter(|p| pod_active(p))
        .collect();
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
        access::Actor::ReplicaSet,
        &access::info(objects, "apps", "v1", "replicasets")?,
        rs,
        status,
    )
    .await
}

use crate::objects::Objects;
