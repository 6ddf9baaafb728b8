//! `korral up`: the local control plane with everything running.
//!
//! Starts the embedded API server (durable by default, with workload simulation so
//! Deployments get Pods that turn Ready), writes a kubeconfig and says how to point kubectl at
//! it. With `--sample memcached` it also installs the Memcached CRD, runs the Memcached
//! operator in this process (a Korral manager on a client of the embedded server), applies
//! the sample resource and shows the convergence: Deployment ready x/y, the Pods, and
//! `status.nodes`. It then keeps serving until Ctrl-C/SIGTERM, or, with
//! `--exit-after-converge`, exits 0 once converged (non-zero when `--timeout` passes first).

#[cfg(feature = "sample-memcached")]
mod memcached;
#[cfg(feature = "sample-memcached")]
mod progress;
#[cfg(feature = "sample-memcached")]
mod webhooks;

use std::path::{Path, PathBuf};

use korral_apiserver::StorageError;
use korral_apiserver::{ApiServer, ServerConfig, StartError, StorageMode};

/// The samples `korral up` can run.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// The Operator SDK tutorial's Memcached operator with `memcached-sample` (size 3).
    Memcached,
}

/// Options of `korral up`.
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
    /// Where to write the kubeconfig for the control plane.
    #[arg(long, default_value = ".korral/kubeconfig")]
    kubeconfig: PathBuf,
    /// Install and run a sample operator and apply its sample resource.
    #[arg(long, value_enum)]
    sample: Option<Sample>,
    /// Exit (0) once the sample has converged instead of serving until Ctrl-C.
    #[arg(long, requires = "sample")]
    exit_after_converge: bool,
    /// How long the sample may take to converge, in seconds (with `--exit-after-converge`
    /// the command fails after it; otherwise a warning is printed and serving continues).
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    timeout: u64,
    /// Do not simulate workloads (Deployments then get no Pods).
    #[arg(long)]
    no_simulation: bool,
    /// Inject faults on purpose, from this YAML or JSON file (see the README's "Fault
    /// injection"). A bad file stops the command at start.
    #[arg(long, value_name = "FILE")]
    faults: Option<PathBuf>,
}

/// Runs `korral up`.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let faults = crate::apiserver::load_faults(args.faults.as_deref())?;
    let storage = if args.in_memory {
        StorageMode::InMemory
    } else {
        StorageMode::Durable(args.data_dir.clone())
    };
    let config = ServerConfig {
        storage,
        port: args.port,
        kubeconfig: Some(args.kubeconfig.clone()),
        simulation: !args.no_simulation,
        faults,
        ..ServerConfig::default()
    };
    let server = ApiServer::start(config)
        .await
        .map_err(|e| start_error(e, &args.data_dir))?;
    let kubeconfig = std::fs::canonicalize(&args.kubeconfig).unwrap_or(args.kubeconfig.clone());
    println!("korral up: control plane listening on {}", server.url());
    println!("kubeconfig written to {}", kubeconfig.display());
    println!("point kubectl at it with:");
    println!("  export KUBECONFIG={}", kubeconfig.display());
    match args.sample {
        None => println!("  kubectl get nodes"),
        Some(Sample::Memcached) => println!("  kubectl get memcached"),
    }
    if args.no_simulation {
        println!("workload simulation is off: Deployments get no Pods");
    }

    let Some(Sample::Memcached) = args.sample else {
        crate::apiserver::shutdown_signal().await;
        println!("shutting down");
        server.shutdown().await;
        return Ok(());
    };

    #[cfg(feature = "sample-memcached")]
    let outcome = memcached::run_memcached(server.kubeconfig_yaml(), server.url(), &args).await;
    #[cfg(not(feature = "sample-memcached"))]
    let outcome = Err(anyhow::anyhow!(
        "this korral was built without the Memcached sample (feature `sample-memcached`)"
    ));
    println!("shutting down");
    server.shutdown().await;
    outcome
}

/// Explains why the control plane did not start; a held data directory says who holds it.
fn start_error(error: StartError, data_dir: &Path) -> anyhow::Error {
    match error {
        StartError::Storage(StorageError::Locked { path, lock }) => anyhow::anyhow!(
            "the data directory {path} is in use: another korral is using it (it holds the lock file {lock}). \
             Stop the other `korral up`/`korral apiserver`, or pass a different --data-dir (or --in-memory)."
        ),
        other => anyhow::Error::new(other).context(format!(
            "starting the embedded control plane (data directory {})",
            data_dir.display()
        )),
    }
}
