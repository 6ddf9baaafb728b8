use serde_json::json;

use super::*;

/// An object whose `spec` has `rules` and `properties`.
fn spec_schema(rules: Value, properties: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": rules,
                "properties": properties
            }
        }
    })
}

fn widget_schema(rules: Value) -> Value {
    spec_schema(
        rules,
        json!({
            "replicas": {"type": "integer"},
            "name": {"type": "string", "maxLength": 20},
            "items": {
                "type": "array",
                "maxItems": 10,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "maxLength": 10},
                        "size": {
                            "type": "integer",
                            "x-kubernetes-validations": [
                                {"rule": "self >= oldSelf", "message": "size cannot shrink"}
                            ]
                        }
                    }
                }
            }
        }),
    )
}

fn summaries(causes: &[Cause]) -> Vec<String> {
    causes.iter().map(Cause::summary).collect()
}

#[test]
fn failing_rule_reports_message_at_the_node() {
    let s = widget_schema(json!([{"rule": "self.replicas <= 10", "message": "at most 10"}]));
    let causes = validate(&json!({"spec": {"replicas": 11}}), None, &s);
    assert_eq!(summaries(&causes), ["spec: Invalid value: at most 10"]);
    assert_eq!(causes[0].reason, "FieldValueInvalid");
    assert!(validate(&json!({"spec": {"replicas": 3}}), None, &s).is_empty());
}

#[test]
fn default_message_names_the_rule() {
    let s = widget_schema(json!([{"rule": "self.replicas <= 10"}]));
    let causes = validate(&json!({"spec": {"replicas": 11}}), None, &s);
    assert_eq!(
        summaries(&causes),
        ["spec: Invalid value: failed rule: self.replicas <= 10"]
    );
}

#[test]
fn message_expression_field_path_and_reason() {
    let s = widget_schema(json!([{
        "rule": "self.replicas <= 10",
        "messageExpression": "'replicas is ' + string(self.replicas) + ', want at most 10'",
        "fieldPath": ".replicas",
        "reason": "FieldValueForbidden"
    }]));
    let causes = validate(&json!({"spec": {"replicas": 12}}), None, &s);
    assert_eq!(
        summaries(&causes),
        ["spec.replicas: Forbidden: replicas is 12, want at most 10"]
    );
}

#[test]
fn failing_message_expression_falls_back_to_message() {
    let s = widget_schema(json!([{
        "rule": "self.replicas <= 10",
        "message": "fallback",
        "messageExpression": "self.missing"
    }]));
    let causes = validate(&json!({"spec": {"replicas": 12}}), None, &s);
    assert_eq!(summaries(&causes), ["spec: Invalid value: fallback"]);
}

#[test]
fn transition_rules_need_an_old_value() {
    let s = widget_schema(json!([]));
    let new = json!({"spec": {"items": [{"name": "a", "size": 1}, {"name": "b", "size": 5}]}});
    // Create: no old object, the transition rule does not run.
    assert!(validate(&new, None, &s).is_empty());
    // Update: items are matched by their map key, not by position.
    let old = json!({"spec": {"items": [{"name": "b", "size": 4}, {"name": "a", "size": 2}]}});
    let causes = validate(&new, Some(&old), &s);
    assert_eq!(
        summaries(&causes),
        // A scalar's failure shows its value (an object's or a list's would not).
        ["spec.items[0].size: Invalid value: 1: size cannot shrink"]
    );
    // A new item has no old value.
    let old = json!({"spec": {"items": [{"name": "b", "size": 4}]}});
    assert!(validate(&new, Some(&old), &s).is_empty());
}

#[test]
fn root_rules_see_name_but_not_other_metadata() {
    let s = json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('w')", "message": "name must start with w"},
            {"rule": "!has(self.metadata.labels)", "message": "labels are hidden"}
        ],
        "properties": {"spec": {"type": "object"}}
    });
    let ok = json!({"metadata": {"name": "w1", "labels": {"a": "b"}}, "spec": {}});
    assert!(validate(&ok, None, &s).is_empty());
    let bad = json!({"metadata": {"name": "x1"}, "spec": {}});
    assert_eq!(
        summaries(&validate(&bad, None, &s)),
        ["<nil>: Invalid value: name must start with w"]
    );
}

