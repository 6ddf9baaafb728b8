//! The work queue between event handlers and reconcilers, with controller-runtime / client-go
//! semantics, and the workers that drain it.
//!
//! A [`WorkQueue`] holds at most one pending request per key:
//!
//! - [`add`](WorkQueue::add) makes the key ready now. A key already waiting is not queued twice.
//!   A key being processed is marked *dirty* and queued once more when [`done`](WorkQueue::done)
//!   is called, so two workers never hold the same key.
//! - [`add_after`](WorkQueue::add_after) schedules the key; if it is already scheduled, the
//!   earliest time wins; if it is already waiting (ready, or dirty while processing), nothing
//!   changes. [`add`](WorkQueue::add) on a scheduled key makes it ready now and cancels the
//!   schedule.
//! - [`add_rate_limited`](WorkQueue::add_rate_limited) schedules the key after a per-key
//!   exponential backoff (5 ms, 10 ms, 20 ms … capped at 1000 s by default);
//!   [`retry`](WorkQueue::retry) does the same shaped by the server's answer (never before a
//!   429's Retry-After; conflicts promptly, on their own short backoff);
//!   [`forget`](WorkQueue::forget) resets it.
//! - [`get`](WorkQueue::get) waits for the next ready key (first in, first out) and marks it
//!   processing until [`done`](WorkQueue::done).
//!
//! Scheduled keys become ready lazily: at their due time if a [`get`](WorkQueue::get) is waiting,
//! otherwise at the next operation on the queue (including [`len`](WorkQueue::len)). Their queue
//! latency is still measured from the due time. Time is [`tokio::time`], so tests can run with
//! paused time.
//!
//! [`process`] applies a reconciler's [`ReconcileResult`] to its key, and [`run_workers`] /
//! [`run_reconcilers`] run handlers with bounded concurrency until the queue is shut down.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::reconcile::{Action, ErrorAction, ReconcileError, ReconcileResult, RetryHint};

/// The first retry delay of [`WorkQueue::add_rate_limited`] (controller-runtime's default).
pub const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(5);

/// The longest retry delay of [`WorkQueue::add_rate_limited`] (controller-runtime's default).
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(1000);

/// A delay so long it means "never" for practical purposes; used when `now + delay` overflows.
const FAR_FUTURE: Duration = Duration::from_secs(86_400 * 365 * 30);

/// What a [`WorkQueue`] key must be: a cheap, hashable, thread-safe value such as
/// [`ObjectRef`](crate::reconcile::ObjectRef). Implemented for every such type.
pub trait QueueKey: Clone + Eq + Hash + Send + Sync + 'static {}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> QueueKey for K {}

/// Hooks for the work queue metrics; every method defaults to doing nothing.
///
/// The metrics module implements this to export controller-runtime's names (labelled with the
/// queue's [`name`](WorkQueue::name)). The hooks are called with the queue's internal lock held:
/// keep them cheap and non-blocking, and do not call back into the queue from them.
pub trait QueueMetrics: Send + Sync + 'static {
    /// A key became pending (ready now, or dirty while processing): `workqueue_adds_total`.
    /// Adds of a key that was already pending are not counted.
    fn on_add(&self) {}

    /// The number of ready keys changed to `depth`: `workqueue_depth`.
    fn on_depth(&self, depth: usize) {
        let _ = depth;
    }

    /// A key was handed to a worker `latency` after it became pending:
    /// `workqueue_queue_duration_seconds`.
    fn on_queue_latency(&self, latency: Duration) {
        let _ = latency;
    }

    /// A worker finished a key it held for `duration`: `workqueue_work_duration_seconds`.
    fn on_work_duration(&self, duration: Duration) {
        let _ = duration;
    }

    /// A key was re-added with backoff: `workqueue_retries_total`.
    fn on_retry(&self) {}
}

/// [`QueueMetrics`] that records nothing (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopMetrics;

impl QueueMetrics for NoopMetrics {}

/// How to build a [`WorkQueue`]: its name, backoff and metrics hooks.
#[derive(Clone)]
pub struct QueueConfig {
    /// The queue's name (by convention the controller's name), for logs and metric labels.
    pub name: String,
    /// The first retry delay of [`WorkQueue::add_rate_limited`]; it doubles on every failure.
    pub base_delay: Duration,
    /// The longest retry delay of [`WorkQueue::add_rate_limited`].
    pub max_delay: Duration,
    /// The metrics hooks.
    pub metrics: Arc<dyn QueueMetrics>,
}

impl QueueConfig {
    /// The default configuration with this name.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the retry backoff: `base`, doubling on every failure, capped at `max`.
    #[must_use]
    pub fn backoff(mut self, base: Duration, max: Duration) -> Self {
        self.base_delay = base;
        self.max_delay = max;
        self
    }

    /// Sets the metrics hooks.
    #[must_use]
    pub fn metrics(mut self, metrics: Arc<dyn QueueMetrics>) -> Self {
        self.metrics = metrics;
        self
    }
}

impl Default for QueueConfig {
    /// No name, 5 ms doubling to 1000 s, no metrics.
    fn default() -> Self {
        Self {
            name: String::new(),
            base_delay: DEFAULT_BASE_DELAY,
            max_delay: DEFAULT_MAX_DELAY,
            metrics: Arc::new(NoopMetrics),
        }
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("base_delay", &self.base_delay)
            .field("max_delay", &self.max_delay)
            .finish_non_exhaustive()
    }
}

/// The retry delay after `failures` earlier failures: `base * 2^failures`, at most `max`.
fn backoff_delay(base: Duration, max: Duration, failures: u32) -> Duration {
    2u32.checked_pow(failures)
        .and_then(|factor| base.checked_mul(factor))
        .map_or(max, |delay| delay.min(max))
}

/// Whether the queue still accepts keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Running,
    /// [`WorkQueue::shut_down`]: hand out what is pending, accept nothing new.
    Draining,
    /// [`WorkQueue::shut_down_now`]: hand out nothing more.
    Stopped,
}

/// Whom to wake after releasing the lock.
#[derive(Debug, Clone, Copy, Default)]
struct Wake {
    /// A key became ready: wake one waiting `get`.
    one: bool,
    /// The earliest schedule or the mode changed: wake every waiting `get` to look again.
    all: bool,
}

impl Wake {
    fn merge(self, other: Wake) -> Wake {
        Wake {
            one: self.one || other.one,
            all: self.all || other.all,
        }
    }
}

