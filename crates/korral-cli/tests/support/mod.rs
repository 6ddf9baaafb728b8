//! Helpers shared by the end-to-end tests: running `korral apiserver` as a child process and
//! running `kubectl` against it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// The `korral` binary under test.
pub const KORRAL: &str = env!("CARGO_BIN_EXE_korral");

/// The old kubectl client exercised besides the default one.
pub const OLD_KUBECTL: &str = "/usr/lib/google-cloud-sdk/bin/kubectl.1.27";

/// Poll step.
pub const STEP: Duration = Duration::from_millis(20);

/// How long a server may take to print its ready lines.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one kubectl invocation may take.
pub const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where the server keeps its objects.
#[derive(Debug, Clone)]
pub enum Storage {
    /// `--in-memory`.
    InMemory,
    /// `--data-dir DIR`.
    Durable(PathBuf),
}

/// How to start a server.
#[derive(Debug, Clone)]
pub struct Options {
    /// The storage mode.
    pub storage: Storage,
    /// `--port` (0: a free one).
    pub port: u16,
    /// `--kubeconfig`.
    pub kubeconfig: PathBuf,
}

/// The result of running a command to completion (or until its timeout).
#[derive(Debug, Clone)]
pub struct CmdOutput {
    /// The command line, for messages.
    pub command: String,
    /// The exit status; `None` when it was killed after its timeout.
    pub status: Option<ExitStatus>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl CmdOutput {
    /// Whether the command exited with status 0.
    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// Whether the command was killed after its timeout.
    pub fn timed_out(&self) -> bool {
        self.status.is_none()
    }

    /// A description for failure messages.
    pub fn describe(&self) -> String {
        let status = match self.status {
            Some(s) => format!("{s}"),
            None => "killed after timeout".to_string(),
        };
        format!(
            "`{}` -> {status}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command,
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }
}

fn spawn_reader<R: Read + Send + 'static>(mut reader: R) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = reader.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

fn quote(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// A printable command line.
pub fn command_line(program: &Path, args: &[String]) -> String {
    std::iter::once(program.display().to_string())
        .chain(args.iter().map(|a| quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Sends a signal to a process (or, with a negative id, a process group) with `kill(1)`.
pub fn send_signal(signal: &str, pid: i64) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg("--")
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Runs `program args` to completion in its own process group, killing the group after
/// `timeout`.
pub fn run_with_timeout(
    program: &Path,
    args: &[String],
    envs: &[(&str, &str)],
    timeout: Duration,
) -> anyhow::Result<CmdOutput> {
    let command = command_line(program, args);
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("spawning `{command}`"))?;
    let stdout = spawn_reader(child.stdout.take().context("stdout")?);
    let stderr = spawn_reader(child.stderr.take().context("stderr")?);
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            send_signal("KILL", -i64::from(child.id()));
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(STEP);
    };
    // Leftover grandchildren could hold the pipes open; do not wait for them forever.
    let grace = Duration::from_secs(5);
    let stdout = stdout.recv_timeout(grace).unwrap_or_default();
    let stderr = stderr.recv_timeout(grace).unwrap_or_default();
    Ok(CmdOutput {
        command,
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// The kubectl clients to test with: `kubectl` on `PATH` and the old 1.27 one, those that exist.
pub fn kubectl_binaries() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("kubectl");
            if candidate.is_file() {
                found.push(candidate);
                break;
            }
        }
    }
    let old = PathBuf::from(OLD_KUBECTL);
    if old.is_file() {
        let same = found
            .iter()
            .any(|f| std::fs::canonicalize(f).ok() == std::fs::canonicalize(&old).ok());
        if !same {
            found.push(old);
        }
    }
    found
}

/// A running `korral apiserver` child process. Dropping it kills the process (SIGKILL).
pub struct Server {
    child: Mutex<Child>,
    /// The URL printed on stdout.
    pub url: String,
    /// The kubeconfig path the server wrote.
    pub kubeconfig: PathBuf,
    /// The options it was started with.
    pub options: Options,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    kubectl_cache: tempfile::TempDir,
}

impl Server {
    /// Starts `korral apiserver` and waits (at most [`START_TIMEOUT`]) until it prints its URL
    /// and kubeconfig path.
    pub fn start(options: Options) -> anyhow::Result<Self> {
        Self::start_with_args(options, &[])
    }

    /// Like [`Server::start`], with more `korral apiserver` flags (e.g. `--authorization rbac`).
    pub fn start_with_args(options: Options, extra: &[&str]) -> anyhow::Result<Self> {
        let mut args: Vec<String> = vec!["apiserver".into()];
        args.extend(extra.iter().map(|s| s.to_string()));
        match &options.storage {
            Storage::InMemory => args.push("--in-memory".into()),
            Storage::Durable(dir) => {
                args.push("--data-dir".into());
                args.push(dir.display().to_string());
            }
        }
        args.push("--port".into());
        args.push(options.port.to_string());
        args.push("--kubeconfig".into());
        args.push(options.kubeconfig.display().to_string());
        let command = command_line(Path::new(KORRAL), &args);

        let mut child = Command::new(KORRAL)
            .args(&args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("spawning `{command}`"))?;

        let stdout_text = Arc::new(Mutex::new(String::new()));
        let stderr_text = Arc::new(Mutex::new(String::new()));
        let (line_tx, line_rx) = mpsc::channel::<String>();
        {
            let out = child.stdout.take().context("stdout")?;
            let text = stdout_text.clone();
            thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    text.lock().expect("lock").push_str(&format!("{line}\n"));
                    let _ = line_tx.send(line);
                }
            });
        }
        {
            let err = child.stderr.take().context("stderr")?;
            let text = stderr_text.clone();
            thread::spawn(move || {
                let mut reader = BufReader::new(err);
                let mut line = String::new();
                while let Ok(n) = reader.read_line(&mut line) {
                    if n == 0 {
                        break;
                    }
                    text.lock().expect("lock").push_str(&line);
                    line.clear();
                }
            });
        }

        let deadline = Instant::now() + START_TIMEOUT;
        let mut url = None;
        let mut kubeconfig = None;
        let failure = loop {
            if url.is_some() && kubeconfig.is_some() {
                break None;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break Some(format!("not ready after {START_TIMEOUT:?}"));
            }
            match line_rx.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("korral apiserver listening on ") {
                        url = Some(rest.trim().to_string());
                    } else if let Some(rest) = line.strip_prefix("kubeconfig written to ") {
                        kubeconfig = Some(PathBuf::from(rest.trim()));
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Some(status) = child.try_wait()? {
                        break Some(format!("exited with {status} before it was ready"));
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // Stdout closed: the process is gone (or about to be).
                    let until = Instant::now() + Duration::from_secs(5);
                    let status = loop {
                        if let Some(s) = child.try_wait()? {
                            break Some(s);
                        }
                        if Instant::now() >= until {
                            break None;
                        }
                        thread::sleep(STEP);
                    };
                    break Some(format!(
                        "closed stdout before it was ready (exit: {status:?})"
                    ));
                }
            }
        };
        if let Some(why) = failure {
            let _ = child.kill();
            let _ = child.wait();
            thread::sleep(Duration::from_millis(100));
            bail!(
                "`{command}` {why}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                stdout_text.lock().expect("lock"),
                stderr_text.lock().expect("lock")
            );
        }
        let kubectl_cache = tempfile::tempdir()?;
        Ok(Self {
            child: Mutex::new(child),
            url: url.unwrap_or_default(),
            kubeconfig: kubeconfig.unwrap_or_default(),
            options,
            stdout: stdout_text,
            stderr: stderr_text,
            kubectl_cache,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.lock().expect("lock").id()
    }

    /// The exit status, if the process has exited (e.g. crashed).
    pub fn exited(&self) -> Option<ExitStatus> {
        self.child.lock().expect("lock").try_wait().ok().flatten()
    }

    /// The last `n` lines of stderr.
    pub fn stderr_tail(&self, n: usize) -> String {
        let text = self.stderr();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// The port the server listens on, from its URL.
    pub fn port(&self) -> anyhow::Result<u16> {
        let port = self
            .url
            .rsplit(':')
            .next()
            .context("no port in URL")?
            .trim_end_matches('/');
        port.parse()
            .with_context(|| format!("port of URL {}", self.url))
    }

    /// Everything the server printed on stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().expect("lock").clone()
    }

    /// Everything the server printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("lock").clone()
    }

    /// Sends SIGTERM and waits (at most `timeout`) for the process to exit.
    pub fn stop(self, timeout: Duration) -> anyhow::Result<ExitStatus> {
        let pid = self.pid();
        send_signal("TERM", i64::from(pid));
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.lock().expect("lock").try_wait()? {
                // Let the reader threads drain the pipes.
                thread::sleep(Duration::from_millis(50));
                return Ok(status);
            }
            if Instant::now() >= deadline {
                bail!(
                    "korral apiserver (pid {pid}) did not exit within {timeout:?} after SIGTERM\n--- stderr ---\n{}",
                    self.stderr()
                );
            }
            thread::sleep(STEP);
        }
    }

    /// Kills the process with SIGKILL and reaps it.
    pub fn kill(self) -> anyhow::Result<ExitStatus> {
        let mut child = self.child.lock().expect("lock");
        child.kill()?;
        Ok(child.wait()?)
    }

    /// Arguments every kubectl call gets.
    fn kubectl_base_args(&self, kubeconfig: Option<&Path>) -> Vec<String> {
        vec![
            "--kubeconfig".into(),
            kubeconfig.unwrap_or(&self.kubeconfig).display().to_string(),
            "--cache-dir".into(),
            self.kubectl_cache.path().display().to_string(),
        ]
    }

    /// Runs `kubectl --kubeconfig <ours> args...` to completion.
    pub fn kubectl(&self, kubectl: &Path, args: &[&str]) -> anyhow::Result<CmdOutput> {
        let mut all = self.kubectl_base_args(None);
        all.extend(args.iter().map(|s| s.to_string()));
        run_with_timeout(kubectl, &all, &[], KUBECTL_TIMEOUT)
    }

    /// Starts `kubectl --kubeconfig <ours> args...` in the background (e.g. a watch).
    pub fn kubectl_background(&self, kubectl: &Path, args: &[&str]) -> anyhow::Result<Background> {
        let mut all = self.kubectl_base_args(None);
        all.extend(args.iter().map(|s| s.to_string()));
        Background::spawn(kubectl, &all)
    }

    /// A kube client from the kubeconfig the server wrote.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        client_from_kubeconfig(&self.kubeconfig).await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(child) = self.child.get_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A kube client from a kubeconfig file.
pub async fn client_from_kubeconfig(path: &Path) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading kubeconfig {}", path.display()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .with_context(|| format!("loading kubeconfig {}", path.display()))?;
    Ok(kube::Client::try_from(config)?)
}

/// A background process whose stdout is read line by line. Dropping it kills its process group.
pub struct Background {
    child: Child,
    /// The command line.
    pub command: String,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: Arc<Mutex<String>>,
}

impl Background {
    fn spawn(program: &Path, args: &[String]) -> anyhow::Result<Self> {
        let command = command_line(program, args);
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .with_context(|| format!("spawning `{command}`"))?;
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().context("stdout")?;
        thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let err = child.stderr.take().context("stderr")?;
        let text = stderr.clone();
        thread::spawn(move || {
            let mut reader = BufReader::new(err);
            let mut line = String::new();
            while let Ok(n) = reader.read_line(&mut line) {
                if n == 0 {
                    break;
                }
                text.lock().expect("lock").push_str(&line);
                line.clear();
            }
        });
        Ok(Self {
            child,
            command,
            lines,
            seen: Vec::new(),
            stderr,
        })
    }

