//! `admissionregistration.k8s.io/v1` MutatingAdmissionPolicies and their bindings, as
//! kube-apiserver v1.36 serves them: discovery, defaults, upstream's validation messages, the
//! `kubectl get` tables, and the mutations applied to the writes they bind.

mod common;

use common::*;
use serde_json::{Value, json};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings";

/// The column names and the first row's cells (Age aside) of a table.
fn headers_and_row(table: &Value) -> (Vec<String>, Vec<Value>) {
    let headers = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect();
    let mut cells = table["rows"][0]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    cells.pop();
    (headers, cells)
}

/// `field: message` of every cause of a 422.
fn causes(body: &Value) -> Vec<String> {
    body["details"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| {
                    format!(
                        "{}: {}",
                        c["field"].as_str().unwrap_or(""),
                        c["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn policy(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
           "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn discovery_matches_upstream() {
    let env = TestEnv::start().await.expect("env");
    let (code, list) = call(&env, "GET", "/apis/admissionregistration.k8s.io/v1", None).await;
    assert_eq!(code, 200);
    let reference: Value = serde_json::from_str(include_str!(
        "fixtures/admissionregistration/discovery-admissionregistration-k8s-io-v1.json"
    ))
    .expect("reference");
    // Every resource of the group, in the `api-extensions` category as upstream's.
    for name in [
        "mutatingadmissionpolicies",
        "mutatingadmissionpolicybindings",
        "mutatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
        "validatingwebhookconfigurations",
    ] {
        let find = |doc: &Value| {
            doc["resources"]
                .as_array()
                .and_then(|r| r.iter().find(|r| r["name"] == name).cloned())
                .unwrap_or(Value::Null)
        };
        let ours = find(&list);
        let theirs = find(&reference["body"]);
        for key in [
            "singularName",
            "namespaced",
            "kind",
            "verbs",
            "shortNames",
            "categories",
            "storageVersionHash",
        ] {
            assert_eq!(ours[key], theirs[key], "{name} {key}");
        }
    }
    assert!(
        !list["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .any(|r| r["name"] == "mutatingadmissionpolicies/status"),
        "no status subresource upstream"
    );
    let (code, doc) = call(
        &env,
        "GET",
        "/openapi/v3/apis/admissionregistration.k8s.io/v1",
        None,
    )
    .await;
    assert_eq!(code, 200);
    for model in ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"] {
        let schema =
            &doc["components"]["schemas"][format!("io.k8s.api.admissionregistration.v1.{model}")];
        assert!(
            schema["properties"]["spec"].is_object(),
            "{model}: {schema}"
        );
    }
    env.shutdown().await;
}

#[tokio::test]
async fn policies_are_defaulted_validated_and_printed() {
    let env = TestEnv::start().await.expect("env");
    let spec = json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"],
            "apiVersions": ["v1"], "resources": ["deployments"]}]},
        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
            "expression": "Object{metadata: Object.metadata{labels: {\"team\": params.data.team}}}"}}],
        "reinvocationPolicy": "IfNeeded",
    });
    let (code, created) = call(&env, "POST", POLICIES, Some(&policy("add-team", spec))).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["failurePolicy"], "Fail");
    assert_eq!(created["metadata"]["generation"], 1);
    let constraints = &created["spec"]["matchConstraints"];
    assert_eq!(constraints["matchPolicy"], "Equivalent");
    assert_eq!(constraints["namespaceSelector"], json!({}));
    assert_eq!(constraints["objectSelector"], json!({}));
    assert_eq!(constraints["resourceRules"][0]["scope"], "*");

    let (headers, row) = headers_and_row(&table(&env, POLICIES).await);
    assert_eq!(headers, ["Name", "Mutations", "ParamKind", "Age"]);
    assert_eq!(row, [json!("add-team"), json!(1), json!("v1/ConfigMap")]);

    let bad = json!({
        "matchConstraints": {"resourceRules": [{"operations": ["DELETE"], "apiGroups": [""],
            "apiVersions": ["v1"], "resources": ["pods"]}]},
        "mutations": [{"patchType": "JSONPatch",
                       "applyConfiguration": {"expression": "Object{}"}},
                      {"patchType": "Strategic"}],
        "reinvocationPolicy": "Always",
    });
    let (code, body) = call(&env, "POST", POLICIES, Some(&policy("bad", bad))).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let got = causes(&body);
    for want in [
        "spec.matchConstraints.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
        "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch",
        "spec.mutations[0].applyConfiguration: Invalid value: \"{applyConfiguration}\": must not be specified when patchType is JSONPatch",
        "spec.mutations[1].patchType: Unsupported value: \"Strategic\": supported values: \"ApplyConfiguration\", \"JSONPatch\"",
        "spec.reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\"",
    ] {
        assert!(got.iter().any(|g| g == want), "missing {want}\n in {got:?}");
    }
    let (code, body) = call(
        &env,
        "POST",
        POLICIES,
        Some(&policy(
            "empty",
            json!({"matchConstraints": {"resourceRules": [{
            "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["pods"]}]}}),
        )),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        causes(&body),
        [
            "spec.mutations: Required value: mutations must contain at least one item",
            "spec.reinvocationPolicy: Required value",
        ]
    );
    let (code, _) = call(&env, "GET", &format!("{POLICIES}/empty"), None).await;
    assert_eq!(code, 404, "nothing stored");

    // An update is validated too, and bumps the generation.
    let mut changed = created.clone();
    changed["spec"]["reinvocationPolicy"] = json!("Never");
    let (code, body) = call(&env, "PUT", &format!("{POLICIES}/add-team"), Some(&changed)).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["generation"], 2);
    changed = body;
    changed["spec"]["mutations"] = json!([]);
    let (code, body) = call(&env, "PUT", &format!("{POLICIES}/add-team"), Some(&changed)).await;
    assert_eq!(code, 422, "{body}");
    env.shutdown().await;
}

#[tokio::test]
async fn bindings_are_validated_and_printed() {
    let env = TestEnv::start().await.expect("env");
    let binding = |name: &str, spec: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
               "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": spec})
    };
    let (code, created) = call(
        &env,
        "POST",
        BINDINGS,
        Some(&binding(
            "add-team-binding",
            json!({"policyName": "add-team",
                   "paramRef": {"name": "team", "parameterNotFoundAction": "Deny"},
                   "matchResources": {"namespaceSelector": {"matchLabels": {"env": "test"}}}}),
        )),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["matchResources"]["matchPolicy"],
        "Equivalent"
    );
    assert_eq!(
        created["spec"]["matchResources"]["objectSelector"],
        json!({})
    );
    let (headers, row) = headers_and_row(&table(&env, BINDINGS).await);
    assert_eq!(headers, ["Name", "PolicyName", "ParamRef", "Age"]);
    assert_eq!(
        row,
        [
            json!("add-team-binding"),
            json!("add-team"),
            json!("*/team")
        ]
    );

    let (code, body) = call(
        &env,
        "POST",
        BINDINGS,
        Some(&binding(
            "bad",
            json!({"policyName": "Not_A_Name",
                   "paramRef": {"parameterNotFoundAction": "Ignore"},
                   "matchResources": {"resourceRules": [{"operations": ["DELETE"],
                       "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}}),
        )),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let got = causes(&body);
    assert!(
        got[0].starts_with(
            "spec.policyName: Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain"
        ),
        "{got:?}"
    );
    assert_eq!(
        got[1..],
        [
            "spec.paramRef: Required value: one of name or selector must be specified",
            "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Ignore\": supported values: \"Deny\", \"Allow\"",
            "spec.matchResources.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
        ]
    );
    env.shutdown().await;
}

/// A policy for `resources` (`group/resource`) on CREATE and UPDATE with `mutations`, and its
/// binding `<name>-binding`.
async fn install(env: &TestEnv, name: &str, resource: (&str, &str), extra: Value) {
    let (group, resource) = resource;
    let mut spec = json!({
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE", "UPDATE"],
            "apiGroups": [group], "apiVersions": ["v1"], "resources": [resource]}]},
        "reinvocationPolicy": "Never",
    });
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    create_ok(env, POLICIES, &policy(name, spec)).await;
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": format!("{name}-binding")},
        "spec": {"policyName": name}});
    create_ok(env, BINDINGS, &binding).await;
}

fn apply_configuration(expression: &str) -> Value {
    json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}})
}