#[test]
fn evaluation_errors_are_reported() {
    let s = widget_schema(json!([{"rule": "self.missing == 1"}]));
    let causes = validate(&json!({"spec": {"replicas": 1}}), None, &s);
    assert_eq!(causes.len(), 1);
    assert!(
        causes[0]
            .message
            .contains("no such key: missing evaluating rule: failed rule: self.missing == 1"),
        "{}",
        causes[0].message
    );
}

#[test]
fn hostile_rules_are_refused_before_running() {
    let s = json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [{
                "rule": "self.l.all(a, self.l.all(b, self.l.all(c, self.l.all(d, a + b + c + d >= 0))))"
            }],
            "properties": {"l": {"type": "array", "items": {"type": "integer"}}}
        }}
    });
    let list: Vec<i64> = (0..1000).collect();
    let started = std::time::Instant::now();
    let causes = validate(&json!({"spec": {"l": list}}), None, &s);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert_eq!(causes.len(), 1);
    assert!(
        causes[0]
            .message
            .contains("call cost exceeds limit for rule"),
        "{}",
        causes[0].message
    );
    // The same rule over a short list runs.
    let causes = validate(&json!({"spec": {"l": [1, 2, 3]}}), None, &s);
    assert!(causes.is_empty(), "{causes:?}");
}

#[test]
fn request_budget_stops_further_rules() {
    // Each rule is under the per-call limit, together they exceed the request budget.
    let rule = "self.all(a, self.all(b, a + b >= 0))";
    let rules: Vec<Value> = (0..40).map(|_| json!({"rule": rule})).collect();
    let s = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "l": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-validations": rules}
        }}}
    });
    // At cel-go's costs one rule over 200 items is about 281k (200 × (2 + 1 + 2 + 200 × 7)),
    // forty of them 11.2M.
    let list: Vec<i64> = (0..200).collect();
    let causes = validate(&json!({"spec": {"l": list}}), None, &s);
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert!(causes[0].message.contains("running out of cost budget"));
}

#[test]
fn crd_check_reports_compile_errors_with_the_rule_path() {
    let s = widget_schema(json!([{"rule": "self.replicas <"}, {"rule": "self.replicas > 0"}]));
    let causes = check_schema(&s, "spec.versions[0].schema.openAPIV3Schema");
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(
        causes[0].field,
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    assert!(
        causes[0]
            .message
            .contains("compilation failed: ERROR: <input>:1:16"),
        "{}",
        causes[0].message
    );
}

#[test]
fn crd_check_rejects_expensive_rules_and_bad_field_paths() {
    let s = json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.l.all(a, self.l.all(b, a != b))"},
                {"rule": "true", "fieldPath": ".nope"}
            ],
            "properties": {"l": {"type": "array", "items": {"type": "string"}}}
        }}
    });
    let causes = summaries(&check_schema(&s, "s"));
    assert_eq!(causes.len(), 2, "{causes:?}");
    assert!(causes[0].starts_with(
        "s.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of"
    ), "{causes:?}");
    assert_eq!(
        causes[1],
        "s.properties[spec].x-kubernetes-validations[1].fieldPath: Invalid value: \".nope\": fieldPath must be a valid path"
    );
    // With maxItems and maxLength the same rule is cheap enough.
    let bounded = json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.l.all(a, self.l.all(b, a != b))"}],
            "properties": {"l": {"type": "array", "maxItems": 100,
                "items": {"type": "string", "maxLength": 64}}}
        }}
    });
    assert!(check_schema(&bounded, "s").is_empty());
}

