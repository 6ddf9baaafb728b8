//! The Deployment controller: one ReplicaSet per pod template, rollouts, revisions and status.
//!
//! The ReplicaSet of the current template is `<deployment>-<pod-template-hash>`; its selector,
//! labels and template carry the `pod-template-hash` label, and it gets the
//! `deployment.kubernetes.io/{revision,desired-replicas,max-replicas}` annotations. When the
//! template changes a new ReplicaSet (next revision) is scaled up; the old ones are scaled to
//! zero once the new one is available (rolling update) or first (recreate). A name already
//! taken by a different template bumps `status.collisionCount`, as upstream does.
//!
//! A rolling update steps as upstream's: the new ReplicaSet grows while the total stays within
//! `replicas + maxSurge`, old ones shrink (unhealthy replicas first, oldest ReplicaSet first)
//! while availability stays at least `replicas - maxUnavailable`; each step waits for the
//! ReplicaSets' status, so the intermediate states a client sees are a real rollout's.
//! Simplification: a change of `spec.replicas` during a rollout is not spread proportionally
//! over the ReplicaSets (the rollout converges to it instead).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::access::{self, controlled_by};
use super::names::{POD_TEMPLATE_HASH, template_hash};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::registry::ResourceInfo;
use crate::storage::Object;

const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX: &str = "deployment.kubernetes.io/max-replicas";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Reconciles one Deployment.
pub async fn reconcile(objects: &Objects, ns: &str, name: &str) -> Result<(), ApiError> {
    let Some(d) = access::get(objects, "apps", "deployments", ns, name) else {
        return Ok(());
    };
    if meta::is_deleting(&d) {
        return Ok(());
    }
    let rs_info = access::info(objects, "apps", "v1", "replicasets")?;
    let uid = meta::uid(&d).to_string();
    let owned: Vec<Object> = access::list(objects, "apps", "replicasets", ns)
        .into_iter()
        .filter(|rs| controlled_by(rs, &uid) && !meta::is_deleting(rs))
        .collect();
    let template = meta::path(&d, "spec.template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let desired = access::int(&d, "spec.replicas", 1).max(0);
    let paused = meta::path(&d, "spec.paused").and_then(Value::as_bool) == Some(true);
    let (max_surge, max_unavailable) = rolling_limits(&d, desired);

    let new_rs = owned
        .iter()
        .find(|rs| same_template(rs, &template))
        .cloned();
    let old: Vec<Object> = owned
        .iter()
        .filter(|rs| Some(meta::uid(rs)) != new_rs.as_ref().map(|n| meta::uid(n)))
        .cloned()
        .collect();
    let max_old_revision = old.iter().map(|rs| revision(rs)).max().unwrap_or(0);
    let mut created_new = false;
    let new_rs = match new_rs {
        Some(rs) => {
            // Keep the new ReplicaSet's revision the newest (a rollback reuses an old one).
            let next = annotate(&rs, &d, max_old_revision + 1, desired, max_surge);
            if next != *rs {
                access::replace(objects, access::Actor::Deployment, &rs_info, next).await?
            } else {
                rs
            }
        }
        None if paused => {
            return write_status(objects, &d, None, &owned, false, max_unavailable).await;
        }
        None if strategy(&d) == "Recreate" && old.iter().any(|rs| running(rs)) => {
            // Upstream's Recreate creates the new ReplicaSet only once the old pods are gone.
            let sizes = Sizes { desired, max_surge };
            for rs in old
                .iter()
                .filter(|rs| access::int(rs, "spec.replicas", 1) != 0)
            {
                sizes.set(objects, &rs_info, rs, 0).await?;
            }
            return write_status(objects, &d, None, &owned, false, max_unavailable).await;
        }
        None => {
            let collision = meta::path(&d, "status.collisionCount")
                .and_then(Value::as_u64)
                .map(|c| c as u32);
            let hash = template_hash(&template, collision);
            let rs_name = format!("{name}-{hash}");
            let old_total: i64 = old
                .iter()
                .map(|rs| access::int(rs, "spec.replicas", 1))
                .sum();
            let initial = rolling_new_target(desired, max_surge, 0, old_total);
            let rs = new_replica_set(
                &d,
                &template,
                &rs_name,
                &hash,
                initial,
                max_old_revision + 1,
                max_surge,
            );
            match access::create(objects, access::Actor::Deployment, &rs_info, Some(ns), rs).await {
                Ok(rs) => {
                    created_new = true;
                    rs
                }
                Err(e) if e.code == 409 => {
                    // The name is taken by a ReplicaSet with another template: count a
                    // collision so the next attempt hashes differently.
                    if let Some(existing) =
                        access::get(objects, "apps", "replicasets", ns, &rs_name)
                        && !(controlled_by(&existing, &uid) && same_template(&existing, &template))
                    {
                        let count = collision.unwrap_or(0) + 1;
                        access::update_status(
                            objects,
                            access::Actor::Deployment,
                            &access::info(objects, "apps", "v1", "deployments")?,
                            &d,
                            move |d| {
                                meta::set_path(d, "status.collisionCount", json!(count));
                            },
                        )
                        .await?;
                    }
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        }
    };

    if !paused {
        let sizes = Sizes { desired, max_surge };
        scale(objects, &rs_info, &d, &new_rs, &old, sizes, max_unavailable).await?;
    }

    // The Deployment carries its newest revision.
    let rev = revision(&new_rs).to_string();
    if annotation(&d, REVISION) != Some(rev.as_str()) {
        let mut next = (*d).clone();
        set_annotation(&mut next, REVISION, &rev);
        let d_info = access::info(objects, "apps", "v1", "deployments")?;
        access::replace(objects, access::Actor::Deployment, &d_info, next).await?;
    }
    let d = access::get(objects, "apps", "deployments", ns, name).unwrap_or(d);
    let all: Vec<Object> = access::list(objects, "apps", "replicasets", ns)
        .into_iter()
        .filter(|rs| controlled_by(rs, &uid) && !meta::is_deleting(rs))
        .collect();
    let new_now = all
        .iter()
        .find(|rs| meta::uid(rs) == meta::uid(&new_rs))
        .cloned();
    write_status(
        objects,
        &d,
        new_now.as_ref(),
        &all,
        created_new,
        max_unavailable,
    )
    .await
}

/// The size annotations a Deployment puts on the ReplicaSets it scales
/// (`deployment.kubernetes.io/{desired,max}-replicas`).
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// The Deployment's `spec.replicas`.
    desired: i64,
    /// Its resolved `maxSurge`.
    max_surge: i64,
}

impl Sizes {
    /// Scales `rs` to `replicas` (upstream's `scaleReplicaSet`): its size and annotations
    /// written when either differs.
    async fn set(
        self,
        objects: &Objects,
        rs_info: &Arc<ResourceInfo>,
        rs: &Value,
        replicas: i64,
    ) -> Result<(), ApiError> {
        let desired = self.desired.to_string();
        let max = (self.desired + self.max_surge).to_string();
        if access::int(rs, "spec.replicas", 1) == replicas
            && annotation(rs, DESIRED) == Some(desired.as_str())
            && annotation(rs, MAX) == Some(max.as_str())
        {
            return Ok(());
        }
        let mut next = rs.clone();
        meta::set_path(&mut next, "spec.replicas", json!(replicas));
        set_annotation(&mut next, DESIRED, &desired);
        set_annotation(&mut next, MAX, &max);
        access::replace(objects, access::Actor::Deployment, rs_info, next).await?;
        Ok(())
    }
}

/// Scales the new ReplicaSet towards `sizes.desired` and the old ones down, one step as the
/// strategy allows (upstream's `rolloutRecreate` and `rolloutRolling`).
async fn scale(
    objects: &Objects,
    rs_info: &Arc<ResourceInfo>,
    d: &Value,
    new_rs: &Value,
    old: &[Object],
    sizes: Sizes,
    max_unavailable: i64,
) -> Result<(), ApiError> {
    let desired = sizes.desired;
    let mut old: Vec<&Object> = old.iter().collect();
    old.sort_by(|a, b| {
        let created = |rs: &Value| {
            meta::path(rs, "metadata.creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        created(a)
            .cmp(&created(b))
            .then_with(|| meta::name(a).cmp(meta::name(b)))
    });
    let counts = |rs: &Value| Replicas {
        spec: access::int(rs, "spec.replicas", 1),
        available: access::int(rs, "status.availableReplicas", 0),
    };
    let new_counts = counts(new_rs);
    let old_counts: Vec<Replicas> = old.iter().map(|rs| counts(rs)).collect();
    let (new_target, old_targets) = if strategy(d) == "Recreate" {
        let new_target = if old.iter().any(|rs| running(rs)) {
            0
        } else {
            desired
        };
        (new_target, vec![0; old.len()])
    } else {
        let total = new_counts.spec + old_counts.iter().map(|r| r.spec).sum::<i64>();
        let new_target = rolling_new_target(desired, sizes.max_surge, new_counts.spec, total);
        if new_target != new_counts.spec {
            // Upstream's rollout resizes the new ReplicaSet and returns: old ones shrink on
            // a later pass, once the new replicas are counted.
            (new_target, old_counts.iter().map(|r| r.spec).collect())
        } else {
            let old_targets =
                rolling_old_targets(desired, max_unavailable, new_counts, &old_counts);
            (new_target, old_targets)
        }
    };
    sizes.set(objects, rs_info, new_rs, new_target).await?;
    for ((rs, target), was) in old.iter().zip(old_targets).zip(&old_counts) {
        // Old ReplicaSets left at their size keep their annotations, as upstream's.
        if target != was.spec {
            sizes.set(objects, rs_info, rs, target).await?;
        }
    }
    Ok(())
}

/// A ReplicaSet's counts as a rolling update reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Replicas {
    /// `spec.replicas`.
    spec: i64,
    /// `status.availableReplicas`.
    available: i64,
}

/// The new ReplicaSet's next size in a rolling update (upstream's `NewRSNewReplicas`): down to
/// `desired` at once, up only while all ReplicaSets together (`total`) stay within
/// `desired + max_surge`.
fn rolling_new_target(desired: i64, max_surge: i64, new: i64, total: i64) -> i64 {
    if new >= desired {
        return desired;
    }
    let max_total = desired + max_surge;
    if total >= max_total {
        return new;
    }
    new + (max_total - total).min(desired - new)
}

/// The sizes of the old ReplicaSets (oldest first) after one rolling step (upstream's
/// `reconcileOldReplicaSets`): replicas that are not available go first, as far as the
/// new ReplicaSet's unavailable ones leave room; then available ones, as long as
/// `desired - max_unavailable` replicas stay available.
fn rolling_old_targets(
    desired: i64,
    max_unavailable: i64,
    new: Replicas,
    old: &[Replicas],
) -> Vec<i64> {
    let mut targets: Vec<i64> = old.iter().map(|r| r.spec).collect();
    let old_total: i64 = targets.iter().sum();
    if old_total == 0 {
        return targets;
    }
    let min_available = desired - max_unavailable;
    let new_unavailable = new.spec - new.available;
    let max_scaled_down = new.spec + old_total - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return targets;
    }
    let mut cleaned = 0;
    for (target, r) in targets.iter_mut().zip(old) {
        if cleaned >= max_scaled_down {
            break;
        }
        if r.spec == 0 || r.spec <= r.available {
            continue;
        }
        let n = (max_scaled_down - cleaned).min(r.spec - r.available);
        *target -= n;
        cleaned += n;
    }
    let available: i64 = new.available + old.iter().map(|r| r.available).sum::<i64>();
    if available <= min_available {
        return targets;
    }
    let scale_down = available - min_available;
    let mut done = 0;
    for target in targets.iter_mut() {
        if done >= scale_down {
            break;
        }
        if *target == 0 {
            continue;
        }
        let n = (*target).min(scale_down - done);
        *target -= n;
        done += n;
    }
    targets
}

/// Whether a ReplicaSet still has pods (`status.replicas` above zero).
fn running(rs: &Value) -> bool {
    access::int(rs, "status.replicas", 0) > 0
}

fn strategy(d: &Value) -> &str {
    meta::path(d, "spec.strategy.type")
        .and_then(Value::as_str)
        .unwrap_or("RollingUpdate")
}

/// `(maxSurge, maxUnavailable)` resolved against `replicas` (percentages: surge rounds up,
/// unavailable down; both zero means one unavailable), as upstream's `ResolveFenceposts`.
fn rolling_limits(d: &Value, replicas: i64) -> (i64, i64) {
    if strategy(d) == "Recreate" {
        return (0, 0);
    }
    let resolve = |v: Option<&Value>, up: bool| -> i64 {
        match v {
            Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
            Some(Value::String(s)) => {
                let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(25);
                let scaled = pct * replicas;
                if up {
                    (scaled + 99) / 100
                } else {
                    scaled / 100
                }
            }
            _ => {
                let scaled = 25 * replicas;
                if up {
                    (scaled + 99) / 100
                } else {
                    scaled / 100
                }
            }
        }
    };
    let surge = resolve(meta::path(d, "spec.strategy.rollingUpdate.maxSurge"), true);
    let mut unavailable = resolve(
        meta::path(d, "spec.strategy.rollingUpdate.maxUnavailable"),
        false,
    );
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable.min(replicas))
}

/// Whether a ReplicaSet's template equals `template` once its `pod-template-hash` is ignored.
fn same_template(rs: &Value, template: &Value) -> bool {
    let Some(mut t) = meta::path(rs, "spec.template").cloned() else {
        return false;
    };
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(POD_TEMPLATE_HASH);
        if labels.is_empty()
            && let Some(md) = t.get_mut("metadata").and_then(Value::as_object_mut)
        {
            md.remove("labels");
        }
    }
    let strip_empty = |v: &Value| -> Value {
        let mut v = v.clone();
        if v.pointer("/metadata")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
            && let Some(m) = v.as_object_mut()
        {
            m.remove("metadata");
        }
        v
    };
    strip_empty(&t) == strip_empty(template)
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    meta::metadata(obj)?.get("annotations")?.get(key)?.as_str()
}

fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    if let Some(md) = meta::metadata_mut(obj) {
        let annotations = md.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        annotations[key] = json!(value);
    }
}

/// The `deployment.kubernetes.io/revision` of a ReplicaSet (0 when unset).
fn revision(rs: &Value) -> i64 {
    annotation(rs, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// A ReplicaSet with the Deployment's annotations and a revision of at least `revision`.
fn annotate(rs: &Value, d: &Value, revision_at_least: i64, desired: i64, max_surge: i64) -> Value {
    let mut next = rs.clone();
    if revision(rs) < revision_at_least {
        set_annotation(&mut next, REVISION, &revision_at_least.to_string());
    }
    if let Some(annotations) = meta::metadata(d)
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    {
        for (k, v) in annotations {
            if copied_annotation(k)
                && let Some(v) = v.as_str()
            {
                set_annotation(&mut next, k, v);
            }
        }
    }
    if annotation(&next, DESIRED).is_none() {
        set_annotation(&mut next, DESIRED, &desired.to_string());
        set_annotation(&mut next, MAX, &(desired + max_surge).to_string());
    }
    next
}

/// Deployment annotations upstream copies onto its ReplicaSets.
fn copied_annotation(key: &str) -> bool {
    !matches!(
        key,
        REVISION | DESIRED | MAX | REVISION_HISTORY | LAST_APPLIED
    )
}

fn new_replica_set(
    d: &Value,
    template: &Value,
    name: &str,
    hash: &str,
    replicas: i64,
    revision: i64,
    max_surge: i64,
) -> Value {
    let mut template = template.clone();
    meta::set_path(
        &mut template,
        &format!("metadata.labels.{POD_TEMPLATE_HASH}"),
        json!(hash),
    );
    let mut labels = access::labels_of(&template, "metadata.labels");
    labels.insert(POD_TEMPLATE_HASH.into(), json!(hash));
    let mut selector = meta::path(d, "spec.selector")
        .cloned()
        .unwrap_or_else(|| json!({}));
    meta::set_path(
        &mut selector,
        &format!("matchLabels.{POD_TEMPLATE_HASH}"),
        json!(hash),
    );
    let mut rs = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": meta::namespace(d),
            "labels": labels,
            "ownerReferences": [access::owner_ref(d, "apps/v1", "Deployment")],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": access::int(d, "spec.minReadySeconds", 0),
            "selector": selector,
            "template": template,
        },
    });
    set_annotation(
        &mut rs,
        DESIRED,
        &access::int(d, "spec.replicas", 1).to_string(),
    );
    set_annotation(
        &mut rs,
        MAX,
        &(access::int(d, "spec.replicas", 1) + max_surge).to_string(),
    );
    annotate(&rs, d, revision, replicas, max_surge)
}

