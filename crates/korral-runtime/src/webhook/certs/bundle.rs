//! The certificate material of self-managed webhook certificates: a CA and a serving
//! certificate signed by it (ECDSA P-256), how long each stays valid, and whether a stored
//! pair still serves the names wanted long enough or must be renewed.

use std::collections::BTreeMap;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

/// The Secret key of the CA certificate.
pub const CA_CERT_KEY: &str = "ca.crt";
/// The Secret key of the CA private key.
pub const CA_KEY_KEY: &str = "ca.key";
/// The Secret key of the serving certificate.
pub const CERT_KEY: &str = "tls.crt";
/// The Secret key of the serving private key.
pub const KEY_KEY: &str = "tls.key";

/// Why certificate material could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// rcgen failed to generate or sign.
    #[error("generating the {what}: {source}")]
    Generate {
        /// What was being generated.
        what: &'static str,
        /// The rcgen error.
        #[source]
        source: rcgen::Error,
    },
    /// A name cannot be put in a certificate.
    #[error("{name:?} is not a DNS name a certificate can carry: {detail}")]
    InvalidName {
        /// The name.
        name: String,
        /// Why.
        detail: String,
    },
}

/// A CA and a serving certificate signed by it, all PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct CertBundle {
    /// The CA certificate (the `caBundle`).
    pub ca_cert_pem: String,
    /// The CA private key.
    pub ca_key_pem: String,
    /// The serving certificate.
    pub cert_pem: String,
    /// The serving private key.
    pub key_pem: String,
}

impl std::fmt::Debug for CertBundle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertBundle").finish_non_exhaustive()
    }
}

