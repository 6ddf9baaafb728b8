//! Property tests over the input-facing engines and the HTTP front: whatever a client sends,
//! nothing panics, nothing answers 5xx, and a rejected write changes nothing.
//!
//! Each property runs a small number of cases so the whole file stays well under 30 s in a
//! debug build on two cores. Inputs that once broke something are kept below as fixed
//! fixtures (`SEEDS`, `HOSTILE_*`) and run on every test run; proptest's own failure
//! persistence writes new failures to `tests/proptest-regressions/fuzz.txt`, to be committed.

use std::sync::OnceLock;
use std::time::Duration;

use korral_apiserver::fuzzing;
use korral_apiserver::{ApiServer, ServerConfig};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Cases per property (the HTTP ones cost a round trip each).
const CASES: u32 = 200;

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}

/// Small JSON values: the shapes the engines walk (objects, lists, scalars, nulls, directive
/// keys), a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("name".to_string()),
        Just("spec".to_string()),
        Just("containers".to_string()),
        Just("$patch".to_string()),
        Just("$retainKeys".to_string()),
        Just("$setElementOrder/containers".to_string()),
        Just("$deleteFromPrimitiveList/finalizers".to_string()),
        Just("metadata".to_string()),
        "[a-z]{1,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop_oneof![
            Just("delete".to_string()),
            Just("replace".to_string()),
            Just("merge".to_string()),
            "[a-z0-9/~.-]{0,8}",
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// JSON patch operations over plausible and implausible paths.
fn json_patch() -> impl Strategy<Value = Value> {
    let path = prop_oneof![
        Just("/spec/template/spec/containers/0/image".to_string()),
        Just("/metadata/labels/a".to_string()),
        Just("/metadata".to_string()),
        Just("".to_string()),
        Just("/spec/replicas".to_string()),
        Just("/data/-".to_string()),
        "(/[a-z0-9~-]{0,4}){0,4}",
    ];
    let op = prop_oneof![
        Just("add"),
        Just("remove"),
        Just("replace"),
        Just("move"),
        Just("copy"),
        Just("test"),
        Just("bogus"),
    ];
    prop::collection::vec(
        (op, path.clone(), path, json_value()).prop_map(
            |(op, path, from, value)| json!({"op": op, "path": path, "from": from, "value": value}),
        ),
        0..4,
    )
    .prop_map(Value::Array)
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "labels": {"app": "d"}, "finalizers": ["example.com/a"]},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": {
            "metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [
                {"name": "c", "image": "nginx", "ports": [{"containerPort": 80}], "env": [{"name": "A", "value": "1"}]},
                {"name": "s", "image": "busybox"}
            ]}}}
    })
}

proptest! {
    #![proptest_config(config(1000))]

    /// The three patch engines take any body against any document without panicking; a
    /// failure is a 4xx.
    #[test]
    fn patch_engines_never_panic_and_fail_with_4xx(
        original in json_value(),
        patch in json_value(),
        ops in json_patch(),
        use_deployment in any::<bool>(),
    ) {
        let original = if use_deployment { deployment() } else { original };
        let body = serde_json::to_vec(&patch).unwrap_or_default();
        let ops = serde_json::to_vec(&ops).unwrap_or_default();
        for (kind, body) in [("merge", &body), ("strategic", &body), ("json", &ops)] {
            if let Err(e) = fuzzing::apply_patch(kind, &original, body) {
                prop_assert!((400..500).contains(&e.code), "{kind}: {e}");
            }
        }
    }

    /// Selector parsers take any text; errors are 400.
    #[test]
    fn selectors_never_panic(text in "[a-z0-9!=<>(),.\\\\ /_-]{0,40}", raw in ".{0,40}") {
        for s in [&text, &raw] {
            let (label, field) = fuzzing::parse_selectors(s);
            prop_assert!(label.is_none_or(|c| c == 400), "{label:?}");
            prop_assert!(field.is_none_or(|c| c == 400), "{field:?}");
        }
    }

    /// The protobuf decoder takes any bytes (behind the `k8s\0` magic or not).
    #[test]
    fn protobuf_decoder_never_panics(body in prop::collection::vec(any::<u8>(), 0..256)) {
        fuzzing::decode_protobuf(&body);
        let mut framed = b"k8s\0".to_vec();
        framed.extend_from_slice(&body);
        fuzzing::decode_protobuf(&framed);
    }

    /// Schema validation and the CEL checks of a CRD schema take any schema and value.
    #[test]
    fn schema_validation_and_cel_compile_never_panic(
        schema in json_value(),
        value in json_value(),
        rule in "[a-z.()<>=!&| 0-9+'\\[\\]]{0,30}",
    ) {
        fuzzing::check_schema_and_validate(&value, &schema);
        let with_rule = json!({"type": "object", "x-kubernetes-validations": [{"rule": rule}]});
        fuzzing::check_schema_and_validate(&value, &with_rule);
    }
}

