//! Forwarding requests to an extension API server, as kube-aggregator's `proxyHandler`
//! (`pkg/apiserver/handler_proxy.go`): requests under `/apis/<group>/<version>` of an
//! aggregated APIService go to its Service over HTTPS with method, path, query and body kept,
//! the caller's credentials (`Authorization`, `Impersonate-*`) removed and the authenticated
//! user sent as `X-Remote-User`, `X-Remote-Uid`, one `X-Remote-Group` per group and
//! `X-Remote-Extra-<key>` per extra value, under the front-proxy client certificate. The
//! answer streams back as the backend writes it (watches included).
//!
//! Failures are upstream's plain-text answers: `503 service unavailable` while the APIService
//! is not `Available` or its Service does not resolve, `503` with the transport error when the
//! backend cannot be reached, `500` when its TLS configuration cannot be built.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::BackendError;
use crate::auth::UserInfo;
use crate::error::ApiError;
use crate::http::Body;
use crate::kinds::apiregistration::{GROUP, RESOURCE, availability};
use crate::kinds::printer::text;
use crate::meta;
use crate::objects::Objects;
use crate::storage::object_key;

/// How long a discovery request (`/apis/<group>/<version>`) may wait for its answer, as
/// upstream bounds proxied discovery.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// The aggregated APIService serving `path` (`/apis/<group>/<version>[/...]`), if any.
pub(crate) fn target(objects: &Objects, path: &str) -> Option<Value> {
    let rest = path.strip_prefix("/apis/")?;
    let mut parts = rest.split('/');
    let group = parts.next().filter(|g| !g.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    let obj = objects.storage().get(&object_key(
        GROUP,
        RESOURCE,
        None,
        &format!("{version}.{group}"),
    ))?;
    meta::path(&obj, "spec.service")
        .is_some_and(Value::is_object)
        .then(|| (*obj).clone())
}

/// A plain-text answer, as Go's `http.Error` writes it.
fn plain(status: StatusCode, message: &str) -> Response<Body> {
    crate::http::bytes_response(
        status,
        format!("{message}\n").into_bytes(),
        "text/plain; charset=utf-8",
    )
}

/// Headers that belong to one connection (RFC 7230 §6.1), never forwarded.
pub(super) const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whether a request header is dropped before forwarding: hop-by-hop headers, the host, the
/// caller's credentials and any identity headers it sent itself.
fn dropped(name: &HeaderName) -> bool {
    let name = name.as_str();
    HOP_BY_HOP.contains(&name)
        || name == "host"
        || name == "content-length"
        || name == "authorization"
        || name.starts_with("impersonate-")
        || name.starts_with("x-remote-")
}

/// The address of the client a request came from, put in the request's extensions by the
/// server's accept loop; the proxy appends it to `X-Forwarded-For`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub std::net::SocketAddr);

/// Appends the client's IP to `X-Forwarded-For` as Go's reverse proxy does: earlier values
/// joined by `, `, then the address, in one header.
fn append_forwarded_for(headers: &mut HeaderMap, client: Option<&ClientAddr>) {
    let Some(ClientAddr(addr)) = client else {
        return;
    };
    let mut values: Vec<String> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    values.push(addr.ip().to_string());
    if let Ok(value) = HeaderValue::from_str(&values.join(", ")) {
        headers.insert("x-forwarded-for", value);
    }
}

/// Upstream's `headerKeyEscape`: bytes outside an HTTP token, and `%`, percent-encoded.
fn escape_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        let token = b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
        if token {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The forwarded request headers: the client's, minus [`dropped`] ones, plus the user's
/// identity (upstream's `SetAuthProxyHeaders`).
fn forwarded_headers(incoming: &HeaderMap, user: &UserInfo) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let connection_named: Vec<String> = incoming
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|s| s.trim().to_ascii_lowercase()))
        .collect();
    for (name, value) in incoming {
        if dropped(name) || connection_named.iter().any(|c| c == name.as_str()) {
            continue;
        }
        headers.append(name.clone(), value.clone());
    }
    let mut add = |name: &str, value: &str| {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    };
    add("X-Remote-User", &user.name);
    if !user.uid.is_empty() {
        add("X-Remote-Uid", &user.uid);
    }
    for group in &user.groups {
        add("X-Remote-Group", group);
    }
    for (key, values) in &user.extra {
        let name = format!("X-Remote-Extra-{}", escape_key(key));
        for value in values {
            add(&name, value);
        }
    }
    headers
}

