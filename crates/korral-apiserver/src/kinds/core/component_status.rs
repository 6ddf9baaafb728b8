//! ComponentStatus (deprecated upstream since v1.19, still served): the health of the control
//! plane's components, computed at each read and never stored, as upstream's registry probes
//! them. Here `etcd-0` is the server's own storage; `scheduler` and `controller-manager` are the
//! simulation's scheduler and controllers, healthy when the simulation runs.

use serde_json::{Value, json};

use super::super::printer::{Column, Printer, text};
use super::super::strategy::Strategy;

/// The deprecation `Warning` of every request (upstream's).
pub(super) const DEPRECATION: &str = "v1 ComponentStatus is deprecated in v1.19+";

/// ComponentStatuses: read-only, computed.
#[derive(Debug)]
pub(super) struct ComponentStatuses;

impl Strategy for ComponentStatuses {
    fn computed(&self, simulating: bool) -> Option<Vec<Value>> {
        let simulated = |name: &str| {
            if simulating {
                status(name, "True", "ok", "")
            } else {
                status(
                    name,
                    "False",
                    "",
                    "not running: the server's simulation is off",
                )
            }
        };
        Some(vec![
            simulated("controller-manager"),
            status("etcd-0", "True", "ok", ""),
            simulated("scheduler"),
        ])
    }
}

/// One component's status with its `Healthy` condition.
fn status(name: &str, healthy: &str, message: &str, error: &str) -> Value {
    let mut condition = json!({"type": "Healthy", "status": healthy});
    if !message.is_empty() {
        condition["message"] = json!(message);
    }
    if !error.is_empty() {
        condition["error"] = json!(error);
    }
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

/// Upstream's `printComponentStatus`: the `Healthy` condition as Status, Message, Error.
pub(super) const COMPONENT_STATUSES: Printer = Printer {
    columns: &[
        Column::new("Status", "Status of the component conditions"),
        Column::new("Message", "Message of the component conditions"),
        Column::new("Error", "Error of the component conditions"),
    ],
    cells: |obj| {
        let healthy = obj
            .get("conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Healthy");
        match healthy {
            Some(c) => vec![
                json!(if c["status"] == "True" {
                    "Healthy"
                } else {
                    "Unhealthy"
                }),
                json!(text(c, "message")),
                json!(text(c, "error")),
            ],
            None => vec![json!("Unknown"), json!(""), json!("")],
        }
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_healthy_when_simulated() {
        let all = ComponentStatuses.computed(true).unwrap_or_default();
        let names: Vec<&str> = all.iter().map(crate::meta::name).collect();
        assert_eq!(names, ["controller-manager", "etcd-0", "scheduler"]);
        for c in &all {
            assert_eq!(
                (COMPONENT_STATUSES.cells)(c),
                vec![json!("Healthy"), json!("ok"), json!("")]
            );
        }
        let off = ComponentStatuses.computed(false).unwrap_or_default();
        assert_eq!(
            (COMPONENT_STATUSES.cells)(&off[2]),
            vec![
                json!("Unhealthy"),
                json!(""),
                json!("not running: the server's simulation is off")
            ]
        );
        assert_eq!((COMPONENT_STATUSES.cells)(&off[1])[0], "Healthy");
    }
}
