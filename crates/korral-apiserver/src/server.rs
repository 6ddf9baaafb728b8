//! Starting and stopping the API server: storage, TLS, the accept loop and built-in controllers.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::controllers;
use crate::crd;
use crate::error::ApiError;
use crate::http::{self, State};
use crate::kubeconfig;
use crate::objects::{Objects, WriteOptions};
use crate::registry::Registry;
use crate::storage::{self, DurableStorage, MemoryStorage, Storage};
use crate::tls;

/// Where objects are stored.
#[derive(Debug, Clone)]
pub enum StorageMode {
    /// In memory only: fast, gone when the server stops.
    InMemory,
    /// Durable on disk in this directory.
    Durable(PathBuf),
}

/// How to run the server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where objects are stored.
    pub storage: StorageMode,
    /// Address to listen on (loopback by default).
    pub bind: IpAddr,
    /// Port; 0 picks a free one.
    pub port: u16,
    /// Serve HTTPS with a generated CA (`false` serves plain HTTP).
    pub tls: bool,
    /// Write a kubeconfig for this server here.
    pub kubeconfig: Option<PathBuf>,
    /// Bearer token; a random one when `None`.
    pub token: Option<String>,
    /// Events kept for watch resumption.
    pub history: usize,
    /// Interval between watch bookmarks.
    pub bookmark_interval: Duration,
    /// Simulate the workload controllers a cluster would run (Deployments get
    /// ReplicaSets and Pods, Pods turn Ready, Services get Endpoints, Jobs complete).
    pub simulation: bool,
    /// How long the simulation's pod garbage collector waits, once it finds Pods bound to a
    /// Node that does not exist, before it reads the Node again and deletes them (upstream's
    /// quarantine, 40 s; tests shorten it).
    pub pod_gc_quarantine: Duration,
    /// How requests are authorized once authenticated.
    pub authorization: AuthorizationMode,
    /// Read-only requests in flight at once (upstream's `--max-requests-inflight`, 400); excess
    /// is answered 429. `0` disables the limit.
    pub max_requests_inflight: usize,
    /// Mutating requests in flight at once (upstream's `--max-mutating-requests-inflight`,
    /// 200); excess is answered 429. `0` disables the limit.
    pub max_mutating_requests_inflight: usize,
    /// Open watches one client (one set of credentials) may hold; excess is answered 429.
    /// `0` disables the limit.
    pub max_watches_per_client: usize,
    /// API priority and fairness (upstream's `--enable-priority-and-fairness`, on by
    /// default): requests are classified by FlowSchema and limited by their
    /// PriorityLevelConfiguration, which share the server's concurrency limit,
    /// `max_requests_inflight + max_mutating_requests_inflight` (`0`: unlimited), in place of
    /// the separate read-only and mutating limits. `false` applies those limits instead.
    pub enable_priority_and_fairness: bool,
    /// How long a request may wait in a priority level's queue before it is answered 429
    /// (upstream: a quarter of its 60 s request timeout, 15 s).
    pub flow_control_request_wait_limit: Duration,
    /// How often priority levels' seat limits are adjusted to their recent demand, lending
    /// and borrowing seats (upstream: every 10 s; shorter in tests).
    pub flow_control_borrowing_period: Duration,
    /// How long a watch's client may leave its full send buffer (256 events) untaken before
    /// the watch is closed; the client then resumes from the last resourceVersion it saw.
    pub watch_send_timeout: Duration,
    /// How long a connection may take to send a request's head (and the TLS handshake), and
    /// stay idle between requests, before it is closed.
    pub header_read_timeout: Duration,
    /// Faults to inject on purpose (none by default); changeable at run time through
    /// [`ApiServer::faults`].
    pub faults: crate::faults::FaultConfig,
    /// Admission webhook services reached at a local address rather than through their
    /// Endpoints: `namespace/name:port` → address (a test environment's webhook server). More
    /// can be added at run time through [`ApiServer::webhook_services`].
    pub webhook_services: std::collections::BTreeMap<String, std::net::SocketAddr>,
}

