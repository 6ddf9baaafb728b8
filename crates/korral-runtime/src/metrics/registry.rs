//! The metrics registry: families of counters, gauges and histograms with label sets.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use super::controller::{ControllerMetrics, RuntimeFamilies};
use super::text;

/// The Go client's default histogram buckets (`prometheus.DefBuckets`), in seconds.
pub const DEFAULT_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// `count` bucket bounds starting at `start`, each `factor` times the previous one, computed as
/// the Go client's `prometheus.ExponentialBuckets` does (so the bounds print identically).
/// Returns an empty list (which registration rejects) unless `count >= 1`, `start > 0` and
/// `factor > 1`.
pub fn exponential_buckets(start: f64, factor: f64, count: usize) -> Vec<f64> {
    if count == 0 || start.is_nan() || start <= 0.0 || factor.is_nan() || factor <= 1.0 {
        return Vec::new();
    }
    let mut buckets = Vec::with_capacity(count);
    let mut bound = start;
    for _ in 0..count {
        buckets.push(bound);
        bound *= factor;
    }
    buckets
}

/// `count` bucket bounds starting at `start`, each `width` above the previous one (Go's
/// `prometheus.LinearBuckets`). Returns an empty list (which registration rejects) unless
/// `count >= 1` and `width > 0`.
pub fn linear_buckets(start: f64, width: f64, count: usize) -> Vec<f64> {
    if count == 0 || width.is_nan() || width <= 0.0 {
        return Vec::new();
    }
    let mut buckets = Vec::with_capacity(count);
    let mut bound = start;
    for _ in 0..count {
        buckets.push(bound);
        bound += width;
    }
    buckets
}

/// Why a metric could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// The metric name does not match `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    #[error("registering metric {name:?}: invalid metric name")]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// A label name does not match `[a-zA-Z_][a-zA-Z0-9_]*` or starts with `__`.
    #[error("registering metric {name:?}: invalid label name {label:?}")]
    InvalidLabelName {
        /// The metric.
        name: String,
        /// The rejected label name.
        label: String,
    },
    /// A label name is given twice.
    #[error("registering metric {name:?}: label {label:?} is given twice")]
    DuplicateLabelName {
        /// The metric.
        name: String,
        /// The repeated label name.
        label: String,
    },
    /// A histogram declares the label `le`, which is reserved for its buckets.
    #[error("registering metric {name:?}: label \"le\" is reserved for histogram buckets")]
    ReservedLabelName {
        /// The metric.
        name: String,
    },
    /// Histogram buckets are empty, contain NaN or are not strictly increasing.
    #[error(
        "registering metric {name:?}: histogram buckets must be non-empty, not NaN and strictly increasing"
    )]
    InvalidBuckets {
        /// The metric.
        name: String,
    },
    /// Another metric of this name is registered already.
    #[error("registering metric {name:?}: a metric with this name is already registered")]
    AlreadyRegistered {
        /// The name.
        name: String,
    },
}

/// Why a series could not be selected in a [`MetricVec`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectSeriesError {
    /// The number of label values differs from the number of label names.
    #[error("selecting a series of {metric:?}: expected {expected} label values, got {got}")]
    WrongLabelCount {
        /// The metric.
        metric: String,
        /// How many label names the metric has.
        expected: usize,
        /// How many values were given.
        got: usize,
    },
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

fn add_f64(cell: &AtomicU64, delta: f64) {
    // The closure always returns Some, so this cannot fail.
    let _ = cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
        Some((f64::from_bits(bits) + delta).to_bits())
    });
}

mod sealed {
    /// What a kind of series needs to be created and rendered. Not for use outside this module.
    pub trait Sealed: Clone + Send + Sync + 'static {
        /// What every series of a family shares (the buckets for histograms).
        type Config: Send + Sync + 'static;
        /// The `# TYPE` of the family.
        const TYPE: &'static str;
        /// A new series at zero.
        fn create(config: &Self::Config) -> Self;
        /// Appends the sample lines of this series; `labels` is `a="x",b="y"` or empty.
        fn encode(&self, name: &str, labels: &str, out: &mut String);
    }
}

