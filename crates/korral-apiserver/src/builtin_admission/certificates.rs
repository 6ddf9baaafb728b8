//! The admission plugins upstream runs on `certificates.k8s.io` CertificateSigningRequests
//! (`plugin/pkg/admission/certificates`):
//!
//! - CertificateApproval: a write of the `approval` subresource needs the `approve` verb on
//!   the `signers` resource named by the request's signer (or its domain's wildcard);
//! - CertificateSigning: a `status` write that changes the certificate or the conditions needs
//!   the `sign` verb likewise;
//! - CertificateSubjectRestriction: no request for the `kube-apiserver-client` signer may ask
//!   for the `system:masters` group.
//!
//! The signer checks ask the server's own authorizer (RBAC, or allow-all) about the requester,
//! as upstream's plugins ask the authorizer they are given.

use serde_json::Value;

use crate::ApiError;
use crate::auth::{Attributes, UserInfo};
use crate::kinds::Context;
use crate::meta;
use crate::registry::ResourceInfo;
use crate::validation::names::go_quote;

/// The API group of CertificateSigningRequests and of the synthetic `signers` resource.
const GROUP: &str = "certificates.k8s.io";
/// The resource the plugins guard.
const RESOURCE: &str = "certificatesigningrequests";
/// The signer of client certificates for the API server (`KubeAPIServerClientSignerName`).
const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
/// The group that holds every permission, which no such certificate may claim.
const MASTERS: &str = "system:masters";

/// Runs the three plugins on a write of a CertificateSigningRequest (`old` is `None` on
/// create); other kinds pass untouched.
pub(super) fn validate(
    info: &ResourceInfo,
    obj: &Value,
    old: Option<&Value>,
    ctx: &Context,
) -> Result<(), ApiError> {
    if info.group != GROUP || info.resource != RESOURCE || info.is_custom() {
        return Ok(());
    }
    match (old, ctx.subresource) {
        (None, None) => restrict_subject(obj),
        (Some(old), Some("approval")) => authorize_signer(
            ctx,
            old,
            "approve",
            "user not permitted to approve requests",
        ),
        (Some(old), Some("status")) if signing_changed(old, obj) => {
            authorize_signer(ctx, old, "sign", "user not permitted to sign requests")
        }
        _ => Ok(()),
    }
}

/// Whether a `status` write changes what a signer writes: the certificate or the conditions.
fn signing_changed(old: &Value, new: &Value) -> bool {
    let certificate = |o: &Value| meta::path(o, "status.certificate").cloned();
    let conditions = |o: &Value| {
        meta::path(o, "status.conditions")
            .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()))
            .cloned()
    };
    certificate(old) != certificate(new) || conditions(old) != conditions(new)
}

/// CertificateApproval and CertificateSigning: the requester must hold `verb` on the
/// request's signer, judged on the stored request (a write cannot move it to another signer
/// to pass). The server's own writes (no requester) pass.
fn authorize_signer(ctx: &Context, old: &Value, verb: &str, refusal: &str) -> Result<(), ApiError> {
    let Some(user) = &ctx.user else {
        return Ok(());
    };
    let signer = meta::path(old, "spec.signerName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if authorized_for_signer(ctx, user, verb, signer) {
        return Ok(());
    }
    Err(ApiError::forbidden_object(
        GROUP,
        RESOURCE,
        meta::name(old),
        &format!("{refusal} with signerName {}", go_quote(signer)),
    ))
}

/// Upstream's `IsAuthorizedForSignerName`: `verb` on `signers` named `signer`, or named the
/// wildcard of its domain (`example.com/*`).
fn authorized_for_signer(ctx: &Context, user: &UserInfo, verb: &str, signer: &str) -> bool {
    let domain = signer.split('/').next().unwrap_or("");
    [signer.to_string(), format!("{domain}/*")]
        .into_iter()
        .any(|name| {
            let attrs = Attributes {
                user: user.clone(),
                verb: verb.to_string(),
                resource_request: true,
                api_group: GROUP.to_string(),
                api_version: "*".to_string(),
                resource: "signers".to_string(),
                name,
                ..Attributes::default()
            };
            crate::auth::authorize(ctx.authorization, ctx.storage.as_ref(), &attrs).allowed
        })
}

/// CertificateSubjectRestriction: a request for the `kube-apiserver-client` signer whose
/// subject's organizations include `system:masters` is refused.
fn restrict_subject(csr: &Value) -> Result<(), ApiError> {
    let signer = meta::path(csr, "spec.signerName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if signer != KUBE_APISERVER_CLIENT {
        return Ok(());
    }
    let refuse = |why: String| ApiError::forbidden_object(GROUP, RESOURCE, meta::name(csr), &why);
    let organizations = crate::kinds::request_organizations(csr)
        .map_err(|e| refuse(format!("failed to parse CSR: {e}")))?;
    if organizations.iter().any(|o| o == MASTERS) {
        return Err(refuse(format!(
            "use of {KUBE_APISERVER_CLIENT} signer with {MASTERS} group is not allowed"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn signing_counts_certificate_and_condition_changes() {
        let base = json!({"status": {}});
        assert!(!signing_changed(
            &base,
            &json!({"status": {"conditions": []}})
        ));
        assert!(signing_changed(
            &base,
            &json!({"status": {"certificate": "Y2VydA=="}})
        ));
        assert!(signing_changed(
            &base,
            &json!({"status": {"conditions": [{"type": "Failed", "status": "True"}]}})
        ));
        let signed = json!({"status": {"certificate": "Y2VydA=="}});
        assert!(!signing_changed(&signed, &signed.clone()));
    }
}
