//! apiextensions.k8s.io and apiregistration.k8s.io messages. No kubectl sends these kinds as
//! protobuf, so their fixtures are made by `tools/gen_protobuf_extension_fixtures.py` from
//! upstream's `generated.proto` (independently of this encoder): they must decode to the
//! Go JSON they were made from, and that JSON must encode back to the same message.

use serde_json::{Value, json};

use super::*;

/// Fixture pairs: protobuf made from upstream's `generated.proto`, and its Go JSON form.
macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_bytes!(concat!("../../tests/fixtures/protobuf/", $name, ".pb")).as_slice(),
            include_str!(concat!("../../tests/fixtures/protobuf/", $name, ".json")),
        )
    };
}

const FIXTURES: &[(&str, &[u8], &str)] = &[
    fixture!("crd"),
    fixture!("crd_create"),
    fixture!("apiservice"),
    fixture!("apiservice_create"),
];

/// Parses a fixture's JSON (tests only).
fn json_of(name: &str, text: &str) -> Value {
    match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => panic!("{name}: {e}"),
    }
}

/// Decodes, panicking with the error (tests only).
fn decode(name: &str, bytes: &[u8]) -> Value {
    match decode_object(bytes) {
        Ok(v) => v,
        Err(e) => panic!("{name}: decode failed: {e}"),
    }
}

#[test]
fn the_kinds_and_their_lists_have_messages() {
    for (api_version, kind) in [
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinitionList"),
        ("apiextensions.k8s.io/v1", "ConversionReview"),
        ("apiextensions.k8s.io/v1", "DeleteOptions"),
        ("apiregistration.k8s.io/v1", "APIService"),
        ("apiregistration.k8s.io/v1", "APIServiceList"),
        ("apiregistration.k8s.io/v1", "Status"),
    ] {
        assert!(supports_kind(api_version, kind), "{api_version} {kind}");
    }
    assert!(!supports_kind(
        "apiextensions.k8s.io/v1beta1",
        "CustomResourceDefinition"
    ));
}

#[test]
fn upstream_messages_decode_to_their_go_json() {
    for (name, pb, text) in FIXTURES {
        assert_eq!(decode(name, pb), json_of(name, text), "{name}");
    }
}

#[test]
fn go_json_encodes_to_the_same_message() {
    for (name, pb, text) in FIXTURES {
        let json = json_of(name, text);
        let encoded = match encode_object(&json) {
            Ok(b) => b,
            Err(e) => panic!("{name}: encode failed: {e}"),
        };
        // gogo writes non-pointer Go fields even when zero (the fixtures leave them out):
        // compare without zero members.
        assert_eq!(
            without_zeros(&decode(name, &encoded)),
            without_zeros(&decode(name, pb)),
            "{name}"
        );
    }
}

/// `v` without object members that are zero (`null`, `""`, `0`, `false`, or objects of
/// nothing but zeros).
fn without_zeros(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_zeros(v)))
                .filter(|(_, v)| !is_zero(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_zeros).collect()),
        other => other.clone(),
    }
}

/// Whether a (pruned) value is a zero.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Object(map) => map.is_empty(),
        Value::Array(_) => false,
    }
}

/// The schema of property `name` in the `crd` fixture's v1 spec, as decoded.
fn property(crd: &Value, name: &str) -> Value {
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        [name]
        .clone()
}

#[test]
fn schema_unions_take_the_form_go_marshals() {
    let crd = decode("crd", FIXTURES[0].1);
    // JSONSchemaPropsOrBool: a schema when there is one, else the boolean.
    assert_eq!(
        property(&crd, "labels")["additionalProperties"],
        json!({"type": "string"})
    );
    assert_eq!(property(&crd, "closed")["additionalProperties"], false);
    assert_eq!(property(&crd, "tuple")["additionalItems"], true);
    // JSONSchemaPropsOrArray: one schema, or the array of schemas.
    assert_eq!(property(&crd, "tags")["items"], json!({"type": "string"}));
    assert_eq!(
        property(&crd, "tuple")["items"],
        json!([{"type": "string"}, {"type": "integer"}])
    );
    // JSONSchemaPropsOrStringArray: the property names, or a schema.
    assert_eq!(
        property(&crd, "deps")["dependencies"],
        json!({"a": ["b", "c"], "d": {"required": ["e"]}})
    );
    // JSON: embedded values, `null` included; integral doubles are written as Go does.
    assert_eq!(property(&crd, "ratio")["default"], 0.5);
    assert_eq!(property(&crd, "any")["example"], json!({"a": [1, null]}));
    assert_eq!(
        property(&crd, "ports")["items"]["properties"]["protocol"]["enum"],
        json!(["TCP", null])
    );
    assert_eq!(property(&crd, "replicas")["minimum"], json!(1));
    assert_eq!(property(&crd, "misc")["minimum"], json!(-0.001));
}

#[test]
fn union_shapes_go_refuses_are_errors() {
    let crd = |additional: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "a.b"}, "spec": {"versions": [{"name": "v1", "schema": {
                "openAPIV3Schema": {"type": "object", "additionalProperties": additional}}}]}})
    };
    assert!(matches!(
        encode_object(&crd(json!("yes"))),
        Err(ProtobufError::JsonShape { .. })
    ));
    assert!(matches!(
        encode_object(&crd(json!(3))),
        Err(ProtobufError::JsonShape { .. })
    ));
    let items = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "a.b"}, "spec": {"versions": [{"name": "v1", "schema": {
            "openAPIV3Schema": {"type": "array", "items": "string"}}}]}});
    assert!(matches!(
        encode_object(&items),
        Err(ProtobufError::JsonShape { .. })
    ));
}
