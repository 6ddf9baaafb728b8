//! How a read shows its objects, chosen by the `Accept` header: as themselves, as a `Table`
//! (`as=Table;g=meta.k8s.io`, see [`super::table`]) or as metadata only
//! (`as=PartialObjectMetadata[List];g=meta.k8s.io`, what controller-runtime's metadata-only
//! caches and kube's `metadata_watcher` ask for, so large objects such as Secrets do not cross
//! the wire whole).

use serde_json::{Map, Value, json};

use super::table::{self, IncludeObject};

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

impl View {
    /// The view the `Accept` values ask for; the first media type naming one wins.
    pub fn negotiate<'a>(accept: impl IntoIterator<Item = &'a str>, include: Option<&str>) -> Self {
        for media in accept.into_iter().flat_map(|v| v.split(',')) {
            if table::wants_table(media) {
                return View::Table(IncludeObject::parse(include));
            }
            if wants_metadata(media) {
                return View::Metadata;
            }
        }
        View::Object
    }
}

/// Whether one media type asks for `PartialObjectMetadata` or `PartialObjectMetadataList`.
fn wants_metadata(media: &str) -> bool {
    let params: Vec<&str> = media.split(';').map(str::trim).collect();
    let kind = params
        .iter()
        .any(|p| *p == "as=PartialObjectMetadata" || *p == "as=PartialObjectMetadataList");
    let version = params.iter().any(|p| *p == "v=v1" || *p == "v=v1beta1");
    kind && version && params.contains(&"g=meta.k8s.io")
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
    fn accept_headers_choose_the_view() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
        assert_eq!(
            View::negotiate([table], None),
            View::Table(IncludeObject::Metadata)
        );
        let meta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(View::negotiate([meta], None), View::Metadata);
        let meta_one =
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json";
        assert_eq!(View::negotiate([meta_one], None), View::Metadata);
        assert_eq!(View::negotiate(["application/json"], None), View::Object);
        // Another group's kind of the same name is not ours.
        let other = "application/json;as=PartialObjectMetadata;g=example.com;v=v1";
        assert_eq!(View::negotiate([other], None), View::Object);
    }

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
