//! Admission and conversion webhooks served by the test itself, as envtest's
//! `WebhookInstallOptions`: [`WebhookInstall`] names the webhook configurations (objects and/or
//! manifest files) and the CRDs whose conversion webhook the test serves; at start the
//! environment picks a free local port, generates a CA and a serving certificate for
//! `127.0.0.1`/`localhost` into a temporary directory (`tls.crt`, `tls.key`, the names
//! controller-runtime's certificate directory uses), points every webhook's `service` at
//! `https://127.0.0.1:<port><path>` with that CA as `caBundle`, installs the configurations
//! (and the CRDs' conversion webhooks likewise) and waits until they are visible. The test
//! then serves its webhooks there ([`WebhookServing`]); the configurations are removed on
//! [`TestEnv::shutdown`](crate::TestEnv::shutdown) and on drop.
//!
//! ```no_run
//! use korral_testenv::{TestEnv, WebhookInstall};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let env = TestEnv::builder()
//!     .crd_file("config/crd/bases/cache.example.com_memcacheds.yaml")
//!     .webhooks(WebhookInstall::new().path("config/webhook/manifests.yaml"))
//!     .start()
//!     .await?;
//! let serving = env.webhook_serving().ok_or("webhooks were asked for")?;
//! // Serve the operator's webhooks where the configurations point, e.g.
//! // korral::webhook::WebhookServer::new()
//! //     .host(serving.local_serving_host())
//! //     .port(serving.local_serving_port())
//! //     .cert_dir(serving.local_serving_cert_dir())
//! let url = serving.url("/validate-cache-example-com-v1-memcached");
//! assert!(url.starts_with("https://127.0.0.1:"));
//! # Ok(())
//! # }
//! ```

mod manifest;
mod rewrite;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use rewrite::DEFAULT_CONVERSION_PATH;

use crate::TestEnvError;

/// The host the local webhook server listens on unless told otherwise (envtest's default).
pub const DEFAULT_LOCAL_SERVING_HOST: &str = "127.0.0.1";
/// The certificate file in [`WebhookServing::local_serving_cert_dir`].
pub const CERT_FILE: &str = "tls.crt";
/// The private key file in [`WebhookServing::local_serving_cert_dir`].
pub const KEY_FILE: &str = "tls.key";
/// How long the environment waits for installed configurations to be visible by default.
pub const DEFAULT_MAX_TIME: Duration = Duration::from_secs(10);
/// How many times a CRD's conversion patch is retried when the CRD changes underneath it.
const CONVERSION_ATTEMPTS: usize = 5;
/// How long removing the configurations on drop may take.
const DROP_REMOVAL_TIMEOUT: Duration = Duration::from_secs(5);

/// The webhooks to install at start (envtest's `WebhookInstallOptions`); give it to
/// [`TestEnvBuilder::webhooks`](crate::TestEnvBuilder::webhooks).
#[derive(Debug, Clone, Default)]
pub struct WebhookInstall {
    mutating: Vec<MutatingWebhookConfiguration>,
    validating: Vec<ValidatingWebhookConfiguration>,
    paths: Vec<PathBuf>,
    conversion_crds: Vec<String>,
    host: Option<String>,
    max_time: Option<Duration>,
}

impl WebhookInstall {
    /// Nothing to install yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs a MutatingWebhookConfiguration (its `service` webhooks pointed at the local
    /// server).
    #[must_use]
    pub fn mutating(mut self, configuration: MutatingWebhookConfiguration) -> Self {
        self.mutating.push(configuration);
        self
    }

    /// Installs a ValidatingWebhookConfiguration (its `service` webhooks pointed at the local
    /// server).
    #[must_use]
    pub fn validating(mut self, configuration: ValidatingWebhookConfiguration) -> Self {
        self.validating.push(configuration);
        self
    }

    /// Installs the webhook configurations of a manifest file (YAML or JSON, several
    /// documents allowed, other kinds skipped) or of every `.yaml`/`.yml`/`.json` file of a
    /// directory, e.g. the `config/webhook/manifests.yaml` `korral generate` writes.
    #[must_use]
    pub fn path(mut self, path: impl Into<PathBuf>) -> Self {
        self.paths.push(path.into());
        self
    }