#[test]
fn string_scans_on_unbounded_strings_fit_the_budget_as_upstream() {
    // cel-go charges a tenth per scanned byte and a quarter per pattern byte: on a string
    // without maxLength (3 MiB) these cost ~2.8M and ~0.3M, under the 10M budget.
    let s = json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')"},
                {"rule": "self.name.startsWith('x') || self.name.lowerAscii() == self.name"},
                {"rule": "!self.name.contains('--')"}
            ],
            "properties": {"name": {"type": "string"}}
        }}
    });
    assert_eq!(summaries(&check_schema(&s, "s")), Vec::<String>::new());
    // A long pattern over an unbounded string still exceeds it (314573 × 35 > 10M).
    let long = format!("self.name.matches('{}')", "a".repeat(140));
    let s = json!({"type": "object", "properties": {"spec": {"type": "object",
        "x-kubernetes-validations": [{"rule": long}],
        "properties": {"name": {"type": "string"}}}}});
    let causes = summaries(&check_schema(&s, "s"));
    assert!(
        causes.len() == 1 && causes[0].contains("exceeds budget"),
        "{causes:?}"
    );
}

#[test]
fn crd_check_rejects_old_self_on_uncorrelatable_items() {
    let s = json!({
        "type": "object",
        "properties": {"l": {"type": "array", "items": {
            "type": "integer",
            "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]
        }}}
    });
    let causes = summaries(&check_schema(&s, "s"));
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert!(
        causes[0].contains("oldSelf cannot be used on the uncorrelatable portion of the schema")
    );
}

/// A schema with rules on a string, on the items of an atomic list and on map-list items.
fn ratchet_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "note": {
                        "type": "string",
                        "x-kubernetes-validations": [
                            {"rule": "self != 'x'", "message": "note must not be x"}
                        ]
                    },
                    "tags": {
                        "type": "array",
                        "items": {
                            "type": "string",
                            "x-kubernetes-validations": [
                                {"rule": "self.size() <= 3", "message": "tag too long", "reason": "FieldValueForbidden"}
                            ]
                        }
                    },
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["port"],
                        "items": {
                            "type": "object",
                            "properties": {"port": {"type": "integer"}, "name": {"type": "string"}},
                            "x-kubernetes-validations": [
                                {"rule": "self.name.size() <= 3", "message": "name too long"}
                            ]
                        }
                    }
                }
            }
        }
    })
}

#[test]
fn failures_on_unchanged_values_are_ratcheted_into_warnings() {
    let s = ratchet_schema();
    let cache = CelCache::default();
    let old = json!({"spec": {
        "note": "x",
        "tags": ["long-tag"],
        "ports": [{"port": 80, "name": "http-alt"}, {"port": 81, "name": "ok"}]
    }});
    // Created like this, every failure is an error; scalars show their value. (Properties
    // are visited in name order.)
    let (causes, warnings) = validate_ratcheted(&old, None, &s, &cache);
    assert_eq!(
        summaries(&causes),
        [
            "spec.note: Invalid value: \"x\": note must not be x",
            "spec.ports[0]: Invalid value: name too long",
            "spec.tags[0]: Forbidden: tag too long",
        ]
    );
    assert!(warnings.is_empty());
    // An update that changes none of it (the ports reordered: map items match by key)
    // enforces nothing and warns about each failure.
    let new = json!({"spec": {
        "note": "x",
        "tags": ["long-tag"],
        "ports": [{"port": 81, "name": "ok"}, {"port": 80, "name": "http-alt"}]
    }});
    let (causes, warnings) = validate_ratcheted(&new, Some(&old), &s, &cache);
    assert!(causes.is_empty(), "{causes:?}");
    assert_eq!(
        warnings,
        [
            "spec.note: Invalid value: \"x\": note must not be x",
            "spec.ports[1]: Invalid value: name too long",
            "spec.tags[0]: Forbidden: tag too long",
        ]
    );
    // Changed values are enforced: items of a list without a list type are not correlated,
    // so a changed list enforces every item's rules.
    let new = json!({"spec": {
        "note": "x",
        "tags": ["long-tag", "a"],
        "ports": [{"port": 80, "name": "http-alt2"}, {"port": 81, "name": "ok"}]
    }});
    let (causes, warnings) = validate_ratcheted(&new, Some(&old), &s, &cache);
    assert_eq!(
        summaries(&causes),
        [
            "spec.ports[0]: Invalid value: name too long",
            "spec.tags[0]: Forbidden: tag too long",
        ]
    );
    assert_eq!(
        warnings,
        ["spec.note: Invalid value: \"x\": note must not be x"]
    );
}

