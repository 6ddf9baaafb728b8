//! Object name, label, annotation, finalizer and ownerReference validation.
//!
//! Ports of upstream's `k8s.io/apimachinery` validators (`pkg/util/validation`,
//! `pkg/api/validate/content`, `pkg/api/validation/objectmeta.go` and
//! `pkg/apis/meta/v1/validation`), producing the same messages and field paths.
//!
//! Note the two upstream flavours of the length message: object names (DNS subdomains and
//! labels, namespaces) say `must be no more than N characters`, while label keys, label
//! values, annotation keys and finalizers (the `content` package) say `must be no more than N
//! bytes`. Both are reproduced as upstream prints them.

use serde_json::{Map, Value};

use crate::error::Cause;

/// Which rule an object's `metadata.name` (and `generateName`) must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// A lowercase RFC 1123 subdomain, at most 253 characters (`NameIsDNSSubdomain`); used by
    /// most kinds, including custom resources.
    Subdomain,
    /// A lowercase RFC 1123 label, at most 63 characters (`NameIsDNSLabel`); e.g. namespaces.
    Label,
    /// Anything that can be a URL path segment: not `.` or `..`, no `/` or `%`
    /// (`IsPathSegmentName`); used for embedded resources and a few kinds such as RBAC roles.
    PathSegment,
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Maximum length of a DNS-1123 label (and of a label value and the name part of a label key).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Maximum total size (keys plus values, in bytes) of an object's annotations.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
const FIELD_MANAGER_MAX_LENGTH: usize = 128;
const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;
const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";
const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";

/// Upstream's `RegexError`: `msg (e.g. 'a',  or 'b', regex used for validation is 're')`.
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{re}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(re);
    out.push_str("')");
    out
}

