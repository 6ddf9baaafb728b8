//! Test helpers of the core kinds: objects with an arbitrary JSON value planted at one of a
//! kind's field paths, for the property tests that validation never panics.

use proptest::prelude::*;
use serde_json::Value;

/// Sets the dotted `path` of `obj` to `value`, creating objects on the way (a non-object in the
/// way is replaced).
pub(super) fn plant(obj: &mut Value, path: &str, value: Value) {
    let mut cur = obj;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Default::default());
        }
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        if i + 1 == parts.len() {
            map.insert((*part).to_string(), value);
            return;
        }
        cur = map
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
}

/// `base` with an arbitrary value at one of `paths`.
pub(super) fn mutated(base: Value, paths: &'static [&'static str]) -> impl Strategy<Value = Value> {
    (
        0..paths.len(),
        crate::validation::podspec::tests::any_json(),
    )
        .prop_map(move |(i, value)| {
            let mut obj = base.clone();
            plant(&mut obj, paths[i], value);
            obj
        })
}
