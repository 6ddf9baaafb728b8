//! `korral-bench apiserver`: startup, write throughput, list and watch latency, and memory of the
//! embedded API server, run as the `korral apiserver` process and driven over HTTPS by kube-rs
//! clients.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail, ensure};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};

use crate::probe::ReadyzProbe;
use crate::process::{ServerProcess, Storage, locate_korral, own_cpu_time};
use crate::report::{Goal, Report, Row, format_number};
use crate::stats::{ms, summarize};

/// Startup target: process start to `/readyz` ok.
pub const STARTUP_TARGET_MS: f64 = 50.0;
/// Create throughput target, in-memory, many clients.
pub const CREATE_MEMORY_TARGET: f64 = 10_000.0;
/// Create throughput target, durable, many clients.
pub const CREATE_DURABLE_TARGET: f64 = 2_000.0;
/// Full-list latency target at 10k objects.
pub const LIST_TARGET_MS: f64 = 100.0;
/// Watch delivery latency target (p99).
pub const WATCH_P99_TARGET_MS: f64 = 10.0;
/// Create throughput against a baseline build: no lower, within the noise of a shared machine.
pub const BASELINE_RATIO_TARGET: f64 = 0.9;

/// Size of the `payload` value of each ConfigMap in the memory measurement.
pub const MEMORY_PAYLOAD_BYTES: usize = 1024;

/// Size of the `payload` value of each ConfigMap in the list-memory measurement.
pub const LIST_MEMORY_PAYLOAD_BYTES: usize = 16 * 1024;

/// The rows `run_apiserver` produces, by id.
pub const ROW_IDS: [&str; 13] = [
    "startup",
    "create_memory_1",
    "create_memory_n",
    "create_durable_1",
    "create_durable_n",
    "list_p50",
    "list_p99",
    "watch_p50",
    "watch_p99",
    "rss_per_10k",
    "rss_per_watch",
    "rss_per_connection",
    "list_peak_rss",
];

/// What `run_apiserver` measures and how much.
#[derive(Debug, Clone)]
pub struct ApiserverOptions {
    /// Reduced counts (for smoke tests); recorded in the report.
    pub quick: bool,
    /// Timed server starts (median reported), after one untimed start.
    pub startups: usize,
    /// Creates per throughput measurement.
    pub creates: usize,
    /// Concurrent clients for the concurrent rows (each its own `kube::Client` and connection).
    pub clients: usize,
    /// Objects in the namespace that is listed.
    pub list_objects: usize,
    /// Timed full lists.
    pub lists: usize,
    /// Timed watch events.
    pub watch_events: usize,
    /// ConfigMaps (each with a 1 KiB value) created for the memory measurement.
    pub memory_objects: usize,
    /// Watches (and, separately, idle client connections) held open for the per-watch and
    /// per-connection memory rows.
    pub watches: usize,
    /// ConfigMaps (each with a 16 KiB value) whose full list's peak memory is measured.
    pub list_memory_objects: usize,
    /// Upper bound on each create-throughput measurement: creates stop being issued after it
    /// and the rate is computed over those done.
    pub phase_limit: Duration,
    /// The `korral` binary (default: next to this executable).
    pub korral: Option<PathBuf>,
    /// Run `cargo build -p korral-cli` first (a no-op when it is up to date).
    pub build_korral: bool,
    /// An earlier `korral` binary to compare create throughput with (row `create_vs_baseline`).
    pub baseline_korral: Option<PathBuf>,
    /// Directory under which the durable server's data directory is created (default: the
    /// system temporary directory).
    pub data_parent: Option<PathBuf>,
}

impl ApiserverOptions {
    /// The full run (`quick == false`, about a minute on 2 cores) or the reduced one.
    pub fn new(quick: bool) -> Self {
        if quick {
            Self {
                quick,
                startups: 3,
                creates: 300,
                clients: 16,
                list_objects: 500,
                lists: 5,
                watch_events: 30,
                memory_objects: 2_000,
                watches: 200,
                list_memory_objects: 300,
                phase_limit: Duration::from_secs(10),
                korral: None,
                build_korral: true,
                baseline_korral: None,
                data_parent: None,
            }
        } else {
            Self {
                quick,
                startups: 10,
                creates: 20_000,
                clients: 16,
                list_objects: 10_000,
                lists: 20,
                watch_events: 1_000,
                memory_objects: 10_000,
                watches: 500,
                list_memory_objects: 3_000,
                phase_limit: Duration::from_secs(30),
                korral: None,
                build_korral: true,
                baseline_korral: None,
                data_parent: None,
            }
        }
    }

