//! Bounds on concurrent work, as upstream's max-in-flight filter: at most so many read-only and
//! so many mutating requests at once (excess answered `429 TooManyRequests` with
//! `Retry-After: 1`). Long-running requests (watches) are not counted there; they are limited
//! per client instead, and hold their slot for as long as their response streams.
//!
//! As upstream's, the limit never refuses a user in `system:masters` (the server's admin, a
//! loopback client): when the budget is spent, such a request is served without a slot
//! (while there is room it takes one, like anyone else). Upstream has no per-client watch
//! limit (long-running requests skip its filter entirely), so that limit, Korral's own, applies
//! to everyone alike.
//!
//! The counters run ahead of authentication, so a flood within budget costs no more than a
//! counter; only a request over the budget is authenticated (and its impersonation applied,
//! as upstream's filter sees the impersonated user) to learn whether it is privileged. A
//! watch client is identified by the credentials it presents (the `Authorization` header and
//! the impersonation headers, hashed).

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, header};
use http_body::Frame;
use http_body_util::BodyExt;

use crate::error::ApiError;
use crate::http::Body;

/// Upstream's default `--max-requests-inflight`.
pub const DEFAULT_MAX_READONLY: usize = 400;
/// Upstream's default `--max-mutating-requests-inflight`.
pub const DEFAULT_MAX_MUTATING: usize = 200;
/// Default for the open watches one client may hold.
pub const DEFAULT_MAX_WATCHES_PER_CLIENT: usize = 1000;

/// The limits; `0` disables one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Read-only requests (get, list) in flight.
    pub readonly: usize,
    /// Mutating requests (create, update, patch, delete) in flight.
    pub mutating: usize,
    /// Open watches per client.
    pub watches_per_client: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            readonly: DEFAULT_MAX_READONLY,
            mutating: DEFAULT_MAX_MUTATING,
            watches_per_client: DEFAULT_MAX_WATCHES_PER_CLIENT,
        }
    }
}

/// The counters of one server.
#[derive(Debug, Default)]
pub struct InFlight {
    limits: Limits,
    readonly: Arc<AtomicUsize>,
    mutating: Arc<AtomicUsize>,
    watches: Arc<Mutex<HashMap<u64, usize>>>,
}

/// What a request holds while it runs; dropping it frees the slot.
enum Slot {
    Counter(Arc<AtomicUsize>),
    Watch(Arc<Mutex<HashMap<u64, usize>>>, u64),
}

impl Drop for Slot {
    fn drop(&mut self) {
        match self {
            Slot::Counter(c) => {
                c.fetch_sub(1, Ordering::AcqRel);
            }
            Slot::Watch(map, key) => {
                let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(n) = map.get_mut(key) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        map.remove(key);
                    }
                }
            }
        }
    }
}

/// Upstream's 429: `Too many requests, please try again later.`, retry after a second.
pub fn too_many_requests() -> ApiError {
    too_many_requests_after(1)
}

/// Upstream's 429, retry after `seconds` (API priority and fairness varies it per level).
pub fn too_many_requests_after(seconds: u64) -> ApiError {
    ApiError::too_many_requests("Too many requests, please try again later.", seconds)
}

/// 429 for a client over its watch limit.
fn too_many_watches(limit: usize) -> ApiError {
    ApiError::too_many_requests(
        format!(
            "Too many watches: this client already has {limit} open, the limit per client; close one and try again later."
        ),
        1,
    )
}

/// Whether the user a request acts as (after impersonation, as upstream's filter sees it) is
/// in `system:masters`. A request that does not authenticate, or may not impersonate, is not.
pub fn is_privileged<B>(auth: &crate::auth::Auth, req: &Request<B>) -> bool {
    let headers = req.headers();
    auth.authenticate(headers, req.extensions().get())
        .and_then(|user| crate::auth::impersonation::impersonate(auth, user, headers))
        .is_ok_and(|user| user.in_group(crate::auth::user::MASTERS_GROUP))
}

/// Whether a request is a watch (`?watch=true|1` or a legacy `/watch/` path).
pub(crate) fn is_watch<B>(req: &Request<B>) -> bool {
    is_watch_uri(req.uri())
}

