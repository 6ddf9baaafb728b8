//! The helloapp-operator binary: runs the HelloApp controller against the cluster of the current kubeconfig
//! (`KUBECONFIG`, `~/.kube/config`) or, inside a pod, the in-cluster service account.
//! `--print-crd` prints the CRD and `--print-manifests` the manifests instead (see
//! [`korral::operator::OperatorArgs`] for every flag).

use clap::Parser;
use korral::manifests::OperatorInfo;
use korral::operator::OperatorArgs;

/// The HelloApp operator on Korral.
#[derive(Debug, Parser)]
#[command(name = "helloapp-operator", version)]
struct Args {
    #[command(flatten)]
    operator: OperatorArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let info = OperatorInfo::new("helloapp-operator", "example.com");
    args.operator
        .run(&info, |manager, scope| {
            helloapp_operator::add_to_manager(manager, scope);
            Ok(())
        })
        .await?;
    Ok(())
}