/// A kind of series: [`Counter`], [`Gauge`] or [`Histogram`]. Sealed.
pub trait Series: sealed::Sealed {}

fn push_sample_head(out: &mut String, name: &str, suffix: &str, labels: &str) {
    out.push_str(name);
    out.push_str(suffix);
    if !labels.is_empty() {
        out.push('{');
        out.push_str(labels);
        out.push('}');
    }
    out.push(' ');
}

/// A monotonically increasing value (a Prometheus counter). Cheap to clone; clones share the
/// series.
#[derive(Clone, Default)]
pub struct Counter {
    inner: Arc<CounterCore>,
}

#[derive(Default)]
struct CounterCore {
    /// Whole increments, the common case, without a compare-and-swap loop.
    whole: AtomicU64,
    /// Fractional increments, as `f64` bits.
    fraction: AtomicU64,
}

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.inner.whole.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `delta`. Negative or NaN deltas are ignored (a counter never goes down).
    pub fn inc_by(&self, delta: f64) {
        if delta.is_nan() || delta < 0.0 {
            tracing::debug!(delta, "ignoring a negative or NaN counter increment");
            return;
        }
        // Exactly representable whole numbers take the atomic-add path.
        if delta.fract() == 0.0 && delta < 9_007_199_254_740_992.0 {
            self.inner.whole.fetch_add(delta as u64, Ordering::Relaxed);
        } else {
            add_f64(&self.inner.fraction, delta);
        }
    }

    /// The current value.
    pub fn get(&self) -> f64 {
        self.inner.whole.load(Ordering::Relaxed) as f64
            + f64::from_bits(self.inner.fraction.load(Ordering::Relaxed))
    }
}

impl fmt::Debug for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Counter").field(&self.get()).finish()
    }
}

impl sealed::Sealed for Counter {
    type Config = ();
    const TYPE: &'static str = "counter";

    fn create(_: &()) -> Self {
        Self::default()
    }

    fn encode(&self, name: &str, labels: &str, out: &mut String) {
        push_sample_head(out, name, "", labels);
        text::push_float(out, self.get());
        out.push('\n');
    }
}

impl Series for Counter {}

/// A value that goes up and down (a Prometheus gauge). Cheap to clone; clones share the series.
#[derive(Clone, Default)]
pub struct Gauge {
    /// The value, as `f64` bits.
    bits: Arc<AtomicU64>,
}

impl Gauge {
    /// Sets the value.
    pub fn set(&self, value: f64) {
        self.bits.store(value.to_bits(), Ordering::Relaxed);
    }

    /// Adds one.
    pub fn inc(&self) {
        self.add(1.0);
    }

    /// Subtracts one.
    pub fn dec(&self) {
        self.add(-1.0);
    }

    /// Adds `delta` (which may be negative).
    pub fn add(&self, delta: f64) {
        add_f64(&self.bits, delta);
    }

    /// Subtracts `delta`.
    pub fn sub(&self, delta: f64) {
        self.add(-delta);
    }

    /// The current value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Relaxed))
    }
}

impl fmt::Debug for Gauge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Gauge").field(&self.get()).finish()
    }
}

impl sealed::Sealed for Gauge {
    type Config = ();
    const TYPE: &'static str = "gauge";

    fn create(_: &()) -> Self {
        Self::default()
    }

    fn encode(&self, name: &str, labels: &str, out: &mut String) {
        push_sample_head(out, name, "", labels);
        text::push_float(out, self.get());
        out.push('\n');
    }
}

impl Series for Gauge {}

/// A distribution of observations in cumulative buckets (a Prometheus histogram). Cheap to
/// clone; clones share the series.
#[derive(Clone)]
pub struct Histogram {
    inner: Arc<HistogramCore>,
}

struct HistogramCore {
    /// Upper bounds, strictly increasing, without `+Inf`.
    bounds: Arc<[f64]>,
    /// Per-bucket (not cumulative) counts; the last one is the `+Inf` overflow bucket.
    counts: Box<[AtomicU64]>,
    /// Sum of observations, as `f64` bits.
    sum: AtomicU64,
}

