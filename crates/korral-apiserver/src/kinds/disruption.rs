//! PodDisruptionBudget status, as upstream's disruption controller computes it: the pods a
//! budget selects, how many are healthy, how many must stay healthy, and how many may be
//! disrupted now. Computed by the in-process controller (to keep `status` current); the
//! eviction subresource decides from that status and records its disruptions in it.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::meta;
use crate::selector::from_label_selector_json;
use crate::storage::{Object, Snapshot, collection_prefix, object_key};

/// The PodDisruptionBudgets of a namespace.
pub(crate) fn budgets_in(snapshot: &Snapshot, namespace: &str) -> Vec<Object> {
    let prefix = collection_prefix("policy", "poddisruptionbudgets", Some(namespace));
    snapshot
        .range(&prefix, None)
        .map(|(_, o)| o.clone())
        .collect()
}

/// Whether a budget selects a pod (an empty selector selects every pod; none selects nothing).
pub(crate) fn selects(budget: &Value, pod: &Value) -> bool {
    let Some(selector) = meta::path(budget, "spec.selector").filter(|s| !s.is_null()) else {
        return false;
    };
    from_label_selector_json(selector).is_ok_and(|s| s.matches(meta::labels(pod)))
}

/// How long an eviction recorded in `status.disruptedPods` keeps its pod out of the healthy
/// count while the pod is not deleted yet (upstream's `DeletionTimeout`).
const DELETION_TIMEOUT_SECONDS: i64 = 120;

/// The evictions of a budget still under way: the entries of `status.disruptedPods` naming a
/// selected pod that is not being deleted yet, recorded less than [`DELETION_TIMEOUT_SECONDS`]
/// ago (upstream's `buildDisruptedPodMap`).
fn pending_disruptions(budget: &Value, pods: &[&Object], now: i64) -> Map<String, Value> {
    let Some(recorded) = meta::path(budget, "status.disruptedPods").and_then(Value::as_object)
    else {
        return Map::new();
    };
    pods.iter()
        .filter(|p| !meta::is_deleting(p))
        .filter_map(|p| {
            let name = meta::name(p);
            let at = recorded.get(name)?;
            let when = at.as_str()?.parse::<jiff::Timestamp>().ok()?;
            (when.as_second() + DELETION_TIMEOUT_SECONDS > now)
                .then(|| (name.to_string(), at.clone()))
        })
        .collect()
}

/// The pods of the budget's namespace it selects.
fn selected_pods<'a>(snapshot: &'a Snapshot, budget: &Value) -> Vec<&'a Object> {
    let namespace = meta::namespace(budget).unwrap_or("");
    let prefix = collection_prefix("", "pods", Some(namespace));
    snapshot
        .objects
        .range(prefix.clone()..)
        .take_while(|(key, _)| key.starts_with(&prefix))
        .map(|(_, p)| p)
        .filter(|p| selects(budget, p))
        .collect()
}

/// Whether a pod counts as healthy: Ready, not being deleted.
fn healthy(pod: &Value) -> bool {
    !meta::is_deleting(pod)
        && meta::path(pod, "status.conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
}

/// An int-or-percent scaled to `total`, rounded up as upstream's
/// `GetScaledValueFromIntOrPercent(.., true)`.
fn scaled(value: &Value, total: i64) -> i64 {
    match value {
        Value::String(s) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .map_or(0, |p| (total * p + 99) / 100),
        other => other.as_i64().unwrap_or(0),
    }
}

/// How many pods the budget's selected pods' controllers want (`expectedPods`): the replicas
/// of each owning controller, a pod without one counting once.
fn expected_from_controllers(snapshot: &Snapshot, namespace: &str, pods: &[&Object]) -> i64 {
    let mut controllers: BTreeMap<String, i64> = BTreeMap::new();
    let mut loose = 0;
    for pod in pods {
        let owner = meta::owner_references(pod)
            .iter()
            .find(|r| r.get("controller") == Some(&Value::Bool(true)));
        let Some(owner) = owner else {
            loose += 1;
            continue;
        };
        let uid = owner.get("uid").and_then(Value::as_str).unwrap_or("");
        if controllers.contains_key(uid) {
            continue;
        }
        let kind = owner.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = owner.get("name").and_then(Value::as_str).unwrap_or("");
        let (group, resource) = match kind {
            "ReplicaSet" => ("apps", "replicasets"),
            "StatefulSet" => ("apps", "statefulsets"),
            "ReplicationController" => ("", "replicationcontrollers"),
            _ => ("", ""),
        };
        let replicas = if resource.is_empty() {
            1
        } else {
            snapshot
                .objects
                .get(&object_key(group, resource, Some(namespace), name))
                .and_then(|c| meta::path(c, "spec.replicas").and_then(Value::as_i64))
                .unwrap_or(1)
        };
        controllers.insert(uid.to_string(), replicas);
    }
    controllers.values().sum::<i64>() + loose
}

/// The counters of a budget's status, computed from the pods stored now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Pods the budget covers.
    pub expected: i64,
    /// Of them, healthy now.
    pub current_healthy: i64,
    /// How many must stay healthy.
    pub desired_healthy: i64,
    /// How many may be disrupted now.
    pub disruptions_allowed: i64,
}