#[test]
fn transition_rules_are_never_ratcheted() {
    let s = widget_schema(
        json!([{"rule": "self.replicas == oldSelf.replicas + 1", "message": "must grow by one"}]),
    );
    let obj = json!({"spec": {"replicas": 3}});
    let (causes, warnings) = validate_ratcheted(&obj, Some(&obj), &s, &CelCache::default());
    assert_eq!(
        summaries(&causes),
        ["spec: Invalid value: must grow by one"]
    );
    assert!(warnings.is_empty());
}

#[test]
fn duplicate_reason_shows_the_value_not_the_message() {
    let s = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"id": {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self != 'a'", "message": "ignored", "reason": "FieldValueDuplicate"}]
        }}}}
    });
    let causes = validate(&json!({"spec": {"id": "a"}}), None, &s);
    assert_eq!(summaries(&causes), ["spec.id: Duplicate value: \"a\""]);
    assert_eq!(causes[0].reason, "FieldValueDuplicate");
}

#[test]
fn optional_syntax_and_string_extension_rules_run() {
    // Each rule holds for the object below; none compiled before: `_?._`, `_[?_]`,
    // `format` and `strings.quote` were unknown to the cost model.
    let rules = [
        "self.?replicas.orValue(0) == 3",
        "!self.items[?5].hasValue()",
        "self.items[?5].?name.orValue('') == ''",
        "self.items[?0].optMap(i, i.name).orValue('') == 'a'",
        // A list literal's elements share one type (or are `dyn`).
        "'%s has %d items'.format([self.name, dyn(self.items.size())]) == 'w has 1 items'",
        "strings.quote(self.name) == '\"w\"'",
        "[?self.?replicas, ?optional.none()] == [3]",
        "{?'r': self.?replicas, ?'x': optional.none()} == {'r': 3}",
    ];
    let s = widget_schema(json!(
        rules.iter().map(|r| json!({"rule": r})).collect::<Vec<_>>()
    ));
    assert!(
        check_schema(&s, "s").is_empty(),
        "{:?}",
        check_schema(&s, "s")
    );
    let causes = validate(
        &json!({"spec": {"replicas": 3, "name": "w", "items": [{"name": "a", "size": 1}]}}),
        None,
        &s,
    );
    assert!(causes.is_empty(), "{:?}", summaries(&causes));
}

fn timing_schema(rules: Value) -> Value {
    spec_schema(
        rules,
        json!({
            "request": {"type": "string", "format": "duration"},
            "backendRequest": {"type": "string", "format": "duration"},
            "notBefore": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "blob": {"type": "string", "format": "byte"},
            "interval": {"type": "string"}
        }),
    )
}

#[test]
fn durations_and_timestamps_are_typed_values_in_rules() {
    // Gateway API's HTTPRoute timeouts rule, as its CRD declares it.
    let s = timing_schema(json!([{
        "rule": "!(has(self.request) && has(self.backendRequest) && duration(self.request) != duration('0s') && duration(self.backendRequest) > duration(self.request))",
        "message": "backendRequest timeout cannot be longer than request timeout"
    }]));
    assert!(
        check_schema(&s, "spec").is_empty(),
        "{:?}",
        check_schema(&s, "spec")
    );
    let ok = json!({"spec": {"request": "10s", "backendRequest": "1s"}});
    assert!(validate(&ok, None, &s).is_empty());
    let bad = json!({"spec": {"request": "1s", "backendRequest": "1m30s"}});
    assert_eq!(
        summaries(&validate(&bad, None, &s)),
        ["spec: Invalid value: backendRequest timeout cannot be longer than request timeout"]
    );
}

