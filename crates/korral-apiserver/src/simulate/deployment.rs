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
//!
//! A paused Deployment, and one whose `spec.replicas` changed (an active ReplicaSet annotated
//! with another `desired-replicas`), is only scaled, as upstream's `sync`: with several active
//! ReplicaSets the difference to `replicas + maxSurge` is spread over them in proportion to
//! their sizes (each scaled from the `max-replicas` it was sized for), leftovers to the
//! largest; the rollout resumes on a later pass.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::access::{self, controlled_by};
use super::events::{Note, Recorder};
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

/// Reconciles one Deployment; its scaling is recorded as `ScalingReplicaSet` events.
pub async fn reconcile(
    objects: &Objects,
    events: &Recorder,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
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
    let new_rs = match new_rs {
        Some(rs) => {
            // Keep the new ReplicaSet's revision the newest (a rollback reuses an old one).
            let next = annotate(&rs, &d, max_old_revision + 1, desired, max_surge);
            if next != *rs {
                Some(access::replace(objects, access::Actor::Deployment, &rs_info, next).await?)
            } else {
                Some(rs)
            }
        }
        None => None,
    };
    let sizes = Sizes {
        desired,
        max_surge,
        deployment: &d,
        events,
    };

    // As upstream's `syncDeployment`: a paused Deployment and a scaling event (an active
    // ReplicaSet annotated with another size) are only scaled, proportionally; the rollout
    // (and the creation of the new ReplicaSet) waits for a later pass.
    if paused || scaling_event(desired, new_rs.as_ref(), &old) {
        scale_proportionally(objects, &rs_info, &d, new_rs.as_ref(), &old, sizes).await?;
        return finish(objects, &d, new_rs.as_ref(), false, max_unavailable).await;
    }

    let mut created_new = false;
    let new_rs = match new_rs {
        Some(rs) => rs,
        None if strategy(&d) == "Recreate" && old.iter().any(|rs| running(rs)) => {
            // Upstream's Recreate creates the new ReplicaSet only once the old pods are gone.
            for rs in old
                .iter()
                .filter(|rs| access::int(rs, "spec.replicas", 1) != 0)
            {
                sizes.set(objects, &rs_info, rs, 0).await?;
            }
            return finish(objects, &d, None, false, max_unavailable).await;
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
                    if initial > 0 {
                        scaled(objects, events, &d, &rs, 0, initial).await;
                    }
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

    scale(objects, &rs_info, &d, &new_rs, &old, sizes, max_unavailable).await?;
    finish(objects, &d, Some(&new_rs), created_new, max_unavailable).await
}

/// Ends a pass: the Deployment carries the newest revision (that of `new_rs`, if any) and
/// its status is written from its ReplicaSets as they are stored now.
async fn finish(
    objects: &Objects,
    d: &Object,
    new_rs: Option<&Object>,
    created_new: bool,
    max_unavailable: i64,
) -> Result<(), ApiError> {
    let (ns, name, uid) = (
        meta::namespace(d).unwrap_or(""),
        meta::name(d),
        meta::uid(d),
    );
    if let Some(new_rs) = new_rs {
        let rev = revision(new_rs).to_string();
        if annotation(d, REVISION) != Some(rev.as_str()) {
            let mut next = (**d).clone();
            set_annotation(&mut next, REVISION, &rev);
            let d_info = access::info(objects, "apps", "v1", "deployments")?;
            access::replace(objects, access::Actor::Deployment, &d_info, next).await?;
        }
    }
    let d = access::get(objects, "apps", "deployments", ns, name).unwrap_or_else(|| d.clone());
    let all: Vec<Object> = access::list(objects, "apps", "replicasets", ns)
        .into_iter()
        .filter(|rs| controlled_by(rs, uid) && !meta::is_deleting(rs))
        .collect();
    let new_now = new_rs.and_then(|new_rs| {
        all.iter()
            .find(|rs| meta::uid(rs) == meta::uid(new_rs))
            .cloned()
    });
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
struct Sizes<'a> {
    /// The Deployment's `spec.replicas`.
    desired: i64,
    /// Its resolved `maxSurge`.
    max_surge: i64,
    /// The Deployment, which the scaling events are about.
    deployment: &'a Value,
    /// Where they are recorded.
    events: &'a Recorder,
}

/// Records a ReplicaSet's scaling from `from` to `to` replicas (upstream's
/// `ScalingReplicaSet` event on the Deployment).
async fn scaled(objects: &Objects, events: &Recorder, d: &Value, rs: &Value, from: i64, to: i64) {
    let direction = if to > from { "up" } else { "down" };
    let message = format!(
        "Scaled {direction} replica set {} from {from} to {to}",
        meta::name(rs)
    );
    events
        .record(
            objects,
            access::Actor::Deployment,
            d,
            Note::normal("ScalingReplicaSet", message),
        )
        .await;
}

impl Sizes<'_> {
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
        let was = access::int(rs, "spec.replicas", 1);
        if was != replicas {
            scaled(objects, self.events, self.deployment, rs, was, replicas).await;
        }
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
    sizes: Sizes<'_>,
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

/// Whether the Deployment was scaled since its active ReplicaSets were last sized (upstream's
/// `isScalingEvent`): one of them carries a `deployment.kubernetes.io/desired-replicas` other
/// than `desired`.
fn scaling_event(desired: i64, new_rs: Option<&Object>, old: &[Object]) -> bool {
    old.iter()
        .chain(new_rs)
        .filter(|rs| access::int(rs, "spec.replicas", 1) > 0)
        .filter_map(|rs| int_annotation(rs, DESIRED))
        .any(|annotated| annotated != desired)
}

/// An integer annotation of a ReplicaSet (`None` when unset or not a number).
fn int_annotation(rs: &Value, key: &str) -> Option<i64> {
    annotation(rs, key).and_then(|v| v.parse().ok())
}

/// Scales the ReplicaSets of a paused Deployment or after a scaling event (upstream's `scale`):
/// a single active ReplicaSet (or, with none, the newest) takes `spec.replicas`; a saturated
/// new ReplicaSet leaves the old ones at zero; otherwise a rolling Deployment spreads the
/// difference to `replicas + maxSurge` over its active ReplicaSets in proportion to their
/// sizes ([`proportional_sizes`]). Every write goes through [`Sizes::set`].
async fn scale_proportionally(
    objects: &Objects,
    rs_info: &Arc<ResourceInfo>,
    d: &Value,
    new_rs: Option<&Object>,
    old: &[Object],
    sizes: Sizes<'_>,
) -> Result<(), ApiError> {
    let spec = |rs: &Value| access::int(rs, "spec.replicas", 1);
    // Old ReplicaSets newest first, then the new one (upstream's `FindActiveOrLatest`).
    let mut old: Vec<&Object> = old.iter().collect();
    old.sort_by(|a, b| newer_first(a, b));
    let all: Vec<&Object> = old.iter().copied().chain(new_rs).collect();
    let active: Vec<&Object> = all.iter().copied().filter(|rs| spec(rs) > 0).collect();
    let only = match active.len() {
        0 => new_rs.or_else(|| old.first().copied()),
        1 => active.first().copied(),
        _ => None,
    };
    if let Some(rs) = only {
        // (Upstream skips the write when the size is right; writing the annotations too
        // keeps a later pass from seeing the same scaling event again.)
        return sizes.set(objects, rs_info, rs, sizes.desired).await;
    }
    if all.is_empty() {
        return Ok(());
    }
    if new_rs.is_some_and(|rs| saturated(sizes.desired, rs)) {
        for rs in old.iter().filter(|rs| spec(rs) > 0) {
            sizes.set(objects, rs_info, rs, 0).await?;
        }
        return Ok(());
    }
    if strategy(d) != "RollingUpdate" {
        return Ok(());
    }
    let shares: Vec<Share> = active
        .iter()
        .map(|rs| Share {
            spec: spec(rs),
            max_replicas: int_annotation(rs, MAX),
            created: meta::meta_str(rs, "creationTimestamp").unwrap_or(""),
            name: meta::name(rs),
        })
        .collect();
    let status_replicas = access::int(d, "status.replicas", 0);
    for (i, target) in proportional_sizes(sizes.desired, sizes.max_surge, status_replicas, &shares)
    {
        if let Some(rs) = active.get(i) {
            sizes.set(objects, rs_info, rs, target).await?;
        }
    }
    Ok(())
}

/// Orders ReplicaSets newest first (creation time, then name, both descending).
fn newer_first(a: &Value, b: &Value) -> std::cmp::Ordering {
    let key = |rs: &Value| {
        (
            meta::meta_str(rs, "creationTimestamp")
                .unwrap_or("")
                .to_string(),
            meta::name(rs).to_string(),
        )
    };
    key(b).cmp(&key(a))
}

/// Whether the new ReplicaSet holds the whole Deployment (upstream's `IsSaturated`): sized
/// and annotated for `desired` replicas, all of them available.
fn saturated(desired: i64, rs: &Value) -> bool {
    access::int(rs, "spec.replicas", 1) == desired
        && int_annotation(rs, DESIRED) == Some(desired)
        && access::int(rs, "status.availableReplicas", 0) == desired
}

/// An active ReplicaSet as proportional scaling reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Share<'a> {
    /// `spec.replicas`.
    spec: i64,
    /// Its `deployment.kubernetes.io/max-replicas` annotation, if it parses.
    max_replicas: Option<i64>,
    /// `metadata.creationTimestamp` (RFC 3339, so it orders as text).
    created: &'a str,
    /// `metadata.name` (the tie-breaker of equal creation times).
    name: &'a str,
}

/// The sizes of the active ReplicaSets `shares` after a proportional scale (upstream's
/// `scale` for rolling Deployments), as `(index into shares, size)` in the order to write
/// them.
///
/// The difference between `desired + max_surge` (zero when scaling to zero) and their total
/// is spread largest first (equal sizes: newest first when growing, oldest first when
/// shrinking), each taking its [`proportion`]; what rounding leaves over goes to the first
/// (never below zero). `status_replicas` stands in for a missing `max-replicas` annotation.
fn proportional_sizes(
    desired: i64,
    max_surge: i64,
    status_replicas: i64,
    shares: &[Share],
) -> Vec<(usize, i64)> {
    let total: i64 = shares.iter().map(|s| s.spec).sum();
    let allowed = if desired > 0 { desired + max_surge } else { 0 };
    let to_add = allowed - total;
    let mut order: Vec<usize> = (0..shares.len()).collect();
    if to_add != 0 {
        order.sort_by(|&a, &b| {
            let (a, b) = (&shares[a], &shares[b]);
            let older = (a.created, a.name).cmp(&(b.created, b.name));
            let tie = if to_add > 0 { older.reverse() } else { older };
            b.spec.cmp(&a.spec).then(tie)
        });
    }
    let mut added = 0;
    let mut sizes: Vec<(usize, i64)> = order
        .iter()
        .map(|&i| {
            let share = &shares[i];
            let p = proportion(share, desired, max_surge, status_replicas, to_add, added);
            added += p;
            (i, share.spec + p)
        })
        .collect();
    if to_add != 0
        && let Some((_, first)) = sizes.first_mut()
    {
        *first = (*first + to_add - added).max(0);
    }
    sizes
}

/// How many replicas one ReplicaSet gains (or loses) of the `to_add` a Deployment spreads,
/// `added` of which are spread already (upstream's `GetProportion`): its fraction, capped by
/// what is left.
fn proportion(
    share: &Share,
    desired: i64,
    max_surge: i64,
    status_replicas: i64,
    to_add: i64,
    added: i64,
) -> i64 {
    if share.spec == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = fraction(share, desired, max_surge, status_replicas);
    let left = to_add - added;
    if to_add > 0 {
        fraction.min(left)
    } else {
        fraction.max(left)
    }
}

/// The change that keeps a ReplicaSet's share of the Deployment (upstream's
/// `getReplicaSetFraction`): its size scaled from the `max-replicas` it was sized for to
/// `desired + max_surge`, rounded half away from zero, minus its size; all of it when
/// scaling to zero.
fn fraction(share: &Share, desired: i64, max_surge: i64, status_replicas: i64) -> i64 {
    if desired == 0 {
        return -share.spec;
    }
    let annotated = share.max_replicas.unwrap_or(status_replicas);
    if annotated == 0 {
        // Upstream divides by zero here; no share is the safe reading (the leftover then
        // goes to the largest ReplicaSet).
        return 0;
    }
    let scaled = (share.spec * (desired + max_surge)) as f64 / annotated as f64;
    scaled.round() as i64 - share.spec
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
    // Upstream's `GetTerminatingReplicaCountForReplicaSets`: the sum of its ReplicaSets'
    // `terminatingReplicas`, unknown while one of them does not report it.
    let terminating: Option<i64> = all
        .iter()
        .map(|rs| meta::path(rs, "status.terminatingReplicas").and_then(Value::as_i64))
        .sum();
    if let Some(terminating) = terminating {
        status.insert("terminatingReplicas".into(), json!(terminating));
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

    /// An active ReplicaSet `name` of `spec` replicas sized for `max` (`created` orders them).
    fn share<'a>(name: &'a str, created: &'a str, spec: i64, max: Option<i64>) -> Share<'a> {
        Share {
            spec,
            max_replicas: max,
            created,
            name,
        }
    }

    #[test]
    fn proportional_scaling_spreads_like_upstream() {
        const OLD: &str = "2024-01-01T00:00:00Z";
        const NEW: &str = "2024-01-01T00:01:00Z";
        // 10 replicas, maxSurge 3, stuck mid-rollout at old 8 + new 5 (both sized for
        // max-replicas 13), scaled to 15: allowed 15 + 3 = 18, 5 to add, largest first.
        // old: round(8 * 18 / 13) = round(11.08) = 11 → +3; new: round(5 * 18 / 13) =
        // round(6.92) = 7 → +2, the 2 left.
        let stuck = [
            share("web-old", OLD, 8, Some(13)),
            share("web-new", NEW, 5, Some(13)),
        ];
        assert_eq!(proportional_sizes(15, 3, 13, &stuck), vec![(0, 11), (1, 7)]);
        // Then to 5: allowed 8, 10 to remove; old: round(11 * 8 / 18) = round(4.89) = 5 → -6;
        // new: round(7 * 8 / 18) = round(3.11) = 3 → -4.
        let grown = [
            share("web-old", OLD, 11, Some(18)),
            share("web-new", NEW, 7, Some(18)),
        ];
        assert_eq!(proportional_sizes(5, 3, 18, &grown), vec![(0, 5), (1, 3)]);
        // To zero: everything goes.
        assert_eq!(proportional_sizes(0, 3, 18, &grown), vec![(0, 0), (1, 0)]);
        // Nothing to add: sizes stay (and are written in the given order).
        assert_eq!(proportional_sizes(10, 3, 13, &stuck), vec![(0, 8), (1, 5)]);
    }

    #[test]
    fn leftovers_go_to_the_first_replica_set_in_scaling_order() {
        let (t1, t2, t3) = (
            "2024-01-01T00:00:00Z",
            "2024-01-01T00:01:00Z",
            "2024-01-01T00:02:00Z",
        );
        let ones = [
            share("a", t1, 1, Some(3)),
            share("b", t2, 1, Some(3)),
            share("c", t3, 1, Some(3)),
        ];
        // 3 → 4 (no surge): each fraction round(4 / 3) - 1 = 0, the leftover 1 goes to the
        // newest of the equal sizes.
        assert_eq!(
            proportional_sizes(4, 0, 3, &ones),
            vec![(2, 2), (1, 1), (0, 1)]
        );
        let twos = [
            share("a", t1, 2, Some(6)),
            share("b", t2, 2, Some(6)),
            share("c", t3, 2, Some(6)),
        ];
        // 6 → 5: each fraction round(2 * 5 / 6) - 2 = 0, the leftover -1 goes to the oldest.
        assert_eq!(
            proportional_sizes(5, 0, 6, &twos),
            vec![(0, 1), (1, 2), (2, 2)]
        );
        // Equal creation times fall back to the name.
        let same = [share("a", t1, 1, Some(3)), share("b", t1, 1, Some(3))];
        assert_eq!(proportional_sizes(3, 0, 2, &same), vec![(1, 2), (0, 1)]);
    }

    #[test]
    fn fractions_round_half_away_from_zero_and_sizes_stay_non_negative() {
        let t = "2024-01-01T00:00:00Z";
        // 5 * 1 / 2 = 2.5 rounds to 3: each loses 2, the leftover -5 would take the first
        // below zero.
        let odd = [share("a", t, 5, Some(2)), share("b", t, 5, Some(2))];
        assert_eq!(proportional_sizes(1, 0, 10, &odd), vec![(0, 0), (1, 3)]);
        // Without the annotation the Deployment's status.replicas stands in: round(4 * 12 / 6)
        // = 8 for "b"; "a" (sized for 8) would take round(4 * 12 / 8) - 4 = 2, but the 4 to
        // add are spent.
        let mixed = [
            share("a", t, 4, Some(8)),
            share("b", "2024-01-01T00:00:01Z", 4, None),
        ];
        assert_eq!(proportional_sizes(12, 0, 6, &mixed), vec![(1, 8), (0, 4)]);
        assert_eq!(fraction(&share("a", t, 4, Some(8)), 12, 0, 6), 2);
        // A zero max-replicas gives no share rather than a division by zero.
        assert_eq!(fraction(&share("a", t, 4, Some(0)), 12, 0, 6), 0);
        assert_eq!(proportion(&share("a", t, 4, Some(8)), 12, 0, 6, 3, 3), 0);
        assert_eq!(proportion(&share("a", t, 4, Some(8)), 12, 0, 6, 3, 2), 1);
        assert_eq!(proportion(&share("a", t, 4, Some(8)), 2, 0, 6, -6, 0), -3);
    }

    #[test]
    fn scaling_events_read_the_active_replica_sets_annotations() {
        let rs = |replicas: i64, desired: &str| -> Object {
            Arc::new(json!({"metadata": {"annotations": {DESIRED: desired}},
                "spec": {"replicas": replicas}, "status": {"availableReplicas": replicas}}))
        };
        assert!(!scaling_event(10, Some(&rs(5, "10")), &[rs(8, "10")]));
        assert!(scaling_event(15, Some(&rs(5, "10")), &[rs(8, "10")]));
        // Scaled-down ReplicaSets and unreadable annotations do not count.
        assert!(!scaling_event(15, Some(&rs(15, "15")), &[rs(0, "10")]));
        assert!(!scaling_event(15, None, &[rs(3, "many")]));
        assert!(saturated(15, &rs(15, "15")));
        assert!(!saturated(15, &rs(15, "10")));
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
