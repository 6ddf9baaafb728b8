//! The endpoints of the `default/kubernetes` Service, as upstream's master endpoint reconciler
//! (`pkg/controlplane/reconcilers`) writes them: an Endpoints object labelled
//! `endpointslice.kubernetes.io/skip-mirror: "true"` with one subset (the server's address and
//! its `https` port) and an EndpointSlice of the same name labelled
//! `kubernetes.io/service-name: kubernetes` with one ready endpoint. Clients that look up the
//! API server through its Service (in-cluster discovery tools, network policies, service
//! meshes) find it as on a real cluster.
//!
//! Upstream advertises the host's address; endpoints may not be loopback addresses (they are
//! refused by validation). A server bound to a loopback or unspecified address is therefore
//! advertised at the simulated node's address, as a single-node cluster (kind, minikube)
//! advertises its control-plane node's; one bound to another address is advertised there.
//!
//! Run at start: missing objects are created; addresses, ports and labels that differ (a
//! durable server restarted on another port) are reset, other fields are kept, and a settled
//! restart writes nothing.

use std::net::IpAddr;

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::objects::{Objects, Part, WriteOptions};

/// The Service's namespace and name.
const NAMESPACE: &str = "default";
const NAME: &str = "kubernetes";

/// Brings the Endpoints and the EndpointSlice of `default/kubernetes` to the server's bind
/// address `ip` (see [`advertised`]) and `port`.
pub(crate) async fn reconcile(objects: &Objects, ip: IpAddr, port: u16) -> Result<(), ApiError> {
    let ip = advertised(ip);
    let address_type = if ip.is_ipv4() { "IPv4" } else { "IPv6" };
    let ip = ip.to_string();
    let endpoints_labels = json!({"endpointslice.kubernetes.io/skip-mirror": "true"});
    let subsets = json!([{
        "addresses": [{"ip": ip}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }]);
    ensure(
        objects,
        ("", "v1", "endpoints"),
        json!({"apiVersion": "v1", "kind": "Endpoints"}),
        &[
            ("metadata", "labels", endpoints_labels),
            ("", "subsets", subsets),
        ],
    )
    .await?;
    let slice_labels = json!({"kubernetes.io/service-name": NAME});
    ensure(
        objects,
        ("discovery.k8s.io", "v1", "endpointslices"),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice"}),
        &[
            ("metadata", "labels", slice_labels),
            ("", "addressType", json!(address_type)),
            (
                "",
                "endpoints",
                json!([{"addresses": [ip], "conditions": {"ready": true}}]),
            ),
            (
                "",
                "ports",
                json!([{"name": "https", "port": port, "protocol": "TCP"}]),
            ),
        ],
    )
    .await
}

/// The address advertised for a server bound to `ip`: the simulated node's for a loopback or
/// unspecified address (which endpoints may not hold), `ip` otherwise.
fn advertised(ip: IpAddr) -> IpAddr {
    if ip.is_loopback() || ip.is_unspecified() {
        crate::simulate::pods::NODE_IP.parse().unwrap_or(ip)
    } else {
        ip
    }
}

/// Creates `default/kubernetes` of the resource `(group, version, resource)` from `base` with
/// `fields` (each `(parent, name, value)`: `parent` empty for a top-level field), or updates
/// the stored one where one of `fields` differs.
async fn ensure(
    objects: &Objects,
    (group, version, resource): (&str, &str, &str),
    base: Value,
    fields: &[(&str, &str, Value)],
) -> Result<(), ApiError> {
    let Some(info) = objects.registry().get(group, version, resource) else {
        return Err(ApiError::internal(format!("{resource} are not registered")));
    };
    let set = |obj: &mut Value| {
        let mut changed = false;
        for (parent, name, value) in fields {
            let holder = if parent.is_empty() {
                Some(&mut *obj)
            } else {
                obj.get_mut(*parent)
            };
            if let Some(Value::Object(map)) = holder
                && map.get(*name) != Some(value)
            {
                map.insert((*name).to_string(), value.clone());
                changed = true;
            }
        }
        changed
    };
    match objects.get(&info, Some(NAMESPACE), NAME) {
        Ok(existing) => {
            let mut next = (*existing).clone();
            if !set(&mut next) {
                return Ok(());
            }
            objects
                .update(
                    &info,
                    Some(NAMESPACE),
                    NAME,
                    next,
                    Part::Main,
                    &WriteOptions::default(),
                )
                .await
                .map(|_| ())
        }
        Err(e) if e.code == 404 => {
            let mut obj = base;
            obj["metadata"] = json!({"name": NAME, "namespace": NAMESPACE});
            set(&mut obj);
            match objects
                .create(&info, Some(NAMESPACE), obj, &WriteOptions::default())
                .await
            {
                Ok(_) => Ok(()),
                Err(e) if e.code == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_unspecified_binds_are_advertised_at_the_node_address() {
        let ip = |s: &str| s.parse::<IpAddr>().expect("ip");
        for bound in ["127.0.0.1", "0.0.0.0", "::1", "::"] {
            assert_eq!(advertised(ip(bound)), ip("172.18.0.2"), "{bound}");
        }
        assert_eq!(advertised(ip("10.1.2.3")), ip("10.1.2.3"));
    }
}
