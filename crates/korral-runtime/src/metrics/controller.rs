//! The controller-runtime series and the typed per-controller handle that updates them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::registry::{
    Collect, Counter, CounterVec, Gauge, GaugeVec, Histogram, HistogramVec, Registry,
    exponential_buckets,
};

/// controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`, in seconds.
pub const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The buckets of `workqueue_queue_duration_seconds` and `workqueue_work_duration_seconds`:
/// Go's `prometheus.ExponentialBuckets(10e-9, 10, 12)`, 10 ns to 1000 s, computed the same way so
/// that `le` values print identically (`1e-08` … `9.999999999999999e-06` … `1000`).
pub fn workqueue_buckets() -> Vec<f64> {
    exponential_buckets(10e-9, 10.0, 12)
}

/// How a reconcile ended, as counted in `controller_runtime_reconcile_total{result}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReconcileOutcome {
    /// Done, nothing to requeue (`result="success"`).
    Success,
    /// Asked to be requeued (with rate limiting) (`result="requeue"`).
    Requeue,
    /// Asked to be requeued after a delay (`result="requeue_after"`).
    RequeueAfter,
    /// Failed; will be retried with backoff (`result="error"`, and
    /// `controller_runtime_reconcile_errors_total`).
    Error,
    /// Failed with a terminal error, not retried (`result="error"`,
    /// `controller_runtime_reconcile_errors_total` and
    /// `controller_runtime_terminal_reconcile_errors_total`).
    TerminalError,
}

impl ReconcileOutcome {
    /// The value of the `result` label.
    pub fn result_label(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Requeue => "requeue",
            Self::RequeueAfter => "requeue_after",
            Self::Error | Self::TerminalError => "error",
        }
    }
}

/// The controller-runtime families of one registry.
pub(crate) struct RuntimeFamilies {
    reconcile_total: CounterVec,
    reconcile_errors: CounterVec,
    terminal_reconcile_errors: CounterVec,
    reconcile_time: HistogramVec,
    active_workers: GaugeVec,
    max_concurrent: GaugeVec,
    queue_depth: GaugeVec,
    queue_adds: CounterVec,
    queue_duration: HistogramVec,
    work_duration: HistogramVec,
    queue_retries: CounterVec,
    leader: GaugeVec,
}

impl RuntimeFamilies {
    /// Creates the families (names, help and buckets as in controller-runtime) and hands each
    /// to `add` for the registry's map.
    pub(crate) fn new(add: &mut dyn FnMut(&str, Arc<dyn Collect>)) -> Self {
        let workqueue: Arc<[f64]> = workqueue_buckets().into();
        let reconcile_time: Arc<[f64]> = RECONCILE_TIME_BUCKETS.as_slice().into();
        let mut counters = |name: &str, help: &str, labels: &[&str]| {
            let (vec, collect) = Registry::family::<Counter>(name, help, labels, ());
            add(name, collect);
            vec
        };
        let reconcile_total = counters(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            &["controller", "result"],
        );
        let reconcile_errors = counters(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            &["controller"],
        );
        let terminal_reconcile_errors = counters(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            &["controller"],
        );
        let queue_adds = counters(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            &["name", "controller"],
        );
        let queue_retries = counters(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            &["name", "controller"],
        );
        let mut gauges = |name: &str, help: &str, labels: &[&str]| {
            let (vec, collect) = Registry::family::<Gauge>(name, help, labels, ());
            add(name, collect);
            vec
        };
        let active_workers = gauges(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            &["controller"],
        );
        let max_concurrent = gauges(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            &["controller"],
        );
        let queue_depth = gauges(
            "workqueue_depth",
            "Current depth of workqueue",
            &["name", "controller"],
        );
        let leader = gauges(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates \
             backup, 1 indicates master. 'name' is the string used to identify the lease. Please \
             make sure to group by name.",
            &["name"],
        );
        let mut histograms = |name: &str, help: &str, labels: &[&str], buckets: &Arc<[f64]>| {
            let (vec, collect) = Registry::family::<Histogram>(name, help, labels, buckets.clone());
            add(name, collect);
            vec
        };
        let reconcile_time = histograms(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            &["controller"],
            &reconcile_time,
        );
        let queue_duration = histograms(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            &["name", "controller"],
            &workqueue,
        );
        let work_duration = histograms(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            &["name", "controller"],
            &workqueue,
        );
        Self {
            reconcile_total,
            reconcile_errors,
            terminal_reconcile_errors,
            reconcile_time,
            active_workers,
            max_concurrent,
            queue_depth,
            queue_adds,
            queue_duration,
            work_duration,
            queue_retries,
            leader,
        }
    }

