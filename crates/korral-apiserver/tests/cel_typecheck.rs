//! CRD validation rules are type-checked against the schema when a CRD is created or updated,
//! as kube-apiserver's cel-go checker does: a misspelled field, an operator applied to the
//! wrong types, a rule that is not a `bool` or a message expression that is not a `string` is
//! refused with upstream's 422 and cel-go's message, caret included; well-typed rules still
//! install and run.

mod common;

use common::*;
use serde_json::{Value, json};

const GROUP: &str = "typecheck.example.org";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn spec_schema(rules: Value) -> Value {
    json!({
        "type": "object",
        "x-kubernetes-validations": rules,
        "properties": {
            "replicas": {"type": "integer"},
            "name": {"type": "string", "maxLength": 63},
            "items": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}},
            "labels": {"type": "object", "maxProperties": 10,
                       "additionalProperties": {"type": "string", "maxLength": 10}},
            "port": {"x-kubernetes-int-or-string": true},
        }
    })
}

fn rules_crd(plural: &str, rules: Value) -> Value {
    let kind = format!("T{plural}");
    spec_crd(GROUP, &kind, plural, spec_schema(rules))
}

/// The path of the `i`th rule of `spec` in a one-version CRD (upstream's internal form).
fn rule_field(i: usize, leaf: &str) -> String {
    format!("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[{i}].{leaf}")
}

/// `rule` as upstream prints the `ValidationRule` it refused.
fn rendered(rule: &str, message_expression: &str) -> String {
    format!(
        "apiextensions.ValidationRule{{Rule:{rule:?}, Message:\"\", MessageExpression:{message_expression:?}, Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}"
    )
}

/// Creating a CRD with the one rule `rule` is refused with `detail` on the rule.
async fn refused(env: &TestEnv, plural: &str, rule: &str, detail: &str) {
    let answer = call(
        env,
        "POST",
        CRDS,
        Some(&rules_crd(plural, json!([{"rule": rule}]))),
    )
    .await;
    let field = rule_field(0, "rule");
    let message = format!("Invalid value: {}: {detail}", rendered(rule, ""));
    assert_invalid(
        &answer,
        &format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"{plural}.{GROUP}\" is invalid: {field}: {message}"
        ),
        &[("FieldValueInvalid", &message, &field)],
    );
}

