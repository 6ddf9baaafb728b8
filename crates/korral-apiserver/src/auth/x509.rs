//! Client certificate authentication, as upstream's x509 authenticator does it: a client may
//! present a certificate in the TLS handshake (the server asks for one, naming its CA, but
//! does not require it); a certificate issued by the server's CA for client authentication
//! and valid now authenticates its subject: the common name is the user, the organizations
//! are the groups, and `authentication.kubernetes.io/credential-id` is `X509SHA256=<hex
//! SHA-256 of the certificate>`; a subject attribute `1.3.6.1.4.1.57683.2` is the user's UID
//! (upstream's `AllowParsingUserUIDFromCertAuth`, on by default since v1.33; more than one,
//! an empty or a non-string one fails the certificate). It is tried before the bearer token;
//! a certificate that does not verify leaves the request to the token (401 without one), as
//! upstream's union of authenticators does.
//!
//! The handshake itself accepts any certificate the client proves it holds the key of
//! ([`AnyClientCertificate`]): judging it is the authenticator's job, so a bad certificate
//! answers 401 like upstream instead of failing the connection. The leaf may chain to the CA
//! through intermediates the client presents after it, as Go's verifier builds chains: each
//! a CA certificate (basic constraints), valid now, allowing client authentication, signing
//! the one below it (path length constraints are not checked).

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::user::{AUTHENTICATED_GROUP, UserInfo};

/// The subject attribute holding the user's UID (upstream's `asn1util.X509UID`).
const UID_OID: &[u64] = &[1, 3, 6, 1, 4, 1, 57683, 2];

