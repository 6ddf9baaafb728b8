//! The StatefulSet controller: Pods `<name>-0 … <name>-N-1` with stable names.
//!
//! With `OrderedReady` (the default) Pod *i* is created only once Pods *0 … i-1* are Running
//! and Ready, scale-down removes the highest ordinal first, one at a time; `Parallel` creates
//! and deletes them all at once. Pods carry `controller-revision-hash` (`<name>-<hash>` of the
//! template), `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`, and
//! `hostname`/`subdomain`. A template change replaces Pods of the old revision from the
//! highest ordinal down (rolling update, honouring `partition`; `OnDelete` waits for the user).
//!
//! Simplifications: no ControllerRevision objects and no PersistentVolumeClaims from
//! `volumeClaimTemplates`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::access::{self, controlled_by, pod_active, pod_ready};
use super::names::template_hash;
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::Object;

const REVISION_LABEL: &str = "controller-revision-hash";
const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// Reconciles one StatefulSet.
pub async fn reconcile(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    let Some(sts) = access::get(objects, "apps", "statefulsets", ns, name) else {
        return Ok(());
    };
    if meta::is_deleting(&sts) {
        return Ok(());
    }
    let pod_info = access::info(objects, "", "v1", "pods")?;
    let replicas = access::int(&sts, "spec.replicas", 1).max(0);
    let parallel =
        meta::path(&sts, "spec.podManagementPolicy").and_then(Value::as_str) == Some("Parallel");
    let template = meta::path(&sts, "spec.template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let collision = meta::path(&sts, "status.collisionCount")
        .and_then(Value::as_u64)
        .map(|c| c as u32);
    let update_revision = format!("{name}-{}", template_hash(&template, collision));
    let pods = ordinal_pods(objects, ns, &sts);

    // Scale up / replace missing Pods, in order.
    for ordinal in 0..replicas {
        match pods.get(&ordinal) {
            None => {
                access::create(
                    objects,
                    access::Actor::StatefulSet,
                    &pod_info,
                    Some(ns),
                    new_pod(&sts, ordinal, &update_revision),
                )
                .await?;
                if !parallel {
                    return write_status(objects, ns, &sts, &update_revision).await;
                }
            }
            Some(pod) if !parallel && !pod_up(pod) => {
                if meta::path(pod, "status.phase").and_then(Value::as_str) == Some("Failed") {
                    access::delete(objects, access::Actor::StatefulSet, &pod_info, pod).await?;
                }
                return write_status(objects, ns, &sts, &update_revision).await;
            }
            Some(_) => {}
        }
    }
    // Scale down, highest ordinal first.
    let extra: Vec<&Object> = pods.range(replicas..).rev().map(|(_, p)| p).collect();
    for pod in extra {
        if !meta::is_deleting(pod) {
            access::delete(objects, access::Actor::StatefulSet, &pod_info, pod).await?;
        }
        if !parallel {
            return write_status(objects, ns, &sts, &update_revision).await;
        }
    }
    // Rolling update: replace the highest Pod of an old revision at or above the partition.
    let rolling =
        meta::path(&sts, "spec.updateStrategy.type").and_then(Value::as_str) != Some("OnDelete");
    let partition = access::int(&sts, "spec.updateStrategy.rollingUpdate.partition", 0);
    let all_ready =
        (0..replicas).all(|i| pods.get(&i).is_some_and(|p| pod_active(p) && pod_ready(p)));
    if rolling && all_ready {
        let stale = pods
            .range(partition.max(0)..replicas)
            .rev()
            .map(|(_, p)| p)
            .find(|p| pod_revision(p) != Some(update_revision.as_str()));
        if let Some(pod) = stale {
            access::delete(objects, access::Actor::StatefulSet, &pod_info, pod).await?;
        }
    }
    write_status(objects, ns, &sts, &update_revision).await
}

/// The StatefulSet's Pods by ordinal.
fn ordinal_pods(objects: &Objects, ns: &str, sts: &Value) -> BTreeMap<i64, Object> {
    let prefix = format!("{}-", meta::name(sts));
    access::list(objects, "", "pods", ns)
        .into_iter()
        .filter(|p| controlled_by(p, meta::uid(sts)))
        .filter_map(|p| {
            let ordinal = meta::name(&p).strip_prefix(&prefix)?.parse::<i64>().ok()?;
            Some((ordinal, p))
        })
        .collect()
}

/// Whether a Pod is running and Ready.
fn pod_up(pod: &Value) -> bool {
    pod_active(pod) && pod_ready(pod)
}

fn pod_revision(pod: &Value) -> Option<&str> {
    meta::labels(pod)?.get(REVISION_LABEL)?.as_str()
}

fn new_pod(sts: &Value, ordinal: i64, revision: &str) -> Value {
    let name = format!("{}-{ordinal}", meta::name(sts));
    let template = meta::path(sts, "spec.template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut labels = access::labels_of(&template, "metadata.labels");
    labels.insert(REVISION_LABEL.into(), json!(revision));
    labels.insert(POD_NAME_LABEL.into(), json!(name));
    labels.insert(POD_INDEX_LABEL.into(), json!(ordinal.to_string()));
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    spec["hostname"] = json!(name);
    if let Some(service) = meta::path(sts, "spec.serviceName").and_then(Value::as_str)
        && !service.is_empty()
    {
        spec["subdomain"] = json!(service);
    }
    let mut metadata = json!({
        "name": name,
        "labels": labels,
        "ownerReferences": [access::owner_ref(sts, "apps/v1", "StatefulSet")],
    });
    if let Some(annotations) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = annotations.clone();
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

async fn write_status(
    objects: &Objects,
    ns: &str,
    sts: &Value,
    update_revision: &str,
) -> Result<(), ApiError> {
    let pods: Vec<Object> = ordinal_pods(objects, ns, sts)
        .into_values()
        .filter(|p| !meta::is_deleting(p))
        .collect();
    let ready = pods
        .iter()
        .filter(|p| pod_active(p) && pod_ready(p))
        .count();
    let updated = pods
        .iter()
        .filter(|p| pod_revision(p) == Some(update_revision))
        .count();
    let replicas = access::int(sts, "spec.replicas", 1).max(0) as usize;
    let previous_current = meta::path(sts, "status.currentRevision")
        .and_then(Value::as_str)
        .unwrap_or(update_revision)
        .to_string();
    let current_revision = if updated == pods.len() && pods.len() == replicas {
        update_revision.to_string()
    } else {
        previous_current
    };
    let current = pods
        .iter()
        .filter(|p| pod_revision(p) == Some(current_revision.as_str()))
        .count();
    let mut status = json!({
        "observedGeneration": access::generation(sts),
        "replicas": pods.len(),
        "currentRevision": current_revision,
        "updateRevision": update_revision,
        "collisionCount": meta::path(sts, "status.collisionCount").cloned().unwrap_or(json!(0)),
        "availableReplicas": ready,
    });
    for (field, n) in [
        ("readyReplicas", ready),
        ("currentReplicas", current),
        ("updatedReplicas", updated),
    ] {
        if n > 0 {
            status[field] = json!(n);
        }
    }
    if sts.get("status") == Some(&status) {
        return Ok(());
    }
    access::write_status(
        objects,
        access::Actor::StatefulSet,
        &access::info(objects, "apps", "v1", "statefulsets")?,
        sts,
        status,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_get_stable_identity() {
        let sts = json!({"metadata": {"name": "web", "uid": "u"}, "spec": {"serviceName": "web-svc",
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        let pod = new_pod(&sts, 2, "web-abc");
        assert_eq!(pod["metadata"]["name"], "web-2");
        assert_eq!(pod["metadata"]["labels"]["app"], "web");
        assert_eq!(pod["metadata"]["labels"][REVISION_LABEL], "web-abc");
        assert_eq!(pod["metadata"]["labels"][POD_NAME_LABEL], "web-2");
        assert_eq!(pod["metadata"]["labels"][POD_INDEX_LABEL], "2");
        assert_eq!(pod["spec"]["hostname"], "web-2");
        assert_eq!(pod["spec"]["subdomain"], "web-svc");
    }
}
