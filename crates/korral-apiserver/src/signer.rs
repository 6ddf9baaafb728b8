//! The cluster's certificate signer: the CA kube-controller-manager's `csrsigning`
//! controllers issue certificates with for approved CertificateSigningRequests (upstream's
//! `authority.CertificateAuthority` with its `PermissiveSigningPolicy`).
//!
//! A certificate carries the request's subject and subject alternative names and the public
//! key the request was signed with; its key usages are the request's `spec.usages` (never the
//! extensions the request asks for), it is not a CA, it starts five minutes in the past (clock
//! skew) and lasts the requested duration, capped by the CA's own expiry. On a server with
//! TLS the signer is the CA clients already trust, so issued client certificates chain to the
//! kubeconfig's `certificate-authority-data`.

use std::time::Duration;

use rcgen::{
    CertificateSigningRequestParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SerialNumber,
};
use rustls::pki_types::CertificateSigningRequestDer;
use x509_parser::prelude::{FromDer, X509Certificate};

/// How far back a certificate's validity starts (upstream's `Backdate`).
const BACKDATE: Duration = Duration::from_secs(5 * 60);

/// Below this lifetime a certificate's end is not moved back with its start (upstream's
/// `Short`: five minutes are a large share of a short lifetime).
const SHORT: Duration = Duration::from_secs(8 * 60 * 60);

/// Why a certificate could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The CA certificate or key could not be read.
    #[error("loading the signing CA: {0}")]
    LoadCa(String),
    /// The request is not a PKCS#10 request rcgen can issue from (bad signature, unsupported
    /// extension or key algorithm).
    #[error("reading the certificate request: {0}")]
    ParseRequest(#[source] rcgen::Error),
    /// A usage is not one upstream knows (`keyUsagesFromStrings`).
    #[error("unrecognized usage values: {0:?}")]
    UnknownUsage(Vec<String>),
    /// Drawing the serial number failed.
    #[error("drawing a serial number")]
    Serial,
    /// The CA has expired: nothing it signs would be valid.
    #[error("the signer has expired: {0}")]
    Expired(String),
    /// Producing the certificate failed.
    #[error("signing the certificate: {0}")]
    Sign(#[source] rcgen::Error),
}

/// A CA that issues certificates for CertificateSigningRequests.
pub struct CertificateSigner {
    ca_cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
    /// When the CA expires (Unix seconds): no certificate outlives it.
    ca_not_after: i64,
}

impl std::fmt::Debug for CertificateSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateSigner")
            .field("ca_cert_pem", &self.ca_cert_pem)
            .field("key", &"<redacted>")
            .finish()
    }
}

impl CertificateSigner {
    /// A signer from a CA certificate (PEM) and its key.
    pub fn new(ca_cert_pem: String, key: KeyPair) -> Result<Self, SignError> {
        let der = pem_body(&ca_cert_pem).ok_or_else(|| {
            SignError::LoadCa("the CA certificate is not a PEM CERTIFICATE".into())
        })?;
        let (_, ca) =
            X509Certificate::from_der(&der).map_err(|e| SignError::LoadCa(e.to_string()))?;
        let ca_not_after = ca.validity().not_after.timestamp();
        let issuer = Issuer::from_ca_cert_pem(&ca_cert_pem, key)
            .map_err(|e| SignError::LoadCa(e.to_string()))?;
        Ok(Self {
            ca_cert_pem,
            issuer,
            ca_not_after,
        })
    }

    /// The CA certificate (PEM) issued certificates chain to.
    pub fn ca_pem(&self) -> &str {
        &self.ca_cert_pem
    }

    /// Issues a certificate (PEM) for the PKCS#10 request `request` (DER) with the key usages
    /// `usages` (the API's names: `client auth`, `digital signature`, ...), valid for `ttl`
    /// from `now` (see the module docs for the exact window).
    pub fn sign(
        &self,
        request: &[u8],
        usages: &[String],
        ttl: Duration,
        now: jiff::Timestamp,
    ) -> Result<String, SignError> {
        let der = CertificateSigningRequestDer::from(request.to_vec());
        let mut csr =
            CertificateSigningRequestParams::from_der(&der).map_err(SignError::ParseRequest)?;
        let (key_usages, extended) = key_usages(usages)?;
        let params = &mut csr.params;
        params.key_usages = key_usages;
        params.extended_key_usages = extended;
        params.is_ca = IsCa::ExplicitNoCa;
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(serial()?);
        let now_secs = now.as_second();
        let not_before = now_secs - secs(BACKDATE);
        let mut not_after = if ttl < SHORT {
            now_secs + secs(ttl)
        } else {
            not_before + secs(ttl)
        };
        if not_after > self.ca_not_after {
            not_after = self.ca_not_after;
        }
        if not_after <= now_secs {
            return Err(SignError::Expired(format!(
                "the CA expired at Unix time {}",
                self.ca_not_after
            )));
        }
        params.not_before = offset(not_before)?;
        params.not_after = offset(not_after)?;
        let certificate = csr.signed_by(&self.issuer).map_err(SignError::Sign)?;
        Ok(certificate.pem())
    }
}

