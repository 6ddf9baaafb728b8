//! Upstream's `pkg/apis/resource/validation` for resource.k8s.io/v1: requests and their names,
//! device classes and CEL selectors (compiled by [`super::cel`]), allocation modes,
//! tolerations, constraints and opaque configuration of claims; class selectors, configuration
//! and extended resource names; a slice's driver, pool, node selection, shared counters and
//! devices (their details in [`super::slice`]); immutable specs. Claim status is in
//! [`super::status`].

use serde_json::{Value, json};

use super::cel::Verdict;
use crate::error::Cause;
use crate::meta;
use crate::validation::enums::{self, Enum};
use crate::validation::names::{
    child, dns1123_label, dns1123_subdomain, go_quote, index, invalid_rendered, invalid_value,
    too_long, validate_annotations, validate_label_key, validate_label_value, validate_labels,
};

/// Upstream's `field.NotSupported` for the string `value`, rendered as Go quotes it, listing
/// `supported` sorted.
pub(super) fn unsupported(field: String, value: &str, supported: &Enum) -> Cause {
    let listed: Vec<String> = supported.sorted().into_iter().map(go_quote).collect();
    Cause::new(
        "FieldValueNotSupported",
        field,
        format!(
            "Unsupported value: {}: supported values: {}",
            go_quote(value),
            listed.join(", ")
        ),
    )
}

/// `DeviceRequestsMaxSize` (also constraints, configs and selectors).
const MAX_REQUESTS: usize = 32;
/// `FirstAvailableDeviceRequestMaxSize`.
const MAX_SUBREQUESTS: usize = 8;
/// `CELSelectorExpressionMaxLength`.
const MAX_EXPRESSION: usize = 10 * 1024;
/// `OpaqueParametersMaxLength`.
const MAX_PARAMETERS: usize = 10 * 1024;
/// `ResourceSliceMaxDevices`.
const MAX_DEVICES: usize = 128;
/// `ResourceSliceMaxDevicesWithTaintsOrConsumesCounters`.
const MAX_DEVICES_WITH_TAINTS_OR_COUNTERS: usize = 64;
/// `PoolNameMaxLength`.
const MAX_POOL_NAME: usize = 253;

/// The array at `field` of `obj`.
pub(super) fn items<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    obj.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The string at `field` of `obj` (empty when absent).
pub(super) fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// Whether `field` of `obj` is set (present and not null).
pub(super) fn set(obj: &Value, field: &str) -> bool {
    obj.get(field).is_some_and(|v| !v.is_null())
}

/// Upstream's `field.TooMany`.
pub(super) fn too_many(path: &str, actual: usize, max: usize) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    Cause::new(
        "FieldValueTooMany",
        path,
        format!("Too many: {actual}: must have at most {max} {unit}"),
    )
}

