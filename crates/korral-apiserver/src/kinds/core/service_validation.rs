//! Upstream's Service validation (`ValidateService`, `ValidateServiceUpdate` in
//! `pkg/apis/core/validation`): types, ports, ExternalName, session affinity, traffic policies,
//! selector labels, and the cluster IP that may not change once set.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::error::Cause;
use crate::validation::enums::{self, Enum, Order};
use crate::validation::names::{
    dns1123_label, dns1123_subdomain, invalid_value, validate_labels, validate_qualified_name,
};
use crate::validation::network::{
    CIDR_MESSAGE, IP_MESSAGE, load_balancer_hostname, parse_cidr_sloppy, parse_ip_sloppy,
};
use crate::validation::ports::{port_num, port_num_or_name};

/// The Service types upstream supports.
const TYPES: &Enum = &enums::SERVICE_TYPE;
/// The protocols of a service port.
const PROTOCOLS: &Enum = &enums::PROTOCOL;
/// The session affinities.
const AFFINITIES: &Enum = &enums::SERVICE_AFFINITY;
/// The external traffic policies.
const EXTERNAL_TRAFFIC_POLICIES: &Enum = &enums::SERVICE_EXTERNAL_TRAFFIC_POLICY;
/// The internal traffic policies.
const INTERNAL_TRAFFIC_POLICIES: &Enum = &enums::SERVICE_INTERNAL_TRAFFIC_POLICY;
/// The longest ClientIP session affinity timeout (one day).
const MAX_CLIENT_IP_TIMEOUT: i64 = 86400;

/// A string field of `v` (empty when absent).
fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A `NotSupported` cause listing `supported`, sorted (upstream lists sets).
fn not_supported(field: &str, value: &Value, supported: &Enum) -> Cause {
    supported.not_supported(field, value, Order::Sorted)
}

/// The Service's type as defaulted (`ClusterIP` when absent).
pub(super) fn service_type(spec: &Value) -> &str {
    match str_at(spec, "type") {
        "" => "ClusterIP",
        t => t,
    }
}

/// Whether the Service is headless (`clusterIP: None`).
fn is_headless(spec: &Value) -> bool {
    str_at(spec, "clusterIP") == "None"
}