/// Whole seconds of `d` as `i64`.
fn secs(d: Duration) -> i64 {
    i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
}

/// Unix seconds as the time type rcgen takes.
fn offset(unix: i64) -> Result<time::OffsetDateTime, SignError> {
    time::OffsetDateTime::from_unix_timestamp(unix)
        .map_err(|e| SignError::Expired(format!("validity bound out of range: {e}")))
}

/// A random positive 128-bit serial number (upstream draws one below 2^128).
fn serial() -> Result<SerialNumber, SignError> {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| SignError::Serial)?;
    // Positive as a DER INTEGER, and never zero.
    bytes[0] = (bytes[0] & 0x7f) | 0x01;
    Ok(SerialNumber::from_slice(&bytes))
}

/// The key usages and extended key usages of the API's usage names (upstream's
/// `keyUsagesFromStrings`), in the order given, without repeats.
fn key_usages(
    usages: &[String],
) -> Result<(Vec<KeyUsagePurpose>, Vec<ExtendedKeyUsagePurpose>), SignError> {
    let mut key = Vec::new();
    let mut extended = Vec::new();
    let mut unknown = Vec::new();
    for usage in usages {
        let k = match usage.as_str() {
            "signing" | "digital signature" => Some(KeyUsagePurpose::DigitalSignature),
            "content commitment" => Some(KeyUsagePurpose::ContentCommitment),
            "key encipherment" => Some(KeyUsagePurpose::KeyEncipherment),
            "key agreement" => Some(KeyUsagePurpose::KeyAgreement),
            "data encipherment" => Some(KeyUsagePurpose::DataEncipherment),
            "cert sign" => Some(KeyUsagePurpose::KeyCertSign),
            "crl sign" => Some(KeyUsagePurpose::CrlSign),
            "encipher only" => Some(KeyUsagePurpose::EncipherOnly),
            "decipher only" => Some(KeyUsagePurpose::DecipherOnly),
            _ => None,
        };
        if let Some(k) = k {
            if !key.contains(&k) {
                key.push(k);
            }
            continue;
        }
        // Object identifiers of the extended key usages rcgen has no name for.
        let e = match usage.as_str() {
            "any" => Some(ExtendedKeyUsagePurpose::Any),
            "server auth" => Some(ExtendedKeyUsagePurpose::ServerAuth),
            "client auth" => Some(ExtendedKeyUsagePurpose::ClientAuth),
            "code signing" => Some(ExtendedKeyUsagePurpose::CodeSigning),
            "email protection" | "s/mime" => Some(ExtendedKeyUsagePurpose::EmailProtection),
            "timestamping" => Some(ExtendedKeyUsagePurpose::TimeStamping),
            "ocsp signing" => Some(ExtendedKeyUsagePurpose::OcspSigning),
            "ipsec end system" => Some(ExtendedKeyUsagePurpose::Other(vec![
                1, 3, 6, 1, 5, 5, 7, 3, 5,
            ])),
            "ipsec tunnel" => Some(ExtendedKeyUsagePurpose::Other(vec![
                1, 3, 6, 1, 5, 5, 7, 3, 6,
            ])),
            "ipsec user" => Some(ExtendedKeyUsagePurpose::Other(vec![
                1, 3, 6, 1, 5, 5, 7, 3, 7,
            ])),
            "microsoft sgc" => Some(ExtendedKeyUsagePurpose::Other(vec![
                1, 3, 6, 1, 4, 1, 311, 10, 3, 3,
            ])),
            "netscape sgc" => Some(ExtendedKeyUsagePurpose::Other(vec![
                2, 16, 840, 1, 113730, 4, 1,
            ])),
            _ => None,
        };
        match e {
            Some(e) if !extended.contains(&e) => extended.push(e),
            Some(_) => {}
            None => unknown.push(usage.clone()),
        }
    }
    if unknown.is_empty() {
        Ok((key, extended))
    } else {
        Err(SignError::UnknownUsage(unknown))
    }
}

/// The DER body of the first PEM block of `pem`.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    use rustls::pki_types::pem::PemObject as _;
    rustls::pki_types::CertificateDer::from_pem_slice(pem.as_bytes())
        .ok()
        .map(|c| c.to_vec())
}

