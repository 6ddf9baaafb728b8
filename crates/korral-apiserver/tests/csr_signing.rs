//! The simulated CSR signing controller through the server (RBAC on, so the controller works
//! under its bootstrap role): approved requests for the built-in signers get a certificate
//! issued by the server's CA for the requested subject, usages and duration; a request that
//! breaks its signer's rules gets a `Failed` condition with upstream's reason and message;
//! requests that are not approved, are denied, or name another signer get nothing.

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::*;
use korral_testenv::AuthorizationMode;
use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use serde_json::{Value, json};
use x509_parser::extensions::ParsedExtension;
use x509_parser::prelude::{FromDer, X509Certificate};

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
const WAIT: Duration = Duration::from_secs(10);

/// A PKCS#10 request for `cn` in organization `org`, PEM, base64 as `spec.request` holds it.
fn request(cn: &str, org: &str) -> String {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn.push(DnType::OrganizationName, org);
    params.distinguished_name = dn;
    let pem = params
        .serialize_request(&key)
        .expect("request")
        .pem()
        .expect("pem");
    base64::engine::general_purpose::STANDARD.encode(pem)
}

/// Creates the CSR `name` and answers it as stored.
async fn create(env: &TestEnv, name: &str, spec: Value) -> Value {
    let body = json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": spec,
    });
    let (code, stored) = call(env, "POST", CSRS, Some(&body)).await;
    assert_eq!(code, 201, "{stored}");
    stored
}

/// Approves (or denies) the CSR `name` through `/approval`, as `kubectl certificate` does.
async fn decide(env: &TestEnv, name: &str, kind: &str) {
    let (_, mut csr) = call(env, "GET", &format!("{CSRS}/{name}"), None).await;
    csr["status"]["conditions"] = json!([{
        "type": kind, "status": "True", "reason": "KubectlApprove",
        "message": "This CSR was approved by kubectl certificate approve."
    }]);
    let (code, body) = call(env, "PUT", &format!("{CSRS}/{name}/approval"), Some(&csr)).await;
    assert_eq!(code, 200, "{body}");
}

/// Waits until the CSR `name` satisfies `done`, answering it.
async fn until(env: &TestEnv, name: &str, what: &str, done: fn(&Value) -> bool) -> Value {
    wait_until(WAIT, what, || async {
        done(&call(env, "GET", &format!("{CSRS}/{name}"), None).await.1)
    })
    .await
    .expect(what);
    call(env, "GET", &format!("{CSRS}/{name}"), None).await.1
}

fn issued(csr: &Value) -> bool {
    csr["status"]["certificate"].is_string()
}

fn failed(csr: &Value) -> bool {
    csr["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Failed"))
}

/// The DER of the first PEM certificate in `pem`.
fn der_of(pem: &[u8]) -> Vec<u8> {
    CertificateDer::from_pem_slice(pem).expect("pem").to_vec()
}

#[tokio::test]
async fn approved_requests_for_built_in_signers_are_signed_or_failed() {
    let env = TestEnv::builder()
        .simulation(true)
        .authorization(AuthorizationMode::Rbac)
        .start()
        .await
        .expect("env");
    let client = "kubernetes.io/kube-apiserver-client";
    // Requests that must stay unsigned: not approved, denied, another signer.
    create(
        &env,
        "waiting",
        json!({"request": request("bob", "dev"), "signerName": client, "usages": ["client auth"]}),
    )
    .await;
    create(
        &env,
        "denied",
        json!({"request": request("eve", "dev"), "signerName": client, "usages": ["client auth"]}),
    )
    .await;
    decide(&env, "denied", "Denied").await;
    create(&env, "external", json!({"request": request("carol", "dev"), "signerName": "example.com/signer", "usages": ["client auth"]})).await;
    decide(&env, "external", "Approved").await;

    // A client certificate for an hour.
    create(
        &env,
        "alice",
        json!({
            "request": request("alice", "dev"),
            "signerName": client,
            "usages": ["digital signature", "client auth"],
            "expirationSeconds": 3600
        }),
    )
    .await;
    decide(&env, "alice", "Approved").await;
    let csr = until(&env, "alice", "alice's certificate", issued).await;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(csr["status"]["certificate"].as_str().expect("certificate"))
        .expect("base64");
    let der = der_of(&pem);
    let (_, cert) = X509Certificate::from_der(&der).expect("certificate");
    assert_eq!(cert.subject().to_string(), "CN=alice, O=dev");
    let ca_pem = env
        .server()
        .ca_pem()
        .expect("a TLS server has a CA")
        .to_owned();
    let ca_der = der_of(ca_pem.as_bytes());
    let (_, ca) = X509Certificate::from_der(&ca_der).expect("ca");
    assert_eq!(cert.issuer(), ca.subject());
    cert.verify_signature(Some(ca.public_key()))
        .expect("issued by the server's CA");
    let validity = cert.validity();
    assert_eq!(
        validity.not_after.timestamp() - validity.not_before.timestamp(),
        3600 + 300,
        "an hour from now, starting five minutes back"
    );
    let eku = cert
        .extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::ExtendedKeyUsage(eku) => Some(eku.clone()),
            _ => None,
        })
        .expect("extended key usage");
    assert!(eku.client_auth && !eku.server_auth);
    // The approval and the signature are both kept.
    assert_eq!(csr["status"]["conditions"][0]["type"], "Approved");

    // A kubelet serving request from outside the nodes group fails its signer's rules.
    create(
        &env,
        "serving",
        json!({
            "request": request("system:node:n1", "dev"),
            "signerName": "kubernetes.io/kubelet-serving",
            "usages": ["digital signature", "server auth"]
        }),
    )
    .await;
    decide(&env, "serving", "Approved").await;
    let csr = until(&env, "serving", "the Failed condition", failed).await;
    let condition = &csr["status"]["conditions"][1];
    assert_eq!(condition["type"], "Failed", "{csr}");
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "SignerValidationFailure");
    assert_eq!(
        condition["message"],
        "subject organization is not system:nodes"
    );
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");
    assert!(!issued(&csr));

    // Each write of the earlier requests queued them for the controller, which has handled
    // later work since: they were looked at and left alone.
    for name in ["waiting", "denied", "external"] {
        let (_, csr) = call(&env, "GET", &format!("{CSRS}/{name}"), None).await;
        assert!(!issued(&csr) && !failed(&csr), "{name}: {csr}");
    }
}
