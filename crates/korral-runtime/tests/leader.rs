//! Leader election against the embedded API server, with short timings (lease 1 s, renew
//! deadline 600 ms, retry 100 ms). Every wait polls with a timeout.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail, ensure};
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use korral_runtime::leader::{
    LeaderElectionConfig, LeaderElectionError, LeaderElector, LeaderHandle, LostReason,
};
use korral_testenv::{TestEnv, wait_until};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

const NAMESPACE: &str = "default";
const LEASE_DURATION: Duration = Duration::from_secs(1);
const RENEW_DEADLINE: Duration = Duration::from_millis(600);
const RETRY_PERIOD: Duration = Duration::from_millis(100);
const WAIT: Duration = Duration::from_secs(5);

fn config(lease: &str, identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::new(lease, NAMESPACE)
        .with_identity(identity)
        .with_lease_duration(LEASE_DURATION)
        .with_renew_deadline(RENEW_DEADLINE)
        .with_retry_period(RETRY_PERIOD)
}

/// Counts how many candidates report leadership through `on_status`, and whether that count
/// ever exceeded one.
#[derive(Default)]
struct LeaderCount {
    leaders: AtomicI32,
    overlaps: AtomicUsize,
}

/// One running candidate.
struct Candidate {
    identity: String,
    handle: LeaderHandle,
    statuses: Arc<Mutex<Vec<bool>>>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), LeaderElectionError>>,
}

impl Candidate {
    fn spawn(
        client: Client,
        config: LeaderElectionConfig,
        count: Arc<LeaderCount>,
    ) -> Result<Self> {
        let identity = config.identity.clone();
        let statuses = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&statuses);
        let elector = LeaderElector::new(client, config)?.on_status(move |leading| {
            if let Ok(mut statuses) = recorded.lock() {
                statuses.push(leading);
            }
            if leading {
                if count.leaders.fetch_add(1, Ordering::SeqCst) >= 1 {
                    count.overlaps.fetch_add(1, Ordering::SeqCst);
                }
            } else if statuses_had_true(&recorded) {
                count.leaders.fetch_sub(1, Ordering::SeqCst);
            }
        });
        let handle = elector.handle();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(elector.run(async move {
            let _ = rx.await;
        }));
        Ok(Self {
            identity,
            handle,
            statuses,
            shutdown: Some(tx),
            task,
        })
    }

    fn statuses(&self) -> Vec<bool> {
        self.statuses.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Asks the candidate to shut down and waits for `run` to return.
    async fn stop(mut self) -> Result<Result<(), LeaderElectionError>> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        Ok(tokio::time::timeout(WAIT, self.task)
            .await
            .context("run did not return after shutdown")??)
    }
}

/// Whether a `false` status follows an earlier `true` (a real step-down, not the initial
/// `false` reported when `run` starts).
fn statuses_had_true(statuses: &Mutex<Vec<bool>>) -> bool {
    statuses
        .lock()
        .map(|s| s.len() >= 2 && s[..s.len() - 1].contains(&true))
        .unwrap_or(false)
}

/// Samples `is_leader` of every handle as fast as it can and counts instants where two
/// candidates provably led at once: candidate `i` read leading at two successive passes
/// (so it led throughout, each elector leads at most once) while another read leading
/// in between.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(usize, usize)>,
}

impl Sampler {
    fn start(handles: Vec<LeaderHandle>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        // An OS thread, so sampling does not depend on the async scheduler.
        let thread = std::thread::spawn(move || {
            let (mut samples, mut violations) = (0usize, 0usize);
            let read = |handles: &[LeaderHandle]| -> Vec<bool> {
                handles.iter().map(LeaderHandle::is_leader).collect()
            };
            let mut previous = read(&handles);
            while !stopping.load(Ordering::SeqCst) {
                let current = read(&handles);
                samples += 1;
                for i in 0..handles.len() {
                    if !(previous[i] && current[i]) {
                        continue;
                    }
                    // i led from its read in `previous` to its read in `current`; those
                    // windows contain previous[j] for j > i and current[j] for j < i.
                    let overlap = (0..handles.len())
                        .filter(|j| *j != i)
                        .any(|j| if j > i { previous[j] } else { current[j] });
                    if overlap {
                        violations += 1;
                    }
                }
                previous = current;
                std::thread::sleep(Duration::from_micros(100));
            }
            (samples, violations)
        });
        Self { stop, thread }
    }

