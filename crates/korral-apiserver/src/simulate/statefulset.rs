//! The StatefulSet controller: Pods `<name>-0 … <name>-N-1` with stable names.
//!
//! With `OrderedReady` (the default) Pod *i* is created only once Pods *0 … i-1* are Running
//! and Ready, scale-down removes the highest ordinal first, one at a time; `Parallel` creates
//! and deletes them all at once. Pods carry `controller-revision-hash` (`<name>-<hash>` of the
//! template), `statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index`, and
//! `hostname`/`subdomain`. A template change replaces Pods of the old revision from the
//! highest ordinal down (rolling update, honouring `partition`; `OnDelete` waits for the user).
//!
//! Each Pod gets the claims of the `volumeClaimTemplates` (`<template>-<name>-<ordinal>`, created
//! before the Pod, labelled with the template's and the selector's labels, owned by the
//! StatefulSet when `persistentVolumeClaimRetentionPolicy.whenDeleted` is `Delete`), mounted in
//! place of the template's volume of the same name; they outlive scale-down. A Pending Pod
//! gets back the claims it misses. When a claim cannot be made (or is being deleted) the Pod is
//! not created.
//!
//! Events, as upstream's: `SuccessfulCreate`/`FailedCreate` for each claim ("create Claim
//! data-web-0 Pod web-0 in StatefulSet web success") and for each Pod ("create Pod web-0 in
//! StatefulSet web successful"; a Pod whose claims failed is "create Pod ... failed error:
//! <the claims' errors>"), `SuccessfulDelete`/`FailedDelete` for each Pod deleted.
//!
//! Each template is recorded as a ControllerRevision (see [`super::history`]).
//!
//! Simplifications: `whenScaled: Delete` keeps the claims.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::access::{self, controlled_by, pod_active, pod_ready};
use super::events::{Note, Recorder};
use super::history;
use super::names::template_hash;
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;
use crate::storage::Object;

