//! CEL in CRD validation rules beyond the core: cel-go's list extension (version 3, enabled
//! by Kubernetes since 1.34), two-variable comprehensions (1.32), the optional library's list
//! functions, and the static cost estimate at cel-go's factors at the budget boundary: each
//! expected estimate is computed by hand from cel-go's formulas (`checker/cost.go`,
//! `ext/lists.go`), where identifiers and field selections cost 1, constants 0, a call its
//! arguments plus its own cost, and a comprehension its range and initial value, then per
//! iteration its condition and step, then its result.

mod common;

use common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

const GROUP: &str = "lists.example.org";

fn crd(kind: &str, plural: &str, spec_schema: Value) -> Value {
    spec_crd(GROUP, kind, plural, spec_schema)
}

fn api(env: &TestEnv, kind: &str, plural: &str) -> Api<DynamicObject> {
    spec_api(env, GROUP, kind, plural)
}

fn obj(kind: &str, name: &str, spec: Value) -> DynamicObject {
    spec_object(GROUP, kind, name, spec)
}

/// Creates the CRD, answering the causes of a refusal (empty when created).
async fn create_crd(env: &TestEnv, doc: Value) -> Vec<(String, String, String)> {
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let crd: CustomResourceDefinition = serde_json::from_value(doc).expect("crd");
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {
            // Created: wait until it is established.
            env.install_crd(crd).await.expect("established");
            Vec::new()
        }
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "{s:?}");
            s.details
                .map(|d| {
                    d.causes
                        .into_iter()
                        .map(|c| (c.reason, c.field, c.message))
                        .collect()
                })
                .unwrap_or_default()
        }
        Err(other) => panic!("{other:?}"),
    }
}

/// The messages of a refused write.
fn messages(err: kube::Error) -> Vec<String> {
    match err {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 422, "{s:?}");
            s.details
                .map(|d| d.causes.into_iter().map(|c| c.message).collect())
                .unwrap_or_default()
        }
        other => panic!("not an API error: {other:?}"),
    }
}

fn roster_spec() -> Value {
    let name = json!({"type": "string", "maxLength": 63});
    json!({
        "type": "object",
        "properties": {
            "l": {"type": "array", "maxItems": 100, "items": {"type": "integer"}},
            "names": {"type": "array", "maxItems": 50, "items": name},
            "m": {"type": "object", "maxProperties": 20, "additionalProperties": {"type": "integer"}},
            "from": {"type": "integer"}, "to": {"type": "integer"},
        },
        "x-kubernetes-validations": [
            {"rule": "self.names.distinct().size() == self.names.size()", "message": "names must be unique"},
            {"rule": "self.l.sort() == self.l", "message": "l must be sorted"},
            {"rule": "self.l.reverse().first().orValue(0) <= 100", "message": "last must be at most 100"},
            {"rule": "self.l.all(i, v, i == 0 || self.l[i - 1] != v)", "message": "no adjacent duplicates"},
            {"rule": "!self.l.exists(i, v, v == 0) || self.l.existsOne(i, v, v == 0)", "message": "at most one zero"},
            {"rule": "self.m.transformList(k, v, v).sum() <= 100", "message": "map total at most 100"},
            {"rule": "self.names.size() == 0 || self.names.sortBy(n, -n.size())[0].size() <= 10", "message": "names at most 10 long"},
            {"rule": "self.m.transformMap(k, v, v * 2).all(k, v, v % 2 == 0) && self.m.transformMapEntry(k, v, {k + '!': v}).size() == self.m.size()", "message": "transforms"},
            {"rule": "lists.range(3) == [0, 1, 2] && [[1, 2], [3]].flatten() == [1, 2, 3] && [[[1], [2]], [[3]]].flatten(2) == [1, 2, 3] && [1, 2, 3, 4].slice(1, 3) == [2, 3]", "message": "constants"},
            {"rule": "!has(self.from) || self.l.slice(self.from, self.to).size() >= 0", "message": "slice"},
        ]
    })
}

