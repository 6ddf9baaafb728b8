//! `scheduling.k8s.io/v1`: PriorityClasses, with upstream's validation, the single-default rule
//! of the Priority admission plugin, and the two built-in system classes (created at start,
//! never deleted).

use k8s_openapi::api::scheduling::v1 as api;

use serde_json::{Value, json};

use super::KindDef;
use super::printer::{AGE, Column, Printer, age, int};
use super::strategy::{Context, Strategy};
use crate::error::{ApiError, Cause};
use crate::meta;
use crate::storage::collection_prefix;
use crate::validation::enums::{self, Order};
use crate::validation::names::invalid_value;

const GROUP: &str = "scheduling.k8s.io";
const RESOURCE: &str = "priorityclasses";

/// The prefix reserved for the system classes.
const SYSTEM_PREFIX: &str = "system-";

/// The highest value a user-defined class may have.
const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;

/// The system classes: name, value, description (upstream's `SystemPriorityClasses`).
const SYSTEM_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The kinds of `scheduling.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            GROUP,
            "v1",
            RESOURCE,
            "PriorityClass",
            PriorityClassStrategy,
        )
        .schema::<api::PriorityClass>()
        .cluster_scoped()
        .short(&["pc"])
        .generation()
        .printer(PRIORITY_CLASSES),
    ]
}

/// The built-in system PriorityClasses every server starts with, as objects to create.
pub(crate) fn system_priority_classes() -> Vec<Value> {
    SYSTEM_CLASSES
        .iter()
        .map(|(name, value, description)| {
            json!({
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "description": description,
            })
        })
        .collect()
}

/// Whether `name` is one of the system classes.
fn is_system_class(name: &str) -> bool {
    SYSTEM_CLASSES.iter().any(|(n, ..)| *n == name)
}

/// PriorityClasses.
#[derive(Debug, Clone, Copy)]
struct PriorityClassStrategy;

impl Strategy for PriorityClassStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(root) = obj.as_object_mut()
            && root.get("preemptionPolicy").is_none_or(Value::is_null)
        {
            root.insert("preemptionPolicy".into(), json!("PreemptLowerPriority"));
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_priority_class(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        let mut errs = Vec::new();
        if obj.get("value") != old.get("value") {
            errs.push(Cause::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        if obj.get("preemptionPolicy") != old.get("preemptionPolicy") {
            errs.push(invalid_value(
                "preemptionPolicy",
                obj.get("preemptionPolicy").unwrap_or(&Value::Null),
                "field is immutable",
            ));
        }
        errs
    }

    /// The Priority admission plugin: only one class may be the global default.
    fn complete(
        &self,
        obj: &mut Value,
        _old: Option<&Value>,
        ctx: &Context,
    ) -> Result<(), ApiError> {
        if !is_global_default(obj) {
            return Ok(());
        }
        let name = meta::name(obj);
        let snapshot = ctx.storage.snapshot();
        let prefix = collection_prefix(GROUP, RESOURCE, None);
        let existing = snapshot
            .range(&prefix, None)
            .map(|(_, o)| o)
            .find(|o| is_global_default(o) && meta::name(o) != name);
        match existing {
            Some(other) => Err(ApiError::forbidden_object(
                GROUP,
                RESOURCE,
                name,
                &format!(
                    "PriorityClass {} is already marked as default. Only one default can exist",
                    meta::name(other)
                ),
            )),
            None => Ok(()),
        }
    }

    fn validate_delete(&self, cur: &Value) -> Result<(), ApiError> {
        let name = meta::name(cur);
        if is_system_class(name) {
            return Err(ApiError::forbidden_object(
                GROUP,
                RESOURCE,
                name,
                "this is a system priority class and cannot be deleted",
            ));
        }
        Ok(())
    }
}

/// Whether a class is marked `globalDefault`.
fn is_global_default(obj: &Value) -> bool {
    obj.get("globalDefault").and_then(Value::as_bool) == Some(true)
}

/// Upstream's `ValidatePriorityClass` (besides object metadata): `system-` names are the known
/// system classes with their values; other classes stay at or below 1e9; a known preemption
/// policy.
fn validate_priority_class(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let name = meta::name(obj);
    let value = int(obj, "value");
    if name.starts_with(SYSTEM_PREFIX) {
        let known = SYSTEM_CLASSES.iter().find(|(n, ..)| *n == name);
        let problem = match known {
            None => Some(format!("{name} is not a known system priority class")),
            Some((n, v, _)) if *v != value => {
                Some(format!("value of {n} PriorityClass must be {v}"))
            }
            Some((n, ..)) if is_global_default(obj) => {
                Some(format!("globalDefault of {n} PriorityClass must be false"))
            }
            Some(_) => None,
        };
        if let Some(problem) = problem {
            errs.push(Cause::forbidden(
                "metadata.name",
                &format!(
                    "priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {problem}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errs.push(Cause::forbidden(
            "value",
            &format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    if let Some(policy) = obj.get("preemptionPolicy").filter(|v| !v.is_null())
        && !policy
            .as_str()
            .is_some_and(|p| enums::PREEMPTION_POLICY.contains(p))
    {
        errs.push(enums::PREEMPTION_POLICY.not_supported(
            "preemptionPolicy",
            policy,
            Order::Declared,
        ));
    }
    errs
}

const PRIORITY_CLASSES: Printer = Printer {
    columns: &[
        Column::new(
            "Value",
            "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
        )
        .typed("integer"),
        Column::new(
            "Global-Default",
            "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.",
        )
        .typed("boolean"),
        AGE,
        Column::new(
            "PreemptionPolicy",
            "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
        ),
    ],
    cells: |obj| {
        let policy = obj
            .get("preemptionPolicy")
            .and_then(Value::as_str)
            .unwrap_or("<unset>");
        vec![
            json!(int(obj, "value")),
            json!(is_global_default(obj)),
            age(obj),
            json!(policy),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(obj: Value) -> Vec<String> {
        validate_priority_class(&obj)
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn system_names_and_user_values() {
        assert!(messages(json!({"metadata": {"name": "high"}, "value": 1000})).is_empty());
        assert_eq!(
            messages(json!({"metadata": {"name": "high"}, "value": 1_000_000_001})),
            vec![
                "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
            ]
        );
        assert_eq!(
            messages(json!({"metadata": {"name": "system-mine"}, "value": 1})),
            vec![
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"
            ]
        );
        assert_eq!(
            messages(json!({"metadata": {"name": "system-node-critical"}, "value": 1})),
            vec![
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of system-node-critical PriorityClass must be 2000001000"
            ]
        );
        for class in system_priority_classes() {
            assert!(validate_priority_class(&class).is_empty());
        }
        assert_eq!(
            messages(json!({"metadata": {"name": "a"}, "value": 1, "preemptionPolicy": "Always"})),
            vec![
                "preemptionPolicy: Unsupported value: \"Always\": supported values: \"PreemptLowerPriority\", \"Never\""
            ]
        );
    }

    #[test]
    fn system_classes_cannot_be_deleted() {
        let err = PriorityClassStrategy
            .validate_delete(&json!({"metadata": {"name": "system-node-critical"}}))
            .expect_err("system classes stay");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "priorityclasses.scheduling.k8s.io \"system-node-critical\" is forbidden: this is a system priority class and cannot be deleted"
        );
        assert!(
            PriorityClassStrategy
                .validate_delete(&json!({"metadata": {"name": "high"}}))
                .is_ok()
        );
    }
}
