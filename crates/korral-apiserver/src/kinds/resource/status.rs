//! A ResourceClaim's status as upstream's `validateResourceClaimStatusUpdate` checks it on the
//! status subresource: reservations (at most 256, unique by uid, only with an allocation, none
//! added while the claim is being deleted), a new allocation's device results and
//! configuration, an existing allocation's immutability, and the devices' reported status.

use serde_json::{Value, json};

use super::validation::{
    device_toleration, each, items, label, opaque_config, pool_name, request_names, text, too_many,
};
use crate::error::Cause;
use crate::meta;
use crate::validation::names::{
    child, index, invalid_rendered, invalid_value, too_long, validate_label_key,
};

/// `ResourceClaimReservedForMaxSize`.
const MAX_RESERVED_FOR: usize = 256;
/// `AllocationResultsMaxSize`.
const MAX_RESULTS: usize = 32;
/// `2 * DeviceConfigMaxSize`: class and claim configuration.
const MAX_ALLOCATION_CONFIG: usize = 64;
/// `AllocatedDeviceStatusMaxConditions`.
const MAX_CONDITIONS: usize = 8;
/// `AllocatedDeviceStatusDataMaxLength`.
const MAX_DATA: usize = 10 * 1024;
/// The longest condition reason (`maxReasonLen`).
const MAX_CONDITION_REASON: usize = 1024;
/// The longest condition message (`maxMessageLen`).
const MAX_CONDITION_MESSAGE: usize = 32 * 1024;
/// `NetworkDeviceDataInterfaceNameMaxLength`.
const MAX_INTERFACE_NAME: usize = 256;
/// `NetworkDeviceDataHardwareAddressMaxLength`.
const MAX_HARDWARE_ADDRESS: usize = 128;
/// `NetworkDeviceDataMaxIPs`.
const MAX_IPS: usize = 16;

/// `AllocationConfigSource` values, sorted.
const CONFIG_SOURCE: [&str; 2] = ["FromClaim", "FromClass"];

/// `validateRequestNameRef`: `request` or `request/subrequest` of the claim.
fn request_ref(name: &str, path: &str, names: &[String]) -> Vec<Cause> {
    let message = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";
    let segments: Vec<&str> = name.split('/').collect();
    if segments.len() > 2 {
        return vec![invalid_value(path, &json!(name), message)];
    }
    let mut errs: Vec<Cause> = segments.iter().flat_map(|s| label(s, path)).collect();
    if !names.iter().any(|n| n == name) {
        errs.push(invalid_value(path, &json!(name), message));
    }
    errs
}

/// `validateUID`: an RFC 4122 UUID in its normalized form.
fn uid(value: &str, path: &str) -> Vec<Cause> {
    let hex_groups = |s: &str| {
        let parts: Vec<&str> = s.split('-').collect();
        parts.len() == 5
            && parts
                .iter()
                .zip([8, 4, 4, 4, 12])
                .all(|(p, n)| p.len() == n && p.bytes().all(|c| c.is_ascii_hexdigit()))
    };
    let parses = match value.len() {
        36 => hex_groups(value),
        38 => value.starts_with('{') && value.ends_with('}') && hex_groups(&value[1..37]),
        45 => value.to_ascii_lowercase().starts_with("urn:uuid:") && hex_groups(&value[9..]),
        32 => value.bytes().all(|c| c.is_ascii_hexdigit()),
        n => {
            return vec![invalid_value(
                path,
                &json!(value),
                &format!("error validating uid: invalid UUID length: {n}"),
            )];
        }
    };
    if !parses {
        return vec![invalid_value(
            path,
            &json!(value),
            "error validating uid: invalid UUID format",
        )];
    }
    if value.len() != 36 || value != value.to_ascii_lowercase() {
        return vec![invalid_value(
            path,
            &json!(value),
            "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters",
        )];
    }
    Vec::new()
}

/// The id upstream gives an allocated device: `driver/pool/device[/shareID]`.
fn device_id(item: &Value) -> String {
    let mut id = format!(
        "{}/{}/{}",
        text(item, "driver"),
        text(item, "pool"),
        text(item, "device")
    );
    if let Some(share) = item.get("shareID").and_then(Value::as_str) {
        id.push('/');
        id.push_str(share);
    }
    id
}

