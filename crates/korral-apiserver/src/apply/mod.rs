//! Server-side apply and managed-fields bookkeeping.
//!
//! * [`apply`]: merges an applied configuration (`application/apply-patch+yaml`) into the live
//!   object with the list semantics of the kind, removes the fields the manager applied last
//!   time and no longer applies (unless another manager owns them), detects conflicts with
//!   other managers (409 naming managers and fields unless `force=true`) and records the
//!   manager's `Apply` entry in `metadata.managedFields`;
//! * [`record_update`]: records the `Update` entry of every other write (create, update,
//!   non-apply patch, status and scale writes), taking changed fields away from other managers.
//!
//! Field sets are encoded as upstream's `FieldsV1`; list semantics come from
//! [`semantics::BuiltinSemantics`] for built-in kinds and from the CRD schema for custom
//! resources.

mod fieldset;
mod managed;
mod path;
mod semantics;
mod walk;

use serde_json::{Map, Value};

pub use fieldset::FieldSet;
pub use managed::{Entry, Operation};
pub use path::PathElement;
pub use semantics::{BuiltinSemantics, SchemaSemantics, Semantics};

use crate::error::{ApiError, Cause};
use crate::registry::ResourceInfo;
use managed::{Conflict, Stored};

/// Deepest applied configuration accepted.
pub const MAX_APPLY_DEPTH: usize = 100;
/// Longest field manager name (upstream's `FieldManagerMaxLength`).
pub const MAX_FIELD_MANAGER_LENGTH: usize = 128;

/// Who writes: the field manager, the API version the request used and the subresource.
#[derive(Debug, Clone, Copy)]
pub struct Actor<'a> {
    /// The field manager name.
    pub manager: &'a str,
    /// The API version of the request (`apps/v1`).
    pub api_version: &'a str,
    /// `status` or `scale` for subresource writes.
    pub subresource: Option<&'a str>,
}

/// The list and map semantics of a resource.
pub fn semantics(info: &ResourceInfo) -> Box<dyn Semantics + '_> {
    match info.custom.as_ref().and_then(|c| c.schema.as_deref()) {
        Some(schema) => Box::new(SchemaSemantics::new(schema)),
        None => Box::new(BuiltinSemantics::new(info)),
    }
}

/// Merges a configuration into an object without tracking ownership, as a
/// MutatingAdmissionPolicy's `ApplyConfiguration` does (upstream's `ApplyStructuredMergeDiff`):
/// maps merge field by field and associative lists item by item; a configuration that sets an
/// atomic list, map or struct is refused, since merging it would drop the members it omits.
pub fn merge_unowned(info: &ResourceInfo, live: &Value, config: &Value) -> Result<Value, String> {
    let sem = semantics(info);
    let atomics = walk::atomics(config, sem.as_ref());
    if !atomics.is_empty() {
        return Err(format!(
            "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            atomics.join(", ")
        ));
    }
    walk::merge(live, config, sem.as_ref()).map_err(|e| format!("failed to merge patch: {e}"))
}

/// Upstream's `ValidateFieldManager`: at most 128 bytes, printable characters only.
pub fn validate_field_manager(manager: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if manager.len() > MAX_FIELD_MANAGER_LENGTH {
        causes.push(Cause::new(
            "FieldValueTooLong",
            "fieldManager",
            format!("Too long: may not be more than {MAX_FIELD_MANAGER_LENGTH} bytes"),
        ));
    }
    if manager
        .chars()
        .any(|c| c.is_control() || (c.is_whitespace() && c != ' '))
    {
        causes.push(Cause::invalid(
            "fieldManager",
            &Value::String(manager.to_string()),
            "must only contain printable characters",
        ));
    }
    causes
}

