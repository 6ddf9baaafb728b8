//! client-go's events.k8s.io/v1 broadcaster (`tools/events/event_broadcaster.go`) as state
//! without I/O: how an event repeated becomes a series on the Event first written.
//!
//! Events are isomorphic when their type, action, reason, reporting controller and instance
//! and the references to the objects they regard (and relate to) are equal; the note does
//! not count. The first one is written as it is and remembered. The next isomorphic one makes
//! it a series, `series: {count: 2, lastObservedTime}`, written onto that Event; later ones
//! only count in memory. The counted series is written again every 30 minutes (upstream's
//! heartbeat) and once more when it finishes: no isomorphic event for 6 minutes, after which
//! it is forgotten (an Event that never became a series is forgotten 6 minutes after its
//! `eventTime`), so the next isomorphic event is a new Event.
//!
//! Upstream runs the heartbeat and the finishing on timers (every 30 and every 6 minutes);
//! here they are decided whenever the recorder records, by [`SeriesCache::due`].

use std::collections::HashMap;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

/// How long a series stays open without an isomorphic event (upstream's `finishTime`).
const FINISH_AFTER: SignedDuration = SignedDuration::from_mins(6);

/// How often an open series is written again (upstream's `refreshTime`).
const REFRESH_EVERY: SignedDuration = SignedDuration::from_mins(30);

/// Bound on the remembered events.
const REMEMBERED: usize = 4096;

/// One remembered event.
#[derive(Debug, Clone)]
struct Entry {
    /// The event as first written (events.k8s.io/v1), with its series once it has one.
    event: Value,
    /// Its `eventTime`.
    first: Timestamp,
    /// How many times it was seen, and the last time (a series from 2 on).
    count: u64,
    last_observed: Timestamp,
    /// When its series was last written.
    written: Timestamp,
}

impl Entry {
    /// The event with its series as counted now.
    fn with_series(&self) -> Value {
        let mut event = self.event.clone();
        event["series"] =
            json!({"count": self.count, "lastObservedTime": micro_time(self.last_observed)});
        event
    }
}

/// What to write for one recorded event.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Write {
    /// A new Event.
    Create(Value),
    /// The series of an Event written before (the event as first written, with its series).
    Series(Value),
    /// Nothing now: the series counted it.
    Counted,
}

/// The events one server's events.k8s.io recorders remember.
#[derive(Debug, Default)]
pub(super) struct SeriesCache {
    entries: HashMap<String, Entry>,
}

/// The key isomorphic events share (upstream's `getKey`).
fn isomorphic_key(event: &Value) -> String {
    let field = |name: &str| event.get(name).cloned().unwrap_or(Value::Null);
    json!([
        field("type"),
        field("action"),
        field("reason"),
        field("reportingController"),
        field("reportingInstance"),
        field("regarding"),
        field("related"),
    ])
    .to_string()
}

/// A `MicroTime` as the API writes it.
pub(super) fn micro_time(t: Timestamp) -> String {
    format!(
        "{}.{:06}Z",
        t.strftime("%Y-%m-%dT%H:%M:%S"),
        t.subsec_microsecond()
    )
}

impl SeriesCache {
    /// Observes `event` (events.k8s.io/v1, as the recorder made it) at `now`: what to write.
    pub(super) fn observe(&mut self, event: Value, now: Timestamp) -> Write {
        let key = isomorphic_key(&event);
        if let Some(entry) = self.entries.get_mut(&key) {
            entry.count += 1;
            entry.last_observed = now;
            if entry.count > 2 {
                return Write::Counted;
            }
            entry.written = now;
            return Write::Series(entry.with_series());
        }
        if self.entries.len() >= REMEMBERED {
            self.entries.clear();
        }
        let entry = Entry {
            event: event.clone(),
            first: now,
            count: 1,
            last_observed: now,
            written: now,
        };
        self.entries.insert(key, entry);
        Write::Create(event)
    }

