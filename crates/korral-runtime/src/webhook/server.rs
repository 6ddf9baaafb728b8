//! The webhook server: HTTPS on port 9443 (by default) with the certificate of a directory
//! (`tls.crt` / `tls.key`, default `$TMPDIR/k8s-webhook-server/serving-certs`), reloaded when the
//! files change; admission handlers and the conversion handler by path; controller-runtime's
//! webhook metrics; a readiness check; graceful shutdown. A runnable of the [`Manager`].

use std::collections::BTreeMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;
use hyper::{Request, Response, StatusCode};
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tracing::{error, info, warn};

use super::certwatcher::{CertError, CertWatcher};
use super::conversion::ConversionWebhook;
use super::defaulter::{Defaulter, DefaultingHandler};
use super::handler::{AdmissionHandler, Raw, RawAsync};
use super::metrics::WebhookMetrics;
use super::path::{CONVERT_PATH, mutate_path, validate_path};
use super::review::{ADMISSION_V1, decode_request, encode_response, errored};
use super::validator::{ValidatingHandler, Validator};
use crate::manager::Manager;
use crate::manifests::{AdmissionType, AdmissionWebhook, Manifests};
use crate::metrics::{
    AddCheckError, Body, Handler, Registry, ServerHandle, start_server, text_response,
};
use crate::reconcile::BoxError;

/// The default port, as controller-runtime's.
pub const DEFAULT_PORT: u16 = 9443;
/// The certificate file name in the certificate directory.
pub const DEFAULT_CERT_NAME: &str = "tls.crt";
/// The key file name in the certificate directory.
pub const DEFAULT_KEY_NAME: &str = "tls.key";
/// How often the certificate files are reread (controller-runtime's certwatcher polls every 10 s).
pub const DEFAULT_CERT_POLL_INTERVAL: Duration = Duration::from_secs(10);
/// The largest request body read, as controller-runtime's (7 MiB).
pub const MAX_REQUEST_BYTES: usize = 7 * 1024 * 1024;
/// How many times [`WebhookServer::start`] rereads a certificate pair that does not load
/// (one second apart) before failing.
pub const BAD_CERT_RETRIES: u32 = 5;
/// The name of the readiness check added to a manager.
pub const READY_CHECK: &str = "webhook";

/// controller-runtime's default certificate directory: `$TMPDIR/k8s-webhook-server/serving-certs`.
pub fn default_cert_dir() -> PathBuf {
    std::env::temp_dir()
        .join("k8s-webhook-server")
        .join("serving-certs")
}

