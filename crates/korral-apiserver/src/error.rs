//! The `Status` error every failed request answers with.

use serde_json::{Map, Value, json};

/// One entry of `details.causes` in an `Invalid` status: what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// Machine-readable reason, e.g. `FieldValueInvalid`, `FieldValueRequired`.
    pub reason: String,
    /// Human-readable message, e.g. `Invalid value: 0: spec.replicas in body should be ...`.
    pub message: String,
    /// Field path, e.g. `spec.replicas`, `metadata.name`, `spec.items[0].name`.
    pub field: String,
}

impl Cause {
    /// A cause with the given reason, field path and message.
    pub fn new(reason: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            reason: reason.to_string(),
            message: message.into(),
            field: field.into(),
        }
    }

    /// `FieldValueInvalid` with upstream's `Invalid value: <value>: <detail>` message.
    pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        Self::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {}: {detail}", render_value(value)),
        )
    }

    /// `FieldValueRequired` with upstream's `Required value` message.
    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Self::new("FieldValueRequired", field, message)
    }

    /// `FieldValueForbidden` with upstream's `Forbidden: <detail>` message.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        Self::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
    }

    /// `FieldValueNotSupported`: the value is not one of the supported ones.
    pub fn not_supported(field: impl Into<String>, value: &Value, supported: &[Value]) -> Self {
        let list: Vec<String> = supported.iter().map(render_value).collect();
        Self::new(
            "FieldValueNotSupported",
            field,
            format!(
                "Unsupported value: {}: supported values: {}",
                render_value(value),
                list.join(", ")
            ),
        )
    }

    /// `FieldValueTypeInvalid`: the value has the wrong JSON type.
    pub fn type_invalid(field: impl Into<String>, value: &Value, detail: &str) -> Self {
        Self::new(
            "FieldValueTypeInvalid",
            field,
            format!("Invalid value: {}: {detail}", render_value(value)),
        )
    }

    /// `FieldValueDuplicate`: the value appears twice where it must be unique.
    pub fn duplicate(field: impl Into<String>, value: &Value) -> Self {
        Self::new(
            "FieldValueDuplicate",
            field,
            format!("Duplicate value: {}", render_value(value)),
        )
    }

    /// `FieldValueTooLong`.
    pub fn too_long(field: impl Into<String>, value: &Value, max: usize) -> Self {
        Self::new(
            "FieldValueTooLong",
            field,
            format!(
                "Too long: may not be more than {max} bytes (value {})",
                render_value(value)
            ),
        )
    }

    /// The cause rendered as upstream does inside an aggregated message: `field: message`.
    pub fn summary(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// Renders a value the way upstream's field errors print it: strings quoted, objects as `{...}`.
pub fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".to_string(),
        Value::Object(_) => "\"object\"".to_string(),
        Value::Array(_) => "\"array\"".to_string(),
        other => other.to_string(),
    }
}

/// A failed API request: rendered as a `meta.k8s.io/v1` `Status` with the HTTP code.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason`, e.g. `NotFound`.
    pub reason: &'static str,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`, when upstream fills it (boxed to keep errors small).
    pub details: Option<Box<Details>>,
}

/// `Status.details`.
#[derive(Debug, Clone, Default)]
pub struct Details {
    /// The object's name.
    pub name: Option<String>,
    /// The object's API group (empty for core).
    pub group: Option<String>,
    /// The kind or resource upstream names here.
    pub kind: Option<String>,
    /// The object's uid, for precondition failures.
    pub uid: Option<String>,
    /// Field-level causes.
    pub causes: Vec<Cause>,
    /// Seconds after which a retry may succeed.
    pub retry_after_seconds: Option<u64>,
}

/// The `group/resource` pair upstream prints in messages: `configmaps`, `deployments.apps`.
pub fn qualified_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// The `Kind.group` pair upstream prints in Invalid messages: `ConfigMap`, `Widget.ref.example.org`.
pub fn qualified_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

