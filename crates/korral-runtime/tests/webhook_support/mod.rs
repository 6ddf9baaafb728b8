//! What the webhook tests share: the captured fixtures, certificates, and an HTTPS client.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A captured file of `tests/fixtures/admission/`.
pub fn fixture(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/admission")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("fixture");
    serde_json::from_str(&text).expect("fixture JSON")
}

/// The body the API server posted, of a `received-*` capture.
pub fn received_body(name: &str) -> String {
    fixture(name)["body"].to_string()
}

/// A self-signed certificate for `names`: (cert PEM, key PEM).
pub fn self_signed(names: &[&str]) -> (String, String) {
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let certified = rcgen::generate_simple_self_signed(names).expect("generate");
    (certified.cert.pem(), certified.signing_key.serialize_pem())
}

/// Writes `tls.crt` and `tls.key` into `dir`.
pub fn write_cert(dir: &Path, cert: &str, key: &str) {
    std::fs::write(dir.join("tls.crt"), cert).expect("write cert");
    std::fs::write(dir.join("tls.key"), key).expect("write key");
}

/// A TLS client trusting only `ca_pem` (a CA or a self-signed certificate).
pub fn connector(ca_pem: &str) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("PEM")).expect("root");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    /// The status code.
    pub status: u16,
    /// The head (status line and headers).
    pub head: String,
    /// The body.
    pub body: String,
}

impl Reply {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("JSON body")
    }
}

async fn connect(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    server_name: &str,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = ServerName::try_from(server_name.to_owned())?;
    connector.connect(name, tcp).await.context("TLS handshake")
}

/// `POST path` with `body` (of `content_type`) over HTTPS on a fresh connection.
pub async fn post(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    server_name: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> Result<Reply> {
    let exchange = async {
        let mut tls = connect(connector, addr, server_name).await?;
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {server_name}\r\nContent-Type: {content_type}\r\n\
             Accept: application/json, */*\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        tls.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        tls.read_to_end(&mut raw).await?;
        anyhow::Ok(raw)
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .context("request timed out")??;
    let text = String::from_utf8(raw)?;
    let (head, body) = text.split_once("\r\n\r\n").context("no end of headers")?;
    let status = head
        .split(' ')
        .nth(1)
        .context("no status")?
        .parse::<u16>()?;
    Ok(Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    })
}

/// The certificate the server presents on a new connection (DER).
pub async fn peer_certificate(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    server_name: &str,
) -> Result<Vec<u8>> {
    let tls = connect(connector, addr, server_name).await?;
    let (_, session) = tls.get_ref();
    let chain = session.peer_certificates().context("no peer certificate")?;
    Ok(chain.first().context("empty chain")?.as_ref().to_vec())
}

/// The DER of the first certificate of `pem`.
pub fn der(pem: &str) -> Vec<u8> {
    CertificateDer::from_pem_slice(pem.as_bytes())
        .expect("PEM")
        .as_ref()
        .to_vec()
}
