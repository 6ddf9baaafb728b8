//! The policies of a Job spec, as upstream's `validatePodFailurePolicy`,
//! `validateSuccessPolicy`, `validatePodReplacementPolicy` and the `managedBy` rules check them.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::indexes;
use crate::error::Cause;
use crate::validation::enums::{self, Order};
use crate::validation::names::{
    NEGATIVE, child, domain_prefixed_path, go_quote, index, invalid_rendered, invalid_value,
    too_long, validate_qualified_name,
};

/// At most this many pod failure policy rules (upstream's `maxPodFailurePolicyRules`).
const MAX_POD_FAILURE_RULES: usize = 20;
/// At most this many exit codes in one `onExitCodes` requirement.
const MAX_EXIT_CODES: usize = 255;
/// At most this many patterns in one `onPodConditions` requirement.
const MAX_POD_CONDITION_PATTERNS: usize = 20;
/// At most this many success policy rules.
const MAX_SUCCESS_RULES: usize = 20;
/// The longest `succeededIndexes` of a success policy rule, in bytes.
const MAX_SUCCEEDED_INDEXES: i64 = 64 * 1024;
/// The longest `managedBy`.
const MAX_MANAGED_BY: i64 = 63;
/// The pod condition statuses a pattern may match.
const CONDITION_STATUSES: [&str; 3] = ["False", "True", "Unknown"];

/// The value at `field` of `obj` unless absent or null.
pub(super) fn set<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get(field).filter(|v| !v.is_null())
}

/// A string field (empty when absent).
fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// A list field (empty when absent).
fn list<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    obj.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Upstream's `field.TooMany`.
pub(super) fn too_many(path: &str, actual: usize, max: usize) -> Cause {
    Cause::new(
        "FieldValueTooMany",
        path,
        format!("Too many: {actual}: must have at most {max} items"),
    )
}

/// `field.Invalid` with an omitted value: `Invalid value: <detail>`.
pub(super) fn invalid_omitted(path: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        path,
        format!("Invalid value: {detail}"),
    )
}

/// Go's `%q` of a sorted string set: `["A" "B"]`.
fn quoted_list(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[{}]", quoted.join(" "))
}

/// Upstream's `validatePodFailurePolicy` for the spec's `podFailurePolicy`.
pub(super) fn pod_failure_policy(spec: &Value, policy: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let rules_path = child(path, "rules");
    let rules = list(policy, "rules");
    if rules.len() > MAX_POD_FAILURE_RULES {
        errs.push(too_many(&rules_path, rules.len(), MAX_POD_FAILURE_RULES));
    }
    let containers: BTreeSet<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|field| {
            crate::meta::path(spec, &format!("template.spec.{field}"))
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
        })
        .map(|c| text(c, "name"))
        .collect();
    for (i, rule) in rules.iter().enumerate() {
        errs.extend(pod_failure_rule(
            spec,
            rule,
            &index(&rules_path, i),
            &containers,
        ));
    }
    errs
}

/// Upstream's `validatePodFailurePolicyRule`.
fn pod_failure_rule(
    spec: &Value,
    rule: &Value,
    path: &str,
    containers: &BTreeSet<&str>,
) -> Vec<Cause> {
    let mut errs = Vec::new();
    let action_path = child(path, "action");
    let action = text(rule, "action");
    if action.is_empty() {
        let detail = format!(
            "valid values: {}",
            quoted_list(&enums::POD_FAILURE_POLICY_ACTION.sorted())
        );
        errs.push(Cause::required(&action_path, &detail));
    } else if action == "FailIndex" {
        if set(spec, "backoffLimitPerIndex").is_none() {
            errs.push(invalid_value(
                &action_path,
                &json!(action),
                "requires the backoffLimitPerIndex to be set",
            ));
        }
    } else if !enums::POD_FAILURE_POLICY_ACTION.contains(action) {
        errs.push(enums::POD_FAILURE_POLICY_ACTION.not_supported(
            &action_path,
            &json!(action),
            Order::Sorted,
        ));
    }
    let on_exit_codes = set(rule, "onExitCodes");
    let patterns = list(rule, "onPodConditions");
    if let Some(requirement) = on_exit_codes {
        errs.extend(on_exit_codes_rule(
            requirement,
            &child(path, "onExitCodes"),
            containers,
        ));
    }
    if !patterns.is_empty() {
        errs.extend(on_pod_conditions(patterns, &child(path, "onPodConditions")));
    }
    match (on_exit_codes.is_some(), patterns.is_empty()) {
        (true, false) => errs.push(invalid_omitted(
            path,
            "specifying both OnExitCodes and OnPodConditions is not supported",
        )),
        (false, true) => errs.push(invalid_omitted(
            path,
            "specifying one of OnExitCodes and OnPodConditions is required",
        )),
        _ => {}
    }
    errs
}

