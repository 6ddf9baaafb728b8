//! Faults on purpose: the server misbehaves the way real control planes do, reproducibly.
//!
//! A [`FaultConfig`] (a seed and rules, from a YAML/JSON file or built in code) makes the
//! server delay requests, answer with upstream-shaped errors (409 Conflict, 429
//! TooManyRequests with `Retry-After`, 500 InternalError, 503 ServiceUnavailable), end watch
//! streams after N events or T, and answer `410 Expired` to watches resuming from a
//! resourceVersion. Rules match by verb, resource (and group), namespace and subresource and
//! fire always, by probability, on the Nth or on every Nth matching request; each rule draws
//! from its own SplitMix64 stream seeded from the configuration's seed, so a seed and a
//! request sequence inject the same faults every time.
//!
//! The running server's [`Faults`] handle changes the rules at run time and reports
//! [`FaultStats`]; `/metrics` serves `korral_apiserver_injected_faults_total`. Health
//! (`/healthz`, `/readyz`, `/livez`), `/version` and `/metrics` are never faulted. With no
//! rules a request pays one uncontended read lock.
//!
//! ```no_run
//! use std::time::Duration;
//! use korral_apiserver::{ApiServer, FaultConfig, FaultRule, ServerConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let faults = FaultConfig::latency(Duration::from_millis(2))
//!     .with_seed(42)
//!     .with_rule(FaultRule::error(429).retry_after(Duration::from_secs(1)).resources(["configmaps"]).every(3));
//! let server = ApiServer::start(ServerConfig { faults, ..ServerConfig::in_memory() }).await?;
//! server.faults().clear();
//! # Ok(())
//! # }
//! ```

mod config;
mod duration;
mod plan;
mod rng;
mod stats;
mod watch;

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};

use http::{Method, Response, StatusCode, Uri};

pub use config::{
    ERROR_CODES, FaultCloseWatch, FaultConfig, FaultConfigError, FaultError, FaultLatency,
    FaultMatch, FaultRule, VERBS,
};
pub use duration::FaultDuration;
pub use stats::{FaultStats, RuleStats};

use crate::error::{ApiError, Cause, Details};
use crate::http::Body;
use plan::{Action, Close, Plan, Request, Rule};

/// The fault injector of a running server: a cheap, cloneable handle.
#[derive(Clone, Default)]
pub struct Faults {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The active rules; `None` when there are none (the fast path).
    plan: RwLock<Option<Arc<Plan>>>,
    /// Counts of replaced configurations, so `/metrics` counters never go down.
    retired: Mutex<stats::Totals>,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Faults")
            .field("rules", &self.current().map_or(0, |p| p.rules.len()))
            .finish()
    }
}

/// What the HTTP front does with a request after [`Faults::before`].
pub(crate) enum Before {
    /// Handle it; then pass the response through [`Armed::after`].
    Proceed(Armed),
    /// Answer with this instead (an injected error or expired watch).
    Respond(Response<Body>),
}

/// Faults to apply to the response of a request being handled.
#[derive(Default)]
pub(crate) struct Armed {
    close: Option<Close>,
}

impl Armed {
    /// Ends a watch stream early when a close rule fired.
    pub(crate) fn after(self, response: Response<Body>) -> Response<Body> {
        match self.close {
            Some(close) if response.status() == StatusCode::OK => {
                response.map(|body| watch::close_early(body, close))
            }
            _ => response,
        }
    }
}

/// Paths that are never faulted.
fn exempt(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    matches!(
        path,
        "/healthz" | "/livez" | "/readyz" | "/version" | "/metrics"
    ) || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}

fn describe(method: &Method, uri: &Uri) -> Request {
    let query: Vec<(String, String)> = uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let attrs = crate::auth::attributes::from_request(
        crate::auth::UserInfo::default(),
        method,
        uri.path(),
        &query,
    );
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let resume_from = match param("resourceVersion") {
        Some(rv) if attrs.verb == "watch" && !matches!(rv, "" | "0") => {
            (param("sendInitialEvents") != Some("true")).then(|| rv.to_string())
        }
        _ => None,
    };
    Request {
        resource_request: attrs.resource_request,
        verb: attrs.verb,
        group: attrs.api_group,
        resource: attrs.resource,
        subresource: attrs.subresource,
        namespace: attrs.namespace,
        name: attrs.name,
        resume_from,
    }
}

