//! `metav1.Condition` helpers: set, find and test conditions with a correct
//! `lastTransitionTime`, as `meta.SetStatusCondition` does in Go.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// Condition status `True`.
pub const TRUE: &str = "True";
/// Condition status `False`.
pub const FALSE: &str = "False";
/// Condition status `Unknown`.
pub const UNKNOWN: &str = "Unknown";

/// A condition of `type_` with the given status, reason and message, stamped now.
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation,
        last_transition_time: Time(jiff::Timestamp::now()),
    }
}

/// Sets `new` in `conditions`: adds it, or updates the existing condition of the same type.
/// `lastTransitionTime` changes only when the status changes. Returns whether anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == new.type_) {
        None => {
            conditions.push(new);
            true
        }
        Some(existing) => {
            let mut changed = false;
            if existing.status != new.status {
                existing.status = new.status;
                existing.last_transition_time = new.last_transition_time;
                changed = true;
            }
            if existing.reason != new.reason {
                existing.reason = new.reason;
                changed = true;
            }
            if existing.message != new.message {
                existing.message = new.message;
                changed = true;
            }
            if existing.observed_generation != new.observed_generation {
                existing.observed_generation = new.observed_generation;
                changed = true;
            }
            changed
        }
    }
}

/// The condition of `type_`, if present.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Removes the condition of `type_`; returns whether it was present.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    before != conditions.len()
}

/// Whether the condition of `type_` is present with status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == TRUE)
}

/// Whether the condition of `type_` is present with status `False`.
pub fn is_false(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == FALSE)
}

/// The OpenAPI schema of a `[]metav1.Condition` list, as controller-gen writes it for
/// `Conditions []metav1.Condition` (the required fields, the `reason` and `type` patterns, the
/// `status` enum, and `x-kubernetes-list-type: map` keyed by `type`).
///
/// `k8s-openapi`'s `Condition` has no `JsonSchema`; use this for a conditions field of a
/// status derived with `schemars`:
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
///
/// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct Status {
///     #[serde(default)]
///     #[schemars(schema_with = "korral_runtime::conditions::conditions_schema")]
///     conditions: Vec<Condition>,
/// }
/// ```
pub fn conditions_schema(_generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "description": "The latest available observations of the object's state.",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "description": "One aspect of the current state of the object.",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {
                    "type": "string",
                    "format": "date-time",
                    "description": "When the condition last changed from one status to another."
                },
                "message": {
                    "type": "string",
                    "maxLength": 32768,
                    "description": "A human-readable message about the transition."
                },
                "observedGeneration": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": 0,
                    "description": "The .metadata.generation the condition was set from."
                },
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                    "description": "A programmatic identifier of the reason for the last transition, in CamelCase."
                },
                "status": {
                    "type": "string",
                    "enum": ["True", "False", "Unknown"],
                    "description": "The status of the condition: True, False or Unknown."
                },
                "type": {
                    "type": "string",
                    "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                    "description": "The type of the condition, in CamelCase or foo.example.com/CamelCase."
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap_or(jiff::Timestamp::UNIX_EPOCH))
    }

    #[test]
    fn transition_time_changes_only_with_status() {
        let mut conditions = Vec::new();
        let mut ready = new_condition("Ready", FALSE, "Probing", "", Some(1));
        ready.last_transition_time = at(100);
        assert!(set_condition(&mut conditions, ready));
        assert!(is_false(&conditions, "Ready"));

        // Same status, new reason: the transition time stays.
        let mut again = new_condition("Ready", FALSE, "StillProbing", "m", Some(2));
        again.last_transition_time = at(200);
        assert!(set_condition(&mut conditions, again.clone()));
        let c = find_condition(&conditions, "Ready").cloned();
        assert_eq!(
            c.as_ref().map(|c| c.last_transition_time.clone()),
            Some(at(100))
        );
        assert_eq!(c.as_ref().map(|c| c.reason.as_str()), Some("StillProbing"));
        assert!(
            !set_condition(&mut conditions, again),
            "identical: no change"
        );

        // Status flips: the transition time moves.
        let mut up = new_condition("Ready", TRUE, "Available", "", Some(2));
        up.last_transition_time = at(300);
        assert!(set_condition(&mut conditions, up));
        assert!(is_true(&conditions, "Ready"));
        assert_eq!(
            find_condition(&conditions, "Ready").map(|c| c.last_transition_time.clone()),
            Some(at(300))
        );
        assert!(remove_condition(&mut conditions, "Ready"));
        assert!(find_condition(&conditions, "Ready").is_none());
    }

    #[test]
    fn conditions_schema_accepts_what_the_helpers_write() {
        let schema = conditions_schema(&mut schemars::SchemaGenerator::default());
        let value = schema.as_value();
        assert_eq!(value["type"], "array");
        assert_eq!(value["x-kubernetes-list-type"], "map");
        assert_eq!(value["x-kubernetes-list-map-keys"][0], "type");
        let item = &value["items"];
        let pattern = |field: &str| {
            regex::Regex::new(
                item["properties"][field]["pattern"]
                    .as_str()
                    .unwrap_or_default(),
            )
            .unwrap_or_else(|e| panic!("{field} pattern: {e}"))
        };
        let condition = new_condition("Ready", TRUE, "BucketAvailable", "ok", Some(1));
        let written = serde_json::to_value(&condition).unwrap_or_default();
        for required in item["required"].as_array().into_iter().flatten() {
            let field = required.as_str().unwrap_or_default();
            assert!(written.get(field).is_some(), "{field} written");
        }
        assert!(pattern("reason").is_match("BucketAvailable"));
        assert!(!pattern("reason").is_match("not a reason"));
        assert!(pattern("type").is_match("Ready"));
        assert!(pattern("type").is_match("example.com/Ready"));
        assert!(!pattern("type").is_match("-Ready"));
    }
}
