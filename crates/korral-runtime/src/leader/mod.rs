//! Leader election on a `coordination.k8s.io/v1` Lease, with client-go semantics.
//!
//! Several replicas of an operator run a [`LeaderElector`] on the same Lease; at most one of
//! them leads at any time and runs the leader-elected runnables (controllers), the others
//! stand by and take over when the leader goes away:
//!
//! - **Acquire**: a candidate creates the Lease if it is absent, and takes it over when it has
//!   no holder (released) or when it has expired: `renewTime + leaseDurationSeconds` is in the
//!   past, or the candidate has seen the same record, unchanged, for `leaseDurationSeconds` on
//!   its own clock (this second rule keeps a holder whose clock runs ahead from blocking others
//!   forever). Every write carries the `resourceVersion` that was read, so when two candidates
//!   race, the API server lets exactly one of them win (the other gets `409 Conflict`).
//!   Candidates retry every `retry_period` (jittered by up to 120 %, as client-go does).
//! - **Renew**: the leader renews every `retry_period`. It steps down at once when it sees
//!   another holder in the Lease, and when it has not renewed for `renew_deadline`. As
//!   `renew_deadline < lease_duration`, a leader that cannot reach the API server stops
//!   leading before anyone else may take over.
//! - **Release**: on shutdown while leading (and with `release_on_cancel`), the leader first
//!   stops reporting leadership, then clears `holderIdentity` and sets
//!   `leaseDurationSeconds: 1`, so a standby takes over at its next retry instead of waiting
//!   for the lease to expire.
//!
//! Leadership is observable through a [`tokio::sync::watch`] channel
//! ([`LeaderHandle::is_leader`], [`LeaderHandle::subscribe`]), the loss of it through
//! [`LeaderHandle::leadership_lost`] and the result of [`LeaderElector::run`]: losing
//! leadership is an error, and the manager stops the process on it, as controller-runtime
//! does. The `leader_election_master_status` gauge is fed by the [`LeaderElector::on_status`]
//! hook.
//!
//! ```no_run
//! use korral_runtime::leader::{LeaderElectionConfig, LeaderElector};
//!
//! # async fn example(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let config = LeaderElectionConfig::new("memcached-operator-lock", "operators");
//! let elector = LeaderElector::new(client, config)?;
//! let handle = elector.handle();
//! let election = tokio::spawn(elector.run(async {
//!     let _ = tokio::signal::ctrl_c().await;
//! }));
//! let mut leading = handle.subscribe();
//! leading.wait_for(|leading| *leading).await?;
//! // ... start the leader-elected runnables ...
//! election.await??;
//! # Ok(())
//! # }
//! ```

mod config;
mod elector;
mod record;

pub use config::{ConfigError, LeaderElectionConfig, default_identity};
pub use elector::{
    LeaderElectionError, LeaderElector, LeaderHandle, LeadershipLost, LeaseStepError, LostReason,
};
