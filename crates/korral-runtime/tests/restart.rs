//! A shared cache keeps working when the API server restarts: its watch reconnects and relists.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use korral_apiserver::ServerConfig;
use korral_runtime::cache::{Cache, Scope};
use korral_runtime::reconcile::ObjectRef;
use korral_testenv::{TestEnv, wait_until};
use kube::Api;
use kube::api::PostParams;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("configmap")
}

#[tokio::test]
async fn cache_recovers_after_the_server_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env = TestEnv::builder()
        .server_config(ServerConfig::durable(dir.path()))
        .start()
        .await
        .expect("env");
    let port = env.server().addr().port();
    // The cache uses the first server's client throughout: same URL, CA and token after restart.
    let client = env.client();
    let cache = Cache::new(client.clone());
    let informer = cache
        .informer::<ConfigMap>(Scope::namespace("default"))
        .expect("informer");
    informer.wait_synced().await.expect("synced");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("before"))
        .await
        .expect("create");
    let before = ObjectRef::namespaced("default", "before");
    wait_until(Duration::from_secs(10), "cache sees `before`", || {
        let found = informer.get(&before).is_some();
        async move { found }
    })
    .await
    .expect("before cached");

    env.shutdown().await;
    let restarted = TestEnv::builder()
        .server_config(ServerConfig {
            port,
            ..ServerConfig::durable(dir.path())
        })
        .start()
        .await
        .expect("restart on the same port");
    let again: Api<ConfigMap> = Api::namespaced(restarted.client(), "default");
    again
        .create(&PostParams::default(), &cm("after"))
        .await
        .expect("create after restart");
    let after = ObjectRef::namespaced("default", "after");
    wait_until(Duration::from_secs(30), "cache sees `after`", || {
        let found = informer.get(&after).is_some() && informer.get(&before).is_some();
        async move { found }
    })
    .await
    .expect("the watch recovered after the restart");
}