    /// Waits (at most `timeout`) for a stdout line matching `pred`; returns it.
    pub fn wait_line(
        &mut self,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.transcript("no matching line within the timeout"));
            }
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return Ok(line);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(self.transcript("no matching line within the timeout"));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    thread::sleep(Duration::from_millis(50));
                    return Err(self.transcript("the process closed stdout"));
                }
            }
        }
    }

    /// What the process printed so far.
    pub fn transcript(&self, why: &str) -> String {
        format!(
            "`{}`: {why}\n--- stdout lines ---\n{}\n--- stderr ---\n{}",
            self.command,
            self.seen.join("\n"),
            self.stderr.lock().expect("lock").trim_end()
        )
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        send_signal("KILL", -i64::from(self.child.id()));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `f` every [`STEP`] until it returns `Some` or `timeout` passes.
pub fn poll<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(STEP);
    }
}

/// Failures collected during a scenario, so one run reports every broken step.
#[derive(Default)]
pub struct Failures {
    items: Vec<String>,
}

impl Failures {
    /// Records a failure.
    pub fn add(&mut self, msg: impl Into<String>) {
        self.items.push(msg.into());
    }

    /// Records a failure unless `ok`.
    pub fn check(&mut self, ok: bool, msg: impl FnOnce() -> String) -> bool {
        if !ok {
            self.add(msg());
        }
        ok
    }

