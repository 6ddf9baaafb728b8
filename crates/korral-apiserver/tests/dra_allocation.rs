//! Dynamic resource allocation on a simulating server: Pods with ResourceClaims (named or made
//! from templates) are bound once their devices are allocated from the published
//! ResourceSlices and reserved for them; devices in use wait for their release, and
//! partitions of one device for the shared counters the others draw on; finished Pods
//! release and deallocate their claims, and generated claims go with them.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);
const DRIVER: &str = "gpu.example.com";
const RESOURCE: &str = "/apis/resource.k8s.io/v1";

/// Polls `path` until `done` holds for the object, within [`WAIT`].
async fn wait_for(env: &TestEnv, path: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let (code, obj) = call(env, "GET", path, None).await;
        if code == 200 && done(&obj) {
            return obj;
        }
        assert!(start.elapsed() < WAIT, "{path}: {what}: {obj}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates the `gpu` DeviceClass: the devices of [`DRIVER`].
async fn create_gpu_class(env: &TestEnv) {
    create_ok(
        env,
        &format!("{RESOURCE}/deviceclasses"),
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": format!("device.driver == '{DRIVER}'")}}]}}),
    )
    .await;
}

/// Publishes two GPUs on the simulated node and the `gpu` DeviceClass.
async fn publish_gpus(env: &TestEnv) {
    create_gpu_class(env).await;
    create_ok(
        env,
        &format!("{RESOURCE}/resourceslices"),
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-gpus"},
            "spec": {"driver": DRIVER, "nodeName": "korral-node",
                "pool": {"name": "korral-node", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {"name": "gpu-0", "attributes": {"model": {"string": "a100"}}},
                    {"name": "gpu-1", "attributes": {"model": {"string": "t4"}}}]}}),
    )
    .await;
}

fn pod(name: &str, claims: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "resourceClaims": claims,
            "containers": [{"name": "main", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}]}})
}

fn node_name(pod: &Value) -> &str {
    pod["spec"]["nodeName"].as_str().unwrap_or("")
}

