//! Core verbs through kube::Client: CRUD, selectors, pagination, concurrency, patches, errors.

mod common;

use common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn cm(name: &str, labels: serde_json::Value, data: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": data}))
        .expect("configmap")
}

#[tokio::test]
async fn builtin_namespaces_exist() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<Namespace> = Api::all(env.client());
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    for ns in ["default", "kube-system", "kube-public"] {
        assert!(names.iter().any(|n| n == ns), "{ns} missing from {names:?}");
    }
    let default = api.get("default").await.expect("default");
    assert_eq!(
        default.status.and_then(|s| s.phase).as_deref(),
        Some("Active")
    );
}

#[tokio::test]
async fn configmap_crud_round_trip() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let created = api
        .create(
            &PostParams::default(),
            &cm("cm1", json!({"a": "b"}), json!({"k": "v"})),
        )
        .await
        .expect("create");
    let meta = &created.metadata;
    assert!(meta.uid.as_deref().is_some_and(|u| u.len() == 36));
    assert!(meta.creation_timestamp.is_some());
    let rv1: u64 = meta
        .resource_version
        .as_deref()
        .expect("rv")
        .parse()
        .expect("numeric rv");
    assert_eq!(meta.namespace.as_deref(), Some("default"));

    let got = api.get("cm1").await.expect("get");
    assert_eq!(
        got.data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("v")
    );

    // Update with the current resourceVersion works and bumps it.
    let mut next = got.clone();
    next.data = Some([("k".to_string(), "w".to_string())].into());
    let updated = api
        .replace("cm1", &PostParams::default(), &next)
        .await
        .expect("replace");
    let rv2: u64 = updated
        .metadata
        .resource_version
        .as_deref()
        .expect("rv")
        .parse()
        .expect("rv");
    assert!(rv2 > rv1);

    // A stale resourceVersion is a conflict, and changes nothing.
    let err = api
        .replace("cm1", &PostParams::default(), &next)
        .await
        .expect_err("stale");
    assert_eq!(code(err), 409);
    assert_eq!(
        api.get("cm1").await.expect("get").metadata.resource_version,
        updated.metadata.resource_version
    );

    // Creating it again is AlreadyExists.
    let err = api
        .create(&PostParams::default(), &cm("cm1", json!({}), json!({})))
        .await
        .expect_err("exists");
    assert_eq!(code(err), 409);

    api.delete("cm1", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(code(api.get("cm1").await.expect_err("gone")), 404);
}

#[tokio::test]
async fn generate_name_and_no_op_update() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let obj: ConfigMap =
        serde_json::from_value(json!({"metadata": {"generateName": "gen-"}})).expect("cm");
    let a = api
        .create(&PostParams::default(), &obj)
        .await
        .expect("create");
    let b = api
        .create(&PostParams::default(), &obj)
        .await
        .expect("create");
    let (na, nb) = (
        a.metadata.name.clone().expect("name"),
        b.metadata.name.clone().expect("name"),
    );
    assert!(na.starts_with("gen-") && na.len() == 9, "{na}");
    assert_ne!(na, nb);
    // Replacing with identical content does not write a new revision.
    let same = api
        .replace(&na, &PostParams::default(), &a)
        .await
        .expect("replace");
    assert_eq!(same.metadata.resource_version, a.metadata.resource_version);
}

