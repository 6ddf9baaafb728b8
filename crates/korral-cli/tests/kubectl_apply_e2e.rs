//! End-to-end: `kubectl apply` (server-side and client-side) against `korral apiserver` run as
//! a process, with every kubectl client found (the default one and the old `kubectl.1.27`).
//!
//! Server-side: apply twice, a conflicting `kubectl scale` then `--force-conflicts`, a
//! conflicting `kubectl edit`. Client-side: a second `kubectl apply` of an edited Deployment
//! drops the removed container and env var and changes the port, as on a cluster; and it
//! merges with what other writers added, switches the rollout strategy and a volume's source
//! (`retainKeys`) and changes a field kubectl 1.27's compiled-in types do not know (pod-level
//! `resources`), which works only because the server publishes its patch strategies and
//! merge keys in its OpenAPI, as upstream does.

mod support;

use std::path::Path;
use std::time::Duration;

use support::{CmdOutput, Failures, Options, Server, Storage, for_each_kubectl, run_with_timeout};

fn deployment(name: &str, replicas: u32, containers: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels:
    app: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
{containers}"#
    )
}

const TWO_CONTAINERS: &str = r#"        - name: app
          image: nginx:1.25
          ports:
            - containerPort: 80
          env:
            - name: A
              value: "1"
            - name: B
              value: "2"
        - name: sidecar
          image: busybox:1.36
          command: ["sleep", "3600"]
"#;

const ONE_CONTAINER: &str = r#"        - name: app
          image: nginx:1.25
          ports:
            - containerPort: 8080
          env:
            - name: A
              value: "1"
"#;

struct Run<'a> {
    kubectl: &'a Path,
    server: &'a Server,
    tag: String,
    failures: &'a mut Failures,
}

