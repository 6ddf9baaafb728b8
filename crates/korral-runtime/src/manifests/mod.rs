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
mod webhooks;

use std::io::Write;

use http::{Request, Response};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::client::Body;
use kube::{Client, CustomResourceExt};

pub use rbac::{OWN_VERBS, Permissions, READ_VERBS, Rule};
pub use render::{
    ManifestFile, ManifestSet, OperatorInfo, WEBHOOK_CERT_MOUNT, leader_election_permissions,
};
pub use webhooks::{
    AdmissionType, AdmissionWebhook, CERT_MANAGER_INJECT, CERT_MANAGER_SECRET, ConvertedKind,
    WEBHOOK_SERVICE_PORT, WEBHOOK_TARGET_PORT, conversion_stanza,
};

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

/// An operator's CRDs, permissions and webhooks.
#[derive(Clone, Debug, Default)]
pub struct Manifests {
    crds: Vec<CustomResourceDefinition>,
    permissions: Permissions,
    webhooks: Vec<AdmissionWebhook>,
    conversions: Vec<ConvertedKind>,
    cert_manager: bool,
}

impl Manifests {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the CRD of `K`; a CRD of the same name (another version of the kind) is merged
    /// with it (see [`Self::add_crd`]).
    pub fn crd<K: CustomResourceExt>(&mut self) {
        self.add_crd(K::crd());
    }

    /// Adds a CRD. When one of the same name is declared already, the two merge into one CRD
    /// with the versions of both (a version declared again replaces the earlier one), sorted
    /// by name as controller-gen writes them; the storage version stays the first declared
    /// one, unless a conversion hub is registered for the kind (see [`Self::add_conversion`]):
    /// the hub is then the storage version.
    pub fn add_crd(&mut self, mut crd: CustomResourceDefinition) {
        if let Some(existing) = self
            .crds
            .iter_mut()
            .find(|existing| existing.metadata.name == crd.metadata.name)
        {
            let storage = existing
                .spec
                .versions
                .iter()
                .find(|v| v.storage)
                .map(|v| v.name.clone());
            for version in crd.spec.versions.drain(..) {
                existing.spec.versions.retain(|v| v.name != version.name);
                existing.spec.versions.push(version);
            }
            existing.spec.versions.sort_by(|a, b| a.name.cmp(&b.name));
            let storage =
                storage.or_else(|| existing.spec.versions.first().map(|v| v.name.clone()));
            for version in &mut existing.spec.versions {
                version.storage = Some(&version.name) == storage.as_ref();
            }
            return;
        }
        self.crds.push(crd);
        self.crds
            .sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    }

    /// Adds an admission webhook (one of the same path and type replaces it).
    pub fn add_webhook(&mut self, webhook: AdmissionWebhook) {
        self.webhooks
            .retain(|w| !(w.path == webhook.path && w.admission == webhook.admission));
        self.webhooks.push(webhook);
    }

    /// The admission webhooks, in the order added.
    pub fn webhooks(&self) -> &[AdmissionWebhook] {
        &self.webhooks
    }

    /// Records that the operator's `/convert` webhook converts `kind`: its CRD gets the
    /// conversion stanza and the hub version is its storage version.
    pub fn add_conversion(&mut self, kind: ConvertedKind) {
        self.conversions
            .retain(|c| !(c.group == kind.group && c.kind == kind.kind));
        self.conversions.push(kind);
    }

    /// The converted kinds.
    pub fn conversions(&self) -> &[ConvertedKind] {
        &self.conversions
    }

    /// Declares that cert-manager issues the webhook serving certificate (kubebuilder's
    /// `config/certmanager`): the manager mounts its Secret ([`CERT_MANAGER_SECRET`]) and the
    /// webhook configurations and converted CRDs get cert-manager's CA injection annotation
    /// (`cert-manager.io/inject-ca-from`), instead of the operator managing the certificate.
    pub fn use_cert_manager(&mut self) {
        self.cert_manager = true;
    }

    /// Whether cert-manager issues the webhook certificate (see [`Self::use_cert_manager`]).
    pub fn cert_manager(&self) -> bool {
        self.cert_manager
    }

    /// Whether the operator serves any webhook (admission or conversion).
    pub fn serves_webhooks(&self) -> bool {
        !self.webhooks.is_empty() || !self.conversions.is_empty()
    }

