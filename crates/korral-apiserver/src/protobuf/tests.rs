//! Tests of the protobuf decoder: captured kubectl bodies, hand-encoded messages, hostile input.

use serde_json::{Value, json};

use super::descriptors::{FieldType, ValueType, descriptors};
use super::*;

// ------------------------------------------------------------------ a tiny encoder

/// A varint.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

/// A varint field.
fn vf(number: u32, v: u64) -> Vec<u8> {
    let mut out = varint(u64::from(number) << 3);
    out.extend(varint(v));
    out
}

/// A length-delimited field.
fn lf(number: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = varint((u64::from(number) << 3) | 2);
    out.extend(varint(payload.len() as u64));
    out.extend_from_slice(payload);
    out
}

/// A string field.
fn sf(number: u32, s: &str) -> Vec<u8> {
    lf(number, s.as_bytes())
}

/// Concatenates fields into a message.
fn msg(fields: &[Vec<u8>]) -> Vec<u8> {
    fields.concat()
}

/// A map entry field.
fn entry(number: u32, key: &str, value: &[u8]) -> Vec<u8> {
    lf(number, &msg(&[sf(1, key), lf(2, value)]))
}

/// A `k8s\0` envelope around `raw`.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend(msg(&[
        lf(1, &msg(&[sf(1, api_version), sf(2, kind)])),
        lf(2, raw),
        sf(3, ""),
        sf(4, ""),
    ]));
    out
}

/// Decodes, panicking with the error (tests only).
fn decode(bytes: &[u8]) -> Value {
    match decode_object(bytes) {
        Ok(v) => v,
        Err(e) => panic!("decode failed: {e}"),
    }
}

// ------------------------------------------------------------------ descriptor table

#[test]
fn table_parses_and_covers_served_kinds() {
    let d = match descriptors() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    assert!(d.messages.len() > 500, "{} messages", d.messages.len());
    let kinds: &[(&str, &[&str])] = &[
        (
            "v1",
            &[
                "Namespace",
                "ConfigMap",
                "Secret",
                "Service",
                "Endpoints",
                "ServiceAccount",
                "Pod",
                "Event",
                "ResourceQuota",
                "LimitRange",
                "PersistentVolumeClaim",
                "Node",
                "Binding",
                "ReplicationController",
            ],
        ),
        ("events.k8s.io/v1", &["Event"]),
        (
            "apps/v1",
            &[
                "Deployment",
                "StatefulSet",
                "DaemonSet",
                "ReplicaSet",
                "ControllerRevision",
            ],
        ),
        ("batch/v1", &["Job", "CronJob"]),
        ("coordination.k8s.io/v1", &["Lease"]),
        (
            "rbac.authorization.k8s.io/v1",
            &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
        ),
        ("policy/v1", &["PodDisruptionBudget", "Eviction"]),
        ("scheduling.k8s.io/v1", &["PriorityClass"]),
        ("networking.k8s.io/v1", &["Ingress", "NetworkPolicy"]),
        ("autoscaling/v1", &["HorizontalPodAutoscaler", "Scale"]),
        ("autoscaling/v2", &["HorizontalPodAutoscaler"]),
        (
            "authentication.k8s.io/v1",
            &["TokenRequest", "SelfSubjectReview"],
        ),
        ("authorization.k8s.io/v1", &["SelfSubjectAccessReview"]),
        ("meta.k8s.io/v1", &["DeleteOptions"]),
        // meta kinds are registered in every group version
        ("apps/v1", &["DeleteOptions", "Status"]),
    ];
    for (api_version, names) in kinds {
        for kind in *names {
            assert!(supports_kind(api_version, kind), "{api_version} {kind}");
        }
    }
    assert!(!supports_kind("v1", "Deployment"));
    assert!(!supports_kind("example.com/v1", "Widget"));
    // A few facts the generator must have carried over from the Go struct tags.
    let cm = d.message_by_name("k8s.io.api.core.v1.ConfigMap");
    let cm = cm.and_then(|i| d.messages.get(i));
    let binary = cm.and_then(|m| m.fields.iter().find(|f| f.json == "binaryData"));
    assert!(binary.is_some_and(|f| matches!(
        f.ty,
        FieldType::Map(_, ValueType::Scalar(super::descriptors::Scalar::Bytes))
    )));
    let ebs = d
        .message_by_name("k8s.io.api.core.v1.AWSElasticBlockStoreVolumeSource")
        .and_then(|i| d.messages.get(i));
    assert!(ebs.is_some_and(|m| m.fields.iter().any(|f| f.json == "volumeID")));
}