    pub(crate) fn leader_status(&self, name: &str, leading: bool) {
        self.leader
            .series(&[name])
            .set(if leading { 1.0 } else { 0.0 });
    }
}

/// The controller-runtime series of one controller, resolved once so that updates are plain
/// atomic operations. Cheap to clone. Get one from [`Registry::controller`].
///
/// The work queue series use the controller name for both `name` and `controller`, as
/// controller-runtime does.
#[derive(Clone)]
pub struct ControllerMetrics {
    inner: Arc<ControllerSeries>,
}

struct ControllerSeries {
    controller: String,
    success: Counter,
    requeue: Counter,
    requeue_after: Counter,
    error: Counter,
    errors: Counter,
    terminal_errors: Counter,
    reconcile_time: Histogram,
    active_workers: Gauge,
    max_concurrent: Gauge,
    queue_depth: Gauge,
    queue_adds: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    queue_retries: Counter,
}

impl fmt::Debug for ControllerMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerMetrics")
            .field("controller", &self.inner.controller)
            .finish_non_exhaustive()
    }
}

impl ControllerMetrics {
    /// The handle for `controller` in `registry`; same as [`Registry::controller`].
    pub fn new(registry: &Registry, controller: &str) -> Self {
        registry.controller(controller)
    }

    pub(crate) fn from_families(families: &RuntimeFamilies, controller: &str) -> Self {
        let c = controller;
        let total = |result: &str| families.reconcile_total.series(&[c, result]);
        let series = ControllerSeries {
            controller: controller.to_owned(),
            success: total("success"),
            requeue: total("requeue"),
            requeue_after: total("requeue_after"),
            error: total("error"),
            errors: families.reconcile_errors.series(&[c]),
            terminal_errors: families.terminal_reconcile_errors.series(&[c]),
            reconcile_time: families.reconcile_time.series(&[c]),
            active_workers: families.active_workers.series(&[c]),
            max_concurrent: families.max_concurrent.series(&[c]),
            queue_depth: families.queue_depth.series(&[c, c]),
            queue_adds: families.queue_adds.series(&[c, c]),
            queue_duration: families.queue_duration.series(&[c, c]),
            work_duration: families.work_duration.series(&[c, c]),
            queue_retries: families.queue_retries.series(&[c, c]),
        };
        Self {
            inner: Arc::new(series),
        }
    }

    /// The controller name (the `controller` label).
    pub fn controller(&self) -> &str {
        &self.inner.controller
    }

    /// Records a finished reconcile: counts it under its result (and as an error, and a terminal
    /// error, where that applies) and observes its duration in
    /// `controller_runtime_reconcile_time_seconds`.
    pub fn reconcile_finished(&self, outcome: ReconcileOutcome, duration: Duration) {
        let s = &self.inner;
        match outcome {
            ReconcileOutcome::Success => s.success.inc(),
            ReconcileOutcome::Requeue => s.requeue.inc(),
            ReconcileOutcome::RequeueAfter => s.requeue_after.inc(),
            ReconcileOutcome::Error => {
                s.error.inc();
                s.errors.inc();
            }
            ReconcileOutcome::TerminalError => {
                s.error.inc();
                s.errors.inc();
                s.terminal_errors.inc();
            }
        }
        s.reconcile_time.observe_duration(duration);
    }

    /// A worker started a reconcile (`controller_runtime_active_workers` + 1).
    pub fn active_workers_inc(&self) {
        self.inner.active_workers.inc();
    }

    /// A worker finished a reconcile (`controller_runtime_active_workers` - 1).
    pub fn active_workers_dec(&self) {
        self.inner.active_workers.dec();
    }

    /// Counts an active worker until the guard is dropped, even if the reconcile future is
    /// cancelled or panics.
    pub fn active_worker(&self) -> ActiveWorkerGuard {
        self.active_workers_inc();
        ActiveWorkerGuard {
            gauge: self.inner.active_workers.clone(),
        }
    }

    /// Sets `controller_runtime_max_concurrent_reconciles`.
    pub fn set_max_concurrent(&self, max: usize) {
        self.inner.max_concurrent.set(max as f64);
    }

    /// Counts an add to the work queue (`workqueue_adds_total`).
    pub fn queue_add(&self) {
        self.inner.queue_adds.inc();
    }

    /// Sets the number of keys waiting in the work queue (`workqueue_depth`).
    pub fn queue_depth(&self, depth: usize) {
        self.inner.queue_depth.set(depth as f64);
    }

    /// Observes how long a key waited in the queue before a worker took it
    /// (`workqueue_queue_duration_seconds`).
    pub fn queue_latency(&self, waited: Duration) {
        self.inner.queue_duration.observe_duration(waited);
    }

