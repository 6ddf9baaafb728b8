//! `v1/Node`: upstream's node strategy (`pkg/registry/core/node/strategy.go`) and its
//! `ValidateNode` / `ValidateNodeUpdate`: taints, capacity and allocatable quantities, pod CIDRs
//! (one per IP family, set once), the provider ID (set once), the external ID (fixed), unique
//! status addresses, the removed dynamic kubelet config (`configSource`, `status.config`) and the
//! legacy `scheduler.alpha.kubernetes.io/taints` annotation.
//!
//! Nodes may carry their status on create. Through `/status` only `ValidateNodeUpdate` runs;
//! through the main resource `ValidateNode` runs too, so some causes (resources, taints) are
//! reported twice, as upstream does. Upstream's own path quirk is kept: spec taints are reported
//! under `metadata.taints`.

use serde_json::{Value, json};

use crate::error::{ApiError, Cause};
use crate::kinds::strategy::{Context, Strategy};
use crate::objects::FieldValidation;
use crate::quantity;
use crate::registry::ResourceInfo;
use crate::validation::enums::{self, Order};
use crate::validation::names::{
    NEGATIVE, dns1123_label, dns1123_subdomain, go_quote, go_string_slice, index, invalid_rendered,
    validate_label_key, validate_label_value,
};
use crate::validation::network::{CIDR_MESSAGE, parse_cidr_sloppy};
use crate::validation::podspec::config_map_key;

/// A naming rule: the messages for a value that breaks it.
type NameRule = fn(&str) -> Vec<String>;

/// The strategy of `v1/Node`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeStrategy;

/// Standard resources whose quantities must be whole (`IsIntegerResourceName` beside extended
/// resources).
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

impl Strategy for NodeStrategy {
    fn prepare_for_create(&self, _info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        // Nodes allow every field, status included, on create; the removed dynamic kubelet
        // configuration is dropped.
        remove(obj, "spec", "configSource");
        remove(obj, "status", "config");
    }

    fn prepare_for_update(&self, obj: &mut Value, old: &Value) {
        if at(old, "spec", "configSource").is_none() {
            remove(obj, "spec", "configSource");
        }
    }

    fn prepare_for_subresource_update(&self, subresource: &str, obj: &mut Value, old: &Value) {
        if subresource == "status" && at(old, "status", "config").is_none() {
            remove(obj, "status", "config");
        }
    }

    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        if let Some(status) = obj.get_mut("status").filter(|s| s.is_object()) {
            for list in ["capacity", "allocatable"] {
                if let Some(resources) = status.get_mut(list) {
                    quantity::canonicalize_resource_list(resources)
                        .map_err(|e| quantity::undecodable(info, e))?;
                }
            }
        }
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        // `SetDefaults_NodeStatus`: allocatable defaults to the capacity.
        if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut)
            && status.get("allocatable").is_none_or(Value::is_null)
            && let Some(capacity) = status.get("capacity").filter(|c| !c.is_null()).cloned()
        {
            status.insert("allocatable".into(), capacity);
        }
    }

    fn canonicalize(&self, obj: &mut Value) {
        // The v1 shape round-trips through upstream's internal one: `podCIDRs` from a lone
        // `podCIDR`, and `podCIDR` is always the first of `podCIDRs`.
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        let first = spec
            .get("podCIDRs")
            .and_then(Value::as_array)
            .and_then(|l| l.first())
            .cloned();
        match first {
            Some(first) => {
                spec.insert("podCIDR".into(), first);
            }
            None => {
                if let Some(cidr) = spec
                    .get("podCIDR")
                    .filter(|c| c.as_str().is_some_and(|s| !s.is_empty()))
                    .cloned()
                {
                    spec.insert("podCIDRs".into(), json!([cidr]));
                }
            }
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_node(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return validate_node_update(obj, old);
        }
        let mut errs = validate_node(obj);
        errs.extend(validate_node_update(obj, old));
        errs
    }

    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        let mut warnings = Vec::new();
        if at(obj, "spec", "configSource").is_some() {
            warnings.push("spec.configSource: the feature is removed".to_string());
        }
        if !text(at(obj, "spec", "externalID")).is_empty() {
            warnings.push(
                "spec.externalID: this field is deprecated, and is unused by Kubernetes"
                    .to_string(),
            );
        }
        warnings
    }
}

