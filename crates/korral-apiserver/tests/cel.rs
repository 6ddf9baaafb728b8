//! CEL validation rules (`x-kubernetes-validations`) through kube-rs: rule failures as 422 with
//! field paths, messages and message expressions, transition rules, CRD-time compile and cost
//! checks, and hostile rules that must neither hang the server nor change anything.

mod common;

use std::time::{Duration, Instant};

use common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const GROUP: &str = "cel.example.org";

fn crd(kind: &str, plural: &str, spec_schema: Value) -> Value {
    spec_crd(GROUP, kind, plural, spec_schema)
}

fn api(env: &TestEnv, kind: &str, plural: &str) -> Api<DynamicObject> {
    spec_api(env, GROUP, kind, plural)
}

fn obj(kind: &str, name: &str, spec: Value) -> DynamicObject {
    spec_object(GROUP, kind, name, spec)
}

async fn install(env: &TestEnv, doc: Value) {
    let crd: CustomResourceDefinition = serde_json::from_value(doc).expect("crd");
    env.install_crd(crd).await.expect("install crd");
}

fn status(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(s) => *s,
        other => panic!("not an API error: {other:?}"),
    }
}

fn causes(s: &kube::core::Status) -> Vec<(String, String, String)> {
    s.details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.reason.clone(), c.field.clone(), c.message.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Each case's change of the valid spec `good` is refused by a rule with `message` on `spec`
/// (422, `FieldValueInvalid`).
async fn refused_on_spec<const N: usize>(
    api: &Api<DynamicObject>,
    kind: &str,
    good: &Value,
    cases: [(Value, &str); N],
) {
    for (i, (change, message)) in cases.into_iter().enumerate() {
        let mut spec = good.clone();
        for (k, v) in change.as_object().expect("object") {
            spec[k] = v.clone();
        }
        let err = api
            .create(
                &PostParams::default(),
                &obj(kind, &format!("bad-{i}"), spec),
            )
            .await
            .expect_err(message);
        let s = status(err);
        assert_eq!(s.code, 422, "{message}");
        let expected = (
            "FieldValueInvalid".to_string(),
            "spec".to_string(),
            format!("Invalid value: {message}"),
        );
        assert!(
            causes(&s).contains(&expected),
            "{message}: {:?}",
            causes(&s)
        );
    }
}

fn gadget_spec() -> Value {
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.replicas <= 10", "message": "at most 10"},
            {"rule": "self.replicas >= oldSelf.replicas", "message": "replicas cannot decrease"},
            {
                "rule": "!has(self.mode) || self.mode != 'off' || self.replicas == 0",
                "messageExpression": "'mode off needs 0 replicas, got ' + string(self.replicas)",
                "fieldPath": ".mode",
                "reason": "FieldValueForbidden"
            }
        ],
        "properties": {
            "replicas": {"type": "integer"},
            "mode": {"type": "string", "maxLength": 16}
        }
    })
}

