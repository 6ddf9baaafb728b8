//! End-to-end with the real `kubectl` (the default one and the old 1.27 one) on the Memcached
//! webhooks `korral up --sample memcached` serves in process: the configurations are
//! registered pointing at the local webhook server, a Memcached applied without a size is
//! stored with the default 1, size 7 is denied with the validating webhook's message, and
//! size 4 is stored with kubectl printing the webhook's `Warning:` line.
//!
//! Every step runs for each kubectl found; all failing steps are collected and reported
//! together.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use support::{
    CmdOutput, Failures, KORRAL, KUBECTL_TIMEOUT, STEP, kubectl_binaries, run_with_timeout,
};

/// How long `korral up` may take until its webhooks are served and its sample is applied.
const UP_TIMEOUT: Duration = Duration::from_secs(60);

/// The line `korral up` prints once the webhooks are served and registered.
const WEBHOOKS_LINE: &str = "memcached webhooks (defaulting, validating) served at ";

/// A `korral up --sample memcached` in the background; killed (SIGKILL) on drop.
struct Up {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Up {
    /// Starts it in memory, writing the kubeconfig to `kubeconfig`.
    fn start(kubeconfig: &Path) -> anyhow::Result<Self> {
        let mut child = Command::new(KORRAL)
            .args(["up", "--in-memory", "--sample", "memcached", "--kubeconfig"])
            .arg(kubeconfig)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("spawning korral up")?;
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let out = child.stdout.take().context("stdout")?;
        let err = child.stderr.take().context("stderr")?;
        for (pipe, text) in [
            (
                Box::new(out) as Box<dyn std::io::Read + Send>,
                stdout.clone(),
            ),
            (
                Box::new(err) as Box<dyn std::io::Read + Send>,
                stderr.clone(),
            ),
        ] {
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(mut text) = text.lock() {
                        text.push_str(&line);
                        text.push('\n');
                    }
                }
            });
        }
        Ok(Self {
            child,
            stdout,
            stderr,
        })
    }

    fn stdout(&self) -> String {
        self.stdout.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn describe(&self) -> String {
        format!(
            "--- korral up stdout ---\n{}\n--- korral up stderr ---\n{}",
            self.stdout(),
            self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
        )
    }

    /// Waits until stdout has a line starting with `prefix`; answers that line.
    fn wait_for_line(&mut self, prefix: &str) -> anyhow::Result<String> {
        let deadline = Instant::now() + UP_TIMEOUT;
        loop {
            if let Some(line) = self.stdout().lines().find(|l| l.starts_with(prefix)) {
                return Ok(line.to_owned());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "korral up exited ({status}) before printing {prefix:?}\n{}",
                    self.describe()
                );
            }
            if Instant::now() >= deadline {
                bail!(
                    "korral up did not print {prefix:?} within {UP_TIMEOUT:?}\n{}",
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

/// One kubectl binary's steps: failing checks go to `failures`, tagged with the binary.
struct Steps<'a> {
    kubectl: &'a Path,
    kubeconfig: &'a Path,
    cache: tempfile::TempDir,
    dir: &'a Path,
    tag: String,
    failures: &'a mut Failures,
}

impl Steps<'_> {
    /// Runs kubectl; a failure to run it is recorded.
    fn k(&mut self, args: &[&str]) -> CmdOutput {
        let mut all: Vec<String> = vec![
            "--kubeconfig".into(),
            self.kubeconfig.display().to_string(),
            "--cache-dir".into(),
            self.cache.path().display().to_string(),
        ];
        all.extend(args.iter().map(|a| a.to_string()));
        match run_with_timeout(self.kubectl, &all, &[], KUBECTL_TIMEOUT) {
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

    /// Records a failure unless `ok`.
    fn expect(&mut self, ok: bool, expected: &str, out: &CmdOutput) {
        let tag = &self.tag;
        self.failures.check(ok, || {
            format!("[{tag}] expected: {expected}\nactual: {}", out.describe())
        });
    }

    /// Writes a Memcached manifest named `name` with `spec` (YAML flow) and applies it.
    fn apply(&mut self, name: &str, spec: &str) -> anyhow::Result<CmdOutput> {
        let file = self.dir.join(format!("{name}.yaml"));
        std::fs::write(
            &file,
            format!(
                "apiVersion: cache.example.com/v1\nkind: Memcached\nmetadata:\n  name: {name}\n  namespace: default\nspec: {spec}\n"
            ),
        )?;
        Ok(self.k(&["apply", "-f", &file.display().to_string()]))
    }

    /// `kubectl get ... -o jsonpath=...` equals `want`.
    fn jsonpath(&mut self, args: &[&str], path: &str, want: &str) {
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

fn scenario(
    kubectl: &Path,
    kubeconfig: &Path,
    webhook_url: &str,
    suffix: usize,
    failures: &mut Failures,
) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let mut steps = Steps {
        kubectl,
        kubeconfig,
        cache: tempfile::tempdir()?,
        dir: dir.path(),
        tag: kubectl.display().to_string(),
        failures,
    };

    // The configurations are registered, calling the in-process server by URL.
    steps.jsonpath(
        &[
            "get",
            "validatingwebhookconfigurations",
            "memcached-operator-validating-webhook-configuration",
        ],
        "{.webhooks[0].name} {.webhooks[0].clientConfig.url}",
        &format!("vmemcached-v1.kb.io {webhook_url}/validate-cache-example-com-v1-memcached"),
    );
    steps.jsonpath(
        &[
            "get",
            "mutatingwebhookconfigurations",
            "memcached-operator-mutating-webhook-configuration",
        ],
        "{.webhooks[0].name} {.webhooks[0].clientConfig.url}",
        &format!("mmemcached-v1.kb.io {webhook_url}/mutate-cache-example-com-v1-memcached"),
    );

    // Defaulting: no size -> 1.
    let unsized_name = format!("unsized-{suffix}");
    let out = steps.apply(&unsized_name, "{}")?;
    steps.expect(
        out.success()
            && out.stdout.contains(&format!(
                "memcached.cache.example.com/{unsized_name} created"
            ))
            && !out.stderr.contains("Warning:"),
        "apply without a size: created, no warning",
        &out,
    );
    steps.jsonpath(
        &["get", "memcached", &unsized_name, "-n", "default"],
        "{.spec.size}",
        "1",
    );

    // Validation: size 7 is denied with the webhook's message.
    let big = format!("big-{suffix}");
    let out = steps.apply(&big, "{size: 7}")?;
    let message = format!(
        "admission webhook \"vmemcached-v1.kb.io\" denied the request: Memcached.cache.example.com \"{big}\" is invalid: spec.size: Invalid value: 7: must be between 1 and 5"
    );
    steps.expect(
        !out.success() && out.status.is_some() && out.stderr.contains(&message),
        &format!("apply of size 7 fails with {message:?} on stderr"),
        &out,
    );
    let out = steps.k(&["get", "memcached", &big, "-n", "default"]);
    steps.expect(
        !out.success()
            && out
                .stderr
                .contains(&format!("memcacheds.cache.example.com \"{big}\" not found")),
        "the denied Memcached is not stored",
        &out,
    );

    // A warning above 3: stored, and kubectl prints the webhook's warning.
    let large = format!("large-{suffix}");
    let out = steps.apply(&large, "{size: 4}")?;
    let warning = "Warning: spec.size 4 is above 3: each memcached pod reserves 64 MiB of cache";
    steps.expect(
        out.success()
            && out
                .stdout
                .contains(&format!("memcached.cache.example.com/{large} created"))
            && out.stderr.lines().any(|l| l == warning),
        &format!("apply of size 4: created, {warning:?} on stderr"),
        &out,
    );
    steps.jsonpath(
        &["get", "memcached", &large, "-n", "default"],
        "{.spec.size}",
        "4",
    );

    // An update out of range is denied too (kubectl's patch goes through the webhooks).
    let out = steps.apply(&large, "{size: 6}")?;
    steps.expect(
        !out.success()
            && out
                .stderr
                .contains("admission webhook \"vmemcached-v1.kb.io\" denied the request: ")
            && out
                .stderr
                .contains("spec.size: Invalid value: 6: must be between 1 and 5"),
        "apply of size 6 over size 4 is denied",
        &out,
    );
    steps.jsonpath(
        &["get", "memcached", &large, "-n", "default"],
        "{.spec.size}",
        "4",
    );
    Ok(())
}

#[test]
fn kubectl_sees_the_memcached_webhooks_of_korral_up() -> anyhow::Result<()> {
    let kubectls = kubectl_binaries();
    if kubectls.is_empty() {
        eprintln!("skipping: no kubectl on PATH");
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    let mut up = Up::start(&kubeconfig)?;
    let line = up.wait_for_line(WEBHOOKS_LINE)?;
    let webhook_url = line
        .trim_start_matches(WEBHOOKS_LINE)
        .split(',')
        .next()
        .context("no webhook URL")?
        .to_owned();
    if !webhook_url.starts_with("https://localhost:") {
        bail!("webhooks served at {webhook_url:?}\n{}", up.describe());
    }
    // The sample went through the webhooks too (size 3: no warning, allowed).
    up.wait_for_line("applied memcached default/memcached-sample (size 3)")?;

    let mut failures = Failures::default();
    for (i, kubectl) in kubectls.iter().enumerate() {
        scenario(kubectl, &kubeconfig, &webhook_url, i, &mut failures)?;
    }
    if let Some(status) = up.child.try_wait()? {
        failures.add(format!("korral up exited ({status})\n{}", up.describe()));
    }
    failures.finish("kubectl on the webhooks of korral up");
    Ok(())
}
