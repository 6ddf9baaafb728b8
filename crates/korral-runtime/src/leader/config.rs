//! The leader election settings and the default candidate identity.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// client-go's `JitterFactor`: candidates wait up to `retry_period * (1 + 1.2)` between tries,
/// and the renew deadline must leave room for at least one such wait.
pub(crate) const JITTER_FACTOR: f64 = 1.2;

/// How a candidate takes part in leader election on a Lease.
///
/// Build it with [`LeaderElectionConfig::new`], which fills in the client-go defaults
/// (15 s lease, 10 s renew deadline, 2 s retry period, release on cancel, identity from
/// [`default_identity`]), then adjust it with the `with_*` methods or the fields.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderElectionConfig {
    /// Name of the `coordination.k8s.io/v1` Lease.
    pub lease_name: String,
    /// Namespace of the Lease.
    pub lease_namespace: String,
    /// This candidate's identity, written to `holderIdentity`; unique per candidate.
    pub identity: String,
    /// How long others wait, after the last renewal, before taking the lease over
    /// (`leaseDurationSeconds`, rounded up to whole seconds).
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal before it steps down.
    /// Shorter than `lease_duration`.
    pub renew_deadline: Duration,
    /// Time between two attempts to acquire or renew.
    pub retry_period: Duration,
    /// Whether a leader shutting down cleanly releases the lease, so another candidate takes
    /// over at once instead of after `lease_duration`.
    pub release_on_cancel: bool,
}

impl LeaderElectionConfig {
    /// Default lease duration (client-go, controller-runtime): 15 s.
    pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
    /// Default renew deadline: 10 s.
    pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
    /// Default retry period: 2 s.
    pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

    /// Election on the Lease `lease_namespace/lease_name` with the default timings and
    /// identity.
    pub fn new(lease_name: impl Into<String>, lease_namespace: impl Into<String>) -> Self {
        Self {
            lease_name: lease_name.into(),
            lease_namespace: lease_namespace.into(),
            identity: default_identity(),
            lease_duration: Self::DEFAULT_LEASE_DURATION,
            renew_deadline: Self::DEFAULT_RENEW_DEADLINE,
            retry_period: Self::DEFAULT_RETRY_PERIOD,
            release_on_cancel: true,
        }
    }

    /// Sets the identity written to `holderIdentity`.
    pub fn with_identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// Sets the lease duration.
    pub fn with_lease_duration(mut self, lease_duration: Duration) -> Self {
        self.lease_duration = lease_duration;
        self
    }

    /// Sets the renew deadline.
    pub fn with_renew_deadline(mut self, renew_deadline: Duration) -> Self {
        self.renew_deadline = renew_deadline;
        self
    }

    /// Sets the retry period.
    pub fn with_retry_period(mut self, retry_period: Duration) -> Self {
        self.retry_period = retry_period;
        self
    }

    /// Sets whether a clean shutdown releases the lease.
    pub fn with_release_on_cancel(mut self, release_on_cancel: bool) -> Self {
        self.release_on_cancel = release_on_cancel;
        self
    }

    /// Checks the settings as client-go's `NewLeaderElector` does: names and identity set,
    /// `lease_duration > renew_deadline > 1.2 * retry_period > 0`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.lease_name.is_empty() {
            return Err(ConfigError::EmptyLeaseName);
        }
        if self.lease_namespace.is_empty() {
            return Err(ConfigError::EmptyLeaseNamespace);
        }
        if self.identity.is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        if self.retry_period.is_zero() {
            return Err(ConfigError::ZeroRetryPeriod);
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseNotLongerThanRenewDeadline {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
            });
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(ConfigError::RenewDeadlineTooShort {
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        self.lease_duration_seconds()?;
        Ok(())
    }

    /// `leaseDurationSeconds` as written to the Lease: the lease duration rounded up to whole
    /// seconds (rounding up only makes others wait longer, never less).
    pub(crate) fn lease_duration_seconds(&self) -> Result<i32, ConfigError> {
        let whole = self.lease_duration.as_secs();
        let seconds = if self.lease_duration.subsec_nanos() > 0 {
            whole.saturating_add(1)
        } else {
            whole
        };
        i32::try_from(seconds).map_err(|_| ConfigError::LeaseDurationTooLong(self.lease_duration))
    }
}

/// Why a [`LeaderElectionConfig`] was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `lease_name` is empty.
    #[error("the lease name is empty")]
    EmptyLeaseName,
    /// `lease_namespace` is empty.
    #[error("the lease namespace is empty")]
    EmptyLeaseNamespace,
    /// `identity` is empty.
    #[error("the candidate identity is empty")]
    EmptyIdentity,
    /// `retry_period` is zero.
    #[error("the retry period is zero")]
    ZeroRetryPeriod,
    /// `lease_duration` is not longer than `renew_deadline`.
    #[error(
        "the lease duration ({lease_duration:?}) must be longer than the renew deadline ({renew_deadline:?})"
    )]
    LeaseNotLongerThanRenewDeadline {
        /// The configured lease duration.
        lease_duration: Duration,
        /// The configured renew deadline.
        renew_deadline: Duration,
    },
    /// `renew_deadline` is not longer than 1.2 × `retry_period`.
    #[error(
        "the renew deadline ({renew_deadline:?}) must be longer than 1.2 x the retry period ({retry_period:?})"
    )]
    RenewDeadlineTooShort {
        /// The configured renew deadline.
        renew_deadline: Duration,
        /// The configured retry period.
        retry_period: Duration,
    },
    /// `lease_duration` does not fit `leaseDurationSeconds` (an int32).
    #[error("the lease duration ({0:?}) does not fit in leaseDurationSeconds")]
    LeaseDurationTooLong(Duration),
}

