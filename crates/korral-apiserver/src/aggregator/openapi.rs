//! The OpenAPI documents of aggregated servers, as kube-aggregator's OpenAPI controllers
//! (`pkg/controllers/openapi`, `openapiv3`) serve them: each available APIService's
//! extension server is asked for its `/openapi/v2` and for the `/openapi/v3` document of its
//! group version (found through its `/openapi/v3` index), as `system:aggregator` in
//! `system:masters`, over the APIService's mutual-TLS transport. The probe fetches them on its
//! first passing check and again every [`REFRESH`]; a failed download keeps the last
//! documents; deleting the APIService drops them.
//!
//! The server's `/openapi/v2` is the built-in document with the extension servers' paths and
//! definitions added (the built-in ones win a conflict), merged once per change of either and
//! kept, with its protobuf encoding; `/openapi/v3` lists `apis/<group>/<version>` of each
//! aggregated version with its document's hash, and that path serves the backend's document.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::{Value, json};

use super::transport::{self, Backend};
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
    /// Its Swagger 2.0 document (`/openapi/v2`), when it serves one.
    pub v2: Option<Arc<Value>>,
    /// Its OpenAPI 3 document of the group version and that document's hash.
    pub v3: Option<(Arc<Value>, String)>,
}

/// The protobuf encoding of a merged document, made on first use.
type Protobuf = Arc<OnceLock<Arc<Vec<u8>>>>;

/// The merged Swagger 2.0 document, valid for one built-in document and one generation of
/// the aggregated ones.
struct MergedV2 {
    base: Arc<Value>,
    generation: u64,
    doc: Arc<Value>,
    protobuf: Protobuf,
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

    /// The merged v2 document and its protobuf slot, merged again only when the built-in
    /// document or the aggregated ones changed.
    fn merged(&self, base: Arc<Value>) -> Option<(Arc<Value>, Protobuf)> {
        let (specs, generation) = self.snapshot();
        if specs.iter().all(|s| s.v2.is_none()) {
            return None;
        }
        let mut merged = self.merged.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = merged
            .as_ref()
            .filter(|m| m.generation == generation && Arc::ptr_eq(&m.base, &base))
        {
            return Some((hit.doc.clone(), hit.protobuf.clone()));
        }
        let doc = Arc::new(merge_v2(&base, &specs));
        let protobuf = Arc::new(OnceLock::new());
        *merged = Some(MergedV2 {
            base,
            generation,
            doc: doc.clone(),
            protobuf: protobuf.clone(),
        });
        Some((doc, protobuf))
    }
}

/// The built-in document with each aggregated document's paths and definitions added where
/// the name is free.
fn merge_v2(base: &Value, specs: &[Arc<Spec>]) -> Value {
    let mut doc = base.clone();
    for v2 in specs.iter().filter_map(|s| s.v2.as_ref()) {
        for section in ["paths", "definitions"] {
            let Some(theirs) = v2.get(section).and_then(Value::as_object) else {
                continue;
            };
            if !doc.get(section).is_some_and(Value::is_object) {
                doc[section] = json!({});
            }
            let Some(ours) = doc.get_mut(section).and_then(Value::as_object_mut) else {
                continue;
            };
            for (name, value) in theirs {
                if !ours.contains_key(name) {
                    ours.insert(name.clone(), value.clone());
                }
            }
        }
    }
    doc
}

/// The served Swagger 2.0 document: the built-in one, merged with the aggregated ones.
pub(crate) fn v2(specs: &Specs, registry: &Registry) -> Arc<Value> {
    let base = crate::openapi::v2_shared(registry);
    match specs.merged(base.clone()) {
        Some((doc, _)) => doc,
        None => base,
    }
}

/// The protobuf encoding of [`v2`], encoded once per merged document.
pub(crate) fn v2_protobuf(specs: &Specs, registry: &Registry) -> Arc<Vec<u8>> {
    let base = crate::openapi::v2_shared(registry);
    match specs.merged(base) {
        Some((doc, protobuf)) => protobuf
            .get_or_init(|| Arc::new(crate::openapi_proto::encode_v2(&doc)))
            .clone(),
        None => crate::openapi::v2_protobuf(registry),
    }
}

