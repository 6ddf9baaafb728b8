//! The HTTPS connection to an extension API server, as upstream's `BuildTransportConfig`
//! makes it: the APIService's `caBundle` as the only trust root and `<service>.<namespace>.svc`
//! as the server name (or no verification with `insecureSkipTLSVerify`), the front-proxy
//! client certificate presented. Failures read as Go's HTTP client words them
//! (`dial tcp 10.0.0.5:443: connect: connection refused`).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use serde_json::Value;

use super::front_proxy::Identity;
use crate::meta;

/// Where and how an extension server is reached.
#[derive(Clone)]
pub(crate) struct Backend {
    /// The address dialed.
    pub addr: SocketAddr,
    /// The TLS server name (`<service>.<namespace>.svc`).
    pub server_name: String,
    /// The TLS client configuration.
    pub tls: Arc<rustls::ClientConfig>,
    /// The kept-alive connections to this address with this configuration.
    pub pool: Arc<Pool>,
}

/// The most idle connections kept per backend.
const MAX_IDLE: usize = 16;

/// Kept-alive HTTP/1.1 connections to one backend (one APIService's address and TLS
/// configuration; a change of either makes a new pool, so a new `caBundle` or endpoint is
/// never served by an old connection). A connection goes back after its response head: it
/// is taken again once its response has been read (hyper reports it ready), and is dropped
/// when the backend closes it.
#[derive(Default)]
pub(crate) struct Pool {
    idle: std::sync::Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl Pool {
    /// A connection ready for a request, if one is kept; closed ones are dropped.
    fn take(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        idle.retain(|s| !s.is_closed());
        let ready = idle.iter().position(SendRequest::is_ready)?;
        Some(idle.swap_remove(ready))
    }

    /// Keeps a connection for later requests (the oldest goes when too many are kept).
    fn put(&self, sender: SendRequest<Full<Bytes>>) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() >= MAX_IDLE {
            idle.remove(0);
        }
        idle.push(sender);
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("addr", &self.addr)
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// The TLS client configuration for the APIService `obj`.
pub(crate) fn tls_config(
    obj: &Value,
    identity: &Identity,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let insecure = meta::path(obj, "spec.insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
    } else {
        let roots = crate::admission::client::ca_roots(
            meta::path(obj, "spec.caBundle").and_then(Value::as_str),
        )?;
        builder.with_root_certificates(roots)
    };
    let config = builder
        .with_client_auth_cert(identity.chain.clone(), identity.key.clone_key())
        .map_err(|e| format!("loading the proxy client certificate: {e}"))?;
    Ok(Arc::new(config))
}

/// Opens a TLS connection to `backend`.
async fn dial(
    backend: &Backend,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let addr = backend.addr;
    let stream = tokio::net::TcpStream::connect(addr).await.map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
            _ => e.to_string(),
        };
        format!("dial tcp {addr}: {why}")
    })?;
    let _ = stream.set_nodelay(true);
    let server_name = ServerName::try_from(backend.server_name.clone())
        .map_err(|e| format!("invalid server name: {e}"))?;
    tokio_rustls::TlsConnector::from(backend.tls.clone())
        .connect(server_name, stream)
        .await
        .map_err(|e| tls_error(&e.to_string(), &backend.server_name))
}

/// Go's words for a request that got no answer.
fn send_error(e: &hyper::Error) -> String {
    if e.is_closed() || e.is_incomplete_message() {
        "EOF".to_string()
    } else {
        e.to_string()
    }
}

/// Opens a new HTTP/1.1 connection to `backend`.
async fn connect(backend: &Backend) -> Result<SendRequest<Full<Bytes>>, String> {
    let tls = dial(backend).await?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "aggregated API server connection ended");
        }
    });
    Ok(sender)
}

/// Sends `request` to `backend` on a kept-alive connection (a new one when none is free);
/// answers the response head, its body streaming as the backend writes it. A request a kept
/// connection could not take (closed meanwhile) goes on a new one.
pub(crate) async fn send(
    backend: &Backend,
    request: http::Request<Full<Bytes>>,
) -> Result<http::Response<Incoming>, String> {
    let mut request = request;
    if let Some(mut sender) = backend.pool.take() {
        match sender.try_send_request(request).await {
            Ok(response) => {
                backend.pool.put(sender);
                return Ok(response);
            }
            Err(mut e) => match e.take_message() {
                Some(unsent) => request = unsent,
                None => return Err(send_error(e.error())),
            },
        }
    }
    let mut sender = connect(backend).await?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| send_error(&e))?;
    backend.pool.put(sender);
    Ok(response)
}

/// Sends the upgrade request `request` to `backend` on a connection of its own, which a
/// `101 Switching Protocols` answer hands over (`hyper::upgrade::on` of the response).
pub(crate) async fn send_upgrade(
    backend: &Backend,
    request: http::Request<Full<Bytes>>,
) -> Result<http::Response<Incoming>, String> {
    let tls = dial(backend).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(error = %e, "aggregated API server connection ended");
        }
    });
    sender
        .send_request(request)
        .await
        .map_err(|e| send_error(&e))
}

/// Go's words for a failed TLS handshake.
fn tls_error(why: &str, server_name: &str) -> String {
    if why.contains("UnknownIssuer") || why.contains("BadSignature") {
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            .to_string()
    } else if why.contains("NotValidForName") {
        format!(
            "tls: failed to verify certificate: x509: certificate is valid for other names, not {server_name}"
        )
    } else {
        format!("remote error: {why}")
    }
}

/// `insecureSkipTLSVerify`: any server certificate is accepted (its signatures still have to
/// be well-formed for the handshake).
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
