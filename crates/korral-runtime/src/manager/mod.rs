//! The manager: owns a client, the shared caches, controllers and other runnables, and runs
//! them in order.
//!
//! [`Manager::run`] starts, in this order: the metrics server (`/metrics`, plain HTTP, or HTTPS
//! behind TokenReview/SubjectAccessReview with [`ManagerBuilder::secure_metrics`]) and the probe
//! server (`/healthz`, `/readyz`; `/readyz` fails until the caches have synced), the servers
//! added with [`Manager::add_server`] (webhook servers: the API server may call them while the
//! caches list, as controller-runtime starts its webhooks first), the caches (and waits for them
//! to sync), the runnables that do not need leadership, then leader election (if configured)
//! and, once leading, the runnables that need it (controllers do). Without leader election every
//! runnable starts at once after the caches.
//!
//! When the shutdown future completes, it stops everything in reverse: runnables are told to
//! stop and given the graceful timeout (default 30 s) to finish what is in flight (a controller
//! finishes its reconciles in flight), then the lease is released, the caches and the servers
//! stop. A lost lease, or a runnable failing, stops the manager the same way and [`Manager::run`]
//! returns the error.
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use korral_runtime::cache::Scope;
//! use korral_runtime::controller::Controller;
//! use korral_runtime::manager::Manager;
//! use korral_runtime::reconcile::{Action, ReconcileResult};
//!
//! async fn reconcile(_cm: Arc<ConfigMap>, _ctx: Arc<()>) -> ReconcileResult {
//!     Ok(Action::done())
//! }
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let mut manager = Manager::from_env()
//!     .await?
//!     .metrics_bind_address(":8080")?
//!     .health_probe_bind_address(":8081")?
//!     .build()?;
//! let controller = Controller::new(manager.cache().clone(), "configmaps")
//!     .for_::<ConfigMap>(Scope::All);
//! manager.add_controller(controller, reconcile, Arc::new(()));
//! manager.run(async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(())
//! # }
//! ```

mod signals;

pub use signals::shutdown_signal;

