//! Flood end to end: a RELEASE build of `korral apiserver` (the binary users run), as a child
//! process with small in-flight limits, flooded over HTTPS by several ordinary (not
//! `system:masters`) users with thousands of concurrent reads and writes while 500 watches are
//! open. The server must shed the excess as upstream does (`429 TooManyRequests` with
//! `Retry-After` and a `Status` body), never answer 5xx, never leave a request hanging, deliver
//! every watched event, stay within a memory bound derived from its own buffer limits, and keep
//! answering: the admin (`system:masters`, exempt from the limits) during the flood, never
//! throttled and answered again and again while the flood still runs (a starved admin, queued
//! behind the limits, would be answered only once the flood is over), and an ordinary user
//! after it. How fast those answers come is printed, never asserted: on a shared 2-core machine
//! it depends on whatever else runs (speed is the benchmarks' business).
//!
//! The release binary is built once by the test into `target/flood`, a target directory of its
//! own: the outer `cargo test` may hold the lock of the workspace's target directory while tests
//! run, and under `cargo test --release` a nested build into `target/release` would wait on it
//! forever. That build is the test's one-time cost: from scratch it took 600 CPU-seconds (user +
//! system) on a 2-core machine, so 5–6 minutes on a dedicated 2-core CI runner; after a change
//! to the server's sources about 3 minutes; a second when nothing changed. The flood itself
//! takes about ten seconds. `KORRAL_FLOOD_SERVER=<path>` uses a `korral` binary built elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::BodyExt;
use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// `--max-requests-inflight` of the flooded server (upstream's default is 400). Tiny, so that a
/// client sharing the machine's two cores exceeds it whatever the machine's speed: a request is
/// in flight from its admission until its response body is handed to the socket, so only
/// requests overlapping on the server's two worker threads, or lists whose client has not read
/// them yet, are in flight at once.
const MAX_READONLY: usize = 2;
/// `--max-mutating-requests-inflight` of the flooded server (upstream's default is 200).
const MAX_MUTATING: usize = 1;
/// Ordinary users (impersonated by the admin token; none is in `system:masters`).
const USERS: usize = 8;
/// Requests in flight at once in each wave.
const CONCURRENT: usize = 2000;
/// Waves of [`CONCURRENT`] requests.
const WAVES: usize = 3;
/// Watches held open through the flood.
const WATCHES: usize = 500;
/// ConfigMaps present before the flood (listed, read and patched by it). A list of them is
/// about 140 KiB, streamed in three chunks, so a list holds its slot while its client reads.
const SEEDS: usize = 100;
/// Bytes of each ConfigMap's value.
const VALUE_BYTES: usize = 1024;
/// The label selector of the watches: it selects a few of the flood's creates, which every
/// watch must then see exactly (without drowning the test client in events).
const WATCHED: &str = "watched%3Dyes";
/// Longer than this, a request counts as hung.
const HANG: Duration = Duration::from_secs(60);
/// Admin requests that must be sent and answered while the flood runs: a server that queued
/// the admin behind the limits would answer none before the flood ends.
const ANSWERED_DURING: usize = 2;
/// The namespace flooded.
const NS: &str = "flood";

/// The memory bound, from what the server may hold by design above its resting size:
/// - a watch: its 256-event send buffer full (each event about 1.5 KiB here) plus its
///   connection (TLS and HTTP buffers), 512 KiB;
/// - an open request connection: TLS record buffers and hyper's read and write buffers,
///   128 KiB (the flood holds up to [`CONCURRENT`] at once);
/// - a request in flight: a list chunk (64 KiB and one object) and the request body, 256 KiB
///   for each of the [`MAX_READONLY`] + [`MAX_MUTATING`] slots;
/// - the objects the flood creates (a fifth of its requests), 8 KiB each with their history;
/// - 64 MiB for the allocator's per-thread arenas and fragmentation.
///
/// A server that queued refused requests, kept whole list bodies per connection or let watch
/// buffers grow without bound would exceed it.
fn memory_bound_kib(resting_kib: u64) -> u64 {
    let watches = WATCHES as u64 * 512;
    let connections = CONCURRENT as u64 * 128;
    let in_flight = (MAX_READONLY + MAX_MUTATING) as u64 * 256;
    let created = (CONCURRENT * WAVES / 5) as u64 * 8;
    resting_kib + watches + connections + in_flight + created + 64 * 1024
}

