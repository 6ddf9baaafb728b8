//! The bucket probe: one HTTP `HEAD <endpoint>/<bucket>` (S3's HeadBucket) with a timeout.

use std::time::Duration;

use bytes::Bytes;
use http::header::{HOST, USER_AGENT};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::Empty;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// What a probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The endpoint answered 2xx: the bucket exists and is reachable.
    Available(StatusCode),
    /// The endpoint answered 404: no such bucket.
    NotFound(StatusCode),
    /// The endpoint answered something else (403, 5xx, ...).
    UnexpectedStatus(StatusCode),
    /// No HTTP answer: connection refused, reset, DNS failure, ...
    Unreachable(String),
    /// No answer within the timeout.
    TimedOut(Duration),
    /// The endpoint and bucket do not make an HTTP URL this probe can use.
    InvalidUrl(String),
}

impl ProbeOutcome {
    /// Whether the bucket is available.
    pub fn is_available(&self) -> bool {
        matches!(self, Self::Available(_))
    }

    /// The `Ready` condition's reason for this outcome.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Available(_) => "BucketAvailable",
            Self::NotFound(_) => "BucketNotFound",
            Self::UnexpectedStatus(_) => "UnexpectedStatus",
            Self::Unreachable(_) => "EndpointUnreachable",
            Self::TimedOut(_) => "ProbeTimeout",
            Self::InvalidUrl(_) => "InvalidEndpoint",
        }
    }

    /// A human-readable account of the probe of `url`.
    pub fn message(&self, url: &str) -> String {
        match self {
            Self::Available(status) | Self::NotFound(status) | Self::UnexpectedStatus(status) => {
                format!("HEAD {url} answered {status}")
            }
            Self::Unreachable(error) => format!("HEAD {url} failed: {error}"),
            Self::TimedOut(timeout) => format!("HEAD {url}: no answer within {timeout:?}"),
            Self::InvalidUrl(error) => format!("cannot probe {url}: {error}"),
        }
    }
}

/// The URL of `bucket` at `endpoint`: `<endpoint>/<bucket>`, whatever slashes `endpoint` ends
/// with.
pub fn bucket_url(endpoint: &str, bucket: &str) -> String {
    format!(
        "{}/{}",
        endpoint.trim_end_matches('/'),
        bucket.trim_matches('/')
    )
}

/// Sends `HEAD url` on a new connection and classifies the answer; gives up after `timeout`
/// (connecting included). Only `http://` URLs are supported.
pub async fn probe(url: &str, timeout: Duration) -> ProbeOutcome {
    let uri: Uri = match url.parse() {
        Ok(uri) => uri,
        Err(err) => return ProbeOutcome::InvalidUrl(err.to_string()),
    };
    if uri.scheme_str() != Some("http") {
        return ProbeOutcome::InvalidUrl("only http:// endpoints are supported".to_owned());
    }
    let Some(authority) = uri.authority().cloned() else {
        return ProbeOutcome::InvalidUrl("the URL has no host".to_owned());
    };
    match tokio::time::timeout(timeout, head(&uri, &authority)).await {
        Err(_) => ProbeOutcome::TimedOut(timeout),
        Ok(Err(error)) => ProbeOutcome::Unreachable(error),
        Ok(Ok(status)) if status.is_success() => ProbeOutcome::Available(status),
        Ok(Ok(StatusCode::NOT_FOUND)) => ProbeOutcome::NotFound(StatusCode::NOT_FOUND),
        Ok(Ok(status)) => ProbeOutcome::UnexpectedStatus(status),
    }
}

/// One HTTP/1.1 `HEAD` on a fresh connection, which is closed afterwards. Cancel-safe: dropping
/// the future drops the connection.
async fn head(uri: &Uri, authority: &http::uri::Authority) -> Result<StatusCode, String> {
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority.port_u16().unwrap_or(80);
    let stream = TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("connecting to {authority}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("starting HTTP with {authority}: {e}"))?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let request = Request::builder()
        .method(Method::HEAD)
        .uri(path)
        .header(HOST, authority.as_str())
        .header(USER_AGENT, "storagebucket-operator")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("building the request: {e}"))?;
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        response = sender.send_request(request) => response
            .map(|r| r.status())
            .map_err(|e| format!("waiting for the answer of {authority}: {e}")),
        closed = &mut connection => Err(match closed {
            Ok(()) => format!("{authority} closed the connection without answering"),
            Err(e) => format!("talking to {authority}: {e}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_join_endpoint_and_bucket() {
        assert_eq!(bucket_url("http://h:9000", "b"), "http://h:9000/b");
        assert_eq!(bucket_url("http://h:9000/", "b"), "http://h:9000/b");
        assert_eq!(bucket_url("http://h/s3/", "/b"), "http://h/s3/b");
    }

    #[tokio::test]
    async fn unsupported_urls_are_reported_not_probed() {
        let https = probe("https://example.com/b", Duration::from_secs(1)).await;
        assert_eq!(https.reason(), "InvalidEndpoint");
        assert!(!https.is_available());
        let garbage = probe("http://exa mple/b", Duration::from_secs(1)).await;
        assert_eq!(garbage.reason(), "InvalidEndpoint");
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let outcome = probe(&format!("http://{addr}/b"), Duration::from_secs(5)).await;
        assert_eq!(outcome.reason(), "EndpointUnreachable", "{outcome:?}");
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        // Accept and never answer.
        let holder = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        let outcome = probe(&format!("http://{addr}/b"), Duration::from_millis(200)).await;
        assert_eq!(outcome, ProbeOutcome::TimedOut(Duration::from_millis(200)));
        holder.abort();
    }
}