/// The manager of a write without `fieldManager`: the User-Agent up to its first `/`, as
/// upstream (`kubectl/v1.33.0 (linux/amd64) ...` → `kubectl`), cut to 128 bytes.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or_default();
    let mut end = prefix.len().min(MAX_FIELD_MANAGER_LENGTH);
    while !prefix.is_char_boundary(end) {
        end -= 1;
    }
    prefix[..end].to_string()
}

/// Decodes an apply body (YAML or JSON) and checks its shape: an object, not nested deeper
/// than [`MAX_APPLY_DEPTH`], with the resource's `apiVersion` and `kind`.
pub fn decode_config(bytes: &[u8], info: &ResourceInfo) -> Result<Value, ApiError> {
    let value: Value = serde_yaml_ng::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let Value::Object(_) = &value else {
        return Err(ApiError::bad_request(format!(
            "error decoding YAML: the apply patch must be an object, not {}",
            crate::patch::go_json_kind(&value)
        )));
    };
    if walk::depth(&value) > MAX_APPLY_DEPTH {
        return Err(ApiError::bad_request(format!(
            "the apply patch is nested deeper than {MAX_APPLY_DEPTH} levels"
        )));
    }
    let expected = info.api_version();
    let version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if version != expected {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {expected}"
        )));
    }
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != info.kind {
        return Err(ApiError::bad_request(format!(
            "Incorrect kind specified in apply patch. Specified patch kind: {kind}, expected: {}",
            info.kind
        )));
    }
    if !value.get("metadata").is_none_or(Value::is_object) {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    if value
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    Ok(value)
}

/// Restricts an applied configuration to what the endpoint writes: the status subresource
/// takes only `status`; the main resource of a kind with a status subresource ignores it.
pub fn restrict_config(config: &mut Value, status_only: bool, drop_status: bool) {
    let Some(map) = config.as_object_mut() else {
        return;
    };
    if status_only {
        let keep = ["apiVersion", "kind", "status"];
        let meta: Option<Map<String, Value>> =
            map.get("metadata").and_then(Value::as_object).map(|m| {
                m.iter()
                    .filter(|(k, _)| matches!(k.as_str(), "name" | "namespace"))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            });
        map.retain(|k, _| keep.contains(&k.as_str()));
        if let Some(meta) = meta {
            map.insert("metadata".into(), Value::Object(meta));
        }
    } else if drop_status {
        map.remove("status");
    }
}