/// How the server authorizes authenticated requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AuthorizationMode {
    /// Every authenticated request is allowed (the default).
    #[default]
    AlwaysAllow,
    /// Requests are checked against Roles, ClusterRoles and their bindings.
    Rbac,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            storage: StorageMode::InMemory,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            tls: true,
            kubeconfig: None,
            token: None,
            history: storage::DEFAULT_HISTORY,
            bookmark_interval: Duration::from_secs(10),
            simulation: false,
            pod_gc_quarantine: crate::simulate::pod_gc::QUARANTINE,
            authorization: AuthorizationMode::AlwaysAllow,
            max_requests_inflight: crate::inflight::DEFAULT_MAX_READONLY,
            max_mutating_requests_inflight: crate::inflight::DEFAULT_MAX_MUTATING,
            max_watches_per_client: crate::inflight::DEFAULT_MAX_WATCHES_PER_CLIENT,
            enable_priority_and_fairness: true,
            flow_control_request_wait_limit: crate::apf::DEFAULT_REQUEST_WAIT_LIMIT,
            flow_control_borrowing_period: crate::apf::BORROWING_PERIOD,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            watch_send_timeout: Duration::from_secs(10),
            faults: crate::faults::FaultConfig::default(),
            webhook_services: Default::default(),
        }
    }
}

impl ServerConfig {
    /// An in-memory server on a random port (what tests want).
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// A durable server storing in `dir`.
    pub fn durable(dir: impl Into<PathBuf>) -> Self {
        Self {
            storage: StorageMode::Durable(dir.into()),
            ..Self::default()
        }
    }
}

/// Default of [`ServerConfig::header_read_timeout`]. hyper applies it to idle keep-alive
/// connections too (the wait for the next request's head), so it is above the 90 s after which
/// kubectl's and kube-rs's connection pools drop idle connections: clients close first, and
/// never send a request on a connection the server is closing.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(95);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Opening or recovering storage failed.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
    /// Generating or loading TLS material failed.
    #[error("preparing TLS: {0}")]
    Tls(#[from] tls::TlsError),
    /// Binding the listening socket failed.
    #[error("listening on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Writing the kubeconfig or the token file failed.
    #[error("writing {path}: {source}")]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Creating the initial namespaces failed.
    #[error("bootstrapping built-in objects: {0}")]
    Bootstrap(crate::error::ApiError),
    /// Preparing the service account token signing key failed.
    #[error(transparent)]
    SigningKey(#[from] crate::auth::token::SigningKeyError),
    /// Plain HTTP (`tls: false`) was asked for on an address other than loopback.
    #[error(
        "refusing to serve plain HTTP on {addr}: without TLS the bearer token and every object would cross the network in clear text (plain HTTP binds to loopback only; enable TLS or bind to 127.0.0.1 / ::1)"
    )]
    PlainHttpNotLoopback {
        /// The address asked for.
        addr: IpAddr,
    },
    /// The fault injection configuration is invalid.
    #[error("fault configuration: {0}")]
    Faults(#[from] crate::faults::FaultConfigError),
}

/// A running API server. Dropping it stops the server.
pub struct ApiServer {
    url: String,
    addr: SocketAddr,
    token: String,
    ca_pem: Option<String>,
    kubeconfig_yaml: String,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    objects: Arc<Objects>,
    faults: crate::faults::Faults,
}

const BUILTIN_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

fn load_or_create_token(dir: &Path) -> Result<String, StartError> {
    let path = dir.join("token");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let token = existing.trim().to_string();
        if !token.is_empty() {
            return Ok(token);
        }
    }
    let token = random_token();
    kubeconfig::write(&path, &token).map_err(|source| StartError::WriteFile {
        path: path.clone(),
        source,
    })?;
    Ok(token)
}

fn random_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