/// Why the webhook server failed.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// Two handlers for one path.
    #[error("a webhook is registered already for the path {0}")]
    DuplicatePath(String),
    /// A path does not start with `/`.
    #[error("webhook path {0:?} does not start with /")]
    InvalidPath(String),
    /// The host could not be resolved.
    #[error("resolving the webhook server host {host:?}: {detail}")]
    Host {
        /// The host.
        host: String,
        /// Why.
        detail: String,
    },
    /// The certificate could not be loaded.
    #[error("loading the webhook serving certificate")]
    Certificate(#[source] CertError),
    /// Binding or serving failed.
    #[error("starting the webhook server")]
    Serve(#[source] crate::metrics::ServeError),
    /// Adding the readiness check to the manager failed.
    #[error("adding the webhook readiness check")]
    ReadyCheck(#[source] AddCheckError),
}

/// What serves a path.
#[derive(Clone)]
enum Route {
    Admission(Arc<dyn AdmissionHandler>),
    Conversion(Arc<ConversionWebhook>),
}

/// The webhook server; see the [module docs](crate::webhook).
pub struct WebhookServer {
    host: String,
    port: u16,
    cert_dir: PathBuf,
    cert_name: String,
    key_name: String,
    cert_poll_interval: Duration,
    registry: Option<Registry>,
    routes: BTreeMap<String, Route>,
    ready: Arc<AtomicBool>,
    /// What the typed registrations serve, for the operator's manifests.
    declared: Manifests,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("cert_dir", &self.cert_dir)
            .field("paths", &self.routes.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Default for WebhookServer {
    fn default() -> Self {
        Self::new()
    }
}

impl WebhookServer {
    /// A server on all interfaces, port 9443, with the certificate of [`default_cert_dir`].
    pub fn new() -> Self {
        Self {
            host: String::new(),
            port: DEFAULT_PORT,
            cert_dir: default_cert_dir(),
            cert_name: DEFAULT_CERT_NAME.to_owned(),
            key_name: DEFAULT_KEY_NAME.to_owned(),
            cert_poll_interval: DEFAULT_CERT_POLL_INTERVAL,
            registry: None,
            routes: BTreeMap::new(),
            ready: Arc::new(AtomicBool::new(false)),
            declared: Manifests::new(),
        }
    }

    /// The address to listen on (an IP or a name; empty, the default, is every interface).
    #[must_use]
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = host.into();
        self
    }

    /// The port (default 9443; 0 picks a free one, see [`RunningWebhookServer::local_addr`]).
    #[must_use]
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The directory holding the certificate and key.
    #[must_use]
    pub fn cert_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cert_dir = dir.into();
        self
    }

    /// The certificate and key file names in the directory (default `tls.crt`, `tls.key`).
    #[must_use]
    pub fn cert_names(mut self, cert: impl Into<String>, key: impl Into<String>) -> Self {
        self.cert_name = cert.into();
        self.key_name = key.into();
        self
    }

    /// How often the certificate files are reread (default 10 s).
    #[must_use]
    pub fn cert_poll_interval(mut self, interval: Duration) -> Self {
        self.cert_poll_interval = interval;
        self
    }

    /// The registry of the webhook metrics (default: [`Registry::global`]; [`Self::add_to`]
    /// uses the manager's).
    #[must_use]
    pub fn metrics_registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// The certificate directory.
    pub fn certificate_dir(&self) -> &Path {
        &self.cert_dir
    }

    /// The registered paths.
    pub fn paths(&self) -> Vec<String> {
        self.routes.keys().cloned().collect()
    }

    fn add_route(&mut self, path: &str, route: Route) -> Result<&mut Self, WebhookError> {
        if !path.starts_with('/') {
            return Err(WebhookError::InvalidPath(path.to_owned()));
        }
        if self.routes.contains_key(path) {
            return Err(WebhookError::DuplicatePath(path.to_owned()));
        }
        self.routes.insert(path.to_owned(), route);
        Ok(self)
    }

    /// Serves `handler` on `path`.
    pub fn register(
        &mut self,
        path: &str,
        handler: impl AdmissionHandler,
    ) -> Result<&mut Self, WebhookError> {
        self.add_route(path, Route::Admission(Arc::new(handler)))
    }

    /// Serves a raw handler (any kind) on `path`.
    pub fn raw<F>(&mut self, path: &str, handler: F) -> Result<&mut Self, WebhookError>
    where
        F: Fn(
                kube::core::admission::AdmissionRequest<kube::core::DynamicObject>,
            ) -> kube::core::admission::AdmissionResponse
            + Send
            + Sync
            + 'static,
    {
        self.register(path, Raw(handler))
    }

    /// Serves an async raw handler (any kind) on `path`.
    pub fn raw_async<F, Fut>(&mut self, path: &str, handler: F) -> Result<&mut Self, WebhookError>
    where
        F: Fn(kube::core::admission::AdmissionRequest<kube::core::DynamicObject>) -> Fut
            + Send
            + Sync
            + 'static,
        Fut: Future<Output = kube::core::admission::AdmissionResponse> + Send + 'static,
    {
        self.register(path, RawAsync(handler))
    }

    /// Serves the defaulter of `K` on kubebuilder's path (`/mutate-<group>-<version>-<kind>`).
    pub fn defaulter<K, D>(&mut self, defaulter: D) -> Result<&mut Self, WebhookError>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
        D: Defaulter<K>,
    {
        let path = mutate_path::<K>();
        self.register(&path, DefaultingHandler::<K, D>::new(defaulter))?;
        self.declared
            .add_webhook(AdmissionWebhook::of::<K>(AdmissionType::Mutating, &path));
        Ok(self)
    }

    /// Serves the validator of `K` on kubebuilder's path (`/validate-<group>-<version>-<kind>`).
    pub fn validator<K, V>(&mut self, validator: V) -> Result<&mut Self, WebhookError>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        V: Validator<K>,
    {
        let path = validate_path::<K>();
        self.register(&path, ValidatingHandler::<K, V>::new(validator))?;
        self.declared
            .add_webhook(AdmissionWebhook::of::<K>(AdmissionType::Validating, &path));
        Ok(self)
    }

    /// Declares, for the operator's manifests, the admission webhook a raw handler serves
    /// (typed registrations declare theirs).
    pub fn declare(&mut self, webhook: AdmissionWebhook) -> &mut Self {
        self.declared.add_webhook(webhook);
        self
    }

    /// The webhooks declared for the operator's manifests (typed registrations, conversions
    /// and [`Self::declare`]).
    pub fn declared(&self) -> &Manifests {
        &self.declared
    }

    /// Serves conversions on `/convert`.
    pub fn conversion(&mut self, webhook: ConversionWebhook) -> Result<&mut Self, WebhookError> {
        let kinds = webhook.converted_kinds();
        self.add_route(CONVERT_PATH, Route::Conversion(Arc::new(webhook)))?;
        for kind in kinds {
            self.declared.add_conversion(kind);
        }
        Ok(self)
    }

    /// A readiness check passing while the server serves.
    pub fn ready_check(&self) -> impl Fn() -> Result<(), String> + Send + Sync + 'static {
        let ready = self.ready.clone();
        let dir = self.cert_dir.clone();
        move || {
            if ready.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err(format!(
                    "webhook server not serving yet (certificate directory {})",
                    dir.display()
                ))
            }
        }
    }

    /// Adds the server to `manager`: the webhooks it declares to the manager's
    /// [manifests](crate::manifests), its readiness check ([`READY_CHECK`]), its metrics in the
    /// manager's registry (unless another was set) and a server runnable
    /// ([`Manager::add_server`]): it starts before the manager's caches sync, as
    /// controller-runtime starts its webhooks first (the caches may read a version this server
    /// converts), and serves until the manager stops.
    pub fn add_to(mut self, manager: &mut Manager) -> Result<(), WebhookError> {
        manager
            .health()
            .add_readyz(READY_CHECK, self.ready_check())
            .map_err(WebhookError::ReadyCheck)?;
        if self.registry.is_none() {
            self.registry = Some(manager.registry().clone());
        }
        for webhook in self.declared.webhooks() {
            manager.manifests_mut().add_webhook(webhook.clone());
        }
        for kind in self.declared.conversions() {
            manager.manifests_mut().add_conversion(kind.clone());
        }
        manager.add_server("webhook server", move |stop| async move {
            self.start(stop).await.map_err(BoxError::from)
        });
        Ok(())
    }

    /// Waits for the certificate files (they may be written by a certificate runnable started
    /// at the same time; a pair caught half-written is read again, up to
    /// [`BAD_CERT_RETRIES`] times), serves until `stop` completes, then shuts down gracefully.
    pub async fn start(self, stop: impl Future<Output = ()> + Send) -> Result<(), WebhookError> {
        let mut stop = std::pin::pin!(stop);
        let mut waited = 0u32;
        let mut bad = 0u32;
        let watcher = loop {
            match CertWatcher::new(&self.cert_dir, &self.cert_name, &self.key_name) {
                Ok(watcher) => break watcher,
                Err(CertError::Read { path, source })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    if waited.is_multiple_of(10) {
                        warn!(path = %path.display(), "webhook server: waiting for the certificate");
                    }
                    waited = waited.wrapping_add(1);
                }
                Err(err) if bad < BAD_CERT_RETRIES => {
                    warn!(error = %err, "webhook server: certificate not usable yet");
                    bad += 1;
                }
                Err(err) => return Err(WebhookError::Certificate(err)),
            }
            tokio::select! {
                () = &mut stop => return Ok(()),
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        };
        let running = self.serve_with(watcher).await?;
        stop.await;
        running.shutdown().await;
        Ok(())
    }

    /// Binds and serves now (the certificate must exist); returns the running server.
    pub async fn serve(self) -> Result<RunningWebhookServer, WebhookError> {
        let watcher = CertWatcher::new(&self.cert_dir, &self.cert_name, &self.key_name)
            .map_err(WebhookError::Certificate)?;
        self.serve_with(watcher).await
    }

    async fn resolve(&self) -> Result<SocketAddr, WebhookError> {
        if self.host.is_empty() {
            return Ok(SocketAddr::new(
                IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                self.port,
            ));
        }
        if let Ok(ip) = self.host.parse::<IpAddr>() {
            return Ok(SocketAddr::new(ip, self.port));
        }
        let host_error = |detail: String| WebhookError::Host {
            host: self.host.clone(),
            detail,
        };
        tokio::net::lookup_host((self.host.as_str(), self.port))
            .await
            .map_err(|e| host_error(e.to_string()))?
            .next()
            .ok_or_else(|| host_error("no address".to_owned()))
    }

    async fn serve_with(self, watcher: CertWatcher) -> Result<RunningWebhookServer, WebhookError> {
        let addr = self.resolve().await?;
        let watcher = Arc::new(watcher);
        let tls = watcher.server_config().map_err(WebhookError::Certificate)?;
        let registry = self.registry.unwrap_or_else(|| Registry::global().clone());
        let dispatch = Arc::new(Dispatch {
            routes: self.routes,
            metrics: WebhookMetrics::new(&registry),
        });
        let handler: Handler = Arc::new(move |request| {
            let dispatch = dispatch.clone();
            Box::pin(async move { dispatch.respond(request).await })
        });
        let (stop_tx, stop_rx) = watch::channel(false);
        let server = start_server("webhook", addr, handler, Some(tls), stop_rx.clone().into())
            .await
            .map_err(WebhookError::Serve)?;
        let mut watch_stop = stop_rx;
        let reloader = tokio::spawn(watcher.clone().watch(self.cert_poll_interval, async move {
            let _ = watch_stop.wait_for(|s| *s).await;
        }));
        self.ready.store(true, Ordering::SeqCst);
        info!(addr = %server.local_addr(), cert_dir = %self.cert_dir.display(), "webhook server serving");
        Ok(RunningWebhookServer {
            server,
            stop: stop_tx,
            reloader,
            ready: self.ready,
        })
    }
}

