//! The RBAC bootstrap policy is reconciled at every start of a durable RBAC server, as
//! upstream's `rbac/bootstrap-roles` post-start hook reconciles it
//! (`pkg/registry/rbac/reconciliation`, keeping extra permissions and subjects): what users
//! removed comes back, what they added stays, objects annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` are left alone, a binding whose
//! `roleRef` changed is re-created, and a start with nothing to reconcile writes nothing.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::{TestEnv, call, wait_until};
use futures::{StreamExt, TryStreamExt};
use korral_apiserver::ServerConfig;
use kube::api::{Api, DynamicObject, WatchEvent, WatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";
const AUTO_UPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";
const GROUP: &str = "rbac.authorization.k8s.io";

/// A durable RBAC server on `data`.
async fn start(data: &Path) -> TestEnv {
    TestEnv::builder()
        .server_config(ServerConfig::durable(data))
        .authorization(korral_testenv::AuthorizationMode::Rbac)
        .start()
        .await
        .expect("start durable RBAC server")
}

/// GET `path` as the admin (must answer 200).
async fn get(env: &TestEnv, path: &str) -> Value {
    let (code, body) = call(env, "GET", path, None).await;
    assert_eq!(code, 200, "GET {path}: {body}");
    body
}

/// PUT `obj` to `path` as the admin (must answer 200): the stored object.
async fn put(env: &TestEnv, path: &str, obj: &Value) -> Value {
    let (code, body) = call(env, "PUT", path, Some(obj)).await;
    assert_eq!(code, 200, "PUT {path}: {body}");
    body
}

/// Waits until the aggregated ClusterRoles have their rules (the aggregation controller runs
/// after start).
async fn aggregated(env: &TestEnv) {
    for role in ["admin", "edit", "view"] {
        let path = format!("{RBAC}/clusterroles/{role}");
        wait_until(
            Duration::from_secs(10),
            format!("{role} aggregated"),
            || {
                let path = path.clone();
                async move {
                    get(env, &path).await["rules"]
                        .as_array()
                        .is_some_and(|r| !r.is_empty())
                }
            },
        )
        .await
        .expect("aggregated");
    }
}

/// The `resourceVersion` of every RBAC object, by `resource/namespace/name`.
async fn versions(env: &TestEnv) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for resource in [
        "clusterroles",
        "clusterrolebindings",
        "roles",
        "rolebindings",
    ] {
        let list = get(env, &format!("{RBAC}/{resource}")).await;
        for item in list["items"].as_array().into_iter().flatten() {
            let md = &item["metadata"];
            out.insert(
                format!(
                    "{resource}/{}/{}",
                    md["namespace"].as_str().unwrap_or(""),
                    md["name"].as_str().unwrap_or("")
                ),
                md["resourceVersion"].as_str().unwrap_or("").to_string(),
            );
        }
    }
    out
}

/// [`versions`] once the aggregation controller is done (two reads apart agree).
async fn settled(env: &TestEnv) -> BTreeMap<String, String> {
    aggregated(env).await;
    let mut last = versions(env).await;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = versions(env).await;
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("RBAC objects keep changing");
}

