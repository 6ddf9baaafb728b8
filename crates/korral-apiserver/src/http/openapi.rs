//! The OpenAPI endpoints, answered as upstream's handlers answer them (kube-openapi's
//! `handler` and `handler3` behind kube-aggregator's v3 proxy), so that clients' HTTP caches
//! (kubectl's `--cache-dir`) work against them:
//!
//! - `/openapi/v2`: JSON or protobuf by `Accept` (406 with no body otherwise), `Vary: Accept`,
//!   the `ETag` of the JSON bytes (quoted upper-case SHA-512) for both forms, `Last-Modified`
//!   when the document was encoded;
//! - `/openapi/v3`: the index, sniffed by upstream as `text/plain`, `Last-Modified` now, and
//!   (as kube-openapi's handler, unlike kube-aggregator's) the `ETag` of its bytes;
//! - `/openapi/v3/<api/v1|apis/group/version>`: the group version's JSON with its `ETag`; with
//!   `?hash=` equal to it, `Cache-Control: public, immutable` and `Expires` a year ahead; with
//!   another hash, `301` to the URL of the current one; an unknown path is `404` with no body.
//!
//! Each answer goes through [`serve_content`], Go's `http.ServeContent` conditional requests:
//! `If-None-Match` / `If-Modified-Since` answer `304`, `If-Match` / `If-Unmodified-Since`
//! answer `412`. Documents are encoded once per change and served from their bytes.
//! Not done: byte ranges, gzip and the OpenAPI 3 protobuf form (a request only for it is 406).

use std::time::SystemTime;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};

use super::State;
use super::body::{self, Body};
use crate::openapi::Served;
use crate::openapi_proto::{self, V2Encoding};

/// The `Content-Type` Go's content sniffing gives the JSON index.
const SNIFFED_TEXT: &str = "text/plain; charset=utf-8";

/// The answer to an OpenAPI request, or `None` when `req` is not one.
pub(super) fn serve<B>(state: &State, req: &Request<B>) -> Option<Response<Body>> {
    if req.method() != http::Method::GET {
        return None;
    }
    let raw = req.uri().path();
    let trimmed = raw.trim_end_matches('/');
    let headers = req.headers();
    let specs = state.objects.aggregator().specs();
    let registry = state.objects.registry();
    if trimmed == "/openapi/v2" || trimmed == "/swagger-2.0.0.pb-v1" {
        // The legacy path is protobuf-only: kubectl's fallback request sends a JSON Accept.
        let encoding = if trimmed == "/swagger-2.0.0.pb-v1" {
            Some(V2Encoding::Protobuf)
        } else {
            let accept = accept(headers);
            openapi_proto::negotiate((!accept.is_empty()).then_some(accept.as_str()))
        };
        let document = crate::aggregator::openapi::v2_document(specs, registry);
        return Some(v2(headers, encoding, &document));
    }
    if raw == "/openapi/v3" {
        let index = crate::aggregator::openapi::v3_index(specs, registry);
        let index = Served::encode(&index);
        let mut out = HeaderMap::new();
        out.insert(header::CONTENT_TYPE, HeaderValue::from_static(SNIFFED_TEXT));
        // kube-aggregator sends no ETag here, so a client's cached copy is revalidated by its
        // date alone, to the second: a copy fetched in the second a CRD was added is answered
        // 304 and stays without the new group version. kube-openapi's own index handler sends
        // the ETag of the bytes, which decides before the date; we do as it does.
        out.insert(header::ETAG, etag(&index.hash));
        return Some(serve_content(headers, out, index.modified, index.bytes));
    }
    let path = raw.strip_prefix("/openapi/v3/")?;
    let served = match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", v] => crate::openapi::v3_group_version_served(registry, "", v),
        ["apis", g, v] => crate::aggregator::openapi::v3_group_version(specs, g, v)
            .or_else(|| crate::openapi::v3_group_version_served(registry, g, v)),
        _ => None,
    };
    let query = req.uri().query().unwrap_or_default();
    Some(v3_group_version(headers, query, path, served.as_deref()))
}

