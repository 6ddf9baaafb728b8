//! JSON merge patch (RFC 7386), `application/merge-patch+json`.

use serde_json::{Map, Value};

use crate::error::ApiError;

use super::{decode_json, go_json_kind};

/// Applies an RFC 7386 merge patch to `target`: objects merge recursively, `null` removes a
/// member, anything else (arrays included) replaces the target value.
///
/// Like upstream's json-patch library, `null` members of objects nested in inserted arrays are
/// dropped too (RFC 7386 keeps them); `null` array elements stay.
pub fn merge_patch(target: &Value, patch: &Value) -> Value {
    match patch {
        Value::Object(patch_obj) => {
            let mut out = match target {
                Value::Object(t) => t.clone(),
                _ => Map::new(),
            };
            merge_into(&mut out, patch_obj);
            Value::Object(out)
        }
        other => prune_nulls(other.clone()),
    }
}

/// Merges `patch` into `target` in place (RFC 7386 for an object patch).
pub fn merge_into(target: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
            continue;
        }
        let merged = match target.get(key) {
            Some(current) => merge_patch(current, value),
            None => merge_patch(&Value::Null, value),
        };
        target.insert(key.clone(), merged);
    }
}

/// Removes `null` members from objects, recursing through arrays; `null` array elements stay.
fn prune_nulls(value: Value) -> Value {
    match value {
        Value::Object(obj) => Value::Object(
            obj.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, prune_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(prune_nulls).collect()),
        other => other,
    }
}

/// Decodes a merge patch body and applies it to `original`, with upstream's errors:
/// an undecodable or non-object body is a 400 `error decoding patch: <Go json error>`, a `null`
/// body a 400 `Invalid JSON Patch`.
pub fn apply_merge_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let patch = decode_json(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    match &patch {
        Value::Object(_) => Ok(merge_patch(original, &patch)),
        Value::Null => Err(ApiError::bad_request("Invalid JSON Patch")),
        other => Err(ApiError::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_json_kind(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc7386_appendix_a() {
        let cases = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (
                json!({"a":"b","b":"c"}),
                json!({"a":null}),
                json!({"b":"c"}),
            ),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (
                json!({"a":{"b":"c"}}),
                json!({"a":{"b":"d","c":null}}),
                json!({"a":{"b":"d"}}),
            ),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a":"b"}), json!(["c"]), json!(["c"])),
            (json!({"a":"foo"}), json!(null), json!(null)),
            (json!({"a":"foo"}), json!("bar"), json!("bar")),
            (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
            (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
            (
                json!({}),
                json!({"a":{"bb":{"ccc":null}}}),
                json!({"a":{"bb":{}}}),
            ),
        ];
        for (target, patch, want) in cases {
            assert_eq!(merge_patch(&target, &patch), want, "{target} + {patch}");
        }
    }

    #[test]
    fn rfc7386_section_3_example() {
        let target = json!({
            "title": "Goodbye!",
            "author": {"givenName": "John", "familyName": "Doe"},
            "tags": ["example", "sample"],
            "content": "This will be unchanged"
        });
        let patch = json!({
            "title": "Hello!",
            "phoneNumber": "+01-123-456-7890",
            "author": {"familyName": null},
            "tags": ["example"]
        });
        assert_eq!(
            merge_patch(&target, &patch),
            json!({
                "title": "Hello!",
                "author": {"givenName": "John"},
                "tags": ["example"],
                "content": "This will be unchanged",
                "phoneNumber": "+01-123-456-7890"
            })
        );
    }

    #[test]
    fn body_errors() {
        let cm = json!({"kind":"ConfigMap","data":{"a":"1"}});
        let ok = apply_merge_patch(&cm, br#"{"data":{"a":null,"b":"2"}}"#).ok();
        assert_eq!(ok, Some(json!({"kind":"ConfigMap","data":{"b":"2"}})));

        let err = |body: &[u8]| {
            apply_merge_patch(&cm, body)
                .err()
                .map(|e| (e.code, e.message))
        };
        assert_eq!(
            err(b"{"),
            Some((
                400,
                "error decoding patch: unexpected end of JSON input".to_string()
            ))
        );
        assert_eq!(
            err(b"[1]"),
            Some((
                400,
                "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
                    .to_string()
            ))
        );
        assert_eq!(err(b"null"), Some((400, "Invalid JSON Patch".to_string())));
    }

    #[test]
    fn nulls_in_inserted_arrays_are_pruned() {
        let out = merge_patch(&json!({}), &json!({"a":[{"x":1,"y":null},null]}));
        assert_eq!(out, json!({"a":[{"x":1},null]}));
    }
}
