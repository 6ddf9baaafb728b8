//! How admission policies are evaluated, as kube-apiserver v1.36's policy plugins evaluate
//! them: in the version of the resource their match constraints selected (`matchPolicy:
//! Equivalent`), within the runtime cost budget of one evaluation, and with their audit
//! annotations.

mod common;

use common::*;
use serde_json::{Value, json};

const VAPS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const VAP_BINDINGS: &str =
    "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const MAPS: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies";
const MAP_BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings";
const HPAS_V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const HPAS_V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// Resource rules selecting `resource` of `group/version` on create.
fn rules(group: &str, version: &str, resource: &str) -> Value {
    json!([{"operations": ["CREATE"], "apiGroups": [group], "apiVersions": [version],
            "resources": [resource]}])
}

/// Creates a ValidatingAdmissionPolicy with `spec` and a `Deny` binding of the same name.
async fn validating(env: &TestEnv, name: &str, spec: Value) {
    let policy = json!({"metadata": {"name": name}, "spec": spec});
    create_ok(env, VAPS, &policy).await;
    let binding = json!({"metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]}});
    create_ok(env, VAP_BINDINGS, &binding).await;
}

/// An HPA in the `autoscaling/v1` form.
fn hpa_v1(name: &str, target: i64) -> Value {
    json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 5,
                 "targetCPUUtilizationPercentage": target}})
}

#[tokio::test]
async fn policies_see_the_version_their_constraints_matched() {
    let env = TestEnv::start().await.expect("env");
    // The policy names only autoscaling/v2; a v1 write is converted to v2 for it, and its
    // request names both versions.
    validating(
        &env,
        "cpu-ceiling",
        json!({
            "matchConstraints": {"resourceRules": rules("autoscaling", "v2", "horizontalpodautoscalers")},
            "validations": [{
                "expression": "object.spec.metrics.all(m, m.resource.target.averageUtilization <= 80)",
                "message": "at most 80% CPU"
            }, {
                "expression": "request.kind.version == 'v2' && request.resource.version == 'v2' && object.apiVersion == 'autoscaling/v2'"
            }, {
                "expression": "request.requestKind.version == request.requestResource.version"
            }]
        }),
    )
    .await;
    let (code, status) = call(&env, "POST", HPAS_V1, Some(&hpa_v1("hot", 90))).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "horizontalpodautoscalers.autoscaling \"hot\" is forbidden: ValidatingAdmissionPolicy 'cpu-ceiling' with binding 'cpu-ceiling' denied request: at most 80% CPU"
    );
    create_ok(&env, HPAS_V1, &hpa_v1("cool", 50)).await;
    // A v2 write is seen as it is.
    let mut v2 = hpa_v1("v2", 50);
    v2["apiVersion"] = json!("autoscaling/v2");
    v2["spec"] = json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "maxReplicas": 3,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 95}}}]});
    let (code, status) = call(&env, "POST", HPAS_V2, Some(&v2)).await;
    assert_eq!(code, 422, "{status}");
    // With `matchPolicy: Exact` the v1 write is not selected at all.
    let exact = json!({"metadata": {"name": "exact"}, "spec": {
        "matchConstraints": {"matchPolicy": "Exact",
            "resourceRules": rules("autoscaling", "v2", "horizontalpodautoscalers")},
        "validations": [{"expression": "false", "message": "never on v1"}]}});
    create_ok(&env, VAPS, &exact).await;
    create_ok(
        &env,
        VAP_BINDINGS,
        &json!({"metadata": {"name": "exact"},
            "spec": {"policyName": "exact", "validationActions": ["Deny"]}}),
    )
    .await;
    create_ok(&env, HPAS_V1, &hpa_v1("exactly", 50)).await;
}

