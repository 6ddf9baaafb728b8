//! Upstream's APF series on `/metrics`: requests executing and waiting and the rejections of
//! each flow (a FlowSchema and its priority level), and each level's nominal limit.
//! Counters are atomics held by the flows, so a request pays no lock for them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

/// Every flow's counters and every level's nominal limit, kept across configuration changes
/// (counters never go down).
#[derive(Debug, Default)]
pub(super) struct Registry {
    flows: Mutex<BTreeMap<(String, String), Arc<FlowCounters>>>,
    limits: Mutex<BTreeMap<String, usize>>,
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

    /// Records the levels' nominal limits (replacing the previous ones).
    pub(super) fn set_limits(&self, limits: BTreeMap<String, usize>) {
        *self.limits.lock().unwrap_or_else(|p| p.into_inner()) = limits;
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
        let limits = self.limits.lock().unwrap_or_else(|p| p.into_inner());
        out.push_str("# HELP apiserver_flowcontrol_nominal_limit_seats [BETA] Nominal number of execution seats configured for each priority level\n");
        out.push_str("# TYPE apiserver_flowcontrol_nominal_limit_seats gauge\n");
        for (level, limit) in limits.iter() {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"{}\"}} {limit}",
                label(level)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_flows_and_limits() {
        let registry = Registry::default();
        let flow = registry.flow("fs", "pl");
        flow.executing.fetch_add(2, Ordering::Relaxed);
        flow.reject(Reason::QueueFull);
        flow.reject(Reason::QueueFull);
        registry.set_limits(BTreeMap::from([("pl".to_string(), 7)]));
        let text = registry.render();
        assert!(text.contains("apiserver_flowcontrol_rejected_requests_total{flow_schema=\"fs\",priority_level=\"pl\",reason=\"queue-full\"} 2\n"), "{text}");
        assert!(
            !text.contains("reason=\"time-out\""),
            "zero counters are not series yet"
        );
        assert!(text.contains("apiserver_flowcontrol_current_executing_requests{flow_schema=\"fs\",priority_level=\"pl\"} 2\n"));
        assert!(text.contains("apiserver_flowcontrol_current_inqueue_requests{flow_schema=\"fs\",priority_level=\"pl\"} 0\n"));
        assert!(
            text.contains("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"pl\"} 7\n")
        );
        assert!(
            Arc::ptr_eq(&flow, &registry.flow("fs", "pl")),
            "one flow, one set of counters"
        );
    }
}
