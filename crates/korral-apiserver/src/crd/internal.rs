//! A `apiextensions.k8s.io/v1` CRD spec as upstream validates it: converted to the internal
//! type first, where a per-version attribute (schema, subresources, printer columns, selectable
//! fields) that is the same in every version moves to the spec (`spec.validation`,
//! `spec.subresources`, `spec.additionalPrinterColumns`, `spec.selectableFields`) and leaves the
//! versions. Field paths of errors follow that shape, and bad values print as Go's
//! `json.Marshal` prints the internal (untagged) structs.

use serde_json::{Map, Value};

use crate::meta;

/// One per-version attribute after conversion: at spec level when every version has the same
/// value, else per version.
#[derive(Debug)]
pub(crate) struct Hoisted<'a> {
    /// The spec-level value (`None` when absent or when the versions differ).
    pub top: Option<&'a Value>,
    /// Each version's own value (all `None` when `identical`).
    pub per_version: Vec<Option<&'a Value>>,
}

impl<'a> Hoisted<'a> {
    /// Splits the attribute `key` of `versions` as upstream's v1 → internal conversion does.
    fn of(versions: &[&'a Value], key: &str, empty_is_absent: bool) -> Self {
        let values: Vec<Option<&'a Value>> = versions
            .iter()
            .map(|v| {
                v.get(key).filter(|x| {
                    !(x.is_null() || (empty_is_absent && x.as_array().is_some_and(Vec::is_empty)))
                })
            })
            .collect();
        let identical = values
            .first()
            .is_some_and(|first| values.iter().all(|v| v == first));
        if identical {
            Self {
                top: values.first().copied().flatten(),
                per_version: vec![None; values.len()],
            }
        } else {
            Self {
                top: None,
                per_version: values,
            }
        }
    }
}

/// The versions of a CRD with their attributes split as the internal type holds them.
#[derive(Debug)]
pub(crate) struct InternalSpec<'a> {
    /// `spec.versions`, in order.
    pub versions: Vec<&'a Value>,
    /// `schema` (`spec.validation` when shared).
    pub schema: Hoisted<'a>,
    /// `subresources` (`spec.subresources` when shared).
    pub subresources: Hoisted<'a>,
    /// `additionalPrinterColumns` (`spec.additionalPrinterColumns` when shared).
    pub columns: Hoisted<'a>,
    /// `selectableFields` (`spec.selectableFields` when shared).
    pub selectable: Hoisted<'a>,
}

impl<'a> InternalSpec<'a> {
    /// The internal view of `crd`'s `spec.versions`.
    pub(crate) fn of(crd: &'a Value) -> Self {
        let versions: Vec<&Value> = meta::path(crd, "spec.versions")
            .and_then(Value::as_array)
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        Self {
            schema: Hoisted::of(&versions, "schema", false),
            subresources: Hoisted::of(&versions, "subresources", false),
            columns: Hoisted::of(&versions, "additionalPrinterColumns", true),
            selectable: Hoisted::of(&versions, "selectableFields", true),
            versions,
        }
    }

    /// The spec-level `openAPIV3Schema` (`spec.validation.openAPIV3Schema`), if any.
    pub(crate) fn top_schema(&self) -> Option<&'a Value> {
        self.schema.top.and_then(|s| s.get("openAPIV3Schema"))
    }

    /// Upstream's `getSubresourcesForVersion`: the spec-level subresources unless some version
    /// has its own.
    pub(crate) fn subresources_for(&self, i: usize) -> Option<&'a Value> {
        if self.subresources.per_version.iter().all(Option::is_none) {
            self.subresources.top
        } else {
            self.subresources.per_version.get(i).copied().flatten()
        }
    }

    /// Upstream's `hasAnyStatusEnabled`.
    pub(crate) fn any_status_enabled(&self) -> bool {
        std::iter::once(self.subresources.top)
            .chain(self.subresources.per_version.iter().copied())
            .flatten()
            .any(has_status)
    }

    /// `spec.versions` as Go's `json.Marshal` prints the internal `[]CustomResourceDefinitionVersion`
    /// (`null` when there is none).
    pub(crate) fn render_versions(&self) -> String {
        if self.versions.is_empty() {
            return "null".to_string();
        }
        let items: Vec<String> = self
            .versions
            .iter()
            .enumerate()
            .map(|(i, v)| self.render_version(i, v))
            .collect();
        format!("[{}]", items.join(","))
    }

    /// One internal `CustomResourceDefinitionVersion`.
    fn render_version(&self, i: usize, v: &Value) -> String {
        let at = |h: &Hoisted<'a>| h.per_version.get(i).copied().flatten();
        let schema = at(&self.schema).map_or("null".to_string(), |s| {
            format!(
                "{{\"OpenAPIV3Schema\":{}}}",
                s.get("openAPIV3Schema")
                    .map_or("null".to_string(), render_schema)
            )
        });
        let subresources = at(&self.subresources).map_or("null".to_string(), render_subresources);
        let columns = at(&self.columns).map_or("null".to_string(), render_columns);
        let selectable = at(&self.selectable).map_or("null".to_string(), |f| {
            list(f, |x| {
                format!("{{\"JSONPath\":{}}}", go_json_string(str_of(x, "jsonPath")))
            })
        });
        format!(
            "{{\"Name\":{},\"Served\":{},\"Storage\":{},\"Deprecated\":{},\"DeprecationWarning\":{},\"Schema\":{schema},\"Subresources\":{subresources},\"AdditionalPrinterColumns\":{columns},\"SelectableFields\":{selectable}}}",
            go_json_string(str_of(v, "name")),
            flag(v, "served"),
            flag(v, "storage"),
            flag(v, "deprecated"),
            opt_string(v.get("deprecationWarning")),
        )
    }
}

