//! controller-runtime's webhook metrics: `controller_runtime_webhook_requests_total{webhook,
//! code}`, `controller_runtime_webhook_requests_in_flight{webhook}`,
//! `controller_runtime_webhook_latency_seconds{webhook}` and
//! `controller_runtime_webhook_panics_total`, labelled by the webhook's path.

use std::time::{Duration, Instant};

use tracing::info;

use crate::metrics::{
    Counter, CounterVec, DEFAULT_BUCKETS, Gauge, GaugeVec, HistogramVec, RegisterError, Registry,
};

const REQUESTS_TOTAL: &str = "controller_runtime_webhook_requests_total";
const IN_FLIGHT: &str = "controller_runtime_webhook_requests_in_flight";
const LATENCY: &str = "controller_runtime_webhook_latency_seconds";
const PANICS: &str = "controller_runtime_webhook_panics_total";

/// The webhook series of one server. Cheap to clone.
#[derive(Clone)]
pub(crate) struct WebhookMetrics {
    requests: CounterVec,
    in_flight: GaugeVec,
    latency: HistogramVec,
    panics: CounterVec,
}

impl std::fmt::Debug for WebhookMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookMetrics").finish_non_exhaustive()
    }
}

impl WebhookMetrics {
    /// The families registered in `registry`, or, when another webhook server registered them
    /// there first, families outside it (counted, not exported), as the manager does for the
    /// cached client's metrics.
    pub(crate) fn new(registry: &Registry) -> Self {
        match Self::register(registry) {
            Ok(metrics) => metrics,
            Err(err) => {
                info!(error = %err, "the webhook metrics are not registered");
                Self::register(&Registry::new()).unwrap_or_else(|_| Self::detached())
            }
        }
    }

    fn register(registry: &Registry) -> Result<Self, RegisterError> {
        let requests = registry.counter_vec(
            REQUESTS_TOTAL,
            "Total number of admission requests by HTTP status code.",
            &["webhook", "code"],
        )?;
        let in_flight = match registry.gauge_vec(
            IN_FLIGHT,
            "Current number of admission requests being served.",
            &["webhook"],
        ) {
            Ok(v) => v,
            Err(e) => {
                registry.unregister(REQUESTS_TOTAL);
                return Err(e);
            }
        };
        let latency = match registry.histogram_vec(
            LATENCY,
            "Histogram of the latency of processing admission requests",
            &["webhook"],
            &DEFAULT_BUCKETS,
        ) {
            Ok(v) => v,
            Err(e) => {
                registry.unregister(REQUESTS_TOTAL);
                registry.unregister(IN_FLIGHT);
                return Err(e);
            }
        };
        let panics = match registry.counter_vec(PANICS, "Total number of webhook panics", &[]) {
            Ok(v) => v,
            Err(e) => {
                for name in [REQUESTS_TOTAL, IN_FLIGHT, LATENCY] {
                    registry.unregister(name);
                }
                return Err(e);
            }
        };
        Ok(Self {
            requests,
            in_flight,
            latency,
            panics,
        })
    }

    /// Families in no registry (only when even a fresh registry refuses them, which the fixed
    /// valid names rule out).
    fn detached() -> Self {
        let (requests, _) =
            Registry::family::<Counter>(REQUESTS_TOTAL, "", &["webhook", "code"], ());
        let (in_flight, _) = Registry::family::<Gauge>(IN_FLIGHT, "", &["webhook"], ());
        let (latency, _) = Registry::family::<crate::metrics::Histogram>(
            LATENCY,
            "",
            &["webhook"],
            DEFAULT_BUCKETS.into(),
        );
        let (panics, _) = Registry::family::<Counter>(PANICS, "", &[], ());
        Self {
            requests,
            in_flight,
            latency,
            panics,
        }
    }

    /// Starts counting a request to `webhook` (in flight until the guard is finished or dropped).
    pub(crate) fn start(&self, webhook: &str) -> RequestGuard {
        let in_flight = self.in_flight.with_label_values(&[webhook]).ok();
        if let Some(gauge) = &in_flight {
            gauge.inc();
        }
        RequestGuard {
            metrics: self.clone(),
            webhook: webhook.to_owned(),
            in_flight,
            started: Instant::now(),
        }
    }

    /// Counts a panic in a handler.
    pub(crate) fn panicked(&self) {
        if let Ok(counter) = self.panics.with_label_values(&[]) {
            counter.inc();
        }
    }
}

/// One request in flight; [`RequestGuard::finish`] records its code and latency.
pub(crate) struct RequestGuard {
    metrics: WebhookMetrics,
    webhook: String,
    in_flight: Option<Gauge>,
    started: Instant,
}

impl RequestGuard {
    /// Records the request as answered with HTTP `code`.
    pub(crate) fn finish(self, code: u16) {
        let took: Duration = self.started.elapsed();
        if let Ok(latency) = self.metrics.latency.with_label_values(&[&self.webhook]) {
            latency.observe_duration(took);
        }
        let code = code.to_string();
        if let Ok(total) = self
            .metrics
            .requests
            .with_label_values(&[&self.webhook, &code])
        {
            total.inc();
        }
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        if let Some(gauge) = &self.in_flight {
            gauge.dec();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_requests_codes_in_flight_and_latency() {
        let registry = Registry::new();
        let metrics = WebhookMetrics::new(&registry);
        let guard = metrics.start("/validate-x");
        assert_eq!(
            registry.total(IN_FLIGHT, &[("webhook", "/validate-x")]),
            1.0
        );
        guard.finish(200);
        metrics.start("/validate-x").finish(400);
        metrics.start("/validate-x").finish(200);
        assert_eq!(
            registry.total(IN_FLIGHT, &[("webhook", "/validate-x")]),
            0.0
        );
        assert_eq!(
            registry.total(
                REQUESTS_TOTAL,
                &[("webhook", "/validate-x"), ("code", "200")]
            ),
            2.0
        );
        assert_eq!(
            registry.total(
                REQUESTS_TOTAL,
                &[("webhook", "/validate-x"), ("code", "400")]
            ),
            1.0
        );
        let text = registry.encode_text();
        assert!(
            text.contains(
                "controller_runtime_webhook_latency_seconds_count{webhook=\"/validate-x\"} 3"
            ),
            "{text}"
        );
        metrics.panicked();
        assert_eq!(registry.total(PANICS, &[]), 1.0);
        // A second server on the same registry still counts, without exporting twice.
        let second = WebhookMetrics::new(&registry);
        second.start("/validate-x").finish(200);
        assert_eq!(
            registry.total(
                REQUESTS_TOTAL,
                &[("webhook", "/validate-x"), ("code", "200")]
            ),
            2.0
        );
    }
}
