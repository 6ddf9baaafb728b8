//! The metrics and probe servers over real sockets, with a raw HTTP/1.1 client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use korral_runtime::metrics::{
    self, HealthChecks, ReconcileOutcome, Registry, ServeError, ServerHandle, Shutdown,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{oneshot, watch};

const WAIT: Duration = Duration::from_secs(10);

fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then_some(value.trim())
        })
    }
}

/// One request on a fresh connection (`Connection: close`), read to the end.
async fn request(addr: SocketAddr, method: &str, target: &str) -> anyhow::Result<Reply> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        let request =
            format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await?;
        anyhow::Ok(raw)
    };
    let raw = tokio::time::timeout(WAIT, exchange)
        .await
        .context("request timed out")??;
    let text = String::from_utf8(raw)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("no end of headers in the response")?;
    let status = head
        .split(' ')
        .nth(1)
        .context("no status in the response")?
        .parse()?;
    Ok(Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    })
}

async fn get(addr: SocketAddr, target: &str) -> anyhow::Result<Reply> {
    request(addr, "GET", target).await
}

async fn stopped(handle: ServerHandle) -> anyhow::Result<()> {
    tokio::time::timeout(WAIT, handle.wait())
        .await
        .context("the server did not stop")
}

#[tokio::test]
async fn metrics_appear_after_increments() -> anyhow::Result<()> {
    let registry = Registry::new();
    let (stop_tx, stop_rx) = watch::channel(false);
    let server = metrics::serve_metrics(any_port(), registry.clone(), stop_rx).await?;
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);

    // Nothing reported yet: an empty, valid exposition.
    let reply = get(addr, "/metrics").await?;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert_eq!(reply.body, "");

    let memcached = registry.controller("memcached");
    memcached.set_max_concurrent(1);
    let reply = get(addr, "/metrics").await?;
    assert!(reply.body.contains(
        "controller_runtime_reconcile_total{controller=\"memcached\",result=\"success\"} 0\n"
    ));

    memcached.reconcile_finished(ReconcileOutcome::Success, Duration::from_millis(20));
    memcached.reconcile_finished(ReconcileOutcome::Success, Duration::from_millis(30));
    memcached.reconcile_finished(ReconcileOutcome::Error, Duration::from_millis(5));
    memcached.queue_add();
    memcached.queue_depth(4);
    memcached.retry();
    let worker = memcached.active_worker();
    registry.leader_status("memcached-operator-lock", true);
    let custom =
        registry.counter_vec("memcached_probes_total", "Probes \"sent\".", &["outcome"])?;
    custom.with_label_values(&["ok"])?.inc_by(3.0);

    let reply = get(addr, "/metrics").await?;
    assert_eq!(reply.status, 200);
    let body = &reply.body;
    for line in [
        "# HELP controller_runtime_reconcile_total Total number of reconciliations per controller\n",
        "# TYPE controller_runtime_reconcile_total counter\n",
        "controller_runtime_reconcile_total{controller=\"memcached\",result=\"success\"} 2\n",
        "controller_runtime_reconcile_total{controller=\"memcached\",result=\"error\"} 1\n",
        "controller_runtime_reconcile_errors_total{controller=\"memcached\"} 1\n",
        "controller_runtime_terminal_reconcile_errors_total{controller=\"memcached\"} 0\n",
        "# TYPE controller_runtime_reconcile_time_seconds histogram\n",
        "controller_runtime_reconcile_time_seconds_bucket{controller=\"memcached\",le=\"0.025\"} 2\n",
        "controller_runtime_reconcile_time_seconds_bucket{controller=\"memcached\",le=\"+Inf\"} 3\n",
        "controller_runtime_reconcile_time_seconds_count{controller=\"memcached\"} 3\n",
        "controller_runtime_active_workers{controller=\"memcached\"} 1\n",
        "controller_runtime_max_concurrent_reconciles{controller=\"memcached\"} 1\n",
        "workqueue_adds_total{controller=\"memcached\",name=\"memcached\"} 1\n",
        "workqueue_depth{controller=\"memcached\",name=\"memcached\"} 4\n",
        "workqueue_retries_total{controller=\"memcached\",name=\"memcached\"} 1\n",
        "leader_election_master_status{name=\"memcached-operator-lock\"} 1\n",
        "# HELP memcached_probes_total Probes \"sent\".\n",
        "memcached_probes_total{outcome=\"ok\"} 3\n",
    ] {
        assert!(body.contains(line), "missing {line:?} in\n{body}");
    }
    drop(worker);
    let reply = get(addr, "/metrics").await?;
    assert!(
        reply
            .body
            .contains("controller_runtime_active_workers{controller=\"memcached\"} 0\n")
    );

    assert_eq!(get(addr, "/").await?.status, 404);
    assert_eq!(get(addr, "/metricsx").await?.status, 404);
    let post = request(addr, "POST", "/metrics").await?;
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));

    stop_tx.send(true)?;
    stopped(server).await
}