    /// `crd` as rendered: for a converted kind, the hub is the only storage version and
    /// `spec.conversion` points at the operator's `/convert` webhook.
    fn crd_with_conversion(
        &self,
        crd: &CustomResourceDefinition,
        info: &OperatorInfo,
    ) -> CustomResourceDefinition {
        let mut crd = crd.clone();
        let converted = self
            .conversions
            .iter()
            .find(|c| c.group == crd.spec.group && c.kind == crd.spec.names.kind);
        if let Some(converted) = converted {
            if crd
                .spec
                .versions
                .iter()
                .any(|v| v.name == converted.hub_version)
            {
                for version in &mut crd.spec.versions {
                    version.storage = version.name == converted.hub_version;
                }
            }
            crd.spec.conversion = Some(conversion_stanza(info, crate::webhook::CONVERT_PATH));
            if self.cert_manager {
                crd.metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(
                        CERT_MANAGER_INJECT.to_owned(),
                        info.serving_certificate_ref(),
                    );
            }
        }
        crd
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

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};

    mod v1 {
        use super::*;
        /// Version 1.
        #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
        #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
        pub struct WidgetSpec {
            /// The size.
            pub size: i32,
        }
    }

    mod v2 {
        use super::*;
        /// Version 2.
        #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
        #[kube(group = "example.com", version = "v2", kind = "Widget", namespaced)]
        pub struct WidgetSpec {
            /// The replicas.
            pub replicas: i32,
        }
    }

    fn info() -> OperatorInfo {
        OperatorInfo::new("widget-operator", "example.com")
    }

    fn versions(crd: &CustomResourceDefinition) -> Vec<(String, bool, bool)> {
        crd.spec
            .versions
            .iter()
            .map(|v| (v.name.clone(), v.served, v.storage))
            .collect()
    }

    fn rendered_crd(manifests: &Manifests) -> Value {
        let set = manifests.render(&info()).expect("render");
        let file = set
            .files
            .iter()
            .find(|f| f.path == "config/crd/bases/example.com_widgets.yaml")
            .expect("the CRD file");
        assert_eq!(file.objects.len(), 1);
        file.objects[0].clone()
    }

