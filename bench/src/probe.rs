//! A minimal HTTPS probe for `/readyz`: one fresh TCP + TLS connection per request, trusting
//! only the CA from the server's kubeconfig.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;

/// Probes `GET /readyz` on one server.
pub struct ReadyzProbe {
    addr: SocketAddr,
    authority: String,
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
}

impl ReadyzProbe {
    /// A probe for `url` (`https://…` or `http://…`), trusting the CA in `kubeconfig`.
    pub fn new(url: &str, kubeconfig: &Path) -> anyhow::Result<Self> {
        let uri: http::Uri = url.parse().with_context(|| format!("parsing URL {url}"))?;
        let host = uri.host().ok_or_else(|| anyhow!("no host in {url}"))?;
        let port = uri.port_u16().ok_or_else(|| anyhow!("no port in {url}"))?;
        let ip: IpAddr = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .with_context(|| format!("the host of {url} is not an IP address"))?;
        let addr = SocketAddr::new(ip, port);
        let authority = uri
            .authority()
            .map(|a| a.to_string())
            .unwrap_or_else(|| addr.to_string());
        let tls = match uri.scheme_str() {
            Some("http") => None,
            Some("https") => {
                let ca_pem = ca_from_kubeconfig(kubeconfig)?;
                let mut roots = rustls::RootCertStore::empty();
                for cert in CertificateDer::pem_slice_iter(&ca_pem) {
                    roots
                        .add(cert.context("parsing the CA certificate from the kubeconfig")?)
                        .context("adding the CA certificate")?;
                }
                if roots.is_empty() {
                    bail!("the kubeconfig's certificate-authority-data holds no certificate");
                }
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let config = rustls::ClientConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .context("TLS protocol versions")?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                Some((
                    tokio_rustls::TlsConnector::from(Arc::new(config)),
                    ServerName::IpAddress(ip.into()),
                ))
            }
            other => bail!("unsupported scheme {other:?} in {url}"),
        };
        Ok(Self {
            addr,
            authority,
            tls,
        })
    }

    /// One `GET /readyz` on a new connection; `Ok(true)` when it answers 200 `ok`.
    pub async fn readyz(&self) -> anyhow::Result<bool> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        match &self.tls {
            Some((connector, name)) => {
                let stream = connector.connect(name.clone(), tcp).await?;
                self.get(TokioIo::new(stream)).await
            }
            None => self.get(TokioIo::new(tcp)).await,
        }
    }

    async fn get<S>(&self, io: TokioIo<S>) -> anyhow::Result<bool>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await?;
        let conn = tokio::spawn(conn);
        let req = http::Request::get("/readyz")
            .header(http::header::HOST, &self.authority)
            .body(Empty::<Bytes>::new())?;
        let resp = sender.send_request(req).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        conn.abort();
        Ok(status == http::StatusCode::OK && body.trim_ascii() == b"ok")
    }
}

/// The PEM CA certificate(s) from the first cluster of a kubeconfig.
fn ca_from_kubeconfig(path: &Path) -> anyhow::Result<Vec<u8>> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let cluster = kubeconfig
        .clusters
        .first()
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| anyhow!("{} has no cluster", path.display()))?;
    if let Some(data) = &cluster.certificate_authority_data {
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .context("decoding certificate-authority-data");
    }
    if let Some(file) = &cluster.certificate_authority {
        return std::fs::read(file).with_context(|| format!("reading {file}"));
    }
    bail!("{} names no certificate authority", path.display())
}
