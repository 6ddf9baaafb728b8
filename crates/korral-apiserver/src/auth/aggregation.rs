//! The ClusterRole aggregation controller: a ClusterRole with an `aggregationRule` gets, as its
//! `rules`, the union of the rules of every other ClusterRole whose labels match one of its
//! `clusterRoleSelectors` (in name order, duplicates dropped), whenever any ClusterRole changes.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::watch;

use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::selector::{LabelSelector, from_label_selector_json};
use crate::storage::{Snapshot, Write, collection_prefix};

const GROUP: &str = "rbac.authorization.k8s.io";
/// Most passes of one reconcile (aggregated roles can feed each other: view → edit → admin).
const MAX_PASSES: usize = 8;

fn prefix() -> String {
    collection_prefix(GROUP, "clusterroles", None)
}

fn selectors(role: &Value) -> Option<Vec<LabelSelector>> {
    let list = role
        .get("aggregationRule")?
        .get("clusterRoleSelectors")?
        .as_array()?;
    Some(
        list.iter()
            .filter_map(|s| from_label_selector_json(s).ok())
            .collect(),
    )
}

/// The rules an aggregated ClusterRole should have, or `None` when it has no aggregation rule.
pub fn aggregated_rules(snapshot: &Snapshot, role: &Value) -> Option<Vec<Value>> {
    let selectors = selectors(role)?;
    let own = meta::name(role);
    let mut rules: Vec<Value> = Vec::new();
    let prefix = prefix();
    for (_, other) in snapshot.range(&prefix, None) {
        if meta::name(other) == own {
            continue;
        }
        let labels = meta::labels(other);
        if !selectors.iter().any(|s| s.matches(labels)) {
            continue;
        }
        for rule in other
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !rules.contains(rule) {
                rules.push(rule.clone());
            }
        }
    }
    Some(rules)
}

/// Brings every aggregated ClusterRole up to date; returns how many were rewritten.
pub async fn reconcile(objects: &Objects) -> Result<usize, ApiError> {
    let storage = objects.storage();
    let mut written = 0;
    for _ in 0..MAX_PASSES {
        let snapshot = storage.snapshot();
        let mut changed = 0;
        let prefix = prefix();
        for (key, role) in snapshot.range(&prefix, None) {
            let Some(rules) = aggregated_rules(&snapshot, role) else {
                continue;
            };
            let current = role.get("rules").cloned().unwrap_or(Value::Null);
            if current == Value::Array(rules.clone()) {
                continue;
            }
            let revision = meta::resource_version(role).to_string();
            let committed = storage
                .update(
                    key.clone(),
                    Box::new(move |existing| {
                        // Only the version we computed from; a newer one triggers another pass.
                        let Some(existing) = existing else {
                            return Ok(Write::Unchanged);
                        };
                        if meta::resource_version(existing) != revision {
                            return Ok(Write::Unchanged);
                        }
                        let mut updated = (**existing).clone();
                        if let Some(map) = updated.as_object_mut() {
                            map.insert("rules".into(), Value::Array(rules));
                        }
                        Ok(Write::Put(updated))
                    }),
                )
                .await?;
            if committed.event.is_some() {
                changed += 1;
            }
        }
        written += changed;
        if changed == 0 {
            break;
        }
    }
    Ok(written)
}

/// Runs the controller until `shutdown` turns `true`.
pub async fn run(objects: Arc<Objects>, mut shutdown: watch::Receiver<bool>) {
    let prefix = prefix();
    'resync: loop {
        if *shutdown.borrow() {
            return;
        }
        let revision = objects.storage().revision();
        if let Err(e) = reconcile(&objects).await {
            tracing::warn!(error = %e, "aggregating cluster roles");
        }
        let mut feed = match objects.storage().watch(revision) {
            Ok(feed) => feed,
            Err(e) => {
                tracing::debug!(error = %e, "aggregation watch failed; resyncing");
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => continue 'resync,
                    _ = shutdown.changed() => return,
                }
            }
        };
        let mut dirty = feed.backlog.iter().any(|e| e.key.starts_with(&prefix));
        loop {
            if dirty {
                // Take whatever else is already queued, then reconcile once.
                loop {
                    match feed.live.try_recv() {
                        Ok(_) => {}
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Lagged(_)) => continue 'resync,
                        Err(TryRecvError::Closed) => return,
                    }
                }
                if let Err(e) = reconcile(&objects).await {
                    tracing::warn!(error = %e, "aggregating cluster roles");
                }
                dirty = false;
            }
            tokio::select! {
                event = feed.live.recv() => match event {
                    Ok(event) => dirty = event.key.starts_with(&prefix),
                    Err(RecvError::Lagged(_)) => continue 'resync,
                    Err(RecvError::Closed) => return,
                },
                _ = shutdown.changed() => return,
            }
        }
    }
}
