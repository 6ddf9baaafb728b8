//! TLS material for the HTTPS listener: a self-signed CA and a serving certificate it signs.
//!
//! The CA (`CN=korral-ca`) is what kubeconfigs trust (`certificate-authority-data`); the serving
//! certificate carries the names clients dial (`localhost`, `127.0.0.1`, `::1` and any extra
//! hosts) with the `serverAuth` extended key usage, so both Go's `crypto/x509` (kubectl) and
//! rustls/webpki (kube-rs) accept it. Keys are ECDSA P-256.
//!
//! [`load_or_generate`] keeps the CA in a data directory (`<dir>/pki/`) so a durable server
//! restarted on the same directory keeps its CA and previously written kubeconfigs stay valid;
//! the serving certificate is re-issued by that CA on every start, so new host names are
//! picked up without invalidating anything clients pin.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::signer::CertificateSigner;

/// Common name of the generated certificate authority.
pub const CA_COMMON_NAME: &str = "korral-ca";

/// Common name of the generated serving certificate.
pub const SERVING_COMMON_NAME: &str = "korral-apiserver";

/// Days the CA stays valid.
const CA_VALIDITY_DAYS: i64 = 3650;

/// Days a serving certificate stays valid.
const SERVING_VALIDITY_DAYS: i64 = 365;

/// Subfolder of the data directory holding the PKI files.
pub(crate) const PKI_DIR: &str = "pki";
const CA_CERT_FILE: &str = "ca.crt";
const CA_KEY_FILE: &str = "ca.key";
const SERVING_CERT_FILE: &str = "apiserver.crt";
const SERVING_KEY_FILE: &str = "apiserver.key";

