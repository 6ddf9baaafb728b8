//! End-to-end with the real `kubectl`: the typed clients of `kubectl create` (kubectl ≥ 1.32)
//! ask for protobuf answers (`Accept: application/vnd.kubernetes.protobuf, application/json`)
//! and get them, for objects and for `Status` errors; the commands work as against a cluster.
//! `-v=8` shows what kubectl sent and received.
//!
//! Every step runs for each kubectl found; all failing steps are collected and reported
//! together.

mod support;

use std::path::Path;

use support::{Failures, Options, Run, Server, Storage, for_each_kubectl};

/// The protobuf media type.
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Whether a `-v=8` transcript shows a protobuf request `Accept` and a protobuf answer.
fn protobuf_both_ways(stderr: &str) -> (bool, bool) {
    let asked = stderr
        .lines()
        .any(|l| l.contains("Accept:") && l.contains(PROTOBUF));
    let answered = stderr
        .lines()
        .any(|l| l.contains("Content-Type:") && l.contains(PROTOBUF));
    (asked, answered)
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
    let mut asked_any = false;
    for (args, printed) in [
        (
            &["create", "configmap", "pb", "--from-literal=a=b", "-v=8"][..],
            "configmap/pb created",
        ),
        (
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx",
                "--replicas=2",
                "-v=8",
            ][..],
            "deployment.apps/web created",
        ),
        (
            &[
                "create",
                "service",
                "clusterip",
                "web",
                "--tcp=80:8080",
                "-v=8",
            ][..],
            "service/web created",
        ),
    ] {
        let out = run.ok_contains(args, &[printed]);
        let (asked, answered) = protobuf_both_ways(&out.stderr);
        asked_any |= asked;
        if asked {
            run.expect(answered, "a protobuf answer to a protobuf Accept", &out);
        }
    }
    // What the protobuf answers created reads back as JSON.
    let out = run.ok_contains(
        &["get", "configmap", "pb", "-o", "jsonpath={.data.a}"],
        &["b"],
    );
    run.expect(out.stdout.trim() == "b", "the ConfigMap's data", &out);
    run.ok_contains(
        &[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
        &["2"],
    );

    // An error answered in protobuf: kubectl prints upstream's message from the Status.
    let out = run.k(&["create", "configmap", "pb", "--from-literal=a=b", "-v=8"]);
    run.expect(
        !out.success() && out.stderr.contains("configmaps \"pb\" already exists"),
        "AlreadyExists from the protobuf Status",
        &out,
    );
    if protobuf_both_ways(&out.stderr).0 {
        run.expect(
            protobuf_both_ways(&out.stderr).1,
            "the error Status in protobuf",
            &out,
        );
    }

    // Token requests and access reviews answer their built-in kinds.
    run.ok_contains(
        &["create", "serviceaccount", "pb-sa"],
        &["serviceaccount/pb-sa created"],
    );
    let out = run.k(&["create", "token", "pb-sa", "--duration=1h"]);
    run.expect(
        out.success() && out.stdout.trim().split('.').count() == 3,
        "a JWT from `create token`",
        &out,
    );
    run.ok_contains(&["auth", "can-i", "create", "deployments.apps"], &["yes"]);

    // kubectl 1.32 and later ask for protobuf on `create`.
    let version = run.k(&["version", "--client", "-o", "json"]);
    let minor = serde_json::from_str::<serde_json::Value>(&version.stdout)
        .ok()
        .and_then(|v| {
            v["clientVersion"]["minor"]
                .as_str()
                .and_then(|m| m.trim_end_matches('+').parse::<u32>().ok())
        });
    if minor.is_some_and(|m| m >= 32) {
        run.expect(asked_any, "kubectl ≥ 1.32 asks for protobuf", &version);
    }
    Ok(())
}

#[test]
fn kubectl_typed_clients_get_protobuf_answers() {
    for_each_kubectl("kubectl_typed_clients_get_protobuf_answers", scenario);
}
