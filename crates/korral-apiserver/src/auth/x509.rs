//! Client certificate authentication, as upstream's x509 authenticator does it: a client may
//! present a certificate in the TLS handshake (the server asks for one, naming its CA, but
//! does not require it); a certificate issued by the server's CA for client authentication
//! and valid now authenticates its subject: the common name is the user, the organizations
//! are the groups, and `authentication.kubernetes.io/credential-id` is `X509SHA256=<hex
//! SHA-256 of the certificate>`. It is tried before the bearer token; a certificate that does
//! not verify leaves the request to the token (401 without one), as upstream's union of
//! authenticators does.
//!
//! The handshake itself accepts any certificate the client proves it holds the key of
//! ([`AnyClientCertificate`]): judging it is the authenticator's job, so a bad certificate
//! answers 401 like upstream instead of failing the connection. Only certificates the CA
//! signed directly are accepted (no intermediates).

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::user::{AUTHENTICATED_GROUP, UserInfo};

/// The extra key of the credential a user authenticated with (upstream's `CredentialIDKey`).
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// The certificate chain a client presented in the TLS handshake (DER, leaf first), attached
/// to each request of its connection.
#[derive(Debug, Clone)]
pub struct ClientCertificate(pub Arc<Vec<Vec<u8>>>);

/// The CA whose client certificates authenticate users.
#[derive(Debug, Clone)]
pub struct ClientCa {
    /// The CA certificate, DER.
    der: Vec<u8>,
}

impl ClientCa {
    /// The CA of the PEM certificate `pem`, `None` when it does not parse.
    pub fn from_pem(pem: &str) -> Option<Self> {
        use rustls::pki_types::pem::PemObject as _;
        let der = CertificateDer::from_pem_slice(pem.as_bytes())
            .ok()?
            .to_vec();
        X509Certificate::from_der(&der).ok()?;
        Some(Self { der })
    }

    /// The user `presented` authenticates, if its leaf is a client certificate the CA issued,
    /// valid at `now` (Unix seconds), with a common name.
    pub fn authenticate(&self, presented: &ClientCertificate, now: i64) -> Option<UserInfo> {
        let leaf_der = presented.0.first()?;
        let (_, leaf) = X509Certificate::from_der(leaf_der).ok()?;
        let (_, ca) = X509Certificate::from_der(&self.der).ok()?;
        if leaf.issuer().as_raw() != ca.subject().as_raw()
            || leaf.verify_signature(Some(ca.public_key())).is_err()
        {
            return None;
        }
        let validity = leaf.validity();
        if now < validity.not_before.timestamp() || now > validity.not_after.timestamp() {
            return None;
        }
        if !for_client_auth(&leaf) {
            return None;
        }
        let subject = leaf.subject();
        let name = subject
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .filter(|cn| !cn.is_empty())?
            .to_string();
        let mut groups: Vec<String> = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok())
            .map(str::to_string)
            .collect();
        groups.push(AUTHENTICATED_GROUP.to_string());
        let fingerprint = ring::digest::digest(&ring::digest::SHA256, leaf_der);
        let hex: String = fingerprint
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut user = UserInfo {
            name,
            groups,
            ..UserInfo::default()
        };
        user.extra
            .insert(CREDENTIAL_ID.to_string(), vec![format!("X509SHA256={hex}")]);
        Some(user)
    }

    /// The subject of the CA, as the handshake names it to clients choosing a certificate.
    fn subject(&self) -> Option<DistinguishedName> {
        let (_, ca) = X509Certificate::from_der(&self.der).ok()?;
        Some(DistinguishedName::from(ca.subject().as_raw().to_vec()))
    }
}

/// Whether `cert` may authenticate a client: no extended key usage at all (any usage), or
/// one that includes client authentication or any usage (Go's `KeyUsages` check).
fn for_client_auth(cert: &X509Certificate<'_>) -> bool {
    cert.extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::ExtendedKeyUsage(eku) => Some(eku.client_auth || eku.any),
            _ => None,
        })
        .unwrap_or(true)
}

/// The handshake side: asks for a certificate issued by the CA (naming it), requires none,
/// accepts any certificate whose key the client proves it holds; [`ClientCa::authenticate`]
/// judges it per request.
#[derive(Debug)]
pub struct AnyClientCertificate {
    hints: Vec<DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl AnyClientCertificate {
    /// A verifier naming `ca` to clients, checking handshake signatures with `algorithms`.
    pub fn new(ca: &ClientCa, algorithms: WebPkiSupportedAlgorithms) -> Self {
        Self {
            hints: ca.subject().into_iter().collect(),
            algorithms,
        }
    }
}

impl ClientCertVerifier for AnyClientCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use rcgen::{
        CertificateParams, DistinguishedName as Dn, DnType, ExtendedKeyUsagePurpose, KeyPair,
    };

    use super::*;

    /// A certificate for `cn`/`org` issued by `signer` (or self-signed when `None`), valid
    /// for an hour around now, with `usages` as extended key usages.
    fn certificate(
        signer: Option<&crate::signer::CertificateSigner>,
        cn: &str,
        usages: &[&str],
    ) -> ClientCertificate {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::default();
        let mut dn = Dn::new();
        dn.push(DnType::CommonName, cn);
        dn.push(DnType::OrganizationName, "dev");
        params.distinguished_name = dn;
        let der = match signer {
            Some(signer) => {
                let request = params.serialize_request(&key).expect("csr");
                let usages: Vec<String> = usages.iter().map(|u| u.to_string()).collect();
                let pem = signer
                    .sign(
                        request.der(),
                        &usages,
                        std::time::Duration::from_secs(3600),
                        jiff::Timestamp::now(),
                    )
                    .expect("signed");
                use rustls::pki_types::pem::PemObject as _;
                CertificateDer::from_pem_slice(pem.as_bytes())
                    .expect("pem")
                    .to_vec()
            }
            None => {
                params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
                params
                    .self_signed(&key)
                    .expect("self-signed")
                    .der()
                    .to_vec()
            }
        };
        ClientCertificate(Arc::new(vec![der]))
    }

    #[test]
    fn a_client_certificate_from_the_ca_is_its_subject() {
        let signer = crate::tls::signing_ca().expect("ca");
        let ca = ClientCa::from_pem(signer.ca_pem()).expect("ca");
        let now = jiff::Timestamp::now().as_second();
        let cert = certificate(Some(&signer), "alice", &["client auth"]);
        let user = ca.authenticate(&cert, now).expect("authenticated");
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["dev", AUTHENTICATED_GROUP]);
        let id = &user.extra[CREDENTIAL_ID][0];
        assert!(id.starts_with("X509SHA256=") && id.len() == 11 + 64, "{id}");
        // Not yet valid, expired.
        assert!(ca.authenticate(&cert, now - 3600).is_none());
        assert!(ca.authenticate(&cert, now + 7200).is_none());
        // A serving certificate, another CA's, no common name.
        let serving = certificate(Some(&signer), "alice", &["server auth"]);
        assert!(ca.authenticate(&serving, now).is_none());
        assert!(
            ca.authenticate(&certificate(None, "alice", &[]), now)
                .is_none()
        );
        let other = crate::tls::signing_ca().expect("other ca");
        let foreign = certificate(Some(&other), "alice", &["client auth"]);
        assert!(ca.authenticate(&foreign, now).is_none());
        let nameless = certificate(Some(&signer), "", &["client auth"]);
        assert!(ca.authenticate(&nameless, now).is_none());
    }
}
