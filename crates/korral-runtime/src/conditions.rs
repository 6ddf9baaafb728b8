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
}