// ------------------------------------------------------------------ captured kubectl bodies

/// Fixture pairs: protobuf from kubectl 1.32, JSON from kubectl 1.27 for the same command.
macro_rules! fixture {
    ($name:literal) => {
        (
            $name,
            include_bytes!(concat!("../../tests/fixtures/protobuf/", $name, ".pb")).as_slice(),
            include_str!(concat!("../../tests/fixtures/protobuf/", $name, ".json")),
        )
    };
}

pub(crate) const FIXTURES: &[(&str, &[u8], &str)] = &[
    fixture!("namespace"),
    fixture!("configmap"),
    fixture!("configmap_binary"),
    fixture!("secret"),
    fixture!("secret_binary"),
    fixture!("deployment"),
    fixture!("deployment_multi"),
    fixture!("service"),
    fixture!("service_nodeport"),
    fixture!("serviceaccount"),
    fixture!("job"),
    fixture!("cronjob"),
    fixture!("role"),
    fixture!("clusterrole"),
    fixture!("rolebinding"),
    fixture!("clusterrolebinding"),
    fixture!("quota"),
    fixture!("poddisruptionbudget"),
    fixture!("priorityclass"),
    fixture!("ingress"),
    fixture!("token"),
    fixture!("can_i"),
];

const WHOAMI: &[u8] = include_bytes!("../../tests/fixtures/protobuf/whoami.pb");

/// Compares decoded protobuf with the JSON body, allowing only what differs between Go's
/// two encodings of one value: a JSON `null` (nil pointer without `omitempty`) that protobuf
/// cannot carry at all.
fn same_json(path: &str, proto: &Value, json: &Value, diffs: &mut Vec<String>) {
    match (proto, json) {
        (Value::Object(p), Value::Object(j)) => {
            for (k, jv) in j {
                match p.get(k) {
                    Some(pv) => same_json(&format!("{path}.{k}"), pv, jv, diffs),
                    None if jv.is_null() => {}
                    None => diffs.push(format!("{path}.{k}: missing, JSON has {jv}")),
                }
            }
            for (k, pv) in p {
                if !j.contains_key(k) {
                    diffs.push(format!("{path}.{k}: extra {pv}"));
                }
            }
        }
        (Value::Array(p), Value::Array(j)) if p.len() == j.len() => {
            for (i, (pv, jv)) in p.iter().zip(j).enumerate() {
                same_json(&format!("{path}[{i}]"), pv, jv, diffs);
            }
        }
        _ if proto == json => {}
        _ => diffs.push(format!("{path}: protobuf {proto} != JSON {json}")),
    }
}

