//! `korral init`: scaffold a new operator project.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::project::{LAYOUT, PROJECT_FILE, Project, validate_domain, validate_project_name};
use crate::scaffold::{self, manifest::KorralSource};

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
    /// A Korral checkout (the directory holding `crates/korral`) to depend on by path, for
    /// developing Korral itself. By default the project depends on the Korral crates by
    /// version (this `korral`'s version).
    #[arg(long, env = "KORRAL_PATH", value_name = "DIR")]
    pub korral_path: Option<PathBuf>,
}

/// Where the generated project takes the Korral crates from: the registry, or the checkout
/// `flag` (made absolute when it exists here; kept as given otherwise, as the project may be
/// built elsewhere).
pub fn korral_source(flag: Option<&Path>) -> anyhow::Result<KorralSource> {
    let Some(dir) = flag.filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(KorralSource::Registry);
    };
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if dir.join("crates").is_dir() && !dir.join("crates/korral/Cargo.toml").is_file() {
        bail!(
            "{} is not a Korral checkout: it has no crates/korral/Cargo.toml (--korral-path names the checkout's root)",
            dir.display()
        );
    }
    Ok(KorralSource::Checkout(dir))
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
    let korral = korral_source(args.korral_path.as_deref())?;
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
    written.sort();
    for path in written {
        println!("  wrote {path}");
    }
    match &korral {
        KorralSource::Registry => println!(
            "Depends on korral {} (by version)",
            scaffold::manifest::KORRAL_VERSION
        ),
        KorralSource::Checkout(dir) => {
            println!(
                "Depends on the Korral checkout at {} (by path)",
                dir.display()
            )
        }
    }
    println!("Next: korral create api --group <group> --version <version> --kind <Kind>");
    Ok(())
}