use std::fmt::{self, Debug};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::Resource;
use kube::{Client, CustomResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tracing::{error, info, warn};

use crate::cache::{Cache, CacheError, Informer, Scope};
use crate::client::Client as CachedClient;
use crate::controller::Controller;
use crate::leader::{LeaderElectionConfig, LeaderElectionError, LeaderElector};
use crate::manifests::{Manifests, Rule};
use crate::metrics::{
    AddCheckError, HealthChecks, MetricsAuth, MetricsTls, Registry, ServeError, ServerHandle,
    serve_metrics, serve_metrics_secure, serve_probes,
};
use crate::reconcile::{BoxError, ReconcileResult};

/// The default graceful shutdown timeout.
pub const DEFAULT_GRACEFUL_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a manager step failed.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// Building a client from the environment (kubeconfig, `KUBECONFIG`, in-cluster) failed.
    #[error("creating a Kubernetes client from the environment")]
    CreateClient(#[source] kube::Error),
    /// A bind address could not be parsed.
    #[error("parsing bind address {address:?}")]
    ParseBindAddress {
        /// The address given.
        address: String,
        /// The parse error.
        #[source]
        source: std::net::AddrParseError,
    },
    /// Registering the cache readiness check failed.
    #[error("adding the readiness check of the caches")]
    AddReadyCheck(#[source] AddCheckError),
    /// Starting the metrics server failed.
    #[error("starting the metrics server")]
    StartMetricsServer(#[source] ServeError),
    /// Starting the probe server failed.
    #[error("starting the health probe server")]
    StartProbeServer(#[source] ServeError),
    /// The caches did not sync.
    #[error("waiting for the caches to sync")]
    WaitForCacheSync(#[source] CacheError),
    /// Leader election failed (the lease was lost, or the configuration is invalid).
    #[error("running leader election")]
    LeaderElection(#[source] LeaderElectionError),
    /// A runnable returned an error.
    #[error("running {name}")]
    Runnable {
        /// The runnable's name.
        name: String,
        /// Its error.
        #[source]
        source: BoxError,
    },
    /// A runnable panicked.
    #[error("running a runnable: it panicked")]
    RunnablePanicked,
    /// Runnables were still running when the graceful timeout ran out; they were cancelled.
    #[error("stopping the runnables: still running after the graceful timeout of {0:?}")]
    GracefulShutdown(Duration),
}

/// Parses a controller-runtime style bind address: `:8080` (all interfaces), `127.0.0.1:8080`,
/// or `0` (disabled, `None`).
pub fn parse_bind_address(address: &str) -> Result<Option<SocketAddr>, ManagerError> {
    let address = address.trim();
    if address == "0" || address.is_empty() {
        return Ok(None);
    }
    let full = if address.starts_with(':') {
        format!("0.0.0.0{address}")
    } else {
        address.to_owned()
    };
    full.parse()
        .map(Some)
        .map_err(|source| ManagerError::ParseBindAddress {
            address: address.to_owned(),
            source,
        })
}

/// The shutdown signal handed to a runnable: completes when the manager stops.
pub type StopSignal = BoxFuture<'static, ()>;

type StartFn = Box<dyn FnOnce(StopSignal) -> BoxFuture<'static, Result<(), BoxError>> + Send>;

/// When a runnable starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Before the caches sync (servers).
    BeforeCaches,
    /// Once the caches synced.
    AfterCaches,
    /// Once the caches synced and this manager leads.
    Leading,
}

struct Runnable {
    name: String,
    stage: Stage,
    start: StartFn,
}

/// Builds a [`Manager`]; from [`Manager::builder`] or [`Manager::from_env`].
#[derive(Clone)]
pub struct ManagerBuilder {
    client: Client,
    metrics_addr: Option<SocketAddr>,
    metrics_tls: Option<MetricsTls>,
    probe_addr: Option<SocketAddr>,
    leader_election: Option<LeaderElectionConfig>,
    graceful_timeout: Duration,
    registry: Option<Registry>,
}

impl Debug for ManagerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("metrics_addr", &self.metrics_addr)
            .field("metrics_tls", &self.metrics_tls)
            .field("probe_addr", &self.probe_addr)
            .field("leader_election", &self.leader_election)
            .field("graceful_timeout", &self.graceful_timeout)
            .finish_non_exhaustive()
    }
}

impl ManagerBuilder {
    /// Serves `/metrics` on `addr` (`None`, the default, disables it; port 0 picks a port).
    pub fn metrics_addr(mut self, addr: Option<SocketAddr>) -> Self {
        self.metrics_addr = addr;
        self
    }

    /// [`ManagerBuilder::metrics_addr`] from a string such as `:8080` (`0` disables).
    pub fn metrics_bind_address(self, address: &str) -> Result<Self, ManagerError> {
        Ok(self.metrics_addr(parse_bind_address(address)?))
    }

    /// Serves `/metrics` over HTTPS with `tls` and only to callers the API server
    /// authenticates (TokenReview) and authorizes for `get` on `/metrics` (SubjectAccessReview),
    /// reviewed through the manager's client: kubebuilder v4's `--metrics-secure`. Without this
    /// call (the default) metrics are plain HTTP and open.
    pub fn secure_metrics(mut self, tls: MetricsTls) -> Self {
        self.metrics_tls = Some(tls);
        self
    }

    /// Serves `/healthz` and `/readyz` on `addr` (`None`, the default, disables it).
    pub fn probe_addr(mut self, addr: Option<SocketAddr>) -> Self {
        self.probe_addr = addr;
        self
    }

    /// [`ManagerBuilder::probe_addr`] from a string such as `:8081` (`0` disables).
    pub fn health_probe_bind_address(self, address: &str) -> Result<Self, ManagerError> {
        Ok(self.probe_addr(parse_bind_address(address)?))
    }

    /// Runs the runnables that need leadership only while holding this lease.
    pub fn leader_election(mut self, config: LeaderElectionConfig) -> Self {
        self.leader_election = Some(config);
        self
    }

    /// How long runnables get to finish on shutdown (default 30 s).
    pub fn graceful_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_timeout = timeout;
        self
    }

    /// The metrics registry (default: [`Registry::global`]).
    pub fn metrics_registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// The manager, with a new cache on the client.
    pub fn build(self) -> Result<Manager, ManagerError> {
        let cache = Cache::new(self.client.clone());
        let health = HealthChecks::new();
        let synced = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&synced);
        let readiness_cache = cache.clone();
        health
            .add_readyz("caches", move || {
                if flag.load(Ordering::SeqCst) && readiness_cache.is_synced() {
                    Ok(())
                } else {
                    Err("caches not synced".to_owned())
                }
            })
            .map_err(ManagerError::AddReadyCheck)?;
        let registry = self.registry.unwrap_or_else(|| Registry::global().clone());
        let cached_client =
            match CachedClient::with_metrics(self.client.clone(), cache.clone(), &registry) {
                Ok(client) => client,
                Err(err) => {
                    // Another manager registered them in this registry: count without them.
                    info!(error = %err, "the cached client's metrics are not registered");
                    CachedClient::new(self.client.clone(), cache.clone())
                }
            };
        Ok(Manager {
            cached_client,
            client: self.client,
            cache,
            registry,
            health,
            caches_synced: synced,
            metrics_addr: self.metrics_addr,
            metrics_tls: self.metrics_tls,
            probe_addr: self.probe_addr,
            leader_election: self.leader_election,
            graceful_timeout: self.graceful_timeout,
            runnables: Vec::new(),
            manifests: Manifests::new(),
        })
    }
}

/// Runs controllers and other runnables on shared caches; see the [module docs](self).
pub struct Manager {
    client: Client,
    cache: Cache,
    cached_client: CachedClient,
    registry: Registry,
    health: HealthChecks,
    caches_synced: Arc<AtomicBool>,
    metrics_addr: Option<SocketAddr>,
    metrics_tls: Option<MetricsTls>,
    probe_addr: Option<SocketAddr>,
    leader_election: Option<LeaderElectionConfig>,
    graceful_timeout: Duration,
    runnables: Vec<Runnable>,
    manifests: Manifests,
}

impl Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.runnables.iter().map(|r| r.name.as_str()).collect();
        f.debug_struct("Manager")
            .field("runnables", &names)
            .field("metrics_addr", &self.metrics_addr)
            .field("probe_addr", &self.probe_addr)
            .field("graceful_timeout", &self.graceful_timeout)
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A builder for a manager using `client`. Metrics and probe servers are off and leader
    /// election is off until configured.
    pub fn builder(client: Client) -> ManagerBuilder {
        ManagerBuilder {
            client,
            metrics_addr: None,
            metrics_tls: None,
            probe_addr: None,
            leader_election: None,
            graceful_timeout: DEFAULT_GRACEFUL_TIMEOUT,
            registry: None,
        }
    }

    /// A builder with a client from the environment: `KUBECONFIG` or `~/.kube/config`, else
    /// the in-cluster service account.
    pub async fn from_env() -> Result<ManagerBuilder, ManagerError> {
        let client = Client::try_default()
            .await
            .map_err(ManagerError::CreateClient)?;
        Ok(Self::builder(client))
    }

    /// The client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The shared cache (build controllers on it).
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The client to hand to reconcilers: reads from the shared cache where the type is cached,
    /// writes to the API server (see [`crate::client`]). Its clones share one count of the
    /// requests sent ([`CachedClient::request_counts`]), also served as the metrics
    /// `korral_client_requests_total{verb}` and `korral_client_cache_reads_total{verb}` of the
    /// manager's registry (unless another manager registered them there first).
    pub fn cached_client(&self) -> &CachedClient {
        &self.cached_client
    }

    /// Caches the namespaced type `K` on `scope` (starts or shares its informer) so the cached
    /// client reads it from memory, though no controller watches it. The manager waits for it
    /// to sync before starting controllers.
    pub fn cache_type<K>(&self, scope: Scope) -> Result<Informer<K>, CacheError>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        K::Scope: kube::core::NamespaceScope,
    {
        self.cache.informer::<K>(scope)
    }

    /// The metrics registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The health and readiness checks served by the probe server (add your own).
    pub fn health(&self) -> &HealthChecks {
        &self.health
    }

    /// Declares that this operator serves the custom resource `K`: its CRD is part of the
    /// operator's [manifests](crate::manifests) (it is not installed by the manager).
    pub fn declare_crd<K: CustomResourceExt>(&mut self) {
        self.manifests.crd::<K>();
    }

    /// Declares a permission the operator needs besides those of its controllers (for a
    /// runnable that is not a controller, say).
    pub fn declare_permission(&mut self, rule: Rule) {
        self.manifests.permissions_mut().add(rule);
    }

    /// The CRDs and permissions declared so far (see [`crate::manifests`]).
    pub fn manifests(&self) -> &Manifests {
        &self.manifests
    }

    /// The declared manifests, to add to (the webhook server records its webhooks here).
    pub fn manifests_mut(&mut self) -> &mut Manifests {
        &mut self.manifests
    }

    /// Adds a runnable: `start(stop)` runs until `stop` completes (it should then return
    /// soon). With `needs_leader`, it only starts once this manager leads.
    pub fn add_runnable<F, Fut>(&mut self, name: impl Into<String>, needs_leader: bool, start: F)
    where
        F: FnOnce(StopSignal) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        let stage = if needs_leader {
            Stage::Leading
        } else {
            Stage::AfterCaches
        };
        self.push_runnable(name.into(), stage, start);
    }

    /// Adds a server (a webhook server): it starts before the caches sync and needs no
    /// leadership, so the API server can call it while the operator's caches list objects
    /// (which may need its conversion webhook). It runs until `stop` completes.
    pub fn add_server<F, Fut>(&mut self, name: impl Into<String>, start: F)
    where
        F: FnOnce(StopSignal) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        self.push_runnable(name.into(), Stage::BeforeCaches, start);
    }

    fn push_runnable<F, Fut>(&mut self, name: String, stage: Stage, start: F)
    where
        F: FnOnce(StopSignal) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), BoxError>> + Send + 'static,
    {
        self.runnables.push(Runnable {
            name,
            stage,
            start: Box::new(move |stop| start(stop).boxed()),
        });
    }

    /// Adds a controller (it needs leadership), reporting to the manager's registry.
    pub fn add_controller<K, Ctx, F, Fut>(
        &mut self,
        controller: Controller<K>,
        reconcile: F,
        ctx: Arc<Ctx>,
    ) where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
        Ctx: Send + Sync + 'static,
        F: Fn(Arc<K>, Arc<Ctx>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ReconcileResult> + Send + 'static,
    {
        self.manifests
            .permissions_mut()
            .merge(controller.permissions());
        let name = format!("controller {}", controller.name());
        let controller = controller.metrics_registry(self.registry.clone());
        self.add_runnable(name, true, move |stop| async move {
            controller
                .run(reconcile, ctx, stop)
                .await
                .map_err(BoxError::from)
        });
    }

    /// Runs everything until `shutdown` completes, a runnable fails or the lease is lost; see
    /// the [module docs](self) for the order.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), ManagerError> {
        let mut shutdown = pin!(shutdown);
        let (servers_stop, servers_stop_rx) = watch::channel(false);
        let mut servers: Vec<ServerHandle> = Vec::new();
        if let Some(addr) = self.metrics_addr {
            let server = match &self.metrics_tls {
                None => serve_metrics(addr, self.registry.clone(), servers_stop_rx.clone()).await,
                Some(tls) => {
                    serve_metrics_secure(
                        addr,
                        self.registry.clone(),
                        tls,
                        Some(MetricsAuth::new(self.client.clone())),
                        servers_stop_rx.clone(),
                    )
                    .await
                }
            }
            .map_err(ManagerError::StartMetricsServer)?;
            info!(
                addr = %server.local_addr(),
                secure = self.metrics_tls.is_some(),
                "metrics server started"
            );
            servers.push(server);
        }
        if let Some(addr) = self.probe_addr {
            let server = serve_probes(addr, self.health.clone(), servers_stop_rx.clone())
                .await
                .map_err(ManagerError::StartProbeServer)?;
            info!(addr = %server.local_addr(), "health probe server started");
            servers.push(server);
        }

        let result = run_started(
            &self.cache,
            &self.caches_synced,
            self.client,
            self.registry,
            self.leader_election,
            self.graceful_timeout,
            self.runnables,
            shutdown.as_mut(),
        )
        .await;

        self.cache.shutdown();
        servers_stop.send_replace(true);
        for server in servers {
            server.wait().await;
        }
        match &result {
            Ok(()) => info!("manager stopped"),
            Err(err) => error!(error = %err, "manager stopped with an error"),
        }
        result
    }
}