impl Histogram {
    fn with_bounds(bounds: &Arc<[f64]>) -> Self {
        let counts = (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect();
        Self {
            inner: Arc::new(HistogramCore {
                bounds: bounds.clone(),
                counts,
                sum: AtomicU64::new(0),
            }),
        }
    }

    /// Records one observation. It lands in the first bucket whose bound is `>= value`.
    pub fn observe(&self, value: f64) {
        let index = self.inner.bounds.partition_point(|bound| *bound < value);
        if let Some(count) = self.inner.counts.get(index) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        add_f64(&self.inner.sum, value);
    }

    /// Records a duration, in seconds.
    pub fn observe_duration(&self, duration: Duration) {
        self.observe(duration.as_secs_f64());
    }

    /// How many observations were recorded.
    pub fn count(&self) -> u64 {
        self.inner
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// The sum of all observations.
    pub fn sum(&self) -> f64 {
        f64::from_bits(self.inner.sum.load(Ordering::Relaxed))
    }

    /// The bucket upper bounds (without `+Inf`).
    pub fn bounds(&self) -> &[f64] {
        &self.inner.bounds
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count())
            .field("sum", &self.sum())
            .finish()
    }
}

impl sealed::Sealed for Histogram {
    type Config = Arc<[f64]>;
    const TYPE: &'static str = "histogram";

    fn create(bounds: &Arc<[f64]>) -> Self {
        Self::with_bounds(bounds)
    }

    fn encode(&self, name: &str, labels: &str, out: &mut String) {
        // `_count` is the `+Inf` bucket, so the two always agree even under concurrent updates.
        let mut cumulative = 0u64;
        let bounds = self
            .inner
            .bounds
            .iter()
            .map(Some)
            .chain(std::iter::once(None));
        for (bound, count) in bounds.zip(self.inner.counts.iter()) {
            cumulative += count.load(Ordering::Relaxed);
            out.push_str(name);
            out.push_str("_bucket{");
            out.push_str(labels);
            if !labels.is_empty() {
                out.push(',');
            }
            out.push_str("le=\"");
            match bound {
                Some(bound) => text::push_float(out, *bound),
                None => out.push_str("+Inf"),
            }
            out.push_str("\"} ");
            text::push_u64(out, cumulative);
            out.push('\n');
        }
        push_sample_head(out, name, "_sum", labels);
        text::push_float(out, self.sum());
        out.push('\n');
        push_sample_head(out, name, "_count", labels);
        text::push_u64(out, cumulative);
        out.push('\n');
    }
}

impl Series for Histogram {}

/// One series of a family, with its label pairs rendered once.
struct Entry<S> {
    series: S,
    labels: String,
}

/// A metric family: name, help, label names and the series by label values.
struct Family<S: Series> {
    name: String,
    help: String,
    /// Label names as declared.
    label_names: Vec<String>,
    /// Indexes into `label_names`, in label-name order (the order labels are printed in and
    /// series are sorted by, as the Go client does).
    order: Vec<usize>,
    config: S::Config,
    /// Keyed by label values in `order`.
    series: RwLock<BTreeMap<Vec<String>, Entry<S>>>,
}

impl<S: Series> Family<S> {
    fn new(name: &str, help: &str, label_names: &[&str], config: S::Config) -> Self {
        let mut order: Vec<usize> = (0..label_names.len()).collect();
        order.sort_by_key(|&i| label_names.get(i).copied().unwrap_or_default());
        Self {
            name: name.to_owned(),
            help: help.to_owned(),
            label_names: label_names.iter().map(|l| (*l).to_owned()).collect(),
            order,
            config,
            series: RwLock::new(BTreeMap::new()),
        }
    }

    fn key(&self, values: &[&str]) -> Vec<String> {
        self.order
            .iter()
            .filter_map(|&i| values.get(i))
            .map(|v| (*v).to_owned())
            .collect()
    }

    fn check_arity(&self, values: &[&str]) -> Result<(), SelectSeriesError> {
        if values.len() == self.label_names.len() {
            Ok(())
        } else {
            Err(SelectSeriesError::WrongLabelCount {
                metric: self.name.clone(),
                expected: self.label_names.len(),
                got: values.len(),
            })
        }
    }