impl Run<'_> {
    fn k(&mut self, args: &[&str]) -> CmdOutput {
        match self.server.kubectl(self.kubectl, args) {
            Ok(out) => out,
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

    fn expect(&mut self, ok: bool, expected: &str, out: &CmdOutput) -> bool {
        let tag = &self.tag;
        self.failures.check(ok, || {
            format!("[{tag}] expected: {expected}\nactual: {}", out.describe())
        })
    }

    fn ok_contains(&mut self, args: &[&str], needles: &[&str]) -> bool {
        let out = self.k(args);
        let ok = out.success() && needles.iter().all(|n| out.stdout.contains(n));
        self.expect(
            ok,
            &format!("exit 0 and stdout containing {needles:?}"),
            &out,
        )
    }

    fn ok_equals(&mut self, args: &[&str], value: &str) -> bool {
        let out = self.k(args);
        let ok = out.success() && out.stdout.trim() == value;
        self.expect(ok, &format!("exit 0 and stdout `{value}`"), &out)
    }

    fn fails_with(&mut self, args: &[&str], needles: &[&str]) -> bool {
        let out = self.k(args);
        let ok = !out.success()
            && out.status.is_some()
            && needles.iter().all(|n| out.stderr.contains(n));
        self.expect(
            ok,
            &format!("a failure with stderr containing {needles:?}"),
            &out,
        )
    }
}

fn scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: dir.path().join("kubeconfig"),
    })?;
    let write = |name: &str, text: &str| -> anyhow::Result<String> {
        let path = dir.path().join(name);
        std::fs::write(&path, text)?;
        Ok(path.display().to_string())
    };
    let ssa = write("ssa.yaml", &deployment("ssa", 2, TWO_CONTAINERS))?;
    let csa1 = write("csa1.yaml", &deployment("csa", 2, TWO_CONTAINERS))?;
    let csa2 = write("csa2.yaml", &deployment("csa", 2, ONE_CONTAINER))?;
    let tag = kubectl.display().to_string();
    eprintln!("=== kubectl apply scenario: {tag} at {}", server.url);
    let mut run = Run {
        kubectl,
        server: &server,
        tag,
        failures,
    };

    // --- server-side apply ---
    run.ok_contains(
        &["apply", "--server-side", "-f", &ssa],
        &["deployment.apps/ssa serverside-applied"],
    );
    run.ok_contains(
        &["apply", "--server-side", "-f", &ssa],
        &["deployment.apps/ssa serverside-applied"],
    );
    run.ok_equals(
        &[
            "get",
            "deployment",
            "ssa",
            "-o",
            "jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation};{end}",
        ],
        "kubectl/Apply;",
    );
    run.ok_equals(
        &[
            "get",
            "deployment",
            "ssa",
            "-o",
            "jsonpath={.metadata.managedFields[0].fieldsV1.f:spec.f:template.f:spec.f:containers.k:\\{\"name\":\"sidecar\"\\}.f:image}",
        ],
        "{}",
    );
    // A conflicting scale, then the conflict, then --force-conflicts.
    run.ok_contains(
        &["scale", "deployment", "ssa", "--replicas=5"],
        &["deployment.apps/ssa scaled"],
    );
    run.fails_with(
        &["apply", "--server-side", "-f", &ssa],
        &["Apply failed with 1 conflict", ".spec.replicas"],
    );
    run.ok_equals(
        &[
            "get",
            "deployment",
            "ssa",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        "5",
    );
    run.ok_contains(
        &["apply", "--server-side", "--force-conflicts", "-f", &ssa],
        &["deployment.apps/ssa serverside-applied"],
    );
    run.ok_equals(
        &[
            "get",
            "deployment",
            "ssa",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        "2",
    );
    // kubectl edit of an applied field: recorded as kubectl-edit, then conflicts.
    let editor = dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/image: busybox:1.36/image: busybox:1.37/' \"$1\"\n",
    )?;
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let args: Vec<String> = vec![
        "--kubeconfig".into(),
        server.kubeconfig.display().to_string(),
        "edit".into(),
        "deployment".into(),
        "ssa".into(),
    ];
    let editor_s = editor.display().to_string();
    let out = run_with_timeout(
        kubectl,
        &args,
        &[("EDITOR", &editor_s), ("KUBE_EDITOR", &editor_s)],
        Duration::from_secs(60),
    )?;
    run.expect(
        out.success() && out.stdout.contains("edited"),
        "kubectl edit succeeds",
        &out,
    );
    run.ok_contains(
        &[
            "get",
            "deployment",
            "ssa",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ],
        &["kubectl-edit"],
    );
    run.fails_with(
        &["apply", "--server-side", "-f", &ssa],
        &[
            "conflict with \"kubectl-edit\" using apps/v1",
            "[name=\"sidecar\"].image",
        ],
    );

    // --- client-side apply of an edited Deployment ---
    run.ok_contains(&["apply", "-f", &csa1], &["deployment.apps/csa created"]);
    run.ok_contains(&["apply", "-f", &csa2], &["deployment.apps/csa configured"]);
    run.ok_equals(
        &[
            "get",
            "deployment",
            "csa",
            "-o",
            "jsonpath={.spec.template.spec.containers[*].name}",
        ],
        "app",
    );
    run.ok_equals(
        &[
            "get",
            "deployment",
            "csa",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].env[*].name}",
        ],
        "A",
    );
    run.ok_equals(
        &[
            "get",
            "deployment",
            "csa",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].ports[*].containerPort}",
        ],
        "8080",
    );
    run.ok_contains(
        &[
            "get",
            "deployment",
            "csa",
            "-o",
            "jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation};{end}",
        ],
        &["kubectl-client-side-apply/Update;"],
    );
    // Applying the first manifest again brings the container back.
    run.ok_contains(&["apply", "-f", &csa1], &["deployment.apps/csa configured"]);
    run.ok_equals(
        &[
            "get",
            "deployment",
            "csa",
            "-o",
            "jsonpath={.spec.template.spec.containers[*].name}",
        ],
        "app sidecar",
    );
    // Moving the client-side applied object to server-side apply: no conflicts, and the
    // edited manifest then drops the sidecar again.
    run.ok_contains(
        &["apply", "--server-side", "-f", &csa1],
        &["deployment.apps/csa serverside-applied"],
    );
    run.ok_contains(
        &["apply", "--server-side", "-f", &csa2],
        &["deployment.apps/csa serverside-applied"],
    );
    run.ok_equals(
        &[
            "get",
            "deployment",
            "csa",
            "-o",
            "jsonpath={.spec.template.spec.containers[*].name}",
        ],
        "app",
    );
    Ok(())
}