impl ApiServer {
    /// Starts a server; returns once it accepts requests.
    pub async fn start(config: ServerConfig) -> Result<Self, StartError> {
        if !config.tls && !config.bind.is_loopback() {
            return Err(StartError::PlainHttpNotLoopback { addr: config.bind });
        }
        let faults = crate::faults::Faults::new();
        faults.set(config.faults.clone())?;
        let (storage, data_dir): (Arc<dyn Storage>, Option<PathBuf>) = match &config.storage {
            StorageMode::InMemory => (Arc::new(MemoryStorage::with_history(config.history)), None),
            StorageMode::Durable(dir) => {
                let options = storage::DurableOptions {
                    history: config.history,
                    ..storage::DurableOptions::default()
                };
                let open_dir = dir.clone();
                // Recovery reads the whole journal: keep it off the async workers.
                let opened =
                    tokio::task::spawn_blocking(move || DurableStorage::open(&open_dir, options))
                        .await
                        .map_err(|e| {
                            StartError::Bootstrap(crate::error::ApiError::internal(e.to_string()))
                        })??;
                (Arc::new(opened), Some(dir.clone()))
            }
        };
        let registry = Arc::new(Registry::with_builtins());
        // Serve every stored CRD again.
        let snapshot = storage.snapshot();
        let prefix =
            storage::collection_prefix("apiextensions.k8s.io", "customresourcedefinitions", None);
        for (_, obj) in snapshot.range(&prefix, None) {
            crd::register(&registry, obj);
        }
        let objects = Arc::new(
            Objects::new(storage.clone(), registry.clone())
                .with_authorization(config.authorization)
                .with_simulation(config.simulation)
                .with_admission_plugins(crate::builtin_admission::Plugins {
                    // As envtest, the test control plane runs without it; a simulating server
                    // keeps every namespace's `default` ServiceAccount and runs it as a cluster.
                    service_account: config.simulation,
                    storage_protection: config.simulation,
                }),
        );
        for (service, address) in &config.webhook_services {
            objects.webhook_services().insert_key(service, *address);
        }
        bootstrap(&objects).await.map_err(StartError::Bootstrap)?;
        if config.authorization == AuthorizationMode::Rbac {
            crate::auth::bootstrap::ensure(&objects)
                .await
                .map_err(StartError::Bootstrap)?;
        }
        let signer = match &data_dir {
            Some(dir) => crate::auth::TokenSigner::persistent(dir)?,
            None => crate::auth::TokenSigner::ephemeral()?,
        };

        let token = match (&config.token, &data_dir) {
            (Some(t), _) => t.clone(),
            (None, Some(dir)) => load_or_create_token(dir)?,
            (None, None) => random_token(),
        };
        let (tls_material, csr_signer) = if config.tls {
            let hosts = vec![config.bind.to_string()];
            let (material, csr_signer) = match &data_dir {
                Some(dir) => tls::load_or_generate_with_signer(dir, &hosts)?,
                None => tls::generate_with_signer(&hosts)?,
            };
            (Some(material), Some(csr_signer))
        } else {
            (None, None)
        };
        let addr = SocketAddr::new(config.bind, config.port);
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| StartError::Bind { addr, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| StartError::Bind { addr, source })?;
        ensure_kubernetes_service(&objects, addr.port())
            .await
            .map_err(StartError::Bootstrap)?;
        crate::kinds::core::master_endpoints::reconcile(&objects, addr.ip(), addr.port())
            .await
            .map_err(StartError::Bootstrap)?;
        crate::aggregator::front_proxy::publish(
            &objects,
            tls_material.as_ref().map(|m| m.ca_cert_pem.as_str()),
            data_dir.as_deref(),
        )
        .await
        .map_err(StartError::Bootstrap)?;
        let host = match addr.ip() {
            IpAddr::V6(ip) => format!("[{ip}]"),
            IpAddr::V4(ip) => ip.to_string(),
        };
        let scheme = if tls_material.is_some() {
            "https"
        } else {
            "http"
        };
        let url = format!("{scheme}://{host}:{}", addr.port());
        let ca_pem = tls_material.as_ref().map(|m| m.ca_cert_pem.clone());
        let kubeconfig_yaml = kubeconfig::render(&url, ca_pem.as_deref(), &token, "korral");
        if let Some(path) = &config.kubeconfig {
            kubeconfig::write(path, &kubeconfig_yaml).map_err(|source| StartError::WriteFile {
                path: path.clone(),
                source,
            })?;
        }

        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let state = Arc::new(State {
            objects: objects.clone(),
            // Plain HTTP is for loopback use; clients (kubectl) do not send bearer tokens over
            // it, so requests without one are the admin, like upstream's old insecure port.
            auth: Arc::new(
                crate::auth::Auth::new(
                    config.authorization,
                    tls_material.is_some().then(|| token.clone()),
                    signer,
                    objects.clone(),
                )
                .with_client_ca(
                    tls_material
                        .as_ref()
                        .and_then(|m| crate::auth::ClientCa::from_pem(&m.ca_cert_pem)),
                ),
            ),
            address: format!("{host}:{}", addr.port()),
            shutdown: shutdown_rx.clone(),
            bookmark_interval: config.bookmark_interval,
            faults: faults.clone(),
            watch_send_timeout: config.watch_send_timeout,
        });
        let acceptor = match &tls_material {
            Some(m) => Some(tokio_rustls::TlsAcceptor::from(tls::api_server_config(m)?)),
            None => None,
        };
        let apf = config.enable_priority_and_fairness;
        // With priority and fairness, only the per-client watch limit stays.
        let (readonly, mutating) = match apf {
            true => (0, 0),
            false => (
                config.max_requests_inflight,
                config.max_mutating_requests_inflight,
            ),
        };
        let front = Arc::new(Front {
            inflight: crate::inflight::InFlight::new(crate::inflight::Limits {
                readonly,
                mutating,
                watches_per_client: config.max_watches_per_client,
            }),
            flow_control: apf.then(|| {
                crate::apf::FlowControl::start(
                    objects.storage().clone(),
                    crate::apf::Limits {
                        server: config.max_requests_inflight
                            + config.max_mutating_requests_inflight,
                        wait: config.flow_control_request_wait_limit,
                        borrowing_period: config.flow_control_borrowing_period,
                    },
                    shutdown_rx.clone(),
                )
            }),
            header_read_timeout: config.header_read_timeout,
        });
        let tasks = vec![
            tokio::spawn(accept_loop(
                listener,
                acceptor,
                state,
                front,
                shutdown_rx.clone(),
            )),
            tokio::spawn(controllers::run(
                objects.clone(),
                shutdown_rx.clone(),
                match config.simulation {
                    true => Some(crate::simulate::Cluster {
                        ca_bundle: ca_pem.clone(),
                        // Without TLS there is no CA: the signer gets one of its own.
                        signer: match csr_signer {
                            Some(signer) => Some(Arc::new(signer)),
                            None => Some(Arc::new(tls::signing_ca()?)),
                        },
                        pod_gc_quarantine: crate::simulate::pod_gc::Quarantine::new(
                            config.pod_gc_quarantine,
                        ),
                        job_backoffs: Default::default(),
                        events: Default::default(),
                        pod_gc_pods: Default::default(),
                    }),
                    false => None,
                },
            )),
        ];
        tracing::info!(%url, "korral apiserver ready");
        Ok(Self {
            url,
            addr,
            token,
            ca_pem,
            kubeconfig_yaml,
            shutdown: shutdown_tx,
            tasks,
            objects,
            faults,
        })
    }

