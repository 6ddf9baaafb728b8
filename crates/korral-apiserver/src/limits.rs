//! Limits on a request's head (URI and header fields), answered with a `Status` like every other
//! client error.
//!
//! Upstream (Go's `net/http` with `MaxHeaderBytes` 1 MiB) accepts a request line plus header
//! fields of up to 1 MiB. Korral enforces the same budget in the handler ([`check_head`]:
//! `431 RequestHeaderFieldsTooLarge`). hyper parses the head before the handler runs and has
//! its own limits: its read buffer ([`HYPER_MAX_BUF`], set just above ours so ours is hit
//! first), a header count ([`MAX_HEADER_FIELDS`]) and a URI length it cannot go beyond
//! ([`MAX_URI_BYTES`], the `http` crate's). When hyper refuses a head it answers a bodiless
//! 400/414/431 itself and closes the connection; [`StatusOnParseError`] wraps the connection's
//! I/O and replaces that answer by the same code with a `Status` body.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::{HeaderMap, Uri};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::ApiError;

/// The largest request line plus header fields accepted (1 MiB, upstream's `MaxHeaderBytes`).
pub const MAX_HEAD_BYTES: usize = 1024 * 1024;

/// hyper's read buffer: enough for [`MAX_HEAD_BYTES`] and some slack, so that a head over our
/// limit reaches [`check_head`] rather than hyper's own refusal.
pub const HYPER_MAX_BUF: usize = MAX_HEAD_BYTES + 64 * 1024;

/// The most header fields hyper parses: its default, 100 (Go's server counts only bytes).
/// hyper fills room for this many fields on every parse of a request head, on the stack up to
/// 100 and in two heap allocations beyond (1024 fields cost two 32 KiB allocations a request,
/// 256 still 3% of a create's CPU); clients send about ten (kubectl, client-go), so more is
/// refused with 431 rather than paid for by every request.
pub const MAX_HEADER_FIELDS: usize = 100;

/// The longest request target the `http` crate (hence hyper) represents; longer ones are
/// answered 414 by hyper (with a `Status` body through [`StatusOnParseError`]).
pub const MAX_URI_BYTES: usize = u16::MAX as usize - 1;

/// 414 `RequestURITooLong`.
pub fn uri_too_long(len: Option<usize>) -> ApiError {
    let len = len.map(|n| format!(" ({n} bytes)")).unwrap_or_default();
    ApiError::new(
        414,
        "RequestURITooLong",
        format!("the request URI{len} is longer than the limit of {MAX_URI_BYTES} bytes"),
    )
}

/// 431 `RequestHeaderFieldsTooLarge`.
pub fn head_too_large(len: Option<usize>) -> ApiError {
    let len = len.map(|n| format!(" ({n} bytes)")).unwrap_or_default();
    ApiError::new(
        431,
        "RequestHeaderFieldsTooLarge",
        format!(
            "the request line and header fields{len} are larger than the limit of {MAX_HEAD_BYTES} bytes or {MAX_HEADER_FIELDS} fields"
        ),
    )
}

/// Checks a parsed request head against [`MAX_URI_BYTES`] and [`MAX_HEAD_BYTES`].
pub fn check_head(uri: &Uri, headers: &HeaderMap) -> Result<(), ApiError> {
    let uri_len = uri.path_and_query().map_or(0, |pq| pq.as_str().len());
    if uri_len > MAX_URI_BYTES {
        return Err(uri_too_long(Some(uri_len)));
    }
    // `METHOD SP target SP HTTP/1.1 CRLF` and `name: value CRLF` per field, as Go counts.
    let head_len = uri_len
        + 16
        + headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + 4)
            .sum::<usize>();
    if head_len > MAX_HEAD_BYTES || headers.len() > MAX_HEADER_FIELDS {
        return Err(head_too_large(Some(head_len)));
    }
    Ok(())
}

