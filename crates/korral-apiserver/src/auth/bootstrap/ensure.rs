//! Keeping the bootstrap objects at start, as upstream kube-apiserver's `rbac/bootstrap-roles`
//! post-start hook does (`pkg/registry/rbac/rest/storage_rbac.go`, reconciling with
//! `pkg/registry/rbac/reconciliation` without removing extra permissions or subjects):
//!
//! - a missing object is created;
//! - an existing Role or ClusterRole gets the bootstrap labels and annotations it lacks (its
//!   own values win), the bootstrap rules it does not cover (upstream's `Covers`, as one-verb,
//!   one-resource rules appended to its own), and, for a ClusterRole, the bootstrap
//!   `clusterRoleSelectors` it lacks (an `aggregationRule` the bootstrap role has not is
//!   removed);
//! - an existing binding gets the labels, annotations and subjects it lacks, and is deleted and
//!   created again when its `roleRef` differs;
//! - an object annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` is left as it
//!   is.
//!
//! Only objects that change are written: straight into storage, one guarded write per key (the
//! decision is taken again on the stored object under the key's lock), all issued before any
//! is awaited (durable storage commits them in one batch). A write replaces the object, so it
//! gets a new `resourceVersion` and watchers see it `MODIFIED` (a re-created binding: `DELETED`
//! then `ADDED`). The objects are stored as the write pipeline would store them (a server's
//! own writes record no `managedFields`; the RBAC strategies change nothing of these objects),
//! which the tests check against the pipeline.

use serde_json::{Map, Value};

use super::{Bootstrap, RESOURCES, all, policy::GROUP};
use crate::auth::escalation::uncovered;
use crate::auth::rbac::{PolicyRule, rules_of};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::{Object, Write};

/// The annotation by which an object opts out of reconciliation (value `"false"`).
const AUTO_UPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// Creates the bootstrap objects that do not exist yet and reconciles the existing ones as
/// upstream does (see the module documentation). Their namespaces exist: the server creates
/// its system namespaces first.
pub async fn ensure(objects: &Objects) -> Result<(), ApiError> {
    let registry = objects.registry();
    let mut infos = Vec::with_capacity(RESOURCES.len());
    for resource in RESOURCES {
        let Some(info) = registry.get(GROUP, "v1", resource) else {
            return Err(ApiError::internal("RBAC resources are not registered"));
        };
        infos.push(info);
    }
    let storage = objects.storage();
    let snapshot = storage.snapshot();
    let now = meta::now_rfc3339();
    let mut writes = Vec::new();
    for boot in all() {
        let Some(info) = infos.get(boot.resource) else {
            continue;
        };
        let key = Objects::key(info, boot.namespace, boot.name);
        let recreate = match snapshot.objects.get(&key) {
            None => false,
            Some(existing) => match reconcile(boot, existing) {
                Outcome::Unchanged => continue,
                Outcome::Skipped(why) => {
                    tracing::warn!(
                        "skipped {why} {}.{GROUP}/{}: {}",
                        kind(boot),
                        boot.name,
                        what_differs(boot, existing)
                    );
                    continue;
                }
                Outcome::Update(_) => {
                    tracing::info!(
                        "updated {}.{GROUP}/{}: {}",
                        kind(boot),
                        boot.name,
                        what_differs(boot, existing)
                    );
                    false
                }
                Outcome::Recreate => {
                    tracing::info!("recreated {}.{GROUP}/{}", kind(boot), boot.name);
                    true
                }
            },
        };
        let created = stored(boot, &now);
        writes.push(storage.update(
            key.clone(),
            Box::new(move |current| {
                Ok(match current {
                    None => Write::Put(created),
                    Some(current) => match reconcile(boot, current) {
                        Outcome::Update(object) => Write::Put(object),
                        Outcome::Recreate => Write::Delete,
                        Outcome::Unchanged | Outcome::Skipped(_) => Write::Unchanged,
                    },
                })
            }),
        ));
        if recreate {
            // After the delete (the store applies a key's writes in the order issued).
            let created = stored(boot, &now);
            writes.push(storage.update(
                key,
                Box::new(move |current| {
                    Ok(match current {
                        None => Write::Put(created),
                        Some(_) => Write::Unchanged,
                    })
                }),
            ));
        }
    }
    for written in futures::future::join_all(writes).await {
        written?;
    }
    Ok(())
}

/// What reconciling one existing bootstrap object asks for.
enum Outcome {
    /// It is as it should be.
    Unchanged,
    /// It should change but is left alone (the reason, for the log).
    Skipped(&'static str),
    /// It is to be replaced by this object.
    Update(Value),
    /// It is to be deleted and created again (a binding whose `roleRef` differs).
    Recreate,
}

/// The lowercase kind of `boot`, as upstream's log lines name it.
fn kind(boot: &Bootstrap) -> &'static str {
    match boot.resource {
        0 => "clusterrole",
        1 => "clusterrolebinding",
        2 => "role",
        _ => "rolebinding",
    }
}

