//! The command line every operator binary shares: manager flags (metrics and probe addresses,
//! leader election, namespace scope, graceful shutdown), `--print-crd` and `--print-manifests`
//! (what `korral generate` reads), and running the manager until Ctrl-C or SIGTERM.

use std::io::Write;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use korral_runtime::cache::Scope;
use korral_runtime::leader::LeaderElectionConfig;
use korral_runtime::manager::{Manager, ManagerError, shutdown_signal};
use korral_runtime::manifests::{self, ManifestsError, OperatorInfo};
use korral_runtime::reconcile::BoxError;

/// The flags of an operator binary; `#[command(flatten)]` them into the binary's own parser.
#[derive(Debug, Clone, clap::Args)]
pub struct OperatorArgs {
    /// The address the metrics endpoint binds to (`0` disables it).
    #[arg(long, default_value = ":8080")]
    pub metrics_bind_address: String,
    /// The address the health probe endpoint binds to (`0` disables it).
    #[arg(long, default_value = ":8081")]
    pub health_probe_bind_address: String,
    /// Enable leader election, so only one replica of the operator is active at a time.
    #[arg(long)]
    pub leader_elect: bool,
    /// The namespace of the leader election Lease (default: the pod's namespace, else `default`).
    #[arg(long, env = "POD_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// How long a leader's Lease lasts without renewal before a standby may take it over.
    #[arg(long, default_value = "15", value_name = "SECONDS", value_parser = seconds)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps retrying to renew before it gives leadership up.
    #[arg(long, default_value = "10", value_name = "SECONDS", value_parser = seconds)]
    pub leader_elect_renew_deadline: Duration,
    /// How often candidates try to acquire, and the leader to renew, the Lease.
    #[arg(long, default_value = "2", value_name = "SECONDS", value_parser = seconds)]
    pub leader_elect_retry_period: Duration,
    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "WATCH_NAMESPACE")]
    pub namespace: Option<String>,
    /// How long controllers get to finish on shutdown.
    #[arg(long, default_value = "30", value_name = "SECONDS")]
    pub graceful_shutdown_timeout: u64,
    /// Print the CustomResourceDefinitions the operator declares as YAML (one document each) and
    /// exit.
    #[arg(long)]
    pub print_crd: bool,
    /// Print the operator's manifests (CRDs, RBAC, manager Deployment) as JSON and exit; this
    /// is what `korral generate` reads.
    #[arg(long)]
    pub print_manifests: bool,
}