fn json_patch(expression: &str) -> Value {
    json!({"patchType": "JSONPatch", "jsonPatch": {"expression": expression}})
}

fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": {"app": "web"}}, "data": data})
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn apply_configurations_merge_into_the_object_with_params() {
    let env = TestEnv::start().await.expect("env");
    create_ok(
        &env,
        CONFIGMAPS,
        &configmap("team-settings", json!({"team": "blue"})),
    )
    .await;
    let spec = json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""],
            "apiVersions": ["v1"], "resources": ["pods"]}]},
        "mutations": [apply_configuration(
            "Object{metadata: Object.metadata{labels: {\"team\": params.data.team}}, \
             spec: Object.spec{containers: [Object.spec.containers{name: \"sidecar\", \
             image: \"busybox:1.36\"}]}}",
        )],
        "reinvocationPolicy": "Never",
    });
    create_ok(&env, POLICIES, &policy("add-team", spec)).await;
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "add-team"},
        "spec": {"policyName": "add-team",
                 "paramRef": {"name": "team-settings", "namespace": "default",
                              "parameterNotFoundAction": "Deny"}}});
    create_ok(&env, BINDINGS, &binding).await;

    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}});
    let created = create_ok(&env, "/api/v1/namespaces/default/pods", &pod).await;
    // Labels merge key by key; containers merge by name: the pod's own container is kept.
    assert_eq!(
        created["metadata"]["labels"],
        json!({"app": "web", "team": "blue"})
    );
    let containers = created["spec"]["containers"]
        .as_array()
        .expect("containers");
    let names: Vec<&str> = containers
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["app", "sidecar"]);
    // The added container is defaulted like any other.
    assert_eq!(containers[1]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        containers[1]["terminationMessagePath"],
        "/dev/termination-log"
    );
    let (_, stored) = call(&env, "GET", "/api/v1/namespaces/default/pods/web", None).await;
    assert_eq!(stored["metadata"]["labels"]["team"], "blue");

    // Without its param, the binding denies (parameterNotFoundAction: Deny).
    let (code, _) = call(&env, "DELETE", &format!("{CONFIGMAPS}/team-settings"), None).await;
    assert_eq!(code, 200);
    let mut other = pod.clone();
    other["metadata"]["name"] = json!("other");
    let (code, body) = call(
        &env,
        "POST",
        "/api/v1/namespaces/default/pods",
        Some(&other),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "policy 'add-team' with binding 'add-team' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    let (code, _) = call(&env, "GET", "/api/v1/namespaces/default/pods/other", None).await;
    assert_eq!(code, 404, "nothing stored");
    env.shutdown().await;
}

