//! End-to-end with the real `kubectl` (the default one and the old 1.27 one) on a HelloApp CRD
//! with two versions converted by the HelloApp conversion webhook: an in-process korral-testenv
//! installs the CRD the operator declares (v1 and v2 served, v2 the hub and storage version)
//! converting through a local port where the real `WebhookServer` serves the HelloApp
//! conversion, and kubectl uses testenv's kubeconfig. Shown: `kubectl apply` of a v1 object
//! read as v2 (`-o yaml`, `-o jsonpath`, the v2 printer columns) and as v1, `apply` of a v2
//! object read as v1, `apply`, `patch` and `edit` through either version, upstream's
//! `Warning:` line once v1 is deprecated, and upstream's `conversion webhook for ... failed`
//! error once the webhook server stops, while the storage version still reads.
//!
//! Every step runs for each kubectl found (each against a fresh control plane); all failing
//! steps are collected and reported together.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use korral_runtime::webhook::{CONVERT_PATH, RunningWebhookServer, WebhookServer};
use korral_testenv::{TestEnv, WebhookInstall};
use serde_json::Value;
use support::{CmdOutput, Failures, KUBECTL_TIMEOUT, kubectl_binaries, run_with_timeout};

/// The merged CRD.
const CRD: &str = "helloapps.apps.example.com";
/// The resource in v1 and v2, as kubectl names a version (`resource.version.group`).
const V1: &str = "helloapps.v1.apps.example.com";
const V2: &str = "helloapps.v2.apps.example.com";
/// upstream's default deprecation warning of v1, as kubectl prints it.
const DEPRECATED: &str =
    "Warning: apps.example.com/v1 HelloApp is deprecated; use apps.example.com/v2 HelloApp";
/// How long the webhook server may take to listen.
const SERVING_TIMEOUT: Duration = Duration::from_secs(10);

/// The HelloApp CRD the operator declares with its conversion webhook (what `korral generate`
/// writes to `config/crd/bases/`), written into `dir`; answers the file.
fn generated_crd(dir: &Path) -> Result<PathBuf> {
    let info = korral_runtime::manifests::OperatorInfo::new("helloapp-operator", "example.com");
    let set = korral_runtime::manifests::collect(|manager| {
        helloapp_operator::add_to_manager(manager, korral_runtime::cache::Scope::All);
        helloapp_operator::add_webhooks(manager, WebhookServer::new())?;
        Ok(())
    })?
    .render(&info)?;
    let crd = set
        .files
        .iter()
        .flat_map(|f| &f.objects)
        .find(|o| o["kind"] == "CustomResourceDefinition" && o["metadata"]["name"] == CRD)
        .context("the HelloApp CRD in the operator's manifests")?;
    let path = dir.join("apps.example.com_helloapps.yaml");
    std::fs::write(&path, serde_yaml_ng::to_string(crd)?)?;
    Ok(path)
}

/// testenv with the HelloApp CRD converting through its local port, and the HelloApp
/// conversion served there; answers them and the URL the CRD calls.
async fn start(dir: &Path) -> Result<(TestEnv, RunningWebhookServer, String)> {
    let env = TestEnv::builder()
        .crd_file(generated_crd(dir)?)
        .webhooks(WebhookInstall::new().conversion_crd(CRD))
        .start()
        .await?;
    let serving = env.webhook_serving().context("webhook serving")?;
    let mut server = WebhookServer::new()
        .host(serving.local_serving_host())
        .port(serving.local_serving_port())
        .cert_dir(serving.local_serving_cert_dir())
        .metrics_registry(korral_runtime::metrics::Registry::new());
    server.conversion(helloapp_operator::conversion::webhook()?)?;
    let running = server.serve().await?;
    serving.wait_serving(SERVING_TIMEOUT).await?;
    let url = serving.url(CONVERT_PATH);
    Ok((env, running, url))
}

/// One kubectl binary's steps: failing checks go to `failures`, tagged with the binary.
struct Steps<'a> {
    kubectl: &'a Path,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
    dir: &'a Path,
    tag: String,
    failures: &'a mut Failures,
}

