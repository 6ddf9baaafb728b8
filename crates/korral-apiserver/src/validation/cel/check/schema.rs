//! The CEL type of a value a structural schema describes, as upstream's
//! `k8s.io/apiserver/pkg/cel/common` `SchemaDeclType` derives it for `self` and `oldSelf`:
//! an object's properties become the fields of an object type (named after the rule's
//! variable, `selfType0.spec`...), `additionalProperties` a `map(string, T)`, arrays
//! `list(T)`, `integer` `int`, `number` `double`, `boolean` `bool`, strings `string` (or
//! `bytes`, `google.protobuf.Timestamp` and `google.protobuf.Duration` for the formats
//! `byte`, `date`/`date-time` and `duration`), `x-kubernetes-int-or-string` `dyn`. A schema
//! without a type (`x-kubernetes-preserve-unknown-fields` alone) has none: its property is not
//! a field. The root of a resource, and an embedded resource, always have `apiVersion`,
//! `kind` and `metadata` (`name`, `generateName`). Property names are escaped as upstream's
//! `Escape` does (`my-field` is `my__dash__field`, `namespace` is `__namespace__`); names
//! that cannot be escaped are left out.

use std::collections::BTreeMap;

use serde_json::Value;

use super::types::Ty;

/// The name upstream gives the type of `self` (it appends a random number).
pub const SELF_TYPE: &str = "selfType0";

/// Nesting past which a schema is typed `dyn`.
const MAX_DEPTH: usize = 64;

/// The type of `self` for rules at a node of schema `schema`; `root`: the node is the root
/// of a resource. `dyn` where the schema gives no type.
pub fn self_type(schema: &Value, root: bool) -> Ty {
    decl_type(schema, root, SELF_TYPE, 0, &mut Refs::none()).unwrap_or(Ty::Dyn)
}

/// The type of the root of a resource whose published OpenAPI schema is `schema`, named
/// `name` (its nested objects `name.spec`...), as upstream's admission policy type checker
/// derives it: every `$ref` (also wrapped in a one-entry `allOf`) is replaced by the schema
/// `resolve` finds for it, a reference met again inside itself is an object without fields
/// (upstream's `PopulateRefs`). `None` when the schema exposes nothing to CEL.
pub fn resource_type<'a>(schema: &'a Value, name: &str, resolve: Resolve<'a>) -> Option<Ty> {
    let mut refs = Refs {
        resolve: Some(resolve),
        open: Vec::new(),
    };
    decl_type(schema, true, name, 0, &mut refs)
}

/// Finds the schema a `$ref` names.
pub type Resolve<'a> = &'a dyn Fn(&str) -> Option<&'a Value>;

/// How `$ref`s are followed: not at all for structural schemas (CRDs have none), through the
/// resolver for published schemas; `open` holds the references being expanded.
struct Refs<'a> {
    resolve: Option<Resolve<'a>>,
    open: Vec<String>,
}

impl Refs<'_> {
    fn none() -> Self {
        Refs {
            resolve: None,
            open: Vec::new(),
        }
    }
}

/// The reference a schema stands for: its `$ref`, or one inside its `allOf`.
fn ref_of(s: &Value) -> Option<&str> {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        return Some(r);
    }
    s.get("allOf")
        .and_then(Value::as_array)?
        .iter()
        .find_map(ref_of)
}

