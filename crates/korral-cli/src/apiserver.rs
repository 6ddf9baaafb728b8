//! `korral apiserver`: the embedded control plane as a process.

use std::path::{Path, PathBuf};

use anyhow::Context;
use korral_apiserver::{ApiServer, AuthorizationMode, FaultConfig, ServerConfig, StorageMode};

/// Options of `korral apiserver`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory for durable storage.
    #[arg(long, default_value = ".korral/data", conflicts_with = "in_memory")]
    data_dir: PathBuf,
    /// Keep everything in memory (lost on exit).
    #[arg(long)]
    in_memory: bool,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write the kubeconfig for this server.
    #[arg(long, default_value = ".korral/kubeconfig")]
    kubeconfig: PathBuf,
    /// Serve plain HTTP on loopback instead of HTTPS (without authentication: clients do not
    /// send tokens over plain HTTP).
    #[arg(long)]
    insecure_http: bool,
    /// Simulate the workload controllers: Deployments get ReplicaSets and Pods, Pods turn
    /// Ready on a simulated node, Services get Endpoints, Jobs complete.
    #[arg(long)]
    simulate: bool,
    /// How requests are authorized: `always-allow`, or `rbac` (Roles, ClusterRoles and their
    /// bindings; the kubeconfig's token is the admin, in `system:masters`).
    #[arg(long, value_enum, default_value_t = Authorization::AlwaysAllow)]
    authorization: Authorization,
    /// API priority and fairness (upstream's flag of the same name): requests are classified
    /// by FlowSchema and limited by their PriorityLevelConfiguration, sharing
    /// `--max-requests-inflight` + `--max-mutating-requests-inflight` seats; `false` applies
    /// the two max-in-flight limits separately instead.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    enable_priority_and_fairness: bool,
    /// Read-only requests served at once; more are answered 429 (0: no limit).
    #[arg(long, default_value_t = korral_apiserver::DEFAULT_MAX_READONLY)]
    max_requests_inflight: usize,
    /// Mutating requests served at once; more are answered 429 (0: no limit).
    #[arg(long, default_value_t = korral_apiserver::DEFAULT_MAX_MUTATING)]
    max_mutating_requests_inflight: usize,
    /// Open watches per client (per set of credentials); more are answered 429 (0: no limit).
    #[arg(long, default_value_t = korral_apiserver::DEFAULT_MAX_WATCHES_PER_CLIENT)]
    max_watches_per_client: usize,
    /// Inject faults on purpose, from this YAML or JSON file: latency, 409/429/500/503
    /// errors, watches closed early, 410 Expired on watch resume (see the README's
    /// "Fault injection"). A bad file stops the command at start.
    #[arg(long, value_name = "FILE")]
    faults: Option<PathBuf>,
}

/// Loads `--faults FILE` (no faults without one); the error names the file and the field.
pub fn load_faults(path: Option<&Path>) -> anyhow::Result<FaultConfig> {
    let Some(path) = path else {
        return Ok(FaultConfig::default());
    };
    let config = FaultConfig::from_file(path)
        .map_err(|e| anyhow::anyhow!("--faults {}: {e}", path.display()))?;
    println!(
        "fault injection: {} rule(s) from {}",
        config.rules.len(),
        path.display()
    );
    Ok(config)
}

/// Values of `--authorization`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Authorization {
    /// Every authenticated request is allowed.
    AlwaysAllow,
    /// Requests are checked against RBAC Roles, ClusterRoles and bindings.
    Rbac,
}

/// Waits for Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Runs the server until a signal arrives.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let faults = load_faults(args.faults.as_deref())?;
    let storage = if args.in_memory {
        StorageMode::InMemory
    } else {
        StorageMode::Durable(args.data_dir.clone())
    };
    let config = ServerConfig {
        storage,
        port: args.port,
        tls: !args.insecure_http,
        kubeconfig: Some(args.kubeconfig.clone()),
        simulation: args.simulate,
        authorization: match args.authorization {
            Authorization::AlwaysAllow => AuthorizationMode::AlwaysAllow,
            Authorization::Rbac => AuthorizationMode::Rbac,
        },
        max_requests_inflight: args.max_requests_inflight,
        max_mutating_requests_inflight: args.max_mutating_requests_inflight,
        max_watches_per_client: args.max_watches_per_client,
        enable_priority_and_fairness: args.enable_priority_and_fairness,
        faults,
        ..ServerConfig::default()
    };
    let server = ApiServer::start(config)
        .await
        .context("starting the embedded API server")?;
    let kubeconfig = std::fs::canonicalize(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    println!("korral apiserver listening on {}", server.url());
    println!("kubeconfig written to {}", kubeconfig.display());
    println!("point kubectl at it with:");
    println!("  export KUBECONFIG={}", kubeconfig.display());
    println!("  kubectl get namespaces");
    shutdown_signal().await;
    println!("shutting down");
    server.shutdown().await;
    Ok(())
}
