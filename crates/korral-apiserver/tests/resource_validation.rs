//! resource.k8s.io/v1 validation through a kube client: CEL device selectors of DeviceClasses,
//! ResourceClaims and ResourceClaimTemplates compiled against the device environment,
//! ResourceSlice device details, and ResourceClaim status (allocation results, device status,
//! reservations) on the status subresource, with upstream's field paths and messages.

mod common;

use common::*;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const RESOURCE: &str = "/apis/resource.k8s.io/v1";

/// Sends `body` with `method` to `path` through the kube client.
async fn send(env: &TestEnv, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    raw(
        &env.client(),
        method,
        path,
        Some(content_type),
        body.to_string().into_bytes(),
    )
    .await
}

/// The `field: message` of each cause of a 422.
fn causes(status: &Value) -> Vec<String> {
    status["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .map(|c| {
                    format!(
                        "{}: {}",
                        c["field"].as_str().unwrap_or(""),
                        c["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn class(name: &str, expressions: &[&str]) -> Value {
    let selectors: Vec<Value> = expressions
        .iter()
        .map(|e| json!({"cel": {"expression": e}}))
        .collect();
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": name}, "spec": {"selectors": selectors}})
}

#[tokio::test]
async fn device_class_selectors_compile_in_the_device_environment() {
    let env = TestEnv::start().await.expect("env");
    let classes: Api<DeviceClass> = Api::all(env.client());
    let good = class(
        "gpu.example.com",
        &[
            "device.driver == 'gpu.example.com'",
            "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0",
            "device.attributes['gpu.example.com'].driverVersion.isGreaterThan(semver('1.0.0'))",
            "cel.bind(gpu, device.attributes['gpu.example.com'], gpu.model == 'a100' || gpu.count > 2)",
            "device.allowMultipleAllocations",
        ],
    );
    let created = classes
        .create(
            &PostParams::default(),
            &serde_json::from_value(good).expect("class"),
        )
        .await
        .expect("valid selectors are accepted");
    assert_eq!(created.metadata.generation, Some(1));

    let bad = class(
        "bad.example.com",
        &[
            "foo == 1",
            "device.driver",
            "device.nope",
            "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, device.attributes.all(d, device.attributes.all(e, a + b + c + d + e != '')))))",
        ],
    );
    let (code, status) = send(&env, "POST", &format!("{RESOURCE}/deviceclasses"), &bad).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec![
            "spec.selectors[0].cel.expression: Invalid value: \"foo == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^",
            "spec.selectors[1].cel.expression: Invalid value: \"device.driver\": must evaluate to bool or the unknown type, not string",
            "spec.selectors[2].cel.expression: Invalid value: \"device.nope\": compilation failed: ERROR: <input>:1:7: undefined field 'nope'\n | device.nope\n | ......^",
            "spec.selectors[3].cel.expression: Forbidden: too complex, exceeds cost limit",
        ]
    );
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("DeviceClass.resource.k8s.io \"bad.example.com\" is invalid: ["),
        "{status}"
    );

    // Updating the stored class: a changed selector is compiled again.
    let (code, status) = send(
        &env,
        "PATCH",
        &format!("{RESOURCE}/deviceclasses/gpu.example.com"),
        &json!({"spec": {"selectors": [{"cel": {"expression": "device.driver +"}}]}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let found = causes(&status);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with(
            "spec.selectors[0].cel.expression: Invalid value: \"device.driver +\": compilation failed: ERROR: <input>:1:"
        ),
        "{found:?}"
    );
    // Unchanged selectors with a new label: accepted.
    let labelled = classes
        .patch(
            "gpu.example.com",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "a"}}})),
        )
        .await
        .expect("label update");
    assert_eq!(labelled.metadata.generation, Some(1));
}

#[tokio::test]
async fn claim_and_template_selectors_are_checked_where_they_sit() {
    let env = TestEnv::start().await.expect("env");
    let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
    "metadata": {"name": "gpu"},
    "spec": {"devices": {
        "requests": [
            {"name": "a", "exactly": {"deviceClassName": "gpu.example.com",
                "selectors": [{"cel": {"expression": "device.attributes['x'].size"}}]}},
            {"name": "b", "firstAvailable": [
                {"name": "big", "deviceClassName": "gpu.example.com",
                 "selectors": [{"cel": {"expression": "device.capacity['x'].memory.isGreaterThan(quantity('1Gi'))"}}]},
                {"name": "small", "deviceClassName": "gpu.example.com",
                 "selectors": [{"cel": {"expression": "1 + 'a' == 2"}}]},
            ]},
        ],
        "constraints": [{"requests": ["a", "b/big"], "matchAttribute": "model"}],
    }}});
    let (code, status) = send(
        &env,
        "POST",
        &format!("{RESOURCE}/namespaces/default/resourceclaims"),
        &claim,
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec![
            "spec.devices.requests[1].firstAvailable[1].selectors[0].cel.expression: Invalid value: \"1 + 'a' == 2\": compilation failed: ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'\n | 1 + 'a' == 2\n | ..^",
            "spec.devices.constraints[0].matchAttribute: Invalid value: \"model\": a fully qualified name must be a domain and a name separated by a slash",
        ]
    );

    let template = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t"},
        "spec": {"spec": {"devices": {"requests": [{"name": "a", "exactly": {
            "deviceClassName": "gpu.example.com",
            "selectors": [{"cel": {"expression": "device.attributes['x']"}}]}}]}}}});
    let (code, status) = send(
        &env,
        "POST",
        &format!("{RESOURCE}/namespaces/default/resourceclaimtemplates"),
        &template,
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec![
            "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: \"device.attributes['x']\": must evaluate to bool or the unknown type, not map(string, dyn)"
        ]
    );
}

