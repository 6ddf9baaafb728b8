//! The files `korral init` and `korral create api` write, from the templates in `templates/`.
//!
//! Templates hold `{{name}}` placeholders. Dependency versions of generated projects are those
//! of this Korral workspace (read from its `Cargo.toml` at compile time), so a generated project
//! resolves to the same crates as Korral itself and builds offline with its `Cargo.lock`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::project::{Project, ProjectResource, full_group, module_name, snake_case};

/// The workspace manifest Korral was built from.
const WORKSPACE_MANIFEST: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml"));

/// The Korral facade crate this CLI was built with (the default path dependency of new projects).
pub const DEFAULT_KORRAL_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../korral");

/// The crates a generated project depends on besides `korral`, with the workspace's versions.
const PROJECT_DEPENDENCIES: [&str; 10] = [
    "anyhow",
    "clap",
    "k8s-openapi",
    "kube",
    "schemars",
    "serde",
    "serde_json",
    "tokio",
    "tracing",
    "tracing-subscriber",
];

/// The marker in `src/main.rs` above which `korral create api` registers APIs.
pub const SETUP_MARKER: &str = "    // korral:scaffold:setup";

/// A file to write: its path relative to the project root and its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// The path, relative to the project root.
    pub path: PathBuf,
    /// The contents.
    pub contents: String,
}

impl File {
    fn new(path: impl Into<PathBuf>, contents: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            contents: contents.into(),
        }
    }
}

/// Replaces every `{{key}}` of `template`.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (key, value) in vars {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    out
}

/// `name = spec` lines of the workspace's `[workspace.dependencies]` for the project's crates.
pub fn dependency_lines() -> anyhow::Result<String> {
    let mut in_section = false;
    let mut found = Vec::new();
    for line in WORKSPACE_MANIFEST.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            in_section = trimmed == "[workspace.dependencies]";
            continue;
        }
        if !in_section {
            continue;
        }
        if let Some((name, _)) = trimmed.split_once('=')
            && PROJECT_DEPENDENCIES.contains(&name.trim())
        {
            found.push(trimmed.to_owned());
        }
    }
    for dep in PROJECT_DEPENDENCIES {
        if !found
            .iter()
            .any(|l| l.split('=').next().map(str::trim) == Some(dep))
        {
            bail!("the Korral workspace this CLI was built from does not declare {dep}");
        }
    }
    Ok(found.join("\n"))
}