/// The served `/openapi/v3` index: the built-in one with each aggregated group version.
pub(crate) fn v3_index(specs: &Specs, registry: &Registry) -> Value {
    let mut index = crate::openapi::v3_index(registry);
    let (specs, _) = specs.snapshot();
    if let Some(paths) = index.get_mut("paths").and_then(Value::as_object_mut) {
        for spec in &specs {
            if let Some((_, hash)) = &spec.v3 {
                let path = crate::openapi::v3_path(&spec.group, &spec.version);
                let url = format!("/openapi/v3/{path}?hash={hash}");
                paths.insert(path, json!({"serverRelativeURL": url}));
            }
        }
    }
    index
}

/// The aggregated OpenAPI 3 document of `group`/`version`, if an extension server serves it.
pub(crate) fn v3_group_version(specs: &Specs, group: &str, version: &str) -> Option<Arc<Value>> {
    let (specs, _) = specs.snapshot();
    specs
        .iter()
        .find(|s| s.group == group && s.version == version)
        .and_then(|s| s.v3.as_ref().map(|(doc, _)| doc.clone()))
}

/// Downloads the documents of `group`/`version` from `backend`; a document that cannot be
/// read is `None` (the caller keeps what it had).
pub(crate) async fn fetch(backend: &Backend, group: &str, version: &str) -> Spec {
    let v2 = get(backend, "/openapi/v2").await.map(Arc::new);
    let path = crate::openapi::v3_path(group, version);
    let v3 = match get(backend, "/openapi/v3").await {
        Some(index) => {
            let url = index
                .get("paths")
                .and_then(|p| p.get(&path))
                .and_then(|p| p.get("serverRelativeURL"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("/openapi/v3/{path}"));
            get(backend, &url).await.map(|doc| {
                let hash = crate::openapi::document_hash(&doc);
                (Arc::new(doc), hash)
            })
        }
        None => None,
    };
    Spec {
        group: group.to_string(),
        version: version.to_string(),
        v2,
        v3,
    }
}

/// One JSON document from `backend` (`None`, logged, when it cannot be had).
async fn get(backend: &Backend, path: &str) -> Option<Value> {
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
        serde_json::from_slice::<Value>(&body).map_err(|e| e.to_string())
    };
    match tokio::time::timeout(TIMEOUT, exchange).await {
        Ok(Ok(doc)) if doc.is_object() => Some(doc),
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

    fn spec(v2: Value) -> Arc<Spec> {
        Arc::new(Spec {
            group: "wardle.example.com".into(),
            version: "v1alpha1".into(),
            v2: Some(Arc::new(v2)),
            v3: None,
        })
    }

    #[test]
    fn built_in_paths_and_definitions_win() {
        let base = json!({"swagger": "2.0", "paths": {"/api/v1/pods": {"get": {}}},
                          "definitions": {"io.k8s.Meta": {"description": "ours"}}});
        let theirs = spec(json!({"paths": {"/api/v1/pods": {"post": {}},
                                           "/apis/wardle.example.com/v1alpha1/flunders": {"get": {}}},
                                 "definitions": {"io.k8s.Meta": {"description": "theirs"},
                                                 "com.example.Flunder": {"type": "object"}}}));
        let merged = merge_v2(&base, &[theirs]);
        assert_eq!(merged["paths"]["/api/v1/pods"], json!({"get": {}}));
        assert!(merged["paths"]["/apis/wardle.example.com/v1alpha1/flunders"].is_object());
        assert_eq!(merged["definitions"]["io.k8s.Meta"]["description"], "ours");
        assert_eq!(
            merged["definitions"]["com.example.Flunder"]["type"],
            "object"
        );
    }

    #[test]
    fn merges_are_kept_until_something_changes() {
        let specs = Specs::default();
        let base = Arc::new(json!({"paths": {}, "definitions": {}}));
        assert!(specs.merged(base.clone()).is_none(), "nothing aggregated");
        let first = spec(json!({"definitions": {"a": {}}}));
        specs.record("v1alpha1.wardle.example.com", (*first).clone());
        let (one, _) = specs.merged(base.clone()).expect("merged");
        let (again, _) = specs.merged(base.clone()).expect("merged");
        assert!(Arc::ptr_eq(&one, &again), "kept");
        specs.record("v1alpha1.wardle.example.com", (*first).clone());
        let (same, _) = specs.merged(base.clone()).expect("merged");
        assert!(
            Arc::ptr_eq(&one, &same),
            "an unchanged download changes nothing"
        );
        specs.retain(|_| false);
        assert!(specs.merged(base).is_none(), "dropped");
    }
}
