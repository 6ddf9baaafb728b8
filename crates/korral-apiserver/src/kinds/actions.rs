//! Create-only subresources that act on an object rather than store one: `pods/eviction`
//! (deletes a pod unless its PodDisruptionBudget forbids it: 429 as upstream; see
//! [`super::eviction`]) and `pods/binding` (assigns a pod to a node). `serviceaccounts/token`
//! is declared here too (for discovery) and served by `crate::auth::reviews`.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::ApiError;
use crate::error::Cause;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;

/// A create-only subresource of a kind and the kind it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Action {
    /// The subresource (`eviction`).
    pub name: &'static str,
    /// The group of the accepted kind (`policy`).
    pub group: &'static str,
    /// Its version.
    pub version: &'static str,
    /// The accepted kind (`Eviction`).
    pub kind: &'static str,
}

/// The action of `info` named `subresource` (the HTTP layer routes `serviceaccounts/token` to
/// `crate::auth::reviews` before asking).
pub(crate) fn find(info: &ResourceInfo, subresource: Option<&str>) -> Option<Action> {
    let sub = subresource?;
    info.actions.iter().find(|a| a.name == sub).copied()
}

/// The resource and action a create-only collection stands for, acting on the object its body
/// names: upstream's top-level `bindings` binds the pod a `Binding`'s `metadata.name` names,
/// as `pods/<name>/binding` does.
pub(crate) fn for_collection(info: &ResourceInfo) -> Option<(&'static str, &'static str)> {
    match (info.group.as_str(), info.resource.as_str()) {
        ("", "bindings") => Some(("pods", "binding")),
        _ => None,
    }
}

/// Serves `POST` of an action on the object `name`: the answer's body (a `Status`, 201).
pub(crate) async fn serve(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    action: Action,
    namespace: Option<&str>,
    name: &str,
    body: Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let body_name = meta::name(&body);
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "name in URL does not match name in {} object",
            action.kind
        )));
    }
    match action.name {
        "eviction" => super::eviction::evict(objects, info, namespace, name, &body, dry_run).await,
        "binding" => bind(objects, info, namespace, name, &body, dry_run).await,
        _ => Err(ApiError::unknown_resource()),
    }
}

/// The `Status` a successful action answers.
pub(super) fn created() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// Upstream's conflict when a pod already has a node.
fn already_assigned(name: &str, assigned: &str) -> ApiError {
    ApiError::conflict_because(
        "",
        "pods/binding",
        name,
        &format!("pod {name} is already assigned to node {assigned:?}"),
    )
}

/// `pods/binding`: sets the pod's node, once.
async fn bind(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    namespace: Option<&str>,
    name: &str,
    body: &Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let node = meta::path(body, "target.name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if node.is_empty() {
        return Err(ApiError::invalid(
            "",
            "Binding",
            name,
            vec![Cause::required("target.name", "")],
        ));
    }
    let pod = objects.get(info, namespace, name)?;
    let assigned = meta::path(&pod, "spec.nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !assigned.is_empty() {
        return Err(already_assigned(name, assigned));
    }
    if dry_run {
        return Ok(created());
    }
    // As upstream's binding storage: the node is set (with the PodScheduled condition) without
    // the pod update rules, which forbid clients to change it.
    let uid = meta::uid(&pod).to_string();
    let key = Objects::key(info, namespace, name);
    let name2 = name.to_string();
    let result = objects
        .storage()
        .update(
            key,
            Box::new(move |cur| {
                let Some(cur) = cur.filter(|c| meta::uid(c) == uid) else {
                    return Err(ApiError::not_found("", "pods", &name2));
                };
                let assigned = meta::path(cur, "spec.nodeName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !assigned.is_empty() {
                    return Err(already_assigned(&name2, assigned));
                }
                let mut next = (**cur).clone();
                meta::set_path(&mut next, "spec.nodeName", json!(node));
                let conditions = next
                    .get_mut("status")
                    .and_then(Value::as_object_mut)
                    .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
                if let Some(list) = conditions.and_then(Value::as_array_mut) {
                    list.retain(|c| c["type"] != "PodScheduled");
                    list.push(json!({"type": "PodScheduled", "status": "True",
                        "lastProbeTime": null, "lastTransitionTime": meta::now_rfc3339()}));
                }
                Ok(crate::storage::Write::Put(next))
            }),
        )
        .await;
    result?;
    Ok(created())
}