/// Upstream's `ValidateService` for the spec of a (defaulted) Service, but for its cluster IP
/// rules (`ValidateServiceClusterIPsRelatedFields`), which [`super::service_families`] checks
/// first, as upstream's allocator does.
pub(super) fn validate_service(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    let ty = service_type(spec);
    let ports: &[Value] = spec
        .get("ports")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let headless = is_headless(spec);

    if ty == "ExternalName" {
        let has_ips = spec
            .get("clusterIPs")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
            || !str_at(spec, "clusterIP").is_empty();
        if has_ips {
            errs.push(Cause::forbidden(
                "spec.clusterIPs",
                "may not be set for ExternalName services",
            ));
        }
        let cname = str_at(spec, "externalName");
        let cname = cname.strip_suffix('.').unwrap_or(cname);
        if cname.is_empty() {
            errs.push(Cause::required("spec.externalName", ""));
        } else {
            errs.extend(
                dns1123_subdomain(cname)
                    .iter()
                    .map(|m| invalid_value("spec.externalName", &json!(cname), m)),
            );
        }
    }

    if ty == "ExternalName" {
        for field in ["ipFamilies", "ipFamilyPolicy"] {
            let set = match spec.get(field) {
                Some(Value::Array(a)) => !a.is_empty(),
                Some(v) => !v.is_null(),
                None => false,
            };
            if set {
                errs.push(Cause::forbidden(
                    format!("spec.{field}"),
                    "may not be set for ExternalName services",
                ));
            }
        }
    }
    for (i, ip) in spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if parse_ip_sloppy(ip.as_str().unwrap_or("")).is_none() {
            errs.push(invalid_value(
                &format!("spec.externalIPs[{i}]"),
                ip,
                IP_MESSAGE,
            ));
        }
    }

    if ports.is_empty() && !headless && ty != "ExternalName" {
        errs.push(Cause::required("spec.ports", ""));
    }
    if matches!(ty, "NodePort" | "LoadBalancer") && headless {
        errs.push(invalid_value(
            "spec.clusterIPs[0]",
            &json!("None"),
            &format!("may not be set to 'None' for {ty} services"),
        ));
    }

    let require_name = ports.len() > 1;
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        errs.extend(validate_port(
            port,
            require_name,
            &mut names,
            &format!("spec.ports[{i}]"),
        ));
    }

    if let Some(selector) = spec.get("selector").filter(|s| !s.is_null()) {
        errs.extend(validate_labels(selector, "spec.selector"));
    }

    if let Some(affinity) = spec.get("sessionAffinity") {
        let a = affinity.as_str().unwrap_or("");
        if a.is_empty() {
            errs.push(Cause::required("spec.sessionAffinity", ""));
        } else if !AFFINITIES.contains(a) {
            errs.push(not_supported("spec.sessionAffinity", affinity, AFFINITIES));
        } else if a == "ClientIP" {
            let timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"));
            if let Some(t) = timeout
                && !t
                    .as_i64()
                    .is_some_and(|t| t > 0 && t <= MAX_CLIENT_IP_TIMEOUT)
            {
                errs.push(invalid_value(
                    "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
                    t,
                    &format!("must be greater than 0 and less than {MAX_CLIENT_IP_TIMEOUT}"),
                ));
            }
        } else if spec
            .get("sessionAffinityConfig")
            .is_some_and(|c| !c.is_null())
        {
            errs.push(Cause::forbidden(
                "spec.sessionAffinityConfig",
                "must not be set when session affinity is None",
            ));
        }
    }

    match spec.get("type") {
        Some(t) if !TYPES.contains(t.as_str().unwrap_or("")) => {
            if t.as_str().is_some_and(str::is_empty) {
                errs.push(Cause::required("spec.type", ""));
            } else {
                errs.push(not_supported("spec.type", t, TYPES));
            }
        }
        _ => {}
    }

    if matches!(ty, "ClusterIP" | "ExternalName") {
        for (i, port) in ports.iter().enumerate() {
            if port.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                errs.push(Cause::forbidden(
                    format!("spec.ports[{i}].nodePort"),
                    &format!("may not be used when `type` is '{ty}'"),
                ));
            }
        }
    }

    // A (protocol, port) pair and a (protocol, node port) pair may each appear once.
    let mut pairs = HashSet::new();
    let mut node_pairs = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let protocol = str_at(port, "protocol");
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !pairs.insert((number, protocol.to_string())) {
            errs.push(duplicate_port(i, protocol, number, 0));
        }
        let np = port.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
        if np != 0 && !node_pairs.insert((np, protocol.to_string())) {
            errs.push(duplicate_port(i, protocol, 0, np));
        }
    }

    errs.extend(traffic_policies(spec, ty));
    errs.extend(load_balancer_fields(obj, spec, ty));
    // `ValidateServiceClusterIPsRelatedFields` ran already: the strategy answers the
    // allocator's refusals (which start with it) before it validates.
    errs
}

/// The annotation older clients set instead of `spec.loadBalancerSourceRanges`.
const SOURCE_RANGES_ANNOTATION: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";

