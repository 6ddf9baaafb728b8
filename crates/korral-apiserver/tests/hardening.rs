//! Hostile and malformed requests: every client mistake is a 4xx `Status`.

mod raw_http;

use std::time::Duration;

use korral_apiserver::{ApiServer, ServerConfig};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use raw_http::Reply;

/// A plain-HTTP server on loopback (requests without a token are the admin there).
async fn plain_server() -> ApiServer {
    plain_server_with(ServerConfig::in_memory()).await
}

async fn plain_server_with(config: ServerConfig) -> ApiServer {
    ApiServer::start(ServerConfig {
        tls: false,
        ..config
    })
    .await
    .expect("server")
}

impl Reply {
    /// Asserts a `Status` with this code and reason; returns its message.
    fn status(&self, code: u16, reason: &str) -> String {
        assert_eq!(
            self.code,
            code,
            "{} {:?}",
            self.head,
            String::from_utf8_lossy(&self.body)
        );
        let status = self.json();
        assert_eq!(status["kind"], "Status", "{status}");
        assert_eq!(status["code"], code, "{status}");
        assert_eq!(status["reason"], reason, "{status}");
        status["message"].as_str().unwrap_or_default().to_string()
    }
}

/// Sends raw request bytes and reads the reply until the server closes the connection.
async fn exchange(server: &ApiServer, request: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    // The server may answer (and close) before it has read everything; ignore write errors.
    let _ = stream.write_all(request).await;
    raw_http::read_reply(stream, Duration::from_secs(20)).await
}

/// A request with `Connection: close` and an optional JSON-ish body.
fn request(
    method: &str,
    target: &str,
    extra_headers: &str,
    content_type: &str,
    body: &[u8],
) -> Vec<u8> {
    let mut out = format!(
        "{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{extra_headers}"
    )
    .into_bytes();
    if !body.is_empty() || method != "GET" {
        out.extend_from_slice(
            format!(
                "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
                body.len()
            )
            .as_bytes(),
        );
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

async fn get(server: &ApiServer, target: &str) -> Reply {
    exchange(server, &request("GET", target, "", "", b"")).await
}

#[tokio::test]
async fn oversized_uris_and_heads_are_answered_with_a_status() {
    let server = plain_server().await;
    // A ~70 KB label selector: beyond what the URI type holds, hyper refuses it; the reply is
    // still a Status.
    let selector = vec!["x"; 35_000].join(",");
    let r = get(
        &server,
        &format!("/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20({selector})"),
    )
    .await;
    let message = r.status(414, "RequestURITooLong");
    assert!(message.contains("65534 bytes"), "{message}");
    // A 30 KB one is served.
    let selector = vec!["x"; 15_000].join(",");
    let r = get(
        &server,
        &format!("/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20({selector})"),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.head);
    assert_eq!(r.json()["kind"], "ConfigMapList");
    // Header fields over 1 MiB: our 431 (hyper's buffer is a little larger).
    let header = format!("X-Big: {}\r\n", "a".repeat(1024 * 1024 + 1000));
    let r = exchange(
        &server,
        &request("GET", "/api/v1/namespaces", &header, "", b""),
    )
    .await;
    let message = r.status(431, "RequestHeaderFieldsTooLarge");
    assert!(message.contains("1048576 bytes"), "{message}");
    // Far over hyper's buffer, and too many fields: hyper's refusal, still a Status.
    let header = format!("X-Big: {}\r\n", "a".repeat(2 * 1024 * 1024));
    let r = exchange(
        &server,
        &request("GET", "/api/v1/namespaces", &header, "", b""),
    )
    .await;
    r.status(431, "RequestHeaderFieldsTooLarge");
    let headers: String = (0..1100).map(|i| format!("X-H{i}: v\r\n")).collect();
    let r = exchange(
        &server,
        &request("GET", "/api/v1/namespaces", &headers, "", b""),
    )
    .await;
    r.status(431, "RequestHeaderFieldsTooLarge");
    // Up to 100 header fields (hyper's default limit, ours) are fine; more are 431.
    let headers: String = (0..120).map(|i| format!("X-H{i}: v\r\n")).collect();
    let r = exchange(
        &server,
        &request("GET", "/api/v1/namespaces", &headers, "", b""),
    )
    .await;
    r.status(431, "RequestHeaderFieldsTooLarge");
    let headers: String = (0..90).map(|i| format!("X-H{i}: v\r\n")).collect();
    let r = exchange(
        &server,
        &request("GET", "/api/v1/namespaces", &headers, "", b""),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.head);
    // A malformed request line: 400 with a Status.
    let r = exchange(&server, b"GET /api/v1 HTTP/1.1\r\nBad Header\r\n\r\n").await;
    r.status(400, "BadRequest");
    // The server still serves.
    assert_eq!(get(&server, "/api/v1/namespaces").await.code, 200);
}

#[tokio::test]
async fn smp_list_item_without_its_merge_key_is_a_400_naming_key_and_list() {
    let server = plain_server().await;
    let deployment = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    });
    let r = exchange(
        &server,
        &request(
            "POST",
            "/apis/apps/v1/namespaces/default/deployments",
            "",
            "application/json",
            deployment.to_string().as_bytes(),
        ),
    )
    .await;
    assert_eq!(r.code, 201, "{:?}", String::from_utf8_lossy(&r.body));
    let rv = r.json()["metadata"]["resourceVersion"].clone();
    let patch = br#"{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#;
    let r = exchange(
        &server,
        &request(
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/d",
            "",
            "application/strategic-merge-patch+json",
            patch,
        ),
    )
    .await;
    let message = r.status(400, "BadRequest");
    assert!(
        message.contains("spec.template.spec.containers")
            && message.contains("does not contain declared merge key: name"),
        "{message}"
    );
    // Nothing changed.
    let r = get(&server, "/apis/apps/v1/namespaces/default/deployments/d").await;
    assert_eq!(r.json()["metadata"]["resourceVersion"], rv);
    // An unknown directive: 400 as well (upstream: 500).
    let r = exchange(
        &server,
        &request(
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/d",
            "",
            "application/strategic-merge-patch+json",
            br#"{"spec":{"strategy":{"$patch":"bogus"}}}"#,
        ),
    )
    .await;
    r.status(400, "BadRequest");
}

