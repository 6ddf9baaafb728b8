//! Leases, Events (core `v1` and `events.k8s.io/v1`), Endpoints and Nodes are validated as
//! upstream's `ValidateLease`, `ValidateEventCreate`/`ValidateEventUpdate`, `ValidateEndpoints`
//! and `ValidateNode`/`ValidateNodeUpdate` do, through a `kube::Client`: the valid objects are
//! stored (as the reference captures show them), the invalid ones refused with a 422 `Invalid`
//! Status carrying upstream's causes, and nothing refused is stored.

mod common;

use common::*;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Endpoints, Node};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// Sends `body` with `method` to `path` through the client: the status code and the answer.
async fn send(env: &TestEnv, method: &str, path: &str, body: &Value) -> (u16, Value) {
    raw(
        &env.client(),
        method,
        path,
        Some("application/json"),
        body.to_string().into_bytes(),
    )
    .await
}

/// Checks a 422 `Invalid` answer as [`common::assert_invalid`], each cause written
/// `(reason, field, message)`.
fn assert_invalid(answer: &(u16, Value), message: &str, causes: &[(&str, &str, &str)]) {
    let causes: Vec<(&str, &str, &str)> = causes.iter().map(|&(r, f, m)| (r, m, f)).collect();
    common::assert_invalid(answer, message, &causes);
}

async fn absent(env: &TestEnv, path: &str) {
    let (code, body) = raw(&env.client(), "GET", path, None, Vec::new()).await;
    assert_eq!(code, 404, "{path}: {body}");
}

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const CORE_EVENTS: &str = "/api/v1/namespaces/default/events";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";
const ENDPOINTS: &str = "/api/v1/namespaces/default/endpoints";
const NODES: &str = "/api/v1/nodes";

fn lease(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn leases_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let leases: Api<Lease> = Api::namespaced(env.client(), "default");
    // create-lease.json
    let ok: Lease = serde_json::from_value(lease(
        "lease1",
        json!({"holderIdentity": "me", "leaseDurationSeconds": 15}),
    ))
    .expect("lease");
    let created = leases
        .create(&PostParams::default(), &ok)
        .await
        .expect("create");
    let spec = created.spec.clone().expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("me"));
    assert_eq!(spec.lease_duration_seconds, Some(15));

    let bad = send(
        &env,
        "POST",
        LEASES,
        &lease(
            "bad",
            json!({"leaseDurationSeconds": 0, "leaseTransitions": -1, "strategy": "Newest", "preferredHolder": "x"}),
        ),
    )
    .await;
    assert_invalid(
        &bad,
        "Lease.coordination.k8s.io \"bad\" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0, spec.strategy.strategy: Unsupported value: \"Newest\": supported values: \"OldestEmulationVersion\"]",
        &[
            (
                "FieldValueInvalid",
                "spec.leaseDurationSeconds",
                "Invalid value: 0: must be greater than 0",
            ),
            (
                "FieldValueInvalid",
                "spec.leaseTransitions",
                "Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                "FieldValueNotSupported",
                "spec.strategy.strategy",
                "Unsupported value: \"Newest\": supported values: \"OldestEmulationVersion\"",
            ),
        ],
    );
    absent(&env, &format!("{LEASES}/bad")).await;

    // Updates are held to the same rules: a preferred holder needs a strategy.
    let patch = json!({"spec": {"preferredHolder": "other"}});
    let answer = raw(
        &env.client(),
        "PATCH",
        &format!("{LEASES}/lease1"),
        Some("application/merge-patch+json"),
        patch.to_string().into_bytes(),
    )
    .await;
    assert_invalid(
        &answer,
        "Lease.coordination.k8s.io \"lease1\" is invalid: spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined",
        &[(
            "FieldValueForbidden",
            "spec.preferredHolder",
            "Forbidden: may only be specified if `strategy` is defined",
        )],
    );
    let renewed = leases
        .patch(
            "lease1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"leaseTransitions": 1, "strategy": "OldestEmulationVersion", "preferredHolder": "other"}})),
        )
        .await
        .expect("a valid renewal");
    assert_eq!(renewed.spec.and_then(|s| s.lease_transitions), Some(1));
}