#[test]
fn kubectl_protobuf_bodies_match_json_bodies() {
    let mut failures = Vec::new();
    for (name, pb, json_text) in FIXTURES {
        let json: Value = match serde_json::from_str(json_text) {
            Ok(v) => v,
            Err(e) => panic!("{name}.json: {e}"),
        };
        let decoded = match decode_object(pb) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let mut diffs = Vec::new();
        same_json(name, &decoded, &json, &mut diffs);
        if !diffs.is_empty() {
            failures.push(format!("{name}: {diffs:?}\n  decoded: {decoded}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn kubectl_exact_shapes() {
    // No `generateName: ""`, `generation: 0` etc. leak from gogo's always-written zeros.
    let (_, pb, _) = FIXTURES[1];
    assert_eq!(
        decode(pb),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c1", "creationTimestamp": null}, "data": {"a": "b"}})
    );
    // Pointer scalars keep explicit zeros (`--replicas=0`).
    let (_, pb, _) = FIXTURES[6];
    assert_eq!(decode(pb)["spec"]["replicas"], json!(0));
    // bytes → base64
    let (_, pb, _) = FIXTURES[4];
    assert_eq!(decode(pb)["data"], json!({"k": "AAH//mFiYwo="}));
    // IntOrString string form
    let (_, pb, _) = FIXTURES[17];
    assert_eq!(decode(pb)["spec"]["minAvailable"], json!("50%"));
    assert_eq!(
        decode(WHOAMI),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
               "metadata": {"creationTimestamp": null}, "status": {"userInfo": {}}})
    );
}

#[test]
fn decode_object_with_defaults_fills_missing_type() {
    let raw = msg(&[lf(1, &sf(1, "x"))]);
    let body = envelope("", "", &raw);
    assert_eq!(decode_object(&body), Err(ProtobufError::MissingKind));
    let v = decode_object_with_defaults(&body, "v1", "ConfigMap");
    assert_eq!(
        v,
        Ok(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}))
    );
}

// ------------------------------------------------------------------ hand-encoded messages

#[test]
fn well_known_types() {
    // Lease: MicroTime, int32 pointer zero, Time in metadata.
    let time = msg(&[vf(1, 1_795_307_472), vf(2, 123_456_789)]);
    let meta = msg(&[sf(1, "l"), lf(8, &time), vf(7, 0)]);
    let spec = msg(&[
        sf(1, "holder"),
        vf(2, 0),
        lf(3, &time),
        lf(4, &[]),
        vf(5, 3),
    ]);
    let v = decode(&envelope(
        "coordination.k8s.io/v1",
        "Lease",
        &msg(&[lf(1, &meta), lf(2, &spec)]),
    ));
    assert_eq!(
        v,
        json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l", "creationTimestamp": "2026-11-22T00:31:12Z"},
            "spec": {
                "holderIdentity": "holder",
                "leaseDurationSeconds": 0,
                "acquireTime": "2026-11-22T00:31:12.123456Z",
                "renewTime": null,
                "leaseTransitions": 3
            }
        })
    );
}

#[test]
fn go_zero_time_is_null() {
    let zero = msg(&[vf(1, (-62_135_596_800i64) as u64)]);
    let v = decode(&envelope("v1", "ConfigMap", &lf(1, &lf(8, &zero))));
    assert_eq!(v["metadata"]["creationTimestamp"], Value::Null);
    let epoch = msg(&[vf(1, 0)]);
    let v = decode(&envelope("v1", "ConfigMap", &lf(1, &lf(8, &epoch))));
    assert_eq!(
        v["metadata"]["creationTimestamp"],
        json!("1970-01-01T00:00:00Z")
    );
}

#[test]
fn durations() {
    // The Duration message itself.
    let d = match descriptors() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    let idx = d.message_by_name("k8s.io.apimachinery.pkg.apis.meta.v1.Duration");
    let idx = idx.unwrap_or(usize::MAX);
    let v = decode::decode_message(d, idx, &vf(1, 300_000_000_000), 0);
    assert_eq!(v, Ok(json!("5m0s")));
}

#[test]
fn int_or_string_and_quantity() {
    // Service port: targetPort as int and as string; quota hard as Quantity.
    let port_int = msg(&[vf(3, 80), lf(4, &msg(&[vf(1, 0), vf(2, 8080), sf(3, "")]))]);
    let port_str = msg(&[vf(3, 81), lf(4, &msg(&[vf(1, 1), vf(2, 0), sf(3, "http")]))]);
    let spec = msg(&[lf(1, &port_int), lf(1, &port_str)]);
    let v = decode(&envelope("v1", "Service", &lf(2, &spec)));
    assert_eq!(
        v["spec"]["ports"],
        json!([{"port": 80, "targetPort": 8080}, {"port": 81, "targetPort": "http"}])
    );
    let bad = msg(&[lf(1, &msg(&[vf(3, 80), lf(4, &vf(1, 7))]))]);
    assert_eq!(
        decode_object(&envelope("v1", "Service", &lf(2, &bad))),
        Err(ProtobufError::InvalidValue("impossible IntOrString.Type"))
    );
    let hard = msg(&[entry(1, "cpu", &sf(1, "500m")), entry(1, "pods", &[])]);
    let v = decode(&envelope("v1", "ResourceQuota", &lf(2, &hard)));
    assert_eq!(v["spec"]["hard"], json!({"cpu": "500m", "pods": "0"}));
}