impl ApiError {
    /// An error with a code, reason and message and no details.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Details) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    fn resource_details(group: &str, resource: &str, name: &str) -> Details {
        Details {
            name: Some(name.to_string()),
            group: (!group.is_empty()).then(|| group.to_string()),
            kind: Some(resource.to_string()),
            ..Details::default()
        }
    }

    /// 404 `NotFound` for a named object: `configmaps "x" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{} {name:?} not found", qualified_resource(group, resource)),
        )
        .with_details(Self::resource_details(group, resource, name))
    }

    /// 404 for a path the server does not serve.
    pub fn unknown_resource() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(Details::default())
    }

    /// 409 `AlreadyExists`.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!(
                "{} {name:?} already exists",
                qualified_resource(group, resource)
            ),
        )
        .with_details(Self::resource_details(group, resource, name))
    }

    /// 409 `Conflict` for a stale resourceVersion.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict_because(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 `Conflict` with a custom explanation.
    pub fn conflict_because(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {name:?}: {why}",
                qualified_resource(group, resource)
            ),
        )
        .with_details(Self::resource_details(group, resource, name))
    }

    /// 422 `Invalid` with field causes.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let mut summary: Vec<String> = Vec::with_capacity(causes.len());
        for line in causes.iter().map(Cause::summary) {
            // Upstream prints a repeated cause once in the message (but keeps it in causes).
            if !summary.contains(&line) {
                summary.push(line);
            }
        }
        let joined = if summary.len() == 1 {
            summary[0].clone()
        } else {
            format!("[{}]", summary.join(", "))
        };
        Self::new(
            422,
            "Invalid",
            format!(
                "{} {name:?} is invalid: {joined}",
                qualified_kind(group, kind)
            ),
        )
        .with_details(Details {
            name: Some(name.to_string()),
            group: (!group.is_empty()).then(|| group.to_string()),
            kind: Some(kind.to_string()),
            causes,
            ..Details::default()
        })
    }

    /// 400 `BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 401 `Unauthorized`.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 `Forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }

    /// 403 `Forbidden` for one object, as admission plugins refuse it:
    /// `pods "x" is forbidden: <why>`, with the object in the details.
    pub fn forbidden_object(group: &str, resource: &str, name: &str, why: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            format!(
                "{} {name:?} is forbidden: {why}",
                qualified_resource(group, resource)
            ),
        )
        .with_details(Self::resource_details(group, resource, name))
    }

    /// 405 `MethodNotAllowed`.
    pub fn method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(Details::default())
    }

    /// 405 `MethodNotAllowed` for a verb on `resource.group` (upstream's
    /// `NewMethodNotSupported`) with `message`.
    pub fn method_not_supported(group: &str, resource: &str, message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message).with_details(Details {
            group: (!group.is_empty()).then(|| group.to_string()),
            kind: Some(resource.to_string()),
            ..Details::default()
        })
    }

    /// 410 `Expired`: a watch or continue token older than the retained history.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 413 `RequestEntityTooLarge`.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("the request body is larger than the limit of {limit} bytes"),
        )
    }

    /// 415 `UnsupportedMediaType`.
    pub fn unsupported_media_type(content_type: &str, supported: &[&str]) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                supported.join(", ")
            ),
        )
        .with_details(Details {
            kind: None,
            causes: vec![Cause::new("", "", content_type)],
            ..Details::default()
        })
    }

    /// 500 `InternalError`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// 429 `TooManyRequests`, with `details.retryAfterSeconds` (and so a `Retry-After` header).
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u64) -> Self {
        let mut err = Self::new(429, "TooManyRequests", message);
        err.details = Some(Box::new(Details {
            retry_after_seconds: Some(retry_after_seconds),
            ..Details::default()
        }));
        err
    }

    /// 503 `ServiceUnavailable`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// The error as a `Status` JSON document.
    pub fn to_status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        // Upstream omits an empty reason (webhook denials without one).
        if !self.reason.is_empty() {
            status.insert("reason".into(), json!(self.reason));
        }
        if let Some(details) = &self.details {
            let mut d = Map::new();
            if let Some(name) = &details.name {
                d.insert("name".into(), json!(name));
            }
            if let Some(group) = &details.group {
                d.insert("group".into(), json!(group));
            }
            if let Some(kind) = &details.kind {
                d.insert("kind".into(), json!(kind));
            }
            if let Some(uid) = &details.uid {
                d.insert("uid".into(), json!(uid));
            }
            if !details.causes.is_empty() {
                let causes: Vec<Value> = details
                    .causes
                    .iter()
                    .map(|c| {
                        let mut m = Map::new();
                        if !c.reason.is_empty() {
                            m.insert("reason".into(), json!(c.reason));
                        }
                        m.insert("message".into(), json!(c.message));
                        if !c.field.is_empty() {
                            m.insert("field".into(), json!(c.field));
                        }
                        Value::Object(m)
                    })
                    .collect();
                d.insert("causes".into(), Value::Array(causes));
            }
            if let Some(secs) = details.retry_after_seconds {
                d.insert("retryAfterSeconds".into(), json!(secs));
            }
            status.insert("details".into(), Value::Object(d));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_upstream_shape() {
        let status = ApiError::not_found("", "configmaps", "missing").to_status();
        assert_eq!(status["message"], "configmaps \"missing\" not found");
        assert_eq!(status["details"]["kind"], "configmaps");
        assert_eq!(status["code"], 404);
    }

    #[test]
    fn invalid_joins_causes_like_upstream() {
        let err = ApiError::invalid(
            "ref.example.org",
            "Widget",
            "w2",
            vec![
                Cause::not_supported(
                    "spec.color",
                    &json!("green"),
                    &[json!("red"), json!("blue")],
                ),
                Cause::invalid(
                    "spec.replicas",
                    &json!(0),
                    "spec.replicas in body should be greater than or equal to 1",
                ),
            ],
        );
        assert_eq!(
            err.message,
            "Widget.ref.example.org \"w2\" is invalid: [spec.color: Unsupported value: \"green\": supported values: \"red\", \"blue\", spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1]"
        );
        assert_eq!(
            err.to_status()["details"]["causes"][0]["reason"],
            "FieldValueNotSupported"
        );
    }
}
