//! Hostile and malformed requests: every client mistake is a 4xx `Status`.

use std::time::Duration;

use korral_apiserver::{ApiServer, ServerConfig};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

/// A raw HTTP/1.1 exchange: the status code, the headers (lower-cased) and the body.
struct Reply {
    code: u16,
    head: String,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {} {:?}",
                self.head,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

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
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "no reply within 20s");
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, _) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let head_len = head.len() + 4;
    let code = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let head = head.to_ascii_lowercase();
    let mut body = out.get(head_len..).unwrap_or_default().to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    Reply { code, head, body }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(pos) = data.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..pos]).unwrap_or("0").trim(), 16)
                .unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = pos + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = data.get(start + size + 2..).unwrap_or_default();
    }
    out
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
    // 200 header fields (hyper's default limit is 100) are fine.
    let headers: String = (0..200).map(|i| format!("X-H{i}: v\r\n")).collect();
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