#[test]
fn raw_extension_and_fields_v1() {
    // ControllerRevision.data holds JSON; managedFields[].fieldsV1 holds JSON.
    let fields = msg(&[
        sf(1, "kubectl"),
        sf(2, "Update"),
        sf(3, "v1"),
        sf(6, "FieldsV1"),
        lf(7, &sf(1, r#"{"f:data":{".":{}}}"#)),
    ]);
    let meta = msg(&[sf(1, "rev"), lf(17, &fields)]);
    let raw = msg(&[
        lf(1, &meta),
        lf(2, &sf(1, r#"{"spec":{"x":[1,2]}}"#)),
        vf(3, 4),
    ]);
    let v = decode(&envelope("apps/v1", "ControllerRevision", &raw));
    assert_eq!(
        v,
        json!({
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "rev", "managedFields": [{
                "manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}}}
            }]},
            "data": {"spec": {"x": [1, 2]}},
            "revision": 4
        })
    );
    // An embedded protobuf object in a RawExtension.
    let inner = envelope("v1", "ConfigMap", &lf(1, &sf(1, "in")));
    let raw = msg(&[lf(2, &lf(1, &inner))]);
    let v = decode(&envelope("apps/v1", "ControllerRevision", &raw));
    assert_eq!(
        v["data"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "in"}})
    );
    // Invalid embedded JSON is an error, not a panic.
    let raw = msg(&[lf(2, &lf(1, b"{nope"))]);
    assert!(matches!(
        decode_object(&envelope("apps/v1", "ControllerRevision", &raw)),
        Err(ProtobufError::EmbeddedJson(_))
    ));
}

#[test]
fn pod_inline_packed_empty_and_pointer_zero() {
    // Volume inlines VolumeSource; securityContext present but empty → {};
    // supplementalGroups packed and unpacked; hostNetwork false (omitempty) dropped;
    // terminationGracePeriodSeconds 0 (pointer) kept; unknown field 999 skipped.
    let volume = msg(&[sf(1, "data"), lf(2, &lf(2, &[]))]);
    let container = msg(&[sf(1, "c"), sf(2, "nginx")]);
    let mut groups = Vec::new();
    groups.extend(varint(1000));
    groups.extend(varint(2000));
    let sec_ctx = msg(&[lf(4, &groups), vf(4, 3000)]);
    let spec = msg(&[
        lf(1, &volume),
        lf(2, &container),
        vf(4, 0),
        vf(11, 0),
        lf(14, &sec_ctx),
        vf(999, 5),
        sf(1000, "ignored"),
    ]);
    let v = decode(&envelope(
        "v1",
        "Pod",
        &msg(&[lf(1, &sf(1, "p")), lf(2, &spec)]),
    ));
    assert_eq!(
        v["spec"],
        json!({
            "volumes": [{"name": "data", "emptyDir": {}}],
            "containers": [{"name": "c", "image": "nginx"}],
            "terminationGracePeriodSeconds": 0,
            "securityContext": {"supplementalGroups": [1000, 2000, 3000]}
        })
    );
    // An empty present message stays {}.
    let spec = msg(&[lf(14, &[])]);
    let v = decode(&envelope("v1", "Pod", &lf(2, &spec)));
    assert_eq!(v["spec"], json!({"securityContext": {}}));
}

#[test]
fn probes_inline_handler_and_negative_ints() {
    // Probe inlines ProbeHandler (httpGet with IntOrString port); int32 -1 is a 10-byte varint.
    let http_get = msg(&[sf(1, "/healthz"), lf(2, &msg(&[vf(1, 1), sf(3, "http")]))]);
    let probe = msg(&[lf(1, &lf(2, &http_get)), vf(2, (-1i64) as u64)]);
    let container = msg(&[sf(1, "c"), lf(10, &probe)]);
    let v = decode(&envelope("v1", "Pod", &lf(2, &lf(2, &container))));
    assert_eq!(
        v["spec"]["containers"][0]["livenessProbe"],
        json!({"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": -1})
    );
}

#[test]
fn named_slice_wrappers_are_arrays() {
    // SubjectAccessReview.spec.extra: map<string, ExtraValue{items}> → {"k": ["a", "b"]}
    let extra = entry(5, "scopes", &msg(&[sf(1, "a"), sf(1, "b")]));
    let spec = msg(&[sf(3, "alice"), extra]);
    let v = decode(&envelope(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        &lf(2, &spec),
    ));
    assert_eq!(
        v["spec"],
        json!({"user": "alice", "extra": {"scopes": ["a", "b"]}})
    );
}

#[test]
fn events_v1_and_meta_kinds() {
    let time = msg(&[vf(1, 1_795_307_472), vf(2, 5_000)]);
    let regarding = msg(&[sf(1, "Pod"), sf(2, "default"), sf(3, "p")]);
    let ev = msg(&[
        lf(1, &sf(1, "e")),
        lf(2, &time),
        sf(4, "kubelet"),
        sf(5, "node-1"),
        sf(7, "Started"),
        lf(8, &regarding),
        vf(15, 0),
    ]);
    let v = decode(&envelope("events.k8s.io/v1", "Event", &ev));
    assert_eq!(
        v,
        json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e"},
            "eventTime": "2026-11-22T00:31:12.000005Z",
            "reportingController": "kubelet", "reportingInstance": "node-1",
            "reason": "Started",
            "regarding": {"kind": "Pod", "namespace": "default", "name": "p"}
        })
    );
    // DeleteOptions sent by a typed apps/v1 client.
    let opts = msg(&[vf(1, 0), lf(2, &sf(1, "uid-1")), sf(4, "Foreground")]);
    let v = decode(&envelope("apps/v1", "DeleteOptions", &opts));
    assert_eq!(
        v,
        json!({"apiVersion": "apps/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
               "preconditions": {"uid": "uid-1"}, "propagationPolicy": "Foreground"})
    );
}

