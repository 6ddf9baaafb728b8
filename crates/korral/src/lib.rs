//! Korral, the Operator SDK for Rust.
//!
//! This facade re-exports the runtime ([`korral_runtime`]) and the kube-rs crates operators
//! need, with a [`prelude`]. A controller reconciles one object at a time from a shared cache;
//! the reconciler reads through the manager's cached client ([`KorralClient`](prelude::KorralClient):
//! cached types from memory, the rest from the API server) and writes through it:
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use korral::prelude::*;
//! use k8s_openapi::ByteString;
//! use k8s_openapi::api::core::v1::{ConfigMap, Secret};
//!
//! struct Ctx {
//!     client: KorralClient,
//! }
//!
//! async fn reconcile(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> ReconcileResult {
//!     let ns = cm.namespace().unwrap_or_default();
//!     let mut copy = Secret::default();
//!     copy.metadata.name = Some(format!("{}-copy", cm.name_any()));
//!     copy.metadata.namespace = Some(ns);
//!     // Read from the cache (Secrets are owned, so cached), written only when it changed.
//!     ctx.client
//!         .create_or_update(copy, |secret: &mut Secret| -> Result<(), ReconcileError> {
//!             set_controller_reference(cm.as_ref(), &mut secret.metadata).terminal()?;
//!             let data = cm.data.iter().flatten();
//!             let bytes = |v: &String| ByteString(v.clone().into_bytes());
//!             secret.data = Some(data.map(|(k, v)| (k.clone(), bytes(v))).collect());
//!             Ok(())
//!         })
//!         .await?;
//!     Ok(Action::done())
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut manager = Manager::from_env().await?.build()?;
//! let controller = Controller::new(manager.cache().clone(), "configmaps")
//!     .for_::<ConfigMap>(Scope::All)
//!     .owns::<Secret>()
//!     .max_concurrent_reconciles(2);
//! let ctx = Arc::new(Ctx {
//!     client: manager.cached_client().clone(),
//! });
//! manager.add_controller(controller, reconcile, ctx);
//! manager.run(korral::manager::shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

pub use k8s_openapi;
/// Webhooks (admission and conversion) served by the operator; see [`korral_runtime::webhook`].
pub use korral_runtime::webhook::{self, conversion};
pub use korral_runtime::{
    cache, client, conditions, controller, helpers, leader, manager, manifests, metrics, queue,
    reconcile, trigger,
};
pub use kube;

pub mod operator;

/// The names most operators use.
///
/// `Client` here is still [`kube::Client`] (what `Api::namespaced` and the event recorder take,
/// and what `Manager::client` returns), so existing code keeps its meaning; the client handed to
/// reconcilers, which reads from the manager's cache ([`korral_runtime::client::Client`], from
/// `Manager::cached_client`), is `KorralClient`.
pub mod prelude {
    pub use korral_runtime::cache::{Cache, Scope};
    pub use korral_runtime::client::{Client as KorralClient, ClientError, RequestCounts};
    pub use korral_runtime::controller::{
        Channel, Controller, EnqueueObject, EnqueueOwner, GenerationChanged, Kind, MapFn,
    };
    pub use korral_runtime::helpers::finalizer::Event as FinalizerEvent;
    pub use korral_runtime::helpers::owner::set_controller_reference;
    pub use korral_runtime::helpers::write::{OperationResult, WriteError};
    pub use korral_runtime::manager::Manager;
    pub use korral_runtime::manifests::Rule;
    pub use korral_runtime::reconcile::{
        Action, ObjectRef, ReconcileError, ReconcileResult, ResultExt,
    };
    pub use korral_runtime::trigger::{PeriodicTrigger, Tick};
    pub use kube::{Api, Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
}
