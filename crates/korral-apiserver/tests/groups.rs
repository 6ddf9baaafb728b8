//! The built-in groups networking.k8s.io, policy, scheduling.k8s.io, node.k8s.io,
//! discovery.k8s.io and storage.k8s.io, against a real kube-apiserver v1.36's answers
//! (`k8s-reference/builtin/`, copied into `fixtures/groups/`): defaults of a minimal create,
//! refusals, discovery, Tables, and the two system PriorityClasses.

mod common;

use common::*;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// A captured body from `fixtures/groups/`.
fn fixture(name: &str) -> Value {
    let text = match name {
        "create-ingress" => include_str!("fixtures/groups/create-ingress.json"),
        "create-ingressclass" => include_str!("fixtures/groups/create-ingressclass.json"),
        "create-networkpolicy" => include_str!("fixtures/groups/create-networkpolicy.json"),
        "create-pdb" => include_str!("fixtures/groups/create-pdb.json"),
        "create-priorityclass" => include_str!("fixtures/groups/create-priorityclass.json"),
        "create-runtimeclass" => include_str!("fixtures/groups/create-runtimeclass.json"),
        "create-endpointslice" => include_str!("fixtures/groups/create-endpointslice.json"),
        "create-storageclass" => include_str!("fixtures/groups/create-storageclass.json"),
        "create-csidriver" => include_str!("fixtures/groups/create-csidriver.json"),
        "invalid-ingress-path" => include_str!("fixtures/groups/invalid-ingress-path.json"),
        "invalid-networkpolicy-cidr" => {
            include_str!("fixtures/groups/invalid-networkpolicy-cidr.json")
        }
        "invalid-pdb-both" => include_str!("fixtures/groups/invalid-pdb-both.json"),
        "discovery-networking-k8s-io-v1" => {
            include_str!("fixtures/groups/discovery-networking-k8s-io-v1.json")
        }
        "discovery-policy-v1" => include_str!("fixtures/groups/discovery-policy-v1.json"),
        "discovery-scheduling-k8s-io-v1" => {
            include_str!("fixtures/groups/discovery-scheduling-k8s-io-v1.json")
        }
        "discovery-node-k8s-io-v1" => include_str!("fixtures/groups/discovery-node-k8s-io-v1.json"),
        "discovery-core-v1" => include_str!("fixtures/groups/discovery-core-v1.json"),
        "discovery-discovery-k8s-io-v1" => {
            include_str!("fixtures/groups/discovery-discovery-k8s-io-v1.json")
        }
        "discovery-storage-k8s-io-v1" => {
            include_str!("fixtures/groups/discovery-storage-k8s-io-v1.json")
        }
        "table-ingresses" => include_str!("fixtures/groups/table-ingresses.json"),
        "table-networkpolicies" => include_str!("fixtures/groups/table-networkpolicies.json"),
        "table-poddisruptionbudgets" => {
            include_str!("fixtures/groups/table-poddisruptionbudgets.json")
        }
        "table-priorityclasses" => include_str!("fixtures/groups/table-priorityclasses.json"),
        "table-storageclasses" => include_str!("fixtures/groups/table-storageclasses.json"),
        "table-endpointslices" => include_str!("fixtures/groups/table-endpointslices.json"),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).expect("fixture json")
}

/// A GET with the Table Accept header.
async fn get_table(env: &TestEnv, path: &str) -> (u16, Value) {
    let request = http::Request::builder()
        .method("GET")
        .uri(path)
        .header("accept", TABLE_ACCEPT)
        .body(Vec::new())
        .expect("request");
    let response = env
        .client()
        .send(request.map(kube::client::Body::from))
        .await
        .expect("send");
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    (status, serde_json::from_slice(&bytes).expect("table json"))
}

/// The collection path of a captured object (in namespace `default` when namespaced).
fn collection(obj: &Value, resource: &str) -> String {
    let api_version = obj["apiVersion"].as_str().expect("apiVersion");
    match obj["metadata"]["namespace"].as_str() {
        Some(_) => format!("/apis/{api_version}/namespaces/default/{resource}"),
        None => format!("/apis/{api_version}/{resource}"),
    }
}