/// Opens a connection and sends a request head promising a body it does not send yet: the
/// request is in flight (its handler waits for the body) until the stream is used again.
async fn stalled(server: &ApiServer, method: &str, target: &str) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr()).await.expect("connect");
    let head = format!(
        "{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream
}

/// Polls until a request answers `code`.
async fn until_code(server: &ApiServer, build: impl Fn() -> Vec<u8>, code: u16) -> Reply {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = exchange(server, &build()).await;
        if r.code == code {
            return r;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {code} within 10s, last {} {:?}",
            r.head,
            String::from_utf8_lossy(&r.body)
        );
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn requests_over_the_in_flight_limits_get_429_with_retry_after() {
    let server = plain_server_with(ServerConfig {
        max_requests_inflight: 1,
        max_mutating_requests_inflight: 1,
        // The max-in-flight filter, which priority and fairness replaces when on.
        enable_priority_and_fairness: false,
        ..ServerConfig::in_memory()
    })
    .await;
    // A user outside system:masters (the admin, which plain HTTP makes of a request without a
    // token, is never refused; see masters_are_never_refused_by_the_in_flight_limits).
    const ALICE: &str = "Impersonate-User: alice\r\n";
    let list = || {
        request(
            "GET",
            "/api/v1/namespaces/default/configmaps",
            ALICE,
            "",
            b"",
        )
    };
    let create = |name: &str| {
        let body =
            format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}}}"#);
        request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            ALICE,
            "application/json",
            body.as_bytes(),
        )
    };
    // One read-only request held in flight: the next one is refused with upstream's Status.
    let mut held_read = stalled(&server, "GET", "/api/v1/namespaces/default/configmaps").await;
    let r = until_code(&server, list, 429).await;
    let message = r.status(429, "TooManyRequests");
    assert_eq!(message, "Too many requests, please try again later.");
    assert!(r.head.contains("\r\nretry-after: 1"), "{}", r.head);
    assert_eq!(r.json()["details"]["retryAfterSeconds"], 1);
    // Mutating requests have their own budget; watches and probes are not counted.
    let r = exchange(&server, &create("a")).await;
    assert_eq!(r.code, 201, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(get(&server, "/readyz").await.code, 200);
    let mut watch = TcpStream::connect(server.addr()).await.expect("connect");
    watch
        .write_all(
            b"GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .await
        .expect("watch");
    let mut buf = [0u8; 12];
    watch.read_exact(&mut buf).await.expect("watch reply");
    assert_eq!(&buf, b"HTTP/1.1 200");
    // Held mutating request: the next write is refused.
    let mut held_write = stalled(&server, "POST", "/api/v1/namespaces/default/configmaps").await;
    let r = until_code(&server, || create("b"), 429).await;
    r.status(429, "TooManyRequests");
    // Once the held requests finish, their slots are free again.
    held_read.write_all(b"{}").await.expect("finish read");
    held_write.write_all(b"{}").await.expect("finish write");
    let mut sink = Vec::new();
    let _ = held_read.read_to_end(&mut sink).await;
    let _ = held_write.read_to_end(&mut sink).await;
    until_code(&server, list, 200).await;
    until_code(&server, || create("c"), 201).await;
    let r = get(&server, "/api/v1/namespaces/default/configmaps/b").await;
    assert_eq!(r.code, 404, "a refused write changes nothing");
}

/// Builds requests as one user: `headers` are its credentials or impersonation headers.
fn as_user(headers: &str) -> impl Fn(&str, &str, &[u8]) -> Vec<u8> + use<> {
    let headers = headers.to_string();
    move |method, target, body| {
        let content_type = if body.is_empty() {
            ""
        } else {
            "application/json"
        };
        request(method, target, &headers, content_type, body)
    }
}

#[tokio::test]
async fn masters_are_never_refused_by_the_in_flight_limits() {
    let server = plain_server_with(ServerConfig {
        max_requests_inflight: 1,
        max_mutating_requests_inflight: 1,
        // The max-in-flight filter, which priority and fairness replaces when on.
        enable_priority_and_fairness: false,
        ..ServerConfig::in_memory()
    })
    .await;
    let path = "/api/v1/namespaces/default/configmaps";
    let cm = |name: &str| {
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}}}"#)
    };
    // A ServiceAccount's token: an ordinary user, outside system:masters.
    let sa = br#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}"#;
    let r = exchange(
        &server,
        &request(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            "",
            "application/json",
            sa,
        ),
    )
    .await;
    assert_eq!(r.code, 201, "{:?}", String::from_utf8_lossy(&r.body));
    let r = exchange(
        &server,
        &request(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/robot/token",
            "",
            "application/json",
            br#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}"#,
        ),
    )
    .await;
    assert_eq!(r.code, 201, "{:?}", String::from_utf8_lossy(&r.body));
    let token = r.json()["status"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!token.is_empty(), "{}", r.json());
    let robot = as_user(&format!("Authorization: Bearer {token}\r\n"));
    let alice = as_user("Impersonate-User: alice\r\n");
    // The admin (a request without a token, on plain HTTP), and an impersonated member of
    // system:masters: upstream's filter looks at the user after impersonation.
    let admin = as_user("");
    let masters = as_user("Impersonate-User: root\r\nImpersonate-Group: system:masters\r\n");

    // Both budgets spent by held requests of an ordinary user.
    let mut held_read = stalled(&server, "GET", path).await;
    let r = until_code(&server, || robot("GET", path, b""), 429).await;
    assert_eq!(
        r.status(429, "TooManyRequests"),
        "Too many requests, please try again later."
    );
    assert!(r.head.contains("\r\nretry-after: 1"), "{}", r.head);
    let mut held_write = stalled(&server, "POST", path).await;
    let r = until_code(
        &server,
        || alice("POST", path, cm("refused").as_bytes()),
        429,
    )
    .await;
    r.status(429, "TooManyRequests");
    // The ordinary users stay refused, reads and writes, while masters are answered.
    for (who, user) in [("robot", &robot), ("alice", &alice)] {
        let r = exchange(&server, &user("GET", path, b"")).await;
        assert_eq!(r.code, 429, "{who} read over the budget");
        let r = exchange(&server, &user("POST", path, cm(who).as_bytes())).await;
        assert_eq!(r.code, 429, "{who} write over the budget");
    }
    for (who, user) in [("admin", &admin), ("impersonated master", &masters)] {
        let r = exchange(&server, &user("GET", path, b"")).await;
        assert_eq!(r.code, 200, "{who}: {:?}", String::from_utf8_lossy(&r.body));
        let name = who.replace(' ', "-");
        let r = exchange(&server, &user("POST", path, cm(&name).as_bytes())).await;
        assert_eq!(r.code, 201, "{who}: {:?}", String::from_utf8_lossy(&r.body));
    }
    // Privileged requests served over the budget took no slot: still full for the others.
    let r = exchange(&server, &robot("GET", path, b"")).await;
    assert_eq!(r.code, 429);
    // Once the held requests end, ordinary users are served again.
    held_read.write_all(b"{}").await.expect("finish read");
    held_write.write_all(b"{}").await.expect("finish write");
    let mut sink = Vec::new();
    let _ = held_read.read_to_end(&mut sink).await;
    let _ = held_write.read_to_end(&mut sink).await;
    let r = until_code(&server, || robot("GET", path, b""), 200).await;
    let list = r.json();
    let names: Vec<&str> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["admin", "impersonated-master"],
        "refused writes changed nothing"
    );
}