fn core_event(name: &str, extra: Value) -> Value {
    let mut event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": "x", "apiVersion": "v1"},
        "reason": "Tested", "message": "hello", "source": {"component": "example.com/ctl"}, "type": "Normal",
    });
    if let (Some(map), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
        map.extend(extra.clone());
    }
    event
}

fn v1_event(name: &str, extra: Value) -> Value {
    let mut event = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-11-23T10:00:00.000000Z",
        "reportingController": "example.com/ctl", "reportingInstance": "i1",
        "action": "Test", "reason": "Tested",
        "regarding": {"kind": "ConfigMap", "namespace": "default", "name": "x", "apiVersion": "v1"},
        "note": "hello", "type": "Normal",
    });
    if let (Some(map), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
        map.extend(extra.clone());
    }
    event
}

const QUALIFIED: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

#[tokio::test]
async fn core_events_follow_the_legacy_rules() {
    let env = TestEnv::start().await.expect("env");
    // create-event-corev1.json; core v1 names need only be path segments.
    let (code, body) = send(&env, "POST", CORE_EVENTS, &core_event("ev2", json!({}))).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["source"], json!({"component": "example.com/ctl"}));
    let (code, body) = send(
        &env,
        "POST",
        CORE_EVENTS,
        &core_event("Odd_Name:1", json!({"count": 3})),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    let elsewhere =
        json!({"involvedObject": {"kind": "ConfigMap", "namespace": "other", "name": "x"}});
    assert_invalid(
        &send(
            &env,
            "POST",
            CORE_EVENTS,
            &core_event("mismatch", elsewhere),
        )
        .await,
        "Event \"mismatch\" is invalid: involvedObject.namespace: Invalid value: \"other\": does not match event.namespace",
        &[(
            "FieldValueInvalid",
            "involvedObject.namespace",
            "Invalid value: \"other\": does not match event.namespace",
        )],
    );
    // A new-style event (with an event time) names its reporter through core v1's field.
    let new_style =
        json!({"eventTime": "2026-11-23T10:00:00.000000Z", "message": "m".repeat(1025)});
    let answer = send(
        &env,
        "POST",
        CORE_EVENTS,
        &core_event("new-style", new_style),
    )
    .await;
    let qualified = format!("Invalid value: \"\": {QUALIFIED}");
    assert_invalid(
        &answer,
        &format!(
            "Event \"new-style\" is invalid: [reportingComponent: Required value, reportingComponent: Invalid value: \"\": name part must be non-empty, reportingComponent: {qualified}, reportingInstance: Required value, action: Required value, message: Invalid value: \"\": can have at most 1024 characters]"
        ),
        &[
            ("FieldValueRequired", "reportingComponent", "Required value"),
            (
                "FieldValueInvalid",
                "reportingComponent",
                "Invalid value: \"\": name part must be non-empty",
            ),
            ("FieldValueInvalid", "reportingComponent", &qualified),
            ("FieldValueRequired", "reportingInstance", "Required value"),
            ("FieldValueRequired", "action", "Required value"),
            (
                "FieldValueInvalid",
                "message",
                "Invalid value: \"\": can have at most 1024 characters",
            ),
        ],
    );
    absent(&env, &format!("{CORE_EVENTS}/new-style")).await;

    // Through core v1 an event may be updated freely (count bumps, new messages).
    let (code, mut stored) = raw(
        &env.client(),
        "GET",
        &format!("{CORE_EVENTS}/ev2"),
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{stored}");
    stored["count"] = json!(2);
    stored["message"] = json!("hello again");
    let (code, body) = send(&env, "PUT", &format!("{CORE_EVENTS}/ev2"), &stored).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["count"], 2);
}

