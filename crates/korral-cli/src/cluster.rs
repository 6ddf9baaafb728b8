//! `korral install|uninstall|run|deploy|undeploy`: act on a cluster through the Kubernetes API
//! (no kubectl needed).
//!
//! The cluster is the one of `--kubeconfig` when given, else of `.korral/kubeconfig` in the
//! project when it exists (written by `korral up`), else of `KUBECONFIG` or `~/.kube/config`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PropagationPolicy};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use kube::{Client, Config};
use serde_json::Value;

pub use crate::kustomize::{read_kustomization, read_objects};
use crate::project::{Project, find_root};

/// The kubeconfig `korral up` writes, relative to the project.
pub const LOCAL_KUBECONFIG: &str = ".korral/kubeconfig";

/// How long to wait for a CRD to be established.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(30);

/// Options shared by the cluster commands.
#[derive(clap::Args, Debug, Clone)]
pub struct Target {
    /// The kubeconfig to use (default: `.korral/kubeconfig` of the project when it exists,
    /// else `KUBECONFIG` or `~/.kube/config`).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The project directory (default: the current one or a parent holding `PROJECT`).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

/// Options of `korral deploy`.
#[derive(clap::Args, Debug)]
pub struct DeployArgs {
    /// The manager image (replaces the image of the `manager` container).
    #[arg(long, env = "IMG")]
    pub image: Option<String>,
    #[command(flatten)]
    pub target: Target,
}

/// Options of `korral run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub target: Target,
    /// Arguments for the manager (after `--`), e.g. `-- --metrics-bind-address=0`.
    #[arg(last = true)]
    pub manager_args: Vec<String>,
}

/// Where the chosen kubeconfig comes from.
#[derive(Debug, Clone)]
pub enum KubeconfigSource {
    /// A file (from `--kubeconfig` or `.korral/kubeconfig`).
    File(PathBuf),
    /// The environment (`KUBECONFIG`, `~/.kube/config` or in-cluster).
    Environment,
}

/// A connected cluster.
pub struct Cluster {
    /// The client.
    pub client: Client,
    /// The API server URL.
    pub url: String,
    /// Where the kubeconfig came from.
    pub source: KubeconfigSource,
}

impl Cluster {
    /// A description for messages: `https://127.0.0.1:1234 (kubeconfig .korral/kubeconfig)`.
    pub fn describe(&self) -> String {
        match &self.source {
            KubeconfigSource::File(path) => format!("{} (kubeconfig {})", self.url, path.display()),
            KubeconfigSource::Environment => match std::env::var_os("KUBECONFIG") {
                Some(env) => format!(
                    "{} (kubeconfig from KUBECONFIG={})",
                    self.url,
                    env.to_string_lossy()
                ),
                None => format!("{} (kubeconfig ~/.kube/config)", self.url),
            },
        }
    }
}

/// Chooses the kubeconfig for a project at `root`.
pub fn kubeconfig_source(root: &Path, flag: Option<&Path>) -> KubeconfigSource {
    if let Some(path) = flag {
        return KubeconfigSource::File(path.to_path_buf());
    }
    let local = root.join(LOCAL_KUBECONFIG);
    if local.is_file() {
        return KubeconfigSource::File(local);
    }
    KubeconfigSource::Environment
}

/// Connects to the cluster chosen for the project at `root`.
pub async fn connect(root: &Path, flag: Option<&Path>) -> anyhow::Result<Cluster> {
    let source = kubeconfig_source(root, flag);
    let config = match &source {
        KubeconfigSource::File(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .with_context(|| format!("reading the kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("loading the kubeconfig {}", path.display()))?
        }
        KubeconfigSource::Environment => Config::infer().await.context(
            "finding a cluster: no .korral/kubeconfig in the project (start one with `korral up`), and KUBECONFIG / ~/.kube/config did not load",
        )?,
    };
    let url = config.cluster_url.to_string();
    let client = Client::try_from(config).context("creating a Kubernetes client")?;
    Ok(Cluster {
        client,
        url,
        source,
    })
}

fn gvk_of(object: &Value) -> anyhow::Result<GroupVersionKind> {
    let api_version = object["apiVersion"]
        .as_str()
        .context("an object has no apiVersion")?;
    let kind = object["kind"].as_str().context("an object has no kind")?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    Ok(GroupVersionKind::gvk(group, version, kind))
}

fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or("object");
    let name = object["metadata"]["name"].as_str().unwrap_or("?");
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Orders objects for creation: namespaces, then CRDs, then the rest (stable otherwise).
pub fn creation_order(objects: &mut [Value]) {
    objects.sort_by_key(|o| match o["kind"].as_str() {
        Some("Namespace") => 0,
        Some("CustomResourceDefinition") => 1,
        _ => 2,
    });
}

async fn api_for(
    client: &Client,
    object: &Value,
) -> anyhow::Result<(Api<DynamicObject>, ApiResource)> {
    let gvk = gvk_of(object)?;
    let (resource, caps): (ApiResource, ApiCapabilities) =
        kube::discovery::pinned_kind(client, &gvk)
            .await
            .with_context(|| {
                format!(
                    "finding the API of {}/{} {}",
                    gvk.group, gvk.version, gvk.kind
                )
            })?;
    let api = match (caps.scope, object["metadata"]["namespace"].as_str()) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        (Scope::Namespaced, None) => Api::default_namespaced_with(client.clone(), &resource),
        (Scope::Cluster, _) => Api::all_with(client.clone(), &resource),
    };
    Ok((api, resource))
}

/// The field manager of `install` and `deploy` (server-side apply).
pub const FIELD_MANAGER: &str = "korral";

/// What [`apply_one`] did to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// It did not exist.
    Created,
    /// It existed and changed.
    Configured,
    /// It existed and the apply changed nothing.
    Unchanged,
}