/// Most intermediates between a leaf and the CA a chain may have.
const MAX_INTERMEDIATES: usize = 8;

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
        let intermediates: Vec<X509Certificate<'_>> = presented
            .0
            .iter()
            .skip(1)
            .filter_map(|der| X509Certificate::from_der(der).ok().map(|(_, c)| c))
            .collect();
        if !valid_at(&leaf, now)
            || !for_client_auth(&leaf)
            || !chains_to(&leaf, &intermediates, &ca, now, 0)
        {
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
            uid: uid_of(&leaf)?,
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

/// Whether `cert` is valid at `now` (Unix seconds).
fn valid_at(cert: &X509Certificate<'_>, now: i64) -> bool {
    let validity = cert.validity();
    now >= validity.not_before.timestamp() && now <= validity.not_after.timestamp()
}

/// Whether `cert` was signed by `ca`, directly or through `intermediates` (each a CA
/// certificate valid at `now` that allows client authentication), at most
/// [`MAX_INTERMEDIATES`] deep.
fn chains_to(
    cert: &X509Certificate<'_>,
    intermediates: &[X509Certificate<'_>],
    ca: &X509Certificate<'_>,
    now: i64,
    depth: usize,
) -> bool {
    let signed_by = |issuer: &X509Certificate<'_>| {
        cert.issuer().as_raw() == issuer.subject().as_raw()
            && cert.verify_signature(Some(issuer.public_key())).is_ok()
    };
    if signed_by(ca) {
        return true;
    }
    depth < MAX_INTERMEDIATES
        && intermediates.iter().any(|i| {
            is_ca(i)
                && valid_at(i, now)
                && for_client_auth(i)
                && signed_by(i)
                && chains_to(i, intermediates, ca, now, depth + 1)
        })
}

/// Whether `cert` is a CA certificate (basic constraints `CA:TRUE`).
fn is_ca(cert: &X509Certificate<'_>) -> bool {
    cert.basic_constraints()
        .ok()
        .flatten()
        .is_some_and(|bc| bc.value.ca)
}

/// The UID the subject names: `Some("")` without one, `None` when the certificate cannot
/// authenticate (several UIDs, an empty one, or one that is not a string), as upstream's
/// `parseUIDFromCert`.
fn uid_of(cert: &X509Certificate<'_>) -> Option<String> {
    uid_in(cert.subject())
}

/// [`uid_of`] for a subject name.
fn uid_in(subject: &x509_parser::x509::X509Name<'_>) -> Option<String> {
    let oid = x509_parser::der_parser::oid::Oid::from(UID_OID).ok()?;
    let uids: Vec<_> = subject.iter_by_oid(&oid).collect();
    match uids.as_slice() {
        [] => Some(String::new()),
        [one] => one
            .as_str()
            .ok()
            .filter(|uid| !uid.is_empty())
            .map(str::to_string),
        _ => None,
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

    /// A certificate for `dn`, CA or not, with `usages`, signed by `issuer` (self-signed when
    /// `None`): its DER and what signs with its key.
    fn issued(
        dn: Dn,
        ca: bool,
        usages: Vec<ExtendedKeyUsagePurpose>,
        issuer: Option<&rcgen::Issuer<'static, KeyPair>>,
    ) -> (Vec<u8>, rcgen::Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::default();
        params.distinguished_name = dn;
        params.extended_key_usages = usages;
        if ca {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        let cert = match issuer {
            Some(issuer) => params.signed_by(&key, issuer).expect("signed"),
            None => params.self_signed(&key).expect("self-signed"),
        };
        (cert.der().to_vec(), rcgen::Issuer::new(params, key))
    }

    fn dn(entries: &[(DnType, &str)]) -> Dn {
        let mut dn = Dn::new();
        for (kind, value) in entries {
            dn.push(kind.clone(), *value);
        }
        dn
    }

    #[test]
    fn the_uid_attribute_is_the_users_uid() {
        let uid = || DnType::CustomDnType(UID_OID.to_vec());
        let (root_der, root) = issued(dn(&[(DnType::CommonName, "root")]), true, vec![], None);
        let ca = ClientCa {
            der: root_der.clone(),
        };
        let now = jiff::Timestamp::now().as_second();
        let client = |entries: &[(DnType, &str)]| {
            let (der, _) = issued(
                dn(entries),
                false,
                vec![ExtendedKeyUsagePurpose::ClientAuth],
                Some(&root),
            );
            ClientCertificate(Arc::new(vec![der]))
        };
        let user = ca
            .authenticate(
                &client(&[(DnType::CommonName, "alice"), (uid(), "u-1")]),
                now,
            )
            .expect("authenticated");
        assert_eq!((user.name.as_str(), user.uid.as_str()), ("alice", "u-1"));
        let plain = ca
            .authenticate(&client(&[(DnType::CommonName, "bob")]), now)
            .expect("authenticated");
        assert_eq!(plain.uid, "");
        // The server's signer keeps the attribute of a request (CSR API certificates).
        let signer = crate::tls::signing_ca().expect("ca");
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::default();
        params.distinguished_name = dn(&[(DnType::CommonName, "dora"), (uid(), "u-2")]);
        let request = params.serialize_request(&key).expect("csr");
        let pem = signer
            .sign(
                request.der(),
                &["client auth".to_string()],
                std::time::Duration::from_secs(3600),
                jiff::Timestamp::now(),
            )
            .expect("signed");
        let server_ca = ClientCa::from_pem(signer.ca_pem()).expect("ca");
        use rustls::pki_types::pem::PemObject as _;
        let der = CertificateDer::from_pem_slice(pem.as_bytes()).expect("pem");
        let issued_pem = ClientCertificate(Arc::new(vec![der.to_vec()]));
        let user = server_ca
            .authenticate(&issued_pem, now)
            .expect("authenticated");
        assert_eq!(user.uid, "u-2");
        // An empty UID: the certificate does not authenticate.
        let empty = client(&[(DnType::CommonName, "eve"), (uid(), "")]);
        assert!(ca.authenticate(&empty, now).is_none());
    }

    /// DER of a name with one attribute per relative name: `(OID arcs, UTF8String value)`.
    fn name_der(attributes: &[(&[u64], &str)]) -> Vec<u8> {
        fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
            assert!(content.len() < 128, "short form only");
            let mut out = vec![tag, content.len() as u8];
            out.extend_from_slice(content);
            out
        }
        fn oid(arcs: &[u64]) -> Vec<u8> {
            let mut out = vec![(arcs[0] * 40 + arcs[1]) as u8];
            for &arc in &arcs[2..] {
                let mut groups = vec![(arc & 0x7f) as u8];
                let mut rest = arc >> 7;
                while rest > 0 {
                    groups.push(0x80 | (rest & 0x7f) as u8);
                    rest >>= 7;
                }
                out.extend(groups.into_iter().rev());
            }
            tlv(0x06, &out)
        }
        let mut rdns = Vec::new();
        for (arcs, value) in attributes {
            let mut pair = oid(arcs);
            pair.extend(tlv(0x0c, value.as_bytes()));
            rdns.extend(tlv(0x31, &tlv(0x30, &pair)));
        }
        tlv(0x30, &rdns)
    }

    #[test]
    fn several_or_empty_uids_refuse() {
        use x509_parser::x509::X509Name;
        const CN: &[u64] = &[2, 5, 4, 3];
        let parse = |der: &[u8]| -> Option<String> {
            let (_, name) = X509Name::from_der(der).expect("name");
            uid_in(&name)
        };
        assert_eq!(
            parse(&name_der(&[(CN, "a"), (UID_OID, "u")])),
            Some("u".into())
        );
        assert_eq!(parse(&name_der(&[(CN, "a")])), Some(String::new()));
        assert_eq!(parse(&name_der(&[(UID_OID, "u"), (UID_OID, "v")])), None);
        assert_eq!(parse(&name_der(&[(UID_OID, "")])), None);
    }

    #[test]
    fn leaves_chain_through_presented_intermediates() {
        let (root_der, root) = issued(dn(&[(DnType::CommonName, "root")]), true, vec![], None);
        let ca = ClientCa { der: root_der };
        let now = jiff::Timestamp::now().as_second();
        let client_auth = || vec![ExtendedKeyUsagePurpose::ClientAuth];
        let (mid_der, mid) = issued(
            dn(&[(DnType::CommonName, "mid")]),
            true,
            vec![],
            Some(&root),
        );
        let (leaf_der, _) = issued(
            dn(&[(DnType::CommonName, "carol")]),
            false,
            client_auth(),
            Some(&mid),
        );
        let chain = ClientCertificate(Arc::new(vec![leaf_der.clone(), mid_der]));
        let user = ca.authenticate(&chain, now).expect("authenticated");
        assert_eq!(user.name, "carol");
        // Without the intermediate, the leaf does not chain to the CA.
        let alone = ClientCertificate(Arc::new(vec![leaf_der]));
        assert!(ca.authenticate(&alone, now).is_none());
        // An intermediate that is not a CA, or only for servers, breaks the chain.
        for (is_ca, usages) in [
            (false, vec![]),
            (true, vec![ExtendedKeyUsagePurpose::ServerAuth]),
        ] {
            let (bad_der, bad) = issued(
                dn(&[(DnType::CommonName, "bad")]),
                is_ca,
                usages,
                Some(&root),
            );
            let (leaf_der, _) = issued(
                dn(&[(DnType::CommonName, "dan")]),
                false,
                client_auth(),
                Some(&bad),
            );
            let chain = ClientCertificate(Arc::new(vec![leaf_der, bad_der]));
            assert!(ca.authenticate(&chain, now).is_none());
        }
    }
}
