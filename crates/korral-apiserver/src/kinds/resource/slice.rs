//! The devices of a ResourceSlice as upstream's `validateDevice` checks them: names,
//! attributes (qualified names, exactly one typed value, string and semver limits), capacities
//! (and consumable-capacity request policies), taints, counter consumption, per-device node
//! selection and binding conditions; and the slice's shared counter sets.

use serde_json::{Value, json};

use super::validation::{each, items, label, name_of, set, text, too_many, unsupported};
use crate::error::Cause;
use crate::quantity::{self, Quantity};
use crate::validation::enums;
use crate::validation::names::{
    child, index, invalid_rendered, invalid_value, key, too_long, validate_label_key,
    validate_label_value,
};

/// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`.
const MAX_ATTRIBUTES_AND_CAPACITIES: usize = 32;
/// `DeviceMaxIDLength`.
const MAX_ID: usize = 32;
/// `DeviceMaxDomainLength`.
const MAX_DOMAIN: usize = 63;
/// `DeviceAttributeMaxValueLength`.
const MAX_ATTRIBUTE_VALUE: usize = 64;
/// `DeviceTaintsMaxLength`.
const MAX_TAINTS: usize = 16;
/// `ResourceSliceMaxDeviceCounterConsumptionsPerDevice`.
const MAX_CONSUMPTIONS: usize = 2;
/// `ResourceSliceMaxCountersPerDeviceCounterConsumption` (and per counter set).
const MAX_COUNTERS: usize = 32;
/// `ResourceSliceMaxCounterSets`.
pub(super) const MAX_COUNTER_SETS: usize = 8;
/// `BindingConditionsMaxSize` and `BindingFailureConditionsMaxSize`.
const MAX_BINDING_CONDITIONS: usize = 4;
/// `CapacityRequestPolicyDiscreteMaxOptions`.
const MAX_VALID_VALUES: usize = 10;

/// Upstream's `truncateIfTooLong` for map keys in field paths.
fn truncated(s: &str, max: usize) -> String {
    let max = max.max(16);
    if s.len() <= max || !s.is_ascii() {
        return s.to_string();
    }
    let remaining = max - 3;
    format!(
        "{}...{}",
        &s[..remaining.div_ceil(2)],
        &s[s.len() - remaining / 2..]
    )
}

/// The entries of the map at `field` of `obj`.
fn entries<'a>(obj: &'a Value, field: &str) -> Vec<(&'a String, &'a Value)> {
    obj.get(field)
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default()
}

/// `validateCIdentifier`.
fn c_identifier(id: &str, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if id.len() > MAX_ID {
        errs.push(too_long(path, MAX_ID as i64));
    }
    let b = id.as_bytes();
    let ok = b
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if !ok {
        errs.push(invalid_value(
            path,
            &json!(id),
            "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')",
        ));
    }
    errs
}

/// `validateQualifiedName`: `id` or `domain/id` (errors on the map's path, as upstream).
pub(super) fn qualified_name(name: &str, path: &str) -> Vec<Cause> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [id] => c_identifier(id, path),
        [domain, id] => {
            let mut errs = Vec::new();
            if domain.is_empty() {
                errs.push(invalid_value(
                    path,
                    &json!(""),
                    "the domain must not be empty",
                ));
            } else {
                errs.extend(crate::kinds::storage::csi_driver_name(domain, path));
            }
            if id.is_empty() {
                errs.push(invalid_value(
                    path,
                    &json!(""),
                    "the name must not be empty",
                ));
            } else {
                errs.extend(c_identifier(id, path));
            }
            errs
        }
        _ => vec![invalid_value(
            path,
            &json!(name),
            "must not contain more than one slash",
        )],
    }
}

/// `validateFullyQualifiedName`: a qualified name that has a domain.
pub(super) fn fully_qualified_name(name: &str, path: &str) -> Vec<Cause> {
    let mut errs = qualified_name(name, path);
    if !name.contains('/') {
        errs.push(invalid_value(
            path,
            &json!(name),
            "a fully qualified name must be a domain and a name separated by a slash",
        ));
    }
    errs
}