/// Why an operator binary stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// Rendering the CRD as YAML failed.
    #[error("serializing the CRD: {0}")]
    SerializeCrd(#[source] serde_yaml_ng::Error),
    /// Writing to standard output failed.
    #[error("writing to standard output: {0}")]
    Write(#[source] std::io::Error),
    /// Collecting the CRDs or the manifests `setup` declares, or printing the manifests, failed.
    #[error("printing the manifests: {0}")]
    PrintManifests(#[source] ManifestsError),
    /// Connecting to the cluster or configuring the manager failed.
    #[error("setting up the manager: {0}")]
    Manager(#[source] ManagerError),
    /// The operator's setup function failed to add its controllers.
    #[error("adding the controllers: {0}")]
    Setup(#[source] BoxError),
    /// The manager stopped with an error.
    #[error("running the manager: {0}")]
    Run(#[source] ManagerError),
}

impl OperatorArgs {
    /// The namespaces to watch: `--namespace` if set and not empty, else all.
    pub fn scope(&self) -> Scope {
        match &self.namespace {
            Some(ns) if !ns.is_empty() => Scope::namespace(ns.clone()),
            _ => Scope::All,
        }
    }

    /// Runs the operator as the flags ask. `setup` is the operator's `add_to_manager`: it
    /// declares the CRDs (`Manager::declare_crd`) and adds the controllers for a scope.
    ///
    /// `--print-crd` prints the CRDs `setup` declares and `--print-manifests` the manifests
    /// (both collected on an offline manager, no cluster needed); otherwise this connects to the
    /// cluster of the current kubeconfig (or the in-cluster service account), lets `setup` add
    /// the controllers for the chosen scope and runs the manager until Ctrl-C or SIGTERM.
    pub async fn run(
        self,
        info: &OperatorInfo,
        setup: impl FnOnce(&mut Manager, Scope) -> Result<(), BoxError>,
    ) -> Result<(), OperatorError> {
        if self.print_crd {
            let declared = manifests::collect(|manager| setup(manager, Scope::All))
                .map_err(OperatorError::PrintManifests)?;
            let yaml = crds_yaml(declared.crds())?;
            let mut stdout = std::io::stdout().lock();
            stdout
                .write_all(yaml.as_bytes())
                .and_then(|()| stdout.flush())
                .map_err(OperatorError::Write)?;
            return Ok(());
        }
        if self.print_manifests {
            return manifests::print(info, |manager| setup(manager, Scope::All))
                .map_err(OperatorError::PrintManifests);
        }
        // Another subscriber may already be installed (tests); keep it then.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env()
                    .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
            )
            .try_init();
        let scope = self.scope();
        let mut builder = Manager::from_env()
            .await
            .map_err(OperatorError::Manager)?
            .metrics_bind_address(&self.metrics_bind_address)
            .map_err(OperatorError::Manager)?
            .health_probe_bind_address(&self.health_probe_bind_address)
            .map_err(OperatorError::Manager)?
            .graceful_timeout(Duration::from_secs(self.graceful_shutdown_timeout));
        if self.leader_elect {
            let namespace = self
                .leader_election_namespace
                .or_else(in_cluster_namespace)
                .unwrap_or_else(|| "default".to_owned());
            builder = builder.leader_election(
                LeaderElectionConfig::new(info.leader_election_id.clone(), namespace)
                    .with_lease_duration(self.leader_elect_lease_duration)
                    .with_renew_deadline(self.leader_elect_renew_deadline)
                    .with_retry_period(self.leader_elect_retry_period),
            );
        }
        let mut manager = builder.build().map_err(OperatorError::Manager)?;
        setup(&mut manager, scope).map_err(OperatorError::Setup)?;
        manager
            .run(shutdown_signal())
            .await
            .map_err(OperatorError::Run)
    }
}

/// `crds` as YAML documents, separated by `---` when there are several.
fn crds_yaml(crds: &[CustomResourceDefinition]) -> Result<String, OperatorError> {
    let mut out = String::new();
    for (i, crd) in crds.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&serde_yaml_ng::to_string(crd).map_err(OperatorError::SerializeCrd)?);
    }
    Ok(out)
}

/// A duration flag in seconds (fractions allowed: `0.5`).
fn seconds(value: &str) -> Result<Duration, String> {
    let seconds: f64 = value
        .parse()
        .map_err(|e| format!("{value:?} is not a number of seconds: {e}"))?;
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{value:?}: {e}"))
}

/// The namespace this process runs in, when in a pod.
fn in_cluster_namespace() -> Option<String> {
    std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
        .ok()
        .map(|ns| ns.trim().to_owned())
        .filter(|ns| !ns.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        operator: OperatorArgs,
    }

    #[test]
    fn defaults_and_scope() {
        let cli = Cli::try_parse_from(["op"]).expect("parse");
        assert_eq!(cli.operator.metrics_bind_address, ":8080");
        assert_eq!(cli.operator.health_probe_bind_address, ":8081");
        assert!(!cli.operator.leader_elect);
        assert_eq!(cli.operator.graceful_shutdown_timeout, 30);
        assert!(matches!(cli.operator.scope(), Scope::All));
        let cli =
            Cli::try_parse_from(["op", "--namespace", "team-a", "--leader-elect"]).expect("parse");
        assert!(cli.operator.leader_elect);
        assert!(matches!(cli.operator.scope(), Scope::Namespace(ns) if ns == "team-a"));
        let cli = Cli::try_parse_from(["op", "--namespace", ""]).expect("parse");
        assert!(matches!(cli.operator.scope(), Scope::All));
    }

    #[test]
    fn leader_election_timings_in_seconds() {
        let cli = Cli::try_parse_from(["op"]).expect("parse");
        assert_eq!(
            cli.operator.leader_elect_lease_duration,
            Duration::from_secs(15)
        );
        assert_eq!(
            cli.operator.leader_elect_renew_deadline,
            Duration::from_secs(10)
        );
        assert_eq!(
            cli.operator.leader_elect_retry_period,
            Duration::from_secs(2)
        );
        let cli = Cli::try_parse_from([
            "op",
            "--leader-elect-lease-duration",
            "3",
            "--leader-elect-renew-deadline",
            "2",
            "--leader-elect-retry-period",
            "0.25",
        ])
        .expect("parse");
        assert_eq!(
            cli.operator.leader_elect_lease_duration,
            Duration::from_secs(3)
        );
        assert_eq!(
            cli.operator.leader_elect_renew_deadline,
            Duration::from_secs(2)
        );
        assert_eq!(
            cli.operator.leader_elect_retry_period,
            Duration::from_millis(250)
        );
        for bad in ["-1", "soon", "NaN"] {
            let parsed = Cli::try_parse_from(["op", "--leader-elect-retry-period", bad]);
            assert!(parsed.is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn several_crds_print_as_several_documents() {
        let crd = |name: &str| CustomResourceDefinition {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        let yaml = crds_yaml(&[crd("as.example.com"), crd("bs.example.com")]).expect("yaml");
        let docs: Vec<&str> = yaml.split("---\n").collect();
        assert_eq!(docs.len(), 2, "{yaml}");
        assert!(docs[0].contains("name: as.example.com"), "{yaml}");
        assert!(docs[1].contains("name: bs.example.com"), "{yaml}");
        assert_eq!(crds_yaml(&[]).expect("yaml"), "");
    }
}