/// The workspace root (two levels above this crate).
fn workspace() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// The release `korral` binary: `KORRAL_FLOOD_SERVER`, or built now with
/// `cargo build --release -p korral-cli --bin korral --no-default-features` into
/// `target/flood`.
async fn release_server() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("KORRAL_FLOOD_SERVER") {
        return Ok(PathBuf::from(path));
    }
    let root = workspace();
    let target = root.join("target").join("flood");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let started = Instant::now();
    let output = Command::new(cargo)
        // Without the default `sample-memcached` feature: the sample operator is not needed to
        // serve, and not building it saves part of the one-time cost.
        .args(["build", "--release", "-p", "korral-cli", "--bin", "korral"])
        .arg("--no-default-features")
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target)
        .kill_on_drop(true)
        .output()
        .await
        .context("running cargo build --release")?;
    ensure!(
        output.status.success(),
        "cargo build --release -p korral-cli failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "flood: release build of korral took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(target
        .join("release")
        .join(format!("korral{}", std::env::consts::EXE_SUFFIX)))
}

/// The server child; killed when dropped.
struct Server {
    child: Child,
    pid: u32,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Server {
    /// Starts `korral apiserver --in-memory` with the flood's limits, its open-file limit raised
    /// to the hard limit (thousands of connections), and waits for its `listening on` line.
    async fn start(bin: &Path) -> anyhow::Result<Self> {
        let dir = tempfile::tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("ulimit -n \"$(ulimit -Hn)\" 2>/dev/null; exec \"$0\" \"$@\"")
            .arg(bin)
            .args(["apiserver", "--in-memory", "--port", "0"])
            // The max-in-flight filter is what is flooded here (priority and fairness would
            // queue the excess rather than refuse it at once).
            .arg("--enable-priority-and-fairness=false")
            .arg("--max-requests-inflight")
            .arg(MAX_READONLY.to_string())
            .arg("--max-mutating-requests-inflight")
            .arg(MAX_MUTATING.to_string())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .env_remove("KUBECONFIG")
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", bin.display()))?;
        let pid = child.id().context("the server's pid")?;
        let stdout = child.stdout.take().context("stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let listening = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await? {
                if line.starts_with("korral apiserver listening on ") {
                    return Ok::<_, anyhow::Error>(());
                }
            }
            bail!("the server exited before listening")
        })
        .await
        .context("no `listening on` line within 60 s")?;
        listening?;
        // Keep draining stdout for the server's whole life.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self {
            child,
            pid,
            kubeconfig,
            _dir: dir,
        })
    }

    /// Kills the server and waits for it to exit.
    async fn stop(mut self) -> anyhow::Result<()> {
        self.child.kill().await.context("stopping the server")
    }

    /// A `kB` line of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`).
    fn status_kib(&self, field: &str) -> anyhow::Result<u64> {
        let path = format!("/proc/{}/status", self.pid);
        let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .with_context(|| format!("no {field} in {path}"))
    }
}

/// CPU time (user + system, all threads) of the process `pid` (`self` for this one), from
/// `/proc/<pid>/stat` in the kernel's 100 Hz ticks.
fn cpu_time(pid: &str) -> anyhow::Result<Duration> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    // Fields after the command name (which ends with the last ')'): utime and stime are the
    // 12th and 13th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let fields: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse().ok())
        .collect();
    ensure!(fields.len() == 2, "no utime/stime in {path}");
    Ok(Duration::from_millis((fields[0] + fields[1]) * 10))
}