#[tokio::test]
async fn rules_reject_with_upstream_status_and_change_nothing() {
    let env = TestEnv::start().await.expect("env");
    install(&env, crd("Gadget", "gadgets", gadget_spec())).await;
    let gadgets = api(&env, "Gadget", "gadgets");
    // Matches the reference capture error-422-cel.json (Widget there).
    let err = gadgets
        .create(
            &PostParams::default(),
            &obj("Gadget", "g1", json!({"replicas": 11})),
        )
        .await
        .expect_err("rule fails");
    let s = status(err);
    assert_eq!(s.code, 422);
    assert_eq!(s.reason, "Invalid");
    assert_eq!(
        s.message,
        "Gadget.cel.example.org \"g1\" is invalid: spec: Invalid value: at most 10"
    );
    assert_eq!(
        causes(&s),
        [(
            "FieldValueInvalid".to_string(),
            "spec".to_string(),
            "Invalid value: at most 10".to_string()
        )]
    );
    // Nothing was stored.
    assert!(gadgets.get_opt("g1").await.expect("get").is_none());

    // messageExpression, fieldPath and reason.
    let err = gadgets
        .create(
            &PostParams::default(),
            &obj("Gadget", "g2", json!({"replicas": 3, "mode": "off"})),
        )
        .await
        .expect_err("rule fails");
    let s = status(err);
    assert_eq!(
        causes(&s),
        [(
            "FieldValueForbidden".to_string(),
            "spec.mode".to_string(),
            "Forbidden: mode off needs 0 replicas, got 3".to_string()
        )]
    );

    // Transition rule: not evaluated on create, evaluated on update (patch and put).
    let created = gadgets
        .create(
            &PostParams::default(),
            &obj("Gadget", "g3", json!({"replicas": 5})),
        )
        .await
        .expect("create");
    let rv = created.metadata.resource_version.clone();
    let err = gadgets
        .patch(
            "g3",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await
        .expect_err("decrease rejected");
    let s = status(err);
    assert_eq!(s.code, 422);
    assert_eq!(
        causes(&s),
        [(
            "FieldValueInvalid".to_string(),
            "spec".to_string(),
            "Invalid value: replicas cannot decrease".to_string()
        )]
    );
    let mut replaced = created.clone();
    replaced.data["spec"]["replicas"] = json!(1);
    let err = gadgets
        .replace("g3", &PostParams::default(), &replaced)
        .await
        .expect_err("decrease rejected");
    assert_eq!(status(err).code, 422);
    let current = gadgets.get("g3").await.expect("get");
    assert_eq!(
        current.metadata.resource_version, rv,
        "rejected writes changed nothing"
    );
    assert_eq!(current.data["spec"]["replicas"], 5);
    gadgets
        .patch(
            "g3",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}})),
        )
        .await
        .expect("increase allowed");
}

#[tokio::test]
async fn crd_with_broken_or_expensive_rules_is_rejected() {
    let env = TestEnv::start().await.expect("env");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let broken = crd(
        "Broken",
        "brokens",
        json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.replicas <"}],
               "properties": {"replicas": {"type": "integer"}}}),
    );
    let err = crds
        .create(
            &PostParams::default(),
            &serde_json::from_value(broken).expect("crd"),
        )
        .await
        .expect_err("compile error");
    let s = status(err);
    assert_eq!(s.code, 422);
    let c = causes(&s);
    assert_eq!(c.len(), 1, "{c:?}");
    // One version: upstream's internal type holds its schema at spec level.
    assert_eq!(
        c[0].1,
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    assert!(
        c[0].2.contains("compilation failed: ERROR: <input>:1:16"),
        "{}",
        c[0].2
    );

    let expensive = crd(
        "Costly",
        "costlies",
        json!({"type": "object",
               "x-kubernetes-validations": [{"rule": "self.l.all(a, self.l.all(b, self.l.all(c, a + b + c > 0)))"}],
               "properties": {"l": {"type": "array", "items": {"type": "integer"}}}}),
    );
    let err = crds
        .create(
            &PostParams::default(),
            &serde_json::from_value(expensive).expect("crd"),
        )
        .await
        .expect_err("too expensive");
    let s = status(err);
    assert_eq!(s.code, 422);
    let c = causes(&s);
    assert_eq!(c[0].0, "FieldValueForbidden");
    assert!(
        c[0].2
            .starts_with("Forbidden: estimated rule cost exceeds budget by factor of"),
        "{}",
        c[0].2
    );
    // Neither CRD exists.
    assert!(
        crds.get_opt("brokens.cel.example.org")
            .await
            .expect("get")
            .is_none()
    );
    assert!(
        crds.get_opt("costlies.cel.example.org")
            .await
            .expect("get")
            .is_none()
    );
}

