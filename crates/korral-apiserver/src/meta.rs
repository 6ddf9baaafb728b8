//! Small accessors for object metadata inside JSON documents.

use serde_json::{Map, Value};

/// The current time as upstream formats timestamps: RFC 3339, seconds, UTC.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// `metadata` of an object, if it is an object.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// Mutable `metadata`, created when absent (replacing a non-object value).
pub fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    metadata(obj)?.get(field)?.as_str()
}

/// `metadata.name`.
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> Option<&str> {
    meta_str(obj, "namespace").filter(|s| !s.is_empty())
}

/// `metadata.uid`.
pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid").unwrap_or("")
}

/// `metadata.resourceVersion`.
pub fn resource_version(obj: &Value) -> &str {
    meta_str(obj, "resourceVersion").unwrap_or("")
}

/// `metadata.labels`.
pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    metadata(obj)?.get("labels")?.as_object()
}

/// `metadata.finalizers` as strings.
pub fn finalizers(obj: &Value) -> Vec<String> {
    strings(metadata(obj).and_then(|m| m.get("finalizers")))
}

/// An object's `apiVersion` (`""` when absent).
pub fn api_version(obj: &Value) -> &str {
    obj.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

/// `metadata.generation` (`0` when unset).
pub fn generation(obj: &Value) -> i64 {
    path(obj, "metadata.generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The strings of a JSON array (non-strings skipped); empty when absent.
pub fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces `metadata.finalizers` (removing the field when empty).
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    if let Some(meta) = metadata_mut(obj) {
        if finalizers.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert(
                "finalizers".into(),
                Value::Array(finalizers.iter().cloned().map(Value::String).collect()),
            );
        }
    }
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    meta_str(obj, "deletionTimestamp").is_some()
}

/// `metadata.ownerReferences`.
pub fn owner_references(obj: &Value) -> &[Value] {
    metadata(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Reads a dotted path (`spec.replicas`) from an object.
pub fn path<'a>(obj: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .try_fold(obj, |v, key| v.get(key))
}

/// Sets a dotted path, creating intermediate objects.
pub fn set_path(obj: &mut Value, dotted: &str, value: Value) {
    let parts: Vec<&str> = dotted
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect();
    let Some((last, head)) = parts.split_last() else {
        return;
    };
    let mut cur = obj;
    for key in head {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        cur = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    if !cur.is_object() {
        *cur = Value::Object(Map::new());
    }
    if let Some(map) = cur.as_object_mut() {
        map.insert(last.to_string(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_read_and_write() {
        let mut obj = json!({"spec": {"replicas": 2}});
        assert_eq!(path(&obj, ".spec.replicas"), Some(&json!(2)));
        set_path(&mut obj, ".status.replicas", json!(3));
        assert_eq!(obj["status"]["replicas"], 3);
        assert!(now_rfc3339().ends_with('Z'));
    }
}