/// A webhook server serving; stop it with [`RunningWebhookServer::shutdown`].
pub struct RunningWebhookServer {
    server: ServerHandle,
    stop: watch::Sender<bool>,
    reloader: tokio::task::JoinHandle<()>,
    ready: Arc<AtomicBool>,
}

impl std::fmt::Debug for RunningWebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningWebhookServer")
            .field("local_addr", &self.server.local_addr())
            .finish_non_exhaustive()
    }
}

impl RunningWebhookServer {
    /// The address served (the port chosen when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// Stops accepting, lets the requests in flight finish (up to 5 s), then returns.
    pub async fn shutdown(self) {
        self.ready.store(false, Ordering::SeqCst);
        self.stop.send_replace(true);
        self.server.wait().await;
        if let Err(err) = self.reloader.await {
            error!(error = %err, "the certificate reloader failed");
        }
        info!("webhook server stopped");
    }
}

/// Routes requests to handlers and counts them.
struct Dispatch {
    routes: BTreeMap<String, Route>,
    metrics: WebhookMetrics,
}

/// A JSON response with `status`.
fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<Body> {
    text_response(status, "application/json", Bytes::from(body.to_string()))
}

impl Dispatch {
    async fn respond(&self, request: Request<Incoming>) -> Response<Body> {
        let path = request.uri().path().to_owned();
        let Some(route) = self.routes.get(&path).cloned() else {
            return text_response(
                StatusCode::NOT_FOUND,
                "text/plain; charset=utf-8",
                "404 page not found\n",
            );
        };
        let guard = self.metrics.start(&path);
        let response = match route {
            Route::Admission(handler) => self.admission(handler.as_ref(), request).await,
            Route::Conversion(webhook) => conversion(&webhook, request).await,
        };
        guard.finish(response.status().as_u16());
        response
    }