/// The object a client sent for a captured create: its fields as the captured managed fields
/// list them, read off the captured response.
fn sent(captured: &Value, fields: &[&str]) -> Value {
    let mut obj = json!({
        "apiVersion": captured["apiVersion"],
        "kind": captured["kind"],
        "metadata": {"name": captured["metadata"]["name"]},
    });
    if let Some(labels) = captured["metadata"].get("labels") {
        obj["metadata"]["labels"] = labels.clone();
    }
    for field in fields {
        let mut value = captured.clone();
        for part in field.split('.') {
            value = value[part].clone();
        }
        let mut target = &mut obj;
        let parts: Vec<&str> = field.split('.').collect();
        for part in &parts[..parts.len() - 1] {
            if target.get(*part).is_none() {
                target[*part] = json!({});
            }
            target = &mut target[*part];
        }
        target[parts[parts.len() - 1]] = value;
    }
    obj
}

/// The response without what differs between runs (metadata besides name, labels, generation).
fn comparable(obj: &Value) -> Value {
    let mut obj = obj.clone();
    let md = obj["metadata"].as_object_mut().expect("metadata");
    md.retain(|k, _| matches!(k.as_str(), "name" | "labels" | "generation"));
    obj
}

#[tokio::test]
async fn minimal_creates_get_upstream_defaults() {
    let env = TestEnv::start().await.expect("env");
    let cases: [(&str, &str, &[&str]); 9] = [
        ("create-ingress", "ingresses", &["spec.rules"]),
        (
            "create-ingressclass",
            "ingressclasses",
            &["spec.controller"],
        ),
        (
            "create-networkpolicy",
            "networkpolicies",
            &["spec.podSelector", "spec.ingress"],
        ),
        (
            "create-pdb",
            "poddisruptionbudgets",
            &["spec.minAvailable", "spec.selector"],
        ),
        ("create-priorityclass", "priorityclasses", &["value"]),
        ("create-runtimeclass", "runtimeclasses", &["handler"]),
        (
            "create-endpointslice",
            "endpointslices",
            &["addressType", "endpoints", "ports"],
        ),
        ("create-storageclass", "storageclasses", &["provisioner"]),
        ("create-csidriver", "csidrivers", &[]),
    ];
    for (name, resource, fields) in cases {
        let captured = fixture(name);
        let mut obj = sent(&captured, fields);
        if name == "create-networkpolicy" {
            // The client sent the port without its protocol and no policy types.
            obj["spec"]["ingress"][0]["ports"][0]
                .as_object_mut()
                .expect("port")
                .remove("protocol");
        }
        if name == "create-endpointslice" {
            obj["endpoints"][0]
                .as_object_mut()
                .expect("ep")
                .remove("conditions");
            obj["ports"] = json!([{"port": 80}]);
        }
        let (code, created) =
            call(&env, "POST", &collection(&captured, resource), Some(&obj)).await;
        assert_eq!(code, 201, "{name}: {created}");
        assert_eq!(comparable(&created), comparable(&captured), "{name}");
    }
}

#[tokio::test]
async fn captured_refusals_match_upstream() {
    let env = TestEnv::start().await.expect("env");
    let backend = json!({"service": {"name": "web", "port": {"number": 80}}});
    let cases = [
        (
            "invalid-ingress-path",
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "ing2"},
                "spec": {"rules": [{"http": {"paths": [{"path": "bar", "pathType": "Prefix", "backend": backend}]}}]}}),
        ),
        (
            "invalid-networkpolicy-cidr",
            "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np2"},
                "spec": {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.300/8"}}]}]}}),
        ),
        (
            "invalid-pdb-both",
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb2"},
                "spec": {"minAvailable": 1, "maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        ),
    ];
    for (name, path, obj) in cases {
        let (code, status) = call(&env, "POST", path, Some(&obj)).await;
        assert_eq!(code, 422, "{name}: {status}");
        assert_eq!(status, fixture(name), "{name}");
        // Nothing was stored.
        let (code, _) = call(
            &env,
            "GET",
            &format!("{path}/{}", obj["metadata"]["name"].as_str().expect("name")),
            None,
        )
        .await;
        assert_eq!(code, 404, "{name}");
    }
}

