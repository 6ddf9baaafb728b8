//! The admission plugins real clusters run by default: ResourceQuota (usage in status, 403
//! `exceeded quota` as `k8s-reference/builtin/invalid-quota-exceeded.json`, on creates and on
//! updates that grow usage), LimitRanger, Priority, DefaultStorageClass, RuntimeClass,
//! DefaultIngressClass, PersistentVolumeClaimResize and TaintNodesByCondition.

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

/// A JSON merge patch.
async fn merge_patch(env: &TestEnv, path: &str, body: Value) -> (u16, Value) {
    call_as(env, "PATCH", path, "application/merge-patch+json", &body).await
}

/// Asserts a 403 Forbidden Status with `message`, naming `name` of `kind` (the plural resource,
/// `resource.group` for a named group).
fn assert_forbidden(answer: &(u16, Value), kind: &str, name: &str, message: &str) {
    let (code, status) = answer;
    assert_eq!(*code, 403, "{status}");
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["status"], "Failure", "{status}");
    assert_eq!(status["reason"], "Forbidden", "{status}");
    assert_eq!(status["code"], 403, "{status}");
    assert_eq!(status["message"], message, "{status}");
    let details = match kind.split_once('.') {
        Some((resource, group)) => json!({"name": name, "group": group, "kind": resource}),
        None => json!({"name": name, "kind": kind}),
    };
    assert_eq!(status["details"], details, "{status}");
}