/// Whether `boot` is a Role or ClusterRole (otherwise: a binding).
fn is_role(boot: &Bootstrap) -> bool {
    boot.resource == 0 || boot.resource == 2
}

/// Upstream's `computeReconciledRole` / `computeReconciledRoleBinding` (neither removing
/// extras) and its protection check.
fn reconcile(boot: &Bootstrap, existing: &Object) -> Outcome {
    let protected = meta::path(existing, "metadata.annotations")
        .and_then(|a| a.get(AUTO_UPDATE))
        .and_then(Value::as_str)
        == Some("false");
    let outcome = if is_role(boot) {
        reconcile_role(boot, existing)
    } else {
        reconcile_binding(boot, existing)
    };
    match outcome {
        Outcome::Update(_) | Outcome::Recreate if protected => {
            Outcome::Skipped("reconcile-protected")
        }
        other => other,
    }
}

/// A Role or ClusterRole: labels, annotations, missing rules, missing aggregation selectors.
fn reconcile_role(boot: &Bootstrap, existing: &Object) -> Outcome {
    let mut out = (**existing).clone();
    let mut changed = merge_metadata(boot, &mut out);
    let missing = missing_rules(boot, existing);
    if !missing.is_empty()
        && let Some(rules) = array_member(&mut out, "rules")
    {
        rules.extend(missing.iter().map(rule_json));
        changed = true;
    }
    // ClusterRoles only: Roles have no aggregation rule.
    if boot.resource == 0 {
        let expected = aggregation_rule(&boot.object);
        match (expected, aggregation_rule(existing)) {
            (None, Some(_)) => {
                if let Some(map) = out.as_object_mut() {
                    map.remove("aggregationRule");
                }
                changed = true;
            }
            (Some(expected), have) => {
                let have = selectors(have);
                let missing: Vec<Value> = selectors(Some(expected))
                    .into_iter()
                    .filter(|want| !have.iter().any(|s| semantic(s) == semantic(want)))
                    .cloned()
                    .collect();
                if !missing.is_empty()
                    && let Some(map) = out.as_object_mut()
                {
                    let rule = map
                        .entry("aggregationRule")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if !rule.is_object() {
                        *rule = Value::Object(Map::new());
                    }
                    if let Some(list) = array_member(rule, "clusterRoleSelectors") {
                        list.extend(missing);
                        changed = true;
                    }
                }
            }
            (None, None) => {}
        }
    }
    if changed {
        Outcome::Update(out)
    } else {
        Outcome::Unchanged
    }
}

/// A binding: re-created when its `roleRef` differs, else labels, annotations and missing
/// subjects.
fn reconcile_binding(boot: &Bootstrap, existing: &Object) -> Outcome {
    let role_ref = |obj: &Value| {
        ["apiGroup", "kind", "name"].map(|f| string_at(obj.get("roleRef"), f).to_string())
    };
    if role_ref(&boot.object) != role_ref(existing) {
        // A delete would only mark an object with finalizers; upstream would then fail to
        // create it again.
        if !meta::finalizers(existing).is_empty() {
            return Outcome::Skipped("binding with finalizers");
        }
        return Outcome::Recreate;
    }
    let mut out = (**existing).clone();
    let mut changed = merge_metadata(boot, &mut out);
    let missing = missing_subjects(boot, existing);
    if !missing.is_empty()
        && let Some(subjects) = array_member(&mut out, "subjects")
    {
        subjects.extend(missing.into_iter().cloned());
        changed = true;
    }
    if changed {
        Outcome::Update(out)
    } else {
        Outcome::Unchanged
    }
}