/// Upstream's rules for `loadBalancerSourceRanges` (and their annotation) and
/// `loadBalancerClass`: LoadBalancer Services only, CIDRs (space padding allowed), a qualified
/// class name.
fn load_balancer_fields(obj: &Value, spec: &Value, ty: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let ranges: Vec<&Value> = spec
        .get("loadBalancerSourceRanges")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let annotation = crate::meta::path(obj, "metadata.annotations")
        .and_then(|a| a.get(SOURCE_RANGES_ANNOTATION))
        .and_then(Value::as_str);
    if !ranges.is_empty() || annotation.is_some_and(|a| !a.is_empty()) {
        if ty != "LoadBalancer" {
            errs.push(Cause::forbidden(
                "spec.loadBalancerSourceRanges",
                "may only be used when `type` is 'LoadBalancer'",
            ));
        }
        for (i, range) in ranges.iter().enumerate() {
            let value = range.as_str().unwrap_or("").trim();
            if parse_cidr_sloppy(value).is_none() {
                errs.push(invalid_value(
                    &format!("spec.loadBalancerSourceRanges[{i}]"),
                    &json!(value),
                    CIDR_MESSAGE,
                ));
            }
        }
        if let Some(value) = annotation {
            let well_formed = value
                .trim()
                .split(',')
                .all(|r| parse_cidr_sloppy(r.trim()).is_some());
            if !well_formed {
                errs.push(invalid_value(
                    &format!("metadata.annotations[{SOURCE_RANGES_ANNOTATION}]"),
                    &json!(value),
                    "must be a comma separated list of CIDRs",
                ));
            }
        }
    }
    if let Some(class) = spec.get("loadBalancerClass").and_then(Value::as_str) {
        if ty != "LoadBalancer" {
            errs.push(Cause::forbidden(
                "spec.loadBalancerClass",
                "may only be used when `type` is 'LoadBalancer'",
            ));
        } else {
            errs.extend(
                validate_qualified_name(class)
                    .iter()
                    .map(|m| invalid_value("spec.loadBalancerClass", &json!(class), m)),
            );
        }
    }
    errs
}

/// `ValidateLoadBalancerStatus` for a write through `services/status`: ingress points only on
/// LoadBalancer Services, valid IPs with a supported `ipMode`, host names that are DNS names.
pub(super) fn validate_load_balancer_status(obj: &Value) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let ingress: &[Value] = crate::meta::path(obj, "status.loadBalancer.ingress")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let path = "status.loadBalancer.ingress";
    if service_type(spec) != "LoadBalancer" && !ingress.is_empty() {
        return vec![Cause::forbidden(
            path,
            "may only be used when `spec.type` is 'LoadBalancer'",
        )];
    }
    let mut errs = Vec::new();
    for (i, point) in ingress.iter().enumerate() {
        let at = format!("{path}[{i}]");
        let ip = str_at(point, "ip");
        if !ip.is_empty() && parse_ip_sloppy(ip).is_none() {
            errs.push(invalid_value(&format!("{at}.ip"), &json!(ip), IP_MESSAGE));
        }
        match point.get("ipMode").filter(|m| !m.is_null()) {
            Some(_) if ip.is_empty() => errs.push(Cause::forbidden(
                format!("{at}.ipMode"),
                "must not be specified when `ip` is not",
            )),
            Some(mode) if !matches!(mode.as_str(), Some("Proxy" | "VIP")) => {
                errs.push(Cause::not_supported(
                    format!("{at}.ipMode"),
                    mode,
                    &[json!("Proxy"), json!("VIP")],
                ))
            }
            None if !ip.is_empty() => errs.push(Cause::required(
                format!("{at}.ipMode"),
                "must be specified when `ip` is set",
            )),
            _ => {}
        }
        let hostname = str_at(point, "hostname");
        if !hostname.is_empty() {
            errs.extend(
                load_balancer_hostname(hostname)
                    .iter()
                    .map(|m| invalid_value(&format!("{at}.hostname"), &json!(hostname), m)),
            );
        }
    }
    errs
}

/// Upstream's default `ipMode` (`VIP`) of a load balancer ingress point with an IP.
pub(super) fn default_ingress_ip_mode(obj: &mut Value) {
    let Some(ingress) = obj
        .pointer_mut("/status/loadBalancer/ingress")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for point in ingress.iter_mut().filter_map(Value::as_object_mut) {
        let has_ip = point
            .get("ip")
            .and_then(Value::as_str)
            .is_some_and(|ip| !ip.is_empty());
        if has_ip && point.get("ipMode").is_none_or(Value::is_null) {
            point.insert("ipMode".into(), json!("VIP"));
        }
    }
}