#[tokio::test]
async fn hostile_rules_are_bounded_at_runtime() {
    let env = TestEnv::start().await.expect("env");
    // Under the static per-rule limit thanks to maxItems/maxLength, yet over the per-call limit
    // for the largest inputs: the bound computed from the actual object decides.
    install(
        &env,
        crd(
            "Trap",
            "traps",
            json!({"type": "object",
                   "x-kubernetes-validations": [
                       {"rule": "self.l.all(a, self.l.all(b, a + b >= 0))", "message": "quadratic"},
                       {"rule": "self.s.replace('a', self.s).replace('a', self.s).size() > 0", "message": "cubic string"}
                   ],
                   "properties": {
                       "l": {"type": "array", "maxItems": 500, "items": {"type": "integer"}},
                       "s": {"type": "string", "maxLength": 24}
                   }}),
        ),
    )
    .await;
    let traps = api(&env, "Trap", "traps");
    // Small input: both rules run and hold.
    traps
        .create(
            &PostParams::default(),
            &obj("Trap", "small", json!({"l": [1, 2, 3], "s": "abc"})),
        )
        .await
        .expect("small input is fine");
    // The largest input the schema admits: refused fast, with the cost message, nothing stored.
    let list: Vec<i64> = (0..500).collect();
    let started = Instant::now();
    let err = traps
        .create(
            &PostParams::default(),
            &obj("Trap", "big", json!({"l": list, "s": "a".repeat(24)})),
        )
        .await
        .expect_err("over the cost limit");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let s = status(err);
    assert_eq!(s.code, 422);
    let messages: Vec<String> = causes(&s).into_iter().map(|c| c.2).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("call cost exceeds limit for rule: quadratic")),
        "{messages:?}"
    );
    assert!(traps.get_opt("big").await.expect("get").is_none());
    // The server still answers promptly.
    let started = Instant::now();
    traps.get("small").await.expect("get");
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// A spec schema whose rules use each Kubernetes CEL library (IP and CIDR, URLs, quantity,
/// lists, regex, sets, named formats, semver).
fn endpoint_spec() -> Value {
    let string = json!({"type": "string"});
    json!({
        "type": "object",
        "properties": {
            "address": string, "network": string, "url": string, "memory": string,
            "version": string, "log": string, "name": {"type": "string", "maxLength": 63},
            "tags": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 64}},
        },
        "x-kubernetes-validations": [
            {"rule": "isIP(self.address) && ip(self.address).family() == 4", "message": "address must be IPv4"},
            {"rule": "!has(self.network) || cidr(self.network).containsIP(self.address)", "message": "address outside network"},
            {"rule": "!has(self.url) || (isURL(self.url) && url(self.url).getScheme() == 'https')", "message": "url must be https"},
            {"rule": "!has(self.memory) || quantity(self.memory).isLessThan(quantity('1Gi'))", "message": "memory must be under 1Gi"},
            {"rule": "!has(self.tags) || self.tags.isSorted()", "message": "tags must be sorted"},
            {"rule": "!has(self.log) || self.log.findAll('[0-9]+').size() <= 2", "message": "at most two numbers"},
            {"rule": "!has(self.tags) || !sets.intersects(self.tags, ['forbidden'])", "message": "forbidden tag"},
            {"rule": "!has(self.name) || !format.dns1123Label().validate(self.name).hasValue()", "message": "name must be a DNS label"},
            {"rule": "!has(self.version) || semver(self.version).isGreaterThan(semver('1.0.0'))", "message": "version must be above 1.0.0"},
        ]
    })
}

#[tokio::test]
async fn kubernetes_libraries_are_available_to_rules() {
    let env = TestEnv::start().await.expect("env");
    // Refused as undeclared functions before the libraries existed.
    install(&env, crd("Endpoint", "endpoints", endpoint_spec())).await;
    let endpoints = api(&env, "Endpoint", "endpoints");
    let good = json!({"address": "10.1.2.3", "network": "10.0.0.0/8", "url": "https://example.org/x",
        "memory": "512Mi", "tags": ["a", "b"], "log": "took 12 ms", "name": "web-1", "version": "1.2.3"});
    endpoints
        .create(
            &PostParams::default(),
            &obj("Endpoint", "good", good.clone()),
        )
        .await
        .expect("valid endpoint");
    let cases = [
        (json!({"address": "fe80::1"}), "address must be IPv4"),
        (
            json!({"network": "192.168.0.0/16"}),
            "address outside network",
        ),
        (json!({"url": "http://example.org"}), "url must be https"),
        (json!({"memory": "2Gi"}), "memory must be under 1Gi"),
        (json!({"tags": ["b", "a"]}), "tags must be sorted"),
        (json!({"log": "1 2 3"}), "at most two numbers"),
        (json!({"tags": ["forbidden"]}), "forbidden tag"),
        (json!({"name": "Web_1"}), "name must be a DNS label"),
        (json!({"version": "0.9.0"}), "version must be above 1.0.0"),
    ];
    refused_on_spec(&endpoints, "Endpoint", &good, cases).await;
    // A value a library cannot parse is an evaluation error, reported on the field.
    let mut spec = good.clone();
    spec["memory"] = json!("lots");
    let err = endpoints
        .create(&PostParams::default(), &obj("Endpoint", "broken", spec))
        .await
        .expect_err("unparsable quantity");
    let s = status(err);
    assert_eq!(s.code, 422);
    assert!(
        causes(&s)
            .iter()
            .any(|(_, field, message)| field == "spec" && message.contains("quantit")),
        "{:?}",
        causes(&s)
    );
}

