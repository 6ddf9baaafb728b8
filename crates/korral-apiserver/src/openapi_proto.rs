//! The protobuf form of the Swagger 2.0 document (`/openapi/v2`): gnostic's
//! `openapi.v2.Document` message.
//!
//! kubectl 1.27–1.31 fetch `/openapi/v2` asking only for
//! [`MEDIA_TYPE_DEPRECATED`] (falling back to `/swagger-2.0.0.pb-v1` on 406) and parse the body
//! as that message: 1.27/1.28 on every `apply`/`create -f`, to see whether the PATCH
//! operation of the kind declares the `fieldValidation` query parameter, and 1.29–1.31 when
//! re-applying an object, for the strategic-merge-patch metadata of `definitions`.
//!
//! [`encode_v2`] converts the JSON document ([`crate::openapi::v2`]) the way upstream does
//! (gnostic's compiler followed by `proto.Marshal`): every Swagger 2.0 object maps to its
//! message, map-valued objects to repeated `Named*` pairs in document order, keys starting
//! with `x-` to `vendor_extension` pairs, and free-form values (`default`, `example`, `enum`
//! items, extension values) to `Any.yaml` text. That text is JSON in flow style, which YAML
//! parsers read as the same value; characters YAML does not allow raw are escaped.
//!
//! Values of the wrong JSON type for their keyword (which gnostic rejects) are left out;
//! encoding never fails and never panics. [`negotiate`] picks JSON or protobuf for an
//! `Accept` header as upstream's handler does.

use serde_json::{Map, Value};

/// The media type of the protobuf form, as upstream labels its responses
/// (`Content-Type`), whichever of the two spellings was asked for.
pub const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The older spelling of [`MEDIA_TYPE`], the only one kubectl 1.27–1.31 ask for.
pub const MEDIA_TYPE_DEPRECATED: &str =
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// Schema nesting below which sub-schemas are encoded empty (JSON parsed by `serde_json` is
/// at most 128 levels deep, so real documents never reach it; it only bounds recursion).
const MAX_DEPTH: usize = 256;

/// The encodings `/openapi/v2` is served in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V2Encoding {
    /// `application/json`.
    Json,
    /// gnostic protobuf ([`MEDIA_TYPE`]), produced by [`encode_v2`].
    Protobuf,
}

/// The encoding to answer an `Accept` header with, as upstream's OpenAPI handler chooses:
/// the first media range (by `q`, then specificity) matching `application/json` or either
/// protobuf spelling; `*/*` and `application/*` mean JSON. `None` (a missing header) means
/// `*/*`. Returns `None` when nothing matches: answer 406. Pass several `Accept` header
/// values joined by `,`.
pub fn negotiate(accept: Option<&str>) -> Option<V2Encoding> {
    let accept = match accept.map(str::trim) {
        None | Some("") => "*/*",
        Some(a) => a,
    };
    let mut ranges: Vec<(f64, u8, &str)> = Vec::new();
    for clause in accept.split(',') {
        let mut parts = clause.split(';');
        let media = parts.next().unwrap_or("").trim();
        if media.is_empty() {
            continue;
        }
        let mut q = 1.0;
        for param in parts {
            if let Some((name, value)) = param.split_once('=') {
                if name.trim().eq_ignore_ascii_case("q") {
                    q = value.trim().parse::<f64>().unwrap_or(0.0);
                }
            }
        }
        if q <= 0.0 || q.is_nan() {
            continue;
        }
        let specificity = match media {
            "*/*" | "*" => 0,
            m if m.ends_with("/*") => 1,
            _ => 2,
        };
        ranges.push((q, specificity, media));
    }
    // Stable: equal ranges keep their order in the header.
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    ranges.iter().find_map(|(_, _, media)| {
        let media = media.to_ascii_lowercase();
        match media.as_str() {
            "*/*" | "*" | "application/*" | "application/json" => Some(V2Encoding::Json),
            m if m == MEDIA_TYPE || m == MEDIA_TYPE_DEPRECATED => Some(V2Encoding::Protobuf),
            _ => None,
        }
    })
}

