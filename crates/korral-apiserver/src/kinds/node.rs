//! `node.k8s.io/v1`: RuntimeClasses, with upstream's `pkg/apis/node/validation` rules.

use k8s_openapi::api::node::v1 as api;

use serde_json::{Value, json};

use super::KindDef;
use super::printer::{AGE, Column, Printer, age, text};
use super::strategy::{Context, Strategy};
use crate::error::{ApiError, Cause};
use crate::kinds::workload::immutable;
use crate::objects::FieldValidation;
use crate::quantity;
use crate::registry::ResourceInfo;
use crate::validation::names::{
    dns1123_label, go_quote, invalid_rendered, invalid_value, key, validate_labels,
    validate_qualified_name,
};
use crate::validation::podspec::validate_tolerations;

/// The kinds of `node.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "node.k8s.io",
            "v1",
            "runtimeclasses",
            "RuntimeClass",
            RuntimeClassStrategy,
        )
        .schema::<api::RuntimeClass>()
        .cluster_scoped()
        .printer(RUNTIME_CLASSES),
    ]
}

/// RuntimeClasses: a DNS-label handler that never changes, non-negative overhead quantities
/// (canonicalized), scheduling labels and tolerations.
#[derive(Debug, Clone, Copy)]
struct RuntimeClassStrategy;

impl Strategy for RuntimeClassStrategy {
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        if let Some(fixed) = obj.get_mut("overhead").and_then(|o| o.get_mut("podFixed")) {
            quantity::canonicalize_resource_list(fixed)
                .map_err(|e| quantity::undecodable(info, e))?;
        }
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_runtime_class(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        runtime_class_update(obj, old)
    }
}

/// Upstream's `ValidateRuntimeClassUpdate`: the class is valid and its handler unchanged.
fn runtime_class_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = validate_runtime_class(obj);
    errs.extend(immutable(obj, old, "handler", ""));
    errs
}

/// Upstream's `ValidateRuntimeClass` (besides object metadata).
fn validate_runtime_class(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let handler = obj.get("handler").and_then(Value::as_str).unwrap_or("");
    for msg in dns1123_label(handler) {
        errs.push(invalid_rendered("handler", &go_quote(handler), &msg));
    }
    if let Some(fixed) = obj
        .get("overhead")
        .and_then(|o| o.get("podFixed"))
        .and_then(Value::as_object)
    {
        for (name, value) in fixed {
            let at = key("overhead.podFixed", name);
            for msg in validate_qualified_name(name) {
                errs.push(invalid_rendered(&at, &go_quote(name), &msg));
            }
            if quantity::from_json(value).is_ok_and(|q| q.is_negative()) {
                errs.push(invalid_value(
                    &at,
                    value,
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    if let Some(scheduling) = obj.get("scheduling").filter(|v| !v.is_null()) {
        if let Some(selector) = scheduling.get("nodeSelector") {
            errs.extend(validate_labels(selector, "scheduling.nodeSelector"));
        }
        if let Some(tolerations) = scheduling.get("tolerations").and_then(Value::as_array) {
            errs.extend(validate_tolerations(tolerations, "scheduling.tolerations"));
        }
    }
    errs
}

const RUNTIME_CLASSES: Printer = Printer {
    columns: &[
        Column::new(
            "Handler",
            "handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class. The possible values are specific to the node & CRI configuration.  It is assumed that all handlers are available on every node, and handlers of the same name are equivalent on every node. For example, a handler called \"runc\" might specify that the runc OCI runtime (using native Linux containers) will be used to run the containers in a pod. The Handler must be lowercase, conform to the DNS Label (RFC 1123) requirements, and is immutable.",
        ),
        AGE,
    ],
    cells: |obj| vec![json!(text(obj, "handler")), age(obj)],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handlers_and_overheads() {
        assert!(validate_runtime_class(&json!({"handler": "runc"})).is_empty());
        let errs = validate_runtime_class(&json!({
            "handler": "Run.C",
            "overhead": {"podFixed": {"cpu": "-1", "memory": "10Mi"}},
        }));
        let fields: Vec<&str> = errs.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, vec!["handler", "overhead.podFixed[cpu]"]);
        assert_eq!(
            errs[1].message,
            "Invalid value: \"-1\": must be greater than or equal to 0"
        );
        let errs = runtime_class_update(&json!({"handler": "kata"}), &json!({"handler": "runc"}));
        assert_eq!(
            errs[0].message,
            "Invalid value: \"kata\": field is immutable"
        );
    }
}