    /// The reduced run.
    pub fn quick() -> Self {
        Self::new(true)
    }
}

impl Default for ApiserverOptions {
    fn default() -> Self {
        Self::new(false)
    }
}

fn progress(msg: impl AsRef<str>) {
    eprintln!("korral-bench: {}", msg.as_ref());
}

/// Runs every API server measurement and returns the report.
pub async fn run_apiserver(opts: &ApiserverOptions) -> anyhow::Result<Report> {
    ensure!(opts.startups > 0, "--startups must be at least 1");
    ensure!(opts.creates > 0, "--creates must be at least 1");
    ensure!(opts.clients > 1, "--clients must be at least 2");
    ensure!(opts.list_objects > 0, "--list-objects must be at least 1");
    ensure!(opts.lists > 0, "--lists must be at least 1");
    ensure!(opts.watch_events > 0, "--watch-events must be at least 1");
    ensure!(
        opts.memory_objects > 0,
        "--memory-objects must be at least 1"
    );
    ensure!(opts.watches > 0, "--watches must be at least 1");
    ensure!(
        opts.list_memory_objects > 0,
        "--list-memory-objects must be at least 1"
    );
    let bin = locate_korral(opts.korral.as_deref(), opts.build_korral)?;
    let run_started = Instant::now();
    let load_at_start = load_average();
    let mut rows = Vec::new();

    progress(format!(
        "startup: {} timed starts of {}",
        opts.startups,
        bin.display()
    ));
    rows.push(
        startup(&bin, opts.startups)
            .await
            .context("measuring startup time")?,
    );

    progress("in-memory server: create throughput, list latency, watch latency");
    let mut server = ServerProcess::spawn(&bin, &Storage::InMemory, false)
        .await
        .context("starting the in-memory server")?;
    let result = in_memory_suite(&server, opts).await;
    let result = result.map_err(|e| server.annotate(e));
    server.stop().await;
    rows.extend(result?);

    let parent = opts.data_parent.clone().unwrap_or_else(std::env::temp_dir);
    let data = tempfile::Builder::new()
        .prefix("korral-bench-data-")
        .tempdir_in(&parent)
        .with_context(|| format!("creating a data directory under {}", parent.display()))?;
    let data_dir = data.path().join("data");
    progress(format!(
        "durable server ({}): create throughput",
        data_dir.display()
    ));
    let mut server = ServerProcess::spawn(&bin, &Storage::Durable(data_dir.clone()), false)
        .await
        .context("starting the durable server")?;
    let result = durable_suite(&server, opts).await;
    let result = result.map_err(|e| server.annotate(e));
    server.stop().await;
    let mut durable_rows = result?;
    let fs = fs_type(&data_dir).unwrap_or_else(|| "unknown".to_string());
    for row in &mut durable_rows {
        row.note = format!("{}; data on {fs}", row.note);
    }
    rows.extend(durable_rows);
    drop(data);

    progress(format!(
        "memory: RSS of a fresh in-memory server before and after {} ConfigMaps",
        opts.memory_objects
    ));
    rows.push(
        memory(&bin, opts)
            .await
            .context("measuring memory per object")?,
    );

    progress(format!(
        "memory: RSS of a fresh in-memory server per open watch and per idle connection ({} each)",
        opts.watches
    ));
    rows.extend(
        watch_and_connection_memory(&bin, opts)
            .await
            .context("measuring memory per watch and per connection")?,
    );

    progress(format!(
        "memory: peak RSS of a fresh in-memory server while listing {} ConfigMaps of {} KiB",
        opts.list_memory_objects,
        LIST_MEMORY_PAYLOAD_BYTES / 1024
    ));
    rows.push(
        list_memory(&bin, opts)
            .await
            .context("measuring peak memory while listing")?,
    );

    if let Some(baseline) = &opts.baseline_korral {
        progress(format!(
            "create throughput against the baseline {} (alternating rounds)",
            baseline.display()
        ));
        rows.push(
            create_vs_baseline(&bin, baseline, opts)
                .await
                .context("comparing create throughput with the baseline")?,
        );
    }

    let mut header = vec![
        (
            "date".to_string(),
            jiff::Timestamp::now()
                .round(jiff::Unit::Second)
                .map(|t| t.to_string())
                .unwrap_or_default(),
        ),
        ("machine".to_string(), machine()),
        (
            "server".to_string(),
            format!(
                "`{} apiserver` as a child process, HTTPS with its generated CA, bearer token",
                bin.display()
            ),
        ),
        (
            "clients".to_string(),
            "kube-rs 5 over HTTP/1.1, one connection per kube::Client; \
             client and server share the machine's cores"
                .to_string(),
        ),
        (
            "mode".to_string(),
            format!(
                "{} (startups {}, creates {}, clients {}, list objects {}, lists {}, watch events {}, memory objects {}, watches {}, list memory objects {})",
                if opts.quick { "quick" } else { "full" },
                opts.startups,
                opts.creates,
                opts.clients,
                opts.list_objects,
                opts.lists,
                opts.watch_events,
                opts.memory_objects,
                opts.watches,
                opts.list_memory_objects,
            ),
        ),
    ];
    header.push((
        "load".to_string(),
        format!(
            "load average {load_at_start} at start, {} at end (other processes on the machine skew every figure)",
            load_average()
        ),
    ));
    header.push((
        "run time".to_string(),
        format!("{:.1} s", run_started.elapsed().as_secs_f64()),
    ));
    Ok(Report {
        title: "korral-bench apiserver".to_string(),
        header,
        rows,
        notes: vec![
            "latency percentiles are nearest-rank; p99 of fewer than 100 samples is the maximum"
                .to_string(),
        ],
    })
}