/// Upstream's `validateSlice`/`validateSet`: at most `max` items (which stops validation),
/// each item checked, and with a key, no key twice.
pub(super) fn each<'a>(
    list: &'a [Value],
    max: usize,
    path: &str,
    key: Option<fn(&'a Value) -> &'a str>,
    mut check: impl FnMut(&'a Value, &str) -> Vec<Cause>,
) -> Vec<Cause> {
    if list.len() > max {
        return vec![too_many(path, list.len(), max)];
    }
    let mut errs = Vec::new();
    for (i, item) in list.iter().enumerate() {
        errs.extend(check(item, &index(path, i)));
    }
    if let Some(key) = key {
        let mut seen: Vec<&str> = Vec::new();
        for (i, item) in list.iter().enumerate() {
            let k = key(item);
            if seen.contains(&k) {
                errs.push(Cause::duplicate(index(path, i), &json!(k)));
            } else {
                seen.push(k);
            }
        }
    }
    errs
}

/// The `name` of an item.
pub(super) fn name_of(item: &Value) -> &str {
    text(item, "name")
}

/// A string item itself.
pub(super) fn string_of(item: &Value) -> &str {
    item.as_str().unwrap_or("")
}

/// `ValidateDNS1123Label` of a request or device name.
pub(super) fn label(value: &str, path: &str) -> Vec<Cause> {
    if value.is_empty() {
        return vec![Cause::required(path, "")];
    }
    dns1123_label(value)
        .into_iter()
        .map(|msg| invalid_value(path, &json!(value), &msg))
        .collect()
}

/// `ValidateDNS1123Subdomain` of a device class name.
pub(super) fn subdomain(value: &str, path: &str) -> Vec<Cause> {
    dns1123_subdomain(value)
        .into_iter()
        .map(|msg| invalid_value(path, &json!(value), &msg))
        .collect()
}

/// `validatePoolName`: required, at most 253 characters, DNS subdomains separated by slashes.
pub(super) fn pool_name(name: &str, path: &str) -> Vec<Cause> {
    if name.is_empty() {
        return vec![Cause::required(path, "")];
    }
    let mut errs = Vec::new();
    if name.len() > MAX_POOL_NAME {
        errs.push(too_long(path, MAX_POOL_NAME as i64));
    }
    for part in name.split('/') {
        errs.extend(subdomain(part, path));
    }
    errs
}

/// Upstream's `ValidateResourceClaim` spec (`spec.devices`), at `path`.
pub(super) fn claim_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let devices = spec.get("devices").unwrap_or(&Value::Null);
    let path = child(path, "devices");
    let requests = items(devices, "requests");
    let names = request_names(requests);
    let mut errs = each(
        requests,
        MAX_REQUESTS,
        &child(&path, "requests"),
        Some(name_of),
        device_request,
    );
    errs.extend(each(
        items(devices, "constraints"),
        MAX_REQUESTS,
        &child(&path, "constraints"),
        None,
        |c, at| constraint(c, at, &names),
    ));
    errs.extend(each(
        items(devices, "config"),
        MAX_REQUESTS,
        &child(&path, "config"),
        None,
        |c, at| {
            let mut errs = request_refs(c, at, &names);
            errs.extend(opaque_config(c, at));
            errs
        },
    ));
    errs
}

/// The names a claim's references may use: `request` or `request/subrequest`.
pub(super) fn request_names(requests: &[Value]) -> Vec<String> {
    let mut names = Vec::new();
    for request in requests {
        let name = name_of(request);
        names.push(name.to_string());
        for sub in items(request, "firstAvailable") {
            names.push(format!("{name}/{}", name_of(sub)));
        }
    }
    names
}

/// Upstream's `validateDeviceRequest`.
fn device_request(request: &Value, path: &str) -> Vec<Cause> {
    let mut errs = label(name_of(request), &child(path, "name"));
    let first = items(request, "firstAvailable");
    let exactly = request.get("exactly").filter(|e| !e.is_null());
    match (first.is_empty(), exactly) {
        (true, None) => errs.push(Cause::required(
            path,
            "exactly one of `exactly` or `firstAvailable` is required",
        )),
        (false, Some(_)) => errs.push(invalid_rendered(
            path,
            "null",
            "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
        )),
        (false, None) => errs.extend(each(
            first,
            MAX_SUBREQUESTS,
            &child(path, "firstAvailable"),
            Some(name_of),
            |sub, at| {
                let mut errs = label(name_of(sub), &child(at, "name"));
                errs.extend(exact_request(sub, at));
                errs
            },
        )),
        (true, Some(exactly)) => errs.extend(exact_request(exactly, &child(path, "exactly"))),
    }
    errs
}

