//! JSON patch (RFC 6902), `application/json-patch+json`.
//!
//! Semantics follow RFC 6902 with the extensions of upstream's json-patch library
//! (`gopkg.in/evanphx/json-patch.v4` as used by kube-apiserver): negative array indices count
//! from the end (`/items/-1` is the last element), and `test` of a missing location against
//! `null` succeeds.

use std::fmt;

use serde_json::{Map, Value};

use crate::error::ApiError;

use super::{MAX_JSON_PATCH_OPERATIONS, decode_json, go_json_kind, rejected_patch};

/// One operation of a JSON patch document.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// `add`, `remove`, `replace`, `move`, `copy` or `test` (anything else fails on apply).
    pub op: String,
    /// The target location (JSON pointer); `None` when the member is absent.
    pub path: Option<String>,
    /// The source location of `move` / `copy`.
    pub from: Option<String>,
    /// The value of `add` / `replace` / `test`; `None` when absent (treated as `null`).
    pub value: Option<Value>,
}

/// Why a JSON patch could not be applied (the text of upstream's json-patch library, which
/// upstream does not put in its 422 response).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPatchError(pub String);

impl fmt::Display for JsonPatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JsonPatchError {}

/// How upstream's library ends the message of a failed `test` operation.
const TEST_FAILED: &str = "failed: test failed";

impl JsonPatchError {
    /// Whether a `test` operation failed (rather than the patch being malformed or not
    /// applicable).
    pub fn is_test_failure(&self) -> bool {
        self.0.ends_with(TEST_FAILED)
    }
}

/// Reads the operations of a decoded JSON patch document, with the messages of Go's decoder
/// for a document of the wrong shape (e.g.
/// `json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp`).
/// `null` is an empty patch.
pub fn parse_operations(doc: &Value) -> Result<Vec<Operation>, String> {
    let items = match doc {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                go_json_kind(other)
            ));
        }
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let obj = match item {
            Value::Null => {
                ops.push(Operation {
                    op: String::new(),
                    path: None,
                    from: None,
                    value: None,
                });
                continue;
            }
            Value::Object(obj) => obj,
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                    go_json_kind(other)
                ));
            }
        };
        let string_field = |name: &str| -> Result<Option<String>, String> {
            match obj.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(format!(
                    "json: cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type string",
                    go_json_kind(other)
                )),
            }
        };
        ops.push(Operation {
            op: string_field("op")?.unwrap_or_default(),
            path: string_field("path")?,
            from: string_field("from")?,
            value: obj.get("value").cloned(),
        });
    }
    Ok(ops)
}

/// Decodes a JSON patch body and applies it to `original`, with upstream's errors: an
/// undecodable body is a 400 `error decoding patch: ...`, more than 10000 operations a 413, and
/// an operation that cannot be applied a 422 `Invalid` with upstream's generic message.
pub fn apply_json_patch(original: &Value, body: &[u8]) -> Result<Value, ApiError> {
    let doc = decode_json(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let ops = parse_operations(&doc)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                ops.len()
            ),
        ));
    }
    apply_operations(original, &ops).map_err(|_| rejected_patch())
}

/// Applies operations in order to a copy of `doc`; the first failing operation aborts the patch.
pub fn apply_operations(doc: &Value, ops: &[Operation]) -> Result<Value, JsonPatchError> {
    let mut doc = doc.clone();
    for op in ops {
        apply_one(&mut doc, op)?;
    }
    Ok(doc)
}