#[tokio::test]
async fn watches_are_limited_per_client_and_freed_when_closed() {
    let server = plain_server_with(ServerConfig {
        max_watches_per_client: 2,
        ..ServerConfig::in_memory()
    })
    .await;
    let open = |auth: &'static str| {
        let server_addr = server.addr();
        async move {
            let mut s = TcpStream::connect(server_addr).await.expect("connect");
            let req = format!(
                "GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n{auth}\r\n"
            );
            s.write_all(req.as_bytes()).await.expect("watch");
            let mut buf = [0u8; 12];
            s.read_exact(&mut buf).await.expect("reply");
            (String::from_utf8_lossy(&buf).into_owned(), s)
        }
    };
    let (a, first) = open("").await;
    let (b, _second) = open("").await;
    assert_eq!((a.as_str(), b.as_str()), ("HTTP/1.1 200", "HTTP/1.1 200"));
    let watch = || {
        request(
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true",
            "",
            "",
            b"",
        )
    };
    let r = exchange(&server, &watch()).await;
    let message = r.status(429, "TooManyRequests");
    assert!(message.contains("Too many watches"), "{message}");
    assert!(r.head.contains("\r\nretry-after: 1"), "{}", r.head);
    // Another client (other credentials) has its own allowance.
    let (other, _third) = open("Impersonate-User: someone-else\r\n").await;
    assert_ne!(other, "HTTP/1.1 429");
    // Closing a watch frees its slot.
    drop(first);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _stream) = open("").await;
        if status == "HTTP/1.1 200" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "slot never freed");
        // The server notices the closed connection when it next writes: make it write.
        let body = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"poke-"}}"#;
        exchange(
            &server,
            &request(
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "",
                "application/json",
                body,
            ),
        )
        .await;
    }
}

