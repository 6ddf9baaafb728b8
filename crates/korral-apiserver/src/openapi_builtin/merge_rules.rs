//! How the built-in kinds' lists and fields merge, published in their schemas as upstream's
//! OpenAPI does: `x-kubernetes-list-type` and `x-kubernetes-list-map-keys` (server-side apply),
//! `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` (strategic merge patch).
//!
//! kubectl computes client-side apply patches from these extensions, so they must say what
//! the server's patch and apply code do: they are read from the same rules
//! ([`crate::kinds::lists`]), walking each kind's model from its root so that every property
//! is looked up at the path the rules are written for. A property reached from several kinds
//! (a `PodSpec` under a Pod, a Deployment, a CronJob …) must get the same rule from each; a
//! disagreement is a fault of the rules, reported by [`publish`] and refused by the tests.
//!
//! The same walk finds where each kind holds the structures and maps that merge as a whole
//! ([`crate::kinds::atomic`]), for server-side apply, and publishes them as
//! `x-kubernetes-map-type: atomic`.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::kinds::atomic;
use crate::kinds::lists::{self, ListRule, PatchDirective};
use crate::registry::ResourceInfo;

/// What one property of a model publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Published {
    /// For a list, how it merges (`None` inside: atomic without upstream saying so,
    /// published as nothing).
    list: Option<Option<ListRule>>,
    /// Its patch directive, if it has one.
    directive: Option<PatchDirective>,
}

/// Two kinds' paths reaching the same model property with different rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Disagreement {
    /// The model (`io.k8s.api.core.v1.PodSpec`) and its property (`volumes`).
    pub property: String,
    /// The first path that reached it (`Pod spec.volumes`) and what it published.
    pub first: (String, Published),
    /// A later path and what it would have published.
    pub other: (String, Published),
}

/// Where one kind's objects hold values that merge as a whole, by their field names (list
/// items at their list's path, as server-side apply names them).
#[derive(Debug, Default)]
pub(crate) struct AtomicPaths {
    /// Paths without map keys (`spec.selector`, `metadata.ownerReferences`), looked up by
    /// the walk's field names without joining them.
    exact: HashSet<Vec<String>>,
    /// Paths crossing a map's values, `*` standing for any key.
    patterns: Vec<Vec<String>>,
}

impl AtomicPaths {
    fn insert(&mut self, path: &[String]) {
        if path.iter().any(|s| s == "*") {
            self.patterns.push(path.to_vec());
        } else {
            self.exact.insert(path.to_vec());
        }
    }

    /// Whether the value at `names` merges as a whole.
    pub(crate) fn contains(&self, names: &[String]) -> bool {
        if names.is_empty() {
            return false;
        }
        self.exact.contains(names)
            || self.patterns.iter().any(|p| {
                p.len() == names.len() && p.iter().zip(names).all(|(p, n)| p == "*" || p == n)
            })
    }
}

/// What [`publish`] found besides the extensions it added.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// Where the rules disagree (the first rule found is published).
    pub disagreements: Vec<Disagreement>,
    /// Each kind's atomic values, by the kind's root model name.
    pub atomic: HashMap<String, AtomicPaths>,
}

