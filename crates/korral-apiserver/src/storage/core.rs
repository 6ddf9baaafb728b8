//! State shared by both storage implementations: the object map, the revision counter,
//! the bounded watch history and the broadcast channel of live events.
//!
//! Readers (`get`, `snapshot`, `watch`) take a short read lock; every mutation goes through
//! [`Core::publish`], which applies events to the map, appends them to the history and
//! broadcasts them while holding the write lock. Writers are serialized outside the state lock
//! (by a mutex in memory storage, by the single writer thread in durable storage), so update
//! functions run without holding it. Because [`Core::watch`] copies the backlog and subscribes to
//! the broadcast channel under the read lock, a watcher sees every event exactly once.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::Value;
use tokio::sync::broadcast;

use super::{Committed, Event, EventType, Object, Snapshot, UpdateFn, WatchFeed, Write};
use crate::error::ApiError;

/// Capacity of the live-event broadcast channel. A receiver that falls this far behind gets
/// `RecvError::Lagged` and must end its watch.
pub(super) const BROADCAST_CAPACITY: usize = 65_536;

/// The revision of an empty, never-written store. The first write gets `INITIAL_REVISION + 1`.
pub(super) const INITIAL_REVISION: u64 = 1;

/// The bounded list of the most recent events, used to resume watches.
#[derive(Debug, Clone)]
pub(super) struct History {
    /// Retained events, oldest first, with strictly increasing revisions.
    events: VecDeque<Arc<Event>>,
    /// How many events are retained at most.
    limit: usize,
    /// Watching from any revision `>= oldest_resumable` is answered from `events`.
    oldest_resumable: u64,
}

impl History {
    /// An empty history whose oldest resumable revision is `base` (the current revision).
    pub(super) fn new(limit: usize, base: u64) -> Self {
        Self {
            events: VecDeque::with_capacity(limit.min(4096)),
            limit,
            oldest_resumable: base,
        }
    }

    /// Appends an event, evicting the oldest ones beyond the limit.
    pub(super) fn push(&mut self, event: Arc<Event>) {
        self.events.push_back(event);
        while self.events.len() > self.limit {
            match self.events.pop_front() {
                Some(evicted) => self.oldest_resumable = evicted.revision,
                None => break,
            }
        }
    }

    /// The oldest revision a watch can resume from.
    pub(super) fn oldest_resumable(&self) -> u64 {
        self.oldest_resumable
    }

    /// Retained events with a revision greater than `after`, oldest first.
    pub(super) fn since(&self, after: u64) -> Vec<Arc<Event>> {
        let start = self.events.partition_point(|e| e.revision <= after);
        self.events.range(start..).cloned().collect()
    }

    /// Every retained event, oldest first.
    pub(super) fn events(&self) -> Vec<Arc<Event>> {
        self.events.iter().cloned().collect()
    }

    /// Number of retained events.
    pub(super) fn len(&self) -> usize {
        self.events.len()
    }
}

/// Every object plus the revision counter and the history.
#[derive(Debug, Clone)]
pub(super) struct State {
    /// Every object by key.
    pub(super) objects: imbl::OrdMap<String, Object>,
    /// The revision of the latest write (or [`INITIAL_REVISION`]).
    pub(super) revision: u64,
    /// The retained events.
    pub(super) history: History,
}

impl State {
    /// An empty store at [`INITIAL_REVISION`].
    pub(super) fn empty(history_limit: usize) -> Self {
        Self::at(imbl::OrdMap::new(), INITIAL_REVISION, history_limit)
    }

    /// A store holding `objects` at `revision`, with an empty history starting there.
    pub(super) fn at(
        objects: imbl::OrdMap<String, Object>,
        revision: u64,
        history_limit: usize,
    ) -> Self {
        Self {
            objects,
            revision,
            history: History::new(history_limit, revision),
        }
    }

