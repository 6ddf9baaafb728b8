//! Pod validation and quantities, compared with a real kube-apiserver's answers
//! (`fixtures/builtin/pod/`, copied from the reference captures): refusals on create and
//! update with upstream's code, reason, message and causes; canonical quantities; the update
//! rules (images may change, other spec fields may not); status writes keep the spec.

mod common;

use common::*;
use kube::Client;
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/default/pods";

/// A captured response in `fixtures/builtin/pod/`.
fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/builtin/pod/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("fixture");
    serde_json::from_str(&text).expect("fixture json")
}

/// The HTTP code of a captured `status_line` (`HTTP/2 422 `).
fn captured_code(capture: &Value) -> u16 {
    capture["status_line"]
        .as_str()
        .and_then(|s| s.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status line")
}

/// A pod named `name` with the given spec.
fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

async fn send(client: &Client, method: &str, path: &str, body: &Value) -> (u16, Value) {
    raw(
        client,
        method,
        path,
        Some("application/json"),
        serde_json::to_vec(body).expect("body"),
    )
    .await
}

async fn create(client: &Client, body: &Value) -> (u16, Value) {
    send(client, "POST", PODS, body).await
}

/// Asserts a refusal matches a capture: code, reason, message and details.
fn assert_matches_capture(got: (u16, Value), capture: &str) {
    let want = fixture(capture);
    let (code, body) = got;
    assert_eq!(code, captured_code(&want), "{capture}: {body}");
    let want = &want["body"];
    for field in ["kind", "status", "reason", "code", "message", "details"] {
        assert_eq!(body[field], want[field], "{capture}: {field} of {body}");
    }
}

#[tokio::test]
async fn captured_create_refusals_match_upstream() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let cases = [
        (
            "invalid-pod-no-image",
            pod("noimg", json!({"containers": [{"name": "c"}]})),
        ),
        (
            "invalid-pod-duplicate-container",
            pod(
                "dup",
                json!({"containers": [
                    {"name": "c", "image": "busybox"},
                    {"name": "c", "image": "busybox"}
                ]}),
            ),
        ),
        (
            "invalid-pod-port",
            pod(
                "port",
                json!({"containers": [
                    {"name": "c", "image": "busybox", "ports": [{"containerPort": 70000}]}
                ]}),
            ),
        ),
        (
            "invalid-pod-requests-over-limits",
            pod(
                "rl",
                json!({"containers": [{"name": "c", "image": "busybox", "resources": {
                    "requests": {"cpu": "2"}, "limits": {"cpu": "1"}
                }}]}),
            ),
        ),
        (
            "invalid-pod-restartpolicy",
            pod(
                "rp",
                json!({"restartPolicy": "Sometimes", "containers": [{"name": "c", "image": "busybox"}]}),
            ),
        ),
    ];
    for (capture, body) in cases {
        assert_matches_capture(create(&client, &body).await, capture);
        let name = body["metadata"]["name"].as_str().expect("name");
        let (code, _) = send(&client, "GET", &format!("{PODS}/{name}"), &Value::Null).await;
        assert_eq!(code, 404, "{capture}: a refused pod is not stored");
    }
}