    /// Answers an AdmissionReview; every answer is an AdmissionReview with HTTP 200, failures
    /// included (controller-runtime's `Errored` responses).
    async fn admission(
        &self,
        handler: &dyn AdmissionHandler,
        request: Request<Incoming>,
    ) -> Response<Body> {
        let answer =
            |response| json_response(StatusCode::OK, &encode_response(ADMISSION_V1, &response));
        let content_type = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if content_type != "application/json" {
            return answer(errored(
                "",
                400,
                format!("contentType={content_type}, expected application/json"),
            ));
        }
        let body = match Limited::new(request.into_body(), MAX_REQUEST_BYTES)
            .collect()
            .await
        {
            Ok(body) => body.to_bytes(),
            Err(e) => return answer(errored("", 400, format!("reading the request body: {e}"))),
        };
        let review = match decode_request(&body) {
            Ok(review) => review,
            Err(message) => return answer(errored("", 400, message)),
        };
        let uid = review.uid.clone();
        let version = review.types.api_version.clone();
        let handled = AssertUnwindSafe(async move { handler.handle(review).await })
            .catch_unwind()
            .await;
        let mut response = match handled {
            Ok(response) => response,
            Err(panic) => {
                self.metrics.panicked();
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                error!(%uid, panic = %what, "webhook handler panicked");
                errored(&uid, 500, format!("panic: {what} [recovered]"))
            }
        };
        if response.uid.is_empty() {
            response.uid = uid;
        }
        json_response(StatusCode::OK, &encode_response(&version, &response))
    }
}

/// Answers a ConversionReview (a request that cannot be read gets 400, as controller-runtime).
async fn conversion(webhook: &ConversionWebhook, request: Request<Incoming>) -> Response<Body> {
    let body = match Limited::new(request.into_body(), MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return text_response(
                StatusCode::BAD_REQUEST,
                "text/plain; charset=utf-8",
                format!("reading the request body: {e}\n"),
            );
        }
    };
    match webhook.review(&body) {
        Ok(review) => json_response(StatusCode::OK, &review),
        Err(message) => text_response(
            StatusCode::BAD_REQUEST,
            "text/plain; charset=utf-8",
            format!("{message}\n"),
        ),
    }
}
