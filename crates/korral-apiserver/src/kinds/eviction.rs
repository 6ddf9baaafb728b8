//! `pods/eviction`, as upstream's `EvictionREST` decides it
//! (`pkg/registry/core/pod/storage/eviction.go`): a pod its PodDisruptionBudget guards is
//! deleted only when the budget's *status* (kept by the disruption controller) allows one more
//! disruption, and the disruption is spent in the budget's status first, in one guarded write.
//!
//! - Pods that are pending, finished or already being deleted skip the budgets.
//! - A budget whose status is older than its spec (`observedGeneration < generation`) refuses
//!   with 429 "still being processed"; one allowing no disruption refuses with 429 "needs N
//!   healthy pods"; otherwise `disruptionsAllowed` goes down by one and the pod is recorded in
//!   `disruptedPods` (the controller keeps it out of the healthy count until it is gone).
//! - A pod that is not Ready is deleted without spending a disruption when the budget's
//!   `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or (`IfHealthyBudget`, the default) when
//!   the budget is satisfied; the delete then requires the pod unchanged since the decision.
//! - A dry run decides the same way and writes nothing.
//! - The pod gets the `DisruptionTarget` condition just before it is deleted.

use std::sync::Arc;

use serde_json::{Value, json};

use super::actions::created;
use crate::ApiError;
use crate::error::{Cause, Details};
use crate::kinds::disruption;
use crate::meta;
use crate::objects::{DeleteOptions, Objects};
use crate::registry::ResourceInfo;
use crate::storage::{Write, object_key};

/// How many times an eviction of a pod the budgets do not guard tries its delete again after a
/// conflict (upstream's `EvictionsRetry` steps).
const EVICTION_ATTEMPTS: usize = 20;

/// The most pods `status.disruptedPods` may hold: beyond it, evictions the controller has not
/// confirmed yet pile up and new ones are refused (upstream's `MaxDisruptedPodSize`).
const MAX_DISRUPTED_PODS: usize = 2000;

/// Seconds a client is asked to wait when a budget's status lags its spec.
const PROCESSING_RETRY_SECONDS: u64 = 10;

/// The message of every refusal by a budget.
const REFUSED: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// Evicts the pod `name`: the answer's body (a `Status`, 201), or why not.
pub(crate) async fn evict(
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
    let pinned = delete.precondition_resource_version.is_some();

    // Pods the budgets do not guard are deleted at once, retried on conflicts (unless the
    // client pinned a resourceVersion).
    let mut attempt = 0;
    let pod = loop {
        let pod = objects.get(info, namespace, name)?;
        if !ignores_budgets(&pod) {
            break pod;
        }
        let mut options = delete.clone();
        if enforces_resource_version(&pod) && !pinned {
            options.precondition_resource_version = Some(meta::resource_version(&pod).into());
        }
        attempt += 1;
        match delete_pod(objects, info, namespace, name, &options).await {
            Err(e) if e.code == 409 && !pinned && attempt < EVICTION_ATTEMPTS => continue,
            result => return result.map(|()| created()),
        }
    };

    let snapshot = objects.storage().snapshot();
    let budgets: Vec<_> = disruption::budgets_in(&snapshot, namespace.unwrap_or(""))
        .into_iter()
        .filter(|b| disruption::selects(b, &pod))
        .collect();
    if budgets.len() > 1 {
        // Upstream answers this Status as the result, without a reason.
        return Err(ApiError::new(
            500,
            "",
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
        ));
    }
    let Some(budget) = budgets.first() else {
        delete_pod(objects, info, namespace, name, &delete).await?;
        return Ok(created());
    };

    // An unready pod does not count as healthy: deleting it spends nothing, when the budget's
    // policy allows it, as long as the pod stays as it was decided on.
    let unready_allowed = !is_ready(&pod) && evicts_unready(budget);
    if !unready_allowed {
        spend_disruption(objects, budget, name, delete.dry_run).await?;
    }
    let mut options = delete.clone();
    if unready_allowed {
        options.precondition_resource_version = Some(meta::resource_version(&pod).into());
    }
    match delete_pod(objects, info, namespace, name, &options).await {
        Err(e) if e.code == 409 && unready_allowed && !pinned => {
            Err(still_processing(meta::name(budget)))
        }
        result => result.map(|()| created()),
    }
}

