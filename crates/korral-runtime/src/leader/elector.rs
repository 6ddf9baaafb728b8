//! The election loop: acquire, renew, step down or release.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::time::{Instant, sleep, sleep_until, timeout};
use tracing::{debug, error, info, warn};

use super::config::{ConfigError, LeaderElectionConfig, jittered};
use super::record::{self, Verdict};

/// A hook told whether this candidate leads (`leader_election_master_status`).
type StatusHook = Arc<dyn Fn(bool) + Send + Sync>;

/// Runs leader election for one candidate on one Lease.
///
/// Create it with [`LeaderElector::new`], take a [`LeaderHandle`] to watch leadership, then
/// drive it with [`LeaderElector::run`] (usually in its own task). Dropping the `run` future
/// (aborting its task) stops leading at once without releasing the lease, as a crash would.
pub struct LeaderElector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    lease_duration_seconds: i32,
    on_status: StatusHook,
    leading: watch::Sender<bool>,
    leader: watch::Sender<Option<String>>,
    lost: watch::Sender<Option<LeadershipLost>>,
    /// The last record read and when it was first seen as such (client-go's observed record).
    observed: Option<(LeaseSpec, Instant)>,
    /// When the last successful acquisition or renewal started.
    last_renewed: Instant,
}

impl fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.config)
            .field("leading", &*self.leading.borrow())
            .field("leader", &*self.leader.borrow())
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// An elector for `config` talking to the API server through `client`. Fails when the
    /// config is invalid (see [`LeaderElectionConfig::validate`]).
    pub fn new(client: Client, config: LeaderElectionConfig) -> Result<Self, LeaderElectionError> {
        config.validate()?;
        let lease_duration_seconds = config.lease_duration_seconds()?;
        Ok(Self {
            api: Api::namespaced(client, &config.lease_namespace),
            config,
            lease_duration_seconds,
            on_status: Arc::new(|_| {}),
            leading: watch::Sender::new(false),
            leader: watch::Sender::new(None),
            lost: watch::Sender::new(None),
            observed: None,
            last_renewed: Instant::now(),
        })
    }

    /// Calls `hook(true)` when this candidate starts leading and `hook(false)` when it stops
    /// (and once with `false` when [`run`](Self::run) starts), to feed the
    /// `leader_election_master_status` gauge. Default: nothing.
    pub fn on_status(mut self, hook: impl Fn(bool) + Send + Sync + 'static) -> Self {
        self.on_status = Arc::new(hook);
        self
    }

    /// The settings.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.config.identity
    }

    /// A cheap, clonable view of this elector's state that outlives [`run`](Self::run).
    pub fn handle(&self) -> LeaderHandle {
        LeaderHandle {
            identity: Arc::from(self.config.identity.as_str()),
            leading: self.leading.subscribe(),
            leader: self.leader.subscribe(),
            lost: self.lost.subscribe(),
        }
    }

    /// Whether this candidate leads now.
    pub fn is_leader(&self) -> bool {
        *self.leading.borrow()
    }

    /// Leadership as a watch channel: `true` while this candidate leads.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.leading.subscribe()
    }

    /// Runs the election until `shutdown` completes or leadership is lost.
    ///
    /// Tries to acquire the lease every `retry_period` (jittered); once leading, renews it
    /// every `retry_period`. Returns:
    /// - `Ok(())` when `shutdown` completes: if this candidate was leading, it stopped
    ///   reporting leadership first and then (with `release_on_cancel`) released the lease;
    /// - [`LeaderElectionError::Lost`] when leadership was lost (another holder appeared, or
    ///   no renewal succeeded within `renew_deadline`): the caller should stop the process;
    /// - [`LeaderElectionError::Release`] when releasing the lease on shutdown failed (it
    ///   then expires after `lease_duration`).
    ///
    /// Transient API errors while acquiring are logged and retried.
    pub async fn run(
        mut self,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), LeaderElectionError> {
        let mut shutdown = pin!(shutdown);
        (self.on_status)(false);
        info!(
            lease = %self.lease_key(),
            identity = %self.config.identity,
            "starting leader election"
        );
        tokio::select! {
            biased;
            () = &mut shutdown => {
                info!(lease = %self.lease_key(), "shutdown before acquiring the lease");
                return Ok(());
            }
            () = self.acquire() => {}
        }
        let lost = tokio::select! {
            biased;
            () = &mut shutdown => None,
            lost = self.keep_renewing() => Some(lost),
        };
        self.set_leading(false);
        match lost {
            Some(lost) => {
                error!(lease = %lost.lease, identity = %lost.identity, reason = %lost.reason,
                    "leader election lost");
                self.lost.send_replace(Some(lost.clone()));
                Err(LeaderElectionError::Lost(lost))
            }
            None if self.config.release_on_cancel => self.release().await,
            None => {
                info!(lease = %self.lease_key(), "shutdown; leaving the lease to expire");
                Ok(())
            }
        }
    }

    fn lease_key(&self) -> String {
        format!("{}/{}", self.config.lease_namespace, self.config.lease_name)
    }

    fn set_leading(&self, leading: bool) {
        let was = self.leading.send_replace(leading);
        if was != leading {
            (self.on_status)(leading);
        }
    }

    /// Tries until this candidate holds the lease.
    async fn acquire(&mut self) {
        loop {
            let started = Instant::now();
            match timeout(self.config.renew_deadline, self.try_acquire_or_renew()).await {
                Ok(Ok(Attempt::Holding)) => {
                    self.last_renewed = started;
                    self.set_leading(true);
                    info!(lease = %self.lease_key(), identity = %self.config.identity,
                        "successfully acquired lease");
                    return;
                }
                Ok(Ok(Attempt::HeldBy { holder, .. })) => {
                    debug!(lease = %self.lease_key(), %holder, "lease is held by another candidate");
                    // Wake up when the holder's lease runs out, if that comes before the next
                    // round: a crashed leader is replaced within the lease duration of its last
                    // renewal, not up to a jittered retry period later.
                    let wait = jittered(self.config.retry_period);
                    let wait = self.until_expiry().map_or(wait, |left| wait.min(left));
                    sleep(wait).await;
                    continue;
                }
                Ok(Ok(Attempt::Conflict)) => {
                    debug!(lease = %self.lease_key(), "lost a race for the lease");
                }
                Ok(Err(e)) => {
                    warn!(lease = %self.lease_key(), error = %e, "failed to acquire the lease");
                }
                Err(_) => {
                    warn!(lease = %self.lease_key(), timeout = ?self.config.renew_deadline,
                        "acquiring the lease timed out");
                }
            }
            sleep(jittered(self.config.retry_period)).await;
        }
    }

    /// Renews every `retry_period` until leadership is lost.
    async fn keep_renewing(&mut self) -> LeadershipLost {
        let mut next_attempt = Instant::now() + self.config.retry_period;
        let mut last_error: Option<String> = None;
        loop {
            let deadline = self.last_renewed + self.config.renew_deadline;
            sleep_until(next_attempt.min(deadline)).await;
            let started = Instant::now();
            if started >= deadline {
                return self.lost_because(LostReason::RenewDeadlineExceeded {
                    deadline: self.config.renew_deadline,
                    last_error,
                });
            }
            next_attempt = started + self.config.retry_period;
            match timeout(deadline - started, self.try_acquire_or_renew()).await {
                Ok(Ok(Attempt::Holding)) => {
                    self.last_renewed = started;
                    last_error = None;
                    debug!(lease = %self.lease_key(), "renewed the lease");
                }
                Ok(Ok(Attempt::HeldBy { holder, .. })) => {
                    return self.lost_because(LostReason::TakenOver { holder });
                }
                Ok(Ok(Attempt::Conflict)) => {
                    // Someone wrote the lease between our read and our write; the next read
                    // tells whether it is still ours.
                    debug!(lease = %self.lease_key(), "conflict renewing the lease; retrying");
                    last_error = Some("conflict: the lease was modified concurrently".into());
                }
                Ok(Err(e)) => {
                    warn!(lease = %self.lease_key(), error = %e, "failed to renew the lease");
                    last_error = Some(e.to_string());
                }
                Err(_) => {
                    warn!(lease = %self.lease_key(), "renewing the lease timed out");
                    last_error = Some("the renewal request timed out".into());
                }
            }
        }
    }

    fn lost_because(&self, reason: LostReason) -> LeadershipLost {
        LeadershipLost {
            lease: self.lease_key(),
            identity: self.config.identity.clone(),
            reason,
        }
    }

    /// One round of client-go's `tryAcquireOrRenew`: read the lease (create it if absent),
    /// and write this candidate as holder if it holds it, nobody does, or the holder has
    /// expired. While leading, any other holder counts as [`Attempt::HeldBy`]: someone took
    /// the lease over, so this candidate must stop.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, LeaseStepError> {
        let now = Timestamp::now();
        let name = self.config.lease_name.clone();
        let name = name.as_str();
        let Some(mut lease) = self
            .api
            .get_opt(name)
            .await
            .map_err(LeaseStepError::GetLease)?
        else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    namespace: Some(self.config.lease_namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(record::acquire_spec(
                    None,
                    &self.config.identity,
                    self.lease_duration_seconds,
                    now,
                )),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(created.spec.unwrap_or_default());
                    Ok(Attempt::Holding)
                }
                Err(e) if is_conflict(&e) => Ok(Attempt::Conflict),
                Err(e) => Err(LeaseStepError::CreateLease(e)),
            };
        };
        let spec = lease.spec.take().unwrap_or_default();
        let observed_for = self.observe(spec.clone());
        let leading = *self.leading.borrow();
        match record::judge(
            &spec,
            &self.config.identity,
            now,
            observed_for,
            self.config.lease_duration,
        ) {
            Verdict::Held { holder } => return Ok(Attempt::HeldBy { holder }),
            // A leader never overwrites another holder: that holder took the lease from it.
            Verdict::Expired { holder } if leading => return Ok(Attempt::HeldBy { holder }),
            Verdict::Expired { holder } => {
                info!(lease = %self.lease_key(), previous = %holder,
                    "lease expired; taking it over");
            }
            Verdict::Ours | Verdict::Free => {}
        }
        lease.spec = Some(record::acquire_spec(
            Some(&spec),
            &self.config.identity,
            self.lease_duration_seconds,
            now,
        ));
        // `lease` carries the resourceVersion read above: if anyone wrote in between, the
        // server answers 409 and this round is lost.
        match self.api.replace(name, &PostParams::default(), &lease).await {
            Ok(updated) => {
                self.observe(updated.spec.unwrap_or_default());
                Ok(Attempt::Holding)
            }
            Err(e) if is_conflict(&e) => Ok(Attempt::Conflict),
            Err(e) => Err(LeaseStepError::UpdateLease(e)),
        }
    }

    /// How long until the lease as last observed expires for this candidate: the earlier of
    /// its `renewTime` expiry and the lease duration after the record was first observed
    /// unchanged, plus a millisecond so the next read judges it expired; `None` when no record
    /// with a holder was observed.
    fn until_expiry(&self) -> Option<Duration> {
        let (spec, since) = self.observed.as_ref()?;
        record::holder(spec)?;
        let by_observation = record::lease_duration(spec, self.config.lease_duration)
            .saturating_sub(since.elapsed());
        let by_renew_time =
            record::time_to_expiry(spec, Timestamp::now(), self.config.lease_duration);
        let left = by_renew_time.map_or(by_observation, |t| t.min(by_observation));
        Some(left + Duration::from_millis(1))
    }

    /// Records the lease spec just read; returns how long it has been seen unchanged.
    fn observe(&mut self, spec: LeaseSpec) -> Duration {
        if let Some((seen, since)) = &self.observed
            && *seen == spec
        {
            return since.elapsed();
        }
        let holder = record::holder(&spec).map(str::to_string);
        self.leader.send_if_modified(|current| {
            if *current == holder {
                return false;
            }
            match &holder {
                Some(holder) => info!(lease = %self.lease_key(), %holder, "new leader observed"),
                None => info!(lease = %self.lease_key(), "lease released; no leader"),
            }
            current.clone_from(&holder);
            true
        });
        self.observed = Some((spec, Instant::now()));
        Duration::ZERO
    }

    /// Hands the lease back (client-go's `release`): no holder, `leaseDurationSeconds: 1`.
    async fn release(&mut self) -> Result<(), LeaderElectionError> {
        let lease = self.lease_key();
        let result = match timeout(self.config.renew_deadline, self.try_release()).await {
            Ok(result) => result,
            Err(_) => Err(LeaseStepError::TimedOut(self.config.renew_deadline)),
        };
        match result {
            Ok(true) => {
                info!(%lease, identity = %self.config.identity, "released the lease");
                Ok(())
            }
            Ok(false) => {
                info!(%lease, "the lease was no longer ours; nothing to release");
                Ok(())
            }
            Err(source) => {
                warn!(%lease, error = %source, "failed to release the lease");
                Err(LeaderElectionError::Release { lease, source })
            }
        }
    }

    /// Releases the lease if it is still ours; returns whether it was. Retries on conflict.
    async fn try_release(&mut self) -> Result<bool, LeaseStepError> {
        let name = self.config.lease_name.clone();
        let name = name.as_str();
        loop {
            let Some(mut lease) = self
                .api
                .get_opt(name)
                .await
                .map_err(LeaseStepError::GetLease)?
            else {
                return Ok(false);
            };
            let spec = lease.spec.take().unwrap_or_default();
            if record::holder(&spec) != Some(self.config.identity.as_str()) {
                return Ok(false);
            }
            lease.spec = Some(record::release_spec(&spec, Timestamp::now()));
            match self.api.replace(name, &PostParams::default(), &lease).await {
                Ok(updated) => {
                    self.observe(updated.spec.unwrap_or_default());
                    return Ok(true);
                }
                Err(e) if is_conflict(&e) => {
                    debug!(lease = %self.lease_key(), "conflict releasing the lease; retrying");
                }
                Err(e) => return Err(LeaseStepError::UpdateLease(e)),
            }
        }
    }
}

