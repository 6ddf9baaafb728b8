//! `korral scorecard` end to end: a bundle written by hand, the real `korral apiserver`, the real
//! `korral scorecard --output json`. A complete bundle passes every test; a bundle whose CSV lacks
//! one spec descriptor fails exactly `olm-spec-descriptors`, naming the field.

mod support;

use std::path::Path;
use std::process::Command;

use anyhow::Context;
use serde_json::{Value, json};
use support::{KORRAL, Options, Server, Storage};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: memcacheds.cache.example.com
spec:
  group: cache.example.com
  names:
    kind: Memcached
    listKind: MemcachedList
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
        properties:
          apiVersion:
            type: string
          kind:
            type: string
          metadata:
            type: object
          spec:
            type: object
            properties:
              size:
                type: integer
                format: int32
              image:
                type: string
          status:
            type: object
            properties:
              nodes:
                type: array
                items:
                  type: string
    subresources:
      status: {}
"#;

const ANNOTATIONS: &str = r#"annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: memcached-operator
  operators.operatorframework.io.bundle.channels.v1: alpha
  operators.operatorframework.io.bundle.channel.default.v1: alpha
"#;

/// The CSV, with `spec_descriptors` as the owned Memcached entry's specDescriptors.
fn csv(spec_descriptors: Value) -> Value {
    csv_with_example(
        spec_descriptors,
        json!({"size": 3, "image": "memcached:1.6.26-alpine3.19"}),
    )
}

/// The CSV, its one alm-examples Memcached having `example_spec`.
fn csv_with_example(spec_descriptors: Value, example_spec: Value) -> Value {
    let examples = json!([{
        "apiVersion": "cache.example.com/v1",
        "kind": "Memcached",
        "metadata": {"name": "memcached-sample"},
        "spec": example_spec,
    }]);
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": "memcached-operator.v0.1.0",
            "annotations": {
                "alm-examples": examples.to_string(),
                "capabilities": "Basic Install",
            },
        },
        "spec": {
            "displayName": "Memcached Operator",
            "description": "Runs Memcached.",
            "version": "0.1.0",
            "installModes": [
                {"type": "OwnNamespace", "supported": true},
                {"type": "SingleNamespace", "supported": true},
                {"type": "MultiNamespace", "supported": false},
                {"type": "AllNamespaces", "supported": true},
            ],
            "install": {
                "strategy": "deployment",
                "spec": {
                    "deployments": [{
                        "name": "memcached-operator-controller-manager",
                        "spec": {
                            "selector": {"matchLabels": {"control-plane": "controller-manager"}},
                            "template": {
                                "metadata": {"labels": {"control-plane": "controller-manager"}},
                                "spec": {
                                    "serviceAccountName": "memcached-operator-controller-manager",
                                    "containers": [{"name": "manager", "image": "controller:latest"}],
                                },
                            },
                        },
                    }],
                    "clusterPermissions": [{
                        "serviceAccountName": "memcached-operator-controller-manager",
                        "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]}],
                    }],
                },
            },
            "customresourcedefinitions": {"owned": [{
                "name": "memcacheds.cache.example.com",
                "version": "v1",
                "kind": "Memcached",
                "displayName": "Memcached",
                "description": "Memcached is the Schema for the memcacheds API.",
                "resources": [{"kind": "Deployment", "version": "v1"}, {"kind": "Pod", "version": "v1"}],
                "specDescriptors": spec_descriptors,
                "statusDescriptors": [{"path": "nodes", "displayName": "Nodes"}],
            }]},
        },
    })
}

fn write_bundle(dir: &Path, csv: &Value) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir.join("manifests"))?;
    std::fs::create_dir_all(dir.join("metadata"))?;
    std::fs::write(
        dir.join("manifests/memcached-operator.clusterserviceversion.yaml"),
        serde_yaml_ng::to_string(csv)?,
    )?;
    std::fs::write(dir.join("manifests/cache.example.com_memcacheds.yaml"), CRD)?;
    std::fs::write(dir.join("metadata/annotations.yaml"), ANNOTATIONS)?;
    Ok(())
}

