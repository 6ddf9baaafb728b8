//! Simulated Pods wait for what they reference, as on a cluster: a missing claim keeps a Pod
//! unschedulable, a missing ConfigMap or Secret (or key) of a volume keeps it in
//! `ContainerCreating`, of a container's environment keeps that container in
//! `CreateContainerConfigError`; each proceeds once the object (or key) is there.

mod common;

use common::*;
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/default/pods";

/// The Pod `name` of `default` (`Null` once gone).
async fn pod(env: &TestEnv, name: &str) -> Value {
    let (code, pod) = call(env, "GET", &format!("{PODS}/{name}"), None).await;
    if code == 200 { pod } else { Value::Null }
}

/// The Events of `default` about `name` with `reason`.
async fn events_about(env: &TestEnv, name: &str, reason: &str) -> Vec<Value> {
    let (code, list) = call(env, "GET", "/api/v1/namespaces/default/events", None).await;
    assert_eq!(code, 200, "{list}");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["involvedObject"]["name"] == name && e["reason"] == reason)
        .cloned()
        .collect()
}

/// Waits until some Event about `name` with `reason` is recorded; the first one.
async fn event(env: &TestEnv, name: &str, reason: &str) -> Value {
    let found = until(
        &format!("a {reason} event about {name}"),
        || async { json!(events_about(env, name, reason).await) },
        |list| list.as_array().is_some_and(|l| !l.is_empty()),
    )
    .await;
    found[0].clone()
}

/// How many times the Events about `name` with `reason` were recorded (their counts).
async fn times(env: &TestEnv, name: &str, reason: &str) -> i64 {
    events_about(env, name, reason)
        .await
        .iter()
        .map(|e| e["count"].as_i64().unwrap_or(1))
        .sum()
}

/// A held Pod that is touched is looked at again by the kubelet (one more `reason` event)
/// without its status being written: holding a Pod is a fixed point, not a write loop.
async fn held_without_rewrites(env: &TestEnv, name: &str, reason: &str) {
    // The kubelet looks once more after its own write of the held status.
    let settled = until(
        &format!("{name}'s {reason} recorded twice"),
        || async { json!(times(env, name, reason).await) },
        |n| n.as_i64() >= Some(2),
    )
    .await;
    let (code, touched) = call_as(
        env,
        "PATCH",
        &format!("{PODS}/{name}"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"touched": "yes"}}}),
    )
    .await;
    assert_eq!(code, 200, "{touched}");
    until(
        &format!("the kubelet looks at {name} again"),
        || async { json!(times(env, name, reason).await) },
        |n| n.as_i64() > settled.as_i64(),
    )
    .await;
    assert_eq!(
        pod(env, name).await["metadata"]["resourceVersion"],
        touched["metadata"]["resourceVersion"],
        "the held status is not rewritten"
    );
}

