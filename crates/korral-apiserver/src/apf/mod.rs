//! API Priority and Fairness, as kube-apiserver enforces it (`--enable-priority-and-fairness`,
//! on by default, in place of the max-in-flight counters): every request is classified by the
//! first FlowSchema that matches it and limited by that schema's PriorityLevelConfiguration —
//! an exempt level never limits; a limited one has `ceil(server limit × shares / all shares)`
//! seats and, when they are taken, refuses (`Reject`) or queues the request fairly among its
//! flows (`Queue`) for at most the wait limit. A refused request gets upstream's 429 `Status`
//! with `Retry-After`. Every classified response carries `X-Kubernetes-PF-FlowSchema-UID` and
//! `X-Kubernetes-PF-PriorityLevel-UID`.
//!
//! The classification is a view of the stored objects, rebuilt by a task that watches the
//! store whenever one of them changes, so a request pays a read lock and a scan of the
//! FlowSchemas. A watch holds its seat only while it is being set up (until its response
//! starts); other long-running requests (exec, attach, port-forward, proxy, logs) are not
//! classified, as upstream. Requests that do not authenticate pass through unclassified to
//! be refused by the handler (upstream authenticates before this filter).
//!
//! Levels lend and borrow seats as upstream's (`lendablePercent`, `borrowingLimitPercent`):
//! every 10 s each level's current limit is set from its recent seat demand
//! ([`borrowing`]). Simplification: one seat per request (see [`queueset`]). The wait limit is the configured one, shortened to a
//! quarter of a request's shorter `?timeout=` as upstream's.

mod borrowing;
mod config;
mod matching;
mod metrics;
mod queueset;
mod retry_after;
mod shuffle;
mod spec;

use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use tokio::sync::{broadcast, watch};

use crate::auth::{Attributes, Auth};
use crate::http::Body;
use crate::storage::Storage;
use queueset::Admission;

/// The response header naming the matched FlowSchema's uid.
const FLOW_SCHEMA_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-flowschema-uid");
/// The response header naming the matched priority level's uid.
const PRIORITY_LEVEL_UID: HeaderName = HeaderName::from_static("x-kubernetes-pf-prioritylevel-uid");

/// Upstream's default wait limit: a quarter of its 60 s request timeout.
pub const DEFAULT_REQUEST_WAIT_LIMIT: Duration =
    Duration::from_secs(crate::deadline::REQUEST_TIMEOUT.as_secs() / 4);

/// How often upstream adjusts the levels' seat limits to their demand.
pub const BORROWING_PERIOD: Duration = borrowing::ADJUSTMENT_PERIOD;

/// How the server limits requests.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The server's concurrency limit, shared among the priority levels (upstream:
    /// `--max-requests-inflight` + `--max-mutating-requests-inflight`); `0`: unlimited.
    pub(crate) server: usize,
    /// How long a request may wait in a queue.
    pub(crate) wait: Duration,
    /// How often the levels' current limits are adjusted to their demand.
    pub(crate) borrowing_period: Duration,
}

/// What the view-rebuilding task and the requests share.
#[derive(Debug)]
struct Shared {
    view: RwLock<Arc<config::View>>,
    builder: Mutex<config::Builder>,
    metrics: metrics::Registry,
    limits: Limits,
}

impl Shared {
    /// Rebuilds the view from the store's current objects; returns their revision.
    fn rebuild(&self, storage: &dyn Storage) -> u64 {
        let snapshot = storage.snapshot();
        let view = {
            let mut builder = self.builder.lock().unwrap_or_else(|p| p.into_inner());
            builder.build(&snapshot, self.limits.server, &self.metrics)
        };
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(view);
        snapshot.revision
    }
}

/// The filter of one server.
#[derive(Debug)]
pub(crate) struct FlowControl {
    shared: Arc<Shared>,
    watcher: tokio::task::JoinHandle<()>,
    adjuster: tokio::task::JoinHandle<()>,
}

impl Drop for FlowControl {
    fn drop(&mut self) {
        self.watcher.abort();
        self.adjuster.abort();
    }
}

/// Adjusts the levels' current limits to their demand every `period` until `shutdown`.
async fn adjust_borrowing(
    shared: Arc<Shared>,
    period: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = shutdown.changed() => return,
        }
        let builder = shared.builder.lock().unwrap_or_else(|p| p.into_inner());
        builder.adjust_borrowing(&shared.metrics);
    }
}