// ---- over HTTP, against one real server ------------------------------------------------------

/// One runtime and one plain-HTTP server for every HTTP case.
fn server() -> &'static (tokio::runtime::Runtime, ApiServer) {
    static SERVER: OnceLock<(tokio::runtime::Runtime, ApiServer)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let server = runtime
            .block_on(ApiServer::start(ServerConfig {
                tls: false,
                ..ServerConfig::in_memory()
            }))
            .expect("server");
        runtime.block_on(async {
            for (path, body) in [
                ("/api/v1/namespaces/default/configmaps", json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}, "data": {"a": "1"}})),
                ("/apis/apps/v1/namespaces/default/deployments", deployment()),
            ] {
                let (code, _) = send(server.addr(), "POST", path, "application/json", &serde_json::to_vec(&body).unwrap_or_default()).await;
                assert_eq!(code, 201, "{path}");
            }
        });
        (runtime, server)
    })
}

/// Sends one request; the status code and the body.
async fn send(
    addr: std::net::SocketAddr,
    method: &str,
    target: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    let _ = stream.write_all(&request).await;
    let mut out = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut out)).await;
    assert!(read.is_ok(), "no answer within 20s");
    let text = String::from_utf8_lossy(&out);
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let head_len = text.find("\r\n\r\n").map_or(out.len(), |i| i + 4);
    (code, out[head_len.min(out.len())..].to_vec())
}

/// What a target object looks like now (its resourceVersion and content).
fn snapshot(path: &str) -> Value {
    let (runtime, server) = server();
    let (code, body) = runtime.block_on(send(server.addr(), "GET", path, "application/json", b""));
    assert_eq!(code, 200, "{path}");
    serde_json::from_slice(&body).unwrap_or(Value::Null)
}

/// Sends a write; asserts no 5xx and a `Status` on failure; on failure, asserts the target is
/// unchanged.
fn write_case(
    method: &str,
    target: &str,
    content_type: &str,
    body: &[u8],
) -> Result<(), TestCaseError> {
    // The HTTP properties run in parallel threads against one server and the same targets:
    // one write case at a time, or another test's write would look like this one's.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let object_path = target.split('?').next().unwrap_or(target);
    let before = snapshot(object_path);
    let (runtime, server) = server();
    let (code, reply) = runtime.block_on(send(server.addr(), method, target, content_type, body));
    prop_assert!(
        code != 0 && code < 500,
        "{method} {target} {content_type}: {code} {}",
        String::from_utf8_lossy(&reply)
    );
    if code >= 400 {
        let status: Value = serde_json::from_slice(&reply).unwrap_or(Value::Null);
        prop_assert_eq!(
            &status["kind"],
            "Status",
            "{}",
            String::from_utf8_lossy(&reply)
        );
        prop_assert_eq!(&status["code"], code);
        let after = snapshot(object_path);
        prop_assert_eq!(
            &before["metadata"]["resourceVersion"],
            &after["metadata"]["resourceVersion"],
            "a rejected write changed the object"
        );
    }
    Ok(())
}

const CM: &str = "/api/v1/namespaces/default/configmaps/target";
const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments/d";

/// Bodies that once answered 5xx or a non-Status, or could: kept as fixtures.
const HOSTILE_BODIES: &[(&str, &str, &str, &str)] = &[
    (
        "PATCH",
        DEPLOY,
        "application/strategic-merge-patch+json",
        r#"{"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}}"#,
    ),
    (
        "PATCH",
        DEPLOY,
        "application/strategic-merge-patch+json",
        r#"{"spec":{"strategy":{"$patch":"bogus"}}}"#,
    ),
    (
        "PATCH",
        DEPLOY,
        "application/strategic-merge-patch+json",
        r#"{"spec":{"template":{"spec":{"containers":[1,"a",null]}}}}"#,
    ),
    (
        "PATCH",
        DEPLOY,
        "application/strategic-merge-patch+json",
        r#"{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"image":"x"}],"containers":[{"name":"c"}]}}}}"#,
    ),
    (
        "PATCH",
        DEPLOY,
        "application/apply-patch+yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      containers:\n      - image: x\n",
    ),
    (
        "PATCH",
        DEPLOY,
        "application/apply-patch+yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n      - name: c\n",
    ),
    (
        "PATCH",
        CM,
        "application/json-patch+json",
        r#"[{"op":"remove","path":"/metadata"}]"#,
    ),
    (
        "PATCH",
        CM,
        "application/json-patch+json",
        r#"[{"op":"replace","path":"","value":[]}]"#,
    ),
    (
        "PATCH",
        CM,
        "application/merge-patch+json",
        r#"{"metadata":null}"#,
    ),
    (
        "PUT",
        CM,
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"target","resourceVersion":"abc"}}"#,
    ),
    (
        "DELETE",
        CM,
        "application/json",
        r#"{"preconditions":{"uid":5}}"#,
    ),
    (
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/vnd.kubernetes.protobuf",
        "k8s\0\n\u{7f}\u{7f}\u{7f}",
    ),
];

