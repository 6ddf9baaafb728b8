//! The controller builder against the embedded API server. Every wait polls with a timeout.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use korral_runtime::cache::{Cache, CacheEvent, Scope};
use korral_runtime::controller::{Channel, Controller, Custom, GenerationChanged, MapFn};
use korral_runtime::metrics::Registry;
use korral_runtime::reconcile::{Action, ObjectRef, ReconcileResult};
use korral_testenv::{TestEnv, wait_until};
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::{mpsc, watch};

const WAIT: Duration = Duration::from_secs(10);

fn configmap(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), "v1".to_owned())])),
        ..ConfigMap::default()
    }
}

async fn create_configmap(client: &Client, name: &str) -> Result<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &configmap(name))
        .await
        .context("creating configmap")
}

/// Counts reconciles per object name.
#[derive(Clone, Default)]
struct Counts(Arc<Mutex<HashMap<String, usize>>>);

impl Counts {
    fn hit(&self, name: &str) {
        *self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.to_owned())
            .or_default() += 1;
    }

    fn get(&self, name: &str) -> usize {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .copied()
            .unwrap_or_default()
    }
}

fn name_of<K: kube::Resource>(obj: &K) -> String {
    obj.meta().name.clone().unwrap_or_default()
}

async fn count_reconcile<K: kube::Resource>(obj: Arc<K>, counts: Arc<Counts>) -> ReconcileResult {
    counts.hit(&name_of(obj.as_ref()));
    Ok(Action::done())
}

/// A shutdown signal for a controller run.
fn stopper() -> (
    watch::Sender<bool>,
    impl Future<Output = ()> + Send + 'static,
) {
    let (tx, mut rx) = watch::channel(false);
    (tx, async move {
        let _ = rx.wait_for(|stop| *stop).await;
    })
}

#[tokio::test]
async fn owned_object_change_triggers_owner_reconcile() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    let counts = Arc::new(Counts::default());
    let (stop, shutdown) = stopper();
    let controller = Controller::new(cache.clone(), "owner-test")
        .for_::<ConfigMap>(Scope::namespace("default"))
        .owns::<Secret>()
        .metrics_registry(Registry::new());
    let run = tokio::spawn(controller.run(count_reconcile, Arc::clone(&counts), shutdown));

    let parent = create_configmap(&client, "parent").await?;
    wait_until(WAIT, "parent reconciled", || async {
        counts.get("parent") >= 1
    })
    .await?;

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("child".into()),
            namespace: Some("default".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "parent".into(),
                uid: parent.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        },
        string_data: Some(BTreeMap::from([("a".to_owned(), "1".to_owned())])),
        ..Secret::default()
    };
    secrets.create(&PostParams::default(), &secret).await?;
    // Let the creation's reconcile settle, then change the child.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = counts.get("parent");
    secrets
        .patch(
            "child",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"a": "2"}})),
        )
        .await?;
    wait_until(WAIT, "owner reconciled after child change", || async {
        counts.get("parent") > before
    })
    .await?;
    ensure!(
        counts.get("child") == 0,
        "the child is not a primary object"
    );

    stop.send_replace(true);
    tokio::time::timeout(WAIT, run).await???;
    Ok(())
}

#[tokio::test]
async fn channel_source_feeds_reconciles_through_a_map_function() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    let counts = Arc::new(Counts::default());
    let (tx, rx) = mpsc::channel::<String>(16);
    let (stop, shutdown) = stopper();
    let controller = Controller::new(cache.clone(), "channel-test")
        .for_::<ConfigMap>(Scope::namespace("default"))
        // Cache events never enqueue: only the channel does.
        .for_predicate(Custom(|_: &CacheEvent<ConfigMap>| false))
        .watches(
            Channel::new(rx),
            MapFn(|name: &String| vec![ObjectRef::namespaced("default", name.clone())]),
        )
        .metrics_registry(Registry::new());
    let run = tokio::spawn(controller.run(count_reconcile, Arc::clone(&counts), shutdown));

    create_configmap(&client, "external").await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    ensure!(counts.get("external") == 0, "filtered by the predicate");

    let informer = cache.informer::<ConfigMap>(Scope::namespace("default"))?;
    let key = ObjectRef::namespaced("default", "external");
    wait_until(WAIT, "object cached", || async {
        informer.get(&key).is_some()
    })
    .await?;
    tx.send("external".into()).await?;
    tx.send("missing".into()).await?;
    wait_until(WAIT, "channel-triggered reconcile", || async {
        counts.get("external") == 1
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    ensure!(
        counts.get("missing") == 0,
        "a key without object is skipped"
    );

    stop.send_replace(true);
    tokio::time::timeout(WAIT, run).await???;
    Ok(())
}

#[tokio::test]
async fn watches_kind_maps_events_of_another_type_to_primary_keys() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    let counts = Arc::new(Counts::default());
    let (stop, shutdown) = stopper();
    // A Secret labelled `config=<name>` reconciles the ConfigMap `<name>`.
    let controller = Controller::new(cache.clone(), "watches-kind-test")
        .for_::<ConfigMap>(Scope::namespace("default"))
        .watches_kind::<Secret, _>(MapFn(|secret: &Secret| {
            secret
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("config"))
                .map(|name| vec![ObjectRef::namespaced("default", name.clone())])
                .unwrap_or_default()
        }))
        .metrics_registry(Registry::new());
    let run = tokio::spawn(controller.run(count_reconcile, Arc::clone(&counts), shutdown));

    create_configmap(&client, "target").await?;
    wait_until(WAIT, "the first reconcile", || async {
        counts.get("target") == 1
    })
    .await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "creds", "labels": {"config": "target"}}
    }))?;
    secrets.create(&PostParams::default(), &secret).await?;
    wait_until(WAIT, "a reconcile from the Secret", || async {
        counts.get("target") >= 2
    })
    .await?;
    ensure!(
        counts.get("creds") == 0,
        "the Secret is not a primary object"
    );

    stop.send_replace(true);
    tokio::time::timeout(WAIT, run).await???;
    Ok(())
}

