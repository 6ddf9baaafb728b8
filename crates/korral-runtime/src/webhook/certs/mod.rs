//! Self-managed webhook certificates (no cert-manager needed): a CA and a serving certificate
//! for the webhook Service (`<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`) kept in a Secret
//! (created, or reused while valid, renewed before expiry: the serving certificate from the same
//! CA, the CA itself when it expires, the `caBundle` then trusting the old CA as well while it
//! is valid, so replicas not reloaded yet stay trusted), written to the webhook server's certificate directory
//! (which reloads it), and the CA injected as `caBundle` into the named webhook configurations
//! and CRD conversion webhooks. Every replica runs it (no leadership needed): they share the
//! Secret, each writes its own files.
//!
//! ```no_run
//! use korral_runtime::manager::Manager;
//! use korral_runtime::webhook::WebhookServer;
//! use korral_runtime::webhook::certs::SelfManagedCerts;
//!
//! # fn setup(mut manager: Manager, server: WebhookServer) -> Result<(), Box<dyn std::error::Error>> {
//! SelfManagedCerts::new(manager.client().clone(), "memcached-system", "memcached-webhook-service")
//!     .cert_dir(server.certificate_dir())
//!     .validating_configuration("memcached-validating-webhook-configuration")
//!     .mutating_configuration("memcached-mutating-webhook-configuration")
//!     .add_to(&mut manager);
//! server.add_to(&mut manager)?;
//! # Ok(())
//! # }
//! ```

mod bundle;
mod inject;

pub use bundle::{
    BundleError, CA_CERT_KEY, CA_KEY_KEY, CERT_KEY, CertBundle, KEY_KEY, Renewal, assess,
};
pub use inject::{InjectReport, InjectTarget, Injected, inject, inject_one};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use tracing::{info, warn};

use super::server::default_cert_dir;
use crate::manager::Manager;
use crate::manifests::Rule;
use crate::reconcile::BoxError;

/// The default Secret name (kubebuilder's `webhook-server-cert`).
pub const DEFAULT_SECRET_NAME: &str = "webhook-server-cert";
/// The CA validity (10 years).
pub const DEFAULT_CA_DAYS: i64 = 3650;
/// The serving certificate validity (1 year).
pub const DEFAULT_CERT_DAYS: i64 = 365;
/// Renewed when it would expire within this (90 days).
pub const DEFAULT_LOOKAHEAD: Duration = Duration::from_secs(90 * 86_400);
/// How often the Secret and the injections are checked once complete.
pub const DEFAULT_CHECK_INTERVAL: Duration = Duration::from_secs(300);
/// How soon a failed or incomplete round (a configuration not created yet) is retried.
pub const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_secs(5);
/// The label marking the Secret as ours.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "korral");

/// Why a round of certificate management failed.
#[derive(Debug, thiserror::Error)]
pub enum CertsError {
    /// Reading or writing the Secret failed.
    #[error("{action} the Secret {namespace}/{name}")]
    Secret {
        /// What was done.
        action: &'static str,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: Box<kube::Error>,
    },
    /// The Secret kept changing under us.
    #[error("the Secret {namespace}/{name} kept changing; retrying later")]
    Contended {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// Generating certificates failed.
    #[error("generating the webhook certificates")]
    Generate(#[source] BundleError),
    /// Writing the certificate files failed.
    #[error("writing {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Manages the webhook certificates; see the [module docs](self).
#[derive(Clone)]
pub struct SelfManagedCerts {
    client: Client,
    namespace: String,
    service: String,
    secret_name: String,
    extra_names: Vec<String>,
    cert_dir: PathBuf,
    ca_name: String,
    targets: Vec<InjectTarget>,
    ca_days: i64,
    cert_days: i64,
    lookahead: Duration,
    check_interval: Duration,
    retry_interval: Duration,
}

impl std::fmt::Debug for SelfManagedCerts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfManagedCerts")
            .field("namespace", &self.namespace)
            .field("service", &self.service)
            .field("secret_name", &self.secret_name)
            .field("cert_dir", &self.cert_dir)
            .field("targets", &self.targets)
            .finish_non_exhaustive()
    }
}

impl SelfManagedCerts {
    /// Certificates for the Service `service` in `namespace`, kept in the Secret
    /// `webhook-server-cert` there, written to [`default_cert_dir`].
    pub fn new(client: Client, namespace: impl Into<String>, service: impl Into<String>) -> Self {
        let service = service.into();
        Self {
            client,
            namespace: namespace.into(),
            ca_name: format!("{service}-ca"),
            service,
            secret_name: DEFAULT_SECRET_NAME.to_owned(),
            extra_names: Vec::new(),
            cert_dir: default_cert_dir(),
            targets: Vec::new(),
            ca_days: DEFAULT_CA_DAYS,
            cert_days: DEFAULT_CERT_DAYS,
            lookahead: DEFAULT_LOOKAHEAD,
            check_interval: DEFAULT_CHECK_INTERVAL,
            retry_interval: DEFAULT_RETRY_INTERVAL,
        }
    }