#[tokio::test]
async fn json_patches_apply_in_order_and_a_failed_test_leaves_the_object() {
    let env = TestEnv::start().await.expect("env");
    install(
        &env,
        "annotate",
        ("", "configmaps"),
        json!({"mutations": [
            json_patch("[JSONPatch{op: \"test\", path: \"/data/mode\", value: \"managed\"}, \
                        JSONPatch{op: \"add\", path: \"/metadata/annotations\", value: {}}, \
                        JSONPatch{op: \"add\", \
                          path: \"/metadata/annotations/\" + jsonpatch.escapeKey(\"example.com/owner\"), \
                          value: object.metadata.name}]"),
            json_patch("[JSONPatch{op: \"replace\", path: \"/data/mode\", value: \"seen\"}]"),
        ]}),
    )
    .await;
    let created = create_ok(
        &env,
        CONFIGMAPS,
        &configmap("a", json!({"mode": "managed"})),
    )
    .await;
    assert_eq!(
        created["metadata"]["annotations"],
        json!({"example.com/owner": "a"})
    );
    assert_eq!(
        created["data"]["mode"], "seen",
        "the second mutation saw the first's result"
    );

    // The test operation fails: the first mutation changes nothing, the second still runs.
    let created = create_ok(&env, CONFIGMAPS, &configmap("b", json!({"mode": "manual"}))).await;
    assert!(
        created["metadata"].get("annotations").is_none(),
        "{created}"
    );
    assert_eq!(created["data"]["mode"], "seen");

    // Updates are mutated too.
    let mut update = created.clone();
    update["data"]["mode"] = json!("managed");
    let (code, updated) = call(&env, "PUT", &format!("{CONFIGMAPS}/b"), Some(&update)).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["metadata"]["annotations"]["example.com/owner"], "b");
    assert_eq!(updated["data"]["mode"], "seen");

    // A patch that does not apply refuses the write.
    install(
        &env,
        "broken",
        ("", "secrets"),
        json!({"mutations": [json_patch(
            "[JSONPatch{op: \"replace\", path: \"/spec/missing\", value: 1}]")]}),
    )
    .await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let (code, body) = call(
        &env,
        "POST",
        "/api/v1/namespaces/default/secrets",
        Some(&secret),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "policy 'broken' with binding 'broken-binding' denied request: JSONPath: "
        ),
        "{message}"
    );
    assert_eq!(body["details"]["causes"][0]["message"], message);
    env.shutdown().await;
}