/// Adds the merge extensions to the properties of `definitions` reached from the root models
/// of `resources` (named by `model_of`) and `x-kubernetes-map-type: atomic` to the atomic
/// structures and maps; answers where the rules disagree and where each kind holds atomic
/// values.
pub(crate) fn publish(
    definitions: &mut Map<String, Value>,
    resources: &[ResourceInfo],
    model_of: impl Fn(&ResourceInfo) -> String,
) -> Walked {
    let mut found = BTreeMap::new();
    let mut walked = Walked::default();
    for info in resources {
        let root = model_of(info);
        let mut walk = Walk {
            definitions,
            info,
            path: Vec::new(),
            stack: Vec::new(),
            found: &mut found,
            disagreements: &mut walked.disagreements,
            atomic: AtomicPaths::default(),
        };
        walk.model(&root);
        let atomic = walk.atomic;
        walked.atomic.insert(root, atomic);
    }
    for model in atomic::STRUCTS {
        if let Some(Value::Object(target)) = definitions.get_mut(*model) {
            target.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }
    for (model, property) in atomic::MAPS {
        if let Some(Value::Object(target)) = definitions
            .get_mut(*model)
            .and_then(|m| m.get_mut("properties"))
            .and_then(|p| p.get_mut(*property))
        {
            target.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }
    for ((model, property), (_, published)) in found {
        let Some(Value::Object(target)) = definitions
            .get_mut(&model)
            .and_then(|m| m.get_mut("properties"))
            .and_then(|p| p.get_mut(&property))
        else {
            continue;
        };
        for (key, value) in extensions(published) {
            target.insert(key.to_string(), value);
        }
    }
    walked
}

/// The extensions of one property, as upstream names and spells them.
fn extensions(published: Published) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let mut strategies: Vec<&str> = Vec::new();
    match published.list.flatten() {
        Some(ListRule::Map { patch_key, keys }) => {
            out.push(("x-kubernetes-list-type", json!("map")));
            out.push(("x-kubernetes-list-map-keys", json!(keys)));
            out.push(("x-kubernetes-patch-merge-key", json!(patch_key)));
            strategies.push("merge");
        }
        Some(ListRule::ApplyMap { keys }) => {
            out.push(("x-kubernetes-list-type", json!("map")));
            out.push(("x-kubernetes-list-map-keys", json!(keys)));
        }
        Some(ListRule::PatchMap { patch_key }) => {
            out.push(("x-kubernetes-list-type", json!("atomic")));
            out.push(("x-kubernetes-patch-merge-key", json!(patch_key)));
            strategies.push("merge");
        }
        Some(ListRule::Set) => {
            out.push(("x-kubernetes-list-type", json!("set")));
            strategies.push("merge");
        }
        Some(ListRule::ApplySet) => out.push(("x-kubernetes-list-type", json!("set"))),
        Some(ListRule::Atomic) => out.push(("x-kubernetes-list-type", json!("atomic"))),
        None => {}
    }
    match published.directive {
        Some(PatchDirective::RetainKeys) => strategies.push("retainKeys"),
        Some(PatchDirective::Replace) => strategies.push("replace"),
        None => {}
    }
    if !strategies.is_empty() {
        out.push(("x-kubernetes-patch-strategy", json!(strategies.join(","))));
    }
    out
}

/// The model a property's schema refers to: its `$ref`, or that of a one-entry `allOf`.
fn reference(schema: &Value) -> Option<&str> {
    let target = match schema.get("allOf") {
        Some(Value::Array(all)) if all.len() == 1 => &all[0],
        _ => schema,
    };
    target.get("$ref")?.as_str()?.rsplit('/').next()
}

/// Whether a property's schema describes a list.
fn is_list(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("array") || schema.get("items").is_some()
}

/// One kind's walk through its models.
struct Walk<'a> {
    definitions: &'a Map<String, Value>,
    info: &'a ResourceInfo,
    /// The path of the property being visited (field names; `*` for a map's values).
    path: Vec<String>,
    /// The models being visited, outermost first (recursive models are visited once).
    stack: Vec<String>,
    /// What each `(model, property)` publishes, with the first path that said so.
    found: &'a mut BTreeMap<(String, String), (String, Published)>,
    disagreements: &'a mut Vec<Disagreement>,
    /// The kind's atomic values found so far.
    atomic: AtomicPaths,
}

