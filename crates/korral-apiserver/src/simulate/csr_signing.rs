//! kube-controller-manager's CSR signing controllers (`csrsigning`): an approved, not failed
//! CertificateSigningRequest for one of the built-in signers gets a certificate from the
//! cluster's CA in `status.certificate`, or, when the request breaks that signer's rules, a
//! `Failed` condition (reason `SignerValidationFailure`) with upstream's message. Requests
//! for other signers (`example.com/...`) are left to their own signers.
//!
//! The signers and their rules (upstream's `signer.go` and the CSR helpers):
//! * `kubernetes.io/kube-apiserver-client`: any subject; usages among `digital signature`,
//!   `key encipherment` and the required `client auth`;
//! * `kubernetes.io/kube-apiserver-client-kubelet`: subject `O=system:nodes`,
//!   `CN=system:node:...`, no subject alternative names, usages exactly `digital signature`,
//!   `client auth` (and `key encipherment` for RSA keys);
//! * `kubernetes.io/kubelet-serving`: the same subject, DNS or IP names only, usages exactly
//!   `digital signature`, `server auth` (and `key encipherment`).
//!
//! Certificates last `spec.expirationSeconds` (at least ten minutes) or, by default and at
//! most, a year (upstream's `--cluster-signing-duration`).

use std::time::Duration;

use serde_json::{Value, json};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

use super::Cluster;
use super::access::{self, Actor};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::object_key;

/// The group of CertificateSigningRequests.
pub(super) const GROUP: &str = "certificates.k8s.io";
/// Their resource.
pub(super) const RESOURCE: &str = "certificatesigningrequests";

const CLIENT: &str = "kubernetes.io/kube-apiserver-client";
pub(super) const KUBELET_CLIENT: &str = "kubernetes.io/kube-apiserver-client-kubelet";
const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";

/// The longest a certificate lasts, and how long when the request says nothing (upstream's
/// default `--cluster-signing-duration`, 8760h).
const CERTIFICATE_TTL: Duration = Duration::from_secs(365 * 24 * 60 * 60);
/// The shortest a certificate lasts, whatever the request asks (twice the backdating).
const MIN_TTL: Duration = Duration::from_secs(10 * 60);

/// Signs, or fails, the CertificateSigningRequest `name` if it is approved and its signer is
/// one of the built-in ones.
pub(crate) async fn reconcile(
    objects: &Objects,
    cluster: &Cluster,
    name: &str,
) -> Result<(), ApiError> {
    let Some(signer) = &cluster.signer else {
        return Ok(());
    };
    let Some(csr) = objects
        .storage()
        .get(&object_key(GROUP, RESOURCE, None, name))
    else {
        return Ok(());
    };
    if !pending(&csr) {
        return Ok(());
    }
    let signer_name = text(&csr, "spec.signerName");
    if ![CLIENT, KUBELET_CLIENT, KUBELET_SERVING].contains(&signer_name) {
        return Ok(());
    }
    let request = crate::kinds::certificate_request_der(&csr)
        .map_err(|e| ApiError::internal(format!("unable to parse csr {name:?}: {e}")))?;
    let usages: Vec<String> = meta::path(&csr, "spec.usages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let info = access::info(objects, GROUP, "v1", RESOURCE)?;
    if let Err(why) = signer_rules(signer_name, &request, &usages) {
        let condition = json!({
            "type": "Failed",
            "status": "True",
            "reason": "SignerValidationFailure",
            "message": why,
            "lastUpdateTime": jiff::Timestamp::now().to_string(),
        });
        return access::update_status(objects, Actor::CertificateSigner, &info, &csr, move |obj| {
            if !pending(obj) {
                return;
            }
            if let Some(conditions) = obj
                .pointer_mut("/status/conditions")
                .and_then(Value::as_array_mut)
            {
                conditions.push(condition.clone());
            }
        })
        .await;
    }
    let ttl = ttl(meta::path(&csr, "spec.expirationSeconds").and_then(Value::as_i64));
    let certificate = signer
        .sign(&request, &usages, ttl, jiff::Timestamp::now())
        .map_err(|e| ApiError::internal(format!("error auto signing csr: {e}")))?;
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(certificate);
    access::update_status(objects, Actor::CertificateSigner, &info, &csr, move |obj| {
        if pending(obj)
            && let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut)
        {
            status.insert("certificate".into(), Value::String(encoded.clone()));
        }
    })
    .await
}