#[tokio::test]
async fn match_conditions_variables_and_failure_policies_are_honoured() {
    let env = TestEnv::start().await.expect("env");
    install(
        &env,
        "label-web",
        ("", "configmaps"),
        json!({
            "variables": [{"name": "tier", "expression": "'frontend'"}],
            "matchConditions": [{"name": "web-only",
                "expression": "has(object.metadata.labels) && object.metadata.labels.app == 'web'"}],
            "mutations": [apply_configuration(
                "Object{metadata: Object.metadata{labels: {\"tier\": variables.tier}}}")],
        }),
    )
    .await;
    let created = create_ok(&env, CONFIGMAPS, &configmap("web", json!({}))).await;
    assert_eq!(created["metadata"]["labels"]["tier"], "frontend");
    let mut db = configmap("db", json!({}));
    db["metadata"]["labels"] = json!({"app": "db"});
    let created = create_ok(&env, CONFIGMAPS, &db).await;
    assert_eq!(
        created["metadata"]["labels"],
        json!({"app": "db"}),
        "condition false"
    );

    // A condition that fails to evaluate refuses the write (failurePolicy Fail), unless
    // another condition is false.
    install(
        &env,
        "broken-condition",
        ("", "secrets"),
        json!({
            "matchConditions": [
                {"name": "missing-key", "expression": "object.data.nope == 'x'"},
                {"name": "only-labelled", "expression": "has(object.metadata.labels)"}],
            "mutations": [apply_configuration(
                "Object{metadata: Object.metadata{labels: {\"seen\": \"yes\"}}}")],
        }),
    )
    .await;
    let secrets = "/api/v1/namespaces/default/secrets";
    let plain = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"},
                       "data": {"k": "dg=="}});
    let created = create_ok(&env, secrets, &plain).await;
    assert!(
        created["metadata"].get("labels").is_none(),
        "a false condition skips"
    );
    let labelled = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "labelled", "labels": {"a": "b"}}, "data": {"k": "dg=="}});
    let (code, body) = call(&env, "POST", secrets, Some(&labelled)).await;
    assert_eq!(code, 403, "{body}");
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "policy 'broken-condition' with binding 'broken-condition-binding' denied request: expression 'object.data.nope == 'x'' resulted in error: "
        ),
        "{message}"
    );

    // Atomic members may not be set by an apply configuration.
    install(
        &env,
        "pin-selector",
        ("apps", "deployments"),
        json!({"mutations": [apply_configuration(
            "Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {\"x\": \"y\"}}}}")]}),
    )
    .await;
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}});
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let (code, body) = call(&env, "POST", deployments, Some(&deployment)).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "policy 'pin-selector' with binding 'pin-selector-binding' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector"
    );
    assert_eq!(body["details"]["kind"], "deployments");
    assert_eq!(body["details"]["group"], "apps");

    // With failurePolicy Ignore, the failing policy is skipped.
    let (_, mut stored) = call(&env, "GET", &format!("{POLICIES}/pin-selector"), None).await;
    stored["spec"]["failurePolicy"] = json!("Ignore");
    let (code, body) = call(
        &env,
        "PUT",
        &format!("{POLICIES}/pin-selector"),
        Some(&stored),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let created = create_ok(&env, deployments, &deployment).await;
    assert_eq!(
        created["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );

    // Initializers must be named after their field path.
    install(
        &env,
        "misnamed",
        ("", "serviceaccounts"),
        json!({"mutations": [apply_configuration(
            "Object{metadata: Object.meta{labels: {\"a\": \"b\"}}}")]}),
    )
    .await;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}});
    let (code, body) = call(
        &env,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        Some(&sa),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "policy 'misnamed' with binding 'misnamed-binding' denied request: type mismatch: unexpected type name \"Object.meta\", expected \"Object.metadata\", which matches field name path from root Object type"
    );
    env.shutdown().await;
}

