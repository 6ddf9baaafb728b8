//! Walks over objects with list and map semantics: the field set of an applied
//! configuration, the comparison of two objects, the merge of a configuration into a live
//! object and the removal of fields a manager no longer applies.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldset::FieldSet;
use super::path::{Path, PathElement, display};
use super::semantics::{ListType, Semantics};

/// Where a walk is: the path (with list items) and the field names (without them).
struct At {
    path: Path,
    names: Vec<String>,
}

impl At {
    fn root() -> Self {
        At {
            path: Vec::new(),
            names: Vec::new(),
        }
    }

    fn field<R>(&mut self, name: &str, f: impl FnOnce(&mut At) -> R) -> R {
        self.path.push(PathElement::Field(name.to_string()));
        self.names.push(name.to_string());
        let r = f(self);
        self.names.pop();
        self.path.pop();
        r
    }

    fn item<R>(&mut self, pe: PathElement, f: impl FnOnce(&mut At) -> R) -> R {
        self.path.push(pe);
        let r = f(self);
        self.path.pop();
        r
    }

    fn map_atomic(&self, sem: &dyn Semantics) -> bool {
        !self.path.is_empty() && sem.map_atomic(&self.names)
    }
}

/// The path element of item `index` of a non-atomic list at `at`.
fn item_element(
    sem: &dyn Semantics,
    at: &At,
    list_type: &ListType,
    index: usize,
    item: &Value,
) -> Result<PathElement, String> {
    match list_type {
        ListType::Atomic => Ok(PathElement::Index(index)),
        ListType::Set => match item {
            Value::Object(_) | Value::Array(_) => Err(format!(
                "{}: element {index}: expected a scalar in a set list",
                display(&at.path)
            )),
            v => Ok(PathElement::value(v)),
        },
        ListType::Map(keys) => {
            let Value::Object(m) = item else {
                return Err(format!(
                    "{}: element {index}: associative list with keys has an element that is not a map",
                    display(&at.path)
                ));
            };
            // As structured-merge-diff (v6.3+): a key field the item omits and that has no
            // default is left out of the item's key; only an item without any is refused.
            let mut fields = Map::new();
            for key in keys {
                let value = match m.get(key) {
                    Some(v) if !v.is_null() => Some(v.clone()),
                    _ => sem.key_default(&at.names, key),
                };
                if let Some(value) = value {
                    fields.insert(key.clone(), value);
                }
            }
            if fields.is_empty() {
                let quoted: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
                return Err(format!(
                    "{}: element {index}: associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                    display(&at.path),
                    quoted.join(" ")
                ));
            }
            Ok(PathElement::key(&fields))
        }
    }
}

/// The type of the list at `at`, atomic when a map list has no keys.
fn list_type_at(sem: &dyn Semantics, at: &At) -> ListType {
    match sem.list_type(&at.names) {
        ListType::Map(keys) if keys.is_empty() => ListType::Atomic,
        t => t,
    }
}

/// Items of a non-atomic list by path element, in order; `Err` on missing keys, duplicates are
/// reported when `strict`.
fn index_items<'v>(
    sem: &dyn Semantics,
    at: &At,
    list_type: &ListType,
    items: &'v [Value],
    strict: bool,
) -> Result<Vec<(PathElement, &'v Value)>, String> {
    let mut out: Vec<(PathElement, &Value)> = Vec::with_capacity(items.len());
    let mut seen = std::collections::BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let pe = item_element(sem, at, list_type, i, item)?;
        if !seen.insert(pe.clone()) {
            if strict {
                return Err(format!(
                    "{}: duplicate entries for key {pe}",
                    display(&at.path)
                ));
            }
            continue;
        }
        out.push((pe, item));
    }
    Ok(out)
}