struct Scorecard {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn scorecard(cwd: &Path, args: &[&str]) -> anyhow::Result<Scorecard> {
    let out = Command::new(KORRAL)
        .arg("scorecard")
        .args(args)
        .current_dir(cwd)
        .env_remove("KUBECONFIG")
        .env("HOME", cwd)
        .output()
        .context("running korral scorecard")?;
    Ok(Scorecard {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// `(test label, result)` of each item of a JSON report.
fn results(report: &Value) -> Vec<(String, Value)> {
    report["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    (
                        item["spec"]["labels"]["test"]
                            .as_str()
                            .unwrap_or("")
                            .to_owned(),
                        item["status"]["results"][0].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn good_descriptors() -> Value {
    json!([
        {"path": "size", "displayName": "Size"},
        {"path": "image", "displayName": "Image"},
    ])
}

#[test]
fn a_complete_bundle_passes_and_a_missing_descriptor_fails_exactly_that_test() -> anyhow::Result<()>
{
    let tmp = tempfile::tempdir()?;
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: tmp.path().join("kubeconfig"),
    })?;
    let kubeconfig = server.kubeconfig.display().to_string();

    let good = tmp.path().join("good");
    write_bundle(&good, &csv(good_descriptors()))?;
    let run = scorecard(
        tmp.path(),
        &[
            "good",
            "--kubeconfig",
            &kubeconfig,
            "--namespace",
            "default",
            "--output",
            "json",
        ],
    )?;
    assert_eq!(
        run.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    let report: Value = serde_json::from_str(&run.stdout)
        .with_context(|| format!("stdout is not JSON:\n{}", run.stdout))?;
    assert_eq!(
        report["apiVersion"],
        "scorecard.operatorframework.io/v1alpha3"
    );
    assert_eq!(report["kind"], "TestList");
    let got = results(&report);
    let labels: Vec<&str> = got.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        labels,
        [
            "basic-check-spec-test",
            "olm-bundle-validation-test",
            "olm-crds-have-validation-test",
            "olm-crds-have-resources-test",
            "olm-spec-descriptors-test",
            "olm-status-descriptors-test",
        ]
    );
    for (label, result) in &got {
        assert_eq!(result["state"], "pass", "{label}: {result}");
        assert_eq!(result["errors"], json!([]), "{label}: {result}");
    }
    assert!(
        got[0].1["log"].as_str().is_some_and(|l| l
            .contains("Created, read back and deleted 1 custom resource(s) in namespace default")),
        "{}",
        got[0].1
    );
    // The example was deleted again; the CRD stays installed.
    let left = memcacheds_left(&server)?;
    assert!(left.is_empty(), "{left:?}");

    // Without the `image` descriptor exactly olm-spec-descriptors fails, naming the field.
    let missing = tmp.path().join("missing");
    write_bundle(
        &missing,
        &csv(json!([{"path": "size", "displayName": "Size"}])),
    )?;
    let run = scorecard(
        tmp.path(),
        &["missing", "--kubeconfig", &kubeconfig, "--output", "json"],
    )?;
    assert_ne!(
        run.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stderr.contains("olm-spec-descriptors (fail)"),
        "{}",
        run.stderr
    );
    let report: Value = serde_json::from_str(&run.stdout)
        .with_context(|| format!("stdout is not JSON:\n{}", run.stdout))?;
    for (label, result) in results(&report) {
        if label == "olm-spec-descriptors-test" {
            assert_eq!(result["state"], "fail", "{result}");
            let errors = result["errors"].as_array().cloned().unwrap_or_default();
            assert_eq!(errors.len(), 1, "{result}");
            let error = errors[0].as_str().unwrap_or_default();
            assert!(error.contains("spec field `image`"), "{error}");
            assert!(error.contains("memcacheds.cache.example.com"), "{error}");
        } else {
            assert_eq!(result["state"], "pass", "{label}: {result}");
        }
    }

    // The text report of the same bundle: one section per test and the failure spelled out.
    let run = scorecard(tmp.path(), &["missing", "--kubeconfig", &kubeconfig])?;
    assert_ne!(run.code, Some(0));
    assert_eq!(
        run.stdout.matches(&"-".repeat(80)).count(),
        7,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("\tName: olm-spec-descriptors\n\tState: fail\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("5 of 6 test(s) passed, 1 did not"),
        "{}",
        run.stdout
    );
    Ok(())
}

/// The names of the Memcached objects left in namespace `default`.
fn memcacheds_left(server: &Server) -> anyhow::Result<Vec<String>> {
    use kube::api::{Api, ApiResource, DynamicObject, ListParams};
    use kube::core::GroupVersionKind;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = server.client().await?;
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("cache.example.com", "v1", "Memcached"),
            "memcacheds",
        );
        let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
        let list = api.list(&ListParams::default()).await?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect())
    })
}

fn start_server(dir: &Path) -> anyhow::Result<Server> {
    Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: dir.join("kubeconfig"),
    })
}

#[test]
fn in_a_project_the_defaults_are_its_bundle_and_its_korral_kubeconfig() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let server = start_server(tmp.path())?;
    let project = tmp.path().join("project");
    write_bundle(&project.join("bundle"), &csv(good_descriptors()))?;
    std::fs::write(project.join("PROJECT"), "")?;
    std::fs::create_dir_all(project.join(".korral"))?;
    std::fs::copy(&server.kubeconfig, project.join(".korral/kubeconfig"))?;
    std::fs::create_dir_all(project.join("src"))?;
    // From a subdirectory, no BUNDLE_DIR and no --kubeconfig (KUBECONFIG unset, HOME empty).
    let run = scorecard(&project.join("src"), &["--output", "json"])?;
    assert_eq!(
        run.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    let report: Value = serde_json::from_str(&run.stdout)?;
    let got = results(&report);
    assert_eq!(got.len(), 6, "{report}");
    assert!(
        got[0].1["log"]
            .as_str()
            .is_some_and(|l| l.contains("Created, read back and deleted 1")),
        "{}",
        got[0].1
    );
    Ok(())
}