    /// Applies one event: updates the map and the revision and records it in the history.
    ///
    /// The caller guarantees `event.revision > self.revision`.
    pub(super) fn apply(&mut self, event: Arc<Event>) {
        match event.kind {
            EventType::Added | EventType::Modified => {
                self.objects.insert(event.key.clone(), event.object.clone());
            }
            EventType::Deleted => {
                self.objects.remove(&event.key);
            }
        }
        self.revision = event.revision;
        self.history.push(event);
    }
}

/// Sets `metadata.resourceVersion` of a JSON object to `revision` (as a decimal string).
///
/// Fails when `object` (or its `metadata`) is not a JSON object.
pub(super) fn stamp(object: &mut Value, revision: u64) -> Result<(), ApiError> {
    let Value::Object(map) = object else {
        return Err(ApiError::internal(
            "refusing to store a value that is not a JSON object",
        ));
    };
    let metadata = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if metadata.is_null() {
        *metadata = Value::Object(serde_json::Map::new());
    }
    let Value::Object(metadata) = metadata else {
        return Err(ApiError::internal(
            "refusing to store an object whose metadata is not a JSON object",
        ));
    };
    metadata.insert(
        "resourceVersion".to_string(),
        Value::String(revision.to_string()),
    );
    Ok(())
}

/// The object carried by a `Deleted` event: the last state with `resourceVersion = revision`.
pub(super) fn deleted_object(previous: &Object, revision: u64) -> Object {
    let mut last = (**previous).clone();
    // A stored object is always a JSON object with a metadata map, so this cannot fail;
    // if it somehow did, the unstamped last state is still the best answer.
    if let Err(error) = stamp(&mut last, revision) {
        tracing::warn!(%error, "could not stamp deleted object");
    }
    Arc::new(last)
}

/// Runs an update function against `current` and turns its decision into an event at
/// `revision` (the next revision). Returns `None` when nothing is to be written
/// ([`Write::Unchanged`], or a delete of an absent key).
///
/// A panicking update function is caught and reported as a 500, so it can neither poison
/// a lock nor kill the durable writer.
pub(super) fn decide(
    key: String,
    current: Option<Object>,
    revision: u64,
    decide: UpdateFn,
) -> Result<Option<Arc<Event>>, ApiError> {
    let write = match catch_unwind(AssertUnwindSafe(|| decide(current.as_ref()))) {
        Ok(result) => result?,
        Err(_) => {
            tracing::error!(%key, "storage update function panicked");
            return Err(ApiError::internal("storage update function panicked"));
        }
    };
    match write {
        Write::Unchanged => Ok(None),
        Write::Put(mut value) => {
            stamp(&mut value, revision)?;
            let kind = if current.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            };
            Ok(Some(Arc::new(Event {
                revision,
                kind,
                key,
                object: Arc::new(value),
                previous: current,
            })))
        }
        Write::Delete => Ok(current.map(|previous| {
            Arc::new(Event {
                revision,
                kind: EventType::Deleted,
                key,
                object: deleted_object(&previous, revision),
                previous: Some(previous),
            })
        })),
    }
}

/// The result of an update that committed `event` (or nothing, leaving `current`).
pub(super) fn committed(event: Option<Arc<Event>>, current: Option<Object>) -> Committed {
    match event {
        Some(event) => {
            let current = match event.kind {
                EventType::Deleted => None,
                EventType::Added | EventType::Modified => Some(event.object.clone()),
            };
            Committed {
                event: Some(event),
                current,
            }
        }
        None => Committed {
            event: None,
            current,
        },
    }
}

/// The shared, lock-protected state plus the live event channel.
#[derive(Debug)]
pub(super) struct Core {
    /// The state readers see.
    state: RwLock<State>,
    /// Live events; sent to while the state write lock is held.
    sender: broadcast::Sender<Arc<Event>>,
}

