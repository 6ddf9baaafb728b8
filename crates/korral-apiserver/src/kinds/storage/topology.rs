//! A StorageClass's `allowedTopologies`: upstream's `validateAllowedTopologies` through
//! `ValidateTopologySelectorTerm` and `validateTopologySelectorLabelRequirement`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::error::Cause;
use crate::validation::names::{go_quote, invalid_rendered, validate_qualified_name};

/// A term in raw form: each key with its set of values (upstream's `exprMap`).
type RawTerm<'a> = BTreeMap<&'a str, BTreeSet<&'a str>>;

/// The strings of the list at `field` of `v`.
fn strings<'a>(v: &'a Value, field: &str) -> Vec<&'a str> {
    v.get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| s.as_str().unwrap_or(""))
        .collect()
}

/// `ValidateTopologySelectorTerm` for the term at `path`: each expression has values (no
/// repeats) and a qualified key, no key twice. Returns the term in raw form too.
fn term<'a>(term: &'a Value, path: &str, errs: &mut Vec<Cause>) -> RawTerm<'a> {
    let mut raw = RawTerm::new();
    for (i, expression) in term
        .get("matchLabelExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("{path}.matchLabelExpressions[{i}]");
        let values = strings(expression, "values");
        if values.is_empty() {
            errs.push(Cause::required(format!("{at}.values"), ""));
        }
        let mut set = BTreeSet::new();
        for (j, value) in values.iter().enumerate() {
            if !set.insert(*value) {
                errs.push(Cause::duplicate(format!("{at}.values[{j}]"), &json!(value)));
            }
        }
        let key = expression.get("key").and_then(Value::as_str).unwrap_or("");
        for msg in validate_qualified_name(key) {
            errs.push(invalid_rendered(&format!("{at}.key"), &go_quote(key), &msg));
        }
        if raw.contains_key(key) {
            errs.push(Cause::duplicate(format!("{at}.key"), &json!(key)));
        }
        raw.insert(key, set);
    }
    raw
}

/// `validateAllowedTopologies`: every term valid, no term equal to an earlier one. Upstream
/// seeds its list of seen terms with as many empty ones as there are terms, so a term without
/// expressions is reported once per term (and per earlier empty term) as a duplicate.
pub(super) fn allowed_topologies(class: &Value) -> Vec<Cause> {
    let terms = class
        .get("allowedTopologies")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut errs = Vec::new();
    let mut seen: Vec<RawTerm<'_>> = vec![RawTerm::new(); terms.len()];
    for (i, t) in terms.iter().enumerate() {
        let path = format!("allowedTopologies[{i}]");
        let raw = term(t, &path, &mut errs);
        for earlier in &seen {
            if *earlier == raw {
                errs.push(Cause::duplicate(
                    format!("{path}.matchLabelExpressions"),
                    &json!(""),
                ));
            }
        }
        seen.push(raw);
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    #[test]
    fn topologies_as_upstream() {
        let class = |terms: Value| json!({"allowedTopologies": terms});
        let zone = |values: Value| json!({"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": values}]});
        let table: &[(Value, &[&str])] = &[
            (class(json!([zone(json!(["a"])), zone(json!(["b"]))])), &[]),
            (
                class(json!([zone(json!(["a", "a"]))])),
                &[
                    "allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: \"a\"",
                ],
            ),
            (
                class(json!([zone(json!([]))])),
                &["allowedTopologies[0].matchLabelExpressions[0].values: Required value"],
            ),
            (
                class(json!([zone(json!(["a"])), zone(json!(["a"]))])),
                &["allowedTopologies[1].matchLabelExpressions: Duplicate value: \"\""],
            ),
            (
                class(json!([{"matchLabelExpressions": [
                    {"key": "bad key", "values": ["a"]}, {"key": "bad key", "values": ["b"]}]}])),
                &[
                    "allowedTopologies[0].matchLabelExpressions[0].key: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                    "allowedTopologies[0].matchLabelExpressions[1].key: Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                    "allowedTopologies[0].matchLabelExpressions[1].key: Duplicate value: \"bad key\"",
                ],
            ),
            (
                class(json!([{}])),
                &["allowedTopologies[0].matchLabelExpressions: Duplicate value: \"\""],
            ),
        ];
        for (c, want) in table {
            assert_eq!(summaries(&allowed_topologies(c)), *want, "{c}");
        }
    }
}
