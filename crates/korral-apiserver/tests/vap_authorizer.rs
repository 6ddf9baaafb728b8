//! Admission policies that ask the authorizer (`authorizer.group(..).resource(..).check(..)`,
//! `authorizer.serviceAccount(..)`, `authorizer.path(..)`, `authorizer.requestResource`),
//! evaluated against the server's RBAC for the requesting user, and a webhook match condition
//! that does the same.

mod common;

use common::{call, create_namespace, create_ok, rbac_env, request};
use serde_json::{Value, json};

const VAP: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const CMS: &str = "/api/v1/namespaces/authz/configmaps";

fn configmap(name: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": labels}, "data": data})
}

/// The policy under test: approved ConfigMaps need the `approve` verb on
/// `approvals.example.com`; a named owner (a service account) must be able to update
/// ConfigMaps; protected ones need delete rights on the request's own resource (a decision
/// kept in a variable); a health flag needs `get` on `/healthz`.
fn policy() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "approvals"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE", "UPDATE"],
                "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "variables": [
                {"name": "mayDelete", "expression": "authorizer.requestResource.check('delete')"}
            ],
            "validations": [
                {"expression": "!('approved' in object.metadata.?labels.orValue({})) || authorizer.group('example.com').resource('approvals').namespace(object.metadata.namespace).check('approve').allowed()",
                 "message": "only approvers may approve", "reason": "Forbidden"},
                {"expression": "!has(object.data.owner) || authorizer.serviceAccount(object.metadata.namespace, object.data.owner).group('').resource('configmaps').namespace(object.metadata.namespace).check('update').allowed()",
                 "messageExpression": "'owner ' + object.data.owner + ' may not update configmaps'"},
                {"expression": "!has(object.data.protected) || variables.mayDelete.allowed()",
                 "messageExpression": "'protected configmaps need delete rights: ' + variables.mayDelete.reason()"},
                {"expression": "!has(object.data.health) || authorizer.path('/healthz').check('get').allowed()",
                 "message": "health needs /healthz"}
            ]
        }
    })
}

async fn setup() -> common::TestEnv {
    let env = rbac_env().await;
    create_namespace(&env.client(), "authz").await;
    // Writers may create and update ConfigMaps in the namespace; approvers may also approve
    // and delete; the `owner` service account may update ConfigMaps, `other` may not.
    create_ok(
        &env,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        &json!({"metadata": {"name": "cm-writer"}, "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update", "get"]}
        ]}),
    )
    .await;
    create_ok(
        &env,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        &json!({"metadata": {"name": "approver"}, "rules": [
            {"apiGroups": ["example.com"], "resources": ["approvals"], "verbs": ["approve"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"]}
        ]}),
    )
    .await;
    let bind = |name: &str, role: &str, subjects: Value| {
        json!({"metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
               "subjects": subjects})
    };
    let user = |name: &str| json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name}]);
    let bindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/authz/rolebindings";
    for (name, role, subjects) in [
        (
            "writers",
            "cm-writer",
            json!([
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "writer"},
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "boss"},
                {"kind": "ServiceAccount", "name": "owner", "namespace": "authz"}
            ]),
        ),
        ("approvers", "approver", user("boss")),
    ] {
        create_ok(&env, bindings, &bind(name, role, subjects)).await;
    }
    let (code, created) = call(&env, "POST", VAP, Some(&policy())).await;
    assert_eq!(code, 201, "{created}");
    let binding = json!({"metadata": {"name": "approvals-deny"},
        "spec": {"policyName": "approvals", "validationActions": ["Deny"]}});
    let (code, created) = call(&env, "POST", BINDINGS, Some(&binding)).await;
    assert_eq!(code, 201, "{created}");
    env
}

fn denial(message: &str) -> String {
    format!(
        "ValidatingAdmissionPolicy 'approvals' with binding 'approvals-deny' denied request: {message}"
    )
}

