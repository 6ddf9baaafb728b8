//! `korral`: the Operator SDK workflow for Rust.

mod apiserver;
mod up;

use clap::{Parser, Subcommand};

/// Korral: build, test and run Kubernetes operators in Rust.
#[derive(Parser)]
#[command(name = "korral", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the local control plane (durable, with workload simulation) and, with
    /// `--sample memcached`, run the Memcached operator and its sample until it converges.
    Up(up::Args),
    /// Run the embedded Kubernetes-compatible API server.
    Apiserver(apiserver::Args),
}

fn init_tracing(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KORRAL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // `up` shows its own progress on stdout; its logs stay quiet unless KORRAL_LOG asks.
    init_tracing(if matches!(cli.command, Command::Up(_)) {
        "warn"
    } else {
        "info"
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match cli.command {
            Command::Up(args) => up::run(args).await,
            Command::Apiserver(args) => apiserver::run(args).await,
        }
    })
}