/// `pkg/util/validation.MaxLenError` (used for object names).
fn max_len_chars(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `pkg/api/validate/content.MaxLenError` (used for label keys/values).
fn max_len_bytes(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// Matches `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`.
fn matches_dns1123_label(value: &str) -> bool {
    let b = value.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            is_lower_alnum(first)
                && is_lower_alnum(last)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Matches the DNS-1123 subdomain regex (dot-separated labels, no per-label length limit).
fn matches_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(matches_dns1123_label)
}

/// Matches `^[a-z]([-a-z0-9]*[a-z0-9])?$`.
fn matches_dns1035_label(value: &str) -> bool {
    let b = value.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            first.is_ascii_lowercase()
                && is_lower_alnum(last)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Matches `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`.
fn matches_label_key_name(value: &str) -> bool {
    let b = value.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
        }
        _ => false,
    }
}

/// Upstream `IsDNS1123Subdomain`: at most 253 characters, lowercase RFC 1123 subdomain.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_chars(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// The `content` package's `IsDNS1123Subdomain` (length message in bytes), used for the
/// prefix of qualified names.
fn content_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_bytes(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Upstream `IsDNS1123Label`: at most 63 characters, lowercase RFC 1123 label.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_chars(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Upstream `IsDNS1035Label`: at most 63 characters, starts with a letter.
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_chars(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Upstream `IsPathSegmentName`: may not be `.` or `..`, may not contain `/` or `%`.
pub fn path_segment_name(value: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if value == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    path_segment_prefix(value)
}

/// Upstream `IsPathSegmentPrefix`: may not contain `/` or `%`. Korral also refuses control
/// characters (NUL, newlines...), which upstream lets through: such a name cannot be typed,
/// printed or used safely as a path or log field.
pub fn path_segment_prefix(value: &str) -> Vec<String> {
    let mut errs: Vec<String> = ["/", "%"]
        .iter()
        .filter(|illegal| value.contains(*illegal))
        .map(|illegal| format!("may not contain '{illegal}'"))
        .collect();
    if value.chars().any(char::is_control) {
        errs.push("may not contain control characters".to_string());
    }
    errs
}

/// Upstream `maskTrailingDash` (drops the last two bytes and appends `a`, exactly as upstream).
fn mask_trailing_dash(name: &str) -> String {
    let bytes = name.as_bytes();
    if bytes.len() > 1 && name.ends_with('-') {
        let mut out = String::from_utf8_lossy(&bytes[..bytes.len() - 2]).into_owned();
        out.push('a');
        out
    } else {
        name.to_string()
    }
}

/// Validates a name (or, with `prefix`, a `generateName`) against a [`NameRule`]; returns the
/// upstream messages (`NameIsDNSSubdomain`, `NameIsDNSLabel`, path-segment rules).
pub fn validate_name(name: &str, rule: NameRule, prefix: bool) -> Vec<String> {
    match rule {
        NameRule::Subdomain => {
            if prefix {
                dns1123_subdomain(&mask_trailing_dash(name))
            } else {
                dns1123_subdomain(name)
            }
        }
        NameRule::Label => {
            if prefix {
                dns1123_label(&mask_trailing_dash(name))
            } else {
                dns1123_label(name)
            }
        }
        NameRule::PathSegment => {
            if prefix {
                path_segment_prefix(name)
            } else {
                path_segment_name(name)
            }
        }
    }
}

/// Upstream `IsQualifiedName` / `IsLabelKey`: an optional DNS-subdomain prefix and `/`, then a
/// name of at most 63 characters. Used for label keys, annotation keys and finalizers.
pub fn validate_label_key(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    content_dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_ERR,
                    LABEL_KEY_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_bytes(DNS1123_LABEL_MAX_LENGTH)
        ));
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Same as [`validate_label_key`]: upstream's "qualified name" rule.
pub fn validate_qualified_name(value: &str) -> Vec<String> {
    validate_label_key(value)
}

/// Upstream `IsValidLabelValue`: empty, or at most 63 characters of the label-name alphabet.
pub fn validate_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_bytes(DNS1123_LABEL_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_label_key_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// Rendering helpers shared with the schema validator: values printed as upstream's
// `field.Error.ErrorBody` prints them (Go `%q` for strings, `%v` for numbers, JSON otherwise).
// ---------------------------------------------------------------------------------------------

/// Go's `strconv.Quote`: a double-quoted string with Go escapes.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            ' ' => out.push(' '),
            c if c.is_control() || c.is_whitespace() || c == '\u{feff}' => {
                let code = u32::from(c);
                if code < 0x80 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code < 0x10000 {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Go's `%v` for a `float64`: the shortest representation, in `%e` form when the decimal
/// exponent is below -4 or at least 6 (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return f.to_string();
    };
    let Ok(exp) = exp.parse::<i32>() else {
        return f.to_string();
    };
    if (-4..6).contains(&exp) {
        // Rust's Display prints the shortest round-trip digits without an exponent.
        return f.to_string();
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
}

/// Renders a JSON value as upstream's `field.Error` prints a bad value: strings quoted, numbers
/// as Go prints `int64`/`float64`, booleans bare, `null`, objects and arrays as JSON.
pub(crate) fn go_render(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// Go's `%#v` of a byte slice of type `ty` (`[]byte` given directly, `[]uint8` inside a
/// struct): `[]byte{0x2d, 0x2d}`, `[]byte{}` when empty.
pub(crate) fn go_bytes(ty: &str, bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:#x}")).collect();
    format!("{ty}{{{}}}", hex.join(", "))
}

/// A `FieldValueInvalid` cause whose bad value is already rendered.
pub(crate) fn invalid_rendered(field: &str, rendered: &str, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        format!("Invalid value: {rendered}")
    } else {
        format!("Invalid value: {rendered}: {detail}")
    };
    Cause::new("FieldValueInvalid", field, message)
}

/// A `FieldValueInvalid` cause for a JSON value, rendered as upstream does.
pub(crate) fn invalid_value(field: &str, value: &Value, detail: &str) -> Cause {
    invalid_rendered(field, &go_render(value), detail)
}

/// Upstream's `field.TooLong` (value omitted): `Too long: may not be more than N bytes`.
pub(crate) fn too_long(field: &str, max: i64) -> Cause {
    let detail = if max >= 0 {
        let unit = if max == 1 { "byte" } else { "bytes" };
        format!("may not be more than {max} {unit}")
    } else {
        "value is too long".to_string()
    };
    Cause::new("FieldValueTooLong", field, format!("Too long: {detail}"))
}

/// Upstream's `isNegativeErrorMsg`.
pub(crate) const NEGATIVE: &str = "must be greater than or equal to 0";

/// `ValidateNonnegativeField` for the integer at `field` of `obj` (absent is fine).
pub(crate) fn nonnegative(obj: &Value, field: &str, path: &str) -> Option<Cause> {
    let value = obj.get(field)?;
    (value.as_i64()? < 0).then(|| invalid_value(&child(path, field), value, NEGATIVE))
}

/// `field.Path.Child`: `parent.name` (or `name` at the root).
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// `field.Path.Index`: `parent[i]`.
pub(crate) fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// `field.Path.Key`: `parent[key]`.
pub(crate) fn key(parent: &str, key: &str) -> String {
    format!("{parent}[{key}]")
}

/// The JSON type name Go's decoder prints in `cannot unmarshal X into ...`.
fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn unmarshal_error(field: &str, value: &Value, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field ObjectMeta.{field} of type {go_type}",
        json_type_name(value)
    )
}

/// The string at `meta[field]`; `Err` with a cause when it has the wrong type (null = absent).
fn meta_str<'a>(meta: &'a Map<String, Value>, field: &str, path: &str) -> Result<&'a str, Cause> {
    match meta.get(field) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(invalid_value(
            &child(path, field),
            other,
            &unmarshal_error(field, other, "string"),
        )),
    }
}

/// A `map[string]string` at `meta[field]` (labels, annotations).
fn meta_string_map<'a>(
    meta: &'a Map<String, Value>,
    field: &str,
    path: &str,
) -> Result<Vec<(&'a str, &'a str)>, Cause> {
    match meta.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => {
            let mut out = Vec::with_capacity(m.len());
            for (k, v) in m {
                match v {
                    Value::String(s) => out.push((k.as_str(), s.as_str())),
                    Value::Null => out.push((k.as_str(), "")),
                    other => {
                        return Err(invalid_value(
                            &child(path, field),
                            other,
                            &unmarshal_error(field, other, "string"),
                        ));
                    }
                }
            }
            Ok(out)
        }
        Some(other) => Err(invalid_value(
            &child(path, field),
            other,
            &unmarshal_error(field, other, "map[string]string"),
        )),
    }
}

/// A `[]string` at `meta[field]` (finalizers).
fn meta_string_list<'a>(
    meta: &'a Map<String, Value>,
    field: &str,
    path: &str,
) -> Result<Vec<&'a str>, Cause> {
    match meta.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::String(s) => out.push(s.as_str()),
                    Value::Null => out.push(""),
                    other => {
                        return Err(invalid_value(
                            &child(path, field),
                            other,
                            &unmarshal_error(field, other, "string"),
                        ));
                    }
                }
            }
            Ok(out)
        }
        Some(other) => Err(invalid_value(
            &child(path, field),
            other,
            &unmarshal_error(field, other, "[]string"),
        )),
    }
}

