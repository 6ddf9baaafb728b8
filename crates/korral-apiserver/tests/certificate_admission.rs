//! The admission plugins upstream runs on CertificateSigningRequests: CertificateApproval (the
//! `approve` verb on the request's signer for `/approval` writes), CertificateSigning (the
//! `sign` verb for `/status` writes that issue or fail a certificate) and
//! CertificateSubjectRestriction (no `system:masters` client certificates), under RBAC with
//! ordinary users, with upstream's 403 messages.

mod common;

use base64::Engine;
use common::*;
use kube::Client;
use serde_json::{Value, json};

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
const SIGNER: &str = "example.com/signer";

async fn send(client: &Client, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let content_type = body.map(|_| "application/json");
    raw(client, method, path, content_type, bytes).await
}

/// A JSON merge patch.
async fn merge(client: &Client, path: &str, patch: &Value) -> (u16, Value) {
    raw(
        client,
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        patch.to_string().into_bytes(),
    )
    .await
}

/// A fresh PKCS#10 request for the subject `CN=name, O=organizations...`, PEM encoded.
fn csr_pem(name: &str, organizations: &[&str]) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    for organization in organizations {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *organization);
    }
    params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem")
}

/// A self-signed certificate, PEM encoded (what a signer writes to the status).
fn certificate_pem() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["alice".to_string()]).expect("params");
    params.self_signed(&key).expect("certificate").pem()
}

fn b64(data: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A CertificateSigningRequest for `signer` asking for `organizations`.
fn csr(name: &str, signer: &str, organizations: &[&str]) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": b64(&csr_pem(name, organizations)),
            "signerName": signer,
            "usages": ["client auth"],
        },
    })
}

/// Creates an object as the admin: 201.
async fn create(env: &TestEnv, path: &str, obj: Value) {
    let (code, body) = send(&env.client(), "POST", path, Some(&obj)).await;
    assert_eq!(code, 201, "{path}: {body}");
}

/// A ClusterRole with `rules`, bound to the user `user`.
async fn grant(env: &TestEnv, user: &str, rules: Value) {
    create(
        env,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        json!({"metadata": {"name": user}, "rules": rules}),
    )
    .await;
    create(
        env,
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        json!({
            "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        }),
    )
    .await;
}

/// Permission to write the CSR subresource `subresource`, and `extra` rules.
fn writer_rules(subresource: &str, extra: &[Value]) -> Value {
    let mut rules = vec![json!({
        "apiGroups": ["certificates.k8s.io"],
        "resources": ["certificatesigningrequests", format!("certificatesigningrequests/{subresource}")],
        "verbs": ["get", "update", "patch"],
    })];
    rules.extend(extra.iter().cloned());
    Value::Array(rules)
}

/// `verb` on the `signers` named `names`.
fn signers(verb: &str, names: &[&str]) -> Value {
    json!({
        "apiGroups": ["certificates.k8s.io"],
        "resources": ["signers"],
        "resourceNames": names,
        "verbs": [verb],
    })
}

fn approve_patch() -> Value {
    json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]}})
}

fn assert_forbidden(code: u16, body: &Value, message: &str) {
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden", "{body}");
    assert_eq!(body["message"], message, "{body}");
    assert_eq!(body["details"]["group"], "certificates.k8s.io", "{body}");
    assert_eq!(
        body["details"]["kind"], "certificatesigningrequests",
        "{body}"
    );
}

