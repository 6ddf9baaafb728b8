//! OpenAPI schemas of the built-in kinds, with upstream's descriptions.
//!
//! They come from `k8s-openapi`'s `JsonSchema` implementations (generated from the upstream
//! OpenAPI document, doc comments included), collected once into OpenAPI 3 component schemas
//! named as upstream names them (`io.k8s.api.apps.v1.Deployment`), so `kubectl explain
//! deployment.spec.replicas` reads the same text it reads from a cluster.

use std::collections::{BTreeSet, HashMap};
use std::sync::{LazyLock, OnceLock};

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

pub(crate) mod merge_rules;

use crate::error::ApiError;
use crate::objects::FieldValidation;
use crate::registry::ResourceInfo;
use crate::validation::enums::{self, At, Enum};
use crate::validation::schema;

/// The built-in schemas and what building them found.
struct Built {
    /// Component schemas by model name, every model a built-in kind refers to included.
    definitions: Map<String, Value>,
    /// Where each kind holds values that merge as a whole, by root model name.
    atomic: HashMap<String, merge_rules::AtomicPaths>,
}

static BUILT: LazyLock<Built> = LazyLock::new(build);

/// Component schemas by model name, every model a built-in kind refers to included.
static DEFINITIONS: LazyLock<&'static Map<String, Value>> = LazyLock::new(|| &BUILT.definitions);

fn build() -> Built {
    let mut generator = SchemaSettings::openapi3().into_generator();
    crate::kinds::collect_schemas(&mut generator);
    let mut definitions = generator.take_definitions(true);
    publish_enums(&mut definitions);
    let walked = merge_rules::publish(
        &mut definitions,
        &crate::kinds::builtin_resources(),
        root_model,
    );
    for disagreement in walked.disagreements {
        tracing::warn!(?disagreement, "the merge rules of a shared model disagree");
    }
    Built {
        definitions,
        atomic: walked.atomic,
    }
}

/// Where `info`'s objects hold values that merge as a whole (structures and maps upstream
/// declares atomic), found in its schema; `None` for a kind without one.
pub(crate) fn atomic_paths(info: &ResourceInfo) -> Option<&'static merge_rules::AtomicPaths> {
    BUILT.atomic.get(&root_model(info))
}

/// The model name of a built-in kind's objects (`io.k8s.api.apps.v1.Deployment`).
fn root_model(info: &ResourceInfo) -> String {
    crate::openapi::model_name(&info.group, &info.version, &info.kind, false)
}

/// Publishes the values of the enumerated properties as upstream's OpenAPI does (the
/// generated schemas carry none): `enum` on the property (on its `items` for a list, its
/// `additionalProperties` for a map), sorted, and for a property of the enum type itself a
/// "Possible enum values" paragraph appended to its description, one line per value.
fn publish_enums(definitions: &mut Map<String, Value>) {
    for field in enums::fields() {
        let Some(property) = definitions
            .get_mut(&field.model())
            .and_then(|model| model.get_mut("properties"))
            .and_then(|properties| properties.get_mut(field.property()))
        else {
            continue;
        };
        let target = match field.at() {
            At::Field => Some(&mut *property),
            At::Items => property.get_mut("items"),
            At::Values => property.get_mut("additionalProperties"),
        };
        if let Some(Value::Object(target)) = target {
            target.insert("enum".into(), published_values(field.values()));
        }
        if field.at() == At::Field
            && let Value::Object(property) = property
        {
            let description = property
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            let description = with_enum_paragraph(description, field.values());
            property.insert("description".into(), Value::String(description));
        }
    }
}

/// The values as upstream's OpenAPI lists them: sorted as Go sorts their quoted literals.
fn published_values(values: &Enum) -> Value {
    let mut sorted: Vec<&str> = values.values().collect();
    sorted.sort_by_cached_key(|v| format!("{v}\""));
    Value::Array(
        sorted
            .into_iter()
            .map(|v| Value::String(v.to_owned()))
            .collect(),
    )
}