/// Upstream's `merge(expected, existing)` of labels and annotations (the existing values
/// win) into `out`; whether anything was added.
fn merge_metadata(boot: &Bootstrap, out: &mut Value) -> bool {
    let mut changed = false;
    for field in ["labels", "annotations"] {
        let Some(expected) = meta::path(&boot.object, "metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let Some(md) = out.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        let map = md.entry(field).or_insert_with(|| Value::Object(Map::new()));
        if !map.is_object() {
            *map = Value::Object(Map::new());
        }
        let Some(map) = map.as_object_mut() else {
            continue;
        };
        for (k, v) in expected {
            if !map.contains_key(k) {
                map.insert(k.clone(), v.clone());
                changed = true;
            }
        }
    }
    changed
}

/// The bootstrap rules `existing` does not cover, broken down as upstream's `Covers` reports
/// them (nothing when its rules are the bootstrap ones, the usual case).
fn missing_rules(boot: &Bootstrap, existing: &Value) -> Vec<PolicyRule> {
    if existing.get("rules") == boot.object.get("rules") {
        return Vec::new();
    }
    uncovered(&rules_of(existing), &rules_of(&boot.object))
}

/// The bootstrap subjects `existing` lacks (each once), as upstream's `diffSubjectLists`
/// compares them: kind, apiGroup, name and namespace.
fn missing_subjects<'a>(boot: &'a Bootstrap, existing: &Value) -> Vec<&'a Value> {
    let identity = |s: &Value| {
        ["kind", "apiGroup", "name", "namespace"].map(|f| string_at(Some(s), f).to_string())
    };
    let have: Vec<[String; 4]> = list(existing.get("subjects")).map(identity).collect();
    let mut missing: Vec<&Value> = Vec::new();
    for want in list(boot.object.get("subjects")) {
        let id = identity(want);
        if !have.contains(&id) && !missing.iter().any(|m| identity(m) == id) {
            missing.push(want);
        }
    }
    missing
}

/// The string member `field` of `obj` ("" when absent, as Go reads it).
fn string_at<'a>(obj: Option<&'a Value>, field: &str) -> &'a str {
    obj.and_then(|o| o.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The items of a JSON list (none when it is not one).
fn list(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    value.and_then(Value::as_array).into_iter().flatten()
}

/// The list at `obj[field]`, made one when it is not (`None` when `obj` is not an object).
fn array_member<'a>(obj: &'a mut Value, field: &str) -> Option<&'a mut Vec<Value>> {
    let slot = obj
        .as_object_mut()?
        .entry(field)
        .or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut()
}

/// The object's `aggregationRule` (`None` when absent or null, as Go's nil).
fn aggregation_rule(obj: &Value) -> Option<&Value> {
    obj.get("aggregationRule").filter(|a| !a.is_null())
}

/// The `clusterRoleSelectors` of an aggregation rule.
fn selectors(rule: Option<&Value>) -> Vec<&Value> {
    list(rule.and_then(|r| r.get("clusterRoleSelectors"))).collect()
}

/// A value as Go's semantic equality compares it: null members and empty lists and maps are
/// the nil ones Go omits.
fn semantic(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), semantic(v)))
                .filter(|(_, v)| match v {
                    Value::Null => false,
                    Value::Array(items) => !items.is_empty(),
                    Value::Object(map) => !map.is_empty(),
                    _ => true,
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(semantic).collect()),
        other => other.clone(),
    }
}

/// A `PolicyRule` object with upstream's field order, leaving out empty fields.
fn rule_json(rule: &PolicyRule) -> Value {
    let mut out = Map::new();
    let fields = [
        ("verbs", &rule.verbs),
        ("apiGroups", &rule.api_groups),
        ("resources", &rule.resources),
        ("resourceNames", &rule.resource_names),
        ("nonResourceURLs", &rule.non_resource_urls),
    ];
    for (key, items) in fields {
        if !items.is_empty() || key == "verbs" {
            out.insert(key.into(), Value::from(items.clone()));
        }
    }
    Value::Object(out)
}

/// What reconciling adds to `existing`, for the log.
fn what_differs(boot: &Bootstrap, existing: &Value) -> String {
    if !is_role(boot) {
        let subjects: Vec<String> = missing_subjects(boot, existing)
            .iter()
            .map(|s| s.to_string())
            .collect();
        return format!(
            "labels, annotations or subjects [{}] missing",
            subjects.join(", ")
        );
    }
    let rules: Vec<String> = missing_rules(boot, existing)
        .iter()
        .map(|r| rule_json(r).to_string())
        .collect();
    format!(
        "labels, annotations, aggregation selectors or rules [{}] missing",
        rules.join(", ")
    )
}