#[tokio::test]
async fn policies_ask_the_authorizer_about_the_requesting_user() {
    let env = setup().await;
    let writer = env.client_as_user("writer", &[]).await.expect("client");
    let boss = env.client_as_user("boss", &[]).await.expect("client");

    // Nothing the policy looks at: allowed.
    let (code, _, body) = request(
        &writer,
        "POST",
        CMS,
        None,
        Some(configmap("plain", json!({}), json!({"k": "v"}))),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    // A group/resource check: the writer may not approve, the boss may.
    let approved = configmap("ok", json!({"approved": "yes"}), json!({}));
    let (code, _, status) = request(&writer, "POST", CMS, None, Some(approved.clone())).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        format!(
            "configmaps \"ok\" is forbidden: {}",
            denial("only approvers may approve")
        )
    );
    let (code, _, body) = request(&boss, "POST", CMS, None, Some(approved)).await;
    assert_eq!(code, 201, "{body}");

    // A service account's rights, not the requester's.
    let owned = |name: &str, owner: &str| configmap(name, json!({}), json!({"owner": owner}));
    let (code, _, body) = request(&writer, "POST", CMS, None, Some(owned("a", "owner"))).await;
    assert_eq!(code, 201, "{body}");
    let (code, _, status) = request(&boss, "POST", CMS, None, Some(owned("b", "other"))).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        format!(
            "configmaps \"b\" is forbidden: {}",
            denial("owner other may not update configmaps")
        )
    );

    // The request's own resource, through a decision kept in a variable. Message expressions
    // run without the authorizer (upstream's), so this one fails and the expression is named.
    let protected = configmap("p", json!({}), json!({"protected": "1"}));
    let (code, _, status) = request(&writer, "POST", CMS, None, Some(protected.clone())).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        format!(
            "configmaps \"p\" is forbidden: {}",
            denial(
                "failed expression: !has(object.data.protected) || variables.mayDelete.allowed()"
            )
        )
    );
    let (code, _, body) = request(&boss, "POST", CMS, None, Some(protected)).await;
    assert_eq!(code, 201, "{body}");

    // A non-resource path: every authenticated user may get /healthz (upstream's
    // system:public-info-viewer).
    let health = configmap("h", json!({}), json!({"health": "1"}));
    let (code, _, body) = request(&writer, "POST", CMS, None, Some(health)).await;
    assert_eq!(code, 201, "{body}");
}

#[tokio::test]
async fn authorizer_expressions_are_type_checked_and_costed() {
    let env = rbac_env().await;
    // Upstream accepts a policy using the library (we refused it as undeclared before).
    let mut p = policy();
    p["metadata"]["name"] = json!("checked");
    // A misuse of the library is refused when the policy is written, as upstream's compiler
    // refuses it (a group check has no `check`).
    p["spec"]["validations"] = json!([
        {"expression": "authorizer.group('').check('get').allowed()"}
    ]);
    let (code, status) = call(&env, "POST", VAP, Some(&p)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["field"],
        "spec.validations[0].expression"
    );
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.contains(
            "compilation failed: ERROR: <input>:1:27: found no matching overload for 'check' applied to 'kubernetes.authorization.GroupCheck.(string)'"
        ),
        "{message}"
    );
    // A mistake only the matched kind's schema shows is a type-checking warning, and three
    // checks in one expression: more than one expression's cost limit allows (each check
    // costs 350000 of 1000000). The admin is allowed everything, so all three checks run.
    p["spec"]["validations"] = json!([
        {"expression": "authorizer.path('/a').check('get').allowed() && authorizer.path('/b').check('get').allowed() && authorizer.path('/c').check('get').allowed()"},
        {"expression": "authorizer.group('').resource('configmaps').check('get').allowed() || object.datum == 'x'"}
    ]);
    let (code, created) = call(&env, "POST", VAP, Some(&p)).await;
    assert_eq!(code, 201, "{created}");
    let path = format!("{VAP}/checked");
    common::wait_until(common::WAIT, "type checking of 'checked'", || async {
        let (_, got) = call(&env, "GET", &path, None).await;
        got["status"]["typeChecking"].is_object()
    })
    .await
    .expect("type checked");
    let (_, got) = call(&env, "GET", &path, None).await;
    let warnings = got["status"]["typeChecking"]["expressionWarnings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    // A message expression may not ask the authorizer.
    let mut asking = policy();
    asking["metadata"]["name"] = json!("asking");
    asking["spec"]["validations"] = json!([{"expression": "true",
        "messageExpression": "authorizer.path('/x').check('get').reason()"}]);
    let (code, status) = call(&env, "POST", VAP, Some(&asking)).await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.contains("spec.validations[0].messageExpression")
            && message.contains("undeclared reference to 'authorizer'"),
        "{message}"
    );
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[1].expression");
    let text = warnings[0]["warning"].as_str().unwrap_or("");
    assert!(text.contains("undefined field 'datum'"), "{text}");

    let binding = json!({"metadata": {"name": "checked"},
        "spec": {"policyName": "checked", "validationActions": ["Deny"]}});
    let (code, created) = call(&env, "POST", BINDINGS, Some(&binding)).await;
    assert_eq!(code, 201, "{created}");
    create_namespace(&env.client(), "authz").await;
    let (code, status) = call(
        &env,
        "POST",
        CMS,
        Some(&configmap("c", json!({}), json!({}))),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.contains("resulted in error: operation cancelled: actual cost limit exceeded"),
        "{message}"
    );
}