fn scheduled_message(pod: &Value) -> String {
    pod["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "PodScheduled"))
        .map(|c| {
            format!(
                "{} {}",
                c["reason"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn template_claims_are_made_allocated_reserved_and_released() {
    let env = sim_env().await;
    publish_gpus(&env).await;
    let ns = "/api/v1/namespaces/default";
    let claims = format!("{RESOURCE}/namespaces/default/resourceclaims");
    create_ok(
        &env,
        &format!("{RESOURCE}/namespaces/default/resourceclaimtemplates"),
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-a100"},
            "spec": {"metadata": {"labels": {"team": "ml"}}, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu",
                "selectors": [{"cel": {"expression": format!("device.attributes['{DRIVER}'].model == 'a100'")}}]}}]}}}}),
    )
    .await;
    create_ok(
        &env,
        &format!("{ns}/pods"),
        &pod(
            "trainer",
            json!([{"name": "gpu", "resourceClaimTemplateName": "one-a100"}]),
        ),
    )
    .await;
    let trainer = wait_for(&env, &format!("{ns}/pods/trainer"), "bound", |p| {
        !node_name(p).is_empty()
    })
    .await;
    // The claim made from the template, recorded in the Pod's status.
    let status = &trainer["status"]["resourceClaimStatuses"][0];
    assert_eq!(status["name"], "gpu", "{trainer}");
    let claim_name = status["resourceClaimName"]
        .as_str()
        .expect("claim name")
        .to_string();
    assert!(claim_name.starts_with("trainer-gpu-"), "{claim_name}");
    let (_, claim) = call(&env, "GET", &format!("{claims}/{claim_name}"), None).await;
    assert_eq!(
        claim["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"],
        "gpu"
    );
    assert_eq!(claim["metadata"]["labels"]["team"], "ml");
    assert_eq!(claim["metadata"]["ownerReferences"][0]["kind"], "Pod");
    assert_eq!(claim["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        claim["metadata"]["finalizers"],
        json!(["resource.kubernetes.io/delete-protection"])
    );
    assert_eq!(
        claim["status"]["allocation"]["devices"]["results"],
        json!([{"request": "gpu", "driver": DRIVER, "pool": "korral-node", "device": "gpu-0"}])
    );
    assert_eq!(
        claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0],
        json!({"key": "metadata.name", "operator": "In", "values": ["korral-node"]})
    );
    assert_eq!(
        claim["status"]["reservedFor"],
        json!([{"resource": "pods", "name": "trainer", "uid": trainer["metadata"]["uid"]}])
    );

    // A second Pod wanting the same a100 waits: the device is taken.
    create_ok(
        &env,
        &format!("{ns}/pods"),
        &pod(
            "second",
            json!([{"name": "gpu", "resourceClaimTemplateName": "one-a100"}]),
        ),
    )
    .await;
    let second = wait_for(&env, &format!("{ns}/pods/second"), "unschedulable", |p| {
        scheduled_message(p).contains("cannot allocate all claims")
    })
    .await;
    assert_eq!(node_name(&second), "");
    assert_eq!(second["status"]["phase"], "Pending");

    // The first Pod finishes: its claim is released, deallocated and deleted, and the second
    // Pod gets the device.
    let (code, _) = call(&env, "DELETE", &format!("{ns}/pods/trainer"), None).await;
    assert_eq!(code, 200);
    let start = Instant::now();
    loop {
        let (code, _) = call(&env, "GET", &format!("{claims}/{claim_name}"), None).await;
        if code == 404 {
            break;
        }
        assert!(start.elapsed() < WAIT, "claim {claim_name} not gone");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = wait_for(&env, &format!("{ns}/pods/second"), "bound", |p| {
        !node_name(p).is_empty()
    })
    .await;
    let second_claim = second["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        .as_str()
        .expect("claim")
        .to_string();
    let (_, claim) = call(&env, "GET", &format!("{claims}/{second_claim}"), None).await;
    assert_eq!(
        claim["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-0"
    );
}

#[tokio::test]
async fn named_claims_are_shared_and_deallocated_when_no_longer_used() {
    let env = sim_env().await;
    publish_gpus(&env).await;
    let ns = "/api/v1/namespaces/default";
    let claim_path = format!("{RESOURCE}/namespaces/default/resourceclaims/shared");
    create_ok(
        &env,
        &format!("{RESOURCE}/namespaces/default/resourceclaims"),
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "shared"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "count": 2}}]}}}),
    )
    .await;
    // Nothing happens to a claim no Pod uses.
    let (_, claim) = call(&env, "GET", &claim_path, None).await;
    assert!(claim["status"]["allocation"].is_null(), "{claim}");
    for name in ["a", "b"] {
        create_ok(
            &env,
            &format!("{ns}/pods"),
            &pod(
                name,
                json!([{"name": "gpu", "resourceClaimName": "shared"}]),
            ),
        )
        .await;
        wait_for(&env, &format!("{ns}/pods/{name}"), "bound", |p| {
            !node_name(p).is_empty()
        })
        .await;
    }
    let claim = wait_for(&env, &claim_path, "reserved twice", |c| {
        c["status"]["reservedFor"]
            .as_array()
            .is_some_and(|r| r.len() == 2)
    })
    .await;
    let devices: Vec<&str> = claim["status"]["allocation"]["devices"]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["device"].as_str())
        .collect();
    assert_eq!(devices, ["gpu-0", "gpu-1"]);
    // One user left: still allocated; none left: deallocated, finalizer gone, claim kept.
    call(&env, "DELETE", &format!("{ns}/pods/a"), None).await;
    let claim = wait_for(&env, &claim_path, "one reservation", |c| {
        c["status"]["reservedFor"]
            .as_array()
            .is_some_and(|r| r.len() == 1)
    })
    .await;
    assert!(!claim["status"]["allocation"].is_null());
    call(&env, "DELETE", &format!("{ns}/pods/b"), None).await;
    let claim = wait_for(&env, &claim_path, "deallocated", |c| {
        c["status"]["allocation"].is_null() && c["metadata"]["finalizers"].is_null()
    })
    .await;
    assert!(claim["status"]["reservedFor"].is_null(), "{claim}");
}

