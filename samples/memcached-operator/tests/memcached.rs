//! The Memcached operator against the embedded control plane (korral-testenv): the Deployment
//! as the tutorial specifies it, replica drift repair, `status.nodes` following the pods,
//! validation of `spec.size`, and garbage collection of the Deployment.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use korral::prelude::*;
use korral_testenv::{TestEnv, wait_until};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use memcached_operator::{Memcached, MemcachedSpec};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(15);

/// A running manager with the Memcached controller; stopped by [`Running::stop`].
struct Running {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), korral::manager::ManagerError>>,
}

impl Running {
    fn start(env: &TestEnv) -> Result<Self> {
        let mut manager = Manager::builder(env.client())
            .metrics_registry(korral::metrics::Registry::new())
            .build()?;
        memcached_operator::add_to_manager(&mut manager, Scope::namespace("default"));
        let (stop, mut stop_rx) = watch::channel(false);
        let task = tokio::spawn(manager.run(async move {
            let _ = stop_rx.wait_for(|s| *s).await;
        }));
        Ok(Self { stop, task })
    }

    async fn stop(self) -> Result<()> {
        self.stop.send_replace(true);
        tokio::time::timeout(WAIT, self.task).await???;
        Ok(())
    }
}

fn labelled_pod(name: &str, cr: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "memcached", "memcached_cr": cr}},
        "spec": {"containers": [{"name": "memcached", "image": "memcached:1.4.36-alpine"}]}
    }))
    .expect("pod")
}

async fn replicas(api: &Api<Deployment>, name: &str) -> Option<i32> {
    api.get_opt(name).await.ok().flatten()?.spec.replicas
}

async fn nodes(api: &Api<Memcached>, name: &str) -> Option<Vec<String>> {
    api.get(name).await.ok()?.status.map(|s| s.nodes)
}

#[tokio::test]
async fn memcached_deployment_drift_status_and_garbage_collection() -> Result<()> {
    let env = TestEnv::builder().crd::<Memcached>().start().await?;
    let running = Running::start(&env)?;
    let memcacheds: Api<Memcached> = Api::namespaced(env.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");

    let created = memcacheds
        .create(&PostParams::default(), &memcached_operator::sample())
        .await?;

    // The Deployment, exactly as the tutorial specifies it.
    wait_until(WAIT, "the Deployment with 3 replicas", || async {
        replicas(&deployments, "memcached-sample").await == Some(3)
    })
    .await?;
    let deployment = serde_json::to_value(deployments.get("memcached-sample").await?)?;
    let labels = json!({"app": "memcached", "memcached_cr": "memcached-sample"});
    ensure!(
        deployment["spec"]["selector"]["matchLabels"] == labels,
        "{deployment}"
    );
    ensure!(deployment["spec"]["template"]["metadata"]["labels"] == labels);
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    ensure!(container["name"] == "memcached");
    ensure!(container["image"] == "memcached:1.4.36-alpine");
    ensure!(container["command"] == json!(["memcached", "-m=64", "-o", "modern", "-v"]));
    ensure!(container["ports"][0]["containerPort"] == 11211);
    ensure!(container["ports"][0]["name"] == "memcached");
    let owner = &deployment["metadata"]["ownerReferences"][0];
    ensure!(owner["kind"] == "Memcached" && owner["controller"] == true);
    ensure!(owner["uid"] == json!(created.metadata.uid), "{owner}");
    // No pods yet (no workload simulation here): an empty node list.
    wait_until(WAIT, "an empty status.nodes", || async {
        nodes(&memcacheds, "memcached-sample").await == Some(vec![])
    })
    .await?;

    // Someone scales the Deployment by hand: the operator puts the size back.
    deployments
        .patch(
            "memcached-sample",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await?;
    wait_until(WAIT, "the replica drift repaired", || async {
        replicas(&deployments, "memcached-sample").await == Some(3)
    })
    .await?;

    // A new size reaches the Deployment.
    memcacheds
        .patch(
            "memcached-sample",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 5}})),
        )
        .await?;
    wait_until(WAIT, "5 replicas", || async {
        replicas(&deployments, "memcached-sample").await == Some(5)
    })
    .await?;
    let generation = deployments
        .get("memcached-sample")
        .await?
        .metadata
        .generation;

    // status.nodes follows the pods carrying the labels, sorted; other pods do not count.
    for (name, cr) in [
        ("memcached-sample-b", "memcached-sample"),
        ("memcached-sample-a", "memcached-sample"),
        ("other-x", "other"),
    ] {
        pods.create(&PostParams::default(), &labelled_pod(name, cr))
            .await?;
    }
    let expected = vec![
        "memcached-sample-a".to_owned(),
        "memcached-sample-b".to_owned(),
    ];
    wait_until(WAIT, "status.nodes with both pods", || async {
        nodes(&memcacheds, "memcached-sample").await.as_ref() == Some(&expected)
    })
    .await?;
    pods.delete("memcached-sample-b", &DeleteParams::default())
        .await?;
    wait_until(WAIT, "status.nodes without the deleted pod", || async {
        nodes(&memcacheds, "memcached-sample").await == Some(vec!["memcached-sample-a".to_owned()])
    })
    .await?;
    // The pod events reconciled the Memcached several times without touching the Deployment's
    // spec (no update loop against server defaults).
    ensure!(
        deployments
            .get("memcached-sample")
            .await?
            .metadata
            .generation
            == generation,
        "the Deployment spec was rewritten by reconciles that had nothing to change"
    );

    // Deleting the resource deletes its Deployment (garbage collection).
    memcacheds
        .delete("memcached-sample", &DeleteParams::default())
        .await?;
    wait_until(WAIT, "the Deployment garbage-collected", || async {
        matches!(deployments.get_opt("memcached-sample").await, Ok(None))
    })
    .await?;

    running.stop().await
}

