//! Snapshot helpers for the scaffolding tests: run `korral` in a directory and compare text
//! with `tests/snapshots/<name>.snap`. Set `KORRAL_UPDATE_SNAPSHOTS=1` to (re)write them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `korral` binary under test.
pub const KORRAL: &str = env!("CARGO_BIN_EXE_korral");

/// The Korral path written into generated projects by these tests (kept as given).
pub const KORRAL_PATH: &str = "/opt/korral/crates/korral";

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
        format!(
            "exit code: {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.code,
            self.stdout.replace(&dir, "<DIR>"),
            self.stderr.replace(&dir, "<DIR>")
        )
    }
}

/// Runs `korral args` in `dir`.
pub fn korral(dir: &Path, args: &[&str]) -> Run {
    let out = Command::new(KORRAL)
        .args(args)
        .current_dir(dir)
        .env("KORRAL_PATH", KORRAL_PATH)
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

/// Every file under `root` (sorted, relative paths), as `=== path ===` sections.
pub fn tree(root: &Path) -> String {
    let mut files = Vec::new();
    collect(root, root, &mut files);
    files.sort();
    let mut out = String::new();
    for path in files {
        let text = std::fs::read_to_string(root.join(&path)).expect("reading a generated file");
        out.push_str(&format!("=== {} ===\n{text}", path.display()));
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

/// Compares `actual` with the snapshot `name`; writes it with `KORRAL_UPDATE_SNAPSHOTS=1`.
pub fn assert_snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.snap"));
    if std::env::var_os("KORRAL_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("creating snapshots dir");
        std::fs::write(&path, actual).expect("writing snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "no snapshot {} (run with KORRAL_UPDATE_SNAPSHOTS=1 to write it)\n--- actual ---\n{actual}",
            path.display()
        )
    });
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (e, a))| e != a)
            .take(10)
            .map(|(i, (e, a))| format!("line {}:\n  expected: {e}\n  actual:   {a}", i + 1))
            .collect();
        panic!(
            "snapshot {name} differs ({} vs {} lines; run with KORRAL_UPDATE_SNAPSHOTS=1 to accept)\n{}\n--- actual ---\n{actual}",
            expected.lines().count(),
            actual.lines().count(),
            diff.join("\n")
        );
    }
}