    /// The series for `values` (in declared order), created at zero if new. The caller has
    /// checked the number of values.
    fn get_or_create(&self, values: &[&str]) -> S {
        let key = self.key(values);
        if let Some(entry) = read(&self.series).get(&key) {
            return entry.series.clone();
        }
        let mut series = write(&self.series);
        let labels = self.render_labels(&key);
        series
            .entry(key)
            .or_insert_with(|| Entry {
                series: S::create(&self.config),
                labels,
            })
            .series
            .clone()
    }

    fn render_labels(&self, key: &[String]) -> String {
        let mut out = String::new();
        let names = self.order.iter().filter_map(|&i| self.label_names.get(i));
        for (n, (name, value)) in names.zip(key).enumerate() {
            if n > 0 {
                out.push(',');
            }
            out.push_str(name);
            out.push_str("=\"");
            text::push_escaped_label_value(&mut out, value);
            out.push('"');
        }
        out
    }
}

/// Something the registry can render.
pub(crate) trait Collect: Send + Sync {
    fn encode(&self, out: &mut String);
}

impl<S: Series> Collect for Family<S> {
    fn encode(&self, out: &mut String) {
        let series = read(&self.series);
        // Like the Go client, a family without series is left out entirely.
        if series.is_empty() {
            return;
        }
        if !self.help.is_empty() {
            out.push_str("# HELP ");
            out.push_str(&self.name);
            out.push(' ');
            text::push_escaped_help(out, &self.help);
            out.push('\n');
        }
        out.push_str("# TYPE ");
        out.push_str(&self.name);
        out.push(' ');
        out.push_str(S::TYPE);
        out.push('\n');
        for entry in series.values() {
            entry.series.encode(&self.name, &entry.labels, out);
        }
    }
}

/// A family of series of one kind, one per combination of label values (Go's `CounterVec`,
/// `GaugeVec`, `HistogramVec`). Cheap to clone; clones share the family.
pub struct MetricVec<S: Series> {
    family: Arc<Family<S>>,
}

/// Counters by label values.
pub type CounterVec = MetricVec<Counter>;
/// Gauges by label values.
pub type GaugeVec = MetricVec<Gauge>;
/// Histograms by label values.
pub type HistogramVec = MetricVec<Histogram>;

impl<S: Series> Clone for MetricVec<S> {
    fn clone(&self) -> Self {
        Self {
            family: self.family.clone(),
        }
    }
}

impl<S: Series> fmt::Debug for MetricVec<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricVec")
            .field("name", &self.family.name)
            .field("type", &S::TYPE)
            .field("labels", &self.family.label_names)
            .finish()
    }
}

impl<S: Series> MetricVec<S> {
    /// The series for these label values, given in the order the label names were declared;
    /// created at zero if new. Keep the returned handle to update it without a map lookup.
    pub fn with_label_values(&self, values: &[&str]) -> Result<S, SelectSeriesError> {
        self.family.check_arity(values)?;
        Ok(self.family.get_or_create(values))
    }

    /// Drops the series for these label values from the output; returns whether it existed.
    /// Handles to it stay usable but are no longer rendered.
    pub fn remove_label_values(&self, values: &[&str]) -> bool {
        if self.family.check_arity(values).is_err() {
            return false;
        }
        let key = self.family.key(values);
        write(&self.family.series).remove(&key).is_some()
    }

    /// Drops every series of the family.
    pub fn reset(&self) {
        write(&self.family.series).clear();
    }

    /// The metric name.
    pub fn name(&self) -> &str {
        &self.family.name
    }

    /// The label names, in declared order.
    pub fn label_names(&self) -> &[String] {
        &self.family.label_names
    }

    /// The series for `values`, which the caller knows has the right number of values.
    pub(crate) fn series(&self, values: &[&str]) -> S {
        self.family.get_or_create(values)
    }
}

/// A set of metrics rendered together on `/metrics`. Cheap to clone; clones share the metrics.
///
/// [`Registry::new`] comes with the controller-runtime families (empty until a controller or
/// leader election reports); users register their own next to them.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<RegistryInner>,
}

