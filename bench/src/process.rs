//! Finding (or building) the `korral` binary and running `korral apiserver` as a child process.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The line `korral apiserver` prints once it accepts requests.
const READY_PREFIX: &str = "korral apiserver listening on ";

/// How long a server may take to print its URL before we give up.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The directory cargo put this executable in (`target/<profile>`; test binaries live one level
/// deeper, in `target/<profile>/deps`).
fn profile_dir() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the benchmark executable")?;
    let mut dir = exe
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| anyhow!("{} has no parent directory", exe.display()))?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    Ok(dir)
}

fn binary_name() -> String {
    format!("korral{}", std::env::consts::EXE_SUFFIX)
}

/// Finds the `korral` binary next to this executable, building it first with
/// `cargo build [--release] -p korral-cli` when `build` is set (a no-op when it is up to date).
///
/// An explicit path is used as is. When the build fails but an older binary exists, that one is
/// used with a warning on stderr.
pub fn locate_korral(explicit: Option<&Path>, build: bool) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        if !path.is_file() {
            bail!("--korral {}: no such file", path.display());
        }
        return Ok(path.to_path_buf());
    }
    let dir = profile_dir()?;
    let path = dir.join(binary_name());
    let profile = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "debug".to_string());
    let cargo_profile = if profile == "debug" {
        "dev".to_string()
    } else {
        profile
    };
    let hint = format!("cargo build --profile {cargo_profile} -p korral-cli");
    if build {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        eprintln!(
            "korral-bench: making sure {} is built ({hint})",
            path.display()
        );
        let status = std::process::Command::new(&cargo)
            .args(["build", "--profile", &cargo_profile, "-p", "korral-cli"])
            .arg("--manifest-path")
            .arg(&manifest)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) if path.is_file() => {
                eprintln!(
                    "korral-bench: warning: `{hint}` failed ({s}); using the existing binary"
                );
            }
            Err(e) if path.is_file() => {
                eprintln!(
                    "korral-bench: warning: running `{hint}` failed ({e}); using the existing binary"
                );
            }
            Ok(s) => bail!("`{hint}` failed ({s}); {} does not exist", path.display()),
            Err(e) => bail!("running `{hint}`: {e}; {} does not exist", path.display()),
        }
    }
    if !path.is_file() {
        bail!(
            "the korral binary is missing: {} does not exist; run `{hint}` first (or pass --korral PATH)",
            path.display()
        );
    }
    Ok(path)
}

/// Where the server stores objects.
#[derive(Debug, Clone)]
pub enum Storage {
    /// `--in-memory`.
    InMemory,
    /// `--data-dir DIR`.
    Durable(PathBuf),
}

/// A running `korral apiserver` child process. Killed on drop.
pub struct ServerProcess {
    child: Child,
    pid: u32,
    url: String,
    kubeconfig: PathBuf,
    log: PathBuf,
    spawned_at: Instant,
    ready_line_at: Instant,
    _dir: tempfile::TempDir,
}