/// Upstream's `validateExactDeviceRequest` (also the body of a subrequest).
fn exact_request(request: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let class = text(request, "deviceClassName");
    let class_path = child(path, "deviceClassName");
    if class.is_empty() {
        errs.push(Cause::required(class_path, ""));
    } else {
        errs.extend(subdomain(class, &class_path));
    }
    errs.extend(selectors(
        items(request, "selectors"),
        &child(path, "selectors"),
        false,
    ));
    let count = request.get("count").and_then(Value::as_i64).unwrap_or(0);
    match text(request, "allocationMode") {
        "All" if count != 0 => errs.push(invalid_value(
            &child(path, "count"),
            &json!(count),
            "must not be specified when allocationMode is 'All'",
        )),
        "ExactCount" if count <= 0 => errs.push(invalid_value(
            &child(path, "count"),
            &json!(count),
            "must be greater than zero",
        )),
        mode if enums::DEVICE_ALLOCATION_MODE.contains(mode) => {}
        other => errs.push(unsupported(
            child(path, "allocationMode"),
            other,
            &enums::DEVICE_ALLOCATION_MODE,
        )),
    }
    for (i, toleration) in items(request, "tolerations").iter().enumerate() {
        errs.extend(device_toleration(
            toleration,
            &index(&child(path, "tolerations"), i),
        ));
    }
    errs
}

/// `validateSelectorSlice`: each selector has a `cel` expression of bounded length that
/// compiles in the device environment (unless `stored`: kept unchanged from the stored object).
fn selectors(list: &[Value], path: &str, stored: bool) -> Vec<Cause> {
    each(list, MAX_REQUESTS, path, None, |selector, at| {
        let Some(cel) = selector.get("cel").filter(|c| !c.is_null()) else {
            return vec![Cause::required(child(at, "cel"), "")];
        };
        if stored {
            return Vec::new();
        }
        let expression = text(cel, "expression");
        let at = child(&child(at, "cel"), "expression");
        if expression.len() > MAX_EXPRESSION {
            return vec![too_long(&at, MAX_EXPRESSION as i64)];
        }
        match super::cel::check(expression) {
            Verdict::Valid => Vec::new(),
            Verdict::Invalid(detail) => vec![invalid_value(&at, &json!(expression), &detail)],
            Verdict::TooComplex => vec![Cause::forbidden(at, "too complex, exceeds cost limit")],
        }
    })
}

/// Upstream's `validateDeviceToleration`.
pub(super) fn device_toleration(toleration: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let key = text(toleration, "key");
    if !key.is_empty() {
        for msg in validate_label_key(key) {
            errs.push(invalid_value(&child(path, "key"), &json!(key), &msg));
        }
    }
    let value = text(toleration, "value");
    match text(toleration, "operator") {
        "Exists" if !value.is_empty() => errs.push(invalid_value(
            &child(path, "value"),
            &json!(value),
            "must be empty for operator `Exists`",
        )),
        "Exists" => {}
        "Equal" => {
            for msg in validate_label_value(value) {
                errs.push(invalid_value(&child(path, "value"), &json!(value), &msg));
            }
        }
        "" => errs.push(Cause::required(child(path, "operator"), "")),
        other => errs.push(unsupported(
            child(path, "operator"),
            other,
            &enums::DEVICE_TOLERATION_OPERATOR,
        )),
    }
    let effect = text(toleration, "effect");
    if !effect.is_empty() && !enums::DEVICE_TAINT_EFFECT.contains(effect) {
        errs.push(unsupported(
            child(path, "effect"),
            effect,
            &enums::DEVICE_TAINT_EFFECT,
        ));
    }
    errs
}

/// The `requests` a constraint or configuration refers to: names of the claim's requests.
pub(super) fn request_refs(item: &Value, path: &str, names: &[String]) -> Vec<Cause> {
    each(
        items(item, "requests"),
        MAX_REQUESTS,
        &child(path, "requests"),
        Some(string_of),
        |reference, at| {
            let reference = string_of(reference);
            let message = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";
            let segments: Vec<&str> = reference.split('/').collect();
            if segments.len() > 2 {
                return vec![invalid_value(at, &json!(reference), message)];
            }
            let mut errs: Vec<Cause> = segments.iter().flat_map(|s| label(s, at)).collect();
            if !names.iter().any(|n| n == reference) {
                errs.push(invalid_value(at, &json!(reference), message));
            }
            errs
        },
    )
}

