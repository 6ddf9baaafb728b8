//! Dynamic resource allocation in the simulation: upstream's ResourceClaim controller and the
//! scheduler's `DynamicResources` plugin, for the one simulated node.
//!
//! * A Pod's `resourceClaimTemplateName` claims get a ResourceClaim made from the template
//!   (`generateName: <pod>-<claim>-`, owned by the Pod, annotated
//!   `resource.kubernetes.io/pod-claim-name`), recorded in the Pod's
//!   `status.resourceClaimStatuses` ([`sync_pod`]).
//! * An unbound Pod is bound only once every claim it names is allocated and reserved for it
//!   ([`schedule`]): devices come from the published ResourceSlices through
//!   [`super::allocator`], the claim gets the `resource.kubernetes.io/delete-protection`
//!   finalizer, `status.allocation` and a `status.reservedFor` entry for the Pod. A Pod whose
//!   claims cannot be allocated stays `Pending` with the scheduler's `Unschedulable`
//!   condition, and is tried again when claims, slices, classes or templates change.
//! * A claim's reservations for Pods that are gone or done are released; a claim no longer
//!   reserved is deallocated and loses the finalizer; a claim made for a Pod that is done is
//!   deleted ([`sync_claim`]).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::access::{self, Actor};
use super::allocator::{self, CANNOT_ALLOCATE, INVALID_POOLS, InUse};
use super::pod_references::prefilter_rejection;
use super::pods::NODE_NAME;
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;

/// The finalizer the scheduler puts on claims it allocates.
pub const FINALIZER: &str = "resource.kubernetes.io/delete-protection";
/// The annotation naming the Pod's claim a generated ResourceClaim was made for.
pub const POD_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";
/// The API group of the DRA kinds.
const GROUP: &str = "resource.k8s.io";
/// `ResourceClaimReservedForMaxSize`.
const MAX_RESERVATIONS: usize = 256;

/// What the DRA plugin says of an unbound Pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every claim is allocated and reserved for the Pod (or it has none).
    Ready,
    /// The Pod cannot be scheduled now; the scheduler's condition message.
    Unschedulable(String),
}

/// The scheduler's message when the DRA plugin rejects the only node for `reason`.
fn unschedulable(reason: &str) -> Verdict {
    Verdict::Unschedulable(format!(
        "0/1 nodes are available: 1 {reason}. preemption: 0/1 nodes are available: \
         1 Preemption is not helpful for scheduling."
    ))
}

/// Whether a Pod names any ResourceClaim.
pub fn has_claims(pod: &Value) -> bool {
    meta::path(pod, "spec.resourceClaims")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty())
}

/// The ResourceClaim behind each of a Pod's claims, by the Pod's claim name: `Some(name)`
/// when known (named directly, or recorded in `status.resourceClaimStatuses`), `None` for a
/// template claim not created yet. Claims recorded as not needed are left out.
pub fn claim_names(pod: &Value) -> Vec<(String, Option<String>)> {
    let statuses = meta::path(pod, "status.resourceClaimStatuses")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut out = Vec::new();
    for claim in meta::path(pod, "spec.resourceClaims")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let name = text(claim, "resourceClaimName");
        let pod_claim = text(claim, "name").to_string();
        if !name.is_empty() {
            out.push((pod_claim, Some(name.to_string())));
            continue;
        }
        match statuses.iter().find(|s| text(s, "name") == pod_claim) {
            Some(status) => {
                // Without a claim name the claim is recorded as not needed.
                if let Some(generated) = status.get("resourceClaimName").and_then(Value::as_str) {
                    out.push((pod_claim, Some(generated.to_string())));
                }
            }
            None => out.push((pod_claim, None)),
        }
    }
    out
}