impl Steps<'_> {
    /// Runs kubectl with `envs`; a failure to run it is recorded.
    fn k_env(&mut self, args: &[&str], envs: &[(&str, &str)]) -> CmdOutput {
        let mut all: Vec<String> = vec![
            "--kubeconfig".into(),
            self.kubeconfig.display().to_string(),
            "--cache-dir".into(),
            self.cache.path().display().to_string(),
        ];
        all.extend(args.iter().map(|a| a.to_string()));
        match run_with_timeout(self.kubectl, &all, envs, KUBECTL_TIMEOUT) {
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

    /// Runs kubectl.
    fn k(&mut self, args: &[&str]) -> CmdOutput {
        self.k_env(args, &[])
    }

    /// Records a failure unless `ok`.
    fn expect(&mut self, ok: bool, expected: &str, out: &CmdOutput) {
        let tag = &self.tag;
        self.failures.check(ok, || {
            format!("[{tag}] expected: {expected}\nactual: {}", out.describe())
        });
    }

    /// Writes `yaml` to `<file>.yaml` and applies it; expects exit 0 and `want` on stdout.
    fn apply(&mut self, file: &str, yaml: &str, want: &str) -> Result<CmdOutput> {
        let path = self.dir.join(format!("{file}.yaml"));
        std::fs::write(&path, yaml)?;
        let out = self.k(&["apply", "-f", &path.display().to_string()]);
        self.expect(
            out.success() && out.stdout.contains(want),
            &format!("`kubectl apply` of {file}.yaml prints {want:?}"),
            &out,
        );
        Ok(out)
    }

    /// `kubectl get <resource> <name> -n default -o jsonpath=...` equals `want`.
    fn jsonpath(&mut self, resource: &str, name: &str, path: &str, want: &str) {
        let jp = format!("jsonpath={path}");
        let args = ["get", resource, name, "-n", "default", "-o", jp.as_str()];
        let out = self.k(&args);
        self.expect(
            out.success() && out.stdout.trim() == want,
            &format!("`kubectl {}` prints {want:?}", args.join(" ")),
            &out,
        );
    }

    /// `kubectl get <resource> <name> -o yaml`, parsed; `None` (recorded) when it fails.
    fn yaml(&mut self, resource: &str, name: &str) -> Option<Value> {
        let args = ["get", resource, name, "-n", "default", "-o", "yaml"];
        let out = self.k(&args);
        let parsed = serde_yaml_ng::from_str::<Value>(&out.stdout).ok();
        let ok = out.success() && parsed.is_some();
        self.expect(
            ok,
            &format!("`kubectl {}` prints YAML", args.join(" ")),
            &out,
        );
        parsed.filter(|_| ok)
    }

    /// `kubectl get <resource> -n default` (a table): its rows split in columns.
    fn table(&mut self, resource: &str, header: &[&str], rows: &[&[&str]]) {
        let out = self.k(&["get", resource, "-n", "default"]);
        let lines: Vec<Vec<&str>> = out
            .stdout
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        // The last column is the age (`5s`): compared up to it.
        let got: Vec<Vec<&str>> = lines
            .iter()
            .map(|l| l[..l.len().saturating_sub(1)].to_vec())
            .collect();
        let mut want: Vec<Vec<&str>> = vec![header.to_vec()];
        want.extend(rows.iter().map(|r| r.to_vec()));
        let header_ok = lines.first().and_then(|h| h.last()) == Some(&"AGE");
        self.expect(
            out.success() && header_ok && got == want,
            &format!("`kubectl get {resource}`: columns {header:?} AGE, rows {rows:?}"),
            &out,
        );
    }
}

fn hello_v1(name: &str, image: &str, size: i32) -> String {
    format!(
        "apiVersion: apps.example.com/v1\nkind: HelloApp\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  image: {image}\n  size: {size}\n"
    )
}

fn hello_v2(name: &str, repository: &str, tag: &str, replicas: i32) -> String {
    format!(
        "apiVersion: apps.example.com/v2\nkind: HelloApp\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  replicas: {replicas}\n  repository: {repository}\n  tag: \"{tag}\"\n"
    )
}

/// An editor for `kubectl edit` (`KUBE_EDITOR`): a script changing `replicas: 3` to
/// `replicas: 5` in the file it is given.
fn editor(dir: &Path) -> Result<PathBuf> {
    let path = dir.join("edit-replicas.sh");
    std::fs::write(
        &path,
        "#!/bin/sh\nsed -i 's/^  replicas: 3$/  replicas: 5/' \"$1\"\n",
    )?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

fn scenario(
    runtime: &tokio::runtime::Runtime,
    kubectl: &Path,
    failures: &mut Failures,
) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (env, running, url) = runtime.block_on(start(dir.path()))?;
    let result = steps(runtime, kubectl, &env, running, &url, dir.path(), failures);
    runtime.block_on(env.shutdown());
    result
}

fn steps(
    runtime: &tokio::runtime::Runtime,
    kubectl: &Path,
    env: &TestEnv,
    running: RunningWebhookServer,
    url: &str,
    dir: &Path,
    failures: &mut Failures,
) -> Result<()> {
    let mut s = Steps {
        kubectl,
        kubeconfig: env.kubeconfig_path().to_owned(),
        cache: tempfile::tempdir()?,
        dir,
        tag: kubectl.display().to_string(),
        failures,
    };

    // The CRD converts through the local server.
    let out = s.k(&[
        "get",
        "crd",
        CRD,
        "-o",
        "jsonpath={.spec.conversion.strategy} {.spec.conversion.webhook.clientConfig.url} {.spec.versions[*].name} {.spec.versions[*].storage}",
    ]);
    let want = format!("Webhook {url} v1 v2 false true");
    s.expect(
        out.success() && out.stdout.trim() == want,
        &format!("the CRD: {want:?}"),
        &out,
    );

    // A v1 object applied, read as v2: size became replicas, the image split at its tag.
    s.apply(
        "hello-v1",
        &hello_v1("hello-v1", "nginxdemos/hello:plain-text", 2),
        "helloapp.apps.example.com/hello-v1 created",
    )?;
    if let Some(as_v2) = s.yaml(V2, "hello-v1") {
        let spec = &as_v2["spec"];
        let out = CmdOutput {
            command: format!("kubectl get {V2} hello-v1 -o yaml"),
            status: None,
            stdout: serde_yaml_ng::to_string(&as_v2).unwrap_or_default(),
            stderr: String::new(),
        };
        s.expect(
            as_v2["apiVersion"] == "apps.example.com/v2"
                && as_v2["kind"] == "HelloApp"
                && as_v2["metadata"]["name"] == "hello-v1"
                && spec
                    == &serde_json::json!({
                        "replicas": 2,
                        "repository": "nginxdemos/hello",
                        "tag": "plain-text",
                    }),
            "-o yaml of the v1 object as v2: apiVersion v2, spec {replicas: 2, repository: nginxdemos/hello, tag: plain-text}",
            &out,
        );
    }
    s.jsonpath(
        V2,
        "hello-v1",
        "{.apiVersion} {.spec.repository} {.spec.tag} {.spec.replicas}",
        "apps.example.com/v2 nginxdemos/hello plain-text 2",
    );
    s.jsonpath(
        V1,
        "hello-v1",
        "{.apiVersion} {.spec.image} {.spec.size}",
        "apps.example.com/v1 nginxdemos/hello:plain-text 2",
    );

    // A v2 object applied, read as v1.
    s.apply(
        "hello-v2",
        &hello_v2("hello-v2", "ghcr.io/acme/hello", "2.0", 3),
        "helloapp.apps.example.com/hello-v2 created",
    )?;
    s.jsonpath(
        V1,
        "hello-v2",
        "{.apiVersion} {.spec.image} {.spec.size}",
        "apps.example.com/v1 ghcr.io/acme/hello:2.0 3",
    );

    // Each version's table shows its own printer columns.
    s.table(
        V1,
        &["NAME", "IMAGE", "SIZE", "READY"],
        &[
            &["hello-v1", "nginxdemos/hello:plain-text", "2"],
            &["hello-v2", "ghcr.io/acme/hello:2.0", "3"],
        ],
    );
    s.table(
        V2,
        &["NAME", "REPOSITORY", "TAG", "REPLICAS"],
        &[
            &["hello-v1", "nginxdemos/hello", "plain-text", "2"],
            &["hello-v2", "ghcr.io/acme/hello", "2.0", "3"],
        ],
    );

    // apply again through v1: the change reaches v2.
    s.apply(
        "hello-v1",
        &hello_v1("hello-v1", "nginxdemos/hello:latest", 4),
        "helloapp.apps.example.com/hello-v1 configured",
    )?;
    s.jsonpath(
        V2,
        "hello-v1",
        "{.spec.repository} {.spec.tag} {.spec.replicas}",
        "nginxdemos/hello latest 4",
    );

    // patch and edit through v2: the changes reach v1.
    let out = s.k(&[
        "patch",
        V2,
        "hello-v2",
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"tag":"2.1"}}"#,
    ]);
    s.expect(
        out.success()
            && out
                .stdout
                .contains("helloapp.apps.example.com/hello-v2 patched"),
        "patch of the tag through v2: patched",
        &out,
    );
    s.jsonpath(
        V1,
        "hello-v2",
        "{.spec.image} {.spec.size}",
        "ghcr.io/acme/hello:2.1 3",
    );
    let editor = editor(dir)?;
    let editor = editor.display().to_string();
    let out = s.k_env(
        &["edit", V2, "hello-v2", "-n", "default"],
        &[
            ("KUBE_EDITOR", editor.as_str()),
            ("EDITOR", editor.as_str()),
        ],
    );
    s.expect(
        out.success()
            && out
                .stdout
                .contains("helloapp.apps.example.com/hello-v2 edited"),
        "edit of the replicas through v2: edited",
        &out,
    );
    s.jsonpath(
        V1,
        "hello-v2",
        "{.spec.image} {.spec.size}",
        "ghcr.io/acme/hello:2.1 5",
    );
    // Before v1 is deprecated, reading it warns about nothing.
    let out = s.k(&["get", V1, "hello-v1", "-n", "default"]);
    s.expect(
        out.success() && !out.stderr.contains("Warning:"),
        "get of v1 before the deprecation: no warning",
        &out,
    );

    // v1 deprecated (the CRD patched): reading v1 prints upstream's warning, v2 none.
    let out = s.k(&[
        "patch",
        "crd",
        CRD,
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/spec/versions/0/name","value":"v1"},{"op":"add","path":"/spec/versions/0/deprecated","value":true}]"#,
    ]);
    s.expect(
        out.success()
            && out.stdout.contains(
                "customresourcedefinition.apiextensions.k8s.io/helloapps.apps.example.com patched",
            ),
        "the CRD patched with v1 deprecated",
        &out,
    );
    let out = s.k(&["get", V1, "hello-v1", "-n", "default"]);
    s.expect(
        out.success()
            && out.stdout.contains("hello-v1")
            && out.stderr.lines().any(|l| l == DEPRECATED),
        &format!("get of the deprecated v1: a {DEPRECATED:?} line on stderr"),
        &out,
    );
    let out = s.k(&["get", V2, "hello-v1", "-n", "default"]);
    s.expect(
        out.success() && !out.stderr.contains("Warning:"),
        "get of v2: no warning",
        &out,
    );

    // The webhook server stops: v1 (converted) fails as upstream words it, v2 (stored) reads.
    runtime.block_on(running.shutdown());
    let failed = format!(
        "Error from server: conversion webhook for apps.example.com/v2, Kind=HelloApp failed: Post \"{url}?timeout=30s\": "
    );
    for args in [
        vec!["get", V1, "hello-v1", "-n", "default"],
        vec!["get", V1, "-n", "default"],
    ] {
        let out = s.k(&args);
        s.expect(
            !out.success()
                && out.status.is_some()
                && out.stderr.lines().any(|l| l.starts_with(&failed)),
            &format!(
                "`kubectl {}` fails with a line starting {failed:?}",
                args.join(" ")
            ),
            &out,
        );
    }
    s.jsonpath(
        V2,
        "hello-v1",
        "{.spec.repository} {.spec.tag} {.spec.replicas}",
        "nginxdemos/hello latest 4",
    );
    s.table(
        V2,
        &["NAME", "REPOSITORY", "TAG", "REPLICAS"],
        &[
            &["hello-v1", "nginxdemos/hello", "latest", "4"],
            &["hello-v2", "ghcr.io/acme/hello", "2.1", "5"],
        ],
    );
    Ok(())
}

#[test]
fn kubectl_reads_and_writes_helloapps_in_both_versions_through_the_conversion_webhook() -> Result<()>
{
    let kubectls = kubectl_binaries();
    if kubectls.is_empty() {
        eprintln!("skipping: no kubectl on PATH");
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut failures = Failures::default();
    for kubectl in &kubectls {
        if let Err(e) = scenario(&runtime, kubectl, &mut failures) {
            failures.add(format!("[{}] scenario aborted: {e:#}", kubectl.display()));
        }
    }
    failures.finish("kubectl on the HelloApp conversion webhook");
    Ok(())
}
