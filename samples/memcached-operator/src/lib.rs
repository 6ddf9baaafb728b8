//! The Memcached operator of the Operator SDK tutorial, on Korral.
//!
//! A `Memcached` (`cache.example.com/v1`) asks for `spec.size` memcached pods. The controller
//! keeps a Deployment named after the resource with that many replicas (labels
//! `app=memcached, memcached_cr=<name>`, container `memcached:1.4.36-alpine` running
//! `memcached -m=64 -o modern -v` on port 11211 named `memcached`, the resource as its
//! controller owner), puts the replica count back when someone changes it, and writes the
//! names of the pods with those labels to `status.nodes` through the status subresource.
//! Deleting the resource deletes the Deployment (garbage collection of owned objects).
//!
//! The controller owns Deployments (a change to one reconciles its owner) and watches Pods,
//! mapped to their resource by the `memcached_cr` label, so `status.nodes` follows the pods.
//!
//! ```no_run
//! use korral::prelude::*;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut manager = Manager::from_env().await?.build()?;
//! memcached_operator::add_to_manager(&mut manager, Scope::All);
//! manager.run(korral::manager::shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod webhooks;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use korral::prelude::*;
use kube::api::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tracing::info;

/// The controller's name (its metrics label and log field).
pub const CONTROLLER_NAME: &str = "memcached";
/// The memcached image of the tutorial.
pub const IMAGE: &str = "memcached:1.4.36-alpine";
/// The port memcached listens on.
pub const PORT: i32 = 11211;
/// The label naming the `Memcached` a pod belongs to.
pub const CR_LABEL: &str = "memcached_cr";

/// The desired state of a memcached cluster.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1",
    kind = "Memcached",
    plural = "memcacheds",
    namespaced,
    status = "MemcachedStatus",
    derive = "PartialEq",
    doc = "A memcached cluster: a Deployment of `size` memcached pods.",
    printcolumn(
        name = "Size",
        type_ = "integer",
        json_path = ".spec.size",
        description = "The number of memcached pods"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct MemcachedSpec {
    /// The number of memcached pods (the Deployment's replicas); unset, the defaulting webhook
    /// makes it 1 (see [`webhooks`]).
    #[serde(default)]
    #[schemars(range(min = 0), transform = without_default)]
    pub size: i32,
}

/// Leaves the schema default out: the defaulting webhook, not the API server, defaults the size.
fn without_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

/// The observed state of a memcached cluster.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct MemcachedStatus {
    /// The names of the memcached pods, sorted.
    #[serde(default)]
    pub nodes: Vec<String>,
}

/// The tutorial's sample resource (`config/samples/cache_v1_memcached.yaml`): `memcached-sample`
/// with 3 pods, namespace unset (set it before creating).
pub fn sample() -> Memcached {
    Memcached::new("memcached-sample", MemcachedSpec { size: 3 })
}

/// The labels of the Deployment and pods of the `Memcached` named `name`.
pub fn labels_for(name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app".to_owned(), "memcached".to_owned()),
        (CR_LABEL.to_owned(), name.to_owned()),
    ])
}

/// What the reconciler reads and writes with.
#[derive(Clone)]
pub struct Context {
    /// Reads Deployments and Pods from the manager's cache (the controller watches both),
    /// writes to the API server.
    pub client: KorralClient,
}

/// How many Memcacheds are reconciled at once. Each reconcile reads from the cache and writes
/// only on change, so it is short and I/O bound; two workers overlap one write's round trip
/// with the next reconcile, as the Operator SDK tutorial's default of one would not, while
/// keeping the load on a shared API server low (a pod event of any Memcached requeues it).
pub const MAX_CONCURRENT_RECONCILES: usize = 2;