#[tokio::test]
async fn mutating_policies_mutate_in_the_version_they_matched() {
    let env = TestEnv::start().await.expect("env");
    // A JSON patch written against the v2 form of an HPA created through v1: the change comes
    // back through the conversion.
    let policy = json!({"metadata": {"name": "cap-cpu"}, "spec": {
        "matchConstraints": {"resourceRules": rules("autoscaling", "v2", "horizontalpodautoscalers")},
        "failurePolicy": "Fail",
        "reinvocationPolicy": "Never",
        "mutations": [{
            "patchType": "JSONPatch",
            "jsonPatch": {"expression": "object.spec.metrics.map(m, m.resource.target.averageUtilization).exists(u, u > 80) ? [JSONPatch{op: 'replace', path: '/spec/metrics/0/resource/target/averageUtilization', value: 80}] : []"}
        }, {
            "patchType": "ApplyConfiguration",
            "applyConfiguration": {"expression": "Object{metadata: Object.metadata{labels: {'seen-as': request.kind.version, 'sent-as': request.requestKind.version}}}"}
        }]
    }});
    create_ok(&env, MAPS, &policy).await;
    create_ok(
        &env,
        MAP_BINDINGS,
        &json!({"metadata": {"name": "cap-cpu"}, "spec": {"policyName": "cap-cpu"}}),
    )
    .await;
    let created = create_ok(&env, HPAS_V1, &hpa_v1("capped", 95)).await;
    assert_eq!(created["apiVersion"], "autoscaling/v1");
    assert_eq!(created["spec"]["targetCPUUtilizationPercentage"], 80);
    assert_eq!(
        created["metadata"]["labels"],
        json!({"seen-as": "v2", "sent-as": "v1"})
    );
    let (code, stored) = call(&env, "GET", &format!("{HPAS_V2}/capped"), None).await;
    assert_eq!(code, 200, "{stored}");
    assert_eq!(
        stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
}

/// One validation asking the authorizer twice: 700000 of the per-expression limit of
/// 1000000 (a check costs 350000).
const TWO_CHECKS: &str = "authorizer.group('').resource('pods').check('get').allowed() && authorizer.group('').resource('pods').check('list').allowed()";

#[tokio::test]
async fn one_evaluation_has_a_cost_budget() {
    let env = TestEnv::start().await.expect("env");
    // Fourteen such validations fit in the budget of 10000000, fifteen do not.
    let within: Vec<Value> = (0..14).map(|_| json!({"expression": TWO_CHECKS})).collect();
    validating(
        &env,
        "within",
        json!({"matchConstraints": {"resourceRules": rules("", "v1", "configmaps")},
               "validations": within}),
    )
    .await;
    let cm = |name: &str| json!({"metadata": {"name": name}, "data": {}});
    create_ok(&env, CMS, &cm("a")).await;
    let beyond: Vec<Value> = (0..15).map(|_| json!({"expression": TWO_CHECKS})).collect();
    validating(
        &env,
        "beyond",
        json!({"matchConstraints": {"resourceRules": rules("", "v1", "configmaps")},
               "validations": beyond}),
    )
    .await;
    let (code, status) = call(&env, "POST", CMS, Some(&cm("b"))).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "configmaps \"b\" is forbidden: ValidatingAdmissionPolicy 'beyond' with binding 'beyond' denied request: validation failed due to running out of cost budget, no further validation rules will be run"
    );
    // Failing open, the exhausted policy admits.
    let (code, mut policy) = call(&env, "GET", &format!("{VAPS}/beyond"), None).await;
    assert_eq!(code, 200, "{policy}");
    policy["spec"]["failurePolicy"] = json!("Ignore");
    let (code, updated) = call(&env, "PUT", &format!("{VAPS}/beyond"), Some(&policy)).await;
    assert_eq!(code, 200, "{updated}");
    create_ok(&env, CMS, &cm("c")).await;
}

#[tokio::test]
async fn audit_annotations_are_evaluated() {
    let env = TestEnv::start().await.expect("env");
    // A value expression that fails denies the request whatever the binding's actions.
    let policy = json!({"metadata": {"name": "owners"}, "spec": {
    "matchConstraints": {"resourceRules": rules("", "v1", "configmaps")},
    "auditAnnotations": [
        {"key": "name", "valueExpression": "'cm-' + object.metadata.name"},
        {"key": "owner", "valueExpression": "'owner-' + string(object.data.owner)"}
    ]}});
    create_ok(&env, VAPS, &policy).await;
    create_ok(
        &env,
        VAP_BINDINGS,
        &json!({"metadata": {"name": "owners"},
            "spec": {"policyName": "owners", "validationActions": ["Audit"]}}),
    )
    .await;
    let (code, status) = call(
        &env,
        "POST",
        CMS,
        Some(&json!({"metadata": {"name": "unowned"}, "data": {}})),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "configmaps \"unowned\" is forbidden: ValidatingAdmissionPolicy 'owners' with binding 'owners' denied request: expression ''owner-' + string(object.data.owner)' resulted in error: "
        ),
        "{message}"
    );
    create_ok(
        &env,
        CMS,
        &json!({"metadata": {"name": "owned"}, "data": {"owner": "me"}}),
    )
    .await;
    // A dyn value expression is refused when the policy is written.
    let dyn_value = json!({"metadata": {"name": "dyn"}, "spec": {
        "matchConstraints": {"resourceRules": rules("", "v1", "configmaps")},
        "auditAnnotations": [{"key": "name", "valueExpression": "object.metadata.name"}]}});
    let (code, status) = call(&env, "POST", VAPS, Some(&dyn_value)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Invalid value: \"object.metadata.name\": must evaluate to one of [string null_type] but got dyn"
    );
    assert_eq!(
        status["details"]["causes"][0]["field"],
        "spec.auditAnnotations[0].valueExpression"
    );
}

