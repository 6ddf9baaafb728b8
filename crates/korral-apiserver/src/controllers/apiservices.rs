//! The APIService controllers upstream runs in the aggregator: autoregistration of the local
//! APIServices (built-in group versions and those of CRDs, see
//! [`crate::kinds::apiregistration::local`]) and the availability controllers writing their
//! `Available` condition (see [`crate::kinds::apiregistration::availability`]).
//!
//! One reconcile brings every APIService up to date; it runs on start and whenever an
//! APIService, a CRD, a Service or an EndpointSlice changes. Writes go through the write
//! pipeline as the server's own. The discovery check of an aggregated APIService runs in a
//! probe of its own ([`crate::aggregator::probe`]), started here once the checks before it
//! pass and stopped when they no longer do; the probe rewrites the condition itself.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, LazyLock};

use serde_json::Value;

use crate::error::ApiError;
use crate::kinds::apiregistration::{GROUP, RESOURCE, availability, local, with_status};
use crate::meta;
use crate::objects::{DeleteOptions, Objects, Part, WriteOptions};
use crate::registry::ResourceInfo;
use crate::storage::collection_prefix;

/// Where the objects whose changes can change an APIService are stored.
static WATCHED: LazyLock<[String; 4]> = LazyLock::new(|| {
    [
        collection_prefix(GROUP, RESOURCE, None),
        collection_prefix("apiextensions.k8s.io", "customresourcedefinitions", None),
        collection_prefix("", "services", None),
        collection_prefix("discovery.k8s.io", "endpointslices", None),
    ]
});

/// Whether a change at this storage key calls for a reconcile.
pub(super) fn concerns(key: &str) -> bool {
    WATCHED
        .iter()
        .any(|prefix| key.starts_with(prefix.as_str()))
}

/// Creates, updates and deletes the managed local APIServices, then brings every
/// APIService's `Available` condition up to date. As upstream's autoregistration, the
/// APIServices of built-in group versions (`onstart`) are created and updated only `on_start`;
/// later a client may change or delete them. Every item is attempted; the first error is
/// answered (the work is retried).
pub(super) async fn reconcile(objects: &Objects, on_start: bool) -> Result<(), ApiError> {
    let Some(info) = objects.registry().get(GROUP, "v1", RESOURCE) else {
        return Ok(());
    };
    let snapshot = objects.storage().snapshot();
    let wanted = local::desired(objects.registry(), &snapshot);
    let prefix = collection_prefix(GROUP, RESOURCE, None);
    let stored: BTreeMap<String, Value> = snapshot
        .range(&prefix, None)
        .map(|(_, obj)| (meta::name(obj).to_string(), (**obj).clone()))
        .collect();
    let mut results = Vec::new();
    for (name, want) in &wanted {
        if !on_start && local::managed(want) == Some(local::ON_START) {
            continue;
        }
        match stored.get(name) {
            None => results.push(create(objects, &info, want.clone()).await),
            Some(current) if local::managed(current).is_none() => {}
            Some(current) if current.get("spec") != want.get("spec") => {
                let spec = want.get("spec").cloned().unwrap_or(Value::Null);
                results.push(
                    write(objects, &info, current, Part::Main, move |obj| {
                        if let Some(map) = obj.as_object_mut() {
                            map.insert("spec".into(), spec.clone());
                        }
                    })
                    .await,
                );
            }
            Some(_) => {}
        }
    }
    for (name, current) in &stored {
        if wanted.contains_key(name) || local::managed(current).is_none() {
            continue;
        }
        results.push(remove(objects, &info, current).await);
    }
    let aggregator = objects.aggregator();
    let mut existing = HashSet::new();
    let mut probing = HashSet::new();
    for (name, current) in &stored {
        if meta::path(current, "spec.service").is_some_and(Value::is_object) {
            existing.insert(name.clone());
            if availability::stage(&snapshot, current) == availability::Stage::Discovery {
                aggregator.ensure_probe(current);
                probing.insert(name.clone());
            }
        }
    }
    aggregator.retain(&probing, &existing);
    for current in stored.values() {
        let Some(status) = availability::updated_status(&snapshot, aggregator, current) else {
            continue;
        };
        results.push(
            write(objects, &info, current, Part::Status, move |obj| {
                *obj = with_status(obj, status.clone());
            })
            .await,
        );
    }
    results
        .into_iter()
        .find_map(Result::err)
        .map_or(Ok(()), Err)
}

/// Creates a missing local APIService; one created meanwhile is fine.
async fn create(objects: &Objects, info: &Arc<ResourceInfo>, obj: Value) -> Result<(), ApiError> {
    match objects
        .create(info, None, obj, &WriteOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Changes the stored APIService `current` (only that incarnation) through `part`.
async fn write<F>(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    current: &Value,
    part: Part,
    change: F,
) -> Result<(), ApiError>
where
    F: Fn(&mut Value) + Send + Sync + 'static,
{
    match objects
        .update_with(
            info,
            None,
            meta::name(current),
            meta::uid(current),
            part,
            &WriteOptions::default(),
            change,
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes a managed APIService nothing serves any more (only that incarnation).
async fn remove(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    current: &Value,
) -> Result<(), ApiError> {
    let uid = meta::uid(current);
    let opts = DeleteOptions {
        precondition_uid: (!uid.is_empty()).then(|| uid.to_string()),
        ..DeleteOptions::default()
    };
    match objects.delete(info, None, meta::name(current), &opts).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}
