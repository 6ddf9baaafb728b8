//! Counting the API requests a controller's client sends, by kind of request.
//!
//! A [`CountLayer`] wraps the client's HTTP service (`kube::client::ClientBuilder::with_layer`),
//! so both implementations are counted the same way, below their own code: every list, get,
//! watch and write their caches and reconcilers send.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tower::{Layer, Service};

/// Requests sent so far, by kind.
#[derive(Clone, Debug, Default)]
pub struct RequestCounter {
    reads: Arc<AtomicU64>,
    watches: Arc<AtomicU64>,
    writes: Arc<AtomicU64>,
}

/// A snapshot of a [`RequestCounter`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// GETs other than watches (gets and lists).
    pub reads: u64,
    /// Watch requests (each one long-running stream).
    pub watches: u64,
    /// POST, PUT, PATCH and DELETE.
    pub writes: u64,
}

impl RequestCounts {
    /// Every request.
    pub fn total(&self) -> u64 {
        self.reads + self.watches + self.writes
    }
}

impl RequestCounter {
    /// The counts so far.
    pub fn snapshot(&self) -> RequestCounts {
        RequestCounts {
            reads: self.reads.load(Ordering::Relaxed),
            watches: self.watches.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
        }
    }

    fn record(&self, method: &http::Method, query: Option<&str>) {
        let counter = if method == http::Method::GET {
            let watch = query.is_some_and(|q| {
                q.split('&')
                    .any(|kv| kv == "watch=true" || kv == "watch=1" || kv == "watch")
            });
            if watch { &self.watches } else { &self.reads }
        } else {
            &self.writes
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The layer that counts into this counter.
    pub fn layer(&self) -> CountLayer {
        CountLayer(self.clone())
    }
}

/// A tower layer counting every request into a [`RequestCounter`].
#[derive(Clone, Debug)]
pub struct CountLayer(RequestCounter);

impl<S> Layer<S> for CountLayer {
    type Service = CountService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CountService {
            inner,
            counter: self.0.clone(),
        }
    }
}

/// The service of a [`CountLayer`].
#[derive(Clone, Debug)]
pub struct CountService<S> {
    inner: S,
    counter: RequestCounter,
}

impl<S, B> Service<http::Request<B>> for CountService<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        self.counter.record(req.method(), req.uri().query());
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_kind() {
        let c = RequestCounter::default();
        c.record(&http::Method::GET, Some("limit=500"));
        c.record(&http::Method::GET, None);
        c.record(&http::Method::GET, Some("resourceVersion=5&watch=true"));
        c.record(&http::Method::PATCH, None);
        c.record(&http::Method::POST, None);
        assert_eq!(
            c.snapshot(),
            RequestCounts {
                reads: 2,
                watches: 1,
                writes: 2
            }
        );
        assert_eq!(c.snapshot().total(), 5);
    }
}
