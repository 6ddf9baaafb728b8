//! Upstream's APF series on `/metrics`: requests executing and waiting and the rejections of
//! each flow (a FlowSchema and its priority level), and each level's nominal limit.
//! Counters are atomics held by the flows, so a request pays no lock for them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::borrowing::LevelInput;

/// Why a request was refused (upstream's `reason` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason {
    /// Its queue was at `queueLengthLimit` and every seat taken.
    QueueFull,
    /// A `Reject` level had no seat left.
    ConcurrencyLimit,
    /// It waited in its queue longer than the wait limit.
    TimeOut,
    /// Its client went away while it waited.
    Cancelled,
}

impl Reason {
    const ALL: [Reason; 4] = [
        Reason::QueueFull,
        Reason::ConcurrencyLimit,
        Reason::TimeOut,
        Reason::Cancelled,
    ];

    /// The label value.
    pub(super) fn label(self) -> &'static str {
        match self {
            Reason::QueueFull => "queue-full",
            Reason::ConcurrencyLimit => "concurrency-limit",
            Reason::TimeOut => "time-out",
            Reason::Cancelled => "cancelled",
        }
    }
}

/// The counters of one flow.
#[derive(Debug, Default)]
pub(super) struct FlowCounters {
    /// Requests executing (a watch: while it is being initialized).
    pub(super) executing: AtomicI64,
    /// Requests waiting in a queue.
    pub(super) waiting: AtomicI64,
    /// Rejections by [`Reason`], in [`Reason::ALL`]'s order.
    rejected: [AtomicU64; 4],
}

impl FlowCounters {
    /// Counts one rejection.
    pub(super) fn reject(&self, reason: Reason) {
        let index = Reason::ALL
            .iter()
            .position(|r| *r == reason)
            .unwrap_or_default();
        self.rejected[index].fetch_add(1, Ordering::Relaxed);
    }
}

/// A gauge of every flow: its name, help and value.
type Gauge = (&'static str, &'static str, fn(&FlowCounters) -> i64);

/// A gauge of every level: its name (after `apiserver_flowcontrol_`), help and value (none:
/// no series for that level).
type LevelGauge = (&'static str, &'static str, fn(&LevelGauges) -> Option<f64>);

/// One level's seat limits and demand, as the last borrowing adjustment left them.
#[derive(Debug, Clone, Copy)]
pub(super) struct LevelGauges {
    /// Its limits and demand statistics.
    pub(super) input: LevelInput,
    /// Its current limit.
    pub(super) current: usize,
    /// Its allocation target (limited levels).
    pub(super) target: Option<f64>,
}

/// The levels' gauges and the fair fraction of the last adjustment.
#[derive(Debug, Default)]
struct Levels {
    by_name: BTreeMap<String, LevelGauges>,
    fair_fraction: f64,
}

/// Every flow's counters and every level's limits, kept across configuration changes
/// (counters never go down).
#[derive(Debug, Default)]
pub(super) struct Registry {
    flows: Mutex<BTreeMap<(String, String), Arc<FlowCounters>>>,
    levels: Mutex<Levels>,
}

impl Registry {
    /// The counters of the flow of FlowSchema `schema` into priority level `level`.
    pub(super) fn flow(&self, schema: &str, level: &str) -> Arc<FlowCounters> {
        let mut flows = self.flows.lock().unwrap_or_else(|p| p.into_inner());
        flows
            .entry((schema.to_string(), level.to_string()))
            .or_default()
            .clone()
    }

    /// Records the levels' limits and demand (replacing the previous ones).
    pub(super) fn set_levels(&self, by_name: BTreeMap<String, LevelGauges>, fair_fraction: f64) {
        *self.levels.lock().unwrap_or_else(|p| p.into_inner()) = Levels {
            by_name,
            fair_fraction,
        };
    }