/// `obj[outer][inner]`, null being absent.
fn at<'a>(obj: &'a Value, outer: &str, inner: &str) -> Option<&'a Value> {
    obj.get(outer)?.get(inner).filter(|v| !v.is_null())
}

fn remove(obj: &mut Value, outer: &str, inner: &str) {
    if let Some(map) = obj.get_mut(outer).and_then(Value::as_object_mut) {
        map.remove(inner);
    }
}

fn text(value: Option<&Value>) -> &str {
    value.and_then(Value::as_str).unwrap_or("")
}

fn list(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The internal `spec.podCIDRs`: the v1 list, or the lone `podCIDR`.
fn pod_cidrs(obj: &Value) -> Vec<&str> {
    let cidrs: Vec<&str> = list(at(obj, "spec", "podCIDRs"))
        .iter()
        .map(|v| v.as_str().unwrap_or(""))
        .collect();
    if cidrs.is_empty() {
        let single = text(at(obj, "spec", "podCIDR"));
        if !single.is_empty() {
            return vec![single];
        }
    }
    cidrs
}

/// Upstream's `ValidateNode` (object metadata aside: the store checks it).
fn validate_node(obj: &Value) -> Vec<Cause> {
    let mut errs = validate_node_annotations(obj);
    let taints = list(at(obj, "spec", "taints"));
    if !taints.is_empty() {
        errs.extend(validate_taints(taints, "metadata.taints"));
    }
    errs.extend(validate_resources(obj));
    let cidrs = pod_cidrs(obj);
    if cidrs.is_empty() {
        return errs;
    }
    let path = "spec.podCIDRs";
    let parsed: Vec<_> = cidrs.iter().map(|c| parse_cidr_sloppy(c)).collect();
    for (i, (cidr, net)) in cidrs.iter().zip(&parsed).enumerate() {
        if net.is_none() {
            errs.push(invalid_rendered(
                &index(path, i),
                &go_quote(cidr),
                CIDR_MESSAGE,
            ));
        }
    }
    if cidrs.len() > 1 {
        let bad = cidrs.iter().zip(&parsed).find(|(_, net)| net.is_none());
        if let Some((cidr, _)) = bad {
            errs.push(Cause::new(
                "InternalError",
                path,
                format!(
                    "Internal error: invalid PodCIDRs. failed to check with dual stack with error:invalid CIDR address: {cidr}"
                ),
            ));
        }
        let v4 = parsed.iter().flatten().any(|(ip, _)| ip.is_ipv4());
        let v6 = parsed.iter().flatten().any(|(ip, _)| ip.is_ipv6());
        let dual_stack = bad.is_none() && v4 && v6;
        if !dual_stack || cidrs.len() > 2 {
            errs.push(invalid_rendered(
                path,
                &go_string_slice(&cidrs),
                "may specify no more than one CIDR for each IP family",
            ));
        }
        for (i, cidr) in cidrs.iter().enumerate() {
            if cidrs[..i].contains(cidr) {
                errs.push(Cause::duplicate(index(path, i), &json!(cidr)));
            }
        }
    }
    errs
}

/// The legacy annotation holding serialized taints.
const TAINTS_ANNOTATION: &str = "scheduler.alpha.kubernetes.io/taints";

/// Upstream's `ValidateNodeSpecificAnnotations` for the taints annotation: JSON taints (Go's
/// decoding error otherwise), each valid as a spec taint.
fn validate_node_annotations(obj: &Value) -> Vec<Cause> {
    let raw = text(at(obj, "metadata", "annotations").and_then(|a| a.get(TAINTS_ANNOTATION)));
    if raw.is_empty() {
        return Vec::new();
    }
    match annotation_taints(raw) {
        Err(msg) => vec![invalid_rendered(
            "metadata.annotations",
            &go_quote(TAINTS_ANNOTATION),
            &msg,
        )],
        Ok(taints) if taints.is_empty() => Vec::new(),
        Ok(taints) => validate_taints(
            &taints,
            &format!("metadata.annotations.{TAINTS_ANNOTATION}"),
        ),
    }
}

/// Go's name of a JSON value's type in `cannot unmarshal X into ...`.
fn go_json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The taints of the annotation as Go's `json.Unmarshal` into `[]core.Taint` reads them (field
/// names matched case-insensitively), or Go's error.
fn annotation_taints(raw: &str) -> Result<Vec<Value>, String> {
    super::go_json::check(raw.as_bytes())?;
    let value: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type []core.Taint",
                go_json_type(&other)
            ));
        }
    };
    let mut taints = Vec::with_capacity(items.len());
    for item in items {
        let mut taint = serde_json::Map::new();
        match item {
            Value::Null => {}
            Value::Object(fields) => {
                for (name, value) in fields {
                    let Some(field) = ["key", "value", "effect", "timeAdded"]
                        .into_iter()
                        .find(|f| f.eq_ignore_ascii_case(&name))
                    else {
                        continue;
                    };
                    if field != "timeAdded" && !value.is_string() && !value.is_null() {
                        return Err(format!(
                            "json: cannot unmarshal {} into Go struct field Taint.{field} of type string",
                            go_json_type(&value)
                        ));
                    }
                    taint.insert(field.to_string(), value);
                }
            }
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type core.Taint",
                    go_json_type(&other)
                ));
            }
        }
        taints.push(Value::Object(taint));
    }
    Ok(taints)
}