/// `boot` with the system metadata a create gives it (its `resourceVersion` is the store's).
fn stored(boot: &Bootstrap, now: &str) -> Value {
    let mut object = boot.object.clone();
    if let Some(md) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        md.insert(
            "uid".into(),
            Value::String(uuid::Uuid::new_v4().to_string()),
        );
        md.insert("creationTimestamp".into(), Value::String(now.into()));
    }
    object
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::objects::WriteOptions;
    use crate::registry::Registry;
    use crate::storage::MemoryStorage;

    /// An object layer over fresh memory storage, with the server's system namespaces.
    async fn objects() -> Objects {
        let objects = Objects::new(
            Arc::new(MemoryStorage::new()),
            Arc::new(Registry::with_builtins()),
        );
        let namespaces = objects.registry().get("", "v1", "namespaces").expect("ns");
        for ns in ["kube-system", "kube-public"] {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            objects
                .create(&namespaces, None, obj, &WriteOptions::default())
                .await
                .expect("namespace");
        }
        objects
    }

    /// The stored object at `boot`'s key, without what differs between two creates.
    fn comparable(objects: &Objects, boot: &Bootstrap) -> Value {
        let info = objects
            .registry()
            .get(GROUP, "v1", RESOURCES[boot.resource])
            .expect("rbac");
        let key = Objects::key(&info, boot.namespace, boot.name);
        let mut stored = (*objects.storage().get(&key).expect("stored")).clone();
        let md = stored["metadata"].as_object_mut().expect("metadata");
        for field in ["uid", "creationTimestamp", "resourceVersion"] {
            assert!(md.remove(field).is_some(), "{key}: {field}");
        }
        stored
    }

    #[tokio::test]
    async fn objects_are_stored_as_the_write_pipeline_stores_them() {
        let direct = objects().await;
        ensure(&direct).await.expect("ensure");
        let pipeline = objects().await;
        for boot in all() {
            let info = pipeline
                .registry()
                .get(GROUP, "v1", RESOURCES[boot.resource])
                .expect("rbac");
            pipeline
                .create(
                    &info,
                    boot.namespace,
                    boot.object.clone(),
                    &WriteOptions::default(),
                )
                .await
                .expect("valid bootstrap object");
            assert_eq!(
                comparable(&direct, boot),
                comparable(&pipeline, boot),
                "{:?}/{}",
                boot.namespace,
                boot.name
            );
        }
    }

    #[tokio::test]
    async fn missing_objects_are_created_and_changed_ones_reconciled() {
        let objects = objects().await;
        ensure(&objects).await.expect("first start");
        let info = objects
            .registry()
            .get(GROUP, "v1", "clusterroles")
            .expect("clusterroles");
        let unchanged = objects.storage().revision();
        ensure(&objects).await.expect("unchanged restart");
        assert_eq!(objects.storage().revision(), unchanged, "nothing written");
        // A user empties one role, protects an emptied other, and deletes a third.
        let put = |name: &'static str, protect: bool| {
            let key = Objects::key(&info, None, name);
            let mut changed = json!({"apiVersion": "rbac.authorization.k8s.io/v1",
                                     "kind": "ClusterRole", "metadata": {"name": name},
                                     "rules": []});
            if protect {
                changed["metadata"]["annotations"] = json!({AUTO_UPDATE: "false"});
            }
            let storage = objects.storage().clone();
            async move {
                storage
                    .update(key.clone(), Box::new(move |_| Ok(Write::Put(changed))))
                    .await
                    .expect("change");
                key
            }
        };
        let heapster = put("system:heapster", false).await;
        let protected = put("system:kube-aggregator", true).await;
        let deleted = Objects::key(&info, None, "system:kube-dns");
        objects
            .storage()
            .update(deleted.clone(), Box::new(|_| Ok(Write::Delete)))
            .await
            .expect("delete");
        let revision = objects.storage().revision();
        ensure(&objects).await.expect("restart");
        let boot = all()
            .iter()
            .find(|b| b.resource == 0 && b.name == "system:heapster")
            .expect("heapster");
        let stored = objects.storage().get(&heapster).expect("kept");
        assert!(uncovered(&rules_of(&stored), &rules_of(&boot.object)).is_empty());
        assert_eq!(
            stored["metadata"]["labels"],
            boot.object["metadata"]["labels"]
        );
        let stored = objects.storage().get(&protected).expect("kept");
        assert_eq!(stored["rules"], json!([]));
        assert!(objects.storage().get(&deleted).is_some(), "re-created");
        // Two writes: the reconciled role and the re-created one.
        assert_eq!(objects.storage().revision(), revision + 2);
    }

    #[test]
    fn missing_rules_are_appended_broken_down_as_upstream() {
        let boot = all()
            .iter()
            .find(|b| b.resource == 0 && b.name == "system:basic-user")
            .expect("basic-user");
        let existing: Object = std::sync::Arc::new(json!({
            "metadata": {"name": "system:basic-user", "labels": {"mine": "x"}},
            "rules": [{"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                       "resources": ["selfsubjectrulesreviews"]}],
        }));
        let Outcome::Update(out) = reconcile(boot, &existing) else {
            panic!("an update");
        };
        assert_eq!(
            out["rules"],
            json!([
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                 "resources": ["selfsubjectrulesreviews"]},
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                 "resources": ["selfsubjectaccessreviews"]},
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                 "resources": ["selfsubjectreviews"]},
            ])
        );
        assert_eq!(out["metadata"]["labels"]["mine"], "x");
        assert_eq!(
            out["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
        assert!(matches!(
            reconcile(boot, &Arc::new(out)),
            Outcome::Unchanged
        ));
    }
}
