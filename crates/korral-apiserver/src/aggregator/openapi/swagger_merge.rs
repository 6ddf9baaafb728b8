//! Merging Swagger 2.0 documents as kube-openapi's aggregator merges an extension server's
//! document into the server's (`MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters`):
//!
//! - a path the destination already has is kept as it is; the source's conflicting paths are
//!   dropped, with the definitions only they used;
//! - a definition of the same name and a different content (ignoring
//!   `x-kubernetes-group-version-kind`) is renamed `<name>_v2` (`_v3`, … the first free name,
//!   or the name of an earlier renamed copy with that content), and the source's `$ref`s with
//!   it; the same for top-level parameters;
//! - a definition of the same name and content keeps the destination's, with the source's
//!   group version kinds added (sorted by `group/version.kind`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// `$ref` prefix of definitions.
const DEFINITION: &str = "#/definitions/";
/// `$ref` prefix of top-level parameters.
const PARAMETER: &str = "#/parameters/";
/// The extension two definitions may differ in and still be one.
const GVK: &str = "x-kubernetes-group-version-kind";

/// The object `key` of `doc`, if it is one.
fn section<'a>(doc: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    doc.get(key).and_then(Value::as_object)
}

/// Every `$ref` string anywhere in `value`.
fn refs_in<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs_in(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs_in(v, out)),
        _ => {}
    }
}

/// The definitions `doc`'s paths use, directly or through other definitions and parameters.
fn used_definitions(doc: &Value) -> BTreeSet<String> {
    let definitions = section(doc, "definitions");
    let parameters = section(doc, "parameters");
    let mut pending = Vec::new();
    if let Some(paths) = section(doc, "paths") {
        paths.values().for_each(|p| refs_in(p, &mut pending));
    }
    let mut used = BTreeSet::new();
    let mut walked_parameters = BTreeSet::new();
    while let Some(r) = pending.pop() {
        if let Some(name) = r.strip_prefix(DEFINITION) {
            if used.insert(name.to_string())
                && let Some(def) = definitions.and_then(|d| d.get(name))
            {
                refs_in(def, &mut pending);
            }
        } else if let Some(name) = r.strip_prefix(PARAMETER)
            && walked_parameters.insert(name)
            && let Some(param) = parameters.and_then(|p| p.get(name))
        {
            refs_in(param, &mut pending);
        }
    }
    used
}

/// `doc` with only the paths `keep` accepts, and without the definitions that only the
/// dropped paths used (definitions no path used stay), as upstream's
/// `FilterSpecByPathsWithoutSideEffects`. A document without paths is returned as is.
pub(super) fn filter_paths(doc: &Value, keep: impl Fn(&str) -> bool) -> Value {
    let mut out = doc.clone();
    let Some(paths) = section(doc, "paths") else {
        return out;
    };
    let before = used_definitions(doc);
    out["paths"] = Value::Object(
        paths
            .iter()
            .filter(|(path, _)| keep(path))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    );
    let after = used_definitions(&out);
    if let Some(definitions) = out.get_mut("definitions").and_then(Value::as_object_mut) {
        definitions.retain(|name, _| after.contains(name) || !before.contains(name));
    }
    out
}

/// Whether two definitions are equal but for their group version kinds.
fn same_definition(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove(GVK);
        }
        v
    };
    strip(a) == strip(b)
}

/// The new names of the source's entries of `key` that clash with different ones of `dest`:
/// `<name>_v<i>` for the smallest `i` ≥ 2 naming an equal entry of `dest`, else the first
/// name neither document uses.
fn renames(
    dest: &Value,
    source: &Value,
    key: &str,
    same: fn(&Value, &Value) -> bool,
) -> BTreeMap<String, String> {
    let empty = Map::new();
    let ours = section(dest, key).unwrap_or(&empty);
    let theirs = section(source, key).unwrap_or(&empty);
    let mut taken: BTreeSet<String> = ours.keys().cloned().collect();
    let mut out = BTreeMap::new();
    'names: for (name, value) in theirs {
        match ours.get(name) {
            None => continue,
            Some(existing) if same(existing, value) => continue,
            Some(_) => {}
        }
        let mut i = 1;
        let mut candidate;
        loop {
            i += 1;
            candidate = format!("{name}_v{i}");
            match ours.get(&candidate) {
                Some(existing) if same(existing, value) => {
                    out.insert(name.clone(), candidate);
                    continue 'names;
                }
                Some(_) => {}
                None => break,
            }
        }
        while taken.contains(&candidate) || theirs.contains_key(&candidate) {
            i += 1;
            candidate = format!("{name}_v{i}");
        }
        taken.insert(candidate.clone());
        out.insert(name.clone(), candidate);
    }
    out
}

/// Points every `$ref` of `value` named in `renames` (full references) at its new name.
fn rewrite_refs(value: &mut Value, renames: &BTreeMap<String, String>) {
    match value {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                match v {
                    Value::String(r) if k == "$ref" => {
                        if let Some(new) = renames.get(r.as_str()) {
                            *r = new.clone();
                        }
                    }
                    _ => rewrite_refs(v, renames),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, renames)),
        _ => {}
    }
}

