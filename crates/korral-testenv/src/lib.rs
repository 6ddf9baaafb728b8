//! Test environment: an in-process Kubernetes API server for operator tests.
//!
//! [`TestEnv`] starts the embedded `korral-apiserver` in memory on a random port in a few
//! milliseconds, installs CRDs from kube-derived Rust types or YAML files, and hands out a
//! `kube::Client` and a kubeconfig path (for `kubectl`). The server stops when the
//! environment is dropped. With [`TestEnvBuilder::webhooks`] it also installs the operator's
//! admission and conversion webhooks pointing at a local port with a generated certificate,
//! where the test serves them (see [`WebhookInstall`]).
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//! use korral_testenv::TestEnv;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let env = TestEnv::start().await?;
//! let configmaps: Api<ConfigMap> = Api::namespaced(env.client(), "default");
//! assert!(configmaps.list(&Default::default()).await?.items.is_empty());
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
pub use korral_apiserver::AuthorizationMode;
use korral_apiserver::{ApiServer, ServerConfig};
pub use korral_apiserver::{FaultConfig, FaultLatency, FaultRule, FaultStats, Faults};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, CustomResourceExt};

mod webhooks;

pub use webhooks::{
    CERT_FILE, DEFAULT_CONVERSION_PATH, DEFAULT_LOCAL_SERVING_HOST, DEFAULT_MAX_TIME, KEY_FILE,
    WebhookInstall, WebhookServing,
};