#[tokio::test]
async fn misspelled_fields_are_refused_with_cel_go_s_message() {
    let env = TestEnv::start().await.expect("env");
    refused(
        &env,
        "misspelled",
        "self.replica > 1",
        "compilation failed: ERROR: <input>:1:5: undefined field 'replica'\n | self.replica > 1\n | ....^",
    )
    .await;
    // Nothing was stored.
    let (code, _) = call(&env, "GET", &format!("{CRDS}/misspelled.{GROUP}"), None).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn type_mismatches_are_refused() {
    let env = TestEnv::start().await.expect("env");
    refused(
        &env,
        "mismatches",
        "self.name + 1 == 'a'",
        "compilation failed: ERROR: <input>:1:11: found no matching overload for '_+_' applied to '(string, int)'\n | self.name + 1 == 'a'\n | ..........^",
    )
    .await;
    refused(
        &env,
        "reverses",
        "self.name.reverse() == 'a'",
        "compilation failed: ERROR: <input>:1:18: found no matching overload for 'reverse' applied to 'string.()'\n | self.name.reverse() == 'a'\n | .................^",
    )
    .await;
}

/// Literal lists and maps mixing element types are refused by the checker, as cel-go's:
/// every offending element with its position and caret.
#[tokio::test]
async fn mixed_literals_are_refused_where_cel_go_reports_them() {
    let env = TestEnv::start().await.expect("env");
    refused(
        &env,
        "mixedlists",
        "[1, 'a'] == []",
        "compilation failed: ERROR: <input>:1:5: expected type 'int' but found 'string'\n | [1, 'a'] == []\n | ....^",
    )
    .await;
    refused(
        &env,
        "mixedmaps",
        "{'a': 1, 2: 'x'}.size() == 2",
        "compilation failed: ERROR: <input>:1:10: expected type 'string' but found 'int'\n | {'a': 1, 2: 'x'}.size() == 2\n | .........^\nERROR: <input>:1:13: expected type 'int' but found 'string'\n | {'a': 1, 2: 'x'}.size() == 2\n | ............^",
    )
    .await;
}

#[tokio::test]
async fn rules_must_be_bool_and_message_expressions_strings() {
    let env = TestEnv::start().await.expect("env");
    refused(
        &env,
        "nonbools",
        "self.replicas + 1",
        "cel expression must evaluate to a bool",
    )
    .await;
    // `dyn` is not `bool`: an int-or-string field alone is refused, a comparison of it is not.
    refused(
        &env,
        "dynrules",
        "self.port",
        "cel expression must evaluate to a bool",
    )
    .await;
    refused(
        &env,
        "dynbranches",
        "has(self.name) ? true : self.port",
        "cel expression must evaluate to a bool",
    )
    .await;
    create_ok(
        &env,
        CRDS,
        &rules_crd(
            "dyncompared",
            json!([{"rule": "self.port == 80 || self.port == 'http'",
                    "messageExpression": "'port ' + string(self.port)"}]),
        ),
    )
    .await;
    let rule = "self.replicas > 0";
    let answer = call(
        &env,
        "POST",
        CRDS,
        Some(&rules_crd(
            "messages",
            json!([{"rule": rule, "messageExpression": "self.replicas"}]),
        )),
    )
    .await;
    let field = rule_field(0, "messageExpression");
    let message = format!(
        "Invalid value: {}: messageExpression must evaluate to a string",
        rendered(rule, "self.replicas")
    );
    assert_invalid(
        &answer,
        &format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"messages.{GROUP}\" is invalid: {field}: {message}"
        ),
        &[("FieldValueInvalid", &message, &field)],
    );
    // Nor is a `dyn` message expression a `string`.
    let answer = call(
        &env,
        "POST",
        CRDS,
        Some(&rules_crd(
            "dynmessages",
            json!([{"rule": rule, "messageExpression": "self.port"}]),
        )),
    )
    .await;
    let message = format!(
        "Invalid value: {}: messageExpression must evaluate to a string",
        rendered(rule, "self.port")
    );
    assert_invalid(
        &answer,
        &format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"dynmessages.{GROUP}\" is invalid: {field}: {message}"
        ),
        &[("FieldValueInvalid", &message, &field)],
    );
}

#[tokio::test]
async fn updates_adding_an_ill_typed_rule_are_refused() {
    let env = TestEnv::start().await.expect("env");
    let good = rules_crd("updates", json!([{"rule": "self.replicas >= 0"}]));
    let created = create_ok(&env, CRDS, &good).await;
    let mut bad = created.clone();
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{"rule": "self.replicas >= 0"}, {"rule": "self.lables.size() < 3"}]);
    let (code, body) = call(&env, "PUT", &format!("{CRDS}/updates.{GROUP}"), Some(&bad)).await;
    assert_eq!(code, 422, "{body}");
    let causes = body["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(causes.len(), 1, "{body}");
    assert_eq!(causes[0]["field"], rule_field(1, "rule"));
    assert!(
        causes[0]["message"]
            .as_str()
            .unwrap_or_default()
            .ends_with("compilation failed: ERROR: <input>:1:5: undefined field 'lables'\n | self.lables.size() < 3\n | ....^"),
        "{body}"
    );
    // The stored CRD keeps its one rule.
    let (_, stored) = call(&env, "GET", &format!("{CRDS}/updates.{GROUP}"), None).await;
    assert_eq!(
        stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"],
        json!([{"rule": "self.replicas >= 0"}])
    );
}

