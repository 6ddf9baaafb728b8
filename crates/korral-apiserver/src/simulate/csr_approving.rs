//! kube-controller-manager's CSR approving controller (`csrapproving`): a pending request for
//! a kubelet client certificate (signer `kubernetes.io/kube-apiserver-client-kubelet`, subject
//! `O=system:nodes`, `CN=system:node:<name>`, client usages only) is approved when its requester
//! may `create` `certificatesigningrequests/selfnodeclient` (renewing its own node's
//! certificate: the requester is the subject) or `certificatesigningrequests/nodeclient` (a
//! new node), as upstream's subject access reviews decide. Other requests wait for a person
//! or their own approver.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::FromDer;

use super::access::{self, Actor};
use super::csr_signing::{self, GROUP, KUBELET_CLIENT, RESOURCE};
use crate::auth::{Attributes, UserInfo};
use crate::error::ApiError;
use crate::meta;
use crate::objects::{Objects, Part};
use crate::storage::object_key;

/// The permissions that approve a kubelet client request, tried in upstream's order: the
/// subresource asked for and the approval message.
const RECOGNIZERS: [(&str, &str); 2] = [
    (
        "selfnodeclient",
        "Auto approving self kubelet client certificate after SubjectAccessReview.",
    ),
    (
        "nodeclient",
        "Auto approving kubelet client certificate after SubjectAccessReview.",
    ),
];

/// Approves the CertificateSigningRequest `name` if it is a kubelet client request its
/// requester may make.
pub(crate) async fn reconcile(objects: &Objects, name: &str) -> Result<(), ApiError> {
    let Some(csr) = objects
        .storage()
        .get(&object_key(GROUP, RESOURCE, None, name))
    else {
        return Ok(());
    };
    if !undecided(&csr) || text(&csr, "spec.signerName") != KUBELET_CLIENT {
        return Ok(());
    }
    let Ok(request) = crate::kinds::certificate_request_der(&csr) else {
        return Ok(());
    };
    let usages = meta::strings(meta::path(&csr, "spec.usages"));
    if csr_signing::signer_rules(KUBELET_CLIENT, &request, &usages).is_err() {
        return Ok(());
    }
    let requester = requester(&csr);
    let own_node = common_name(&request).is_some_and(|cn| cn == requester.name);
    for (subresource, message) in RECOGNIZERS {
        if subresource == "selfnodeclient" && !own_node {
            continue;
        }
        if !allowed(objects, &requester, subresource) {
            continue;
        }
        tracing::debug!(csr = name, subresource, "auto-approving kubelet client CSR");
        let info = access::info(objects, GROUP, "v1", RESOURCE)?;
        let condition = json!({
            "type": "Approved",
            "status": "True",
            "reason": "AutoApproved",
            "message": message,
            "lastUpdateTime": jiff::Timestamp::now().to_string(),
        });
        return access::rewrite(
            objects,
            Actor::CertificateSigner,
            &info,
            &csr,
            Part::Subresource("approval"),
            move |obj| {
                if !undecided(obj) {
                    return;
                }
                let Some(status) = obj
                    .as_object_mut()
                    .map(|o| o.entry("status").or_insert_with(|| json!({})))
                else {
                    return;
                };
                if let Some(status) = status.as_object_mut() {
                    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
                    if let Some(list) = conditions.as_array_mut() {
                        list.push(condition.clone());
                    }
                }
            },
        )
        .await
        .map(|_| ());
    }
    Ok(())
}

/// Neither approved nor denied, and without a certificate.
fn undecided(csr: &Value) -> bool {
    let decided = meta::path(csr, "status.conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| (c["type"] == "Approved" || c["type"] == "Denied") && c["status"] == "True");
    let issued = !text(csr, "status.certificate").is_empty();
    !decided && !issued
}

/// Who asked for the certificate (`spec.username`, `uid`, `groups`, `extra`).
fn requester(csr: &Value) -> UserInfo {
    let mut extra = BTreeMap::new();
    if let Some(map) = meta::path(csr, "spec.extra").and_then(Value::as_object) {
        for (key, values) in map {
            extra.insert(key.clone(), meta::strings(Some(values)));
        }
    }
    UserInfo {
        name: text(csr, "spec.username").to_string(),
        uid: text(csr, "spec.uid").to_string(),
        groups: meta::strings(meta::path(csr, "spec.groups")),
        extra,
    }
}

/// Whether `user` may `create` `certificatesigningrequests/<subresource>`, as a subject
/// access review under the server's authorization mode answers.
fn allowed(objects: &Objects, user: &UserInfo, subresource: &str) -> bool {
    let attrs = Attributes {
        user: user.clone(),
        verb: "create".into(),
        resource_request: true,
        path: String::new(),
        namespace: String::new(),
        api_group: GROUP.into(),
        api_version: "*".into(),
        resource: RESOURCE.into(),
        subresource: subresource.into(),
        name: String::new(),
    };
    crate::auth::authorize(objects.authorization(), objects.storage().as_ref(), &attrs).allowed
}

/// The subject common name of a certificate request (DER).
fn common_name(request: &[u8]) -> Option<String> {
    let (_, csr) = X509CertificationRequest::from_der(request).ok()?;
    csr.certification_request_info
        .subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .map(str::to_string)
}

/// A string field of `obj` ("" when unset).
fn text<'a>(obj: &'a Value, path: &str) -> &'a str {
    meta::path(obj, path).and_then(Value::as_str).unwrap_or("")
}