/// Process start to the first `GET /readyz` answering 200 `ok`.
async fn startup(bin: &Path, runs: usize) -> anyhow::Result<Row> {
    let mut to_ready = Vec::with_capacity(runs);
    let mut to_line = Vec::with_capacity(runs);
    let mut probes = 0usize;
    // One untimed start first, so the binary is in the page cache.
    for run in 0..=runs {
        let mut server = ServerProcess::spawn(bin, &Storage::InMemory, false).await?;
        let result = async {
            let probe = ReadyzProbe::new(server.url(), server.kubeconfig())?;
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                probes += 1;
                let outcome = probe.readyz().await;
                if matches!(outcome, Ok(true)) {
                    return Ok(Instant::now());
                }
                if Instant::now() > deadline {
                    return Err(match outcome {
                        Ok(_) => anyhow!(
                            "GET /readyz on {} did not answer 200 ok for 10 s",
                            server.url()
                        ),
                        Err(e) => e.context(format!(
                            "GET /readyz on {} kept failing for 10 s",
                            server.url()
                        )),
                    });
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        .await;
        let ready_at = match result {
            Ok(t) => t,
            Err(e) => {
                let e = server.annotate(e);
                server.stop().await;
                return Err(e);
            }
        };
        if run > 0 {
            to_ready.push(ready_at - server.spawned_at());
            to_line.push(server.ready_line_at() - server.spawned_at());
        }
        server.stop().await;
    }
    let ready = summarize(to_ready);
    let line = summarize(to_line);
    Ok(Row {
        id: "startup",
        name: format!("start to /readyz ok, HTTPS (median of {runs})"),
        value: ms(ready.p50),
        unit: "ms",
        goal: Some(Goal::Below(STARTUP_TARGET_MS)),
        note: format!(
            "spawn of `korral apiserver --in-memory --port 0 --kubeconfig <tmp>` (after 1 untimed start) \
             until a fresh TCP+TLS connection trusting the kubeconfig's CA gets 200 ok; \
             min {:.1} ms, max {:.1} ms; `listening on` line after {:.1} ms (median); {} probes for {} starts",
            ms(ready.min),
            ms(ready.max),
            ms(line.p50),
            probes,
            runs + 1
        ),
    })
}

async fn in_memory_suite(
    server: &ServerProcess,
    opts: &ApiserverOptions,
) -> anyhow::Result<Vec<Row>> {
    let clients = server.clients(opts.clients).await?;
    let mut rows = create_rows(
        server,
        &clients,
        opts,
        ["create_memory_1", "create_memory_n"],
        "in-memory",
        CREATE_MEMORY_TARGET,
    )
    .await?;
    rows.extend(
        list_latency(&clients, opts)
            .await
            .context("measuring list latency")?,
    );
    rows.extend(
        watch_latency(&clients[0], &clients[1], opts)
            .await
            .context("measuring watch latency")?,
    );
    Ok(rows)
}

async fn durable_suite(
    server: &ServerProcess,
    opts: &ApiserverOptions,
) -> anyhow::Result<Vec<Row>> {
    let clients = server.clients(opts.clients).await?;
    create_rows(
        server,
        &clients,
        opts,
        ["create_durable_1", "create_durable_n"],
        "durable",
        CREATE_DURABLE_TARGET,
    )
    .await
}

/// Rounds of the baseline comparison (each binary measured once per round, alternating).
const BASELINE_ROUNDS: usize = 3;

/// In-memory create throughput with all clients, of this `korral` and of `baseline`, each on a
/// fresh server, in alternating rounds so both meet the same machine load; the row is the ratio
/// of the medians (this / baseline: at least 1 means no slower).
pub async fn create_vs_baseline(
    bin: &Path,
    baseline: &Path,
    opts: &ApiserverOptions,
) -> anyhow::Result<Row> {
    ensure!(
        baseline.is_file(),
        "the baseline korral {} does not exist",
        baseline.display()
    );
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..BASELINE_ROUNDS {
        for (which, binary) in [bin, baseline].into_iter().enumerate() {
            let mut server = ServerProcess::spawn(binary, &Storage::InMemory, false)
                .await
                .with_context(|| format!("starting {}", binary.display()))?;
            let result = async {
                let clients = server.clients(opts.clients).await?;
                let ns = format!("bench-baseline-{round}");
                create_namespace(&clients[0], &ns).await?;
                warm_up(&clients, &ns).await?;
                create_many(
                    &clients,
                    &ns,
                    "cm",
                    opts.creates,
                    "value",
                    Some(opts.phase_limit),
                )
                .await
            }
            .await;
            let result = result.map_err(|e| server.annotate(e));
            server.stop().await;
            rates[which].push(result?.per_sec());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (now, before) = (median(&mut rates[0]), median(&mut rates[1]));
    Ok(Row {
        id: "create_vs_baseline",
        name: format!(
            "create ConfigMaps, in-memory, {} clients, this / baseline",
            opts.clients
        ),
        value: now / before.max(f64::MIN_POSITIVE),
        unit: "x",
        goal: Some(Goal::AtLeast(BASELINE_RATIO_TARGET)),
        note: format!(
            "median of {BASELINE_ROUNDS} alternating rounds of {} creates on fresh in-memory servers:              this {:.0}/s, baseline {:.0}/s ({}); the target allows the noise of a shared 2-core machine",
            format_number(opts.creates as f64, 0),
            now,
            before,
            baseline.display()
        ),
    })
}

/// Create throughput with 1 client and with all clients, each into its own namespace. `ids` are
/// the row ids for the two rows; `target` applies to the many-clients row.
async fn create_rows(
    server: &ServerProcess,
    clients: &[Client],
    opts: &ApiserverOptions,
    ids: [&'static str; 2],
    label: &str,
    target: f64,
) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for (n, id) in [(1, ids[0]), (clients.len(), ids[1])] {
        let ns = format!("bench-create-{n}");
        create_namespace(&clients[0], &ns).await?;
        warm_up(&clients[..n], &ns).await?;
        let cpu_before = (server.cpu_time()?, own_cpu_time()?);
        let t = create_many(
            &clients[..n],
            &ns,
            "cm",
            opts.creates,
            "value",
            Some(opts.phase_limit),
        )
        .await
        .with_context(|| format!("creating ConfigMaps with {n} client(s), {label}"))?;
        let server_cpu = server.cpu_time()?.saturating_sub(cpu_before.0);
        let client_cpu = own_cpu_time()?.saturating_sub(cpu_before.1);
        let per_create = |d: Duration| d.as_secs_f64() * 1e6 / t.done.max(1) as f64;
        let plural = if n == 1 { "client" } else { "clients" };
        rows.push(Row {
            id,
            name: format!("create ConfigMaps, {label}, {n} {plural}"),
            value: t.per_sec(),
            unit: "/s",
            // The stated targets are for many concurrent clients.
            goal: (n > 1).then_some(Goal::AtLeast(target)),
            note: format!(
                "{} creates (one small key) in {:.2} s{}, each client its own kube::Client issuing one request at a time; \
                 CPU per create (from /proc, 10 ms ticks): server {:.0} us, bench client {:.0} us ({:.0}% of {} cores busy)",
                format_number(t.done as f64, 0),
                t.elapsed.as_secs_f64(),
                if t.done < opts.creates {
                    format!(" (stopped at the {:?} limit)", opts.phase_limit)
                } else {
                    String::new()
                },
                per_create(server_cpu),
                per_create(client_cpu),
                100.0 * (server_cpu + client_cpu).as_secs_f64()
                    / (t.elapsed.as_secs_f64() * cores() as f64),
                cores(),
            ),
        });
    }
    Ok(rows)
}

/// Full-list latency of one namespace holding `list_objects` ConfigMaps.
async fn list_latency(clients: &[Client], opts: &ApiserverOptions) -> anyhow::Result<Vec<Row>> {
    let ns = "bench-list";
    create_namespace(&clients[0], ns).await?;
    warm_up(clients, ns).await?;
    create_many(clients, ns, "cm", opts.list_objects, "value", None)
        .await
        .context("filling the namespace to list")?;
    let client = &clients[0];
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let list = || async {
        let req = http::Request::get(&path).body(Vec::new())?;
        client
            .request_text(req)
            .await
            .with_context(|| format!("GET {path}"))
    };
    // Untimed first list: check it returns every object.
    let body = list().await?;
    let parsed: serde_json::Value =
        serde_json::from_str(&body).with_context(|| format!("parsing the list from GET {path}"))?;
    let items = parsed
        .get("items")
        .and_then(|i| i.as_array())
        .map_or(0, Vec::len);
    ensure!(
        items == opts.list_objects,
        "GET {path} returned {items} items, expected {}",
        opts.list_objects
    );
    let mut samples = Vec::with_capacity(opts.lists);
    for _ in 0..opts.lists {
        let t = Instant::now();
        let body = list().await?;
        samples.push(t.elapsed());
        ensure!(body.len() > 2, "GET {path} returned an empty body");
    }
    let s = summarize(samples);
    let objects = format_number(opts.list_objects as f64, 0);
    let note = format!(
        "GET {path} without limit ({} objects, {:.1} MiB JSON), timed to the last body byte (no decoding) \
         over one kept-alive connection; {} lists after 1 untimed; min {:.1} ms, max {:.1} ms",
        objects,
        body.len() as f64 / (1024.0 * 1024.0),
        opts.lists,
        ms(s.min),
        ms(s.max),
    );
    Ok(vec![
        Row {
            id: "list_p50",
            name: format!("list {objects} ConfigMaps, p50"),
            value: ms(s.p50),
            unit: "ms",
            goal: Some(Goal::Below(LIST_TARGET_MS)),
            note,
        },
        Row {
            id: "list_p99",
            name: format!("list {objects} ConfigMaps, p99"),
            value: ms(s.p99),
            unit: "ms",
            goal: Some(Goal::Below(LIST_TARGET_MS)),
            note: String::new(),
        },
    ])
}

/// What the watching task reports: the `seq` value of a modified object and when it arrived.
type Arrival = Result<(u64, Instant), String>;

/// Latency from just before an update is sent to the arrival of its watch event.
async fn watch_latency(
    writer: &Client,
    watcher: &Client,
    opts: &ApiserverOptions,
) -> anyhow::Result<Vec<Row>> {
    let ns = "bench-watch";
    let name = "watched";
    let warmup = if opts.quick { 5 } else { 20 };
    create_namespace(writer, ns).await?;
    let api: Api<ConfigMap> = Api::namespaced(writer.clone(), ns);
    let mut cm = api
        .create(&PostParams::default(), &config_map(name, "seq", "0"))
        .await
        .with_context(|| format!("creating ConfigMap {ns}/{name}"))?;
    let rv = cm
        .metadata
        .resource_version
        .clone()
        .ok_or_else(|| anyhow!("the created ConfigMap has no resourceVersion"))?;
    let watch_api: Api<ConfigMap> = Api::namespaced(watcher.clone(), ns);
    let stream = watch_api
        .watch(&WatchParams::default(), &rv)
        .await
        .with_context(|| {
            format!("starting a watch on {ns} ConfigMaps from resourceVersion {rv}")
        })?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Arrival>();
    let watch_task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let at = Instant::now();
            let msg = match event {
                Ok(WatchEvent::Modified(cm)) => {
                    let seq = cm
                        .data
                        .as_ref()
                        .and_then(|d| d.get("seq"))
                        .and_then(|s| s.parse::<u64>().ok());
                    match seq {
                        Some(seq) => Ok((seq, at)),
                        None => Err("a MODIFIED event without data.seq".to_string()),
                    }
                }
                Ok(WatchEvent::Error(e)) => Err(format!("ERROR event: {e}")),
                Ok(_) => continue,
                Err(e) => Err(format!("reading the watch stream: {e}")),
            };
            let failed = msg.is_err();
            if tx.send(msg).is_err() || failed {
                break;
            }
        }
    });
    let result = async {
        let mut event_latency = Vec::with_capacity(opts.watch_events);
        let mut write_latency = Vec::with_capacity(opts.watch_events);
        let mut before_response = 0usize;
        for seq in 1..=(warmup + opts.watch_events) as u64 {
            cm.data
                .get_or_insert_with(BTreeMap::new)
                .insert("seq".to_string(), seq.to_string());
            let sent = Instant::now();
            cm = api
                .replace(name, &PostParams::default(), &cm)
                .await
                .with_context(|| format!("updating ConfigMap {ns}/{name} (write {seq})"))?;
            let responded = Instant::now();
            let arrived = loop {
                match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
                    Ok(Some(Ok((got, at)))) if got == seq => break at,
                    Ok(Some(Ok((got, _)))) if got < seq => continue,
                    Ok(Some(Ok((got, _)))) => {
                        bail!("watch delivered seq {got} while waiting for {seq}")
                    }
                    Ok(Some(Err(msg))) => bail!("the watch failed: {msg}"),
                    Ok(None) => bail!("the watch stream ended before the event of write {seq}"),
                    Err(_) => bail!("no watch event within 5 s for write {seq} of {ns}/{name}"),
                }
            };
            if seq > warmup as u64 {
                event_latency.push(arrived.saturating_duration_since(sent));
                write_latency.push(responded - sent);
                if arrived < responded {
                    before_response += 1;
                }
            }
        }
        Ok((event_latency, write_latency, before_response))
    }
    .await;
    watch_task.abort();
    let (event_latency, write_latency, before_response) = result?;
    let events = summarize(event_latency);
    let writes = summarize(write_latency);
    let note = format!(
        "one watcher (kube Api::watch, own connection) and one writer doing PUT updates of one ConfigMap, \
         one at a time; latency from just before the PUT is sent to the MODIFIED event's arrival \
         (so it includes the write); {} events after {warmup} warm-up; PUT response p50 {:.2} ms; \
         {} of {} events arrived before the PUT response; max {:.2} ms",
        events.count,
        ms(writes.p50),
        before_response,
        events.count,
        ms(events.max),
    );
    Ok(vec![
        Row {
            id: "watch_p50",
            name: "watch delivery (write sent -> event), p50".to_string(),
            value: ms(events.p50),
            unit: "ms",
            goal: None,
            note,
        },
        Row {
            id: "watch_p99",
            name: "watch delivery (write sent -> event), p99".to_string(),
            value: ms(events.p99),
            unit: "ms",
            goal: Some(Goal::Below(WATCH_P99_TARGET_MS)),
            note: String::new(),
        },
    ])
}

