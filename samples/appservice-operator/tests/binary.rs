//! The appservice-operator binary's generated manifests: `--print-crd` installs on the embedded
//! control plane, and `--print-manifests` (read by `korral generate`) carries the CRD and the
//! RBAC the controller needs.

use std::process::Command;

use anyhow::{Context, Result, ensure};
use korral_testenv::TestEnv;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_appservice-operator");

#[tokio::test]
async fn printed_crd_installs_and_manifests_carry_the_rbac() -> Result<()> {
    let crd = Command::new(BIN).arg("--print-crd").output()?;
    ensure!(crd.status.success(), "--print-crd failed");
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("crd.yaml");
    std::fs::write(&path, &crd.stdout)?;
    let env = TestEnv::start().await?;
    env.install_crd_file(&path).await?;

    let manifests = Command::new(BIN).arg("--print-manifests").output()?;
    ensure!(manifests.status.success(), "--print-manifests failed");
    let set: Value = serde_json::from_slice(&manifests.stdout).context("manifest JSON")?;
    let objects: Vec<&Value> = set["files"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["objects"].as_array().into_iter().flatten())
        .collect();
    ensure!(
        objects
            .iter()
            .any(|o| o["kind"] == "CustomResourceDefinition"
                && o["metadata"]["name"] == "appservices.app.example.com"),
        "the CRD is in the manifests"
    );
    let role = objects
        .iter()
        .find(|o| o["kind"] == "ClusterRole")
        .context("a ClusterRole")?;
    let allows = |resource: &str, verb: &str| {
        role["rules"].as_array().into_iter().flatten().any(|rule| {
            rule["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r == resource)
                && rule["verbs"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|v| v == verb)
        })
    };
    for (resource, verb) in [
        ("appservices", "watch"),
        ("appservices/status", "patch"),
        ("appservices/finalizers", "update"),
        ("pods", "create"),
        ("pods", "delete"),
        ("events", "create"),
    ] {
        ensure!(
            allows(resource, verb),
            "the ClusterRole allows {verb} on {resource}: {role}"
        );
    }
    Ok(())
}
