//! The helloapp-operator binary's generated manifests: `--print-crd` installs on the embedded
//! control plane, and `--print-manifests` (read by `korral generate`) carries the CRD and the
//! RBAC the controller needs.

use std::process::Command;

use anyhow::{Context, Result, ensure};
use korral_testenv::TestEnv;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_helloapp-operator");

#[tokio::test]
async fn printed_crd_installs_and_manifests_carry_the_rbac() -> Result<()> {
    let crd = Command::new(BIN)
        .env("ENABLE_WEBHOOKS", "false")
        .arg("--print-crd")
        .output()?;
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
                && o["metadata"]["name"] == "helloapps.apps.example.com"),
        "the CRD is in the manifests"
    );
    // With the conversion webhook, one CRD serves v1 and v2, stores the hub (v2) and
    // converts through the operator's /convert.
    let crd = objects
        .iter()
        .find(|o| o["kind"] == "CustomResourceDefinition")
        .context("the CRD")?;
    let versions: Vec<(&Value, &Value, &Value)> = crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| (&v["name"], &v["served"], &v["storage"]))
        .collect();
    ensure!(
        versions
            == [
                (&Value::from("v1"), &Value::from(true), &Value::from(false)),
                (&Value::from("v2"), &Value::from(true), &Value::from(true)),
            ],
        "{versions:?}"
    );
    ensure!(
        crd["spec"]["conversion"]["strategy"] == "Webhook"
            && crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"]
                == "/convert",
        "{}",
        crd["spec"]["conversion"]
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
        ("helloapps", "watch"),
        ("helloapps/status", "patch"),
        ("deployments", "create"),
        ("deployments", "update"),
    ] {
        ensure!(
            allows(resource, verb),
            "the ClusterRole allows {verb} on {resource}: {role}"
        );
    }
    Ok(())
}
