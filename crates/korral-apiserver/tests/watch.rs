//! Watches: replay from a resourceVersion, 410 past the history, bookmarks, timeouts,
//! sendInitialEvents, selectors.

mod common;

use std::time::Duration;

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use korral_apiserver::ServerConfig;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("cm")
}

async fn next_event(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
) -> WatchEvent<ConfigMap> {
    tokio::time::timeout(WAIT, stream.try_next())
        .await
        .expect("event in time")
        .expect("stream ok")
        .expect("stream open")
}

fn describe(ev: &WatchEvent<ConfigMap>) -> String {
    match ev {
        WatchEvent::Added(o) => format!("ADDED {}", o.metadata.name.clone().unwrap_or_default()),
        WatchEvent::Modified(o) => {
            format!("MODIFIED {}", o.metadata.name.clone().unwrap_or_default())
        }
        WatchEvent::Deleted(o) => {
            format!("DELETED {}", o.metadata.name.clone().unwrap_or_default())
        }
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(e) => format!("ERROR {}", e.code),
    }
}

#[tokio::test]
async fn watch_replays_from_a_resource_version_then_follows() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let a = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("a");
    let rv = a.metadata.resource_version.clone().expect("rv");
    api.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .expect("b");
    api.delete("a", &Default::default())
        .await
        .expect("delete a");
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();
    assert_eq!(describe(&next_event(&mut stream).await), "ADDED b");
    assert_eq!(describe(&next_event(&mut stream).await), "DELETED a");
    api.create(&PostParams::default(), &cm("c", json!({})))
        .await
        .expect("c");
    assert_eq!(describe(&next_event(&mut stream).await), "ADDED c");
}

#[tokio::test]
async fn watch_without_version_starts_with_current_state_and_filters_by_labels() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("x", json!({"app": "yes"})))
        .await
        .expect("x");
    api.create(&PostParams::default(), &cm("y", json!({"app": "no"})))
        .await
        .expect("y");
    let mut stream = api
        .watch(&WatchParams::default().labels("app=yes"), "0")
        .await
        .expect("watch")
        .boxed();
    assert_eq!(describe(&next_event(&mut stream).await), "ADDED x");
    // y starts matching: ADDED; x stops matching: DELETED.
    api.patch(
        "y",
        &Default::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"labels": {"app": "yes"}}})),
    )
    .await
    .expect("patch");
    assert_eq!(describe(&next_event(&mut stream).await), "ADDED y");
    api.patch(
        "x",
        &Default::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"labels": {"app": "no"}}})),
    )
    .await
    .expect("patch");
    assert_eq!(describe(&next_event(&mut stream).await), "DELETED x");
}

#[tokio::test]
async fn watch_older_than_history_is_gone() {
    let config = ServerConfig {
        history: 5,
        ..ServerConfig::in_memory()
    };
    let env = TestEnv::builder()
        .server_config(config)
        .start()
        .await
        .expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let first = api
        .create(&PostParams::default(), &cm("first", json!({})))
        .await
        .expect("create");
    for i in 0..20 {
        api.create(&PostParams::default(), &cm(&format!("n{i}"), json!({})))
            .await
            .expect("create");
    }
    let rv = first.metadata.resource_version.expect("rv");
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();
    match next_event(&mut stream).await {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected 410, got {}", describe(&other)),
    }
}

#[tokio::test]
async fn bookmarks_and_timeouts() {
    let config = ServerConfig {
        bookmark_interval: Duration::from_millis(50),
        ..ServerConfig::in_memory()
    };
    let env = TestEnv::builder()
        .server_config(config)
        .start()
        .await
        .expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let created = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("create");
    let rv = created.metadata.resource_version.expect("rv");
    let mut stream = api
        .watch(&WatchParams::default().timeout(2), &rv)
        .await
        .expect("watch")
        .boxed();
    match next_event(&mut stream).await {
        WatchEvent::Bookmark(b) => assert_eq!(b.metadata.resource_version, rv),
        other => panic!("expected a bookmark, got {}", describe(&other)),
    }
    // timeoutSeconds ends the stream.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(_)) = stream.next().await {}
    })
    .await;
    assert!(ended.is_ok(), "watch ended by timeoutSeconds");
}

#[tokio::test]
async fn send_initial_events_ends_with_annotated_bookmark() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .expect("create");
    api.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .expect("create");
    let mut stream = api
        .watch(&WatchParams::streaming_lists(), "")
        .await
        .expect("watch")
        .boxed();
    assert_eq!(describe(&next_event(&mut stream).await), "ADDED a");
    assert_eq!(describe(&next_event(&mut stream).await), "ADDED b");
    match next_event(&mut stream).await {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            );
        }
        other => panic!(
            "expected the initial-events-end bookmark, got {}",
            describe(&other)
        ),
    }
    api.create(&PostParams::default(), &cm("c", json!({})))
        .await
        .expect("create");
    assert_eq!(describe(&next_event(&mut stream).await), "ADDED c");
}
