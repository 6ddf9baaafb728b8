//! Server-side apply through kube-rs (`Patch::Apply`) and raw requests: create-if-absent,
//! `managedFields`, co-ownership, conflicts, force, removal of fields no longer applied,
//! associative lists, the status subresource, dry runs, and rejected requests.

mod common;

use common::{TestEnv, code, install_widget_crd, raw, widgets};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const APPLY: &str = "application/apply-patch+yaml";

fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn pp(manager: &str) -> PatchParams {
    PatchParams::apply(manager)
}

fn managed(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn entry(obj: &Value, manager: &str) -> Option<Value> {
    managed(obj).into_iter().find(|e| e["manager"] == manager)
}

async fn apply_cm(api: &Api<ConfigMap>, name: &str, data: Value, manager: &str) -> Value {
    let obj = api
        .patch(name, &pp(manager), &Patch::Apply(cm(name, data)))
        .await
        .expect("apply");
    serde_json::to_value(obj).expect("json")
}

#[tokio::test]
async fn apply_creates_when_absent_with_managed_fields_like_upstream() {
    let env = TestEnv::start().await.expect("env");
    let path = "/api/v1/namespaces/default/configmaps/ssa?fieldManager=alice";
    let body = serde_json::to_vec(&cm("ssa", json!({"a": "1"}))).expect("body");
    let (status, obj) = raw(&env.client(), "PATCH", path, Some(APPLY), body.clone()).await;
    assert_eq!(status, 201, "{obj}");
    assert_eq!(obj["data"], json!({"a": "1"}));
    let e = managed(&obj);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["manager"], "alice");
    assert_eq!(e[0]["operation"], "Apply");
    assert_eq!(e[0]["apiVersion"], "v1");
    assert_eq!(e[0]["fieldsType"], "FieldsV1");
    assert_eq!(e[0]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    assert!(e[0]["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(e[0].get("subresource").is_none());
    // The same apply again: 200, nothing changes (same resourceVersion).
    let (status, again) = raw(&env.client(), "PATCH", path, Some(APPLY), body).await;
    assert_eq!(status, 200);
    assert_eq!(
        again["metadata"]["resourceVersion"],
        obj["metadata"]["resourceVersion"]
    );
    // YAML bodies work too.
    let yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  k: v\n".to_vec();
    let (status, obj) = raw(
        &env.client(),
        "PATCH",
        "/api/v1/namespaces/default/configmaps/yml?fieldManager=y",
        Some(APPLY),
        yaml,
    )
    .await;
    assert_eq!(status, 201, "{obj}");
    assert_eq!(obj["data"], json!({"k": "v"}));
}

#[tokio::test]
async fn managers_co_own_conflict_and_force_takes_ownership() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::default_namespaced(env.client());
    apply_cm(&api, "c", json!({"a": "1"}), "alice").await;
    // Same value: co-owned, no conflict.
    let obj = apply_cm(&api, "c", json!({"a": "1", "b": "2"}), "bob").await;
    assert_eq!(
        entry(&obj, "alice").expect("alice")["fieldsV1"],
        json!({"f:data": {"f:a": {}}})
    );
    assert_eq!(
        entry(&obj, "bob").expect("bob")["fieldsV1"],
        json!({"f:data": {"f:a": {}, "f:b": {}}})
    );
    let rv = obj["metadata"]["resourceVersion"].clone();
    // A different value conflicts with both owners: 409 with causes, nothing stored.
    let body = serde_json::to_vec(&cm("c", json!({"a": "9"}))).expect("body");
    let (status, err) = raw(
        &env.client(),
        "PATCH",
        "/api/v1/namespaces/default/configmaps/c?fieldManager=carol",
        Some(APPLY),
        body.clone(),
    )
    .await;
    assert_eq!(status, 409, "{err}");
    assert_eq!(err["reason"], "Conflict");
    assert_eq!(
        err["message"],
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .data.a\nconflicts with \"bob\":\n- .data.a"
    );
    assert_eq!(
        err["details"]["causes"],
        json!([
            {"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".data.a"},
            {"reason": "FieldManagerConflict", "message": "conflict with \"bob\"", "field": ".data.a"}
        ])
    );
    let stored = serde_json::to_value(api.get("c").await.expect("get")).expect("json");
    assert_eq!(stored["metadata"]["resourceVersion"], rv);
    assert_eq!(stored["data"]["a"], "1");
    // kube-rs surfaces the 409 as well.
    let e = api
        .patch("c", &pp("carol"), &Patch::Apply(cm("c", json!({"a": "9"}))))
        .await
        .expect_err("conflict");
    assert_eq!(code(e), 409);
    // force=true takes the field.
    let obj = api
        .patch(
            "c",
            &pp("carol").force(),
            &Patch::Apply(cm("c", json!({"a": "9"}))),
        )
        .await
        .expect("force");
    let obj = serde_json::to_value(obj).expect("json");
    assert_eq!(obj["data"], json!({"a": "9", "b": "2"}));
    assert!(entry(&obj, "alice").is_none());
    assert_eq!(
        entry(&obj, "bob").expect("bob")["fieldsV1"],
        json!({"f:data": {"f:b": {}}})
    );
    assert_eq!(
        entry(&obj, "carol").expect("carol")["fieldsV1"],
        json!({"f:data": {"f:a": {}}})
    );
}

#[tokio::test]
async fn fields_dropped_from_the_config_are_removed_unless_owned_by_another_manager() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::default_namespaced(env.client());
    apply_cm(&api, "r", json!({"a": "1", "b": "2", "c": "3"}), "alice").await;
    apply_cm(&api, "r", json!({"b": "2"}), "bob").await;
    let obj = apply_cm(&api, "r", json!({"a": "1"}), "alice").await;
    assert_eq!(obj["data"], json!({"a": "1", "b": "2"}));
    // A field set by an Update manager survives when the applier stops applying it.
    let merge = PatchParams {
        field_manager: Some("editor".into()),
        ..PatchParams::default()
    };
    api.patch("r", &merge, &Patch::Merge(json!({"data": {"e": "5"}})))
        .await
        .expect("merge patch");
    apply_cm(&api, "r", json!({"a": "1", "e": "5"}), "alice").await;
    let obj = apply_cm(&api, "r", json!({"a": "1"}), "alice").await;
    assert_eq!(obj["data"], json!({"a": "1", "b": "2", "e": "5"}));
}

#[tokio::test]
async fn update_operations_are_recorded_with_their_managers() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::default_namespaced(env.client());
    let post = PostParams {
        field_manager: Some("creator".into()),
        ..PostParams::default()
    };
    let created: ConfigMap = serde_json::from_value(cm("u", json!({"a": "1"}))).expect("cm");
    let obj =
        serde_json::to_value(api.create(&post, &created).await.expect("create")).expect("json");
    let e = entry(&obj, "creator").expect("creator");
    assert_eq!(e["operation"], "Update");
    assert_eq!(e["fieldsV1"], json!({"f:data": {".": {}, "f:a": {}}}));
    // Without fieldManager the User-Agent names the manager (empty when there is none).
    let obj = serde_json::to_value(
        api.patch(
            "u",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "2"}})),
        )
        .await
        .expect("patch"),
    )
    .expect("json");
    let others: Vec<Value> = managed(&obj)
        .into_iter()
        .filter(|e| e["manager"] != "creator")
        .collect();
    assert_eq!(others.len(), 1, "{obj}");
    assert_eq!(others[0]["fieldsV1"], json!({"f:data": {"f:b": {}}}));
    // An Update manager's field conflicts with an applier, named with its API version.
    let body = serde_json::to_vec(&cm("u", json!({"a": "2"}))).expect("body");
    let (status, err) = raw(
        &env.client(),
        "PATCH",
        "/api/v1/namespaces/default/configmaps/u?fieldManager=ssa",
        Some(APPLY),
        body,
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(
        err["message"],
        "Apply failed with 1 conflict: conflict with \"creator\" using v1: .data.a"
    );
}