#[tokio::test]
async fn runtime_classes_set_overhead_and_scheduling_of_new_pods() {
    let env = TestEnv::start().await.expect("env");
    created(
        &env,
        "/apis/node.k8s.io/v1/runtimeclasses",
        json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
            "metadata": {"name": "sandboxed"}, "handler": "runsc",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
            "scheduling": {"nodeSelector": {"sandbox": "true"},
                "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}),
    )
    .await;
    let pods = "/api/v1/namespaces/default/pods";
    let with_class = |class: &str| {
        let mut spec = one_container();
        spec["runtimeClassName"] = json!(class);
        spec
    };
    let mut spec = with_class("sandboxed");
    spec["nodeSelector"] = json!({"disk": "ssd"});
    let p = created(&env, pods, pod("sandboxed", spec)).await;
    assert_eq!(
        p["spec"]["overhead"],
        json!({"cpu": "250m", "memory": "120Mi"})
    );
    assert_eq!(
        p["spec"]["nodeSelector"],
        json!({"disk": "ssd", "sandbox": "true"})
    );
    let tolerations = p["spec"]["tolerations"].as_array().expect("tolerations");
    assert!(
        tolerations
            .contains(&json!({"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"})),
        "{tolerations:?}"
    );
    // The default NoExecute tolerations stay (DefaultTolerationSeconds).
    assert!(
        tolerations
            .iter()
            .any(|t| t["key"] == "node.kubernetes.io/not-ready" && t["tolerationSeconds"] == 300),
        "{tolerations:?}"
    );
    let (_, stored) = send(&env, "GET", &format!("{pods}/sandboxed"), None).await;
    assert_eq!(stored["spec"]["overhead"], p["spec"]["overhead"]);

    // The same overhead, written differently, is accepted.
    let mut spec = with_class("sandboxed");
    spec["overhead"] = json!({"cpu": "0.25", "memory": "120Mi"});
    created(&env, pods, pod("same-overhead", spec)).await;

    let refusals = [
        (
            "missing",
            with_class("nope"),
            "pod rejected: RuntimeClass \"nope\" not found",
        ),
        (
            "other-overhead",
            {
                let mut spec = with_class("sandboxed");
                spec["overhead"] = json!({"cpu": "1"});
                spec
            },
            "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
        ),
        (
            "conflict",
            {
                let mut spec = with_class("sandboxed");
                spec["nodeSelector"] = json!({"sandbox": "false"});
                spec
            },
            "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; pod.spec.nodeSelector[sandbox] = false",
        ),
        (
            "classless-overhead",
            {
                let mut spec = one_container();
                spec["overhead"] = json!({"cpu": "1"});
                spec
            },
            "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
        ),
    ];
    for (name, spec, why) in refusals {
        let answer = send(&env, "POST", pods, Some(pod(name, spec))).await;
        assert_forbidden(
            &answer,
            "pods",
            name,
            &format!("pods {name:?} is forbidden: {why}"),
        );
        let (code, _) = send(&env, "GET", &format!("{pods}/{name}"), None).await;
        assert_eq!(code, 404, "{name} was not stored");
    }
}

#[tokio::test]
async fn ingresses_without_a_class_get_the_default_ingress_class() {
    let env = TestEnv::start().await.expect("env");
    let classes = "/apis/networking.k8s.io/v1/ingressclasses";
    let class = |name: &str, default: Option<&str>| {
        let mut c = json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": name}, "spec": {"controller": "example.com/ingress"}});
        if let Some(value) = default {
            c["metadata"]["annotations"] =
                json!({"ingressclass.kubernetes.io/is-default-class": value});
        }
        c
    };
    let ingresses = "/apis/networking.k8s.io/v1/namespaces/default/ingresses";
    let ingress = |name: &str| {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}})
    };
    // No default class yet: nothing is set.
    let i = created(&env, ingresses, ingress("before")).await;
    assert!(i["spec"].get("ingressClassName").is_none(), "{i}");

    created(&env, classes, class("not-default", Some("false"))).await;
    created(&env, classes, class("z-first", Some("true"))).await;
    // Newer, or as new and first by name: chosen either way.
    created(&env, classes, class("a-second", Some("true"))).await;
    let i = created(&env, ingresses, ingress("plain")).await;
    assert_eq!(i["spec"]["ingressClassName"], "a-second");
    let (_, stored) = send(&env, "GET", &format!("{ingresses}/plain"), None).await;
    assert_eq!(stored["spec"]["ingressClassName"], "a-second");

    // A named class, or the legacy annotation, is left alone.
    let mut named = ingress("named");
    named["spec"]["ingressClassName"] = json!("z-first");
    let i = created(&env, ingresses, named).await;
    assert_eq!(i["spec"]["ingressClassName"], "z-first");
    let mut legacy = ingress("legacy");
    legacy["metadata"]["annotations"] = json!({"kubernetes.io/ingress.class": "nginx"});
    let i = created(&env, ingresses, legacy).await;
    assert!(i["spec"].get("ingressClassName").is_none(), "{i}");

    // Updates are not defaulted.
    let (code, i) = merge_patch(
        &env,
        &format!("{ingresses}/before"),
        json!({"metadata": {"labels": {"a": "b"}}}),
    )
    .await;
    assert_eq!(code, 200, "{i}");
    assert!(i["spec"].get("ingressClassName").is_none(), "{i}");
}

/// A StorageClass that may (or may not) expand its volumes.
fn storage_class(name: &str, expandable: Option<bool>) -> Value {
    let mut class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name}, "provisioner": "example.com/disk"});
    if let Some(expandable) = expandable {
        class["allowVolumeExpansion"] = json!(expandable);
    }
    class
}

/// Creates a claim of `class` requesting `storage` and marks it Bound through `/status`.
async fn bound_claim(env: &TestEnv, ns: &str, name: &str, class: &str, storage: &str) {
    let claims = format!("/api/v1/namespaces/{ns}/persistentvolumeclaims");
    created(
        env,
        &claims,
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class,
                "resources": {"requests": {"storage": storage}}}}),
    )
    .await;
    let (code, c) = merge_patch(
        env,
        &format!("{claims}/{name}/status"),
        json!({"status": {"phase": "Bound", "capacity": {"storage": storage}}}),
    )
    .await;
    assert_eq!(code, 200, "{c}");
}

/// A merge patch setting a claim's storage request.
fn grow(storage: &str) -> Value {
    json!({"spec": {"resources": {"requests": {"storage": storage}}}})
}