/// A PKCS#10 request (DER) for `cn` in organization `org` with `sans`, for tests.
#[cfg(test)]
pub(crate) fn test_request(cn: &str, org: &str, sans: Vec<rcgen::SanType>) -> Vec<u8> {
    let key = KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::default();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, cn);
    dn.push(rcgen::DnType::OrganizationName, org);
    params.distinguished_name = dn;
    params.subject_alt_names = sans;
    params
        .serialize_request(&key)
        .expect("request")
        .der()
        .to_vec()
}

#[cfg(test)]
mod tests {
    use rcgen::SanType;
    use x509_parser::extensions::ParsedExtension;

    use super::test_request as request;
    use super::*;

    fn signer() -> CertificateSigner {
        crate::tls::signing_ca().expect("ca")
    }

    #[test]
    fn issues_what_the_request_and_usages_say_for_the_requested_time() {
        let signer = signer();
        let now = jiff::Timestamp::now();
        let sans = vec![SanType::DnsName("node-1.example".try_into().expect("dns"))];
        let pem = signer
            .sign(
                &request("system:node:node-1", "system:nodes", sans),
                &[
                    "digital signature".into(),
                    "key encipherment".into(),
                    "server auth".into(),
                ],
                Duration::from_secs(3600),
                now,
            )
            .expect("signed");
        let der = pem_body(&pem).expect("pem");
        let (_, cert) = X509Certificate::from_der(&der).expect("certificate");
        assert_eq!(
            cert.subject().to_string(),
            "CN=system:node:node-1, O=system:nodes"
        );
        assert_eq!(cert.issuer().to_string(), "CN=korral-ca");
        // Short-lived: starts five minutes back, ends an hour from now.
        let validity = cert.validity();
        assert_eq!(validity.not_before.timestamp(), now.as_second() - 300);
        assert_eq!(validity.not_after.timestamp(), now.as_second() + 3600);
        let ca_der = pem_body(signer.ca_pem()).expect("ca pem");
        let (_, ca) = X509Certificate::from_der(&ca_der).expect("ca");
        cert.verify_signature(Some(ca.public_key()))
            .expect("chains to the CA");
        let mut seen = Vec::new();
        for ext in cert.extensions() {
            match ext.parsed_extension() {
                ParsedExtension::ExtendedKeyUsage(eku) => {
                    assert!(eku.server_auth && !eku.client_auth);
                    seen.push("eku");
                }
                ParsedExtension::KeyUsage(ku) => {
                    assert!(ku.digital_signature() && ku.key_encipherment());
                    assert!(!ku.key_cert_sign());
                    seen.push("ku");
                }
                ParsedExtension::BasicConstraints(bc) => {
                    assert!(!bc.ca);
                    seen.push("bc");
                }
                ParsedExtension::SubjectAlternativeName(san) => {
                    assert_eq!(san.general_names.len(), 1);
                    seen.push("san");
                }
                _ => {}
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, ["bc", "eku", "ku", "san"]);
    }

    #[test]
    fn long_lifetimes_are_shifted_back_and_capped_by_the_ca() {
        let signer = signer();
        let now = jiff::Timestamp::now();
        let req = request("alice", "dev", Vec::new());
        let day = Duration::from_secs(86_400);
        let pem = signer
            .sign(&req, &["client auth".into()], day, now)
            .expect("signed");
        let der = pem_body(&pem).expect("pem");
        let (_, cert) = X509Certificate::from_der(&der).expect("certificate");
        assert_eq!(
            cert.validity().not_after.timestamp(),
            now.as_second() - 300 + 86_400
        );
        let forever = Duration::from_secs(100 * 365 * 86_400);
        let pem = signer
            .sign(&req, &["client auth".into()], forever, now)
            .expect("signed");
        let der = pem_body(&pem).expect("pem");
        let (_, cert) = X509Certificate::from_der(&der).expect("certificate");
        assert_eq!(cert.validity().not_after.timestamp(), signer.ca_not_after);
    }

    #[test]
    fn unknown_usages_and_bad_requests_are_errors() {
        let signer = signer();
        let now = jiff::Timestamp::now();
        let req = request("alice", "dev", Vec::new());
        assert!(matches!(
            signer.sign(&req, &["teleport".into()], SHORT, now),
            Err(SignError::UnknownUsage(u)) if u == ["teleport"]
        ));
        let mut broken = req.clone();
        let last = broken.len() - 1;
        broken[last] ^= 0xff;
        assert!(matches!(
            signer.sign(&broken, &["client auth".into()], SHORT, now),
            Err(SignError::ParseRequest(_))
        ));
    }
}
