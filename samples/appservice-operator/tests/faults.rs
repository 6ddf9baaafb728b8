//! The AppService operator converges on a control plane that misbehaves: 20% 409 on updates
//! and patches, 10% 429 (Retry-After 1 s) on writes, 5% 503 on gets and lists, watches closed
//! every 20 events and one 410 Expired on a watch resume, with the workload simulation running
//! the Pods. Every AppService gets its Pod, its finalizer and the Pod's phase in its status;
//! deleting them all runs the finalizer's cleanup to the end; the number of reconciles stays
//! bounded (read from `controller_runtime_reconcile_total`).

use std::time::Duration;

use anyhow::{Result, ensure};
use appservice_operator::{AppService, AppServiceSpec, FINALIZER, pod_name};
use k8s_openapi::api::core::v1::Pod;
use korral::prelude::*;
use korral_testenv::{FaultConfig, TestEnv, wait_until};
use kube::api::{DeleteParams, ListParams, PostParams};
use tokio::sync::watch;

const OBJECTS: usize = 8;

#[tokio::test]
async fn appservices_converge_and_clean_up_under_mixed_faults_with_bounded_reconciles() -> Result<()>
{
    let env = TestEnv::builder()
        .crd::<AppService>()
        .simulation(true)
        .faults(FaultConfig::flaky_control_plane(3))
        .start()
        .await?;
    let registry = korral::metrics::Registry::new();
    let mut manager = Manager::builder(env.client())
        .metrics_registry(registry.clone())
        .build()?;
    appservice_operator::add_to_manager(&mut manager, Scope::namespace("default"));
    let (stop, mut stop_rx) = watch::channel(false);
    let task = tokio::spawn(manager.run(async move {
        let _ = stop_rx.wait_for(|s| *s).await;
    }));

    let apps: Api<AppService> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    for i in 0..OBJECTS {
        apps.create(
            &PostParams::default(),
            &AppService::new(&format!("app-{i}"), AppServiceSpec::default()),
        )
        .await?;
    }
    wait_until(
        Duration::from_secs(90),
        "every AppService has its running Pod and finalizer",
        || async {
            let Ok(list) = apps.list(&ListParams::default()).await else {
                return false;
            };
            let Ok(pod_list) = pods.list(&ListParams::default()).await else {
                return false;
            };
            list.items.len() == OBJECTS
                && list.items.iter().all(|app| {
                    let pod = pod_name(&app.name_any());
                    let status = app.status.clone().unwrap_or_default();
                    app.finalizers().iter().any(|f| f == FINALIZER)
                        && status.pod_name.as_deref() == Some(pod.as_str())
                        && status.phase.as_deref() == Some("Running")
                        && pod_list.items.iter().any(|p| p.name_any() == pod)
                })
        },
    )
    .await?;
    let converged = registry.total(
        "controller_runtime_reconcile_total",
        &[("controller", appservice_operator::CONTROLLER_NAME)],
    );

    // Deleting every AppService runs the cleanup (the Pods deleted, the finalizer removed).
    apps.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    wait_until(
        Duration::from_secs(90),
        "every AppService and Pod gone",
        || async {
            let apps_left = apps
                .list(&ListParams::default())
                .await
                .map(|l| l.items.len());
            let pods_left = pods.list(&ListParams::default()).await.map(|l| {
                l.items
                    .iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_none())
                    .count()
            });
            apps_left.ok() == Some(0) && pods_left.ok() == Some(0)
        },
    )
    .await?;

    let stats = env.faults().stats();
    ensure!(
        stats.injected("conflicts") + stats.injected("throttled") > 0
            && stats.injected("expired") == 1,
        "the profile did not inject what it should: {stats:?}"
    );
    // An AppService takes a few reconciles (its creation, its finalizer, its Pod's phases
    // under the simulation, then its deletion) plus one retry per fault that reaches the
    // reconciler; a hot loop would be far above the bound.
    let total = registry.total(
        "controller_runtime_reconcile_total",
        &[("controller", appservice_operator::CONTROLLER_NAME)],
    );
    let bound = 12.0 * OBJECTS as f64;
    eprintln!(
        "{converged} reconciles to converge, {total} with the cleanup, for {OBJECTS} AppServices; faults: {stats:?}"
    );
    ensure!(
        total <= bound,
        "{total} reconciles for {OBJECTS} AppServices (bound {bound}); faults: {stats:?}"
    );
    stop.send_replace(true);
    tokio::time::timeout(Duration::from_secs(15), task).await???;
    Ok(())
}
