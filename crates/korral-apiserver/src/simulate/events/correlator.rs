//! client-go's legacy event correlator (`tools/record/events_cache.go`) as state without I/O:
//! what an event becomes before the recorder writes it.
//!
//! * **Aggregation** (`EventAggregator`): events alike but for their message (same source,
//!   object, type and reason) are counted by distinct message; once 10 distinct messages were
//!   seen with no gap of more than 10 minutes between two of them, each further one is written
//!   as one combined event, `(combined from similar events): <message>`, remembered under the
//!   aggregate's key so that later ones count on it (its message becoming the latest). The set
//!   of messages then drops one (upstream drops an arbitrary one; here the oldest), so it stays
//!   at 9 and the next new message is combined again.
//! * **Repeats** (`eventLogger`): an event identical to one written before (same source,
//!   object and field path, type, reason and message) counts on that Event.
//! * **Spam filter** (`EventSourceObjectSpamFilter`): each source may write 25 events about
//!   one object at once, then one every 5 minutes; the filter sees the event after aggregation,
//!   and a filtered event still counts as seen by the aggregation.

use std::collections::{HashMap, VecDeque};

use jiff::{SignedDuration, Timestamp};

use super::Kind;

/// How many events one source may record about one object at once (upstream's burst).
const SPAM_BURST: f64 = 25.0;

/// How often, in seconds, one more event is allowed once the burst is spent (1 / 5 min).
const SPAM_REFILL_SECONDS: f64 = 300.0;

/// How many distinct messages of similar events are written before they are combined.
const AGGREGATE_MAX_MESSAGES: usize = 10;

/// The longest gap between two similar events that keeps them in one aggregation.
const AGGREGATE_INTERVAL: SignedDuration = SignedDuration::from_secs(600);

/// The prefix of a combined event's message (upstream's `EventAggregatorByReasonMessageFunc`).
pub(super) const COMBINED_PREFIX: &str = "(combined from similar events): ";

/// Bound on each remembered table (upstream's LRU caches hold 4096 entries).
const REMEMBERED: usize = 4096;

/// What makes events similar (upstream's `EventAggregatorByReasonFunc` key: the source, the
/// involved object, the type and the reason; the reporting controller and instance follow
/// from the source).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Similar {
    /// The source component.
    pub component: &'static str,
    /// The involved object's uid.
    pub uid: String,
    /// The event's type.
    pub kind: Kind,
    /// The event's reason.
    pub reason: String,
}

/// What identifies the Event a repeat counts on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Key {
    /// One event as it was (upstream's `getEventKey`).
    Exact {
        /// Its source, object, type and reason.
        similar: Similar,
        /// The part of the object it is about.
        field_path: String,
        /// Its message.
        message: String,
    },
    /// The combined event of similar ones (upstream's aggregate key).
    Combined(Similar),
}

/// The Event written for a [`Key`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Recorded {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// One event as a source is about to record it.
#[derive(Debug, Clone)]
pub(super) struct Observed<'a> {
    /// Its source, object, type and reason.
    pub similar: Similar,
    /// The part of the object it is about (empty: the whole).
    pub field_path: &'a str,
    /// Its message.
    pub message: &'a str,
}

/// What to write for an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Correlated {
    /// Under which key the written Event is remembered.
    pub key: Key,
    /// Its message (prefixed when combined).
    pub message: String,
    /// Whether it is the combined event of similar ones.
    pub combined: bool,
    /// The Event to count it on, if one was written for its key.
    pub seen: Option<Recorded>,
}

/// The distinct messages of similar events and when the last one was seen.
#[derive(Debug, Clone)]
struct Aggregate {
    messages: VecDeque<String>,
    last: Timestamp,
}

/// A source's token bucket for one object.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Timestamp,
}