/// An `int64` at `meta[field]` (generation).
fn meta_i64(meta: &Map<String, Value>, field: &str, path: &str) -> Result<i64, Cause> {
    match meta.get(field) {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(n)) if n.as_i64().is_some() => Ok(n.as_i64().unwrap_or(0)),
        Some(other) => Err(invalid_value(
            &child(path, field),
            other,
            &unmarshal_error(field, other, "int64"),
        )),
    }
}

/// Validates `metadata.labels` (a JSON object of strings) as upstream `ValidateLabels`.
pub fn validate_labels(labels: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let Value::Object(m) = labels else {
        if !labels.is_null() {
            errs.push(invalid_value(path, labels, "must be a map of strings"));
        }
        return errs;
    };
    for (k, v) in m {
        for msg in validate_label_key(k) {
            errs.push(invalid_value(path, &Value::String(k.clone()), &msg));
        }
        let value = v.as_str().unwrap_or("");
        for msg in validate_label_value(value) {
            errs.push(invalid_value(path, v, &msg));
        }
    }
    errs
}

fn labels_from_pairs(pairs: &[(&str, &str)], path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    for (k, v) in pairs {
        for msg in validate_label_key(k) {
            errs.push(invalid_rendered(path, &go_quote(k), &msg));
        }
        for msg in validate_label_value(v) {
            errs.push(invalid_rendered(path, &go_quote(v), &msg));
        }
    }
    errs
}

fn annotations_from_pairs(pairs: &[(&str, &str)], path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (k, v) in pairs {
        for msg in validate_label_key(&k.to_lowercase()) {
            errs.push(invalid_rendered(path, &go_quote(k), &msg));
        }
        total = total.saturating_add(k.len()).saturating_add(v.len());
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT as i64));
    }
    errs
}

/// Validates `metadata.annotations` as upstream `ValidateAnnotations`: keys are qualified
/// names (case-insensitively), total size at most 256 KiB
/// (`Too long: may not be more than 262144 bytes`).
pub fn validate_annotations(annotations: &Value, path: &str) -> Vec<Cause> {
    let Value::Object(m) = annotations else {
        if annotations.is_null() {
            return Vec::new();
        }
        return vec![invalid_value(path, annotations, "must be a map of strings")];
    };
    let pairs: Vec<(&str, &str)> = m
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        .collect();
    annotations_from_pairs(&pairs, path)
}

/// Validates `metadata.finalizers` as upstream `ValidateFinalizers`: each a qualified name, and
/// not both `orphan` and `foregroundDeletion`.
pub fn validate_finalizers(finalizers: &[&str], path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    for f in finalizers {
        for msg in validate_label_key(f) {
            errs.push(invalid_rendered(path, &go_quote(f), &msg));
        }
    }
    let orphan = finalizers.contains(&FINALIZER_ORPHAN_DEPENDENTS);
    let foreground = finalizers.contains(&FINALIZER_DELETE_DEPENDENTS);
    if orphan && foreground {
        let rendered = serde_json::to_string(finalizers).unwrap_or_default();
        errs.push(invalid_rendered(
            path,
            &rendered,
            &format!(
                "finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set"
            ),
        ));
    }
    errs
}

/// The finalizers a name without a domain may be (upstream's `standardFinalizers`).
const STANDARD_FINALIZERS: [&str; 3] = [
    "kubernetes",
    FINALIZER_ORPHAN_DEPENDENTS,
    FINALIZER_DELETE_DEPENDENTS,
];

/// Whether a finalizer name has no domain and is not one of the standard finalizers.
fn unqualified_nonstandard(finalizer: &str) -> bool {
    !finalizer.contains('/') && !STANDARD_FINALIZERS.contains(&finalizer)
}

/// Upstream's `validateKubeFinalizerName` over `metadata.finalizers` of a built-in kind: a name
/// without a domain must be one of the standard finalizers.
pub fn validate_kube_finalizer_names(finalizers: &[&str], path: &str) -> Vec<Cause> {
    finalizers
        .iter()
        .enumerate()
        .filter(|(_, f)| unqualified_nonstandard(f))
        .map(|(i, f)| {
            invalid_rendered(
                &index(path, i),
                &go_quote(f),
                "name is neither a standard finalizer name nor is it fully qualified",
            )
        })
        .collect()
}

/// The warnings upstream answers for a custom resource's finalizers without a domain.
pub fn unqualified_finalizer_warnings(finalizers: &[&str], path: &str) -> Vec<String> {
    finalizers
        .iter()
        .enumerate()
        .filter(|(_, f)| unqualified_nonstandard(f))
        .map(|(i, f)| {
            format!(
                "{}: {}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                index(path, i),
                go_quote(f)
            )
        })
        .collect()
}

/// Upstream `schema.ParseGroupVersion`: `(group, version)` or the error message.
pub(crate) fn parse_group_version(gv: &str) -> Result<(String, String), String> {
    if gv.is_empty() || gv == "/" {
        return Ok((String::new(), String::new()));
    }
    match gv.matches('/').count() {
        0 => Ok((String::new(), gv.to_string())),
        1 => {
            let (g, v) = gv.split_once('/').unwrap_or(("", gv));
            Ok((g.to_string(), v.to_string()))
        }
        _ => Err(format!("unexpected GroupVersion string: {gv}")),
    }
}