impl Drop for LeaderElector {
    /// A dropped elector (its `run` future aborted) no longer leads, whatever the lease says.
    fn drop(&mut self) {
        self.set_leading(false);
    }
}

/// The outcome of one acquire-or-renew round.
enum Attempt {
    /// This candidate holds the lease (acquired or renewed).
    Holding,
    /// Another candidate holds the lease.
    HeldBy { holder: String },
    /// Another writer got there first (409): try again.
    Conflict,
}

fn is_conflict(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 409)
}

/// A clonable view of a [`LeaderElector`]'s state, valid after the elector is gone.
#[derive(Clone, Debug)]
pub struct LeaderHandle {
    identity: Arc<str>,
    leading: watch::Receiver<bool>,
    leader: watch::Receiver<Option<String>>,
    lost: watch::Receiver<Option<LeadershipLost>>,
}

impl LeaderHandle {
    /// The candidate's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether the candidate leads now (`false` once its elector is gone).
    pub fn is_leader(&self) -> bool {
        self.leading.has_changed().is_ok() && *self.leading.borrow()
    }

    /// Leadership as a watch channel: `true` while the candidate leads. The channel closes
    /// (with `false` as its last value) when the elector is dropped.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// The holder of the lease as last observed by this candidate (`None`: no leader known).
    pub fn current_leader(&self) -> Option<String> {
        self.leader.borrow().clone()
    }

