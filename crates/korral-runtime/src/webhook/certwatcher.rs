//! The serving certificate of the webhook server, read from `tls.crt` / `tls.key` in the
//! certificate directory and reloaded when the files change (controller-runtime's
//! `certwatcher`): new TLS connections get the new certificate, no restart.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tracing::{info, warn};

/// Why the certificate could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Reading a file failed (or it does not exist yet).
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The certificate file holds no PEM certificate.
    #[error("parsing the certificate {path}: {detail}")]
    ParseCertificate {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// The key file holds no PEM private key.
    #[error("parsing the private key {path}: {detail}")]
    ParseKey {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
    /// rustls refused the key or the pair does not match.
    #[error("loading the certificate and key: {0}")]
    Load(#[source] rustls::Error),
}

/// The PEM text last loaded, to notice changes.
#[derive(PartialEq, Eq)]
struct Loaded {
    cert: Vec<u8>,
    key: Vec<u8>,
}

/// Serves the certificate of a directory to rustls and reloads it on change.
pub struct CertWatcher {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<(Arc<CertifiedKey>, Loaded)>,
}

impl std::fmt::Debug for CertWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertWatcher")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, CertError> {
    std::fs::read(path).map_err(|source| CertError::Read {
        path: path.to_owned(),
        source,
    })
}

impl CertWatcher {
    /// Loads `cert_name` and `key_name` from `dir`.
    pub fn new(dir: &Path, cert_name: &str, key_name: &str) -> Result<Self, CertError> {
        let cert_path = dir.join(cert_name);
        let key_path = dir.join(key_name);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (key, loaded) = Self::load(&cert_path, &key_path, &provider)?;
        Ok(Self {
            cert_path,
            key_path,
            provider,
            current: RwLock::new((key, loaded)),
        })
    }

    fn load(
        cert_path: &Path,
        key_path: &Path,
        provider: &CryptoProvider,
    ) -> Result<(Arc<CertifiedKey>, Loaded), CertError> {
        let loaded = Loaded {
            cert: read(cert_path)?,
            key: read(key_path)?,
        };
        let key = Self::certified(&loaded, cert_path, key_path, provider)?;
        Ok((key, loaded))
    }

    fn certified(
        loaded: &Loaded,
        cert_path: &Path,
        key_path: &Path,
        provider: &CryptoProvider,
    ) -> Result<Arc<CertifiedKey>, CertError> {
        let chain = CertificateDer::pem_slice_iter(&loaded.cert)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CertError::ParseCertificate {
                path: cert_path.to_owned(),
                detail: e.to_string(),
            })?;
        if chain.is_empty() {
            return Err(CertError::ParseCertificate {
                path: cert_path.to_owned(),
                detail: "no CERTIFICATE block".to_owned(),
            });
        }
        let key = PrivateKeyDer::from_pem_slice(&loaded.key).map_err(|e| CertError::ParseKey {
            path: key_path.to_owned(),
            detail: e.to_string(),
        })?;
        CertifiedKey::from_der(chain, key, provider)
            .map(Arc::new)
            .map_err(CertError::Load)
    }

    /// Rereads the files; swaps the certificate in when they changed and load. Returns whether
    /// it changed. A bad or half-written pair keeps the current certificate.
    pub fn reload(&self) -> Result<bool, CertError> {
        let loaded = Loaded {
            cert: read(&self.cert_path)?,
            key: read(&self.key_path)?,
        };
        {
            let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
            if current.1 == loaded {
                return Ok(false);
            }
        }
        let key = Self::certified(&loaded, &self.cert_path, &self.key_path, &self.provider)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = (key, loaded);
        info!(cert = %self.cert_path.display(), "webhook serving certificate reloaded");
        Ok(true)
    }

    /// Rereads the files every `interval` until `stop` completes.
    pub async fn watch(self: Arc<Self>, interval: Duration, stop: impl Future<Output = ()>) {
        let mut stop = std::pin::pin!(stop);
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = &mut stop => return,
                _ = ticker.tick() => {
                    if let Err(err) = self.reload() {
                        warn!(error = %err, "webhook serving certificate not reloaded");
                    }
                }
            }
        }
    }

    /// The certificate served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .0
            .clone()
    }

    /// A rustls server configuration serving the current certificate of this watcher (ring,
    /// TLS 1.2 and 1.3, no client certificates, ALPN `http/1.1`).
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<rustls::ServerConfig>, CertError> {
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(CertError::Load)?
            .with_no_client_auth()
            .with_cert_resolver(self.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

impl ResolvesServerCert for CertWatcher {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed(name: &str) -> (String, String) {
        let certified =
            rcgen::generate_simple_self_signed(vec![name.to_owned()]).expect("generate");
        (certified.cert.pem(), certified.signing_key.serialize_pem())
    }

    #[test]
    fn loads_reloads_on_change_and_keeps_the_old_pair_on_garbage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (cert, key) = self_signed("one.example");
        std::fs::write(dir.path().join("tls.crt"), &cert).expect("write");
        std::fs::write(dir.path().join("tls.key"), &key).expect("write");
        let watcher = CertWatcher::new(dir.path(), "tls.crt", "tls.key").expect("load");
        let first = watcher.current();
        assert!(!watcher.reload().expect("unchanged"));

        let (cert2, key2) = self_signed("two.example");
        std::fs::write(dir.path().join("tls.crt"), &cert2).expect("write");
        // Certificate and key do not match yet: the old pair stays.
        assert!(watcher.reload().is_err());
        assert_eq!(watcher.current().cert, first.cert);
        std::fs::write(dir.path().join("tls.key"), &key2).expect("write");
        assert!(watcher.reload().expect("changed"));
        assert_ne!(watcher.current().cert, first.cert);

        std::fs::write(dir.path().join("tls.key"), "garbage").expect("write");
        assert!(matches!(watcher.reload(), Err(CertError::ParseKey { .. })));
        assert!(matches!(
            CertWatcher::new(dir.path(), "missing.crt", "tls.key"),
            Err(CertError::Read { .. })
        ));
    }
}
