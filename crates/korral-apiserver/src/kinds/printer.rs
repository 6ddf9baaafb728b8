//! How a built-in kind prints as a `Table` row (`kubectl get`): its columns after `Name` and
//! the cells of one object, as upstream's printers (`pkg/printers/internalversion`) produce them.
//!
//! Each kind declares its [`Printer`] beside its [`KindDef`](super::KindDef); the HTTP layer only
//! renders what the printer gives.

use serde_json::Value;

use crate::meta;

/// One column of a kind's `Table`, after the `Name` column every table starts with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Column {
    /// The header (`Ready`, `Age`).
    pub name: &'static str,
    /// The OpenAPI type of the cells (`string`, `integer`, `boolean`, `date`).
    pub kind: &'static str,
    /// 0 for the default view, 1 for `-o wide` only.
    pub priority: i64,
    /// The column's description, upstream's field documentation.
    pub description: &'static str,
}

impl Column {
    /// A `string` column of the default view.
    pub(crate) const fn new(name: &'static str, description: &'static str) -> Self {
        Self {
            name,
            kind: "string",
            priority: 0,
            description,
        }
    }

    /// A `string` column shown with `-o wide` only.
    pub(crate) const fn wide(name: &'static str, description: &'static str) -> Self {
        Self {
            priority: 1,
            ..Self::new(name, description)
        }
    }

    /// The same column with cells of another OpenAPI type.
    pub(crate) const fn typed(self, kind: &'static str) -> Self {
        Self { kind, ..self }
    }
}

/// A kind's table: its columns and the function computing one object's cells (one per column).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Printer {
    /// The columns after `Name`.
    pub columns: &'static [Column],
    /// The cells of one object, in the order of `columns`.
    pub cells: fn(&Value) -> Vec<Value>,
}

/// The description of the `Name` column every table starts with.
pub(crate) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// The `Age` column: `metadata.creationTimestamp` as kubectl's short duration.
pub(crate) const AGE: Column = Column::new(
    "Age",
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
);

/// The `Created At` column of kinds without a printer of their own (upstream's default table).
pub(crate) const CREATED_AT: Column = Column {
    name: "Created At",
    kind: "date",
    priority: 0,
    description: AGE.description,
};

/// The wide `Containers` column of workloads.
pub(crate) const CONTAINERS: Column =
    Column::wide("Containers", "Names of each container in the template.");

/// The wide `Images` column of workloads.
pub(crate) const IMAGES: Column = Column::wide(
    "Images",
    "Images referenced by each container in the template.",
);

/// The default table: `Created At` only.
pub(crate) const DEFAULT: Printer = Printer {
    columns: &[CREATED_AT],
    cells: created_at_cells,
};

fn created_at_cells(obj: &Value) -> Vec<Value> {
    vec![Value::from(
        meta::meta_str(obj, "creationTimestamp").unwrap_or(""),
    )]
}

/// kubectl's short "age" format (`5s`, `3m2s`, `4h`, `2d3h`, `400d`).
pub(crate) fn human_duration(seconds: i64) -> String {
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

/// The time since an RFC 3339 timestamp as upstream's `translateTimestampSince`: `<unknown>` for
/// a missing or unparsable one, `<invalid>` for one in the future.
pub(crate) fn since(timestamp: Option<&str>) -> String {
    let Some(t) = timestamp.and_then(|t| t.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".to_string();
    };
    let seconds = jiff::Timestamp::now().as_second() - t.as_second();
    if seconds < 0 {
        return "<invalid>".to_string();
    }
    human_duration(seconds)
}

/// The object's age.
pub(crate) fn age(obj: &Value) -> Value {
    Value::from(since(meta::meta_str(obj, "creationTimestamp")))
}

/// The integer at a dotted path, 0 when absent.
pub(crate) fn int(obj: &Value, path: &str) -> i64 {
    meta::path(obj, path).and_then(Value::as_i64).unwrap_or(0)
}

/// The string at a dotted path, empty when absent.
pub(crate) fn text<'a>(obj: &'a Value, path: &str) -> &'a str {
    meta::path(obj, path).and_then(Value::as_str).unwrap_or("")
}

/// `<none>` for an empty string.
pub(crate) fn or_none(s: &str) -> String {
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s.to_string()
    }
}

/// The comma-joined names and images of the containers at `path`.
pub(crate) fn containers(obj: &Value, path: &str) -> (String, String) {
    let list = meta::path(obj, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let names: Vec<&str> = list.iter().map(|c| text(c, "name")).collect();
    let images: Vec<&str> = list.iter().map(|c| text(c, "image")).collect();
    (names.join(","), images.join(","))
}

/// The `Containers` and `Images` cells of a workload's pod template.
pub(crate) fn template_containers(obj: &Value) -> [Value; 2] {
    let (names, images) = containers(obj, "spec.template.spec.containers");
    [Value::from(names), Value::from(images)]
}

/// A label selector (`matchLabels`/`matchExpressions`) at `path` in its string form, `<none>`
/// when empty or absent.
pub(crate) fn selector_at(obj: &Value, path: &str) -> String {
    meta::path(obj, path)
        .and_then(|s| crate::selector::from_label_selector_json(s).ok())
        .map(|s| or_none(&s.to_string()))
        .unwrap_or_else(|| "<none>".to_string())
}

/// The number of keys in the maps at the given top-level fields.
pub(crate) fn count_keys(obj: &Value, fields: &[&str]) -> i64 {
    fields
        .iter()
        .filter_map(|f| obj.get(*f).and_then(Value::as_object))
        .map(|m| m.len() as i64)
        .sum()
}

/// The comma-joined strings of an array at `path`.
pub(crate) fn joined(obj: &Value, path: &str) -> String {
    meta::path(obj, path)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_look_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(13 * 60), "13m");
        assert_eq!(human_duration(5 * 3600 + 60), "5h1m");
        assert_eq!(human_duration(3 * 86400), "3d");
        assert_eq!(since(None), "<unknown>");
        assert_eq!(since(Some("not a time")), "<unknown>");
        assert_eq!(since(Some("2999-01-01T00:00:00Z")), "<invalid>");
    }
}