/// Keeps `shared`'s view (built at `revision`) up to date with the store until `shutdown`.
async fn follow(
    shared: Arc<Shared>,
    storage: Arc<dyn Storage>,
    mut revision: u64,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let feed = match storage.watch(revision) {
            Ok(feed) => feed,
            Err(e) => {
                tracing::debug!(error = %e, "flow control: resubscribing to the store");
                revision = shared.rebuild(storage.as_ref());
                tokio::task::yield_now().await;
                continue;
            }
        };
        if feed.backlog.iter().any(|e| config::is_config_key(&e.key)) {
            shared.rebuild(storage.as_ref());
        }
        let mut live = feed.live;
        loop {
            let event = tokio::select! {
                event = live.recv() => event,
                _ = shutdown.changed() => return,
            };
            match event {
                Ok(event) => {
                    if config::is_config_key(&event.key) {
                        shared.rebuild(storage.as_ref());
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    revision = shared.rebuild(storage.as_ref());
                    break;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

/// The user and request attributes upstream's filter sees: after authentication and
/// impersonation; `None` when they fail.
fn describe<B>(auth: &Auth, req: &Request<B>) -> Option<Attributes> {
    let headers = req.headers();
    let user = auth.authenticate(headers, req.extensions().get()).ok()?;
    let user = crate::auth::impersonation::impersonate(auth, user, headers).ok()?;
    let query: Vec<(String, String)> = req
        .uri()
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    Some(crate::auth::attributes::from_request(
        user,
        req.method(),
        req.uri().path(),
        &query,
    ))
}

/// Whether upstream serves `request` as long-running outside the filter.
fn long_running(request: &Attributes) -> bool {
    request.verb == "proxy"
        || (request.resource_request
            && crate::deadline::LONG_RUNNING_SUBRESOURCES.contains(&request.subresource.as_str()))
}

impl FlowControl {
    /// The filter for `storage`'s objects under `limits`; its view follows the store until
    /// `shutdown`.
    pub(crate) fn start(
        storage: Arc<dyn Storage>,
        limits: Limits,
        shutdown: watch::Receiver<bool>,
    ) -> Self {
        let shared = Arc::new(Shared {
            view: RwLock::default(),
            builder: Mutex::default(),
            metrics: metrics::Registry::default(),
            limits,
        });
        let revision = shared.rebuild(storage.as_ref());
        let period = limits.borrowing_period.max(Duration::from_millis(1));
        let adjuster = tokio::spawn(adjust_borrowing(shared.clone(), period, shutdown.clone()));
        let watcher = tokio::spawn(follow(shared.clone(), storage, revision, shutdown));
        Self {
            shared,
            watcher,
            adjuster,
        }
    }

    /// Serves `req` with `handler` under the priority level it is classified into: refused
    /// with a 429 `Status` when its level is full (or its queue wait runs out), else served
    /// holding a seat until its response body ends (a watch: until its response starts).
    pub(crate) async fn serve<B, F, Fut>(
        &self,
        auth: &Auth,
        req: Request<B>,
        handler: F,
    ) -> Response<Body>
    where
        F: FnOnce(Request<B>) -> Fut,
        Fut: Future<Output = Response<Body>>,
    {
        let metrics = req.method() == Method::GET && req.uri().path() == "/metrics";
        let Some(request) = describe(auth, &req) else {
            return handler(req).await;
        };
        let watch = request.verb == "watch" || crate::inflight::is_watch(&req);
        // Upstream's wait limit: a quarter of the request's timeout.
        let wait = match req.extensions().get::<crate::deadline::RequestTimeout>() {
            Some(timeout) if !watch => self.shared.limits.wait.min(timeout.0 / 4),
            _ => self.shared.limits.wait,
        };
        let skipped = !watch && long_running(&request);
        let classified = (!skipped).then(|| {
            let view = self
                .shared
                .view
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let schema = view.classify(&request)?;
            let headers = (schema.uid.clone(), schema.level_uid.clone());
            let hash = if schema.hashed && !schema.level.is_exempt() {
                shuffle::flow_hash(&schema.name, schema.distinguisher(&request))
            } else {
                0
            };
            let admission = schema.level.start(hash, &schema.flow);
            Some((headers, (admission, schema.level.clone())))
        });
        // The handler takes the attributes from here rather than authenticating again.
        let mut req = req;
        req.extensions_mut().insert(crate::auth::Described(request));
        let Some((headers, (admission, level))) = classified.flatten() else {
            if !skipped {
                tracing::warn!(path = %req.uri().path(), "no FlowSchema matched");
            }
            return handler(req).await;
        };
        let seat = match admission {
            Admission::Run(seat) => Ok(seat),
            Admission::Wait(waiting) => waiting.wait(wait).await,
            Admission::Reject(reason) => Err(reason),
        };
        let seat = match seat {
            Ok(seat) => seat,
            Err(reason) => {
                tracing::debug!(path = %req.uri().path(), reason = reason.label(), "refused by flow control");
                let retry_after = level.record_drop();
                let mut response = crate::http::error_response(
                    &crate::inflight::too_many_requests_after(retry_after),
                );
                set_headers(&mut response, headers);
                return response;
            }
        };
        drop(level);
        let mut response = handler(req).await;
        set_headers(&mut response, headers);
        if metrics && response.status() == StatusCode::OK {
            response = self.with_metrics(response).await;
        }
        if watch || !seat.holds_a_seat() {
            // A watch is initialized once its response has started; an exempt request is
            // counted as executing until then (as upstream, until its handler returns).
            drop(seat);
            response
        } else {
            crate::inflight::hold_until_end(response, seat)
        }
    }

    /// `response` (the `/metrics` text) with this filter's series appended.
    async fn with_metrics(&self, response: Response<Body>) -> Response<Body> {
        let (mut parts, body) = response.into_parts();
        let mut bytes = body
            .collect()
            .await
            .map(|c| c.to_bytes().to_vec())
            .unwrap_or_default();
        bytes.extend_from_slice(self.shared.metrics.render().as_bytes());
        parts.headers.remove(http::header::CONTENT_LENGTH);
        Response::from_parts(
            parts,
            crate::http::Body::new(http_body_util::Full::new(bytes.into())),
        )
    }
}

/// The classification headers.
fn set_headers(response: &mut Response<Body>, (schema, level): (HeaderValue, HeaderValue)) {
    let headers = response.headers_mut();
    headers.insert(FLOW_SCHEMA_UID, schema);
    headers.insert(PRIORITY_LEVEL_UID, level);
}
