//! Small statistics helpers: nearest-rank percentiles over durations.

use std::time::Duration;

/// Summary of a set of latency samples.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// Smallest sample.
    pub min: Duration,
    /// Median (nearest rank).
    pub p50: Duration,
    /// 99th percentile (nearest rank).
    pub p99: Duration,
    /// Largest sample.
    pub max: Duration,
}

/// The nearest-rank percentile `p` (0–100) of sorted samples.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Summarizes samples (they need not be sorted).
pub fn summarize(mut samples: Vec<Duration>) -> Summary {
    samples.sort_unstable();
    Summary {
        count: samples.len(),
        min: samples.first().copied().unwrap_or_default(),
        p50: percentile(&samples, 50.0),
        p99: percentile(&samples, 99.0),
        max: samples.last().copied().unwrap_or_default(),
    }
}

/// Milliseconds as a float.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let s = summarize(v);
        assert_eq!(s.p50, Duration::from_millis(50));
        assert_eq!(s.p99, Duration::from_millis(99));
        assert_eq!(s.max, Duration::from_millis(100));
        let few: Vec<Duration> = (1..=20).map(Duration::from_millis).collect();
        assert_eq!(summarize(few).p99, Duration::from_millis(20));
        assert_eq!(percentile(&[], 50.0), Duration::ZERO);
    }
}