/// The budget's counts from the pods of its namespace (a pod whose eviction is under way does
/// not count as healthy).
pub(crate) fn counts(snapshot: &Snapshot, budget: &Value) -> Counts {
    let namespace = meta::namespace(budget).unwrap_or("");
    let pods = selected_pods(snapshot, budget);
    let disrupted = pending_disruptions(budget, &pods, jiff::Timestamp::now().as_second());
    let current_healthy = pods
        .iter()
        .filter(|p| healthy(p) && !disrupted.contains_key(meta::name(p)))
        .count() as i64;
    let min_available = meta::path(budget, "spec.minAvailable").filter(|v| !v.is_null());
    let max_unavailable = meta::path(budget, "spec.maxUnavailable").filter(|v| !v.is_null());
    let (expected, desired_healthy) = match (min_available, max_unavailable) {
        (Some(Value::Number(n)), _) => (pods.len() as i64, n.as_i64().unwrap_or(0)),
        (Some(percent), _) => {
            let expected = expected_from_controllers(snapshot, namespace, &pods);
            (expected, scaled(percent, expected))
        }
        (None, Some(max)) => {
            let expected = expected_from_controllers(snapshot, namespace, &pods);
            (expected, (expected - scaled(max, expected)).max(0))
        }
        (None, None) => (pods.len() as i64, 0),
    };
    Counts {
        expected,
        current_healthy,
        desired_healthy,
        disruptions_allowed: (current_healthy - desired_healthy).max(0),
    }
}

/// The `status` a budget should have now, keeping the transition time of an unchanged
/// condition.
pub(crate) fn status(snapshot: &Snapshot, budget: &Value) -> Value {
    let c = counts(snapshot, budget);
    let generation = meta::path(budget, "metadata.generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let previous: Vec<Value> = meta::path(budget, "status.conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "DisruptionAllowed"))
        .cloned()
        .into_iter()
        .collect();
    let mut status = json!({
        "observedGeneration": generation,
        "disruptionsAllowed": c.disruptions_allowed,
        "currentHealthy": c.current_healthy,
        "desiredHealthy": c.desired_healthy,
        "expectedPods": c.expected,
        "conditions": previous,
    });
    set_disruption_allowed(&mut status, c.disruptions_allowed > 0);
    let disrupted = pending_disruptions(
        budget,
        &selected_pods(snapshot, budget),
        jiff::Timestamp::now().as_second(),
    );
    if !disrupted.is_empty() {
        status["disruptedPods"] = Value::Object(disrupted);
    }
    status
}

/// Records in a budget the eviction of `pod` (upstream's eviction does so before it deletes
/// the pod, once its status allowed the disruption): one disruption fewer allowed (the
/// `DisruptionAllowed` condition turning `False` at none), `status.disruptedPods[pod]` now.
pub(crate) fn record_disruption(budget: &mut Value, pod: &str) {
    let Some(object) = budget.as_object_mut() else {
        return;
    };
    let status = object.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let allowed = status
        .get("disruptionsAllowed")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let allowed = (allowed - 1).max(0);
    status["disruptionsAllowed"] = json!(allowed);
    if allowed == 0 {
        set_disruption_allowed(status, false);
    }
    let disrupted = &mut status["disruptedPods"];
    if !disrupted.is_object() {
        *disrupted = json!({});
    }
    disrupted[pod] = json!(meta::now_rfc3339());
}

