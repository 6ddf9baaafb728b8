//! Server-side printing: `Table` answers for `Accept: application/json;as=Table;g=meta.k8s.io`,
//! so `kubectl get` shows the columns it shows on a cluster.

use serde_json::{Map, Value, json};

use crate::meta;
use crate::registry::ResourceInfo;

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object.
    None,
    /// A `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter.
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("None") => Self::None,
            Some("Object") => Self::Object,
            _ => Self::Metadata,
        }
    }
}

/// Whether an `Accept` header asks for a `Table`.
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|media| {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        params.contains(&"as=Table") && params.contains(&"g=meta.k8s.io")
    })
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

struct Column {
    name: &'static str,
    kind: &'static str,
    priority: i64,
}

const fn col(name: &'static str) -> Column {
    Column {
        name,
        kind: "string",
        priority: 0,
    }
}

const fn wide(name: &'static str) -> Column {
    Column {
        name,
        kind: "string",
        priority: 1,
    }
}

fn builtin_columns(info: &ResourceInfo) -> Vec<Column> {
    match (info.group.as_str(), info.resource.as_str()) {
        ("", "namespaces") => vec![col("Status"), col("Age")],
        ("", "configmaps") => vec![col("Data"), col("Age")],
        ("", "secrets") => vec![col("Type"), col("Data"), col("Age")],
        ("", "serviceaccounts") | ("", "endpoints") => vec![col("Age")],
        ("", "nodes") => vec![
            col("Status"),
            col("Roles"),
            col("Age"),
            col("Version"),
            wide("Internal-IP"),
        ],
        ("", "pods") => vec![
            col("Ready"),
            col("Status"),
            col("Restarts"),
            col("Age"),
            wide("IP"),
            wide("Node"),
            wide("Nominated Node"),
            wide("Readiness Gates"),
        ],
        ("", "services") => vec![
            col("Type"),
            col("Cluster-IP"),
            col("External-IP"),
            col("Port(s)"),
            col("Age"),
            wide("Selector"),
        ],
        ("apps", "deployments") => vec![
            col("Ready"),
            col("Up-to-date"),
            col("Available"),
            col("Age"),
            wide("Containers"),
            wide("Images"),
            wide("Selector"),
        ],
        ("apps", "replicasets") => vec![
            col("Desired"),
            col("Current"),
            col("Ready"),
            col("Age"),
            wide("Containers"),
            wide("Images"),
            wide("Selector"),
        ],
        ("apps", "statefulsets") => {
            vec![col("Ready"), col("Age"), wide("Containers"), wide("Images")]
        }
        ("apps", "daemonsets") => vec![
            col("Desired"),
            col("Current"),
            col("Ready"),
            col("Up-to-date"),
            col("Available"),
            col("Age"),
        ],
        ("batch", "jobs") => vec![
            col("Status"),
            col("Completions"),
            col("Duration"),
            col("Age"),
            wide("Containers"),
            wide("Images"),
        ],
        ("batch", "cronjobs") => vec![
            col("Schedule"),
            col("Suspend"),
            col("Active"),
            col("Last Schedule"),
            col("Age"),
        ],
        ("coordination.k8s.io", "leases") => vec![col("Holder"), col("Age")],
        _ => vec![Column {
            name: "Created At",
            kind: "date",
            priority: 0,
        }],
    }
}

/// kubectl's short "age" format (`5s`, `3m2s`, `4h`, `2d3h`, `400d`).
pub fn human_duration(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let m = s / 60;
    if m < 10 {
        let rest = s % 60;
        return if rest == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{rest}s")
        };
    }
    if m < 180 {
        return format!("{m}m");
    }
    let h = s / 3600;
    if h < 8 {
        let rest = (s % 3600) / 60;
        return if rest == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{rest}m")
        };
    }
    if h < 48 {
        return format!("{h}h");
    }
    let d = h / 24;
    if d < 8 {
        let rest = h % 24;
        return if rest == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{rest}h")
        };
    }
    if d < 365 * 2 {
        return format!("{d}d");
    }
    format!("{}y", d / 365)
}

fn age(obj: &Value) -> String {
    let Some(created) = meta::meta_str(obj, "creationTimestamp") else {
        return "<unknown>".to_string();
    };
    match created.parse::<jiff::Timestamp>() {
        Ok(t) => human_duration(jiff::Timestamp::now().as_second() - t.as_second()),
        Err(_) => "<unknown>".to_string(),
    }
}

fn int(obj: &Value, path: &str) -> i64 {
    meta::path(obj, path).and_then(Value::as_i64).unwrap_or(0)
}