/// The set of fields an applied configuration sets (upstream's `ToFieldSet`): scalars and
/// atomic lists/maps as leaves, items of sets and associative lists as members.
pub fn applied_set(config: &Value, sem: &dyn Semantics) -> Result<FieldSet, String> {
    fn walk(v: &Value, at: &mut At, sem: &dyn Semantics, out: &mut FieldSet) -> Result<(), String> {
        match v {
            Value::Object(m) => {
                if at.map_atomic(sem) {
                    out.insert(at.path.clone());
                    return Ok(());
                }
                for (k, c) in m {
                    at.field(k, |at| walk(c, at, sem, out))?;
                }
                Ok(())
            }
            Value::Array(items) => {
                let lt = list_type_at(sem, at);
                if lt == ListType::Atomic {
                    out.insert(at.path.clone());
                    return Ok(());
                }
                for (pe, item) in index_items(sem, at, &lt, items, true)? {
                    at.item(pe, |at| {
                        walk(item, at, sem, out)?;
                        out.insert(at.path.clone());
                        Ok::<(), String>(())
                    })?;
                }
                Ok(())
            }
            _ => {
                out.insert(at.path.clone());
                Ok(())
            }
        }
    }
    let mut out = FieldSet::new();
    walk(config, &mut At::root(), sem, &mut out)?;
    Ok(out)
}

/// Every addressable node below `v` (map fields and list items, recursively) into `out`.
fn all_paths(v: &Value, at: &mut At, sem: &dyn Semantics, out: &mut FieldSet) {
    match v {
        Value::Object(m) if !at.map_atomic(sem) => {
            for (k, c) in m {
                at.field(k, |at| {
                    out.insert(at.path.clone());
                    all_paths(c, at, sem, out);
                });
            }
        }
        Value::Array(items) => {
            let lt = list_type_at(sem, at);
            if lt == ListType::Atomic {
                return;
            }
            let Ok(indexed) = index_items(sem, at, &lt, items, false) else {
                return;
            };
            for (pe, item) in indexed {
                at.item(pe, |at| {
                    out.insert(at.path.clone());
                    all_paths(item, at, sem, out);
                });
            }
        }
        _ => {}
    }
}

/// What changed between two versions of an object (upstream's `Compare`).
#[derive(Debug, Default, Clone)]
pub struct Comparison {
    /// Paths present only in the new object (with every node below them).
    pub added: FieldSet,
    /// Paths present only in the old object (with every node below them).
    pub removed: FieldSet,
    /// Leaves whose value changed.
    pub modified: FieldSet,
}

/// Compares `old` with `new`.
pub fn compare(old: &Value, new: &Value, sem: &dyn Semantics) -> Comparison {
    fn children<'v>(
        v: &'v Value,
        at: &At,
        sem: &dyn Semantics,
    ) -> Option<BTreeMap<PathElement, (Option<String>, &'v Value)>> {
        match v {
            Value::Object(m) if !at.map_atomic(sem) => Some(
                m.iter()
                    .map(|(k, c)| (PathElement::Field(k.clone()), (Some(k.clone()), c)))
                    .collect(),
            ),
            Value::Array(items) => {
                let lt = list_type_at(sem, at);
                if lt == ListType::Atomic {
                    return None;
                }
                index_items(sem, at, &lt, items, false)
                    .ok()
                    .map(|v| v.into_iter().map(|(pe, c)| (pe, (None, c))).collect())
            }
            _ => None,
        }
    }
    fn walk(o: &Value, n: &Value, at: &mut At, sem: &dyn Semantics, c: &mut Comparison) {
        let same_shape = matches!(
            (o, n),
            (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_))
        );
        let (oc, nc) = if same_shape {
            (children(o, at, sem), children(n, at, sem))
        } else {
            (None, None)
        };
        let (Some(oc), Some(nc)) = (oc, nc) else {
            if o != n {
                c.modified.insert(at.path.clone());
            }
            return;
        };
        let mut keys: Vec<&PathElement> = oc.keys().chain(nc.keys()).collect();
        keys.sort();
        keys.dedup();
        for pe in keys {
            let (name, ov, nv) = match (oc.get(pe), nc.get(pe)) {
                (Some((name, ov)), Some((_, nv))) => (name.clone(), Some(*ov), Some(*nv)),
                (Some((name, ov)), None) => (name.clone(), Some(*ov), None),
                (None, Some((name, nv))) => (name.clone(), None, Some(*nv)),
                (None, None) => continue,
            };
            let step = |at: &mut At, c: &mut Comparison| match (ov, nv) {
                (Some(ov), Some(nv)) => walk(ov, nv, at, sem, c),
                (None, Some(nv)) => {
                    c.added.insert(at.path.clone());
                    all_paths(nv, at, sem, &mut c.added);
                }
                (Some(ov), None) => {
                    c.removed.insert(at.path.clone());
                    all_paths(ov, at, sem, &mut c.removed);
                }
                (None, None) => {}
            };
            match name {
                Some(name) => at.field(&name, |at| step(at, c)),
                None => at.item(pe.clone(), |at| step(at, c)),
            }
        }
    }
    let mut c = Comparison::default();
    walk(old, new, &mut At::root(), sem, &mut c);
    c
}