/// `description` followed by upstream's paragraph listing the values, each line
/// `` - `"Value"` what it means``, lines sorted.
fn with_enum_paragraph(description: &str, values: &Enum) -> String {
    let mut lines: Vec<String> = values
        .described()
        .iter()
        .map(|(value, text)| format!(" - `{value:?}` {text}").trim_end().to_owned())
        .collect();
    lines.sort();
    let paragraph = format!("Possible enum values:\n{}", lines.join("\n"));
    if description.is_empty() {
        paragraph
    } else {
        format!("{description}\n\n{paragraph}")
    }
}

/// Field validation of a built-in object: the fields upstream's types do not know are dropped,
/// as decoding into them does (refused under `Strict`, warned about under `Warn`); a value of
/// the wrong JSON type cannot be decoded at all: 400, whatever the field validation, naming the
/// first such field. Returns the warnings.
pub(crate) fn decode_builtin(
    info: &ResourceInfo,
    obj: &mut Value,
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let Some(model) = model_of_kind(info) else {
        return Ok(Vec::new());
    };
    let mut path = String::new();
    let mut mismatches = Vec::new();
    model.type_rec(0, obj, &mut path, &mut mismatches, 1, 0);
    if let Some(mismatch) = mismatches.first() {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {mismatch}",
            kind = info.kind,
            version = info.version,
        )));
    }
    let mut unknown = Vec::new();
    model.prune_rec(0, obj, &mut path, &mut unknown, 0);
    unknown.sort();
    let warnings: Vec<String> = unknown
        .iter()
        .map(|p| schema::unknown_field_message(p))
        .collect();
    match validation {
        FieldValidation::Strict if !warnings.is_empty() => Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {}",
            warnings.join(", "),
            kind = info.kind,
            version = info.version,
        ))),
        FieldValidation::Warn => Ok(warnings),
        _ => Ok(Vec::new()),
    }
}

/// The schema of a built-in model (`io.k8s.api.core.v1.Pod`), if known.
pub fn schema(model: &str) -> Option<&'static Value> {
    DEFINITIONS.get(model)
}

/// `model` and every model it refers to, directly or not (through `$ref`), in name order.
pub fn closure(model: &str) -> Vec<(&'static str, &'static Value)> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![model.to_string()];
    while let Some(name) = stack.pop() {
        let Some((key, value)) = DEFINITIONS.get_key_value(&name) else {
            continue;
        };
        if !seen.insert(key.as_str()) {
            continue;
        }
        refs(value, &mut stack);
    }
    seen.into_iter()
        .filter_map(|k| DEFINITIONS.get(k).map(|v| (k, v)))
        .collect()
}

/// The upstream model name of a built-in kind, when its schema is known.
#[cfg(test)]
pub fn model_for(group: &str, version: &str, kind: &str) -> Option<String> {
    let name = crate::openapi::model_name(group, version, kind, false);
    DEFINITIONS.contains_key(&name).then_some(name)
}

/// Removes the fields of a built-in object that its schema does not know (as decoding into the
/// upstream types drops them) and answers their paths (`spec.bogus`,
/// `spec.containers[0].bogus`), sorted. Objects whose schema lists no properties (free-form
/// JSON such as `RawExtension`) are kept whole.
#[cfg(test)]
pub fn prune_unknown(model: &str, value: &mut Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(model) = self::model(model) {
        model.prune_rec(0, value, &mut String::new(), &mut out, 0);
    }
    out.sort();
    out
}

/// A value of a built-in object whose JSON type is not the one its field has upstream (what
/// decoding into the upstream Go types refuses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMismatch {
    /// Where, e.g. `spec.replicas` or `data.key`.
    pub path: String,
    /// The JSON type found (`array`, `string`, …).
    pub found: &'static str,
    /// The type the field has (`string`, `integer`, …).
    pub expected: String,
}

impl std::fmt::Display for TypeMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "json: cannot unmarshal {} into field {} of type {}",
            self.found, self.path, self.expected
        )
    }
}