impl Applied {
    /// The word `kubectl apply` prints for it.
    pub fn word(self) -> &'static str {
        match self {
            Applied::Created => "created",
            Applied::Configured => "configured",
            Applied::Unchanged => "unchanged",
        }
    }
}

/// Server-side applies one object with field manager [`FIELD_MANAGER`], taking over fields
/// another manager set (as `kubectl apply --server-side --force-conflicts`). Prints nothing.
pub async fn apply_one(client: &Client, object: &Value) -> anyhow::Result<Applied> {
    let name = object["metadata"]["name"]
        .as_str()
        .with_context(|| format!("an object of kind {} has no name", object["kind"]))?;
    let (api, _) = api_for(client, object).await?;
    let before = api
        .get_opt(name)
        .await
        .with_context(|| format!("reading {}", describe(object)))?
        .and_then(|o| o.metadata.resource_version);
    let applied = api
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(object),
        )
        .await
        .with_context(|| format!("applying {}", describe(object)))?;
    Ok(match before {
        None => Applied::Created,
        Some(rv) if Some(&rv) == applied.metadata.resource_version.as_ref() => Applied::Unchanged,
        Some(_) => Applied::Configured,
    })
}

/// Server-side applies each object ([`apply_one`]), in creation order, printing whether it was
/// created, configured or unchanged, and waits for each CRD to be established.
pub async fn apply(client: &Client, mut objects: Vec<Value>) -> anyhow::Result<()> {
    creation_order(&mut objects);
    for object in objects {
        let outcome = apply_one(client, &object).await?;
        println!("{} {}", describe(&object), outcome.word());
        if object["kind"] == "CustomResourceDefinition"
            && let Some(name) = object["metadata"]["name"].as_str()
        {
            wait_established(client, name, ESTABLISH_TIMEOUT).await?;
        }
    }
    Ok(())
}