#[tokio::test]
async fn pods_wait_for_missing_claims_classes_and_devices() {
    let env = sim_env().await;
    let ns = "/api/v1/namespaces/default";
    // A claim that does not exist.
    create_ok(
        &env,
        &format!("{ns}/pods"),
        &pod(
            "lonely",
            json!([{"name": "gpu", "resourceClaimName": "missing"}]),
        ),
    )
    .await;
    let lonely = wait_for(&env, &format!("{ns}/pods/lonely"), "unschedulable", |p| {
        scheduled_message(p).contains("\"missing\" not found")
    })
    .await;
    assert_eq!(node_name(&lonely), "");
    // A claim whose class does not exist yet: the Pod waits, then runs once the class and
    // the devices are published.
    create_ok(
        &env,
        &format!("{RESOURCE}/namespaces/default/resourceclaims"),
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "later"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}),
    )
    .await;
    create_ok(
        &env,
        &format!("{ns}/pods"),
        &pod(
            "patient",
            json!([{"name": "gpu", "resourceClaimName": "later"}]),
        ),
    )
    .await;
    wait_for(&env, &format!("{ns}/pods/patient"), "unschedulable", |p| {
        scheduled_message(p).contains("device class gpu does not exist")
    })
    .await;
    publish_gpus(&env).await;
    let patient = wait_for(&env, &format!("{ns}/pods/patient"), "bound", |p| {
        !node_name(p).is_empty()
    })
    .await;
    assert_eq!(patient["spec"]["nodeName"], "korral-node");
}

/// A named claim for one `gpu` device whose `profile` attribute is `profile`.
fn profile_claim(name: &str, profile: &str) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression": format!("device.attributes['{DRIVER}'].profile == '{profile}'")}}]}}]}}})
}

