//! The Memcached webhooks through korral-testenv, as envtest runs a Go operator's webhooks: the
//! configurations the operator's manifests declare (`config/webhook/manifests.yaml`) are
//! installed pointing at a local port, the real `WebhookServer` serves them there with the
//! certificate testenv generated, and the embedded API server calls them: a Memcached without
//! a size is stored with size 1, size 7 is denied with the validating webhook's message, size 4
//! is stored and its warning reaches the client.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use korral::webhook::{RunningWebhookServer, WebhookServer};
use korral_testenv::{TestEnv, WebhookInstall};
use kube::api::{Api, PostParams};
use kube::client::Body;
use memcached_operator::webhooks::{MAX_SIZE, WARN_ABOVE, check_size};
use memcached_operator::{Memcached, MemcachedSpec};
use serde_json::{Value, json};

const MEMCACHEDS: &str = "/apis/cache.example.com/v1/namespaces/default/memcacheds";

/// Writes the webhook manifests the operator declares (what `korral generate` puts in
/// `config/webhook/manifests.yaml`) into `dir`; returns the file.
fn webhook_manifests(dir: &std::path::Path) -> Result<std::path::PathBuf> {
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
    let mut yaml = String::new();
    for object in &file.objects {
        yaml.push_str("---\n");
        yaml.push_str(&serde_yaml_ng::to_string(object)?);
    }
    let path = dir.join("manifests.yaml");
    std::fs::write(&path, yaml)?;
    Ok(path)
}

/// testenv with the Memcached CRD and webhooks, and the Memcached webhooks served where the
/// configurations point.
async fn start(dir: &std::path::Path) -> Result<(TestEnv, RunningWebhookServer)> {
    let env = TestEnv::builder()
        .crd::<Memcached>()
        .webhooks(WebhookInstall::new().path(webhook_manifests(dir)?))
        .start()
        .await?;
    let serving = env.webhook_serving().context("webhook serving")?;
    let mut server = WebhookServer::new()
        .host(serving.local_serving_host())
        .port(serving.local_serving_port())
        .cert_dir(serving.local_serving_cert_dir())
        .metrics_registry(korral::metrics::Registry::new());
    memcached_operator::webhooks::register(&mut server)?;
    let running = server.serve().await?;
    serving.wait_serving(Duration::from_secs(10)).await?;
    Ok((env, running))
}

/// POSTs `body` to `path` as the environment's admin; answers the status code, the `Warning`
/// headers and the JSON body (kube's typed API drops warnings).
async fn post(env: &TestEnv, path: &str, body: &Value) -> Result<(u16, Vec<String>, Value)> {
    let request = kube::core::Request::new(path)
        .create(&PostParams::default(), serde_json::to_vec(body)?)?
        .map(Body::from);
    let response = env.client().send(request).await?;
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let bytes = response.into_body().collect_bytes().await?;
    Ok((code, warnings, serde_json::from_slice(&bytes)?))
}

fn memcached(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "cache.example.com/v1",
        "kind": "Memcached",
        "metadata": {"name": name},
        "spec": spec,
    })
}

#[tokio::test]
async fn the_api_server_calls_the_memcached_webhooks_served_through_testenv() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (env, running) = start(dir.path()).await?;
    let memcacheds: Api<Memcached> = Api::namespaced(env.client(), "default");

    // Defaulting: created without a size, stored with size 1.
    let (code, warnings, created) =
        post(&env, MEMCACHEDS, &memcached("unsized", json!({}))).await?;
    ensure!(code == 201, "{code} {created}");
    ensure!(warnings.is_empty(), "{warnings:?}");
    ensure!(created["spec"] == json!({"size": 1}), "{created}");
    ensure!(memcacheds.get("unsized").await?.spec.size == 1);

    // Validation: size 7 is denied with the webhook's message, as the API server words it.
    let denial = check_size(&Memcached::new("too-big", MemcachedSpec { size: 7 }))
        .err()
        .context("size 7 is denied")?
        .to_status("cache.example.com", "Memcached", "too-big");
    let (code, _, status) =
        post(&env, MEMCACHEDS, &memcached("too-big", json!({"size": 7}))).await?;
    ensure!(
        code == denial.code && status["code"] == denial.code,
        "{code} {status}"
    );
    ensure!(
        status["message"]
            == format!(
                "admission webhook \"vmemcached-v1.kb.io\" denied the request: {}",
                denial.message
            ),
        "{status}"
    );
    ensure!(
        status["message"]
            == format!(
                "admission webhook \"vmemcached-v1.kb.io\" denied the request: Memcached.cache.example.com \"too-big\" is invalid: spec.size: Invalid value: 7: must be between 1 and {MAX_SIZE}"
            ),
        "{status}"
    );
    ensure!(
        memcacheds.get_opt("too-big").await?.is_none(),
        "a denied Memcached was stored"
    );

    // A warning above 3: stored, and the warning reaches the client.
    let (code, warnings, created) =
        post(&env, MEMCACHEDS, &memcached("large", json!({"size": 4}))).await?;
    ensure!(code == 201, "{code} {created}");
    ensure!(created["spec"]["size"] == 4, "{created}");
    ensure!(
        warnings
            == [format!(
                "299 - \"spec.size 4 is above {WARN_ABOVE}: each memcached pod reserves 64 MiB of cache\""
            )],
        "{warnings:?}"
    );

    // Updates are validated too.
    let mut large = memcacheds.get("large").await?;
    large.spec.size = 6;
    match memcacheds
        .replace("large", &PostParams::default(), &large)
        .await
    {
        Err(kube::Error::Api(status)) => ensure!(
            status
                .message
                .starts_with("admission webhook \"vmemcached-v1.kb.io\" denied the request: ")
                && status
                    .message
                    .ends_with("spec.size: Invalid value: 6: must be between 1 and 5"),
            "{status:?}"
        ),
        other => anyhow::bail!("size 6 was not denied: {other:?}"),
    }
    ensure!(memcacheds.get("large").await?.spec.size == 4);

    running.shutdown().await;
    env.shutdown().await;
    Ok(())
}