fn deployment(name: &str) -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), name.to_owned())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some("busybox".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    }
}

#[tokio::test]
async fn generation_changed_filters_metadata_only_updates() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    let counts = Arc::new(Counts::default());
    let (stop, shutdown) = stopper();
    let controller = Controller::new(cache.clone(), "generation-test")
        .for_::<Deployment>(Scope::namespace("default"))
        .for_predicate(GenerationChanged)
        .metrics_registry(Registry::new());
    let run = tokio::spawn(controller.run(count_reconcile, Arc::clone(&counts), shutdown));

    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &deployment("web"))
        .await?;
    wait_until(WAIT, "created deployment reconciled", || async {
        counts.get("web") == 1
    })
    .await?;

    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    ensure!(
        counts.get("web") == 1,
        "a metadata-only update is filtered (got {} reconciles)",
        counts.get("web")
    );

    api.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await?;
    wait_until(WAIT, "spec change reconciled", || async {
        counts.get("web") == 2
    })
    .await?;

    stop.send_replace(true);
    tokio::time::timeout(WAIT, run).await???;
    Ok(())
}

/// Tracks reconciles in flight: overall and per key.
#[derive(Default)]
struct Load {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    keys: Mutex<HashSet<String>>,
    overlaps: AtomicUsize,
    total: AtomicUsize,
    per_key: Counts,
}

async fn loaded_reconcile(cm: Arc<ConfigMap>, load: Arc<Load>) -> ReconcileResult {
    let name = name_of(cm.as_ref());
    let now = load.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    load.max_in_flight.fetch_max(now, Ordering::SeqCst);
    if !load
        .keys
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(name.clone())
    {
        load.overlaps.fetch_add(1, Ordering::SeqCst);
    }
    tokio::time::sleep(Duration::from_millis(30)).await;
    load.keys
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .remove(&name);
    load.in_flight.fetch_sub(1, Ordering::SeqCst);
    load.total.fetch_add(1, Ordering::SeqCst);
    load.per_key.hit(&name);
    // Each key asks to run again a few times, racing with the updates below.
    if load.per_key.get(&name) < 4 {
        Ok(Action::requeue_now())
    } else {
        Ok(Action::done())
    }
}

#[tokio::test]
async fn concurrency_limit_holds_and_keys_never_overlap() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cache = Cache::new(client.clone());
    let registry = Registry::new();
    let load = Arc::new(Load::default());
    let (stop, shutdown) = stopper();
    let controller = Controller::new(cache.clone(), "load-test")
        .for_::<ConfigMap>(Scope::namespace("default"))
        .max_concurrent_reconciles(3)
        .metrics_registry(registry.clone());
    let run = tokio::spawn(controller.run(loaded_reconcile, Arc::clone(&load), shutdown));

    let names: Vec<String> = (0..12).map(|i| format!("load-{i}")).collect();
    for name in &names {
        create_configmap(&client, name).await?;
    }
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for round in 0..3 {
        for name in &names {
            api.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"k": format!("v{round}")}})),
            )
            .await?;
        }
    }
    wait_until(
        Duration::from_secs(20),
        "every key reconciled 4 times",
        || async { names.iter().all(|n| load.per_key.get(n) >= 4) },
    )
    .await?;
    stop.send_replace(true);
    tokio::time::timeout(WAIT, run).await???;

    let max = load.max_in_flight.load(Ordering::SeqCst);
    ensure!(max <= 3, "at most 3 reconciles at once, saw {max}");
    ensure!(max >= 2, "the load used several workers, saw {max}");
    ensure!(
        load.overlaps.load(Ordering::SeqCst) == 0,
        "a key was reconciled twice at once"
    );
    ensure!(load.in_flight.load(Ordering::SeqCst) == 0);

    let text = registry.encode_text();
    ensure!(
        text.lines()
            .any(|l| l.starts_with("controller_runtime_reconcile_total")
                && l.contains("controller=\"load-test\"")
                && l.contains("result=\"requeue\"")),
        "reconcile_total requeue series missing:\n{text}"
    );
    ensure!(
        text.lines()
            .any(|l| l.starts_with("controller_runtime_reconcile_total")
                && l.contains("controller=\"load-test\"")
                && l.contains("result=\"success\"")
                && !l.ends_with(" 0")),
        "reconcile_total success series missing:\n{text}"
    );
    ensure!(
        text.contains("controller_runtime_max_concurrent_reconciles{controller=\"load-test\"} 3"),
        "max concurrent series missing:\n{text}"
    );
    Ok(())
}
