//! PATCH support: content-type dispatch and the three patch formats the server applies itself.
//!
//! * [`json`]: JSON patch (RFC 6902), `application/json-patch+json`;
//! * [`merge`]: JSON merge patch (RFC 7386), `application/merge-patch+json`;
//! * [`strategic`]: strategic merge patch, `application/strategic-merge-patch+json`, built-in
//!   kinds only.
//!
//! Server-side apply (`application/apply-patch+yaml`) is recognised by [`PatchType`] but handled
//! elsewhere; [`apply_patch`] refuses it.
//!
//! Error statuses follow upstream's `handlers/patch.go` (the server default `fieldValidation=Warn`
//! is assumed for decoding):
//!
//! | failure | status |
//! | --- | --- |
//! | unknown `Content-Type` (built-in resources) | 415 `415: Unsupported Media Type` |
//! | unknown `Content-Type` or SMP (custom resources) | 415 `the body of the request was in an unknown format - accepted media types include: ...` |
//! | JSON patch / merge patch body not decodable | 400 `error decoding patch: <Go json error>` |
//! | merge patch body `null` | 400 `Invalid JSON Patch` |
//! | more than 10000 JSON patch operations | 413 |
//! | JSON patch operation fails (`test`, missing path, ...) | 422 `Invalid`, `the server rejected our request due to an error in our request` (upstream drops the detail) |
//! | strategic merge patch body not decodable | 400 `<Go json error>` |
//! | strategic merge patch format errors (`$retainKeys`, `$setElementOrder`, ...) | 400 with upstream's text |
//! | strategic merge patch semantic errors (missing merge key, ...) | 400 `BadRequest` with upstream's text (upstream answers a non-Status 500; a client's mistake is a 4xx here), the list named for a missing merge key |

pub mod json;
pub mod merge;
pub mod strategic;

use serde_json::Value;

use crate::error::ApiError;

pub use strategic::{BuiltinStrategy, MergeStrategy};

/// `application/json-patch+json`.
pub const JSON_PATCH: &str = "application/json-patch+json";
/// `application/merge-patch+json`.
pub const MERGE_PATCH: &str = "application/merge-patch+json";
/// `application/strategic-merge-patch+json`.
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
/// `application/apply-patch+yaml`.
pub const APPLY_PATCH_YAML: &str = "application/apply-patch+yaml";

/// The patch media types served for custom resources (no strategic merge patch), in upstream's
/// order.
pub const CUSTOM_RESOURCE_PATCH_TYPES: &[&str] = &[JSON_PATCH, MERGE_PATCH, APPLY_PATCH_YAML];

/// Upstream's cap on the operations of one JSON patch.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The kind of a PATCH request, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// RFC 6902 JSON patch.
    Json,
    /// RFC 7386 JSON merge patch.
    Merge,
    /// Strategic merge patch.
    Strategic,
    /// Server-side apply (YAML or JSON body).
    Apply,
}

impl PatchType {
    /// The patch type of a built-in resource's PATCH `Content-Type` (parameters such as
    /// `; charset=utf-8` ignored). Anything else, including the `+cbor` apply variant and a
    /// missing header, is upstream's route-level 415: message `415: Unsupported Media Type`,
    /// empty `details`.
    pub fn from_content_type(ct: &str) -> Result<PatchType, ApiError> {
        match Self::recognise(ct) {
            Some(t) => Ok(t),
            None => Err(ApiError {
                details: Some(Box::default()),
                ..ApiError::new(415, "UnsupportedMediaType", "415: Unsupported Media Type")
            }),
        }
    }

    /// The patch type of a custom resource's PATCH `Content-Type`. Strategic merge patch and
    /// unknown types answer upstream's 415 listing [`CUSTOM_RESOURCE_PATCH_TYPES`].
    pub fn from_content_type_for_custom_resource(ct: &str) -> Result<PatchType, ApiError> {
        match Self::recognise(ct) {
            Some(t) if t != PatchType::Strategic => Ok(t),
            _ => Err(unsupported_patch_type(CUSTOM_RESOURCE_PATCH_TYPES)),
        }
    }