/// Matches semver.org 2.0.0 as upstream's `semverRe`.
fn is_semver(v: &str) -> bool {
    let numeric = |s: &str| {
        !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
    };
    let ident_ok =
        |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-');
    let (rest, build) = match v.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (v, None),
    };
    if let Some(build) = build
        && !build.split('.').all(ident_ok)
    {
        return false;
    }
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    if let Some(pre) = pre {
        let pre_ok = pre
            .split('.')
            .all(|p| ident_ok(p) && (numeric(p) || !p.bytes().all(|c| c.is_ascii_digit())));
        if !pre_ok {
            return false;
        }
    }
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| numeric(p))
}

/// `validateDeviceAttribute`: exactly one of `bool`, `int`, `string`, `version`.
fn attribute(attr: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut fields = 0;
    if set(attr, "bool") {
        fields += 1;
    }
    if set(attr, "int") {
        fields += 1;
    }
    if let Some(s) = attr.get("string").filter(|v| !v.is_null()) {
        fields += 1;
        if s.as_str().unwrap_or("").len() > MAX_ATTRIBUTE_VALUE {
            errs.push(too_long(&child(path, "string"), MAX_ATTRIBUTE_VALUE as i64));
        }
    }
    if let Some(v) = attr.get("version").filter(|v| !v.is_null()) {
        fields += 1;
        let v = v.as_str().unwrap_or("");
        let at = child(path, "version");
        if !is_semver(v) {
            errs.push(invalid_value(
                &at,
                &json!(v),
                "must be a string compatible with semver.org spec 2.0.0",
            ));
        }
        if v.len() > MAX_ATTRIBUTE_VALUE {
            errs.push(too_long(&at, MAX_ATTRIBUTE_VALUE as i64));
        }
    }
    match fields {
        0 => errs.push(invalid_value(
            path,
            &json!(""),
            "exactly one value must be specified",
        )),
        1 => {}
        _ => errs.push(invalid_value(
            path,
            attr,
            "exactly one value must be specified",
        )),
    }
    errs
}

/// A quantity field, parsed (the decoder already refused malformed ones).
fn quantity_at(obj: &Value, field: &str) -> Option<Quantity> {
    obj.get(field)
        .filter(|v| !v.is_null())
        .and_then(|v| quantity::from_json(v).ok())
}