#[tokio::test]
async fn mutated_objects_are_validated_and_if_needed_policies_run_again() {
    let env = TestEnv::start().await.expect("env");
    // `copy-tier` runs first (bindings in name order) and finds no `tier` label yet; `set-tier`
    // adds it; `copy-tier` asks to be invoked again and then copies it.
    install(
        &env,
        "a-copy-tier",
        ("", "configmaps"),
        json!({"reinvocationPolicy": "IfNeeded", "mutations": [apply_configuration(
            "has(object.metadata.labels) && 'tier' in object.metadata.labels \
             ? Object{metadata: Object.metadata{annotations: {\"tier\": object.metadata.labels.tier}}} \
             : Object{}")]}),
    )
    .await;
    install(
        &env,
        "b-set-tier",
        ("", "configmaps"),
        json!({"mutations": [apply_configuration(
            "Object{metadata: Object.metadata{labels: {\"tier\": \"gold\"}}}")]}),
    )
    .await;
    let created = create_ok(&env, CONFIGMAPS, &configmap("c", json!({}))).await;
    assert_eq!(created["metadata"]["labels"]["tier"], "gold");
    assert_eq!(
        created["metadata"]["annotations"]["tier"], "gold",
        "{created}"
    );

    // The mutated object is validated: an invalid result is refused with upstream's 422.
    install(
        &env,
        "negative",
        ("apps", "deployments"),
        json!({"mutations": [json_patch(
            "[JSONPatch{op: \"replace\", path: \"/spec/replicas\", value: -1}]")]}),
    )
    .await;
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}});
    let (code, body) = call(
        &env,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        Some(&deployment),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["field"], "spec.replicas",
        "{body}"
    );
    env.shutdown().await;
}

