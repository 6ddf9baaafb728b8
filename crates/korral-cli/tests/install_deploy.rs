//! `korral install`, `deploy`, `undeploy` and `build-installer` on a project's `config/`,
//! against a real `korral apiserver` process: server-side apply with field manager `korral`
//! (created / unchanged / configured), the kustomize subset (namespace, images) and the refusal
//! of kustomize fields korral does not implement.

mod support;

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use support::{KORRAL, Options, Server, Storage, run_with_timeout};

const TIMEOUT: Duration = Duration::from_secs(60);

fn write(root: &Path, path: &str, text: &str) -> anyhow::Result<()> {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().context("parent")?)?;
    std::fs::write(path, text)?;
    Ok(())
}

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.demo.example.com
spec:
  group: demo.example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

const MANAGER: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: demo-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo-controller-manager
spec:
  replicas: 1
  selector:
    matchLabels: {control-plane: controller-manager}
  template:
    metadata:
      labels: {control-plane: controller-manager}
    spec:
      serviceAccountName: demo-controller-manager
      containers:
      - name: manager
        image: controller:latest
"#;

const RBAC: &str = r#"apiVersion: v1
kind: ServiceAccount
metadata:
  name: demo-controller-manager
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: demo-manager-role
rules:
- apiGroups: [demo.example.com]
  resources: [gadgets]
  verbs: [get, list, watch]
"#;

/// A project directory with the `config/` layout `korral init` and `korral generate` write.
fn project(root: &Path) -> anyhow::Result<()> {
    write(
        root,
        "PROJECT",
        "domain: example.com\nlayout: rust.korral.rs/v1\nprojectName: demo\nrepo: demo\nresources: []\n",
    )?;
    write(root, "config/crd/bases/demo.example.com_gadgets.yaml", CRD)?;
    write(
        root,
        "config/crd/kustomization.yaml",
        "resources:\n- bases/demo.example.com_gadgets.yaml\n",
    )?;
    write(root, "config/rbac/rbac.yaml", RBAC)?;
    write(root, "config/rbac/kustomization.yaml", "resources:\n- rbac.yaml\n")?;
    write(root, "config/manager/manager.yaml", MANAGER)?;
    write(
        root,
        "config/manager/kustomization.yaml",
        "resources:\n- manager.yaml\nimages:\n- name: controller\n  newName: registry.example/demo\n  newTag: v0\n",
    )?;
    write(
        root,
        "config/default/kustomization.yaml",
        "namespace: demo-system\nresources:\n- ../crd\n- ../rbac\n- ../manager\n",
    )?;
    Ok(())
}

fn korral(server: &Server, root: &Path, args: &[&str]) -> anyhow::Result<support::CmdOutput> {
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend([
        "--kubeconfig".to_string(),
        server.kubeconfig.display().to_string(),
        "--dir".to_string(),
        root.display().to_string(),
    ]);
    run_with_timeout(Path::new(KORRAL), &all, &[], TIMEOUT)
}

#[tokio::test(flavor = "multi_thread")]
async fn install_and_deploy_server_side_apply_the_config() -> anyhow::Result<()> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join("demo");
    project(&root)?;
    let server = Server::start(Options {
        storage: Storage::InMemory,
        port: 0,
        kubeconfig: tmp.path().join("kubeconfig"),
    })?;
    let client = server.client().await?;

    let first = korral(&server, &root, &["install"])?;
    assert!(first.success(), "{}", first.describe());
    assert!(
        first
            .stdout
            .contains("CustomResourceDefinition gadgets.demo.example.com created"),
        "{}",
        first.describe()
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get("gadgets.demo.example.com").await?;
    let managers: Vec<(String, String)> = crd
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            (
                m.manager.unwrap_or_default(),
                m.operation.unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        managers.contains(&("korral".to_string(), "Apply".to_string())),
        "{managers:?}"
    );
    let again = korral(&server, &root, &["install"])?;
    assert!(
        again
            .stdout
            .contains("CustomResourceDefinition gadgets.demo.example.com unchanged"),
        "{}",
        again.describe()
    );

    // deploy: the kustomization's image, unless --image overrides it; namespaced objects land
    // in the kustomization's namespace.
    let deployed = korral(&server, &root, &["deploy"])?;
    assert!(deployed.success(), "{}", deployed.describe());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "demo-system");
    let image = |d: &Deployment| -> Option<String> {
        d.spec
            .template
            .spec
            .as_ref()?
            .containers
            .first()?
            .image
            .clone()
    };
    let manager = deployments.get("demo-controller-manager").await?;
    assert_eq!(image(&manager).as_deref(), Some("registry.example/demo:v0"));
    let redeployed = korral(&server, &root, &["deploy", "--image", "registry.example/demo:v1"])?;
    assert!(
        redeployed
            .stdout
            .contains("Deployment demo-system/demo-controller-manager configured"),
        "{}",
        redeployed.describe()
    );
    let manager = deployments.get("demo-controller-manager").await?;
    assert_eq!(image(&manager).as_deref(), Some("registry.example/demo:v1"));

    // build-installer: the same objects in one file, in creation order.
    let built = korral(
        &server,
        &root,
        &["build-installer", "--image", "registry.example/demo:v2"],
    )?;
    assert!(built.success(), "{}", built.describe());
    let text = std::fs::read_to_string(root.join("dist/install.yaml"))?;
    let docs: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(serde::Deserialize::deserialize)
        .collect::<Result<_, _>>()?;
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "Deployment"
        ]
    );
    assert_eq!(
        docs[4]["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.example/demo:v2"
    );
    assert_eq!(docs[2]["metadata"]["namespace"], "demo-system");

    // A kustomize field korral does not implement is refused by name, nothing applied.
    write(
        &root,
        "config/default/kustomization.yaml",
        "namespace: demo-system\nnamePrefix: demo-\nresources:\n- ../crd\n- ../rbac\n- ../manager\n",
    )?;
    let refused = korral(&server, &root, &["deploy"])?;
    assert!(!refused.success(), "{}", refused.describe());
    assert!(refused.stderr.contains("namePrefix"), "{}", refused.describe());

    write(
        &root,
        "config/default/kustomization.yaml",
        "namespace: demo-system\nresources:\n- ../crd\n- ../rbac\n- ../manager\n",
    )?;
    let undeployed = korral(&server, &root, &["undeploy"])?;
    assert!(undeployed.success(), "{}", undeployed.describe());
    assert!(
        deployments
            .get_opt("demo-controller-manager")
            .await?
            .is_none()
    );
    Ok(())
}
