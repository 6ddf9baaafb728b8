//! One shared informer: a store fed by one or more list+watch streams, an owner index, a sync
//! flag and an event broadcast.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use futures::StreamExt;
use kube::Resource;
use kube::api::Api;
use kube::core::{Selector, SelectorExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use tokio::sync::{broadcast, watch};
use tracing::{debug, info, warn};

use super::{CacheEvent, EventKind, Transform};
use crate::reconcile::ObjectRef;

/// Capacity of the event broadcast of each informer: a subscriber lagging further behind loses
/// the oldest events (and is told so by [`broadcast::error::RecvError::Lagged`]).
pub const EVENT_CAPACITY: usize = 1024;

/// The objects of an informer and its ownerReferences index.
struct State<K> {
    objects: HashMap<ObjectRef, Arc<K>>,
    /// Owner uid → keys of the objects that list it in their ownerReferences.
    owners: HashMap<String, BTreeSet<ObjectRef>>,
}

impl<K: Resource> State<K> {
    fn owner_uids(obj: &K) -> impl Iterator<Item = &str> {
        obj.meta()
            .owner_references
            .iter()
            .flatten()
            .map(|o| o.uid.as_str())
    }

    fn unindex(&mut self, key: &ObjectRef, obj: &K) {
        for uid in Self::owner_uids(obj) {
            if let Some(keys) = self.owners.get_mut(uid) {
                keys.remove(key);
                if keys.is_empty() {
                    self.owners.remove(uid);
                }
            }
        }
    }

    fn index(&mut self, key: &ObjectRef, obj: &K) {
        let uids: Vec<String> = Self::owner_uids(obj).map(str::to_owned).collect();
        for uid in uids {
            self.owners.entry(uid).or_default().insert(key.clone());
        }
    }

    /// Stores `obj`, returning the object it replaced.
    fn insert(&mut self, key: ObjectRef, obj: Arc<K>) -> Option<Arc<K>> {
        let previous = self.objects.insert(key.clone(), Arc::clone(&obj));
        if let Some(prev) = &previous {
            self.unindex(&key, prev);
        }
        self.index(&key, &obj);
        previous
    }

    fn remove(&mut self, key: &ObjectRef) -> Option<Arc<K>> {
        let previous = self.objects.remove(key)?;
        self.unindex(key, &previous);
        Some(previous)
    }
}

/// The state shared by every [`Informer`] handle of one type and scope.
pub(crate) struct Shared<K> {
    state: RwLock<State<K>>,
    events: broadcast::Sender<CacheEvent<K>>,
    synced: watch::Sender<bool>,
    /// Streams that have not finished their first list yet.
    pending_streams: AtomicUsize,
    transform: Transform<K>,
    description: String,
    shutdown: watch::Receiver<bool>,
}

impl<K> Shared<K> {
    pub(crate) fn new(
        streams: usize,
        transform: Transform<K>,
        description: String,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        Self {
            state: RwLock::new(State {
                objects: HashMap::new(),
                owners: HashMap::new(),
            }),
            events: broadcast::Sender::new(EVENT_CAPACITY),
            synced: watch::Sender::new(streams == 0),
            pending_streams: AtomicUsize::new(streams),
            transform,
            description,
            shutdown,
        }
    }

    pub(crate) fn synced_receiver(&self) -> watch::Receiver<bool> {
        self.synced.subscribe()
    }
}

fn same_version<K: Resource>(a: &K, b: &K) -> bool {
    let (a, b) = (&a.meta().resource_version, &b.meta().resource_version);
    a.is_some() && a == b
}

impl<K: Resource + Clone + Send + Sync + 'static> Shared<K> {
    fn emit(&self, kind: EventKind, object: Arc<K>, previous: Option<Arc<K>>) {
        // No subscriber is not an error: nobody is listening yet.
        let _ = self.events.send(CacheEvent {
            kind,
            object,
            previous,
        });
    }

    fn prepare(&self, mut obj: K) -> Option<(ObjectRef, Arc<K>)> {
        (self.transform)(&mut obj);
        let key = ObjectRef::from_object(&obj)?;
        Some((key, Arc::new(obj)))
    }

    fn apply(&self, obj: K) {
        let Some((key, obj)) = self.prepare(obj) else {
            warn!(informer = %self.description, "ignoring an object without a name");
            return;
        };
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        let previous = state.insert(key, Arc::clone(&obj));
        match previous {
            None => self.emit(EventKind::Added, obj, None),
            Some(prev) if same_version(prev.as_ref(), obj.as_ref()) => {}
            Some(prev) => self.emit(EventKind::Modified, obj, Some(prev)),
        }
    }

    fn delete(&self, obj: K) {
        let Some((key, obj)) = self.prepare(obj) else {
            return;
        };
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        let previous = state.remove(&key);
        self.emit(EventKind::Deleted, obj, previous);
    }

    /// Replaces the objects of one stream's partition (`namespace`, or everything) with a fresh
    /// list, emitting the differences as events.
    fn replace(&self, namespace: Option<&str>, listed: HashMap<ObjectRef, Arc<K>>) {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        let gone: Vec<ObjectRef> = state
            .objects
            .keys()
            .filter(|k| namespace.is_none_or(|ns| k.namespace.as_deref() == Some(ns)))
            .filter(|k| !listed.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(prev) = state.remove(&key) {
                self.emit(EventKind::Deleted, Arc::clone(&prev), Some(prev));
            }
        }
        for (key, obj) in listed {
            match state.insert(key, Arc::clone(&obj)) {
                None => self.emit(EventKind::Added, obj, None),
                Some(prev) if same_version(prev.as_ref(), obj.as_ref()) => {}
                Some(prev) => self.emit(EventKind::Modified, obj, Some(prev)),
            }
        }
    }

    fn stream_synced(&self) {
        let before = self.pending_streams.fetch_sub(1, Ordering::AcqRel);
        if before == 1 {
            info!(informer = %self.description, "informer synced");
            self.synced.send_replace(true);
        }
    }
}

