//! The check a MutatingAdmissionPolicy's `ApplyConfiguration` passes before it is merged, as
//! upstream's type converter types it (structured-merge-diff's validation): every field must
//! be declared by the kind's schema (built-in OpenAPI models; a CRD's structural schema, where
//! `x-kubernetes-preserve-unknown-fields` admits any) and every value must have its field's
//! type. The errors are structured-merge-diff's: `.spec.bogus: field not declared in schema`,
//! `.spec.replicas: expected numeric (int or float), got string`, several as `errors:` lines.

use serde_json::Value;

use crate::registry::ResourceInfo;

/// The model of every object's `metadata` (a custom resource's too: upstream types it so).
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The schema of a string.
static STRING: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| serde_json::json!({"type": "string"}));

/// How deep a schema is followed (references included) before values are accepted whole.
const MAX_DEPTH: usize = 64;

/// Checks `config` against `info`'s schema; the error is upstream's text, `None` when it
/// types (or the kind has no schema to type it with).
pub(crate) fn check(info: &ResourceInfo, config: &Value) -> Option<String> {
    let root = match &info.custom {
        Some(custom) => Schema::Custom(custom.schema.as_deref()?),
        None => Schema::Builtin(crate::openapi_builtin::schema(
            &crate::openapi::model_name(&info.group, &info.version, &info.kind, false),
        )?),
    };
    let mut errors = Vec::new();
    walk(root, config, &mut String::new(), &mut errors, 0);
    match errors.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(
            std::iter::once("errors:".to_string())
                .chain(many.iter().map(|e| format!("  {e}")))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

/// A schema node: of a built-in model (references resolved through the built-in models) or
/// of a CRD's structural schema.
#[derive(Clone, Copy)]
enum Schema<'a> {
    /// A node of the built-in OpenAPI models.
    Builtin(&'a Value),
    /// A node of a structural schema.
    Custom(&'a Value),
}

/// What a schema node types its value as (structured-merge-diff's atoms).
enum Atom<'a> {
    /// Any value (free-form JSON, int-or-string is checked as a scalar).
    Any,
    /// A scalar of one kind.
    Scalar(Scalar),
    /// Int or string (structured-merge-diff's untyped scalar).
    AnyScalar,
    /// A list of items.
    List(Schema<'a>),
    /// An object with declared fields; unknown ones are refused unless `rest` types them.
    Struct(Schema<'a>, Option<Schema<'a>>),
}

/// The scalar kinds.
#[derive(Clone, Copy)]
enum Scalar {
    Numeric,
    String,
    Boolean,
}

/// Follows `$ref` and single-entry `allOf` wrappers of a built-in schema.
fn resolve(mut schema: &Value) -> &Value {
    for _ in 0..MAX_DEPTH {
        if let Some(name) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.rsplit('/').next())
            && let Some(target) = crate::openapi_builtin::schema(name)
        {
            schema = target;
            continue;
        }
        match schema.get("allOf").and_then(Value::as_array) {
            Some(all) if all.len() == 1 => schema = &all[0],
            _ => break,
        }
    }
    schema
}

impl<'a> Schema<'a> {
    /// The raw node, references resolved.
    fn node(self) -> &'a Value {
        match self {
            Schema::Builtin(s) => resolve(s),
            Schema::Custom(s) => s,
        }
    }

    /// A child node of the same origin.
    fn child(self, node: &'a Value) -> Schema<'a> {
        match self {
            Schema::Builtin(_) => Schema::Builtin(node),
            Schema::Custom(_) => Schema::Custom(node),
        }
    }

    /// How this node types its value.
    fn atom(self) -> Atom<'a> {
        let node = self.node();
        if node.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return Atom::AnyScalar;
        }
        let preserve = node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
        match node.get("type").and_then(Value::as_str) {
            Some("integer" | "number") => Atom::Scalar(Scalar::Numeric),
            Some("string") => Atom::Scalar(Scalar::String),
            Some("boolean") => Atom::Scalar(Scalar::Boolean),
            Some("array") => match node.get("items") {
                Some(items) => Atom::List(self.child(items)),
                None => Atom::Any,
            },
            Some("object") | None => {
                let properties = node.get("properties").and_then(Value::as_object);
                let rest = node.get("additionalProperties");
                match (properties, rest) {
                    (_, Some(rest)) if rest.is_object() => {
                        Atom::Struct(self, Some(self.child(rest)))
                    }
                    (Some(p), _) if !p.is_empty() && !preserve => Atom::Struct(self, None),
                    _ => Atom::Any,
                }
            }
            Some(_) => Atom::Any,
        }
    }

    /// The schema of field `name` of a struct node (`root`: of the object itself, where a
    /// custom resource has upstream's `apiVersion`, `kind` and `metadata` whatever its
    /// schema says).
    fn field(self, name: &str, root: bool) -> Option<Schema<'a>> {
        if let (Schema::Custom(_), true) = (self, root) {
            match name {
                "apiVersion" | "kind" => return Some(Schema::Builtin(&STRING)),
                "metadata" => {
                    return crate::openapi_builtin::schema(OBJECT_META).map(Schema::Builtin);
                }
                _ => {}
            }
        }
        let field = self.node().get("properties")?.get(name)?;
        Some(self.child(field))
    }
}