    /// Whether nothing failed.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Panics listing every failure, if any.
    pub fn finish(self, what: &str) {
        if !self.items.is_empty() {
            let mut report = format!("{what}: {} failure(s)\n", self.items.len());
            for (i, item) in self.items.iter().enumerate() {
                report.push_str(&format!("\n[{}] {item}\n", i + 1));
            }
            panic!("{report}");
        }
    }
}

/// Runs `scenario` with every kubectl binary there is ([`kubectl_binaries`]: the default one
/// and 1.27), then fails the test `what` listing every failure and every aborted scenario;
/// skipped (with a note) when no kubectl is installed.
pub fn for_each_kubectl(
    what: &str,
    mut scenario: impl FnMut(&Path, &mut Failures) -> anyhow::Result<()>,
) {
    let kubectls = kubectl_binaries();
    if kubectls.is_empty() {
        eprintln!("skipped: kubectl not found");
        return;
    }
    let mut failures = Failures::default();
    for kubectl in &kubectls {
        if let Err(e) = scenario(kubectl, &mut failures) {
            failures.add(format!("[{}] scenario aborted: {e:#}", kubectl.display()));
        }
    }
    failures.finish(what);
}

/// One kubectl binary's steps against one server: failing checks are collected in
/// `failures`, tagged with `tag`.
pub struct Run<'a> {
    /// The kubectl binary.
    pub kubectl: &'a Path,
    /// The server it talks to.
    pub server: &'a Server,
    /// Prefixes every failure (the kubectl's version).
    pub tag: String,
    /// Where failing checks go.
    pub failures: &'a mut Failures,
}

