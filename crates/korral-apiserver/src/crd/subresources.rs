//! CRD `subresources` (upstream's `ValidateCustomResourceDefinitionSubresources`: the scale
//! subresource's JSON paths) and what the status subresource asks of the root schema.
//!
//! Upstream does not check the scale paths against the schema when the CRD is written; a path
//! the objects lack only shows when `/scale` is read.

use serde_json::{Value, json};

use super::columns::validate_simple_json_path;
use super::internal::{go_json_string, render_schema, str_of};
use crate::error::Cause;
use crate::validation::names::{child, invalid_rendered};

/// Validates `subresources` at `path`.
pub(crate) fn validate_subresources(subresources: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(scale) = subresources.get("scale").filter(|s| !s.is_null()) else {
        return causes;
    };
    let spec = str_of(scale, "specReplicasPath");
    let field = child(path, "scale.specReplicasPath");
    if spec.is_empty() {
        causes.push(Cause::required(field, ""));
    } else {
        let errs = validate_simple_json_path(spec, &field);
        if !errs.is_empty() {
            causes.extend(errs);
        } else if !spec.starts_with(".spec.") {
            causes.push(Cause::invalid(
                field,
                &json!(spec),
                "should be a json path under .spec",
            ));
        }
    }
    let status = str_of(scale, "statusReplicasPath");
    let field = child(path, "scale.statusReplicasPath");
    if status.is_empty() {
        causes.push(Cause::required(field, ""));
    } else {
        let errs = validate_simple_json_path(status, &field);
        if !errs.is_empty() {
            causes.extend(errs);
        } else if !status.starts_with(".status.") {
            causes.push(Cause::invalid(
                field,
                &json!(status),
                "should be a json path under .status",
            ));
        }
    }
    let selector = str_of(scale, "labelSelectorPath");
    if !selector.is_empty() {
        let field = child(path, "scale.labelSelectorPath");
        let errs = validate_simple_json_path(selector, &field);
        if !errs.is_empty() {
            causes.extend(errs);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            // Upstream's bad value is the `*string`, printed as JSON.
            causes.push(invalid_rendered(
                &field,
                &go_json_string(selector),
                "should be a json path under either .spec or .status",
            ));
        }
    }
    causes
}

/// The root schema fields upstream allows with the status subresource, as its message names
/// them (Go field names).
const ALLOWED_AT_ROOT: [&str; 22] = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

