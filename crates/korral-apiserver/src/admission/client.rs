//! Posting a review to a webhook over https: the webhook's `caBundle` as the only trust root,
//! `url` or `service` (a mapped local address, else the Service's Endpoints), `?timeout=Ns` on
//! the URL and the deadline enforced. Errors read as Go's HTTP client words them
//! (`Post "https://…?timeout=10s": dial tcp …: connect: connection refused`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use super::ServiceMap;
use super::url::WebhookUrl;
use crate::meta;
use crate::objects::Objects;

/// The largest webhook response read (upstream's limit is 3 MiB plus some).
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024 + 1024;

/// Where a webhook is called.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The URL as written in messages (`https://host:port/path?timeout=10s`).
    pub display: String,
    /// The address to connect to.
    pub connect: Connect,
    /// The TLS server name (the URL's host, or `name.namespace.svc`).
    pub server_name: String,
    /// `path?query` of the request line.
    pub path_and_query: String,
    /// The `Host` header.
    pub host_header: String,
}

/// How to reach a webhook.
#[derive(Debug, Clone)]
pub(crate) enum Connect {
    /// A resolved socket address.
    Addr(SocketAddr),
    /// A host name and port to resolve.
    Host(String, u16),
    /// The service cannot be reached (message as upstream's).
    Unreachable(String),
}

/// Resolves the webhook's client configuration; `timeout` seconds go into the query.
pub(crate) fn target(
    objects: &Objects,
    services: &ServiceMap,
    config: &Value,
    timeout: u64,
) -> Result<Target, String> {
    if let Some(raw) = config.get("url").and_then(Value::as_str) {
        let url = WebhookUrl::parse(raw).map_err(|e| e.to_string())?;
        let port = url.port.unwrap_or(443);
        let host_header = match url.port {
            Some(p) => format!("{}:{p}", bracket(&url.host)),
            None => bracket(&url.host),
        };
        let path = if url.path.is_empty() { "/" } else { &url.path };
        let path_and_query = format!("{path}?timeout={timeout}s");
        let connect = match url.host.parse::<std::net::IpAddr>() {
            Ok(ip) => Connect::Addr(SocketAddr::new(ip, port)),
            Err(_) => Connect::Host(url.host.clone(), port),
        };
        return Ok(Target {
            display: format!("https://{host_header}{path_and_query}"),
            connect,
            server_name: url.host.clone(),
            path_and_query,
            host_header,
        });
    }
    let service = config.get("service").ok_or("no client configuration")?;
    let namespace = service
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = service.get("name").and_then(Value::as_str).unwrap_or("");
    let port = service
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(443);
    let path = service.get("path").and_then(Value::as_str).unwrap_or("/");
    let path = if path.is_empty() { "/" } else { path };
    let host = format!("{name}.{namespace}.svc");
    let path_and_query = format!("{path}?timeout={timeout}s");
    let connect = match services.get(namespace, name, port) {
        Some(addr) => Connect::Addr(addr),
        None => endpoints_address(objects, namespace, name, port),
    };
    let host_header = if port == 443 {
        host.clone()
    } else {
        format!("{host}:{port}")
    };
    Ok(Target {
        display: format!("https://{host_header}{path_and_query}"),
        connect,
        server_name: host,
        path_and_query,
        host_header,
    })
}

