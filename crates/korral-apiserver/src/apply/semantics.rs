//! How lists and maps merge under server-side apply: `x-kubernetes-list-type` (atomic, set,
//! map with `x-kubernetes-list-map-keys`) and `x-kubernetes-map-type` (atomic or granular).
//!
//! Built-in kinds use upstream's choices (the `+listType`/`+listMapKey`/`+mapType`/
//! `+structType` markers of the Kubernetes API types, from the one table of
//! [`crate::kinds::lists`]); custom resources read the CRD schema.
//! Paths are field names from the root, list items omitted (as in
//! [`crate::patch::MergeStrategy`]).

use serde_json::Value;

use crate::kinds::lists::ListRule;
use crate::registry::ResourceInfo;

/// How a list merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Replaced as a whole; owned as one field.
    Atomic,
    /// A set of scalars, merged by value.
    Set,
    /// A list of objects merged by the given key fields.
    Map(Vec<String>),
}

/// List and map semantics of one kind.
pub trait Semantics {
    /// The type of the list at `path`.
    fn list_type(&self, path: &[String]) -> ListType;
    /// Whether the map or struct at `path` is atomic (replaced and owned as a whole).
    fn map_atomic(&self, path: &[String]) -> bool;
    /// The default of a missing key field of an associative-list item at `path`, if any.
    fn key_default(&self, _path: &[String], _key: &str) -> Option<Value> {
        None
    }
}

/// Upstream's semantics for a built-in kind: the list types of [`crate::kinds::lists`], the
/// atomic structures and maps of [`crate::kinds::atomic`] where its schema holds them.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinSemantics<'a> {
    info: &'a ResourceInfo,
    atomic: Option<&'static crate::openapi_builtin::merge_rules::AtomicPaths>,
}

impl<'a> BuiltinSemantics<'a> {
    /// The semantics of `info`'s objects.
    pub fn new(info: &'a ResourceInfo) -> Self {
        Self {
            info,
            atomic: crate::openapi_builtin::atomic_paths(info),
        }
    }
}

impl ListType {
    /// The list type of a built-in kind's list rule (`None`: atomic).
    fn of(rule: Option<ListRule>) -> Self {
        match rule {
            Some(ListRule::Map { keys, .. } | ListRule::ApplyMap { keys }) => {
                ListType::Map(keys.iter().map(|k| k.to_string()).collect())
            }
            Some(ListRule::Set | ListRule::ApplySet) => ListType::Set,
            Some(ListRule::PatchMap { .. } | ListRule::Atomic) | None => ListType::Atomic,
        }
    }
}

impl Semantics for BuiltinSemantics<'_> {
    fn list_type(&self, path: &[String]) -> ListType {
        ListType::of(crate::kinds::lists::rule(self.info, path))
    }

    fn map_atomic(&self, path: &[String]) -> bool {
        self.atomic.is_some_and(|atomic| atomic.contains(path))
    }

    fn key_default(&self, path: &[String], key: &str) -> Option<Value> {
        // `protocol` defaults to TCP in the port list keys.
        (key == "protocol" && path.last().is_some_and(|l| l == "ports"))
            .then(|| Value::String("TCP".into()))
    }
}

/// Semantics read from a CRD's structural schema, with upstream's metadata rules.
#[derive(Debug, Clone, Copy)]
pub struct SchemaSemantics<'a> {
    schema: &'a Value,
}

impl<'a> SchemaSemantics<'a> {
    /// Semantics of the schema (`openAPIV3Schema`).
    pub fn new(schema: &'a Value) -> Self {
        Self { schema }
    }

    /// The schema node at `path`, stepping into `items` where a list is crossed.
    fn node(&self, path: &[String]) -> Option<&'a Value> {
        let mut node = self.schema;
        for seg in path {
            while let Some(items) = node.get("items") {
                node = items;
            }
            node = match node.get("properties").and_then(|p| p.get(seg)) {
                Some(n) => n,
                None => match node.get("additionalProperties") {
                    Some(ap) if ap.is_object() => ap,
                    _ => return None,
                },
            };
        }
        Some(node)
    }
}