#[tokio::test]
async fn more_refusals_and_immutable_fields() {
    let env = TestEnv::start().await.expect("env");
    let sc_path = "/apis/storage.k8s.io/v1/storageclasses";
    let sc = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "example.com/disk"});
    let (code, created) = call(&env, "POST", sc_path, Some(&sc)).await;
    assert_eq!(code, 201, "{created}");
    let mut changed = created.clone();
    changed["provisioner"] = json!("example.com/other");
    let (code, status) = call(&env, "PUT", &format!("{sc_path}/fast"), Some(&changed)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "StorageClass.storage.k8s.io \"fast\" is invalid: provisioner: Forbidden: updates to provisioner are forbidden."
    );

    let rc_path = "/apis/node.k8s.io/v1/runtimeclasses";
    let rc = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"},
        "handler": "kata", "overhead": {"podFixed": {"cpu": 0.5, "memory": "128Mi"}}});
    let (code, created) = call(&env, "POST", rc_path, Some(&rc)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["overhead"]["podFixed"]["cpu"], "500m");
    let mut changed = created.clone();
    changed["handler"] = json!("runc");
    let (code, status) = call(&env, "PUT", &format!("{rc_path}/kata"), Some(&changed)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": "Invalid value: \"runc\": field is immutable", "field": "handler"}])
    );

    let es_path = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let es = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "es"},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.0.5"]}]});
    let (code, created) = call(&env, "POST", es_path, Some(&es)).await;
    assert_eq!(code, 201, "{created}");
    let mut changed = created.clone();
    changed["addressType"] = json!("IPv6");
    changed["endpoints"] = json!([{"addresses": ["2001:db8::1"]}]);
    let (code, status) = call(&env, "PUT", &format!("{es_path}/es"), Some(&changed)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "EndpointSlice.discovery.k8s.io \"es\" is invalid: addressType: Invalid value: \"IPv6\": field is immutable"
    );
    let bad = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "bad"},
        "addressType": "IPv4", "endpoints": [{"addresses": ["not-an-ip"]}]});
    let (code, status) = call(&env, "POST", es_path, Some(&bad)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Invalid value: \"not-an-ip\": must be a valid IPv4 address"
    );
    let hinted = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "hinted"},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.0.6"],
            "hints": {"forZones": [{"name": "a"}, {"name": "a"}], "forNodes": [{"name": "node-1"}]}}]});
    let (code, status) = call(&env, "POST", es_path, Some(&hinted)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueDuplicate", "message": "Duplicate value: \"a\"", "field": "endpoints[0].hints.forZones[1].name"}])
    );

    let ing_path = "/apis/networking.k8s.io/v1/namespaces/default/ingresses";
    let ing = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "nopt"},
        "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}});
    let (code, status) = call(&env, "POST", ing_path, Some(&ing)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "Ingress.networking.k8s.io \"nopt\" is invalid: spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"
    );
}

/// The resources of a discovery document as compared: name, singular name, scope, kind,
/// sorted verbs, short names, categories and storage version hash.
fn resources(doc: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = doc["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            let mut verbs: Vec<String> = r["verbs"]
                .as_array()
                .expect("verbs")
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect();
            verbs.sort();
            let or_empty = |v: &Value| if v.is_null() { json!([]) } else { v.clone() };
            json!({
                "name": r["name"], "singularName": r["singularName"], "namespaced": r["namespaced"],
                "kind": r["kind"], "verbs": verbs, "shortNames": or_empty(&r["shortNames"]),
                "categories": or_empty(&r["categories"]),
                "storageVersionHash": r["storageVersionHash"],
            })
        })
        .collect();
    out.sort_by_key(|r| r["name"].as_str().unwrap_or("").to_string());
    out
}

