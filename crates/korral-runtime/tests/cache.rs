//! Shared caches against the embedded API server. Every wait polls with a timeout.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, OwnerReference};
use korral_runtime::cache::{Cache, CacheEvent, EventKind, Scope, TypeOptions};
use korral_runtime::reconcile::ObjectRef;
use korral_testenv::{TestEnv, wait_until};
use kube::Client;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::core::Selector;
use tokio::sync::broadcast;

const WAIT: Duration = Duration::from_secs(10);

fn configmap(ns: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), "v1".to_owned())])),
        ..ConfigMap::default()
    }
}

async fn create_namespace(client: &Client, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(e).context("creating namespace"),
    }
}

async fn create(client: &Client, cm: &ConfigMap) -> Result<ConfigMap> {
    let ns = cm.metadata.namespace.as_deref().unwrap_or("default");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    api.create(&PostParams::default(), cm)
        .await
        .context("creating configmap")
}

/// Receives events until one matches `pred`, with a timeout.
async fn next_event<F>(
    rx: &mut broadcast::Receiver<CacheEvent<ConfigMap>>,
    mut pred: F,
) -> Result<CacheEvent<ConfigMap>>
where
    F: FnMut(&CacheEvent<ConfigMap>) -> bool,
{
    tokio::time::timeout(WAIT, async {
        loop {
            let event = rx.recv().await.context("receiving an event")?;
            if pred(&event) {
                return Ok(event);
            }
        }
    })
    .await
    .map_err(|_| anyhow!("timed out waiting for an event"))?
}

fn name_of(cm: &ConfigMap) -> &str {
    cm.metadata.name.as_deref().unwrap_or_default()
}

#[tokio::test]
async fn informers_of_the_same_type_and_scope_share_one_watch() -> Result<()> {
    let env = TestEnv::start().await?;
    let cache = Cache::new(env.client());
    let a = cache.informer::<ConfigMap>(Scope::All)?;
    let b = cache.informer::<ConfigMap>(Scope::All)?;
    assert_eq!(cache.started_informers(), 1);
    assert_eq!(cache.started_watches(), 1);

    create(&env.client(), &configmap("default", "shared", &[])).await?;
    let key = ObjectRef::namespaced("default", "shared");
    wait_until(WAIT, "object in the cache", || async {
        a.get(&key).is_some()
    })
    .await?;
    // Same store behind both handles.
    assert!(b.get(&key).is_some());

    // Another scope is another informer.
    let _c = cache.informer::<ConfigMap>(Scope::namespace("default"))?;
    assert_eq!(cache.started_informers(), 2);
    assert_eq!(cache.started_watches(), 2);
    tokio::time::timeout(WAIT, cache.wait_for_sync()).await??;
    assert!(cache.is_synced());
    cache.shutdown();
    Ok(())
}

#[tokio::test]
async fn wait_synced_returns_after_the_initial_list() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    for i in 0..5 {
        create(&client, &configmap("default", &format!("pre-{i}"), &[])).await?;
    }
    let cache = Cache::new(client);
    let informer = cache.informer::<ConfigMap>(Scope::All)?;
    tokio::time::timeout(WAIT, informer.wait_synced()).await??;
    assert!(informer.is_synced());
    // The whole initial list is in the store once synced.
    let names: Vec<String> = informer
        .list()
        .iter()
        .filter(|c| c.metadata.namespace.as_deref() == Some("default"))
        .map(|c| name_of(c).to_owned())
        .filter(|n| n.starts_with("pre-"))
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    cache.shutdown();
    Ok(())
}

#[tokio::test]
async fn reads_get_list_by_label_and_owner() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    let informer = cache.informer::<ConfigMap>(Scope::namespace("default"))?;
    tokio::time::timeout(WAIT, informer.wait_synced()).await??;

    let owner = create(&client, &configmap("default", "owner", &[("app", "x")])).await?;
    let owner_uid = owner.metadata.uid.clone().context("owner uid")?;
    let mut child = configmap("default", "child", &[("app", "y")]);
    child.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "owner".into(),
        uid: owner_uid.clone(),
        controller: Some(true),
        ..OwnerReference::default()
    }]);
    create(&client, &child).await?;
    create(&client, &configmap("default", "other", &[("app", "x")])).await?;

    wait_until(WAIT, "three objects", || async {
        informer
            .list()
            .iter()
            .filter(|c| ["owner", "child", "other"].contains(&name_of(c)))
            .count()
            == 3
    })
    .await?;

    let got = informer
        .get(&ObjectRef::namespaced("default", "child"))
        .context("child cached")?;
    assert_eq!(name_of(&got), "child");
    assert!(
        informer
            .get(&ObjectRef::namespaced("default", "nope"))
            .is_none()
    );

    let selector: Selector = [("app", "x")].into_iter().collect();
    let mut by_label: Vec<String> = informer
        .list_by_label(&selector)
        .iter()
        .map(|c| name_of(c).to_owned())
        .collect();
    by_label.sort();
    assert_eq!(by_label, ["other", "owner"]);

    let owned = informer.list_owned_by(&owner_uid);
    assert_eq!(owned.len(), 1);
    assert_eq!(name_of(&owned[0]), "child");
    assert!(informer.list_owned_by("no-such-uid").is_empty());

    // The owner index follows deletes.
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.delete("child", &DeleteParams::default()).await?;
    wait_until(WAIT, "child gone from the owner index", || async {
        informer.list_owned_by(&owner_uid).is_empty()
    })
    .await?;
    cache.shutdown();
    Ok(())
}

