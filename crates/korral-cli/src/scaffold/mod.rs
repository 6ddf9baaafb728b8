//! The files `korral init` and `korral create api` write, from the templates in `templates/`
//! (rendered by [`render`]) and the dependencies of [`manifest`].
//!
//! A generated project is a library (`src/lib.rs`: the API types, the controllers and
//! `add_to_manager`) with the manager binary (`src/main.rs`) and one test per controller under
//! `tests/`. It depends on the Korral crates by version ([`manifest::KORRAL_VERSION`]), or by
//! path on a Korral checkout (`--korral-path`).

pub mod manifest;
pub mod render;
pub mod webhooks;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use minijinja::context;

use crate::project::{Project, ProjectResource, full_group, module_name, snake_case};
use manifest::KorralSource;

/// The marker in `src/lib.rs` above which `korral create api` registers APIs.
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

/// The Rust name of the project's library crate (`memcached-operator` → `memcached_operator`).
pub fn crate_name(project_name: &str) -> String {
    project_name.replace('-', "_")
}

/// The files of a new project whose Korral crates come from `korral`.
pub fn init_files(project: &Project, korral: &KorralSource) -> anyhow::Result<Vec<File>> {
    let name = project.project_name.as_str();
    let ctx = context! {
        name => name,
        crate_name => crate_name(name),
        domain => &project.domain,
    };
    let cargo_toml =
        manifest::add_dependencies(&render::render("Cargo.toml", ctx.clone())?, korral)?;
    let namespace = format!("{name}-system");
    let mut files = vec![
        File::new("Cargo.toml", cargo_toml),
        File::new("src/main.rs", render::render("main.rs", ctx.clone())?),
        File::new("src/lib.rs", render::render("lib.rs", ctx.clone())?),
        File::new(
            "src/api/mod.rs",
            "//! The operator's API types (`korral create api` adds modules here).\n",
        ),
        File::new(
            "src/controllers/mod.rs",
            "//! The operator's controllers (`korral create api` adds modules here).\n",
        ),
        File::new("Makefile", render::render("Makefile", ctx.clone())?),
        File::new("Dockerfile", render::render("Dockerfile", ctx.clone())?),
        File::new(".dockerignore", "target/\n.korral/\nbundle/\n"),
        File::new(".gitignore", "/target\n/.korral\n"),
        File::new("README.md", render::render("README.md", ctx)?),
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
/// missing), or lines to insert above the setup marker of `src/lib.rs`.
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
    /// Insert `lines` above [`SETUP_MARKER`] in `src/lib.rs` (`src/main.rs` in projects
    /// scaffolded before the library existed).
    Setup {
        /// The lines.
        lines: Vec<String>,
    },
    /// Ensure `line` is in `path`, inserted above the line holding `marker`.
    Marker {
        /// The file.
        path: PathBuf,
        /// The marker (the start of its line).
        marker: String,
        /// The line.
        line: String,
    },
    /// Append `text` to `path`.
    Append {
        /// The file.
        path: PathBuf,
        /// The text.
        text: String,
    },
}

/// The files and edits of `korral create api` for `resource`: the types and the sample
/// (`write_types`), the controller and its test (`write_controller`).
pub fn api_files(
    project: &Project,
    resource: &ProjectResource,
    write_types: bool,
    write_controller: bool,
) -> anyhow::Result<(Vec<File>, Vec<Edit>)> {
    let group_full = full_group(&resource.group, &resource.domain);
    let snake = snake_case(&resource.kind);
    let sample_name = format!("{}-sample", snake.replace('_', "-"));
    let sample_file = format!(
        "{}_{}_{}.yaml",
        module_name(&resource.group),
        resource.version,
        snake
    );
    let article = if resource.kind.starts_with(['A', 'E', 'I', 'O', 'U']) {
        "an"
    } else {
        "a"
    };
    let ctx = context! {
        name => &project.project_name,
        crate_name => crate_name(&project.project_name),
        kind => &resource.kind,
        plural => &resource.plural,
        full_group => &group_full,
        version => &resource.version,
        namespaced => resource.namespaced,
        type_path => &resource.type_path,
        var => &snake,
        article => article,
        controller_name => snake.replace('_', "-"),
        sample_name => &sample_name,
        sample_file => &sample_file,
    };
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
            render::render("types.rs", ctx.clone())?,
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
            format!("config/samples/{sample_file}"),
            render::render("sample.yaml", ctx.clone())?,
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
            render::render("controller.rs", ctx.clone())?,
        ));
        files.push(File::new(
            format!("tests/{snake}_controller.rs"),
            render::render("controller_test.rs", ctx)?,
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
    Ok((files, edits))
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
            let lib = root.join("src/lib.rs");
            let main = if lib.is_file() {
                lib
            } else {
                root.join("src/main.rs")
            };
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
        Edit::Marker { path, marker, line } => insert_above_marker(&root.join(path), marker, line),
        Edit::Append { path, text } => {
            let full = root.join(path);
            let mut out = std::fs::read_to_string(&full)
                .with_context(|| format!("reading {}", full.display()))?;
            out.push_str(text);
            write_file(&full, &out)
        }
    }
}

