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
    let _ = korral_apiserver::validation::schema::check_structural(&value, "s");
    let _ = korral_apiserver::validation::schema::validate(&value, &value, "");
    let _ = korral_apiserver::validation::cel::check_schema(&schema, "s");
    let _ = korral_apiserver::validation::cel::validate(&value, None, &schema);
});