/// PEM-encoded TLS material: the CA certificate and the serving certificate with its key.
#[derive(Clone)]
pub struct TlsMaterial {
    /// The CA certificate clients trust (`certificate-authority-data` in kubeconfigs).
    pub ca_cert_pem: String,
    /// The serving certificate, signed by the CA.
    pub cert_pem: String,
    /// The serving certificate's private key (PKCS#8).
    pub key_pem: String,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// Why TLS material could not be produced or used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating a key pair failed.
    #[error("generating a key pair: {0}")]
    GenerateKey(#[source] rcgen::Error),
    /// A requested host is not a valid DNS name or IP address.
    #[error("invalid host name {host:?} for the serving certificate: {detail}")]
    InvalidHost {
        /// The offending host.
        host: String,
        /// What is wrong with it.
        detail: String,
    },
    /// Signing a certificate failed.
    #[error("signing the {what} certificate: {source}")]
    SignCertificate {
        /// Which certificate (`CA` or `serving`).
        what: &'static str,
        /// What rcgen reported.
        #[source]
        source: rcgen::Error,
    },
    /// A PEM certificate could not be parsed.
    #[error("parsing the {what} certificate PEM: {detail}")]
    ParseCertificate {
        /// Which certificate.
        what: &'static str,
        /// What went wrong.
        detail: String,
    },
    /// A PEM private key could not be parsed.
    #[error("parsing the {what} private key PEM: {detail}")]
    ParseKey {
        /// Which key.
        what: &'static str,
        /// What went wrong.
        detail: String,
    },
    /// rustls rejected the configuration (for instance a key that does not match the cert).
    #[error("building the TLS configuration: {0}")]
    BuildConfig(#[source] rustls::Error),
    /// The serving certificate does not chain to the CA for the requested name.
    #[error("verifying the serving certificate for {server_name:?}: {source}")]
    VerifyChain {
        /// The name verification was attempted for.
        server_name: String,
        /// What rustls reported.
        #[source]
        source: rustls::Error,
    },
    /// A PKI file could not be read.
    #[error("reading {path}: {source}")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A PKI file or directory could not be written.
    #[error("writing {path}: {source}")]
    WriteFile {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A CA: its certificate PEM and key.
struct Ca {
    cert_pem: String,
    key: KeyPair,
}

impl Ca {
    /// The CA as the signer of CertificateSigningRequests.
    fn into_signer(self) -> Result<CertificateSigner, TlsError> {
        CertificateSigner::new(self.cert_pem, self.key).map_err(|e| TlsError::ParseCertificate {
            what: "CA",
            detail: e.to_string(),
        })
    }
}

/// The distinguished name and key usages of the CA; also used to rebuild an [`Issuer`] for a
/// CA loaded from disk (rcgen derives the issuer name and authority key identifier from these
/// and the key, so the result matches the stored certificate exactly).
fn ca_params() -> CertificateParams {
    ca_params_named(CA_COMMON_NAME)
}

/// The distinguished name (common name `name`) and key usages of a certificate authority.
pub(crate) fn ca_params_named(name: &str) -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

/// A validity window starting a day before today (UTC midnight, so clocks slightly behind
/// still accept it) and lasting `days`.
pub(crate) fn set_validity(params: &mut CertificateParams, days: i64) {
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let start = today.yesterday().unwrap_or(today);
    let end = start
        .checked_add(jiff::Span::new().days(days))
        .unwrap_or(jiff::civil::date(9999, 12, 31));
    let to_rcgen = |d: jiff::civil::Date| {
        rcgen::date_time_ymd(
            i32::from(d.year()),
            u8::try_from(d.month()).unwrap_or(1),
            u8::try_from(d.day()).unwrap_or(1),
        )
    };
    params.not_before = to_rcgen(start);
    params.not_after = to_rcgen(end);
}

fn generate_ca() -> Result<Ca, TlsError> {
    let key =
        KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(TlsError::GenerateKey)?;
    let mut params = ca_params();
    set_validity(&mut params, CA_VALIDITY_DAYS);
    let cert = params
        .self_signed(&key)
        .map_err(|source| TlsError::SignCertificate { what: "CA", source })?;
    Ok(Ca {
        cert_pem: cert.pem(),
        key,
    })
}

/// The subject alternative names of the serving certificate: the loopback names plus `hosts`,
/// deduplicated, IP literals as IP SANs (brackets around IPv6 literals are accepted).
fn subject_alt_names(hosts: &[String]) -> Result<Vec<SanType>, TlsError> {
    let mut seen = BTreeSet::new();
    let mut sans = Vec::new();
    let defaults = ["localhost", "127.0.0.1", "::1"];
    for host in defaults
        .iter()
        .copied()
        .chain(hosts.iter().map(String::as_str))
    {
        let host = host.trim();
        let bare = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if bare.is_empty() {
            continue;
        }
        if let Ok(ip) = bare.parse::<IpAddr>() {
            if seen.insert(ip.to_string()) {
                sans.push(SanType::IpAddress(ip));
            }
            continue;
        }
        let name = bare.trim_end_matches('.').to_ascii_lowercase();
        if !is_dns_name(&name) {
            return Err(TlsError::InvalidHost {
                host: host.to_string(),
                detail: "not a DNS name or IP address".to_string(),
            });
        }
        if !seen.insert(name.clone()) {
            continue;
        }
        let dns = name
            .clone()
            .try_into()
            .map_err(|e: rcgen::Error| TlsError::InvalidHost {
                host: host.to_string(),
                detail: e.to_string(),
            })?;
        sans.push(SanType::DnsName(dns));
    }
    Ok(sans)
}

/// Whether `name` is a DNS name a certificate can carry: dot-separated labels of letters,
/// digits, `-` and `_` (at most 63 bytes each, not starting or ending with `-`), at most 253
/// bytes overall, optionally starting with a `*.` wildcard label.
fn is_dns_name(name: &str) -> bool {
    let rest = name.strip_prefix("*.").unwrap_or(name);
    !rest.is_empty()
        && name.len() <= 253
        && rest.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// Issues a serving certificate for `hosts` signed by `ca`; returns (cert PEM, key PEM).
fn issue_serving(ca: &Ca, hosts: &[String]) -> Result<(String, String), TlsError> {
    let key =
        KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(TlsError::GenerateKey)?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, SERVING_COMMON_NAME);
    params.distinguished_name = dn;
    params.subject_alt_names = subject_alt_names(hosts)?;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, SERVING_VALIDITY_DAYS);
    let issuer = Issuer::new(ca_params(), &ca.key);
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(|source| TlsError::SignCertificate {
            what: "serving",
            source,
        })?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Generates a fresh CA and a serving certificate for `localhost`, `127.0.0.1`, `::1` and
/// `hosts` (IP literals become IP SANs).
pub fn generate(hosts: &[String]) -> Result<TlsMaterial, TlsError> {
    generate_with_signer(hosts).map(|(material, _)| material)
}

/// [`generate`], also answering the CA as a [`CertificateSigner`] (what the simulated
/// kube-controller-manager issues CertificateSigningRequests' certificates with).
pub fn generate_with_signer(
    hosts: &[String],
) -> Result<(TlsMaterial, CertificateSigner), TlsError> {
    let ca = generate_ca()?;
    let (cert_pem, key_pem) = issue_serving(&ca, hosts)?;
    let material = TlsMaterial {
        ca_cert_pem: ca.cert_pem.clone(),
        cert_pem,
        key_pem,
    };
    Ok((material, ca.into_signer()?))
}

/// A fresh CA as a [`CertificateSigner`], for a server without TLS material of its own.
pub fn signing_ca() -> Result<CertificateSigner, TlsError> {
    generate_ca()?.into_signer()
}

fn parse_cert(what: &'static str, pem: &str) -> Result<CertificateDer<'static>, TlsError> {
    CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|e| TlsError::ParseCertificate {
        what,
        detail: e.to_string(),
    })
}

fn parse_key(what: &'static str, pem: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| TlsError::ParseKey {
        what,
        detail: e.to_string(),
    })
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A rustls server configuration serving `m` (ring provider, TLS 1.2 and 1.3, no client
/// authentication, ALPN `h2` then `http/1.1`).
pub fn server_config(m: &TlsMaterial) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let cert = parse_cert("serving", &m.cert_pem)?;
    let key = parse_key("serving", &m.key_pem)?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::BuildConfig)?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .map_err(TlsError::BuildConfig)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The API server's rustls configuration: [`server_config`] that also asks clients for a
/// certificate issued by the CA of `m` (naming it, requiring none), which the authenticator
/// then judges ([`crate::auth::x509`]).
pub fn api_server_config(m: &TlsMaterial) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let cert = parse_cert("serving", &m.cert_pem)?;
    let key = parse_key("serving", &m.key_pem)?;
    let ca = crate::auth::ClientCa::from_pem(&m.ca_cert_pem).ok_or_else(|| {
        TlsError::ParseCertificate {
            what: "CA",
            detail: "not a PEM certificate".into(),
        }
    })?;
    let provider = provider();
    let verifier = crate::auth::x509::AnyClientCertificate::new(
        &ca,
        provider.signature_verification_algorithms,
    );
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::BuildConfig)?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_single_cert(vec![cert], key)
        .map_err(TlsError::BuildConfig)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A rustls client configuration trusting only the CA of `m` (ring provider, ALPN `h2` then
/// `http/1.1`): what an in-process client (tests, health checks) uses to talk to the server.
pub fn client_config(m: &TlsMaterial) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(parse_cert("CA", &m.ca_cert_pem)?)
        .map_err(TlsError::BuildConfig)?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::BuildConfig)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Checks, as webpki does for kube-rs, that the serving certificate of `m` chains to its CA and
/// is valid now for `server_name` (a DNS name or an IP literal).
pub fn verify(m: &TlsMaterial, server_name: &str) -> Result<(), TlsError> {
    let verify_error = |source| TlsError::VerifyChain {
        server_name: server_name.to_string(),
        source,
    };
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(parse_cert("CA", &m.ca_cert_pem)?)
        .map_err(verify_error)?;
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| verify_error(rustls::Error::General(e.to_string())))?;
    let leaf = parse_cert("serving", &m.cert_pem)?;
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|e| verify_error(rustls::Error::General(format!("invalid server name: {e}"))))?;
    use rustls::client::danger::ServerCertVerifier as _;
    verifier
        .verify_server_cert(&leaf, &[], &name, &[], UnixTime::now())
        .map(|_| ())
        .map_err(verify_error)
}