/// Upstream's `validateNodeTaints`: qualified keys, label values, a known effect, unique by key
/// and effect.
fn validate_taints(taints: &[Value], path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (i, taint) in taints.iter().enumerate() {
        let at_i = index(path, i);
        let key = text(taint.get("key"));
        for msg in validate_label_key(key) {
            errs.push(invalid_rendered(
                &format!("{at_i}.key"),
                &go_quote(key),
                &msg,
            ));
        }
        let value = text(taint.get("value"));
        let msgs = validate_label_value(value);
        if !msgs.is_empty() {
            errs.push(invalid_rendered(
                &format!("{at_i}.value"),
                &go_quote(value),
                &msgs.join(";"),
            ));
        }
        let effect = text(taint.get("effect"));
        if effect.is_empty() {
            errs.push(Cause::required(format!("{at_i}.effect"), ""));
        } else if !enums::TAINT_EFFECT.contains(effect) {
            errs.push(enums::TAINT_EFFECT.not_supported(
                format!("{at_i}.effect"),
                &json!(effect),
                Order::Declared,
            ));
        }
        if seen.contains(&(key, effect)) {
            let added = if taint.get("timeAdded").is_some_and(|t| !t.is_null()) {
                "(*v1.Time)(0xc000000000)"
            } else {
                "(*v1.Time)(nil)"
            };
            errs.push(Cause::new(
                "FieldValueDuplicate",
                at_i,
                format!(
                    "Duplicate value: core.Taint{{Key:{}, Value:{}, Effect:{}, TimeAdded:{added}}}: taints must be unique by key and effect pair",
                    go_quote(key),
                    go_quote(value),
                    go_quote(effect)
                ),
            ));
            continue;
        }
        seen.push((key, effect));
    }
    errs
}

/// Upstream's `ValidateNodeResources`: capacity and allocatable quantities not negative, whole
/// for integer resources. Paths name the resource as a child (`status.capacity.cpu`).
fn validate_resources(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    for list in ["capacity", "allocatable"] {
        let Some(resources) = at(obj, "status", list).and_then(Value::as_object) else {
            continue;
        };
        for (name, value) in resources {
            let path = format!("status.{list}.{name}");
            let Ok(q) = quantity::from_json(value) else {
                continue;
            };
            if q.is_negative() {
                errs.push(invalid_rendered(&path, &go_quote(&q.canonical()), NEGATIVE));
            }
            if is_integer_resource(name) && !q.is_integer() {
                errs.push(invalid_rendered(
                    &path,
                    &go_quote(&q.canonical()),
                    "must be an integer",
                ));
            }
        }
    }
    errs
}