/// Every `Accept` header value, joined.
fn accept(headers: &HeaderMap) -> String {
    let values: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    values.join(",")
}

/// A response with no body.
fn empty(status: StatusCode, headers: HeaderMap) -> Response<Body> {
    let mut response = Response::new(body::full(Bytes::new()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// `hash` as an `ETag` value (quoted).
fn etag(hash: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{hash}\"")).unwrap_or(HeaderValue::from_static("\"\""))
}

/// `/openapi/v2` in `encoding` (`None`: nothing acceptable).
fn v2(
    request: &HeaderMap,
    encoding: Option<V2Encoding>,
    document: &crate::openapi::V2Document,
) -> Response<Body> {
    let mut out = HeaderMap::new();
    out.append(header::VARY, HeaderValue::from_static("Accept"));
    let Some(encoding) = encoding else {
        return empty(StatusCode::NOT_ACCEPTABLE, out);
    };
    // Both forms carry the JSON's hash and time; `Vary: Accept` keeps caches apart.
    let json = document.json();
    let (content_type, bytes) = match encoding {
        V2Encoding::Json => ("application/json", json.bytes.clone()),
        V2Encoding::Protobuf => (openapi_proto::MEDIA_TYPE, document.protobuf()),
    };
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    out.insert(header::ETAG, etag(&json.hash));
    serve_content(request, out, json.modified, bytes)
}

/// Whether an `Accept` header lets the JSON form be served, as upstream's negotiation (by
/// `q`, then specificity) picks the first range matching a form it has; the OpenAPI 3
/// protobuf form is not produced here, so a range naming only it is passed over.
fn v3_accepts_json(accept: &str) -> bool {
    let accept = if accept.trim().is_empty() {
        "*/*"
    } else {
        accept
    };
    let mut ranges: Vec<(f64, u8, String)> = Vec::new();
    for clause in accept.split(',') {
        let mut parts = clause.split(';');
        let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        if media.is_empty() {
            continue;
        }
        let q = parts
            .filter_map(|p| p.split_once('='))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
            .map_or(1.0, |(_, v)| v.trim().parse::<f64>().unwrap_or(0.0));
        if q <= 0.0 || q.is_nan() {
            continue;
        }
        let specificity = match media.as_str() {
            "*/*" | "*" => 0,
            m if m.ends_with("/*") => 1,
            _ => 2,
        };
        ranges.push((q, specificity, media));
    }
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    ranges.iter().any(|(_, _, m)| {
        matches!(
            m.as_str(),
            "*/*" | "*" | "application/*" | "application/json"
        )
    })
}

/// `/openapi/v3/<path>` (`served` when it names a group version served) for `query`.
fn v3_group_version(
    request: &HeaderMap,
    query: &str,
    path: &str,
    served: Option<&Served>,
) -> Response<Body> {
    let Some(served) = served else {
        // kube-aggregator's answer for a path no server lists: a bare 404.
        return empty(StatusCode::NOT_FOUND, HeaderMap::new());
    };
    let mut out = HeaderMap::new();
    out.append(header::VARY, HeaderValue::from_static("Accept"));
    if !v3_accepts_json(&accept(request)) {
        return empty(StatusCode::NOT_ACCEPTABLE, out);
    }
    out.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    out.insert(header::ETAG, etag(&served.hash));
    let hash = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "hash")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if !hash.is_empty() {
        if hash != served.hash {
            // A stale link: to the current document's (clients then cache that URL).
            let location = crate::openapi::v3_url(path, &served.hash);
            if let Ok(location) = HeaderValue::from_str(&location) {
                out.insert(header::LOCATION, location);
            }
            return empty(StatusCode::MOVED_PERMANENTLY, out);
        }
        // The URL names this content for good.
        out.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, immutable"),
        );
        if let Some(expires) =
            expires(SystemTime::now()).and_then(|e| HeaderValue::from_str(&e).ok())
        {
            out.insert(header::EXPIRES, expires);
        }
    }
    serve_content(request, out, served.modified, served.bytes.clone())
}