/// Whether a pod's eviction skips the budgets (upstream's `canIgnorePDB`: pods that are not
/// running — pending or finished — or already being deleted).
fn ignores_budgets(pod: &Value) -> bool {
    meta::is_deleting(pod)
        || matches!(
            meta::path(pod, "status.phase").and_then(Value::as_str),
            Some("Pending" | "Succeeded" | "Failed")
        )
}

/// Whether deleting a pod that skips the budgets must find it unchanged (upstream's
/// `shouldEnforceResourceVersion`: a pending pod might turn ready meanwhile).
fn enforces_resource_version(pod: &Value) -> bool {
    !meta::is_deleting(pod)
        && !matches!(
            meta::path(pod, "status.phase").and_then(Value::as_str),
            Some("Succeeded" | "Failed")
        )
}

/// Whether a pod's `Ready` condition is `True`.
fn is_ready(pod: &Value) -> bool {
    meta::path(pod, "status.conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// A number of a budget's status (0 when unset).
fn status_number(budget: &Value, field: &str) -> i64 {
    meta::path(budget, &format!("status.{field}"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Whether the budget lets an unready pod go without spending a disruption: its
/// `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or (`IfHealthyBudget`, the default) it is
/// satisfied now.
fn evicts_unready(budget: &Value) -> bool {
    let policy = meta::path(budget, "spec.unhealthyPodEvictionPolicy").and_then(Value::as_str);
    if policy == Some("AlwaysAllow") {
        return true;
    }
    let desired = status_number(budget, "desiredHealthy");
    status_number(budget, "currentHealthy") >= desired && desired > 0
}

/// 429 while a budget's status does not reflect its spec yet (upstream's
/// `createTooManyRequestsError`).
fn still_processing(budget: &str) -> ApiError {
    let mut refused = ApiError::too_many_requests(REFUSED, PROCESSING_RETRY_SECONDS);
    if let Some(details) = refused.details.as_mut() {
        details.causes.push(Cause::new(
            "DisruptionBudget",
            "",
            format!("The disruption budget {budget} is still being processed by the server."),
        ));
    }
    refused
}

/// Upstream's `checkAndDecrement` before it writes: whether the budget's status allows one more
/// disruption now.
fn check_budget(budget: &Value) -> Result<(), ApiError> {
    let name = meta::name(budget);
    let generation = meta::path(budget, "metadata.generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if status_number(budget, "observedGeneration") < generation {
        return Err(still_processing(name));
    }
    let allowed = status_number(budget, "disruptionsAllowed");
    let forbidden =
        |why: &str| ApiError::forbidden_object("policy", "poddisruptionbudget", name, why);
    if allowed < 0 {
        return Err(forbidden("pdb disruptions allowed is negative"));
    }
    let disrupted = meta::path(budget, "status.disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, serde_json::Map::len);
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        let mut refused = ApiError::new(429, "TooManyRequests", REFUSED);
        refused.details = Some(Box::new(Details {
            causes: vec![Cause::new(
                "DisruptionBudget",
                "",
                format!(
                    "The disruption budget {name} needs {} healthy pods and has {} currently",
                    status_number(budget, "desiredHealthy"),
                    status_number(budget, "currentHealthy"),
                ),
            )],
            ..Details::default()
        }));
        return Err(refused);
    }
    Ok(())
}

/// Spends one disruption of `budget` on the pod `pod`: checked and recorded in one guarded
/// write of the stored budget, so concurrent evictions cannot spend the same disruption. A dry
/// run only checks the budget as read.
async fn spend_disruption(
    objects: &Objects,
    budget: &Value,
    pod: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    if dry_run {
        return check_budget(budget);
    }
    let name = meta::name(budget).to_string();
    let key = object_key(
        "policy",
        "poddisruptionbudgets",
        meta::namespace(budget),
        &name,
    );
    let uid = meta::uid(budget).to_string();
    let pod = pod.to_string();
    objects
        .storage()
        .update(
            key,
            Box::new(move |cur| {
                let Some(cur) = cur.filter(|c| meta::uid(c) == uid) else {
                    return Err(ApiError::not_found("policy", "poddisruptionbudgets", &name));
                };
                check_budget(cur)?;
                let mut next = (**cur).clone();
                disruption::record_disruption(&mut next, &pod);
                Ok(Write::Put(next))
            }),
        )
        .await?;
    Ok(())
}

/// Upstream's conflict when a precondition of the pod's `DisruptionTarget` write fails (it names
/// the resource `Pod`).
fn precondition_conflict(name: &str, why: String) -> ApiError {
    ApiError::conflict_because("", "Pod", name, &why)
}

/// Deletes the evicted pod; unless in a dry run, it first gets the `DisruptionTarget`
/// condition (upstream's `addConditionAndDeletePod`), under the delete's preconditions.
async fn delete_pod(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    namespace: Option<&str>,
    name: &str,
    options: &DeleteOptions,
) -> Result<(), ApiError> {
    let mut options = options.clone();
    if !options.dry_run {
        let key = Objects::key(info, namespace, name);
        let pod_name = name.to_string();
        let uid = options.precondition_uid.clone().filter(|u| !u.is_empty());
        let version = options
            .precondition_resource_version
            .clone()
            .filter(|v| !v.is_empty());
        let committed = objects
            .storage()
            .update(
                key,
                Box::new(move |cur| {
                    let Some(cur) = cur else {
                        return Err(ApiError::not_found("", "pods", &pod_name));
                    };
                    if let Some(uid) = uid.filter(|u| u != meta::uid(cur)) {
                        return Err(precondition_conflict(
                            &pod_name,
                            format!(
                                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                                meta::uid(cur)
                            ),
                        ));
                    }
                    if let Some(version) = version.filter(|v| v != meta::resource_version(cur)) {
                        return Err(precondition_conflict(
                            &pod_name,
                            format!(
                                "the ResourceVersion in the precondition ({version}) does not match the ResourceVersion in record ({}). The object might have been modified",
                                meta::resource_version(cur)
                            ),
                        ));
                    }
                    let mut next = (**cur).clone();
                    if !mark_disruption_target(&mut next) {
                        return Ok(Write::Unchanged);
                    }
                    Ok(Write::Put(next))
                }),
            )
            .await?;
        // The delete must find the pod as this write left it.
        if options.precondition_resource_version.is_some()
            && let Some(current) = committed.current
        {
            options.precondition_resource_version =
                Some(meta::resource_version(&current).to_string());
        }
    }
    objects.delete(info, namespace, name, &options).await?;
    Ok(())
}

/// Sets the pod's `DisruptionTarget` condition (`EvictionByEvictionAPI`), keeping its
/// transition time when it already held; whether anything changed.
fn mark_disruption_target(pod: &mut Value) -> bool {
    let Some(root) = pod.as_object_mut() else {
        return false;
    };
    let status = root.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = &mut status["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return false;
    };
    let wanted = json!({
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    });
    match list.iter_mut().find(|c| c["type"] == "DisruptionTarget") {
        Some(existing) => {
            let same = ["status", "reason", "message"]
                .iter()
                .all(|f| existing.get(*f) == wanted.get(*f));
            if same {
                return false;
            }
            let held = existing.get("status") == wanted.get("status");
            let since = existing.get("lastTransitionTime").cloned();
            *existing = wanted;
            existing["lastProbeTime"] = Value::Null;
            existing["lastTransitionTime"] = match since.filter(|_| held) {
                Some(since) => since,
                None => json!(meta::now_rfc3339()),
            };
        }
        None => {
            let mut condition = wanted;
            condition["lastProbeTime"] = Value::Null;
            condition["lastTransitionTime"] = json!(meta::now_rfc3339());
            list.push(condition);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::registry::Registry;
    use crate::storage::MemoryStorage;

    use super::*;

    /// An object layer without the built-in controllers: budgets keep the status written here.
    fn objects() -> Objects {
        Objects::new(
            Arc::new(MemoryStorage::new()),
            Arc::new(Registry::with_builtins()),
        )
    }

    fn pods(objects: &Objects) -> Arc<ResourceInfo> {
        objects.registry().get("", "v1", "pods").expect("pods")
    }

    /// Stores `obj` at `key` as it is (no write rules): the stored object.
    async fn put(objects: &Objects, key: String, obj: Value) -> Value {
        let committed = objects
            .storage()
            .update(key, Box::new(move |_| Ok(Write::Put(obj))))
            .await
            .expect("put");
        committed.current.expect("stored").as_ref().clone()
    }

    async fn pod(objects: &Objects, name: &str, ready: bool, extra_meta: Value) -> Value {
        let mut metadata = json!({"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
            "labels": {"app": "web"}});
        if let (Some(m), Some(extra)) = (metadata.as_object_mut(), extra_meta.as_object()) {
            m.extend(extra.clone());
        }
        let status = if ready { "True" } else { "False" };
        put(
            objects,
            object_key("", "pods", Some("ns"), name),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                "status": {"phase": "Running",
                    "conditions": [{"type": "Ready", "status": status}]}}),
        )
        .await
    }

    /// A budget over `app=web` with `spec` (the selector added) and `status` as given.
    async fn budget(objects: &Objects, name: &str, spec: Value, status: Value) -> Value {
        let mut spec = spec;
        if spec.get("selector").is_none() {
            spec["selector"] = json!({"matchLabels": {"app": "web"}});
        }
        put(
            objects,
            object_key("policy", "poddisruptionbudgets", Some("ns"), name),
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                    "generation": 2},
                "spec": spec, "status": status}),
        )
        .await
    }

    /// A current status allowing `allowed` disruptions.
    fn status(allowed: i64, current: i64, desired: i64) -> Value {
        json!({"observedGeneration": 2, "disruptionsAllowed": allowed,
            "currentHealthy": current, "desiredHealthy": desired, "expectedPods": current,
            "conditions": [{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
                "message": "", "observedGeneration": 2,
                "lastTransitionTime": "2024-01-01T00:00:00Z"}]})
    }

    async fn run(
        objects: &Objects,
        name: &str,
        body: Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        evict(objects, &pods(objects), Some("ns"), name, &body, dry_run).await
    }

    fn eviction() -> Value {
        json!({"apiVersion": "policy/v1", "kind": "Eviction"})
    }

    fn stored(objects: &Objects, key: &str) -> Option<Value> {
        objects.storage().get(key).map(|o| o.as_ref().clone())
    }

    fn budget_key(name: &str) -> String {
        object_key("policy", "poddisruptionbudgets", Some("ns"), name)
    }

    fn pod_key(name: &str) -> String {
        object_key("", "pods", Some("ns"), name)
    }

    #[tokio::test]
    async fn a_budget_whose_status_lags_its_spec_is_still_being_processed() {
        let objects = objects();
        pod(&objects, "a", true, json!({})).await;
        pod(&objects, "b", true, json!({})).await;
        let mut lagging = status(1, 2, 1);
        lagging["observedGeneration"] = json!(1);
        budget(&objects, "pdb", json!({"minAvailable": 1}), lagging).await;
        let refused = run(&objects, "a", eviction(), false)
            .await
            .expect_err("refused");
        let body = refused.to_status();
        assert_eq!(refused.code, 429);
        assert_eq!(body["reason"], "TooManyRequests");
        assert_eq!(body["message"], REFUSED);
        assert_eq!(body["details"]["retryAfterSeconds"], 10);
        assert_eq!(
            body["details"]["causes"],
            json!([{"reason": "DisruptionBudget",
                "message": "The disruption budget pdb is still being processed by the server."}])
        );
        assert!(stored(&objects, &pod_key("a")).is_some(), "nothing deleted");
        // A budget never processed at all (no status) is still being processed too.
        let objects2 = self::objects();
        pod(&objects2, "a", true, json!({})).await;
        budget(&objects2, "pdb", json!({"maxUnavailable": 1}), json!({})).await;
        let refused = run(&objects2, "a", eviction(), false)
            .await
            .expect_err("refused");
        assert_eq!(refused.code, 429);
    }

    #[tokio::test]
    async fn the_decision_is_the_status_not_the_live_pods() {
        // The live pods would allow a disruption (two ready, one needed); the status says none.
        let objects = objects();
        pod(&objects, "a", true, json!({})).await;
        pod(&objects, "b", true, json!({})).await;
        budget(&objects, "pdb", json!({"minAvailable": 1}), status(0, 5, 7)).await;
        let refused = run(&objects, "a", eviction(), false)
            .await
            .expect_err("refused");
        let body = refused.to_status();
        assert_eq!(refused.code, 429);
        assert!(body["details"].get("retryAfterSeconds").is_none(), "{body}");
        assert_eq!(
            body["details"]["causes"][0]["message"],
            "The disruption budget pdb needs 7 healthy pods and has 5 currently"
        );
        // The live pods would allow none (one ready, one needed); the status allows one: it is
        // spent in the status (with the pod recorded) and the pod deleted.
        let objects = self::objects();
        pod(&objects, "a", true, json!({})).await;
        budget(&objects, "pdb", json!({"minAvailable": 1}), status(1, 2, 1)).await;
        let answer = run(&objects, "a", eviction(), false)
            .await
            .expect("evicted");
        assert_eq!(answer["status"], "Success");
        assert!(stored(&objects, &pod_key("a")).is_none());
        let after = stored(&objects, &budget_key("pdb")).expect("budget");
        assert_eq!(after["status"]["disruptionsAllowed"], 0);
        assert!(after["status"]["disruptedPods"]["a"].is_string(), "{after}");
        let condition = &after["status"]["conditions"][0];
        assert_eq!(condition["status"], "False");
        assert_eq!(condition["reason"], "InsufficientPods");
        assert_ne!(condition["lastTransitionTime"], "2024-01-01T00:00:00Z");
        // Spent: the next eviction is refused until the controller recounts.
        pod(&objects, "b", true, json!({})).await;
        let refused = run(&objects, "b", eviction(), false)
            .await
            .expect_err("refused");
        assert_eq!(refused.code, 429);
    }

    #[tokio::test]
    async fn broken_budget_statuses_are_forbidden() {
        let objects = objects();
        pod(&objects, "a", true, json!({})).await;
        budget(
            &objects,
            "pdb",
            json!({"minAvailable": 1}),
            status(-1, 2, 1),
        )
        .await;
        let refused = run(&objects, "a", eviction(), false)
            .await
            .expect_err("refused");
        assert_eq!(refused.code, 403);
        assert_eq!(
            refused.message,
            "poddisruptionbudget.policy \"pdb\" is forbidden: pdb disruptions allowed is negative"
        );
        let mut crowded = status(1, 2, 1);
        crowded["disruptedPods"] = (0..=MAX_DISRUPTED_PODS)
            .map(|i| (format!("p{i}"), json!("2024-01-01T00:00:00Z")))
            .collect::<serde_json::Map<_, _>>()
            .into();
        budget(&objects, "pdb", json!({"minAvailable": 1}), crowded).await;
        let refused = run(&objects, "a", eviction(), false)
            .await
            .expect_err("refused");
        assert_eq!(refused.code, 403);
        assert!(refused.message.ends_with(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        ));
    }

    #[tokio::test]
    async fn unready_pods_follow_the_unhealthy_pod_eviction_policy() {
        // IfHealthyBudget (the default): an unready pod goes without spending while the budget
        // is satisfied...
        let objects = objects();
        pod(&objects, "sick", false, json!({})).await;
        budget(&objects, "pdb", json!({"minAvailable": 1}), status(0, 1, 1)).await;
        run(&objects, "sick", eviction(), false)
            .await
            .expect("evicted");
        let after = stored(&objects, &budget_key("pdb")).expect("budget");
        assert!(
            after["status"].get("disruptedPods").is_none(),
            "nothing spent: {after}"
        );
        // ... and is refused when it is not.
        pod(&objects, "sick", false, json!({})).await;
        budget(&objects, "pdb", json!({"minAvailable": 2}), status(0, 1, 2)).await;
        let refused = run(&objects, "sick", eviction(), false)
            .await
            .expect_err("refused");
        assert_eq!(refused.code, 429);
        budget(
            &objects,
            "pdb",
            json!({"minAvailable": 2, "unhealthyPodEvictionPolicy": "IfHealthyBudget"}),
            status(0, 1, 2),
        )
        .await;
        assert_eq!(
            run(&objects, "sick", eviction(), false)
                .await
                .map_err(|e| e.code),
            Err(429)
        );
        // AlwaysAllow: it goes anyway, without spending.
        budget(
            &objects,
            "pdb",
            json!({"minAvailable": 2, "unhealthyPodEvictionPolicy": "AlwaysAllow"}),
            status(0, 1, 2),
        )
        .await;
        run(&objects, "sick", eviction(), false)
            .await
            .expect("evicted");
        assert!(stored(&objects, &pod_key("sick")).is_none());
        // A ready pod is guarded whatever the policy.
        pod(&objects, "well", true, json!({})).await;
        assert_eq!(
            run(&objects, "well", eviction(), false)
                .await
                .map_err(|e| e.code),
            Err(429)
        );
    }

    #[tokio::test]
    async fn selectors_pick_the_guarded_pods() {
        // No selector guards nothing; an empty one guards every pod of the namespace.
        let objects = objects();
        pod(&objects, "a", true, json!({})).await;
        let mut none = json!({"maxUnavailable": 0});
        none["selector"] = Value::Null;
        budget(&objects, "none", none, status(0, 0, 0)).await;
        run(&objects, "a", eviction(), false)
            .await
            .expect("unguarded");
        pod(&objects, "a", true, json!({})).await;
        budget(
            &objects,
            "all",
            json!({"maxUnavailable": 0, "selector": {}}),
            status(0, 1, 1),
        )
        .await;
        assert_eq!(
            run(&objects, "a", eviction(), false)
                .await
                .map_err(|e| e.code),
            Err(429)
        );
        // Two budgets over one pod: upstream's 500 Status, without a reason.
        budget(
            &objects,
            "web",
            json!({"maxUnavailable": 1}),
            status(1, 1, 0),
        )
        .await;
        let refused = run(&objects, "a", eviction(), false)
            .await
            .expect_err("refused");
        let body = refused.to_status();
        assert_eq!(body["code"], 500);
        assert!(body.get("reason").is_none(), "{body}");
        assert_eq!(
            body["message"],
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        );
    }

    #[tokio::test]
    async fn dry_runs_decide_and_write_nothing() {
        let objects = objects();
        pod(&objects, "a", true, json!({})).await;
        let before = budget(&objects, "pdb", json!({"minAvailable": 1}), status(1, 2, 1)).await;
        run(&objects, "a", eviction(), true).await.expect("allowed");
        let mut in_body = eviction();
        in_body["deleteOptions"] = json!({"dryRun": ["All"]});
        run(&objects, "a", in_body, false).await.expect("allowed");
        assert_eq!(stored(&objects, &budget_key("pdb")), Some(before));
        let pod_now = stored(&objects, &pod_key("a")).expect("pod kept");
        assert_eq!(
            pod_now["status"]["conditions"].as_array().map(Vec::len),
            Some(1)
        );
        // A dry run is refused as the real eviction would be.
        budget(&objects, "pdb", json!({"minAvailable": 1}), status(0, 1, 1)).await;
        assert_eq!(
            run(&objects, "a", eviction(), true)
                .await
                .map_err(|e| e.code),
            Err(429)
        );
    }

    #[tokio::test]
    async fn evicted_pods_are_marked_as_disruption_targets() {
        // A finalizer keeps the deleted pod, showing what the eviction wrote.
        let objects = objects();
        pod(
            &objects,
            "a",
            true,
            json!({"finalizers": ["example.com/hold"]}),
        )
        .await;
        budget(&objects, "pdb", json!({"minAvailable": 1}), status(1, 2, 1)).await;
        run(&objects, "a", eviction(), false)
            .await
            .expect("evicted");
        let deleting = stored(&objects, &pod_key("a")).expect("held by its finalizer");
        assert!(meta::is_deleting(&deleting));
        let target = deleting["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "DisruptionTarget"))
            .cloned()
            .expect("DisruptionTarget");
        assert_eq!(target["status"], "True");
        assert_eq!(target["reason"], "EvictionByEvictionAPI");
        assert_eq!(target["message"], "Eviction API: evicting");
        // Pods the budgets ignore (pending ones) are deleted directly, marked too.
        let objects = self::objects();
        let mut pending = pod(
            &objects,
            "p",
            false,
            json!({"finalizers": ["example.com/hold"]}),
        )
        .await;
        pending["status"]["phase"] = json!("Pending");
        put(&objects, pod_key("p"), pending).await;
        budget(&objects, "pdb", json!({"minAvailable": 1}), status(0, 0, 1)).await;
        run(&objects, "p", eviction(), false)
            .await
            .expect("evicted");
        let deleting = stored(&objects, &pod_key("p")).expect("held");
        assert!(meta::is_deleting(&deleting));
        // A client's stale resourceVersion precondition is a conflict, not retried.
        let objects = self::objects();
        pod(&objects, "a", true, json!({})).await;
        budget(&objects, "pdb", json!({"minAvailable": 1}), status(1, 2, 1)).await;
        let mut pinned = eviction();
        pinned["deleteOptions"] = json!({"preconditions": {"resourceVersion": "424242"}});
        let refused = run(&objects, "a", pinned, false)
            .await
            .expect_err("conflict");
        assert_eq!(refused.code, 409);
        assert_eq!(
            refused.message,
            format!(
                "Operation cannot be fulfilled on Pod \"a\": the ResourceVersion in the precondition (424242) does not match the ResourceVersion in record ({}). The object might have been modified",
                meta::resource_version(&stored(&objects, &pod_key("a")).expect("pod"))
            )
        );
    }
}