/// Encodes a Swagger 2.0 document (the JSON form of `/openapi/v2`) as gnostic's
/// `openapi.v2.Document` protobuf message. A non-object `doc` gives an empty message.
pub fn encode_v2(doc: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    if let Some(m) = doc.as_object() {
        document(&mut w, m);
    }
    w.buf
}

// ---------------------------------------------------------------------------------------------
// Wire format
// ---------------------------------------------------------------------------------------------

/// Wire type of varint fields (`bool`, `int64`).
const VARINT: u8 = 0;
/// Wire type of `double` fields.
const FIXED64: u8 = 1;
/// Wire type of strings and embedded messages.
const LEN: u8 = 2;

/// An encoded message under construction.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v & 0x7f) as u8 | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn tag(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    /// A length-delimited field, written even when empty (repeated strings, messages).
    fn bytes(&mut self, field: u32, data: &[u8]) {
        self.tag(field, LEN);
        self.varint(data.len() as u64);
        self.buf.extend_from_slice(data);
    }

    /// A singular proto3 string: left out when empty, as `proto.Marshal` does.
    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    /// A singular proto3 bool: left out when false.
    fn bool(&mut self, field: u32, b: bool) {
        if b {
            self.tag(field, VARINT);
            self.varint(1);
        }
    }

    /// A singular proto3 int64: left out when zero.
    fn int64(&mut self, field: u32, v: i64) {
        if v != 0 {
            self.tag(field, VARINT);
            // Two's complement, ten bytes for negative values, as protobuf specifies.
            self.varint(v as u64);
        }
    }

    /// A singular proto3 double: left out when +0.0.
    fn double(&mut self, field: u32, v: f64) {
        if v.to_bits() != 0 {
            self.tag(field, FIXED64);
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// An embedded message, always written (presence matters: an empty `properties` or
    /// `patch` operation is not an absent one).
    fn message(&mut self, field: u32, build: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        build(&mut inner);
        self.bytes(field, &inner.buf);
    }
}

// ---------------------------------------------------------------------------------------------
// Keyword helpers
// ---------------------------------------------------------------------------------------------

type Obj = Map<String, Value>;

fn put_str(w: &mut Writer, field: u32, m: &Obj, key: &str) {
    if let Some(Value::String(s)) = m.get(key) {
        w.string(field, s);
    }
}

/// A `repeated string`: an array of strings (non-strings skipped) or a single string.
fn put_strs(w: &mut Writer, field: u32, m: &Obj, key: &str) {
    match m.get(key) {
        Some(Value::String(s)) => w.bytes(field, s.as_bytes()),
        Some(Value::Array(items)) => {
            for s in items.iter().filter_map(Value::as_str) {
                w.bytes(field, s.as_bytes());
            }
        }
        _ => {}
    }
}

fn put_bool(w: &mut Writer, field: u32, m: &Obj, key: &str) {
    if let Some(Value::Bool(b)) = m.get(key) {
        w.bool(field, *b);
    }
}

fn put_i64(w: &mut Writer, field: u32, m: &Obj, key: &str) {
    let Some(Value::Number(n)) = m.get(key) else {
        return;
    };
    let v = n
        .as_i64()
        .or_else(|| n.as_u64().map(|u| i64::try_from(u).unwrap_or(i64::MAX)))
        .or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && f.fract() == 0.0)
                // Saturating conversion.
                .map(|f| f as i64)
        });
    if let Some(v) = v {
        w.int64(field, v);
    }
}

fn put_f64(w: &mut Writer, field: u32, m: &Obj, key: &str) {
    if let Some(v) = m.get(key).and_then(Value::as_f64) {
        w.double(field, v);
    }
}

/// An embedded message built from the object under `key`, when it is an object.
fn put_obj(w: &mut Writer, field: u32, m: &Obj, key: &str, build: impl FnOnce(&mut Writer, &Obj)) {
    if let Some(Value::Object(o)) = m.get(key) {
        w.message(field, |inner| build(inner, o));
    }
}