/// A protobuf `DeleteOptions` (Foreground, grace period 0, uid precondition `uid-1`), as a
/// typed client sends it.
pub(crate) fn delete_options_bytes() -> Vec<u8> {
    let opts = msg(&[vf(1, 0), lf(2, &sf(1, "uid-1")), sf(4, "Foreground")]);
    envelope("v1", "DeleteOptions", &opts)
}

#[test]
fn last_singular_value_wins_and_maps_take_zero_defaults() {
    let meta = msg(&[
        sf(1, "a"),
        sf(1, "b"),
        lf(11, &sf(1, "k")),
        lf(11, &sf(2, "v")),
    ]);
    let v = decode(&envelope("v1", "ConfigMap", &lf(1, &meta)));
    assert_eq!(
        v["metadata"],
        json!({"name": "b", "labels": {"k": "", "": "v"}})
    );
}

// ------------------------------------------------------------------ hostile input

#[test]
fn envelope_errors() {
    assert_eq!(decode_object(b""), Err(ProtobufError::MissingMagic));
    assert_eq!(
        decode_object(b"{\"kind\":1}"),
        Err(ProtobufError::MissingMagic)
    );
    assert_eq!(decode_object(MAGIC), Err(ProtobufError::Empty));
    assert_eq!(
        decode_object(&envelope("v1", "Nope", &[])),
        Err(ProtobufError::UnknownKind {
            api_version: "v1".to_owned(),
            kind: "Nope".to_owned()
        })
    );
    assert_eq!(
        decode_object(&envelope("", "ConfigMap", &[])),
        Err(ProtobufError::MissingVersion)
    );
    let mut gz = MAGIC.to_vec();
    gz.extend(msg(&[
        lf(1, &msg(&[sf(1, "v1"), sf(2, "ConfigMap")])),
        sf(3, "gzip"),
    ]));
    assert_eq!(
        decode_object(&gz),
        Err(ProtobufError::UnsupportedContentEncoding("gzip".to_owned()))
    );
    // wrong wire type for a known field
    assert!(matches!(
        decode_object(&envelope("v1", "ConfigMap", &vf(1, 3))),
        Err(ProtobufError::WireTypeMismatch { .. })
    ));
    // bad varint inside the object
    let mut bad = envelope("v1", "ConfigMap", &[0x08, 0xff]);
    assert!(decode_object(&bad).is_err());
    bad.truncate(bad.len() - 1);
    assert!(decode_object(&bad).is_err());
    // a length past the end
    let mut past = MAGIC.to_vec();
    past.extend([0x12, 0x40, 0x0a]);
    assert_eq!(decode_object(&past), Err(ProtobufError::LengthOutOfBounds));
}