#[tokio::test]
async fn discovery_matches_captures() {
    let env = TestEnv::start().await.expect("env");
    for (group, capture) in [
        ("networking.k8s.io", "discovery-networking-k8s-io-v1"),
        ("policy", "discovery-policy-v1"),
        ("scheduling.k8s.io", "discovery-scheduling-k8s-io-v1"),
        ("node.k8s.io", "discovery-node-k8s-io-v1"),
        ("discovery.k8s.io", "discovery-discovery-k8s-io-v1"),
        ("storage.k8s.io", "discovery-storage-k8s-io-v1"),
    ] {
        let (code, doc) = call(&env, "GET", &format!("/apis/{group}/v1"), None).await;
        assert_eq!(code, 200, "{group}: {doc}");
        assert_eq!(resources(&doc), resources(&fixture(capture)), "{group}");
    }
    // The core group, every resource and subresource of it (ComponentStatus included).
    let (code, doc) = call(&env, "GET", "/api/v1", None).await;
    assert_eq!(code, 200, "{doc}");
    assert_eq!(resources(&doc), resources(&fixture("discovery-core-v1")));
}

/// Column names, types and descriptions of a table.
fn columns(table: &Value) -> Vec<Value> {
    table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| json!([c["name"], c["type"], c["description"], c["priority"]]))
        .collect()
}

#[tokio::test]
async fn tables_match_captured_columns_and_cells() {
    let env = TestEnv::start().await.expect("env");
    let creates = [
        ("create-ingress", "ingresses", vec!["spec.rules"]),
        (
            "create-networkpolicy",
            "networkpolicies",
            vec!["spec.podSelector", "spec.ingress"],
        ),
        (
            "create-pdb",
            "poddisruptionbudgets",
            vec!["spec.minAvailable", "spec.selector"],
        ),
        ("create-priorityclass", "priorityclasses", vec!["value"]),
        ("create-storageclass", "storageclasses", vec!["provisioner"]),
        (
            "create-endpointslice",
            "endpointslices",
            vec!["addressType", "endpoints", "ports"],
        ),
    ];
    for (name, resource, fields) in &creates {
        let captured = fixture(name);
        let (code, body) = call(
            &env,
            "POST",
            &collection(&captured, resource),
            Some(&sent(&captured, fields)),
        )
        .await;
        assert_eq!(code, 201, "{name}: {body}");
    }
    for (path, capture, row) in [
        (
            "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
            "table-ingresses",
            0,
        ),
        (
            "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
            "table-networkpolicies",
            0,
        ),
        (
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            "table-poddisruptionbudgets",
            0,
        ),
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses",
            "table-priorityclasses",
            0,
        ),
        (
            "/apis/storage.k8s.io/v1/storageclasses",
            "table-storageclasses",
            0,
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
            "table-endpointslices",
            0,
        ),
    ] {
        let expected = fixture(capture);
        let (code, table) = get_table(&env, path).await;
        assert_eq!(code, 200, "{path}: {table}");
        assert_eq!(columns(&table), columns(&expected), "{capture}");
        // Every cell but the age (the last column but for priority classes).
        let age = expected["columnDefinitions"]
            .as_array()
            .expect("columns")
            .iter()
            .position(|c| c["name"] == "Age")
            .expect("age column");
        let mut got = table["rows"][row]["cells"].clone();
        let mut want = expected["rows"][row]["cells"].clone();
        got[age] = Value::Null;
        want[age] = Value::Null;
        assert_eq!(got, want, "{capture}");
    }
    // The default StorageClass is marked in its name cell, as kubectl shows it.
    let (code, body) = call(
        &env,
        "POST",
        "/apis/storage.k8s.io/v1/storageclasses",
        Some(&json!({"metadata": {"name": "fast",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "example.com/fast"})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (_, table) = get_table(&env, "/apis/storage.k8s.io/v1/storageclasses").await;
    let names: Vec<&Value> = table["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| &r["cells"][0])
        .collect();
    assert!(names.contains(&&json!("fast (default)")), "{names:?}");
}

#[tokio::test]
async fn system_priority_classes_exist_and_stay() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<PriorityClass> = Api::all(env.client());
    let listed = api.list(&ListParams::default()).await.expect("list");
    let classes: Vec<(String, i32, Option<String>)> = listed
        .items
        .iter()
        .map(|pc| {
            (
                pc.metadata.name.clone().unwrap_or_default(),
                pc.value.unwrap_or(0),
                pc.preemption_policy.clone(),
            )
        })
        .collect();
    let policy = Some("PreemptLowerPriority".to_string());
    assert_eq!(
        classes,
        vec![
            (
                "system-cluster-critical".to_string(),
                2_000_000_000,
                policy.clone()
            ),
            ("system-node-critical".to_string(), 2_000_001_000, policy),
        ]
    );
    let err = api
        .delete("system-node-critical", &DeleteParams::default())
        .await
        .expect_err("system classes stay");
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "priorityclasses.scheduling.k8s.io \"system-node-critical\" is forbidden: this is a system priority class and cannot be deleted"
    );
    assert!(api.get("system-node-critical").await.is_ok());

    let path = "/apis/scheduling.k8s.io/v1/priorityclasses";
    let reserved = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "system-mine"}, "value": 10});
    let (code, status) = call(&env, "POST", path, Some(&reserved)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueForbidden", "field": "metadata.name",
            "message": "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"}])
    );
    let too_high = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "huge"}, "value": 1_000_000_001});
    let (code, status) = call(&env, "POST", path, Some(&too_high)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "PriorityClass.scheduling.k8s.io \"huge\" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000"
    );

    // One global default.
    let default = |name: &str| json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": 5, "globalDefault": true});
    let (code, body) = call(&env, "POST", path, Some(&default("first"))).await;
    assert_eq!(code, 201, "{body}");
    let (code, status) = call(&env, "POST", path, Some(&default("second"))).await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "priorityclasses.scheduling.k8s.io \"second\" is forbidden: PriorityClass first is already marked as default. Only one default can exist"
    );
    // The value never changes.
    let err = api
        .patch(
            "first",
            &PatchParams::default(),
            &Patch::Merge(json!({"value": 6})),
        )
        .await
        .expect_err("value is immutable");
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "PriorityClass.scheduling.k8s.io \"first\" is invalid: value: Forbidden: may not be changed in an update."
    );
}