struct RegistryInner {
    families: RwLock<BTreeMap<String, Arc<dyn Collect>>>,
    runtime: RuntimeFamilies,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field(
                "families",
                &read(&self.inner.families).keys().collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn valid_metric_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    !name.starts_with("__")
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn validate(name: &str, labels: &[&str], histogram: bool) -> Result<(), RegisterError> {
    if !valid_metric_name(name) {
        return Err(RegisterError::InvalidName {
            name: name.to_owned(),
        });
    }
    for (i, label) in labels.iter().enumerate() {
        if !valid_label_name(label) {
            return Err(RegisterError::InvalidLabelName {
                name: name.to_owned(),
                label: (*label).to_owned(),
            });
        }
        if histogram && *label == "le" {
            return Err(RegisterError::ReservedLabelName {
                name: name.to_owned(),
            });
        }
        if labels.iter().take(i).any(|l| l == label) {
            return Err(RegisterError::DuplicateLabelName {
                name: name.to_owned(),
                label: (*label).to_owned(),
            });
        }
    }
    Ok(())
}

/// Checks bucket bounds and drops a trailing `+Inf` (it is always added).
fn validate_buckets(name: &str, buckets: &[f64]) -> Result<Arc<[f64]>, RegisterError> {
    let buckets = match buckets.split_last() {
        Some((last, rest)) if *last == f64::INFINITY => rest,
        _ => buckets,
    };
    let increasing = buckets.windows(2).all(|w| matches!(w, [a, b] if a < b));
    if buckets.is_empty() || buckets.iter().any(|b| b.is_nan()) || !increasing {
        return Err(RegisterError::InvalidBuckets {
            name: name.to_owned(),
        });
    }
    Ok(buckets.into())
}

impl Registry {
    /// A registry holding the (still empty) controller-runtime families.
    pub fn new() -> Self {
        let mut families: BTreeMap<String, Arc<dyn Collect>> = BTreeMap::new();
        let runtime = RuntimeFamilies::new(&mut |name, family| {
            families.insert(name.to_owned(), family);
        });
        Self {
            inner: Arc::new(RegistryInner {
                families: RwLock::new(families),
                runtime,
            }),
        }
    }

    /// A process-wide registry, like controller-runtime's `metrics.Registry`, for code that has
    /// no handle to the manager's registry.
    pub fn global() -> &'static Registry {
        static GLOBAL: OnceLock<Registry> = OnceLock::new();
        GLOBAL.get_or_init(Registry::new)
    }

    /// Wraps a new family and adds it to the registry; used by the runtime families too.
    pub(crate) fn family<S: Series>(
        name: &str,
        help: &str,
        labels: &[&str],
        config: S::Config,
    ) -> (MetricVec<S>, Arc<dyn Collect>) {
        let family = Arc::new(Family::<S>::new(name, help, labels, config));
        (
            MetricVec {
                family: family.clone(),
            },
            family,
        )
    }

    fn register<S: Series>(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
        config: S::Config,
    ) -> Result<MetricVec<S>, RegisterError> {
        let (vec, collect) = Self::family::<S>(name, help, labels, config);
        let mut families = write(&self.inner.families);
        if families.contains_key(name) {
            return Err(RegisterError::AlreadyRegistered {
                name: name.to_owned(),
            });
        }
        families.insert(name.to_owned(), collect);
        Ok(vec)
    }

    /// Registers a counter without labels.
    pub fn counter(&self, name: &str, help: &str) -> Result<Counter, RegisterError> {
        validate(name, &[], false)?;
        Ok(self.register::<Counter>(name, help, &[], ())?.series(&[]))
    }

    /// Registers a family of counters with these label names.
    pub fn counter_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<CounterVec, RegisterError> {
        validate(name, labels, false)?;
        self.register(name, help, labels, ())
    }

    /// Registers a gauge without labels.
    pub fn gauge(&self, name: &str, help: &str) -> Result<Gauge, RegisterError> {
        validate(name, &[], false)?;
        Ok(self.register::<Gauge>(name, help, &[], ())?.series(&[]))
    }

    /// Registers a family of gauges with these label names.
    pub fn gauge_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<GaugeVec, RegisterError> {
        validate(name, labels, false)?;
        self.register(name, help, labels, ())
    }

    /// Registers a histogram without labels. `buckets` are upper bounds, strictly increasing;
    /// `+Inf` is always added (see [`DEFAULT_BUCKETS`], [`exponential_buckets`]).
    pub fn histogram(
        &self,
        name: &str,
        help: &str,
        buckets: &[f64],
    ) -> Result<Histogram, RegisterError> {
        validate(name, &[], true)?;
        let bounds = validate_buckets(name, buckets)?;
        Ok(self
            .register::<Histogram>(name, help, &[], bounds)?
            .series(&[]))
    }

    /// Registers a family of histograms with these label names and buckets.
    pub fn histogram_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
        buckets: &[f64],
    ) -> Result<HistogramVec, RegisterError> {
        validate(name, labels, true)?;
        let bounds = validate_buckets(name, buckets)?;
        self.register(name, help, labels, bounds)
    }