/// `[v6]` for an IPv6 literal, the host otherwise.
fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// The address of a service port through the Service (port → targetPort) and its Endpoints.
fn endpoints_address(objects: &Objects, namespace: &str, name: &str, port: u16) -> Connect {
    let registry = objects.registry();
    let unreachable = |why: &str| Connect::Unreachable(why.to_string());
    let Some(svc_info) = registry.get("", "v1", "services") else {
        return unreachable("services are not served");
    };
    let Ok(svc) = objects.get(&svc_info, Some(namespace), name) else {
        return Connect::Unreachable(format!("service \"{name}\" not found"));
    };
    let ports = meta::path(&svc, "spec.ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(svc_port) = ports
        .iter()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
    else {
        return Connect::Unreachable(format!("service port {port} not found"));
    };
    let port_name = svc_port.get("name").and_then(Value::as_str).unwrap_or("");
    let target = svc_port.get("targetPort").cloned().unwrap_or(Value::Null);
    let Some(ep_info) = registry.get("", "v1", "endpoints") else {
        return unreachable("endpoints are not served");
    };
    let Ok(endpoints) = objects.get(&ep_info, Some(namespace), name) else {
        return Connect::Unreachable(format!("endpoints \"{name}\" not found"));
    };
    let subsets = endpoints
        .get("subsets")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for subset in &subsets {
        let ip = subset
            .get("addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(|a| a.get("ip"))
            .and_then(Value::as_str)
            .and_then(|ip| ip.parse::<std::net::IpAddr>().ok());
        let Some(ip) = ip else { continue };
        let ep_ports = subset
            .get("ports")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let chosen = ep_ports.iter().find_map(|p| {
            let n = p.get("port").and_then(Value::as_u64)?;
            let named = p.get("name").and_then(Value::as_str).unwrap_or("");
            let by_name = !port_name.is_empty() && named == port_name;
            let by_number =
                target.as_u64() == Some(n) || (target.is_null() && n == u64::from(port));
            let by_target_name = target.as_str().is_some_and(|t| t == named);
            (by_name || by_number || by_target_name || ep_ports.len() == 1)
                .then(|| u16::try_from(n).ok())
                .flatten()
        });
        if let Some(p) = chosen {
            return Connect::Addr(SocketAddr::new(ip, p));
        }
    }
    Connect::Unreachable(format!("service \"{name}\" has no ready endpoints"))
}

/// The certificates of a `caBundle` (PEM, base64 in the object; none when empty), with
/// upstream's errors; webhooks and aggregated APIServices trust them.
pub(crate) fn ca_roots(ca_bundle: Option<&str>) -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(b64) = ca_bundle.filter(|b| !b.is_empty()) {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("illegal caBundle: {e}"))?;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("unable to load root certificates: {e}"))?;
        }
    }
    Ok(roots)
}

/// The TLS client configuration trusting the webhook's `caBundle` (PEM, base64 in the object).
fn tls_config(ca_bundle: Option<&str>) -> Result<Arc<rustls::ClientConfig>, String> {
    let roots = ca_roots(ca_bundle)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Posts `body` to the webhook within `timeout`; answers the response body. Errors are the
/// text after `failed to call webhook: `.
pub(crate) async fn post(
    target: &Target,
    ca_bundle: Option<&str>,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    let call = post_inner(target, ca_bundle, body);
    match tokio::time::timeout(timeout, call).await {
        Ok(result) => result.map_err(|e| match e {
            CallError::Transport(e) => format!("Post \"{}\": {e}", target.display),
            CallError::Status(e) => e,
        }),
        Err(_) => Err(format!(
            "Post \"{}\": context deadline exceeded",
            target.display
        )),
    }
}

/// Why a call failed: before an answer (worded after `Post "url": `), or with an HTTP error.
enum CallError {
    /// Connecting, TLS or the exchange failed.
    Transport(String),
    /// The webhook answered a non-success status.
    Status(String),
}

impl From<String> for CallError {
    fn from(e: String) -> Self {
        CallError::Transport(e)
    }
}

async fn post_inner(
    target: &Target,
    ca_bundle: Option<&str>,
    body: Vec<u8>,
) -> Result<Vec<u8>, CallError> {
    let tls = tls_config(ca_bundle)?;
    let (stream, dialed) = match &target.connect {
        Connect::Addr(addr) => (tokio::net::TcpStream::connect(addr).await, addr.to_string()),
        Connect::Host(host, port) => (
            tokio::net::TcpStream::connect((host.as_str(), *port)).await,
            format!("{host}:{port}"),
        ),
        Connect::Unreachable(why) => return Err(CallError::Transport(why.clone())),
    };
    let stream = stream.map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
            _ => e.to_string(),
        };
        format!("dial tcp {dialed}: {why}")
    })?;
    let server_name = ServerName::try_from(target.server_name.clone())
        .map_err(|e| format!("invalid server name: {e}"))?;
    let tls_stream = tokio_rustls::TlsConnector::from(tls)
        .connect(server_name, stream)
        .await
        .map_err(|e| {
            let why = e.to_string();
            if why.contains("UnknownIssuer") || why.contains("BadSignature") {
                "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                    .to_string()
            } else {
                format!("tls: failed to verify certificate: {why}")
            }
        })?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls_stream))
        .await
        .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let request = http::Request::builder()
        .method(http::Method::POST)
        .uri(&target.path_and_query)
        .header(http::header::HOST, &target.host_header)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Full::new(bytes::Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string());
    let result = match response {
        Ok(response) => {
            let status = response.status();
            let collected = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| e.to_string())
                .map(|c| c.to_bytes().to_vec());
            match collected {
                Ok(bytes) if status.is_success() => Ok(bytes),
                Ok(bytes) => Err(CallError::Status(format!(
                    "failed to call webhook: an error on the server ({:?}) has prevented the request from succeeding",
                    String::from_utf8_lossy(&bytes).trim()
                ))),
                Err(e) => Err(CallError::Transport(e)),
            }
        }
        Err(e) => Err(CallError::Transport(e)),
    };
    driver.abort();
    result
}