#[tokio::test]
async fn typed_clients_create_read_update_patch_and_delete() {
    let env = TestEnv::start().await.expect("env");
    let ingresses: Api<Ingress> = Api::namespaced(env.client(), "default");
    let ingress: Ingress = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": "web.example.com", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]},
    }))
    .expect("ingress");
    let created = ingresses
        .create(&PostParams::default(), &ingress)
        .await
        .expect("create ingress");
    assert_eq!(created.metadata.generation, Some(1));
    let mut got = ingresses.get("web").await.expect("get ingress");
    got.spec.as_mut().expect("spec").ingress_class_name = Some("traefik".into());
    let replaced = ingresses
        .replace("web", &PostParams::default(), &got)
        .await
        .expect("update ingress");
    assert_eq!(replaced.metadata.generation, Some(2));
    let patched = ingresses
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(
                json!({"spec": {"tls": [{"hosts": ["web.example.com"], "secretName": "web-tls"}]}}),
            ),
        )
        .await
        .expect("patch ingress");
    assert_eq!(patched.spec.expect("spec").tls.expect("tls").len(), 1);
    assert_eq!(
        ingresses
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        1
    );
    ingresses
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete ingress");

    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(env.client(), "default");
    let pdb: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "web"}, "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
    }))
    .expect("pdb");
    let created = pdbs
        .create(&PostParams::default(), &pdb)
        .await
        .expect("create pdb");
    assert_eq!(created.status.expect("status").disruptions_allowed, Some(0));
    let ssa = pdbs
        .patch(
            "web",
            &PatchParams::apply("groups-test").force(),
            &Patch::Apply(json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "web"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}})),
        )
        .await
        .expect("apply pdb");
    assert_eq!(
        serde_json::to_value(ssa.spec.expect("spec").max_unavailable).expect("json"),
        json!(1)
    );
    let err = pdbs
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"minAvailable": 1}})),
        )
        .await
        .expect_err("both bounds");
    let kube::Error::Api(status) = err else {
        panic!("{err}")
    };
    assert_eq!(status.code, 422);
    pdbs.delete("web", &DeleteParams::default())
        .await
        .expect("delete pdb");

    let classes: Api<StorageClass> = Api::all(env.client());
    let sc: StorageClass = serde_json::from_value(json!({"metadata": {"name": "slow"}, "provisioner": "example.com/disk", "allowVolumeExpansion": true}))
        .expect("sc");
    let created = classes
        .create(&PostParams::default(), &sc)
        .await
        .expect("create sc");
    assert_eq!(created.reclaim_policy.as_deref(), Some("Delete"));
    assert_eq!(created.volume_binding_mode.as_deref(), Some("Immediate"));
    let patched = classes
        .patch(
            "slow",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "slow"}}})),
        )
        .await
        .expect("label sc");
    assert_eq!(patched.metadata.labels.expect("labels")["tier"], "slow");
    classes
        .delete("slow", &DeleteParams::default())
        .await
        .expect("delete sc");
}

