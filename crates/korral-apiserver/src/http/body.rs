//! Request bodies and responses: size limits, JSON/YAML decoding, `Status` answers.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::BoxBody};
use serde::Serialize;
use serde_json::Value;

use super::negotiate::Format;
use crate::error::ApiError;

/// Largest request body accepted (3 MiB), as upstream.
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// The response body type of every handler.
pub type Body = BoxBody<Bytes, Infallible>;

/// A complete body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// How long a client may take to send a request body once its headers are in (upstream's
/// default `--request-timeout`): a body trickled or stalled longer is answered 408 and its
/// request's in-flight slot freed, so slow uploads cannot hold the server's write budget.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Reads a request body, answering 413 past [`MAX_BODY`] and 408 past [`BODY_READ_TIMEOUT`].
pub async fn read_body<B>(body: B) -> Result<Bytes, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    read_body_within(body, BODY_READ_TIMEOUT).await
}

/// [`read_body`] with the time the whole body may take.
async fn read_body_within<B>(body: B, timeout: Duration) -> Result<Bytes, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let Ok(read) = tokio::time::timeout(timeout, Limited::new(body, MAX_BODY).collect()).await
    else {
        return Err(ApiError::new(
            408,
            "Timeout",
            format!(
                "the request body was not received within {}s",
                timeout.as_secs_f64()
            ),
        ));
    };
    match read {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) => {
            if err
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ApiError::too_large(MAX_BODY))
            } else {
                Err(ApiError::bad_request(format!(
                    "reading request body: {err}"
                )))
            }
        }
    }
}

/// Whether a content type names YAML.
fn is_yaml(content_type: &str) -> bool {
    content_type.contains("yaml")
}

/// Decodes a JSON or YAML object body for `kind`, with upstream's error for malformed input.
pub fn decode_object(bytes: &[u8], content_type: &str, kind: &str) -> Result<Value, ApiError> {
    if crate::protobuf::is_protobuf_content_type(content_type) {
        return crate::protobuf::decode_object(bytes).map_err(|e| {
            ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {kind}): {e}"
            ))
        });
    }
    let media = content_type.split(';').next().unwrap_or("").trim();
    if !(media.is_empty() || media == "*/*" || media.contains("json") || is_yaml(media)) {
        return Err(ApiError::unsupported_media_type(
            media,
            &[
                "application/json",
                "application/yaml",
                crate::protobuf::CONTENT_TYPE,
            ],
        ));
    }
    let parsed: Result<Value, String> = if is_yaml(content_type) {
        serde_yaml_ng::from_slice::<Value>(bytes).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice::<Value>(bytes).map_err(|e| e.to_string())
    };
    match parsed {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: expected an object"
        ))),
        Err(e) => {
            let preview: String = String::from_utf8_lossy(bytes).chars().take(30).collect();
            Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: {e} ({preview} ...)"
            )))
        }
    }
}

/// A JSON response with a status code.
pub fn json_response<T: Serialize + ?Sized>(status: StatusCode, value: &T) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => bytes_response(status, bytes, "application/json"),
        Err(e) => error_response(&ApiError::internal(format!("encoding response: {e}"))),
    }
}

/// A response carrying `value` as YAML, written as upstream's serializer writes it (the JSON
/// form turned into YAML, map keys sorted).
pub fn yaml_response(status: StatusCode, value: &Value) -> Response<Body> {
    match serde_yaml_ng::to_string(&sorted_yaml(value)) {
        Ok(text) => bytes_response(status, text.into_bytes(), "application/yaml"),
        Err(e) => error_response(&ApiError::internal(format!("encoding response: {e}"))),
    }
}

/// `value` as a YAML value whose maps list their keys in sorted order.
fn sorted_yaml(value: &Value) -> serde_yaml_ng::Value {
    use serde_yaml_ng::Value as Yaml;
    match value {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Bool(*b),
        Value::Number(n) => serde_yaml_ng::to_value(n).unwrap_or(Yaml::Null),
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(items) => Yaml::Sequence(items.iter().map(sorted_yaml).collect()),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Yaml::Mapping(
                keys.into_iter()
                    .map(|k| (Yaml::String(k.clone()), sorted_yaml(&map[k])))
                    .collect(),
            )
        }
    }
}

