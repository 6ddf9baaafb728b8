//! NodePort allocation for Services of type NodePort and LoadBalancer (upstream's
//! `pkg/registry/core/service/portallocator`): a requested port must lie in the node port range
//! and be free; an unset one gets a random free port; an update keeps the ports it already had.
//!
//! The ports in use are computed from the stored Services (as cluster IPs are), so a deleted
//! Service releases its ports with nothing to record.

use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use serde_json::{Value, json};

use crate::error::Cause;
use crate::validation::names::invalid_value;

/// The first port of the default node port range (`--service-node-port-range`).
pub(super) const FIRST: i64 = 30000;
/// The last port of the default node port range.
pub(super) const LAST: i64 = 32767;

/// The node ports (and health check node ports) held by `services`.
pub(super) fn node_ports_in_use<'a>(services: impl IntoIterator<Item = &'a Value>) -> HashSet<i64> {
    let mut used = HashSet::new();
    for svc in services {
        let Some(spec) = svc.get("spec") else {
            continue;
        };
        for port in spec
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(np) = port
                .get("nodePort")
                .and_then(Value::as_i64)
                .filter(|p| *p != 0)
            {
                used.insert(np);
            }
        }
        if let Some(hc) = spec
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .filter(|p| *p != 0)
        {
            used.insert(hc);
        }
    }
    used
}

/// Whether a Service of this spec gets node ports.
fn needs_node_ports(spec: &Value) -> bool {
    match super::service_validation::service_type(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec
            .get("allocateLoadBalancerNodePorts")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        _ => false,
    }
}

/// Whether a Service of this spec gets a health check node port.
fn needs_health_check(spec: &Value) -> bool {
    super::service_validation::service_type(spec) == "LoadBalancer"
        && spec.get("externalTrafficPolicy").and_then(Value::as_str) == Some("Local")
}