#[tokio::test]
async fn label_and_field_selectors_and_pagination() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..7 {
        let tier = if i % 2 == 0 { "front" } else { "back" };
        api.create(
            &PostParams::default(),
            &cm(
                &format!("cm{i}"),
                json!({"tier": tier, "idx": i.to_string()}),
                json!({}),
            ),
        )
        .await
        .expect("create");
    }
    let names = |list: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        list.items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect()
    };
    let front = api
        .list(&ListParams::default().labels("tier=front"))
        .await
        .expect("list");
    assert_eq!(names(front), vec!["cm0", "cm2", "cm4", "cm6"]);
    let set = api
        .list(&ListParams::default().labels("tier in (back),idx notin (3)"))
        .await
        .expect("list");
    assert_eq!(names(set), vec!["cm1", "cm5"]);
    let neq = api
        .list(&ListParams::default().labels("tier!=front,!missing"))
        .await
        .expect("list");
    assert_eq!(names(neq).len(), 3);
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=cm3"))
        .await
        .expect("list");
    assert_eq!(names(by_name), vec!["cm3"]);
    let err = api
        .list(&ListParams::default().fields("data.k=v"))
        .await
        .expect_err("unsupported field");
    assert_eq!(code(err), 400);
    let err = api
        .list(&ListParams::default().labels("tier in (front"))
        .await
        .expect_err("bad selector");
    assert_eq!(code(err), 400);

    // Pages of 3 over a consistent snapshot: a create between pages does not show up.
    let first = api
        .list(&ListParams::default().limit(3))
        .await
        .expect("page 1");
    let token = first.metadata.continue_.clone().expect("continue");
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    api.create(&PostParams::default(), &cm("cm99", json!({}), json!({})))
        .await
        .expect("create");
    let second = api
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .expect("page 2");
    let token = second.metadata.continue_.clone().expect("continue");
    let third = api
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .expect("page 3");
    assert!(
        third
            .metadata
            .continue_
            .as_deref()
            .is_none_or(str::is_empty)
    );
    let all: Vec<String> = [names(first), names(second), names(third)].concat();
    assert_eq!(all, vec!["cm0", "cm1", "cm2", "cm3", "cm4", "cm5", "cm6"]);
    assert_eq!(
        api.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        8
    );
}

#[tokio::test]
async fn merge_json_and_strategic_patches() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(
        &PostParams::default(),
        &cm("p", json!({"a": "1"}), json!({"x": "1", "y": "2"})),
    )
    .await
    .expect("create");
    let merged = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"x": null, "z": "3"}})),
        )
        .await
        .expect("merge");
    let data = merged.data.expect("data");
    assert_eq!(
        (data.get("x"), data.get("z").map(String::as_str)),
        (None, Some("3"))
    );
    let patched = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "test", "path": "/data/y", "value": "2"},
                    {"op": "replace", "path": "/data/y", "value": "22"}
                ]))
                .expect("json patch"),
            ),
        )
        .await
        .expect("json patch");
    assert_eq!(
        patched.data.expect("data").get("y").map(String::as_str),
        Some("22")
    );
    let failed = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "test", "path": "/data/y", "value": "nope"},
                    {"op": "replace", "path": "/data/y", "value": "bad"}
                ]))
                .expect("json patch"),
            ),
        )
        .await
        .expect_err("test op fails");
    assert!(matches!(code(failed), 422 | 409 | 400));
    assert_eq!(
        api.get("p")
            .await
            .expect("get")
            .data
            .expect("data")
            .get("y")
            .map(String::as_str),
        Some("22"),
        "a rejected patch changes nothing"
    );
    let strategic = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"b": "2"}}})),
        )
        .await
        .expect("strategic");
    assert_eq!(strategic.metadata.labels.expect("labels").len(), 2);
}