    fn finish(self) -> Result<(usize, usize)> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .join()
            .map_err(|_| anyhow!("the sampler thread panicked"))
    }
}

fn leases(client: &Client) -> Api<Lease> {
    Api::namespaced(client.clone(), NAMESPACE)
}

async fn lease_spec(client: &Client, name: &str) -> Result<LeaseSpec> {
    leases(client)
        .get(name)
        .await?
        .spec
        .ok_or_else(|| anyhow!("lease {name} has no spec"))
}

async fn holder(client: &Client, name: &str) -> Option<String> {
    lease_spec(client, name)
        .await
        .ok()
        .and_then(|s| s.holder_identity)
        .filter(|h| !h.is_empty())
}

/// Waits until exactly one of `candidates` leads; returns its index.
async fn wait_for_single_leader(candidates: &[Candidate]) -> Result<usize> {
    wait_until(WAIT, "exactly one leader", || async {
        candidates.iter().filter(|c| c.handle.is_leader()).count() == 1
    })
    .await?;
    candidates
        .iter()
        .position(|c| c.handle.is_leader())
        .ok_or_else(|| anyhow!("the leader stepped down again"))
}

/// Waits until the lease's `renewTime` has changed `times` times (the leader is renewing).
async fn wait_for_renewals(client: &Client, name: &str, times: usize) -> Result<()> {
    let deadline = Instant::now() + WAIT;
    let mut seen: Option<MicroTime> = None;
    let mut changes = 0;
    while changes < times {
        ensure!(
            Instant::now() < deadline,
            "timed out waiting for {times} renewals of {name}"
        );
        if let Ok(spec) = lease_spec(client, name).await
            && spec.renew_time != seen
        {
            if seen.is_some() {
                changes += 1;
            }
            seen = spec.renew_time;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn single_candidate_acquires_and_fills_the_lease() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let count = Arc::new(LeaderCount::default());
    let before = Timestamp::now();
    let alpha = Candidate::spawn(client.clone(), config("single", "alpha"), count.clone())?;
    wait_until(WAIT, "alpha leads", || async { alpha.handle.is_leader() }).await?;
    assert_eq!(alpha.handle.identity(), "alpha");
    assert_eq!(alpha.statuses(), [false, true]);

    let spec = lease_spec(&client, "single").await?;
    assert_eq!(spec.holder_identity.as_deref(), Some("alpha"));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(0));
    let acquired = spec.acquire_time.clone().context("acquireTime")?;
    let renewed = spec.renew_time.clone().context("renewTime")?;
    // MicroTime keeps microseconds only.
    assert!(acquired.0 >= before - jiff::SignedDuration::from_micros(1));
    assert!(acquired.0 <= Timestamp::now());
    assert!(renewed.0 >= acquired.0);

    // On the wire: RFC 3339 with exactly six fractional digits.
    let raw: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &ApiResource::erase::<Lease>(&()));
    let raw = raw.get("single").await?;
    for field in ["acquireTime", "renewTime"] {
        let text = raw.data["spec"][field]
            .as_str()
            .context("a time string")?
            .to_string();
        let fraction = text
            .strip_suffix('Z')
            .and_then(|t| t.rsplit_once('.'))
            .map(|(_, f)| f.to_string())
            .context("fractional seconds")?;
        assert_eq!(fraction.len(), 6, "{field} = {text}");
        text.parse::<Timestamp>()?;
    }

    // It renews every retry period, keeping acquireTime and the transition count.
    wait_for_renewals(&client, "single", 3).await?;
    let spec = lease_spec(&client, "single").await?;
    assert_eq!(spec.acquire_time.as_ref(), Some(&acquired));
    assert!(spec.renew_time.as_ref().is_some_and(|r| r.0 > renewed.0));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(alpha.handle.current_leader().as_deref(), Some("alpha"));

    // A clean shutdown releases: no holder, leaseDurationSeconds 1.
    let handle = alpha.handle.clone();
    let lost = handle.leadership_lost();
    let statuses = Arc::clone(&alpha.statuses);
    alpha.stop().await??;
    assert!(!handle.is_leader());
    assert_eq!(lost.await, None);
    assert_eq!(
        statuses.lock().map(|s| s.clone()).unwrap_or_default(),
        [false, true, false]
    );
    let spec = lease_spec(&client, "single").await?;
    assert_eq!(
        spec.holder_identity.as_deref().filter(|h| !h.is_empty()),
        None
    );
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(count.overlaps.load(Ordering::SeqCst), 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_candidates_never_lead_together_and_hand_over_on_release() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let count = Arc::new(LeaderCount::default());
    let candidates = vec![
        Candidate::spawn(env.new_client().await?, config("pair", "a"), count.clone())?,
        Candidate::spawn(env.new_client().await?, config("pair", "b"), count.clone())?,
    ];
    let sampler = Sampler::start(candidates.iter().map(|c| c.handle.clone()).collect());

    let leader = wait_for_single_leader(&candidates).await?;
    let standby = 1 - leader;
    let leader_id = candidates[leader].identity.clone();
    let standby_id = candidates[standby].identity.clone();
    // The standby sees who leads, and keeps trying while the leader renews.
    wait_until(WAIT, "standby observes the leader", || async {
        candidates[standby].handle.current_leader().as_deref() == Some(leader_id.as_str())
    })
    .await?;
    wait_for_renewals(&client, "pair", 8).await?;
    assert!(candidates[leader].handle.is_leader());
    assert!(!candidates[standby].handle.is_leader());
    assert_eq!(
        holder(&client, "pair").await.as_deref(),
        Some(leader_id.as_str())
    );

    // Stop the leader cleanly: it releases, the standby takes over at its next retry.
    let mut candidates = candidates;
    let old = candidates.remove(leader);
    let started = Instant::now();
    old.stop().await??;
    let next = &candidates[0];
    wait_until(WAIT, "standby takes over", || async {
        next.handle.is_leader()
    })
    .await?;
    let takeover = started.elapsed();
    eprintln!("takeover after release: {takeover:?}");
    assert!(
        takeover < LEASE_DURATION / 2,
        "takeover after release took {takeover:?}"
    );
    let spec = lease_spec(&client, "pair").await?;
    assert_eq!(spec.holder_identity.as_deref(), Some(standby_id.as_str()));
    assert_eq!(spec.lease_transitions, Some(1));
    assert_eq!(spec.lease_duration_seconds, Some(1));

    let (samples, violations) = sampler.finish()?;
    eprintln!("sampled both candidates {samples} times");
    assert!(samples > 100, "only {samples} samples");
    assert_eq!(violations, 0, "two leaders at once");
    assert_eq!(count.overlaps.load(Ordering::SeqCst), 0);
    for candidate in candidates {
        candidate.stop().await??;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn aborted_leader_is_replaced_after_the_lease_expires() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let count = Arc::new(LeaderCount::default());
    let mut candidates = vec![
        Candidate::spawn(env.new_client().await?, config("crash", "a"), count.clone())?,
        Candidate::spawn(env.new_client().await?, config("crash", "b"), count.clone())?,
    ];
    let sampler = Sampler::start(candidates.iter().map(|c| c.handle.clone()).collect());
    let leader = wait_for_single_leader(&candidates).await?;
    let crashed = candidates.remove(leader);
    let crashed_id = crashed.identity.clone();
    wait_for_renewals(&client, "crash", 3).await?;

    // "Crash" the leader: drop its task, nothing is released.
    crashed.task.abort();
    let started = Instant::now();
    let _ = crashed.task.await;
    assert!(
        !crashed.handle.is_leader(),
        "a dropped elector does not lead"
    );
    assert_eq!(
        holder(&client, "crash").await.as_deref(),
        Some(crashed_id.as_str())
    );

    // Follow the lease until the standby holds it, remembering the crashed leader's last
    // renewal.
    let next = &candidates[0];
    let mut last_renew: Option<MicroTime> = None;
    let deadline = Instant::now() + WAIT;
    loop {
        ensure!(
            Instant::now() < deadline,
            "timed out waiting for the standby to take over"
        );
        match lease_spec(&client, "crash").await {
            Ok(spec) if spec.holder_identity.as_deref() == Some(crashed_id.as_str()) => {
                last_renew = spec.renew_time;
            }
            Ok(_) if next.handle.is_leader() => break,
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let takeover = started.elapsed();
    let last_renew = last_renew.context("the crashed leader's last renewal")?;
    let spec = lease_spec(&client, "crash").await?;
    let acquired = spec.acquire_time.clone().context("acquireTime")?;
    let gap = acquired.0.duration_since(last_renew.0);
    eprintln!("takeover after abort: {takeover:?} (acquired {gap:#} after the last renewal)");
    // Not before the lease expired (renewTime + 1 s), and soon after.
    assert!(
        gap >= jiff::SignedDuration::try_from(LEASE_DURATION)?,
        "took over {gap:#} after the last renewal"
    );
    assert!(takeover < LEASE_DURATION * 2, "takeover took {takeover:?}");
    let spec = lease_spec(&client, "crash").await?;
    assert_eq!(
        spec.holder_identity.as_deref(),
        Some(next.identity.as_str())
    );
    assert_eq!(spec.lease_transitions, Some(1));

    let (samples, violations) = sampler.finish()?;
    assert!(samples > 100, "only {samples} samples");
    assert_eq!(violations, 0, "two leaders at once");
    assert_eq!(count.overlaps.load(Ordering::SeqCst), 0);
    for candidate in candidates {
        candidate.stop().await??;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_steps_down_when_another_holder_overwrites_the_lease() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let count = Arc::new(LeaderCount::default());
    let alpha = Candidate::spawn(client.clone(), config("stolen", "alpha"), count)?;
    wait_until(WAIT, "alpha leads", || async { alpha.handle.is_leader() }).await?;
    let lost = alpha.handle.leadership_lost();

    // Someone else writes itself into the lease (retrying while alpha's renewals win).
    let api = leases(&client);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut lease = api.get("stolen").await?;
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = Some("intruder".into());
        spec.renew_time = Some(MicroTime(Timestamp::now()));
        spec.lease_duration_seconds = Some(30);
        match api.replace("stolen", &PostParams::default(), &lease).await {
            Ok(_) => break,
            Err(kube::Error::Api(status)) if status.code == 409 && attempts < 20 => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let started = Instant::now();

    let result = tokio::time::timeout(WAIT, alpha.task)
        .await
        .context("run did not return after losing the lease")??;
    let stepped_down = started.elapsed();
    eprintln!("stepped down {stepped_down:?} after the overwrite");
    let Err(LeaderElectionError::Lost(lost_error)) = result else {
        bail!("expected a lost leadership, got {result:?}");
    };
    assert_eq!(
        lost_error.reason,
        LostReason::TakenOver {
            holder: "intruder".into()
        }
    );
    assert_eq!(lost_error.identity, "alpha");
    assert_eq!(lost_error.lease, "default/stolen");
    assert!(stepped_down < RENEW_DEADLINE, "took {stepped_down:?}");
    assert_eq!(lost.await, Some(lost_error));
    assert!(!alpha.handle.is_leader());
    assert_eq!(
        alpha.statuses.lock().map(|s| s.clone()).unwrap_or_default(),
        [false, true, false]
    );
    // It did not fight back.
    assert_eq!(holder(&client, "stolen").await.as_deref(), Some("intruder"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leader_steps_down_when_it_cannot_renew_within_the_deadline() -> Result<()> {
    let env = TestEnv::start().await?;
    let count = Arc::new(LeaderCount::default());
    let alpha = Candidate::spawn(env.client(), config("unreachable", "alpha"), count)?;
    wait_until(WAIT, "alpha leads", || async { alpha.handle.is_leader() }).await?;
    wait_for_renewals(&env.client(), "unreachable", 2).await?;

    // The API server goes away: every renewal fails.
    env.shutdown().await;
    let started = Instant::now();
    let result = tokio::time::timeout(WAIT, alpha.task)
        .await
        .context("run did not return after the server went away")??;
    let stepped_down = started.elapsed();
    eprintln!("stepped down {stepped_down:?} after the server stopped");
    let Err(LeaderElectionError::Lost(lost)) = result else {
        bail!("expected a lost leadership, got {result:?}");
    };
    ensure!(
        matches!(lost.reason, LostReason::RenewDeadlineExceeded { .. }),
        "unexpected reason {:?}",
        lost.reason
    );
    // Within the renew deadline of the last renewal: before the lease (1 s) could expire.
    assert!(
        stepped_down <= RENEW_DEADLINE + Duration::from_millis(250),
        "took {stepped_down:?}"
    );
    assert!(!alpha.handle.is_leader());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stale_lease_of_a_dead_holder_is_taken_over_at_once() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let long_ago = Timestamp::now() - jiff::SignedDuration::from_hours(1);
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("stale".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("ghost".into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime(long_ago)),
            renew_time: Some(MicroTime(long_ago)),
            lease_transitions: Some(2),
            ..LeaseSpec::default()
        }),
    };
    leases(&client)
        .create(&PostParams::default(), &lease)
        .await?;
    let started = Instant::now();
    let alpha = Candidate::spawn(client.clone(), config("stale", "alpha"), Arc::default())?;
    wait_until(WAIT, "alpha leads", || async { alpha.handle.is_leader() }).await?;
    let took = started.elapsed();
    eprintln!("took over an expired lease in {took:?}");
    assert!(took < LEASE_DURATION / 2, "took {took:?}");
    let spec = lease_spec(&client, "stale").await?;
    assert_eq!(spec.holder_identity.as_deref(), Some("alpha"));
    assert_eq!(spec.lease_transitions, Some(3));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    alpha.stop().await??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn valid_lease_of_another_holder_is_respected_until_it_expires() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("held".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("other".into()),
            lease_duration_seconds: Some(1),
            renew_time: Some(MicroTime(Timestamp::now())),
            ..LeaseSpec::default()
        }),
    };
    leases(&client)
        .create(&PostParams::default(), &lease)
        .await?;
    let started = Instant::now();
    let alpha = Candidate::spawn(client.clone(), config("held", "alpha"), Arc::default())?;
    wait_until(WAIT, "alpha observes the holder", || async {
        alpha.handle.current_leader().as_deref() == Some("other")
    })
    .await?;
    wait_until(WAIT, "alpha leads", || async { alpha.handle.is_leader() }).await?;
    let took = started.elapsed();
    eprintln!("took over a held lease after {took:?}");
    assert!(
        took >= Duration::from_millis(900),
        "took over a valid lease after {took:?}"
    );
    alpha.stop().await??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_candidates_fail_over_one_after_another() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let count = Arc::new(LeaderCount::default());
    let mut candidates = Vec::new();
    for i in 0..4 {
        candidates.push(Candidate::spawn(
            env.new_client().await?,
            config("race", &format!("candidate-{i}")),
            count.clone(),
        )?);
    }
    let sampler = Sampler::start(candidates.iter().map(|c| c.handle.clone()).collect());
    let mut transitions = 0;
    let mut handovers = Vec::new();
    while !candidates.is_empty() {
        let leader = wait_for_single_leader(&candidates).await?;
        let spec = lease_spec(&client, "race").await?;
        assert_eq!(
            spec.holder_identity.as_deref(),
            Some(candidates[leader].identity.as_str())
        );
        assert_eq!(spec.lease_transitions, Some(transitions));
        let old = candidates.remove(leader);
        let started = Instant::now();
        old.stop().await??;
        if !candidates.is_empty() {
            wait_until(WAIT, "next leader", || async {
                candidates.iter().any(|c| c.handle.is_leader())
            })
            .await?;
            handovers.push(started.elapsed());
            transitions += 1;
        }
    }
    eprintln!("handovers: {handovers:?}");
    assert!(
        handovers.iter().all(|h| *h < LEASE_DURATION / 2),
        "{handovers:?}"
    );
    let (samples, violations) = sampler.finish()?;
    assert!(samples > 100, "only {samples} samples");
    assert_eq!(violations, 0, "two leaders at once");
    assert_eq!(count.overlaps.load(Ordering::SeqCst), 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_without_release_leaves_the_lease_to_expire() -> Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let alpha = Candidate::spawn(
        client.clone(),
        config("kept", "alpha").with_release_on_cancel(false),
        Arc::default(),
    )?;
    wait_until(WAIT, "alpha leads", || async { alpha.handle.is_leader() }).await?;
    let handle = alpha.handle.clone();
    alpha.stop().await??;
    assert!(!handle.is_leader());
    assert_eq!(holder(&client, "kept").await.as_deref(), Some("alpha"));
    Ok(())
}

#[tokio::test]
async fn invalid_config_is_rejected() -> Result<()> {
    let env = TestEnv::start().await?;
    let bad = config("bad", "alpha").with_renew_deadline(Duration::from_secs(2));
    let result = LeaderElector::new(env.client(), bad);
    assert!(
        matches!(result, Err(LeaderElectionError::Config(_))),
        "{result:?}"
    );
    Ok(())
}