/// Upstream's `Duplicate` on `spec.ports[i]`, its value the Go `core.ServicePort` key holding
/// only a protocol and a port or node port (rendered with `%#v`).
fn duplicate_port(i: usize, protocol: &str, port: i64, node_port: i64) -> Cause {
    Cause::new(
        "FieldValueDuplicate",
        format!("spec.ports[{i}]"),
        format!(
            "Duplicate value: core.ServicePort{{Name:\"\", Protocol:{protocol:?}, AppProtocol:(*string)(nil), Port:{port}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:{node_port}}}"
        ),
    )
}

/// Upstream's `validateServicePort`.
fn validate_port(
    port: &Value,
    require_name: bool,
    names: &mut HashSet<String>,
    path: &str,
) -> Vec<Cause> {
    let mut errs = Vec::new();
    let name = str_at(port, "name");
    let name_path = format!("{path}.name");
    if require_name && name.is_empty() {
        errs.push(Cause::required(name_path, ""));
    } else if !name.is_empty() {
        errs.extend(
            dns1123_label(name)
                .iter()
                .map(|m| invalid_value(&name_path, &json!(name), m)),
        );
        if !names.insert(name.to_string()) {
            errs.push(Cause::duplicate(name_path, &json!(name)));
        }
    }
    let number = port.get("port").cloned().unwrap_or(json!(0));
    errs.extend(
        port_num(number.as_i64().unwrap_or(0))
            .iter()
            .map(|m| invalid_value(&format!("{path}.port"), &number, m)),
    );
    match port.get("protocol") {
        None => errs.push(Cause::required(format!("{path}.protocol"), "")),
        Some(p) if p.as_str().is_some_and(str::is_empty) => {
            errs.push(Cause::required(format!("{path}.protocol"), ""));
        }
        Some(p) if !PROTOCOLS.contains(p.as_str().unwrap_or("")) => {
            errs.push(not_supported(&format!("{path}.protocol"), p, PROTOCOLS));
        }
        Some(_) => {}
    }
    if let Some(target) = port.get("targetPort").filter(|t| !t.is_null()) {
        errs.extend(port_num_or_name(target, &format!("{path}.targetPort")));
    }
    if let Some(app) = port.get("appProtocol").and_then(Value::as_str) {
        let app_path = format!("{path}.appProtocol");
        errs.extend(
            validate_qualified_name(app)
                .iter()
                .map(|m| invalid_value(&app_path, &json!(app), m)),
        );
    }
    errs
}

