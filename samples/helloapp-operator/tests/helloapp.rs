//! The HelloApp operator against the embedded control plane (korral-testenv): the Deployment
//! runs the image with the size, drift is repaired, the scale subresource resizes, and the
//! Deployment's readiness reaches the HelloApp status.

use std::time::Duration;

use anyhow::{Result, ensure};
use helloapp_operator::{HelloApp, HelloAppStatus};
use k8s_openapi::api::apps::v1::Deployment;
use korral::prelude::*;
use korral_testenv::{TestEnv, wait_until};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(15);
const NAME: &str = "helloapp-sample";

struct Running {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), korral::manager::ManagerError>>,
}

impl Running {
    fn start(env: &TestEnv) -> Result<Self> {
        let mut manager = Manager::builder(env.client())
            .metrics_registry(korral::metrics::Registry::new())
            .build()?;
        helloapp_operator::add_to_manager(&mut manager, Scope::namespace("default"));
        let (stop, mut stop_rx) = watch::channel(false);
        let task = tokio::spawn(manager.run(async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        }));
        Ok(Self { stop, task })
    }

    async fn stop(self) -> Result<()> {
        self.stop.send_replace(true);
        tokio::time::timeout(WAIT, self.task).await???;
        Ok(())
    }
}

/// `(replicas, image)` of the Deployment.
async fn deployment_state(api: &Api<Deployment>) -> Option<(i32, String)> {
    let deployment = api.get_opt(NAME).await.ok()??;
    let image = deployment
        .spec
        .template
        .spec?
        .containers
        .first()?
        .image
        .clone()?;
    Some((deployment.spec.replicas?, image))
}

#[tokio::test]
async fn helloapp_deployment_scale_and_ready_status() -> Result<()> {
    let env = TestEnv::builder().crd::<HelloApp>().start().await?;
    let running = Running::start(&env)?;
    let apps: Api<HelloApp> = Api::namespaced(env.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    apps.create(&PostParams::default(), &helloapp_operator::sample())
        .await?;

    let sample_image = "nginxdemos/hello:plain-text".to_owned();
    wait_until(WAIT, "the Deployment", || async {
        deployment_state(&deployments).await == Some((2, sample_image.clone()))
    })
    .await?;
    let owner = deployments.get(NAME).await?.metadata.owner_references;
    ensure!(owner.is_some_and(|o| {
        o.iter()
            .any(|r| r.kind == "HelloApp" && r.controller == Some(true))
    }));

    // A new image and size reach the Deployment.
    apps.patch(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"image": "nginx:1.27", "size": 3}})),
    )
    .await?;
    wait_until(WAIT, "the new image and size", || async {
        deployment_state(&deployments).await == Some((3, "nginx:1.27".to_owned()))
    })
    .await?;

    // Drift is repaired.
    deployments
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"replicas": 7, "template": {"spec": {"containers": [{"name": "hello", "image": "other"}]}}}})),
        )
        .await?;
    wait_until(WAIT, "the drift repaired", || async {
        deployment_state(&deployments).await == Some((3, "nginx:1.27".to_owned()))
    })
    .await?;

    // The scale subresource resizes through spec.size.
    apps.patch_scale(
        NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 4}})),
    )
    .await?;
    wait_until(WAIT, "4 replicas through the scale subresource", || async {
        deployment_state(&deployments).await.map(|s| s.0) == Some(4)
    })
    .await?;

    // The Deployment reports pods (as a cluster's controllers would): the status follows.
    deployments
        .patch_status(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 4, "readyReplicas": 3}})),
        )
        .await?;
    wait_until(WAIT, "the ready replicas in the status", || async {
        apps.get(NAME).await.ok().and_then(|a| a.status)
            == Some(HelloAppStatus {
                replicas: 4,
                ready_replicas: 3,
            })
    })
    .await?;
    let scale = apps.get_scale(NAME).await?;
    ensure!(
        scale.status.map(|s| s.replicas) == Some(4),
        "the scale subresource reports status.replicas"
    );

    apps.delete(NAME, &DeleteParams::default()).await?;
    wait_until(WAIT, "the Deployment garbage-collected", || async {
        matches!(deployments.get_opt(NAME).await, Ok(None))
    })
    .await?;
    running.stop().await
}

#[tokio::test]
async fn with_workload_simulation_ready_replicas_reach_the_status() -> Result<()> {
    let env = TestEnv::builder()
        .crd::<HelloApp>()
        .simulation(true)
        .start()
        .await?;
    let running = Running::start(&env)?;
    let apps: Api<HelloApp> = Api::namespaced(env.client(), "default");
    apps.create(&PostParams::default(), &helloapp_operator::sample())
        .await?;
    for size in [2, 4] {
        if size != 2 {
            apps.patch(
                NAME,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"size": size}})),
            )
            .await?;
        }
        wait_until(WAIT, format!("{size} ready replicas"), || async {
            apps.get(NAME).await.ok().and_then(|a| a.status)
                == Some(HelloAppStatus {
                    replicas: size,
                    ready_replicas: size,
                })
        })
        .await?;
    }
    running.stop().await
}

#[tokio::test]
async fn reconciles_read_the_deployment_from_the_cache() -> Result<()> {
    let env = TestEnv::builder().crd::<HelloApp>().start().await?;
    let mut manager = Manager::builder(env.client())
        .metrics_registry(korral::metrics::Registry::new())
        .build()?;
    helloapp_operator::add_to_manager(&mut manager, Scope::namespace("default"));
    let client = manager.cached_client().clone();
    let (stop, mut stop_rx) = watch::channel(false);
    let task = tokio::spawn(manager.run(async move {
        let _ = stop_rx.wait_for(|s| *s).await;
    }));
    let running = Running { stop, task };

    let apps: Api<HelloApp> = Api::namespaced(env.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    apps.create(&PostParams::default(), &helloapp_operator::sample())
        .await?;
    wait_until(WAIT, "the Deployment", || async {
        deployment_state(&deployments).await.is_some()
    })
    .await?;
    // Drift brings the HelloApp back through the owned Deployment's event.
    deployments
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}})),
        )
        .await?;
    wait_until(WAIT, "the replicas put back", || async {
        deployment_state(&deployments)
            .await
            .is_some_and(|(replicas, _)| replicas == 2)
    })
    .await?;
    running.stop().await?;

    let counts = client.request_counts();
    ensure!(counts.writes >= 2, "created and repaired: {counts:?}");
    ensure!(counts.cache_reads >= 2, "{counts:?}");
    ensure!(
        counts.reads == 0,
        "every read of the Deployment came from the cache: {counts:?}"
    );
    Ok(())
}
