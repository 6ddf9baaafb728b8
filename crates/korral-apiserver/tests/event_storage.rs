//! One Event storage for core `v1` and `events.k8s.io/v1`, as upstream keeps one `events`
//! resource: an Event written through either API is read, listed, watched, updated, deleted
//! and selected through the other, converted to that API's shape (the bodies of the reference
//! captures create-event-corev1.json, create-event-eventsv1.json,
//! get-event-corev1-as-eventsv1.json and get-event-eventsv1-as-corev1.json), and still there
//! after a durable server restarts.

mod common;

use std::time::Duration;

use common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::events::v1::Event;
use korral_apiserver::ServerConfig;
use kube::api::{Api, WatchEvent, WatchParams};
use serde_json::{Value, json};

const NS: &str = "ref3";

/// The core `v1` collection of [`NS`].
fn core_events() -> String {
    format!("/api/v1/namespaces/{NS}/events")
}

/// The `events.k8s.io/v1` collection of [`NS`].
fn v1_events() -> String {
    format!("/apis/events.k8s.io/v1/namespaces/{NS}/events")
}

/// Sends `body` with `method` to `path`: the status code and the answer.
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

/// Reads `path`: the status code and the answer.
async fn get(env: &TestEnv, path: &str) -> (u16, Value) {
    raw(&env.client(), "GET", path, None, Vec::new()).await
}

/// The Event of create-event-corev1.json as its client sent it.
fn core_event(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name},
        "involvedObject": {"kind": "ConfigMap", "namespace": NS, "name": "x", "apiVersion": "v1"},
        "reason": "Tested",
        "message": "hello",
        "source": {"component": "example.com/ctl"},
        "type": "Normal",
    })
}

/// The Event of create-event-eventsv1.json as its client sent it.
fn v1_event(name: &str) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-11-23T10:00:00.000000Z",
        "reportingController": "example.com/ctl",
        "reportingInstance": "i1",
        "action": "Test",
        "reason": "Tested",
        "regarding": {"kind": "ConfigMap", "namespace": NS, "name": "x", "apiVersion": "v1"},
        "note": "hello",
        "type": "Normal",
    })
}

/// The managed fields entry of a core `v1` write of [`core_event`] (time left out).
fn core_managed() -> Value {
    json!([{
        "manager": "capture", "operation": "Update", "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:involvedObject": {}, "f:message": {}, "f:reason": {},
            "f:source": {}, "f:type": {}
        }
    }])
}

/// The managed fields entry of an `events.k8s.io/v1` write of [`v1_event`] (time left out).
fn v1_managed() -> Value {
    json!([{
        "manager": "capture", "operation": "Update", "apiVersion": "events.k8s.io/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:action": {}, "f:eventTime": {}, "f:note": {}, "f:reason": {}, "f:regarding": {},
            "f:reportingController": {}, "f:reportingInstance": {}, "f:type": {}
        }
    }])
}

/// An answer without what differs between servers and runs (uid, resourceVersion,
/// creationTimestamp, the managed fields' times), for comparing with a capture's body. The
/// managed fields' sets keep only their top-level fields: Korral's field sets differ from
/// upstream's inside them (it writes `.` entries and does not treat ObjectReference as atomic,
/// outside this test's concern).
fn comparable(mut body: Value) -> Value {
    if let Some(md) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        for volatile in ["uid", "resourceVersion", "creationTimestamp"] {
            assert!(md.remove(volatile).is_some(), "{volatile} missing");
        }
        for entry in md
            .get_mut("managedFields")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(entry) = entry.as_object_mut() {
                assert!(entry.remove("time").is_some(), "managed time missing");
                if let Some(set) = entry.get_mut("fieldsV1").and_then(Value::as_object_mut) {
                    for fields in set.values_mut() {
                        *fields = json!({});
                    }
                }
            }
        }
    }
    body
}

