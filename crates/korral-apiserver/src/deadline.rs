//! A request's timeout as upstream's `WithRequestDeadline` filter reads it: the `timeout` query
//! parameter of a request that is not long-running, a Go duration, honoured when it is below
//! the server's request timeout (60 s); a malformed one is a 400 before anything else runs.
//! Priority and fairness lets a request wait in its queue a quarter of its timeout at most.

use std::time::Duration;

use http::Uri;

use crate::error::ApiError;

/// Upstream's `--request-timeout` default: the longest a request that is not long-running may
/// take, and the timeout of requests that do not ask for a shorter one.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Subresources whose requests are long-running (upstream's `BasicLongRunningRequestCheck`).
pub(crate) const LONG_RUNNING_SUBRESOURCES: [&str; 5] =
    ["attach", "exec", "proxy", "log", "portforward"];

/// The timeout a request asked for (`Some` when below [`REQUEST_TIMEOUT`] and above zero),
/// as its request extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestTimeout(pub(crate) Duration);

/// The timeout `uri` asks for: `None` without one, for long-running requests (watches,
/// connect subresources, proxies: upstream ignores their `timeout`), and for `0` or one not
/// below [`REQUEST_TIMEOUT`]; a 400 `BadRequest` when it is not a Go duration.
pub(crate) fn requested(uri: &Uri) -> Result<Option<RequestTimeout>, ApiError> {
    let Some(query) = uri.query().filter(|q| q.contains("timeout=")) else {
        return Ok(None);
    };
    let Some(value) = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "timeout")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty())
    else {
        return Ok(None);
    };
    if is_long_running(uri) {
        return Ok(None);
    }
    let nanos = crate::go_duration::parse(&value).map_err(|e| {
        ApiError::bad_request(format!(
            "invalid timeout specified in the request URL - {e}"
        ))
    })?;
    let timeout = u64::try_from(nanos).map_or(Duration::ZERO, Duration::from_nanos);
    Ok((!timeout.is_zero() && timeout < REQUEST_TIMEOUT).then_some(RequestTimeout(timeout)))
}

/// How long the request `uri` names may run before it is answered with a 504 (upstream's
/// `WithTimeoutForNonLongRunningRequests`): the timeout it asked for, else the server's
/// request timeout; `None` for a long-running request.
pub(crate) fn deadline(uri: &Uri, requested: Option<RequestTimeout>) -> Option<Duration> {
    if is_long_running(uri) {
        return None;
    }
    Some(requested.map_or(REQUEST_TIMEOUT, |t| t.0))
}

/// Upstream's answer to a request past its deadline: 504 `Timeout`.
pub(crate) fn timed_out() -> ApiError {
    let mut err = ApiError::new(
        504,
        "Timeout",
        "Timeout: request did not complete within the allotted timeout",
    );
    err.details = Some(Box::default());
    err
}

/// Whether the request `uri` names is long-running by its path and query alone: a watch
/// (`?watch=true` or a `/watch/` path), a proxy, or a connect subresource of an object.
fn is_long_running(uri: &Uri) -> bool {
    if crate::inflight::is_watch_uri(uri) {
        return true;
    }
    let segments: Vec<&str> = uri.path().trim_matches('/').split('/').collect();
    // The segments after the group version: `/api/v1/...` or `/apis/<group>/<version>/...`.
    let rest = match segments.as_slice() {
        ["api", _, rest @ ..] | ["apis", _, _, rest @ ..] => rest,
        _ => return false,
    };
    let rest = match rest {
        ["proxy", ..] => return true,
        ["namespaces", _, _, ..] => &rest[2..],
        _ => rest,
    };
    matches!(rest, [_, _, sub, ..] if LONG_RUNNING_SUBRESOURCES.contains(sub))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeout_of(target: &str) -> Result<Option<Duration>, String> {
        let uri: Uri = target.parse().map_err(|e| format!("{e}"))?;
        requested(&uri)
            .map(|t| t.map(|t| t.0))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_timeout_below_the_request_timeout_is_honoured() {
        assert_eq!(
            timeout_of("/api/v1/configmaps?timeout=8s"),
            Ok(Some(Duration::from_secs(8)))
        );
        assert_eq!(
            timeout_of("/apis/apps/v1/namespaces/a/deployments/d?timeout=250ms&x=1"),
            Ok(Some(Duration::from_millis(250)))
        );
        for ignored in [
            "/api/v1/configmaps",
            "/api/v1/configmaps?timeout=",
            "/api/v1/configmaps?timeout=0s",
            "/api/v1/configmaps?timeout=-5s",
            "/api/v1/configmaps?timeout=60s",
            "/api/v1/configmaps?timeout=2h",
            "/api/v1/configmaps?timeoutSeconds=5",
        ] {
            assert_eq!(timeout_of(ignored), Ok(None), "{ignored}");
        }
    }

    #[test]
    fn a_malformed_timeout_is_a_bad_request_unless_long_running() {
        let err = timeout_of("/api/v1/configmaps?timeout=soon").expect_err("malformed");
        assert!(
            err.contains(
                r#"invalid timeout specified in the request URL - time: invalid duration "soon""#
            ),
            "{err}"
        );
        for long_running in [
            "/api/v1/configmaps?watch=true&timeout=soon",
            "/api/v1/watch/configmaps?timeout=soon",
            "/api/v1/namespaces/a/pods/p/exec?timeout=soon",
            "/api/v1/namespaces/a/pods/p/log?timeout=soon",
            "/api/v1/nodes/n/proxy/metrics?timeout=soon",
            "/api/v1/namespaces/a/services/s/proxy/x/y?timeout=soon",
        ] {
            assert_eq!(timeout_of(long_running), Ok(None), "{long_running}");
        }
        // An object named like a subresource is not one.
        assert!(timeout_of("/api/v1/namespaces/a/configmaps/log?timeout=soon").is_err());
    }

    #[test]
    fn long_running_requests_have_no_deadline() {
        let of = |target: &str| {
            let uri: Uri = target.parse().expect("uri");
            let requested = requested(&uri).expect("valid");
            deadline(&uri, requested)
        };
        assert_eq!(of("/api/v1/configmaps"), Some(REQUEST_TIMEOUT));
        assert_eq!(
            of("/api/v1/configmaps?timeout=3s"),
            Some(Duration::from_secs(3))
        );
        assert_eq!(of("/api/v1/configmaps?watch=1&timeout=3s"), None);
        assert_eq!(of("/api/v1/namespaces/a/pods/p/exec"), None);
        assert_eq!(timed_out().code, 504);
    }
}
