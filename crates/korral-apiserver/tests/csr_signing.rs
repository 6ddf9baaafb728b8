//! The simulated CSR signing controller through the server (RBAC on, so the controller works
//! under its bootstrap role): approved requests for the built-in signers get a certificate
//! issued by the server's CA for the requested subject, usages and duration; a request that
//! breaks its signer's rules gets a `Failed` condition with upstream's reason and message;
//! requests that are not approved, are denied, or name another signer get nothing. An issued
//! client certificate then authenticates its subject to the server, for kube-rs and kubectl.

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
    keyed_request(cn, org).1
}

/// [`request`] with the PEM private key it was signed with.
fn keyed_request(cn: &str, org: &str) -> (String, String) {
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
    (
        key.serialize_pem(),
        base64::engine::general_purpose::STANDARD.encode(pem),
    )
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

/// A simulating server in RBAC mode, so the controllers work under their bootstrap roles.
async fn signing_env() -> TestEnv {
    TestEnv::builder()
        .simulation(true)
        .authorization(AuthorizationMode::Rbac)
        .start()
        .await
        .expect("env")
}

/// Approves (or denies) the CSR `name` through `/approval`, as `kubectl certificate` does.
async fn decide(env: &TestEnv, name: &str, kind: &str) {
    decide_dated(env, name, kind, None).await;
}

/// [`decide`], the decision dated `ago` in the past when given (the server dates it now
/// otherwise).
async fn decide_dated(env: &TestEnv, name: &str, kind: &str, ago: Option<jiff::SignedDuration>) {
    let (_, mut csr) = call(env, "GET", &format!("{CSRS}/{name}"), None).await;
    let mut condition = json!({
        "type": kind, "status": "True", "reason": "KubectlApprove",
        "message": "This CSR was approved by kubectl certificate approve."
    });
    if let Some(ago) = ago {
        let when = (jiff::Timestamp::now() - ago).to_string();
        condition["lastUpdateTime"] = json!(when);
        condition["lastTransitionTime"] = json!(when);
    }
    csr["status"]["conditions"] = json!([condition]);
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
    let env = signing_env().await;
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

/// A kubeconfig for the server that authenticates with the client certificate `cert_pem` and
/// its key, and no token.
fn certificate_kubeconfig(env: &TestEnv, cert_pem: &str, key_pem: &str) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: korral\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: cert\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\ncontexts:\n- name: cert\n  context:\n    cluster: korral\n    user: cert\ncurrent-context: cert\n",
        server = env.server().url(),
        ca = b64(env.server().ca_pem().expect("ca")),
        cert = b64(cert_pem),
        key = b64(key_pem),
    )
}

/// A client for `kubeconfig`.
async fn client_for(kubeconfig: &str) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig");
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

#[tokio::test]
async fn issued_client_certificates_authenticate_their_subject() {
    let env = signing_env().await;
    let (key_pem, request) = keyed_request("alice", "dev");
    create(
        &env,
        "alice",
        json!({"request": request, "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}),
    )
    .await;
    decide(&env, "alice", "Approved").await;
    let csr = until(&env, "alice", "alice's certificate", issued).await;
    let cert_pem = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(csr["status"]["certificate"].as_str().expect("certificate"))
            .expect("base64"),
    )
    .expect("utf-8");
    let kubeconfig = certificate_kubeconfig(&env, &cert_pem, &key_pem);
    let alice = client_for(&kubeconfig).await;

    // Who am I: the subject, its organization as a group, the certificate as credential.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let (code, body) = raw(
        &alice,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some("application/json"),
        review.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let user = &body["status"]["userInfo"];
    assert_eq!(user["username"], "alice", "{body}");
    assert_eq!(user["groups"], json!(["dev", "system:authenticated"]));
    let fingerprint = ring::digest::digest(&ring::digest::SHA256, &der_of(cert_pem.as_bytes()));
    let hex: String = fingerprint
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("X509SHA256={hex}")])
    );

    // RBAC judges alice like any user.
    let pods = "/api/v1/namespaces/default/pods";
    let (code, body) = raw(&alice, "GET", pods, None, Vec::new()).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-view", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]
    });
    let (code, body) = call(
        &env,
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        Some(&binding),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = raw(&alice, "GET", pods, None, Vec::new()).await;
    assert_eq!(code, 200, "{body}");

    // kubectl, with the same kubeconfig.
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("alice.kubeconfig");
    std::fs::write(&path, &kubeconfig).expect("write kubeconfig");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&path)
            .args(["auth", "whoami", "-o", "json"])
            .output()
            .expect("run kubectl")
    })
    .await
    .expect("kubectl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whoami: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(whoami["status"]["userInfo"]["username"], "alice");

    // A certificate from another CA is no credential: without a token, 401.
    let stranger = KeyPair::generate().expect("key");
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "mallory");
    params.distinguished_name = dn;
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let self_signed = params.self_signed(&stranger).expect("certificate");
    let mallory = client_for(&certificate_kubeconfig(
        &env,
        &self_signed.pem(),
        &stranger.serialize_pem(),
    ))
    .await;
    let (code, body) = raw(&mallory, "GET", "/api/v1/namespaces", None, Vec::new()).await;
    assert_eq!(code, 401, "{body}");
    assert_eq!(body["reason"], "Unauthorized", "{body}");
}

/// The `Approved` condition of a CSR, if any.
fn approval(csr: &Value) -> Option<Value> {
    csr["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Approved")
        .cloned()
}

