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

#[tokio::test]
async fn quota_scopes_track_only_the_pods_they_select() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "scoped").await;
    let base = "/api/v1/namespaces/scoped";
    created(
        &env,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "high"}, "value": 1000}),
    )
    .await;
    created(
        &env,
        &format!("{base}/resourcequotas"),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "best-effort"},
            "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}}),
    )
    .await;
    created(
        &env,
        &format!("{base}/resourcequotas"),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "no-high"},
            "spec": {"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}}),
    )
    .await;
    let burstable = || {
        json!({"containers": [{"name": "c", "image": "busybox",
            "resources": {"requests": {"cpu": "100m"}}}]})
    };
    created(&env, &format!("{base}/pods"), pod("be1", one_container())).await;
    let (code, refused) = send(
        &env,
        "POST",
        &format!("{base}/pods"),
        Some(pod("be2", one_container())),
    )
    .await;
    assert_eq!(code, 403, "{refused}");
    assert_eq!(
        refused["message"],
        "pods \"be2\" is forbidden: exceeded quota: best-effort, requested: pods=1, used: pods=1, limited: pods=1"
    );
    // Pods outside the scopes are not counted against them.
    created(&env, &format!("{base}/pods"), pod("b1", burstable())).await;
    created(&env, &format!("{base}/pods"), pod("b2", burstable())).await;
    let mut high = burstable();
    high["priorityClassName"] = json!("high");
    let (code, refused) = send(&env, "POST", &format!("{base}/pods"), Some(pod("h1", high))).await;
    assert_eq!(code, 403, "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("exceeded quota: no-high")),
        "{refused}"
    );
    // The status counts only the tracked pods.
    wait_until(WAIT, "scoped usage", || async {
        let (_, q) = send(
            &env,
            "GET",
            &format!("{base}/resourcequotas/best-effort"),
            None,
        )
        .await;
        q["status"]["used"] == json!({"pods": "1"})
    })
    .await
    .expect("best-effort usage");
    wait_until(WAIT, "selected usage", || async {
        let (_, q) = send(&env, "GET", &format!("{base}/resourcequotas/no-high"), None).await;
        q["status"]["used"] == json!({"pods": "0"})
    })
    .await
    .expect("priority usage");
}

#[tokio::test]
async fn concurrent_creates_never_exceed_a_quota_together() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "racing").await;
    let base = "/api/v1/namespaces/racing";
    created(
        &env,
        &format!("{base}/resourcequotas"),
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "three"},
            "spec": {"hard": {"count/configmaps": "3"}}}),
    )
    .await;
    // A validating webhook makes every create wait between admission and its write, so the
    // creates all pass the admission-time quota check before any of them is stored.
    let hook = serve_https(|_path: String, review: Value| async move {
        (
            200,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], "allowed": true}}),
        )
    })
    .await;
    created(
        &env,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "slow"},
            "webhooks": [{"name": "allow.test.example.com",
                "clientConfig": {"url": hook.url("/allow"), "caBundle": hook.ca_bundle},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                    "resources": ["configmaps"]}],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "racing"}},
                "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
    )
    .await;
    let creates = (0..12).map(|i| {
        let env = &env;
        async move {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}")}});
            send(env, "POST", &format!("{base}/configmaps"), Some(body))
                .await
                .0
        }
    });
    let codes = futures::future::join_all(creates).await;
    assert_eq!(codes.iter().filter(|c| **c == 201).count(), 3, "{codes:?}");
    assert!(codes.iter().all(|c| *c == 201 || *c == 403), "{codes:?}");
    let (_, list) = send(&env, "GET", &format!("{base}/configmaps"), None).await;
    let stored = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|c| {
            c["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("cm-"))
        })
        .count();
    assert_eq!(stored, 3);
    assert_eq!(
        hook.reviews("/allow").len(),
        12,
        "every create went through the webhook"
    );
}
