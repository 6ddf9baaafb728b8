//! End to end: `korral apiserver --authorization rbac` with the real kubectl (the default one
//! and the old 1.27 client): `auth can-i` with `--as`, Forbidden messages, `auth whoami`,
//! `create token` and requests with a service account token.

mod support;

use std::path::Path;

use support::{CmdOutput, Failures, Options, Server, Storage, kubectl_binaries};

const SA_USER: &str = "system:serviceaccount:e2e:robot";
const AS: &str = "--as=system:serviceaccount:e2e:robot";

struct Run<'a> {
    server: &'a Server,
    kubectl: &'a Path,
    failures: &'a mut Failures,
}

impl Run<'_> {
    fn k(&mut self, args: &[&str]) -> CmdOutput {
        match self.server.kubectl(self.kubectl, args) {
            Ok(out) => out,
            Err(e) => {
                self.failures.add(format!(
                    "[{}] running kubectl {args:?}: {e:#}",
                    self.kubectl.display()
                ));
                CmdOutput {
                    command: format!("kubectl {args:?}"),
                    status: None,
                    stdout: String::new(),
                    stderr: String::new(),
                }
            }
        }
    }

    fn check(&mut self, ok: bool, what: &str, out: &CmdOutput) {
        let kubectl = self.kubectl.display().to_string();
        self.failures
            .check(ok, || format!("[{kubectl}] {what}\n{}", out.describe()));
    }

    /// Runs a command that must succeed.
    fn ok(&mut self, args: &[&str]) -> CmdOutput {
        let out = self.k(args);
        self.check(out.success(), "expected success", &out);
        out
    }

    /// `kubectl auth can-i ...` must print `answer` (and exit 0 for yes, 1 for no).
    fn can_i(&mut self, args: &[&str], answer: &str) {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        let out = self.k(&all);
        let exit_ok = if answer == "yes" {
            out.success()
        } else {
            out.status.and_then(|s| s.code()) == Some(1)
        };
        self.check(
            out.stdout.trim() == answer && exit_ok,
            &format!("expected `{answer}`"),
            &out,
        );
    }

    /// A command that must fail with exactly this server error line on stderr.
    fn forbidden(&mut self, args: &[&str], message: &str) {
        let out = self.k(args);
        let line = format!("Error from server (Forbidden): {message}");
        self.check(
            !out.success() && out.stderr.lines().any(|l| l.trim() == line),
            &format!("expected stderr line `{line}`"),
            &out,
        );
    }
}

