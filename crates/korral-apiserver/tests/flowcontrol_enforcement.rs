//! API priority and fairness enforced: requests classified by FlowSchema, limited by their
//! PriorityLevelConfiguration (`Reject` and `Queue`), refused with upstream's 429, marked with
//! the matched objects' uids; exempt requests never limited.
//!
//! A seat is held by a real request: a create whose head was sent but not its body (the
//! handler waits for the body while holding the seat). The tests wait for the server's state
//! by polling `/metrics` (as the admin, who is exempt), never by sleeping.

mod raw_http;

use std::time::Duration;

use korral_apiserver::{ApiServer, ServerConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use raw_http::Reply;

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const FS_HEADER: &str = "x-kubernetes-pf-flowschema-uid";
const PL_HEADER: &str = "x-kubernetes-pf-prioritylevel-uid";

/// A plain-HTTP server (a request without a token is the admin, in `system:masters`) whose
/// concurrency limit is 2 (every limited level gets a nominal limit of 1 or more).
async fn server(wait: Duration) -> ApiServer {
    ApiServer::start(ServerConfig {
        tls: false,
        max_requests_inflight: 1,
        max_mutating_requests_inflight: 1,
        flow_control_request_wait_limit: wait,
        ..ServerConfig::in_memory()
    })
    .await
    .expect("server")
}

/// A plain-HTTP server without priority and fairness.
async fn server_without_apf() -> ApiServer {
    ApiServer::start(ServerConfig {
        tls: false,
        enable_priority_and_fairness: false,
        ..ServerConfig::in_memory()
    })
    .await
    .expect("server")
}

fn request(method: &str, target: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let mut out =
        format!("{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{headers}")
            .into_bytes();
    if method != "GET" {
        out.extend_from_slice(
            format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            )
            .as_bytes(),
        );
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

/// Reads a whole reply from `stream`.
async fn read_reply(stream: TcpStream) -> Reply {
    raw_http::read_reply(stream, Duration::from_secs(30)).await
}

async fn exchange(server: &ApiServer, raw: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    let _ = stream.write_all(raw).await;
    read_reply(stream).await
}

/// A request as `who` (impersonation headers; empty: the admin).
async fn send(server: &ApiServer, who: &str, method: &str, target: &str, body: &Value) -> Reply {
    let body = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    exchange(server, &request(method, target, who, &body)).await
}

/// A create by `who` whose body is not sent yet: it holds its seat until [`release`].
async fn stalled(server: &ApiServer, who: &str) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    let head = format!(
        "POST {CONFIGMAPS} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{who}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream
}

/// Sends the held request's body and reads its reply.
async fn release(mut held: TcpStream) -> Reply {
    held.write_all(b"{}").await.expect("finish");
    read_reply(held).await
}

/// A series' value on `/metrics` (0 when absent).
async fn metric(server: &ApiServer, series: &str) -> i64 {
    let r = send(server, "", "GET", "/metrics", &Value::Null).await;
    assert_eq!(r.code, 200);
    String::from_utf8_lossy(&r.body)
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0)
}

/// Polls until `series` reads `value`.
async fn until_metric(server: &ApiServer, series: &str, value: i64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let now = metric(server, series).await;
        if now == value {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{series} is {now}, not {value}, after 20s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn executing(schema: &str, level: &str) -> String {
    format!(
        "apiserver_flowcontrol_current_executing_requests{{flow_schema=\"{schema}\",priority_level=\"{level}\"}} "
    )
}

fn in_queue(schema: &str, level: &str) -> String {
    format!(
        "apiserver_flowcontrol_current_inqueue_requests{{flow_schema=\"{schema}\",priority_level=\"{level}\"}} "
    )
}

/// Creates `object` at `collection` as the admin; returns its uid.
async fn create(server: &ApiServer, collection: &str, object: Value) -> String {
    let r = send(server, "", "POST", collection, &object).await;
    assert_eq!(r.code, 201, "{}", r.json());
    r.json()["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The uid of a stored flow control object.
async fn uid_of(server: &ApiServer, collection: &str, name: &str) -> String {
    let r = send(
        server,
        "",
        "GET",
        &format!("{collection}/{name}"),
        &Value::Null,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.json());
    r.json()["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A limited level with `limitResponse` that never borrows seats: it has exactly its
/// nominal limit (on an idle server a level that may borrow gets seats other levels lend).
fn level(name: &str, limit_response: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": name},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "borrowingLimitPercent": 0, "limitResponse": limit_response}},
    })
}

/// A FlowSchema sending `user`'s ConfigMap requests (any verb, any namespace) to `level`.
fn schema_for_user(name: &str, user: &str, level: &str) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name},
        "spec": {
            "matchingPrecedence": 500,
            "priorityLevelConfiguration": {"name": level},
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{
                "subjects": [{"kind": "User", "user": {"name": user}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"], "namespaces": ["*"]}],
            }],
        },
    })
}

/// Polls until `who`'s list of ConfigMaps is classified by the FlowSchema of uid `uid` (the
/// server follows flow control objects as they change).
async fn until_classified(server: &ApiServer, who: &str, uid: &str) -> Reply {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = send(server, who, "GET", CONFIGMAPS, &Value::Null).await;
        if r.header(FS_HEADER) == Some(uid) {
            return r;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not classified by {uid} within 20s: {}",
            r.head
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Sends a list as `who` that is expected to wait in a queue: returns once the level's flow
/// has `waiting` requests queued, with the task that reads its reply.
async fn queue_one(
    server: &ApiServer,
    who: &'static str,
    schema: &str,
    level: &str,
    waiting: i64,
) -> tokio::task::JoinHandle<Reply> {
    let addr = server.addr();
    let task = tokio::spawn(async move {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        let _ = stream
            .write_all(&request("GET", CONFIGMAPS, who, b""))
            .await;
        read_reply(stream).await
    });
    until_metric(server, &in_queue(schema, level), waiting).await;
    task
}

const ALICE: &str = "Impersonate-User: alice\r\n";
const BOB: &str = "Impersonate-User: bob\r\n";
const ROOT: &str = "Impersonate-User: root\r\nImpersonate-Group: system:masters\r\n";

/// A `Reject` level of one seat ("tiny") for alice's ConfigMap requests; returns the
/// FlowSchema's and the level's uids.
async fn tiny_for_alice(server: &ApiServer) -> (String, String) {
    let level_uid = create(server, LEVELS, level("tiny", json!({"type": "Reject"}))).await;
    let schema_uid = create(
        server,
        FLOW_SCHEMAS,
        schema_for_user("alice-tiny", "alice", "tiny"),
    )
    .await;
    let r = until_classified(server, ALICE, &schema_uid).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.header(PL_HEADER), Some(level_uid.as_str()));
    // ceil(2 × 1 / (245 + 1)): one seat.
    let limit = metric(
        server,
        "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"tiny\"} ",
    )
    .await;
    assert_eq!(limit, 1);
    (schema_uid, level_uid)
}

#[tokio::test]
async fn a_full_reject_level_answers_429_with_retry_after_and_other_users_are_served() {
    let server = server(Duration::from_secs(15)).await;
    let (schema_uid, level_uid) = tiny_for_alice(&server).await;
    let held = stalled(&server, ALICE).await;
    until_metric(&server, &executing("alice-tiny", "tiny"), 1).await;

    let r = send(&server, ALICE, "GET", CONFIGMAPS, &Value::Null).await;
    assert_eq!(r.code, 429, "{}", r.head);
    let status = r.json();
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(
        status["message"],
        "Too many requests, please try again later."
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(
        r.header(FS_HEADER),
        Some(schema_uid.as_str()),
        "rejected requests are marked too"
    );
    assert_eq!(r.header(PL_HEADER), Some(level_uid.as_str()));
    assert_eq!(
        metric(
            &server,
            "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"alice-tiny\",priority_level=\"tiny\",reason=\"concurrency-limit\"} "
        )
        .await,
        1
    );

    // Bob's requests go to global-default, unaffected.
    let global_default = uid_of(&server, FLOW_SCHEMAS, "global-default").await;
    let global_level = uid_of(&server, LEVELS, "global-default").await;
    let r = send(&server, BOB, "GET", CONFIGMAPS, &Value::Null).await;
    assert_eq!(r.code, 200, "{}", r.head);
    assert_eq!(r.header(FS_HEADER), Some(global_default.as_str()));
    assert_eq!(r.header(PL_HEADER), Some(global_level.as_str()));
    let r = send(
        &server,
        BOB,
        "POST",
        CONFIGMAPS,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bobs"}}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.head);

    // Once the held request ends, alice is served again.
    let done = release(held).await;
    assert_ne!(done.code, 429);
    assert_eq!(done.header(FS_HEADER), Some(schema_uid.as_str()));
    until_metric(&server, &executing("alice-tiny", "tiny"), 0).await;
    let r = send(&server, ALICE, "GET", CONFIGMAPS, &Value::Null).await;
    assert_eq!(r.code, 200, "{}", r.head);
}

#[tokio::test]
async fn exempt_requests_are_never_limited() {
    let server = server(Duration::from_secs(15)).await;
    // Everyone's ConfigMap requests (but those of system:masters, matched first by the
    // mandatory exempt FlowSchema) share one seat.
    create(&server, LEVELS, level("tiny", json!({"type": "Reject"}))).await;
    let mut everyone = schema_for_user("everyone-tiny", "*", "tiny");
    everyone["spec"]["matchingPrecedence"] = json!(2);
    let schema_uid = create(&server, FLOW_SCHEMAS, everyone).await;
    until_classified(&server, ALICE, &schema_uid).await;
    let held = stalled(&server, ALICE).await;
    until_metric(&server, &executing("everyone-tiny", "tiny"), 1).await;
    assert_eq!(
        send(&server, BOB, "GET", CONFIGMAPS, &Value::Null)
            .await
            .code,
        429
    );

    let exempt = uid_of(&server, FLOW_SCHEMAS, "exempt").await;
    let exempt_level = uid_of(&server, LEVELS, "exempt").await;
    // The admin and an impersonated member of system:masters, many at once.
    let requests = (0..16).map(|i| {
        let server = &server;
        async move {
            let who = if i % 2 == 0 { "" } else { ROOT };
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("m{i}")}});
            let created = send(server, who, "POST", CONFIGMAPS, &cm).await;
            let listed = send(server, who, "GET", CONFIGMAPS, &Value::Null).await;
            (created, listed)
        }
    });
    for (created, listed) in futures::future::join_all(requests).await {
        assert_eq!(created.code, 201, "{}", created.head);
        assert_eq!(listed.code, 200, "{}", listed.head);
        for r in [&created, &listed] {
            assert_eq!(r.header(FS_HEADER), Some(exempt.as_str()));
            assert_eq!(r.header(PL_HEADER), Some(exempt_level.as_str()));
        }
    }
    release(held).await;
}

#[tokio::test]
async fn a_queue_level_queues_then_serves_and_refuses_an_over_long_queue() {
    let server = server(Duration::from_secs(15)).await;
    let queuing =
        json!({"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}});
    create(&server, LEVELS, level("narrow", queuing)).await;
    let schema_uid = create(
        &server,
        FLOW_SCHEMAS,
        schema_for_user("alice-narrow", "alice", "narrow"),
    )
    .await;
    until_classified(&server, ALICE, &schema_uid).await;
    let held = stalled(&server, ALICE).await;
    until_metric(&server, &executing("alice-narrow", "narrow"), 1).await;

    // The next request waits in the queue...
    let queued = queue_one(&server, ALICE, "alice-narrow", "narrow", 1).await;
    // ...and with the queue at its length limit, one more is refused at once.
    let r = send(&server, ALICE, "GET", CONFIGMAPS, &Value::Null).await;
    assert_eq!(r.code, 429, "{}", r.head);
    assert_eq!(r.json()["reason"], "TooManyRequests");
    assert!(r.header("retry-after").is_some());
    assert_eq!(
        metric(
            &server,
            "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"alice-narrow\",priority_level=\"narrow\",reason=\"queue-full\"} "
        )
        .await,
        1
    );
    assert!(!queued.is_finished(), "still queued");

    // The held request ends: the queued one gets its seat and is served.
    release(held).await;
    let served = queued.await.expect("queued request");
    assert_eq!(served.code, 200, "{}", served.head);
    assert_eq!(served.header(FS_HEADER), Some(schema_uid.as_str()));
    until_metric(&server, &in_queue("alice-narrow", "narrow"), 0).await;
}

/// A queuing level of one seat ("narrow") for alice's requests, its seat held by a stalled
/// request of hers (returned, to be released).
async fn narrow_level_held(server: &ApiServer) -> TcpStream {
    let queuing =
        json!({"type": "Queue", "queuing": {"queues": 4, "handSize": 2, "queueLengthLimit": 10}});
    create(server, LEVELS, level("narrow", queuing)).await;
    let schema_uid = create(
        server,
        FLOW_SCHEMAS,
        schema_for_user("alice-narrow", "alice", "narrow"),
    )
    .await;
    until_classified(server, ALICE, &schema_uid).await;
    let held = stalled(server, ALICE).await;
    until_metric(server, &executing("alice-narrow", "narrow"), 1).await;
    held
}

#[tokio::test]
async fn a_request_queued_past_the_wait_limit_gets_429() {
    let server = server(Duration::from_millis(300)).await;
    let held = narrow_level_held(&server).await;
    let started = std::time::Instant::now();
    let r = send(&server, ALICE, "GET", CONFIGMAPS, &Value::Null).await;
    assert_eq!(r.code, 429, "{}", r.head);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "it waited first"
    );
    assert_eq!(
        r.json()["message"],
        "Too many requests, please try again later."
    );
    assert_eq!(
        metric(
            &server,
            "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"alice-narrow\",priority_level=\"narrow\",reason=\"time-out\"} "
        )
        .await,
        1
    );
    assert_eq!(
        metric(&server, &in_queue("alice-narrow", "narrow")).await,
        0
    );
    release(held).await;
}

/// A request's `?timeout=` shortens its queue wait to a quarter of it, as upstream's; a
/// malformed one is a 400 before anything runs.
#[tokio::test]
async fn a_short_request_timeout_shortens_the_queue_wait() {
    // The configured wait is a minute: only the request's own timeout ends it early.
    let server = server(Duration::from_secs(60)).await;
    let held = narrow_level_held(&server).await;
    let started = std::time::Instant::now();
    let target = format!("{CONFIGMAPS}?timeout=2s");
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        send(&server, ALICE, "GET", &target, &Value::Null),
    )
    .await
    .expect("answered within the request's own timeout, not the configured minute");
    assert_eq!(r.code, 429, "{}", r.head);
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "it waited a quarter of 2s first"
    );
    let bad = format!("{CONFIGMAPS}?timeout=soon");
    let r = send(&server, ALICE, "GET", &bad, &Value::Null).await;
    assert_eq!(r.code, 400, "{}", r.head);
    assert_eq!(r.json()["reason"], "BadRequest");
    assert_eq!(
        r.json()["message"],
        "invalid timeout specified in the request URL - time: invalid duration \"soon\""
    );
    release(held).await;
}

#[tokio::test]
async fn a_watch_holds_its_seat_only_while_it_starts() {
    let server = server(Duration::from_secs(15)).await;
    tiny_for_alice(&server).await;
    let mut watch = TcpStream::connect(server.addr()).await.expect("connect");
    watch
        .write_all(&request(
            "GET",
            &format!("{CONFIGMAPS}?watch=true"),
            ALICE,
            b"",
        ))
        .await
        .expect("watch");
    let mut status = [0u8; 12];
    watch.read_exact(&mut status).await.expect("watch reply");
    assert_eq!(&status, b"HTTP/1.1 200");
    until_metric(&server, &executing("alice-tiny", "tiny"), 0).await;
    // With the watch streaming, alice's one seat is free.
    let r = send(&server, ALICE, "GET", CONFIGMAPS, &Value::Null).await;
    assert_eq!(r.code, 200, "{}", r.head);
    drop(watch);
}

#[tokio::test]
async fn classification_follows_changes_to_flow_schemas() {
    let server = server(Duration::from_secs(15)).await;
    let (schema_uid, _) = tiny_for_alice(&server).await;
    let global_default = uid_of(&server, FLOW_SCHEMAS, "global-default").await;
    // Moved after global-default (9900), the schema no longer matches first.
    let path = format!("{FLOW_SCHEMAS}/alice-tiny");
    let mut current = send(&server, "", "GET", &path, &Value::Null).await.json();
    current["spec"]["matchingPrecedence"] = json!(9950);
    let r = send(&server, "", "PUT", &path, &current).await;
    assert_eq!(r.code, 200, "{}", r.json());
    until_classified(&server, ALICE, &global_default).await;
    // Back in front, then deleted.
    let mut current = send(&server, "", "GET", &path, &Value::Null).await.json();
    current["spec"]["matchingPrecedence"] = json!(100);
    assert_eq!(send(&server, "", "PUT", &path, &current).await.code, 200);
    until_classified(&server, ALICE, &schema_uid).await;
    assert_eq!(
        send(&server, "", "DELETE", &path, &Value::Null).await.code,
        200
    );
    until_classified(&server, ALICE, &global_default).await;
    // A schema whose level is missing (dangling) is ignored.
    create(
        &server,
        FLOW_SCHEMAS,
        schema_for_user("alice-dangling", "alice", "no-such-level"),
    )
    .await;
    let r = until_classified(&server, ALICE, &global_default).await;
    assert_eq!(r.code, 200);
}

#[tokio::test]
async fn without_priority_and_fairness_no_request_is_classified() {
    let server = server_without_apf().await;
    let r = send(&server, ALICE, "GET", CONFIGMAPS, &Value::Null).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.header(FS_HEADER), None);
    assert_eq!(r.header(PL_HEADER), None);
    let metrics = send(&server, "", "GET", "/metrics", &Value::Null).await;
    assert!(!String::from_utf8_lossy(&metrics.body).contains("apiserver_flowcontrol_"));
}

