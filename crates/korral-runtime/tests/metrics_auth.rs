//! Secure metrics against a real API server with RBAC: the manager serves `/metrics` over HTTPS
//! and lets in only bearer tokens the server authenticates (TokenReview) and authorizes for
//! `get` on `/metrics` (SubjectAccessReview): 401 without or with a bad token, 403 for a
//! service account without the `metrics-reader` ClusterRole, 200 once it is bound.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use korral_apiserver::AuthorizationMode;
use korral_runtime::manager::Manager;
use korral_runtime::manifests::{self, OperatorInfo};
use korral_runtime::metrics::{MetricsTls, Registry};
use korral_testenv::{TestEnv, wait_until};
use kube::api::{Api, PostParams};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(20);

/// A free local port (bound then released).
fn free_addr() -> Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}

/// A TLS client trusting only `cert_pem`, checking the name `localhost`.
fn tls_connector(cert_pem: &str) -> Result<tokio_rustls::TlsConnector> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(cert_pem.as_bytes())?)?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// `GET /metrics` over HTTPS with an optional bearer token: (status, body).
async fn get_metrics(
    connector: &tokio_rustls::TlsConnector,
    addr: SocketAddr,
    token: Option<&str>,
) -> Result<(u16, String)> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let mut tls = connector
        .connect(ServerName::try_from("localhost")?, tcp)
        .await
        .context("TLS handshake")?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let request =
        format!("GET /metrics HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    tls.read_to_end(&mut response).await?;
    let text = String::from_utf8(response)?;
    let (head, body) = text.split_once("\r\n\r\n").context("no header end")?;
    let status = head
        .split(' ')
        .nth(1)
        .context("no status")?
        .parse::<u16>()?;
    Ok((status, body.to_owned()))
}

#[tokio::test]
async fn secure_metrics_need_an_authenticated_and_authorized_token() -> Result<()> {
    let env = TestEnv::builder()
        .authorization(AuthorizationMode::Rbac)
        .start()
        .await?;
    let registry = Registry::new();
    registry
        .counter(
            "korral_metrics_auth_test_total",
            "A series only this test registers.",
        )?
        .inc();
    let tls = MetricsTls::self_signed(&[])?;
    let addr = free_addr()?;
    let manager = Manager::builder(env.client())
        .metrics_addr(Some(addr))
        .secure_metrics(tls.clone())
        .metrics_registry(registry)
        .build()?;
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(manager.run(async move {
        let _ = stop_rx.wait_for(|stop| *stop).await;
    }));

    let result = async {
        let connector = tls_connector(tls.cert_pem())?;
        // The server is up once the handshake succeeds; then no token: 401.
        let first = RefCell::new(None);
        wait_until(WAIT, "the HTTPS metrics server", || async {
            let response = get_metrics(&connector, addr, None).await.ok();
            let up = response.is_some();
            *first.borrow_mut() = response;
            up
        })
        .await?;
        let (status, body) = first.into_inner().context("first response")?;
        ensure!(status == 401, "no token: {status} {body}");
        ensure!(body == "Unauthorized\n", "{body:?}");

        let (status, _) = get_metrics(&connector, addr, Some("not-a-real-token")).await?;
        ensure!(status == 401, "bad token: {status}");

        // A real token of a service account without the metrics-reader role: 403.
        let token = env.service_account_token("default", "scraper").await?;
        let (status, body) = get_metrics(&connector, addr, Some(&token)).await?;
        ensure!(status == 403, "unbound service account: {status} {body}");
        ensure!(
            body == "Authorization denied for user system:serviceaccount:default:scraper\n",
            "{body:?}"
        );

        // The metrics-reader ClusterRole as `korral generate` writes it, bound to the account.
        let info = OperatorInfo::new("metrics-test", "example.com");
        let set = manifests::collect(|_| Ok(()))?.render(&info)?;
        let reader = set
            .files
            .iter()
            .find(|f| f.path == "config/rbac/metrics_reader_role.yaml")
            .and_then(|f| f.objects.first())
            .context("metrics_reader_role.yaml")?;
        let role: ClusterRole = serde_json::from_value(reader.clone())?;
        Api::<ClusterRole>::all(env.client())
            .create(&PostParams::default(), &role)
            .await?;
        let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "scraper-metrics-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": info.metrics_reader_role_name(),
            },
            "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": "default"}],
        }))?;
        Api::<ClusterRoleBinding>::all(env.client())
            .create(&PostParams::default(), &binding)
            .await?;

        let allowed = RefCell::new(None);
        wait_until(WAIT, "the bound service account to be allowed", || async {
            let body = match get_metrics(&connector, addr, Some(&token)).await {
                Ok((200, body)) => Some(body),
                _ => None,
            };
            let ok = body.is_some();
            *allowed.borrow_mut() = body;
            ok
        })
        .await?;
        let body = allowed.into_inner().context("allowed body")?;
        ensure!(
            body.contains("# TYPE korral_metrics_auth_test_total counter")
                && body.contains("korral_metrics_auth_test_total 1"),
            "{body}"
        );

        // Plain HTTP on the TLS port is refused: nothing is served without TLS.
        let mut tcp = tokio::net::TcpStream::connect(addr).await?;
        tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await?;
        let mut plain = Vec::new();
        let _ = tcp.read_to_end(&mut plain).await;
        if String::from_utf8_lossy(&plain).contains("korral_metrics_auth_test_total") {
            bail!("metrics served over plain HTTP");
        }
        anyhow::Ok(())
    }
    .await;

    let _ = stop_tx.send(true);
    running.await??;
    result
}