struct State<K> {
    /// Ready keys, oldest first. Every one of them is in `dirty` and none is in `processing`.
    ready: VecDeque<K>,
    /// Pending keys (ready, or to be re-queued when their processing is done), with the time
    /// they became pending.
    dirty: HashMap<K, Instant>,
    /// Keys held by a worker, with the time they were handed out.
    processing: HashMap<K, Instant>,
    /// Scheduled keys: when, and the tie-breaking sequence number in `timers`. A key is never
    /// both scheduled and dirty.
    scheduled: HashMap<K, (Instant, u64)>,
    /// The schedule, earliest first.
    timers: BTreeMap<(Instant, u64), K>,
    next_seq: u64,
    /// Consecutive failures per key, for the backoff.
    failures: HashMap<K, u32>,
    /// Consecutive conflicts per key, for the conflicts' own backoff.
    conflicts: HashMap<K, u32>,
    mode: Mode,
}

impl<K: QueueKey> State<K> {
    fn new() -> Self {
        Self {
            ready: VecDeque::new(),
            dirty: HashMap::new(),
            processing: HashMap::new(),
            scheduled: HashMap::new(),
            timers: BTreeMap::new(),
            next_seq: 0,
            failures: HashMap::new(),
            conflicts: HashMap::new(),
            mode: Mode::Running,
        }
    }

    /// Makes `key` pending as of `at`, unless it already is.
    fn make_dirty(&mut self, key: K, at: Instant, metrics: &dyn QueueMetrics) -> Wake {
        if self.dirty.contains_key(&key) {
            return Wake::default();
        }
        metrics.on_add();
        self.dirty.insert(key.clone(), at);
        if self.processing.contains_key(&key) {
            // Re-queued by `done`.
            return Wake::default();
        }
        self.ready.push_back(key);
        metrics.on_depth(self.ready.len());
        Wake {
            one: true,
            all: false,
        }
    }

    /// Moves every scheduled key due at `now` to pending, in order of due time.
    fn promote(&mut self, now: Instant, metrics: &dyn QueueMetrics) -> Wake {
        let mut wake = Wake::default();
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let ((due, _), key) = entry.remove_entry();
            self.scheduled.remove(&key);
            wake = wake.merge(self.make_dirty(key, due, metrics));
        }
        wake
    }

    fn unschedule(&mut self, key: &K) {
        if let Some(slot) = self.scheduled.remove(key) {
            self.timers.remove(&slot);
        }
    }

    fn add(&mut self, key: K, now: Instant, metrics: &dyn QueueMetrics) -> Wake {
        if self.mode != Mode::Running {
            return Wake::default();
        }
        let wake = self.promote(now, metrics);
        self.unschedule(&key);
        wake.merge(self.make_dirty(key, now, metrics))
    }

    fn add_after(
        &mut self,
        key: K,
        delay: Duration,
        now: Instant,
        metrics: &dyn QueueMetrics,
    ) -> Wake {
        if delay.is_zero() {
            return self.add(key, now, metrics);
        }
        if self.mode != Mode::Running {
            return Wake::default();
        }
        let wake = self.promote(now, metrics);
        if self.dirty.contains_key(&key) {
            return wake;
        }
        let Some(at) = now
            .checked_add(delay)
            .or_else(|| now.checked_add(FAR_FUTURE))
        else {
            return wake;
        };
        if let Some(&(existing, seq)) = self.scheduled.get(&key) {
            if existing <= at {
                return wake;
            }
            self.timers.remove(&(existing, seq));
        }
        let slot = (at, self.next_seq);
        self.next_seq = self.next_seq.wrapping_add(1);
        self.scheduled.insert(key.clone(), slot);
        self.timers.insert(slot, key);
        let earliest = self.timers.first_key_value().map(|(first, _)| *first) == Some(slot);
        wake.merge(Wake {
            one: false,
            all: earliest,
        })
    }
}

struct Inner<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    config: QueueConfig,
}

/// A work queue of keys with deduplication, delays and per-key backoff; see the
/// [module documentation](self) for the rules.
///
/// Cloning is cheap and gives another handle to the same queue.
pub struct WorkQueue<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for WorkQueue<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for WorkQueue<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkQueue")
            .field("name", &self.inner.config.name)
            .finish_non_exhaustive()
    }
}