/// Server-side apply of `config` onto `live` (`None`: the object does not exist yet).
/// Returns the object to store, with `metadata.managedFields` updated; when nothing changes
/// the live object comes back as it was.
pub fn apply(
    info: &ResourceInfo,
    live: Option<&Value>,
    config: &Value,
    actor: Actor<'_>,
    force: bool,
) -> Result<Value, ApiError> {
    let sem = semantics(info);
    let sem = sem.as_ref();
    let empty = Value::Object(Map::new());
    let live_full = live.unwrap_or(&empty);
    let live_clean = managed::without_managed_fields(live_full);
    let config_clean = managed::without_managed_fields(config);
    let mut entries = managed::entries(live_full);
    if live.is_some() && entries.is_empty() {
        // Upstream's `before-first-apply`: an object nobody manages yet is attributed to that
        // Update manager first, so the apply cannot silently take over fields it did not set.
        let mut fields = walk::compare(&Value::Object(Map::new()), &live_clean, sem).added;
        managed::strip(&mut fields);
        entries.push(Entry {
            manager: BEFORE_FIRST_APPLY.to_string(),
            operation: Operation::Update,
            api_version: actor.api_version.to_string(),
            time: Some(crate::meta::now_rfc3339()),
            subresource: None,
            fields,
        });
    }

    let mut applied = walk::applied_set(&config_clean, sem).map_err(typed_error(info))?;
    managed::strip(&mut applied);
    let mut merged = walk::merge(&live_clean, &config_clean, sem).map_err(typed_error(info))?;

    let is_me = |e: &Entry| {
        e.same_manager(
            actor.manager,
            Operation::Apply,
            actor.api_version,
            actor.subresource,
        )
    };
    let previous = entries.iter().find(|e| is_me(e)).cloned();
    if let Some(last) = previous.as_ref().map(|e| &e.fields)
        && !last.is_empty()
    {
        let mut owned = applied.clone();
        for e in entries.iter().filter(|e| !is_me(e)) {
            owned = owned.union(&e.fields);
        }
        walk::prune(
            &mut merged,
            &last.with_ancestors(),
            &owned.with_ancestors(),
            sem,
        );
    }

    let cmp = walk::compare(&live_clean, &merged, sem);
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts = Vec::new();
    let mut taken: Vec<FieldSet> = Vec::with_capacity(entries.len());
    for e in &entries {
        if is_me(e) {
            taken.push(FieldSet::new());
            continue;
        }
        let clash = e.fields.intersection(&changed);
        conflicts.extend(clash.iter().map(|p| Conflict {
            manager: e.printed(),
            path: p.clone(),
        }));
        taken.push(clash);
    }
    if !force
        && !conflicts.is_empty()
        && !upgrades_client_side_apply(live_full, actor, &conflicts, sem)
    {
        conflicts.sort_by(|a, b| (&a.manager, &a.path).cmp(&(&b.manager, &b.path)));
        return Err(managed::conflict_error(&conflicts));
    }
    let object_changed = merged != live_clean;
    for (e, clash) in entries.iter_mut().zip(taken) {
        if is_me(e) {
            continue;
        }
        e.fields = e.fields.difference(&clash).difference(&cmp.removed);
    }
    let time = if object_changed || previous.is_none() {
        Some(crate::meta::now_rfc3339())
    } else {
        previous.as_ref().and_then(|p| p.time.clone())
    };
    entries.retain(|e| !is_me(e));
    entries.push(Entry {
        manager: actor.manager.to_string(),
        operation: Operation::Apply,
        api_version: actor.api_version.to_string(),
        time,
        subresource: actor.subresource.map(str::to_string),
        fields: applied,
    });
    if !object_changed
        && let Some(live) = live
        && !managed::entries(live).is_empty()
        && same_ownership(&managed::entries(live), &entries)
    {
        return Ok(live.clone());
    }
    if actor.manager == KUBECTL_MANAGER
        && live_full
            .pointer(LAST_APPLIED_POINTER)
            .is_some_and(Value::is_string)
    {
        sync_last_applied(&mut merged, config);
    }
    managed::write(&mut merged, entries);
    Ok(merged)
}

/// The manager of the fields of an object that had no `managedFields` before its first apply.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// The manager `kubectl apply --server-side` uses.
const KUBECTL_MANAGER: &str = "kubectl";
/// The annotation client-side `kubectl apply` keeps.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const LAST_APPLIED_POINTER: &str =
    "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration";

/// Upstream's `lastAppliedManager`: a `kubectl` server-side apply whose conflicts are all on
/// fields of the client-side apply annotation takes them over (upgrading an object managed by
/// client-side apply to server-side apply without conflicts).
fn upgrades_client_side_apply(
    live: &Value,
    actor: Actor<'_>,
    conflicts: &[Conflict],
    sem: &dyn Semantics,
) -> bool {
    if actor.manager != KUBECTL_MANAGER {
        return false;
    }
    let Some(text) = live.pointer(LAST_APPLIED_POINTER).and_then(Value::as_str) else {
        return false;
    };
    let Ok(last) = serde_json::from_str::<Value>(text) else {
        return false;
    };
    if walk::depth(&last) > MAX_APPLY_DEPTH {
        return false;
    }
    let Ok(set) = walk::applied_set(&managed::without_managed_fields(&last), sem) else {
        return false;
    };
    conflicts.iter().all(|c| set.contains(&c.path))
}