#[test]
fn formatted_fields_are_durations_timestamps_and_bytes_in_rules() {
    let rules = json!([
        {"rule": "!has(self.request) || self.request <= duration('1h')", "message": "at most an hour"},
        {"rule": "!has(self.notBefore) || self.notBefore > timestamp('2020-01-01T00:00:00Z')",
         "messageExpression": "'notBefore ' + string(self.notBefore) + ' is too early'"},
        {"rule": "!has(self.day) || self.day.getDayOfWeek() != 0", "message": "no Sundays"},
        {"rule": "!has(self.blob) || size(self.blob) <= 4", "message": "blob too long"},
        {"rule": "!has(self.backendRequest) || !has(self.request) || self.request - self.backendRequest >= duration('0s')",
         "message": "backend longer than request"},
        {"rule": "!has(self.interval) || duration(self.interval) >= duration('1s')",
         "messageExpression": "'interval ' + string(duration(self.interval)) + ' is shorter than 1s'"}
    ]);
    let s = timing_schema(rules);
    assert!(
        check_schema(&s, "spec").is_empty(),
        "{:?}",
        check_schema(&s, "spec")
    );
    let ok = json!({"spec": {"request": "30m", "backendRequest": "10m",
        "notBefore": "2026-01-02T00:00:00Z", "day": "2026-11-30", "blob": "aGk=",
        "interval": "5s"}});
    assert!(
        validate(&ok, None, &s).is_empty(),
        "{:?}",
        validate(&ok, None, &s)
    );
    let bad = json!({"spec": {"request": "2h", "backendRequest": "3h",
        "notBefore": "2019-06-01T12:00:00+02:00", "day": "2026-11-29", "blob": "aGVsbG8=",
        "interval": "500ms"}});
    assert_eq!(
        summaries(&validate(&bad, None, &s)),
        [
            "spec: Invalid value: at most an hour",
            "spec: Invalid value: notBefore 2019-06-01T10:00:00Z is too early",
            "spec: Invalid value: no Sundays",
            "spec: Invalid value: blob too long",
            "spec: Invalid value: backend longer than request",
            "spec: Invalid value: interval 0.5s is shorter than 1s",
        ]
    );
}

/// `type(x) == google.protobuf.Timestamp` compiles and runs as in cel-go, where the standard
/// environment declares the well-known types' names.
#[test]
fn well_known_type_names_compare_with_types() {
    let s = timing_schema(json!([
        {"rule": "!has(self.notBefore) || type(self.notBefore) == google.protobuf.Timestamp",
         "message": "not a timestamp"},
        {"rule": "!has(self.request) || type(self.request) == google.protobuf.Duration",
         "message": "not a duration"},
        {"rule": "!has(self.interval) || type(self.interval) == google.protobuf.Duration",
         "message": "interval is a string"}
    ]));
    assert!(
        check_schema(&s, "spec").is_empty(),
        "{:?}",
        check_schema(&s, "spec")
    );
    let v = json!({"spec": {"notBefore": "2026-01-02T00:00:00Z", "request": "1s",
        "interval": "1s"}});
    assert_eq!(
        summaries(&validate(&v, None, &s)),
        ["spec: Invalid value: interval is a string"]
    );
}

#[test]
fn transition_rules_compare_typed_old_values() {
    let s = timing_schema(json!([{
        "rule": "!has(oldSelf.notBefore) || !has(self.notBefore) || self.notBefore >= oldSelf.notBefore",
        "message": "notBefore may only move later"
    }]));
    let old = json!({"spec": {"notBefore": "2026-01-02T00:00:00Z"}});
    let later = json!({"spec": {"notBefore": "2026-01-02T01:00:00+01:00"}});
    assert!(validate(&later, Some(&old), &s).is_empty());
    let earlier = json!({"spec": {"notBefore": "2026-01-01T23:00:00Z"}});
    assert_eq!(
        summaries(&validate(&earlier, Some(&old), &s)),
        ["spec: Invalid value: notBefore may only move later"]
    );
}