#[tokio::test]
async fn slow_header_connections_are_closed() {
    let server = plain_server_with(ServerConfig {
        header_read_timeout: Duration::from_millis(300),
        ..ServerConfig::in_memory()
    })
    .await;
    let mut slow = TcpStream::connect(server.addr()).await.expect("connect");
    slow.write_all(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("partial head");
    // The server closes the connection on its own; the read ends well before the 20s bound.
    let started = tokio::time::Instant::now();
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), slow.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "connection still open after 20s");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Others are served meanwhile and after.
    assert_eq!(get(&server, "/api/v1/namespaces").await.code, 200);
}

#[tokio::test]
async fn plain_http_refuses_non_loopback_addresses() {
    let result = ApiServer::start(ServerConfig {
        tls: false,
        bind: std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        ..ServerConfig::in_memory()
    })
    .await;
    match result {
        Err(e @ korral_apiserver::StartError::PlainHttpNotLoopback { .. }) => {
            assert!(
                e.to_string()
                    .contains("refusing to serve plain HTTP on 0.0.0.0"),
                "{e}"
            );
        }
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => panic!("plain HTTP started on 0.0.0.0"),
    }
    // Loopback (v4 and v6) is fine.
    let v6 = ApiServer::start(ServerConfig {
        tls: false,
        bind: std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ..ServerConfig::in_memory()
    })
    .await;
    // Some sandboxes have no IPv6 loopback: only the address check matters here.
    assert!(!matches!(
        v6,
        Err(korral_apiserver::StartError::PlainHttpNotLoopback { .. })
    ));
}

