//! The leader election record kept in a Lease's spec: reading who holds it and whether it has
//! expired, and writing the spec for an acquisition, a renewal or a release.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

/// The holder of a lease, if any (an empty `holderIdentity` means released).
pub(crate) fn holder(spec: &LeaseSpec) -> Option<&str> {
    spec.holder_identity.as_deref().filter(|h| !h.is_empty())
}

/// What a candidate may do with a lease it has just read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The candidate holds it: renew.
    Ours,
    /// Nobody holds it: acquire.
    Free,
    /// Someone else holds it but has not renewed in time: take it over.
    Expired {
        /// The previous holder.
        holder: String,
    },
    /// Someone else holds it and it is still valid: wait.
    Held {
        /// The holder.
        holder: String,
    },
}

/// Judges a lease read at wall-clock time `now` by `identity`, which has seen this very record
/// unchanged for `observed_for`. The lease duration is the record's own
/// `leaseDurationSeconds` (the holder's promise), or `fallback_duration` when the record has
/// none.
///
/// The lease has expired when `renewTime + leaseDurationSeconds` is in the past, or when the
/// candidate has observed the record unchanged for the lease duration (client-go's rule,
/// immune to the holder's clock running ahead).
pub(crate) fn judge(
    spec: &LeaseSpec,
    identity: &str,
    now: Timestamp,
    observed_for: Duration,
    fallback_duration: Duration,
) -> Verdict {
    let Some(current) = holder(spec) else {
        return Verdict::Free;
    };
    if current == identity {
        return Verdict::Ours;
    }
    let duration = lease_duration(spec, fallback_duration);
    let expired_by_renew_time = spec.renew_time.as_ref().is_some_and(|renewed| {
        SignedDuration::try_from(duration)
            .ok()
            .and_then(|d| renewed.0.checked_add(d).ok())
            .is_some_and(|expiry| expiry <= now)
    });
    let expired_by_observation = observed_for >= duration;
    if expired_by_renew_time || expired_by_observation {
        Verdict::Expired {
            holder: current.to_string(),
        }
    } else {
        Verdict::Held {
            holder: current.to_string(),
        }
    }
}

/// The record's `leaseDurationSeconds`, or `fallback` when it has none.
pub(crate) fn lease_duration(spec: &LeaseSpec, fallback: Duration) -> Duration {
    spec.lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .filter(|s| *s > 0)
        .map_or(fallback, Duration::from_secs)
}

/// How long after wall-clock time `now` a lease held by someone else expires by its
/// `renewTime` (`renewTime + leaseDurationSeconds`, as [`judge`] decides it); zero when that
/// is already past, `None` when the record has no holder or no renew time.
///
/// A waiting candidate sleeps at most this long before its next attempt, so it takes an
/// abandoned lease over as soon as it expires rather than up to a jittered retry period later.
pub(crate) fn time_to_expiry(
    spec: &LeaseSpec,
    now: Timestamp,
    fallback_duration: Duration,
) -> Option<Duration> {
    holder(spec)?;
    let renewed = spec.renew_time.as_ref()?;
    let duration = SignedDuration::try_from(lease_duration(spec, fallback_duration)).ok()?;
    let expiry = renewed.0.checked_add(duration).ok()?;
    let left = expiry.duration_since(now);
    Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
}

