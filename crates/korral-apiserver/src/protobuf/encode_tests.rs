//! Tests of the protobuf encoder: byte-exact against kubectl's bodies, round trips of stored
//! objects, every special type, and malformed JSON shapes.

use serde_json::{Value, json};

use super::tests::FIXTURES;
use super::*;

/// Encodes, panicking with the error (tests only).
fn encode(v: &Value) -> Vec<u8> {
    match encode_object(v) {
        Ok(b) => b,
        Err(e) => panic!("encode failed: {e}\n{v}"),
    }
}

/// Decodes, panicking with the error (tests only).
fn decode(bytes: &[u8]) -> Value {
    match decode_object(bytes) {
        Ok(v) => v,
        Err(e) => panic!("decode failed: {e}"),
    }
}

/// `decode(encode(v))`.
fn round_trip(v: &Value) -> Value {
    decode(&encode(v))
}

#[test]
fn kubectl_bodies_are_reproduced_byte_for_byte() {
    let mut failures = Vec::new();
    for (name, pb, _) in FIXTURES {
        let decoded = decode(pb);
        let encoded = encode(&decoded);
        if encoded != *pb {
            let at = encoded
                .iter()
                .zip(pb.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(encoded.len().min(pb.len()));
            failures.push(format!(
                "{name}: {} bytes vs kubectl's {}, first difference at {at}",
                encoded.len(),
                pb.len()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn kubectl_json_bodies_round_trip_to_the_protobuf_decoding() {
    for (name, pb, json_text) in FIXTURES {
        let json: Value = serde_json::from_str(json_text).expect("fixture json");
        // kubectl 1.27's JSON has `null`s protobuf cannot carry; the decoding of its own
        // protobuf body is the normal form to compare with.
        assert_eq!(round_trip(&json), decode(pb), "{name}");
    }
}

/// Objects as the server stores and serves them.
fn stored_objects() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "5",
                "generation": 1, "creationTimestamp": "2026-01-02T03:04:05Z",
                "deletionTimestamp": "2026-01-02T03:05:05Z", "deletionGracePeriodSeconds": 0,
                "labels": {"b": "2", "a": "1", "": "empty"}, "annotations": {"x": ""},
                "finalizers": ["f"],
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                    "uid": "u0", "controller": true, "blockOwnerDeletion": true}],
                "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                    "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:a": {}}}}}]},
            "spec": {
                "volumes": [
                    {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420,
                        "items": [{"key": "k", "path": "p", "mode": 256}]}},
                    {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi", "medium": "Memory"}},
                    {"name": "token", "projected": {"defaultMode": 420, "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"downwardAPI": {"items": [{"path": "namespace",
                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}},
                    {"name": "host", "hostPath": {"path": "/data", "type": ""}}],
                "containers": [{"name": "c", "image": "nginx", "command": ["sh", "-c"],
                    "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
                    "env": [{"name": "A", "value": "1"},
                        {"name": "B", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m"}},
                    "livenessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"},
                        "initialDelaySeconds": 3, "timeoutSeconds": 1, "periodSeconds": 10,
                        "successThreshold": 1, "failureThreshold": 3},
                    "readinessProbe": {"tcpSocket": {"port": 8080}, "timeoutSeconds": 1,
                        "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                    "securityContext": {"runAsUser": 0, "privileged": false, "capabilities": {"drop": ["ALL"]}},
                    "volumeMounts": [{"name": "cfg", "mountPath": "/cfg", "readOnly": true}],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "serviceAccountName": "default", "nodeName": "n1",
                "securityContext": {"supplementalGroups": [1, 2, -3]},
                "schedulerName": "default-scheduler", "priority": 0, "enableServiceLinks": true,
                "preemptionPolicy": "PreemptLowerPriority",
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}],
                "startTime": "2026-01-02T03:04:06Z", "qosClass": "Burstable",
                "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": "2026-01-02T03:04:07Z"}],
                "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "image": "nginx",
                    "imageID": "", "started": true,
                    "state": {"running": {"startedAt": "2026-01-02T03:04:07Z"}},
                    "lastState": {}}]}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "default", "generation": 2,
                "creationTimestamp": "2026-01-02T03:04:05Z",
                "annotations": {"deployment.kubernetes.io/revision": "1"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"},
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
                "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {}}]}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
                "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
            "status": {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3,
                "readyReplicas": 3, "availableReplicas": 3,
                "conditions": [{"type": "Available", "status": "True",
                    "lastUpdateTime": "2026-01-02T03:04:05Z",
                    "lastTransitionTime": "2026-01-02T03:04:05Z",
                    "reason": "MinimumReplicasAvailable", "message": "ok"}]}}),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "default", "creationTimestamp": "2026-01-02T03:04:05Z"},
            "spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http", "nodePort": 30080},
                    {"name": "x", "protocol": "UDP", "port": 53, "targetPort": 5353}],
                "selector": {"app": "d"}, "sessionAffinity": "None", "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack", "externalTrafficPolicy": "Cluster",
                "internalTrafficPolicy": "Cluster"},
            "status": {"loadBalancer": {}}}),
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "bin", "namespace": "default", "creationTimestamp": "2026-01-02T03:04:05Z"},
            "type": "Opaque", "immutable": false,
            "data": {"k": "AAH//mFiYwo=", "empty": ""}}),
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "creationTimestamp": "2026-01-02T03:04:05Z",
                "labels": {"kubernetes.io/hostname": "n1"}},
            "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"],
                "taints": [{"key": "k", "effect": "NoSchedule", "timeAdded": "2026-01-02T03:04:05Z"}]},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "allocatable": {"cpu": "3800m", "memory": "7Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True",
                    "lastHeartbeatTime": "2026-01-02T03:04:05Z",
                    "lastTransitionTime": "2026-01-02T03:04:05Z", "reason": "KubeletReady",
                    "message": "ready"}],
                "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b",
                    "kernelVersion": "6", "osImage": "linux", "containerRuntimeVersion": "containerd://2",
                    "kubeletVersion": "v1.36.0", "kubeProxyVersion": "", "operatingSystem": "linux",
                    "architecture": "amd64"}}}),
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "default", "creationTimestamp": "2026-01-02T03:04:05Z"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "minReplicas": 1, "maxReplicas": 5,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
                    "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}},
            "status": {"currentReplicas": 1, "desiredReplicas": 1,
                "lastScaleTime": "2026-01-02T03:04:05Z",
                "currentMetrics": null}}),
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2026-01-02T03:04:05.123456Z", "reportingController": "c",
            "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
            "regarding": {"kind": "Pod", "name": "p"}, "deprecatedCount": 3, "deprecatedSource": {},
            "deprecatedFirstTimestamp": null}),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "metadata": {"creationTimestamp": null}, "spec": {"token": "t", "audiences": ["a"]},
            "status": {"authenticated": true, "user": {"username": "u", "uid": "1",
                "groups": ["g"], "extra": {"scopes": ["x", "y"], "empty": []}}}}),
        json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "r", "namespace": "default"},
            "data": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}},
            "revision": 2}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l", "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40,
                "renewTime": "2026-01-02T03:04:05.000001Z"}}),
        json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
            "message": "pods \"x\" not found", "reason": "NotFound",
            "details": {"name": "x", "kind": "pods",
                "causes": [{"reason": "FieldValueInvalid", "message": "m", "field": "spec"}]},
            "code": 404}),
    ]
}

