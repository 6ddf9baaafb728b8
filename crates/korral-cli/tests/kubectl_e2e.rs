//! End-to-end: the real `kubectl` against `korral apiserver` run as a process.
//!
//! The scenario runs once per kubectl client found (the default `kubectl` on `PATH` against a
//! durable server, and the old `kubectl.1.27` against an in-memory one). Every step asserts what
//! a real Kubernetes API server answers and what kubectl prints for it; all failing steps of a
//! run are collected and reported together.

mod support;

use std::path::Path;
use std::time::Duration;

use support::{CmdOutput, Failures, Options, Server, Storage, kubectl_binaries, poll};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.ref.example.org
spec:
  group: ref.example.org
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
    shortNames: [wdg]
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [replicas]
              properties:
                replicas:
                  type: integer
                  minimum: 1
                color:
                  type: string
                  enum: [red, blue]
                  default: red
            status:
              type: object
              properties:
                ready:
                  type: integer
      subresources:
        status: {}
      additionalPrinterColumns:
        - name: Replicas
          type: integer
          jsonPath: .spec.replicas
"#;

const CR: &str = r#"apiVersion: ref.example.org/v1
kind: Widget
metadata:
  name: w1
  namespace: e2e
spec:
  replicas: 2
"#;

const INVALID_CR: &str = r#"apiVersion: ref.example.org/v1
kind: Widget
metadata:
  name: w2
  namespace: e2e
spec:
  replicas: 0
  color: green
"#;

fn deployment(replicas: u32, extra_label: bool) -> String {
    let extra = if extra_label {
        "\n    tier: frontend"
    } else {
        ""
    };
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web{extra}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: nginx
          image: nginx:1.27
          ports:
            - containerPort: 80
"#
    )
}

/// Whitespace-separated columns of a table line.
fn columns(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Whether some line of `text` starts with the columns `prefix`.
fn has_row(text: &str, prefix: &[&str]) -> bool {
    text.lines().any(|line| columns(line).starts_with(prefix))
}

struct Run<'a> {
    kubectl: &'a Path,
    server: &'a Server,
    tag: String,
    failures: &'a mut Failures,
    server_died: bool,
}

impl Run<'_> {
    fn k(&mut self, args: &[&str]) -> CmdOutput {
        match self.server.kubectl(self.kubectl, args) {
            Ok(out) => {
                if !out.success()
                    && !self.server_died
                    && let Some(status) = self.server.exited()
                {
                    self.server_died = true;
                    self.failures.add(format!(
                            "[{}] the korral apiserver process died ({status}) during `{}`\n--- server stderr (tail) ---\n{}",
                            self.tag,
                            out.command,
                            self.server.stderr_tail(40)
                        ));
                }
                out
            }
            Err(e) => {
                self.failures.add(format!(
                    "[{}] could not run kubectl {args:?}: {e:#}",
                    self.tag
                ));
                CmdOutput {
                    command: format!("kubectl {}", args.join(" ")),
                    status: None,
                    stdout: String::new(),
                    stderr: format!("{e:#}"),
                }
            }
        }
    }

    /// Records a failure unless `ok`; `expected` says what real Kubernetes does.
    fn expect(&mut self, ok: bool, expected: &str, out: &CmdOutput) -> bool {
        let tag = &self.tag;
        self.failures.check(ok, || {
            format!("[{tag}] expected: {expected}\nactual: {}", out.describe())
        })
    }

    /// Runs kubectl and expects exit 0 with `stdout` containing every one of `needles`.
    fn ok_contains(&mut self, args: &[&str], needles: &[&str]) -> bool {
        let out = self.k(args);
        let ok = out.success() && needles.iter().all(|n| out.stdout.contains(n));
        self.expect(
            ok,
            &format!("exit 0 and stdout containing {needles:?}"),
            &out,
        )
    }

    /// Runs kubectl and expects exit 0 with exactly `value` on stdout (jsonpath queries).
    fn ok_equals(&mut self, args: &[&str], value: &str) -> bool {
        let out = self.k(args);
        let ok = out.success() && out.stdout.trim() == value;
        self.expect(ok, &format!("exit 0 and stdout `{value}`"), &out)
    }

    /// Runs the step under test; when it fails (recorded), tries `fallback` so that the later
    /// steps still run. Returns whether either made the object exist.
    fn with_fallback(
        &mut self,
        args: &[&str],
        needles: &[&str],
        fallback: &[&str],
        fallback_needles: &[&str],
    ) -> bool {
        if self.ok_contains(args, needles) {
            return true;
        }
        let out = self.k(fallback);
        let ok = out.success() && fallback_needles.iter().all(|n| out.stdout.contains(n));
        if !ok {
            self.failures.add(format!(
                "[{}] the fallback for the failed step did not work either: {}",
                self.tag,
                out.describe()
            ));
        }
        ok
    }

    /// Records that later steps were skipped because `prerequisite` failed.
    fn skipped(&mut self, what: &str, prerequisite: &str) {
        self.failures.add(format!(
            "[{}] skipped {what}: {prerequisite} failed (see above)",
            self.tag
        ));
    }
}