#[test]
fn an_example_the_server_rejects_fails_basic_check_spec() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let server = start_server(tmp.path())?;
    let bundle = tmp.path().join("bundle");
    // `size` is an integer in the CRD's schema: the API server refuses the example.
    write_bundle(
        &bundle,
        &csv_with_example(good_descriptors(), json!({"size": "three"})),
    )?;
    let kubeconfig = server.kubeconfig.display().to_string();
    let run = scorecard(
        tmp.path(),
        &["bundle", "--kubeconfig", &kubeconfig, "--output", "json"],
    )?;
    assert_ne!(run.code, Some(0), "{}", run.stdout);
    let report: Value = serde_json::from_str(&run.stdout)
        .with_context(|| format!("stdout is not JSON:\n{}", run.stdout))?;
    for (label, result) in results(&report) {
        if label == "basic-check-spec-test" {
            assert_eq!(result["state"], "fail", "{result}");
            let error = result["errors"][0].as_str().unwrap_or_default();
            assert!(
                error.contains("creating Memcached memcached-sample"),
                "{error}"
            );
            assert!(error.contains("size"), "{error}");
        } else {
            assert_eq!(result["state"], "pass", "{label}: {result}");
        }
    }
    Ok(())
}

#[test]
fn a_missing_namespace_is_an_error_naming_it() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let server = start_server(tmp.path())?;
    let bundle = tmp.path().join("bundle");
    write_bundle(&bundle, &csv(good_descriptors()))?;
    let kubeconfig = server.kubeconfig.display().to_string();
    let run = scorecard(
        tmp.path(),
        &[
            "bundle",
            "--selector",
            "suite=basic",
            "--kubeconfig",
            &kubeconfig,
            "--namespace",
            "no-such-ns",
            "--output",
            "json",
        ],
    )?;
    assert_ne!(run.code, Some(0), "{}", run.stdout);
    let report: Value = serde_json::from_str(&run.stdout)
        .with_context(|| format!("stdout is not JSON:\n{}", run.stdout))?;
    let got = results(&report);
    assert_eq!(got.len(), 1, "{report}");
    assert_eq!(got[0].1["state"], "error", "{}", got[0].1);
    let error = got[0].1["errors"][0].as_str().unwrap_or_default();
    assert!(
        error.contains("namespace no-such-ns does not exist"),
        "{error}"
    );
    Ok(())
}

#[test]
fn a_cluster_that_cannot_be_reached_is_an_error_not_a_pass() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let bundle = tmp.path().join("bundle");
    write_bundle(&bundle, &csv(good_descriptors()))?;
    let kubeconfig = tmp.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n",
    )?;
    let run = scorecard(
        tmp.path(),
        &[
            "bundle",
            "--selector",
            "suite=basic",
            "--kubeconfig",
            &kubeconfig.display().to_string(),
            "--output",
            "json",
            "--wait-time",
            "5s",
        ],
    )?;
    assert_ne!(run.code, Some(0), "{}", run.stdout);
    let report: Value = serde_json::from_str(&run.stdout)
        .with_context(|| format!("stdout is not JSON:\n{}", run.stdout))?;
    let got = results(&report);
    assert_eq!(got.len(), 1, "{report}");
    assert_eq!(got[0].0, "basic-check-spec-test");
    assert_eq!(got[0].1["state"], "error", "{}", got[0].1);
    Ok(())
}

#[test]
fn the_olm_suite_needs_no_cluster_and_bad_input_is_named() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let bundle = tmp.path().join("bundle");
    write_bundle(&bundle, &csv(good_descriptors()))?;
    // No kubeconfig anywhere: the olm suite still runs.
    let run = scorecard(
        tmp.path(),
        &["bundle", "--selector", "suite=olm", "--output", "json"],
    )?;
    assert_eq!(
        run.code,
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    let report: Value = serde_json::from_str(&run.stdout)?;
    assert_eq!(results(&report).len(), 5);

    let run = scorecard(tmp.path(), &["nowhere", "--selector", "suite=olm"])?;
    assert_ne!(run.code, Some(0));
    assert!(
        run.stderr.contains("nowhere") && run.stderr.contains("does not exist"),
        "{}",
        run.stderr
    );

    std::fs::create_dir_all(tmp.path().join("empty/manifests"))?;
    let run = scorecard(tmp.path(), &["empty", "--selector", "suite=olm"])?;
    assert_ne!(run.code, Some(0));
    assert!(
        run.stderr.contains("no ClusterServiceVersion"),
        "{}",
        run.stderr
    );

    let run = scorecard(tmp.path(), &["bundle", "--selector", "suite=kuttl"])?;
    assert_ne!(run.code, Some(0));
    assert!(run.stderr.contains("suite=kuttl"), "{}", run.stderr);
    Ok(())
}