/// A client of the admin token (`system:masters`), or impersonating `user` (an ordinary user).
/// Client-side retries are off: the test counts every 429. The client's tasks run on the
/// runtime that creates it.
async fn client_for(kubeconfig: &Path, user: Option<&str>) -> anyhow::Result<Client> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig)?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    config.default_retry = false;
    config.auth_info.impersonate = user.map(str::to_string);
    Ok(Client::try_from(config)?)
}

/// One answer: code, `Retry-After`, body.
struct Answer {
    code: u16,
    retry_after: Option<String>,
    body: Bytes,
}

/// Sends one request, failing if it takes longer than [`HANG`].
async fn send(
    client: &Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> anyhow::Result<Answer> {
    let mut request = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        request = request.header("content-type", ct);
    }
    let request = request.body(kube::client::Body::from(body))?;
    let exchange = async {
        let response = client.send(request).await?;
        let code = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response.into_body().collect().await?.to_bytes();
        Ok::<_, anyhow::Error>(Answer {
            code,
            retry_after,
            body,
        })
    };
    tokio::time::timeout(HANG, exchange)
        .await
        .with_context(|| format!("{method} {path} hung for {HANG:?}"))?
        .with_context(|| format!("{method} {path}"))
}

/// Timed GETs of `path` on a thread and runtime of their own, so that what is timed is the
/// server (and the loopback network), not the wait of a client runtime busy with the flood: one
/// untimed GET to connect, then one every 200 ms while `running` holds, and a last one after.
fn probe_on_own_thread(
    kubeconfig: PathBuf,
    user: Option<String>,
    path: String,
    running: Arc<AtomicBool>,
) -> std::thread::JoinHandle<anyhow::Result<Vec<Probe>>> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let client = client_for(&kubeconfig, user.as_deref()).await?;
            send(&client, "GET", &path, None, Vec::new()).await?;
            let mut probes = Vec::new();
            loop {
                let during = running.load(Ordering::Relaxed);
                let started = Instant::now();
                let answer = send(&client, "GET", &path, None, Vec::new()).await?;
                probes.push(Probe {
                    code: answer.code,
                    took: started.elapsed(),
                    during: during && running.load(Ordering::Relaxed),
                });
                if !during {
                    return Ok(probes);
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    })
}

/// One timed request of a probe.
#[derive(Debug)]
struct Probe {
    code: u16,
    took: Duration,
    /// Sent and answered while the flood ran.
    during: bool,
}

fn config_map(name: &str, i: usize, watched: bool) -> Vec<u8> {
    let value: String = (0..VALUE_BYTES)
        .map(|j| char::from(b'a' + ((i + j) % 26) as u8))
        .collect();
    let labels = if watched {
        json!({"flood": "yes", "watched": "yes"})
    } else {
        json!({"flood": "yes"})
    };
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}, "data": {"value": value}})
    .to_string()
    .into_bytes()
}

/// What the flood's request `i` is: half lists, a fifth gets, a fifth creates (2 in 100 of
/// objects the watches select), a tenth merge patches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Get,
    Create { watched: bool },
    Patch,
}

fn kind(i: usize) -> Kind {
    match i % 10 {
        0..5 => Kind::List,
        5..7 => Kind::Get,
        7..9 => Kind::Create {
            watched: matches!(i % 100, 7 | 8),
        },
        _ => Kind::Patch,
    }
}

/// Sends the flood's request `i` of `wave`.
async fn flood_request(client: &Client, wave: usize, i: usize) -> anyhow::Result<Answer> {
    let base = format!("/api/v1/namespaces/{NS}/configmaps");
    let seed = format!("{base}/seed-{}", i % SEEDS);
    match kind(i) {
        Kind::List => send(client, "GET", &base, None, Vec::new()).await,
        Kind::Get => send(client, "GET", &seed, None, Vec::new()).await,
        Kind::Create { watched } => {
            let body = config_map(&format!("flood-{wave}-{i}"), i, watched);
            send(client, "POST", &base, Some("application/json"), body).await
        }
        Kind::Patch => {
            let patch = json!({"data": {"hit": i.to_string()}}).to_string();
            let ct = Some("application/merge-patch+json");
            send(client, "PATCH", &seed, ct, patch.into_bytes()).await
        }
    }
}