fn text<'a>(obj: &'a Value, path: &str) -> &'a str {
    meta::path(obj, path).and_then(Value::as_str).unwrap_or("")
}

fn or_none(s: &str) -> String {
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s.to_string()
    }
}

fn containers(obj: &Value, path: &str) -> (String, String) {
    let list = meta::path(obj, path)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = list.iter().map(|c| text(c, "name")).collect();
    let images: Vec<&str> = list.iter().map(|c| text(c, "image")).collect();
    (names.join(","), images.join(","))
}

fn selector_string(obj: &Value) -> String {
    meta::path(obj, "spec.selector")
        .and_then(|s| crate::selector::from_label_selector_json(s).ok())
        .map(|s| s.to_string())
        .map(|s| or_none(&s))
        .unwrap_or_else(|| "<none>".to_string())
}

fn count_keys(obj: &Value, fields: &[&str]) -> i64 {
    fields
        .iter()
        .filter_map(|f| obj.get(*f).and_then(Value::as_object))
        .map(|m| m.len() as i64)
        .sum()
}

/// A pod's STATUS as kubectl's printer derives it: the phase (or `status.reason`), replaced
/// by the last container's waiting or terminated reason (`Completed`, `CrashLoopBackOff`, …).
fn pod_status_reason(pod: &Value) -> String {
    let mut reason = text(pod, "status.reason");
    if reason.is_empty() {
        reason = text(pod, "status.phase");
    }
    let statuses = meta::path(pod, "status.containerStatuses")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for status in statuses.iter().rev() {
        let waiting = text(status, "state.waiting.reason");
        let terminated = text(status, "state.terminated.reason");
        if !waiting.is_empty() {
            reason = waiting;
        } else if !terminated.is_empty() {
            reason = terminated;
        }
    }
    reason.to_string()
}