#[tokio::test]
async fn partitions_draw_on_the_shared_counters_of_their_gpu() {
    let env = sim_env().await;
    let ns = "/api/v1/namespaces/default";
    let claims = format!("{RESOURCE}/namespaces/default/resourceclaims");
    create_gpu_class(&env).await;
    // One physical GPU of 40Gi, published as a counter set in a slice of its own, and three
    // partitions drawing on it: two halves and the whole.
    let pool = json!({"name": "korral-node", "generation": 1, "resourceSliceCount": 2});
    create_ok(
        &env,
        &format!("{RESOURCE}/resourceslices"),
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "gpu-0-counters"},
            "spec": {"driver": DRIVER, "nodeName": "korral-node", "pool": pool,
                "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]}}),
    )
    .await;
    let partition = |name: &str, profile: &str, memory: &str| {
        json!({"name": name, "attributes": {"profile": {"string": profile}},
            "capacity": {"memory": {"value": memory}},
            "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}]})
    };
    create_ok(
        &env,
        &format!("{RESOURCE}/resourceslices"),
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "gpu-0-partitions"},
            "spec": {"driver": DRIVER, "nodeName": "korral-node", "pool": pool, "devices": [
                partition("gpu-0-half-0", "half", "20Gi"),
                partition("gpu-0-half-1", "half", "20Gi"),
                partition("gpu-0-whole", "whole", "40Gi")]}}),
    )
    .await;
    for claim in [
        profile_claim("half-a", "half"),
        profile_claim("half-b", "half"),
        profile_claim("whole", "whole"),
    ] {
        create_ok(&env, &claims, &claim).await;
    }
    // Both halves fit.
    for (pod_name, claim) in [("a", "half-a"), ("b", "half-b")] {
        create_ok(
            &env,
            &format!("{ns}/pods"),
            &pod(
                pod_name,
                json!([{"name": "gpu", "resourceClaimName": claim}]),
            ),
        )
        .await;
        wait_for(&env, &format!("{ns}/pods/{pod_name}"), "bound", |p| {
            !node_name(p).is_empty()
        })
        .await;
    }
    let mut held = Vec::new();
    for claim in ["half-a", "half-b"] {
        let (_, claim) = call(&env, "GET", &format!("{claims}/{claim}"), None).await;
        held.push(
            claim["status"]["allocation"]["devices"]["results"][0]["device"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        );
    }
    assert_eq!(held, ["gpu-0-half-0", "gpu-0-half-1"]);
    // The whole GPU is free as a device, but its memory is drawn by the halves.
    create_ok(
        &env,
        &format!("{ns}/pods"),
        &pod("c", json!([{"name": "gpu", "resourceClaimName": "whole"}])),
    )
    .await;
    let c = wait_for(&env, &format!("{ns}/pods/c"), "unschedulable", |p| {
        scheduled_message(p).contains("cannot allocate all claims")
    })
    .await;
    assert_eq!(node_name(&c), "");
    assert_eq!(c["status"]["phase"], "Pending");
    assert_eq!(
        scheduled_message(&c),
        "Unschedulable 0/1 nodes are available: 1 cannot allocate all claims. preemption: 0/1 \
         nodes are available: 1 Preemption is not helpful for scheduling."
    );
    // One half released: 20Gi are still drawn, so the whole GPU still does not fit.
    call(&env, "DELETE", &format!("{ns}/pods/a"), None).await;
    wait_for(&env, &format!("{claims}/half-a"), "deallocated", |c| {
        c["status"]["allocation"].is_null()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, c) = call(&env, "GET", &format!("{ns}/pods/c"), None).await;
    assert_eq!(node_name(&c), "", "{c}");
    let (_, whole) = call(&env, "GET", &format!("{claims}/whole"), None).await;
    assert!(whole["status"]["allocation"].is_null(), "{whole}");
    // Both released: the counters are free and the Pod waiting for the whole GPU runs.
    call(&env, "DELETE", &format!("{ns}/pods/b"), None).await;
    wait_for(&env, &format!("{ns}/pods/c"), "bound", |p| {
        !node_name(p).is_empty()
    })
    .await;
    let (_, whole) = call(&env, "GET", &format!("{claims}/whole"), None).await;
    assert_eq!(
        whole["status"]["allocation"]["devices"]["results"],
        json!([{"request": "gpu", "driver": DRIVER, "pool": "korral-node", "device": "gpu-0-whole"}])
    );
}

/// A claim for `memory` of the shared GPU.
fn memory_claim(name: &str, memory: &str) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
            "capacity": {"requests": {"memory": memory}}}}]}}})
}