impl Semantics for SchemaSemantics<'_> {
    fn list_type(&self, path: &[String]) -> ListType {
        if let [first, field] = path
            && first == "metadata"
        {
            return ListType::of(crate::kinds::lists::object_meta_list(field));
        }
        let Some(node) = self.node(path) else {
            return ListType::Atomic;
        };
        match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map(
                node.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|keys| {
                        keys.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            _ => ListType::Atomic,
        }
    }

    fn map_atomic(&self, path: &[String]) -> bool {
        if let [first, rest @ ..] = path
            && first == "metadata"
        {
            return matches!(rest, [field] if crate::kinds::atomic::in_object_meta(field));
        }
        self.node(path)
            .and_then(|n| n.get("x-kubernetes-map-type"))
            .and_then(Value::as_str)
            == Some("atomic")
    }

    fn key_default(&self, path: &[String], key: &str) -> Option<Value> {
        let node = self.node(path)?;
        node.get("items")?
            .get("properties")?
            .get(key)?
            .get("default")
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(s: &str) -> Vec<String> {
        s.split('.').map(str::to_string).collect()
    }

    #[test]
    fn builtin_choices_match_upstream() {
        let registry = crate::registry::Registry::with_builtins();
        let info = registry.get("apps", "v1", "deployments").expect("served");
        let b = BuiltinSemantics::new(&info);
        assert_eq!(
            b.list_type(&p("spec.template.spec.containers")),
            ListType::Map(vec!["name".into()])
        );
        assert_eq!(
            b.list_type(&p("spec.template.spec.containers.ports")),
            ListType::Map(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(
            b.list_type(&p("spec.template.spec.containers.args")),
            ListType::Atomic
        );
        assert_eq!(
            b.list_type(&p("spec.template.spec.tolerations")),
            ListType::Atomic
        );
        assert_eq!(b.list_type(&p("metadata.finalizers")), ListType::Set);
        assert_eq!(
            b.list_type(&p("metadata.ownerReferences")),
            ListType::Map(vec!["uid".into()])
        );
        assert!(b.map_atomic(&p("spec.selector")));
        assert!(!b.map_atomic(&p("metadata.labels")));
        // Upstream's atomic structures wherever the kind holds them: owner references,
        // env sources, image pull secrets (list items at their list's path), node affinity.
        for atomic in [
            "metadata.ownerReferences",
            "spec.template.metadata.ownerReferences",
            "spec.template.spec.containers.env.valueFrom.secretKeyRef",
            "spec.template.spec.containers.env.valueFrom.fieldRef",
            "spec.template.spec.imagePullSecrets",
            "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
            "spec.template.spec.nodeSelector",
            "spec.template.spec.topologySpreadConstraints.labelSelector",
        ] {
            assert!(b.map_atomic(&p(atomic)), "{atomic}");
        }
        for granular in [
            "spec.template.spec.containers.env.valueFrom",
            "spec.template.spec.affinity.nodeAffinity",
            "spec.template.spec.securityContext",
            "spec.strategy",
            "",
        ] {
            assert!(!b.map_atomic(&p(granular)), "{granular}");
        }
        let role_binding = registry
            .get("rbac.authorization.k8s.io", "v1", "rolebindings")
            .expect("served");
        let b = BuiltinSemantics::new(&role_binding);
        assert!(b.map_atomic(&p("roleRef")));
        assert!(b.map_atomic(&p("subjects")));
        let service = registry.get("", "v1", "services").expect("served");
        let b = BuiltinSemantics::new(&service);
        assert!(b.map_atomic(&p("spec.selector")));
        assert!(!b.map_atomic(&p("metadata.annotations")));
    }

    #[test]
    fn crd_schema_markers_are_read() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                "items": {"type": "object", "properties": {"id": {"type": "string"}, "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
            "sel": {"type": "object", "x-kubernetes-map-type": "atomic"},
            "plain": {"type": "array", "items": {"type": "string"}}
        }}}});
        let s = SchemaSemantics::new(&schema);
        assert_eq!(
            s.list_type(&p("spec.items")),
            ListType::Map(vec!["id".into()])
        );
        assert_eq!(s.list_type(&p("spec.items.tags")), ListType::Set);
        assert_eq!(s.list_type(&p("spec.plain")), ListType::Atomic);
        assert!(s.map_atomic(&p("spec.sel")));
        assert_eq!(s.list_type(&p("metadata.finalizers")), ListType::Set);
        // A custom resource's owner references are atomic too; its labels are not.
        assert!(s.map_atomic(&p("metadata.ownerReferences")));
        assert!(!s.map_atomic(&p("metadata.labels")));
    }
}
