//! Snapshot tests of `korral init`, `korral create api` and `korral edit`: the generated files
//! and the CLI's output, including its errors.

mod scaffold_common;

use scaffold_common::{korral, korral_env, tree};

#[test]
fn init_and_create_api_single_group() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let init = korral(
        dir,
        &[
            "init",
            "--domain",
            "example.com",
            "--name",
            "memcached-operator",
        ],
    );
    assert_eq!(init.code, Some(0), "{}", init.text(dir));
    insta::assert_snapshot!("init_output", init.text(dir));
    insta::assert_snapshot!("init_files", tree(dir));

    let api = korral(
        dir,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
        ],
    );
    assert_eq!(api.code, Some(0), "{}", api.text(dir));
    insta::assert_snapshot!("create_api_output", api.text(dir));
    let after_create = tree(dir);
    insta::assert_snapshot!("create_api_files", after_create);

    // The same API again, and a second version of the kind, are refused.
    let again = korral(
        dir,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
        ],
    );
    assert_eq!(again.code, Some(1));
    insta::assert_snapshot!("create_api_exists", again.text(dir));
    // A controller-only request for an existing API with a controller is refused too.
    let controller_again = korral(
        dir,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--resource=false",
        ],
    );
    assert_eq!(controller_again.code, Some(1));
    assert!(
        controller_again
            .stderr
            .contains("the controller of cache.example.com/v1 Memcached already exists"),
        "{}",
        controller_again.text(dir)
    );
    // Nothing changed.
    assert_eq!(tree(dir), after_create);
}

/// `--korral-path DIR` (or `KORRAL_PATH`) makes the project depend on the Korral checkout
/// `DIR` by path, for developing Korral itself; by default it depends on this version.
#[test]
fn korral_path_keeps_the_path_form() {
    for (how, args, env) in [
        (
            "flag",
            &[
                "init",
                "--domain",
                "example.com",
                "--name",
                "demo-operator",
                "--korral-path",
                "/opt/korral",
            ][..],
            &[][..],
        ),
        (
            "env",
            &["init", "--domain", "example.com", "--name", "demo-operator"][..],
            &[("KORRAL_PATH", "/opt/korral")][..],
        ),
    ] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let init = korral_env(dir, args, env);
        assert_eq!(init.code, Some(0), "{how}: {}", init.text(dir));
        assert!(
            init.stdout
                .contains("Depends on the Korral checkout at /opt/korral (by path)"),
            "{how}: {}",
            init.text(dir)
        );
        let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
        assert!(
            cargo.contains("\nkorral = { path = \"/opt/korral/crates/korral\" }\n"),
            "{how}: {cargo}"
        );
        assert!(
            cargo.contains("\nkorral-testenv = { path = \"/opt/korral/crates/korral-testenv\" }\n"),
            "{how}: {cargo}"
        );
        assert!(!cargo.contains(VERSION_LINE), "{how}: {cargo}");
        assert!(
            !dir.join("Cargo.lock").exists(),
            "{how}: no lock file is copied"
        );

        // `create api` completes the manifest of a project that lacks the test's
        // dependencies, from the same checkout.
        let trimmed = cargo
            .lines()
            .filter(|l| !l.starts_with("korral-testenv") && !l.starts_with("serde_yaml_ng"))
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(dir.join("Cargo.toml"), trimmed).expect("writing Cargo.toml");
        let api = korral(
            dir,
            &[
                "create",
                "api",
                "--group",
                "cache",
                "--version",
                "v1",
                "--kind",
                "Memcached",
            ],
        );
        assert_eq!(api.code, Some(0), "{how}: {}", api.text(dir));
        assert!(
            api.stdout
                .contains("updated src/lib.rs, Cargo.toml, PROJECT"),
            "{}",
            api.text(dir)
        );
        let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
        assert!(
            cargo.contains("korral-testenv = { path = \"/opt/korral/crates/korral-testenv\" }"),
            "{how}: {cargo}"
        );
        assert!(cargo.contains("serde_yaml_ng = \"0.10\""), "{how}: {cargo}");
    }
}