    /// The base URL, e.g. `https://127.0.0.1:34567`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bearer token clients must send.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The CA certificate (PEM) clients must trust, when serving HTTPS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// A kubeconfig for this server.
    pub fn kubeconfig_yaml(&self) -> &str {
        &self.kubeconfig_yaml
    }

    /// Where webhooks configured by `service` reference are called: services mapped here to a
    /// local address (`namespace/name:port`) are reached there, others through their
    /// Endpoints.
    pub fn webhook_services(&self) -> &crate::admission::ServiceMap {
        self.objects.webhook_services()
    }

    /// Creates `object` as the server itself (no client, so no admission webhooks), or replaces
    /// the stored one of that name; either way through the whole write pipeline (defaults,
    /// validation, built-in admission). For installing manifests in-process (`korral-testenv`).
    pub async fn create_or_replace(&self, object: Value) -> Result<Value, ApiError> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
        let info = self
            .objects
            .registry()
            .by_kind(group, version, &kind)
            .ok_or_else(|| ApiError::bad_request(format!("{api_version} {kind} is not served")))?;
        let name = crate::meta::name(&object).to_string();
        let namespace = info.namespaced.then(|| {
            crate::meta::namespace(&object)
                .unwrap_or("default")
                .to_string()
        });
        let opts = crate::objects::WriteOptions::default();
        match self
            .objects
            .create(&info, namespace.as_deref(), object.clone(), &opts)
            .await
        {
            Ok(written) => Ok((*written.object).clone()),
            Err(e) if e.code == 409 && e.reason == "AlreadyExists" => {
                let mut object = object;
                if let Some(md) = crate::meta::metadata_mut(&mut object) {
                    md.remove("resourceVersion");
                }
                let written = self
                    .objects
                    .update(
                        &info,
                        namespace.as_deref(),
                        &name,
                        object,
                        crate::objects::Part::Main,
                        &opts,
                    )
                    .await?;
                Ok((*written.object).clone())
            }
            Err(e) => Err(e),
        }
    }

    /// The fault injector: change the rules at run time, read what was injected.
    pub fn faults(&self) -> crate::faults::Faults {
        self.faults.clone()
    }

    /// Stops accepting, ends connections and watches, waits for the server's tasks and
    /// closes storage (for durable storage: releases the data directory).
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        for task in std::mem::take(&mut self.tasks) {
            let _ = task.await;
        }
        self.objects.storage().close().await;
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        for task in &self.tasks {
            task.abort();
        }
        // Stops the storage writer; use `shutdown` to also wait until it is released.
        let close = self.objects.storage().close();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(close);
        }
    }
}

