//! The `Available` condition of an APIService, as kube-aggregator's availability controllers
//! set it (`pkg/controllers/status/local` and `.../remote`).
//!
//! A local APIService is always available. One backed by a Service goes through upstream's
//! checks in order: the Service exists, a ClusterIP Service listens on the port, EndpointSlices
//! exist for it and one has a ready endpoint with that port's name. Past those, the
//! aggregated server's discovery endpoint is called by a probe running on its own (see
//! [`crate::aggregator::probe`]): its last outcome gives `Passed` or `FailedDiscoveryCheck`.

use serde_json::{Value, json};

use super::{GROUP, RESOURCE, with_status};
use crate::aggregator::Aggregator;
use crate::error::ApiError;
use crate::kinds::printer::text;
use crate::meta;
use crate::objects::{Objects, Part, WriteOptions};
use crate::storage::{Snapshot, collection_prefix, object_key};

/// Where the availability checks of an APIService stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stage {
    /// The condition is decided: status, reason, message.
    Decided(&'static str, &'static str, String),
    /// Every check before the discovery call passed: the aggregated server must be called.
    Discovery,
}

/// The condition of a local APIService (upstream's `NewLocalAvailableAPIServiceCondition`).
pub(crate) fn local_condition() -> Value {
    json!({
        "type": "Available",
        "status": "True",
        "lastTransitionTime": meta::now_rfc3339(),
        "reason": "Local",
        "message": "Local APIServices are always available",
    })
}

/// The `Available` condition of an APIService, if it has one.
pub(crate) fn condition(obj: &Value) -> Option<&Value> {
    meta::path(obj, "status.conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| text(c, "type") == "Available")
}

/// The status, reason and message the `Available` condition of `obj` should have now;
/// `None` while its first discovery check has not answered.
pub(crate) fn expected(
    snapshot: &Snapshot,
    aggregator: &Aggregator,
    obj: &Value,
) -> Option<(&'static str, &'static str, String)> {
    match stage(snapshot, obj) {
        Stage::Decided(status, reason, message) => Some((status, reason, message)),
        Stage::Discovery => {
            let check = aggregator.check(meta::name(obj), &crate::aggregator::fingerprint(obj))?;
            Some(match check.error {
                None => ("True", "Passed", "all checks passed".to_string()),
                Some(message) => ("False", "FailedDiscoveryCheck", message),
            })
        }
    }
}

/// Upstream's checks of `obj` up to the discovery call.
pub(crate) fn stage(snapshot: &Snapshot, obj: &Value) -> Stage {
    let decided = |status, reason, message| Stage::Decided(status, reason, message);
    let Some(reference) = meta::path(obj, "spec.service").filter(|s| s.is_object()) else {
        return decided(
            "True",
            "Local",
            "Local APIServices are always available".to_string(),
        );
    };
    let namespace = text(reference, "namespace");
    let name = text(reference, "name");
    let port = reference.get("port").and_then(Value::as_i64).unwrap_or(443);
    let Some(service) = snapshot
        .objects
        .get(&object_key("", "services", Some(namespace), name))
    else {
        return decided(
            "False",
            "ServiceNotFound",
            format!("service/{name} in {namespace:?} is not present"),
        );
    };
    let service_type = meta::path(service, "spec.type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if service_type == "ClusterIP" {
        let ports = meta::path(service, "spec.ports")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let Some(listening) = ports
            .iter()
            .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
        else {
            return decided(
                "False",
                "ServicePortError",
                format!("service/{name} in {namespace:?} is not listening on port {port}"),
            );
        };
        let port_name = text(listening, "name");
        let prefix = format!(
            "{}{namespace}/",
            collection_prefix("discovery.k8s.io", "endpointslices", None)
        );
        let slices: Vec<&Value> = snapshot
            .range(&prefix, None)
            .map(|(_, slice)| &**slice)
            .filter(|slice| {
                meta::labels(slice)
                    .and_then(|l| l.get("kubernetes.io/service-name"))
                    .and_then(Value::as_str)
                    == Some(name)
            })
            .collect();
        if slices.is_empty() {
            return decided(
                "False",
                "EndpointsNotFound",
                format!("cannot find endpointslices for service/{name} in {namespace:?}"),
            );
        }
        if !slices.iter().any(|s| serves(s, port_name)) {
            return decided(
                "False",
                "MissingEndpoints",
                format!(
                    "endpointslices for service/{name} in {namespace:?} have no addresses with port name {port_name:?}"
                ),
            );
        }
    }
    Stage::Discovery
}

/// Upstream's `hasAvailableEndpoint`: a ready endpoint and a port of that name.
fn serves(slice: &Value, port_name: &str) -> bool {
    let ready = slice
        .get("endpoints")
        .and_then(Value::as_array)
        .is_some_and(|eps| {
            eps.iter().any(|e| {
                meta::path(e, "conditions.ready")
                    .and_then(Value::as_bool)
                    .unwrap_or(true)
            })
        });
    let port = slice
        .get("ports")
        .and_then(Value::as_array)
        .is_some_and(|ports| {
            ports.iter().any(|p| {
                p.get("name").and_then(Value::as_str) == Some(port_name)
                    && p.get("port").is_some_and(|v| !v.is_null())
            })
        });
    ready && port
}

/// The status `obj` should have now, or `None` when its `Available` condition already says
/// so. As upstream's `SetAPIServiceCondition`, the transition time changes only with the
/// condition's status.
pub(crate) fn updated_status(
    snapshot: &Snapshot,
    aggregator: &Aggregator,
    obj: &Value,
) -> Option<Value> {
    let (status, reason, message) = expected(snapshot, aggregator, obj)?;
    let current = condition(obj);
    if let Some(c) = current
        && text(c, "status") == status
        && text(c, "reason") == reason
        && text(c, "message") == message
    {
        return None;
    }
    let since = match current {
        Some(c) if text(c, "status") == status => c
            .get("lastTransitionTime")
            .cloned()
            .unwrap_or_else(|| json!(meta::now_rfc3339())),
        _ => json!(meta::now_rfc3339()),
    };
    let next = json!({
        "type": "Available",
        "status": status,
        "lastTransitionTime": since,
        "reason": reason,
        "message": message,
    });
    let mut status_obj = obj.get("status").cloned().unwrap_or_else(|| json!({}));
    let Some(map) = status_obj.as_object_mut() else {
        return Some(json!({"conditions": [next]}));
    };
    let conditions = map.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Some(list) = conditions.as_array_mut() {
        match list.iter_mut().find(|c| text(c, "type") == "Available") {
            Some(slot) => *slot = next,
            None => list.push(next),
        }
    }
    Some(status_obj)
}

/// Rewrites the `Available` condition of the APIService `name` when it should change (a
/// probe's outcome came in); only that incarnation is written.
pub(crate) async fn refresh(objects: &Objects, name: &str) -> Result<(), ApiError> {
    let Some(info) = objects.registry().get(GROUP, "v1", RESOURCE) else {
        return Ok(());
    };
    let snapshot = objects.storage().snapshot();
    let Some(current) = snapshot
        .objects
        .get(&object_key(GROUP, RESOURCE, None, name))
    else {
        return Ok(());
    };
    let Some(status) = updated_status(&snapshot, objects.aggregator(), current) else {
        return Ok(());
    };
    let uid = meta::uid(current).to_string();
    match objects
        .update_with(
            &info,
            None,
            name,
            &uid,
            Part::Status,
            &WriteOptions::default(),
            move |obj| *obj = with_status(obj, status.clone()),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