/// Whether the request `uri` names is a watch (`?watch=true|1` or a legacy `/watch/` path).
pub(crate) fn is_watch_uri(uri: &http::Uri) -> bool {
    let path = uri.path();
    if path.starts_with("/api/v1/watch/") || path.split('/').nth(4) == Some("watch") {
        return true;
    }
    uri.query().is_some_and(|q| {
        form_urlencoded::parse(q.as_bytes())
            .any(|(k, v)| k == "watch" && matches!(&*v, "1" | "t" | "T" | "TRUE" | "true" | "True"))
    })
}

/// Health probes are never refused.
fn is_exempt(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    ["/healthz", "/livez", "/readyz"]
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
}

fn client_key(headers: &http::HeaderMap) -> u64 {
    let mut hasher = DefaultHasher::new();
    for name in [
        header::AUTHORIZATION.as_str(),
        "impersonate-user",
        "impersonate-uid",
    ] {
        headers
            .get(name)
            .map(HeaderValue::as_bytes)
            .hash(&mut hasher);
    }
    hasher.finish()
}

fn take(counter: &Arc<AtomicUsize>, limit: usize) -> Option<Slot> {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < limit).then_some(n + 1)
        })
        .ok()
        .map(|_| Slot::Counter(counter.clone()))
}

impl InFlight {
    /// Counters with these limits.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// The slot `req` takes, `None` when it takes none (probes, unlimited kinds, a privileged
    /// request over the budget); 429 when over the limits. `privileged` is asked only for a
    /// request over the in-flight budget.
    fn admit<B>(
        &self,
        req: &Request<B>,
        privileged: impl FnOnce(&Request<B>) -> bool,
    ) -> Result<Option<Slot>, ApiError> {
        if is_exempt(req.uri().path()) {
            return Ok(None);
        }
        if is_watch(req) {
            let limit = self.limits.watches_per_client;
            if limit == 0 {
                return Ok(None);
            }
            let key = client_key(req.headers());
            let mut map = self.watches.lock().unwrap_or_else(|p| p.into_inner());
            let open = map.entry(key).or_insert(0);
            if *open >= limit {
                return Err(too_many_watches(limit));
            }
            *open += 1;
            return Ok(Some(Slot::Watch(self.watches.clone(), key)));
        }
        let readonly = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
        let (counter, limit) = if readonly {
            (&self.readonly, self.limits.readonly)
        } else {
            (&self.mutating, self.limits.mutating)
        };
        if limit == 0 {
            // No limit (or priority and fairness limits instead): nothing to hold.
            return Ok(None);
        }
        match take(counter, limit) {
            Some(slot) => Ok(Some(slot)),
            None if privileged(req) => Ok(None),
            None => Err(too_many_requests()),
        }
    }

    /// Serves `req` with `handler` within the limits: refused with a 429 `Status` (and
    /// `Retry-After: 1`) when over them, unless `privileged` says the request's user is in
    /// `system:masters` (asked only then). The slot is held until the response body ends.
    pub async fn serve<B, P, F, Fut>(
        &self,
        req: Request<B>,
        privileged: P,
        handler: F,
    ) -> Response<Body>
    where
        P: FnOnce(&Request<B>) -> bool,
        F: FnOnce(Request<B>) -> Fut,
        Fut: Future<Output = Response<Body>>,
    {
        let slot = match self.admit(&req, privileged) {
            Ok(slot) => slot,
            Err(err) => {
                tracing::debug!(path = %req.uri().path(), "refused: too many requests");
                return crate::http::error_response(&err);
            }
        };
        let response = handler(req).await;
        match slot {
            None => response,
            Some(slot) => hold_until_end(response, slot),
        }
    }
}

/// `response` holding `guard` (a request's slot or seat) until its body ends or is dropped.
pub(crate) fn hold_until_end<G: Send + Sync + Unpin + 'static>(
    response: Response<Body>,
    guard: G,
) -> Response<Body> {
    response.map(|body| {
        SlotBody {
            inner: body,
            _slot: guard,
        }
        .boxed()
    })
}