    /// Observes how long processing a key took (`workqueue_work_duration_seconds`).
    pub fn work_duration(&self, took: Duration) {
        self.inner.work_duration.observe_duration(took);
    }

    /// Counts a rate-limited re-add of a key (`workqueue_retries_total`).
    pub fn retry(&self) {
        self.inner.queue_retries.inc();
    }
}

/// Feeds a [`WorkQueue`](crate::queue::WorkQueue)'s hooks into this controller's `workqueue_*`
/// series. Every hook is a single atomic update, so it is safe under the queue's lock.
impl crate::queue::QueueMetrics for ControllerMetrics {
    fn on_add(&self) {
        self.queue_add();
    }

    fn on_depth(&self, depth: usize) {
        self.queue_depth(depth);
    }

    fn on_queue_latency(&self, latency: Duration) {
        self.queue_latency(latency);
    }

    fn on_work_duration(&self, duration: Duration) {
        self.work_duration(duration);
    }

    fn on_retry(&self) {
        self.retry();
    }
}

/// Decrements `controller_runtime_active_workers` when dropped; from
/// [`ControllerMetrics::active_worker`].
#[must_use = "the worker counts as active only while the guard is alive"]
pub struct ActiveWorkerGuard {
    gauge: Gauge,
}

impl fmt::Debug for ActiveWorkerGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActiveWorkerGuard").finish_non_exhaustive()
    }
}

impl Drop for ActiveWorkerGuard {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_runtime_families_are_hidden_until_used() {
        assert_eq!(Registry::new().encode_text(), "");
    }

