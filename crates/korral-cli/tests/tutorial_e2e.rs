//! The tutorial as a test: `korral init`, `create api`, the Memcached logic written into the
//! generated project, `generate`, the embedded control plane, `install`, `run`, the sample
//! applied, the Deployment and `status.nodes` awaited, the size patched, `deploy`, `undeploy`.
//!
//! The generated projects depend on this checkout's crates by path (`--korral-path`) and build
//! offline with the workspace's `Cargo.lock` (copied by the test: `init` writes none) and build
//! directory, so no dependency is downloaded or compiled twice. Each project's own scaffolded
//! test (`cargo test`) runs too. The embedded server does not
//! run pods here (no simulation), so the test creates the pods a kubelet would.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use support::{KORRAL, Options, Server, Storage, client_from_kubeconfig, run_with_timeout};

/// How long a build (cargo) may take on a busy machine.
const BUILD_TIMEOUT: Duration = Duration::from_secs(1800);
/// How long the operator may take to converge.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(120);

/// The workspace's target directory (the test binary's `korral` lives in `<target>/debug`).
fn workspace_target_dir() -> anyhow::Result<PathBuf> {
    Path::new(KORRAL)
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .context("finding the target directory from the korral binary")
}

/// The cargo environment for building generated projects: intermediate artifacts (the
/// dependencies) are shared with the workspace's build directory so nothing is compiled twice,
/// while the final binaries go to a directory of their own, so a generated
/// `memcached-operator` never replaces the sample binary of the same name in `target/debug`.
fn build_env() -> anyhow::Result<Vec<(&'static str, String)>> {
    let target = workspace_target_dir()?;
    Ok(vec![
        ("CARGO_BUILD_BUILD_DIR", target.display().to_string()),
        (
            "CARGO_TARGET_DIR",
            target.join("tutorial").display().to_string(),
        ),
        ("CARGO_NET_OFFLINE", "true".to_owned()),
    ])
}

/// The root of this Korral checkout (what `--korral-path` names).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Gives the project at `project` the workspace's `Cargo.lock`, after checking that `init`
/// wrote none: the same versions as Korral's, so the shared build directory is reused and
/// nothing is fetched.
fn use_workspace_lock(project: &Path) -> anyhow::Result<()> {
    assert!(
        !project.join("Cargo.lock").exists(),
        "init no longer copies a Cargo.lock"
    );
    std::fs::copy(
        workspace_root().join("Cargo.lock"),
        project.join("Cargo.lock"),
    )?;
    Ok(())
}

/// Runs the project's own tests (`cargo test`, as `make test` does) with the build
/// environment; fails with their output unless they pass. Returns the output.
fn cargo_test(project: &Path) -> anyhow::Result<support::CmdOutput> {
    let env = build_env()?;
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let manifest = project.join("Cargo.toml").display().to_string();
    let args = ["test".to_owned(), "--manifest-path".to_owned(), manifest];
    let out = run_with_timeout(Path::new("cargo"), &args, &env, BUILD_TIMEOUT)?;
    if !out.success() {
        bail!(
            "cargo test of the scaffolded project failed: {}",
            out.describe()
        );
    }
    Ok(out)
}

/// Runs `korral args` to completion with the build environment; fails with its output unless
/// it succeeds. Returns its standard output.
fn korral(args: &[&str], timeout: Duration) -> anyhow::Result<String> {
    Ok(korral_output(args, timeout)?.stdout)
}

/// [`korral`], returning standard output and standard error.
fn korral_output(args: &[&str], timeout: Duration) -> anyhow::Result<support::CmdOutput> {
    let env = build_env()?;
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let out = run_with_timeout(Path::new(KORRAL), &args, &env, timeout)?;
    if !out.success() {
        bail!("{}", out.describe());
    }
    Ok(out)
}

/// The running `korral run` (the manager, after exec). Killed on drop.
struct Manager {
    child: Child,
    log: PathBuf,
}