/// `validateRequestPolicy` (only for devices that allow multiple allocations).
fn request_policy(capacity: &Quantity, policy: &Value, path: &str) -> Vec<Cause> {
    let valid_values = items(policy, "validValues");
    let range = policy.get("validRange").filter(|r| !r.is_null());
    if !valid_values.is_empty() && range.is_some() {
        return vec![Cause::forbidden(
            path,
            "exactly one policy can be specified, cannot specify \"validValues\" and \"validRange\" at the same time",
        )];
    }
    let default = quantity_at(policy, "default");
    let mut errs = Vec::new();
    if !valid_values.is_empty() {
        let Some(default) = default else {
            return vec![Cause::required(
                child(path, "default"),
                "required when validValues is defined",
            )];
        };
        let at = child(path, "validValues");
        let values: Vec<Option<Quantity>> = valid_values
            .iter()
            .map(quantity::from_json)
            .map(Result::ok)
            .collect();
        for i in 0..values.len().saturating_sub(1) {
            if let (Some(a), Some(b)) = (&values[i], &values[i + 1])
                && a.cmp(b).is_gt()
            {
                errs.push(invalid_value(
                    &index(&at, i + 1),
                    &json!(b.canonical()),
                    "values must be sorted in ascending order",
                ));
            }
        }
        if values.len() > MAX_VALID_VALUES {
            errs.push(too_many(&at, values.len(), MAX_VALID_VALUES));
            return errs;
        }
        let mut found = false;
        let mut seen: Vec<String> = Vec::new();
        for (i, value) in values.iter().enumerate() {
            let Some(value) = value else { continue };
            if value.cmp(capacity).is_gt() {
                errs.push(invalid_value(
                    &index(&at, i),
                    &json!(value.canonical()),
                    &format!(
                        "option is larger than capacity value: {}",
                        capacity.canonical()
                    ),
                ));
            }
            if value.cmp(&default).is_eq() {
                found = true;
            }
            let k = value.canonical();
            if seen.contains(&k) {
                errs.push(Cause::duplicate(index(&at, i), &json!(k)));
            } else {
                seen.push(k);
            }
        }
        if !found {
            errs.push(invalid_value(
                &at,
                &json!(default.canonical()),
                "default value is not valid according to the requestPolicy",
            ));
        }
    } else if let Some(range) = range {
        let Some(default) = default else {
            return vec![Cause::required(
                child(path, "default"),
                "required when validRange is defined",
            )];
        };
        let at = child(path, "validRange");
        let Some(min) = quantity_at(range, "min") else {
            return vec![Cause::required(
                child(&at, "min"),
                "required when validRange is defined",
            )];
        };
        if min.cmp(capacity).is_gt() {
            errs.push(invalid_value(
                &child(&at, "min"),
                &json!(min.canonical()),
                &format!(
                    "min is larger than capacity value: {}",
                    capacity.canonical()
                ),
            ));
        }
        if default.cmp(&min).is_lt() {
            errs.push(invalid_value(
                &child(&at, "default"),
                &json!(default.canonical()),
                &format!("default is less than min: {}", min.canonical()),
            ));
        }
        if let Some(max) = quantity_at(range, "max") {
            if min.cmp(&max).is_gt() {
                errs.push(invalid_value(
                    &child(&at, "max"),
                    &json!(min.canonical()),
                    &format!("min is larger than max: {}", max.canonical()),
                ));
            }
            if max.cmp(capacity).is_gt() {
                errs.push(invalid_value(
                    &child(&at, "max"),
                    &json!(max.canonical()),
                    &format!(
                        "max is larger than capacity value: {}",
                        capacity.canonical()
                    ),
                ));
            }
            if default.cmp(&max).is_gt() {
                errs.push(invalid_value(
                    &child(&at, "default"),
                    &json!(default.canonical()),
                    &format!("default is more than max: {}", max.canonical()),
                ));
            }
        }
        if let Some(step) = quantity_at(range, "step") {
            let step_at = child(&at, "step");
            if step.is_negative() || step.is_zero() {
                errs.push(invalid_value(
                    &step_at,
                    &json!(step.canonical()),
                    "must be greater than zero",
                ));
            } else if let Some(added) = min.checked_add(&step) {
                if added.cmp(capacity).is_gt() {
                    errs.push(invalid_value(
                        &step_at,
                        &json!(step.canonical()),
                        &format!(
                            "one step {} is larger than capacity value: {}",
                            added.canonical(),
                            capacity.canonical()
                        ),
                    ));
                }
                let mut targets = vec![default.clone()];
                targets.extend(quantity_at(range, "max"));
                for value in targets {
                    if !on_step(&value, &min, &step) {
                        errs.push(invalid_value(
                            &step_at,
                            &json!(value.canonical()),
                            &format!(
                                "value is not a multiple of a given step ({}) from ({})",
                                step.canonical(),
                                min.canonical()
                            ),
                        ));
                    }
                }
            }
        }
    }
    errs
}

/// Whether `value - min` is a whole number of `step`s (in integer units, as upstream's
/// `Quantity.Value()` arithmetic; values beyond exact float integers are let through).
fn on_step(value: &Quantity, min: &Quantity, step: &Quantity) -> bool {
    let whole = |q: &Quantity| q.canonical_f64().ceil();
    let (v, m, s) = (whole(value), whole(min), whole(step));
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if [v, m, s].iter().any(|x| x.abs() >= EXACT) || s == 0.0 {
        return true;
    }
    ((v - m) % s) == 0.0
}

/// `validateDeviceTaint` (the effect only when new or changed).
pub(super) fn taint(taint: &Value, old: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let k = text(taint, "key");
    for msg in validate_label_key(k) {
        errs.push(invalid_value(&child(path, "key"), &json!(k), &msg));
    }
    let value = text(taint, "value");
    if !value.is_empty() {
        for msg in validate_label_value(value) {
            errs.push(invalid_value(&child(path, "value"), &json!(value), &msg));
        }
    }
    let effect = text(taint, "effect");
    if old.is_none_or(|o| text(o, "effect") != effect) {
        if effect.is_empty() {
            errs.push(Cause::required(child(path, "effect"), ""));
        } else if !enums::DEVICE_TAINT_EFFECT.contains(effect) {
            errs.push(unsupported(
                child(path, "effect"),
                effect,
                &enums::DEVICE_TAINT_EFFECT,
            ));
        }
    }
    errs
}