/// A response from raw bytes with a content type.
pub fn bytes_response(status: StatusCode, bytes: Vec<u8>, content_type: &str) -> Response<Body> {
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    response
}

/// The `Status` response of an error.
pub fn error_response(err: &ApiError) -> Response<Body> {
    error_response_as(err, Format::Json)
}

/// The `Status` response of an error in `format` (what the client prefers for the resource
/// it asked about).
pub fn error_response_as(err: &ApiError, format: Format) -> Response<Body> {
    let status = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let encoded = (format == Format::Protobuf)
        .then(|| crate::protobuf::encode_object(&err.to_status()).ok())
        .flatten();
    let mut response = match (encoded, format) {
        (Some(bytes), _) => bytes_response(status, bytes, crate::protobuf::CONTENT_TYPE),
        (None, Format::Yaml) => yaml_response(status, &err.to_status()),
        (None, _) => json_response(status, &err.to_status()),
    };
    // As upstream's error writer: a Status that says when to retry says it in the header too.
    if let Some(secs) = err.details.as_ref().and_then(|d| d.retry_after_seconds) {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

/// Adds `Warning: 299 - "..."` headers.
pub fn add_warnings(response: &mut Response<Body>, warnings: &[String]) {
    for v in warnings.iter().filter_map(|w| warning_value(w)) {
        response.headers_mut().append(header::WARNING, v);
    }
}

/// Puts `warning` before the `Warning` headers a response already has.
pub fn prepend_warning(response: &mut Response<Body>, warning: &str) {
    let Some(first) = warning_value(warning) else {
        return;
    };
    let headers = response.headers_mut();
    let later: Vec<HeaderValue> = headers.get_all(header::WARNING).iter().cloned().collect();
    headers.insert(header::WARNING, first);
    for v in later {
        headers.append(header::WARNING, v);
    }
}

/// A `Warning` header value (`299 - "text"`, quotes and backslashes escaped).
fn warning_value(text: &str) -> Option<HeaderValue> {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_str(&format!("299 - \"{escaped}\"")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prepended_warning_comes_first() {
        let mut response = json_response(StatusCode::OK, &serde_json::json!({}));
        add_warnings(&mut response, &["a".to_string(), "b \"q\"".to_string()]);
        prepend_warning(&mut response, "first");
        let got: Vec<&str> = response
            .headers()
            .get_all(header::WARNING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        assert_eq!(
            got,
            ["299 - \"first\"", "299 - \"a\"", "299 - \"b \\\"q\\\"\""]
        );
    }
    use futures::StreamExt;
    use http_body::Frame;
    use http_body_util::StreamBody;

    #[tokio::test]
    async fn a_stalled_body_is_answered_408_and_a_complete_one_is_read() {
        // Headers in, one piece of the body, then nothing.
        let stalled = StreamBody::new(
            futures::stream::iter([Ok::<_, Infallible>(Frame::data(Bytes::from_static(
                b"{\"kind\":",
            )))])
            .chain(futures::stream::pending()),
        );
        let started = std::time::Instant::now();
        let err = read_body_within(stalled, Duration::from_millis(50))
            .await
            .expect_err("stalled");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(err.code, 408);
        let status = err.to_status();
        assert_eq!(status["reason"], "Timeout");
        assert_eq!(status["kind"], "Status");
        assert_eq!(
            status["message"],
            "the request body was not received within 0.05s"
        );

        let whole = full(Bytes::from_static(b"{}"));
        let bytes = read_body_within(whole, Duration::from_millis(50))
            .await
            .expect("read");
        assert_eq!(bytes.as_ref(), b"{}");

        let too_large = full(vec![b' '; MAX_BODY + 1]);
        let err = read_body_within(too_large, Duration::from_secs(5))
            .await
            .expect_err("too large");
        assert_eq!(err.code, 413);
    }
}
