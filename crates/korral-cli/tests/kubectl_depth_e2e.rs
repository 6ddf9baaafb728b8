//! End-to-end with the real `kubectl` (the default one and the old 1.27 one): `explain` for
//! built-in kinds and CRDs, `scale` on deployments, replicasets, statefulsets and custom
//! resources, `get` tables with `-o wide`, CEL rules and strict field validation.
//!
//! Every step runs for each kubectl found; all failing steps are collected and reported
//! together.

mod support;

use std::path::Path;

use support::{CmdOutput, Failures, Options, Run, Server, Storage, for_each_kubectl};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.depth.example.org
spec:
  group: depth.example.org
  names: {kind: Gizmo, listKind: GizmoList, plural: gizmos, singular: gizmo}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          description: Gizmo is a test resource with a scale subresource.
          properties:
            spec:
              type: object
              description: GizmoSpec says how many gizmos to run and in which color.
              x-kubernetes-validations:
                - rule: self.replicas <= 10
                  message: at most 10 gizmos
              properties:
                replicas:
                  type: integer
                  description: How many gizmos to run.
                color:
                  type: string
                  maxLength: 16
            status:
              type: object
              properties:
                replicas: {type: integer}
                selector: {type: string}
      subresources:
        status: {}
        scale:
          specReplicasPath: .spec.replicas
          statusReplicasPath: .status.replicas
          labelSelectorPath: .status.selector
      additionalPrinterColumns:
        - {name: Replicas, type: integer, jsonPath: .spec.replicas}
        - {name: Color, type: string, jsonPath: .spec.color, priority: 1}
"#;

const GIZMO: &str = r#"apiVersion: depth.example.org/v1
kind: Gizmo
metadata: {name: g1, namespace: default}
spec: {replicas: 2, color: teal}
"#;

const TOO_MANY: &str = r#"apiVersion: depth.example.org/v1
kind: Gizmo
metadata: {name: g2, namespace: default}
spec: {replicas: 11}
"#;

const UNKNOWN_FIELD: &str = r#"apiVersion: depth.example.org/v1
kind: Gizmo
metadata: {name: g3, namespace: default}
spec: {replicas: 1, bogus: true}
"#;

const WORKLOADS: &str = r#"apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs1, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: rs1}}
  template:
    metadata: {labels: {app: rs1}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ss1, namespace: default}
spec:
  replicas: 1
  serviceName: ss1
  selector: {matchLabels: {app: ss1}}
  template:
    metadata: {labels: {app: ss1}}
    spec: {containers: [{name: c, image: nginx}]}
"#;