fn condition_types(csr: &Value) -> Vec<String> {
    csr["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["type"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn approving_needs_the_approve_verb_on_the_signer() {
    let env = rbac_env().await;
    create(&env, CSRS, csr("web", SIGNER, &[])).await;
    let approval = format!("{CSRS}/web/approval");

    // Allowed to write /approval, but not to approve for this signer.
    grant(&env, "carol", writer_rules("approval", &[])).await;
    let carol = env.client_as_user("carol", &[]).await.expect("client");
    let (code, body) = merge(&carol, &approval, &approve_patch()).await;
    assert_forbidden(
        code,
        &body,
        "certificatesigningrequests.certificates.k8s.io \"web\" is forbidden: user not permitted to approve requests with signerName \"example.com/signer\"",
    );
    // A PUT of the subresource is refused the same way.
    let (_, current) = send(&carol, "GET", &format!("{CSRS}/web"), None).await;
    let mut put = current.clone();
    put["status"] = approve_patch()["status"].clone();
    let (code, body) = send(&carol, "PUT", &approval, Some(&put)).await;
    assert_eq!(code, 403, "{body}");
    // Approving for another signer's domain does not help.
    grant(
        &env,
        "erin",
        writer_rules("approval", &[signers("approve", &["other.example.com/*"])]),
    )
    .await;
    let erin = env.client_as_user("erin", &[]).await.expect("client");
    let (code, body) = merge(&erin, &approval, &approve_patch()).await;
    assert_eq!(code, 403, "{body}");
    let (_, unchanged) = send(&env.client(), "GET", &format!("{CSRS}/web"), None).await;
    assert!(condition_types(&unchanged).is_empty(), "{unchanged}");

    // `approve` on the domain's wildcard allows it.
    grant(
        &env,
        "dave",
        writer_rules("approval", &[signers("approve", &["example.com/*"])]),
    )
    .await;
    let dave = env.client_as_user("dave", &[]).await.expect("client");
    let (code, approved) = merge(&dave, &approval, &approve_patch()).await;
    assert_eq!(code, 200, "{approved}");
    assert_eq!(condition_types(&approved), ["Approved"]);

    // So does `approve` on the signer's own name.
    create(&env, CSRS, csr("api", SIGNER, &[])).await;
    grant(
        &env,
        "frank",
        writer_rules("approval", &[signers("approve", &[SIGNER])]),
    )
    .await;
    let frank = env.client_as_user("frank", &[]).await.expect("client");
    let (code, approved) = merge(&frank, &format!("{CSRS}/api/approval"), &approve_patch()).await;
    assert_eq!(code, 200, "{approved}");
}

#[tokio::test]
async fn issuing_needs_the_sign_verb_on_the_signer() {
    let env = rbac_env().await;
    create(&env, CSRS, csr("web", SIGNER, &[])).await;
    let (code, body) = merge(
        &env.client(),
        &format!("{CSRS}/web/approval"),
        &approve_patch(),
    )
    .await;
    assert_eq!(code, 200, "the admin approves: {body}");
    let status = format!("{CSRS}/web/status");
    let issue = json!({"status": {"certificate": b64(&certificate_pem())}});

    grant(&env, "carol", writer_rules("status", &[])).await;
    let carol = env.client_as_user("carol", &[]).await.expect("client");
    let (code, body) = merge(&carol, &status, &issue).await;
    assert_forbidden(
        code,
        &body,
        "certificatesigningrequests.certificates.k8s.io \"web\" is forbidden: user not permitted to sign requests with signerName \"example.com/signer\"",
    );
    // Failing the request is the signer's too.
    let fail = json!({"status": {"conditions": [
        {"type": "Approved", "status": "True", "reason": "Test", "message": "ok"},
        {"type": "Failed", "status": "True", "reason": "Broken", "message": "no"}]}});
    let (code, body) = merge(&carol, &status, &fail).await;
    assert_eq!(code, 403, "{body}");
    // A status write that changes neither the certificate nor the conditions is not signing.
    let (code, body) = merge(
        &carol,
        &status,
        &json!({"metadata": {"labels": {"a": "b"}}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    // `approve` is not `sign`.
    grant(
        &env,
        "erin",
        writer_rules("status", &[signers("approve", &["example.com/*"])]),
    )
    .await;
    let erin = env.client_as_user("erin", &[]).await.expect("client");
    let (code, body) = merge(&erin, &status, &issue).await;
    assert_eq!(code, 403, "{body}");
    let (_, unsigned) = send(&env.client(), "GET", &format!("{CSRS}/web"), None).await;
    assert!(
        unsigned["status"].get("certificate").is_none(),
        "{unsigned}"
    );

    grant(
        &env,
        "dave",
        writer_rules("status", &[signers("sign", &["example.com/*"])]),
    )
    .await;
    let dave = env.client_as_user("dave", &[]).await.expect("client");
    let (code, signed) = merge(&dave, &status, &issue).await;
    assert_eq!(code, 200, "{signed}");
    assert_eq!(
        signed["status"]["certificate"],
        issue["status"]["certificate"]
    );
}

#[tokio::test]
async fn no_client_certificates_for_system_masters() {
    let env = rbac_env().await;
    let client_signer = "kubernetes.io/kube-apiserver-client";
    let (code, body) = send(
        &env.client(),
        "POST",
        CSRS,
        Some(&csr("root", client_signer, &["devs", "system:masters"])),
    )
    .await;
    assert_forbidden(
        code,
        &body,
        "certificatesigningrequests.certificates.k8s.io \"root\" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed",
    );
    let (code, _) = send(&env.client(), "GET", &format!("{CSRS}/root"), None).await;
    assert_eq!(code, 404, "nothing stored");
    // Other groups, or other signers, are fine.
    create(&env, CSRS, csr("dev", client_signer, &["devs"])).await;
    create(&env, CSRS, csr("elsewhere", SIGNER, &["system:masters"])).await;
}

#[tokio::test]
async fn allow_all_servers_let_anyone_approve_and_sign() {
    let env = TestEnv::start().await.expect("env");
    create(&env, CSRS, csr("web", SIGNER, &[])).await;
    let nobody = env.client_as_user("nobody", &[]).await.expect("client");
    let (code, body) = merge(&nobody, &format!("{CSRS}/web/approval"), &approve_patch()).await;
    assert_eq!(code, 200, "{body}");
    let issue = json!({"status": {"certificate": b64(&certificate_pem())}});
    let (code, body) = merge(&nobody, &format!("{CSRS}/web/status"), &issue).await;
    assert_eq!(code, 200, "{body}");
}