const REVISION_LABEL: &str = "controller-revision-hash";
const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// Reconciles one StatefulSet; the Pods it creates and deletes are recorded as events.
pub async fn reconcile(
    objects: &Objects,
    events: &Recorder,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
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
    // Upstream hashes a StatefulSet's revisions with its collision count, 0 until one is set
    // (so the first status write, which sets it, does not change the revision).
    let collision = meta::path(&sts, "status.collisionCount")
        .and_then(Value::as_u64)
        .map_or(0, |c| c as u32);
    let hash = template_hash(&template, Some(collision));
    let update_revision = format!("{name}-{hash}");
    let pods = ordinal_pods(objects, ns, &sts);
    let mut live: Vec<String> = pods
        .values()
        .filter_map(|p| pod_revision(p).map(str::to_string))
        .collect();
    live.extend(
        meta::path(&sts, "status.currentRevision")
            .and_then(Value::as_str)
            .map(str::to_string),
    );
    let owner = history::Owner {
        obj: &sts,
        api_version: "apps/v1",
        kind: "StatefulSet",
        actor: access::Actor::StatefulSet,
    };
    history::record(objects, ns, &owner, &hash, &live).await?;

    // Scale up / replace missing Pods, in order.
    for ordinal in 0..replicas {
        match pods.get(&ordinal) {
            None => {
                let pod = new_pod(&sts, ordinal, &update_revision);
                let pod_name = meta::name(&pod).to_string();
                // The Pod's claims first; when one cannot be made, neither is the Pod.
                if let Err(e) = create_claims(objects, events, &sts, &pod_name, ordinal).await {
                    let outcome = Err(&e);
                    pod_event(
                        objects,
                        events,
                        &sts,
                        ("create", "Create"),
                        &pod_name,
                        outcome,
                    )
                    .await;
                    return Err(e);
                }
                let created = access::create(
                    objects,
                    access::Actor::StatefulSet,
                    &pod_info,
                    Some(ns),
                    pod,
                )
                .await;
                let outcome = created.as_ref().map(|_| ());
                pod_event(
                    objects,
                    events,
                    &sts,
                    ("create", "Create"),
                    &pod_name,
                    outcome,
                )
                .await;
                created?;
                if !parallel {
                    return write_status(objects, ns, &sts, &update_revision).await;
                }
            }
            // A Pending Pod gets the claims it misses (deleted since it was made).
            Some(pod)
                if meta::path(pod, "status.phase").and_then(Value::as_str) == Some("Pending")
                    && !meta::is_deleting(pod)
                    && !claims_exist(objects, ns, &sts, ordinal) =>
            {
                create_claims(objects, events, &sts, meta::name(pod), ordinal).await?;
                if !parallel && !pod_up(pod) {
                    return write_status(objects, ns, &sts, &update_revision).await;
                }
            }
            Some(pod) if !parallel && !pod_up(pod) => {
                if meta::path(pod, "status.phase").and_then(Value::as_str) == Some("Failed") {
                    delete_pod(objects, events, &pod_info, &sts, pod).await?;
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
            delete_pod(objects, events, &pod_info, &sts, pod).await?;
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
            delete_pod(objects, events, &pod_info, &sts, pod).await?;
        }
    }
    write_status(objects, ns, &sts, &update_revision).await
}

/// Deletes a Pod of the StatefulSet, recorded as an event.
async fn delete_pod(
    objects: &Objects,
    events: &Recorder,
    pod_info: &Arc<ResourceInfo>,
    sts: &Value,
    pod: &Value,
) -> Result<(), ApiError> {
    let deleted = access::delete(objects, access::Actor::StatefulSet, pod_info, pod).await;
    pod_event(
        objects,
        events,
        sts,
        ("delete", "Delete"),
        meta::name(pod),
        deleted.as_ref().map(|_| ()),
    )
    .await;
    deleted
}

/// Records a Pod created or deleted (`verb`: the message's and the reason's word) as upstream's StatefulSet controller does:
/// `SuccessfulCreate` "create Pod web-0 in StatefulSet web successful", or a `FailedCreate`
/// warning "... failed error: <error>".
async fn pod_event(
    objects: &Objects,
    events: &Recorder,
    sts: &Value,
    verb: (&str, &str),
    pod: &str,
    outcome: Result<(), &ApiError>,
) {
    let set = meta::name(sts);
    let (verb, noun) = verb;
    let (reason, message, warning) = match outcome {
        Ok(()) => (
            format!("Successful{noun}"),
            format!("{verb} Pod {pod} in StatefulSet {set} successful"),
            false,
        ),
        Err(e) => (
            format!("Failed{noun}"),
            format!(
                "{verb} Pod {pod} in StatefulSet {set} failed error: {}",
                e.message
            ),
            true,
        ),
    };
    let note = if warning {
        Note::warning(&reason, message)
    } else {
        Note::normal(&reason, message)
    };
    events
        .record(objects, access::Actor::StatefulSet, sts, note)
        .await;
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

/// The claim templates of a StatefulSet.
fn claim_templates(sts: &Value) -> &[Value] {
    meta::path(sts, "spec.volumeClaimTemplates")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The claim of template `template` for Pod `ordinal`.
fn claim_name(template: &Value, sts: &Value, ordinal: i64) -> String {
    format!("{}-{}-{ordinal}", meta::name(template), meta::name(sts))
}

/// Whether every claim Pod `ordinal` mounts is stored.
fn claims_exist(objects: &Objects, ns: &str, sts: &Value, ordinal: i64) -> bool {
    claim_templates(sts).iter().all(|template| {
        let name = claim_name(template, sts, ordinal);
        access::get(objects, "", "persistentvolumeclaims", ns, &name).is_some()
    })
}

/// Creates the claims Pod `pod` (of ordinal `ordinal`) mounts that do not exist yet, each
/// recorded as upstream's StatefulSet controller records it (`SuccessfulCreate` "create Claim
/// data-web-0 Pod web-0 in StatefulSet web success", or a `FailedCreate` warning "create
/// Claim ... for Pod ... failed error: <error>"). The error names every claim that could not
/// be made, or is being deleted, as upstream's aggregate does.
async fn create_claims(
    objects: &Objects,
    events: &Recorder,
    sts: &Value,
    pod: &str,
    ordinal: i64,
) -> Result<(), ApiError> {
    let templates = claim_templates(sts);
    if templates.is_empty() {
        return Ok(());
    }
    let ns = meta::namespace(sts).unwrap_or_default();
    let info = access::info(objects, "", "v1", "persistentvolumeclaims")?;
    let owned = meta::path(sts, "spec.persistentVolumeClaimRetentionPolicy.whenDeleted")
        .and_then(Value::as_str)
        == Some("Delete");
    let mut errors = Vec::new();
    for template in templates {
        let name = claim_name(template, sts, ordinal);
        if let Some(existing) = access::get(objects, "", "persistentvolumeclaims", ns, &name) {
            if meta::is_deleting(&existing) {
                errors.push(format!("pvc {name} is being deleted"));
            }
            continue;
        }
        let claim = new_claim(template, sts, &name, owned);
        let created =
            access::create(objects, access::Actor::StatefulSet, &info, Some(ns), claim).await;
        if let Err(e) = &created {
            errors.push(format!("failed to create PVC {name}: {}", e.message));
        }
        // A claim made meanwhile by someone else is no event of the controller's.
        if created.as_ref().is_err_and(|e| e.code == 409) {
            continue;
        }
        claim_event(
            objects,
            events,
            sts,
            pod,
            &name,
            created.as_ref().map(|_| ()),
        )
        .await;
    }
    match aggregate(&errors) {
        None => Ok(()),
        Some(message) => Err(ApiError::new(500, "InternalError", message)),
    }
}

/// The claim `name` of `template` (upstream's `getPersistentVolumeClaims`: the template with
/// the selector's labels over its own).
fn new_claim(template: &Value, sts: &Value, name: &str, owned: bool) -> Value {
    let mut labels = access::labels_of(template, "metadata.labels");
    labels.extend(access::labels_of(sts, "spec.selector.matchLabels"));
    let mut metadata = json!({"name": name, "namespace": meta::namespace(sts), "labels": labels});
    if let Some(annotations) = template.pointer("/metadata/annotations") {
        metadata["annotations"] = annotations.clone();
    }
    if owned {
        metadata["ownerReferences"] = json!([access::owner_ref(sts, "apps/v1", "StatefulSet")]);
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Records a claim created for a Pod, as upstream's `recordClaimEvent` does.
async fn claim_event(
    objects: &Objects,
    events: &Recorder,
    sts: &Value,
    pod: &str,
    claim: &str,
    outcome: Result<(), &ApiError>,
) {
    let set = meta::name(sts);
    let note = match outcome {
        Ok(()) => Note::normal(
            "SuccessfulCreate",
            format!("create Claim {claim} Pod {pod} in StatefulSet {set} success"),
        ),
        Err(e) => Note::warning(
            "FailedCreate",
            format!(
                "create Claim {claim} for Pod {pod} in StatefulSet {set} failed error: {}",
                e.message
            ),
        ),
    };
    events
        .record(objects, access::Actor::StatefulSet, sts, note)
        .await;
}

/// Several errors as one message, as upstream's `errors.NewAggregate` prints them: one alone
/// as it is, several distinct ones in brackets.
fn aggregate(errors: &[String]) -> Option<String> {
    let mut distinct: Vec<&str> = Vec::new();
    for error in errors {
        if !distinct.contains(&error.as_str()) {
            distinct.push(error);
        }
    }
    match distinct.as_slice() {
        [] => None,
        [one] => Some((*one).to_string()),
        many => Some(format!("[{}]", many.join(", "))),
    }
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
    let claims = claim_templates(sts);
    if !claims.is_empty() {
        let mut volumes: Vec<Value> = spec
            .get("volumes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for claim in claims {
            let volume = json!({
                "name": meta::name(claim),
                "persistentVolumeClaim": {"claimName": claim_name(claim, sts, ordinal)},
            });
            match volumes
                .iter_mut()
                .find(|v| v.get("name") == volume.get("name"))
            {
                Some(existing) => *existing = volume,
                None => volumes.push(volume),
            }
        }
        spec["volumes"] = Value::Array(volumes);
    }
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

    #[test]
    fn pods_mount_their_claims_in_place_of_the_template_volume() {
        let sts = json!({"metadata": {"name": "db", "uid": "u"}, "spec": {
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}],
            "template": {"spec": {"containers": [{"name": "c", "image": "pg"}],
                "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "x"}}]}}}});
        let pod = new_pod(&sts, 1, "db-abc");
        assert_eq!(
            pod["spec"]["volumes"],
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-1"}},
                   {"name": "cfg", "configMap": {"name": "x"}}])
        );
    }

    #[test]
    fn claims_carry_the_template_and_the_selector_labels() {
        let sts = json!({"metadata": {"name": "db", "namespace": "ns", "uid": "u"},
            "spec": {"selector": {"matchLabels": {"app": "db", "tier": "data"}}}});
        let template = json!({"metadata": {"name": "data", "labels": {"tier": "x", "size": "s"},
            "annotations": {"a": "b"}}, "spec": {"accessModes": ["ReadWriteOnce"]}});
        let claim = new_claim(&template, &sts, "data-db-0", false);
        assert_eq!(claim["metadata"]["name"], "data-db-0");
        assert_eq!(claim["metadata"]["namespace"], "ns");
        assert_eq!(
            claim["metadata"]["labels"],
            json!({"app": "db", "tier": "data", "size": "s"})
        );
        assert_eq!(claim["metadata"]["annotations"], json!({"a": "b"}));
        assert_eq!(claim["spec"], json!({"accessModes": ["ReadWriteOnce"]}));
        assert!(claim["metadata"].get("ownerReferences").is_none());
        let owned = new_claim(&template, &sts, "data-db-0", true);
        assert_eq!(
            owned["metadata"]["ownerReferences"][0]["kind"],
            "StatefulSet"
        );
    }

    #[test]
    fn errors_aggregate_as_upstream_prints_them() {
        assert_eq!(aggregate(&[]), None);
        let one = "pvc a is being deleted".to_string();
        assert_eq!(aggregate(std::slice::from_ref(&one)), Some(one.clone()));
        let two = "failed to create PVC b: forbidden".to_string();
        assert_eq!(
            aggregate(&[one.clone(), two.clone(), one.clone()]),
            Some(format!("[{one}, {two}]"))
        );
    }
}
