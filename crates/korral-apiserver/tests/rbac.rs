//! RBAC authorization through kube-rs: bindings for service accounts, users and groups,
//! resourceNames, subresources, aggregation, impersonation, access reviews, 403 bodies.

mod common;

use std::time::Duration;

use common::{assert_invalid, rbac_env};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec, SelfSubjectRulesReview, SelfSubjectRulesReviewSpec,
    SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use korral_testenv::{AuthorizationMode, TestEnv, wait_until};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn from<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("valid object")
}

async fn namespace(env: &TestEnv, name: &str) {
    let api: Api<Namespace> = Api::all(env.client());
    api.create(
        &PostParams::default(),
        &from(json!({"metadata": {"name": name}})),
    )
    .await
    .expect("create namespace");
}

async fn role(env: &TestEnv, ns: &str, name: &str, rules: Value) {
    let api: Api<Role> = Api::namespaced(env.client(), ns);
    api.create(
        &PostParams::default(),
        &from(json!({"metadata": {"name": name}, "rules": rules})),
    )
    .await
    .expect("create role");
}

async fn cluster_role(env: &TestEnv, obj: Value) {
    let api: Api<ClusterRole> = Api::all(env.client());
    api.create(&PostParams::default(), &from(obj))
        .await
        .expect("create cluster role");
}

async fn role_binding(
    env: &TestEnv,
    ns: &str,
    name: &str,
    role_kind: &str,
    role: &str,
    subjects: Value,
) {
    let api: Api<RoleBinding> = Api::namespaced(env.client(), ns);
    api.create(
        &PostParams::default(),
        &from(json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": subjects,
        })),
    )
    .await
    .expect("create role binding");
}

async fn cluster_role_binding(env: &TestEnv, name: &str, role: &str, subjects: Value) {
    let api: Api<ClusterRoleBinding> = Api::all(env.client());
    api.create(
        &PostParams::default(),
        &from(json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects,
        })),
    )
    .await
    .expect("create cluster role binding");
}

fn sa_subject(ns: &str, name: &str) -> Value {
    json!([{"kind": "ServiceAccount", "name": name, "namespace": ns}])
}

async fn configmap(env: &TestEnv, ns: &str, name: &str) {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), ns);
    api.create(
        &PostParams::default(),
        &from(json!({"metadata": {"name": name}, "data": {"k": "v"}})),
    )
    .await
    .expect("create configmap");
}

/// The status of a failed kube call (panics on success or a non-API error).
fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn assert_forbidden<T: std::fmt::Debug>(result: kube::Result<T>, message: &str) {
    let status = api_error(result);
    assert_eq!(status.code, 403, "{status:?}");
    assert_eq!(status.reason, "Forbidden");
    assert_eq!(status.message, message);
}

/// A raw request with extra headers through a client; status code and JSON body.
async fn raw(
    client: &Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let mut builder = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let bytes = match body {
        Some(b) => {
            builder = builder.header("content-type", "application/json");
            serde_json::to_vec(&b).expect("json")
        }
        None => Vec::new(),
    };
    let response = client
        .send(
            builder
                .body(bytes)
                .expect("request")
                .map(kube::client::Body::from),
        )
        .await
        .expect("send");
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    let value = serde_json::from_slice(&bytes)
        .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

async fn can_i(
    client: &Client,
    ns: &str,
    verb: &str,
    group: &str,
    resource: &str,
    sub: &str,
    name: &str,
) -> bool {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(ns.into()).filter(|s: &String| !s.is_empty()),
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                subresource: Some(sub.into()).filter(|s: &String| !s.is_empty()),
                name: Some(name.into()).filter(|s: &String| !s.is_empty()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = api
        .create(&PostParams::default(), &review)
        .await
        .expect("SelfSubjectAccessReview");
    answer.status.expect("status").allowed
}

#[tokio::test]
async fn role_binding_grants_a_service_account_only_its_namespace() {
    let env = rbac_env().await;
    namespace(&env, "a").await;
    namespace(&env, "b").await;
    configmap(&env, "a", "one").await;
    configmap(&env, "b", "two").await;
    role(&env, "a", "cm-reader", json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}])).await;
    role_binding(
        &env,
        "a",
        "robot-reads",
        "Role",
        "cm-reader",
        sa_subject("a", "robot"),
    )
    .await;
    let robot = env
        .client_as_service_account("a", "robot")
        .await
        .expect("sa client");

    let in_a: Api<ConfigMap> = Api::namespaced(robot.clone(), "a");
    let names: Vec<_> = in_a
        .list(&ListParams::default())
        .await
        .expect("list in a")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert!(names.contains(&"one".to_string()), "{names:?}");
    assert_eq!(
        in_a.get("one").await.expect("get").data.expect("data")["k"],
        "v"
    );

    let in_b: Api<ConfigMap> = Api::namespaced(robot.clone(), "b");
    assert_forbidden(
        in_b.list(&ListParams::default()).await,
        "configmaps is forbidden: User \"system:serviceaccount:a:robot\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"b\"",
    );
    assert_forbidden(
        in_b.get("two").await,
        "configmaps \"two\" is forbidden: User \"system:serviceaccount:a:robot\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"b\"",
    );
    // Lists and watches across namespaces need a cluster-wide grant.
    let everywhere: Api<ConfigMap> = Api::all(robot.clone());
    assert_forbidden(
        everywhere.list(&ListParams::default()).await,
        "configmaps is forbidden: User \"system:serviceaccount:a:robot\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope",
    );
    // Writes are not granted either.
    assert_forbidden(
        in_a.delete("one", &DeleteParams::default()).await,
        "configmaps \"one\" is forbidden: User \"system:serviceaccount:a:robot\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"a\"",
    );
    // Another account in the same namespace gets nothing.
    let other = env
        .client_as_service_account("a", "other")
        .await
        .expect("sa client");
    let other_in_a: Api<ConfigMap> = Api::namespaced(other, "a");
    assert_eq!(
        api_error(other_in_a.list(&ListParams::default()).await).code,
        403
    );
    // Discovery stays readable.
    let (code, _) = raw(&robot, "GET", "/apis", &[], None).await;
    assert_eq!(code, 200);
    let (code, _) = raw(&robot, "GET", "/api/v1", &[], None).await;
    assert_eq!(code, 200);
    let (code, body) = raw(&robot, "GET", "/metrics", &[], None).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "forbidden: User \"system:serviceaccount:a:robot\" cannot get path \"/metrics\""
    );
}

