//! The AppService operator against the embedded control plane (korral-testenv): one Pod per
//! AppService, recreated when deleted, and a deletion that waits for the finalizer's cleanup.

use std::time::Duration;

use anyhow::{Result, ensure};
use appservice_operator::{AppService, FINALIZER};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::events::v1::Event;
use korral::prelude::*;
use korral_testenv::{TestEnv, wait_until};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(15);
const POD: &str = "appservice-sample-pod";

struct Running {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), korral::manager::ManagerError>>,
}

impl Running {
    fn start(env: &TestEnv) -> Result<Self> {
        let mut manager = Manager::builder(env.client())
            .metrics_registry(korral::metrics::Registry::new())
            .build()?;
        appservice_operator::add_to_manager(&mut manager, Scope::namespace("default"));
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

/// The reasons of the events recorded about the AppService `name`.
async fn event_reasons(events: &Api<Event>, name: &str) -> Vec<String> {
    let Ok(list) = events.list(&ListParams::default()).await else {
        return Vec::new();
    };
    list.items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("AppService")
        })
        .filter_map(|e| e.reason)
        .collect()
}

#[tokio::test]
async fn appservice_pod_recreation_and_deletion_waiting_for_cleanup() -> Result<()> {
    let env = TestEnv::builder().crd::<AppService>().start().await?;
    let running = Running::start(&env)?;
    let apps: Api<AppService> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let events: Api<Event> = Api::namespaced(env.client(), "default");

    let created = apps
        .create(&PostParams::default(), &appservice_operator::sample())
        .await?;
    wait_until(WAIT, "the Pod", || async {
        matches!(pods.get_opt(POD).await, Ok(Some(_)))
    })
    .await?;
    let pod = serde_json::to_value(pods.get(POD).await?)?;
    ensure!(pod["spec"]["containers"][0]["image"] == "busybox", "{pod}");
    ensure!(pod["spec"]["containers"][0]["command"] == json!(["sleep", "3600"]));
    let owner = &pod["metadata"]["ownerReferences"][0];
    ensure!(owner["kind"] == "AppService" && owner["controller"] == true);
    ensure!(owner["uid"] == json!(created.metadata.uid));
    wait_until(WAIT, "the finalizer and status.podName", || async {
        apps.get("appservice-sample").await.is_ok_and(|app| {
            app.finalizers().iter().any(|f| f == FINALIZER)
                && app.status.and_then(|s| s.pod_name).as_deref() == Some(POD)
        })
    })
    .await?;
    wait_until(WAIT, "a PodCreated event", || async {
        event_reasons(&events, "appservice-sample")
            .await
            .iter()
            .any(|r| r == "PodCreated")
    })
    .await?;

    // A Pod deleted behind the operator's back comes back.
    let first_uid = pods.get(POD).await?.metadata.uid;
    pods.delete(POD, &DeleteParams::default().grace_period(0))
        .await?;
    wait_until(WAIT, "the Pod recreated", || async {
        matches!(pods.get_opt(POD).await, Ok(Some(p)) if p.metadata.uid != first_uid)
    })
    .await?;

    // Hold the Pod with a finalizer of our own, so the cleanup cannot finish yet.
    pods.patch(
        POD,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["test.example.com/hold"]}})),
    )
    .await?;
    apps.delete("appservice-sample", &DeleteParams::default())
        .await?;
    // The operator deletes the Pod itself and says so ...
    wait_until(WAIT, "the Pod deleted by the cleanup", || async {
        matches!(pods.get_opt(POD).await, Ok(Some(p)) if p.metadata.deletion_timestamp.is_some())
    })
    .await?;
    wait_until(WAIT, "a DeletingPod event", || async {
        event_reasons(&events, "appservice-sample")
            .await
            .iter()
            .any(|r| r == "DeletingPod")
    })
    .await?;
    // ... and the AppService waits for the cleanup: still there, finalizer in place, for as long
    // as the Pod is (checked over a few reconcile retries).
    for _ in 0..5 {
        let app = apps.get("appservice-sample").await?;
        ensure!(app.metadata.deletion_timestamp.is_some());
        ensure!(app.finalizers().iter().any(|f| f == FINALIZER));
        ensure!(
            !event_reasons(&events, "appservice-sample")
                .await
                .iter()
                .any(|r| r == "CleanedUp"),
            "cleanup reported done while the Pod still exists"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Release the Pod: it goes, the cleanup finishes, the finalizer is removed, the AppService
    // goes.
    pods.patch(
        POD,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    wait_until(WAIT, "the AppService gone", || async {
        matches!(apps.get_opt("appservice-sample").await, Ok(None))
    })
    .await?;
    ensure!(pods.get_opt(POD).await?.is_none());
    ensure!(
        event_reasons(&events, "appservice-sample")
            .await
            .iter()
            .any(|r| r == "CleanedUp")
    );

    running.stop().await
}