/// `validateDeviceRequestAllocationResult`.
fn result(result: &Value, path: &str, names: &[String]) -> Vec<Cause> {
    let mut errs = request_ref(text(result, "request"), &child(path, "request"), names);
    errs.extend(crate::kinds::storage::csi_driver_name(
        text(result, "driver"),
        &child(path, "driver"),
    ));
    errs.extend(pool_name(text(result, "pool"), &child(path, "pool")));
    errs.extend(label(text(result, "device"), &child(path, "device")));
    errs.extend(super::slice::binding_parameters(result, path));
    for (i, toleration) in items(result, "tolerations").iter().enumerate() {
        errs.extend(device_toleration(
            toleration,
            &index(&child(path, "tolerations"), i),
        ));
    }
    if let Some(share) = result.get("shareID").and_then(Value::as_str) {
        errs.extend(uid(share, &child(path, "shareID")));
    }
    errs
}

/// `validateDeviceAllocationConfiguration`.
fn allocation_config(config: &Value, path: &str, names: &[String]) -> Vec<Cause> {
    let mut errs = Vec::new();
    let source = text(config, "source");
    let source_at = child(path, "source");
    if source.is_empty() {
        errs.push(Cause::required(source_at, ""));
    } else if !CONFIG_SOURCE.contains(&source) {
        let supported: Vec<Value> = CONFIG_SOURCE.iter().map(|s| json!(s)).collect();
        errs.push(Cause::not_supported(source_at, &json!(source), &supported));
    }
    errs.extend(each(
        items(config, "requests"),
        32,
        &child(path, "requests"),
        Some(|r: &Value| r.as_str().unwrap_or("")),
        |r, at| request_ref(r.as_str().unwrap_or(""), at, names),
    ));
    errs.extend(opaque_config(config, path));
    errs
}

/// `validateAllocationResult` of a new allocation.
fn allocation(allocation: &Value, path: &str, names: &[String]) -> Vec<Cause> {
    let devices = allocation.get("devices").unwrap_or(&Value::Null);
    let at = child(path, "devices");
    let mut errs = each(
        items(devices, "results"),
        MAX_RESULTS,
        &child(&at, "results"),
        None,
        |r, p| result(r, p, names),
    );
    errs.extend(each(
        items(devices, "config"),
        MAX_ALLOCATION_CONFIG,
        &child(&at, "config"),
        None,
        |c, p| allocation_config(c, p, names),
    ));
    if let Some(selector) = allocation.get("nodeSelector").filter(|s| !s.is_null()) {
        errs.extend(super::slice::node_selector(
            selector,
            &child(path, "nodeSelector"),
        ));
    }
    errs
}

/// `IsValidInterfaceAddress`: an address in CIDR form.
fn interface_address(value: &str, path: &str) -> Vec<Cause> {
    let valid = value.split_once('/').is_some_and(|(ip, prefix)| {
        let Ok(bits) = prefix.parse::<u8>() else {
            return false;
        };
        match ip.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(_)) => bits <= 32 && !prefix.starts_with('+'),
            Ok(std::net::IpAddr::V6(_)) => bits <= 128 && !prefix.starts_with('+'),
            Err(_) => false,
        }
    });
    if valid {
        return Vec::new();
    }
    vec![invalid_value(
        path,
        &json!(value),
        "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
    )]
}

/// `metav1validation.ValidateConditions`: unique types, each condition well formed.
fn conditions_of(conditions: &[Value], path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = index(path, i);
        let kind = text(condition, "type");
        if conditions[..i].iter().any(|c| text(c, "type") == kind) {
            errs.push(Cause::duplicate(child(&at, "type"), &json!(kind)));
        }
        for msg in validate_label_key(kind) {
            errs.push(invalid_value(&child(&at, "type"), &json!(kind), &msg));
        }
        let status = text(condition, "status");
        if !["True", "False", "Unknown"].contains(&status) {
            let supported = [json!("False"), json!("True"), json!("Unknown")];
            errs.push(Cause::not_supported(
                child(&at, "status"),
                &json!(status),
                &supported,
            ));
        }
        if let Some(generation) = condition.get("observedGeneration").and_then(Value::as_i64)
            && generation < 0
        {
            errs.push(invalid_value(
                &child(&at, "observedGeneration"),
                &json!(generation),
                "must be greater than or equal to zero",
            ));
        }
        if text(condition, "lastTransitionTime").is_empty() {
            errs.push(Cause::required(
                child(&at, "lastTransitionTime"),
                "must be set",
            ));
        }
        let reason = text(condition, "reason");
        if reason.is_empty() {
            errs.push(Cause::required(child(&at, "reason"), "must be set"));
        } else {
            if !is_condition_reason(reason) {
                errs.push(invalid_value(
                    &child(&at, "reason"),
                    &json!(reason),
                    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                ));
            }
            if reason.len() > MAX_CONDITION_REASON {
                errs.push(too_long(&child(&at, "reason"), MAX_CONDITION_REASON as i64));
            }
        }
        if text(condition, "message").len() > MAX_CONDITION_MESSAGE {
            errs.push(too_long(
                &child(&at, "message"),
                MAX_CONDITION_MESSAGE as i64,
            ));
        }
    }
    errs
}