#[tokio::test]
async fn bound_claims_grow_only_when_their_class_allows_expansion() {
    let env = TestEnv::start().await.expect("env");
    let classes = "/apis/storage.k8s.io/v1/storageclasses";
    created(&env, classes, storage_class("fixed", None)).await;
    created(&env, classes, storage_class("elastic", Some(true))).await;
    let claims = "/api/v1/namespaces/default/persistentvolumeclaims";
    bound_claim(&env, "default", "fixed-data", "fixed", "1Gi").await;
    bound_claim(&env, "default", "elastic-data", "elastic", "1Gi").await;

    let answer = merge_patch(&env, &format!("{claims}/fixed-data"), grow("2Gi")).await;
    assert_forbidden(
        &answer,
        "persistentvolumeclaims",
        "fixed-data",
        "persistentvolumeclaims \"fixed-data\" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize",
    );
    let (_, stored) = send(&env, "GET", &format!("{claims}/fixed-data"), None).await;
    assert_eq!(stored["spec"]["resources"]["requests"]["storage"], "1Gi");

    let (code, c) = merge_patch(&env, &format!("{claims}/elastic-data"), grow("2Gi")).await;
    assert_eq!(code, 200, "{c}");
    assert_eq!(c["spec"]["resources"]["requests"]["storage"], "2Gi");
    // The same size written differently is no growth.
    let (code, c) = merge_patch(&env, &format!("{claims}/fixed-data"), grow("1024Mi")).await;
    assert_eq!(code, 200, "{c}");
}

#[tokio::test]
async fn new_nodes_are_tainted_not_ready() {
    let env = TestEnv::start().await.expect("env");
    let nodes = "/api/v1/nodes";
    let n = created(
        &env,
        nodes,
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker"},
            "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}}),
    )
    .await;
    assert_eq!(
        n["spec"]["taints"],
        json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    );
    // Removing it later (as the node lifecycle controller does) is not undone.
    let (code, n) = merge_patch(
        &env,
        &format!("{nodes}/worker"),
        json!({"spec": {"taints": null}}),
    )
    .await;
    assert_eq!(code, 200, "{n}");
    assert!(n["spec"].get("taints").is_none(), "{n}");
}

/// Creates a ResourceQuota with `hard` in `ns` and waits until its status counts `used`.
async fn quota_with(env: &TestEnv, ns: &str, name: &str, spec: Value, used: Value) {
    let path = format!("/api/v1/namespaces/{ns}/resourcequotas");
    created(
        env,
        &path,
        json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
            "spec": spec}),
    )
    .await;
    wait_until(WAIT, "the quota's status", || {
        let path = format!("{path}/{name}");
        let used = used.clone();
        async move { send(env, "GET", &path, None).await.1["status"]["used"] == used }
    })
    .await
    .expect("quota status");
}