/// Renames the entries of `key` in `source` and the references to them (`prefix`).
fn apply_renames(source: &mut Value, key: &str, prefix: &str, renames: &BTreeMap<String, String>) {
    if renames.is_empty() {
        return;
    }
    let refs: BTreeMap<String, String> = renames
        .iter()
        .map(|(old, new)| (format!("{prefix}{old}"), format!("{prefix}{new}")))
        .collect();
    rewrite_refs(source, &refs);
    if let Some(entries) = source.get_mut(key).and_then(Value::as_object_mut) {
        let taken = std::mem::take(entries);
        for (name, value) in taken {
            let name = renames.get(&name).cloned().unwrap_or(name);
            entries.insert(name, value);
        }
    }
}

/// The key upstream sorts group version kinds by.
fn gvk_key(gvk: &Map<String, Value>) -> String {
    let part = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or_default();
    format!("{}/{}.{}", part("group"), part("version"), part("kind"))
}

/// Adds the group version kinds of `theirs` that `ours` lacks to `ours` (sorted when any was
/// added); lists that are not lists of objects are left alone.
fn merge_gvks(ours: &mut Value, theirs: &Value) {
    let Some(their_list) = theirs.get(GVK) else {
        return;
    };
    let Some(ours) = ours.as_object_mut() else {
        return;
    };
    let Some(our_list) = ours.get(GVK) else {
        ours.insert(GVK.to_string(), their_list.clone());
        return;
    };
    let (Some(mine), Some(their_items)) = (our_list.as_array(), their_list.as_array()) else {
        return;
    };
    let mut merged: Vec<(String, Value)> = Vec::new();
    for item in mine {
        let Some(gvk) = item.as_object() else {
            return;
        };
        merged.push((gvk_key(gvk), item.clone()));
    }
    let seen: BTreeSet<String> = merged.iter().map(|(k, _)| k.clone()).collect();
    let mut changed = false;
    for item in their_items {
        let Some(gvk) = item.as_object() else {
            return;
        };
        let key = gvk_key(gvk);
        if !seen.contains(&key) {
            merged.push((key, item.clone()));
            changed = true;
        }
    }
    if changed {
        merged.sort_by(|a, b| a.0.cmp(&b.0));
        ours.insert(
            GVK.to_string(),
            Value::Array(merged.into_iter().map(|(_, v)| v).collect()),
        );
    }
}