/// Upstream's `UpdateDisruptionAllowedCondition` on a status: the `DisruptionAllowed`
/// condition set as `SetStatusCondition` does (the transition time moves only when the status
/// does).
fn set_disruption_allowed(status: &mut Value, allowed: bool) {
    let observed = status
        .get("observedGeneration")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let (condition_status, reason) = if allowed {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    let conditions = &mut status["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let previous = list.iter().position(|c| c["type"] == "DisruptionAllowed");
    let since = previous
        .and_then(|i| list.get(i))
        .filter(|c| c["status"] == condition_status)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(meta::now_rfc3339()));
    let condition = json!({
        "type": "DisruptionAllowed",
        "status": condition_status,
        "observedGeneration": observed,
        "lastTransitionTime": since,
        "reason": reason,
        "message": "",
    });
    match previous.and_then(|i| list.get_mut(i)) {
        Some(slot) => *slot = condition,
        None => list.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn snapshot(objects: Vec<(String, Value)>) -> Snapshot {
        Snapshot {
            revision: 1,
            objects: objects.into_iter().map(|(k, v)| (k, Arc::new(v))).collect(),
        }
    }

    fn pod(name: &str, ready: bool) -> (String, Value) {
        (
            object_key("", "pods", Some("ns"), name),
            json!({"metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"}},
                "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}}),
        )
    }

    #[test]
    fn budgets_count_healthy_pods() {
        let state = snapshot(vec![pod("a", true), pod("b", true), pod("c", false)]);
        let budget = json!({"metadata": {"name": "pdb", "namespace": "ns"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
        assert_eq!(
            counts(&state, &budget),
            Counts {
                expected: 3,
                current_healthy: 2,
                desired_healthy: 1,
                disruptions_allowed: 1
            }
        );
        let strict = json!({"metadata": {"name": "pdb", "namespace": "ns"},
            "spec": {"maxUnavailable": "0%", "selector": {"matchLabels": {"app": "web"}}}});
        assert_eq!(counts(&state, &strict).disruptions_allowed, 0);
        let status = status(&state, &budget);
        assert_eq!(status["conditions"][0]["reason"], "SufficientPods");
        let none = json!({"metadata": {"namespace": "ns"}, "spec": {"minAvailable": 1}});
        assert_eq!(counts(&state, &none).expected, 0);
    }

    #[test]
    fn pods_being_evicted_do_not_count_as_healthy() {
        let state = snapshot(vec![pod("a", true), pod("b", true)]);
        let mut budget = json!({"metadata": {"name": "pdb", "namespace": "ns"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
        assert_eq!(counts(&state, &budget).disruptions_allowed, 1);
        budget["status"] = status(&state, &budget);
        record_disruption(&mut budget, "a");
        assert_eq!(budget["status"]["disruptionsAllowed"], 0);
        let condition = &budget["status"]["conditions"][0];
        assert_eq!(
            (&condition["status"], &condition["reason"]),
            (&json!("False"), &json!("InsufficientPods"))
        );
        assert!(budget["status"]["disruptedPods"]["a"].is_string());
        let c = counts(&state, &budget);
        assert_eq!((c.current_healthy, c.disruptions_allowed), (1, 0));
        // The record stays while the pod exists, and goes with it.
        assert!(status(&state, &budget)["disruptedPods"]["a"].is_string());
        let gone = snapshot(vec![pod("b", true)]);
        assert!(status(&gone, &budget).get("disruptedPods").is_none());
        // A record older than upstream's DeletionTimeout no longer holds the pod back.
        budget["status"]["disruptedPods"]["a"] = json!("2000-01-01T00:00:00Z");
        assert_eq!(counts(&state, &budget).current_healthy, 2);
        assert!(status(&state, &budget).get("disruptedPods").is_none());
    }
}