impl Manager {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        support::send_signal("KILL", -i64::from(self.child.id()));
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_run(project: &Path) -> anyhow::Result<Manager> {
    use std::os::unix::process::CommandExt;
    let log = project.join("run.log");
    let file = std::fs::File::create(&log)?;
    let child = Command::new(KORRAL)
        .args([
            "run",
            "--dir",
            &project.display().to_string(),
            "--",
            "--metrics-bind-address=127.0.0.1:0",
            "--health-probe-bind-address=127.0.0.1:0",
        ])
        .envs(build_env()?)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .process_group(0)
        .spawn()
        .context("spawning korral run")?;
    Ok(Manager { child, log })
}

async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last_err = None;
    loop {
        match f().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(err) => last_err = Some(err),
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out waiting for {what} (last error: {last_err:?})");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates the pods a kubelet would run for the Deployment `name` (the embedded server does
/// not schedule pods), up to `replicas`.
async fn run_pods(pods: &Api<Pod>, name: &str, replicas: usize) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    for i in 0..replicas {
        let pod_name = format!("{name}-pod-{i}");
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {
                "name": pod_name,
                "labels": {"app": "memcached", "memcached_cr": name},
            },
            "spec": {"containers": [{"name": "memcached", "image": "memcached:1.4.36-alpine"}]},
        }))?;
        match pods.create(&PostParams::default(), &pod).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(err) => return Err(err.into()),
        }
        names.push(pod_name);
    }
    names.sort();
    Ok(names)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tutorial_from_init_to_a_running_operator() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let project = tmp.path().join("memcached-operator");
    let dir = project.display().to_string();

    // Scaffold.
    let out = korral(
        &[
            "init",
            "--domain",
            "example.com",
            "--name",
            "memcached-operator",
            "--dir",
            &dir,
            "--korral-path",
            &workspace_root().display().to_string(),
        ],
        Duration::from_secs(60),
    )?;
    assert!(
        out.contains("Scaffolded project memcached-operator"),
        "{out}"
    );
    let out = korral(
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--dir",
            &dir,
        ],
        Duration::from_secs(60),
    )?;
    assert!(
        out.contains("Created API cache.example.com/v1 Memcached"),
        "{out}"
    );

    // The tutorial's edits: the types, the reconcile logic, the sample's size.
    std::fs::write(
        project.join("src/api/v1/memcached.rs"),
        include_str!("tutorial/memcached_types.rs"),
    )?;
    std::fs::write(
        project.join("src/controllers/memcached.rs"),
        include_str!("tutorial/memcached_controller.rs"),
    )?;
    let sample_path = project.join("config/samples/cache_v1_memcached.yaml");
    let sample = std::fs::read_to_string(&sample_path)?;
    let sample = sample.replace(
        "  # TODO(user): set the fields of MemcachedSpec here\n  foo: bar\n",
        "  size: 3\n",
    );
    assert!(sample.contains("size: 3"), "{sample}");
    std::fs::write(&sample_path, &sample)?;
    use_workspace_lock(&project)?;

    // Manifests from the code.
    let out = korral(&["generate", "--dir", &dir], BUILD_TIMEOUT)?;
    assert!(
        out.contains("config/crd/bases/cache.example.com_memcacheds.yaml"),
        "{out}"
    );
    // Regression: the generated binary must not land in the workspace's `target/debug`,
    // where it would replace the Memcached sample's binary of the same name.
    let target = workspace_target_dir()?;
    assert!(
        target.join("tutorial/debug/memcached-operator").exists(),
        "the generated operator was not built into target/tutorial"
    );
    let crd_yaml = std::fs::read_to_string(
        project.join("config/crd/bases/cache.example.com_memcacheds.yaml"),
    )?;
    let crd: CustomResourceDefinition =
        serde_yaml_ng::from_str(crd_yaml.trim_start_matches(|c| c != '\n').trim_start())
            .or_else(|_| serde_yaml_ng::from_str(&crd_yaml))?;
    let schema = serde_json::to_value(&crd.spec.versions[0].schema)?;
    assert_eq!(
        schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["minimum"],
        json!(0.0),
        "{schema}"
    );
    let role = std::fs::read_to_string(project.join("config/rbac/role.yaml"))?;
    let role: serde_json::Value = serde_yaml_ng::from_str(&role)?;
    let rules = role["rules"].as_array().context("rules")?;
    let allows = |group: &str, resource: &str, verb: &str| {
        rules.iter().any(|r| {
            r["apiGroups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g == group))
                && r["resources"]
                    .as_array()
                    .is_some_and(|x| x.iter().any(|x| x == resource))
                && r["verbs"]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|v| v == verb))
        })
    };
    assert!(allows("apps", "deployments", "create"), "{role}");
    assert!(allows("", "pods", "list"), "{role}");
    assert!(
        allows("cache.example.com", "memcacheds/status", "patch"),
        "{role}"
    );
    assert!(!allows("", "pods", "delete"), "{role}");

    // The project's own test (scaffolded by `create api`) passes with the tutorial's types
    // and controller.
    let tests = cargo_test(&project)?;
    assert!(
        tests
            .stdout
            .contains("test the_controller_reconciles_the_sample ... ok"),
        "{}",
        tests.describe()
    );

    // The embedded control plane, with its kubeconfig where `korral up` writes it.
    let kubeconfig = project.join(".korral/kubeconfig");
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: kubeconfig.clone(),
    })?;
    let client = client_from_kubeconfig(&kubeconfig).await?;

    let out = korral(&["install", "--dir", &dir], Duration::from_secs(120))?;
    assert!(
        out.contains(&server.url),
        "install names the cluster: {out}"
    );
    assert!(out.contains(".korral/kubeconfig"), "{out}");
    assert!(
        out.contains("CustomResourceDefinition memcacheds.cache.example.com created"),
        "{out}"
    );

    let mut manager = start_run(&project)?;
    // `korral run` builds the manager first (a no-op after `generate`, but it may wait for the
    // shared target directory's lock), then becomes the manager.
    let started = eventually("korral run to start the manager", BUILD_TIMEOUT, || {
        let log = manager.log();
        let exited = manager.child.try_wait();
        async move {
            if log.contains("Running memcached-operator against") {
                return Ok(Some(log));
            }
            if let Ok(Some(status)) = exited {
                bail!("korral run exited with {status}:\n{log}");
            }
            Ok(None)
        }
    })
    .await?;
    assert!(
        started.contains(&server.url),
        "korral run names the cluster: {started}"
    );
    let gvk = GroupVersionKind::gvk("cache.example.com", "v1", "Memcached");
    let memcacheds: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk(&gvk));
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");

    // Validation from the types: a negative size is refused.
    let bad: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cache.example.com/v1", "kind": "Memcached",
        "metadata": {"name": "bad"}, "spec": {"size": -1},
    }))?;
    match memcacheds.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 422, "{s:?}"),
        other => bail!("a negative size was not refused: {other:?}"),
    }

    // Apply the sample.
    let sample: DynamicObject = serde_yaml_ng::from_str(&sample)?;
    memcacheds.create(&PostParams::default(), &sample).await?;

    let check = async {
        let replicas = eventually(
            "the Deployment with 3 replicas",
            CONVERGE_TIMEOUT,
            || async {
                Ok(deployments
                    .get_opt("memcached-sample")
                    .await?
                    .and_then(|d| d.spec.replicas)
                    .filter(|r| *r == 3))
            },
        )
        .await?;
        assert_eq!(replicas, 3);
        let deployment = deployments.get("memcached-sample").await?;
        let owner = &deployment
            .metadata
            .owner_references
            .as_ref()
            .context("owner")?[0];
        assert_eq!(owner.kind, "Memcached");
        assert_eq!(owner.controller, Some(true));
        let container = &deployment
            .spec
            .template
            .spec
            .as_ref()
            .context("pod")?
            .containers[0];
        assert_eq!(container.image.as_deref(), Some("memcached:1.4.36-alpine"));

        let expected = run_pods(&pods, "memcached-sample", 3).await?;
        eventually("status.nodes with 3 pods", CONVERGE_TIMEOUT, || async {
            let m = memcacheds.get("memcached-sample").await?;
            let nodes: Vec<String> =
                serde_json::from_value(m.data["status"]["nodes"].clone()).unwrap_or_default();
            Ok((nodes == expected).then_some(()))
        })
        .await?;

        // Scale up: patch the size.
        memcacheds
            .patch(
                "memcached-sample",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"size": 5}})),
            )
            .await?;
        eventually(
            "the Deployment with 5 replicas",
            CONVERGE_TIMEOUT,
            || async {
                Ok(deployments
                    .get_opt("memcached-sample")
                    .await?
                    .and_then(|d| d.spec.replicas)
                    .filter(|r| *r == 5))
            },
        )
        .await?;
        let expected = run_pods(&pods, "memcached-sample", 5).await?;
        eventually("status.nodes with 5 pods", CONVERGE_TIMEOUT, || async {
            let m = memcacheds.get("memcached-sample").await?;
            let nodes: Vec<String> =
                serde_json::from_value(m.data["status"]["nodes"].clone()).unwrap_or_default();
            Ok((nodes == expected).then_some(()))
        })
        .await?;

        // Drift: someone scales the Deployment by hand; the operator puts it back.
        deployments
            .patch(
                "memcached-sample",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 1}})),
            )
            .await?;
        eventually(
            "the replica count fixed back to 5",
            CONVERGE_TIMEOUT,
            || async {
                Ok(deployments
                    .get_opt("memcached-sample")
                    .await?
                    .and_then(|d| d.spec.replicas)
                    .filter(|r| *r == 5))
            },
        )
        .await?;
        anyhow::Ok(())
    };
    if let Err(err) = check.await {
        bail!("{err:#}\n--- korral run output ---\n{}", manager.log());
    }
    drop(manager);

    // Deploy the manager (its Deployment only; the embedded server runs no pods), then undeploy.
    let out = korral(
        &[
            "deploy",
            "--dir",
            &dir,
            "--image",
            "example.com/memcached-operator:v0.1.0",
        ],
        Duration::from_secs(120),
    )?;
    assert!(
        out.contains("Namespace memcached-operator-system created"),
        "{out}"
    );
    assert!(
        out.contains("ClusterRole memcached-operator-manager-role created"),
        "{out}"
    );
    let managers: Api<Deployment> = Api::namespaced(client.clone(), "memcached-operator-system");
    let deployed = managers
        .get("memcached-operator-controller-manager")
        .await?;
    let pod = deployed.spec.template.spec.context("pod spec")?;
    assert_eq!(
        pod.containers[0].image.as_deref(),
        Some("example.com/memcached-operator:v0.1.0")
    );
    assert_eq!(
        pod.security_context
            .context("security context")?
            .run_as_non_root,
        Some(true)
    );

    let out = korral(&["undeploy", "--dir", &dir], Duration::from_secs(120))?;
    assert!(
        out.contains("CustomResourceDefinition memcacheds.cache.example.com deleted"),
        "{out}"
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    eventually("the CRD gone", CONVERGE_TIMEOUT, || async {
        Ok(crds
            .get_opt("memcacheds.cache.example.com")
            .await?
            .is_none()
            .then_some(()))
    })
    .await?;
    drop(server);
    Ok(())
}