    /// Makes the CRD named `name` (`<plural>.<group>`) convert through the local server: its
    /// `spec.conversion` becomes strategy `Webhook` calling `https://<host>:<port><path>`
    /// (the path of its service reference, [`DEFAULT_CONVERSION_PATH`] when it has none).
    /// The CRD is given to the builder too (or installed before, e.g. on a durable server).
    /// Unlike the webhook configurations, the CRD is not changed back on shutdown.
    #[must_use]
    pub fn conversion_crd(mut self, name: impl Into<String>) -> Self {
        self.conversion_crds.push(name.into());
        self
    }

    /// The host the test's webhook server listens on and the configurations call
    /// (default [`DEFAULT_LOCAL_SERVING_HOST`]); it is put in the serving certificate besides
    /// `localhost`, `127.0.0.1` and `::1`.
    #[must_use]
    pub fn local_serving_host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// How long to wait until the installed configurations are visible (default
    /// [`DEFAULT_MAX_TIME`]).
    #[must_use]
    pub fn max_time(mut self, max_time: Duration) -> Self {
        self.max_time = Some(max_time);
        self
    }

    /// Reads the manifests, picks the port and writes the certificate: everything done before
    /// the server is touched.
    pub(crate) fn prepare(self) -> Result<Prepared, TestEnvError> {
        let mut configurations = Vec::new();
        for configuration in &self.mutating {
            configurations.push(to_value(configuration, manifest::MUTATING)?);
        }
        for configuration in &self.validating {
            configurations.push(to_value(configuration, manifest::VALIDATING)?);
        }
        for path in &self.paths {
            configurations.extend(manifest::read(path)?);
        }
        let host = self
            .host
            .unwrap_or_else(|| DEFAULT_LOCAL_SERVING_HOST.to_owned());
        let port = free_port(&host)?;
        let material = korral_apiserver::tls::generate(std::slice::from_ref(&host))
            .map_err(TestEnvError::WebhookCertificate)?;
        let cert_dir =
            tempfile::tempdir().map_err(|source| TestEnvError::WebhookCertificateFiles {
                path: std::env::temp_dir(),
                source,
            })?;
        for (file, pem) in [
            (CERT_FILE, &material.cert_pem),
            (KEY_FILE, &material.key_pem),
        ] {
            let path = cert_dir.path().join(file);
            std::fs::write(&path, pem)
                .map_err(|source| TestEnvError::WebhookCertificateFiles { path, source })?;
        }
        let ca_bundle =
            match serde_json::to_value(ByteString(material.ca_cert_pem.as_bytes().to_vec())) {
                Ok(Value::String(encoded)) => encoded,
                _ => String::new(),
            };
        let base = rewrite::base_url(&host, port);
        for configuration in &mut configurations {
            rewrite::point_webhooks_at(configuration, &base, &ca_bundle);
        }
        Ok(Prepared {
            configurations,
            conversion_crds: self.conversion_crds,
            max_time: self.max_time.unwrap_or(DEFAULT_MAX_TIME),
            serving: WebhookServing {
                host,
                port,
                cert_dir,
                ca_pem: material.ca_cert_pem,
                ca_bundle,
                base,
            },
        })
    }
}

/// A typed configuration as JSON with its `apiVersion` and `kind`.
fn to_value<T: Serialize>(configuration: &T, kind: &str) -> Result<Value, TestEnvError> {
    let mut value =
        serde_json::to_value(configuration).map_err(|e| TestEnvError::WebhookManifest {
            path: PathBuf::from("<object>"),
            message: format!("{kind}: {e}"),
        })?;
    value["apiVersion"] = Value::from("admissionregistration.k8s.io/v1");
    value["kind"] = Value::from(kind);
    Ok(value)
}

/// A port nothing listens on at `host` now (envtest's way: bind port 0, note it, release it).
fn free_port(host: &str) -> Result<u16, TestEnvError> {
    let listener = TcpListener::bind((host, 0)).map_err(|source| TestEnvError::WebhookPort {
        host: host.to_owned(),
        source,
    })?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|source| TestEnvError::WebhookPort {
            host: host.to_owned(),
            source,
        })
}

/// Where the test serves its webhooks: the local host, port and certificate directory the
/// installed configurations point at and trust.
#[derive(Debug)]
pub struct WebhookServing {
    host: String,
    port: u16,
    cert_dir: tempfile::TempDir,
    ca_pem: String,
    ca_bundle: String,
    base: String,
}

impl WebhookServing {
    /// The host to listen on (envtest's `LocalServingHost`).
    pub fn local_serving_host(&self) -> &str {
        &self.host
    }

    /// The port to listen on (envtest's `LocalServingPort`).
    pub fn local_serving_port(&self) -> u16 {
        self.port
    }

