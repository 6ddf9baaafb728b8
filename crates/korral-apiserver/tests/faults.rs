//! Fault injection seen by a real client (kube-rs): injected errors shaped as upstream's,
//! watches ended early, 410 on resume, latency, matching, run-time changes, stats, /metrics.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use korral_apiserver::{FaultConfig, FaultLatency, FaultRule};
use korral_testenv::TestEnv;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};

/// How long anything may take before a test gives up.
const WAIT: Duration = Duration::from_secs(15);

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).expect("cm")
}

/// A client that does not retry 429/503 itself (kube-rs does by default), so the test sees
/// the injected answer.
async fn no_retry_client(env: &TestEnv) -> Client {
    let kubeconfig = Kubeconfig::from_yaml(env.server().kubeconfig_yaml()).expect("kubeconfig");
    let mut config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config");
    config.default_retry = false;
    Client::try_from(config).expect("client")
}

/// A raw GET through the client: status, headers and body.
async fn get_raw(client: &Client, path: &str) -> (u16, http::HeaderMap, Vec<u8>) {
    let request = http::Request::get(path)
        .body(Vec::new())
        .expect("request")
        .map(kube::client::Body::from);
    let response = client.send(request).await.expect("send");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    (status, headers, bytes.to_vec())
}

fn api_error(result: kube::Result<impl std::fmt::Debug>) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn env_with(faults: FaultConfig) -> TestEnv {
    TestEnv::builder()
        .faults(faults)
        .start()
        .await
        .expect("env")
}

#[tokio::test]
async fn throttling_429_carries_retry_after_in_header_and_status() {
    let env = env_with(
        FaultConfig::new().with_rule(
            FaultRule::error(429)
                .retry_after(Duration::from_secs(3))
                .verbs(["list"])
                .resources(["configmaps"])
                .named("throttle"),
        ),
    )
    .await;
    let client = no_retry_client(&env).await;
    let (status, headers, body) = get_raw(&client, "/api/v1/namespaces/default/configmaps").await;
    assert_eq!(status, 429);
    assert_eq!(
        headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("3")
    );
    let body: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(
        body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Too many requests, please try again later.",
            "reason": "TooManyRequests", "details": {"retryAfterSeconds": 3}, "code": 429
        })
    );
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let err = api_error(api.list(&ListParams::default()).await);
    assert_eq!((err.code, err.reason.as_str()), (429, "TooManyRequests"));
    // Not a list: untouched.
    api.create(&PostParams::default(), &cm("a"))
        .await
        .expect("create is not throttled");
    assert_eq!(env.faults().stats().injected("throttle"), 2);
}

#[tokio::test]
async fn kube_rs_honours_the_injected_retry_after() {
    // The first list is throttled for 1 s; kube-rs' default client retries after the header.
    let env = env_with(
        FaultConfig::new().with_rule(
            FaultRule::error(429)
                .retry_after(Duration::from_secs(1))
                .verbs(["list"])
                .nth(1),
        ),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let started = Instant::now();
    api.list(&ListParams::default())
        .await
        .expect("retried after Retry-After");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited for Retry-After"
    );
    let stats = env.faults().stats();
    assert_eq!((stats.total(), stats.rules[0].matched), (1, 2));
}