fn scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start_with_args(
        Options {
            storage: Storage::InMemory,
            port: 0,
            kubeconfig: dir.path().join("kubeconfig"),
        },
        &["--authorization", "rbac"],
    )?;
    let mut run = Run {
        server: &server,
        kubectl,
        failures,
    };
    // Setup as the admin (system:masters), with kubectl's own RBAC commands.
    run.ok(&["create", "namespace", "e2e"]);
    run.ok(&["create", "serviceaccount", "robot", "-n", "e2e"]);
    run.ok(&[
        "create",
        "role",
        "cm-reader",
        "--verb=get,list,watch",
        "--resource=configmaps",
        "-n",
        "e2e",
    ]);
    run.ok(&[
        "create",
        "rolebinding",
        "robot-reads",
        "--role=cm-reader",
        "--serviceaccount=e2e:robot",
        "-n",
        "e2e",
    ]);
    run.ok(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=a=b",
        "-n",
        "e2e",
    ]);

    // auth can-i, impersonating the service account.
    run.can_i(&["list", "configmaps", "-n", "e2e", AS], "yes");
    run.can_i(&["get", "configmaps/settings", "-n", "e2e", AS], "yes");
    run.can_i(&["delete", "configmaps", "-n", "e2e", AS], "no");
    run.can_i(&["list", "configmaps", "-n", "default", AS], "no");
    run.can_i(&["list", "pods", "-n", "e2e", AS], "no");
    run.can_i(&["list", "configmaps", "--all-namespaces", AS], "no");
    run.can_i(&["create", "deployments.apps", "-n", "e2e"], "yes");
    let out = run.k(&["auth", "can-i", "--list", "-n", "e2e", AS]);
    run.check(
        out.success()
            && out
                .stdout
                .lines()
                .any(|l| l.starts_with("configmaps ") && l.contains("[get list watch]")),
        "can-i --list shows the role's configmaps rule",
        &out,
    );

    // Denied requests answer with upstream's Forbidden messages and change nothing.
    run.forbidden(
        &["get", "pods", "-n", "e2e", AS],
        &format!(
            "pods is forbidden: User \"{SA_USER}\" cannot list resource \"pods\" in API group \"\" in the namespace \"e2e\""
        ),
    );
    run.forbidden(
        &["get", "configmaps", "-n", "default", AS],
        &format!(
            "configmaps is forbidden: User \"{SA_USER}\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        ),
    );
    run.forbidden(
        &["delete", "configmap", "settings", "-n", "e2e", AS],
        &format!(
            "configmaps \"settings\" is forbidden: User \"{SA_USER}\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"e2e\""
        ),
    );
    run.forbidden(
        &["get", "namespaces", AS],
        &format!(
            "namespaces is forbidden: User \"{SA_USER}\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
        ),
    );
    let out = run.ok(&[
        "get",
        "configmap",
        "settings",
        "-n",
        "e2e",
        "-o",
        "jsonpath={.data.a}",
    ]);
    run.check(
        out.stdout == "b",
        "the denied delete left the configmap",
        &out,
    );
    let out = run.ok(&["get", "configmaps", "-n", "e2e", AS, "-o", "name"]);
    run.check(
        out.stdout.lines().any(|l| l == "configmap/settings"),
        "the service account lists configmaps in its namespace",
        &out,
    );

    // A real service account token from TokenRequest.
    let token = run.ok(&["create", "token", "robot", "-n", "e2e"]);
    let token = token.stdout.trim().to_string();
    run.check(
        !token.is_empty(),
        "create token prints a token",
        &CmdOutput {
            command: "kubectl create token".into(),
            status: None,
            stdout: token.clone(),
            stderr: String::new(),
        },
    );
    let with_token = format!("--token={token}");
    let out = run.ok(&["get", "configmaps", "-n", "e2e", &with_token, "-o", "name"]);
    run.check(
        out.stdout.lines().any(|l| l == "configmap/settings"),
        "the token authenticates as the service account",
        &out,
    );
    run.forbidden(
        &["get", "secrets", "-n", "e2e", &with_token],
        &format!(
            "secrets is forbidden: User \"{SA_USER}\" cannot list resource \"secrets\" in API group \"\" in the namespace \"e2e\""
        ),
    );
    // Impersonation is itself authorized: the service account may not act as someone else.
    run.forbidden(
        &["get", "configmaps", "-n", "e2e", &with_token, "--as=alice"],
        &format!(
            "users.authentication.k8s.io \"alice\" is forbidden: User \"{SA_USER}\" cannot impersonate resource \"users\" in API group \"authentication.k8s.io\" at the cluster scope"
        ),
    );
    let out = run.k(&[
        "get",
        "configmaps",
        "-n",
        "e2e",
        "--token=not-a-valid-token",
    ]);
    run.check(
        !out.success() && out.stderr.contains("Unauthorized"),
        "a bad token is 401",
        &out,
    );

    // auth whoami (experimental in 1.27, GA since 1.28).
    let whoami = [
        "auth",
        "whoami",
        AS,
        "-o",
        "jsonpath={.status.userInfo.username}",
    ];
    let out = run.k(&whoami);
    if out.stderr.contains("authentication.k8s.io/v1beta1 API") {
        // kubectl 1.27 only asks for the pre-GA v1alpha1/v1beta1 SelfSubjectReview, which the
        // server does not serve (it serves the GA v1 only).
        run.check(
            !out.success(),
            "old whoami reports the missing beta API",
            &out,
        );
    } else {
        run.check(
            out.success() && out.stdout.trim() == SA_USER,
            "whoami names the impersonated service account",
            &out,
        );
    }
    Ok(())
}

#[test]
fn kubectl_rbac() {
    let kubectls = kubectl_binaries();
    if kubectls.is_empty() {
        eprintln!(
            "skipped: kubectl not found (neither `kubectl` on PATH nor {})",
            support::OLD_KUBECTL
        );
        return;
    }
    let mut failures = Failures::default();
    for kubectl in &kubectls {
        if let Err(e) = scenario(kubectl, &mut failures) {
            failures.add(format!("[{}] scenario aborted: {e:#}", kubectl.display()));
        }
    }
    failures.finish("kubectl_rbac");
}