/// What the flood saw.
#[derive(Default)]
struct Tally {
    codes: BTreeMap<u16, usize>,
    throttled_writes: usize,
    watched_created: usize,
    throttled_without_retry_after: usize,
    throttled_not_a_status: Vec<String>,
    server_errors: Vec<String>,
    unexpected: Vec<String>,
    failures: Vec<String>,
}

impl Tally {
    fn record(&mut self, kind: Kind, result: anyhow::Result<Answer>) {
        let answer = match result {
            Ok(a) => a,
            Err(e) => {
                self.failures.push(format!("{e:#}"));
                return;
            }
        };
        *self.codes.entry(answer.code).or_default() += 1;
        let text = || {
            String::from_utf8_lossy(&answer.body)
                .chars()
                .take(300)
                .collect::<String>()
        };
        match answer.code {
            201 if kind == (Kind::Create { watched: true }) => self.watched_created += 1,
            200 | 201 => {}
            429 => {
                if matches!(kind, Kind::Create { .. } | Kind::Patch) {
                    self.throttled_writes += 1;
                }
                if answer.retry_after.is_none() {
                    self.throttled_without_retry_after += 1;
                }
                let status: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
                let proper = status["kind"] == "Status"
                    && status["apiVersion"] == "v1"
                    && status["status"] == "Failure"
                    && status["code"] == 429
                    && status["reason"] == "TooManyRequests"
                    && status["message"] == "Too many requests, please try again later."
                    && status["details"]["retryAfterSeconds"] == 1;
                if !proper && self.throttled_not_a_status.len() < 5 {
                    self.throttled_not_a_status.push(text());
                }
            }
            500..=599 => self
                .server_errors
                .push(format!("{}: {}", answer.code, text())),
            other => self.unexpected.push(format!("{other}: {}", text())),
        }
    }
}