/// Waits for `path` to answer `code`.
async fn wait_for_code(env: &TestEnv, path: &str, code: u16) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (got, body) = get(env, path).await;
        if got == code {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path}: {got} {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn written_through_one_api_read_through_the_other() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), NS).await;

    // create-event-corev1.json
    let (code, created) = send(
        &env,
        "POST",
        &format!("{}?fieldManager=capture", core_events()),
        &core_event("ev2"),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let uid = created["metadata"]["uid"].clone();
    assert_eq!(
        comparable(created),
        json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": "ev2", "namespace": NS, "managedFields": core_managed()},
            "involvedObject": {"kind": "ConfigMap", "namespace": NS, "name": "x", "apiVersion": "v1"},
            "reason": "Tested",
            "message": "hello",
            "source": {"component": "example.com/ctl"},
            "firstTimestamp": null,
            "lastTimestamp": null,
            "type": "Normal",
            "eventTime": null,
            "reportingComponent": "",
            "reportingInstance": "",
        })
    );
    // get-event-corev1-as-eventsv1.json: the same object (its uid), the writer's apiVersion
    // kept in its managed fields.
    let (code, read) = get(&env, &format!("{}/ev2", v1_events())).await;
    assert_eq!(code, 200, "{read}");
    assert_eq!(read["metadata"]["uid"], uid);
    assert_eq!(
        comparable(read),
        json!({
            "kind": "Event", "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "ev2", "namespace": NS, "managedFields": core_managed()},
            "eventTime": null,
            "reason": "Tested",
            "regarding": {"kind": "ConfigMap", "namespace": NS, "name": "x", "apiVersion": "v1"},
            "note": "hello",
            "type": "Normal",
            "deprecatedSource": {"component": "example.com/ctl"},
            "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": null,
        })
    );

    // create-event-eventsv1.json
    let (code, created) = send(
        &env,
        "POST",
        &format!("{}?fieldManager=capture", v1_events()),
        &v1_event("ev1"),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        comparable(created),
        json!({
            "kind": "Event", "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "ev1", "namespace": NS, "managedFields": v1_managed()},
            "eventTime": "2026-11-23T10:00:00.000000Z",
            "reportingController": "example.com/ctl",
            "reportingInstance": "i1",
            "action": "Test",
            "reason": "Tested",
            "regarding": {"kind": "ConfigMap", "namespace": NS, "name": "x", "apiVersion": "v1"},
            "note": "hello",
            "type": "Normal",
            "deprecatedSource": {},
            "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": null,
        })
    );
    // get-event-eventsv1-as-corev1.json
    let (code, read) = get(&env, &format!("{}/ev1", core_events())).await;
    assert_eq!(code, 200, "{read}");
    assert_eq!(
        comparable(read),
        json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": "ev1", "namespace": NS, "managedFields": v1_managed()},
            "involvedObject": {"kind": "ConfigMap", "namespace": NS, "name": "x", "apiVersion": "v1"},
            "reason": "Tested",
            "message": "hello",
            "source": {},
            "firstTimestamp": null,
            "lastTimestamp": null,
            "type": "Normal",
            "eventTime": "2026-11-23T10:00:00.000000Z",
            "action": "Test",
            "reportingComponent": "example.com/ctl",
            "reportingInstance": "i1",
        })
    );

    // One collection: a name taken through one API is taken through the other.
    let (code, body) = send(&env, "POST", &v1_events(), &v1_event("ev2")).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["message"], "events.events.k8s.io \"ev2\" already exists",
        "{body}"
    );
    let (code, body) = send(&env, "POST", &core_events(), &core_event("ev1")).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["message"], "events \"ev1\" already exists", "{body}");
}