/// What one server's legacy recorders remember of the events they recorded.
#[derive(Debug, Default)]
pub(super) struct Correlator {
    aggregates: HashMap<Similar, Aggregate>,
    recorded: HashMap<Key, Recorded>,
    buckets: HashMap<(&'static str, String), Bucket>,
}

/// Empties `table` when it is full (a coarse stand-in for upstream's LRU eviction).
fn bound<K, V>(table: &mut HashMap<K, V>) {
    if table.len() >= REMEMBERED {
        table.clear();
    }
}

impl Correlator {
    /// Upstream's `EventCorrelate` at `now`: the event as it is to be written, or `None` when
    /// the spam filter drops it.
    pub(super) fn correlate(&mut self, event: &Observed<'_>, now: Timestamp) -> Option<Correlated> {
        let combined = self.aggregate(&event.similar, event.message, now);
        let (key, message) = if combined {
            (
                Key::Combined(event.similar.clone()),
                format!("{COMBINED_PREFIX}{}", event.message),
            )
        } else {
            (
                Key::Exact {
                    similar: event.similar.clone(),
                    field_path: event.field_path.to_string(),
                    message: event.message.to_string(),
                },
                event.message.to_string(),
            )
        };
        if !self.allow(event.similar.component, &event.similar.uid, now) {
            return None;
        }
        let seen = self.recorded.get(&key).cloned();
        Some(Correlated {
            key,
            message,
            combined,
            seen,
        })
    }

    /// Remembers the Event written for `key`.
    pub(super) fn remember(&mut self, key: Key, recorded: Recorded) {
        bound(&mut self.recorded);
        self.recorded.insert(key, recorded);
    }

    /// Counts `message` among the similar events' messages; whether the event is to be
    /// combined.
    fn aggregate(&mut self, similar: &Similar, message: &str, now: Timestamp) -> bool {
        if !self.aggregates.contains_key(similar) {
            bound(&mut self.aggregates);
        }
        let record = self
            .aggregates
            .entry(similar.clone())
            .or_insert_with(|| Aggregate {
                messages: VecDeque::new(),
                last: now,
            });
        if now.duration_since(record.last) > AGGREGATE_INTERVAL {
            record.messages.clear();
        }
        if !record.messages.iter().any(|m| m == message) {
            record.messages.push_back(message.to_string());
        }
        record.last = now;
        if record.messages.len() < AGGREGATE_MAX_MESSAGES {
            return false;
        }
        record.messages.pop_front();
        true
    }

