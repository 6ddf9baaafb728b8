//! LimitRanger: the namespace's LimitRanges default the resources of new Pods' containers
//! (recorded in the `kubernetes.io/limit-ranger` annotation) and bound Pods, containers and
//! PersistentVolumeClaims, with upstream's messages.

use std::cmp::Ordering;

use serde_json::{Map, Value, json};

use crate::meta;
use crate::quantity::Quantity;
use crate::storage::{Object, Snapshot, collection_prefix};

/// The annotation naming what LimitRanger set.
const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// The LimitRanges of a namespace, by name.
pub(crate) fn limit_ranges(snapshot: &Snapshot, namespace: &str) -> Vec<Object> {
    let prefix = collection_prefix("", "limitranges", Some(namespace));
    snapshot
        .range(&prefix, None)
        .map(|(_, o)| o.clone())
        .collect()
}

/// The items of a type (`Container`, `Pod`, `PersistentVolumeClaim`) of the given ranges.
fn items<'a>(ranges: &'a [Object], kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    ranges
        .iter()
        .filter_map(|r| meta::path(r, "spec.limits").and_then(Value::as_array))
        .flatten()
        .filter(move |i| i.get("type").and_then(Value::as_str) == Some(kind))
}

fn quantity(v: &Value) -> Option<Quantity> {
    crate::quantity::from_json(v).ok()
}

