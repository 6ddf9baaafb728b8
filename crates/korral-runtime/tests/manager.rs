//! The manager against the embedded API server. Every wait polls with a timeout.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, ensure};
use k8s_openapi::api::core::v1::ConfigMap;
use korral_runtime::cache::Scope;
use korral_runtime::controller::Controller;
use korral_runtime::leader::LeaderElectionConfig;
use korral_runtime::manager::{Manager, ManagerError};
use korral_runtime::metrics::Registry;
use korral_runtime::reconcile::{Action, ReconcileResult};
use korral_testenv::{TestEnv, wait_until};
use kube::Client;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;

const WAIT: Duration = Duration::from_secs(10);

async fn create_configmap(client: &Client, name: &str) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), "v".to_owned())])),
        ..ConfigMap::default()
    };
    api.create(&PostParams::default(), &cm)
        .await
        .context("creating configmap")?;
    Ok(())
}

fn stopper() -> (
    watch::Sender<bool>,
    impl Future<Output = ()> + Send + 'static,
) {
    let (tx, mut rx) = watch::channel(false);
    (tx, async move {
        let _ = rx.wait_for(|stop| *stop).await;
    })
}

#[derive(Default)]
struct Slow {
    started: AtomicBool,
    finished: AtomicBool,
    delay_ms: AtomicUsize,
}

async fn slow_reconcile(_cm: Arc<ConfigMap>, slow: Arc<Slow>) -> ReconcileResult {
    slow.started.store(true, Ordering::SeqCst);
    let delay = slow.delay_ms.load(Ordering::SeqCst) as u64;
    tokio::time::sleep(Duration::from_millis(delay)).await;
    slow.finished.store(true, Ordering::SeqCst);
    Ok(Action::done())
}

#[tokio::test]
async fn graceful_shutdown_waits_for_an_in_flight_reconcile() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let mut manager = Manager::builder(client.clone())
        .metrics_registry(Registry::new())
        .graceful_timeout(Duration::from_secs(10))
        .build()?;
    let controller = Controller::new(manager.cache().clone(), "slow").for_::<ConfigMap>(Scope::All);
    let slow = Arc::new(Slow::default());
    slow.delay_ms.store(800, Ordering::SeqCst);
    manager.add_controller(controller, slow_reconcile, Arc::clone(&slow));
    let registry = manager.registry().clone();
    let health = manager.health().clone();
    ensure!(
        !health.check_readyz().await.is_ok(),
        "not ready before the caches sync"
    );
    let (stop, shutdown) = stopper();
    let run = tokio::spawn(manager.run(shutdown));

    wait_until(WAIT, "ready once caches synced", || async {
        health.check_readyz().await.is_ok()
    })
    .await?;
    create_configmap(&client, "slow-one").await?;
    wait_until(WAIT, "reconcile started", || async {
        slow.started.load(Ordering::SeqCst)
    })
    .await?;
    ensure!(!slow.finished.load(Ordering::SeqCst));
    stop.send_replace(true);
    tokio::time::timeout(WAIT, run).await???;
    ensure!(
        slow.finished.load(Ordering::SeqCst),
        "the manager returned before the reconcile in flight finished"
    );
    let text = registry.encode_text();
    ensure!(
        text.lines()
            .any(|l| l.starts_with("controller_runtime_reconcile_total")
                && l.contains("controller=\"slow\"")
                && l.contains("result=\"success\"")
                && l.ends_with(" 1")),
        "reconcile_total missing:\n{text}"
    );
    Ok(())
}

