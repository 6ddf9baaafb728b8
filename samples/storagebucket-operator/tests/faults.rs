//! The StorageBucket operator converges on a control plane that misbehaves: 20% 409 on updates
//! and patches, 10% 429 (Retry-After 1 s) on writes, 5% 503 on gets and lists, watches closed
//! every 20 events and one 410 Expired on a watch resume, with leader election on a Lease
//! written through the same faults. Every bucket's `available` and `Ready` reach what a local
//! object store answers, and the number of reconciles stays within what the periodic probe
//! asks for (read from `controller_runtime_reconcile_total`).

use std::convert::Infallible;
use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use korral::conditions::find_condition;
use korral::leader::LeaderElectionConfig;
use korral::prelude::*;
use korral_testenv::{FaultConfig, FaultRule, TestEnv, wait_until};
use kube::api::{ListParams, PostParams};
use storagebucket_operator::{ProbeSettings, READY, StorageBucket, StorageBucketSpec};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

const OBJECTS: usize = 8;
const INTERVAL: Duration = Duration::from_millis(500);

/// A tiny object store on a free port: `HEAD /photos` answers 200, anything else 404.
async fn bucket_server() -> Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let endpoint = format!("http://{}", listener.local_addr()?);
    let task = tokio::spawn(async move {
        let mut connections = JoinSet::new();
        while let Ok((stream, _)) = listener.accept().await {
            connections.spawn(async move {
                let service = service_fn(|request: Request<Incoming>| {
                    let mut response = Response::new(Empty::<Bytes>::new());
                    if request.uri().path() != "/photos" {
                        *response.status_mut() = StatusCode::NOT_FOUND;
                    }
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok((endpoint, task))
}

/// Buckets `bucket-<i>`: even ones name the store's bucket, odd ones a missing bucket.
fn expected(i: usize) -> (&'static str, bool, &'static str) {
    if i.is_multiple_of(2) {
        ("photos", true, "BucketAvailable")
    } else {
        ("missing", false, "BucketNotFound")
    }
}

#[tokio::test]
async fn storagebuckets_converge_under_mixed_faults_with_bounded_reconciles() -> Result<()> {
    let (endpoint, store) = bucket_server().await?;
    let env = TestEnv::builder()
        .crd::<StorageBucket>()
        .faults(
            FaultConfig::flaky_control_plane(3)
                // Its watches resume rarely: the first resume already answers 410.
                .with_rule(
                    FaultRule::expire_watch_resume()
                        .nth(1)
                        .named("expired-first"),
                ),
        )
        .start()
        .await?;
    let registry = korral::metrics::Registry::new();
    let election = LeaderElectionConfig::new("storagebucket-operator-lock", "default")
        .with_lease_duration(Duration::from_secs(3))
        .with_renew_deadline(Duration::from_secs(2))
        .with_retry_period(Duration::from_millis(200));
    let mut manager = Manager::builder(env.client())
        .metrics_registry(registry.clone())
        .leader_election(election)
        .build()?;
    let settings = ProbeSettings {
        interval: INTERVAL,
        timeout: Duration::from_secs(1),
    };
    storagebucket_operator::add_to_manager(&mut manager, Scope::namespace("default"), settings)?;
    let started = Instant::now();
    let (stop, mut stop_rx) = watch::channel(false);
    let task = tokio::spawn(manager.run(async move {
        let _ = stop_rx.wait_for(|s| *s).await;
    }));

    let buckets: Api<StorageBucket> = Api::namespaced(env.client(), "default");
    for i in 0..OBJECTS {
        let spec = StorageBucketSpec {
            endpoint: endpoint.clone(),
            bucket: expected(i).0.to_owned(),
        };
        buckets
            .create(
                &PostParams::default(),
                &StorageBucket::new(&format!("bucket-{i}"), spec),
            )
            .await?;
    }
    wait_until(
        Duration::from_secs(90),
        "every bucket's availability and Ready condition",
        || async {
            let Ok(list) = buckets.list(&ListParams::default()).await else {
                return false;
            };
            list.items.len() == OBJECTS
                && (0..OBJECTS).all(|i| {
                    let (_, available, reason) = expected(i);
                    let name = format!("bucket-{i}");
                    list.items
                        .iter()
                        .find(|b| b.name_any() == name)
                        .and_then(|b| b.status.as_ref())
                        .is_some_and(|s| {
                            let ready = find_condition(&s.conditions, READY);
                            s.available == available
                                && ready.is_some_and(|c| {
                                    c.reason == reason
                                        && c.status == if available { "True" } else { "False" }
                                })
                        })
                })
        },
    )
    .await?;
    let elapsed = started.elapsed();

    let stats = env.faults().stats();
    ensure!(
        stats.injected("conflicts") + stats.injected("throttled") > 0
            && stats.injected("expired-first") == 1,
        "the profile did not inject what it should: {stats:?}"
    );
    // Each bucket is probed once per interval, plus its creation and one retry per fault that
    // reaches the reconciler; a hot loop would be far above the bound.
    let total = registry.total(
        "controller_runtime_reconcile_total",
        &[("controller", storagebucket_operator::CONTROLLER_NAME)],
    );
    let periods = elapsed.as_secs_f64() / INTERVAL.as_secs_f64();
    let bound = (periods + 6.0) * OBJECTS as f64;
    eprintln!(
        "{total} reconciles for {OBJECTS} buckets in {elapsed:?} ({periods:.1} periods); faults: {stats:?}"
    );
    ensure!(
        total <= bound,
        "{total} reconciles for {OBJECTS} buckets in {elapsed:?} (bound {bound}); faults: {stats:?}"
    );
    stop.send_replace(true);
    tokio::time::timeout(Duration::from_secs(15), task).await???;
    store.abort();
    Ok(())
}
