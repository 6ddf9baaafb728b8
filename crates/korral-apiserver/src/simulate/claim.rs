//! Pod claiming shared by the controllers that select their Pods with a label selector
//! (upstream's `PodControllerRefManager.ClaimPods`, `controller_ref_manager.go`): orphans an
//! owner selects are adopted (a controller owner reference, and the owner's finalizers, are
//! added), Pods it controls but no longer selects are released (the reference and the
//! finalizers removed).
//!
//! The claiming kinds are described by a [`Managed`]: ReplicaSets and ReplicationControllers
//! ([`super::replicaset`]) claim their active Pods; Jobs ([`super::jobs`]) claim all of
//! theirs and track adopted Pods with their finalizer.

use std::sync::Arc;

use serde_json::{Value, json};

use super::access::{self, Actor, pod_active};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;
use crate::selector::{LabelSelector, from_label_selector_json};
use crate::storage::Object;

/// How a managed kind spells its Pod selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelectorShape {
    /// A `metav1.LabelSelector` (`matchLabels`, `matchExpressions`), as ReplicaSets have.
    LabelSelector,
    /// A plain label map, as ReplicationControllers have (the API server defaults it from the
    /// template's labels).
    Map,
}

/// A kind that claims Pods by its selector.
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
    /// Whether it claims only active Pods (ReplicaSets filter them first) or every Pod
    /// (Jobs).
    pub active_only: bool,
    /// Finalizers added to the Pods it adopts and removed from those it releases
    /// (upstream's `NewPodControllerRefManager(..., finalizers...)`).
    pub finalizers: &'static [&'static str],
}

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
    /// non-empty selector of every managed kind, and adopting every orphan of the namespace
    /// would be the wrong way to fail.
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

    /// Whether it would look at `pod` at all (ReplicaSets only look at active Pods).
    fn considers(&self, pod: &Value) -> bool {
        !self.active_only || pod_active(pod)
    }
}

/// What an owner makes of one Pod of its namespace (upstream's `ClaimObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Controlled and selected: one of its Pods.
    Owned,
    /// An orphan it selects: adopted.
    Adopt,
    /// Controlled but no longer selected: released.
    Release,
    /// Another controller's, an orphan it does not select or one being deleted, or (while
    /// the owner is being deleted) anything it would adopt or release.
    Ignore,
}

/// How the owner with `uid` and `selector` claims `pod`; `owner_deleting` when the owner
/// has a deletion timestamp (it then neither adopts nor releases).
pub fn claim(pod: &Value, uid: &str, selector: &LabelSelector, owner_deleting: bool) -> Claim {
    let selected = selector.matches(meta::labels(pod));
    match access::controller_of(pod) {
        Some((_, _, owner)) if owner != uid => Claim::Ignore,
        Some(_) if selected => Claim::Owned,
        Some(_) if owner_deleting => Claim::Ignore,
        Some(_) => Claim::Release,
        None if owner_deleting || !selected || meta::is_deleting(pod) => Claim::Ignore,
        None => Claim::Adopt,
    }
}