/// A repeated message built from each object of the array under `key`.
fn put_objs(w: &mut Writer, field: u32, m: &Obj, key: &str, build: impl Fn(&mut Writer, &Obj)) {
    if let Some(Value::Array(items)) = m.get(key) {
        for o in items.iter().filter_map(Value::as_object) {
            w.message(field, |inner| build(inner, o));
        }
    }
}

/// `Any { yaml = 2 }` holding `v`.
fn any(w: &mut Writer, field: u32, v: &Value) {
    w.message(field, |a| a.string(2, &yaml_text(v)));
}

fn put_any(w: &mut Writer, field: u32, m: &Obj, key: &str) {
    if let Some(v) = m.get(key) {
        any(w, field, v);
    }
}

/// `repeated Any enum`.
fn put_enum(w: &mut Writer, field: u32, m: &Obj, key: &str) {
    if let Some(Value::Array(items)) = m.get(key) {
        for v in items {
            any(w, field, v);
        }
    }
}

/// `repeated NamedAny vendor_extension`: every `x-` key, in document order.
fn put_extensions(w: &mut Writer, field: u32, m: &Obj) {
    for (k, v) in m.iter().filter(|(k, _)| k.starts_with("x-")) {
        w.message(field, |n| {
            n.string(1, k);
            any(n, 2, v);
        });
    }
}

/// A `Named*` message (`name = 1`, `value = 2`) for each non-extension entry of the object
/// under `key`, wrapped in the map message `field` (`additional_properties = 1` inside).
fn put_named_map(
    w: &mut Writer,
    field: u32,
    m: &Obj,
    key: &str,
    value: impl Fn(&mut Writer, &Value),
) {
    put_obj(w, field, m, key, |map, o| {
        named_entries(map, 1, o, &value);
    });
}

/// One `Named*` message (`name = 1`, `value = 2`) in `field` for each entry of `o` whose key
/// does not start with `x-`.
fn named_entries(w: &mut Writer, field: u32, o: &Obj, value: &impl Fn(&mut Writer, &Value)) {
    for (k, v) in o.iter().filter(|(k, _)| !k.starts_with("x-")) {
        w.message(field, |n| {
            n.string(1, k);
            value(n, v);
        });
    }
}

/// Renders a value as YAML flow text (JSON syntax, double-quoted strings) for `Any.yaml`.
/// Unlike plain JSON it escapes what YAML 1.1 parsers (kubectl's `yaml.v2`) reject or fold
/// inside quoted scalars: DEL, C1 controls, U+2028/U+2029, U+FEFF and U+FFFE/U+FFFF.
fn yaml_text(v: &Value) -> String {
    let mut out = String::new();
    write_yaml(&mut out, v, 0);
    out
}

fn write_yaml(out: &mut String, v: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("null");
        return;
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_yaml_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_yaml(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push('{');
            for (i, (k, item)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_yaml_string(out, k);
                out.push_str(": ");
                write_yaml(out, item, depth + 1);
            }
            out.push('}');
        }
    }
}

