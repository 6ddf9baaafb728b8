//! `additionalPrinterColumns` of a CRD (upstream's `ValidateCustomResourceColumnDefinition`)
//! and the simple JSON paths columns and scale paths use (`validateSimpleJSONPath`).

use serde_json::{Value, json};

use super::internal::str_of;
use crate::error::Cause;
use crate::validation::names::{child, index};

/// The column types upstream accepts, sorted as its message lists them.
const TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];

/// The column formats upstream accepts, sorted as its message lists them.
const FORMATS: [&str; 8] = [
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// Upstream's `validateSimpleJSONPath`: a path in dot notation starting with `.`.
pub(crate) fn validate_simple_json_path(path: &str, field: &str) -> Vec<Cause> {
    if path.is_empty() {
        vec![Cause::invalid(field, &json!(path), "must not be empty")]
    } else if !path.starts_with('.') {
        vec![Cause::invalid(
            field,
            &json!(path),
            "must be a simple json path starting with .",
        )]
    } else {
        Vec::new()
    }
}

/// Validates a list of printer columns at `path` (one `ValidateCustomResourceColumnDefinition`
/// per column). Upstream checks neither that names are unique nor the priority.
pub(crate) fn validate_columns(columns: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, col) in columns.as_array().into_iter().flatten().enumerate() {
        causes.extend(validate_column(col, &index(path, i)));
    }
    causes
}

/// One printer column.
fn validate_column(col: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if str_of(col, "name").is_empty() {
        causes.push(Cause::required(child(path, "name"), ""));
    }
    let types = format!("must be one of {}", TYPES.join(","));
    match str_of(col, "type") {
        "" => causes.push(Cause::required(child(path, "type"), &types)),
        t if !TYPES.contains(&t) => {
            causes.push(Cause::invalid(child(path, "type"), &json!(t), &types));
        }
        _ => {}
    }
    let format = str_of(col, "format");
    if !format.is_empty() && !FORMATS.contains(&format) {
        causes.push(Cause::invalid(
            child(path, "format"),
            &json!(format),
            &format!("must be one of {}", FORMATS.join(",")),
        ));
    }
    // Upstream names the Go field here: `JSONPath`.
    let json_path = str_of(col, "jsonPath");
    let field = child(path, "JSONPath");
    if json_path.is_empty() {
        causes.push(Cause::required(field, ""));
    } else {
        causes.extend(validate_simple_json_path(json_path, &field));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The causes of one column at `spec.additionalPrinterColumns[0]`, summarised.
    fn check(col: Value) -> Vec<String> {
        validate_columns(&json!([col]), "spec.additionalPrinterColumns")
            .iter()
            .map(Cause::summary)
            .collect()
    }

    #[test]
    fn columns_follow_upstream() {
        let p = "spec.additionalPrinterColumns[0]";
        let cases: Vec<(Value, Vec<String>)> = vec![
            (
                json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
                vec![],
            ),
            (
                json!({"name": "N", "type": "integer", "format": "int32", "jsonPath": ".", "priority": -1}),
                vec![],
            ),
            (
                json!({}),
                vec![
                    format!("{p}.name: Required value"),
                    format!(
                        "{p}.type: Required value: must be one of boolean,date,integer,number,string"
                    ),
                    format!("{p}.JSONPath: Required value"),
                ],
            ),
            (
                json!({"name": "X", "type": "float", "format": "uuid", "jsonPath": "spec.x"}),
                vec![
                    format!(
                        "{p}.type: Invalid value: \"float\": must be one of boolean,date,integer,number,string"
                    ),
                    format!(
                        "{p}.format: Invalid value: \"uuid\": must be one of byte,date,date-time,double,float,int32,int64,password"
                    ),
                    format!(
                        "{p}.JSONPath: Invalid value: \"spec.x\": must be a simple json path starting with ."
                    ),
                ],
            ),
        ];
        for (col, want) in cases {
            assert_eq!(check(col.clone()), want, "{col}");
        }
    }

    #[test]
    fn simple_json_paths() {
        assert!(validate_simple_json_path(".spec.replicas", "f").is_empty());
        assert_eq!(
            validate_simple_json_path("", "f")[0].summary(),
            "f: Invalid value: \"\": must not be empty"
        );
    }
}