#[tokio::test]
async fn list_extension_and_two_variable_comprehensions_in_rules() {
    let env = TestEnv::start().await.expect("env");
    // Refused as undeclared functions or unknown macros before the extensions existed.
    let causes = create_crd(&env, crd("Roster", "rosters", roster_spec())).await;
    assert!(causes.is_empty(), "{causes:?}");
    let rosters = api(&env, "Roster", "rosters");
    let good = json!({"l": [0, 1, 5, 9], "names": ["ann", "bob"], "m": {"a": 1, "b": 2}});
    rosters
        .create(&PostParams::default(), &obj("Roster", "good", good.clone()))
        .await
        .expect("valid roster");
    let cases = [
        (json!({"names": ["ann", "ann"]}), "names must be unique"),
        (json!({"l": [1, 0]}), "l must be sorted"),
        (json!({"l": [1, 101]}), "last must be at most 100"),
        (json!({"l": [1, 2, 2]}), "no adjacent duplicates"),
        (json!({"m": {"a": 60, "b": 50}}), "map total at most 100"),
        (
            json!({"names": ["ann", "bartholomew"]}),
            "names at most 10 long",
        ),
    ];
    for (i, (change, message)) in cases.into_iter().enumerate() {
        let mut spec = good.clone();
        for (k, v) in change.as_object().expect("object") {
            spec[k] = v.clone();
        }
        let err = rosters
            .create(
                &PostParams::default(),
                &obj("Roster", &format!("bad-{i}"), spec),
            )
            .await
            .expect_err(message);
        let found = messages(err);
        assert!(
            found.contains(&format!("Invalid value: {message}")),
            "{message}: {found:?}"
        );
    }
    // An evaluation error carries cel-go's message.
    let mut spec = good.clone();
    spec["from"] = json!(2);
    spec["to"] = json!(1);
    let err = rosters
        .create(&PostParams::default(), &obj("Roster", "unsliceable", spec))
        .await
        .expect_err("bad slice");
    let found = messages(err);
    assert!(
        found.iter().any(|m| m.ends_with(
            "cannot slice(2, 1), start index must be less than or equal to end index evaluating rule: slice"
        )),
        "{found:?}"
    );
}