/// A line a version dependency on korral would have.
const VERSION_LINE: &str = "korral = \"";

#[test]
fn multigroup_and_cluster_scoped_apis() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let init = korral(
        dir,
        &[
            "init",
            "--domain",
            "example.org",
            "--name",
            "platform-operator",
            "--multigroup",
        ],
    );
    assert_eq!(init.code, Some(0), "{}", init.text(dir));
    let api = korral(
        dir,
        &[
            "create",
            "api",
            "--group",
            "storage",
            "--version",
            "v1alpha1",
            "--kind",
            "StorageBucket",
            "--namespaced=false",
        ],
    );
    assert_eq!(api.code, Some(0), "{}", api.text(dir));
    let types_only = korral(
        dir,
        &[
            "create",
            "api",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "AppService",
            "--controller=false",
        ],
    );
    assert_eq!(types_only.code, Some(0), "{}", types_only.text(dir));
    let controller_later = korral(
        dir,
        &[
            "create",
            "api",
            "--group",
            "apps",
            "--version",
            "v1",
            "--kind",
            "AppService",
            "--resource=false",
        ],
    );
    assert_eq!(
        controller_later.code,
        Some(0),
        "{}",
        controller_later.text(dir)
    );
    let mut files = tree(dir);
    // The common files are covered by the single-group snapshots.
    files = files
        .split("=== ")
        .filter(|s| {
            s.starts_with("src/")
                || s.starts_with("tests/")
                || s.starts_with("PROJECT")
                || s.starts_with("config/samples")
        })
        .map(|s| format!("=== {s}"))
        .collect();
    insta::assert_snapshot!("multigroup_files", files);

    // Switching the layout back records it; existing APIs stay.
    let edit = korral(dir, &["edit", "--multigroup=false"]);
    assert_eq!(edit.code, Some(0), "{}", edit.text(dir));
    insta::assert_snapshot!("edit_output", edit.text(dir));
    let project = std::fs::read_to_string(dir.join("PROJECT")).expect("PROJECT");
    assert!(project.contains("multigroup: false"), "{project}");
    assert!(
        project.contains("typePath: api::storage::v1alpha1::StorageBucket"),
        "{project}"
    );
}

#[test]
fn errors_name_what_is_wrong() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let mut out = String::new();
    let mut case = |title: &str, args: &[&str]| {
        let run = korral(dir, args);
        assert_eq!(run.code, Some(1), "{title}: {}", run.text(dir));
        out.push_str(&format!("## {title}\n{}\n", run.text(dir)));
    };
    case(
        "not a project",
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
        ],
    );
    case("not a project (generate)", &["generate"]);
    case(
        "bad domain",
        &["init", "--domain", "Example.COM", "--name", "x-operator"],
    );
    case(
        "bad name",
        &["init", "--domain", "example.com", "--name", "My_Operator"],
    );
    let init = korral(
        dir,
        &["init", "--domain", "example.com", "--name", "demo-operator"],
    );
    assert_eq!(init.code, Some(0), "{}", init.text(dir));
    let mut case = |title: &str, args: &[&str]| {
        let run = korral(dir, args);
        assert_eq!(run.code, Some(1), "{title}: {}", run.text(dir));
        out.push_str(&format!("## {title}\n{}\n", run.text(dir)));
    };
    case(
        "init twice",
        &["init", "--domain", "example.com", "--name", "demo-operator"],
    );
    case(
        "bad group",
        &[
            "create",
            "api",
            "--group",
            "Cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
        ],
    );
    case(
        "bad version",
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "1",
            "--kind",
            "Memcached",
        ],
    );
    case(
        "bad kind",
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "memcached",
        ],
    );
    case(
        "keyword kind",
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Type",
        ],
    );
    case(
        "controller for a missing API",
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--resource=false",
        ],
    );
    case("bundle without version", &["bundle"]);
    insta::assert_snapshot!("errors", out);
}
