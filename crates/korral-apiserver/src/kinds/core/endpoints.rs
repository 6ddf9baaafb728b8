//! `v1/Endpoints`: upstream's `ValidateEndpointsCreate` / `ValidateEndpointsUpdate` (subsets
//! with addresses, each a valid IP outside the special ranges with a DNS-label hostname and a
//! DNS-subdomain node name; named ports when there are several, valid numbers and protocols) and
//! the warnings about non-standard IP forms (`endpointsWarnings`).

use serde_json::{Value, json};

use crate::error::Cause;
use crate::kinds::strategy::{Context, Defaulted, Strategy};
use crate::validation::enums::{self, Order};
use crate::validation::names::{
    child, dns1123_label, dns1123_subdomain, go_quote, index, invalid_rendered, invalid_value,
    validate_qualified_name,
};
use crate::validation::network::{IP_MESSAGE, ip_warnings, non_special_ip, parse_ip_sloppy};
use crate::validation::ports::port_num;

/// The strategy of `v1/Endpoints`: upstream's defaults (port protocols), then its validation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EndpointsStrategy;

impl Strategy for EndpointsStrategy {
    fn default(&self, obj: &mut Value) {
        Defaulted::new("", "Endpoints").default(obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_endpoints(obj)
    }

    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        endpoints_warnings(obj)
    }
}

