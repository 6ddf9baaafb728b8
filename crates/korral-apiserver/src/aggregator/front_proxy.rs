//! The identity the server presents to extension API servers, as kube-apiserver's
//! `--proxy-client-cert-file` / `--requestheader-client-ca-file` pair: a front-proxy CA made
//! at start (kept in the data directory of a durable server) and a client certificate it signs (`CN=front-proxy-client`, as kubeadm names it),
//! and the `kube-system/extension-apiserver-authentication` ConfigMap with upstream's keys
//! (`pkg/controlplane/controller/clusterauthenticationtrust`), from which an extension server
//! learns to trust the `X-Remote-*` headers of requests carrying that certificate.

use std::path::Path;
use std::sync::Arc;

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::objects::{Objects, Part, WriteOptions};
use crate::tls::set_validity;

/// The namespace of the authentication ConfigMap.
pub(crate) const NAMESPACE: &str = "kube-system";
/// The name of the authentication ConfigMap.
pub(crate) const CONFIG_MAP: &str = "extension-apiserver-authentication";
/// The common name of the front-proxy client certificate (`requestheader-allowed-names`).
pub(crate) const CLIENT_NAME: &str = "front-proxy-client";
/// The common name of the front-proxy CA.
const CA_NAME: &str = "front-proxy-ca";

/// Why the front-proxy identity could not be made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum IdentityError {
    /// rcgen failed to generate or sign.
    #[error("generating the front-proxy certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// The generated PEM did not parse back.
    #[error("reading the front-proxy certificates: {0}")]
    Parse(String),
    /// The stored CA could not be read or written.
    #[error("storing the front-proxy CA: {0}")]
    Store(String),
}

/// The front-proxy CA and the client certificate it signed.
pub(crate) struct Identity {
    /// The CA certificate (PEM): `requestheader-client-ca-file`.
    pub ca_pem: String,
    /// The client certificate chain presented to extension servers.
    pub chain: Vec<CertificateDer<'static>>,
    /// Its private key.
    pub key: PrivateKeyDer<'static>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("ca_pem", &self.ca_pem)
            .finish_non_exhaustive()
    }
}

/// The front-proxy CA's files in the data directory's `pki/` (kubeadm's names).
const CA_CERT_FILE: &str = "front-proxy-ca.crt";
/// The front-proxy CA's key file.
const CA_KEY_FILE: &str = "front-proxy-ca.key";

impl Identity {
    /// A fresh front-proxy CA (ECDSA P-256, ten years) and client certificate (one year).
    pub(crate) fn generate() -> Result<Self, IdentityError> {
        let (ca_pem, ca_key) = new_ca()?;
        Self::issue(ca_pem, &ca_key)
    }

    /// The front-proxy CA kept in `<dir>/pki/` (made and stored there when there is none or
    /// it is unusable) and a fresh client certificate it signs: a durable server keeps its CA
    /// across restarts, so extension servers that cached it keep trusting the server.
    pub(crate) fn load_or_generate(dir: &Path) -> Result<Self, IdentityError> {
        let pki = dir.join(crate::tls::PKI_DIR);
        let cert_path = pki.join(CA_CERT_FILE);
        let key_path = pki.join(CA_KEY_FILE);
        let read = |path: &Path| {
            crate::tls::read_optional(path).map_err(|e| IdentityError::Store(e.to_string()))
        };
        if let (Some(cert_pem), Some(key_pem)) = (read(&cert_path)?, read(&key_path)?) {
            match stored_ca(&cert_pem, &key_pem) {
                Ok(key) => return Self::issue(cert_pem, &key),
                Err(e) => {
                    tracing::warn!(dir = %pki.display(), error = %e, "the stored front-proxy CA is unusable; generating a new one");
                }
            }
        }
        let (ca_pem, ca_key) = new_ca()?;
        let store = |e: crate::tls::TlsError| IdentityError::Store(e.to_string());
        std::fs::create_dir_all(&pki).map_err(|e| IdentityError::Store(e.to_string()))?;
        crate::tls::write_file(&key_path, ca_key.serialize_pem().as_bytes(), true)
            .map_err(store)?;
        crate::tls::write_file(&cert_path, ca_pem.as_bytes(), false).map_err(store)?;
        tracing::info!(dir = %pki.display(), "generated a new front-proxy CA");
        Self::issue(ca_pem, &ca_key)
    }