#[cfg(unix)]
#[tokio::test]
async fn data_directory_and_secrets_are_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let root = tempfile::tempdir().expect("tempdir");
    let data = root.path().join("state/data");
    let kubeconfig = root.path().join("conf/kubeconfig");
    let server = ApiServer::start(ServerConfig {
        kubeconfig: Some(kubeconfig.clone()),
        ..ServerConfig::durable(&data)
    })
    .await
    .expect("server");
    let mode = |p: &std::path::Path| {
        std::fs::metadata(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .permissions()
            .mode()
            & 0o777
    };
    for dir in [data.clone(), data.join("pki"), root.path().join("conf")] {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    }
    for file in [
        data.join("token"),
        data.join("sa-signing.key"),
        data.join("pki/ca.key"),
        data.join("pki/apiserver.key"),
        kubeconfig.clone(),
    ] {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    server.shutdown().await;
    // An existing data directory readable by others is tightened on start.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let server = ApiServer::start(ServerConfig::durable(&data))
        .await
        .expect("restart");
    assert_eq!(mode(&data), 0o700);
    server.shutdown().await;
}

/// Object names that could escape a storage namespace if they ever reached a path.
const HOSTILE_NAMES: [&str; 7] = ["..", ".", "a/b", "../x", "a\u{0}b", "a%2Fb", "x/../../y"];

#[tokio::test]
async fn hostile_names_are_refused_for_every_kind() {
    let server = plain_server().await;
    // The Widget CRD (a namespaced custom resource).
    let crd = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ref.example.org"},
        "spec": {"group": "ref.example.org", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let r = exchange(
        &server,
        &request(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "",
            "application/json",
            crd.to_string().as_bytes(),
        ),
    )
    .await;
    assert_eq!(r.code, 201, "{:?}", String::from_utf8_lossy(&r.body));
    until_code(
        &server,
        || {
            request(
                "GET",
                "/apis/ref.example.org/v1/namespaces/default/widgets",
                "",
                "",
                b"",
            )
        },
        200,
    )
    .await;
    // (collection path, apiVersion, kind)
    let kinds = [
        ("/api/v1/namespaces/default/configmaps", "v1", "ConfigMap"),
        ("/api/v1/namespaces", "v1", "Namespace"),
        ("/api/v1/nodes", "v1", "Node"),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            "rbac.authorization.k8s.io/v1",
            "Role",
        ),
        (
            "/api/v1/namespaces/default/serviceaccounts",
            "v1",
            "ServiceAccount",
        ),
        (
            "/apis/ref.example.org/v1/namespaces/default/widgets",
            "ref.example.org/v1",
            "Widget",
        ),
    ];
    for (collection, api_version, kind) in kinds {
        let before = get(&server, collection).await.json()["items"]
            .as_array()
            .map_or(0, Vec::len);
        for name in HOSTILE_NAMES {
            let body = serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
            // Create.
            let r = exchange(
                &server,
                &request(
                    "POST",
                    collection,
                    "",
                    "application/json",
                    body.to_string().as_bytes(),
                ),
            )
            .await;
            assert!(
                (400..500).contains(&r.code),
                "POST {kind} {name:?}: {} {:?}",
                r.code,
                String::from_utf8_lossy(&r.body)
            );
            r.json();
            // Server-side apply and update, which may create, with the name in the path.
            let escaped: String = name
                .bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b == b'.' || b == b'-' {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect();
            for (method, content_type) in [
                ("PATCH", "application/apply-patch+yaml"),
                ("PUT", "application/json"),
            ] {
                let target = format!("{collection}/{escaped}?fieldManager=t");
                let r = exchange(
                    &server,
                    &request(
                        method,
                        &target,
                        "",
                        content_type,
                        body.to_string().as_bytes(),
                    ),
                )
                .await;
                assert!(
                    (400..500).contains(&r.code),
                    "{method} {kind} {name:?}: {} {:?}",
                    r.code,
                    String::from_utf8_lossy(&r.body)
                );
            }
        }
        let after = get(&server, collection).await.json()["items"]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(before, after, "{kind}: a hostile name was stored");
    }
}

#[tokio::test]
async fn malformed_query_parameters_and_delete_options_are_refused() {
    let server = plain_server().await;
    let cm = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"}}"#;
    let r = exchange(
        &server,
        &request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "",
            "application/json",
            cm,
        ),
    )
    .await;
    assert_eq!(r.code, 201);
    let list = "/api/v1/namespaces/default/configmaps";
    for (query, code, reason, needle) in [
        (
            "timeoutSeconds=abc",
            400,
            "BadRequest",
            "invalid timeoutSeconds",
        ),
        (
            "resourceVersion=abc",
            400,
            "BadRequest",
            "invalid resourceVersion",
        ),
        ("watch=maybe", 400, "BadRequest", "invalid watch"),
        (
            "resourceVersion=1&resourceVersionMatch=Bogus",
            422,
            "Invalid",
            "resourceVersionMatch",
        ),
    ] {
        let r = get(&server, &format!("{list}?{query}")).await;
        let message = r.status(code, reason);
        assert!(message.contains(needle), "{query}: {message}");
    }
    // Go's other spellings of true start a watch.
    let mut watch = TcpStream::connect(server.addr()).await.expect("connect");
    watch
        .write_all(format!("GET {list}?watch=True HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .await
        .expect("watch");
    let mut buf = vec![0u8; 512];
    let n = watch.read(&mut buf).await.expect("read");
    let head = String::from_utf8_lossy(&buf[..n]).to_ascii_lowercase();
    assert!(head.contains("transfer-encoding: chunked"), "{head}");
    // DeleteOptions with fields of the wrong type, or a bogus dryRun, delete nothing.
    let target = format!("{list}/keep");
    for (query, body) in [
        ("", &br#"{"preconditions":{"uid":5}}"#[..]),
        ("", br#"{"preconditions":"x"}"#),
        ("", br#"{"gracePeriodSeconds":"0"}"#),
        ("", br#"{"dryRun":"All"}"#),
        ("", br#"{"dryRun":["Bogus"]}"#),
        ("", b"[1,2]"),
        ("?dryRun=Bogus", b""),
    ] {
        let r = exchange(
            &server,
            &request(
                "DELETE",
                &format!("{target}{query}"),
                "",
                "application/json",
                body,
            ),
        )
        .await;
        r.status(400, "BadRequest");
    }
    let r = exchange(
        &server,
        &request(
            "DELETE",
            &format!("{list}?dryRun=Bogus"),
            "",
            "application/json",
            b"",
        ),
    )
    .await;
    r.status(400, "BadRequest");
    assert_eq!(get(&server, &target).await.code, 200, "nothing was deleted");
    // Well-typed options still work: a matching uid precondition deletes.
    let uid = get(&server, &target).await.json()["metadata"]["uid"].clone();
    let body = serde_json::json!({"preconditions": {"uid": uid}}).to_string();
    let r = exchange(
        &server,
        &request("DELETE", &target, "", "application/json", body.as_bytes()),
    )
    .await;
    assert_eq!(r.code, 200, "{:?}", String::from_utf8_lossy(&r.body));
    assert_eq!(get(&server, &target).await.code, 404);
}

/// A Widget CRD (`widgets.ref.example.org`) whose spec has one extra `field` and one CEL rule.
fn widget_crd(field: &str, rule: &str, message: &str) -> Vec<u8> {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ref.example.org"},
        "spec": {"group": "ref.example.org", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object",
                        "x-kubernetes-validations": [{"rule": rule, "message": message}],
                        "properties": {"replicas": {"type": "integer"}, field: {"type": "string"}}}}}}}]}
    })
    .to_string()
    .into_bytes()
}

