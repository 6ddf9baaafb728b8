//! `korral`: the Operator SDK workflow for Rust.

mod apiserver;
mod build;
mod bundle;
mod cluster;
mod create_api;
mod create_webhook;
mod edit;
mod generate;
mod init;
mod installer;
mod kustomize;
mod project;
mod scaffold;
mod scorecard;
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
    /// Scaffold a new operator project.
    Init(init::Args),
    /// Add resources to a project.
    #[command(subcommand)]
    Create(CreateCommand),
    /// Change a project's settings (e.g. `--multigroup`).
    Edit(edit::Args),
    /// Write the CRDs, RBAC and deploy manifests under config/ from the operator's code.
    Generate(generate::Args),
    /// Install the CRDs into the cluster.
    Install(cluster::Target),
    /// Remove the CRDs (and every custom resource) from the cluster.
    Uninstall(cluster::Target),
    /// Build the manager and run it here against the cluster.
    Run(cluster::RunArgs),
    /// Deploy the operator (CRDs, RBAC, manager Deployment) to the cluster.
    Deploy(cluster::DeployArgs),
    /// Remove what `deploy` created.
    Undeploy(cluster::Target),
    /// Write `dist/install.yaml`: everything `deploy` applies, in one file.
    BuildInstaller(installer::Args),
    /// Write an OLM bundle (`bundle validate` checks one).
    Bundle(bundle::Args),
    /// Run operator-sdk's scorecard tests (suites basic and olm) against a bundle and a cluster.
    Scorecard(scorecard::Args),
}

#[derive(Subcommand)]
enum CreateCommand {
    /// Add an API (types and sample) and its controller.
    Api(create_api::Args),
    /// Add webhooks (defaulting, validation, conversion) to an API.
    Webhook(create_webhook::Args),
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
            Command::Init(args) => init::run(args),
            Command::Create(CreateCommand::Api(args)) => create_api::run(args),
            Command::Create(CreateCommand::Webhook(args)) => create_webhook::run(args),
            Command::Edit(args) => edit::run(args),
            Command::Generate(args) => generate::run(args),
            Command::Install(args) => cluster::install(args).await,
            Command::Uninstall(args) => cluster::uninstall(args).await,
            Command::Run(args) => cluster::run(args).await,
            Command::Deploy(args) => cluster::deploy(args).await,
            Command::Undeploy(args) => cluster::undeploy(args).await,
            Command::BuildInstaller(args) => installer::run(args),
            Command::Bundle(args) => bundle::run(args),
            Command::Scorecard(args) => scorecard::run(args).await,
        }
    })
}
