//! End-to-end with the real `kubectl` (the default one and the old 1.27 one): `kubectl get
//! flowschemas,prioritylevelconfigurations` on a fresh server lists upstream's mandatory and
//! suggested API priority and fairness configuration as a real cluster lists it: the same
//! objects, columns and cells, FlowSchemas by matching precedence (upstream's printer sorts
//! them), none dangling.
//!
//! Every step runs for each kubectl found; all failing steps are collected and reported
//! together.

mod support;

use std::path::Path;

use support::{Failures, Options, Run, Server, Storage, for_each_kubectl};

/// The FlowSchema rows a real cluster prints, in its order: name, priority level, matching
/// precedence, distinguisher method, missing priority level.
const SCHEMA_ROWS: [[&str; 5]; 13] = [
    ["exempt", "exempt", "1", "<none>", "False"],
    ["probes", "exempt", "2", "<none>", "False"],
    [
        "system-leader-election",
        "leader-election",
        "100",
        "ByUser",
        "False",
    ],
    [
        "endpoint-controller",
        "workload-high",
        "150",
        "ByUser",
        "False",
    ],
    [
        "workload-leader-election",
        "leader-election",
        "200",
        "ByUser",
        "False",
    ],
    ["system-node-high", "node-high", "400", "ByUser", "False"],
    ["system-nodes", "system", "500", "ByUser", "False"],
    [
        "kube-controller-manager",
        "workload-high",
        "800",
        "ByNamespace",
        "False",
    ],
    [
        "kube-scheduler",
        "workload-high",
        "800",
        "ByNamespace",
        "False",
    ],
    [
        "kube-system-service-accounts",
        "workload-high",
        "900",
        "ByNamespace",
        "False",
    ],
    [
        "service-accounts",
        "workload-low",
        "9000",
        "ByUser",
        "False",
    ],
    [
        "global-default",
        "global-default",
        "9900",
        "ByUser",
        "False",
    ],
    ["catch-all", "catch-all", "10000", "ByUser", "False"],
];

/// The PriorityLevelConfiguration rows, by name: name, type, nominal concurrency shares,
/// queues, hand size, queue length limit.
const LEVEL_ROWS: [[&str; 6]; 8] = [
    ["catch-all", "Limited", "5", "<none>", "<none>", "<none>"],
    ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"],
    ["global-default", "Limited", "20", "128", "6", "50"],
    ["leader-election", "Limited", "10", "16", "4", "50"],
    ["node-high", "Limited", "40", "64", "6", "50"],
    ["system", "Limited", "30", "64", "6", "50"],
    ["workload-high", "Limited", "40", "128", "6", "50"],
    ["workload-low", "Limited", "100", "128", "6", "50"],
];

/// The rows of `stdout` whose first cell starts with `prefix`, split into cells, without the
/// prefix and without the AGE cell at `age`.
fn rows(stdout: &str, prefix: &str, age: usize) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|l| {
            l.split_whitespace()
                .enumerate()
                .filter(|(i, _)| *i != age)
                .map(|(_, c)| c.to_string())
                .collect()
        })
        .collect()
}

/// The header rows' column names.
fn headers(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| l.starts_with("NAME"))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn owned<const N: usize>(rows: &[[&str; N]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
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

    let out = run.ok_contains(
        &["get", "flowschemas,prioritylevelconfigurations"],
        &[
            "flowschema.flowcontrol.apiserver.k8s.io/exempt",
            "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/workload-low",
        ],
    );
    let want_headers: Vec<Vec<String>> = [
        &[
            "NAME",
            "PRIORITYLEVEL",
            "MATCHINGPRECEDENCE",
            "DISTINGUISHERMETHOD",
            "AGE",
            "MISSINGPL",
        ][..],
        &[
            "NAME",
            "TYPE",
            "NOMINALCONCURRENCYSHARES",
            "QUEUES",
            "HANDSIZE",
            "QUEUELENGTHLIMIT",
            "AGE",
        ],
    ]
    .iter()
    .map(|h| h.iter().map(|c| c.to_string()).collect())
    .collect();
    run.expect(
        headers(&out.stdout) == want_headers,
        &format!("headers {want_headers:?}"),
        &out,
    );
    let schemas = rows(&out.stdout, "flowschema.flowcontrol.apiserver.k8s.io/", 4);
    run.expect(
        schemas == owned(&SCHEMA_ROWS),
        &format!("FlowSchema rows (AGE left out) {SCHEMA_ROWS:?}"),
        &out,
    );
    let levels = rows(
        &out.stdout,
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/",
        6,
    );
    run.expect(
        levels == owned(&LEVEL_ROWS),
        &format!("PriorityLevelConfiguration rows (AGE left out) {LEVEL_ROWS:?}"),
        &out,
    );

    // One kind alone prints bare names; the annotation the ensurer keeps is there.
    let out = run.ok_contains(&["get", "flowschemas"], &["exempt"]);
    run.expect(
        out.stdout
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("exempt ")),
        "the first FlowSchema row is `exempt` (precedence 1)",
        &out,
    );
    run.jsonpath(
        &["get", "prioritylevelconfiguration", "workload-high"],
        "{.metadata.annotations.apf\\.kubernetes\\.io/autoupdate-spec}",
        "true",
    );
    Ok(())
}

#[test]
fn kubectl_lists_the_flow_control_configuration_as_a_cluster() {
    for_each_kubectl(
        "kubectl_lists_the_flow_control_configuration_as_a_cluster",
        scenario,
    );
}
