//! PersistentVolumeClaimResize: a claim's storage request may grow only when the claim is bound
//! and the StorageClass that provisioned it allows volume expansion, as upstream's
//! `plugin/pkg/admission/storage/persistentvolume/resize` (updates of the main resource).

use std::cmp::Ordering;

use serde_json::Value;

use crate::ApiError;
use crate::kinds::Context;
use crate::meta;
use crate::quantity::{self, Quantity};
use crate::registry::ResourceInfo;
use crate::storage::object_key;

/// The beta annotation naming a claim's class, read before `spec.storageClassName` (upstream's
/// `GetPersistentVolumeClaimClass`).
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// The class of a claim: the beta annotation, else `spec.storageClassName`, else empty.
pub(super) fn claim_class(claim: &Value) -> String {
    meta::path(claim, "metadata.annotations")
        .and_then(|m| m.get(BETA_CLASS_ANNOTATION))
        .or_else(|| meta::path(claim, "spec.storageClassName"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// A claim's storage request (zero when it states none).
fn requested(claim: &Value) -> Quantity {
    meta::path(claim, "spec.resources.requests.storage")
        .and_then(|v| quantity::from_json(v).ok())
        .unwrap_or_else(Quantity::zero_value)
}

/// Refuses an update growing a claim's storage request unless the claim was bound and its
/// class (the same before and after) allows volume expansion.
pub(super) fn validate(
    info: &ResourceInfo,
    claim: &Value,
    old: &Value,
    ctx: &Context,
) -> Result<(), ApiError> {
    if requested(claim).cmp(&requested(old)) != Ordering::Greater {
        return Ok(());
    }
    let refuse =
        |why: &str| ApiError::forbidden_object(&info.group, &info.resource, meta::name(claim), why);
    if meta::path(old, "status.phase").and_then(Value::as_str) != Some("Bound") {
        return Err(refuse(
            "Only bound persistent volume claims can be expanded",
        ));
    }
    let (class, old_class) = (claim_class(claim), claim_class(old));
    let allowed = !class.is_empty()
        && class == old_class
        && ctx
            .storage
            .get(&object_key(
                "storage.k8s.io",
                "storageclasses",
                None,
                &class,
            ))
            .is_some_and(|sc| sc.get("allowVolumeExpansion") == Some(&Value::Bool(true)));
    if !allowed {
        return Err(refuse(
            "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_beta_annotation_names_the_class_first() {
        let claim = json!({"metadata": {"annotations": {BETA_CLASS_ANNOTATION: "beta"}},
            "spec": {"storageClassName": "ga"}});
        assert_eq!(claim_class(&claim), "beta");
        assert_eq!(
            claim_class(&json!({"spec": {"storageClassName": "ga"}})),
            "ga"
        );
        assert_eq!(claim_class(&json!({"spec": {}})), "");
    }

    #[test]
    fn requests_compare_by_value() {
        let claim = |s: &str| json!({"spec": {"resources": {"requests": {"storage": s}}}});
        assert_eq!(
            requested(&claim("1Gi")).cmp(&requested(&claim("1024Mi"))),
            Ordering::Equal
        );
        assert_eq!(
            requested(&claim("2Gi")).cmp(&requested(&json!({}))),
            Ordering::Greater
        );
    }
}
