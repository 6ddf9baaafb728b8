//! The storagebucket-operator binary: runs the StorageBucket controller and its periodic probe trigger against the cluster of the current kubeconfig
//! (`KUBECONFIG`, `~/.kube/config`) or, inside a pod, the in-cluster service account.
//! `--print-crd` prints the CRD and `--print-manifests` the manifests instead (see
//! [`korral::operator::OperatorArgs`] for every flag).

use std::time::Duration;

use clap::Parser;
use korral::manifests::OperatorInfo;
use korral::operator::OperatorArgs;
use storagebucket_operator::ProbeSettings;

/// The StorageBucket operator on Korral: probes object-storage buckets over HTTP.
#[derive(Debug, Parser)]
#[command(name = "storagebucket-operator", version)]
struct Args {
    #[command(flatten)]
    operator: OperatorArgs,
    /// How often every bucket is probed.
    #[arg(long, default_value = "30", value_name = "SECONDS")]
    probe_interval: u64,
    /// How long one probe may take.
    #[arg(long, default_value = "5", value_name = "SECONDS")]
    probe_timeout: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let settings = ProbeSettings {
        interval: Duration::from_secs(args.probe_interval.max(1)),
        timeout: Duration::from_secs(args.probe_timeout.max(1)),
    };
    let info = OperatorInfo::new("storagebucket-operator", "example.com");
    args.operator
        .run(&info, |manager, scope| {
            storagebucket_operator::add_to_manager(manager, scope, settings)?;
            Ok(())
        })
        .await?;
    Ok(())
}