#[tokio::test]
async fn updates_and_deletes_are_emitted_with_previous_objects() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    let informer = cache.informer::<ConfigMap>(Scope::All)?;
    let mut events = informer.subscribe();
    tokio::time::timeout(WAIT, informer.wait_synced()).await??;

    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    create(&env.client(), &configmap("default", "ev", &[])).await?;
    let added = next_event(&mut events, |e| name_of(&e.object) == "ev").await?;
    assert_eq!(added.kind, EventKind::Added);
    assert!(added.previous.is_none());

    let mut current = api.get("ev").await?;
    current.data = Some(BTreeMap::from([("k".to_owned(), "v2".to_owned())]));
    api.replace("ev", &PostParams::default(), &current).await?;
    let modified = next_event(&mut events, |e| name_of(&e.object) == "ev").await?;
    assert_eq!(modified.kind, EventKind::Modified);
    let previous = modified.previous.context("previous object")?;
    let value = |cm: &ConfigMap| cm.data.as_ref().and_then(|d| d.get("k")).cloned();
    assert_eq!(value(&previous).as_deref(), Some("v1"));
    assert_eq!(value(&modified.object).as_deref(), Some("v2"));
    let key = ObjectRef::namespaced("default", "ev");
    wait_until(WAIT, "update in the cache", || async {
        informer.get(&key).and_then(|c| value(&c)).as_deref() == Some("v2")
    })
    .await?;

    api.delete("ev", &DeleteParams::default()).await?;
    let deleted = next_event(&mut events, |e| name_of(&e.object) == "ev").await?;
    assert_eq!(deleted.kind, EventKind::Deleted);
    let last: Arc<ConfigMap> = deleted.previous.context("last cached object")?;
    assert_eq!(value(&last).as_deref(), Some("v2"));
    assert!(informer.get(&key).is_none());
    cache.shutdown();
    Ok(())
}

#[tokio::test]
async fn default_transform_drops_managed_fields() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let mut cm = configmap("default", "managed", &[]);
    cm.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
        manager: Some("test".into()),
        operation: Some("Update".into()),
        api_version: Some("v1".into()),
        ..ManagedFieldsEntry::default()
    }]);
    create(&client, &cm).await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let server_has_them = api
        .get("managed")
        .await?
        .metadata
        .managed_fields
        .is_some_and(|m| !m.is_empty());

    // The embedded server keeps the managedFields a client sends, so the drop is observable.
    ensure!(server_has_them, "the server did not keep managedFields");

    let cache = Cache::new(client);
    let informer = cache.informer::<ConfigMap>(Scope::All)?;
    tokio::time::timeout(WAIT, informer.wait_synced()).await??;
    let cached = informer
        .get(&ObjectRef::namespaced("default", "managed"))
        .context("cached")?;
    assert!(cached.metadata.managed_fields.is_none());
    cache.shutdown();
    Ok(())
}

#[tokio::test]
async fn custom_transform_applies_before_storing() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let mut cm = configmap("default", "annotated", &[]);
    cm.metadata.annotations = Some(BTreeMap::from([("a".to_owned(), "b".to_owned())]));
    create(&client, &cm).await?;

    let cache = Cache::new(client);
    cache.configure::<ConfigMap>(TypeOptions::default().with_transform(|cm: &mut ConfigMap| {
        cm.metadata.annotations = None;
    }))?;
    let informer = cache.informer::<ConfigMap>(Scope::All)?;
    tokio::time::timeout(WAIT, informer.wait_synced()).await??;
    let cached = informer
        .get(&ObjectRef::namespaced("default", "annotated"))
        .context("cached")?;
    assert!(cached.metadata.annotations.is_none());
    // Too late to configure once started.
    assert!(
        cache
            .configure::<ConfigMap>(TypeOptions::default())
            .is_err()
    );
    cache.shutdown();
    Ok(())
}

#[tokio::test]
async fn label_selector_limits_the_watch() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    cache.configure::<ConfigMap>(TypeOptions::default().with_label_selector("team=a"))?;
    let informer = cache.informer::<ConfigMap>(Scope::All)?;
    tokio::time::timeout(WAIT, informer.wait_synced()).await??;
    create(&client, &configmap("default", "b", &[("team", "b")])).await?;
    create(&client, &configmap("default", "a", &[("team", "a")])).await?;
    let a = ObjectRef::namespaced("default", "a");
    wait_until(WAIT, "a cached", || async { informer.get(&a).is_some() }).await?;
    assert!(
        informer
            .get(&ObjectRef::namespaced("default", "b"))
            .is_none()
    );
    cache.shutdown();
    Ok(())
}

