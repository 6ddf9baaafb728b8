//! Ending watch streams early and cleanly: a response body that stops after N events or T.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::time::Sleep;

use super::plan::Close;
use crate::http::Body;

/// A watch body that ends (a clean end of stream) once its event budget or time is spent.
struct Closing {
    inner: Body,
    events_left: Option<(u64, Arc<AtomicU64>)>,
    deadline: Option<(Pin<Box<Sleep>>, Arc<AtomicU64>)>,
    done: bool,
}

/// Bookmarks are not events the client acts on; they do not count.
fn is_bookmark(data: &Bytes) -> bool {
    data.starts_with(b"{\"type\":\"BOOKMARK\"")
}

impl http_body::Body for Closing {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        if let Some((n, counter)) = &this.events_left
            && *n == 0
        {
            counter.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("fault injection: watch closed after its events");
            this.done = true;
            return Poll::Ready(None);
        }
        if let Some((sleep, counter)) = &mut this.deadline
            && sleep.as_mut().poll(cx).is_ready()
        {
            counter.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("fault injection: watch closed after its time");
            this.done = true;
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some((n, _))) = (frame.data_ref(), &mut this.events_left)
                    && !is_bookmark(data)
                {
                    *n = n.saturating_sub(1);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(never))) => match never {},
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// Wraps a watch response body so that it ends as `close` says.
pub fn close_early(body: Body, close: Close) -> Body {
    Closing {
        inner: body,
        events_left: close.after_events,
        deadline: close
            .after
            .map(|(d, counter)| (Box::pin(tokio::time::sleep(d)), counter)),
        done: false,
    }
    .boxed()
}