/// One year after `now` as upstream writes it (`time.RFC1123` of the server's local time,
/// UTC in a container): `Tue, 30 Nov 2027 05:45:00 UTC`. A 29 February moves to 1 March.
fn expires(now: SystemTime) -> Option<String> {
    let utc = jiff::Timestamp::try_from(now)
        .ok()?
        .to_zoned(jiff::tz::TimeZone::UTC);
    let date = utc.date();
    let next = jiff::civil::Date::new(date.year() + 1, date.month(), date.day())
        .or_else(|_| jiff::civil::Date::new(date.year() + 1, 3, 1))
        .ok()?;
    let later = next
        .to_datetime(utc.time())
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()?;
    Some(later.strftime("%a, %d %b %Y %H:%M:%S UTC").to_string())
}

/// `t` as an HTTP date (`Mon, 02 Jan 2006 15:04:05 GMT`).
fn http_date(t: SystemTime) -> Option<String> {
    let t = jiff::Timestamp::try_from(t).ok()?;
    Some(t.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string())
}

/// An HTTP date header (the forms Go's `http.ParseTime` reads), in whole seconds since the
/// epoch.
fn parse_http_date(value: &str) -> Option<i64> {
    [
        "%a, %d %b %Y %H:%M:%S GMT",
        "%A, %d-%b-%y %H:%M:%S GMT",
        "%a %b %e %H:%M:%S %Y",
    ]
    .iter()
    .find_map(|format| jiff::civil::DateTime::strptime(format, value.trim()).ok())
    .and_then(|dt| dt.to_zoned(jiff::tz::TimeZone::UTC).ok())
    .map(|z| z.timestamp().as_second())
}

/// The outcome of one precondition header.
#[derive(Debug, PartialEq)]
enum Condition {
    /// No such header (or one that cannot be read).
    Absent,
    /// It holds.
    Holds,
    /// It fails.
    Fails,
}

/// The entity tags of an `If-Match` / `If-None-Match` value, up to the first malformed one;
/// `None` stands for `*`.
fn entity_tags(value: &str) -> Vec<Option<&str>> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        if item == "*" {
            out.push(None);
            continue;
        }
        let opaque = item.strip_prefix("W/").unwrap_or(item);
        if opaque.len() < 2 || !opaque.starts_with('"') || !opaque.ends_with('"') {
            break;
        }
        out.push(Some(item));
    }
    out
}

/// `If-Match`: holds when a listed tag is `*` or strongly equal to `ours`.
fn if_match(request: &HeaderMap, ours: Option<&str>) -> Condition {
    let Some(value) = request.get(header::IF_MATCH).and_then(|v| v.to_str().ok()) else {
        return Condition::Absent;
    };
    if value.trim().is_empty() {
        return Condition::Absent;
    }
    let strong = |tag: &str| {
        !tag.starts_with("W/") && ours.is_some_and(|o| !o.starts_with("W/") && o == tag)
    };
    if entity_tags(value).into_iter().any(|t| t.is_none_or(strong)) {
        Condition::Holds
    } else {
        Condition::Fails
    }
}

/// `If-None-Match`: fails when a listed tag is `*` or weakly equal to `ours`.
fn if_none_match(request: &HeaderMap, ours: Option<&str>) -> Condition {
    let Some(value) = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    else {
        return Condition::Absent;
    };
    if value.trim().is_empty() {
        return Condition::Absent;
    }
    let weak = |t: &str| t.strip_prefix("W/").unwrap_or(t).to_string();
    let matched = entity_tags(value)
        .into_iter()
        .any(|t| t.is_none_or(|t| ours.is_some_and(|o| weak(o) == weak(t))));
    if matched {
        Condition::Fails
    } else {
        Condition::Holds
    }
}

