//! The HTTP server behind `/metrics` and the probes: binding, accepting (plain or TLS),
//! graceful stop; and the `/metrics` handlers, open or behind [`MetricsAuth`].

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE, HeaderValue, X_CONTENT_TYPE_OPTIONS};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::auth::{AuthDecision, MetricsAuth};
use super::registry::Registry;
use super::tls::{MetricsTls, MetricsTlsError};

/// The `Content-Type` of `/metrics`: the Prometheus text exposition format 0.0.4.
pub const CONTENT_TYPE_TEXT_004: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How long open connections may finish their requests after a shutdown signal.
const GRACE: Duration = Duration::from_secs(5);
/// How long a client may take to send request headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause after a failed `accept` (e.g. out of file descriptors) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// How long a client may take to finish the TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Binding the listening socket failed.
    #[error("binding the {server} server to {addr}: {source}")]
    Bind {
        /// Which server (`metrics` or `probes`).
        server: &'static str,
        /// The requested address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The TLS certificate could not be used.
    #[error("configuring TLS for the {server} server: {source}")]
    Tls {
        /// Which server (`metrics`).
        server: &'static str,
        /// What was wrong with the certificate.
        source: MetricsTlsError,
    },
    /// Reading back the bound address failed.
    #[error("reading the address of the {server} server: {source}")]
    LocalAddr {
        /// Which server (`metrics` or `probes`).
        server: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// A signal that stops a server: a future that completes when it is time to stop.
///
/// Made from a `tokio::sync::watch::Receiver<bool>` (stops once the value is `true`, or once every
/// sender is gone) or from any future with [`Shutdown::new`].
pub struct Shutdown {
    signal: Pin<Box<dyn Future<Output = ()> + Send + 'static>>,
}

impl Shutdown {
    /// Stops when `signal` completes.
    pub fn new<F>(signal: F) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Self {
            signal: Box::pin(signal),
        }
    }

    /// Never stops (the server runs until its task is dropped with the runtime).
    pub fn never() -> Self {
        Self::new(std::future::pending())
    }
}

impl From<watch::Receiver<bool>> for Shutdown {
    fn from(mut stop: watch::Receiver<bool>) -> Self {
        Self::new(async move {
            // An error means every sender is gone: nobody can ask us to keep running.
            let _ = stop.wait_for(|stop| *stop).await;
        })
    }
}

impl Future for Shutdown {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.signal.as_mut().poll(cx)
    }
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown").finish_non_exhaustive()
    }
}

/// A running server: its bound address, and a way to wait until it has stopped.
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    task: JoinHandle<()>,
}

impl ServerHandle {
    /// The address the server listens on (with the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Whether the server has stopped.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits until the server has stopped: it stopped accepting, and open connections finished
    /// (or were cut after a grace period of 5 s).
    pub async fn wait(self) {
        if let Err(e) = self.task.await {
            tracing::error!(error = %e, "HTTP server task failed");
        }
    }
}

pub(crate) type Body = Full<Bytes>;

/// Handles one request.
pub(crate) type Handler = Arc<
    dyn Fn(Request<Incoming>) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> + Send + Sync,
>;

/// A `text/plain` response.
pub(crate) fn text_response(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// `404 page not found`, as Go's `http.NotFound` says it.
pub(crate) fn not_found() -> Response<Body> {
    text_response(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        "404 page not found\n",
    )
}

/// Binds `addr`, then serves `handler` (over TLS when `tls` is given) on a spawned task until
/// `shutdown`.
pub(crate) async fn start(
    server: &'static str,
    addr: SocketAddr,
    handler: Handler,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: Shutdown,
) -> Result<ServerHandle, ServeError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind {
            server,
            addr,
            source,
        })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| ServeError::LocalAddr { server, source })?;
    tracing::info!(server, addr = %local_addr, tls = tls.is_some(), "serving");
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let task = tokio::spawn(accept_loop(server, listener, handler, acceptor, shutdown));
    Ok(ServerHandle { local_addr, task })
}

async fn accept_loop(
    server: &'static str,
    listener: TcpListener,
    handler: Handler,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    mut shutdown: Shutdown,
) {
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let _ = stream.set_nodelay(true);
                let handler = handler.clone();
                let stop = stop_rx.clone();
                match &acceptor {
                    None => {
                        connections.spawn(serve_connection(server, stream, peer, handler, stop));
                    }
                    Some(acceptor) => {
                        connections.spawn(serve_tls_connection(
                            server,
                            acceptor.clone(),
                            stream,
                            peer,
                            handler,
                            stop,
                        ));
                    }
                }
            }
            Err(e) => {
                tracing::warn!(server, error = %e, "accepting a connection failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
        // Reap finished connections without waiting.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    tracing::info!(server, "stopping");
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            server,
            open = connections.len(),
            "closing connections still open after the grace period"
        );
        connections.shutdown().await;
    }
    tracing::info!(server, "stopped");
}