/// Runs one list+watch stream into `shared` until `shutdown` turns true or the stream ends.
pub(crate) async fn run_stream<K>(
    shared: Arc<Shared<K>>,
    api: Api<K>,
    config: watcher::Config,
    namespace: Option<String>,
    mut shutdown: watch::Receiver<bool>,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    // The watcher relists on errors and on 410 Gone; the backoff spaces the retries.
    let stream = watcher::watcher(api, config).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut buffer: Option<HashMap<ObjectRef, Arc<K>>> = None;
    let mut first_list_done = false;
    debug!(informer = %shared.description, namespace = ?namespace, "watch started");
    loop {
        let next = tokio::select! {
            biased;
            _ = shutdown.wait_for(|stop| *stop) => break,
            next = stream.next() => next,
        };
        let event = match next {
            None => break,
            Some(Err(err)) => {
                warn!(informer = %shared.description, error = %err, "watch failed; retrying with backoff");
                continue;
            }
            Some(Ok(event)) => event,
        };
        match event {
            Event::Init => buffer = Some(HashMap::new()),
            Event::InitApply(obj) => {
                if let Some((key, obj)) = shared.prepare(obj) {
                    buffer.get_or_insert_with(HashMap::new).insert(key, obj);
                }
            }
            Event::InitDone => {
                shared.replace(namespace.as_deref(), buffer.take().unwrap_or_default());
                if !first_list_done {
                    first_list_done = true;
                    shared.stream_synced();
                }
            }
            Event::Apply(obj) => shared.apply(obj),
            Event::Delete(obj) => shared.delete(obj),
        }
    }
    debug!(informer = %shared.description, namespace = ?namespace, "watch stopped");
}

/// A shared, read-only view of the objects of one type and scope, kept up to date by a single
/// list+watch however many handles exist. Cheap to clone.
pub struct Informer<K> {
    pub(crate) shared: Arc<Shared<K>>,
}