/// Upstream's `validateServiceExternalTrafficPolicy` and `validateServiceInternalTrafficPolicy`.
fn traffic_policies(spec: &Value, ty: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let external = matches!(ty, "NodePort" | "LoadBalancer") || has_external_ips;
    let etp = spec.get("externalTrafficPolicy").filter(|v| !v.is_null());
    match etp {
        Some(p) if !external && p.as_str().is_some_and(|s| !s.is_empty()) => {
            errs.push(invalid_value(
                "spec.externalTrafficPolicy",
                p,
                "may only be set for externally-accessible services",
            ));
        }
        Some(p) if external && !EXTERNAL_TRAFFIC_POLICIES.contains(p.as_str().unwrap_or("")) => {
            errs.push(not_supported(
                "spec.externalTrafficPolicy",
                p,
                EXTERNAL_TRAFFIC_POLICIES,
            ));
        }
        None if external => errs.push(Cause::required("spec.externalTrafficPolicy", "")),
        _ => {}
    }
    if let Some(hc) = spec.get("healthCheckNodePort").and_then(Value::as_i64)
        && hc != 0
    {
        let local = ty == "LoadBalancer" && etp.and_then(Value::as_str) == Some("Local");
        if !local {
            errs.push(invalid_value(
                "spec.healthCheckNodePort",
                &json!(hc),
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    }
    if ty != "ExternalName"
        && let Some(p) = spec.get("internalTrafficPolicy").filter(|v| !v.is_null())
        && !INTERNAL_TRAFFIC_POLICIES.contains(p.as_str().unwrap_or(""))
    {
        errs.push(not_supported(
            "spec.internalTrafficPolicy",
            p,
            INTERNAL_TRAFFIC_POLICIES,
        ));
    }
    errs
}

/// Whether a Service holds a cluster IP (any type but ExternalName, not headless).
fn needs_cluster_ip(spec: &Value) -> bool {
    service_type(spec) != "ExternalName"
}

/// Upstream's `normalizeClusterIPs` on update: a client that changed `clusterIP` but sent the
/// old `clusterIPs` (or none) gets `clusterIPs[0]` following `clusterIP`, so the change is judged
/// on the list.
pub(super) fn normalize_cluster_ips(obj: &mut Value, old: &Value) {
    let Some(old_spec) = old.get("spec") else {
        return;
    };
    let old_ip = str_at(old_spec, "clusterIP").to_string();
    let old_ips = old_spec.get("clusterIPs").cloned();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let new_ip = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if new_ip.is_empty() || new_ip == old_ip {
        return;
    }
    let ips = spec.get("clusterIPs").filter(|v| !v.is_null()).cloned();
    let same_as_old = ips.is_none() || ips == old_ips;
    if same_as_old {
        let mut list = ips.and_then(|v| v.as_array().cloned()).unwrap_or_default();
        if list.is_empty() {
            list.push(json!(new_ip));
        } else {
            list[0] = json!(new_ip);
        }
        spec.insert("clusterIPs".into(), Value::Array(list));
    }
}

/// Whether a Service of this spec holds node ports (upstream's `needsNodePort`).
fn needs_node_port(spec: &Value) -> bool {
    matches!(service_type(spec), "NodePort" | "LoadBalancer")
}

/// Whether a Service of this spec holds a health check node port.
fn needs_health_check_port(spec: &Value) -> bool {
    service_type(spec) == "LoadBalancer" && str_at(spec, "externalTrafficPolicy") == "Local"
}

/// Whether a Service of this spec is reachable from outside the cluster.
fn externally_accessible(spec: &Value) -> bool {
    needs_node_port(spec)
        || (service_type(spec) == "ClusterIP"
            && spec
                .get("externalIPs")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()))
}

/// The node ports of the ports of a spec, in order.
fn node_ports(spec: &Value) -> Vec<i64> {
    spec.get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0))
        .collect()
}

/// Upstream's `dropTypeDependentFields` on update: a Service switching to a type that no longer
/// needs its cluster IPs, node ports, health check port, load balancer settings or external
/// traffic policy loses the ones the client did not change (they were allocated or defaulted).
pub(super) fn drop_type_dependent_fields(obj: &mut Value, old: &Value) {
    let Some(old_spec) = old.get("spec") else {
        return;
    };
    let Some(spec) = obj.get_mut("spec") else {
        return;
    };
    let same = |spec: &Value, key: &str| {
        spec.get(key).filter(|v| !v.is_null()) == old_spec.get(key).filter(|v| !v.is_null())
    };
    let mut drop = Vec::new();
    if needs_cluster_ip(old_spec) && !needs_cluster_ip(spec) {
        if same(spec, "clusterIP") && same(spec, "clusterIPs") {
            drop.extend(["clusterIP", "clusterIPs"]);
        }
        if same(spec, "ipFamilies") {
            drop.push("ipFamilies");
        }
        if same(spec, "ipFamilyPolicy") {
            drop.push("ipFamilyPolicy");
        }
    }
    if needs_health_check_port(old_spec)
        && !needs_health_check_port(spec)
        && same(spec, "healthCheckNodePort")
    {
        drop.push("healthCheckNodePort");
    }
    if service_type(old_spec) == "LoadBalancer" && service_type(spec) != "LoadBalancer" {
        if same(spec, "allocateLoadBalancerNodePorts") {
            drop.push("allocateLoadBalancerNodePorts");
        }
        if same(spec, "loadBalancerClass") {
            drop.push("loadBalancerClass");
        }
    }
    if externally_accessible(old_spec)
        && !externally_accessible(spec)
        && same(spec, "externalTrafficPolicy")
    {
        drop.push("externalTrafficPolicy");
    }
    let wipe_node_ports = needs_node_port(old_spec)
        && !needs_node_port(spec)
        && node_ports(spec) == node_ports(old_spec);
    let Some(map) = spec.as_object_mut() else {
        return;
    };
    for key in drop {
        map.remove(key);
    }
    if wipe_node_ports {
        for port in map
            .get_mut("ports")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(port) = port.as_object_mut() {
                port.remove("nodePort");
            }
        }
    }
}