/// Inserts `line` above `marker` in `path` unless the file has it already.
fn insert_above_marker(path: &Path, marker: &str, line: &str) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if text.lines().any(|l| l == line) {
        return Ok(());
    }
    let Some(pos) = text.find(marker) else {
        bail!(
            "{} has no `{}` line: add this line by hand:\n{line}",
            path.display(),
            marker.trim()
        );
    };
    write_file(path, &format!("{}{line}\n{}", &text[..pos], &text[pos..]))
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
    use crate::project::LAYOUT;

    fn project(multigroup: bool) -> Project {
        Project {
            layout: LAYOUT.to_owned(),
            project_name: "demo-operator".to_owned(),
            domain: "example.com".to_owned(),
            multigroup,
            resources: Vec::new(),
        }
    }

    fn file<'a>(files: &'a [File], path: &str) -> &'a str {
        files
            .iter()
            .find(|f| f.path == Path::new(path))
            .map(|f| f.contents.as_str())
            .unwrap_or_else(|| panic!("no {path}"))
    }

    #[test]
    fn init_renders_every_file_with_the_project_values() -> anyhow::Result<()> {
        let files = init_files(&project(false), &KorralSource::Registry)?;
        let main = file(&files, "src/main.rs");
        assert!(
            main.contains("demo_operator::add_to_manager(manager, &scope)"),
            "{main}"
        );
        assert!(
            main.contains("const DOMAIN: &str = \"example.com\";"),
            "{main}"
        );
        assert!(file(&files, "src/lib.rs").contains(SETUP_MARKER));
        let cargo = file(&files, "Cargo.toml");
        assert!(
            cargo.contains(&format!("korral = \"{}\"", manifest::KORRAL_VERSION)),
            "{cargo}"
        );
        assert!(!cargo.contains("crates/korral"), "{cargo}");
        let docker = file(&files, "Dockerfile");
        assert!(
            docker.contains("target/release/demo-operator /manager"),
            "{docker}"
        );
        for f in &files {
            assert!(
                !f.contents.contains("{{"),
                "{} keeps a placeholder",
                f.path.display()
            );
        }
        Ok(())
    }

    #[test]
    fn create_api_writes_a_test_per_controller() -> anyhow::Result<()> {
        let project = project(false);
        let resource = new_resource(&project, "cache", "v1", "Memcached", true, true, true);
        let (files, edits) = api_files(&project, &resource, true, true)?;
        let test = file(&files, "tests/memcached_controller.rs");
        assert!(
            test.contains("use demo_operator::api::v1::Memcached;"),
            "{test}"
        );
        assert!(
            test.contains("include_str!(\"../config/samples/cache_v1_memcached.yaml\")"),
            "{test}"
        );
        assert!(
            test.contains("Api::namespaced(env.client(), \"default\")"),
            "{test}"
        );
        let controller = file(&files, "src/controllers/memcached.rs");
        assert!(
            controller.contains(".for_::<Memcached>(scope.clone())"),
            "{controller}"
        );
        assert!(
            controller.contains("\"observedGeneration\""),
            "{controller}"
        );
        assert!(
            controller.contains("client: manager.cached_client().clone()"),
            "{controller}"
        );
        assert!(
            edits
                .iter()
                .any(|e| matches!(e, Edit::Setup { lines } if lines.len() == 2))
        );

        // Cluster-scoped: watched everywhere, its test lists with `Api::all`.
        let resource = new_resource(&project, "infra", "v1", "Bucket", false, true, true);
        let (files, _) = api_files(&project, &resource, true, true)?;
        let test = file(&files, "tests/bucket_controller.rs");
        assert!(test.contains("Api::all(env.client())"), "{test}");
        let controller = file(&files, "src/controllers/bucket.rs");
        assert!(
            controller.contains(".for_cluster::<Bucket>()"),
            "{controller}"
        );
        assert!(controller.contains("_scope: &Scope"), "{controller}");
        assert!(!controller.contains(".for_::<"), "{controller}");
        let types = file(&files, "src/api/v1/bucket.rs");
        assert!(types.contains("kind = \"Bucket\")]"), "{types}");

        // Types only: no controller, no test.
        let (files, _) = api_files(&project, &resource, true, false)?;
        assert!(files.iter().all(|f| !f.path.starts_with("tests")));
        Ok(())
    }

    #[test]
    fn the_setup_goes_into_the_library() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        for f in init_files(&project(false), &KorralSource::Registry)? {
            write_file(&dir.path().join(&f.path), &f.contents)?;
        }
        apply_edit(
            dir.path(),
            &Edit::Setup {
                lines: vec!["    manager.declare_crd::<api::v1::X>();".to_owned()],
            },
        )?;
        let lib = std::fs::read_to_string(dir.path().join("src/lib.rs"))?;
        assert!(
            lib.contains("    manager.declare_crd::<api::v1::X>();\n    // korral:scaffold:setup"),
            "{lib}"
        );
        Ok(())
    }
}