/// The spec `identity` writes to acquire or renew the lease at `now`: itself as holder,
/// `renewTime` now; on a renewal `acquireTime` and `leaseTransitions` stay, on a takeover
/// `acquireTime` is now and `leaseTransitions` goes up by one (a new Lease starts at 0).
/// Fields this module does not own (`preferredHolder`, `strategy`) are kept.
pub(crate) fn acquire_spec(
    old: Option<&LeaseSpec>,
    identity: &str,
    lease_duration_seconds: i32,
    now: Timestamp,
) -> LeaseSpec {
    let now = MicroTime(now);
    let Some(old) = old else {
        return LeaseSpec {
            holder_identity: Some(identity.to_string()),
            lease_duration_seconds: Some(lease_duration_seconds),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(0),
            ..LeaseSpec::default()
        };
    };
    let renewing = holder(old) == Some(identity);
    let (acquire_time, lease_transitions) = if renewing {
        (
            old.acquire_time.clone().unwrap_or_else(|| now.clone()),
            old.lease_transitions.unwrap_or(0),
        )
    } else {
        (
            now.clone(),
            old.lease_transitions.unwrap_or(0).saturating_add(1),
        )
    };
    LeaseSpec {
        holder_identity: Some(identity.to_string()),
        lease_duration_seconds: Some(lease_duration_seconds),
        acquire_time: Some(acquire_time),
        renew_time: Some(now),
        lease_transitions: Some(lease_transitions),
        preferred_holder: old.preferred_holder.clone(),
        strategy: old.strategy.clone(),
    }
}

