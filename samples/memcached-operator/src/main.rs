//! The memcached-operator binary: runs the Memcached controller and its webhooks against the
//! cluster of the current kubeconfig (`KUBECONFIG`, `~/.kube/config`) or, inside a pod, the
//! in-cluster service account. `--print-crd` prints the CRD and `--print-manifests` the
//! manifests instead (see [`korral::operator::OperatorArgs`] for every flag).
//!
//! The webhooks (defaulting and validating) are served on `--webhook-port` (9443) with the
//! certificate of `--webhook-cert-dir`, which the operator manages itself (a CA and serving
//! certificate in the Secret `webhook-server-cert` of its namespace, the `caBundle` injected
//! into its webhook configurations) unless `--webhook-self-managed-certs=false` (cert-manager
//! or a mounted Secret). `ENABLE_WEBHOOKS=false` runs without them (local runs, as
//! kubebuilder's).

use std::path::PathBuf;

use clap::Parser;
use korral::manager::Manager;
use korral::manifests::OperatorInfo;
use korral::operator::OperatorArgs;
use korral::webhook::WebhookServer;
use korral::webhook::certs::SelfManagedCerts;

/// The Memcached operator (Operator SDK tutorial) on Korral.
#[derive(Debug, Parser)]
#[command(name = "memcached-operator", version)]
struct Args {
    #[command(flatten)]
    operator: OperatorArgs,
    /// Serve the Memcached webhooks.
    #[arg(long, env = "ENABLE_WEBHOOKS", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    enable_webhooks: bool,
    /// The webhook server's port.
    #[arg(long, default_value_t = korral::webhook::DEFAULT_PORT)]
    webhook_port: u16,
    /// The directory of the webhook server's `tls.crt` and `tls.key` (default
    /// `$TMPDIR/k8s-webhook-server/serving-certs`).
    #[arg(long, value_name = "DIR")]
    webhook_cert_dir: Option<PathBuf>,
    /// Manage the webhook certificate in a Secret and inject the CA into the webhook
    /// configurations (no cert-manager needed).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    webhook_self_managed_certs: bool,
}

impl Args {
    /// Adds the webhook server (and its certificate management) to `manager`.
    fn add_webhooks(
        &self,
        manager: &mut Manager,
        info: &OperatorInfo,
    ) -> Result<(), korral::reconcile::BoxError> {
        let mut server = WebhookServer::new().port(self.webhook_port);
        if let Some(dir) = &self.webhook_cert_dir {
            server = server.cert_dir(dir);
        }
        if self.webhook_self_managed_certs {
            SelfManagedCerts::new(
                manager.client().clone(),
                info.namespace.clone(),
                info.webhook_service_name(),
            )
            .cert_dir(server.certificate_dir())
            .mutating_configuration(info.mutating_webhook_configuration_name())
            .validating_configuration(info.validating_webhook_configuration_name())
            .add_to(manager);
        }
        memcached_operator::add_webhooks(manager, server)?;
        Ok(())
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let info = OperatorInfo::new("memcached-operator", "example.com");
    let mut info_ns = info.clone();
    if let Ok(namespace) = std::env::var("POD_NAMESPACE")
        && !namespace.is_empty()
    {
        info_ns = info_ns.namespace(namespace);
    }
    let webhooks = args.enable_webhooks;
    args.operator
        .clone()
        .run(&info, |manager, scope| {
            memcached_operator::add_to_manager(manager, scope);
            if webhooks {
                args.add_webhooks(manager, &info_ns)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}