    /// The series to write at `now`: those finished (then forgotten, with the events that
    /// never became a series and are older than 6 minutes) and those due for their heartbeat.
    pub(super) fn due(&mut self, now: Timestamp) -> Vec<Value> {
        let mut writes = Vec::new();
        self.entries.retain(|_, entry| {
            if entry.count < 2 {
                return now.duration_since(entry.first) <= FINISH_AFTER;
            }
            if now.duration_since(entry.last_observed) > FINISH_AFTER {
                writes.push(entry.with_series());
                return false;
            }
            if now.duration_since(entry.written) >= REFRESH_EVERY {
                entry.written = now;
                writes.push(entry.with_series());
            }
            true
        });
        writes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::UNIX_EPOCH + SignedDuration::from_secs(seconds)
    }

    fn event(resource_version: &str, note: &str) -> Value {
        json!({
            "metadata": {"name": "p.1", "namespace": "default"},
            "type": "Warning", "action": "Scheduling", "reason": "FailedScheduling",
            "reportingController": "default-scheduler",
            "reportingInstance": "default-scheduler-korral-node",
            "regarding": {"kind": "Pod", "name": "p", "uid": "u", "resourceVersion": resource_version},
            "note": note,
        })
    }

    fn series(write: &Write) -> Value {
        match write {
            Write::Series(event) => event["series"].clone(),
            other => panic!("not a series: {other:?}"),
        }
    }

    #[test]
    fn an_isomorphic_event_makes_a_series_then_counts_in_memory() {
        let mut cache = SeriesCache::default();
        let first = cache.observe(event("1", "0/1 nodes"), at(0));
        assert_eq!(first, Write::Create(event("1", "0/1 nodes")));
        // The note does not count; the second one writes the series onto the first Event.
        let second = cache.observe(event("1", "another note"), at(10));
        assert_eq!(
            series(&second),
            json!({"count": 2, "lastObservedTime": "1970-01-01T00:00:10.000000Z"})
        );
        let Write::Series(written) = &second else {
            panic!("series");
        };
        assert_eq!(written["note"], "0/1 nodes", "the Event as first written");
        assert_eq!(cache.observe(event("1", "x"), at(20)), Write::Counted);
        assert_eq!(cache.observe(event("1", "x"), at(30)), Write::Counted);
        // Another version of the object it regards is another event.
        assert!(matches!(
            cache.observe(event("2", "x"), at(40)),
            Write::Create(_)
        ));
        assert!(cache.due(at(30 + 360)).is_empty(), "open for 6 minutes");
    }

    #[test]
    fn a_series_finishes_after_six_quiet_minutes_and_is_written_once_more() {
        let mut cache = SeriesCache::default();
        cache.observe(event("1", "n"), at(0));
        cache.observe(event("1", "n"), at(10));
        cache.observe(event("1", "n"), at(20));
        let finished = cache.due(at(20 + 361));
        assert_eq!(finished.len(), 1);
        assert_eq!(
            finished[0]["series"],
            json!({"count": 3, "lastObservedTime": "1970-01-01T00:00:20.000000Z"})
        );
        // Forgotten: the next isomorphic event is a new Event.
        assert!(matches!(
            cache.observe(event("1", "n"), at(400)),
            Write::Create(_)
        ));
        // One that never became a series is forgotten 6 minutes after its time, unwritten.
        assert!(cache.due(at(400 + 361)).is_empty());
        assert!(matches!(
            cache.observe(event("1", "n"), at(800)),
            Write::Create(_)
        ));
    }

    #[test]
    fn an_open_series_is_written_every_thirty_minutes() {
        let mut cache = SeriesCache::default();
        cache.observe(event("1", "n"), at(0));
        cache.observe(event("1", "n"), at(60));
        // Kept open by an event every 5 minutes.
        let mut refreshed = Vec::new();
        for minute in (6..=26).step_by(5) {
            let now = at(minute * 60);
            refreshed.extend(cache.due(now));
            assert_eq!(cache.observe(event("1", "n"), now), Write::Counted);
        }
        assert!(refreshed.is_empty(), "{refreshed:?}");
        // Thirty minutes after the series was written.
        let due = cache.due(at(31 * 60));
        assert_eq!(due.len(), 1);
        assert_eq!(due[0]["series"]["count"], 7);
        assert!(cache.due(at(31 * 60 + 1)).is_empty());
    }
}
