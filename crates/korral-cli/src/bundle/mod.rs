//! `korral bundle`: write an OLM bundle (ClusterServiceVersion, CRDs, annotations,
//! `bundle.Dockerfile`) from the generated manifests, and `korral bundle validate`.
//!
//! The CSV starts from a base, `config/manifests/bases/<name>.clusterserviceversion.yaml`
//! (written on the first run, then yours to edit: display name, description, icon,
//! maintainers, install modes...). Each run fills in what comes from the code: the version and
//! name, the owned CRDs, the install strategy (the manager Deployment), `permissions` (the
//! leader-election Role) and `clusterPermissions` (the manager ClusterRole), and `alm-examples`
//! from `config/samples`.

mod validate;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::cluster::{read_kustomization, read_objects};
use crate::project::{Project, find_root};
use crate::scaffold::write_file;

pub(crate) use validate::manifest_files;
pub use validate::validate_dir;

/// The bundle's media type annotation value.
pub const MEDIATYPE: &str = "registry+v1";

/// Options of `korral bundle`.
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Validate a bundle instead of writing one.
    #[command(subcommand)]
    pub command: Option<BundleCommand>,
    /// The operator version (semantic version, e.g. 0.1.0).
    #[arg(long)]
    pub version: Option<String>,
    /// The channels of the bundle, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "alpha")]
    pub channels: Vec<String>,
    /// The default channel (default: the first channel).
    #[arg(long)]
    pub default_channel: Option<String>,
    /// The package name (default: the project name).
    #[arg(long)]
    pub package: Option<String>,
    /// The project directory (default: the current one or a parent holding `PROJECT`).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

/// `korral bundle` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum BundleCommand {
    /// Check a bundle against OLM's rules, naming every problem.
    Validate(ValidateArgs),
}

/// Options of `korral bundle validate`.
#[derive(clap::Args, Debug)]
pub struct ValidateArgs {
    /// The bundle directory (default: `bundle` in the project, or the current directory).
    pub bundle_dir: Option<PathBuf>,
}

/// Runs `korral bundle` or `korral bundle validate`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(BundleCommand::Validate(validate)) = args.command {
        let dir = match validate.bundle_dir {
            Some(dir) => dir,
            None => match find_root(Path::new(".")) {
                Ok(root) => root.join("bundle"),
                Err(_) => PathBuf::from("."),
            },
        };
        let problems = validate_dir(&dir)?;
        if problems.is_empty() {
            println!("Bundle {} is valid", dir.display());
            return Ok(());
        }
        for problem in &problems {
            println!("{problem}");
        }
        bail!("bundle {} has {} problem(s)", dir.display(), problems.len());
    }
    let Some(version) = args.version else {
        bail!("--version is required to write a bundle (e.g. --version 0.1.0)");
    };
    let root = find_root(&args.dir)?;
    let project = Project::load(&root)?;
    let default_channel = args
        .default_channel
        .or_else(|| args.channels.first().cloned())
        .unwrap_or_default();
    let package = args.package.unwrap_or_else(|| project.project_name.clone());
    let written = write_bundle(
        &root,
        &project,
        &version,
        &args.channels,
        &default_channel,
        &package,
    )?;
    println!("Wrote the OLM bundle of {package} {version}:");
    for path in written {
        println!("  wrote {path}");
    }
    println!("Check it with `korral bundle validate`.");
    Ok(())
}

fn title_case(name: &str) -> String {
    name.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut chars = w.chars();
            match chars.next() {
                Some(c) => c.to_uppercase().collect::<String>() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The base CSV written on the first run.
fn base_csv(project: &Project) -> Value {
    let name = &project.project_name;
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": format!("{name}.v0.0.0"),
            "namespace": "placeholder",
            "annotations": {
                "alm-examples": "[]",
                "capabilities": "Basic Install",
            },
        },
        "spec": {
            "displayName": title_case(name),
            "description": format!("{} manages its custom resources on Kubernetes. Describe what it does here.", title_case(name)),
            "version": "0.0.0",
            "maturity": "alpha",
            "minKubeVersion": "1.27.0",
            "provider": {"name": project.domain},
            "keywords": [name],
            "links": [{"name": title_case(name), "url": format!("https://{}", project.domain)}],
            "maintainers": [{"name": "maintainer", "email": format!("maintainer@{}", project.domain)}],
            "icon": [],
            "installModes": [
                {"type": "OwnNamespace", "supported": true},
                {"type": "SingleNamespace", "supported": true},
                {"type": "MultiNamespace", "supported": false},
                {"type": "AllNamespaces", "supported": true},
            ],
            "install": {"strategy": "deployment", "spec": {}},
            "customresourcedefinitions": {"owned": []},
        },
    })
}

fn yaml(value: &Value) -> anyhow::Result<String> {
    serde_yaml_ng::to_string(value).context("writing YAML")
}

fn rules_of(object: &Value) -> Value {
    object.get("rules").cloned().unwrap_or_else(|| json!([]))
}

