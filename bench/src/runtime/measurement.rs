//! One implementation's figures for one scenario, and how a child process reports them.

use std::time::Duration;

use anyhow::{Context, Result};

use super::counter::RequestCounts;

/// One implementation's figures for one scenario.
#[derive(Clone, Copy, Debug, Default)]
pub struct Measurement {
    /// Objects reconciled.
    pub n: usize,
    /// Controller start to convergence.
    pub converge: Duration,
    /// `VmRSS` after convergence minus before start, in bytes (may be negative).
    pub rss_delta: i64,
    /// Reconciles run until convergence.
    pub reconciles: u64,
    /// API requests the controller's client sent until convergence (its cache included).
    pub requests: RequestCounts,
}

impl Measurement {
    /// Resident bytes per cached object.
    pub fn bytes_per_object(&self) -> f64 {
        self.rss_delta as f64 / self.n.max(1) as f64
    }

    /// API requests per reconcile (all of the controller's requests, its cache included).
    pub fn requests_per_reconcile(&self) -> f64 {
        if self.reconciles == 0 {
            return f64::NAN;
        }
        self.requests.total() as f64 / self.reconciles as f64
    }

    /// One line for a child process to print.
    pub fn to_line(&self) -> String {
        format!(
            "RESULT n={} nanos={} rss_delta={} reconciles={} reads={} watches={} writes={}",
            self.n,
            self.converge.as_nanos(),
            self.rss_delta,
            self.reconciles,
            self.requests.reads,
            self.requests.watches,
            self.requests.writes,
        )
    }

    /// Parses [`Measurement::to_line`] out of a child's output.
    pub fn from_output(out: &str) -> Result<Self> {
        let line = out
            .lines()
            .find(|l| l.starts_with("RESULT "))
            .context("no RESULT line in the child's output")?;
        let mut m = Measurement::default();
        let (mut n, mut nanos) = (None, None);
        for field in line.split_whitespace().skip(1) {
            let Some((key, value)) = field.split_once('=') else {
                continue;
            };
            match key {
                "n" => n = Some(value.parse::<usize>()?),
                "nanos" => nanos = Some(value.parse::<u64>()?),
                "rss_delta" => m.rss_delta = value.parse()?,
                "reconciles" => m.reconciles = value.parse()?,
                "reads" => m.requests.reads = value.parse()?,
                "watches" => m.requests.watches = value.parse()?,
                "writes" => m.requests.writes = value.parse()?,
                _ => {}
            }
        }
        m.n = n.context("n")?;
        m.converge = Duration::from_nanos(nanos.context("nanos")?);
        Ok(m)
    }
}

/// The median time, RSS delta, reconciles and requests (each taken independently) of `runs`
/// (not empty).
pub fn median(runs: &[Measurement]) -> Measurement {
    fn mid<T: Ord + Copy>(mut v: Vec<T>) -> T {
        v.sort_unstable();
        v[v.len() / 2]
    }
    Measurement {
        n: runs[0].n,
        converge: mid(runs.iter().map(|m| m.converge).collect()),
        rss_delta: mid(runs.iter().map(|m| m.rss_delta).collect()),
        reconciles: mid(runs.iter().map(|m| m.reconciles).collect()),
        requests: RequestCounts {
            reads: mid(runs.iter().map(|m| m.requests.reads).collect()),
            watches: mid(runs.iter().map(|m| m.requests.watches).collect()),
            writes: mid(runs.iter().map(|m| m.requests.writes).collect()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips() -> Result<()> {
        let m = Measurement {
            n: 7,
            converge: Duration::from_millis(12),
            rss_delta: -40,
            reconciles: 9,
            requests: RequestCounts {
                reads: 1,
                watches: 2,
                writes: 3,
            },
        };
        let back = Measurement::from_output(&format!("noise\n{}\n", m.to_line()))?;
        assert_eq!(back.to_line(), m.to_line());
        assert!((back.requests_per_reconcile() - 6.0 / 9.0).abs() < 1e-9);
        Ok(())
    }
}
