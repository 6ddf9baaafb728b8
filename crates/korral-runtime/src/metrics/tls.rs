//! The serving certificate of the HTTPS metrics endpoint: a self-signed one generated at start,
//! or `tls.crt` / `tls.key` read from a directory (a mounted Secret, as cert-manager writes it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The certificate file name in a certificate directory (`--metrics-cert-name`'s default).
pub const DEFAULT_CERT_NAME: &str = "tls.crt";
/// The key file name in a certificate directory (`--metrics-cert-key`'s default).
pub const DEFAULT_KEY_NAME: &str = "tls.key";

/// The names a generated certificate is valid for.
const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Why the metrics certificate could not be made or loaded.
#[derive(Debug, thiserror::Error)]
pub enum MetricsTlsError {
    /// Generating the self-signed certificate failed.
    #[error("generating a self-signed metrics certificate: {0}")]
    Generate(#[source] rcgen::Error),
    /// Reading the certificate or key file failed.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The certificate file holds no PEM certificate.
    #[error("parsing the certificate chain {path}: {detail}")]
    ParseCertificate {
        /// The file.
        path: String,
        /// What was wrong.
        detail: String,
    },
    /// The key file holds no PEM private key.
    #[error("parsing the private key {path}: {detail}")]
    ParseKey {
        /// The file.
        path: String,
        /// What was wrong.
        detail: String,
    },
    /// rustls refused the certificate and key (e.g. they do not match).
    #[error("building the TLS configuration: {0}")]
    BuildConfig(#[source] rustls::Error),
}

/// A PEM certificate chain and its private key, served by the HTTPS metrics endpoint.
#[derive(Clone)]
pub struct MetricsTls {
    cert_pem: String,
    key_pem: String,
    source: String,
}

impl std::fmt::Debug for MetricsTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsTls")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl MetricsTls {
    /// A fresh self-signed certificate (ECDSA P-256) for `localhost`, `127.0.0.1`, `::1` and
    /// `extra_names` (IP literals become IP SANs), as controller-runtime generates when no
    /// certificate is configured.
    pub fn self_signed(extra_names: &[String]) -> Result<Self, MetricsTlsError> {
        let names: Vec<String> = SELF_SIGNED_NAMES
            .iter()
            .map(|n| (*n).to_owned())
            .chain(extra_names.iter().cloned())
            .collect();
        let certified =
            rcgen::generate_simple_self_signed(names).map_err(MetricsTlsError::Generate)?;
        Ok(Self {
            cert_pem: certified.cert.pem(),
            key_pem: certified.signing_key.serialize_pem(),
            source: "self-signed".to_owned(),
        })
    }

    /// `cert_name` and `key_name` read from `dir` (e.g. `tls.crt` and `tls.key` of a mounted
    /// Secret); checked at once, so a bad file fails at start rather than at the first scrape.
    pub fn from_dir(dir: &Path, cert_name: &str, key_name: &str) -> Result<Self, MetricsTlsError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| MetricsTlsError::Read { path, source })
        };
        let tls = Self {
            cert_pem: read(cert_name)?,
            key_pem: read(key_name)?,
            source: dir.display().to_string(),
        };
        tls.server_config()?;
        Ok(tls)
    }

    /// From PEM text (a certificate chain, leaf first, and its private key).
    pub fn from_pem(cert_pem: impl Into<String>, key_pem: impl Into<String>) -> Self {
        Self {
            cert_pem: cert_pem.into(),
            key_pem: key_pem.into(),
            source: "PEM".to_owned(),
        }
    }

    /// The certificate chain (PEM), e.g. for a client to trust a self-signed certificate.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A rustls server configuration serving this certificate (ring provider, TLS 1.2 and
    /// 1.3, no client certificates, ALPN `http/1.1`).
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, MetricsTlsError> {
        let chain = CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| MetricsTlsError::ParseCertificate {
                path: self.source.clone(),
                detail: e.to_string(),
            })?;
        if chain.is_empty() {
            return Err(MetricsTlsError::ParseCertificate {
                path: self.source.clone(),
                detail: "no CERTIFICATE block".to_owned(),
            });
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).map_err(|e| {
            MetricsTlsError::ParseKey {
                path: self.source.clone(),
                detail: e.to_string(),
            }
        })?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(MetricsTlsError::BuildConfig)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(MetricsTlsError::BuildConfig)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_makes_a_usable_server_config() {
        let tls = MetricsTls::self_signed(&["metrics.example.svc".to_owned()]).expect("generate");
        assert!(tls.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        tls.server_config().expect("server config");
    }

    #[test]
    fn from_dir_reads_tls_crt_and_key_and_rejects_garbage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let generated = MetricsTls::self_signed(&[]).expect("generate");
        std::fs::write(dir.path().join("tls.crt"), &generated.cert_pem).expect("write");
        std::fs::write(dir.path().join("tls.key"), &generated.key_pem).expect("write");
        let loaded =
            MetricsTls::from_dir(dir.path(), DEFAULT_CERT_NAME, DEFAULT_KEY_NAME).expect("load");
        assert_eq!(loaded.cert_pem(), generated.cert_pem());

        std::fs::write(dir.path().join("tls.key"), "not a key").expect("write");
        let err = MetricsTls::from_dir(dir.path(), DEFAULT_CERT_NAME, DEFAULT_KEY_NAME)
            .expect_err("garbage key");
        assert!(matches!(err, MetricsTlsError::ParseKey { .. }), "{err}");
        let err = MetricsTls::from_dir(dir.path(), "missing.crt", DEFAULT_KEY_NAME)
            .expect_err("missing file");
        assert!(matches!(err, MetricsTlsError::Read { .. }), "{err}");
    }
}