    /// The series in Prometheus' text format.
    pub(super) fn render(&self) -> String {
        let flows = self.flows.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        let label = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        out.push_str("# HELP apiserver_flowcontrol_rejected_requests_total [BETA] Number of requests rejected by API Priority and Fairness subsystem\n");
        out.push_str("# TYPE apiserver_flowcontrol_rejected_requests_total counter\n");
        for ((schema, level), counters) in flows.iter() {
            for (reason, count) in Reason::ALL.iter().zip(&counters.rejected) {
                let n = count.load(Ordering::Relaxed);
                if n > 0 {
                    let _ = writeln!(
                        out,
                        "apiserver_flowcontrol_rejected_requests_total{{flow_schema=\"{}\",priority_level=\"{}\",reason=\"{}\"}} {n}",
                        label(schema),
                        label(level),
                        reason.label()
                    );
                }
            }
        }
        let gauges: [Gauge; 2] = [
            (
                "apiserver_flowcontrol_current_executing_requests",
                "[BETA] Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
                |c| c.executing.load(Ordering::Relaxed),
            ),
            (
                "apiserver_flowcontrol_current_inqueue_requests",
                "[BETA] Number of requests currently pending in queues of the API Priority and Fairness subsystem",
                |c| c.waiting.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for ((schema, level), counters) in flows.iter() {
                let _ = writeln!(
                    out,
                    "{name}{{flow_schema=\"{}\",priority_level=\"{}\"}} {}",
                    label(schema),
                    label(level),
                    value(counters)
                );
            }
        }
        drop(flows);
        let levels = self.levels.lock().unwrap_or_else(|p| p.into_inner());
        let level_gauges: [LevelGauge; 9] = [
            (
                "nominal_limit_seats",
                "[BETA] Nominal number of execution seats configured for each priority level",
                |g| Some(g.input.nominal as f64),
            ),
            (
                "lower_limit_seats",
                "[ALPHA] Configured lower bound on number of execution seats available to each priority level",
                |g| Some(g.input.lower as f64),
            ),
            (
                "upper_limit_seats",
                "[ALPHA] Configured upper bound on number of execution seats available to each priority level",
                |g| Some(g.input.upper as f64),
            ),
            (
                "demand_seats_high_watermark",
                "[ALPHA] High watermark, over last adjustment period, of demand_seats",
                |g| Some(g.input.stats.high_watermark as f64),
            ),
            (
                "demand_seats_average",
                "[ALPHA] Time-weighted average, over last adjustment period, of demand_seats",
                |g| Some(g.input.stats.average),
            ),
            (
                "demand_seats_stdev",
                "[ALPHA] Time-weighted standard deviation, over last adjustment period, of demand_seats",
                |g| Some(g.input.stats.deviation),
            ),
            (
                "demand_seats_smoothed",
                "[ALPHA] Smoothed seat demands",
                |g| Some(g.input.stats.smoothed),
            ),
            ("target_seats", "[ALPHA] Seat allocation targets", |g| {
                g.target
            }),
            (
                "current_limit_seats",
                "[ALPHA] current derived number of execution seats available to each priority level",
                |g| Some(g.current as f64),
            ),
        ];
        for (name, help, value) in level_gauges {
            let _ = writeln!(
                out,
                "# HELP apiserver_flowcontrol_{name} {help}\n# TYPE apiserver_flowcontrol_{name} gauge"
            );
            for (level, gauges) in &levels.by_name {
                if let Some(v) = value(gauges) {
                    let _ = writeln!(
                        out,
                        "apiserver_flowcontrol_{name}{{priority_level=\"{}\"}} {v}",
                        label(level)
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "# HELP apiserver_flowcontrol_seat_fair_frac [ALPHA] Fair fraction of server's concurrency to allocate to each priority level that can use it\n# TYPE apiserver_flowcontrol_seat_fair_frac gauge\napiserver_flowcontrol_seat_fair_frac {}",
            levels.fair_fraction
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apf::borrowing::DemandStats;

    #[test]
    fn renders_flows_and_limits() {
        let registry = Registry::default();
        let flow = registry.flow("fs", "pl");
        flow.executing.fetch_add(2, Ordering::Relaxed);
        flow.reject(Reason::QueueFull);
        flow.reject(Reason::QueueFull);
        let gauges = LevelGauges {
            input: LevelInput {
                exempt: false,
                nominal: 7,
                lower: 4,
                upper: 12,
                current: 7,
                stats: DemandStats {
                    average: 2.5,
                    ..DemandStats::default()
                },
            },
            current: 6,
            target: Some(4.0),
        };
        registry.set_levels(BTreeMap::from([("pl".to_string(), gauges)]), 0.5);
        let text = registry.render();
        assert!(text.contains("apiserver_flowcontrol_rejected_requests_total{flow_schema=\"fs\",priority_level=\"pl\",reason=\"queue-full\"} 2\n"), "{text}");
        assert!(
            !text.contains("reason=\"time-out\""),
            "zero counters are not series yet"
        );
        assert!(text.contains("apiserver_flowcontrol_current_executing_requests{flow_schema=\"fs\",priority_level=\"pl\"} 2\n"));
        assert!(text.contains("apiserver_flowcontrol_current_inqueue_requests{flow_schema=\"fs\",priority_level=\"pl\"} 0\n"));
        for series in [
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"pl\"} 7\n",
            "apiserver_flowcontrol_lower_limit_seats{priority_level=\"pl\"} 4\n",
            "apiserver_flowcontrol_upper_limit_seats{priority_level=\"pl\"} 12\n",
            "apiserver_flowcontrol_current_limit_seats{priority_level=\"pl\"} 6\n",
            "apiserver_flowcontrol_demand_seats_average{priority_level=\"pl\"} 2.5\n",
            "apiserver_flowcontrol_target_seats{priority_level=\"pl\"} 4\n",
            "apiserver_flowcontrol_seat_fair_frac 0.5\n",
        ] {
            assert!(text.contains(series), "{series} in {text}");
        }
        assert!(
            Arc::ptr_eq(&flow, &registry.flow("fs", "pl")),
            "one flow, one set of counters"
        );
    }
}