#[test]
fn kubectl_apply_server_side_and_client_side() {
    for_each_kubectl("kubectl_apply_server_side_and_client_side", scenario);
}

/// A Deployment with a pod-level `resources` field (newer than kubectl 1.27's types), a
/// rolling update strategy and an `emptyDir` volume; `edited` changes the image, the CPU
/// limit, the strategy to `Recreate` and the volume's source to a ConfigMap.
fn merge_manifest(edited: bool) -> String {
    let (image, cpu, strategy, source) = if edited {
        (
            "nginx:1.26",
            "2",
            "type: Recreate",
            "configMap: {name: cfg}",
        )
    } else {
        (
            "nginx:1.25",
            "1",
            "type: RollingUpdate\n    rollingUpdate: {maxSurge: 2}",
            "emptyDir: {}",
        )
    };
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: merge
spec:
  replicas: 1
  selector:
    matchLabels: {{app: merge}}
  strategy:
    {strategy}
  template:
    metadata:
      labels: {{app: merge}}
    spec:
      resources:
        limits: {{cpu: "{cpu}"}}
      containers:
      - name: app
        image: {image}
        env:
        - {{name: A, value: "1"}}
        volumeMounts:
        - {{name: data, mountPath: /data}}
      volumes:
      - name: data
        {source}
"#
    )
}

fn merge_scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: dir.path().join("kubeconfig"),
    })?;
    let first = dir.path().join("first.yaml");
    let edited = dir.path().join("edited.yaml");
    std::fs::write(&first, merge_manifest(false))?;
    std::fs::write(&edited, merge_manifest(true))?;
    let (first, edited) = (first.display().to_string(), edited.display().to_string());
    let tag = kubectl.display().to_string();
    eprintln!(
        "=== kubectl client-side merge scenario: {tag} at {}",
        server.url
    );
    let mut run = Run {
        kubectl,
        server: &server,
        tag,
        failures,
    };
    run.ok_contains(&["apply", "-f", &first], &["deployment.apps/merge created"]);
    // Other writers add an env var and a container.
    run.ok_contains(
        &["set", "env", "deployment/merge", "B=2"],
        &["deployment.apps/merge env updated"],
    );
    run.ok_contains(
        &[
            "patch",
            "deployment",
            "merge",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"injected","image":"busybox:1.36"}}]"#,
        ],
        &["deployment.apps/merge patched"],
    );
    run.ok_contains(
        &["apply", "-f", &edited],
        &["deployment.apps/merge configured"],
    );
    let get = |field: &str| {
        [
            "get".to_string(),
            "deployment".into(),
            "merge".into(),
            "-o".into(),
            format!("jsonpath={field}"),
        ]
    };
    for (field, want) in [
        // Merged by name: the other writers' container and env var stay.
        ("{.spec.template.spec.containers[*].name}", "app injected"),
        ("{.spec.template.spec.containers[0].env[*].name}", "A B"),
        ("{.spec.template.spec.containers[0].image}", "nginx:1.26"),
        // retainKeys: the old strategy's and source's members are cleared.
        ("{.spec.strategy}", r#"{"type":"Recreate"}"#),
        (
            "{.spec.template.spec.volumes[0]}",
            r#"{"configMap":{"defaultMode":420,"name":"cfg"},"name":"data"}"#,
        ),
        ("{.spec.template.spec.resources.limits.cpu}", "2"),
    ] {
        let args = get(field);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run.ok_equals(&args, want);
    }
    Ok(())
}

#[test]
fn kubectl_apply_client_side_merges_with_the_servers_schemas() {
    for_each_kubectl(
        "kubectl_apply_client_side_merges_with_the_servers_schemas",
        merge_scenario,
    );
}
