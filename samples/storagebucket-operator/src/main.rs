//! The storagebucket-operator binary: runs the StorageBucket controller and its periodic probe trigger against the cluster of the
//! current kubeconfig (`KUBECONFIG`, `~/.kube/config`) or, inside a pod, the in-cluster
//! service account. `--print-crd` prints the CRD instead.

use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use korral::leader::LeaderElectionConfig;
use korral::manifests::OperatorInfo;
use korral::prelude::*;
use storagebucket_operator::{ProbeSettings, StorageBucket};

/// The StorageBucket operator on Korral: probes object-storage buckets over HTTP.
#[derive(Debug, Parser)]
#[command(name = "storagebucket-operator", version)]
struct Args {
    /// The address the metrics endpoint binds to (`0` disables it).
    #[arg(long, default_value = ":8080")]
    metrics_bind_address: String,
    /// The address the health probe endpoint binds to (`0` disables it).
    #[arg(long, default_value = ":8081")]
    health_probe_bind_address: String,
    /// Enable leader election, so only one replica of the operator is active at a time.
    #[arg(long)]
    leader_elect: bool,
    /// The namespace of the leader election Lease (default: the pod's namespace, else `default`).
    #[arg(long, env = "POD_NAMESPACE")]
    leader_election_namespace: Option<String>,
    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "WATCH_NAMESPACE")]
    namespace: Option<String>,
    /// How long controllers get to finish on shutdown.
    #[arg(long, default_value = "30", value_name = "SECONDS")]
    graceful_shutdown_timeout: u64,
    /// How often every bucket is probed.
    #[arg(long, default_value = "30", value_name = "SECONDS")]
    probe_interval: u64,
    /// How long one probe may take.
    #[arg(long, default_value = "5", value_name = "SECONDS")]
    probe_timeout: u64,
    /// Print the CustomResourceDefinition as YAML and exit.
    #[arg(long)]
    print_crd: bool,
    /// Print the operator's manifests (CRDs, RBAC, manager Deployment) as JSON and exit; this
    /// is what `korral generate` reads.
    #[arg(long)]
    print_manifests: bool,
}

/// The operator's name and domain, which name its deploy manifests and its leader election
/// Lease.
fn operator_info() -> OperatorInfo {
    OperatorInfo::new("storagebucket-operator", "example.com")
}

/// The namespace this process runs in, when in a pod.
fn in_cluster_namespace() -> Option<String> {
    std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
        .ok()
        .map(|ns| ns.trim().to_owned())
        .filter(|ns| !ns.is_empty())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.print_crd {
        print!(
            "{}",
            serde_yaml_ng::to_string(&StorageBucket::crd()).context("serializing the CRD")?
        );
        return Ok(());
    }
    if args.print_manifests {
        korral::manifests::print(&operator_info(), |manager| {
            storagebucket_operator::add_to_manager(manager, Scope::All, ProbeSettings::default())?;
            Ok(())
        })?;
        return Ok(());
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();

    let mut builder = Manager::from_env()
        .await
        .context("connecting to the cluster")?
        .metrics_bind_address(&args.metrics_bind_address)?
        .health_probe_bind_address(&args.health_probe_bind_address)?
        .graceful_timeout(Duration::from_secs(args.graceful_shutdown_timeout));
    if args.leader_elect {
        let namespace = args
            .leader_election_namespace
            .or_else(in_cluster_namespace)
            .unwrap_or_else(|| "default".to_owned());
        builder = builder.leader_election(LeaderElectionConfig::new(
            operator_info().leader_election_id,
            namespace,
        ));
    }
    let mut manager = builder.build()?;
    let scope = match args.namespace {
        Some(ns) if !ns.is_empty() => Scope::namespace(ns),
        _ => Scope::All,
    };
    let settings = ProbeSettings {
        interval: Duration::from_secs(args.probe_interval.max(1)),
        timeout: Duration::from_secs(args.probe_timeout.max(1)),
    };
    storagebucket_operator::add_to_manager(&mut manager, scope, settings)
        .context("adding the StorageBucket controller")?;
    manager
        .run(korral::manager::shutdown_signal())
        .await
        .context("running the manager")
}
