//! Secrets: `stringData` folded into `data`, upstream's `ValidateSecret` (data keys, the
//! built-in types and the keys they require, total size) and `ValidateSecretUpdate` (type
//! immutable, the `immutable: true` lock).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::config_data::{MAX_SIZE, entries, validate_keys, validate_locked_update};
use super::go_json;
use crate::ApiError;
use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::kinds::workload::immutable;
use crate::objects::FieldValidation;
use crate::registry::ResourceInfo;
use crate::validation::names::{invalid_value, too_long};

/// The annotation naming the ServiceAccount of a `kubernetes.io/service-account-token` Secret.
const SERVICE_ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";
/// What upstream shows instead of a Secret's contents.
const REDACTED: &str = "<secret contents redacted>";

/// The strategy of `v1/Secret`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SecretStrategy;

/// The decoded bytes of a `data` value (base64); `None` when it is not base64.
fn decoded(value: &Value) -> Option<Vec<u8>> {
    STANDARD.decode(value.as_str()?).ok()
}

/// Go's `json.Unmarshal` of a docker config into `target` (an object type): syntax errors as
/// Go's scanner words them, then a top-level value that is no object.
fn docker_config_error(bytes: &[u8], target: &str) -> Option<String> {
    if let Err(e) = go_json::check(bytes) {
        return Some(e);
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    let kind = match first {
        Some(b'"') => "string",
        Some(b'[') => "array",
        Some(b't' | b'f') => "bool",
        Some(b'-' | b'0'..=b'9') => "number",
        _ => return None,
    };
    Some(format!(
        "json: cannot unmarshal {kind} into Go value of type {target}"
    ))
}

/// Upstream's `ValidateSecret` for a (decoded) Secret.
fn validate_secret(obj: &Value) -> Vec<Cause> {
    let mut errs = validate_keys(obj, "data");
    let data = obj.get("data").and_then(Value::as_object);
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let required = |k: &str| Cause::required(format!("data[{k}]"), "");
    let total: usize = entries(obj, "data")
        .map(|(_, v)| decoded(v).map_or(0, |b| b.len()))
        .sum();
    match obj.get("type").and_then(Value::as_str).unwrap_or("") {
        "kubernetes.io/service-account-token" => {
            let name = obj
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get(SERVICE_ACCOUNT_NAME))
                .and_then(Value::as_str)
                .unwrap_or("");
            if name.is_empty() {
                errs.push(Cause::required(
                    format!("metadata.annotations[{SERVICE_ACCOUNT_NAME}]"),
                    "",
                ));
            }
        }
        t @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let (key, target) = if t == "kubernetes.io/dockercfg" {
                (".dockercfg", "credentialprovider.DockerConfig")
            } else {
                (".dockerconfigjson", "credentialprovider.DockerConfigJSON")
            };
            match data.and_then(|d| d.get(key)) {
                None => errs.push(required(key)),
                Some(v) => {
                    let bytes = decoded(v).unwrap_or_default();
                    if let Some(e) = docker_config_error(&bytes, target) {
                        errs.push(invalid_value(&format!("data[{key}]"), &json!(REDACTED), &e));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
            errs.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    errs.push(required(key));
                }
            }
        }
        _ => {}
    }
    if total > MAX_SIZE {
        errs.push(too_long(
            "data",
            i64::try_from(MAX_SIZE).unwrap_or(i64::MAX),
        ));
    }
    errs
}

/// Moves `stringData` into `data` (base64), as upstream's conversion does.
fn fold_string_data(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let Some(Value::Object(strings)) = map.remove("stringData") else {
        return;
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(Default::default()));
    if data.is_null() {
        *data = Value::Object(Default::default());
    }
    if let Some(data) = data.as_object_mut() {
        for (k, v) in strings {
            let text = v.as_str().unwrap_or_default();
            data.insert(k, json!(STANDARD.encode(text)));
        }
    }
}