    /// The observed holder of the lease as a watch channel.
    pub fn subscribe_leader(&self) -> watch::Receiver<Option<String>> {
        self.leader.clone()
    }

    /// Completes when the candidate loses leadership, with why; completes with `None` when
    /// the elector stops without losing it (clean shutdown, or dropped).
    pub fn leadership_lost(&self) -> impl Future<Output = Option<LeadershipLost>> + Send + 'static {
        let mut lost = self.lost.clone();
        async move {
            let seen = lost
                .wait_for(Option::is_some)
                .await
                .map(|lost| lost.clone());
            match seen {
                Ok(seen) => seen,
                Err(_) => lost.borrow().clone(),
            }
        }
    }
}

/// Leadership was lost: the process should stop, as controller-runtime's manager does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeadershipLost {
    /// The lease, as `namespace/name`.
    pub lease: String,
    /// The candidate that lost it.
    pub identity: String,
    /// Why.
    pub reason: LostReason,
}

impl fmt::Display for LeadershipLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} lost leadership of lease {}: {}",
            self.identity, self.lease, self.reason
        )
    }
}

/// Why a leader lost leadership.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// Another holder appeared in the lease.
    TakenOver {
        /// The new holder.
        holder: String,
    },
    /// No renewal succeeded within the renew deadline.
    RenewDeadlineExceeded {
        /// The renew deadline.
        deadline: Duration,
        /// The last renewal error, if any was seen.
        last_error: Option<String>,
    },
}

