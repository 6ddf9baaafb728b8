//! The HelloApp operator, on Korral.
//!
//! A `HelloApp` (`apps.example.com/v1`) asks for `spec.size` replicas of `spec.image`. The
//! controller keeps a Deployment named after the resource (labels
//! `app.kubernetes.io/name=helloapp, app.kubernetes.io/instance=<name>`, one container `hello`
//! running the image, the resource as its controller owner), puts the image and replica count
//! back when they drift, and copies the Deployment's `replicas` and `readyReplicas` into the
//! status (it owns Deployments, so their status changes reconcile the HelloApp). The scale
//! subresource maps to `spec.size`, so `kubectl scale helloapp/<name> --replicas N` works.
//!
//! ```no_run
//! use korral::prelude::*;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut manager = Manager::from_env().await?.build()?;
//! helloapp_operator::add_to_manager(&mut manager, Scope::All);
//! manager.run(korral::manager::shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod conversion;
pub mod v2;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use korral::prelude::*;
use kube::api::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tracing::info;

/// The controller's name (its metrics label and log field).
pub const CONTROLLER_NAME: &str = "helloapp";
/// The name of the container running the image.
pub const CONTAINER: &str = "hello";

/// The desired state of a HelloApp.
// Printer columns of the same type look like a duplicated attribute to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.example.com",
    version = "v1",
    kind = "HelloApp",
    namespaced,
    status = "HelloAppStatus",
    derive = "PartialEq",
    doc = "A hello application: a Deployment running `image` with `size` replicas.",
    scale(
        spec_replicas_path = ".spec.size",
        status_replicas_path = ".status.replicas"
    ),
    printcolumn(
        name = "Image",
        type_ = "string",
        json_path = ".spec.image",
        description = "The image"
    ),
    printcolumn(
        name = "Size",
        type_ = "integer",
        json_path = ".spec.size",
        description = "Desired replicas"
    ),
    printcolumn(
        name = "Ready",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "Ready replicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HelloAppSpec {
    /// The container image to run.
    #[schemars(length(min = 1))]
    pub image: String,
    /// How many replicas to run.
    #[schemars(range(min = 0))]
    pub size: i32,
}

/// The observed state of a HelloApp, from its Deployment.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HelloAppStatus {
    /// Pods of the Deployment (its `status.replicas`).
    #[serde(default)]
    pub replicas: i32,
    /// Ready pods of the Deployment (its `status.readyReplicas`).
    #[serde(default)]
    pub ready_replicas: i32,
}

/// The sample resource (`config/samples/apps_v1_helloapp.yaml`), namespace unset.
pub fn sample() -> HelloApp {
    HelloApp::new(
        "helloapp-sample",
        HelloAppSpec {
            image: "nginxdemos/hello:plain-text".to_owned(),
            size: 2,
        },
    )
}

/// The labels of the Deployment and pods of the HelloApp `name`.
pub fn labels_for(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), "helloapp".to_owned()),
        ("app.kubernetes.io/instance".to_owned(), name.to_owned()),
    ])
}

/// What the reconciler works with.
#[derive(Clone)]
pub struct Context {
    /// Reads the Deployments from the manager's cache (the controller owns them, so they are
    /// cached), writes to the API server.
    pub client: KorralClient,
}

/// How many HelloApps are reconciled at once. A reconcile is I/O bound: it reads the
/// Deployment from the cache and, when something changed, writes the Deployment and the
/// status (a round trip each, milliseconds on a real cluster). Four workers keep the API server
/// busy without flooding it (client-go's sample-controller runs two; kube-rs' default is
/// unbounded); the work queue never runs one HelloApp twice at once.
pub const MAX_CONCURRENT_RECONCILES: usize = 4;

/// Serves the HelloApp conversion webhook on `server` (v2 is the hub and storage version, v1
/// converts through it, see [`conversion`]), declares the v2 CRD (merged with v1 into one CRD
/// with the conversion stanza) and adds the server to `manager`.
pub fn add_webhooks(
    manager: &mut Manager,
    mut server: korral::webhook::WebhookServer,
) -> Result<(), korral::reconcile::BoxError> {
    manager.declare_crd::<v2::HelloApp>();
    server.conversion(conversion::webhook()?)?;
    server.add_to(manager)?;
    Ok(())
}

/// Adds the HelloApp controller to `manager`, watching HelloApps (and their Deployments) in
/// `scope`, and declares its CRD and permissions (for `--print-manifests`).
pub fn add_to_manager(manager: &mut Manager, scope: Scope) {
    let controller = Controller::new(manager.cache().clone(), CONTROLLER_NAME)
        .for_::<HelloApp>(scope)
        .owns::<Deployment>()
        .writes_status()
        .max_concurrent_reconciles(MAX_CONCURRENT_RECONCILES);
    manager.declare_crd::<HelloApp>();
    let ctx = Context {
        client: manager.cached_client().clone(),
    };
    manager.add_controller(controller, reconcile, Arc::new(ctx));
}