/// Waits (at most `timeout`) until the CRD `name` is established.
pub async fn wait_established(
    client: &Client,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    loop {
        let crd = api
            .get(name)
            .await
            .with_context(|| format!("reading CRD {name}"))?;
        let established = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("CRD {name} was not established within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Deletes each object (in reverse creation order); missing ones are reported, not errors.
pub async fn delete(client: &Client, mut objects: Vec<Value>) -> anyhow::Result<()> {
    creation_order(&mut objects);
    objects.reverse();
    for object in objects {
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let (api, _) = match api_for(client, &object).await {
            Ok(found) => found,
            Err(err) => {
                // A custom resource whose CRD is gone: nothing to delete.
                println!("{} not found ({err:#})", describe(&object));
                continue;
            }
        };
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => println!("{} deleted", describe(&object)),
            Err(kube::Error::Api(status)) if status.code == 404 => {
                println!("{} not found", describe(&object))
            }
            Err(err) => {
                return Err(err).with_context(|| format!("deleting {}", describe(&object)));
            }
        }
    }
    Ok(())
}

/// The project of `target.dir` (its root and `PROJECT` file).
pub fn project_root(target: &Target) -> anyhow::Result<(PathBuf, Project)> {
    let root = find_root(&target.dir)?;
    let project = Project::load(&root)?;
    Ok((root, project))
}

fn crd_objects(root: &Path) -> anyhow::Result<Vec<Value>> {
    let objects = read_kustomization(&root.join("config/crd"))?;
    if objects.is_empty() {
        bail!(
            "no CRDs in config/crd: create an API (`korral create api`) and run `korral generate`"
        );
    }
    Ok(objects)
}

/// `korral install`: applies the CRDs of `config/crd`.
pub async fn install(target: Target) -> anyhow::Result<()> {
    let (root, _) = project_root(&target)?;
    let objects = crd_objects(&root)?;
    let cluster = connect(&root, target.kubeconfig.as_deref()).await?;
    println!("Installing CRDs into {}", cluster.describe());
    apply(&cluster.client, objects).await
}

/// `korral uninstall`: deletes the CRDs of `config/crd` (and so every custom resource).
pub async fn uninstall(target: Target) -> anyhow::Result<()> {
    let (root, _) = project_root(&target)?;
    let objects = crd_objects(&root)?;
    let cluster = connect(&root, target.kubeconfig.as_deref()).await?;
    println!("Uninstalling CRDs from {}", cluster.describe());
    delete(&cluster.client, objects).await
}

/// The objects `korral deploy` applies: `config/default`, with `image` as the manager's image.
pub fn deploy_objects(root: &Path, image: Option<&str>) -> anyhow::Result<Vec<Value>> {
    let mut objects = read_kustomization(&root.join("config/default"))?;
    if let Some(image) = image {
        for object in &mut objects {
            if object["kind"] != "Deployment" {
                continue;
            }
            if let Some(containers) =
                object["spec"]["template"]["spec"]["containers"].as_array_mut()
            {
                for container in containers {
                    if container["name"] == "manager" {
                        container["image"] = Value::String(image.to_owned());
                    }
                }
            }
        }
    }
    Ok(objects)
}

/// `korral deploy`: applies `config/default` (CRDs, RBAC, namespace and manager Deployment).
pub async fn deploy(args: DeployArgs) -> anyhow::Result<()> {
    let (root, _) = project_root(&args.target)?;
    let objects = deploy_objects(&root, args.image.as_deref())?;
    let cluster = connect(&root, args.target.kubeconfig.as_deref()).await?;
    println!("Deploying into {}", cluster.describe());
    apply(&cluster.client, objects).await
}

/// `korral undeploy`: deletes what `korral deploy` applies.
pub async fn undeploy(target: Target) -> anyhow::Result<()> {
    let (root, _) = project_root(&target)?;
    let objects = deploy_objects(&root, None)?;
    let cluster = connect(&root, target.kubeconfig.as_deref()).await?;
    println!("Undeploying from {}", cluster.describe());
    delete(&cluster.client, objects).await
}

/// `korral run`: builds the manager and runs it here against the chosen cluster (this process
/// becomes the manager, so signals reach it directly).
pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let (root, project) = project_root(&args.target)?;
    let source = kubeconfig_source(&root, args.target.kubeconfig.as_deref());
    let cluster = connect(&root, args.target.kubeconfig.as_deref()).await?;
    let binary = crate::build::build_operator(&root, &project.project_name)?;
    println!(
        "Running {} against {}",
        project.project_name,
        cluster.describe()
    );
    let mut command = std::process::Command::new(&binary);
    command.args(&args.manager_args).current_dir(&root);
    if let KubeconfigSource::File(path) = &source {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        command.env("KUBECONFIG", path);
    }
    exec(command, &binary)
}

#[cfg(unix)]
fn exec(mut command: std::process::Command, binary: &Path) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    let _ = std::io::stdout().flush();
    let err = command.exec();
    Err(err).with_context(|| format!("running {}", binary.display()))
}

#[cfg(not(unix))]
fn exec(mut command: std::process::Command, binary: &Path) -> anyhow::Result<()> {
    let status = command
        .status()
        .with_context(|| format!("running {}", binary.display()))?;
    if !status.success() {
        bail!("{} exited with {status}", binary.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, path: &str, text: &str) -> anyhow::Result<()> {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().context("parent")?)?;
        std::fs::write(path, text)?;
        Ok(())
    }

    #[test]
    fn the_project_kubeconfig_wins_over_the_environment() -> anyhow::Result<()> {
        let tmp = std::env::temp_dir().join(format!("korral-kubeconfig-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp)?;
        assert!(matches!(
            kubeconfig_source(&tmp, None),
            KubeconfigSource::Environment
        ));
        write(&tmp, LOCAL_KUBECONFIG, "apiVersion: v1\n")?;
        match kubeconfig_source(&tmp, None) {
            KubeconfigSource::File(path) => assert_eq!(path, tmp.join(LOCAL_KUBECONFIG)),
            other => panic!("{other:?}"),
        }
        let flag = Path::new("/some/kubeconfig");
        match kubeconfig_source(&tmp, Some(flag)) {
            KubeconfigSource::File(path) => assert_eq!(path, flag),
            other => panic!("{other:?}"),
        }
        std::fs::remove_dir_all(&tmp)?;
        Ok(())
    }
}
