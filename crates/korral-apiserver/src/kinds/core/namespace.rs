//! Namespaces: always created `Active`, deleted in two steps (marked `Terminating`, emptied by
//! the namespace controller, removed once `spec.finalizers` is empty). `spec.finalizers` is
//! changed through the `finalize` subresource (update only, as upstream; the namespace
//! controller removes `kubernetes` there, and so can a user unsticking a namespace).

use serde_json::{Value, json};

use crate::ApiError;
use crate::error::Cause;
use crate::kinds::strategy::{Context, DeletePlan, Strategy, strip_status};
use crate::meta;
use crate::registry::ResourceInfo;
use crate::validation::names;

/// The namespaces that cannot be deleted (upstream's NamespaceLifecycle `immortalNamespaces`).
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

/// `spec.finalizers` of a namespace.
fn spec_finalizers(obj: &Value) -> Vec<String> {
    meta::strings(meta::path(obj, "spec.finalizers"))
}

/// Upstream's `validateFinalizerName` for each of `spec.finalizers`: a qualified name, and one
/// without a domain must be a standard finalizer. On create every cause names the list
/// (`spec.finalizers`), on a finalize update the item (`spec.finalizers[i]`), as upstream.
fn validate_spec_finalizers(obj: &Value, indexed: bool) -> Vec<Cause> {
    let finalizers = spec_finalizers(obj);
    let mut causes = Vec::new();
    for (i, finalizer) in finalizers.iter().enumerate() {
        let path = if indexed {
            format!("spec.finalizers[{i}]")
        } else {
            "spec.finalizers".to_string()
        };
        for msg in names::validate_qualified_name(finalizer) {
            causes.push(Cause::invalid(path.clone(), &json!(finalizer), &msg));
        }
        causes.extend(
            names::validate_kube_finalizer_names(&[finalizer.as_str()], "spec.finalizers")
                .into_iter()
                .map(|mut c| {
                    c.field = path.clone();
                    c
                }),
        );
    }
    causes
}

/// Upstream's `ValidateNamespaceStatusUpdate`: the phase follows the deletion timestamp.
fn validate_status_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let phase = meta::path(obj, "status.phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if meta::is_deleting(old) {
        if phase != "Terminating" {
            return vec![Cause::invalid(
                "status.Phase",
                &json!(phase),
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
            )];
        }
    } else if phase != "Active" {
        return vec![Cause::invalid(
            "status.Phase",
            &json!(phase),
            "may only be 'Active' if `deletionTimestamp` is empty",
        )];
    }
    Vec::new()
}

/// The subresource through which `spec.finalizers` changes.
const FINALIZE: &str = "finalize";

/// The strategy of `v1/Namespace`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NamespaceStrategy;

impl Strategy for NamespaceStrategy {
    fn prepare_for_create(&self, _info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        // Namespaces start Active, whatever the request says.
        strip_status(obj);
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "Namespace", obj);
    }

    fn prepare_for_delete(&self, _cur: &Value, _finalizers: &mut Vec<String>) -> DeletePlan {
        DeletePlan::MarkOnly
    }

    fn mark_deleting(&self, obj: &mut Value) {
        meta::set_path(obj, "status.phase", json!("Terminating"));
    }

    fn subresources(&self) -> &'static [&'static str] {
        &[FINALIZE]
    }

    fn subresource_verbs(&self, subresource: &str) -> &'static [&'static str] {
        match subresource {
            FINALIZE => &["update"],
            _ => &["get", "patch", "update"],
        }
    }

    fn prepare_for_subresource_update(&self, subresource: &str, obj: &mut Value, old: &Value) {
        // Upstream's finalize strategy: the status stays; spec and metadata are the request's.
        if subresource == FINALIZE
            && let Some(map) = obj.as_object_mut()
        {
            match old.get("status") {
                Some(status) => map.insert("status".into(), status.clone()),
                None => map.remove("status"),
            };
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_spec_finalizers(obj, false)
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        match ctx.subresource {
            Some("status") => validate_status_update(obj, old),
            Some(FINALIZE) => validate_spec_finalizers(obj, true),
            // Upstream's ValidateNamespaceUpdate checks the metadata only.
            _ => Vec::new(),
        }
    }

    fn validate_delete(&self, cur: &Value) -> Result<(), ApiError> {
        let name = meta::name(cur);
        if IMMORTAL.contains(&name) {
            return Err(ApiError::forbidden_object(
                "",
                "namespaces",
                name,
                "this namespace may not be deleted",
            ));
        }
        Ok(())
    }

    fn blocks_removal(&self, obj: &Value) -> bool {
        meta::path(obj, "spec.finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
    }
}
