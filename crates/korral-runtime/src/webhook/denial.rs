//! Why a validating or defaulting webhook refuses a request: a [`Denial`], with the field errors
//! ([`FieldError`]) that become the `details.causes` of the `Status` the API server returns.

use std::fmt;

use kube::core::Status;
use kube::core::response::{StatusCause, StatusDetails, StatusSummary};
use serde_json::Value;

/// Warnings returned to the client (`Warning: 299 - "..."` headers, printed by kubectl).
pub type Warnings = Vec<String>;

/// The kind of a [`FieldError`], as upstream's `field.ErrorType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorType {
    /// A required field is missing (`Required value`).
    Required,
    /// A value is malformed or out of range (`Invalid value`).
    Invalid,
    /// A value is not one of the supported ones (`Unsupported value`).
    NotSupported,
    /// The field may not be set or changed (`Forbidden`).
    Forbidden,
    /// A value appears twice (`Duplicate value`).
    Duplicate,
    /// A value is too long (`Too long`).
    TooLong,
    /// A list has too many items (`Too many`).
    TooMany,
    /// A referenced value does not exist (`Not found`).
    NotFound,
    /// Validation itself failed (`Internal error`).
    Internal,
}

impl FieldErrorType {
    /// The text upstream prints for this type (`field.ErrorType.String()`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::Duplicate => "Duplicate value",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::NotFound => "Not found",
            Self::Internal => "Internal error",
        }
    }

    /// The `reason` of the `StatusCause` (`metav1.CauseType`).
    pub fn cause_type(self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::Duplicate => "FieldValueDuplicate",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::NotFound => "FieldValueNotFound",
            Self::Internal => "InternalError",
        }
    }

    /// Whether upstream prints the bad value after the type.
    fn shows_value(self) -> bool {
        !matches!(
            self,
            Self::Required | Self::Forbidden | Self::TooLong | Self::Internal
        )
    }
}

/// One error on one field, as upstream's `field.Error`: `spec.size: Invalid value: 6: must be
/// between 1 and 5`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// The kind of error.
    pub error_type: FieldErrorType,
    /// The field path (`spec.containers[0].image`).
    pub field: String,
    /// The offending value, printed after the type where upstream prints it.
    pub value: Option<Value>,
    /// What is wrong, after the value.
    pub detail: String,
}

impl FieldError {
    fn new(error_type: FieldErrorType, field: &str, value: Option<Value>, detail: &str) -> Self {
        Self {
            error_type,
            field: field.to_owned(),
            value,
            detail: detail.to_owned(),
        }
    }

    /// `field: Required value[: detail]`.
    pub fn required(field: &str, detail: &str) -> Self {
        Self::new(FieldErrorType::Required, field, None, detail)
    }

    /// `field: Invalid value: value: detail`.
    pub fn invalid(field: &str, value: impl Into<Value>, detail: &str) -> Self {
        Self::new(FieldErrorType::Invalid, field, Some(value.into()), detail)
    }

