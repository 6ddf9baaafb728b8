//! `korral create api`: add an API (types, sample) and its controller to a project.

use std::path::PathBuf;

use anyhow::bail;

use crate::project::{
    self, Project, ProjectResource, find_root, full_group, validate_group, validate_kind,
    validate_version,
};
use crate::scaffold::{self, webhooks};

/// Words Rust reserves: a kind whose module name is one of them cannot be scaffolded.
const RUST_KEYWORDS: [&str; 51] = [
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "gen", "macro", "override",
    "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// Options of `korral create api`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The API group, without the domain (`cache` for `cache.example.com`).
    #[arg(long)]
    pub group: String,
    /// The API version (`v1`, `v1alpha1`, ...).
    #[arg(long)]
    pub version: String,
    /// The kind (UpperCamelCase, e.g. `Memcached`).
    #[arg(long)]
    pub kind: String,
    /// Whether objects live in namespaces (`--namespaced=false` for a cluster-scoped kind).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub namespaced: bool,
    /// Write the types (`src/api/...`) and a sample.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub resource: bool,
    /// Write a controller (`src/controllers/...`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub controller: bool,
    /// The project directory (default: the current one or a parent holding `PROJECT`).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

/// Runs `korral create api`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let root = find_root(&args.dir)?;
    let mut project = Project::load(&root)?;
    validate_group(&args.group)?;
    validate_version(&args.version)?;
    validate_kind(&args.kind)?;
    let snake = project::snake_case(&args.kind);
    if RUST_KEYWORDS.contains(&snake.as_str()) {
        bail!(
            "invalid kind {:?}: its module name {snake:?} is a Rust keyword; choose another kind",
            args.kind
        );
    }
    if !args.resource && !args.controller {
        bail!("nothing to do: --resource=false and --controller=false");
    }
    let group = full_group(&args.group, &project.domain);
    let existing = project
        .resource(&args.group, &args.version, &args.kind)
        .cloned();
    let resource = match &existing {
        Some(existing) => {
            if args.resource && existing.api {
                bail!(
                    "API {group}/{} {} already exists in this project (src/{}/{snake}.rs); use --resource=false to add only a controller",
                    args.version,
                    args.kind,
                    existing
                        .type_path
                        .rsplit_once("::")
                        .map_or("api", |(modules, _)| modules)
                        .replace("::", "/")
                );
            }
            if args.controller && existing.controller {
                bail!(
                    "the controller of {group}/{} {} already exists in this project (src/{}.rs)",
                    args.version,
                    args.kind,
                    existing
                        .controller_path
                        .as_deref()
                        .unwrap_or_default()
                        .replace("::", "/")
                );
            }
            let mut updated = scaffold::new_resource(
                &project,
                &args.group,
                &args.version,
                &args.kind,
                existing.namespaced,
                true,
                args.controller,
            );
            updated.type_path = existing.type_path.clone();
            updated.controller = existing.controller || args.controller;
            if existing.controller {
                updated.controller_path = existing.controller_path.clone();
            }
            updated
        }
        None => {
            if !args.resource {
                bail!(
                    "API {group}/{} {} does not exist in this project: create it with --resource (the default)",
                    args.version,
                    args.kind
                );
            }
            if let Some(hub) = conversion_hub(&project, &args.group, &args.kind) {
                // A new version of an existing kind: its types and sample, converted through
                // the hub (the kind's controller stays on its version).
                let mut spoke = scaffold::new_resource(
                    &project,
                    &args.group,
                    &args.version,
                    &args.kind,
                    hub.namespaced,
                    true,
                    false,
                );
                spoke.namespaced = hub.namespaced;
                return create_version(&root, project, hub, spoke);
            }
            scaffold::new_resource(
                &project,
                &args.group,
                &args.version,
                &args.kind,
                args.namespaced,
                true,
                args.controller,
            )
        }
    };
    let (files, edits) = scaffold::api_files(&project, &resource, args.resource, args.controller)?;
    for file in &files {
        if root.join(&file.path).exists() {
            bail!(
                "{} already exists: remove it or choose another kind",
                file.path.display()
            );
        }
    }
    for file in &files {
        scaffold::write_file(&root.join(&file.path), &file.contents)?;
    }
    for edit in &edits {
        scaffold::apply_edit(&root, edit)?;
    }
    // The scaffolded test needs korral-testenv and friends: projects scaffolded before tests
    // existed get them, from where their korral comes from.
    let manifest_changed = scaffold::manifest::complete_manifest(&root)?;
    project
        .resources
        .retain(|r| !(r.group == args.group && r.version == args.version && r.kind == args.kind));
    project.resources.push(resource.clone());
    project.save(&root)?;
    refresh_samples_kustomization(&root)?;

    println!(
        "Created API {group}/{} {} ({})",
        args.version,
        args.kind,
        if resource.namespaced {
            "namespaced"
        } else {
            "cluster-scoped"
        }
    );
    for file in &files {
        println!("  wrote {}", file.path.display());
    }
    let lib = if root.join("src/lib.rs").is_file() {
        "src/lib.rs"
    } else {
        "src/main.rs"
    };
    if manifest_changed {
        println!("  updated {lib}, Cargo.toml, PROJECT");
    } else {
        println!("  updated {lib}, PROJECT");
    }
    println!("Next: edit the types and the reconcile function, then run `korral generate`.");
    Ok(())
}