fn is_true(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

fn string_type() -> Ty {
    Ty::Str
}

fn decl_type<'a>(
    s: &'a Value,
    root: bool,
    name: &str,
    depth: usize,
    refs: &mut Refs<'a>,
) -> Option<Ty> {
    if depth > MAX_DEPTH {
        return Some(Ty::Dyn);
    }
    if let Some(resolve) = refs.resolve
        && let Some(r) = ref_of(s)
    {
        if refs.open.iter().any(|o| o == r) {
            return Some(Ty::object(name, BTreeMap::new()));
        }
        let target = resolve(r)?;
        refs.open.push(r.to_string());
        let ty = decl_type(target, root, name, depth + 1, refs);
        refs.open.pop();
        return ty;
    }
    if is_true(s, "x-kubernetes-int-or-string") {
        return Some(Ty::Dyn);
    }
    let declared = s.get("type").and_then(Value::as_str).unwrap_or("");
    let ty = if declared.is_empty() && root {
        "object"
    } else {
        declared
    };
    match ty {
        "array" => {
            let items = s.get("items").filter(|i| i.is_object())?;
            let item = decl_type(
                items,
                is_true(items, "x-kubernetes-embedded-resource"),
                &format!("{name}.@idx"),
                depth + 1,
                refs,
            )?;
            Some(Ty::list(item))
        }
        "object" => {
            if let Some(add) = s.get("additionalProperties").filter(|a| a.is_object()) {
                let value = decl_type(
                    add,
                    is_true(add, "x-kubernetes-embedded-resource"),
                    &format!("{name}.@elem"),
                    depth + 1,
                    refs,
                )?;
                return Some(Ty::map(Ty::Str, value));
            }
            let mut fields = BTreeMap::new();
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (prop, sub) in props {
                    let Some(field) = escape(prop) else { continue };
                    let embedded = is_true(sub, "x-kubernetes-embedded-resource");
                    if let Some(t) =
                        decl_type(sub, embedded, &format!("{name}.{field}"), depth + 1, refs)
                    {
                        fields.insert(field, t);
                    }
                }
            }
            if root {
                fields
                    .entry("apiVersion".into())
                    .or_insert_with(string_type);
                fields.entry("kind".into()).or_insert_with(string_type);
                let metadata = fields
                    .entry("metadata".into())
                    .or_insert_with(|| Ty::object(format!("{name}.metadata"), BTreeMap::new()));
                if let Ty::Object(o) = metadata {
                    let mut o = (**o).clone();
                    o.fields.entry("name".into()).or_insert_with(string_type);
                    o.fields
                        .entry("generateName".into())
                        .or_insert_with(string_type);
                    *metadata = Ty::Object(std::sync::Arc::new(o));
                }
            }
            Some(Ty::object(name, fields))
        }
        "string" => Some(
            match s.get("format").and_then(Value::as_str).unwrap_or("") {
                "byte" => Ty::Bytes,
                "duration" => Ty::Duration,
                "date" | "date-time" => Ty::Timestamp,
                _ => Ty::Str,
            },
        ),
        "boolean" => Some(Ty::Bool),
        "number" => Some(Ty::Double),
        "integer" => Some(Ty::Int),
        _ => None,
    }
}

