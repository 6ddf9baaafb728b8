//! `korral-bench runtime`: a Korral controller (`korral_runtime`) against a plain kube-runtime
//! controller doing the same work on the same embedded API server.
//!
//! For each of N `Widget` custom resources both controllers merge-patch `status.observed =
//! spec.n` through the status subresource. Measured per implementation, on a fresh namespace:
//! the time from controller start (objects already created) to convergence (every status set,
//! polled with a paginated list every 50 ms), and the resident memory delta of the process
//! (`VmRSS` before the controller starts vs after convergence) divided by N.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::core::v1::Namespace;
use korral_runtime::cache::Scope;
use korral_runtime::controller::Controller as KorralController;
use korral_runtime::manager::Manager;
use korral_runtime::metrics::Registry;
use korral_runtime::reconcile::{Action as KorralAction, ReconcileResult};
use korral_testenv::TestEnv;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, CustomResource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Concurrent reconciles for both controllers (kube-runtime's default is unbounded, Korral's 1).
pub const CONCURRENCY: usize = 16;
/// Upper bound on one convergence.
const CONVERGE_LIMIT: Duration = Duration::from_secs(600);

/// The benchmark's custom resource.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[kube(
    group = "bench.korral.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
pub struct WidgetSpec {
    /// The value the controller copies into the status.
    pub n: i64,
}

/// The status the controllers set.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
pub struct WidgetStatus {
    /// `spec.n` once reconciled.
    pub observed: Option<i64>,
}

/// Which controller implementation to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// `korral_runtime::manager::Manager` + `korral_runtime::controller::Controller`.
    Korral,
    /// `kube::runtime::Controller`.
    KubeRuntime,
    /// No controller and no cache: the same N status patches sent directly (the API server's
    /// and client's share of the RSS delta, subtracted for the net rows).
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
            other => bail!("unknown implementation {other:?} (korral or kube-runtime)"),
        }
    }
}

/// One implementation's figures for one N.
#[derive(Clone, Copy, Debug)]
pub struct Measurement {
    /// Objects reconciled.
    pub n: usize,
    /// Controller start to convergence.
    pub converge: Duration,
    /// `VmRSS` after convergence minus before start, in bytes (may be negative).
    pub rss_delta: i64,
}

impl Measurement {
    /// Resident bytes per cached object.
    pub fn bytes_per_object(&self) -> f64 {
        self.rss_delta as f64 / self.n.max(1) as f64
    }

    /// One line for a child process to print.
    pub fn to_line(&self) -> String {
        format!(
            "RESULT n={} nanos={} rss_delta={}",
            self.n,
            self.converge.as_nanos(),
            self.rss_delta
        )
    }

    /// Parses [`Measurement::to_line`] out of a child's output.
    pub fn from_output(out: &str) -> Result<Self> {
        let line = out
            .lines()
            .find(|l| l.starts_with("RESULT "))
            .context("no RESULT line in the child's output")?;
        let (mut n, mut nanos, mut rss) = (None, None, None);
        for field in line.split_whitespace().skip(1) {
            match field.split_once('=') {
                Some(("n", v)) => n = Some(v.parse::<usize>()?),
                Some(("nanos", v)) => nanos = Some(v.parse::<u64>()?),
                Some(("rss_delta", v)) => rss = Some(v.parse::<i64>()?),
                _ => {}
            }
        }
        Ok(Self {
            n: n.context("n")?,
            converge: Duration::from_nanos(nanos.context("nanos")?),
            rss_delta: rss.context("rss_delta")?,
        })
    }
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

async fn create_widgets(client: &Client, ns: &str, n: usize) -> Result<()> {
    let api: Api<Widget> = Api::namespaced(client.clone(), ns);
    stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let mut w = Widget::new(&format!("w-{i}"), WidgetSpec { n: i as i64 });
                w.metadata.namespace = Some(ns.to_owned());
                api.create(&PostParams::default(), &w)
                    .await
                    .with_context(|| format!("creating widget w-{i}"))
            }
        })
        .buffer_unordered(32)
        .try_for_each(|_| async { Ok(()) })
        .await
}

/// Objects in `ns` whose status is converged, listed in pages of 500.
async fn converged(api: &Api<Widget>) -> Result<usize> {
    let mut done = 0;
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await.context("listing widgets")?;
        done += page
            .items
            .iter()
            .filter(|w| w.status.as_ref().and_then(|s| s.observed) == Some(w.spec.n))
            .count();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(done),
        }
    }
}