#[tokio::test]
async fn list_extension_misuse_fails_to_compile() {
    let env = TestEnv::start().await.expect("env");
    for (i, (rule, error)) in [
        (
            "self.l.slice('a', 1).size() == 0",
            "found no matching overload for 'slice'",
        ),
        (
            "self.l.flatten(1, 2).size() == 0",
            "found no matching overload for 'flatten'",
        ),
        (
            "lists.range('a').size() == 0",
            "found no matching overload for 'lists.range'",
        ),
        ("self.l.all(i, i, true)", "duplicate variable name: i"),
        (
            "self.l.transformList(i, 1, i)",
            "argument must be a simple name",
        ),
        // Kubernetes type-checks with homogeneous aggregate literals.
        (
            "[1, [2, [3]]].flatten(2).size() == 3",
            "expected type 'int' but found 'list(",
        ),
        (
            "self.l.all(x, string(x).matches('['))",
            "invalid matches argument",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let spec = json!({"type": "object",
            "properties": {"l": {"type": "array", "maxItems": 10, "items": {"type": "integer"}}},
            "x-kubernetes-validations": [{"rule": rule}]});
        let causes = create_crd(&env, crd(&format!("Bad{i}"), &format!("bads{i}"), spec)).await;
        assert_eq!(causes.len(), 1, "{rule}: {causes:?}");
        assert!(
            causes[0].2.contains("compilation failed: ") && causes[0].2.contains(error),
            "{rule}: {causes:?}"
        );
    }
}

/// A schema whose `spec` has list `l` of `maxItems` items, the rule at `spec`.
fn list_rule_spec(rule: &str, max_items: u64, items: Value) -> Value {
    json!({"type": "object",
        "properties": {"l": {"type": "array", "maxItems": max_items, "items": items}},
        "x-kubernetes-validations": [{"rule": rule}]})
}

/// Asserts the rule is accepted at `ok_size` and refused as too expensive at `over_size`.
async fn boundary(
    env: &TestEnv,
    name: &str,
    make: impl Fn(u64) -> Value,
    ok_size: u64,
    over_size: u64,
) {
    let causes = create_crd(
        env,
        crd(
            &format!("{name}Ok"),
            &format!("{}oks", name.to_lowercase()),
            make(ok_size),
        ),
    )
    .await;
    assert!(causes.is_empty(), "{name} at {ok_size}: {causes:?}");
    let causes = create_crd(
        env,
        crd(
            &format!("{name}Over"),
            &format!("{}overs", name.to_lowercase()),
            make(over_size),
        ),
    )
    .await;
    assert_eq!(causes.len(), 1, "{name} at {over_size}: {causes:?}");
    assert_eq!(causes[0].0, "FieldValueForbidden", "{causes:?}");
    assert!(
        causes[0]
            .2
            .starts_with("Forbidden: estimated rule cost exceeds budget by factor of 1.0x"),
        "{name} at {over_size}: {causes:?}"
    );
}

#[tokio::test]
async fn static_estimates_match_upstream_at_the_budget_boundary() {
    let env = TestEnv::start().await.expect("env");
    let pair = |max_length: u64| {
        let text = json!({"type": "string", "maxLength": max_length});
        json!({"type": "object", "properties": {"a": text, "b": text}})
    };
    // Equality of strings, 0.1 a unit of the smaller, a string of maxLength L sized 4L
    // (upstream's `estimateMaxElementsFromMaxLength`): self.l (2), init 0, per item cond
    // `@not_strictly_false(@result)` 2 + step (@result 1 + x.a 2 + x.b 2 + ceil(0.4 × L)),
    // result 1: 3 + 1000 × (7 + ceil(0.4 × L)). L = 24 980: 3 + 1000 × 9 999 = 9 999 003
    // (accepted); L = 24 985: 3 + 1000 × 10 001 = 10 001 003 (refused).
    boundary(
        &env,
        "Equal",
        |l| list_rule_spec("self.l.all(x, x.a == x.b)", 1000, pair(l)),
        24_980,
        24_985,
    )
    .await;
    // Concatenation of strings, 0.1 a unit of both: per item 2 + (@result 1 + `>` 1 +
    // size() 1 + x.a 2 + x.b 2 + ceil(0.1 × 8L)): 3 + 1000 × (9 + ceil(0.8 × L)).
    // L = 12 487: ceil(9 989.6) = 9 990, 9 999 003 (accepted); L = 12 490: 10 001 003.
    boundary(
        &env,
        "Concat",
        |l| list_rule_spec("self.l.all(x, (x.a + x.b).size() > 0)", 1000, pair(l)),
        12_487,
        12_490,
    )
    .await;
    // sort (ext.Lists v3): 2 × n² + 1 + 10, plus self.l 2, index 1, `>=` 1: 2n² + 15.
    // n = 2236: 9 999 407 (accepted); n = 2237: 10 008 353 (refused).
    let int = json!({"type": "integer"});
    boundary(
        &env,
        "Sort",
        |n| list_rule_spec("self.l.sort()[0] >= 0", n, int.clone()),
        2236,
        2237,
    )
    .await;
    // A two-variable comprehension: range self.l 2, init 0, per item cond 2 + step
    // (@result 1 + `i == 0` (1 + 0 + 1) + `v != self.l[i - 1]` (v 1 + self.l 2 + `i - 1` 2 +
    // index 1 + 0: both sides are items of an integer list, sized 0 by their path)),
    // result 1: 3 + 11n. n = 909 090: 9 999 993; n = 909 091: 10 000 004.
    boundary(
        &env,
        "Pairs",
        |n| {
            list_rule_spec(
                "self.l.all(i, v, i == 0 || v != self.l[i - 1])",
                n,
                int.clone(),
            )
        },
        909_090,
        909_091,
    )
    .await;
    // Membership in a list, 1 an element: self.l 2 + 1 a literal... `1 in self.l`: 0 + 2 + n.
    // Inside `self.l.all(x, x in self.l)`: 3 + n × (2 + 1 + 1 + 2 + n) = 3 + n(n + 6).
    // n = 3159: 3 + 3159 × 3165 = 9 998 238; n = 3160: 3 + 3160 × 3166 = 10 004 563.
    boundary(
        &env,
        "Member",
        |n| list_rule_spec("self.l.all(x, x in self.l)", n, int.clone()),
        3159,
        3160,
    )
    .await;
}
