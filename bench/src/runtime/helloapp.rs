//! The HelloApp-like workload (custom resource → Deployment → status from the Deployment), the
//! work of the HelloApp sample and of client-go's sample-controller: for each `Hello` the
//! controller keeps a Deployment of `spec.size` replicas of `spec.image` owned by it, and copies
//! the Deployment's `replicas` and `readyReplicas` into the Hello's status. A stand-in for
//! kube-controller-manager ([`run_cluster`], on its own uncounted client) reports each
//! Deployment's replicas ready with one status write, so each Hello converges once its status
//! shows them. (The server's full workload simulation, ReplicaSets and Pods, would make the
//! simulation rather than the controllers the bottleneck of this measurement.)
//!
//! - Korral: `Controller::for_::<Hello>().owns::<Deployment>()`; the manager's cached client's
//!   `create_or_update` of the Deployment (read from the shared cache, written only when it
//!   differs) and a status patch when the status changed.
//! - kube-runtime, in its idiomatic form: `Controller::new(hellos).owns(deployments)`; the Hello
//!   comes from the controller's reflector store, the owned Deployments have no store in
//!   kube-runtime's stable API, so the reconciler server-side applies the desired Deployment
//!   (kube-rs's recommended write, which returns the stored object) and patches the status when
//!   it changed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use korral_runtime::cache::Scope;
use korral_runtime::controller::Controller as KorralController;
use korral_runtime::helpers::owner::set_controller_reference;
use korral_runtime::manager::Manager;
use korral_runtime::metrics::Registry;
use korral_runtime::reconcile::{Action as KorralAction, ReconcileError, ReconcileResult};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::{Client, CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{CONCURRENCY, Impl, Running, Shutdown, stopped};

/// The image every Hello runs.
const IMAGE: &str = "registry.example/hello:1.0";
/// The field manager of kube-runtime's server-side apply.
const FIELD_MANAGER: &str = "bench-hello-controller";

/// The workload's custom resource.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "bench.korral.dev",
    version = "v1",
    kind = "Hello",
    namespaced,
    status = "HelloStatus"
)]
pub struct HelloSpec {
    /// The image the Deployment runs.
    pub image: String,
    /// Replicas of the Deployment.
    pub size: i32,
}

/// The status the controllers copy from the Deployment.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelloStatus {
    /// The Deployment's `status.replicas`.
    pub replicas: i32,
    /// The Deployment's `status.readyReplicas`.
    pub ready_replicas: i32,
}

/// Hello `h-<i>`: one replica of [`IMAGE`].
pub fn hello(i: usize) -> Hello {
    Hello::new(
        &format!("h-{i}"),
        HelloSpec {
            image: IMAGE.to_owned(),
            size: 1,
        },
    )
}

impl Hello {
    /// Whether the status shows all its replicas ready.
    pub fn converged(&self) -> bool {
        self.status.as_ref().map(|s| s.ready_replicas) == Some(self.spec.size)
    }
}

fn labels(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_owned(), "hello".to_owned()),
        ("hello".to_owned(), name.to_owned()),
    ])
}

/// Sets the fields of `deployment` the controller manages (both implementations' desired
/// state), leaving the rest alone.
fn set_desired(hello: &Hello, deployment: &mut Deployment) -> Result<(), ReconcileError> {
    let labels = labels(&hello.name_any());
    set_controller_reference(hello, &mut deployment.metadata)
        .map_err(|e| ReconcileError::terminal(e.to_string()))?;
    let spec = &mut deployment.spec;
    spec.replicas = Some(hello.spec.size);
    if spec.selector.match_labels.is_none() && spec.selector.match_expressions.is_none() {
        spec.selector = LabelSelector {
            match_labels: Some(labels.clone()),
            match_expressions: None,
        };
    }
    let template = spec
        .template
        .metadata
        .get_or_insert_with(ObjectMeta::default);
    template
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend(labels);
    let pod = spec.template.spec.get_or_insert_with(PodSpec::default);
    match pod.containers.iter_mut().find(|c| c.name == "hello") {
        Some(c) => c.image = Some(hello.spec.image.clone()),
        None => pod.containers.push(Container {
            name: "hello".to_owned(),
            image: Some(hello.spec.image.clone()),
            ..Container::default()
        }),
    }
    Ok(())
}

