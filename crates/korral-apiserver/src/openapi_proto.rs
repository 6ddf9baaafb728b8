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
/// at most 128 levels deep, two per schema level, so real documents never reach it; it only
/// bounds recursion).
const MAX_DEPTH: usize = 128;

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
            if let Some((name, value)) = param.split_once('=')
                && name.trim().eq_ignore_ascii_case("q")
            {
                q = value.trim().parse::<f64>().unwrap_or(0.0);
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

/// A map message in `field` (`additional_properties = 1` inside) of `Named*` messages
/// (`name = 1`, `value = 2`) for every entry of the object under `key`.
fn put_named_map(
    w: &mut Writer,
    field: u32,
    m: &Obj,
    key: &str,
    value: impl Fn(&mut Writer, &Value),
) {
    put_obj(w, field, m, key, |map, o| {
        named_entries(map, 1, o, |_| true, &value);
    });
}

/// One `Named*` message (`name = 1`, `value = 2`) in `field` for each entry of `o` whose
/// key `keep` accepts.
fn named_entries(
    w: &mut Writer,
    field: u32,
    o: &Obj,
    keep: impl Fn(&str) -> bool,
    value: &impl Fn(&mut Writer, &Value),
) {
    for (k, v) in o.iter().filter(|(k, _)| keep(k)) {
        w.message(field, |n| {
            n.string(1, k);
            value(n, v);
        });
    }
}

/// Keys of `Responses` naming a response: three digits or `default`.
fn is_response_code(k: &str) -> bool {
    k == "default" || (k.len() == 3 && k.bytes().all(|b| b.is_ascii_digit()))
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
                || matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
                ) =>
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
        named_entries(sd, 1, o, |_| true, &|n: &mut Writer, v: &Value| {
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

/// `Paths`: `vendor_extension = 1` (`x-` keys), `NamedPathItem path = 2` (keys starting
/// with `/`).
fn paths(w: &mut Writer, m: &Obj) {
    put_extensions(w, 1, m);
    named_entries(
        w,
        2,
        m,
        |k| k.starts_with('/'),
        &|n: &mut Writer, v: &Value| {
            if let Some(item) = v.as_object() {
                n.message(2, |inner| path_item(inner, item));
            }
        },
    );
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
    w.message(2, |n| {
        n.message(field, |s| non_body_sub_schema(s, m, allow_empty))
    });
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
        put_obj(w, base + 2, m, "items", |i, o| {
            primitives_items(i, o, depth + 1)
        });
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

/// `Responses`: `NamedResponseValue response_code = 1` (status codes and `default`),
/// `vendor_extension = 2` (`x-` keys).
fn responses(w: &mut Writer, m: &Obj) {
    named_entries(w, 1, m, is_response_code, &|n: &mut Writer, v: &Value| {
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
mod tests {
    use super::*;
    use serde_json::json;

    // -----------------------------------------------------------------------------------------
    // A minimal decoder, independent of the encoder
    // -----------------------------------------------------------------------------------------

    #[derive(Debug, Clone, PartialEq)]
    enum Field {
        Varint(u64),
        Fixed64(u64),
        Bytes(Vec<u8>),
    }

    fn read_varint(buf: &[u8], pos: &mut usize) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *buf.get(*pos).expect("varint runs past the end");
            *pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return v;
            }
        }
        panic!("varint longer than 10 bytes");
    }

    /// A decoded message: its fields in wire order.
    #[derive(Debug, Clone)]
    struct Msg(Vec<(u32, Field)>);

    impl Msg {
        fn parse(buf: &[u8]) -> Msg {
            let mut pos = 0;
            let mut fields = Vec::new();
            while pos < buf.len() {
                let key = read_varint(buf, &mut pos);
                let number = u32::try_from(key >> 3).expect("field number");
                assert!(number >= 1, "field number 0");
                let field = match key & 7 {
                    0 => Field::Varint(read_varint(buf, &mut pos)),
                    1 => {
                        let bytes = buf.get(pos..pos + 8).expect("fixed64 runs past the end");
                        pos += 8;
                        Field::Fixed64(u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
                    }
                    2 => {
                        let len = usize::try_from(read_varint(buf, &mut pos)).expect("length");
                        let bytes = buf.get(pos..pos + len).expect("payload runs past the end");
                        pos += len;
                        Field::Bytes(bytes.to_vec())
                    }
                    wire => panic!("unexpected wire type {wire}"),
                };
                fields.push((number, field));
            }
            Msg(fields)
        }

        fn all(&self, n: u32) -> Vec<&Field> {
            self.0
                .iter()
                .filter(|(k, _)| *k == n)
                .map(|(_, f)| f)
                .collect()
        }

        fn numbers(&self) -> Vec<u32> {
            let mut n: Vec<u32> = self.0.iter().map(|(k, _)| *k).collect();
            n.dedup();
            n
        }

        fn bytes(&self, n: u32) -> Vec<&[u8]> {
            self.all(n)
                .into_iter()
                .map(|f| match f {
                    Field::Bytes(b) => b.as_slice(),
                    other => panic!("field {n} is not length-delimited: {other:?}"),
                })
                .collect()
        }

        fn msgs(&self, n: u32) -> Vec<Msg> {
            self.bytes(n).into_iter().map(Msg::parse).collect()
        }

        fn opt_msg(&self, n: u32) -> Option<Msg> {
            let mut all = self.msgs(n);
            assert!(all.len() <= 1, "field {n} repeated");
            all.pop()
        }

        fn msg(&self, n: u32) -> Msg {
            self.opt_msg(n)
                .unwrap_or_else(|| panic!("field {n} missing in {self:?}"))
        }

        fn strs(&self, n: u32) -> Vec<String> {
            self.bytes(n)
                .into_iter()
                .map(|b| String::from_utf8(b.to_vec()).expect("UTF-8 string"))
                .collect()
        }

        fn str(&self, n: u32) -> String {
            let mut all = self.strs(n);
            assert!(all.len() <= 1, "field {n} repeated");
            all.pop().unwrap_or_default()
        }

        fn varint(&self, n: u32) -> Option<u64> {
            let all = self.all(n);
            assert!(all.len() <= 1, "field {n} repeated");
            all.first().map(|f| match f {
                Field::Varint(v) => *v,
                other => panic!("field {n} is not a varint: {other:?}"),
            })
        }

        fn bool(&self, n: u32) -> bool {
            self.varint(n).is_some_and(|v| v != 0)
        }

        fn int(&self, n: u32) -> i64 {
            self.varint(n).map_or(0, |v| v as i64)
        }

        fn double(&self, n: u32) -> Option<f64> {
            let all = self.all(n);
            assert!(all.len() <= 1, "field {n} repeated");
            all.first().map(|f| match f {
                Field::Fixed64(v) => f64::from_bits(*v),
                other => panic!("field {n} is not a fixed64: {other:?}"),
            })
        }

        /// Repeated `Named*` messages: (`name = 1`, message `value = 2`).
        fn named(&self, n: u32) -> Vec<(String, Msg)> {
            self.msgs(n)
                .into_iter()
                .map(|m| (m.str(1), m.msg(2)))
                .collect()
        }

        /// Repeated `NamedAny` in field `n`, with `Any.yaml` parsed.
        fn extensions(&self, n: u32) -> Map<String, Value> {
            self.named(n)
                .into_iter()
                .map(|(name, any)| (name, yaml_value(&any)))
                .collect()
        }
    }

    /// The value of an `Any` message's `yaml` (field 2), parsed as YAML.
    fn yaml_value(any: &Msg) -> Value {
        assert_eq!(any.numbers(), vec![2], "Any carries only yaml");
        serde_yaml_ng::from_str(&any.str(2)).expect("Any.yaml parses as YAML")
    }

    /// A JSON number from a decoded double, integral ones as integers.
    fn number(f: f64) -> Value {
        if f.fract() == 0.0 && f.abs() < 1e15 {
            json!(f as i64)
        } else {
            json!(f)
        }
    }

    /// Rebuilds the JSON form of a decoded `Schema`.
    fn schema_back(s: &Msg) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_string(), v);
        };
        for (field, key) in [(1, "$ref"), (2, "format"), (3, "title"), (4, "description")] {
            if !s.str(field).is_empty() {
                put(key, json!(s.str(field)));
            }
        }
        if let Some(d) = s.opt_msg(5) {
            put("default", yaml_value(&d));
        }
        for (field, key) in [(6, "multipleOf"), (7, "maximum"), (9, "minimum")] {
            if let Some(f) = s.double(field) {
                put(key, number(f));
            }
        }
        for (field, key) in [
            (8, "exclusiveMaximum"),
            (10, "exclusiveMinimum"),
            (16, "uniqueItems"),
            (27, "readOnly"),
        ] {
            if s.bool(field) {
                put(key, json!(true));
            }
        }
        for (field, key) in [
            (11, "maxLength"),
            (12, "minLength"),
            (14, "maxItems"),
            (15, "minItems"),
            (17, "maxProperties"),
            (18, "minProperties"),
        ] {
            if s.varint(field).is_some() {
                put(key, json!(s.int(field)));
            }
        }
        if !s.str(13).is_empty() {
            put("pattern", json!(s.str(13)));
        }
        if !s.strs(19).is_empty() {
            put("required", json!(s.strs(19)));
        }
        let enums: Vec<Value> = s.msgs(20).iter().map(yaml_value).collect();
        if !enums.is_empty() {
            put("enum", Value::Array(enums));
        }
        if let Some(a) = s.opt_msg(21) {
            match (a.opt_msg(1), a.varint(2)) {
                (Some(schema), None) => put("additionalProperties", schema_back(&schema)),
                (None, Some(b)) => put("additionalProperties", json!(b != 0)),
                other => panic!("AdditionalPropertiesItem is not a oneof: {other:?}"),
            }
        }
        if let Some(t) = s.opt_msg(22) {
            let types = t.strs(1);
            match types.as_slice() {
                [one] => put("type", json!(one)),
                _ => put("type", json!(types)),
            }
        }
        if let Some(items) = s.opt_msg(23) {
            let all: Vec<Value> = items.msgs(1).iter().map(schema_back).collect();
            match <[Value; 1]>::try_from(all) {
                Ok([one]) => put("items", one),
                Err(all) => put("items", Value::Array(all)),
            }
        }
        let all_of: Vec<Value> = s.msgs(24).iter().map(schema_back).collect();
        if !all_of.is_empty() {
            put("allOf", Value::Array(all_of));
        }
        if let Some(p) = s.opt_msg(25) {
            let props: Map<String, Value> = p
                .named(1)
                .iter()
                .map(|(k, v)| (k.clone(), schema_back(v)))
                .collect();
            put("properties", Value::Object(props));
        }
        if let Some(e) = s.opt_msg(30) {
            put("example", yaml_value(&e));
        }
        for (k, v) in s.extensions(31) {
            put(&k, v);
        }
        Value::Object(m)
    }

    fn test_doc() -> Value {
        json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.2.3"},
            "consumes": ["application/json"],
            "paths": {
                "/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {
                    "patch": {
                        "description": "partially update the specified Deployment",
                        "consumes": ["application/merge-patch+json", "application/apply-patch+yaml"],
                        "produces": ["application/json", "application/yaml"],
                        "schemes": ["https"],
                        "tags": ["apps_v1"],
                        "operationId": "patchAppsV1NamespacedDeployment",
                        "parameters": [
                            {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}},
                            {"uniqueItems": true, "type": "string", "description": "fieldValidation instructs the server", "name": "fieldValidation", "in": "query"},
                            {"$ref": "#/parameters/pretty"}
                        ],
                        "responses": {
                            "200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}},
                            "401": {"description": "Unauthorized"},
                            "x-note": "ignored as a response"
                        },
                        "x-kubernetes-action": "patch",
                        "x-kubernetes-group-version-kind": {"group": "apps", "version": "v1", "kind": "Deployment"}
                    },
                    "parameters": [
                        {"uniqueItems": true, "type": "string", "description": "name of the Deployment", "name": "name", "in": "path", "required": true}
                    ]
                },
                "x-paths-extension": {"a": 1}
            },
            "definitions": {
                "io.k8s.api.apps.v1.Deployment": {
                    "description": "Deployment enables declarative updates.",
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "description": "Standard object metadata."},
                        "spec": {
                            "type": "object",
                            "properties": {
                                "replicas": {"type": "integer", "format": "int32", "default": 1, "minimum": 1, "maximum": 1500},
                                "strategy": {"type": "string", "enum": ["Recreate", "RollingUpdate"], "minLength": 1, "maxLength": 300},
                                "containers": {
                                    "type": "array",
                                    "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Container"},
                                    "x-kubernetes-patch-merge-key": "name",
                                    "x-kubernetes-patch-strategy": "merge",
                                    "x-kubernetes-list-map-keys": ["name"]
                                },
                                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                "closed": {"type": "object", "additionalProperties": false, "readOnly": true},
                                "x-looks-like-extension": {"type": "string"}
                            }
                        },
                        "status": {"type": "object", "properties": {}}
                    },
                    "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
                },
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
                "io.k8s.api.core.v1.Container": {"type": "object", "properties": {"name": {"type": "string"}}}
            },
            "parameters": {
                "pretty": {"uniqueItems": true, "type": "string", "description": "If 'true', then the output is pretty printed.", "name": "pretty", "in": "query"}
            },
            "securityDefinitions": {
                "BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}
            },
            "security": [{"BearerToken": []}]
        })
    }

    #[test]
    fn writer_encodes_the_wire_format() {
        let mut w = Writer::default();
        for v in [0u64, 1, 127, 128, 300, u64::MAX] {
            w.varint(v);
        }
        assert_eq!(
            w.buf,
            [
                &[0x00, 0x01, 0x7f, 0x80, 0x01, 0xac, 0x02][..],
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ]
            .concat()
        );
        let mut w = Writer::default();
        w.string(1, "");
        w.bool(2, false);
        w.int64(3, 0);
        w.double(4, 0.0);
        assert!(w.buf.is_empty(), "proto3 defaults are left out");
        w.int64(3, -1);
        assert_eq!(w.buf, [&[0x18][..], &[0xff; 9], &[0x01]].concat());
        let mut w = Writer::default();
        w.string(31, "ab");
        w.bool(8, true);
        w.double(7, 1.5);
        w.message(25, |_| {});
        assert_eq!(
            w.buf,
            [
                &[0xfa, 0x01, 0x02, b'a', b'b', 0x40, 0x01, 0x39][..],
                &1.5f64.to_le_bytes(),
                &[0xca, 0x01, 0x00],
            ]
            .concat()
        );
    }

    #[test]
    fn document_round_trips() {
        let doc = Msg::parse(&encode_v2(&test_doc()));
        assert_eq!(doc.numbers(), vec![1, 2, 6, 8, 9, 10, 12, 13]);
        assert_eq!(doc.str(1), "2.0");
        let info = doc.msg(2);
        assert_eq!(
            (info.str(1), info.str(2)),
            ("Kubernetes".into(), "v1.2.3".into())
        );
        assert_eq!(doc.strs(6), ["application/json"]);

        // Paths: vendor extensions (1) apart from the path items (2).
        let paths = doc.msg(8);
        let ext = paths.extensions(1);
        assert_eq!(ext.get("x-paths-extension"), Some(&json!({"a": 1})));
        let items = paths.named(2);
        assert_eq!(items.len(), 1);
        let (name, item) = &items[0];
        assert_eq!(
            name,
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
        );
        assert_eq!(item.numbers(), vec![8, 9], "only patch and parameters");

        // PathItem.parameters: a path parameter (NonBodyParameter.path_parameter_sub_schema).
        let path_params = item.msgs(9);
        assert_eq!(path_params.len(), 1);
        let path_param = path_params[0].msg(1).msg(2).msg(4);
        assert!(path_param.bool(1));
        assert_eq!(path_param.str(2), "path");
        assert_eq!(path_param.str(3), "name of the Deployment");
        assert_eq!(path_param.str(4), "name");
        assert_eq!(path_param.str(5), "string");
        assert!(path_param.bool(19));

        // The PATCH operation.
        let patch = item.msg(8);
        assert_eq!(patch.strs(1), ["apps_v1"]);
        assert_eq!(patch.str(3), "partially update the specified Deployment");
        assert_eq!(patch.str(5), "patchAppsV1NamespacedDeployment");
        assert_eq!(patch.strs(6), ["application/json", "application/yaml"]);
        assert_eq!(
            patch.strs(7),
            [
                "application/merge-patch+json",
                "application/apply-patch+yaml"
            ]
        );
        assert_eq!(patch.strs(10), ["https"]);
        let gvk = patch.extensions(13);
        assert_eq!(gvk.get("x-kubernetes-action"), Some(&json!("patch")));
        assert_eq!(
            gvk.get("x-kubernetes-group-version-kind"),
            Some(&json!({"group": "apps", "version": "v1", "kind": "Deployment"}))
        );
        let params = patch.msgs(8);
        assert_eq!(params.len(), 3);
        let body = params[0].msg(1).msg(1);
        assert_eq!(
            (body.str(2), body.str(3), body.bool(4)),
            ("body".into(), "body".into(), true)
        );
        assert_eq!(
            body.msg(5).str(1),
            "#/definitions/io.k8s.api.apps.v1.Deployment"
        );
        // ParametersItem.parameter → Parameter.non_body_parameter → query_parameter_sub_schema.
        let query = params[1].msg(1).msg(2).msg(3);
        assert_eq!(query.str(4), "fieldValidation");
        assert_eq!(query.str(2), "query");
        assert_eq!(query.str(3), "fieldValidation instructs the server");
        assert_eq!(query.str(6), "string");
        assert!(query.bool(20));
        assert!(!query.bool(1));
        // ParametersItem.json_reference.
        assert_eq!(params[2].numbers(), vec![2]);
        assert_eq!(params[2].msg(2).str(1), "#/parameters/pretty");
        // Responses: status codes only; Response.schema is a SchemaItem.schema.
        let responses = patch.msg(9).named(1);
        let codes: Vec<&str> = responses.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(codes, ["200", "401"]);
        let ok = responses[0].1.msg(1);
        assert_eq!(ok.str(1), "OK");
        assert_eq!(
            ok.msg(2).msg(1).str(1),
            "#/definitions/io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(responses[1].1.msg(1).numbers(), vec![1]);

        // Definitions.
        let definitions = doc.msg(9).named(1);
        let names: Vec<&str> = definitions.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "io.k8s.api.apps.v1.Deployment",
                "io.k8s.api.core.v1.Container",
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            ]
        );
        let deployment = &definitions[0].1;
        assert_eq!(deployment.str(4), "Deployment enables declarative updates.");
        assert_eq!(deployment.msg(22).strs(1), ["object"]);
        assert_eq!(deployment.strs(19), ["spec"]);
        let properties = deployment.msg(25).named(1);
        let metadata = &properties
            .iter()
            .find(|(n, _)| n == "metadata")
            .expect("metadata")
            .1;
        assert_eq!(
            metadata.str(1),
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(metadata.str(4), "Standard object metadata.");
        assert_eq!(
            deployment
                .extensions(31)
                .get("x-kubernetes-group-version-kind"),
            Some(&json!([{"group": "apps", "kind": "Deployment", "version": "v1"}]))
        );
        let spec = &properties
            .iter()
            .find(|(n, _)| n == "spec")
            .expect("spec")
            .1;
        let spec_props = spec.msg(25).named(1);
        let containers = &spec_props
            .iter()
            .find(|(n, _)| n == "containers")
            .expect("containers")
            .1;
        assert_eq!(containers.msg(22).strs(1), ["array"]);
        let items = containers.msg(23).msgs(1);
        assert_eq!(items.len(), 1);
        assert_eq!(
            items[0].str(1),
            "#/definitions/io.k8s.api.core.v1.Container"
        );
        let ext = containers.extensions(31);
        assert_eq!(
            ext.get("x-kubernetes-patch-merge-key"),
            Some(&json!("name"))
        );
        assert_eq!(
            ext.get("x-kubernetes-patch-strategy"),
            Some(&json!("merge"))
        );
        // `x-` property names are properties, not extensions.
        assert!(
            spec_props
                .iter()
                .any(|(n, _)| n == "x-looks-like-extension")
        );
        assert!(spec.extensions(31).is_empty());
        // An empty `properties` is present (kubectl tells objects from maps by it).
        let status = &properties
            .iter()
            .find(|(n, _)| n == "status")
            .expect("status")
            .1;
        assert!(status.msg(25).0.is_empty());
        let replicas = &spec_props
            .iter()
            .find(|(n, _)| n == "replicas")
            .expect("replicas")
            .1;
        assert_eq!(replicas.str(2), "int32");
        assert_eq!(yaml_value(&replicas.msg(5)), json!(1));
        assert_eq!(replicas.double(7), Some(1500.0));
        assert_eq!(replicas.double(9), Some(1.0));
        let strategy = &spec_props
            .iter()
            .find(|(n, _)| n == "strategy")
            .expect("strategy")
            .1;
        let enums: Vec<Value> = strategy.msgs(20).iter().map(yaml_value).collect();
        assert_eq!(enums, [json!("Recreate"), json!("RollingUpdate")]);
        assert_eq!((strategy.int(11), strategy.int(12)), (300, 1));
        let labels = &spec_props
            .iter()
            .find(|(n, _)| n == "labels")
            .expect("labels")
            .1;
        assert_eq!(labels.msg(21).msg(1).msg(22).strs(1), ["string"]);
        let closed = &spec_props
            .iter()
            .find(|(n, _)| n == "closed")
            .expect("closed")
            .1;
        assert_eq!(
            closed.msg(21).varint(2),
            Some(0),
            "false is written in a oneof"
        );
        assert!(closed.bool(27));

        // Whole-schema round trip.
        let original = &test_doc()["definitions"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(&schema_back(deployment), original);

        // Parameters, security definitions and requirements.
        let parameters = doc.msg(10).named(1);
        assert_eq!(parameters[0].0, "pretty");
        assert_eq!(parameters[0].1.msg(2).msg(3).str(4), "pretty");
        let security = doc.msg(13).named(1);
        assert_eq!(security[0].0, "BearerToken");
        let api_key = security[0].1.msg(2);
        assert_eq!(
            (
                api_key.str(1),
                api_key.str(2),
                api_key.str(3),
                api_key.str(4)
            ),
            (
                "apiKey".into(),
                "authorization".into(),
                "header".into(),
                "Bearer Token authentication".into()
            )
        );
        let requirement = doc.msgs(12);
        assert_eq!(requirement.len(), 1);
        let named = requirement[0].named(1);
        assert_eq!(named[0].0, "BearerToken");
        assert!(named[0].1.0.is_empty());
    }

    /// kube-openapi's `proto.NewOpenAPIData` rules (kubectl 1.29–1.31 parse every definition
    /// with them, and fail on the first violation).
    fn check_kube_openapi(s: &Msg, names: &[String], path: &str) {
        let types = s.opt_msg(22).map(|t| t.strs(1)).unwrap_or_default();
        let properties = s.opt_msg(25);
        if !s.str(1).is_empty() {
            let reference = s.str(1);
            assert!(
                properties.as_ref().is_none_or(|p| p.0.is_empty()),
                "{path}: $ref with properties"
            );
            assert!(types.is_empty(), "{path}: $ref with a type");
            let model = reference
                .strip_prefix("#/definitions/")
                .expect("definition $ref");
            assert!(
                names.iter().any(|n| n == model),
                "{path}: dangling $ref {model}"
            );
            return;
        }
        let sub = |m: &Msg, p: &str| check_kube_openapi(m, names, p);
        match types.as_slice() {
            [] | [_] if properties.is_some() => {
                assert!(
                    types.is_empty() || types[0] == "object",
                    "{path}: properties on a non-object"
                );
                for (name, p) in properties.iter().flat_map(|p| p.named(1)) {
                    sub(&p, &format!("{path}.{name}"));
                }
            }
            [] => {}
            [t] if t == "object" => {
                if let Some(schema) = s.opt_msg(21).and_then(|a| a.opt_msg(1)) {
                    sub(&schema, &format!("{path}.*"));
                }
            }
            [t] if t == "array" => {
                let items = s.opt_msg(23).map(|i| i.msgs(1)).unwrap_or_default();
                assert_eq!(
                    items.len(),
                    1,
                    "{path}: array should have exactly one sub-item"
                );
                sub(&items[0], &format!("{path}[]"));
            }
            [t] => assert!(
                ["string", "number", "integer", "boolean"].contains(&t.as_str()),
                "{path}: unknown primitive type {t}"
            ),
            _ => panic!("{path}: multiple types"),
        }
    }

    #[test]
    fn served_document_satisfies_kubectl() {
        let registry = crate::registry::Registry::with_builtins();
        let json_doc = crate::openapi::v2(&registry);
        let doc = Msg::parse(&encode_v2(&json_doc));
        assert_eq!(doc.str(1), "2.0");

        // kubectl 1.27/1.28 `supportsQueryParam`: the PATCH operation whose GVK extension
        // matches must list a `fieldValidation` query parameter.
        let paths = doc.msg(8).named(2);
        assert_eq!(
            paths.len(),
            json_doc["paths"].as_object().map_or(0, Map::len)
        );
        let supports = |group: &str, version: &str, kind: &str| {
            paths.iter().any(|(_, item)| {
                let Some(patch) = item.opt_msg(8) else {
                    return false;
                };
                let ext = patch.extensions(13);
                let Some(gvk) = ext.get("x-kubernetes-group-version-kind") else {
                    return false;
                };
                // kubectl reads it into a map[string]string.
                let gvk: std::collections::BTreeMap<String, String> =
                    serde_json::from_value(gvk.clone()).expect("GVK of strings");
                gvk.get("group").map(String::as_str) == Some(group)
                    && gvk.get("version").map(String::as_str) == Some(version)
                    && gvk.get("kind").map(String::as_str) == Some(kind)
                    && patch.msgs(8).iter().any(|p| {
                        p.opt_msg(1)
                            .and_then(|p| p.opt_msg(2))
                            .and_then(|n| n.opt_msg(3))
                            .is_some_and(|q| q.str(4) == "fieldValidation")
                    })
            })
        };
        assert!(supports("apps", "v1", "Deployment"));
        assert!(supports("", "v1", "ConfigMap"));
        assert!(supports(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition"
        ));
        assert!(!supports("apps", "v1", "NoSuchKind"));

        // Every definition decodes back to its JSON, and passes kube-openapi's parser.
        let definitions = doc.msg(9).named(1);
        let json_defs = json_doc["definitions"].as_object().expect("definitions");
        assert_eq!(definitions.len(), json_defs.len());
        let names: Vec<String> = definitions.iter().map(|(n, _)| n.clone()).collect();
        for (name, schema) in &definitions {
            assert_eq!(
                Some(&schema_back(schema)),
                json_defs.get(name),
                "definition {name}"
            );
            check_kube_openapi(schema, &names, name);
        }
    }

    #[test]
    fn any_yaml_is_valid_yaml_for_odd_strings() {
        let value = json!({"k\"ey": ["a\u{7f}b", "line\nbreak\u{2028}", "tab\t", "\u{85}", "é🎉", "yes", "1.0"], "n": [1, -2, 1.5e300, null, true]});
        let text = yaml_text(&value);
        assert!(text.contains("\\u007f") && text.contains("\\u2028") && text.contains("\\u0085"));
        assert!(!text.contains('\u{7f}') && !text.contains('\n'));
        let back: Value = serde_yaml_ng::from_str(&text).expect("YAML");
        assert_eq!(back, value);
        assert_eq!(yaml_text(&json!("merge")), "\"merge\"");
        assert_eq!(yaml_text(&json!({})), "{}");
    }

    #[test]
    fn odd_and_deep_inputs_encode_without_panicking() {
        assert!(encode_v2(&json!(null)).is_empty());
        assert!(encode_v2(&json!([1, 2])).is_empty());
        // Wrong JSON types are left out; a wrongly typed schema is an empty one.
        let odd = json!({
            "swagger": 2,
            "paths": {"/x": {"get": "nope", "parameters": [1, {"in": "cookie", "name": "c"}]}},
            "definitions": {"a": true, "b": {"type": 7, "items": [true, {"type": "string"}], "maxLength": 1e3, "minLength": -1, "minimum": 0, "maximum": -0.0, "additionalProperties": null}}
        });
        let doc = Msg::parse(&encode_v2(&odd));
        assert_eq!(doc.str(1), "");
        let item = &doc.msg(8).named(2)[0].1;
        assert_eq!(item.numbers(), vec![9]);
        assert_eq!(item.msgs(9)[0].msg(1).0, vec![]);
        let defs = doc.msg(9).named(1);
        assert!(defs[0].1.0.is_empty());
        let b = &defs[1].1;
        assert_eq!(b.msg(23).msgs(1).len(), 2);
        assert_eq!((b.int(11), b.int(12)), (1000, -1));
        // proto3 leaves +0.0 out (upstream's documents lose `minimum: 0` the same way).
        assert_eq!((b.double(9), b.double(7)), (None, Some(-0.0)));
        assert_eq!(b.opt_msg(21).map(|m| m.0), None);

        // Nesting far deeper than any parsed document is cut off, not followed.
        let mut schema = json!({"type": "string"});
        for _ in 0..1000 {
            schema = json!({"type": "object", "properties": {"p": schema}, "default": {"d": []}});
        }
        let doc = Msg::parse(&encode_v2(&json!({"definitions": {"deep": schema}})));
        let mut s = doc.msg(9).named(1).remove(0).1;
        let mut depth = 1;
        while let Some(p) = s.opt_msg(25) {
            s = p.named(1).remove(0).1;
            depth += 1;
        }
        // MAX_DEPTH encoded levels, then one empty schema.
        assert_eq!(depth, MAX_DEPTH + 1);
        assert!(s.0.is_empty());
    }

    #[test]
    fn negotiation_follows_upstream() {
        use V2Encoding::{Json, Protobuf};
        assert_eq!(negotiate(None), Some(Json));
        assert_eq!(negotiate(Some("")), Some(Json));
        assert_eq!(negotiate(Some("application/json")), Some(Json));
        assert_eq!(negotiate(Some("*/*")), Some(Json));
        // kubectl 1.27–1.31.
        assert_eq!(negotiate(Some(MEDIA_TYPE_DEPRECATED)), Some(Protobuf));
        assert_eq!(negotiate(Some(MEDIA_TYPE)), Some(Protobuf));
        assert_eq!(
            negotiate(Some(
                "application/json;q=0.5, application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
            )),
            Some(Protobuf)
        );
        assert_eq!(
            negotiate(Some(
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf;q=0.5, application/json"
            )),
            Some(Json)
        );
        assert_eq!(
            negotiate(Some(
                "*/*, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
            )),
            Some(Protobuf)
        );
        assert_eq!(negotiate(Some("application/xml")), None);
        assert_eq!(negotiate(Some("application/json;q=0")), None);
        assert_eq!(negotiate(Some("application/protobuf")), None);
    }
}