    /// `field: Unsupported value: value: supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: impl Into<Value>, supported: &[&str]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorType::NotSupported,
            field,
            Some(value.into()),
            &detail,
        )
    }

    /// `field: Forbidden: detail`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::new(FieldErrorType::Forbidden, field, None, detail)
    }

    /// `field: Duplicate value: value`.
    pub fn duplicate(field: &str, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorType::Duplicate, field, Some(value.into()), "")
    }

    /// `field: Too long: may not be more than max bytes`.
    pub fn too_long(field: &str, max: usize) -> Self {
        let detail = format!("may not be more than {max} bytes");
        Self::new(FieldErrorType::TooLong, field, None, &detail)
    }

    /// `field: Too many: actual: must have at most max items`.
    pub fn too_many(field: &str, actual: usize, max: usize) -> Self {
        let detail = format!("must have at most {max} items");
        Self::new(FieldErrorType::TooMany, field, Some(actual.into()), &detail)
    }

    /// `field: Not found: value`.
    pub fn not_found(field: &str, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorType::NotFound, field, Some(value.into()), "")
    }

    /// `field: Internal error: detail`.
    pub fn internal(field: &str, detail: &str) -> Self {
        Self::new(FieldErrorType::Internal, field, None, detail)
    }

    /// The message without the field (upstream's `ErrorBody`), the cause's `message`.
    pub fn body(&self) -> String {
        let kind = self.error_type.as_str();
        let mut body = match (&self.value, self.error_type.shows_value()) {
            (Some(value), true) => format!("{kind}: {}", render_value(value)),
            (None, true) => format!("{kind}: null"),
            (_, false) => kind.to_owned(),
        };
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }

    /// The `StatusCause` of this error.
    pub fn cause(&self) -> StatusCause {
        StatusCause {
            reason: self.error_type.cause_type().to_owned(),
            message: self.body(),
            field: self.field.clone(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// A Go `%q`-like quoted string.
fn quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// A value as upstream prints it: strings quoted, numbers and booleans bare, `null`, other
/// values as JSON.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => quote(s),
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

/// The HTTP code of a denial unless another is set: 403, as the captured denial of a real
/// kube-apiserver v1.36 (`admission/denied-by-webhook.json`) and controller-runtime's `Denied`.
pub const DENIAL_CODE: u16 = 403;

/// A refusal: a message and/or field errors, the HTTP code (403 unless set), an optional
/// `reason`, and warnings returned with it.
///
/// The API server prefixes the message with `admission webhook "<name>" denied the request: `.
/// Built from field errors, the message is upstream's `Kind.group "name" is invalid: ...`
/// (kind, group and name from the request) and each error becomes a `details.causes` entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Denial {
    message: Option<String>,
    code: Option<u16>,
    reason: String,
    causes: Vec<FieldError>,
    warnings: Warnings,
}

impl Denial {
    /// A denial with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: Some(message.into()),
            ..Self::default()
        }
    }

    /// A denial for these field errors (see the type docs for its message).
    pub fn invalid(errors: impl IntoIterator<Item = FieldError>) -> Self {
        Self {
            causes: errors.into_iter().collect(),
            ..Self::default()
        }
    }

    /// Sets the HTTP code (the API server raises codes below 400 to 400).
    #[must_use]
    pub fn with_code(mut self, code: u16) -> Self {
        self.code = Some(code);
        self
    }

    /// Sets the `reason` of the Status (e.g. `Forbidden`, `Invalid`); none by default, as the
    /// captured denial.
    #[must_use]
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = reason.into();
        self
    }

    /// Adds a field error (a `details.causes` entry).
    #[must_use]
    pub fn with_cause(mut self, error: FieldError) -> Self {
        self.causes.push(error);
        self
    }

    /// Adds warnings returned with the denial.
    #[must_use]
    pub fn with_warnings(mut self, warnings: impl IntoIterator<Item = String>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// The field errors.
    pub fn causes(&self) -> &[FieldError] {
        &self.causes
    }

    /// The warnings returned with the denial.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Takes the warnings out.
    pub(crate) fn take_warnings(&mut self) -> Warnings {
        std::mem::take(&mut self.warnings)
    }

    /// The message for an object of `kind` in `group` named `name`.
    pub fn message(&self, group: &str, kind: &str, name: &str) -> String {
        if let Some(message) = &self.message {
            return message.clone();
        }
        let qualified = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let name = quote(name);
        match self.causes.as_slice() {
            [] => format!("{qualified} {name} is invalid"),
            [one] => format!("{qualified} {name} is invalid: {one}"),
            many => {
                let all: Vec<String> = many.iter().map(ToString::to_string).collect();
                format!("{qualified} {name} is invalid: [{}]", all.join(", "))
            }
        }
    }

    /// The `Status` of this denial for an object of `kind` in `group` named `name`.
    pub fn to_status(&self, group: &str, kind: &str, name: &str) -> Status {
        let details = (!self.causes.is_empty()).then(|| StatusDetails {
            name: name.to_owned(),
            group: group.to_owned(),
            kind: kind.to_owned(),
            uid: String::new(),
            causes: self.causes.iter().map(FieldError::cause).collect(),
            retry_after_seconds: 0,
        });
        Status {
            status: Some(StatusSummary::Failure),
            code: self.code.unwrap_or(DENIAL_CODE),
            message: self.message(group, kind, name),
            metadata: Some(Default::default()),
            reason: self.reason.clone(),
            details,
        }
    }
}