/// An expected cause: reason, field, message.
type Expected = (&'static str, &'static str, &'static str);

#[tokio::test]
async fn more_refusals_name_every_cause_with_upstream_paths() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let cases: Vec<(Value, Vec<Expected>)> = vec![
        (
            json!({"containers": []}),
            vec![("FieldValueRequired", "spec.containers", "Required value")],
        ),
        (
            json!({"containers": [{"name": "Bad_Name", "image": "x"}]}),
            vec![(
                "FieldValueInvalid",
                "spec.containers[0].name",
                "Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            )],
        ),
        (
            json!({
                "initContainers": [{"name": "c", "image": "x"}],
                "containers": [{"name": "c", "image": "x"}]
            }),
            vec![(
                "FieldValueDuplicate",
                "spec.initContainers[0].name",
                "Duplicate value: \"c\"",
            )],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x", "ports": [
                {"containerPort": 80, "name": "web", "protocol": "ICMP"},
                {"containerPort": 81, "name": "web"}
            ]}]}),
            vec![
                (
                    "FieldValueNotSupported",
                    "spec.containers[0].ports[0].protocol",
                    "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                ),
                (
                    "FieldValueDuplicate",
                    "spec.containers[0].ports[1].name",
                    "Duplicate value: \"web\"",
                ),
            ],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x",
                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}),
            vec![(
                "FieldValueNotFound",
                "spec.containers[0].volumeMounts[0].name",
                "Not found: \"data\"",
            )],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x"}],
                "volumes": [{"name": "v", "emptyDir": {}, "secret": {"secretName": "s"}}]}),
            vec![(
                "FieldValueForbidden",
                "spec.volumes[0].secret",
                "Forbidden: may not specify more than 1 volume type",
            )],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x",
                "livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2, "periodSeconds": -1}}]}),
            vec![
                (
                    "FieldValueInvalid",
                    "spec.containers[0].livenessProbe.periodSeconds",
                    "Invalid value: -1: must be greater than or equal to 0",
                ),
                (
                    "FieldValueInvalid",
                    "spec.containers[0].livenessProbe.successThreshold",
                    "Invalid value: 2: must be 1",
                ),
            ],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x", "resources": {
                "limits": {"cpu": "-1"}}}]}),
            // Requests default to limits before validation, as upstream's.
            vec![
                (
                    "FieldValueInvalid",
                    "spec.containers[0].resources.limits[cpu]",
                    "Invalid value: \"-1\": must be greater than or equal to 0",
                ),
                (
                    "FieldValueInvalid",
                    "spec.containers[0].resources.requests[cpu]",
                    "Invalid value: \"-1\": must be greater than or equal to 0",
                ),
            ],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x"}], "dnsPolicy": "Sometimes"}),
            vec![(
                "FieldValueNotSupported",
                "spec.dnsPolicy",
                "Unsupported value: \"Sometimes\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
            )],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x"}],
                "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]}),
            vec![(
                "FieldValueInvalid",
                "spec.tolerations[0].operator",
                "Invalid value: \"v\": value must be empty when `operator` is 'Exists'",
            )],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x",
                "env": [{"name": "A=B", "value": "1"}]}]}),
            vec![(
                "FieldValueInvalid",
                "spec.containers[0].env[0].name",
                "Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
            )],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x"}], "terminationGracePeriodSeconds": 30,
                "activeDeadlineSeconds": 0}),
            vec![(
                "FieldValueInvalid",
                "spec.activeDeadlineSeconds",
                "Invalid value: 0: must be between 1 and 2147483647, inclusive",
            )],
        ),
    ];
    for (i, (spec, want)) in cases.into_iter().enumerate() {
        let name = format!("p{i}");
        let (code, body) = create(&client, &pod(&name, spec)).await;
        assert_eq!(code, 422, "case {i}: {body}");
        assert_eq!(body["reason"], "Invalid");
        assert_eq!(body["details"]["name"], json!(name));
        assert_eq!(body["details"]["kind"], "Pod");
        let causes: Vec<(String, String, String)> = body["details"]["causes"]
            .as_array()
            .expect("causes")
            .iter()
            .map(|c| {
                let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
                (s("reason"), s("field"), s("message"))
            })
            .collect();
        let want: Vec<(String, String, String)> = want
            .iter()
            .map(|(r, f, m)| (r.to_string(), f.to_string(), m.to_string()))
            .collect();
        assert_eq!(causes, want, "case {i}");
    }
}