/// Drops what Go's JSON encoder would not write: `null`s and empty objects of pointer
/// fields the decoder reports as absent.
fn normal(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), normal(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normal).collect()),
        other => other.clone(),
    }
}

#[test]
fn stored_objects_round_trip() {
    for object in stored_objects() {
        let back = round_trip(&object);
        assert_eq!(normal(&back), normal(&object), "{}", object["kind"]);
        // And the encoding is a fixed point.
        assert_eq!(encode(&back), encode(&object), "{}", object["kind"]);
    }
}

#[test]
fn envelope_is_upstreams() {
    let bytes =
        encode(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}));
    assert!(bytes.starts_with(b"k8s\0\x0a\x0f\x0a\x02v1\x12\x09Namespace\x12"));
    // contentEncoding and contentType are written empty.
    assert!(bytes.ends_with(b"\x1a\x00\x22\x00"));
    assert_eq!(
        decode(&bytes),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a",
            "creationTimestamp": null}, "spec": {}, "status": {}})
    );
    assert!(matches!(
        encode_object(&json!({"kind": "Namespace"})),
        Err(ProtobufError::MissingTypeMeta)
    ));
    assert!(matches!(
        encode_object(&json!({"apiVersion": "example.com/v1", "kind": "Widget"})),
        Err(ProtobufError::UnknownKind { .. })
    ));
}

