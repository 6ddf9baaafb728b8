//! The Memcached controller: runs a memcached Deployment of `spec.size` replicas for each
//! Memcached and lists its pods in `status.nodes`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use korral::helpers::owner::set_controller_reference;
use korral::helpers::write::{create_or_update, patch_status};
use korral::prelude::*;
use korral::reconcile::BoxError;
use kube::api::ListParams;

use crate::api::v1::Memcached;

/// What every reconcile of this controller can use.
pub struct Context {
    /// A client writing to the API server (reads come from the manager's cache).
    pub client: Client,
}

/// Adds the Memcached controller to `manager`, watching Memcacheds in `scope`.
///
/// RBAC from the builder: Memcacheds are watched, Deployments owned, Pods watched (their
/// events requeue the Memcached named in their `memcached_cr` label), the status written.
pub fn add(manager: &mut Manager, scope: &Scope) -> Result<(), BoxError> {
    let pods = manager.cache().informer::<Pod>(scope.clone())?;
    let controller = Controller::new(manager.cache().clone(), "memcached")
        .for_::<Memcached>(scope.clone())
        .owns::<Deployment>()
        .watches(Kind::new(pods), MapFn(memcached_of_pod))
        .writes_status();
    let ctx = Arc::new(Context {
        client: manager.client().clone(),
    });
    manager.add_controller(controller, reconcile, ctx);
    Ok(())
}

/// The Memcached a memcached pod belongs to.
fn memcached_of_pod(pod: &Pod) -> Vec<ObjectRef> {
    let labels = pod.labels();
    if labels.get("app").map(String::as_str) != Some("memcached") {
        return Vec::new();
    }
    match (labels.get("memcached_cr"), pod.namespace()) {
        (Some(cr), Some(ns)) => vec![ObjectRef::namespaced(ns, cr.clone())],
        _ => Vec::new(),
    }
}

/// The labels of the pods of the Memcached `name`.
fn labels_for(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_owned(), "memcached".to_owned()),
        ("memcached_cr".to_owned(), name.to_owned()),
    ])
}

/// The Deployment spec for `size` memcached pods labelled `labels`.
fn deployment_spec(size: i32, labels: &BTreeMap<String, String>) -> DeploymentSpec {
    DeploymentSpec {
        replicas: Some(size),
        selector: LabelSelector {
            match_labels: Some(labels.clone()),
            ..LabelSelector::default()
        },
        template: PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(labels.clone()),
                ..ObjectMeta::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "memcached".to_owned(),
                    image: Some("memcached:1.4.36-alpine".to_owned()),
                    command: Some(
                        ["memcached", "-m=64", "-o", "modern", "-v"]
                            .map(String::from)
                            .to_vec(),
                    ),
                    ports: Some(vec![ContainerPort {
                        container_port: 11211,
                        name: Some("memcached".to_owned()),
                        ..ContainerPort::default()
                    }]),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        },
        ..DeploymentSpec::default()
    }
}

/// Ensures the Deployment of `memcached` runs `spec.size` replicas, then records the names of
/// its pods in `status.nodes`.
pub async fn reconcile(memcached: Arc<Memcached>, ctx: Arc<Context>) -> ReconcileResult {
    let name = memcached.name_any();
    let namespace = memcached.namespace().unwrap_or_default();
    let size = memcached.spec.size;
    let labels = labels_for(&name);
    tracing::info!(%namespace, %name, size, "reconciling Memcached");

    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut metadata = ObjectMeta {
        name: Some(name.clone()),
        namespace: Some(namespace.clone()),
        labels: Some(labels.clone()),
        ..ObjectMeta::default()
    };
    set_controller_reference(memcached.as_ref(), &mut metadata)
        .map_err(ReconcileError::terminal)?;
    let default = Deployment {
        metadata,
        spec: deployment_spec(size, &labels),
        ..Deployment::default()
    };
    create_or_update(&deployments, &name, default, |deployment| {
        // Fix the replica count when it drifts from spec.size.
        deployment.spec.replicas = Some(size);
    })
    .await
    .map_err(ReconcileError::transient)?;

    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let selector = format!("app=memcached,memcached_cr={name}");
    let mut nodes: Vec<String> = pods
        .list(&ListParams::default().labels(&selector))
        .await?
        .items
        .iter()
        .map(|pod| pod.name_any())
        .collect();
    nodes.sort();
    let status = memcached.status.as_ref();
    let generation = memcached.metadata.generation;
    if status.map(|s| &s.nodes) != Some(&nodes)
        || status.and_then(|s| s.observed_generation) != generation
    {
        let memcacheds: Api<Memcached> = Api::namespaced(ctx.client.clone(), &namespace);
        let status = serde_json::json!({ "nodes": nodes, "observedGeneration": generation });
        patch_status(&memcacheds, &name, status)
            .await
            .map_err(ReconcileError::transient)?;
    }
    Ok(Action::requeue_after(Duration::from_secs(60)))
}
