//! The EndpointSlice controller, beside the Endpoints one: a Service with a selector gets one
//! EndpointSlice (named `<service>-<suffix>`, owned by the Service) listing the Pods it
//! selects, one endpoint per Pod IP with its `ready`/`serving`/`terminating` conditions, node and
//! target reference, and the resolved ports. A Service without Pods gets a slice without
//! endpoints or ports, as upstream's placeholder slice.
//!
//! Slices it manages carry `endpointslice.kubernetes.io/managed-by:
//! endpointslice-controller.k8s.io`; those of a Service that is gone (or lost its selector) are
//! deleted.

use serde_json::{Map, Value, json};

use super::access::{self, pod_ready};
use super::endpoints::{resolve_port, selects};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::Object;

const GROUP: &str = "discovery.k8s.io";
const RESOURCE: &str = "endpointslices";
const SERVICE_NAME: &str = "kubernetes.io/service-name";
const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const CONTROLLER: &str = "endpointslice-controller.k8s.io";
const HEADLESS: &str = "service.kubernetes.io/headless";

/// Reconciles the EndpointSlices of Service `ns/name`.
pub async fn reconcile(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    let info = access::info(objects, GROUP, "v1", RESOURCE)?;
    let mut existing: Vec<Object> = access::list(objects, GROUP, RESOURCE, ns)
        .into_iter()
        .filter(|s| managed_for(s, name))
        .collect();
    existing.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
    let service = access::get(objects, "", "services", ns, name)
        .filter(|s| !meta::is_deleting(s))
        .filter(|s| !access::labels_of(s, "spec.selector").is_empty());
    let Some(service) = service else {
        for slice in &existing {
            access::delete(objects, access::Actor::EndpointSlice, &info, slice).await?;
        }
        return Ok(());
    };
    let selector = access::labels_of(&service, "spec.selector");
    // As upstream (`ShouldPodBeInEndpoints` with terminating pods included): every pod that
    // has not finished, terminating ones too.
    let pods: Vec<Object> = access::list(objects, "", "pods", ns)
        .into_iter()
        .filter(|p| !super::pods::terminal(p) && selects(&selector, p))
        .collect();
    let desired = desired(&service, &pods);
    let mut rest = existing.into_iter();
    match rest.next() {
        Some(slice) => {
            let same = ["addressType", "endpoints", "ports"]
                .iter()
                .all(|f| slice.get(*f) == desired.get(*f))
                && meta::labels(&slice) == meta::labels(&desired);
            if !same {
                let mut next = (*slice).clone();
                if let (Some(root), Some(want)) = (next.as_object_mut(), desired.as_object()) {
                    for field in ["addressType", "endpoints", "ports"] {
                        match want.get(field) {
                            Some(v) => root.insert(field.into(), v.clone()),
                            None => root.remove(field),
                        };
                    }
                }
                if let (Some(md), Some(labels)) = (
                    meta::metadata_mut(&mut next),
                    desired["metadata"].get("labels"),
                ) {
                    md.insert("labels".into(), labels.clone());
                }
                if slice.get("addressType") != desired.get("addressType") {
                    // The address type never changes: replace the slice.
                    access::delete(objects, access::Actor::EndpointSlice, &info, &slice).await?;
                    access::create(
                        objects,
                        access::Actor::EndpointSlice,
                        &info,
                        Some(ns),
                        desired,
                    )
                    .await?;
                } else {
                    access::replace(objects, access::Actor::EndpointSlice, &info, next).await?;
                }
            }
        }
        None => {
            access::create(
                objects,
                access::Actor::EndpointSlice,
                &info,
                Some(ns),
                desired,
            )
            .await?;
        }
    }
    for extra in rest {
        access::delete(objects, access::Actor::EndpointSlice, &info, &extra).await?;
    }
    Ok(())
}

/// Whether `slice` is one this controller manages for Service `name`.
fn managed_for(slice: &Value, name: &str) -> bool {
    let labels = meta::labels(slice);
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    label(SERVICE_NAME) == Some(name) && label(MANAGED_BY) == Some(CONTROLLER)
}

