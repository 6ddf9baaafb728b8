//! The DaemonSet controller: one Pod on the simulated node.
//!
//! The Pod is `<daemonset>-<suffix>`, pinned to the node with a required node affinity on
//! `metadata.name` (the scheduler step then binds it), carries the DaemonSet tolerations,
//! `controller-revision-hash` and `pod-template-generation`; a Pod of an old template is
//! replaced (rolling update, one at a time; `OnDelete` waits for the user). Each template is
//! recorded as a ControllerRevision (see [`super::history`]), so `kubectl rollout history`
//! and `kubectl rollout undo` work.

use serde_json::{Value, json};

use super::access::{self, pod_active, pod_ready};
use super::events::Recorder;
use super::history;
use super::names::template_hash;
use super::pods::NODE_NAME;
use super::replicaset::owned_pods;
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::Object;

const REVISION_LABEL: &str = "controller-revision-hash";
const GENERATION_LABEL: &str = "pod-template-generation";

/// Reconciles one DaemonSet; the Pods it creates and deletes are recorded as events.
pub async fn reconcile(
    objects: &Objects,
    events: &Recorder,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    let Some(ds) = access::get(objects, "apps", "daemonsets", ns, name) else {
        return Ok(());
    };
    if meta::is_deleting(&ds) {
        return Ok(());
    }
    let pod_info = access::info(objects, "", "v1", "pods")?;
    let template = meta::path(&ds, "spec.template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let collision = meta::path(&ds, "status.collisionCount")
        .and_then(Value::as_u64)
        .map(|c| c as u32);
    let hash = template_hash(&template, collision);
    let owned = owned_pods(objects, ns, meta::uid(&ds));
    // As upstream: a Pod still terminating on the node keeps a new one from being made until
    // it is gone.
    let terminating = owned
        .iter()
        .any(|p| meta::is_deleting(p) && !super::pods::terminal(p));
    let mut active: Vec<Object> = owned.into_iter().filter(|p| pod_active(p)).collect();
    let live: Vec<String> = active
        .iter()
        .filter_map(|p| revision(p).map(|h| format!("{name}-{h}")))
        .collect();
    let owner = history::Owner {
        obj: &ds,
        api_version: "apps/v1",
        kind: "DaemonSet",
        actor: access::Actor::DaemonSet,
    };
    history::record(objects, ns, &owner, &hash, &live).await?;
    active.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
    let on_delete =
        meta::path(&ds, "spec.updateStrategy.type").and_then(Value::as_str) == Some("OnDelete");
    match active.split_first() {
        None if terminating => {}
        None => {
            let created = access::create(
                objects,
                access::Actor::DaemonSet,
                &pod_info,
                Some(ns),
                new_pod(&ds, &hash),
            )
            .await;
            events
                .pod_created(
                    objects,
                    access::Actor::DaemonSet,
                    &ds,
                    created.as_ref().map(|p| &**p),
                )
                .await;
            created?;
        }
        Some((first, extra)) => {
            for pod in extra {
                events
                    .delete_pod(objects, access::Actor::DaemonSet, &pod_info, &ds, pod)
                    .await?;
            }
            if !on_delete && revision(first) != Some(hash.as_str()) {
                events
                    .delete_pod(objects, access::Actor::DaemonSet, &pod_info, &ds, first)
                    .await?;
            }
        }
    }
    write_status(objects, ns, &ds, &hash).await
}

fn revision(pod: &Value) -> Option<&str> {
    meta::labels(pod)?.get(REVISION_LABEL)?.as_str()
}

fn new_pod(ds: &Value, hash: &str) -> Value {
    let template = meta::path(ds, "spec.template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut labels = access::labels_of(&template, "metadata.labels");
    labels.insert(REVISION_LABEL.into(), json!(hash));
    labels.insert(
        GENERATION_LABEL.into(),
        json!(access::generation(ds).to_string()),
    );
    let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE_NAME]}]}]
    }}});
    let mut tolerations: Vec<Value> = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ] {
        if !tolerations.iter().any(|t| t["key"] == key) {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": effect}));
        }
    }
    spec["tolerations"] = Value::Array(tolerations);
    let mut metadata = json!({
        "generateName": format!("{}-", meta::name(ds)),
        "labels": labels,
        "ownerReferences": [access::owner_ref(ds, "apps/v1", "DaemonSet")],
    });
    if let Some(annotations) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = annotations.clone();
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

async fn write_status(objects: &Objects, ns: &str, ds: &Value, hash: &str) -> Result<(), ApiError> {
    let pods: Vec<Object> = owned_pods(objects, ns, meta::uid(ds))
        .into_iter()
        .filter(|p| pod_active(p))
        .collect();
    let scheduled = pods.len().min(1);
    let ready = pods.iter().filter(|p| pod_ready(p)).count().min(1);
    let updated = pods
        .iter()
        .filter(|p| revision(p) == Some(hash))
        .count()
        .min(1);
    let mut status = json!({
        "currentNumberScheduled": scheduled,
        "desiredNumberScheduled": 1,
        "numberMisscheduled": 0,
        "numberReady": ready,
        "observedGeneration": access::generation(ds),
    });
    for (field, n) in [
        ("numberAvailable", ready),
        ("updatedNumberScheduled", updated),
        ("numberUnavailable", 1 - ready),
    ] {
        if n > 0 {
            status[field] = json!(n);
        }
    }
    if let Some(c) = meta::path(ds, "status.collisionCount") {
        status["collisionCount"] = c.clone();
    }
    if ds.get("status") == Some(&status) {
        return Ok(());
    }
    access::write_status(
        objects,
        access::Actor::DaemonSet,
        &access::info(objects, "apps", "v1", "daemonsets")?,
        ds,
        status,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_are_pinned_to_the_node_and_labelled() {
        let ds = json!({"metadata": {"name": "agent", "uid": "u", "generation": 2},
            "spec": {"template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
        let pod = new_pod(&ds, "abc");
        assert_eq!(pod["metadata"]["generateName"], "agent-");
        assert_eq!(pod["metadata"]["labels"][REVISION_LABEL], "abc");
        assert_eq!(pod["metadata"]["labels"][GENERATION_LABEL], "2");
        assert_eq!(
            pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0],
            NODE_NAME
        );
        assert_eq!(pod["spec"]["tolerations"].as_array().map(Vec::len), Some(6));
    }
}
