//! Object storage: one trait, an in-memory and a durable implementation.
//!
//! Objects are JSON documents keyed by a path-like string
//! (`/<group>/<resource>/<namespace>/<name>`, see [`object_key`]). Every write gets the next
//! value of one global revision counter, which becomes the object's `metadata.resourceVersion`.
//! Each write is also kept in a bounded history so that watches can resume from an old revision.

mod core;
mod durable;
mod memory;

pub use durable::DurableOptions;
pub use durable::DurableStorage;
pub use memory::MemoryStorage;

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::error::ApiError;

/// A stored object, shared between the store, watch events and responses.
pub type Object = Arc<Value>;

/// Number of events kept for watch resumption when not configured otherwise.
pub const DEFAULT_HISTORY: usize = 100_000;

/// The storage key of an object: `/<group or "core">/<resource>/<namespace or "-">/<name>`.
pub fn object_key(group: &str, resource: &str, namespace: Option<&str>, name: &str) -> String {
    let mut key = collection_prefix(group, resource, namespace);
    key.push_str(name);
    key
}

/// The key prefix of a collection; with `namespace = None` it spans every namespace.
///
/// The result always ends with `/`, so prefixes of different collections never overlap.
pub fn collection_prefix(group: &str, resource: &str, namespace: Option<&str>) -> String {
    let group = if group.is_empty() { "core" } else { group };
    match namespace {
        Some(ns) => format!("/{group}/{resource}/{ns}/"),
        None => format!("/{group}/{resource}/"),
    }
}

/// What a write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum EventType {
    /// The key did not exist before.
    Added,
    /// The key existed and was replaced.
    Modified,
    /// The key was removed.
    Deleted,
}

impl EventType {}

/// One committed change.
#[derive(Debug, Clone)]
pub struct Event {
    /// The revision of this change.
    pub revision: u64,
    /// What happened.
    pub kind: EventType,
    /// The storage key.
    pub key: String,
    /// The new object; for `Deleted`, the last state with `resourceVersion` set to `revision`.
    pub object: Object,
    /// For `Modified` and `Deleted`, the state before the change.
    pub previous: Option<Object>,
}

/// What an update function decides.
#[derive(Debug)]
pub enum Write {
    /// Store this object (its `metadata.resourceVersion` is set by the store).
    Put(Value),
    /// Remove the key.
    Delete,
    /// Change nothing; the current object (if any) is returned.
    Unchanged,
}

/// An update function: given the current object (if any), decide the write.
///
/// It runs with the key locked against other writers, so read-check-write is atomic
/// (the equivalent of etcd's guaranteed update). It must be fast and must not block.
pub type UpdateFn = Box<dyn FnOnce(Option<&Object>) -> Result<Write, ApiError> + Send>;

/// The result of an update.
#[derive(Debug, Clone)]
pub struct Committed {
    /// The event written, or `None` when the function chose [`Write::Unchanged`].
    pub event: Option<Arc<Event>>,
    /// The object now stored (`None` after a delete or an unchanged absent key).
    pub current: Option<Object>,
}

/// A consistent, cheap-to-clone view of every object at one revision.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The revision this view reflects.
    pub revision: u64,
    /// Every object, ordered by key.
    pub objects: imbl::OrdMap<String, Object>,
}

impl Snapshot {
    /// Objects whose key starts with `prefix`, in key order, starting after `after` if given.
    pub fn range<'a>(
        &'a self,
        prefix: &'a str,
        after: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a String, &'a Object)> + 'a {
        use std::ops::Bound;
        let start = match after {
            Some(key) if key >= prefix => Bound::Excluded(key.to_string()),
            _ => Bound::Included(prefix.to_string()),
        };
        self.objects
            .range((start, Bound::Unbounded))
            .take_while(move |(k, _)| k.starts_with(prefix))
    }
}

/// A live feed of events after a revision, as returned by [`Storage::watch`].
pub struct WatchFeed {
    /// Events already committed after the requested revision, oldest first.
    pub backlog: Vec<Arc<Event>>,
    /// Events committed from now on. A lagging receiver (`RecvError::Lagged`) must end the watch.
    pub live: tokio::sync::broadcast::Receiver<Arc<Event>>,
}

/// Why a storage operation failed below the API level.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Opening the data directory failed.
    #[error("opening storage at {path}: {source}")]
    Open {
        /// The data directory.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The data directory is used by another running server.
    #[error("data directory {path} is in use by another korral apiserver (lock file {lock})")]
    Locked {
        /// The data directory.
        path: String,
        /// The lock file.
        lock: String,
    },
    /// Recovering the journal failed.
    #[error("recovering storage from {path}: {message}")]
    Recover {
        /// The file being read.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// The storage every API handler works against.
pub trait Storage: Send + Sync + 'static {
    /// The revision of the latest committed write.
    fn revision(&self) -> u64;

    /// The oldest revision a watch can resume from (exclusive): watching from a revision
    /// below this answers 410 Gone.
    #[cfg(test)]
    fn oldest_resumable(&self) -> u64;

    /// The current object at `key`.
    fn get(&self, key: &str) -> Option<Object>;

    /// A consistent view of all objects.
    fn snapshot(&self) -> Snapshot;

    /// Whether some object's key starts with `prefix` (cheaper than a snapshot for a hot
    /// path that usually finds nothing).
    fn any_under(&self, prefix: &str) -> bool;

    /// Atomically read-decide-write one key. The returned future resolves once the write is
    /// durable (for durable storage: fsynced) and visible to readers and watchers.
    fn update(
        &self,
        key: String,
        decide: UpdateFn,
    ) -> BoxFuture<'static, Result<Committed, ApiError>>;

    /// Events with a revision greater than `after`, then live ones.
    ///
    /// Fails with 410 `Expired` when `after` is older than the retained history.
    fn watch(&self, after: u64) -> Result<WatchFeed, ApiError>;

    /// Stops accepting writes and releases what the store holds (for durable storage: commits
    /// the queued writes, then releases the data directory lock). Later writes fail with 503.
    /// Calling it twice is harmless.
    fn close(&self) -> BoxFuture<'static, ()>;
}