    /// The Secret's name.
    #[must_use]
    pub fn secret_name(mut self, name: impl Into<String>) -> Self {
        self.secret_name = name.into();
        self
    }

    /// More names (DNS or IP) for the serving certificate (e.g. `localhost` for local runs).
    #[must_use]
    pub fn extra_names(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.extra_names.extend(names);
        self
    }

    /// The directory the webhook server reads (`tls.crt`, `tls.key`).
    #[must_use]
    pub fn cert_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cert_dir = dir.as_ref().to_owned();
        self
    }

    /// Injects the CA into every webhook of this ValidatingWebhookConfiguration.
    #[must_use]
    pub fn validating_configuration(mut self, name: impl Into<String>) -> Self {
        self.targets.push(InjectTarget::Validating(name.into()));
        self
    }

    /// Injects the CA into every webhook of this MutatingWebhookConfiguration.
    #[must_use]
    pub fn mutating_configuration(mut self, name: impl Into<String>) -> Self {
        self.targets.push(InjectTarget::Mutating(name.into()));
        self
    }

    /// Injects the CA into the conversion webhook of this CRD (`<plural>.<group>`).
    #[must_use]
    pub fn crd(mut self, name: impl Into<String>) -> Self {
        self.targets.push(InjectTarget::Crd(name.into()));
        self
    }

    /// Validity of the CA and of the serving certificate, in days (default 3650 and 365).
    #[must_use]
    pub fn validity_days(mut self, ca_days: i64, cert_days: i64) -> Self {
        self.ca_days = ca_days;
        self.cert_days = cert_days;
        self
    }

    /// Renew what would expire within `lookahead` (default 90 days).
    #[must_use]
    pub fn lookahead(mut self, lookahead: Duration) -> Self {
        self.lookahead = lookahead;
        self
    }

    /// How often a complete setup is checked again, and how soon an incomplete or failed one
    /// is retried (default 5 min and 5 s).
    #[must_use]
    pub fn intervals(mut self, check: Duration, retry: Duration) -> Self {
        self.check_interval = check;
        self.retry_interval = retry;
        self
    }

    /// The names of the serving certificate: `<svc>.<ns>.svc`, `<svc>.<ns>.svc.cluster.local`,
    /// then the extra names.
    pub fn dns_names(&self) -> Vec<String> {
        let base = format!("{}.{}.svc", self.service, self.namespace);
        let mut names = vec![format!("{base}.cluster.local"), base];
        names.swap(0, 1);
        names.extend(self.extra_names.iter().cloned());
        names
    }

