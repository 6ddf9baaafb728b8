//! Upgrade requests through the proxy (`kubectl exec`, `attach`, `port-forward` on SPDY/3.1 or
//! WebSocket), as upstream's `UpgradeAwareHandler` (`k8s.io/apimachinery/pkg/util/proxy`)
//! serves them for kube-aggregator: the request goes to the extension server on a connection
//! of its own with its `Connection: Upgrade` and `Upgrade` headers; a `101 Switching
//! Protocols` answer is passed to the client and the two connections are then spliced, bytes
//! flowing both ways until either side ends. A backend that refuses with an error (`4xx`,
//! `5xx`) has its answer relayed; any other answer is upstream's `503 invalid upgrade
//! response: status code N`.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty, Full};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;

use super::transport::{self, Backend};
use crate::http::Body;

/// Whether the request asks to switch protocols (upstream's `IsUpgradeRequest`: a
/// `Connection` header naming `upgrade`).
pub(crate) fn requested(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"))
}

/// Puts the upgrade's own headers back on the forwarded request (the proxy drops hop-by-hop
/// headers): `Connection: Upgrade` and the client's `Upgrade` protocols.
pub(crate) fn keep_upgrade_headers(incoming: &HeaderMap, forwarded: &mut HeaderMap) {
    forwarded.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    for value in incoming.get_all(header::UPGRADE) {
        forwarded.append(header::UPGRADE, value.clone());
    }
}

/// Why an upgrade could not be proxied: upstream's responder answers `503` with it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpgradeError {
    /// The backend could not be reached or did not answer.
    #[error("error dialing backend: {0}")]
    Dial(String),
    /// The backend answered neither `101` nor an error.
    #[error("invalid upgrade response: status code {0}")]
    NotSwitched(u16),
}

/// Sends the upgrade request `request` to `backend`; on `101` answers the backend's head and
/// splices `client` (the client's connection, once hyper hands it over) with the backend's
/// until either ends or `shutdown` flips.
pub(crate) async fn forward(
    backend: &Backend,
    request: Request<Full<Bytes>>,
    client: OnUpgrade,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Result<Response<Body>, UpgradeError> {
    let mut response = transport::send_upgrade(backend, request)
        .await
        .map_err(UpgradeError::Dial)?;
    let status = response.status();
    if status == StatusCode::SWITCHING_PROTOCOLS {
        let upstream = hyper::upgrade::on(&mut response);
        let (head, _) = response.into_parts();
        tokio::spawn(splice(client, upstream, shutdown));
        return Ok(Response::from_parts(head, Empty::new().boxed()));
    }
    if status.as_u16() < 400 {
        return Err(UpgradeError::NotSwitched(status.as_u16()));
    }
    let (mut head, body) = response.into_parts();
    for name in super::proxy::HOP_BY_HOP {
        head.headers.remove(name);
    }
    Ok(Response::from_parts(
        head,
        super::proxy::Relay(body).boxed(),
    ))
}

/// Copies bytes both ways between the client's and the backend's upgraded connections.
async fn splice(
    client: OnUpgrade,
    backend: OnUpgrade,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let (client, backend) = match tokio::try_join!(client, backend) {
        Ok(pair) => pair,
        Err(e) => {
            tracing::debug!(error = %e, "upgrading the proxied connection");
            return;
        }
    };
    let mut client = TokioIo::new(client);
    let mut backend = TokioIo::new(backend);
    tokio::select! {
        copied = tokio::io::copy_bidirectional(&mut client, &mut backend) => {
            if let Err(e) = copied {
                tracing::debug!(error = %e, "proxied upgraded connection ended");
            }
        }
        _ = shutdown.wait_for(|stopped| *stopped) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upgrade_requests_are_recognized_by_their_connection_header() {
        let mut headers = HeaderMap::new();
        assert!(!requested(&headers));
        headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
        assert!(!requested(&headers));
        headers.append(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        assert!(requested(&headers));
        headers.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
        let mut forwarded = HeaderMap::new();
        keep_upgrade_headers(&headers, &mut forwarded);
        assert_eq!(forwarded[header::CONNECTION], "Upgrade");
        assert_eq!(forwarded[header::UPGRADE], "SPDY/3.1");
    }
}