/// The condition `kind` of a Pod (`Null` when absent).
fn condition(pod: &Value, kind: &str) -> Value {
    pod["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The status of container `name` of a Pod.
fn container(pod: &Value, name: &str) -> Value {
    pod["status"]["containerStatuses"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == name))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Whether a Pod runs and is Ready.
fn running_and_ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running" && condition(pod, "Ready")["status"] == "True"
}

/// Waits until the Pod `name` satisfies `check`.
async fn pod_until(env: &TestEnv, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    until(what, || pod(env, name), check).await
}

async fn create_pod(env: &TestEnv, name: &str, spec: Value) {
    create_ok(
        env,
        PODS,
        &json!({"metadata": {"name": name}, "spec": spec}),
    )
    .await;
}

/// A ConfigMap volume whose ConfigMap is missing holds the Pod in `ContainerCreating` with a
/// `FailedMount` warning; so does a missing key of its `items`. Each starts once its
/// ConfigMap (or key) is there.
#[tokio::test]
async fn a_missing_config_map_volume_holds_the_pod_until_it_exists() {
    let env = sim_env().await;
    let volume_pod = |items: Option<Value>| {
        let mut source = json!({"name": "settings"});
        if let Some(items) = items {
            source["items"] = items;
        }
        json!({"containers": [{"name": "web", "image": "nginx",
                "volumeMounts": [{"name": "config", "mountPath": "/etc/web"}]}],
            "volumes": [{"name": "config", "configMap": source}]})
    };
    create_pod(&env, "web", volume_pod(None)).await;
    let held = pod_until(&env, "web", "web waits in ContainerCreating", |p| {
        container(p, "web")["state"]["waiting"]["reason"] == "ContainerCreating"
    })
    .await;
    assert_eq!(
        held["spec"]["nodeName"], "korral-node",
        "scheduled: {held:#}"
    );
    assert_eq!(held["status"]["phase"], "Pending");
    assert_eq!(held["status"]["hostIP"], "172.18.0.2");
    assert!(held["status"].get("podIP").is_none(), "{held:#}");
    assert_eq!(condition(&held, "PodScheduled")["status"], "True");
    assert_eq!(
        condition(&held, "PodReadyToStartContainers")["status"],
        "False"
    );
    assert_eq!(condition(&held, "Initialized")["status"], "True");
    let ready = condition(&held, "Ready");
    assert_eq!(
        (&ready["status"], &ready["reason"], &ready["message"]),
        (
            &json!("False"),
            &json!("ContainersNotReady"),
            &json!("containers with unready status: [web]")
        )
    );
    let web = container(&held, "web");
    assert_eq!(
        (&web["ready"], &web["started"]),
        (&json!(false), &json!(false))
    );
    assert!(web.get("containerID").is_none(), "{web:#}");
    let mount = event(&env, "web", "FailedMount").await;
    assert_eq!(mount["type"], "Warning");
    assert_eq!(
        mount["message"],
        "MountVolume.SetUp failed for volume \"config\" : configmap \"settings\" not found"
    );
    assert_eq!(mount["source"]["component"], "kubelet");
    assert!(events_about(&env, "web", "Started").await.is_empty());
    held_without_rewrites(&env, "web", "FailedMount").await;

    // A second Pod names a key the ConfigMap will not have at first.
    create_pod(
        &env,
        "keyed",
        volume_pod(Some(json!([{"key": "extra", "path": "extra.conf"}]))),
    )
    .await;
    create_ok(
        &env,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "settings"}, "data": {"web.conf": "listen 80"}}),
    )
    .await;
    pod_until(
        &env,
        "web",
        "web runs once its ConfigMap exists",
        running_and_ready,
    )
    .await;
    assert_eq!(events_about(&env, "web", "Started").await.len(), 1);
    let keyed = until(
        "keyed reports the missing key",
        || async { json!(events_about(&env, "keyed", "FailedMount").await) },
        |list| {
            list.as_array().into_iter().flatten().any(|e| {
                e["message"]
                    == "MountVolume.SetUp failed for volume \"config\" : configmap references non-existent config key: extra"
            })
        },
    )
    .await;
    assert!(!keyed.as_array().is_some_and(Vec::is_empty));
    assert_eq!(pod(&env, "keyed").await["status"]["phase"], "Pending");
    let (code, patched) = call_as(
        &env,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/settings",
        "application/merge-patch+json",
        &json!({"data": {"extra": "on"}}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    pod_until(
        &env,
        "keyed",
        "keyed runs once the key is there",
        running_and_ready,
    )
    .await;
}

/// A container whose environment names a missing Secret key waits in
/// `CreateContainerConfigError` (a `Failed` warning says why) while the Pod's other container
/// runs; once the key is added it starts, and the running one is left as it was.
#[tokio::test]
async fn a_missing_secret_key_holds_its_container_until_the_key_is_added() {
    let env = sim_env().await;
    create_ok(
        &env,
        "/api/v1/namespaces/default/secrets",
        &json!({"metadata": {"name": "creds"}, "stringData": {"user": "admin"}}),
    )
    .await;
    create_pod(
        &env,
        "app",
        json!({"containers": [
            {"name": "app", "image": "busybox", "env": [
                {"name": "USER", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "user"}}},
                {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}}]},
            {"name": "proxy", "image": "envoyproxy/envoy"}]}),
    )
    .await;
    let message = "couldn't find key password in Secret default/creds";
    let held = pod_until(
        &env,
        "app",
        "app waits in CreateContainerConfigError",
        |p| container(p, "app")["state"]["waiting"]["reason"] == "CreateContainerConfigError",
    )
    .await;
    let app = container(&held, "app");
    assert_eq!(app["state"]["waiting"]["message"], message);
    assert_eq!(
        (&app["ready"], &app["started"]),
        (&json!(false), &json!(false))
    );
    assert_eq!(held["status"]["phase"], "Pending");
    assert!(
        held["status"]["podIP"].is_string(),
        "the sandbox runs: {held:#}"
    );
    assert_eq!(
        condition(&held, "PodReadyToStartContainers")["status"],
        "True"
    );
    assert_eq!(
        condition(&held, "Ready")["message"],
        "containers with unready status: [app]"
    );
    let proxy = container(&held, "proxy");
    assert!(proxy["state"]["running"].is_object(), "{held:#}");
    let failed = event(&env, "app", "Failed").await;
    assert_eq!(failed["type"], "Warning");
    assert_eq!(failed["message"], format!("Error: {message}"));
    assert_eq!(
        failed["involvedObject"]["fieldPath"],
        "spec.containers{app}"
    );
    let pulled = events_about(&env, "app", "Pulled").await;
    assert!(
        pulled
            .iter()
            .any(|e| e["involvedObject"]["fieldPath"] == "spec.containers{app}"),
        "the image is pulled before the configuration is made: {pulled:#?}"
    );
    held_without_rewrites(&env, "app", "Failed").await;

    let (code, patched) = call_as(
        &env,
        "PATCH",
        "/api/v1/namespaces/default/secrets/creds",
        "application/merge-patch+json",
        &json!({"stringData": {"password": "s3cret"}}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    let running = pod_until(
        &env,
        "app",
        "app runs once the key is there",
        running_and_ready,
    )
    .await;
    assert!(container(&running, "app")["state"]["running"].is_object());
    assert_eq!(
        container(&running, "proxy")["containerID"],
        proxy["containerID"],
        "the container that ran keeps running"
    );
    assert_eq!(running["status"]["podIP"], held["status"]["podIP"]);
}

/// A missing ConfigMap named by `envFrom` holds its container the same way.
#[tokio::test]
async fn a_missing_env_from_config_map_holds_its_container() {
    let env = sim_env().await;
    create_pod(
        &env,
        "env",
        json!({"containers": [{"name": "main", "image": "busybox",
            "envFrom": [{"configMapRef": {"name": "app-env"}}]}]}),
    )
    .await;
    let held = pod_until(&env, "env", "main waits for its ConfigMap", |p| {
        container(p, "main")["state"]["waiting"]["reason"] == "CreateContainerConfigError"
    })
    .await;
    assert_eq!(
        container(&held, "main")["state"]["waiting"]["message"],
        "configmap \"app-env\" not found"
    );
    create_ok(
        &env,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "app-env"}, "data": {"MODE": "prod"}}),
    )
    .await;
    pod_until(
        &env,
        "env",
        "main runs once its ConfigMap exists",
        running_and_ready,
    )
    .await;
}