#[tokio::test]
async fn a_device_allowing_multiple_allocations_is_shared_while_its_capacity_lasts() {
    let env = sim_env().await;
    let ns = "/api/v1/namespaces/default";
    let claims = format!("{RESOURCE}/namespaces/default/resourceclaims");
    create_gpu_class(&env).await;
    // One GPU of 8Gi that claims share, in steps of 1Gi.
    create_ok(
        &env,
        &format!("{RESOURCE}/resourceslices"),
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "shared"},
            "spec": {"driver": DRIVER, "nodeName": "korral-node",
                "pool": {"name": "korral-node", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "allowMultipleAllocations": true,
                    "capacity": {"memory": {"value": "8Gi", "requestPolicy": {"default": "1Gi",
                        "validRange": {"min": "1Gi", "step": "1Gi"}}}}}]}}),
    )
    .await;
    for (claim, memory) in [("a", "2.5Gi"), ("b", "5Gi"), ("c", "4.5Gi")] {
        create_ok(&env, &claims, &memory_claim(claim, memory)).await;
    }
    // a (3Gi once rounded up) and b (5Gi) share the GPU.
    let mut shares = Vec::new();
    for name in ["a", "b"] {
        create_ok(
            &env,
            &format!("{ns}/pods"),
            &pod(name, json!([{"name": "gpu", "resourceClaimName": name}])),
        )
        .await;
        wait_for(&env, &format!("{ns}/pods/{name}"), "bound", |p| {
            !node_name(p).is_empty()
        })
        .await;
        let (_, claim) = call(&env, "GET", &format!("{claims}/{name}"), None).await;
        let result = claim["status"]["allocation"]["devices"]["results"][0].clone();
        assert_eq!(result["device"], "gpu-0", "{claim}");
        shares.push(result);
    }
    assert_eq!(shares[0]["consumedCapacity"], json!({"memory": "3Gi"}));
    assert_eq!(shares[1]["consumedCapacity"], json!({"memory": "5Gi"}));
    assert!(shares[0]["shareID"].is_string() && shares[0]["shareID"] != shares[1]["shareID"]);
    // c (4.5Gi, 5Gi once rounded up) waits: 8Gi are taken.
    create_ok(
        &env,
        &format!("{ns}/pods"),
        &pod("c", json!([{"name": "gpu", "resourceClaimName": "c"}])),
    )
    .await;
    wait_for(&env, &format!("{ns}/pods/c"), "unschedulable", |p| {
        scheduled_message(p).contains("cannot allocate all claims")
    })
    .await;
    // b's Pod gone and its claim deallocated: c fits beside a (3Gi + 5Gi).
    call(&env, "DELETE", &format!("{ns}/pods/b"), None).await;
    wait_for(&env, &format!("{ns}/pods/c"), "bound", |p| {
        !node_name(p).is_empty()
    })
    .await;
    let (_, c) = call(&env, "GET", &format!("{claims}/c"), None).await;
    assert_eq!(
        c["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"],
        json!({"memory": "5Gi"})
    );
}

/// On a cordoned node the ResourceClaim controller still makes a Pod's template claims, and
/// a missing claim is what the scheduler reports (its PreFilter runs before any node is
/// looked at).
#[tokio::test]
async fn a_cordoned_node_does_not_stop_claims_being_made_nor_hide_missing_ones() {
    let env = sim_env().await;
    publish_gpus(&env).await;
    let ns = "/api/v1/namespaces/default";
    let (status, body) = raw(
        &env.client(),
        "PATCH",
        "/api/v1/nodes/korral-node",
        Some("application/merge-patch+json"),
        serde_json::to_vec(&json!({"spec": {"unschedulable": true}})).expect("patch"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    create_ok(
        &env,
        &format!("{RESOURCE}/namespaces/default/resourceclaimtemplates"),
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "any-gpu"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}}),
    )
    .await;
    create_ok(
        &env,
        &format!("{ns}/pods"),
        &pod(
            "templated",
            json!([{"name": "gpu", "resourceClaimTemplateName": "any-gpu"}]),
        ),
    )
    .await;
    let templated = wait_for(&env, &format!("{ns}/pods/templated"), "claim made", |p| {
        p["status"]["resourceClaimStatuses"][0]["resourceClaimName"].is_string()
            && scheduled_message(p).contains("node(s) were unschedulable")
    })
    .await;
    assert_eq!(node_name(&templated), "");
    create_ok(
        &env,
        &format!("{ns}/pods"),
        &pod(
            "orphan",
            json!([{"name": "gpu", "resourceClaimName": "missing"}]),
        ),
    )
    .await;
    let orphan = wait_for(&env, &format!("{ns}/pods/orphan"), "unschedulable", |p| {
        !scheduled_message(p).is_empty()
    })
    .await;
    assert_eq!(
        scheduled_message(&orphan),
        "Unschedulable 0/1 nodes are available: resourceclaim.resource.k8s.io \"missing\" \
         not found. preemption: 0/1 nodes are available: 1 Preemption is not helpful for \
         scheduling."
    );
}