/// Plays kube-controller-manager and the kubelets for the Deployments in `ns` until `shutdown`:
/// each Deployment whose status does not show its `spec.replicas` ready gets one status write
/// saying they are (observedGeneration, replicas, updated, ready and available replicas).
pub async fn run_cluster(client: Client, ns: String, shutdown: Shutdown) -> Result<()> {
    use kube::runtime::{WatchStreamExt, watcher};
    let api: Api<Deployment> = Api::namespaced(client, &ns);
    let events = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .take_until(stopped(shutdown));
    events
        .map_err(anyhow::Error::from)
        .try_for_each_concurrent(16, |d| {
            let api = api.clone();
            async move {
                let want = d.spec.replicas.unwrap_or(1);
                let status = d.status.clone().unwrap_or_default();
                let current = status.observed_generation == d.metadata.generation
                    && status.ready_replicas.unwrap_or(0) == want
                    && status.replicas.unwrap_or(0) == want;
                if current {
                    return Ok(());
                }
                let patch = json!({"status": {
                    "observedGeneration": d.metadata.generation,
                    "replicas": want,
                    "updatedReplicas": want,
                    "readyReplicas": want,
                    "availableReplicas": want,
                }});
                match api
                    .patch_status(&d.name_any(), &PatchParams::default(), &Patch::Merge(patch))
                    .await
                {
                    Ok(_) => Ok(()),
                    // Deleted meanwhile: nothing to report.
                    Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                    Err(e) => Err(e.into()),
                }
            }
        })
        .await
}

/// The status a Hello should show for its Deployment.
fn status_of(deployment: &Deployment) -> HelloStatus {
    let status = deployment.status.clone().unwrap_or_default();
    HelloStatus {
        replicas: status.replicas.unwrap_or(0),
        ready_replicas: status.ready_replicas.unwrap_or(0),
    }
}

struct Ctx {
    client: Client,
    reconciles: Arc<AtomicU64>,
}

struct KorralCtx {
    client: korral_runtime::client::Client,
    reconciles: Arc<AtomicU64>,
}

fn namespace_of(hello: &Hello) -> Result<String, ReconcileError> {
    hello
        .namespace()
        .ok_or_else(|| ReconcileError::terminal("a Hello without a namespace"))
}

async fn korral_reconcile(hello: Arc<Hello>, ctx: Arc<KorralCtx>) -> ReconcileResult {
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    let (name, ns) = (hello.name_any(), namespace_of(&hello)?);
    let default = Deployment {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns.clone()),
            ..ObjectMeta::default()
        },
        ..Deployment::default()
    };
    let (_, stored) = ctx
        .client
        .create_or_update(default, |d| set_desired(&hello, d))
        .await?;
    let status = status_of(&stored);
    if hello.status.as_ref() != Some(&status) {
        ctx.client.patch_status(hello.as_ref(), &status).await?;
    }
    Ok(KorralAction::done())
}

/// kube-runtime's reconciler errors.
#[derive(Debug, thiserror::Error)]
enum KubeReconcileError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Desired(String),
}

async fn kube_reconcile(
    hello: Arc<Hello>,
    ctx: Arc<Ctx>,
) -> Result<kube::runtime::controller::Action, KubeReconcileError> {
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    let name = hello.name_any();
    let ns = hello
        .namespace()
        .ok_or_else(|| KubeReconcileError::Desired("a Hello without a namespace".into()))?;
    let mut desired = Deployment {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ns.clone()),
            ..ObjectMeta::default()
        },
        ..Deployment::default()
    };
    set_desired(&hello, &mut desired).map_err(|e| KubeReconcileError::Desired(e.to_string()))?;
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &ns);
    let stored = deployments
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&desired),
        )
        .await?;
    let status = status_of(&stored);
    if hello.status.as_ref() != Some(&status) {
        let hellos: Api<Hello> = Api::namespaced(ctx.client.clone(), &ns);
        hellos
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await?;
    }
    Ok(kube::runtime::controller::Action::await_change())
}

fn kube_error_policy(
    _: Arc<Hello>,
    _: &KubeReconcileError,
    _: Arc<Ctx>,
) -> kube::runtime::controller::Action {
    kube::runtime::controller::Action::requeue(Duration::from_millis(100))
}

/// Starts `which` over the Hellos in `ns` with `client` (the counted one).
pub fn start(which: Impl, client: &Client, ns: &str, shutdown: Shutdown) -> Result<Running> {
    let reconciles = Arc::new(AtomicU64::new(0));
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        reconciles: reconciles.clone(),
    });
    let task = match which {
        Impl::Baseline => anyhow::bail!("the HelloApp workload has no baseline"),
        Impl::Korral => {
            let mut manager = Manager::builder(client.clone())
                .metrics_registry(Registry::new())
                .build()
                .context("building the manager")?;
            let ctx = Arc::new(KorralCtx {
                client: manager.cached_client().clone(),
                reconciles: reconciles.clone(),
            });
            let controller = KorralController::new(manager.cache().clone(), "bench-hellos")
                .for_::<Hello>(Scope::namespace(ns))
                .owns::<Deployment>()
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
            let hellos: Api<Hello> = Api::namespaced(client.clone(), ns);
            let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
            let controller =
                kube::runtime::Controller::new(hellos, kube::runtime::watcher::Config::default())
                    .owns(deployments, kube::runtime::watcher::Config::default())
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