/// The slice the Service's Pods call for (named by `generateName`).
fn desired(service: &Value, pods: &[Object]) -> Value {
    let name = meta::name(service);
    let ipv6 = meta::path(service, "spec.ipFamilies")
        .and_then(Value::as_array)
        .and_then(|f| f.first())
        .and_then(Value::as_str)
        == Some("IPv6");
    let address_type = if ipv6 { "IPv6" } else { "IPv4" };
    let service_ports: Vec<Value> = meta::path(service, "spec.ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut endpoints = Vec::new();
    let mut ports: Option<Vec<Value>> = None;
    for pod in pods {
        let Some(ip) = meta::path(pod, "status.podIP")
            .and_then(Value::as_str)
            .filter(|ip| !ip.is_empty() && ip.contains(':') == ipv6)
        else {
            continue;
        };
        let resolved = endpoint_ports(&service_ports, pod);
        if !service_ports.is_empty() && resolved.is_empty() {
            continue;
        }
        ports.get_or_insert(resolved);
        // Upstream's `podToEndpoint`: a terminating pod is never ready, serving while its
        // readiness holds.
        let serving = pod_ready(pod);
        let terminating = meta::is_deleting(pod);
        let mut endpoint = json!({
            "addresses": [ip],
            "conditions": {"ready": serving && !terminating, "serving": serving, "terminating": terminating},
            "targetRef": {"kind": "Pod", "namespace": meta::namespace(pod), "name": meta::name(pod), "uid": meta::uid(pod)},
        });
        if let Some(node) = meta::path(pod, "spec.nodeName").and_then(Value::as_str) {
            endpoint["nodeName"] = json!(node);
        }
        endpoints.push(endpoint);
    }
    endpoints.sort_by(|a, b| a["addresses"][0].as_str().cmp(&b["addresses"][0].as_str()));
    let mut labels = access::labels_of(service, "metadata.labels");
    labels.insert(SERVICE_NAME.into(), json!(name));
    labels.insert(MANAGED_BY.into(), json!(CONTROLLER));
    if meta::path(service, "spec.clusterIP").and_then(Value::as_str) == Some("None") {
        labels.insert(HEADLESS.into(), json!(""));
    }
    let mut slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "generateName": format!("{name}-"),
            "namespace": meta::namespace(service),
            "labels": labels,
            "ownerReferences": [access::owner_ref(service, "v1", "Service")],
        },
        "addressType": address_type,
    });
    if !endpoints.is_empty() {
        slice["endpoints"] = Value::Array(endpoints);
    }
    if let Some(ports) = ports.filter(|p| !p.is_empty()) {
        slice["ports"] = Value::Array(ports);
    }
    slice
}

/// The Service's ports resolved for one Pod, as EndpointSlice ports (name always set).
fn endpoint_ports(service_ports: &[Value], pod: &Value) -> Vec<Value> {
    service_ports
        .iter()
        .filter_map(|p| {
            let number = resolve_port(p, pod)?;
            let mut port = Map::new();
            port.insert(
                "name".into(),
                p.get("name").cloned().unwrap_or_else(|| json!("")),
            );
            port.insert("port".into(), json!(number));
            port.insert(
                "protocol".into(),
                p.get("protocol").cloned().unwrap_or_else(|| json!("TCP")),
            );
            if let Some(app) = p.get("appProtocol") {
                port.insert("appProtocol".into(), app.clone());
            }
            Some(Value::Object(port))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pod(name: &str, ip: &str, ready: bool) -> Object {
        Arc::new(json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "labels": {"app": "web"}},
            "spec": {"nodeName": "korral-node", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
            "status": {"podIP": ip, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        }))
    }

    #[test]
    fn slices_list_pods_with_conditions_and_resolved_ports() {
        let service = json!({"metadata": {"name": "web", "namespace": "default", "uid": "svc"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]}});
        let slice = desired(
            &service,
            &[pod("b", "10.0.0.2", false), pod("a", "10.0.0.1", true)],
        );
        assert_eq!(slice["metadata"]["generateName"], "web-");
        assert_eq!(slice["metadata"]["labels"][SERVICE_NAME], "web");
        assert_eq!(slice["metadata"]["labels"][MANAGED_BY], CONTROLLER);
        assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Service");
        assert_eq!(slice["addressType"], "IPv4");
        assert_eq!(
            slice["ports"],
            json!([{"name": "", "port": 8080, "protocol": "TCP"}])
        );
        assert_eq!(slice["endpoints"][0]["addresses"], json!(["10.0.0.1"]));
        assert_eq!(
            slice["endpoints"][0]["conditions"],
            json!({"ready": true, "serving": true, "terminating": false})
        );
        assert_eq!(slice["endpoints"][1]["conditions"]["ready"], false);
        assert_eq!(slice["endpoints"][1]["targetRef"]["name"], "b");
        // A terminating pod stays, not ready, serving while its readiness holds.
        let mut going = (*pod("c", "10.0.0.3", true)).clone();
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:30Z");
        let slice = desired(&service, &[Arc::new(going)]);
        assert_eq!(
            slice["endpoints"][0]["conditions"],
            json!({"ready": false, "serving": true, "terminating": true})
        );
        let empty = desired(&service, &[]);
        assert!(empty.get("endpoints").is_none() && empty.get("ports").is_none());
        assert!(managed_for(&slice, "web"));
        assert!(!managed_for(&slice, "other"));
    }
}