#[tokio::test]
async fn slice_devices_are_validated_in_detail() {
    let env = TestEnv::start().await.expect("env");
    let slices: Api<ResourceSlice> = Api::all(env.client());
    let good = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "node-1-gpu"},
        "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
            "pool": {"name": "node-1", "resourceSliceCount": 1, "generation": 0},
            "devices": [{"name": "gpu-0",
                "attributes": {"model": {"string": "a100"},
                    "gpu.example.com/driverVersion": {"version": "1.2.3-rc.1"}},
                "capacity": {"memory": {"value": "40Gi"}},
                "taints": [{"key": "example.com/unhealthy", "effect": "NoSchedule"}]}]}});
    let created = slices
        .create(
            &PostParams::default(),
            &serde_json::from_value(good.clone()).expect("slice"),
        )
        .await
        .expect("valid slice");
    let devices = created.spec.devices.expect("devices");
    let taints = devices[0].taints.as_ref().expect("taints");
    assert!(taints[0].time_added.is_some(), "timeAdded defaulted");

    let mut bad = good.clone();
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["devices"] = json!([
        {"name": "gpu-0",
         "attributes": {"9lives": {"int": 9}, "v": {"version": "1.2"}, "two": {"int": 1, "string": "a"}},
         "taints": [{"key": "k", "effect": "Maybe"}],
         "consumesCounters": [{"counterSet": "mem", "counters": {"Big": {"value": "1"}}}]},
        {"name": "gpu-1", "nodeName": "node-1"},
    ]);
    bad["spec"]["sharedCounters"] = json!([{"name": "mem", "counters": {}}]);
    let (code, status) = send(&env, "POST", &format!("{RESOURCE}/resourceslices"), &bad).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec![
            "spec: Invalid value: \"\": only one of `sharedCounters` or `devices` is allowed",
            "spec.devices[0].attributes: Invalid value: \"9lives\": a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')",
            "spec.devices[0].attributes[two]: Invalid value: {\"int\":1,\"string\":\"a\"}: exactly one value must be specified",
            "spec.devices[0].attributes[v].version: Invalid value: \"1.2\": must be a string compatible with semver.org spec 2.0.0",
            "spec.devices[0].taints[0].effect: Unsupported value: \"Maybe\": supported values: \"NoExecute\", \"NoSchedule\", \"None\"",
            "spec.devices[0].consumesCounters[0].counters: Invalid value: \"Big\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.devices[1]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            "spec.sharedCounters[0].counters: Required value",
        ]
    );

    // Per-device node selection: each device picks exactly one.
    let per_device = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "per-device"},
        "spec": {"driver": "gpu.example.com", "perDeviceNodeSelection": true,
            "pool": {"name": "shared", "resourceSliceCount": 1},
            "devices": [{"name": "a", "nodeName": "node-1"}, {"name": "b"},
                {"name": "c", "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "zone", "operator": "In"}]}]}}]}});
    let (code, status) = send(
        &env,
        "POST",
        &format!("{RESOURCE}/resourceslices"),
        &per_device,
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec![
            "spec.devices[1]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            "spec.devices[2].nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        ]
    );

    // An update re-checks the devices: a new bad attribute is refused.
    let (code, status) = send(
        &env,
        "PATCH",
        &format!("{RESOURCE}/resourceslices/node-1-gpu"),
        &json!({"spec": {"devices": [{"name": "gpu-0", "attributes": {"model": {"string": "x".repeat(65)}}}]}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec!["spec.devices[0].attributes[model].string: Too long: may not be more than 64 bytes"]
    );
}

#[tokio::test]
async fn claim_status_allocations_are_validated_on_the_status_subresource() {
    let env = TestEnv::start().await.expect("env");
    let claims: Api<ResourceClaim> = Api::namespaced(env.client(), "default");
    let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}});
    claims
        .create(
            &PostParams::default(),
            &serde_json::from_value(claim).expect("claim"),
        )
        .await
        .expect("claim");
    let path = format!("{RESOURCE}/namespaces/default/resourceclaims/gpu/status");

    let bad = json!({"status": {"allocation": {"devices": {"results": [
        {"request": "tpu", "driver": "gpu.example.com", "pool": "node-1", "device": "GPU-0"}]}}}});
    let (code, status) = send(&env, "PATCH", &path, &bad).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec![
            "status.allocation.devices.results[0].request: Invalid value: \"tpu\": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
            "status.allocation.devices.results[0].device: Invalid value: \"GPU-0\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ]
    );

    let allocation = json!({"devices": {"results": [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]}});
    let written = claims
        .patch_status(
            "gpu",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "allocation": allocation,
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
                "devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
                    "networkData": {"interfaceName": "eth1", "ips": ["10.0.0.2/24"]}}],
            }})),
        )
        .await
        .expect("allocation written");
    assert!(written.status.and_then(|s| s.allocation).is_some());

    let (code, status) = send(
        &env,
        "PATCH",
        &path,
        &json!({"status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-1"}]}}}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    // The reported device is no longer among the (changed) allocation's results either.
    assert_eq!(
        causes(&status),
        vec![
            "status.devices[0]: Invalid value: gpu.example.com/node-1/gpu-0: must be an allocated device in the claim",
            "status.allocation: Invalid value: \"object\": field is immutable",
        ]
    );

    let (code, status) = send(
        &env,
        "PATCH",
        &path,
        &json!({"status": {
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"},
                {"resource": "pods", "name": "q", "uid": "u1"}],
            "devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-7"}]}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec![
            "status.reservedFor[1]: Duplicate value: \"u1\"",
            "status.devices[0]: Invalid value: gpu.example.com/node-1/gpu-7: must be an allocated device in the claim",
        ]
    );

    // The spec stays immutable once the claim exists.
    let (code, status) = send(
        &env,
        "PATCH",
        &format!("{RESOURCE}/namespaces/default/resourceclaims/gpu"),
        &json!({"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "other"}}]}}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        vec!["spec: Invalid value: \"object\": field is immutable"]
    );
}