/// Optional references never hold a Pod, missing or not.
#[tokio::test]
async fn optional_references_never_hold_a_pod() {
    let env = sim_env().await;
    create_ok(
        &env,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "partial"}, "data": {"a": "1"}}),
    )
    .await;
    create_pod(
        &env,
        "relaxed",
        json!({"containers": [{"name": "main", "image": "busybox",
                "envFrom": [{"secretRef": {"name": "nope", "optional": true}}],
                "env": [
                    {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "a", "optional": true}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "partial", "key": "b", "optional": true}}},
                    {"name": "C", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "c", "optional": true}}}]}],
            "volumes": [
                {"name": "cm", "configMap": {"name": "nope", "optional": true}},
                {"name": "keys", "configMap": {"name": "partial", "optional": true,
                    "items": [{"key": "b", "path": "b"}]}},
                {"name": "s", "secret": {"secretName": "nope", "optional": true}},
                {"name": "p", "projected": {"sources": [
                    {"configMap": {"name": "nope", "optional": true}},
                    {"secret": {"name": "nope", "optional": true}}]}}]}),
    )
    .await;
    pod_until(&env, "relaxed", "the pod runs", running_and_ready).await;
    assert!(
        events_about(&env, "relaxed", "FailedMount")
            .await
            .is_empty()
    );
    assert!(events_about(&env, "relaxed", "Failed").await.is_empty());
}

