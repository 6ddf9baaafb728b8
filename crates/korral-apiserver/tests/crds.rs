//! CustomResourceDefinitions: establishment, schema validation, defaulting, pruning,
//! status subresource, generation, several versions, deletion.

mod common;

use common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

#[tokio::test]
async fn crd_is_established_and_served_at_once() {
    let env = TestEnv::start().await.expect("env");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).expect("crd");
    let created = crds
        .create(&PostParams::default(), &crd)
        .await
        .expect("create");
    let conditions = created
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default();
    let established = conditions
        .iter()
        .find(|c| c.type_ == "Established")
        .expect("Established");
    assert_eq!(established.status, "True");
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "NamesAccepted" && c.status == "True")
    );
    // Served immediately, with discovery.
    let list = widgets(&env, "default")
        .list(&ListParams::default())
        .await
        .expect("list");
    assert!(list.items.is_empty());
    let (status, doc) = raw(
        &env.client(),
        "GET",
        "/apis/ref.example.org/v1",
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 200);
    let names: Vec<&str> = doc["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, vec!["widgets", "widgets/status"]);
    let (_, groups) = raw(&env.client(), "GET", "/apis", None, vec![]).await;
    let group = groups["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["name"] == "ref.example.org")
        .cloned()
        .expect("group");
    assert_eq!(group["preferredVersion"]["version"], "v1");
}

#[tokio::test]
async fn schema_defaults_prunes_and_rejects_with_field_paths() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let api = widgets(&env, "default");
    let created = api
        .create(
            &PostParams::default(),
            &widget("w1", json!({"replicas": 2, "bogus": true})),
        )
        .await
        .expect("create");
    assert_eq!(
        created.data["spec"],
        json!({"color": "red", "replicas": 2}),
        "defaulted and pruned"
    );
    assert_eq!(created.metadata.generation, Some(1));

    let err = api
        .create(
            &PostParams::default(),
            &widget("w2", json!({"replicas": 0, "color": "green"})),
        )
        .await
        .expect_err("invalid");
    let kube::Error::Api(status) = err else {
        panic!("not an API error")
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status
            .message
            .contains("spec.color: Unsupported value: \"green\""),
        "{}",
        status.message
    );
    assert!(
        status.message.contains("spec.replicas"),
        "{}",
        status.message
    );
    assert_eq!(code(api.get("w2").await.expect_err("not stored")), 404);

    // Required field missing.
    let err = api
        .create(&PostParams::default(), &widget("w3", json!({})))
        .await
        .expect_err("required");
    assert_eq!(code(err), 422);

    // Strict field validation rejects unknown fields; the default warns and prunes.
    let (status, body) = raw(&env.client(), "POST", "/apis/ref.example.org/v1/namespaces/default/widgets?fieldValidation=Strict", Some("application/json"),
        json!({"apiVersion": "ref.example.org/v1", "kind": "Widget", "metadata": {"name": "w4"}, "spec": {"replicas": 1, "bogus": 1}}).to_string().into_bytes()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["message"],
        "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.bogus\""
    );
}

#[tokio::test]
async fn status_subresource_and_generation_rules() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let api = widgets(&env, "default");
    let mut w = widget("w", json!({"replicas": 1}));
    w.data["status"] = json!({"ready": 5});
    let created = api
        .create(&PostParams::default(), &w)
        .await
        .expect("create");
    assert!(
        created.data.get("status").is_none(),
        "status ignored on create"
    );

    let pp = PatchParams::default();
    // Status through /status only changes status; generation unchanged.
    let s = api
        .patch_status(
            "w",
            &pp,
            &Patch::Merge(json!({"status": {"ready": 1}, "spec": {"replicas": 9}})),
        )
        .await
        .expect("status");
    assert_eq!(s.data["status"]["ready"], 1);
    assert_eq!(s.data["spec"]["replicas"], 1);
    assert_eq!(s.metadata.generation, Some(1));
    // The main endpoint ignores status; spec changes bump generation, metadata changes don't.
    let m = api
        .patch(
            "w",
            &pp,
            &Patch::Merge(json!({"status": {"ready": 7}, "spec": {"replicas": 3}})),
        )
        .await
        .expect("main");
    assert_eq!(m.data["status"]["ready"], 1);
    assert_eq!(m.metadata.generation, Some(2));
    let l = api
        .patch(
            "w",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect("labels");
    assert_eq!(l.metadata.generation, Some(2));
    // Strategic merge patch is not supported for custom resources.
    let err = api
        .patch(
            "w",
            &pp,
            &Patch::Strategic(json!({"spec": {"replicas": 4}})),
        )
        .await
        .expect_err("smp");
    assert_eq!(code(err), 415);
}

#[tokio::test]
async fn several_versions_share_storage() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    widgets(&env, "default")
        .create(&PostParams::default(), &widget("w", json!({"replicas": 1})))
        .await
        .expect("create");
    let gvk = GroupVersionKind::gvk("ref.example.org", "v1beta1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let beta: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &ar);
    let got = beta.get("w").await.expect("get via v1beta1");
    assert_eq!(
        got.types.expect("types").api_version,
        "ref.example.org/v1beta1"
    );
    assert_eq!(got.data["spec"]["replicas"], 1);
}

