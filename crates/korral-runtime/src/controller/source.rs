//! Event sources: where a controller's events come from.

use std::collections::HashSet;
use std::fmt::Debug;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube::Resource;
use tokio::sync::{broadcast, mpsc, watch};
use tracing::{debug, warn};

use super::handler::Handler;
use super::predicate::{Always, BoxPredicate, Predicate};
use crate::cache::{CacheEvent, EventKind, Informer};
use crate::manifests::{READ_VERBS, Rule};
use crate::queue::WorkQueue;
use crate::reconcile::ObjectRef;

/// A source of events of type `T` for [`Controller::watches`](super::Controller::watches).
pub trait Source<T>: Send + 'static {
    /// The task feeding the keys `handler` makes of each event into `queue` until `stop` turns
    /// `true`.
    fn into_task(
        self,
        handler: Arc<dyn Handler<T>>,
        queue: WorkQueue<ObjectRef>,
        stop: watch::Receiver<bool>,
    ) -> BoxFuture<'static, ()>;

    /// The permissions reading this source needs (for the operator's RBAC manifests): `get`,
    /// `list`, `watch` on the type of a [`Kind`]; nothing by default.
    fn permissions(&self) -> Vec<Rule> {
        Vec::new()
    }
}

/// The events of a cache informer, filtered by predicates. Once the informer has synced, every
/// cached object is handed to the handler as if just added (so nothing listed before the
/// controller started is missed); then each change event is. After lagging behind the event
/// stream, every cached object is handed over again.
pub struct Kind<T> {
    informer: Informer<T>,
    predicate: Option<BoxPredicate<T>>,
    reads: Rule,
}

impl<T> Debug for Kind<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kind")
            .field("informer", &self.informer)
            .finish_non_exhaustive()
    }
}

impl<T: Resource<DynamicType = ()> + Clone + Send + Sync + 'static> Kind<T> {
    /// The events of `informer`, unfiltered.
    pub fn new(informer: Informer<T>) -> Self {
        Self {
            informer,
            predicate: None,
            reads: Rule::of::<T>().verbs(READ_VERBS),
        }
    }

    /// Adds a predicate; several predicates must all pass.
    pub fn predicate(mut self, predicate: impl Predicate<T>) -> Self {
        self.predicate = Some(match self.predicate.take() {
            None => Arc::new(predicate),
            Some(existing) => Arc::new(existing.and(predicate)),
        });
        self
    }
}

/// Enqueues the keys of `handler` for `event` (and for the previous object of a change, so
/// that a changed owner or mapping releases its old target too).
pub(crate) fn enqueue_event<T: 'static>(
    handler: &dyn Handler<T>,
    queue: &WorkQueue<ObjectRef>,
    event: &CacheEvent<T>,
) {
    let mut keys: HashSet<ObjectRef> = handler.requests(&event.object).into_iter().collect();
    if let Some(previous) = &event.previous {
        keys.extend(handler.requests(previous));
    }
    for key in keys {
        queue.add(key);
    }
}

impl<T: Resource + Clone + Send + Sync + 'static> Source<T> for Kind<T> {
    fn permissions(&self) -> Vec<Rule> {
        vec![self.reads.clone()]
    }

    fn into_task(
        self,
        handler: Arc<dyn Handler<T>>,
        queue: WorkQueue<ObjectRef>,
        mut stop: watch::Receiver<bool>,
    ) -> BoxFuture<'static, ()> {
        let predicate: BoxPredicate<T> = self.predicate.unwrap_or_else(|| Arc::new(Always));
        let informer = self.informer;
        Box::pin(async move {
            let mut events = informer.subscribe();
            let replay = |informer: &Informer<T>| {
                for object in informer.list() {
                    let event = CacheEvent {
                        kind: EventKind::Added,
                        object,
                        previous: None,
                    };
                    if predicate.evaluate(&event) {
                        enqueue_event(handler.as_ref(), &queue, &event);
                    }
                }
            };
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                synced = informer.wait_synced() => {
                    if synced.is_err() {
                        return;
                    }
                }
            }
            replay(&informer);
            loop {
                let received = tokio::select! {
                    biased;
                    _ = stop.wait_for(|s| *s) => return,
                    received = events.recv() => received,
                };
                match received {
                    Ok(event) => {
                        if predicate.evaluate(&event) {
                            enqueue_event(handler.as_ref(), &queue, &event);
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        warn!(
                            ?informer,
                            missed, "source lagged behind the cache, replaying it"
                        );
                        replay(&informer);
                    }
                    Err(broadcast::error::RecvError::Closed) => {
                        debug!(?informer, "cache events closed, source stopped");
                        return;
                    }
                }
            }
        })
    }
}

/// External events from a channel (a periodic trigger, a webhook, another system): each
/// received value goes through the handler (typically a [`MapFn`](super::MapFn)). The source
/// ends when every sender is dropped.
#[derive(Debug)]
pub struct Channel<T> {
    receiver: mpsc::Receiver<T>,
}

impl<T> Channel<T> {
    /// A source reading `receiver`.
    pub fn new(receiver: mpsc::Receiver<T>) -> Self {
        Self { receiver }
    }
}

impl<T: Send + 'static> Source<T> for Channel<T> {
    fn into_task(
        self,
        handler: Arc<dyn Handler<T>>,
        queue: WorkQueue<ObjectRef>,
        mut stop: watch::Receiver<bool>,
    ) -> BoxFuture<'static, ()> {
        let mut receiver = self.receiver;
        Box::pin(async move {
            loop {
                let received = tokio::select! {
                    biased;
                    _ = stop.wait_for(|s| *s) => return,
                    received = receiver.recv() => received,
                };
                let Some(value) = received else {
                    debug!("channel source closed");
                    return;
                };
                for key in handler.requests(&value) {
                    queue.add(key);
                }
            }
        })
    }
}