/// The Pods `owner` of `kind` controls once it has claimed the Pods of its namespace
/// (upstream's `ClaimPods`): it adopts the orphans it selects and releases the Pods it
/// controls but no longer selects. Before the first adoption the owner is read again: one
/// gone, replaced (another uid) or being deleted adopts nothing (upstream's
/// `RecheckDeletionTimestamp`), and the claim fails.
pub async fn claim_pods(
    objects: &Objects,
    kind: &Managed,
    pod_info: &Arc<ResourceInfo>,
    owner: &Value,
    selector: &LabelSelector,
) -> Result<Vec<Object>, ApiError> {
    let ns = meta::namespace(owner).unwrap_or("");
    let uid = meta::uid(owner).to_string();
    let deleting = meta::is_deleting(owner);
    let mut can_adopt: Option<Result<(), ApiError>> = None;
    let mut owned = Vec::new();
    for pod in access::list(objects, "", "pods", ns) {
        if !kind.considers(&pod) {
            continue;
        }
        match claim(&pod, &uid, selector, deleting) {
            Claim::Owned => owned.push(pod),
            Claim::Ignore => {}
            Claim::Adopt => {
                can_adopt
                    .get_or_insert_with(|| recheck_owner(objects, kind, owner))
                    .clone()?;
                let reference = access::owner_ref(owner, &kind.api_version(), kind.kind);
                let finalizers = kind.finalizers;
                let adopted = access::update(objects, kind.actor, pod_info, &pod, move |p| {
                    adopt(p, &reference, finalizers)
                })
                .await;
                let adopted = match adopted {
                    Ok(adopted) => adopted,
                    Err(e) if e.code == 404 => None,
                    Err(e) => return Err(e),
                };
                if let Some(pod) = adopted.filter(|p| access::controlled_by(p, &uid)) {
                    tracing::debug!(kind = kind.kind, pod = meta::name(&pod), "adopted pod");
                    owned.push(pod);
                }
            }
            Claim::Release => {
                let ours = uid.clone();
                let finalizers = kind.finalizers;
                let released = access::update(objects, kind.actor, pod_info, &pod, move |p| {
                    release(p, &ours, finalizers)
                })
                .await;
                match released {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
                tracing::debug!(kind = kind.kind, pod = meta::name(&pod), "released pod");
            }
        }
    }
    Ok(owned)
}

/// Upstream's adoption precheck: the owner as stored now is the same incarnation and not
/// being deleted.
fn recheck_owner(objects: &Objects, kind: &Managed, owner: &Value) -> Result<(), ApiError> {
    let ns = meta::namespace(owner).unwrap_or("");
    let name = meta::name(owner);
    let fresh = access::get(objects, kind.group, kind.resource, ns, name)
        .ok_or_else(|| ApiError::not_found(kind.group, kind.resource, name))?;
    if meta::uid(&fresh) != meta::uid(owner) {
        return Err(ApiError::conflict_because(
            kind.group,
            kind.resource,
            name,
            &format!(
                "original {} {ns}/{name} is gone: got uid {}, wanted {}",
                kind.kind,
                meta::uid(&fresh),
                meta::uid(owner)
            ),
        ));
    }
    if meta::is_deleting(&fresh) {
        return Err(ApiError::conflict_because(
            kind.group,
            kind.resource,
            name,
            &format!("{ns}/{name} has just been deleted"),
        ));
    }
    Ok(())
}

/// Makes `reference` the controller of `pod` and adds `finalizers`, unless it has a
/// controller already (replacing a reference with the same uid, as upstream's adoption patch
/// merges by uid).
pub fn adopt(pod: &mut Value, reference: &Value, finalizers: &[&str]) {
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
    if !finalizers.is_empty() {
        let mut present = meta::finalizers(pod);
        for f in finalizers {
            if !present.iter().any(|p| p == f) {
                present.push((*f).to_string());
            }
        }
        meta::set_finalizers(pod, &present);
    }
}

/// Drops the owner reference with `uid` from `pod` (dropping the list once empty) and
/// removes `finalizers`.
pub fn release(pod: &mut Value, uid: &str, finalizers: &[&str]) {
    if !finalizers.is_empty() {
        let kept: Vec<String> = meta::finalizers(pod)
            .into_iter()
            .filter(|f| !finalizers.contains(&f.as_str()))
            .collect();
        meta::set_finalizers(pod, &kept);
    }
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

/// The objects of `kinds` (kind and name) in `pod`'s namespace that would adopt it: those
/// not being deleted whose selector selects it. Empty for a Pod with a controller or one
/// being deleted (and, for kinds that claim only active Pods, one that finished).
pub fn claimants(
    objects: &Objects,
    kinds: &[&'static Managed],
    pod: &Value,
) -> Vec<(&'static Managed, String)> {
    if access::controller_of(pod).is_some() || meta::is_deleting(pod) {
        return Vec::new();
    }
    let ns = meta::namespace(pod).unwrap_or("");
    let mut found = Vec::new();
    for kind in kinds.iter().copied().filter(|k| k.considers(pod)) {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A Pod `p` with `labels`, controlled by the ReplicationController of uid `controller`.
    pub(crate) fn pod(labels: Value, controller: Option<&str>) -> Value {
        let refs: Vec<Value> = controller
            .map(|uid| json!({"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": uid, "controller": true}))
            .into_iter()
            .collect();
        json!({"metadata": {"name": "p", "labels": labels, "ownerReferences": refs}})
    }

    fn web_selector() -> LabelSelector {
        from_label_selector_json(&json!({"matchLabels": {"app": "web"}}))
            .unwrap_or_else(|_| LabelSelector::nothing())
    }

    #[test]
    fn pods_are_claimed_like_upstream() {
        let selector = web_selector();
        let web = json!({"app": "web"});
        let claim_of = |p: &Value| claim(p, "u1", &selector, false);
        assert_eq!(claim_of(&pod(web.clone(), Some("u1"))), Claim::Owned);
        assert_eq!(claim_of(&pod(web.clone(), None)), Claim::Adopt);
        assert_eq!(claim_of(&pod(web.clone(), Some("u2"))), Claim::Ignore);
        let db = json!({"app": "db"});
        assert_eq!(claim_of(&pod(db.clone(), Some("u1"))), Claim::Release);
        assert_eq!(claim_of(&pod(db.clone(), None)), Claim::Ignore);
        // An orphan being deleted is not adopted.
        let mut going = pod(web.clone(), None);
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(claim_of(&going), Claim::Ignore);
        // An owner being deleted keeps what it has and neither adopts nor releases.
        assert_eq!(
            claim(&pod(web.clone(), None), "u1", &selector, true),
            Claim::Ignore
        );
        assert_eq!(
            claim(&pod(db, Some("u1")), "u1", &selector, true),
            Claim::Ignore
        );
        assert_eq!(
            claim(&pod(web, Some("u1")), "u1", &selector, true),
            Claim::Owned
        );
    }

    #[test]
    fn adoption_and_release_edit_the_owner_references_and_finalizers() {
        let reference = json!({"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "u1", "controller": true, "blockOwnerDeletion": true});
        let mut p = json!({"metadata": {"name": "p", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u9"}]}});
        adopt(&mut p, &reference, &[]);
        assert_eq!(
            access::controller_of(&p),
            Some(("ReplicationController", "rc", "u1"))
        );
        assert_eq!(meta::owner_references(&p).len(), 2);
        assert!(meta::finalizers(&p).is_empty());
        // A pod with a controller is left alone.
        let mut other = pod(json!({}), Some("u2"));
        let before = other.clone();
        adopt(&mut other, &reference, &["f"]);
        assert_eq!(other, before);
        release(&mut p, "u1", &[]);
        assert_eq!(access::controller_of(&p), None);
        assert_eq!(meta::owner_references(&p).len(), 1);
        release(&mut p, "u9", &[]);
        assert!(p["metadata"].get("ownerReferences").is_none());
        // Finalizers come with the adoption and go with the release.
        let mut tracked = json!({"metadata": {"name": "p", "finalizers": ["keep"]}});
        adopt(&mut tracked, &reference, &["track"]);
        assert_eq!(meta::finalizers(&tracked), vec!["keep", "track"]);
        release(&mut tracked, "u1", &["track"]);
        assert_eq!(meta::finalizers(&tracked), vec!["keep"]);
        assert!(tracked["metadata"].get("ownerReferences").is_none());
    }
}
