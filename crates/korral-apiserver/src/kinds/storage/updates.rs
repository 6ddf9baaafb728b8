//! The update rules of the `storage.k8s.io` kinds whose refusals print whole Go values:
//! `ValidateVolumeAttachmentUpdate` (the spec), `ValidateCSINodeUpdate` (a driver),
//! `ValidateCSIStorageCapacityUpdate` (node topology and class). Pointers print with a fixed
//! stand-in address, as upstream's are not reproducible.

use serde_json::Value;

use crate::error::Cause;
use crate::validation::names::{go_json_slice, go_quote, invalid_rendered, invalid_value};

/// The string at `field` of `v`, quoted as Go prints it.
fn quoted(v: &Value, field: &str) -> String {
    go_quote(v.get(field).and_then(Value::as_str).unwrap_or(""))
}

/// Go's `%#v` of a `storage.VolumeAttachmentSpec`.
fn render_attachment_spec(spec: &Value) -> String {
    let source = spec.get("source").unwrap_or(&Value::Null);
    let pointer = |field: &str, ty: &str| {
        if source.get(field).is_some_and(|v| !v.is_null()) {
            format!("({ty})(0xc000000000)")
        } else {
            format!("({ty})(nil)")
        }
    };
    format!(
        "storage.VolumeAttachmentSpec{{Attacher:{}, Source:storage.VolumeAttachmentSource{{PersistentVolumeName:{}, InlineVolumeSpec:{}}}, NodeName:{}}}",
        quoted(spec, "attacher"),
        pointer("persistentVolumeName", "*string"),
        pointer("inlineVolumeSpec", "*core.PersistentVolumeSpec"),
        quoted(spec, "nodeName"),
    )
}

/// `ValidateVolumeAttachmentUpdate`: the spec is read-only.
pub(super) fn attachment(obj: &Value, old: &Value) -> Option<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    (Some(spec) != old.get("spec").or(Some(&Value::Null)))
        .then(|| invalid_rendered("spec", &render_attachment_spec(spec), "field is immutable"))
}

/// A CSINode driver without its allocatable count, nulls and empty lists dropped (upstream
/// compares them semantically, the count being mutable).
fn comparable_driver(driver: &Value) -> Value {
    let mut d = driver.clone();
    if let Some(map) = d.as_object_mut() {
        map.remove("allocatable");
        map.retain(|_, v| !v.is_null() && !v.as_array().is_some_and(Vec::is_empty));
    }
    d
}

/// Go's `%#v` of a `storage.CSINodeDriver` with its allocatable count cleared.
fn render_driver(driver: &Value) -> String {
    format!(
        "storage.CSINodeDriver{{Name:{}, NodeID:{}, TopologyKeys:{}, Allocatable:(*storage.VolumeNodeResources)(nil)}}",
        quoted(driver, "name"),
        quoted(driver, "nodeID"),
        go_json_slice("string", driver.get("topologyKeys")),
    )
}

/// `ValidateCSINodeUpdate` (the allocatable count mutable, as with upstream's
/// `MutableCSINodeAllocatableCount` on): a driver kept by name may not change.
pub(super) fn csi_node(obj: &Value, old: &Value) -> Vec<Cause> {
    let drivers = |v: &Value| -> Vec<Value> {
        crate::meta::path(v, "spec.drivers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (new_drivers, old_drivers) = (drivers(obj), drivers(old));
    let mut errs = Vec::new();
    for old_driver in &old_drivers {
        for new_driver in &new_drivers {
            if old_driver.get("name") == new_driver.get("name")
                && comparable_driver(old_driver) != comparable_driver(new_driver)
            {
                errs.push(invalid_rendered(
                    "spec.drivers",
                    &render_driver(new_driver),
                    "field is immutable",
                ));
            }
        }
    }
    errs
}

/// Go's `%#v` of a `map[string]string` (keys sorted, as `fmt` prints maps).
fn go_string_map(map: Option<&Value>) -> String {
    match map.and_then(Value::as_object) {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .iter()
                .map(|k| {
                    let v = m.get(*k).and_then(Value::as_str).unwrap_or("");
                    format!("{}:{}", go_quote(k), go_quote(v))
                })
                .collect();
            format!("map[string]string{{{}}}", items.join(", "))
        }
    }
}

/// Go's `%#v` of a `*metav1.LabelSelector` (dereferenced; `null` when unset).
fn render_selector(selector: Option<&Value>) -> String {
    let Some(s) = selector.filter(|s| !s.is_null()) else {
        return "null".to_string();
    };
    let expressions = match s.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(items) => {
            let items: Vec<String> = items
                .iter()
                .map(|e| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{}}}",
                        quoted(e, "key"),
                        quoted(e, "operator"),
                        go_json_slice("string", e.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{expressions}}}",
        go_string_map(s.get("matchLabels"))
    )
}

/// `ValidateCSIStorageCapacityUpdate`: the node topology and the class are the input of the
/// driver's GetCapacity call and may not change.
pub(super) fn capacity(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let topology = |v: &Value| v.get("nodeTopology").filter(|t| !t.is_null()).cloned();
    if topology(obj) != topology(old) {
        errs.push(invalid_rendered(
            "nodeTopology",
            &render_selector(obj.get("nodeTopology")),
            "field is immutable",
        ));
    }
    let class = obj.get("storageClassName").cloned().unwrap_or(Value::Null);
    if Some(&class) != old.get("storageClassName").or(Some(&Value::Null)) {
        let shown = Value::String(class.as_str().unwrap_or("").to_string());
        errs.push(invalid_value(
            "storageClassName",
            &shown,
            "field is immutable",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_and_rules() {
        let spec =
            json!({"attacher": "a", "nodeName": "n", "source": {"persistentVolumeName": "pv"}});
        let mut moved = spec.clone();
        moved["nodeName"] = json!("m");
        assert_eq!(
            attachment(&json!({"spec": moved}), &json!({"spec": spec})).map(|c| c.summary()),
            Some("spec: Invalid value: storage.VolumeAttachmentSpec{Attacher:\"a\", Source:storage.VolumeAttachmentSource{PersistentVolumeName:(*string)(0xc000000000), InlineVolumeSpec:(*core.PersistentVolumeSpec)(nil)}, NodeName:\"m\"}: field is immutable".to_string())
        );
        let node = |id: &str, count: i64| json!({"spec": {"drivers": [{"name": "d", "nodeID": id, "allocatable": {"count": count}}]}});
        assert!(csi_node(&node("n1", 5), &node("n1", 3)).is_empty());
        assert_eq!(
            csi_node(&node("n2", 3), &node("n1", 3))
                .iter()
                .map(Cause::summary)
                .collect::<Vec<_>>(),
            [
                "spec.drivers: Invalid value: storage.CSINodeDriver{Name:\"d\", NodeID:\"n2\", TopologyKeys:[]string(nil), Allocatable:(*storage.VolumeNodeResources)(nil)}: field is immutable"
            ]
        );
        let cap = |class: &str, labels: Value| json!({"storageClassName": class, "nodeTopology": {"matchLabels": labels}});
        assert!(capacity(&cap("a", json!({"z": "1"})), &cap("a", json!({"z": "1"}))).is_empty());
        assert_eq!(
            capacity(
                &cap("b", json!({"z": "2", "a": "1"})),
                &cap("a", json!({"z": "1"}))
            )
            .iter()
            .map(Cause::summary)
            .collect::<Vec<_>>(),
            [
                "nodeTopology: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"1\", \"z\":\"2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
                "storageClassName: Invalid value: \"b\": field is immutable",
            ]
        );
    }
}