/// Resident memory growth of a fresh in-memory server per 10k stored ConfigMaps.
async fn memory(bin: &Path, opts: &ApiserverOptions) -> anyhow::Result<Row> {
    let mut server = ServerProcess::spawn(bin, &Storage::InMemory, false).await?;
    let result = async {
        let clients = server.clients(opts.clients).await?;
        let ns = "bench-memory";
        let payload: String = (0..MEMORY_PAYLOAD_BYTES)
            .map(|i| char::from(b'a' + (i * 7 % 26) as u8))
            .collect();
        create_namespace(&clients[0], ns).await?;
        warm_up(&clients, ns).await?;
        // A few writes first, so that first-use allocations (connections, caches) are in the
        // baseline.
        create_many(&clients, ns, "warm", clients.len() * 4, &payload, None).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = server.rss_kib()?;
        create_many(&clients, ns, "cm", opts.memory_objects, &payload, None).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = server.rss_kib()?;
        let path = format!("/api/v1/namespaces/{ns}/configmaps/cm-0");
        let object = clients[0]
            .request_text(http::Request::get(&path).body(Vec::new())?)
            .await
            .with_context(|| format!("GET {path}"))?;
        Ok::<_, anyhow::Error>((before, after, object.len()))
    }
    .await;
    let result = result.map_err(|e| server.annotate(e));
    server.stop().await;
    let (before, after, object_bytes) = result?;
    let delta_kib = after as f64 - before as f64;
    let per_10k = delta_kib / 1024.0 * 10_000.0 / opts.memory_objects as f64;
    Ok(Row {
        id: "rss_per_10k",
        name: "resident memory per 10k ConfigMaps (1 KiB data)".to_string(),
        value: per_10k,
        unit: "MiB",
        goal: None,
        note: format!(
            "VmRSS of a fresh `korral apiserver --in-memory` from {:.1} MiB to {:.1} MiB over {} creates; \
             each object has one {MEMORY_PAYLOAD_BYTES}-byte value, {object_bytes} bytes as JSON when read back; \
             {:.0} bytes of RSS per object (includes watch history and allocator overhead)",
            before as f64 / 1024.0,
            after as f64 / 1024.0,
            format_number(opts.memory_objects as f64, 0),
            delta_kib * 1024.0 / opts.memory_objects as f64,
        ),
    })
}

