//! The cached client against the embedded API server: reads from the cache where the type is
//! cached (proved with the request counter), from the server otherwise, writes to the server,
//! read-your-writes, fallible mutate, metadata-only and unstructured objects. Every wait polls
//! with a timeout.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use korral_runtime::cache::{Cache, Scope};
use korral_runtime::client::{Client, RequestCounts};
use korral_runtime::helpers::write::{OperationResult, WriteError};
use korral_testenv::{TestEnv, wait_until};
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, PostParams};
use kube::core::PartialObjectMeta;

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(10);

fn meta(name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(NS.into()),
        labels: Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..ObjectMeta::default()
    }
}

fn configmap(name: &str, labels: &[(&str, &str)], value: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(name, labels),
        data: Some(BTreeMap::from([("k".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

/// A started env and a cached client on a fresh cache.
async fn setup() -> Result<(TestEnv, Client)> {
    let env = TestEnv::start().await?;
    let kube = env.client();
    let client = Client::new(kube.clone(), Cache::new(kube));
    Ok((env, client))
}

/// The difference of two counts.
fn delta(after: RequestCounts, before: RequestCounts) -> RequestCounts {
    RequestCounts {
        reads: after.reads - before.reads,
        writes: after.writes - before.writes,
        cache_reads: after.cache_reads - before.cache_reads,
    }
}

/// Waits until the cache holds `n` ConfigMaps in NS.
async fn wait_cached(client: &Client, n: usize) -> Result<()> {
    let cache = client.shared_cache().clone();
    wait_until(WAIT, format!("{n} configmaps cached"), || {
        let cache = cache.clone();
        async move {
            cache
                .list::<ConfigMap>()
                .namespace(NS)
                .items()
                .is_ok_and(|items| items.len() == n)
        }
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn cached_gets_and_lists_send_no_request() -> Result<()> {
    let (env, client) = setup().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let owner = api
        .create(&PostParams::default(), &configmap("owner", &[], "x"))
        .await?;
    let mut owned = configmap("a", &[("app", "a")], "1");
    owned.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "owner".into(),
        uid: owner.metadata.uid.clone().context("owner uid")?,
        ..OwnerReference::default()
    }]);
    api.create(&PostParams::default(), &owned).await?;
    api.create(
        &PostParams::default(),
        &configmap("b", &[("app", "b")], "2"),
    )
    .await?;

    client.cache_type::<ConfigMap>(Scope::namespace(NS))?;
    client.shared_cache().wait_for_sync().await?;
    wait_cached(&client, 3).await?;

    let before = client.request_counts();
    let a = client.get::<ConfigMap>(NS, "a").await?;
    ensure!(a.data.as_ref().and_then(|d| d.get("k")).map(String::as_str) == Some("1"));
    ensure!(client.get_opt::<ConfigMap>(NS, "missing").await?.is_none());
    let err = client
        .get::<ConfigMap>(NS, "missing")
        .await
        .err()
        .context("a missing object is an error for get")?;
    ensure!(err.is_not_found(), "{err}");
    let by_label = client
        .list::<ConfigMap>()
        .namespace(NS)
        .labels([("app", "b")])
        .await?;
    ensure!(by_label.len() == 1 && by_label[0].metadata.name.as_deref() == Some("b"));
    let by_field = client
        .list::<ConfigMap>()
        .namespace(NS)
        .fields("metadata.name=owner")
        .await?;
    ensure!(by_field.len() == 1 && by_field[0].metadata.name.as_deref() == Some("owner"));
    let by_owner = client
        .list::<ConfigMap>()
        .namespace(NS)
        .owned_by(&owner)
        .await?;
    ensure!(by_owner.len() == 1 && by_owner[0].metadata.name.as_deref() == Some("a"));
    let map = BTreeMap::from([("app".to_owned(), "a".to_owned())]);
    ensure!(
        client
            .list::<ConfigMap>()
            .namespace(NS)
            .labels(&map)
            .await?
            .len()
            == 1
    );
    let used = delta(client.request_counts(), before);
    ensure!(
        used == RequestCounts {
            reads: 0,
            writes: 0,
            cache_reads: 7
        },
        "{used:?}"
    );

    // Reading all namespaces needs an informer covering them all: this one covers NS only.
    let before = client.request_counts();
    let everywhere = client.list::<ConfigMap>().labels([("app", "a")]).await?;
    ensure!(everywhere.len() == 1);
    ensure!(delta(client.request_counts(), before).reads == 1);
    Ok(())
}

#[tokio::test]
async fn uncached_types_go_to_the_server_with_the_same_selectors() -> Result<()> {
    let (env, client) = setup().await?;
    let api: Api<Secret> = Api::namespaced(env.client(), NS);
    for (name, app) in [("s1", "x"), ("s2", "y")] {
        api.create(
            &PostParams::default(),
            &Secret {
                metadata: meta(name, &[("app", app)]),
                ..Secret::default()
            },
        )
        .await?;
    }
    let before = client.request_counts();
    let s1 = client.get::<Secret>(NS, "s1").await?;
    ensure!(s1.metadata.name.as_deref() == Some("s1"));
    let listed = client
        .list::<Secret>()
        .namespace(NS)
        .labels([("app", "y")])
        .await?;
    ensure!(listed.len() == 1 && listed[0].metadata.name.as_deref() == Some("s2"));
    let listed = client
        .list::<Secret>()
        .namespace(NS)
        .fields("metadata.name=s1")
        .await?;
    ensure!(listed.len() == 1 && listed[0].metadata.name.as_deref() == Some("s1"));
    let used = delta(client.request_counts(), before);
    ensure!(
        used == RequestCounts {
            reads: 3,
            writes: 0,
            cache_reads: 0
        },
        "{used:?}"
    );
    // Writes of an uncached type are not remembered: their reads go to the server anyway.
    client
        .create(&Secret {
            metadata: meta("s3", &[]),
            ..Secret::default()
        })
        .await?;
    ensure!(client.remembered_writes() == 0);
    ensure!(client.get::<Secret>(NS, "s3").await.is_ok());
    Ok(())
}

fn set(value: &'static str) -> impl FnMut(&mut ConfigMap) -> Result<(), WriteError> {
    move |cm: &mut ConfigMap| {
        cm.data
            .get_or_insert_with(BTreeMap::new)
            .insert("k".into(), value.into());
        Ok(())
    }
}

/// A client whose cache holds what it listed at first and never changes again (its watches
/// are stopped; the informers stay synced): the cache is as far behind as it can be.
async fn frozen_client(env: &TestEnv) -> Result<Client> {
    let kube = env.client();
    let client = Client::new(kube.clone(), Cache::new(kube));
    client.cache_type::<ConfigMap>(Scope::namespace(NS))?;
    client.shared_cache().wait_for_sync().await?;
    client.shared_cache().shutdown();
    Ok(client)
}

#[tokio::test]
async fn create_or_update_twice_in_a_row_writes_once_though_the_cache_is_behind() -> Result<()> {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    api.create(&PostParams::default(), &configmap("old", &[], "0"))
        .await?;
    let client = frozen_client(&env).await?;
    ensure!(
        client
            .shared_cache()
            .list::<ConfigMap>()
            .namespace(NS)
            .items()?
            .len()
            == 1
    );

    let before = client.request_counts();
    let (first, created) = client
        .create_or_update(configmap("ryw", &[], "0"), set("one"))
        .await?;
    // The cache never saw the create: the written object answers, nothing is written again.
    let (second, same) = client
        .create_or_update(configmap("ryw", &[], "0"), set("one"))
        .await?;
    ensure!(first == OperationResult::Created && second == OperationResult::Unchanged);
    ensure!(same.metadata.resource_version == created.metadata.resource_version);
    let (third, updated) = client
        .create_or_update(configmap("ryw", &[], "0"), set("two"))
        .await?;
    let (fourth, _) = client
        .create_or_update(configmap("ryw", &[], "0"), set("two"))
        .await?;
    ensure!(third == OperationResult::Updated && fourth == OperationResult::Unchanged);
    let read = client.get::<ConfigMap>(NS, "ryw").await?;
    ensure!(read.metadata.resource_version == updated.metadata.resource_version);

    // An object the cache holds at an older version: the update is not undone by a stale read.
    let (changed, _) = client
        .create_or_update(configmap("old", &[], "0"), set("new"))
        .await?;
    let (again, _) = client
        .create_or_update(configmap("old", &[], "0"), set("new"))
        .await?;
    ensure!(changed == OperationResult::Updated && again == OperationResult::Unchanged);
    // The cached copy carried no managedFields; replacing with it keeps the server's.
    let stored_old = api.get("old").await?;
    ensure!(
        stored_old
            .metadata
            .managed_fields
            .as_ref()
            .is_some_and(|m| !m.is_empty()),
        "managedFields kept: {:?}",
        stored_old.metadata.managed_fields
    );
    let listed = client.list::<ConfigMap>().namespace(NS).await?;
    ensure!(listed.len() == 2, "the list shows the created object too");
    ensure!(listed.iter().all(|c| {
        let value = c.data.as_ref().and_then(|d| d.get("k")).map(String::as_str);
        value == Some("two") || value == Some("new")
    }));
    let used = delta(client.request_counts(), before);
    ensure!(
        used == RequestCounts {
            reads: 0,
            writes: 3,
            cache_reads: 8
        },
        "one write per change, every read answered without the server: {used:?}"
    );

    // After a delete, the cache still holds the object: reads go to the server.
    client
        .delete::<ConfigMap>(NS, "old", &Default::default())
        .await?;
    ensure!(client.get_opt::<ConfigMap>(NS, "old").await?.is_none());

    let stored = api.get("ryw").await?;
    ensure!(stored.data.and_then(|d| d.get("k").cloned()).as_deref() == Some("two"));
    Ok(())
}

#[tokio::test]
async fn the_memory_of_writes_goes_once_the_cache_catches_up() -> Result<()> {
    let (_env, client) = setup().await?;
    client.cache_type::<ConfigMap>(Scope::namespace(NS))?;
    client.shared_cache().wait_for_sync().await?;
    let (_, created) = client
        .create_or_update(configmap("ryw", &[], "0"), set("one"))
        .await?;
    let cache = client.shared_cache().clone();
    let rv = created.metadata.resource_version.clone();
    wait_until(WAIT, "the cache to hold the create", || {
        let cache = cache.clone();
        let rv = rv.clone();
        async move {
            cache
                .list::<ConfigMap>()
                .namespace(NS)
                .items()
                .is_ok_and(|items| items.iter().any(|c| c.metadata.resource_version == rv))
        }
    })
    .await?;
    let before = client.request_counts();
    let read = client.get::<ConfigMap>(NS, "ryw").await?;
    ensure!(read.metadata.resource_version == rv);
    ensure!(client.remembered_writes() == 0);
    ensure!(delta(client.request_counts(), before).cache_reads == 1);

    // Writes that are never read again are forgotten too, once the cache has them.
    for i in 0..100 {
        client
            .create(&configmap(&format!("first-{i}"), &[], "x"))
            .await?;
    }
    wait_cached(&client, 101).await?;
    for i in 0..100 {
        client
            .create(&configmap(&format!("second-{i}"), &[], "x"))
            .await?;
    }
    let remembered = client.remembered_writes();
    ensure!(remembered <= 100, "{remembered} writes remembered");
    Ok(())
}

#[derive(Debug, thiserror::Error)]
enum MyError {
    #[error("refused by mutate")]
    Refused,
    #[error(transparent)]
    Write(#[from] WriteError),
}

#[tokio::test]
async fn a_failing_mutate_writes_nothing_and_returns_its_error() -> Result<()> {
    let (env, client) = setup().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let before = client.request_counts();
    let result = client
        .create_or_update(configmap("new", &[], "0"), |_: &mut ConfigMap| {
            Err::<(), _>(MyError::Refused)
        })
        .await;
    ensure!(matches!(result, Err(MyError::Refused)), "{result:?}");
    ensure!(api.get_opt("new").await?.is_none(), "nothing created");

    api.create(&PostParams::default(), &configmap("old", &[], "0"))
        .await?;
    let result = client
        .create_or_patch(configmap("old", &[], "0"), |cm: &mut ConfigMap| {
            cm.data = None; // changed, then refused: nothing is written
            Err::<(), _>(MyError::Refused)
        })
        .await;
    ensure!(matches!(result, Err(MyError::Refused)), "{result:?}");
    let stored = api.get("old").await?;
    ensure!(
        stored
            .data
            .is_some_and(|d| d.get("k").map(String::as_str) == Some("0"))
    );
    ensure!(delta(client.request_counts(), before).writes == 0);
    Ok(())
}

#[tokio::test]
async fn secrets_cached_by_metadata_only() -> Result<()> {
    let (env, client) = setup().await?;
    let api: Api<Secret> = Api::namespaced(env.client(), NS);
    api.create(
        &PostParams::default(),
        &Secret {
            metadata: meta("big", &[("tier", "db")]),
            data: Some(BTreeMap::from([(
                "payload".to_owned(),
                ByteString(vec![7; 4096]),
            )])),
            ..Secret::default()
        },
    )
    .await?;
    let informer = client.cache_metadata::<Secret>(Scope::namespace(NS))?;
    // A full informer of the same kind is separate from the metadata-only one.
    ensure!(client.shared_cache().started_informers() == 1);
    informer.wait_synced().await?;
    let inf = informer.clone();
    wait_until(WAIT, "the secret's metadata cached", move || {
        let inf = inf.clone();
        async move { inf.len() == 1 }
    })
    .await?;
    let before = client.request_counts();
    let listed = client
        .list_metadata::<Secret>()
        .namespace(NS)
        .labels([("tier", "db")])
        .await?;
    ensure!(listed.len() == 1 && listed[0].metadata.name.as_deref() == Some("big"));
    let one = client.get::<PartialObjectMeta<Secret>>(NS, "big").await?;
    ensure!(one.metadata.uid.is_some());
    let used = delta(client.request_counts(), before);
    ensure!(
        used == RequestCounts {
            reads: 0,
            writes: 0,
            cache_reads: 2
        },
        "{used:?}"
    );
    // The full Secret is not cached: it comes from the server.
    let full = client.get::<Secret>(NS, "big").await?;
    ensure!(
        full.data
            .as_ref()
            .is_some_and(|d| d.contains_key("payload"))
    );
    ensure!(delta(client.request_counts(), before).reads == 1);
    Ok(())
}

#[tokio::test]
async fn dynamic_objects_cached_and_uncached() -> Result<()> {
    let (env, client) = setup().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    api.create(
        &PostParams::default(),
        &configmap("dyn", &[("app", "d")], "v"),
    )
    .await?;
    let configmaps = ApiResource::erase::<ConfigMap>(&());
    let informer = client.cache_dynamic(&configmaps, Scope::namespace(NS))?;
    informer.wait_synced().await?;
    let inf = informer.clone();
    wait_until(WAIT, "the dynamic configmap cached", move || {
        let inf = inf.clone();
        async move { inf.len() == 1 }
    })
    .await?;
    let before = client.request_counts();
    let obj: Arc<DynamicObject> = client
        .get_dynamic_opt(&configmaps, NS, "dyn")
        .await?
        .context("cached dynamic object")?;
    ensure!(obj.data["data"]["k"] == "v");
    let listed = client
        .list_dynamic(&configmaps)
        .namespace(NS)
        .labels([("app", "d")])
        .await?;
    ensure!(listed.len() == 1);
    ensure!(delta(client.request_counts(), before).cache_reads == 2);
    ensure!(delta(client.request_counts(), before).reads == 0);

    // Unstructured writes go to the server, and the next read sees them.
    let mut changed = (*obj).clone();
    changed.data["data"]["k"] = "w".into();
    let (result, _) = client
        .create_or_update_with(&configmaps, changed.clone(), |o: &mut DynamicObject| {
            o.data["data"]["k"] = "w".into();
            Ok::<(), WriteError>(())
        })
        .await?;
    ensure!(result == OperationResult::Updated);
    let again = client
        .get_dynamic_opt(&configmaps, NS, "dyn")
        .await?
        .context("dynamic object")?;
    ensure!(again.data["data"]["k"] == "w");

    // An uncached kind is read from the server.
    let secrets = ApiResource::erase::<Secret>(&());
    let before = client.request_counts();
    ensure!(
        client
            .get_dynamic_opt(&secrets, NS, "none")
            .await?
            .is_none()
    );
    ensure!(delta(client.request_counts(), before).reads == 1);
    Ok(())
}

#[tokio::test]
async fn a_conflict_on_a_stale_cached_copy_rereads_from_the_server() -> Result<()> {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    api.create(&PostParams::default(), &configmap("c", &[], "0"))
        .await?;
    let client = frozen_client(&env).await?;
    // Another writer changes it: the cached copy is now stale and unknown to the client.
    let mut theirs = api.get("c").await?;
    theirs
        .data
        .get_or_insert_with(BTreeMap::new)
        .insert("other".into(), "x".into());
    api.replace("c", &PostParams::default(), &theirs).await?;

    let before = client.request_counts();
    let (result, stored) = client
        .create_or_update(configmap("c", &[], "0"), set("mine"))
        .await?;
    ensure!(result == OperationResult::Updated);
    let data = stored.data.unwrap_or_default();
    ensure!(data.get("k").map(String::as_str) == Some("mine"));
    ensure!(
        data.get("other").map(String::as_str) == Some("x"),
        "the other writer's change is kept"
    );
    let used = delta(client.request_counts(), before);
    ensure!(
        used.writes == 2 && used.reads == 1,
        "a 409, one read from the server, the write again: {used:?}"
    );

    // create_or_patch sends only the difference, and nothing when there is none.
    let before = client.request_counts();
    let (patched, _) = client
        .create_or_patch(configmap("c", &[], "0"), set("patched"))
        .await?;
    let (unchanged, _) = client
        .create_or_patch(configmap("c", &[], "0"), set("patched"))
        .await?;
    ensure!(patched == OperationResult::Updated && unchanged == OperationResult::Unchanged);
    ensure!(delta(client.request_counts(), before).writes == 1);
    let stored = api.get("c").await?;
    // The cached copies carry no managedFields; writing them back keeps the server's.
    ensure!(
        stored
            .metadata
            .managed_fields
            .as_ref()
            .is_some_and(|m| !m.is_empty()),
        "managedFields kept: {:?}",
        stored.metadata.managed_fields
    );
    let stored = stored.data.unwrap_or_default();
    ensure!(stored.get("k").map(String::as_str) == Some("patched"));
    ensure!(stored.get("other").map(String::as_str) == Some("x"));
    Ok(())
}

#[tokio::test]
async fn requests_are_served_as_metrics() -> Result<()> {
    let env = TestEnv::start().await?;
    let registry = korral_runtime::metrics::Registry::new();
    let kube = env.client();
    let client = Client::with_metrics(kube.clone(), Cache::new(kube.clone()), &registry)?;
    ensure!(
        Client::with_metrics(kube.clone(), Cache::new(kube), &registry).is_err(),
        "one cached client per registry"
    );
    client.cache_type::<ConfigMap>(Scope::namespace(NS))?;
    client.shared_cache().wait_for_sync().await?;
    client.get_opt::<Secret>(NS, "none").await?;
    client.get_opt::<ConfigMap>(NS, "none").await?;
    client.create(&configmap("m", &[], "0")).await?;
    let text = registry.encode_text();
    for line in [
        r#"korral_client_requests_total{verb="get"} 1"#,
        r#"korral_client_requests_total{verb="create"} 1"#,
        r#"korral_client_requests_total{verb="list"} 0"#,
        r#"korral_client_cache_reads_total{verb="get"} 1"#,
    ] {
        ensure!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
    }
    Ok(())
}