/// Whether subresources enable `status`.
pub(crate) fn has_status(subresources: &Value) -> bool {
    subresources.get("status").is_some_and(|s| !s.is_null())
}

/// The string at `key` of `v`, empty when absent.
pub(crate) fn str_of<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The boolean at `key` of `v`, false when absent.
fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Go's `json.Marshal` of a string: JSON escapes plus `<`, `>`, `&`, U+2028 and U+2029 as
/// `\uXXXX`.
pub(crate) fn go_json_string(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap_or_default();
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Go's `json.Marshal` of a `float64`: `%f`-like between 1e-6 and 1e21, else exponent form.
fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-6..1e21).contains(&abs) {
        format!("{f}")
    } else {
        let e = format!("{f:e}");
        match e.split_once('e') {
            Some((m, exp)) if !exp.starts_with('-') => format!("{m}e+{exp}"),
            _ => e,
        }
    }
}

/// Go's `json.Marshal` of a decoded JSON value (`interface{}`): numbers are `float64`, map
/// keys sorted.
pub(crate) fn go_json_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) if i.unsigned_abs() < (1u64 << 53) => i.to_string(),
            (_, Some(u)) if u < (1u64 << 53) => u.to_string(),
            _ => go_json_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => go_json_string(s),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_json_value).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(map) => sorted_map(map, go_json_value),
    }
}

/// A Go map (keys sorted) of values rendered by `render`.
fn sorted_map(map: &Map<String, Value>, render: impl Fn(&Value) -> String) -> String {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    let items: Vec<String> = keys
        .into_iter()
        .map(|k| format!("{}:{}", go_json_string(k), render(&map[k])))
        .collect();
    format!("{{{}}}", items.join(","))
}

/// A Go slice rendered item by item (`null` when not a list).
fn list(v: &Value, render: impl Fn(&Value) -> String) -> String {
    match v.as_array() {
        Some(items) => {
            let items: Vec<String> = items.iter().map(render).collect();
            format!("[{}]", items.join(","))
        }
        None => "null".to_string(),
    }
}

/// A `*string` field.
fn opt_string(v: Option<&Value>) -> String {
    v.and_then(Value::as_str)
        .map_or("null".to_string(), go_json_string)
}

/// A pointer to a number or boolean field (`null` when absent).
fn opt_scalar(v: Option<&Value>) -> String {
    match v {
        Some(x) if !x.is_null() => go_json_value(x),
        _ => "null".to_string(),
    }
}

/// Internal `CustomResourceSubresources`.
fn render_subresources(s: &Value) -> String {
    let status = if has_status(s) { "{}" } else { "null" };
    let scale = s
        .get("scale")
        .filter(|x| !x.is_null())
        .map_or("null".to_string(), |sc| {
            format!(
                "{{\"SpecReplicasPath\":{},\"StatusReplicasPath\":{},\"LabelSelectorPath\":{}}}",
                go_json_string(str_of(sc, "specReplicasPath")),
                go_json_string(str_of(sc, "statusReplicasPath")),
                opt_string(sc.get("labelSelectorPath")),
            )
        });
    format!("{{\"Status\":{status},\"Scale\":{scale}}}")
}

/// Internal `[]CustomResourceColumnDefinition`.
fn render_columns(c: &Value) -> String {
    list(c, |col| {
        format!(
            "{{\"Name\":{},\"Type\":{},\"Format\":{},\"Description\":{},\"Priority\":{},\"JSONPath\":{}}}",
            go_json_string(str_of(col, "name")),
            go_json_string(str_of(col, "type")),
            go_json_string(str_of(col, "format")),
            go_json_string(str_of(col, "description")),
            col.get("priority").and_then(Value::as_i64).unwrap_or(0),
            go_json_string(str_of(col, "jsonPath")),
        )
    })
}