/// Upstream's `validatePodFailurePolicyRuleOnPodConditions`.
fn on_pod_conditions(patterns: &[Value], path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if patterns.len() > MAX_POD_CONDITION_PATTERNS {
        errs.push(too_many(path, patterns.len(), MAX_POD_CONDITION_PATTERNS));
    }
    for (j, pattern) in patterns.iter().enumerate() {
        let pattern_path = index(path, j);
        let kind = text(pattern, "type");
        let type_path = child(&pattern_path, "type");
        for message in validate_qualified_name(kind) {
            errs.push(invalid_value(&type_path, &json!(kind), &message));
        }
        let status_path = child(&pattern_path, "status");
        match text(pattern, "status") {
            "" => errs.push(Cause::required(
                &status_path,
                &format!("valid values: {}", quoted_list(&CONDITION_STATUSES)),
            )),
            status if CONDITION_STATUSES.contains(&status) => {}
            status => {
                let supported: Vec<Value> = CONDITION_STATUSES.iter().map(|s| json!(s)).collect();
                errs.push(Cause::not_supported(
                    &status_path,
                    &json!(status),
                    &supported,
                ));
            }
        }
    }
    errs
}

/// Upstream's `validatePodFailurePolicyRuleOnExitCodes`.
fn on_exit_codes_rule(requirement: &Value, path: &str, containers: &BTreeSet<&str>) -> Vec<Cause> {
    let mut errs = Vec::new();
    let operator_path = child(path, "operator");
    let operator = text(requirement, "operator");
    if operator.is_empty() {
        let detail = format!(
            "valid values: {}",
            quoted_list(&enums::POD_FAILURE_POLICY_ON_EXIT_CODES_OPERATOR.sorted())
        );
        errs.push(Cause::required(&operator_path, &detail));
    } else if !enums::POD_FAILURE_POLICY_ON_EXIT_CODES_OPERATOR.contains(operator) {
        errs.push(
            enums::POD_FAILURE_POLICY_ON_EXIT_CODES_OPERATOR.not_supported(
                &operator_path,
                &json!(operator),
                Order::Sorted,
            ),
        );
    }
    if let Some(name) = set(requirement, "containerName")
        && !containers.contains(name.as_str().unwrap_or(""))
    {
        errs.push(invalid_value(
            &child(path, "containerName"),
            name,
            "must be one of the container or initContainer names in the pod template",
        ));
    }
    let values_path = child(path, "values");
    let values: Vec<i64> = list(requirement, "values")
        .iter()
        .filter_map(Value::as_i64)
        .collect();
    let rendered = match set(requirement, "values") {
        None => "[]int32(nil)".to_string(),
        Some(_) => {
            let items: Vec<String> = values.iter().map(i64::to_string).collect();
            format!("[]int32{{{}}}", items.join(", "))
        }
    };
    if values.is_empty() {
        errs.push(invalid_rendered(
            &values_path,
            &rendered,
            "at least one value is required",
        ));
    } else if values.len() > MAX_EXIT_CODES {
        errs.push(too_many(&values_path, values.len(), MAX_EXIT_CODES));
    }
    let mut seen = BTreeSet::new();
    for (j, value) in values.iter().enumerate() {
        let value_path = index(&values_path, j);
        if operator == "In" && *value == 0 {
            errs.push(invalid_value(
                &value_path,
                &json!(value),
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(*value) {
            errs.push(Cause::duplicate(&value_path, &json!(value)));
        }
    }
    if values.windows(2).any(|w| w[0] > w[1]) {
        errs.push(invalid_rendered(&values_path, &rendered, "must be ordered"));
    }
    errs
}

/// Go's `%#v` of an internal `batch.SuccessPolicy` (set pointers print as an address).
fn render_success_policy(policy: &Value) -> String {
    let rules = match set(policy, "rules") {
        None => "[]batch.SuccessPolicyRule(nil)".to_string(),
        Some(_) => {
            let pointer = |rule: &Value, field: &str, ty: &str| match set(rule, field) {
                Some(_) => format!("({ty})(0xc000000000)"),
                None => format!("({ty})(nil)"),
            };
            let items: Vec<String> = list(policy, "rules")
                .iter()
                .map(|rule| {
                    format!(
                        "batch.SuccessPolicyRule{{SucceededIndexes:{}, SucceededCount:{}}}",
                        pointer(rule, "succeededIndexes", "*string"),
                        pointer(rule, "succeededCount", "*int32")
                    )
                })
                .collect();
            format!("[]batch.SuccessPolicyRule{{{}}}", items.join(", "))
        }
    };
    format!("batch.SuccessPolicy{{Rules:{rules}}}")
}

/// The `successPolicy` rules: only for Indexed Jobs, then upstream's `validateSuccessPolicy`.
pub(super) fn success_policy(spec: &Value, policy: &Value, path: &str) -> Vec<Cause> {
    if text(spec, "completionMode") != "Indexed" {
        return vec![invalid_rendered(
            path,
            &render_success_policy(policy),
            "requires indexed completion mode",
        )];
    }
    let mut errs = Vec::new();
    let rules_path = child(path, "rules");
    let rules = list(policy, "rules");
    if rules.is_empty() {
        errs.push(Cause::required(
            &rules_path,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_SUCCESS_RULES {
        errs.push(too_many(&rules_path, rules.len(), MAX_SUCCESS_RULES));
    }
    let completions = set(spec, "completions").and_then(Value::as_i64);
    for (i, rule) in rules.iter().enumerate() {
        errs.extend(success_rule(rule, completions, &index(&rules_path, i)));
    }
    errs
}

/// Upstream's `validateSuccessPolicyRule` (`completions` is required of Indexed Jobs; without
/// it, the checks against it are skipped).
fn success_rule(rule: &Value, completions: Option<i64>, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let indexes = set(rule, "succeededIndexes");
    let count = set(rule, "succeededCount");
    if indexes.is_none() && count.is_none() {
        errs.push(Cause::required(
            path,
            "at least one of succeededCount or succeededIndexes must be specified",
        ));
    }
    let mut total = 0;
    if let Some(value) = indexes {
        let indexes_path = child(path, "succeededIndexes");
        let text = value.as_str().unwrap_or("");
        if text.len() as i64 > MAX_SUCCEEDED_INDEXES {
            errs.push(too_long(&indexes_path, MAX_SUCCEEDED_INDEXES));
        }
        if let Some(completions) = completions {
            match indexes::validate_format(text, completions) {
                Ok(n) => total = n,
                Err(e) => errs.push(invalid_value(
                    &indexes_path,
                    value,
                    &format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
    }
    if let Some(value) = count {
        let count_path = child(path, "succeededCount");
        let n = value.as_i64().unwrap_or(0);
        if n < 0 {
            errs.push(invalid_value(&count_path, value, NEGATIVE));
        }
        if let Some(completions) = completions.filter(|c| n > *c) {
            errs.push(invalid_value(
                &count_path,
                value,
                &format!(
                    "must be less than or equal to {completions} (the number of specified completions)"
                ),
            ));
        }
        if indexes.is_some() && n > total {
            errs.push(invalid_value(
                &count_path,
                value,
                &format!(
                    "must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"
                ),
            ));
        }
    }
    errs
}

/// Upstream's `validatePodReplacementPolicy`: only `Failed` with a pod failure policy.
pub(super) fn pod_replacement_policy(spec: &Value, path: &str) -> Option<Cause> {
    let policy = set(spec, "podReplacementPolicy")?;
    let text = policy.as_str().unwrap_or("");
    if set(spec, "podFailurePolicy").is_some() {
        return (text != "Failed").then(|| Cause::not_supported(path, policy, &[json!("Failed")]));
    }
    (!enums::POD_REPLACEMENT_POLICY.contains(text))
        .then(|| enums::POD_REPLACEMENT_POLICY.not_supported(path, policy, Order::Sorted))
}

/// The `managedBy` rules: a domain-prefixed path (`IsDomainPrefixedPath`) of at most 63
/// characters.
pub(super) fn managed_by(value: &Value, path: &str) -> Vec<Cause> {
    let text = value.as_str().unwrap_or("");
    let mut errs = domain_prefixed_path(text, path);
    if text.len() as i64 > MAX_MANAGED_BY {
        errs.push(too_long(path, MAX_MANAGED_BY));
    }
    errs
}
