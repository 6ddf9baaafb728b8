//! The controller builder and its run loop.
//!
//! A [`Controller`] reconciles one primary type `K`. Events come from sources: the primary
//! type's informer (each event enqueues the object's own key), owned types
//! ([`Controller::owns`]: each event enqueues the object's controller owner when it is a `K`)
//! and any other [`Source`] with a [`Handler`] ([`Controller::watches`]): a cache informer
//! ([`Kind`]) or a channel of external events ([`Channel`]). [`Predicate`]s filter the events
//! of each informer source.
//!
//! Keys go through a [`WorkQueue`] (deduplication, one reconcile per key at a time, backoff,
//! requeue-after) to at most [`Controller::max_concurrent_reconciles`] workers.
//!
//! # Failures, backoff and the error policy
//!
//! A transient error is retried with a per-key backoff ([`Controller::backoff`]; by default
//! controller-runtime's 5 ms doubling to 1000 s), shaped by what the API server answered
//! ([`RetryHint`](crate::reconcile::RetryHint)): a 429 is never retried before its Retry-After,
//! a 409 conflict is retried promptly (the next reconcile re-reads the object), 500/503 back
//! off exponentially. A success resets the key's backoff. [`Controller::error_policy`] can
//! override this per error, as kube-runtime's `error_policy` does.
//!
//! # How many reconciles at once
//!
//! [`Controller::max_concurrent_reconciles`] defaults to 1, as in controller-runtime: simple,
//! and enough when reconciles are cheap and the API server answers in microseconds (the
//! embedded test server). On a real cluster every reconcile waits on round trips of a few
//! milliseconds, so a single worker leaves the operator mostly idle: with N objects changing
//! at once, throughput grows roughly linearly with workers until the API server's client-side
//! or server-side rate limits (or the reconcile's own CPU work) become the bound. Guidance:
//!
//! - 1 for controllers of few objects, or whose reconciles are not safe to run for two keys at
//!   once (the same key is never reconciled twice at once, whatever the setting);
//! - 2–4 for typical operators of tens to hundreds of objects on a real cluster;
//! - more (8–16) only for controllers of thousands of objects with slow external calls, and
//!   watch 429s (`workqueue_retries_total`) and the API server's load when raising it.
//!
//! Reconciles of different keys run in parallel, so shared state in the context must be
//! thread-safe; the cache is. Each worker
//! reads the object from the cache and calls the reconcile function with it. A key whose object
//! is no longer in the cache (deleted) is skipped: objects that need cleanup carry a finalizer,
//! so they stay in the cache with a deletion timestamp and are reconciled until the finalizer is
//! removed. The `controller_runtime_*` and `workqueue_*` series of the controller are kept in
//! the metrics [`Registry`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::{ConfigMap, Secret};
//! use korral_runtime::cache::{Cache, Scope};
//! use korral_runtime::controller::Controller;
//! use korral_runtime::reconcile::{Action, ReconcileResult};
//!
//! async fn reconcile(cm: Arc<ConfigMap>, _ctx: Arc<()>) -> ReconcileResult {
//!     let _ = cm;
//!     Ok(Action::done())
//! }
//!
//! # async fn example(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let cache = Cache::new(client);
//! Controller::new(cache, "configmaps")
//!     .for_::<ConfigMap>(Scope::All)
//!     .owns::<Secret>()
//!     .max_concurrent_reconciles(4)
//!     .run(reconcile, Arc::new(()), tokio::signal::ctrl_c().map(|_| ()))
//!     .await?;
//! # Ok(())
//! # }
//! # use futures::FutureExt;
//! ```

mod handler;
mod predicate;
mod source;

use std::fmt::{self, Debug};
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use kube::Resource;
use kube::core::NamespaceScope;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{Instrument, debug, info, info_span};

pub use handler::{EnqueueObject, EnqueueOwner, Handler, MapFn};
pub use predicate::{
    Always, And, AnnotationsChanged, BoxPredicate, Custom, GenerationChanged, LabelsChanged, Not,
    Or, Predicate, ResourceVersionChanged,
};
pub use source::{Channel, Kind, Source};

