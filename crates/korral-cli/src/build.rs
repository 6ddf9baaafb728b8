//! Building the operator of a project with cargo and finding its binary.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// Builds the project at `root` (`cargo build`, debug profile) and returns the path of its
/// binary. Compiler messages go to standard error.
pub fn build_operator(root: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut child = Command::new(cargo)
        .args([
            "build",
            "--message-format=json-render-diagnostics",
            "--bin",
            name,
        ])
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("running cargo build (is cargo on PATH?)")?;
    let stdout = child.stdout.take().context("reading cargo's output")?;
    let mut executable = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading cargo's output")?;
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if message["reason"] == "compiler-artifact"
            && message["target"]["name"] == name
            && let Some(path) = message["executable"].as_str()
        {
            executable = Some(PathBuf::from(path));
        }
    }
    let status = child.wait().context("waiting for cargo build")?;
    if !status.success() {
        bail!("building {name} failed (cargo build exited with {status})");
    }
    executable.with_context(|| format!("cargo build did not report the {name} binary"))
}
