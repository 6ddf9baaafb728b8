//! `korral-bench runtime`: a Korral controller (`korral_runtime`) against a plain kube-runtime
//! controller doing the same work on the same embedded API server, on the fast embedded server
//! and with latency injected into every request (a loaded real cluster answers in milliseconds).
//!
//! Two workloads (see [`Workload`]): the status-patch one (N `Widget`s, one status patch each)
//! and a HelloApp-like one (N `Hello`s, each kept as a Deployment whose status is copied back).
//! Measured per implementation, on a fresh server and namespace, objects created before the
//! controller starts: the time from controller start to convergence (polled with a paginated
//! list every 50 ms on a separate, uncounted client), the resident memory delta of the process
//! divided by N, the reconciles run and the API requests the controller's client sent (its cache
//! included), counted below both implementations by a tower layer on their `kube::Client`.

pub mod counter;
pub mod helloapp;
pub mod measurement;
pub mod status_patch;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use korral_apiserver::FaultConfig;
use korral_testenv::TestEnv;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

pub use counter::{RequestCounter, RequestCounts};
pub use measurement::Measurement;

/// Concurrent reconciles for both controllers (kube-runtime's default is unbounded, Korral's 1).
pub const CONCURRENCY: usize = 16;
/// Upper bound on one convergence.
const CONVERGE_LIMIT: Duration = Duration::from_secs(600);

/// Which controller implementation to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// `korral_runtime::manager::Manager` + `korral_runtime::controller::Controller`.
    Korral,
    /// `kube::runtime::Controller`.
    KubeRuntime,
    /// No controller and no cache: the same N status patches sent directly (the API server's
    /// and client's share of the RSS delta, subtracted for the net rows; status-patch only).
    Baseline,
}

impl Impl {
    /// The name used on the command line and in output.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Korral => "korral",
            Impl::KubeRuntime => "kube-runtime",
            Impl::Baseline => "baseline",
        }
    }

    /// Parses [`Impl::name`].
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "korral" => Ok(Impl::Korral),
            "kube-runtime" => Ok(Impl::KubeRuntime),
            "baseline" => Ok(Impl::Baseline),
            other => bail!("unknown implementation {other:?} (korral, kube-runtime or baseline)"),
        }
    }
}

/// What the controllers do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// One status patch per `Widget` ([`status_patch`]).
    StatusPatch,
    /// Custom resource → Deployment → status from the Deployment ([`helloapp`]).
    HelloApp,
}

impl Workload {
    /// The name used on the command line and in output.
    pub fn name(self) -> &'static str {
        match self {
            Workload::StatusPatch => "status-patch",
            Workload::HelloApp => "helloapp",
        }
    }

    /// Parses [`Workload::name`].
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "status-patch" => Ok(Workload::StatusPatch),
            "helloapp" => Ok(Workload::HelloApp),
            other => bail!("unknown workload {other:?} (status-patch or helloapp)"),
        }
    }
}

/// One measured situation: a workload, a number of objects and the latency added to every
/// request the server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// What the controllers do.
    pub workload: Workload,
    /// Objects.
    pub n: usize,
    /// Latency injected before the server handles each request (zero: none).
    pub latency: Duration,
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} N={} +{}ms",
            self.workload.name(),
            self.n,
            self.latency.as_millis()
        )
    }
}

/// A running controller (or baseline) and its reconcile count.
pub struct Running {
    task: tokio::task::JoinHandle<Result<()>>,
    reconciles: Arc<AtomicU64>,
}

/// Tells a controller to stop (flips to `true`).
pub type Shutdown = tokio::sync::watch::Receiver<bool>;

/// Resolves once `shutdown` flips to `true`.
async fn stopped(mut shutdown: Shutdown) {
    let _ = shutdown.wait_for(|s| *s).await;
}

/// The process's resident set size in bytes, from `/proc/self/status`.
pub fn vm_rss() -> Result<i64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS in /proc/self/status")?;
    let kib: i64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .context("parsing VmRSS")?;
    Ok(kib * 1024)
}

async fn create_namespace(client: &Client, ns: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &namespace).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e).with_context(|| format!("creating namespace {ns}")),
    }
}

/// Creates the `n` objects `make(0..n)` in `ns`, 32 requests at a time.
async fn create_all<K>(client: &Client, ns: &str, n: usize, make: impl Fn(usize) -> K) -> Result<()>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    futures::stream::iter((0..n).map(make))
        .map(|obj| {
            let api = api.clone();
            async move {
                let name = obj.meta().name.clone().unwrap_or_default();
                api.create(&PostParams::default(), &obj)
                    .await
                    .with_context(|| format!("creating {name}"))
            }
        })
        .buffer_unordered(32)
        .try_for_each(|_| async { Ok(()) })
        .await
}