use crate::cache::{Cache, CacheError, Informer, Scope};
use crate::manifests::{Permissions, Rule};
use crate::metrics::{ControllerMetrics, ReconcileOutcome, Registry};
use crate::queue::{
    DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY, QueueConfig, WorkQueue, guard_reconcile, process_with,
    run_workers,
};
use crate::reconcile::{Action, ErrorAction, ObjectRef, ReconcileError, ReconcileResult};

/// A controller's error policy: given the error and the object, what to do with the key.
type ErrorPolicy<K> = Arc<dyn Fn(&ReconcileError, &K) -> ErrorAction + Send + Sync>;

/// Why a controller step failed.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// Getting the informer of a watched type from the cache failed.
    #[error("getting the informer for {what} of controller {controller}")]
    Informer {
        /// The controller.
        controller: String,
        /// Which watch (`primary`, `owned`, ...).
        what: &'static str,
        /// The cache error.
        #[source]
        source: CacheError,
    },
    /// The cache shut down before the primary informer synced.
    #[error("waiting for the cache of controller {controller} to sync")]
    WaitForSync {
        /// The controller.
        controller: String,
        /// The cache error.
        #[source]
        source: CacheError,
    },
}

/// The first step of building a controller: its name and cache; pick the primary type with
/// [`ControllerBuilder::for_`].
#[derive(Debug)]
pub struct ControllerBuilder {
    cache: Cache,
    name: String,
}

impl ControllerBuilder {
    /// Reconciles the namespaced type `K` in `scope` (owned types are watched in the same
    /// scope). Starts (or shares) the informer of `K`.
    pub fn for_<K>(self, scope: Scope) -> Controller<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::Scope: NamespaceScope,
    {
        let informer = self.cache.informer::<K>(scope.clone());
        Controller::with_primary(self.cache, self.name, scope, informer)
    }

    /// Reconciles the cluster-scoped type `K` (owned types are watched in all namespaces).
    pub fn for_cluster<K>(self) -> Controller<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let informer = self.cache.cluster_informer::<K>();
        Controller::with_primary(self.cache, self.name, Scope::All, informer)
    }
}

type SourceTask =
    Box<dyn FnOnce(WorkQueue<ObjectRef>, watch::Receiver<bool>) -> BoxFuture<'static, ()> + Send>;

/// A controller of the primary type `K`; see the [module docs](self).
pub struct Controller<K> {
    cache: Cache,
    name: String,
    scope: Scope,
    primary: Option<Informer<K>>,
    primary_predicate: Option<BoxPredicate<K>>,
    sources: Vec<SourceTask>,
    max_concurrent: usize,
    timeout: Option<Duration>,
    backoff: (Duration, Duration),
    error_policy: Option<ErrorPolicy<K>>,
    registry: Registry,
    error: Option<ControllerError>,
    permissions: Permissions,
}

impl<K> Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("scope", &self.scope)
            .field("sources", &(self.sources.len() + 1))
            .field("max_concurrent", &self.max_concurrent)
            .field("timeout", &self.timeout)
            .field("backoff", &self.backoff)
            .field("error_policy", &self.error_policy.is_some())
            .finish_non_exhaustive()
    }
}

impl Controller<()> {
    /// Starts building the controller `name` (the `controller` label of its metrics) on
    /// `cache`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(cache: Cache, name: impl Into<String>) -> ControllerBuilder {
        ControllerBuilder {
            cache,
            name: name.into(),
        }
    }
}