/// The fields of a built-in object whose values have the wrong JSON type for the upstream
/// schema, in document order (at most `limit`). `null` is accepted anywhere (it decodes as the
/// zero value); int-or-string fields, free-form JSON (CRD defaults, enums, examples) and
/// objects without a declared type are not checked.
#[cfg(test)]
pub fn type_mismatches(model: &str, value: &Value, limit: usize) -> Vec<TypeMismatch> {
    let mut out = Vec::new();
    if let Some(model) = self::model(model) {
        model.type_rec(0, value, &mut String::new(), &mut out, limit, 0);
    }
    out
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn matches_type(expected: &str, value: &Value) -> bool {
    match expected {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => true,
    }
}

/// The model of free-form JSON values in CRD schemas (`default`, `enum`, `example`), whose
/// generated schema claims `object` although any JSON value is allowed.
const FREE_FORM_JSON: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON";

/// Follows `$ref` and single-entry `allOf` wrappers to the schema that describes a value.
fn resolve(mut schema: &'static Value) -> &'static Value {
    for _ in 0..32 {
        if let Some(Value::String(r)) = schema.get("$ref")
            && let Some(target) = r.rsplit('/').next().and_then(|n| DEFINITIONS.get(n))
        {
            schema = target;
            continue;
        }
        if let Some(Value::Array(all)) = schema.get("allOf")
            && all.len() == 1
        {
            schema = &all[0];
            continue;
        }
        break;
    }
    schema
}

/// What decoding checks of one schema node, its `$ref`s and single-entry `allOf`s followed.
#[derive(Debug, Default)]
struct Shape {
    /// The JSON type of its values (`string`, `integer`, …), when declared.
    ty: Option<&'static str>,
    /// Not type-checked: int-or-string, unknown-preserving and free-form JSON values.
    unchecked: bool,
    /// The declared properties of an object.
    properties: Option<HashMap<&'static str, usize>>,
    /// The schema of an object's other properties (a map's values).
    additional: Option<usize>,
    /// The schema of an array's items.
    items: Option<usize>,
}

/// A built-in model compiled into [`Shape`]s (it and every model it refers to), so that
/// decoding a request walks indices and hashes instead of looking up `$ref` names and schema
/// keywords per field. Shape 0 is the model's.
struct Model {
    /// The shapes; children are indices into this table.
    shapes: Vec<Shape>,
}

/// Each built-in model, compiled on first use (a server start decodes a few kinds only).
static MODELS: LazyLock<HashMap<&'static str, OnceLock<Model>>> = LazyLock::new(|| {
    DEFINITIONS
        .keys()
        .map(|name| (name.as_str(), OnceLock::new()))
        .collect()
});

/// The compiled model named `name` (`io.k8s.api.core.v1.Pod`), if known.
fn model(name: &str) -> Option<&'static Model> {
    let (name, cell) = MODELS.get_key_value(name)?;
    let schema = DEFINITIONS.get(*name)?;
    Some(cell.get_or_init(|| Model::compile(schema)))
}

/// The compiled model of a built-in kind, if its schema is known.
fn model_of_kind(info: &ResourceInfo) -> Option<&'static Model> {
    model(&root_model(info))
}

impl Model {
    fn compile(schema: &'static Value) -> Self {
        let mut compiler = ShapeCompiler {
            shapes: Vec::new(),
            seen: HashMap::new(),
            free_form: DEFINITIONS.get(FREE_FORM_JSON),
        };
        compiler.shape(schema);
        Model {
            shapes: compiler.shapes,
        }
    }