/// The default candidate identity, as controller-runtime builds it: the host name (in a pod,
/// the pod name), `_`, and a random UUID-shaped suffix, so two processes on one host differ.
pub fn default_identity() -> String {
    let high = random_u64();
    let low = random_u64();
    format!(
        "{}_{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hostname(),
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff,
    )
}

/// The host name: the kernel's, else `/etc/hostname`, else `$HOSTNAME`/`%COMPUTERNAME%`,
/// else `localhost`.
fn hostname() -> String {
    let from_files = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .map(|name| name.trim().to_string())
        .find(|name| !name.is_empty());
    from_files
        .or_else(|| {
            ["HOSTNAME", "COMPUTERNAME"]
                .iter()
                .filter_map(|var| std::env::var(var).ok())
                .map(|name| name.trim().to_string())
                .find(|name| !name.is_empty())
        })
        .unwrap_or_else(|| "localhost".to_string())
}

/// A random number from the standard library's randomly keyed hasher (no extra dependency;
/// good enough for identities and jitter, not for secrets).
pub(crate) fn random_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.finish()
}

/// `period * (1 + random * JITTER_FACTOR)`, as client-go's `wait.Jitter`.
pub(crate) fn jittered(period: Duration) -> Duration {
    // 53 random bits as a fraction in [0, 1).
    let fraction = (random_u64() >> 11) as f64 / (1u64 << 53) as f64;
    period.mul_f64(1.0 + fraction * JITTER_FACTOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short() -> LeaderElectionConfig {
        LeaderElectionConfig::new("lock", "default")
            .with_lease_duration(Duration::from_secs(1))
            .with_renew_deadline(Duration::from_millis(600))
            .with_retry_period(Duration::from_millis(100))
    }

    #[test]
    fn defaults_are_client_go_defaults() {
        let config = LeaderElectionConfig::new("lock", "ns");
        assert_eq!(config.lease_duration, Duration::from_secs(15));
        assert_eq!(config.renew_deadline, Duration::from_secs(10));
        assert_eq!(config.retry_period, Duration::from_secs(2));
        assert!(config.release_on_cancel);
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.lease_duration_seconds(), Ok(15));
    }

    #[test]
    fn short_timings_are_valid() {
        assert_eq!(short().validate(), Ok(()));
        assert_eq!(short().lease_duration_seconds(), Ok(1));
    }

    #[test]
    fn validation_rejects_bad_settings() {
        let mut config = short();
        config.lease_name.clear();
        assert_eq!(config.validate(), Err(ConfigError::EmptyLeaseName));
        let mut config = short();
        config.lease_namespace.clear();
        assert_eq!(config.validate(), Err(ConfigError::EmptyLeaseNamespace));
        assert_eq!(
            short().with_identity("").validate(),
            Err(ConfigError::EmptyIdentity)
        );
        assert_eq!(
            short().with_retry_period(Duration::ZERO).validate(),
            Err(ConfigError::ZeroRetryPeriod)
        );
        assert!(matches!(
            short()
                .with_renew_deadline(Duration::from_secs(1))
                .validate(),
            Err(ConfigError::LeaseNotLongerThanRenewDeadline { .. })
        ));
        assert!(matches!(
            short()
                .with_retry_period(Duration::from_millis(500))
                .validate(),
            Err(ConfigError::RenewDeadlineTooShort { .. })
        ));
        assert!(matches!(
            short()
                .with_lease_duration(Duration::from_secs(u64::MAX / 2))
                .validate(),
            Err(ConfigError::LeaseDurationTooLong(_))
        ));
    }

    #[test]
    fn lease_duration_rounds_up_to_whole_seconds() {
        let config = short().with_lease_duration(Duration::from_millis(1500));
        assert_eq!(config.lease_duration_seconds(), Ok(2));
        let config = short().with_lease_duration(Duration::from_millis(700));
        assert_eq!(config.lease_duration_seconds(), Ok(1));
    }

    #[test]
    fn default_identities_are_host_and_unique_suffix() {
        let a = default_identity();
        let b = default_identity();
        assert_ne!(a, b);
        let (host, suffix) = a.rsplit_once('_').unwrap_or_default();
        assert!(!host.is_empty(), "{a}");
        let groups: Vec<usize> = suffix.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{a}");
        assert!(suffix.chars().all(|c| c == '-' || c.is_ascii_hexdigit()));
    }

    #[test]
    fn jitter_stays_within_client_go_bounds() {
        let period = Duration::from_millis(100);
        for _ in 0..1000 {
            let waited = jittered(period);
            assert!(waited >= period && waited < period.mul_f64(1.0 + JITTER_FACTOR));
        }
    }
}
