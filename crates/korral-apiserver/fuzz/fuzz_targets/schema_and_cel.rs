//! Structural schema checks, schema validation and CEL rule compilation: no panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (rule, doc) = text.split_once('\n').unwrap_or((text, "{}"));
    let value: Value = serde_json::from_str(doc).unwrap_or(Value::Null);
    let schema = json!({"type": "object", "x-kubernetes-validations": [{"rule": rule}]});
    korral_apiserver::fuzzing::check_schema_and_validate(&value, &value);
    korral_apiserver::fuzzing::check_schema_and_validate(&value, &schema);
});