/// Adds the Memcached controller to `manager`, watching Memcacheds (and their Deployments
/// and Pods) in `scope`, and declares its CRD and permissions (for `--print-manifests`).
pub fn add_to_manager(manager: &mut Manager, scope: Scope) {
    let controller = Controller::new(manager.cache().clone(), CONTROLLER_NAME)
        .for_::<Memcached>(scope)
        .owns::<Deployment>()
        .watches_kind::<Pod, _>(MapFn(memcached_of_pod))
        .writes_status()
        .max_concurrent_reconciles(MAX_CONCURRENT_RECONCILES);
    manager.declare_crd::<Memcached>();
    let ctx = Context {
        client: manager.cached_client().clone(),
    };
    manager.add_controller(controller, reconcile, Arc::new(ctx));
}

/// Registers the Memcached webhooks (defaulting and validating, see [`webhooks`]) on `server`
/// and adds it to `manager`: it serves them, and the operator's manifests get their webhook
/// configurations and Service.
pub fn add_webhooks(
    manager: &mut Manager,
    mut server: korral::webhook::WebhookServer,
) -> Result<(), korral::webhook::WebhookError> {
    webhooks::register(&mut server)?;
    server.add_to(manager)
}

/// The `Memcached` a pod belongs to, from its `memcached_cr` label.
pub fn memcached_of_pod(pod: &Pod) -> Vec<ObjectRef> {
    let name = pod.labels().get(CR_LABEL);
    match (pod.namespace(), name) {
        (Some(ns), Some(name))
            if pod.labels().get("app").map(String::as_str) == Some("memcached") =>
        {
            vec![ObjectRef::namespaced(ns, name.clone())]
        }
        _ => Vec::new(),
    }
}

/// Sets the parts of `deployment` the operator manages, leaving everything else (defaults
/// filled in by the API server, fields set by others) as it is.
fn mutate_deployment(
    memcached: &Memcached,
    deployment: &mut Deployment,
) -> Result<(), ReconcileError> {
    let name = memcached.name_any();
    let labels = labels_for(&name);
    set_controller_reference(memcached, &mut deployment.metadata).terminal()?;
    deployment
        .metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend(labels.clone());
    let spec = &mut deployment.spec;
    spec.replicas = Some(memcached.spec.size);
    // The selector is immutable: set it only on a Deployment that has none.
    if spec.selector.match_labels.is_none() && spec.selector.match_expressions.is_none() {
        spec.selector = LabelSelector {
            match_labels: Some(labels.clone()),
            match_expressions: None,
        };
    }
    let template = &mut spec.template;
    template
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend(labels);
    let pod = template.spec.get_or_insert_with(PodSpec::default);
    let index = match pod.containers.iter().position(|c| c.name == "memcached") {
        Some(index) => index,
        None => {
            pod.containers.push(Container {
                name: "memcached".to_owned(),
                ..Container::default()
            });
            pod.containers.len() - 1
        }
    };
    let container = &mut pod.containers[index];
    container.image = Some(IMAGE.to_owned());
    container.command = Some(
        ["memcached", "-m=64", "-o", "modern", "-v"]
            .map(str::to_owned)
            .to_vec(),
    );
    container.ports = Some(vec![ContainerPort {
        container_port: PORT,
        name: Some("memcached".to_owned()),
        protocol: Some("TCP".to_owned()),
        ..ContainerPort::default()
    }]);
    Ok(())
}