#[tokio::test]
async fn readyz_fails_until_a_check_passes() -> anyhow::Result<()> {
    let checks = HealthChecks::new();
    let synced = Arc::new(AtomicBool::new(false));
    let flag = synced.clone();
    checks.add_readyz("caches-synced", move || {
        if flag.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err("informers not synced".to_owned())
        }
    })?;
    checks.add_readyz_async("webhook", || async { Ok(()) })?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let server = metrics::serve_probes(any_port(), checks.clone(), stop_rx).await?;
    let addr = server.local_addr();

    // No healthz checks: the implicit ping passes.
    let healthz = get(addr, "/healthz").await?;
    assert_eq!((healthz.status, healthz.body.as_str()), (200, "ok"));
    assert_eq!(get(addr, "/healthz/ping").await?.status, 200);

    let readyz = get(addr, "/readyz").await?;
    assert_eq!(readyz.status, 500);
    assert_eq!(
        readyz.body,
        "[-]caches-synced failed: reason withheld\n[+]webhook ok\nreadyz check failed\n"
    );
    let single = get(addr, "/readyz/caches-synced").await?;
    assert_eq!(single.status, 500);
    assert_eq!(single.body, "internal server error: informers not synced\n");
    assert_eq!(get(addr, "/readyz/webhook").await?.status, 200);
    assert_eq!(get(addr, "/readyz/unknown").await?.status, 404);
    assert_eq!(get(addr, "/readyzz").await?.status, 404);
    assert_eq!(get(addr, "/metrics").await?.status, 404);

    // Excluding the failing check makes the endpoint pass.
    let excluded = get(
        addr,
        "/readyz?exclude=caches-synced&exclude=nope&exclude=caches-synced&verbose",
    )
    .await?;
    assert_eq!(excluded.status, 200);
    assert_eq!(
        excluded.body,
        "[+]caches-synced excluded: ok\n[+]webhook ok\n\
         warn: some health checks cannot be excluded: no matches for \"nope\"\n\
         readyz check passed\n"
    );

    synced.store(true, Ordering::SeqCst);
    let readyz = get(addr, "/readyz").await?;
    assert_eq!((readyz.status, readyz.body.as_str()), (200, "ok"));
    assert_eq!(
        readyz.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    let verbose = get(addr, "/readyz?verbose").await?;
    assert_eq!(verbose.status, 200);
    assert_eq!(
        verbose.body,
        "[+]caches-synced ok\n[+]webhook ok\nreadyz check passed\n"
    );
    let single = get(addr, "/readyz/caches-synced").await?;
    assert_eq!((single.status, single.body.as_str()), (200, "ok"));

    // Checks added while serving are served; an added healthz check replaces the implicit ping.
    checks.add_healthz("deadlock", || Err("worker stuck".to_owned()))?;
    let healthz = get(addr, "/healthz").await?;
    assert_eq!(healthz.status, 500);
    assert_eq!(
        healthz.body,
        "[-]deadlock failed: reason withheld\nhealthz check failed\n"
    );
    assert_eq!(get(addr, "/healthz/ping").await?.status, 404);

    stop_tx.send(true)?;
    stopped(server).await
}

#[tokio::test]
async fn shutdown_stops_both_servers() -> anyhow::Result<()> {
    let registry = Registry::new();
    let checks = HealthChecks::new();
    let (stop_tx, stop_rx) = watch::channel(false);
    let metrics_server =
        metrics::serve_metrics(any_port(), registry.clone(), stop_rx.clone()).await?;
    let probes_server = metrics::serve_probes(any_port(), checks, stop_rx).await?;
    let metrics_addr = metrics_server.local_addr();
    let probes_addr = probes_server.local_addr();
    assert_eq!(get(metrics_addr, "/metrics").await?.status, 200);
    assert_eq!(get(probes_addr, "/readyz").await?.status, 200);

    // An idle keep-alive connection must not hold the server open.
    let mut idle = TcpStream::connect(metrics_addr).await?;
    idle.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .await?;
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).await?;
    assert_eq!(&first, b"HTTP/1.1 200");

    assert!(!metrics_server.is_finished());
    stop_tx.send(true)?;
    stopped(metrics_server).await?;
    stopped(probes_server).await?;

    for addr in [metrics_addr, probes_addr] {
        if TcpStream::connect(addr).await.is_ok() {
            bail!("{addr} still accepts connections after shutdown");
        }
    }
    // The idle connection was closed by the server.
    let mut rest = Vec::new();
    tokio::time::timeout(WAIT, idle.read_to_end(&mut rest))
        .await
        .context("the idle connection stayed open")??;
    Ok(())
}

#[tokio::test]
async fn shutdown_from_a_future_or_a_dropped_sender() -> anyhow::Result<()> {
    let (tx, rx) = oneshot::channel::<()>();
    let server = metrics::serve_metrics(
        any_port(),
        Registry::new(),
        Shutdown::new(async move {
            let _ = rx.await;
        }),
    )
    .await?;
    assert_eq!(get(server.local_addr(), "/metrics").await?.status, 200);
    let _ = tx.send(());
    stopped(server).await?;

    // Dropping every sender of the watch channel stops the server too.
    let (stop_tx, stop_rx) = watch::channel(false);
    let server = metrics::serve_probes(any_port(), HealthChecks::new(), stop_rx).await?;
    drop(stop_tx);
    stopped(server).await
}

#[tokio::test]
async fn binding_a_busy_port_fails() -> anyhow::Result<()> {
    let server = metrics::serve_metrics(any_port(), Registry::new(), Shutdown::never()).await?;
    let busy = server.local_addr();
    match metrics::serve_probes(busy, HealthChecks::new(), Shutdown::never()).await {
        Err(ServeError::Bind { server, addr, .. }) => {
            assert_eq!(server, "probes");
            assert_eq!(addr, busy);
        }
        Err(other) => bail!("unexpected error: {other}"),
        Ok(_) => bail!("bound {busy} twice"),
    }
    Ok(())
}