#[tokio::test]
async fn removed_rules_come_back_and_additions_stay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let path = format!("{RBAC}/clusterroles/system:basic-user");
    let changed_rv = {
        let env = start(&data).await;
        let mut role = get(&env, &path).await;
        // Drop the SelfSubjectAccessReview/RulesReview rule, add one, relabel.
        let rules = role["rules"].as_array().expect("rules").clone();
        assert_eq!(rules.len(), 2, "{rules:?}");
        role["rules"] = json!([
            rules[1],
            {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]},
        ]);
        role["metadata"]["labels"] = json!({"mine": "kept"});
        let stored = put(&env, &path, &role).await;
        env.shutdown().await;
        stored["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .to_string()
    };
    let env = start(&data).await;
    let role = get(&env, &path).await;
    assert_eq!(
        role["rules"],
        json!([
            {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
             "resources": ["selfsubjectreviews"]},
            {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]},
            // Upstream appends the uncovered parts, one verb and resource each.
            {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
             "resources": ["selfsubjectaccessreviews"]},
            {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
             "resources": ["selfsubjectrulesreviews"]},
        ])
    );
    assert_eq!(
        role["metadata"]["labels"],
        json!({"mine": "kept", "kubernetes.io/bootstrapping": "rbac-defaults"})
    );
    assert_eq!(role["metadata"]["annotations"][AUTO_UPDATE], "true");
    // A watcher from before the restart sees the change as a modification.
    let api: Api<DynamicObject> = Api::all_with(
        env.client(),
        &ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, "v1", "ClusterRole")),
    );
    let params = WatchParams::default().fields("metadata.name=system:basic-user");
    let mut events = api
        .watch(&params, &changed_rv)
        .await
        .expect("watch")
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .expect("an event")
        .expect("event")
        .expect("open");
    let WatchEvent::Modified(obj) = first else {
        panic!("MODIFIED, got {first:?}");
    };
    assert_eq!(
        obj.metadata.resource_version.as_deref(),
        role["metadata"]["resourceVersion"].as_str()
    );
    let before = settled(&env).await;
    env.shutdown().await;
    // Nothing left to reconcile: another restart writes nothing.
    let env = start(&data).await;
    assert_eq!(settled(&env).await, before);
    env.shutdown().await;
}

#[tokio::test]
async fn aggregated_roles_get_their_selectors_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let path = format!("{RBAC}/clusterroles/admin");
    {
        let env = start(&data).await;
        aggregated(&env).await;
        let mut admin = get(&env, &path).await;
        // Unconditionally: the aggregation controller may still be writing it.
        admin["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("resourceVersion");
        admin["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": {"mine": "true"}}]});
        put(&env, &path, &admin).await;
        // The aggregation controller empties it: no role carries the label.
        wait_until(Duration::from_secs(10), "admin emptied", || async {
            get(&env, &path).await["rules"]
                .as_array()
                .is_none_or(|r| r.is_empty())
        })
        .await
        .expect("emptied");
        env.shutdown().await;
    }
    let env = start(&data).await;
    let admin = get(&env, &path).await;
    assert_eq!(
        admin["aggregationRule"]["clusterRoleSelectors"],
        json!([
            {"matchLabels": {"mine": "true"}},
            {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}},
        ])
    );
    // Then the aggregation controller fills it again.
    wait_until(Duration::from_secs(10), "admin aggregated", || async {
        get(&env, &path).await["rules"]
            .as_array()
            .is_some_and(|rules| {
                rules.iter().any(|r| {
                    r["resources"]
                        .as_array()
                        .is_some_and(|res| res.contains(&json!("localsubjectaccessreviews")))
                })
            })
    })
    .await
    .expect("aggregated");
    env.shutdown().await;
}