impl Core {
    /// Wraps a (recovered or empty) state.
    pub(super) fn new(state: State) -> Self {
        let (sender, _) = broadcast::channel(BROADCAST_CAPACITY);
        Self {
            state: RwLock::new(state),
            sender,
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        // Nothing panics while the lock is held (update functions are caught), and every
        // mutation leaves the state consistent, so a poisoned lock is safe to reuse.
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The revision of the latest visible write.
    pub(super) fn revision(&self) -> u64 {
        self.read().revision
    }

    /// The oldest revision a watch can resume from.
    #[cfg(test)]
    pub(super) fn oldest_resumable(&self) -> u64 {
        self.read().history.oldest_resumable()
    }

    /// The object at `key`.
    pub(super) fn get(&self, key: &str) -> Option<Object> {
        self.read().objects.get(key).cloned()
    }

    /// Whether some object's key starts with `prefix`. Unlike a snapshot, it holds no
    /// reference to the tree once it answers (a snapshot alive while others write makes each
    /// of their writes copy the nodes on its path).
    pub(super) fn any_under(&self, prefix: &str) -> bool {
        use std::ops::Bound;
        self.read()
            .objects
            .range::<_, str>((Bound::Included(prefix), Bound::Unbounded))
            .next()
            .is_some_and(|(key, _)| key.starts_with(prefix))
    }

    /// A consistent view of every object (O(1)).
    pub(super) fn snapshot(&self) -> Snapshot {
        let state = self.read();
        Snapshot {
            revision: state.revision,
            objects: state.objects.clone(),
        }
    }

    /// A copy of the whole state (O(history) for the history, O(1) for the objects).
    pub(super) fn capture(&self) -> State {
        self.read().clone()
    }

    /// The backlog after `after` plus a live receiver, taken atomically.
    pub(super) fn watch(&self, after: u64) -> Result<WatchFeed, ApiError> {
        let state = self.read();
        let oldest = state.history.oldest_resumable();
        if after < oldest {
            return Err(ApiError::expired(format!(
                "too old resource version: {after} ({oldest})"
            )));
        }
        let backlog = state.history.since(after);
        let live = self.sender.subscribe();
        drop(state);
        Ok(WatchFeed { backlog, live })
    }

    /// Makes already-durable events visible: applies them, records them and broadcasts them.
    pub(super) fn publish(&self, events: &[Arc<Event>]) {
        if events.is_empty() {
            return;
        }
        let mut state = self.write();
        for event in events {
            state.apply(event.clone());
            // An error only means nobody is listening right now.
            let _ = self.sender.send(event.clone());
        }
    }

    /// Decides and publishes one update at once (the in-memory write path).
    ///
    /// `writers` serializes writers; the update function runs without holding the state lock,
    /// so it may read the store (as it may with durable storage).
    pub(super) fn update_now(
        &self,
        writers: &Mutex<()>,
        key: String,
        update: UpdateFn,
    ) -> Result<Committed, ApiError> {
        // The guarded data is `()`, so a poisoned mutex carries no broken state.
        let _writer = writers.lock().unwrap_or_else(PoisonError::into_inner);
        let current = self.get(&key);
        let next = self.revision() + 1;
        let event = decide(key, current.clone(), next, update)?;
        if let Some(event) = &event {
            self.publish(std::slice::from_ref(event));
        }
        Ok(committed(event, current))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(revision: u64) -> Arc<Event> {
        Arc::new(Event {
            revision,
            kind: EventType::Added,
            key: format!("/k/{revision}"),
            object: Arc::new(json!({})),
            previous: None,
        })
    }

    #[test]
    fn history_evicts_and_tracks_oldest_resumable() {
        let mut history = History::new(3, 1);
        assert_eq!(history.oldest_resumable(), 1);
        for rev in 2..=6 {
            history.push(event(rev));
        }
        assert_eq!(history.len(), 3);
        assert_eq!(history.oldest_resumable(), 3);
        let since: Vec<u64> = history.since(3).iter().map(|e| e.revision).collect();
        assert_eq!(since, vec![4, 5, 6]);
        assert!(history.since(6).is_empty());
        let since: Vec<u64> = history.since(4).iter().map(|e| e.revision).collect();
        assert_eq!(since, vec![5, 6]);
    }

    #[test]
    fn zero_history_resumes_only_from_now() {
        let mut history = History::new(0, 1);
        history.push(event(2));
        history.push(event(3));
        assert_eq!(history.oldest_resumable(), 3);
        assert!(history.since(3).is_empty());
    }

    #[test]
    fn stamp_sets_resource_version_string() {
        let mut value = json!({"kind": "ConfigMap"});
        stamp(&mut value, 42).expect("object");
        assert_eq!(value["metadata"]["resourceVersion"], "42");
        let mut value = json!({"metadata": null});
        stamp(&mut value, 7).expect("null metadata");
        assert_eq!(value["metadata"]["resourceVersion"], "7");
        assert_eq!(stamp(&mut json!([1]), 1).map_err(|e| e.code), Err(500));
        assert_eq!(
            stamp(&mut json!({"metadata": 3}), 1).map_err(|e| e.code),
            Err(500)
        );
    }

    #[test]
    fn panicking_update_function_is_a_500() {
        let result = decide(
            "/k".to_string(),
            None,
            2,
            Box::new(|_| -> Result<Write, ApiError> { panic!("boom") }),
        );
        assert_eq!(result.map_err(|e| e.code).err(), Some(500));
    }
}

/// Behaviour every [`Storage`](super::Storage) implementation must show, shared by the
/// tests of both implementations.
#[cfg(test)]
pub(super) mod conformance {
    use std::collections::BTreeSet;
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::super::{Committed, EventType, Storage, UpdateFn, Write};
    use crate::error::ApiError;

    /// An update function that stores `value`.
    pub(in super::super) fn put_fn(value: Value) -> UpdateFn {
        Box::new(move |_| Ok(Write::Put(value)))
    }

    /// Stores `value` at `key` and returns the result.
    pub(in super::super) async fn put<S: Storage>(store: &S, key: &str, value: Value) -> Committed {
        store
            .update(key.to_string(), put_fn(value))
            .await
            .expect("put succeeds")
    }

    /// Deletes `key` and returns the result.
    pub(in super::super) async fn delete<S: Storage>(store: &S, key: &str) -> Committed {
        store
            .update(key.to_string(), Box::new(|_| Ok(Write::Delete)))
            .await
            .expect("delete succeeds")
    }

    /// The `metadata.resourceVersion` of an object.
    pub(in super::super) fn rv(object: &Value) -> String {
        object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Put, get, modify, unchanged and delete behave as documented.
    pub(in super::super) async fn put_get_delete_unchanged<S: Storage>(store: &S) {
        let key = "/core/configmaps/ns/a";
        assert!(store.get(key).is_none());
        let added = put(
            store,
            key,
            json!({"metadata": {"name": "a"}, "data": {"x": "1"}}),
        )
        .await;
        let event = added.event.clone().expect("an event");
        assert_eq!(event.kind, EventType::Added);
        assert!(event.previous.is_none());
        let current = added.current.expect("current object");
        assert_eq!(current["data"]["x"], "1");
        assert_eq!(store.get(key).as_deref(), Some(&*current));

        let modified = put(
            store,
            key,
            json!({"metadata": {"name": "a"}, "data": {"x": "2"}}),
        )
        .await;
        let event = modified.event.clone().expect("an event");
        assert_eq!(event.kind, EventType::Modified);
        assert_eq!(event.previous.as_deref(), Some(&*current));
        assert_eq!(store.get(key).expect("stored")["data"]["x"], "2");

        let rev = store.revision();
        let seen = Arc::new(std::sync::Mutex::new(None));
        let seen_in = seen.clone();
        let unchanged = store
            .update(
                key.to_string(),
                Box::new(move |current| {
                    *seen_in.lock().expect("lock") = current.cloned();
                    Ok(Write::Unchanged)
                }),
            )
            .await
            .expect("unchanged succeeds");
        assert!(unchanged.event.is_none());
        assert_eq!(unchanged.current.expect("current")["data"]["x"], "2");
        assert_eq!(
            store.revision(),
            rev,
            "unchanged must not consume a revision"
        );
        assert_eq!(
            seen.lock().expect("lock").as_ref().expect("saw current")["data"]["x"],
            "2"
        );

        let deleted = delete(store, key).await;
        let event = deleted.event.expect("an event");
        assert_eq!(event.kind, EventType::Deleted);
        assert!(deleted.current.is_none());
        assert_eq!(rv(&event.object), event.revision.to_string());
        assert_eq!(event.object["data"]["x"], "2");
        assert_eq!(
            rv(event.previous.as_ref().expect("previous")),
            rev.to_string()
        );
        assert!(store.get(key).is_none());

        // Deleting or leaving unchanged an absent key writes nothing.
        let rev = store.revision();
        let gone = delete(store, key).await;
        assert!(gone.event.is_none() && gone.current.is_none());
        let absent = store
            .update(key.to_string(), Box::new(|_| Ok(Write::Unchanged)))
            .await
            .expect("unchanged succeeds");
        assert!(absent.event.is_none() && absent.current.is_none());
        assert_eq!(store.revision(), rev);
    }

    /// Every write takes the next revision and stamps it as `resourceVersion`.
    pub(in super::super) async fn revisions_are_monotonic_and_stamped<S: Storage>(store: &S) {
        let mut last = store.revision();
        for i in 0..20 {
            let key = format!("/core/configmaps/ns/o{}", i % 5);
            let committed = put(
                store,
                &key,
                json!({"metadata": {"name": key, "resourceVersion": "999999"}}),
            )
            .await;
            let event = committed.event.expect("event");
            assert!(
                event.revision > last,
                "revision {} after {last}",
                event.revision
            );
            assert_eq!(event.revision, store.revision());
            assert_eq!(rv(&event.object), event.revision.to_string());
            assert_eq!(
                rv(&store.get(&key).expect("stored")),
                event.revision.to_string()
            );
            last = event.revision;
        }
        // An object without metadata gets one.
        let committed = put(store, "/core/configmaps/ns/bare", json!({})).await;
        assert_eq!(
            rv(&committed.current.expect("current")),
            store.revision().to_string()
        );
    }

    /// An update function error, or a non-object value, writes nothing.
    pub(in super::super) async fn failed_update_writes_nothing<S: Storage>(store: &S) {
        let key = "/core/configmaps/ns/a";
        put(store, key, json!({"data": 1})).await;
        let rev = store.revision();
        let failed = store
            .update(
                key.to_string(),
                Box::new(|_| Err(ApiError::conflict("", "configmaps", "a"))),
            )
            .await;
        assert_eq!(failed.map_err(|e| e.code).err(), Some(409));
        let not_object = store.update(key.to_string(), put_fn(json!("text"))).await;
        assert_eq!(not_object.map_err(|e| e.code).err(), Some(500));
        assert_eq!(store.revision(), rev);
        assert_eq!(store.get(key).expect("kept")["data"], 1);
        // The store still works afterwards, with the next revision.
        let next = put(store, key, json!({"data": 2})).await;
        assert_eq!(next.event.expect("event").revision, rev + 1);
    }

    /// Snapshots do not change after later writes and range over prefixes.
    pub(in super::super) async fn snapshot_is_consistent_and_ranged<S: Storage>(store: &S) {
        for name in ["a", "b", "c"] {
            put(store, &format!("/core/configmaps/ns1/{name}"), json!({})).await;
        }
        put(store, "/core/configmaps/ns2/a", json!({})).await;
        put(store, "/core/secrets/ns1/a", json!({})).await;
        let snapshot = store.snapshot();
        assert_eq!(snapshot.revision, store.revision());
        put(store, "/core/configmaps/ns1/d", json!({})).await;
        delete(store, "/core/configmaps/ns1/a").await;
        let keys: Vec<&str> = snapshot
            .range("/core/configmaps/ns1/", None)
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(
            keys,
            [
                "/core/configmaps/ns1/a",
                "/core/configmaps/ns1/b",
                "/core/configmaps/ns1/c"
            ]
        );
        let keys: Vec<&str> = snapshot
            .range("/core/configmaps/", Some("/core/configmaps/ns1/c"))
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(keys, ["/core/configmaps/ns2/a"]);
        let now: Vec<String> = store
            .snapshot()
            .range("/core/configmaps/ns1/", None)
            .map(|(k, _)| k.clone())
            .collect();
        assert_eq!(
            now,
            [
                "/core/configmaps/ns1/b",
                "/core/configmaps/ns1/c",
                "/core/configmaps/ns1/d"
            ]
        );
        assert!(store.any_under("/core/configmaps/ns2/"));
        assert!(store.any_under("/core/secrets/"));
        // Keys sorting after the prefix (ns2 > ns10) or sharing only part of it do not count.
        assert!(!store.any_under("/core/configmaps/ns10/"));
        assert!(!store.any_under("/core/configmaps/ns3/"));
        assert!(!store.any_under("/core/services/"));
        delete(store, "/core/configmaps/ns2/a").await;
        assert!(!store.any_under("/core/configmaps/ns2/"));
    }

    /// Concurrent increments of one counter never lose an update.
    pub(in super::super) async fn concurrent_read_modify_write_is_atomic<S: Storage>(
        store: Arc<S>,
    ) {
        let key = "/core/configmaps/ns/counter";
        let mut tasks = Vec::new();
        for _ in 0..200 {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store
                    .update(
                        key.to_string(),
                        Box::new(|current| {
                            let n = current.and_then(|c| c["n"].as_u64()).unwrap_or(0);
                            Ok(Write::Put(json!({"n": n + 1})))
                        }),
                    )
                    .await
            }));
        }
        for task in tasks {
            task.await.expect("task").expect("increment");
        }
        assert_eq!(store.get(key).expect("counter")["n"], 200);
    }

    /// An update function may read the store (the state lock is not held while it runs).
    pub(in super::super) async fn update_function_may_read_the_store<S: Storage>(store: Arc<S>) {
        put(&*store, "/core/namespaces/-/ns", json!({})).await;
        // Run the call on its own thread, so that a deadlock fails the test instead of hanging it.
        let (done, outcome) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let reader = store.clone();
            let update = store.update(
                "/core/configmaps/ns/a".to_string(),
                Box::new(move |_| {
                    let exists = reader.get("/core/namespaces/-/ns").is_some();
                    let count = reader.snapshot().objects.len();
                    Ok(Write::Put(json!({"exists": exists, "count": count})))
                }),
            );
            let _ = done.send(futures::executor::block_on(update));
        });
        let committed =
            tokio::task::spawn_blocking(move || outcome.recv_timeout(Duration::from_secs(10)))
                .await
                .expect("join")
                .expect("no deadlock")
                .expect("update");
        let current = committed.current.expect("stored");
        assert_eq!(current["exists"], true);
        assert_eq!(current["count"], 1);
    }

    /// A watch gets the backlog, then live events, with the documented event contents.
    pub(in super::super) async fn watch_backlog_and_live<S: Storage>(store: &S) {
        let start = store.revision();
        let key = "/core/configmaps/ns/a";
        put(store, key, json!({"v": 1})).await;
        put(store, key, json!({"v": 2})).await;
        delete(store, key).await;
        let mut feed = store.watch(start).expect("watch");
        let kinds: Vec<EventType> = feed.backlog.iter().map(|e| e.kind).collect();
        assert_eq!(
            kinds,
            [EventType::Added, EventType::Modified, EventType::Deleted]
        );
        let revisions: Vec<u64> = feed.backlog.iter().map(|e| e.revision).collect();
        assert_eq!(revisions, [start + 1, start + 2, start + 3]);
        for event in &feed.backlog {
            assert_eq!(rv(&event.object), event.revision.to_string());
        }
        let deleted = &feed.backlog[2];
        assert_eq!(deleted.object["v"], 2);
        assert_eq!(deleted.previous.as_ref().expect("previous")["v"], 2);

        // Watching from the middle gives only later events.
        let mid = store.watch(start + 2).expect("watch");
        assert_eq!(mid.backlog.len(), 1);
        // Watching from now gives nothing old.
        assert!(
            store
                .watch(store.revision())
                .expect("watch")
                .backlog
                .is_empty()
        );

        put(store, "/core/configmaps/ns/b", json!({"v": 3})).await;
        let live = tokio::time::timeout(Duration::from_secs(5), feed.live.recv())
            .await
            .expect("live event in time")
            .expect("live event");
        assert_eq!(live.revision, start + 4);
        assert_eq!(live.key, "/core/configmaps/ns/b");
        assert_eq!(live.kind, EventType::Added);
    }

    /// A watch started while writers run sees every later revision exactly once.
    pub(in super::super) async fn watch_has_no_gap_under_concurrent_writes<S: Storage>(
        store: Arc<S>,
    ) {
        const WRITERS: u64 = 8;
        const PER_WRITER: u64 = 100;
        let start = store.revision();
        let last = start + WRITERS * PER_WRITER;
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..PER_WRITER {
                    let key = format!("/core/configmaps/w{w}/o{i}");
                    store
                        .update(key, put_fn(json!({"w": w, "i": i})))
                        .await
                        .expect("write");
                    tokio::task::yield_now().await;
                }
            }));
        }
        // Start watching somewhere in the middle of the writes.
        while store.revision() < start + WRITERS * PER_WRITER / 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let from = store.revision().saturating_sub(50).max(start);
        let mut feed = store.watch(from).expect("watch");
        let mut seen: Vec<u64> = feed.backlog.iter().map(|e| e.revision).collect();
        let mut latest = seen.last().copied().unwrap_or(from);
        while latest < last {
            let event = tokio::time::timeout(Duration::from_secs(10), feed.live.recv())
                .await
                .expect("event in time")
                .expect("no lag");
            assert_eq!(rv(&event.object), event.revision.to_string());
            latest = event.revision;
            seen.push(event.revision);
        }
        for task in tasks {
            task.await.expect("writer");
        }
        let expected: Vec<u64> = (from + 1..=last).collect();
        assert_eq!(seen, expected, "every revision exactly once, in order");
        let unique: BTreeSet<u64> = seen.iter().copied().collect();
        assert_eq!(unique.len(), seen.len());
    }

    /// With a history of 5, watching from before the retained events is 410 Expired.
    pub(in super::super) async fn expired_watch_is_410<S: Storage>(store: &S) {
        let start = store.revision();
        for i in 0..20 {
            put(store, &format!("/core/configmaps/ns/o{i}"), json!({})).await;
        }
        let oldest = store.oldest_resumable();
        assert_eq!(oldest, store.revision() - 5);
        let feed = store.watch(oldest).expect("oldest resumable works");
        assert_eq!(feed.backlog.len(), 5);
        let err = store.watch(oldest - 1).map(|_| ()).expect_err("expired");
        assert_eq!(err.code, 410);
        assert_eq!(err.reason, "Expired");
        assert_eq!(
            err.message,
            format!("too old resource version: {} ({oldest})", oldest - 1)
        );
        assert_eq!(store.watch(start).map(|_| ()).map_err(|e| e.code), Err(410));
        assert!(
            store
                .watch(store.revision())
                .expect("now")
                .backlog
                .is_empty()
        );
    }
}
