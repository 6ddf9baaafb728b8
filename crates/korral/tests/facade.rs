//! The facade end to end: a manager with one controller reconciles ConfigMaps on the embedded
//! control plane and stops cleanly.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use korral::prelude::*;
use korral_testenv::TestEnv;
use kube::api::PostParams;
use tokio::sync::{mpsc, watch};

async fn reconcile(
    cm: Arc<ConfigMap>,
    seen: Arc<mpsc::UnboundedSender<String>>,
) -> ReconcileResult {
    let _ = seen.send(cm.name_any());
    Ok(Action::done())
}

#[tokio::test]
async fn manager_reconciles_configmaps_through_the_facade() {
    let env = TestEnv::start().await.expect("env");
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
    let mut manager = Manager::builder(env.client()).build().expect("manager");
    let controller = Controller::new(manager.cache().clone(), "configmaps")
        .for_::<ConfigMap>(korral::cache::Scope::namespace("default"));
    manager.add_controller(controller, reconcile, Arc::new(seen_tx));
    let (stop_tx, mut stop_rx) = watch::channel(false);
    let running = tokio::spawn(manager.run(async move {
        let _ = stop_rx.changed().await;
    }));

    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": "hello"}}))
        .expect("configmap");
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create");
    let name = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match seen_rx.recv().await {
                Some(name) if name == "hello" => return Some(name),
                Some(_) => continue,
                None => return None,
            }
        }
    })
    .await
    .expect("reconciled in time");
    assert_eq!(name.as_deref(), Some("hello"));

    let _ = stop_tx.send(true);
    let result = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("stopped in time")
        .expect("join");
    assert!(result.is_ok(), "{result:?}");
}