#[test]
fn hostile_fixtures_answer_4xx_and_change_nothing() -> Result<(), TestCaseError> {
    for (method, target, content_type, body) in HOSTILE_BODIES {
        let target = if target.contains('?') || *method == "POST" || *method == "DELETE" {
            target.to_string()
        } else {
            format!("{target}?fieldManager=fuzz")
        };
        if *method == "POST" {
            let (runtime, server) = server();
            let (code, _) = runtime.block_on(send(
                server.addr(),
                method,
                &target,
                content_type,
                body.as_bytes(),
            ));
            prop_assert!((400..500).contains(&code), "{method} {target}: {code}");
            continue;
        }
        write_case(method, &target, content_type, body.as_bytes())?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(CASES))]

    /// Any JSON body as a merge, strategic or JSON patch, or as an update, of a Deployment
    /// or a ConfigMap: never a 5xx, and a rejected one changes nothing.
    #[test]
    fn http_writes_of_arbitrary_json(
        body in json_value(),
        ops in json_patch(),
        which in 0..5usize,
        on_deployment in any::<bool>(),
    ) {
        let target = if on_deployment { DEPLOY } else { CM };
        let body_bytes = serde_json::to_vec(&body).unwrap_or_default();
        let ops_bytes = serde_json::to_vec(&ops).unwrap_or_default();
        let (method, content_type, bytes) = match which {
            0 => ("PATCH", "application/merge-patch+json", &body_bytes),
            1 => ("PATCH", "application/strategic-merge-patch+json", &body_bytes),
            2 => ("PATCH", "application/json-patch+json", &ops_bytes),
            3 => ("PUT", "application/json", &body_bytes),
            _ => ("PATCH", "application/apply-patch+yaml", &body_bytes),
        };
        write_case(method, &format!("{target}?fieldManager=fuzz"), content_type, bytes)?;
    }

    /// Mutated bytes of a valid object, in every content type the server decodes.
    #[test]
    fn http_writes_of_mutated_bytes(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        content_type in prop_oneof![
            Just("application/json"),
            Just("application/yaml"),
            Just("application/vnd.kubernetes.protobuf"),
            Just("application/merge-patch+json"),
            Just("application/apply-patch+yaml"),
        ],
    ) {
        let mut bytes = serde_json::to_vec(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "target", "labels": {"a": "b"}}, "data": {"k": "v"}
        })).unwrap_or_default();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] = byte;
        }
        let method = if content_type.contains("patch") { "PATCH" } else { "PUT" };
        write_case(method, &format!("{CM}?fieldManager=fuzz"), content_type, &bytes)?;
    }

    /// Arbitrary query strings on a list: never a 5xx.
    #[test]
    fn http_list_query_strings(
        params in prop::collection::vec((
            prop_oneof![
                Just("limit"), Just("continue"), Just("labelSelector"), Just("fieldSelector"),
                Just("resourceVersion"), Just("resourceVersionMatch"), Just("timeoutSeconds"),
                Just("watch"), Just("allowWatchBookmarks"), Just("sendInitialEvents"),
            ],
            "[a-zA-Z0-9=!,()%._ -]{0,12}",
        ), 0..4),
    ) {
        let query: String = params
            .iter()
            .map(|(k, v)| format!("{k}={}", v.replace(' ', "%20")))
            .collect::<Vec<_>>()
            .join("&");
        // A watch would stream until its timeout: cap it.
        let target = format!("/api/v1/namespaces/default/configmaps?timeoutSeconds=1&{query}");
        let (runtime, server) = server();
        let (code, reply) = runtime.block_on(send(server.addr(), "GET", &target, "", b""));
        prop_assert!(code != 0 && code < 500, "{target}: {code} {}", String::from_utf8_lossy(&reply));
    }
}
