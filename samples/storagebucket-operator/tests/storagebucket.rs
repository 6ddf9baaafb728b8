//! The StorageBucket operator against the embedded control plane (korral-testenv) and a local
//! HTTP server standing in for the object store: a leader-elected 100 ms trigger drives the
//! probes, and `available` / `Ready` follow the server as it is stopped and started again.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Empty;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::coordination::v1::Lease;
use korral::conditions::find_condition;
use korral::leader::LeaderElectionConfig;
use korral::prelude::*;
use korral_testenv::{TestEnv, wait_until};
use kube::api::PostParams;
use serde_json::json;
use storagebucket_operator::{ProbeSettings, READY, StorageBucket, StorageBucketSpec};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

const WAIT: Duration = Duration::from_secs(15);

/// A tiny object store: `HEAD /<bucket>` answers 200 for the buckets it has, 404 otherwise.
struct BucketServer {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl BucketServer {
    /// Serves on `addr` (port 0: any free port), retrying briefly while the port is released.
    async fn start(addr: SocketAddr, requests: Arc<AtomicUsize>) -> Result<Self> {
        let mut attempts = 0;
        let listener = loop {
            match TcpListener::bind(addr).await {
                Ok(listener) => break listener,
                Err(err) if attempts < 100 => {
                    attempts += 1;
                    let _ = err;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(err) => return Err(err).context("binding the bucket server"),
            }
        };
        let addr = listener.local_addr()?;
        let counter = Arc::clone(&requests);
        let task = tokio::spawn(async move {
            // Dropped (and every connection with it) when the task is aborted.
            let mut connections = JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let counter = Arc::clone(&counter);
                connections.spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        counter.fetch_add(1, Ordering::SeqCst);
                        let status = if request.uri().path() == "/photos" {
                            StatusCode::OK
                        } else {
                            StatusCode::NOT_FOUND
                        };
                        let mut response = Response::new(Empty::<Bytes>::new());
                        *response.status_mut() = status;
                        async move { Ok::<_, Infallible>(response) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self { addr, task })
    }

    /// Stops listening and drops every connection; the port refuses connections afterwards.
    async fn stop(self) -> SocketAddr {
        self.task.abort();
        let _ = self.task.await;
        self.addr
    }
}

struct Running {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<(), korral::manager::ManagerError>>,
}

impl Running {
    fn start(env: &TestEnv) -> Result<Self> {
        let election = LeaderElectionConfig::new("storagebucket-operator-lock", "default")
            .with_lease_duration(Duration::from_secs(3))
            .with_renew_deadline(Duration::from_secs(2))
            .with_retry_period(Duration::from_millis(200));
        let mut manager = Manager::builder(env.client())
            .metrics_registry(korral::metrics::Registry::new())
            .leader_election(election)
            .build()?;
        let settings = ProbeSettings {
            interval: Duration::from_millis(100),
            timeout: Duration::from_secs(1),
        };
        storagebucket_operator::add_to_manager(
            &mut manager,
            Scope::namespace("default"),
            settings,
        )?;
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

fn bucket(name: &str, endpoint: &str, bucket: &str) -> StorageBucket {
    StorageBucket::new(
        name,
        StorageBucketSpec {
            endpoint: endpoint.to_owned(),
            bucket: bucket.to_owned(),
        },
    )
}

/// `(available, Ready status, Ready reason, lastProbeTime, Ready lastTransitionTime)`.
async fn observed(
    api: &Api<StorageBucket>,
    name: &str,
) -> Option<(bool, String, String, String, String)> {
    let status = api.get(name).await.ok()?.status?;
    let ready = find_condition(&status.conditions, READY)?;
    Some((
        status.available,
        ready.status.clone(),
        ready.reason.clone(),
        status.last_probe_time.clone()?,
        ready.last_transition_time.0.to_string(),
    ))
}

fn parse(time: &str) -> Result<jiff::Timestamp> {
    time.parse().with_context(|| format!("parsing {time}"))
}

fn whole_seconds(t: jiff::Timestamp) -> jiff::Timestamp {
    jiff::Timestamp::from_second(t.as_second()).unwrap_or(t)
}

async fn wait_for_state(
    api: &Api<StorageBucket>,
    name: &str,
    available: bool,
    reason: &str,
) -> Result<(bool, String, String, String, String)> {
    let ready = if available { "True" } else { "False" };
    let last = Arc::new(std::sync::Mutex::new(None));
    wait_until(
        WAIT,
        format!("{name}: available={available}, Ready={ready} ({reason})"),
        || {
            let last = Arc::clone(&last);
            async move {
                let seen = observed(api, name).await;
                let matched = seen
                    .as_ref()
                    .is_some_and(|s| s.0 == available && s.1 == ready && s.2 == reason);
                *last
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = seen;
                matched
            }
        },
    )
    .await?;
    let seen = last
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    seen.context("state seen")
}

#[tokio::test]
async fn available_and_ready_follow_a_server_that_stops_and_starts() -> Result<()> {
    let requests = Arc::new(AtomicUsize::new(0));
    let server = BucketServer::start("127.0.0.1:0".parse()?, Arc::clone(&requests)).await?;
    let endpoint = format!("http://{}", server.addr);
    let env = TestEnv::builder().crd::<StorageBucket>().start().await?;
    let running = Running::start(&env)?;
    let api: Api<StorageBucket> = Api::namespaced(env.client(), "default");
    api.create(
        &PostParams::default(),
        &bucket("photos", &endpoint, "photos"),
    )
    .await?;
    api.create(
        &PostParams::default(),
        &bucket("missing", &endpoint, "missing"),
    )
    .await?;

    let up = wait_for_state(&api, "photos", true, "BucketAvailable").await?;
    wait_for_state(&api, "missing", false, "BucketNotFound").await?;

    // Nothing changes in the cluster, yet the trigger keeps probing: lastProbeTime moves on and
    // the server keeps getting requests.
    let before = requests.load(Ordering::SeqCst);
    wait_until(WAIT, "more probes from the periodic trigger", || async {
        requests.load(Ordering::SeqCst) >= before + 6
            && observed(&api, "photos")
                .await
                .is_some_and(|s| s.3 != up.3 && s.4 == up.4)
    })
    .await?;

    // The object store goes away: the bucket is no longer available, and the condition's
    // transition time (whole seconds, as metav1.Time) is that of the flip.
    let stopped_at = whole_seconds(jiff::Timestamp::now());
    let addr = server.stop().await;
    let down = wait_for_state(&api, "photos", false, "EndpointUnreachable").await?;
    ensure!(
        parse(&up.4)? <= stopped_at && parse(&down.4)? >= stopped_at,
        "transition times: up {up:?}, down {down:?}, stopped at {stopped_at}"
    );
    wait_for_state(&api, "missing", false, "EndpointUnreachable").await?;

    // It comes back on the same address: available again.
    let restarted_at = whole_seconds(jiff::Timestamp::now());
    let server = BucketServer::start(addr, Arc::clone(&requests)).await?;
    let back = wait_for_state(&api, "photos", true, "BucketAvailable").await?;
    ensure!(
        parse(&back.4)? >= restarted_at,
        "transition time of the recovery: {back:?}, restarted at {restarted_at}"
    );
    wait_for_state(&api, "missing", false, "BucketNotFound").await?;

    // The trigger ran under leader election: this manager holds the lease.
    let lease: Api<Lease> = Api::namespaced(env.client(), "default");
    let holder = lease
        .get("storagebucket-operator-lock")
        .await?
        .spec
        .and_then(|s| s.holder_identity);
    ensure!(holder.is_some(), "the lease has a holder");

    running.stop().await?;
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_spec_change_is_probed_at_once() -> Result<()> {
    let requests = Arc::new(AtomicUsize::new(0));
    let server = BucketServer::start("127.0.0.1:0".parse()?, Arc::clone(&requests)).await?;
    let endpoint = format!("http://{}", server.addr);
    let env = TestEnv::builder().crd::<StorageBucket>().start().await?;
    let running = Running::start(&env)?;
    let api: Api<StorageBucket> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &bucket("b", &endpoint, "missing"))
        .await?;
    wait_for_state(&api, "b", false, "BucketNotFound").await?;
    api.patch(
        "b",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"bucket": "photos"}})),
    )
    .await?;
    wait_for_state(&api, "b", true, "BucketAvailable").await?;
    let status = api.get("b").await?.status.context("status")?;
    ensure!(status.observed_generation == Some(2), "{status:?}");
    running.stop().await?;
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn invalid_endpoints_and_bucket_names_are_rejected() -> Result<()> {
    let env = TestEnv::builder().crd::<StorageBucket>().start().await?;
    let api: Api<StorageBucket> = Api::namespaced(env.client(), "default");
    for (name, endpoint, bucket_name, field) in [
        ("ftp", "ftp://example.com", "photos", "spec.endpoint"),
        ("upper", "http://example.com", "Photos", "spec.bucket"),
        ("short", "http://example.com", "ab", "spec.bucket"),
    ] {
        let err = api
            .create(&PostParams::default(), &bucket(name, endpoint, bucket_name))
            .await
            .err()
            .with_context(|| format!("{name} must be rejected"))?;
        let kube::Error::Api(status) = err else {
            anyhow::bail!("unexpected error {err}");
        };
        ensure!(status.code == 422, "{status:?}");
        ensure!(status.message.contains(field), "{}", status.message);
        ensure!(api.get_opt(name).await?.is_none());
    }
    Ok(())
}

#[tokio::test]
async fn nothing_is_probed_until_the_manager_leads() -> Result<()> {
    let requests = Arc::new(AtomicUsize::new(0));
    let server = BucketServer::start("127.0.0.1:0".parse()?, Arc::clone(&requests)).await?;
    let endpoint = format!("http://{}", server.addr);
    let env = TestEnv::builder().crd::<StorageBucket>().start().await?;
    // Another replica holds the Lease.
    let leases: Api<Lease> = Api::namespaced(env.client(), "default");
    let now = jiff::Timestamp::now();
    let held: Lease = serde_json::from_value(json!({
        "metadata": {"name": "storagebucket-operator-lock"},
        "spec": {
            "holderIdentity": "another-replica",
            "leaseDurationSeconds": 60,
            "acquireTime": now.to_string(),
            "renewTime": now.to_string()
        }
    }))?;
    leases.create(&PostParams::default(), &held).await?;
    let api: Api<StorageBucket> = Api::namespaced(env.client(), "default");
    api.create(
        &PostParams::default(),
        &bucket("photos", &endpoint, "photos"),
    )
    .await?;
    let running = Running::start(&env)?;

    // Ten trigger intervals as a follower: no probe, no status.
    tokio::time::sleep(Duration::from_secs(1)).await;
    ensure!(requests.load(Ordering::SeqCst) == 0, "a follower probed");
    ensure!(api.get("photos").await?.status.is_none());

    // The other replica goes away (releases the Lease): this one leads and probes.
    leases
        .delete("storagebucket-operator-lock", &Default::default())
        .await?;
    wait_for_state(&api, "photos", true, "BucketAvailable").await?;
    ensure!(requests.load(Ordering::SeqCst) > 0);

    running.stop().await?;
    server.stop().await;
    Ok(())
}