#[tokio::test]
async fn cluster_role_bindings_apply_to_users_and_groups() {
    let env = rbac_env().await;
    namespace(&env, "x").await;
    cluster_role(&env, json!({"metadata": {"name": "pod-reader"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]})).await;
    cluster_role_binding(
        &env,
        "devs-read-pods",
        "pod-reader",
        json!([{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]),
    )
    .await;
    cluster_role_binding(
        &env,
        "carol-reads-pods",
        "pod-reader",
        json!([{"kind": "User", "name": "carol", "apiGroup": "rbac.authorization.k8s.io"}]),
    )
    .await;

    let dave = env.client_as_user("dave", &["devs"]).await.expect("client");
    let pods: Api<Pod> = Api::all(dave.clone());
    pods.list(&ListParams::default())
        .await
        .expect("group member lists pods cluster-wide");
    let carol = env.client_as_user("carol", &[]).await.expect("client");
    let in_x: Api<Pod> = Api::namespaced(carol, "x");
    in_x.list(&ListParams::default())
        .await
        .expect("user subject lists pods");
    let eve = env.client_as_user("eve", &["qa"]).await.expect("client");
    let eve_pods: Api<Pod> = Api::namespaced(eve, "x");
    assert_forbidden(
        eve_pods.list(&ListParams::default()).await,
        "pods is forbidden: User \"eve\" cannot list resource \"pods\" in API group \"\" in the namespace \"x\"",
    );
    // The grant is read-only.
    let dave_pods: Api<Pod> = Api::namespaced(dave, "x");
    let pod: Pod = from(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    );
    assert_eq!(
        api_error(dave_pods.create(&PostParams::default(), &pod).await).code,
        403
    );

    // A binding to a missing role explains itself.
    cluster_role_binding(
        &env,
        "ghost",
        "no-such-role",
        json!([{"kind": "User", "name": "gina", "apiGroup": "rbac.authorization.k8s.io"}]),
    )
    .await;
    let gina = env.client_as_user("gina", &[]).await.expect("client");
    let gina_pods: Api<Pod> = Api::namespaced(gina, "x");
    assert_forbidden(
        gina_pods.list(&ListParams::default()).await,
        "pods is forbidden: User \"gina\" cannot list resource \"pods\" in API group \"\" in the namespace \"x\": RBAC: clusterrole.rbac.authorization.k8s.io \"no-such-role\" not found",
    );
}

#[tokio::test]
async fn resource_names_and_subresources_are_honoured() {
    let env = rbac_env().await;
    namespace(&env, "s").await;
    configmap(&env, "s", "allowed").await;
    configmap(&env, "s", "secret-ish").await;
    role(&env, "s", "narrow", json!([
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["allowed"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["get", "patch", "update"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get", "patch"]},
    ])).await;
    role_binding(&env, "s", "narrow", "Role", "narrow", sa_subject("s", "op")).await;
    let op = env
        .client_as_service_account("s", "op")
        .await
        .expect("client");

    let cms: Api<ConfigMap> = Api::namespaced(op.clone(), "s");
    cms.get("allowed").await.expect("named configmap");
    assert_forbidden(
        cms.get("secret-ish").await,
        "configmaps \"secret-ish\" is forbidden: User \"system:serviceaccount:s:op\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"s\"",
    );
    // resourceNames never grant a list.
    assert_eq!(api_error(cms.list(&ListParams::default()).await).code, 403);

    let admin_deploys: Api<Deployment> = Api::namespaced(env.client(), "s");
    admin_deploys
        .create(&PostParams::default(), &from(json!({
            "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
        })))
        .await
        .expect("create deployment");
    let deploys: Api<Deployment> = Api::namespaced(op.clone(), "s");
    assert_forbidden(
        deploys.get("web").await,
        "deployments.apps \"web\" is forbidden: User \"system:serviceaccount:s:op\" cannot get resource \"deployments\" in API group \"apps\" in the namespace \"s\"",
    );
    let scale = deploys.get_scale("web").await.expect("get scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(1));
    deploys
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("patch scale");
    assert_eq!(
        admin_deploys.get("web").await.expect("get").spec.replicas,
        Some(3)
    );
    assert_forbidden(
        deploys
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 5}})),
            )
            .await,
        "deployments.apps \"web\" is forbidden: User \"system:serviceaccount:s:op\" cannot patch resource \"deployments\" in API group \"apps\" in the namespace \"s\"",
    );
    assert_eq!(
        admin_deploys.get("web").await.expect("get").spec.replicas,
        Some(3),
        "a rejected patch changes nothing"
    );

    let admin_pods: Api<Pod> = Api::namespaced(env.client(), "s");
    admin_pods
        .create(&PostParams::default(), &from(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})))
        .await
        .expect("create pod");
    let pods: Api<Pod> = Api::namespaced(op.clone(), "s");
    pods.patch_status(
        "p",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running"}})),
    )
    .await
    .expect("patch pods/status");
    assert_forbidden(
        pods.patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await,
        "pods \"p\" is forbidden: User \"system:serviceaccount:s:op\" cannot patch resource \"pods\" in API group \"\" in the namespace \"s\"",
    );
    assert!(can_i(&op, "s", "update", "apps", "deployments", "scale", "web").await);
    assert!(!can_i(&op, "s", "update", "apps", "deployments", "status", "web").await);
    assert!(can_i(&op, "s", "get", "", "configmaps", "", "allowed").await);
    assert!(!can_i(&op, "s", "get", "", "configmaps", "", "other").await);
}