#[tokio::test]
async fn delete_preconditions_dry_run_and_deletecollection() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let created = api
        .create(
            &PostParams::default(),
            &cm("d", json!({"g": "x"}), json!({})),
        )
        .await
        .expect("create");
    let mut dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: Some("wrong".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    assert_eq!(
        code(api.delete("d", &dp).await.expect_err("precondition")),
        409
    );
    api.get("d").await.expect("still there");

    // Dry runs store nothing.
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    api.create(&dry, &cm("dry", json!({}), json!({})))
        .await
        .expect("dry create");
    assert_eq!(code(api.get("dry").await.expect_err("not stored")), 404);
    api.delete(
        "d",
        &DeleteParams {
            dry_run: true,
            ..DeleteParams::default()
        },
    )
    .await
    .expect("dry delete");
    api.get("d").await.expect("dry delete keeps it");

    dp.preconditions = Some(kube::api::Preconditions {
        uid: created.metadata.uid.clone(),
        resource_version: None,
    });
    api.delete("d", &dp)
        .await
        .expect("delete with matching uid");

    for i in 0..4 {
        api.create(
            &PostParams::default(),
            &cm(
                &format!("c{i}"),
                json!({"g": if i < 3 {"x"} else {"y"}}),
                json!({}),
            ),
        )
        .await
        .expect("create");
    }
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("g=x"),
    )
    .await
    .expect("deletecollection");
    let left: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(left, vec!["c3"]);
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let obj: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "f", "finalizers": ["example.com/hold"]}}),
    )
    .expect("cm");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("create");
    api.delete("f", &DeleteParams::default())
        .await
        .expect("delete");
    let held = api.get("f").await.expect("still there");
    assert!(held.metadata.deletion_timestamp.is_some());
    let err = api
        .patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}),
            ),
        )
        .await
        .expect_err("no new finalizers while deleting");
    assert_eq!(code(err), 422);
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("remove finalizer");
    assert_eq!(code(api.get("f").await.expect_err("gone")), 404);
}

#[tokio::test]
async fn bad_input_gets_status_errors() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // Invalid name → 422 with a cause naming metadata.name.
    let (status, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");

    // Invalid label → 422.
    let err = api
        .create(
            &PostParams::default(),
            &cm("ok", json!({"bad key!": "v"}), json!({})),
        )
        .await
        .expect_err("label");
    assert_eq!(code(err), 422);

    // Malformed JSON → 400.
    let (status, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        b"{\"apiVersion\":\"v1\",\"kind\":\"Con".to_vec(),
    )
    .await;
    assert_eq!((status, body["reason"].as_str()), (400, Some("BadRequest")));

    // YAML bodies are accepted.
    let (status, _) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/yaml"),
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\n".to_vec(),
    )
    .await;
    assert_eq!(status, 201);

    // Over 3 MiB → 413.
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "x".repeat(3 * 1024 * 1024 + 10)}});
    let (status, body) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        big.to_string().into_bytes(),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(code(api.get("big").await.expect_err("not stored")), 404);

    // Unknown resource → 404; unsupported verb → 405; unsupported patch type → 415.
    let (status, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/nothings",
        None,
        vec![],
    )
    .await;
    assert_eq!((status, body["reason"].as_str()), (404, Some("NotFound")));
    let (status, body) = raw(
        &client,
        "PUT",
        "/api/v1/namespaces/default/configmaps",
        Some("application/json"),
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (405, Some("MethodNotAllowed"))
    );
    let (status, body) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/from-yaml",
        Some("text/plain"),
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );

    // Missing namespace → 404 naming the namespace.
    let missing: Api<ConfigMap> = Api::namespaced(client.clone(), "nope");
    let err = missing
        .create(&PostParams::default(), &cm("x", json!({}), json!({})))
        .await
        .expect_err("ns");
    match err {
        kube::Error::Api(s) => assert_eq!(s.message, "namespaces \"nope\" not found"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn unauthenticated_requests_get_401() {
    let env = TestEnv::start().await.expect("env");
    let url = format!("{}/api/v1/namespaces", env.server().url());
    let ca = env.server().ca_pem().expect("tls").to_string();
    let status = tokio::task::spawn_blocking(move || curl_status(&url, &ca))
        .await
        .expect("join");
    if let Some(status) = status {
        assert_eq!(status, 401);
    }
}

/// Uses curl (present on CI machines) to send a request without a token.
fn curl_status(url: &str, ca_pem: &str) -> Option<u16> {
    let dir = tempfile::tempdir().ok()?;
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).ok()?;
    let out = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
        .arg(&ca)
        .arg(url)
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Regression: clearing a terminating namespace's own finalizers must not remove it while its
/// contents (held by a finalizer) remain: `spec.finalizers` keeps it until they are gone.
#[tokio::test]
async fn terminating_namespace_waits_for_its_contents() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(
        json!({"metadata": {"name": "held", "finalizers": ["example.com/ns"]}}),
    )
    .expect("ns");
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("create ns");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "held");
    let held: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "c", "finalizers": ["example.com/hold"]}}),
    )
    .expect("cm");
    cms.create(&PostParams::default(), &held)
        .await
        .expect("create cm");
    namespaces
        .delete("held", &DeleteParams::default())
        .await
        .expect("delete ns");
    let terminating = namespaces.get("held").await.expect("terminating");
    assert_eq!(
        terminating.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    // New content is refused while terminating.
    let err = cms
        .create(&PostParams::default(), &cm("late", json!({}), json!({})))
        .await
        .expect_err("terminating");
    assert_eq!(code(err), 403);
    namespaces
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("clear ns finalizer");
    assert!(
        namespaces.get_opt("held").await.expect("get").is_some(),
        "contents remain, so does the namespace"
    );
    cms.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release cm");
    wait_until(WAIT, "namespace gone", || {
        let namespaces = namespaces.clone();
        async move { namespaces.get_opt("held").await.ok().flatten().is_none() }
    })
    .await
    .expect("namespace removed after its contents");
}

