//! RuntimeClass: a new Pod naming `spec.runtimeClassName` gets the class's fixed pod overhead
//! (`spec.overhead`) and its scheduling constraints (node selector and tolerations), and a Pod
//! whose overhead the class does not define is refused, as upstream's
//! `plugin/pkg/admission/runtimeclass` (which acts on creates of pods only).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::ApiError;
use crate::kinds::Context;
use crate::meta;
use crate::quantity::{self, Quantity};
use crate::registry::ResourceInfo;
use crate::storage::{Object, object_key};

/// The RuntimeClass a pod names: `Ok(None)` when it names none, a refusal when the named one
/// does not exist.
fn class_of(info: &ResourceInfo, pod: &Value, ctx: &Context) -> Result<Option<Object>, ApiError> {
    let Some(name) = meta::path(pod, "spec.runtimeClassName").and_then(Value::as_str) else {
        return Ok(None);
    };
    match ctx
        .storage
        .get(&object_key("node.k8s.io", "runtimeclasses", None, name))
    {
        Some(class) => Ok(Some(class)),
        None => Err(refuse(
            info,
            pod,
            &format!("pod rejected: RuntimeClass {name:?} not found"),
        )),
    }
}

/// Upstream's 403 for the pod.
fn refuse(info: &ResourceInfo, pod: &Value, why: &str) -> ApiError {
    ApiError::forbidden_object(&info.group, &info.resource, meta::name(pod), why)
}

/// The class's fixed overhead, when it defines an `overhead` (an empty one without
/// `podFixed` included).
fn class_overhead(class: &Value) -> Option<Option<&Value>> {
    let overhead = class.get("overhead").filter(|o| !o.is_null())?;
    Some(overhead.get("podFixed").filter(|f| !f.is_null()))
}

/// Whether two resource lists hold the same quantities (upstream's semantic equality: `1Gi` is
/// `1024Mi`, and an empty list is no list).
fn same_resources(a: Option<&Value>, b: Option<&Value>) -> bool {
    let list = |v: Option<&Value>| -> BTreeMap<String, Option<Quantity>> {
        v.and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(k, q)| (k.clone(), quantity::from_json(q).ok()))
            .collect()
    };
    let (a, b) = (list(a), list(b));
    a.len() == b.len()
        && a.iter().all(|(k, q)| match (q, b.get(k)) {
            (Some(q), Some(Some(other))) => q.cmp(other) == Ordering::Equal,
            _ => false,
        })
}

/// The mutating half (upstream's `Admit`): the class's overhead is set on the pod (refused
/// when the pod sets a different one) and its scheduling merged into the pod's.
pub(super) fn admit(info: &ResourceInfo, pod: &mut Value, ctx: &Context) -> Result<(), ApiError> {
    let Some(class) = class_of(info, pod, ctx)? else {
        return Ok(());
    };
    if let Some(fixed) = class_overhead(&class) {
        let given = meta::path(pod, "spec.overhead").filter(|o| !o.is_null());
        if given.is_some() && !same_resources(fixed, given) {
            return Err(refuse(
                info,
                pod,
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
            ));
        }
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            match fixed {
                Some(fixed) => spec.insert("overhead".into(), fixed.clone()),
                None => spec.remove("overhead"),
            };
        }
    }
    let Some(scheduling) = class.get("scheduling").filter(|s| s.is_object()) else {
        return Ok(());
    };
    let selector = merged_node_selector(
        meta::path(pod, "spec.nodeSelector").and_then(Value::as_object),
        scheduling.get("nodeSelector").and_then(Value::as_object),
    )
    .map_err(|why| refuse(info, pod, &why))?;
    let tolerations = merge_tolerations(
        meta::path(pod, "spec.tolerations")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]),
        scheduling
            .get("tolerations")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]),
    );
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        match selector {
            Some(selector) => spec.insert("nodeSelector".into(), Value::Object(selector)),
            None => spec.remove("nodeSelector"),
        };
        if !tolerations.is_empty() {
            spec.insert("tolerations".into(), Value::Array(tolerations));
        }
    }
    Ok(())
}

/// The pod's node selector with the class's added; a label both name with different values is
/// upstream's conflict. A pod without a selector takes the class's as it is.
fn merged_node_selector(
    pod: Option<&Map<String, Value>>,
    class: Option<&Map<String, Value>>,
) -> Result<Option<Map<String, Value>>, String> {
    let Some(pod) = pod else {
        return Ok(class.cloned());
    };
    let mut merged = pod.clone();
    for (key, wanted) in class.into_iter().flatten() {
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        if let Some(have) = pod.get(key)
            && have != wanted
        {
            return Err(format!(
                "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {}; pod.spec.nodeSelector[{key}] = {}",
                text(wanted),
                text(have)
            ));
        }
        merged.insert(key.clone(), wanted.clone());
    }
    Ok(Some(merged))
}

/// One toleration's fields, as upstream compares them (absent strings are empty).
#[derive(Debug, PartialEq, Eq)]
struct Toleration {
    /// `key`.
    key: String,
    /// `operator` (empty means `Equal`).
    operator: String,
    /// `value`.
    value: String,
    /// `effect` (empty matches every effect).
    effect: String,
    /// `tolerationSeconds`.
    seconds: Option<i64>,
}

impl Toleration {
    /// Reads a toleration.
    fn of(t: &Value) -> Self {
        let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Self {
            key: text("key"),
            operator: text("operator"),
            value: text("value"),
            effect: text("effect"),
            seconds: t.get("tolerationSeconds").and_then(Value::as_i64),
        }
    }