fn deployment(containers: Value, replicas: Option<i64>) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}
        }
    });
    if let Some(r) = replicas {
        d["spec"]["replicas"] = json!(r);
    }
    d
}

#[tokio::test]
async fn containers_merge_by_name_and_replicas_conflict_with_a_scaler() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<Deployment> = Api::default_namespaced(env.client());
    let a = deployment(
        json!([{"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]}]),
        Some(2),
    );
    api.patch("web", &pp("team-a"), &Patch::Apply(&a))
        .await
        .expect("a");
    // Team b only adds its sidecar: both containers are kept.
    let b = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "busybox"}]}}}});
    let obj = serde_json::to_value(
        api.patch("web", &pp("team-b"), &Patch::Apply(&b))
            .await
            .expect("b"),
    )
    .expect("json");
    let names: Vec<&str> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, vec!["a", "b"]);
    let fa = entry(&obj, "team-a").expect("a")["fieldsV1"].clone();
    let c = &fa["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"a\"}"];
    assert_eq!(c["."], json!({}));
    assert!(
        c["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"].is_object(),
        "{fa}"
    );
    assert_eq!(fa["f:spec"]["f:selector"], json!({}));
    let fb = entry(&obj, "team-b").expect("b")["fieldsV1"].clone();
    assert_eq!(
        fb,
        json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"b\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
    );
    // Team a drops its port: removed; team b's container untouched.
    let a2 = deployment(json!([{"name": "a", "image": "nginx"}]), Some(2));
    let obj = serde_json::to_value(
        api.patch("web", &pp("team-a"), &Patch::Apply(&a2))
            .await
            .expect("a2"),
    )
    .expect("json");
    assert!(
        obj["spec"]["template"]["spec"]["containers"][0]
            .get("ports")
            .is_none(),
        "{obj}"
    );
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][1]["name"],
        "b"
    );
    // A scaler changes replicas through /scale; applying the old count conflicts.
    let scale_pp = PatchParams {
        field_manager: Some("scaler".into()),
        ..PatchParams::default()
    };
    api.patch_scale(
        "web",
        &scale_pp,
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await
    .expect("scale");
    let e = api
        .patch("web", &pp("team-a"), &Patch::Apply(&a2))
        .await
        .expect_err("conflict");
    match e {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 409);
            assert_eq!(
                s.message,
                "Apply failed with 1 conflict: conflict with \"scaler\" with subresource \"scale\" using apps/v1: .spec.replicas"
            );
        }
        other => panic!("{other:?}"),
    }
    let d = api.get("web").await.expect("get");
    assert_eq!(d.spec.replicas, Some(5));
    let obj = api
        .patch("web", &pp("team-a").force(), &Patch::Apply(&a2))
        .await
        .expect("force");
    assert_eq!(obj.spec.replicas, Some(2));
    // Apply through /scale: an Apply entry on subresource scale.
    let (status, scale) = raw(
        &env.client(),
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/web/scale?fieldManager=hpa&force=true",
        Some(APPLY),
        b"apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: web\nspec:\n  replicas: 5\n"
            .to_vec(),
    )
    .await;
    assert_eq!(status, 200, "{scale}");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 5);
    let obj = serde_json::to_value(api.get("web").await.expect("get")).expect("json");
    let hpa = entry(&obj, "hpa").expect("hpa entry");
    assert_eq!(hpa["operation"], "Apply");
    assert_eq!(hpa["subresource"], "scale");
    assert_eq!(hpa["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
}

#[tokio::test]
async fn status_subresource_apply_and_dry_run() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let api = widgets(&env, "default");
    let w = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"replicas": 2}, "status": {"ready": 9}});
    let obj: DynamicObject = api
        .patch("w", &pp("spec-mgr"), &Patch::Apply(&w))
        .await
        .expect("apply");
    let obj = serde_json::to_value(obj).expect("json");
    // The main resource ignores status.
    assert!(obj.get("status").is_none(), "{obj}");
    assert_eq!(
        entry(&obj, "spec-mgr").expect("e")["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
    let s = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
        "status": {"ready": 1}});
    let obj: DynamicObject = api
        .patch_status("w", &pp("status-mgr"), &Patch::Apply(&s))
        .await
        .expect("status apply");
    let obj = serde_json::to_value(obj).expect("json");
    assert_eq!(obj["status"], json!({"ready": 1}));
    assert_eq!(obj["spec"]["replicas"], 2);
    let e = entry(&obj, "status-mgr").expect("status entry");
    assert_eq!(e["subresource"], "status");
    assert_eq!(e["operation"], "Apply");
    assert_eq!(e["fieldsV1"], json!({"f:status": {"f:ready": {}}}));
    // Dry run: nothing is stored.
    let dry = pp("dry").dry_run();
    let d = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "ghost"}, "spec": {"replicas": 1}});
    let out: DynamicObject = api
        .patch("ghost", &dry, &Patch::Apply(&d))
        .await
        .expect("dry");
    assert_eq!(out.metadata.name.as_deref(), Some("ghost"));
    assert_eq!(code(api.get("ghost").await.expect_err("not stored")), 404);
    let changed = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"replicas": 7}});
    let out: DynamicObject = api
        .patch("w", &pp("spec-mgr").dry_run(), &Patch::Apply(&changed))
        .await
        .expect("dry");
    assert_eq!(out.data["spec"]["replicas"], 7);
    let stored = api.get("w").await.expect("get");
    assert_eq!(stored.data["spec"]["replicas"], 2);
    // Strategic merge patch is not served for custom resources.
    let (status, _) = raw(
        &env.client(),
        "PATCH",
        "/apis/ref.example.org/v1/namespaces/default/widgets/w",
        Some("application/strategic-merge-patch+json"),
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(status, 415);
}