/// A `*JSONSchemaPropsOrBool` (`additionalProperties`, `additionalItems`).
fn render_schema_or_bool(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "null".to_string(),
        Some(Value::Bool(b)) => format!("{{\"Allows\":{b},\"Schema\":null}}"),
        Some(s) => format!("{{\"Allows\":true,\"Schema\":{}}}", render_schema(s)),
    }
}

/// A `[]JSONSchemaProps` field.
fn schema_list(v: Option<&Value>) -> String {
    v.map_or("null".to_string(), |x| list(x, render_schema))
}

/// A `map[string]JSONSchemaProps` field.
fn schema_map(v: Option<&Value>) -> String {
    match v.and_then(Value::as_object) {
        Some(map) => sorted_map(map, render_schema),
        None => "null".to_string(),
    }
}

/// A `[]string` field.
fn string_list(v: Option<&Value>) -> String {
    v.map_or("null".to_string(), |x| {
        list(x, |s| go_json_string(s.as_str().unwrap_or("")))
    })
}

/// The internal `JSONSchemaProps` as Go's `json.Marshal` prints it (Go field names in
/// declaration order, zero values included).
pub(crate) fn render_schema(s: &Value) -> String {
    let text = |key: &str| go_json_string(str_of(s, key));
    let items = match s.get("items") {
        None | Some(Value::Null) => "null".to_string(),
        Some(Value::Array(a)) => format!(
            "{{\"Schema\":null,\"JSONSchemas\":[{}]}}",
            a.iter().map(render_schema).collect::<Vec<_>>().join(",")
        ),
        Some(one) => format!("{{\"Schema\":{},\"JSONSchemas\":null}}", render_schema(one)),
    };
    let dependencies = match s.get("dependencies").and_then(Value::as_object) {
        Some(map) => sorted_map(map, |d| match d {
            Value::Array(_) => format!("{{\"Schema\":null,\"Property\":{}}}", string_list(Some(d))),
            other => format!("{{\"Schema\":{},\"Property\":null}}", render_schema(other)),
        }),
        None => "null".to_string(),
    };
    let docs = s
        .get("externalDocs")
        .filter(|d| d.is_object())
        .map_or("null".to_string(), |d| {
            format!(
                "{{\"Description\":{},\"URL\":{}}}",
                go_json_string(str_of(d, "description")),
                go_json_string(str_of(d, "url"))
            )
        });
    let validations = s
        .get("x-kubernetes-validations")
        .map_or("null".to_string(), |v| {
            list(v, |r| {
                format!(
                    "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{},\"FieldPath\":{},\"OptionalOldSelf\":{}}}",
                    go_json_string(str_of(r, "rule")),
                    go_json_string(str_of(r, "message")),
                    go_json_string(str_of(r, "messageExpression")),
                    opt_string(r.get("reason")),
                    go_json_string(str_of(r, "fieldPath")),
                    opt_scalar(r.get("optionalOldSelf")),
                )
            })
        });
    let fields: [(&str, String); 41] = [
        ("ID", text("id")),
        ("Schema", text("$schema")),
        ("Ref", opt_string(s.get("$ref"))),
        ("Description", text("description")),
        ("Type", text("type")),
        ("Nullable", flag(s, "nullable").to_string()),
        ("Format", text("format")),
        ("Title", text("title")),
        (
            "Default",
            s.get("default").map_or("null".to_string(), go_json_value),
        ),
        ("Maximum", opt_scalar(s.get("maximum"))),
        ("ExclusiveMaximum", flag(s, "exclusiveMaximum").to_string()),
        ("Minimum", opt_scalar(s.get("minimum"))),
        ("ExclusiveMinimum", flag(s, "exclusiveMinimum").to_string()),
        ("MaxLength", opt_scalar(s.get("maxLength"))),
        ("MinLength", opt_scalar(s.get("minLength"))),
        ("Pattern", text("pattern")),
        ("MaxItems", opt_scalar(s.get("maxItems"))),
        ("MinItems", opt_scalar(s.get("minItems"))),
        ("UniqueItems", flag(s, "uniqueItems").to_string()),
        ("MultipleOf", opt_scalar(s.get("multipleOf"))),
        (
            "Enum",
            s.get("enum")
                .map_or("null".to_string(), |e| list(e, go_json_value)),
        ),
        ("MaxProperties", opt_scalar(s.get("maxProperties"))),
        ("MinProperties", opt_scalar(s.get("minProperties"))),
        ("Required", string_list(s.get("required"))),
        ("Items", items),
        ("AllOf", schema_list(s.get("allOf"))),
        ("OneOf", schema_list(s.get("oneOf"))),
        ("AnyOf", schema_list(s.get("anyOf"))),
        (
            "Not",
            s.get("not")
                .filter(|n| !n.is_null())
                .map_or("null".to_string(), render_schema),
        ),
        ("Properties", schema_map(s.get("properties"))),
        (
            "AdditionalProperties",
            render_schema_or_bool(s.get("additionalProperties")),
        ),
        ("PatternProperties", schema_map(s.get("patternProperties"))),
        ("Dependencies", dependencies),
        (
            "AdditionalItems",
            render_schema_or_bool(s.get("additionalItems")),
        ),
        ("Definitions", schema_map(s.get("definitions"))),
        ("ExternalDocs", docs),
        (
            "Example",
            s.get("example").map_or("null".to_string(), go_json_value),
        ),
        (
            "XPreserveUnknownFields",
            opt_scalar(s.get("x-kubernetes-preserve-unknown-fields")),
        ),
        (
            "XEmbeddedResource",
            flag(s, "x-kubernetes-embedded-resource").to_string(),
        ),
        (
            "XIntOrString",
            flag(s, "x-kubernetes-int-or-string").to_string(),
        ),
        (
            "XListMapKeys",
            string_list(s.get("x-kubernetes-list-map-keys")),
        ),
    ];
    let mut out: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    out.push(format!(
        "\"XListType\":{}",
        opt_string(s.get("x-kubernetes-list-type"))
    ));
    out.push(format!(
        "\"XMapType\":{}",
        opt_string(s.get("x-kubernetes-map-type"))
    ));
    out.push(format!("\"XValidations\":{validations}"));
    format!("{{{}}}", out.join(","))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A version with a schema of one string property.
    fn version(name: &str, storage: bool, prop: &str) -> Value {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object",
                   "properties": {prop: {"type": "string"}}}}})
    }

    #[test]
    fn identical_attributes_move_to_the_spec() {
        let crd =
            json!({"spec": {"versions": [version("v1", true, "a"), version("v2", false, "a")]}});
        let spec = InternalSpec::of(&crd);
        assert!(spec.top_schema().is_some());
        assert_eq!(spec.schema.per_version, vec![None, None]);
        assert!(spec.columns.top.is_none());
        assert_eq!(spec.columns.per_version, vec![None, None]);

        let crd =
            json!({"spec": {"versions": [version("v1", true, "a"), version("v2", false, "b")]}});
        let spec = InternalSpec::of(&crd);
        assert!(spec.top_schema().is_none());
        assert!(spec.schema.per_version.iter().all(Option::is_some));
    }

    #[test]
    fn versions_render_as_go_marshals_the_internal_type() {
        let crd = json!({"spec": {"versions": [
            {"name": "v1", "served": true, "storage": true,
             "additionalPrinterColumns": [{"name": "A", "type": "string", "jsonPath": ".a"}]},
            {"name": "v2", "served": false, "storage": true, "deprecated": true,
             "deprecationWarning": "<old>"}
        ]}});
        let spec = InternalSpec::of(&crd);
        assert_eq!(
            spec.render_versions(),
            concat!(
                "[{\"Name\":\"v1\",\"Served\":true,\"Storage\":true,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":null,\"Subresources\":null,",
                "\"AdditionalPrinterColumns\":[{\"Name\":\"A\",\"Type\":\"string\",\"Format\":\"\",\"Description\":\"\",\"Priority\":0,\"JSONPath\":\".a\"}],\"SelectableFields\":null},",
                "{\"Name\":\"v2\",\"Served\":false,\"Storage\":true,\"Deprecated\":true,\"DeprecationWarning\":\"\\u003cold\\u003e\",\"Schema\":null,\"Subresources\":null,",
                "\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}]"
            )
        );
        assert_eq!(InternalSpec::of(&json!({})).render_versions(), "null");
    }

    #[test]
    fn schemas_render_with_go_field_names() {
        let s = render_schema(&json!({"type": "object", "minimum": 1.5, "maximum": 1e22,
            "properties": {"b": {"type": "string"}, "a": {"type": "integer", "default": 3}}}));
        assert!(s.starts_with("{\"ID\":\"\",\"Schema\":\"\",\"Ref\":null,\"Description\":\"\",\"Type\":\"object\","), "{s}");
        assert!(s.contains("\"Maximum\":1e+22,"), "{s}");
        assert!(s.contains("\"Minimum\":1.5,"), "{s}");
        assert!(s.contains("\"Properties\":{\"a\":{\"ID\":\"\""), "{s}");
        assert!(s.contains("\"Default\":3,"), "{s}");
        assert!(
            s.ends_with("\"XListType\":null,\"XMapType\":null,\"XValidations\":null}"),
            "{s}"
        );
    }
}
