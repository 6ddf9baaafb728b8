//! CRD structural-schema validation, pruning and defaulting.
//!
//! Both the object and the schema (a CRD version's `openAPIV3Schema`, i.e. a JSONSchemaProps
//! JSON object) are plain [`serde_json::Value`]s. The behaviour follows kube-apiserver's
//! apiextensions code paths:
//!
//! * [`validate`] — kube-openapi's schema validator as wired by
//!   `apiextensions-apiserver/pkg/apiserver/validation` (messages such as
//!   `spec.replicas in body should be greater than or equal to 1`, converted to field errors as
//!   `kubeOpenAPIResultToFieldErrors` does), followed by the embedded-resource `ObjectMeta`
//!   checks (`schema/objectmeta`) and the `x-kubernetes-list-type` set/map uniqueness checks
//!   (`schema/listtype`), in that order, exactly as the custom-resource strategy runs them.
//! * [`prune`] / [`drop_non_nullable_nulls`] — `schema/pruning` and
//!   `PruneNonNullableNullsWithoutDefaults`.
//! * [`apply_defaults`] — `schema/defaulting.Default`.
//! * [`check_structural`] — the `openAPIV3Schema` part of CRD validation (structural
//!   invariants, default validation, and the OpenAPI feature restrictions).
//!
//! Field paths inside schema-validation messages use kube-openapi's naming: properties are
//! dot-joined (`spec.replicas`), array items use brackets (`spec.items[0].name`) and entries of
//! an `additionalProperties` map are dot-joined too (`spec.map.key`) — that is what upstream
//! prints for schema errors. The list-type and embedded-resource checks use `field.Path`
//! semantics where map entries are `spec.map[key]`, again as upstream.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use regex::Regex;
use serde_json::{Map, Value};

use super::names::{
    self, NameRule, child, go_float, go_quote, go_render, index, invalid_rendered, key,
};
use crate::error::Cause;

const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
const EMBEDDED: &str = "x-kubernetes-embedded-resource";
const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
const LIST_TYPE: &str = "x-kubernetes-list-type";
const LIST_MAP_KEYS: &str = "x-kubernetes-list-map-keys";
const MAP_TYPE: &str = "x-kubernetes-map-type";
const VALIDATIONS: &str = "x-kubernetes-validations";
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];
const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
/// Formats CRD schemas validate (upstream `supportedVersionedFormats`, names without `-`).
const SUPPORTED_FORMATS: [&str; 26] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];
const BLOCKED_RULES_MESSAGE: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

// =============================================================================================
// Public API
// =============================================================================================

/// Validates `value` against the structural `schema` the way kube-apiserver validates a custom
/// resource, collecting every error.
///
/// `path` is the field-path prefix of `value` (`""` for the object root, `"status"` when
/// validating the status against the status sub-schema). As upstream, the prefix only goes into
/// the causes' `field`; the text of schema messages names paths relative to `schema`'s root
/// (`status.ready: Invalid value: "string": ready in body must be of type integer: "string"`),
/// and errors about the root value itself have the field `<nil>` when `path` is empty.
///
/// Upstream drops non-nullable `null`s without a default before validating (see
/// [`drop_non_nullable_nulls`]); when that is not done, such a null is reported like upstream's
/// validator does: `Invalid value: "null": spec.x in body must be of type string: "null"`.
pub fn validate(value: &Value, schema: &Value, path: &str) -> Vec<Cause> {
    validate_patterns(value, schema, path, None)
}

/// [`validate`] with a server's cache of compiled `pattern`s.
pub fn validate_with(
    value: &Value,
    schema: &Value,
    path: &str,
    patterns: &Arc<PatternCache>,
) -> Vec<Cause> {
    validate_patterns(value, schema, path, Some(patterns.clone()))
}

/// [`validate_with`] for an update from `old`, with upstream's validation ratcheting (CRD
/// validation ratcheting, GA since 1.33): a schema check of a value that did not change since
/// `old` is not enforced, so tightening a schema does not lock existing objects. Old values are
/// correlated as upstream does: properties by name, items of `x-kubernetes-list-type: map`
/// lists by their keys, items of lists without a list type by index (sets and atomic lists
/// are not correlated item by item). The list-type uniqueness checks run only when `old`
/// passes them; the embedded-resource checks are not ratcheted.
pub fn validate_update_with(
    value: &Value,
    old: &Value,
    schema: &Value,
    path: &str,
    patterns: &Arc<PatternCache>,
) -> Vec<Cause> {
    let mut c = Collector {
        patterns: Some(patterns.clone()),
        ..Collector::default()
    };
    validate_node(value, schema, "", Some(old), &mut c);
    let mut causes: Vec<Cause> = c.errs.iter().map(|e| to_cause(e, path)).collect();
    embedded_meta_pass(value, schema, path, false, &mut causes);
    let mut old_duplicates = Vec::new();
    list_type_pass(old, schema, path, &mut old_duplicates);
    if old_duplicates.is_empty() {
        list_type_pass(value, schema, path, &mut causes);
    }
    causes
}

fn validate_patterns(
    value: &Value,
    schema: &Value,
    path: &str,
    patterns: Option<Arc<PatternCache>>,
) -> Vec<Cause> {
    let mut causes = openapi_validate(value, schema, path, patterns);
    embedded_meta_pass(value, schema, path, false, &mut causes);
    list_type_pass(value, schema, path, &mut causes);
    causes
}

/// Removes the fields of `value` that `schema` does not specify (at every level without
/// `x-kubernetes-preserve-unknown-fields: true`), keeping `apiVersion`, `kind` and `metadata` at
/// the root and in embedded resources untouched. Returns the pruned field paths, sorted, e.g.
/// `["spec.bogus", "spec.items[0].foo"]`; see [`unknown_field_message`] for the warning text.
pub fn prune(value: &mut Value, schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    prune_rec(value, Some(schema), true, "", &mut out);
    out.sort();
    out
}

/// Upstream's `PruneNonNullableNullsWithoutDefaults`: removes object fields whose value is
/// `null` when their schema is neither `nullable` nor has a `default`. kube-apiserver runs this
/// right after [`prune`] on every decoded custom resource, before defaulting and validation
/// (fields without a schema, and nulls with a default, are left alone).
pub fn drop_non_nullable_nulls(value: &mut Value, schema: &Value) {
    drop_nulls_rec(value, Some(schema));
}

/// Fills `default`s into `value` as upstream `structuraldefaulting.Default` does: at each object
/// level absent properties (and present non-nullable `null`s) with a default get a copy of it,
/// then every property, `additionalProperties` entry and array item is defaulted recursively —
/// so a defaulted object receives its own nested defaults too.
pub fn apply_defaults(value: &mut Value, schema: &Value) {
    default_rec(value, schema);
}

/// Checks a CRD version's `openAPIV3Schema` (at field path `path`, e.g.
/// `spec.versions[0].schema.openAPIV3Schema`) as CRD validation does: root not nullable, the
/// structural-schema invariants (every specified field has a `type` unless
/// `x-kubernetes-int-or-string` / `x-kubernetes-preserve-unknown-fields`, object at the root,
/// `metadata` only restricting `name`/`generateName`, value validations in `allOf`/`anyOf`/
/// `oneOf`/`not` only, …), then — when structural — that every `default` is pruned and valid
/// against its own schema, then the OpenAPI feature restrictions (`uniqueItems`, `$ref`,
/// `additionalProperties` with `properties`, list/map-type extensions, defaults in metadata…).
pub fn check_structural(schema: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if !schema.is_object() {
        errs.push(invalid_rendered(
            path,
            &go_render(schema),
            "must be a JSON schema object",
        ));
        return errs;
    }
    if flag(schema, "nullable") {
        errs.push(Cause::forbidden(
            child(path, "nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut structural = Vec::new();
    structural_invariants(schema, Level::Root, path, &mut structural);
    value_validation_completeness(schema, schema, path, path, &mut structural);
    structural.sort_by_key(Cause::summary);
    if structural.is_empty() {
        defaults_rec(schema, path, true, false, &mut errs);
    } else {
        errs.extend(structural);
    }
    let ssv = Ssv {
        allow_defaults: true,
        defaults_reason: String::new(),
        inside_meta: false,
    };
    ssv_rec(schema, path, &ssv, true, &mut errs);
    errs
}

/// The sub-schema at a property path (`["status"]`, `["spec", "template"]`), following
/// `properties` and, for names not listed there, an `additionalProperties` schema.
#[cfg(test)]
pub fn schema_at<'a>(schema: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut current = schema;
    for name in path {
        current = match property(current, name) {
            Some(p) => p,
            None => match additional(current) {
                Additional::Schema(a) => a,
                _ => return None,
            },
        };
    }
    Some(current)
}

/// The warning / strict-decoding text for a pruned field: `unknown field "spec.foo"`.
pub fn unknown_field_message(path: &str) -> String {
    format!("unknown field {}", go_quote(path))
}

/// Upstream's `hasBlockingErr`: when `causes` contain a NotSupported, Required, TooLong,
/// TooMany or TypeInvalid error, CEL rules (`x-kubernetes-validations`) are not evaluated and
/// this cause is appended instead (`<nil>: Invalid value: null: some validation rules were not
/// checked because the object was invalid; correct the existing errors to complete validation`).
pub fn blocked_rules_cause(causes: &[Cause]) -> Option<Cause> {
    let blocking = causes.iter().any(|c| {
        matches!(
            c.reason.as_str(),
            "FieldValueNotSupported"
                | "FieldValueRequired"
                | "FieldValueTooLong"
                | "FieldValueTooMany"
                | "FieldValueTypeInvalid"
        )
    });
    blocking.then(|| invalid_rendered("<nil>", "null", BLOCKED_RULES_MESSAGE))
}

// =============================================================================================
// Schema accessors
// =============================================================================================

fn flag(s: &Value, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn text<'a>(s: &'a Value, k: &str) -> &'a str {
    s.get(k).and_then(Value::as_str).unwrap_or("")
}

fn properties(s: &Value) -> Option<&Map<String, Value>> {
    s.get("properties").and_then(Value::as_object)
}

fn property<'a>(s: &'a Value, name: &str) -> Option<&'a Value> {
    properties(s)
        .and_then(|p| p.get(name))
        .filter(|v| v.is_object())
}

fn items(s: &Value) -> Option<&Value> {
    s.get("items").filter(|v| v.is_object())
}

fn sub_schemas<'a>(s: &'a Value, k: &str) -> &'a [Value] {
    s.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn default_of(s: &Value) -> Option<&Value> {
    s.get("default").filter(|v| !v.is_null())
}

fn int_kw(s: &Value, k: &str) -> Option<i64> {
    s.get(k)
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
}

fn float_kw(s: &Value, k: &str) -> Option<f64> {
    s.get(k).and_then(Value::as_f64)
}

#[derive(Clone, Copy)]
enum Additional<'a> {
    Absent,
    Bool(bool),
    Schema(&'a Value),
}

fn additional(s: &Value) -> Additional<'_> {
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => Additional::Bool(*b),
        Some(v @ Value::Object(_)) => Additional::Schema(v),
        _ => Additional::Absent,
    }
}

/// The structural schema of an `additionalProperties` entry (`None` for the boolean forms, as
/// upstream's `StructuralOrBool` without a schema).
fn additional_schema(s: &Value) -> Option<&Value> {
    match additional(s) {
        Additional::Schema(a) => Some(a),
        _ => None,
    }
}

/// The schema for field `k` of an object: its property, else the additionalProperties schema.
fn field_schema<'a>(s: Option<&'a Value>, k: &str) -> Option<&'a Value> {
    let s = s?;
    property(s, k).or_else(|| additional_schema(s))
}

// =============================================================================================
// Pruning and defaulting
// =============================================================================================

fn prune_rec(
    x: &mut Value,
    s: Option<&Value>,
    force_embedded: bool,
    path: &str,
    out: &mut Vec<String>,
) {
    if let Some(sc) = s
        && flag(sc, PRESERVE)
    {
        skip_prune(x, sc, force_embedded, path, out);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(sc) = s else {
                out.extend(m.keys().map(|k| child(path, k)));
                m.clear();
                return;
            };
            let embedded = force_embedded || flag(sc, EMBEDDED);
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(p) = property(sc, &k) {
                    if let Some(v) = m.get_mut(&k) {
                        prune_rec(v, Some(p), false, &child(path, &k), out);
                    }
                } else if !matches!(additional(sc), Additional::Absent) {
                    let a = additional_schema(sc);
                    if let Some(v) = m.get_mut(&k) {
                        prune_rec(v, a, false, &child(path, &k), out);
                    }
                } else {
                    if !META_FIELDS.contains(&k.as_str()) || !path.is_empty() {
                        out.push(child(path, &k));
                    }
                    m.remove(&k);
                }
            }
        }
        Value::Array(a) => {
            let it = s.and_then(items);
            for (i, v) in a.iter_mut().enumerate() {
                prune_rec(v, it, false, &index(path, i), out);
            }
        }
        _ => {}
    }
}