/// Approved, neither denied nor failed, and without a certificate yet.
fn pending(csr: &Value) -> bool {
    let has = |kind: &str| {
        meta::path(csr, "status.conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == kind && c["status"] == "True")
    };
    let issued = meta::path(csr, "status.certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty());
    has("Approved") && !has("Denied") && !has("Failed") && !issued
}

/// A string field of `obj` ("" when unset).
fn text<'a>(obj: &'a Value, path: &str) -> &'a str {
    meta::path(obj, path).and_then(Value::as_str).unwrap_or("")
}

/// How long the certificate lasts: the requested duration within [`MIN_TTL`] and
/// [`CERTIFICATE_TTL`], the latter when none is requested (upstream's `signer.duration`).
fn ttl(expiration_seconds: Option<i64>) -> Duration {
    match expiration_seconds {
        None => CERTIFICATE_TTL,
        Some(s) => {
            Duration::from_secs(u64::try_from(s).unwrap_or(0)).clamp(MIN_TTL, CERTIFICATE_TTL)
        }
    }
}

/// The rules of the built-in signer `signer` for `request` (DER) with `usages`; the error is
/// upstream's message.
pub(super) fn signer_rules(signer: &str, request: &[u8], usages: &[String]) -> Result<(), String> {
    if signer == CLIENT {
        return client_usages(usages);
    }
    let (_, csr) = X509CertificationRequest::from_der(request)
        .map_err(|_| "asn1: structure error: malformed certificate request".to_string())?;
    let subject = &csr.certification_request_info.subject;
    let organizations: Vec<&str> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .collect();
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or("");
    let names = Names::of(&csr);
    let set: std::collections::BTreeSet<&str> = usages.iter().map(String::as_str).collect();
    let exactly = |wanted: &[&str]| set == wanted.iter().copied().collect();
    if organizations != ["system:nodes"] {
        return Err("subject organization is not system:nodes".into());
    }
    let not_node = "subject common name does not begin with system:node:";
    if signer == KUBELET_SERVING {
        if names.dns == 0 && names.ip == 0 {
            return Err("DNS or IP subjectAltName is required".into());
        }
        if names.email > 0 {
            return Err("Email subjectAltNames are not allowed".into());
        }
        if names.uri > 0 {
            return Err("URI subjectAltNames are not allowed".into());
        }
        let rsa = ["digital signature", "key encipherment", "server auth"];
        if !exactly(&rsa) && !exactly(&["digital signature", "server auth"]) {
            return Err(format!("usages did not match [{}]", rsa.join(" ")));
        }
        if !common_name.starts_with("system:node:") {
            return Err(not_node.into());
        }
        return Ok(());
    }
    if names.dns > 0 {
        return Err("DNS subjectAltNames are not allowed".into());
    }
    if names.email > 0 {
        return Err("Email subjectAltNames are not allowed".into());
    }
    if names.ip > 0 {
        return Err("IP subjectAltNames are not allowed".into());
    }
    if names.uri > 0 {
        return Err("URI subjectAltNames are not allowed".into());
    }
    if !common_name.starts_with("system:node:") {
        return Err(not_node.into());
    }
    let rsa = ["client auth", "digital signature", "key encipherment"];
    if !exactly(&rsa) && !exactly(&["client auth", "digital signature"]) {
        return Err(format!("usages did not match [{}]", rsa.join(" ")));
    }
    Ok(())
}

