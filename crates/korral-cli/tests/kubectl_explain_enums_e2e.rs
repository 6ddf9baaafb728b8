//! End-to-end with the real `kubectl` (the default one and the old 1.27 one): `kubectl explain`
//! lists the values of an enumerated field of a built-in kind as it does against a cluster:
//! every kubectl prints upstream's "Possible enum values" paragraph of the description, and
//! kubectl 1.30 and later also its `ENUM:` section (long view of one field) and `enum:` line
//! (beside a field in the list of fields).
//!
//! Every step runs for each kubectl found; all failing steps are collected and reported
//! together.

mod support;

use std::path::Path;

use support::{Failures, Options, Run, Server, Storage, for_each_kubectl};

/// The first kubectl minor version whose `explain` prints the `ENUM:` section.
const ENUM_SECTION_SINCE: u32 = 30;

/// The client's minor version (`kubectl version --client -o json`), if it can be read.
fn client_minor(run: &mut Run<'_>) -> Option<u32> {
    let out = run.k(&["version", "--client", "-o", "json"]);
    let version: serde_json::Value = serde_json::from_str(&out.stdout).ok()?;
    let minor = version["clientVersion"]["minor"].as_str()?;
    minor.trim_end_matches('+').parse().ok()
}

fn scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: dir.path().join("kubeconfig"),
    })?;
    let mut run = Run {
        kubectl,
        server: &server,
        tag: kubectl.display().to_string(),
        failures,
    };
    let minor = client_minor(&mut run);
    let version = run.k(&["version", "--client"]);
    run.expect(
        minor.is_some(),
        "`kubectl version --client -o json` names a minor version",
        &version,
    );
    let enum_section = minor.is_some_and(|m| m >= ENUM_SECTION_SINCE);

    // core/v1: one field's long view.
    let out = run.ok_contains(
        &["explain", "pod.spec.restartPolicy"],
        &[
            "FIELD: restartPolicy <string>",
            "Restart policy for all containers within the pod.",
            "Possible enum values:\n     - `\"Always\"`\n     - `\"Never\"`\n     - `\"OnFailure\"`",
        ],
    );
    if enum_section {
        run.expect(
            out.stdout
                .contains("ENUM:\n    Always\n    Never\n    OnFailure\n"),
            "an ENUM: section listing Always, Never, OnFailure",
            &out,
        );
    }
    run.ok_contains(
        &["explain", "pod.spec.containers.imagePullPolicy"],
        &[
            " - `\"IfNotPresent\"` means that kubelet pulls if the image isn't present on",
            " - `\"Never\"` means that kubelet never pulls an image",
        ],
    );

    // apps/v1: the long view of one field, and the enum beside a field in a list of fields.
    let out = run.ok_contains(
        &["explain", "statefulset.spec.podManagementPolicy"],
        &[
            "FIELD: podManagementPolicy <string>",
            " - `\"OrderedReady\"` will create pods in strictly increasing order",
            " - `\"Parallel\"` will create and delete pods as soon as",
        ],
    );
    if enum_section {
        run.expect(
            out.stdout
                .contains("ENUM:\n    OrderedReady\n    Parallel\n"),
            "an ENUM: section listing OrderedReady, Parallel",
            &out,
        );
    }
    let out = run.ok_contains(
        &["explain", "deployment.spec.strategy"],
        &[
            "Possible enum values:\n     - `\"Recreate\"` Kill all existing pods before creating new ones.",
        ],
    );
    if enum_section {
        run.expect(
            out.stdout.contains("enum: Recreate, RollingUpdate\n"),
            "`type` listed with `enum: Recreate, RollingUpdate`",
            &out,
        );
    }
    // A field that is no enum upstream shows none.
    let out = run.ok_contains(
        &["explain", "deployment.spec.replicas"],
        &["FIELD: replicas <integer>"],
    );
    run.expect(
        !out.stdout.contains("ENUM:") && !out.stdout.contains("Possible enum values"),
        "no enum for deployment.spec.replicas",
        &out,
    );
    Ok(())
}

#[test]
fn kubectl_explain_lists_enum_values_of_builtin_fields() {
    for_each_kubectl(
        "kubectl_explain_lists_enum_values_of_builtin_fields",
        scenario,
    );
}