#[tokio::test]
async fn aggregated_cluster_roles_follow_their_sources() {
    let env = rbac_env().await;
    namespace(&env, "m").await;
    let roles: Api<ClusterRole> = Api::all(env.client());
    // The bootstrap aggregated roles are filled in.
    let view_has_pods = || {
        let roles = roles.clone();
        async move {
            roles
                .get("view")
                .await
                .ok()
                .and_then(|r| r.rules)
                .is_some_and(|rules| {
                    rules.iter().any(|r| {
                        r.resources
                            .as_ref()
                            .is_some_and(|res| res.iter().any(|x| x == "pods"))
                    })
                })
        }
    };
    wait_until(Duration::from_secs(10), "view to aggregate", view_has_pods)
        .await
        .expect("view");
    wait_until(
        Duration::from_secs(10),
        "admin to include edit and view",
        || {
            let roles = roles.clone();
            async move {
                roles
                    .get("admin")
                    .await
                    .ok()
                    .and_then(|r| r.rules)
                    .is_some_and(|rules| {
                        let has = |res: &str| {
                            rules.iter().any(|r| {
                                r.resources
                                    .as_ref()
                                    .is_some_and(|x| x.iter().any(|x| x == res))
                            })
                        };
                        has("pods") && has("secrets") && has("rolebindings")
                    })
            }
        },
    )
    .await
    .expect("admin");

    cluster_role(&env, json!({
        "metadata": {"name": "monitoring"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-monitoring": "true"}}]},
        "rules": [],
    })).await;
    cluster_role_binding(&env, "monitoring", "monitoring", sa_subject("m", "prom")).await;
    let prom = env
        .client_as_service_account("m", "prom")
        .await
        .expect("client");
    let pods: Api<Pod> = Api::all(prom.clone());
    assert_eq!(api_error(pods.list(&ListParams::default()).await).code, 403);

    cluster_role(&env, json!({
        "metadata": {"name": "monitoring-pods", "labels": {"example.com/aggregate-to-monitoring": "true"}},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    })).await;
    wait_until(Duration::from_secs(10), "monitoring to gain pods", || {
        let pods = pods.clone();
        async move { pods.list(&ListParams::default()).await.is_ok() }
    })
    .await
    .expect("aggregated grant");
    let cms: Api<ConfigMap> = Api::all(prom.clone());
    assert_eq!(api_error(cms.list(&ListParams::default()).await).code, 403);

    // Changing the source changes the aggregate.
    roles
        .patch(
            "monitoring-pods",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
            })),
        )
        .await
        .expect("patch source");
    wait_until(
        Duration::from_secs(10),
        "monitoring to switch to configmaps",
        || {
            let (pods, cms) = (pods.clone(), cms.clone());
            async move {
                cms.list(&ListParams::default()).await.is_ok()
                    && pods.list(&ListParams::default()).await.is_err()
            }
        },
    )
    .await
    .expect("re-aggregated");
    let monitoring = roles.get("monitoring").await.expect("get");
    // The controller writes through the pipeline, as upstream's field manager.
    let managers: Vec<String> = monitoring
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(
        managers
            .iter()
            .any(|m| m == "clusterrole-aggregation-controller"),
        "{managers:?}"
    );
    assert_eq!(
        serde_json::to_value(monitoring.rules).expect("json"),
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}])
    );
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb() {
    let env = rbac_env().await;
    namespace(&env, "i").await;
    cluster_role(
        &env,
        json!({"metadata": {"name": "impersonate-alice"}, "rules": [
            {"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]},
        ]}),
    )
    .await;
    // Core-group "users" does not count: upstream checks authentication.k8s.io.
    cluster_role_binding(
        &env,
        "imp-wrong-group",
        "impersonate-alice",
        sa_subject("i", "imp"),
    )
    .await;
    let imp = env
        .client_as_service_account("i", "imp")
        .await
        .expect("client");
    let (code, body) = raw(
        &imp,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[("Impersonate-User", "alice")],
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "users.authentication.k8s.io \"alice\" is forbidden: User \"system:serviceaccount:i:imp\" cannot impersonate resource \"users\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
    assert_eq!(
        body["details"],
        json!({"name": "alice", "group": "authentication.k8s.io", "kind": "users"})
    );

    cluster_role(&env, json!({"metadata": {"name": "impersonator"}, "rules": [
        {"apiGroups": ["authentication.k8s.io"], "resources": ["users"], "resourceNames": ["alice"], "verbs": ["impersonate"]},
        {"apiGroups": ["authentication.k8s.io"], "resources": ["groups"], "resourceNames": ["auditors"], "verbs": ["impersonate"]},
        {"apiGroups": [""], "resources": ["serviceaccounts"], "resourceNames": ["target"], "verbs": ["impersonate"]},
    ]})).await;
    cluster_role_binding(&env, "imp", "impersonator", sa_subject("i", "imp")).await;
    let whoami = |headers: Vec<(&'static str, &'static str)>| {
        let imp = imp.clone();
        async move {
            raw(
                &imp,
                "POST",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                &headers,
                Some(
                    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
                ),
            )
            .await
        }
    };
    let (code, body) = whoami(vec![
        ("Impersonate-User", "alice"),
        ("Impersonate-Group", "auditors"),
    ])
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "alice", "groups": ["auditors", "system:authenticated"]})
    );
    let (code, body) = whoami(vec![("Impersonate-User", "system:serviceaccount:i:target")]).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        json!({"username": "system:serviceaccount:i:target", "groups": ["system:serviceaccounts", "system:serviceaccounts:i", "system:authenticated"]})
    );
    let (code, body) = whoami(vec![("Impersonate-User", "bob")]).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "users.authentication.k8s.io \"bob\" is forbidden: User \"system:serviceaccount:i:imp\" cannot impersonate resource \"users\" in API group \"authentication.k8s.io\" at the cluster scope"
    );
    let (code, body) = whoami(vec![
        ("Impersonate-User", "alice"),
        ("Impersonate-Group", "system:masters"),
    ])
    .await;
    assert_eq!(code, 403, "escalating to system:masters is denied: {body}");
    let (code, body) = whoami(vec![("Impersonate-User", "system:serviceaccount:i:other")]).await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "serviceaccounts \"other\" is forbidden: User \"system:serviceaccount:i:imp\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"i\""
    );

    // The impersonated user's own permissions apply, not the impersonator's.
    let (code, body) = raw(
        &imp,
        "GET",
        "/api/v1/namespaces/i/configmaps",
        &[("Impersonate-User", "alice")],
        None,
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"i\""
    );
    // The admin (system:masters) may impersonate anyone.
    let admin_as: Api<SelfSubjectReview> =
        Api::all(env.client_as_user("zed", &["g1"]).await.expect("client"));
    let review = admin_as
        .create(
            &PostParams::default(),
            &from(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
        )
        .await
        .expect("whoami");
    let info = review.status.and_then(|s| s.user_info).expect("user info");
    assert_eq!(info.username.as_deref(), Some("zed"));
    assert_eq!(
        info.groups,
        Some(vec!["g1".to_string(), "system:authenticated".to_string()])
    );
}