/// `validateDeviceBindingParameters`.
pub(super) fn binding_parameters(holder: &Value, path: &str) -> Vec<Cause> {
    let conditions = items(holder, "bindingConditions");
    let failures = items(holder, "bindingFailureConditions");
    let mut errs = Vec::new();
    for (field, list) in [
        ("bindingConditions", conditions),
        ("bindingFailureConditions", failures),
    ] {
        errs.extend(each(
            list,
            MAX_BINDING_CONDITIONS,
            &child(path, field),
            None,
            |c, at| {
                let c = c.as_str().unwrap_or("");
                validate_label_key(c)
                    .into_iter()
                    .map(|msg| invalid_value(at, &json!(c), &msg))
                    .collect()
            },
        ));
    }
    let strings = |l: &[Value]| -> Vec<String> {
        l.iter()
            .map(|v| v.as_str().unwrap_or("").to_string())
            .collect()
    };
    let (conditions, failures) = (strings(conditions), strings(failures));
    for (i, c) in conditions.iter().enumerate() {
        if conditions[..i].contains(c) {
            errs.push(Cause::duplicate(
                index(&child(path, "bindingConditions"), i),
                &json!(c),
            ));
        }
    }
    for (i, c) in failures.iter().enumerate() {
        let at = index(&child(path, "bindingFailureConditions"), i);
        if failures[..i].contains(c) {
            errs.push(Cause::duplicate(at.clone(), &json!(c)));
        }
        if conditions.contains(c) {
            errs.push(invalid_value(
                &at,
                &json!(c),
                "bindingFailureConditions must not overlap with bindingConditions",
            ));
        }
    }
    if conditions.is_empty() && !failures.is_empty() {
        errs.push(invalid_rendered(
            &child(path, "bindingConditions"),
            "[]",
            "bindingConditions are required to use bindingFailureConditions",
        ));
    }
    if failures.is_empty() && !conditions.is_empty() {
        errs.push(invalid_rendered(
            &child(path, "bindingFailureConditions"),
            "[]",
            "bindingFailureConditions are required to use bindingConditions",
        ));
    }
    errs
}

/// A map of counters (`counters` of a counter set or of a consumption): at most
/// [`MAX_COUNTERS`], DNS-label names.
fn counters(holder: &Value, path: &str) -> Vec<Cause> {
    let at = child(path, "counters");
    let map = entries(holder, "counters");
    if map.is_empty() {
        return vec![Cause::required(at, "")];
    }
    if map.len() > MAX_COUNTERS {
        return vec![too_many(&at, map.len(), MAX_COUNTERS)];
    }
    map.iter()
        .flat_map(|(name, _)| counter_name(name, &at))
        .collect()
}

/// `validateCounterName`: a DNS label.
fn counter_name(name: &str, path: &str) -> Vec<Cause> {
    label(name, path)
}

/// `validateCounterSet` of `spec.sharedCounters`.
pub(super) fn counter_set(set_: &Value, path: &str) -> Vec<Cause> {
    let mut errs = counter_name(name_of(set_), &child(path, "name"));
    errs.extend(counters(set_, path));
    errs
}

/// `validateDeviceCounterConsumption`.
fn consumption(c: &Value, path: &str) -> Vec<Cause> {
    let mut errs = counter_name(text(c, "counterSet"), &child(path, "counterSet"));
    errs.extend(counters(c, path));
    errs
}

