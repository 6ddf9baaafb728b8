//! Upstream's `pkg/apis/flowcontrol/validation` for FlowSchemas and
//! PriorityLevelConfigurations (as a v1 request is validated: a zero `nominalConcurrencyShares`
//! is allowed), including the fixed specs of the mandatory `exempt` and `catch-all` objects.

use serde_json::{Value, json};

use super::bootstrap::{mandatory_flow_schema, mandatory_priority_level};
use crate::error::Cause;
use crate::meta;
use crate::validation::names::{
    child, dns1123_label, dns1123_subdomain, go_quote, go_string_slice, index, invalid_rendered,
    invalid_value,
};

/// The largest `matchingPrecedence`.
const MAX_MATCHING_PRECEDENCE: i64 = 10_000;

/// The most queues a priority level may have (10^7).
const MAX_QUEUES: i64 = 10_000_000;

/// The most hash bits shuffle sharding may need (`shufflesharding.MaxHashBits`).
const MAX_HASH_BITS: f64 = 60.0;

/// The verbs a rule may name besides `*`, sorted.
const VERBS: [&str; 9] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "proxy",
    "update",
    "watch",
];

/// The prefix of a bad namespace's message.
const NS_INTRO: &str = "each member of this list must be '*' or a DNS-1123 label; ";

/// A value without its `null` members, as Go's typed objects compare (a null pointer is an
/// absent one).
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// The strings of the array at `field` of `obj`.
fn strings(obj: &Value, field: &str) -> Vec<String> {
    meta::strings(obj.get(field))
}

/// The string at `field` of `obj` (empty when absent).
fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// Whether `field` of `obj` is set (present and not null).
fn set(obj: &Value, field: &str) -> bool {
    obj.get(field).is_some_and(|v| !v.is_null())
}

/// The integer at `field` of `obj` (0 when absent, as Go's zero value).
fn int(obj: &Value, field: &str) -> i64 {
    obj.get(field).and_then(Value::as_i64).unwrap_or(0)
}

/// The array at `field` of `obj`.
fn items<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    obj.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A `NotSupported` cause whose value is already rendered.
fn not_supported(field: String, rendered: &str, supported: &[&str]) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
    Cause::new(
        "FieldValueNotSupported",
        field,
        format!(
            "Unsupported value: {rendered}: supported values: {}",
            list.join(", ")
        ),
    )
}

/// Upstream's `ValidateFlowSchema` (object metadata is checked by the store).
pub(super) fn validate_flow_schema(obj: &Value) -> Vec<Cause> {
    let name = meta::name(obj);
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = flow_schema_spec(name, spec);
    if let Some(fixed) = mandatory_flow_schema(name)
        && without_nulls(spec) != fixed
    {
        errs.push(invalid_rendered(
            "spec",
            "\"object\"",
            &format!("spec of '{name}' must equal the fixed value"),
        ));
    }
    errs.extend(validate_status(obj));
    errs
}

