//! End-to-end with the real `kubectl` (the default one and the old 1.27 one) on
//! certificates.k8s.io/v1: creating CertificateSigningRequests, `kubectl certificate
//! approve|deny` (which write through the `approval` subresource), the columns upstream prints
//! and the refusals as upstream words them.
//!
//! Every step runs for each kubectl found; all failing steps are collected and reported
//! together.

mod support;

use std::path::Path;

use base64::Engine;
use support::{CmdOutput, Failures, Options, Run, Server, Storage, for_each_kubectl};

/// A CertificateSigningRequest manifest for `name`, with a fresh key's PKCS#10 request.
fn manifest(name: &str) -> anyhow::Result<String> {
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let pem = params.serialize_request(&key)?.pem()?;
    let request = base64::engine::general_purpose::STANDARD.encode(pem);
    Ok(format!(
        "apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {{name: {name}}}
spec:
  request: {request}
  signerName: example.com/e2e
  expirationSeconds: 7200
  usages: [client auth]
"
    ))
}

/// The column names of the header row.
fn header(out: &CmdOutput) -> Vec<String> {
    out.stdout
        .lines()
        .find(|l| l.starts_with("NAME"))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The row of `name` split on whitespace.
fn row(out: &CmdOutput, name: &str) -> Vec<String> {
    out.stdout
        .lines()
        .find(|l| l.starts_with(name))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: dir.path().join("kubeconfig"),
    })?;
    let mut files = Vec::new();
    for name in ["e2e-approve", "e2e-deny"] {
        let path = dir.path().join(format!("{name}.yaml"));
        std::fs::write(&path, manifest(name)?)?;
        files.push(path.display().to_string());
    }
    let mut run = Run {
        kubectl,
        server: &server,
        tag: kubectl.display().to_string(),
        failures,
    };

    for (file, name) in files.iter().zip(["e2e-approve", "e2e-deny"]) {
        run.ok_contains(
            &["create", "-f", file],
            &[&format!(
                "certificatesigningrequest.certificates.k8s.io/{name} created"
            )],
        );
    }
    let out = run.ok_contains(&["get", "csr"], &["e2e-approve", "e2e-deny"]);
    let want = [
        "NAME",
        "AGE",
        "SIGNERNAME",
        "REQUESTOR",
        "REQUESTEDDURATION",
        "CONDITION",
    ];
    run.expect(header(&out) == want, &format!("headers {want:?}"), &out);
    let cells = row(&out, "e2e-approve");
    run.expect(
        cells.get(2..)
            == Some(&["example.com/e2e", "korral-admin", "120m", "Pending"].map(String::from)[..]),
        "e2e-approve: example.com/e2e korral-admin 120m Pending",
        &out,
    );

    run.ok_contains(
        &["certificate", "approve", "e2e-approve"],
        &["certificatesigningrequest.certificates.k8s.io/e2e-approve approved"],
    );
    run.jsonpath(
        &["get", "csr", "e2e-approve"],
        "{.status.conditions[0].type}/{.status.conditions[0].status}/{.status.conditions[0].reason}",
        "Approved/True/KubectlApprove",
    );
    // Approving again changes nothing; kubectl refuses to deny an approved request (the
    // server refuses both conditions together: tests/new_groups.rs).
    run.ok_contains(
        &["certificate", "approve", "e2e-approve"],
        &["certificatesigningrequest.certificates.k8s.io/e2e-approve approved"],
    );
    run.fails_with(
        &["certificate", "deny", "e2e-approve"],
        &["certificate signing request \"e2e-approve\" is already Approved"],
    );
    run.ok_contains(
        &["certificate", "deny", "e2e-deny"],
        &["certificatesigningrequest.certificates.k8s.io/e2e-deny denied"],
    );
    run.fails_with(
        &["certificate", "approve", "no-such-csr"],
        &["certificatesigningrequests.certificates.k8s.io \"no-such-csr\" not found"],
    );

    let out = run.ok_contains(&["get", "csr"], &["e2e-approve"]);
    let approved = row(&out, "e2e-approve");
    let denied = row(&out, "e2e-deny");
    run.expect(
        approved.last().map(String::as_str) == Some("Approved")
            && denied.last().map(String::as_str) == Some("Denied"),
        "conditions Approved and Denied",
        &out,
    );
    run.ok_contains(
        &["explain", "csr.spec.request"],
        &["x509 certificate signing request"],
    );
    Ok(())
}

#[test]
fn kubectl_certificate_approve_and_deny() {
    for_each_kubectl("kubectl_certificate_approve_and_deny", scenario);
}
