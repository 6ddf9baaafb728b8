//! The Endpoints controller: a Service with a selector gets an Endpoints object of the same
//! name listing the IPs of the Pods it selects (ready ones in `addresses`, others in
//! `notReadyAddresses`) and the resolved target ports (numbers, or named container ports).
//!
//! Endpoints it manages carry `endpoints.kubernetes.io/last-change-trigger-time`; such an
//! Endpoints whose Service is gone is deleted, as upstream does. Services without a selector
//! are left alone (their Endpoints belong to the user).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::access::{self, pod_active, pod_ready};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::Object;

const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
const HEADLESS: &str = "service.kubernetes.io/headless";

/// Reconciles the Endpoints of Service `ns/name`.
pub async fn reconcile(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    // The EndpointSlices beside the Endpoints.
    super::endpointslices::reconcile(objects, ns, name).await?;
    let info = access::info(objects, "", "v1", "endpoints")?;
    let existing = access::get(objects, "", "endpoints", ns, name);
    let service = access::get(objects, "", "services", ns, name).filter(|s| !meta::is_deleting(s));
    let Some(service) = service else {
        if let Some(ep) = existing
            && managed(&ep)
        {
            access::delete(objects, access::Actor::Endpoints, &info, &ep).await?;
        }
        return Ok(());
    };
    let selector = access::labels_of(&service, "spec.selector");
    if selector.is_empty() {
        return Ok(());
    }
    let pods: Vec<Object> = access::list(objects, "", "pods", ns)
        .into_iter()
        .filter(|p| pod_active(p) && selects(&selector, p))
        .collect();
    let subsets = subsets(&service, &pods);
    let mut labels = access::labels_of(&service, "metadata.labels");
    if meta::path(&service, "spec.clusterIP").and_then(Value::as_str) == Some("None") {
        labels.insert(HEADLESS.into(), json!(""));
    }
    match existing {
        Some(ep) => {
            let same_subsets =
                ep.get("subsets").cloned().unwrap_or(json!([])) == Value::Array(subsets.clone());
            let same_labels = access::labels_of(&ep, "metadata.labels") == labels;
            if same_subsets && same_labels && managed(&ep) {
                return Ok(());
            }
            let mut next = (*ep).clone();
            fill(&mut next, labels, subsets);
            access::replace(objects, access::Actor::Endpoints, &info, next).await?;
        }
        None => {
            let mut ep = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": ns}});
            fill(&mut ep, labels, subsets);
            access::create(objects, access::Actor::Endpoints, &info, Some(ns), ep).await?;
        }
    }
    Ok(())
}

fn managed(ep: &Value) -> bool {
    meta::metadata(ep)
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(TRIGGER_TIME))
        .is_some()
}

fn fill(ep: &mut Value, labels: Map<String, Value>, subsets: Vec<Value>) {
    if let Some(md) = meta::metadata_mut(ep) {
        if labels.is_empty() {
            md.remove("labels");
        } else {
            md.insert("labels".into(), Value::Object(labels));
        }
        let annotations = md.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[TRIGGER_TIME] = json!(meta::now_rfc3339());
    }
    if let Some(map) = ep.as_object_mut() {
        if subsets.is_empty() {
            map.remove("subsets");
        } else {
            map.insert("subsets".into(), Value::Array(subsets));
        }
    }
}

/// Whether `pod`'s labels include every `selector` pair (a Service selector is a plain map).
pub(super) fn selects(selector: &Map<String, Value>, pod: &Value) -> bool {
    let labels = meta::labels(pod);
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// Resolves a Service port's `targetPort` for one Pod: a number as is, a name through the
/// Pod's container ports.
pub(super) fn resolve_port(port: &Value, pod: &Value) -> Option<i64> {
    match port.get("targetPort") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => match s.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => meta::path(pod, "spec.containers")
                .and_then(Value::as_array)?
                .iter()
                .flat_map(|c| {
                    c.get("ports")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default()
                })
                .find(|p| p.get("name").and_then(Value::as_str) == Some(s.as_str()))
                .and_then(|p| p.get("containerPort").and_then(Value::as_i64)),
        },
        _ => port.get("port").and_then(Value::as_i64),
    }
}

/// One subset being built: its ports, ready and not-ready addresses.
type Subset = (Vec<Value>, Vec<Value>, Vec<Value>);