#[tokio::test]
async fn two_servers_in_one_process_never_see_each_others_crds() {
    let a = plain_server().await;
    let b = plain_server().await;
    for (server, crd) in [
        (
            &a,
            widget_crd("onlyInA", "self.replicas <= 3", "rule of server A"),
        ),
        (
            &b,
            widget_crd("onlyInB", "self.replicas >= 10", "rule of server B"),
        ),
    ] {
        let r = exchange(
            server,
            &request(
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                "",
                "application/json",
                &crd,
            ),
        )
        .await;
        assert_eq!(r.code, 201, "{:?}", String::from_utf8_lossy(&r.body));
        until_code(
            server,
            || {
                request(
                    "GET",
                    "/apis/ref.example.org/v1/namespaces/default/widgets",
                    "",
                    "",
                    b"",
                )
            },
            200,
        )
        .await;
    }
    // OpenAPI v3 and v2 of each server describe its own CRD only (both documents are built
    // and cached per server; ask each twice, interleaved).
    for _ in 0..2 {
        for (server, own, other) in [(&a, "onlyInA", "onlyInB"), (&b, "onlyInB", "onlyInA")] {
            for path in ["/openapi/v3/apis/ref.example.org/v1", "/openapi/v2"] {
                let r = get(server, path).await;
                assert_eq!(r.code, 200, "{path}");
                let text = String::from_utf8_lossy(&r.body);
                assert!(text.contains(own), "{path} lacks {own}");
                assert!(
                    !text.contains(other),
                    "{path} shows the other server's {other}"
                );
            }
        }
    }
    // Each server enforces its own CEL rule.
    let widget = |replicas: i64| {
        serde_json::json!({"apiVersion": "ref.example.org/v1", "kind": "Widget",
            "metadata": {"generateName": "w-"}, "spec": {"replicas": replicas}})
        .to_string()
        .into_bytes()
    };
    let create = |server: &ApiServer, replicas: i64| {
        let body = widget(replicas);
        let addr = server.addr();
        async move {
            let mut stream = TcpStream::connect(addr).await.expect("connect");
            let req = request(
                "POST",
                "/apis/ref.example.org/v1/namespaces/default/widgets",
                "",
                "application/json",
                &body,
            );
            stream.write_all(&req).await.expect("write");
            let mut out = Vec::new();
            stream.read_to_end(&mut out).await.expect("read");
            String::from_utf8_lossy(&out).into_owned()
        }
    };
    for _ in 0..2 {
        let on_a = create(&a, 5).await;
        assert!(
            on_a.starts_with("HTTP/1.1 422") && on_a.contains("rule of server A"),
            "{on_a}"
        );
        let on_b = create(&b, 5).await;
        assert!(
            on_b.starts_with("HTTP/1.1 422") && on_b.contains("rule of server B"),
            "{on_b}"
        );
        assert!(create(&a, 2).await.starts_with("HTTP/1.1 201"));
        assert!(create(&b, 12).await.starts_with("HTTP/1.1 201"));
    }
}