    fn recognise(ct: &str) -> Option<PatchType> {
        // Like go-restful: first entry of a comma list, parameters dropped, exact match.
        let first = ct.split(',').next().unwrap_or_default();
        let base = first.split(';').next().unwrap_or_default().trim();
        match base {
            JSON_PATCH => Some(PatchType::Json),
            MERGE_PATCH => Some(PatchType::Merge),
            STRATEGIC_MERGE_PATCH => Some(PatchType::Strategic),
            APPLY_PATCH_YAML => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// Upstream's negotiation 415 for a patch type outside `supported` (no `details`):
/// `the body of the request was in an unknown format - accepted media types include: ...`.
pub fn unsupported_patch_type(supported: &[&str]) -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            supported.join(", ")
        ),
    )
}

/// Applies a JSON, merge or strategic merge patch body to `original` and returns the patched
/// document.
///
/// `strategy` gives the list merge strategies for [`PatchType::Strategic`]; without one every
/// list is replaced (the result is that of a merge patch, directives aside). It is ignored for
/// the other types. [`PatchType::Apply`] must be routed to server-side apply and answers a 500
/// here.
pub fn apply_patch(
    kind: PatchType,
    original: &Value,
    patch_body: &[u8],
    strategy: Option<&dyn MergeStrategy>,
) -> Result<Value, ApiError> {
    match kind {
        PatchType::Json => json::apply_json_patch(original, patch_body),
        PatchType::Merge => merge::apply_merge_patch(original, patch_body),
        PatchType::Strategic => {
            strategic::apply_strategic_merge_patch(original, patch_body, strategy)
        }
        PatchType::Apply => Err(ApiError::internal(
            "apply patches (application/apply-patch+yaml) must be routed to server-side apply, not apply_patch",
        )),
    }
}

/// Upstream's 422 for a patch that decodes but cannot be applied (`NewGenericServerResponse`
/// with code 422): the detail is not part of the response.
pub(crate) fn rejected_patch() -> ApiError {
    ApiError {
        details: Some(Box::default()),
        ..ApiError::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        )
    }
}

/// Go's name of a JSON value's kind in `json: cannot unmarshal <kind> into ...` messages.
pub(crate) fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Decodes a JSON document, reporting syntax errors with the text of Go's `encoding/json`
/// (`unexpected end of JSON input`, `invalid character 'x' looking for beginning of value`, ...),
/// which is what upstream puts in its 400 messages.
pub fn decode_json(body: &[u8]) -> Result<Value, String> {
    GoScanner { b: body, pos: 0 }.check()?;
    serde_json::from_slice(body).map_err(|e| e.to_string())
}

/// Go's `quoteChar` for the offending byte of a syntax error.
fn go_quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        _ => {
            // Go quotes string(c), i.e. the rune U+00XX.
            let ch = char::from(c);
            let inner = match ch {
                '\\' => "\\\\".to_string(),
                '\u{7}' => "\\a".to_string(),
                '\u{8}' => "\\b".to_string(),
                '\u{c}' => "\\f".to_string(),
                '\n' => "\\n".to_string(),
                '\r' => "\\r".to_string(),
                '\t' => "\\t".to_string(),
                '\u{b}' => "\\v".to_string(),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => format!("\\x{:02x}", c as u32),
                c if c.is_control() => format!("\\u{:04x}", c as u32),
                c => c.to_string(),
            };
            format!("'{inner}'")
        }
    }
}

/// A syntax checker with the error texts of Go's `encoding/json` scanner.
struct GoScanner<'a> {
    b: &'a [u8],
    pos: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

const GO_EOF: &str = "unexpected end of JSON input";
const GO_MAX_DEPTH: usize = 10_000;

