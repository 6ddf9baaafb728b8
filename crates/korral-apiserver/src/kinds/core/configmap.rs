//! ConfigMaps: upstream's `ValidateConfigMap` (keys of `data` and `binaryData`, no key in both,
//! total size) and `ValidateConfigMapUpdate` (the `immutable: true` lock).

use serde_json::{Value, json};

use super::config_data::{MAX_SIZE, entries, validate_keys, validate_locked_update};
use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::validation::names::{invalid_value, too_long};

/// The strategy of `v1/ConfigMap`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConfigMapStrategy;

/// Upstream's `ValidateConfigMap`.
fn validate_config_map(obj: &Value) -> Vec<Cause> {
    let mut errs = validate_keys(obj, "data");
    errs.extend(validate_keys(obj, "binaryData"));
    let data = obj.get("data").and_then(Value::as_object);
    for (key, _) in entries(obj, "binaryData") {
        if data.is_some_and(|d| d.contains_key(key)) {
            errs.push(invalid_value(
                &format!("binaryData[{key}]"),
                &json!(key),
                "duplicate of key present in data",
            ));
        }
    }
    let text: usize = entries(obj, "data")
        .map(|(_, v)| v.as_str().map_or(0, str::len))
        .sum();
    let binary: usize = entries(obj, "binaryData")
        .map(|(_, v)| v.as_str().map_or(0, |s| s.len() / 4 * 3))
        .sum();
    if text + binary > MAX_SIZE {
        errs.push(too_long("", i64::try_from(MAX_SIZE).unwrap_or(i64::MAX)));
    }
    errs
}

impl Strategy for ConfigMapStrategy {
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_config_map(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        let mut errs = validate_config_map(obj);
        errs.extend(validate_locked_update(obj, old, &["data", "binaryData"]));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_config_maps_never_panic(
            obj in crate::kinds::core::test_support::mutated(
                json!({"data": {"a": "1"}, "immutable": true}),
                &["data", "binaryData", "immutable", "data.a"],
            ),
        ) {
            let _ = validate_config_map(&obj);
            let _ = validate_locked_update(&obj, &json!({"immutable": true, "data": {}}), &["data", "binaryData"]);
        }
    }

    #[test]
    fn keys_overlap_and_size() {
        assert!(
            validate_config_map(&json!({"data": {"a": "1"}, "binaryData": {"b": "eA=="}}))
                .is_empty()
        );
        assert_eq!(
            summaries(&validate_config_map(
                &json!({"data": {"a": "1"}, "binaryData": {"a": "eA=="}})
            )),
            ["binaryData[a]: Invalid value: \"a\": duplicate of key present in data"]
        );
        assert_eq!(
            summaries(&validate_config_map(&json!({"data": {"..x": "1"}}))),
            ["data[..x]: Invalid value: \"..x\": must not start with '..'"]
        );
        let big = "x".repeat(MAX_SIZE + 1);
        assert_eq!(
            summaries(&validate_config_map(&json!({"data": {"k": big}}))),
            ["Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn locked_config_maps_keep_their_data() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        assert!(validate_locked_update(&old, &old, &["data", "binaryData"]).is_empty());
        let new = json!({"immutable": true, "data": {"a": "2"}});
        assert_eq!(
            summaries(&validate_locked_update(&new, &old, &["data", "binaryData"])),
            ["data: Forbidden: field is immutable when `immutable` is set"]
        );
        let open = json!({"data": {"a": "1"}});
        assert!(validate_locked_update(&new, &open, &["data"]).is_empty());
    }
}