fn skip_prune(x: &mut Value, s: &Value, force_embedded: bool, path: &str, out: &mut Vec<String>) {
    match x {
        Value::Object(m) => {
            let embedded = force_embedded || flag(s, EMBEDDED);
            for (k, v) in m.iter_mut() {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(p) = property(s, k) {
                    prune_rec(v, Some(p), false, &child(path, k), out);
                } else if !matches!(additional(s), Additional::Absent) {
                    prune_rec(v, additional_schema(s), false, &child(path, k), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(it) = items(s) {
                for (i, v) in a.iter_mut().enumerate() {
                    skip_prune(v, it, false, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

fn drop_nulls_rec(x: &mut Value, s: Option<&Value>) {
    match x {
        Value::Object(m) => {
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let fs = field_schema(s, &k);
                let drop = match (m.get(&k), fs) {
                    (Some(Value::Null), Some(fs)) => {
                        !flag(fs, "nullable") && default_of(fs).is_none()
                    }
                    _ => false,
                };
                if drop {
                    m.remove(&k);
                } else if let Some(v) = m.get_mut(&k) {
                    drop_nulls_rec(v, fs);
                }
            }
        }
        Value::Array(a) => {
            let it = s.and_then(items);
            for v in a.iter_mut() {
                drop_nulls_rec(v, it);
            }
        }
        _ => {}
    }
}

fn is_non_nullable_null(x: &Value, s: Option<&Value>) -> bool {
    x.is_null() && s.is_some_and(|s| !flag(s, "nullable"))
}

fn default_rec(x: &mut Value, s: &Value) {
    match x {
        Value::Object(m) => {
            if let Some(props) = properties(s) {
                for (k, prop) in props {
                    let Some(d) = default_of(prop) else {
                        continue;
                    };
                    let set = match m.get(k) {
                        None => true,
                        Some(v) => is_non_nullable_null(v, Some(prop)),
                    };
                    if set {
                        m.insert(k.clone(), d.clone());
                    }
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(p) = property(s, k) {
                    default_rec(v, p);
                } else if !matches!(additional(s), Additional::Absent) {
                    let Some(a) = additional_schema(s) else {
                        continue;
                    };
                    if is_non_nullable_null(v, Some(a)) {
                        *v = default_of(a).cloned().unwrap_or(Value::Null);
                    }
                    default_rec(v, a);
                }
            }
        }
        Value::Array(a) => {
            let Some(it) = items(s) else {
                return;
            };
            for v in a.iter_mut() {
                if is_non_nullable_null(v, Some(it)) {
                    *v = default_of(it).cloned().unwrap_or(Value::Null);
                }
                default_rec(v, it);
            }
        }
        _ => {}
    }
}

// =============================================================================================
// kube-openapi schema validation
// =============================================================================================

/// How an openapi error converts into a field error (`kubeOpenAPIResultToFieldErrors`).
enum Conv {
    Required,
    /// Rendered bad value and the supported values (unquoted).
    Enum(String, Vec<String>),
    TooLong(i64),
    TooMany(i64, i64),
    /// The raw (unquoted) string value of an InvalidType error.
    TypeInvalid(String),
    /// The rendered bad value of a generic validation error.
    Invalid(String),
    /// Not a `*errors.Validation`: reported at the prefix with the value `""`.
    Plain,
}

struct OErr {
    name: String,
    msg: String,
    conv: Conv,
}

#[derive(Default)]
struct Collector {
    errs: Vec<OErr>,
    seen: HashSet<String>,
    /// The server's compiled patterns (none: compile each time).
    patterns: Option<Arc<PatternCache>>,
}

impl Collector {
    /// An empty collector sharing this one's pattern cache.
    fn sibling(&self) -> Collector {
        Collector {
            patterns: self.patterns.clone(),
            ..Collector::default()
        }
    }

    /// `pattern` compiled (Go syntax), from the cache when there is one.
    fn pattern(&self, pattern: &str) -> Result<Regex, String> {
        match &self.patterns {
            Some(cache) => cache.compiled(pattern),
            None => compiled_pattern(pattern),
        }
    }

    fn add(&mut self, e: OErr) {
        if self.seen.insert(e.msg.clone()) {
            self.errs.push(e);
        }
    }

    fn merge(&mut self, other: Collector) {
        for e in other.errs {
            self.add(e);
        }
    }

    fn invalid(&mut self, name: &str, msg: String, rendered: String) {
        self.add(OErr {
            name: name.to_string(),
            msg,
            conv: Conv::Invalid(rendered),
        });
    }

    fn plain(&mut self, msg: String) {
        self.add(OErr {
            name: String::new(),
            msg,
            conv: Conv::Plain,
        });
    }

    fn invalid_type(&mut self, name: &str, type_name: &str, value: &str) {
        self.add(OErr {
            name: name.to_string(),
            msg: format!(
                "{name} in body must be of type {type_name}: {}",
                go_quote(value)
            ),
            conv: Conv::TypeInvalid(value.to_string()),
        });
    }
}

fn nil_or(prefix: &str) -> String {
    if prefix.is_empty() {
        "<nil>".to_string()
    } else {
        prefix.to_string()
    }
}

fn to_cause(e: &OErr, prefix: &str) -> Cause {
    let field = match e.conv {
        Conv::Plain => nil_or(prefix),
        _ if e.name.is_empty() || e.name == "." => nil_or(prefix),
        _ => child(prefix, e.name.strip_prefix('.').unwrap_or(&e.name)),
    };
    match &e.conv {
        Conv::Required => Cause::required(field, ""),
        Conv::Enum(value, values) => {
            let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
            let message = if quoted.is_empty() {
                format!("Unsupported value: {value}")
            } else {
                format!(
                    "Unsupported value: {value}: supported values: {}",
                    quoted.join(", ")
                )
            };
            Cause::new("FieldValueNotSupported", field, message)
        }
        Conv::TooLong(max) => names::too_long(&field, *max),
        Conv::TooMany(actual, max) => {
            let detail = if *max >= 0 {
                let unit = if *max == 1 { "item" } else { "items" };
                format!("must have at most {max} {unit}")
            } else {
                "has too many items".to_string()
            };
            let message = if *actual >= 0 {
                format!("Too many: {actual}: {detail}")
            } else {
                format!("Too many: {detail}")
            };
            Cause::new("FieldValueTooMany", field, message)
        }
        Conv::TypeInvalid(raw) => Cause::new(
            "FieldValueTypeInvalid",
            field,
            format!("Invalid value: {}: {}", go_quote(raw), e.msg),
        ),
        Conv::Invalid(rendered) => invalid_rendered(&field, rendered, &e.msg),
        Conv::Plain => invalid_rendered(&field, "\"\"", &e.msg),
    }
}

/// Schema validation only (no embedded-metadata or list-type checks), as causes.
fn openapi_validate(
    value: &Value,
    schema: &Value,
    prefix: &str,
    patterns: Option<Arc<PatternCache>>,
) -> Vec<Cause> {
    let mut c = Collector {
        patterns,
        ..Collector::default()
    };
    validate_node(value, schema, "", None, &mut c);
    c.errs.iter().map(|e| to_cause(e, prefix)).collect()
}

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    F(f64),
}

impl Num {
    fn of(v: &Value) -> Option<Num> {
        let n = v.as_number()?;
        Some(match n.as_i64() {
            Some(i) => Num::I(i),
            None => Num::F(n.as_f64().unwrap_or(0.0)),
        })
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
}

/// `swag.IsFloat64AJSONInteger`.
fn is_json_integer(f: f64) -> bool {
    const MAX_JSON_FLOAT: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX_JSON_FLOAT..=MAX_JSON_FLOAT).contains(&f) {
        return false;
    }
    let g = f.trunc();
    if f == g {
        return true;
    }
    if f < 0.0 || g == 0.0 {
        return false;
    }
    (f - g) / (f + g) < 1e-9
}

struct TypeInfo<'a> {
    types: Vec<&'a str>,
    nullable: bool,
    format: &'a str,
}

fn type_info(s: &Value) -> TypeInfo<'_> {
    let types: Vec<&str> = if flag(s, INT_OR_STRING) {
        vec!["integer", "string"]
    } else {
        match text(s, "type") {
            "" => Vec::new(),
            t => vec![t],
        }
    };
    let raw = text(s, "format");
    let single = if types.len() == 1 { types[0] } else { "" };
    let format = if raw.is_empty() {
        ""
    } else {
        match single {
            "" | "string" if SUPPORTED_FORMATS.contains(&raw.replace('-', "").as_str()) => raw,
            "integer" if raw == "int32" || raw == "int64" => raw,
            "number" if raw == "float" || raw == "double" => raw,
            _ => "",
        }
    };
    TypeInfo {
        types,
        nullable: flag(s, "nullable"),
        format,
    }
}

/// Validates `v` against `s`; `old` is the value correlated with `v` in the stored object on
/// an update: when unchanged, nothing below is enforced (ratcheting).
fn validate_node(v: &Value, s: &Value, name: &str, old: Option<&Value>, out: &mut Collector) {
    if old.is_some_and(|o| json_eq(o, v)) {
        return;
    }
    let ti = type_info(s);
    if v.is_null() {
        check_type(v, &ti, name, out);
        check_enum(v, s, name, out);
        return;
    }
    check_type(v, &ti, name, out);
    check_composition(v, s, name, old, out);
    if let Value::String(sv) = v {
        check_string(sv, s, name, out);
        check_format(sv, &ti, name, out);
    }
    if let Some(n) = Num::of(v) {
        check_number(n, s, &ti, name, out);
    }
    if let Value::Array(a) = v {
        check_array(a, s, name, old, out);
    }
    check_enum(v, s, name, out);
    if let Value::Object(m) = v {
        check_object(m, s, name, old, out);
    }
}

fn check_type(v: &Value, ti: &TypeInfo<'_>, name: &str, out: &mut Collector) {
    if ti.types.is_empty() && ti.format.is_empty() {
        return;
    }
    let contains = |t: &str| ti.types.contains(&t);
    if v.is_null() {
        if !ti.types.is_empty() && !contains("null") && !ti.nullable {
            out.invalid_type(name, &ti.types.join(","), "null");
        }
        return;
    }
    let (sch_type, data_format) = match v {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Number(_) => match Num::of(v) {
            Some(Num::I(_)) => ("integer", "int64"),
            _ => ("number", "float64"),
        },
        Value::Null => ("null", ""),
    };
    let is_float_int = sch_type == "number"
        && Num::of(v).is_some_and(|n| is_json_integer(n.as_f64()))
        && contains("integer");
    let is_int_float = sch_type == "integer" && contains("number");
    let str_or_slice = v.is_string() || v.is_array();
    if !(str_or_slice
        || ti.format.is_empty()
        || contains(sch_type)
        || data_format == ti.format
        || is_float_int
        || is_int_float)
    {
        out.invalid_type(name, ti.format, data_format);
        return;
    }
    if str_or_slice && !(contains("number") || contains("integer") || ti.format.is_empty()) {
        return;
    }
    if !(contains(sch_type) || is_float_int || is_int_float) {
        out.invalid_type(name, &ti.types.join(","), sch_type);
    }
}

fn sub_result(
    v: &Value,
    s: &Value,
    name: &str,
    old: Option<&Value>,
    parent: &Collector,
) -> Collector {
    let mut c = parent.sibling();
    validate_node(v, s, name, old, &mut c);
    c
}

/// Picks the failing branch to report (upstream uses a match count; fewest errors here).
fn best_failure(results: Vec<Collector>) -> Option<Collector> {
    let mut best: Option<Collector> = None;
    for r in results {
        if best.as_ref().is_none_or(|b| r.errs.len() < b.errs.len()) {
            best = Some(r);
        }
    }
    best
}

fn check_composition(v: &Value, s: &Value, name: &str, old: Option<&Value>, out: &mut Collector) {
    let any_of = sub_schemas(s, "anyOf");
    if !any_of.is_empty() {
        let mut failures = Vec::new();
        let mut succeeded = false;
        for branch in any_of {
            let r = sub_result(v, branch, name, old, out);
            if r.errs.is_empty() {
                succeeded = true;
                break;
            }
            failures.push(r);
        }
        if !succeeded {
            out.plain(format!(
                "{} must validate at least one schema (anyOf)",
                go_quote(name)
            ));
            if let Some(best) = best_failure(failures) {
                out.merge(best);
            }
        }
    }

    let one_of = sub_schemas(s, "oneOf");
    if !one_of.is_empty() {
        let mut failures = Vec::new();
        let mut validated = 0usize;
        for branch in one_of {
            let r = sub_result(v, branch, name, old, out);
            if r.errs.is_empty() {
                validated += 1;
            } else if validated == 0 {
                failures.push(r);
            }
        }
        if validated != 1 {
            let extra = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            out.plain(format!(
                "{} must validate one and only one schema (oneOf). {extra}",
                go_quote(name)
            ));
            if validated == 0
                && let Some(best) = best_failure(failures)
            {
                out.merge(best);
            }
        }
    }

    let all_of = sub_schemas(s, "allOf");
    if !all_of.is_empty() {
        let mut validated = 0usize;
        for branch in all_of {
            let r = sub_result(v, branch, name, old, out);
            if r.errs.is_empty() {
                validated += 1;
            }
            out.merge(r);
        }
        if validated != all_of.len() {
            let extra = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            out.plain(format!(
                "{} must validate all the schemas (allOf){extra}",
                go_quote(name)
            ));
        }
    }

    if let Some(not) = s.get("not").filter(|n| n.is_object())
        && sub_result(v, not, name, old, out).errs.is_empty()
    {
        out.plain(format!(
            "{} must not validate the schema (not)",
            go_quote(name)
        ));
    }
}

fn check_string(sv: &str, s: &Value, name: &str, out: &mut Collector) {
    let len = sv.chars().count() as i64;
    if let Some(max) = int_kw(s, "maxLength")
        && len > max
    {
        out.add(OErr {
            name: name.to_string(),
            msg: format!("{name} in body should be at most {max} chars long"),
            conv: Conv::TooLong(max),
        });
        return;
    }
    if let Some(min) = int_kw(s, "minLength")
        && len < min
    {
        out.invalid(
            name,
            format!("{name} in body should be at least {min} chars long"),
            go_quote(sv),
        );
        return;
    }
    let pattern = text(s, "pattern");
    if !pattern.is_empty() {
        match out.pattern(pattern) {
            Ok(re) => {
                if !re.is_match(sv) {
                    out.invalid(
                        name,
                        format!("{name} in body should match '{pattern}'"),
                        go_quote(sv),
                    );
                }
            }
            Err(err) => out.invalid(
                name,
                format!("{name} in body should match '{pattern}, but pattern is invalid: {err}'"),
                go_quote(sv),
            ),
        }
    }
}

fn check_format(sv: &str, ti: &TypeInfo<'_>, name: &str, out: &mut Collector) {
    if ti.format.is_empty() {
        return;
    }
    let normalized = ti.format.replace('-', "");
    if !SUPPORTED_FORMATS.contains(&normalized.as_str()) {
        return;
    }
    if !formats::valid(&normalized, sv) {
        out.invalid_type(name, ti.format, sv);
    }
}

/// `IsValueValidAgainstRange`: `None` when `n` fits the type/format, else the error text.
fn range_error(n: Num, type_name: &str, format: &str, prefix: &str, path: &str) -> Option<String> {
    let repr = match n {
        Num::I(i) => i.to_string(),
        Num::F(f) => format!("{f}"),
    };
    let ok = match (type_name, format) {
        ("integer", "int32") => repr.parse::<i32>().is_ok(),
        ("integer", _) => repr.parse::<i64>().is_ok(),
        (_, "float") => {
            let f = n.as_f64();
            !f.is_finite() || f.abs() <= f64::from(f32::MAX)
        }
        _ => true,
    };
    if ok {
        return None;
    }
    Some(if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {path}")
    })
}

fn multiple_of(n: Num, factor: f64, native: bool, name: &str, out: &mut Collector) {
    match (n, native) {
        (Num::I(data), true) => {
            let factor = factor as i64;
            if factor <= 0 {
                out.invalid(
                    name,
                    format!("factor MultipleOf declared for {name} must be positive: {factor}"),
                    factor.to_string(),
                );
            } else if data.wrapping_div(factor).wrapping_mul(factor) != data {
                out.invalid(
                    name,
                    format!("{name} in body should be a multiple of {factor}"),
                    data.to_string(),
                );
            }
        }
        _ => {
            let data = n.as_f64();
            if factor <= 0.0 {
                out.invalid(
                    name,
                    format!(
                        "factor MultipleOf declared for {name} must be positive: {}",
                        go_float(factor)
                    ),
                    go_float(factor),
                );
                return;
            }
            let mult = if factor < 1.0 {
                1.0 / factor * data
            } else {
                data / factor
            };
            if !is_json_integer(mult) {
                out.invalid(
                    name,
                    format!(
                        "{name} in body should be a multiple of {}",
                        go_float(factor)
                    ),
                    go_float(data),
                );
            }
        }
    }
}

fn bound_check(
    n: Num,
    bound: f64,
    exclusive: bool,
    max: bool,
    native: bool,
    name: &str,
) -> Option<OErr> {
    let word = match (max, exclusive) {
        (true, false) => "less than or equal to",
        (true, true) => "less than",
        (false, false) => "greater than or equal to",
        (false, true) => "greater than",
    };
    let (failed, bound_text, value_text) = match (n, native) {
        (Num::I(data), true) => {
            let b = bound as i64;
            let failed = match (max, exclusive) {
                (true, false) => data > b,
                (true, true) => data >= b,
                (false, false) => data < b,
                (false, true) => data <= b,
            };
            (failed, b.to_string(), data.to_string())
        }
        _ => {
            let data = n.as_f64();
            let failed = match (max, exclusive) {
                (true, false) => data > bound,
                (true, true) => data >= bound,
                (false, false) => data < bound,
                (false, true) => data <= bound,
            };
            (failed, go_float(bound), go_float(data))
        }
    };
    failed.then(|| OErr {
        name: name.to_string(),
        msg: format!("{name} in body should be {word} {bound_text}"),
        conv: Conv::Invalid(value_text),
    })
}

fn check_number(n: Num, s: &Value, ti: &TypeInfo<'_>, name: &str, out: &mut Collector) {
    let (type_name, format) = if ti.types.len() == 1 {
        match ti.types[0] {
            "integer" => ("integer", ti.format),
            "number" => ("number", ti.format),
            _ => ("", ""),
        }
    } else {
        ("", "")
    };
    if let Some(e) = range_error(n, type_name, format, "Checked", name) {
        out.plain(e);
    }
    let mut res_multiple = Collector::default();
    let mut res_min = Collector::default();
    let mut res_max = Collector::default();
    if let Some(factor) = float_kw(s, "multipleOf") {
        let err = range_error(Num::F(factor), type_name, format, "MultipleOf", name);
        let native = err.is_none();
        if let Some(e) = err {
            res_multiple.plain(e);
        }
        multiple_of(n, factor, native, name, &mut res_multiple);
    }
    if let Some(max) = float_kw(s, "maximum") {
        let err = range_error(Num::F(max), type_name, format, "Maximum boundary", name);
        let native = err.is_none();
        if let Some(e) = err {
            res_max.plain(e);
        }
        if let Some(e) = bound_check(n, max, flag(s, "exclusiveMaximum"), true, native, name) {
            res_max.add(e);
        }
    }
    if let Some(min) = float_kw(s, "minimum") {
        let err = range_error(Num::F(min), type_name, format, "Minimum boundary", name);
        let native = err.is_none();
        if let Some(e) = err {
            res_min.plain(e);
        }
        if let Some(e) = bound_check(n, min, flag(s, "exclusiveMinimum"), false, native, name) {
            res_min.add(e);
        }
    }
    out.merge(res_multiple);
    out.merge(res_min);
    out.merge(res_max);
}

fn check_array(a: &[Value], s: &Value, name: &str, old: Option<&Value>, out: &mut Collector) {
    if let Some(it) = items(s) {
        let old = old.and_then(Value::as_array);
        for (i, x) in a.iter().enumerate() {
            let old_item = old.and_then(|o| correlated_item(s, o, x, i));
            validate_node(x, it, &format!("{name}[{i}]"), old_item, out);
        }
    }
    let size = a.len() as i64;
    if let Some(min) = int_kw(s, "minItems")
        && size < min
    {
        out.invalid(
            name,
            format!("{name} in body should have at least {min} items"),
            size.to_string(),
        );
    }
    if let Some(max) = int_kw(s, "maxItems")
        && size > max
    {
        out.add(OErr {
            name: name.to_string(),
            msg: format!("{name} in body should have at most {max} items"),
            conv: Conv::TooMany(size, max),
        });
    }
    if flag(s, "uniqueItems") {
        let has_dup = a
            .iter()
            .enumerate()
            .any(|(i, x)| a[..i].iter().any(|y| json_eq(x, y)));
        if has_dup {
            out.invalid(
                name,
                format!("{name} in body shouldn't contain duplicates"),
                "\"\"".to_string(),
            );
        }
    }
}

/// The item of the stored list `old` that the item `x` at index `i` of the new list is
/// compared with under ratcheting: by the map keys in a `map` list, by index in a list without
/// a list type, none in sets and atomic lists.
fn correlated_item<'a>(s: &Value, old: &'a [Value], x: &Value, i: usize) -> Option<&'a Value> {
    match text(s, LIST_TYPE) {
        "map" => {
            let keys: Vec<&str> = sub_schemas(s, LIST_MAP_KEYS)
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if keys.is_empty() {
                return None;
            }
            old.iter().find(|o| {
                keys.iter().all(|k| match (o.get(k), x.get(k)) {
                    (Some(a), Some(b)) => json_eq(a, b),
                    (None, None) => true,
                    _ => false,
                })
            })
        }
        "set" | "atomic" => None,
        _ => old.get(i),
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| json_eq(p, q)))
        }
        _ => a == b,
    }
}