#[tokio::test]
async fn crd_list_types_are_read_from_the_schema() {
    let env = TestEnv::start().await.expect("env");
    let crd = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.ref.example.org"},
        "spec": {"group": "ref.example.org", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "args": {"type": "array", "items": {"type": "string"}}
                }}}}}}]}
    }))
    .expect("crd");
    env.install_crd(crd).await.expect("install");
    let gvk = kube::core::GroupVersionKind::gvk("ref.example.org", "v1", "Gadget");
    let ar = kube::core::ApiResource::from_gvk_with_plural(&gvk, "gadgets");
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &ar);
    let g = |spec: Value| json!({"apiVersion": "ref.example.org/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec});
    api.patch(
        "g",
        &pp("one"),
        &Patch::Apply(g(
            json!({"ports": [{"name": "http", "port": 80}], "tags": ["a"], "args": ["x"]}),
        )),
    )
    .await
    .expect("one");
    let obj: DynamicObject = api
        .patch(
            "g",
            &pp("two"),
            &Patch::Apply(g(
                json!({"ports": [{"name": "grpc", "port": 90}], "tags": ["b"]}),
            )),
        )
        .await
        .expect("two");
    let obj = serde_json::to_value(obj).expect("json");
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "grpc", "port": 90}])
    );
    assert_eq!(obj["spec"]["tags"], json!(["a", "b"]));
    let two = entry(&obj, "two").expect("two")["fieldsV1"].clone();
    assert_eq!(
        two,
        json!({"f:spec": {"f:ports": {"k:{\"name\":\"grpc\"}": {".": {}, "f:name": {}, "f:port": {}}}, "f:tags": {"v:\"b\"": {}}}})
    );
    // The atomic list conflicts as a whole.
    let e = api
        .patch("g", &pp("two"), &Patch::Apply(g(json!({"args": ["y"]}))))
        .await
        .expect_err("atomic conflict");
    assert_eq!(code(e), 409);
}

