//! Korral outside its own checkout: the crates are packaged (`cargo package`), unpacked into a
//! directory that stands in for the registry, and a project scaffolded by `korral init` and
//! `korral create api` — which depends on Korral by version, as a user's project does — is
//! built and tested against those packaged sources only (a `[patch.crates-io]` points the
//! versions at the unpacked packages). The packaged `korral-cli` is built the same way.
//!
//! This proves each package builds from what it ships (versions on internal dependencies,
//! `include` lists, nothing read from outside a package). Dependencies are shared with the
//! workspace's build directory, so only the Korral crates are compiled again.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use support::{KORRAL, run_with_timeout};

/// The packages a project (and the CLI) need, in the order `cargo package` takes them.
const PACKAGES: [&str; 6] = [
    "korral-apiserver",
    "korral-testenv",
    "korral-runtime",
    "korral",
    "memcached-operator",
    "korral-cli",
];

/// How long a build may take on a busy machine.
const BUILD_TIMEOUT: Duration = Duration::from_secs(2400);

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The workspace's target directory (the test binary's `korral` lives in `<target>/debug`).
fn workspace_target_dir() -> anyhow::Result<PathBuf> {
    Path::new(KORRAL)
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .context("finding the target directory from the korral binary")
}

fn cargo() -> PathBuf {
    std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("cargo"))
}

fn run(program: &Path, args: &[String], env: &[(&str, String)]) -> anyhow::Result<String> {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run_with_timeout(program, args, &env, BUILD_TIMEOUT)?;
    if !out.success() {
        bail!("{}", out.describe());
    }
    Ok(out.stdout + &out.stderr)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Packages the crates into `out` and unpacks each `.crate` into `registry/<name>`.
fn package_and_unpack(out: &Path, registry: &Path) -> anyhow::Result<()> {
    let mut args = strings(&["package", "--allow-dirty", "--no-verify", "--offline"]);
    for p in PACKAGES {
        args.extend(["-p".to_string(), p.to_string()]);
    }
    args.extend([
        "--manifest-path".to_string(),
        workspace_root().join("Cargo.toml").display().to_string(),
    ]);
    run(
        &cargo(),
        &args,
        &[("CARGO_TARGET_DIR", out.display().to_string())],
    )
    .context("cargo package")?;
    std::fs::create_dir_all(registry)?;
    let version = env!("CARGO_PKG_VERSION");
    for p in PACKAGES {
        let file = out.join("package").join(format!("{p}-{version}.crate"));
        run(
            Path::new("tar"),
            &strings(&[
                "-xzf",
                &file.display().to_string(),
                "-C",
                &registry.display().to_string(),
            ]),
            &[],
        )
        .with_context(|| format!("unpacking {}", file.display()))?;
    }
    Ok(())
}

/// Runs the `korral` under test without `KORRAL_PATH` (a user's project depends by version).
fn korral_cli(args: &[String]) -> anyhow::Result<()> {
    let out = std::process::Command::new(KORRAL)
        .args(args)
        .env_remove("KORRAL_PATH")
        .stdin(std::process::Stdio::null())
        .output()
        .context("running korral")?;
    if !out.status.success() {
        bail!(
            "korral {args:?}: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// `--config` arguments that patch crates.io's Korral crates to the unpacked packages.
fn patch_args(registry: &Path) -> Vec<String> {
    let version = env!("CARGO_PKG_VERSION");
    let mut args = Vec::new();
    for p in PACKAGES {
        let dir = registry.join(format!("{p}-{version}"));
        args.push("--config".to_string());
        args.push(format!("patch.crates-io.{p}.path=\"{}\"", dir.display()));
    }
    args
}

#[test]
fn a_project_outside_the_checkout_builds_and_tests_against_the_packaged_crates()
-> anyhow::Result<()> {
    if std::env::var_os("KORRAL_SKIP_PACKAGED_TEST").is_some() {
        eprintln!("KORRAL_SKIP_PACKAGED_TEST set: skipped");
        return Ok(());
    }
    let tmp = tempfile::tempdir()?;
    let registry = tmp.path().join("registry");
    package_and_unpack(&tmp.path().join("package-target"), &registry)?;

    // A project of the user's own, outside the checkout, depending on Korral by version.
    let project = tmp.path().join("gadget-operator");
    std::fs::create_dir_all(&project)?;
    korral_cli(&strings(&[
        "init",
        "--domain",
        "example.com",
        "--name",
        "gadget-operator",
        "--dir",
        &project.display().to_string(),
    ]))
    .context("korral init")?;
    let manifest = std::fs::read_to_string(project.join("Cargo.toml"))?;
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        manifest.contains(&format!("korral = \"{version}\"")),
        "{manifest}"
    );
    assert!(!manifest.contains("path ="), "{manifest}");
    korral_cli(&strings(&[
        "create",
        "api",
        "--group",
        "demo",
        "--version",
        "v1",
        "--kind",
        "Gadget",
        "--dir",
        &project.display().to_string(),
    ]))
    .context("korral create api")?;

    // The workspace's lock (same third-party versions, all in the local cache) and build dir.
    std::fs::copy(
        workspace_root().join("Cargo.lock"),
        project.join("Cargo.lock"),
    )?;
    let target = workspace_target_dir()?;
    let env = [
        ("CARGO_BUILD_BUILD_DIR", target.display().to_string()),
        (
            "CARGO_TARGET_DIR",
            target.join("packaged").display().to_string(),
        ),
        ("CARGO_NET_OFFLINE", "true".to_owned()),
    ];
    let mut args = strings(&["test", "--manifest-path"]);
    args.push(project.join("Cargo.toml").display().to_string());
    args.extend(patch_args(&registry));
    let output = run(&cargo(), &args, &env).context("the scaffolded project's cargo test")?;
    assert!(output.contains("test result: ok"), "{output}");
    // The Korral crates came from the unpacked packages, nothing from this checkout.
    let lock = std::fs::read_to_string(project.join("Cargo.lock"))?;
    assert!(!lock.contains("/crates/korral"), "{lock}");

    // The packaged CLI builds from its own sources too.
    let cli = registry.join(format!("korral-cli-{version}"));
    std::fs::copy(workspace_root().join("Cargo.lock"), cli.join("Cargo.lock"))?;
    let mut args = strings(&["build", "--manifest-path"]);
    args.push(cli.join("Cargo.toml").display().to_string());
    args.extend(patch_args(&registry));
    run(&cargo(), &args, &env).context("building the packaged korral-cli")?;
    Ok(())
}