#[tokio::test]
async fn insecure_http_serves_loopback_without_a_token() {
    let config = korral_apiserver::ServerConfig {
        tls: false,
        ..korral_apiserver::ServerConfig::in_memory()
    };
    let env = TestEnv::builder()
        .server_config(config)
        .start()
        .await
        .expect("env");
    assert!(env.server().url().starts_with("http://"));
    let url = format!("{}/api/v1/namespaces/default", env.server().url());
    let status = tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}"])
            .arg(&url)
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u16>()
            .ok()
    })
    .await
    .expect("join");
    if let Some(status) = status {
        assert_eq!(status, 200);
    }
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("plain", json!({}), json!({})))
        .await
        .expect("create over http");
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        body.to_string().into_bytes()
    };
    raw(client, method, path, Some("application/json"), bytes).await
}

/// `namespaces/finalize` as upstream: update only (discovery and 405 for other verbs), it
/// changes `spec.finalizers` but not the status, and a terminating namespace whose last spec
/// finalizer goes is removed (how users unstick a namespace held by a gone controller).
#[tokio::test]
async fn namespace_finalize_subresource() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (code, discovery) = send(&client, "GET", "/api/v1", serde_json::Value::Null).await;
    assert_eq!(code, 200);
    // As k8s-reference/builtin/discovery-core-v1-full.json lists it.
    let captured = json!({"name": "namespaces/finalize", "singularName": "", "namespaced": false, "kind": "Namespace", "verbs": ["update"]});
    let entry = |doc: &serde_json::Value| {
        doc["resources"].as_array().and_then(|r| {
            r.iter()
                .find(|e| e["name"] == "namespaces/finalize")
                .cloned()
        })
    };
    assert_eq!(entry(&discovery), Some(captured));

    let (code, created) = send(
        &client,
        "POST",
        "/api/v1/namespaces",
        json!({"metadata": {"name": "stuck"}, "spec": {"finalizers": ["example.com/agent"]}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let (code, _) = send(
        &client,
        "DELETE",
        "/api/v1/namespaces/stuck",
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(code, 200);
    // The namespace controller removes only its own `kubernetes` finalizer, if any.
    let (code, status) = send(
        &client,
        "GET",
        "/api/v1/namespaces/stuck/finalize",
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (405, Some("MethodNotAllowed")),
        "{status}"
    );
    let (code, status) = send(
        &client,
        "PATCH",
        "/api/v1/namespaces/stuck/finalize",
        json!({"spec": {"finalizers": []}}),
    )
    .await;
    assert_eq!(code, 405, "{status}");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let held = namespaces
        .get("stuck")
        .await
        .expect("held by its spec finalizer");
    assert_eq!(
        held.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Terminating")
    );
    let mut finalize = serde_json::to_value(&held).expect("json");
    finalize["spec"]["finalizers"] = json!([]);
    finalize["status"] = json!({"phase": "Active"});
    let (code, answer) = send(
        &client,
        "PUT",
        "/api/v1/namespaces/stuck/finalize",
        finalize,
    )
    .await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(
        answer["status"]["phase"], "Terminating",
        "the status is not the finalizer's"
    );
    wait_until(WAIT, "the finalized namespace is gone", || {
        let namespaces = namespaces.clone();
        async move { namespaces.get_opt("stuck").await.ok().flatten().is_none() }
    })
    .await
    .expect("namespace removed");
}

/// The garbage collector writes through the write pipeline as upstream's
/// (`generic-garbage-collector`): admission can refuse its orphaning of a dependent, which then
/// keeps its owner reference (and the owner its `orphan` finalizer) until admission allows it.
#[tokio::test]
async fn garbage_collector_writes_pass_admission() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (code, body) = send(
        &client,
        "POST",
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "keep-owners"},
            "spec": {
                "matchConstraints": {"resourceRules": [{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
                "validations": [{"expression": "request.userInfo.username != 'system:serviceaccount:kube-system:generic-garbage-collector'"}],
            },
        }),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = send(
        &client,
        "POST",
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "keep-owners"},
            "spec": {"policyName": "keep-owners", "validationActions": ["Deny"]},
        }),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = cms
        .create(&PostParams::default(), &cm("owner", json!({}), json!({})))
        .await
        .expect("owner");
    let mut dependent = cm("dependent", json!({}), json!({}));
    dependent.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "owner".into(),
            uid: owner.metadata.uid.clone().unwrap_or_default(),
            ..Default::default()
        },
    ]);
    cms.create(&PostParams::default(), &dependent)
        .await
        .expect("dependent");
    cms.delete(
        "owner",
        &DeleteParams {
            propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
            ..DeleteParams::default()
        },
    )
    .await
    .expect("orphan delete");
    // Refused: the GC's update of the dependent is retried; nothing changes meanwhile.
    wait_until(WAIT, "the owner waits with its orphan finalizer", || {
        let cms = cms.clone();
        async move {
            cms.get_opt("owner").await.ok().flatten().is_some_and(|o| {
                o.metadata
                    .finalizers
                    .unwrap_or_default()
                    .contains(&"orphan".to_string())
            })
        }
    })
    .await
    .expect("owner held");
    let kept = cms.get("dependent").await.expect("dependent");
    assert_eq!(kept.metadata.owner_references.map(|r| r.len()), Some(1));
    let (code, _) = send(
        &client,
        "DELETE",
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/keep-owners",
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(code, 200);
    wait_until(WAIT, "orphaned once admission allows it", || {
        let cms = cms.clone();
        async move {
            let owner_gone = cms.get_opt("owner").await.ok().flatten().is_none();
            let orphan = cms
                .get_opt("dependent")
                .await
                .ok()
                .flatten()
                .is_some_and(|d| d.metadata.owner_references.unwrap_or_default().is_empty());
            owner_gone && orphan
        }
    })
    .await
    .expect("orphaned");
}