/// Loads the CA kept in `<dir>/pki/` (creating and persisting a new one when there is none or
/// the stored one is unusable), issues a fresh serving certificate for `hosts` with it, and
/// writes `ca.crt`, `ca.key`, `apiserver.crt` and `apiserver.key` there (keys mode 0600).
///
/// A server restarted on the same directory keeps its CA, so kubeconfigs written earlier stay
/// valid.
pub fn load_or_generate(dir: &Path, hosts: &[String]) -> Result<TlsMaterial, TlsError> {
    load_or_generate_with_signer(dir, hosts).map(|(material, _)| material)
}

/// [`load_or_generate`], also answering the CA in use as a [`CertificateSigner`].
pub fn load_or_generate_with_signer(
    dir: &Path,
    hosts: &[String],
) -> Result<(TlsMaterial, CertificateSigner), TlsError> {
    let pki = dir.join(PKI_DIR);
    crate::kubeconfig::create_private_dir(&pki, true).map_err(|source| TlsError::WriteFile {
        path: pki.clone(),
        source,
    })?;
    let ca_cert_path = pki.join(CA_CERT_FILE);
    let ca_key_path = pki.join(CA_KEY_FILE);

    let stored = match (read_optional(&ca_cert_path)?, read_optional(&ca_key_path)?) {
        (Some(cert_pem), Some(key_pem)) => match load_ca(cert_pem, &key_pem) {
            Ok(ca) => Some(ca),
            Err(e) => {
                tracing::warn!(dir = %pki.display(), error = %e, "stored CA is unusable; generating a new one (existing kubeconfigs will stop working)");
                None
            }
        },
        (None, None) => None,
        _ => {
            tracing::warn!(dir = %pki.display(), "CA certificate or key missing; generating a new CA (existing kubeconfigs will stop working)");
            None
        }
    };

    let (ca, material, generated) = match stored {
        Some(ca) => {
            let (cert_pem, key_pem) = issue_serving(&ca, hosts)?;
            let material = TlsMaterial {
                ca_cert_pem: ca.cert_pem.clone(),
                cert_pem,
                key_pem,
            };
            // The stored key might not belong to the stored certificate, or the CA might have
            // been tampered with: only keep it if what it signs verifies against it.
            match verify(&material, "localhost") {
                Ok(()) => {
                    tracing::debug!(dir = %pki.display(), "reusing the stored CA");
                    (ca, material, false)
                }
                Err(e) => {
                    tracing::warn!(dir = %pki.display(), error = %e, "stored CA does not verify; generating a new one (existing kubeconfigs will stop working)");
                    fresh(hosts)?
                }
            }
        }
        None => fresh(hosts)?,
    };

    if generated {
        write_file(&ca_key_path, ca.key.serialize_pem().as_bytes(), true)?;
        write_file(&ca_cert_path, ca.cert_pem.as_bytes(), false)?;
        tracing::info!(dir = %pki.display(), "generated a new cluster CA");
    }
    write_file(
        &pki.join(SERVING_KEY_FILE),
        material.key_pem.as_bytes(),
        true,
    )?;
    write_file(
        &pki.join(SERVING_CERT_FILE),
        material.cert_pem.as_bytes(),
        false,
    )?;
    Ok((material, ca.into_signer()?))
}

