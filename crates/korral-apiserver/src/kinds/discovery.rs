//! `discovery.k8s.io/v1`: EndpointSlices, with upstream's `pkg/apis/discovery/validation`
//! rules.

use k8s_openapi::api::discovery::v1 as api;

use serde_json::{Value, json};

use super::KindDef;
use super::lists::{ListAt, ListRule};
use super::printer::{AGE, Column, Printer, age, text};
use super::strategy::{Context, Strategy};
use crate::error::Cause;
use crate::kinds::workload::immutable;
use crate::validation::enums::{self, Order};
use crate::validation::names::{
    child, dns1123_label, dns1123_subdomain, go_quote, index, invalid_rendered,
    validate_label_value, validate_qualified_name,
};
use crate::validation::network;

/// The most endpoints a slice holds.
const MAX_ENDPOINTS: usize = 1000;
/// The most addresses an endpoint holds.
const MAX_ADDRESSES: usize = 100;
/// The most ports a slice holds.
const MAX_PORTS: usize = 20000;
/// The most zones, and the most nodes, an endpoint's hints name.
const MAX_HINTS: usize = 8;

/// EndpointSlice: each endpoint's `addresses`, a set for applies only.
const ENDPOINT_SLICE_LISTS: &[ListAt] = &[ListAt {
    path: "endpoints.addresses",
    rule: ListRule::ApplySet,
}];

/// The kinds of `discovery.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            "EndpointSlice",
            EndpointSliceStrategy,
        )
        .schema::<api::EndpointSlice>()
        .lists(ENDPOINT_SLICE_LISTS)
        .generation()
        .printer(ENDPOINT_SLICES),
    ]
}

/// EndpointSlices: ports default to TCP with an empty name, endpoints to empty conditions;
/// `addressType` never changes.
#[derive(Debug, Clone, Copy)]
struct EndpointSliceStrategy;

impl Strategy for EndpointSliceStrategy {
    fn default(&self, obj: &mut Value) {
        let Some(root) = obj.as_object_mut() else {
            return;
        };
        if let Some(ports) = root.get_mut("ports").and_then(Value::as_array_mut) {
            for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                if port.get("name").is_none_or(Value::is_null) {
                    port.insert("name".into(), json!(""));
                }
                if port.get("protocol").is_none_or(Value::is_null) {
                    port.insert("protocol".into(), json!("TCP"));
                }
            }
        }
        if let Some(endpoints) = root.get_mut("endpoints").and_then(Value::as_array_mut) {
            for endpoint in endpoints.iter_mut().filter_map(Value::as_object_mut) {
                if endpoint.get("conditions").is_none_or(Value::is_null) {
                    endpoint.insert("conditions".into(), json!({}));
                }
            }
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_endpoint_slice(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        let mut errs = validate_endpoint_slice(obj);
        errs.extend(immutable(obj, old, "addressType", ""));
        errs
    }
}

/// The array at `field`, empty when absent.
fn list<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    obj.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Upstream's `field.TooMany`.
fn too_many(path: &str, actual: usize, max: usize) -> Cause {
    Cause::new(
        "FieldValueTooMany",
        path,
        format!("Too many: {actual}: must have at most {max} items"),
    )
}

/// Upstream's `ValidateEndpointSlice` (besides object metadata).
fn validate_endpoint_slice(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let address_type = obj.get("addressType").and_then(Value::as_str).unwrap_or("");
    match address_type {
        "" => errs.push(Cause::required("addressType", "")),
        t if enums::ADDRESS_TYPE.contains(t) => {}
        other => errs.push(enums::ADDRESS_TYPE.not_supported(
            "addressType",
            &json!(other),
            Order::Sorted,
        )),
    }
    errs.extend(endpoints(list(obj, "endpoints"), address_type));
    errs.extend(ports(list(obj, "ports")));
    errs
}

/// Every cause about one address of the given type: the family (`IsValidIPv4Address`,
/// `IsValidIPv6Address`) and the ranges an endpoint may not use (`ValidateEndpointIP`), or a
/// fully qualified domain name.
fn address(value: &str, address_type: &str, path: &str) -> Vec<Cause> {
    let mut msgs = match address_type {
        "IPv4" => network::ipv4(value),
        "IPv6" => network::ipv6(value),
        "FQDN" => return fqdn(value, path).into_iter().collect(),
        _ => return Vec::new(),
    };
    if let Some(ip) = network::parse_ip_sloppy(value) {
        msgs.extend(endpoint_ip(ip));
    }
    msgs.into_iter()
        .map(|msg| invalid_rendered(path, &go_quote(value), &msg))
        .collect()
}

/// Upstream's `ValidateEndpointIP`: not unspecified, loopback or link-local.
fn endpoint_ip(ip: std::net::IpAddr) -> Vec<String> {
    use std::net::IpAddr;
    let mut msgs = Vec::new();
    if ip.is_unspecified() {
        let zero = if ip.is_ipv4() { "0.0.0.0" } else { "::" };
        msgs.push(format!("may not be unspecified ({zero})"));
    }
    if ip.is_loopback() {
        msgs.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".to_string());
    }
    let (link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (
                o[0] == 169 && o[1] == 254,
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (s[0] & 0xffc0 == 0xfe80, s[0] & 0xff0f == 0xff02)
        }
    };
    if link_local {
        msgs.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_string());
    }
    if link_local_multicast {
        msgs.push(
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".to_string(),
        );
    }
    msgs
}