    /// Removes the family called `name` from the output; returns whether it was registered.
    /// Handles to it stay usable. The name can then be registered again.
    pub fn unregister(&self, name: &str) -> bool {
        write(&self.inner.families).remove(name).is_some()
    }

    /// The metric handle for the controller named `controller`, creating its series (at zero,
    /// as controller-runtime does when a controller starts). Calling it again for the same name
    /// returns handles to the same series.
    pub fn controller(&self, controller: &str) -> ControllerMetrics {
        ControllerMetrics::from_families(&self.inner.runtime, controller)
    }

    /// Sets `leader_election_master_status{name}` to 1 while leading the lease `name`, 0
    /// otherwise.
    pub fn leader_status(&self, name: &str, leading: bool) {
        self.inner.runtime.leader_status(name, leading);
    }

    /// Every family with at least one series, sorted by name, in the Prometheus text exposition
    /// format 0.0.4.
    pub fn encode_text(&self) -> String {
        let mut out = String::new();
        self.encode_text_into(&mut out);
        out
    }

    /// The sum of the samples of the counter or gauge `name` whose labels include every pair
    /// of `labels` (e.g. `total("controller_runtime_reconcile_total", &[("controller",
    /// "memcached")])`: the reconciles of that controller, whatever their result). `0` when
    /// there is no such series.
    pub fn total(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        self.encode_text()
            .lines()
            .filter_map(|line| {
                let rest = line.strip_prefix(name)?;
                let (set, value) = match rest.strip_prefix('{') {
                    Some(rest) => rest.split_once("} ")?,
                    None => ("", rest.strip_prefix(' ')?),
                };
                let pairs: Vec<&str> = set.split(',').collect();
                wanted
                    .iter()
                    .all(|w| pairs.contains(&w.as_str()))
                    .then(|| value.trim().parse::<f64>().ok())?
            })
            .sum()
    }