#[tokio::test]
async fn kubelet_client_requests_are_approved_after_an_access_review() {
    let env = signing_env().await;
    let kubelet_client = |cn: &str| {
        json!({"request": request(cn, "system:nodes"),
               "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
               "usages": ["digital signature", "client auth"]})
    };
    // Who may ask for new node certificates, and who for their own node's.
    for (name, subresource, subject) in [
        (
            "node-bootstrapper",
            "nodeclient",
            json!({"kind": "Group", "name": "bootstrappers", "apiGroup": "rbac.authorization.k8s.io"}),
        ),
        (
            "node-renewer",
            "selfnodeclient",
            json!({"kind": "Group", "name": "system:nodes", "apiGroup": "rbac.authorization.k8s.io"}),
        ),
    ] {
        create_ok(&env, "/apis/rbac.authorization.k8s.io/v1/clusterroles", &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"apiGroups": ["certificates.k8s.io"],
                "resources": ["certificatesigningrequests", format!("certificatesigningrequests/{subresource}")],
                "verbs": ["create", "get"]}]})).await;
        create_ok(&env, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [subject]})).await;
    }
    let post = |user: &'static str, group: &'static str, name: &'static str, spec: Value| {
        let env = &env;
        async move {
            let client = env.client_as_user(user, &[group]).await.expect("client");
            let body = json!({"apiVersion": "certificates.k8s.io/v1",
                "kind": "CertificateSigningRequest", "metadata": {"name": name}, "spec": spec});
            let (code, stored) = raw(
                &client,
                "POST",
                CSRS,
                Some("application/json"),
                body.to_string().into_bytes(),
            )
            .await;
            assert_eq!(code, 201, "{stored}");
        }
    };
    // A bootstrapper asks for a new node's certificate: approved, then signed.
    post(
        "bootstrap-token-abc",
        "bootstrappers",
        "new-node",
        kubelet_client("system:node:n1"),
    )
    .await;
    let csr = until(&env, "new-node", "the new node's certificate", issued).await;
    let approved = approval(&csr).expect("approved");
    assert_eq!(approved["status"], "True");
    assert_eq!(approved["reason"], "AutoApproved");
    assert_eq!(
        approved["message"],
        "Auto approving kubelet client certificate after SubjectAccessReview."
    );
    // A node renews its own certificate.
    post(
        "system:node:n2",
        "system:nodes",
        "renewal",
        kubelet_client("system:node:n2"),
    )
    .await;
    let csr = until(&env, "renewal", "the renewed certificate", issued).await;
    assert_eq!(
        approval(&csr).expect("approved")["message"],
        "Auto approving self kubelet client certificate after SubjectAccessReview."
    );
    // Not approved: a node asking for another node's certificate, a requester without the
    // permission, a request that breaks the kubelet client rules, another signer.
    post(
        "system:node:n2",
        "system:nodes",
        "other-node",
        kubelet_client("system:node:n3"),
    )
    .await;
    let outsider = env
        .client_as_user("mallory", &["dev"])
        .await
        .expect("client");
    create_ok(&env, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", &json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "mallory-csr"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "node-renewer"},
        "subjects": [{"kind": "User", "name": "mallory", "apiGroup": "rbac.authorization.k8s.io"}]})).await;
    let body = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "outsider"}, "spec": kubelet_client("system:node:n4")});
    let (code, _) = raw(
        &outsider,
        "POST",
        CSRS,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 201);
    let mut wrong_org = kubelet_client("system:node:n1");
    wrong_org["request"] = json!(request("system:node:n1", "dev"));
    post(
        "bootstrap-token-abc",
        "bootstrappers",
        "wrong-org",
        wrong_org,
    )
    .await;
    let mut other_signer = kubelet_client("system:node:n1");
    other_signer["signerName"] = json!("kubernetes.io/kube-apiserver-client");
    post(
        "bootstrap-token-abc",
        "bootstrappers",
        "other-signer",
        other_signer,
    )
    .await;
    // A later request is approved once these were looked at: they were left alone.
    post(
        "bootstrap-token-abc",
        "bootstrappers",
        "marker",
        kubelet_client("system:node:n5"),
    )
    .await;
    until(&env, "marker", "the marker's certificate", issued).await;
    for name in ["other-node", "outsider", "wrong-org", "other-signer"] {
        let (_, csr) = call(&env, "GET", &format!("{CSRS}/{name}"), None).await;
        assert!(approval(&csr).is_none() && !issued(&csr), "{name}: {csr}");
    }
}

#[tokio::test]
async fn old_requests_are_cleaned_up() {
    let env = signing_env().await;
    let client = "kubernetes.io/kube-apiserver-client";
    let spec = |cn: &str| json!({"request": request(cn, "dev"), "signerName": client, "usages": ["client auth"]});
    let hours = jiff::SignedDuration::from_hours;
    for name in [
        "old-denied",
        "fresh-denied",
        "old-approved",
        "fresh-approved",
        "pending",
    ] {
        create(&env, name, spec(name)).await;
    }
    decide_dated(&env, "old-denied", "Denied", Some(hours(2))).await;
    decide(&env, "fresh-denied", "Denied").await;
    decide_dated(&env, "old-approved", "Approved", Some(hours(2))).await;
    decide(&env, "fresh-approved", "Approved").await;
    // Denied more than an hour ago, and approved and issued more than an hour ago: deleted.
    for name in ["old-denied", "old-approved"] {
        wait_until(WAIT, name, || async {
            call(&env, "GET", &format!("{CSRS}/{name}"), None).await.0 == 404
        })
        .await
        .expect(name);
    }
    // Recent decisions and a pending request are kept (the fresh approval gets issued).
    until(&env, "fresh-approved", "issued", issued).await;
    for name in ["fresh-denied", "fresh-approved", "pending"] {
        let (code, _) = call(&env, "GET", &format!("{CSRS}/{name}"), None).await;
        assert_eq!(code, 200, "{name}");
    }
}
