//! Snapshot tests of `korral bundle` (the OLM bundle written from `config/`) and of
//! `korral bundle validate` naming every problem of a broken bundle.

mod scaffold_common;

use std::path::Path;

use scaffold_common::{korral, tree};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: memcacheds.cache.example.com
spec:
  group: cache.example.com
  names:
    kind: Memcached
    plural: memcacheds
    singular: memcached
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        description: Memcached is the Schema for the memcacheds API.
        type: object
    subresources:
      status: {}
"#;

const ROLE: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: memcached-operator-manager-role
rules:
- apiGroups: [apps]
  resources: [deployments]
  verbs: [create, delete, get, list, patch, update, watch]
"#;

const LEADER_ROLE: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: memcached-operator-leader-election-role
  namespace: memcached-operator-system
rules:
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create, delete, get, list, patch, update, watch]
"#;

const MANAGER: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: memcached-operator-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: memcached-operator-controller-manager
  namespace: memcached-operator-system
  labels:
    control-plane: controller-manager
spec:
  replicas: 1
  selector:
    matchLabels:
      control-plane: controller-manager
  template:
    metadata:
      labels:
        control-plane: controller-manager
    spec:
      serviceAccountName: memcached-operator-controller-manager
      securityContext:
        runAsNonRoot: true
      containers:
      - name: manager
        image: controller:latest
"#;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

/// A project with generated-looking manifests.
fn project(dir: &Path) {
    let init = korral(
        dir,
        &[
            "init",
            "--domain",
            "example.com",
            "--name",
            "memcached-operator",
        ],
    );
    assert_eq!(init.code, Some(0), "{}", init.text(dir));
    let api = korral(
        dir,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
        ],
    );
    assert_eq!(api.code, Some(0), "{}", api.text(dir));
    write(
        dir,
        "config/crd/bases/cache.example.com_memcacheds.yaml",
        CRD,
    );
    write(
        dir,
        "config/crd/kustomization.yaml",
        "resources:\n- bases/cache.example.com_memcacheds.yaml\n",
    );
    write(
        dir,
        "config/rbac/kustomization.yaml",
        "resources:\n- role.yaml\n- leader_election_role.yaml\n",
    );
    write(dir, "config/rbac/role.yaml", ROLE);
    write(dir, "config/rbac/leader_election_role.yaml", LEADER_ROLE);
    write(dir, "config/manager/manager.yaml", MANAGER);
}

#[test]
fn bundle_is_written_and_valid() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    project(dir);
    let run = korral(
        dir,
        &[
            "bundle",
            "--version",
            "0.1.0",
            "--channels",
            "alpha,stable",
            "--default-channel",
            "stable",
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.text(dir));
    insta::assert_snapshot!("bundle_output", run.text(dir));
    let mut files = tree(dir);
    files = files
        .split("=== ")
        .filter(|s| s.starts_with("bundle") || s.starts_with("config/manifests"))
        .map(|s| format!("=== {s}"))
        .collect();
    insta::assert_snapshot!("bundle_files", files);
    let validate = korral(dir, &["bundle", "validate"]);
    assert_eq!(validate.code, Some(0), "{}", validate.text(dir));

    // The base CSV is kept: an edited description survives the next run.
    let base = dir.join("config/manifests/bases/memcached-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&base).expect("base");
    let edited = text.replace(
        "manages its custom resources on Kubernetes. Describe what it does here.",
        "runs memcached clusters.",
    );
    std::fs::write(&base, edited).expect("write base");
    let rerun = korral(dir, &["bundle", "--version", "0.2.0"]);
    assert_eq!(rerun.code, Some(0), "{}", rerun.text(dir));
    let csv = std::fs::read_to_string(
        dir.join("bundle/manifests/memcached-operator.clusterserviceversion.yaml"),
    )
    .expect("csv");
    assert!(csv.contains("runs memcached clusters."), "{csv}");
    assert!(csv.contains("name: memcached-operator.v0.2.0"), "{csv}");
}

#[test]
fn validate_names_every_problem() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    project(dir);
    let run = korral(dir, &["bundle", "--version", "0.1.0"]);
    assert_eq!(run.code, Some(0), "{}", run.text(dir));
    let csv_path = dir.join("bundle/manifests/memcached-operator.clusterserviceversion.yaml");
    let mut csv: serde_json::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&csv_path).expect("csv")).expect("yaml");
    csv["metadata"]["name"] = "memcached-operator.v9.9.9".into();
    csv["spec"]["version"] = "1.0".into();
    csv["spec"]["displayName"] = "".into();
    csv["spec"]["description"] = serde_json::Value::Null;
    for mode in csv["spec"]["installModes"].as_array_mut().expect("modes") {
        mode["supported"] = false.into();
    }
    csv["spec"]["install"]["strategy"] = "helm".into();
    csv["spec"]["customresourcedefinitions"]["owned"][0]["kind"] = "Memcache".into();
    csv["spec"]["customresourcedefinitions"]["owned"][0]["version"] = "v2".into();
    std::fs::write(&csv_path, serde_yaml_ng::to_string(&csv).expect("yaml")).expect("write");
    write(
        dir,
        "bundle/metadata/annotations.yaml",
        "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v2\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.channels.v1: ''\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n",
    );
    write(
        dir,
        "bundle/manifests/cache.example.com_others.yaml",
        &CRD.replace("memcacheds.cache.example.com", "others.cache.example.com"),
    );
    let validate = korral(dir, &["bundle", "validate"]);
    assert_eq!(validate.code, Some(1), "{}", validate.text(dir));
    insta::assert_snapshot!("bundle_validate_problems", validate.text(dir));
}
