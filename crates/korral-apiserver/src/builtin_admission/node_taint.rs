//! TaintNodesByCondition: a new Node carries the `node.kubernetes.io/not-ready:NoSchedule`
//! taint, so nothing is scheduled onto it before it reports Ready (the node lifecycle controller
//! removes it then), as upstream's `plugin/pkg/admission/nodetaint` (creates only).

use serde_json::{Value, json};

use crate::meta;

/// The taint's key (upstream's `TaintNodeNotReady`).
const NOT_READY: &str = "node.kubernetes.io/not-ready";

/// The taint's effect.
const EFFECT: &str = "NoSchedule";

/// Adds the not-ready taint to a new node, unless a taint of that key and effect is there.
pub(super) fn admit(node: &mut Value) {
    let text = |t: &Value, k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let tainted = meta::path(node, "spec.taints")
        .and_then(Value::as_array)
        .is_some_and(|taints| {
            taints
                .iter()
                .any(|t| text(t, "key") == NOT_READY && text(t, "effect") == EFFECT)
        });
    if tainted {
        return;
    }
    let Some(root) = node.as_object_mut() else {
        return;
    };
    let spec = root.entry("spec").or_insert_with(|| json!({}));
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if !taints.is_array() {
        *taints = json!([]);
    }
    if let Some(list) = taints.as_array_mut() {
        list.push(json!({"key": NOT_READY, "effect": EFFECT}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_nodes_are_tainted_not_ready_once() {
        let mut node = json!({"metadata": {"name": "n"}});
        admit(&mut node);
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": NOT_READY, "effect": "NoSchedule"}])
        );
        admit(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().map(Vec::len), Some(1));
        // Another effect of the key is another taint.
        let mut node = json!({"spec": {"taints": [{"key": NOT_READY, "effect": "NoExecute"}]}});
        admit(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().map(Vec::len), Some(2));
    }
}
