//! The AppService operator (the Operator SDK's first `app-operator` example), on Korral.
//!
//! An `AppService` (`app.example.com/v1alpha1`) gets one Pod, `<name>-pod`, running `busybox`
//! (or `spec.image`) with `sleep 3600`, controlled by the AppService. The operator keeps the
//! Pod there (it owns Pods: a deleted Pod is created again) and reports its name and phase in
//! the status.
//!
//! Deletion goes through the finalizer `app.example.com/finalizer`: when the AppService is
//! deleted, the operator deletes the Pod itself, records a `DeletingPod` event, waits until the
//! Pod is gone, records `CleanedUp`, and only then removes the finalizer, so the AppService
//! disappears after its Pod, never before.
//!
//! ```no_run
//! use korral::prelude::*;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut manager = Manager::from_env().await?.build()?;
//! appservice_operator::add_to_manager(&mut manager, Scope::All);
//! manager.run(korral::manager::shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use korral::helpers::events::{Event, EventRecorder, Reporter};
use korral::helpers::owner::is_controlled_by;
use korral::prelude::*;
use kube::api::{DeleteParams, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

/// The controller's name (its metrics label and log field).
pub const CONTROLLER_NAME: &str = "appservice";
/// The finalizer guarding the cleanup.
pub const FINALIZER: &str = "app.example.com/finalizer";
/// The image used when `spec.image` is not set.
pub const DEFAULT_IMAGE: &str = "busybox";

fn default_image() -> String {
    DEFAULT_IMAGE.to_owned()
}

/// The desired state of an AppService: one Pod.
// Two printer columns of type "string" look like a duplicated attribute to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "app.example.com",
    version = "v1alpha1",
    kind = "AppService",
    namespaced,
    status = "AppServiceStatus",
    derive = "PartialEq",
    doc = "An application made of one busybox Pod, cleaned up by a finalizer.",
    printcolumn(
        name = "Pod",
        type_ = "string",
        json_path = ".status.podName",
        description = "The AppService's Pod"
    ),
    printcolumn(
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase",
        description = "The Pod's phase"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct AppServiceSpec {
    /// The image of the Pod's container (default `busybox`); it runs `sleep 3600`.
    #[serde(default = "default_image")]
    #[schemars(length(min = 1))]
    pub image: String,
}

impl Default for AppServiceSpec {
    fn default() -> Self {
        Self {
            image: default_image(),
        }
    }
}

/// The observed state of an AppService.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppServiceStatus {
    /// The name of the Pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// The Pod's phase (`Pending`, `Running`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// The tutorial's sample resource (`config/samples/app_v1alpha1_appservice.yaml`), namespace
/// unset.
pub fn sample() -> AppService {
    AppService::new("appservice-sample", AppServiceSpec::default())
}

/// The name of the Pod of the AppService `name`.
pub fn pod_name(name: &str) -> String {
    format!("{name}-pod")
}

/// Why a reconcile step failed.
#[derive(Debug, thiserror::Error)]
pub enum AppServiceError {
    /// The AppService has no namespace.
    #[error("reconciling AppService {0}: it has no namespace")]
    NoNamespace(String),
    /// A Pod of that name exists and belongs to someone else.
    #[error(
        "creating Pod {pod}: a Pod of that name exists and is not controlled by AppService {owner}"
    )]
    PodNotOwned {
        /// The Pod.
        pod: String,
        /// The AppService.
        owner: String,
    },
    /// The Pod was asked to go and is still there (the cleanup is not finished).
    #[error("cleaning up AppService {owner}: waiting for Pod {pod} to be deleted")]
    PodStillTerminating {
        /// The Pod.
        pod: String,
        /// The AppService.
        owner: String,
    },
}

/// What the reconciler works with.
#[derive(Clone)]
pub struct Context {
    /// Reads Pods from the manager's cache (the controller owns them), writes to the API
    /// server.
    pub client: KorralClient,
    /// Records events about AppServices.
    pub recorder: EventRecorder,
}

/// How many AppServices are reconciled at once. Each one owns a single Pod and most reconciles
/// only read the cache, so one worker keeps up; a second lets a slow cleanup (waiting for a Pod
/// to go) overlap with the others without loading the API server.
pub const MAX_CONCURRENT_RECONCILES: usize = 2;

impl Context {
    /// A context on `client`, reporting events as `app.example.com/appservice-controller`.
    pub fn new(client: KorralClient) -> Self {
        let recorder = EventRecorder::new(
            client.kube_client().clone(),
            Reporter {
                controller: "app.example.com/appservice-controller".to_owned(),
                instance: std::env::var("POD_NAME").ok(),
            },
        );
        Self { client, recorder }
    }
}

/// Adds the AppService controller to `manager`, watching AppServices (and their Pods) in
/// `scope`, and declares its CRD and permissions (for `--print-manifests`).
pub fn add_to_manager(manager: &mut Manager, scope: Scope) {
    let controller = Controller::new(manager.cache().clone(), CONTROLLER_NAME)
        .for_::<AppService>(scope)
        .owns::<Pod>()
        .writes_status()
        .uses_finalizers()
        .records_events()
        .max_concurrent_reconciles(MAX_CONCURRENT_RECONCILES);
    manager.declare_crd::<AppService>();
    let ctx = Context::new(manager.cached_client().clone());
    manager.add_controller(controller, reconcile, Arc::new(ctx));
}