/// What [`held_memory`] holds open.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Watches on an empty namespace, through one kube client (kube-rs speaks HTTP/1.1, so
    /// each holds its own TLS connection).
    Watches,
    /// Idle keep-alive connections: kube clients that each sent one GET.
    Connections,
}

/// VmRSS (KiB) of a fresh in-memory server before and after `count` of `what` are open.
async fn held_memory(bin: &Path, count: usize, what: Held) -> anyhow::Result<(u64, u64)> {
    let mut server = ServerProcess::spawn(bin, &Storage::InMemory, false).await?;
    let result = async {
        let client = server.client().await?;
        let ns = "bench-held";
        create_namespace(&client, ns).await?;
        warm_up(std::slice::from_ref(&client), ns).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = server.rss_kib()?;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let mut watches = Vec::new();
        let mut idle = Vec::new();
        for i in 0..count {
            match what {
                Held::Watches => watches.push(
                    api.watch(&WatchParams::default().timeout(290), "0")
                        .await
                        .with_context(|| format!("opening watch {i}"))?
                        .boxed(),
                ),
                Held::Connections => {
                    let c = server.client().await?;
                    warm_up(std::slice::from_ref(&c), ns).await?;
                    idle.push(c);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = server.rss_kib()?;
        drop((watches, idle));
        Ok::<_, anyhow::Error>((before, after))
    }
    .await;
    let result = result.map_err(|e| server.annotate(e));
    server.stop().await;
    result
}

/// Resident memory of the server per open watch and per idle keep-alive connection, each on a
/// fresh server (so neither reuses memory the other freed).
async fn watch_and_connection_memory(
    bin: &Path,
    opts: &ApiserverOptions,
) -> anyhow::Result<Vec<Row>> {
    let n = opts.watches;
    let (before_w, with_w) = held_memory(bin, n, Held::Watches).await?;
    let (before_c, with_c) = held_memory(bin, n, Held::Connections).await?;
    let per = |before: u64, after: u64| (after as f64 - before as f64) / n as f64;
    Ok(vec![
        Row {
            id: "rss_per_watch",
            name: "resident memory per open watch".to_string(),
            value: per(before_w, with_w),
            unit: "KiB",
            goal: None,
            note: format!(
                "VmRSS of a fresh server from {:.1} MiB to {:.1} MiB with {n} watches open (each on its own HTTP/1.1 TLS connection, its 256-event buffer empty)",
                before_w as f64 / 1024.0,
                with_w as f64 / 1024.0,
            ),
        },
        Row {
            id: "rss_per_connection",
            name: "resident memory per idle client connection".to_string(),
            value: per(before_c, with_c),
            unit: "KiB",
            goal: None,
            note: format!(
                "VmRSS of a fresh server from {:.1} MiB to {:.1} MiB with {n} idle keep-alive TLS connections",
                before_c as f64 / 1024.0,
                with_c as f64 / 1024.0,
            ),
        },
    ])
}

/// Peak resident memory growth of the server while it sends one full list of large objects,
/// against the size of the list's body: a server that builds the whole body before sending it
/// grows by at least the body (about 1×); one that streams it grows by its chunk buffers.
async fn list_memory(bin: &Path, opts: &ApiserverOptions) -> anyhow::Result<Row> {
    let mut server = ServerProcess::spawn(bin, &Storage::InMemory, false).await?;
    let result = async {
        let clients = server.clients(opts.clients).await?;
        let ns = "bench-list-memory";
        let payload: String = (0..LIST_MEMORY_PAYLOAD_BYTES)
            .map(|i| char::from(b'a' + (i * 11 % 26) as u8))
            .collect();
        create_namespace(&clients[0], ns).await?;
        warm_up(&clients, ns).await?;
        create_many(
            &clients,
            ns,
            "big",
            opts.list_memory_objects,
            &payload,
            None,
        )
        .await?;
        // A small list first, so first-use allocations of the list path are in the baseline.
        let path = format!("/api/v1/namespaces/{ns}/configmaps");
        clients[0]
            .request_text(http::Request::get(format!("{path}?limit=1")).body(Vec::new())?)
            .await
            .with_context(|| format!("GET {path}?limit=1"))?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = server.rss_kib()?;
        server.reset_peak_rss()?;
        let body = clients[0]
            .request_text(http::Request::get(&path).body(Vec::new())?)
            .await
            .with_context(|| format!("GET {path}"))?;
        let peak = server.peak_rss_kib()?;
        Ok::<_, anyhow::Error>((before, peak, body.len()))
    }
    .await;
    let result = result.map_err(|e| server.annotate(e));
    server.stop().await;
    let (before, peak, body_bytes) = result?;
    let growth = peak.saturating_sub(before) as f64 * 1024.0;
    Ok(Row {
        id: "list_peak_rss",
        name: "peak memory growth while sending a full list, per byte of list body".to_string(),
        value: growth / body_bytes.max(1) as f64,
        unit: "x body",
        goal: None,
        note: format!(
            "VmHWM (reset just before the list) {:.1} MiB above the VmRSS of {:.1} MiB while one \
             client read a {:.1} MiB list of {} ConfigMaps ({} KiB value each); \
             a body built whole before sending would add about 1x",
            growth / 1024.0 / 1024.0,
            before as f64 / 1024.0,
            body_bytes as f64 / 1024.0 / 1024.0,
            format_number(opts.list_memory_objects as f64, 0),
            LIST_MEMORY_PAYLOAD_BYTES / 1024,
        ),
    })
}

/// Result of a batch of creates.
struct Throughput {
    done: usize,
    elapsed: Duration,
}

impl Throughput {
    fn per_sec(&self) -> f64 {
        self.done as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

fn config_map(name: &str, key: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(key.to_string(), value.to_string())])),
        ..ConfigMap::default()
    }
}

async fn create_namespace(client: &Client, ns: &str) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let obj = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    api.create(&PostParams::default(), &obj)
        .await
        .with_context(|| format!("creating namespace {ns}"))?;
    Ok(())
}

