//! The Memcached webhooks over TLS, as the API server calls them: the defaulting webhook sets
//! an unset size to 1 (JSONPatch), the validating webhook denies sizes outside 1..=5 with the
//! field error as the API server reports it and warns above 3.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use base64::Engine as _;
use korral::webhook::WebhookServer;
use korral::webhook::certs::{CertBundle, write_files};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A webhook server with the Memcached webhooks on a free port, and a client trusting it.
async fn serve() -> Result<(
    korral::webhook::RunningWebhookServer,
    tokio_rustls::TlsConnector,
    tempfile::TempDir,
)> {
    let dir = tempfile::tempdir()?;
    let bundle = CertBundle::generate("memcached-ca", &["localhost".to_owned()], 30, 30)?;
    write_files(dir.path(), &bundle)?;
    let mut server = WebhookServer::new()
        .host("127.0.0.1")
        .port(0)
        .cert_dir(dir.path())
        .metrics_registry(korral::metrics::Registry::new());
    memcached_operator::webhooks::register(&mut server)?;
    let running = server.serve().await?;

    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(bundle.ca_cert_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok((
        running,
        tokio_rustls::TlsConnector::from(Arc::new(config)),
        dir,
    ))
}

/// POSTs an AdmissionReview for `object` to `path` and returns the review's `response`.
async fn review(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    path: &str,
    operation: &str,
    object: Value,
) -> Result<Value> {
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "cache.example.com", "version": "v1", "kind": "Memcached"},
            "resource": {"group": "cache.example.com", "version": "v1", "resource": "memcacheds"},
            "requestKind": {"group": "cache.example.com", "version": "v1", "kind": "Memcached"},
            "requestResource": {"group": "cache.example.com", "version": "v1", "resource": "memcacheds"},
            "name": "memcached-sample",
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "admin"},
            "object": object,
            "oldObject": if operation == "UPDATE" { object.clone() } else { Value::Null },
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"},
        },
    })
    .to_string();
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        let mut tls = connector
            .connect(ServerName::try_from("localhost")?, tcp)
            .await?;
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        tls.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        tls.read_to_end(&mut raw).await?;
        anyhow::Ok(String::from_utf8(raw)?)
    };
    let text = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .context("the webhook did not answer")??;
    let (head, body) = text.split_once("\r\n\r\n").context("no end of headers")?;
    ensure!(head.starts_with("HTTP/1.1 200"), "{head}");
    let answer: Value = serde_json::from_str(body)?;
    ensure!(
        answer["response"]["uid"] == "705ab4f5-6393-11e8-b7cc-42010a800002",
        "{answer}"
    );
    Ok(answer["response"].clone())
}

fn memcached(spec: Value) -> Value {
    json!({
        "apiVersion": "cache.example.com/v1",
        "kind": "Memcached",
        "metadata": {"name": "memcached-sample", "namespace": "default", "uid": "u-1"},
        "spec": spec,
    })
}

#[tokio::test]
async fn the_defaulting_webhook_sets_an_unset_size_to_one() -> Result<()> {
    let (running, connector, _dir) = serve().await?;
    let addr = running.local_addr();
    let path = "/mutate-cache-example-com-v1-memcached";

    let response = review(&connector, addr, path, "CREATE", memcached(json!({}))).await?;
    ensure!(response["allowed"] == true, "{response}");
    ensure!(response["patchType"] == "JSONPatch", "{response}");
    let patch: Value = serde_json::from_slice(
        &base64::engine::general_purpose::STANDARD
            .decode(response["patch"].as_str().context("patch")?)?,
    )?;
    ensure!(
        patch == json!([{"op": "add", "path": "/spec/size", "value": 1}]),
        "{patch}"
    );

    // A size that is set is left alone: no patch.
    let response = review(
        &connector,
        addr,
        path,
        "CREATE",
        memcached(json!({"size": 3})),
    )
    .await?;
    ensure!(response["allowed"] == true, "{response}");
    ensure!(response.get("patch").is_none(), "{response}");
    running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_validating_webhook_denies_sizes_outside_one_to_five_and_warns_above_three()
-> Result<()> {
    let (running, connector, _dir) = serve().await?;
    let addr = running.local_addr();
    let path = "/validate-cache-example-com-v1-memcached";

    for operation in ["CREATE", "UPDATE"] {
        let response = review(
            &connector,
            addr,
            path,
            operation,
            memcached(json!({"size": 6})),
        )
        .await?;
        ensure!(response["allowed"] == false, "{response}");
        let status = &response["status"];
        ensure!(status["code"] == 403, "{status}");
        ensure!(
            status["message"]
                == "Memcached.cache.example.com \"memcached-sample\" is invalid: spec.size: Invalid value: 6: must be between 1 and 5",
            "{status}"
        );
        ensure!(
            status["details"]["causes"]
                == json!([{
                    "reason": "FieldValueInvalid",
                    "message": "Invalid value: 6: must be between 1 and 5",
                    "field": "spec.size",
                }]),
            "{status}"
        );
    }

    let response = review(
        &connector,
        addr,
        path,
        "CREATE",
        memcached(json!({"size": 0})),
    )
    .await?;
    ensure!(response["allowed"] == false, "{response}");

    let response = review(
        &connector,
        addr,
        path,
        "CREATE",
        memcached(json!({"size": 4})),
    )
    .await?;
    ensure!(response["allowed"] == true, "{response}");
    ensure!(
        response["warnings"]
            == json!(["spec.size 4 is above 3: each memcached pod reserves 64 MiB of cache"]),
        "{response}"
    );

    let response = review(
        &connector,
        addr,
        path,
        "CREATE",
        memcached(json!({"size": 3})),
    )
    .await?;
    ensure!(response["allowed"] == true, "{response}");
    ensure!(response.get("warnings").is_none(), "{response}");
    running.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_manifests_list_both_webhooks() -> Result<()> {
    let info = korral::manifests::OperatorInfo::new("memcached-operator", "example.com");
    let set = korral::manifests::collect(|manager| {
        memcached_operator::add_to_manager(manager, korral::cache::Scope::All);
        memcached_operator::add_webhooks(manager, WebhookServer::new())?;
        Ok(())
    })?
    .render(&info)?;
    let file = set
        .files
        .iter()
        .find(|f| f.path == "config/webhook/manifests.yaml")
        .context("config/webhook/manifests.yaml")?;
    let names: Vec<&Value> = file
        .objects
        .iter()
        .map(|o| &o["webhooks"][0]["name"])
        .collect();
    ensure!(
        names == [&json!("mmemcached-v1.kb.io"), &json!("vmemcached-v1.kb.io")],
        "{names:?}"
    );
    Ok(())
}