#[tokio::test]
async fn an_ephemeral_volume_whose_claim_name_would_be_too_long_is_refused() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let volume = |name: &str| {
        json!({"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}
        }}}})
    };
    let spec = json!({
        "containers": [{"name": "c", "image": "x"}],
        "volumes": [volume("data"), volume("d")]
    });
    // `<pod>-data` has 254 characters, one over a claim name's limit; `<pod>-d` fits.
    let name = "p".repeat(249);
    let (code, body) = create(&client, &pod(&name, spec.clone())).await;
    assert_eq!(code, 422, "{body}");
    let claim = format!("{name}-data");
    let message = format!(
        "Invalid value: \"data\": PVC name \"{claim}\": must be no more than 253 characters"
    );
    assert_eq!(
        body["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": message, "field": "spec.volumes[0].name"}]),
        "{body}"
    );
    let (code, body) = create(&client, &pod(&"p".repeat(248), spec)).await;
    assert_eq!(code, 201, "{body}");
}

#[tokio::test]
async fn quantities_are_stored_in_canonical_form_as_captured() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (code, created) = create(
        &client,
        &pod(
            "q",
            json!({"containers": [{"name": "c", "image": "busybox", "resources": {
                "requests": {"cpu": 0.5, "memory": "1024Mi", "ephemeral-storage": "2G"},
                "limits": {"cpu": "1000m", "memory": "1.5Gi"}
            }}]}),
        ),
    )
    .await;
    let want = fixture("create-pod-quantities");
    assert_eq!(code, captured_code(&want), "{created}");
    assert_eq!(
        created["spec"]["containers"][0]["resources"],
        want["resources"]
    );

    // Requests default to limits, in canonical form.
    let (code, created) = create(
        &client,
        &pod(
            "limits-only",
            json!({"containers": [{"name": "c", "image": "busybox", "resources": {
                "limits": {"cpu": "1", "memory": "1.5Gi", "ephemeral-storage": "2G"}
            }}]}),
        ),
    )
    .await;
    let want = fixture("create-pod-quantities-limits-only");
    assert_eq!(code, captured_code(&want), "{created}");
    assert_eq!(
        created["spec"]["containers"][0]["resources"],
        want["resources"]
    );
    let (_, read) = send(&client, "GET", &format!("{PODS}/limits-only"), &Value::Null).await;
    assert_eq!(
        read["spec"]["containers"][0]["resources"],
        want["resources"]
    );
}

