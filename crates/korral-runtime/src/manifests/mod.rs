//! Manifests from code: an operator binary knows its CRDs (from the derived types) and its
//! permissions (from what its controllers watch, own and write, plus what the author declares),
//! and prints them so `korral generate` writes CRD, RBAC and deploy YAML from the compiled truth.
//!
//! Controllers record their permissions as they are built ([`Controller::for_`] and
//! [`Controller::watches`] with a [`Kind`] source: `get`, `list`, `watch`; [`Controller::owns`]:
//! also `create`, `update`, `patch`, `delete`; [`Controller::writes_status`],
//! [`Controller::uses_finalizers`], [`Controller::records_events`] and
//! [`Controller::permission`] for the rest). [`Manager::add_controller`] collects them;
//! [`Manager::declare_crd`] adds a CRD. [`print_if_requested`] handles a `--print-manifests`
//! flag:
//!
//! ```no_run
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use korral_runtime::cache::Scope;
//! use korral_runtime::controller::Controller;
//! use korral_runtime::manager::Manager;
//! use korral_runtime::manifests::{self, OperatorInfo};
//! use korral_runtime::reconcile::{Action, ReconcileResult};
//!
//! async fn reconcile(_cm: Arc<ConfigMap>, _ctx: Arc<()>) -> ReconcileResult {
//!     Ok(Action::done())
//! }
//!
//! fn setup(manager: &mut Manager) {
//!     let controller = Controller::new(manager.cache().clone(), "configmaps")
//!         .for_::<ConfigMap>(Scope::All)
//!         .records_events();
//!     manager.add_controller(controller, reconcile, Arc::new(()));
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let info = OperatorInfo::new("configmap-operator", "example.com");
//! if manifests::print_if_requested(std::env::args(), &info, |m| { setup(m); Ok(()) })? {
//!     return Ok(());
//! }
//! let mut manager = Manager::from_env().await?.build()?;
//! setup(&mut manager);
//! manager.run(korral_runtime::manager::shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```
//!
//! [`Controller::for_`]: crate::controller::ControllerBuilder::for_
//! [`Controller::watches`]: crate::controller::Controller::watches
//! [`Controller::owns`]: crate::controller::Controller::owns
//! [`Controller::writes_status`]: crate::controller::Controller::writes_status
//! [`Controller::uses_finalizers`]: crate::controller::Controller::uses_finalizers
//! [`Controller::records_events`]: crate::controller::Controller::records_events
//! [`Controller::permission`]: crate::controller::Controller::permission
//! [`Kind`]: crate::controller::Kind
//! [`Manager::add_controller`]: crate::manager::Manager::add_controller
//! [`Manager::declare_crd`]: crate::manager::Manager::declare_crd

mod rbac;
mod render;

use std::io::Write;

use http::{Request, Response};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::client::Body;
use kube::{Client, CustomResourceExt};

pub use rbac::{OWN_VERBS, Permissions, READ_VERBS, Rule};
pub use render::{ManifestFile, ManifestSet, OperatorInfo, leader_election_permissions};

use crate::manager::{Manager, ManagerError};

/// The flag [`print_if_requested`] looks for.
pub const PRINT_MANIFESTS_FLAG: &str = "--print-manifests";