impl Walk<'_> {
    fn model(&mut self, name: &str) {
        if self.stack.iter().any(|m| m == name) {
            return;
        }
        let definitions = self.definitions;
        let Some(properties) = definitions
            .get(name)
            .and_then(|m| m.get("properties"))
            .and_then(Value::as_object)
        else {
            return;
        };
        self.stack.push(name.to_string());
        for (property, schema) in properties {
            self.path.push(property.clone());
            self.property(name, property, schema);
            self.path.pop();
        }
        self.stack.pop();
    }

    fn property(&mut self, model: &str, property: &str, schema: &Value) {
        let segments: Vec<&str> = self.path.iter().map(String::as_str).collect();
        let published = Published {
            list: is_list(schema).then(|| {
                lists::rule(self.info, &self.path).or_else(|| {
                    atomic::declared_atomic_list(model, property).then_some(ListRule::Atomic)
                })
            }),
            directive: lists::directive(self.info, &segments),
        };
        if published.list.is_some() || published.directive.is_some() {
            let here = format!("{} {}", self.info.kind, self.path.join("."));
            let key = (model.to_string(), property.to_string());
            match self.found.get(&key) {
                None => {
                    self.found.insert(key, (here, published));
                }
                Some((first, was)) if *was != published => {
                    self.disagreements.push(Disagreement {
                        property: format!("{model}.{property}"),
                        first: (first.clone(), *was),
                        other: (here, published),
                    });
                }
                Some(_) => {}
            }
        }
        if atomic::MAPS.contains(&(model, property)) {
            self.atomic.insert(&self.path);
        }
        self.descend(schema);
    }

    /// Visits what a value of `schema` holds: the model it refers to, a list's items (at the
    /// list's path) or a map's values (at `*`).
    fn descend(&mut self, schema: &Value) {
        if let Some(name) = reference(schema) {
            if atomic::STRUCTS.contains(&name) {
                self.atomic.insert(&self.path);
            }
            self.model(name);
            return;
        }
        if let Some(items) = schema.get("items") {
            self.descend(items);
        }
        if let Some(values) = schema.get("additionalProperties").filter(|v| v.is_object()) {
            self.path.push("*".to_string());
            self.descend(values);
            self.path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::generate::SchemaSettings;

    #[test]
    fn every_path_to_a_shared_property_gets_the_same_rule() {
        let mut generator = SchemaSettings::openapi3().into_generator();
        crate::kinds::collect_schemas(&mut generator);
        let mut definitions = generator.take_definitions(true);
        let disagreements = publish(
            &mut definitions,
            &crate::kinds::builtin_resources(),
            super::super::root_model,
        )
        .disagreements;
        assert!(
            disagreements.is_empty(),
            "{} disagreements:\n{}",
            disagreements.len(),
            disagreements
                .iter()
                .map(|d| format!("{d:?}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    /// The extensions of `model.property` in the served schemas.
    fn published(model: &str, property: &str) -> Map<String, Value> {
        let schema = super::super::schema(model).unwrap_or_else(|| panic!("{model}"));
        schema["properties"][property]
            .as_object()
            .unwrap_or_else(|| panic!("{model}.{property}"))
            .iter()
            .filter(|(k, _)| k.starts_with("x-kubernetes-"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn ext(pairs: Value) -> Map<String, Value> {
        pairs.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn schemas_publish_upstreams_merge_extensions() {
        let core = "io.k8s.api.core.v1";
        // Upstream v1.36: `PodSpec.containers`.
        assert_eq!(
            published(&format!("{core}.PodSpec"), "containers"),
            ext(json!({
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge",
            }))
        );
        assert_eq!(
            published(&format!("{core}.Container"), "ports"),
            ext(json!({
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "containerPort",
                "x-kubernetes-patch-strategy": "merge",
            }))
        );
        // Volumes and claims retain keys (a volume's source is replaced, not merged).
        assert_eq!(
            published(&format!("{core}.PodSpec"), "volumes")["x-kubernetes-patch-strategy"],
            "merge,retainKeys"
        );
        assert_eq!(
            published(&format!("{core}.PodStatus"), "resourceClaimStatuses")["x-kubernetes-patch-strategy"],
            "merge,retainKeys"
        );
        assert_eq!(
            published("io.k8s.api.apps.v1.DeploymentSpec", "strategy"),
            ext(json!({"x-kubernetes-patch-strategy": "retainKeys"}))
        );
        assert_eq!(
            published("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "selector"),
            ext(json!({"x-kubernetes-patch-strategy": "replace"}))
        );
        // Merged by patches, atomic for applies.
        assert_eq!(
            published("io.k8s.api.batch.v1.JobStatus", "conditions"),
            ext(json!({
                "x-kubernetes-list-type": "atomic",
                "x-kubernetes-patch-merge-key": "type",
                "x-kubernetes-patch-strategy": "merge",
            }))
        );
        // Keyed for applies only.
        assert_eq!(
            published(
                "io.k8s.api.certificates.v1.CertificateSigningRequestStatus",
                "conditions"
            ),
            ext(json!({
                "x-kubernetes-list-map-keys": ["type"],
                "x-kubernetes-list-type": "map",
            }))
        );
        assert_eq!(
            published("io.k8s.api.core.v1.NodeSpec", "podCIDRs"),
            ext(json!({
                "x-kubernetes-list-type": "set",
                "x-kubernetes-patch-strategy": "merge",
            }))
        );
        assert_eq!(
            published("io.k8s.api.discovery.v1.Endpoint", "addresses"),
            ext(json!({"x-kubernetes-list-type": "set"}))
        );
        // Recursive schemas: every depth of a CRD's schema.
        assert_eq!(
            published(
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
                "x-kubernetes-validations"
            )["x-kubernetes-patch-merge-key"],
            "rule"
        );
        // Atomic structures (on the model) and maps (on the property).
        let owner = super::super::schema("io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference")
            .expect("OwnerReference");
        assert_eq!(owner["x-kubernetes-map-type"], "atomic");
        let selector = super::super::schema("io.k8s.api.core.v1.SecretKeySelector")
            .expect("SecretKeySelector");
        assert_eq!(selector["x-kubernetes-map-type"], "atomic");
        assert_eq!(
            published(&format!("{core}.PodSpec"), "nodeSelector"),
            ext(json!({"x-kubernetes-map-type": "atomic"}))
        );
        // Lists upstream declares atomic say so; lists it says nothing about and plain
        // fields publish nothing.
        assert_eq!(
            published(&format!("{core}.Container"), "args"),
            ext(json!({"x-kubernetes-list-type": "atomic"}))
        );
        assert_eq!(
            published(&format!("{core}.EphemeralContainer"), "command"),
            ext(json!({"x-kubernetes-list-type": "atomic"}))
        );
        assert!(published(&format!("{core}.PodSpec"), "nodeName").is_empty());
        assert!(published(&format!("{core}.PodStatus"), "hostIP").is_empty());
    }

    /// Every list upstream declares atomic is a served list property, published as atomic:
    /// no rule of ours merges it by keys or as a set.
    #[test]
    fn lists_declared_atomic_are_published_atomic() {
        let mut wrong = Vec::new();
        for (model, properties) in atomic::LISTS {
            // The meta/v1 models outside the kinds' schemas are written by hand.
            let schema = super::super::schema(model).or_else(|| crate::openapi::meta_schema(model));
            let Some(schema) = schema else {
                wrong.push(format!("{model} not served"));
                continue;
            };
            for property in *properties {
                let list_type = schema["properties"][property].get("x-kubernetes-list-type");
                if !is_list(&schema["properties"][property]) || list_type != Some(&json!("atomic"))
                {
                    wrong.push(format!("{model}.{property}: {list_type:?}"));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