#[tokio::test]
async fn a_negative_size_is_rejected_and_nothing_is_created() -> Result<()> {
    let env = TestEnv::builder().crd::<Memcached>().start().await?;
    let memcacheds: Api<Memcached> = Api::namespaced(env.client(), "default");
    let bad = Memcached::new("bad", MemcachedSpec { size: -1 });
    let err = memcacheds
        .create(&PostParams::default(), &bad)
        .await
        .err()
        .context("a negative size must be rejected")?;
    let kube::Error::Api(status) = err else {
        anyhow::bail!("unexpected error {err}");
    };
    ensure!(status.code == 422, "{status:?}");
    ensure!(status.message.contains("spec.size"), "{}", status.message);
    ensure!(memcacheds.get_opt("bad").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn two_memcacheds_get_their_own_deployments_and_nodes() -> Result<()> {
    let env = TestEnv::builder().crd::<Memcached>().start().await?;
    let running = Running::start(&env)?;
    let memcacheds: Api<Memcached> = Api::namespaced(env.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    for (name, size) in [("one", 1), ("two", 2)] {
        memcacheds
            .create(
                &PostParams::default(),
                &Memcached::new(name, MemcachedSpec { size }),
            )
            .await?;
    }
    pods.create(&PostParams::default(), &labelled_pod("two-pod", "two"))
        .await?;
    wait_until(WAIT, "both Deployments", || async {
        replicas(&deployments, "one").await == Some(1)
            && replicas(&deployments, "two").await == Some(2)
    })
    .await?;
    wait_until(WAIT, "each status.nodes", || async {
        nodes(&memcacheds, "one").await == Some(vec![])
            && nodes(&memcacheds, "two").await == Some(vec!["two-pod".to_owned()])
    })
    .await?;
    running.stop().await
}

/// The names of the Ready pods of `memcached-sample`, sorted.
async fn ready_pods(pods: &Api<Pod>) -> Vec<String> {
    let params =
        kube::api::ListParams::default().labels("app=memcached,memcached_cr=memcached-sample");
    let Ok(list) = pods.list(&params).await else {
        return Vec::new();
    };
    let mut names: Vec<String> = list
        .items
        .iter()
        .filter(|pod| {
            pod.metadata.deletion_timestamp.is_none()
                && pod
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .map(|pod| pod.name_any())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn with_workload_simulation_ready_pods_fill_status_nodes() -> Result<()> {
    let env = TestEnv::builder()
        .crd::<Memcached>()
        .simulation(true)
        .start()
        .await?;
    let running = Running::start(&env)?;
    let memcacheds: Api<Memcached> = Api::namespaced(env.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    memcacheds
        .create(&PostParams::default(), &memcached_operator::sample())
        .await?;

    for size in [3_usize, 5] {
        if size != 3 {
            memcacheds
                .patch(
                    "memcached-sample",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"size": size}})),
                )
                .await?;
        }
        wait_until(
            WAIT,
            format!("{size} ready pods listed in status.nodes"),
            || async {
                let ready = ready_pods(&pods).await;
                ready.len() == size
                    && nodes(&memcacheds, "memcached-sample").await.as_ref() == Some(&ready)
            },
        )
        .await?;
        let deployment = deployments.get("memcached-sample").await?;
        let ready_replicas = deployment.status.and_then(|s| s.ready_replicas);
        ensure!(
            ready_replicas == Some(i32::try_from(size)?),
            "{ready_replicas:?}"
        );
    }
    // The pods are the Deployment's: <deployment>-<hash>-<suffix>.
    let names = nodes(&memcacheds, "memcached-sample")
        .await
        .context("status.nodes")?;
    ensure!(
        names.iter().all(|n| n.starts_with("memcached-sample-")),
        "{names:?}"
    );

    memcacheds
        .delete("memcached-sample", &DeleteParams::default())
        .await?;
    wait_until(
        WAIT,
        "the Deployment and its pods garbage-collected",
        || async {
            matches!(deployments.get_opt("memcached-sample").await, Ok(None))
                && ready_pods(&pods).await.is_empty()
        },
    )
    .await?;
    running.stop().await
}
