//! End-to-end with the real `kubectl` (the default one and the old 1.27 one) on the imperative
//! commands users type against a cluster: `autoscale` (one HPA served as autoscaling/v1 and
//! v2), `set image|env|resources` (quantities read back canonical), `drain` of the simulated
//! node honouring a PodDisruptionBudget and `uncordon`, `explain` on the built-in groups,
//! `diff` (exit codes and dry-run apply), `apply --prune`, `replace --force` and `edit` with
//! `EDITOR` set to a script.
//!
//! Every step runs for each kubectl found; all failing steps are collected and reported
//! together. One server serves both kubectls (each in its own namespace) where their state
//! cannot collide; the drain, which changes the one node, gets a server per kubectl.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::{
    CmdOutput, Failures, KUBECTL_TIMEOUT, Options, Run, Server, Storage, kubectl_binaries, poll,
    run_with_timeout,
};

/// How long the simulation may take to bring workloads up (or back).
const SETTLE: Duration = Duration::from_secs(30);

/// Starts `korral apiserver --in-memory` with `extra` flags, its kubeconfig in `dir`.
fn start(dir: &Path, extra: &[&str]) -> anyhow::Result<Server> {
    Server::start_with_args(
        Options {
            storage: Storage::InMemory,
            port: 0,
            kubeconfig: dir.join("kubeconfig"),
        },
        extra,
    )
}

/// `-n NS` followed by `args`.
fn n<'a>(ns: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    all
}

/// Writes `content` to `file`, runs `kubectl replace --force -f file` (its output must hold
/// `printed`) and checks that the object `kind/name` came back under a new uid.
fn replace_force(
    run: &mut Run<'_>,
    ns: &str,
    file: &std::path::Path,
    content: &str,
    (kind, name): (&str, &str),
    printed: &[&str],
) -> anyhow::Result<()> {
    let uid_of = |run: &mut Run<'_>| {
        json_of(run, &n(ns, &["get", kind, name]))
            .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_string))
    };
    std::fs::write(file, content)?;
    let path = file.display().to_string();
    let old_uid = uid_of(run);
    run.ok_contains(&n(ns, &["replace", "--force", "-f", &path]), printed);
    let new_uid = uid_of(run);
    run.failures.check(
        old_uid.is_some() && new_uid.is_some() && old_uid != new_uid,
        || {
            format!(
                "[{}] replace --force of {kind}/{name} keeps the uid: {old_uid:?} -> {new_uid:?}",
                run.tag
            )
        },
    );
    Ok(())
}

/// Runs `kubectl args -o json` and parses the output (a failure is recorded).
fn json_of(run: &mut Run<'_>, args: &[&str]) -> Option<Value> {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = run.k(&all);
    let parsed = out
        .success()
        .then(|| serde_json::from_str::<Value>(&out.stdout).ok())
        .flatten();
    run.expect(
        parsed.is_some(),
        &format!("`kubectl {}` prints an object", all.join(" ")),
        &out,
    );
    parsed
}

/// Runs `kubectl args -o jsonpath=path` and parses the output as JSON (for paths that print
/// a map or a list).
fn json_at(run: &mut Run<'_>, args: &[&str], path: &str) -> Option<Value> {
    let jp = format!("jsonpath={path}");
    let mut all = args.to_vec();
    all.extend(["-o", jp.as_str()]);
    let out = run.k(&all);
    let parsed = out
        .success()
        .then(|| serde_json::from_str::<Value>(out.stdout.trim()).ok())
        .flatten();
    run.expect(
        parsed.is_some(),
        &format!("`kubectl {}` prints JSON", all.join(" ")),
        &out,
    );
    parsed
}

/// Polls (at most [`SETTLE`]) until `kubectl args -o jsonpath=path` prints `want`.
fn wait_for(run: &mut Run<'_>, args: &[&str], path: &str, want: &str) -> bool {
    run.wait_for(args, path, want, SETTLE)
}

/// Whitespace-separated words of the first stdout line starting with `first`.
fn row(out: &CmdOutput, first: &str) -> Vec<String> {
    out.stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(first))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Runs every kubectl found through `scenario`, collecting failures; skips without kubectl.
fn for_each_kubectl(
    test: &str,
    mut scenario: impl FnMut(&Path, usize, &mut Failures) -> anyhow::Result<()>,
) {
    let kubectls = kubectl_binaries();
    if kubectls.is_empty() {
        eprintln!("skipped: kubectl not found");
        return;
    }
    let mut failures = Failures::default();
    for (i, kubectl) in kubectls.iter().enumerate() {
        if let Err(e) = scenario(kubectl, i, &mut failures) {
            failures.add(format!("[{}] scenario aborted: {e:#}", kubectl.display()));
        }
    }
    failures.finish(test);
}

