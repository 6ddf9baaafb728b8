//! The plugins that give a new object the cluster's default class when it names none:
//! DefaultStorageClass (PersistentVolumeClaims) and DefaultIngressClass (Ingresses). Both pick,
//! among the classes annotated as default, the newest (the smallest name among equally new
//! ones), as upstream's `GetDefaultClass` helpers do; both act on creates only.

use serde_json::Value;

use crate::kinds::Context;
use crate::meta;
use crate::storage::collection_prefix;

/// The annotation marking the default IngressClass (upstream's
/// `networkingv1.AnnotationIsDefaultIngressClass`).
const DEFAULT_INGRESS_CLASS: &str = "ingressclass.kubernetes.io/is-default-class";

// The legacy annotation naming an Ingress's class: an Ingress carrying it is not defaulted.
use crate::kinds::networking::INGRESS_CLASS_ANNOTATION as LEGACY_INGRESS_CLASS;

/// The name of the newest class of `group`/`resource` that `is_default` accepts.
fn newest_default(
    ctx: &Context,
    group: &str,
    resource: &str,
    is_default: impl Fn(&Value) -> bool,
) -> Option<String> {
    let snapshot = ctx.storage.snapshot();
    let prefix = collection_prefix(group, resource, None);
    let created = |c: &Value| {
        meta::meta_str(c, "creationTimestamp")
            .unwrap_or("")
            .to_string()
    };
    snapshot
        .range(&prefix, None)
        .map(|(_, c)| c)
        .filter(|c| is_default(c))
        .max_by(|a, b| {
            created(a)
                .cmp(&created(b))
                .then_with(|| meta::name(b).cmp(meta::name(a)))
        })
        .map(|c| meta::name(c).to_string())
}

/// DefaultStorageClass: a claim that names no class (`spec.storageClassName` absent or null)
/// gets the default StorageClass.
pub(super) fn storage_class(claim: &mut Value, ctx: &Context) {
    if meta::path(claim, "spec.storageClassName").is_some_and(|v| !v.is_null()) {
        return;
    }
    let Some(class) = newest_default(
        ctx,
        "storage.k8s.io",
        "storageclasses",
        crate::kinds::is_default_class,
    ) else {
        return;
    };
    if let Some(spec) = claim.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("storageClassName".into(), Value::from(class));
    }
}

/// Whether an IngressClass is annotated as the cluster's default (exactly `"true"`).
fn is_default_ingress_class(class: &Value) -> bool {
    meta::path(class, "metadata.annotations")
        .and_then(|m| m.get(DEFAULT_INGRESS_CLASS))
        .and_then(Value::as_str)
        == Some("true")
}

/// DefaultIngressClass: an Ingress naming no class, neither in `spec.ingressClassName` nor in
/// the legacy `kubernetes.io/ingress.class` annotation, gets the default IngressClass.
pub(super) fn ingress_class(ingress: &mut Value, ctx: &Context) {
    if meta::path(ingress, "spec.ingressClassName").is_some_and(|v| !v.is_null()) {
        return;
    }
    if meta::path(ingress, "metadata.annotations")
        .and_then(|m| m.get(LEGACY_INGRESS_CLASS))
        .is_some()
    {
        return;
    }
    let Some(class) = newest_default(
        ctx,
        "networking.k8s.io",
        "ingressclasses",
        is_default_ingress_class,
    ) else {
        return;
    };
    if let Some(spec) = ingress.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("ingressClassName".into(), Value::from(class));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_a_true_annotation_marks_the_default_ingress_class() {
        let class = |value: &str| json!({"metadata": {"name": "c", "annotations": {DEFAULT_INGRESS_CLASS: value}}});
        assert!(is_default_ingress_class(&class("true")));
        assert!(!is_default_ingress_class(&class("True")));
        assert!(!is_default_ingress_class(
            &json!({"metadata": {"name": "c"}})
        ));
    }
}
