//! Scenario tests of apply and update bookkeeping on plain JSON objects.

use serde_json::{Value, json};

use super::*;
use crate::registry::Registry;

fn configmaps() -> std::sync::Arc<ResourceInfo> {
    Registry::with_builtins()
        .get("", "v1", "configmaps")
        .expect("configmaps")
}

fn actor(manager: &str) -> Actor<'_> {
    Actor {
        manager,
        api_version: "v1",
        subresource: None,
    }
}

fn fields_of(obj: &Value, manager: &str) -> Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .find(|e| e["manager"] == manager)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}, "data": data})
}

#[test]
fn apply_creates_then_co_owns_conflicts_and_forces() {
    let info = configmaps();
    let obj = apply(&info, None, &cm(json!({"a": "1"})), actor("alice"), false).expect("create");
    assert_eq!(fields_of(&obj, "alice"), json!({"f:data": {"f:a": {}}}));
    let entry = &obj["metadata"]["managedFields"][0];
    assert_eq!(entry["operation"], "Apply");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    // Same value: co-ownership, no conflict.
    let obj = apply(
        &info,
        Some(&obj),
        &cm(json!({"a": "1", "b": "2"})),
        actor("bob"),
        false,
    )
    .expect("co-own");
    assert_eq!(
        fields_of(&obj, "bob"),
        json!({"f:data": {"f:a": {}, "f:b": {}}})
    );
    // Different value: conflict with alice.
    let err = apply(
        &info,
        Some(&obj),
        &cm(json!({"a": "9"})),
        actor("carol"),
        false,
    )
    .expect_err("conflict");
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .data.a\nconflicts with \"bob\":\n- .data.a"
    );
    // Forced: carol takes .data.a from both.
    let obj = apply(
        &info,
        Some(&obj),
        &cm(json!({"a": "9"})),
        actor("carol"),
        true,
    )
    .expect("force");
    assert_eq!(obj["data"], json!({"a": "9", "b": "2"}));
    assert_eq!(fields_of(&obj, "alice"), Value::Null);
    assert_eq!(fields_of(&obj, "bob"), json!({"f:data": {"f:b": {}}}));
}

#[test]
fn fields_no_longer_applied_are_removed_unless_owned_elsewhere() {
    let info = configmaps();
    let obj = apply(
        &info,
        None,
        &cm(json!({"a": "1", "b": "2", "c": "3"})),
        actor("alice"),
        false,
    )
    .expect("create");
    let obj = apply(
        &info,
        Some(&obj),
        &cm(json!({"b": "2"})),
        actor("bob"),
        false,
    )
    .expect("bob");
    let obj = apply(
        &info,
        Some(&obj),
        &cm(json!({"a": "1"})),
        actor("alice"),
        false,
    )
    .expect("again");
    // c removed (only alice had it), b kept (bob owns it).
    assert_eq!(obj["data"], json!({"a": "1", "b": "2"}));
    // Applying nothing removes everything alice alone owned, and her entry.
    let bare = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"}});
    let obj = apply(&info, Some(&obj), &bare, actor("alice"), false).expect("empty");
    assert_eq!(obj["data"], json!({"b": "2"}));
    assert_eq!(fields_of(&obj, "alice"), Value::Null);
}

#[test]
fn noop_apply_returns_live_object_unchanged() {
    let info = configmaps();
    let obj = apply(&info, None, &cm(json!({"a": "1"})), actor("alice"), false).expect("create");
    let again = apply(
        &info,
        Some(&obj),
        &cm(json!({"a": "1"})),
        actor("alice"),
        false,
    )
    .expect("noop");
    assert_eq!(again, obj);
}