/// Upstream's `validAPIServerClientUsages`.
fn client_usages(usages: &[String]) -> Result<(), String> {
    let mut client_auth = false;
    for usage in usages {
        match usage.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if client_auth {
        Ok(())
    } else {
        Err("missing required usage for client certificate: client auth".into())
    }
}

/// How many subject alternative names of each kind a request asks for.
#[derive(Debug, Default)]
struct Names {
    dns: usize,
    ip: usize,
    email: usize,
    uri: usize,
}

impl Names {
    fn of(csr: &X509CertificationRequest<'_>) -> Self {
        let mut names = Names::default();
        for ext in csr.requested_extensions().into_iter().flatten() {
            if let ParsedExtension::SubjectAlternativeName(san) = ext {
                for name in &san.general_names {
                    match name {
                        GeneralName::DNSName(_) => names.dns += 1,
                        GeneralName::IPAddress(_) => names.ip += 1,
                        GeneralName::RFC822Name(_) => names.email += 1,
                        GeneralName::URI(_) => names.uri += 1,
                        _ => {}
                    }
                }
            }
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use rcgen::SanType;

    use super::*;
    use crate::signer::test_request as request;

    fn usages(list: &[&str]) -> Vec<String> {
        list.iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn client_certificates_need_client_auth_and_nothing_else() {
        let req = request("alice", "dev", Vec::new());
        assert_eq!(
            signer_rules(CLIENT, &req, &usages(&["client auth"])),
            Ok(())
        );
        assert_eq!(
            signer_rules(CLIENT, &req, &usages(&["client auth", "server auth"])),
            Err("invalid usage for client certificate: server auth".into())
        );
        assert_eq!(
            signer_rules(CLIENT, &req, &usages(&["digital signature"])),
            Err("missing required usage for client certificate: client auth".into())
        );
    }

    #[test]
    fn kubelet_signers_check_subject_names_and_usages_in_upstreams_order() {
        let dns = || vec![SanType::DnsName("n1.example".try_into().expect("dns"))];
        let serving = usages(&["digital signature", "server auth"]);
        let node = request("system:node:n1", "system:nodes", dns());
        assert_eq!(signer_rules(KUBELET_SERVING, &node, &serving), Ok(()));
        assert_eq!(
            signer_rules(
                KUBELET_SERVING,
                &request("system:node:n1", "dev", dns()),
                &serving
            ),
            Err("subject organization is not system:nodes".into())
        );
        assert_eq!(
            signer_rules(
                KUBELET_SERVING,
                &request("system:node:n1", "system:nodes", Vec::new()),
                &serving
            ),
            Err("DNS or IP subjectAltName is required".into())
        );
        assert_eq!(
            signer_rules(KUBELET_SERVING, &node, &usages(&["server auth"])),
            Err("usages did not match [digital signature key encipherment server auth]".into())
        );
        assert_eq!(
            signer_rules(
                KUBELET_SERVING,
                &request("n1", "system:nodes", dns()),
                &serving
            ),
            Err("subject common name does not begin with system:node:".into())
        );
        let client = usages(&["digital signature", "key encipherment", "client auth"]);
        let bare = request("system:node:n1", "system:nodes", Vec::new());
        assert_eq!(signer_rules(KUBELET_CLIENT, &bare, &client), Ok(()));
        assert_eq!(
            signer_rules(KUBELET_CLIENT, &node, &client),
            Err("DNS subjectAltNames are not allowed".into())
        );
        assert_eq!(
            signer_rules(KUBELET_CLIENT, &bare, &usages(&["client auth"])),
            Err("usages did not match [client auth digital signature key encipherment]".into())
        );
    }

    #[test]
    fn lifetimes_are_bounded() {
        assert_eq!(ttl(None), CERTIFICATE_TTL);
        assert_eq!(ttl(Some(60)), MIN_TTL);
        assert_eq!(ttl(Some(3600)), Duration::from_secs(3600));
        assert_eq!(ttl(Some(i64::MAX)), CERTIFICATE_TTL);
    }
}