#[tokio::test]
async fn conflict_internal_and_unavailable_errors_look_like_upstream() {
    let env = env_with(
        FaultConfig::new()
            .with_rule(
                FaultRule::error(409)
                    .verbs(["update"])
                    .resources(["configmaps"]),
            )
            .with_rule(
                FaultRule::error(500)
                    .verbs(["get"])
                    .resources(["configmaps"])
                    .nth(2),
            )
            .with_rule(
                FaultRule::error(503)
                    .verbs(["delete"])
                    .resources(["configmaps"])
                    .every(2),
            ),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(no_retry_client(&env).await, "default");
    let created = api
        .create(&PostParams::default(), &cm("x"))
        .await
        .expect("create");
    let err = api_error(api.replace("x", &PostParams::default(), &created).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on configmaps \"x\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let details = err.details.as_ref().expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("x", "configmaps")
    );

    api.get("x").await.expect("first get");
    let err = api_error(api.get("x").await);
    assert_eq!((err.code, err.reason.as_str()), (500, "InternalError"));
    assert_eq!(err.message, "Internal error occurred: injected fault");
    api.get("x").await.expect("third get: nth fires once");

    api.create(&PostParams::default(), &cm("y"))
        .await
        .expect("create y");
    api.delete("x", &DeleteParams::default())
        .await
        .expect("first delete");
    let err = api_error(api.delete("y", &DeleteParams::default()).await);
    assert_eq!((err.code, err.reason.as_str()), (503, "ServiceUnavailable"));
    api.delete("y", &DeleteParams::default())
        .await
        .expect("third delete");
    let stats = env.faults().stats();
    assert_eq!(
        (
            stats.by_action("error"),
            stats.injected("0"),
            stats.injected("1"),
            stats.injected("2")
        ),
        (3, 1, 1, 1)
    );
}

#[tokio::test]
async fn watch_is_closed_cleanly_after_n_events() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..5 {
        api.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await
            .expect("create");
    }
    env.faults()
        .set(FaultConfig::new().with_rule(FaultRule::close_watch_after_events(3)))
        .expect("set");
    let stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch");
    let events: Vec<WatchEvent<ConfigMap>> = tokio::time::timeout(WAIT, stream.try_collect())
        .await
        .expect("the stream ends")
        .expect("no stream error");
    assert_eq!(events.len(), 3, "{events:?}");
    assert!(events.iter().all(|e| matches!(e, WatchEvent::Added(_))));
    assert_eq!(env.faults().stats().by_action("close_watch"), 1);
    // Lists are untouched by a watch rule.
    assert_eq!(
        api.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        5
    );
    assert_eq!(env.faults().stats().rules[0].matched, 1);
}

