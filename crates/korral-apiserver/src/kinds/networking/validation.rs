//! Upstream's `pkg/apis/networking/validation` rules for Ingresses, IngressClasses,
//! NetworkPolicies, IPAddresses and ServiceCIDRs, on create and update.

use serde_json::{Value, json};

use crate::error::Cause;
use crate::kinds::workload::immutable;
use crate::validation::enums::{self, Order};
use crate::validation::names::{
    child, dns1035_label, dns1123_label, dns1123_subdomain, domain_prefixed_path, go_quote, index,
    invalid_rendered, invalid_value, path_segment_name, too_long,
};
use crate::validation::network;
use crate::validation::ports::{port_name, port_num};
use crate::validation::selectors::validate_label_selector;

use super::INGRESS_CLASS_ANNOTATION;

/// Path sequences an `Exact`/`Prefix` path may not contain.
const INVALID_PATH_SEQUENCES: [&str; 5] = ["//", "/./", "/../", "%2f", "%2F"];

/// Suffixes an `Exact`/`Prefix` path may not end with.
const INVALID_PATH_SUFFIXES: [&str; 2] = ["/..", "/."];

/// The longest IngressClass controller.
const MAX_CONTROLLER_LENGTH: usize = 250;

/// The value at `field` of `obj` unless absent or `null`.
pub(super) fn set<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get(field).filter(|v| !v.is_null())
}

/// The array at `field` of `obj`, empty when absent.
pub(super) fn list<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    obj.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The string at `field` of `obj`, empty when absent.
pub(super) fn string<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// One `FieldValueInvalid` cause per message about the string `value` at `path`.
fn invalid_each(path: &str, value: &str, msgs: Vec<String>) -> impl Iterator<Item = Cause> {
    let path = path.to_string();
    let rendered = go_quote(value);
    msgs.into_iter()
        .map(move |msg| invalid_rendered(&path, &rendered, &msg))
}

// ---------------------------------------------------------------------------------------------
// Ingress
// ---------------------------------------------------------------------------------------------

/// `ValidateIngressCreate` (besides object metadata): the legacy class annotation agrees with
/// `ingressClassName`, then the spec.
pub(super) fn ingress_create(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let annotation = obj
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(INGRESS_CLASS_ANNOTATION))
        .and_then(Value::as_str);
    let class = obj
        .get("spec")
        .and_then(|s| s.get("ingressClassName"))
        .and_then(Value::as_str);
    if let (Some(annotation), Some(class)) = (annotation, class)
        && annotation != class
    {
        errs.push(invalid_value(
            &child("annotations", INGRESS_CLASS_ANNOTATION),
            &json!(annotation),
            "must match `ingressClassName` when both are specified",
        ));
    }
    errs.extend(ingress_spec(
        obj.get("spec").unwrap_or(&Value::Null),
        "spec",
    ));
    errs
}