/// Writes `bundle/` and `bundle.Dockerfile` under `root`; returns the written paths.
pub fn write_bundle(
    root: &Path,
    project: &Project,
    version: &str,
    channels: &[String],
    default_channel: &str,
    package: &str,
) -> anyhow::Result<Vec<String>> {
    let name = &project.project_name;
    let crds = read_kustomization(&root.join("config/crd"))
        .context("reading the CRDs (run `korral generate` first)")?;
    let rbac = read_kustomization(&root.join("config/rbac"))
        .context("reading the RBAC manifests (run `korral generate` first)")?;
    let manager = read_kustomization(&root.join("config/manager"))
        .context("reading the manager manifests (run `korral generate` first)")?;
    let deployment = manager
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .context("config/manager has no Deployment (run `korral generate`)")?;
    let service_account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .unwrap_or("default")
        .to_owned();
    let cluster_rules: Vec<Value> = rbac
        .iter()
        .filter(|o| o["kind"] == "ClusterRole")
        .map(rules_of)
        .flat_map(|r| r.as_array().cloned().unwrap_or_default())
        .collect();
    let namespaced_rules: Vec<Value> = rbac
        .iter()
        .filter(|o| o["kind"] == "Role")
        .map(rules_of)
        .flat_map(|r| r.as_array().cloned().unwrap_or_default())
        .collect();

    let base_path = root.join(format!(
        "config/manifests/bases/{name}.clusterserviceversion.yaml"
    ));
    let mut written = Vec::new();
    let mut csv = if base_path.is_file() {
        read_objects(&base_path)?
            .into_iter()
            .next()
            .with_context(|| format!("{} is empty", base_path.display()))?
    } else {
        let base = base_csv(project);
        write_file(&base_path, &yaml(&base)?)?;
        written.push(format!(
            "config/manifests/bases/{name}.clusterserviceversion.yaml (the base: edit it)"
        ));
        base
    };

    // What the user wrote in the base CSV's owned entries (resources, descriptors, display
    // names) is kept; name, version and kind come from the CRDs.
    let base_owned = csv["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut owned = Vec::new();
    for crd in &crds {
        let crd_name = crd["metadata"]["name"].as_str().unwrap_or_default();
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let versions = crd["spec"]["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for v in versions {
            let description = v["schema"]["openAPIV3Schema"]["description"]
                .as_str()
                .map_or_else(
                    || format!("{kind} is the Schema for the {crd_name} API."),
                    str::to_owned,
                );
            let mut entry = base_owned
                .iter()
                .find(|e| e["name"] == crd_name && e["version"] == v["name"])
                .cloned()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}));
            entry["name"] = json!(crd_name);
            entry["version"] = v["name"].clone();
            entry["kind"] = json!(kind);
            if entry["displayName"].is_null() {
                entry["displayName"] = json!(title_case(&crate::project::snake_case(kind)));
            }
            if entry["description"].is_null() {
                entry["description"] = json!(description);
            }
            owned.push(entry);
        }
    }
    let mut examples = Vec::new();
    if let Ok(samples) = read_kustomization(&root.join("config/samples")) {
        examples = samples;
    }
    let deployment_spec = deployment["spec"].clone();
    csv["metadata"]["name"] = json!(format!("{name}.v{version}"));
    csv["metadata"]["annotations"]["alm-examples"] =
        json!(serde_json::to_string_pretty(&examples).context("writing alm-examples")?);
    csv["metadata"]["annotations"]["operators.operatorframework.io/builder"] = json!("korral");
    if let Some(meta) = csv["metadata"].as_object_mut() {
        meta.remove("namespace");
    }
    csv["spec"]["version"] = json!(version);
    csv["spec"]["customresourcedefinitions"]["owned"] = json!(owned);
    csv["spec"]["install"] = json!({
        "strategy": "deployment",
        "spec": {
            "deployments": [{
                "name": deployment["metadata"]["name"],
                "label": deployment["metadata"]["labels"],
                "spec": deployment_spec,
            }],
            "permissions": [{"serviceAccountName": service_account, "rules": namespaced_rules}],
            "clusterPermissions": [{"serviceAccountName": service_account, "rules": cluster_rules}],
        },
    });

    let bundle = root.join("bundle");
    let manifests = bundle.join("manifests");
    if manifests.is_dir() {
        std::fs::remove_dir_all(&manifests)
            .with_context(|| format!("clearing {}", manifests.display()))?;
    }
    let csv_file = format!("bundle/manifests/{name}.clusterserviceversion.yaml");
    write_file(&root.join(&csv_file), &yaml(&csv)?)?;
    written.push(csv_file);
    for crd in &crds {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        let file = format!("bundle/manifests/{group}_{plural}.yaml");
        write_file(&root.join(&file), &yaml(crd)?)?;
        written.push(file);
    }
    let annotations = annotations(package, channels, default_channel);
    write_file(
        &root.join("bundle/metadata/annotations.yaml"),
        &yaml(&json!({"annotations": annotations}))?,
    )?;
    written.push("bundle/metadata/annotations.yaml".to_owned());
    write_file(&root.join("bundle.Dockerfile"), &dockerfile(&annotations))?;
    written.push("bundle.Dockerfile".to_owned());
    Ok(written)
}

fn annotations(package: &str, channels: &[String], default_channel: &str) -> Value {
    json!({
        "operators.operatorframework.io.bundle.mediatype.v1": MEDIATYPE,
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": package,
        "operators.operatorframework.io.bundle.channels.v1": channels.join(","),
        "operators.operatorframework.io.bundle.channel.default.v1": default_channel,
        "operators.operatorframework.io.metrics.builder": "korral",
        "operators.operatorframework.io.metrics.project_layout": crate::project::LAYOUT,
    })
}

fn dockerfile(annotations: &Value) -> String {
    let mut out = String::from("FROM scratch\n\n# Core bundle labels.\n");
    if let Some(map) = annotations.as_object() {
        for (key, value) in map {
            out.push_str(&format!(
                "LABEL {key}={}\n",
                value.as_str().unwrap_or_default()
            ));
        }
    }
    out.push_str("\n# Copy files to locations specified by labels.\nCOPY bundle/manifests /manifests/\nCOPY bundle/metadata /metadata/\n");
    out
}