fn check_enum(v: &Value, s: &Value, name: &str, out: &mut Collector) {
    let values = sub_schemas(s, "enum");
    if values.is_empty() {
        return;
    }
    // Upstream never matches a null value against an enum (reflect on a nil interface).
    if !v.is_null() && values.iter().any(|e| json_eq(v, e)) {
        return;
    }
    let supported: Vec<String> = values
        .iter()
        .map(|e| match e {
            Value::String(s) => s.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect();
    out.add(OErr {
        name: name.to_string(),
        msg: format!("{name} in body should be one of [{}]", supported.join(" ")),
        conv: Conv::Enum(go_render(v), supported),
    });
}

fn check_object(
    m: &Map<String, Value>,
    s: &Value,
    name: &str,
    old: Option<&Value>,
    out: &mut Collector,
) {
    let old_field = |k: &str| old.and_then(|o| o.get(k));
    let n = m.len() as i64;
    if let Some(min) = int_kw(s, "minProperties")
        && n < min
    {
        out.invalid(
            name,
            format!("{name} in body should have at least {min} properties"),
            n.to_string(),
        );
    }
    if let Some(max) = int_kw(s, "maxProperties")
        && n > max
    {
        out.add(OErr {
            name: name.to_string(),
            msg: format!("{name} in body should have at most {max} properties"),
            conv: Conv::TooMany(n, max),
        });
    }
    match additional(s) {
        Additional::Bool(false) => {
            for k in m.keys() {
                if property(s, k).is_none() {
                    out.invalid(
                        name,
                        format!("{name}.{k} in body is a forbidden property"),
                        go_quote(k),
                    );
                }
            }
        }
        Additional::Schema(a) => {
            for (k, x) in m {
                if property(s, k).is_none() {
                    validate_node(x, a, &format!("{name}.{k}"), old_field(k), out);
                }
            }
        }
        _ => {}
    }
    if let Some(props) = properties(s) {
        for (p, ps) in props {
            if !ps.is_object() {
                continue;
            }
            if let Some(x) = m.get(p) {
                let rname = if name.is_empty() {
                    p.clone()
                } else {
                    format!("{name}.{p}")
                };
                validate_node(x, ps, &rname, old_field(p), out);
            }
        }
    }
    for r in sub_schemas(s, "required") {
        let Some(r) = r.as_str() else {
            continue;
        };
        if !m.contains_key(r) {
            let rname = format!("{name}.{r}");
            out.add(OErr {
                msg: format!("{rname} in body is required"),
                name: rname,
                conv: Conv::Required,
            });
        }
    }
}

/// Compiled `pattern`s by source, kept per server (on its registry), bounded.
#[derive(Default)]
pub struct PatternCache {
    entries: Mutex<HashMap<String, Result<Regex, String>>>,
}

impl std::fmt::Debug for PatternCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PatternCache")
    }
}

impl PatternCache {
    /// `pattern` (Go syntax) compiled, or upstream's error text; cached.
    pub fn compiled(&self, pattern: &str) -> Result<Regex, String> {
        let mut cache = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = cache.get(pattern) {
            return r.clone();
        }
        let r = compiled_pattern(pattern);
        if cache.len() >= 1024 {
            cache.clear();
        }
        cache.insert(pattern.to_string(), r.clone());
        r
    }
}

/// What the previous item inside a bracket class was (for Go's `-` rules).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClassItem {
    Start,
    Char,
    Range,
    ClassEscape,
}

/// Rewrites Go (RE2) regex syntax where Rust's `regex` differs: Go's `\d`, `\w`, `\s` (and
/// their negations) are ASCII-only while Rust's are Unicode-aware; inside brackets Go takes
/// `[`, `&`, `~` literally, and `-` literally after a range or a class escape.
fn go_regex_to_rust(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 8);
    let mut chars = p.chars().peekable();
    let mut in_class = false;
    let mut last = ClassItem::Start;
    let mut pending_range = false;
    // Records an item inside a class, completing a pending range.
    let item = |kind: ClassItem, last: &mut ClassItem, pending: &mut bool| {
        if *pending && kind == ClassItem::Char {
            *last = ClassItem::Range;
        } else {
            *last = kind;
        }
        *pending = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let (pos, neg) = match e {
                    'd' => ("0-9", false),
                    'D' => ("0-9", true),
                    'w' => ("0-9A-Za-z_", false),
                    'W' => ("0-9A-Za-z_", true),
                    's' => ("\\t\\n\\x0C\\r ", false),
                    'S' => ("\\t\\n\\x0C\\r ", true),
                    'p' | 'P' => {
                        out.push('\\');
                        out.push(e);
                        if chars.peek() == Some(&'{') {
                            for d in chars.by_ref() {
                                out.push(d);
                                if d == '}' {
                                    break;
                                }
                            }
                        } else if let Some(d) = chars.next() {
                            out.push(d);
                        }
                        item(ClassItem::ClassEscape, &mut last, &mut pending_range);
                        continue;
                    }
                    _ => {
                        out.push('\\');
                        out.push(e);
                        item(ClassItem::Char, &mut last, &mut pending_range);
                        continue;
                    }
                };
                if in_class && !neg {
                    out.push_str(pos);
                } else {
                    out.push('[');
                    if neg {
                        out.push('^');
                    }
                    out.push_str(pos);
                    out.push(']');
                }
                item(ClassItem::ClassEscape, &mut last, &mut pending_range);
            }
            '[' if !in_class => {
                in_class = true;
                last = ClassItem::Start;
                pending_range = false;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push_str("\\]");
                    chars.next();
                    last = ClassItem::Char;
                }
            }
            '[' if in_class => {
                // A POSIX class `[:alpha:]`, else a literal `[` (Go has no nested classes).
                if chars.peek() == Some(&':') {
                    out.push('[');
                    for d in chars.by_ref() {
                        out.push(d);
                        if d == ']' {
                            break;
                        }
                    }
                    item(ClassItem::ClassEscape, &mut last, &mut pending_range);
                } else {
                    out.push_str("\\[");
                    item(ClassItem::Char, &mut last, &mut pending_range);
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '-' if in_class => {
                if last == ClassItem::Char && !pending_range && chars.peek() != Some(&']') {
                    out.push('-');
                    pending_range = true;
                } else {
                    out.push_str("\\-");
                    item(ClassItem::Char, &mut last, &mut pending_range);
                }
            }
            '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
                item(ClassItem::Char, &mut last, &mut pending_range);
            }
            _ => {
                out.push(c);
                if in_class {
                    item(ClassItem::Char, &mut last, &mut pending_range);
                }
            }
        }
    }
    out
}

fn compiled_pattern(pattern: &str) -> Result<Regex, String> {
    Regex::new(&go_regex_to_rust(pattern)).map_err(|e| go_regex_error(pattern, &e.to_string()))
}

/// A Go-style `error parsing regexp: ...` message for a Rust regex compile error.
fn go_regex_error(pattern: &str, rust_error: &str) -> String {
    let detail = rust_error
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or(rust_error);
    let detail = detail.strip_prefix("error: ").unwrap_or(detail);
    let go = match detail {
        "unclosed group" => format!("missing closing ): `{pattern}`"),
        "unopened group" => format!("unexpected ): `{pattern}`"),
        "unclosed character class" => "missing closing ]".to_string(),
        "repetition operator missing expression" => {
            "missing argument to repetition operator".to_string()
        }
        other => other.to_string(),
    };
    format!("error parsing regexp: {go}")
}

// =============================================================================================
// Embedded resources (schema/objectmeta) and list types (schema/listtype)
// =============================================================================================