fn apply_one(doc: &mut Value, op: &Operation) -> Result<(), JsonPatchError> {
    let kind = op.op.as_str();
    let path_of = |p: &Option<String>, what: &str| -> Result<Vec<String>, JsonPatchError> {
        let Some(p) = p else {
            return Err(JsonPatchError(format!(
                "{kind} operation failed to decode {what}"
            )));
        };
        parse_pointer(p)
            .ok_or_else(|| JsonPatchError(format!("{kind} operation has an invalid {what}: {p:?}")))
    };
    let value = || op.value.clone().unwrap_or(Value::Null);
    match kind {
        "add" => {
            let path = path_of(&op.path, "path")?;
            add(doc, &path, value())
        }
        "remove" => {
            let path = path_of(&op.path, "path")?;
            remove(doc, &path).map(|_| ())
        }
        "replace" => {
            let path = path_of(&op.path, "path")?;
            replace(doc, &path, value())
        }
        "move" => {
            let from = path_of(&op.from, "from")?;
            let path = path_of(&op.path, "path")?;
            if from.len() < path.len() && path.starts_with(&from) {
                return Err(JsonPatchError(format!(
                    "move operation does not apply: from {} is a prefix of path {}",
                    render_pointer(&from),
                    render_pointer(&path)
                )));
            }
            let moved = remove(doc, &from).map_err(|e| {
                JsonPatchError(format!(
                    "move operation does not apply: doc is missing from path: {}: {e}",
                    render_pointer(&from)
                ))
            })?;
            add(doc, &path, moved)
        }
        "copy" => {
            let from = path_of(&op.from, "from")?;
            let path = path_of(&op.path, "path")?;
            let copied = get(doc, &from).cloned().ok_or_else(|| {
                JsonPatchError(format!(
                    "copy operation does not apply: doc is missing from path: {}: missing value",
                    render_pointer(&from)
                ))
            })?;
            add(doc, &path, copied)
        }
        "test" => {
            let path = path_of(&op.path, "path")?;
            let expected = value();
            let ok = match get(doc, &path) {
                None | Some(Value::Null) => expected.is_null(),
                Some(actual) => json_equal(actual, &expected),
            };
            if ok {
                Ok(())
            } else {
                Err(JsonPatchError(format!(
                    "testing value {} {TEST_FAILED}",
                    render_pointer(&path)
                )))
            }
        }
        other => Err(JsonPatchError(format!(
            "Unexpected kind: {}",
            if other.is_empty() { "unknown" } else { other }
        ))),
    }
}

/// Splits a JSON pointer into unescaped reference tokens; `None` when it is not a pointer.
fn parse_pointer(p: &str) -> Option<Vec<String>> {
    if p.is_empty() {
        return Some(Vec::new());
    }
    let rest = p.strip_prefix('/')?;
    Some(
        rest.split('/')
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect(),
    )
}

