//! End-to-end with the real `kubectl` (the default one and the old 1.27 one) on the built-in
//! groups networking.k8s.io, policy, scheduling.k8s.io and storage.k8s.io: the imperative
//! `create ingress|pdb|priorityclass`, `get ing,pdb,pc,sc` through short names, the columns
//! upstream prints, and refusals as upstream words them.
//!
//! Every step runs for each kubectl found; all failing steps are collected and reported
//! together.

mod support;

use std::path::Path;

use support::{CmdOutput, Failures, Options, Run, Server, Storage, for_each_kubectl};

const STORAGE_CLASS: &str = r#"apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: e2e-sc}
provisioner: example.com/disk
"#;

/// The header rows' column names (every table of a multi-kind `get`).
fn headers(out: &CmdOutput) -> Vec<Vec<String>> {
    out.stdout
        .lines()
        .filter(|l| l.starts_with("NAME"))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: dir.path().join("kubeconfig"),
    })?;
    let sc = dir.path().join("sc.yaml");
    std::fs::write(&sc, STORAGE_CLASS)?;
    let sc = sc.display().to_string();
    let mut run = Run {
        kubectl,
        server: &server,
        tag: kubectl.display().to_string(),
        failures,
    };

    run.ok_contains(
        &[
            "create",
            "ingress",
            "web",
            "--rule=foo.example.com/bar*=web:80",
            "--class=nginx",
        ],
        &["ingress.networking.k8s.io/web created"],
    );
    run.jsonpath(
        &["get", "ing", "web"],
        "{.spec.rules[0].http.paths[0].pathType}",
        "Prefix",
    );
    run.ok_contains(
        &[
            "create",
            "pdb",
            "web",
            "--selector=app=web",
            "--min-available=1",
        ],
        &["poddisruptionbudget.policy/web created"],
    );
    run.fails_with(
        &[
            "create",
            "pdb",
            "both",
            "--selector=app=web",
            "--min-available=50%",
            "--max-unavailable=1",
        ],
        &["min-available and max-unavailable cannot be both specified"],
    );
    run.ok_contains(
        &["create", "priorityclass", "high", "--value=1000"],
        &["priorityclass.scheduling.k8s.io/high created"],
    );
    run.jsonpath(
        &["get", "pc", "high"],
        "{.preemptionPolicy}",
        "PreemptLowerPriority",
    );
    run.fails_with(
        &["create", "priorityclass", "huge", "--value=2000000000"],
        &["maximum allowed value of a user defined priority is 1000000000"],
    );
    run.fails_with(
        &["delete", "pc", "system-node-critical"],
        &["this is a system priority class and cannot be deleted"],
    );
    run.ok_contains(
        &["apply", "-f", &sc],
        &["storageclass.storage.k8s.io/e2e-sc"],
    );

    let out = run.ok_contains(
        &["get", "ing,pdb,pc,sc"],
        &[
            "ingress.networking.k8s.io/web",
            "foo.example.com",
            "poddisruptionbudget.policy/web",
            "priorityclass.scheduling.k8s.io/system-cluster-critical",
            "2000001000",
            "storageclass.storage.k8s.io/e2e-sc",
            "example.com/disk",
        ],
    );
    let want: Vec<Vec<String>> = [
        &["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"][..],
        &[
            "NAME",
            "MIN",
            "AVAILABLE",
            "MAX",
            "UNAVAILABLE",
            "ALLOWED",
            "DISRUPTIONS",
            "AGE",
        ],
        &["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"],
        &[
            "NAME",
            "PROVISIONER",
            "RECLAIMPOLICY",
            "VOLUMEBINDINGMODE",
            "ALLOWVOLUMEEXPANSION",
            "AGE",
        ],
    ]
    .iter()
    .map(|h| h.iter().map(|s| s.to_string()).collect())
    .collect();
    let got = headers(&out);
    run.expect(
        got == want,
        &format!("`kubectl get ing,pdb,pc,sc` headers {want:?}"),
        &out,
    );

    // The `api-extensions` category names what extends the API (the local APIServices here).
    run.ok_contains(
        &["get", "api-extensions"],
        &["apiservice.apiregistration.k8s.io/v1.apps"],
    );
    // The default ServiceCIDR and the `kubernetes` Service's IPAddress.
    run.ok_contains(&["get", "servicecidr"], &["kubernetes", "10.96.0.0/12"]);
    run.ok_contains(&["get", "ipaddress"], &["10.96.0.1", "services"]);
    // v1 Endpoints answer with upstream's deprecation warning.
    let out = run.k(&["get", "endpoints", "-n", "default"]);
    run.expect(
        out.success()
            && out.stderr.contains(
                "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice",
            ),
        "`kubectl get endpoints` warns of the v1 Endpoints deprecation",
        &out,
    );
    Ok(())
}

#[test]
fn kubectl_creates_and_lists_builtin_groups() {
    for_each_kubectl("kubectl_creates_and_lists_builtin_groups", scenario);
}