#[tokio::test]
async fn quotas_refuse_updates_that_grow_usage() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "grow").await;
    let base = "/api/v1/namespaces/grow";
    created(
        &env,
        "/apis/storage.k8s.io/v1/storageclasses",
        storage_class("elastic-q", Some(true)),
    )
    .await;
    quota_with(
        &env,
        "grow",
        "q",
        json!({"hard": {"services.nodeports": "1", "requests.storage": "3Gi"}}),
        json!({"services.nodeports": "0", "requests.storage": "0"}),
    )
    .await;

    // A Service turning NodePort with two ports needs two node ports.
    created(
        &env,
        &format!("{base}/services"),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}}),
    )
    .await;
    let answer = merge_patch(
        &env,
        &format!("{base}/services/web"),
        json!({"spec": {"type": "NodePort"}}),
    )
    .await;
    assert_forbidden(
        &answer,
        "services",
        "web",
        "services \"web\" is forbidden: exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1",
    );
    let (_, stored) = send(&env, "GET", &format!("{base}/services/web"), None).await;
    assert_eq!(stored["spec"]["type"], "ClusterIP");
    // With one port it fits; other changes of a NodePort service then charge nothing more.
    let (code, s) = call_as(
        &env,
        "PATCH",
        &format!("{base}/services/web"),
        "application/json-patch+json",
        &json!([{"op": "remove", "path": "/spec/ports/1"},
            {"op": "replace", "path": "/spec/type", "value": "NodePort"}]),
    )
    .await;
    assert_eq!(code, 200, "{s}");
    let (code, s) = merge_patch(
        &env,
        &format!("{base}/services/web"),
        json!({"metadata": {"labels": {"a": "b"}}}),
    )
    .await;
    assert_eq!(code, 200, "{s}");

    // A bound claim growing past the storage quota: only the growth is requested.
    bound_claim(&env, "grow", "data", "elastic-q", "1Gi").await;
    let answer = merge_patch(
        &env,
        &format!("{base}/persistentvolumeclaims/data"),
        grow("5Gi"),
    )
    .await;
    assert_forbidden(
        &answer,
        "persistentvolumeclaims",
        "data",
        "persistentvolumeclaims \"data\" is forbidden: exceeded quota: q, requested: requests.storage=4Gi, used: requests.storage=1Gi, limited: requests.storage=3Gi",
    );
    let (code, c) = merge_patch(
        &env,
        &format!("{base}/persistentvolumeclaims/data"),
        grow("3Gi"),
    )
    .await;
    assert_eq!(code, 200, "{c}");
}

#[tokio::test]
async fn a_pod_entering_a_quota_scope_is_charged() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "deadline").await;
    let base = "/api/v1/namespaces/deadline";
    quota_with(
        &env,
        "deadline",
        "terminating",
        json!({"hard": {"pods": "0"}, "scopes": ["Terminating"]}),
        json!({"pods": "0"}),
    )
    .await;
    created(&env, &format!("{base}/pods"), pod("p", one_container())).await;
    let answer = merge_patch(
        &env,
        &format!("{base}/pods/p"),
        json!({"spec": {"activeDeadlineSeconds": 30}}),
    )
    .await;
    assert_forbidden(
        &answer,
        "pods",
        "p",
        "pods \"p\" is forbidden: exceeded quota: terminating, requested: pods=1, used: pods=0, limited: pods=0",
    );
    let (_, stored) = send(&env, "GET", &format!("{base}/pods/p"), None).await;
    assert!(
        stored["spec"].get("activeDeadlineSeconds").is_none(),
        "{stored}"
    );
    // Other updates of the pod are not evaluated.
    let (code, p) = merge_patch(
        &env,
        &format!("{base}/pods/p"),
        json!({"metadata": {"labels": {"a": "b"}}}),
    )
    .await;
    assert_eq!(code, 200, "{p}");
}

#[tokio::test]
async fn event_quotas_count_the_one_events_collection() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "evq").await;
    quota_with(
        &env,
        "evq",
        "events",
        json!({"hard": {"count/events.events.k8s.io": "1", "count/events": "5"}}),
        json!({"count/events.events.k8s.io": "0", "count/events": "0"}),
    )
    .await;
    let core_event = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "evq"},
            "reason": "Tested", "message": "m", "type": "Normal",
            "source": {"component": "test"}})
    };
    created(&env, "/api/v1/namespaces/evq/events", core_event("core-1")).await;
    // Both resources list the same events: both counts see it.
    wait_until(WAIT, "both counts", || async {
        send(
            &env,
            "GET",
            "/api/v1/namespaces/evq/resourcequotas/events",
            None,
        )
        .await
        .1["status"]["used"]
            == json!({"count/events.events.k8s.io": "1", "count/events": "1"})
    })
    .await
    .expect("event usage");
    let answer = send(
        &env,
        "POST",
        "/apis/events.k8s.io/v1/namespaces/evq/events",
        Some(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "new-1"}, "eventTime": "2026-11-28T10:00:00.000000Z",
            "reportingController": "example.com/test", "reportingInstance": "test-1",
            "action": "Testing", "reason": "Tested", "type": "Normal",
            "regarding": {"kind": "Pod", "name": "p", "namespace": "evq"}})),
    )
    .await;
    assert_forbidden(
        &answer,
        "events.events.k8s.io",
        "new-1",
        "events.events.k8s.io \"new-1\" is forbidden: exceeded quota: events, requested: count/events.events.k8s.io=1, used: count/events.events.k8s.io=1, limited: count/events.events.k8s.io=1",
    );
    // A core Event is charged to count/events only, as upstream charges the resource written.
    created(&env, "/api/v1/namespaces/evq/events", core_event("core-2")).await;
}

