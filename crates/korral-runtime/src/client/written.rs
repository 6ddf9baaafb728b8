//! Read-your-writes: the objects the client wrote, kept until the cache has caught up.
//!
//! After a write the client remembers the object the API server returned (with its
//! `resourceVersion`). A cached read of that object compares versions: when the cached copy is
//! at least as new, the cache has caught up and the entry is dropped; when it is older (or the
//! object is not in the cache yet), the read answers with the written object instead, so the
//! reconcile never acts on a copy older than its own write. After a delete the object is read
//! from the API server until it has left the cache. Entries also expire after [`TTL`], at most
//! [`MAX_ENTRIES`] are kept (the oldest go first), and every so many writes the entries the cache
//! has caught up with are dropped without waiting for a read, so memory stays bounded by the
//! writes the cache has not seen yet. Writes of types without an informer are not remembered
//! (their reads go to the server). The remembered copy has no `managedFields`, as cached
//! objects by default.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::Resource;

use crate::cache::{Cache, type_key};
use crate::reconcile::ObjectRef;

/// How long a written object is remembered at most (a watch is normally milliseconds behind).
pub const TTL: Duration = Duration::from_secs(30);
/// How many written objects are remembered at most.
pub const MAX_ENTRIES: usize = 4096;

/// An object of one kind (`group/kind`, whatever the version and whether metadata only).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TrackKey {
    kind: String,
    object: ObjectRef,
}

impl TrackKey {
    pub(crate) fn new<K: Resource>(dt: &K::DynamicType, object: ObjectRef) -> Self {
        Self {
            kind: kind_of::<K>(dt),
            object,
        }
    }
}

pub(crate) fn kind_of<K: Resource>(dt: &K::DynamicType) -> String {
    format!("{}/{}", K::group(dt), K::kind(dt))
}

/// Whether the cache has caught up with an entry.
type CaughtUp = Box<dyn Fn(&Cache) -> bool + Send + Sync>;

struct Entry {
    /// `None` after a delete.
    resource_version: Option<String>,
    object: Option<Arc<dyn Any + Send + Sync>>,
    at: Instant,
    caught_up: CaughtUp,
}

/// The fewest writes between two sweeps.
const SWEEP_EVERY: usize = 64;

/// What a cached read should answer.
pub(crate) enum Verdict<K> {
    /// The cache is current for this object.
    Cache,
    /// The cache is behind the client's own write: answer with the written object.
    Written(Arc<K>),
    /// Ask the API server.
    Server,
}

/// Whether the version `cached` is at least `written` (numeric when both are numbers, as the
/// API server's are; otherwise only equal versions count).
fn caught_up(cached: &str, written: &str) -> bool {
    if cached == written {
        return true;
    }
    match (cached.parse::<u64>(), written.parse::<u64>()) {
        (Ok(c), Ok(w)) => c >= w,
        _ => false,
    }
}

#[derive(Default)]
struct State {
    entries: HashMap<TrackKey, Entry>,
    since_sweep: usize,
}

/// The objects written through one client (shared by its clones).
#[derive(Default)]
pub(crate) struct Written {
    state: Mutex<State>,
}

