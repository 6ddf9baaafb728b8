//! Namespaces: always created `Active`, deleted in two steps (marked `Terminating`, emptied by
//! the namespace controller, removed once `spec.finalizers` is empty).

use serde_json::{Value, json};

use crate::kinds::strategy::{Context, DeletePlan, Strategy, strip_status};
use crate::meta;
use crate::registry::ResourceInfo;

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

    fn blocks_removal(&self, obj: &Value) -> bool {
        meta::path(obj, "spec.finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
    }
}