    fn secret_error(&self, action: &'static str) -> impl FnOnce(kube::Error) -> CertsError + '_ {
        move |source| CertsError::Secret {
            action,
            namespace: self.namespace.clone(),
            name: self.secret_name.clone(),
            source: Box::new(source),
        }
    }

    /// The certificates in the Secret: reused while valid, renewed (and written back) when
    /// they expire within the look-ahead or do not serve the names, created when absent.
    pub async fn ensure_secret(&self) -> Result<CertBundle, CertsError> {
        let api = Api::<Secret>::namespaced(self.client.clone(), &self.namespace);
        let names = self.dns_names();
        let lookahead = i64::try_from(self.lookahead.as_secs()).unwrap_or(i64::MAX);
        for _ in 0..5 {
            let now = jiff::Timestamp::now().as_second();
            let existing = api
                .get_opt(&self.secret_name)
                .await
                .map_err(self.secret_error("reading"))?;
            let Some(mut secret) = existing else {
                let bundle =
                    CertBundle::generate(&self.ca_name, &names, self.ca_days, self.cert_days)
                        .map_err(CertsError::Generate)?;
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(self.secret_name.clone()),
                        namespace: Some(self.namespace.clone()),
                        labels: Some(BTreeMap::from([(
                            MANAGED_BY.0.to_owned(),
                            MANAGED_BY.1.to_owned(),
                        )])),
                        ..ObjectMeta::default()
                    },
                    type_: Some("kubernetes.io/tls".to_owned()),
                    data: Some(bundle.to_data()),
                    ..Secret::default()
                };
                match api.create(&PostParams::default(), &secret).await {
                    Ok(_) => {
                        info!(secret = %self.secret_name, "webhook certificates created");
                        return Ok(bundle);
                    }
                    Err(kube::Error::Api(status)) if status.code == 409 => continue,
                    Err(err) => return Err(self.secret_error("creating")(err)),
                }
            };
            let stored = CertBundle::from_data(&secret.data.clone().unwrap_or_default());
            let renewed = match assess(&stored, &names, now, lookahead) {
                Renewal::None => return Ok(stored),
                Renewal::ServingCertificate => stored.reissue(&names, self.cert_days),
                Renewal::Everything => {
                    CertBundle::generate(&self.ca_name, &names, self.ca_days, self.cert_days)
                        .map(|fresh| fresh.trusting_previous_ca(&stored, now))
                }
            }
            .map_err(CertsError::Generate)?;
            let mut data = secret.data.take().unwrap_or_default();
            data.extend(renewed.to_data());
            secret.data = Some(data);
            match api
                .replace(&self.secret_name, &PostParams::default(), &secret)
                .await
            {
                Ok(_) => {
                    info!(secret = %self.secret_name, "webhook certificates renewed");
                    return Ok(renewed);
                }
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(err) => return Err(self.secret_error("updating")(err)),
            }
        }
        Err(CertsError::Contended {
            namespace: self.namespace.clone(),
            name: self.secret_name.clone(),
        })
    }

    /// Writes the serving certificate and key to the certificate directory (each file replaced
    /// at once, the key readable by the owner only); returns whether they changed.
    pub fn write_files(&self, bundle: &CertBundle) -> Result<bool, CertsError> {
        write_files(&self.cert_dir, bundle)
    }

    /// One round: the Secret, the files, the injections.
    pub async fn reconcile(&self) -> Result<InjectReport, CertsError> {
        let bundle = self.ensure_secret().await?;
        if self.write_files(&bundle)? {
            info!(dir = %self.cert_dir.display(), "webhook certificate files written");
        }
        Ok(inject(&self.client, &self.targets, bundle.ca_cert_pem.as_bytes()).await)
    }

    /// Runs rounds until `stop`: every check interval once complete, every retry interval while
    /// a configuration is missing or a round failed.
    pub async fn run(self, stop: impl Future<Output = ()> + Send) {
        let mut stop = std::pin::pin!(stop);
        loop {
            let wait = match self.reconcile().await {
                Ok(report) if report.complete() => self.check_interval,
                Ok(report) => {
                    info!(pending = ?report.pending(), "caBundle not injected everywhere yet; retrying");
                    self.retry_interval
                }
                Err(err) => {
                    warn!(error = %err, "managing the webhook certificates failed; retrying");
                    self.retry_interval
                }
            };
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// The permissions this needs (the Secret; the configurations and CRDs it injects into).
    pub fn permissions(&self) -> Vec<Rule> {
        let mut rules = vec![Rule::new("", ["secrets"]).verbs(["get", "create", "update"])];
        let mut add = |resource: &str, group: &str| {
            rules.push(Rule::new(group, [resource]).verbs(["get", "update"]));
        };
        for target in &self.targets {
            match target {
                InjectTarget::Validating(_) => {
                    add(
                        "validatingwebhookconfigurations",
                        "admissionregistration.k8s.io",
                    );
                }
                InjectTarget::Mutating(_) => {
                    add(
                        "mutatingwebhookconfigurations",
                        "admissionregistration.k8s.io",
                    );
                }
                InjectTarget::Crd(_) => add("customresourcedefinitions", "apiextensions.k8s.io"),
            }
        }
        rules
    }

    /// Adds this to `manager` as a runnable that does not need leadership, and declares its
    /// permissions.
    pub fn add_to(self, manager: &mut Manager) {
        for rule in self.permissions() {
            manager.declare_permission(rule);
        }
        manager.add_runnable("webhook certificates", false, move |stop| async move {
            self.run(stop).await;
            Ok::<(), BoxError>(())
        });
    }
}

/// Replaces `path` with `contents` at once (write a sibling, rename); `private` makes it
/// owner-only. Returns whether it changed.
fn replace_file(path: &Path, contents: &str, private: bool) -> Result<bool, CertsError> {
    let failed = |source| CertsError::Write {
        path: path.to_owned(),
        source,
    };
    if std::fs::read(path).is_ok_and(|old| old == contents.as_bytes()) {
        return Ok(false);
    }
    let name = path
        .file_name()
        .map_or_else(|| "cert".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    std::fs::write(&tmp, contents).map_err(failed)?;
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
    }
    #[cfg(not(unix))]
    let _ = private;
    std::fs::rename(&tmp, path).map_err(failed)?;
    Ok(true)
}

/// Writes `tls.crt` and `tls.key` of `bundle` to `dir` (created if needed).
pub fn write_files(dir: &Path, bundle: &CertBundle) -> Result<bool, CertsError> {
    std::fs::create_dir_all(dir).map_err(|source| CertsError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let key = replace_file(&dir.join(KEY_KEY), &bundle.key_pem, true)?;
    let cert = replace_file(&dir.join(CERT_KEY), &bundle.cert_pem, false)?;
    Ok(key || cert)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_files_once_and_privately() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("serving-certs");
        let bundle = CertBundle::generate("ca", &["a.b.svc".to_owned()], 10, 5).expect("gen");
        assert!(write_files(&sub, &bundle).expect("write"));
        assert!(!write_files(&sub, &bundle).expect("same"));
        assert_eq!(
            std::fs::read_to_string(sub.join("tls.crt")).expect("read"),
            bundle.cert_pem
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(sub.join("tls.key"))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