#[tokio::test]
async fn watch_is_closed_after_a_time() {
    let env = env_with(
        FaultConfig::new().with_rule(FaultRule::close_watch_after(Duration::from_millis(300))),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let started = Instant::now();
    let stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch");
    let events: Vec<WatchEvent<ConfigMap>> = tokio::time::timeout(WAIT, stream.try_collect())
        .await
        .expect("the stream ends")
        .expect("no stream error");
    assert!(events.is_empty(), "{events:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(env.faults().stats().by_action("close_watch"), 1);
}

#[tokio::test]
async fn resuming_watch_gets_410_expired_and_fresh_watch_does_not() {
    let env = env_with(
        FaultConfig::new().with_rule(FaultRule::expire_watch_resume().resources(["configmaps"])),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let created = api
        .create(&PostParams::default(), &cm("r"))
        .await
        .expect("create");
    let rv = created.metadata.resource_version.expect("rv");
    let stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch starts (the error comes as an event)");
    let events: Vec<WatchEvent<ConfigMap>> = tokio::time::timeout(WAIT, stream.try_collect())
        .await
        .expect("the stream ends")
        .expect("no stream error");
    let [WatchEvent::Error(status)] = events.as_slice() else {
        panic!("one ERROR event expected, got {events:?}");
    };
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert!(
        status
            .message
            .starts_with(&format!("too old resource version: {rv} (")),
        "{}",
        status.message
    );
    // A watch from the current state is not a resume.
    let mut fresh = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    let first = tokio::time::timeout(WAIT, fresh.try_next())
        .await
        .expect("event in time")
        .expect("ok")
        .expect("open");
    assert!(matches!(first, WatchEvent::Added(_)), "{first:?}");
    let stats = env.faults().stats();
    assert_eq!(
        (stats.by_action("expire_watch"), stats.rules[0].matched),
        (1, 1)
    );
}

#[tokio::test]
async fn latency_delays_requests_by_at_least_the_injected_value() {
    let delay = Duration::from_millis(150);
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    env.faults().set(FaultConfig::latency(delay)).expect("set");
    let started = Instant::now();
    api.create(&PostParams::default(), &cm("slow"))
        .await
        .expect("create");
    assert!(started.elapsed() >= delay);
    let started = Instant::now();
    let mut stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    tokio::time::timeout(WAIT, stream.try_next())
        .await
        .expect("event in time")
        .expect("ok");
    assert!(started.elapsed() >= delay, "watches are delayed too");
    assert_eq!(env.faults().stats().by_action("latency"), 2);
    let (status, _, _) = get_raw(&env.client(), "/healthz").await;
    assert_eq!(status, 200);
    assert_eq!(
        env.faults().stats().by_action("latency"),
        2,
        "health is never faulted"
    );
}

#[tokio::test]
async fn a_slow_request_does_not_hold_up_others() {
    let env = env_with(
        FaultConfig::new()
            .with_rule(FaultRule::latency(Duration::from_secs(30)).namespaces(["slow"])),
    )
    .await;
    let slow_api: Api<ConfigMap> = Api::namespaced(env.client(), "slow");
    let slow = tokio::spawn(async move { slow_api.list(&ListParams::default()).await });
    // Wait until the slow request is being delayed.
    let deadline = Instant::now() + WAIT;
    while env.faults().stats().by_action("latency") == 0 {
        assert!(Instant::now() < deadline, "the slow request never arrived");
        tokio::task::yield_now().await;
    }
    let fast: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    fast.list(&ListParams::default()).await.expect("fast list");
    assert!(!slow.is_finished(), "the slow one is still asleep");
    slow.abort();
}

/// A raw request with a JSON body through the client: status and body.
async fn send_json(client: &Client, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.to_string().into_bytes())
        .expect("request")
        .map(kube::client::Body::from);
    let response = client.send(request).await.expect("send");
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_request_past_its_timeout_gets_a_504_and_its_work_goes_on() {
    let delay = Duration::from_millis(1500);
    let env =
        env_with(FaultConfig::new().with_rule(FaultRule::latency(delay).namespaces(["slow"])))
            .await;
    let client = no_retry_client(&env).await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "slow"}})).expect("namespace"),
        )
        .await
        .expect("namespace");
    // A read that asked for 200ms is answered with upstream's 504 when they are up.
    let started = Instant::now();
    let (status, _, body) =
        get_raw(&client, "/api/v1/namespaces/slow/configmaps?timeout=200ms").await;
    assert_eq!(status, 504);
    assert!(started.elapsed() < delay, "answered at the deadline");
    let body: Value = serde_json::from_slice(&body).expect("status");
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Timeout: request did not complete within the allotted timeout",
               "reason": "Timeout", "details": {}, "code": 504})
    );
    // A write past its deadline is carried out all the same, as upstream's handler goes on.
    let (status, body) = send_json(
        &client,
        "POST",
        "/api/v1/namespaces/slow/configmaps?timeout=200ms",
        &json!({"metadata": {"name": "late"}, "data": {"k": "v"}}),
    )
    .await;
    assert_eq!(status, 504, "{body}");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "slow");
    let deadline = Instant::now() + WAIT;
    while api.get_opt("late").await.expect("get").is_none() {
        assert!(Instant::now() < deadline, "the late write never landed");
    }
    // Without a timeout the server's own (60 s) leaves room for the delay; watches have none.
    let (status, _, _) = get_raw(&client, "/api/v1/namespaces/slow/configmaps").await;
    assert_eq!(status, 200);
    let (status, _, _) = get_raw(
        &client,
        "/api/v1/namespaces/slow/configmaps?watch=true&timeout=200ms&timeoutSeconds=2",
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn matching_by_verb_resource_and_namespace_leaves_the_rest_untouched() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "team"}})).expect("ns"),
        )
        .await
        .expect("namespace");
    let team: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let default: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "team");
    for api in [&team, &default] {
        api.create(&PostParams::default(), &cm("one"))
            .await
            .expect("create");
        api.create(&PostParams::default(), &cm("two"))
            .await
            .expect("create");
    }
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "s"}})).expect("secret"),
        )
        .await
        .expect("secret");
    env.faults()
        .set(
            FaultConfig::new().with_rule(
                FaultRule::error(500)
                    .verbs(["delete"])
                    .resources(["configmaps"])
                    .namespaces(["team"]),
            ),
        )
        .expect("set");
    let err = api_error(team.delete("one", &DeleteParams::default()).await);
    assert_eq!(err.code, 500);
    team.get("one").await.expect("get in team: other verb");
    default
        .delete("one", &DeleteParams::default())
        .await
        .expect("delete in default: other namespace");
    secrets
        .delete("s", &DeleteParams::default())
        .await
        .expect("delete a secret: other resource");
    // The resource with its group matches too; another group does not.
    env.faults()
        .set(
            FaultConfig::new()
                .with_rule(FaultRule::error(500).resources(["configmaps.example.com"]))
                .with_rule(FaultRule::error(503).resources(["deployments.apps"])),
        )
        .expect("set");
    team.get("one")
        .await
        .expect("configmaps are in the core group");
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(no_retry_client(&env).await, "team");
    assert_eq!(
        api_error(deployments.list(&ListParams::default()).await).code,
        503
    );
    let stats = env.faults().stats();
    assert_eq!((stats.rules[0].matched, stats.rules[1].matched), (0, 1));
}