/// `IsIntegerResourceName`: standard integer resources, object counts and extended resources.
fn is_integer_resource(name: &str) -> bool {
    if INTEGER_RESOURCES.contains(&name) || name.starts_with("count/") {
        return true;
    }
    // Extended: qualified with a domain other than kubernetes.io, not a quota request.
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native && !name.starts_with("requests.") && validate_label_key(name).is_empty()
}

/// Upstream's `ValidateNodeUpdate` (object metadata aside).
fn validate_node_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = validate_node_annotations(obj);
    errs.extend(validate_resources(obj));
    let addresses = list(at(obj, "status", "addresses"));
    for (i, address) in addresses.iter().enumerate() {
        if addresses[..i].contains(address) {
            errs.push(Cause::new(
                "FieldValueDuplicate",
                index("status.addresses", i),
                format!(
                    "Duplicate value: core.NodeAddress{{Type:{}, Address:{}}}",
                    go_quote(text(address.get("type"))),
                    go_quote(text(address.get("address")))
                ),
            ));
        }
    }
    let (cidrs, old_cidrs) = (pod_cidrs(obj), pod_cidrs(old));
    let cidr_change = || {
        Cause::forbidden(
            "spec.podCIDRs",
            "node updates may not change podCIDR except from \"\" to valid",
        )
    };
    if !old_cidrs.is_empty() {
        if old_cidrs.len() != cidrs.len() {
            errs.push(cidr_change());
        } else {
            for (a, b) in old_cidrs.iter().zip(&cidrs) {
                if a != b {
                    errs.push(cidr_change());
                }
            }
        }
    }
    let old_provider = text(at(old, "spec", "providerID"));
    if !old_provider.is_empty() && old_provider != text(at(obj, "spec", "providerID")) {
        errs.push(Cause::forbidden(
            "spec.providerID",
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    if let Some(source) = at(obj, "spec", "configSource") {
        errs.extend(validate_config_source(source, "spec.configSource", false));
    }
    if let Some(config) = at(obj, "status", "config") {
        for field in ["assigned", "active", "lastKnownGood"] {
            if let Some(source) = config.get(field).filter(|v| !v.is_null()) {
                errs.extend(validate_config_source(
                    source,
                    &format!("status.config.{field}"),
                    true,
                ));
            }
        }
    }
    let taints = list(at(obj, "spec", "taints"));
    if !taints.is_empty() {
        errs.extend(validate_taints(taints, "metadata.taints"));
    }
    if text(at(obj, "spec", "externalID")) != text(at(old, "spec", "externalID")) {
        errs.push(Cause::forbidden("spec.externalID", "may not be updated"));
    }
    errs
}

/// Upstream's `validateNodeConfigSourceSpec` / `validateNodeConfigSourceStatus`: exactly one
/// reference (a ConfigMap) with a namespace, name and kubelet config key; uid and
/// resourceVersion unset in the spec, set in the status.
fn validate_config_source(source: &Value, path: &str, in_status: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    let config_map = source.get("configMap").filter(|v| !v.is_null());
    if let Some(cm) = config_map {
        let at = format!("{path}.configMap");
        let field = |f: &str| format!("{at}.{f}");
        let set = |f: &str| !text(cm.get(f)).is_empty();
        if in_status {
            if !set("uid") {
                errs.push(Cause::required(field("uid"), "uid must be set in status"));
            }
            if !set("resourceVersion") {
                errs.push(Cause::required(
                    field("resourceVersion"),
                    "resourceVersion must be set in status",
                ));
            }
        } else {
            if set("uid") {
                errs.push(Cause::forbidden(
                    field("uid"),
                    "uid must not be set in spec",
                ));
            }
            if set("resourceVersion") {
                errs.push(Cause::forbidden(
                    field("resourceVersion"),
                    "resourceVersion must not be set in spec",
                ));
            }
        }
        let checks: [(&str, NameRule); 3] = [
            ("namespace", dns1123_label),
            ("name", dns1123_subdomain),
            ("kubeletConfigKey", config_map_key),
        ];
        for (name, rule) in checks {
            let value = text(cm.get(name));
            if value.is_empty() {
                errs.push(Cause::required(field(name), &format!("{name} must be set")));
            } else {
                for msg in rule(value) {
                    errs.push(invalid_rendered(&field(name), &go_quote(value), &msg));
                }
            }
        }
    } else {
        errs.push(invalid_rendered(
            path,
            "core.NodeConfigSource{ConfigMap:(*core.ConfigMapNodeConfigSource)(nil)}",
            "exactly one reference subfield must be non-nil",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    fn node(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "n"}, "spec": spec, "status": status})
    }

    #[test]
    fn nodes_on_create() {
        let cases: &[(Value, &[&str])] = &[
            (
                node(
                    json!({"podCIDR": "10.244.0.0/16", "podCIDRs": ["10.244.0.0/16"]}),
                    json!({}),
                ),
                &[],
            ),
            (
                node(
                    json!({"podCIDRs": ["10.244.0.0/16", "fd00::/64"]}),
                    json!({}),
                ),
                &[],
            ),
            (
                node(json!({"podCIDR": "10.244.0.0"}), json!({})),
                &[
                    "spec.podCIDRs[0]: Invalid value: \"10.244.0.0\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                ],
            ),
            (
                node(
                    json!({"podCIDRs": ["10.0.0.0/16", "10.1.0.0/16", "10.0.0.0/16"]}),
                    json!({}),
                ),
                &[
                    "spec.podCIDRs: Invalid value: []string{\"10.0.0.0/16\", \"10.1.0.0/16\", \"10.0.0.0/16\"}: may specify no more than one CIDR for each IP family",
                    "spec.podCIDRs[2]: Duplicate value: \"10.0.0.0/16\"",
                ],
            ),
            (
                node(json!({"podCIDRs": ["10.0.0.0/16", "x"]}), json!({})),
                &[
                    "spec.podCIDRs[1]: Invalid value: \"x\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                    "spec.podCIDRs: Internal error: invalid PodCIDRs. failed to check with dual stack with error:invalid CIDR address: x",
                    "spec.podCIDRs: Invalid value: []string{\"10.0.0.0/16\", \"x\"}: may specify no more than one CIDR for each IP family",
                ],
            ),
            (
                node(
                    json!({"taints": [
                        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                        {"key": "dedicated", "value": "other", "effect": "NoSchedule"},
                        {"key": "bad key", "value": "a b", "effect": "Sometimes"},
                        {"key": "k"},
                    ]}),
                    json!({}),
                ),
                &[
                    "metadata.taints[1]: Duplicate value: core.Taint{Key:\"dedicated\", Value:\"other\", Effect:\"NoSchedule\", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair",
                    "metadata.taints[2].key: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                    "metadata.taints[2].value: Invalid value: \"a b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                    "metadata.taints[2].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                    "metadata.taints[3].effect: Required value",
                ],
            ),
            (
                node(
                    json!({}),
                    json!({"capacity": {"cpu": "-1", "pods": "1500m", "example.com/gpu": "0.5", "memory": "1Gi"}}),
                ),
                &[
                    "status.capacity.cpu: Invalid value: \"-1\": must be greater than or equal to 0",
                    "status.capacity.example.com/gpu: Invalid value: \"500m\": must be an integer",
                    "status.capacity.pods: Invalid value: \"1500m\": must be an integer",
                ],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(summaries(validate_node(obj)), *want, "{obj}");
        }
    }

    #[test]
    fn legacy_taints_annotation() {
        let with = |raw: &str| json!({"metadata": {"annotations": {TAINTS_ANNOTATION: raw}}});
        let check = |raw: &str| summaries(validate_node_annotations(&with(raw)));
        assert!(check("").is_empty());
        assert!(check("null").is_empty());
        assert!(check(r#"[{"key": "a", "effect": "NoSchedule"}]"#).is_empty());
        assert_eq!(
            check("[{"),
            [
                "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/taints\": unexpected end of JSON input"
            ]
        );
        assert_eq!(
            check("{}"),
            [
                "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/taints\": json: cannot unmarshal object into Go value of type []core.Taint"
            ]
        );
        assert_eq!(
            check(r#"[{"Key": 1}]"#),
            [
                "metadata.annotations: Invalid value: \"scheduler.alpha.kubernetes.io/taints\": json: cannot unmarshal number into Go struct field Taint.key of type string"
            ]
        );
        assert_eq!(
            check(r#"[{"KEY": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "Never"}]"#),
            [
                "metadata.annotations.scheduler.alpha.kubernetes.io/taints[1].effect: Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""
            ]
        );
    }

    #[test]
    fn node_updates() {
        let old = node(
            json!({"podCIDRs": ["10.244.0.0/16"], "providerID": "sim://a", "externalID": "e"}),
            json!({}),
        );
        assert!(validate_node_update(&old, &old).is_empty());
        let new = node(
            json!({"podCIDRs": ["10.245.0.0/16"], "providerID": "sim://b"}),
            json!({"addresses": [
                {"type": "InternalIP", "address": "1.2.3.4"},
                {"type": "InternalIP", "address": "1.2.3.4"},
            ]}),
        );
        assert_eq!(
            summaries(validate_node_update(&new, &old)),
            [
                "status.addresses[1]: Duplicate value: core.NodeAddress{Type:\"InternalIP\", Address:\"1.2.3.4\"}",
                "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
                "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid",
                "spec.externalID: Forbidden: may not be updated",
            ]
        );
        // Unset CIDRs and provider IDs may be set once.
        let bare = node(json!({"externalID": "e"}), json!({}));
        assert!(validate_node_update(&old, &bare).is_empty());
    }

    #[test]
    fn config_sources() {
        let spec = json!({"configMap": {"namespace": "kube-system", "name": "cfg", "kubeletConfigKey": "kubelet", "uid": "u"}});
        assert_eq!(
            summaries(validate_config_source(&spec, "spec.configSource", false)),
            ["spec.configSource.configMap.uid: Forbidden: uid must not be set in spec"]
        );
        assert_eq!(
            summaries(validate_config_source(
                &json!({"configMap": {}}),
                "status.config.active",
                true
            )),
            [
                "status.config.active.configMap.uid: Required value: uid must be set in status",
                "status.config.active.configMap.resourceVersion: Required value: resourceVersion must be set in status",
                "status.config.active.configMap.namespace: Required value: namespace must be set",
                "status.config.active.configMap.name: Required value: name must be set",
                "status.config.active.configMap.kubeletConfigKey: Required value: kubeletConfigKey must be set",
            ]
        );
        assert_eq!(
            summaries(validate_config_source(
                &json!({}),
                "spec.configSource",
                false
            )),
            [
                "spec.configSource: Invalid value: core.NodeConfigSource{ConfigMap:(*core.ConfigMapNodeConfigSource)(nil)}: exactly one reference subfield must be non-nil"
            ]
        );
    }

    #[test]
    fn v1_pod_cidr_fields_round_trip() {
        let mut lone = node(json!({"podCIDR": "10.0.0.0/24"}), json!({}));
        NodeStrategy.canonicalize(&mut lone);
        assert_eq!(lone["spec"]["podCIDRs"], json!(["10.0.0.0/24"]));
        let mut both = node(
            json!({"podCIDR": "x", "podCIDRs": ["10.0.0.0/24", "fd00::/64"]}),
            json!({}),
        );
        NodeStrategy.canonicalize(&mut both);
        assert_eq!(both["spec"]["podCIDR"], "10.0.0.0/24");
        let mut defaulted = node(json!({}), json!({"capacity": {"cpu": "2"}}));
        NodeStrategy.default(&mut defaulted);
        assert_eq!(defaulted["status"]["allocatable"], json!({"cpu": "2"}));
    }
}