#[tokio::test]
async fn flows_by_user_are_queued_apart() {
    let server = server(Duration::from_secs(15)).await;
    // One seat, 64 queues of one request, a hand of one queue per user: alice's and bob's
    // flows hash to different queues (the hash is deterministic: SHA-256 of the schema's name
    // and the user's).
    let queuing =
        json!({"type": "Queue", "queuing": {"queues": 64, "handSize": 1, "queueLengthLimit": 1}});
    create(&server, LEVELS, level("shared", queuing)).await;
    let mut everyone = schema_for_user("by-user", "*", "shared");
    everyone["spec"]["matchingPrecedence"] = json!(2);
    let schema_uid = create(&server, FLOW_SCHEMAS, everyone).await;
    until_classified(&server, ALICE, &schema_uid).await;
    let held = stalled(&server, ALICE).await;
    until_metric(&server, &executing("by-user", "shared"), 1).await;

    let alices = queue_one(&server, ALICE, "by-user", "shared", 1).await;
    // Alice's queue is full: her next request is refused...
    let r = send(&server, ALICE, "GET", CONFIGMAPS, &Value::Null).await;
    assert_eq!(r.code, 429, "{}", r.head);
    // ...while bob's flow has a queue of its own.
    let bobs = queue_one(&server, BOB, "by-user", "shared", 2).await;
    release(held).await;
    for (who, task) in [("alice", alices), ("bob", bobs)] {
        let r = task.await.expect("queued request");
        assert_eq!(r.code, 200, "{who}: {}", r.head);
    }
    assert_eq!(
        metric(
            &server,
            "apiserver_flowcontrol_rejected_requests_total{flow_schema=\"by-user\",priority_level=\"shared\",reason=\"queue-full\"} "
        )
        .await,
        1
    );
}