/// The timeouts of Gateway API's HTTPRoute (its CRD's rule, verbatim) plus fields of the
/// `duration`, `date-time` and `byte` formats that rules read as typed values.
fn timeouts_spec() -> Value {
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            {
                "rule": "!(has(self.request) && has(self.backendRequest) && duration(self.request) != duration('0s') && duration(self.backendRequest) > duration(self.request))",
                "message": "backendRequest timeout cannot be longer than request timeout"
            },
            {
                "rule": "!has(self.grace) || self.grace <= duration('1h')",
                "messageExpression": "'grace ' + string(self.grace) + ' exceeds 1h'"
            },
            {
                "rule": "!has(self.notAfter) || !has(oldSelf.notAfter) || self.notAfter >= oldSelf.notAfter",
                "message": "notAfter may only move later"
            },
            {"rule": "!has(self.key) || size(self.key) == 4", "message": "key must be 4 bytes"},
            // cel-go's standard environment names the well-known types (refused before with
            // "undeclared reference to 'google'").
            {
                "rule": "!has(self.notAfter) || type(self.notAfter) == google.protobuf.Timestamp && type(self.notAfter) != google.protobuf.Duration",
                "message": "notAfter is a timestamp"
            }
        ],
        "properties": {
            "request": {"type": "string", "pattern": "^([0-9]{1,5}(h|m|s|ms)){1,4}$"},
            "backendRequest": {"type": "string", "pattern": "^([0-9]{1,5}(h|m|s|ms)){1,4}$"},
            "grace": {"type": "string", "format": "duration"},
            "notAfter": {"type": "string", "format": "date-time"},
            "key": {"type": "string", "format": "byte"}
        }
    })
}

#[tokio::test]
async fn durations_timestamps_and_bytes_work_in_rules() {
    let env = TestEnv::start().await.expect("env");
    // Refused before ("undeclared reference to 'duration'"), so Gateway API's CRDs could not
    // be installed.
    install(&env, crd("Route", "routes", timeouts_spec())).await;
    let routes = api(&env, "Route", "routes");
    let good = json!({"request": "10s", "backendRequest": "2s", "grace": "30m",
        "notAfter": "2026-06-01T00:00:00Z", "key": "AAECAw=="});
    routes
        .create(&PostParams::default(), &obj("Route", "good", good.clone()))
        .await
        .expect("valid route");
    let cases = [
        (
            json!({"backendRequest": "1m"}),
            "backendRequest timeout cannot be longer than request timeout",
        ),
        (json!({"grace": "90m"}), "grace 5400s exceeds 1h"),
        (json!({"grace": "2 days"}), "grace 172800s exceeds 1h"),
        (json!({"key": "AAEC"}), "key must be 4 bytes"),
    ];
    refused_on_spec(&routes, "Route", &good, cases).await;
    // A transition rule compares timestamps, not strings: an earlier instant written with a
    // larger-looking offset is refused, a later one accepted.
    let patch = |t: &str| Patch::Merge(json!({"spec": {"notAfter": t}}));
    let err = routes
        .patch(
            "good",
            &PatchParams::default(),
            &patch("2026-06-01T01:00:00+02:00"),
        )
        .await
        .expect_err("earlier instant");
    assert!(
        causes(&status(err))
            .iter()
            .any(|(_, _, m)| m == "Invalid value: notAfter may only move later")
    );
    routes
        .patch(
            "good",
            &PatchParams::default(),
            &patch("2026-06-01T03:00:00+02:00"),
        )
        .await
        .expect("later instant");
}