#[tokio::test]
async fn faults_change_at_run_time_and_bad_ones_are_refused() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(no_retry_client(&env).await, "default");
    api.list(&ListParams::default())
        .await
        .expect("no faults yet");
    let faults = env.faults();
    faults
        .set(FaultConfig::new().with_rule(FaultRule::error(503)))
        .expect("set");
    assert_eq!(api_error(api.list(&ListParams::default()).await).code, 503);
    let err = faults
        .set(FaultConfig::new().with_rule(FaultRule::error(418)))
        .expect_err("refused");
    assert_eq!(
        err.to_string(),
        "rules[0].error.code: must be one of 409, 429, 500, 503, got 418"
    );
    assert_eq!(
        api_error(api.list(&ListParams::default()).await).code,
        503,
        "a refused configuration leaves the active one"
    );
    faults.clear();
    api.list(&ListParams::default()).await.expect("cleared");
    assert_eq!(faults.stats().total(), 0);
    assert!(faults.config().is_empty());
}

#[tokio::test]
async fn a_seed_gives_the_same_faults_for_the_same_requests() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(no_retry_client(&env).await, "default");
    api.create(&PostParams::default(), &cm("p"))
        .await
        .expect("create");
    let config = FaultConfig::new()
        .with_seed(7)
        .with_rule(FaultRule::error(500).verbs(["get"]).probability(0.5));
    let mut runs = Vec::new();
    for _ in 0..2 {
        env.faults().set(config.clone()).expect("set");
        let mut outcomes = Vec::new();
        for _ in 0..24 {
            outcomes.push(api.get("p").await.is_ok());
        }
        runs.push(outcomes);
    }
    assert_eq!(runs[0], runs[1]);
    let failures = runs[0].iter().filter(|ok| !**ok).count();
    assert!((3..=21).contains(&failures), "{failures} of 24 at p=0.5");
}