/// Runs `steps` with every kubectl found against one in-memory server (the kubectl's index
/// and a scratch directory given), collecting failures.
fn with_each_kubectl(
    test: &str,
    mut steps: impl FnMut(&mut Run<'_>, usize, &Path) -> anyhow::Result<()>,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]);
    for_each_kubectl(test, |kubectl, i, failures| {
        let server = server.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
        let mut run = Run {
            kubectl,
            server,
            tag: kubectl.display().to_string(),
            failures,
        };
        steps(&mut run, i, dir.path())
    });
}

fn autoscale_and_set(run: &mut Run<'_>, ns: &str) -> anyhow::Result<()> {
    run.ok_contains(
        &["create", "namespace", ns],
        &[&format!("namespace/{ns} created")],
    );
    run.ok_contains(
        &n(
            ns,
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx:1.25",
                "--replicas=2",
            ],
        ),
        &["deployment.apps/web created"],
    );

    // autoscale: one HPA, served as autoscaling/v2 (preferred) and autoscaling/v1.
    run.ok_contains(
        &n(
            ns,
            &[
                "autoscale",
                "deployment",
                "web",
                "--min=2",
                "--max=5",
                "--cpu-percent=80",
            ],
        ),
        &["horizontalpodautoscaler.autoscaling/web autoscaled"],
    );
    let out = run.ok_contains(&n(ns, &["get", "hpa"]), &["Deployment/web"]);
    let header = row(&out, "NAME");
    let web = row(&out, "web");
    run.expect(
        header
            == [
                "NAME",
                "REFERENCE",
                "TARGETS",
                "MINPODS",
                "MAXPODS",
                "REPLICAS",
                "AGE",
            ]
            && web.get(..7)
                == Some(
                    &[
                        "web",
                        "Deployment/web",
                        "cpu:",
                        "<unknown>/80%",
                        "2",
                        "5",
                        "0",
                    ]
                    .map(String::from)[..],
                ),
        "`kubectl get hpa`: upstream's columns, `web Deployment/web cpu: <unknown>/80% 2 5 0`",
        &out,
    );
    run.jsonpath(
        &n(ns, &["get", "hpa", "web"]),
        "{.apiVersion} {.spec.metrics[0].resource.target.averageUtilization}",
        "autoscaling/v2 80",
    );
    run.jsonpath(
        &n(ns, &["get", "horizontalpodautoscalers.v1.autoscaling", "web"]),
        "{.apiVersion} {.spec.targetCPUUtilizationPercentage} {.spec.minReplicas}-{.spec.maxReplicas}",
        "autoscaling/v1 80 2-5",
    );
    // Listed through v1: the same row, the CPU target converted once.
    let out = run.ok_contains(
        &n(ns, &["get", "horizontalpodautoscalers.v1.autoscaling"]),
        &["Deployment/web"],
    );
    run.expect(
        row(&out, "web").get(..7).map(|r| r.join(" ")).as_deref()
            == Some("web Deployment/web cpu: <unknown>/80% 2 5 0"),
        "`kubectl get horizontalpodautoscalers.v1.autoscaling`: the v2 row",
        &out,
    );
    run.jsonpath(
        &n(ns, &["get", "horizontalpodautoscalers.v1.autoscaling"]),
        "{.items[0].apiVersion} {.items[0].spec.targetCPUUtilizationPercentage}",
        "autoscaling/v1 80",
    );
    run.fails_with(
        &n(ns, &["autoscale", "deployment", "web", "--max=3"]),
        &[
            "AlreadyExists",
            "horizontalpodautoscalers.autoscaling \"web\" already exists",
        ],
    );
    run.fails_with(
        &n(ns, &["autoscale", "deployment", "missing", "--max=3"]),
        &["NotFound", "deployments.apps \"missing\" not found"],
    );

    // set image: the template changes, so does the generation.
    run.ok_contains(
        &n(ns, &["set", "image", "deployment/web", "nginx=nginx:1.26"]),
        &["deployment.apps/web image updated"],
    );
    run.jsonpath(
        &n(ns, &["get", "deployment", "web"]),
        "{.spec.template.spec.containers[0].image} {.metadata.generation}",
        "nginx:1.26 2",
    );
    run.fails_with(
        &n(ns, &["set", "image", "deployment/web", "nope=busybox"]),
        &["unable to find container named \"nope\""],
    );

    // set env: literals, removal, and references to a ConfigMap's keys.
    run.ok_contains(
        &n(
            ns,
            &["set", "env", "deployment/web", "MODE=prod", "LEVEL=3"],
        ),
        &["deployment.apps/web env updated"],
    );
    run.ok_contains(
        &n(ns, &["set", "env", "deployment/web", "--list"]),
        &["# Deployment web, container nginx", "MODE=prod\nLEVEL=3"],
    );
    run.ok_contains(
        &n(ns, &["set", "env", "deployment/web", "LEVEL-"]),
        &["deployment.apps/web env updated"],
    );
    run.ok_contains(
        &n(
            ns,
            &["create", "configmap", "cfg", "--from-literal=DB_HOST=db"],
        ),
        &["configmap/cfg created"],
    );
    run.ok_contains(
        &n(
            ns,
            &[
                "set",
                "env",
                "deployment/web",
                "--from=configmap/cfg",
                "--prefix=APP_",
            ],
        ),
        &["deployment.apps/web env updated"],
    );
    let env = json_at(
        run,
        &n(ns, &["get", "deployment", "web"]),
        "{.spec.template.spec.containers[0].env}",
    );
    let want = json!([
        {"name": "MODE", "value": "prod"},
        {"name": "APP_DB_HOST", "valueFrom": {"configMapKeyRef": {"key": "DB_HOST", "name": "cfg"}}},
    ]);
    run.failures.check(env.as_ref() == Some(&want), || {
        format!("[{}] env after set env: want {want}, got {env:?}", run.tag)
    });

    // set resources: quantities are stored canonical, as upstream serializes them.
    run.ok_contains(
        &n(
            ns,
            &[
                "set",
                "resources",
                "deployment/web",
                "--limits=cpu=0.5,memory=0.25Gi",
                "--requests=cpu=250m,memory=100M",
            ],
        ),
        &["deployment.apps/web resource requirements updated"],
    );
    let resources_path = "{.spec.template.spec.containers[0].resources}";
    let canonical = json!({
        "limits": {"cpu": "500m", "memory": "256Mi"},
        "requests": {"cpu": "250m", "memory": "100M"},
    });
    let got = json_at(run, &n(ns, &["get", "deployment", "web"]), resources_path);
    run.failures.check(got.as_ref() == Some(&canonical), || {
        format!(
            "[{}] resources after --limits=cpu=0.5,memory=0.25Gi: want {canonical}, got {got:?}",
            run.tag
        )
    });
    run.ok_contains(
        &n(
            ns,
            &[
                "set",
                "resources",
                "deployment/web",
                "--limits=cpu=1.5,memory=1.5Gi",
            ],
        ),
        &["deployment.apps/web resource requirements updated"],
    );
    run.jsonpath(
        &n(ns, &["get", "deployment", "web"]),
        "{.spec.template.spec.containers[0].resources.limits.cpu} {.spec.template.spec.containers[0].resources.limits.memory}",
        "1500m 1536Mi",
    );
    // Requests above the limit: the server's refusal, word for word, and nothing changes.
    let before = json_at(run, &n(ns, &["get", "deployment", "web"]), resources_path);
    run.fails_with(
        &n(
            ns,
            &["set", "resources", "deployment/web", "--requests=cpu=2"],
        ),
        &[
            "Deployment.apps \"web\" is invalid",
            "spec.template.spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1500m",
        ],
    );
    let after = json_at(run, &n(ns, &["get", "deployment", "web"]), resources_path);
    run.failures.check(before.is_some() && before == after, || {
        format!(
            "[{}] a refused set resources changed {before:?} into {after:?}",
            run.tag
        )
    });
    Ok(())
}