#[tokio::test]
async fn deleting_a_crd_removes_its_objects() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let api = widgets(&env, "default");
    for i in 0..3 {
        api.create(
            &PostParams::default(),
            &widget(&format!("w{i}"), json!({"replicas": 1})),
        )
        .await
        .expect("create");
    }
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    crds.delete("widgets.ref.example.org", &DeleteParams::default())
        .await
        .expect("delete crd");
    wait_until(WAIT, "CRD gone", || {
        let crds = crds.clone();
        async move {
            crds.get_opt("widgets.ref.example.org")
                .await
                .ok()
                .flatten()
                .is_none()
        }
    })
    .await
    .expect("crd deleted");
    let (status, _) = raw(
        &env.client(),
        "GET",
        "/apis/ref.example.org/v1/namespaces/default/widgets",
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 404);
    // Re-creating the CRD serves an empty collection: the old objects are gone for good.
    install_widget_crd(&env).await;
    assert!(
        api.list(&ListParams::default())
            .await
            .expect("list")
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn invalid_crds_are_rejected() {
    let env = TestEnv::start().await.expect("env");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let mut bad = widget_crd();
    bad["metadata"]["name"] = json!("wrong.ref.example.org");
    let crd: CustomResourceDefinition = serde_json::from_value(bad).expect("crd");
    assert_eq!(
        code(
            crds.create(&PostParams::default(), &crd)
                .await
                .expect_err("name")
        ),
        422
    );
    let mut bad = widget_crd();
    bad["spec"]["versions"][1]["storage"] = json!(true);
    let crd: CustomResourceDefinition = serde_json::from_value(bad).expect("crd");
    assert_eq!(
        code(
            crds.create(&PostParams::default(), &crd)
                .await
                .expect_err("two storage versions")
        ),
        422
    );
}

/// Regression: when a CRD disappears because an update removed its last finalizer, its kind
/// must stop being served.
#[tokio::test]
async fn crd_removed_by_finalizer_update_is_unserved() {
    let env = TestEnv::start().await.expect("env");
    let mut crd_json = widget_crd();
    crd_json["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let crd: CustomResourceDefinition = serde_json::from_value(crd_json).expect("crd");
    env.install_crd(crd).await.expect("install");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    crds.delete("widgets.ref.example.org", &DeleteParams::default())
        .await
        .expect("delete");
    // The cleanup finalizer goes once the (zero) custom resources are gone; ours stays.
    wait_until(WAIT, "cleanup finalizer removed", || {
        let crds = crds.clone();
        async move {
            crds.get("widgets.ref.example.org").await.is_ok_and(|c| {
                c.metadata.finalizers.unwrap_or_default() == vec!["example.com/keep".to_string()]
            })
        }
    })
    .await
    .expect("only our finalizer left");
    crds.patch(
        "widgets.ref.example.org",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release");
    assert!(
        crds.get_opt("widgets.ref.example.org")
            .await
            .expect("get")
            .is_none()
    );
    let (status, _) = raw(
        &env.client(),
        "GET",
        "/apis/ref.example.org/v1/namespaces/default/widgets",
        None,
        vec![],
    )
    .await;
    assert_eq!(status, 404, "the kind is no longer served");
}

/// The discovery document of a CRD's group version is the one upstream serves for the same
/// CRD (`fixtures/reference/discovery-crd-group.json`): resources, verbs, short names,
/// subresources and the storage version hash upstream derives from group, version and kind.
#[tokio::test]
async fn crd_group_discovery_matches_upstream() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let path = format!(
        "{}/tests/fixtures/reference/discovery-crd-group.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let capture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("capture")).expect("json");
    let (code, body) = call(&env, "GET", "/apis/ref.example.org/v1", None).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body, capture["body"]);
    assert_eq!(body["resources"][0]["storageVersionHash"], "u99Ha/k0k4w=");
}

/// While a CRD is terminating (an object's finalizer holds it), discovery lists only the
/// verbs that read or delete, new objects are refused with upstream's 405 and updates still go
/// through, so the finalizer can be removed.
#[tokio::test]
async fn no_new_objects_while_the_crd_is_terminating() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    let widgets_path = "/apis/ref.example.org/v1/namespaces/default/widgets";
    let held = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget",
                      "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
                      "spec": {"replicas": 1}});
    let (code, body) = call(&env, "POST", widgets_path, Some(&held)).await;
    assert_eq!(code, 201, "{body}");
    let crd_path =
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.ref.example.org";
    let (code, body) = call(&env, "DELETE", crd_path, None).await;
    assert_eq!(code, 200, "{body}");
    wait_until(WAIT, "the CRD is terminating", || async {
        let (_, crd) = call(&env, "GET", crd_path, None).await;
        crd["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Terminating" && c["status"] == "True")
        })
    })
    .await
    .expect("terminating");
    // Discovery stops offering the verbs that write new content, as upstream's does.
    let (code, body) = call(&env, "GET", "/apis/ref.example.org/v1", None).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body["resources"][0]["verbs"],
        json!(["delete", "deletecollection", "get", "list", "watch"])
    );
    let new = json!({"apiVersion": "ref.example.org/v1", "kind": "Widget",
                     "metadata": {"name": "late"}, "spec": {"replicas": 1}});
    let (code, body) = call(&env, "POST", widgets_path, Some(&new)).await;
    assert_eq!(code, 405, "{body}");
    assert_eq!(body["reason"], "MethodNotAllowed");
    assert_eq!(
        body["message"],
        "create not allowed while custom resource definition is terminating"
    );
    assert_eq!(
        body["details"],
        json!({"group": "ref.example.org", "kind": "widgets"})
    );
    let (code, body) = call_as(
        &env,
        "PATCH",
        &format!("{widgets_path}/held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    wait_until(WAIT, "the CRD is gone", || async {
        call(&env, "GET", crd_path, None).await.0 == 404
    })
    .await
    .expect("gone");
}