/// Upstream's `ValidateFlowSchemaSpec`.
fn flow_schema_spec(name: &str, spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let precedence = int(spec, "matchingPrecedence");
    let at = "spec.matchingPrecedence";
    if precedence <= 0 {
        errs.push(invalid_value(
            at,
            &json!(precedence),
            "must be a positive value",
        ));
    }
    if precedence > MAX_MATCHING_PRECEDENCE {
        errs.push(invalid_value(
            at,
            &json!(precedence),
            &format!("must not be greater than {MAX_MATCHING_PRECEDENCE}"),
        ));
    }
    if precedence == 1 && name != "exempt" {
        errs.push(invalid_value(
            at,
            &json!(precedence),
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(method) = spec.get("distinguisherMethod").filter(|m| !m.is_null()) {
        let kind = text(method, "type");
        if !matches!(kind, "ByNamespace" | "ByUser") {
            errs.push(not_supported(
                "spec.distinguisherMethod.type".to_string(),
                &format!(
                    "flowcontrol.FlowDistinguisherMethod{{Type:{}}}",
                    go_quote(kind)
                ),
                &["ByNamespace", "ByUser"],
            ));
        }
    }
    let level = meta::path(spec, "priorityLevelConfiguration.name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let at = "spec.priorityLevelConfiguration.name";
    if level.is_empty() {
        errs.push(Cause::required(at, "must reference a priority level"));
    } else {
        for msg in dns1123_subdomain(level) {
            errs.push(invalid_value(at, &json!(level), &msg));
        }
    }
    for (i, rule) in items(spec, "rules").iter().enumerate() {
        errs.extend(rule_with_subjects(rule, &index("spec.rules", i)));
    }
    errs
}

/// Upstream's `ValidateFlowSchemaPolicyRulesWithSubjects`.
fn rule_with_subjects(rule: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let subjects = items(rule, "subjects");
    if subjects.is_empty() {
        errs.push(Cause::required(
            child(path, "subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, subject) in subjects.iter().enumerate() {
        errs.extend(validate_subject(
            subject,
            &index(&child(path, "subjects"), i),
        ));
    }
    let (resource, non_resource) = (
        items(rule, "resourceRules"),
        items(rule, "nonResourceRules"),
    );
    if resource.is_empty() && non_resource.is_empty() {
        errs.push(Cause::required(
            path,
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in resource.iter().enumerate() {
        errs.extend(resource_rule(r, &index(&child(path, "resourceRules"), i)));
    }
    for (i, r) in non_resource.iter().enumerate() {
        errs.extend(non_resource_rule(
            r,
            &index(&child(path, "nonResourceRules"), i),
        ));
    }
    errs
}

/// The `Forbidden` cause of a member that does not belong to the subject's kind.
fn other_member(path: &str, member: &str, owner: &str) -> Cause {
    Cause::forbidden(
        child(path, member),
        &format!("{member} is forbidden when subject kind is not '{owner}'"),
    )
}

/// Upstream's `ValidateFlowSchemaSubject`.
fn validate_subject(subject: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let members = [
        ("serviceAccount", "ServiceAccount"),
        ("user", "User"),
        ("group", "Group"),
    ];
    let kind = text(subject, "kind");
    let Some((own, _)) = members.iter().find(|(_, k)| *k == kind) else {
        errs.push(not_supported(
            child(path, "kind"),
            &go_quote(kind),
            &["Group", "ServiceAccount", "User"],
        ));
        return errs;
    };
    let member_path = child(path, own);
    match subject.get(*own).filter(|m| !m.is_null()) {
        None => errs.push(Cause::required(
            member_path.as_str(),
            &format!("{own} is required when subject kind is '{kind}'"),
        )),
        Some(member) if kind == "ServiceAccount" => {
            errs.extend(service_account_subject(member, &member_path));
        }
        Some(member) => {
            if text(member, "name").is_empty() {
                errs.push(Cause::required(child(&member_path, "name"), ""));
            }
        }
    }
    for (member, owner) in members {
        if member != *own && set(subject, member) {
            errs.push(other_member(path, member, owner));
        }
    }
    errs
}

/// Upstream's `ValidateServiceAccountSubject` (of a present member).
fn service_account_subject(member: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let name = text(member, "name");
    if name.is_empty() {
        errs.push(Cause::required(child(path, "name"), ""));
    } else if name != "*" {
        for msg in dns1123_subdomain(name) {
            errs.push(invalid_value(&child(path, "name"), &json!(name), &msg));
        }
    }
    let namespace = text(member, "namespace");
    if namespace.is_empty() {
        errs.push(Cause::required(
            child(path, "namespace"),
            "must specify namespace for service account",
        ));
    } else {
        for msg in dns1123_label(namespace) {
            errs.push(invalid_value(
                &child(path, "namespace"),
                &json!(namespace),
                &msg,
            ));
        }
    }
    errs
}

/// The checks of a rule's `verbs`: present, `*` alone, or known verbs.
fn verbs(rule: &Value, path: &str) -> Vec<Cause> {
    let verbs = strings(rule, "verbs");
    let at = child(path, "verbs");
    if verbs.is_empty() {
        return vec![Cause::required(at, "verbs must contain at least one value")];
    }
    if verbs.iter().any(|v| v == "*") {
        if verbs.len() > 1 {
            return vec![invalid_rendered(
                &at,
                &go_string_slice(&verbs),
                "if '*' is present, must not specify other verbs",
            )];
        }
        return Vec::new();
    }
    if verbs.iter().all(|v| VERBS.contains(&v.as_str())) {
        return Vec::new();
    }
    vec![not_supported(at, &go_string_slice(&verbs), &VERBS)]
}

/// The checks of a list that must not be empty and may hold `*` only alone.
fn wildcard_list(rule: &Value, path: &str, field: &str, required: &str, what: &str) -> Vec<Cause> {
    let values = strings(rule, field);
    let at = child(path, field);
    if values.is_empty() {
        return vec![Cause::required(at, required)];
    }
    if values.len() > 1 && values.iter().any(|v| v == "*") {
        return vec![invalid_rendered(
            &at,
            &go_string_slice(&values),
            &format!("if '*' is present, must not specify other {what}"),
        )];
    }
    Vec::new()
}

/// Upstream's `ValidateFlowSchemaResourcePolicyRule`.
fn resource_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut errs = verbs(rule, path);
    errs.extend(wildcard_list(
        rule,
        path,
        "apiGroups",
        "resource rules must supply at least one api group",
        "api groups",
    ));
    errs.extend(wildcard_list(
        rule,
        path,
        "resources",
        "resource rules must supply at least one resource",
        "resources",
    ));
    let namespaces = strings(rule, "namespaces");
    let at = child(path, "namespaces");
    let cluster_scope = rule.get("clusterScope").and_then(Value::as_bool) == Some(true);
    if namespaces.is_empty() && !cluster_scope {
        errs.push(Cause::required(
            at,
            "resource rules that are not cluster scoped must supply at least one namespace",
        ));
    } else if namespaces.iter().any(|n| n == "*") {
        if namespaces.len() > 1 {
            errs.push(invalid_rendered(
                &at,
                &go_string_slice(&namespaces),
                "if '*' is present, must not specify other namespaces",
            ));
        }
    } else {
        for (i, ns) in namespaces.iter().enumerate() {
            for msg in dns1123_label(ns) {
                errs.push(invalid_value(
                    &index(&at, i),
                    &json!(ns),
                    &format!("{NS_INTRO}{msg}"),
                ));
            }
        }
    }
    errs
}

/// Upstream's `ValidateFlowSchemaNonResourcePolicyRule`.
fn non_resource_rule(rule: &Value, path: &str) -> Vec<Cause> {
    let mut errs = verbs(rule, path);
    let urls = strings(rule, "nonResourceURLs");
    let at = child(path, "nonResourceURLs");
    if urls.is_empty() {
        errs.push(Cause::required(
            at,
            "nonResourceURLs must contain at least one value",
        ));
    } else if urls.iter().any(|u| u == "*") {
        if urls.len() > 1 {
            errs.push(invalid_rendered(
                &at,
                &go_string_slice(&urls),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    } else {
        for (i, url) in urls.iter().enumerate() {
            if let Some(problem) = non_resource_url(url) {
                errs.push(invalid_value(&index(&at, i), &json!(url), problem));
            }
        }
    }
    errs
}

/// Upstream's `ValidateNonResourceURLPath`: what is wrong with a path, if anything.
fn non_resource_url(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        return Some("must not be empty");
    }
    if path == "/" {
        return None;
    }
    if !path.starts_with('/') {
        return Some("must start with slash");
    }
    if path.contains(' ') {
        return Some("must not contain white-space");
    }
    if path.contains("//") {
        return Some("must not contain double slash");
    }
    let wildcards = path.matches('*').count();
    if wildcards > 1 || (wildcards == 1 && !path.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

/// Upstream's `ValidateFlowSchemaStatus` / `ValidatePriorityLevelConfigurationStatus`: condition
/// types present and unique.
pub(super) fn validate_status(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let conditions = meta::path(obj, "status.conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let mut seen: Vec<&str> = Vec::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = index("status.conditions", i);
        let kind = text(condition, "type");
        if seen.contains(&kind) {
            errs.push(Cause::duplicate(child(&at, "type"), &json!(kind)));
        }
        seen.push(kind);
        if kind.is_empty() {
            errs.push(Cause::required(child(&at, "type"), "must not be empty"));
        }
    }
    errs
}

/// Upstream's `ValidatePriorityLevelConfiguration` (object metadata is checked by the store).
pub(super) fn validate_priority_level(obj: &Value) -> Vec<Cause> {
    let name = meta::name(obj);
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    let forbidden_annotation = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares";
    if meta::path(obj, "metadata.annotations")
        .and_then(|a| a.get(forbidden_annotation))
        .is_some()
    {
        errs.push(Cause::forbidden(
            "metadata.annotations",
            &format!("annotation '{forbidden_annotation}' is forbidden"),
        ));
    }
    errs.extend(priority_level_spec(name, spec));
    if let Some(fixed) = mandatory_priority_level(name) {
        let mut have = without_nulls(spec);
        let detail = if name == "exempt" {
            // The exempt level's `exempt` settings may be tuned; nothing else.
            if let Some(map) = have.as_object_mut() {
                match fixed.get("exempt") {
                    Some(e) => map.insert("exempt".into(), e.clone()),
                    None => map.remove("exempt"),
                };
            }
            format!("spec of '{name}' except the 'spec.exempt' field must equal the fixed value")
        } else {
            format!("spec of '{name}' must equal the fixed value")
        };
        if have != fixed {
            errs.push(invalid_rendered("spec", "\"object\"", &detail));
        }
    }
    errs.extend(validate_status(obj));
    errs
}

/// Upstream's `ValidatePriorityLevelConfigurationSpec`.
fn priority_level_spec(name: &str, spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let kind = text(spec, "type");
    if (name == "exempt") != (kind == "Exempt") {
        errs.push(invalid_value(
            "spec.type",
            &json!(kind),
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    match kind {
        "Exempt" => {
            if set(spec, "limited") {
                errs.push(Cause::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(exempt) = spec.get("exempt").filter(|e| !e.is_null()) {
                if let Some(n) = exempt
                    .get("nominalConcurrencyShares")
                    .and_then(Value::as_i64)
                    && n < 0
                {
                    errs.push(invalid_value(
                        "spec.exempt.nominalConcurrencyShares",
                        &json!(n),
                        "must be a non-negative integer",
                    ));
                }
                errs.extend(lendable_percent(exempt, "spec.exempt"));
            }
        }
        "Limited" => {
            if set(spec, "exempt") {
                errs.push(Cause::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            match spec.get("limited").filter(|l| !l.is_null()) {
                None => errs.push(Cause::required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                )),
                Some(limited) => errs.extend(limited_level(limited)),
            }
        }
        _ => errs.push(not_supported(
            "spec.type".to_string(),
            &go_quote(kind),
            &["Exempt", "Limited"],
        )),
    }
    errs
}

/// `lendablePercent`, when set, between 0 and 100.
fn lendable_percent(config: &Value, path: &str) -> Option<Cause> {
    let percent = config.get("lendablePercent").and_then(Value::as_i64)?;
    (!(0..=100).contains(&percent)).then(|| {
        invalid_value(
            &child(path, "lendablePercent"),
            &json!(percent),
            "must be between 0 and 100, inclusive",
        )
    })
}

/// Upstream's `ValidateLimitedPriorityLevelConfiguration` (zero shares allowed, as for v1).
fn limited_level(limited: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let shares = int(limited, "nominalConcurrencyShares");
    if shares < 0 {
        errs.push(invalid_value(
            "spec.limited.nominalConcurrencyShares",
            &json!(shares),
            "must be a non-negative integer",
        ));
    }
    errs.extend(limit_response(
        limited.get("limitResponse").unwrap_or(&Value::Null),
    ));
    errs.extend(lendable_percent(limited, "spec.limited"));
    if let Some(limit) = limited.get("borrowingLimitPercent").and_then(Value::as_i64)
        && limit < 0
    {
        errs.push(invalid_value(
            "spec.limited.borrowingLimitPercent",
            &json!(limit),
            "if specified, must be a non-negative integer",
        ));
    }
    errs
}

/// Upstream's `ValidateLimitResponse`.
fn limit_response(response: &Value) -> Vec<Cause> {
    let path = "spec.limited.limitResponse";
    let queuing = response.get("queuing").filter(|q| !q.is_null());
    match (text(response, "type"), queuing) {
        ("Reject", Some(_)) => vec![Cause::forbidden(
            child(path, "queuing"),
            "must be nil if limited.limitResponse.type is not Limited",
        )],
        ("Reject", None) => Vec::new(),
        ("Queue", None) => vec![Cause::required(
            child(path, "queuing"),
            "must not be empty if limited.limitResponse.type is Limited",
        )],
        ("Queue", Some(queuing)) => queuing_config(queuing, &child(path, "queuing")),
        (other, _) => vec![not_supported(
            child(path, "type"),
            &go_quote(other),
            &["Queue", "Reject"],
        )],
    }
}

/// Upstream's `ValidatePriorityLevelQueuingConfiguration`, with shuffle sharding's entropy
/// bound.
fn queuing_config(queuing: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let limit = int(queuing, "queueLengthLimit");
    if limit <= 0 {
        errs.push(invalid_value(
            &child(path, "queueLengthLimit"),
            &json!(limit),
            "must be positive",
        ));
    }
    let queues = int(queuing, "queues");
    if queues <= 0 {
        errs.push(invalid_value(
            &child(path, "queues"),
            &json!(queues),
            "must be positive",
        ));
    } else if queues > MAX_QUEUES {
        errs.push(invalid_value(
            &child(path, "queues"),
            &json!(queues),
            &format!("must not be greater than {MAX_QUEUES}"),
        ));
    }
    let hand = int(queuing, "handSize");
    let at = child(path, "handSize");
    if hand <= 0 {
        errs.push(invalid_value(&at, &json!(hand), "must be positive"));
    } else if hand > queues {
        errs.push(invalid_value(
            &at,
            &json!(hand),
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if ((queues as f64).log2() * hand as f64).ceil() > MAX_HASH_BITS {
        errs.push(invalid_value(
            &at,
            &json!(hand),
            &format!(
                "required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"
            ),
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &[Cause]) -> Vec<String> {
        errs.iter().map(Cause::summary).collect()
    }

    fn schema(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    fn level(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    #[test]
    fn mandatory_objects_validate() {
        for name in ["exempt", "catch-all"] {
            let fs = schema(name, mandatory_flow_schema(name).expect("fs"));
            assert!(validate_flow_schema(&fs).is_empty(), "{name}");
            let pl = level(name, mandatory_priority_level(name).expect("pl"));
            assert!(validate_priority_level(&pl).is_empty(), "{name}");
        }
        let mut changed = mandatory_flow_schema("catch-all").expect("fs");
        changed["matchingPrecedence"] = json!(9000);
        assert_eq!(
            messages(&validate_flow_schema(&schema("catch-all", changed))),
            vec!["spec: Invalid value: \"object\": spec of 'catch-all' must equal the fixed value"]
        );
        let tuned = json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 7, "lendablePercent": 10}});
        assert!(validate_priority_level(&level("exempt", tuned)).is_empty());
        let limited = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
            "lendablePercent": 0, "limitResponse": {"type": "Reject"}}});
        assert_eq!(
            messages(&validate_priority_level(&level("exempt", limited))),
            vec![
                "spec.type: Invalid value: \"Limited\": type must be 'Exempt' if and only if name is 'exempt'",
                "spec: Invalid value: \"object\": spec of 'exempt' except the 'spec.exempt' field must equal the fixed value",
            ]
        );
    }

    #[test]
    fn flow_schema_rules_as_upstream() {
        let spec = json!({
            "matchingPrecedence": 1,
            "priorityLevelConfiguration": {"name": ""},
            "distinguisherMethod": {"type": "ByFoo"},
            "rules": [
                {"subjects": [], "resourceRules": [], "nonResourceRules": []},
                {"subjects": [
                    {"kind": "ServiceAccount", "serviceAccount": {"name": "", "namespace": ""}, "user": {"name": "u"}},
                    {"kind": "Robot"},
                    {"kind": "User"},
                ],
                 "resourceRules": [{"verbs": ["get", "fly"], "apiGroups": ["*", "apps"], "resources": [], "namespaces": ["Bad"]}],
                 "nonResourceRules": [{"verbs": ["*", "get"], "nonResourceURLs": ["healthz", "/a/*/b"]}]},
            ],
        });
        assert_eq!(
            messages(&validate_flow_schema(&schema("mine", spec))),
            vec![
                "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
                "spec.distinguisherMethod.type: Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:\"ByFoo\"}: supported values: \"ByNamespace\", \"ByUser\"",
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
                "spec.rules[0].subjects: Required value: subjects must contain at least one value",
                "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
                "spec.rules[1].subjects[0].serviceAccount.name: Required value",
                "spec.rules[1].subjects[0].serviceAccount.namespace: Required value: must specify namespace for service account",
                "spec.rules[1].subjects[0].user: Forbidden: user is forbidden when subject kind is not 'User'",
                "spec.rules[1].subjects[1].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"",
                "spec.rules[1].subjects[2].user: Required value: user is required when subject kind is 'User'",
                "spec.rules[1].resourceRules[0].verbs: Unsupported value: []string{\"get\", \"fly\"}: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"",
                "spec.rules[1].resourceRules[0].apiGroups: Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other api groups",
                "spec.rules[1].resourceRules[0].resources: Required value: resource rules must supply at least one resource",
                "spec.rules[1].resourceRules[0].namespaces[0]: Invalid value: \"Bad\": each member of this list must be '*' or a DNS-1123 label; a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.rules[1].nonResourceRules[0].verbs: Invalid value: []string{\"*\", \"get\"}: if '*' is present, must not specify other verbs",
                "spec.rules[1].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"healthz\": must start with slash",
                "spec.rules[1].nonResourceRules[0].nonResourceURLs[1]: Invalid value: \"/a/*/b\": wildcard can only do suffix matching",
            ]
        );
    }

    #[test]
    fn priority_level_rules_as_upstream() {
        let m = |spec: Value| messages(&validate_priority_level(&level("mine", spec)));
        assert_eq!(
            m(
                json!({"type": "Limited", "limited": {"nominalConcurrencyShares": -1,
                "lendablePercent": 101, "borrowingLimitPercent": -2,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 512, "handSize": 8, "queueLengthLimit": 0}}}})
            ),
            vec![
                "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
                "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: 0: must be positive",
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 8: required entropy bits of deckSize 512 and handSize 8 should not be greater than 60",
                "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
                "spec.limited.borrowingLimitPercent: Invalid value: -2: if specified, must be a non-negative integer",
            ]
        );
        assert_eq!(
            m(
                json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                "queuing": {"queues": 7, "handSize": 8, "queueLengthLimit": 1}}}})
            ),
            vec![
                "spec.limited.limitResponse.queuing.handSize: Invalid value: 8: should not be greater than queues (7)"
            ]
        );
        assert_eq!(
            m(
                json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject",
                "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}}}})
            ),
            vec![
                "spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited"
            ]
        );
        assert_eq!(
            m(json!({"type": "Limited"})),
            vec!["spec.limited: Required value: must not be empty when type is Limited"]
        );
        assert_eq!(
            m(json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": -1}})),
            vec![
                "spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'",
                "spec.exempt.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            ]
        );
        assert_eq!(
            m(json!({"type": "Bogus"})),
            vec![
                "spec.type: Unsupported value: \"Bogus\": supported values: \"Exempt\", \"Limited\""
            ]
        );
    }

    #[test]
    fn condition_types_are_required_and_unique() {
        let obj = json!({"status": {"conditions": [{"type": "A"}, {"type": "A"}, {}]}});
        assert_eq!(
            messages(&validate_status(&obj)),
            vec![
                "status.conditions[1].type: Duplicate value: \"A\"",
                "status.conditions[2].type: Required value: must not be empty",
            ]
        );
    }
}