/// The injected error, shaped as upstream's.
fn error_for(rule: &Rule, req: &Request, code: u16) -> ApiError {
    let custom = rule.spec.error.as_ref().and_then(|e| e.message.clone());
    // 429 says 1 s unless the rule says otherwise; a 503 only when it does.
    let retry_after = rule.spec.error.as_ref().and_then(|e| e.retry_after_seconds);
    let mut err = match code {
        409 => match custom {
            Some(why) => ApiError::conflict_because(&req.group, &req.resource, &req.name, &why),
            None => ApiError::conflict(&req.group, &req.resource, &req.name),
        },
        429 => ApiError::too_many_requests(
            custom.unwrap_or_else(|| "Too many requests, please try again later.".into()),
            1,
        ),
        503 => ApiError::unavailable(
            custom.unwrap_or_else(|| "the server is currently unable to handle the request".into()),
        ),
        _ => {
            let why = custom.unwrap_or_else(|| "injected fault".into());
            let mut err = ApiError::internal(why.clone());
            err.details = Some(Box::new(Details {
                causes: vec![Cause::new("", "", why)],
                ..Details::default()
            }));
            err
        }
    };
    if let Some(secs) = retry_after {
        let details = err.details.get_or_insert_with(Box::default);
        details.retry_after_seconds = Some(secs);
    }
    err
}

fn answer(rule: &Rule, req: &Request, revision: impl FnOnce() -> u64) -> Response<Body> {
    match rule.action {
        Action::Error { code } => {
            // The Retry-After header follows `details.retryAfterSeconds`.
            crate::http::error_response(&error_for(rule, req, code))
        }
        _ => {
            // As upstream's watch cache: the stream starts, then one ERROR event with 410.
            let from = req.resume_from.as_deref().unwrap_or_default();
            let current = revision();
            let shown = from
                .parse::<u64>()
                .map_or(current, |rv| current.max(rv.saturating_add(1)));
            let status = ApiError::expired(format!("too old resource version: {from} ({shown})"))
                .to_status();
            let mut line =
                serde_json::to_vec(&serde_json::json!({"type": "ERROR", "object": status}))
                    .unwrap_or_default();
            line.push(b'\n');
            crate::http::bytes_response(StatusCode::OK, line, "application/json")
        }
    }
}

impl Faults {
    /// An injector with no rules.
    pub fn new() -> Self {
        Self::default()
    }