#[tokio::test]
async fn a_stalled_watcher_never_blocks_writers() {
    let server = plain_server().await;
    // A watch whose client never reads: its socket and send buffers fill up.
    let mut stalled = TcpStream::connect(server.addr()).await.expect("connect");
    stalled
        .write_all(
            b"GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .await
        .expect("watch");
    // Far more event bytes than the watcher's buffers hold: every write still completes.
    let payload = "x".repeat(16 * 1024);
    let started = tokio::time::Instant::now();
    for i in 0..400 {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}")}, "data": {"p": payload}})
        .to_string();
        let req = request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "",
            "application/json",
            body.as_bytes(),
        );
        let write = exchange(&server, &req);
        let r = tokio::time::timeout(Duration::from_secs(10), write)
            .await
            .unwrap_or_else(|_| panic!("write {i} blocked behind the stalled watcher"));
        assert_eq!(r.code, 201, "write {i}");
    }
    assert!(started.elapsed() < Duration::from_secs(60));
    drop(stalled);
}

#[tokio::test]
async fn schema_patterns_are_compiled_per_server() {
    // Two servers, the same CRD name, different `pattern`s: each enforces its own.
    let crd = |pattern: &str| {
        serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.ref.example.org"},
            "spec": {"group": "ref.example.org", "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "code": {"type": "string", "pattern": pattern}}}}}}}]}
        })
        .to_string()
        .into_bytes()
    };
    let a = plain_server().await;
    let b = plain_server().await;
    for (server, pattern) in [(&a, "^[a-z]+$"), (&b, "^[0-9]+$")] {
        let r = exchange(
            server,
            &request(
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                "",
                "application/json",
                &crd(pattern),
            ),
        )
        .await;
        assert_eq!(r.code, 201);
        until_code(
            server,
            || {
                request(
                    "GET",
                    "/apis/ref.example.org/v1/namespaces/default/gadgets",
                    "",
                    "",
                    b"",
                )
            },
            200,
        )
        .await;
    }
    let create = |code: &str| {
        serde_json::json!({"apiVersion": "ref.example.org/v1", "kind": "Gadget",
            "metadata": {"generateName": "g-"}, "spec": {"code": code}})
        .to_string()
        .into_bytes()
    };
    let path = "/apis/ref.example.org/v1/namespaces/default/gadgets";
    for _ in 0..2 {
        for (server, ok, bad) in [(&a, "abc", "123"), (&b, "123", "abc")] {
            let r = exchange(
                server,
                &request("POST", path, "", "application/json", &create(ok)),
            )
            .await;
            assert_eq!(r.code, 201, "{:?}", String::from_utf8_lossy(&r.body));
            let r = exchange(
                server,
                &request("POST", path, "", "application/json", &create(bad)),
            )
            .await;
            let message = r.status(422, "Invalid");
            assert!(message.contains("should match"), "{message}");
        }
    }
}

