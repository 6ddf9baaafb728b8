//! `korral init`: scaffold a new operator project.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::project::{LAYOUT, PROJECT_FILE, Project, validate_domain, validate_project_name};
use crate::scaffold::{self, DEFAULT_KORRAL_PATH};

/// Options of `korral init`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The domain of the project's API groups (groups are `<group>.<domain>`).
    #[arg(long)]
    pub domain: String,
    /// The project name (default: the directory's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Lay APIs out by group (`src/api/<group>/<version>/`), for projects with several groups.
    #[arg(long)]
    pub multigroup: bool,
    /// The directory to scaffold into (default: the current one; created if missing).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// The Korral facade crate the project depends on by path (default: the one this `korral`
    /// was built from).
    #[arg(long, env = "KORRAL_PATH")]
    pub korral_path: Option<PathBuf>,
}

/// Where the generated project's `korral` dependency points.
pub fn korral_path(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    let path = flag.map_or_else(|| PathBuf::from(DEFAULT_KORRAL_PATH), Path::to_path_buf);
    match std::fs::canonicalize(&path) {
        Ok(path) => Ok(path),
        // A path that does not exist here is kept as given (the project may be built elsewhere).
        Err(_) if flag.is_some() => Ok(path),
        Err(err) => Err(err).with_context(|| {
            format!(
                "finding the korral crate at {} (set --korral-path or KORRAL_PATH)",
                path.display()
            )
        }),
    }
}

/// Runs `korral init`.
pub fn run(args: Args) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let root = std::fs::canonicalize(&args.dir)
        .with_context(|| format!("reading {}", args.dir.display()))?;
    let name = match args.name {
        Some(name) => name,
        None => root
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
            .context("the directory has no name: pass --name")?,
    };
    validate_project_name(&name)?;
    validate_domain(&args.domain)?;
    if root.join(PROJECT_FILE).exists() {
        bail!(
            "{} already holds a project ({PROJECT_FILE} exists): korral init only scaffolds new projects",
            root.display()
        );
    }
    for existing in ["Cargo.toml", "src/main.rs"] {
        if root.join(existing).exists() {
            bail!(
                "{} already has {existing}: korral init scaffolds into an empty directory",
                root.display()
            );
        }
    }
    let korral = korral_path(args.korral_path.as_deref())?;
    let project = Project {
        layout: LAYOUT.to_owned(),
        project_name: name.clone(),
        domain: args.domain.clone(),
        multigroup: args.multigroup,
        resources: Vec::new(),
    };
    let files = scaffold::init_files(&project, &korral)?;
    for file in &files {
        scaffold::write_file(&root.join(&file.path), &file.contents)?;
    }
    project.save(&root)?;
    println!(
        "Scaffolded project {name} (domain {}) in {}",
        args.domain,
        root.display()
    );
    let mut written: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    written.push(PROJECT_FILE.to_owned());
    // The Korral workspace's lock file pins the versions Korral is built and tested with, so
    // the project builds offline from the crates already downloaded.
    let lock = korral.join("../../Cargo.lock");
    if lock.is_file() {
        std::fs::copy(&lock, root.join("Cargo.lock"))
            .with_context(|| format!("copying {}", lock.display()))?;
        written.push("Cargo.lock (the Korral workspace's versions)".to_owned());
    }
    written.sort();
    for path in written {
        println!("  wrote {path}");
    }
    println!("Next: korral create api --group <group> --version <version> --kind <Kind>");
    Ok(())
}