#[tokio::test]
async fn graceful_timeout_cancels_a_stuck_reconcile() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let mut manager = Manager::builder(client.clone())
        .metrics_registry(Registry::new())
        .graceful_timeout(Duration::from_millis(200))
        .build()?;
    let controller =
        Controller::new(manager.cache().clone(), "stuck").for_::<ConfigMap>(Scope::All);
    let slow = Arc::new(Slow::default());
    slow.delay_ms.store(60_000, Ordering::SeqCst);
    manager.add_controller(controller, slow_reconcile, Arc::clone(&slow));
    let (stop, shutdown) = stopper();
    let run = tokio::spawn(manager.run(shutdown));
    create_configmap(&client, "stuck-one").await?;
    wait_until(WAIT, "reconcile started", || async {
        slow.started.load(Ordering::SeqCst)
    })
    .await?;
    let stopping = Instant::now();
    stop.send_replace(true);
    let result = tokio::time::timeout(WAIT, run).await??;
    ensure!(
        matches!(result, Err(ManagerError::GracefulShutdown(_))),
        "expected a graceful timeout error, got {result:?}"
    );
    ensure!(stopping.elapsed() < Duration::from_secs(5));
    ensure!(!slow.finished.load(Ordering::SeqCst));
    Ok(())
}

#[tokio::test]
async fn leader_runnables_start_once_leading_and_others_at_once() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let config = LeaderElectionConfig::new("manager-test", "default")
        .with_identity("manager-a")
        .with_lease_duration(Duration::from_secs(4))
        .with_renew_deadline(Duration::from_secs(3))
        .with_retry_period(Duration::from_millis(200));
    let mut manager = Manager::builder(client.clone())
        .metrics_registry(Registry::new())
        .leader_election(config)
        .build()?;
    let plain = Arc::new(AtomicBool::new(false));
    let leader = Arc::new(AtomicBool::new(false));
    let stopped = Arc::new(AtomicUsize::new(0));
    for (name, needs_leader, flag) in [
        ("plain", false, Arc::clone(&plain)),
        ("leader-only", true, Arc::clone(&leader)),
    ] {
        let stopped = Arc::clone(&stopped);
        manager.add_runnable(name, needs_leader, move |stop| async move {
            flag.store(true, Ordering::SeqCst);
            stop.await;
            stopped.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
    }
    let registry = manager.registry().clone();
    let (stop, shutdown) = stopper();
    let run = tokio::spawn(manager.run(shutdown));
    wait_until(WAIT, "both runnables started", || async {
        plain.load(Ordering::SeqCst) && leader.load(Ordering::SeqCst)
    })
    .await?;
    ensure!(
        registry
            .encode_text()
            .contains("leader_election_master_status{name=\"manager-test\"} 1"),
        "leader status missing:\n{}",
        registry.encode_text()
    );
    stop.send_replace(true);
    tokio::time::timeout(WAIT, run)
        .await?
        .map_err(|e| anyhow!("join: {e}"))??;
    ensure!(
        stopped.load(Ordering::SeqCst) == 2,
        "both runnables stopped"
    );
    Ok(())
}

#[tokio::test]
async fn servers_start_before_the_caches_sync() -> Result<()> {
    // A user who may list nothing: the manager's cache never syncs.
    let env = TestEnv::builder()
        .authorization(korral_testenv::AuthorizationMode::Rbac)
        .start()
        .await?;
    let client = env.client_as_user("nobody", &[]).await?;
    let manager_client = client.clone();
    let mut manager = Manager::builder(manager_client)
        .metrics_registry(Registry::new())
        .build()?;
    manager.cache_type::<ConfigMap>(Scope::All)?;
    let server = Arc::new(AtomicBool::new(false));
    let server_stopped = Arc::new(AtomicBool::new(false));
    let plain = Arc::new(AtomicBool::new(false));
    {
        let (server, server_stopped) = (Arc::clone(&server), Arc::clone(&server_stopped));
        manager.add_server("webhooks", move |stop| async move {
            server.store(true, Ordering::SeqCst);
            stop.await;
            server_stopped.store(true, Ordering::SeqCst);
            Ok(())
        });
    }
    {
        let plain = Arc::clone(&plain);
        manager.add_runnable("after-caches", false, move |_stop| async move {
            plain.store(true, Ordering::SeqCst);
            Ok(())
        });
    }
    let (stop, shutdown) = stopper();
    let run = tokio::spawn(manager.run(shutdown));
    wait_until(WAIT, "the server started", || async {
        server.load(Ordering::SeqCst)
    })
    .await?;
    ensure!(
        !plain.load(Ordering::SeqCst),
        "a runnable started before the caches synced"
    );
    stop.send_replace(true);
    tokio::time::timeout(WAIT, run)
        .await?
        .map_err(|e| anyhow!("join: {e}"))??;
    ensure!(
        server_stopped.load(Ordering::SeqCst),
        "the server was stopped with the manager"
    );
    Ok(())
}

#[tokio::test]
async fn failing_runnable_stops_the_manager_with_its_error() -> Result<()> {
    let env = TestEnv::start().await?;
    let mut manager = Manager::builder(env.client())
        .metrics_registry(Registry::new())
        .build()?;
    manager.add_runnable("broken", false, |_stop| async { Err("boom".into()) });
    let result = tokio::time::timeout(WAIT, manager.run(std::future::pending())).await?;
    ensure!(
        matches!(&result, Err(ManagerError::Runnable { name, .. }) if name == "broken"),
        "expected the runnable's error, got {result:?}"
    );
    Ok(())
}

#[tokio::test]
async fn lost_lease_stops_the_manager_with_an_error() -> Result<()> {
    use jiff::Timestamp;
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    let env = TestEnv::start().await?;
    let client = env.client();
    let config = LeaderElectionConfig::new("lost-test", "default")
        .with_identity("manager-a")
        .with_lease_duration(Duration::from_secs(4))
        .with_renew_deadline(Duration::from_secs(3))
        .with_retry_period(Duration::from_millis(200));
    let mut manager = Manager::builder(client.clone())
        .metrics_registry(Registry::new())
        .leader_election(config)
        .build()?;
    let leading = Arc::new(AtomicBool::new(false));
    let stopped = Arc::new(AtomicBool::new(false));
    {
        let (leading, stopped) = (Arc::clone(&leading), Arc::clone(&stopped));
        manager.add_runnable("leader-only", true, move |stop| async move {
            leading.store(true, Ordering::SeqCst);
            stop.await;
            stopped.store(true, Ordering::SeqCst);
            Ok(())
        });
    }
    let run = tokio::spawn(manager.run(std::future::pending()));
    wait_until(WAIT, "leader runnable started", || async {
        leading.load(Ordering::SeqCst)
    })
    .await?;

    // Someone else writes itself into the lease (retrying while our renewals win).
    let api: Api<Lease> = Api::namespaced(client.clone(), "default");
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut lease = api.get("lost-test").await?;
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = Some("intruder".into());
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        spec.lease_duration_seconds = Some(30);
        match api
            .replace("lost-test", &PostParams::default(), &lease)
            .await
        {
            Ok(_) => break,
            Err(kube::Error::Api(status)) if status.code == 409 && attempts < 20 => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let result = tokio::time::timeout(WAIT, run).await??;
    ensure!(
        matches!(result, Err(ManagerError::LeaderElection(_))),
        "expected a lost lease, got {result:?}"
    );
    ensure!(
        stopped.load(Ordering::SeqCst),
        "the leader runnable was stopped"
    );
    Ok(())
}

/// A free local port (bound then released).
fn free_addr() -> Result<std::net::SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?)
}