/// The scheduler's message for a Pod its volume plugins reject.
fn rejected(reason: &str) -> String {
    format!(
        "0/1 nodes are available: {reason}. preemption: 0/1 nodes are available: \
         1 Preemption is not helpful for scheduling."
    )
}

/// Waits until the Pod `name` is unschedulable with `message` (and recorded so); the Pod.
async fn unschedulable(env: &TestEnv, name: &str, message: &str) -> Value {
    let held = pod_until(
        env,
        name,
        &format!("{name} is unschedulable: {message}"),
        |p| condition(p, "PodScheduled")["message"] == message,
    )
    .await;
    let scheduled = condition(&held, "PodScheduled");
    assert_eq!(
        (&scheduled["status"], &scheduled["reason"]),
        (&json!("False"), &json!("Unschedulable"))
    );
    assert!(held["spec"].get("nodeName").is_none(), "{held:#}");
    assert_eq!(held["status"]["phase"], "Pending");
    let recorded = until(
        &format!("FailedScheduling for {name}: {message}"),
        || async { json!(events_about(env, name, "FailedScheduling").await) },
        |list| {
            list.as_array()
                .into_iter()
                .flatten()
                .any(|e| e["message"] == message && e["type"] == "Warning")
        },
    )
    .await;
    assert!(recorded.is_array());
    held
}

fn claim(name: &str, class: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
        "storageClassName": class, "resources": {"requests": {"storage": "1Gi"}}}})
}

fn claim_pod(claim: &str) -> Value {
    json!({"containers": [{"name": "db", "image": "postgres:17"}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]})
}

const CLAIMS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";

/// A Pod naming a claim that does not exist is unschedulable until the claim is made (its
/// class provisions a volume at once), then it is scheduled and runs.
#[tokio::test]
async fn a_missing_claim_leaves_the_pod_unschedulable_until_it_is_created() {
    let env = sim_env().await;
    create_ok(
        &env,
        "/apis/storage.k8s.io/v1/storageclasses",
        &json!({"metadata": {"name": "fast"}, "provisioner": "example.com/disk",
            "volumeBindingMode": "Immediate"}),
    )
    .await;
    create_pod(&env, "db", claim_pod("data")).await;
    unschedulable(
        &env,
        "db",
        &rejected("persistentvolumeclaim \"data\" not found"),
    )
    .await;
    create_ok(&env, CLAIMS, &claim("data", "fast")).await;
    let running = pod_until(&env, "db", "db is scheduled and runs", running_and_ready).await;
    assert_eq!(running["spec"]["nodeName"], "korral-node");
    let (_, data) = call(&env, "GET", &format!("{CLAIMS}/data"), None).await;
    assert_eq!(data["status"]["phase"], "Bound");
    assert!(!events_about(&env, "db", "Scheduled").await.is_empty());
}