#[tokio::test]
async fn well_typed_rules_install_and_run() {
    let env = TestEnv::start().await.expect("env");
    let rules = json!([
        {"rule": "self.replicas <= 10 && self.name.startsWith('w')", "messageExpression": "'bad ' + self.name"},
        {"rule": "self.items.all(i, i.size() < 5) && self.labels.all(k, self.labels[k] != k)"},
        {"rule": "type(self.port) == int ? self.port > 0 : self.port.endsWith('%')"},
        {"rule": "!has(self.labels.x) || self.labels.x == 'y'"},
        {"rule": "self.items.map(i, i.size()).sum() < 20"},
        {"rule": "cel.bind(n, self.name, n.size() < 20)"},
        {"rule": "self.?replicas.orValue(0) >= 0 && self.items[?0].orValue('') != 'nope'"},
    ]);
    create_ok(&env, CRDS, &rules_crd("goods", rules)).await;
    let collection = format!("/apis/{GROUP}/v1/namespaces/default/goods");
    wait_served(&env, &collection).await;
    let object = |name: &str, spec: Value| custom_object("Tgoods", name, spec);
    create_ok(
        &env,
        &collection,
        &object(
            "ok",
            json!({"replicas": 3, "name": "w1", "items": ["a"], "labels": {"x": "y"}, "port": "50%"}),
        ),
    )
    .await;
    let (code, body) = call(
        &env,
        "POST",
        &collection,
        Some(&object(
            "bad",
            json!({"replicas": 3, "name": "q", "port": 0}),
        )),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("bad q"), "{body}");
    assert!(
        message.contains("failed rule: type(self.port) == int"),
        "{body}"
    );
}

/// An object of this test group's `kind` named `name` with `spec`.
fn custom_object(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": kind,
           "metadata": {"name": name}, "spec": spec})
}

/// Waits until the custom resource `collection` is served.
async fn wait_served(env: &TestEnv, collection: &str) {
    for _ in 0..100 {
        let (code, _) = call(env, "GET", collection, None).await;
        if code == 200 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{collection} is never served");
}

/// Properties whose names CEL escapes are read under the escaped names the checker accepts
/// (`my-field` as `my__dash__field`, `namespace` as `__namespace__`), as upstream evaluates them.
#[tokio::test]
async fn escaped_property_names_are_read_by_rules() {
    let env = TestEnv::start().await.expect("env");
    let schema = json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.my__dash__field.startsWith('a')", "message": "dash"},
            {"rule": "!has(self.__namespace__) || self.__namespace__ != 'x'", "message": "ns"},
            {"rule": "self.labels.all(k, k != 'no-key')", "message": "label"},
        ],
        "properties": {
            "my-field": {"type": "string", "maxLength": 10},
            "namespace": {"type": "string", "maxLength": 10},
            "labels": {"type": "object", "maxProperties": 5,
                       "additionalProperties": {"type": "string", "maxLength": 10}},
        }
    });
    create_ok(&env, CRDS, &spec_crd(GROUP, "Tescaped", "escapeds", schema)).await;
    let collection = format!("/apis/{GROUP}/v1/namespaces/default/escapeds");
    wait_served(&env, &collection).await;
    let object = |name: &str, spec: Value| custom_object("Tescaped", name, spec);
    create_ok(
        &env,
        &collection,
        &object(
            "ok",
            json!({"my-field": "abc", "namespace": "y", "labels": {"a-b": "c"}}),
        ),
    )
    .await;
    let (code, body) = call(
        &env,
        "POST",
        &collection,
        Some(&object(
            "bad",
            json!({"my-field": "zzz", "namespace": "x", "labels": {"no-key": "c"}}),
        )),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let causes: Vec<&str> = body["details"]["causes"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["message"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(causes.len(), 3, "{body}");
    for message in ["dash", "ns", "label"] {
        assert!(
            causes.iter().any(|c| c.ends_with(message)),
            "{message} in {causes:?}"
        );
    }
}
