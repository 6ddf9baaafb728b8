//! The `Retry-After` of a priority level's 429s, as upstream's dropped-requests tracker sets
//! it: 1 s to begin with; doubled (up to 32 s) when, at the start of a new second, the level
//! dropped at least three requests per second of the current value over the last that many
//! seconds (and the value has not changed within them); lowered by one when it dropped fewer
//! requests than the value's seconds.

use std::sync::Mutex;

/// The ceiling of the value.
const MAX_RETRY_AFTER: i64 = 32;

/// Drops of one priority level.
#[derive(Debug)]
pub(super) struct DroppedRequests {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Drops per past second: (unix second, count), oldest first.
    history: Vec<(i64, i64)>,
    /// The second being counted, and its count so far.
    current: (i64, i64),
    /// The value answered now.
    retry_after: i64,
    /// When it was last raised.
    raised_at: i64,
}

impl Default for DroppedRequests {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                history: Vec::new(),
                current: (0, 0),
                retry_after: 1,
                raised_at: 0,
            }),
        }
    }
}

impl DroppedRequests {
    /// Records a drop at `now` (unix seconds); returns the `Retry-After` to answer it with.
    pub(super) fn record(&self, now: i64) -> u64 {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.current.0 == now {
            s.current.1 += 1;
        } else {
            let finished = s.current;
            s.history.push(finished);
            let keep = (2 * s.retry_after).min(MAX_RETRY_AFTER);
            let start = s
                .history
                .iter()
                .position(|(t, _)| now - t <= keep)
                .unwrap_or(s.history.len());
            s.history.drain(..start);
            s.current = (now, 1);
            s.update(now);
        }
        u64::try_from(s.retry_after).unwrap_or(1)
    }
}

impl State {
    /// Upstream's `updateRetryAfterIfNeededLocked`, at the start of second `now`.
    fn update(&mut self, now: i64) {
        let window = self.retry_after;
        let dropped: i64 = self
            .history
            .iter()
            .rev()
            .take_while(|(t, _)| now - t <= window)
            .filter(|(t, _)| *t < now)
            .map(|(_, n)| n)
            .sum();
        if now - self.raised_at >= window && dropped >= 3 * window {
            self.retry_after = (window * 2).min(MAX_RETRY_AFTER);
            self.raised_at = now;
        } else if dropped < window && window > 1 {
            self.retry_after = window - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_one_second_grows_under_drops_and_shrinks_after() {
        let tracker = DroppedRequests::default();
        assert_eq!(tracker.record(1000), 1);
        assert_eq!(tracker.record(1000), 1);
        assert_eq!(tracker.record(1000), 1, "within the second nothing changes");
        // Three drops in the last second: doubled at the next one.
        assert_eq!(tracker.record(1001), 2);
        for _ in 0..10 {
            tracker.record(1001);
        }
        // Eleven drops over the last two seconds, 2 s since the raise: doubled again.
        assert_eq!(tracker.record(1003), 4);
        // A quiet spell lowers it one second at a time.
        assert_eq!(tracker.record(1020), 3);
        assert_eq!(tracker.record(1040), 2);
        assert_eq!(tracker.record(1060), 1);
        assert_eq!(tracker.record(1080), 1);
    }
}