impl<K: QueueKey> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: QueueKey> WorkQueue<K> {
    /// An unnamed queue with the default backoff (5 ms doubling to 1000 s) and no metrics.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A queue built from `config`.
    pub fn with_config(config: QueueConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State::new()),
                notify: Notify::new(),
                config,
            }),
        }
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        // The state is consistent between statements that can panic (only metrics hooks can),
        // so a poisoned lock is still usable.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn metrics(&self) -> &dyn QueueMetrics {
        self.inner.config.metrics.as_ref()
    }

    fn wake(&self, wake: Wake) {
        if wake.all {
            self.inner.notify.notify_waiters();
        }
        if wake.one {
            self.inner.notify.notify_one();
        }
    }

    /// Queues `key` now. A key already waiting is not queued twice; a key being processed is
    /// queued again once, when it is [`done`](Self::done); a scheduled key becomes ready now.
    /// Ignored after shutdown.
    pub fn add(&self, key: K) {
        let wake = self.lock().add(key, Instant::now(), self.metrics());
        self.wake(wake);
    }

    /// Queues `key` after `delay` (now if `delay` is zero). If the key is already scheduled, the
    /// earliest time wins; if it is already waiting, nothing changes. Ignored after shutdown.
    pub fn add_after(&self, key: K, delay: Duration) {
        let wake = self
            .lock()
            .add_after(key, delay, Instant::now(), self.metrics());
        self.wake(wake);
    }

    /// Queues `key` after its backoff delay (`base * 2^retries`, capped) and counts one more
    /// retry for it. Ignored after shutdown. Same as [`retry`](Self::retry) with
    /// [`RetryHint::Other`].
    pub fn add_rate_limited(&self, key: K) {
        self.retry(key, RetryHint::Other);
    }

    /// Queues `key` for another attempt after a failure, counting one more retry for it, with
    /// a delay shaped by `hint` (see [`RetryHint`]):
    ///
    /// - [`Other`](RetryHint::Other): the per-key backoff, `base * 2^failures` capped at the
    ///   maximum;
    /// - [`Throttled`](RetryHint::Throttled) / [`Unavailable`](RetryHint::Unavailable): the
    ///   same backoff, but never shorter than the server's Retry-After when it gave one;
    /// - [`Conflict`](RetryHint::Conflict): promptly, on a backoff of its own
    ///   (`base * 2^consecutive conflicts`), so a conflict after a run of server errors is not
    ///   held back by their backoff, and a conflict that keeps happening still backs off.
    ///
    /// Ignored after shutdown.
    pub fn retry(&self, key: K, hint: RetryHint) {
        let config = &self.inner.config;
        let wake = {
            let mut state = self.lock();
            if state.mode != Mode::Running {
                return;
            }
            let counter = match hint {
                RetryHint::Conflict => state.conflicts.entry(key.clone()).or_insert(0),
                _ => state.failures.entry(key.clone()).or_insert(0),
            };
            let backoff = backoff_delay(config.base_delay, config.max_delay, *counter);
            *counter = counter.saturating_add(1);
            let delay = match hint {
                RetryHint::Throttled(Some(at_least)) | RetryHint::Unavailable(Some(at_least)) => {
                    backoff.max(at_least)
                }
                _ => backoff,
            };
            self.metrics().on_retry();
            state.add_after(key, delay, Instant::now(), self.metrics())
        };
        self.wake(wake);
    }

    /// Queues `key` after exactly `delay` (now if zero) as a failed attempt: one more retry is
    /// counted, so the backoff keeps growing for the next [`retry`](Self::retry). This is how an
    /// error policy's [`ErrorAction::RetryAfter`] is applied. Ignored after shutdown.
    pub fn retry_after(&self, key: K, delay: Duration) {
        let wake = {
            let mut state = self.lock();
            if state.mode != Mode::Running {
                return;
            }
            let failures = state.failures.entry(key.clone()).or_insert(0);
            *failures = failures.saturating_add(1);
            self.metrics().on_retry();
            state.add_after(key, delay, Instant::now(), self.metrics())
        };
        self.wake(wake);
    }

    /// Resets `key`'s backoff (failures and conflicts): its next
    /// [`add_rate_limited`](Self::add_rate_limited) waits the base delay again. Does not remove
    /// the key from the queue.
    pub fn forget(&self, key: &K) {
        let mut state = self.lock();
        state.failures.remove(key);
        state.conflicts.remove(key);
    }

    /// How many times `key` was retried ([`add_rate_limited`](Self::add_rate_limited),
    /// [`retry`](Self::retry), [`retry_after`](Self::retry_after)) since it was last
    /// [forgotten](Self::forget).
    pub fn retries(&self, key: &K) -> u32 {
        let state = self.lock();
        let failures = state.failures.get(key).copied().unwrap_or(0);
        let conflicts = state.conflicts.get(key).copied().unwrap_or(0);
        failures.saturating_add(conflicts)
    }

    /// Waits for the next ready key (oldest first) and marks it processing: no other `get`
    /// returns it until [`done`](Self::done) is called for it.
    ///
    /// Returns `None` once the queue is shut down and nothing is left to hand out: after
    /// [`shut_down`](Self::shut_down), when no key is ready and no key being processed is due
    /// to be re-queued by its `done`; after [`shut_down_now`](Self::shut_down_now), at once.
    /// Cancel-safe: a `get` dropped before it returns takes no key.
    pub async fn get(&self) -> Option<K> {
        loop {
            // Registered before looking at the state, so no wake-up in between is lost.
            let notified = self.inner.notify.notified();
            let deadline = {
                let mut state = self.lock();
                let now = Instant::now();
                let metrics = self.metrics();
                let mut wake = state.promote(now, metrics);
                if let Some(key) = state.ready.pop_front() {
                    let since = state.dirty.remove(&key).unwrap_or(now);
                    state.processing.insert(key.clone(), now);
                    metrics.on_depth(state.ready.len());
                    metrics.on_queue_latency(now.saturating_duration_since(since));
                    // Pass the baton: more keys may be ready, or draining may have just ended.
                    wake.one = !state.ready.is_empty();
                    wake.all |= state.mode == Mode::Draining && state.dirty.is_empty();
                    drop(state);
                    self.wake(wake);
                    return Some(key);
                }
                match state.mode {
                    Mode::Stopped => return None,
                    Mode::Draining if state.dirty.is_empty() => return None,
                    Mode::Running | Mode::Draining => {}
                }
                state.timers.first_key_value().map(|((at, _), _)| *at)
            };
            match deadline {
                Some(at) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Marks `key` as no longer processing. If it was added while processing, it is queued
    /// again now. Calling it for a key that is not processing does nothing.
    pub fn done(&self, key: &K) {
        let wake = {
            let mut state = self.lock();
            let metrics = self.metrics();
            let now = Instant::now();
            let Some(started) = state.processing.remove(key) else {
                tracing::debug!(queue = %self.name(), "done called for a key that is not processing");
                return;
            };
            metrics.on_work_duration(now.saturating_duration_since(started));
            let mut wake = state.promote(now, metrics);
            if state.dirty.contains_key(key) {
                state.ready.push_back(key.clone());
                metrics.on_depth(state.ready.len());
                wake.one = true;
            }
            wake
        };
        self.wake(wake);
    }

    /// The number of keys ready to be handed out now (the `workqueue_depth`); scheduled keys
    /// and keys being processed are not counted.
    pub fn len(&self) -> usize {
        let (len, wake) = {
            let mut state = self.lock();
            let wake = state.promote(Instant::now(), self.metrics());
            (state.ready.len(), wake)
        };
        self.wake(wake);
        len
    }

    /// Whether no key is ready now (see [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts the queue down gracefully: new adds are ignored and scheduled keys are dropped, but
    /// the keys already waiting (ready, or added while processing) are still handed out by
    /// [`get`](Self::get), which returns `None` once they are all taken. Keys being processed
    /// finish normally. Idempotent.
    pub fn shut_down(&self) {
        {
            let mut state = self.lock();
            if state.mode != Mode::Running {
                return;
            }
            state.mode = Mode::Draining;
            state.timers.clear();
            state.scheduled.clear();
        }
        tracing::debug!(queue = %self.name(), "work queue shutting down, draining");
        self.inner.notify.notify_waiters();
    }

    /// Shuts the queue down at once: new adds are ignored, waiting and scheduled keys are
    /// dropped, and [`get`](Self::get) returns `None` from now on. Keys being processed finish
    /// normally (call [`done`](Self::done) as usual) and are not re-queued.
    pub fn shut_down_now(&self) {
        {
            let mut state = self.lock();
            state.mode = Mode::Stopped;
            state.timers.clear();
            state.scheduled.clear();
            state.dirty.clear();
            if !state.ready.is_empty() {
                state.ready.clear();
                self.metrics().on_depth(0);
            }
        }
        tracing::debug!(queue = %self.name(), "work queue shut down");
        self.inner.notify.notify_waiters();
    }

    /// Whether [`shut_down`](Self::shut_down) or [`shut_down_now`](Self::shut_down_now) was
    /// called.
    pub fn is_shutting_down(&self) -> bool {
        self.lock().mode != Mode::Running
    }
}

/// Applies a reconcile `result` for `key` to `queue`, the way controller-runtime does:
///
/// - `Ok(Done)`: [`forget`](WorkQueue::forget) (reset the backoff);
/// - `Ok(Requeue)`: forget, then [`add`](WorkQueue::add);
/// - `Ok(RequeueAfter(d))`: forget, then [`add_after`](WorkQueue::add_after)`(d)`;
/// - `Err(Transient)`: log, then [`retry`](WorkQueue::retry) with the error's
///   [`RetryHint`] (429 waits for its Retry-After, conflicts are retried promptly, others back
///   off exponentially);
/// - `Err(Terminal)`: log, forget, no requeue.
///
/// Call it while `key` is still processing, before [`done`](WorkQueue::done); a requeue then
/// happens once the key is done, never concurrently.
pub async fn process<K: QueueKey + fmt::Display>(
    queue: &WorkQueue<K>,
    key: &K,
    result: ReconcileResult,
) {
    process_with(queue, key, result, ErrorAction::Default).await;
}

/// [`process`] with an error policy's decision `on_error` for a failed `result` (ignored for a
/// successful one): [`ErrorAction::Default`] is [`process`]'s handling;
/// [`ErrorAction::RetryAfter`]`(d)` retries after exactly `d`
/// ([`retry_after`](WorkQueue::retry_after)), whether the error is transient or terminal;
/// [`ErrorAction::AwaitChange`] logs, forgets and does not requeue.
pub async fn process_with<K: QueueKey + fmt::Display>(
    queue: &WorkQueue<K>,
    key: &K,
    result: ReconcileResult,
    on_error: ErrorAction,
) {
    let result = match (result, on_error) {
        (Err(error), ErrorAction::RetryAfter(delay)) => {
            tracing::warn!(
                queue = %queue.name(),
                %key,
                error = %error.cause(),
                ?delay,
                "reconcile failed, retrying when the error policy says"
            );
            queue.retry_after(key.clone(), delay);
            return;
        }
        (Err(error), ErrorAction::AwaitChange) => {
            tracing::warn!(
                queue = %queue.name(),
                %key,
                error = %error.cause(),
                "reconcile failed, the error policy waits for the next change"
            );
            queue.forget(key);
            return;
        }
        (result, _) => result,
    };
    match result {
        Ok(Action::Done) => queue.forget(key),
        Ok(Action::Requeue) => {
            tracing::debug!(queue = %queue.name(), %key, "reconcile asked to requeue");
            queue.forget(key);
            queue.add(key.clone());
        }
        Ok(Action::RequeueAfter(delay)) => {
            tracing::debug!(queue = %queue.name(), %key, ?delay, "reconcile asked to requeue after a delay");
            queue.forget(key);
            queue.add_after(key.clone(), delay);
        }
        Err(ReconcileError::Transient(error)) => {
            let hint = RetryHint::from_error(error.as_ref());
            tracing::warn!(
                queue = %queue.name(),
                %key,
                error = %error,
                retries = queue.retries(key),
                ?hint,
                "reconcile failed, retrying with backoff"
            );
            queue.retry(key.clone(), hint);
        }
        Err(ReconcileError::Terminal(error)) => {
            tracing::error!(
                queue = %queue.name(),
                %key,
                error = %error,
                "reconcile failed with a terminal error, not retrying"
            );
            queue.forget(key);
        }
    }
}

/// Why a reconcile run by [`guard_reconcile`] failed on its own; delivered as a
/// [`ReconcileError::Transient`] cause (so the key is retried with backoff).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkerError {
    /// The reconcile did not finish within the timeout and was cancelled.
    #[error("reconcile timed out after {0:?}")]
    TimedOut(Duration),
    /// The reconcile panicked.
    #[error("reconcile panicked: {0}")]
    Panicked(String),
}

/// Runs a reconcile future with an optional `timeout`, turning a timeout or a panic into a
/// transient [`WorkerError`] instead of losing the key.
pub async fn guard_reconcile<Fut>(timeout: Option<Duration>, reconcile: Fut) -> ReconcileResult
where
    Fut: Future<Output = ReconcileResult>,
{
    let caught = AssertUnwindSafe(reconcile).catch_unwind();
    let outcome = match timeout {
        Some(limit) => match tokio::time::timeout(limit, caught).await {
            Ok(outcome) => outcome,
            Err(_elapsed) => {
                return Err(ReconcileError::transient(WorkerError::TimedOut(limit)));
            }
        },
        None => caught.await,
    };
    outcome.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_owned());
        Err(ReconcileError::transient(WorkerError::Panicked(message)))
    })
}

