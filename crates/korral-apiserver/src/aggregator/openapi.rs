//! The OpenAPI documents of aggregated servers, as kube-aggregator's OpenAPI controllers
//! (`pkg/controllers/openapi`, `openapiv3`) serve them: each available APIService's
//! extension server is asked for its `/openapi/v2` and for the `/openapi/v3` document of its
//! group version (found through its `/openapi/v3` index), as `system:aggregator` in
//! `system:masters`, over the APIService's mutual-TLS transport. The probe fetches them on its
//! first passing check and again every [`REFRESH`]; a failed download keeps the last
//! documents; deleting the APIService drops them.
//!
//! The server's `/openapi/v2` is the built-in document with the extension servers' paths
//! under their group version and their definitions merged in as upstream merges them (a path
//! the server has stays the server's; a definition of the same name and a different content is
//! renamed `<name>_v2`), merged once per change of either and kept, with its encodings;
//! `/openapi/v3` lists `apis/<group>/<version>` of each aggregated version with the hash of its
//! document, and that path serves the backend's document as it sent it.

mod swagger_merge;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::{Value, json};

use super::transport::{self, Backend};
use crate::openapi::{Served, V2Document};
use crate::registry::Registry;

/// How often the documents of an available APIService are downloaded again (upstream's
/// one-minute resync).
pub(crate) const REFRESH: Duration = Duration::from_secs(60);
/// How long one download may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest document read.
const MAX_DOCUMENT: usize = 32 * 1024 * 1024;

/// The documents one extension server serves for its group version.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spec {
    /// The APIService's group.
    pub group: String,
    /// The APIService's version.
    pub version: String,
    /// The APIService's `groupPriorityMinimum` (the merge order of `/openapi/v2`).
    pub group_priority: i64,
    /// Its Swagger 2.0 document (`/openapi/v2`), when it serves one.
    pub v2: Option<Arc<Value>>,
    /// Its OpenAPI 3 document of the group version, as it sent it.
    pub v3: Option<Arc<Served>>,
}

/// The merged Swagger 2.0 document, valid for one built-in document and one generation of
/// the aggregated ones.
struct MergedV2 {
    base: Arc<Value>,
    generation: u64,
    document: Arc<V2Document>,
}

/// The downloaded documents of every aggregated APIService and the merged v2 document.
#[derive(Default)]
pub(crate) struct Specs {
    /// By APIService name, with a generation bumped on every change.
    by_name: Mutex<(BTreeMap<String, Arc<Spec>>, u64)>,
    /// The last merge.
    merged: Mutex<Option<MergedV2>>,
}

impl Specs {
    /// Records the documents of the APIService `name` (a change bumps the generation).
    pub(crate) fn record(&self, name: &str, spec: Spec) {
        let mut guard = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        let (specs, generation) = &mut *guard;
        if specs.get(name).is_some_and(|s| **s == spec) {
            return;
        }
        tracing::debug!(apiservice = %name, v2 = spec.v2.is_some(), v3 = spec.v3.is_some(), "aggregated OpenAPI updated");
        specs.insert(name.to_string(), Arc::new(spec));
        *generation += 1;
    }

    /// The documents recorded for the APIService `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Spec>> {
        let guard = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.get(name).cloned()
    }

    /// Drops the documents of APIServices for which `keep` is false.
    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        let mut guard = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        let (specs, generation) = &mut *guard;
        let before = specs.len();
        specs.retain(|name, _| keep(name));
        if specs.len() != before {
            *generation += 1;
        }
    }

    /// Every recorded spec (by APIService name) and the generation.
    fn snapshot(&self) -> (Vec<Arc<Spec>>, u64) {
        let guard = self.by_name.lock().unwrap_or_else(|e| e.into_inner());
        (guard.0.values().cloned().collect(), guard.1)
    }

    /// The merged v2 document, merged again only when the built-in document or the
    /// aggregated ones changed; `None` when no extension server has one.
    fn merged(&self, base: &V2Document) -> Option<Arc<V2Document>> {
        let (specs, generation) = self.snapshot();
        if specs.iter().all(|s| s.v2.is_none()) {
            return None;
        }
        let mut merged = self.merged.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = merged
            .as_ref()
            .filter(|m| m.generation == generation && Arc::ptr_eq(&m.base, &base.doc))
        {
            return Some(hit.document.clone());
        }
        let document = Arc::new(V2Document::new(Arc::new(merge_v2(&base.doc, &specs))));
        *merged = Some(MergedV2 {
            base: base.doc.clone(),
            generation,
            document: document.clone(),
        });
        Some(document)
    }
}

