//! The ClusterRole aggregation controller: a ClusterRole with an `aggregationRule` gets, as its
//! `rules`, the union of the rules of every other ClusterRole whose labels match one of its
//! `clusterRoleSelectors` (in name order, duplicates dropped), whenever any ClusterRole changes.

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::meta;
use crate::objects::{Objects, Part, PatchBody, WriteOptions};
use crate::patch::PatchType;
use crate::selector::{LabelSelector, from_label_selector_json};
use crate::storage::{Snapshot, collection_prefix};

const GROUP: &str = "rbac.authorization.k8s.io";
/// Most passes of one reconcile (aggregated roles can feed each other: view → edit → admin).
const MAX_PASSES: usize = 8;

/// Where ClusterRoles are stored.
pub(crate) fn prefix() -> String {
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

/// The field manager of the aggregation controller's writes (upstream's).
pub(crate) const FIELD_MANAGER: &str = "clusterrole-aggregation-controller";

/// Brings every aggregated ClusterRole up to date through the write pipeline (a merge patch of
/// `rules`, conditional on the version the rules were computed from); returns how many were
/// rewritten. Run by the built-in controllers whenever a ClusterRole changes.
pub(crate) async fn reconcile(objects: &Objects) -> Result<usize, ApiError> {
    let Some(info) = objects.registry().get(GROUP, "v1", "clusterroles") else {
        return Ok(0);
    };
    let opts = WriteOptions {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..WriteOptions::default()
    };
    let mut written = 0;
    for _ in 0..MAX_PASSES {
        let snapshot = objects.storage().snapshot();
        let mut changed = 0;
        let prefix = prefix();
        for (_, role) in snapshot.range(&prefix, None) {
            let Some(rules) = aggregated_rules(&snapshot, role) else {
                continue;
            };
            let current = role.get("rules").cloned().unwrap_or(Value::Null);
            if current == Value::Array(rules.clone()) {
                continue;
            }
            // Only the version the rules were computed from; a newer one means another pass.
            let patch = json!({
                "metadata": {"resourceVersion": meta::resource_version(role)},
                "rules": rules,
            });
            let body = PatchBody {
                kind: PatchType::Merge,
                bytes: patch.to_string().into_bytes(),
            };
            match objects
                .patch(&info, None, meta::name(role), body, Part::Main, &opts)
                .await
            {
                Ok(_) => changed += 1,
                Err(e) if e.code == 409 || e.code == 404 => changed += 1,
                Err(e) => return Err(e),
            }
        }
        written += changed;
        if changed == 0 {
            break;
        }
    }
    Ok(written)
}