/// The files of a new project.
pub fn init_files(project: &Project, korral_path: &Path) -> anyhow::Result<Vec<File>> {
    let name = project.project_name.as_str();
    let korral = korral_path.display().to_string();
    let deps = dependency_lines()?;
    let vars: &[(&str, &str)] = &[
        ("name", name),
        ("domain", &project.domain),
        ("korral_path", &korral),
        ("dependencies", &deps),
    ];
    let namespace = format!("{name}-system");
    let mut files = vec![
        File::new(
            "Cargo.toml",
            render(include_str!("templates/Cargo.toml.tmpl"), vars),
        ),
        File::new(
            "src/main.rs",
            render(include_str!("templates/main.rs.tmpl"), vars),
        ),
        File::new(
            "src/api/mod.rs",
            "//! The operator's API types (`korral create api` adds modules here).\n",
        ),
        File::new(
            "src/controllers/mod.rs",
            "//! The operator's controllers (`korral create api` adds modules here).\n",
        ),
        File::new(
            "Makefile",
            render(include_str!("templates/Makefile.tmpl"), vars),
        ),
        File::new(
            "Dockerfile",
            render(include_str!("templates/Dockerfile.tmpl"), vars),
        ),
        File::new(".dockerignore", "target/\n.korral/\nbundle/\n"),
        File::new(".gitignore", "/target\n/.korral\n"),
        File::new(
            "README.md",
            render(include_str!("templates/README.md.tmpl"), vars),
        ),
        File::new(
            "config/default/kustomization.yaml",
            format!(
                "# Everything `korral deploy` applies (also usable with `kubectl apply -k config/default`).\nnamespace: {namespace}\nresources:\n- ../crd\n- ../rbac\n- ../manager\n"
            ),
        ),
        File::new(
            "config/rbac/kustomization.yaml",
            "resources:\n- service_account.yaml\n- role.yaml\n- role_binding.yaml\n- leader_election_role.yaml\n- leader_election_role_binding.yaml\n",
        ),
        File::new(
            "config/manager/kustomization.yaml",
            "resources:\n- manager.yaml\n",
        ),
        File::new("config/crd/kustomization.yaml", crd_kustomization(&[])),
        File::new(
            "config/samples/kustomization.yaml",
            samples_kustomization(&[]),
        ),
    ];
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

/// `config/crd/kustomization.yaml` listing the CRD files.
pub fn crd_kustomization(files: &[String]) -> String {
    let mut out = String::from(
        "# The CRDs of the project; `korral generate` keeps this list up to date.\nresources:",
    );
    if files.is_empty() {
        out.push_str(" []\n");
    } else {
        out.push('\n');
        for file in files {
            out.push_str(&format!("- bases/{file}\n"));
        }
    }
    out
}

/// `config/samples/kustomization.yaml` listing the samples.
pub fn samples_kustomization(files: &[String]) -> String {
    let mut out = String::from("# Example custom resources, one per API.\nresources:");
    if files.is_empty() {
        out.push_str(" []\n");
    } else {
        out.push('\n');
        for file in files {
            out.push_str(&format!("- {file}\n"));
        }
    }
    out
}

/// Where the type module of `resource` goes, as (directory under `src/`, module chain).
fn api_modules(project: &Project, group: &str, version: &str) -> Vec<String> {
    let mut chain = vec!["api".to_owned()];
    if project.multigroup {
        chain.push(module_name(group));
    }
    chain.push(version.to_owned());
    chain
}

fn controller_modules(project: &Project, group: &str) -> Vec<String> {
    let mut chain = vec!["controllers".to_owned()];
    if project.multigroup {
        chain.push(module_name(group));
    }
    chain
}

/// A new resource entry for `group`/`version`/`kind` in the project's current layout.
pub fn new_resource(
    project: &Project,
    group: &str,
    version: &str,
    kind: &str,
    namespaced: bool,
    api: bool,
    controller: bool,
) -> ProjectResource {
    let mut type_chain = api_modules(project, group, version);
    type_chain.push(kind.to_owned());
    let controller_path = controller.then(|| {
        let mut chain = controller_modules(project, group);
        chain.push(snake_case(kind));
        chain.join("::")
    });
    ProjectResource {
        group: group.to_owned(),
        domain: project.domain.clone(),
        version: version.to_owned(),
        kind: kind.to_owned(),
        plural: crate::project::plural(kind),
        namespaced,
        api,
        controller,
        type_path: type_chain.join("::"),
        controller_path,
    }
}

/// A change to an existing file: a line to add to a module file (created with `doc` when
/// missing), or lines to insert above the setup marker of `src/main.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Ensure `line` is in the module file `path` (created with the doc comment `doc`).
    ModuleLine {
        /// The module file.
        path: PathBuf,
        /// Its doc comment if it has to be created.
        doc: String,
        /// The line.
        line: String,
    },
    /// Insert `lines` above [`SETUP_MARKER`] in `src/main.rs`.
    Setup {
        /// The lines.
        lines: Vec<String>,
    },
}

/// The files and edits of `korral create api` for `resource`.
pub fn api_files(
    project: &Project,
    resource: &ProjectResource,
    write_types: bool,
    write_controller: bool,
) -> (Vec<File>, Vec<Edit>) {
    let group_full = full_group(&resource.group, &resource.domain);
    let snake = snake_case(&resource.kind);
    let sample_name = format!("{}-sample", snake.replace('_', "-"));
    let namespaced_attr = if resource.namespaced {
        ", namespaced"
    } else {
        ""
    };
    let (for_call, api_call) = if resource.namespaced {
        (
            format!(".for_::<{}>(scope.clone())", resource.kind),
            format!(
                "Api::namespaced(ctx.client.clone(), &{}.namespace().unwrap_or_default())",
                snake
            ),
        )
    } else {
        (
            format!(".for_cluster::<{}>()", resource.kind),
            "Api::all(ctx.client.clone())".to_owned(),
        )
    };
    let (scope_param, scope_doc) = if resource.namespaced {
        ("scope", "in `scope`")
    } else {
        (
            "_scope",
            "(cluster-scoped: everywhere, whatever the manager's scope)",
        )
    };
    let article = if resource.kind.starts_with(['A', 'E', 'I', 'O', 'U']) {
        "an"
    } else {
        "a"
    };
    let controller_name = snake.replace('_', "-");
    let vars: &[(&str, &str)] = &[
        ("name", &project.project_name),
        ("kind", &resource.kind),
        ("plural", &resource.plural),
        ("full_group", &group_full),
        ("version", &resource.version),
        ("namespaced_attr", namespaced_attr),
        ("type_path", &resource.type_path),
        ("for_call", &for_call),
        ("api_call", &api_call),
        ("var", &snake),
        ("article", article),
        ("controller_name", &controller_name),
        ("scope_param", scope_param),
        ("scope_doc", scope_doc),
        ("sample_name", &sample_name),
    ];
    let mut files = Vec::new();
    let mut edits = Vec::new();
    let mut setup = Vec::new();
    if write_types {
        let chain = api_modules(project, &resource.group, &resource.version);
        let dir: PathBuf = std::iter::once("src".to_owned())
            .chain(chain.iter().cloned())
            .collect();
        files.push(File::new(
            dir.join(format!("{snake}.rs")),
            render(include_str!("templates/types.rs.tmpl"), vars),
        ));
        module_edits(&chain, &mut edits, &group_full, &resource.version);
        edits.push(Edit::ModuleLine {
            path: dir.join("mod.rs"),
            doc: format!(
                "//! Version {} of the {group_full} API group.\n",
                resource.version
            ),
            line: format!("mod {snake};\npub use {snake}::*;"),
        });
        files.push(File::new(
            format!(
                "config/samples/{}_{}_{}.yaml",
                module_name(&resource.group),
                resource.version,
                snake
            ),
            render(include_str!("templates/sample.yaml.tmpl"), vars),
        ));
        setup.push(format!(
            "    manager.declare_crd::<{}>();",
            resource.type_path
        ));
    }
    if write_controller && let Some(path) = &resource.controller_path {
        let chain = controller_modules(project, &resource.group);
        let dir: PathBuf = std::iter::once("src".to_owned())
            .chain(chain.iter().cloned())
            .collect();
        files.push(File::new(
            dir.join(format!("{snake}.rs")),
            render(include_str!("templates/controller.rs.tmpl"), vars),
        ));
        module_edits(&chain, &mut edits, &group_full, &resource.version);
        edits.push(Edit::ModuleLine {
            path: dir.join("mod.rs"),
            doc: format!("//! The controllers of the {group_full} API group.\n"),
            line: format!("pub mod {snake};"),
        });
        setup.push(format!("    {path}::add(manager, scope)?;"));
    }
    if !setup.is_empty() {
        edits.push(Edit::Setup { lines: setup });
    }
    (files, edits)
}