/// The node ports of `old` (on update), by (port, protocol), and every one it held.
fn old_ports(old: Option<&Value>) -> (Vec<(i64, String, i64)>, HashSet<i64>) {
    let spec = old.and_then(|o| o.get("spec"));
    let mut by_port = Vec::new();
    let mut held = HashSet::new();
    for port in spec
        .and_then(|s| s.get("ports"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(np) = port
            .get("nodePort")
            .and_then(Value::as_i64)
            .filter(|p| *p != 0)
        {
            let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = port
                .get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("TCP")
                .to_string();
            by_port.push((number, protocol, np));
            held.insert(np);
        }
    }
    if let Some(hc) = spec
        .and_then(|s| s.get("healthCheckNodePort"))
        .and_then(Value::as_i64)
        .filter(|p| *p != 0)
    {
        held.insert(hc);
    }
    (by_port, held)
}

/// A free port of the range, starting the search at a random place; `None` when full.
fn random_free(used: &HashSet<i64>) -> Option<i64> {
    let size = LAST - FIRST + 1;
    let seed = RandomState::new().hash_one(used.len());
    let start = i64::try_from(seed % u64::try_from(size).unwrap_or(1)).unwrap_or(0);
    (0..size)
        .map(|i| FIRST + (start + i) % size)
        .find(|p| !used.contains(p))
}

/// Checks a requested node port at `field`: in range and not held by another Service.
fn check_requested(port: i64, used: &HashSet<i64>, field: &str) -> Option<Cause> {
    if !(FIRST..=LAST).contains(&port) {
        return Some(invalid_value(
            field,
            &json!(port),
            &format!(
                "provided port is not in the valid range. The range of valid ports is {FIRST}-{LAST}"
            ),
        ));
    }
    used.contains(&port)
        .then(|| invalid_value(field, &json!(port), "provided port is already allocated"))
}

/// Why node ports could not be assigned.
#[derive(Debug)]
pub(super) enum NodePortError {
    /// A requested port is out of range or taken (422 with these causes).
    Invalid(Vec<Cause>),
    /// The range has no free port left.
    RangeFull,
}

/// Fills and checks the node ports of `service` (defaulted and valid), given those other
/// Services hold (`in_use`) and, on update, the stored object.
pub(super) fn assign_node_ports(
    service: &mut Value,
    old: Option<&Value>,
    in_use: &HashSet<i64>,
) -> Result<(), NodePortError> {
    let (old_by_port, old_held) = old_ports(old);
    let Some(spec) = service.get_mut("spec") else {
        return Ok(());
    };
    if !needs_node_ports(spec) && !needs_health_check(spec) {
        return Ok(());
    }
    let mut used = in_use.clone();
    let mut causes = Vec::new();
    let allocate_ports = needs_node_ports(spec);
    let ports = spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .map(|a| a.as_mut_slice())
        .unwrap_or_default();
    // Requested ports first, so a random pick never takes one asked for later in the list.
    let mut taken_here = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let np = port.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if np == 0 {
            continue;
        }
        if !old_held.contains(&np) && !taken_here.contains(&np) {
            causes.extend(check_requested(
                np,
                &used,
                &format!("spec.ports[{i}].nodePort"),
            ));
        }
        taken_here.insert(np);
    }
    used.extend(taken_here.iter().copied());
    if allocate_ports {
        for port in ports.iter_mut() {
            if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                continue;
            }
            let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = port
                .get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("TCP");
            let kept = old_by_port
                .iter()
                .find(|(n, p, np)| *n == number && p == protocol && !used.contains(np))
                .map(|(_, _, np)| *np);
            let np = match kept {
                Some(np) => np,
                None => random_free(&used).ok_or(NodePortError::RangeFull)?,
            };
            used.insert(np);
            if let Some(map) = port.as_object_mut() {
                map.insert("nodePort".into(), json!(np));
            }
        }
    }
    if needs_health_check(spec) {
        let hc = spec
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if hc != 0 {
            if !old_held.contains(&hc) {
                causes.extend(check_requested(hc, &used, "spec.healthCheckNodePort"));
            }
        } else {
            let old_hc = old
                .and_then(|o| o.get("spec"))
                .and_then(|s| s.get("healthCheckNodePort"))
                .and_then(Value::as_i64)
                .filter(|p| *p != 0 && !used.contains(p));
            let hc = match old_hc {
                Some(p) => p,
                None => random_free(&used).ok_or(NodePortError::RangeFull)?,
            };
            if let Some(map) = spec.as_object_mut() {
                map.insert("healthCheckNodePort".into(), json!(hc));
            }
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(NodePortError::Invalid(causes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn np_service(ports: Value) -> Value {
        json!({"spec": {"type": "NodePort", "ports": ports, "externalTrafficPolicy": "Cluster"}})
    }

    #[test]
    fn unset_ports_get_free_ones_in_range() {
        let mut svc =
            np_service(json!([{"port": 80, "protocol": "TCP"}, {"port": 81, "protocol": "TCP"}]));
        let used: HashSet<i64> = (FIRST..LAST).collect();
        // Only LAST is free: the first port gets it, the second finds the range full.
        assert!(matches!(
            assign_node_ports(&mut svc, None, &used),
            Err(NodePortError::RangeFull)
        ));
        let mut svc = np_service(json!([{"port": 80, "protocol": "TCP"}]));
        assign_node_ports(&mut svc, None, &used).expect("ok");
        assert_eq!(svc["spec"]["ports"][0]["nodePort"], json!(LAST));
        let mut svc = np_service(json!([{"port": 80, "protocol": "TCP"}]));
        assign_node_ports(&mut svc, None, &HashSet::new()).expect("ok");
        let np = svc["spec"]["ports"][0]["nodePort"].as_i64().expect("ok");
        assert!((FIRST..=LAST).contains(&np));
    }

    #[test]
    fn requested_ports_are_checked() {
        let mut svc = np_service(json!([{"port": 80, "protocol": "TCP", "nodePort": 20000}]));
        let Err(NodePortError::Invalid(c)) = assign_node_ports(&mut svc, None, &HashSet::new())
        else {
            panic!("accepted")
        };
        assert_eq!(
            c[0].summary(),
            "spec.ports[0].nodePort: Invalid value: 20000: provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
        let used = HashSet::from([32503]);
        let mut svc = np_service(json!([{"port": 80, "protocol": "TCP", "nodePort": 32503}]));
        let Err(NodePortError::Invalid(c)) = assign_node_ports(&mut svc, None, &used) else {
            panic!("accepted")
        };
        assert_eq!(
            c[0].summary(),
            "spec.ports[0].nodePort: Invalid value: 32503: provided port is already allocated"
        );
    }

    #[test]
    fn updates_keep_their_ports() {
        let old = np_service(json!([{"port": 80, "protocol": "TCP", "nodePort": 30080}]));
        let mut new = np_service(json!([{"port": 80, "protocol": "TCP"}]));
        assign_node_ports(&mut new, Some(&old), &HashSet::new()).expect("ok");
        assert_eq!(new["spec"]["ports"][0]["nodePort"], json!(30080));
        let mut same = old.clone();
        assign_node_ports(&mut same, Some(&old), &HashSet::new()).expect("ok");
    }

    #[test]
    fn local_load_balancers_get_a_health_check_port() {
        let mut svc = json!({"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
            "ports": [{"port": 80, "protocol": "TCP"}]}});
        assign_node_ports(&mut svc, None, &HashSet::new()).expect("ok");
        let hc = svc["spec"]["healthCheckNodePort"].as_i64().expect("ok");
        assert_ne!(
            hc,
            svc["spec"]["ports"][0]["nodePort"].as_i64().expect("ok")
        );
    }
}