/// Upstream's `lastAppliedUpdater`: a `kubectl` server-side apply keeps an existing
/// client-side apply annotation in step with the applied configuration.
fn sync_last_applied(obj: &mut Value, config: &Value) {
    let mut last = config.clone();
    // The annotation itself is dropped; an emptied `annotations` map stays (`{}`), as upstream's
    // `SetAnnotations` leaves it.
    if let Some(a) = last
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        a.remove(LAST_APPLIED);
    }
    let Ok(text) = serde_json::to_string(&last) else {
        return;
    };
    if let Some(annotations) = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.insert(LAST_APPLIED.into(), Value::String(text + "\n"));
    }
}

/// Upstream's cap on `Update` entries: past [`MAX_UPDATE_MANAGERS`], the oldest are merged,
/// per API version, into an `ancient-changes` entry.
fn cap_update_managers(entries: &mut Vec<Entry>) {
    let updaters = entries
        .iter()
        .filter(|e| e.operation == Operation::Update)
        .count();
    if updaters <= MAX_UPDATE_MANAGERS {
        return;
    }
    entries.sort_by(|a, b| a.time.cmp(&b.time));
    let mut excess = updaters - MAX_UPDATE_MANAGERS;
    let is_bucket = |e: &Entry, version: &str| {
        e.manager == ANCIENT_CHANGES && e.operation == Operation::Update && e.api_version == version
    };
    let mut first_of_version: std::collections::BTreeMap<String, (String, Option<String>)> =
        Default::default();
    let mut i = 0;
    while i < entries.len() && excess > 0 {
        let e = &entries[i];
        if e.operation != Operation::Update || e.manager == ANCIENT_CHANGES {
            i += 1;
            continue;
        }
        let version = e.api_version.clone();
        if !entries.iter().any(|b| is_bucket(b, &version)) {
            match first_of_version.get(&version) {
                None => {
                    first_of_version.insert(version, (e.manager.clone(), e.subresource.clone()));
                    i += 1;
                    continue;
                }
                Some((manager, sub)) => {
                    // The first entry of the version becomes the bucket.
                    if let Some(first) = entries.iter_mut().find(|f| {
                        f.operation == Operation::Update
                            && f.api_version == version
                            && &f.manager == manager
                            && &f.subresource == sub
                    }) {
                        first.manager = ANCIENT_CHANGES.to_string();
                        first.subresource = None;
                    }
                }
            }
        }
        let merged = entries.remove(i);
        if let Some(bucket) = entries.iter_mut().find(|b| is_bucket(b, &version)) {
            bucket.fields = bucket.fields.union(&merged.fields);
            bucket.time = merged.time;
        }
        excess -= 1;
    }
}

/// Most `Update` entries kept (upstream's `DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;
const ANCIENT_CHANGES: &str = "ancient-changes";

/// Whether two lists of entries give every manager the same fields (times aside).
fn same_ownership(a: &[Entry], b: &[Entry]) -> bool {
    let key = |e: &Entry| {
        (
            e.manager.clone(),
            e.operation,
            e.api_version.clone(),
            e.subresource.clone(),
            e.fields.to_fields_v1().to_string(),
        )
    };
    let mut ka: Vec<_> = a.iter().filter(|e| !e.fields.is_empty()).map(key).collect();
    let mut kb: Vec<_> = b.iter().filter(|e| !e.fields.is_empty()).map(key).collect();
    ka.sort();
    kb.sort();
    ka == kb
}

/// Upstream's error when an object cannot be typed (a list item without its key, duplicate
/// keys). Upstream answers a non-`Status` 500; it is the client's mistake, so a `400
/// BadRequest` with upstream's text.
fn typed_error(info: &ResourceInfo) -> impl Fn(String) -> ApiError + '_ {
    move |e| {
        ApiError::bad_request(format!(
            "failed to create typed patch object ({}, Kind={}): {e}",
            if info.group.is_empty() {
                format!("/{}", info.version)
            } else {
                format!("{}/{}", info.group, info.version)
            },
            info.kind
        ))
    }
}

