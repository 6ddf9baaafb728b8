//! The controllers' incremental view of storage: which uid lives at which key, who owns whom,
//! how many objects each namespace and collection holds, and what is being torn down.
//!
//! Every storage event updates the index in O(number of owner references) and queues the
//! [`Work`] the event makes necessary; objects without owner references that are not being
//! deleted cost a few hash-map operations.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::crd;
use crate::meta;
use crate::objects::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use crate::storage::{Event, EventType, Snapshot, collection_prefix};

/// Something a controller has to look at; every item re-reads the current state, so running
/// one twice or late is harmless.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Work {
    /// Re-evaluate the owner references of the object at this key: delete it when every owner
    /// is gone, drop references to missing owners while another owner lives.
    Dependent(String),
    /// The object at this key is being deleted with the `foregroundDeletion` or `orphan`
    /// finalizer: handle its dependents, then remove the finalizer.
    Owner(String),
    /// The namespace with this name is terminating: delete its contents, then the namespace.
    Namespace(String),
    /// The CRD at this key is being deleted: delete its custom resources, then release it.
    Crd(String),
    /// The CRD at this key was deleted from storage: stop serving its kinds if it is still gone.
    CrdGone(String),
    /// A CRD of this group was written or deleted: accept the names of the group's other CRDs
    /// that were waiting for them (upstream's naming controller).
    CrdNames(String),
    /// Something changed in the namespace with this name, which has ResourceQuotas: recount
    /// their `status.used`.
    Quota(String),
    /// Something changed in the namespace with this name, which has PodDisruptionBudgets:
    /// recompute their status.
    Disruption(String),
    /// A ClusterRole changed: bring the aggregated ClusterRoles up to date.
    RoleAggregation,
    /// An APIService, a CRD, a Service or an EndpointSlice changed: bring the APIServices up to
    /// date (local ones registered, availability conditions); `true` on start, when the
    /// built-in group versions' APIServices are synced too.
    ApiServices(bool),
    /// The Service at this key changed its cluster IPs (the addresses it gave up listed), or
    /// one of its IPAddresses went: bring its IPAddresses up to date.
    ServiceIps(String, Vec<String>),
    /// The IPAddresses of every Service checked, stale ones released (on start).
    ServiceIpRepair,
    /// A ValidatingAdmissionPolicy changed (or the controllers started): type-check those
    /// whose generation was not observed yet.
    PolicyTypeChecking,
    /// Simulated workload controllers, scheduler and kubelet (see [`crate::simulate`]).
    Workload(crate::simulate::Work),
}

/// The parts of a storage key (`/<group or core>/<resource>/[<namespace>/]<name>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct KeyParts<'a> {
    /// API group, `""` for core.
    pub(super) group: &'a str,
    /// Plural resource name.
    pub(super) resource: &'a str,
    /// Namespace of a namespaced object.
    pub(super) namespace: Option<&'a str>,
    /// Object name.
    pub(super) name: &'a str,
    /// The collection prefix across namespaces, `/<group or core>/<resource>/`.
    pub(super) prefix: &'a str,
}

impl<'a> KeyParts<'a> {
    /// Splits a storage key; `None` for anything that is not an object key.
    pub(super) fn parse(key: &'a str) -> Option<Self> {
        let rest = key.strip_prefix('/')?;
        let mut segments = rest.split('/');
        let group = segments.next()?;
        let resource = segments.next()?;
        let third = segments.next()?;
        let fourth = segments.next();
        if segments.next().is_some() || group.is_empty() || resource.is_empty() || third.is_empty()
        {
            return None;
        }
        let prefix = key.get(..group.len() + resource.len() + 3)?;
        let (namespace, name) = match fourth {
            Some("") => return None,
            Some(name) => (Some(third), name),
            None => (None, third),
        };
        Some(Self {
            group: if group == "core" { "" } else { group },
            resource,
            namespace,
            name,
            prefix,
        })
    }

    /// Whether this is a core `Namespace`.
    pub(super) fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.resource == "namespaces" && self.namespace.is_none()
    }

    /// Whether this is a `CustomResourceDefinition`.
    pub(super) fn is_crd(&self) -> bool {
        self.group == "apiextensions.k8s.io" && self.resource == "customresourcedefinitions"
    }
}

/// The uids an object's `ownerReferences` point at (no allocation when there are none).
pub(super) fn owner_uids(obj: &Value) -> Vec<&str> {
    meta::owner_references(obj)
        .iter()
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
        .filter(|u| !u.is_empty())
        .collect()
}

/// Whether `metadata.finalizers` contains `finalizer`.
pub(super) fn has_finalizer(obj: &Value, finalizer: &str) -> bool {
    meta::metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|f| f.as_str() == Some(finalizer)))
}