/// Upstream's `validateDevice`, with the stored device of the same name on update.
pub(super) fn device(
    device: &Value,
    old: Option<&Value>,
    path: &str,
    per_device: bool,
) -> Vec<Cause> {
    let mut errs = label(name_of(device), &child(path, "name"));
    let attributes = entries(device, "attributes");
    let capacity = entries(device, "capacity");
    let total = attributes.len() + capacity.len();
    if total > MAX_ATTRIBUTES_AND_CAPACITIES {
        errs.push(invalid_value(
            path,
            &json!(total),
            &format!(
                "the total number of attributes and capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}"
            ),
        ));
    }
    let key_len = MAX_DOMAIN + 1 + MAX_ID;
    let attributes_at = child(path, "attributes");
    for (name, attr) in &attributes {
        errs.extend(qualified_name(name, &attributes_at));
        errs.extend(attribute(
            attr,
            &key(&attributes_at, &truncated(name, key_len)),
        ));
    }
    if old.is_none_or(|o| o.get("capacity") != device.get("capacity")) {
        let multiple = device
            .get("allowMultipleAllocations")
            .and_then(Value::as_bool)
            == Some(true);
        let capacity_at = child(path, "capacity");
        for (name, cap) in &capacity {
            errs.extend(qualified_name(name, &capacity_at));
            let Some(policy) = cap.get("requestPolicy").filter(|p| !p.is_null()) else {
                continue;
            };
            let at = child(
                &key(&capacity_at, &truncated(name, key_len)),
                "requestPolicy",
            );
            if !multiple {
                errs.push(Cause::forbidden(
                    at,
                    "allowMultipleAllocations must be true",
                ));
            } else if let Some(value) = quantity_at(cap, "value") {
                errs.extend(request_policy(&value, policy, &at));
            }
        }
    }
    if old.is_none_or(|o| o.get("taints") != device.get("taints")) {
        errs.extend(each(
            items(device, "taints"),
            MAX_TAINTS,
            &child(path, "taints"),
            None,
            |t, at| taint(t, None, at),
        ));
    }
    errs.extend(each(
        items(device, "consumesCounters"),
        MAX_CONSUMPTIONS,
        &child(path, "consumesCounters"),
        Some(|c: &Value| text(c, "counterSet")),
        consumption,
    ));
    errs.extend(device_node_selection(device, path, per_device));
    errs.extend(binding_parameters(device, path));
    errs
}

/// A device's own node selection, allowed only with `perDeviceNodeSelection`.
fn device_node_selection(device: &Value, path: &str, per_device: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    if !per_device {
        if ["nodeName", "nodeSelector", "allNodes"]
            .iter()
            .any(|f| set(device, f))
        {
            errs.push(invalid_rendered(
                path,
                "null",
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            ));
        }
        return errs;
    }
    let mut chosen = Vec::new();
    if let Some(name) = device.get("nodeName").and_then(Value::as_str) {
        if name.is_empty() {
            errs.push(invalid_value(
                &child(path, "nodeName"),
                &json!(name),
                "must not be empty",
            ));
        } else {
            chosen.push("`nodeName`");
            for msg in crate::validation::names::dns1123_subdomain(name) {
                errs.push(invalid_value(&child(path, "nodeName"), &json!(name), &msg));
            }
        }
    }
    if let Some(selector) = device.get("nodeSelector").filter(|s| !s.is_null()) {
        chosen.push("`nodeSelector`");
        errs.extend(node_selector(selector, &child(path, "nodeSelector")));
    }
    match device.get("allNodes").and_then(Value::as_bool) {
        Some(true) => chosen.push("`allNodes`"),
        Some(false) => errs.push(invalid_value(
            &child(path, "allNodes"),
            &json!(false),
            "must be either unset or set to true",
        )),
        None => {}
    }
    let message = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec";
    match chosen.len() {
        0 => errs.push(Cause::required(path, message)),
        1 => {}
        _ => errs.push(invalid_value(
            path,
            &json!(format!("{{{}}}", chosen.join(", "))),
            message,
        )),
    }
    errs
}