/// The Pod of `app` (namespace, labels, controller reference, container).
pub fn desired_pod(app: &AppService) -> Result<Pod, ReconcileError> {
    let name = app.name_any();
    let mut metadata = ObjectMeta {
        name: Some(pod_name(&name)),
        namespace: app.namespace(),
        labels: Some(BTreeMap::from([("app".to_owned(), name.clone())])),
        ..ObjectMeta::default()
    };
    set_controller_reference(app, &mut metadata).terminal()?;
    Ok(Pod {
        metadata,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "busybox".to_owned(),
                image: Some(app.spec.image.clone()),
                command: Some(vec!["sleep".to_owned(), "3600".to_owned()]),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    })
}

/// Reconciles one AppService through the finalizer flow; see the [crate docs](crate).
pub async fn reconcile(app: Arc<AppService>, ctx: Arc<Context>) -> ReconcileResult {
    let name = app.name_any();
    let namespace = app
        .namespace()
        .ok_or_else(|| ReconcileError::terminal(AppServiceError::NoNamespace(name.clone())))?;
    ctx.client
        .finalize(app.as_ref(), FINALIZER, |event| async {
            match event {
                FinalizerEvent::Apply(app) => apply(&app, &namespace, &ctx).await,
                FinalizerEvent::Cleanup(app) => cleanup(&app, &namespace, &ctx).await,
            }
        })
        .await
}

/// Records `event` about `app`; a failure is logged, not fatal (events are best effort).
async fn record(ctx: &Context, app: &AppService, event: Event) {
    if let Err(err) = ctx.recorder.record(app, &event).await {
        warn!(error = %err, reason = %event.reason, "recording an event failed");
    }
}

async fn apply(app: &AppService, namespace: &str, ctx: &Context) -> ReconcileResult {
    let name = app.name_any();
    let pod_name = pod_name(&name);
    let pod = match ctx.client.get_opt::<Pod>(namespace, &pod_name).await? {
        Some(pod) if is_controlled_by(&pod.metadata, app) => pod,
        Some(_) => {
            let err = AppServiceError::PodNotOwned {
                pod: pod_name.clone(),
                owner: name.clone(),
            };
            record(
                ctx,
                app,
                Event::warning("PodNotOwned", "CreatePod", err.to_string()),
            )
            .await;
            return Err(ReconcileError::terminal(err));
        }
        None => {
            let created = Arc::new(ctx.client.create(&desired_pod(app)?).await?);
            info!(%name, pod = %pod_name, "created the Pod");
            record(
                ctx,
                app,
                Event::normal("PodCreated", "CreatePod", format!("created Pod {pod_name}")),
            )
            .await;
            created
        }
    };
    let status = AppServiceStatus {
        pod_name: Some(pod_name),
        phase: pod.status.as_ref().and_then(|s| s.phase.clone()),
    };
    if app.status.as_ref() != Some(&status) {
        ctx.client.patch_status(app, &status).await?;
    }
    Ok(Action::done())
}

async fn cleanup(app: &AppService, namespace: &str, ctx: &Context) -> ReconcileResult {
    let name = app.name_any();
    let pod_name = pod_name(&name);
    match ctx.client.get_opt::<Pod>(namespace, &pod_name).await? {
        Some(pod) if is_controlled_by(&pod.metadata, app) => {
            if pod.metadata.deletion_timestamp.is_none() {
                ctx.client
                    .delete::<Pod>(
                        namespace,
                        &pod_name,
                        &DeleteParams::default().grace_period(0),
                    )
                    .await?;
                info!(%name, pod = %pod_name, "deleting the Pod before removing the finalizer");
                record(
                    ctx,
                    app,
                    Event::normal(
                        "DeletingPod",
                        "Cleanup",
                        format!("deleting Pod {pod_name} before the AppService goes"),
                    ),
                )
                .await;
            }
            // Not done until the Pod is gone: the finalizer stays, and the Pod's deletion
            // (an event of an owned object) brings the AppService back here.
            Err(ReconcileError::transient(
                AppServiceError::PodStillTerminating {
                    pod: pod_name,
                    owner: name,
                },
            ))
        }
        _ => {
            info!(%name, "cleanup finished, removing the finalizer");
            record(
                ctx,
                app,
                Event::normal(
                    "CleanedUp",
                    "Cleanup",
                    format!("Pod {pod_name} deleted; removing finalizer {FINALIZER}"),
                ),
            )
            .await;
            Ok(Action::done())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_crd_has_the_tutorial_group_version_and_a_default_image() {
        let crd = serde_json::to_value(AppService::crd()).expect("crd json");
        assert_eq!(crd["metadata"]["name"], "appservices.app.example.com");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["name"], "v1alpha1");
        assert_eq!(version["subresources"]["status"], json!({}));
        let image =
            &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["image"];
        assert_eq!(image["default"], "busybox");
        assert_eq!(image["minLength"], 1);
    }

    #[test]
    fn the_pod_runs_busybox_sleep_and_is_controlled_by_the_appservice() {
        let mut app = sample();
        app.metadata.namespace = Some("default".into());
        app.metadata.uid = Some("uid-1".into());
        let pod = serde_json::to_value(desired_pod(&app).expect("pod")).expect("json");
        assert_eq!(pod["metadata"]["name"], "appservice-sample-pod");
        assert_eq!(pod["metadata"]["namespace"], "default");
        let container = &pod["spec"]["containers"][0];
        assert_eq!(container["image"], "busybox");
        assert_eq!(container["command"], json!(["sleep", "3600"]));
        assert_eq!(pod["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], "uid-1");
    }

    #[test]
    fn the_sample_matches_the_yaml() {
        let yaml = include_str!("../config/samples/app_v1alpha1_appservice.yaml");
        let parsed: AppService = serde_yaml_ng::from_str(yaml).expect("sample yaml");
        assert_eq!(parsed.spec, sample().spec);
        assert_eq!(parsed.metadata.name, sample().metadata.name);
    }
}