/// Why producing manifests failed.
#[derive(Debug, thiserror::Error)]
pub enum ManifestsError {
    /// A CRD could not be turned into JSON.
    #[error("serializing CRD {name}")]
    SerializeCrd {
        /// The CRD's name.
        name: String,
        /// The error.
        #[source]
        source: serde_json::Error,
    },
    /// The manifest set could not be turned into JSON.
    #[error("serializing the manifests")]
    Serialize(#[source] serde_json::Error),
    /// Writing to standard output failed.
    #[error("writing the manifests to standard output")]
    Write(#[source] std::io::Error),
    /// Building the offline manager failed.
    #[error("building the manager to collect manifests")]
    BuildManager(#[source] ManagerError),
    /// The setup function failed.
    #[error("setting up the controllers to collect manifests")]
    Setup(#[source] crate::reconcile::BoxError),
}

/// An operator's CRDs and permissions.
#[derive(Clone, Debug, Default)]
pub struct Manifests {
    crds: Vec<CustomResourceDefinition>,
    permissions: Permissions,
}

impl Manifests {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the CRD of `K` (once: a second call for the same CRD name replaces the first).
    pub fn crd<K: CustomResourceExt>(&mut self) {
        self.add_crd(K::crd());
    }

    /// Adds a CRD (replacing one of the same name).
    pub fn add_crd(&mut self, crd: CustomResourceDefinition) {
        self.crds
            .retain(|existing| existing.metadata.name != crd.metadata.name);
        self.crds.push(crd);
        self.crds
            .sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    }

    /// The CRDs, sorted by name.
    pub fn crds(&self) -> &[CustomResourceDefinition] {
        &self.crds
    }

    /// The permissions.
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// The permissions, to add to.
    pub fn permissions_mut(&mut self) -> &mut Permissions {
        &mut self.permissions
    }

    /// Every manifest file of the operator described by `info`.
    pub fn render(&self, info: &OperatorInfo) -> Result<ManifestSet, ManifestsError> {
        render::render(self, info)
    }
}

/// A client that never reaches a server: every request fails. For collecting manifests
/// without a cluster. Must be called inside a Tokio runtime.
pub fn offline_client() -> Client {
    let service = tower::service_fn(|_request: Request<Body>| async {
        Err::<Response<Body>, std::io::Error>(std::io::Error::other(
            "offline client: collecting manifests, no API server",
        ))
    });
    Client::new(service, "default")
}

/// A manager on an [`offline_client`] whose cache is already shut down, so building
/// controllers on it records their permissions without starting any watch. Must be called
/// inside a Tokio runtime.
pub fn offline_manager() -> Result<Manager, ManagerError> {
    let manager = Manager::builder(offline_client()).build()?;
    manager.cache().shutdown();
    Ok(manager)
}

/// The manifests `setup` declares on an [`offline_manager`].
pub fn collect(
    setup: impl FnOnce(&mut Manager) -> Result<(), crate::reconcile::BoxError>,
) -> Result<Manifests, ManifestsError> {
    let mut manager = offline_manager().map_err(ManifestsError::BuildManager)?;
    setup(&mut manager).map_err(ManifestsError::Setup)?;
    Ok(manager.manifests().clone())
}

/// If `args` contain [`PRINT_MANIFESTS_FLAG`], collects the manifests `setup` declares (see
/// [`collect`]), prints them as one JSON [`ManifestSet`] on standard output and returns
/// `true` (the binary should then exit); otherwise returns `false` without calling `setup`.
pub fn print_if_requested<I, S>(
    args: I,
    info: &OperatorInfo,
    setup: impl FnOnce(&mut Manager) -> Result<(), crate::reconcile::BoxError>,
) -> Result<bool, ManifestsError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    if !args.into_iter().any(|a| a.as_ref() == PRINT_MANIFESTS_FLAG) {
        return Ok(false);
    }
    print(info, setup)?;
    Ok(true)
}

/// Collects the manifests `setup` declares (see [`collect`]) and prints them as one JSON
/// [`ManifestSet`] on standard output: what a binary does for `--print-manifests`.
pub fn print(
    info: &OperatorInfo,
    setup: impl FnOnce(&mut Manager) -> Result<(), crate::reconcile::BoxError>,
) -> Result<(), ManifestsError> {
    let set = collect(setup)?.render(info)?;
    let json = serde_json::to_string_pretty(&set).map_err(ManifestsError::Serialize)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{json}").map_err(ManifestsError::Write)?;
    stdout.flush().map_err(ManifestsError::Write)
}