#[test]
fn special_types() {
    // Time keeps whole seconds; MicroTime microseconds; Go's zero time is empty.
    let lease = |renew: &str, acquire: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {
            "name": "l", "creationTimestamp": "2026-01-02T03:04:05.9Z"},
            "spec": {"renewTime": renew, "acquireTime": acquire}})
    };
    let back = round_trip(&lease(
        "2026-01-02T03:04:05.1234567Z",
        "2026-01-02T05:04:05+02:00",
    ));
    assert_eq!(
        back["metadata"]["creationTimestamp"],
        "2026-01-02T03:04:05Z"
    );
    assert_eq!(back["spec"]["renewTime"], "2026-01-02T03:04:05.123456Z");
    assert_eq!(back["spec"]["acquireTime"], "2026-01-02T03:04:05.000000Z");
    let back = round_trip(&lease("0001-01-01T00:00:00Z", "1969-12-31T23:59:59.5Z"));
    assert_eq!(back["spec"]["renewTime"], Value::Null);
    assert_eq!(back["spec"]["acquireTime"], "1969-12-31T23:59:59.500000Z");

    // Durations, IntOrString (negative numbers too), Quantity from a number.
    let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "resources": {"limits": {"cpu": 2}},
                "livenessProbe": {"httpGet": {"port": -1}}}]}}}}}});
    let back = round_trip(&cj);
    let c = &back["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["cpu"], "2");
    assert_eq!(c["livenessProbe"]["httpGet"]["port"], -1);
    let flow = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "f"}, "spec": {"priorityLevelConfiguration": {"name": "p"}}});
    assert_eq!(
        round_trip(&flow)["spec"]["priorityLevelConfiguration"]["name"],
        "p"
    );
    let token = json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": {"name": "d"}, "spec": {"tokenRequests": [{"audience": "a", "expirationSeconds": 600}]}});
    assert_eq!(
        round_trip(&token)["spec"]["tokenRequests"][0]["expirationSeconds"],
        600
    );

    // RawExtension and FieldsV1 carry their JSON; bytes are base64; maps come out sorted.
    let cr = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r",
        "labels": {"z": "1", "a": "2", "m": "3"}}, "data": [1, "two", {"three": null}], "revision": 1});
    let bytes = encode(&cr);
    let back = decode(&bytes);
    assert_eq!(back["data"], json!([1, "two", {"three": null}]));
    let text = String::from_utf8_lossy(&bytes);
    let (a, m, z) = (text.find("\x01a"), text.find("\x01m"), text.find("\x01z"));
    assert!(a < m && m < z, "map keys sorted: {a:?} {m:?} {z:?}");
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"k": "AAH//mFiYwo=", "nopad": "YQ", "nl": "YW\nJj"}});
    let back = round_trip(&secret);
    assert_eq!(
        back["data"],
        json!({"k": "AAH//mFiYwo=", "nopad": "YQ==", "nl": "YWJj"})
    );
}

#[test]
fn absent_and_zero_fields() {
    // A pointer field that is zero is kept; an absent one stays absent; a non-pointer
    // scalar without omitempty comes back as its zero value.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p",
        "deletionGracePeriodSeconds": 0}, "spec": {"containers": [{"name": "c",
            "ports": [{"containerPort": 80}]}]}});
    let back = round_trip(&pod);
    assert_eq!(back["metadata"]["deletionGracePeriodSeconds"], 0);
    assert!(back["spec"].get("terminationGracePeriodSeconds").is_none());
    assert!(back["metadata"].get("generation").is_none());
    assert_eq!(
        back["spec"]["containers"][0]["ports"][0]["containerPort"],
        80
    );
    assert_eq!(back["metadata"]["creationTimestamp"], Value::Null);
    // Unknown members are dropped.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "bogus": 1},
        "data": {"a": "b"}, "extra": {"x": 1}});
    let back = round_trip(&cm);
    assert!(back.get("extra").is_none());
    assert!(back["metadata"].get("bogus").is_none());
    assert_eq!(back["data"], json!({"a": "b"}));
}