#[tokio::test]
async fn stats_and_metrics_count_what_was_injected() {
    let env = env_with(
        FaultConfig::new()
            .with_rule(
                FaultRule::latency(FaultLatency::uniform(
                    Duration::from_millis(1),
                    Duration::from_millis(3),
                ))
                .verbs(["list"])
                .named("slow-lists"),
            )
            .with_rule(
                FaultRule::error(429)
                    .verbs(["get"])
                    .every(2)
                    .named("throttle"),
            ),
    )
    .await;
    let client = no_retry_client(&env).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("m"))
        .await
        .expect("create");
    for _ in 0..3 {
        api.list(&ListParams::default()).await.expect("list");
    }
    for _ in 0..4 {
        let _ = api.get("m").await;
    }
    let stats = env.faults().stats();
    assert_eq!(stats.injected("slow-lists"), 3);
    assert_eq!(
        stats
            .rule("throttle")
            .map(|r| (r.matched, r.injected, r.code)),
        Some((4, 2, Some(429)))
    );
    let (status, headers, body) = get_raw(&client, "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/plain"))
    );
    let text = String::from_utf8(body).expect("utf-8");
    assert!(
        text.contains(
            "korral_apiserver_injected_faults_total{rule=\"slow-lists\",action=\"latency\",code=\"\"} 3\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "korral_apiserver_injected_faults_total{rule=\"throttle\",action=\"error\",code=\"429\"} 2\n"
        ),
        "{text}"
    );
    // Replacing the rules restarts stats; the metric keeps counting.
    env.faults()
        .set(FaultConfig::new().with_rule(FaultRule::error(429).verbs(["get"]).named("throttle")))
        .expect("set");
    let _ = api.get("m").await;
    assert_eq!(env.faults().stats().injected("throttle"), 1);
    let text = env.faults().metrics_text();
    assert!(
        text.contains(
            "korral_apiserver_injected_faults_total{rule=\"throttle\",action=\"error\",code=\"429\"} 3\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("korral_apiserver_fault_matched_requests_total{rule=\"throttle\"} 5\n"),
        "{text}"
    );
}

#[tokio::test]
async fn health_version_and_metrics_are_never_faulted() {
    let env = env_with(FaultConfig::new().with_rule(FaultRule::error(503))).await;
    let client = no_retry_client(&env).await;
    for path in ["/healthz", "/readyz", "/livez", "/version", "/metrics"] {
        let (status, _, _) = get_raw(&client, path).await;
        assert_eq!(status, 200, "{path}");
    }
    let (status, _, _) = get_raw(&client, "/api").await;
    assert_eq!(status, 503, "a rule matching everything covers discovery");
    assert_eq!(env.faults().stats().total(), 1);
}

#[tokio::test]
async fn a_bad_server_config_is_refused_at_start() {
    let config = korral_apiserver::ServerConfig {
        faults: FaultConfig::new().with_rule(FaultRule::error(500).nth(0)),
        ..korral_apiserver::ServerConfig::in_memory()
    };
    let err = match korral_apiserver::ApiServer::start(config).await {
        Ok(_) => panic!("started with a bad fault configuration"),
        Err(e) => e,
    };
    assert_eq!(
        err.to_string(),
        "fault configuration: rules[0].nth: must be a positive integer, got 0"
    );
}

#[tokio::test]
async fn kube_runtime_watcher_gets_every_object_through_closed_and_expired_watches() {
    use kube::runtime::{WatchStreamExt, watcher};
    let env = env_with(
        FaultConfig::new()
            .with_rule(
                FaultRule::expire_watch_resume()
                    .resources(["configmaps"])
                    .nth(1),
            )
            .with_rule(
                FaultRule::close_watch_after_events(2)
                    .resources(["configmaps"])
                    .named("close"),
            ),
    )
    .await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut objects = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    let follower = tokio::spawn(async move {
        while let Some(item) = objects.next().await {
            let item = item
                .map(|cm| cm.metadata.name.unwrap_or_default())
                .map_err(|e| e.to_string());
            if tx.send(item).is_err() {
                return;
            }
        }
    });
    let next = async |rx: &mut tokio::sync::mpsc::UnboundedReceiver<Result<String, String>>| {
        tokio::time::timeout(WAIT, rx.recv())
            .await
            .expect("watcher item in time")
            .expect("watcher running")
    };
    // The first watch resumes from the list's resourceVersion and is expired: the watcher
    // reports it, relists and watches again.
    let error = next(&mut rx).await.expect_err("the 410 first");
    assert!(error.contains("too old resource version"), "{error}");
    let deadline = Instant::now() + WAIT;
    while env.faults().stats().rule("close").map(|r| r.matched) < Some(2) {
        assert!(Instant::now() < deadline, "no second watch");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Every object arrives although each watch ends after two events.
    for i in 0..6 {
        let name = format!("w{i}");
        api.create(&PostParams::default(), &cm(&name))
            .await
            .expect("create");
        assert_eq!(next(&mut rx).await, Ok(name));
    }
    follower.abort();
    let stats = env.faults().stats();
    assert_eq!(stats.by_action("expire_watch"), 1, "{stats:?}");
    assert!(stats.by_action("close_watch") >= 2, "{stats:?}");
}
