//! Controller history, as upstream's DaemonSet and StatefulSet controllers keep it
//! (`pkg/controller/history`, `getPatch`): one ControllerRevision per pod template a workload
//! has had, what `kubectl rollout history` lists and `kubectl rollout undo` applies.
//!
//! - A revision is `<owner>-<hash>` (the hash its pods are labelled with), owned by the
//!   workload, labelled with the template's labels and `controller-revision-hash`, carrying the
//!   workload's annotations (`kubernetes.io/change-cause` shows in the history) and, as `data`,
//!   the strategic merge patch `{"spec":{"template":{…,"$patch":"replace"}}}` that restores it.
//! - Its `revision` is one more than the highest so far; a template that comes back (a rollback)
//!   moves its existing revision to the top instead of adding one.
//! - Beyond `spec.revisionHistoryLimit` (default 10), the oldest revisions no live pod uses and
//!   that are not the current one are deleted.

use serde_json::{Map, Value, json};

use super::access::{self, Actor, controlled_by};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::Object;

/// The label naming a pod's or revision's template hash.
const REVISION_LABEL: &str = "controller-revision-hash";

/// The workload whose history is kept.
pub(super) struct Owner<'a> {
    /// The workload object.
    pub obj: &'a Value,
    /// Its `apiVersion` for the owner reference.
    pub api_version: &'static str,
    /// Its kind.
    pub kind: &'static str,
    /// The controller writing the revisions.
    pub actor: Actor,
}

/// The `data` of a revision: the patch that puts `template` back (upstream's `getPatch`).
fn patch_of(template: &Value) -> Value {
    let mut template = template.clone();
    if let Some(map) = template.as_object_mut() {
        map.insert("$patch".into(), json!("replace"));
    }
    json!({"spec": {"template": template}})
}

/// A revision's number.
fn number(revision: &Value) -> i64 {
    revision
        .get("revision")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Records the current template of `owner` as the revision `<owner>-<hash>` and trims the
/// history; `live` names the revisions pods still use.
pub(super) async fn record(
    objects: &Objects,
    ns: &str,
    owner: &Owner<'_>,
    hash: &str,
    live: &[String],
) -> Result<(), ApiError> {
    let info = access::info(objects, "apps", "v1", "controllerrevisions")?;
    let uid = meta::uid(owner.obj);
    let name = format!("{}-{hash}", meta::name(owner.obj));
    let mut owned: Vec<Object> = access::list(objects, "apps", "controllerrevisions", ns)
        .into_iter()
        .filter(|r| controlled_by(r, uid))
        .collect();
    let top = owned.iter().map(|r| number(r)).max().unwrap_or(0);
    match owned.iter().find(|r| meta::name(r) == name) {
        Some(current) if number(current) == top => {}
        Some(current) => {
            // The template came back: its revision becomes the newest.
            let mut moved = (**current).clone();
            moved["revision"] = json!(top + 1);
            let moved = access::replace(objects, owner.actor, &info, moved).await?;
            owned.retain(|r| meta::name(r) != name);
            owned.push(moved);
        }
        None => {
            if access::get(objects, "apps", "controllerrevisions", ns, &name).is_some() {
                // Another object holds the name (a hash collision upstream resolves by
                // bumping collisionCount); the history is left as it is.
                tracing::debug!(revision = %name, "controller revision name taken by another owner");
                return Ok(());
            }
            let template = meta::path(owner.obj, "spec.template")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let mut labels: Map<String, Value> = access::labels_of(&template, "metadata.labels");
            labels.insert(REVISION_LABEL.into(), json!(hash));
            let mut metadata = json!({
                "name": name,
                "labels": labels,
                "ownerReferences": [access::owner_ref(owner.obj, owner.api_version, owner.kind)],
            });
            if let Some(annotations) = meta::path(owner.obj, "metadata.annotations") {
                metadata["annotations"] = annotations.clone();
            }
            let revision = json!({
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": metadata,
                "data": patch_of(&template),
                "revision": top + 1,
            });
            let created = access::create(objects, owner.actor, &info, Some(ns), revision).await?;
            owned.push(created);
        }
    }
    // Trim: the oldest revisions beyond the limit that neither pods nor the template use.
    let limit = usize::try_from(access::int(owner.obj, "spec.revisionHistoryLimit", 10).max(0))
        .unwrap_or(0);
    let mut history: Vec<&Object> = owned
        .iter()
        .filter(|r| meta::name(r) != name && !live.iter().any(|l| l == meta::name(r)))
        .collect();
    history.sort_by_key(|r| number(r));
    let excess = history.len().saturating_sub(limit);
    for old in history.into_iter().take(excess) {
        access::delete(objects, owner.actor, &info, old).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_replaces_the_template_as_upstreams_get_patch() {
        let template = json!({"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "i:1"}]}});
        assert_eq!(
            patch_of(&template),
            json!({"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "a"}},
                "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}})
        );
        assert_eq!(number(&json!({"revision": 3})), 3);
        assert_eq!(number(&json!({})), 0);
    }
}