/// The ResourceClaim controller's `syncPod`: claims made from templates for the Pod's
/// template claims, recorded in its status.
pub async fn sync_pod(objects: &Objects, pod: &Value) -> Result<(), ApiError> {
    if meta::is_deleting(pod) || !has_claims(pod) {
        return Ok(());
    }
    let ns = meta::namespace(pod).unwrap_or("default").to_string();
    let claims = access::list(objects, GROUP, "resourceclaims", &ns);
    let names = claim_names(pod);
    let mut recorded: Vec<(String, String)> = Vec::new();
    for claim in meta::path(pod, "spec.resourceClaims")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let template = text(claim, "resourceClaimTemplateName");
        if template.is_empty() {
            continue;
        }
        let pod_claim = text(claim, "name");
        let known = names
            .iter()
            .find(|(n, _)| n == pod_claim)
            .and_then(|(_, name)| name.as_ref());
        // Recorded and still there, owned by the Pod: nothing to do.
        if let Some(name) = known
            && claims
                .iter()
                .any(|c| meta::name(c) == name && access::controlled_by(c, meta::uid(pod)))
        {
            continue;
        }
        // Made before but not recorded (or recorded and deleted since): reuse or remake.
        let existing = claims.iter().find(|c| {
            access::controlled_by(c, meta::uid(pod))
                && c["metadata"]["annotations"]
                    .get(POD_CLAIM_ANNOTATION)
                    .and_then(Value::as_str)
                    == Some(pod_claim)
        });
        let name = match existing {
            Some(c) => meta::name(c).to_string(),
            None => {
                let Some(template) =
                    access::get(objects, GROUP, "resourceclaimtemplates", &ns, template)
                else {
                    // Upstream reports the missing template and retries; the template's
                    // creation queues the Pod again here.
                    continue;
                };
                let created = create_claim(objects, pod, pod_claim, &template).await?;
                meta::name(&created).to_string()
            }
        };
        recorded.push((pod_claim.to_string(), name));
    }
    if recorded.is_empty() {
        return Ok(());
    }
    let info = access::info(objects, "", "v1", "pods")?;
    access::update_status(objects, Actor::ResourceClaim, &info, pod, move |pod| {
        let mut statuses = meta::path(pod, "status.resourceClaimStatuses")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (pod_claim, name) in &recorded {
            let entry = json!({"name": pod_claim, "resourceClaimName": name});
            match statuses.iter_mut().find(|s| text(s, "name") == pod_claim) {
                Some(s) => *s = entry,
                None => statuses.push(entry),
            }
        }
        meta::set_path(pod, "status.resourceClaimStatuses", Value::Array(statuses));
    })
    .await
}

/// Creates the claim for `pod_claim` of `pod` from `template`, as upstream's controller.
async fn create_claim(
    objects: &Objects,
    pod: &Value,
    pod_claim: &str,
    template: &Value,
) -> Result<Value, ApiError> {
    let pod_name = meta::name(pod);
    let mut generate_name = format!("{pod_name}-{pod_claim}-");
    // Room for the 5 random characters in 63: both parts shortened in proportion.
    const MAX_BASE: usize = 57;
    if generate_name.len() > MAX_BASE {
        let total = generate_name.len();
        let cut = |s: &str| {
            s.chars()
                .take(s.len() * MAX_BASE / total)
                .collect::<String>()
        };
        generate_name = format!("{}-{}", cut(pod_name), cut(pod_claim));
    }
    let mut annotations = template
        .pointer("/spec/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.insert(POD_CLAIM_ANNOTATION.into(), json!(pod_claim));
    let mut metadata = json!({
        "generateName": generate_name,
        "namespace": meta::namespace(pod),
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod_name,
            "uid": meta::uid(pod), "controller": true, "blockOwnerDeletion": true}],
        "annotations": annotations,
    });
    if let Some(labels) = template.pointer("/spec/metadata/labels") {
        metadata["labels"] = labels.clone();
    }
    let claim = json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": metadata,
        "spec": template.pointer("/spec/spec").cloned().unwrap_or_else(|| json!({})),
    });
    let info = access::info(objects, GROUP, "v1", "resourceclaims")?;
    let created = access::create(
        objects,
        Actor::ResourceClaim,
        &info,
        meta::namespace(pod),
        claim,
    )
    .await?;
    Ok((*created).clone())
}

/// The DRA plugin's PreFilter for an unbound Pod: its claims, or the scheduler's message
/// when one is not created yet, missing or being deleted (checked before any node is, so
/// this message wins over a cordoned node's).
pub fn prefilter(objects: &Objects, pod: &Value) -> Result<Vec<Value>, String> {
    let ns = meta::namespace(pod).unwrap_or("default").to_string();
    let mut claims: Vec<Value> = Vec::new();
    for (pod_claim, name) in claim_names(pod) {
        let Some(name) = name else {
            return Err(prefilter_rejection(&format!(
                "pod \"{ns}/{}\": ResourceClaim for {pod_claim:?} not created yet",
                meta::name(pod)
            )));
        };
        let Some(claim) = access::get(objects, GROUP, "resourceclaims", &ns, &name) else {
            return Err(prefilter_rejection(&format!(
                "resourceclaim.resource.k8s.io \"{name}\" not found"
            )));
        };
        if meta::is_deleting(&claim) {
            return Err(prefilter_rejection("resourceclaim is being deleted"));
        }
        claims.push(claim.as_ref().clone());
    }
    Ok(claims)
}