#[tokio::test]
async fn claim_device_status_merges_per_device_under_server_side_apply() {
    let env = TestEnv::start().await.expect("env");
    let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "pair"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}}]}}});
    let (code, body) = send(
        &env,
        "POST",
        &format!("{RESOURCE}/namespaces/default/resourceclaims"),
        &claim,
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let status_path = format!("{RESOURCE}/namespaces/default/resourceclaims/pair/status");
    let result = |device: &str| json!({"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": device});
    let (code, body) = send(
        &env,
        "PATCH",
        &status_path,
        &json!({"status": {"allocation": {"devices": {"results": [result("gpu-0"), result("gpu-1")]}}}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    // Two drivers' agents each apply the status of their own device.
    let apply = |manager: &'static str, device: &'static str, ip: &'static str| {
        let path = format!("{status_path}?fieldManager={manager}");
        let body = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "pair"},
            "status": {"devices": [{"driver": "gpu.example.com", "pool": "node-1",
                "device": device, "networkData": {"ips": [ip]}}]}});
        let client = env.client();
        async move {
            raw(
                &client,
                "PATCH",
                &path,
                Some("application/apply-patch+yaml"),
                body.to_string().into_bytes(),
            )
            .await
        }
    };
    let (code, body) = apply("agent-a", "gpu-0", "10.0.0.1/24").await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = apply("agent-b", "gpu-1", "10.0.0.2/24").await;
    assert_eq!(
        code, 200,
        "no conflict: the list merges by device key: {body}"
    );
    let devices: Vec<&str> = body["status"]["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .filter_map(|d| d["device"].as_str())
        .collect();
    assert_eq!(devices, ["gpu-0", "gpu-1"]);
    // Each agent owns its own entry, keyed without the (absent) share id.
    let managed = body["metadata"]["managedFields"]
        .as_array()
        .expect("managed");
    let owned = |manager: &str| {
        managed
            .iter()
            .find(|m| m["manager"] == manager)
            .map(|m| m["fieldsV1"]["f:status"]["f:devices"].clone())
            .unwrap_or_default()
    };
    assert!(
        owned("agent-b").as_object().is_some_and(|o| o.contains_key(
            "k:{\"device\":\"gpu-1\",\"driver\":\"gpu.example.com\",\"pool\":\"node-1\"}"
        )),
        "{managed:?}"
    );
    // Re-applying agent-a's entry changes only it.
    let (code, body) = apply("agent-a", "gpu-0", "10.0.0.9/24").await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body["status"]["devices"][1]["networkData"]["ips"],
        json!(["10.0.0.2/24"])
    );
    assert_eq!(
        body["status"]["devices"][0]["networkData"]["ips"],
        json!(["10.0.0.9/24"])
    );
    env.shutdown().await;
}