/// The spec a leader writes to release the lease at `now`, as client-go does: no holder,
/// `leaseDurationSeconds: 1`, `acquireTime` and `renewTime` now, transitions kept.
pub(crate) fn release_spec(old: &LeaseSpec, now: Timestamp) -> LeaseSpec {
    let now = MicroTime(now);
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: Some(now.clone()),
        renew_time: Some(now),
        lease_transitions: old.lease_transitions,
        preferred_holder: old.preferred_holder.clone(),
        strategy: old.strategy.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn held_by(holder: &str, renewed: i64, duration: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.to_string()),
            lease_duration_seconds: Some(duration),
            acquire_time: Some(MicroTime(at(0))),
            renew_time: Some(MicroTime(at(renewed))),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn empty_or_missing_holder_is_free() {
        let mut spec = held_by("", 0, 15);
        assert_eq!(
            judge(&spec, "me", at(1), Duration::ZERO, SECOND),
            Verdict::Free
        );
        spec.holder_identity = None;
        assert_eq!(
            judge(&spec, "me", at(1), Duration::ZERO, SECOND),
            Verdict::Free
        );
    }

    #[test]
    fn own_lease_is_ours_even_when_expired() {
        let spec = held_by("me", 0, 15);
        assert_eq!(
            judge(&spec, "me", at(100), Duration::ZERO, SECOND),
            Verdict::Ours
        );
    }

    #[test]
    fn lease_expires_after_renew_time_plus_duration() {
        let spec = held_by("other", 10, 15);
        let held = Verdict::Held {
            holder: "other".into(),
        };
        let expired = Verdict::Expired {
            holder: "other".into(),
        };
        assert_eq!(judge(&spec, "me", at(24), Duration::ZERO, SECOND), held);
        assert_eq!(judge(&spec, "me", at(25), Duration::ZERO, SECOND), expired);
    }

    #[test]
    fn lease_expires_after_observing_it_unchanged_for_its_duration() {
        // The holder's clock runs far ahead: renewTime is in our future.
        let spec = held_by("other", 1000, 15);
        let held = Verdict::Held {
            holder: "other".into(),
        };
        assert_eq!(judge(&spec, "me", at(0), 14 * SECOND, SECOND), held);
        assert_eq!(
            judge(&spec, "me", at(0), 15 * SECOND, SECOND),
            Verdict::Expired {
                holder: "other".into()
            }
        );
    }

    #[test]
    fn missing_duration_falls_back_to_ours() {
        let mut spec = held_by("other", 0, 0);
        spec.lease_duration_seconds = None;
        let held = Verdict::Held {
            holder: "other".into(),
        };
        assert_eq!(judge(&spec, "me", at(5), Duration::ZERO, 10 * SECOND), held);
        assert!(matches!(
            judge(&spec, "me", at(10), Duration::ZERO, 10 * SECOND),
            Verdict::Expired { .. }
        ));
    }

    #[test]
    fn new_lease_starts_at_zero_transitions() {
        let spec = acquire_spec(None, "me", 15, at(5));
        assert_eq!(spec.holder_identity.as_deref(), Some("me"));
        assert_eq!(spec.lease_duration_seconds, Some(15));
        assert_eq!(spec.acquire_time, Some(MicroTime(at(5))));
        assert_eq!(spec.renew_time, Some(MicroTime(at(5))));
        assert_eq!(spec.lease_transitions, Some(0));
    }

    #[test]
    fn renewal_keeps_acquire_time_and_transitions() {
        let spec = acquire_spec(Some(&held_by("me", 3, 15)), "me", 15, at(5));
        assert_eq!(spec.acquire_time, Some(MicroTime(at(0))));
        assert_eq!(spec.renew_time, Some(MicroTime(at(5))));
        assert_eq!(spec.lease_transitions, Some(3));
    }

    #[test]
    fn takeover_counts_a_transition() {
        let mut old = held_by("other", 3, 15);
        old.preferred_holder = Some("someone".into());
        let spec = acquire_spec(Some(&old), "me", 15, at(20));
        assert_eq!(spec.holder_identity.as_deref(), Some("me"));
        assert_eq!(spec.acquire_time, Some(MicroTime(at(20))));
        assert_eq!(spec.lease_transitions, Some(4));
        assert_eq!(spec.preferred_holder.as_deref(), Some("someone"));
        // Acquiring a released lease is a transition too (client-go).
        let released = release_spec(&old, at(21));
        assert_eq!(
            acquire_spec(Some(&released), "me", 15, at(22)).lease_transitions,
            Some(4)
        );
    }

    #[test]
    fn release_clears_the_holder_and_shortens_the_lease() {
        let spec = release_spec(&held_by("me", 3, 15), at(9));
        assert_eq!(holder(&spec), None);
        assert_eq!(spec.lease_duration_seconds, Some(1));
        assert_eq!(spec.renew_time, Some(MicroTime(at(9))));
        assert_eq!(spec.acquire_time, Some(MicroTime(at(9))));
        assert_eq!(spec.lease_transitions, Some(3));
    }

    #[test]
    fn micro_time_serializes_rfc3339_with_microseconds() {
        let time = Timestamp::from_nanosecond(1_700_000_000_123_456_789).unwrap_or(at(0));
        let json = serde_json::to_value(MicroTime(time)).unwrap_or_default();
        assert_eq!(json, "2023-11-14T22:13:20.123456Z");
    }

    #[test]
    fn time_to_expiry_counts_down_from_the_renew_time() {
        let spec = held_by("a", 0, 15);
        assert_eq!(time_to_expiry(&spec, at(0), SECOND), Some(15 * SECOND));
        assert_eq!(time_to_expiry(&spec, at(10), SECOND), Some(5 * SECOND));
        assert_eq!(time_to_expiry(&spec, at(15), SECOND), Some(Duration::ZERO));
        assert_eq!(time_to_expiry(&spec, at(99), SECOND), Some(Duration::ZERO));
        // It agrees with `judge`: expired exactly when nothing is left.
        assert!(matches!(
            judge(&spec, "b", at(15), Duration::ZERO, SECOND),
            Verdict::Expired { .. }
        ));
        assert!(matches!(
            judge(&spec, "b", at(14), Duration::ZERO, SECOND),
            Verdict::Held { .. }
        ));
        // Without a duration in the record, the fallback.
        let mut no_duration = held_by("a", 0, 15);
        no_duration.lease_duration_seconds = None;
        assert_eq!(
            time_to_expiry(&no_duration, at(1), 3 * SECOND),
            Some(2 * SECOND)
        );
        // No holder or no renew time: nothing to wait for.
        let mut released = held_by("a", 0, 15);
        released.holder_identity = Some(String::new());
        assert_eq!(time_to_expiry(&released, at(0), SECOND), None);
        let mut never_renewed = held_by("a", 0, 15);
        never_renewed.renew_time = None;
        assert_eq!(time_to_expiry(&never_renewed, at(0), SECOND), None);
    }
}