/// Matches `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`.
fn is_condition_reason(reason: &str) -> bool {
    let b = reason.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && (last.is_ascii_alphanumeric() || *last == b'_')
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':'))
        }
        _ => false,
    }
}

/// `validateDeviceStatus`: a device the allocation names, with bounded data.
fn device_status(device: &Value, path: &str, allocated: &[String]) -> Vec<Cause> {
    let mut errs =
        crate::kinds::storage::csi_driver_name(text(device, "driver"), &child(path, "driver"));
    errs.extend(pool_name(text(device, "pool"), &child(path, "pool")));
    errs.extend(label(text(device, "device"), &child(path, "device")));
    if let Some(share) = device.get("shareID").and_then(Value::as_str) {
        errs.extend(uid(share, &child(path, "shareID")));
    }
    let id = device_id(device);
    if !allocated.contains(&id) {
        errs.push(invalid_rendered(
            path,
            &id,
            "must be an allocated device in the claim",
        ));
    }
    let conditions = items(device, "conditions");
    if conditions.len() > MAX_CONDITIONS {
        errs.push(too_many(
            &child(path, "conditions"),
            conditions.len(),
            MAX_CONDITIONS,
        ));
    }
    errs.extend(conditions_of(conditions, &child(path, "conditions")));
    if let Some(data) = device.get("data").filter(|d| !d.is_null()) {
        let at = child(path, "data");
        if data.to_string().len() > MAX_DATA {
            errs.push(too_long(&at, MAX_DATA as i64));
        } else if !data.is_object() {
            errs.push(invalid_rendered(
                &at,
                "\"<value omitted>\"",
                "must be a valid JSON object",
            ));
        }
    }
    if let Some(network) = device.get("networkData").filter(|n| !n.is_null()) {
        let at = child(path, "networkData");
        if text(network, "interfaceName").len() > MAX_INTERFACE_NAME {
            errs.push(too_long(
                &child(&at, "interfaceName"),
                MAX_INTERFACE_NAME as i64,
            ));
        }
        if text(network, "hardwareAddress").len() > MAX_HARDWARE_ADDRESS {
            errs.push(too_long(
                &child(&at, "hardwareAddress"),
                MAX_HARDWARE_ADDRESS as i64,
            ));
        }
        errs.extend(each(
            items(network, "ips"),
            MAX_IPS,
            &child(&at, "ips"),
            Some(|ip: &Value| ip.as_str().unwrap_or("")),
            |ip, p| interface_address(ip.as_str().unwrap_or(""), p),
        ));
    }
    errs
}