/// Checks `value` against `schema`, adding errors (prefixed with `path`) to `errors`.
fn walk(
    schema: Schema<'_>,
    value: &Value,
    path: &mut String,
    errors: &mut Vec<String>,
    depth: usize,
) {
    if value.is_null() || depth > MAX_DEPTH {
        return;
    }
    let mut fail = |message: String| {
        errors.push(if path.is_empty() {
            message
        } else {
            format!("{path}: {message}")
        });
    };
    match schema.atom() {
        Atom::Any => {}
        Atom::AnyScalar => {
            if value.is_array() || value.is_object() {
                fail(format!("expected any scalar, got {}", go_pointer(value)));
            }
        }
        Atom::Scalar(Scalar::Numeric) => {
            if !value.is_number() {
                fail(format!(
                    "expected numeric (int or float), got {}",
                    go_type(value)
                ));
            }
        }
        Atom::Scalar(Scalar::String) => {
            if !value.is_string() {
                fail(format!(
                    "expected string, got &value.valueUnstructured{{Value:{}}}",
                    go_syntax(value)
                ));
            }
        }
        Atom::Scalar(Scalar::Boolean) => {
            if !value.is_boolean() {
                fail(format!("expected boolean, got {}", go_pointer(value)));
            }
        }
        Atom::List(items) => {
            let Value::Array(list) = value else {
                fail(format!("expected list, got {}", go_pointer(value)));
                return;
            };
            for (i, item) in list.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(items, item, path, errors, depth + 1);
                path.truncate(len);
            }
        }
        Atom::Struct(fields, rest) => {
            let Value::Object(map) = value else {
                fail(format!("expected map, got {}", go_pointer(value)));
                return;
            };
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                match fields.field(key, depth == 0).or(rest) {
                    Some(child) => walk(child, &map[key.as_str()], path, errors, depth + 1),
                    None => {
                        errors.push(format!("{path}: field not declared in schema"));
                        path.truncate(len);
                        // Upstream stops at the first undeclared field of an object.
                        return;
                    }
                }
                path.truncate(len);
            }
        }
    }
}

/// Go's `%T` of a decoded JSON value.
fn go_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Go's `%v` of structured-merge-diff's pointer to a decoded JSON value: `&{3}`.
fn go_pointer(value: &Value) -> String {
    format!("&{{{}}}", go_plain(value))
}

/// Go's `%v` of a decoded JSON value: `3`, `abc`, `[1 2]`, `map[a:1]`.
fn go_plain(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(go_plain).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let entries: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}:{}", go_plain(&map[k.as_str()])))
                .collect();
            format!("map[{}]", entries.join(" "))
        }
        other => other.to_string(),
    }
}

/// Go's `%#v` of a decoded JSON value: `3`, `"abc"`, `[]interface {}{1, 2}`.
fn go_syntax(value: &Value) -> String {
    match value {
        Value::Null => "interface {}(nil)".to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => format!(
            "[]interface {{}}{{{}}}",
            items.iter().map(go_syntax).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let entries: Vec<String> = keys
                .iter()
                .map(|k| format!("{k:?}:{}", go_syntax(&map[k.as_str()])))
                .collect();
            format!("map[string]interface {{}}{{{}}}", entries.join(", "))
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn builtin(model: &str, value: &Value) -> Vec<String> {
        let schema = Schema::Builtin(crate::openapi_builtin::schema(model).expect("model"));
        let mut errors = Vec::new();
        walk(schema, value, &mut String::new(), &mut errors, 0);
        errors
    }

    const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

    #[test]
    fn undeclared_fields_and_wrong_types_are_refused() {
        assert!(
            builtin(
                DEPLOYMENT,
                &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"labels": {"a": "b"}},
                    "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}})
            )
            .is_empty()
        );
        assert_eq!(
            builtin(DEPLOYMENT, &json!({"spec": {"bogus": 1}})),
            [".spec.bogus: field not declared in schema"]
        );
        assert_eq!(
            builtin(DEPLOYMENT, &json!({"spec": {"replicas": "many"}})),
            [".spec.replicas: expected numeric (int or float), got string"]
        );
        assert_eq!(
            builtin(DEPLOYMENT, &json!({"metadata": {"labels": {"a": 1}}})),
            [".metadata.labels.a: expected string, got &value.valueUnstructured{Value:1}"]
        );
        assert_eq!(
            builtin(DEPLOYMENT, &json!({"spec": {"paused": "yes"}})),
            [".spec.paused: expected boolean, got &{yes}"]
        );
        assert_eq!(
            builtin(
                DEPLOYMENT,
                &json!({"spec": {"template": {"spec": {"containers": {"name": "c"}}}}})
            ),
            [".spec.template.spec.containers: expected list, got &{map[name:c]}"]
        );
        // Int-or-string fields take either.
        assert!(
            builtin(
                DEPLOYMENT,
                &json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}})
            )
            .is_empty()
        );
    }

    #[test]
    fn custom_schemas_admit_preserved_fields() {
        let schema: &'static Value = Box::leak(Box::new(json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})));
        let run = |value: Value| {
            let mut errors = Vec::new();
            walk(
                Schema::Custom(schema),
                &value,
                &mut String::new(),
                &mut errors,
                0,
            );
            errors
        };
        assert!(
            run(json!({"status": {"anything": [1]}, "metadata": {"labels": {"a": "b"}}}))
                .is_empty()
        );
        assert_eq!(
            run(json!({"spec": {"size": true, "other": 1}})),
            [".spec.other: field not declared in schema"]
        );
        assert_eq!(
            run(json!({"spec": {"size": true}})),
            [".spec.size: expected numeric (int or float), got bool"]
        );
        assert_eq!(
            run(json!({"metadata": {"bogus": 1}})),
            [".metadata.bogus: field not declared in schema"]
        );
    }
}