/// A new CA and serving certificate (`true`: the CA is new, to be persisted).
fn fresh(hosts: &[String]) -> Result<(Ca, TlsMaterial, bool), TlsError> {
    let ca = generate_ca()?;
    let (cert_pem, key_pem) = issue_serving(&ca, hosts)?;
    let material = TlsMaterial {
        ca_cert_pem: ca.cert_pem.clone(),
        cert_pem,
        key_pem,
    };
    Ok((ca, material, true))
}

fn load_ca(cert_pem: String, key_pem: &str) -> Result<Ca, TlsError> {
    parse_cert("CA", &cert_pem)?;
    let key = KeyPair::from_pem(key_pem).map_err(|e| TlsError::ParseKey {
        what: "CA",
        detail: e.to_string(),
    })?;
    Ok(Ca { cert_pem, key })
}

pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, TlsError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(TlsError::ReadFile {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Writes `contents` to `path` atomically (temporary file in the same directory, then rename);
/// `secret` files get mode 0600, others 0644.
pub(crate) fn write_file(path: &Path, contents: &[u8], secret: bool) -> Result<(), TlsError> {
    let fail = |source| TlsError::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(if secret { 0o600 } else { 0o644 });
        }
        #[cfg(not(unix))]
        let _ = secret;
        let mut file = options.open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// Handshakes a tokio-rustls server and client over an in-memory duplex, exchanging a
    /// byte; returns the ALPN protocol the client negotiated.
    async fn handshake(m: &TlsMaterial, server_name: &str) -> anyhow::Result<Option<Vec<u8>>> {
        let acceptor = tokio_rustls::TlsAcceptor::from(server_config(m)?);
        let connector = tokio_rustls::TlsConnector::from(client_config(m)?);
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let server = tokio::spawn(async move {
            let mut tls = acceptor.accept(server_io).await?;
            let mut buf = [0u8; 1];
            tls.read_exact(&mut buf).await?;
            tls.write_all(&buf).await?;
            tls.flush().await?;
            anyhow::Ok(())
        });
        let name = ServerName::try_from(server_name.to_string())?;
        let mut tls = connector.connect(name, client_io).await?;
        tls.write_all(b"k").await?;
        let mut buf = [0u8; 1];
        tls.read_exact(&mut buf).await?;
        assert_eq!(&buf, b"k");
        server.await??;
        Ok(tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec))
    }

    #[tokio::test]
    async fn handshake_succeeds_for_localhost_and_loopback_ips() -> anyhow::Result<()> {
        let m = generate(&["korral.example".to_string(), "10.1.2.3".to_string()])?;
        for name in [
            "localhost",
            "127.0.0.1",
            "::1",
            "korral.example",
            "10.1.2.3",
        ] {
            let alpn = handshake(&m, name).await?;
            assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "{name}");
            verify(&m, name)?;
        }
        Ok(())
    }

    #[tokio::test]
    async fn handshake_over_tcp_loopback() -> anyhow::Result<()> {
        let m = generate(&[])?;
        let acceptor = tokio_rustls::TlsAcceptor::from(server_config(&m)?);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            let (stream, _) = listener.accept().await?;
            let mut tls = acceptor.accept(stream).await?;
            tls.write_all(b"ok").await?;
            tls.shutdown().await?;
            anyhow::Ok(())
        });
        let connector = tokio_rustls::TlsConnector::from(client_config(&m)?);
        let stream = tokio::net::TcpStream::connect(addr).await?;
        let mut tls = connector
            .connect(ServerName::try_from("127.0.0.1")?, stream)
            .await?;
        let mut out = Vec::new();
        tls.read_to_end(&mut out).await?;
        assert_eq!(out, b"ok");
        server.await??;
        Ok(())
    }

    #[tokio::test]
    async fn other_names_and_other_cas_are_rejected() -> anyhow::Result<()> {
        let m = generate(&[])?;
        assert!(handshake(&m, "example.com").await.is_err());
        assert!(verify(&m, "10.9.9.9").is_err());
        let other = generate(&[])?;
        let mixed = TlsMaterial {
            ca_cert_pem: other.ca_cert_pem.clone(),
            ..m.clone()
        };
        assert!(verify(&mixed, "localhost").is_err());
        assert!(handshake(&mixed, "localhost").await.is_err());
        Ok(())
    }

    #[test]
    fn pem_shapes() -> anyhow::Result<()> {
        let m = generate(&["[fd00::1]".to_string(), "Node-1".to_string()])?;
        assert!(m.ca_cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(m.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(m.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        verify(&m, "fd00::1")?;
        verify(&m, "node-1")?;
        assert!(!format!("{m:?}").contains("PRIVATE KEY"));
        Ok(())
    }

    #[test]
    fn invalid_host_is_an_error() {
        assert!(matches!(
            generate(&["not a host\u{0}".to_string()]),
            Err(TlsError::InvalidHost { .. })
        ));
        for bad in ["a..b", "-x.example", "host:6443", "ex ample"] {
            assert!(generate(&[bad.to_string()]).is_err(), "{bad}");
        }
        for good in ["*.example.com", "my_host.local", "EXAMPLE.com."] {
            assert!(
                is_dns_name(good.trim_end_matches('.').to_ascii_lowercase().as_str()),
                "{good}"
            );
        }
    }

    #[test]
    fn load_or_generate_keeps_the_ca_across_restarts() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let first = load_or_generate(dir.path(), &[])?;
        let second = load_or_generate(dir.path(), &["192.168.1.10".to_string()])?;
        assert_eq!(first.ca_cert_pem, second.ca_cert_pem);
        assert_ne!(first.key_pem, second.key_pem);
        verify(&second, "192.168.1.10")?;
        // The new serving certificate is trusted by the CA clients already hold.
        let old_trust = TlsMaterial {
            ca_cert_pem: first.ca_cert_pem.clone(),
            ..second.clone()
        };
        verify(&old_trust, "localhost")?;
        let pki = dir.path().join("pki");
        for f in ["ca.crt", "ca.key", "apiserver.crt", "apiserver.key"] {
            assert!(pki.join(f).is_file(), "{f}");
        }
        assert_eq!(
            std::fs::read_to_string(pki.join("apiserver.key"))?,
            second.key_pem
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            for f in ["ca.key", "apiserver.key"] {
                let mode = std::fs::metadata(pki.join(f))?.permissions().mode();
                assert_eq!(mode & 0o777, 0o600, "{f}");
            }
        }
        Ok(())
    }

    #[test]
    fn load_or_generate_replaces_a_broken_ca() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let first = load_or_generate(dir.path(), &[])?;
        // A key that does not belong to the stored certificate.
        let stray = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        std::fs::write(dir.path().join("pki/ca.key"), stray.serialize_pem())?;
        let second = load_or_generate(dir.path(), &[])?;
        assert_ne!(first.ca_cert_pem, second.ca_cert_pem);
        verify(&second, "localhost")?;
        // Garbage is replaced too.
        std::fs::write(dir.path().join("pki/ca.crt"), "garbage")?;
        let third = load_or_generate(dir.path(), &[])?;
        verify(&third, "127.0.0.1")?;
        let fourth = load_or_generate(dir.path(), &[])?;
        assert_eq!(third.ca_cert_pem, fourth.ca_cert_pem);
        Ok(())
    }
}