/// Writes the Deployment's status from its ReplicaSets (upstream's `calculateStatus` and
/// progress conditions).
async fn write_status(
    objects: &Objects,
    d: &Value,
    new_rs: Option<&Object>,
    all: &[Object],
    created_new: bool,
    max_unavailable: i64,
) -> Result<(), ApiError> {
    let sum = |field: &str| -> i64 { all.iter().map(|rs| access::int(rs, field, 0)).sum() };
    let desired = access::int(d, "spec.replicas", 1).max(0);
    let replicas = sum("status.replicas");
    let ready = sum("status.readyReplicas");
    let available = sum("status.availableReplicas");
    let spec_total = sum("spec.replicas");
    let updated = new_rs.map_or(0, |rs| access::int(rs, "status.replicas", 0));
    let unavailable = (spec_total - available).max(0);
    let mut status = Map::new();
    status.insert("observedGeneration".into(), json!(access::generation(d)));
    if replicas > 0 {
        status.insert("replicas".into(), json!(replicas));
    }
    if updated > 0 {
        status.insert("updatedReplicas".into(), json!(updated));
    }
    if ready > 0 {
        status.insert("readyReplicas".into(), json!(ready));
    }
    if available > 0 {
        status.insert("availableReplicas".into(), json!(available));
    }
    if unavailable > 0 {
        status.insert("unavailableReplicas".into(), json!(unavailable));
    }
    if let Some(c) = meta::path(d, "status.collisionCount") {
        status.insert("collisionCount".into(), c.clone());
    }
    let mut conditions: Vec<Value> = meta::path(d, "status.conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let times = ["lastUpdateTime", "lastTransitionTime"];
    if available >= desired - max_unavailable {
        access::set_condition(
            &mut conditions,
            json!({"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}),
            &times,
        );
    } else {
        access::set_condition(
            &mut conditions,
            json!({"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "Deployment does not have minimum availability."}),
            &times,
        );
    }
    if let Some(rs) = new_rs {
        let rs_name = meta::name(rs);
        let old_pods = replicas - updated;
        let complete =
            updated == desired && replicas == desired && available == desired && old_pods == 0;
        let has_progressing = conditions.iter().any(|c| c["type"] == "Progressing");
        let (reason, message) = if complete {
            (
                "NewReplicaSetAvailable",
                format!("ReplicaSet {rs_name:?} has successfully progressed."),
            )
        } else if created_new {
            (
                "NewReplicaSetCreated",
                format!("Created new replica set {rs_name:?}"),
            )
        } else if !has_progressing {
            (
                "FoundNewReplicaSet",
                format!("Found new replica set {rs_name:?}"),
            )
        } else {
            (
                "ReplicaSetUpdated",
                format!("ReplicaSet {rs_name:?} is progressing."),
            )
        };
        access::set_condition(
            &mut conditions,
            json!({"type": "Progressing", "status": "True", "reason": reason, "message": message}),
            &times,
        );
    }
    // Upstream lists Available before Progressing.
    conditions.sort_by_key(|c| match c["type"].as_str() {
        Some("Available") => 0,
        Some("Progressing") => 1,
        _ => 2,
    });
    if !conditions.is_empty() {
        status.insert("conditions".into(), Value::Array(conditions));
    }
    let status = Value::Object(status);
    if d.get("status") == Some(&status) {
        return Ok(());
    }
    access::write_status(
        objects,
        access::Actor::Deployment,
        &access::info(objects, "apps", "v1", "deployments")?,
        d,
        status,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_limits_resolve_like_upstream() {
        let d = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}}});
        assert_eq!(rolling_limits(&d, 3), (1, 0));
        assert_eq!(rolling_limits(&d, 4), (1, 1));
        assert_eq!(rolling_limits(&d, 10), (3, 2));
        let d = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}});
        assert_eq!(rolling_limits(&d, 3), (0, 1));
        let d = json!({"spec": {"strategy": {"type": "Recreate"}}});
        assert_eq!(rolling_limits(&d, 3), (0, 0));
    }

    #[test]
    fn the_new_replica_set_grows_within_the_surge() {
        // From scratch: straight to the desired size.
        assert_eq!(rolling_new_target(4, 1, 0, 0), 4);
        // A rollout over 4 old replicas with a surge of 1: one at a time.
        assert_eq!(rolling_new_target(4, 1, 0, 4), 1);
        assert_eq!(rolling_new_target(4, 1, 1, 5), 1);
        assert_eq!(rolling_new_target(4, 1, 1, 4), 2);
        // Never above desired; scaled down to it at once.
        assert_eq!(rolling_new_target(4, 3, 3, 4), 4);
        assert_eq!(rolling_new_target(4, 1, 6, 6), 4);
    }

    #[test]
    fn old_replica_sets_shrink_within_the_unavailability() {
        let r = |spec, available| Replicas { spec, available };
        // The new replica is not available yet: nothing may go.
        assert_eq!(rolling_old_targets(4, 0, r(1, 0), &[r(4, 4)]), vec![4]);
        // It is: one old replica goes.
        assert_eq!(rolling_old_targets(4, 0, r(1, 1), &[r(4, 4)]), vec![3]);
        // Unavailable old replicas go first, from the oldest ReplicaSet, within what the
        // new ReplicaSet's unavailable replicas leave.
        assert_eq!(
            rolling_old_targets(4, 1, r(2, 0), &[r(3, 1), r(2, 2)]),
            vec![1, 2]
        );
        // Then available ones, oldest first, down to desired - maxUnavailable available.
        assert_eq!(
            rolling_old_targets(4, 1, r(2, 2), &[r(1, 1), r(2, 2)]),
            vec![0, 1]
        );
        assert_eq!(rolling_old_targets(4, 1, r(4, 4), &[r(0, 0)]), vec![0]);
    }

    #[test]
    fn new_replica_sets_carry_the_hash_everywhere() {
        let d = json!({"metadata": {"name": "web", "namespace": "default", "uid": "u1", "annotations": {"team": "a", LAST_APPLIED: "{}"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        let template = d["spec"]["template"].clone();
        let hash = template_hash(&template, None);
        let rs = new_replica_set(&d, &template, &format!("web-{hash}"), &hash, 3, 1, 1);
        assert_eq!(rs["metadata"]["labels"][POD_TEMPLATE_HASH], hash.as_str());
        assert_eq!(
            rs["spec"]["selector"]["matchLabels"][POD_TEMPLATE_HASH],
            hash.as_str()
        );
        assert_eq!(
            rs["spec"]["template"]["metadata"]["labels"][POD_TEMPLATE_HASH],
            hash.as_str()
        );
        assert_eq!(rs["metadata"]["annotations"][REVISION], "1");
        assert_eq!(rs["metadata"]["annotations"][DESIRED], "3");
        assert_eq!(rs["metadata"]["annotations"][MAX], "4");
        assert_eq!(rs["metadata"]["annotations"]["team"], "a");
        assert!(rs["metadata"]["annotations"].get(LAST_APPLIED).is_none());
        assert_eq!(rs["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            rs["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        assert!(same_template(&rs, &template));
        let mut other = template.clone();
        other["spec"]["containers"][0]["image"] = json!("nginx:2");
        assert!(!same_template(&rs, &other));
    }
}
