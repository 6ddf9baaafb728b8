//! Validation of `metav1.LabelSelector` values (`spec.selector` of workloads, PDBs, network
//! policies, …) as upstream's `ValidateLabelSelector`, and the template-matching rule of
//! controllers.

use serde_json::Value;

use crate::error::Cause;
use crate::selector::from_label_selector_json;
use crate::validation::names::{
    child, go_quote, index, invalid_rendered, invalid_value, validate_label_value, validate_labels,
    validate_qualified_name,
};

/// Every cause of an invalid label selector at `path`: `matchLabels` as labels, each
/// `matchExpressions[i]` with a known operator, a valid key, values required by `In`/`NotIn`
/// and forbidden for `Exists`/`DoesNotExist`.
pub(crate) fn validate_label_selector(selector: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let expressions_path = child(path, "matchExpressions");
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (i, requirement) in expressions.iter().enumerate() {
        let at = index(&expressions_path, i);
        let values = requirement
            .get("values")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let operator = requirement.get("operator").cloned().unwrap_or(Value::Null);
        match operator.as_str() {
            Some("In" | "NotIn") if values.is_empty() => errs.push(Cause::required(
                child(&at, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            Some("In" | "NotIn") => {}
            Some("Exists" | "DoesNotExist") if !values.is_empty() => errs.push(Cause::forbidden(
                child(&at, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            Some("Exists" | "DoesNotExist") => {}
            _ => errs.push(invalid_value(
                &child(&at, "operator"),
                &operator,
                "not a valid selector operator",
            )),
        }
        let key = requirement.get("key").and_then(Value::as_str).unwrap_or("");
        for msg in validate_qualified_name(key) {
            errs.push(invalid_rendered(&child(&at, "key"), &go_quote(key), &msg));
        }
        let values_path = child(&at, "values");
        for (j, value) in values.iter().enumerate() {
            let text = value.as_str().unwrap_or("");
            for msg in validate_label_value(text) {
                errs.push(invalid_rendered(
                    &index(&values_path, j),
                    &go_quote(text),
                    &msg,
                ));
            }
        }
    }
    if let Some(labels) = selector.get("matchLabels") {
        errs.extend(validate_labels(labels, &child(path, "matchLabels")));
    }
    errs
}

/// Whether a selector selects nothing in particular (no labels and no expressions).
pub(crate) fn is_empty_selector(selector: &Value) -> bool {
    let count = |field: &str| {
        selector.get(field).map_or(0, |v| {
            v.as_object().map_or(0, |m| m.len()) + v.as_array().map_or(0, |a| a.len())
        })
    };
    count("matchLabels") + count("matchExpressions") == 0
}

/// A controller's `spec.selector` and `spec.template` as upstream's workload validation checks
/// them: the selector is required, valid and not empty (`empty selector is invalid for <what>`),
/// and it selects the template's labels (a missing selector selects nothing, so it fails both).
pub(crate) fn validate_controller_selector(
    spec: &Value,
    spec_path: &str,
    template_path: &str,
    what: &str,
) -> Vec<Cause> {
    let selector_path = child(spec_path, "selector");
    let template = spec.get("template").unwrap_or(&Value::Null);
    let labels = template.get("metadata").and_then(|m| m.get("labels"));
    let mismatch = || {
        invalid_value(
            &child(template_path, "metadata.labels"),
            labels.unwrap_or(&Value::Null),
            "`selector` does not match template `labels`",
        )
    };
    let Some(selector) = spec.get("selector").filter(|s| !s.is_null()) else {
        return vec![Cause::required(selector_path, ""), mismatch()];
    };
    let mut errs = validate_label_selector(selector, &selector_path);
    if is_empty_selector(selector) {
        errs.push(invalid_value(
            &selector_path,
            selector,
            &format!("empty selector is invalid for {what}"),
        ));
        return errs;
    }
    match from_label_selector_json(selector) {
        Err(_) => errs.push(invalid_value(
            &selector_path,
            selector,
            "invalid label selector",
        )),
        Ok(parsed) if !parsed.matches(labels.and_then(Value::as_object)) => errs.push(mismatch()),
        Ok(_) => {}
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    #[test]
    fn expressions_are_checked_as_upstream() {
        let sel = json!({"matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Near"},
            {"key": "-bad", "operator": "NotIn", "values": ["ok", "-no"]},
        ]});
        assert_eq!(
            messages(&validate_label_selector(&sel, "spec.selector")),
            [
                "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "spec.selector.matchExpressions[2].operator: Invalid value: \"Near\": not a valid selector operator",
                "spec.selector.matchExpressions[3].key: Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.selector.matchExpressions[3].values[1]: Invalid value: \"-no\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ]
        );
    }

    #[test]
    fn controllers_need_a_selector_matching_their_template() {
        let spec = |selector: Value, labels: Value| json!({"selector": selector, "template": {"metadata": {"labels": labels}}});
        let ok = spec(
            json!({"matchLabels": {"app": "a"}}),
            json!({"app": "a", "x": "y"}),
        );
        assert!(
            validate_controller_selector(&ok, "spec", "spec.template", "deployment").is_empty()
        );
        let mismatch = spec(json!({"matchLabels": {"app": "a"}}), json!({"app": "b"}));
        assert_eq!(
            messages(&validate_controller_selector(
                &mismatch,
                "spec",
                "spec.template",
                "deployment"
            )),
            [
                "spec.template.metadata.labels: Invalid value: {\"app\":\"b\"}: `selector` does not match template `labels`"
            ]
        );
        let empty = spec(json!({}), json!({"app": "b"}));
        assert_eq!(
            messages(&validate_controller_selector(
                &empty,
                "spec",
                "spec.template",
                "daemonset"
            )),
            ["spec.selector: Invalid value: {}: empty selector is invalid for daemonset"]
        );
        let missing = json!({"template": {}});
        assert_eq!(
            messages(&validate_controller_selector(
                &missing,
                "spec",
                "spec.template",
                "deployment"
            )),
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"
            ]
        );
    }
}