#[tokio::test]
async fn apply_configurations_must_type_with_the_kinds_schema() {
    let env = TestEnv::start().await.expect("env");
    // A field the kind does not declare.
    install(
        &env,
        "undeclared",
        ("", "configmaps"),
        json!({"mutations": [apply_configuration(
            "Object{metadata: Object.metadata{labels: {'seen': 'yes'}}, spec: Object.spec{x: 1}}")]}),
    )
    .await;
    let (code, body) = call(&env, "POST", CONFIGMAPS, Some(&configmap("a", json!({})))).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "policy 'undeclared' with binding 'undeclared-binding' denied request: error applying patch: failed to convert patch object to typed object: .spec: field not declared in schema"
    );
    // A value of the wrong type.
    let (_, mut stored) = call(&env, "GET", &format!("{POLICIES}/undeclared"), None).await;
    stored["spec"]["mutations"] = json!([apply_configuration(
        "Object{data: {'n': 1}, metadata: Object.metadata{generation: 'one'}}"
    )]);
    let (code, body) = call(
        &env,
        "PUT",
        &format!("{POLICIES}/undeclared"),
        Some(&stored),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = call(&env, "POST", CONFIGMAPS, Some(&configmap("b", json!({})))).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "policy 'undeclared' with binding 'undeclared-binding' denied request: error applying patch: failed to convert patch object to typed object: errors:\n  .data.n: expected string, got &value.valueUnstructured{Value:1}\n  .metadata.generation: expected numeric (int or float), got string"
    );
    // One that types is merged.
    stored["spec"]["mutations"] = json!([apply_configuration(
        "Object{data: {'n': '1'}, metadata: Object.metadata{labels: {'seen': 'yes'}}}"
    )]);
    stored["metadata"]["resourceVersion"] = Value::Null;
    let (code, body) = call(
        &env,
        "PUT",
        &format!("{POLICIES}/undeclared"),
        Some(&stored),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let created = create_ok(&env, CONFIGMAPS, &configmap("c", json!({}))).await;
    assert_eq!(created["data"], json!({"n": "1"}));
    assert_eq!(created["metadata"]["labels"]["seen"], "yes");
    env.shutdown().await;
}

#[tokio::test]
async fn apply_configurations_of_custom_resources_type_with_their_schema() {
    let env = TestEnv::start().await.expect("env");
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.typed.example.com"},
        "spec": {"group": "typed.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}});
    create_ok(
        &env,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    env.wait_crd_established("gadgets.typed.example.com", WAIT)
        .await
        .expect("established");
    install(
        &env,
        "gadgets",
        ("typed.example.com", "gadgets"),
        json!({"mutations": [apply_configuration("Object{spec: Object.spec{size: 'big'}}")]}),
    )
    .await;
    let gadgets = "/apis/typed.example.com/v1/namespaces/default/gadgets";
    let gadget = |name: &str| {
        json!({"apiVersion": "typed.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name}, "spec": {"size": 1}})
    };
    let (code, body) = call(&env, "POST", gadgets, Some(&gadget("a"))).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "policy 'gadgets' with binding 'gadgets-binding' denied request: error applying patch: failed to convert patch object to typed object: .spec.size: expected numeric (int or float), got string"
    );
    // Preserved unknown fields and the object's metadata type; undeclared ones do not.
    let (_, mut stored) = call(&env, "GET", &format!("{POLICIES}/gadgets"), None).await;
    stored["spec"]["mutations"] = json!([apply_configuration(
        "Object{metadata: Object.metadata{labels: {'typed': 'yes'}}, extra: Object.extra{anything: 'x'}, spec: Object.spec{size: 2}}"
    )]);
    let (code, body) = call(&env, "PUT", &format!("{POLICIES}/gadgets"), Some(&stored)).await;
    assert_eq!(code, 200, "{body}");
    let created = create_ok(&env, gadgets, &gadget("b")).await;
    assert_eq!(created["spec"]["size"], 2);
    assert_eq!(created["metadata"]["labels"]["typed"], "yes");
    stored["spec"]["mutations"] = json!([apply_configuration(
        "Object{spec: Object.spec{color: 'red'}}"
    )]);
    stored["metadata"]["resourceVersion"] = Value::Null;
    let (code, body) = call(&env, "PUT", &format!("{POLICIES}/gadgets"), Some(&stored)).await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = call(&env, "POST", gadgets, Some(&gadget("c"))).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "policy 'gadgets' with binding 'gadgets-binding' denied request: error applying patch: failed to convert patch object to typed object: .spec.color: field not declared in schema"
    );
    env.shutdown().await;
}
