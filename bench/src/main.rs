//! `korral-bench`: run Korral's benchmarks and print the results against their targets.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use korral_bench::runtime::Workload;
use korral_bench::{ApiserverOptions, run_apiserver};

/// Benchmarks for Korral, printed as a table of measured figure, target and goal ratio.
#[derive(Parser)]
#[command(name = "korral-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Benchmark the embedded API server (`korral apiserver`).
    Apiserver(ApiserverArgs),
    /// Compare a Korral controller with a kube-runtime controller on the embedded API server.
    Runtime(RuntimeArgs),
}

#[derive(clap::Args)]
struct RuntimeArgs {
    /// 200 objects instead of 1,000 and 10,000 (explicit --counts still apply).
    #[arg(long)]
    quick: bool,
    /// Object counts, comma separated.
    #[arg(long, value_delimiter = ',')]
    counts: Option<Vec<usize>>,
    /// Runs per implementation and count, medians reported (default 3, quick 1).
    #[arg(long)]
    repeats: Option<usize>,
    /// Run every measurement in this process instead of one child process each.
    #[arg(long)]
    in_process: bool,
    /// Injected latencies per request in milliseconds, comma separated (default 0,2,5).
    #[arg(long, value_delimiter = ',')]
    latency_ms: Option<Vec<u64>>,
    /// Workloads, comma separated: status-patch, helloapp (default both).
    #[arg(long, value_delimiter = ',')]
    workload: Option<Vec<String>>,
    /// Object count of the HelloApp-like workload and of the rows with latency (default 1000,
    /// quick 200).
    #[arg(long)]
    latency_count: Option<usize>,
    /// Internal: measure only this implementation (korral, kube-runtime or baseline) in this
    /// process and print a RESULT line.
    #[arg(long, hide = true)]
    only: Option<String>,
}

#[derive(clap::Args)]
struct ApiserverArgs {
    /// Reduced counts (a smoke run of a few seconds); explicit counts below still apply.
    #[arg(long)]
    quick: bool,
    /// Timed server starts (median reported).
    #[arg(long)]
    startups: Option<usize>,
    /// Creates per throughput measurement.
    #[arg(long)]
    creates: Option<usize>,
    /// Concurrent clients for the concurrent create rows (each its own kube::Client).
    #[arg(long)]
    clients: Option<usize>,
    /// ConfigMaps in the namespace whose full list is timed.
    #[arg(long)]
    list_objects: Option<usize>,
    /// Timed full lists.
    #[arg(long)]
    lists: Option<usize>,
    /// Timed watch events.
    #[arg(long)]
    watch_events: Option<usize>,
    /// ConfigMaps (1 KiB each) created for the memory measurement.
    #[arg(long)]
    memory_objects: Option<usize>,
    /// Watches (and idle connections) held open for the per-watch memory rows.
    #[arg(long)]
    watches: Option<usize>,
    /// ConfigMaps (16 KiB each) whose full list's peak memory is measured.
    #[arg(long)]
    list_memory_objects: Option<usize>,
    /// Upper bound in seconds on each create-throughput measurement.
    #[arg(long)]
    phase_limit_secs: Option<u64>,
    /// The korral binary (default: next to this executable, built if needed).
    #[arg(long)]
    korral: Option<PathBuf>,
    /// Don't run `cargo build -p korral-cli` before measuring.
    #[arg(long)]
    no_build: bool,
    /// Another `korral` binary (an earlier build) whose in-memory create throughput is measured
    /// side by side with this one's, in alternating rounds: adds the ratio row
    /// `create_vs_baseline` (this / baseline).
    #[arg(long)]
    baseline_korral: Option<PathBuf>,
    /// Directory under which the durable server's data directory is created (default: the
    /// system temporary directory).
    #[arg(long)]
    data_parent: Option<PathBuf>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

impl ApiserverArgs {
    fn options(&self) -> ApiserverOptions {
        let mut o = ApiserverOptions::new(self.quick);
        let set = |field: &mut usize, v: Option<usize>| {
            if let Some(v) = v {
                *field = v;
            }
        };
        set(&mut o.startups, self.startups);
        set(&mut o.creates, self.creates);
        set(&mut o.clients, self.clients);
        set(&mut o.list_objects, self.list_objects);
        set(&mut o.lists, self.lists);
        set(&mut o.watch_events, self.watch_events);
        set(&mut o.memory_objects, self.memory_objects);
        set(&mut o.watches, self.watches);
        set(&mut o.list_memory_objects, self.list_memory_objects);
        if let Some(s) = self.phase_limit_secs {
            o.phase_limit = Duration::from_secs(s);
        }
        o.korral = self.korral.clone();
        o.baseline_korral = self.baseline_korral.clone();
        o.build_korral = !self.no_build;
        o.data_parent = self.data_parent.clone();
        o
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    match cli.command {
        Command::Apiserver(args) => {
            let report = runtime.block_on(run_apiserver(&args.options()))?;
            println!("{report}");
            if let Some(path) = &args.json {
                let json = serde_json::to_string_pretty(&report.to_json())?;
                std::fs::write(path, json + "\n")
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
        Command::Runtime(args) => {
            let mut opts = korral_bench::RuntimeOptions::new(args.quick);
            if let Some(counts) = args.counts {
                opts.counts = counts;
            }
            opts.isolate = !args.in_process;
            if let Some(r) = args.repeats {
                opts.repeats = r;
            }
            if let Some(l) = args.latency_ms {
                opts.latencies_ms = l;
            }
            if let Some(n) = args.latency_count {
                opts.latency_count = n;
            }
            if let Some(w) = &args.workload {
                opts.workloads = w
                    .iter()
                    .map(|w| Workload::parse(w))
                    .collect::<anyhow::Result<_>>()?;
            }
            if let Some(only) = &args.only {
                // A child of an isolated run: exactly one scenario.
                let which = korral_bench::runtime::Impl::parse(only)?;
                let (Some(&workload), Some(&n), Some(&ms)) = (
                    opts.workloads.first(),
                    opts.counts.first(),
                    opts.latencies_ms.first(),
                ) else {
                    anyhow::bail!("--only needs --workload, --counts and --latency-ms");
                };
                let scenario = korral_bench::runtime::Scenario {
                    workload,
                    n,
                    latency: Duration::from_millis(ms),
                };
                let m = runtime.block_on(korral_bench::runtime::measure(which, scenario))?;
                println!("{}", m.to_line());
            } else {
                let report = runtime.block_on(korral_bench::run_runtime(&opts))?;
                println!("{report}");
            }
        }
    }
    Ok(())
}