/// The hub of a kind that has versions already: the version with the controller, else the
/// first one.
fn conversion_hub(project: &Project, group: &str, kind: &str) -> Option<ProjectResource> {
    let versions: Vec<&ProjectResource> = project
        .resources
        .iter()
        .filter(|r| r.group == group && r.kind == kind && r.api)
        .collect();
    versions
        .iter()
        .find(|r| r.controller)
        .or_else(|| versions.first())
        .map(|r| (*r).clone())
}

/// Scaffolds `spoke`, a new version of the kind of `hub`: its types and sample, and its
/// conversion through `hub` (the conversion module created or extended, registered on the
/// webhook server the binary starts).
fn create_version(
    root: &std::path::Path,
    mut project: Project,
    hub: ProjectResource,
    spoke: ProjectResource,
) -> anyhow::Result<()> {
    let (mut files, mut edits) = scaffold::api_files(&project, &spoke, true, false)?;
    let module = webhooks::conversion_module(&project, &hub.group, &hub.kind);
    let exists = root.join(webhooks::module_path(&module)).exists();
    let (conversion_files, conversion_edits) =
        webhooks::conversion_files(&project, &hub, &[&spoke], exists)?;
    files.extend(conversion_files);
    edits.extend(conversion_edits);
    for file in &files {
        if root.join(&file.path).exists() {
            bail!(
                "{} already exists: remove it or choose another version",
                file.path.display()
            );
        }
    }
    for file in &files {
        scaffold::write_file(&root.join(&file.path), &file.contents)?;
    }
    for edit in &edits {
        scaffold::apply_edit(root, edit)?;
    }
    scaffold::manifest::complete_manifest(root)?;
    webhooks::wire_main(root, &project)?;
    let group = full_group(&hub.group, &project.domain);
    let mut declared = korral_runtime::manifests::Manifests::new();
    declared.add_conversion(korral_runtime::manifests::ConvertedKind {
        group: group.clone(),
        kind: hub.kind.clone(),
        hub_version: hub.version.clone(),
    });
    let info = korral_runtime::manifests::OperatorInfo::new(&project.project_name, &project.domain);
    let config = crate::create_webhook::write_config(root, &declared, &info)?;
    project.resources.push(spoke.clone());
    project.save(root)?;
    refresh_samples_kustomization(root)?;
    println!(
        "Created API {group}/{} {}: a new version, converted through the hub {} (its storage version)",
        spoke.version, spoke.kind, hub.version
    );
    for path in files
        .iter()
        .map(|f| f.path.display().to_string())
        .chain(config)
    {
        println!("  wrote {path}");
    }
    println!(
        "  updated src/lib.rs, src/webhooks/{module}.rs, src/webhooks/mod.rs, src/main.rs, PROJECT"
    );
    println!(
        "Next: map the fields that differ in src/webhooks/{module}.rs, then run `korral generate`."
    );
    Ok(())
}

/// Rewrites `config/samples/kustomization.yaml` with every sample file.
fn refresh_samples_kustomization(root: &std::path::Path) -> anyhow::Result<()> {
    let dir = root.join("config/samples");
    let mut samples: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".yaml") && n != "kustomization.yaml")
            .collect(),
        Err(_) => Vec::new(),
    };
    samples.sort();
    scaffold::write_file(
        &dir.join("kustomization.yaml"),
        &scaffold::samples_kustomization(&samples),
    )
}