/// The scheduler's DRA plugin for an unbound Pod whose `claims` passed [`prefilter`]:
/// allocates and reserves them, or says why it cannot run on the node now.
pub async fn schedule(
    objects: &Objects,
    pod: &Value,
    claims: Vec<Value>,
) -> Result<Verdict, ApiError> {
    if claims.is_empty() {
        return Ok(Verdict::Ready);
    }
    let ns = meta::namespace(pod).unwrap_or("default").to_string();
    let pod_uid = meta::uid(pod).to_string();
    let reserved_for_pod = |claim: &Value| {
        reservations(claim)
            .iter()
            .any(|r| text(r, "resource") == "pods" && text(r, "uid") == pod_uid)
    };
    // Allocate what is not allocated yet, devices taken by earlier claims of the Pod included.
    let node = access::get(objects, "", "nodes", "", NODE_NAME)
        .map(|n| n.as_ref().clone())
        .unwrap_or_else(|| json!({"metadata": {"name": NODE_NAME}}));
    let inventory = allocator::devices_on(
        &access::list_all(objects, GROUP, "resourceslices")
            .iter()
            .map(|s| s.as_ref().clone())
            .collect::<Vec<_>>(),
        &node,
    );
    let classes: HashMap<String, Value> = access::list_all(objects, GROUP, "deviceclasses")
        .iter()
        .map(|c| (meta::name(c).to_string(), c.as_ref().clone()))
        .collect();
    let mut in_use = devices_in_use(objects);
    let mut allocations: Vec<Option<Value>> = Vec::new();
    for claim in &claims {
        if let Some(allocation) = claim.pointer("/status/allocation").filter(|a| !a.is_null()) {
            if !reserved_for_pod(claim) && reservations(claim).len() >= MAX_RESERVATIONS {
                return Ok(unschedulable("resourceclaim in use"));
            }
            if !allocated_here(allocation, &node) {
                return Ok(unschedulable("resourceclaim not available on the node"));
            }
            allocations.push(None);
            continue;
        }
        let spec = claim.get("spec").cloned().unwrap_or_else(|| json!({}));
        match allocator::allocate(&spec, &classes, &inventory, &in_use, NODE_NAME) {
            Ok(allocation) => {
                for result in results(&allocation) {
                    in_use.record(result);
                }
                allocations.push(Some(allocation));
            }
            Err(reason) if reason == CANNOT_ALLOCATE || reason == INVALID_POOLS => {
                return Ok(unschedulable(&reason));
            }
            Err(reason) => {
                return Ok(Verdict::Unschedulable(format!(
                    "0/1 nodes are available: 1 {CANNOT_ALLOCATE}: claim {ns}/{}: {reason}.",
                    meta::name(claim)
                )));
            }
        }
    }
    // Write: finalizer first (as upstream's scheduler), then allocation and reservation.
    let info = access::info(objects, GROUP, "v1", "resourceclaims")?;
    let pod_ref = json!({"resource": "pods", "name": meta::name(pod), "uid": pod_uid});
    for (claim, allocation) in claims.iter().zip(allocations) {
        if allocation.is_none() && reserved_for_pod(claim) {
            continue;
        }
        let mut current = claim.clone();
        if allocation.is_some()
            && let Some(written) = access::update(objects, Actor::Scheduler, &info, claim, |c| {
                let mut finalizers = meta::path(c, "metadata.finalizers")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if !finalizers.iter().any(|f| f == FINALIZER) {
                    finalizers.push(json!(FINALIZER));
                    meta::set_path(c, "metadata.finalizers", Value::Array(finalizers));
                }
            })
            .await?
        {
            current = written.as_ref().clone();
        }
        let pod_ref = pod_ref.clone();
        access::update_status(objects, Actor::Scheduler, &info, &current, move |c| {
            if let Some(allocation) = &allocation
                && c.pointer("/status/allocation").is_none_or(Value::is_null)
            {
                meta::set_path(c, "status.allocation", allocation.clone());
            }
            let mut reserved = reservations(c).to_vec();
            if !reserved.iter().any(|r| r["uid"] == pod_ref["uid"]) {
                reserved.push(pod_ref.clone());
            }
            meta::set_path(c, "status.reservedFor", Value::Array(reserved));
        })
        .await?;
    }
    Ok(Verdict::Ready)
}

/// Whether an allocation's node selector admits `node` (none admits all).
fn allocated_here(allocation: &Value, node: &Value) -> bool {
    allocation
        .get("nodeSelector")
        .filter(|s| s.is_object())
        .is_none_or(|selector| allocator::node_matches(selector, node))
}