/// A response body holding its request's slot until it ends or is dropped.
struct SlotBody<G> {
    inner: Body,
    _slot: G,
}

impl<G: Unpin> http_body::Body for SlotBody<G> {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nobody(_: &Request<()>) -> bool {
        false
    }

    fn req(method: Method, uri: &str) -> Request<()> {
        let mut r = Request::new(());
        *r.method_mut() = method;
        *r.uri_mut() = uri.parse().unwrap_or_default();
        r
    }

    #[test]
    fn counts_read_only_and_mutating_apart_and_frees_on_drop() {
        let inflight = InFlight::new(Limits {
            readonly: 1,
            mutating: 1,
            watches_per_client: 1,
        });
        let get = req(Method::GET, "/api/v1/pods");
        let post = req(Method::POST, "/api/v1/namespaces/default/configmaps");
        let held = inflight.admit(&get, nobody).ok().flatten();
        assert!(held.is_some());
        assert_eq!(
            inflight
                .admit(&get, nobody)
                .err()
                .map(|e| (e.code, e.message)),
            Some((429, "Too many requests, please try again later.".into()))
        );
        let write = inflight.admit(&post, nobody).ok().flatten();
        assert!(write.is_some(), "mutating requests have their own budget");
        // Watches and probes are not counted against either.
        assert!(
            inflight
                .admit(&req(Method::GET, "/api/v1/pods?watch=true"), nobody)
                .is_ok()
        );
        assert!(inflight.admit(&req(Method::GET, "/readyz"), nobody).is_ok());
        drop(held);
        assert!(inflight.admit(&get, nobody).is_ok());
    }

    #[test]
    fn watches_are_limited_per_client() {
        let inflight = InFlight::new(Limits {
            readonly: 0,
            mutating: 0,
            watches_per_client: 1,
        });
        let mut alice = req(Method::GET, "/api/v1/pods?watch=1");
        alice
            .headers_mut()
            .insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer a"));
        let mut bob = req(Method::GET, "/api/v1/watch/pods");
        bob.headers_mut()
            .insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer b"));
        let first = inflight.admit(&alice, nobody).ok().flatten();
        assert!(first.is_some());
        assert_eq!(
            inflight.admit(&alice, nobody).err().map(|e| e.code),
            Some(429)
        );
        assert!(inflight.admit(&bob, nobody).ok().flatten().is_some());
        drop(first);
        assert!(inflight.admit(&alice, nobody).ok().flatten().is_some());
    }

    #[test]
    fn masters_are_served_over_the_budget_without_a_slot() {
        let inflight = InFlight::new(Limits {
            readonly: 1,
            mutating: 1,
            watches_per_client: 1,
        });
        let get = req(Method::GET, "/api/v1/pods");
        let mut asked = 0;
        let held = inflight.admit(&get, |_| {
            asked += 1;
            true
        });
        assert!(
            held.as_ref().is_ok_and(Option::is_some),
            "within budget a slot is taken"
        );
        assert_eq!(asked, 0, "privilege is asked only over the budget");
        let over = inflight.admit(&get, |_| true);
        assert!(
            over.as_ref().is_ok_and(Option::is_none),
            "served without a slot"
        );
        assert_eq!(
            inflight.admit(&get, nobody).err().map(|e| e.code),
            Some(429)
        );
        drop(over);
        assert_eq!(
            inflight.admit(&get, nobody).err().map(|e| e.code),
            Some(429),
            "a privileged request over the budget frees nothing when it ends"
        );
        drop(held);
        assert!(inflight.admit(&get, nobody).is_ok_and(|s| s.is_some()));
        // The per-client watch limit (Korral's own; upstream has none) applies to everyone.
        let watch = req(Method::GET, "/api/v1/pods?watch=1");
        let first = inflight.admit(&watch, |_| true).ok().flatten();
        assert!(first.is_some());
        assert_eq!(
            inflight.admit(&watch, |_| true).err().map(|e| e.code),
            Some(429)
        );
    }
}