/// Completes the TLS handshake (within 10 s), then serves the connection.
async fn serve_tls_connection(
    server: &'static str,
    acceptor: tokio_rustls::TlsAcceptor,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    handler: Handler,
    stop: watch::Receiver<bool>,
) {
    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => serve_connection(server, tls, peer, handler, stop).await,
        Ok(Err(e)) => tracing::debug!(server, %peer, error = %e, "TLS handshake failed"),
        Err(_) => tracing::debug!(server, %peer, "TLS handshake timed out"),
    }
}

async fn serve_connection<S>(
    server: &'static str,
    stream: S,
    peer: SocketAddr,
    handler: Handler,
    mut stop: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let handler = handler.clone();
        async move { Ok::<_, Infallible>(handler(request).await) }
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let stopping = async {
        let _ = stop.wait_for(|stop| *stop).await;
    };
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = stopping => {
            // Finish the request in flight, then close; idle connections close at once.
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = result {
        tracing::debug!(server, %peer, error = %e, "connection ended with an error");
    }
}

/// Serves `GET /metrics` from `registry` on `addr` (port 0 picks a free port) until `shutdown`.
///
/// Binds before returning, so the returned [`ServerHandle::local_addr`] is ready for requests.
/// The response is the text exposition format 0.0.4 ([`CONTENT_TYPE_TEXT_004`]); other paths get
/// 404 and other methods 405. Must be called inside a Tokio runtime.
pub async fn serve_metrics(
    addr: SocketAddr,
    registry: Registry,
    shutdown: impl Into<Shutdown>,
) -> Result<ServerHandle, ServeError> {
    let handler: Handler = Arc::new(move |request| {
        let response = metrics_response(&registry, &request);
        Box::pin(async move { response })
    });
    start("metrics", addr, handler, None, shutdown.into()).await
}

/// Serves `GET /metrics` over HTTPS with `tls`, and, when `auth` is given, only to callers
/// whose bearer token the API server authenticates (TokenReview) and authorizes for `get` on
/// the non-resource URL `/metrics` (SubjectAccessReview): controller-runtime's secure serving
/// with `filters.WithAuthenticationAndAuthorization`. Unauthenticated requests get 401,
/// unauthorized ones 403 (see [`MetricsAuth`]).
///
/// Binds before returning. Must be called inside a Tokio runtime.
pub async fn serve_metrics_secure(
    addr: SocketAddr,
    registry: Registry,
    tls: &MetricsTls,
    auth: Option<MetricsAuth>,
    shutdown: impl Into<Shutdown>,
) -> Result<ServerHandle, ServeError> {
    let config = tls.server_config().map_err(|source| ServeError::Tls {
        server: "metrics",
        source,
    })?;
    let handler: Handler = Arc::new(move |request| {
        let registry = registry.clone();
        let auth = auth.clone();
        Box::pin(async move {
            if request.uri().path() != "/metrics" {
                return not_found();
            }
            if let Some(auth) = auth
                && let Some(denied) = auth_response(
                    auth.review(request.headers(), request.method(), request.uri().path())
                        .await,
                )
            {
                return denied;
            }
            metrics_response(&registry, &request)
        })
    });
    start("metrics", addr, handler, Some(config), shutdown.into()).await
}

/// The response for a decision that is not "allowed", with controller-runtime's texts.
fn auth_response(decision: AuthDecision) -> Option<Response<Body>> {
    const PLAIN: &str = "text/plain; charset=utf-8";
    match decision {
        AuthDecision::Allowed { .. } => None,
        AuthDecision::Unauthenticated => Some(text_response(
            StatusCode::UNAUTHORIZED,
            PLAIN,
            "Unauthorized\n",
        )),
        AuthDecision::Forbidden { user, reason } => {
            tracing::debug!(%user, %reason, "metrics: authorization denied");
            Some(text_response(
                StatusCode::FORBIDDEN,
                PLAIN,
                format!("Authorization denied for user {user}\n"),
            ))
        }
        AuthDecision::ReviewFailed { user, error } => {
            tracing::error!(%user, %error, "metrics: authorization failed");
            Some(text_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                PLAIN,
                format!("Authorization for user {user} failed\n"),
            ))
        }
    }
}

fn metrics_response(registry: &Registry, request: &Request<Incoming>) -> Response<Body> {
    if request.uri().path() != "/metrics" {
        return not_found();
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        let mut response = text_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "method not allowed\n",
        );
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    text_response(
        StatusCode::OK,
        CONTENT_TYPE_TEXT_004,
        registry.encode_text(),
    )
}