#[tokio::test]
async fn listed_watched_updated_and_deleted_across_the_apis() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), NS).await;
    let events: Api<Event> = Api::namespaced(env.client(), NS);
    let mut stream = events
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();

    let (code, created) = send(&env, "POST", &core_events(), &core_event("ev2")).await;
    assert_eq!(code, 201, "{created}");

    // The events.k8s.io watch sees the core write, in its own shape.
    let added = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = stream.try_next().await.expect("watch event") {
            if let WatchEvent::Added(e) = event {
                return e;
            }
        }
        panic!("watch ended");
    })
    .await
    .expect("an ADDED event");
    assert_eq!(added.metadata.name.as_deref(), Some("ev2"));
    assert_eq!(added.note.as_deref(), Some("hello"));
    assert_eq!(added.regarding.and_then(|r| r.name).as_deref(), Some("x"));

    // ... and its list.
    let (code, list) = get(&env, &v1_events()).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["kind"], "EventList", "{list}");
    assert_eq!(list["apiVersion"], "events.k8s.io/v1", "{list}");
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{list}");
    assert_eq!(items[0]["note"], "hello", "{list}");
    assert_eq!(items[0]["deprecatedSource"]["component"], "example.com/ctl");
    assert!(items[0].get("message").is_none(), "{list}");

    // Through events.k8s.io an Event's note is immutable (its update rules, with the
    // internal field's name), whichever API created it.
    let (_, mut current) = get(&env, &format!("{}/ev2", v1_events())).await;
    current["note"] = json!("changed");
    let (code, body) = send(&env, "PUT", &format!("{}/ev2", v1_events()), &current).await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "Event.events.k8s.io \"ev2\" is invalid: message: Invalid value: \"changed\": field is immutable",
        "{body}"
    );
    // Nothing refused is stored.
    let (_, mut current) = get(&env, &format!("{}/ev2", core_events())).await;
    assert_eq!(current["message"], "hello", "{current}");
    // Updated through core v1: events.k8s.io sees the new message as its note.
    current["message"] = json!("changed");
    let (code, body) = send(&env, "PUT", &format!("{}/ev2", core_events()), &current).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["message"], "changed", "{body}");
    let (code, read) = get(&env, &format!("{}/ev2", v1_events())).await;
    assert_eq!(code, 200, "{read}");
    assert_eq!(read["note"], "changed", "{read}");
    assert_eq!(
        read["deprecatedSource"]["component"], "example.com/ctl",
        "{read}"
    );
    assert_eq!(
        read["metadata"]["resourceVersion"],
        body["metadata"]["resourceVersion"]
    );
    // Patched through events.k8s.io (its labels): core v1 sees them, the rest unchanged.
    let (code, body) = raw(
        &env.client(),
        "PATCH",
        &format!("{}/ev2", v1_events()),
        Some("application/merge-patch+json"),
        json!({"metadata": {"labels": {"seen": "yes"}}})
            .to_string()
            .into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["note"], "changed", "{body}");
    let (_, read) = get(&env, &format!("{}/ev2", core_events())).await;
    assert_eq!(read["metadata"]["labels"]["seen"], "yes", "{read}");
    assert_eq!(read["message"], "changed", "{read}");
    assert_eq!(read["source"]["component"], "example.com/ctl", "{read}");
    // Patched through core v1: events.k8s.io sees the new count.
    let (code, body) = raw(
        &env.client(),
        "PATCH",
        &format!("{}/ev2", core_events()),
        Some("application/merge-patch+json"),
        json!({"count": 4}).to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (_, read) = get(&env, &format!("{}/ev2", v1_events())).await;
    assert_eq!(read["deprecatedCount"], 4, "{read}");
    assert_eq!(read["note"], "changed", "{read}");

    // Deleted through core v1: gone through events.k8s.io, and its watch says so.
    let (code, body) = raw(
        &env.client(),
        "DELETE",
        &format!("{}/ev2", core_events()),
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    wait_for_code(&env, &format!("{}/ev2", v1_events()), 404).await;
    let (_, body) = get(&env, &format!("{}/ev2", v1_events())).await;
    assert_eq!(
        body["message"], "events.events.k8s.io \"ev2\" not found",
        "{body}"
    );
    let deleted = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = stream.try_next().await.expect("watch event") {
            if let WatchEvent::Deleted(e) = event {
                return e;
            }
        }
        panic!("watch ended");
    })
    .await
    .expect("a DELETED event");
    assert_eq!(deleted.metadata.name.as_deref(), Some("ev2"));

    // Deleted through events.k8s.io: gone through core v1.
    let (code, _) = send(&env, "POST", &v1_events(), &v1_event("ev1")).await;
    assert_eq!(code, 201);
    let (code, body) = raw(
        &env.client(),
        "DELETE",
        &format!("{}/ev1", v1_events()),
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["details"]["group"], "events.k8s.io", "{body}");
    wait_for_code(&env, &format!("{}/ev1", core_events()), 404).await;
}