    /// A client certificate signed by the CA `ca_pem` / `ca_key`.
    fn issue(ca_pem: String, ca_key: &KeyPair) -> Result<Self, IdentityError> {
        // rcgen rebuilds the issuer from the CA's parameters and key (as tls.rs does for its
        // stored CA): the names and key identifier match the CA certificate.
        let issuer = Issuer::new(crate::tls::ca_params_named(CA_NAME), ca_key);
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        let mut client = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, CLIENT_NAME);
        client.distinguished_name = dn;
        client.is_ca = IsCa::ExplicitNoCa;
        client.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        client.use_authority_key_identifier_extension = true;
        set_validity(&mut client, 365);
        let cert = client.signed_by(&key, &issuer)?;
        let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes())
            .map_err(|e| IdentityError::Parse(e.to_string()))?;
        Ok(Self {
            ca_pem,
            chain: vec![cert.der().clone()],
            key,
        })
    }
}

/// A new self-signed front-proxy CA: its certificate (PEM) and key.
fn new_ca() -> Result<(String, KeyPair), IdentityError> {
    let ca_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let mut ca = crate::tls::ca_params_named(CA_NAME);
    set_validity(&mut ca, 3650);
    let ca_cert = ca.self_signed(&ca_key)?;
    Ok((ca_cert.pem(), ca_key))
}

/// The key of a stored CA, checked to belong to its certificate.
fn stored_ca(cert_pem: &str, key_pem: &str) -> Result<KeyPair, IdentityError> {
    let cert = CertificateDer::from_pem_slice(cert_pem.as_bytes())
        .map_err(|e| IdentityError::Parse(e.to_string()))?;
    let key = KeyPair::from_pem(key_pem)?;
    let public = rcgen::PublicKeyData::subject_public_key_info(&key);
    if !cert.windows(public.len()).any(|w| w == public.as_slice()) {
        return Err(IdentityError::Parse(
            "the key does not belong to the certificate".into(),
        ));
    }
    Ok(key)
}

/// The data of the authentication ConfigMap: the client CA of the server (when it serves
/// TLS) and the requestheader settings, list values as JSON arrays as upstream writes them.
pub(crate) fn config_map_data(client_ca_pem: Option<&str>, identity: &Identity) -> Value {
    let mut data = json!({
        "requestheader-client-ca-file": identity.ca_pem,
        "requestheader-allowed-names": json!([CLIENT_NAME]).to_string(),
        "requestheader-username-headers": json!(["X-Remote-User"]).to_string(),
        "requestheader-uid-headers": json!(["X-Remote-Uid"]).to_string(),
        "requestheader-group-headers": json!(["X-Remote-Group"]).to_string(),
        "requestheader-extra-headers-prefix": json!(["X-Remote-Extra-"]).to_string(),
    });
    if let (Some(ca), Some(map)) = (client_ca_pem, data.as_object_mut()) {
        map.insert("client-ca-file".into(), json!(ca));
    }
    data
}

/// Writes `kube-system/extension-apiserver-authentication` (created, or its data replaced) so
/// extension servers can verify the server's front-proxy certificate.
pub(crate) async fn publish(
    objects: &Arc<Objects>,
    client_ca_pem: Option<&str>,
    data_dir: Option<&Path>,
) -> Result<(), ApiError> {
    super::Aggregator::attach(objects);
    if let Some(dir) = data_dir {
        objects
            .aggregator()
            .load_identity(dir)
            .map_err(ApiError::internal)?;
    }
    let identity = objects
        .aggregator()
        .identity()
        .map_err(ApiError::internal)?;
    let Some(info) = objects.registry().get("", "v1", "configmaps") else {
        return Err(ApiError::internal("configmaps are not registered"));
    };
    let data = config_map_data(client_ca_pem, &identity);
    let opts = WriteOptions::default();
    match objects.get(&info, Some(NAMESPACE), CONFIG_MAP) {
        Ok(existing) => {
            if existing.get("data") == Some(&data) {
                return Ok(());
            }
            let mut next = (*existing).clone();
            next["data"] = data;
            objects
                .update(&info, Some(NAMESPACE), CONFIG_MAP, next, Part::Main, &opts)
                .await
                .map(|_| ())
        }
        Err(e) if e.code == 404 => {
            let obj = json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": CONFIG_MAP, "namespace": NAMESPACE},
                "data": data,
            });
            match objects.create(&info, Some(NAMESPACE), obj, &opts).await {
                Ok(_) => Ok(()),
                Err(e) if e.code == 409 => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