/// `GET target` on a fresh connection; the status code and the body.
async fn http_get(addr: std::net::SocketAddr, target: &str) -> Result<(u16, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        let request = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        anyhow::Ok(raw)
    };
    let raw = tokio::time::timeout(WAIT, exchange).await??;
    let text = String::from_utf8(raw)?;
    let (head, body) = text.split_once("\r\n\r\n").context("no end of headers")?;
    let status = head.split(' ').nth(1).context("no status")?.parse()?;
    Ok((status, body.to_owned()))
}

#[tokio::test]
async fn manager_serves_metrics_and_probes() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let (metrics_addr, probe_addr) = (free_addr()?, free_addr()?);
    let mut manager = Manager::builder(client.clone())
        .metrics_registry(Registry::new())
        .metrics_addr(Some(metrics_addr))
        .probe_addr(Some(probe_addr))
        .build()?;
    let controller =
        Controller::new(manager.cache().clone(), "served").for_::<ConfigMap>(Scope::All);
    let slow = Arc::new(Slow::default());
    manager.add_controller(controller, slow_reconcile, Arc::clone(&slow));
    let (stop, shutdown) = stopper();
    let run = tokio::spawn(manager.run(shutdown));

    wait_until(WAIT, "readyz ok", || async {
        matches!(http_get(probe_addr, "/readyz").await, Ok((200, _)))
    })
    .await?;
    ensure!(http_get(probe_addr, "/healthz").await?.0 == 200);
    create_configmap(&client, "served-one").await?;
    wait_until(WAIT, "reconcile counted on /metrics", || async {
        http_get(metrics_addr, "/metrics")
            .await
            .is_ok_and(|(status, body)| {
                status == 200
                && body.contains(
                    "controller_runtime_reconcile_total{controller=\"served\",result=\"success\"}",
                )
            })
    })
    .await?;
    stop.send_replace(true);
    tokio::time::timeout(WAIT, run).await???;
    ensure!(
        tokio::net::TcpStream::connect(metrics_addr).await.is_err(),
        "the metrics server stopped with the manager"
    );
    Ok(())
}