/// Why a test environment step failed.
#[derive(Debug, thiserror::Error)]
pub enum TestEnvError {
    /// Starting the API server failed.
    #[error("starting the API server: {0}")]
    Start(#[from] korral_apiserver::StartError),
    /// The fault configuration was refused (the message names the field).
    #[error("setting faults: {0}")]
    Faults(#[from] korral_apiserver::FaultConfigError),
    /// Creating the temporary directory or writing the kubeconfig failed.
    #[error("preparing the kubeconfig: {0}")]
    Kubeconfig(#[source] std::io::Error),
    /// Building a kube client from the kubeconfig failed.
    #[error("building a client: {0}")]
    Client(String),
    /// Reading or parsing a CRD file failed.
    #[error("reading CRD {path}: {message}")]
    CrdFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The API server rejected a CRD.
    #[error("installing CRD {name}: {source}")]
    InstallCrd {
        /// The CRD's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// A manifest could not be read or was rejected.
    #[error("installing manifests from {source_name}: {message}")]
    Manifest {
        /// The file (or `<string>`).
        source_name: String,
        /// What went wrong.
        message: String,
    },
    /// A wait ran out of time.
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(Duration, String),
    /// Reading a webhook manifest (a file or directory given to [`WebhookInstall::path`], or
    /// a configuration object) failed.
    #[error("reading webhook manifest {path}: {message}")]
    WebhookManifest {
        /// The file (`<object>` for a configuration given as an object).
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Picking a free local port for the webhook server failed.
    #[error("picking a free port on {host} for the webhook server: {source}")]
    WebhookPort {
        /// The local serving host.
        host: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Generating the webhook server's CA and serving certificate failed.
    #[error("generating the webhook serving certificate: {0}")]
    WebhookCertificate(#[source] korral_apiserver::tls::TlsError),
    /// Writing the webhook server's certificate directory failed.
    #[error("writing the webhook serving certificate {path}: {source}")]
    WebhookCertificateFiles {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The API server rejected a webhook configuration.
    #[error("installing {kind} {name}: {source}")]
    InstallWebhook {
        /// `MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration`.
        kind: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Pointing a CRD's conversion webhook at the local server failed (or the CRD is missing).
    #[error("patching the conversion webhook of CRD {name}: {source}")]
    PatchConversion {
        /// The CRD's name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Removing an installed webhook configuration failed.
    #[error("removing {kind} {name}: {source}")]
    RemoveWebhook {
        /// `MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration`.
        kind: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// Options for [`TestEnv`].
#[derive(Default)]
pub struct TestEnvBuilder {
    crds: Vec<CustomResourceDefinition>,
    crd_files: Vec<PathBuf>,
    config: Option<ServerConfig>,
    authorization: Option<AuthorizationMode>,
    simulation: Option<bool>,
    faults: Option<FaultConfig>,
    webhooks: Option<WebhookInstall>,
}

impl TestEnvBuilder {
    /// Installs the CRD of a kube-derived custom resource type at start.
    pub fn crd<K: CustomResourceExt>(mut self) -> Self {
        self.crds.push(K::crd());
        self
    }

    /// Installs the CRDs in a YAML file (one or more documents) at start.
    pub fn crd_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.crd_files.push(path.into());
        self
    }

    /// Uses a custom server configuration (e.g. durable storage).
    pub fn server_config(mut self, config: ServerConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Simulates the workload controllers (Deployments get ReplicaSets and Pods, Pods turn
    /// Ready, Services get Endpoints, Jobs complete); off unless asked for.
    pub fn simulation(mut self, on: bool) -> Self {
        self.simulation = Some(on);
        self
    }

    /// How requests are authorized: [`AuthorizationMode::Rbac`] evaluates Roles,
    /// ClusterRoles and their bindings (the environment's own client stays admin; use
    /// [`TestEnv::client_as_service_account`] or [`TestEnv::client_as_user`] for restricted
    /// clients). Allow-all unless asked for.
    pub fn authorization(mut self, mode: AuthorizationMode) -> Self {
        self.authorization = Some(mode);
        self
    }

    /// Injects faults from the start (latency, errors, dropped watches, 410 Expired); change
    /// them later with [`TestEnv::faults`]. CRDs given to the builder are installed before the
    /// faults apply, so setup is not disturbed.
    pub fn faults(mut self, faults: FaultConfig) -> Self {
        self.faults = Some(faults);
        self
    }

    /// Installs webhooks served by the test (envtest's `WebhookInstallOptions`): after the
    /// CRDs, the configurations of `install` pointing at a free local port with a generated
    /// certificate; [`TestEnv::webhook_serving`] tells where to serve them. A second call
    /// replaces the first.
    pub fn webhooks(mut self, install: WebhookInstall) -> Self {
        self.webhooks = Some(install);
        self
    }

    /// Starts the environment.
    pub async fn start(self) -> Result<TestEnv, TestEnvError> {
        let webhooks = self.webhooks.map(WebhookInstall::prepare).transpose()?;
        let dir = tempfile::tempdir().map_err(TestEnvError::Kubeconfig)?;
        let kubeconfig_path = dir.path().join("kubeconfig");
        let mut config = self.config.unwrap_or_else(ServerConfig::in_memory);
        if let Some(on) = self.simulation {
            config.simulation = on;
        }
        if let Some(mode) = self.authorization {
            config.authorization = mode;
        }
        config.kubeconfig = Some(kubeconfig_path.clone());
        let server = ApiServer::start(config).await?;
        let client = client_for(server.kubeconfig_yaml()).await?;
        let mut env = TestEnv {
            webhooks: None,
            server,
            client,
            kubeconfig_path,
            _dir: dir,
        };
        let mut crds = self.crds;
        for file in &self.crd_files {
            crds.extend(read_crd_file(file)?);
        }
        for crd in crds {
            let crd = match &webhooks {
                Some(webhooks) => webhooks.crd(crd),
                None => crd,
            };
            env.install_crd(crd).await?;
        }
        if let Some(webhooks) = webhooks {
            env.webhooks = Some(webhooks.install(&env.client).await?);
        }
        if let Some(faults) = self.faults {
            env.faults().set(faults)?;
        }
        Ok(env)
    }
}

async fn client_for(kubeconfig_yaml: &str) -> Result<Client, TestEnvError> {
    let kubeconfig =
        Kubeconfig::from_yaml(kubeconfig_yaml).map_err(|e| TestEnvError::Client(e.to_string()))?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| TestEnvError::Client(e.to_string()))?;
    Client::try_from(config).map_err(|e| TestEnvError::Client(e.to_string()))
}

/// A running in-process API server with a client. Stops on drop (after removing the webhook
/// configurations it installed).
pub struct TestEnv {
    // Dropped first: removing the configurations needs the server.
    webhooks: Option<webhooks::InstalledWebhooks>,
    server: ApiServer,
    client: Client,
    kubeconfig_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl TestEnv {
    /// The server's fault injector: set or clear rules at run time, read what was injected.
    pub fn faults(&self) -> Faults {
        self.server.faults()
    }

    /// Starts an in-memory server on a random port.
    pub async fn start() -> Result<Self, TestEnvError> {
        Self::builder().start().await
    }

    /// Options: CRDs to install, server configuration.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// A client for the server (cheap to clone).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// A new client built from the kubeconfig (a separate connection pool).
    pub async fn new_client(&self) -> Result<Client, TestEnvError> {
        client_for(self.server.kubeconfig_yaml()).await
    }

    /// A token for a service account from the server's TokenRequest API (valid one hour),
    /// creating the ServiceAccount first when it does not exist (its namespace must).
    pub async fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<String, TestEnvError> {
        use k8s_openapi::api::authentication::v1::TokenRequest;
        use k8s_openapi::api::core::v1::ServiceAccount;
        let api: Api<ServiceAccount> = Api::namespaced(self.client(), namespace);
        let sa = ServiceAccount {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        let failed = |e: kube::Error| {
            TestEnvError::Client(format!("service account {namespace}/{name}: {e}"))
        };
        match api.create(&PostParams::default(), &sa).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(e) => return Err(failed(e)),
        }
        let issued = api
            .create_token_request(name, &PostParams::default(), &TokenRequest::default())
            .await
            .map_err(failed)?;
        // Read through JSON: `status.token` is optional in some Kubernetes versions' types and
        // required in others, and the user's binary picks the version.
        issued
            .status
            .and_then(|s| serde_json::to_value(s).ok())
            .and_then(|s| s.get("token")?.as_str().map(str::to_owned))
            .filter(|t| !t.is_empty())
            .ok_or_else(|| TestEnvError::Client("TokenRequest returned no token".to_string()))
    }

    /// A client that authenticates as a service account with a real token (see
    /// [`TestEnv::service_account_token`]): under RBAC it can do what the account's bindings
    /// allow and nothing else.
    pub async fn client_as_service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Client, TestEnvError> {
        let token = self.service_account_token(namespace, name).await?;
        client_for(&korral_apiserver::kubeconfig::render(
            self.server.url(),
            self.server.ca_pem(),
            &token,
            "korral",
        ))
        .await
    }

    /// A client that acts as `user` in `groups` (plus `system:authenticated`), through
    /// impersonation headers sent with the admin token.
    pub async fn client_as_user(
        &self,
        user: &str,
        groups: &[&str],
    ) -> Result<Client, TestEnvError> {
        let kubeconfig = Kubeconfig::from_yaml(self.server.kubeconfig_yaml())
            .map_err(|e| TestEnvError::Client(e.to_string()))?;
        let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| TestEnvError::Client(e.to_string()))?;
        config.auth_info.impersonate = Some(user.to_string());
        if !groups.is_empty() {
            config.auth_info.impersonate_groups =
                Some(groups.iter().map(|g| g.to_string()).collect());
        }
        Client::try_from(config).map_err(|e| TestEnvError::Client(e.to_string()))
    }

    /// Path of a kubeconfig for this server (for `kubectl --kubeconfig`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// The server itself.
    pub fn server(&self) -> &ApiServer {
        &self.server
    }

    /// Where the test serves the webhooks given to [`TestEnvBuilder::webhooks`] (`None`
    /// without them): start the webhook server on its host, port and certificate directory.
    pub fn webhook_serving(&self) -> Option<&WebhookServing> {
        self.webhooks
            .as_ref()
            .map(webhooks::InstalledWebhooks::serving)
    }

    /// Removes the webhook configurations installed at start (see
    /// [`TestEnvBuilder::webhooks`]) now; shutdown and drop do it too. The serving
    /// certificate stays until the environment is dropped.
    pub async fn uninstall_webhooks(&mut self) -> Result<(), TestEnvError> {
        match &mut self.webhooks {
            Some(webhooks) => webhooks.uninstall().await,
            None => Ok(()),
        }
    }

    /// Removes the installed webhook configurations, stops the server and waits until it has
    /// released everything (for a durable server: its data directory, so a new server can
    /// open it).
    pub async fn shutdown(mut self) {
        if let Err(e) = self.uninstall_webhooks().await {
            tracing::warn!(error = %e, "removing the webhook configurations");
        }
        let TestEnv {
            webhooks, server, ..
        } = self;
        drop(webhooks);
        server.shutdown().await;
    }

    /// Installs a CRD and waits until it is established.
    pub async fn install_crd(&self, crd: CustomResourceDefinition) -> Result<(), TestEnvError> {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        match api.create(&PostParams::default(), &crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(source) => return Err(TestEnvError::InstallCrd { name, source }),
        }
        self.wait_crd_established(&name, Duration::from_secs(10))
            .await
    }

    /// Installs the CRD of a kube-derived custom resource type.
    pub async fn install_crd_for<K: CustomResourceExt>(&self) -> Result<(), TestEnvError> {
        self.install_crd(K::crd()).await
    }

    /// Installs every CRD in a YAML file (multi-document files allowed).
    pub async fn install_crd_file(&self, path: &Path) -> Result<(), TestEnvError> {
        for crd in read_crd_file(path)? {
            self.install_crd(crd).await?;
        }
        Ok(())
    }

    /// Creates (or replaces) every object in a multi-document YAML file, as the admin: e.g.
    /// the ServiceAccount, Roles and bindings `korral generate` wrote, so an operator can be
    /// tested under exactly that RBAC (with [`AuthorizationMode::Rbac`] and
    /// [`TestEnv::client_as_service_account`]).
    pub async fn install_manifests_file(&self, path: &Path) -> Result<(), TestEnvError> {
        let text = std::fs::read_to_string(path).map_err(|e| TestEnvError::Manifest {
            source_name: path.display().to_string(),
            message: e.to_string(),
        })?;
        self.install_manifests_named(&path.display().to_string(), &text)
            .await
    }

    /// Creates (or replaces) every object in a multi-document YAML string, as the admin.
    pub async fn install_manifests(&self, yaml: &str) -> Result<(), TestEnvError> {
        self.install_manifests_named("<string>", yaml).await
    }

    async fn install_manifests_named(&self, source: &str, yaml: &str) -> Result<(), TestEnvError> {
        let failed = |message: String| TestEnvError::Manifest {
            source_name: source.to_string(),
            message,
        };
        for document in serde_yaml_ng::Deserializer::from_str(yaml) {
            let value = <serde_json::Value as serde::Deserialize>::deserialize(document)
                .map_err(|e| failed(e.to_string()))?;
            if value.is_null() {
                continue;
            }
            let kind = value["kind"].as_str().unwrap_or("").to_string();
            let name = value["metadata"]["name"].as_str().unwrap_or("").to_string();
            self.server
                .create_or_replace(value)
                .await
                .map_err(|e| failed(format!("{kind} {name}: {}", e.message)))?;
        }
        Ok(())
    }

    /// Waits until a CRD has the `Established` condition.
    pub async fn wait_crd_established(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<(), TestEnvError> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        let name = name.to_string();
        wait_until(timeout, format!("CRD {name} to be established"), || {
            let api = api.clone();
            let name = name.clone();
            async move {
                let Ok(crd) = api.get(&name).await else {
                    return false;
                };
                crd.status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            }
        })
        .await
    }
}

/// The CRDs of a YAML file (multi-document files allowed).
fn read_crd_file(path: &Path) -> Result<Vec<CustomResourceDefinition>, TestEnvError> {
    let failed = |message: String| TestEnvError::CrdFile {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    let mut crds = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(&text) {
        let value = <serde_json::Value as serde::Deserialize>::deserialize(document)
            .map_err(|e| failed(e.to_string()))?;
        if value.is_null() {
            continue;
        }
        crds.push(serde_json::from_value(value).map_err(|e| failed(e.to_string()))?);
    }
    Ok(crds)
}

/// Polls `check` every 10 ms until it returns `true` or `timeout` passes.
pub async fn wait_until<F, Fut>(
    timeout: Duration,
    what: impl Into<String>,
    mut check: F,
) -> Result<(), TestEnvError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(TestEnvError::Timeout(timeout, what.into()));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
