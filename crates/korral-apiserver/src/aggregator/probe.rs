//! The last check of upstream's remote availability controller
//! (`pkg/controllers/status/remote`): a `GET` of the extension server's discovery document
//! `/apis/<group>/<version>` as `system:kube-aggregator` in `system:masters`, within 5 s. A
//! 2xx passes (`Passed`, `all checks passed`); anything else fails with upstream's message
//! (`failing or missing response from https://…: …`). The document read is kept as the
//! version's discovery entry (upstream's `ConvertGroupVersionIntoToDiscovery`).
//!
//! A probe runs per aggregated APIService in its own task, so a slow or unreachable server
//! never holds up the controllers: it checks, records the outcome, has the `Available`
//! condition rewritten, and checks again after [`RECHECK`] (sooner after failures, backing off
//! as upstream's queue does, and at once when the proxy could not reach the server). It ends
//! when the APIService changes or goes, or the server stops.

use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::{Value, json};

use super::{BackendError, Check};
use crate::kinds::apiregistration::{GROUP, RESOURCE, availability};
use crate::kinds::printer::text;
use crate::objects::Objects;
use crate::storage::object_key;

/// How long the discovery request may take (upstream's client timeout).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);
/// How often an available APIService is checked again (upstream's resync).
const RECHECK: Duration = Duration::from_secs(30);
/// The first wait after a failed check; doubled per failure up to [`RECHECK`].
const FIRST_RETRY: Duration = Duration::from_millis(500);
/// The largest discovery document read.
const MAX_DOCUMENT: usize = 16 * 1024 * 1024;

/// Probes the APIService `name` while its spec keeps `fingerprint`.
pub(crate) async fn run(
    objects: Weak<Objects>,
    name: String,
    fingerprint: String,
    wake: Arc<tokio::sync::Notify>,
) {
    let key = object_key(GROUP, RESOURCE, None, &name);
    let mut failures: u32 = 0;
    // When the OpenAPI documents were last downloaded.
    let mut fetched: Option<tokio::time::Instant> = None;
    loop {
        let (obj, backend) = {
            let Some(strong) = objects.upgrade() else {
                return;
            };
            let snapshot = strong.storage().snapshot();
            let Some(obj) = snapshot.objects.get(&key).cloned() else {
                return;
            };
            if super::fingerprint(&obj) != fingerprint {
                return;
            }
            let backend = super::backend(&strong, &snapshot, &obj);
            (obj, backend)
        };
        let reachable = backend.as_ref().ok().cloned();
        let outcome = check(&obj, backend).await;
        let passed = outcome.is_ok();
        // The documents of an available server, on its first passing check and then every
        // refresh period.
        let due = fetched.is_none_or(|at| at.elapsed() >= super::openapi::REFRESH);
        if let (true, true, Some(reachable)) = (passed, due, reachable) {
            let spec = super::openapi::fetch(&reachable, &obj).await;
            fetched = Some(tokio::time::Instant::now());
            let Some(strong) = objects.upgrade() else {
                return;
            };
            let specs = strong.aggregator().specs();
            let previous = specs.get(&name);
            // A document that could not be downloaded keeps the last one.
            let spec = super::openapi::Spec {
                v2: spec
                    .v2
                    .or_else(|| previous.as_ref().and_then(|p| p.v2.clone())),
                v3: spec
                    .v3
                    .or_else(|| previous.as_ref().and_then(|p| p.v3.clone())),
                ..spec
            };
            specs.record(&name, spec);
        }
        {
            let Some(strong) = objects.upgrade() else {
                return;
            };
            let aggregator = strong.aggregator();
            let previous = aggregator
                .check(&name, &fingerprint)
                .and_then(|c| c.discovery);
            let (error, discovery) = match outcome {
                Ok(discovery) => (None, discovery.or(previous)),
                Err(message) => (Some(message), previous),
            };
            aggregator.record(
                &name,
                Check {
                    fingerprint: fingerprint.clone(),
                    error,
                    discovery,
                },
            );
            if let Err(e) = availability::refresh(&strong, &name).await {
                tracing::debug!(apiservice = %name, error = %e, "writing APIService status");
            }
        }
        let wait = if passed {
            failures = 0;
            RECHECK
        } else {
            failures = failures.saturating_add(1);
            FIRST_RETRY
                .saturating_mul(2u32.saturating_pow(failures.min(8) - 1))
                .min(RECHECK)
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = wake.notified() => {}
        }
    }
}

/// The discovery path of an APIService (`/api/<version>` for `v1.`).
pub(crate) fn discovery_path(obj: &Value) -> String {
    let version = text(obj, "spec.version");
    if crate::meta::name(obj) == "v1." {
        format!("/api/{version}")
    } else {
        format!("/apis/{}/{version}", text(obj, "spec.group"))
    }
}

