//! Helpers for the scaffolding tests: run `korral` in a directory and turn its output and the
//! files it wrote into text for `insta` snapshots (`tests/snapshots/`; review changes with
//! `cargo insta review`, or accept them with `INSTA_UPDATE=always`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `korral` binary under test.
pub const KORRAL: &str = env!("CARGO_BIN_EXE_korral");

/// The version of the Korral crates generated projects depend on (this CLI's).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `text` with the Korral version the scaffold writes replaced by `<VERSION>`, so snapshots
/// survive a version bump.
pub fn redact_version(text: &str) -> String {
    let mut out = text.to_owned();
    for name in ["korral", "korral-testenv"] {
        out = out.replace(
            &format!("{name} = \"{VERSION}\""),
            &format!("{name} = \"<VERSION>\""),
        );
    }
    out.replace(
        &format!("Depends on korral {VERSION} "),
        "Depends on korral <VERSION> ",
    )
}

/// The output of one `korral` run.
#[derive(Debug)]
pub struct Run {
    /// Exit code.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// The run as snapshot text, with `dir` replaced by `<DIR>`.
    pub fn text(&self, dir: &Path) -> String {
        let dir = dir.display().to_string();
        // Error messages end with anyhow's chain; backtraces are disabled below.
        redact_version(&format!(
            "exit code: {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code,
            self.stdout.replace(&dir, "<DIR>"),
            self.stderr.replace(&dir, "<DIR>")
        ))
    }
}

/// Runs `korral args` in `dir` (without `KORRAL_PATH`: projects depend on Korral by version).
pub fn korral(dir: &Path, args: &[&str]) -> Run {
    korral_env(dir, args, &[])
}

/// Runs `korral args` in `dir` with the environment variables `env` added.
pub fn korral_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(KORRAL)
        .args(args)
        .current_dir(dir)
        .env_remove("KORRAL_PATH")
        .envs(env.iter().copied())
        .env("RUST_BACKTRACE", "0")
        .env("RUST_LIB_BACKTRACE", "0")
        .env_remove("KUBECONFIG")
        .output()
        .expect("running korral");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every file under `root` (sorted, relative paths), as `=== path ===` sections, with the
/// Korral version redacted.
pub fn tree(root: &Path) -> String {
    let mut files = Vec::new();
    collect(root, root, &mut files);
    files.sort();
    let mut out = String::new();
    for path in files {
        let text = std::fs::read_to_string(root.join(&path)).expect("reading a generated file");
        out.push_str(&format!(
            "=== {} ===\n{}",
            path.display(),
            redact_version(&text)
        ));
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("reading a directory") {
        let entry = entry.expect("a directory entry");
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else {
            files.push(path.strip_prefix(root).expect("under root").to_path_buf());
        }
    }
}