/// A namespaced `<plural>.names.example.org` CRD of `kind` with `short_names`.
fn named_crd(plural: &str, kind: &str, short_names: &[&str]) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.names.example.org")},
        "spec": {"group": "names.example.org", "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind, "shortNames": short_names},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    })
}

/// `(status, reason, message)` of a CRD's condition.
fn crd_condition(crd: &serde_json::Value, kind: &str) -> (String, String, String) {
    let c = crd["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .cloned()
        .unwrap_or_default();
    let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
    (s("status"), s("reason"), s("message"))
}

#[tokio::test]
async fn conflicting_names_wait_until_they_are_free() {
    let env = TestEnv::start().await.expect("env");
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    create_ok(&env, crds, &named_crd("widgets", "Widget", &["wd"])).await;
    // Another CRD of the group asking for the same kind (and list kind): not accepted, not
    // established, not served; its free plural is accepted.
    let gadgets = create_ok(&env, crds, &named_crd("gadgets", "Widget", &[])).await;
    assert_eq!(
        crd_condition(&gadgets, "NamesAccepted"),
        (
            "False".into(),
            "ListKindConflict".into(),
            "\"WidgetList\" is already in use".into()
        )
    );
    assert_eq!(
        crd_condition(&gadgets, "Established"),
        (
            "False".into(),
            "NotAccepted".into(),
            "not all names are accepted".into()
        )
    );
    assert_eq!(gadgets["status"]["acceptedNames"]["plural"], "gadgets");
    assert_eq!(gadgets["status"]["acceptedNames"]["kind"], "");
    let (code, _) = call(&env, "GET", "/apis/names.example.org/v1/gadgets", None).await;
    assert_eq!(code, 404, "not served");
    // A short name another CRD holds.
    let things = create_ok(&env, crds, &named_crd("things", "Thing", &["wd", "th"])).await;
    assert_eq!(
        crd_condition(&things, "NamesAccepted"),
        (
            "False".into(),
            "ShortNamesConflict".into(),
            "\"wd\" is already in use".into()
        )
    );

    // A third CRD waiting for the same kind.
    create_ok(&env, crds, &named_crd("sprockets", "Widget", &[])).await;

    // Once the CRD holding the names is gone, the others get them and are served.
    let (code, _) = call(
        &env,
        "DELETE",
        &format!("{crds}/widgets.names.example.org"),
        None,
    )
    .await;
    assert_eq!(code, 200);
    for (name, kind) in [("gadgets", "Widget"), ("things", "Thing")] {
        let path = format!("{crds}/{name}.names.example.org");
        let shared = &env;
        wait_until(WAIT, "names accepted", || {
            let path = path.clone();
            async move {
                let (_, crd) = call(shared, "GET", &path, None).await;
                crd_condition(&crd, "Established").0 == "True"
            }
        })
        .await
        .expect("established");
        let (_, crd) = call(&env, "GET", &path, None).await;
        assert_eq!(
            crd_condition(&crd, "NamesAccepted"),
            (
                "True".into(),
                "NoConflicts".into(),
                "no conflicts found".into()
            )
        );
        assert_eq!(crd["status"]["acceptedNames"]["kind"], kind);
        let (code, list) = call(
            &env,
            "GET",
            &format!("/apis/names.example.org/v1/{name}"),
            None,
        )
        .await;
        assert_eq!(code, 200, "{list}");
    }
    // The freed kind went to one waiting CRD only.
    let (_, sprockets) = call(
        &env,
        "GET",
        &format!("{crds}/sprockets.names.example.org"),
        None,
    )
    .await;
    assert_eq!(
        crd_condition(&sprockets, "NamesAccepted").1,
        "ListKindConflict",
        "{sprockets}"
    );
    assert_eq!(sprockets["status"]["acceptedNames"]["kind"], "");
    env.shutdown().await;
}