/// One discovery check: the version's discovery entry when the document parsed, or the
/// condition's message.
async fn check(
    obj: &Value,
    backend: Result<super::transport::Backend, BackendError>,
) -> Result<Option<Value>, String> {
    let backend = backend.map_err(|e| e.to_string())?;
    let url = format!("https://{}{}", backend.addr, discovery_path(obj));
    let failing = |why: String| format!("failing or missing response from {url}: {why}");
    let request = http::Request::builder()
        .method(http::Method::GET)
        .uri(discovery_path(obj))
        .header(http::header::HOST, backend.addr.to_string())
        .header(http::header::ACCEPT, "application/json, */*")
        .header("X-Remote-User", "system:kube-aggregator")
        .header("X-Remote-Group", "system:masters")
        .body(Full::new(Bytes::new()))
        .map_err(|e| failing(e.to_string()))?;
    let exchange = async {
        let response = super::transport::send(&backend, request)
            .await
            .map_err(|e| failing(format!("Get {url:?}: {e}")))?;
        let status = response.status();
        if !status.is_success() {
            return Err(failing(format!(
                "bad status from {url}: {}",
                status.as_u16()
            )));
        }
        let body = Limited::new(response.into_body(), MAX_DOCUMENT)
            .collect()
            .await
            .map(|c| c.to_bytes())
            .map_err(|e| failing(format!("Get {url:?}: {e}")))?;
        Ok(serde_json::from_slice::<Value>(&body)
            .ok()
            .map(|list| version_discovery(text(obj, "spec.version"), &list)))
    };
    match tokio::time::timeout(TIMEOUT, exchange).await {
        Ok(result) => result,
        Err(_) => Err(failing(format!(
            "Get {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        ))),
    }
}

/// An `APIResourceList` as an `APIVersionDiscovery` (upstream's
/// `ConvertGroupVersionIntoToDiscovery`): each resource with its scope, response kind, verbs,
/// names and categories; subresources (`parent/sub`) under their parent.
pub(crate) fn version_discovery(version: &str, list: &Value) -> Value {
    let resources = list
        .get("resources")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let kind_of = |r: &Value| json!({"group": text(r, "group"), "version": text(r, "version"), "kind": text(r, "kind")});
    let scope = |r: &Value| {
        if r.get("namespaced")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            "Namespaced"
        } else {
            "Cluster"
        }
    };
    let mut entries: Vec<Value> = Vec::new();
    for r in resources.iter().filter(|r| !text(r, "name").contains('/')) {
        let mut entry = json!({
            "resource": text(r, "name"),
            "responseKind": kind_of(r),
            "scope": scope(r),
            "singularResource": text(r, "singularName"),
            "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
        });
        for (from, to) in [("shortNames", "shortNames"), ("categories", "categories")] {
            if let Some(v) = r
                .get(from)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                entry[to] = v.clone();
            }
        }
        entries.push(entry);
    }
    for r in resources {
        let Some((parent, sub)) = text(r, "name").split_once('/') else {
            continue;
        };
        let subresource = json!({
            "subresource": sub,
            "responseKind": kind_of(r),
            "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
        });
        match entries.iter_mut().find(|e| e["resource"] == parent) {
            Some(entry) => match entry.get_mut("subresources").and_then(Value::as_array_mut) {
                Some(list) => list.push(subresource),
                None => entry["subresources"] = json!([subresource]),
            },
            None => entries.push(json!({
                "resource": parent,
                "scope": scope(r),
                "subresources": [subresource],
            })),
        }
    }
    json!({"version": version, "resources": entries})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_lists_convert_as_upstream() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "wardle.example.com/v1",
        "resources": [
            {"name": "flunders", "singularName": "flunder", "namespaced": true,
             "kind": "Flunder", "verbs": ["get", "list"], "shortNames": ["fl"]},
            {"name": "flunders/status", "singularName": "", "namespaced": true,
             "kind": "Flunder", "verbs": ["get", "patch"]},
            {"name": "fischers", "singularName": "fischer", "namespaced": false,
             "kind": "Fischer", "verbs": ["get"]},
        ]});
        let doc = version_discovery("v1", &list);
        assert_eq!(doc["version"], "v1");
        assert_eq!(doc["resources"][0]["resource"], "flunders");
        assert_eq!(doc["resources"][0]["scope"], "Namespaced");
        assert_eq!(doc["resources"][0]["shortNames"], json!(["fl"]));
        assert_eq!(
            doc["resources"][0]["responseKind"],
            json!({"group": "", "version": "", "kind": "Flunder"})
        );
        assert_eq!(
            doc["resources"][0]["subresources"][0]["subresource"],
            "status"
        );
        assert_eq!(doc["resources"][1]["scope"], "Cluster");
        assert!(doc["resources"][1].get("subresources").is_none());
    }
}