/// The names of a list's items.
fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            i["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// Lists `collection` with a field selector: the status code and the answer.
async fn select(env: &TestEnv, collection: &str, selector: &str) -> (u16, Value) {
    let escaped = selector.replace('=', "%3D").replace(',', "%2C");
    get(env, &format!("{collection}?fieldSelector={escaped}")).await
}

#[tokio::test]
async fn field_selectors_through_each_api() {
    let env = TestEnv::start().await.expect("env");
    create_namespace(&env.client(), NS).await;
    let (code, _) = send(&env, "POST", &core_events(), &core_event("from-core")).await;
    assert_eq!(code, 201);
    let (code, _) = send(&env, "POST", &v1_events(), &v1_event("from-v1")).await;
    assert_eq!(code, 201);
    let mut other = core_event("other");
    other["involvedObject"]["name"] = json!("y");
    other["source"] = json!({"component": "someone-else"});
    other["type"] = json!("Warning");
    let (code, _) = send(&env, "POST", &core_events(), &other).await;
    assert_eq!(code, 201);

    for (collection, selector, want) in [
        (
            core_events(),
            "involvedObject.name=x",
            vec!["from-core", "from-v1"],
        ),
        (
            v1_events(),
            "regarding.name=x",
            vec!["from-core", "from-v1"],
        ),
        (v1_events(), "regarding.name=y,type=Warning", vec!["other"]),
        (core_events(), "type!=Normal", vec!["other"]),
        // upstream's `source`: the source's component, else the reporting controller.
        (
            core_events(),
            "source=example.com/ctl",
            vec!["from-core", "from-v1"],
        ),
        (v1_events(), "source=someone-else", vec!["other"]),
        (
            core_events(),
            "reportingComponent=example.com/ctl",
            vec!["from-v1"],
        ),
        (
            v1_events(),
            "reportingController=example.com/ctl",
            vec!["from-v1"],
        ),
        (
            v1_events(),
            "reason=Tested,metadata.name=from-core",
            vec!["from-core"],
        ),
    ] {
        let (code, list) = select(&env, &collection, selector).await;
        assert_eq!(code, 200, "{collection}?{selector}: {list}");
        assert_eq!(names(&list), want, "{collection}?{selector}");
    }
    // Each API knows only its own field labels.
    for (collection, field) in [
        (v1_events(), "involvedObject.name"),
        (v1_events(), "reportingComponent"),
        (core_events(), "regarding.name"),
    ] {
        let (code, body) = select(&env, &collection, &format!("{field}=x")).await;
        assert_eq!(code, 400, "{collection}?{field}: {body}");
        assert_eq!(
            body["message"],
            format!("field label not supported: {field}"),
            "{body}"
        );
    }
    // A watch through events.k8s.io selects by its own names too.
    let events: Api<Event> = Api::namespaced(env.client(), NS);
    let mut stream = events
        .watch(&WatchParams::default().fields("regarding.name=y"), "0")
        .await
        .expect("watch")
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("an event")
        .expect("watch event");
    match first {
        Some(WatchEvent::Added(e)) => assert_eq!(e.metadata.name.as_deref(), Some("other")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn events_k8s_io_tables_and_durable_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    {
        let env = TestEnv::builder()
            .server_config(ServerConfig::durable(&data))
            .start()
            .await
            .expect("env");
        create_namespace(&env.client(), NS).await;
        let (code, _) = send(&env, "POST", &v1_events(), &v1_event("ev1")).await;
        assert_eq!(code, 201);
        env.shutdown().await;
    }
    let env = TestEnv::builder()
        .server_config(ServerConfig::durable(&data))
        .start()
        .await
        .expect("restart");
    let (code, read) = get(&env, &format!("{}/ev1", core_events())).await;
    assert_eq!(code, 200, "{read}");
    assert_eq!(read["message"], "hello", "{read}");
    let (code, read) = get(&env, &format!("{}/ev1", v1_events())).await;
    assert_eq!(code, 200, "{read}");
    assert_eq!(read["note"], "hello", "{read}");

    // Both APIs' tables (`kubectl get events`, `kubectl get events.events.k8s.io`) list it
    // with the event columns and the same cells: upstream prints both with one printer.
    let mut rows_of = Vec::new();
    for (collection, columns) in [
        (
            core_events(),
            vec!["Name", "Last Seen", "Type", "Reason", "Object", "Message"],
        ),
        (
            v1_events(),
            vec!["Name", "Last Seen", "Type", "Reason", "Object", "Message"],
        ),
    ] {
        let table = table(&env, &collection).await;
        assert_eq!(table["kind"], "Table", "{table}");
        let shown: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .expect("columns")
            .iter()
            .filter(|c| c["priority"] == 0)
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(shown, columns, "{table}");
        let rows = table["rows"].as_array().expect("rows");
        assert_eq!(rows.len(), 1, "{table}");
        assert_eq!(rows[0]["cells"][0], "ev1", "{table}");
        rows_of.push(rows[0]["cells"].clone());
    }
    assert_eq!(rows_of[0], rows_of[1], "one printer for both APIs");
    assert!(
        rows_of[0]
            .as_array()
            .is_some_and(|cells| cells.iter().any(|c| c == "hello")),
        "the message is shown: {rows_of:?}"
    );
}