/// The storage prefixes (across namespaces) of a CRD's custom resources.
pub(super) fn crd_prefixes(obj: &Value) -> Vec<String> {
    let group = meta::path(obj, "spec.group")
        .and_then(Value::as_str)
        .unwrap_or("");
    if group.is_empty() {
        return Vec::new();
    }
    let mut prefixes: Vec<String> = Vec::new();
    for path in ["spec.names.plural", "status.acceptedNames.plural"] {
        let plural = meta::path(obj, path).and_then(Value::as_str).unwrap_or("");
        if plural.is_empty() || plural.contains('/') {
            continue;
        }
        let prefix = collection_prefix(group, plural, None);
        if !prefixes.contains(&prefix) {
            prefixes.push(prefix);
        }
    }
    prefixes
}

/// The incremental index.
#[derive(Debug, Default)]
pub(super) struct Index {
    /// uid → storage key of every stored object.
    uids: HashMap<String, String>,
    /// owner uid → keys of the objects whose `ownerReferences` name it.
    dependents: HashMap<String, HashSet<String>>,
    /// namespace → number of namespaced objects stored in it.
    namespace_counts: HashMap<String, usize>,
    /// collection prefix (`/<group>/<resource>/`) → number of objects stored under it.
    prefix_counts: HashMap<String, usize>,
    /// Keys of objects being deleted that carry `foregroundDeletion` or `orphan`.
    gc_pending: HashSet<String>,
    /// Names of terminating namespaces.
    terminating_namespaces: HashSet<String>,
    /// Collection prefix of a deleting CRD's custom resources → the CRD's key.
    terminating_crds: HashMap<String, String>,
}

impl Index {
    /// Builds the index of a snapshot and queues the work it calls for.
    pub(super) fn rebuild(snapshot: &Snapshot, queue: &mut HashSet<Work>) -> Self {
        let mut index = Self::default();
        for (key, obj) in snapshot.objects.iter() {
            if let Some(parts) = KeyParts::parse(key) {
                index.put(key, &parts, obj, None, true, false, queue);
            }
        }
        // Only now is every uid known: collect dependents whose owners are missing.
        for (owner, dependents) in &index.dependents {
            if !index.uids.contains_key(owner) {
                queue.extend(dependents.iter().cloned().map(Work::Dependent));
            }
        }
        index
    }

    /// Applies one committed event and queues the work it calls for.
    pub(super) fn apply(&mut self, event: &Event, queue: &mut HashSet<Work>) {
        let Some(parts) = KeyParts::parse(&event.key) else {
            return;
        };
        match event.kind {
            EventType::Added | EventType::Modified => {
                let added = event.kind == EventType::Added;
                let previous = if added {
                    None
                } else {
                    event.previous.as_deref()
                };
                self.put(
                    &event.key,
                    &parts,
                    &event.object,
                    previous,
                    added,
                    true,
                    queue,
                );
            }
            EventType::Deleted => self.remove(&event.key, &parts, &event.object, queue),
        }
    }

    /// The key of the object with `uid`, if one is stored.
    pub(super) fn key_of(&self, uid: &str) -> Option<&String> {
        self.uids.get(uid)
    }