impl Strategy for SecretStrategy {
    /// `stringData` is write-only: folded into `data` before anything else; a `data` value
    /// that is not base64 makes the object undecodable (400), as upstream's decoder.
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        let warnings = crate::openapi_builtin::decode_builtin(info, obj, validation)?;
        for (key, value) in entries(obj, "data") {
            if !value.is_null() && decoded(value).is_none() {
                return Err(ApiError::bad_request(format!(
                    "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data in data[{key}]"
                )));
            }
        }
        fold_string_data(obj);
        Ok(warnings)
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("", "Secret", obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_secret(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        let mut errs = validate_secret(obj);
        errs.extend(immutable(obj, old, "type", ""));
        errs.extend(validate_locked_update(obj, old, &["data"]));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(ty: &str, data: Value) -> Value {
        let mut obj = json!({"metadata": {"name": "s"}, "type": ty, "data": data});
        crate::defaults::apply_builtin_defaults("", "Secret", &mut obj);
        obj
    }

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_secrets_never_panic(
            obj in crate::kinds::core::test_support::mutated(
                json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "e30="}}),
                &["type", "data", "data..dockerconfigjson", "stringData", "immutable", "metadata.annotations"],
            ),
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let mut obj = obj;
            fold_string_data(&mut obj);
            let _ = validate_secret(&obj);
            let _ = SecretStrategy.validate_update_rules(&obj, &secret("Opaque", json!({})));
            let _ = docker_config_error(&bytes, "x");
        }
    }

    #[test]
    fn built_in_types_require_their_keys() {
        let b64 = |s: &str| json!(STANDARD.encode(s));
        assert_eq!(
            summaries(&validate_secret(&secret(
                "kubernetes.io/tls",
                json!({"tls.crt": b64("c")})
            ))),
            ["data[tls.key]: Required value"]
        );
        assert_eq!(
            summaries(&validate_secret(&secret(
                "kubernetes.io/dockerconfigjson",
                json!({".dockerconfigjson": b64("{not json}")})
            ))),
            [
                "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": invalid character 'n' looking for beginning of object key string"
            ]
        );
        assert_eq!(
            summaries(&validate_secret(&secret(
                "kubernetes.io/basic-auth",
                json!({})
            ))),
            [
                "data[username]: Required value",
                "data[password]: Required value"
            ]
        );
        assert_eq!(
            summaries(&validate_secret(&secret(
                "kubernetes.io/ssh-auth",
                json!({})
            ))),
            ["data[ssh-privatekey]: Required value"]
        );
        assert_eq!(
            summaries(&validate_secret(&secret(
                "kubernetes.io/service-account-token",
                json!({})
            ))),
            ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        assert!(
            validate_secret(&secret(
                "kubernetes.io/dockercfg",
                json!({".dockercfg": b64("{}")})
            ))
            .is_empty()
        );
        assert!(validate_secret(&secret("Opaque", json!({"a.b": b64("x")}))).is_empty());
    }

    #[test]
    fn keys_and_size() {
        let bad = secret("Opaque", json!({"a b": "eA=="}));
        assert!(summaries(&validate_secret(&bad))[0].starts_with(
            "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters"
        ));
        let big = STANDARD.encode(vec![0u8; MAX_SIZE + 1]);
        assert_eq!(
            summaries(&validate_secret(&secret("Opaque", json!({"k": big})))),
            ["data: Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn updates() {
        let old = secret("kubernetes.io/basic-auth", json!({"username": "eA=="}));
        let new = secret("Opaque", json!({"username": "eA=="}));
        assert_eq!(
            summaries(&SecretStrategy.validate_update_rules(&new, &old)),
            ["type: Invalid value: \"Opaque\": field is immutable"]
        );
        let mut locked = secret("Opaque", json!({"k": "eA=="}));
        locked["immutable"] = json!(true);
        let mut changed = locked.clone();
        changed["data"]["k"] = json!("eQ==");
        changed["immutable"] = json!(false);
        assert_eq!(
            summaries(&SecretStrategy.validate_update_rules(&changed, &locked)),
            [
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set"
            ]
        );
    }

    #[test]
    fn string_data_is_folded() {
        let mut obj = json!({"stringData": {"a": "hi"}, "data": {"b": "eA=="}});
        fold_string_data(&mut obj);
        assert_eq!(obj, json!({"data": {"a": "aGk=", "b": "eA=="}}));
    }

    impl SecretStrategy {
        /// The update rules alone (no storage needed).
        fn validate_update_rules(&self, obj: &Value, old: &Value) -> Vec<Cause> {
            let mut errs: Vec<Cause> = immutable(obj, old, "type", "").into_iter().collect();
            errs.extend(validate_locked_update(obj, old, &["data"]));
            errs
        }
    }
}