#[tokio::test]
async fn access_reviews_answer_for_self_and_others() {
    let env = rbac_env().await;
    namespace(&env, "r").await;
    role(
        &env,
        "r",
        "cm-editor",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]}]),
    )
    .await;
    role_binding(
        &env,
        "r",
        "edit",
        "Role",
        "cm-editor",
        sa_subject("r", "bot"),
    )
    .await;
    let bot = env
        .client_as_service_account("r", "bot")
        .await
        .expect("client");
    assert!(can_i(&bot, "r", "create", "", "configmaps", "", "").await);
    assert!(!can_i(&bot, "r", "delete", "", "configmaps", "", "").await);
    assert!(!can_i(&bot, "default", "create", "", "configmaps", "", "").await);
    // Everyone may ask about themselves and read discovery.
    let ssar: Api<SelfSubjectAccessReview> = Api::all(bot.clone());
    let answer = ssar
        .create(
            &PostParams::default(),
            &SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    non_resource_attributes: Some(NonResourceAttributes {
                        path: Some("/apis".into()),
                        verb: Some("get".into()),
                    }),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .expect("non-resource review");
    assert!(answer.status.expect("status").allowed);
    // Exactly one kind of attributes.
    let status = api_error(
        ssar.create(&PostParams::default(), &SelfSubjectAccessReview::default())
            .await,
    );
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified"
    );

    // SubjectAccessReview: the admin asks about the bot; the bot may not ask about others.
    let sar_review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some("system:serviceaccount:r:bot".into()),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:r".into(),
                "system:authenticated".into(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                namespace: Some("r".into()),
                verb: Some("get".into()),
                resource: Some("configmaps".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let sar: Api<SubjectAccessReview> = Api::all(env.client());
    let answer = sar
        .create(&PostParams::default(), &sar_review)
        .await
        .expect("SAR");
    let status = answer.status.expect("status");
    assert!(status.allowed);
    assert_eq!(
        status.reason.as_deref(),
        Some(
            "RBAC: allowed by RoleBinding \"edit/r\" of Role \"cm-editor\" to ServiceAccount \"bot/r\""
        )
    );
    let mut denied = sar_review.clone();
    if let Some(attrs) = denied.spec.resource_attributes.as_mut() {
        attrs.verb = Some("delete".into());
    }
    assert!(
        !sar.create(&PostParams::default(), &denied)
            .await
            .expect("SAR")
            .status
            .expect("status")
            .allowed
    );
    let bot_sar: Api<SubjectAccessReview> = Api::all(bot.clone());
    assert_forbidden(
        bot_sar.create(&PostParams::default(), &sar_review).await,
        "subjectaccessreviews.authorization.k8s.io is forbidden: User \"system:serviceaccount:r:bot\" cannot create resource \"subjectaccessreviews\" in API group \"authorization.k8s.io\" at the cluster scope",
    );

    // SelfSubjectRulesReview lists what the bot holds in the namespace.
    let rules: Api<SelfSubjectRulesReview> = Api::all(bot.clone());
    let answer = rules
        .create(
            &PostParams::default(),
            &SelfSubjectRulesReview {
                spec: SelfSubjectRulesReviewSpec {
                    namespace: Some("r".into()),
                },
                ..Default::default()
            },
        )
        .await
        .expect("rules review");
    let status = serde_json::to_value(answer.status.expect("status")).expect("json");
    assert!(
        status["resourceRules"].as_array().expect("rules").contains(
            &json!({"verbs": ["create", "get"], "apiGroups": [""], "resources": ["configmaps"]})
        ),
        "{status}"
    );
    assert_eq!(status["incomplete"], false);
}

#[tokio::test]
async fn a_denied_write_answers_the_upstream_forbidden_body_and_changes_nothing() {
    let env = rbac_env().await;
    namespace(&env, "tabs").await;
    let robot = env
        .client_as_service_account("tabs", "robot")
        .await
        .expect("client");
    let (code, body) = raw(
        &robot,
        "GET",
        "/api/v1/namespaces/tabs/configmaps",
        &[],
        None,
    )
    .await;
    assert_eq!(code, 403);
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/reference/error-403-forbidden-impersonated.json"
        ))
        .expect("reference capture"),
    )
    .expect("reference");
    assert_eq!(body, reference["body"]);

    let (code, body) = raw(
        &robot,
        "POST",
        "/api/v1/namespaces/tabs/configmaps",
        &[],
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "sneaky"}})),
    )
    .await;
    assert_eq!(code, 403, "{body}");
    configmap(&env, "tabs", "kept").await;
    let (code, _) = raw(
        &robot,
        "DELETE",
        "/api/v1/namespaces/tabs/configmaps/kept",
        &[],
        None,
    )
    .await;
    assert_eq!(code, 403);
    let (code, _) = raw(
        &robot,
        "DELETE",
        "/api/v1/namespaces/tabs/configmaps",
        &[],
        None,
    )
    .await;
    assert_eq!(code, 403);
    let (code, _) = raw(&robot, "PUT", "/api/v1/namespaces/tabs/configmaps/kept", &[], Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}, "data": {"k": "changed"}}))).await;
    assert_eq!(code, 403);
    let admin: Api<ConfigMap> = Api::namespaced(env.client(), "tabs");
    let names: Vec<_> = admin
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert!(!names.contains(&"sneaky".to_string()), "{names:?}");
    assert_eq!(
        admin.get("kept").await.expect("kept").data.expect("data")["k"],
        "v"
    );
}