/// A date precondition: `modified <= the header's date` (`If-Unmodified-Since` holds,
/// `If-Modified-Since` means "not modified").
fn not_after(request: &HeaderMap, name: header::HeaderName, modified: Option<i64>) -> Condition {
    let (Some(value), Some(modified)) = (request.get(name).and_then(|v| v.to_str().ok()), modified)
    else {
        return Condition::Absent;
    };
    match parse_http_date(value) {
        Some(since) if modified <= since => Condition::Holds,
        Some(_) => Condition::Fails,
        None => Condition::Absent,
    }
}

/// Answers a GET with `bytes` and the response headers `out` as Go's `http.ServeContent`
/// does: `Last-Modified` from `modified`, then the preconditions of RFC 7232 section 6 in
/// order (`If-Match` or else `If-Unmodified-Since` failing: 412; `If-None-Match` matching, or
/// absent and `If-Modified-Since` not older than `modified`: 304 without the body's headers).
fn serve_content(
    request: &HeaderMap,
    mut out: HeaderMap,
    modified: SystemTime,
    bytes: Bytes,
) -> Response<Body> {
    let seconds = jiff::Timestamp::try_from(modified)
        .ok()
        .map(|t| t.as_second())
        .filter(|s| *s != 0);
    if seconds.is_some()
        && let Some(date) = http_date(modified).and_then(|d| HeaderValue::from_str(&d).ok())
    {
        out.insert(header::LAST_MODIFIED, date);
    }
    let ours = out
        .get(header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut precondition = if_match(request, ours.as_deref());
    if precondition == Condition::Absent {
        precondition = not_after(request, header::IF_UNMODIFIED_SINCE, seconds);
    }
    if precondition == Condition::Fails {
        return empty(StatusCode::PRECONDITION_FAILED, out);
    }
    let not_modified = match if_none_match(request, ours.as_deref()) {
        Condition::Fails => true,
        Condition::Holds => false,
        Condition::Absent => {
            not_after(request, header::IF_MODIFIED_SINCE, seconds) == Condition::Holds
        }
    };
    if not_modified {
        out.remove(header::CONTENT_TYPE);
        out.remove(header::CONTENT_LENGTH);
        out.remove(header::CONTENT_ENCODING);
        if out.contains_key(header::ETAG) {
            out.remove(header::LAST_MODIFIED);
        }
        return empty(StatusCode::NOT_MODIFIED, out);
    }
    let mut response = Response::new(body::full(bytes));
    *response.headers_mut() = out;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.append(name.clone(), HeaderValue::from_str(value).expect("value"));
        }
        h
    }

    fn tagged() -> HeaderMap {
        headers(&[
            (header::ETAG, "\"ABC\""),
            (header::CONTENT_TYPE, "application/json"),
        ])
    }

    fn at(seconds: i64) -> SystemTime {
        SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(seconds as u64)
    }

    /// 2026-11-30T05:00:00Z.
    const T: i64 = 1_796_014_800;

    #[test]
    fn dates_are_written_and_read_as_http_dates() {
        assert_eq!(
            http_date(at(T)).as_deref(),
            Some("Mon, 30 Nov 2026 05:00:00 GMT")
        );
        assert_eq!(parse_http_date("Mon, 30 Nov 2026 05:00:00 GMT"), Some(T));
        assert_eq!(parse_http_date("Monday, 30-Nov-26 05:00:00 GMT"), Some(T));
        assert_eq!(parse_http_date("Mon Nov 30 05:00:00 2026"), Some(T));
        assert_eq!(parse_http_date("yesterday"), None);
        assert_eq!(
            expires(at(T)).as_deref(),
            Some("Tue, 30 Nov 2027 05:00:00 UTC")
        );
        // 2028-02-29T12:00:00Z: Go's AddDate normalizes to 1 March.
        assert_eq!(
            expires(at(1_835_438_400)).as_deref(),
            Some("Thu, 01 Mar 2029 12:00:00 UTC")
        );
    }

    #[test]
    fn a_matching_if_none_match_is_not_modified_without_the_body_headers() {
        for tag in ["\"ABC\"", "W/\"ABC\"", "\"X\", \"ABC\"", "*"] {
            let r = serve_content(
                &headers(&[(header::IF_NONE_MATCH, tag)]),
                tagged(),
                at(T),
                Bytes::from_static(b"{}"),
            );
            assert_eq!(r.status(), StatusCode::NOT_MODIFIED, "{tag}");
            assert_eq!(r.headers()[header::ETAG], "\"ABC\"");
            assert!(r.headers().get(header::CONTENT_TYPE).is_none());
            assert!(
                r.headers().get(header::LAST_MODIFIED).is_none(),
                "the ETag guides caches"
            );
        }
        let r = serve_content(
            &headers(&[(header::IF_NONE_MATCH, "\"OTHER\"")]),
            tagged(),
            at(T),
            Bytes::from_static(b"{}"),
        );
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(
            r.headers()[header::LAST_MODIFIED],
            "Mon, 30 Nov 2026 05:00:00 GMT"
        );
        // A failing If-None-Match wins over a date that would say "not modified".
        let r = serve_content(
            &headers(&[
                (header::IF_NONE_MATCH, "\"OTHER\""),
                (header::IF_MODIFIED_SINCE, "Mon, 30 Nov 2026 06:00:00 GMT"),
            ]),
            tagged(),
            at(T),
            Bytes::from_static(b"{}"),
        );
        assert_eq!(r.status(), StatusCode::OK);
    }

    #[test]
    fn if_modified_since_compares_whole_seconds() {
        let untagged = || headers(&[(header::CONTENT_TYPE, SNIFFED_TEXT)]);
        let modified = at(T) + std::time::Duration::from_millis(700);
        let ask = |since: &str| {
            serve_content(
                &headers(&[(header::IF_MODIFIED_SINCE, since)]),
                untagged(),
                modified,
                Bytes::from_static(b"{}"),
            )
        };
        let r = ask("Mon, 30 Nov 2026 05:00:00 GMT");
        assert_eq!(r.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(
            r.headers()[header::LAST_MODIFIED],
            "Mon, 30 Nov 2026 05:00:00 GMT",
            "kept without an ETag"
        );
        assert_eq!(
            ask("Mon, 30 Nov 2026 04:59:59 GMT").status(),
            StatusCode::OK
        );
        assert_eq!(ask("not a date").status(), StatusCode::OK);
    }

    #[test]
    fn failed_if_match_or_if_unmodified_since_is_412() {
        let ask = |pairs: &[(header::HeaderName, &str)]| {
            serve_content(&headers(pairs), tagged(), at(T), Bytes::from_static(b"{}")).status()
        };
        assert_eq!(ask(&[(header::IF_MATCH, "\"ABC\"")]), StatusCode::OK);
        assert_eq!(ask(&[(header::IF_MATCH, "*")]), StatusCode::OK);
        assert_eq!(
            ask(&[(header::IF_MATCH, "W/\"ABC\"")]),
            StatusCode::PRECONDITION_FAILED,
            "If-Match compares strongly"
        );
        assert_eq!(
            ask(&[(header::IF_MATCH, "\"X\"")]),
            StatusCode::PRECONDITION_FAILED
        );
        assert_eq!(
            ask(&[(header::IF_UNMODIFIED_SINCE, "Mon, 30 Nov 2026 04:00:00 GMT")]),
            StatusCode::PRECONDITION_FAILED
        );
        assert_eq!(
            ask(&[
                (header::IF_MATCH, "\"ABC\""),
                (header::IF_UNMODIFIED_SINCE, "Mon, 30 Nov 2026 04:00:00 GMT"),
            ]),
            StatusCode::OK,
            "a holding If-Match makes the date moot"
        );
    }

    #[test]
    fn v3_negotiation_passes_over_protobuf() {
        assert!(v3_accepts_json(""));
        assert!(v3_accepts_json("application/json"));
        assert!(v3_accepts_json("application/*"));
        assert!(v3_accepts_json(
            "application/com.github.proto-openapi.spec.v3.v1.0+protobuf, application/json;q=0.5"
        ));
        assert!(!v3_accepts_json(
            "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
        ));
        assert!(!v3_accepts_json("text/html, application/json;q=0"));
    }
}