/// Fills the containers' missing requests and limits from the `Container` items' `default`
/// and `defaultRequest`, and records what it set in the pod's annotation.
pub(crate) fn default_pod(ranges: &[Object], pod: &mut Value) {
    let defaults: Vec<Value> = items(ranges, "Container").cloned().collect();
    if defaults.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    for (list, what) in [
        ("initContainers", "init container"),
        ("containers", "container"),
    ] {
        let Some(containers) = pod
            .get_mut("spec")
            .and_then(|s| s.get_mut(list))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for container in containers {
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let Some(c) = container.as_object_mut() else {
                continue;
            };
            let resources = c.entry("resources").or_insert_with(|| json!({}));
            for (field, source, label) in [
                ("requests", "defaultRequest", "request"),
                ("limits", "default", "limit"),
            ] {
                let mut set = Vec::new();
                for item in &defaults {
                    let Some(given) = item.get(source).and_then(Value::as_object) else {
                        continue;
                    };
                    let Some(target) = resources
                        .as_object_mut()
                        .map(|r| r.entry(field).or_insert_with(|| Value::Object(Map::new())))
                    else {
                        continue;
                    };
                    if target.is_null() {
                        *target = Value::Object(Map::new());
                    }
                    let Some(target) = target.as_object_mut() else {
                        continue;
                    };
                    for (resource, value) in given {
                        if !target.contains_key(resource) {
                            target.insert(resource.clone(), value.clone());
                            set.push(resource.clone());
                        }
                    }
                }
                if let Some(r) = resources.as_object_mut()
                    && r.get(field)
                        .and_then(Value::as_object)
                        .is_some_and(Map::is_empty)
                {
                    r.remove(field);
                }
                if !set.is_empty() {
                    set.sort();
                    notes.push(format!("{} {label} for {what} {name}", set.join(", ")));
                }
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    if let Some(md) = meta::metadata_mut(pod) {
        let annotations = md.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(
                ANNOTATION.into(),
                json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
            );
        }
    }
}

/// A resource's amount in a requirements list, if given.
fn amount(list: Option<&Value>, resource: &str) -> Option<Quantity> {
    list.and_then(|l| l.get(resource)).and_then(quantity)
}

/// The min/max/ratio checks of one item against a request and limit per resource.
fn check_item(
    item: &Value,
    kind: &str,
    requests: &dyn Fn(&str) -> Option<Quantity>,
    limits: &dyn Fn(&str) -> Option<Quantity>,
    errors: &mut Vec<String>,
) {
    let bound = |field: &str| {
        item.get(field)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| quantity(v).map(|q| (k.clone(), q)))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    for (resource, min) in bound("min") {
        match requests(&resource) {
            None => errors.push(format!(
                "minimum {resource} usage per {kind} is {}.  No request is specified",
                min.canonical()
            )),
            Some(r) if r.cmp(&min) == Ordering::Less => errors.push(format!(
                "minimum {resource} usage per {kind} is {}, but request is {}",
                min.canonical(),
                r.canonical()
            )),
            Some(_) => {}
        }
    }
    for (resource, max) in bound("max") {
        // PersistentVolumeClaims are bounded by their request; the rest by their limit.
        let (given, what) = if kind == "PersistentVolumeClaim" {
            (requests(&resource), "request")
        } else {
            (limits(&resource), "limit")
        };
        match given {
            None => errors.push(format!(
                "maximum {resource} usage per {kind} is {}.  No {what} is specified",
                max.canonical()
            )),
            Some(l) if l.cmp(&max) == Ordering::Greater => errors.push(format!(
                "maximum {resource} usage per {kind} is {}, but {what} is {}",
                max.canonical(),
                l.canonical()
            )),
            Some(_) => {}
        }
    }
    for (resource, ratio) in bound("maxLimitRequestRatio") {
        let (Some(limit), Some(request)) = (limits(&resource), requests(&resource)) else {
            errors.push(format!(
                "{resource} max limit to request ratio per {kind} is {}, but no request is specified or request is 0",
                ratio.canonical()
            ));
            continue;
        };
        let as_f64 = |q: &Quantity| q.canonical_f64();
        let (l, r, max) = (as_f64(&limit), as_f64(&request), as_f64(&ratio));
        if r > 0.0 && l / r > max {
            errors.push(format!(
                "{resource} max limit to request ratio per {kind} is {}, but provided ratio is {:.6}",
                ratio.canonical(),
                l / r
            ));
        } else if r <= 0.0 {
            errors.push(format!(
                "{resource} max limit to request ratio per {kind} is {}, but no request is specified or request is 0",
                ratio.canonical()
            ));
        }
    }
}

/// The bounds a Pod breaks: per container (`Container` items) and summed (`Pod` items).
pub(crate) fn check_pod(ranges: &[Object], pod: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .filter_map(|f| meta::path(pod, &format!("spec.{f}")))
        .filter_map(Value::as_array)
        .flatten()
        .collect();
    for item in items(ranges, "Container") {
        for c in &containers {
            let requests = |r: &str| amount(meta::path(c, "resources.requests"), r);
            let limits = |r: &str| amount(meta::path(c, "resources.limits"), r);
            check_item(item, "Container", &requests, &limits, &mut errors);
        }
    }
    let regular: Vec<&Value> = meta::path(pod, "spec.containers")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let sum = |field: &str, resource: &str| {
        let mut total: Option<Quantity> = None;
        for c in &regular {
            if let Some(q) = amount(meta::path(c, &format!("resources.{field}")), resource) {
                total = Some(match total {
                    Some(t) => t.checked_add(&q).unwrap_or(t),
                    None => q,
                });
            }
        }
        total
    };
    for item in items(ranges, "Pod") {
        let requests = |r: &str| sum("requests", r);
        let limits = |r: &str| sum("limits", r);
        check_item(item, "Pod", &requests, &limits, &mut errors);
    }
    errors
}

/// The bounds a PersistentVolumeClaim breaks (its storage request).
pub(crate) fn check_claim(ranges: &[Object], claim: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    for item in items(ranges, "PersistentVolumeClaim") {
        let requests = |r: &str| amount(meta::path(claim, "spec.resources.requests"), r);
        let limits = |r: &str| amount(meta::path(claim, "spec.resources.limits"), r);
        check_item(
            item,
            "PersistentVolumeClaim",
            &requests,
            &limits,
            &mut errors,
        );
    }
    errors
}

/// Upstream's aggregate of several errors: `[a, b]`; one error alone as itself.
pub(crate) fn aggregate(errors: &[String]) -> String {
    if errors.len() == 1 {
        errors[0].clone()
    } else {
        format!("[{}]", errors.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn range(limits: Value) -> Vec<Object> {
        vec![Arc::new(json!({"spec": {"limits": limits}}))]
    }

    #[test]
    fn containers_get_defaults_and_the_annotation() {
        // k8s-reference/builtin/create-limitrange.json
        let ranges = range(json!([{"type": "Container",
            "default": {"cpu": "500m", "memory": "256Mi"},
            "defaultRequest": {"cpu": "100m", "memory": "256Mi"}}]));
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c"},
            {"name": "d", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}},
        ]}});
        default_pod(&ranges, &mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}})
        );
        assert_eq!(
            pod["spec"]["containers"][1]["resources"]["limits"]["memory"],
            "256Mi"
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c; memory request for container d; memory limit for container d"
        );
    }

    #[test]
    fn bounds_are_checked_with_upstreams_messages() {
        let ranges = range(json!([
            {"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "1"},
             "maxLimitRequestRatio": {"cpu": "2"}},
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}},
        ]));
        let pod = json!({"spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "50m"}, "limits": {"cpu": "2"}}}]}});
        assert_eq!(
            aggregate(&check_pod(&ranges, &pod)),
            "[minimum cpu usage per Container is 100m, but request is 50m, maximum cpu usage per Container is 1, but limit is 2, cpu max limit to request ratio per Container is 2, but provided ratio is 40.000000]"
        );
        let claim = json!({"spec": {"resources": {"requests": {"storage": "500Mi"}}}});
        assert_eq!(
            aggregate(&check_claim(&ranges, &claim)),
            "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"
        );
    }
}