#[tokio::test]
async fn service_account_tokens_die_with_their_account() {
    let env = rbac_env().await;
    namespace(&env, "t").await;
    let token = env
        .service_account_token("t", "short")
        .await
        .expect("token");
    let client = env
        .client_as_service_account("t", "short")
        .await
        .expect("client");
    let whoami: Api<SelfSubjectReview> = Api::all(client.clone());
    let review = whoami
        .create(
            &PostParams::default(),
            &from(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
        )
        .await
        .expect("whoami");
    let info = review.status.and_then(|s| s.user_info).expect("info");
    assert_eq!(
        info.username.as_deref(),
        Some("system:serviceaccount:t:short")
    );
    assert!(info.uid.is_some_and(|u| !u.is_empty()));

    // TokenReview of the issued token (as admin).
    let (code, body) = raw(&env.client(), "POST", "/apis/authentication.k8s.io/v1/tokenreviews", &[], Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}))).await;
    assert_eq!(code, 201);
    assert_eq!(body["status"]["authenticated"], true);
    assert_eq!(
        body["status"]["user"]["username"],
        "system:serviceaccount:t:short"
    );

    let sas: Api<ServiceAccount> = Api::namespaced(env.client(), "t");
    sas.delete("short", &DeleteParams::default())
        .await
        .expect("delete sa");
    let status = api_error(
        whoami
            .create(
                &PostParams::default(),
                &from(
                    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
                ),
            )
            .await,
    );
    assert_eq!(status.code, 401);
    // A new account with the same name does not revive old tokens.
    sas.create(
        &PostParams::default(),
        &from(json!({"metadata": {"name": "short"}})),
    )
    .await
    .expect("recreate");
    assert_eq!(api_error(whoami.create(&PostParams::default(), &from(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}))).await).code, 401);
    let (code, body) = raw(&env.client(), "POST", "/apis/authentication.k8s.io/v1/tokenreviews", &[], Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}))).await;
    assert_eq!(
        (code, body["status"]["authenticated"].clone()),
        (201, json!(false))
    );
    // TokenRequest validates its spec.
    let (code, body) = raw(&env.client(), "POST", "/api/v1/namespaces/t/serviceaccounts/short/token", &[], Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 10}}))).await;
    assert_eq!(code, 422, "{body}");
    let (code, _) = raw(
        &env.client(),
        "POST",
        "/api/v1/namespaces/t/serviceaccounts/missing/token",
        &[],
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})),
    )
    .await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn always_allow_mode_is_unchanged() {
    let env = TestEnv::start().await.expect("env");
    let robot = env
        .client_as_service_account("default", "robot")
        .await
        .expect("client");
    let cms: Api<ConfigMap> = Api::all(robot.clone());
    cms.list(&ListParams::default())
        .await
        .expect("anything goes");
    let in_default: Api<ConfigMap> = Api::namespaced(robot.clone(), "default");
    in_default
        .create(
            &PostParams::default(),
            &from(json!({"metadata": {"name": "free"}})),
        )
        .await
        .expect("create");
    assert!(can_i(&robot, "kube-system", "delete", "", "secrets", "", "").await);
    // No bootstrap roles are created in allow-all mode.
    let roles: Api<ClusterRole> = Api::all(env.client());
    assert!(roles.get_opt("cluster-admin").await.expect("get").is_none());
}

#[tokio::test]
async fn durable_servers_keep_roles_and_accept_their_tokens_after_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let start = || async {
        TestEnv::builder()
            .server_config(korral_apiserver::ServerConfig::durable(dir.path()))
            .authorization(AuthorizationMode::Rbac)
            .start()
            .await
            .expect("start durable RBAC env")
    };
    let env = start().await;
    namespace(&env, "d").await;
    role(
        &env,
        "d",
        "cm-reader",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
    )
    .await;
    role_binding(
        &env,
        "d",
        "bot",
        "Role",
        "cm-reader",
        sa_subject("d", "bot"),
    )
    .await;
    let token = env.service_account_token("d", "bot").await.expect("token");
    env.shutdown().await;

    let env = start().await;
    let kubeconfig = korral_apiserver::kubeconfig::render(
        env.server().url(),
        env.server().ca_pem(),
        &token,
        "korral",
    );
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&kubeconfig).expect("kubeconfig"),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    let bot = Client::try_from(config).expect("client");
    let cms: Api<ConfigMap> = Api::namespaced(bot.clone(), "d");
    cms.list(&ListParams::default())
        .await
        .expect("the old token still works");
    let other: Api<ConfigMap> = Api::namespaced(bot, "default");
    assert_eq!(
        api_error(other.list(&ListParams::default()).await).code,
        403
    );
    env.shutdown().await;
}

#[tokio::test]
async fn an_operator_runs_under_the_rbac_of_its_manifests() {
    let env = rbac_env().await;
    // The shape `korral generate` writes: namespace, service account, manager ClusterRole and
    // binding, leader-election Role and binding.
    env.install_manifests(
        r#"
apiVersion: v1
kind: Namespace
metadata:
  name: memcached-system
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: memcached-controller-manager
  namespace: memcached-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: memcached-manager-role
rules:
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["create", "delete", "get", "list", "patch", "update", "watch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: memcached-manager-rolebinding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: memcached-manager-role
subjects:
- kind: ServiceAccount
  name: memcached-controller-manager
  namespace: memcached-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: memcached-leader-election-role
  namespace: memcached-system
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: memcached-leader-election-rolebinding
  namespace: memcached-system
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: memcached-leader-election-role
subjects:
- kind: ServiceAccount
  name: memcached-controller-manager
  namespace: memcached-system
"#,
    )
    .await
    .expect("install manifests");
    let operator = env
        .client_as_service_account("memcached-system", "memcached-controller-manager")
        .await
        .expect("client");
    let deployments: Api<Deployment> = Api::all(operator.clone());
    deployments
        .list(&ListParams::default())
        .await
        .expect("watch-list deployments everywhere");
    assert!(
        can_i(
            &operator,
            "memcached-system",
            "update",
            "coordination.k8s.io",
            "leases",
            "",
            ""
        )
        .await
    );
    assert!(
        !can_i(
            &operator,
            "default",
            "update",
            "coordination.k8s.io",
            "leases",
            "",
            ""
        )
        .await
    );
    // What the manifests forgot, the operator cannot do.
    let pods: Api<Pod> = Api::all(operator);
    assert_forbidden(
        pods.list(&ListParams::default()).await,
        "pods is forbidden: User \"system:serviceaccount:memcached-system:memcached-controller-manager\" cannot list resource \"pods\" in API group \"\" at the cluster scope",
    );
}

#[tokio::test]
async fn rbac_writes_cannot_grant_more_than_the_writer_holds() {
    let env = rbac_env().await;
    namespace(&env, "e").await;
    role(&env, "e", "rbac-manager", json!([
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create", "update", "patch", "get"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
    ])).await;
    role_binding(
        &env,
        "e",
        "mgr",
        "Role",
        "rbac-manager",
        sa_subject("e", "mgr"),
    )
    .await;
    let mgr = env
        .client_as_service_account("e", "mgr")
        .await
        .expect("client");
    let roles: Api<Role> = Api::namespaced(mgr.clone(), "e");
    roles
        .create(&PostParams::default(), &from(json!({"metadata": {"name": "cm-get"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]})))
        .await
        .expect("a role with held permissions");
    let held_groups =
        "[\"system:serviceaccounts\" \"system:serviceaccounts:e\" \"system:authenticated\"]";
    assert_forbidden(
        roles
            .create(
                &PostParams::default(),
                &from(json!({"metadata": {"name": "too-much"}, "rules": [
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
                    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
                ]})),
            )
            .await,
        &format!(
            "roles.rbac.authorization.k8s.io \"too-much\" is forbidden: user \"system:serviceaccount:e:mgr\" (groups={held_groups}) is attempting to grant RBAC permissions not currently held:\n{{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}}"
        ),
    );
    let admin_roles: Api<Role> = Api::namespaced(env.client(), "e");
    assert!(
        admin_roles
            .get_opt("too-much")
            .await
            .expect("get")
            .is_none()
    );
    // Patching a held role into more is refused and changes nothing.
    let status = api_error(
        roles
            .patch("cm-get", &PatchParams::default(), &Patch::Merge(json!({"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"]}]})))
            .await,
    );
    assert_eq!(status.code, 403, "{status:?}");
    assert_eq!(
        serde_json::to_value(admin_roles.get("cm-get").await.expect("get").rules).expect("json"),
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}])
    );
    // Binding: only roles whose every rule is held, unless `bind` is granted on the role.
    let bindings: Api<RoleBinding> = Api::namespaced(mgr.clone(), "e");
    let binding = |name: &str, kind: &str, role: &str| -> RoleBinding {
        from(json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "worker", "namespace": "e"}],
        }))
    };
    bindings
        .create(
            &PostParams::default(),
            &binding("worker-cm", "Role", "cm-get"),
        )
        .await
        .expect("binding a held role");
    let status = api_error(
        bindings
            .create(
                &PostParams::default(),
                &binding("worker-edit", "ClusterRole", "edit"),
            )
            .await,
    );
    assert_eq!(status.code, 403);
    assert!(
        status.message.starts_with(&format!("rolebindings.rbac.authorization.k8s.io \"worker-edit\" is forbidden: user \"system:serviceaccount:e:mgr\" (groups={held_groups}) is attempting to grant RBAC permissions not currently held:\n")),
        "{}",
        status.message
    );
    role(&env, "e", "may-bind-edit", json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["edit"], "verbs": ["bind"]}])).await;
    role_binding(
        &env,
        "e",
        "mgr-bind",
        "Role",
        "may-bind-edit",
        sa_subject("e", "mgr"),
    )
    .await;
    bindings
        .create(
            &PostParams::default(),
            &binding("worker-edit", "ClusterRole", "edit"),
        )
        .await
        .expect("bind verb allows binding edit");
}