/// Upstream's `ValidateResourceClaimStatusUpdate` for `obj` replacing `old`.
pub(super) fn claim_status(obj: &Value, old: &Value) -> Vec<Cause> {
    let status = obj.get("status").unwrap_or(&Value::Null);
    let old_status = old.get("status").unwrap_or(&Value::Null);
    let requests = meta::path(obj, "spec.devices.requests")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let names = request_names(requests);
    let reserved = items(status, "reservedFor");
    let mut errs = each(
        reserved,
        MAX_RESERVED_FOR,
        "status.reservedFor",
        Some(|r: &Value| text(r, "uid")),
        |r, at| {
            ["resource", "name", "uid"]
                .iter()
                .filter(|f| text(r, f).is_empty())
                .map(|f| Cause::required(child(at, f), ""))
                .collect()
        },
    );
    let allocation_value = status.get("allocation").filter(|a| !a.is_null());
    let allocated: Vec<String> = allocation_value
        .map(|a| {
            meta::path(a, "devices.results")
                .and_then(Value::as_array)
                .map(|r| r.iter().map(device_id).collect())
                .unwrap_or_default()
        })
        .unwrap_or_default();
    errs.extend(each(
        items(status, "devices"),
        usize::MAX,
        "status.devices",
        None,
        |d, at| device_status(d, at, &allocated),
    ));
    let ids: Vec<String> = items(status, "devices").iter().map(device_id).collect();
    for (i, id) in ids.iter().enumerate() {
        if ids[..i].contains(id) {
            errs.push(Cause::duplicate(index("status.devices", i), &json!(id)));
        }
    }
    if !reserved.is_empty() {
        if allocation_value.is_none() {
            errs.push(Cause::forbidden(
                "status.reservedFor",
                "may not be specified when `allocated` is not set",
            ));
        } else if meta::is_deleting(obj) {
            let before = items(old_status, "reservedFor");
            if reserved.iter().any(|r| !before.contains(r)) {
                errs.push(Cause::forbidden(
                    "status.reservedFor",
                    "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                ));
            }
        }
    }
    let old_allocation = old_status.get("allocation").filter(|a| !a.is_null());
    match (allocation_value, old_allocation) {
        (Some(new), Some(before)) if new != before => errs.push(invalid_rendered(
            "status.allocation",
            "\"object\"",
            "field is immutable",
        )),
        (Some(new), None) => errs.extend(allocation(new, "status.allocation", &names)),
        _ => {}
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &[Cause]) -> Vec<String> {
        errs.iter().map(Cause::summary).collect()
    }

    fn claim(status: Value) -> Value {
        json!({"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "c"}},
            {"name": "nic", "firstAvailable": [{"name": "fast", "deviceClassName": "c"}]},
        ]}}, "status": status})
    }

    #[test]
    fn reservations_need_an_allocation() {
        let obj = claim(json!({"reservedFor": [{"resource": "pods", "name": "p"}]}));
        assert_eq!(
            messages(&claim_status(&obj, &json!({}))),
            vec![
                "status.reservedFor[0].uid: Required value",
                "status.reservedFor: Forbidden: may not be specified when `allocated` is not set",
            ]
        );
    }

    #[test]
    fn new_allocations_are_checked() {
        let obj = claim(json!({
            "allocation": {"devices": {
                "results": [
                    {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d0"},
                    {"request": "nic/fast", "driver": "nic.example.com", "pool": "p", "device": "n0",
                     "shareID": "ABC"},
                    {"request": "nope", "driver": "", "pool": "a//b", "device": "D"},
                ],
                "config": [{"source": "Elsewhere", "requests": ["gpu"],
                    "opaque": {"driver": "gpu.example.com", "parameters": {}}}],
            }},
            "devices": [
                {"driver": "gpu.example.com", "pool": "p", "device": "d0",
                 "conditions": [{"type": "Ready", "status": "Yes", "reason": "1bad",
                     "lastTransitionTime": "2024-01-01T00:00:00Z"}],
                 "networkData": {"ips": ["10.0.0.1/24", "10.0.0.1"]}},
                {"driver": "gpu.example.com", "pool": "p", "device": "d9"},
            ],
        }));
        let got = messages(&claim_status(&obj, &json!({})));
        assert_eq!(
            got,
            vec![
                "status.devices[0].conditions[0].status: Unsupported value: \"Yes\": supported values: \"False\", \"True\", \"Unknown\"",
                "status.devices[0].conditions[0].reason: Invalid value: \"1bad\": a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                "status.devices[0].networkData.ips[1]: Invalid value: \"10.0.0.1\": must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
                "status.devices[1]: Invalid value: gpu.example.com/p/d9: must be an allocated device in the claim",
                "status.allocation.devices.results[1].shareID: Invalid value: \"ABC\": error validating uid: invalid UUID length: 3",
                "status.allocation.devices.results[2].request: Invalid value: \"nope\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
                "status.allocation.devices.results[2].driver: Required value",
                "status.allocation.devices.results[2].driver: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "status.allocation.devices.results[2].pool: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "status.allocation.devices.results[2].device: Invalid value: \"D\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "status.allocation.devices.config[0].source: Unsupported value: \"Elsewhere\": supported values: \"FromClaim\", \"FromClass\"",
            ]
        );
    }

    #[test]
    fn allocations_are_immutable_and_deleting_claims_gain_no_reservations() {
        let allocation = json!({"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d0"}]}});
        let old = claim(json!({"allocation": allocation, "reservedFor": [
            {"resource": "pods", "name": "a", "uid": "1"}]}));
        let mut new = old.clone();
        new["status"]["allocation"]["devices"]["results"][0]["device"] = json!("d1");
        assert_eq!(
            messages(&claim_status(&new, &old)),
            vec!["status.allocation: Invalid value: \"object\": field is immutable"]
        );
        let mut deleting = old.clone();
        deleting["metadata"] = json!({"deletionTimestamp": "2024-01-01T00:00:00Z"});
        deleting["status"]["reservedFor"] = json!([
            {"resource": "pods", "name": "a", "uid": "1"},
            {"resource": "pods", "name": "b", "uid": "2"}]);
        assert_eq!(
            messages(&claim_status(&deleting, &old)),
            vec![
                "status.reservedFor: Forbidden: new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set"
            ]
        );
        // Unchanged allocation, shrinking reservations: fine.
        let mut shrink = deleting.clone();
        shrink["status"]["reservedFor"] = json!([]);
        assert!(claim_status(&shrink, &old).is_empty());
    }
}