/// `ValidateNodeSelector` (label values checked).
pub(super) fn node_selector(selector: &Value, path: &str) -> Vec<Cause> {
    let terms = items(selector, "nodeSelectorTerms");
    let at = child(path, "nodeSelectorTerms");
    if terms.is_empty() {
        return vec![Cause::required(
            at,
            "must have at least one node selector term",
        )];
    }
    let mut errs = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        crate::validation::podspec::node_selector_term(term, true, &index(&at, i), &mut errs);
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
    fn semver_as_upstream() {
        for ok in [
            "1.2.3",
            "0.0.0",
            "1.0.0-alpha.1",
            "1.0.0+build.5",
            "1.0.0-rc-1+b",
        ] {
            assert!(is_semver(ok), "{ok}");
        }
        for bad in [
            "1.2", "01.2.3", "1.2.3-", "1.2.3-01", "v1.2.3", "1.2.3+", "",
        ] {
            assert!(!is_semver(bad), "{bad}");
        }
    }

    #[test]
    fn devices_as_upstream() {
        let device = json!({
            "name": "gpu-0",
            "attributes": {
                "model": {"string": "a100"},
                "gpu.example.com/driverVersion": {"version": "1.2"},
                "bad-name": {"int": 1},
                "both": {"int": 1, "bool": true},
                "none": {},
                "long": {"string": "x".repeat(65)},
            },
            "capacity": {"memory": {"value": "40Gi", "requestPolicy": {"default": "1Gi"}}},
            "taints": [{"key": "k", "effect": "Sometimes"}, {"key": "bad key", "effect": ""}],
            "consumesCounters": [{"counterSet": "Set", "counters": {}}],
            "bindingConditions": ["ready"],
        });
        assert_eq!(
            messages(&super::device(&device, None, "spec.devices[0]", false)),
            vec![
                "spec.devices[0].attributes: Invalid value: \"bad-name\": a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')",
                "spec.devices[0].attributes[both]: Invalid value: {\"bool\":true,\"int\":1}: exactly one value must be specified",
                "spec.devices[0].attributes[gpu.example.com/driverVersion].version: Invalid value: \"1.2\": must be a string compatible with semver.org spec 2.0.0",
                "spec.devices[0].attributes[long].string: Too long: may not be more than 64 bytes",
                "spec.devices[0].attributes[none]: Invalid value: \"\": exactly one value must be specified",
                "spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true",
                "spec.devices[0].taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoExecute\", \"NoSchedule\", \"None\"",
                "spec.devices[0].taints[1].key: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.devices[0].taints[1].effect: Required value",
                "spec.devices[0].consumesCounters[0].counterSet: Invalid value: \"Set\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.devices[0].consumesCounters[0].counters: Required value",
                "spec.devices[0].bindingFailureConditions: Invalid value: []: bindingFailureConditions are required to use bindingConditions",
            ]
        );
    }

    #[test]
    fn request_policies_as_upstream() {
        let device = json!({
            "name": "nic",
            "allowMultipleAllocations": true,
            "capacity": {
                "bandwidth": {"value": "10G", "requestPolicy": {
                    "default": "1G", "validRange": {"min": "2G", "max": "21G", "step": "3G"}}},
                "queues": {"value": "8", "requestPolicy": {
                    "default": "3", "validValues": ["4", "2", "16"]}},
            },
        });
        assert_eq!(
            messages(&super::device(&device, None, "d", false)),
            vec![
                "d.capacity[bandwidth].requestPolicy.validRange.default: Invalid value: \"1G\": default is less than min: 2G",
                "d.capacity[bandwidth].requestPolicy.validRange.max: Invalid value: \"21G\": max is larger than capacity value: 10G",
                "d.capacity[bandwidth].requestPolicy.validRange.step: Invalid value: \"1G\": value is not a multiple of a given step (3G) from (2G)",
                "d.capacity[bandwidth].requestPolicy.validRange.step: Invalid value: \"21G\": value is not a multiple of a given step (3G) from (2G)",
                "d.capacity[queues].requestPolicy.validValues[1]: Invalid value: \"2\": values must be sorted in ascending order",
                "d.capacity[queues].requestPolicy.validValues[2]: Invalid value: \"16\": option is larger than capacity value: 8",
                "d.capacity[queues].requestPolicy.validValues: Invalid value: \"3\": default value is not valid according to the requestPolicy",
            ]
        );
    }

    #[test]
    fn per_device_node_selection() {
        let device = json!({"name": "d", "nodeName": "n1", "allNodes": true});
        assert_eq!(
            messages(&super::device(&device, None, "d", true)),
            vec![
                "d: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
            ]
        );
        let none = json!({"name": "d"});
        assert_eq!(
            messages(&super::device(&none, None, "d", true)),
            vec![
                "d: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
            ]
        );
    }
}