async fn bootstrap(objects: &Objects) -> Result<(), crate::error::ApiError> {
    let Some(info) = objects.registry().get("", "v1", "namespaces") else {
        return Err(crate::error::ApiError::internal(
            "namespaces are not registered",
        ));
    };
    for ns in BUILTIN_NAMESPACES {
        if objects.get(&info, None, ns).is_ok() {
            continue;
        }
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match objects
            .create(&info, None, obj, &WriteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    // The system PriorityClasses (upstream's scheduling bootstrap hook).
    if let Some(info) = objects
        .registry()
        .get("scheduling.k8s.io", "v1", "priorityclasses")
    {
        for class in crate::kinds::system_priority_classes() {
            if objects.get(&info, None, crate::meta::name(&class)).is_ok() {
                continue;
            }
            match objects
                .create(&info, None, class, &WriteOptions::default())
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
    }
    // The default ServiceCIDR of the cluster IP range (upstream's default-ServiceCIDR
    // controller): created when missing, then marked Ready.
    if let Some(info) = objects
        .registry()
        .get("networking.k8s.io", "v1", "servicecidrs")
    {
        let range = crate::defaults::ServiceIpAllocator::new().range();
        let cidr = crate::kinds::networking::default_service_cidr(&range);
        let stored = match objects.get(&info, None, "kubernetes") {
            Ok(stored) => stored,
            Err(e) if e.code == 404 => {
                objects
                    .create(&info, None, cidr, &WriteOptions::default())
                    .await?
                    .object
            }
            Err(e) => return Err(e),
        };
        if stored.pointer("/status/conditions").is_none() {
            let mut ready = (*stored).clone();
            ready["status"] =
                crate::kinds::networking::default_service_cidr_status(&crate::meta::now_rfc3339());
            objects
                .update(
                    &info,
                    None,
                    "kubernetes",
                    ready,
                    crate::objects::Part::Status,
                    &WriteOptions::default(),
                )
                .await?;
        }
    }
    // The API priority and fairness configuration (upstream's APF bootstrap and ensurer).
    crate::kinds::ensure_flow_control_configuration(objects).await?;
    Ok(())
}

/// The `kubernetes` Service in `default`, as upstream's control plane keeps it: on the first
/// address of the service range (`10.96.0.1`), port 443 named `https` forwarding to the port
/// the server listens on, labels `component=apiserver` and `provider=kubernetes`, no selector.
/// Created when missing; its ports follow the server's port across restarts.
async fn ensure_kubernetes_service(objects: &Objects, port: u16) -> Result<(), ApiError> {
    let Some(info) = objects.registry().get("", "v1", "services") else {
        return Err(ApiError::internal("services are not registered"));
    };
    let ports = json!([{"name": "https", "protocol": "TCP", "port": 443, "targetPort": port}]);
    let service = match objects.get(&info, Some("default"), "kubernetes") {
        Ok(existing) => {
            if existing.pointer("/spec/ports") == Some(&ports) {
                return Ok(());
            }
            let mut next = (*existing).clone();
            next["spec"]["ports"] = ports;
            return objects
                .update(
                    &info,
                    Some("default"),
                    "kubernetes",
                    next,
                    crate::objects::Part::Main,
                    &WriteOptions::default(),
                )
                .await
                .map(|_| ());
        }
        Err(e) if e.code == 404 => json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": "kubernetes",
                "namespace": "default",
                "labels": {"component": "apiserver", "provider": "kubernetes"},
            },
            "spec": {
                "type": "ClusterIP",
                "clusterIP": "10.96.0.1",
                "sessionAffinity": "None",
                "ports": ports,
            },
        }),
        Err(e) => return Err(e),
    };
    match objects
        .create(&info, Some("default"), service, &WriteOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Connection- and request-level limits applied in front of [`http::handle`].
struct Front {
    inflight: crate::inflight::InFlight,
    /// API priority and fairness, when enabled.
    flow_control: Option<crate::apf::FlowControl>,
    header_read_timeout: Duration,
}

impl Front {
    /// The connection builder: hyper's head limits raised above ours (so ours answer with a
    /// `Status`), and a header read timeout against slow-header clients.
    fn builder(&self) -> auto::Builder<TokioExecutor> {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(self.header_read_timeout)
            .max_buf_size(crate::limits::HYPER_MAX_BUF)
            .max_headers(crate::limits::MAX_HEADER_FIELDS);
        builder
    }

    /// Serves one request: head limits, then the request's deadline (a request that is not
    /// long-running and has not answered by it gets upstream's 504; its work goes on, as
    /// upstream's timeout filter lets it), then in-flight limits (with priority and fairness:
    /// the per-client watch limit, then the flow control filter), then the HTTP front.
    async fn serve(
        self: Arc<Self>,
        state: Arc<State>,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<http::Body> {
        if let Err(err) = crate::limits::check_head(req.uri(), req.headers()) {
            return crate::http::error_response(&err);
        }
        let mut req = req;
        let requested = match crate::deadline::requested(req.uri()) {
            Ok(requested) => requested,
            Err(err) => return crate::http::error_response(&err),
        };
        if let Some(timeout) = requested {
            req.extensions_mut().insert(timeout);
        }
        let Some(deadline) = crate::deadline::deadline(req.uri(), requested) else {
            return self.admit(state, req).await;
        };
        // The handler runs here; only one that outlives its deadline is moved to a task of
        // its own to finish there.
        let mut work = Box::pin(self.admit(state, req));
        tokio::select! {
            response = &mut work => response,
            () = tokio::time::sleep(deadline) => {
                tokio::spawn(work);
                crate::http::error_response(&crate::deadline::timed_out())
            }
        }
    }

    /// The in-flight limits and the flow control filter, then the HTTP front.
    async fn admit(
        self: Arc<Self>,
        state: Arc<State>,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<http::Body> {
        let auth = state.auth.clone();
        match &self.flow_control {
            None => {
                self.inflight
                    .serve(
                        req,
                        |req| crate::inflight::is_privileged(&auth, req),
                        |req| http::handle(state, req),
                    )
                    .await
            }
            Some(flow_control) => {
                self.inflight
                    .serve(
                        req,
                        |_| false,
                        |req| flow_control.serve(&auth, req, |req| http::handle(state, req)),
                    )
                    .await
            }
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    state: Arc<State>,
    front: Arc<Front>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let acceptor = acceptor.clone();
        let front = front.clone();
        let mut conn_shutdown = shutdown.clone();
        connections.spawn(async move {
            let builder = front.builder();
            let handshake_timeout = front.header_read_timeout;
            // Every request of the connection carries the certificate its client presented.
            let service = move |certificate: Option<crate::auth::ClientCertificate>| {
                service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                    let state = state.clone();
                    let front = front.clone();
                    if let Some(certificate) = &certificate {
                        req.extensions_mut().insert(certificate.clone());
                    }
                    req.extensions_mut()
                        .insert(crate::aggregator::proxy::ClientAddr(peer));
                    async move { Ok::<_, std::convert::Infallible>(front.serve(state, req).await) }
                })
            };
            let result = match acceptor {
                // A client that stalls the handshake is dropped like a slow-header one.
                Some(acceptor) => {
                    match tokio::time::timeout(handshake_timeout, acceptor.accept(stream))
                        .await
                        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
                    {
                        Ok(tls_stream) => {
                            let certificate = tls_stream
                                .get_ref()
                                .1
                                .peer_certificates()
                                .filter(|chain| !chain.is_empty())
                                .map(|chain| {
                                    crate::auth::ClientCertificate(Arc::new(
                                        chain.iter().map(|c| c.to_vec()).collect(),
                                    ))
                                });
                            let service = service(certificate);
                            let conn = builder.serve_connection_with_upgrades(
                                TokioIo::new(crate::limits::StatusOnParseError::new(tls_stream)),
                                service,
                            );
                            tokio::select! {
                                r = conn => r,
                                _ = conn_shutdown.changed() => Ok(()),
                            }
                        }
                        Err(e) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                    }
                }
                None => {
                    let conn = builder.serve_connection_with_upgrades(
                        TokioIo::new(crate::limits::StatusOnParseError::new(stream)),
                        service(None),
                    );
                    tokio::select! {
                        r = conn => r,
                        _ = conn_shutdown.changed() => Ok(()),
                    }
                }
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
        // Reap finished connections without blocking.
        while connections.try_join_next().is_some() {}
    }
    connections.shutdown().await;
}
