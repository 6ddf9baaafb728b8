//! CRD `selectableFields` (GA since v1.32): upstream's `ValidateCustomResourceSelectableFields`,
//! with the field paths resolved through the version's schema as its `cel.ValidFieldPath` does
//! (dot notation only: array notation is refused for selectable fields).

use serde_json::{Value, json};

use super::internal::str_of;
use crate::error::Cause;
use crate::validation::names::{child, index};

/// At most this many distinct selectable fields per version.
pub(crate) const MAX_SELECTABLE_FIELDS: usize = 8;

/// A resolved path: its rendering as upstream's `field.Path` (`spec.a[key]`), its root field
/// name and the schema it reaches (`None` past an `additionalProperties: true`).
struct Resolved<'a> {
    /// `field.Path.String()` of the path.
    rendered: String,
    /// The first step's name.
    root: String,
    /// The schema at the end of the path.
    schema: Option<&'a Value>,
}

/// Splits a path into tokens as upstream's scanner does: `.`, `[` and `]` alone, the text
/// between them as one token.
fn tokens(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in path.char_indices() {
        if matches!(c, '.' | '[' | ']') {
            if start < i {
                out.push(&path[start..i]);
            }
            out.push(&path[i..i + 1]);
            start = i + 1;
        }
    }
    if start < path.len() {
        out.push(&path[start..]);
    }
    out
}

/// Upstream's `ValidFieldPath` without array notation: follows `.name` steps through
/// `properties` (or `additionalProperties` for maps).
fn resolve<'a>(path: &str, root: &'a Value) -> Result<Resolved<'a>, String> {
    let mut schema = Some(root);
    let mut rendered = String::new();
    let mut first = None;
    let mut tokens = tokens(path).into_iter();
    while let Some(tok) = tokens.next() {
        match tok {
            "[" => return Err("array notation is not allowed".to_string()),
            "." => {
                let Some(name) = tokens.next() else {
                    return Err("unexpected end of JSON path".to_string());
                };
                let current = schema.ok_or("does not refer to a valid field")?;
                if let Some(props) = current.get("properties").and_then(Value::as_object) {
                    schema = Some(props.get(name).ok_or("does not refer to a valid field")?);
                    if !rendered.is_empty() {
                        rendered.push('.');
                    }
                    rendered.push_str(name);
                } else if let Some(additional) =
                    current.get("additionalProperties").filter(|a| !a.is_null())
                {
                    schema = additional.is_object().then_some(additional);
                    rendered = format!("{rendered}[{name}]");
                } else {
                    return Err("does not refer to a valid field".to_string());
                }
                first.get_or_insert_with(|| name.to_string());
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok(Resolved {
        rendered,
        root: first.unwrap_or_default(),
        schema,
    })
}

/// Validates the selectable fields `fields` at `path` against the version's root `schema`.
/// `allow_too_many`: the update keeps an existing over-long list unchanged (upstream's
/// ratcheting).
pub(crate) fn validate_selectable_fields(
    fields: &Value,
    schema: &Value,
    path: &str,
    allow_too_many: bool,
) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in fields.as_array().into_iter().flatten().enumerate() {
        let at = child(&index(path, i), "jsonPath");
        let json_path = str_of(f, "jsonPath");
        if json_path.is_empty() {
            causes.push(Cause::required(at, ""));
            continue;
        }
        let resolved = match resolve(json_path, schema) {
            Ok(r) => r,
            Err(e) => {
                causes.push(Cause::invalid(
                    at,
                    &json!(json_path),
                    &format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if resolved.root == "metadata" {
            causes.push(Cause::invalid(
                at.clone(),
                &json!(json_path),
                "must not point to fields in metadata",
            ));
        }
        let allowed = resolved
            .schema
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| matches!(t, "string" | "boolean" | "integer"));
        if !allowed {
            causes.push(Cause::invalid(
                at.clone(),
                &json!(json_path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&resolved.rendered) {
            causes.push(Cause::duplicate(at, &json!(json_path)));
        } else {
            unique.push(resolved.rendered);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS && !allow_too_many {
        causes.push(Cause::new(
            "FieldValueTooMany",
            path,
            format!(
                "Too many: {}: must have at most {MAX_SELECTABLE_FIELDS} items",
                unique.len()
            ),
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema with fields of several types.
    fn schema() -> Value {
        json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string"}}},
        "spec": {"type": "object", "properties": {
            "color": {"type": "string", "enum": ["red"]},
            "size": {"type": "integer"},
            "on": {"type": "boolean"},
            "ratio": {"type": "number"},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}},
            "list": {"type": "array", "items": {"type": "string"}}
        }}}})
    }

    /// The summarised causes of `paths` at `spec.selectableFields`.
    fn check(paths: &[&str]) -> Vec<String> {
        let fields: Vec<Value> = paths.iter().map(|p| json!({"jsonPath": p})).collect();
        validate_selectable_fields(&json!(fields), &schema(), "spec.selectableFields", false)
            .iter()
            .map(Cause::summary)
            .collect()
    }

    #[test]
    fn selectable_fields_follow_upstream() {
        let p = "spec.selectableFields";
        let cases: Vec<(Vec<&str>, Vec<String>)> = vec![
            (
                vec![".spec.color", ".spec.size", ".spec.on", ".spec.tags.team"],
                vec![],
            ),
            (vec![""], vec![format!("{p}[0].jsonPath: Required value")]),
            (
                vec![".spec.missing", "spec.color", ".spec.list[0]", ".spec."],
                vec![
                    format!(
                        "{p}[0].jsonPath: Invalid value: \".spec.missing\": is an invalid path: does not refer to a valid field"
                    ),
                    format!(
                        "{p}[1].jsonPath: Invalid value: \"spec.color\": is an invalid path: expected [ or . but got: spec"
                    ),
                    format!(
                        "{p}[2].jsonPath: Invalid value: \".spec.list[0]\": is an invalid path: array notation is not allowed"
                    ),
                    format!(
                        "{p}[3].jsonPath: Invalid value: \".spec.\": is an invalid path: unexpected end of JSON path"
                    ),
                ],
            ),
            (
                vec![".spec.ratio", ".metadata.name", ".spec.size", ".spec.size"],
                vec![
                    format!(
                        "{p}[0].jsonPath: Invalid value: \".spec.ratio\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."
                    ),
                    format!(
                        "{p}[1].jsonPath: Invalid value: \".metadata.name\": must not point to fields in metadata"
                    ),
                    format!("{p}[3].jsonPath: Duplicate value: \".spec.size\""),
                ],
            ),
        ];
        for (paths, want) in cases {
            assert_eq!(check(&paths), want, "{paths:?}");
        }
    }

    #[test]
    fn at_most_eight_distinct_fields() {
        let mut s = json!({"type": "object", "properties": {}});
        let mut fields = Vec::new();
        for i in 0..9 {
            s["properties"][format!("f{i}")] = json!({"type": "string"});
            fields.push(json!({"jsonPath": format!(".f{i}")}));
        }
        let got = validate_selectable_fields(&json!(fields), &s, "p", false);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].summary(),
            "p: Too many: 9: must have at most 8 items"
        );
        assert_eq!(got[0].reason, "FieldValueTooMany");
        assert!(validate_selectable_fields(&json!(fields), &s, "p", true).is_empty());
    }
}
