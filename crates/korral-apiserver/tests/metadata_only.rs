//! Metadata-only reads (`Accept: application/json;as=PartialObjectMetadata[List];g=meta.k8s.io;
//! v=v1`), as kube's `get_metadata`/`list_metadata`/`metadata_watcher` and controller-runtime's
//! metadata-only caches send them: only the metadata crosses the wire.

mod common;

use std::collections::BTreeMap;

use common::TestEnv;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use serde_json::Value;

fn secret(name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("tier".to_string(), "db".to_string())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            "password".to_string(),
            ByteString(b"hunter2".to_vec()),
        )])),
        ..Secret::default()
    }
}

async fn raw_get(client: &kube::Client, path: &str, accept: &str) -> anyhow::Result<Value> {
    let request = http::Request::get(path)
        .header("accept", accept)
        .body(Vec::new())?;
    let response = client.send(request.map(kube::client::Body::from)).await?;
    anyhow::ensure!(response.status() == 200, "{}", response.status());
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    Ok(serde_json::from_slice(&bytes)?)
}

#[tokio::test]
async fn metadata_only_gets_lists_and_watches_carry_no_data() -> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let created = secrets
        .create(&PostParams::default(), &secret("db"))
        .await?;

    // Through kube's typed metadata calls.
    let one = secrets.get_metadata("db").await?;
    assert_eq!(one.metadata.name.as_deref(), Some("db"));
    assert_eq!(one.metadata.uid, created.metadata.uid);
    assert_eq!(
        one.metadata.labels.as_ref().and_then(|l| l.get("tier")),
        Some(&"db".to_string())
    );
    let listed = secrets.list_metadata(&ListParams::default()).await?;
    assert_eq!(listed.items.len(), 1);
    assert!(listed.metadata.resource_version.is_some());

    // On the wire: the metadata kinds, and no data.
    let get = raw_get(
        &client,
        "/api/v1/namespaces/default/secrets/db",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
    )
    .await?;
    assert_eq!(get["kind"], "PartialObjectMetadata", "{get}");
    assert_eq!(get["apiVersion"], "meta.k8s.io/v1", "{get}");
    assert!(get.get("data").is_none(), "{get}");
    let list = raw_get(
        &client,
        "/api/v1/namespaces/default/secrets",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
    )
    .await?;
    assert_eq!(list["kind"], "PartialObjectMetadataList", "{list}");
    assert!(list["items"][0].get("data").is_none(), "{list}");
    assert_eq!(list["items"][0]["metadata"]["name"], "db", "{list}");
    // A plain read still gets the whole object.
    let whole = raw_get(
        &client,
        "/api/v1/namespaces/default/secrets/db",
        "application/json",
    )
    .await?;
    assert_eq!(whole["kind"], "Secret");
    assert!(whole["data"]["password"].is_string(), "{whole}");

    // A metadata watch sends metadata-only events.
    let mut events = secrets
        .watch_metadata(&WatchParams::default(), "0")
        .await?
        .boxed();
    let mut changed = secret("db");
    changed.metadata.resource_version = created.metadata.resource_version.clone();
    changed.data = Some(BTreeMap::from([(
        "password".to_string(),
        ByteString(b"rotated".to_vec()),
    )]));
    secrets
        .replace("db", &PostParams::default(), &changed)
        .await?;
    let mut saw_modified = false;
    while let Some(event) =
        tokio::time::timeout(std::time::Duration::from_secs(10), events.try_next()).await??
    {
        if let WatchEvent::Modified(meta) = event {
            assert_eq!(meta.metadata.name.as_deref(), Some("db"));
            assert_eq!(
                meta.types.as_ref().map(|t| t.kind.as_str()),
                Some("PartialObjectMetadata")
            );
            saw_modified = true;
            break;
        }
    }
    assert!(saw_modified);
    Ok(())
}