fn builtin_cell(info: &ResourceInfo, column: &str, obj: &Value) -> Value {
    let template = "spec.template.spec.containers";
    match (info.resource.as_str(), column) {
        (_, "Age") => json!(age(obj)),
        (_, "Created At") => json!(meta::meta_str(obj, "creationTimestamp").unwrap_or("")),
        ("namespaces", "Status") => json!(text(obj, "status.phase")),
        ("configmaps", "Data") => json!(count_keys(obj, &["data", "binaryData"])),
        ("secrets", "Type") => json!(text(obj, "type")),
        ("secrets", "Data") => json!(count_keys(obj, &["data"])),
        ("pods", "Ready") => {
            let total = meta::path(obj, "spec.containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ready = meta::path(obj, "status.containerStatuses")
                .and_then(Value::as_array)
                .map_or(0, |s| {
                    s.iter()
                        .filter(|c| c.get("ready") == Some(&Value::Bool(true)))
                        .count()
                });
            json!(format!("{ready}/{total}"))
        }
        ("pods", "Status") => {
            if meta::is_deleting(obj) {
                json!("Terminating")
            } else {
                json!(or_none(&pod_status_reason(obj)))
            }
        }
        ("pods", "Restarts") => {
            let restarts: i64 = meta::path(obj, "status.containerStatuses")
                .and_then(Value::as_array)
                .map_or(0, |s| s.iter().map(|c| int(c, "restartCount")).sum());
            json!(restarts.to_string())
        }
        ("pods", "IP") => json!(or_none(text(obj, "status.podIP"))),
        ("nodes", "Status") => {
            let ready = meta::path(obj, "status.conditions")
                .and_then(Value::as_array)
                .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
                .map(|c| text(c, "status"));
            json!(if ready == Some("True") {
                "Ready"
            } else {
                "NotReady"
            })
        }
        ("nodes", "Roles") => {
            let roles: Vec<&str> = meta::labels(obj)
                .map(|l| {
                    l.keys()
                        .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                        .collect()
                })
                .unwrap_or_default();
            json!(if roles.is_empty() {
                "<none>".to_string()
            } else {
                roles.join(",")
            })
        }
        ("nodes", "Version") => json!(text(obj, "status.nodeInfo.kubeletVersion")),
        ("nodes", "Internal-IP") => {
            let ip = meta::path(obj, "status.addresses")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|a| a["type"] == "InternalIP"))
                .map_or("", |a| text(a, "address"));
            json!(or_none(ip))
        }
        ("pods", "Node") => json!(or_none(text(obj, "spec.nodeName"))),
        ("pods", "Nominated Node") => json!(or_none(text(obj, "status.nominatedNodeName"))),
        ("pods", "Readiness Gates") => {
            // `<ready>/<total>` over the gates' condition types, as kubectl's printer.
            let gates: Vec<&str> = meta::path(obj, "spec.readinessGates")
                .and_then(Value::as_array)
                .map(|g| g.iter().map(|g| text(g, "conditionType")).collect())
                .unwrap_or_default();
            if gates.is_empty() {
                json!("<none>")
            } else {
                let conditions = meta::path(obj, "status.conditions").and_then(Value::as_array);
                let ready = gates
                    .iter()
                    .filter(|t| {
                        conditions.is_some_and(|c| {
                            c.iter()
                                .any(|c| text(c, "type") == **t && text(c, "status") == "True")
                        })
                    })
                    .count();
                json!(format!("{ready}/{}", gates.len()))
            }
        }
        ("services", "Type") => json!(text(obj, "spec.type")),
        ("services", "Cluster-IP") => json!(or_none(text(obj, "spec.clusterIP"))),
        ("services", "External-IP") => {
            let external: Vec<&str> = meta::path(obj, "spec.externalIPs")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            json!(or_none(&external.join(",")))
        }
        ("services", "Port(s)") => {
            let ports: Vec<String> = meta::path(obj, "spec.ports")
                .and_then(Value::as_array)
                .map(|ports| {
                    ports
                        .iter()
                        .map(|p| {
                            let node = p.get("nodePort").and_then(Value::as_i64);
                            let proto = text(p, "protocol");
                            let proto = if proto.is_empty() { "TCP" } else { proto };
                            match node {
                                Some(n) => format!("{}:{n}/{proto}", int(p, "port")),
                                None => format!("{}/{proto}", int(p, "port")),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            json!(or_none(&ports.join(",")))
        }
        ("services", "Selector") => {
            let sel: Vec<String> = meta::path(obj, "spec.selector")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                        .collect()
                })
                .unwrap_or_default();
            json!(or_none(&sel.join(",")))
        }
        ("deployments", "Ready") | ("statefulsets", "Ready") => json!(format!(
            "{}/{}",
            int(obj, "status.readyReplicas"),
            int(obj, "spec.replicas")
        )),
        ("deployments", "Up-to-date") => json!(int(obj, "status.updatedReplicas")),
        ("deployments", "Available") => json!(int(obj, "status.availableReplicas")),
        ("replicasets", "Desired") => json!(int(obj, "spec.replicas")),
        ("replicasets", "Current") => json!(int(obj, "status.replicas")),
        ("replicasets", "Ready") => json!(int(obj, "status.readyReplicas")),
        ("daemonsets", "Desired") => json!(int(obj, "status.desiredNumberScheduled")),
        ("daemonsets", "Current") => json!(int(obj, "status.currentNumberScheduled")),
        ("daemonsets", "Ready") => json!(int(obj, "status.numberReady")),
        ("daemonsets", "Up-to-date") => json!(int(obj, "status.updatedNumberScheduled")),
        ("daemonsets", "Available") => json!(int(obj, "status.numberAvailable")),
        ("jobs", "Status") => {
            let conditions = meta::path(obj, "status.conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let has = |t: &str| {
                conditions
                    .iter()
                    .any(|c| text(c, "type") == t && text(c, "status") == "True")
            };
            json!(if has("Complete") {
                "Complete"
            } else if has("Failed") {
                "Failed"
            } else if meta::path(obj, "spec.suspend") == Some(&Value::Bool(true)) {
                "Suspended"
            } else {
                "Running"
            })
        }
        ("jobs", "Completions") => {
            let completions = meta::path(obj, "spec.completions").and_then(Value::as_i64);
            let succeeded = int(obj, "status.succeeded");
            json!(match completions {
                Some(c) => format!("{succeeded}/{c}"),
                None => format!("{succeeded}/1"),
            })
        }
        ("jobs", "Duration") => json!(""),
        ("cronjobs", "Schedule") => json!(text(obj, "spec.schedule")),
        ("cronjobs", "Suspend") => json!(
            meta::path(obj, "spec.suspend")
                .and_then(Value::as_bool)
                .unwrap_or(false)
                .to_string()
                .replace("true", "True")
                .replace("false", "False")
        ),
        ("cronjobs", "Active") => json!(
            meta::path(obj, "status.active")
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        ),
        ("cronjobs", "Last Schedule") => json!(or_none(text(obj, "status.lastScheduleTime"))),
        ("leases", "Holder") => json!(text(obj, "spec.holderIdentity")),
        (_, "Containers") => json!(containers(obj, template).0),
        (_, "Images") => json!(containers(obj, template).1),
        (_, "Selector") => json!(selector_string(obj)),
        _ => Value::Null,
    }
}

/// Evaluates a printer-column JSONPath of the simple forms CRDs use: `.spec.replicas`,
/// `.status.conditions[0].type`, `.metadata.labels.app`.
fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in path.trim_start_matches('.').split('.') {
        if part.is_empty() {
            continue;
        }
        let (name, index) = match part.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        if let Some(i) = index {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

fn column_definitions(info: &ResourceInfo) -> Vec<Value> {
    let mut defs = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": NAME_DESCRIPTION, "priority": 0,
    })];
    match &info.custom {
        Some(custom) if !custom.printer_columns.is_empty() => {
            for c in &custom.printer_columns {
                defs.push(json!({
                    "name": c.name,
                    "type": c.column_type,
                    "format": c.format.clone().unwrap_or_default(),
                    "description": c.description.clone().unwrap_or_else(|| format!("Custom resource definition column (in JSONPath format): {}", c.json_path)),
                    "priority": c.priority,
                }));
            }
        }
        Some(_) => defs.push(json!({
            "name": "Age", "type": "date", "format": "", "description": "Age", "priority": 0,
        })),
        None => {
            for c in builtin_columns(info) {
                defs.push(json!({
                    "name": c.name, "type": c.kind, "format": "",
                    "description": c.name, "priority": c.priority,
                }));
            }
        }
    }
    defs
}

fn cells(info: &ResourceInfo, obj: &Value) -> Vec<Value> {
    let mut cells = vec![json!(meta::name(obj))];
    match &info.custom {
        Some(custom) if !custom.printer_columns.is_empty() => {
            for c in &custom.printer_columns {
                let v = json_path(obj, &c.json_path).cloned().unwrap_or(Value::Null);
                cells.push(v);
            }
        }
        Some(_) => cells.push(json!(
            meta::meta_str(obj, "creationTimestamp").unwrap_or("")
        )),
        None => {
            for c in builtin_columns(info) {
                cells.push(builtin_cell(info, c.name, obj));
            }
        }
    }
    cells
}

fn row_object(obj: &Value, include: IncludeObject) -> Option<Value> {
    match include {
        IncludeObject::None => None,
        IncludeObject::Object => Some(obj.clone()),
        IncludeObject::Metadata => {
            let metadata = obj.get("metadata").cloned().unwrap_or(json!({}));
            Some(json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": metadata,
            }))
        }
    }
}