    /// The keys of the objects that name `uid` as an owner.
    pub(super) fn dependents_of(&self, uid: &str) -> Vec<String> {
        self.dependents
            .get(uid)
            .map(|d| d.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Whether any object is stored under the collection prefix (`/core/resourcequotas/`).
    pub(super) fn holds_any(&self, prefix: &str) -> bool {
        self.prefix_counts.contains_key(prefix)
    }

    /// Every collection prefix with stored objects.
    pub(super) fn prefixes(&self) -> impl Iterator<Item = &String> {
        self.prefix_counts.keys()
    }

    /// Work for everything currently being torn down (a periodic safety net).
    pub(super) fn resync(&self, queue: &mut HashSet<Work>) {
        queue.extend(self.gc_pending.iter().cloned().map(Work::Owner));
        queue.extend(
            self.terminating_namespaces
                .iter()
                .cloned()
                .map(Work::Namespace),
        );
        queue.extend(self.terminating_crds.values().cloned().map(Work::Crd));
    }

    /// The key of a stored owner that waits for the garbage collector, by uid.
    fn pending_owner(&self, uid: &str) -> Option<String> {
        self.uids
            .get(uid)
            .filter(|key| self.gc_pending.contains(*key))
            .cloned()
    }

    fn forget_uid(&mut self, uid: &str, key: &str) {
        if self.uids.get(uid).is_some_and(|k| k == key) {
            self.uids.remove(uid);
        }
    }

    fn unlink(&mut self, owner: &str, key: &str) {
        if let Some(set) = self.dependents.get_mut(owner) {
            set.remove(key);
            if set.is_empty() {
                self.dependents.remove(owner);
            }
        }
    }

    fn increment(counts: &mut HashMap<String, usize>, key: &str) {
        match counts.get_mut(key) {
            Some(count) => *count += 1,
            None => {
                counts.insert(key.to_string(), 1);
            }
        }
    }

    /// Decrements a count; `true` when it reached zero.
    fn decrement(counts: &mut HashMap<String, usize>, key: &str) -> bool {
        let Some(count) = counts.get_mut(key) else {
            return false;
        };
        *count = count.saturating_sub(1);
        if *count == 0 {
            counts.remove(key);
            true
        } else {
            false
        }
    }

    /// Records an added or modified object.
    #[allow(clippy::too_many_arguments)]
    fn put(
        &mut self,
        key: &str,
        parts: &KeyParts<'_>,
        obj: &Value,
        previous: Option<&Value>,
        added: bool,
        check_owners: bool,
        queue: &mut HashSet<Work>,
    ) {
        let uid = meta::uid(obj);
        let previous_uid = previous.map(meta::uid);
        if previous_uid != Some(uid) {
            if let Some(old) = previous_uid {
                self.forget_uid(old, key);
            }
            if !uid.is_empty() {
                self.uids.insert(uid.to_string(), key.to_string());
            }
        }
        if added {
            if let Some(ns) = parts.namespace {
                Self::increment(&mut self.namespace_counts, ns);
            }
            Self::increment(&mut self.prefix_counts, parts.prefix);
        }

        let owners = owner_uids(obj);
        let old_owners = previous.map(owner_uids).unwrap_or_default();
        if owners != old_owners {
            for owner in old_owners.iter().filter(|u| !owners.contains(u)) {
                self.unlink(owner, key);
                // An owner waiting for its dependents may be free now.
                if let Some(owner_key) = self.pending_owner(owner) {
                    queue.insert(Work::Owner(owner_key));
                }
            }
            for owner in owners.iter().filter(|u| !old_owners.contains(u)) {
                self.dependents
                    .entry((*owner).to_string())
                    .or_default()
                    .insert(key.to_string());
                if let Some(owner_key) = self.pending_owner(owner) {
                    queue.insert(Work::Owner(owner_key));
                }
            }
            if check_owners && owners.iter().any(|u| !self.uids.contains_key(*u)) {
                queue.insert(Work::Dependent(key.to_string()));
            }
        }

        if meta::is_deleting(obj) {
            self.deleting(key, parts, obj, queue);
        }
        if added {
            if let Some(ns) = parts.namespace
                && self.terminating_namespaces.contains(ns)
            {
                queue.insert(Work::Namespace(ns.to_string()));
            }
            if let Some(crd_key) = self.terminating_crds.get(parts.prefix) {
                queue.insert(Work::Crd(crd_key.clone()));
            }
        }
    }

    /// Records an object with a `deletionTimestamp`.
    fn deleting(
        &mut self,
        key: &str,
        parts: &KeyParts<'_>,
        obj: &Value,
        queue: &mut HashSet<Work>,
    ) {
        if has_finalizer(obj, FOREGROUND_FINALIZER) || has_finalizer(obj, ORPHAN_FINALIZER) {
            self.gc_pending.insert(key.to_string());
            queue.insert(Work::Owner(key.to_string()));
        } else {
            self.gc_pending.remove(key);
        }
        if parts.is_namespace() {
            self.terminating_namespaces.insert(parts.name.to_string());
            queue.insert(Work::Namespace(parts.name.to_string()));
        }
        if parts.is_crd() {
            if has_finalizer(obj, crd::CLEANUP_FINALIZER) {
                for prefix in crd_prefixes(obj) {
                    self.terminating_crds.insert(prefix, key.to_string());
                }
                queue.insert(Work::Crd(key.to_string()));
            } else {
                self.terminating_crds.retain(|_, k| k != key);
            }
        }
    }

    /// Records a deleted object (`obj` is its last state).
    fn remove(&mut self, key: &str, parts: &KeyParts<'_>, obj: &Value, queue: &mut HashSet<Work>) {
        let uid = meta::uid(obj);
        self.forget_uid(uid, key);
        let namespace_empty = parts
            .namespace
            .is_some_and(|ns| Self::decrement(&mut self.namespace_counts, ns));
        let collection_empty = Self::decrement(&mut self.prefix_counts, parts.prefix);

        for owner in owner_uids(obj) {
            self.unlink(owner, key);
            if let Some(owner_key) = self.pending_owner(owner) {
                queue.insert(Work::Owner(owner_key));
            }
        }
        if !uid.is_empty()
            && let Some(dependents) = self.dependents.remove(uid)
        {
            queue.extend(dependents.into_iter().map(Work::Dependent));
        }
        self.gc_pending.remove(key);
        if parts.is_namespace() {
            self.terminating_namespaces.remove(parts.name);
        }
        if parts.is_crd() {
            self.terminating_crds.retain(|_, k| k != key);
            queue.insert(Work::CrdGone(key.to_string()));
        }
        if let Some(ns) = parts.namespace
            && namespace_empty
            && self.terminating_namespaces.contains(ns)
        {
            queue.insert(Work::Namespace(ns.to_string()));
        }
        if collection_empty && let Some(crd_key) = self.terminating_crds.get(parts.prefix) {
            queue.insert(Work::Crd(crd_key.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    #[test]
    fn keys_split_into_parts() {
        let parts = KeyParts::parse("/core/configmaps/ns/a").expect("namespaced key");
        assert_eq!(parts.group, "");
        assert_eq!(parts.resource, "configmaps");
        assert_eq!(parts.namespace, Some("ns"));
        assert_eq!(parts.name, "a");
        assert_eq!(parts.prefix, "/core/configmaps/");
        let parts = KeyParts::parse("/core/namespaces/ns").expect("cluster key");
        assert!(parts.is_namespace());
        assert_eq!(parts.namespace, None);
        let parts =
            KeyParts::parse("/apiextensions.k8s.io/customresourcedefinitions/w.example.org")
                .expect("crd key");
        assert!(parts.is_crd());
        assert_eq!(
            parts.prefix,
            "/apiextensions.k8s.io/customresourcedefinitions/"
        );
        for bad in [
            "",
            "/",
            "core/configmaps/a",
            "/core/configmaps/",
            "/core/configmaps/ns/",
            "/a/b/c/d/e",
        ] {
            assert_eq!(KeyParts::parse(bad), None, "{bad:?}");
        }
    }

    fn event(
        revision: u64,
        kind: EventType,
        key: &str,
        obj: Value,
        previous: Option<Value>,
    ) -> Event {
        Event {
            revision,
            kind,
            key: key.to_string(),
            object: Arc::new(obj),
            previous: previous.map(Arc::new),
        }
    }

    #[test]
    fn owner_deletion_queues_its_dependents_only() {
        let mut index = Index::default();
        let mut queue = HashSet::new();
        let owner = json!({"metadata": {"name": "o", "uid": "u-o"}});
        let dep = json!({"metadata": {"name": "d", "uid": "u-d",
            "ownerReferences": [{"uid": "u-o", "name": "o", "kind": "ConfigMap", "apiVersion": "v1"}]}});
        let plain = json!({"metadata": {"name": "p", "uid": "u-p"}});
        index.apply(
            &event(
                2,
                EventType::Added,
                "/core/configmaps/ns/o",
                owner.clone(),
                None,
            ),
            &mut queue,
        );
        index.apply(
            &event(3, EventType::Added, "/core/configmaps/ns/d", dep, None),
            &mut queue,
        );
        index.apply(
            &event(
                4,
                EventType::Added,
                "/core/configmaps/ns/p",
                plain.clone(),
                None,
            ),
            &mut queue,
        );
        index.apply(
            &event(
                5,
                EventType::Modified,
                "/core/configmaps/ns/p",
                plain.clone(),
                Some(plain),
            ),
            &mut queue,
        );
        assert!(queue.is_empty(), "{queue:?}");
        assert_eq!(
            index.dependents_of("u-o"),
            vec!["/core/configmaps/ns/d".to_string()]
        );
        assert_eq!(index.namespace_counts.get("ns"), Some(&3));
        index.apply(
            &event(
                6,
                EventType::Deleted,
                "/core/configmaps/ns/o",
                owner.clone(),
                Some(owner),
            ),
            &mut queue,
        );
        assert_eq!(
            queue.into_iter().collect::<Vec<_>>(),
            vec![Work::Dependent("/core/configmaps/ns/d".into())]
        );
        assert_eq!(index.key_of("u-o"), None);
        assert_eq!(index.namespace_counts.get("ns"), Some(&2));
    }

    #[test]
    fn dependent_of_a_missing_owner_is_queued() {
        let mut index = Index::default();
        let mut queue = HashSet::new();
        let dep =
            json!({"metadata": {"name": "d", "uid": "u-d", "ownerReferences": [{"uid": "gone"}]}});
        index.apply(
            &event(2, EventType::Added, "/core/configmaps/ns/d", dep, None),
            &mut queue,
        );
        assert!(queue.contains(&Work::Dependent("/core/configmaps/ns/d".into())));
    }
}
