//! Leader failover timing against the embedded API server: when the leader crashes (its task
//! dropped, nothing released), a waiting candidate takes the lease over as soon as it expires,
//! not up to a jittered retry period (up to 2.2 × the period) later. Every wait polls with a
//! timeout.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use korral_runtime::leader::{LeaderElectionConfig, LeaderElector};
use korral_testenv::{TestEnv, wait_until};
use kube::api::Api;

// A retry period close to the renew deadline makes the candidates' jittered rounds long
// (1.2 s to 2.64 s), so a candidate that only looked at the lease on its rounds would take over
// long after the expiry.
const LEASE_DURATION: Duration = Duration::from_secs(2);
const RENEW_DEADLINE: Duration = Duration::from_millis(1500);
const RETRY_PERIOD: Duration = Duration::from_millis(1200);
const WAIT: Duration = Duration::from_secs(20);
/// What the takeover may take beyond the expiry: one read and one write of the Lease.
const SLACK: Duration = Duration::from_millis(300);

fn config(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::new("failover", "default")
        .with_identity(identity)
        .with_lease_duration(LEASE_DURATION)
        .with_renew_deadline(RENEW_DEADLINE)
        .with_retry_period(RETRY_PERIOD)
}

#[tokio::test]
async fn standby_takes_over_when_the_crashed_leaders_lease_expires() -> Result<()> {
    let env = TestEnv::start().await?;
    let leases: Api<Lease> = Api::namespaced(env.client(), "default");
    let holder = || async {
        leases
            .get_opt("failover")
            .await
            .ok()
            .flatten()
            .and_then(|l| l.spec)
    };

    let leader = LeaderElector::new(env.new_client().await?, config("a"))?;
    let leader_handle = leader.handle();
    let leader_task = tokio::spawn(leader.run(std::future::pending()));
    wait_until(WAIT, "a leads", || async { leader_handle.is_leader() }).await?;
    let standby = LeaderElector::new(env.new_client().await?, config("b"))?;
    let standby_handle = standby.handle();
    let _standby_task = tokio::spawn(standby.run(std::future::pending()));
    wait_until(WAIT, "b sees a as leader", || async {
        standby_handle.current_leader().as_deref() == Some("a")
    })
    .await?;
    // Let a renew a few times with b waiting.
    let first = holder()
        .await
        .and_then(|s| s.renew_time)
        .context("renewTime")?;
    wait_until(WAIT, "two renewals", || async {
        holder()
            .await
            .and_then(|s| s.renew_time)
            .is_some_and(|t| t.0.duration_since(first.0) >= jiff::SignedDuration::from_secs(2))
    })
    .await?;

    // Crash: the task is dropped, the lease is not released.
    leader_task.abort();
    let _ = leader_task.await;
    let crashed = jiff::Timestamp::now();
    let last_renew = holder()
        .await
        .and_then(|s| s.renew_time)
        .context("the last renewal")?;

    wait_until(WAIT, "b takes over", || async {
        standby_handle.is_leader()
    })
    .await?;
    let spec = holder().await.context("the lease")?;
    ensure!(spec.holder_identity.as_deref() == Some("b"), "{spec:?}");
    ensure!(spec.lease_transitions == Some(1), "{spec:?}");
    let acquired = spec.acquire_time.context("acquireTime")?.0;
    let expiry = last_renew.0 + jiff::SignedDuration::try_from(LEASE_DURATION)?;
    let after_expiry = acquired.duration_since(expiry);
    let after_crash = acquired.duration_since(crashed);
    eprintln!("took over {after_crash:#} after the crash, {after_expiry:#} after the expiry");
    ensure!(
        after_expiry >= jiff::SignedDuration::ZERO,
        "took over {after_expiry:#} before the lease expired"
    );
    ensure!(
        after_expiry <= jiff::SignedDuration::try_from(SLACK)?,
        "took over {after_expiry:#} after the lease expired (retry period {RETRY_PERIOD:?})"
    );
    ensure!(
        after_crash <= jiff::SignedDuration::try_from(LEASE_DURATION + RETRY_PERIOD)?,
        "took over {after_crash:#} after the crash"
    );
    Ok(())
}