/// The `Status` reply replacing hyper's bodiless answer to an unparseable head, when `buf` is
/// one (`HTTP/1.x 400|414|431 ...` with `content-length: 0`); `None` otherwise.
fn replacement(buf: &[u8]) -> Option<Vec<u8>> {
    // Every write of every response passes here (list bodies in 64 KiB chunks): look at the
    // status line before searching for the end of a head.
    let code = buf
        .strip_prefix(b"HTTP/1.1 ")
        .or_else(|| buf.strip_prefix(b"HTTP/1.0 "))?
        .get(..3)?;
    if !matches!(code, b"400" | b"414" | b"431") {
        return None;
    }
    let code = std::str::from_utf8(code).ok()?;
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..head_end]).ok()?;
    let bodiless = head
        .split("\r\n")
        .skip(1)
        .any(|line| line.eq_ignore_ascii_case("content-length: 0"));
    if !bodiless {
        return None;
    }
    let err = match code {
        "414" => uri_too_long(None),
        "431" => head_too_large(None),
        "400" => ApiError::bad_request("the request line or a header field is malformed"),
        _ => return None,
    };
    let body = serde_json::to_vec(&err.to_status()).ok()?;
    let reason = http::StatusCode::from_u16(err.code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut out = format!(
        "HTTP/1.1 {} {reason}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        err.code,
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    Some(out)
}

/// A replacement reply being written in place of hyper's.
struct Pending {
    bytes: Vec<u8>,
    written: usize,
    /// What the replaced write reports to hyper once done.
    reported: usize,
}

/// A connection's I/O that turns hyper's bodiless parse-error answers into `Status` replies.
pub struct StatusOnParseError<S> {
    inner: S,
    pending: Option<Pending>,
}

impl<S> StatusOnParseError<S> {
    /// Wraps a connection's stream.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            pending: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StatusOnParseError<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> StatusOnParseError<S> {
    /// Writes the pending replacement; `Ready(Ok(reported))` once all of it is written.
    fn drive_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        loop {
            let Some(pending) = self.pending.as_mut() else {
                return Poll::Ready(Ok(0));
            };
            if pending.written >= pending.bytes.len() {
                let reported = pending.reported;
                self.pending = None;
                return Poll::Ready(Ok(reported));
            }
            let n = ready!(
                Pin::new(&mut self.inner).poll_write(cx, &pending.bytes[pending.written..])
            )?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            pending.written += n;
        }
    }

    /// Starts a replacement when `buf` is hyper's bodiless parse-error answer.
    fn intercept(&mut self, buf: &[u8]) -> bool {
        if self.pending.is_some() {
            return true;
        }
        match replacement(buf) {
            Some(bytes) => {
                self.pending = Some(Pending {
                    bytes,
                    written: 0,
                    reported: buf.len(),
                });
                true
            }
            None => false,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StatusOnParseError<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.intercept(buf) {
            return this.drive_pending(cx);
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let first = bufs.iter().find(|b| !b.is_empty()).map(|b| &**b);
        if first.is_some_and(|b| this.intercept(b)) || this.pending.is_some() {
            return this.drive_pending(cx);
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pending.is_some() {
            ready!(this.drive_pending(cx))?;
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pending.is_some() {
            ready!(this.drive_pending(cx))?;
        }
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyper_parse_error_answers_are_replaced_by_status() {
        let hyper_414 = b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = replacement(hyper_414).map(|b| String::from_utf8_lossy(&b).into_owned());
        let out = out.unwrap_or_default();
        assert!(out.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{out}");
        let body = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        let status: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        assert_eq!(
            (&status["kind"], &status["reason"], &status["code"]),
            (
                &serde_json::json!("Status"),
                &serde_json::json!("RequestURITooLong"),
                &serde_json::json!(414)
            )
        );
        // Handler answers (with a body) and other codes pass through.
        assert!(
            replacement(
                b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 120\r\n\r\n{}"
            )
            .is_none()
        );
        assert!(replacement(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(replacement(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
    }

    #[test]
    fn heads_over_the_budget_are_431() {
        let uri: Uri = "/api/v1/pods?x=1".parse().unwrap_or_default();
        let mut headers = HeaderMap::new();
        assert!(check_head(&uri, &headers).is_ok());
        headers.insert(
            "x-big",
            http::HeaderValue::from_str(&"a".repeat(MAX_HEAD_BYTES))
                .unwrap_or(http::HeaderValue::from_static("")),
        );
        assert_eq!(check_head(&uri, &headers).map_err(|e| e.code), Err(431));
    }
}