/// An HPA `kubectl autoscale` refuses to write (min above max), sent as a manifest.
const HPA_MIN_OVER_MAX: &str = r#"apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: inverted}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 4
  maxReplicas: 2
"#;

/// An HPA with a memory target written `0.5Gi` (stored as `512Mi`).
const HPA_MEMORY: &str = r#"apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: memory}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 0.5Gi}}
"#;

#[test]
fn kubectl_autoscale_and_set_commands() {
    with_each_kubectl("kubectl_autoscale_and_set_commands", |run, i, dir| {
        let ns = format!("cmds-{i}");
        autoscale_and_set(run, &ns)?;
        let hpa = dir.join(format!("hpa-{i}.yaml"));
        std::fs::write(&hpa, HPA_MIN_OVER_MAX)?;
        run.fails_with(
            &n(&ns, &["create", "-f", &hpa.display().to_string()]),
            &[
                "The HorizontalPodAutoscaler \"inverted\" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`",
            ],
        );
        let memory = dir.join(format!("memory-{i}.yaml"));
        std::fs::write(&memory, HPA_MEMORY)?;
        run.ok_contains(
            &n(&ns, &["apply", "-f", &memory.display().to_string()]),
            &["horizontalpodautoscaler.autoscaling/memory created"],
        );
        run.jsonpath(
            &n(&ns, &["get", "hpa", "memory"]),
            "{.spec.metrics[0].resource.target.averageValue} {.spec.minReplicas}",
            "512Mi 1",
        );
        let out = run.ok_contains(&n(&ns, &["get", "hpa", "memory"]), &["Deployment/web"]);
        run.expect(
            row(&out, "memory")
                .get(2..4)
                .map(|r| r.join(" "))
                .as_deref()
                == Some("memory: <unknown>/512Mi"),
            "`kubectl get hpa memory`: TARGETS memory: <unknown>/512Mi",
            &out,
        );
        Ok(())
    });
}

/// `kubectl explain` arguments and what its output must hold: upstream's field descriptions
/// for the built-in groups, through short names.
const EXPLAINED: &[(&[&str], &[&str])] = &[
    (
        &["explain", "ingress.spec.rules"],
        &[
            "GROUP:      networking.k8s.io",
            "KIND:       Ingress",
            "FIELD: rules <[]IngressRule>",
            "rules is a list of host rules used to configure the Ingress.",
            "host is the fully qualified domain name of a network host",
        ],
    ),
    (
        &["explain", "hpa.spec"],
        &[
            "GROUP:      autoscaling",
            "KIND:       HorizontalPodAutoscaler",
            "VERSION:    v2",
            "FIELD: spec <HorizontalPodAutoscalerSpec>",
            "maxReplicas is the upper limit for the number of replicas",
            "-required-",
        ],
    ),
    (
        &["explain", "hpa.spec", "--api-version=autoscaling/v1"],
        &[
            "VERSION:    v1",
            "targetCPUUtilizationPercentage is the target average CPU utilization",
        ],
    ),
    (
        &["explain", "pdb.spec"],
        &[
            "GROUP:      policy",
            "KIND:       PodDisruptionBudget",
            "minAvailable indicates that an eviction is allowed if at least",
            "maxUnavailable indicates that an eviction is allowed if at most",
            "unhealthyPodEvictionPolicy",
        ],
    ),
    (
        &["explain", "networkpolicy"],
        &[
            "GROUP:      networking.k8s.io",
            "KIND:       NetworkPolicy",
            "NetworkPolicy describes what network traffic is allowed for a set of Pods",
            "spec represents the specification of the desired behavior for this",
        ],
    ),
    (
        &["explain", "netpol.spec.ingress.from.ipBlock.cidr"],
        &[
            "FIELD: cidr <string>",
            "cidr is a string representing the IPBlock",
        ],
    ),
    (
        &["explain", "priorityclass"],
        &[
            "GROUP:      scheduling.k8s.io",
            "PriorityClass defines mapping from a priority class name to the priority",
            "globalDefault specifies whether this PriorityClass should be considered",
            "preemptionPolicy",
        ],
    ),
    (
        &["explain", "sc"],
        &[
            "GROUP:      storage.k8s.io",
            "KIND:       StorageClass",
            "StorageClass describes the parameters for a class of storage",
            "allowVolumeExpansion shows whether the storage class allow volume expand.",
            "volumeBindingMode",
        ],
    ),
    (
        &["explain", "quota.spec"],
        &[
            "KIND:       ResourceQuota",
            "FIELD: spec <ResourceQuotaSpec>",
            "hard is the set of desired hard limits for each named resource.",
            "scopeSelector",
        ],
    ),
    (
        &["explain", "limits.spec.limits"],
        &[
            "KIND:       LimitRange",
            "Limits is the list of LimitRangeItem objects",
        ],
    ),
    (
        &["explain", "ingressclass.spec"],
        &[
            "KIND:       IngressClass",
            "controller refers to the name of the controller that should handle this",
        ],
    ),
    (
        &["explain", "runtimeclass.handler"],
        &[
            "GROUP:      node.k8s.io",
            "handler specifies the underlying runtime and configuration",
        ],
    ),
    (
        &["explain", "endpointslice.endpoints"],
        &[
            "GROUP:      discovery.k8s.io",
            "endpoints is a list of unique endpoints in this slice.",
        ],
    ),
];

