//! The status-patch workload: for each of N `Widget`s the controller merge-patches
//! `status.observed = spec.n` through the status subresource (one write per object).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt, stream};
use korral_runtime::cache::Scope;
use korral_runtime::controller::Controller as KorralController;
use korral_runtime::manager::Manager;
use korral_runtime::metrics::Registry;
use korral_runtime::reconcile::{Action as KorralAction, ReconcileResult};
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::{Client, CustomResource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{CONCURRENCY, Impl, Running, Shutdown, stopped};

/// The workload's custom resource.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "bench.korral.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    /// The value the controller copies into the status.
    pub n: i64,
}

/// The status the controllers set.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    /// `spec.n` once reconciled.
    pub observed: Option<i64>,
}

/// Widget `w-<i>` with `spec.n = i`.
pub fn widget(i: usize) -> Widget {
    Widget::new(&format!("w-{i}"), WidgetSpec { n: i as i64 })
}

impl Widget {
    /// Whether the status shows `spec.n`.
    pub fn converged(&self) -> bool {
        self.status.as_ref().and_then(|s| s.observed) == Some(self.spec.n)
    }
}

fn status_patch(w: &Widget) -> Option<(String, Patch<serde_json::Value>)> {
    if w.status.as_ref().and_then(|s| s.observed) == Some(w.spec.n) {
        return None;
    }
    let name = w.metadata.name.clone()?;
    Some((
        name,
        Patch::Merge(json!({"status": {"observed": w.spec.n}})),
    ))
}

struct Ctx {
    api: Api<Widget>,
    reconciles: Arc<AtomicU64>,
}

async fn korral_reconcile(w: Arc<Widget>, ctx: Arc<Ctx>) -> ReconcileResult {
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    if let Some((name, patch)) = status_patch(&w) {
        ctx.api
            .patch_status(&name, &PatchParams::default(), &patch)
            .await?;
    }
    Ok(KorralAction::done())
}

async fn kube_reconcile(
    w: Arc<Widget>,
    ctx: Arc<Ctx>,
) -> Result<kube::runtime::controller::Action, kube::Error> {
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    if let Some((name, patch)) = status_patch(&w) {
        ctx.api
            .patch_status(&name, &PatchParams::default(), &patch)
            .await?;
    }
    Ok(kube::runtime::controller::Action::await_change())
}

fn kube_error_policy(
    _: Arc<Widget>,
    _: &kube::Error,
    _: Arc<Ctx>,
) -> kube::runtime::controller::Action {
    kube::runtime::controller::Action::requeue(Duration::from_millis(100))
}

/// Starts `which` over the widgets in `ns` with `client` (the counted one).
pub fn start(which: Impl, client: &Client, ns: &str, shutdown: Shutdown) -> Result<Running> {
    let api: Api<Widget> = Api::namespaced(client.clone(), ns);
    let reconciles = Arc::new(AtomicU64::new(0));
    let ctx = Arc::new(Ctx {
        api: api.clone(),
        reconciles: reconciles.clone(),
    });
    let task = match which {
        Impl::Baseline => {
            // The widgets are named w-<i> with spec.n = i: the same patches, no controller.
            let n = usize::MAX;
            let api = api.clone();
            let reconciles = reconciles.clone();
            tokio::spawn(async move {
                let names = api
                    .list(&ListParams::default())
                    .await?
                    .items
                    .into_iter()
                    .filter_map(|w| status_patch(&w))
                    .take(n);
                stream::iter(names)
                    .map(|(name, patch)| {
                        let api = api.clone();
                        let reconciles = reconciles.clone();
                        async move {
                            reconciles.fetch_add(1, Ordering::Relaxed);
                            api.patch_status(&name, &PatchParams::default(), &patch)
                                .await
                                .map_err(anyhow::Error::from)
                        }
                    })
                    .buffer_unordered(CONCURRENCY)
                    .try_for_each(|_| async { Ok(()) })
                    .await
            })
        }
        Impl::Korral => {
            let mut manager = Manager::builder(client.clone())
                .metrics_registry(Registry::new())
                .build()
                .context("building the manager")?;
            let controller = KorralController::new(manager.cache().clone(), "bench-widgets")
                .for_::<Widget>(Scope::namespace(ns))
                .max_concurrent_reconciles(CONCURRENCY);
            manager.add_controller(controller, korral_reconcile, ctx);
            tokio::spawn(async move {
                manager
                    .run(stopped(shutdown))
                    .await
                    .map_err(anyhow::Error::from)
            })
        }
        Impl::KubeRuntime => {
            let config = kube::runtime::controller::Config::default()
                .concurrency(u16::try_from(CONCURRENCY).unwrap_or(u16::MAX));
            let controller =
                kube::runtime::Controller::new(api, kube::runtime::watcher::Config::default())
                    .with_config(config)
                    .graceful_shutdown_on(stopped(shutdown));
            tokio::spawn(async move {
                controller
                    .run(kube_reconcile, kube_error_policy, ctx)
                    .for_each(|_| async {})
                    .await;
                Ok(())
            })
        }
    };
    Ok(Running { task, reconciles })
}
