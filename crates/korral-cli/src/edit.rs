//! `korral edit`: change a project's settings.

use std::path::PathBuf;

use crate::project::{Project, find_root};

/// Options of `korral edit`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Switch to (`--multigroup`, `--multigroup=true`) or from (`--multigroup=false`) the
    /// multi-group layout.
    #[arg(long, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub multigroup: Option<bool>,
    /// The project directory (default: the current one or a parent holding `PROJECT`).
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

/// Runs `korral edit`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let root = find_root(&args.dir)?;
    let mut project = Project::load(&root)?;
    let Some(multigroup) = args.multigroup else {
        println!(
            "Project {}: domain {}, layout {}",
            project.project_name,
            project.domain,
            if project.multigroup {
                "multi-group"
            } else {
                "single-group"
            }
        );
        return Ok(());
    };
    if project.multigroup == multigroup {
        println!(
            "Project {} already uses the {} layout",
            project.project_name,
            if multigroup {
                "multi-group"
            } else {
                "single-group"
            }
        );
        return Ok(());
    }
    project.multigroup = multigroup;
    project.save(&root)?;
    println!(
        "Project {} now uses the {} layout: new APIs go to src/api/{}<version>/ and src/controllers/{}",
        project.project_name,
        if multigroup {
            "multi-group"
        } else {
            "single-group"
        },
        if multigroup { "<group>/" } else { "" },
        if multigroup { "<group>/" } else { "" },
    );
    if !project.resources.is_empty() {
        println!(
            "Existing APIs stay where they are ({} recorded in PROJECT); move them by hand if you want them in the new layout.",
            project.resources.len()
        );
    }
    Ok(())
}