/// The array at `field` of `obj` (absent or null: empty).
fn items<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    obj.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// Upstream's `ValidateEndpoints` (object metadata aside: the store checks it).
fn validate_endpoints(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (i, subset) in items(obj, "subsets").iter().enumerate() {
        let at = index("subsets", i);
        let addresses = items(subset, "addresses");
        let not_ready = items(subset, "notReadyAddresses");
        if addresses.is_empty() && not_ready.is_empty() {
            errs.push(Cause::required(
                at.as_str(),
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (field, list) in [("addresses", addresses), ("notReadyAddresses", not_ready)] {
            for (j, address) in list.iter().enumerate() {
                errs.extend(validate_address(address, &index(&child(&at, field), j)));
            }
        }
        let ports = items(subset, "ports");
        for (j, port) in ports.iter().enumerate() {
            errs.extend(validate_port(
                port,
                ports.len() > 1,
                &index(&child(&at, "ports"), j),
            ));
        }
    }
    errs
}

/// Upstream's `validateEndpointAddress`.
fn validate_address(address: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let ip = text(address, "ip");
    let ip_path = child(path, "ip");
    if parse_ip_sloppy(ip).is_none() {
        errs.push(invalid_rendered(&ip_path, &go_quote(ip), IP_MESSAGE));
    }
    let hostname = text(address, "hostname");
    if !hostname.is_empty() {
        for msg in dns1123_label(hostname) {
            errs.push(invalid_rendered(
                &child(path, "hostname"),
                &go_quote(hostname),
                &msg,
            ));
        }
    }
    if let Some(node) = address.get("nodeName").and_then(Value::as_str) {
        for msg in dns1123_subdomain(node) {
            errs.push(invalid_rendered(
                &child(path, "nodeName"),
                &go_quote(node),
                &msg,
            ));
        }
    }
    for msg in non_special_ip(ip) {
        errs.push(invalid_rendered(&ip_path, &go_quote(ip), &msg));
    }
    errs
}

/// Upstream's `validateEndpointPort`.
fn validate_port(port: &Value, require_name: bool, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let name = text(port, "name");
    if require_name && name.is_empty() {
        errs.push(Cause::required(child(path, "name"), ""));
    } else if !name.is_empty() {
        for msg in dns1123_label(name) {
            errs.push(invalid_rendered(
                &child(path, "name"),
                &go_quote(name),
                &msg,
            ));
        }
    }
    let number = port.get("port").cloned().unwrap_or(json!(0));
    for msg in port_num(number.as_i64().unwrap_or(0)) {
        errs.push(invalid_value(&child(path, "port"), &number, &msg));
    }
    let protocol = text(port, "protocol");
    if protocol.is_empty() {
        errs.push(Cause::required(child(path, "protocol"), ""));
    } else if !enums::PROTOCOL.contains(protocol) {
        errs.push(enums::PROTOCOL.not_supported(
            child(path, "protocol"),
            &json!(protocol),
            Order::Sorted,
        ));
    }
    if let Some(app) = port.get("appProtocol").and_then(Value::as_str) {
        for msg in validate_qualified_name(app) {
            errs.push(invalid_rendered(
                &child(path, "appProtocol"),
                &go_quote(app),
                &msg,
            ));
        }
    }
    errs
}

/// Upstream's `endpointsWarnings`: every address in a non-standard form.
fn endpoints_warnings(obj: &Value) -> Vec<String> {
    let mut warnings = Vec::new();
    for (i, subset) in items(obj, "subsets").iter().enumerate() {
        for field in ["addresses", "notReadyAddresses"] {
            for (j, address) in items(subset, field).iter().enumerate() {
                let path = format!("subsets[{i}].{field}[{j}].ip");
                warnings.extend(ip_warnings(&path, text(address, "ip")));
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(obj: Value) -> Vec<String> {
        validate_endpoints(&obj)
            .iter()
            .map(Cause::summary)
            .collect()
    }

    fn subset(subset: Value) -> Value {
        json!({"subsets": [subset]})
    }

    #[test]
    fn endpoints_as_upstream() {
        let ok = json!({"ip": "10.0.0.1", "nodeName": "korral-node", "hostname": "web-0",
                         "targetRef": {"kind": "Pod", "name": "web-0"}});
        let cases: &[(Value, &[&str])] = &[
            (json!({}), &[]),
            (
                subset(json!({"addresses": [ok], "ports": [{"port": 80, "protocol": "TCP"}]})),
                &[],
            ),
            (
                subset(json!({"notReadyAddresses": [{"ip": "10.0.0.2"}]})),
                &[],
            ),
            (
                subset(json!({"ports": [{"port": 80, "protocol": "TCP"}]})),
                &["subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"],
            ),
            (
                subset(json!({"addresses": [{"ip": "nope"}]})),
                &[
                    "subsets[0].addresses[0].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                    "subsets[0].addresses[0].ip: Invalid value: \"nope\": must be a valid IP address",
                ],
            ),
            (
                subset(
                    json!({"addresses": [{"ip": "127.0.0.1"}], "notReadyAddresses": [{"ip": "169.254.1.1"}, {"ip": "0.0.0.0"}, {"ip": "224.0.0.1"}]}),
                ),
                &[
                    "subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
                    "subsets[0].notReadyAddresses[0].ip: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
                    "subsets[0].notReadyAddresses[1].ip: Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)",
                    "subsets[0].notReadyAddresses[2].ip: Invalid value: \"224.0.0.1\": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
                ],
            ),
            (
                subset(
                    json!({"addresses": [{"ip": "10.0.0.1", "hostname": "Web", "nodeName": "Node_1"}]}),
                ),
                &[
                    "subsets[0].addresses[0].hostname: Invalid value: \"Web\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                    "subsets[0].addresses[0].nodeName: Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ],
            ),
            (
                subset(json!({"addresses": [{"ip": "10.0.0.1"}], "ports": [
                    {"port": 80, "protocol": "TCP"},
                    {"name": "b", "port": 0, "protocol": "HTTP", "appProtocol": "a/b/c"},
                    {"name": "c", "port": 70000},
                ]})),
                &[
                    "subsets[0].ports[0].name: Required value",
                    "subsets[0].ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                    "subsets[0].ports[1].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                    "subsets[0].ports[1].appProtocol: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                    "subsets[0].ports[2].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                    "subsets[0].ports[2].protocol: Required value",
                ],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(summaries(obj.clone()), *want, "{obj}");
        }
    }

    #[test]
    fn non_standard_addresses_warn() {
        let obj = subset(
            json!({"addresses": [{"ip": "010.0.0.1"}], "notReadyAddresses": [{"ip": "10.0.0.2"}]}),
        );
        assert_eq!(
            endpoints_warnings(&obj),
            [
                "subsets[0].addresses[0].ip: non-standard IP address \"010.0.0.1\" will be considered invalid in a future Kubernetes release: use \"10.0.0.1\""
            ]
        );
    }
}