#[tokio::test]
async fn escalation_is_checked_on_the_object_the_guarded_write_stores() {
    let env = rbac_env().await;
    namespace(&env, "g").await;
    role(&env, "g", "rbac-patcher", json!([
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["get", "patch"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
    ])).await;
    role_binding(
        &env,
        "g",
        "patcher",
        "Role",
        "rbac-patcher",
        sa_subject("g", "patcher"),
    )
    .await;
    let patcher = env
        .client_as_service_account("g", "patcher")
        .await
        .expect("client");
    let roles: Api<Role> = Api::namespaced(patcher.clone(), "g");
    let admin_roles: Api<Role> = Api::namespaced(env.client(), "g");
    let apply = PatchParams::apply("patcher");
    // Server-side apply creating a role that grants more than the writer holds: refused (the
    // check used to look for a stored object and skip the check when there was none).
    let status = api_error(
        roles
            .patch(
                "created-by-apply",
                &apply,
                &Patch::Apply(json!({
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": {"name": "created-by-apply"},
                    "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}],
                })),
            )
            .await,
    );
    assert_eq!(status.code, 403, "{status:?}");
    assert!(
        status
            .message
            .contains("is attempting to grant RBAC permissions not currently held"),
        "{}",
        status.message
    );
    assert!(
        admin_roles
            .get_opt("created-by-apply")
            .await
            .expect("get")
            .is_none()
    );
    // With held rules the same apply creates the role.
    roles
        .patch(
            "created-by-apply",
            &apply,
            &Patch::Apply(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "created-by-apply"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
            })),
        )
        .await
        .expect("apply of held rules");
    // Escalating and invalid at once: upstream's RBAC storage refuses the escalation before
    // the role is validated (403, not 422).
    let status = api_error(
        roles
            .patch(
                "created-by-apply",
                &PatchParams::default(),
                &Patch::Merge(json!({"rules": [
                    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
                    {"apiGroups": [""], "resources": ["configmaps"], "verbs": []},
                ]})),
            )
            .await,
    );
    assert_eq!(status.code, 403, "{status:?}");
    assert!(
        status
            .message
            .contains("is attempting to grant RBAC permissions not currently held"),
        "{}",
        status.message
    );
    // The check sees the stored object as the write finds it: once an admin widened the role,
    // a patch that only touches labels is refused (the result would still grant more than the
    // writer holds), and nothing changes.
    admin_roles
        .patch(
            "created-by-apply",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}),
            ),
        )
        .await
        .expect("admin widens");
    let status = api_error(
        roles
            .patch(
                "created-by-apply",
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
            )
            .await,
    );
    assert_eq!(status.code, 403, "{status:?}");
    let now = admin_roles.get("created-by-apply").await.expect("get");
    assert!(now.metadata.labels.unwrap_or_default().is_empty());
}

/// A client authenticating with `token`.
async fn client_with_token(env: &TestEnv, token: &str) -> Client {
    let yaml = korral_apiserver::kubeconfig::render(
        env.server().url(),
        env.server().ca_pem(),
        token,
        "korral",
    );
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    Client::try_from(config).expect("client")
}