impl ServerProcess {
    /// Spawns `korral apiserver --port 0 --kubeconfig <tmp>` with the given storage and waits for
    /// its `listening on` line. `insecure_http` adds `--insecure-http`.
    pub async fn spawn(bin: &Path, storage: &Storage, insecure_http: bool) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("korral-bench-")
            .tempdir()
            .context("creating a temporary directory")?;
        let kubeconfig = dir.path().join("kubeconfig");
        let log = dir.path().join("apiserver.log");
        let log_file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(bin);
        cmd.arg("apiserver");
        match storage {
            Storage::InMemory => {
                cmd.arg("--in-memory");
            }
            Storage::Durable(data) => {
                cmd.arg("--data-dir").arg(data);
            }
        }
        cmd.args(["--port", "0", "--kubeconfig"]).arg(&kubeconfig);
        if insecure_http {
            cmd.arg("--insecure-http");
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file))
            .kill_on_drop(true);
        let spawned_at = Instant::now();
        let mut child = cmd
            .spawn()
            .with_context(|| format!("spawning {}", bin.display()))?;
        let pid = child
            .id()
            .ok_or_else(|| anyhow!("the korral process exited at once"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| anyhow!("no stdout pipe"))?;
        let mut lines = BufReader::new(stdout).lines();
        let url = loop {
            let next =
                tokio::time::timeout_at((spawned_at + START_TIMEOUT).into(), lines.next_line())
                    .await;
            match next {
                Ok(Ok(Some(line))) => {
                    if let Some(url) = line.strip_prefix(READY_PREFIX) {
                        break url.trim().to_string();
                    }
                }
                Ok(Ok(None)) | Ok(Err(_)) => {
                    let status = child.wait().await.ok();
                    bail!(
                        "korral apiserver ended before printing its URL (exit: {}); its log:\n{}",
                        status.map_or("unknown".to_string(), |s| s.to_string()),
                        tail(&log)
                    );
                }
                Err(_) => bail!(
                    "korral apiserver printed no `{READY_PREFIX}` line within {START_TIMEOUT:?}; its log:\n{}",
                    tail(&log)
                ),
            }
        };
        let ready_line_at = Instant::now();
        // Keep draining stdout so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self {
            child,
            pid,
            url,
            kubeconfig,
            log,
            spawned_at,
            ready_line_at,
            _dir: dir,
        })
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The kubeconfig the server wrote.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// When the process was spawned.
    pub fn spawned_at(&self) -> Instant {
        self.spawned_at
    }

    /// When its `listening on` line was read.
    pub fn ready_line_at(&self) -> Instant {
        self.ready_line_at
    }

    /// The resident set size (`VmRSS`) in KiB.
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        status_kib(self.pid, "VmRSS:")
    }

    /// The peak resident set size (`VmHWM`) in KiB: the largest `VmRSS` since the start or the
    /// last [`Self::reset_peak_rss`].
    pub fn peak_rss_kib(&self) -> anyhow::Result<u64> {
        status_kib(self.pid, "VmHWM:")
    }

    /// Resets the peak resident set size to the current one (writes `5` to
    /// `/proc/<pid>/clear_refs`, Linux 4.0 and later).
    pub fn reset_peak_rss(&self) -> anyhow::Result<()> {
        let path = format!("/proc/{}/clear_refs", self.pid);
        std::fs::write(&path, "5").with_context(|| format!("writing {path}"))
    }

    /// CPU time (user + system, all threads) the server has used so far.
    pub fn cpu_time(&self) -> anyhow::Result<Duration> {
        cpu_time_of(&format!("/proc/{}/stat", self.pid))
    }

    /// A new kube client (with its own connection pool) from the server's kubeconfig.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        client_from_kubeconfig(&self.kubeconfig).await
    }

    /// `n` independent kube clients (separate connection pools, so separate connections).
    pub async fn clients(&self, n: usize) -> anyhow::Result<Vec<kube::Client>> {
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            clients.push(self.client().await?);
        }
        Ok(clients)
    }

    /// Adds the server's state to an error: whether it exited, and the end of its log.
    pub fn annotate(&mut self, err: anyhow::Error) -> anyhow::Error {
        match self.child.try_wait() {
            Ok(Some(status)) => err.context(format!(
                "the korral apiserver process exited ({status}); its log ends with:\n{}",
                tail(&self.log)
            )),
            _ => {
                let log = tail(&self.log);
                if log.trim().is_empty() {
                    err
                } else {
                    err.context(format!("the korral apiserver log ends with:\n{log}"))
                }
            }
        }
    }

    /// Kills the process and waits for it.
    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// CPU time (user + system, all threads) this process has used so far.
pub fn own_cpu_time() -> anyhow::Result<Duration> {
    cpu_time_of("/proc/self/stat")
}

/// `utime + stime` from a `/proc/<pid>/stat` file, in the kernel's USER_HZ ticks (100 per second
/// on Linux).
fn cpu_time_of(path: &str) -> anyhow::Result<Duration> {
    const USER_HZ: u64 = 100;
    let stat = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    // Fields after the parenthesised command name start with field 3 (state); utime and stime
    // are fields 14 and 15.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow!("unexpected format of {path}"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<u64> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| anyhow!("unexpected format of {path}"))
    };
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_millis(total * 1000 / USER_HZ))
}

/// A kube client built from a kubeconfig file, as a user's program would build one.
pub async fn client_from_kubeconfig(path: &Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .with_context(|| format!("loading {}", path.display()))?;
    kube::Client::try_from(config).context("building a kube client")
}

/// The last lines of a log file.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// A `kB` line of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`), in KiB.
fn status_kib(pid: u32, field: &str) -> anyhow::Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| anyhow!("no {field} line in {path}"))
}