/// Creates the object of the rendered file `path` (a ClusterRole or ClusterRoleBinding).
async fn apply_rendered(env: &TestEnv, info: &OperatorInfo, path: &str) -> Result<()> {
    let set = manifests::collect(|_| Ok(()))?.render(info)?;
    let object = set
        .files
        .iter()
        .find(|f| f.path == path)
        .and_then(|f| f.objects.first())
        .with_context(|| format!("{path} not rendered"))?;
    let kind = object["kind"].as_str().context("kind")?;
    match kind {
        "ClusterRole" => {
            let role: ClusterRole = serde_json::from_value(object.clone())?;
            Api::<ClusterRole>::all(env.client())
                .create(&PostParams::default(), &role)
                .await?;
        }
        "ClusterRoleBinding" => {
            let binding: ClusterRoleBinding = serde_json::from_value(object.clone())?;
            Api::<ClusterRoleBinding>::all(env.client())
                .create(&PostParams::default(), &binding)
                .await?;
        }
        other => bail!("unexpected kind {other} in {path}"),
    }
    Ok(())
}

/// The manager running as its own service account needs exactly what the rendered
/// `metrics-auth` ClusterRole and binding grant: without them its TokenReviews are forbidden
/// and every scrape is refused (401); with them a scraper bound to `metrics-reader` gets 200.
#[tokio::test]
async fn the_rendered_metrics_auth_role_is_what_the_manager_needs() -> Result<()> {
    let env = TestEnv::builder()
        .authorization(AuthorizationMode::Rbac)
        .start()
        .await?;
    let info = OperatorInfo::new("metrics-test", "example.com").namespace("default");
    let manager_client = env
        .client_as_service_account("default", &info.service_account())
        .await?;
    let tls = MetricsTls::self_signed(&[])?;
    let addr = free_addr()?;
    let manager = Manager::builder(manager_client)
        .metrics_addr(Some(addr))
        .secure_metrics(tls.clone())
        .metrics_registry(Registry::new())
        .build()?;
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(manager.run(async move {
        let _ = stop_rx.wait_for(|stop| *stop).await;
    }));

    let result = async {
        let connector = tls_connector(tls.cert_pem())?;
        let token = env.service_account_token("default", "prometheus").await?;
        apply_rendered(&env, &info, "config/rbac/metrics_reader_role.yaml").await?;
        let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "prometheus-metrics-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": info.metrics_reader_role_name(),
            },
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"}],
        }))?;
        Api::<ClusterRoleBinding>::all(env.client())
            .create(&PostParams::default(), &binding)
            .await?;

        // The manager may not review tokens yet: the scraper's valid token is refused.
        let first = RefCell::new(None);
        wait_until(WAIT, "the HTTPS metrics server", || async {
            let response = get_metrics(&connector, addr, Some(&token)).await.ok();
            let up = response.is_some();
            *first.borrow_mut() = response;
            up
        })
        .await?;
        let (status, body) = first.into_inner().context("first response")?;
        ensure!(
            status == 401,
            "manager without metrics-auth: {status} {body}"
        );

        apply_rendered(&env, &info, "config/rbac/metrics_auth_role.yaml").await?;
        apply_rendered(&env, &info, "config/rbac/metrics_auth_role_binding.yaml").await?;
        wait_until(
            WAIT,
            "the scraper to be allowed once the manager may review",
            || async {
                matches!(
                    get_metrics(&connector, addr, Some(&token)).await,
                    Ok((200, _))
                )
            },
        )
        .await?;
        anyhow::Ok(())
    }
    .await;

    let _ = stop_tx.send(true);
    running.await??;
    result
}

/// Without a filter, `serve_metrics_secure` is HTTPS only: no token needed, other paths 404.
#[tokio::test]
async fn https_without_the_filter_serves_anyone() -> Result<()> {
    let registry = Registry::new();
    registry
        .counter("korral_tls_only_total", "TLS only.")?
        .inc();
    let tls = MetricsTls::self_signed(&[])?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let server = korral_runtime::metrics::serve_metrics_secure(
        "127.0.0.1:0".parse()?,
        registry,
        &tls,
        None,
        stop_rx,
    )
    .await?;
    let connector = tls_connector(tls.cert_pem())?;
    let (status, body) = get_metrics(&connector, server.local_addr(), None).await?;
    ensure!(status == 200, "{status} {body}");
    ensure!(body.contains("korral_tls_only_total 1"), "{body}");
    // A client that does not trust the certificate cannot connect.
    let other = MetricsTls::self_signed(&[])?;
    let untrusting = tls_connector(other.cert_pem())?;
    ensure!(
        get_metrics(&untrusting, server.local_addr(), None)
            .await
            .is_err(),
        "a different certificate was accepted"
    );
    stop_tx.send(true)?;
    server.wait().await;
    Ok(())
}