impl fmt::Display for LostReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TakenOver { holder } => write!(f, "the lease is now held by {holder}"),
            Self::RenewDeadlineExceeded {
                deadline,
                last_error: Some(e),
            } => write!(f, "failed to renew within {deadline:?} (last error: {e})"),
            Self::RenewDeadlineExceeded {
                deadline,
                last_error: None,
            } => write!(f, "failed to renew within {deadline:?}"),
        }
    }
}

/// A step of reading or writing the Lease that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseStepError {
    /// Reading the Lease failed.
    #[error("getting the lease: {0}")]
    GetLease(#[source] kube::Error),
    /// Creating the Lease failed.
    #[error("creating the lease: {0}")]
    CreateLease(#[source] kube::Error),
    /// Updating the Lease failed.
    #[error("updating the lease: {0}")]
    UpdateLease(#[source] kube::Error),
    /// The step did not finish in time.
    #[error("timed out after {0:?}")]
    TimedOut(Duration),
}

/// Why leader election stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderElectionError {
    /// The configuration is invalid.
    #[error("validating the leader election config: {0}")]
    Config(#[from] ConfigError),
    /// Leadership was lost; the process should stop.
    #[error("leader election lost: {0}")]
    Lost(LeadershipLost),
    /// Releasing the lease on shutdown failed; it expires after the lease duration.
    #[error("releasing lease {lease}: {source}")]
    Release {
        /// The lease, as `namespace/name`.
        lease: String,
        /// The failed step.
        #[source]
        source: LeaseStepError,
    },
}
