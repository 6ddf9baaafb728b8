//! Snapshot tests of `korral create webhook` and of `korral create api` for a second version
//! of a kind: the files written, the webhook module, the conversion module and its spokes, the
//! wiring into the binary, `config/webhook`, and the errors.

mod scaffold_common;

use std::path::Path;

use scaffold_common::{korral, tree};

fn init_with_memcached(dir: &Path) {
    for args in [
        &[
            "init",
            "--domain",
            "example.com",
            "--name",
            "memcached-operator",
        ][..],
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
        ][..],
    ] {
        let run = korral(dir, args);
        assert_eq!(run.code, Some(0), "{}", run.text(dir));
    }
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn create_webhook_then_a_second_version() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    init_with_memcached(dir);

    // Nothing chosen, an unknown API, and a conversion without another version are refused.
    let nothing = korral(
        dir,
        &[
            "create",
            "webhook",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
        ],
    );
    assert_eq!(nothing.code, Some(1));
    let unknown = korral(
        dir,
        &[
            "create",
            "webhook",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Redis",
            "--defaulting",
        ],
    );
    assert_eq!(unknown.code, Some(1));
    let lonely = korral(
        dir,
        &[
            "create",
            "webhook",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--conversion",
        ],
    );
    assert_eq!(lonely.code, Some(1));
    insta::assert_snapshot!(
        "create_webhook_refusals",
        format!(
            "{}\n{}\n{}",
            nothing.text(dir),
            unknown.text(dir),
            lonely.text(dir)
        )
    );
    let before = tree(dir);

    let webhook = korral(
        dir,
        &[
            "create",
            "webhook",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--defaulting",
            "--programmatic-validation",
        ],
    );
    assert_eq!(webhook.code, Some(0), "{}", webhook.text(dir));
    assert_ne!(tree(dir), before);
    insta::assert_snapshot!("create_webhook_output", webhook.text(dir));
    insta::assert_snapshot!(
        "create_webhook_module",
        read(dir, "src/webhooks/memcached_v1.rs")
    );
    insta::assert_snapshot!("create_webhook_main", read(dir, "src/main.rs"));
    insta::assert_snapshot!(
        "create_webhook_config",
        format!(
            "{}---\n{}---\n{}",
            read(dir, "config/webhook/manifests.yaml"),
            read(dir, "config/webhook/service.yaml"),
            read(dir, "config/default/kustomization.yaml")
        )
    );
    // The same webhook again is refused.
    let again = korral(
        dir,
        &[
            "create",
            "webhook",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--defaulting",
        ],
    );
    assert_eq!(again.code, Some(1), "{}", again.text(dir));

    // A second version: its types, and its conversion through v1 (the hub).
    let v2 = korral(
        dir,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v2",
            "--kind",
            "Memcached",
        ],
    );
    assert_eq!(v2.code, Some(0), "{}", v2.text(dir));
    insta::assert_snapshot!("create_api_second_version_output", v2.text(dir));
    // A third one becomes another spoke of the same hub.
    let v3 = korral(
        dir,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v3",
            "--kind",
            "Memcached",
        ],
    );
    assert_eq!(v3.code, Some(0), "{}", v3.text(dir));
    insta::assert_snapshot!(
        "create_api_conversion_module",
        read(dir, "src/webhooks/memcached_conversion.rs")
    );
    insta::assert_snapshot!("create_webhook_mod_rs", read(dir, "src/webhooks/mod.rs"));

    // cert-manager instead of self-managed certificates: config/certmanager, listed in
    // config/default, and the operator told so.
    let cert_manager = korral(
        dir,
        &[
            "create",
            "webhook",
            "--group",
            "cache",
            "--version",
            "v2",
            "--kind",
            "Memcached",
            "--programmatic-validation",
            "--cert-manager",
        ],
    );
    assert_eq!(cert_manager.code, Some(0), "{}", cert_manager.text(dir));
    insta::assert_snapshot!(
        "create_webhook_cert_manager",
        format!(
            "{}---\n{}---\n{}",
            read(dir, "config/certmanager/issuer.yaml"),
            read(dir, "config/certmanager/certificate.yaml"),
            read(dir, "config/default/kustomization.yaml")
        )
    );
    assert!(
        read(dir, "src/webhooks/mod.rs").contains("pub const SELF_MANAGED_CERTS: bool = false;")
    );
    insta::assert_snapshot!("create_webhook_files", tree(dir));
}
