//! Aggregated groups in discovery, as kube-aggregator lists them: a group with an aggregated
//! APIService is described from its APIServices (`handler_apis.go`: versions by
//! `versionPriority`, then by Kubernetes version; the first is preferred), whether or not
//! they are available, and a new group is placed by its group priority (then name); in aggregated discovery each aggregated version carries the resources
//! of its last discovery check (`handler_discovery.go`), `Stale` and possibly empty when the
//! last check failed or none ran yet.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::kinds::apiregistration::{GROUP, RESOURCE};
use crate::kinds::printer::text;
use crate::meta;
use crate::objects::Objects;
use crate::registry::compare_versions;
use crate::storage::collection_prefix;

/// The APIServices of every group that has an aggregated one, each group's sorted as
/// upstream's `SortedByGroupAndVersion` (version priority, then version, highest first).
fn aggregated_groups(objects: &Objects) -> BTreeMap<String, Vec<Value>> {
    let snapshot = objects.storage().snapshot();
    let prefix = collection_prefix(GROUP, RESOURCE, None);
    // Most APIServices are local: only the groups with an aggregated one are copied.
    let wanted: std::collections::BTreeSet<&str> = snapshot
        .range(&prefix, None)
        .filter(|(_, obj)| is_aggregated(obj))
        .map(|(_, obj)| text(obj, "spec.group"))
        .filter(|g| !g.is_empty())
        .collect();
    let mut groups: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    if wanted.is_empty() {
        return groups;
    }
    for (_, obj) in snapshot.range(&prefix, None) {
        let group = text(obj, "spec.group");
        if wanted.contains(group) {
            groups
                .entry(group.to_string())
                .or_default()
                .push((**obj).clone());
        }
    }
    for services in groups.values_mut() {
        services.sort_by(|a, b| {
            let priority = |o: &Value| {
                meta::path(o, "spec.versionPriority")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            priority(b)
                .cmp(&priority(a))
                .then_with(|| compare_versions(text(b, "spec.version"), text(a, "spec.version")))
        });
    }
    groups
}

/// The group priority of every group with an APIService: the highest `groupPriorityMinimum`
/// of its APIServices.
fn group_priorities(objects: &Objects) -> BTreeMap<String, i64> {
    let snapshot = objects.storage().snapshot();
    let mut priorities: BTreeMap<String, i64> = BTreeMap::new();
    for (_, obj) in snapshot.range(&collection_prefix(GROUP, RESOURCE, None), None) {
        let priority = meta::path(obj, "spec.groupPriorityMinimum")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let slot = priorities
            .entry(text(obj, "spec.group").to_string())
            .or_insert(priority);
        *slot = (*slot).max(priority);
    }
    priorities
}

/// Where a new group goes in a list ordered as upstream orders groups (group priority, highest
/// first, then name): before the first group it sorts ahead of.
fn position(names: &[&str], name: &str, priorities: &BTreeMap<String, i64>) -> usize {
    let priority = |g: &str| priorities.get(g).copied().unwrap_or(0);
    let mine = priority(name);
    names
        .iter()
        .position(|other| {
            let theirs = priority(other);
            theirs < mine || (theirs == mine && *other > name)
        })
        .unwrap_or(names.len())
}

/// Whether an APIService is served by an extension server.
fn is_aggregated(obj: &Value) -> bool {
    meta::path(obj, "spec.service").is_some_and(Value::is_object)
}

/// `name`, `versions` and `preferredVersion` of a group from its sorted APIServices.
fn group_doc(name: &str, services: &[Value]) -> Value {
    let versions: Vec<Value> = services
        .iter()
        .map(|s| {
            let v = text(s, "spec.version");
            json!({"groupVersion": format!("{name}/{v}"), "version": v})
        })
        .collect();
    let preferred = versions.first().cloned().unwrap_or(json!({}));
    json!({"name": name, "versions": versions, "preferredVersion": preferred})
}

/// `/apis/<group>` of a group with an aggregated APIService (`None` for other groups).
pub(crate) fn group(objects: &Objects, name: &str) -> Option<Value> {
    let groups = aggregated_groups(objects);
    let services = groups.get(name)?;
    let mut doc = group_doc(name, services);
    if let Some(map) = doc.as_object_mut() {
        map.insert("kind".into(), json!("APIGroup"));
        map.insert("apiVersion".into(), json!("v1"));
    }
    Some(doc)
}

/// Puts the groups with an aggregated APIService into an `APIGroupList`: a group already
/// listed gets its versions from its APIServices, others are added.
pub(crate) fn merge_groups(objects: &Objects, doc: &mut Value) {
    let groups = aggregated_groups(objects);
    if groups.is_empty() {
        return;
    }
    let priorities = group_priorities(objects);
    let Some(list) = doc.get_mut("groups").and_then(Value::as_array_mut) else {
        return;
    };
    for (name, services) in &groups {
        let entry = group_doc(name, services);
        match list.iter_mut().find(|g| g["name"] == name.as_str()) {
            Some(slot) => *slot = entry,
            None => {
                let names: Vec<&str> = list.iter().map(|g| text(g, "name")).collect();
                let at = position(&names, name, &priorities);
                list.insert(at, entry);
            }
        }
    }
}

/// Puts the aggregated versions into an `APIGroupDiscoveryList` with the resources of their
/// last discovery check.
pub(crate) fn merge_aggregated(objects: &Objects, doc: &mut Value) {
    let groups = aggregated_groups(objects);
    if groups.is_empty() {
        return;
    }
    let checks = objects.aggregator().discovered();
    let priorities = group_priorities(objects);
    let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) else {
        return;
    };
    for (name, services) in &groups {
        let local: Vec<Value> = items
            .iter()
            .find(|g| g["metadata"]["name"] == name.as_str())
            .and_then(|g| g["versions"].as_array().cloned())
            .unwrap_or_default();
        let versions: Vec<Value> = services
            .iter()
            .filter_map(|s| {
                let version = text(s, "spec.version");
                if !is_aggregated(s) {
                    return local.iter().find(|v| v["version"] == version).cloned();
                }
                let check = checks
                    .get(meta::name(s))
                    .filter(|c| c.fingerprint == super::fingerprint(s));
                let mut entry = check
                    .and_then(|c| c.discovery.clone())
                    .unwrap_or_else(|| json!({"version": version}));
                let fresh = check.is_some_and(|c| c.error.is_none());
                entry["version"] = json!(version);
                entry["freshness"] = json!(if fresh { "Current" } else { "Stale" });
                if entry["resources"].as_array().is_some_and(Vec::is_empty)
                    && let Some(map) = entry.as_object_mut()
                {
                    map.remove("resources");
                }
                Some(entry)
            })
            .collect();
        let item = json!({"metadata": {"name": name}, "versions": versions});
        match items
            .iter_mut()
            .find(|g| g["metadata"]["name"] == name.as_str())
        {
            Some(slot) => *slot = item,
            None => {
                let names: Vec<&str> = items.iter().map(|g| text(g, "metadata.name")).collect();
                let at = position(&names, name, &priorities);
                items.insert(at, item);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_groups_go_by_priority_then_name() {
        let priorities: BTreeMap<String, i64> = [
            ("apps", 17800),
            ("batch", 17400),
            ("a.example.com", 1000),
            ("z.example.com", 1000),
            ("metrics.k8s.io", 100),
            ("m.example.com", 1000),
            ("high.example.com", 17500),
        ]
        .into_iter()
        .map(|(g, p)| (g.to_string(), p))
        .collect();
        let names = [
            "apps",
            "batch",
            "a.example.com",
            "z.example.com",
            "metrics.k8s.io",
        ];
        assert_eq!(position(&names, "m.example.com", &priorities), 3);
        assert_eq!(position(&names, "high.example.com", &priorities), 1);
        assert_eq!(position(&names, "unknown.example.com", &priorities), 5);
    }
}