fn render_pointer(tokens: &[String]) -> String {
    tokens
        .iter()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Parses an array index the way upstream does (`strconv.Atoi`, negative counting from the
/// end); `len` is the number of valid positions.
fn array_index(token: &str, len: usize) -> Option<usize> {
    let idx: i64 = token.parse().ok()?;
    let len = i64::try_from(len).ok()?;
    let idx = if idx < 0 { idx + len } else { idx };
    if (0..len).contains(&idx) {
        usize::try_from(idx).ok()
    } else {
        None
    }
}

fn get<'a>(doc: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut cur = doc;
    for token in path {
        cur = match cur {
            Value::Object(obj) => obj.get(token)?,
            Value::Array(items) => items.get(array_index(token, items.len())?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn get_mut<'a>(doc: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut cur = doc;
    for token in path {
        cur = match cur {
            Value::Object(obj) => obj.get_mut(token)?,
            Value::Array(items) => {
                let idx = array_index(token, items.len())?;
                items.get_mut(idx)?
            }
            _ => return None,
        };
    }
    Some(cur)
}

fn missing_path(op: &str, path: &[String]) -> JsonPatchError {
    JsonPatchError(format!(
        "{op} operation does not apply: doc is missing path: {}: missing value",
        render_pointer(path)
    ))
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), JsonPatchError> {
    let Some((last, parent_path)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    let parent = get_mut(doc, parent_path).ok_or_else(|| missing_path("add", path))?;
    match parent {
        Value::Object(obj) => {
            obj.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            if last == "-" {
                items.push(value);
                return Ok(());
            }
            let idx = array_index(last, items.len() + 1).ok_or_else(|| {
                JsonPatchError(format!(
                    "Unable to access invalid index: {last}: invalid index referenced"
                ))
            })?;
            items.insert(idx, value);
            Ok(())
        }
        _ => Err(missing_path("add", path)),
    }
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, JsonPatchError> {
    let Some((last, parent_path)) = path.split_last() else {
        return Err(JsonPatchError(
            "remove operation does not apply: cannot remove the whole document".to_string(),
        ));
    };
    let parent = get_mut(doc, parent_path).ok_or_else(|| missing_path("remove", path))?;
    match parent {
        Value::Object(obj) => obj.remove(last).ok_or_else(|| {
            JsonPatchError(format!(
                "Unable to remove nonexistent key: {last}: missing value"
            ))
        }),
        Value::Array(items) => {
            let idx = array_index(last, items.len()).ok_or_else(|| {
                JsonPatchError(format!(
                    "Unable to access invalid index: {last}: invalid index referenced"
                ))
            })?;
            Ok(items.remove(idx))
        }
        _ => Err(missing_path("remove", path)),
    }
}

fn replace(doc: &mut Value, path: &[String], value: Value) -> Result<(), JsonPatchError> {
    let target = get_mut(doc, path).ok_or_else(|| {
        JsonPatchError(format!(
            "replace operation does not apply: doc is missing key: {}: missing value",
            render_pointer(path)
        ))
    })?;
    *target = value;
    Ok(())
}

/// JSON equality with numbers compared as float64, as upstream's Go implementation does.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => maps_equal(x, y),
        _ => a == b,
    }
}

fn maps_equal(x: &Map<String, Value>, y: &Map<String, Value>) -> bool {
    x.len() == y.len()
        && x.iter()
            .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(doc: Value, ops: Value) -> Result<Value, JsonPatchError> {
        let ops = parse_operations(&ops).map_err(JsonPatchError)?;
        apply_operations(&doc, &ops)
    }

    fn ok(doc: Value, ops: Value) -> Value {
        match patch(doc, ops) {
            Ok(v) => v,
            Err(e) => panic!("patch failed: {e}"),
        }
    }

    #[test]
    fn rfc6902_appendix_a() {
        // A.1 Adding an Object Member
        assert_eq!(
            ok(
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz","value":"qux"}])
            ),
            json!({"baz":"qux","foo":"bar"})
        );
        // A.2 Adding an Array Element
        assert_eq!(
            ok(
                json!({"foo":["bar","baz"]}),
                json!([{"op":"add","path":"/foo/1","value":"qux"}])
            ),
            json!({"foo":["bar","qux","baz"]})
        );
        // A.3 Removing an Object Member
        assert_eq!(
            ok(
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"remove","path":"/baz"}])
            ),
            json!({"foo":"bar"})
        );
        // A.4 Removing an Array Element
        assert_eq!(
            ok(
                json!({"foo":["bar","qux","baz"]}),
                json!([{"op":"remove","path":"/foo/1"}])
            ),
            json!({"foo":["bar","baz"]})
        );
        // A.5 Replacing a Value
        assert_eq!(
            ok(
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"replace","path":"/baz","value":"boo"}])
            ),
            json!({"baz":"boo","foo":"bar"})
        );
        // A.6 Moving a Value
        assert_eq!(
            ok(
                json!({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}),
                json!([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])
            ),
            json!({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})
        );
        // A.7 Moving an Array Element
        assert_eq!(
            ok(
                json!({"foo":["all","grass","cows","eat"]}),
                json!([{"op":"move","from":"/foo/1","path":"/foo/3"}])
            ),
            json!({"foo":["all","cows","eat","grass"]})
        );
        // A.8 Testing a Value: Success
        assert_eq!(
            ok(
                json!({"baz":"qux","foo":["a",2,"c"]}),
                json!([
                    {"op":"test","path":"/baz","value":"qux"},
                    {"op":"test","path":"/foo/1","value":2}
                ])
            ),
            json!({"baz":"qux","foo":["a",2,"c"]})
        );
        // A.9 Testing a Value: Error
        assert!(
            patch(
                json!({"baz":"qux"}),
                json!([{"op":"test","path":"/baz","value":"bar"}])
            )
            .is_err()
        );
        // A.10 Adding a Nested Member Object
        assert_eq!(
            ok(
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/child","value":{"grandchild":{}}}])
            ),
            json!({"foo":"bar","child":{"grandchild":{}}})
        );
        // A.11 Ignoring Unrecognized Elements
        assert_eq!(
            ok(
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz","value":"qux","xyz":123}])
            ),
            json!({"foo":"bar","baz":"qux"})
        );
        // A.12 Adding to a Nonexistent Target
        assert!(
            patch(
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz/bat","value":"qux"}])
            )
            .is_err()
        );
        // A.14 ~ Escape Ordering
        assert_eq!(
            ok(
                json!({"/":9,"~1":10}),
                json!([{"op":"test","path":"/~01","value":10}])
            ),
            json!({"/":9,"~1":10})
        );
        // A.15 Comparing Strings and Numbers
        assert!(
            patch(
                json!({"/":9,"~1":10}),
                json!([{"op":"test","path":"/~01","value":"10"}])
            )
            .is_err()
        );
        // A.16 Adding an Array Value
        assert_eq!(
            ok(
                json!({"foo":["bar"]}),
                json!([{"op":"add","path":"/foo/-","value":["abc","def"]}])
            ),
            json!({"foo":["bar",["abc","def"]]})
        );
    }

    #[test]
    fn copy_root_and_negative_indices() {
        assert_eq!(
            ok(
                json!({"a":{"b":1}}),
                json!([{"op":"copy","from":"/a","path":"/c"}])
            ),
            json!({"a":{"b":1},"c":{"b":1}})
        );
        assert_eq!(
            ok(
                json!({"a":1}),
                json!([{"op":"replace","path":"","value":[1]}])
            ),
            json!([1])
        );
        assert_eq!(
            ok(
                json!({"a":[1,2,3]}),
                json!([{"op":"remove","path":"/a/-1"}])
            ),
            json!({"a":[1,2]})
        );
        assert_eq!(
            ok(
                json!({"a":[1,2,3]}),
                json!([{"op":"test","path":"/a/0","value":1.0}])
            ),
            json!({"a":[1,2,3]})
        );
        // test of an absent member against null succeeds, as upstream's library does.
        assert_eq!(
            ok(json!({}), json!([{"op":"test","path":"/x","value":null}])),
            json!({})
        );
        // Failures.
        for ops in [
            json!([{"op":"remove","path":"/nope"}]),
            json!([{"op":"replace","path":"/nope","value":1}]),
            json!([{"op":"add","path":"/l/9","value":1}]),
            json!([{"op":"remove","path":"/l/-5"}]),
            json!([{"op":"copy","from":"/nope","path":"/b"}]),
            json!([{"op":"test","path":"/l/0","value":"1"}]),
            json!([{"op":"move","from":"/a","path":"/a/b"}]),
            json!([{"op":"bogus","path":"/a"}]),
            json!([{"op":"add","value":1}]),
            json!([{"op":"add","path":"a","value":1}]),
        ] {
            assert!(
                patch(json!({"a":{},"l":[1]}), ops.clone()).is_err(),
                "{ops}"
            );
        }
    }

    #[test]
    fn server_errors() {
        let doc = json!({"metadata":{"name":"x"},"spec":{"replicas":1}});
        let res = apply_json_patch(
            &doc,
            br#"[{"op":"replace","path":"/spec/replicas","value":3}]"#,
        );
        assert_eq!(
            res.ok(),
            Some(json!({"metadata":{"name":"x"},"spec":{"replicas":3}}))
        );

        let status = |body: &[u8]| apply_json_patch(&doc, body).err().map(|e| e.to_status());
        assert_eq!(
            status(br#"[{"op":"test","path":"/spec/replicas","value":2}]"#),
            Some(json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "the server rejected our request due to an error in our request",
                "reason": "Invalid",
                "details": {},
                "code": 422
            }))
        );
        let msg = |body: &[u8]| {
            apply_json_patch(&doc, body)
                .err()
                .map(|e| (e.code, e.message))
        };
        assert_eq!(
            msg(br#"{"op":"add"}"#),
            Some((400, "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp".to_string()))
        );
        assert_eq!(
            msg(br#"[{"op":"add","path":5}]"#),
            Some((400, "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.path of type string".to_string()))
        );
        assert_eq!(
            msg(b"[{"),
            Some((
                400,
                "error decoding patch: unexpected end of JSON input".to_string()
            ))
        );
        assert_eq!(
            msg(br#"[{"op":"remove","path":"/nope"}]"#).map(|m| m.0),
            Some(422)
        );
        let many = format!(
            "[{}]",
            vec![r#"{"op":"test","path":"/spec"}"#; 10_001].join(",")
        );
        assert_eq!(msg(many.as_bytes()).map(|m| m.0), Some(413));
        assert_eq!(apply_json_patch(&doc, b"null").ok(), Some(doc.clone()));
    }
}