/// The scaffolded code itself (not the tutorial's) compiles without warnings in every layout:
/// multi-group, a cluster-scoped API with its controller, an API without a controller and a
/// controller added later; `generate` derives the CRD scope and the RBAC from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaffolded_projects_build_without_warnings() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let project = tmp.path().join("platform-operator");
    let dir = project.display().to_string();
    korral(
        &[
            "init",
            "--domain",
            "example.org",
            "--name",
            "platform-operator",
            "--multigroup",
            "--dir",
            &dir,
            "--korral-path",
            &workspace_root().display().to_string(),
        ],
        Duration::from_secs(60),
    )?;
    for args in [
        &[
            "--group",
            "storage",
            "--version",
            "v1alpha1",
            "--kind",
            "StorageBucket",
            "--namespaced=false",
        ][..],
        &[
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "AppService",
            "--controller=false",
        ][..],
        &[
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "AppService",
            "--resource=false",
        ][..],
        &[
            "--group",
            "apps",
            "--version",
            "v1beta1",
            "--kind",
            "Gateway",
        ][..],
    ] {
        let mut full = vec!["create", "api", "--dir", &dir];
        full.extend_from_slice(args);
        korral(&full, Duration::from_secs(60))?;
    }
    // Webhooks: a defaulter and a validator for Gateway v1beta1, then a second version (v1)
    // of Gateway, converted through v1beta1 (the hub: it has the controller).
    let out = korral(
        &[
            "create",
            "webhook",
            "--dir",
            &dir,
            "--group",
            "apps",
            "--version",
            "v1beta1",
            "--kind",
            "Gateway",
            "--defaulting",
            "--programmatic-validation",
        ],
        Duration::from_secs(60),
    )?;
    assert!(
        out.contains("wrote src/webhooks/apps_gateway_v1beta1.rs"),
        "{out}"
    );
    let out = korral(
        &[
            "create",
            "api",
            "--dir",
            &dir,
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "Gateway",
        ],
        Duration::from_secs(60),
    )?;
    assert!(
        out.contains("converted through the hub v1beta1")
            && out.contains("wrote src/webhooks/apps_gateway_conversion.rs"),
        "{out}"
    );
    use_workspace_lock(&project)?;
    let out = korral_output(&["generate", "--dir", &dir], BUILD_TIMEOUT)?;
    assert!(
        !out.stderr.contains("warning"),
        "the scaffolded code has warnings:\n{}",
        out.stderr
    );
    // The scaffolded tests (one per controller, cluster-scoped included) pass as written.
    let tests = cargo_test(&project)?;
    assert!(
        !tests.stderr.contains("warning"),
        "the scaffolded tests have warnings:\n{}",
        tests.stderr
    );
    for test in [
        "storage_bucket_controller",
        "app_service_controller",
        "gateway_controller",
    ] {
        assert!(
            tests.stderr.contains(&format!("tests/{test}.rs")),
            "{test} did not run:\n{}",
            tests.describe()
        );
    }
    assert_eq!(
        tests
            .stdout
            .matches("test the_controller_reconciles_the_sample ... ok")
            .count(),
        3,
        "{}",
        tests.describe()
    );
    let crd = std::fs::read_to_string(
        project.join("config/crd/bases/storage.example.org_storagebuckets.yaml"),
    )?;
    assert!(crd.contains("scope: Cluster"), "{crd}");
    for file in [
        "apps.example.org_appservices.yaml",
        "apps.example.org_gateways.yaml",
    ] {
        let crd = std::fs::read_to_string(project.join("config/crd/bases").join(file))?;
        assert!(crd.contains("scope: Namespaced"), "{crd}");
    }
    // The webhooks the code registers are in config/webhook, listed in config/default; the
    // two versions of Gateway are one CRD storing the hub and converting through /convert.
    let webhooks = std::fs::read_to_string(project.join("config/webhook/manifests.yaml"))?;
    for expected in [
        "kind: MutatingWebhookConfiguration",
        "name: mgateway-v1beta1.kb.io",
        "path: /mutate-apps-example-org-v1beta1-gateway",
        "kind: ValidatingWebhookConfiguration",
        "name: vgateway-v1beta1.kb.io",
        "name: platform-operator-webhook-service",
    ] {
        assert!(
            webhooks.contains(expected),
            "{expected} missing from\n{webhooks}"
        );
    }
    let default = std::fs::read_to_string(project.join("config/default/kustomization.yaml"))?;
    assert!(default.contains("- ../webhook\n"), "{default}");
    let gateways: serde_json::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(
        project.join("config/crd/bases/apps.example.org_gateways.yaml"),
    )?)?;
    let versions: Vec<(String, bool)> = gateways["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            (
                v["name"].as_str().unwrap_or_default().to_owned(),
                v["storage"] == true,
            )
        })
        .collect();
    assert_eq!(
        versions,
        [("v1".to_owned(), false), ("v1beta1".to_owned(), true)],
        "{gateways}"
    );
    assert_eq!(gateways["spec"]["conversion"]["strategy"], "Webhook");
    assert_eq!(
        gateways["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"],
        "/convert"
    );
    let role = std::fs::read_to_string(project.join("config/rbac/role.yaml"))?;
    for resource in [
        "storagebuckets",
        "storagebuckets/status",
        "appservices",
        "appservices/status",
        "gateways",
        "gateways/status",
    ] {
        assert!(
            role.contains(&format!("  - {resource}\n")),
            "{resource} missing from\n{role}"
        );
    }
    Ok(())
}