#[tokio::test]
async fn webhook_match_conditions_ask_the_authorizer() {
    let env = setup().await;
    // The webhook (unreachable, failing closed) is only called for users who may delete
    // the ConfigMap they write.
    let hooks = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "deleters"},
        "webhooks": [{
            "name": "deleters.example.com",
            "clientConfig": {"url": "https://127.0.0.1:1/validate"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "matchConditions": [{"name": "may-delete",
                "expression": "authorizer.requestResource.check('delete').allowed()"}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail"
        }]
    });
    create_ok(
        &env,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        &hooks,
    )
    .await;
    let writer = env.client_as_user("writer", &[]).await.expect("client");
    let boss = env.client_as_user("boss", &[]).await.expect("client");
    let cm = |name: &str| configmap(name, json!({}), json!({}));
    let (code, _, body) = request(&writer, "POST", CMS, None, Some(cm("skipped"))).await;
    assert_eq!(code, 201, "{body}");
    let (code, _, status) = request(&boss, "POST", CMS, None, Some(cm("called"))).await;
    assert_eq!(code, 500, "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "Internal error occurred: failed calling webhook \"deleters.example.com\""
        ),
        "{message}"
    );
}

#[tokio::test]
async fn mutations_ask_the_authorizer() {
    let env = setup().await;
    // Label each new ConfigMap with whether its author may approve (a decision kept in a
    // variable, a condition that asks again).
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": "label-approvers"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""],
                "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "variables": [{"name": "approve", "expression":
                "authorizer.group('example.com').resource('approvals').namespace(object.metadata.namespace).check('approve')"}],
            "matchConditions": [{"name": "may-create",
                "expression": "authorizer.requestResource.check('create').allowed()"}],
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{metadata: Object.metadata{labels: {'approver': string(variables.approve.allowed())}}}"}}],
            "reinvocationPolicy": "Never"
        }
    });
    create_ok(
        &env,
        "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies",
        &policy,
    )
    .await;
    create_ok(
        &env,
        "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings",
        &json!({"metadata": {"name": "label-approvers"},
                "spec": {"policyName": "label-approvers"}}),
    )
    .await;
    for (user, name, label) in [("writer", "w", "false"), ("boss", "b", "true")] {
        let client = env.client_as_user(user, &[]).await.expect("client");
        let (code, _, created) = request(
            &client,
            "POST",
            CMS,
            None,
            Some(configmap(name, json!({}), json!({}))),
        )
        .await;
        assert_eq!(code, 201, "{created}");
        assert_eq!(
            created["metadata"]["labels"]["approver"], label,
            "{created}"
        );
    }
}
