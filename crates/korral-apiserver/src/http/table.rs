//! Server-side printing: `Table` answers for `Accept: application/json;as=Table;g=meta.k8s.io`,
//! so `kubectl get` shows the columns it shows on a cluster.

use serde_json::{Map, Value, json};

use crate::kinds::printer;
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

/// Whether a built-in kind's printer prints the `Name` column itself (StorageClass marks the
/// default class in it).
fn prints_own_name(info: &ResourceInfo) -> bool {
    info.custom.is_none()
        && info
            .printer
            .columns
            .first()
            .is_some_and(|c| c.name == "Name")
}

fn column_definitions(info: &ResourceInfo) -> Vec<Value> {
    let mut defs = Vec::new();
    if !prints_own_name(info) {
        defs.push(json!({
            "name": "Name", "type": "string", "format": "name",
            "description": printer::NAME_DESCRIPTION, "priority": 0,
        }));
    }
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
            for c in info.printer.columns {
                let format = if c.name == "Name" { "name" } else { "" };
                defs.push(json!({
                    "name": c.name, "type": c.kind, "format": format,
                    "description": c.description, "priority": c.priority,
                }));
            }
        }
    }
    defs
}

fn cells(info: &ResourceInfo, obj: &Value) -> Vec<Value> {
    if prints_own_name(info) {
        return (info.printer.cells)(obj);
    }
    let mut cells = vec![json!(meta::name(obj))];
    match &info.custom {
        Some(custom) if !custom.printer_columns.is_empty() => {
            for c in &custom.printer_columns {
                let v = json_path(obj, &c.json_path).cloned().unwrap_or(Value::Null);
                cells.push(custom_cell(&c.column_type, v));
            }
        }
        Some(_) => cells.push(printer::age(obj)),
        None => cells.extend((info.printer.cells)(obj)),
    }
    cells
}

/// A custom resource's cell of a column of `column_type`: upstream prints `date` cells as the
/// time since the date (`120m`, `<invalid>` for a future one) and leaves other values as found.
fn custom_cell(column_type: &str, value: Value) -> Value {
    match (column_type, &value) {
        ("date", Value::String(t)) => json!(printer::since(Some(t))),
        _ => value,
    }
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

/// One row of a `Table`: the object's cells and what `include` asks to carry.
pub fn row(info: &ResourceInfo, obj: &Value, include: IncludeObject) -> Value {
    let mut row = json!({"cells": cells(info, obj)});
    if let (Some(o), Some(map)) = (row_object(obj, include), row.as_object_mut()) {
        map.insert("object".into(), o);
    }
    row
}

/// A `Table` without rows (`"rows": []`), with its column definitions when asked.
pub fn envelope(
    info: &ResourceInfo,
    list_meta: Map<String, Value>,
    with_columns: bool,
) -> Map<String, Value> {
    let mut table = Map::new();
    table.insert("kind".into(), json!("Table"));
    table.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    table.insert("metadata".into(), Value::Object(list_meta));
    table.insert("rows".into(), json!([]));
    if with_columns {
        table.insert("columnDefinitions".into(), json!(column_definitions(info)));
    }
    table
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
        .map(|obj| row(info, obj, include))
        .collect();
    let mut table = envelope(info, list_meta, with_columns);
    table.insert("rows".into(), Value::Array(rows));
    Value::Object(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn date_columns_of_custom_resources_print_as_ages() {
        assert_eq!(
            custom_cell("date", json!("2999-01-01T00:00:00Z")),
            "<invalid>"
        );
        assert_eq!(custom_cell("date", json!("garbage")), "<unknown>");
        assert_eq!(custom_cell("date", Value::Null), Value::Null);
        assert_eq!(custom_cell("integer", json!(3)), json!(3));
        let two_hours_ago = jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_secs(7200))
            .expect("time")
            .to_string();
        assert_eq!(custom_cell("date", json!(two_hours_ago)), "120m");
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
    }
}