/// Namespace rules as upstream: the immortal namespaces cannot be deleted, `spec.finalizers`
/// and the finalizers of built-in objects must be standard or domain-qualified (custom
/// resources only get a warning), and a namespace's phase follows its deletion.
#[tokio::test]
async fn namespace_and_finalizer_name_rules() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    for immortal in ["default", "kube-system", "kube-public"] {
        let (code, status) = send(
            &client,
            "DELETE",
            &format!("/api/v1/namespaces/{immortal}"),
            serde_json::Value::Null,
        )
        .await;
        assert_eq!(code, 403, "{status}");
        assert_eq!(
            status["message"],
            format!("namespaces \"{immortal}\" is forbidden: this namespace may not be deleted")
        );
    }
    let (code, status) = send(
        &client,
        "POST",
        "/api/v1/namespaces",
        json!({"metadata": {"name": "fin"}, "spec": {"finalizers": ["hold", "example.com/ok"]}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": "Invalid value: \"hold\": name is neither a standard finalizer name nor is it fully qualified", "field": "spec.finalizers"}])
    );
    let (code, status) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"name": "held", "finalizers": ["example.com/a", "hold"]}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "ConfigMap \"held\" is invalid: metadata.finalizers[1]: Invalid value: \"hold\": name is neither a standard finalizer name nor is it fully qualified"
    );
    // The phase follows the deletion timestamp.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let live = namespaces.get("default").await.expect("default");
    let mut terminating = serde_json::to_value(&live).expect("json");
    terminating["status"]["phase"] = json!("Terminating");
    let (code, status) = send(
        &client,
        "PUT",
        "/api/v1/namespaces/default/status",
        terminating,
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"
    );
    assert_eq!(status["details"]["causes"][0]["field"], "status.Phase");
    // Custom resources: accepted with upstream's warning.
    install_widget_crd(&env).await;
    let (code, warnings, body) = request(
        &client,
        "POST",
        "/apis/ref.example.org/v1/namespaces/default/widgets",
        None,
        Some(json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "w", "finalizers": ["hold"]}, "spec": {"replicas": 1}})),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        warnings,
        vec![
            "299 - \"metadata.finalizers[0]: \\\"hold\\\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers\"".to_string()
        ]
    );
}