/// A malformed `?timeout=` is refused the same way without priority and fairness (the
/// deadline is read before any filter that could wait), and a well-formed one is served.
#[tokio::test]
async fn a_malformed_timeout_is_refused_without_priority_and_fairness() {
    let server = server_without_apf().await;
    let r = send(
        &server,
        "",
        "GET",
        &format!("{CONFIGMAPS}?timeout=1x"),
        &Value::Null,
    )
    .await;
    assert_eq!(r.code, 400, "{}", r.head);
    assert_eq!(
        r.json()["message"],
        "invalid timeout specified in the request URL - time: unknown unit \"x\" in duration \"1x\""
    );
    let r = send(
        &server,
        "",
        "GET",
        &format!("{CONFIGMAPS}?timeout=5s"),
        &Value::Null,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.head);
    // A watch's timeout is its own (`timeoutSeconds` aside): a malformed one is not read
    // as a request deadline.
    let r = send(
        &server,
        "",
        "GET",
        &format!("{CONFIGMAPS}?timeout=soon&watch=true&timeoutSeconds=1"),
        &Value::Null,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.head);
}

/// A level that may borrow gets the seats idle levels lend once its demand (executing and
/// queued requests) is seen by the adjustment, as upstream's every 10 s (here every 50 ms);
/// bounded by its borrowing limit.
#[tokio::test]
async fn a_busy_level_borrows_seats_idle_levels_lend() {
    let server = ApiServer::start(ServerConfig {
        tls: false,
        max_requests_inflight: 1,
        max_mutating_requests_inflight: 1,
        flow_control_borrowing_period: Duration::from_millis(50),
        ..ServerConfig::in_memory()
    })
    .await
    .expect("server");
    // One seat of its own (ceil(2 × 1 / 246)), may borrow 200% of it: at most 3.
    let greedy = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "greedy"},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": 1, "lendablePercent": 0, "borrowingLimitPercent": 200,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 10}},
        }},
    });
    create(&server, LEVELS, greedy).await;
    let schema_uid = create(
        &server,
        FLOW_SCHEMAS,
        schema_for_user("alice-greedy", "alice", "greedy"),
    )
    .await;
    until_classified(&server, ALICE, &schema_uid).await;
    let limits = |name: &str| format!("apiserver_flowcontrol_{name}{{priority_level=\"greedy\"}} ");
    assert_eq!(metric(&server, &limits("nominal_limit_seats")).await, 1);
    assert_eq!(metric(&server, &limits("lower_limit_seats")).await, 1);
    assert_eq!(metric(&server, &limits("upper_limit_seats")).await, 3);
    // Five requests that hold their seats once they get one.
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(stalled(&server, ALICE).await);
    }
    // Its demand (5) exceeds what it may ever use: it borrows up to its upper limit, and
    // three of the five execute while two wait.
    until_metric(&server, &limits("current_limit_seats"), 3).await;
    until_metric(&server, &executing("alice-greedy", "greedy"), 3).await;
    assert_eq!(
        metric(&server, &in_queue("alice-greedy", "greedy")).await,
        2
    );
    assert!(metric(&server, &limits("demand_seats_high_watermark")).await >= 3);
    for stream in held {
        assert_ne!(release(stream).await.code, 429);
    }
    server.shutdown().await;
}