/// Sets `not_before` to yesterday (clock skew) and `not_after` `days` later.
fn set_validity(params: &mut CertificateParams, days: i64) {
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

fn generate_key(what: &'static str) -> Result<KeyPair, BundleError> {
    KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .map_err(|source| BundleError::Generate { what, source })
}

/// A new CA named `common_name`, valid `days`; returns (cert PEM, key PEM).
pub fn generate_ca(common_name: &str, days: i64) -> Result<(String, String), BundleError> {
    let key = generate_key("CA key")?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    set_validity(&mut params, days);
    let cert = params
        .self_signed(&key)
        .map_err(|source| BundleError::Generate {
            what: "CA certificate",
            source,
        })?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A serving certificate for `names` (IP literals become IP SANs), valid `days`, signed by the
/// CA `ca_cert_pem` / `ca_key_pem`; returns (cert PEM, key PEM).
pub fn issue_serving(
    ca_cert_pem: &str,
    ca_key_pem: &str,
    names: &[String],
    days: i64,
) -> Result<(String, String), BundleError> {
    let generate = |what| move |source| BundleError::Generate { what, source };
    let ca_key = KeyPair::from_pem(ca_key_pem).map_err(generate("CA key (reading it)"))?;
    let issuer = Issuer::from_ca_cert_pem(ca_cert_pem, ca_key)
        .map_err(generate("CA certificate (reading it)"))?;
    let key = generate_key("serving key")?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(
        DnType::CommonName,
        names.first().map_or("webhook", String::as_str),
    );
    params.distinguished_name = dn;
    params.subject_alt_names = names
        .iter()
        .map(|name| match name.parse::<std::net::IpAddr>() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => name
                .clone()
                .try_into()
                .map(SanType::DnsName)
                .map_err(|e: rcgen::Error| BundleError::InvalidName {
                    name: name.clone(),
                    detail: e.to_string(),
                }),
        })
        .collect::<Result<_, _>>()?;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, days);
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(generate("serving certificate"))?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Parses the first certificate of a PEM text and hands it to `f`.
fn with_cert<T>(pem: &str, f: impl FnOnce(&X509Certificate<'_>) -> Option<T>) -> Option<T> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).ok()?;
    let cert = pem.parse_x509().ok()?;
    f(&cert)
}

/// The names (DNS and IP) a certificate is valid for.
fn subject_names(cert: &X509Certificate<'_>) -> Vec<String> {
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::DNSName(dns) => Some((*dns).to_owned()),
            GeneralName::IPAddress(octets) => match octets.len() {
                4 => <[u8; 4]>::try_from(*octets)
                    .ok()
                    .map(|o| std::net::IpAddr::from(o).to_string()),
                16 => <[u8; 16]>::try_from(*octets)
                    .ok()
                    .map(|o| std::net::IpAddr::from(o).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The first `-----BEGIN ...-----` to `-----END ...-----` block of a PEM text.
fn first_pem_block(pem: &str) -> Option<&str> {
    const END: &str = "-----END CERTIFICATE-----";
    let start = pem.find("-----BEGIN CERTIFICATE-----")?;
    let end = pem[start..].find(END)? + start + END.len();
    Some(&pem[start..end])
}

/// What a stored bundle needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// Nothing: both certificates serve the names beyond the look-ahead.
    None,
    /// A new serving certificate from the same CA.
    ServingCertificate,
    /// A new CA and serving certificate.
    Everything,
}

/// Whether the CA `ca_cert_pem` (with `ca_key_pem`) stays valid `lookahead_secs` from `now`.
fn ca_usable(ca_cert_pem: &str, ca_key_pem: &str, now: i64, lookahead_secs: i64) -> bool {
    KeyPair::from_pem(ca_key_pem).is_ok()
        && with_cert(ca_cert_pem, |ca| {
            let validity = ca.validity();
            Some(
                ca.is_ca()
                    && validity.not_before.timestamp() <= now
                    && validity.not_after.timestamp() > now.saturating_add(lookahead_secs),
            )
        })
        .unwrap_or(false)
}

/// What `bundle` needs to serve `names` at `now` (Unix seconds) and still `lookahead_secs`
/// later: a serving certificate signed by the CA, for every name, with a matching key.
pub fn assess(bundle: &CertBundle, names: &[String], now: i64, lookahead_secs: i64) -> Renewal {
    if !ca_usable(&bundle.ca_cert_pem, &bundle.ca_key_pem, now, lookahead_secs) {
        return Renewal::Everything;
    }
    let serving_ok = KeyPair::from_pem(&bundle.key_pem).is_ok()
        && with_cert(&bundle.ca_cert_pem, |ca| {
            with_cert(&bundle.cert_pem, |cert| {
                let validity = cert.validity();
                let served = subject_names(cert);
                Some(
                    cert.verify_signature(Some(ca.public_key())).is_ok()
                        && validity.not_before.timestamp() <= now
                        && validity.not_after.timestamp() > now.saturating_add(lookahead_secs)
                        && names.iter().all(|n| served.contains(n)),
                )
            })
        })
        .unwrap_or(false)
        && serving_key_matches(bundle);
    if serving_ok {
        Renewal::None
    } else {
        Renewal::ServingCertificate
    }
}

/// Whether the serving key belongs to the serving certificate.
fn serving_key_matches(bundle: &CertBundle) -> bool {
    let Ok(key) = KeyPair::from_pem(&bundle.key_pem) else {
        return false;
    };
    with_cert(&bundle.cert_pem, |cert| {
        Some(cert.public_key().subject_public_key.data.as_ref() == key.public_key_raw())
    })
    .unwrap_or(false)
}

impl CertBundle {
    /// A new CA (`ca_name`, valid `ca_days`) and serving certificate for `names` (valid
    /// `cert_days`).
    pub fn generate(
        ca_name: &str,
        names: &[String],
        ca_days: i64,
        cert_days: i64,
    ) -> Result<Self, BundleError> {
        let (ca_cert_pem, ca_key_pem) = generate_ca(ca_name, ca_days)?;
        let (cert_pem, key_pem) = issue_serving(&ca_cert_pem, &ca_key_pem, names, cert_days)?;
        Ok(Self {
            ca_cert_pem,
            ca_key_pem,
            cert_pem,
            key_pem,
        })
    }

    /// This bundle with a new serving certificate for `names` from the same CA.
    pub fn reissue(&self, names: &[String], cert_days: i64) -> Result<Self, BundleError> {
        let (cert_pem, key_pem) =
            issue_serving(&self.ca_cert_pem, &self.ca_key_pem, names, cert_days)?;
        Ok(Self {
            cert_pem,
            key_pem,
            ..self.clone()
        })
    }

    /// This (new) bundle also trusting the first CA of `previous` while it is still valid at
    /// `now` (Unix seconds): `ca.crt` (and so the injected `caBundle`) holds the new CA first,
    /// then the old one, so replicas still serving a certificate of the old CA are trusted
    /// until they reload. Signing and expiry checks use the first CA only.
    #[must_use]
    pub fn trusting_previous_ca(mut self, previous: &CertBundle, now: i64) -> Self {
        if ca_usable(&previous.ca_cert_pem, &previous.ca_key_pem, now, 0)
            && let Some(first) = first_pem_block(&previous.ca_cert_pem)
            && !self.ca_cert_pem.contains(first)
        {
            if !self.ca_cert_pem.ends_with('\n') {
                self.ca_cert_pem.push('\n');
            }
            self.ca_cert_pem.push_str(first);
            self.ca_cert_pem.push('\n');
        }
        self
    }

    /// The bundle in Secret `data` (missing keys read as empty, which [`assess`] renews).
    pub fn from_data(data: &BTreeMap<String, k8s_openapi::ByteString>) -> Self {
        let text = |key: &str| {
            data.get(key)
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                .unwrap_or_default()
        };
        Self {
            ca_cert_pem: text(CA_CERT_KEY),
            ca_key_pem: text(CA_KEY_KEY),
            cert_pem: text(CERT_KEY),
            key_pem: text(KEY_KEY),
        }
    }

    /// The Secret `data` of this bundle.
    pub fn to_data(&self) -> BTreeMap<String, k8s_openapi::ByteString> {
        [
            (CA_CERT_KEY, &self.ca_cert_pem),
            (CA_KEY_KEY, &self.ca_key_pem),
            (CERT_KEY, &self.cert_pem),
            (KEY_KEY, &self.key_pem),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), k8s_openapi::ByteString(v.as_bytes().to_vec())))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;

    fn names() -> Vec<String> {
        vec![
            "svc.ns.svc".to_owned(),
            "svc.ns.svc.cluster.local".to_owned(),
            "127.0.0.1".to_owned(),
        ]
    }

    #[test]
    fn fresh_bundle_serves_its_names_and_renews_when_needed() {
        let now = jiff::Timestamp::now().as_second();
        let bundle = CertBundle::generate("ca", &names(), 3650, 365).expect("generate");
        assert_eq!(assess(&bundle, &names(), now, 90 * DAY), Renewal::None);
        // Inside the look-ahead of the serving certificate, not of the CA.
        assert_eq!(
            assess(&bundle, &names(), now, 400 * DAY),
            Renewal::ServingCertificate
        );
        assert_eq!(
            assess(&bundle, &names(), now, 4000 * DAY),
            Renewal::Everything
        );
        // Another name wanted.
        let mut more = names();
        more.push("other.ns.svc".to_owned());
        assert_eq!(
            assess(&bundle, &more, now, DAY),
            Renewal::ServingCertificate
        );
        let reissued = bundle.reissue(&more, 365).expect("reissue");
        assert_eq!(reissued.ca_cert_pem, bundle.ca_cert_pem);
        assert_eq!(assess(&reissued, &more, now, DAY), Renewal::None);
    }

    #[test]
    fn foreign_or_broken_material_is_renewed() {
        let now = jiff::Timestamp::now().as_second();
        let one = CertBundle::generate("ca", &names(), 3650, 365).expect("generate");
        let two = CertBundle::generate("ca", &names(), 3650, 365).expect("generate");
        let foreign = CertBundle {
            cert_pem: two.cert_pem.clone(),
            key_pem: two.key_pem.clone(),
            ..one.clone()
        };
        assert_eq!(
            assess(&foreign, &names(), now, DAY),
            Renewal::ServingCertificate
        );
        let mismatched = CertBundle {
            key_pem: two.key_pem.clone(),
            ..one.clone()
        };
        assert_eq!(
            assess(&mismatched, &names(), now, DAY),
            Renewal::ServingCertificate
        );
        let empty = CertBundle::from_data(&BTreeMap::new());
        assert_eq!(assess(&empty, &names(), now, DAY), Renewal::Everything);
        let round = CertBundle::from_data(&one.to_data());
        assert_eq!(round, one);
    }

    #[test]
    fn a_new_ca_trusts_the_previous_one_while_it_is_valid() {
        let now = jiff::Timestamp::now().as_second();
        let old = CertBundle::generate("ca", &names(), 3650, 365).expect("generate");
        let new = CertBundle::generate("ca", &names(), 3650, 365)
            .expect("generate")
            .trusting_previous_ca(&old, now);
        assert!(new.ca_cert_pem.matches("BEGIN CERTIFICATE").count() == 2);
        assert!(new.ca_cert_pem.contains(old.ca_cert_pem.trim()));
        // Still signs and checks with the new CA (the first).
        assert_eq!(assess(&new, &names(), now, DAY), Renewal::None);
        let reissued = new.reissue(&names(), 365).expect("reissue");
        assert_eq!(assess(&reissued, &names(), now, DAY), Renewal::None);
        // Rotating again drops the oldest: only the previous first CA is kept.
        let newer = CertBundle::generate("ca", &names(), 3650, 365)
            .expect("generate")
            .trusting_previous_ca(&new, now);
        assert_eq!(newer.ca_cert_pem.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(!newer.ca_cert_pem.contains(old.ca_cert_pem.trim()));
        // An expired (here: broken) previous CA is not kept.
        let broken = CertBundle {
            ca_key_pem: String::new(),
            ..old
        };
        let alone = CertBundle::generate("ca", &names(), 3650, 365)
            .expect("generate")
            .trusting_previous_ca(&broken, now);
        assert_eq!(alone.ca_cert_pem.matches("BEGIN CERTIFICATE").count(), 1);
    }
}