    /// The directory holding [`CERT_FILE`] and [`KEY_FILE`] (envtest's `LocalServingCertDir`);
    /// removed with the environment.
    pub fn local_serving_cert_dir(&self) -> &Path {
        self.cert_dir.path()
    }

    /// The PEM of the CA that signed the serving certificate (envtest's
    /// `LocalServingCAData`), the `caBundle` of every rewritten webhook.
    pub fn local_serving_ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The URL the configurations call for `path`: `https://<host>:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        if path.starts_with('/') {
            format!("{}{path}", self.base)
        } else {
            format!("{}/{path}", self.base)
        }
    }

    /// Waits until something accepts connections on the local port (the test's webhook
    /// server, started in the background).
    pub async fn wait_serving(&self, timeout: Duration) -> Result<(), TestEnvError> {
        let address = (self.host.clone(), self.port);
        crate::wait_until(
            timeout,
            format!("a webhook server on {}", self.base),
            || {
                let address = address.clone();
                async move { tokio::net::TcpStream::connect(address).await.is_ok() }
            },
        )
        .await
    }
}

/// What [`WebhookInstall::prepare`] made ready: the rewritten configurations and the local
/// serving material.
pub(crate) struct Prepared {
    configurations: Vec<Value>,
    conversion_crds: Vec<String>,
    max_time: Duration,
    serving: WebhookServing,
}

impl Prepared {
    /// Points `crd`'s conversion at the local server when it is one of the conversion CRDs
    /// (so it is installed converting through the test from the start).
    pub(crate) fn crd(&self, crd: CustomResourceDefinition) -> CustomResourceDefinition {
        let name = crd.metadata.name.as_deref().unwrap_or_default();
        if !self.conversion_crds.iter().any(|n| n == name) {
            return crd;
        }
        let Ok(mut value) = serde_json::to_value(&crd) else {
            return crd;
        };
        rewrite::point_conversion_at(&mut value, &self.serving.base, &self.serving.ca_bundle);
        serde_json::from_value(value).unwrap_or(crd)
    }

    /// Installs the configurations, points the conversion CRDs at the local server and waits
    /// until all of it is visible.
    pub(crate) async fn install(self, client: &Client) -> Result<InstalledWebhooks, TestEnvError> {
        let mut installed = InstalledWebhooks {
            serving: self.serving,
            client: client.clone(),
            configurations: Vec::new(),
        };
        for configuration in self.configurations {
            let name = configuration["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mutating = configuration["kind"] == manifest::MUTATING;
            if mutating {
                install::<MutatingWebhookConfiguration>(client, configuration).await?;
            } else {
                install::<ValidatingWebhookConfiguration>(client, configuration).await?;
            }
            installed.configurations.push(Installed { name, mutating });
        }
        let (base, ca_bundle) = (&installed.serving.base, &installed.serving.ca_bundle);
        for name in &self.conversion_crds {
            convert_through(client, name, base, ca_bundle).await?;
        }
        for configuration in &installed.configurations {
            let visible = configuration.clone();
            let client = client.clone();
            crate::wait_until(
                self.max_time,
                format!("{} {} to be visible", visible.kind(), visible.name),
                move || {
                    let (visible, client) = (visible.clone(), client.clone());
                    async move { visible.exists(&client).await }
                },
            )
            .await?;
        }
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        for name in &self.conversion_crds {
            let (crds, name, base, ca_bundle) = (&crds, name.clone(), base, ca_bundle);
            crate::wait_until(
                self.max_time,
                format!("CRD {name} to convert through {base}"),
                move || {
                    let name = name.clone();
                    async move {
                        let Ok(Some(crd)) = crds.get_opt(&name).await else {
                            return false;
                        };
                        serde_json::to_value(&crd)
                            .is_ok_and(|crd| rewrite::converts_through(&crd, base, ca_bundle))
                    }
                },
            )
            .await?;
        }
        Ok(installed)
    }
}

/// Creates `object` as a `K`, replacing one of the same name.
async fn install<K>(client: &Client, object: Value) -> Result<(), TestEnvError>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + std::fmt::Debug
        + Serialize
        + DeserializeOwned,
{
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let failed = |source| TestEnvError::InstallWebhook {
        kind: K::kind(&()).into_owned(),
        name: name.clone(),
        source,
    };
    let mut typed: K =
        serde_json::from_value(object).map_err(|e| failed(kube::Error::SerdeError(e)))?;
    let api: Api<K> = Api::all(client.clone());
    match api.create(&PostParams::default(), &typed).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => {
            let existing = api.get(&name).await.map_err(failed)?;
            typed.meta_mut().resource_version = existing.meta().resource_version.clone();
            api.replace(&name, &PostParams::default(), &typed)
                .await
                .map(drop)
                .map_err(failed)
        }
        Err(e) => Err(failed(e)),
    }
}

/// Makes the CRD `name` convert through `base` (unless it already does), retrying when it
/// changes underneath.
async fn convert_through(
    client: &Client,
    name: &str,
    base: &str,
    ca_bundle: &str,
) -> Result<(), TestEnvError> {
    let failed = |source| TestEnvError::PatchConversion {
        name: name.to_owned(),
        source,
    };
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut attempt = 0;
    loop {
        attempt += 1;
        let crd = api.get(name).await.map_err(failed)?;
        let mut value =
            serde_json::to_value(&crd).map_err(|e| failed(kube::Error::SerdeError(e)))?;
        if rewrite::converts_through(&value, base, ca_bundle) {
            return Ok(());
        }
        rewrite::point_conversion_at(&mut value, base, ca_bundle);
        let patched: CustomResourceDefinition =
            serde_json::from_value(value).map_err(|e| failed(kube::Error::SerdeError(e)))?;
        match api.replace(name, &PostParams::default(), &patched).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(status))
                if status.code == 409 && attempt < CONVERSION_ATTEMPTS => {}
            Err(e) => return Err(failed(e)),
        }
    }
}

/// One installed configuration.
#[derive(Debug, Clone)]
struct Installed {
    name: String,
    mutating: bool,
}

impl Installed {
    fn kind(&self) -> &'static str {
        if self.mutating {
            manifest::MUTATING
        } else {
            manifest::VALIDATING
        }
    }

    async fn exists(&self, client: &Client) -> bool {
        if self.mutating {
            let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
            matches!(api.get_opt(&self.name).await, Ok(Some(_)))
        } else {
            let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
            matches!(api.get_opt(&self.name).await, Ok(Some(_)))
        }
    }

    /// Deletes it (gone already is fine).
    async fn remove(&self, client: &Client) -> Result<(), TestEnvError> {
        let deleted = if self.mutating {
            let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
            api.delete(&self.name, &DeleteParams::default())
                .await
                .map(drop)
        } else {
            let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
            api.delete(&self.name, &DeleteParams::default())
                .await
                .map(drop)
        };
        match deleted {
            Ok(()) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(source) => Err(TestEnvError::RemoveWebhook {
                kind: self.kind().to_owned(),
                name: self.name.clone(),
                source,
            }),
        }
    }
}

/// Removes every configuration of `installed`, all attempted; the first error is answered.
async fn remove_all(client: &Client, installed: Vec<Installed>) -> Result<(), TestEnvError> {
    let mut first_error = None;
    for configuration in installed {
        if let Err(e) = configuration.remove(client).await {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The installed configurations and the serving material; removes the configurations when
/// dropped (see [`TestEnv::shutdown`](crate::TestEnv::shutdown) for a removal that reports
/// errors).
pub(crate) struct InstalledWebhooks {
    serving: WebhookServing,
    client: Client,
    configurations: Vec<Installed>,
}

impl InstalledWebhooks {
    /// Where the test serves its webhooks.
    pub(crate) fn serving(&self) -> &WebhookServing {
        &self.serving
    }

    /// Removes the configurations now.
    pub(crate) async fn uninstall(&mut self) -> Result<(), TestEnvError> {
        let configurations = std::mem::take(&mut self.configurations);
        remove_all(&self.client, configurations).await
    }
}

impl Drop for InstalledWebhooks {
    /// Removes the configurations while the server still runs (the environment drops this
    /// before its server): on a multi-thread runtime it waits for the removal; on a
    /// current-thread runtime it cannot wait, so the removal is only started (an in-memory
    /// server forgets everything anyway; a durable one should be stopped with `shutdown`).
    fn drop(&mut self) {
        let configurations = std::mem::take(&mut self.configurations);
        if configurations.is_empty() {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let client = self.client.clone();
        let removal = async move {
            match tokio::time::timeout(DROP_REMOVAL_TIMEOUT, remove_all(&client, configurations))
                .await
            {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(error = %e, "removing the webhook configurations"),
                Err(_) => tracing::warn!("removing the webhook configurations timed out"),
            }
        };
        match handle.runtime_flavor() {
            tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| handle.block_on(removal));
            }
            _ => {
                handle.spawn(removal);
            }
        }
    }
}