    fn current(&self) -> Option<Arc<Plan>> {
        self.inner
            .plan
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the rules (after validating them; the error names the offending field).
    /// Counters restart for the new rules; `/metrics` keeps the totals.
    pub fn set(&self, config: FaultConfig) -> Result<(), FaultConfigError> {
        config.validate()?;
        let plan = (!config.is_empty()).then(|| Arc::new(Plan::compile(&config)));
        let old = std::mem::replace(
            &mut *self.inner.plan.write().unwrap_or_else(|e| e.into_inner()),
            plan,
        );
        if let Some(old) = old {
            let mut retired = self.inner.retired.lock().unwrap_or_else(|e| e.into_inner());
            for rule in &old.rules {
                retired.add(rule);
            }
        }
        tracing::info!(rules = config.rules.len(), "fault injection rules set");
        Ok(())
    }

    /// Removes every rule: nothing is injected any more.
    pub fn clear(&self) {
        // An empty configuration is always valid.
        let _ = self.set(FaultConfig::default());
    }

    /// The active configuration.
    pub fn config(&self) -> FaultConfig {
        match self.current() {
            None => FaultConfig::default(),
            Some(plan) => FaultConfig {
                seed: plan.seed,
                rules: plan.rules.iter().map(|r| r.spec.clone()).collect(),
            },
        }
    }

    /// What the active rules matched and injected so far.
    pub fn stats(&self) -> FaultStats {
        let Some(plan) = self.current() else {
            return FaultStats::default();
        };
        FaultStats {
            rules: plan
                .rules
                .iter()
                .map(|r| RuleStats {
                    rule: r.label.clone(),
                    action: r.action.label(),
                    code: r.action.code(),
                    matched: r.matched.load(Ordering::Relaxed),
                    injected: r.injected.load(Ordering::Relaxed),
                })
                .collect(),
        }
    }

    /// `korral_apiserver_injected_faults_total` and `korral_apiserver_fault_matched_requests_total`
    /// in Prometheus text format (totals since start, across [`Faults::set`]).
    pub fn metrics_text(&self) -> String {
        let mut totals = self
            .inner
            .retired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(plan) = self.current() {
            for rule in &plan.rules {
                totals.add(rule);
            }
        }
        totals.render()
    }

    /// Applies the rules to a request about to be handled: sleeps the injected latency, and
    /// says whether to answer instead (an error, an expired watch) or how to end its watch.
    /// `revision` gives the store's current resourceVersion (for 410 messages).
    pub(crate) async fn before(
        &self,
        method: &Method,
        uri: &Uri,
        revision: impl FnOnce() -> u64,
    ) -> Before {
        let Some(plan) = self.current() else {
            return Before::Proceed(Armed::default());
        };
        if exempt(uri.path()) {
            return Before::Proceed(Armed::default());
        }
        let req = describe(method, uri);
        let decision = plan.decide(&req);
        if !decision.delay.is_zero() {
            tracing::debug!(delay = ?decision.delay, verb = %req.verb, resource = %req.resource, "fault injection: latency");
            tokio::time::sleep(decision.delay).await;
        }
        if let Some(rule) = decision.answer {
            rule.injected.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(rule = %rule.label, action = rule.action.label(), verb = %req.verb, resource = %req.resource, "fault injection: answered");
            return Before::Respond(answer(&rule, &req, revision));
        }
        Before::Proceed(Armed {
            close: decision.close,
        })
    }

    /// The `/metrics` response.
    pub(crate) fn metrics_response(&self) -> Response<Body> {
        crate::http::bytes_response(
            StatusCode::OK,
            self.metrics_text().into_bytes(),
            "text/plain; version=0.0.4; charset=utf-8",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn describe_get(uri: &str) -> Request {
        describe(&Method::GET, &uri.parse::<Uri>().expect("uri"))
    }

    #[test]
    fn requests_are_described_as_the_authorizer_sees_them() {
        let r = describe_get("/apis/apps/v1/namespaces/team/deployments/web/status");
        assert_eq!(
            (
                r.verb.as_str(),
                r.group.as_str(),
                r.resource.as_str(),
                r.subresource.as_str(),
                r.namespace.as_str(),
                r.name.as_str()
            ),
            ("get", "apps", "deployments", "status", "team", "web")
        );
        let r = describe_get("/api/v1/pods?watch=true&resourceVersion=17");
        assert_eq!(
            (r.verb.as_str(), r.resume_from.as_deref()),
            ("watch", Some("17"))
        );
        for fresh in [
            "/api/v1/pods?watch=true",
            "/api/v1/pods?watch=true&resourceVersion=0",
            "/api/v1/pods?watch=true&resourceVersion=17&sendInitialEvents=true",
            "/api/v1/pods?resourceVersion=17",
        ] {
            assert_eq!(describe_get(fresh).resume_from, None, "{fresh}");
        }
        assert!(!describe_get("/apis").resource_request);
    }

    #[test]
    fn health_version_and_metrics_are_exempt() {
        for path in [
            "/healthz",
            "/readyz/",
            "/livez/ping",
            "/version",
            "/metrics",
        ] {
            assert!(exempt(path), "{path}");
        }
        for path in ["/api", "/apis/apps/v1", "/openapi/v2", "/"] {
            assert!(!exempt(path), "{path}");
        }
    }

    #[tokio::test]
    async fn no_rules_proceed_untouched_and_set_replaces_atomically() {
        let faults = Faults::new();
        let uri: Uri = "/api/v1/namespaces/a/configmaps".parse().expect("uri");
        assert!(matches!(
            faults.before(&Method::GET, &uri, || 0).await,
            Before::Proceed(Armed { close: None })
        ));
        faults
            .set(FaultConfig::new().with_rule(FaultRule::error(503).named("down")))
            .expect("set");
        let Before::Respond(response) = faults.before(&Method::GET, &uri, || 0).await else {
            panic!("answered");
        };
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(faults.stats().injected("down"), 1);
        assert!(
            faults
                .set(FaultConfig::new().with_rule(FaultRule::error(200)))
                .is_err()
        );
        assert_eq!(
            faults.config().rules.len(),
            1,
            "refused: the old rules stay"
        );
        faults.clear();
        assert_eq!(faults.stats(), FaultStats::default());
        assert!(
            faults
                .metrics_text()
                .contains("rule=\"down\",action=\"error\",code=\"503\"} 1")
        );
    }
}
