//! The Memcached sample's webhooks served in process by `korral up --sample memcached`: a
//! webhook server on a free local port with a certificate of a fresh CA, and the Mutating and
//! Validating configurations of the sample's manifests installed pointing at it by `url` with
//! that CA as `caBundle` (removed again on exit, so a stopped `up` leaves no webhook that
//! fails every Memcached write).

use anyhow::Context;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use korral_runtime::manifests::{OperatorInfo, collect};
use korral_runtime::webhook::certs::{CertBundle, write_files};
use korral_runtime::webhook::{RunningWebhookServer, WebhookServer};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The host name of the in-process webhook server (in its certificate and the URLs).
const HOST: &str = "localhost";

/// The webhooks served in process, with their installed configurations.
pub(super) struct InProcessWebhooks {
    running: RunningWebhookServer,
    configurations: Vec<(String, bool)>,
    cert_dir: CertDir,
}

/// The certificate directory, removed when dropped.
struct CertDir(std::path::PathBuf);

impl Drop for CertDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl InProcessWebhooks {
    /// Serves the sample's webhooks on a free port and installs their configurations.
    pub(super) async fn start(client: &Client) -> anyhow::Result<Self> {
        let cert_dir = CertDir(
            std::env::temp_dir().join(format!("korral-up-webhooks-{}", std::process::id())),
        );
        let bundle = CertBundle::generate("korral-up-webhook-ca", &[HOST.to_owned()], 30, 30)
            .context("generating the webhook certificate")?;
        write_files(&cert_dir.0, &bundle).context("writing the webhook certificate")?;
        let mut server = WebhookServer::new()
            .host("127.0.0.1")
            .port(0)
            .cert_dir(&cert_dir.0)
            .metrics_registry(korral_runtime::metrics::Registry::new());
        memcached_operator::webhooks::register(&mut server)
            .context("registering the Memcached webhooks")?;
        let running = server
            .serve()
            .await
            .context("starting the webhook server")?;
        let base = format!("https://{HOST}:{}", running.local_addr().port());
        let mut this = Self {
            running,
            configurations: Vec::new(),
            cert_dir,
        };
        for mut object in configurations()? {
            point_at(&mut object, &base, &bundle.ca_cert_pem);
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mutating = object["kind"] == "MutatingWebhookConfiguration";
            if mutating {
                install::<MutatingWebhookConfiguration>(client, object).await?;
            } else {
                install::<ValidatingWebhookConfiguration>(client, object).await?;
            }
            this.configurations.push((name, mutating));
        }
        Ok(this)
    }

    /// The `https://localhost:<port>` the webhooks are served on.
    pub(super) fn url(&self) -> String {
        format!("https://{HOST}:{}", self.running.local_addr().port())
    }

    /// The names of the installed configurations.
    pub(super) fn configuration_names(&self) -> Vec<String> {
        self.configurations.iter().map(|(n, _)| n.clone()).collect()
    }

    /// Removes the configurations and stops the server.
    pub(super) async fn stop(self, client: &Client) {
        for (name, mutating) in &self.configurations {
            let result = if *mutating {
                remove::<MutatingWebhookConfiguration>(client, name).await
            } else {
                remove::<ValidatingWebhookConfiguration>(client, name).await
            };
            if let Err(e) = result {
                tracing::warn!(error = %e, configuration = %name, "removing the webhook configuration");
            }
        }
        self.running.shutdown().await;
        drop(self.cert_dir);
    }
}

/// The sample's webhook configurations, as its manifests render them.
fn configurations() -> anyhow::Result<Vec<Value>> {
    let info = OperatorInfo::new("memcached-operator", "example.com");
    let set = collect(|manager| {
        memcached_operator::add_webhooks(manager, WebhookServer::new())?;
        Ok(())
    })
    .context("collecting the Memcached webhooks")?
    .render(&info)
    .context("rendering the Memcached webhooks")?;
    Ok(set
        .files
        .into_iter()
        .filter(|f| f.path == "config/webhook/manifests.yaml")
        .flat_map(|f| f.objects)
        .collect())
}

/// Points every webhook of `configuration` at `base` + its service path, trusting `ca_pem`.
fn point_at(configuration: &mut Value, base: &str, ca_pem: &str) {
    let ca = serde_json::to_value(ByteString(ca_pem.as_bytes().to_vec())).unwrap_or(Value::Null);
    if let Some(webhooks) = configuration["webhooks"].as_array_mut() {
        for webhook in webhooks {
            let path = webhook["clientConfig"]["service"]["path"]
                .as_str()
                .unwrap_or("/")
                .to_owned();
            webhook["clientConfig"] =
                serde_json::json!({"url": format!("{base}{path}"), "caBundle": ca});
        }
    }
}

/// Creates `object` as a `K`, replacing one of the same name.
async fn install<K>(client: &Client, object: Value) -> anyhow::Result<()>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + std::fmt::Debug
        + Serialize
        + DeserializeOwned,
{
    let mut typed: K =
        serde_json::from_value(object).context("decoding a webhook configuration")?;
    let name = typed.meta().name.clone().unwrap_or_default();
    let api: Api<K> = Api::all(client.clone());
    match api
        .get_opt(&name)
        .await
        .with_context(|| format!("reading {} {name}", K::kind(&())))?
    {
        Some(existing) => {
            typed.meta_mut().resource_version = existing.meta().resource_version.clone();
            api.replace(&name, &PostParams::default(), &typed)
                .await
                .with_context(|| format!("updating {} {name}", K::kind(&())))?;
        }
        None => {
            api.create(&PostParams::default(), &typed)
                .await
                .with_context(|| format!("creating {} {name}", K::kind(&())))?;
        }
    }
    Ok(())
}

/// Deletes the `K` named `name` (gone already is fine).
async fn remove<K>(client: &Client, name: &str) -> anyhow::Result<()>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned,
{
    let api: Api<K> = Api::all(client.clone());
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("deleting {} {name}", K::kind(&()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_configurations_point_at_the_local_server_with_its_ca() {
        let mut objects = configurations().expect("configurations");
        assert_eq!(objects.len(), 2);
        let mut object = objects.remove(0);
        point_at(&mut object, "https://localhost:4321", "PEM");
        let webhook = &object["webhooks"][0];
        assert_eq!(
            webhook["clientConfig"],
            serde_json::json!({
                "url": "https://localhost:4321/mutate-cache-example-com-v1-memcached",
                "caBundle": "UEVN",
            })
        );
        assert_eq!(webhook["failurePolicy"], "Fail");
    }
}