/// Calls [`WorkQueue::done`] when dropped, so a key is released even if its handler panics or
/// is cancelled.
struct DoneGuard<K: QueueKey> {
    queue: WorkQueue<K>,
    key: K,
}

impl<K: QueueKey> Drop for DoneGuard<K> {
    fn drop(&mut self) {
        self.queue.done(&self.key);
    }
}

/// Pulls keys from `queue` and runs `handler` on each, at most `max_concurrent` at once (0 counts
/// as 1), calling [`done`](WorkQueue::done) after each (also if the handler panics, which is
/// logged). A key is only taken from the queue when a worker is free for it.
///
/// Returns once the queue is shut down, [`get`](WorkQueue::get) returned `None`, and every
/// handler in flight has finished. Dropping the returned future cancels the handlers in flight
/// (their keys are released).
pub async fn run_workers<K, F, Fut>(queue: WorkQueue<K>, max_concurrent: usize, handler: F)
where
    K: QueueKey,
    F: Fn(K) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let handler = Arc::new(handler);
    let slots = Arc::new(Semaphore::new(max_concurrent.max(1)));
    let mut tasks = JoinSet::new();
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            break; // The semaphore is never closed.
        };
        while let Some(joined) = tasks.try_join_next() {
            report_join(queue.name(), joined);
        }
        let Some(key) = queue.get().await else {
            break;
        };
        let guard = DoneGuard {
            queue: queue.clone(),
            key: key.clone(),
        };
        let handler = Arc::clone(&handler);
        tasks.spawn(async move {
            let _permit = permit;
            let _guard = guard;
            handler(key).await;
        });
    }
    while let Some(joined) = tasks.join_next().await {
        report_join(queue.name(), joined);
    }
    tracing::debug!(queue = %queue.name(), "workers stopped");
}

fn report_join(queue: &str, joined: Result<(), tokio::task::JoinError>) {
    if let Err(err) = joined
        && err.is_panic()
    {
        tracing::error!(%queue, "work queue handler panicked");
    }
}