/// The v1 keys of the internal `JSONSchemaProps` fields, in declaration order, with their Go
/// names.
const ROOT_FIELDS: [(&str, &str); 42] = [
    ("id", "ID"),
    ("$schema", "Schema"),
    ("$ref", "Ref"),
    ("description", "Description"),
    ("type", "Type"),
    ("nullable", "Nullable"),
    ("format", "Format"),
    ("title", "Title"),
    ("default", "Default"),
    ("maximum", "Maximum"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("minimum", "Minimum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("maxLength", "MaxLength"),
    ("minLength", "MinLength"),
    ("pattern", "Pattern"),
    ("maxItems", "MaxItems"),
    ("minItems", "MinItems"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("enum", "Enum"),
    ("maxProperties", "MaxProperties"),
    ("minProperties", "MinProperties"),
    ("required", "Required"),
    ("items", "Items"),
    ("allOf", "AllOf"),
    ("oneOf", "OneOf"),
    ("anyOf", "AnyOf"),
    ("not", "Not"),
    ("properties", "Properties"),
    ("additionalProperties", "AdditionalProperties"),
    ("patternProperties", "PatternProperties"),
    ("dependencies", "Dependencies"),
    ("additionalItems", "AdditionalItems"),
    ("definitions", "Definitions"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-embedded-resource", "XEmbeddedResource"),
    ("x-kubernetes-int-or-string", "XIntOrString"),
    ("x-kubernetes-list-map-keys", "XListMapKeys"),
    ("x-kubernetes-list-type", "XListType"),
];

/// Whether a decoded schema field holds its Go zero value (`false`, `""`; a list or map, even
/// empty, is a non-nil value).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// With the status subresource, the root schema may only use fields that survive extracting
/// `properties[status]`; its type must be `object`. `path` is the `openAPIV3Schema`'s.
/// (Upstream walks the internal struct's fields in order and stops at the first offender.)
pub(crate) fn validate_root_for_status(schema: &Value, path: &str) -> Vec<Cause> {
    let extra = [
        ("x-kubernetes-map-type", "XMapType"),
        ("x-kubernetes-validations", "XValidations"),
    ];
    for (key, go_name) in ROOT_FIELDS.iter().chain(extra.iter()) {
        let Some(value) = schema.get(*key) else {
            continue;
        };
        // Pointer fields count when set at all; plain fields when not their zero value.
        let pointer = matches!(
            *go_name,
            "Ref"
                | "Default"
                | "Maximum"
                | "Minimum"
                | "MaxLength"
                | "MinLength"
                | "MaxItems"
                | "MinItems"
                | "MultipleOf"
                | "MaxProperties"
                | "MinProperties"
                | "Items"
                | "Not"
                | "AdditionalProperties"
                | "AdditionalItems"
                | "ExternalDocs"
                | "Example"
                | "XPreserveUnknownFields"
                | "XListType"
                | "XMapType"
        );
        if value.is_null() || (!pointer && is_zero(value)) {
            continue;
        }
        if *go_name == "Type" {
            let t = value.as_str().unwrap_or("");
            if t != "object" {
                return vec![Cause::invalid(
                    child(path, "type"),
                    &json!(t),
                    "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                )];
            }
            continue;
        }
        if !ALLOWED_AT_ROOT.contains(go_name) {
            return vec![invalid_rendered(
                path,
                &render_schema(schema),
                &format!(
                    "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                    ALLOWED_AT_ROOT.join(" ")
                ),
            )];
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The causes of a scale subresource at `spec.subresources`, summarised.
    fn scale(scale: Value) -> Vec<String> {
        validate_subresources(&json!({"scale": scale}), "spec.subresources")
            .iter()
            .map(Cause::summary)
            .collect()
    }

    #[test]
    fn scale_paths_follow_upstream() {
        let p = "spec.subresources.scale";
        let cases: Vec<(Value, Vec<String>)> = vec![
            (
                json!({"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                    "labelSelectorPath": ".status.selector"}),
                vec![],
            ),
            (
                json!({}),
                vec![
                    format!("{p}.specReplicasPath: Required value"),
                    format!("{p}.statusReplicasPath: Required value"),
                ],
            ),
            (
                json!({"specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas",
                       "labelSelectorPath": ".metadata.labels"}),
                vec![
                    format!(
                        "{p}.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec"
                    ),
                    format!(
                        "{p}.statusReplicasPath: Invalid value: \"status.replicas\": must be a simple json path starting with ."
                    ),
                    format!(
                        "{p}.labelSelectorPath: Invalid value: \".metadata.labels\": should be a json path under either .spec or .status"
                    ),
                ],
            ),
            (
                json!({"specReplicasPath": ".spec", "statusReplicasPath": ".status.r"}),
                vec![format!(
                    "{p}.specReplicasPath: Invalid value: \".spec\": should be a json path under .spec"
                )],
            ),
        ];
        for (s, want) in cases {
            assert_eq!(scale(s.clone()), want, "{s}");
        }
        assert!(validate_subresources(&json!({"status": {}}), "x").is_empty());
    }

    #[test]
    fn status_subresource_limits_the_root_schema() {
        let p = "spec.validation.openAPIV3Schema";
        assert!(validate_root_for_status(
            &json!({"type": "object", "properties": {}, "x-kubernetes-preserve-unknown-fields": true}),
            p
        )
        .is_empty());
        let got = validate_root_for_status(&json!({"type": "string"}), p);
        assert_eq!(
            got[0].summary(),
            "spec.validation.openAPIV3Schema.type: Invalid value: \"string\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled"
        );
        let got = validate_root_for_status(
            &json!({"type": "object", "anyOf": [{"required": ["spec"]}]}),
            p,
        );
        assert_eq!(got.len(), 1);
        assert!(
            got[0].message.starts_with("Invalid value: {\"ID\":\"\""),
            "{}",
            got[0].message
        );
        assert!(got[0].message.ends_with(": only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"), "{}", got[0].message);
    }
}