/// CEL's reserved words: a property of that name is `__word__`; no variable may be named so.
pub const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property name as CEL spells it (upstream's `Escape`), `None` when it cannot be.
pub fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/');
    let mut chars = name.chars();
    let first = chars.next()?;
    if first.is_ascii_digit() || !allowed(first) || !chars.all(allowed) {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn types_of_schema_nodes() {
        let schema = json!({"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "ratio": {"type": "number"},
            "name": {"type": "string"},
            "on": {"type": "boolean"},
            "data": {"type": "string", "format": "byte"},
            "at": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "ttl": {"type": "string", "format": "duration"},
            "port": {"x-kubernetes-int-or-string": true},
            "free": {"x-kubernetes-preserve-unknown-fields": true},
            "tags": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "my-field": {"type": "string"},
            "namespace": {"type": "string"},
            "a__b": {"type": "string"},
            "1st": {"type": "string"},
            "nested": {"type": "object", "properties": {"x": {"type": "integer"}}},
        }});
        let Ty::Object(o) = self_type(&schema, false) else {
            panic!("an object")
        };
        assert_eq!(o.name, "selfType0");
        let f = |n: &str| o.fields.get(n).map(Ty::to_string);
        assert_eq!(f("replicas").as_deref(), Some("int"));
        assert_eq!(f("ratio").as_deref(), Some("double"));
        assert_eq!(f("name").as_deref(), Some("string"));
        assert_eq!(f("on").as_deref(), Some("bool"));
        assert_eq!(f("data").as_deref(), Some("bytes"));
        assert_eq!(f("at").as_deref(), Some("google.protobuf.Timestamp"));
        assert_eq!(f("day").as_deref(), Some("google.protobuf.Timestamp"));
        assert_eq!(f("ttl").as_deref(), Some("google.protobuf.Duration"));
        assert_eq!(f("port").as_deref(), Some("dyn"));
        assert_eq!(f("free"), None);
        assert_eq!(f("tags").as_deref(), Some("list(string)"));
        assert_eq!(f("labels").as_deref(), Some("map(string, string)"));
        assert_eq!(f("my__dash__field").as_deref(), Some("string"));
        assert_eq!(f("__namespace__").as_deref(), Some("string"));
        assert_eq!(f("a__underscores__b").as_deref(), Some("string"));
        assert_eq!(f("1st"), None);
        assert_eq!(f("nested").as_deref(), Some("selfType0.nested"));
        // Not a resource root: no apiVersion.
        assert_eq!(f("apiVersion"), None);
    }

    #[test]
    fn resource_roots_have_type_and_object_meta() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                             "x-kubernetes-preserve-unknown-fields": true},
            }},
        }});
        let Ty::Object(root) = self_type(&schema, true) else {
            panic!("an object")
        };
        for f in ["apiVersion", "kind", "metadata", "spec"] {
            assert!(root.fields.contains_key(f), "{f}");
        }
        let Some(Ty::Object(md)) = root.fields.get("metadata") else {
            panic!("metadata")
        };
        assert_eq!(
            md.fields.keys().collect::<Vec<_>>(),
            ["generateName", "name"]
        );
        let Some(Ty::Object(spec)) = root.fields.get("spec") else {
            panic!("spec")
        };
        let Some(Ty::Object(template)) = spec.fields.get("template") else {
            panic!("template")
        };
        assert!(template.fields.contains_key("kind"));
    }

    #[test]
    fn published_schemas_have_their_references_resolved() {
        let models = json!({
            "Meta": {"type": "object", "properties": {
                "name": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
            "Node": {"type": "object", "properties": {
                "value": {"type": "integer"},
                "next": {"$ref": "#/c/Node"},
            }},
        });
        let resolve = |r: &str| models.get(r.strip_prefix("#/c/")?);
        let root = json!({"type": "object", "properties": {
            "metadata": {"allOf": [{"$ref": "#/c/Meta"}], "default": {}},
            "head": {"$ref": "#/c/Node"},
            "missing": {"$ref": "#/c/Missing"},
        }});
        let Some(Ty::Object(o)) = resource_type(&root, "Thing0", &resolve) else {
            panic!("an object")
        };
        let f = |n: &str| o.fields.get(n).cloned();
        let Some(Ty::Object(md)) = f("metadata") else {
            panic!("metadata")
        };
        assert_eq!(md.name, "Thing0.metadata");
        assert_eq!(
            md.fields.get("labels").map(Ty::to_string).as_deref(),
            Some("map(string, string)")
        );
        assert!(md.fields.contains_key("generateName"));
        let Some(Ty::Object(head)) = f("head") else {
            panic!("head")
        };
        assert_eq!(
            head.fields.get("value").map(Ty::to_string).as_deref(),
            Some("int")
        );
        // A reference met inside itself is an object without fields.
        let Some(Ty::Object(next)) = head.fields.get("next") else {
            panic!("next")
        };
        assert!(next.fields.is_empty());
        assert_eq!(f("missing"), None);
        // Structural schemas follow no references.
        let Ty::Object(plain) = self_type(&root, false) else {
            panic!("an object")
        };
        assert!(plain.fields.is_empty(), "{plain:?}");
    }

    #[test]
    fn untyped_nodes_are_dyn() {
        assert_eq!(
            self_type(
                &json!({"x-kubernetes-preserve-unknown-fields": true}),
                false
            ),
            Ty::Dyn
        );
        assert_eq!(self_type(&json!({"type": "array"}), false), Ty::Dyn);
    }
}