/// The built-in document with each aggregated document merged in as kube-aggregator merges
/// them: extension servers by descending priority of their group (the highest
/// `groupPriorityMinimum` of its APIServices), then by APIService name; of each, only the
/// paths under its `/apis/<group>/<version>/` (see [`swagger_merge`] for the rest).
fn merge_v2(base: &Value, specs: &[Arc<Spec>]) -> Value {
    let mut group_priority: BTreeMap<&str, i64> = BTreeMap::new();
    for spec in specs {
        let p = group_priority
            .entry(&spec.group)
            .or_insert(spec.group_priority);
        *p = (*p).max(spec.group_priority);
    }
    let mut ordered: Vec<&Arc<Spec>> = specs.iter().collect();
    // Stable: equal priorities keep the APIServices' name order.
    ordered.sort_by_key(|s| std::cmp::Reverse(group_priority.get(s.group.as_str()).copied()));
    let mut doc = base.clone();
    for spec in ordered {
        if let Some(v2) = &spec.v2 {
            let prefix = format!("/apis/{}/{}/", spec.group, spec.version);
            let source = swagger_merge::filter_paths(v2, |path| path.starts_with(&prefix));
            swagger_merge::merge(&mut doc, &source);
        }
    }
    doc
}

/// The served Swagger 2.0 document: the built-in one, merged with the aggregated ones.
pub(crate) fn v2_document(specs: &Specs, registry: &Registry) -> Arc<V2Document> {
    let base = crate::openapi::v2_document(registry);
    specs.merged(&base).unwrap_or(base)
}

/// The served `/openapi/v3` index: the built-in one with each aggregated group version.
pub(crate) fn v3_index(specs: &Specs, registry: &Registry) -> Value {
    let mut index = crate::openapi::v3_index(registry);
    let (specs, _) = specs.snapshot();
    if let Some(paths) = index.get_mut("paths").and_then(Value::as_object_mut) {
        for spec in &specs {
            if let Some(served) = &spec.v3 {
                let path = crate::openapi::v3_path(&spec.group, &spec.version);
                let url = crate::openapi::v3_url(&path, &served.hash);
                paths.insert(path, json!({"serverRelativeURL": url}));
            }
        }
    }
    index
}

/// The aggregated OpenAPI 3 document of `group`/`version` as its extension server sent it,
/// if one serves it.
pub(crate) fn v3_group_version(specs: &Specs, group: &str, version: &str) -> Option<Arc<Served>> {
    let (specs, _) = specs.snapshot();
    specs
        .iter()
        .find(|s| s.group == group && s.version == version)
        .and_then(|s| s.v3.clone())
}