#[test]
fn kubectl_explain_describes_builtin_groups() {
    with_each_kubectl("kubectl_explain_describes_builtin_groups", |run, _, _| {
        for (args, needles) in EXPLAINED {
            run.ok_contains(args, needles);
        }
        // The recursive form walks the schema's references.
        let out = run.ok_contains(&["explain", "pdb.spec", "--recursive"], &["matchLabels"]);
        run.expect(
            out.stdout.contains("matchExpressions") && out.stdout.contains("operator"),
            "`kubectl explain pdb.spec --recursive` lists the selector's nested fields",
            &out,
        );
        run.fails_with(
            &["explain", "hpa.spec.nope"],
            &["field \"nope\" does not exist"],
        );
        // `kubectl get cs`: upstream's columns, the deprecation warning on stderr.
        let out = run.ok_contains(
            &["get", "componentstatuses"],
            &["NAME", "STATUS", "MESSAGE", "ERROR", "etcd-0"],
        );
        run.expect(
            row(&out, "etcd-0") == ["etcd-0", "Healthy", "ok"]
                && out
                    .stderr
                    .contains("v1 ComponentStatus is deprecated in v1.19+"),
            "`kubectl get cs` shows etcd-0 Healthy ok and the deprecation warning",
            &out,
        );
        Ok(())
    });
}

/// A MutatingAdmissionPolicy labelling ConfigMaps of namespace `ns` with `team: <ns>`, a
/// ValidatingAdmissionPolicy refusing ConfigMaps there without a `mode` key, and their
/// bindings.
fn admission_policies(ns: &str) -> String {
    format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: team-label-{ns}
spec:
  matchConstraints:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: {ns}
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{{metadata: Object.metadata{{labels: {{"team": namespaceObject.metadata.name}}}}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: team-label-{ns}
spec:
  policyName: team-label-{ns}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: needs-mode-{ns}
spec:
  matchConstraints:
    namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: {ns}
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  validations:
  - expression: 'has(object.data) && "mode" in object.data'
    message: every ConfigMap here needs a mode
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: needs-mode-{ns}
spec:
  policyName: needs-mode-{ns}
  validationActions: [Deny]
"#
    )
}

#[test]
fn kubectl_meets_admission_policies() {
    with_each_kubectl("kubectl_meets_admission_policies", |run, i, dir| {
        let ns = format!("policies-{i}");
        run.ok_contains(&["create", "namespace", &ns], &[]);
        let file = dir.join(format!("policies-{i}.yaml"));
        std::fs::write(&file, admission_policies(&ns))?;
        let path = file.display().to_string();
        run.ok_contains(
            &["apply", "-f", &path],
            &[&format!(
                "mutatingadmissionpolicy.admissionregistration.k8s.io/team-label-{ns} created"
            )],
        );
        // The mutation labels what kubectl creates.
        run.ok_contains(
            &n(
                &ns,
                &[
                    "create",
                    "configmap",
                    "settings",
                    "--from-literal=mode=fast",
                ],
            ),
            &["configmap/settings created"],
        );
        run.jsonpath(
            &n(&ns, &["get", "configmap", "settings"]),
            "{.metadata.labels.team}",
            &ns,
        );
        // The validation refuses, with upstream's message on kubectl's stderr.
        run.fails_with(
            &n(&ns, &["create", "configmap", "bare", "--from-literal=size=1"]),
            &[
                "configmaps \"bare\" is forbidden: ValidatingAdmissionPolicy",
                &format!("'needs-mode-{ns}' with binding 'needs-mode-{ns}' denied request: every ConfigMap here needs a mode"),
            ],
        );
        // Other namespaces are not selected.
        run.ok_contains(
            &[
                "create",
                "configmap",
                &format!("elsewhere-{i}"),
                "--from-literal=size=1",
            ],
            &["created"],
        );
        run.jsonpath(
            &["get", "configmap", &format!("elsewhere-{i}")],
            "{.metadata.labels}",
            "",
        );
        Ok(())
    });
}

/// A ConfigMap for `diff`, `replace --force` and `edit`, in the given color.
fn configmap(color: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: diffme\n  labels: {{app: diff}}\ndata:\n  color: {color}\n"
    )
}

/// A Deployment whose CPU limit is written `0.5` (stored as `500m`).
fn deployment(replicas: u32) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  labels: {{app: api}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api}}}}
    spec:
      containers:
      - name: api
        image: nginx:1.25
        resources:
          limits: {{cpu: "0.5", memory: 1024Mi}}
"#
    )
}

/// One labelled object of the prune set.
fn pruned_configmap(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  labels: {{set: prune}}\ndata: {{k: v}}\n"
    )
}

const PRUNED_SERVICE: &str = r#"apiVersion: v1
kind: Service
metadata:
  name: prune-svc
  labels: {set: prune}