/// A `Table` of `items`.
pub fn table<'a>(
    info: &ResourceInfo,
    items: impl IntoIterator<Item = &'a Value>,
    list_meta: Map<String, Value>,
    include: IncludeObject,
    with_columns: bool,
) -> Value {
    let rows: Vec<Value> = items
        .into_iter()
        .map(|obj| {
            let mut row = json!({"cells": cells(info, obj)});
            if let (Some(o), Some(map)) = (row_object(obj, include), row.as_object_mut()) {
                map.insert("object".into(), o);
            }
            row
        })
        .collect();
    let mut table = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "rows": rows,
    });
    if with_columns && let Some(map) = table.as_object_mut() {
        map.insert("columnDefinitions".into(), json!(column_definitions(info)));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn pod_status_uses_container_reasons_like_kubectl() {
        let done = serde_json::json!({"status": {"phase": "Succeeded", "containerStatuses": [
            {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        assert_eq!(pod_status_reason(&done), "Completed");
        let waiting = serde_json::json!({"status": {"phase": "Pending", "containerStatuses": [
            {"state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(pod_status_reason(&waiting), "ContainerCreating");
        let running = serde_json::json!({"status": {"phase": "Running", "containerStatuses": [
            {"state": {"running": {"startedAt": "t"}}}]}});
        assert_eq!(pod_status_reason(&running), "Running");
        let evicted = serde_json::json!({"status": {"phase": "Failed", "reason": "Evicted"}});
        assert_eq!(pod_status_reason(&evicted), "Evicted");
    }

    #[test]
    fn ages_look_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(13 * 60), "13m");
        assert_eq!(human_duration(5 * 3600 + 60), "5h1m");
        assert_eq!(human_duration(3 * 86400), "3d");
    }

    #[test]
    fn deployment_rows_match_upstream_columns() {
        let registry = Registry::with_builtins();
        let info = registry
            .get("apps", "v1", "deployments")
            .expect("deployments");
        let obj = json!({
            "metadata": {"name": "web", "creationTimestamp": meta::now_rfc3339()},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}},
        });
        let t = table(&info, [&obj], Map::new(), IncludeObject::Metadata, true);
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .expect("cols")
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["web", "0/1", 0, 0, "0s", "nginx", "nginx:1.27", "app=web"])
        );
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }
}