/// Two managers on one Lease: exactly one runs its leader-only runnable at any time, and the
/// other takes over after the leader stops.
#[tokio::test]
async fn two_managers_on_one_lease_never_lead_together() -> Result<()> {
    let env = TestEnv::start().await?;
    let active = Arc::new(AtomicUsize::new(0));
    let overlap = Arc::new(AtomicBool::new(false));
    let leaders: Arc<std::sync::Mutex<Vec<usize>>> = Arc::default();
    let mut stops = Vec::new();
    let mut runs = Vec::new();
    for (index, identity) in ["manager-one", "manager-two"].into_iter().enumerate() {
        let config = LeaderElectionConfig::new("shared-lease", "default")
            .with_identity(identity)
            .with_lease_duration(Duration::from_secs(2))
            .with_renew_deadline(Duration::from_millis(1500))
            .with_retry_period(Duration::from_millis(100));
        let mut manager = Manager::builder(env.client())
            .metrics_registry(Registry::new())
            .leader_election(config)
            .build()?;
        let (active, overlap, leaders) = (
            Arc::clone(&active),
            Arc::clone(&overlap),
            Arc::clone(&leaders),
        );
        manager.add_runnable("leader-only", true, move |stop| async move {
            if active.fetch_add(1, Ordering::SeqCst) > 0 {
                overlap.store(true, Ordering::SeqCst);
            }
            leaders.lock().map_err(|e| e.to_string())?.push(index);
            stop.await;
            active.fetch_sub(1, Ordering::SeqCst);
            Ok(())
        });
        let (stop, shutdown) = stopper();
        stops.push(Some(stop));
        runs.push(Some(tokio::spawn(manager.run(shutdown))));
    }
    let leader_count = || leaders.lock().map(|l| l.len()).unwrap_or(0);
    wait_until(WAIT, "one leader", || async { leader_count() == 1 }).await?;
    // Several retry periods later the other manager still has not started its runnable.
    for _ in 0..50 {
        ensure!(leader_count() == 1, "a second leader started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let first = leaders.lock().map_err(|e| anyhow!("{e}"))?[0];
    // Stop the leader: it releases the lease and the other manager takes over.
    if let (Some(stop), Some(run)) = (stops[first].take(), runs[first].take()) {
        stop.send_replace(true);
        tokio::time::timeout(WAIT, run)
            .await?
            .map_err(|e| anyhow!("join: {e}"))??;
    }
    wait_until(WAIT, "the other manager leads", || async {
        leader_count() == 2
    })
    .await?;
    let order = leaders.lock().map_err(|e| anyhow!("{e}"))?.clone();
    ensure!(
        order[0] != order[1],
        "the same manager led twice: {order:?}"
    );
    ensure!(!overlap.load(Ordering::SeqCst), "two leaders ran at once");
    let other = 1 - first;
    if let (Some(stop), Some(run)) = (stops[other].take(), runs[other].take()) {
        stop.send_replace(true);
        tokio::time::timeout(WAIT, run)
            .await?
            .map_err(|e| anyhow!("join: {e}"))??;
    }
    ensure!(!overlap.load(Ordering::SeqCst), "two leaders ran at once");
    Ok(())
}