/// Upstream's `validateDeviceConstraint`: request references and a fully qualified attribute.
fn constraint(item: &Value, path: &str, names: &[String]) -> Vec<Cause> {
    let mut errs = request_refs(item, path, names);
    if set(item, "matchAttribute") {
        errs.extend(super::slice::fully_qualified_name(
            text(item, "matchAttribute"),
            &child(path, "matchAttribute"),
        ));
    } else if set(item, "distinctAttribute") {
        errs.extend(super::slice::fully_qualified_name(
            text(item, "distinctAttribute"),
            &child(path, "distinctAttribute"),
        ));
    } else {
        errs.push(Cause::required(child(path, "matchAttribute"), ""));
    }
    errs
}

/// Upstream's `validateDeviceConfiguration`: an `opaque` configuration with a driver name and
/// JSON object parameters.
pub(super) fn opaque_config(config: &Value, path: &str) -> Vec<Cause> {
    opaque_config_stored(config, path, false)
}

/// [`opaque_config`]; `stored` parameters (unchanged from the stored object) may exceed the
/// size limit introduced after they were written.
fn opaque_config_stored(config: &Value, path: &str, stored: bool) -> Vec<Cause> {
    let Some(opaque) = config.get("opaque").filter(|o| !o.is_null()) else {
        return vec![Cause::required(child(path, "opaque"), "")];
    };
    let path = child(path, "opaque");
    let mut errs =
        crate::kinds::storage::csi_driver_name(text(opaque, "driver"), &child(&path, "driver"));
    let at = child(&path, "parameters");
    match opaque.get("parameters") {
        None | Some(Value::Null) => errs.push(Cause::required(at, "")),
        Some(Value::Object(_)) => {
            let size = opaque
                .get("parameters")
                .map(|p| p.to_string().len())
                .unwrap_or(0);
            if !stored && size > MAX_PARAMETERS {
                errs.push(too_long(&at, MAX_PARAMETERS as i64));
            }
        }
        Some(_) => errs.push(invalid_rendered(
            &at,
            "\"<value omitted>\"",
            "must be a valid JSON object",
        )),
    }
    errs
}

/// Upstream's `validateDeviceClassSpec` (selectors and configuration); on update, selectors
/// exactly as stored are not compiled again.
pub(super) fn class_spec(spec: &Value, old: Option<&Value>) -> Vec<Cause> {
    let stored = old.is_some_and(|old| old.get("selectors") == spec.get("selectors"));
    let mut errs = selectors(items(spec, "selectors"), "spec.selectors", stored);
    let stored = old.is_some_and(|old| old.get("config") == spec.get("config"));
    errs.extend(each(
        items(spec, "config"),
        MAX_REQUESTS,
        "spec.config",
        None,
        |c, at| opaque_config_stored(c, at, stored),
    ));
    if let Some(name) = spec.get("extendedResourceName").and_then(Value::as_str)
        && !is_extended_resource_name(name)
    {
        errs.push(invalid_value(
            "spec.extendedResourceName",
            &json!(name),
            "must be a valid extended resource name",
        ));
    }
    errs
}

/// Upstream's `IsExtendedResourceName`: outside the native (`kubernetes.io`) domain, and a
/// qualified name once prefixed with `requests.`.
fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native
        && !name.starts_with("requests.")
        && validate_label_key(&format!("requests.{name}")).is_empty()
}

/// Upstream's `ValidateResourceClaimTemplate` spec: the template's metadata, then its claim
/// spec.
pub(super) fn template_spec(spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    if let Some(labels) = meta::path(spec, "metadata.labels") {
        errs.extend(validate_labels(labels, "spec.metadata.labels"));
    }
    if let Some(annotations) = meta::path(spec, "metadata.annotations") {
        errs.extend(validate_annotations(
            annotations,
            "spec.metadata.annotations",
        ));
    }
    errs.extend(claim_spec(
        spec.get("spec").unwrap_or(&Value::Null),
        "spec.spec",
    ));
    errs
}

/// `spec` unchanged, else upstream's `field is immutable` on `spec`.
pub(super) fn immutable_spec(obj: &Value, old: &Value) -> Vec<Cause> {
    if obj.get("spec") == old.get("spec") {
        return Vec::new();
    }
    vec![invalid_rendered("spec", "\"object\"", "field is immutable")]
}

