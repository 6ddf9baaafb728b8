//! Reconcile helpers against the embedded API server. Every wait polls with a timeout.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use korral_runtime::helpers::events::{Event, EventRecorder, Reporter};
use korral_runtime::helpers::finalizer::{self, has_finalizer};
use korral_runtime::helpers::owner::{
    OwnerRefError, controller_owner, is_controlled_by, set_controller_reference,
};
use korral_runtime::helpers::write::{
    OperationResult, WriteError, patch_status, replace_status, server_side_apply,
};
use korral_runtime::reconcile::{Action, ReconcileError};
use korral_testenv::{TestEnv, wait_until};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

const NS: &str = "default";
const WAIT: Duration = Duration::from_secs(10);

/// The runtime's client with no informer running: every read goes to the API server.
fn uncached_client(env: &TestEnv) -> korral_runtime::client::Client {
    korral_runtime::client::Client::new(
        env.client(),
        korral_runtime::cache::Cache::new(env.client()),
    )
}

fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    let labels = BTreeMap::from([("app".to_owned(), name.to_owned())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(replicas),
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
                        name: "web".into(),
                        image: Some("nginx:1.27".into()),
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

async fn wait_gone(api: &Api<ConfigMap>, name: &str) -> Result<()> {
    wait_until(WAIT, format!("{name} to be deleted"), || async {
        matches!(api.get_opt(name).await, Ok(None))
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn controller_reference_and_garbage_collection() -> Result<()> {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let owner = api
        .create(&PostParams::default(), &configmap("owner", &[]))
        .await?;
    let other = api
        .create(&PostParams::default(), &configmap("other", &[]))
        .await?;

    let mut owned = configmap("owned", &[("k", "v")]);
    set_controller_reference(&owner, &mut owned.metadata)?;
    let second = set_controller_reference(&other, &mut owned.metadata);
    ensure!(
        matches!(second, Err(OwnerRefError::AlreadyOwned { ref name, .. }) if name == "owner"),
        "second controller accepted: {second:?}"
    );
    let owned = api.create(&PostParams::default(), &owned).await?;
    let reference = controller_owner(&owned.metadata).context("no controller reference")?;
    ensure!(reference.uid == owner.metadata.uid.clone().unwrap_or_default());
    ensure!(reference.block_owner_deletion == Some(true));
    ensure!(is_controlled_by(&owned.metadata, &owner));
    ensure!(!is_controlled_by(&owned.metadata, &other));

    // Background deletion of the owner: the garbage collector deletes the owned object.
    api.delete("owner", &DeleteParams::background()).await?;
    wait_gone(&api, "owned").await?;
    ensure!(
        api.get_opt("other").await?.is_some(),
        "unrelated object deleted"
    );
    Ok(())
}

#[tokio::test]
async fn finalizer_flow_adds_cleans_up_and_removes() -> Result<()> {
    const FINALIZER: &str = "korral.dev/cleanup";
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let obj = api
        .create(&PostParams::default(), &configmap("fin", &[]))
        .await?;

    let applied = Arc::new(AtomicUsize::new(0));
    let cleaned = Arc::new(AtomicUsize::new(0));
    let run = |obj: ConfigMap| {
        let api = api.clone();
        let applied = applied.clone();
        let cleaned = cleaned.clone();
        async move {
            finalizer::finalize(&api, &obj, FINALIZER, |event| async move {
                match event {
                    finalizer::Event::Apply(o) => {
                        // The finalizer is in place before Apply runs.
                        if !has_finalizer(&o, FINALIZER) {
                            return Err(ReconcileError::terminal("apply without finalizer"));
                        }
                        applied.fetch_add(1, Ordering::SeqCst);
                        Ok(Action::requeue_after(Duration::from_secs(60)))
                    }
                    finalizer::Event::Cleanup(_) => {
                        cleaned.fetch_add(1, Ordering::SeqCst);
                        Ok(Action::Done)
                    }
                }
            })
            .await
        }
    };

    // First pass: the finalizer is added, then Apply runs.
    let action = run(obj).await?;
    ensure!(action == Action::requeue_after(Duration::from_secs(60)));
    let stored = api.get("fin").await?;
    ensure!(has_finalizer(&stored, FINALIZER), "finalizer not added");
    ensure!(applied.load(Ordering::SeqCst) == 1);

    // Second pass: finalizer present, Apply only (no write).
    run(stored.clone()).await?;
    ensure!(applied.load(Ordering::SeqCst) == 2);
    ensure!(api.get("fin").await?.metadata.resource_version == stored.metadata.resource_version);

    // Delete: the object stays (finalizer), Cleanup runs, the finalizer goes, the object too.
    api.delete("fin", &DeleteParams::default()).await?;
    let deleting = api.get("fin").await?;
    ensure!(deleting.metadata.deletion_timestamp.is_some());

    // A failing cleanup keeps the finalizer (and the object) for a retry.
    let failed = finalizer::finalize(&api, &deleting, FINALIZER, |event| async move {
        match event {
            finalizer::Event::Cleanup(_) => Err(ReconcileError::transient("still releasing")),
            finalizer::Event::Apply(_) => Err(ReconcileError::terminal("apply while deleting")),
        }
    })
    .await;
    ensure!(matches!(&failed, Err(e) if e.is_transient()), "{failed:?}");
    ensure!(has_finalizer(&api.get("fin").await?, FINALIZER));

    ensure!(run(deleting.clone()).await? == Action::Done);
    ensure!(cleaned.load(Ordering::SeqCst) == 1);
    wait_gone(&api, "fin").await?;

    // A deleting object without our finalizer is skipped.
    ensure!(run(deleting_without_finalizer(deleting, FINALIZER)).await? == Action::Done);
    ensure!(cleaned.load(Ordering::SeqCst) == 1);
    ensure!(applied.load(Ordering::SeqCst) == 2);
    Ok(())
}

fn deleting_without_finalizer(mut obj: ConfigMap, finalizer: &str) -> ConfigMap {
    if let Some(f) = obj.metadata.finalizers.as_mut() {
        f.retain(|x| x != finalizer);
    }
    obj
}

#[tokio::test]
async fn add_and_remove_finalizer_use_optimistic_concurrency() -> Result<()> {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let obj = api
        .create(&PostParams::default(), &configmap("occ", &[]))
        .await?;
    let with = finalizer::add_finalizer(&api, &obj, "a.korral.dev/x").await?;
    ensure!(has_finalizer(&with, "a.korral.dev/x"));
    // `obj` is stale now: the next write from it conflicts.
    let stale = finalizer::add_finalizer(&api, &obj, "a.korral.dev/y").await;
    ensure!(
        matches!(&stale, Err(finalizer::FinalizerError::AddFinalizer { source: kube::Error::Api(s), .. }) if s.code == 409),
        "stale add accepted: {stale:?}"
    );
    let without = finalizer::remove_finalizer(&api, &with, "a.korral.dev/x")
        .await?
        .context("object gone")?;
    ensure!(!has_finalizer(&without, "a.korral.dev/x"));
    Ok(())
}

#[tokio::test]
async fn create_or_update_created_unchanged_updated() -> Result<()> {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let client = uncached_client(&env);
    let default = configmap("cou", &[]);
    let set = |value: &'static str| {
        move |cm: &mut ConfigMap| -> Result<(), WriteError> {
            cm.data
                .get_or_insert_with(BTreeMap::new)
                .insert("key".into(), value.into());
            Ok(())
        }
    };

    let (result, created) = client.create_or_update(default.clone(), set("one")).await?;
    ensure!(result == OperationResult::Created, "{result:?}");
    ensure!(
        created
            .data
            .as_ref()
            .and_then(|d| d.get("key"))
            .map(String::as_str)
            == Some("one")
    );

    let (result, same) = client.create_or_update(default.clone(), set("one")).await?;
    ensure!(result == OperationResult::Unchanged, "{result:?}");
    ensure!(same.metadata.resource_version == created.metadata.resource_version);

    let (result, updated) = client.create_or_update(default, set("two")).await?;
    ensure!(result == OperationResult::Updated, "{result:?}");
    let stored = api.get("cou").await?;
    ensure!(
        stored
            .data
            .as_ref()
            .and_then(|d| d.get("key"))
            .map(String::as_str)
            == Some("two")
    );
    ensure!(stored.metadata.resource_version == updated.metadata.resource_version);

    // Changing the name in mutate is refused.
    let renamed = client
        .create_or_update(configmap("cou", &[]), |cm: &mut ConfigMap| {
            cm.metadata.name = Some("other".into());
            Ok::<_, WriteError>(())
        })
        .await;
    ensure!(matches!(
        renamed,
        Err(WriteError::MutateChangedIdentity { .. })
    ));

    // A failing mutate writes nothing and its own error comes back.
    #[derive(Debug, thiserror::Error)]
    enum MutateError {
        #[error("refused by the mutate")]
        Refused,
        #[error(transparent)]
        Write(#[from] WriteError),
    }
    let before = api.get("cou").await?.metadata.resource_version;
    let refused = client
        .create_or_update(configmap("cou", &[]), |cm: &mut ConfigMap| {
            cm.data = None;
            Err(MutateError::Refused)
        })
        .await;
    ensure!(matches!(refused, Err(MutateError::Refused)), "{refused:?}");
    ensure!(api.get("cou").await?.metadata.resource_version == before);
    let absent = client
        .create_or_update(configmap("absent", &[]), |_: &mut ConfigMap| {
            Err(MutateError::Refused)
        })
        .await;
    ensure!(matches!(absent, Err(MutateError::Refused)), "{absent:?}");
    ensure!(api.get_opt("absent").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn create_or_update_retries_concurrent_writers() -> Result<()> {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let client = uncached_client(&env);
    // Four writers race to create and update the same object, each setting its own key: the
    // creates that lose get AlreadyExists and the updates that lose get 409; both re-read and
    // run mutate again, so every key lands.
    let writers = (0..4).map(|i| {
        let client = client.clone();
        tokio::spawn(async move {
            client
                .create_or_update(configmap("race", &[]), move |cm: &mut ConfigMap| {
                    cm.data
                        .get_or_insert_with(BTreeMap::new)
                        .insert(format!("w{i}"), "done".into());
                    Ok::<_, WriteError>(())
                })
                .await
        })
    });
    let mut created = 0;
    for writer in writers.collect::<Vec<_>>() {
        let (result, _) = writer.await??;
        if result == OperationResult::Created {
            created += 1;
        }
    }
    ensure!(created == 1, "{created} creates");
    let data = api.get("race").await?.data.unwrap_or_default();
    ensure!(data.len() == 4, "{data:?}");
    Ok(())
}

#[tokio::test]
async fn create_or_patch_patches_only_the_difference() -> Result<()> {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let client = uncached_client(&env);
    let mutate = |cm: &mut ConfigMap| -> Result<(), WriteError> {
        cm.data
            .get_or_insert_with(BTreeMap::new)
            .insert("mine".into(), "1".into());
        Ok(())
    };
    let (result, _) = client
        .create_or_patch(configmap("cop", &[]), mutate)
        .await?;
    ensure!(result == OperationResult::Created, "{result:?}");

    // Someone else adds a key; our patch keeps it.
    let mut theirs = api.get("cop").await?;
    theirs
        .data
        .get_or_insert_with(BTreeMap::new)
        .insert("theirs".into(), "x".into());
    api.replace("cop", &PostParams::default(), &theirs).await?;

    let (result, _) = client
        .create_or_patch(configmap("cop", &[]), mutate)
        .await?;
    ensure!(result == OperationResult::Unchanged, "{result:?}");

    let (result, patched) = client
        .create_or_patch(configmap("cop", &[]), |cm: &mut ConfigMap| {
            let data = cm.data.get_or_insert_with(BTreeMap::new);
            data.insert("mine".into(), "2".into());
            data.insert("label".into(), "y".into());
            Ok::<_, WriteError>(())
        })
        .await?;
    ensure!(result == OperationResult::Updated, "{result:?}");
    let data = patched.data.unwrap_or_default();
    ensure!(data.get("mine").map(String::as_str) == Some("2"));
    ensure!(data.get("label").map(String::as_str) == Some("y"));
    ensure!(data.get("theirs").map(String::as_str) == Some("x"));
    Ok(())
}

#[tokio::test]
async fn patch_and_replace_status_leave_spec_alone() -> Result<()> {
    let env = TestEnv::start().await?;
    let api: Api<Deployment> = Api::namespaced(env.client(), NS);
    let created = api
        .create(&PostParams::default(), &deployment("web", 2))
        .await?;

    let patched = patch_status(
        &api,
        "web",
        json!({ "replicas": 2, "readyReplicas": 1, "observedGeneration": 1 }),
    )
    .await?;
    let status = patched.status.clone().context("no status")?;
    ensure!(
        status.replicas == Some(2) && status.ready_replicas == Some(1),
        "{status:?}"
    );
    ensure!(patched.spec == created.spec, "spec changed");
    ensure!(
        patched.metadata.generation == created.metadata.generation,
        "generation moved"
    );

    // replace_status: only the status is written, a spec change in the body is ignored.
    let mut body = patched.clone();
    if let Some(s) = body.status.as_mut() {
        s.ready_replicas = Some(2);
    }
    body.spec.replicas = Some(9);
    let replaced = replace_status(&api, &body).await?;
    ensure!(replaced.status.as_ref().and_then(|s| s.ready_replicas) == Some(2));
    let stored = api.get("web").await?;
    ensure!(stored.spec == created.spec, "spec changed through /status");
    ensure!(stored.metadata.generation == created.metadata.generation);

    // A stale object conflicts.
    let stale = replace_status(&api, &patched).await;
    ensure!(
        stale.as_ref().err().and_then(WriteError::status_code) == Some(409),
        "{stale:?}"
    );
    Ok(())
}

#[tokio::test]
async fn event_recorder_writes_and_counts_repeats() -> Result<()> {
    let env = TestEnv::start().await?;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let obj = cms
        .create(&PostParams::default(), &configmap("evented", &[]))
        .await?;
    let recorder = EventRecorder::new(
        env.client(),
        Reporter {
            controller: "korral.dev/test-controller".into(),
            instance: Some("pod-0".into()),
        },
    );
    let events: Api<K8sEvent> = Api::namespaced(env.client(), NS);

    let first = recorder
        .record(
            &obj,
            &Event::normal("Created", "Reconcile", "created the thing"),
        )
        .await?;
    ensure!(first.type_.as_deref() == Some("Normal"));
    ensure!(first.reason.as_deref() == Some("Created"));
    ensure!(first.reporting_controller.as_deref() == Some("korral.dev/test-controller"));
    let regarding = first.regarding.clone().context("no regarding")?;
    ensure!(regarding.kind.as_deref() == Some("ConfigMap") && regarding.uid == obj.metadata.uid);

    let repeat = recorder
        .record(
            &obj,
            &Event::normal("Created", "Reconcile", "created the thing"),
        )
        .await?;
    ensure!(
        repeat.metadata.name == first.metadata.name,
        "repeat created a new event"
    );
    ensure!(
        repeat.series.as_ref().map(|s| s.count) == Some(2),
        "{:?}",
        repeat.series
    );
    let third = recorder
        .record(
            &obj,
            &Event::normal("Created", "Reconcile", "created the thing"),
        )
        .await?;
    ensure!(third.series.as_ref().map(|s| s.count) == Some(3));

    // Outside the dedup window a repeat is a new Event.
    let no_window = EventRecorder::new(
        env.client(),
        Reporter {
            controller: "korral.dev/other-controller".into(),
            instance: None,
        },
    )
    .with_dedup_window(Duration::ZERO);
    let a = no_window
        .record(&obj, &Event::normal("Synced", "Reconcile", "ok"))
        .await?;
    let b = no_window
        .record(&obj, &Event::normal("Synced", "Reconcile", "ok"))
        .await?;
    ensure!(a.metadata.name != b.metadata.name && b.series.is_none());
    ensure!(a.reporting_instance.as_deref() == Some("korral.dev/other-controller"));
    for e in [a, b] {
        events
            .delete(
                &e.metadata.name.unwrap_or_default(),
                &DeleteParams::default(),
            )
            .await?;
    }

    // A different event is a new object.
    recorder
        .record(&obj, &Event::warning("Failed", "Reconcile", "it broke"))
        .await?;
    let listed = events.list(&ListParams::default()).await?.items;
    ensure!(listed.len() == 2, "{} events", listed.len());
    let warning = listed
        .iter()
        .find(|e| e.reason.as_deref() == Some("Failed"))
        .context("no warning")?;
    ensure!(warning.type_.as_deref() == Some("Warning"));
    ensure!(warning.series.is_none());
    Ok(())
}

#[tokio::test]
async fn server_side_apply_creates_reapplies_conflicts_and_forces() -> Result<()> {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), NS);
    let mut obj = configmap("ssa", &[("k", "v")]);
    obj.metadata.namespace = None;
    // Create-if-absent, owned by the manager.
    let created = server_side_apply(&api, "ssa", &obj, "korral-a", false).await?;
    let managers: Vec<(String, String)> = created
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|e| {
            (
                e.manager.clone().unwrap_or_default(),
                e.operation.clone().unwrap_or_default(),
            )
        })
        .collect();
    ensure!(
        managers == vec![("korral-a".to_string(), "Apply".to_string())],
        "{managers:?}"
    );
    // Re-applying the same configuration changes nothing.
    let again = server_side_apply(&api, "ssa", &obj, "korral-a", false).await?;
    ensure!(again.metadata.resource_version == created.metadata.resource_version);
    // Another manager setting the field differently conflicts: a clean 409 error.
    let other = configmap("ssa", &[("k", "w")]);
    let mut other = other;
    other.metadata.namespace = None;
    match server_side_apply(&api, "ssa", &other, "korral-b", false).await {
        Err(err @ WriteError::ServerSideApply { .. }) => {
            ensure!(err.status_code() == Some(409), "{err}");
            match err.kube_error() {
                Some(kube::Error::Api(status)) => ensure!(
                    status.message
                        == "Apply failed with 1 conflict: conflict with \"korral-a\": .data.k",
                    "{status:?}"
                ),
                other => bail!("not an API error: {other:?}"),
            }
        }
        other => bail!("expected a conflict, got {other:?}"),
    }
    // Forcing takes the field over.
    let forced = server_side_apply(&api, "ssa", &other, "korral-b", true).await?;
    ensure!(
        forced
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str)
            == Some("w"),
        "{forced:?}"
    );
    let owners: Vec<String> = forced
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|e| e.manager.clone())
        .collect();
    ensure!(owners == vec!["korral-b".to_string()], "{owners:?}");
    Ok(())
}
