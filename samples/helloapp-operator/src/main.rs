//! The helloapp-operator binary: runs the HelloApp controller against the cluster of the current kubeconfig
//! (`KUBECONFIG`, `~/.kube/config`) or, inside a pod, the in-cluster service account.
//! `--print-crd` prints the CRD and `--print-manifests` the manifests instead (see
//! [`korral::operator::OperatorArgs`] for every flag).
//!
//! The conversion webhook between v1 and v2 (the hub, stored) is served on port 9443 with a
//! certificate the operator manages itself (a Secret in its namespace, the CA injected into the
//! CRD's conversion webhook); the CRD then has both versions. `ENABLE_WEBHOOKS=false` runs
//! without it (and declares v1 alone), as kubebuilder's local runs.

use clap::Parser;
use korral::manifests::OperatorInfo;
use korral::operator::OperatorArgs;
use korral::webhook::WebhookServer;
use korral::webhook::certs::SelfManagedCerts;
use kube::CustomResourceExt;

/// The HelloApp operator on Korral.
#[derive(Debug, Parser)]
#[command(name = "helloapp-operator", version)]
struct Args {
    #[command(flatten)]
    operator: OperatorArgs,
    /// Serve the conversion webhook (and declare v2).
    #[arg(long, env = "ENABLE_WEBHOOKS", default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    enable_webhooks: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let info = OperatorInfo::new("helloapp-operator", "example.com");
    let webhooks = args.enable_webhooks;
    let mut namespace = info.namespace.clone();
    if let Ok(pod_namespace) = std::env::var("POD_NAMESPACE")
        && !pod_namespace.is_empty()
    {
        namespace = pod_namespace;
    }
    let certs_info = info.clone().namespace(namespace);
    args.operator
        .run(&info, |manager, scope| {
            helloapp_operator::add_to_manager(manager, scope);
            if webhooks {
                let server = WebhookServer::new();
                SelfManagedCerts::new(
                    manager.client().clone(),
                    certs_info.namespace.clone(),
                    certs_info.webhook_service_name(),
                )
                .cert_dir(server.certificate_dir())
                .crd(helloapp_operator::HelloApp::crd_name())
                .add_to(manager);
                helloapp_operator::add_webhooks(manager, server)?;
            }
            Ok(())
        })
        .await?;
    Ok(())
}