#[tokio::test]
async fn token_audiences_are_checked_as_upstream() {
    let env = rbac_env().await;
    namespace(&env, "aud").await;
    env.service_account_token("aud", "robot")
        .await
        .expect("account");
    let reviews = "/apis/authentication.k8s.io/v1/tokenreviews";
    let review = |token: &str, audiences: Value| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
               "spec": {"token": token, "audiences": audiences}})
    };
    // A token requested for another audience than the server's.
    let (code, issued) = raw(
        &env.client(),
        "POST",
        "/api/v1/namespaces/aud/serviceaccounts/robot/token",
        &[],
        Some(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                    "spec": {"audiences": ["vault", "other"]}}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{issued}");
    let vault = issued["status"]["token"]
        .as_str()
        .expect("token")
        .to_string();

    // Reviewed for the server's audience (none asked): refused with upstream's error.
    let (code, body) = raw(
        &env.client(),
        "POST",
        reviews,
        &[],
        Some(review(&vault, json!(null))),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(body["status"]["authenticated"], false);
    assert_eq!(
        body["status"]["error"],
        "[invalid bearer token, token audiences [\"vault\" \"other\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]]"
    );
    // Reviewed for its audience: authenticated, with the audiences it matched.
    let (_, body) = raw(
        &env.client(),
        "POST",
        reviews,
        &[],
        Some(review(&vault, json!(["vault", "x"]))),
    )
    .await;
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(body["status"]["audiences"], json!(["vault"]));
    assert_eq!(
        body["status"]["user"]["username"],
        "system:serviceaccount:aud:robot"
    );
    // The server itself does not accept it.
    let client = client_with_token(&env, &vault).await;
    let (code, _) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/aud/configmaps",
        &[],
        None,
    )
    .await;
    assert_eq!(code, 401);

    // A default token is for the server's audience, reported when no audience is asked.
    let default = env
        .service_account_token("aud", "robot")
        .await
        .expect("token");
    let (_, body) = raw(
        &env.client(),
        "POST",
        reviews,
        &[],
        Some(review(&default, json!(null))),
    )
    .await;
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(
        body["status"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let (_, body) = raw(
        &env.client(),
        "POST",
        reviews,
        &[],
        Some(review(&default, json!(["vault"]))),
    )
    .await;
    assert_eq!(body["status"]["authenticated"], false, "{body}");
    env.shutdown().await;
}

#[tokio::test]
async fn tokens_bound_to_objects_die_with_them() {
    let env = rbac_env().await;
    namespace(&env, "bound").await;
    env.service_account_token("bound", "robot")
        .await
        .expect("account");
    let admin = env.client();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"serviceAccountName": "robot", "containers": [{"name": "app", "image": "nginx"}]}});
    let (code, pod) = raw(
        &admin,
        "POST",
        "/api/v1/namespaces/bound/pods",
        &[],
        Some(pod),
    )
    .await;
    assert_eq!(code, 201, "{pod}");
    let pod_uid = pod["metadata"]["uid"].as_str().expect("uid").to_string();
    let token_path = "/api/v1/namespaces/bound/serviceaccounts/robot/token";
    let request = |reference: Value| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"boundObjectRef": reference}})
    };
    let (code, issued) = raw(
        &admin,
        "POST",
        token_path,
        &[],
        Some(request(
            json!({"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": pod_uid}),
        )),
    )
    .await;
    assert_eq!(code, 201, "{issued}");
    assert_eq!(issued["spec"]["boundObjectRef"]["name"], "web");
    let token = issued["status"]["token"]
        .as_str()
        .expect("token")
        .to_string();

    // The token's user carries the pod it is bound to.
    let whoami = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let client = client_with_token(&env, &token).await;
    let (code, review) = raw(
        &client,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[],
        Some(whoami.clone()),
    )
    .await;
    assert_eq!(code, 201, "{review}");
    let extra = &review["status"]["userInfo"]["extra"];
    assert_eq!(
        extra["authentication.kubernetes.io/pod-name"],
        json!(["web"])
    );
    assert_eq!(
        extra["authentication.kubernetes.io/pod-uid"],
        json!([pod_uid])
    );
    assert!(
        extra["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .is_some_and(|c| c.starts_with("JTI=")),
        "{extra}"
    );

    // Refusals as upstream's.
    let (code, body) = raw(
        &admin,
        "POST",
        token_path,
        &[],
        Some(request(
            json!({"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}),
        )),
    )
    .await;
    assert_eq!(
        (code, body["message"].clone()),
        (
            400,
            json!("cannot bind token to object of type /v1, Kind=ConfigMap")
        )
    );
    let (code, body) = raw(
        &admin,
        "POST",
        token_path,
        &[],
        Some(request(
            json!({"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": "other"}),
        )),
    )
    .await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on Pod \"web\": the UID in the bound object reference (other) does not match the UID in record. The object might have been deleted and then recreated"
    );
    let (code, _) = raw(
        &admin,
        "POST",
        token_path,
        &[],
        Some(request(
            json!({"kind": "Secret", "apiVersion": "v1", "name": "missing"}),
        )),
    )
    .await;
    assert_eq!(code, 404);
    let other = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    let (code, _) = raw(
        &admin,
        "POST",
        "/api/v1/namespaces/bound/pods",
        &[],
        Some(other),
    )
    .await;
    assert_eq!(code, 201);
    let (code, body) = raw(
        &admin,
        "POST",
        token_path,
        &[],
        Some(request(
            json!({"kind": "Pod", "apiVersion": "v1", "name": "other"}),
        )),
    )
    .await;
    assert_eq!(
        (code, body["message"].clone()),
        (
            400,
            json!(
                "cannot bind token for serviceaccount \"robot\" to pod running with different serviceaccount name."
            )
        )
    );

    // Once the pod is gone, so is the token.
    let (code, _) = raw(
        &admin,
        "DELETE",
        "/api/v1/namespaces/bound/pods/web",
        &[],
        Some(json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})),
    )
    .await;
    assert_eq!(code, 200);
    let (code, _) = raw(
        &client,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[],
        Some(whoami),
    )
    .await;
    assert_eq!(code, 401);
    env.shutdown().await;
}