/// The objects in `ns` for which `done` holds, listed in pages of 500.
async fn count_where<K>(client: &Client, ns: &str, done: impl Fn(&K) -> bool) -> Result<usize>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let mut count = 0;
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await.context("listing")?;
        count += page.items.iter().filter(|o| done(o)).count();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(count),
        }
    }
}

/// A client of `env` whose requests are counted into `counter`.
async fn counted_client(env: &TestEnv, counter: &RequestCounter) -> Result<Client> {
    let kubeconfig = Kubeconfig::read_from(env.kubeconfig_path()).context("reading kubeconfig")?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .context("loading kubeconfig")?;
    Ok(kube::client::ClientBuilder::try_from(config)
        .context("building a client")?
        .with_layer(&counter.layer())
        .build())
}

async fn wait_converged(workload: Workload, client: &Client, ns: &str, n: usize) -> Result<()> {
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        let done = match workload {
            Workload::StatusPatch => {
                count_where(client, ns, status_patch::Widget::converged).await?
            }
            Workload::HelloApp => count_where(client, ns, helloapp::Hello::converged).await?,
        };
        if done >= n {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{done} of {n} objects converged within {CONVERGE_LIMIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Measures one implementation in one scenario on its own embedded API server.
pub async fn measure(which: Impl, scenario: Scenario) -> Result<Measurement> {
    let Scenario {
        workload,
        n,
        latency,
    } = scenario;
    let env = TestEnv::start()
        .await
        .context("starting the embedded API server")?;
    match workload {
        Workload::StatusPatch => env.install_crd_for::<status_patch::Widget>().await,
        Workload::HelloApp => env.install_crd_for::<helloapp::Hello>().await,
    }
    .context("installing the CRD")?;
    let setup = env.client();
    let ns = format!("bench-{}-{n}", which.name());
    create_namespace(&setup, &ns).await?;
    match workload {
        Workload::StatusPatch => create_all(&setup, &ns, n, status_patch::widget).await?,
        Workload::HelloApp => create_all(&setup, &ns, n, helloapp::hello).await?,
    }
    // The set-up ran at full speed; from here every request pays the injected latency.
    if !latency.is_zero() {
        env.faults()
            .set(FaultConfig::latency(latency))
            .context("injecting latency")?;
    }
    let counter = RequestCounter::default();
    let client = counted_client(&env, &counter).await?;
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let before = vm_rss()?;
    let start = Instant::now();
    // The HelloApp workload needs someone to report Deployments ready, as a cluster would.
    let cluster = (workload == Workload::HelloApp).then(|| {
        tokio::spawn(helloapp::run_cluster(
            setup.clone(),
            ns.clone(),
            shutdown.clone(),
        ))
    });
    let running = match workload {
        Workload::StatusPatch => status_patch::start(which, &client, &ns, shutdown)?,
        Workload::HelloApp => helloapp::start(which, &client, &ns, shutdown)?,
    };
    let waited = wait_converged(workload, &setup, &ns, n).await;
    let converge = start.elapsed();
    let after = vm_rss()?;
    let requests = counter.snapshot();
    let reconciles = running.reconciles.load(Ordering::Relaxed);
    stop.send_replace(true);
    tokio::time::timeout(Duration::from_secs(30), running.task)
        .await
        .context("controller did not stop")?
        .context("controller task panicked")??;
    if let Some(cluster) = cluster {
        tokio::time::timeout(Duration::from_secs(30), cluster)
            .await
            .context("the cluster stand-in did not stop")?
            .context("the cluster stand-in panicked")??;
    }
    waited?;
    drop((client, setup));
    env.shutdown().await;
    Ok(Measurement {
        n,
        converge,
        rss_delta: after - before,
        reconciles,
        requests,
    })
}

/// Options for [`run_runtime`].
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Object counts measured without injected latency (status-patch workload).
    pub counts: Vec<usize>,
    /// Object count of the HelloApp-like workload and of every row with injected latency.
    pub latency_count: usize,
    /// Injected latencies per request, in milliseconds (0: none).
    pub latencies_ms: Vec<u64>,
    /// The workloads measured.
    pub workloads: Vec<Workload>,
    /// Run each measurement in a child process (`korral-bench runtime --only IMPL ...`) so no
    /// allocator state is shared; otherwise sequentially in this process.
    pub isolate: bool,
    /// Runs per implementation and scenario; medians reported.
    pub repeats: usize,
}

impl RuntimeOptions {
    /// Defaults: status-patch with 1,000 and 10,000 objects, and both workloads with 1,000
    /// objects at 0, 2 and 5 ms (quick: 200 objects, one run each), isolated.
    pub fn new(quick: bool) -> Self {
        Self {
            counts: if quick {
                vec![200]
            } else {
                vec![1_000, 10_000]
            },
            latency_count: if quick { 200 } else { 1_000 },
            latencies_ms: vec![0, 2, 5],
            workloads: vec![Workload::StatusPatch, Workload::HelloApp],
            isolate: true,
            repeats: if quick { 1 } else { 3 },
        }
    }

    /// Every scenario these options ask for, in the order they are measured.
    pub fn scenarios(&self) -> Vec<Scenario> {
        let mut out = Vec::new();
        for &workload in &self.workloads {
            let mut push = |n: usize, ms: u64| {
                let s = Scenario {
                    workload,
                    n,
                    latency: Duration::from_millis(ms),
                };
                if !out.contains(&s) {
                    out.push(s);
                }
            };
            if workload == Workload::StatusPatch {
                for &n in &self.counts {
                    push(n, 0);
                }
            }
            for &ms in &self.latencies_ms {
                push(self.latency_count, ms);
            }
        }
        out
    }
}

async fn measure_isolated(which: Impl, scenario: Scenario) -> Result<Measurement> {
    let exe = std::env::current_exe().context("locating this executable")?;
    let out = tokio::process::Command::new(exe)
        .args([
            "runtime",
            "--only",
            which.name(),
            "--workload",
            scenario.workload.name(),
            "--counts",
            &scenario.n.to_string(),
            "--latency-ms",
            &scenario.latency.as_millis().to_string(),
        ])
        .output()
        .await
        .context("running the child benchmark")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "child {} {scenario} failed ({}): {}{}",
            which.name(),
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Measurement::from_output(&stdout)
}

/// Both implementations' figures for one scenario.
#[derive(Clone, Copy, Debug)]
pub struct Pair {
    /// What was measured.
    pub scenario: Scenario,
    /// Korral's.
    pub korral: Measurement,
    /// kube-runtime's.
    pub kube: Measurement,
    /// The same patches without any controller or cache (status-patch without latency only).
    pub baseline: Option<Measurement>,
}

/// The result of [`run_runtime`].
#[derive(Clone, Debug)]
pub struct RuntimeReport {
    /// One pair per scenario.
    pub pairs: Vec<Pair>,
    /// Whether each measurement ran in its own process.
    pub isolated: bool,
    /// Runs per implementation and scenario (medians reported).
    pub repeats: usize,
}

/// Measures Korral and kube-runtime, one after the other, in every scenario.
pub async fn run_runtime(opts: &RuntimeOptions) -> Result<RuntimeReport> {
    let mut pairs = Vec::new();
    for scenario in opts.scenarios() {
        let run = |which| async move {
            let mut runs = Vec::new();
            for _ in 0..opts.repeats.max(1) {
                runs.push(if opts.isolate {
                    measure_isolated(which, scenario).await?
                } else {
                    measure(which, scenario).await?
                });
            }
            Ok::<_, anyhow::Error>(measurement::median(&runs))
        };
        let korral = run(Impl::Korral).await?;
        let kube = run(Impl::KubeRuntime).await?;
        let baseline = if scenario.workload == Workload::StatusPatch && scenario.latency.is_zero() {
            Some(run(Impl::Baseline).await?)
        } else {
            None
        };
        pairs.push(Pair {
            scenario,
            korral,
            kube,
            baseline,
        });
    }
    Ok(RuntimeReport {
        pairs,
        isolated: opts.isolate,
        repeats: opts.repeats.max(1),
    })
}

fn ratio(kube: f64, korral: f64) -> String {
    if korral > 0.0 && kube.is_finite() && korral.is_finite() {
        format!("{:.2}", kube / korral)
    } else {
        "n/a".to_owned()
    }
}

fn row(
    f: &mut fmt::Formatter<'_>,
    metric: String,
    korral: String,
    kube: String,
    ratio: String,
) -> fmt::Result {
    writeln!(f, "{metric:<44} {korral:>12} {kube:>13} {ratio:>7}")
}

impl fmt::Display for RuntimeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        row(
            f,
            "metric".into(),
            "Korral".into(),
            "kube-runtime".into(),
            "ratio".into(),
        )?;
        for p in &self.pairs {
            let s = p.scenario;
            let (a, b) = (
                p.korral.converge.as_secs_f64(),
                p.kube.converge.as_secs_f64(),
            );
            row(
                f,
                format!("{s}: time to converge (ms)"),
                format!("{:.1}", a * 1e3),
                format!("{:.1}", b * 1e3),
                ratio(b, a),
            )?;
            let (a, b) = (
                p.korral.requests_per_reconcile(),
                p.kube.requests_per_reconcile(),
            );
            row(
                f,
                "  API requests per reconcile".into(),
                format!("{a:.2}"),
                format!("{b:.2}"),
                ratio(b, a),
            )?;
            let (ka, kb) = (p.korral.requests, p.kube.requests);
            row(
                f,
                "  requests (reads/watches/writes)".into(),
                format!("{}/{}/{}", ka.reads, ka.watches, ka.writes),
                format!("{}/{}/{}", kb.reads, kb.watches, kb.writes),
                ratio(kb.total() as f64, ka.total() as f64),
            )?;
            row(
                f,
                "  reconciles".into(),
                p.korral.reconciles.to_string(),
                p.kube.reconciles.to_string(),
                String::new(),
            )?;
            if s.latency.is_zero() {
                let (a, b) = (p.korral.bytes_per_object(), p.kube.bytes_per_object());
                row(
                    f,
                    "  RSS per cached object (B)".into(),
                    format!("{a:.0}"),
                    format!("{b:.0}"),
                    ratio(b, a),
                )?;
                if let Some(baseline) = p.baseline {
                    let base = baseline.bytes_per_object();
                    row(
                        f,
                        format!("    net of baseline ({base:.0} B)"),
                        format!("{:.0}", a - base),
                        format!("{:.0}", b - base),
                        ratio(b - base, a - base),
                    )?;
                }
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "ratio = kube-runtime / Korral (>= 1.00: Korral is as fast or faster, sends as few or fewer requests, uses as little or less memory)."
        )?;
        writeln!(
            f,
            "Method: each run starts an in-process embedded API server (korral-testenv, in-memory) and creates N objects in a\n\
             fresh namespace; then latency is injected into every request the server answers (its fault injection, +Nms),\n\
             and a controller (concurrency {CONCURRENCY}) is started. Time: controller start to all N converged, polled with a\n\
             paginated list (500 per page) every 50 ms on a separate client. Requests: everything the controller's client sent\n\
             (lists, watches, gets, writes), counted by a tower layer on its kube::Client, divided by the reconciles it ran.\n\
             status-patch: N Widgets (bench.korral.dev/v1), each merge-patched status.observed = spec.n through /status.\n\
             helloapp: N Hellos (bench.korral.dev/v1, size 1), each kept as an owned Deployment whose replicas and readyReplicas\n\
             are copied into the Hello's status; a kube-controller-manager stand-in (its own uncounted client) reports each\n\
             Deployment ready with one status write. Korral: for_/owns, create_or_update\n\
             reading the Deployment from the shared cache, status patched when changed. kube-runtime (idiomatic): for/owns, the\n\
             Hello from its reflector store, the Deployment server-side applied (no store for owned objects in its stable API),\n\
             status patched when changed.\n\
             Memory: process VmRSS after convergence minus before controller start, / N (includes the server's growth, equal for\n\
             both; noisy); the net rows subtract a baseline sending the same patches with no controller or cache."
        )?;
        writeln!(
            f,
            "Figures are medians of {} run(s) per implementation and scenario (each figure taken independently).",
            self.repeats
        )?;
        if self.isolated {
            writeln!(
                f,
                "Each implementation/scenario ran in its own child process, sequentially (Korral, kube-runtime, baseline)."
            )
        } else {
            writeln!(
                f,
                "All ran sequentially in this process (Korral, kube-runtime, baseline; each dropped before the next started)."
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_cover_counts_and_latencies_once() {
        let o = RuntimeOptions::new(false);
        let s: Vec<String> = o.scenarios().iter().map(ToString::to_string).collect();
        assert_eq!(
            s,
            [
                "status-patch N=1000 +0ms",
                "status-patch N=10000 +0ms",
                "status-patch N=1000 +2ms",
                "status-patch N=1000 +5ms",
                "helloapp N=1000 +0ms",
                "helloapp N=1000 +2ms",
                "helloapp N=1000 +5ms",
            ]
        );
    }
}
