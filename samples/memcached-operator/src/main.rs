//! The memcached-operator binary: runs the Memcached controller against the cluster of the current kubeconfig
//! (`KUBECONFIG`, `~/.kube/config`) or, inside a pod, the in-cluster service account.
//! `--print-crd` prints the CRD and `--print-manifests` the manifests instead (see
//! [`korral::operator::OperatorArgs`] for every flag).

use clap::Parser;
use korral::manifests::OperatorInfo;
use korral::operator::OperatorArgs;

/// The Memcached operator (Operator SDK tutorial) on Korral.
#[derive(Debug, Parser)]
#[command(name = "memcached-operator", version)]
struct Args {
    #[command(flatten)]
    operator: OperatorArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let info = OperatorInfo::new("memcached-operator", "example.com");
    args.operator
        .run(&info, |manager, scope| {
            memcached_operator::add_to_manager(manager, scope);
            Ok(())
        })
        .await?;
    Ok(())
}