/// A claim of an `Immediate` class that nothing binds (no provisioner, no volume yet) keeps
/// the Pod unschedulable until a volume is created that fits it (the new volume's event
/// re-checks the waiting claims); a claim being deleted keeps a Pod unschedulable too.
#[tokio::test]
async fn unbound_immediate_and_deleting_claims_leave_the_pod_unschedulable() {
    let env = sim_env().await;
    create_ok(
        &env,
        "/apis/storage.k8s.io/v1/storageclasses",
        &json!({"metadata": {"name": "manual"}, "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "Immediate"}),
    )
    .await;
    create_ok(&env, CLAIMS, &claim("static", "manual")).await;
    create_pod(&env, "waits", claim_pod("static")).await;
    unschedulable(
        &env,
        "waits",
        &rejected("pod has unbound immediate PersistentVolumeClaims"),
    )
    .await;
    create_ok(
        &env,
        "/api/v1/persistentvolumes",
        &json!({"metadata": {"name": "disk"}, "spec": {"capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteOnce"], "storageClassName": "manual",
            "hostPath": {"path": "/tmp/disk"}}}),
    )
    .await;
    pod_until(
        &env,
        "waits",
        "waits runs once its claim is bound",
        running_and_ready,
    )
    .await;

    // A claim held by a finalizer while being deleted.
    let mut going = claim("going", "manual");
    going["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create_ok(&env, CLAIMS, &going).await;
    let (code, deleted) = call(&env, "DELETE", &format!("{CLAIMS}/going"), None).await;
    assert_eq!(code, 200, "{deleted}");
    create_pod(&env, "late", claim_pod("going")).await;
    unschedulable(
        &env,
        "late",
        &rejected("persistentvolumeclaim \"going\" is being deleted"),
    )
    .await;
}

/// A server without TLS has no CA, so no `kube-root-ca.crt` is published; the service account
/// volume every Pod gets still names it, and the Pod runs (the reference counts as published).
#[tokio::test]
async fn without_a_ca_the_service_account_volume_does_not_hold_pods() {
    let env = TestEnv::builder()
        .server_config(korral_apiserver::ServerConfig {
            tls: false,
            ..korral_apiserver::ServerConfig::in_memory()
        })
        .simulation(true)
        .start()
        .await
        .expect("plain env");
    create_pod(
        &env,
        "plain",
        json!({"containers": [{"name": "main", "image": "busybox"}]}),
    )
    .await;
    let running = pod_until(&env, "plain", "the pod runs", running_and_ready).await;
    let sources = running["spec"]["volumes"][0]["projected"]["sources"].clone();
    assert!(
        sources
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| s["configMap"]["name"] == "kube-root-ca.crt"),
        "the service account volume names the root CA: {running:#}"
    );
    let (code, _) = call(
        &env,
        "GET",
        "/api/v1/namespaces/default/configmaps/kube-root-ca.crt",
        None,
    )
    .await;
    assert_eq!(code, 404, "no CA, nothing published");
}

/// Volumes are set up once, before the sandbox: a Pod whose container waits for its
/// configuration is not held again for a volume whose ConfigMap went away meanwhile.
#[tokio::test]
async fn a_pod_past_its_volumes_is_not_held_for_them_again() {
    let env = sim_env().await;
    create_ok(
        &env,
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "files"}, "data": {"a": "1"}}),
    )
    .await;
    create_pod(
        &env,
        "mounted",
        json!({"containers": [{"name": "main", "image": "busybox", "env": [
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "token", "key": "value"}}}]}],
            "volumes": [{"name": "files", "configMap": {"name": "files"}}]}),
    )
    .await;
    pod_until(&env, "mounted", "main waits for its Secret", |p| {
        container(p, "main")["state"]["waiting"]["reason"] == "CreateContainerConfigError"
    })
    .await;
    let (code, gone) = call(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/files",
        None,
    )
    .await;
    assert_eq!(code, 200, "{gone}");
    create_ok(
        &env,
        "/api/v1/namespaces/default/secrets",
        &json!({"metadata": {"name": "token"}, "stringData": {"value": "t"}}),
    )
    .await;
    pod_until(&env, "mounted", "main runs", running_and_ready).await;
    assert!(
        events_about(&env, "mounted", "FailedMount")
            .await
            .is_empty()
    );
}
