//! Upstream's `ValidatePodUpdate`: what may change in a running pod's spec (images, a shorter
//! `activeDeadlineSeconds`, added tolerations, removed scheduling gates, a negative grace period
//! raised to 1) and nothing else.

use serde_json::{Map, Value, json};

use crate::error::Cause;
use crate::validation::names::{child, index, invalid_value};
use crate::validation::podspec::validate_tolerations;
use crate::validation::ports::inclusive_range;

/// The fields of a pod spec an update may change, as upstream lists them in its refusal.
const UPDATABLE_FIELDS: [&str; 5] = [
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
];

/// The refusal of a change outside [`UPDATABLE_FIELDS`]. Upstream appends a diff of its
/// internal Go structs, which has no JSON counterpart; the wording before it is kept.
pub(super) fn forbidden_spec_change() -> String {
    format!(
        "pod updates may not change fields other than {}",
        UPDATABLE_FIELDS.join(",")
    )
}

/// The update rules of a pod spec: every cause, after the checks of the new spec itself.
pub(super) fn validate_spec_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    for list in ["containers", "initContainers"] {
        let new_list = containers(new, list);
        let old_list = containers(old, list);
        let path = child("spec", list);
        if new_list.len() != old_list.len() {
            out.push(Cause::forbidden(
                path,
                "pod updates may not add or remove containers",
            ));
            return out;
        }
        for (i, c) in new_list.iter().enumerate() {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            let field = child(&index(&path, i), "image");
            if image.is_empty() {
                out.push(Cause::required(field.clone(), ""));
            }
            if image.trim() != image {
                out.push(invalid_value(
                    &field,
                    &json!(image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    let deadline_path = "spec.activeDeadlineSeconds";
    let new_deadline = new.get("activeDeadlineSeconds").and_then(Value::as_i64);
    let old_deadline = old.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match (new_deadline, old_deadline) {
        (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            out.push(invalid_value(
                deadline_path,
                &json!(n),
                &inclusive_range(0, i64::from(i32::MAX)),
            ));
            return out;
        }
        (Some(n), Some(o)) if o < n => {
            out.push(invalid_value(
                deadline_path,
                &json!(n),
                "must be less than or equal to previous value",
            ));
            return out;
        }
        (None, Some(_)) => out.push(invalid_value(
            deadline_path,
            &Value::Null,
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    out.extend(only_added_tolerations(new, old));
    out.extend(only_deleted_scheduling_gates(new, old));
    if normalized(&munged(new, old)) != normalized(old) {
        out.push(Cause::forbidden("spec", &forbidden_spec_change()));
    }
    out
}

/// A container list of a spec, empty when absent.
fn containers<'a>(spec: &'a Value, list: &str) -> &'a [Value] {
    spec.get(list)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The new spec with every field an update may change set back to its old value.
fn munged(new: &Value, old: &Value) -> Value {
    let mut spec = new.clone();
    let Some(map) = spec.as_object_mut() else {
        return spec;
    };
    for list in ["containers", "initContainers"] {
        let old_list = containers(old, list);
        if let Some(items) = map.get_mut(list).and_then(Value::as_array_mut) {
            for (c, o) in items.iter_mut().zip(old_list) {
                if let Some(c) = c.as_object_mut() {
                    set_or_remove(c, "image", o.get("image"));
                }
            }
        }
    }
    for field in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        set_or_remove(map, field, old.get(field));
    }
    let old_grace = old
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    let new_grace = map
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    if old_grace.is_some_and(|g| g < 0) && new_grace == Some(1) {
        set_or_remove(
            map,
            "terminationGracePeriodSeconds",
            old.get("terminationGracePeriodSeconds"),
        );
    }
    spec
}

/// Sets `field` to `value`, or removes it when `value` is absent.
fn set_or_remove(map: &mut Map<String, Value>, field: &str, value: Option<&Value>) {
    match value {
        Some(v) => {
            map.insert(field.to_string(), v.clone());
        }
        None => {
            map.remove(field);
        }
    }
}

/// A spec as upstream's semantic equality sees it: `null`, empty strings, empty lists and
/// empty objects are the same as absent.
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, x)| (k.clone(), normalized(x)))
                .filter(|(_, x)| !is_empty(x))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

/// Whether a normalized value counts as absent.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// `validateOnlyAddedTolerations`: every old toleration is still there (its
/// `tolerationSeconds` may change), then the new list is validated.
fn only_added_tolerations(new: &Value, old: &Value) -> Vec<Cause> {
    let path = "spec.tolerations";
    let new_list = containers(new, "tolerations");
    let without_seconds = |t: &Value| {
        let mut t = normalized(t);
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    for o in containers(old, "tolerations") {
        let o = without_seconds(o);
        if !new_list.iter().any(|n| without_seconds(n) == o) {
            return vec![Cause::forbidden(
                path,
                "existing toleration can not be modified except its tolerationSeconds",
            )];
        }
    }
    validate_tolerations(new_list, path)
}

/// `validateOnlyDeletedSchedulingGates`: no gate may be added.
fn only_deleted_scheduling_gates(new: &Value, old: &Value) -> Vec<Cause> {
    let name = |g: &Value| {
        g.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let old_names: Vec<String> = containers(old, "schedulingGates")
        .iter()
        .map(name)
        .collect();
    containers(new, "schedulingGates")
        .iter()
        .enumerate()
        .filter(|(_, g)| !old_names.contains(&name(g)))
        .map(|(i, g)| {
            Cause::forbidden(
                child(&index("spec.schedulingGates", i), "name"),
                &format!(
                    "only deletion is allowed, but found new scheduling gate '{}'",
                    name(g)
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Value {
        json!({
            "containers": [{"name": "c", "image": "busybox", "resources": {}}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "terminationGracePeriodSeconds": 30,
        })
    }

    #[test]
    fn images_deadlines_and_added_tolerations_may_change() {
        let old = spec();
        let mut new = spec();
        new["containers"][0]["image"] = json!("busybox:2");
        new["activeDeadlineSeconds"] = json!(60);
        new["tolerations"][0]["tolerationSeconds"] = json!(10);
        new["tolerations"]
            .as_array_mut()
            .expect("list")
            .push(json!({"key": "x", "operator": "Exists"}));
        assert_eq!(validate_spec_update(&new, &old), vec![]);
    }

    #[test]
    fn other_changes_are_forbidden_with_upstream_wording() {
        let old = spec();
        let mut new = spec();
        new["containers"][0]["command"] = json!(["x"]);
        let causes = validate_spec_update(&new, &old);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec");
        assert_eq!(
            causes[0].message,
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
        );
    }

    #[test]
    fn empty_and_absent_are_the_same() {
        let old = spec();
        let mut new = spec();
        new["volumes"] = json!([]);
        new["containers"][0]["resources"] = json!({"limits": null});
        assert_eq!(validate_spec_update(&new, &old), vec![]);
    }

    #[test]
    fn containers_may_not_be_added_and_deadlines_only_shrink() {
        let old = spec();
        let mut new = spec();
        new["containers"]
            .as_array_mut()
            .expect("list")
            .push(json!({"name": "d", "image": "x"}));
        let causes = validate_spec_update(&new, &old);
        assert_eq!(
            causes[0].message,
            "Forbidden: pod updates may not add or remove containers"
        );
        let mut old = spec();
        old["activeDeadlineSeconds"] = json!(10);
        let mut new = spec();
        new["activeDeadlineSeconds"] = json!(20);
        let causes = validate_spec_update(&new, &old);
        assert_eq!(
            causes[0].message,
            "Invalid value: 20: must be less than or equal to previous value"
        );
        let causes = validate_spec_update(&spec(), &old);
        assert_eq!(
            causes[0].message,
            "Invalid value: null: must not update from a positive integer to nil value"
        );
    }

    #[test]
    fn tolerations_may_only_be_added_and_gates_only_removed() {
        let old = spec();
        let mut new = spec();
        new["tolerations"][0]["key"] = json!("other");
        let causes = validate_spec_update(&new, &old);
        assert_eq!(causes[0].field, "spec.tolerations");
        assert_eq!(
            causes[0].message,
            "Forbidden: existing toleration can not be modified except its tolerationSeconds"
        );
        let mut new = spec();
        new["schedulingGates"] = json!([{"name": "g"}]);
        let causes = validate_spec_update(&new, &old);
        assert_eq!(causes[0].field, "spec.schedulingGates[0].name");
        assert_eq!(
            causes[0].message,
            "Forbidden: only deletion is allowed, but found new scheduling gate 'g'"
        );
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_updates_never_panic(
            field in proptest::sample::select(vec![
                "containers", "initContainers", "tolerations", "schedulingGates",
                "activeDeadlineSeconds", "terminationGracePeriodSeconds", "volumes",
            ]),
            value in crate::validation::podspec::tests::any_json(),
            old_side in proptest::bool::ANY,
        ) {
            let mut changed = spec();
            changed[field] = value;
            let (new, old) = if old_side { (spec(), changed) } else { (changed, spec()) };
            let _ = validate_spec_update(&new, &old);
        }
    }

    #[test]
    fn a_negative_grace_period_may_become_one() {
        let mut old = spec();
        old["terminationGracePeriodSeconds"] = json!(-1);
        let mut new = spec();
        new["terminationGracePeriodSeconds"] = json!(1);
        assert_eq!(validate_spec_update(&new, &old), vec![]);
        new["terminationGracePeriodSeconds"] = json!(2);
        assert_eq!(validate_spec_update(&new, &old).len(), 1);
    }
}