#[tokio::test]
async fn bad_requests_are_rejected_and_change_nothing() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let obj = apply_cm(&api, "h", json!({"a": "1"}), "alice").await;
    let rv = obj["metadata"]["resourceVersion"].clone();
    let base = "/api/v1/namespaces/default/configmaps/h";
    let body = serde_json::to_vec(&cm("h", json!({"a": "2"}))).expect("body");
    // Missing fieldManager.
    let (status, err) = raw(&client, "PATCH", base, Some(APPLY), body.clone()).await;
    assert_eq!(status, 422, "{err}");
    assert_eq!(
        err["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    // Too long and unprintable managers, on apply and on create.
    let long = "m".repeat(129);
    let (status, err) = raw(
        &client,
        "PATCH",
        &format!("{base}?fieldManager={long}"),
        Some(APPLY),
        body.clone(),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(err["details"]["causes"][0]["field"], "fieldManager");
    let (status, _) = raw(
        &client,
        "PATCH",
        &format!("{base}?fieldManager=a%07b"),
        Some(APPLY),
        body.clone(),
    )
    .await;
    assert_eq!(status, 422);
    let (status, err) = raw(
        &client,
        "POST",
        &format!("/api/v1/namespaces/default/configmaps?fieldManager={long}"),
        Some("application/json"),
        serde_json::to_vec(&cm("new", json!({}))).expect("body"),
    )
    .await;
    assert_eq!(status, 422);
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("CreateOptions.meta.k8s.io")
    );
    // force on a non-apply patch.
    let (status, _) = raw(
        &client,
        "PATCH",
        &format!("{base}?force=true&fieldManager=x"),
        Some("application/merge-patch+json"),
        b"{\"data\":{\"a\":\"3\"}}".to_vec(),
    )
    .await;
    assert_eq!(status, 422);
    // Deeply nested, malformed, mismatched bodies.
    let mut deep = String::from(
        "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"h\",\"labels\":",
    );
    for _ in 0..5000 {
        deep.push_str("{\"a\":");
    }
    deep.push('1');
    deep.push_str(&"}".repeat(5002));
    let with_mgr = format!("{base}?fieldManager=evil");
    let (status, _) = raw(&client, "PATCH", &with_mgr, Some(APPLY), deep.into_bytes()).await;
    assert_eq!(status, 400);
    let mut nested = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: h}\ndata: ");
    nested.push_str(&"[".repeat(120));
    nested.push_str(&"]".repeat(120));
    let (status, _) = raw(
        &client,
        "PATCH",
        &with_mgr,
        Some(APPLY),
        nested.into_bytes(),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = raw(
        &client,
        "PATCH",
        &with_mgr,
        Some(APPLY),
        b"{not: [yaml".to_vec(),
    )
    .await;
    assert_eq!(status, 400);
    let (status, err) = raw(
        &client,
        "PATCH",
        &with_mgr,
        Some(APPLY),
        b"apiVersion: v2\nkind: ConfigMap\n".to_vec(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        err["message"],
        "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"
    );
    let (status, _) = raw(
        &client,
        "PATCH",
        &with_mgr,
        Some(APPLY),
        serde_json::to_vec(&cm("other", json!({}))).expect("body"),
    )
    .await;
    assert_eq!(status, 400);
    // managedFields may not be applied.
    let mut with_mf = cm("h", json!({"a": "1"}));
    with_mf["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Apply"}]);
    let (status, err) = raw(
        &client,
        "PATCH",
        &with_mgr,
        Some(APPLY),
        serde_json::to_vec(&with_mf).expect("body"),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(err["message"], "metadata.managedFields must be nil");
    // An aliased YAML bomb is refused by the decoder.
    let bomb = b"apiVersion: v1\nkind: ConfigMap\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
    let (status, _) = raw(&client, "PATCH", &with_mgr, Some(APPLY), bomb.to_vec()).await;
    assert_eq!(status, 400);
    // A huge body: 413.
    let huge = vec![b' '; 4 * 1024 * 1024];
    let (status, _) = raw(&client, "PATCH", &with_mgr, Some(APPLY), huge).await;
    assert_eq!(status, 413);
    // A list item without its key (upstream: a non-Status 500; here a 400 BadRequest with
    // upstream's typed-object text) changes nothing.
    let d = serde_json::to_vec(
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nokey"},
        "spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
    )
    .expect("body");
    let (status, err) = raw(
        &client,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/nokey?fieldManager=x",
        Some(APPLY),
        d,
    )
    .await;
    assert_eq!(
        (status, &err["reason"]),
        (400, &json!("BadRequest")),
        "{err}"
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("omits all key fields [\"name\"]"),
        "{err}"
    );
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    assert_eq!(
        code(deployments.get("nokey").await.expect_err("absent")),
        404
    );
    // Nothing above touched the object.
    let now = serde_json::to_value(api.get("h").await.expect("get")).expect("json");
    assert_eq!(now["metadata"]["resourceVersion"], rv);
    assert_eq!(now["data"], json!({"a": "1"}));
}

#[tokio::test]
async fn update_entries_match_the_reference_status_patch_capture() {
    // /work/shared/k8s-reference/status-patch.json: a create and a /status merge patch by
    // "curl" give two Update entries, the second on subresource status.
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let client = env.client();
    let (status, _) = raw(
        &client,
        "POST",
        "/apis/ref.example.org/v1/namespaces/default/widgets?fieldManager=curl",
        Some("application/json"),
        serde_json::to_vec(
            &json!({"apiVersion": "ref.example.org/v1", "kind": "Widget",
            "metadata": {"name": "w1"}, "spec": {"replicas": 2}}),
        )
        .expect("body"),
    )
    .await;
    assert_eq!(status, 201);
    let (status, obj) = raw(
        &client,
        "PATCH",
        "/apis/ref.example.org/v1/namespaces/default/widgets/w1/status?fieldManager=curl",
        Some("application/merge-patch+json"),
        b"{\"status\":{\"ready\":2}}".to_vec(),
    )
    .await;
    assert_eq!(status, 200, "{obj}");
    let entries = managed(&obj);
    assert_eq!(entries.len(), 2, "{obj}");
    assert_eq!(entries[0]["manager"], "curl");
    assert_eq!(entries[0]["operation"], "Update");
    assert_eq!(entries[0]["apiVersion"], "ref.example.org/v1");
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:spec": {".": {}, "f:color": {}, "f:replicas": {}}})
    );
    assert!(entries[0].get("subresource").is_none());
    assert_eq!(entries[1]["subresource"], "status");
    assert_eq!(
        entries[1]["fieldsV1"],
        json!({"f:status": {".": {}, "f:ready": {}}})
    );
}