#[tokio::test]
async fn events_k8s_io_follow_the_strict_rules() {
    let env = TestEnv::start().await.expect("env");
    // create-event-eventsv1.json
    let (code, body) = send(&env, "POST", EVENTS, &v1_event("ev1", json!({}))).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["eventTime"], "2026-11-23T10:00:00.000000Z");

    let (code, body) = send(&env, "POST", EVENTS, &v1_event("Odd_Name", json!({}))).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["field"], "metadata.name",
        "{body}"
    );

    let broken = json!({
        "eventTime": null, "type": "Odd", "reportingInstance": "i".repeat(129),
        "deprecatedCount": 2, "deprecatedSource": {"component": "c"},
        "series": {"count": 1},
        "regarding": {"kind": "Pod", "namespace": "other", "name": "p"},
    });
    let answer = send(&env, "POST", EVENTS, &v1_event("broken", broken)).await;
    assert_invalid(
        &answer,
        "Event.events.k8s.io \"broken\" is invalid: [involvedObject.namespace: Invalid value: \"other\": does not match event.namespace, series.count: Invalid value: \"\": should be at least 2, series.lastObservedTime: Required value, eventTime: Required value, type: Invalid value: \"\": has invalid value: Odd, count: Invalid value: \"\": needs to be unset, source: Invalid value: \"\": needs to be unset]",
        &[
            (
                "FieldValueInvalid",
                "involvedObject.namespace",
                "Invalid value: \"other\": does not match event.namespace",
            ),
            (
                "FieldValueInvalid",
                "series.count",
                "Invalid value: \"\": should be at least 2",
            ),
            (
                "FieldValueRequired",
                "series.lastObservedTime",
                "Required value",
            ),
            ("FieldValueRequired", "eventTime", "Required value"),
            (
                "FieldValueInvalid",
                "type",
                "Invalid value: \"\": has invalid value: Odd",
            ),
            (
                "FieldValueInvalid",
                "count",
                "Invalid value: \"\": needs to be unset",
            ),
            (
                "FieldValueInvalid",
                "source",
                "Invalid value: \"\": needs to be unset",
            ),
        ],
    );
    absent(&env, &format!("{EVENTS}/broken")).await;

    let limits = json!({"reportingController": "", "reportingInstance": "i".repeat(129), "reason": "r".repeat(129), "note": "n".repeat(1025)});
    let answer = send(&env, "POST", EVENTS, &v1_event("limits", limits)).await;
    let qualified = format!("Invalid value: \"\": {QUALIFIED}");
    assert_invalid(
        &answer,
        &format!(
            "Event.events.k8s.io \"limits\" is invalid: [reportingController: Required value, reportingController: Invalid value: \"\": name part must be non-empty, reportingController: {qualified}, reportingInstance: Invalid value: \"\": can have at most 128 characters, reason: Invalid value: \"\": can have at most 128 characters, message: Invalid value: \"\": can have at most 1024 characters]"
        ),
        &[
            (
                "FieldValueRequired",
                "reportingController",
                "Required value",
            ),
            (
                "FieldValueInvalid",
                "reportingController",
                "Invalid value: \"\": name part must be non-empty",
            ),
            ("FieldValueInvalid", "reportingController", &qualified),
            (
                "FieldValueInvalid",
                "reportingInstance",
                "Invalid value: \"\": can have at most 128 characters",
            ),
            (
                "FieldValueInvalid",
                "reason",
                "Invalid value: \"\": can have at most 128 characters",
            ),
            (
                "FieldValueInvalid",
                "message",
                "Invalid value: \"\": can have at most 1024 characters",
            ),
        ],
    );

    // A series bump (what event recorders send) is accepted; the event's identity is not.
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(env.client(), "default");
    let bumped = events
        .patch(
            "ev1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"series": {"count": 2, "lastObservedTime": "2026-11-23T10:00:05.000000Z"}}),
            ),
        )
        .await
        .expect("series bump");
    assert_eq!(bumped.series.map(|s| s.count), Some(2));
    let answer = raw(
        &env.client(),
        "PATCH",
        &format!("{EVENTS}/ev1"),
        Some("application/merge-patch+json"),
        json!({"note": "changed", "series": {"count": 1}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_invalid(
        &answer,
        "Event.events.k8s.io \"ev1\" is invalid: [series.count: Invalid value: \"\": should be at least 2, message: Invalid value: \"changed\": field is immutable]",
        &[
            (
                "FieldValueInvalid",
                "series.count",
                "Invalid value: \"\": should be at least 2",
            ),
            (
                "FieldValueInvalid",
                "message",
                "Invalid value: \"changed\": field is immutable",
            ),
        ],
    );
}

#[tokio::test]
async fn endpoints_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let endpoints: Api<Endpoints> = Api::namespaced(env.client(), "default");
    let ok: Endpoints = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "subsets": [{
            "addresses": [{"ip": "10.0.0.1", "nodeName": "korral-node", "hostname": "web-0"}],
            "notReadyAddresses": [{"ip": "10.0.0.2"}],
            "ports": [{"name": "http", "port": 80}, {"name": "metrics", "port": 9090, "protocol": "UDP"}],
        }],
    }))
    .expect("endpoints");
    let created = endpoints
        .create(&PostParams::default(), &ok)
        .await
        .expect("create");
    let ports = created.subsets.expect("subsets")[0]
        .ports
        .clone()
        .expect("ports");
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"), "defaulted");

    let bad = json!({
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "bad"},
        "subsets": [
            {"addresses": [{"ip": "127.0.0.1", "nodeName": "Node_1"}], "ports": [{"port": 80}, {"name": "b", "port": 0}]},
            {"ports": [{"port": 81}]},
        ],
    });
    let node_msg = "Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    let answer = send(&env, "POST", ENDPOINTS, &bad).await;
    assert_invalid(
        &answer,
        &format!(
            "Endpoints \"bad\" is invalid: [subsets[0].addresses[0].nodeName: {node_msg}, subsets[0].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128), subsets[0].ports[0].name: Required value, subsets[0].ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive, subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`]"
        ),
        &[
            (
                "FieldValueInvalid",
                "subsets[0].addresses[0].nodeName",
                node_msg,
            ),
            (
                "FieldValueInvalid",
                "subsets[0].addresses[0].ip",
                "Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            ),
            (
                "FieldValueRequired",
                "subsets[0].ports[0].name",
                "Required value",
            ),
            (
                "FieldValueInvalid",
                "subsets[0].ports[1].port",
                "Invalid value: 0: must be between 1 and 65535, inclusive",
            ),
            (
                "FieldValueRequired",
                "subsets[1]",
                "Required value: must specify `addresses` or `notReadyAddresses`",
            ),
        ],
    );
    absent(&env, &format!("{ENDPOINTS}/bad")).await;

    // Updates are validated too.
    let answer = raw(
        &env.client(),
        "PATCH",
        &format!("{ENDPOINTS}/web"),
        Some("application/merge-patch+json"),
        json!({"subsets": [{"addresses": [{"ip": "not-an-ip"}]}]})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_invalid(
        &answer,
        "Endpoints \"web\" is invalid: [subsets[0].addresses[0].ip: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff), subsets[0].addresses[0].ip: Invalid value: \"not-an-ip\": must be a valid IP address]",
        &[
            (
                "FieldValueInvalid",
                "subsets[0].addresses[0].ip",
                "Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ),
            (
                "FieldValueInvalid",
                "subsets[0].addresses[0].ip",
                "Invalid value: \"not-an-ip\": must be a valid IP address",
            ),
        ],
    );
}

#[tokio::test]
async fn nodes_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let nodes: Api<Node> = Api::all(env.client());
    // Nodes may carry their status on create; quantities are stored canonical and allocatable
    // defaults to the capacity.
    let ok: Node = serde_json::from_value(json!({
        "metadata": {"name": "worker-1"},
        "spec": {"podCIDR": "10.244.1.0/24", "providerID": "sim://worker-1",
                 "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "4", "memory": "1024Mi", "pods": "110"},
                   "addresses": [{"type": "InternalIP", "address": "172.18.0.3"}]},
    }))
    .expect("node");
    let created = nodes
        .create(&PostParams::default(), &ok)
        .await
        .expect("create");
    let spec = created.spec.clone().expect("spec");
    assert_eq!(spec.pod_cidrs, Some(vec!["10.244.1.0/24".to_string()]));
    let status = serde_json::to_value(created.status.clone().expect("status")).expect("json");
    assert_eq!(status["capacity"]["memory"], "1Gi", "{status}");
    assert_eq!(status["allocatable"], status["capacity"], "{status}");

    let bad = json!({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "bad"},
        "spec": {"podCIDRs": ["10.0.0.0/24", "10.1.0.0/24"],
                 "taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "Never"}]},
        "status": {"capacity": {"pods": "1500m"}},
    });
    let answer = send(&env, "POST", NODES, &bad).await;
    let dup = "Duplicate value: core.Taint{Key:\"a\", Value:\"\", Effect:\"NoSchedule\", TimeAdded:(*v1.Time)(nil)}: taints must be unique by key and effect pair";
    let effect = "Unsupported value: \"Never\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"";
    let cidrs = "Invalid value: []string{\"10.0.0.0/24\", \"10.1.0.0/24\"}: may specify no more than one CIDR for each IP family";
    assert_invalid(
        &answer,
        &format!(
            "Node \"bad\" is invalid: [metadata.taints[1]: {dup}, metadata.taints[2].effect: {effect}, status.capacity.pods: Invalid value: \"1500m\": must be an integer, status.allocatable.pods: Invalid value: \"1500m\": must be an integer, spec.podCIDRs: {cidrs}]"
        ),
        &[
            ("FieldValueDuplicate", "metadata.taints[1]", dup),
            (
                "FieldValueNotSupported",
                "metadata.taints[2].effect",
                effect,
            ),
            (
                "FieldValueInvalid",
                "status.capacity.pods",
                "Invalid value: \"1500m\": must be an integer",
            ),
            // Allocatable was defaulted from the capacity before validation, as upstream does.
            (
                "FieldValueInvalid",
                "status.allocatable.pods",
                "Invalid value: \"1500m\": must be an integer",
            ),
            ("FieldValueInvalid", "spec.podCIDRs", cidrs),
        ],
    );
    absent(&env, &format!("{NODES}/bad")).await;

    // The legacy taints annotation holds JSON taints, each valid.
    let annotated = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "annotated", "annotations": {"scheduler.alpha.kubernetes.io/taints": "[{\"key\": \"a\"}]"}},
    });
    assert_invalid(
        &send(&env, "POST", NODES, &annotated).await,
        "Node \"annotated\" is invalid: metadata.annotations.scheduler.alpha.kubernetes.io/taints[0].effect: Required value",
        &[(
            "FieldValueRequired",
            "metadata.annotations.scheduler.alpha.kubernetes.io/taints[0].effect",
            "Required value",
        )],
    );

    // Pod CIDRs and the provider ID are set once.
    let answer = raw(
        &env.client(),
        "PATCH",
        &format!("{NODES}/worker-1"),
        Some("application/merge-patch+json"),
        json!({"spec": {"podCIDR": "10.244.2.0/24", "podCIDRs": ["10.244.2.0/24"], "providerID": "sim://other"}}).to_string().into_bytes(),
    )
    .await;
    assert_invalid(
        &answer,
        "Node \"worker-1\" is invalid: [spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid, spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid]",
        &[
            (
                "FieldValueForbidden",
                "spec.podCIDRs",
                "Forbidden: node updates may not change podCIDR except from \"\" to valid",
            ),
            (
                "FieldValueForbidden",
                "spec.providerID",
                "Forbidden: node updates may not change providerID except from \"\" to valid",
            ),
        ],
    );
    // Through /status only ValidateNodeUpdate runs: duplicate addresses are refused.
    let answer = raw(
        &env.client(),
        "PATCH",
        &format!("{NODES}/worker-1/status"),
        Some("application/merge-patch+json"),
        json!({"status": {"addresses": [{"type": "InternalIP", "address": "172.18.0.3"}, {"type": "InternalIP", "address": "172.18.0.3"}]}}).to_string().into_bytes(),
    )
    .await;
    assert_invalid(
        &answer,
        "Node \"worker-1\" is invalid: status.addresses[1]: Duplicate value: core.NodeAddress{Type:\"InternalIP\", Address:\"172.18.0.3\"}",
        &[(
            "FieldValueDuplicate",
            "status.addresses[1]",
            "Duplicate value: core.NodeAddress{Type:\"InternalIP\", Address:\"172.18.0.3\"}",
        )],
    );
    // Cordoning (a spec change) is fine.
    let cordoned = nodes
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon");
    assert_eq!(cordoned.spec.and_then(|s| s.unschedulable), Some(true));
}
