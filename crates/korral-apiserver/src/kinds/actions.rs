//! Create-only subresources that act on an object rather than store one: `pods/eviction`
//! (deletes a pod unless a PodDisruptionBudget forbids it: 429 as upstream) and `pods/binding`
//! (assigns a pod to a node). `serviceaccounts/token` is declared here too (for discovery) and
//! served by `crate::auth::reviews`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use crate::ApiError;
use crate::error::{Cause, Details};
use crate::kinds::disruption;
use crate::meta;
use crate::objects::{DeleteOptions, Objects};
use crate::registry::ResourceInfo;
use crate::storage::{Write, object_key};

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
        "eviction" => evict(objects, info, namespace, name, &body, dry_run).await,
        "binding" => bind(objects, info, namespace, name, &body, dry_run).await,
        _ => Err(ApiError::unknown_resource()),
    }
}

/// The `Status` a successful action answers.
fn created() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// Whether a pod's eviction skips the budgets (upstream: pods that are not running — pending
/// or finished — or already being deleted).
fn ignores_budgets(pod: &Value) -> bool {
    meta::is_deleting(pod)
        || matches!(
            meta::path(pod, "status.phase").and_then(Value::as_str),
            Some("Pending" | "Succeeded" | "Failed")
        )
}

/// How many times an eviction decides again after its budget changed underneath it
/// (upstream's `EvictionsRetry` steps).
const EVICTION_ATTEMPTS: usize = 20;

/// `pods/eviction`: deletes the pod when its PodDisruptionBudget allows one more disruption.
///
/// As upstream, the eviction is first recorded in the budget's status by a write that
/// succeeds only if the budget is still the one the decision read; otherwise the eviction
/// decides again. Concurrent evictions (`kubectl drain` sends one per pod at once) thus
/// cannot all spend the same allowed disruption.
async fn evict(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    namespace: Option<&str>,
    name: &str,
    body: &Value,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let options = body.get("deleteOptions").filter(|o| !o.is_null());
    let mut delete = DeleteOptions::from_request(options, &[])?;
    // A dry run is asked for in the query or in the Eviction's deleteOptions
    // (`kubectl drain --dry-run=server`).
    delete.dry_run |= dry_run;
    for _ in 0..EVICTION_ATTEMPTS {
        if evict_once(objects, info, namespace, name, &delete).await? {
            return Ok(created());
        }
    }
    Err(ApiError::conflict_because(
        "",
        "pods/eviction",
        name,
        "its PodDisruptionBudget kept changing; please try again",
    ))
}

/// One eviction decision: `Ok(true)` once the pod is deleted, `Ok(false)` when its budget
/// changed since it was read (decide again).
async fn evict_once(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    namespace: Option<&str>,
    name: &str,
    delete: &DeleteOptions,
) -> Result<bool, ApiError> {
    let pod = objects.get(info, namespace, name)?;
    let snapshot = objects.storage().snapshot();
    let budgets: Vec<_> = disruption::budgets_in(&snapshot, namespace.unwrap_or(""))
        .into_iter()
        .filter(|b| disruption::selects(b, &pod))
        .collect();
    if budgets.len() > 1 {
        return Err(ApiError::internal(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    if let Some(budget) = budgets.first()
        && !ignores_budgets(&pod)
    {
        let counts = disruption::counts(&snapshot, budget);
        if counts.disruptions_allowed <= 0 {
            let mut refused = ApiError::new(
                429,
                "TooManyRequests",
                "Cannot evict pod as it would violate the pod's disruption budget.",
            );
            refused.details = Some(Box::new(Details {
                causes: vec![Cause::new(
                    "DisruptionBudget",
                    "",
                    format!(
                        "The disruption budget {} needs {} healthy pods and has {} currently",
                        meta::name(budget),
                        counts.desired_healthy,
                        counts.current_healthy
                    ),
                )],
                ..Details::default()
            }));
            return Err(refused);
        }
        if !delete.dry_run
            && !record_disruption(objects, budget, name, counts.disruptions_allowed).await?
        {
            return Ok(false);
        }
    }
    objects.delete(info, namespace, name, delete).await?;
    Ok(true)
}

/// Writes the eviction of `pod` into `budget`'s status if the stored budget is still the one
/// read (same resourceVersion); `Ok(false)` when it changed or went away.
async fn record_disruption(
    objects: &Objects,
    budget: &Value,
    pod: &str,
    allowed: i64,
) -> Result<bool, ApiError> {
    let key = object_key(
        "policy",
        "poddisruptionbudgets",
        meta::namespace(budget),
        meta::name(budget),
    );
    let seen = meta::resource_version(budget).to_string();
    let pod = pod.to_string();
    let stale = Arc::new(AtomicBool::new(false));
    let flag = stale.clone();
    objects
        .storage()
        .update(
            key,
            Box::new(move |cur| {
                let Some(cur) = cur.filter(|c| meta::resource_version(c) == seen) else {
                    flag.store(true, Ordering::SeqCst);
                    return Ok(Write::Unchanged);
                };
                let mut next = (**cur).clone();
                disruption::record_disruption(&mut next, &pod, allowed);
                Ok(Write::Put(next))
            }),
        )
        .await?;
    Ok(!stale.load(Ordering::SeqCst))
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
