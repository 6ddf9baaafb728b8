//! Durable storage through the server: restart recovers objects, revisions and watches.

mod common;

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use korral_apiserver::{ApiServer, ServerConfig};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": name}})).expect("cm")
}

#[tokio::test]
async fn restart_recovers_objects_revisions_and_watch_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (remembered, last_rv) = {
        let env = TestEnv::builder()
            .server_config(ServerConfig::durable(&data))
            .start()
            .await
            .expect("env");
        install_widget_crd(&env).await;
        widgets(&env, "default")
            .create(&PostParams::default(), &widget("w", json!({"replicas": 2})))
            .await
            .expect("widget");
        let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
        let first = api
            .create(&PostParams::default(), &cm("first"))
            .await
            .expect("create");
        let mut last = String::new();
        for i in 0..50 {
            last = api
                .create(&PostParams::default(), &cm(&format!("cm{i}")))
                .await
                .expect("create")
                .metadata
                .resource_version
                .expect("rv");
        }
        api.delete("cm0", &Default::default())
            .await
            .expect("delete");
        env.shutdown().await;
        (first.metadata.resource_version.expect("rv"), last)
    };
    // The first server is dropped: restart on the same directory.
    let env = TestEnv::builder()
        .server_config(ServerConfig::durable(&data))
        .start()
        .await
        .expect("restart");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(
        names.len(),
        50,
        "first + cm1..cm49 (cm0 deleted): {names:?}"
    );
    assert!(!names.contains(&"cm0".to_string()));
    // The CRD is served again and its object is back.
    let w = widgets(&env, "default")
        .get("w")
        .await
        .expect("widget after restart");
    assert_eq!(w.data["spec"]["replicas"], 2);
    // Revisions continue above the old ones.
    let new = api
        .create(&PostParams::default(), &cm("after"))
        .await
        .expect("create");
    let new_rv: u64 = new
        .metadata
        .resource_version
        .expect("rv")
        .parse()
        .expect("rv");
    assert!(new_rv > last_rv.parse::<u64>().expect("rv"));
    // A watch from before the restart replays what happened after it.
    let mut stream = api
        .watch(&WatchParams::default(), &remembered)
        .await
        .expect("watch")
        .boxed();
    let mut seen = Vec::new();
    while seen.len() < 52 {
        let ev = tokio::time::timeout(WAIT, stream.try_next())
            .await
            .expect("in time")
            .expect("ok")
            .expect("open");
        seen.push(match ev {
            WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.unwrap_or_default()),
            WatchEvent::Deleted(o) => format!("DELETED {}", o.metadata.name.unwrap_or_default()),
            WatchEvent::Modified(o) => format!("MODIFIED {}", o.metadata.name.unwrap_or_default()),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(seen[0], "ADDED cm0");
    assert_eq!(seen[50], "DELETED cm0");
    assert_eq!(seen[51], "ADDED after");
}

#[tokio::test]
async fn a_data_dir_in_use_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _first = ApiServer::start(ServerConfig::durable(dir.path()))
        .await
        .expect("first");
    let second = ApiServer::start(ServerConfig::durable(dir.path())).await;
    let err = second.err().expect("second start must fail");
    assert!(err.to_string().contains("in use"), "{err}");
}

/// The Service IPAddress repair pass on start: an address a Service holds but that went
/// missing is recreated, and an allocator-managed address whose Service is gone is released.
#[tokio::test]
async fn service_ip_addresses_are_repaired_on_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let addresses = IP_ADDRESSES;
    let wait = std::time::Duration::from_secs(10);
    let ip = {
        let env = TestEnv::builder()
            .server_config(ServerConfig::durable(&data))
            .start()
            .await
            .expect("env");
        let ip = service_with_address(&env, "web").await;
        let path = format!("{addresses}/{ip}");
        // The server is stopped at once after losing the address, and an orphan of the
        // allocator is left behind.
        let (code, body) = call(&env, "DELETE", &path, None).await;
        assert_eq!(code, 200, "{body}");
        let orphan = json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
            "metadata": {"name": "10.96.200.200", "labels": {
                "ipaddress.kubernetes.io/ip-family": "IPv4",
                "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"}},
            "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "gone"}}
        });
        let (code, body) = call(&env, "POST", addresses, Some(&orphan)).await;
        assert_eq!(code, 201, "{body}");
        env.shutdown().await;
        ip
    };
    let env = TestEnv::builder()
        .server_config(ServerConfig::durable(&data))
        .start()
        .await
        .expect("restart");
    let path = format!("{addresses}/{ip}");
    wait_until(wait, "the address is repaired", || async {
        call(&env, "GET", &path, None).await.0 == 200
    })
    .await
    .expect("repaired");
    let (_, address) = call(&env, "GET", &path, None).await;
    assert_eq!(
        address["spec"]["parentRef"],
        json!({"resource": "services", "namespace": "default", "name": "web"})
    );
    wait_until(wait, "the orphan is released", || async {
        call(&env, "GET", &format!("{addresses}/10.96.200.200"), None)
            .await
            .0
            == 404
    })
    .await
    .expect("released");
}