type ElectionTask = JoinHandle<Result<(), LeaderElectionError>>;

/// Waits for `task` if there is one, forever otherwise.
async fn election_ended(task: &mut Option<ElectionTask>) -> Result<(), ManagerError> {
    match task {
        Some(handle) => match handle.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => Err(ManagerError::LeaderElection(err)),
            Err(_) => Err(ManagerError::RunnablePanicked),
        },
        None => std::future::pending().await,
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_started(
    cache: &Cache,
    caches_synced: &AtomicBool,
    client: Client,
    registry: Registry,
    leader_election: Option<LeaderElectionConfig>,
    graceful_timeout: Duration,
    runnables: Vec<Runnable>,
    mut shutdown: std::pin::Pin<&mut (impl Future<Output = ()> + Send)>,
) -> Result<(), ManagerError> {
    let (stop, stop_rx) = watch::channel(false);
    let stop_signal = move || -> StopSignal {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
        .boxed()
    };
    let mut tasks: JoinSet<(String, Result<(), BoxError>)> = JoinSet::new();
    let (servers, runnables): (Vec<Runnable>, Vec<Runnable>) = runnables
        .into_iter()
        .partition(|r| r.stage == Stage::BeforeCaches);
    for runnable in servers {
        spawn_runnable(&mut tasks, runnable, stop_signal());
    }

    info!("waiting for the caches to sync");
    let synced: Result<bool, ManagerError> = loop {
        tokio::select! {
            () = &mut shutdown => break Ok(false),
            synced = cache.wait_for_sync() => {
                break synced.map(|()| true).map_err(ManagerError::WaitForCacheSync);
            }
            Some(joined) = tasks.join_next(), if !tasks.is_empty() => match joined {
                Ok((name, Ok(()))) => info!(runnable = %name, "runnable finished"),
                Ok((name, Err(source))) => break Err(ManagerError::Runnable { name, source }),
                Err(_) => break Err(ManagerError::RunnablePanicked),
            },
        }
    };
    if !matches!(synced, Ok(true)) {
        // Stopped (or failed) before the caches synced: the servers stop too.
        stop.send_replace(true);
        let _ = tokio::time::timeout(graceful_timeout, async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        tasks.abort_all();
        return synced.map(|_| ());
    }
    caches_synced.store(true, Ordering::SeqCst);
    info!("caches synced");

    let (leader_runnables, others): (Vec<Runnable>, Vec<Runnable>) = runnables
        .into_iter()
        .partition(|r| r.stage == Stage::Leading);
    for runnable in others {
        spawn_runnable(&mut tasks, runnable, stop_signal());
    }

    let (election_stop, election_stop_rx) = watch::channel(false);
    let mut election: Option<ElectionTask> = None;
    let mut pending_leader = Some(leader_runnables);
    let mut leading = watch::channel(true).1;
    if let Some(config) = leader_election {
        let lease = config.lease_name.clone();
        let status_registry = registry.clone();
        let elector = LeaderElector::new(client, config)
            .map_err(ManagerError::LeaderElection)?
            .on_status(move |leader| status_registry.leader_status(&lease, leader));
        leading = elector.subscribe();
        let mut stop_rx = election_stop_rx;
        election = Some(tokio::spawn(elector.run(async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        })));
    }

    let outcome: Result<(), ManagerError> = loop {
        if pending_leader.is_some() && *leading.borrow() {
            info!("starting the runnables that need leadership");
            for runnable in pending_leader.take().into_iter().flatten() {
                spawn_runnable(&mut tasks, runnable, stop_signal());
            }
        }
        tokio::select! {
            () = &mut shutdown => {
                info!("manager shutting down");
                break Ok(());
            }
            ended = election_ended(&mut election) => {
                election = None;
                match ended {
                    Ok(()) => continue,
                    Err(err) => break Err(err),
                }
            }
            changed = leading.changed(), if pending_leader.is_some() => {
                if changed.is_err() {
                    // The elector is gone; its task reports why.
                    pending_leader = None;
                }
            }
            Some(joined) = tasks.join_next(), if !tasks.is_empty() => match joined {
                Ok((name, Ok(()))) => info!(runnable = %name, "runnable finished"),
                Ok((name, Err(source))) => break Err(ManagerError::Runnable { name, source }),
                Err(_) => break Err(ManagerError::RunnablePanicked),
            },
        }
    };

    // Stop in reverse: runnables (with the graceful timeout), then leader election.
    stop.send_replace(true);
    let drained = tokio::time::timeout(graceful_timeout, async {
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok((name, Ok(()))) => info!(runnable = %name, "runnable stopped"),
                Ok((name, Err(err))) => {
                    warn!(runnable = %name, error = %err, "runnable stopped with an error")
                }
                Err(_) => warn!("runnable panicked while stopping"),
            }
        }
    })
    .await;
    let mut outcome = outcome;
    if drained.is_err() {
        warn!(timeout = ?graceful_timeout, "runnables still running after the graceful timeout, cancelling them");
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        if outcome.is_ok() {
            outcome = Err(ManagerError::GracefulShutdown(graceful_timeout));
        }
    }
    election_stop.send_replace(true);
    if let Some(handle) = election {
        match handle.await {
            Ok(Ok(())) | Err(_) => {}
            Ok(Err(err)) => {
                if outcome.is_ok() {
                    outcome = Err(ManagerError::LeaderElection(err));
                }
            }
        }
    }
    outcome
}

fn spawn_runnable(
    tasks: &mut JoinSet<(String, Result<(), BoxError>)>,
    runnable: Runnable,
    stop: StopSignal,
) {
    info!(runnable = %runnable.name, "starting runnable");
    let name = runnable.name;
    let run = (runnable.start)(stop);
    tasks.spawn(async move { (name, run.await) });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses() -> Result<(), ManagerError> {
        assert_eq!(
            parse_bind_address(":8080")?,
            Some(SocketAddr::from(([0, 0, 0, 0], 8080)))
        );
        assert_eq!(
            parse_bind_address("127.0.0.1:9")?,
            Some(SocketAddr::from(([127, 0, 0, 1], 9)))
        );
        assert_eq!(parse_bind_address("0")?, None);
        assert!(parse_bind_address("nonsense").is_err());
        Ok(())
    }
}