    /// Whether this toleration tolerates everything `t` does (upstream's `isSuperset`).
    fn covers(&self, t: &Self) -> bool {
        if self == t {
            return true;
        }
        if t.key != self.key && (!self.key.is_empty() || self.operator != "Exists") {
            return false;
        }
        if t.effect != self.effect && !self.effect.is_empty() {
            return false;
        }
        if self.effect == "NoExecute"
            && let Some(limit) = self.seconds
            && t.seconds.is_none_or(|s| s > limit)
        {
            return false;
        }
        match self.operator.as_str() {
            "Equal" | "" => t.operator == "Equal" && t.value == self.value,
            "Exists" => true,
            _ => false,
        }
    }
}

/// The pod's tolerations and the class's, without those another one covers (upstream's
/// `MergeTolerations`: of two equal ones the first is kept).
fn merge_tolerations(pod: &[Value], class: &[Value]) -> Vec<Value> {
    let all: Vec<(&Value, Toleration)> = pod
        .iter()
        .chain(class)
        .map(|t| (t, Toleration::of(t)))
        .collect();
    let mut merged: Vec<(&Value, &Toleration)> = Vec::new();
    for (i, (raw, t)) in all.iter().enumerate() {
        if merged.iter().any(|(_, kept)| kept.covers(t)) {
            continue;
        }
        if all[i + 1..]
            .iter()
            .any(|(_, later)| later != t && later.covers(t))
        {
            continue;
        }
        merged.push((raw, t));
    }
    merged.into_iter().map(|(raw, _)| raw.clone()).collect()
}

/// The validating half (upstream's `Validate`): a pod's overhead must be the one its class
/// defines; a pod may set none without such a class.
pub(super) fn validate(info: &ResourceInfo, pod: &Value, ctx: &Context) -> Result<(), ApiError> {
    let given =
        meta::path(pod, "spec.overhead").filter(|o| o.as_object().is_some_and(|m| !m.is_empty()));
    let Some(given) = given else {
        return Ok(());
    };
    let class = class_of(info, pod, ctx)?;
    match class.as_deref().and_then(class_overhead) {
        Some(fixed) if same_resources(fixed, Some(given)) => Ok(()),
        Some(_) => Err(refuse(
            info,
            pod,
            "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
        )),
        None => Err(refuse(
            info,
            pod,
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The tolerations of a merge, as JSON.
    fn merge(pod: Value, class: Value) -> Value {
        let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
        Value::Array(merge_tolerations(&list(&pod), &list(&class)))
    }

    #[test]
    fn tolerations_merge_without_redundant_ones() {
        // The class's toleration is added.
        assert_eq!(
            merge(
                json!([{"key": "a", "operator": "Exists", "effect": "NoSchedule"}]),
                json!([{"key": "b", "operator": "Equal", "value": "x", "effect": "NoSchedule"}])
            ),
            json!([{"key": "a", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "b", "operator": "Equal", "value": "x", "effect": "NoSchedule"}])
        );
        // Equal tolerations are kept once; one covering another replaces it.
        assert_eq!(
            merge(
                json!([{"key": "a", "operator": "Equal", "value": "x"}]),
                json!([{"key": "a", "operator": "Exists"}, {"key": "a", "operator": "Exists"}])
            ),
            json!([{"key": "a", "operator": "Exists"}])
        );
        // A longer NoExecute grace covers a shorter one, whichever comes first.
        let long = json!({"key": "n", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300});
        let short = json!({"key": "n", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60});
        assert_eq!(
            merge(json!([long.clone()]), json!([short.clone()])),
            json!([long.clone()])
        );
        assert_eq!(merge(json!([short]), json!([long.clone()])), json!([long]));
        // An empty key with Exists tolerates everything.
        assert_eq!(
            merge(
                json!([{"key": "a", "operator": "Exists", "effect": "NoSchedule"}]),
                json!([{"operator": "Exists"}])
            ),
            json!([{"operator": "Exists"}])
        );
    }

    #[test]
    fn node_selectors_merge_or_conflict() {
        let map = |v: Value| v.as_object().cloned();
        assert_eq!(
            merged_node_selector(None, map(json!({"a": "1"})).as_ref()),
            Ok(map(json!({"a": "1"})))
        );
        assert_eq!(
            merged_node_selector(
                map(json!({"b": "2", "a": "1"})).as_ref(),
                map(json!({"a": "1", "c": "3"})).as_ref()
            ),
            Ok(map(json!({"a": "1", "b": "2", "c": "3"})))
        );
        assert_eq!(
            merged_node_selector(
                map(json!({"a": "0"})).as_ref(),
                map(json!({"a": "1"})).as_ref()
            ),
            Err(
                "conflict: runtimeClass.scheduling.nodeSelector[a] = 1; pod.spec.nodeSelector[a] = 0"
                    .to_string()
            )
        );
        assert_eq!(merged_node_selector(None, None), Ok(None));
    }

    #[test]
    fn overheads_compare_by_value() {
        assert!(same_resources(
            Some(&json!({"memory": "1Gi", "cpu": "1"})),
            Some(&json!({"cpu": "1000m", "memory": "1024Mi"}))
        ));
        assert!(!same_resources(
            Some(&json!({"cpu": "1"})),
            Some(&json!({"cpu": "2"}))
        ));
        assert!(!same_resources(
            Some(&json!({"cpu": "1"})),
            Some(&json!({"cpu": "1", "memory": "1Mi"}))
        ));
        assert!(same_resources(None, Some(&json!({}))));
        assert_eq!(
            class_overhead(&json!({"handler": "h"})),
            None,
            "no overhead defined"
        );
        assert_eq!(
            class_overhead(&json!({"overhead": {}})),
            Some(None),
            "an overhead without podFixed"
        );
    }
}