/// Upstream's `ValidateServiceUpdate` beyond `ValidateService`: the cluster IPs of a Service
/// that keeps needing them may not change (an empty update carries the old ones over).
pub(super) fn validate_service_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = validate_service(obj);
    let (spec, old_spec) = (
        obj.get("spec").unwrap_or(&Value::Null),
        old.get("spec").unwrap_or(&Value::Null),
    );
    if !(needs_cluster_ip(spec) && needs_cluster_ip(old_spec)) {
        return errs;
    }
    let old_ips = old_spec.get("clusterIPs").and_then(Value::as_array);
    let new_ips = spec.get("clusterIPs").and_then(Value::as_array);
    if let (Some(old_ips), Some(new_ips)) = (old_ips, new_ips)
        && !old_ips.is_empty()
        && !new_ips.is_empty()
        && old_ips.first() != new_ips.first()
    {
        errs.push(invalid_value(
            "spec.clusterIPs[0]",
            &Value::Array(new_ips.clone()),
            "may not change once set",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(spec: Value) -> Value {
        let mut obj = json!({"metadata": {"name": "s"}, "spec": spec});
        crate::defaults::apply_builtin_defaults("", "Service", &mut obj);
        obj
    }

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    const SERVICE_PATHS: &[&str] = &[
        "spec",
        "spec.type",
        "spec.ports",
        "spec.selector",
        "spec.clusterIP",
        "spec.clusterIPs",
        "spec.externalIPs",
        "spec.externalName",
        "spec.sessionAffinity",
        "spec.sessionAffinityConfig",
        "spec.externalTrafficPolicy",
        "spec.internalTrafficPolicy",
        "spec.healthCheckNodePort",
        "spec.allocateLoadBalancerNodePorts",
    ];

    proptest::proptest! {
        #[test]
        fn arbitrary_services_never_panic(
            obj in crate::kinds::core::test_support::mutated(
                json!({"metadata": {"name": "s"}, "spec": {"type": "LoadBalancer",
                    "clusterIP": "10.0.0.1", "externalTrafficPolicy": "Local",
                    "ports": [{"port": 80, "nodePort": 30001, "protocol": "TCP"}]}}),
                SERVICE_PATHS,
            ),
            old in crate::kinds::core::test_support::mutated(
                json!({"spec": {"type": "NodePort", "clusterIP": "10.0.0.2",
                    "ports": [{"port": 80, "nodePort": 30002}]}}),
                SERVICE_PATHS,
            ),
        ) {
            let mut obj = obj;
            normalize_cluster_ips(&mut obj, &old);
            drop_type_dependent_fields(&mut obj, &old);
            crate::defaults::apply_builtin_defaults("", "Service", &mut obj);
            let _ = validate_service_update(&obj, &old);
            let _ = crate::kinds::core::service_nodeports::assign_node_ports(
                &mut obj,
                Some(&old),
                &std::collections::HashSet::from([30003]),
            );
        }
    }

    #[test]
    fn valid_services_pass() {
        let ok = svc(json!({"ports": [{"port": 80}], "selector": {"app": "web"}}));
        assert!(
            validate_service(&ok).is_empty(),
            "{:?}",
            validate_service(&ok)
        );
        let np = svc(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30001}]}));
        assert!(validate_service(&np).is_empty());
        let ext = svc(json!({"type": "ExternalName", "externalName": "example.com."}));
        assert!(validate_service(&ext).is_empty());
        let headless = svc(json!({"clusterIP": "None"}));
        assert!(validate_service(&headless).is_empty());
    }

    #[test]
    fn refusals_have_upstream_messages() {
        let cases = [
            (json!({}), "spec.ports: Required value"),
            (
                json!({"type": "ExternalName"}),
                "spec.externalName: Required value",
            ),
            (
                json!({"type": "Weird", "ports": [{"port": 1}]}),
                "spec.type: Unsupported value: \"Weird\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
            ),
            (
                json!({"ports": [{"port": 0, "targetPort": 80}]}),
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            ),
            (
                json!({"ports": [{"port": 80, "name": "a"}, {"port": 81}]}),
                "spec.ports[1].name: Required value",
            ),
            (
                json!({"ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "a"}]}),
                "spec.ports[1].name: Duplicate value: \"a\"",
            ),
            (
                json!({"ports": [{"port": 80, "protocol": "ICMP"}]}),
                "spec.ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            ),
            (
                json!({"ports": [{"port": 80, "nodePort": 30000}]}),
                "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
            ),
            (
                json!({"ports": [{"port": 80}], "clusterIP": "10.0.0.300"}),
                "spec.clusterIPs[0]: Invalid value: \"10.0.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ),
            (
                json!({"ports": [{"port": 80}], "externalIPs": ["x"]}),
                "spec.externalIPs[0]: Invalid value: \"x\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ),
            (
                json!({"ports": [{"port": 80}], "sessionAffinity": "Sticky"}),
                "spec.sessionAffinity: Unsupported value: \"Sticky\": supported values: \"ClientIP\", \"None\"",
            ),
            (
                json!({"ports": [{"port": 80}], "selector": {"app": "-x"}}),
                "spec.selector: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
        ];
        for (spec, want) in cases {
            let obj = svc(spec.clone());
            let mut got = messages(&super::super::service_families::allocation_refusals(
                &obj["spec"],
                None,
            ));
            got.extend(messages(&validate_service(&obj)));
            assert!(got.contains(&want.to_string()), "{spec}: {got:?}");
        }
    }

    #[test]
    fn cluster_ip_may_not_change() {
        let old = svc(json!({"ports": [{"port": 80}], "clusterIP": "10.0.0.1"}));
        let mut new = old.clone();
        new["spec"]["clusterIP"] = json!("10.0.0.99");
        normalize_cluster_ips(&mut new, &old);
        assert_eq!(
            messages(&validate_service_update(&new, &old)),
            ["spec.clusterIPs[0]: Invalid value: [\"10.0.0.99\"]: may not change once set"]
        );
        assert!(validate_service_update(&old, &old).is_empty());
    }

    #[test]
    fn duplicate_ports_name_the_go_key() {
        let dup = svc(json!({"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 80}]}));
        assert_eq!(
            messages(&validate_service(&dup)),
            [
                "spec.ports[1]: Duplicate value: core.ServicePort{Name:\"\", Protocol:\"TCP\", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}"
            ]
        );
    }

    #[test]
    fn switching_type_drops_what_the_old_type_allocated() {
        let old = json!({"spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1",
            "clusterIPs": ["10.0.0.1"], "externalTrafficPolicy": "Cluster",
            "allocateLoadBalancerNodePorts": true, "ports": [{"port": 80, "nodePort": 30001}]}});
        let mut to_cluster_ip = old.clone();
        to_cluster_ip["spec"]["type"] = json!("ClusterIP");
        drop_type_dependent_fields(&mut to_cluster_ip, &old);
        assert_eq!(
            to_cluster_ip["spec"],
            json!({"type": "ClusterIP", "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"],
                "ports": [{"port": 80}]})
        );
        let mut to_external = old.clone();
        to_external["spec"]["type"] = json!("ExternalName");
        to_external["spec"]["externalName"] = json!("example.com");
        drop_type_dependent_fields(&mut to_external, &old);
        assert!(to_external["spec"].get("clusterIP").is_none());
        // A node port the client changed is kept (and refused by validation).
        let mut changed = old.clone();
        changed["spec"]["type"] = json!("ClusterIP");
        changed["spec"]["ports"][0]["nodePort"] = json!(30002);
        drop_type_dependent_fields(&mut changed, &old);
        assert_eq!(changed["spec"]["ports"][0]["nodePort"], 30002);
    }
}