fn write_yaml_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20
                || ('\u{7f}'..='\u{9f}').contains(&c)
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}') =>
            {
                out.push_str(&format!("\\u{:04x}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

// ---------------------------------------------------------------------------------------------
// Messages (field numbers from gnostic's openapiv2/OpenAPIv2.proto)
// ---------------------------------------------------------------------------------------------

/// `Document`.
fn document(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "swagger");
    put_obj(w, 2, m, "info", info);
    put_str(w, 3, m, "host");
    put_str(w, 4, m, "basePath");
    put_strs(w, 5, m, "schemes");
    put_strs(w, 6, m, "consumes");
    put_strs(w, 7, m, "produces");
    put_obj(w, 8, m, "paths", paths);
    // Definitions { repeated NamedSchema additional_properties = 1 }
    put_named_map(w, 9, m, "definitions", |n, v| schema_value(n, 2, v, 0));
    // ParameterDefinitions { repeated NamedParameter additional_properties = 1 }
    put_named_map(w, 10, m, "parameters", |n, v| {
        if let Some(p) = v.as_object() {
            n.message(2, |inner| parameter(inner, p));
        }
    });
    // ResponseDefinitions { repeated NamedResponse additional_properties = 1 }
    put_named_map(w, 11, m, "responses", |n, v| {
        if let Some(r) = v.as_object() {
            n.message(2, |inner| response(inner, r));
        }
    });
    put_objs(w, 12, m, "security", security_requirement);
    put_obj(w, 13, m, "securityDefinitions", |sd, o| {
        named_entries(sd, 1, o, &|n: &mut Writer, v: &Value| {
            if let Some(item) = v.as_object() {
                n.message(2, |inner| security_definitions_item(inner, item));
            }
        });
    });
    put_objs(w, 14, m, "tags", tag);
    put_obj(w, 15, m, "externalDocs", external_docs);
    put_extensions(w, 16, m);
}

/// `Info`.
fn info(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "title");
    put_str(w, 2, m, "version");
    put_str(w, 3, m, "description");
    put_str(w, 4, m, "termsOfService");
    put_obj(w, 5, m, "contact", |c, o| {
        put_str(c, 1, o, "name");
        put_str(c, 2, o, "url");
        put_str(c, 3, o, "email");
        put_extensions(c, 4, o);
    });
    put_obj(w, 6, m, "license", |l, o| {
        put_str(l, 1, o, "name");
        put_str(l, 2, o, "url");
        put_extensions(l, 3, o);
    });
    put_extensions(w, 7, m);
}

/// `ExternalDocs`.
fn external_docs(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "description");
    put_str(w, 2, m, "url");
    put_extensions(w, 3, m);
}

/// `Tag`.
fn tag(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "name");
    put_str(w, 2, m, "description");
    put_obj(w, 3, m, "externalDocs", external_docs);
    put_extensions(w, 4, m);
}

/// `Paths`: `vendor_extension = 1`, `NamedPathItem path = 2`.
fn paths(w: &mut Writer, m: &Obj) {
    put_extensions(w, 1, m);
    named_entries(w, 2, m, &|n: &mut Writer, v: &Value| {
        if let Some(item) = v.as_object() {
            n.message(2, |inner| path_item(inner, item));
        }
    });
}

/// `PathItem`.
fn path_item(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "$ref");
    for (method, field) in [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ] {
        put_obj(w, field, m, method, operation);
    }
    put_objs(w, 9, m, "parameters", parameters_item);
    put_extensions(w, 10, m);
}

/// `Operation`.
fn operation(w: &mut Writer, m: &Obj) {
    put_strs(w, 1, m, "tags");
    put_str(w, 2, m, "summary");
    put_str(w, 3, m, "description");
    put_obj(w, 4, m, "externalDocs", external_docs);
    put_str(w, 5, m, "operationId");
    put_strs(w, 6, m, "produces");
    put_strs(w, 7, m, "consumes");
    put_objs(w, 8, m, "parameters", parameters_item);
    put_obj(w, 9, m, "responses", responses);
    put_strs(w, 10, m, "schemes");
    put_bool(w, 11, m, "deprecated");
    put_objs(w, 12, m, "security", security_requirement);
    put_extensions(w, 13, m);
}

/// `SecurityRequirement`: `NamedStringArray additional_properties = 1`.
fn security_requirement(w: &mut Writer, m: &Obj) {
    for (k, v) in m {
        w.message(1, |n| {
            n.string(1, k);
            // StringArray { repeated string value = 1 }
            n.message(2, |a| {
                for s in v.as_array().into_iter().flatten().filter_map(Value::as_str) {
                    a.bytes(1, s.as_bytes());
                }
            });
        });
    }
}