#[tokio::test]
async fn namespace_scoped_informers_see_only_their_namespaces() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    for ns in ["ns-a", "ns-b", "ns-c"] {
        create_namespace(&client, ns).await?;
    }
    let cache = Cache::new(client.clone());
    let only_a = cache.informer::<ConfigMap>(Scope::namespace("ns-a"))?;
    let a_and_b = cache.informer::<ConfigMap>(Scope::namespaces(["ns-a", "ns-b"]))?;
    assert_eq!(cache.started_watches(), 3);
    tokio::time::timeout(WAIT, cache.wait_for_sync()).await??;

    for ns in ["ns-a", "ns-b", "ns-c"] {
        create(&client, &configmap(ns, "cm", &[])).await?;
    }
    // A marker created last in ns-c: once the all-namespaces view has it, the others have
    // seen everything before it too.
    let all = cache.informer::<ConfigMap>(Scope::All)?;
    tokio::time::timeout(WAIT, all.wait_synced()).await??;
    wait_until(WAIT, "ns-a and ns-b cached", || async {
        only_a.get(&ObjectRef::namespaced("ns-a", "cm")).is_some()
            && a_and_b.get(&ObjectRef::namespaced("ns-b", "cm")).is_some()
            && a_and_b.get(&ObjectRef::namespaced("ns-a", "cm")).is_some()
    })
    .await?;
    wait_until(WAIT, "ns-c in the all view", || async {
        all.get(&ObjectRef::namespaced("ns-c", "cm")).is_some()
    })
    .await?;
    ensure!(
        only_a
            .list()
            .iter()
            .all(|c| c.metadata.namespace.as_deref() == Some("ns-a")),
        "namespace informer saw another namespace"
    );
    ensure!(
        a_and_b
            .list()
            .iter()
            .all(|c| matches!(c.metadata.namespace.as_deref(), Some("ns-a" | "ns-b"))),
        "namespace-set informer saw another namespace"
    );
    assert!(a_and_b.get(&ObjectRef::namespaced("ns-c", "cm")).is_none());
    cache.shutdown();
    Ok(())
}

#[tokio::test]
async fn shutdown_stops_waits() -> Result<()> {
    let env = TestEnv::start().await?;
    let (tx, mut rx) = tokio::sync::watch::channel(false);
    let cache = Cache::with_shutdown(env.client(), async move {
        let _ = rx.wait_for(|stop| *stop).await;
    })?;
    tx.send_replace(true);
    wait_until(WAIT, "cache shut down", || async { cache.is_shut_down() }).await?;
    // An informer started after shutdown never syncs: waiting for it fails instead of hanging.
    let informer = cache.informer::<ConfigMap>(Scope::All)?;
    let res = tokio::time::timeout(WAIT, informer.wait_synced()).await?;
    assert!(res.is_err());
    Ok(())
}

#[tokio::test]
async fn cluster_scoped_informer_and_event_stream() -> Result<()> {
    use futures::StreamExt;
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    let namespaces = cache.cluster_informer::<Namespace>()?;
    let mut stream = std::pin::pin!(namespaces.event_stream());
    tokio::time::timeout(WAIT, cache.wait_for_sync()).await??;
    // The initial list arrives as Added events (the subscription predates the sync).
    let first = tokio::time::timeout(WAIT, stream.next())
        .await?
        .context("stream ended")?;
    assert_eq!(first.kind, EventKind::Added);
    create_namespace(&client, "fresh").await?;
    wait_until(WAIT, "namespace cached", || async {
        namespaces
            .get(&ObjectRef::cluster_scoped("fresh"))
            .is_some()
    })
    .await?;
    cache.shutdown();
    Ok(())
}

/// A custom resource whose CRD the recovery test installs only after its informer started.
#[derive(
    kube::CustomResource,
    serde::Deserialize,
    serde::Serialize,
    Clone,
    Debug,
    Default,
    schemars::JsonSchema,
)]
#[kube(
    group = "cache.korral.dev",
    version = "v1",
    kind = "Widget",
    namespaced
)]
struct WidgetSpec {
    size: i32,
}

#[tokio::test]
async fn informer_recovers_when_its_resource_appears_later() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    // The list fails (no such resource yet); the watcher retries with backoff.
    let widgets = cache.informer::<Widget>(Scope::namespace("default"))?;
    assert!(!widgets.is_synced());
    env.install_crd_for::<Widget>().await?;
    tokio::time::timeout(Duration::from_secs(30), widgets.wait_synced()).await??;

    let api: Api<Widget> = Api::namespaced(client, "default");
    api.create(
        &PostParams::default(),
        &Widget::new("w", WidgetSpec { size: 3 }),
    )
    .await?;
    wait_until(WAIT, "widget cached", || async {
        widgets
            .get(&ObjectRef::namespaced("default", "w"))
            .is_some_and(|w| w.spec.size == 3)
    })
    .await?;
    cache.shutdown();
    Ok(())
}
