//! The memcached-operator binary as a user runs it: its `--print-crd` output installs on the
//! embedded control plane, it finds the cluster through `KUBECONFIG`, takes the leader election
//! Lease, reconciles the tutorial CR, and stops cleanly on SIGTERM.

use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use korral::prelude::*;
use korral_testenv::{TestEnv, wait_until};
use kube::api::PostParams;
use memcached_operator::Memcached;

const WAIT: Duration = Duration::from_secs(20);
const BIN: &str = env!("CARGO_BIN_EXE_memcached-operator");

#[tokio::test]
async fn the_binary_runs_against_a_cluster_from_kubeconfig_and_stops_on_sigterm() -> Result<()> {
    let env = TestEnv::start().await?;

    // The CRD as the binary prints it is what the cluster gets.
    let crd = Command::new(BIN).arg("--print-crd").output()?;
    ensure!(crd.status.success(), "--print-crd failed");
    let dir = tempfile::tempdir()?;
    let crd_path = dir.path().join("crd.yaml");
    std::fs::write(&crd_path, &crd.stdout)?;
    env.install_crd_file(&crd_path).await?;

    let mut child = Command::new(BIN)
        .env("KUBECONFIG", env.kubeconfig_path())
        .env("RUST_LOG", "info")
        .env("ENABLE_WEBHOOKS", "false")
        .args([
            "--namespace",
            "default",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
            "--leader-elect",
            "--leader-election-namespace",
            "default",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting memcached-operator")?;

    let result = async {
        let yaml = include_str!("../config/samples/cache_v1_memcached.yaml");
        let sample: Memcached = serde_yaml_ng::from_str(yaml)?;
        let memcacheds: Api<Memcached> = Api::namespaced(env.client(), "default");
        memcacheds.create(&PostParams::default(), &sample).await?;
        let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
        wait_until(WAIT, "the Deployment made by the binary", || async {
            matches!(deployments.get_opt("memcached-sample").await,
                Ok(Some(d)) if d.spec.replicas == Some(3))
        })
        .await?;
        let leases: Api<Lease> = Api::namespaced(env.client(), "default");
        let lease = leases.get("memcached-operator.example.com").await?;
        ensure!(
            lease.spec.and_then(|s| s.holder_identity).is_some(),
            "the binary holds the Lease"
        );
        anyhow::Ok(())
    }
    .await;

    // SIGTERM: a graceful stop with exit status 0.
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    ensure!(status.success(), "kill -TERM");
    let mut exited = None;
    wait_until(WAIT, "the binary to exit after SIGTERM", || {
        let polled = child.try_wait();
        let done = matches!(polled, Ok(Some(_)));
        if let Ok(Some(status)) = polled {
            exited = Some(status);
        }
        async move { done }
    })
    .await
    .inspect_err(|_| {
        let _ = child.kill();
    })?;
    result?;
    let exited = exited.context("exit status")?;
    ensure!(exited.success(), "exit status {exited}");
    Ok(())
}