/// A copy of `v` without `null` map values (a `null` in an applied configuration removes the
/// field).
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, c)| !c.is_null())
                .map(|(k, c)| (k.clone(), without_nulls(c)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// Merges an applied configuration into the live object: maps field by field, associative
/// lists item by item (upstream's ordering), atomic values replaced.
pub fn merge(live: &Value, config: &Value, sem: &dyn Semantics) -> Result<Value, String> {
    fn walk(
        l: Option<&Value>,
        r: &Value,
        at: &mut At,
        sem: &dyn Semantics,
    ) -> Result<Value, String> {
        match (l, r) {
            (Some(Value::Object(a)), Value::Object(b)) if !at.map_atomic(sem) => {
                let mut out = a.clone();
                for (k, rv) in b {
                    if rv.is_null() {
                        out.remove(k);
                        continue;
                    }
                    let merged = at.field(k, |at| walk(a.get(k), rv, at, sem))?;
                    out.insert(k.clone(), merged);
                }
                Ok(Value::Object(out))
            }
            (Some(Value::Array(a)), Value::Array(b)) => {
                let lt = list_type_at(sem, at);
                if lt == ListType::Atomic {
                    return Ok(without_nulls(r));
                }
                let rhs = index_items(sem, at, &lt, b, true)?;
                let lhs = match index_items(sem, at, &lt, a, false) {
                    Ok(lhs) => lhs,
                    // A live list the schema cannot key is replaced.
                    Err(_) => return Ok(without_nulls(r)),
                };
                merge_list(&lhs, &rhs, at, sem, &mut |l, r, at| walk(l, r, at, sem))
            }
            _ => Ok(without_nulls(r)),
        }
    }
    walk(Some(live), config, &mut At::root(), sem)
}

/// The atomic lists, maps and structs a configuration sets, as upstream's `findAtomics` names
/// them (`.spec.selector`, `.spec.template.spec.containers[0].args`): a configuration merged
/// without ownership must not carry any, or it would silently drop their other members.
pub fn atomics(config: &Value, sem: &dyn Semantics) -> Vec<String> {
    fn walk(
        v: &Value,
        at: &mut At,
        shown: &mut String,
        sem: &dyn Semantics,
        out: &mut Vec<String>,
    ) {
        match v {
            Value::Object(m) => {
                if at.map_atomic(sem) {
                    out.push(shown.clone());
                }
                for (k, child) in m {
                    let len = shown.len();
                    shown.push('.');
                    shown.push_str(k);
                    at.field(k, |at| walk(child, at, shown, sem, out));
                    shown.truncate(len);
                }
            }
            Value::Array(items) => {
                if list_type_at(sem, at) == ListType::Atomic {
                    out.push(shown.clone());
                }
                for (i, item) in items.iter().enumerate() {
                    let len = shown.len();
                    shown.push_str(&format!("[{i}]"));
                    at.item(PathElement::Index(i), |at| walk(item, at, shown, sem, out));
                    shown.truncate(len);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(config, &mut At::root(), &mut String::new(), sem, &mut out);
    out
}

type ItemMerge<'f> = dyn FnMut(Option<&Value>, &Value, &mut At) -> Result<Value, String> + 'f;

/// Upstream's associative-list merge order: shared items in the order of the configuration,
/// items only in the live list kept where they were.
fn merge_list(
    lhs: &[(PathElement, &Value)],
    rhs: &[(PathElement, &Value)],
    at: &mut At,
    _sem: &dyn Semantics,
    item: &mut ItemMerge<'_>,
) -> Result<Value, String> {
    let observed_lhs: BTreeMap<&PathElement, &Value> = lhs.iter().map(|(p, v)| (p, *v)).collect();
    let observed_rhs: BTreeMap<&PathElement, &Value> = rhs.iter().map(|(p, v)| (p, *v)).collect();
    let mut shared: std::collections::VecDeque<&PathElement> = rhs
        .iter()
        .map(|(p, _)| p)
        .filter(|p| observed_lhs.contains_key(p))
        .collect();
    let mut next_shared = shared.pop_front();
    let mut merged_rhs = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let pe = &lhs[li].0;
            if *pe == rhs[ri].0 {
                merged_rhs.insert(pe.clone());
                let l = observed_lhs.get(pe).copied();
                let r = observed_rhs.get(pe).copied().unwrap_or(rhs[ri].1);
                out.push(at.item(pe.clone(), |at| item(l, r, at))?);
                li += 1;
                ri += 1;
                next_shared = shared.pop_front();
                continue;
            }
            if observed_rhs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() {
            let pe = &lhs[li].0;
            if !observed_rhs.contains_key(pe) {
                out.push(lhs[li].1.clone());
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
                continue;
            }
        }
        if ri < rhs.len() {
            let pe = &rhs[ri].0;
            merged_rhs.insert(pe.clone());
            let l = observed_lhs.get(pe).copied();
            let r = rhs[ri].1;
            out.push(at.item(pe.clone(), |at| item(l, r, at))?);
            ri += 1;
            if next_shared.is_some_and(|n| n == pe) {
                next_shared = shared.pop_front();
            }
        }
    }
    Ok(Value::Array(out))
}

/// Removes from `obj` every node whose path is in `remove_candidates` but not in `keep`
/// (both closed under ancestors), with everything below it.
pub fn prune(obj: &mut Value, remove_candidates: &FieldSet, keep: &FieldSet, sem: &dyn Semantics) {
    fn walk(v: &mut Value, at: &mut At, cand: &FieldSet, keep: &FieldSet, sem: &dyn Semantics) {
        let drop = |at: &At| cand.contains(&at.path) && !keep.contains(&at.path);
        match v {
            Value::Object(m) if !at.map_atomic(sem) => {
                let keys: Vec<String> = m.keys().cloned().collect();
                for k in keys {
                    let remove = at.field(&k, |at| {
                        if drop(at) {
                            return true;
                        }
                        if let Some(c) = m.get_mut(&k) {
                            walk(c, at, cand, keep, sem);
                        }
                        false
                    });
                    if remove {
                        m.remove(&k);
                    }
                }
            }
            Value::Array(items) => {
                let lt = list_type_at(sem, at);
                if lt == ListType::Atomic {
                    return;
                }
                let mut pes = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item_element(sem, at, &lt, i, item) {
                        Ok(pe) => pes.push(Some(pe)),
                        Err(_) => pes.push(None),
                    }
                }
                let mut kept = Vec::with_capacity(items.len());
                for (item, pe) in std::mem::take(items).into_iter().zip(pes) {
                    let Some(pe) = pe else {
                        kept.push(item);
                        continue;
                    };
                    let mut item = item;
                    let remove = at.item(pe, |at| {
                        if drop(at) {
                            return true;
                        }
                        walk(&mut item, at, cand, keep, sem);
                        false
                    });
                    if !remove {
                        kept.push(item);
                    }
                }
                *items = kept;
            }
            _ => {}
        }
    }
    walk(obj, &mut At::root(), remove_candidates, keep, sem);
}

/// How deep a JSON value nests (a scalar is 1).
pub fn depth(v: &Value) -> usize {
    // Iterative, so hostile input cannot exhaust the stack.
    let mut max = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Object(m) => stack.extend(m.values().map(|c| (c, d + 1))),
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, d + 1))),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::semantics::BuiltinSemantics;

    fn pod() -> BuiltinSemantics<'static> {
        BuiltinSemantics::new(crate::kinds::lists::test_info("Pod"))
    }
    use serde_json::json;

    #[test]
    fn applied_set_uses_list_semantics() {
        let config = json!({
            "metadata": {"labels": {"a": "1"}, "finalizers": ["x"]},
            "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {"spec": {"containers": [
                {"name": "c", "image": "i", "args": ["1", "2"], "ports": [{"containerPort": 80}]}
            ]}}}
        });
        let deployments = BuiltinSemantics::new(crate::kinds::lists::test_info("Deployment"));
        let set = applied_set(&config, &deployments).expect("set");
        let v1 = set.to_fields_v1();
        assert_eq!(
            v1,
            json!({
                "f:metadata": {"f:finalizers": {"v:\"x\"": {}}, "f:labels": {"f:a": {}}},
                "f:spec": {"f:selector": {}, "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"c\"}": {".": {}, "f:args": {}, "f:image": {}, "f:name": {}, "f:ports": {
                        "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}
                    }}
                }}}}
            })
        );
        let bad = json!({"spec": {"containers": [{"image": "x"}]}});
        let err = applied_set(&bad, &pod()).expect_err("missing key");
        assert!(err.contains("omits all key fields [\"name\"]"), "{err}");
        // A key field without a value and without a default is left out of the key.
        let ports = json!({"spec": {"containers": [{"name": "c", "ports": [
            {"containerPort": 80}, {"containerPort": 80, "protocol": "UDP"}]}]}});
        assert!(applied_set(&ports, &pod()).is_ok());
        let dup = json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}});
        assert!(applied_set(&dup, &pod()).is_err());
    }

    #[test]
    fn merge_keeps_live_items_and_orders_like_upstream() {
        let live = json!({"spec": {"containers": [
            {"name": "a", "image": "a1", "tty": true}, {"name": "b", "image": "b1"}, {"name": "c", "image": "c1"}
        ], "tolerations": [{"key": "x"}]}});
        let config = json!({"spec": {"containers": [
            {"name": "c", "image": "c2"}, {"name": "a", "image": "a2"}, {"name": "d", "image": "d"}
        ], "tolerations": [{"key": "y"}]}});
        let merged = merge(&live, &config, &pod()).expect("merge");
        let names: Vec<&str> = merged["spec"]["containers"]
            .as_array()
            .expect("list")
            .iter()
            .map(|c| c["name"].as_str().expect("name"))
            .collect();
        assert_eq!(names, vec!["b", "c", "a", "d"]);
        assert_eq!(
            merged["spec"]["containers"][2],
            json!({"name": "a", "image": "a2", "tty": true})
        );
        assert_eq!(merged["spec"]["tolerations"], json!([{"key": "y"}]));
    }

    #[test]
    fn compare_reports_added_removed_modified() {
        let old = json!({"data": {"a": "1", "b": "2"}});
        let new = json!({"data": {"a": "9", "c": "3"}, "spec": {"x": 1}});
        let c = compare(&old, &new, &pod());
        assert_eq!(c.modified.to_fields_v1(), json!({"f:data": {"f:a": {}}}));
        assert_eq!(c.removed.to_fields_v1(), json!({"f:data": {"f:b": {}}}));
        assert_eq!(
            c.added.to_fields_v1(),
            json!({"f:data": {"f:c": {}}, "f:spec": {".": {}, "f:x": {}}})
        );
    }

    #[test]
    fn prune_removes_unowned_candidates_with_their_subtree() {
        let mut obj = json!({"spec": {"containers": [{"name": "a", "image": "x", "tmp": "d"}, {"name": "b"}]}, "data": {"k": "v"}});
        let a = json!({"spec": {"containers": [{"name": "a", "image": "x"}]}});
        let b = json!({"spec": {"containers": [{"name": "b"}]}});
        let last = applied_set(&a, &pod()).expect("a").with_ancestors();
        let keep = applied_set(&b, &pod()).expect("b").with_ancestors();
        prune(&mut obj, &last, &keep, &pod());
        assert_eq!(
            obj,
            json!({"spec": {"containers": [{"name": "b"}]}, "data": {"k": "v"}})
        );
        assert_eq!(depth(&json!({"a": [{"b": 1}]})), 4);
    }
}