/// One request with `Accept: accept`: the status code, the `Content-Type` and the body text.
async fn fetch_as(
    env: &TestEnv,
    method: &str,
    path: &str,
    accept: &str,
    body: Option<(&str, &str)>,
) -> (u16, String, String) {
    let mut headers = vec![("accept", accept)];
    headers.extend(body.map(|(content_type, _)| ("content-type", content_type)));
    let bytes = body.map(|(_, b)| b.as_bytes().to_vec()).unwrap_or_default();
    let (code, headers, bytes) = exchange(&env.client(), method, path, &headers, bytes).await;
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (
        code,
        content_type,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

/// A client that asks for YAML gets YAML, as from upstream's serializer: objects, lists,
/// Tables and error Statuses, map keys sorted; the same content as the JSON answer.
#[tokio::test]
async fn yaml_is_answered_as_yaml() {
    let env = TestEnv::start().await.expect("env");
    let collection = "/api/v1/namespaces/default/configmaps";
    let (code, content_type, text) = fetch_as(
        &env,
        "POST",
        collection,
        "application/yaml",
        Some((
            "application/yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  zeta: \"1\"\n  alpha: \"true\"\n",
        )),
    )
    .await;
    assert_eq!(
        (code, content_type.as_str()),
        (201, "application/yaml"),
        "{text}"
    );
    assert!(
        text.starts_with(
            "apiVersion: v1\ndata:\n  alpha: 'true'\n  zeta: '1'\nkind: ConfigMap\nmetadata:\n"
        ),
        "{text}"
    );
    let (_, json) = call(&env, "GET", &format!("{collection}/yml"), None).await;
    let (code, _, text) = fetch_as(
        &env,
        "GET",
        &format!("{collection}/yml"),
        "application/yaml",
        None,
    )
    .await;
    assert_eq!(code, 200);
    let parsed: serde_json::Value = serde_yaml_ng::from_str(&text).expect("yaml");
    assert_eq!(parsed, json);

    let (code, content_type, text) =
        fetch_as(&env, "GET", collection, "application/yaml", None).await;
    assert_eq!((code, content_type.as_str()), (200, "application/yaml"));
    let list: serde_json::Value = serde_yaml_ng::from_str(&text).expect("yaml list");
    assert_eq!(list["kind"], "ConfigMapList");
    assert!(
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|i| i["metadata"]["name"] == "yml")
    );

    let table_accept = "application/yaml;as=Table;v=v1;g=meta.k8s.io";
    let (code, content_type, text) = fetch_as(
        &env,
        "GET",
        &format!("{collection}/yml"),
        table_accept,
        None,
    )
    .await;
    assert_eq!((code, content_type.as_str()), (200, "application/yaml"));
    let table: serde_json::Value = serde_yaml_ng::from_str(&text).expect("yaml table");
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["rows"][0]["cells"][0], "yml");

    let (code, content_type, text) = fetch_as(
        &env,
        "GET",
        &format!("{collection}/missing"),
        "application/yaml",
        None,
    )
    .await;
    assert_eq!((code, content_type.as_str()), (404, "application/yaml"));
    let status: serde_json::Value = serde_yaml_ng::from_str(&text).expect("yaml status");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["message"], "configmaps \"missing\" not found");

    // A watch has no YAML form: 406, in JSON, as upstream.
    let (code, content_type, text) = fetch_as(
        &env,
        "GET",
        &format!("{collection}?watch=true"),
        "application/yaml",
        None,
    )
    .await;
    assert_eq!(
        (code, content_type.as_str()),
        (406, "application/json"),
        "{text}"
    );
}

