//! `metadata.managedFields`: decoding and encoding the entries, the fields the server never
//! tracks, and upstream's conflict error.

use serde_json::{Map, Value, json};

use super::fieldset::FieldSet;
use super::path::{Path, PathElement, display};
use crate::error::{ApiError, Cause, Details};

/// The operation of a managed-fields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update or a non-apply patch.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One entry of `metadata.managedFields`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The field manager.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The API version the fields are expressed in.
    pub api_version: String,
    /// When the manager last changed something (RFC 3339).
    pub time: Option<String>,
    /// `status`, `scale`, or none for the main resource.
    pub subresource: Option<String>,
    /// The owned fields.
    pub fields: FieldSet,
}

impl Entry {
    /// Whether `self` and `other` are the same manager (upstream's manager identifier: the
    /// API version only counts for Update entries).
    pub fn same_manager(
        &self,
        manager: &str,
        op: Operation,
        api_version: &str,
        sub: Option<&str>,
    ) -> bool {
        self.manager == manager
            && self.operation == op
            && self.subresource.as_deref() == sub
            && (op == Operation::Apply || self.api_version == api_version)
    }

    /// Upstream's `printManager`: `"name"`, `"name" with subresource "status"`, and
    /// ` using <apiVersion>` for Update entries.
    pub fn printed(&self) -> String {
        let mut s = go_quote(&self.manager);
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" with subresource {}", go_quote(sub)));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), json!(self.manager));
        m.insert("operation".into(), json!(self.operation.as_str()));
        m.insert("apiVersion".into(), json!(self.api_version));
        if let Some(t) = &self.time {
            m.insert("time".into(), json!(t));
        }
        m.insert("fieldsType".into(), json!("FieldsV1"));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if let Some(sub) = &self.subresource {
            m.insert("subresource".into(), json!(sub));
        }
        Value::Object(m)
    }

    fn from_json(v: &Value) -> Result<Entry, String> {
        let m = v
            .as_object()
            .ok_or("managedFields entries must be objects")?;
        let s = |k: &str| m.get(k).and_then(Value::as_str);
        let operation = match s("operation") {
            Some("Apply") => Operation::Apply,
            Some("Update") => Operation::Update,
            other => return Err(format!("unknown operation {other:?}")),
        };
        if let Some(t) = s("fieldsType")
            && t != "FieldsV1"
        {
            return Err(format!("unsupported fieldsType {t:?}"));
        }
        let fields = match m.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(doc) => FieldSet::from_fields_v1(doc)?,
        };
        Ok(Entry {
            manager: s("manager").unwrap_or_default().to_string(),
            operation,
            api_version: s("apiVersion").unwrap_or_default().to_string(),
            time: s("time").map(str::to_string),
            subresource: s("subresource")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            fields,
        })
    }
}

/// Go's `%q` for the strings managers are made of.
fn go_quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// What `metadata.managedFields` of an object says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stored {
    /// No `managedFields` key, or an empty list.
    Absent,
    /// Every entry is an empty object (`[{}]`): upstream's way to reset the field.
    Reset,
    /// Decoded entries.
    Entries(Vec<Entry>),
    /// Present but not decodable.
    Invalid(String),
}

/// Reads `metadata.managedFields`.
pub fn read(obj: &Value) -> Stored {
    let Some(list) = obj.get("metadata").and_then(|m| m.get("managedFields")) else {
        return Stored::Absent;
    };
    let Some(items) = list.as_array() else {
        return if list.is_null() {
            Stored::Absent
        } else {
            Stored::Invalid("managedFields must be a list".into())
        };
    };
    if items.is_empty() {
        return Stored::Absent;
    }
    if items
        .iter()
        .all(|i| i.as_object().is_some_and(Map::is_empty))
    {
        return Stored::Reset;
    }
    match items
        .iter()
        .map(Entry::from_json)
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(entries) => Stored::Entries(entries),
        Err(e) => Stored::Invalid(e),
    }
}

/// The entries of an object, empty when absent or not decodable.
pub fn entries(obj: &Value) -> Vec<Entry> {
    match read(obj) {
        Stored::Entries(e) => e,
        _ => Vec::new(),
    }
}