#[tokio::test]
async fn managed_fields_sent_in_updates_are_honoured_or_ignored_like_upstream() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    apply_cm(&api, "m", json!({"a": "1"}), "alice").await;
    let path = "/api/v1/namespaces/default/configmaps/m?fieldManager=editor";
    // Malformed managedFields in a PUT: the stored ones are kept.
    let mut body = serde_json::to_value(api.get("m").await.expect("get")).expect("json");
    body["metadata"]["managedFields"] =
        json!([{"manager": "x", "operation": "Bogus", "fieldsV1": 7}]);
    body["data"]["b"] = json!("2");
    let (status, obj) = raw(
        &client,
        "PUT",
        path,
        Some("application/json"),
        serde_json::to_vec(&body).expect("body"),
    )
    .await;
    assert_eq!(status, 200, "{obj}");
    assert_eq!(
        entry(&obj, "alice").expect("alice kept")["fieldsV1"],
        json!({"f:data": {"f:a": {}}})
    );
    assert_eq!(
        entry(&obj, "editor").expect("editor")["fieldsV1"],
        json!({"f:data": {"f:b": {}}})
    );
    // `[{}]` resets: only the writer of this request remains.
    let (status, obj) = raw(
        &client,
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        b"{\"metadata\":{\"managedFields\":[{}]},\"data\":{\"c\":\"3\"}}".to_vec(),
    )
    .await;
    assert_eq!(status, 200, "{obj}");
    let managers: Vec<Value> = managed(&obj).iter().map(|e| e["manager"].clone()).collect();
    assert_eq!(managers, vec![json!("editor")], "{obj}");
}

