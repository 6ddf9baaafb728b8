//! `korral`: the Operator SDK workflow for Rust.

mod apiserver;

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
    /// Run the embedded Kubernetes-compatible API server.
    Apiserver(apiserver::Args),
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KORRAL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_tracing();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match cli.command {
            Command::Apiserver(args) => apiserver::run(args).await,
        }
    })
}