/// Writes the entries into `metadata.managedFields` in upstream's order (operation, time,
/// manager, API version, subresource); removes the key when there are none.
pub fn write(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|a, b| {
        (
            a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if entries.is_empty() {
        md.remove("managedFields");
    } else {
        md.insert(
            "managedFields".into(),
            Value::Array(entries.iter().map(Entry::to_json).collect()),
        );
    }
}

/// A copy of `obj` without `metadata.managedFields`.
pub fn without_managed_fields(obj: &Value) -> Value {
    let mut copy = obj.clone();
    if let Some(md) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("managedFields");
    }
    copy
}

/// Removes the fields the server never attributes to a manager (upstream's strip set):
/// `apiVersion`, `kind`, `metadata` itself and its system fields.
pub fn strip(set: &mut FieldSet) {
    let f = |s: &str| PathElement::Field(s.to_string());
    for top in ["apiVersion", "kind"] {
        set.remove(&[f(top)]);
    }
    set.remove(&[f("metadata")]);
    for field in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "resourceVersion",
    ] {
        set.remove(&[f("metadata"), f(field)]);
    }
    set.remove_prefixed(&[f("metadata"), f("managedFields")]);
}

/// One conflict: a manager owning a path the apply would change.
#[derive(Debug, Clone)]
pub struct Conflict {
    /// The printed manager (see [`Entry::printed`]).
    pub manager: String,
    /// The contested path.
    pub path: Path,
}

/// Upstream's 409 for conflicts (`Apply failed with N conflict(s): ...`, causes of type
/// `FieldManagerConflict`).
pub fn conflict_error(conflicts: &[Conflict]) -> ApiError {
    let causes: Vec<Cause> = conflicts
        .iter()
        .map(|c| {
            Cause::new(
                "FieldManagerConflict",
                display(&c.path),
                format!("conflict with {}", c.manager),
            )
        })
        .collect();
    let message = if let [c] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            c.manager,
            display(&c.path)
        )
    } else {
        let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
        managers.sort();
        managers.dedup();
        let mut lines = Vec::new();
        for m in managers {
            lines.push(format!("conflicts with {m}:"));
            for c in conflicts.iter().filter(|c| c.manager == m) {
                lines.push(format!("- {}", display(&c.path)));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    ApiError {
        details: Some(Box::new(Details {
            causes,
            ..Details::default()
        })),
        ..ApiError::new(409, "Conflict", message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_in_upstream_order() {
        let mut obj = json!({"metadata": {"managedFields": [
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:x": {}}}},
            {"manager": "a", "operation": "Apply", "apiVersion": "v1", "time": "2026-01-02T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}, "subresource": "status"}
        ]}});
        let e = entries(&obj);
        assert_eq!(e.len(), 2);
        assert_eq!(e[1].printed(), "\"a\" with subresource \"status\"");
        assert_eq!(e[0].printed(), "\"b\" using v1");
        write(&mut obj, e);
        let mf = obj["metadata"]["managedFields"].as_array().expect("list");
        assert_eq!(mf[0]["manager"], "a");
        assert_eq!(mf[1]["fieldsV1"], json!({"f:data": {".": {}, "f:x": {}}}));
        assert_eq!(
            read(&json!({"metadata": {"managedFields": [{}]}})),
            Stored::Reset
        );
        assert!(matches!(
            read(&json!({"metadata": {"managedFields": [{"operation": "Bogus"}]}})),
            Stored::Invalid(_)
        ));
    }

    #[test]
    fn conflict_messages_match_upstream() {
        let p = |s: &str| {
            vec![
                PathElement::Field("data".into()),
                PathElement::Field(s.into()),
            ]
        };
        let one = conflict_error(&[Conflict {
            manager: "\"alice\"".into(),
            path: p("a"),
        }]);
        assert_eq!(one.code, 409);
        assert_eq!(
            one.message,
            "Apply failed with 1 conflict: conflict with \"alice\": .data.a"
        );
        let status = one.to_status();
        assert_eq!(
            status["details"]["causes"][0],
            json!({"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".data.a"})
        );
        let two = conflict_error(&[
            Conflict {
                manager: "\"b\" using v1".into(),
                path: p("x"),
            },
            Conflict {
                manager: "\"a\"".into(),
                path: p("y"),
            },
        ]);
        assert_eq!(
            two.message,
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .data.y\nconflicts with \"b\" using v1:\n- .data.x"
        );
    }
}