async fn wait_converged(api: &Api<Widget>, n: usize) -> Result<()> {
    let deadline = Instant::now() + CONVERGE_LIMIT;
    loop {
        if converged(api).await? >= n {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{n} widgets not converged within {CONVERGE_LIMIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn status_patch(w: &Widget) -> Option<(String, Patch<serde_json::Value>)> {
    if w.status.as_ref().and_then(|s| s.observed) == Some(w.spec.n) {
        return None;
    }
    let name = w.metadata.name.clone()?;
    Some((
        name,
        Patch::Merge(json!({"status": {"observed": w.spec.n}})),
    ))
}

async fn korral_reconcile(w: Arc<Widget>, api: Arc<Api<Widget>>) -> ReconcileResult {
    if let Some((name, patch)) = status_patch(&w) {
        api.patch_status(&name, &PatchParams::default(), &patch)
            .await?;
    }
    Ok(KorralAction::done())
}

async fn kube_reconcile(
    w: Arc<Widget>,
    api: Arc<Api<Widget>>,
) -> Result<kube::runtime::controller::Action, kube::Error> {
    if let Some((name, patch)) = status_patch(&w) {
        api.patch_status(&name, &PatchParams::default(), &patch)
            .await?;
    }
    Ok(kube::runtime::controller::Action::await_change())
}

fn kube_error_policy(
    _: Arc<Widget>,
    _: &kube::Error,
    _: Arc<Api<Widget>>,
) -> kube::runtime::controller::Action {
    kube::runtime::controller::Action::requeue(Duration::from_millis(100))
}

/// Runs one implementation's controller over the `n` widgets already in `ns` until they
/// converge, and measures it.
async fn run_controller(which: Impl, client: &Client, ns: &str, n: usize) -> Result<Measurement> {
    let api: Api<Widget> = Api::namespaced(client.clone(), ns);
    let ctx = Arc::new(api.clone());
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown = {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    let before = vm_rss()?;
    let start = Instant::now();
    let task = match which {
        Impl::Baseline => {
            let api = api.clone();
            tokio::spawn(async move {
                stream::iter(0..n)
                    .map(|i| {
                        let api = api.clone();
                        async move {
                            let patch = Patch::Merge(json!({"status": {"observed": i as i64}}));
                            api.patch_status(&format!("w-{i}"), &PatchParams::default(), &patch)
                                .await
                                .map_err(anyhow::Error::from)
                        }
                    })
                    .buffer_unordered(CONCURRENCY)
                    .try_for_each(|_| async { Ok(()) })
                    .await
            })
        }
        Impl::Korral => {
            let mut manager = Manager::builder(client.clone())
                .metrics_registry(Registry::new())
                .build()
                .context("building the manager")?;
            let controller = KorralController::new(manager.cache().clone(), "bench-widgets")
                .for_::<Widget>(Scope::namespace(ns))
                .max_concurrent_reconciles(CONCURRENCY);
            manager.add_controller(controller, korral_reconcile, ctx);
            tokio::spawn(async move { manager.run(shutdown).await.map_err(anyhow::Error::from) })
        }
        Impl::KubeRuntime => {
            let config = kube::runtime::controller::Config::default()
                .concurrency(u16::try_from(CONCURRENCY).unwrap_or(u16::MAX));
            let controller = kube::runtime::Controller::new(
                api.clone(),
                kube::runtime::watcher::Config::default(),
            )
            .with_config(config)
            .graceful_shutdown_on(shutdown);
            tokio::spawn(async move {
                controller
                    .run(kube_reconcile, kube_error_policy, ctx)
                    .for_each(|_| async {})
                    .await;
                Ok(())
            })
        }
    };
    let waited = wait_converged(&api, n).await;
    let converge = start.elapsed();
    let after = vm_rss()?;
    stop.send_replace(true);
    tokio::time::timeout(Duration::from_secs(30), task)
        .await
        .context("controller did not stop")?
        .context("controller task panicked")??;
    waited?;
    Ok(Measurement {
        n,
        converge,
        rss_delta: after - before,
    })
}

/// Measures one implementation for `n` objects on its own embedded API server (so another
/// implementation's cache never shares the process state being measured... as far as the
/// allocator allows, see [`RuntimeOptions::isolate`]).
pub async fn measure(which: Impl, n: usize) -> Result<Measurement> {
    let env = TestEnv::start()
        .await
        .context("starting the embedded API server")?;
    env.install_crd_for::<Widget>()
        .await
        .context("installing the Widget CRD")?;
    let client = env.client();
    let ns = format!("bench-{}-{n}", which.name());
    create_namespace(&client, &ns).await?;
    create_widgets(&client, &ns, n).await?;
    let result = run_controller(which, &client, &ns, n).await;
    drop(client);
    env.shutdown().await;
    result
}

/// Options for [`run_runtime`].
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Object counts, one measurement per implementation each.
    pub counts: Vec<usize>,
    /// Run each measurement in a child process (`korral-bench runtime --only IMPL --counts N`)
    /// so no allocator state is shared; otherwise sequentially in this process.
    pub isolate: bool,
    /// Runs per implementation and count; the median time and median RSS delta are reported.
    pub repeats: usize,
}

impl RuntimeOptions {
    /// Defaults: 1,000 and 10,000 objects (quick: 200), isolated.
    pub fn new(quick: bool) -> Self {
        Self {
            counts: if quick {
                vec![200]
            } else {
                vec![1_000, 10_000]
            },
            isolate: true,
            repeats: if quick { 1 } else { 3 },
        }
    }
}

async fn measure_isolated(which: Impl, n: usize) -> Result<Measurement> {
    let exe = std::env::current_exe().context("locating this executable")?;
    let out = tokio::process::Command::new(exe)
        .args([
            "runtime",
            "--only",
            which.name(),
            "--counts",
            &n.to_string(),
        ])
        .output()
        .await
        .context("running the child benchmark")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "child {} n={n} failed ({}): {}{}",
            which.name(),
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Measurement::from_output(&stdout)
}

/// Both implementations' figures for one N.
#[derive(Clone, Copy, Debug)]
pub struct Pair {
    /// Korral's.
    pub korral: Measurement,
    /// kube-runtime's.
    pub kube: Measurement,
    /// The same patches without any controller or cache.
    pub baseline: Measurement,
}

/// The result of [`run_runtime`].
#[derive(Clone, Debug)]
pub struct RuntimeReport {
    /// One pair per count.
    pub pairs: Vec<Pair>,
    /// Whether each measurement ran in its own process.
    pub isolated: bool,
    /// Runs per implementation and count (medians reported).
    pub repeats: usize,
}

/// Measures Korral and kube-runtime, one after the other, for every count.
pub async fn run_runtime(opts: &RuntimeOptions) -> Result<RuntimeReport> {
    let mut pairs = Vec::new();
    for &n in &opts.counts {
        let run = |which| async move {
            let mut runs = Vec::new();
            for _ in 0..opts.repeats.max(1) {
                runs.push(if opts.isolate {
                    measure_isolated(which, n).await?
                } else {
                    measure(which, n).await?
                });
            }
            Ok::<_, anyhow::Error>(median(&runs))
        };
        let korral = run(Impl::Korral).await?;
        let kube = run(Impl::KubeRuntime).await?;
        let baseline = run(Impl::Baseline).await?;
        pairs.push(Pair {
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

/// The median time and the median RSS delta (taken independently) of `runs` (not empty).
fn median(runs: &[Measurement]) -> Measurement {
    let mut times: Vec<Duration> = runs.iter().map(|m| m.converge).collect();
    let mut rss: Vec<i64> = runs.iter().map(|m| m.rss_delta).collect();
    times.sort();
    rss.sort_unstable();
    Measurement {
        n: runs[0].n,
        converge: times[times.len() / 2],
        rss_delta: rss[rss.len() / 2],
    }
}

fn ratio(kube: f64, korral: f64) -> String {
    if korral > 0.0 && kube.is_finite() {
        format!("{:.2}", kube / korral)
    } else {
        "n/a".to_owned()
    }
}

impl fmt::Display for RuntimeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<38} {:>14} {:>14} {:>8}",
            "metric", "Korral", "kube-runtime", "ratio"
        )?;
        for p in &self.pairs {
            let n = p.korral.n;
            let (a, b) = (
                p.korral.converge.as_secs_f64(),
                p.kube.converge.as_secs_f64(),
            );
            writeln!(
                f,
                "{:<38} {:>14} {:>14} {:>8}",
                format!("time to converge, N={n} (ms)"),
                format!("{:.1}", a * 1e3),
                format!("{:.1}", b * 1e3),
                ratio(b, a)
            )?;
            let (a, b) = (p.korral.bytes_per_object(), p.kube.bytes_per_object());
            writeln!(
                f,
                "{:<38} {:>14} {:>14} {:>8}",
                format!("RSS per cached object, N={n} (B)"),
                format!("{a:.0}"),
                format!("{b:.0}"),
                ratio(b, a)
            )?;
            let base = p.baseline.bytes_per_object();
            let (a, b) = (a - base, b - base);
            writeln!(
                f,
                "{:<38} {:>14} {:>14} {:>8}",
                format!("  net of baseline ({base:.0} B), N={n}"),
                format!("{a:.0}"),
                format!("{b:.0}"),
                ratio(b, a)
            )?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "ratio = kube-runtime / Korral (>= 1.00 means Korral meets the goal: time <= and memory <= kube-runtime's)."
        )?;
        writeln!(
            f,
            "Method: each run starts an in-process embedded API server (korral-testenv, in-memory), installs a Widget CRD\n\
             (bench.korral.dev/v1, spec.n) and creates N widgets in a fresh namespace; then a controller (concurrency {CONCURRENCY}) is\n\
             started and merge-patches status.observed = spec.n through the status subresource. Time: controller start to all N\n\
             statuses set, polled with a paginated list (500 per page) every 50 ms. Memory: process VmRSS after convergence minus\n\
             before controller start, / N (includes the API server's growth from N status writes, equal for both; negative or\n\
             noisy values mean allocator reuse); the net rows subtract a baseline run sending the same patches directly, no\n\
             controller or cache. Korral = korral_runtime Manager + Controller; kube-runtime = kube::runtime::Controller."
        )?;
        writeln!(
            f,
            "Figures are medians of {} run(s) per implementation and N (time and RSS delta taken independently).",
            self.repeats
        )?;
        if self.isolated {
            writeln!(
                f,
                "Each implementation/N ran in its own child process, sequentially (Korral, kube-runtime, baseline)."
            )
        } else {
            writeln!(
                f,
                "Both ran sequentially in this process (Korral, kube-runtime, baseline; each dropped before the next started)."
            )
        }
    }
}