spec:
  selector: {app: prune}
  ports: [{port: 80}]
"#;

/// Writes an executable `sh` script.
fn script(path: &Path, body: &str) -> anyhow::Result<String> {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n"))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path.display().to_string())
}

/// Runs `kubectl -n ns edit args` with `editor` as the editor (and `tmp` as `TMPDIR`, where
/// kubectl keeps the copy of a refused edit).
fn edit(run: &mut Run<'_>, ns: &str, editor: &str, tmp: &Path, args: &[&str]) -> CmdOutput {
    let mut all: Vec<String> = [
        "--kubeconfig",
        &run.server.kubeconfig.display().to_string(),
        "-n",
        ns,
        "edit",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    all.extend(args.iter().map(|s| s.to_string()));
    let tmp = tmp.display().to_string();
    let envs = [
        ("EDITOR", editor),
        ("KUBE_EDITOR", editor),
        ("TMPDIR", tmp.as_str()),
    ];
    match run_with_timeout(run.kubectl, &all, &envs, KUBECTL_TIMEOUT) {
        Ok(out) => out,
        Err(e) => {
            run.failures
                .add(format!("[{}] running kubectl edit: {e:#}", run.tag));
            CmdOutput {
                command: format!("kubectl edit {}", args.join(" ")),
                status: None,
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    }
}

fn diff_steps(run: &mut Run<'_>, ns: &str, dir: &Path) -> anyhow::Result<()> {
    let cm = dir.join("cm.yaml");
    let cm_path = cm.display().to_string();
    std::fs::write(&cm, configmap("blue"))?;

    // Not there yet: the whole object is new (exit 1).
    let out = run.k(&n(ns, &["diff", "-f", &cm_path]));
    run.expect(
        out.status.and_then(|s| s.code()) == Some(1)
            && out.stdout.contains("+  color: blue")
            && out.stdout.contains(&format!("+  namespace: {ns}")),
        "`kubectl diff` of a new object: exit 1, every line added",
        &out,
    );
    run.ok_contains(
        &n(ns, &["apply", "-f", &cm_path]),
        &["configmap/diffme created"],
    );
    // Applied: nothing differs (exit 0, no output).
    let out = run.k(&n(ns, &["diff", "-f", &cm_path]));
    run.expect(
        out.success() && out.stdout.trim().is_empty(),
        "`kubectl diff` of the applied object: exit 0, empty",
        &out,
    );
    // Changed locally: the change, and only as a dry run.
    std::fs::write(&cm, configmap("green"))?;
    for extra in [&[][..], &["--server-side"][..]] {
        let mut args = n(ns, &["diff", "-f", &cm_path]);
        args.extend_from_slice(extra);
        let out = run.k(&args);
        run.expect(
            out.status.and_then(|s| s.code()) == Some(1)
                && out.stdout.contains("-  color: blue")
                && out.stdout.contains("+  color: green")
                && !out.stdout.contains("resourceVersion"),
            &format!("`kubectl {}`: exit 1 with the change", args.join(" ")),
            &out,
        );
    }
    run.jsonpath(
        &n(ns, &["get", "configmap", "diffme"]),
        "{.data.color}",
        "blue",
    );

    // A Deployment written with non-canonical quantities: equal once applied (the dry run
    // canonicalizes as the write did).
    let dep = dir.join("dep.yaml");
    let dep_path = dep.display().to_string();
    std::fs::write(&dep, deployment(1))?;
    run.ok_contains(
        &n(ns, &["apply", "-f", &dep_path]),
        &["deployment.apps/api created"],
    );
    let out = run.k(&n(ns, &["diff", "-f", &dep_path]));
    run.expect(
        out.success() && out.stdout.trim().is_empty(),
        "`kubectl diff` of the applied Deployment (cpu \"0.5\" stored 500m): exit 0",
        &out,
    );
    // A server-side dry run by the `kubectl` manager rewrites the client-side apply
    // annotation from the applied file (upstream's lastAppliedUpdater; the file has no
    // `annotations: {}`): that is the only change.
    let out = run.k(&n(ns, &["diff", "--server-side", "-f", &dep_path]));
    let changed: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| {
            (l.starts_with('-') || l.starts_with('+'))
                && !l.starts_with("---")
                && !l.starts_with("+++")
        })
        .collect();
    run.expect(
        out.status.and_then(|s| s.code()) == Some(1)
            && changed.len() == 2
            && changed[0].contains(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"labels""#)
            && changed[1].contains(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels""#)
            && changed[1].contains(r#""limits":{"cpu":"0.5","memory":"1024Mi"}"#),
        "`kubectl diff --server-side` of the Deployment applied client-side: only the \
         last-applied annotation changes",
        &out,
    );
    std::fs::write(&dep, deployment(3))?;
    let out = run.k(&n(ns, &["diff", "-f", &dep_path]));
    run.expect(
        out.status.and_then(|s| s.code()) == Some(1)
            && out.stdout.contains("-  replicas: 1")
            && out.stdout.contains("+  replicas: 3")
            && out.stdout.contains("-  generation: 1")
            && out.stdout.contains("+  generation: 2"),
        "`kubectl diff` of a scaled Deployment: replicas and generation change",
        &out,
    );
    // An invalid object: the server's refusal, exit above 1.
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, deployment(1).replace("replicas: 1", "replicas: -1"))?;
    let out = run.k(&n(ns, &["diff", "-f", &bad.display().to_string()]));
    run.expect(
        out.status.and_then(|s| s.code()).is_some_and(|c| c > 1)
            && out.stderr.contains(
                "The Deployment \"api\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            ),
        "`kubectl diff` of an invalid Deployment: exit > 1 with the server's message",
        &out,
    );
    Ok(())
}

fn prune_steps(run: &mut Run<'_>, ns: &str, dir: &Path) -> anyhow::Result<()> {
    let set = dir.join("prune");
    std::fs::create_dir_all(&set)?;
    let set_path = set.display().to_string();
    let write_all = || -> std::io::Result<()> {
        for name in ["prune-a", "prune-b", "prune-c"] {
            std::fs::write(set.join(format!("{name}.yaml")), pruned_configmap(name))?;
        }
        std::fs::write(set.join("svc.yaml"), PRUNED_SERVICE)
    };
    write_all()?;
    run.ok_contains(
        &n(
            ns,
            &["apply", "--prune", "-l", "set=prune", "-f", &set_path],
        ),
        &[
            "configmap/prune-a created",
            "configmap/prune-b created",
            "configmap/prune-c created",
            "service/prune-svc created",
        ],
    );
    // Labelled, but never applied (no last-applied configuration): never pruned.
    run.ok_contains(
        &n(ns, &["create", "configmap", "manual"]),
        &["configmap/manual created"],
    );
    run.ok_contains(
        &n(ns, &["label", "configmap", "manual", "set=prune"]),
        &["configmap/manual labeled"],
    );

    std::fs::remove_file(set.join("prune-b.yaml"))?;
    std::fs::remove_file(set.join("svc.yaml"))?;
    let out = run.ok_contains(
        &n(
            ns,
            &["apply", "--prune", "-l", "set=prune", "-f", &set_path],
        ),
        &[
            "configmap/prune-a unchanged",
            "configmap/prune-c unchanged",
            "configmap/prune-b pruned",
            "service/prune-svc pruned",
        ],
    );
    run.expect(
        !out.stdout.contains("manual"),
        "an object never applied is not pruned",
        &out,
    );
    run.jsonpath(
        &n(ns, &["get", "configmaps", "-l", "set=prune"]),
        "{.items[*].metadata.name}",
        "manual prune-a prune-c",
    );
    run.fails_with(
        &n(ns, &["get", "service", "prune-svc"]),
        &["services \"prune-svc\" not found"],
    );

    // --prune-allowlist limits what is pruned to the kinds listed.
    write_all()?;
    run.ok_contains(
        &n(
            ns,
            &["apply", "--prune", "-l", "set=prune", "-f", &set_path],
        ),
        &["configmap/prune-b created", "service/prune-svc created"],
    );
    std::fs::remove_file(set.join("prune-b.yaml"))?;
    std::fs::remove_file(set.join("svc.yaml"))?;
    let out = run.ok_contains(
        &n(
            ns,
            &[
                "apply",
                "--prune",
                "-l",
                "set=prune",
                "--prune-allowlist=core/v1/ConfigMap",
                "-f",
                &set_path,
            ],
        ),
        &["configmap/prune-b pruned"],
    );
    run.expect(
        !out.stdout.contains("service/prune-svc pruned"),
        "a kind outside --prune-allowlist is not pruned",
        &out,
    );
    run.jsonpath(
        &n(ns, &["get", "service", "prune-svc"]),
        "{.metadata.name}",
        "prune-svc",
    );
    Ok(())
}

fn replace_and_edit_steps(run: &mut Run<'_>, ns: &str, dir: &Path) -> anyhow::Result<()> {
    // replace --force: delete then create; a new object (uid), the file's content.
    replace_force(
        run,
        ns,
        &dir.join("cm.yaml"),
        &configmap("green"),
        ("configmap", "diffme"),
        &["configmap \"diffme\" deleted", "configmap/diffme replaced"],
    )?;
    run.jsonpath(
        &n(ns, &["get", "configmap", "diffme"]),
        "{.data.color}",
        "green",
    );
    replace_force(
        run,
        ns,
        &dir.join("dep.yaml"),
        &deployment(3),
        ("deployment", "api"),
        &[
            "deployment.apps \"api\" deleted",
            "deployment.apps/api replaced",
        ],
    )?;
    run.jsonpath(
        &n(ns, &["get", "deployment", "api"]),
        "{.spec.replicas} {.metadata.generation} {.spec.template.spec.containers[0].resources.limits.cpu}",
        "3 1 500m",
    );

    // edit with an EDITOR script.
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp)?;
    let recolor = script(
        &dir.join("recolor.sh"),
        "sed -i 's/^  color: green$/  color: red/' \"$1\"",
    )?;
    let out = edit(run, ns, &recolor, &tmp, &["configmap", "diffme"]);
    run.expect(
        out.success() && out.stdout.contains("configmap/diffme edited"),
        "`kubectl edit configmap diffme` with a sed EDITOR: edited",
        &out,
    );
    run.jsonpath(
        &n(ns, &["get", "configmap", "diffme"]),
        "{.data.color}",
        "red",
    );
    let untouched = script(&dir.join("untouched.sh"), "exit 0")?;
    let out = edit(run, ns, &untouched, &tmp, &["configmap", "diffme"]);
    run.expect(
        out.success() && out.stderr.contains("Edit cancelled, no changes made."),
        "`kubectl edit` without a change: cancelled",
        &out,
    );
    // A quantity edited non-canonical reads back canonical.
    let cpu = script(
        &dir.join("cpu.sh"),
        "sed -i 's/^\\( *cpu: \\)500m$/\\1\"0.75\"/' \"$1\"",
    )?;
    let out = edit(run, ns, &cpu, &tmp, &["deployment", "api"]);
    run.expect(
        out.success() && out.stdout.contains("deployment.apps/api edited"),
        "`kubectl edit deployment api` (cpu limit 0.75): edited",
        &out,
    );
    run.jsonpath(
        &n(ns, &["get", "deployment", "api"]),
        "{.spec.template.spec.containers[0].resources.limits.cpu} {.metadata.generation}",
        "750m 2",
    );
    // An edit the server refuses: its message (kept in the copy kubectl saves), nothing
    // stored.
    let rv_before = json_of(run, &n(ns, &["get", "deployment", "api"])).and_then(|o| {
        o["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_string)
    });
    let negative = script(
        &dir.join("negative.sh"),
        "sed -i 's/^  replicas: 3$/  replicas: -1/' \"$1\"",
    )?;
    let out = edit(run, ns, &negative, &tmp, &["deployment", "api"]);
    let copy: Option<PathBuf> = out
        .stderr
        .split('"')
        .find(|s| s.ends_with(".yaml") && s.contains("-edit-"))
        .map(PathBuf::from);
    let saved = copy
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default();
    run.expect(
        out.status.is_some()
            && !out.success()
            && out.stderr.contains("deployments.apps \"api\" is invalid")
            && out.stderr.contains("A copy of your changes has been stored to")
            && saved.contains("# deployments.apps \"api\" was not valid:")
            && saved.contains(
                "# * spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            ),
        &format!(
            "`kubectl edit deployment api` (replicas -1): refused with the server's cause in the saved copy; copy:\n{saved}"
        ),
        &out,
    );
    run.jsonpath(
        &n(ns, &["get", "deployment", "api"]),
        "{.spec.replicas} {.metadata.resourceVersion}",
        &format!("3 {}", rv_before.unwrap_or_default()),
    );
    Ok(())
}

#[test]
fn kubectl_diff_prune_replace_and_edit() {
    with_each_kubectl("kubectl_diff_prune_replace_and_edit", |run, i, dir| {
        let ns = format!("files-{i}");
        let work = dir.join(&ns);
        std::fs::create_dir_all(&work)?;
        run.ok_contains(
            &["create", "namespace", &ns],
            &[&format!("namespace/{ns} created")],
        );
        diff_steps(run, &ns, &work)?;
        prune_steps(run, &ns, &work)?;
        replace_and_edit_steps(run, &ns, &work)?;
        Ok(())
    });
}

/// Two replicas with local storage (an emptyDir), a DaemonSet, and a budget that lets one of
/// the replicas go at a time.
const DRAINED: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: drain}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        volumeMounts: [{name: scratch, mountPath: /scratch}]
      volumes: [{name: scratch, emptyDir: {}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: drain}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: busybox:1.36}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: drain}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
"#;

/// The phase and `PodScheduled` reason of each `app=web` pod, sorted.
fn web_pods(run: &mut Run<'_>) -> Vec<(String, String)> {
    let list = json_of(run, &["-n", "drain", "get", "pods", "-l", "app=web"]);
    let mut pods: Vec<(String, String)> = list
        .as_ref()
        .and_then(|l| l["items"].as_array())
        .into_iter()
        .flatten()
        .map(|p| {
            let scheduled = p["status"]["conditions"]
                .as_array()
                .and_then(|c| c.iter().find(|c| c["type"] == "PodScheduled"))
                .and_then(|c| c["reason"].as_str())
                .unwrap_or("");
            (
                p["status"]["phase"].as_str().unwrap_or("").to_string(),
                scheduled.to_string(),
            )
        })
        .collect();
    pods.sort();
    pods
}

/// Waits until both `web` replicas and the DaemonSet's pod are ready and the budget allows
/// one disruption.
fn wait_settled(run: &mut Run<'_>) -> bool {
    wait_for(
        run,
        &["-n", "drain", "get", "deployment", "web"],
        "{.status.readyReplicas}/{.status.replicas}",
        "2/2",
    ) && wait_for(
        run,
        &["-n", "drain", "get", "daemonset", "agent"],
        "{.status.numberReady}",
        "1",
    ) && wait_for(
        run,
        &["-n", "drain", "get", "pdb", "web"],
        "{.status.currentHealthy} {.status.disruptionsAllowed}",
        "2 1",
    )
}

fn drain_scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = start(dir.path(), &["--simulate"])?;
    let manifest = dir.path().join("drained.yaml");
    std::fs::write(&manifest, DRAINED)?;
    let mut run = Run {
        kubectl,
        server: &server,
        tag: kubectl.display().to_string(),
        failures,
    };
    run.ok_contains(
        &["create", "namespace", "drain"],
        &["namespace/drain created"],
    );
    run.ok_contains(
        &["apply", "-f", &manifest.display().to_string()],
        &[
            "deployment.apps/web created",
            "daemonset.apps/agent created",
            "poddisruptionbudget.policy/web created",
        ],
    );
    if !wait_settled(&mut run) {
        anyhow::bail!("the workloads did not settle");
    }
    // The simulated containers run no process: their logs are empty, `exec` says why it
    // cannot reach them.
    let logs = run.ok_contains(&["-n", "drain", "logs", "deployment/web"], &[]);
    run.expect(
        logs.stdout.trim().is_empty(),
        "`kubectl logs` of a simulated container is empty",
        &logs,
    );
    run.fails_with(
        &["-n", "drain", "exec", "deployment/web", "--", "ls"],
        &["runs no kubelet korral-apiserver can reach"],
    );
    // The DaemonSet's template is recorded as a ControllerRevision: its rollout history.
    let history = run.ok_contains(
        &["-n", "drain", "rollout", "history", "daemonset/agent"],
        &["daemonset.apps/agent", "REVISION"],
    );
    run.expect(
        history
            .stdout
            .lines()
            .any(|l| l.trim_start().starts_with("1 ")),
        "`kubectl rollout history ds` lists revision 1",
        &history,
    );

    // A server-side dry run: every eviction allowed on its own, nothing cordoned, evicted
    // or spent from the budget.
    let out = run.ok_contains(
        &[
            "drain",
            "korral-node",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--dry-run=server",
            "--timeout=20s",
        ],
        &[
            "node/korral-node cordoned (server dry run)",
            "node/korral-node drained (server dry run)",
        ],
    );
    let dry_evictions = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("evicting pod drain/web-") && l.ends_with("(server dry run)"))
        .count();
    run.expect(
        dry_evictions == 2,
        "`kubectl drain --dry-run=server`: each replica evicted once, in a dry run",
        &out,
    );
    run.jsonpath(&["get", "node", "korral-node"], "{.spec.unschedulable}", "");
    let budget = json_of(&mut run, &["-n", "drain", "get", "pdb", "web"]);
    let status = budget.as_ref().map(|b| b["status"].clone());
    run.failures.check(
        status
            .as_ref()
            .is_some_and(|s| s["disruptionsAllowed"] == 1 && s.get("disruptedPods").is_none()),
        || {
            format!(
                "[{}] a dry-run drain spends nothing from the budget: {status:?}",
                run.tag
            )
        },
    );

    // Without the flags, drain cordons the node but evicts nothing, and says why.
    run.fails_with(
        &["drain", "korral-node", "--timeout=20s"],
        &[
            "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): drain/agent-",
            "cannot delete Pods with local storage (use --delete-emptydir-data to override): drain/web-",
        ],
    );
    run.jsonpath(
        &["get", "node", "korral-node"],
        "{.spec.unschedulable}",
        "true",
    );
    run.jsonpath(
        &["-n", "drain", "get", "pods", "-l", "app=web"],
        "{.items[*].status.phase}",
        "Running Running",
    );

    // With them: one replica may go; its replacement cannot be scheduled on the cordoned
    // node, so the budget refuses the other eviction (429) until drain gives up.
    let out = run.k(&[
        "drain",
        "korral-node",
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=2s",
    ]);
    let evicted = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("pod/web-") && l.ends_with(" evicted"))
        .count();
    run.expect(
        out.status.is_some()
            && !out.success()
            && out.stdout.contains("node/korral-node already cordoned")
            && out.stdout.contains("evicting pod drain/web-")
            && evicted == 1
            && out.stderr.contains("Warning: ignoring DaemonSet-managed Pods: drain/agent-")
            && out.stderr.contains(
                "(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget.",
            )
            && out.stderr.contains("global timeout reached: 2s")
            && out.stderr.contains("There are pending nodes to be drained:"),
        "`kubectl drain` under a budget: one pod evicted, the other refused until the timeout",
        &out,
    );
    let pods = web_pods(&mut run);
    let want = [
        ("Pending".to_string(), "Unschedulable".to_string()),
        ("Running".to_string(), String::new()),
    ];
    run.failures.check(pods == want, || {
        format!(
            "[{}] after the drain: one replica left running, its replacement pending \
             (Unschedulable); got {pods:?}",
            run.tag
        )
    });
    let out = run.ok_contains(&["get", "nodes"], &["korral-node"]);
    run.expect(
        row(&out, "korral-node").get(1).map(String::as_str) == Some("Ready,SchedulingDisabled"),
        "`kubectl get nodes`: korral-node Ready,SchedulingDisabled",
        &out,
    );
    run.jsonpath(
        &["-n", "drain", "get", "pdb", "web"],
        "{.status.disruptionsAllowed}",
        "0",
    );
    run.jsonpath(
        &["-n", "drain", "get", "daemonset", "agent"],
        "{.status.numberReady}",
        "1",
    );

    // uncordon: the pending replica is scheduled and runs.
    run.ok_contains(
        &["uncordon", "korral-node"],
        &["node/korral-node uncordoned"],
    );
    let out = run.ok_contains(&["get", "nodes"], &["korral-node"]);
    run.expect(
        row(&out, "korral-node").get(1).map(String::as_str) == Some("Ready"),
        "`kubectl get nodes` after uncordon: korral-node Ready",
        &out,
    );
    if !wait_settled(&mut run) {
        anyhow::bail!("the workloads did not come back after uncordon");
    }

    // Without the budget, the drain completes.
    run.ok_contains(
        &["-n", "drain", "delete", "pdb", "web"],
        &["poddisruptionbudget.policy \"web\" deleted"],
    );
    let out = run.ok_contains(
        &[
            "drain",
            "korral-node",
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=30s",
        ],
        &["node/korral-node cordoned", "node/korral-node drained"],
    );
    let evicted = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("pod/web-") && l.ends_with(" evicted"))
        .count();
    run.expect(evicted == 2, "both replicas evicted", &out);
    let pending = [
        ("Pending".to_string(), "Unschedulable".to_string()),
        ("Pending".to_string(), "Unschedulable".to_string()),
    ];
    let mut pods = Vec::new();
    let replaced = poll(SETTLE, || {
        pods = web_pods(&mut run);
        (pods == pending).then_some(())
    });
    run.failures.check(replaced.is_some(), || {
        format!(
            "[{}] after a full drain both replacements wait (Unschedulable); got {pods:?}",
            run.tag
        )
    });
    run.ok_contains(
        &["uncordon", "korral-node"],
        &["node/korral-node uncordoned"],
    );
    wait_for(
        &mut run,
        &["-n", "drain", "get", "deployment", "web"],
        "{.status.readyReplicas}/{.status.replicas}",
        "2/2",
    );
    Ok(())
}

#[test]
fn kubectl_drain_honours_disruption_budget() {
    for_each_kubectl(
        "kubectl_drain_honours_disruption_budget",
        |kubectl, _, failures| drain_scenario(kubectl, failures),
    );
}