#[tokio::test]
async fn concurrent_updates_never_exceed_a_quota_together() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "racing-updates").await;
    let base = "/api/v1/namespaces/racing-updates";
    quota_with(
        &env,
        "racing-updates",
        "ports",
        json!({"hard": {"services.nodeports": "2"}}),
        json!({"services.nodeports": "0"}),
    )
    .await;
    for i in 0..6 {
        created(
            &env,
            &format!("{base}/services"),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": format!("s-{i}")},
                "spec": {"ports": [{"port": 80}]}}),
        )
        .await;
    }
    // A validating webhook makes every update wait between admission and its write, so all
    // pass the admission-time quota check before any is stored; the guarded write decides.
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
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "slow-updates"},
            "webhooks": [{"name": "allow.test.example.com",
                "clientConfig": {"url": hook.url("/allow"), "caBundle": hook.ca_bundle},
                "rules": [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                    "resources": ["services"]}],
                "namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": "racing-updates"}},
                "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
    )
    .await;
    let updates = (0..6).map(|i| {
        let env = &env;
        async move {
            merge_patch(
                env,
                &format!("{base}/services/s-{i}"),
                json!({"spec": {"type": "NodePort"}}),
            )
            .await
            .0
        }
    });
    let codes = futures::future::join_all(updates).await;
    assert_eq!(codes.iter().filter(|c| **c == 200).count(), 2, "{codes:?}");
    assert!(codes.iter().all(|c| *c == 200 || *c == 403), "{codes:?}");
    let (_, list) = send(&env, "GET", &format!("{base}/services"), None).await;
    let node_ports = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|s| s["spec"]["type"] == "NodePort")
        .count();
    assert_eq!(node_ports, 2);
    assert_eq!(
        hook.reviews("/allow").len(),
        6,
        "every update went through the webhook"
    );
}

#[tokio::test]
async fn a_pod_resize_is_charged_what_it_adds() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), "resize").await;
    let base = "/api/v1/namespaces/resize";
    quota_with(
        &env,
        "resize",
        "cpu",
        json!({"hard": {"requests.cpu": "1"}}),
        json!({"requests.cpu": "0"}),
    )
    .await;
    let spec = json!({"containers": [{"name": "c", "image": "busybox",
        "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "500m"}}}]});
    created(&env, &format!("{base}/pods"), pod("p", spec)).await;
    let resize = |cpu: &str| {
        json!({"spec": {"containers": [{"name": "c",
            "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}})
    };
    let path = format!("{base}/pods/p/resize");
    let answer = call_as(
        &env,
        "PATCH",
        &path,
        "application/strategic-merge-patch+json",
        &resize("1500m"),
    )
    .await;
    assert_forbidden(
        &answer,
        "pods",
        "p",
        "pods \"p\" is forbidden: exceeded quota: cpu, requested: requests.cpu=1250m, used: requests.cpu=250m, limited: requests.cpu=1",
    );
    let (code, p) = call_as(
        &env,
        "PATCH",
        &path,
        "application/strategic-merge-patch+json",
        &resize("1"),
    )
    .await;
    assert_eq!(code, 200, "{p}");
    assert_eq!(
        p["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "1"
    );
}