/// The subsets: Pods grouped by their resolved port lists, addresses sorted by IP.
fn subsets(service: &Value, pods: &[Object]) -> Vec<Value> {
    let ports: Vec<Value> = meta::path(service, "spec.ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let publish_not_ready =
        meta::path(service, "spec.publishNotReadyAddresses").and_then(Value::as_bool) == Some(true);
    let mut groups: BTreeMap<String, Subset> = BTreeMap::new();
    for pod in pods {
        let Some(ip) = meta::path(pod, "status.podIP")
            .and_then(Value::as_str)
            .filter(|ip| !ip.is_empty())
        else {
            continue;
        };
        let resolved: Vec<Value> = ports
            .iter()
            .filter_map(|p| {
                let number = resolve_port(p, pod)?;
                let mut ep_port = Map::new();
                if let Some(name) = p
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                {
                    ep_port.insert("name".into(), json!(name));
                }
                ep_port.insert("port".into(), json!(number));
                ep_port.insert(
                    "protocol".into(),
                    p.get("protocol").cloned().unwrap_or(json!("TCP")),
                );
                if let Some(app) = p.get("appProtocol") {
                    ep_port.insert("appProtocol".into(), app.clone());
                }
                Some(Value::Object(ep_port))
            })
            .collect();
        if !ports.is_empty() && resolved.is_empty() {
            continue;
        }
        let mut address = json!({
            "ip": ip,
            "targetRef": {"kind": "Pod", "namespace": meta::namespace(pod), "name": meta::name(pod), "uid": meta::uid(pod)},
        });
        if let Some(node) = meta::path(pod, "spec.nodeName").and_then(Value::as_str) {
            address["nodeName"] = json!(node);
        }
        if let (Some(hostname), Some(subdomain)) = (
            meta::path(pod, "spec.hostname").and_then(Value::as_str),
            meta::path(pod, "spec.subdomain").and_then(Value::as_str),
        ) && subdomain == meta::name(service)
        {
            address["hostname"] = json!(hostname);
        }
        let key = Value::Array(resolved.clone()).to_string();
        let entry = groups
            .entry(key)
            .or_insert_with(|| (resolved, Vec::new(), Vec::new()));
        if publish_not_ready || pod_ready(pod) {
            entry.1.push(address);
        } else {
            entry.2.push(address);
        }
    }
    let by_ip = |a: &Value, b: &Value| a["ip"].as_str().cmp(&b["ip"].as_str());
    groups
        .into_values()
        .map(|(ports, mut ready, mut not_ready)| {
            ready.sort_by(by_ip);
            not_ready.sort_by(by_ip);
            let mut subset = Map::new();
            if !ready.is_empty() {
                subset.insert("addresses".into(), Value::Array(ready));
            }
            if !not_ready.is_empty() {
                subset.insert("notReadyAddresses".into(), Value::Array(not_ready));
            }
            if !ports.is_empty() {
                subset.insert("ports".into(), Value::Array(ports));
            }
            Value::Object(subset)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pod(name: &str, ip: &str, ready: bool) -> Object {
        Arc::new(
            json!({"metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"app": "web"}},
            "spec": {"nodeName": "n", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}}),
        )
    }

    #[test]
    fn named_target_ports_resolve_and_readiness_splits_addresses() {
        let svc = json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"},
            "ports": [{"name": "web", "port": 80, "targetPort": "http", "protocol": "TCP"}]}});
        let subsets = subsets(
            &svc,
            &[
                pod("b", "10.244.0.3", true),
                pod("a", "10.244.0.2", true),
                pod("c", "10.244.0.4", false),
            ],
        );
        assert_eq!(subsets.len(), 1);
        let s = &subsets[0];
        assert_eq!(
            s["ports"],
            json!([{"name": "web", "port": 8080, "protocol": "TCP"}])
        );
        assert_eq!(s["addresses"][0]["ip"], "10.244.0.2");
        assert_eq!(s["addresses"][1]["ip"], "10.244.0.3");
        assert_eq!(s["addresses"][0]["targetRef"]["name"], "a");
        assert_eq!(s["notReadyAddresses"][0]["ip"], "10.244.0.4");
        let numeric = json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80, "targetPort": 9376, "protocol": "TCP"}]}});
        assert_eq!(
            subsets_ports(&numeric),
            json!([{"port": 9376, "protocol": "TCP"}])
        );
    }

    fn subsets_ports(svc: &Value) -> Value {
        subsets(svc, &[pod("a", "10.244.0.2", true)])[0]["ports"].clone()
    }
}