/// `SecurityDefinitionsItem`: the oneof member chosen by `type` (and `flow` for OAuth 2).
fn security_definitions_item(w: &mut Writer, m: &Obj) {
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    let flow = m.get("flow").and_then(Value::as_str).unwrap_or("");
    match (ty, flow) {
        ("basic", _) => w.message(1, |s| {
            put_str(s, 1, m, "type");
            put_str(s, 2, m, "description");
            put_extensions(s, 3, m);
        }),
        ("apiKey", _) => w.message(2, |s| {
            put_str(s, 1, m, "type");
            put_str(s, 2, m, "name");
            put_str(s, 3, m, "in");
            put_str(s, 4, m, "description");
            put_extensions(s, 5, m);
        }),
        ("oauth2", "implicit") => w.message(3, |s| {
            oauth2_head(s, m);
            put_str(s, 4, m, "authorizationUrl");
            put_str(s, 5, m, "description");
            put_extensions(s, 6, m);
        }),
        ("oauth2", "password" | "application") => {
            let field = if flow == "password" { 4 } else { 5 };
            w.message(field, |s| {
                oauth2_head(s, m);
                put_str(s, 4, m, "tokenUrl");
                put_str(s, 5, m, "description");
                put_extensions(s, 6, m);
            });
        }
        ("oauth2", "accessCode") => w.message(6, |s| {
            oauth2_head(s, m);
            put_str(s, 4, m, "authorizationUrl");
            put_str(s, 5, m, "tokenUrl");
            put_str(s, 6, m, "description");
            put_extensions(s, 7, m);
        }),
        _ => {}
    }
}

/// `type = 1`, `flow = 2`, `Oauth2Scopes scopes = 3` of the OAuth 2 security schemes.
fn oauth2_head(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "type");
    put_str(w, 2, m, "flow");
    // Oauth2Scopes { repeated NamedString additional_properties = 1 }
    put_named_map(w, 3, m, "scopes", |n, v| {
        if let Some(s) = v.as_str() {
            n.string(2, s);
        }
    });
}

/// `ParametersItem`: a `JsonReference` (`json_reference = 2`) or a `Parameter`
/// (`parameter = 1`).
fn parameters_item(w: &mut Writer, m: &Obj) {
    if m.get("$ref").is_some_and(Value::is_string) {
        w.message(2, |r| json_reference(r, m));
    } else {
        w.message(1, |p| parameter(p, m));
    }
}

/// `JsonReference`.
fn json_reference(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "$ref");
    put_str(w, 2, m, "description");
}

/// `Parameter`: `BodyParameter body_parameter = 1` or `NonBodyParameter
/// non_body_parameter = 2`, the latter's member chosen by `in`.
fn parameter(w: &mut Writer, m: &Obj) {
    let (field, allow_empty) = match m.get("in").and_then(Value::as_str) {
        Some("body") => {
            w.message(1, |b| body_parameter(b, m));
            return;
        }
        Some("header") => (1, false),
        Some("formData") => (2, true),
        Some("query") => (3, true),
        Some("path") => (4, false),
        _ => return,
    };
    w.message(2, |n| n.message(field, |s| non_body_sub_schema(s, m, allow_empty)));
}

/// `BodyParameter`.
fn body_parameter(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "description");
    put_str(w, 2, m, "name");
    put_str(w, 3, m, "in");
    put_bool(w, 4, m, "required");
    if let Some(s) = m.get("schema") {
        schema_value(w, 5, s, 0);
    }
    put_extensions(w, 6, m);
}

/// `HeaderParameterSubSchema` / `PathParameterSubSchema` (no `allow_empty_value`) and
/// `QueryParameterSubSchema` / `FormDataParameterSubSchema` (with it, one field further on).
fn non_body_sub_schema(w: &mut Writer, m: &Obj, allow_empty: bool) {
    put_bool(w, 1, m, "required");
    put_str(w, 2, m, "in");
    put_str(w, 3, m, "description");
    put_str(w, 4, m, "name");
    let base = if allow_empty {
        put_bool(w, 5, m, "allowEmptyValue");
        6
    } else {
        5
    };
    primitive_fields(w, m, base, 0);
    put_extensions(w, base + 17, m);
}

