//! End-to-end tests of `korral up`: the real binary as a child process, driven with the real
//! `kubectl`. Every child is killed when its guard drops, so a failing test never hangs.

mod support;
mod terminal;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;
use support::{CmdOutput, KORRAL, KUBECTL_TIMEOUT, STEP, kubectl_binaries, run_with_timeout};

/// How long convergence may take in these tests.
const CONVERGE: Duration = Duration::from_secs(60);

/// A `korral up` running in the background; killed (SIGKILL) on drop.
struct Up {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    kubeconfig: PathBuf,
    kubectl_cache: tempfile::TempDir,
}

impl Up {
    fn start(args: &[String], kubeconfig: &Path) -> anyhow::Result<Self> {
        let mut child = Command::new(KORRAL)
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawning korral up")?;
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        for (pipe, text) in [
            (
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
                stdout.clone(),
            ),
            (
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
                stderr.clone(),
            ),
        ] {
            let pipe = pipe.context("pipe")?;
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    text.lock().expect("lock").push_str(&format!("{line}\n"));
                }
            });
        }
        Ok(Self {
            child,
            stdout,
            stderr,
            kubeconfig: kubeconfig.to_path_buf(),
            kubectl_cache: tempfile::tempdir()?,
        })
    }

    fn stdout(&self) -> String {
        self.stdout.lock().expect("lock").clone()
    }

    fn describe(&self) -> String {
        format!(
            "--- korral up stdout ---\n{}\n--- korral up stderr ---\n{}",
            self.stdout(),
            self.stderr.lock().expect("lock")
        )
    }

    /// Waits until stdout contains `text`.
    fn wait_for_output(&mut self, text: &str, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.stdout().contains(text) {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "korral up exited ({status}) before printing {text:?}\n{}",
                    self.describe()
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "korral up did not print {text:?} within {timeout:?}\n{}",
                    self.describe()
                );
            }
            thread::sleep(STEP);
        }
    }

    fn kubectl(&self, kubectl: &Path, args: &[&str]) -> anyhow::Result<CmdOutput> {
        let mut all: Vec<String> = vec![
            "--kubeconfig".into(),
            self.kubeconfig.display().to_string(),
            "--cache-dir".into(),
            self.kubectl_cache.path().display().to_string(),
        ];
        all.extend(args.iter().map(|s| s.to_string()));
        run_with_timeout(kubectl, &all, &[], KUBECTL_TIMEOUT)
    }

    /// `kubectl get ... -o json`, parsed.
    fn get_json(&self, kubectl: &Path, args: &[&str]) -> anyhow::Result<Value> {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let out = self.kubectl(kubectl, &all)?;
        if !out.success() {
            bail!("{}", out.describe());
        }
        Ok(serde_json::from_str(&out.stdout)?)
    }

    /// Polls `check` (kubectl reads) until it holds.
    fn eventually(
        &self,
        what: &str,
        mut check: impl FnMut(&Self) -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + CONVERGE;
        let mut last_error = String::new();
        loop {
            match check(self) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => last_error = format!("{e:#}"),
            }
            if Instant::now() >= deadline {
                bail!(
                    "timed out waiting for {what} (last error: {last_error})\n{}",
                    self.describe()
                );
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends SIGTERM and waits for a graceful exit.
    fn stop(mut self) -> anyhow::Result<ExitStatus> {
        support::send_signal("TERM", i64::from(self.child.id()));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait()? {
                thread::sleep(Duration::from_millis(50));
                return Ok(status);
            }
            if Instant::now() >= deadline {
                bail!(
                    "korral up did not stop within 30s of SIGTERM\n{}",
                    self.describe()
                );
            }
            thread::sleep(STEP);
        }
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kubectl() -> Option<PathBuf> {
    let found = kubectl_binaries().into_iter().next();
    if found.is_none() {
        eprintln!("skipping: no kubectl on PATH");
    }
    found
}

fn up_args(dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "up".into(),
        "--data-dir".into(),
        dir.join("data").display().to_string(),
        "--kubeconfig".into(),
        dir.join("kubeconfig").display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Names of ready, non-terminating pods of the sample, sorted.
fn ready_pods(up: &Up, kubectl: &Path) -> anyhow::Result<Vec<String>> {
    let pods = up.get_json(
        kubectl,
        &[
            "get",
            "pods",
            "-n",
            "default",
            "-l",
            "app=memcached,memcached_cr=memcached-sample",
        ],
    )?;
    let mut names: Vec<String> = pods["items"]
        .as_array()
        .context("items")?
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| {
            p["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
        })
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    Ok(names)
}

/// Whether the sample runs `n` ready pods, all listed in `status.nodes`.
fn converged_to(up: &Up, kubectl: &Path, n: usize) -> anyhow::Result<bool> {
    let pods = ready_pods(up, kubectl)?;
    let m = up.get_json(
        kubectl,
        &["get", "memcached", "memcached-sample", "-n", "default"],
    )?;
    let mut nodes: Vec<String> = m["status"]["nodes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    nodes.sort();
    let d = up.get_json(
        kubectl,
        &["get", "deployment", "memcached-sample", "-n", "default"],
    )?;
    Ok(pods.len() == n
        && nodes == pods
        && d["spec"]["replicas"] == n
        && d["status"]["readyReplicas"] == n)
}

#[test]
fn up_sample_memcached_exits_after_converging() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let args = up_args(
        dir.path(),
        &[
            "--sample",
            "memcached",
            "--exit-after-converge",
            "--timeout",
            "60",
        ],
    );
    let out = run_with_timeout(Path::new(KORRAL), &args, &[], Duration::from_secs(120))?;
    assert!(out.success(), "{}", out.describe());
    let stdout = &out.stdout;
    assert!(
        stdout.contains("control plane listening on https://127.0.0.1:"),
        "{}",
        out.describe()
    );
    assert!(
        stdout.contains(&format!(
            "export KUBECONFIG={}",
            dir.path().join("kubeconfig").display()
        )),
        "{}",
        out.describe()
    );
    assert!(
        stdout.contains("Deployment: memcached-sample 3/3 ready"),
        "{}",
        out.describe()
    );
    assert!(
        stdout.contains("converged: memcached-sample has 3/3 ready pods"),
        "{}",
        out.describe()
    );
    // status.nodes lists three pod names as upstream names Deployment pods.
    let nodes_line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("status.nodes: "))
        .context("no status.nodes line")?;
    let names: Vec<&str> = nodes_line
        .trim_start_matches("status.nodes: [")
        .trim_end_matches(']')
        .split(", ")
        .collect();
    assert_eq!(names.len(), 3, "{nodes_line}");
    assert!(
        names.iter().all(|n| n.starts_with("memcached-sample-")),
        "{nodes_line}"
    );
    // Plain output (not a terminal): no escape sequences.
    assert!(!stdout.contains('\x1b'), "{}", out.describe());
    Ok(())
}

#[test]
fn up_times_out_with_a_clear_message_when_nothing_can_converge() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    // Without simulation the Deployment never gets pods.
    let args: Vec<String> = [
        "up",
        "--in-memory",
        "--kubeconfig",
        &dir.path().join("kubeconfig").display().to_string(),
        "--sample",
        "memcached",
        "--exit-after-converge",
        "--timeout",
        "2",
        "--no-simulation",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run_with_timeout(Path::new(KORRAL), &args, &[], Duration::from_secs(60))?;
    assert!(!out.timed_out() && !out.success(), "{}", out.describe());
    assert!(
        out.stderr
            .contains("memcached-sample did not converge within 2s"),
        "{}",
        out.describe()
    );
    assert!(out.stderr.contains("0/3 ready"), "{}", out.describe());
    Ok(())
}

#[test]
fn up_in_the_background_with_kubectl() -> anyhow::Result<()> {
    let Some(kubectl) = kubectl() else {
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    let mut up = Up::start(
        &up_args(dir.path(), &["--sample", "memcached"]),
        &kubeconfig,
    )?;
    up.wait_for_output("converged: memcached-sample has 3/3", CONVERGE)?;

    // A second `korral up` on the same data directory fails fast and says why.
    let data = dir.path().join("data");
    let second_args: Vec<String> = [
        "up",
        "--data-dir",
        &data.display().to_string(),
        "--kubeconfig",
        &dir.path().join("other").display().to_string(),
        "--sample",
        "memcached",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let second = run_with_timeout(
        Path::new(KORRAL),
        &second_args,
        &[],
        Duration::from_secs(30),
    )?;
    assert!(
        !second.timed_out() && !second.success(),
        "{}",
        second.describe()
    );
    assert!(
        second.stderr.contains(&data.display().to_string()),
        "{}",
        second.describe()
    );
    assert!(
        second.stderr.contains("another korral is using it"),
        "{}",
        second.describe()
    );

    // kubectl sees the sample.
    let get = up.kubectl(&kubectl, &["get", "memcached"])?;
    assert!(get.success(), "{}", get.describe());
    assert!(
        get.stdout.contains("memcached-sample"),
        "{}",
        get.describe()
    );
    let nodes = up.kubectl(&kubectl, &["get", "nodes"])?;
    assert!(
        nodes.success() && nodes.stdout.contains("korral-node"),
        "{}",
        nodes.describe()
    );
    assert!(converged_to(&up, &kubectl, 3)?, "{}", up.describe());

    // Upstream-shaped Deployment status: kubectl's rollout check agrees.
    let rollout = up.kubectl(
        &kubectl,
        &[
            "rollout",
            "status",
            "deployment/memcached-sample",
            "--timeout=30s",
        ],
    )?;
    assert!(rollout.success(), "{}", rollout.describe());
    assert!(
        rollout.stdout.contains("successfully rolled out"),
        "{}",
        rollout.describe()
    );
    let pods = up.kubectl(&kubectl, &["get", "pods"])?;
    assert!(pods.success(), "{}", pods.describe());
    assert_eq!(
        pods.stdout.matches("1/1     Running").count(),
        3,
        "{}",
        pods.describe()
    );

    // Size 5: five ready pods, five names in status.nodes.
    let patch = up.kubectl(
        &kubectl,
        &[
            "patch",
            "memcached",
            "memcached-sample",
            "--type=merge",
            "-p",
            r#"{"spec":{"size":5}}"#,
        ],
    )?;
    assert!(patch.success(), "{}", patch.describe());
    up.eventually("5 ready pods in status.nodes", |up| {
        converged_to(up, &kubectl, 5)
    })?;
    up.wait_for_output("Deployment: memcached-sample 5/5 ready", CONVERGE)?;

    // Scaling the Deployment by hand: the operator puts it back.
    let scale = up.kubectl(
        &kubectl,
        &["scale", "deployment", "memcached-sample", "--replicas=1"],
    )?;
    assert!(scale.success(), "{}", scale.describe());
    up.eventually("the operator restoring 5 replicas", |up| {
        let d = up.get_json(&kubectl, &["get", "deployment", "memcached-sample"])?;
        Ok(d["spec"]["replicas"] == 5)
    })?;
    up.eventually("5 ready pods again", |up| converged_to(up, &kubectl, 5))?;

    // Deleting the resource removes the Deployment and its pods.
    let delete = up.kubectl(&kubectl, &["delete", "memcached", "memcached-sample"])?;
    assert!(delete.success(), "{}", delete.describe());
    up.eventually("deployment and pods gone", |up| {
        let d = up.kubectl(
            &kubectl,
            &[
                "get",
                "deployment",
                "memcached-sample",
                "--ignore-not-found",
                "-o",
                "name",
            ],
        )?;
        let pods = up.get_json(&kubectl, &["get", "pods", "-l", "app=memcached"])?;
        Ok(d.success()
            && d.stdout.trim().is_empty()
            && pods["items"].as_array().is_some_and(Vec::is_empty))
    })?;

    let status = up.stop()?;
    assert!(status.success(), "korral up exited with {status}");
    Ok(())
}

#[test]
fn up_restarts_on_the_same_data_directory() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let args = up_args(
        dir.path(),
        &[
            "--sample",
            "memcached",
            "--exit-after-converge",
            "--timeout",
            "60",
        ],
    );
    let first = run_with_timeout(Path::new(KORRAL), &args, &[], Duration::from_secs(120))?;
    assert!(first.success(), "{}", first.describe());
    assert!(
        first
            .stdout
            .contains("applied memcached default/memcached-sample (size 3)")
    );
    let again = run_with_timeout(Path::new(KORRAL), &args, &[], Duration::from_secs(120))?;
    assert!(again.success(), "{}", again.describe());
    assert!(
        again.stdout.contains("already exists (size 3)"),
        "{}",
        again.describe()
    );
    assert!(
        again.stdout.contains("converged: memcached-sample has 3/3"),
        "{}",
        again.describe()
    );
    Ok(())
}

#[test]
fn up_on_a_terminal_redraws_its_status_lines() -> anyhow::Result<()> {
    // `script` runs korral with a pseudo-terminal as stdout.
    let script = Path::new("/usr/bin/script");
    if !script.is_file() {
        eprintln!("skipping: no /usr/bin/script to provide a terminal");
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    // An 80-column terminal, whatever the one running the tests.
    let command = format!(
        "stty cols 80 rows 24; {KORRAL} up --in-memory --kubeconfig {} --sample memcached --exit-after-converge --timeout 60",
        dir.path().join("kubeconfig").display()
    );
    let args: Vec<String> = vec!["-qec".into(), command, "/dev/null".into()];
    let out = run_with_timeout(script, &args, &[], Duration::from_secs(120))?;
    assert!(out.success(), "{}", out.describe());
    // Live mode: the block is drawn as aligned rows and redrawn with cursor movement.
    assert!(out.stdout.contains("\x1b["), "{}", out.describe());
    assert!(
        out.stdout
            .contains("  Deployment     memcached-sample 3/3 ready"),
        "{}",
        out.describe()
    );
    assert!(
        !out.stdout.contains("Deployment: memcached-sample"),
        "{}",
        out.describe()
    );
    assert!(
        out.stdout.contains("converged: memcached-sample has 3/3"),
        "{}",
        out.describe()
    );
    // What the terminal shows at the end: one status block, none of the earlier ones left
    // behind (each redraw erased exactly the rows it had drawn).
    let mut screen = terminal::Screen::new(80);
    screen.feed(&out.stdout.replace("\r\n", "\n"));
    let shown = screen.text();
    for label in ["  control plane ", "  Deployment ", "  Pods ", "  state "] {
        assert_eq!(
            shown.iter().filter(|row| row.starts_with(label)).count(),
            1,
            "{label:?} should be on screen once:\n{}",
            shown.join("\n")
        );
    }
    assert!(
        shown.iter().any(|row| row == "  state          converged"),
        "{}",
        shown.join("\n")
    );
    Ok(())
}