#[tokio::test]
async fn simulation_keeps_endpoint_slices_beside_endpoints() {
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let env = TestEnv::builder()
        .simulation(true)
        .start()
        .await
        .expect("env");
    let wait = std::time::Duration::from_secs(20);
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}});
    let (code, body) = call(
        &env,
        "POST",
        "/api/v1/namespaces/default/services",
        Some(&svc),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "main", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}]}]}}}});
    let (code, body) = call(
        &env,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        Some(&deploy),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let slices: Api<EndpointSlice> = Api::namespaced(env.client(), "default");
    let by_service = ListParams::default().labels("kubernetes.io/service-name=web");
    wait_until(wait, "a slice with both ready pods on port 8080", || {
        let slices = slices.clone();
        let by_service = by_service.clone();
        async move {
            let list = slices.list(&by_service).await.expect("list").items;
            let [slice] = list.as_slice() else {
                return false;
            };
            let ready = slice
                .endpoints
                .iter()
                .flatten()
                .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
                .count();
            let ports: Vec<Option<i32>> = slice
                .ports
                .clone()
                .unwrap_or_default()
                .iter()
                .map(|p| p.port)
                .collect();
            slice.address_type == "IPv4"
                && ready == 2
                && ports == vec![Some(8080)]
                && slice
                    .metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("web-"))
                && slice
                    .metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("endpointslice.kubernetes.io/managed-by"))
                    .map(String::as_str)
                    == Some("endpointslice-controller.k8s.io")
        }
    })
    .await
    .expect("endpoint slice");

    // Deleting the service removes its slices.
    let (code, body) = call(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/services/web",
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    wait_until(wait, "slices removed", || {
        let slices = slices.clone();
        let by_service = by_service.clone();
        async move {
            slices
                .list(&by_service)
                .await
                .expect("list")
                .items
                .is_empty()
        }
    })
    .await
    .expect("slices gone");
}

/// An Ingress's `/status` is checked as upstream's `ValidateIngressStatusUpdate`: load balancer
/// IPs are IP addresses and host names DNS names, not IPs; a refused write changes nothing.
#[tokio::test]
async fn ingress_status_writes_are_validated() {
    let env = TestEnv::start().await.expect("env");
    let ingresses = "/apis/networking.k8s.io/v1/namespaces/default/ingresses";
    let ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": "web"},
        "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}});
    let (code, created) = call(&env, "POST", ingresses, Some(&ingress)).await;
    assert_eq!(code, 201, "{created}");
    let mut good = created.clone();
    good["status"] =
        json!({"loadBalancer": {"ingress": [{"ip": "10.0.0.7"}, {"hostname": "lb.example.com"}]}});
    let (code, written) = call(&env, "PUT", &format!("{ingresses}/web/status"), Some(&good)).await;
    assert_eq!(code, 200, "{written}");

    let mut bad = written.clone();
    bad["status"] =
        json!({"loadBalancer": {"ingress": [{"ip": "10.0.0.300"}, {"hostname": "10.1.2.3"}]}});
    let (code, body) = call(&env, "PUT", &format!("{ingresses}/web/status"), Some(&bad)).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "Ingress.networking.k8s.io \"web\" is invalid: [status.loadBalancer.ingress[0].ip: Invalid value: \"10.0.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff), status.loadBalancer.ingress[1].hostname: Invalid value: \"10.1.2.3\": must be a DNS name, not an IP address]"
    );
    let (_, stored) = call(&env, "GET", &format!("{ingresses}/web"), None).await;
    assert_eq!(stored["status"], written["status"]);
}