#[tokio::test]
async fn a_malformed_quantity_cannot_be_decoded() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (code, body) = create(
        &client,
        &pod(
            "bad",
            json!({"containers": [{"name": "c", "image": "busybox", "resources": {
                "limits": {"cpu": "one"}
            }}]}),
        ),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["reason"], "BadRequest");
    assert_eq!(
        body["message"],
        "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    let (code, _) = send(&client, "GET", &format!("{PODS}/bad"), &Value::Null).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn updates_may_change_images_and_nothing_else_of_the_spec() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (code, created) = create(
        &client,
        &pod(
            "q",
            json!({"containers": [{"name": "c", "image": "busybox"}]}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["metadata"]["generation"], 1,
        "pods track their generation"
    );
    let path = format!("{PODS}/q");

    // The captured refusal: a command added to the container.
    let mut changed = created.clone();
    changed["spec"]["containers"][0]["command"] = json!(["x"]);
    let (code, body) = send(&client, "PUT", &path, &changed).await;
    let want = fixture("invalid-pod-spec-update");
    assert_eq!(code, captured_code(&want), "{body}");
    let want = &want["body"];
    assert_eq!(body["reason"], want["reason"]);
    assert_eq!(body["details"]["name"], want["details"]["name"]);
    assert_eq!(body["details"]["kind"], want["details"]["kind"]);
    let cause = &body["details"]["causes"][0];
    let want_cause = &want["details"]["causes"][0];
    assert_eq!(cause["reason"], want_cause["reason"]);
    assert_eq!(cause["field"], want_cause["field"]);
    // Upstream follows its wording with a diff of its Go structs; the wording is the same.
    let message = cause["message"].as_str().expect("message");
    let want_message = want_cause["message"].as_str().expect("message");
    assert!(
        want_message.starts_with(&format!("{message}\n")),
        "{message:?} is not the start of {want_message:?}"
    );
    assert_eq!(
        body["message"],
        format!("Pod \"q\" is invalid: spec: {message}")
    );

    // Merge patches follow the same rules.
    let (code, _) = send_patch(&client, &path, json!({"spec": {"restartPolicy": "Never"}})).await;
    assert_eq!(code, 422);

    // An image change (as `kubectl set image` patches it) and an added toleration are allowed.
    let (code, patched) = send_strategic_patch(
        &client,
        &path,
        json!({"spec": {
            "containers": [{"name": "c", "image": "busybox:1.36"}],
            "activeDeadlineSeconds": 600
        }}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"]["containers"][0]["image"], "busybox:1.36");
    assert_eq!(
        patched["metadata"]["generation"], 2,
        "a spec change bumps it"
    );
    let mut added = patched.clone();
    added["spec"]["tolerations"]
        .as_array_mut()
        .expect("default tolerations")
        .push(json!({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}));
    let (code, body) = send(&client, "PUT", &path, &added).await;
    assert_eq!(code, 200, "{body}");

    // activeDeadlineSeconds may only shrink.
    let (code, body) = send_patch(
        &client,
        &path,
        json!({"spec": {"activeDeadlineSeconds": 900}}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Invalid value: 900: must be less than or equal to previous value"
    );

    // A status write keeps the spec and passes.
    let (code, read) = send(&client, "GET", &path, &Value::Null).await;
    assert_eq!(code, 200);
    let mut status = read.clone();
    status["status"] = json!({"phase": "Running"});
    status["spec"]["containers"][0]["command"] = json!(["ignored"]);
    let (code, body) = send(&client, "PUT", &format!("{path}/status"), &status).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["phase"], "Running");
    assert!(body["spec"]["containers"][0].get("command").is_none());
    assert_eq!(
        body["metadata"]["generation"], read["metadata"]["generation"],
        "a status write does not"
    );
}

async fn send_patch(client: &Client, path: &str, patch: Value) -> (u16, Value) {
    raw(
        client,
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        serde_json::to_vec(&patch).expect("patch"),
    )
    .await
}

async fn send_strategic_patch(client: &Client, path: &str, patch: Value) -> (u16, Value) {
    raw(
        client,
        "PATCH",
        path,
        Some("application/strategic-merge-patch+json"),
        serde_json::to_vec(&patch).expect("patch"),
    )
    .await
}

/// Creates a pod, answering the status and the `Warning` headers.
async fn create_with_warnings(client: &Client, body: &Value) -> (u16, Vec<String>) {
    let request = http::Request::builder()
        .method("POST")
        .uri(PODS)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(body).expect("body"))
        .expect("request");
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .expect("send");
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    (response.status().as_u16(), warnings)
}

#[tokio::test]
async fn valid_pods_that_are_likely_mistakes_get_upstream_warnings() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (code, warnings) = create_with_warnings(
        &client,
        &pod(
            "web.v1",
            json!({
                "nodeSelector": {"beta.kubernetes.io/arch": "amd64"},
                "containers": [{"name": "c", "image": "busybox",
                    "resources": {"limits": {"memory": "0.5"}}}]
            }),
        ),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        [
            "299 - \"metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]\"",
            "299 - \"spec.nodeSelector[beta.kubernetes.io/arch]: deprecated since v1.14; use \\\"kubernetes.io/arch\\\" instead\"",
            "299 - \"spec.containers[0].resources.limits[memory]: fractional byte value \\\"500m\\\" is invalid, must be an integer\"",
            "299 - \"spec.containers[0].resources.requests[memory]: fractional byte value \\\"500m\\\" is invalid, must be an integer\"",
        ]
    );
    let (code, warnings) = create_with_warnings(
        &client,
        &pod(
            "plain",
            json!({"containers": [{"name": "c", "image": "busybox"}]}),
        ),
    )
    .await;
    assert_eq!(code, 201);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[tokio::test]
async fn ephemeral_containers_and_resize_subresources_change_only_their_part() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let resources = json!({"requests": {"cpu": "100m", "memory": "64Mi"},
        "limits": {"cpu": "200m", "memory": "128Mi"}});
    let (code, created) = create(
        &client,
        &pod(
            "dbg",
            json!({"containers": [{"name": "c", "image": "busybox", "resources": resources}]}),
        ),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let path = format!("{PODS}/dbg");

    // What `kubectl debug` sends: a strategic merge patch of the ephemeral containers.
    let (code, patched) = send_strategic_patch(
        &client,
        &format!("{path}/ephemeralcontainers"),
        json!({"spec": {
            "ephemeralContainers": [{"name": "debugger", "image": "busybox",
                "targetContainerName": "c", "stdin": true, "tty": true}],
            "containers": [{"name": "c", "image": "ignored:1"}]
        }}),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(
        patched["spec"]["ephemeralContainers"][0]["name"],
        "debugger"
    );
    assert_eq!(
        patched["spec"]["ephemeralContainers"][0]["terminationMessagePolicy"], "File",
        "defaulted"
    );
    assert_eq!(
        patched["spec"]["containers"][0]["image"], "busybox",
        "nothing else changes through this subresource"
    );
    assert_eq!(patched["metadata"]["generation"], 2);
    let (code, read) = send(
        &client,
        "GET",
        &format!("{path}/ephemeralcontainers"),
        &Value::Null,
    )
    .await;
    assert_eq!(code, 200, "{read}");
    assert_eq!(read["kind"], "Pod");

    // Existing ephemeral containers stay as they are.
    let mut changed = patched.clone();
    changed["spec"]["ephemeralContainers"][0]["image"] = json!("alpine");
    let (code, body) = send(
        &client,
        "PUT",
        &format!("{path}/ephemeralcontainers"),
        &changed,
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Forbidden: existing ephemeral containers \"debugger\" may not be changed\n"
    );
    // Ports are not for ephemeral containers.
    let mut ported = patched.clone();
    ported["spec"]["ephemeralContainers"]
        .as_array_mut()
        .expect("list")
        .push(json!({"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]}));
    let (code, body) = send(
        &client,
        "PUT",
        &format!("{path}/ephemeralcontainers"),
        &ported,
    )
    .await;
    assert_eq!(code, 422, "{body}");
    // A main-resource update cannot add them.
    let mut main = patched.clone();
    main["spec"]["ephemeralContainers"]
        .as_array_mut()
        .expect("list")
        .push(json!({"name": "more", "image": "busybox"}));
    let (code, _) = send(&client, "PUT", &path, &main).await;
    assert_eq!(code, 422);

    // In-place resize: cpu and memory change, nothing else.
    let (code, resized) = send_strategic_patch(
        &client,
        &format!("{path}/resize"),
        json!({"spec": {"containers": [{"name": "c", "image": "ignored:2",
            "resources": {"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}}}]}}),
    )
    .await;
    assert_eq!(code, 200, "{resized}");
    let c = &resized["spec"]["containers"][0];
    assert_eq!(c["resources"]["requests"]["cpu"], "150m");
    assert_eq!(c["resources"]["limits"]["cpu"], "300m");
    assert_eq!(c["resources"]["limits"]["memory"], "128Mi");
    assert_eq!(c["image"], "busybox");
    // The QoS class may not change: requests equal to limits would make it Guaranteed.
    let (code, body) = send_strategic_patch(
        &client,
        &format!("{path}/resize"),
        json!({"spec": {"containers": [{"name": "c",
            "resources": {"requests": {"cpu": "300m", "memory": "128Mi"}}}]}}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Invalid value: \"Burstable\": Pod QOS Class may not change as a result of resizing"
    );
}

/// A new Pod's status is the server's, whatever the client sends (`Pending` with its QoS
/// class, as upstream's strategy resets it); status is written through `/status` afterwards.
#[tokio::test]
async fn a_client_sent_status_is_dropped_on_create() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "seeded"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.9", "conditions": [{"type": "Ready", "status": "True"}]}});
    let (code, created) = send(&client, "POST", "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
}

/// Writes through `pods/status` follow `ValidatePodStatusUpdate`: a terminated container of a
/// `Never` pod stays terminated, the QoS class is fixed, IPs are valid (one per family) and
/// custom condition types are qualified names; a rejected write changes nothing. The singular
/// `podIP` wins over a list that disagrees, as upstream's conversion reads them.
#[tokio::test]
async fn status_writes_follow_upstreams_status_rules() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "job-pod"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}});
    let (code, created) = send(&client, "POST", "/api/v1/namespaces/default/pods", &pod).await;
    assert_eq!(code, 201, "{created}");
    let path = "/api/v1/namespaces/default/pods/job-pod/status";

    let mut done = created.clone();
    done["status"] = json!({"phase": "Succeeded", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.6"}],
        "containerStatuses": [{"name": "c", "image": "busybox", "imageID": "", "ready": false,
            "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]});
    let (code, stored) = send(&client, "PUT", path, &done).await;
    assert_eq!(code, 200, "{stored}");
    assert_eq!(stored["status"]["podIPs"], json!([{"ip": "10.0.0.5"}]));
    assert_eq!(
        stored["status"]["qosClass"], "BestEffort",
        "kept from the stored status"
    );

    let mut bad = stored.clone();
    bad["status"]["qosClass"] = json!("Guaranteed");
    bad["status"]["podIP"] = json!("10.0.0.5");
    bad["status"]["podIPs"] = json!([{"ip": "10.0.0.5"}, {"ip": "10.0.0.7"}]);
    bad["status"]["conditions"] = json!([{"type": "not valid!", "status": "True"}]);
    bad["status"]["containerStatuses"][0]["state"] =
        json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}});
    let (code, body) = send(&client, "PUT", path, &bad).await;
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
    for (field, message) in [
        (
            "status.qosClass",
            "Invalid value: \"Guaranteed\": field is immutable",
        ),
        (
            "status.containerStatuses[0].state",
            "Forbidden: may not be transitioned to non-terminated state",
        ),
        (
            "status.podIPs",
            "Invalid value: []core.PodIP{core.PodIP{IP:\"10.0.0.5\"}, core.PodIP{IP:\"10.0.0.7\"}}: may specify no more than one IP for each IP family",
        ),
    ] {
        assert!(
            causes.iter().any(|(f, m)| f == field && m == message),
            "{field}: {message} not in {causes:#?}"
        );
    }
    assert!(
        causes
            .iter()
            .any(|(f, _)| f == "metadata.conditions[0].Type"),
        "{causes:#?}"
    );
    let (code, now) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods/job-pod",
        &Value::Null,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        now["status"], stored["status"],
        "the rejected write changed nothing"
    );
    assert_eq!(
        now["metadata"]["resourceVersion"],
        stored["metadata"]["resourceVersion"]
    );

    // The mirror-pod annotation may not be added by an update.
    let mut mirror = now.clone();
    mirror["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "x"});
    let (code, body) = send(
        &client,
        "PUT",
        "/api/v1/namespaces/default/pods/job-pod",
        &mirror,
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Forbidden: may not add mirror pod annotation"
    );
}

/// The `(reason, field, message)` of each cause of a refusal.
fn causes_of(body: &Value) -> Vec<(String, String, String)> {
    body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("reason"), s("field"), s("message"))
        })
        .collect()
}

/// The expected causes as owned strings.
fn owned(want: &[Expected]) -> Vec<(String, String, String)> {
    want.iter()
        .map(|(r, f, m)| (r.to_string(), f.to_string(), m.to_string()))
        .collect()
}

#[tokio::test]
async fn volumes_security_and_claims_are_refused_as_upstream_refuses_them() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let c = json!({"name": "c", "image": "x"});
    let cases: Vec<(Value, Vec<Expected>)> = vec![
        (
            json!({"containers": [c], "serviceAccountName": "default", "volumes": [{"name": "t",
                "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 60}}]}}]}),
            vec![(
                "FieldValueInvalid",
                "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds",
                "Invalid value: 60: may not specify a duration less than 10 minutes",
            )],
        ),
        (
            json!({"containers": [c], "volumes": [{"name": "d", "downwardAPI": {"items": [
                {"path": "p", "fieldRef": {"fieldPath": "status.podIP"}}]}}]}),
            vec![(
                "FieldValueNotSupported",
                "spec.volumes[0].downwardAPI.fieldRef.fieldPath",
                "Unsupported value: \"status.podIP\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"",
            )],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x",
                "volumeDevices": [{"name": "scratch", "devicePath": "/dev/xvda"}]}],
                "volumes": [{"name": "scratch", "emptyDir": {}}]}),
            vec![(
                "FieldValueInvalid",
                "spec.containers[0].volumeDevices[0].name",
                "Invalid value: \"scratch\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            )],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x",
                "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpus"}]}),
            vec![
                (
                    "FieldValueInvalid",
                    "spec.resourceClaims[0]",
                    "Invalid value: core.PodResourceClaim{Name:\"gpus\", ResourceClaimName:(*string)(nil), ResourceClaimTemplateName:(*string)(nil)}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                ),
                (
                    "FieldValueNotFound",
                    "spec.containers[0].resources.claims[0]",
                    "Not found: \"gpu\": must be one of the names in pod.spec.resourceClaims: gpus",
                ),
            ],
        ),
        (
            json!({"containers": [c], "hostUsers": false, "hostNetwork": true}),
            vec![(
                "FieldValueForbidden",
                "spec.hostNetwork",
                "Forbidden: when `pod.Spec.HostUsers` is false",
            )],
        ),
        (
            json!({"containers": [{"name": "c", "image": "x", "securityContext":
                {"appArmorProfile": {"type": "Localhost"}}}]}),
            vec![(
                "FieldValueRequired",
                "spec.containers[0].securityContext.appArmorProfile.localhostProfile",
                "Required value: must be set when AppArmor type is Localhost",
            )],
        ),
        (
            json!({"containers": [c], "os": {"name": "windows"},
                "securityContext": {"seLinuxOptions": {"level": "s0"}}}),
            vec![(
                "FieldValueForbidden",
                "spec.securityContext.seLinuxOptions",
                "Forbidden: cannot be set for a windows pod",
            )],
        ),
        (
            json!({"containers": [c], "volumes": [{"name": "i", "image": {}}]}),
            vec![(
                "FieldValueRequired",
                "spec.volumes[0].image.reference",
                "Required value",
            )],
        ),
    ];
    for (i, (spec, want)) in cases.into_iter().enumerate() {
        let name = format!("v{i}");
        let (code, body) = create(&client, &pod(&name, spec)).await;
        assert_eq!(code, 422, "case {i}: {body}");
        assert_eq!(body["reason"], "Invalid", "case {i}");
        assert_eq!(body["details"]["kind"], "Pod", "case {i}");
        assert_eq!(causes_of(&body), owned(&want), "case {i}");
    }

    // The deprecated AppArmor annotations name containers, and agree with the fields.
    let mut annotated = pod(
        "armor",
        json!({"containers": [{"name": "c", "image": "x", "securityContext":
            {"appArmorProfile": {"type": "RuntimeDefault"}}}]}),
    );
    annotated["metadata"]["annotations"] = json!({
        "container.apparmor.security.beta.kubernetes.io/c": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/ghost": "runtime/default"
    });
    let (code, body) = create(&client, &annotated).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "Pod \"armor\" is invalid: [metadata.annotations[container.apparmor.security.beta.kubernetes.io/ghost]: Invalid value: \"ghost\": container not found, spec.containers[0].securityContext.appArmorProfile.type: Forbidden: apparmor type in annotation and field must match]"
    );
    let (code, body) = send(&client, "GET", &format!("{PODS}/armor"), &json!({})).await;
    assert_eq!(code, 404, "nothing is stored: {body}");
}

#[tokio::test]
async fn a_deployment_template_is_refused_at_its_template_path() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [{"name": "c", "image": "nginx:1.27",
                        "volumeMounts": [{"name": "cfg", "mountPath": "/cfg",
                            "recursiveReadOnly": "Enabled"}]}],
                    "volumes": [{"name": "cfg", "projected": {"sources": [
                        {"configMap": {"name": "a", "items": [{"key": "k", "path": "same"}]}},
                        {"secret": {"name": "b", "items": [{"key": "k", "path": "same"}]}}
                    ]}}]
                }
            }
        }
    });
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let (code, body) = send(&client, "POST", path, &deployment).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(body["details"]["kind"], "Deployment");
    assert_eq!(
        causes_of(&body),
        owned(&[
            (
                "FieldValueInvalid",
                "spec.template.spec.volumes[0].projected",
                "Invalid value: \"b\": conflicting duplicate paths",
            ),
            // An invalid volume is not one the mounts may name, as upstream's.
            (
                "FieldValueNotFound",
                "spec.template.spec.containers[0].volumeMounts[0].name",
                "Not found: \"cfg\"",
            ),
            (
                "FieldValueForbidden",
                "spec.template.spec.containers[0].volumeMounts.recursiveReadOnly",
                "Forbidden: may only be specified when readOnly is true",
            ),
        ])
    );
    let (code, _) = send(&client, "GET", &format!("{path}/web"), &json!({})).await;
    assert_eq!(code, 404, "nothing is stored");
}