/// An ownerReference serialised the way Go's `json.Marshal(metav1.OwnerReference)` does.
fn render_owner_reference(r: &Map<String, Value>) -> String {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    // Go field order: apiVersion, kind, name, uid, controller, blockOwnerDeletion.
    let mut text = format!(
        "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
        serde_json::to_string(&s("apiVersion")).unwrap_or_default(),
        serde_json::to_string(&s("kind")).unwrap_or_default(),
        serde_json::to_string(&s("name")).unwrap_or_default(),
        serde_json::to_string(&s("uid")).unwrap_or_default(),
    );
    if let Some(Value::Bool(b)) = r.get("controller") {
        text.push_str(&format!(",\"controller\":{b}"));
    }
    if let Some(Value::Bool(b)) = r.get("blockOwnerDeletion") {
        text.push_str(&format!(",\"blockOwnerDeletion\":{b}"));
    }
    text.push('}');
    text
}

/// Validates `metadata.ownerReferences` as upstream `ValidateOwnerReferences`: apiVersion,
/// kind, name and uid required; at most one reference with `controller: true`.
pub fn validate_owner_references(refs: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let items = match refs {
        Value::Null => return errs,
        Value::Array(items) => items,
        other => {
            errs.push(invalid_value(
                path,
                other,
                &unmarshal_error("ownerReferences", other, "[]v1.OwnerReference"),
            ));
            return errs;
        }
    };
    let empty = Map::new();
    let mut first_controller = String::new();
    for (i, item) in items.iter().enumerate() {
        let p = index(path, i);
        let r = match item {
            Value::Object(m) => m,
            Value::Null => &empty,
            other => {
                errs.push(invalid_value(
                    &p,
                    other,
                    &unmarshal_error("ownerReferences", other, "v1.OwnerReference"),
                ));
                continue;
            }
        };
        let get = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let api_version = get("apiVersion");
        let kind = get("kind");
        let parsed = parse_group_version(api_version);
        if api_version.is_empty() {
            errs.push(Cause::required(
                child(&p, "apiVersion"),
                "must not be empty",
            ));
        } else if parsed.as_ref().map(|(_, v)| v.is_empty()).unwrap_or(true) {
            errs.push(invalid_rendered(
                &child(&p, "apiVersion"),
                &go_quote(api_version),
                "must be <group>/<version> or <version>",
            ));
        }
        if kind.is_empty() {
            errs.push(Cause::required(child(&p, "kind"), "must not be empty"));
        }
        if get("name").is_empty() {
            errs.push(Cause::required(child(&p, "name"), "must not be empty"));
        }
        if get("uid").is_empty() {
            errs.push(Cause::required(child(&p, "uid"), "must not be empty"));
        }
        let (group, version) = parsed.unwrap_or_default();
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(invalid_rendered(
                &p,
                &render_owner_reference(r),
                &format!("{group}/{version}, Kind={kind} is disallowed from being an owner"),
            ));
        }
        if r.get("controller") == Some(&Value::Bool(true)) {
            let current = format!("{kind}/{}", get("name"));
            if first_controller.is_empty() {
                first_controller = current;
            } else {
                let rendered = format!(
                    "[{}]",
                    items
                        .iter()
                        .map(|it| match it {
                            Value::Object(m) => render_owner_reference(m),
                            _ => render_owner_reference(&empty),
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                );
                errs.push(invalid_rendered(
                    path,
                    &rendered,
                    &format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first_controller} and {current}"
                    ),
                ));
            }
        }
    }
    errs
}

/// Go's `%#U` for a rune: `U+0007` (with the quoted character when printable).
fn go_sharp_u(c: char) -> String {
    format!("U+{:04X}", u32::from(c))
}

/// Validates `metadata.managedFields` as upstream `ValidateManagedFields`.
pub fn validate_managed_fields(fields: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let Value::Array(items) = fields else {
        return errs;
    };
    for (i, item) in items.iter().enumerate() {
        let p = index(path, i);
        let Value::Object(m) = item else {
            continue;
        };
        let get = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
        match get("operation") {
            "" => errs.push(Cause::required(child(&p, "operation"), "must not be empty")),
            "Apply" | "Update" => {}
            other => errs.push(Cause::new(
                "FieldValueNotSupported",
                child(&p, "operation"),
                format!(
                    "Unsupported value: {}: supported values: \"Apply\", \"Update\"",
                    go_quote(other)
                ),
            )),
        }
        let fields_type = get("fieldsType");
        if !fields_type.is_empty() && fields_type != "FieldsV1" {
            errs.push(invalid_rendered(
                &child(&p, "fieldsType"),
                &go_quote(fields_type),
                "must be `FieldsV1`",
            ));
        }
        let manager = get("manager");
        if manager.len() > FIELD_MANAGER_MAX_LENGTH {
            errs.push(too_long(
                &child(&p, "manager"),
                FIELD_MANAGER_MAX_LENGTH as i64,
            ));
        }
        for (pos, c) in manager.char_indices() {
            if c.is_control() {
                errs.push(invalid_rendered(
                    &child(&p, "manager"),
                    &go_quote(manager),
                    &format!("invalid character {} (at position {pos})", go_sharp_u(c)),
                ));
            }
        }
        if get("subresource").len() > MAX_SUBRESOURCE_NAME_LENGTH {
            errs.push(too_long(
                &child(&p, "subresource"),
                MAX_SUBRESOURCE_NAME_LENGTH as i64,
            ));
        }
    }
    errs
}