impl Written {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn insert(&self, key: TrackKey, entry: Entry, cache: Option<&Cache>) {
        let mut state = self.lock();
        state.since_sweep += 1;
        if let Some(cache) = cache
            && state.since_sweep >= SWEEP_EVERY.max(state.entries.len() / 2)
        {
            state.since_sweep = 0;
            state
                .entries
                .retain(|_, e| e.at.elapsed() < TTL && !(e.caught_up)(cache));
        }
        let entries = &mut state.entries;
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, e| e.at.elapsed() < TTL);
        }
        if entries.len() >= MAX_ENTRIES
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, e)| e.at)
                .map(|(k, _)| k.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(key, entry);
    }

    /// Remembers `obj`, just written; `cache` is where reads of it come from.
    pub(crate) fn record<K: Resource + Clone + Send + Sync + 'static>(
        &self,
        dt: &K::DynamicType,
        obj: &K,
        cache: Option<&Cache>,
    ) {
        let Some(object) = ObjectRef::from_object(obj) else {
            return;
        };
        // Reads of a type without an informer go to the server; an informer started later
        // lists after this write.
        if cache.is_some_and(|c| !c.has_type(&type_key::<K>(dt))) {
            return;
        }
        let mut copy = obj.clone();
        copy.meta_mut().managed_fields = None;
        let resource_version = obj.meta().resource_version.clone();
        let caught_up: CaughtUp = match resource_version.clone() {
            Some(written) => {
                let (key, object) = (type_key::<K>(dt), object.clone());
                Box::new(move |cache: &Cache| {
                    cache
                        .find::<K>(&key, object.namespace.as_deref())
                        .and_then(|f| f.informer.get(&object))
                        .and_then(|c| c.meta().resource_version.clone())
                        .is_some_and(|cached| caught_up(&cached, &written))
                })
            }
            None => Box::new(|_: &Cache| false),
        };
        self.insert(
            TrackKey::new::<K>(dt, object),
            Entry {
                resource_version,
                object: Some(Arc::new(copy)),
                at: Instant::now(),
                caught_up,
            },
            cache,
        );
    }

    /// Remembers that the object `object` of `K` was deleted.
    pub(crate) fn record_deleted<K: Resource + Clone + Send + Sync + 'static>(
        &self,
        dt: &K::DynamicType,
        object: ObjectRef,
        cache: Option<&Cache>,
    ) {
        let (key, gone) = (type_key::<K>(dt), object.clone());
        if cache.is_some_and(|c| !c.has_type(&key)) {
            return;
        }
        let caught_up: CaughtUp = Box::new(move |cache: &Cache| {
            cache
                .find::<K>(&key, gone.namespace.as_deref())
                .is_some_and(|f| f.informer.get(&gone).is_none())
        });
        self.insert(
            TrackKey::new::<K>(dt, object),
            Entry {
                resource_version: None,
                object: None,
                at: Instant::now(),
                caught_up,
            },
            cache,
        );
    }

    /// What a read of `key` should answer, given the cached copy `cached`.
    pub(crate) fn check<K: Resource + Send + Sync + 'static>(
        &self,
        key: &TrackKey,
        cached: Option<&K>,
    ) -> Verdict<K> {
        let mut state = self.lock();
        let entries = &mut state.entries;
        let Some(entry) = entries.get(key) else {
            return Verdict::Cache;
        };
        if entry.at.elapsed() >= TTL {
            entries.remove(key);
            return Verdict::Cache;
        }
        let cached_rv = cached.and_then(|c| c.meta().resource_version.as_deref());
        match (&entry.resource_version, cached_rv) {
            // Deleted: current once the cache has dropped it too.
            (None, None) => {
                entries.remove(key);
                Verdict::Cache
            }
            (None, Some(_)) => Verdict::Server,
            (Some(written), Some(cached)) if caught_up(cached, written) => {
                entries.remove(key);
                Verdict::Cache
            }
            (Some(_), _) => match entry
                .object
                .as_ref()
                .and_then(|o| Arc::clone(o).downcast::<K>().ok())
            {
                Some(obj) => Verdict::Written(obj),
                // Written as another Rust type (a full object read as metadata only, say).
                None => Verdict::Server,
            },
        }
    }

    /// The objects of `kind` (see [`kind_of`]) in `namespace` (`None`: all) with an entry.
    pub(crate) fn keys_of(&self, kind: &str, namespace: Option<&str>) -> Vec<TrackKey> {
        self.lock()
            .entries
            .keys()
            .filter(|k| k.kind == kind)
            .filter(|k| namespace.is_none_or(|ns| k.object.namespace.as_deref() == Some(ns)))
            .cloned()
            .collect()
    }

    /// The object of `key`.
    pub(crate) fn object_ref(key: &TrackKey) -> &ObjectRef {
        &key.object
    }

    /// How many objects are remembered.
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn a_written_object_wins_until_the_cache_catches_up() {
        let written = Written::default();
        let key = TrackKey::new::<ConfigMap>(&(), ObjectRef::namespaced("ns", "a"));
        assert!(matches!(
            written.check::<ConfigMap>(&key, None),
            Verdict::Cache
        ));
        written.record(&(), &cm("10"), None);
        // Not cached yet, or cached older: the written object.
        assert!(
            matches!(written.check::<ConfigMap>(&key, None), Verdict::Written(o) if o.metadata.resource_version.as_deref() == Some("10"))
        );
        assert!(matches!(
            written.check(&key, Some(&cm("9"))),
            Verdict::Written(_)
        ));
        assert_eq!(written.len(), 1);
        // Caught up: the entry goes.
        assert!(matches!(
            written.check(&key, Some(&cm("11"))),
            Verdict::Cache
        ));
        assert_eq!(written.len(), 0);
    }

    #[test]
    fn a_deleted_object_is_read_from_the_server_until_it_leaves_the_cache() {
        let written = Written::default();
        let key = TrackKey::new::<ConfigMap>(&(), ObjectRef::namespaced("ns", "a"));
        written.record_deleted::<ConfigMap>(&(), ObjectRef::namespaced("ns", "a"), None);
        assert!(matches!(
            written.check(&key, Some(&cm("3"))),
            Verdict::Server
        ));
        assert!(matches!(
            written.check::<ConfigMap>(&key, None),
            Verdict::Cache
        ));
        assert_eq!(written.len(), 0);
    }

    #[test]
    fn the_number_of_entries_is_bounded() {
        let written = Written::default();
        for i in 0..MAX_ENTRIES + 10 {
            let mut obj = cm("1");
            obj.metadata.name = Some(format!("cm-{i}"));
            written.record(&(), &obj, None);
        }
        assert_eq!(written.len(), MAX_ENTRIES);
    }

    #[test]
    fn versions_compare_as_numbers() {
        assert!(caught_up("10", "9"));
        assert!(!caught_up("9", "10"));
        assert!(caught_up("x", "x"));
        assert!(!caught_up("y", "x"));
    }
}
