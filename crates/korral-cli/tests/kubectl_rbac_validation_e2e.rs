//! End-to-end with the real `kubectl` (the default one and the old 1.27 one) on
//! rbac.authorization.k8s.io validation and tables: `create role|rolebinding|clusterrolebinding`,
//! `get rolebindings` (`NAME ROLE AGE`, wide `USERS GROUPS SERVICEACCOUNTS`), `get roles`
//! (`NAME CREATED AT`), and refusals as upstream words them (bad rules, a changed roleRef).
//!
//! Every step runs for each kubectl found; all failing steps are collected and reported
//! together.

mod support;

use std::path::Path;

use support::{CmdOutput, Failures, Options, Run, Server, Storage, for_each_kubectl};

const BAD_ROLES: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: no-verbs, namespace: default}
rules:
- apiGroups: [""]
  resources: [pods]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: urls, namespace: default}
rules:
- nonResourceURLs: [/healthz]
  verbs: [get]
"#;

/// The words of the first line starting with `NAME`.
fn header(out: &CmdOutput) -> Vec<String> {
    out.stdout
        .lines()
        .find(|l| l.starts_with("NAME"))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// The words of the row of `name`.
fn row(out: &CmdOutput, name: &str) -> Vec<String> {
    out.stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

fn scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: dir.path().join("kubeconfig"),
    })?;
    let bad = dir.path().join("bad-roles.yaml");
    std::fs::write(&bad, BAD_ROLES)?;
    let bad = bad.display().to_string();
    let mut run = Run {
        kubectl,
        server: &server,
        tag: kubectl.display().to_string(),
        failures,
    };

    run.ok_contains(
        &[
            "create",
            "role",
            "pod-reader",
            "--verb=get,list",
            "--resource=pods",
        ],
        &["role.rbac.authorization.k8s.io/pod-reader created"],
    );
    run.ok_contains(
        &[
            "create",
            "rolebinding",
            "readers",
            "--role=pod-reader",
            "--user=alice",
            "--user=bob",
            "--group=devs",
            "--serviceaccount=default:builder",
        ],
        &["rolebinding.rbac.authorization.k8s.io/readers created"],
    );
    run.ok_contains(
        &[
            "create",
            "clusterrolebinding",
            "ops-view",
            "--clusterrole=view",
            "--group=ops",
        ],
        &["clusterrolebinding.rbac.authorization.k8s.io/ops-view created"],
    );

    // Tables as upstream prints them.
    let out = run.k(&["get", "rolebindings"]);
    let ok = out.success()
        && header(&out) == ["NAME", "ROLE", "AGE"]
        && row(&out, "readers").get(1).map(String::as_str) == Some("Role/pod-reader");
    run.expect(
        ok,
        "`get rolebindings`: NAME ROLE AGE, Role/pod-reader",
        &out,
    );
    let out = run.k(&["get", "rolebindings", "-o", "wide"]);
    let ok = out.success()
        && header(&out) == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
        && row(&out, "readers").get(3..)
            == Some(&["alice,", "bob", "devs", "default/builder"].map(String::from)[..]);
    run.expect(
        ok,
        "`get rolebindings -o wide`: users, groups and service accounts",
        &out,
    );
    let out = run.k(&["get", "clusterrolebinding", "ops-view", "-o", "wide"]);
    let ok = out.success()
        && header(&out) == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
        && row(&out, "ops-view").get(1).map(String::as_str) == Some("ClusterRole/view")
        && row(&out, "ops-view").last().map(String::as_str) == Some("ops");
    run.expect(ok, "`get clusterrolebinding -o wide`", &out);
    let out = run.k(&["get", "roles"]);
    let ok = out.success()
        && header(&out) == ["NAME", "CREATED", "AT"]
        && !row(&out, "pod-reader").is_empty();
    run.expect(ok, "`get roles`: NAME CREATED AT", &out);

    // Refusals as upstream words them.
    run.fails_with(
        &[
            "patch",
            "rolebinding",
            "readers",
            "--type=merge",
            "-p",
            r#"{"roleRef":{"name":"other"}}"#,
        ],
        &[
            r#"The RoleBinding "readers" is invalid: roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: cannot change roleRef"#,
        ],
    );
    run.jsonpath(
        &["get", "rolebinding", "readers"],
        "{.roleRef.name}",
        "pod-reader",
    );
    run.fails_with(
        &["apply", "-f", &bad],
        &[
            r#"Role.rbac.authorization.k8s.io "no-verbs" is invalid: rules[0].verbs: Required value: verbs must contain at least one value"#,
            r#"Role.rbac.authorization.k8s.io "urls" is invalid: rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs"#,
        ],
    );
    Ok(())
}

#[test]
fn kubectl_rbac_validation_and_tables() {
    for_each_kubectl("kubectl_rbac_validation_and_tables", scenario);
}