#[test]
fn every_truncation_of_every_fixture_is_clean() {
    for (name, pb, _) in FIXTURES {
        for len in 0..pb.len() {
            let cut = pb.get(..len).unwrap_or_default();
            // Truncations may still be valid messages; they must never panic.
            let _ = decode_object(cut);
        }
        assert!(decode_object(pb).is_ok(), "{name}");
    }
}

#[test]
fn random_mutations_never_panic() {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (_, pb, _) in FIXTURES {
        for _ in 0..400 {
            let mut bytes = pb.to_vec();
            let edits = 1 + next() % 4;
            for _ in 0..edits {
                let len = bytes.len() as u64;
                let pos = usize::try_from(next() % len.max(1)).unwrap_or(0);
                let byte = (next() & 0xff) as u8;
                match next() % 3 {
                    0 => {
                        if let Some(b) = bytes.get_mut(pos) {
                            *b = byte;
                        }
                    }
                    1 => bytes.insert(pos.min(bytes.len()), byte),
                    _ => {
                        if pos < bytes.len() {
                            bytes.remove(pos);
                        }
                    }
                }
            }
            let _ = decode_object(&bytes);
        }
    }
}

#[test]
fn deep_nesting_is_rejected() {
    // RawExtension lets objects nest without bound: ControllerRevision.data → envelope → ...
    let mut body = envelope("v1", "ConfigMap", &[]);
    for _ in 0..200 {
        body = envelope("apps/v1", "ControllerRevision", &lf(2, &lf(1, &body)));
    }
    assert_eq!(decode_object(&body), Err(ProtobufError::TooDeep(MAX_DEPTH)));
    // A modest nesting is fine.
    let mut body = envelope("v1", "ConfigMap", &[]);
    for _ in 0..5 {
        body = envelope("apps/v1", "ControllerRevision", &lf(2, &lf(1, &body)));
    }
    assert!(decode_object(&body).is_ok());
}

#[test]
fn many_tiny_messages_are_linear() {
    // 100k empty containers: decoded without per-instance schema-sized allocations.
    let mut spec = Vec::new();
    for _ in 0..100_000 {
        spec.extend(lf(2, &[]));
    }
    let v = decode(&envelope("v1", "Pod", &lf(2, &spec)));
    assert_eq!(
        v["spec"]["containers"].as_array().map(Vec::len),
        Some(100_000)
    );
}

#[test]
fn content_type_detection() {
    assert!(is_protobuf_content_type(
        "application/vnd.kubernetes.protobuf"
    ));
    assert!(is_protobuf_content_type(
        "application/vnd.kubernetes.protobuf; charset=utf-8"
    ));
    assert!(is_protobuf_content_type(
        "Application/Vnd.Kubernetes.Protobuf"
    ));
    assert!(!is_protobuf_content_type("application/json"));
    assert!(!is_protobuf_content_type(""));
}