/// Upstream's `validateResourceSliceSpec` (with the stored spec on update).
pub(super) fn slice_spec(spec: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut errs = crate::kinds::storage::csi_driver_name(text(spec, "driver"), "spec.driver");
    let pool = spec.get("pool").unwrap_or(&Value::Null);
    errs.extend(pool_name(text(pool, "name"), "spec.pool.name"));
    let slices = pool
        .get("resourceSliceCount")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if slices <= 0 {
        errs.push(invalid_value(
            "spec.pool.resourceSliceCount",
            &json!(slices),
            "must be greater than zero",
        ));
    }
    let generation = pool.get("generation").and_then(Value::as_i64).unwrap_or(0);
    if generation < 0 {
        errs.push(invalid_value(
            "spec.pool.generation",
            &json!(generation),
            "must be greater than or equal to zero",
        ));
    }
    if let Some(old) = old {
        for (path, new_value, old_value) in [
            (
                "spec.pool.name",
                meta::path(spec, "pool.name"),
                meta::path(old, "pool.name"),
            ),
            ("spec.driver", spec.get("driver"), old.get("driver")),
            ("spec.nodeName", spec.get("nodeName"), old.get("nodeName")),
        ] {
            if new_value != old_value {
                errs.push(invalid_value(
                    path,
                    new_value.unwrap_or(&Value::Null),
                    "field is immutable",
                ));
            }
        }
    }
    errs.extend(node_selection(spec));
    if set(spec, "sharedCounters") && set(spec, "devices") {
        errs.push(invalid_value(
            "spec",
            &json!(""),
            "only one of `sharedCounters` or `devices` is allowed",
        ));
    }
    let per_device = spec.get("perDeviceNodeSelection").and_then(Value::as_bool) == Some(true);
    let devices = items(spec, "devices");
    let advanced = devices
        .iter()
        .any(|d| !items(d, "taints").is_empty() || !items(d, "consumesCounters").is_empty());
    let max_devices = if advanced {
        MAX_DEVICES_WITH_TAINTS_OR_COUNTERS
    } else {
        MAX_DEVICES
    };
    let old_devices = old.map(|o| items(o, "devices")).unwrap_or(&[]);
    errs.extend(each(
        devices,
        max_devices,
        "spec.devices",
        Some(name_of),
        |device, at| {
            let name = name_of(device);
            let old_device = old_devices.iter().find(|d| name_of(d) == name);
            super::slice::device(device, old_device, at, per_device)
        },
    ));
    errs.extend(each(
        items(spec, "sharedCounters"),
        super::slice::MAX_COUNTER_SETS,
        "spec.sharedCounters",
        Some(name_of),
        super::slice::counter_set,
    ));
    errs
}

/// Exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`.
fn node_selection(spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut chosen = Vec::new();
    if let Some(name) = spec.get("nodeName").and_then(Value::as_str) {
        if name.is_empty() {
            errs.push(invalid_value(
                "spec.nodeName",
                &json!(name),
                "must be either unset or set to a non-empty string",
            ));
        } else {
            chosen.push("`nodeName`");
            errs.extend(subdomain(name, "spec.nodeName"));
        }
    }
    if let Some(selector) = spec.get("nodeSelector").filter(|s| !s.is_null()) {
        chosen.push("`nodeSelector`");
        errs.extend(super::slice::node_selector(selector, "spec.nodeSelector"));
        if items(selector, "nodeSelectorTerms").len() != 1 {
            errs.push(invalid_rendered(
                "spec.nodeSelector.nodeSelectorTerms",
                "\"array\"",
                "must have exactly one node selector term",
            ));
        }
    }
    for (field, shown) in [
        ("allNodes", "`allNodes`"),
        ("perDeviceNodeSelection", "`perDeviceNodeSelection`"),
    ] {
        match spec.get(field).and_then(Value::as_bool) {
            Some(true) => chosen.push(shown),
            Some(false) => errs.push(invalid_value(
                &child("spec", field),
                &json!(false),
                "must be either unset or set to true",
            )),
            None => {}
        }
    }
    let required = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required";
    match chosen.len() {
        0 => errs.push(Cause::required("spec", required)),
        1 => {}
        _ => errs.push(invalid_value(
            "spec",
            &json!(format!("{{{}}}", chosen.join(", "))),
            &format!("{required}, but multiple fields are set"),
        )),
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &[Cause]) -> Vec<String> {
        errs.iter().map(Cause::summary).collect()
    }

    #[test]
    fn claim_requests_as_upstream() {
        let spec = json!({"devices": {
            "requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                    "allocationMode": "ExactCount", "count": 1,
                    "selectors": [{"cel": {"expression": "device.driver == 'x'"}}]}},
                {"name": "gpu", "exactly": {"deviceClassName": "", "allocationMode": "All", "count": 2}},
                {"name": "Bad_Name"},
                {"name": "both", "exactly": {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1},
                    "firstAvailable": [{"name": "a", "deviceClassName": "c", "allocationMode": "ExactCount", "count": 1}]},
            ],
            "constraints": [{"requests": ["gpu", "missing"]}],
            "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": []}}],
        }});
        assert_eq!(
            messages(&claim_spec(&spec, "spec")),
            vec![
                "spec.devices.requests[1].exactly.deviceClassName: Required value",
                "spec.devices.requests[1].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
                "spec.devices.requests[2].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.devices.requests[2]: Required value: exactly one of `exactly` or `firstAvailable` is required",
                "spec.devices.requests[3]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
                "spec.devices.requests[1]: Duplicate value: \"gpu\"",
                "spec.devices.constraints[0].requests[1]: Invalid value: \"missing\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
                "spec.devices.constraints[0].matchAttribute: Required value",
                "spec.devices.config[0].opaque.parameters: Invalid value: \"<value omitted>\": must be a valid JSON object",
            ]
        );
    }

    #[test]
    fn classes_name_extended_resources_and_compile_selectors() {
        let spec = json!({"extendedResourceName": "gpu",
            "selectors": [{"cel": {"expression": "device.driver == 'a'"}}, {"cel": {"expression": "device.x"}}]});
        let got = messages(&class_spec(&spec, None));
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].starts_with("spec.selectors[1].cel.expression: Invalid value: \"device.x\": compilation failed: ERROR: <input>:1:7: undefined field 'x'"), "{got:?}");
        assert_eq!(
            got[1],
            "spec.extendedResourceName: Invalid value: \"gpu\": must be a valid extended resource name"
        );
        // Unchanged selectors are not compiled again on update; changed ones are.
        assert_eq!(messages(&class_spec(&spec, Some(&spec))).len(), 1);
        let fine = json!({"extendedResourceName": "example.com/gpu"});
        assert!(class_spec(&fine, Some(&spec)).is_empty());
    }

    #[test]
    fn slices_choose_one_node_selection() {
        let spec = json!({"driver": "gpu.example.com", "pool": {"name": "p", "resourceSliceCount": 1},
            "nodeName": "n1", "allNodes": true,
            "devices": [{"name": "d0"}, {"name": "d0", "nodeName": "x"}]});
        assert_eq!(
            messages(&slice_spec(&spec, None)),
            vec![
                "spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
                "spec.devices[1]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
                "spec.devices[1]: Duplicate value: \"d0\"",
            ]
        );
        let empty = json!({"pool": {}});
        assert_eq!(
            messages(&slice_spec(&empty, None)),
            vec![
                "spec.driver: Required value",
                "spec.driver: Invalid value: \"\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.pool.name: Required value",
                "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
                "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
            ]
        );
        let old = json!({"driver": "a.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "allNodes": true});
        let mut new = old.clone();
        new["driver"] = json!("b.example.com");
        assert_eq!(
            messages(&slice_spec(&new, Some(&old))),
            vec!["spec.driver: Invalid value: \"b.example.com\": field is immutable"]
        );
    }
}
