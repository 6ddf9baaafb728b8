//! How a read shows its objects, chosen by the `Accept` header (see [`super::negotiate`]): as
//! themselves, as a `Table` (`as=Table;g=meta.k8s.io`, see [`super::table`]) or as metadata only
//! (`as=PartialObjectMetadata[List];g=meta.k8s.io`, what controller-runtime's metadata-only
//! caches and kube's `metadata_watcher` ask for, so large objects such as Secrets do not cross
//! the wire whole).

use serde_json::{Map, Value, json};

use super::table::IncludeObject;

/// The API version of the metadata-only kinds.
const META_API_VERSION: &str = "meta.k8s.io/v1";

/// How objects are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The objects themselves.
    Object,
    /// A `Table` of them.
    Table(IncludeObject),
    /// `PartialObjectMetadata` (in lists: `PartialObjectMetadataList`).
    Metadata,
}

/// `obj` as a `PartialObjectMetadata`: its metadata only.
pub fn partial_object(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": META_API_VERSION,
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A `PartialObjectMetadataList` with the list's `metadata` and no items yet (`"items": []`,
/// filled by the list's writer).
pub fn partial_list_envelope(metadata: Map<String, Value>) -> Map<String, Value> {
    let mut list = Map::new();
    list.insert("kind".into(), json!("PartialObjectMetadataList"));
    list.insert("apiVersion".into(), json!(META_API_VERSION));
    list.insert("metadata".into(), Value::Object(metadata));
    list.insert("items".into(), json!([]));
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_objects_keep_only_the_metadata() {
        let secret = json!({"kind": "Secret", "apiVersion": "v1",
            "metadata": {"name": "s", "labels": {"a": "b"}}, "data": {"k": "dmFsdWU="}});
        let partial = partial_object(&secret);
        assert_eq!(
            partial,
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "s", "labels": {"a": "b"}}})
        );
        let mut meta = Map::new();
        meta.insert("resourceVersion".into(), json!("7"));
        let list = partial_list_envelope(meta);
        assert_eq!(list["kind"], "PartialObjectMetadataList");
        assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(list["metadata"]["resourceVersion"], "7");
        assert_eq!(list["items"], json!([]));
    }
}