/// What the claims' allocations hold (admin access results excepted).
fn devices_in_use(objects: &Objects) -> InUse {
    let mut in_use = InUse::default();
    for claim in access::list_all(objects, GROUP, "resourceclaims") {
        let Some(allocation) = claim.pointer("/status/allocation") else {
            continue;
        };
        for result in results(allocation) {
            in_use.record(result);
        }
    }
    in_use
}

/// The device results of an allocation.
fn results(allocation: &Value) -> &[Value] {
    allocation
        .pointer("/devices/results")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A claim's `status.reservedFor`.
fn reservations(claim: &Value) -> &[Value] {
    claim
        .pointer("/status/reservedFor")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Upstream's `isPodDone`: terminal, or deleted before being scheduled.
fn pod_done(pod: &Value) -> bool {
    matches!(
        meta::path(pod, "status.phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    ) || (meta::is_deleting(pod)
        && meta::path(pod, "spec.nodeName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty())
}

/// The ResourceClaim controller's `syncClaim`.
pub async fn sync_claim(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    let Some(claim) = access::get(objects, GROUP, "resourceclaims", ns, name) else {
        return Ok(());
    };
    let claim = claim.as_ref().clone();
    let pod_of = |name: &str| access::get(objects, "", "pods", ns, name);
    let valid: Vec<Value> = reservations(&claim)
        .iter()
        .filter(|r| {
            if text(r, "resource") != "pods" || !text(r, "apiGroup").is_empty() {
                return true; // only Pods are looked after
            }
            pod_of(text(r, "name"))
                .is_some_and(|p| meta::uid(&p) == text(r, "uid") && !pod_done(&p))
        })
        .cloned()
        .collect();
    let has_finalizer = meta::path(&claim, "metadata.finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|f| f == FINALIZER));
    let allocated = claim
        .pointer("/status/allocation")
        .is_some_and(|a| !a.is_null());
    let info = access::info(objects, GROUP, "v1", "resourceclaims")?;
    let released = valid.len() < reservations(&claim).len();
    let deleting_unused = has_finalizer && meta::is_deleting(&claim) && valid.is_empty();
    if released || (deleting_unused && allocated) {
        let deallocate = valid.is_empty() && has_finalizer;
        let valid = valid.clone();
        access::update_status(objects, Actor::ResourceClaim, &info, &claim, move |c| {
            if valid.is_empty() {
                if let Some(status) = c.get_mut("status").and_then(Value::as_object_mut) {
                    status.remove("reservedFor");
                }
            } else {
                meta::set_path(c, "status.reservedFor", Value::Array(valid.clone()));
            }
            if deallocate && let Some(status) = c.get_mut("status").and_then(Value::as_object_mut) {
                status.remove("allocation");
            }
        })
        .await?;
    }
    if has_finalizer && valid.is_empty() && (released || meta::is_deleting(&claim)) {
        let current = access::get(objects, GROUP, "resourceclaims", ns, name);
        if let Some(current) =
            current.filter(|c| c.pointer("/status/allocation").is_none_or(Value::is_null))
        {
            access::update(objects, Actor::ResourceClaim, &info, &current, |c| {
                if let Some(metadata) = c.get_mut("metadata").and_then(Value::as_object_mut) {
                    let left: Vec<Value> = metadata
                        .get("finalizers")
                        .and_then(Value::as_array)
                        .map(|f| f.iter().filter(|f| *f != FINALIZER).cloned().collect())
                        .unwrap_or_default();
                    if left.is_empty() {
                        metadata.remove("finalizers");
                    } else {
                        metadata.insert("finalizers".into(), Value::Array(left));
                    }
                }
            })
            .await?;
        }
    }
    if valid.is_empty() && !meta::is_deleting(&claim) {
        // Made for a Pod that will not run (any more): deleted.
        if let Some((kind, pod_name, uid)) = owning_pod(&claim)
            && kind == "Pod"
            && let Some(pod) = pod_of(pod_name)
            && (meta::uid(&pod) != uid || pod_done(&pod))
        {
            access::delete(objects, Actor::ResourceClaim, &info, &claim).await?;
        }
    }
    Ok(())
}

/// The Pod controlling a claim: `(kind, name, uid)` of a `v1` controller reference.
fn owning_pod(claim: &Value) -> Option<(&str, &str, &str)> {
    claim["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"].as_bool() == Some(true) && text(o, "apiVersion") == "v1")
        .map(|o| (text(o, "kind"), text(o, "name"), text(o, "uid")))
}

/// A string member (`""` when absent).
fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}