/// Validates an object's `metadata` on create as upstream `ValidateObjectMeta` does: name or
/// generateName present and well formed per `name_rule`, namespace required (namespaced) or
/// forbidden (cluster-scoped), non-negative generation, labels, annotations, ownerReferences,
/// finalizers and managedFields. `path` is the metadata's field path, normally `"metadata"`.
///
/// Fields of the wrong JSON type are reported with Go's decoding message on that field.
pub fn validate_object_meta(
    meta: &Value,
    namespaced: bool,
    name_rule: NameRule,
    path: &str,
) -> Vec<Cause> {
    let empty = Map::new();
    let m = match meta {
        Value::Object(m) => m,
        Value::Null => &empty,
        other => {
            return vec![invalid_value(
                path,
                other,
                &format!(
                    "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
                    json_type_name(other)
                ),
            )];
        }
    };
    let mut errs = Vec::new();
    fn take(r: Result<&str, Cause>, errs: &mut Vec<Cause>) -> Option<String> {
        match r {
            Ok(s) => Some(s.to_string()),
            Err(c) => {
                errs.push(c);
                None
            }
        }
    }
    let generate_name = take(meta_str(m, "generateName", path), &mut errs);
    let name = take(meta_str(m, "name", path), &mut errs);
    let namespace = take(meta_str(m, "namespace", path), &mut errs);

    if let Some(gen_name) = &generate_name
        && !gen_name.is_empty()
    {
        for msg in validate_name(gen_name, name_rule, true) {
            errs.push(invalid_rendered(
                &child(path, "generateName"),
                &go_quote(gen_name),
                &msg,
            ));
        }
    }
    if let Some(name) = &name {
        if name.is_empty() {
            errs.push(Cause::required(
                child(path, "name"),
                "name or generateName is required",
            ));
        } else {
            for msg in validate_name(name, name_rule, false) {
                errs.push(invalid_rendered(
                    &child(path, "name"),
                    &go_quote(name),
                    &msg,
                ));
            }
        }
    }
    if let Some(ns) = &namespace {
        errs.extend(validate_namespace_field(ns, namespaced, path));
    }
    errs.extend(common_meta(m, path));
    match meta_string_list(m, "finalizers", path) {
        Ok(list) => errs.extend(validate_finalizers(&list, &child(path, "finalizers"))),
        Err(c) => errs.push(c),
    }
    if let Some(mf) = m.get("managedFields") {
        errs.extend(validate_managed_fields(mf, &child(path, "managedFields")));
    }
    errs
}

fn validate_namespace_field(ns: &str, namespaced: bool, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if namespaced {
        if ns.is_empty() {
            errs.push(Cause::required(child(path, "namespace"), ""));
        } else {
            for msg in validate_name(ns, NameRule::Label, false) {
                errs.push(invalid_rendered(
                    &child(path, "namespace"),
                    &go_quote(ns),
                    &msg,
                ));
            }
        }
    } else if !ns.is_empty() {
        errs.push(Cause::forbidden(
            child(path, "namespace"),
            "not allowed on this type",
        ));
    }
    errs
}

/// Generation, labels, annotations and ownerReferences (shared by create and update).
fn common_meta(m: &Map<String, Value>, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    match meta_i64(m, "generation", path) {
        Ok(g) if g < 0 => errs.push(invalid_rendered(
            &child(path, "generation"),
            &g.to_string(),
            "must be greater than or equal to 0",
        )),
        Ok(_) => {}
        Err(c) => errs.push(c),
    }
    match meta_string_map(m, "labels", path) {
        Ok(pairs) => errs.extend(labels_from_pairs(&pairs, &child(path, "labels"))),
        Err(c) => errs.push(c),
    }
    match meta_string_map(m, "annotations", path) {
        Ok(pairs) => errs.extend(annotations_from_pairs(&pairs, &child(path, "annotations"))),
        Err(c) => errs.push(c),
    }
    if let Some(refs) = m.get("ownerReferences") {
        errs.extend(validate_owner_references(
            refs,
            &child(path, "ownerReferences"),
        ));
    }
    errs
}