fn workflow(kubectl: &Path, storage_label: &str, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let storage = if storage_label == "durable" {
        Storage::Durable(dir.path().join("data"))
    } else {
        Storage::InMemory
    };
    let server = Server::start(Options {
        storage,
        port: 0,
        kubeconfig: dir.path().join("kubeconfig"),
    })?;
    let manifests = dir.path().join("manifests");
    std::fs::create_dir_all(&manifests)?;
    let write = |name: &str, text: &str| -> anyhow::Result<String> {
        let path = manifests.join(name);
        std::fs::write(&path, text)?;
        Ok(path.display().to_string())
    };
    let crd = write("crd.yaml", CRD)?;
    let cr = write("cr.yaml", CR)?;
    let invalid_cr = write("invalid-cr.yaml", INVALID_CR)?;
    let deploy = write("deployment.yaml", &deployment(2, false))?;
    let ns = write(
        "namespace.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: e2e\n",
    )?;

    let tag = format!("{} / {storage_label} server", kubectl.display());
    eprintln!("=== kubectl workflow: {tag} at {}", server.url);
    let mut run = Run {
        kubectl,
        server: &server,
        tag,
        failures,
        server_died: false,
    };

    version_and_discovery(&mut run);

    // Everything below lives in this namespace.
    if !run.with_fallback(
        &["create", "namespace", "e2e"],
        &["namespace/e2e created"],
        &["create", "--validate=false", "-f", &ns],
        &["namespace/e2e created"],
    ) {
        run.skipped("the rest of the scenario", "`kubectl create namespace e2e`");
        return Ok(());
    }
    custom_resources(&mut run, &crd, &cr, &invalid_cr);
    if run.server_died {
        return Ok(());
    }
    deployments(&mut run, &deploy)?;
    if run.server_died {
        return Ok(());
    }
    configmaps(&mut run);
    if run.server_died {
        return Ok(());
    }
    delete_namespace(&mut run);

    drop(server);
    Ok(())
}