/// Fourteen validations of [`TWO_CHECKS`] (9800000 of the budget) and `extra`.
fn near_budget(extra: &[&str]) -> Vec<Value> {
    (0..14)
        .map(|_| TWO_CHECKS)
        .chain(extra.iter().copied())
        .map(|e| json!({"expression": e}))
        .collect()
}

#[tokio::test]
async fn variables_are_evaluated_when_read_and_charged_once() {
    let env = TestEnv::start().await.expect("env");
    let cm = |name: &str| json!({"metadata": {"name": name}, "data": {}});
    let variables = json!([
        {"name": "costly", "expression": TWO_CHECKS},
        {"name": "broken", "expression": "object.data.missing"},
        {"name": "name", "expression": "object.metadata.name"}
    ]);
    // A variable read by two validations is charged once: 9800000 + 700000 would not fit,
    // so thirteen direct checks and two reads of the variable just do.
    let mut twice: Vec<Value> = (0..13).map(|_| json!({"expression": TWO_CHECKS})).collect();
    twice.push(json!({"expression": "variables.costly"}));
    twice.push(json!({"expression": "variables.costly || true"}));
    validating(
        &env,
        "twice",
        json!({"matchConstraints": {"resourceRules": rules("", "v1", "configmaps")},
               "variables": variables, "validations": twice}),
    )
    .await;
    // The broken variable is read by nothing: it fails nothing.
    create_ok(&env, CMS, &cm("a")).await;
    // A variable's cost is charged to the budget: fourteen direct checks and one read of the
    // variable run out of it.
    validating(
        &env,
        "beyond",
        json!({"matchConstraints": {"resourceRules": rules("", "v1", "configmaps")},
               "variables": variables,
               "validations": near_budget(&["variables.costly"])}),
    )
    .await;
    let (code, status) = call(&env, "POST", CMS, Some(&cm("b"))).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "configmaps \"b\" is forbidden: ValidatingAdmissionPolicy 'beyond' with binding 'beyond' denied request: validation failed due to running out of cost budget, no further validation rules will be run"
    );
    let (code, _) = call(&env, "DELETE", &format!("{VAPS}/beyond"), None).await;
    assert_eq!(code, 200);
    // A variable that fails fails the expressions reading it, with upstream's words.
    validating(
        &env,
        "reads-broken",
        json!({"matchConstraints": {"resourceRules": rules("", "v1", "configmaps")},
               "variables": variables,
               "validations": [{"expression": "variables.name == 'c' || variables.broken == 'x'"}]}),
    )
    .await;
    create_ok(&env, CMS, &cm("c")).await;
    let (code, status) = call(&env, "POST", CMS, Some(&cm("d"))).await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "configmaps \"d\" is forbidden: ValidatingAdmissionPolicy 'reads-broken' with binding 'reads-broken' denied request: expression 'variables.name == 'c' || variables.broken == 'x'' resulted in error: composited variable \"broken\" fails to evaluate: "
        ),
        "{message}"
    );
}

#[tokio::test]
async fn match_conditions_that_fail_deny_unless_one_is_false() {
    let env = TestEnv::start().await.expect("env");
    let cm = |name: &str, data: Value| json!({"metadata": {"name": name}, "data": data});
    validating(
        &env,
        "conditions",
        json!({"matchConstraints": {"resourceRules": rules("", "v1", "configmaps")},
               "matchConditions": [
                   {"name": "broken", "expression": "object.data.nope == 'x'"},
                   {"name": "opted-in", "expression": "object.data.opt == 'in'"}],
               "validations": [{"expression": "false", "message": "opted in"}]}),
    )
    .await;
    // A false condition skips the policy, whatever the others' errors.
    create_ok(&env, CMS, &cm("out", json!({"opt": "out"}))).await;
    // Errors and no false condition: the error denies (the policy fails closed).
    let (code, status) = call(&env, "POST", CMS, Some(&cm("in", json!({"opt": "in"})))).await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "configmaps \"in\" is forbidden: ValidatingAdmissionPolicy 'conditions' with binding 'conditions' denied request: expression 'object.data.nope == 'x'' resulted in error: "
        ),
        "{message}"
    );
    // Both hold: the validations run.
    let (code, status) = call(
        &env,
        "POST",
        CMS,
        Some(&cm("both", json!({"opt": "in", "nope": "x"}))),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "configmaps \"both\" is forbidden: ValidatingAdmissionPolicy 'conditions' with binding 'conditions' denied request: opted in"
    );
}