#[test]
fn updates_are_recorded_and_take_fields_from_appliers() {
    let info = configmaps();
    let mut created = cm(json!({"a": "1"}));
    let req = take_requested_managed_fields(&mut created, None);
    record_update(&info, None, &mut created, actor("kubectl-create"), req);
    assert_eq!(
        fields_of(&created, "kubectl-create"),
        json!({"f:data": {".": {}, "f:a": {}}})
    );
    let applied = apply(
        &info,
        Some(&created),
        &cm(json!({"b": "2"})),
        actor("alice"),
        false,
    )
    .expect("apply");
    let mut edited = applied.clone();
    edited["data"]["b"] = json!("3");
    let req = take_requested_managed_fields(&mut edited, Some(&applied));
    record_update(
        &info,
        Some(&applied),
        &mut edited,
        actor("kubectl-edit"),
        req,
    );
    assert_eq!(
        fields_of(&edited, "kubectl-edit"),
        json!({"f:data": {"f:b": {}}})
    );
    assert_eq!(fields_of(&edited, "alice"), Value::Null);
    let entry = edited["metadata"]["managedFields"]
        .as_array()
        .expect("list")
        .iter()
        .find(|e| e["manager"] == "kubectl-edit")
        .cloned()
        .expect("edit entry");
    assert_eq!(entry["operation"], "Update");
    assert_eq!(entry["apiVersion"], "v1");
    // An explicit reset ([{}]) forgets every manager but the writer.
    let mut reset = edited.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    reset["data"]["z"] = json!("z");
    let req = take_requested_managed_fields(&mut reset, Some(&edited));
    record_update(&info, Some(&edited), &mut reset, actor("x"), req);
    assert_eq!(
        reset["metadata"]["managedFields"].as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn field_manager_validation_and_user_agent_prefix() {
    assert!(validate_field_manager("kubectl").is_empty());
    assert_eq!(validate_field_manager(&"x".repeat(129)).len(), 1);
    assert_eq!(validate_field_manager("a\u{7}b").len(), 1);
    assert_eq!(
        manager_from_user_agent("kubectl/v1.33.0 (linux/amd64) kubernetes/abc"),
        "kubectl"
    );
}

#[test]
fn decode_rejects_hostile_or_mismatched_bodies() {
    let info = configmaps();
    let mut deep = String::from("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":");
    for _ in 0..120 {
        deep.push_str("{\"a\":");
    }
    deep.push('1');
    for _ in 0..120 {
        deep.push('}');
    }
    deep.push('}');
    assert_eq!(
        decode_config(deep.as_bytes(), &info)
            .expect_err("deep")
            .code,
        400
    );
    assert_eq!(
        decode_config(b"apiVersion: v2\nkind: ConfigMap\n", &info)
            .expect_err("version")
            .message,
        "Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"
    );
    assert_eq!(decode_config(b"- 1\n", &info).expect_err("list").code, 400);
    assert!(decode_config(b"apiVersion: v1\nkind: ConfigMap\n", &info).is_ok());
}

#[test]
fn update_managers_are_capped_into_ancient_changes() {
    let info = configmaps();
    let mut obj = cm(json!({}));
    for i in 0..14 {
        let mut next = obj.clone();
        next["data"][format!("k{i}")] = json!("v");
        let manager = format!("m{i}");
        let req = take_requested_managed_fields(&mut next, Some(&obj));
        record_update(&info, Some(&obj), &mut next, actor(&manager), req);
        obj = next;
    }
    let entries = obj["metadata"]["managedFields"].as_array().expect("list");
    assert_eq!(entries.len(), 10, "{entries:?}");
    let ancient = entries
        .iter()
        .find(|e| e["manager"] == "ancient-changes")
        .expect("bucket");
    assert_eq!(
        ancient["fieldsV1"]["f:data"]
            .as_object()
            .expect("data")
            .keys()
            .filter(|k| k.starts_with("f:"))
            .count(),
        5
    );
}

#[test]
fn kubectl_server_side_apply_upgrades_client_side_apply() {
    let info = configmaps();
    let last = cm(json!({"a": "1"})).to_string();
    let mut created = cm(json!({"a": "1"}));
    created["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/last-applied-configuration": last});
    let req = take_requested_managed_fields(&mut created, None);
    record_update(
        &info,
        None,
        &mut created,
        actor("kubectl-client-side-apply"),
        req,
    );
    // Another manager conflicts...
    assert!(
        apply(
            &info,
            Some(&created),
            &cm(json!({"a": "2"})),
            actor("other"),
            false
        )
        .is_err()
    );
    // ...but kubectl takes over the fields of the annotation and keeps it in step.
    let out = apply(
        &info,
        Some(&created),
        &cm(json!({"a": "2"})),
        actor("kubectl"),
        false,
    )
    .expect("upgrade");
    assert_eq!(out["data"]["a"], "2");
    let annotation =
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .expect("annotation");
    let parsed: Value = serde_json::from_str(annotation).expect("json");
    assert_eq!(parsed["data"]["a"], "2");
}

#[test]
fn unmanaged_objects_belong_to_before_first_apply() {
    let info = configmaps();
    let live = cm(json!({"a": "1", "b": "2"}));
    let err = apply(
        &info,
        Some(&live),
        &cm(json!({"a": "9"})),
        actor("alice"),
        false,
    )
    .expect_err("conflict");
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.a"
    );
    let out = apply(
        &info,
        Some(&live),
        &cm(json!({"a": "1"})),
        actor("alice"),
        false,
    )
    .expect("same value");
    assert_eq!(
        fields_of(&out, "before-first-apply"),
        json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
    );
    assert_eq!(fields_of(&out, "alice"), json!({"f:data": {"f:a": {}}}));
}

#[test]
fn last_applied_keeps_an_emptied_annotations_map() {
    let mut obj = json!({"metadata": {"name": "cm", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": "{}\n"}}});
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm",
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "old"}},
        "data": {"k": "v"}});
    super::sync_last_applied(&mut obj, &config);
    let text = obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .expect("annotation");
    let last: Value = serde_json::from_str(text).expect("json");
    assert_eq!(last["metadata"]["annotations"], json!({}), "{text}");
    assert_eq!(last["data"], json!({"k": "v"}));
}