/// The run of fields `type` … `multiple_of` shared by `PrimitivesItems`, `Header` and the
/// non-body parameter sub-schemas, starting at field `base`.
fn primitive_fields(w: &mut Writer, m: &Obj, base: u32, depth: usize) {
    match m.get("type") {
        Some(Value::String(t)) => w.string(base, t),
        Some(Value::Array(types)) => {
            if let Some(t) = types.iter().find_map(Value::as_str) {
                w.string(base, t);
            }
        }
        _ => {}
    }
    put_str(w, base + 1, m, "format");
    if depth < MAX_DEPTH {
        put_obj(w, base + 2, m, "items", |i, o| primitives_items(i, o, depth + 1));
    }
    put_str(w, base + 3, m, "collectionFormat");
    put_any(w, base + 4, m, "default");
    put_f64(w, base + 5, m, "maximum");
    put_bool(w, base + 6, m, "exclusiveMaximum");
    put_f64(w, base + 7, m, "minimum");
    put_bool(w, base + 8, m, "exclusiveMinimum");
    put_i64(w, base + 9, m, "maxLength");
    put_i64(w, base + 10, m, "minLength");
    put_str(w, base + 11, m, "pattern");
    put_i64(w, base + 12, m, "maxItems");
    put_i64(w, base + 13, m, "minItems");
    put_bool(w, base + 14, m, "uniqueItems");
    put_enum(w, base + 15, m, "enum");
    put_f64(w, base + 16, m, "multipleOf");
}

/// `PrimitivesItems`.
fn primitives_items(w: &mut Writer, m: &Obj, depth: usize) {
    primitive_fields(w, m, 1, depth);
    put_extensions(w, 18, m);
}

/// `Header`.
fn header(w: &mut Writer, m: &Obj) {
    primitive_fields(w, m, 1, 0);
    put_str(w, 18, m, "description");
    put_extensions(w, 19, m);
}

/// `Responses`: `NamedResponseValue response_code = 1`, `vendor_extension = 2`.
fn responses(w: &mut Writer, m: &Obj) {
    named_entries(w, 1, m, &|n: &mut Writer, v: &Value| {
        if let Some(r) = v.as_object() {
            // ResponseValue { Response response = 1 | JsonReference json_reference = 2 }
            n.message(2, |rv| {
                if r.get("$ref").is_some_and(Value::is_string) {
                    rv.message(2, |j| json_reference(j, r));
                } else {
                    rv.message(1, |inner| response(inner, r));
                }
            });
        }
    });
    put_extensions(w, 2, m);
}

/// `Response`.
fn response(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "description");
    // SchemaItem { Schema schema = 1 | FileSchema file_schema = 2 }
    put_obj(w, 2, m, "schema", |item, s| {
        if s.get("type").and_then(Value::as_str) == Some("file") {
            item.message(2, |f| file_schema(f, s));
        } else {
            item.message(1, |inner| schema(inner, s, 0));
        }
    });
    // Headers { repeated NamedHeader additional_properties = 1 }
    put_named_map(w, 3, m, "headers", |n, v| {
        if let Some(h) = v.as_object() {
            n.message(2, |inner| header(inner, h));
        }
    });
    // Examples { repeated NamedAny additional_properties = 1 }
    put_obj(w, 4, m, "examples", |e, o| {
        for (k, v) in o {
            e.message(1, |n| {
                n.string(1, k);
                any(n, 2, v);
            });
        }
    });
    put_extensions(w, 5, m);
}