#[test]
fn optional_old_self_rules_run_on_create_with_an_optional() {
    let s = widget_schema(json!([{
        "rule": "oldSelf.hasValue() ? self.replicas >= oldSelf.value().replicas : self.replicas == 1",
        "message": "starts at 1 and never shrinks",
        "optionalOldSelf": true
    }]));
    assert!(
        check_schema(&s, "s").is_empty(),
        "{:?}",
        check_schema(&s, "s")
    );
    let starts = |n: i64| json!({"spec": {"replicas": n}});
    // Without optionalOldSelf a transition rule is skipped on create; with it, it runs.
    assert_eq!(
        summaries(&validate(&starts(2), None, &s)),
        ["spec: Invalid value: starts at 1 and never shrinks"]
    );
    assert!(validate(&starts(1), None, &s).is_empty());
    assert!(validate(&starts(3), Some(&starts(2)), &s).is_empty());
    assert_eq!(
        summaries(&validate(&starts(1), Some(&starts(2)), &s)),
        ["spec: Invalid value: starts at 1 and never shrinks"]
    );
}

#[test]
fn optional_old_self_is_checked_at_crd_time() {
    // Set on a rule that does not read oldSelf: refused as upstream.
    let unused = widget_schema(json!([{"rule": "self.replicas >= 0", "optionalOldSelf": false}]));
    let causes = check_schema(&unused, "s");
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(
        causes[0].field,
        "s.properties[spec].x-kubernetes-validations[0].optionalOldSelf"
    );
    assert_eq!(
        causes[0].message,
        "Invalid value: false: may not be set if oldSelf is not used in rule"
    );
    // oldSelf is an optional: reading a field of it without value() is a type error, and
    // optional methods on a plain oldSelf are too.
    let unwrapped = widget_schema(json!([{
        "rule": "self.replicas >= oldSelf.replicas", "optionalOldSelf": true
    }]));
    let causes = check_schema(&unwrapped, "s");
    assert!(
        causes.len() == 1 && causes[0].message.contains("compilation failed"),
        "{causes:?}"
    );
    let plain = widget_schema(json!([{"rule": "!oldSelf.hasValue() || self.replicas >= 0"}]));
    let causes = check_schema(&plain, "s");
    assert!(
        causes.len() == 1 && causes[0].message.contains("compilation failed"),
        "{causes:?}"
    );
}

/// A rule must be exactly `bool` and a message expression exactly `string`: `dyn` (an
/// int-or-string field, a value of a `dyn` map) is refused, as upstream's compile step
/// compares the checked output type; comparisons of `dyn` values are `bool`.
#[test]
fn dyn_rules_and_message_expressions_are_refused() {
    let schema = |rule: &str, message_expression: &str| {
        spec_schema(
            json!([{"rule": rule, "messageExpression": message_expression}]),
            json!({
                "port": {"x-kubernetes-int-or-string": true},
                "ports": {"type": "object", "maxProperties": 4,
                          "additionalProperties": {"x-kubernetes-int-or-string": true}},
            }),
        )
    };
    let base =
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]";
    for rule in ["self.port", "self.ports['a']", "true ? true : self.port"] {
        let causes = check_schema(
            &schema(rule, "'m'"),
            "spec.versions[0].schema.openAPIV3Schema",
        );
        assert_eq!(causes.len(), 1, "{rule}: {causes:?}");
        assert_eq!(causes[0].field, format!("{base}.rule"));
        assert!(
            causes[0]
                .message
                .ends_with(": cel expression must evaluate to a bool"),
            "{rule}: {}",
            causes[0].message
        );
    }
    let causes = check_schema(
        &schema("self.port == 1", "self.port"),
        "spec.versions[0].schema.openAPIV3Schema",
    );
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(causes[0].field, format!("{base}.messageExpression"));
    assert!(
        causes[0]
            .message
            .ends_with(": messageExpression must evaluate to a string"),
        "{}",
        causes[0].message
    );
    for (rule, message_expression) in [
        ("self.port == 1 || self.port == 'a'", "string(self.port)"),
        ("self.ports['a'] == 1", "'port ' + string(self.ports['a'])"),
        ("type(self.port) == int", "'m'"),
    ] {
        let causes = check_schema(
            &schema(rule, message_expression),
            "spec.versions[0].schema.openAPIV3Schema",
        );
        assert!(causes.is_empty(), "{rule}: {causes:?}");
    }
}