/// Upstream's `IsDomainPrefixedPath` (IngressClass controllers, Job `managedBy`): `host/path` with a DNS subdomain host and an HTTP path.
pub(crate) fn domain_prefixed_path(value: &str, path: &str) -> Vec<Cause> {
    if value.is_empty() {
        return vec![Cause::required(path, "")];
    }
    let Some((host, rest)) = value
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        return vec![invalid_value(
            path,
            &Value::from(value),
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<Cause> = dns1123_subdomain(host)
        .iter()
        .map(|m| invalid_value(path, &Value::from(host), m))
        .collect();
    let http_path_ok = rest
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    if !http_path_ok {
        errs.push(invalid_value(
            path,
            &Value::from(rest),
            "must be a valid HTTP path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        ));
    }
    errs
}

/// Go's `%#v` of a slice of strings of element type `ty`: `[]core.ResourceQuotaScope{"a"}`.
pub(crate) fn go_slice_of<S: AsRef<str>>(ty: &str, items: &[S]) -> String {
    let inner: Vec<String> = items.iter().map(|s| go_quote(s.as_ref())).collect();
    format!("[]{ty}{{{}}}", inner.join(", "))
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`.
pub(crate) fn go_string_slice<S: AsRef<str>>(items: &[S]) -> String {
    go_slice_of("string", items)
}

/// Go's `%#v` of a JSON list of strings held as a slice of element type `ty`, `[]T(nil)` when
/// absent (a nil slice).
pub(crate) fn go_json_slice(ty: &str, list: Option<&Value>) -> String {
    match list.and_then(Value::as_array) {
        None => format!("[]{ty}(nil)"),
        Some(items) => {
            let items: Vec<&str> = items.iter().map(|s| s.as_str().unwrap_or("")).collect();
            go_slice_of(ty, &items)
        }
    }
}

/// Validates a metadata update as upstream `ValidateObjectMetaUpdate`: no new finalizers while
/// the old object is being deleted, `resourceVersion` present, generation not negative nor
/// decremented, immutable name/namespace/uid/creationTimestamp/deletionTimestamp/
/// deletionGracePeriodSeconds, then labels, annotations, ownerReferences and managedFields.
///
/// As upstream, run this after the server-managed fields were carried over from `old` (what
/// `rest.BeforeUpdate` does: uid when empty, creationTimestamp, deletionTimestamp,
/// deletionGracePeriodSeconds, generation); values are compared as given.
#[cfg(test)]
pub fn validate_object_meta_update(new: &Value, old: &Value, path: &str) -> Vec<Cause> {
    let empty = Map::new();
    let new_m = new.as_object().unwrap_or(&empty);
    let old_m = old.as_object().unwrap_or(&empty);
    let mut errs = Vec::new();

    let being_deleted = !matches!(old_m.get("deletionTimestamp"), None | Some(Value::Null));
    if being_deleted {
        let new_f = meta_string_list(new_m, "finalizers", path).unwrap_or_default();
        let old_f = meta_string_list(old_m, "finalizers", path).unwrap_or_default();
        let mut extra: Vec<&str> = new_f
            .iter()
            .copied()
            .filter(|f| !old_f.contains(f))
            .collect();
        extra.sort_unstable();
        extra.dedup();
        if !extra.is_empty() {
            errs.push(Cause::forbidden(
                child(path, "finalizers"),
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_string_slice(&extra)
                ),
            ));
        }
    }

    let rv = new_m
        .get("resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if rv.is_empty() {
        errs.push(invalid_rendered(
            &child(path, "resourceVersion"),
            &go_quote(rv),
            "must be specified for an update",
        ));
    }
    let new_gen = meta_i64(new_m, "generation", path).unwrap_or(0);
    let old_gen = meta_i64(old_m, "generation", path).unwrap_or(0);
    if new_gen < 0 {
        errs.push(invalid_rendered(
            &child(path, "generation"),
            &new_gen.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    if new_gen < old_gen {
        errs.push(invalid_rendered(
            &child(path, "generation"),
            &new_gen.to_string(),
            "must not be decremented",
        ));
    }

    // Immutable fields: strings compare with "" for absent, pointers/times with null.
    for field in ["name", "namespace", "uid"] {
        let n = new_m.get(field).and_then(Value::as_str).unwrap_or("");
        let o = old_m.get(field).and_then(Value::as_str).unwrap_or("");
        if n != o {
            errs.push(invalid_rendered(
                &child(path, field),
                &go_quote(n),
                "field is immutable",
            ));
        }
    }
    for field in [
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        let n = new_m.get(field).cloned().unwrap_or(Value::Null);
        let o = old_m.get(field).cloned().unwrap_or(Value::Null);
        if n != o {
            errs.push(invalid_rendered(
                &child(path, field),
                &serde_json::to_string(&n).unwrap_or_default(),
                "field is immutable",
            ));
        }
    }

    errs.extend(common_meta(new_m, path));
    if let Some(mf) = new_m.get("managedFields") {
        errs.extend(validate_managed_fields(mf, &child(path, "managedFields")));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn invalid_name_matches_reference_capture() {
        // error-422-invalid-name.json
        let errs = validate_object_meta(
            &json!({"name": "Bad_Name", "namespace": "default"}),
            true,
            NameRule::Subdomain,
            "metadata",
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].reason, "FieldValueInvalid");
        assert_eq!(errs[0].field, "metadata.name");
        assert_eq!(
            errs[0].message,
            format!("Invalid value: \"Bad_Name\": {SUBDOMAIN_MSG}")
        );
        assert_eq!(
            errs[0].summary(),
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
    }

    #[test]
    fn subdomain_rules() {
        assert!(dns1123_subdomain("example.com").is_empty());
        assert!(dns1123_subdomain("a").is_empty());
        assert!(dns1123_subdomain("a-b.c-d").is_empty());
        assert_eq!(
            dns1123_subdomain("Bad_Name"),
            vec![SUBDOMAIN_MSG.to_string()]
        );
        assert_eq!(dns1123_subdomain(""), vec![SUBDOMAIN_MSG.to_string()]);
        assert_eq!(dns1123_subdomain("a..b").len(), 1);
        assert_eq!(dns1123_subdomain("-a").len(), 1);
        assert_eq!(dns1123_subdomain("a.").len(), 1);
        let long = "a".repeat(254);
        assert_eq!(
            dns1123_subdomain(&long),
            vec!["must be no more than 253 characters".to_string()]
        );
        assert!(dns1123_subdomain(&"a".repeat(253)).is_empty());
        // Labels inside a subdomain have no own length limit upstream.
        assert!(dns1123_subdomain(&format!("{}.b", "a".repeat(100))).is_empty());
    }

    #[test]
    fn label_rules() {
        assert!(dns1123_label("my-name").is_empty());
        assert!(dns1123_label("123-abc").is_empty());
        assert_eq!(
            dns1123_label("a.b"),
            vec!["must not contain dots".to_string()]
        );
        assert_eq!(
            dns1123_label("My"),
            vec!["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_string()]
        );
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters".to_string()]
        );
        assert!(dns1035_label("abc-123").is_empty());
        assert_eq!(dns1035_label("1abc").len(), 1);
        assert!(dns1035_label("1abc")[0].starts_with("a DNS-1035 label must consist"));
    }

    #[test]
    fn path_segment_rules() {
        assert_eq!(path_segment_name("."), vec!["may not be '.'".to_string()]);
        assert_eq!(path_segment_name(".."), vec!["may not be '..'".to_string()]);
        assert_eq!(
            path_segment_name("a/b%c"),
            vec![
                "may not contain '/'".to_string(),
                "may not contain '%'".to_string()
            ]
        );
        assert!(path_segment_name("Any Thing:Else").is_empty());
        assert_eq!(
            path_segment_name("a\u{0}b"),
            vec!["may not contain control characters".to_string()]
        );
        assert!(!validate_name("x\n", NameRule::PathSegment, true).is_empty());
        assert!(validate_name("..", NameRule::PathSegment, true).is_empty());
    }

    #[test]
    fn generate_name_masks_trailing_dash() {
        assert!(validate_name("my-app-", NameRule::Subdomain, true).is_empty());
        assert!(validate_name("a-", NameRule::Label, true).is_empty());
        assert_eq!(
            validate_name("my-app-", NameRule::Subdomain, false).len(),
            1
        );
        assert_eq!(mask_trailing_dash("abc-"), "aba");
        assert_eq!(mask_trailing_dash("-"), "-");
        let errs = validate_object_meta(
            &json!({"generateName": "Bad-", "namespace": "ns"}),
            true,
            NameRule::Subdomain,
            "metadata",
        );
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0].field, "metadata.generateName");
        assert!(
            errs[0]
                .message
                .starts_with("Invalid value: \"Bad-\": a lowercase RFC 1123 subdomain")
        );
        // Name is absent: upstream still requires it (generation happens before validation).
        assert_eq!(errs[1].field, "metadata.name");
        assert_eq!(
            errs[1].message,
            "Required value: name or generateName is required"
        );
    }

    #[test]
    fn name_required() {
        let errs = validate_object_meta(&json!({}), false, NameRule::Subdomain, "metadata");
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].summary(),
            "metadata.name: Required value: name or generateName is required"
        );
        assert_eq!(errs[0].reason, "FieldValueRequired");
    }

    #[test]
    fn namespace_presence() {
        let errs = validate_object_meta(
            &json!({"name": "a", "namespace": "ns"}),
            false,
            NameRule::Subdomain,
            "metadata",
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].summary(),
            "metadata.namespace: Forbidden: not allowed on this type"
        );
        assert_eq!(errs[0].reason, "FieldValueForbidden");

        let errs =
            validate_object_meta(&json!({"name": "a"}), true, NameRule::Subdomain, "metadata");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].summary(), "metadata.namespace: Required value");

        let errs = validate_object_meta(
            &json!({"name": "a", "namespace": "a.b"}),
            true,
            NameRule::Subdomain,
            "metadata",
        );
        assert_eq!(
            errs[0].summary(),
            "metadata.namespace: Invalid value: \"a.b\": must not contain dots"
        );
    }

    #[test]
    fn label_key_messages() {
        let errs = validate_object_meta(
            &json!({"name": "a", "labels": {"bad key!": "ok"}}),
            false,
            NameRule::Subdomain,
            "metadata",
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].summary(),
            "metadata.labels: Invalid value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert!(validate_label_key("example.com/MyName").is_empty());
        assert!(validate_label_key("app.kubernetes.io/name").is_empty());
        assert_eq!(
            validate_label_key("/name"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert_eq!(
            validate_label_key("Example.com/name"),
            vec![format!("prefix part {SUBDOMAIN_MSG}")]
        );
        let too_long = validate_label_key(&"a".repeat(64));
        assert_eq!(
            too_long,
            vec!["name part must be no more than 63 bytes".to_string()]
        );
        let empty = validate_label_key("a/");
        assert_eq!(empty[0], "name part must be non-empty");
        assert_eq!(empty.len(), 2);
        let many = validate_label_key("a/b/c");
        assert_eq!(
            many,
            vec!["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()]
        );
        let long_prefix = validate_label_key(&format!("{}/a", "a".repeat(254)));
        assert_eq!(
            long_prefix,
            vec!["prefix part must be no more than 253 bytes".to_string()]
        );
    }

    #[test]
    fn label_value_messages() {
        assert!(validate_label_value("").is_empty());
        assert!(validate_label_value("my_value").is_empty());
        assert_eq!(
            validate_label_value("-bad"),
            vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_string()]
        );
        assert_eq!(
            validate_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 bytes".to_string()]
        );
        let errs = validate_labels(&json!({"ok": "not ok!"}), "metadata.labels");
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0]
                .message
                .starts_with("Invalid value: \"not ok!\": a valid label must")
        );
    }

    #[test]
    fn annotations() {
        let errs = validate_annotations(&json!({"Example.COM/Key": "v"}), "metadata.annotations");
        assert!(errs.is_empty(), "case-insensitive: {errs:?}");
        let errs = validate_annotations(&json!({"bad key": "v"}), "metadata.annotations");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "metadata.annotations");
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        let errs = validate_annotations(&json!({ "k": big }), "metadata.annotations");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].reason, "FieldValueTooLong");
        assert_eq!(
            errs[0].summary(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        let fits = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 1);
        assert!(validate_annotations(&json!({ "k": fits }), "metadata.annotations").is_empty());
    }

    #[test]
    fn finalizers() {
        let errs = validate_object_meta(
            &json!({"name": "a", "finalizers": ["ref.example.org/hold", "kubernetes", "bad/x/y"]}),
            false,
            NameRule::Subdomain,
            "metadata",
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "metadata.finalizers");
        assert!(
            errs[0]
                .message
                .starts_with("Invalid value: \"bad/x/y\": a valid label key")
        );
        let errs = validate_finalizers(&["orphan", "foregroundDeletion"], "metadata.finalizers");
        assert_eq!(
            errs[0].summary(),
            "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set"
        );
    }

    #[test]
    fn owner_references() {
        let refs = json!([
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs1", "uid": "u1", "controller": true},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs2", "uid": "u2", "controller": true},
            {"kind": "", "name": "x"}
        ]);
        let errs = validate_owner_references(&refs, "metadata.ownerReferences");
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert_eq!(errs[0].reason, "FieldValueInvalid");
        assert_eq!(errs[0].field, "metadata.ownerReferences");
        assert!(errs[0].message.starts_with("Invalid value: [{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs1\",\"uid\":\"u1\",\"controller\":true},"));
        assert!(errs[0].message.ends_with(": Only one reference can have Controller set to true. Found \"true\" in references for ReplicaSet/rs1 and ReplicaSet/rs2"));
        assert_eq!(
            errs[1].summary(),
            "metadata.ownerReferences[2].apiVersion: Required value: must not be empty"
        );
        assert_eq!(errs[2].field, "metadata.ownerReferences[2].kind");
        assert_eq!(errs[3].field, "metadata.ownerReferences[2].uid");

        let errs = validate_owner_references(
            &json!([{"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "u"}]),
            "metadata.ownerReferences",
        );
        assert_eq!(
            errs[0].summary(),
            "metadata.ownerReferences[0].apiVersion: Invalid value: \"a/b/c\": must be <group>/<version> or <version>"
        );
        let errs = validate_owner_references(
            &json!([{"apiVersion": "v1", "kind": "Event", "name": "n", "uid": "u"}]),
            "metadata.ownerReferences",
        );
        assert_eq!(
            errs[0].summary(),
            "metadata.ownerReferences[0]: Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"n\",\"uid\":\"u\"}: /v1, Kind=Event is disallowed from being an owner"
        );
    }

    #[test]
    fn generation_and_types() {
        let errs = validate_object_meta(
            &json!({"name": "a", "generation": -1, "labels": "x"}),
            false,
            NameRule::Subdomain,
            "metadata",
        );
        assert_eq!(errs.len(), 2);
        assert_eq!(
            errs[0].summary(),
            "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            errs[1].summary(),
            "metadata.labels: Invalid value: \"x\": json: cannot unmarshal string into Go struct field ObjectMeta.labels of type map[string]string"
        );
        let errs =
            validate_object_meta(&json!({"name": 5}), false, NameRule::Subdomain, "metadata");
        assert_eq!(
            errs[0].summary(),
            "metadata.name: Invalid value: 5: json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"
        );
        let errs = validate_object_meta(&json!("x"), false, NameRule::Subdomain, "metadata");
        assert_eq!(errs.len(), 1);
    }

    #[test]
    fn managed_fields() {
        let errs = validate_managed_fields(
            &json!([{"manager": "m", "operation": "Bogus", "fieldsType": "FieldsV2"}, {"manager": "m"}]),
            "metadata.managedFields",
        );
        assert_eq!(
            errs[0].summary(),
            "metadata.managedFields[0].operation: Unsupported value: \"Bogus\": supported values: \"Apply\", \"Update\""
        );
        assert_eq!(
            errs[1].summary(),
            "metadata.managedFields[0].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`"
        );
        assert_eq!(
            errs[2].summary(),
            "metadata.managedFields[1].operation: Required value: must not be empty"
        );
    }

    #[test]
    fn update_rules_match_reference_capture() {
        // error-422-add-finalizer-while-deleting.json
        let old = json!({"name": "w1", "namespace": "ref", "resourceVersion": "5", "generation": 2,
            "deletionTimestamp": "2026-11-22T00:41:45Z", "finalizers": ["ref.example.org/hold"]});
        let new = json!({"name": "w1", "namespace": "ref", "resourceVersion": "5", "generation": 2,
            "deletionTimestamp": "2026-11-22T00:41:45Z",
            "finalizers": ["ref.example.org/hold", "ref.example.org/another"]});
        let errs = validate_object_meta_update(&new, &old, "metadata");
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].reason, "FieldValueForbidden");
        assert_eq!(
            errs[0].summary(),
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"ref.example.org/another\"}"
        );

        let old = json!({"name": "a", "uid": "u1", "generation": 3, "resourceVersion": "1"});
        let new = json!({"name": "b", "uid": "u1", "generation": 2});
        let errs = validate_object_meta_update(&new, &old, "metadata");
        let summaries: Vec<String> = errs.iter().map(Cause::summary).collect();
        assert_eq!(
            summaries,
            vec![
                "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
                "metadata.generation: Invalid value: 2: must not be decremented",
                "metadata.name: Invalid value: \"b\": field is immutable",
            ]
        );
    }

    #[test]
    fn go_rendering() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(go_float(1.0), "1");
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(1000000.0), "1e+06");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5e-7), "-2.5e-07");
        assert_eq!(go_float(1e100), "1e+100");
        assert_eq!(go_render(&json!(1.5)), "1.5");
        assert_eq!(go_render(&json!(3)), "3");
        assert_eq!(
            go_render(&json!({"b": 1, "a": [true]})),
            "{\"a\":[true],\"b\":1}"
        );
        assert_eq!(go_render(&Value::Null), "null");
    }

    #[test]
    fn group_version_parsing() {
        assert_eq!(
            parse_group_version("v1"),
            Ok((String::new(), "v1".to_string()))
        );
        assert_eq!(
            parse_group_version("apps/v1"),
            Ok(("apps".to_string(), "v1".to_string()))
        );
        assert_eq!(parse_group_version("/"), Ok((String::new(), String::new())));
        assert_eq!(
            parse_group_version("a/b/c"),
            Err("unexpected GroupVersion string: a/b/c".to_string())
        );
    }
}