/// `IsFullyQualifiedDomainName`: a DNS subdomain (trailing dot allowed) of at least two labels.
fn fqdn(value: &str, path: &str) -> Option<Cause> {
    if value.is_empty() {
        return Some(Cause::required(path, ""));
    }
    let name = value.strip_suffix('.').unwrap_or(value);
    let errs = dns1123_subdomain(name);
    if !errs.is_empty() {
        return Some(invalid_rendered(path, &go_quote(name), &errs.join(",")));
    }
    if name.split('.').count() < 2 {
        return Some(invalid_rendered(
            path,
            &go_quote(name),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    name.split('.').find_map(|label| {
        let errs = dns1123_label(label);
        (!errs.is_empty()).then(|| invalid_rendered(path, &go_quote(label), &errs.join(",")))
    })
}

/// `validateEndpoints`: at most 1000, each with 1 to 100 addresses of the slice's type, a valid
/// node name and host name.
fn endpoints(items: &[Value], address_type: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if items.len() > MAX_ENDPOINTS {
        errs.push(too_many("endpoints", items.len(), MAX_ENDPOINTS));
        return errs;
    }
    for (i, endpoint) in items.iter().enumerate() {
        let at = index("endpoints", i);
        let addresses_path = child(&at, "addresses");
        let addresses = list(endpoint, "addresses");
        if addresses.is_empty() {
            errs.push(Cause::required(
                &addresses_path,
                "must contain at least 1 address",
            ));
        } else if addresses.len() > MAX_ADDRESSES {
            errs.push(too_many(&addresses_path, addresses.len(), MAX_ADDRESSES));
        }
        for (j, a) in addresses.iter().enumerate() {
            errs.extend(address(
                a.as_str().unwrap_or(""),
                address_type,
                &index(&addresses_path, j),
            ));
        }
        if let Some(node) = endpoint.get("nodeName").and_then(Value::as_str) {
            for msg in dns1123_subdomain(node) {
                errs.push(invalid_rendered(
                    &child(&at, "nodeName"),
                    &go_quote(node),
                    &msg,
                ));
            }
        }
        if let Some(host) = endpoint.get("hostname").and_then(Value::as_str) {
            for msg in dns1123_label(host) {
                errs.push(invalid_rendered(
                    &child(&at, "hostname"),
                    &go_quote(host),
                    &msg,
                ));
            }
        }
        if let Some(hints) = endpoint.get("hints").filter(|h| h.is_object()) {
            errs.extend(validate_hints(hints, &child(&at, "hints")));
        }
    }
    errs
}

/// A name check answering upstream's messages.
type NameCheck = fn(&str) -> Vec<String>;

/// `validateHints`: at most eight zones, distinct label values, then at most eight nodes,
/// distinct node names (a too long list stops the check there, as upstream's does).
fn validate_hints(hints: &Value, at: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let hinted: [(&str, NameCheck); 2] = [
        ("forZones", validate_label_value),
        ("forNodes", dns1123_subdomain),
    ];
    for (field, check) in hinted {
        let path = child(at, field);
        let items = list(hints, field);
        if items.len() > MAX_HINTS {
            errs.push(too_many(&path, items.len(), MAX_HINTS));
            return errs;
        }
        let mut seen = std::collections::HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let name_path = child(&index(&path, i), "name");
            let name = item.get("name").and_then(Value::as_str).unwrap_or("");
            if !seen.insert(name) {
                errs.push(Cause::duplicate(&name_path, &json!(name)));
            }
            for msg in check(name) {
                errs.push(invalid_rendered(&name_path, &go_quote(name), &msg));
            }
        }
    }
    errs
}

/// `validatePorts`: at most 20000, unique DNS-label names, a known protocol, a qualified
/// `appProtocol`.
fn ports(items: &[Value]) -> Vec<Cause> {
    let mut errs = Vec::new();
    if items.len() > MAX_PORTS {
        errs.push(too_many("ports", items.len(), MAX_PORTS));
        return errs;
    }
    let mut names = std::collections::HashSet::new();
    for (i, port) in items.iter().enumerate() {
        let at = index("ports", i);
        let name = port.get("name").and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() {
            for msg in dns1123_label(name) {
                errs.push(invalid_rendered(&child(&at, "name"), &go_quote(name), &msg));
            }
        }
        if !names.insert(name) {
            errs.push(Cause::duplicate(child(&at, "name"), &json!(name)));
        }
        match port.get("protocol").filter(|v| !v.is_null()) {
            None => errs.push(Cause::required(child(&at, "protocol"), "")),
            Some(p) if p.as_str().is_some_and(|p| enums::PROTOCOL.contains(p)) => {}
            Some(p) => {
                errs.push(enums::PROTOCOL.not_supported(child(&at, "protocol"), p, Order::Sorted))
            }
        }
        if let Some(app) = port.get("appProtocol").and_then(Value::as_str) {
            for msg in validate_qualified_name(app) {
                errs.push(invalid_rendered(
                    &child(&at, "appProtocol"),
                    &go_quote(app),
                    &msg,
                ));
            }
        }
    }
    errs
}

/// Up to three items joined with `,` and ` + N more...`, `<unset>` when none (upstream's
/// `listWithMoreString`).
fn list_with_more(items: Vec<String>) -> String {
    let count = items.len();
    let shown = items.into_iter().take(3).collect::<Vec<_>>().join(",");
    if count > 3 {
        format!("{shown} + {} more...", count - 3)
    } else if shown.is_empty() {
        "<unset>".to_string()
    } else {
        shown
    }
}

const ENDPOINT_SLICES: Printer = Printer {
    columns: &[
        Column::new(
            "AddressType",
            "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics are defined for the \"FQDN\" type.",
        ),
        Column::new(
            "Ports",
            "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list.",
        ),
        Column::new(
            "Endpoints",
            "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.",
        ),
        AGE,
    ],
    cells: |obj| {
        let ports: Vec<String> = list(obj, "ports")
            .iter()
            .map(|p| match p.get("port").and_then(Value::as_i64) {
                Some(n) => n.to_string(),
                None => match p.get("name").and_then(Value::as_str) {
                    Some(name) => name.to_string(),
                    None => "*".to_string(),
                },
            })
            .collect();
        let addresses: Vec<String> = list(obj, "endpoints")
            .iter()
            .flat_map(|e| list(e, "addresses"))
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        vec![
            json!(text(obj, "addressType")),
            json!(list_with_more(ports)),
            json!(list_with_more(addresses)),
            age(obj),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_distinct_zones_and_nodes() {
        let with_hints = |hints: Value| {
            validate_endpoint_slice(&json!({"addressType": "IPv4", "endpoints": [
                {"addresses": ["10.1.0.5"], "hints": hints},
            ]}))
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect::<Vec<_>>()
        };
        assert!(
            with_hints(json!({"forZones": [{"name": "zone-a"}], "forNodes": [{"name": "node-1"}]}))
                .is_empty()
        );
        assert_eq!(
            with_hints(json!({
                "forZones": [{"name": "zone-a"}, {"name": "zone-a"}, {"name": "-bad"}],
                "forNodes": [{"name": "Node_1"}, {"name": "n"}, {"name": "n"}],
            })),
            vec![
                "endpoints[0].hints.forZones[1].name: Duplicate value: \"zone-a\"",
                "endpoints[0].hints.forZones[2].name: Invalid value: \"-bad\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "endpoints[0].hints.forNodes[0].name: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "endpoints[0].hints.forNodes[2].name: Duplicate value: \"n\"",
            ]
        );
        let zones: Vec<Value> = (0..9).map(|i| json!({"name": format!("z{i}")})).collect();
        assert_eq!(
            with_hints(json!({"forZones": zones, "forNodes": [{"name": "BAD"}]})),
            vec!["endpoints[0].hints.forZones: Too many: 9: must have at most 8 items"]
        );
    }

    #[test]
    fn addresses_follow_the_slice_type() {
        let slice = json!({"addressType": "IPv4", "endpoints": [
            {"addresses": ["10.1.0.5", "2001:db8::1"]},
            {"addresses": []},
        ], "ports": [{"name": "", "protocol": "TCP"}, {"name": "", "protocol": "ICMP"}]});
        let got: Vec<String> = validate_endpoint_slice(&slice)
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(
            got,
            vec![
                "endpoints[0].addresses[1]: Invalid value: \"2001:db8::1\": must be a valid IPv4 address",
                "endpoints[1].addresses: Required value: must contain at least 1 address",
                "ports[1].name: Duplicate value: \"\"",
                "ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            ]
        );
        let fqdn = validate_endpoint_slice(
            &json!({"addressType": "FQDN", "endpoints": [{"addresses": ["web", "web.example.com."]}]}),
        );
        assert_eq!(fqdn.len(), 1);
        assert_eq!(
            fqdn[0].message,
            "Invalid value: \"web\": should be a domain with at least two segments separated by dots"
        );
        let ranges = validate_endpoint_slice(
            &json!({"addressType": "IPv4", "endpoints": [{"addresses": ["127.0.0.1", "169.254.1.1", "0.0.0.0"]}]}),
        );
        let messages: Vec<&str> = ranges.iter().map(|c| c.message.as_str()).collect();
        assert_eq!(
            messages,
            vec![
                "Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                "Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                "Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
            ]
        );
    }

    #[test]
    fn rows_as_upstream() {
        let obj = json!({"addressType": "IPv4", "ports": [{"port": 80}], "endpoints": [
            {"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3", "10.0.0.4"]}]});
        let cells = (ENDPOINT_SLICES.cells)(&obj);
        assert_eq!(cells[1], "80");
        assert_eq!(cells[2], "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...");
        let cells = (ENDPOINT_SLICES.cells)(&json!({"addressType": "IPv4"}));
        assert_eq!(cells[1..3], [json!("<unset>"), json!("<unset>")]);
    }
}