fn embedded_meta_pass(
    v: &Value,
    s: &Value,
    path: &str,
    force_embedded: bool,
    out: &mut Vec<Cause>,
) {
    match v {
        Value::Object(m) => {
            if force_embedded || flag(s, EMBEDDED) {
                validate_embedded_resource(m, path, out);
            }
            for (k, x) in m {
                if let Some(p) = property(s, k) {
                    embedded_meta_pass(x, p, &child(path, k), false, out);
                } else if let Some(a) = additional_schema(s) {
                    embedded_meta_pass(x, a, &key(path, k), false, out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(it) = items(s) {
                for (i, x) in a.iter().enumerate() {
                    embedded_meta_pass(x, it, &index(path, i), false, out);
                }
            }
        }
        _ => {}
    }
}

fn validate_embedded_resource(m: &Map<String, Value>, path: &str, out: &mut Vec<Cause>) {
    if !m.contains_key("apiVersion") {
        out.push(Cause::required(child(path, "apiVersion"), ""));
    }
    if !m.contains_key("kind") {
        out.push(Cause::required(child(path, "kind"), ""));
    }
    if let Some(v) = m.get("apiVersion") {
        let p = child(path, "apiVersion");
        match v {
            Value::String(s) if s.is_empty() => {
                out.push(invalid_rendered(&p, "\"\"", "must not be empty"));
            }
            Value::String(s) => {
                if let Err(e) = names::parse_group_version(s) {
                    out.push(invalid_rendered(&p, &go_quote(s), &e));
                }
            }
            other => out.push(names::invalid_value(&p, other, "must be a string")),
        }
    }
    if let Some(v) = m.get("kind") {
        let p = child(path, "kind");
        match v {
            Value::String(s) if s.is_empty() => {
                out.push(invalid_rendered(&p, "\"\"", "must not be empty"));
            }
            Value::String(s) => {
                let errs = names::dns1035_label(&s.to_lowercase());
                if !errs.is_empty() {
                    out.push(invalid_rendered(
                        &p,
                        &go_quote(s),
                        &format!(
                            "may have mixed case, but should otherwise match: {}",
                            errs.join(",")
                        ),
                    ));
                }
            }
            other => out.push(names::invalid_value(&p, other, "must be a string")),
        }
    }
    if let Some(v) = m.get("metadata") {
        let p = child(path, "metadata");
        match v {
            Value::Object(meta) => {
                let mut meta = meta.clone();
                let has_name = meta
                    .get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| !n.is_empty());
                if !has_name
                    && !meta
                        .get("name")
                        .is_some_and(|n| !n.is_string() && !n.is_null())
                {
                    meta.insert("name".into(), Value::String("fakename".into()));
                }
                let namespaced = meta
                    .get("namespace")
                    .and_then(Value::as_str)
                    .is_some_and(|n| !n.is_empty());
                out.extend(names::validate_object_meta(
                    &Value::Object(meta),
                    namespaced,
                    NameRule::PathSegment,
                    &p,
                ));
            }
            Value::Null => {}
            other => out.push(names::invalid_value(
                &p,
                other,
                &format!(
                    "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
                    match other {
                        Value::Bool(_) => "bool",
                        Value::Number(_) => "number",
                        Value::String(_) => "string",
                        _ => "array",
                    }
                ),
            )),
        }
    }
}

fn list_type_pass(v: &Value, s: &Value, path: &str, out: &mut Vec<Cause>) {
    match v {
        Value::Object(m) => {
            if let Some(a) = additional_schema(s) {
                for (k, x) in m {
                    list_type_pass(x, a, &key(path, k), out);
                }
            }
            if let Some(props) = properties(s) {
                for (k, x) in m {
                    if let Some(p) = props.get(k).filter(|p| p.is_object()) {
                        list_type_pass(x, p, &child(path, k), out);
                    }
                }
            }
        }
        Value::Array(a) => {
            match text(s, LIST_TYPE) {
                "set" => {
                    for i in non_unique_indices(a.iter().map(SetKey::of)) {
                        out.push(duplicate(&index(path, i), &go_render(&a[i])));
                    }
                }
                "map" => validate_list_map(a, s, path, out),
                _ => {}
            }
            if let Some(it) = items(s) {
                for (i, x) in a.iter().enumerate() {
                    list_type_pass(x, it, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

fn duplicate(field: &str, rendered: &str) -> Cause {
    Cause::new(
        "FieldValueDuplicate",
        field,
        format!("Duplicate value: {rendered}"),
    )
}

/// A hashable identity for list-set uniqueness: scalars by Go type and value, compounds by JSON.
#[derive(PartialEq, Eq, Hash)]
enum SetKey {
    Unspecified,
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(String),
    Compound(String),
}

impl SetKey {
    fn of(v: &Value) -> SetKey {
        match v {
            Value::Null => SetKey::Null,
            Value::Bool(b) => SetKey::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => SetKey::Int(i),
                None => SetKey::Float(n.as_f64().unwrap_or(0.0).to_bits()),
            },
            Value::String(s) => SetKey::Str(s.clone()),
            other => SetKey::Compound(serde_json::to_string(other).unwrap_or_default()),
        }
    }
}

/// Indices of the second occurrence of each repeated key (upstream `validateListSet`).
fn non_unique_indices(keys: impl Iterator<Item = SetKey>) -> Vec<usize> {
    let mut seen: HashMap<SetKey, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.enumerate() {
        let count = seen.entry(k).or_insert(0);
        *count += 1;
        if *count == 2 {
            out.push(i);
        }
    }
    out
}

fn validate_list_map(a: &[Value], s: &Value, path: &str, out: &mut Vec<Cause>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(names::invalid_value(
                &index(path, i),
                x,
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    let key_fields: Vec<&str> = sub_schemas(s, LIST_MAP_KEYS)
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if let [key_field] = key_fields.as_slice() {
        let keys: Vec<Option<&Value>> = a.iter().map(|x| x.get(*key_field)).collect();
        let set_keys = keys.iter().map(|k| match k {
            Some(v) => SetKey::of(v),
            None => SetKey::Unspecified,
        });
        for i in non_unique_indices(set_keys) {
            let rendered = match keys[i] {
                Some(v) => {
                    let mut m = Map::new();
                    m.insert((*key_field).to_string(), v.clone());
                    go_render(&Value::Object(m))
                }
                None => "{}".to_string(),
            };
            out.push(duplicate(&index(path, i), &rendered));
        }
        return;
    }
    let keys: Vec<Value> = a
        .iter()
        .map(|x| {
            let mut m = Map::new();
            for f in &key_fields {
                if let Some(v) = x.get(*f) {
                    m.insert((*f).to_string(), v.clone());
                }
            }
            Value::Object(m)
        })
        .collect();
    for i in non_unique_indices(keys.iter().map(SetKey::of)) {
        out.push(duplicate(&index(path, i), &go_render(&keys[i])));
    }
}

// =============================================================================================
// Structural-schema checks (CRD validation)
// =============================================================================================

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

fn is_int_or_string_pair(branches: &[Value]) -> bool {
    matches!(branches, [a, b]
        if *a == serde_json::json!({"type": "integer"}) && *b == serde_json::json!({"type": "string"}))
}

fn structural_invariants(s: &Value, lvl: Level, p: &str, out: &mut Vec<Cause>) {
    let ty = text(s, "type");
    let embedded = flag(s, EMBEDDED);
    let preserve = flag(s, PRESERVE);
    let int_or_string = flag(s, INT_OR_STRING);
    if ty == "array" && items(s).is_none() {
        out.push(Cause::required(child(p, "items"), "must be specified"));
    }
    if let Some(it) = items(s) {
        structural_invariants(it, Level::Item, &child(p, "items"), out);
    }
    if let Some(props) = properties(s) {
        for (k, v) in props {
            structural_invariants(v, Level::Field, &key(&child(p, "properties"), k), out);
        }
    }
    let addl = additional(s);
    if !matches!(addl, Additional::Absent) {
        if lvl == Level::Root {
            out.push(Cause::forbidden(
                child(p, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Additional::Schema(a) = addl {
            structural_invariants(a, Level::Field, &child(p, "additionalProperties"), out);
        }
    }
    if int_or_string && preserve {
        out.push(invalid_rendered(
            &child(p, PRESERVE),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        out.push(invalid_rendered(
            &child(p, EMBEDDED),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_pair(sub_schemas(s, "anyOf"));
    let skip_first_all_of_any_of = sub_schemas(s, "allOf")
        .first()
        .is_some_and(|first| is_int_or_string_pair(sub_schemas(first, "anyOf")));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, lvl, p, out);

    let check_metadata = lvl == Level::Root || embedded;
    if embedded && ty != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if ty.is_empty() {
            out.push(Cause::required(child(p, "type"), msg));
        } else {
            out.push(invalid_rendered(&child(p, "type"), &go_quote(ty), msg));
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(Cause::required(child(p, "type"), msg));
    }
    if embedded && !matches!(addl, Additional::Absent) {
        out.push(Cause::forbidden(
            child(p, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        out.push(invalid_rendered(
            &child(p, "type"),
            &go_quote(ty),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for field in ["kind", "apiVersion"] {
            if let Some(fs) = property(s, field) {
                let fty = text(fs, "type");
                if fty != "string" {
                    out.push(invalid_rendered(
                        &child(&key(&child(p, "properties"), field), "type"),
                        &go_quote(fty),
                        "must be string",
                    ));
                }
            }
        }
    }
    if let Some(md) = property(s, "metadata") {
        metadata_invariants(
            md,
            check_metadata,
            lvl,
            &key(&child(p, "properties"), "metadata"),
            out,
        );
    }
    if embedded && !preserve && properties(s).is_none_or(Map::is_empty) {
        out.push(Cause::required(
            child(p, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Number(_) => false,
    }
}

fn metadata_invariants(md: &Value, check: bool, lvl: Level, p: &str, out: &mut Vec<Cause>) {
    let ty = text(md, "type");
    if check && ty != "object" {
        out.push(invalid_rendered(
            &child(p, "type"),
            &go_quote(ty),
            "must be object",
        ));
    }
    if lvl != Level::Root {
        return;
    }
    let Some(m) = md.as_object() else {
        return;
    };
    let allowed = m.iter().all(|(k, v)| match k.as_str() {
        "type" | "default" => true,
        "properties" => v.as_object().is_some_and(|props| {
            props.is_empty() || props.keys().all(|k| k == "name" || k == "generateName")
        }),
        _ => is_zero(v),
    });
    if !allowed {
        out.push(Cause::forbidden(
            p,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

fn value_validation(
    s: &Value,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    p: &str,
    out: &mut Vec<Cause>,
) {
    if !skip_any_of {
        for (i, b) in sub_schemas(s, "anyOf").iter().enumerate() {
            nested_value_validation(b, false, false, lvl, &index(&child(p, "anyOf"), i), out);
        }
    }
    for (i, b) in sub_schemas(s, "allOf").iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested_value_validation(b, skip, false, lvl, &index(&child(p, "allOf"), i), out);
    }
    for (i, b) in sub_schemas(s, "oneOf").iter().enumerate() {
        nested_value_validation(b, false, false, lvl, &index(&child(p, "oneOf"), i), out);
    }
    if let Some(not) = s.get("not").filter(|n| n.is_object()) {
        nested_value_validation(not, false, false, lvl, &child(p, "not"), out);
    }
    let pattern = text(s, "pattern");
    if !pattern.is_empty()
        && let Err(e) = compiled_pattern(pattern)
    {
        out.push(invalid_rendered(
            &child(p, "pattern"),
            &go_quote(pattern),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

fn nested_value_validation(
    v: &Value,
    skip_any_of: bool,
    skip_all_of_any_of: bool,
    lvl: Level,
    p: &str,
    out: &mut Vec<Cause>,
) {
    value_validation(v, skip_any_of, skip_all_of_any_of, lvl, p, out);
    if let Some(it) = items(v) {
        nested_value_validation(it, false, false, lvl, &child(p, "items"), out);
    }
    if let Some(props) = properties(v) {
        for (k, f) in props {
            nested_value_validation(
                f,
                false,
                false,
                Level::Field,
                &key(&child(p, "properties"), k),
                out,
            );
        }
    }
    let forbid = |out: &mut Vec<Cause>, field: &str, detail: &str| {
        out.push(Cause::forbidden(child(p, field), detail));
    };
    if !matches!(additional(v), Additional::Absent) {
        forbid(
            out,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if !text(v, "type").is_empty() {
        forbid(out, "type", "must be empty to be structural");
    }
    if default_of(v).is_some() {
        forbid(out, "default", "must be undefined to be structural");
    }
    if !text(v, "title").is_empty() {
        forbid(out, "title", "must be empty to be structural");
    }
    if !text(v, "description").is_empty() {
        forbid(out, "description", "must be empty to be structural");
    }
    if flag(v, "nullable") {
        forbid(out, "nullable", "must be false to be structural");
    }
    if flag(v, PRESERVE) {
        forbid(out, PRESERVE, "must be false to be structural");
    }
    if flag(v, EMBEDDED) {
        forbid(out, EMBEDDED, "must be false to be structural");
    }
    if flag(v, INT_OR_STRING) {
        forbid(out, INT_OR_STRING, "must be false to be structural");
    }
    if !sub_schemas(v, LIST_MAP_KEYS).is_empty() {
        forbid(out, LIST_MAP_KEYS, "must be empty to be structural");
    }
    if v.get(LIST_TYPE).is_some_and(|x| !x.is_null()) {
        forbid(out, LIST_TYPE, "must be undefined to be structural");
    }
    if v.get(MAP_TYPE).is_some_and(|x| !x.is_null()) {
        forbid(out, MAP_TYPE, "must be undefined to be structural");
    }
    if !sub_schemas(v, VALIDATIONS).is_empty() {
        forbid(out, VALIDATIONS, "must be empty to be structural");
    }
    if property(v, "metadata").is_some() {
        out.push(Cause::forbidden(
            key(&child(p, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateValueValidationCompleteness` (upstream only inspects the root's junctors).
fn value_validation_completeness(v: &Value, s: &Value, sp: &str, vp: &str, out: &mut Vec<Cause>) {
    if let Some(not) = v.get("not").filter(|n| n.is_object()) {
        nested_completeness(not, Some(s), sp, &child(vp, "not"), out);
    }
    for junctor in ["allOf", "anyOf", "oneOf"] {
        for (i, b) in sub_schemas(v, junctor).iter().enumerate() {
            nested_completeness(b, Some(s), sp, &index(&child(vp, junctor), i), out);
        }
    }
}

fn nested_completeness(v: &Value, s: Option<&Value>, sp: &str, vp: &str, out: &mut Vec<Cause>) {
    let Some(s) = s else {
        out.push(Cause::required(
            sp,
            &format!("because it is defined in {vp}"),
        ));
        return;
    };
    value_validation_completeness(v, s, sp, vp, out);
    if let Some(vi) = items(v) {
        nested_completeness(vi, items(s), &child(sp, "items"), &child(vp, "items"), out);
    }
    if let Some(props) = properties(v) {
        for (k, vf) in props {
            let sk = key(&child(sp, "properties"), k);
            let vk = key(&child(vp, "properties"), k);
            match property(s, k) {
                Some(sf) => nested_completeness(vf, Some(sf), &sk, &vk, out),
                None => out.push(Cause::required(
                    sk,
                    &format!("because it is defined in {vk}"),
                )),
            }
        }
    }
}

/// `structuraldefaulting.ValidateDefaults`: defaults must be pruned and valid.
fn defaults_rec(s: &Value, p: &str, is_root: bool, inside_meta: bool, out: &mut Vec<Cause>) {
    let embedded = is_root || flag(s, EMBEDDED);
    let inside_meta = inside_meta && !flag(s, EMBEDDED);
    if let Some(d) = default_of(s) {
        // Defaults inside metadata are validated upstream against a synthesized object; they
        // are only allowed in embedded resources and are not checked here.
        if !inside_meta {
            let dp = child(p, "default");
            let mut pruned = d.clone();
            let mut ignored = Vec::new();
            prune_rec(&mut pruned, Some(s), embedded, "", &mut ignored);
            if pruned != *d {
                out.push(invalid_rendered(
                    &dp,
                    &go_render(d),
                    "must not have unknown fields",
                ));
            }
            let mut meta_errs = Vec::new();
            embedded_meta_pass(d, s, &dp, embedded, &mut meta_errs);
            if meta_errs.is_empty() {
                out.extend(openapi_validate(d, s, &dp, None));
            } else {
                out.extend(meta_errs);
            }
        }
    }
    if let Some(it) = items(s) {
        defaults_rec(it, &child(p, "items"), false, inside_meta, out);
    }
    if let Some(props) = properties(s) {
        for (k, ps) in props {
            let sub_inside = inside_meta || (embedded && META_FIELDS.contains(&k.as_str()));
            defaults_rec(ps, &key(&child(p, "properties"), k), false, sub_inside, out);
        }
    }
}

/// The `specStandardValidator` state of upstream's OpenAPI schema walk.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    defaults_reason: String,
    inside_meta: bool,
}

impl Ssv {
    fn forbid_defaults(&self, reason: &str) -> Ssv {
        Ssv {
            allow_defaults: false,
            defaults_reason: reason.to_string(),
            inside_meta: self.inside_meta,
        }
    }
}

fn quoted_list(values: &[&str]) -> Vec<Value> {
    values
        .iter()
        .map(|v| Value::String((*v).to_string()))
        .collect()
}

fn not_supported(field: &str, value: &str, supported: &[&str]) -> Cause {
    Cause::new(
        "FieldValueNotSupported",
        field,
        format!(
            "Unsupported value: {}: supported values: {}",
            go_quote(value),
            supported
                .iter()
                .map(|v| go_quote(v))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
}

fn ssv_rec(s: &Value, p: &str, ssv: &Ssv, is_root: bool, out: &mut Vec<Cause>) {
    let ty = text(s, "type");
    if !ty.is_empty() && !OPENAPI_V3_TYPES.contains(&ty) {
        out.push(not_supported(&child(p, "type"), ty, &OPENAPI_V3_TYPES));
    }
    if s.get("default").is_some() && !ssv.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ssv.defaults_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ssv.defaults_reason);
        }
        out.push(Cause::forbidden(child(p, "default"), &detail));
    }
    if !text(s, "id").is_empty() {
        out.push(Cause::forbidden(child(p, "id"), "id is not supported"));
    }
    if s.get("additionalItems").is_some() {
        out.push(Cause::forbidden(
            child(p, "additionalItems"),
            "additionalItems is not supported",
        ));
    }
    for (k, what) in [
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
    ] {
        if s.get(k)
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty())
        {
            out.push(Cause::forbidden(child(p, k), what));
        }
    }
    if s.get("dependencies").is_some_and(|d| !d.is_null()) {
        out.push(Cause::forbidden(
            child(p, "dependencies"),
            "dependencies is not supported",
        ));
    }
    if s.get("$ref").is_some_and(|r| !r.is_null()) {
        out.push(Cause::forbidden(child(p, "$ref"), "$ref is not supported"));
    }
    if ty == "null" {
        out.push(Cause::forbidden(
            child(p, "type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    let items_array = s.get("items").and_then(Value::as_array);
    if items_array.is_some_and(|a| !a.is_empty()) {
        out.push(Cause::forbidden(
            child(p, "items"),
            "items must be a schema object and not an array",
        ));
    }
    if ssv.inside_meta && flag(s, EMBEDDED) {
        out.push(Cause::forbidden(
            child(p, EMBEDDED),
            "must not be used inside of resource meta",
        ));
    }

    if flag(s, "uniqueItems") {
        out.push(Cause::forbidden(
            child(p, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let addl = additional(s);
    if !matches!(addl, Additional::Absent) {
        let has_props = properties(s).is_some_and(|m| !m.is_empty());
        if has_props && !matches!(addl, Additional::Bool(true)) {
            out.push(Cause::forbidden(
                child(p, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Additional::Schema(a) = addl {
            let sub = if ssv.inside_meta {
                ssv.forbid_defaults("inside additionalProperties applying to object metadata")
            } else {
                ssv.clone()
            };
            ssv_rec(a, &child(p, "additionalProperties"), &sub, false, out);
        }
    }
    if let Some(props) = properties(s) {
        for (k, ps) in props {
            let mut sub = ssv.clone();
            if (is_root || flag(s, EMBEDDED)) && META_FIELDS.contains(&k.as_str()) {
                sub.inside_meta = true;
                if is_root {
                    sub = sub.forbid_defaults(&format!("in top-level {k}"));
                }
            }
            ssv_rec(ps, &key(&child(p, "properties"), k), &sub, false, out);
        }
    }
    if let Some(not) = s.get("not").filter(|n| n.is_object()) {
        ssv_rec(not, &child(p, "not"), ssv, false, out);
    }
    for junctor in ["allOf", "oneOf", "anyOf"] {
        for (i, b) in sub_schemas(s, junctor).iter().enumerate() {
            ssv_rec(b, &index(&child(p, junctor), i), ssv, false, out);
        }
    }
    if let Some(it) = items(s) {
        ssv_rec(it, &child(p, "items"), ssv, false, out);
    }
    if let Some(a) = items_array {
        for (i, it) in a.iter().enumerate() {
            ssv_rec(it, &index(&child(p, "items"), i), ssv, false, out);
        }
    }

    if s.get(PRESERVE) == Some(&Value::Bool(false)) {
        out.push(invalid_rendered(
            &child(p, PRESERVE),
            "false",
            "must be true or undefined",
        ));
    }
    let map_type = s.get(MAP_TYPE).and_then(Value::as_str);
    if let Some(mt) = map_type {
        if ty != "object" {
            let msg = "must be object if x-kubernetes-map-type is specified";
            if ty.is_empty() {
                out.push(Cause::required(child(p, "type"), msg));
            } else {
                out.push(invalid_rendered(&child(p, "type"), &go_quote(ty), msg));
            }
        }
        if mt != "atomic" && mt != "granular" {
            out.push(not_supported(
                &child(p, MAP_TYPE),
                mt,
                &["atomic", "granular"],
            ));
        }
    }
    let list_type = s.get(LIST_TYPE).and_then(Value::as_str);
    let item_schema = items(s);
    if let Some(lt) = list_type {
        if ty != "array" {
            let msg = "must be array if x-kubernetes-list-type is specified";
            if ty.is_empty() {
                out.push(Cause::required(child(p, "type"), msg));
            } else {
                out.push(invalid_rendered(&child(p, "type"), &go_quote(ty), msg));
            }
        } else if lt == "set"
            && let Some(is) = item_schema
        {
            let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
            match text(is, "type") {
                "array" => {
                    if let Some(ilt) = is.get(LIST_TYPE).and_then(Value::as_str)
                        && ilt != "atomic"
                    {
                        out.push(invalid_rendered(
                            &child(&child(p, "items"), LIST_TYPE),
                            &go_quote(ilt),
                            msg,
                        ));
                    }
                }
                "object" if is.get(MAP_TYPE).and_then(Value::as_str) != Some("atomic") => {
                    // Upstream renders the items' list type here (usually unset: null).
                    let rendered = is
                        .get(LIST_TYPE)
                        .and_then(Value::as_str)
                        .map_or_else(|| "null".to_string(), go_quote);
                    out.push(invalid_rendered(
                        &child(&child(p, "items"), MAP_TYPE),
                        &rendered,
                        msg,
                    ));
                }
                _ => {}
            }
        }
        if !["atomic", "set", "map"].contains(&lt) {
            out.push(not_supported(
                &child(p, LIST_TYPE),
                lt,
                &["atomic", "set", "map"],
            ));
        }
    }
    let map_keys: Vec<&str> = sub_schemas(s, LIST_MAP_KEYS)
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if !map_keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => out.push(Cause::required(child(p, LIST_TYPE), msg)),
            Some(lt) if lt != "map" => {
                out.push(invalid_rendered(&child(p, LIST_TYPE), &go_quote(lt), msg));
            }
            _ => {}
        }
    }
    if list_type == Some("map") {
        if map_keys.is_empty() {
            out.push(Cause::required(
                child(p, LIST_MAP_KEYS),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        if s.get("items").is_none() {
            out.push(Cause::required(
                child(p, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            ));
        }
        if let Some(a) = items_array {
            out.push(invalid_rendered(
                &child(p, "items"),
                &go_render(&Value::Array(a.clone())),
                "must only have a single schema if x-kubernetes-list-type is map",
            ));
        }
        if let Some(is) = item_schema {
            let ity = text(is, "type");
            if ity != "object" {
                out.push(invalid_rendered(
                    &child(&child(p, "items"), "type"),
                    &go_quote(ity),
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            } else {
                let rendered_keys = go_render(&Value::Array(quoted_list(&map_keys)));
                let mut seen = HashSet::new();
                for k in &map_keys {
                    match property(is, k) {
                        Some(ks) => {
                            let kt = text(ks, "type");
                            if kt == "array" || kt == "object" {
                                out.push(invalid_rendered(
                                    &child(&key(&child(&child(p, "items"), "properties"), k), "type"),
                                    &go_quote(ity),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => out.push(invalid_rendered(
                            &child(p, LIST_MAP_KEYS),
                            &rendered_keys,
                            "entries must all be names of item properties",
                        )),
                    }
                    if !seen.insert(*k) {
                        out.push(invalid_rendered(
                            &child(p, LIST_MAP_KEYS),
                            &rendered_keys,
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
    // validateMapListKeysMapSet
    if let (Some(is), Some(lt @ ("set" | "map"))) = (item_schema, list_type) {
        if flag(is, "nullable") {
            out.push(Cause::forbidden(
                child(&child(p, "items"), "nullable"),
                &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
            ));
        }
        if lt == "map" {
            let required: Vec<&str> = sub_schemas(is, "required")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            for k in &map_keys {
                let Some(ks) = property(is, k) else {
                    continue;
                };
                let kp = key(&child(&child(p, "items"), "properties"), k);
                if !required.contains(k) && ks.get("default").is_none() {
                    out.push(Cause::required(
                        child(&kp, "default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if flag(ks, "nullable") {
                    out.push(Cause::forbidden(
                        child(&kp, "nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
    for (i, rule) in sub_schemas(s, VALIDATIONS).iter().enumerate() {
        let rp = index(&child(p, VALIDATIONS), i);
        let r = text(rule, "rule");
        let msg = text(rule, "message");
        let msg_expr = text(rule, "messageExpression");
        let has_newline = |t: &str| t.contains('\n') || t.contains('\r');
        if r.trim().is_empty() {
            out.push(Cause::required(child(&rp, "rule"), "rule is not specified"));
        } else if !msg.is_empty() && msg.trim().is_empty() {
            out.push(invalid_rendered(
                &child(&rp, "message"),
                &go_quote(msg),
                "must be non-empty if specified",
            ));
        } else if has_newline(msg.trim()) {
            out.push(invalid_rendered(
                &child(&rp, "message"),
                &go_quote(msg),
                "must not contain line breaks",
            ));
        } else if has_newline(r.trim()) && msg.trim().is_empty() {
            out.push(Cause::required(
                child(&rp, "message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            out.push(Cause::required(
                child(&rp, "messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str) {
            let supported = [
                "FieldValueDuplicate",
                "FieldValueForbidden",
                "FieldValueInvalid",
                "FieldValueRequired",
            ];
            if !supported.contains(&reason) {
                out.push(not_supported(&child(&rp, "reason"), reason, &supported));
            }
        }
    }
}

// =============================================================================================
// String formats (kube-openapi strfmt default registry)
// =============================================================================================

pub(crate) mod formats {
    use std::net::Ipv6Addr;
    use std::sync::LazyLock;

    use regex::Regex;

    use super::super::names;

    fn rx(re: &'static LazyLock<Option<Regex>>, s: &str) -> bool {
        re.as_ref().is_some_and(|r| r.is_match(s))
    }

    macro_rules! regex {
        ($name:ident, $re:expr) => {
            static $name: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new($re).ok());
        };
    }

    regex!(
        HOSTNAME,
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
    );
    regex!(
        UUID,
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
    );
    regex!(
        UUID3,
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
    );
    regex!(
        UUID4,
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
    );
    regex!(
        UUID5,
        r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
    );
    regex!(
        CREDIT_CARD,
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$"
    );
    regex!(ISBN10, r"^(?:[0-9]{9}X|[0-9]{10})$");
    regex!(ISBN13, r"^(?:[0-9]{13})$");
    regex!(HEXCOLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
    regex!(
        RGBCOLOR,
        r"^rgb\([\t\n\f\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\f\r ]*,[\t\n\f\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\f\r ]*,[\t\n\f\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\f\r ]*\)$"
    );
    regex!(
        BASE64,
        r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
    );
    regex!(SSN, r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$");
    regex!(
        DATE_TIME,
        r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
    );
    regex!(DURATION_PART, r"([0-9]+)[\t\n\f\r ]*([A-Za-zµ]+)");

    /// Whether `s` is valid for the (dash-less) format name `format`.
    pub(super) fn valid(format: &str, s: &str) -> bool {
        match format {
            "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            "uri" => is_request_uri(s),
            "email" => is_email(s),
            "hostname" => is_hostname(s),
            "ipv4" => parse_ip_sloppy(s) && s.contains('.'),
            "ipv6" => s.contains(':') && s.parse::<Ipv6Addr>().is_ok(),
            "cidr" => is_cidr(s),
            "mac" => is_mac(s),
            "uuid" => rx(&UUID, s),
            "uuid3" => rx(&UUID3, s),
            "uuid4" => rx(&UUID4, s),
            "uuid5" => rx(&UUID5, s),
            "isbn" => is_isbn10(s) || is_isbn13(s),
            "isbn10" => is_isbn10(s),
            "isbn13" => is_isbn13(s),
            "creditcard" => is_credit_card(s),
            "ssn" => s.len() == 11 && rx(&SSN, s),
            "hexcolor" => rx(&HEXCOLOR, s),
            "rgbcolor" => rx(&RGBCOLOR, s),
            "byte" => rx(&BASE64, s),
            "date" => is_date(s),
            "datetime" => is_date_time(s),
            "duration" => is_duration(s),
            "k8sshortname" => names::dns1123_label(s).is_empty(),
            "k8slongname" => names::dns1123_subdomain(s).is_empty(),
            _ => true,
        }
    }

    fn is_hostname(s: &str) -> bool {
        rx(&HOSTNAME, s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
    }

    /// Go's pre-1.17 `parseIPv4` (leading zeros allowed), as `netutils.ParseIPSloppy`.
    fn parse_ipv4_sloppy(s: &str) -> bool {
        let parts: Vec<&str> = s.split('.').collect();
        parts.len() == 4
            && parts.iter().all(|p| {
                !p.is_empty()
                    && p.len() <= 8
                    && p.bytes().all(|b| b.is_ascii_digit())
                    && p.parse::<u32>().is_ok_and(|n| n <= 255)
            })
    }

    fn parse_ip_sloppy(s: &str) -> bool {
        for b in s.bytes() {
            match b {
                b'.' => return parse_ipv4_sloppy(s),
                b':' => return s.parse::<Ipv6Addr>().is_ok(),
                _ => {}
            }
        }
        false
    }

    fn is_cidr(s: &str) -> bool {
        let Some((addr, mask)) = s.split_once('/') else {
            return false;
        };
        let bits = if addr.contains(':') {
            if addr.parse::<Ipv6Addr>().is_err() {
                return false;
            }
            128
        } else {
            if !parse_ipv4_sloppy(addr) {
                return false;
            }
            32
        };
        !mask.is_empty()
            && mask.len() <= 8
            && mask.bytes().all(|b| b.is_ascii_digit())
            && mask.parse::<u32>().is_ok_and(|n| n <= bits)
    }

    /// Go's `net.ParseMAC`: 6, 8 or 20 octets, `:`/`-` separated pairs or `.` separated quads.
    fn is_mac(s: &str) -> bool {
        let b = s.as_bytes();
        if b.len() < 14 {
            return false;
        }
        let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|c| c.is_ascii_hexdigit());
        if b[2] == b':' || b[2] == b'-' {
            let sep = char::from(b[2]);
            let parts: Vec<&str> = s.split(sep).collect();
            [6, 8, 20].contains(&parts.len()) && parts.iter().all(|p| hex(p, 2))
        } else if b[4] == b'.' {
            let parts: Vec<&str> = s.split('.').collect();
            [6, 8, 20].contains(&(parts.len() * 2)) && parts.iter().all(|p| hex(p, 4))
        } else {
            false
        }
    }

    fn is_credit_card(s: &str) -> bool {
        let digits: String = s.chars().filter(char::is_ascii_digit).collect();
        if !rx(&CREDIT_CARD, &digits) {
            return false;
        }
        let mut sum = 0u32;
        let mut double = false;
        for c in digits.bytes().rev() {
            let mut d = u32::from(c - b'0');
            if double {
                d *= 2;
                if d >= 10 {
                    d = d % 10 + 1;
                }
            }
            sum += d;
            double = !double;
        }
        sum.is_multiple_of(10)
    }

    fn isbn_sanitized(s: &str) -> String {
        s.chars()
            .filter(|c| !matches!(c, '\t' | '\n' | '\u{c}' | '\r' | ' ' | '-'))
            .collect()
    }

    fn is_isbn10(s: &str) -> bool {
        let s = isbn_sanitized(s);
        if !rx(&ISBN10, &s) {
            return false;
        }
        let b = s.as_bytes();
        let mut sum = 0u32;
        for (i, c) in b.iter().take(9).enumerate() {
            sum += (i as u32 + 1) * u32::from(c - b'0');
        }
        sum += if b[9] == b'X' {
            100
        } else {
            10 * u32::from(b[9] - b'0')
        };
        sum.is_multiple_of(11)
    }

    fn is_isbn13(s: &str) -> bool {
        let s = isbn_sanitized(s);
        if !rx(&ISBN13, &s) {
            return false;
        }
        let b = s.as_bytes();
        let mut sum = 0u32;
        for (i, c) in b.iter().take(12).enumerate() {
            let factor = if i % 2 == 0 { 1 } else { 3 };
            sum += factor * u32::from(c - b'0');
        }
        u32::from(b[12] - b'0') == (10 - sum % 10) % 10
    }

    /// Go's `time.Parse("2006-01-02", s)`.
    pub(super) fn is_date(s: &str) -> bool {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return false;
        }
        let num = |r: std::ops::Range<usize>| -> Option<i16> {
            let part = s.get(r)?;
            if !part.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            part.parse().ok()
        };
        match (num(0..4), num(5..7), num(8..10)) {
            (Some(y), Some(m), Some(d)) => match (i8::try_from(m), i8::try_from(d)) {
                (Ok(m), Ok(d)) => jiff::civil::Date::new(y, m, d).is_ok(),
                _ => false,
            },
            _ => false,
        }
    }

    /// kube-openapi's `IsDateTime`.
    fn is_date_time(s: &str) -> bool {
        if s.len() < 4 {
            return false;
        }
        let lower = s.to_lowercase();
        let parts: Vec<&str> = lower.split('t').collect();
        if parts.len() < 2 || !is_date(parts[0]) {
            return false;
        }
        let Some(re) = DATE_TIME.as_ref() else {
            return false;
        };
        let Some(caps) = re.captures(parts[1]) else {
            return false;
        };
        let get = |i: usize| caps.get(i).map_or("", |m| m.as_str());
        get(1) <= "23" && get(2) <= "59" && get(3) <= "59"
    }

    /// kube-openapi's `IsDuration`: Go durations, or `<n> <unit>` pairs such as `3 days`.
    fn is_duration(s: &str) -> bool {
        parse_duration(s).is_some()
    }

    /// The duration a `duration`-formatted string stands for, in nanoseconds, as strfmt's
    /// `ParseDuration` reads it: a Go duration, else the sum of its `<n> <unit>` pairs
    /// (`3 days`, `1 week 2d`); `None` when it is neither.
    pub(crate) fn parse_duration(s: &str) -> Option<i64> {
        if let Ok(nanos) = crate::go_duration::parse(s) {
            return Some(nanos);
        }
        let re = DURATION_PART.as_ref()?;
        const UNITS: [(&[&str], i64); 8] = [
            (&["ns", "nano"], 1),
            (&["us", "\u{b5}s", "micro"], 1_000),
            (&["ms", "milli"], 1_000_000),
            (&["s", "sec"], 1_000_000_000),
            (&["m", "min"], 60_000_000_000),
            (&["h", "hr", "hour"], 3_600_000_000_000),
            (&["d", "day"], 86_400_000_000_000),
            (&["w", "wk", "week"], 604_800_000_000_000),
        ];
        let mut found = false;
        let mut total: i64 = 0;
        for caps in re.captures_iter(s) {
            let factor: i64 = caps.get(1).map_or("", |m| m.as_str()).parse().ok()?;
            let unit = caps.get(2).map_or("", |m| m.as_str()).trim().to_lowercase();
            for (variants, nanos) in UNITS {
                let last = variants.len() - 1;
                for (i, variant) in variants.iter().enumerate() {
                    if (i == last && unit.starts_with(variant))
                        || unit.eq_ignore_ascii_case(variant)
                    {
                        found = true;
                        total = total.wrapping_add(factor.wrapping_mul(nanos));
                    }
                }
            }
        }
        found.then_some(total)
    }

    fn is_atext(c: char) -> bool {
        c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii()
    }

    fn is_dot_atom(s: &str) -> bool {
        !s.is_empty()
            && s.split('.')
                .all(|a| !a.is_empty() && a.chars().all(is_atext))
    }

    fn is_quoted_string(s: &str) -> bool {
        let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
            return false;
        };
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                // A backslash escapes the next character, which must exist.
                '\\' if chars.next().is_none() => return false,
                '\\' => {}
                '"' => return false,
                c if c.is_control() && c != '\t' => return false,
                _ => {}
            }
        }
        true
    }

    fn is_addr_spec(s: &str) -> bool {
        let Some((local, domain)) = s.rsplit_once('@') else {
            return false;
        };
        let local_ok = is_dot_atom(local) || is_quoted_string(local);
        let domain_ok = is_dot_atom(domain)
            || (domain.starts_with('[')
                && domain.ends_with(']')
                && domain.len() >= 2
                && !domain[1..domain.len() - 1].contains(['[', ']', '\\']));
        local_ok && domain_ok
    }

    /// An approximation of Go's `net/mail.ParseAddress` (`a@b.c` or `Name <a@b.c>`).
    fn is_email(s: &str) -> bool {
        let s = s.trim_matches([' ', '\t', '\r', '\n']);
        if let Some(inner) = s.strip_suffix('>') {
            let Some(open) = inner.rfind('<') else {
                return false;
            };
            let display = inner[..open].trim();
            let display_ok = display.is_empty()
                || is_quoted_string(display)
                || display
                    .split([' ', '\t'])
                    .filter(|w| !w.is_empty())
                    .all(|w| w.chars().all(|c| is_atext(c) || c == '.'));
            return display_ok && is_addr_spec(inner[open + 1..].trim());
        }
        is_addr_spec(s)
    }

    fn host_char_ok(c: u8) -> bool {
        c.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]<>\"%".contains(&c)
    }

    fn valid_escapes(s: &str) -> bool {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' {
                match (b.get(i + 1), b.get(i + 2)) {
                    (Some(x), Some(y)) if x.is_ascii_hexdigit() && y.is_ascii_hexdigit() => {
                        i += 3;
                        continue;
                    }
                    _ => return false,
                }
            }
            i += 1;
        }
        true
    }

    /// An approximation of Go's `url.ParseRequestURI`.
    fn is_request_uri(s: &str) -> bool {
        if s.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return false;
        }
        // Scheme detection as Go's getScheme.
        let mut scheme_end = None;
        for (i, c) in s.char_indices() {
            match c {
                'a'..='z' | 'A'..='Z' => {}
                '0'..='9' | '+' | '-' | '.' if i > 0 => {}
                ':' => {
                    if i == 0 {
                        return false;
                    }
                    scheme_end = Some(i);
                    break;
                }
                _ => break,
            }
        }
        let rest = match scheme_end {
            Some(i) => &s[i + 1..],
            None => s,
        };
        let has_scheme = scheme_end.is_some();
        if !rest.starts_with('/') {
            // Rootless paths with a scheme are opaque; without a scheme they are rejected.
            return has_scheme;
        }
        let rest = rest.split_once('?').map_or(rest, |(p, _)| p);
        let path = if has_scheme && rest.starts_with("//") {
            let after = &rest[2..];
            let (authority, path) = match after.find('/') {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, ""),
            };
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            if !host_ok(host) {
                return false;
            }
            path
        } else {
            rest
        };
        valid_escapes(path)
    }

    fn host_ok(host: &str) -> bool {
        if let Some(rest) = host.strip_prefix('[') {
            let Some((ip, port)) = rest.split_once(']') else {
                return false;
            };
            let ip = ip.split_once("%25").map_or(ip, |(a, _)| a);
            return ip.parse::<Ipv6Addr>().is_ok()
                && (port.is_empty()
                    || port
                        .strip_prefix(':')
                        .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit())));
        }
        let (name, port) = match host.rfind(':') {
            Some(i) => (&host[..i], Some(&host[i + 1..])),
            None => (host, None),
        };
        if port.is_some_and(|p| !p.bytes().all(|b| b.is_ascii_digit())) {
            return false;
        }
        valid_escapes(name) && name.bytes().all(|b| b >= 0x80 || host_char_ok(b))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn regexes_compile() {
            for re in [
                &HOSTNAME,
                &UUID,
                &UUID3,
                &UUID4,
                &UUID5,
                &CREDIT_CARD,
                &ISBN10,
                &ISBN13,
                &HEXCOLOR,
                &RGBCOLOR,
                &BASE64,
                &SSN,
                &DATE_TIME,
                &DURATION_PART,
            ] {
                assert!(re.is_some());
            }
        }

        #[test]
        fn formats() {
            let cases: &[(&str, &str, bool)] = &[
                ("datetime", "2026-11-22T00:41:43Z", true),
                ("datetime", "2026-11-22T00:41:43.123+02:00", true),
                ("datetime", "2026-11-22t00:41:43z", true),
                ("datetime", "2026-11-22T24:00:00Z", false),
                ("datetime", "2026-11-22", false),
                ("datetime", "2026-02-30T00:00:00Z", false),
                ("date", "2024-02-29", true),
                ("date", "2023-02-29", false),
                ("date", "2023-2-01", false),
                ("byte", "aGVsbG8=", true),
                ("byte", "aGVsbG8", false),
                ("byte", "", false),
                ("uuid", "5d2d585c-a3d3-4e9d-88fc-20f85c6a6434", true),
                ("uuid", "5D2D585CA3D34E9D88FC20F85C6A6434", true),
                ("uuid", "not-a-uuid", false),
                ("uuid4", "5d2d585c-a3d3-4e9d-88fc-20f85c6a6434", true),
                ("uuid3", "5d2d585c-a3d3-4e9d-88fc-20f85c6a6434", false),
                ("email", "a@example.com", true),
                ("email", "John Doe <john.doe@example.com>", true),
                ("email", "not an email", false),
                ("email", "a@", false),
                ("hostname", "example.com", true),
                ("hostname", "localhost", true),
                ("hostname", "-bad-.com", false),
                ("hostname", "a_b.com", false),
                ("ipv4", "10.0.0.1", true),
                ("ipv4", "010.0.0.1", true),
                ("ipv4", "256.0.0.1", false),
                ("ipv4", "::1", false),
                ("ipv6", "::1", true),
                ("ipv6", "2001:db8::1", true),
                ("ipv6", "10.0.0.1", false),
                ("cidr", "10.0.0.0/8", true),
                ("cidr", "2001:db8::/32", true),
                ("cidr", "10.0.0.0/33", false),
                ("cidr", "10.0.0.0", false),
                ("mac", "01:23:45:67:89:ab", true),
                ("mac", "01-23-45-67-89-ab", true),
                ("mac", "0123.4567.89ab", true),
                ("mac", "01:23:45:67:89", false),
                ("uri", "https://example.com/path?q=1", true),
                ("uri", "/relative/path", true),
                ("uri", "mailto:someone", true),
                ("uri", "relative/path", false),
                ("uri", "http://exa mple.com/", false),
                ("duration", "1h30m", true),
                ("duration", "3 days", true),
                ("duration", "1.5s", true),
                ("duration", "forever", false),
                ("duration", "", false),
                ("hexcolor", "#fff", true),
                ("hexcolor", "#ffff", false),
                ("rgbcolor", "rgb(255, 0, 10)", true),
                ("rgbcolor", "rgb(256,0,0)", false),
                ("ssn", "123-45-6789", true),
                ("ssn", "123456789", false),
                ("isbn10", "0321751043", true),
                ("isbn13", "978-0321751041", true),
                ("isbn", "0321751044", false),
                ("creditcard", "4111 1111 1111 1111", true),
                ("creditcard", "4111 1111 1111 1112", false),
                ("bsonobjectid", "507f1f77bcf86cd799439011", true),
                ("bsonobjectid", "507f1f77bcf86cd79943901", false),
                ("k8sshortname", "my-name", true),
                ("k8sshortname", "my.name", false),
                ("k8slongname", "my.name", true),
                ("password", "anything", true),
            ];
            for (format, value, expected) in cases {
                assert_eq!(valid(format, value), *expected, "{format} {value:?}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The Widget schema of create-crd.json.
    fn widget_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["replicas"],
                    "properties": {
                        "color": {"type": "string", "default": "red", "enum": ["red", "blue"]},
                        "replicas": {"type": "integer", "minimum": 1}
                    },
                    "x-kubernetes-validations": [{"rule": "self.replicas <= 10", "message": "at most 10"}]
                },
                "status": {
                    "type": "object",
                    "properties": {"ready": {"type": "integer"}}
                }
            }
        })
    }

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    #[test]
    fn reference_422_schema() {
        // error-422-schema.json
        let obj = json!({
            "apiVersion": "ref.example.org/v1", "kind": "Widget",
            "metadata": {"name": "w2", "namespace": "ref"},
            "spec": {"color": "green", "replicas": 0}
        });
        let causes = validate(&obj, &widget_schema(), "");
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert_eq!(causes[0].reason, "FieldValueNotSupported");
        assert_eq!(causes[0].field, "spec.color");
        assert_eq!(
            causes[0].message,
            "Unsupported value: \"green\": supported values: \"red\", \"blue\""
        );
        assert_eq!(causes[1].reason, "FieldValueInvalid");
        assert_eq!(causes[1].field, "spec.replicas");
        assert_eq!(
            causes[1].message,
            "Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
        );
        let note = blocked_rules_cause(&causes);
        let note = note.as_ref().map(Cause::summary);
        assert_eq!(
            note.as_deref(),
            Some(
                "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
            )
        );
        // Full upstream aggregate, as error.rs renders it.
        let mut all = causes.clone();
        all.extend(blocked_rules_cause(&causes));
        let joined = format!("[{}]", summaries(&all).join(", "));
        assert_eq!(
            joined,
            "[spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\", spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
        );
    }

    /// A schema tightened after objects were stored: a pattern, a maximum, an enum inside
    /// map-list items, a minimum length inside the items of a list without a list type, a
    /// required field and a set.
    fn tightened_schema() -> Value {
        json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "required": ["owner"],
            "properties": {
                "owner": {"type": "string"},
                "name": {"type": "string", "pattern": "^[a-z]+$"},
                "size": {"type": "integer", "maximum": 100},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["port"],
                    "items": {"type": "object", "required": ["port"], "properties": {
                        "port": {"type": "integer"},
                        "protocol": {"type": "string", "enum": ["TCP", "UDP"]}
                    }}
                },
                "steps": {"type": "array", "items": {"type": "string", "minLength": 2}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
            }
        }}})
    }

    fn ratcheted(new: &Value, old: &Value) -> Vec<String> {
        let patterns = Arc::new(PatternCache::default());
        summaries(&validate_update_with(
            new,
            old,
            &tightened_schema(),
            "",
            &patterns,
        ))
    }

    #[test]
    fn unchanged_invalid_values_are_ratcheted_on_update() {
        let old = json!({"spec": {
            "name": "UPPER",
            "size": 500,
            "ports": [{"port": 80, "protocol": "tcp"}, {"port": 81, "protocol": "udp"}],
            "steps": ["x", "ok"],
            "tags": ["a", "a"]
        }});
        let schema = tightened_schema();
        // What a create of the same object meets.
        assert_eq!(
            summaries(&validate(&old, &schema, "")),
            [
                "spec.name: Invalid value: \"UPPER\": spec.name in body should match '^[a-z]+$'",
                "spec.ports[0].protocol: Unsupported value: \"tcp\": supported values: \"TCP\", \"UDP\"",
                "spec.ports[1].protocol: Unsupported value: \"udp\": supported values: \"TCP\", \"UDP\"",
                "spec.size: Invalid value: 500: spec.size in body should be less than or equal to 100",
                "spec.steps[0]: Invalid value: \"x\": spec.steps[0] in body should be at least 2 chars long",
                "spec.owner: Required value",
                "spec.tags[1]: Duplicate value: \"a\"",
            ]
        );
        // Unchanged: nothing is enforced.
        let mut labelled = old.clone();
        labelled["metadata"] = json!({"labels": {"a": "b"}});
        assert!(ratcheted(&labelled, &old).is_empty());
        // Map-list items are matched by key, so reordering and fixing one item keeps the other
        // ratcheted; the changed spec now meets its own `required`; a list without a list type
        // matches items by index; the set's duplicates stay allowed as the old set had some.
        let new = json!({"spec": {
            "name": "UPPER",
            "size": 600,
            "ports": [{"port": 81, "protocol": "UDP"}, {"port": 80, "protocol": "tcp"}, {"port": 82, "protocol": "sctp"}],
            "steps": ["x", "y"],
            "tags": ["a", "a", "b"]
        }});
        assert_eq!(
            ratcheted(&new, &old),
            [
                "spec.ports[2].protocol: Unsupported value: \"sctp\": supported values: \"TCP\", \"UDP\"",
                "spec.size: Invalid value: 600: spec.size in body should be less than or equal to 100",
                "spec.steps[1]: Invalid value: \"y\": spec.steps[1] in body should be at least 2 chars long",
                "spec.owner: Required value",
            ]
        );
        // Once the old set is valid, duplicates are refused again.
        let clean = json!({"spec": {"owner": "me", "tags": ["a"]}});
        let dup = json!({"spec": {"owner": "me", "tags": ["a", "a"]}});
        assert_eq!(
            ratcheted(&dup, &clean),
            ["spec.tags[1]: Duplicate value: \"a\""]
        );
    }

    #[test]
    fn reference_defaulted_and_pruned() {
        // create-cr-defaulted-pruned.json: spec.bogus pruned (with warning), color defaulted.
        let mut obj = json!({
            "apiVersion": "ref.example.org/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "ref", "whatever": 1},
            "spec": {"replicas": 2, "bogus": true}
        });
        let schema = widget_schema();
        let pruned = prune(&mut obj, &schema);
        assert_eq!(pruned, vec!["spec.bogus".to_string()]);
        assert_eq!(
            unknown_field_message(&pruned[0]),
            "unknown field \"spec.bogus\""
        );
        apply_defaults(&mut obj, &schema);
        assert_eq!(obj["spec"], json!({"color": "red", "replicas": 2}));
        assert_eq!(obj["metadata"]["whatever"], json!(1));
        assert!(validate(&obj, &schema, "").is_empty());
        assert!(blocked_rules_cause(&[]).is_none());
    }

    #[test]
    fn required_and_type_errors() {
        let obj = json!({"spec": {"color": 5}});
        let causes = validate(&obj, &widget_schema(), "");
        assert_eq!(
            summaries(&causes),
            vec![
                "spec.color: Invalid value: \"integer\": spec.color in body must be of type string: \"integer\"",
                "spec.color: Unsupported value: 5: supported values: \"red\", \"blue\"",
                "spec.replicas: Required value",
            ]
        );
        assert_eq!(causes[0].reason, "FieldValueTypeInvalid");
        assert_eq!(causes[2].reason, "FieldValueRequired");

        let causes = validate(
            &json!({"spec": {"replicas": "string"}}),
            &widget_schema(),
            "",
        );
        assert_eq!(
            summaries(&causes),
            vec![
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
            ]
        );
    }

    #[test]
    fn nulls() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "x": {"type": "string"},
            "y": {"type": "string", "nullable": true},
            "z": {"type": "string", "default": "zz"}
        }}}});
        let obj = json!({"spec": {"x": null, "y": null}});
        assert_eq!(
            summaries(&validate(&obj, &schema, "")),
            vec![
                "spec.x: Invalid value: \"null\": spec.x in body must be of type string: \"null\""
            ]
        );
        let mut obj = json!({"spec": {"x": null, "y": null, "z": null}});
        drop_non_nullable_nulls(&mut obj, &schema);
        assert_eq!(obj, json!({"spec": {"y": null, "z": null}}));
        apply_defaults(&mut obj, &schema);
        assert_eq!(obj, json!({"spec": {"y": null, "z": "zz"}}));
        assert!(validate(&obj, &schema, "").is_empty());
    }

    #[test]
    fn numbers() {
        let schema = json!({"type": "object", "properties": {
            "i": {"type": "integer", "maximum": 10, "exclusiveMaximum": true},
            "n": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true, "maximum": 1000000},
            "m": {"type": "integer", "multipleOf": 5},
            "f": {"type": "number", "multipleOf": 0.1},
            "i32": {"type": "integer", "format": "int32"},
            "le": {"type": "integer", "maximum": 3}
        }});
        let obj = json!({"i": 10, "n": 0.5, "m": 7, "f": 0.3, "i32": 3_000_000_000_i64, "le": 4});
        assert_eq!(
            summaries(&validate(&obj, &schema, "")),
            vec![
                "i: Invalid value: 10: i in body should be less than 10",
                "<nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in i32",
                "le: Invalid value: 4: le in body should be less than or equal to 3",
                "m: Invalid value: 7: m in body should be a multiple of 5",
                "n: Invalid value: 0.5: n in body should be greater than 0.5",
            ]
        );
        let obj = json!({"n": 2000000.5, "i": 1.0, "m": 2.5});
        assert_eq!(
            summaries(&validate(&obj, &schema, "")),
            vec![
                "m: Invalid value: \"number\": m in body must be of type integer: \"number\"",
                "<nil>: Invalid value: \"\": Checked value must be of type integer (default format) in m",
                "m: Invalid value: 2.5: m in body should be a multiple of 5",
                "n: Invalid value: 2.0000005e+06: n in body should be less than or equal to 1e+06",
            ]
        );
    }

    #[test]
    fn strings() {
        let schema = json!({"type": "object", "properties": {
            "short": {"type": "string", "minLength": 3},
            "long": {"type": "string", "maxLength": 5},
            "one": {"type": "string", "maxLength": 1},
            "pat": {"type": "string", "pattern": "^[a-z]+\\d$"},
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
            "free": {"type": "string", "format": "made-up"}
        }});
        let obj = json!({"short": "ab", "long": "abcdef", "one": "éé", "pat": "abc٣",
            "when": "yesterday", "id": "nope", "free": "anything"});
        let causes = validate(&obj, &schema, "");
        assert_eq!(
            summaries(&causes),
            vec![
                "id: Invalid value: \"nope\": id in body must be of type uuid: \"nope\"",
                "long: Too long: may not be more than 5 bytes",
                "one: Too long: may not be more than 1 byte",
                "pat: Invalid value: \"abc٣\": pat in body should match '^[a-z]+\\d$'",
                "short: Invalid value: \"ab\": short in body should be at least 3 chars long",
                "when: Invalid value: \"yesterday\": when in body must be of type date-time: \"yesterday\"",
            ]
        );
        assert_eq!(causes[1].reason, "FieldValueTooLong");
        assert_eq!(causes[5].reason, "FieldValueTypeInvalid");
        let ok = json!({"short": "abc", "long": "ééééé", "pat": "abc3", "when": "2026-11-22T00:41:43Z",
            "id": "5d2d585c-a3d3-4e9d-88fc-20f85c6a6434"});
        assert!(validate(&ok, &schema, "").is_empty());
    }

    #[test]
    fn arrays_and_paths() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "minItems": 1, "maxItems": 2, "items": {
                "type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}
            }},
            "tags": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "empty": {"type": "array", "minItems": 1, "items": {"type": "string"}}
        }}}});
        let obj = json!({"spec": {
            "items": [{"name": 1}, {}, {"name": "c"}],
            "tags": ["a", "a"],
            "empty": []
        }});
        assert_eq!(
            summaries(&validate(&obj, &schema, "")),
            vec![
                "spec.empty: Invalid value: 0: spec.empty in body should have at least 1 items",
                "spec.items[0].name: Invalid value: \"integer\": spec.items[0].name in body must be of type string: \"integer\"",
                "spec.items[1].name: Required value",
                "spec.items: Too many: 3: must have at most 2 items",
                "spec.tags: Invalid value: \"\": spec.tags in body shouldn't contain duplicates",
            ]
        );
    }

    #[test]
    fn objects_and_maps() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "map": {"type": "object", "maxProperties": 2, "additionalProperties": {"type": "integer"}},
            "few": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}},
            "closed": {"type": "object", "additionalProperties": false, "properties": {"a": {"type": "string"}}}
        }}}});
        let obj = json!({"spec": {
            "map": {"a": 1, "b": "x", "c": 3},
            "few": {},
            "closed": {"a": "ok", "b": 1}
        }});
        assert_eq!(
            summaries(&validate(&obj, &schema, "")),
            vec![
                "spec.closed: Invalid value: \"b\": spec.closed.b in body is a forbidden property",
                "spec.few: Invalid value: 0: spec.few in body should have at least 1 properties",
                "spec.map: Too many: 3: must have at most 2 items",
                "spec.map.b: Invalid value: \"string\": spec.map.b in body must be of type integer: \"string\"",
            ]
        );
    }

    #[test]
    fn int_or_string_and_preserve() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "any": {"x-kubernetes-preserve-unknown-fields": true}
        }}}});
        for port in [json!(80), json!("http")] {
            let obj = json!({"spec": {"port": port, "raw": {"x": {"y": 1}}, "any": [1, "a"]}});
            assert!(validate(&obj, &schema, "").is_empty());
        }
        let obj = json!({"spec": {"port": true}});
        assert_eq!(
            summaries(&validate(&obj, &schema, "")),
            vec![
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                "<nil>: Invalid value: \"\": \"spec.port\" must validate at least one schema (anyOf)",
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer: \"boolean\"",
            ]
        );
        let mut obj = json!({"spec": {"raw": {"x": 1}, "any": {"deep": {"er": 1}}, "gone": 1}});
        assert_eq!(prune(&mut obj, &schema), vec!["spec.gone".to_string()]);
        assert_eq!(
            obj,
            json!({"spec": {"raw": {"x": 1}, "any": {"deep": {"er": 1}}}})
        );
    }

    #[test]
    fn composition() {
        let schema = json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "n": {"type": "integer"}},
            "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
            "not": {"required": ["n"]},
            "allOf": [{"properties": {"a": {"maxLength": 2}}}]
        }}});
        assert!(validate(&json!({"spec": {"a": "x"}}), &schema, "").is_empty());
        assert_eq!(
            summaries(&validate(
                &json!({"spec": {"a": "xyz", "b": "y", "n": 1}}),
                &schema,
                ""
            )),
            vec![
                "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
                "spec.a: Too long: may not be more than 2 bytes",
                "<nil>: Invalid value: \"\": \"spec\" must validate all the schemas (allOf). None validated",
                "<nil>: Invalid value: \"\": \"spec\" must not validate the schema (not)",
            ]
        );
        assert_eq!(
            summaries(&validate(&json!({"spec": {}}), &schema, "")),
            vec![
                "<nil>: Invalid value: \"\": \"spec\" must validate one and only one schema (oneOf). Found none valid",
                "spec.a: Required value",
            ]
        );
    }

    #[test]
    fn list_types() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            "multi": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}},
            "byName": {"type": "object", "additionalProperties": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}}}
        }}}});
        let obj = json!({"spec": {
            "set": ["x", "y", "x", "x"],
            "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}],
            "multi": [{"a": "1", "b": 2}, {"a": "1", "b": 2}, {"a": "1", "b": 3}],
            "byName": {"k": [1, 1]}
        }});
        let causes = validate(&obj, &schema, "");
        assert_eq!(
            summaries(&causes),
            vec![
                "spec.byName[k][1]: Duplicate value: 1",
                "spec.multi[1]: Duplicate value: {\"a\":\"1\",\"b\":2}",
                "spec.ports[1]: Duplicate value: {\"name\":\"http\"}",
                "spec.set[2]: Duplicate value: \"x\"",
            ]
        );
        assert!(causes.iter().all(|c| c.reason == "FieldValueDuplicate"));
        let obj = json!({"spec": {"ports": ["nope"]}});
        assert_eq!(
            summaries(&validate(&obj, &schema, "")),
            vec![
                "spec.ports[0]: Invalid value: \"string\": spec.ports[0] in body must be of type object: \"string\"",
                "spec.ports[0]: Invalid value: \"nope\": must be an object for an array of list-type map",
            ]
        );
    }

    #[test]
    fn embedded_resources() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true}
        }}}});
        let obj = json!({"spec": {"template": {"metadata": {"name": "a/b", "labels": {"bad key": "v"}}}}});
        assert_eq!(
            summaries(&validate(&obj, &schema, "")),
            vec![
                "spec.template.apiVersion: Required value",
                "spec.template.kind: Required value",
                "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
                "spec.template.metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ]
        );
        let obj = json!({"spec": {"template": {"apiVersion": "a/b/c", "kind": "bad_kind", "metadata": {}}}});
        assert_eq!(
            summaries(&validate(&obj, &schema, "")),
            vec![
                "spec.template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "spec.template.kind: Invalid value: \"bad_kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
        let ok = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"a": "b"}}, "spec": {"x": 1}}}});
        assert!(validate(&ok, &schema, "").is_empty());
        // Pruning keeps the embedded resource's meta fields and preserves the rest here.
        let mut pruned = ok.clone();
        assert!(prune(&mut pruned, &schema).is_empty());
        assert_eq!(pruned, ok);
    }

    #[test]
    fn status_prefix() {
        let schema = widget_schema();
        let status_schema = schema_at(&schema, &["status"])
            .cloned()
            .unwrap_or(Value::Null);
        assert_eq!(status_schema["properties"]["ready"]["type"], "integer");
        let causes = validate(&json!({"ready": "string"}), &status_schema, "status");
        assert_eq!(
            summaries(&causes),
            vec![
                "status.ready: Invalid value: \"string\": ready in body must be of type integer: \"string\""
            ]
        );
        let causes = validate(&json!("x"), &status_schema, "status");
        assert_eq!(
            summaries(&causes),
            vec!["status: Invalid value: \"string\":  in body must be of type object: \"string\""]
        );
        assert!(schema_at(&schema, &["spec", "nope"]).is_none());
        assert_eq!(
            schema_at(&schema, &["spec", "replicas"]).map(|s| s["minimum"].clone()),
            Some(json!(1))
        );
        let map_schema = json!({"properties": {"m": {"additionalProperties": {"type": "string"}}}});
        assert_eq!(
            schema_at(&map_schema, &["m", "anything"]),
            Some(&json!({"type": "string"}))
        );
    }

    #[test]
    fn pruning_paths() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "flags": {"type": "object", "additionalProperties": true}
        }}}});
        let mut obj = json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
            "extra": 1,
            "spec": {
                "items": [{"name": "a", "x": 1}, {"y": {"z": 1}}],
                "labels": {"a": "b"},
                "flags": {"k": {"nested": 1}, "s": 1},
                "kind": "nested kind is not special"
            }
        });
        let paths = prune(&mut obj, &schema);
        assert_eq!(
            paths,
            vec![
                "extra",
                "spec.flags.k.nested",
                "spec.items[0].x",
                "spec.items[1].y",
                "spec.kind",
            ]
        );
        assert_eq!(
            obj,
            json!({
                "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"},
                "spec": {"items": [{"name": "a"}, {}], "labels": {"a": "b"}, "flags": {"k": {}, "s": 1}}
            })
        );
    }

    #[test]
    fn defaults_nested() {
        let schema = json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "default": {},
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "strategy": {"type": "object", "default": {"type": "Rolling"}, "properties": {
                    "type": {"type": "string"},
                    "maxSurge": {"type": "integer", "default": 25}
                }},
                "containers": {"type": "array", "items": {"type": "object", "properties": {
                    "pull": {"type": "string", "default": "IfNotPresent"}
                }}},
                "env": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                    "v": {"type": "string", "default": "x"}
                }}},
                "nullableWithDefault": {"type": "string", "nullable": true, "default": "d"},
                "nonNullableWithDefault": {"type": "string", "default": "d"}
            }
        }}});
        let mut obj = json!({});
        apply_defaults(&mut obj, &schema);
        assert_eq!(
            obj,
            json!({"spec": {"replicas": 1, "strategy": {"type": "Rolling", "maxSurge": 25},
                "nullableWithDefault": "d", "nonNullableWithDefault": "d"}})
        );
        let mut obj = json!({"spec": {"replicas": 3, "containers": [{}, {"pull": "Always"}],
            "env": {"a": {}, "b": {"v": "y"}},
            "nullableWithDefault": null, "nonNullableWithDefault": null}});
        apply_defaults(&mut obj, &schema);
        assert_eq!(obj["spec"]["replicas"], 3);
        assert_eq!(
            obj["spec"]["containers"],
            json!([{"pull": "IfNotPresent"}, {"pull": "Always"}])
        );
        assert_eq!(
            obj["spec"]["env"],
            json!({"a": {"v": "x"}, "b": {"v": "y"}})
        );
        assert_eq!(obj["spec"]["nullableWithDefault"], Value::Null);
        assert_eq!(obj["spec"]["nonNullableWithDefault"], "d");
    }

    #[test]
    fn structural_reference_schema_is_accepted() {
        let causes = check_structural(&widget_schema(), "spec.versions[0].schema.openAPIV3Schema");
        assert!(causes.is_empty(), "{causes:?}");
    }

    #[test]
    fn structural_missing_types() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"properties": {"a": {"type": "string"}}},
            "list": {"type": "array"},
            "items": {"type": "array", "items": {"description": "untyped"}},
            "ios": {"x-kubernetes-int-or-string": true},
            "raw": {"x-kubernetes-preserve-unknown-fields": true}
        }});
        let p = "spec.versions[0].schema.openAPIV3Schema";
        assert_eq!(
            summaries(&check_structural(&schema, p)),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[items].items.type: Required value: must not be empty for specified array items",
                "spec.versions[0].schema.openAPIV3Schema.properties[list].items: Required value: must be specified",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            ]
        );
        let root = check_structural(&json!({"type": "string"}), p);
        assert_eq!(
            summaries(&root),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.type: Invalid value: \"string\": must be object at the root"
            ]
        );
        let root = check_structural(&json!({"properties": {}}), p);
        assert_eq!(
            summaries(&root),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root"
            ]
        );
    }

    #[test]
    fn structural_metadata_and_nesting() {
        let p = "s";
        let ok = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}
        }});
        assert!(check_structural(&ok, p).is_empty());
        let bad = json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
            "spec": {"type": "object", "anyOf": [{"type": "object", "properties": {"x": {"minimum": 1}}}]}
        }});
        assert_eq!(
            summaries(&check_structural(&bad, p)),
            vec![
                "s.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
                "s.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
            ]
        );
        let incomplete = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "anyOf": [{"properties": {"b": {"minLength": 1}}}]});
        assert_eq!(
            summaries(&check_structural(&incomplete, p)),
            vec![
                "s.properties[b]: Required value: because it is defined in s.anyOf[0].properties[b]"
            ]
        );
        let embedded = json!({"type": "object", "properties": {"t": {"x-kubernetes-embedded-resource": true}}});
        assert_eq!(
            summaries(&check_structural(&embedded, p)),
            vec![
                "s.properties[t].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
                "s.properties[t].type: Required value: must be object if x-kubernetes-embedded-resource is true",
            ]
        );
    }

    #[test]
    fn structural_defaults_must_validate() {
        let p = "spec.versions[0].schema.openAPIV3Schema";
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "color": {"type": "string", "enum": ["red", "blue"], "default": "green"},
            "replicas": {"type": "integer", "minimum": 1, "default": "one"},
            "obj": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}}
        }}}});
        assert_eq!(
            summaries(&check_structural(&schema, p)),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[color].default: Unsupported value: \"green\": supported values: \"red\", \"blue\"",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[obj].default: Invalid value: {\"a\":\"x\",\"b\":1}: must not have unknown fields",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: \"string\":  in body must be of type integer: \"string\"",
            ]
        );
        let meta_default = json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {}}}});
        assert_eq!(
            summaries(&check_structural(&meta_default, p)),
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata"
            ]
        );
    }

    #[test]
    fn structural_openapi_restrictions() {
        let p = "s";
        let schema = json!({"type": "object", "nullable": true, "properties": {
            "a": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "b": {"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": {"type": "string"}},
            "c": {"type": "foo"},
            "d": {"$ref": "#/definitions/x", "type": "string"},
            "e": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            "f": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "missing"],
                "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            "g": {"type": "string", "x-kubernetes-preserve-unknown-fields": false},
            "h": {"type": "string", "pattern": "(unclosed"},
            "i": {"type": "object", "x-kubernetes-validations": [{"rule": " "}]}
        }});
        let got = summaries(&check_structural(&schema, p));
        let expected = vec![
            "s.nullable: Forbidden: nullable cannot be true at the root",
            "s.properties[h].pattern: Invalid value: \"(unclosed\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(unclosed`",
            "s.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            "s.properties[b].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
            "s.properties[c].type: Unsupported value: \"foo\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            "s.properties[d].$ref: Forbidden: $ref is not supported",
            "s.properties[e].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            "s.properties[f].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"missing\"]: entries must all be names of item properties",
            "s.properties[f].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            "s.properties[g].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined",
            "s.properties[i].x-kubernetes-validations[0].rule: Required value: rule is not specified",
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn go_regex_translation() {
        assert_eq!(go_regex_to_rust(r"^\d+$"), "^[0-9]+$");
        assert_eq!(go_regex_to_rust(r"[\w-]+"), r"[0-9A-Za-z_\-]+");
        assert_eq!(go_regex_to_rust(r"[\w-.]+"), r"[0-9A-Za-z_\-.]+");
        assert_eq!(go_regex_to_rust(r"[a-z0-9-]"), r"[a-z0-9\-]");
        assert_eq!(go_regex_to_rust(r"[a-z-0]"), r"[a-z\-0]");
        assert_eq!(go_regex_to_rust(r"[-a]"), r"[\-a]");
        assert_eq!(go_regex_to_rust(r"[\x00-\x1f]"), r"[\x00-\x1f]");
        assert_eq!(go_regex_to_rust(r"[a&&b~~c]"), r"[a\&\&b\~\~c]");
        assert_eq!(go_regex_to_rust(r"[\p{L}-x]"), r"[\p{L}\-x]");
        assert!(compiled_pattern(r"^[a-z]+\d$").is_ok_and(|r| r.is_match("abc3")));
        assert_eq!(go_regex_to_rust(r"[^\s]"), r"[^\t\n\x0C\r ]");
        assert_eq!(go_regex_to_rust(r"[]a]"), r"[\]a]");
        assert_eq!(go_regex_to_rust(r"[[:alpha:]]"), "[[:alpha:]]");
        assert_eq!(go_regex_to_rust(r"a\.b\D"), r"a\.b[^0-9]");
        assert!(compiled_pattern(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$").is_ok());
        assert!(compiled_pattern(r"^\p{L}+$").is_ok_and(|r| r.is_match("héllo")));
        assert!(compiled_pattern(r"^\d$").is_ok_and(|r| !r.is_match("٣")));
    }

    #[test]
    fn numbers_render_like_go() {
        let schema =
            json!({"type": "object", "properties": {"r": {"type": "number", "enum": [1, 2.5]}}});
        assert!(validate(&json!({"r": 1.0}), &schema, "").is_empty());
        assert_eq!(
            summaries(&validate(&json!({"r": 3}), &schema, "")),
            vec!["r: Unsupported value: 3: supported values: \"1\", \"2.5\""]
        );
        assert!(is_json_integer(3.0000000000000004));
        assert!(!is_json_integer(2.5));
    }
}