#[test]
fn lists_and_watch_events() {
    let items = [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}),
    ];
    let meta = json!({"resourceVersion": "12", "continue": "c", "remainingItemCount": 3});
    let bytes = encode_list("v1", "ConfigMapList", &meta, items.iter()).expect("list");
    let list = decode(&bytes);
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["metadata"], meta);
    assert_eq!(list["items"][0]["data"], json!({"k": "v"}));
    assert_eq!(list["items"][1]["metadata"]["name"], "b");
    let empty = encode_list("v1", "ConfigMapList", &json!({}), std::iter::empty()).expect("empty");
    assert_eq!(decode(&empty)["metadata"], json!({}));
    assert!(encode_list("v1", "NoSuchList", &json!({}), std::iter::empty()).is_err());

    let frame = encode_watch_event("ADDED", &items[0]).expect("event");
    let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
    assert_eq!(len, frame.len() - 4);
    // The event itself is bare (no `k8s\0`); its object is a full envelope.
    assert_eq!(frame[4], 0x0a);
    let event = decode_watch_event(&frame[4..]).expect("decode event");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["data"], json!({"k": "v"}));
    assert_eq!(event["object"]["kind"], "ConfigMap");
    let bookmark = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "resourceVersion": "9", "annotations": {"k8s.io/initial-events-end": "true"}}});
    let frame = encode_watch_event("BOOKMARK", &bookmark).expect("bookmark");
    let event = decode_watch_event(&frame[4..]).expect("decode bookmark");
    assert_eq!(event["object"]["metadata"]["resourceVersion"], "9");
    let partial = json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
        "metadata": {"name": "a", "labels": {"x": "y"}}});
    assert_eq!(
        round_trip(&partial)["metadata"]["labels"],
        json!({"x": "y"})
    );
    let partial_list = encode_list(
        "meta.k8s.io/v1",
        "PartialObjectMetadataList",
        &json!({"resourceVersion": "1"}),
        [&partial],
    )
    .expect("partial list");
    assert_eq!(decode(&partial_list)["items"][0]["metadata"]["name"], "a");
}

#[test]
fn malformed_shapes_are_errors() {
    let pod = |spec: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec});
    let bad = [
        pod(json!({"containers": "nope"})),
        pod(json!({"containers": [{"name": 1}]})),
        pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]})),
        pod(
            json!({"containers": [{"name": "c", "ports": [{"containerPort": 4_294_967_296_u64}]}]}),
        ),
        pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 1.5}]}]})),
        pod(json!({"containers": [{"name": "c", "stdin": "yes"}]})),
        pod(json!({"nodeSelector": ["a"]})),
        pod(json!({"containers": [{"name": "c", "livenessProbe": {"httpGet": {"port": true}}}]})),
        pod(json!({"containers": [{"name": "c", "resources": {"limits": {"cpu": {}}}}]})),
        pod(json!({"activeDeadlineSeconds": 1e30})),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"creationTimestamp": "yesterday"}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": "p"}),
        json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": 1}}),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"renewTime": 5}}),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "status": {"user": {"extra": {"a": "not an array"}}}}),
        json!({"apiVersion": "v1", "kind": "Pod", "spec": {"os": {"name": null}, "overhead": []}}),
    ];
    for object in bad {
        assert!(encode_object(&object).is_err(), "accepted {object}");
    }
    // Nesting is bounded for hostile JSON too.
    let mut deep = json!({});
    for _ in 0..200 {
        deep = json!({"data": deep});
    }
    let cr = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "data": deep});
    assert!(encode_object(&cr).is_ok(), "embedded JSON is opaque");
}