/// `FileSchema`.
fn file_schema(w: &mut Writer, m: &Obj) {
    put_str(w, 1, m, "format");
    put_str(w, 2, m, "title");
    put_str(w, 3, m, "description");
    put_any(w, 4, m, "default");
    put_strs(w, 5, m, "required");
    put_str(w, 6, m, "type");
    put_bool(w, 7, m, "readOnly");
    put_obj(w, 8, m, "externalDocs", external_docs);
    put_any(w, 9, m, "example");
    put_extensions(w, 10, m);
}

/// A `Schema` field from any JSON value: objects are encoded, anything else (invalid in
/// Swagger 2.0) and anything nested deeper than [`MAX_DEPTH`] gives an empty schema.
fn schema_value(w: &mut Writer, field: u32, v: &Value, depth: usize) {
    match v.as_object() {
        Some(o) if depth < MAX_DEPTH => w.message(field, |s| schema(s, o, depth + 1)),
        _ => w.message(field, |_| {}),
    }
}

/// `Schema`.
fn schema(w: &mut Writer, m: &Obj, depth: usize) {
    put_str(w, 1, m, "$ref");
    put_str(w, 2, m, "format");
    put_str(w, 3, m, "title");
    put_str(w, 4, m, "description");
    put_any(w, 5, m, "default");
    put_f64(w, 6, m, "multipleOf");
    put_f64(w, 7, m, "maximum");
    put_bool(w, 8, m, "exclusiveMaximum");
    put_f64(w, 9, m, "minimum");
    put_bool(w, 10, m, "exclusiveMinimum");
    put_i64(w, 11, m, "maxLength");
    put_i64(w, 12, m, "minLength");
    put_str(w, 13, m, "pattern");
    put_i64(w, 14, m, "maxItems");
    put_i64(w, 15, m, "minItems");
    put_bool(w, 16, m, "uniqueItems");
    put_i64(w, 17, m, "maxProperties");
    put_i64(w, 18, m, "minProperties");
    put_strs(w, 19, m, "required");
    put_enum(w, 20, m, "enum");
    // AdditionalPropertiesItem { Schema schema = 1 | bool boolean = 2 }
    match m.get("additionalProperties") {
        Some(Value::Bool(b)) => w.message(21, |a| {
            // A oneof member is written even when false.
            a.tag(2, VARINT);
            a.varint(u64::from(*b));
        }),
        Some(v @ Value::Object(_)) => w.message(21, |a| schema_value(a, 1, v, depth)),
        _ => {}
    }
    // TypeItem { repeated string value = 1 }
    if matches!(m.get("type"), Some(Value::String(_) | Value::Array(_))) {
        w.message(22, |t| put_strs(t, 1, m, "type"));
    }
    // ItemsItem { repeated Schema schema = 1 }
    match m.get("items") {
        Some(v @ Value::Object(_)) => w.message(23, |i| schema_value(i, 1, v, depth)),
        Some(Value::Array(items)) => w.message(23, |i| {
            for v in items {
                schema_value(i, 1, v, depth);
            }
        }),
        _ => {}
    }
    if let Some(Value::Array(all)) = m.get("allOf") {
        for v in all {
            schema_value(w, 24, v, depth);
        }
    }
    // Properties { repeated NamedSchema additional_properties = 1 }
    if let Some(Value::Object(properties)) = m.get("properties") {
        w.message(25, |p| {
            // Property names are not keywords: `x-` names are properties too.
            for (k, v) in properties {
                p.message(1, |n| {
                    n.string(1, k);
                    schema_value(n, 2, v, depth);
                });
            }
        });
    }
    put_str(w, 26, m, "discriminator");
    put_bool(w, 27, m, "readOnly");
    put_obj(w, 28, m, "xml", |x, o| {
        put_str(x, 1, o, "name");
        put_str(x, 2, o, "namespace");
        put_str(x, 3, o, "prefix");
        put_bool(x, 4, o, "attribute");
        put_bool(x, 5, o, "wrapped");
        put_extensions(x, 6, o);
    });
    put_obj(w, 29, m, "externalDocs", external_docs);
    put_any(w, 30, m, "example");
    put_extensions(w, 31, m);
}

#[cfg(test)]
mod tests;