/// POSTs an access review of `kind` (e.g. `subjectaccessreviews`) at `path_prefix` as the admin.
async fn post_review(env: &TestEnv, path: &str, kind: &str, spec: Value) -> (u16, Value) {
    raw(
        &env.client(),
        "POST",
        path,
        &[],
        Some(json!({"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec})),
    )
    .await
}

#[tokio::test]
async fn access_review_selectors_are_validated_as_upstream() {
    let env = rbac_env().await;
    let sar = |spec: Value| {
        post_review(
            &env,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            "SubjectAccessReview",
            spec,
        )
    };
    let invalid = |causes: &[(&str, &str, &str)]| {
        let lines: Vec<String> = causes.iter().map(|(_, m, f)| format!("{f}: {m}")).collect();
        let joined = if lines.len() == 1 {
            lines[0].clone()
        } else {
            format!("[{}]", lines.join(", "))
        };
        format!("SubjectAccessReview.authorization.k8s.io \"\" is invalid: {joined}")
    };
    // Every cause at once, in upstream's order: the subject, then the field and label
    // selectors (rawSelector and requirements are exclusive, one of them is required).
    let causes = [
        (
            "FieldValueInvalid",
            "Invalid value: \"\": at least one of user or group must be specified",
            "spec.user",
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \"metadata.name=x\": may not specified at the same time as requirements",
            "spec.resourceAttributes.fieldSelector.rawSelector",
        ),
        (
            "FieldValueRequired",
            "Required value: when spec.resourceAttributes.labelSelector is specified, requirements or rawSelector is required",
            "spec.resourceAttributes.labelSelector.requirements",
        ),
    ];
    assert_invalid(
        &sar(json!({"resourceAttributes": {
            "verb": "list", "resource": "pods",
            "fieldSelector": {"rawSelector": "metadata.name=x",
                              "requirements": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]},
            "labelSelector": {},
        }}))
        .await,
        &invalid(&causes),
        &causes,
    );
    // Field requirements: a key, values for In/NotIn and none for Exists/DoesNotExist; an
    // operator the server does not know is allowed (newer clients).
    let causes = [
        (
            "FieldValueRequired",
            "Required value: must be specified",
            "spec.resourceAttributes.fieldSelector.requirements[0].key",
        ),
        (
            "FieldValueRequired",
            "Required value: must be specified when `operator` is 'In' or 'NotIn'",
            "spec.resourceAttributes.fieldSelector.requirements[0].values",
        ),
        (
            "FieldValueForbidden",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            "spec.resourceAttributes.fieldSelector.requirements[1].values",
        ),
    ];
    assert_invalid(
        &sar(json!({"user": "alice", "resourceAttributes": {
            "verb": "list", "resource": "pods",
            "fieldSelector": {"requirements": [
                {"key": "", "operator": "In", "values": []},
                {"key": "spec.nodeName", "operator": "DoesNotExist", "values": ["n"]},
                {"key": "spec.nodeName", "operator": "Gt", "values": ["1"]},
            ]},
        }}))
        .await,
        &invalid(&causes),
        &causes,
    );
    // Label requirements: a qualified-name key and label values.
    let causes = [
        (
            "FieldValueForbidden",
            "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            "spec.resourceAttributes.labelSelector.requirements[0].values",
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \"()foo\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.resourceAttributes.labelSelector.requirements[0].key",
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \"-x-\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "spec.resourceAttributes.labelSelector.requirements[0].values[0]",
        ),
        // An empty name part is empty and does not match the pattern (both, as upstream).
        (
            "FieldValueInvalid",
            "Invalid value: \"\": name part must be non-empty",
            "spec.resourceAttributes.labelSelector.requirements[1].key",
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "spec.resourceAttributes.labelSelector.requirements[1].key",
        ),
    ];
    assert_invalid(
        &sar(json!({"groups": ["g"], "resourceAttributes": {
            "verb": "list", "resource": "pods",
            "labelSelector": {"requirements": [
                {"key": "()foo", "operator": "Exists", "values": ["-x-"]},
                {"key": "", "operator": "Unknown"},
            ]},
        }}))
        .await,
        &invalid(&causes),
        &causes,
    );
    // SelfSubjectAccessReview and LocalSubjectAccessReview check them too.
    let both = json!({"rawSelector": "a=b", "requirements": [{"key": "a", "operator": "Exists"}]});
    let cause = (
        "FieldValueInvalid",
        "Invalid value: \"a=b\": may not specified at the same time as requirements",
        "spec.resourceAttributes.labelSelector.rawSelector",
    );
    assert_invalid(
        &post_review(
            &env,
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            json!({"resourceAttributes": {"verb": "list", "resource": "pods", "labelSelector": both}}),
        )
        .await,
        &format!(
            "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: {}: {}",
            cause.2, cause.1
        ),
        &[cause],
    );
    let namespace_cause = (
        "FieldValueInvalid",
        "Invalid value: \"other\": must match metadata.namespace",
        "spec.resourceAttributes.namespace",
    );
    assert_invalid(
        &post_review(
            &env,
            "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            json!({"user": "alice", "resourceAttributes": {
                "namespace": "other", "verb": "list", "resource": "pods", "labelSelector": both,
            }}),
        )
        .await,
        &format!(
            "LocalSubjectAccessReview.authorization.k8s.io \"\" is invalid: [{}: {}, {}: {}]",
            cause.2, cause.1, namespace_cause.2, namespace_cause.1
        ),
        &[cause, namespace_cause],
    );
    env.shutdown().await;
}

#[tokio::test]
async fn access_reviews_with_selectors_are_decided_without_them() {
    let env = rbac_env().await;
    namespace(&env, "r").await;
    role(
        &env,
        "r",
        "cm-reader",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]),
    )
    .await;
    role_binding(
        &env,
        "r",
        "read",
        "Role",
        "cm-reader",
        sa_subject("r", "bot"),
    )
    .await;
    let review = |verb: &str, field: Value, label: Value| {
        let mut attrs = json!({"namespace": "r", "verb": verb, "resource": "configmaps"});
        if !field.is_null() {
            attrs["fieldSelector"] = field;
        }
        if !label.is_null() {
            attrs["labelSelector"] = label;
        }
        post_review(
            &env,
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            "SubjectAccessReview",
            json!({"user": "system:serviceaccount:r:bot", "resourceAttributes": attrs}),
        )
    };
    // Selectors the builder parses: RBAC ignores them.
    let (code, body) = review(
        "list",
        json!({"rawSelector": "metadata.name=a"}),
        json!({"requirements": [{"key": "app", "operator": "In", "values": ["x"]}]}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["allowed"], true, "{body}");
    assert!(body["status"].get("evaluationError").is_none(), "{body}");
    // Selectors it cannot parse (an unparsable rawSelector; requirements it does not support
    // or know) are ignored, and the status says so; the decision is the same.
    let (code, body) = review(
        "list",
        json!({"rawSelector": "metadata.name"}),
        json!({"requirements": [
            {"key": "app", "operator": "Exists"},
            {"key": "tier", "operator": "Near", "values": ["x"]},
        ]}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["allowed"], true, "{body}");
    assert_eq!(
        body["status"]["evaluationError"],
        "spec.resourceAttributes.fieldSelector ignored due to parse error; spec.resourceAttributes.labelSelector partially ignored due to parse error"
    );
    let (code, body) = review(
        "delete",
        json!({"requirements": [
            {"key": "metadata.name", "operator": "Exists"},
            {"key": "metadata.name", "operator": "In", "values": ["a", "b"]},
        ]}),
        json!({"rawSelector": "a in (b"}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["allowed"], false, "{body}");
    assert_eq!(
        body["status"]["evaluationError"],
        "spec.resourceAttributes.fieldSelector ignored due to parse error; spec.resourceAttributes.labelSelector ignored due to parse error"
    );
    let (code, body) = review(
        "list",
        json!({"requirements": [
            {"key": "metadata.name", "operator": "NotIn", "values": ["a"]},
            {"key": "metadata.name", "operator": "DoesNotExist"},
        ]}),
        Value::Null,
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["allowed"], true, "{body}");
    assert_eq!(
        body["status"]["evaluationError"],
        "spec.resourceAttributes.fieldSelector partially ignored due to parse error"
    );
    env.shutdown().await;
}
