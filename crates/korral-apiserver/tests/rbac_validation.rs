//! `rbac.authorization.k8s.io/v1` validation through kube::Client, as upstream's
//! `pkg/apis/rbac/validation`: 422 `Invalid` Statuses with every cause (policy rules,
//! aggregation selectors, role references, subjects), the `cannot change roleRef` refusal on
//! update, defaults that make a short binding valid, and the bindings' Tables
//! (`Name Role Age` + wide `Users Groups ServiceAccounts`; roles keep `Name Created At`).

mod common;

use common::*;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const GROUP: &str = "rbac.authorization.k8s.io";

fn path(resource: &str, ns: Option<&str>) -> String {
    match ns {
        Some(ns) => format!("/apis/{GROUP}/v1/namespaces/{ns}/{resource}"),
        None => format!("/apis/{GROUP}/v1/{resource}"),
    }
}

async fn send(env: &TestEnv, method: &str, path: &str, body: &Value) -> (u16, Value) {
    raw(
        &env.client(),
        method,
        path,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await
}

#[tokio::test]
async fn roles_and_cluster_roles_refuse_bad_rules() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "rv").await;

    let answer = send(
        &env,
        "POST",
        &path("roles", Some("rv")),
        &json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Role",
        "metadata": {"name": "bad"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"]},
            {"nonResourceURLs": ["/healthz"], "verbs": ["get"]},
        ]}),
    )
    .await;
    assert_invalid(
        &answer,
        "Role.rbac.authorization.k8s.io \"bad\" is invalid: [rules[0].verbs: Required value: verbs must contain at least one value, rules[1].apiGroups: Required value: resource rules must supply at least one api group, rules[1].resources: Required value: resource rules must supply at least one resource, rules[2].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs]",
        &[
            (
                "FieldValueRequired",
                "Required value: verbs must contain at least one value",
                "rules[0].verbs",
            ),
            (
                "FieldValueRequired",
                "Required value: resource rules must supply at least one api group",
                "rules[1].apiGroups",
            ),
            (
                "FieldValueRequired",
                "Required value: resource rules must supply at least one resource",
                "rules[1].resources",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs",
                "rules[2].nonResourceURLs",
            ),
        ],
    );
    let roles: Api<Role> = Api::namespaced(env.client(), "rv");
    assert!(roles.get_opt("bad").await.expect("get").is_none());

    // A ClusterRole may name non-resource URLs, but not beside resources; its aggregation
    // selectors must be valid.
    let cluster_roles = path("clusterroles", None);
    let (code, body) = send(
        &env,
        "POST",
        &cluster_roles,
        &json!({"metadata": {"name": "urls"},
                "rules": [{"nonResourceURLs": ["/healthz", "/metrics"], "verbs": ["get"]}]}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let answer = send(
        &env,
        "POST",
        &cluster_roles,
        &json!({"metadata": {"name": "mixed"},
        "rules": [{"nonResourceURLs": ["/healthz"], "resources": ["pods"], "verbs": ["get"]}],
        "aggregationRule": {"clusterRoleSelectors": [
            {"matchExpressions": [{"key": "a", "operator": "Near"}]}
        ]}}),
    )
    .await;
    assert_invalid(
        &answer,
        "ClusterRole.rbac.authorization.k8s.io \"mixed\" is invalid: [rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: rules cannot apply to both regular resources and non-resource URLs, aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator, aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector.]",
        &[
            (
                "FieldValueInvalid",
                "Invalid value: [\"/healthz\"]: rules cannot apply to both regular resources and non-resource URLs",
                "rules[0].nonResourceURLs",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: \"Near\": not a valid selector operator",
                "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: null: invalid label selector.",
                "aggregationRule.clusterRoleSelectors[0]",
            ),
        ],
    );
    let answer = send(
        &env,
        "POST",
        &cluster_roles,
        &json!({"metadata": {"name": "empty-agg"}, "aggregationRule": {}}),
    )
    .await;
    assert_invalid(
        &answer,
        "ClusterRole.rbac.authorization.k8s.io \"empty-agg\" is invalid: aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil",
        &[(
            "FieldValueRequired",
            "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil",
            "aggregationRule.clusterRoleSelectors",
        )],
    );

    // Updates are validated too.
    let (code, mut urls) = send(&env, "GET", &format!("{cluster_roles}/urls"), &json!({})).await;
    assert_eq!(code, 200, "{urls}");
    urls["rules"][0]["verbs"] = json!([]);
    let answer = send(&env, "PUT", &format!("{cluster_roles}/urls"), &urls).await;
    assert_invalid(
        &answer,
        "ClusterRole.rbac.authorization.k8s.io \"urls\" is invalid: rules[0].verbs: Required value: verbs must contain at least one value",
        &[(
            "FieldValueRequired",
            "Required value: verbs must contain at least one value",
            "rules[0].verbs",
        )],
    );
}

#[tokio::test]
async fn bindings_refuse_bad_role_refs_and_subjects() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "bv").await;

    let answer = send(
        &env,
        "POST",
        &path("rolebindings", Some("bv")),
        &json!({"metadata": {"name": "bad"},
        "roleRef": {"apiGroup": "example.com", "kind": "Other", "name": "a/b"},
        "subjects": [
            {"kind": "ServiceAccount", "name": "Bad_Name", "apiGroup": GROUP},
            {"kind": "User", "name": "bob", "apiGroup": "example.com"},
            {"kind": "Group"},
            {"kind": "Robot", "name": "r2"},
        ]}),
    )
    .await;
    assert_invalid(
        &answer,
        "RoleBinding.rbac.authorization.k8s.io \"bad\" is invalid: [roleRef.apiGroup: Unsupported value: \"example.com\": supported values: \"rbac.authorization.k8s.io\", roleRef.kind: Unsupported value: \"Other\": supported values: \"Role\", \"ClusterRole\", roleRef.name: Invalid value: \"a/b\": may not contain '/', subjects[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*'), subjects[0].apiGroup: Unsupported value: \"rbac.authorization.k8s.io\": supported values: \"\", subjects[1].apiGroup: Unsupported value: \"example.com\": supported values: \"rbac.authorization.k8s.io\", subjects[2].name: Required value, subjects[3].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"]",
        &[
            (
                "FieldValueNotSupported",
                "Unsupported value: \"example.com\": supported values: \"rbac.authorization.k8s.io\"",
                "roleRef.apiGroup",
            ),
            (
                "FieldValueNotSupported",
                "Unsupported value: \"Other\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.kind",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: \"a/b\": may not contain '/'",
                "roleRef.name",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "subjects[0].name",
            ),
            (
                "FieldValueNotSupported",
                "Unsupported value: \"rbac.authorization.k8s.io\": supported values: \"\"",
                "subjects[0].apiGroup",
            ),
            (
                "FieldValueNotSupported",
                "Unsupported value: \"example.com\": supported values: \"rbac.authorization.k8s.io\"",
                "subjects[1].apiGroup",
            ),
            ("FieldValueRequired", "Required value", "subjects[2].name"),
            (
                "FieldValueNotSupported",
                "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
                "subjects[3].kind",
            ),
        ],
    );

    // A ClusterRoleBinding binds ClusterRoles only, and its service accounts need a namespace.
    let answer = send(
        &env,
        "POST",
        &path("clusterrolebindings", None),
        &json!({"metadata": {"name": "crb"},
                "roleRef": {"kind": "Role", "name": "r"},
                "subjects": [{"kind": "ServiceAccount", "name": "default"}]}),
    )
    .await;
    assert_invalid(
        &answer,
        "ClusterRoleBinding.rbac.authorization.k8s.io \"crb\" is invalid: [roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\", subjects[0].namespace: Required value]",
        &[
            (
                "FieldValueNotSupported",
                "Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "roleRef.kind",
            ),
            (
                "FieldValueRequired",
                "Required value",
                "subjects[0].namespace",
            ),
        ],
    );

    // A missing roleRef is defaulted (apiGroup), then refused for its kind and name.
    let answer = send(
        &env,
        "POST",
        &path("rolebindings", Some("bv")),
        &json!({"metadata": {"name": "noref"}}),
    )
    .await;
    assert_invalid(
        &answer,
        "RoleBinding.rbac.authorization.k8s.io \"noref\" is invalid: [roleRef.kind: Unsupported value: \"\": supported values: \"Role\", \"ClusterRole\", roleRef.name: Required value]",
        &[
            (
                "FieldValueNotSupported",
                "Unsupported value: \"\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.kind",
            ),
            ("FieldValueRequired", "Required value", "roleRef.name"),
        ],
    );

    // Defaults make a short binding valid: roleRef and User/Group subjects get the RBAC group,
    // a RoleBinding's service account may leave its namespace out.
    let bindings: Api<RoleBinding> = Api::namespaced(env.client(), "bv");
    let created = bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "ok"},
                "roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "User", "name": "alice", "apiGroup": ""},
                             {"kind": "Group", "name": "devs", "apiGroup": ""},
                             {"kind": "ServiceAccount", "name": "default", "apiGroup": ""}]}))
            .expect("binding"),
        )
        .await
        .expect("a short binding is valid once defaulted");
    assert_eq!(created.role_ref.api_group.as_deref(), Some(GROUP));
    let subjects = created.subjects.unwrap_or_default();
    assert_eq!(subjects[0].api_group.as_deref(), Some(GROUP));
    assert_eq!(subjects[1].api_group.as_deref(), Some(GROUP));
    assert_eq!(subjects[2].api_group.as_deref().unwrap_or(""), "");
}