/// `ValidateIngressSpec`.
pub(super) fn ingress_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let rules = list(spec, "rules");
    let default_backend = set(spec, "defaultBackend");
    if rules.is_empty() && default_backend.is_none() {
        errs.push(invalid_value(
            path,
            spec.get("rules").unwrap_or(&Value::Null),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(backend) = default_backend {
        errs.extend(ingress_backend(backend, &child(path, "defaultBackend")));
    }
    errs.extend(ingress_rules(rules, &child(path, "rules")));
    errs.extend(ingress_tls(list(spec, "tls"), &child(path, "tls")));
    if let Some(class) = spec.get("ingressClassName").and_then(Value::as_str) {
        errs.extend(invalid_each(
            &child(path, "ingressClassName"),
            class,
            dns1123_subdomain(class),
        ));
    }
    errs
}

/// A host of a rule or a TLS entry: a wildcard or plain DNS subdomain.
/// Upstream's `ValidateIngressStatusUpdate`: each load balancer ingress point's `ip` is an IP
/// address and its `hostname` a DNS name (the spec is the stored one).
pub(super) fn ingress_status(obj: &Value) -> Vec<Cause> {
    let points = crate::meta::path(obj, "status.loadBalancer.ingress")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut errs = Vec::new();
    for (i, point) in points.iter().enumerate() {
        let at = format!("status.loadBalancer.ingress[{i}]");
        let ip = string(point, "ip");
        if !ip.is_empty() && network::parse_ip_sloppy(ip).is_none() {
            errs.extend(invalid_each(
                &format!("{at}.ip"),
                ip,
                vec![network::IP_MESSAGE.to_string()],
            ));
        }
        let hostname = string(point, "hostname");
        if !hostname.is_empty() {
            errs.extend(invalid_each(
                &format!("{at}.hostname"),
                hostname,
                network::load_balancer_hostname(hostname),
            ));
        }
    }
    errs
}

fn host(host: &str, path: &str) -> Vec<Cause> {
    let msgs = if host.contains('*') {
        network::wildcard_dns1123_subdomain(host)
    } else {
        dns1123_subdomain(host)
    };
    invalid_each(path, host, msgs).collect()
}

/// `validateIngressRules`.
fn ingress_rules(rules: &[Value], path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let at = index(path, i);
        let name = string(rule, "host");
        if !name.is_empty() {
            if network::parse_ip_sloppy(name).is_some() {
                errs.push(invalid_value(
                    &child(&at, "host"),
                    &json!(name),
                    "must be a DNS name, not an IP address",
                ));
            }
            errs.extend(host(name, &child(&at, "host")));
        }
        if let Some(http) = set(rule, "http") {
            let http_path = child(&at, "http");
            let paths = list(http, "paths");
            if paths.is_empty() {
                errs.push(Cause::required(child(&http_path, "paths"), ""));
            }
            for (j, p) in paths.iter().enumerate() {
                errs.extend(http_path_rule(p, &index(&child(&http_path, "paths"), j)));
            }
        }
    }
    errs
}

/// `validateHTTPIngressPath`: `pathType` is required; `Exact`/`Prefix` paths are absolute and
/// free of `//`, `/./`, `/../`, encoded slashes and dot suffixes.
fn http_path_rule(p: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let Some(path_type) = set(p, "pathType") else {
        return vec![Cause::required(
            child(path, "pathType"),
            "pathType must be specified",
        )];
    };
    let value = string(p, "path");
    let value_path = child(path, "path");
    let absolute = || invalid_value(&value_path, &json!(value), "must be an absolute path");
    match path_type.as_str() {
        Some("Exact" | "Prefix") => {
            if !value.starts_with('/') {
                errs.push(absolute());
            }
            for seq in INVALID_PATH_SEQUENCES {
                if value.contains(seq) {
                    errs.push(invalid_value(
                        &value_path,
                        &json!(value),
                        &format!("must not contain '{seq}'"),
                    ));
                }
            }
            for suffix in INVALID_PATH_SUFFIXES {
                if value.ends_with(suffix) {
                    errs.push(invalid_value(
                        &value_path,
                        &json!(value),
                        &format!("cannot end with '{suffix}'"),
                    ));
                }
            }
        }
        Some("ImplementationSpecific") => {
            if !value.is_empty() && !value.starts_with('/') {
                errs.push(absolute());
            }
        }
        _ => errs.push(enums::PATH_TYPE.not_supported(
            child(path, "pathType"),
            path_type,
            Order::Sorted,
        )),
    }
    errs.extend(ingress_backend(
        p.get("backend").unwrap_or(&Value::Null),
        &child(path, "backend"),
    ));
    errs
}

/// `validateIngressBackend`: a service (name and port name or number) or a resource, not both.
fn ingress_backend(backend: &Value, path: &str) -> Vec<Cause> {
    let resource = set(backend, "resource");
    let service = set(backend, "service");
    match (resource, service) {
        (Some(_), Some(_)) => vec![invalid_value(
            path,
            &json!(""),
            "cannot set both resource and service backends",
        )],
        (Some(resource), None) => typed_local_reference(resource, &child(path, "resource")),
        (None, Some(service)) => {
            let mut errs = Vec::new();
            let name = string(service, "name");
            let name_path = child(path, "service.name");
            if name.is_empty() {
                errs.push(Cause::required(name_path, ""));
            } else {
                errs.extend(invalid_each(&name_path, name, dns1035_label(name)));
            }
            let port = service.get("port").unwrap_or(&Value::Null);
            let port_name_value = string(port, "name");
            let number = port.get("number").and_then(Value::as_i64).unwrap_or(0);
            match (!port_name_value.is_empty(), number != 0) {
                (true, true) => errs.push(invalid_value(
                    path,
                    &json!(""),
                    "cannot set both port name & port number",
                )),
                (true, false) => errs.extend(invalid_each(
                    &child(path, "service.port.name"),
                    port_name_value,
                    port_name(port_name_value),
                )),
                (false, true) => {
                    for msg in port_num(number) {
                        errs.push(invalid_value(
                            &child(path, "service.port.number"),
                            &json!(number),
                            &msg,
                        ));
                    }
                }
                (false, false) => {
                    errs.push(Cause::required(path, "port name or number is required"))
                }
            }
            errs
        }
        (None, None) => vec![invalid_value(
            path,
            &json!(""),
            "resource or service backend is required",
        )],
    }
}

/// `validateIngressTypedLocalObjectReference`: optional API group, required kind and name.
fn typed_local_reference(reference: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if let Some(group) = reference.get("apiGroup").and_then(Value::as_str) {
        errs.extend(invalid_each(
            &child(path, "apiGroup"),
            group,
            dns1123_subdomain(group),
        ));
    }
    for (field, missing) in [("kind", "kind is required"), ("name", "name is required")] {
        let value = string(reference, field);
        if value.is_empty() {
            errs.push(Cause::required(child(path, field), missing));
        } else {
            errs.extend(invalid_each(
                &child(path, field),
                value,
                path_segment_name(value),
            ));
        }
    }
    errs
}

/// `validateIngressTLS`: each host a (wildcard) DNS subdomain, the secret a Secret name.
fn ingress_tls(tls: &[Value], path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (i, entry) in tls.iter().enumerate() {
        let hosts_path = child(&index(path, i), "hosts");
        for (j, h) in list(entry, "hosts").iter().enumerate() {
            errs.extend(host(h.as_str().unwrap_or(""), &index(&hosts_path, j)));
        }
        let secret = string(entry, "secretName");
        if !secret.is_empty() {
            errs.extend(invalid_each(
                &child(&index(path, i), "secretName"),
                secret,
                dns1123_subdomain(secret),
            ));
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// IngressClass
// ---------------------------------------------------------------------------------------------

/// `validateIngressClassSpec`: a domain-prefixed controller of at most 250 characters and a
/// valid parameters reference.
pub(super) fn ingress_class_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let controller = string(spec, "controller");
    let controller_path = child(path, "controller");
    if controller.len() > MAX_CONTROLLER_LENGTH {
        errs.push(too_long(&controller_path, MAX_CONTROLLER_LENGTH as i64));
    }
    errs.extend(domain_prefixed_path(controller, &controller_path));
    if let Some(params) = set(spec, "parameters") {
        errs.extend(parameters_reference(params, &child(path, "parameters")));
    }
    errs
}

/// `validateIngressClassParametersReference`: the typed reference, and a scope of `Cluster`
/// (no namespace) or `Namespace` (with one).
fn parameters_reference(params: &Value, path: &str) -> Vec<Cause> {
    let mut errs = typed_local_reference(params, path);
    let namespace = set(params, "namespace");
    let Some(scope) = set(params, "scope") else {
        errs.push(Cause::required(child(path, "scope"), ""));
        return errs;
    };
    let scope_value = scope.as_str().unwrap_or("");
    match scope_value {
        "Namespace" => match namespace.and_then(Value::as_str) {
            None => errs.push(Cause::required(
                child(path, "namespace"),
                "`parameters.scope` is set to 'Namespace'",
            )),
            Some(ns) => errs.extend(invalid_each(
                &child(path, "namespace"),
                ns,
                dns1123_label(ns),
            )),
        },
        "Cluster" => {
            if namespace.is_some() {
                errs.push(Cause::forbidden(
                    child(path, "namespace"),
                    "`parameters.scope` is set to 'Cluster'",
                ));
            }
        }
        _ => errs.push(Cause::not_supported(
            child(path, "scope"),
            &json!(scope_value),
            &[json!("Cluster"), json!("Namespace")],
        )),
    }
    errs
}

/// `ValidateIngressClassUpdate`: the controller is immutable.
pub(super) fn ingress_class_update(spec: &Value, old_spec: &Value) -> Vec<Cause> {
    let mut errs: Vec<Cause> = immutable(spec, old_spec, "controller", "spec")
        .into_iter()
        .collect();
    errs.extend(ingress_class_spec(spec, "spec"));
    errs
}

// ---------------------------------------------------------------------------------------------
// NetworkPolicy
// ---------------------------------------------------------------------------------------------

/// `ValidateNetworkPolicySpec`: the pod selector, every rule's ports and peers, and at most two
/// known policy types.
pub(super) fn network_policy_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut errs = validate_label_selector(
        spec.get("podSelector").unwrap_or(&Value::Null),
        &child(path, "podSelector"),
    );
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (i, rule) in list(spec, direction).iter().enumerate() {
            let at = index(&child(path, direction), i);
            for (j, port) in list(rule, "ports").iter().enumerate() {
                errs.extend(network_policy_port(port, &index(&child(&at, "ports"), j)));
            }
            for (j, peer) in list(rule, peers).iter().enumerate() {
                errs.extend(network_policy_peer(peer, &index(&child(&at, peers), j)));
            }
        }
    }
    let types = list(spec, "policyTypes");
    let types_path = child(path, "policyTypes");
    if types.len() > 2 {
        errs.push(invalid_value(
            &types_path,
            &Value::Array(types.to_vec()),
            "may not specify more than two policyTypes",
        ));
        return errs;
    }
    for (i, t) in types.iter().enumerate() {
        if !t.as_str().is_some_and(|t| enums::POLICY_TYPE.contains(t)) {
            errs.push(enums::POLICY_TYPE.not_supported(index(&types_path, i), t, Order::Declared));
        }
    }
    errs
}

/// `ValidateNetworkPolicyPort`: protocol, port number or name, and an `endPort` only after a
/// numeric port it does not precede.
fn network_policy_port(port: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if let Some(protocol) = set(port, "protocol")
        && !protocol
            .as_str()
            .is_some_and(|p| enums::PROTOCOL.contains(p))
    {
        errs.push(enums::PROTOCOL.not_supported(
            child(path, "protocol"),
            protocol,
            Order::Declared,
        ));
    }
    let end_port = set(port, "endPort");
    let end_path = child(path, "endPort");
    match set(port, "port") {
        Some(Value::String(name)) => {
            if let Some(end) = end_port {
                errs.push(invalid_value(
                    &end_path,
                    end,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            errs.extend(invalid_each(&child(path, "port"), name, port_name(name)));
        }
        Some(number) => {
            let n = number.as_i64().unwrap_or(0);
            for msg in port_num(n) {
                errs.push(invalid_value(&child(path, "port"), &json!(n), &msg));
            }
            if let Some(end) = end_port {
                let e = end.as_i64().unwrap_or(0);
                if e < n {
                    errs.push(invalid_value(
                        &end_path,
                        &json!(n),
                        "must be greater than or equal to `port`",
                    ));
                }
                for msg in port_num(e) {
                    errs.push(invalid_value(&end_path, &json!(e), &msg));
                }
            }
        }
        None => {
            if let Some(end) = end_port {
                errs.push(invalid_value(
                    &end_path,
                    end,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
    errs
}

/// `ValidateNetworkPolicyPeer`: at least one of pod selector, namespace selector and IP
/// block; an IP block alone.
fn network_policy_peer(peer: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut peers = 0;
    for selector in ["podSelector", "namespaceSelector"] {
        if let Some(s) = set(peer, selector) {
            peers += 1;
            errs.extend(validate_label_selector(s, &child(path, selector)));
        }
    }
    let ip_block = set(peer, "ipBlock");
    if let Some(block) = ip_block {
        peers += 1;
        errs.extend(ip_block_rules(block, &child(path, "ipBlock")));
    }
    if peers == 0 {
        errs.push(Cause::required(path, "must specify a peer"));
    } else if peers > 1 && ip_block.is_some() {
        errs.push(Cause::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
    errs
}

/// `ValidateIPBlock`: a valid CIDR, and exceptions that are strict subsets of it.
fn ip_block_rules(block: &Value, path: &str) -> Vec<Cause> {
    let cidr = string(block, "cidr");
    let cidr_path = child(path, "cidr");
    if cidr.is_empty() {
        return vec![Cause::required(cidr_path, "")];
    }
    let mut errs: Vec<Cause> = invalid_each(&cidr_path, cidr, network::cidr(cidr)).collect();
    let Some(outer) = network::parse_cidr_sloppy(cidr) else {
        return errs;
    };
    for (i, except) in list(block, "except").iter().enumerate() {
        let except = except.as_str().unwrap_or("");
        let at = index(&child(path, "except"), i);
        errs.extend(invalid_each(&at, except, network::cidr(except)));
        let Some(inner) = network::parse_cidr_sloppy(except) else {
            continue;
        };
        if !network::strict_subset(outer, inner) {
            errs.push(invalid_value(
                &at,
                &json!(except),
                "must be a strict subset of `cidr`",
            ));
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// IPAddress and ServiceCIDR
// ---------------------------------------------------------------------------------------------

/// `ValidateIPAddress`: the name is an IP address in canonical form; the parent reference names
/// a resource and an object.
pub(super) fn ip_address(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let name = crate::meta::name(obj);
    match name.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.to_string() == name => {}
        Ok(ip) => errs.push(invalid_value(
            "metadata.name",
            &json!(name),
            &format!("must be in canonical form (\"{ip}\")"),
        )),
        Err(_) => errs.push(invalid_value(
            "metadata.name",
            &json!(name),
            network::IP_MESSAGE,
        )),
    }
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    match set(spec, "parentRef") {
        None => errs.push(Cause::required("spec.parentRef", "")),
        Some(parent) => {
            let group = string(parent, "group");
            if !group.is_empty() {
                errs.extend(invalid_each(
                    "spec.parentRef.group",
                    group,
                    dns1123_subdomain(group),
                ));
            }
            for field in ["resource", "name"] {
                let value = string(parent, field);
                let at = child("spec.parentRef", field);
                if value.is_empty() {
                    errs.push(Cause::required(at, ""));
                } else {
                    errs.extend(invalid_each(&at, value, path_segment_name(value)));
                }
            }
            let namespace = string(parent, "namespace");
            if !namespace.is_empty() {
                errs.extend(invalid_each(
                    "spec.parentRef.namespace",
                    namespace,
                    path_segment_name(namespace),
                ));
            }
        }
    }
    errs
}

/// `ValidateServiceCIDR`: one or two valid CIDRs, of different families when two.
pub(super) fn service_cidr(spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let cidrs = list(spec, "cidrs");
    let path = "spec.cidrs";
    if cidrs.is_empty() {
        errs.push(Cause::required(path, "at least one CIDR required"));
        return errs;
    }
    if cidrs.len() > 2 {
        errs.push(invalid_value(
            path,
            &Value::Array(cidrs.to_vec()),
            "may only hold up to 2 values",
        ));
        return errs;
    }
    let mut parsed = Vec::new();
    for (i, c) in cidrs.iter().enumerate() {
        let c = c.as_str().unwrap_or("");
        match network::parse_cidr_sloppy(c) {
            Some(p) => parsed.push(p),
            None => errs.push(invalid_value(
                &index(path, i),
                &json!(c),
                network::CIDR_MESSAGE,
            )),
        }
    }
    if let [a, b] = parsed.as_slice()
        && a.0.is_ipv4() == b.0.is_ipv4()
    {
        errs.push(invalid_value(
            path,
            &Value::Array(cidrs.to_vec()),
            "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(causes: &[Cause]) -> Vec<(&str, &str)> {
        causes
            .iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect()
    }

    fn service_backend() -> Value {
        json!({"service": {"name": "web", "port": {"number": 80}}})
    }

    #[test]
    fn ingress_paths_follow_their_type() {
        let spec = json!({"rules": [{"host": "foo.example.com", "http": {"paths": [
            {"path": "bar", "pathType": "Prefix", "backend": service_backend()},
            {"path": "/a//b", "pathType": "Exact", "backend": service_backend()},
            {"path": "/x", "backend": service_backend()},
            {"path": "rel", "pathType": "ImplementationSpecific", "backend": service_backend()},
            {"path": "/", "pathType": "Regex", "backend": service_backend()},
        ]}}]});
        let errs = ingress_spec(&spec, "spec");
        assert_eq!(
            fields(&errs),
            vec![
                (
                    "spec.rules[0].http.paths[0].path",
                    "Invalid value: \"bar\": must be an absolute path"
                ),
                (
                    "spec.rules[0].http.paths[1].path",
                    "Invalid value: \"/a//b\": must not contain '//'"
                ),
                (
                    "spec.rules[0].http.paths[2].pathType",
                    "Required value: pathType must be specified"
                ),
                (
                    "spec.rules[0].http.paths[3].path",
                    "Invalid value: \"rel\": must be an absolute path"
                ),
                (
                    "spec.rules[0].http.paths[4].pathType",
                    "Unsupported value: \"Regex\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\""
                ),
            ]
        );
    }

    #[test]
    fn ingress_backends_and_hosts() {
        let spec = json!({
            "defaultBackend": {"service": {"name": "Web", "port": {"name": "http", "number": 80}}},
            "rules": [
                {"host": "10.0.0.1"},
                {"host": "*.example.com", "http": {"paths": [
                    {"path": "/", "pathType": "Prefix", "backend": {}},
                    {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {}}}},
                    {"path": "/", "pathType": "Prefix", "backend": {"resource": {"kind": "Bucket"}}},
                ]}},
            ],
            "tls": [{"hosts": ["Bad_Host"], "secretName": "Bad_Secret"}],
            "ingressClassName": "Nginx",
        });
        let errs = ingress_spec(&spec, "spec");
        let got: Vec<&str> = errs.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            got,
            vec![
                "spec.defaultBackend.service.name",
                "spec.defaultBackend",
                "spec.rules[0].host",
                "spec.rules[1].http.paths[0].backend",
                "spec.rules[1].http.paths[1].backend",
                "spec.rules[1].http.paths[2].backend.resource.name",
                "spec.tls[0].hosts[0]",
                "spec.tls[0].secretName",
                "spec.ingressClassName",
            ]
        );
        assert_eq!(
            errs[1].message,
            "Invalid value: \"\": cannot set both port name & port number"
        );
        assert_eq!(
            errs[4].message,
            "Required value: port name or number is required"
        );
        assert!(
            ingress_spec(&json!({}), "spec")[0]
                .message
                .contains("either `defaultBackend`")
        );
    }

    #[test]
    fn network_policy_cidrs_ports_and_peers() {
        let spec = json!({
            "podSelector": {},
            "ingress": [{"from": [
                {"ipBlock": {"cidr": "10.0.0.300/8"}},
                {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16", "11.0.0.0/16", "10.0.0.0/8"]}},
                {},
                {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}},
            ], "ports": [{"port": 0}, {"port": "http", "endPort": 90}, {"port": 90, "endPort": 80}, {"protocol": "ICMP"}]}],
            "policyTypes": ["Ingress", "Sideways"],
        });
        let errs = network_policy_spec(&spec, "spec");
        assert_eq!(
            fields(&errs),
            vec![
                (
                    "spec.ingress[0].ports[0].port",
                    "Invalid value: 0: must be between 1 and 65535, inclusive"
                ),
                (
                    "spec.ingress[0].ports[1].endPort",
                    "Invalid value: 90: may not be specified when `port` is non-numeric"
                ),
                (
                    "spec.ingress[0].ports[2].endPort",
                    "Invalid value: 90: must be greater than or equal to `port`"
                ),
                (
                    "spec.ingress[0].ports[3].protocol",
                    "Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\""
                ),
                (
                    "spec.ingress[0].from[0].ipBlock.cidr",
                    "Invalid value: \"10.0.0.300/8\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
                ),
                (
                    "spec.ingress[0].from[1].ipBlock.except[1]",
                    "Invalid value: \"11.0.0.0/16\": must be a strict subset of `cidr`"
                ),
                (
                    "spec.ingress[0].from[1].ipBlock.except[2]",
                    "Invalid value: \"10.0.0.0/8\": must be a strict subset of `cidr`"
                ),
                (
                    "spec.ingress[0].from[2]",
                    "Required value: must specify a peer"
                ),
                (
                    "spec.ingress[0].from[3]",
                    "Forbidden: may not specify both ipBlock and another peer"
                ),
                (
                    "spec.policyTypes[1]",
                    "Unsupported value: \"Sideways\": supported values: \"Ingress\", \"Egress\""
                ),
            ]
        );
    }

    #[test]
    fn ingress_class_controller_and_parameters() {
        let errs = ingress_class_spec(
            &json!({"controller": "nginx", "parameters": {"kind": "Cfg", "name": "x", "scope": "Cluster", "namespace": "a"}}),
            "spec",
        );
        assert_eq!(
            fields(&errs),
            vec![
                (
                    "spec.controller",
                    "Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")"
                ),
                (
                    "spec.parameters.namespace",
                    "Forbidden: `parameters.scope` is set to 'Cluster'"
                ),
            ]
        );
        assert!(
            ingress_class_spec(&json!({"controller": "example.com/ingress"}), "spec").is_empty()
        );
        let errs = ingress_class_spec(
            &json!({"controller": "example.com/ingress", "parameters": {"kind": "Cfg", "name": "x"}}),
            "spec",
        );
        assert_eq!(
            fields(&errs),
            vec![("spec.parameters.scope", "Required value")]
        );
        let errs = ingress_class_update(
            &json!({"controller": "example.com/b"}),
            &json!({"controller": "example.com/a"}),
        );
        assert_eq!(
            fields(&errs),
            vec![(
                "spec.controller",
                "Invalid value: \"example.com/b\": field is immutable"
            )]
        );
    }

    #[test]
    fn service_cidrs_and_ip_addresses() {
        assert!(service_cidr(&json!({"cidrs": ["10.96.0.0/12", "fd00::/108"]})).is_empty());
        assert_eq!(
            service_cidr(&json!({"cidrs": ["10.96.0.0/12", "10.0.0.0/8"]})).len(),
            1
        );
        assert_eq!(service_cidr(&json!({})).len(), 1);
        let ok = json!({"metadata": {"name": "10.96.0.10"}, "spec": {"parentRef": {"resource": "services", "name": "dns"}}});
        assert!(ip_address(&ok).is_empty());
        let bad = json!({"metadata": {"name": "2001:DB8::1"}, "spec": {}});
        assert_eq!(
            fields(&ip_address(&bad)),
            vec![
                (
                    "metadata.name",
                    "Invalid value: \"2001:DB8::1\": must be in canonical form (\"2001:db8::1\")"
                ),
                ("spec.parentRef", "Required value"),
            ]
        );
    }
}