/// Brings the world to what `memcached` asks for; see the [crate docs](crate).
pub async fn reconcile(memcached: Arc<Memcached>, ctx: Arc<Context>) -> ReconcileResult {
    if memcached.meta().deletion_timestamp.is_some() {
        // The Deployment goes with it (garbage collection): nothing to do.
        return Ok(Action::done());
    }
    let name = memcached.name_any();
    let Some(namespace) = memcached.namespace() else {
        return Err(ReconcileError::terminal(format!(
            "Memcached {name} has no namespace"
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
    let (result, _) = ctx
        .client
        .create_or_update(default, |deployment| {
            mutate_deployment(&memcached, deployment)
        })
        .await?;
    match result {
        OperationResult::Created => info!(%namespace, %name, "created the Deployment"),
        OperationResult::Updated => info!(%namespace, %name, "updated the Deployment"),
        OperationResult::Unchanged => {}
    }

    let pods = ctx
        .client
        .list::<Pod>()
        .namespace(&namespace)
        .labels(labels_for(&name))
        .await?;
    let mut nodes: Vec<String> = pods.iter().map(|pod| pod.name_any()).collect();
    nodes.sort();
    let current = memcached.status.as_ref().map(|s| s.nodes.as_slice());
    if current != Some(nodes.as_slice()) {
        ctx.client
            .patch_status(memcached.as_ref(), &json!({ "nodes": nodes }))
            .await?;
        info!(%namespace, %name, nodes = nodes.len(), "updated status.nodes");
    }
    Ok(Action::done())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_is_the_tutorials() {
        let crd = serde_json::to_value(Memcached::crd()).expect("crd json");
        assert_eq!(crd["metadata"]["name"], "memcacheds.cache.example.com");
        assert_eq!(crd["spec"]["scope"], "Namespaced");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["name"], "v1");
        assert_eq!(version["subresources"]["status"], json!({}));
        let size =
            &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"];
        assert_eq!(size["type"], "integer");
        assert_eq!(size["format"], "int32");
        assert_eq!(size["minimum"].as_f64(), Some(0.0));
        // Optional, without a schema default: the defaulting webhook sets it.
        assert_eq!(size["default"], serde_json::Value::Null);
        let required = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"];
        assert!(
            !required
                .as_array()
                .is_some_and(|r| r.contains(&json!("size"))),
            "{required}"
        );
        assert_eq!(
            version["additionalPrinterColumns"][0]["jsonPath"],
            ".spec.size"
        );
    }

    #[test]
    fn the_sample_matches_the_yaml() {
        let yaml = include_str!("../config/samples/cache_v1_memcached.yaml");
        let parsed: Memcached = serde_yaml_ng::from_str(yaml).expect("sample yaml");
        assert_eq!(parsed.spec, sample().spec);
        assert_eq!(parsed.metadata.name, sample().metadata.name);
        assert_eq!(sample().metadata.namespace, None);
    }

    #[test]
    fn the_deployment_is_built_as_the_tutorial_says() {
        let mut memcached = sample();
        memcached.metadata.namespace = Some("default".into());
        memcached.metadata.uid = Some("uid-1".into());
        let mut deployment = Deployment {
            metadata: ObjectMeta {
                name: Some("memcached-sample".into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        };
        mutate_deployment(&memcached, &mut deployment).expect("mutate");
        let value = serde_json::to_value(&deployment).expect("json");
        assert_eq!(value["spec"]["replicas"], 3);
        let labels = json!({"app": "memcached", "memcached_cr": "memcached-sample"});
        assert_eq!(value["spec"]["selector"]["matchLabels"], labels);
        assert_eq!(value["spec"]["template"]["metadata"]["labels"], labels);
        let container = &value["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], "memcached:1.4.36-alpine");
        assert_eq!(
            container["command"],
            json!(["memcached", "-m=64", "-o", "modern", "-v"])
        );
        assert_eq!(container["ports"][0]["containerPort"], 11211);
        assert_eq!(container["ports"][0]["name"], "memcached");
        let owner = &value["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "Memcached");
        assert_eq!(owner["apiVersion"], "cache.example.com/v1");
        assert_eq!(owner["controller"], true);

        // A second pass changes nothing (no update loop against server defaults).
        let before = deployment.clone();
        mutate_deployment(&memcached, &mut deployment).expect("mutate again");
        assert_eq!(before, deployment);
    }

    #[test]
    fn pods_map_to_their_memcached_by_label() {
        let pod = |labels: &[(&str, &str)]| Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("ns".into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        assert_eq!(
            memcached_of_pod(&pod(&[("app", "memcached"), ("memcached_cr", "a")])),
            vec![ObjectRef::namespaced("ns", "a")]
        );
        assert!(memcached_of_pod(&pod(&[("memcached_cr", "a")])).is_empty());
        assert!(memcached_of_pod(&pod(&[("app", "memcached")])).is_empty());
    }
}