/// Sets the parts of `deployment` the operator manages, leaving the rest (server defaults,
/// fields of others) alone.
fn mutate_deployment(app: &HelloApp, deployment: &mut Deployment) -> Result<(), ReconcileError> {
    let labels = labels_for(&app.name_any());
    set_controller_reference(app, &mut deployment.metadata).terminal()?;
    deployment
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend(labels.clone());
    let spec = &mut deployment.spec;
    spec.replicas = Some(app.spec.size);
    // The selector is immutable: set it only on a Deployment that has none.
    if spec.selector.match_labels.is_none() && spec.selector.match_expressions.is_none() {
        spec.selector = LabelSelector {
            match_labels: Some(labels.clone()),
            match_expressions: None,
        };
    }
    spec.template
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend(labels);
    let pod = spec.template.spec.get_or_insert_with(PodSpec::default);
    match pod.containers.iter_mut().find(|c| c.name == CONTAINER) {
        Some(container) => container.image = Some(app.spec.image.clone()),
        None => pod.containers.push(Container {
            name: CONTAINER.to_owned(),
            image: Some(app.spec.image.clone()),
            ..Container::default()
        }),
    }
    Ok(())
}

/// Brings the Deployment to what `app` asks for and reports its readiness; see the
/// [crate docs](crate).
pub async fn reconcile(app: Arc<HelloApp>, ctx: Arc<Context>) -> ReconcileResult {
    if app.metadata.deletion_timestamp.is_some() {
        return Ok(Action::done());
    }
    let name = app.name_any();
    let Some(namespace) = app.namespace() else {
        return Err(ReconcileError::terminal(format!(
            "HelloApp {name} has no namespace"
        )));
    };
    let default = Deployment {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        ..Deployment::default()
    };
    // Read from the cache; on failure (another controller owns the Deployment) nothing is
    // written and the error comes back as is.
    let (result, stored) = ctx
        .client
        .create_or_update(default, |deployment| mutate_deployment(&app, deployment))
        .await?;
    match result {
        OperationResult::Created => info!(%namespace, %name, "created the Deployment"),
        OperationResult::Updated => info!(%namespace, %name, "updated the Deployment"),
        OperationResult::Unchanged => {}
    }

    let deployment_status = stored.status.unwrap_or_default();
    let status = HelloAppStatus {
        replicas: deployment_status.replicas.unwrap_or(0),
        ready_replicas: deployment_status.ready_replicas.unwrap_or(0),
    };
    if app.status.as_ref() != Some(&status) {
        ctx.client.patch_status(app.as_ref(), &status).await?;
    }
    Ok(Action::done())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_has_validation_columns_and_scale() {
        let crd = serde_json::to_value(HelloApp::crd()).expect("crd json");
        assert_eq!(crd["metadata"]["name"], "helloapps.apps.example.com");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(
            version["subresources"]["scale"]["specReplicasPath"],
            ".spec.size"
        );
        let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
        assert_eq!(spec["size"]["minimum"].as_f64(), Some(0.0));
        assert_eq!(spec["image"]["minLength"], 1);
        assert_eq!(
            version["additionalPrinterColumns"][2]["jsonPath"],
            ".status.readyReplicas"
        );
    }

    #[test]
    fn the_deployment_runs_the_image_and_a_second_pass_changes_nothing() {
        let mut app = sample();
        app.metadata.namespace = Some("default".into());
        app.metadata.uid = Some("uid-1".into());
        let mut deployment = Deployment {
            metadata: ObjectMeta {
                name: Some("helloapp-sample".into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        };
        mutate_deployment(&app, &mut deployment).expect("mutate");
        let value = serde_json::to_value(&deployment).expect("json");
        assert_eq!(value["spec"]["replicas"], 2);
        assert_eq!(
            value["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginxdemos/hello:plain-text"
        );
        assert_eq!(
            value["spec"]["selector"]["matchLabels"]["app.kubernetes.io/instance"],
            "helloapp-sample"
        );
        let before = deployment.clone();
        mutate_deployment(&app, &mut deployment).expect("again");
        assert_eq!(before, deployment);
    }

    #[test]
    fn the_sample_matches_the_yaml() {
        let yaml = include_str!("../config/samples/apps_v1_helloapp.yaml");
        let parsed: HelloApp = serde_yaml_ng::from_str(yaml).expect("sample yaml");
        assert_eq!(parsed.spec, sample().spec);
        assert_eq!(parsed.metadata.name, sample().metadata.name);
    }
}
