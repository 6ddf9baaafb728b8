//! The admission plugins real clusters run by default: ResourceQuota (usage in status, 403
//! `exceeded quota` as `k8s-reference/builtin/invalid-quota-exceeded.json`), LimitRanger,
//! Priority and DefaultStorageClass.

mod common;

use common::*;
use serde_json::{Value, json};

async fn send(env: &TestEnv, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let content_type = body.as_ref().map(|_| "application/json");
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    raw(&env.client(), method, path, content_type, bytes).await
}

async fn created(env: &TestEnv, path: &str, body: Value) -> Value {
    let (code, obj) = send(env, "POST", path, Some(body)).await;
    assert_eq!(code, 201, "{path}: {obj}");
    obj
}

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn one_container() -> Value {
    json!({"containers": [{"name": "c", "image": "busybox"}]})
}

#[tokio::test]
async fn resource_quotas_count_usage_and_refuse_what_exceeds_them() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "ref2-quota2").await;
    let base = "/api/v1/namespaces/ref2-quota2";
    created(
        &env,
        &format!("{base}/resourcequotas"),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
            "spec": {"hard": {"count/configmaps": "50", "pods": "1"}}}),
    )
    .await;
    let quota_path = format!("{base}/resourcequotas/q");
    let used = |want: Value| {
        let env = &env;
        let quota_path = quota_path.clone();
        async move {
            wait_until(WAIT, "the quota's status", || {
                let quota_path = quota_path.clone();
                let want = want.clone();
                async move {
                    let (_, q) = send(env, "GET", &quota_path, None).await;
                    q["status"]["used"] == want
                }
            })
            .await
            .expect("status");
        }
    };
    used(json!({"count/configmaps": "0", "pods": "0"})).await;

    created(&env, &format!("{base}/pods"), pod("p1", one_container())).await;
    let (code, refused) = send(
        &env,
        "POST",
        &format!("{base}/pods"),
        Some(pod("p2", one_container())),
    )
    .await;
    assert_eq!(code, 403, "{refused}");
    assert_eq!(
        refused["message"],
        "pods \"p2\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"
    );
    assert_eq!(refused["details"], json!({"name": "p2", "kind": "pods"}));
    // As upstream's get-resourcequota-with-status.json.
    used(json!({"count/configmaps": "0", "pods": "1"})).await;
    let (_, q) = send(&env, "GET", &quota_path, None).await;
    assert_eq!(
        q["status"]["hard"],
        json!({"count/configmaps": "50", "pods": "1"})
    );

    // Freed quota is usable again.
    let (code, _) = send(&env, "DELETE", &format!("{base}/pods/p1"), None).await;
    assert_eq!(code, 200);
    wait_until(WAIT, "p1 gone", || async {
        send(&env, "GET", &format!("{base}/pods/p1"), None).await.0 == 404
    })
    .await
    .expect("gone");
    used(json!({"count/configmaps": "0", "pods": "0"})).await;
    created(&env, &format!("{base}/pods"), pod("p2", one_container())).await;
}

#[tokio::test]
async fn limit_ranges_default_and_bound_containers() {
    let env = TestEnv::start().await.expect("env");
    let base = "/api/v1/namespaces/default";
    created(
        &env,
        &format!("{base}/limitranges"),
        json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
            "spec": {"limits": [{"type": "Container",
                "default": {"cpu": "500m", "memory": "256Mi"},
                "defaultRequest": {"cpu": "100m", "memory": "256Mi"},
                "max": {"cpu": "1"}}]}}),
    )
    .await;
    let p = created(&env, &format!("{base}/pods"), pod("lr", one_container())).await;
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "256Mi"},
            "requests": {"cpu": "100m", "memory": "256Mi"}})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"
    );
    let big = json!({"containers": [{"name": "c", "image": "busybox",
        "resources": {"limits": {"cpu": "2"}}}]});
    let (code, refused) = send(&env, "POST", &format!("{base}/pods"), Some(pod("big", big))).await;
    assert_eq!(code, 403, "{refused}");
    assert_eq!(
        refused["message"],
        "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
    );
}

#[tokio::test]
async fn priority_classes_set_pod_priorities() {
    let env = TestEnv::start().await.expect("env");
    let base = "/api/v1/namespaces/default";
    let classes = "/apis/scheduling.k8s.io/v1/priorityclasses";
    created(
        &env,
        classes,
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "ref2-high"}, "value": 1000}),
    )
    .await;
    let mut spec = one_container();
    spec["priorityClassName"] = json!("ref2-high");
    let p = created(&env, &format!("{base}/pods"), pod("high", spec)).await;
    assert_eq!(p["spec"]["priority"], 1000);
    let mut spec = one_container();
    spec["priorityClassName"] = json!("nope");
    let (code, refused) = send(
        &env,
        "POST",
        &format!("{base}/pods"),
        Some(pod("nope", spec)),
    )
    .await;
    assert_eq!(code, 403, "{refused}");
    assert_eq!(
        refused["message"],
        "pods \"nope\" is forbidden: no PriorityClass with name nope was found"
    );
    let mut spec = one_container();
    spec["priorityClassName"] = json!("system-node-critical");
    let p = created(&env, &format!("{base}/pods"), pod("critical", spec)).await;
    assert_eq!(p["spec"]["priority"], 2_000_001_000);

    // A global default class applies to pods naming none.
    created(
        &env,
        classes,
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "everyone"}, "value": 50, "globalDefault": true}),
    )
    .await;
    let p = created(&env, &format!("{base}/pods"), pod("plain", one_container())).await;
    assert_eq!(p["spec"]["priority"], 50);
    assert_eq!(p["spec"]["priorityClassName"], "everyone");
}

#[tokio::test]
async fn claims_without_a_class_get_the_default_storage_class() {
    let env = TestEnv::start().await.expect("env");
    created(
        &env,
        "/apis/storage.k8s.io/v1/storageclasses",
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "standard", "annotations": {
                "storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "example.com/disk"}),
    )
    .await;
    let claim = |name: &str, class: Option<&str>| {
        let mut c = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}});
        if let Some(class) = class {
            c["spec"]["storageClassName"] = json!(class);
        }
        c
    };
    let path = "/api/v1/namespaces/default/persistentvolumeclaims";
    let c = created(&env, path, claim("data", None)).await;
    assert_eq!(c["spec"]["storageClassName"], "standard");
    // An explicit empty class stays empty (no dynamic provisioning).
    let c = created(&env, path, claim("static", Some(""))).await;
    assert_eq!(c["spec"]["storageClassName"], "");
}