/// One request per client, all at once, so every client has its connection open before timing.
async fn warm_up(clients: &[Client], ns: &str) -> anyhow::Result<()> {
    futures::future::try_join_all(clients.iter().map(|c| {
        let api: Api<Namespace> = Api::all(c.clone());
        async move { api.get(ns).await }
    }))
    .await
    .with_context(|| format!("GET namespace {ns} (connection warm-up)"))?;
    Ok(())
}

/// Creates `total` ConfigMaps `<prefix>-<i>` with `{key: value}` data, spread over `clients`
/// (one task per client, one request at a time each). Stops issuing new creates after `limit`.
async fn create_many(
    clients: &[Client],
    ns: &str,
    prefix: &str,
    total: usize,
    value: &str,
    limit: Option<Duration>,
) -> anyhow::Result<Throughput> {
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let value: Arc<str> = Arc::from(value);
    let key = if value.len() > 64 { "payload" } else { "key" };
    let start = Instant::now();
    let deadline = limit.map(|l| start + l);
    let mut tasks = tokio::task::JoinSet::new();
    for client in clients {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let (next, done, value) = (next.clone(), done.clone(), value.clone());
        let (ns, prefix) = (ns.to_string(), prefix.to_string());
        tasks.spawn(async move {
            let params = PostParams::default();
            loop {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let name = format!("{prefix}-{i}");
                api.create(&params, &config_map(&name, key, &value))
                    .await
                    .with_context(|| format!("creating ConfigMap {ns}/{name}"))?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, anyhow::Error>(())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.context("a create task panicked")??;
    }
    let elapsed = start.elapsed();
    Ok(Throughput {
        done: done.load(Ordering::Relaxed),
        elapsed,
    })
}

/// The 1-minute load average from `/proc/loadavg`.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Cores, CPU model, memory and kernel, from `std` and `/proc`.
fn machine() -> String {
    let cores = cores();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or_else(String::new, |kib| {
            format!(", {:.1} GiB RAM", kib / 1024.0 / 1024.0)
        });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| format!(", {} {}", std::env::consts::OS, s.trim()))
        .unwrap_or_default();
    format!("{cores} cores (available_parallelism), {cpu}{mem}{kernel}")
}

/// The file system type holding `path`, from `/proc/mounts`.
fn fs_type(path: &Path) -> Option<String> {
    let path = std::fs::canonicalize(path)
        .or_else(|_| {
            path.parent()
                .map_or_else(|| Ok(path.to_path_buf()), std::fs::canonicalize)
        })
        .ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_dev, mnt, fs) = (f.next()?, f.next()?, f.next()?);
            path.starts_with(mnt)
                .then(|| (mnt.len(), format!("{fs} ({mnt})")))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, s)| s)
}
