//! Storage that lives only in memory: fast, and empty after every restart.

use std::sync::Mutex;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::core::{Core, State};
use super::{Committed, DEFAULT_HISTORY, Object, Snapshot, Storage, UpdateFn, WatchFeed};
use crate::error::ApiError;

/// An in-memory [`Storage`]: writes are applied and visible as soon as `update` is called.
///
/// Revisions start at 1 for the empty store (the first write gets revision 2).
#[derive(Debug)]
pub struct MemoryStorage {
    core: Core,
    /// Serializes writers (update functions run under it, outside the state lock).
    writers: Mutex<()>,
}

impl MemoryStorage {
    /// An empty store retaining [`DEFAULT_HISTORY`] events for watch resumption.
    pub fn new() -> Self {
        Self::with_history(DEFAULT_HISTORY)
    }

    /// An empty store retaining the last `history` events for watch resumption.
    pub fn with_history(history: usize) -> Self {
        Self {
            core: Core::new(State::empty(history)),
            writers: Mutex::new(()),
        }
    }
}

impl Default for MemoryStorage {
    fn default() -> Self {
        Self::new()
    }
}

impl Storage for MemoryStorage {
    fn close(&self) -> BoxFuture<'static, ()> {
        futures::future::ready(()).boxed()
    }

    fn revision(&self) -> u64 {
        self.core.revision()
    }

    #[cfg(test)]
    fn oldest_resumable(&self) -> u64 {
        self.core.oldest_resumable()
    }

    fn get(&self, key: &str) -> Option<Object> {
        self.core.get(key)
    }

    fn snapshot(&self) -> Snapshot {
        self.core.snapshot()
    }

    fn any_under(&self, prefix: &str) -> bool {
        self.core.any_under(prefix)
    }

    fn update(
        &self,
        key: String,
        decide: UpdateFn,
    ) -> BoxFuture<'static, Result<Committed, ApiError>> {
        futures::future::ready(self.core.update_now(&self.writers, key, decide)).boxed()
    }

    fn watch(&self, after: u64) -> Result<WatchFeed, ApiError> {
        self.core.watch(after)
    }
}

#[cfg(test)]
mod tests {
    use super::super::core::conformance;
    use super::*;

    #[tokio::test]
    async fn put_get_delete_unchanged() {
        conformance::put_get_delete_unchanged(&MemoryStorage::new()).await;
    }

    #[tokio::test]
    async fn revisions_are_monotonic_and_stamped() {
        conformance::revisions_are_monotonic_and_stamped(&MemoryStorage::new()).await;
    }

    #[tokio::test]
    async fn failed_update_writes_nothing() {
        conformance::failed_update_writes_nothing(&MemoryStorage::new()).await;
    }

    #[tokio::test]
    async fn snapshot_is_consistent_and_ranged() {
        conformance::snapshot_is_consistent_and_ranged(&MemoryStorage::new()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_read_modify_write_is_atomic() {
        let store = std::sync::Arc::new(MemoryStorage::new());
        conformance::concurrent_read_modify_write_is_atomic(store).await;
    }

    #[tokio::test]
    async fn watch_backlog_and_live() {
        conformance::watch_backlog_and_live(&MemoryStorage::new()).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn update_function_may_read_the_store() {
        let store = std::sync::Arc::new(MemoryStorage::new());
        conformance::update_function_may_read_the_store(store).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn watch_has_no_gap_under_concurrent_writes() {
        let store = std::sync::Arc::new(MemoryStorage::new());
        conformance::watch_has_no_gap_under_concurrent_writes(store).await;
    }

    #[tokio::test]
    async fn expired_watch_is_410() {
        conformance::expired_watch_is_410(&MemoryStorage::with_history(5)).await;
    }

    #[tokio::test]
    async fn watch_from_current_revision_works_on_empty_store() {
        let store = MemoryStorage::with_history(0);
        let rev = store.revision();
        assert_eq!(store.oldest_resumable(), rev);
        let feed = store.watch(rev).expect("watch from now");
        assert!(feed.backlog.is_empty());
        conformance::put(&store, "/core/configmaps/ns/a", serde_json::json!({})).await;
        assert_eq!(store.oldest_resumable(), store.revision());
        assert!(store.watch(store.revision()).is_ok());
        assert_eq!(store.watch(rev).map(|_| ()).map_err(|e| e.code), Err(410));
    }
}