/// v1 Endpoints are deprecated since v1.33: every request gets upstream's `Warning`;
/// EndpointSlices do not.
#[tokio::test]
async fn v1_endpoints_requests_warn_of_the_deprecation() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let warning =
        "299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\"";
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "ext"},
        "subsets": [{"addresses": [{"ip": "10.1.2.3"}], "ports": [{"port": 80}]}]});
    let collection = "/api/v1/namespaces/default/endpoints";
    let (code, warnings, body) = request(&client, "POST", collection, None, Some(endpoints)).await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(warnings, [warning]);
    for path in [collection.to_string(), format!("{collection}/ext")] {
        let (code, warnings, body) = request(&client, "GET", &path, None, None).await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(warnings, [warning], "{path}");
    }
    let (code, warnings, _) = request(
        &client,
        "GET",
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        None,
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert!(warnings.is_empty(), "{warnings:?}");
}

/// The server keeps upstream's default ServiceCIDR `kubernetes` for the cluster IP range the
/// Services get their addresses from, Ready as upstream's controller marks it.
#[tokio::test]
async fn the_default_service_cidr_is_kept() {
    let env = TestEnv::start().await.expect("env");
    let (code, cidr) = call(
        &env,
        "GET",
        "/apis/networking.k8s.io/v1/servicecidrs/kubernetes",
        None,
    )
    .await;
    assert_eq!(code, 200, "{cidr}");
    assert_eq!(cidr["spec"]["cidrs"], json!(["10.96.0.0/12"]), "{cidr}");
    let ready = &cidr["status"]["conditions"][0];
    assert_eq!(ready["type"], "Ready", "{cidr}");
    assert_eq!(ready["status"], "True", "{cidr}");
    assert_eq!(ready["message"], "Kubernetes default Service CIDR is ready");
    // The `kubernetes` Service's address is in it.
    let (_, service) = call(
        &env,
        "GET",
        "/api/v1/namespaces/default/services/kubernetes",
        None,
    )
    .await;
    assert_eq!(service["spec"]["clusterIP"], "10.96.0.1");
}

/// Every Service cluster IP has its IPAddress (named by the address, naming the Service, managed
/// by upstream's allocator), released when the Service goes; headless Services hold none.
#[tokio::test]
async fn service_cluster_ips_have_ip_addresses() {
    let env = TestEnv::start().await.expect("env");
    let addresses = IP_ADDRESSES;
    let wait = std::time::Duration::from_secs(20);
    // The `kubernetes` Service's address.
    wait_until(wait, "10.96.0.1 is recorded", || async {
        call(&env, "GET", &format!("{addresses}/10.96.0.1"), None)
            .await
            .0
            == 200
    })
    .await
    .expect("kubernetes service address");
    let ip = service_with_address(&env, "web").await;
    let path = format!("{addresses}/{ip}");
    let (_, address) = call(&env, "GET", &path, None).await;
    assert_eq!(
        address["spec"]["parentRef"],
        json!({"resource": "services", "namespace": "default", "name": "web"}),
        "{address}"
    );
    assert_eq!(
        address["metadata"]["labels"],
        json!({"ipaddress.kubernetes.io/ip-family": "IPv4",
               "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"})
    );
    let headless = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
                          "spec": {"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}});
    let (code, _) = call(
        &env,
        "POST",
        "/api/v1/namespaces/default/services",
        Some(&headless),
    )
    .await;
    assert_eq!(code, 201);
    let (code, _) = call(
        &env,
        "DELETE",
        "/api/v1/namespaces/default/services/web",
        None,
    )
    .await;
    assert_eq!(code, 200);
    wait_until(wait, "the address is released", || async {
        call(&env, "GET", &path, None).await.0 == 404
    })
    .await
    .expect("released");
    let (_, list) = call(&env, "GET", addresses, None).await;
    let names: Vec<&str> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["metadata"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["10.96.0.1"],
        "only the kubernetes Service holds one"
    );
}