#[tokio::test]
async fn label_key_rules_of_unbounded_maps_are_accepted() {
    let env = TestEnv::start().await.expect("env");
    // Upstream's estimate (cel-go's `checker/cost.go` over Kubernetes' schema sizes): the map
    // holds (3 MiB - 2) / (2 + 6) = 393 215 entries, a key is sized 0 (the key type has no
    // MaxElements); self.labels 2 + 393 215 × (cond 2 + @result 1 + k 1 + matches
    // ceil(0.1 × 1) × ceil(0.25 × 31)) + 1 = 4 718 583, under the 10M limit. Refused before
    // (keys sized as the values, 3 MiB each: "exceeds budget by factor of").
    let spec = json!({"type": "object",
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
        "x-kubernetes-validations": [{
            "rule": "self.labels.all(k, k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",
            "message": "label keys must be DNS labels"}]});
    install(&env, crd("Labelled", "labelleds", spec)).await;
    let api = api(&env, "Labelled", "labelleds");
    api.create(
        &PostParams::default(),
        &obj(
            "Labelled",
            "good",
            json!({"labels": {"app": "web", "tier-1": "x"}}),
        ),
    )
    .await
    .expect("valid keys");
    let err = api
        .create(
            &PostParams::default(),
            &obj("Labelled", "bad", json!({"labels": {"Bad_Key": "x"}})),
        )
        .await
        .expect_err("invalid key");
    assert!(
        causes(&status(err))
            .iter()
            .any(|(_, _, m)| m.ends_with("label keys must be DNS labels")),
    );
}

#[tokio::test]
async fn optional_old_self_rules_run_on_create() {
    let env = TestEnv::start().await.expect("env");
    let spec = json!({
        "type": "object",
        "x-kubernetes-validations": [{
            "rule": "oldSelf.hasValue() ? self.tier >= oldSelf.value().tier : self.tier == 1",
            "message": "tier starts at 1 and never goes down",
            "optionalOldSelf": true
        }],
        "properties": {"tier": {"type": "integer"}}
    });
    install(&env, crd("Plan", "plans", spec)).await;
    let plans = api(&env, "Plan", "plans");
    let err = plans
        .create(
            &PostParams::default(),
            &obj("Plan", "p", json!({"tier": 2})),
        )
        .await
        .expect_err("created at tier 2");
    assert!(
        causes(&status(err))
            .iter()
            .any(|(_, _, m)| m == "Invalid value: tier starts at 1 and never goes down")
    );
    plans
        .create(
            &PostParams::default(),
            &obj("Plan", "p", json!({"tier": 1})),
        )
        .await
        .expect("created at tier 1");
    let tier = |n: i64| Patch::Merge(json!({"spec": {"tier": n}}));
    plans
        .patch("p", &PatchParams::default(), &tier(3))
        .await
        .expect("up");
    plans
        .patch("p", &PatchParams::default(), &tier(2))
        .await
        .expect_err("down");
    // Set on a rule without oldSelf: the CRD is refused as upstream refuses it.
    let unused = json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.tier > 0", "optionalOldSelf": true}],
        "properties": {"tier": {"type": "integer"}}
    });
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let doc: CustomResourceDefinition =
        serde_json::from_value(crd("Bad", "bads", unused)).expect("crd");
    let err = crds
        .create(&PostParams::default(), &doc)
        .await
        .expect_err("optionalOldSelf without oldSelf");
    let s = status(err);
    assert_eq!(s.code, 422);
    assert!(
        causes(&s).iter().any(|(_, f, m)| f
            .ends_with("x-kubernetes-validations[0].optionalOldSelf")
            && m == "Invalid value: true: may not be set if oldSelf is not used in rule"),
        "{:?}",
        causes(&s)
    );
}