/// Downloads the documents of the group version of `apiservice` from `backend`; a document
/// that cannot be read is `None` (the caller keeps what it had).
pub(crate) async fn fetch(backend: &Backend, apiservice: &Value) -> Spec {
    let field = |name: &str| {
        apiservice
            .pointer(&format!("/spec/{name}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (group, version) = (field("group"), field("version"));
    let group_priority = apiservice
        .pointer("/spec/groupPriorityMinimum")
        .and_then(Value::as_i64)
        .unwrap_or_default();
    let v2 = get(backend, "/openapi/v2")
        .await
        .map(|(doc, _)| Arc::new(doc));
    let path = crate::openapi::v3_path(&group, &version);
    let v3 = match get(backend, "/openapi/v3").await {
        Some((index, _)) => {
            let url = index
                .get("paths")
                .and_then(|p| p.get(&path))
                .and_then(|p| p.get("serverRelativeURL"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("/openapi/v3/{path}"));
            // Served as sent: its hash is then the one the server itself would give it.
            get(backend, &url)
                .await
                .map(|(_, bytes)| Arc::new(Served::new(bytes)))
        }
        None => None,
    };
    Spec {
        group,
        version,
        group_priority,
        v2,
        v3,
    }
}

/// One JSON document from `backend` and its bytes (`None`, logged, when it cannot be had).
async fn get(backend: &Backend, path: &str) -> Option<(Value, Bytes)> {
    let request = http::Request::builder()
        .method(http::Method::GET)
        .uri(path)
        .header(http::header::HOST, backend.addr.to_string())
        .header(http::header::ACCEPT, "application/json")
        .header("X-Remote-User", "system:aggregator")
        .header("X-Remote-Group", "system:masters")
        .body(Full::new(Bytes::new()))
        .ok()?;
    let exchange = async {
        let response = transport::send(backend, request).await?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status().as_u16()));
        }
        let body = Limited::new(response.into_body(), MAX_DOCUMENT)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let doc = serde_json::from_slice::<Value>(&body).map_err(|e| e.to_string())?;
        Ok((doc, body))
    };
    match tokio::time::timeout(TIMEOUT, exchange).await {
        Ok(Ok((doc, body))) if doc.is_object() => Some((doc, body)),
        Ok(Ok(_)) => {
            tracing::debug!(%path, "aggregated OpenAPI document is not an object");
            None
        }
        Ok(Err(why)) => {
            tracing::debug!(%path, error = %why, "downloading aggregated OpenAPI");
            None
        }
        Err(_) => {
            tracing::debug!(%path, "downloading aggregated OpenAPI timed out");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(group: &str, priority: i64, v2: Value) -> Spec {
        Spec {
            group: group.into(),
            version: "v1".into(),
            group_priority: priority,
            v2: Some(Arc::new(v2)),
            v3: None,
        }
    }

    /// A document of `group`/v1 with one path using the definition `name` of `content`.
    fn document(group: &str, name: &str, content: &str) -> Value {
        json!({"paths": {
                  format!("/apis/{group}/v1/things"): {"get": {"responses": {"200": {"schema": {"$ref": format!("#/definitions/{name}")}}}}},
                  "/api/v1/pods": {"post": {}},
                  "/apis/other.example.com/v1/x": {"get": {}},
               },
               "definitions": {name: {"description": content}}})
    }

    #[test]
    fn built_in_paths_stay_and_clashing_definitions_are_renamed() {
        let base = json!({"swagger": "2.0", "paths": {"/api/v1/pods": {"get": {}}},
                          "definitions": {"io.k8s.Meta": {"description": "ours"}}});
        let theirs = Arc::new(spec(
            "wardle.example.com",
            100,
            document("wardle.example.com", "io.k8s.Meta", "theirs"),
        ));
        let merged = merge_v2(&base, &[theirs]);
        assert_eq!(merged["paths"]["/api/v1/pods"], json!({"get": {}}));
        assert!(merged["paths"]["/apis/wardle.example.com/v1/things"].is_object());
        assert!(
            merged["paths"]
                .get("/apis/other.example.com/v1/x")
                .is_none(),
            "only the paths of the APIService's group version"
        );
        assert_eq!(merged["definitions"]["io.k8s.Meta"]["description"], "ours");
        assert_eq!(
            merged["definitions"]["io.k8s.Meta_v2"]["description"],
            "theirs"
        );
        assert_eq!(
            merged["paths"]["/apis/wardle.example.com/v1/things"]["get"]["responses"]["200"]["schema"]
                ["$ref"],
            "#/definitions/io.k8s.Meta_v2"
        );
    }

    #[test]
    fn higher_priority_groups_merge_first() {
        let base = json!({"paths": {}, "definitions": {}});
        // By name `a.low` would come first; its group's priority puts it second.
        let low = Arc::new(spec(
            "a.example.com",
            100,
            document("a.example.com", "Shared", "low"),
        ));
        let high = Arc::new(spec(
            "b.example.com",
            2000,
            document("b.example.com", "Shared", "high"),
        ));
        let merged = merge_v2(&base, &[low, high]);
        assert_eq!(merged["definitions"]["Shared"]["description"], "high");
        assert_eq!(merged["definitions"]["Shared_v2"]["description"], "low");
        // Equal priorities: by APIService name.
        let first = Arc::new(spec(
            "a.example.com",
            100,
            document("a.example.com", "Shared", "a"),
        ));
        let second = Arc::new(spec(
            "b.example.com",
            100,
            document("b.example.com", "Shared", "b"),
        ));
        let merged = merge_v2(&base, &[first, second]);
        assert_eq!(merged["definitions"]["Shared"]["description"], "a");
    }

    #[test]
    fn merges_are_kept_until_something_changes() {
        let specs = Specs::default();
        let base = V2Document::new(Arc::new(json!({"paths": {}, "definitions": {}})));
        assert!(specs.merged(&base).is_none(), "nothing aggregated");
        let first = spec("wardle.example.com", 100, json!({"definitions": {"a": {}}}));
        specs.record("v1.wardle.example.com", first.clone());
        let one = specs.merged(&base).expect("merged");
        let again = specs.merged(&base).expect("merged");
        assert!(Arc::ptr_eq(&one, &again), "kept");
        assert!(Arc::ptr_eq(&one.json(), &again.json()), "encoded once");
        specs.record("v1.wardle.example.com", first);
        let same = specs.merged(&base).expect("merged");
        assert!(
            Arc::ptr_eq(&one, &same),
            "an unchanged download changes nothing"
        );
        specs.retain(|_| false);
        assert!(specs.merged(&base).is_none(), "dropped");
    }

    #[test]
    fn an_unchanged_v3_download_keeps_its_time() {
        let specs = Specs::default();
        let mut spec = spec("wardle.example.com", 100, json!({}));
        spec.v3 = Some(Arc::new(Served::new(b"{\"openapi\":\"3.0.0\"}".to_vec())));
        specs.record("v1.wardle.example.com", spec.clone());
        let kept = v3_group_version(&specs, "wardle.example.com", "v1").expect("kept");
        let mut later = spec;
        later.v3 = Some(Arc::new(Served::new(b"{\"openapi\":\"3.0.0\"}".to_vec())));
        specs.record("v1.wardle.example.com", later);
        let now = v3_group_version(&specs, "wardle.example.com", "v1").expect("kept");
        assert!(
            Arc::ptr_eq(&kept, &now),
            "same bytes: the first download stays"
        );
    }
}