/// What a create or update request said about `managedFields` (read before validation).
#[derive(Debug, Clone, Default)]
pub struct RequestedManagedFields(Option<Vec<Entry>>);

/// Takes the `managedFields` a request sent out of it, replacing them with the stored ones
/// (so malformed entries the server ignores do not fail validation, as upstream, where the
/// field manager runs before validation). Entries that decode replace the stored ones; `[{}]`
/// resets them; an empty list or undecodable entries keep the stored ones.
pub fn take_requested_managed_fields(
    requested: &mut Value,
    live: Option<&Value>,
) -> RequestedManagedFields {
    let taken = match managed::read(requested) {
        Stored::Entries(e) => Some(e),
        Stored::Reset => Some(Vec::new()),
        Stored::Absent | Stored::Invalid(_) => None,
    };
    let stored = live
        .and_then(|l| l.get("metadata"))
        .and_then(|m| m.get("managedFields"))
        .cloned();
    if let Some(md) = requested.get_mut("metadata").and_then(Value::as_object_mut) {
        match stored {
            Some(v) => {
                md.insert("managedFields".into(), v);
            }
            None => {
                md.remove("managedFields");
            }
        }
    }
    RequestedManagedFields(taken)
}

/// Records an `Update` operation by `actor` that turns `live` (`None` for a create) into
/// `next`: the manager gains the fields it added or changed, other managers lose them, and
/// fields that disappeared leave every set. `managedFields` sent in the request are honoured
/// (an empty list keeps the stored ones; `[{}]` resets them), as upstream.
pub fn record_update(
    info: &ResourceInfo,
    live: Option<&Value>,
    next: &mut Value,
    actor: Actor<'_>,
    requested: RequestedManagedFields,
) {
    let sem = semantics(info);
    let sem = sem.as_ref();
    let live_entries = || live.map(managed::entries).unwrap_or_default();
    let mut entries = match requested.0 {
        Some(e) if actor.subresource.is_none() => e,
        _ => live_entries(),
    };
    let empty = Value::Object(Map::new());
    let old = managed::without_managed_fields(live.unwrap_or(&empty));
    // `next` is compared as it is, without a copy: its managedFields, replaced below by
    // `managed::write` in any case, are taken out first.
    if let Some(md) = next.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("managedFields");
    }
    let cmp = walk::compare(&old, next, sem);
    let mut gained = cmp.modified.union(&cmp.added);
    managed::strip(&mut gained);
    if info.status_subresource && actor.subresource.is_none() {
        // Upstream's reset fields: the main resource of a kind with a status subresource
        // never owns status (defaults the server writes there belong to no manager).
        gained.remove_prefixed(&[PathElement::Field("status".to_string())]);
    }
    let is_me = |e: &Entry| {
        e.same_manager(
            actor.manager,
            Operation::Update,
            actor.api_version,
            actor.subresource,
        )
    };
    for e in entries.iter_mut().filter(|e| !is_me(e)) {
        e.fields = e.fields.difference(&gained).difference(&cmp.removed);
    }
    if !gained.is_empty() {
        let previous = entries
            .iter()
            .find(|e| is_me(e))
            .map(|e| e.fields.clone())
            .unwrap_or_default();
        entries.retain(|e| !is_me(e));
        entries.push(Entry {
            manager: actor.manager.to_string(),
            operation: Operation::Update,
            api_version: actor.api_version.to_string(),
            time: Some(crate::meta::now_rfc3339()),
            subresource: actor.subresource.map(str::to_string),
            fields: previous.union(&gained).difference(&cmp.removed),
        });
    } else {
        for e in entries.iter_mut().filter(|e| is_me(e)) {
            e.fields = e.fields.difference(&cmp.removed);
        }
    }
    cap_update_managers(&mut entries);
    managed::write(next, entries);
}

#[cfg(test)]
mod tests;