/// Owner references are atomic structures upstream (`+structType=atomic`): a manager owns
/// each item whole (`k:{"uid":…}: {}`, as the capture of an EndpointSlice's managed fields
/// shows), so another manager changing a member of it conflicts instead of co-owning the
/// member.
#[tokio::test]
async fn owner_references_are_owned_whole() {
    let env = TestEnv::start().await.expect("env");
    let api: Api<ConfigMap> = Api::default_namespaced(env.client());
    let owner = apply_cm(&api, "owner", json!({}), "alice").await;
    let uid = owner["metadata"]["uid"].as_str().expect("uid").to_string();
    let owned = |block: Option<bool>| {
        let mut reference =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid});
        if let Some(block) = block {
            reference["blockOwnerDeletion"] = json!(block);
        }
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "owned", "ownerReferences": [reference]}})
    };
    let obj = api
        .patch("owned", &pp("alice"), &Patch::Apply(owned(None)))
        .await
        .expect("apply");
    let obj = serde_json::to_value(obj).expect("json");
    let item = format!("k:{{\"uid\":\"{uid}\"}}");
    assert_eq!(
        entry(&obj, "alice").expect("alice")["fieldsV1"],
        json!({"f:metadata": {"f:ownerReferences": {item.clone(): {}}}})
    );
    // Another manager adding a member to the item changes alice's atomic value: a conflict.
    let e = api
        .patch("owned", &pp("bob"), &Patch::Apply(owned(Some(true))))
        .await
        .expect_err("conflict");
    assert_eq!(code(e), 409);
    let body = serde_json::to_vec(&owned(Some(true))).expect("body");
    let (status, err) = raw(
        &env.client(),
        "PATCH",
        "/api/v1/namespaces/default/configmaps/owned?fieldManager=bob",
        Some(APPLY),
        body,
    )
    .await;
    assert_eq!(status, 409, "{err}");
    assert_eq!(
        err["details"]["causes"][0]["field"],
        format!(".metadata.ownerReferences[uid=\"{uid}\"]")
    );
    // An update records the item whole too.
    let mut stored = serde_json::to_value(api.get("owned").await.expect("get")).expect("json");
    stored["metadata"]["ownerReferences"][0]["controller"] = json!(true);
    let stored: ConfigMap = serde_json::from_value(stored).expect("configmap");
    let obj = api
        .replace(
            "owned",
            &PostParams {
                field_manager: Some("carol".into()),
                ..Default::default()
            },
            &stored,
        )
        .await
        .expect("update");
    let obj = serde_json::to_value(obj).expect("json");
    assert_eq!(
        entry(&obj, "carol").expect("carol")["fieldsV1"],
        json!({"f:metadata": {"f:ownerReferences": {item: {}}}})
    );
}