    /// Appends [`Registry::encode_text`] to `out`.
    pub fn encode_text_into(&self, out: &mut String) {
        let families: Vec<Arc<dyn Collect>> =
            read(&self.inner.families).values().cloned().collect();
        for family in families {
            family.encode(out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    #[test]
    fn totals_sum_the_series_with_the_labels() -> TestResult {
        let registry = Registry::new();
        let reconciles =
            registry.counter_vec("reconciles_total", "Reconciles.", &["controller", "result"])?;
        reconciles.with_label_values(&["a", "success"])?.inc_by(3.0);
        reconciles.with_label_values(&["a", "error"])?.inc();
        reconciles.with_label_values(&["b", "success"])?.inc();
        registry
            .counter("reconciles_total_other", "Not the same name.")?
            .inc();
        assert_eq!(
            registry.total("reconciles_total", &[("controller", "a")]),
            4.0
        );
        assert_eq!(registry.total("reconciles_total", &[]), 5.0);
        assert_eq!(
            registry.total(
                "reconciles_total",
                &[("controller", "a"), ("result", "error")]
            ),
            1.0
        );
        assert_eq!(
            registry.total("reconciles_total", &[("controller", "c")]),
            0.0
        );
        assert_eq!(registry.total("missing", &[]), 0.0);
        Ok(())
    }

    #[test]
    fn metrics_golden_text_format() -> TestResult {
        let registry = Registry::new();
        let requests = registry.counter_vec(
            "http_requests_total",
            "Requests handled.\nBy path \\ code.",
            &["path", "code"],
        )?;
        let ok = requests.with_label_values(&["/a\"b\\c\nd", "200"])?;
        ok.inc();
        ok.inc_by(2.0);
        requests.with_label_values(&["/", "500"])?.inc_by(1.5);
        let temperature = registry.gauge("temperature_celsius", "Current temperature.")?;
        temperature.set(-3.25);
        let jobs =
            registry.histogram_vec("job_seconds", "Job duration.", &["queue"], &[0.1, 1.0])?;
        let q1 = jobs.with_label_values(&["q1"])?;
        q1.observe(0.25);
        q1.observe(0.5);
        q1.observe(4.0);
        q1.observe(0.1);
        let plain = registry.histogram("plain_seconds", "No labels.", &[1.0, f64::INFINITY])?;
        plain.observe_duration(Duration::from_millis(500));

        let want = concat!(
            "# HELP http_requests_total Requests handled.\\nBy path \\\\ code.\n",
            "# TYPE http_requests_total counter\n",
            "http_requests_total{code=\"200\",path=\"/a\\\"b\\\\c\\nd\"} 3\n",
            "http_requests_total{code=\"500\",path=\"/\"} 1.5\n",
            "# HELP job_seconds Job duration.\n",
            "# TYPE job_seconds histogram\n",
            "job_seconds_bucket{queue=\"q1\",le=\"0.1\"} 1\n",
            "job_seconds_bucket{queue=\"q1\",le=\"1\"} 3\n",
            "job_seconds_bucket{queue=\"q1\",le=\"+Inf\"} 4\n",
            "job_seconds_sum{queue=\"q1\"} 4.85\n",
            "job_seconds_count{queue=\"q1\"} 4\n",
            "# HELP plain_seconds No labels.\n",
            "# TYPE plain_seconds histogram\n",
            "plain_seconds_bucket{le=\"1\"} 1\n",
            "plain_seconds_bucket{le=\"+Inf\"} 1\n",
            "plain_seconds_sum 0.5\n",
            "plain_seconds_count 1\n",
            "# HELP temperature_celsius Current temperature.\n",
            "# TYPE temperature_celsius gauge\n",
            "temperature_celsius -3.25\n",
        );
        assert_eq!(registry.encode_text(), want);
        Ok(())
    }

    #[test]
    fn metrics_counter_and_gauge_arithmetic() -> TestResult {
        let registry = Registry::new();
        let counter = registry.counter("c_total", "c")?;
        counter.inc();
        counter.inc_by(0.5);
        counter.inc_by(-4.0);
        counter.inc_by(f64::NAN);
        assert_eq!(counter.get(), 1.5);
        let gauge = registry.gauge("g", "g")?;
        gauge.inc();
        gauge.inc();
        gauge.dec();
        gauge.add(2.5);
        gauge.sub(0.5);
        assert_eq!(gauge.get(), 3.0);
        assert!(registry.encode_text().contains("c_total 1.5\n"));
        Ok(())
    }

    #[test]
    fn metrics_histogram_bucket_boundaries_are_inclusive() -> TestResult {
        let registry = Registry::new();
        let h = registry.histogram("h", "h", &[1.0, 2.0])?;
        for v in [1.0, 2.0, 2.0000001, -5.0] {
            h.observe(v);
        }
        let text = registry.encode_text();
        assert!(text.contains("h_bucket{le=\"1\"} 2\n"), "{text}");
        assert!(text.contains("h_bucket{le=\"2\"} 3\n"), "{text}");
        assert!(text.contains("h_bucket{le=\"+Inf\"} 4\n"), "{text}");
        assert_eq!(h.count(), 4);
        Ok(())
    }

    #[test]
    fn metrics_registration_is_validated() {
        let registry = Registry::new();
        assert!(matches!(
            registry.counter("1bad", "x"),
            Err(RegisterError::InvalidName { .. })
        ));
        assert!(matches!(
            registry.counter("", "x"),
            Err(RegisterError::InvalidName { .. })
        ));
        assert!(matches!(
            registry.counter_vec("ok", "x", &["__reserved"]),
            Err(RegisterError::InvalidLabelName { .. })
        ));
        assert!(matches!(
            registry.counter_vec("ok", "x", &["a-b"]),
            Err(RegisterError::InvalidLabelName { .. })
        ));
        assert!(matches!(
            registry.gauge_vec("ok", "x", &["a", "a"]),
            Err(RegisterError::DuplicateLabelName { .. })
        ));
        assert!(matches!(
            registry.histogram_vec("ok", "x", &["le"], &[1.0]),
            Err(RegisterError::ReservedLabelName { .. })
        ));
        for buckets in [
            &[][..],
            &[2.0, 1.0],
            &[1.0, 1.0],
            &[f64::NAN],
            &[f64::INFINITY],
        ] {
            assert!(matches!(
                registry.histogram("ok", "x", buckets),
                Err(RegisterError::InvalidBuckets { .. })
            ));
        }
        assert!(registry.counter("ns:sub_total", "x").is_ok());
        assert!(matches!(
            registry.gauge("ns:sub_total", "x"),
            Err(RegisterError::AlreadyRegistered { .. })
        ));
        assert!(matches!(
            registry.counter("controller_runtime_reconcile_total", "x"),
            Err(RegisterError::AlreadyRegistered { .. })
        ));
        assert!(registry.unregister("ns:sub_total"));
        assert!(!registry.unregister("ns:sub_total"));
        assert!(registry.gauge("ns:sub_total", "x").is_ok());
    }

    #[test]
    fn metrics_series_selection_and_removal() -> TestResult {
        let registry = Registry::new();
        let vec = registry.gauge_vec("g", "g", &["b", "a"])?;
        assert_eq!(
            vec.with_label_values(&["only-one"]).err(),
            Some(SelectSeriesError::WrongLabelCount {
                metric: "g".into(),
                expected: 2,
                got: 1,
            })
        );
        vec.with_label_values(&["vb", "va"])?.set(1.0);
        // Same values, same series.
        vec.with_label_values(&["vb", "va"])?.inc();
        let text = registry.encode_text();
        assert!(text.contains("g{a=\"va\",b=\"vb\"} 2\n"), "{text}");
        assert!(vec.remove_label_values(&["vb", "va"]));
        assert!(!vec.remove_label_values(&["vb", "va"]));
        assert_eq!(registry.encode_text(), "");
        vec.with_label_values(&["x", "y"])?.set(1.0);
        vec.reset();
        assert_eq!(registry.encode_text(), "");
        Ok(())
    }

    #[test]
    fn metrics_bucket_helpers() {
        assert_eq!(exponential_buckets(1.0, 2.0, 4), vec![1.0, 2.0, 4.0, 8.0]);
        assert!(exponential_buckets(0.0, 2.0, 4).is_empty());
        assert!(exponential_buckets(1.0, 1.0, 4).is_empty());
        assert_eq!(linear_buckets(1.0, 0.5, 3), vec![1.0, 1.5, 2.0]);
        assert!(linear_buckets(1.0, 0.0, 3).is_empty());
    }

    #[test]
    fn metrics_concurrent_updates_are_not_lost() -> TestResult {
        let registry = Registry::new();
        let vec = registry.counter_vec("c_total", "c", &["k"])?;
        let h = registry.histogram("h", "h", &DEFAULT_BUCKETS)?;
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    for i in 0..1000 {
                        if let Ok(c) = vec.with_label_values(&[if i % 2 == 0 { "a" } else { "b" }])
                        {
                            c.inc();
                        }
                        h.observe(0.01);
                    }
                });
            }
        });
        assert_eq!(vec.with_label_values(&["a"])?.get(), 4000.0);
        assert_eq!(vec.with_label_values(&["b"])?.get(), 4000.0);
        assert_eq!(h.count(), 8000);
        Ok(())
    }
}
