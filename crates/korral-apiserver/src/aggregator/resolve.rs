//! Where an APIService's Service is reached: a local address mapped for it (a test
//! environment's extension server, as webhooks), else a ready endpoint of its EndpointSlices
//! serving the port's name, as upstream's endpoint routing (`ResolveEndpoint` of
//! `k8s.io/apiserver/pkg/util/proxy`; cluster IPs do not route here). Errors are upstream's.

use std::net::{IpAddr, SocketAddr};

use serde_json::Value;

use crate::admission::ServiceMap;
use crate::kinds::printer::text;
use crate::meta;
use crate::storage::{Snapshot, collection_prefix, object_key};

/// The address of `namespace/name` on `port`.
pub(crate) fn endpoint(
    snapshot: &Snapshot,
    services: &ServiceMap,
    namespace: &str,
    name: &str,
    port: u16,
) -> Result<SocketAddr, String> {
    if let Some(addr) = services.get(namespace, name, port) {
        return Ok(addr);
    }
    let Some(service) = snapshot
        .objects
        .get(&object_key("", "services", Some(namespace), name))
    else {
        return Err(format!("service \"{name}\" not found"));
    };
    let kind = meta::path(service, "spec.type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if !matches!(kind, "ClusterIP" | "LoadBalancer" | "NodePort") {
        return Err(format!("unsupported service type {kind:?}"));
    }
    let ports = meta::path(service, "spec.ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let Some(service_port) = ports
        .iter()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
    else {
        return Err(format!("no service port {port} found for service {name:?}"));
    };
    let port_name = text(service_port, "name");
    let prefix = format!(
        "{}{namespace}/",
        collection_prefix("discovery.k8s.io", "endpointslices", None)
    );
    for (_, slice) in snapshot.range(&prefix, None) {
        let owned = meta::labels(slice)
            .and_then(|l| l.get("kubernetes.io/service-name"))
            .and_then(Value::as_str)
            == Some(name);
        if !owned {
            continue;
        }
        let slice_ports = slice
            .get("ports")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for p in slice_ports {
            if p.get("name").and_then(Value::as_str).unwrap_or("") != port_name {
                continue;
            }
            let Some(number) = p
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|n| u16::try_from(n).ok())
            else {
                continue;
            };
            let endpoints = slice
                .get("endpoints")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let ready = endpoints.iter().find_map(|e| {
                let ready = meta::path(e, "conditions.ready")
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                ready
                    .then(|| {
                        e.get("addresses")
                            .and_then(Value::as_array)
                            .and_then(|a| a.first())
                            .and_then(Value::as_str)
                            .and_then(|ip| ip.parse::<IpAddr>().ok())
                    })
                    .flatten()
            });
            if let Some(ip) = ready {
                return Ok(SocketAddr::new(ip, number));
            }
        }
    }
    Err(format!("no endpoints available for service {name:?}"))
}