#[tokio::test]
async fn impersonating_groups_without_a_user_is_a_400() {
    let server = plain_server().await;
    let r = exchange(
        &server,
        &request(
            "GET",
            "/api/v1/namespaces",
            "Impersonate-Group: devs\r\n",
            "",
            b"",
        ),
    )
    .await;
    let message = r.status(400, "BadRequest");
    assert!(
        message.contains("without impersonating a user"),
        "{message}"
    );
}

/// The `ADDED` events' names and the last resourceVersion in a raw watch response body.
fn watch_events(body: &[u8]) -> (Vec<String>, String) {
    let mut names = Vec::new();
    let mut last_rv = String::new();
    for line in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(event) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        if let Some(rv) = event["object"]["metadata"]["resourceVersion"].as_str() {
            last_rv = rv.to_string();
        }
        if event["type"] == "ADDED"
            && let Some(name) = event["object"]["metadata"]["name"].as_str()
        {
            names.push(name.to_string());
        }
    }
    (names, last_rv)
}

#[tokio::test]
async fn a_watcher_that_does_not_keep_up_is_closed_and_resumes() {
    let server = plain_server_with(ServerConfig {
        watch_send_timeout: Duration::from_millis(1),
        ..ServerConfig::in_memory()
    })
    .await;
    let list = "/api/v1/namespaces/default/configmaps";
    let mut stalled = TcpStream::connect(server.addr()).await.expect("connect");
    stalled
        .write_all(
            format!("GET {list}?watch=true HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await
        .expect("watch");
    // Far more event bytes than the socket, hyper and the watch's buffer of 256 events hold.
    let payload = "x".repeat(64 * 1024);
    let total = 400;
    for i in 0..total {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i:03}")}, "data": {"p": payload}})
        .to_string();
        let req = request("POST", list, "", "application/json", body.as_bytes());
        let r = tokio::time::timeout(Duration::from_secs(10), exchange(&server, &req))
            .await
            .unwrap_or_else(|_| panic!("write {i} blocked behind the slow watcher"));
        assert_eq!(r.code, 201, "write {i}");
    }
    // The client now reads: what was buffered, then the end of the closed watch.
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), stalled.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "the slow watch was never closed");
    let head_end = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response head");
    let (seen, last_rv) = watch_events(&raw_http::dechunk(&out[head_end + 4..]));
    assert!(
        !seen.is_empty() && seen.len() < total,
        "saw {} of {total} events",
        seen.len()
    );
    // It resumes from the last resourceVersion it saw and gets exactly the rest.
    let r = get(
        &server,
        &format!("{list}?watch=true&resourceVersion={last_rv}&timeoutSeconds=1"),
    )
    .await;
    let (rest, _) = watch_events(&r.body);
    let mut all = seen.clone();
    all.extend(rest);
    let expected: Vec<String> = (0..total).map(|i| format!("cm-{i:03}")).collect();
    assert_eq!(all, expected);
}