#[tokio::test]
async fn role_ref_cannot_change() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "rr").await;

    let bindings: Api<RoleBinding> = Api::namespaced(env.client(), "rr");
    let mut binding = bindings
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "b"},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "User", "name": "alice"}]}))
            .expect("binding"),
        )
        .await
        .expect("create binding");
    // Subjects may change.
    binding.subjects.get_or_insert_with(Vec::new).push(
        serde_json::from_value(json!({"kind": "User", "name": "bob", "apiGroup": GROUP}))
            .expect("subject"),
    );
    let mut binding = bindings
        .replace("b", &PostParams::default(), &binding)
        .await
        .expect("subjects may change");
    // The role may not.
    binding.role_ref.name = "edit".to_string();
    let err = bindings
        .replace("b", &PostParams::default(), &binding)
        .await
        .expect_err("roleRef is immutable");
    let message = "RoleBinding.rbac.authorization.k8s.io \"b\" is invalid: roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef";
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 422);
            assert_eq!(status.reason, "Invalid");
            assert_eq!(status.message, message);
        }
        other => panic!("unexpected error {other:?}"),
    }
    let stored = bindings.get("b").await.expect("get");
    assert_eq!(stored.role_ref.name, "view");
    assert_eq!(stored.subjects.map(|s| s.len()), Some(2));

    // The same refusal through a merge patch on a ClusterRoleBinding, with its cause.
    let cluster: Api<ClusterRoleBinding> = Api::all(env.client());
    cluster
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "crb"},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"}}))
            .expect("binding"),
        )
        .await
        .expect("create cluster role binding");
    let answer = raw(
        &env.client(),
        "PATCH",
        &path("clusterrolebindings/crb", None),
        Some("application/merge-patch+json"),
        json!({"roleRef": {"kind": "Role"}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_invalid(
        &answer,
        "ClusterRoleBinding.rbac.authorization.k8s.io \"crb\" is invalid: [roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\", roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"Role\",\"Name\":\"view\"}: cannot change roleRef]",
        &[
            (
                "FieldValueNotSupported",
                "Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "roleRef.kind",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"Role\",\"Name\":\"view\"}: cannot change roleRef",
                "roleRef",
            ),
        ],
    );
}

fn columns(table: &Value) -> Vec<(String, String, i64)> {
    table["columnDefinitions"]
        .as_array()
        .expect("columnDefinitions")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_string(),
                c["type"].as_str().unwrap_or("").to_string(),
                c["priority"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

fn row<'a>(table: &'a Value, name: &str) -> &'a Value {
    table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["cells"][0] == name)
        .unwrap_or_else(|| panic!("no row {name} in {table}"))
}

#[tokio::test]
async fn binding_and_role_tables_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "tabs").await;
    let (code, body) = send(
        &env,
        "POST",
        &path("rolebindings", Some("tabs")),
        &json!({"metadata": {"name": "rb"},
                "roleRef": {"kind": "Role", "name": "r"},
                "subjects": [{"kind": "User", "name": "alice"},
                             {"kind": "ServiceAccount", "name": "builder"},
                             {"kind": "Group", "name": "devs"},
                             {"kind": "ServiceAccount", "name": "sa", "namespace": "other"},
                             {"kind": "User", "name": "bob"}]}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = send(
        &env,
        "POST",
        &path("roles", Some("tabs")),
        &json!({"metadata": {"name": "r"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    let expected = |_: ()| {
        vec![
            ("Name".to_string(), "string".to_string(), 0),
            ("Role".to_string(), "string".to_string(), 0),
            ("Age".to_string(), "string".to_string(), 0),
            ("Users".to_string(), "string".to_string(), 1),
            ("Groups".to_string(), "string".to_string(), 1),
            ("ServiceAccounts".to_string(), "string".to_string(), 1),
        ]
    };
    let bindings = table(&env, &path("rolebindings", Some("tabs"))).await;
    assert_eq!(columns(&bindings), expected(()));
    assert_eq!(
        bindings["columnDefinitions"][1]["description"],
        "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."
    );
    assert_eq!(
        bindings["columnDefinitions"][3]["description"],
        "Users in the roleBinding"
    );
    let cells = &row(&bindings, "rb")["cells"];
    assert_eq!(cells[1], "Role/r");
    assert!(
        cells[2].as_str().is_some_and(|age| age.ends_with('s')),
        "{cells}"
    );
    assert_eq!(cells[3], "alice, bob");
    assert_eq!(cells[4], "devs");
    assert_eq!(cells[5], "/builder, other/sa");

    // Cluster role bindings, listed and one by one.
    let (code, body) = send(
        &env,
        "POST",
        &path("clusterrolebindings", None),
        &json!({"metadata": {"name": "admins"},
                "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "Group", "name": "system:masters"},
                             {"kind": "Group", "name": "ops"}]}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let cluster = table(&env, &path("clusterrolebindings", None)).await;
    assert_eq!(columns(&cluster), expected(()));
    assert_eq!(
        cluster["columnDefinitions"][1]["description"],
        "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error."
    );
    assert_eq!(
        cluster["columnDefinitions"][5]["description"],
        "ServiceAccounts in the clusterRoleBinding"
    );
    assert_eq!(row(&cluster, "admins")["cells"][4], "system:masters, ops");
    let one = table(&env, &path("clusterrolebindings/admins", None)).await;
    let cells = &row(&one, "admins")["cells"];
    assert_eq!(cells[1], "ClusterRole/cluster-admin");
    assert_eq!(cells[3], "");
    assert_eq!(cells[5], "");

    // Roles keep upstream's default table.
    let roles = table(&env, &path("roles", Some("tabs"))).await;
    assert_eq!(
        columns(&roles),
        vec![
            ("Name".to_string(), "string".to_string(), 0),
            ("Created At".to_string(), "date".to_string(), 0),
        ]
    );
    let clusterroles = table(&env, &path("clusterroles", None)).await;
    assert_eq!(columns(&clusterroles).len(), 2);
}