/// [`run_workers`] for reconcilers: runs `reconcile` on each key with at most `max_concurrent`
/// at once, under [`guard_reconcile`] with the optional `timeout`, and applies each result with
/// [`process`].
pub async fn run_reconcilers<K, F, Fut>(
    queue: WorkQueue<K>,
    max_concurrent: usize,
    timeout: Option<Duration>,
    reconcile: F,
) where
    K: QueueKey + fmt::Display,
    F: Fn(K) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ReconcileResult> + Send + 'static,
{
    let results = queue.clone();
    run_workers(queue, max_concurrent, move |key: K| {
        let queue = results.clone();
        let run = reconcile(key.clone());
        async move {
            let result = guard_reconcile(timeout, run).await;
            process(&queue, &key, result).await;
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
    use tokio::time::advance;

    const MS: Duration = Duration::from_millis(1);

    /// `get`, or `None` if nothing is ready within `wait` (paused time makes this instant).
    async fn try_get<K: QueueKey>(queue: &WorkQueue<K>, wait: Duration) -> Option<K> {
        tokio::time::timeout(wait, queue.get()).await.ok().flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn duplicates_collapse_and_order_is_fifo() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("b");
        q.add("a");
        q.add("c");
        q.add("b");
        assert_eq!(q.len(), 3);
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
        assert_eq!(q.get().await, Some("c"));
        assert_eq!(try_get(&q, Duration::from_secs(1)).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn key_added_while_processing_runs_once_after_done() {
        let q = WorkQueue::new();
        q.add("a");
        assert_eq!(q.get().await, Some("a"));
        q.add("a");
        q.add("a");
        // Not handed out again while it is processing.
        assert_eq!(q.len(), 0);
        assert_eq!(try_get(&q, Duration::from_secs(1)).await, None);
        q.done(&"a");
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        assert_eq!(try_get(&q, Duration::from_secs(1)).await, None);
        // `done` for a key that is not processing is harmless.
        q.done(&"a");
        q.done(&"zzz");
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_get_wakes_on_add() {
        let q = WorkQueue::new();
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
        q.add(7u32);
        assert_eq!(waiter.await.ok().flatten(), Some(7));
    }

    #[tokio::test(start_paused = true)]
    async fn never_two_workers_on_one_key_under_load() {
        const KEYS: usize = 50;
        let q: WorkQueue<usize> = WorkQueue::new();
        let in_flight: Arc<Vec<AtomicUsize>> =
            Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
        // Per key: the generation last added, and the generation seen by the last run's start.
        let added: Arc<Vec<AtomicUsize>> =
            Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
        let seen: Arc<Vec<AtomicUsize>> =
            Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
        let overlap = Arc::new(AtomicBool::new(false));
        let runs = Arc::new(AtomicUsize::new(0));

        let workers = tokio::spawn(run_workers(q.clone(), 4, {
            let (in_flight, added, seen, overlap, runs) = (
                in_flight.clone(),
                added.clone(),
                seen.clone(),
                overlap.clone(),
                runs.clone(),
            );
            move |key: usize| {
                let (in_flight, added, seen, overlap, runs) = (
                    in_flight.clone(),
                    added.clone(),
                    seen.clone(),
                    overlap.clone(),
                    runs.clone(),
                );
                async move {
                    if in_flight[key].fetch_add(1, Ordering::SeqCst) != 0 {
                        overlap.store(true, Ordering::SeqCst);
                    }
                    runs.fetch_add(1, Ordering::SeqCst);
                    seen[key].store(added[key].load(Ordering::SeqCst), Ordering::SeqCst);
                    tokio::time::sleep(MS * (key as u32 % 4)).await;
                    tokio::task::yield_now().await;
                    in_flight[key].fetch_sub(1, Ordering::SeqCst);
                }
            }
        }));

        for i in 0..1000 {
            let key = (i * 7) % KEYS;
            added[key].fetch_add(1, Ordering::SeqCst);
            q.add(key);
            if i % 5 == 0 {
                tokio::time::sleep(MS).await;
            } else {
                tokio::task::yield_now().await;
            }
        }
        q.shut_down();
        assert!(workers.await.is_ok());

        assert!(!overlap.load(Ordering::SeqCst), "a key ran on two workers");
        let runs = runs.load(Ordering::SeqCst);
        // Some adds collapsed, and keys were re-run after being added while processing.
        assert!((KEYS + 1..1000).contains(&runs), "{runs} runs");
        for key in 0..KEYS {
            // Every add was followed by a run that started after it.
            assert_eq!(
                seen[key].load(Ordering::SeqCst),
                added[key].load(Ordering::SeqCst),
                "key {key} lost an add"
            );
        }
        assert!(q.is_empty());
    }

    async fn max_active_with(max_concurrent: usize, keys: u32) -> usize {
        let q = WorkQueue::new();
        for k in 0..keys {
            q.add(k);
        }
        q.shut_down();
        let active = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicU32::new(0));
        let (a, p, d) = (active.clone(), peak.clone(), done.clone());
        run_workers(q, max_concurrent, move |_key: u32| {
            let (a, p, d) = (a.clone(), p.clone(), d.clone());
            async move {
                let now = a.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10)).await;
                a.fetch_sub(1, Ordering::SeqCst);
                d.fetch_add(1, Ordering::SeqCst);
            }
        })
        .await;
        assert_eq!(done.load(Ordering::SeqCst), keys);
        peak.load(Ordering::SeqCst)
    }

    #[tokio::test(start_paused = true)]
    async fn max_concurrency_is_reached_and_never_exceeded() {
        assert_eq!(max_active_with(4, 20).await, 4);
        assert_eq!(max_active_with(1, 5).await, 1);
        assert_eq!(max_active_with(0, 5).await, 1);
        assert_eq!(max_active_with(8, 3).await, 3);
    }

    #[tokio::test(start_paused = true)]
    async fn earliest_add_after_wins() {
        let q = WorkQueue::new();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(2));
        q.add_after("a", Duration::from_secs(5));
        advance(Duration::from_secs(2) - MS).await;
        assert_eq!(q.len(), 0);
        advance(MS).await;
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        // The later requests were merged into the earliest one.
        advance(Duration::from_secs(20)).await;
        assert_eq!(q.len(), 0);
        // A delay too long to represent means "practically never", without overflowing.
        q.add_after("z", Duration::MAX);
        assert_eq!(try_get(&q, Duration::from_secs(3600)).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_on_a_waiting_key_changes_nothing() {
        let q = WorkQueue::new();
        q.add("a");
        q.add_after("a", Duration::from_secs(1));
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        advance(Duration::from_secs(5)).await;
        assert_eq!(q.len(), 0);

        // Dirty while processing counts as waiting too.
        q.add("b");
        assert_eq!(q.get().await, Some("b"));
        q.add("b");
        q.add_after("b", Duration::from_secs(1));
        q.done(&"b");
        assert_eq!(q.get().await, Some("b"));
        q.done(&"b");
        advance(Duration::from_secs(5)).await;
        assert_eq!(q.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn add_makes_a_scheduled_key_ready_now_once() {
        let q = WorkQueue::new();
        q.add_after("a", Duration::from_secs(3));
        q.add("a");
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        advance(Duration::from_secs(10)).await;
        assert_eq!(q.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_get_wakes_at_the_due_time() {
        let q = WorkQueue::new();
        let start = Instant::now();
        q.add_after("late", Duration::from_secs(60));
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.get().await.map(|k| (k, Instant::now())) }
        });
        tokio::task::yield_now().await;
        // An earlier schedule made while `get` sleeps is noticed.
        q.add_after("early", Duration::from_secs(2));
        let got = waiter.await.ok().flatten();
        assert_eq!(got, Some(("early", start + Duration::from_secs(2))));
        assert_eq!(q.get().await, Some("late"));
        assert_eq!(Instant::now(), start + Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn scheduled_key_due_while_processing_runs_after_done() {
        let q = WorkQueue::new();
        q.add("a");
        assert_eq!(q.get().await, Some("a"));
        q.add_after("a", Duration::from_secs(1));
        advance(Duration::from_secs(2)).await;
        assert_eq!(q.len(), 0);
        q.done(&"a");
        assert_eq!(q.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_from_5ms_and_caps_at_1000s() {
        let q = WorkQueue::new();
        let mut expected = Vec::new();
        let mut observed = Vec::new();
        for failures in 0..24u32 {
            let want = (Duration::from_millis(5) * 2u32.pow(failures.min(20)))
                .min(Duration::from_secs(1000));
            expected.push(want);
            q.add_rate_limited("k");
            assert_eq!(q.retries(&"k"), failures + 1);
            advance(want - MS).await;
            assert_eq!(q.len(), 0, "ready before {want:?}");
            advance(MS).await;
            assert_eq!(q.len(), 1, "not ready at {want:?}");
            observed.push(want);
            assert_eq!(q.get().await, Some("k"));
            q.done(&"k");
        }
        assert_eq!(observed, expected);
        assert_eq!(
            expected[..4],
            [5 * MS, 10 * MS, 20 * MS, 40 * MS],
            "sequence starts 5, 10, 20, 40 ms"
        );
        assert_eq!(expected[17], Duration::from_millis(655_360));
        assert_eq!(expected[18], Duration::from_secs(1000));
        assert_eq!(expected[23], Duration::from_secs(1000));
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_is_configurable() {
        let q = WorkQueue::with_config(
            QueueConfig::new("custom").backoff(Duration::from_secs(1), Duration::from_secs(4)),
        );
        assert_eq!(q.name(), "custom");
        for want in [1, 2, 4, 4, 4] {
            let start = Instant::now();
            q.add_rate_limited(1u8);
            assert_eq!(q.get().await, Some(1));
            assert_eq!(Instant::now() - start, Duration::from_secs(want));
            q.done(&1);
        }
    }

    #[test]
    fn backoff_never_overflows() {
        let (base, max) = (DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY);
        assert_eq!(backoff_delay(base, max, 0), base);
        for failures in [31, 32, 64, u32::MAX] {
            assert_eq!(backoff_delay(base, max, failures), max);
        }
        assert_eq!(
            backoff_delay(Duration::MAX, Duration::MAX, 1),
            Duration::MAX
        );
    }

    #[tokio::test(start_paused = true)]
    async fn forget_resets_the_backoff() {
        let q = WorkQueue::new();
        for _ in 0..3 {
            q.add_rate_limited("k");
            assert_eq!(q.get().await, Some("k"));
            q.done(&"k");
        }
        assert_eq!(q.retries(&"k"), 3);
        q.forget(&"k");
        assert_eq!(q.retries(&"k"), 0);
        q.add_rate_limited("k");
        advance(4 * MS).await;
        assert_eq!(q.len(), 0);
        advance(MS).await;
        assert_eq!(q.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn process_applies_reconcile_results() {
        let q = WorkQueue::new();
        let key = "k".to_owned();

        // Transient: retried with backoff.
        q.add(key.clone());
        assert_eq!(q.get().await.as_ref(), Some(&key));
        process(&q, &key, Err(ReconcileError::transient("conflict"))).await;
        q.done(&key);
        assert_eq!(q.retries(&key), 1);
        advance(5 * MS).await;
        assert_eq!(q.get().await.as_ref(), Some(&key));

        // Requeue: backoff reset, queued again once done (not before).
        process(&q, &key, Ok(Action::Requeue)).await;
        assert_eq!(q.retries(&key), 0);
        assert_eq!(q.len(), 0);
        q.done(&key);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await.as_ref(), Some(&key));

        // Done: backoff reset, nothing queued.
        process(&q, &key, Err(ReconcileError::transient("again"))).await;
        q.done(&key);
        assert_eq!(q.get().await.as_ref(), Some(&key));
        process(&q, &key, Ok(Action::Done)).await;
        q.done(&key);
        assert_eq!(q.retries(&key), 0);
        assert_eq!(try_get(&q, Duration::from_secs(3600)).await, None);
    }

    fn api_error(code: u16, reason: &str, retry_after_seconds: u32) -> ReconcileError {
        let details = (retry_after_seconds > 0).then(|| kube::core::response::StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes: Vec::new(),
            retry_after_seconds,
        });
        ReconcileError::from(kube::Error::Api(Box::new(kube::core::Status {
            code,
            reason: reason.to_owned(),
            details,
            ..kube::core::Status::default()
        })))
    }

    /// Fails `key` (held by the caller) with `result`, releases it and returns how long it
    /// took to come back.
    async fn delay_of(q: &WorkQueue<&'static str>, result: ReconcileResult) -> Duration {
        process(q, &"k", result).await;
        q.done(&"k");
        let start = Instant::now();
        assert_eq!(q.get().await, Some("k"));
        Instant::now() - start
    }

    #[tokio::test(start_paused = true)]
    async fn throttled_errors_wait_for_retry_after_not_the_backoff() {
        let q = WorkQueue::new();
        q.add("k");
        assert_eq!(q.get().await, Some("k"));
        let throttled = || Err(api_error(429, "TooManyRequests", 1));
        assert_eq!(delay_of(&q, throttled()).await, Duration::from_secs(1));
        assert_eq!(delay_of(&q, throttled()).await, Duration::from_secs(1));
        // Without Retry-After, a 429 backs off like any failure (third failure: 20 ms).
        assert_eq!(
            delay_of(&q, Err(api_error(429, "TooManyRequests", 0))).await,
            20 * MS
        );
        // Once the backoff outgrows the Retry-After, the backoff wins.
        let q = WorkQueue::with_config(
            QueueConfig::new("slow").backoff(Duration::from_secs(2), Duration::from_secs(60)),
        );
        q.add("k");
        assert_eq!(q.get().await, Some("k"));
        assert_eq!(delay_of(&q, throttled()).await, Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn server_errors_back_off_exponentially_and_honour_retry_after() {
        let q = WorkQueue::new();
        q.add("k");
        assert_eq!(q.get().await, Some("k"));
        let mut delays = Vec::new();
        for code in [500, 503, 503, 500, 504] {
            delays.push(delay_of(&q, Err(api_error(code, "x", 0))).await);
        }
        assert_eq!(delays, [5 * MS, 10 * MS, 20 * MS, 40 * MS, 80 * MS]);
        assert_eq!(
            delay_of(&q, Err(api_error(503, "ServiceUnavailable", 3))).await,
            Duration::from_secs(3)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn conflicts_are_retried_promptly_and_back_off_only_among_themselves() {
        let q = WorkQueue::new();
        q.add("k");
        assert_eq!(q.get().await, Some("k"));
        for _ in 0..8 {
            delay_of(&q, Err(api_error(503, "ServiceUnavailable", 0))).await;
        }
        // The server errors grew the backoff to 1.28 s; a conflict is retried after 5 ms.
        assert_eq!(q.retries(&"k"), 8);
        assert_eq!(
            delay_of(&q, Err(api_error(409, "Conflict", 0))).await,
            5 * MS
        );
        // Conflicts that keep coming back off too (no hot loop).
        assert_eq!(
            delay_of(&q, Err(api_error(409, "Conflict", 0))).await,
            10 * MS
        );
        assert_eq!(
            delay_of(&q, Err(api_error(409, "Conflict", 0))).await,
            20 * MS
        );
        // AlreadyExists is a 409 but not a conflict: the ordinary backoff (9th failure).
        assert_eq!(
            delay_of(&q, Err(api_error(409, "AlreadyExists", 0))).await,
            5 * MS * 256
        );
        assert_eq!(q.retries(&"k"), 12);
    }

    #[tokio::test(start_paused = true)]
    async fn success_resets_every_backoff_of_the_key() {
        let q = WorkQueue::new();
        q.add("k");
        assert_eq!(q.get().await, Some("k"));
        for _ in 0..4 {
            delay_of(&q, Err(api_error(503, "ServiceUnavailable", 0))).await;
            delay_of(&q, Err(api_error(409, "Conflict", 0))).await;
        }
        assert_eq!(q.retries(&"k"), 8);
        assert_eq!(delay_of(&q, Ok(Action::Requeue)).await, Duration::ZERO);
        assert_eq!(q.retries(&"k"), 0);
        assert_eq!(delay_of(&q, Err(api_error(500, "x", 0))).await, 5 * MS);
        assert_eq!(
            delay_of(&q, Err(api_error(409, "Conflict", 0))).await,
            5 * MS
        );
    }

    #[tokio::test(start_paused = true)]
    async fn error_actions_override_the_default_handling() {
        let q = WorkQueue::new();
        q.add("k");
        assert_eq!(q.get().await, Some("k"));
        // RetryAfter: exactly the delay, even for a 429 asking for longer; counts a failure.
        let policy = ErrorAction::RetryAfter(Duration::from_millis(250));
        process_with(&q, &"k", Err(api_error(429, "x", 60)), policy).await;
        q.done(&"k");
        let start = Instant::now();
        assert_eq!(q.get().await, Some("k"));
        assert_eq!(Instant::now() - start, Duration::from_millis(250));
        assert_eq!(q.retries(&"k"), 1);
        // A terminal error can be retried by the policy.
        process_with(&q, &"k", Err(ReconcileError::terminal("bad")), policy).await;
        q.done(&"k");
        assert_eq!(try_get(&q, Duration::from_secs(1)).await, Some("k"));
        assert_eq!(q.retries(&"k"), 2);
        // The next default retry continues the grown backoff (third failure: 20 ms).
        assert_eq!(delay_of(&q, Err(api_error(500, "x", 0))).await, 20 * MS);
        // AwaitChange: not retried, backoff reset.
        let wait = ErrorAction::AwaitChange;
        process_with(&q, &"k", Err(ReconcileError::transient("flaky")), wait).await;
        q.done(&"k");
        assert_eq!(q.retries(&"k"), 0);
        assert_eq!(try_get(&q, Duration::from_secs(2000)).await, None);
        // Success ignores the policy's answer.
        q.add("k");
        assert_eq!(q.get().await, Some("k"));
        process_with(&q, &"k", Ok(Action::Done), policy).await;
        q.done(&"k");
        assert_eq!(try_get(&q, Duration::from_secs(2000)).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn terminal_errors_are_not_retried() {
        let q = WorkQueue::new();
        q.add("k");
        assert_eq!(q.get().await, Some("k"));
        process(&q, &"k", Err(ReconcileError::transient("flaky"))).await;
        q.done(&"k");
        assert_eq!(q.get().await, Some("k"));
        process(&q, &"k", Err(ReconcileError::terminal("invalid spec"))).await;
        q.done(&"k");
        assert_eq!(q.retries(&"k"), 0);
        advance(Duration::from_secs(2000)).await;
        assert_eq!(q.len(), 0);
        assert_eq!(try_get(&q, Duration::from_secs(2000)).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn requeue_after_fires_at_the_right_time() {
        let q = WorkQueue::new();
        q.add("k");
        assert_eq!(q.get().await, Some("k"));
        q.add_rate_limited("k"); // a failure to be reset by the success below
        process(&q, &"k", Ok(Action::requeue_after(Duration::from_secs(30)))).await;
        q.done(&"k");
        assert_eq!(q.retries(&"k"), 0);
        // The rate-limited 5 ms request is still the earliest one.
        advance(5 * MS).await;
        assert_eq!(q.get().await, Some("k"));
        let start = Instant::now();
        process(&q, &"k", Ok(Action::requeue_after(Duration::from_secs(30)))).await;
        q.done(&"k");
        advance(Duration::from_secs(30) - MS).await;
        assert_eq!(q.len(), 0);
        advance(MS).await;
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("k"));
        assert_eq!(Instant::now() - start, Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_drains_pending_and_in_flight_work() {
        let q = WorkQueue::new();
        let finished = Arc::new(std::sync::Mutex::new(Vec::new()));
        let workers = tokio::spawn(run_workers(q.clone(), 2, {
            let finished = finished.clone();
            move |key: u32| {
                let finished = finished.clone();
                async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    finished
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(key);
                }
            }
        }));
        for k in 0..5 {
            q.add(k);
        }
        q.add_after(99, Duration::from_secs(3600));
        tokio::time::sleep(Duration::from_millis(500)).await;
        // Keys 0 and 1 are in flight; 0 is added again while it is processing.
        q.add(0);
        q.shut_down();
        assert!(q.is_shutting_down());
        q.add(42); // ignored
        q.add_rate_limited(43); // ignored
        assert!(workers.await.is_ok());
        let mut finished = finished
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        finished.sort_unstable();
        // Everything pending at shutdown ran (0 twice), the scheduled key and later adds did not.
        assert_eq!(finished, [0, 0, 1, 2, 3, 4]);
        assert_eq!(q.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_now_only_finishes_in_flight_work() {
        let q = WorkQueue::new();
        let finished = Arc::new(AtomicUsize::new(0));
        let workers = tokio::spawn(run_workers(q.clone(), 2, {
            let finished = finished.clone();
            move |_key: u32| {
                let finished = finished.clone();
                async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    finished.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
        for k in 0..5 {
            q.add(k);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        q.add(0); // dirty while processing: dropped by shut_down_now
        q.shut_down_now();
        assert_eq!(q.len(), 0);
        assert!(workers.await.is_ok());
        assert_eq!(finished.load(Ordering::SeqCst), 2);
        assert_eq!(q.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn get_returns_none_after_shutdown_when_empty() {
        let q: WorkQueue<u8> = WorkQueue::new();
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(waiter.await.ok().flatten(), None);
        q.add(1);
        q.add_after(2, Duration::from_secs(1));
        assert_eq!(q.len(), 0);
        assert_eq!(q.get().await, None);
    }

    #[derive(Default)]
    struct Recorded {
        adds: AtomicUsize,
        depth: AtomicUsize,
        latency: std::sync::Mutex<Vec<Duration>>,
        work: std::sync::Mutex<Vec<Duration>>,
        retries: AtomicUsize,
    }

    impl QueueMetrics for Recorded {
        fn on_add(&self) {
            self.adds.fetch_add(1, Ordering::SeqCst);
        }
        fn on_depth(&self, depth: usize) {
            self.depth.store(depth, Ordering::SeqCst);
        }
        fn on_queue_latency(&self, latency: Duration) {
            self.latency
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(latency);
        }
        fn on_work_duration(&self, duration: Duration) {
            self.work
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(duration);
        }
        fn on_retry(&self) {
            self.retries.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn metrics_hooks_report_adds_depth_latency_work_and_retries() {
        let metrics = Arc::new(Recorded::default());
        let q = WorkQueue::with_config(QueueConfig::new("m").metrics(metrics.clone()));
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(metrics.adds.load(Ordering::SeqCst), 2);
        assert_eq!(metrics.depth.load(Ordering::SeqCst), 2);
        advance(Duration::from_secs(3)).await;
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(metrics.depth.load(Ordering::SeqCst), 1);
        advance(Duration::from_secs(2)).await;
        q.done(&"a");
        q.add_rate_limited("c");
        assert_eq!(metrics.retries.load(Ordering::SeqCst), 1);
        // A scheduled key's latency counts from its due time, not from when it was noticed.
        advance(Duration::from_secs(1)).await;
        assert_eq!(q.get().await, Some("b"));
        assert_eq!(q.get().await, Some("c"));
        assert_eq!(metrics.adds.load(Ordering::SeqCst), 3);
        assert_eq!(metrics.depth.load(Ordering::SeqCst), 0);
        let latency = metrics
            .latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        assert_eq!(
            latency,
            [
                Duration::from_secs(3),
                Duration::from_secs(6),
                Duration::from_secs(1) - 5 * MS
            ]
        );
        let work = metrics
            .work
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        assert_eq!(work, [Duration::from_secs(2)]);
    }

    #[tokio::test(start_paused = true)]
    async fn reconcilers_time_out_and_survive_panics() {
        let q = WorkQueue::new();
        let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
        let workers = tokio::spawn(run_reconcilers(
            q.clone(),
            2,
            Some(Duration::from_secs(1)),
            {
                let calls = calls.clone();
                move |key: String| {
                    let first = {
                        let mut calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
                        calls.push((key.clone(), Instant::now()));
                        calls.len() == 1
                    };
                    async move {
                        if key == "boom" {
                            panic!("reconcile blew up");
                        }
                        if first {
                            tokio::time::sleep(Duration::from_secs(10)).await;
                        }
                        Ok(Action::Done)
                    }
                }
            },
        ));
        let slow = "slow".to_owned();
        q.add(slow.clone());
        // Timed out after 1 s, retried 5 ms later, then succeeded (which resets the backoff).
        tokio::time::sleep(Duration::from_secs(2)).await;
        let times: Vec<Instant> = calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, at)| *at)
            .collect();
        assert_eq!(times.len(), 2);
        assert_eq!(times[1] - times[0], Duration::from_millis(1005));
        assert_eq!(q.retries(&slow), 0);

        // The panicking key is released and retried with backoff; the workers live on.
        let boom = "boom".to_owned();
        q.add(boom.clone());
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(q.retries(&boom) >= 2);
        q.add(slow.clone());
        tokio::time::sleep(MS).await;
        assert_eq!(
            calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .filter(|(k, _)| *k == slow)
                .count(),
            3
        );
        q.shut_down();
        assert!(workers.await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn guard_reconcile_maps_timeouts_and_panics() {
        let ok = guard_reconcile(None, async { Ok(Action::Requeue) }).await;
        assert!(matches!(ok, Ok(Action::Requeue)));

        let slow = guard_reconcile(Some(Duration::from_secs(2)), async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(Action::Done)
        })
        .await;
        let err = slow.err().map(|e| (e.is_transient(), e.to_string()));
        assert_eq!(err, Some((true, "reconcile timed out after 2s".to_owned())));

        let panicked = guard_reconcile(None, async { panic!("oh no") }).await;
        let err = panicked.err().map(|e| (e.is_transient(), e.to_string()));
        assert_eq!(err, Some((true, "reconcile panicked: oh no".to_owned())));
    }

    #[tokio::test(start_paused = true)]
    async fn run_workers_releases_keys_of_panicking_handlers() {
        let q = WorkQueue::new();
        let runs = Arc::new(AtomicUsize::new(0));
        let workers = tokio::spawn(run_workers(q.clone(), 1, {
            let runs = runs.clone();
            move |_key: u8| {
                let n = runs.fetch_add(1, Ordering::SeqCst);
                async move {
                    assert!(n != 0, "first run panics");
                }
            }
        }));
        q.add(1);
        while runs.load(Ordering::SeqCst) < 1 {
            tokio::time::sleep(MS).await;
        }
        tokio::time::sleep(MS).await;
        // The key is no longer processing: a new add runs it again.
        q.add(1);
        while runs.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(MS).await;
        }
        q.shut_down();
        assert!(workers.await.is_ok());
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }
}