impl GoScanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\r' | b'\n') = self.peek() {
            self.pos += 1;
        }
    }

    fn err(c: u8, context: &str) -> String {
        format!("invalid character {} {context}", go_quote_char(c))
    }

    /// Scans one document. Iterative (an explicit stack of open containers), so deeply nested
    /// input cannot exhaust the thread's stack.
    fn check(&mut self) -> Result<(), String> {
        let mut stack: Vec<Container> = Vec::new();
        self.skip_ws();
        'value: loop {
            // The start of a value.
            let Some(c) = self.peek() else {
                return Err(GO_EOF.to_string());
            };
            match c {
                b'{' | b'[' => {
                    if stack.len() + 1 > GO_MAX_DEPTH {
                        return Err(Self::err(c, "exceeded max depth"));
                    }
                    self.pos += 1;
                    self.skip_ws();
                    let close = if c == b'{' { b'}' } else { b']' };
                    match self.peek() {
                        None => return Err(GO_EOF.to_string()),
                        Some(n) if n == close => self.pos += 1,
                        Some(_) if c == b'[' => {
                            stack.push(Container::Array);
                            continue 'value;
                        }
                        Some(b'"') => {
                            self.object_key()?;
                            stack.push(Container::Object);
                            continue 'value;
                        }
                        Some(n) => {
                            return Err(Self::err(n, "looking for beginning of object key string"));
                        }
                    }
                }
                b'"' => self.string()?,
                b'-' | b'0'..=b'9' => self.number()?,
                b't' => self.literal(b"true", "true")?,
                b'f' => self.literal(b"false", "false")?,
                b'n' => self.literal(b"null", "null")?,
                c => return Err(Self::err(c, "looking for beginning of value")),
            }
            // A value is complete: what may follow depends on the enclosing container.
            loop {
                self.skip_ws();
                let Some(top) = stack.last() else {
                    return match self.peek() {
                        None => Ok(()),
                        Some(c) => Err(Self::err(c, "after top-level value")),
                    };
                };
                let (close, context) = match top {
                    Container::Object => (b'}', "after object key:value pair"),
                    Container::Array => (b']', "after array element"),
                };
                match self.peek() {
                    None => return Err(GO_EOF.to_string()),
                    Some(b',') => {
                        self.pos += 1;
                        self.skip_ws();
                        if *top == Container::Object {
                            match self.peek() {
                                None => return Err(GO_EOF.to_string()),
                                Some(b'"') => self.object_key()?,
                                Some(c) => {
                                    return Err(Self::err(
                                        c,
                                        "looking for beginning of object key string",
                                    ));
                                }
                            }
                        }
                        continue 'value;
                    }
                    Some(c) if c == close => {
                        self.pos += 1;
                        stack.pop();
                    }
                    Some(c) => return Err(Self::err(c, context)),
                }
            }
        }
    }

    /// An object key and its colon, leaving the scanner at the member's value.
    fn object_key(&mut self) -> Result<(), String> {
        self.string()?;
        self.skip_ws();
        match self.peek() {
            None => return Err(GO_EOF.to_string()),
            Some(b':') => self.pos += 1,
            Some(c) => return Err(Self::err(c, "after object key")),
        }
        self.skip_ws();
        Ok(())
    }

    fn literal(&mut self, word: &[u8], name: &str) -> Result<(), String> {
        for expected in word {
            match self.peek() {
                None => return Err(GO_EOF.to_string()),
                Some(c) if c == *expected => self.pos += 1,
                Some(c) => {
                    let context =
                        format!("in literal {name} (expecting {})", go_quote_char(*expected));
                    return Err(Self::err(c, &context));
                }
            }
        }
        Ok(())
    }

    fn string(&mut self) -> Result<(), String> {
        self.pos += 1; // opening quote
        loop {
            let Some(c) = self.peek() else {
                return Err(GO_EOF.to_string());
            };
            self.pos += 1;
            match c {
                b'"' => return Ok(()),
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err(GO_EOF.to_string());
                    };
                    self.pos += 1;
                    match e {
                        b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {}
                        b'u' => {
                            for _ in 0..4 {
                                let Some(h) = self.peek() else {
                                    return Err(GO_EOF.to_string());
                                };
                                if !h.is_ascii_hexdigit() {
                                    return Err(Self::err(
                                        h,
                                        "in \\u hexadecimal character escape",
                                    ));
                                }
                                self.pos += 1;
                            }
                        }
                        other => return Err(Self::err(other, "in string escape code")),
                    }
                }
                c if c < 0x20 => return Err(Self::err(c, "in string literal")),
                _ => {}
            }
        }
    }

    fn number(&mut self) -> Result<(), String> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
            match self.peek() {
                None => return Err(GO_EOF.to_string()),
                Some(b'0'..=b'9') => {}
                Some(c) => return Err(Self::err(c, "in numeric literal")),
            }
        }
        if self.peek() == Some(b'0') {
            self.pos += 1;
        } else {
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            match self.peek() {
                None => return Err(GO_EOF.to_string()),
                Some(b'0'..=b'9') => {}
                Some(c) => return Err(Self::err(c, "after decimal point in numeric literal")),
            }
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            match self.peek() {
                None => return Err(GO_EOF.to_string()),
                Some(b'0'..=b'9') => {}
                Some(c) => return Err(Self::err(c, "in exponent of numeric literal")),
            }
            while let Some(b'0'..=b'9') = self.peek() {
                self.pos += 1;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types() {
        assert_eq!(
            PatchType::from_content_type("application/json-patch+json").ok(),
            Some(PatchType::Json)
        );
        assert_eq!(
            PatchType::from_content_type("application/merge-patch+json; charset=utf-8").ok(),
            Some(PatchType::Merge)
        );
        assert_eq!(
            PatchType::from_content_type("application/strategic-merge-patch+json").ok(),
            Some(PatchType::Strategic)
        );
        assert_eq!(
            PatchType::from_content_type("application/apply-patch+yaml").ok(),
            Some(PatchType::Apply)
        );
        for bad in [
            "application/json",
            "",
            "application/apply-patch+cbor",
            "text/plain",
        ] {
            let err = PatchType::from_content_type(bad).err();
            let status = err.map(|e| e.to_status());
            assert_eq!(
                status,
                Some(json!({
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": "415: Unsupported Media Type",
                    "reason": "UnsupportedMediaType",
                    "details": {},
                    "code": 415
                })),
                "{bad}"
            );
        }
    }

    #[test]
    fn custom_resource_content_types() {
        assert_eq!(
            PatchType::from_content_type_for_custom_resource("application/merge-patch+json").ok(),
            Some(PatchType::Merge)
        );
        let err = PatchType::from_content_type_for_custom_resource(
            "application/strategic-merge-patch+json",
        )
        .err();
        assert_eq!(
            err.map(|e| e.to_status()),
            Some(json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                "reason": "UnsupportedMediaType",
                "code": 415
            }))
        );
    }

    #[test]
    fn apply_is_not_handled_here() {
        let err = apply_patch(PatchType::Apply, &json!({}), b"{}", None).err();
        assert_eq!(err.map(|e| e.code), Some(500));
    }

    #[test]
    fn go_json_errors() {
        let cases: &[(&str, &str)] = &[
            ("", "unexpected end of JSON input"),
            ("{\"a\":", "unexpected end of JSON input"),
            (
                "{\"apiVersion\":\"v1\",\"kind\":\"Con",
                "unexpected end of JSON input",
            ),
            ("x", "invalid character 'x' looking for beginning of value"),
            (
                "{x",
                "invalid character 'x' looking for beginning of object key string",
            ),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            (
                "{\"a\":1 \"b\"}",
                "invalid character '\"' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            (
                "[1,]",
                "invalid character ']' looking for beginning of value",
            ),
            ("{\"a\":1}}", "invalid character '}' after top-level value"),
            ("01", "invalid character '1' after top-level value"),
            ("-x", "invalid character 'x' in numeric literal"),
            (
                "1.x",
                "invalid character 'x' after decimal point in numeric literal",
            ),
            (
                "1ex",
                "invalid character 'x' in exponent of numeric literal",
            ),
            ("tru", "unexpected end of JSON input"),
            (
                "trUe",
                "invalid character 'U' in literal true (expecting 'u')",
            ),
            (
                "nul1",
                "invalid character '1' in literal null (expecting 'l')",
            ),
            ("\"a\\x\"", "invalid character 'x' in string escape code"),
            (
                "\"\\u12g4\"",
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            ("\"a\nb\"", "invalid character '\\n' in string literal"),
            (
                "{'a':1}",
                "invalid character '\\'' looking for beginning of object key string",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                decode_json(input.as_bytes()).err().as_deref(),
                Some(*want),
                "{input:?}"
            );
        }
        let deep = "[".repeat(20_000);
        assert_eq!(
            decode_json(deep.as_bytes()).err().as_deref(),
            Some("invalid character '[' exceeded max depth")
        );
        let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
        assert!(
            decode_json(deep.as_bytes()).is_err(),
            "serde_json's own depth limit applies"
        );
        assert_eq!(
            decode_json(b"{\"a\":{}, \"b\":[[],{}]}").ok(),
            Some(json!({"a": {}, "b": [[], {}]}))
        );
        assert_eq!(
            decode_json(b" {\"a\": [1, 2.5e3, -1, true, null, \"\\u00e9\"]} ").ok(),
            Some(json!({"a": [1, 2.5e3, -1, true, null, "é"]}))
        );
    }
}