/// The header row's column names.
fn header(out: &CmdOutput) -> Vec<String> {
    out.stdout
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn scenario(kubectl: &Path, failures: &mut Failures) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: dir.path().join("kubeconfig"),
    })?;
    let write = |name: &str, text: &str| -> anyhow::Result<String> {
        let path = dir.path().join(name);
        std::fs::write(&path, text)?;
        Ok(path.display().to_string())
    };
    let crd = write("crd.yaml", CRD)?;
    let gizmo = write("gizmo.yaml", GIZMO)?;
    let too_many = write("too-many.yaml", TOO_MANY)?;
    let unknown = write("unknown.yaml", UNKNOWN_FIELD)?;
    let workloads = write("workloads.yaml", WORKLOADS)?;
    let mut run = Run {
        kubectl,
        server: &server,
        tag: kubectl.display().to_string(),
        failures,
    };

    // explain: built-in kinds (upstream descriptions) and nested fields.
    run.ok_contains(
        &["explain", "deployment"],
        &["Deployment enables declarative updates for Pods and ReplicaSets."],
    );
    run.ok_contains(
        &["explain", "deployment.spec.replicas"],
        &["Number of desired pods"],
    );
    run.ok_contains(
        &["explain", "pods.spec.containers.image"],
        &["Container image name"],
    );

    // The CRD, established; explain on it.
    run.ok_contains(&["apply", "-f", &crd], &["gizmos.depth.example.org"]);
    run.ok_contains(
        &[
            "wait",
            "--for=condition=Established",
            "crd/gizmos.depth.example.org",
            "--timeout=30s",
        ],
        &["condition met"],
    );
    run.ok_contains(
        &["explain", "gizmo.spec"],
        &[
            "GizmoSpec says how many gizmos to run and in which color.",
            "How many gizmos to run.",
        ],
    );

    // Tables: CRD printer columns, priority columns only with -o wide.
    run.ok_contains(&["apply", "-f", &gizmo], &["gizmo.depth.example.org/g1"]);
    let out = run.k(&["get", "gizmos"]);
    let h = header(&out);
    run.expect(
        out.success() && h == ["NAME", "REPLICAS"],
        "`kubectl get gizmos` columns NAME REPLICAS (printer columns replace AGE, as upstream)",
        &out,
    );
    let out = run.k(&["get", "gizmos", "-o", "wide"]);
    let h = header(&out);
    run.expect(
        out.success() && h == ["NAME", "REPLICAS", "COLOR"] && out.stdout.contains("teal"),
        "`kubectl get gizmos -o wide` adds the priority column: NAME REPLICAS COLOR with teal",
        &out,
    );

    // scale on the custom resource.
    run.ok_contains(
        &["scale", "gizmo", "g1", "--replicas=4"],
        &["gizmo.depth.example.org/g1 scaled"],
    );
    run.jsonpath(&["get", "gizmo", "g1"], "{.spec.replicas}", "4");
    // A scale the CEL rule forbids is rejected and changes nothing.
    run.fails_with(
        &["scale", "gizmo", "g1", "--replicas=12"],
        &["at most 10 gizmos"],
    );
    run.jsonpath(&["get", "gizmo", "g1"], "{.spec.replicas}", "4");

    // CEL on create, strict field validation.
    run.fails_with(
        &["create", "-f", &too_many],
        &["The Gizmo \"g2\" is invalid: spec: Invalid value: at most 10 gizmos"],
    );
    run.fails_with(
        &["create", "--validate=strict", "-f", &unknown],
        &["unknown field \"spec.bogus\""],
    );
    let out = run.k(&["create", "--validate=warn", "-f", &unknown]);
    run.expect(
        out.success() && out.stderr.contains("unknown field \"spec.bogus\""),
        "`kubectl create --validate=warn` succeeds and prints the unknown-field warning",
        &out,
    );

    // Built-in workloads: scale and their tables.
    run.ok_contains(
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=1",
        ],
        &["deployment.apps/web created"],
    );
    run.ok_contains(
        &["apply", "-f", &workloads],
        &["replicaset.apps/rs1", "statefulset.apps/ss1"],
    );
    for (kind, name, shown) in [
        ("deployment", "web", "deployment.apps/web scaled"),
        ("replicaset", "rs1", "replicaset.apps/rs1 scaled"),
        ("statefulset", "ss1", "statefulset.apps/ss1 scaled"),
    ] {
        run.ok_contains(&["scale", kind, name, "--replicas=3"], &[shown]);
        run.jsonpath(&["get", kind, name], "{.spec.replicas}", "3");
    }
    let out = run.k(&["get", "deployments"]);
    run.expect(
        out.success() && header(&out) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"],
        "`kubectl get deployments` columns NAME READY UP-TO-DATE AVAILABLE AGE",
        &out,
    );
    let out = run.k(&["get", "deployments", "-o", "wide"]);
    run.expect(
        out.success()
            && header(&out)
                == [
                    "NAME",
                    "READY",
                    "UP-TO-DATE",
                    "AVAILABLE",
                    "AGE",
                    "CONTAINERS",
                    "IMAGES",
                    "SELECTOR",
                ]
            && out.stdout.contains("app=web"),
        "`kubectl get deployments -o wide` adds CONTAINERS IMAGES SELECTOR",
        &out,
    );
    let out = run.k(&["get", "replicasets,statefulsets"]);
    run.expect(
        out.success()
            && out.stdout.contains("DESIRED")
            && out.stdout.contains("CURRENT")
            && out.stdout.contains("replicaset.apps/rs1")
            && out.stdout.contains("statefulset.apps/ss1"),
        "`kubectl get replicasets,statefulsets` tables",
        &out,
    );
    run.ok_contains(&["run", "p1", "--image=nginx"], &["pod/p1 created"]);
    let out = run.k(&["get", "pods", "p1"]);
    run.expect(
        out.success() && header(&out) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "`kubectl get pods` columns NAME READY STATUS RESTARTS AGE",
        &out,
    );
    let out = run.k(&["get", "pods", "p1", "-o", "wide"]);
    let h = header(&out);
    run.expect(
        out.success()
            && h.starts_with(&["NAME".into(), "READY".into()])
            && h.contains(&"NODE".to_string()),
        "`kubectl get pods -o wide` adds IP and NODE",
        &out,
    );
    drop(run);
    server.stop(std::time::Duration::from_secs(10))?;
    Ok(())
}

#[test]
fn kubectl_explain_scale_tables_and_validation() {
    for_each_kubectl("kubectl_explain_scale_tables_and_validation", scenario);
}