#[tokio::test]
async fn bindings_get_their_subjects_back_and_a_changed_role_ref_is_recreated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let basic = format!("{RBAC}/clusterrolebindings/system:basic-user");
    let discovery = format!("{RBAC}/clusterrolebindings/system:discovery");
    let reader = format!(
        "{RBAC}/namespaces/kube-system/rolebindings/system::extension-apiserver-authentication-reader"
    );
    let (own_uid, reader_subjects) = {
        let env = start(&data).await;
        let mut binding = get(&env, &basic).await;
        binding["subjects"] = json!([{"apiGroup": GROUP, "kind": "User", "name": "alice"}]);
        binding["metadata"]["labels"]["kubernetes.io/bootstrapping"] = json!("mine");
        put(&env, &basic, &binding).await;
        // A RoleBinding loses its subjects too.
        let mut rb = get(&env, &reader).await;
        let subjects = rb["subjects"].clone();
        rb["subjects"] =
            json!([{"kind": "ServiceAccount", "name": "x", "namespace": "kube-system"}]);
        put(&env, &reader, &rb).await;
        // roleRef is immutable: the binding is replaced by one bound to another role.
        let (code, body) = call(&env, "DELETE", &discovery, None).await;
        assert_eq!(code, 200, "{body}");
        let own = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:discovery"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": GROUP, "kind": "User", "name": "bob"}],
        });
        let (code, created) = call(
            &env,
            "POST",
            &format!("{RBAC}/clusterrolebindings"),
            Some(&own),
        )
        .await;
        assert_eq!(code, 201, "{created}");
        env.shutdown().await;
        (
            created["metadata"]["uid"]
                .as_str()
                .expect("uid")
                .to_string(),
            subjects,
        )
    };
    let env = start(&data).await;
    let binding = get(&env, &basic).await;
    assert_eq!(
        binding["subjects"],
        json!([
            {"apiGroup": GROUP, "kind": "User", "name": "alice"},
            {"apiGroup": GROUP, "kind": "Group", "name": "system:authenticated"},
        ])
    );
    // Existing label values win.
    assert_eq!(
        binding["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "mine"
    );
    let rb = get(&env, &reader).await;
    let mut want = vec![json!({"kind": "ServiceAccount", "name": "x", "namespace": "kube-system"})];
    want.extend(
        reader_subjects
            .as_array()
            .expect("subjects")
            .iter()
            .cloned(),
    );
    assert_eq!(rb["subjects"], Value::Array(want));
    // The re-created binding is the bootstrap one, a new object.
    let recreated = get(&env, &discovery).await;
    assert_eq!(recreated["roleRef"]["name"], "system:discovery");
    assert_eq!(
        recreated["subjects"],
        json!([{"apiGroup": GROUP, "kind": "Group", "name": "system:authenticated"}])
    );
    assert_ne!(recreated["metadata"]["uid"], json!(own_uid));
    env.shutdown().await;
}

#[tokio::test]
async fn objects_annotated_autoupdate_false_are_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let role_path = format!("{RBAC}/clusterroles/system:basic-user");
    let binding_path = format!("{RBAC}/clusterrolebindings/system:basic-user");
    let discovery = format!("{RBAC}/clusterrolebindings/system:discovery");
    let viewer = format!("{RBAC}/clusterroles/system:public-info-viewer");
    let (role, binding, own) = {
        let env = start(&data).await;
        // Unprotected, for contrast: restored.
        let mut unprotected = get(&env, &viewer).await;
        unprotected["rules"] = json!([]);
        put(&env, &viewer, &unprotected).await;
        let mut role = get(&env, &role_path).await;
        role["rules"] = json!([]);
        role["metadata"]["labels"] = json!({"mine": "x"});
        role["metadata"]["annotations"] = json!({AUTO_UPDATE: "false"});
        let role = put(&env, &role_path, &role).await;
        let mut binding = get(&env, &binding_path).await;
        binding["subjects"] = json!([]);
        binding["metadata"]["annotations"][AUTO_UPDATE] = json!("false");
        let binding = put(&env, &binding_path, &binding).await;
        let (code, body) = call(&env, "DELETE", &discovery, None).await;
        assert_eq!(code, 200, "{body}");
        let own = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "system:discovery", "annotations": {AUTO_UPDATE: "false"}},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
        });
        let (code, own) = call(
            &env,
            "POST",
            &format!("{RBAC}/clusterrolebindings"),
            Some(&own),
        )
        .await;
        assert_eq!(code, 201, "{own}");
        env.shutdown().await;
        (role, binding, own)
    };
    let env = start(&data).await;
    let restored = get(&env, &viewer).await;
    let parts: Vec<Value> = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
        .iter()
        .map(|url| json!({"verbs": ["get"], "nonResourceURLs": [url]}))
        .collect();
    assert_eq!(restored["rules"], Value::Array(parts));
    assert_eq!(get(&env, &role_path).await, role);
    assert_eq!(get(&env, &binding_path).await, binding);
    assert_eq!(get(&env, &discovery).await, own);
    env.shutdown().await;
}