    /// Whether `component` may record one more event about the object with `uid` now.
    fn allow(&mut self, component: &'static str, uid: &str, now: Timestamp) -> bool {
        let key = (component, uid.to_string());
        if !self.buckets.contains_key(&key) {
            bound(&mut self.buckets);
        }
        let bucket = self.buckets.entry(key).or_insert(Bucket {
            tokens: SPAM_BURST,
            at: now,
        });
        let elapsed = now.duration_since(bucket.at).as_secs_f64().max(0.0);
        bucket.tokens = (bucket.tokens + elapsed / SPAM_REFILL_SECONDS).min(SPAM_BURST);
        bucket.at = now;
        if bucket.tokens < 1.0 {
            return false;
        }
        bucket.tokens -= 1.0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn similar(uid: &str) -> Similar {
        Similar {
            component: "kubelet",
            uid: uid.to_string(),
            kind: Kind::Normal,
            reason: "Created".to_string(),
        }
    }

    fn observe(
        correlator: &mut Correlator,
        uid: &str,
        message: &str,
        now: Timestamp,
    ) -> Option<Correlated> {
        let event = Observed {
            similar: similar(uid),
            field_path: "",
            message,
        };
        correlator.correlate(&event, now)
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::UNIX_EPOCH + SignedDuration::from_secs(seconds)
    }

    #[test]
    fn the_spam_filter_allows_a_burst_then_one_every_five_minutes() {
        let mut correlator = Correlator::default();
        let start = at(0);
        for _ in 0..25 {
            assert!(correlator.allow("kubelet", "u", start));
        }
        assert!(!correlator.allow("kubelet", "u", start));
        // Another object or another source has its own bucket.
        assert!(correlator.allow("kubelet", "v", start));
        assert!(correlator.allow("job-controller", "u", start));
        assert!(!correlator.allow("kubelet", "u", at(299)));
        assert!(correlator.allow("kubelet", "u", at(301)));
        assert!(!correlator.allow("kubelet", "u", at(301)));
    }

    #[test]
    fn the_tenth_distinct_message_is_combined_and_later_ones_count_on_it() {
        let mut correlator = Correlator::default();
        for i in 1..=9 {
            let message = format!("Created container: c{i}");
            let event = observe(&mut correlator, "u", &message, at(i)).expect("allowed");
            assert!(!event.combined, "{i}");
            assert_eq!(event.message, message);
            assert!(matches!(event.key, Key::Exact { .. }));
            correlator.remember(
                event.key,
                Recorded {
                    namespace: "ns".into(),
                    name: format!("e{i}"),
                },
            );
        }
        let tenth = observe(&mut correlator, "u", "Created container: c10", at(10)).expect("ok");
        assert!(tenth.combined);
        assert_eq!(
            tenth.message,
            "(combined from similar events): Created container: c10"
        );
        assert_eq!(tenth.key, Key::Combined(similar("u")));
        assert_eq!(tenth.seen, None, "the first combined event is a new Event");
        let combined = Recorded {
            namespace: "ns".into(),
            name: "combined".into(),
        };
        correlator.remember(tenth.key, combined.clone());
        // Another new message counts on the combined Event, with its own message.
        let eleventh = observe(&mut correlator, "u", "Created container: c11", at(11)).expect("ok");
        assert!(eleventh.combined);
        assert_eq!(eleventh.seen, Some(combined));
        assert_eq!(
            eleventh.message,
            "(combined from similar events): Created container: c11"
        );
        // A message still among the remembered nine is an ordinary repeat of its own Event.
        let repeat = observe(&mut correlator, "u", "Created container: c9", at(12)).expect("ok");
        assert!(!repeat.combined);
        assert_eq!(repeat.seen.map(|r| r.name).as_deref(), Some("e9"));
        // Another object, or another reason, aggregates apart.
        let other = observe(&mut correlator, "v", "Created container: c12", at(13)).expect("ok");
        assert!(!other.combined);
    }

    #[test]
    fn similar_events_more_than_ten_minutes_apart_start_over() {
        let mut correlator = Correlator::default();
        for i in 1..=9 {
            let message = format!("m{i}");
            let event = observe(&mut correlator, "u", &message, at(i * 60)).expect("ok");
            assert!(!event.combined);
        }
        // 601 s after the last similar one: a fresh aggregation, not the tenth message.
        let late = observe(&mut correlator, "u", "m10", at(9 * 60 + 601)).expect("ok");
        assert!(!late.combined);
        // The window slides with each event: 600 s later is still within it.
        for i in 11..=18 {
            let t = at(9 * 60 + 601 + (i - 10) * 600);
            assert!(
                !observe(&mut correlator, "u", &format!("m{i}"), t)
                    .expect("ok")
                    .combined
            );
        }
        let t = at(9 * 60 + 601 + 9 * 600);
        assert!(
            observe(&mut correlator, "u", "m19", t)
                .expect("ok")
                .combined
        );
    }

    #[test]
    fn identical_events_share_a_key_and_field_paths_tell_them_apart() {
        let mut correlator = Correlator::default();
        let event = |path: &'static str| Observed {
            similar: similar("u"),
            field_path: path,
            message: "Pulled",
        };
        let first = correlator.correlate(&event("spec.containers{a}"), at(0));
        let again = correlator.correlate(&event("spec.containers{a}"), at(1));
        let other = correlator.correlate(&event("spec.containers{b}"), at(2));
        let key = |c: Option<Correlated>| c.expect("allowed").key;
        let first = key(first);
        assert_eq!(first, key(again));
        assert_ne!(first, key(other));
    }

    #[test]
    fn filtered_events_still_count_for_the_aggregation() {
        let mut correlator = Correlator::default();
        for _ in 0..25 {
            correlator.allow("kubelet", "u", at(0));
        }
        for i in 1..=9 {
            assert_eq!(observe(&mut correlator, "u", &format!("m{i}"), at(0)), None);
        }
        // The bucket refilled one token: the tenth distinct message is combined.
        let tenth = observe(&mut correlator, "u", "m10", at(300)).expect("allowed");
        assert!(tenth.combined);
    }
}