/// `pub mod x;` lines linking each module of `chain` to its parent (`api` is declared by
/// `main.rs`).
fn module_edits(chain: &[String], edits: &mut Vec<Edit>, group_full: &str, version: &str) {
    for i in 1..chain.len() {
        let parent: PathBuf = std::iter::once("src".to_owned())
            .chain(chain[..i].iter().cloned())
            .collect();
        let doc = match (chain[0].as_str(), i) {
            ("api", 1) => {
                "//! The operator's API types (`korral create api` adds modules here).\n".to_owned()
            }
            ("controllers", 1) => {
                "//! The operator's controllers (`korral create api` adds modules here).\n"
                    .to_owned()
            }
            _ => format!("//! The {group_full} API group (version {version} and others).\n"),
        };
        edits.push(Edit::ModuleLine {
            path: parent.join("mod.rs"),
            doc,
            line: format!("pub mod {};", chain[i]),
        });
    }
}

/// Applies `edit` under `root`.
pub fn apply_edit(root: &Path, edit: &Edit) -> anyhow::Result<()> {
    match edit {
        Edit::ModuleLine { path, doc, line } => {
            let full = root.join(path);
            let mut text = match std::fs::read_to_string(&full) {
                Ok(text) => text,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => doc.clone(),
                Err(err) => return Err(err).with_context(|| format!("reading {}", full.display())),
            };
            if text
                .lines()
                .any(|l| l.trim() == line.lines().next().unwrap_or_default().trim())
            {
                return Ok(());
            }
            if !text.ends_with('\n') {
                text.push('\n');
            }
            if text.lines().all(|l| l.starts_with("//!")) {
                text.push('\n');
            }
            text.push_str(line);
            text.push('\n');
            write_file(&full, &text)
        }
        Edit::Setup { lines } => {
            let main = root.join("src/main.rs");
            let text = std::fs::read_to_string(&main)
                .with_context(|| format!("reading {}", main.display()))?;
            let Some(pos) = text.find(SETUP_MARKER) else {
                bail!(
                    "{} has no `{}` line: add the registration by hand:\n{}",
                    main.display(),
                    SETUP_MARKER.trim(),
                    lines.join("\n")
                );
            };
            let mut out = String::with_capacity(text.len() + 200);
            out.push_str(&text[..pos]);
            for line in lines {
                out.push_str(line);
                out.push('\n');
            }
            out.push_str(&text[pos..]);
            write_file(&main, &out)
        }
    }
}

/// Writes `contents` to `path`, creating its directory.
pub fn write_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced() {
        assert_eq!(
            render("a {{x}} {{y}} {{x}}", &[("x", "1"), ("y", "2")]),
            "a 1 2 1"
        );
    }

    #[test]
    fn dependencies_come_from_the_workspace() -> anyhow::Result<()> {
        let deps = dependency_lines()?;
        assert!(deps.contains("kube = { version = \"5\""), "{deps}");
        assert!(deps.contains("k8s-openapi = "), "{deps}");
        assert_eq!(deps.lines().count(), PROJECT_DEPENDENCIES.len(), "{deps}");
        Ok(())
    }
}