/// Merges `source` into `dest` (see the module documentation). A source without paths, or
/// whose paths `dest` all has, adds nothing.
pub(super) fn merge(dest: &mut Value, source: &Value) {
    let Some(their_paths) = section(source, "paths") else {
        return;
    };
    if !dest.is_object() {
        return;
    }
    let our_paths = section(dest, "paths");
    let free: BTreeSet<&str> = their_paths
        .keys()
        .filter(|p| !our_paths.is_some_and(|ours| ours.contains_key(*p)))
        .map(String::as_str)
        .collect();
    if free.is_empty() {
        return;
    }
    let mut source = if free.len() == their_paths.len() {
        source.clone()
    } else {
        filter_paths(source, |p| free.contains(p))
    };
    let definitions = renames(dest, &source, "definitions", same_definition);
    apply_renames(&mut source, "definitions", DEFINITION, &definitions);
    let parameters = renames(dest, &source, "parameters", |a, b| a == b);
    apply_renames(&mut source, "parameters", PARAMETER, &parameters);
    for key in ["definitions", "parameters", "paths"] {
        let Some(theirs) = source.get_mut(key).and_then(Value::as_object_mut) else {
            continue;
        };
        let theirs = std::mem::take(theirs);
        if !dest.get(key).is_some_and(Value::is_object) {
            dest[key] = Value::Object(Map::new());
        }
        let Some(ours) = dest.get_mut(key).and_then(Value::as_object_mut) else {
            continue;
        };
        for (name, value) in theirs {
            match ours.get_mut(&name) {
                None => {
                    ours.insert(name, value);
                }
                Some(existing) if key == "definitions" => merge_gvks(existing, &value),
                Some(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gvk(group: &str, version: &str, kind: &str) -> Value {
        json!({"group": group, "version": version, "kind": kind})
    }

    #[test]
    fn a_clashing_definition_is_renamed_with_its_references() {
        let mut dest = json!({
            "paths": {"/api/v1/pods": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/Meta"}}}}}},
            "definitions": {"Meta": {"description": "ours", "type": "object"}},
        });
        let source = json!({
            "paths": {"/apis/w/v1/flunders": {"get": {"responses": {"200": {"schema": {"$ref": "#/definitions/Flunder"}}}}}},
            "definitions": {
                "Meta": {"description": "theirs", "type": "object"},
                "Flunder": {"properties": {"metadata": {"$ref": "#/definitions/Meta"}}},
            },
        });
        merge(&mut dest, &source);
        assert_eq!(dest["definitions"]["Meta"]["description"], "ours");
        assert_eq!(dest["definitions"]["Meta_v2"]["description"], "theirs");
        assert_eq!(
            dest["definitions"]["Flunder"]["properties"]["metadata"]["$ref"],
            "#/definitions/Meta_v2"
        );
        assert_eq!(
            dest["paths"]["/api/v1/pods"]["get"]["responses"]["200"]["schema"]["$ref"],
            "#/definitions/Meta",
            "our references are untouched"
        );

        // A second server with the same clashing copy reuses `Meta_v2`; a third content
        // takes the next free name, past names either document holds.
        let again = json!({
            "paths": {"/apis/x/v1/a": {"get": {"parameters": [{"in": "body", "schema": {"$ref": "#/definitions/Meta"}}]}}},
            "definitions": {"Meta": {"description": "theirs", "type": "object"}},
        });
        merge(&mut dest, &again);
        assert_eq!(
            dest["paths"]["/apis/x/v1/a"]["get"]["parameters"][0]["schema"]["$ref"],
            "#/definitions/Meta_v2"
        );
        assert!(dest["definitions"].get("Meta_v3").is_none());
        let third = json!({
            "paths": {"/apis/y/v1/b": {"get": {"parameters": [{"in": "body", "schema": {"$ref": "#/definitions/Meta"}}]}}},
            "definitions": {"Meta": {"description": "third"}, "Meta_v3": {"description": "taken"}},
        });
        merge(&mut dest, &third);
        assert_eq!(dest["definitions"]["Meta_v4"]["description"], "third");
        assert_eq!(dest["definitions"]["Meta_v3"]["description"], "taken");
        assert_eq!(
            dest["paths"]["/apis/y/v1/b"]["get"]["parameters"][0]["schema"]["$ref"],
            "#/definitions/Meta_v4"
        );
    }

    #[test]
    fn equal_definitions_are_one_with_both_kinds() {
        let mut dest = json!({"paths": {}, "definitions": {"Scale": {"type": "object",
            GVK: [gvk("autoscaling", "v1", "Scale")]}}});
        let source = json!({"paths": {"/apis/w/v1/x": {}}, "definitions": {"Scale": {"type": "object",
            GVK: [gvk("autoscaling", "v1", "Scale"), gvk("", "v1", "Scale")]}}});
        merge(&mut dest, &source);
        assert!(dest["definitions"].get("Scale_v2").is_none());
        assert_eq!(
            dest["definitions"]["Scale"][GVK],
            json!([gvk("", "v1", "Scale"), gvk("autoscaling", "v1", "Scale")]),
            "sorted by group/version.kind"
        );
    }

    #[test]
    fn path_conflicts_keep_ours_and_drop_what_only_they_used() {
        let mut dest = json!({"paths": {"/api/v1/pods": {"get": {"description": "ours"}}},
                              "definitions": {}});
        let source = json!({
            "paths": {
                "/api/v1/pods": {"get": {"description": "theirs", "parameters": [{"schema": {"$ref": "#/definitions/OnlyPods"}}]}},
                "/apis/w/v1/x": {"get": {"parameters": [{"schema": {"$ref": "#/definitions/Shared"}}]}},
            },
            "definitions": {"OnlyPods": {}, "Shared": {}, "Unused": {}},
        });
        merge(&mut dest, &source);
        assert_eq!(dest["paths"]["/api/v1/pods"]["get"]["description"], "ours");
        assert!(dest["paths"]["/apis/w/v1/x"].is_object());
        assert!(dest["definitions"].get("OnlyPods").is_none());
        assert!(dest["definitions"]["Shared"].is_object());
        assert!(
            dest["definitions"]["Unused"].is_object(),
            "a definition no path used stays"
        );

        // All paths taken: nothing of the source is merged; no paths at all: neither.
        let before = dest.clone();
        merge(
            &mut dest,
            &json!({"paths": {"/api/v1/pods": {}}, "definitions": {"New": {}}}),
        );
        merge(&mut dest, &json!({"definitions": {"Other": {}}}));
        assert_eq!(dest, before);
    }

    #[test]
    fn clashing_parameters_are_renamed() {
        let mut dest = json!({"paths": {}, "parameters": {"body": {"in": "body", "name": "ours"}}});
        let source = json!({
            "paths": {"/apis/w/v1/x": {"post": {"parameters": [{"$ref": "#/parameters/body"}]}}},
            "parameters": {"body": {"in": "body", "name": "theirs"}},
        });
        merge(&mut dest, &source);
        assert_eq!(dest["parameters"]["body"]["name"], "ours");
        assert_eq!(dest["parameters"]["body_v2"]["name"], "theirs");
        assert_eq!(
            dest["paths"]["/apis/w/v1/x"]["post"]["parameters"][0]["$ref"],
            "#/parameters/body_v2"
        );
    }
}