/// `componentstatuses` as upstream serves them: `get` and `list` only (405 for the rest, a
/// watch included), computed at each read and never stored, with the deprecation warning and
/// upstream's table; the discovery entry is the captured one. The simulated scheduler and
/// controllers are healthy on a simulating server, reported not running without one.
#[tokio::test]
async fn component_statuses_are_computed_and_read_only() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (code, discovery) = send(&client, "GET", "/api/v1", serde_json::Value::Null).await;
    assert_eq!(code, 200);
    let capture: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/groups/discovery-core-v1.json"))
            .expect("capture");
    let entry = |doc: &serde_json::Value| {
        doc["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|e| e["name"] == "componentstatuses").cloned())
    };
    assert!(entry(&capture).is_some());
    assert_eq!(entry(&discovery), entry(&capture));

    let path = "/api/v1/componentstatuses";
    let (code, list) = send(&client, "GET", path, serde_json::Value::Null).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "ComponentStatusList");
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["controller-manager", "etcd-0", "scheduler"]);
    let (code, etcd) = send(
        &client,
        "GET",
        &format!("{path}/etcd-0"),
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        etcd["conditions"],
        json!([{"type": "Healthy", "status": "True", "message": "ok"}])
    );
    let (code, scheduler) = send(
        &client,
        "GET",
        &format!("{path}/scheduler"),
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(scheduler["conditions"][0]["status"], "False", "{scheduler}");
    let (code, _) = send(
        &client,
        "GET",
        &format!("{path}/apiserver"),
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(code, 404);
    let printed = table(&env, path).await;
    let header: Vec<&str> = printed["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(header, ["Name", "Status", "Message", "Error"]);
    assert_eq!(
        printed["rows"][1]["cells"],
        json!(["etcd-0", "Healthy", "ok", ""])
    );

    for (method, at, body) in [
        (
            "POST",
            path.to_string(),
            json!({"apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": "x"}}),
        ),
        ("DELETE", format!("{path}/etcd-0"), serde_json::Value::Null),
        ("DELETE", path.to_string(), serde_json::Value::Null),
        (
            "PATCH",
            format!("{path}/etcd-0"),
            json!({"metadata": {"labels": {"a": "b"}}}),
        ),
        ("GET", format!("{path}?watch=true"), serde_json::Value::Null),
    ] {
        let (code, status) = send(&client, method, &at, body).await;
        assert_eq!(
            (code, status["reason"].as_str()),
            (405, Some("MethodNotAllowed")),
            "{method} {at}: {status}"
        );
    }
    // The create-only `bindings` refuse reads the same way.
    let (code, _) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/bindings",
        serde_json::Value::Null,
    )
    .await;
    assert_eq!(code, 405);

    let simulating = TestEnv::builder()
        .simulation(true)
        .start()
        .await
        .expect("env");
    let table = table(&simulating, path).await;
    for row in table["rows"].as_array().expect("rows") {
        assert_eq!(row["cells"][1], "Healthy", "{row}");
    }
}
