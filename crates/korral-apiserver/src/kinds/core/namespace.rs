//! Namespaces: always created `Active`, deleted in two steps (marked `Terminating`, emptied by
//! the namespace controller, removed once `spec.finalizers` is empty). `spec.finalizers` is
//! changed through the `finalize` subresource (update only, as upstream; the namespace
//! controller removes `kubernetes` there, and so can a user unsticking a namespace).

use serde_json::{Value, json};

use crate::kinds::strategy::{Context, DeletePlan, Strategy, strip_status};
use crate::meta;
use crate::registry::ResourceInfo;

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

    fn blocks_removal(&self, obj: &Value) -> bool {
        meta::path(obj, "spec.finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
    }
}