/// A watch held open through the flood: its events counted, `ERROR` events kept.
struct Watch {
    events: Arc<AtomicUsize>,
    errors: Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

async fn open_watch(client: &Client, revision: &str) -> anyhow::Result<Watch> {
    let path = format!(
        "/api/v1/namespaces/{NS}/configmaps?watch=1&labelSelector={WATCHED}&resourceVersion={revision}&timeoutSeconds=900"
    );
    let request = http::Request::get(&path).body(kube::client::Body::from(Vec::new()))?;
    let response = tokio::time::timeout(HANG, client.send(request))
        .await
        .context("opening a watch hung")??;
    ensure!(
        response.status() == 200,
        "watch answered {}",
        response.status()
    );
    let events = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (count, errs) = (events.clone(), errors.clone());
    let task = tokio::spawn(async move {
        let mut body = response.into_body().into_data_stream();
        let mut line = Vec::new();
        while let Some(Ok(chunk)) = body.next().await {
            for piece in chunk.split_inclusive(|b| *b == b'\n') {
                line.extend_from_slice(piece);
                if line.ends_with(b"\n") {
                    count.fetch_add(1, Ordering::Relaxed);
                    if !line.starts_with(b"{\"type\":\"ADDED\"") {
                        let text = String::from_utf8_lossy(&line).chars().take(300).collect();
                        errs.lock().unwrap_or_else(|e| e.into_inner()).push(text);
                    }
                    line.clear();
                }
            }
        }
    });
    Ok(Watch {
        events,
        errors,
        task,
    })
}

/// The open-file limit of this process (`Max open files` soft limit), if readable.
fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// The first few of `items`, for a failure message.
fn first<T>(items: &[T]) -> &[T] {
    &items[..items.len().min(5)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooded_release_server_sheds_load_with_429_stays_bounded_and_answers()
-> anyhow::Result<()> {
    let needed = (CONCURRENT + WATCHES + 512) as u64;
    if let Some(limit) = open_file_limit() {
        ensure!(
            limit >= needed,
            "the flood needs {needed} open files; this process may open {limit} (raise `ulimit -n`)"
        );
    }
    let bin = release_server().await?;
    let server = Server::start(&bin).await?;
    let admin = client_for(&server.kubeconfig, None).await?;
    let mut users = Vec::new();
    for u in 0..USERS {
        users.push(client_for(&server.kubeconfig, Some(&format!("flood-user-{u}"))).await?);
    }

    // The namespace and the seeded objects, written by the admin.
    let base = format!("/api/v1/namespaces/{NS}/configmaps");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}});
    let json_type = Some("application/json");
    let created = send(
        &admin,
        "POST",
        "/api/v1/namespaces",
        json_type,
        ns.to_string().into_bytes(),
    )
    .await?;
    ensure!(created.code == 201, "namespace: {}", created.code);
    for i in 0..SEEDS {
        let seed = config_map(&format!("seed-{i}"), i, false);
        let a = send(&admin, "POST", &base, json_type, seed).await?;
        ensure!(a.code == 201, "seed {i}: {}", a.code);
    }
    let listed = send(&admin, "GET", &base, None, Vec::new()).await?;
    let revision = serde_json::from_slice::<Value>(&listed.body)?["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string();
    // Every user's connection pool warmed with one request.
    for user in &users {
        let a = send(user, "GET", &format!("{base}/seed-0"), None, Vec::new()).await?;
        ensure!(a.code == 200, "warm-up: {}", a.code);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let resting = server.status_kib("VmRSS:")?;

    // 500 watches, spread over the users (each user's watches stay under its own limit).
    let watches = futures::future::try_join_all(
        (0..WATCHES).map(|w| open_watch(&users[w % USERS], &revision)),
    )
    .await
    .context("opening the watches")?;

    // The flood: waves of concurrent requests from every user, while the admin checks every
    // 200 ms, from a runtime of its own, that it is still answered promptly.
    let flooding = Arc::new(AtomicBool::new(true));
    let admin_probe = probe_on_own_thread(
        server.kubeconfig.clone(),
        None,
        format!("{base}/seed-1"),
        flooding.clone(),
    );
    let server_pid = server.pid.to_string();
    let cpu_before = (cpu_time(&server_pid)?, cpu_time("self")?);
    let started = Instant::now();
    let mut tally = Tally::default();
    for wave in 0..WAVES {
        let answers = futures::future::join_all(
            (0..CONCURRENT).map(|i| flood_request(&users[i % USERS], wave, i)),
        )
        .await;
        for (i, answer) in answers.into_iter().enumerate() {
            tally.record(kind(i), answer);
        }
    }
    let flood_time = started.elapsed();
    let server_cpu = cpu_time(&server_pid)?.saturating_sub(cpu_before.0);
    let client_cpu = cpu_time("self")?.saturating_sub(cpu_before.1);
    flooding.store(false, Ordering::Relaxed);
    let admin_probes = admin_probe
        .join()
        .map_err(|_| anyhow::anyhow!("the admin probe panicked"))??;
    let peak = server.status_kib("VmHWM:")?;

    // After the flood, an ordinary user is answered promptly (every slot was returned).
    let user_probes = probe_on_own_thread(
        server.kubeconfig.clone(),
        Some("flood-user-0".to_string()),
        base.clone(),
        flooding.clone(),
    )
    .join()
    .map_err(|_| anyhow::anyhow!("the user probe panicked"))??;

    // Every watch sees every watched create, once.
    let deadline = Instant::now() + Duration::from_secs(20);
    let behind = |watches: &[Watch]| {
        watches
            .iter()
            .filter(|w| w.events.load(Ordering::Relaxed) != tally.watched_created)
            .count()
    };
    while behind(&watches) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let events: usize = watches
        .iter()
        .map(|w| w.events.load(Ordering::Relaxed))
        .sum();
    let behind_watches = behind(&watches);
    let watch_errors: Vec<String> = watches
        .iter()
        .flat_map(|w| w.errors.lock().unwrap_or_else(|e| e.into_inner()).clone())
        .collect();
    for w in &watches {
        w.task.abort();
    }
    let after = server.status_kib("VmRSS:")?;
    let bound = memory_bound_kib(resting);
    eprintln!(
        "flood: {} requests in {:.1} s by {USERS} users (limits {MAX_READONLY} read-only, \
         {MAX_MUTATING} mutating; CPU: server {:.1} s, test client {:.1} s), codes {:?} ({} of the 429s on writes); {WATCHES} watches got {events} events \
         ({} watched creates each); server VmRSS resting {:.1} MiB, peak {:.1} MiB \
         (bound {:.1} MiB), after {:.1} MiB; admin during the flood: {:?}; user after: {:?}",
        CONCURRENT * WAVES,
        flood_time.as_secs_f64(),
        server_cpu.as_secs_f64(),
        client_cpu.as_secs_f64(),
        tally.codes,
        tally.throttled_writes,
        tally.watched_created,
        resting as f64 / 1024.0,
        peak as f64 / 1024.0,
        bound as f64 / 1024.0,
        after as f64 / 1024.0,
        admin_probes
            .iter()
            .map(|p| format!("{} in {} ms", p.code, p.took.as_millis()))
            .collect::<Vec<_>>(),
        user_probes
            .iter()
            .map(|p| format!("{} in {} ms", p.code, p.took.as_millis()))
            .collect::<Vec<_>>(),
    );

    ensure!(
        tally.failures.is_empty(),
        "requests failed or hung: {:?}",
        first(&tally.failures)
    );
    ensure!(
        tally.server_errors.is_empty(),
        "5xx answers: {:?}",
        first(&tally.server_errors)
    );
    ensure!(
        tally.unexpected.is_empty(),
        "unexpected answers: {:?}",
        first(&tally.unexpected)
    );
    let throttled = tally.codes.get(&429).copied().unwrap_or(0);
    ensure!(
        throttled > 0,
        "no request was refused with 429: {:?}",
        tally.codes
    );
    ensure!(
        tally.throttled_without_retry_after == 0,
        "{} 429s without Retry-After",
        tally.throttled_without_retry_after
    );
    ensure!(
        tally.throttled_not_a_status.is_empty(),
        "429s that are not upstream's Status: {:?}",
        tally.throttled_not_a_status
    );
    let served =
        tally.codes.get(&200).copied().unwrap_or(0) + tally.codes.get(&201).copied().unwrap_or(0);
    ensure!(served > 0, "nothing was served: {:?}", tally.codes);
    ensure!(
        peak <= bound,
        "peak VmRSS {peak} KiB over the bound {bound} KiB"
    );
    for p in &admin_probes {
        ensure!(p.code == 200, "admin during the flood: {p:?}");
    }
    let answered_during = admin_probes.iter().filter(|p| p.during).count();
    ensure!(
        answered_during >= ANSWERED_DURING,
        "only {answered_during} admin requests were answered while the flood ran: {admin_probes:?}"
    );
    for p in &user_probes {
        ensure!(p.code == 200, "ordinary user after the flood: {p:?}");
    }
    ensure!(
        watch_errors.is_empty(),
        "watch events other than ADDED: {:?}",
        first(&watch_errors)
    );
    ensure!(
        behind_watches == 0,
        "{behind_watches} watches did not see exactly the {} watched creates",
        tally.watched_created
    );
    server.stop().await
}