impl<K> Clone for Informer<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K> Debug for Informer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("informer", &self.shared.description)
            .field("synced", &*self.shared.synced.borrow())
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> Informer<K> {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State<K>> {
        self.shared
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The cached object with this key, if any.
    pub fn get(&self, key: &ObjectRef) -> Option<Arc<K>> {
        self.read().objects.get(key).cloned()
    }

    /// Every cached object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.read().objects.values().cloned().collect()
    }

    /// The cached objects whose labels match `selector`.
    pub fn list_by_label(&self, selector: &Selector) -> Vec<Arc<K>> {
        let empty = std::collections::BTreeMap::new();
        self.read()
            .objects
            .values()
            .filter(|o| selector.matches(o.meta().labels.as_ref().unwrap_or(&empty)))
            .cloned()
            .collect()
    }

    /// The cached objects with an ownerReference to the object with uid `owner_uid` (from an
    /// index kept up to date on every change, not a scan).
    pub fn list_owned_by(&self, owner_uid: &str) -> Vec<Arc<K>> {
        let state = self.read();
        state
            .owners
            .get(owner_uid)
            .into_iter()
            .flatten()
            .filter_map(|key| state.objects.get(key).cloned())
            .collect()
    }

    /// The number of cached objects.
    pub fn len(&self) -> usize {
        self.read().objects.len()
    }

    /// Whether the cache holds no object.
    pub fn is_empty(&self) -> bool {
        self.read().objects.is_empty()
    }

    /// Whether the initial list of every watch of this informer has been stored.
    pub fn is_synced(&self) -> bool {
        *self.shared.synced.borrow()
    }

    /// Waits until [`Informer::is_synced`]; fails if the cache shut down first.
    pub async fn wait_synced(&self) -> Result<(), super::CacheError> {
        wait_synced(
            self.shared.synced.subscribe(),
            self.shared.shutdown.clone(),
            &self.shared.description,
        )
        .await
    }

    /// Subscribes to the changes of the cache from now on: `Added`, `Modified` (with the previous
    /// object) and `Deleted` (with the last cached object as `previous`). A relist emits only the
    /// differences with what was cached. Subscribe before [`Informer::wait_synced`] to see the
    /// initial list as `Added` events (an informer that synced earlier does not replay it; read
    /// [`Informer::list`] instead).
    ///
    /// A receiver more than [`EVENT_CAPACITY`] events behind loses the oldest ones
    /// ([`broadcast::error::RecvError::Lagged`]).
    pub fn subscribe(&self) -> broadcast::Receiver<CacheEvent<K>> {
        self.shared.events.subscribe()
    }

    /// [`Informer::subscribe`] as a stream, which skips (and logs) the events lost by lagging
    /// and ends when the cache shuts down.
    pub fn event_stream(&self) -> impl futures::Stream<Item = CacheEvent<K>> + Send + 'static {
        let description = self.shared.description.clone();
        let state = (self.subscribe(), self.shared.shutdown.clone());
        futures::stream::unfold(state, move |(mut rx, mut shutdown)| {
            let description = description.clone();
            async move {
                loop {
                    let received = tokio::select! {
                        biased;
                        received = rx.recv() => received,
                        _ = shutdown.wait_for(|stop| *stop) => return None,
                    };
                    match received {
                        Ok(event) => return Some((event, (rx, shutdown))),
                        Err(broadcast::error::RecvError::Lagged(missed)) => {
                            warn!(informer = %description, missed, "event subscriber lagged; events lost");
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            }
        })
    }
}

/// Waits until `synced` is true; fails when `shutdown` turns true (or is gone) first.
pub(crate) async fn wait_synced(
    mut synced: watch::Receiver<bool>,
    mut shutdown: watch::Receiver<bool>,
    description: &str,
) -> Result<(), super::CacheError> {
    let err = || super::CacheError::WaitSync {
        informer: description.to_owned(),
    };
    tokio::select! {
        biased;
        res = synced.wait_for(|s| *s) => res.map(|_| ()).map_err(|_| err()),
        _ = shutdown.wait_for(|stop| *stop) => Err(err()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    fn cm(name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    fn listed(objs: &[ConfigMap]) -> HashMap<ObjectRef, Arc<ConfigMap>> {
        objs.iter()
            .filter_map(|o| Some((ObjectRef::from_object(o)?, Arc::new(o.clone()))))
            .collect()
    }

    #[test]
    fn relist_emits_only_the_differences() {
        let (_tx, rx) = watch::channel(false);
        let shared: Shared<ConfigMap> =
            Shared::new(1, Arc::new(|_: &mut ConfigMap| {}), "test".into(), rx);
        let mut events = shared.events.subscribe();
        shared.apply(cm("kept", "1"));
        shared.apply(cm("changed", "1"));
        shared.apply(cm("gone", "1"));
        for _ in 0..3 {
            assert!(matches!(
                events.try_recv().map(|e| e.kind),
                Ok(EventKind::Added)
            ));
        }
        // A relist (after 410 Gone, say): one unchanged, one changed, one missing, one new.
        shared.replace(
            Some("ns"),
            listed(&[cm("kept", "1"), cm("changed", "2"), cm("new", "3")]),
        );
        let mut seen = Vec::new();
        while let Ok(e) = events.try_recv() {
            let name = e.object.metadata.name.clone().unwrap_or_default();
            let prev_rv = e
                .previous
                .as_ref()
                .and_then(|p| p.metadata.resource_version.clone());
            seen.push((e.kind, name, prev_rv));
        }
        seen.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(
            seen,
            [
                (
                    EventKind::Modified,
                    "changed".to_owned(),
                    Some("1".to_owned())
                ),
                (EventKind::Deleted, "gone".to_owned(), Some("1".to_owned())),
                (EventKind::Added, "new".to_owned(), None),
            ]
        );
        let state = shared.state.read().unwrap_or_else(PoisonError::into_inner);
        assert_eq!(state.objects.len(), 3);
    }

    #[test]
    fn owner_index_follows_changes() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let (_tx, rx) = watch::channel(false);
        let shared: Shared<ConfigMap> =
            Shared::new(1, Arc::new(|_: &mut ConfigMap| {}), "test".into(), rx);
        let informer = Informer {
            shared: Arc::new(shared),
        };
        let owned = |uid: &str, rv: &str| {
            let mut o = cm("child", rv);
            o.metadata.owner_references = Some(vec![OwnerReference {
                uid: uid.into(),
                ..OwnerReference::default()
            }]);
            o
        };
        informer.shared.apply(owned("u1", "1"));
        assert_eq!(informer.list_owned_by("u1").len(), 1);
        // Re-parented: the old owner's entry goes away.
        informer.shared.apply(owned("u2", "2"));
        assert!(informer.list_owned_by("u1").is_empty());
        assert_eq!(informer.list_owned_by("u2").len(), 1);
        informer.shared.delete(owned("u2", "3"));
        assert!(informer.list_owned_by("u2").is_empty());
        assert!(informer.is_empty());
    }
}
