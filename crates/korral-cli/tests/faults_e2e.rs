//! End-to-end: `korral apiserver --faults FILE` and `korral up --faults FILE` refuse a bad
//! file at start naming the field; with a good file the real `kubectl` sees the injected
//! faults.

mod support;

use std::path::Path;
use std::time::Duration;

use support::{KORRAL, Options, Server, Storage, kubectl_binaries, run_with_timeout};

const BAD: &str = r#"seed: 1
rules:
- match: {resources: [configmaps]}
  error: {code: 429}
- match: {verbs: [get]}
  probability: 1.5
  latency: {fixed: 5ms}
"#;

const GOOD: &str = r#"seed: 42
rules:
- name: broken-gets
  match: {verbs: [get], resources: [configmaps], namespaces: [default]}
  error: {code: 500, message: "disk on fire"}
- name: throttled-list
  match: {verbs: [list], resources: [configmaps]}
  nth: 1
  error: {code: 429, retryAfterSeconds: 1}
- name: slow
  latency: {uniform: {min: 1ms, max: 3ms}}
"#;

#[test]
fn a_bad_fault_file_stops_apiserver_and_up_at_start_naming_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("faults.yaml");
    std::fs::write(&file, BAD).expect("write");
    let kubeconfig = dir.path().join("kubeconfig");
    for command in ["apiserver", "up"] {
        let args: Vec<String> = [
            command,
            "--in-memory",
            "--port",
            "0",
            "--kubeconfig",
            &kubeconfig.display().to_string(),
            "--faults",
            &file.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out =
            run_with_timeout(Path::new(KORRAL), &args, &[], Duration::from_secs(60)).expect("run");
        assert!(
            !out.timed_out() && !out.success(),
            "must exit non-zero at once: {}",
            out.describe()
        );
        assert!(
            out.stderr
                .contains("rules[1].probability: must be between 0 and 1, got 1.5"),
            "{}",
            out.describe()
        );
        assert!(
            !out.stdout.contains("listening on"),
            "must not serve: {}",
            out.describe()
        );
    }
    // A missing file is refused too.
    let args: Vec<String> = [
        "apiserver",
        "--in-memory",
        "--faults",
        "/nonexistent/faults.yaml",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out =
        run_with_timeout(Path::new(KORRAL), &args, &[], Duration::from_secs(60)).expect("run");
    assert!(
        !out.success() && out.stderr.contains("/nonexistent/faults.yaml"),
        "{}",
        out.describe()
    );
}

#[test]
fn kubectl_sees_the_injected_faults() {
    let Some(kubectl) = kubectl_binaries().into_iter().next() else {
        eprintln!("skipped: kubectl not found");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("faults.yaml");
    std::fs::write(&file, GOOD).expect("write");
    let server = Server::start_with_args(
        Options {
            storage: Storage::InMemory,
            port: 0,
            kubeconfig: dir.path().join("kubeconfig"),
        },
        &["--faults", &file.display().to_string()],
    )
    .expect("server");
    assert!(
        server.stdout().contains(&format!(
            "fault injection: 3 rule(s) from {}",
            file.display()
        )),
        "{}",
        server.stdout()
    );

    let out = server
        .kubectl(
            &kubectl,
            &["create", "configmap", "e2e", "--from-literal=k=v"],
        )
        .expect("kubectl");
    assert!(out.success(), "creates are untouched: {}", out.describe());

    let out = server
        .kubectl(&kubectl, &["get", "configmap", "e2e", "-o", "name"])
        .expect("kubectl");
    assert!(!out.success(), "the get fails: {}", out.describe());
    assert!(
        out.stderr
            .contains("Error from server (InternalError): Internal error occurred: disk on fire"),
        "{}",
        out.describe()
    );

    // The first list is throttled with Retry-After: 1; kubectl waits and retries.
    let out = server
        .kubectl(&kubectl, &["get", "configmaps", "-o", "name"])
        .expect("kubectl");
    assert!(
        out.success() && out.stdout.contains("configmap/e2e"),
        "kubectl retries after Retry-After: {}",
        out.describe()
    );

    let out = server
        .kubectl(&kubectl, &["get", "--raw", "/metrics"])
        .expect("kubectl");
    assert!(out.success(), "{}", out.describe());
    for line in [
        "korral_apiserver_injected_faults_total{rule=\"broken-gets\",action=\"error\",code=\"500\"} 1",
        "korral_apiserver_injected_faults_total{rule=\"throttled-list\",action=\"error\",code=\"429\"} 1",
    ] {
        assert!(out.stdout.contains(line), "{line}\n{}", out.describe());
    }
    assert!(
        out.stdout
            .contains("korral_apiserver_injected_faults_total{rule=\"slow\",action=\"latency\""),
        "{}",
        out.describe()
    );
}

/// `korral up --faults FILE` runs its control plane with the file's faults: with every status
/// write of the sample refused (503), the Memcached sample cannot report its pods and `up`
/// times out, where without faults it converges (tests/up_e2e.rs).
#[test]
fn up_serves_with_the_file_s_faults() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("faults.yaml");
    std::fs::write(
        &file,
        "rules:\n- name: no-status\n  match: {resources: [memcacheds], subresources: [status]}\n  error: {code: 503}\n",
    )
    .expect("write");
    let args: Vec<String> = [
        "up",
        "--in-memory",
        "--port",
        "0",
        "--kubeconfig",
        &dir.path().join("kubeconfig").display().to_string(),
        "--faults",
        &file.display().to_string(),
        "--sample",
        "memcached",
        "--exit-after-converge",
        "--timeout",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out =
        run_with_timeout(Path::new(KORRAL), &args, &[], Duration::from_secs(120)).expect("run");
    assert!(
        out.stdout.contains(&format!(
            "fault injection: 1 rule(s) from {}",
            file.display()
        )),
        "{}",
        out.describe()
    );
    assert!(!out.timed_out() && !out.success(), "{}", out.describe());
    assert!(
        out.stderr
            .contains("memcached-sample did not converge within 3s"),
        "{}",
        out.describe()
    );
}