fn version_and_discovery(run: &mut Run<'_>) {
    run.ok_contains(&["version"], &["Client Version", "Server Version"]);
    let out = run.k(&["version", "-o", "json"]);
    let server_version = serde_json::from_str::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| {
            v["serverVersion"]["gitVersion"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_default();
    run.expect(
        out.success() && server_version.starts_with("v1."),
        "exit 0 and serverVersion.gitVersion `v1.<minor>...` in `kubectl version -o json`",
        &out,
    );

    let out = run.k(&["api-resources"]);
    let lists = |name: &str, api_version: &str, kind: &str| {
        out.stdout.lines().any(|line| {
            let cols = columns(line);
            cols.first() == Some(&name) && cols.contains(&api_version) && cols.contains(&kind)
        })
    };
    let ok = out.success()
        && lists("configmaps", "v1", "ConfigMap")
        && lists("deployments", "apps/v1", "Deployment")
        && lists(
            "customresourcedefinitions",
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
        )
        && lists("namespaces", "v1", "Namespace");
    run.expect(
        ok,
        "exit 0 and rows for configmaps (v1 ConfigMap), deployments (apps/v1 Deployment), \
         customresourcedefinitions (apiextensions.k8s.io/v1), namespaces",
        &out,
    );
}

fn custom_resources(run: &mut Run<'_>, crd: &str, cr: &str, invalid_cr: &str) {
    let crd_created =
        ["customresourcedefinition.apiextensions.k8s.io/widgets.ref.example.org created"];
    let created = run.with_fallback(
        &["apply", "-f", crd],
        &crd_created,
        &["create", "--validate=false", "-f", crd],
        &crd_created,
    );
    if !created {
        run.skipped("the custom resource steps", "applying the CRD");
        return;
    }
    let established = run.ok_contains(
        &[
            "wait",
            "--for=condition=established",
            "crd/widgets.ref.example.org",
            "--timeout=10s",
        ],
        &["customresourcedefinition.apiextensions.k8s.io/widgets.ref.example.org condition met"],
    );
    if !established {
        run.skipped(
            "the custom resource steps",
            "waiting for the CRD to be established",
        );
        return;
    }
    let out = run.k(&["api-resources", "--api-group=ref.example.org"]);
    let ok = out.success()
        && out.stdout.lines().any(|line| {
            let cols = columns(line);
            cols.first() == Some(&"widgets")
                && cols.contains(&"ref.example.org/v1")
                && cols.contains(&"Widget")
        });
    run.expect(
        ok,
        "exit 0 and a row `widgets wdg ref.example.org/v1 true Widget`",
        &out,
    );

    // Schema validation errors name both fields.
    let out = run.k(&["apply", "-f", invalid_cr]);
    run.expect(
        !out.success()
            && !out.timed_out()
            && out.stderr.contains("is invalid")
            && out.stderr.contains("spec.replicas")
            && out.stderr.contains("spec.color")
            && out.stderr.contains("green"),
        "non-zero exit and stderr like `The Widget \"w2\" is invalid: * spec.color: Unsupported value: \"green\": \
         supported values: \"red\", \"blue\" * spec.replicas: Invalid value: 0: spec.replicas in body should be \
         greater than or equal to 1`",
        &out,
    );
    let out = run.k(&["create", "-f", invalid_cr]);
    run.expect(
        !out.success()
            && !out.timed_out()
            && out.stderr.contains("is invalid")
            && out.stderr.contains("spec.replicas")
            && out.stderr.contains("spec.color")
            && out.stderr.contains("green"),
        "non-zero exit and stderr like `The Widget \"w2\" is invalid: * spec.color: Unsupported value: \"green\": \
         supported values: \"red\", \"blue\" * spec.replicas: Invalid value: 0: spec.replicas in body should be \
         greater than or equal to 1`",
        &out,
    );
    let out = run.k(&["get", "widget", "w2", "-n", "e2e"]);
    run.expect(
        !out.success() && out.stderr.contains("(NotFound)"),
        "the invalid widget w2 was not created: non-zero exit, `Error from server (NotFound): widgets.ref.example.org \"w2\" not found`",
        &out,
    );

    let cr_created = ["widget.ref.example.org/w1 created"];
    if !run.with_fallback(
        &["apply", "-f", cr],
        &cr_created,
        &["create", "--validate=false", "-f", cr],
        &cr_created,
    ) {
        run.skipped("get/watch/patch/delete of widget w1", "creating it");
        return;
    }
    let out = run.k(&["get", "widgets", "-n", "e2e"]);
    let header_ok = out
        .stdout
        .lines()
        .next()
        .is_some_and(|h| columns(h) == ["NAME", "REPLICAS"]);
    run.expect(
        out.success() && header_ok && has_row(&out.stdout, &["w1", "2"]),
        "exit 0, header `NAME REPLICAS` (the CRD declares only that printer column, so upstream shows no AGE) and a row `w1 2`",
        &out,
    );
    let out = run.k(&["get", "widget", "w1", "-n", "e2e", "-o", "yaml"]);
    run.expect(
        out.success()
            && out.stdout.contains("color: red")
            && out.stdout.contains("replicas: 2")
            && out.stdout.contains("kind: Widget")
            && out.stdout.contains("namespace: e2e"),
        "exit 0 and YAML with the defaulted `color: red`, `replicas: 2`, `kind: Widget`, `namespace: e2e`",
        &out,
    );
    run.ok_equals(
        &[
            "get",
            "wdg",
            "w1",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.spec.color}",
        ],
        "red",
    );

    // Watch, then a merge patch shows up as a MODIFIED row.
    let merge_patch = [
        "patch",
        "widget",
        "w1",
        "-n",
        "e2e",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ];
    match run.server.kubectl_background(
        run.kubectl,
        &["get", "widgets", "-n", "e2e", "-w", "--output-watch-events"],
    ) {
        Ok(mut watch) => {
            // Rows are `EVENT NAME REPLICAS` (the CRD's printer column).
            let added = watch.wait_line(Duration::from_secs(10), |l| {
                columns(l).starts_with(&["ADDED", "w1"])
            });
            match &added {
                Ok(line) => {
                    if !columns(line).starts_with(&["ADDED", "w1", "2"]) {
                        run.failures.add(format!(
                            "[{}] expected the watch's first row to be `ADDED w1 2 <age>` (REPLICAS column)\nactual: {}",
                            run.tag,
                            watch.transcript("row without the REPLICAS value")
                        ));
                    }
                }
                Err(t) => run.failures.add(format!(
                    "[{}] expected the watch to print `ADDED w1 2 <age>` first\nactual: {t}",
                    run.tag
                )),
            }
            let patched = run.ok_contains(&merge_patch, &["widget.ref.example.org/w1 patched"]);
            if added.is_ok() && patched {
                let modified = watch.wait_line(Duration::from_secs(10), |l| {
                    columns(l).starts_with(&["MODIFIED", "w1"])
                });
                match modified {
                    Ok(line) => {
                        if !columns(&line).starts_with(&["MODIFIED", "w1", "3"]) {
                            run.failures.add(format!(
                                "[{}] expected the watch to print `MODIFIED w1 3 <age>` after the merge patch (REPLICAS column)\nactual: {}",
                                run.tag,
                                watch.transcript("row without the REPLICAS value")
                            ));
                        }
                    }
                    Err(t) => run.failures.add(format!(
                        "[{}] expected the watch to print `MODIFIED w1 3 <age>` after the merge patch\nactual: {t}",
                        run.tag
                    )),
                }
            }
        }
        Err(e) => {
            run.failures
                .add(format!("[{}] could not start the watch: {e:#}", run.tag));
            run.ok_contains(&merge_patch, &["widget.ref.example.org/w1 patched"]);
        }
    }
    run.ok_equals(
        &[
            "get",
            "widget",
            "w1",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        "3",
    );

    // JSON patch.
    run.ok_contains(
        &[
            "patch",
            "widget",
            "w1",
            "-n",
            "e2e",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/spec/replicas","value":4}]"#,
        ],
        &["widget.ref.example.org/w1 patched"],
    );
    run.ok_equals(
        &[
            "get",
            "widget",
            "w1",
            "-n",
            "e2e",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        "4",
    );

    // Delete.
    run.ok_contains(
        &["delete", "widget", "w1", "-n", "e2e"],
        &[r#"widget.ref.example.org "w1" deleted"#],
    );
    let out = run.k(&["get", "widget", "w1", "-n", "e2e"]);
    run.expect(
        !out.success()
            && out.stderr.contains("(NotFound)")
            && out.stderr.contains(r#"widgets.ref.example.org "w1" not found"#),
        "non-zero exit and `Error from server (NotFound): widgets.ref.example.org \"w1\" not found`",
        &out,
    );
}

fn deployments(run: &mut Run<'_>, deploy: &str) -> anyhow::Result<()> {
    // Create, re-apply unchanged, then change the manifest and apply again.
    let deploy_created = ["deployment.apps/web created"];
    if !run.with_fallback(
        &["apply", "-n", "e2e", "-f", deploy],
        &deploy_created,
        &["create", "--validate=false", "-n", "e2e", "-f", deploy],
        &deploy_created,
    ) {
        run.skipped(
            "the Deployment steps",
            "`kubectl apply` creating deployment web",
        );
        return Ok(());
    }
    run.ok_equals(
        &[
            "get",
            "deployment",
            "-n",
            "e2e",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        "2",
    );
    run.ok_contains(
        &["apply", "-n", "e2e", "-f", deploy],
        &["deployment.apps/web unchanged"],
    );
    std::fs::write(deploy, deployment(3, true))?;
    let configured = run.ok_contains(
        &["apply", "-n", "e2e", "-f", deploy],
        &["deployment.apps/web configured"],
    );
    if configured {
        run.ok_equals(
            &[
                "get",
                "deployment",
                "-n",
                "e2e",
                "web",
                "-o",
                "jsonpath={.spec.replicas}",
            ],
            "3",
        );
        run.ok_equals(
            &[
                "get",
                "deployment",
                "-n",
                "e2e",
                "web",
                "-o",
                "jsonpath={.metadata.labels.tier} {.metadata.labels.app}",
            ],
            "frontend web",
        );
    } else {
        run.skipped(
            "checking the re-applied Deployment",
            "the second `kubectl apply`",
        );
    }
    let out = run.k(&["get", "deployments", "-n", "e2e"]);
    let header_ok = out
        .stdout
        .lines()
        .next()
        .is_some_and(|h| columns(h).starts_with(&["NAME", "READY", "UP-TO-DATE", "AVAILABLE"]));
    run.expect(
        out.success() && header_ok && has_row(&out.stdout, &["web"]),
        "exit 0, header `NAME READY UP-TO-DATE AVAILABLE AGE` and a row for web",
        &out,
    );
    Ok(())
}

fn configmaps(run: &mut Run<'_>) {
    if run.ok_contains(
        &[
            "create",
            "configmap",
            "c1",
            "--from-literal=a=b",
            "-n",
            "e2e",
        ],
        &["configmap/c1 created"],
    ) {
        run.ok_equals(
            &["get", "cm", "c1", "-n", "e2e", "-o", "jsonpath={.data.a}"],
            "b",
        );
    }
}

fn delete_namespace(run: &mut Run<'_>) {
    // Deleting the namespace removes it (after its contents) for good.
    run.ok_contains(
        &["delete", "namespace", "e2e"],
        &[r#"namespace "e2e" deleted"#],
    );
    let mut last = None;
    let gone = poll(Duration::from_secs(20), || {
        let out = run
            .server
            .kubectl(run.kubectl, &["get", "namespace", "e2e"])
            .ok()?;
        let gone = !out.success() && out.stderr.contains("(NotFound)");
        last = Some(out);
        gone.then_some(())
    });
    if gone.is_none() {
        let actual = last.map(|o| o.describe()).unwrap_or_default();
        run.failures.add(format!(
            "[{}] expected `kubectl get namespace e2e` to fail with `Error from server (NotFound): namespaces \"e2e\" not found` within 20 s\nactual (last try): {actual}",
            run.tag
        ));
        return;
    }
    let out = run.k(&["get", "configmaps,deployments", "-n", "e2e", "-o", "name"]);
    run.expect(
        out.success() && out.stdout.trim().is_empty(),
        "the namespace's ConfigMaps and Deployments are gone with it: exit 0 and empty output",
        &out,
    );
}

#[test]
fn kubectl_workflow() {
    let kubectls = kubectl_binaries();
    if kubectls.is_empty() {
        eprintln!(
            "skipped: kubectl not found (neither `kubectl` on PATH nor {})",
            support::OLD_KUBECTL
        );
        return;
    }
    let mut failures = Failures::default();
    for (i, kubectl) in kubectls.iter().enumerate() {
        let storage = if i == 0 { "durable" } else { "in-memory" };
        if let Err(e) = workflow(kubectl, storage, &mut failures) {
            failures.add(format!(
                "[{} / {storage} server] scenario aborted: {e:#}",
                kubectl.display()
            ));
        }
    }
    failures.finish("kubectl_workflow");
}