impl From<FieldError> for Denial {
    fn from(error: FieldError) -> Self {
        Self::invalid([error])
    }
}

impl From<Vec<FieldError>> for Denial {
    fn from(errors: Vec<FieldError>) -> Self {
        Self::invalid(errors)
    }
}

impl From<String> for Denial {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

impl From<&str> for Denial {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.message {
            Some(message) => f.write_str(message),
            None => {
                let all: Vec<String> = self.causes.iter().map(ToString::to_string).collect();
                write!(f, "[{}]", all.join(", "))
            }
        }
    }
}

impl std::error::Error for Denial {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_error_bodies_read_as_upstream() {
        assert_eq!(
            FieldError::invalid("spec.size", 6, "must be between 1 and 5").to_string(),
            "spec.size: Invalid value: 6: must be between 1 and 5"
        );
        assert_eq!(
            FieldError::invalid("spec.image", "a b", "no spaces").body(),
            "Invalid value: \"a b\": no spaces"
        );
        assert_eq!(
            FieldError::required("spec.image", "").to_string(),
            "spec.image: Required value"
        );
        assert_eq!(
            FieldError::not_supported("spec.mode", "x", &["A", "B"]).body(),
            "Unsupported value: \"x\": supported values: \"A\", \"B\""
        );
        assert_eq!(
            FieldError::forbidden("spec.x", "may not be set").body(),
            "Forbidden: may not be set"
        );
        assert_eq!(
            FieldError::too_many("spec.items", 5, 3).body(),
            "Too many: 5: must have at most 3 items"
        );
        assert_eq!(
            FieldError::too_long("spec.name", 63).body(),
            "Too long: may not be more than 63 bytes"
        );
        assert_eq!(
            FieldError::invalid("spec.x", Value::Null, "").body(),
            "Invalid value: null"
        );
    }

    #[test]
    fn invalid_denial_becomes_a_status_with_causes() {
        let denial = Denial::invalid([
            FieldError::invalid("spec.size", 6, "must be between 1 and 5"),
            FieldError::required("spec.image", ""),
        ]);
        let status = denial.to_status("cache.example.com", "Memcached", "m1");
        assert_eq!(status.code, 403);
        assert_eq!(
            status.message,
            "Memcached.cache.example.com \"m1\" is invalid: [spec.size: Invalid value: 6: must \
             be between 1 and 5, spec.image: Required value]"
        );
        let details = status.details.expect("details");
        assert_eq!(details.kind, "Memcached");
        assert_eq!(details.group, "cache.example.com");
        assert_eq!(details.name, "m1");
        assert_eq!(details.causes[0].reason, "FieldValueInvalid");
        assert_eq!(details.causes[0].field, "spec.size");
        assert_eq!(
            details.causes[0].message,
            "Invalid value: 6: must be between 1 and 5"
        );
        assert_eq!(details.causes[1].reason, "FieldValueRequired");
        assert_eq!(details.causes[1].message, "Required value");
    }

    #[test]
    fn single_cause_and_core_group_and_plain_message() {
        let status =
            Denial::from(FieldError::forbidden("data", "no")).to_status("", "ConfigMap", "c");
        assert_eq!(
            status.message,
            "ConfigMap \"c\" is invalid: data: Forbidden: no"
        );
        let plain = Denial::new("denied by capture hook")
            .with_code(409)
            .with_reason("Conflict")
            .to_status("", "ConfigMap", "d");
        assert_eq!(plain.message, "denied by capture hook");
        assert_eq!((plain.code, plain.reason.as_str()), (409, "Conflict"));
        assert!(plain.details.is_none());
    }
}
