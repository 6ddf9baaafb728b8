//! Sets of field paths and their `FieldsV1` encoding.
//!
//! A set holds every path a manager owns. In `FieldsV1` each path element is a key (`f:`,
//! `k:`, `v:`, `i:`); a leaf owned path is an empty object and a path that is owned and also has
//! owned children carries a `"."` member, as upstream.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::path::{Path, PathElement};

/// Deepest `FieldsV1` document accepted.
pub const MAX_FIELDS_DEPTH: usize = 100;

/// A set of paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    paths: BTreeSet<Path>,
}

impl FieldSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a path (the empty root path is never a member).
    pub fn insert(&mut self, path: Path) {
        if !path.is_empty() {
            self.paths.insert(path);
        }
    }

    /// Whether the path is a member.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        self.paths.contains(path)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The members in order.
    pub fn iter(&self) -> impl Iterator<Item = &Path> {
        self.paths.iter()
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            paths: self.paths.union(&other.paths).cloned().collect(),
        }
    }

    /// `self ∩ other`.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            paths: self.paths.intersection(&other.paths).cloned().collect(),
        }
    }

    /// `self − other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            paths: self.paths.difference(&other.paths).cloned().collect(),
        }
    }

    /// Removes every member that starts with `prefix` (including `prefix` itself).
    pub fn remove_prefixed(&mut self, prefix: &[PathElement]) {
        self.paths.retain(|p| !p.starts_with(prefix));
    }

    /// Removes one exact path.
    pub fn remove(&mut self, path: &[PathElement]) {
        self.paths.remove(path);
    }

    /// The members plus every non-empty prefix of a member.
    pub fn with_ancestors(&self) -> FieldSet {
        let mut out = self.paths.clone();
        for p in &self.paths {
            for len in 1..p.len() {
                out.insert(p[..len].to_vec());
            }
        }
        FieldSet { paths: out }
    }

    /// The `FieldsV1` document of the set.
    pub fn to_fields_v1(&self) -> Value {
        #[derive(Default)]
        struct Node {
            member: bool,
            children: BTreeMap<String, Node>,
        }
        let mut root = Node::default();
        for path in &self.paths {
            let mut node = &mut root;
            for pe in path {
                node = node.children.entry(pe.fields_v1_key()).or_default();
            }
            node.member = true;
        }
        fn encode(node: &Node) -> Value {
            let mut map = Map::new();
            if node.member && !node.children.is_empty() {
                map.insert(".".into(), Value::Object(Map::new()));
            }
            for (k, child) in &node.children {
                map.insert(k.clone(), encode(child));
            }
            Value::Object(map)
        }
        encode(&root)
    }

    /// Decodes a `FieldsV1` document.
    pub fn from_fields_v1(doc: &Value) -> Result<FieldSet, String> {
        let mut set = FieldSet::new();
        let mut path = Vec::new();
        decode(doc, &mut path, &mut set, 0)?;
        Ok(set)
    }
}

fn decode(doc: &Value, path: &mut Path, set: &mut FieldSet, depth: usize) -> Result<(), String> {
    if depth > MAX_FIELDS_DEPTH {
        return Err(format!(
            "fieldsV1 nested deeper than {MAX_FIELDS_DEPTH} levels"
        ));
    }
    let Value::Object(map) = doc else {
        return Err("fieldsV1 entries must be objects".to_string());
    };
    if map.is_empty() {
        set.insert(path.clone());
        return Ok(());
    }
    for (k, child) in map {
        if k == "." {
            set.insert(path.clone());
            continue;
        }
        path.push(PathElement::from_fields_v1_key(k)?);
        decode(child, path, set, depth + 1)?;
        path.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_v1_round_trips_with_dot_members() {
        let doc = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:containers": {
                    "k:{\"name\":\"nginx\"}": {".": {}, "f:image": {}, "f:name": {}}
                },
                "f:finalizers": {"v:\"a\"": {}},
                "f:replicas": {}
            }
        });
        let set = FieldSet::from_fields_v1(&doc).expect("decode");
        assert_eq!(set.iter().count(), 7);
        assert_eq!(set.to_fields_v1(), doc);
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"q:a": {}})).is_err());
        let mut deep = json!({});
        for _ in 0..200 {
            deep = json!({ "f:a": deep });
        }
        assert!(FieldSet::from_fields_v1(&deep).is_err());
    }

    #[test]
    fn ancestors_and_set_operations() {
        let a = |s: &str| PathElement::Field(s.to_string());
        let mut s = FieldSet::new();
        s.insert(vec![a("spec"), a("x"), a("y")]);
        let anc = s.with_ancestors();
        assert!(anc.contains(&[a("spec")]));
        assert!(anc.contains(&[a("spec"), a("x")]));
        let mut t = FieldSet::new();
        t.insert(vec![a("spec")]);
        assert_eq!(anc.difference(&t).iter().count(), 2);
        assert_eq!(anc.intersection(&t), t);
        let mut u = anc.clone();
        u.remove_prefixed(&[a("spec"), a("x")]);
        assert_eq!(u, t);
    }
}
