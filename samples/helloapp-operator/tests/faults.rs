//! The HelloApp operator converges on a control plane that misbehaves: 20% 409 on updates and
//! patches, 10% 429 (Retry-After 1 s) on writes, 5% 503 on gets and lists, watches closed
//! every 20 events and one 410 Expired on a watch resume, with the workload simulation running
//! the Deployments' pods. Every HelloApp gets its Deployment and reports its ready replicas,
//! and the number of reconciles stays bounded (read from `controller_runtime_reconcile_total`).

use std::time::Duration;

use anyhow::{Result, ensure};
use helloapp_operator::{HelloApp, HelloAppSpec, HelloAppStatus};
use k8s_openapi::api::apps::v1::Deployment;
use korral::prelude::*;
use korral_testenv::{FaultConfig, TestEnv, wait_until};
use kube::api::{ListParams, PostParams};
use tokio::sync::watch;

const OBJECTS: usize = 8;
const SIZE: i32 = 2;
const IMAGE: &str = "nginxdemos/hello:plain-text";

/// Whether the Deployment `name` runs `IMAGE` with `SIZE` replicas.
async fn deployment_ok(deployments: &Api<Deployment>, name: &str) -> bool {
    let Ok(Some(d)) = deployments.get_opt(name).await else {
        return false;
    };
    let image = d
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone());
    d.spec.replicas == Some(SIZE) && image.as_deref() == Some(IMAGE)
}

#[tokio::test]
async fn helloapps_converge_under_mixed_faults_with_bounded_reconciles() -> Result<()> {
    let env = TestEnv::builder()
        .crd::<HelloApp>()
        .simulation(true)
        .faults(FaultConfig::flaky_control_plane(3))
        .start()
        .await?;
    let registry = korral::metrics::Registry::new();
    let mut manager = Manager::builder(env.client())
        .metrics_registry(registry.clone())
        .build()?;
    helloapp_operator::add_to_manager(&mut manager, Scope::namespace("default"));
    let (stop, mut stop_rx) = watch::channel(false);
    let task = tokio::spawn(manager.run(async move {
        let _ = stop_rx.wait_for(|s| *s).await;
    }));

    let apps: Api<HelloApp> = Api::namespaced(env.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    for i in 0..OBJECTS {
        let spec = HelloAppSpec {
            image: IMAGE.to_owned(),
            size: SIZE,
        };
        apps.create(
            &PostParams::default(),
            &HelloApp::new(&format!("hello-{i}"), spec),
        )
        .await?;
    }
    let want = HelloAppStatus {
        replicas: SIZE,
        ready_replicas: SIZE,
    };
    wait_until(
        Duration::from_secs(90),
        "every HelloApp reports its ready Deployment",
        || async {
            let Ok(list) = apps.list(&ListParams::default()).await else {
                return false;
            };
            if list.items.len() != OBJECTS
                || list.items.iter().any(|a| a.status.as_ref() != Some(&want))
            {
                return false;
            }
            for app in &list.items {
                if !deployment_ok(&deployments, &app.name_any()).await {
                    return false;
                }
            }
            true
        },
    )
    .await?;

    let stats = env.faults().stats();
    ensure!(
        stats.injected("conflicts") + stats.injected("throttled") > 0
            && stats.injected("expired") == 1,
        "the profile did not inject what it should: {stats:?}"
    );
    // A HelloApp takes a few reconciles (its creation, its Deployment's changes as the
    // simulation runs the pods) plus one retry per fault that reaches the reconciler; a hot
    // loop would be far above the bound.
    let total = registry.total(
        "controller_runtime_reconcile_total",
        &[("controller", helloapp_operator::CONTROLLER_NAME)],
    );
    let bound = 12.0 * OBJECTS as f64;
    eprintln!("{total} reconciles for {OBJECTS} HelloApps; faults: {stats:?}");
    ensure!(
        total <= bound,
        "{total} reconciles for {OBJECTS} HelloApps (bound {bound}); faults: {stats:?}"
    );
    stop.send_replace(true);
    tokio::time::timeout(Duration::from_secs(15), task).await???;
    Ok(())
}