impl Run<'_> {
    /// Polls (at most `within`) until `kubectl args -o jsonpath=path` prints `want`; records
    /// a failure with the last output otherwise.
    pub fn wait_for(&mut self, args: &[&str], path: &str, want: &str, within: Duration) -> bool {
        let jp = format!("jsonpath={path}");
        let mut all = args.to_vec();
        all.extend(["-o", jp.as_str()]);
        let mut last = None;
        let done = poll(within, || {
            let out = self.server.kubectl(self.kubectl, &all).ok()?;
            let ok = out.success() && out.stdout.trim() == want;
            last = Some(out);
            ok.then_some(())
        })
        .is_some();
        let out = last.unwrap_or_else(|| CmdOutput {
            command: format!("kubectl {}", all.join(" ")),
            status: None,
            stdout: String::new(),
            stderr: String::new(),
        });
        self.expect(
            done,
            &format!(
                "`kubectl {}` prints {want:?} within {within:?}",
                all.join(" ")
            ),
            &out,
        )
    }

    /// Runs kubectl; a failure to run it is recorded.
    pub fn k(&mut self, args: &[&str]) -> CmdOutput {
        match self.server.kubectl(self.kubectl, args) {
            Ok(out) => out,
            Err(e) => {
                self.failures
                    .add(format!("[{}] running kubectl {args:?}: {e:#}", self.tag));
                CmdOutput {
                    command: format!("kubectl {}", args.join(" ")),
                    status: None,
                    stdout: String::new(),
                    stderr: String::new(),
                }
            }
        }
    }

    /// Records a failure unless `ok`; answers `ok`.
    pub fn expect(&mut self, ok: bool, expected: &str, out: &CmdOutput) -> bool {
        let tag = &self.tag;
        self.failures.check(ok, || {
            format!("[{tag}] expected: {expected}\nactual: {}", out.describe())
        })
    }

    /// Exit 0 and every needle in stdout.
    pub fn ok_contains(&mut self, args: &[&str], needles: &[&str]) -> CmdOutput {
        let out = self.k(args);
        let ok = out.success() && needles.iter().all(|n| out.stdout.contains(n));
        self.expect(
            ok,
            &format!(
                "`kubectl {}`: exit 0, stdout with {needles:?}",
                args.join(" ")
            ),
            &out,
        );
        out
    }

    /// A non-zero exit with every needle in stderr.
    pub fn fails_with(&mut self, args: &[&str], needles: &[&str]) {
        let out = self.k(args);
        let ok = !out.success()
            && out.status.is_some()
            && needles.iter().all(|n| out.stderr.contains(n));
        self.expect(
            ok,
            &format!(
                "`kubectl {}`: failure with {needles:?} on stderr",
                args.join(" ")
            ),
            &out,
        );
    }

    /// `kubectl get ... -o jsonpath=...` equals `want`.
    pub fn jsonpath(&mut self, args: &[&str], path: &str, want: &str) {
        let jp = format!("jsonpath={path}");
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["-o", jp.as_str()]);
        let out = self.k(&all);
        self.expect(
            out.success() && out.stdout.trim() == want,
            &format!("`kubectl {}` prints {want:?}", all.join(" ")),
            &out,
        );
    }
}