    /// Appends to `out` the values under `value` whose JSON type is not their field's (at
    /// most `limit`); `path` is where `value` is and is left as it was found.
    fn type_rec(
        &self,
        shape: usize,
        value: &Value,
        path: &mut String,
        out: &mut Vec<TypeMismatch>,
        limit: usize,
        depth: usize,
    ) {
        if depth > 64 || out.len() >= limit || value.is_null() {
            return;
        }
        let Some(shape) = self.shapes.get(shape) else {
            return;
        };
        if shape.unchecked {
            return;
        }
        if let Some(expected) = shape.ty
            && !matches_type(expected, value)
        {
            out.push(TypeMismatch {
                path: if path.is_empty() {
                    "(root)".to_owned()
                } else {
                    path.clone()
                },
                found: json_type(value),
                expected: expected.to_owned(),
            });
            return;
        }
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let sub = shape
                        .properties
                        .as_ref()
                        .and_then(|p| p.get(k.as_str()).copied())
                        .or(shape.additional);
                    if let Some(sub) = sub {
                        let len = push_key(path, k);
                        self.type_rec(sub, v, path, out, limit, depth + 1);
                        path.truncate(len);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(sub) = shape.items {
                    for (i, item) in items.iter().enumerate() {
                        let len = push_index(path, i);
                        self.type_rec(sub, item, path, out, limit, depth + 1);
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }

    /// Removes the fields under `value` that its schema does not know and appends their
    /// paths to `out`; `path` is where `value` is and is left as it was found.
    fn prune_rec(
        &self,
        shape: usize,
        value: &mut Value,
        path: &mut String,
        out: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > 64 {
            return;
        }
        let Some(shape) = self.shapes.get(shape) else {
            return;
        };
        match value {
            Value::Object(map) => {
                if shape.properties.is_none() && shape.additional.is_none() {
                    return;
                }
                let mut unknown = Vec::new();
                for (k, v) in map.iter_mut() {
                    let sub = shape
                        .properties
                        .as_ref()
                        .and_then(|p| p.get(k.as_str()).copied())
                        .or(shape.additional);
                    let len = push_key(path, k);
                    match sub {
                        Some(sub) => self.prune_rec(sub, v, path, out, depth + 1),
                        None => unknown.push((k.clone(), path.clone())),
                    }
                    path.truncate(len);
                }
                for (k, child) in unknown {
                    map.remove(&k);
                    out.push(child);
                }
            }
            Value::Array(items) => {
                if let Some(sub) = shape.items {
                    for (i, item) in items.iter_mut().enumerate() {
                        let len = push_index(path, i);
                        self.prune_rec(sub, item, path, out, depth + 1);
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Appends `.key` (or `key` at the root) to `path`; answers the length to truncate back to.
fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    if len > 0 {
        path.push('.');
    }
    path.push_str(key);
    len
}

/// Appends `[index]` to `path`; answers the length to truncate back to.
fn push_index(path: &mut String, index: usize) -> usize {
    use std::fmt::Write as _;
    let len = path.len();
    let _ = write!(path, "[{index}]");
    len
}

/// Builds the [`Shape`] table, one shape per distinct schema node reached.
struct ShapeCompiler {
    shapes: Vec<Shape>,
    /// The shape of each schema node already compiled, by address (nodes live in
    /// [`DEFINITIONS`] for the life of the process).
    seen: HashMap<*const Value, usize>,
    free_form: Option<&'static Value>,
}

impl ShapeCompiler {
    /// The index of `schema`'s shape, compiling it (and what it refers to) on first sight.
    fn shape(&mut self, schema: &'static Value) -> usize {
        let schema = resolve(schema);
        let address: *const Value = schema;
        if let Some(&index) = self.seen.get(&address) {
            return index;
        }
        // Claimed before the children, so recursive models refer back to it.
        let index = self.shapes.len();
        self.shapes.push(Shape::default());
        self.seen.insert(address, index);
        let unchecked = self
            .free_form
            .is_some_and(|json| std::ptr::eq(json, schema))
            || schema.get("x-kubernetes-int-or-string").is_some()
            || schema.get("x-kubernetes-preserve-unknown-fields").is_some();
        let ty = match schema.get("type") {
            Some(Value::String(ty)) => Some(ty.as_str()),
            _ => None,
        };
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, sub)| (name.as_str(), self.shape(sub)))
                    .collect()
            });
        let additional = schema
            .get("additionalProperties")
            .filter(|a| a.is_object())
            .map(|sub| self.shape(sub));
        let items = schema.get("items").map(|sub| self.shape(sub));
        self.shapes[index] = Shape {
            ty,
            unchecked,
            properties,
            additional,
            items,
        };
        index
    }
}

fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref")
                && let Some(name) = r.rsplit('/').next()
            {
                out.push(name.to_string());
            }
            m.values().for_each(|v| refs(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deployment_schema_has_upstream_descriptions_and_references() {
        let d = schema("io.k8s.api.apps.v1.Deployment").expect("deployment");
        assert_eq!(
            d["description"],
            "Deployment enables declarative updates for Pods and ReplicaSets."
        );
        let names: Vec<&str> = closure("io.k8s.api.apps.v1.Deployment")
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert!(names.contains(&"io.k8s.api.apps.v1.DeploymentSpec"));
        assert!(names.contains(&"io.k8s.api.core.v1.PodSpec"));
        assert!(names.contains(&"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        let spec = schema("io.k8s.api.apps.v1.DeploymentSpec").expect("spec");
        assert!(
            spec["properties"]["replicas"]["description"]
                .as_str()
                .is_some_and(|s| s.starts_with("Number of desired pods"))
        );
        // References keep their description beside them as `allOf` (OpenAPI 3.0 ignores
        // siblings of `$ref`).
        let template = &spec["properties"]["template"];
        assert!(template.get("$ref").is_none() || template.get("description").is_none());
    }

    #[test]
    fn wrong_json_types_in_builtins_are_found_with_paths() {
        let cm = model_for("", "v1", "ConfigMap").expect("model");
        let bad = serde_json::json!({
            "metadata": {"name": "c", "labels": {"a": 1}},
            "data": {"k": ["nested"], "ok": "v"},
            "immutable": "yes"
        });
        let found: Vec<String> = type_mismatches(&cm, &bad, 10)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            [
                "json: cannot unmarshal array into field data.k of type string",
                "json: cannot unmarshal string into field immutable of type boolean",
                "json: cannot unmarshal number into field metadata.labels.a of type string",
            ]
        );
        let deployment = model_for("apps", "v1", "Deployment").expect("model");
        let fine = serde_json::json!({
            "metadata": {"name": "d", "annotations": null},
            "spec": {"replicas": 2.0, "selector": {"matchLabels": {"a": "b"}},
                "strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}},
                "template": {"spec": {"containers": [{"name": "c", "image": "i",
                    "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}]}}}
        });
        assert_eq!(type_mismatches(&deployment, &fine, 10), []);
        let half = serde_json::json!({"spec": {"replicas": 1.5}});
        assert_eq!(type_mismatches(&deployment, &half, 10).len(), 1);
        let crd =
            model_for("apiextensions.k8s.io", "v1", "CustomResourceDefinition").expect("model");
        let free_form = serde_json::json!({"spec": {"group": "g", "versions": [{"name": "v1",
            "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
            "properties": {"size": {"type": "integer", "default": 3, "enum": [1, 3]}}}}}]}});
        assert_eq!(type_mismatches(&crd, &free_form, 10), []);
    }

    #[test]
    fn unknown_fields_of_builtins_are_pruned_with_paths() {
        let model = model_for("apps", "v1", "Deployment").expect("model");
        let mut d = serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"a": "b"}, "bogusMeta": 1},
            "spec": {
                "replicas": 1, "bogus": true,
                "selector": {"matchLabels": {"a": "b"}},
                "template": {"spec": {"containers": [
                    {"name": "c", "image": "i", "extra": 1,
                     "resources": {"limits": {"cpu": "1"}},
                     "ports": [{"containerPort": 80, "nope": 2}]}
                ]}}
            }
        });
        let pruned = prune_unknown(&model, &mut d);
        assert_eq!(
            pruned,
            [
                "metadata.bogusMeta",
                "spec.bogus",
                "spec.template.spec.containers[0].extra",
                "spec.template.spec.containers[0].ports[0].nope",
            ]
        );
        assert_eq!(d["metadata"]["labels"]["a"], "b");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"],
            "1"
        );
        assert!(d["spec"].get("bogus").is_none());
        // A known object is left alone.
        let mut cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"k": "v"}, "binaryData": {}, "immutable": false});
        let model = model_for("", "v1", "ConfigMap").expect("model");
        assert!(prune_unknown(&model, &mut cm).is_empty());
    }

    #[test]
    fn enum_properties_carry_upstreams_values_and_paragraph() {
        let pod_spec = schema("io.k8s.api.core.v1.PodSpec").expect("pod spec");
        let restart = &pod_spec["properties"]["restartPolicy"];
        assert_eq!(
            restart["enum"],
            serde_json::json!(["Always", "Never", "OnFailure"])
        );
        assert_eq!(restart["type"], "string");
        let description = restart["description"].as_str().expect("description");
        assert!(description.starts_with("Restart policy for all containers within the pod."));
        assert!(
            description.ends_with(
                "#restart-policy\n\nPossible enum values:\n - `\"Always\"`\n - `\"Never\"`\n - `\"OnFailure\"`"
            ),
            "{description}"
        );
        let container = schema("io.k8s.api.core.v1.Container").expect("container");
        let pull = &container["properties"]["imagePullPolicy"];
        assert_eq!(
            pull["enum"],
            serde_json::json!(["Always", "IfNotPresent", "Never"])
        );
        assert!(pull["description"].as_str().is_some_and(|d| d.ends_with(
            "Possible enum values:\n - `\"Always\"` means that kubelet always attempts to pull the latest image. Container will fail If the pull fails.\n - `\"IfNotPresent\"` means that kubelet pulls if the image isn't present on disk. Container will fail if the image isn't present and the pull fails.\n - `\"Never\"` means that kubelet never pulls an image, but only uses a local image. Container will fail if the image isn't present"
        )));
        // Lists carry the values on their items, maps on their values, without a paragraph.
        let claim = schema("io.k8s.api.core.v1.PersistentVolumeClaimSpec").expect("claim");
        let modes = &claim["properties"]["accessModes"];
        assert_eq!(
            modes["items"]["enum"],
            serde_json::json!([
                "ReadOnlyMany",
                "ReadWriteMany",
                "ReadWriteOnce",
                "ReadWriteOncePod"
            ])
        );
        assert!(modes.get("enum").is_none());
        assert!(
            !modes["description"]
                .as_str()
                .unwrap_or("")
                .contains("Possible enum values")
        );
        let status = schema("io.k8s.api.core.v1.PersistentVolumeClaimStatus").expect("status");
        assert_eq!(
            status["properties"]["allocatedResourceStatuses"]["additionalProperties"]["enum"][0],
            "ControllerResizeInProgress"
        );
        // Go sorts the quoted literals: the empty value first.
        let service = schema("io.k8s.api.core.v1.ServiceSpec").expect("service spec");
        assert_eq!(
            service["properties"]["ipFamilies"]["items"]["enum"],
            serde_json::json!(["", "IPv4", "IPv6"])
        );
        let apps = schema("io.k8s.api.apps.v1.DeploymentStrategy").expect("strategy");
        assert_eq!(
            apps["properties"]["type"]["enum"],
            serde_json::json!(["Recreate", "RollingUpdate"])
        );
    }

    #[test]
    fn every_enum_of_the_table_lands_on_a_string_property() {
        for field in enums::fields() {
            let model = field.model();
            let property = schema(&model)
                .and_then(|m| m.get("properties"))
                .and_then(|p| p.get(field.property()))
                .unwrap_or_else(|| panic!("{model}.{} is not in the schemas", field.property()));
            let target = match field.at() {
                At::Field => property,
                At::Items => &property["items"],
                At::Values => &property["additionalProperties"],
            };
            assert_eq!(target["type"], "string", "{model}.{}", field.property());
            let published = target["enum"].as_array().expect("enum");
            assert_eq!(published.len(), field.values().values().count());
            if field.at() == At::Field {
                let description = property["description"].as_str().unwrap_or("");
                assert_eq!(
                    description.matches("Possible enum values:").count(),
                    1,
                    "{model}.{}",
                    field.property()
                );
            }
        }
    }

    #[test]
    fn enum_paragraph_without_a_description_is_the_paragraph_alone() {
        assert_eq!(
            with_enum_paragraph("", &enums::PATH_TYPE).lines().next(),
            Some("Possible enum values:")
        );
        assert_eq!(
            published_values(&enums::SIGNAL)
                .as_array()
                .map(|a| a[..3].to_vec()),
            Some(vec![
                serde_json::json!("SIGABRT"),
                serde_json::json!("SIGALRM"),
                serde_json::json!("SIGBUS")
            ])
        );
    }

    #[test]
    fn every_served_builtin_has_a_schema() {
        for m in [
            "io.k8s.api.core.v1.Pod",
            "io.k8s.api.core.v1.ConfigMap",
            "io.k8s.api.apps.v1.StatefulSet",
            "io.k8s.api.batch.v1.CronJob",
            "io.k8s.api.coordination.v1.Lease",
            "io.k8s.api.rbac.v1.ClusterRoleBinding",
            "io.k8s.api.events.v1.Event",
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        ] {
            assert!(schema(m).is_some(), "{m}");
        }
    }
}
