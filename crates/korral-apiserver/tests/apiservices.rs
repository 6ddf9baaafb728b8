//! `apiregistration.k8s.io/v1` APIServices as kube-apiserver v1.36 serves them: a local
//! APIService per served group version (built-ins and CRD versions, which come and go with
//! their CRD), user APIServices validated with upstream's messages and their availability
//! checks (up to the discovery call of the aggregated server; see `aggregated_proxy.rs` for
//! servers that answer), the `kubectl get apiservices` table and the group first in
//! discovery.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

const APISERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";
const WAIT: Duration = Duration::from_secs(10);

async fn send(env: &TestEnv, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let content_type = body.map(|_| "application/json");
    raw(&env.client(), method, path, content_type, bytes).await
}

/// A JSON merge patch.
async fn merge_patch(env: &TestEnv, path: &str, patch: Value) -> (u16, Value) {
    raw(
        &env.client(),
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        patch.to_string().into_bytes(),
    )
    .await
}

/// The APIService of that name, if stored.
async fn get(env: &TestEnv, name: &str) -> Option<Value> {
    let (code, body) = send(env, "GET", &format!("{APISERVICES}/{name}"), None).await;
    (code == 200).then_some(body)
}

/// Polls (until [`WAIT`]) for `check` to hold for the APIService `name` (or its absence)
/// and answers it.
async fn wait_for(
    env: &TestEnv,
    name: &str,
    what: &str,
    check: impl Fn(Option<&Value>) -> bool,
) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let last = get(env, name).await;
        if check(last.as_ref()) {
            return last;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: last seen {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The names of the stored APIServices.
async fn names(env: &TestEnv) -> Vec<String> {
    let (_, list) = send(env, "GET", APISERVICES, None).await;
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The `Available` condition of an APIService.
fn available(obj: &Value) -> Option<&Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Available")
}

#[tokio::test]
async fn every_served_group_version_has_a_local_apiservice() {
    let env = TestEnv::start().await.expect("env");
    let legacy = wait_for(&env, "v1.", "v1. registered", |o| o.is_some())
        .await
        .expect("v1.");
    assert_eq!(
        legacy["spec"],
        json!({"group": "", "version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1})
    );
    assert_eq!(
        legacy["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "onstart"
    );
    let condition = available(&legacy).expect("available condition");
    assert_eq!(condition["status"], "True");
    assert_eq!(condition["reason"], "Local");
    assert_eq!(
        condition["message"],
        "Local APIServices are always available"
    );

    // Every group version discovery lists has its APIService.
    let (_, groups) = send(&env, "GET", "/apis", None).await;
    let mut expected = vec!["v1.".to_string()];
    for group in groups["groups"].as_array().expect("groups") {
        for v in group["versions"].as_array().expect("versions") {
            expected.push(format!(
                "{}.{}",
                v["version"].as_str().unwrap_or(""),
                group["name"].as_str().unwrap_or("")
            ));
        }
    }
    assert!(expected.contains(&"v1.apiregistration.k8s.io".to_string()));
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listed = names(&env).await;
        if expected.iter().all(|e| listed.contains(e)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "want {expected:?}\n listed {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let apps = get(&env, "v1.apps").await.expect("v1.apps");
    assert_eq!(apps["spec"]["groupPriorityMinimum"], 17800);
    assert_eq!(apps["spec"]["versionPriority"], 15);
    let hpa = get(&env, "v2.autoscaling").await.expect("v2.autoscaling");
    assert_eq!(hpa["spec"]["versionPriority"], 30);

    // A CRD's served versions get theirs, removed with the CRD.
    install_widget_crd(&env).await;
    let widgets = wait_for(&env, "v1.ref.example.org", "CRD APIService", |o| {
        o.is_some()
    })
    .await
    .expect("crd apiservice");
    assert_eq!(
        widgets["spec"],
        json!({"group": "ref.example.org", "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100})
    );
    assert_eq!(
        widgets["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"],
        "true"
    );
    assert_eq!(available(&widgets).expect("condition")["status"], "True");
    // As upstream's autoregistration: a CRD version's APIService is kept in step (a change by
    // hand is put back), a built-in one is synced on start only (a client may change it).
    for (name, priority) in [("v1.apps", 3), ("v1.ref.example.org", 7)] {
        let (code, body) = merge_patch(
            &env,
            &format!("{APISERVICES}/{name}"),
            json!({"spec": {"versionPriority": priority}}),
        )
        .await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(body["spec"]["versionPriority"], priority);
    }
    wait_for(&env, "v1.ref.example.org", "CRD APIService put back", |o| {
        o.is_some_and(|o| o["spec"]["versionPriority"] == 100)
    })
    .await;
    let apps = get(&env, "v1.apps").await.expect("v1.apps");
    assert_eq!(apps["spec"]["versionPriority"], 3, "synced on start only");
    let (code, body) = send(
        &env,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.ref.example.org",
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    // A managed APIService nothing serves is removed.
    let stale = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.stale.example.com",
                     "labels": {"kube-aggregator.kubernetes.io/automanaged": "true"}},
        "spec": {"group": "stale.example.com", "version": "v1", "groupPriorityMinimum": 1000,
                 "versionPriority": 100}});
    let (code, body) = send(&env, "POST", APISERVICES, Some(&stale)).await;
    assert_eq!(code, 201, "{body}");
    wait_for(
        &env,
        "v1.stale.example.com",
        "stale APIService removed",
        |o| o.is_none(),
    )
    .await;
    wait_for(&env, "v1.ref.example.org", "CRD APIService removed", |o| {
        o.is_none()
    })
    .await;
    env.shutdown().await;
}

#[tokio::test]
async fn user_apiservices_are_validated_and_unavailable() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let post = |body: Value| {
        let client = client.clone();
        async move {
            raw(
                &client,
                "POST",
                APISERVICES,
                Some("application/json"),
                body.to_string().into_bytes(),
            )
            .await
        }
    };
    let (code, body) = post(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.wrong.example.com"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 0,
                 "versionPriority": 1001, "caBundle": "AAAA", "insecureSkipTLSVerify": true,
                 "service": {"namespace": "kube-system", "name": "", "port": 0}},
    }))
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let causes: Vec<(String, String)> = body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or("").to_string(),
                c["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let want = [
        (
            "metadata.name",
            "Invalid value: \"v1beta1.wrong.example.com\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\"",
        ),
        (
            "spec.groupPriorityMinimum",
            "Invalid value: 0: must be positive and less than 20000",
        ),
        (
            "spec.versionPriority",
            "Invalid value: 1001: must be positive and less than 1000",
        ),
        ("spec.service.name", "Required value"),
        (
            "spec.service.port",
            "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
        ),
        (
            "spec.insecureSkipTLSVerify",
            "Invalid value: true: may not be true if caBundle is present",
        ),
    ];
    for (field, message) in want {
        assert!(
            causes.iter().any(|(f, m)| f == field && m == message),
            "missing {field}: {message} in {causes:?}"
        );
    }
    assert!(
        body["message"].as_str().unwrap_or("").starts_with(
            "APIService.apiregistration.k8s.io \"v1beta1.wrong.example.com\" is invalid: "
        ),
        "{body}"
    );
    assert!(get(&env, "v1beta1.wrong.example.com").await.is_none());
    // Not base64: undecodable.
    let (code, body) = post(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.x.example.com"},
        "spec": {"group": "x.example.com", "version": "v1", "groupPriorityMinimum": 1,
                 "versionPriority": 1, "caBundle": "!!!!",
                 "service": {"namespace": "default", "name": "x"}},
    }))
    .await;
    assert_eq!(code, 400, "{body}");

    // A valid aggregated APIService: stored, defaulted, unavailable with the reason that fits.
    let (code, body) = post(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                 "versionPriority": 100, "insecureSkipTLSVerify": true,
                 "service": {"namespace": "default", "name": "metrics-server"}},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Forged"}]},
    }))
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["spec"]["service"]["port"], 443);
    assert!(available(&body).is_none(), "status reset on create: {body}");
    let missing = wait_for(&env, "v1beta1.metrics.k8s.io", "ServiceNotFound", |o| {
        o.and_then(available)
            .is_some_and(|c| c["reason"] == "ServiceNotFound")
    })
    .await
    .expect("apiservice");
    let condition = available(&missing).expect("condition");
    assert_eq!(condition["status"], "False");
    assert_eq!(
        condition["message"],
        "service/metrics-server in \"default\" is not present"
    );
    // The Service appears on another port, then on 443 without endpoints.
    let service = |port: i64| {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "metrics-server", "namespace": "default"},
               "spec": {"ports": [{"name": "https", "port": port, "targetPort": 4443}]}})
    };
    let (code, body) = send(
        &env,
        "POST",
        "/api/v1/namespaces/default/services",
        Some(&service(8443)),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let wrong_port = wait_for(&env, "v1beta1.metrics.k8s.io", "ServicePortError", |o| {
        o.and_then(available)
            .is_some_and(|c| c["reason"] == "ServicePortError")
    })
    .await
    .expect("apiservice");
    assert_eq!(
        available(&wrong_port).expect("condition")["message"],
        "service/metrics-server in \"default\" is not listening on port 443"
    );
    let (code, body) = merge_patch(
        &env,
        "/api/v1/namespaces/default/services/metrics-server",
        json!({"spec": {"ports": [{"name": "https", "port": 443, "targetPort": 4443}]}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    wait_for(&env, "v1beta1.metrics.k8s.io", "EndpointsNotFound", |o| {
        o.and_then(available)
            .is_some_and(|c| c["reason"] == "EndpointsNotFound")
    })
    .await;
    // With a ready endpoint the server calls the aggregated server's discovery: here the
    // service is mapped to a local port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed_addr = closed.local_addr().expect("address");
    drop(closed);
    env.server()
        .webhook_services()
        .insert("default", "metrics-server", 443, closed_addr);
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "metrics-server-abc", "namespace": "default",
                     "labels": {"kubernetes.io/service-name": "metrics-server"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.5"], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": 4443, "protocol": "TCP"}]});
    let (code, body) = send(
        &env,
        "POST",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        Some(&slice),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let unreachable = wait_for(
        &env,
        "v1beta1.metrics.k8s.io",
        "FailedDiscoveryCheck",
        |o| {
            o.and_then(available)
                .is_some_and(|c| c["reason"] == "FailedDiscoveryCheck")
        },
    )
    .await
    .expect("apiservice");
    let message = available(&unreachable).expect("condition")["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let url = format!("https://{closed_addr}/apis/metrics.k8s.io/v1beta1");
    assert_eq!(
        message,
        format!(
            "failing or missing response from {url}: Get \"{url}\": dial tcp {closed_addr}: connect: connection refused"
        )
    );

    // The table kubectl prints.
    let (code, table) = table_with_code(&env, APISERVICES).await;
    assert_eq!(code, 200, "{table}");
    let headers: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(headers, ["Name", "Service", "Available", "Age"]);
    let row = |name: &str| -> Vec<Value> {
        table["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["cells"][0] == name)
            .and_then(|r| r["cells"].as_array().cloned())
            .unwrap_or_default()
    };
    assert_eq!(row("v1.apps")[1..3], [json!("Local"), json!("True")]);
    assert_eq!(
        row("v1beta1.metrics.k8s.io")[1..3],
        [
            json!("default/metrics-server"),
            json!("False (FailedDiscoveryCheck)")
        ]
    );

    // The user's APIService is theirs: deleting it works and nothing recreates it.
    let (code, body) = send(
        &env,
        "DELETE",
        &format!("{APISERVICES}/v1beta1.metrics.k8s.io"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(get(&env, "v1beta1.metrics.k8s.io").await.is_none());
    env.shutdown().await;
}

#[tokio::test]
async fn a_restart_syncs_the_builtin_apiservices_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    {
        let env = TestEnv::builder()
            .server_config(korral_apiserver::ServerConfig::durable(&data))
            .start()
            .await
            .expect("env");
        wait_for(&env, "v2.autoscaling", "registered", |o| o.is_some()).await;
        install_widget_crd(&env).await;
        wait_for(&env, "v1.ref.example.org", "CRD APIService", |o| {
            o.is_some()
        })
        .await;
        let (code, body) = merge_patch(
            &env,
            &format!("{APISERVICES}/v1.apps"),
            json!({"spec": {"versionPriority": 3}}),
        )
        .await;
        assert_eq!(code, 200, "{body}");
        env.shutdown().await;
    }
    let env = TestEnv::builder()
        .server_config(korral_apiserver::ServerConfig::durable(&data))
        .start()
        .await
        .expect("restart");
    wait_for(&env, "v1.apps", "synced on start", |o| {
        o.is_some_and(|o| o["spec"]["versionPriority"] == 15)
    })
    .await;
    let widgets = get(&env, "v1.ref.example.org").await.expect("kept");
    assert_eq!(widgets["spec"]["groupPriorityMinimum"], 1000);
    env.shutdown().await;
}

#[tokio::test]
async fn discovery_lists_the_group_first() {
    let env = TestEnv::start().await.expect("env");
    let (code, groups) = send(&env, "GET", "/apis", None).await;
    assert_eq!(code, 200);
    assert_eq!(groups["groups"][0]["name"], "apiregistration.k8s.io");
    assert_eq!(
        groups["groups"][0]["preferredVersion"]["groupVersion"],
        "apiregistration.k8s.io/v1"
    );
    let (code, list) = send(&env, "GET", "/apis/apiregistration.k8s.io/v1", None).await;
    assert_eq!(code, 200, "{list}");
    let resources: Vec<(&str, bool)> = list["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or(""),
                r["namespaced"].as_bool().unwrap_or(true),
            )
        })
        .collect();
    assert_eq!(
        resources,
        [("apiservices", false), ("apiservices/status", false)]
    );
    // The kind's OpenAPI model is upstream's.
    let (code, doc) = send(
        &env,
        "GET",
        "/openapi/v3/apis/apiregistration.k8s.io/v1",
        None,
    )
    .await;
    assert_eq!(code, 200);
    let model = &doc["components"]["schemas"]["io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService"];
    assert!(
        model["properties"]["spec"].is_object(),
        "APIService model: {model}"
    );
    env.shutdown().await;
}