#[tokio::test]
async fn a_rich_valid_pod_is_accepted() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let mut rich = pod(
        "rich",
        json!({
            "serviceAccountName": "default",
            "securityContext": {
                "seLinuxOptions": {"level": "s0:c123,c456"},
                "seLinuxChangePolicy": "Recursive",
                "supplementalGroupsPolicy": "Merge",
                "appArmorProfile": {"type": "RuntimeDefault"},
                "sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"}]
            },
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
            "containers": [{
                "name": "c", "image": "busybox",
                "resources": {"claims": [{"name": "gpu"}], "limits": {"memory": "64Mi"}},
                "securityContext": {"seLinuxOptions": {"type": "spc_t"}, "procMount": "Default"},
                "volumeMounts": [
                    {"name": "api", "mountPath": "/var/run/secrets/api", "readOnly": true,
                        "recursiveReadOnly": "Enabled"},
                    {"name": "info", "mountPath": "/etc/info"}
                ]
            }],
            "volumes": [
                {"name": "api", "projected": {"sources": [
                    {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
                ]}},
                {"name": "info", "downwardAPI": {"items": [
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                    {"path": "mem", "resourceFieldRef": {"containerName": "c",
                        "resource": "limits.memory", "divisor": "1Mi"}}
                ]}}
            ]
        }),
    );
    rich["metadata"]["annotations"] =
        json!({"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"});
    let (code, body) = create(&client, &rich).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        body["spec"]["volumes"][1]["downwardAPI"]["items"][1]["resourceFieldRef"]["divisor"],
        "1Mi"
    );
}
