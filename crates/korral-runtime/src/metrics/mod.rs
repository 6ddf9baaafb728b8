//! Prometheus metrics and health probes for controllers.
//!
//! This module has no dependency on an external metrics crate. It holds:
//!
//! - a small lock-light [`Registry`] of counters, gauges and histograms with label sets (one set
//!   of atomics per series; a map from label values to series, behind a lock that is only written
//!   when a new series appears), rendered in the Prometheus text exposition format 0.0.4;
//! - the controller-runtime series, with the names, labels, help texts and buckets that
//!   controller-runtime uses so that existing dashboards and alerts keep working, updated through a
//!   typed [`ControllerMetrics`] handle per controller and [`Registry::leader_status`];
//! - an HTTP server for `GET /metrics` ([`serve_metrics`]) and one for `/healthz` and `/readyz`
//!   ([`serve_probes`], with named checks in [`HealthChecks`]);
//! - secure serving of `/metrics` ([`serve_metrics_secure`]): HTTPS with a [`MetricsTls`]
//!   certificate (self-signed or from files) and the TokenReview + SubjectAccessReview filter
//!   [`MetricsAuth`], as controller-runtime's `filters.WithAuthenticationAndAuthorization`.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use korral_runtime::metrics::{self, HealthChecks, ReconcileOutcome, Registry};
//!
//! let registry = Registry::new();
//! let memcached = registry.controller("memcached");
//! memcached.set_max_concurrent(1);
//! memcached.reconcile_finished(ReconcileOutcome::Success, Duration::from_millis(12));
//!
//! // Users add their own metrics to the same registry.
//! let probes = registry.counter_vec("memcached_probes_total", "Probes sent.", &["outcome"])?;
//! probes.with_label_values(&["ok"])?.inc();
//!
//! let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
//! let server = metrics::serve_metrics("0.0.0.0:8080".parse()?, registry, stop_rx.clone()).await?;
//! let checks = HealthChecks::new();
//! checks.add_healthz("ping", metrics::ping)?;
//! let probes = metrics::serve_probes("0.0.0.0:8081".parse()?, checks, stop_rx).await?;
//! // ...
//! stop_tx.send(true)?;
//! server.wait().await;
//! probes.wait().await;
//! # Ok(())
//! # }
//! ```
#![warn(missing_docs)]

pub mod auth;
mod controller;
pub mod health;
mod registry;
mod server;
mod text;
pub mod tls;

pub use auth::{AuthDecision, MetricsAuth};
pub use controller::{
    ActiveWorkerGuard, ControllerMetrics, RECONCILE_TIME_BUCKETS, ReconcileOutcome,
    workqueue_buckets,
};
pub use health::{AddCheckError, CheckReport, HealthChecks, ping, serve_probes};
pub use registry::{
    Counter, CounterVec, DEFAULT_BUCKETS, Gauge, GaugeVec, Histogram, HistogramVec, MetricVec,
    RegisterError, Registry, SelectSeriesError, Series, exponential_buckets, linear_buckets,
};
pub use server::{
    CONTENT_TYPE_TEXT_004, ServeError, ServerHandle, Shutdown, serve_metrics, serve_metrics_secure,
};
// The HTTP(S) serving loop, shared with the webhook server.
pub(crate) use server::{Body, Handler, start as start_server, text_response};
pub use tls::{MetricsTls, MetricsTlsError};