impl<K> Controller<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn with_primary(
        cache: Cache,
        name: String,
        scope: Scope,
        informer: Result<Informer<K>, CacheError>,
    ) -> Self {
        let (primary, error) = match informer {
            Ok(informer) => (Some(informer), None),
            Err(source) => (
                None,
                Some(ControllerError::Informer {
                    controller: name.clone(),
                    what: "the primary type",
                    source,
                }),
            ),
        };
        Self {
            cache,
            name,
            scope,
            primary,
            primary_predicate: None,
            sources: Vec::new(),
            max_concurrent: 1,
            timeout: None,
            backoff: (DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY),
            error_policy: None,
            registry: Registry::global().clone(),
            error,
            permissions: {
                let mut permissions = Permissions::new();
                permissions.watches::<K>();
                permissions
            },
        }
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cache the controller reads.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// Filters the events of the primary type (several predicates must all pass).
    pub fn for_predicate(mut self, predicate: impl Predicate<K>) -> Self {
        self.primary_predicate = Some(match self.primary_predicate.take() {
            None => Arc::new(predicate),
            Some(existing) => Arc::new(existing.and(predicate)),
        });
        self
    }

    /// Watches the namespaced type `C` (in the primary scope): an event enqueues the object's
    /// controller owner if it is a `K`.
    pub fn owns<C>(self) -> Self
    where
        C: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        C::Scope: NamespaceScope,
    {
        self.owns_with::<C>(Always)
    }

    /// [`Controller::owns`] with a predicate on the events of `C`.
    pub fn owns_with<C>(mut self, predicate: impl Predicate<C>) -> Self
    where
        C: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        C::Scope: NamespaceScope,
    {
        self.permissions.owns::<C>();
        match self.cache.informer::<C>(self.scope.clone()) {
            Ok(informer) => {
                let source = Kind::new(informer).predicate(predicate);
                self.add_source(source, EnqueueOwner::<K>::new());
            }
            Err(source) => self.fail("an owned type", source),
        }
        self
    }

    /// Watches the namespaced type `C` (in the primary scope) through the shared cache, turning
    /// each event into keys with `handler` (typically a [`MapFn`], e.g. from a label of a Pod
    /// to the primary object it belongs to). A failure to get the informer surfaces when the
    /// controller runs, as for [`Controller::owns`].
    pub fn watches_kind<C, H>(self, handler: H) -> Self
    where
        C: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        C::Scope: NamespaceScope,
        H: Handler<C>,
    {
        self.watches_kind_with::<C, H>(Always, handler)
    }

    /// [`Controller::watches_kind`] with a predicate on the events of `C`.
    pub fn watches_kind_with<C, H>(mut self, predicate: impl Predicate<C>, handler: H) -> Self
    where
        C: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        C::Scope: NamespaceScope,
        H: Handler<C>,
    {
        match self.cache.informer::<C>(self.scope.clone()) {
            Ok(informer) => {
                let source = Kind::new(informer).predicate(predicate);
                self.add_source(source, handler);
            }
            Err(source) => self.fail("a watched type", source),
        }
        self
    }

    /// Watches `source`, turning each event into keys with `handler`.
    pub fn watches<T, S, H>(mut self, source: S, handler: H) -> Self
    where
        T: 'static,
        S: Source<T>,
        H: Handler<T>,
    {
        self.add_source(source, handler);
        self
    }

    /// Declares that the reconciler writes the status subresource of `K` (`get`, `update`,
    /// `patch` on `<plural>/status` in the operator's RBAC).
    pub fn writes_status(mut self) -> Self {
        self.permissions.writes_status::<K>();
        self
    }

    /// Declares that the reconciler adds and removes finalizers on `K` (`update` on
    /// `<plural>/finalizers`, `update` and `patch` on `<plural>`).
    pub fn uses_finalizers(mut self) -> Self {
        self.permissions.uses_finalizers::<K>();
        self
    }

    /// Declares that the reconciler records Events (`create`, `patch` on events).
    pub fn records_events(mut self) -> Self {
        self.permissions.records_events();
        self
    }

    /// Declares a permission the reconciler needs beyond what the controller watches and owns
    /// (for example `Rule::new("", ["pods"]).verbs(["list"])` for a reconciler listing Pods
    /// through the API).
    pub fn permission(mut self, rule: Rule) -> Self {
        self.permissions.add(rule);
        self
    }

    /// What this controller needs in the operator's RBAC: what it watches (`get`, `list`,
    /// `watch`), owns (also `create`, `update`, `patch`, `delete`) and declares.
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// How many keys are reconciled at once (default 1, as controller-runtime; 0 counts as 1).
    /// One key is never reconciled twice at once. See the [module docs](self#how-many-reconciles-at-once)
    /// for choosing a value on a real cluster.
    pub fn max_concurrent_reconciles(mut self, max: usize) -> Self {
        self.max_concurrent = max.max(1);
        self
    }

    /// The per-key retry backoff of failed reconciles: `base`, doubling on every consecutive
    /// failure, capped at `max` (default controller-runtime's 5 ms → 1000 s). A `max` below
    /// `base` is raised to `base`; a zero `base` retries failures at once, every time (a hot
    /// loop while an error persists). Conflicts use the same base on a backoff of their own.
    pub fn backoff(mut self, base: Duration, max: Duration) -> Self {
        self.backoff = (base, max.max(base));
        self
    }

    /// Decides, for each failed reconcile, what happens to its key, as kube-runtime's
    /// `error_policy`: `policy(&error, &object)` returns an [`ErrorAction`] or an [`Action`]
    /// (`Action::requeue(d)`: retry after exactly `d`; `Action::await_change()`: not until the
    /// next event). [`ErrorAction::Default`] keeps the controller's handling (backoff shaped by
    /// the server's answer; terminal errors not retried). Called for transient and terminal
    /// errors, timeouts and panics; it must be quick and must not block.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use korral_runtime::{cache::{Cache, Scope}, controller::Controller};
    /// # use korral_runtime::reconcile::{Action, ErrorAction, RetryHint};
    /// # fn example(cache: Cache) {
    /// Controller::new(cache, "configmaps")
    ///     .for_::<ConfigMap>(Scope::All)
    ///     .error_policy(|err, _cm: &ConfigMap| match err.retry_hint() {
    ///         // An external dependency that is down: poll every 30 s, not faster.
    ///         RetryHint::Unavailable(_) => Action::requeue(Duration::from_secs(30)).into(),
    ///         _ => ErrorAction::Default,
    ///     });
    /// # }
    /// ```
    pub fn error_policy<P, R>(mut self, policy: P) -> Self
    where
        P: Fn(&ReconcileError, &K) -> R + Send + Sync + 'static,
        R: Into<ErrorAction>,
    {
        self.error_policy = Some(Arc::new(move |err: &ReconcileError, obj: &K| {
            policy(err, obj).into()
        }));
        self
    }

    /// Cancels a reconcile that runs longer than `timeout` (retried with backoff).
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The metrics registry (default: [`Registry::global`]).
    pub fn metrics_registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    fn add_source<T: 'static, S: Source<T>, H: Handler<T>>(&mut self, source: S, handler: H) {
        for rule in source.permissions() {
            self.permissions.add(rule);
        }
        let handler: Arc<dyn Handler<T>> = Arc::new(handler);
        self.sources.push(Box::new(move |queue, stop| {
            source.into_task(handler, queue, stop)
        }));
    }

    fn fail(&mut self, what: &'static str, source: CacheError) {
        if self.error.is_none() {
            self.error = Some(ControllerError::Informer {
                controller: self.name.clone(),
                what,
                source,
            });
        }
    }

    /// Runs the controller until `shutdown` completes: starts its sources, waits for the
    /// primary informer to sync, then reconciles keys with `reconcile(object, ctx)`.
    ///
    /// On shutdown no new reconcile starts; the ones in flight finish before this returns (drop
    /// the future to cancel them, as the manager does after its graceful timeout).
    pub async fn run<Ctx, F, Fut>(
        self,
        reconcile: F,
        ctx: Arc<Ctx>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), ControllerError>
    where
        Ctx: Send + Sync + 'static,
        F: Fn(Arc<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReconcileResult> + Send + 'static,
    {
        if let Some(error) = self.error {
            return Err(error);
        }
        let Some(primary) = self.primary else {
            // Unreachable: a missing primary informer always comes with an error.
            return Ok(());
        };
        let name = self.name;
        let metrics = self.registry.controller(&name);
        metrics.set_max_concurrent(self.max_concurrent);
        let queue: WorkQueue<ObjectRef> = WorkQueue::with_config(
            QueueConfig::new(name.clone())
                .backoff(self.backoff.0, self.backoff.1)
                .metrics(Arc::new(metrics.clone())),
        );

        let (stop, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        let mut primary_source = Kind::new(primary.clone());
        if let Some(predicate) = self.primary_predicate {
            primary_source = primary_source.predicate(predicate);
        }
        let primary_handler: Arc<dyn Handler<K>> = Arc::new(EnqueueObject);
        tasks.spawn(primary_source.into_task(primary_handler, queue.clone(), stop_rx.clone()));
        for source in self.sources {
            tasks.spawn(source(queue.clone(), stop_rx.clone()));
        }
        info!(controller = %name, workers = self.max_concurrent, "starting controller");

        let mut shutdown = pin!(shutdown);
        let synced = tokio::select! {
            () = &mut shutdown => None,
            synced = primary.wait_synced() => Some(synced),
        };
        let result = match synced {
            None => Ok(()),
            Some(Err(source)) => Err(ControllerError::WaitForSync {
                controller: name.clone(),
                source,
            }),
            Some(Ok(())) => {
                let worker = Worker {
                    name: name.clone(),
                    primary,
                    reconcile: Arc::new(reconcile),
                    ctx,
                    metrics,
                    queue: queue.clone(),
                    timeout: self.timeout,
                    error_policy: self.error_policy,
                };
                let worker = Arc::new(worker);
                let mut workers = pin!(run_workers(
                    queue.clone(),
                    self.max_concurrent,
                    move |key: ObjectRef| {
                        let worker = Arc::clone(&worker);
                        async move { worker.reconcile_key(key).await }
                    }
                ));
                tokio::select! {
                    () = &mut workers => {}
                    () = &mut shutdown => {
                        info!(controller = %name, "controller stopping, waiting for reconciles in flight");
                        queue.shut_down_now();
                        workers.await;
                    }
                }
                Ok(())
            }
        };
        queue.shut_down_now();
        stop.send_replace(true);
        while tasks.join_next().await.is_some() {}
        info!(controller = %name, "controller stopped");
        result
    }
}

struct Worker<K, F, Ctx> {
    name: String,
    primary: Informer<K>,
    reconcile: Arc<F>,
    ctx: Arc<Ctx>,
    metrics: ControllerMetrics,
    queue: WorkQueue<ObjectRef>,
    timeout: Option<Duration>,
    error_policy: Option<ErrorPolicy<K>>,
}

fn outcome(result: &ReconcileResult) -> ReconcileOutcome {
    match result {
        Ok(Action::Done) => ReconcileOutcome::Success,
        Ok(Action::Requeue) => ReconcileOutcome::Requeue,
        Ok(Action::RequeueAfter(_)) => ReconcileOutcome::RequeueAfter,
        Err(ReconcileError::Transient(_)) => ReconcileOutcome::Error,
        Err(ReconcileError::Terminal(_)) => ReconcileOutcome::TerminalError,
    }
}

impl<K, F, Fut, Ctx> Worker<K, F, Ctx>
where
    K: Resource + Clone + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ReconcileResult> + Send + 'static,
    Ctx: Send + Sync + 'static,
{
    async fn reconcile_key(&self, key: ObjectRef) {
        let Some(object) = self.primary.get(&key) else {
            debug!(controller = %self.name, %key, "object not in the cache (deleted), skipping");
            self.queue.forget(&key);
            return;
        };
        let span = info_span!("reconcile", controller = %self.name, %key);
        let _active = self.metrics.active_worker();
        let started = Instant::now();
        let run = (self.reconcile)(Arc::clone(&object), Arc::clone(&self.ctx));
        let result = guard_reconcile(self.timeout, run).instrument(span).await;
        self.metrics
            .reconcile_finished(outcome(&result), started.elapsed());
        let on_error = match (&result, &self.error_policy) {
            (Err(err), Some(policy)) => policy(err, &object),
            _ => ErrorAction::Default,
        };
        process_with(&self.queue, &key, result, on_error).await;
    }
}