    #[test]
    fn metrics_controller_series_start_at_zero() {
        let registry = Registry::new();
        let m = registry.controller("memcached");
        m.set_max_concurrent(2);
        let text = registry.encode_text();
        for line in [
            "# HELP controller_runtime_reconcile_total Total number of reconciliations per controller\n",
            "# TYPE controller_runtime_reconcile_total counter\n",
            "controller_runtime_reconcile_total{controller=\"memcached\",result=\"error\"} 0\n",
            "controller_runtime_reconcile_total{controller=\"memcached\",result=\"requeue\"} 0\n",
            "controller_runtime_reconcile_total{controller=\"memcached\",result=\"requeue_after\"} 0\n",
            "controller_runtime_reconcile_total{controller=\"memcached\",result=\"success\"} 0\n",
            "controller_runtime_reconcile_errors_total{controller=\"memcached\"} 0\n",
            "controller_runtime_terminal_reconcile_errors_total{controller=\"memcached\"} 0\n",
            "controller_runtime_active_workers{controller=\"memcached\"} 0\n",
            "controller_runtime_max_concurrent_reconciles{controller=\"memcached\"} 2\n",
            "workqueue_depth{controller=\"memcached\",name=\"memcached\"} 0\n",
            "workqueue_adds_total{controller=\"memcached\",name=\"memcached\"} 0\n",
            "workqueue_retries_total{controller=\"memcached\",name=\"memcached\"} 0\n",
            "# TYPE controller_runtime_reconcile_time_seconds histogram\n",
            "controller_runtime_reconcile_time_seconds_count{controller=\"memcached\"} 0\n",
            "workqueue_queue_duration_seconds_count{controller=\"memcached\",name=\"memcached\"} 0\n",
            "workqueue_work_duration_seconds_count{controller=\"memcached\",name=\"memcached\"} 0\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        assert!(!text.contains("leader_election_master_status"));
    }

    #[test]
    fn metrics_controller_updates() {
        let registry = Registry::new();
        let m = ControllerMetrics::new(&registry, "app");
        m.reconcile_finished(ReconcileOutcome::Success, Duration::from_millis(3));
        m.reconcile_finished(ReconcileOutcome::Success, Duration::from_millis(70));
        m.reconcile_finished(ReconcileOutcome::Requeue, Duration::from_secs(2));
        m.reconcile_finished(ReconcileOutcome::RequeueAfter, Duration::from_secs(61));
        m.reconcile_finished(ReconcileOutcome::Error, Duration::from_millis(1));
        m.reconcile_finished(ReconcileOutcome::TerminalError, Duration::from_millis(1));
        m.active_workers_inc();
        m.active_workers_inc();
        m.active_workers_dec();
        {
            let _guard = m.active_worker();
            assert!(
                registry
                    .encode_text()
                    .contains("controller_runtime_active_workers{controller=\"app\"} 2\n")
            );
        }
        m.queue_add();
        m.queue_add();
        m.queue_depth(7);
        m.queue_latency(Duration::from_micros(5));
        m.work_duration(Duration::from_millis(250));
        m.retry();
        // A second handle shares the series.
        registry.controller("app").retry();
        registry.leader_status("korral-lock", true);
        registry.leader_status("other-lock", true);
        registry.leader_status("other-lock", false);

        let text = registry.encode_text();
        let l = "controller=\"app\"";
        let q = "controller=\"app\",name=\"app\"";
        for line in [
            format!("controller_runtime_reconcile_total{{{l},result=\"success\"}} 2\n"),
            format!("controller_runtime_reconcile_total{{{l},result=\"requeue\"}} 1\n"),
            format!("controller_runtime_reconcile_total{{{l},result=\"requeue_after\"}} 1\n"),
            format!("controller_runtime_reconcile_total{{{l},result=\"error\"}} 2\n"),
            format!("controller_runtime_reconcile_errors_total{{{l}}} 2\n"),
            format!("controller_runtime_terminal_reconcile_errors_total{{{l}}} 1\n"),
            format!("controller_runtime_reconcile_time_seconds_bucket{{{l},le=\"0.005\"}} 3\n"),
            format!("controller_runtime_reconcile_time_seconds_bucket{{{l},le=\"0.1\"}} 4\n"),
            format!("controller_runtime_reconcile_time_seconds_bucket{{{l},le=\"2\"}} 5\n"),
            format!("controller_runtime_reconcile_time_seconds_bucket{{{l},le=\"60\"}} 5\n"),
            format!("controller_runtime_reconcile_time_seconds_bucket{{{l},le=\"+Inf\"}} 6\n"),
            format!("controller_runtime_reconcile_time_seconds_count{{{l}}} 6\n"),
            format!("controller_runtime_active_workers{{{l}}} 1\n"),
            format!("workqueue_adds_total{{{q}}} 2\n"),
            format!("workqueue_depth{{{q}}} 7\n"),
            format!("workqueue_retries_total{{{q}}} 2\n"),
            format!("workqueue_queue_duration_seconds_bucket{{{q},le=\"1e-06\"}} 0\n"),
            format!(
                "workqueue_queue_duration_seconds_bucket{{{q},le=\"9.999999999999999e-06\"}} 1\n"
            ),
            format!("workqueue_queue_duration_seconds_count{{{q}}} 1\n"),
            format!("workqueue_work_duration_seconds_bucket{{{q},le=\"0.1\"}} 0\n"),
            format!("workqueue_work_duration_seconds_bucket{{{q},le=\"1\"}} 1\n"),
            format!("workqueue_work_duration_seconds_sum{{{q}}} 0.25\n"),
            "leader_election_master_status{name=\"korral-lock\"} 1\n".to_owned(),
            "leader_election_master_status{name=\"other-lock\"} 0\n".to_owned(),
        ] {
            assert!(text.contains(&line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn metrics_workqueue_buckets_print_like_go() {
        let registry = Registry::new();
        registry.controller("c").queue_latency(Duration::ZERO);
        let text = registry.encode_text();
        let les: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("workqueue_queue_duration_seconds_bucket"))
            .filter_map(|l| l.split("le=\"").nth(1))
            .filter_map(|l| l.split('"').next())
            .collect();
        assert_eq!(
            les,
            [
                "1e-08",
                "1e-07",
                "1e-06",
                "9.999999999999999e-06",
                "9.999999999999999e-05",
                "0.001",
                "0.01",
                "0.1",
                "1",
                "10",
                "100",
                "1000",
                "+Inf"
            ]
        );
    }

    #[test]
    fn metrics_controller_feeds_queue_hooks() {
        use crate::queue::QueueMetrics;
        let registry = Registry::new();
        let hooks: Arc<dyn QueueMetrics> = Arc::new(registry.controller("q"));
        hooks.on_add();
        hooks.on_depth(3);
        hooks.on_queue_latency(Duration::from_millis(1));
        hooks.on_work_duration(Duration::from_millis(1));
        hooks.on_retry();
        let text = registry.encode_text();
        let q = "controller=\"q\",name=\"q\"";
        for line in [
            format!("workqueue_adds_total{{{q}}} 1\n"),
            format!("workqueue_depth{{{q}}} 3\n"),
            format!("workqueue_retries_total{{{q}}} 1\n"),
            format!("workqueue_queue_duration_seconds_count{{{q}}} 1\n"),
            format!("workqueue_work_duration_seconds_count{{{q}}} 1\n"),
        ] {
            assert!(text.contains(&line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn metrics_outcome_labels() {
        assert_eq!(ReconcileOutcome::Success.result_label(), "success");
        assert_eq!(ReconcileOutcome::Requeue.result_label(), "requeue");
        assert_eq!(
            ReconcileOutcome::RequeueAfter.result_label(),
            "requeue_after"
        );
        assert_eq!(ReconcileOutcome::Error.result_label(), "error");
        assert_eq!(ReconcileOutcome::TerminalError.result_label(), "error");
    }
}