/// Serves `req` through the aggregated APIService `apiservice` for `user`; an upgraded
/// connection is spliced until it ends or `shutdown` flips.
pub(crate) async fn serve<B>(
    objects: &Objects,
    user: &UserInfo,
    apiservice: &Value,
    mut req: Request<B>,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let available =
        availability::condition(apiservice).is_some_and(|c| text(c, "status") == "True");
    if !available {
        return Ok(plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "service unavailable",
        ));
    }
    let snapshot = objects.storage().snapshot();
    let backend = match super::backend(objects, &snapshot, apiservice) {
        Ok(backend) => backend,
        Err(BackendError::Resolve(why)) => {
            tracing::warn!(apiservice = %meta::name(apiservice), error = %why, "resolving the aggregated API server");
            return Ok(plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "service unavailable",
            ));
        }
        Err(BackendError::Transport(why)) => {
            return Ok(plain(StatusCode::INTERNAL_SERVER_ERROR, &why));
        }
    };
    let upgrade = super::upgrade::requested(req.headers());
    let on_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    let bytes = crate::http::read_body(body).await?;
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".to_string());
    let mut headers = forwarded_headers(&parts.headers, user);
    append_forwarded_for(&mut headers, parts.extensions.get::<ClientAddr>());
    if upgrade {
        super::upgrade::keep_upgrade_headers(&parts.headers, &mut headers);
    }
    if let Ok(host) = HeaderValue::from_str(&backend.addr.to_string()) {
        headers.insert(header::HOST, host);
    }
    let mut builder = Request::builder()
        .method(parts.method.clone())
        .uri(path_and_query);
    if let Some(h) = builder.headers_mut() {
        *h = headers;
    }
    let request = builder
        .body(Full::new(bytes))
        .map_err(|e| ApiError::internal(format!("building the proxied request: {e}")))?;
    if let Some(client) = on_upgrade {
        return match super::upgrade::forward(&backend, request, client, shutdown).await {
            Ok(response) => Ok(response),
            Err(why) => {
                tracing::debug!(apiservice = %meta::name(apiservice), error = %why, "proxying an upgrade to the aggregated API server");
                if matches!(why, super::upgrade::UpgradeError::Dial(_)) {
                    objects.aggregator().recheck(meta::name(apiservice));
                }
                Ok(plain(StatusCode::SERVICE_UNAVAILABLE, &why.to_string()))
            }
        };
    }
    // Upstream's proxy transport (`k8s.io/apimachinery/pkg/util/proxy`) names where the
    // request went: the path, the backend's address and the scheme.
    let forwarded = [
        ("x-forwarded-uri", parts.uri.path().to_string()),
        ("x-forwarded-host", backend.addr.to_string()),
        ("x-forwarded-proto", "https".to_string()),
    ];
    let mut request = request;
    for (name, value) in forwarded {
        if let Ok(value) = HeaderValue::from_str(&value) {
            request.headers_mut().insert(name, value);
        }
    }
    let discovery = parts.uri.path().trim_end_matches('/').matches('/').count() <= 3;
    let sent = super::transport::send(&backend, request);
    let response = if discovery {
        match tokio::time::timeout(DISCOVERY_TIMEOUT, sent).await {
            Ok(r) => r,
            Err(_) => Err("context deadline exceeded".to_string()),
        }
    } else {
        sent.await
    };
    let response = match response {
        Ok(response) => response,
        Err(why) => {
            tracing::debug!(apiservice = %meta::name(apiservice), error = %why, "proxying to the aggregated API server");
            objects.aggregator().recheck(meta::name(apiservice));
            return Ok(plain(StatusCode::SERVICE_UNAVAILABLE, &why));
        }
    };
    let (mut head, body) = response.into_parts();
    for name in HOP_BY_HOP {
        head.headers.remove(name);
    }
    Ok(Response::from_parts(head, Relay(body).boxed()))
}

/// The backend's body as the server's: frames pass as they arrive; a transport error ends
/// the stream (the client sees it end, as a watch ended by the server).
pub(super) struct Relay(pub(super) hyper::body::Incoming);

impl http_body::Body for Relay {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match Pin::new(&mut self.0).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
            Poll::Ready(Some(Err(e))) => {
                tracing::debug!(error = %e, "aggregated API server response ended");
                Poll::Ready(None)
            }
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.0.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_replaces_credentials() {
        let mut incoming = HeaderMap::new();
        incoming.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        incoming.insert("impersonate-user", HeaderValue::from_static("someone"));
        incoming.insert("x-remote-user", HeaderValue::from_static("forged"));
        incoming.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        let user = UserInfo {
            name: "alice".into(),
            uid: String::new(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [(
                "scopes.example.com/a b".to_string(),
                vec!["1".into(), "2".into()],
            )]
            .into_iter()
            .collect(),
        };
        let out = forwarded_headers(&incoming, &user);
        assert!(out.get(header::AUTHORIZATION).is_none());
        assert!(out.get("impersonate-user").is_none());
        assert!(out.get("x-remote-uid").is_none());
        assert_eq!(out.get_all("x-remote-user").iter().count(), 1);
        assert_eq!(out["x-remote-user"], "alice");
        assert_eq!(out.get_all("x-remote-group").iter().count(), 2);
        assert_eq!(
            out.get_all("x-remote-extra-scopes.example.com%2Fa%20b")
                .iter()
                .count(),
            2
        );
        assert_eq!(out[header::ACCEPT], "application/json");
    }
}