    #[test]
    fn versions_of_a_kind_merge_into_one_crd_with_one_storage_version() {
        let mut manifests = Manifests::new();
        manifests.crd::<v2::Widget>();
        manifests.crd::<v1::Widget>();
        manifests.crd::<v1::Widget>();
        assert_eq!(manifests.crds().len(), 1);
        assert_eq!(
            versions(&manifests.crds()[0]),
            [
                ("v1".to_owned(), true, false),
                ("v2".to_owned(), true, true)
            ],
            "the first declared version stays the storage version"
        );
        let crd = rendered_crd(&manifests);
        assert_eq!(crd["spec"]["conversion"], Value::Null);
        assert!(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"].is_object());
        assert!(crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"].is_object());
    }

    #[test]
    fn a_converted_kind_stores_its_hub_and_converts_through_the_webhook() {
        let mut manifests = Manifests::new();
        manifests.crd::<v1::Widget>();
        manifests.crd::<v2::Widget>();
        manifests.add_conversion(ConvertedKind {
            group: "example.com".to_owned(),
            kind: "Widget".to_owned(),
            hub_version: "v2".to_owned(),
        });
        let crd = rendered_crd(&manifests);
        let storage: Vec<(&str, bool)> = crd["spec"]["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .map(|v| (v["name"].as_str().unwrap_or_default(), v["storage"] == true))
            .collect();
        assert_eq!(storage, [("v1", false), ("v2", true)]);
        assert_eq!(
            crd["spec"]["conversion"],
            json!({
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"service": {
                        "name": "widget-operator-webhook-service",
                        "namespace": "widget-operator-system",
                        "path": "/convert",
                        "port": 443,
                    }},
                    "conversionReviewVersions": ["v1"],
                },
            })
        );
        let set = manifests.render(&info()).expect("render");
        assert!(
            set.files
                .iter()
                .any(|f| f.path == "config/webhook/service.yaml"),
            "the conversion webhook needs the Service"
        );
        assert!(
            !set.files
                .iter()
                .any(|f| f.path == "config/webhook/manifests.yaml"),
            "no admission webhook"
        );
        assert_eq!(crd["metadata"]["annotations"], Value::Null);
        manifests.use_cert_manager();
        assert_eq!(
            rendered_crd(&manifests)["metadata"]["annotations"],
            json!({"cert-manager.io/inject-ca-from": "widget-operator-system/widget-operator-serving-cert"})
        );
    }

    #[test]
    fn webhooks_add_the_server_port_and_a_certificate_volume_to_the_manager() {
        let deployment = |manifests: &Manifests| {
            let set = manifests.render(&info()).expect("render");
            let file = set
                .files
                .iter()
                .find(|f| f.path == "config/manager/manager.yaml")
                .expect("manager.yaml");
            file.objects[1]["spec"]["template"]["spec"].clone()
        };
        let plain = deployment(&Manifests::new());
        assert_eq!(plain["volumes"], Value::Null);
        assert_eq!(
            plain["containers"][0]["ports"].as_array().map(Vec::len),
            Some(2)
        );

        let mut manifests = Manifests::new();
        manifests.add_webhook(AdmissionWebhook::of::<v1::Widget>(
            AdmissionType::Validating,
            "/validate-example-com-v1-widget",
        ));
        let pod = deployment(&manifests);
        assert_eq!(
            pod["containers"][0]["ports"][2],
            json!({"name": "webhook-server", "containerPort": 9443, "protocol": "TCP"})
        );
        assert_eq!(
            pod["containers"][0]["volumeMounts"],
            json!([{"name": "webhook-certs", "mountPath": "/tmp/k8s-webhook-server/serving-certs"}])
        );
        assert_eq!(
            pod["volumes"],
            json!([{"name": "webhook-certs", "emptyDir": {}}])
        );

        manifests.use_cert_manager();
        let pod = deployment(&manifests);
        assert_eq!(
            pod["volumes"],
            json!([{"name": "webhook-certs", "secret": {"secretName": "webhook-server-cert"}}])
        );
    }

    #[test]
    fn a_webhook_registered_twice_is_listed_once() {
        let mut manifests = Manifests::new();
        let webhook = AdmissionWebhook::of::<v1::Widget>(AdmissionType::Mutating, "/m");
        manifests.add_webhook(webhook.clone());
        manifests.add_webhook(webhook.clone().operations(["CREATE"]));
        assert_eq!(manifests.webhooks().len(), 1);
        assert_eq!(manifests.webhooks()[0].operations, ["CREATE"]);
    }

    /// Sets nothing (the registration is what is under test).
    struct NoDefaults;

    impl crate::webhook::Defaulter<v1::Widget> for NoDefaults {
        async fn default(
            &self,
            _request: &kube::core::admission::AdmissionRequest<kube::core::DynamicObject>,
            _object: &mut v1::Widget,
        ) -> Result<(), crate::webhook::Denial> {
            Ok(())
        }
    }

    impl crate::webhook::conversion::Hub for v2::Widget {}
    impl From<v1::Widget> for v2::Widget {
        fn from(w: v1::Widget) -> Self {
            Self {
                metadata: w.metadata,
                spec: v2::WidgetSpec {
                    replicas: w.spec.size,
                },
            }
        }
    }
    impl From<v2::Widget> for v1::Widget {
        fn from(w: v2::Widget) -> Self {
            Self {
                metadata: w.metadata,
                spec: v1::WidgetSpec {
                    size: w.spec.replicas,
                },
            }
        }
    }

    #[tokio::test]
    async fn the_webhook_server_declares_what_it_serves_to_the_manager() {
        use crate::webhook::WebhookServer;
        use crate::webhook::conversion::{ConversionWebhook, HubAndSpokes};
        let manifests = collect(|manager| {
            manager.declare_crd::<v1::Widget>();
            manager.declare_crd::<v2::Widget>();
            let mut server = WebhookServer::new();
            server.defaulter::<v1::Widget, _>(NoDefaults)?;
            server.conversion(
                ConversionWebhook::new()
                    .kind(HubAndSpokes::<v2::Widget>::new().spoke::<v1::Widget>())?,
            )?;
            server.add_to(manager)?;
            Ok(())
        })
        .expect("collect");
        assert_eq!(
            manifests.webhooks(),
            [AdmissionWebhook {
                admission: AdmissionType::Mutating,
                group: "example.com".to_owned(),
                version: "v1".to_owned(),
                kind: "Widget".to_owned(),
                resource: "widgets".to_owned(),
                path: "/mutate-example-com-v1-widget".to_owned(),
                operations: vec!["CREATE".to_owned(), "UPDATE".to_owned()],
            }]
        );
        assert_eq!(
            manifests.conversions(),
            [ConvertedKind {
                group: "example.com".to_owned(),
                kind: "Widget".to_owned(),
                hub_version: "v2".to_owned(),
            }]
        );
        let set = manifests.render(&info()).expect("render");
        let webhooks = set
            .files
            .iter()
            .find(|f| f.path == "config/webhook/manifests.yaml")
            .expect("config/webhook/manifests.yaml");
        assert_eq!(
            webhooks.objects[0]["webhooks"][0]["clientConfig"]["service"]["path"],
            "/mutate-example-com-v1-widget"
        );
        assert_eq!(
            rendered_crd(&manifests)["spec"]["conversion"]["strategy"],
            "Webhook"
        );
    }
}
