//! End-to-end tests of the controllers over in-memory storage (no HTTP).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::run;
use crate::meta;
use crate::objects::{
    DeleteOptions, Deleted, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Objects, Part, Propagation,
    WriteOptions,
};
use crate::registry::{Registry, ResourceInfo};
use crate::storage::{MemoryStorage, Object};

const HOLD: &str = "example.org/hold";

fn new_objects() -> Arc<Objects> {
    Arc::new(Objects::new(
        Arc::new(MemoryStorage::new()),
        Arc::new(Registry::with_builtins()),
    ))
}

struct Controllers {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Controllers {
    fn start(objects: &Arc<Objects>) -> Self {
        let (stop, rx) = watch::channel(false);
        let task = tokio::spawn(run(objects.clone(), rx, None));
        Self { stop, task }
    }

    async fn stop(self) {
        let _ = self.stop.send(true);
        tokio::time::timeout(Duration::from_secs(5), self.task)
            .await
            .expect("controllers stop on shutdown")
            .expect("controllers did not panic");
    }
}

fn info(objects: &Objects, group: &str, version: &str, resource: &str) -> Arc<ResourceInfo> {
    objects
        .registry()
        .get(group, version, resource)
        .unwrap_or_else(|| panic!("{group}/{version}/{resource} is served"))
}

fn configmaps(objects: &Objects) -> Arc<ResourceInfo> {
    info(objects, "", "v1", "configmaps")
}

async fn create_namespace(objects: &Objects, name: &str) -> Object {
    let namespaces = info(objects, "", "v1", "namespaces");
    objects
        .create(
            &namespaces,
            None,
            json!({"metadata": {"name": name}}),
            &WriteOptions::default(),
        )
        .await
        .expect("create namespace")
        .object
}

fn owner_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner["apiVersion"].as_str().unwrap_or("v1"),
        "kind": owner["kind"].as_str().unwrap_or("ConfigMap"),
        "name": meta::name(owner),
        "uid": meta::uid(owner),
    })
}

async fn create_in(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    ns: &str,
    name: &str,
    owners: &[&Value],
    finalizers: &[&str],
) -> Object {
    let mut metadata = json!({"name": name});
    if !owners.is_empty() {
        metadata["ownerReferences"] = Value::Array(owners.iter().map(|o| owner_ref(o)).collect());
    }
    if !finalizers.is_empty() {
        metadata["finalizers"] = json!(finalizers);
    }
    objects
        .create(
            info,
            Some(ns),
            json!({"metadata": metadata, "data": {"k": "dg=="}}),
            &WriteOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("create {name}: {e}"))
        .object
}

async fn create_cm(
    objects: &Objects,
    ns: &str,
    name: &str,
    owners: &[&Value],
    finalizers: &[&str],
) -> Object {
    create_in(objects, &configmaps(objects), ns, name, owners, finalizers).await
}

fn get_cm(objects: &Objects, ns: &str, name: &str) -> Option<Object> {
    objects.get(&configmaps(objects), Some(ns), name).ok()
}

async fn delete(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    name: &str,
    propagation: Option<Propagation>,
) -> Deleted {
    objects
        .delete(
            info,
            ns,
            name,
            &DeleteOptions {
                propagation,
                ..DeleteOptions::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("delete {name}: {e}"))
}

/// Removes every `metadata.finalizers` entry of an object through an update.
async fn clear_finalizers(
    objects: &Objects,
    info: &Arc<ResourceInfo>,
    ns: Option<&str>,
    name: &str,
) {
    let current = objects.get(info, ns, name).expect("object to update");
    let mut next = (*current).clone();
    meta::set_finalizers(&mut next, &[]);
    objects
        .update(info, ns, name, next, Part::Main, &WriteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("update {name}: {e}"));
}

/// Polls `condition` every 10 ms for up to 5 s.
async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..500 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Checks that `condition` keeps holding for 300 ms.
async fn stays(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..30 {
        assert!(condition(), "{what} no longer holds");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn owner_uids(obj: &Value) -> Vec<String> {
    meta::owner_references(obj)
        .iter()
        .filter_map(|r| r["uid"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn background_deletion_collects_dependents_without_living_owners() {
    let objects = new_objects();
    let controllers = Controllers::start(&objects);
    create_namespace(&objects, "gc").await;
    let owner = create_cm(&objects, "gc", "owner", &[], &[]).await;
    let other = create_cm(&objects, "gc", "other", &[], &[]).await;
    create_cm(&objects, "gc", "child-1", &[&owner], &[]).await;
    create_cm(&objects, "gc", "child-2", &[&owner], &[]).await;
    create_cm(&objects, "gc", "shared", &[&owner, &other], &[]).await;
    create_cm(&objects, "gc", "bystander", &[], &[]).await;
    // Nothing happens while the owner lives.
    stays("children kept while their owner lives", || {
        get_cm(&objects, "gc", "child-1").is_some() && get_cm(&objects, "gc", "shared").is_some()
    })
    .await;

    let cm = configmaps(&objects);
    assert!(matches!(
        delete(
            &objects,
            &cm,
            Some("gc"),
            "owner",
            Some(Propagation::Background)
        )
        .await,
        Deleted::Gone(_)
    ));
    eventually("dependents of the deleted owner are collected", || {
        get_cm(&objects, "gc", "child-1").is_none() && get_cm(&objects, "gc", "child-2").is_none()
    })
    .await;
    eventually(
        "the dangling reference of the shared dependent is dropped",
        || {
            get_cm(&objects, "gc", "shared")
                .is_some_and(|s| owner_uids(&s) == vec![meta::uid(&other).to_string()])
        },
    )
    .await;
    stays("the shared dependent and bystanders survive", || {
        get_cm(&objects, "gc", "shared").is_some()
            && get_cm(&objects, "gc", "other").is_some()
            && get_cm(&objects, "gc", "bystander").is_some()
    })
    .await;

    // Deleting the last owner (default propagation) collects the shared dependent too.
    delete(&objects, &cm, Some("gc"), "other", None).await;
    eventually("the shared dependent goes with its last owner", || {
        get_cm(&objects, "gc", "shared").is_none()
    })
    .await;
    assert!(get_cm(&objects, "gc", "bystander").is_some());
    controllers.stop().await;
}

#[tokio::test]
async fn dependent_created_for_a_missing_owner_is_collected() {
    let objects = new_objects();
    let controllers = Controllers::start(&objects);
    create_namespace(&objects, "gc").await;
    let ghost = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}});
    create_cm(&objects, "gc", "orphan", &[&ghost], &[]).await;
    create_cm(&objects, "gc", "plain", &[], &[]).await;
    eventually("a dependent of a missing owner is collected", || {
        get_cm(&objects, "gc", "orphan").is_none()
    })
    .await;
    assert!(get_cm(&objects, "gc", "plain").is_some());
    controllers.stop().await;
}

#[tokio::test]
async fn cascades_started_before_the_controllers_are_finished_on_start() {
    let objects = new_objects();
    create_namespace(&objects, "gc").await;
    let owner = create_cm(&objects, "gc", "owner", &[], &[]).await;
    create_cm(&objects, "gc", "child", &[&owner], &[]).await;
    let cm = configmaps(&objects);
    delete(&objects, &cm, Some("gc"), "owner", None).await;
    let controllers = Controllers::start(&objects);
    eventually(
        "the child of an owner deleted before start is collected",
        || get_cm(&objects, "gc", "child").is_none(),
    )
    .await;
    controllers.stop().await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let objects = new_objects();
    let controllers = Controllers::start(&objects);
    create_namespace(&objects, "fg").await;
    let owner = create_cm(&objects, "fg", "owner", &[], &[]).await;
    let child = create_cm(&objects, "fg", "child", &[&owner], &[]).await;
    create_cm(&objects, "fg", "grandchild", &[&child], &[]).await;
    create_cm(&objects, "fg", "held", &[&owner], &[HOLD]).await;
    let cm = configmaps(&objects);

    let deleted = delete(
        &objects,
        &cm,
        Some("fg"),
        "owner",
        Some(Propagation::Foreground),
    )
    .await;
    let Deleted::Pending(pending) = deleted else {
        panic!("a foreground deletion waits for dependents");
    };
    assert!(
        meta::finalizers(&pending)
            .iter()
            .any(|f| f == FOREGROUND_FINALIZER)
    );
    eventually("the child and grandchild are deleted", || {
        get_cm(&objects, "fg", "child").is_none() && get_cm(&objects, "fg", "grandchild").is_none()
    })
    .await;
    eventually("the held dependent is being deleted", || {
        get_cm(&objects, "fg", "held").is_some_and(|h| meta::is_deleting(&h))
    })
    .await;
    stays("the owner waits for the held dependent", || {
        get_cm(&objects, "fg", "owner").is_some_and(|o| {
            meta::is_deleting(&o)
                && meta::finalizers(&o)
                    .iter()
                    .any(|f| f == FOREGROUND_FINALIZER)
        })
    })
    .await;

    clear_finalizers(&objects, &cm, Some("fg"), "held").await;
    eventually("the owner goes once its dependents are gone", || {
        get_cm(&objects, "fg", "owner").is_none() && get_cm(&objects, "fg", "held").is_none()
    })
    .await;
    controllers.stop().await;
}

#[tokio::test]
async fn foreground_deletion_spares_dependents_with_another_owner() {
    let objects = new_objects();
    let controllers = Controllers::start(&objects);
    create_namespace(&objects, "fg").await;
    let owner = create_cm(&objects, "fg", "owner", &[], &[]).await;
    let other = create_cm(&objects, "fg", "other", &[], &[]).await;
    create_cm(&objects, "fg", "shared", &[&owner, &other], &[]).await;
    create_cm(&objects, "fg", "lonely", &[], &[]).await;
    let cm = configmaps(&objects);
    delete(
        &objects,
        &cm,
        Some("fg"),
        "owner",
        Some(Propagation::Foreground),
    )
    .await;
    // An owner without dependents goes at once too.
    delete(
        &objects,
        &cm,
        Some("fg"),
        "lonely",
        Some(Propagation::Foreground),
    )
    .await;
    eventually("both foreground deletions complete", || {
        get_cm(&objects, "fg", "owner").is_none() && get_cm(&objects, "fg", "lonely").is_none()
    })
    .await;
    let shared = get_cm(&objects, "fg", "shared").expect("shared dependent kept");
    assert!(!meta::is_deleting(&shared));
    assert_eq!(owner_uids(&shared), vec![meta::uid(&other).to_string()]);
    controllers.stop().await;
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents() {
    let objects = new_objects();
    let controllers = Controllers::start(&objects);
    create_namespace(&objects, "or").await;
    let owner = create_cm(&objects, "or", "owner", &[], &[]).await;
    let other = create_cm(&objects, "or", "other", &[], &[]).await;
    create_cm(&objects, "or", "child-1", &[&owner], &[]).await;
    create_cm(&objects, "or", "child-2", &[&owner, &other], &[]).await;
    let cm = configmaps(&objects);
    let deleted = delete(
        &objects,
        &cm,
        Some("or"),
        "owner",
        Some(Propagation::Orphan),
    )
    .await;
    if let Deleted::Pending(pending) = &deleted {
        assert!(
            meta::finalizers(pending)
                .iter()
                .any(|f| f == ORPHAN_FINALIZER)
        );
    }
    eventually("the orphaning owner goes", || {
        get_cm(&objects, "or", "owner").is_none()
    })
    .await;
    let child = get_cm(&objects, "or", "child-1").expect("orphaned child kept");
    assert!(meta::owner_references(&child).is_empty(), "{child}");
    let child = get_cm(&objects, "or", "child-2").expect("orphaned child kept");
    assert_eq!(owner_uids(&child), vec![meta::uid(&other).to_string()]);
    stays("orphans are not collected", || {
        get_cm(&objects, "or", "child-1").is_some() && get_cm(&objects, "or", "child-2").is_some()
    })
    .await;
    controllers.stop().await;
}

#[tokio::test]
async fn namespace_deletion_removes_its_contents_then_itself() {
    let objects = new_objects();
    let controllers = Controllers::start(&objects);
    create_namespace(&objects, "doomed").await;
    create_namespace(&objects, "kept").await;
    let secrets = info(&objects, "", "v1", "secrets");
    for i in 0..20 {
        create_cm(&objects, "doomed", &format!("cm-{i}"), &[], &[]).await;
    }
    create_in(&objects, &secrets, "doomed", "secret", &[], &[]).await;
    create_cm(&objects, "kept", "cm-0", &[], &[]).await;
    let namespaces = info(&objects, "", "v1", "namespaces");
    let deleted = delete(&objects, &namespaces, None, "doomed", None).await;
    if let Deleted::Pending(ns) = &deleted {
        assert_eq!(ns["status"]["phase"], "Terminating");
    }
    eventually("the namespace and its contents are gone", || {
        objects.get(&namespaces, None, "doomed").is_err()
    })
    .await;
    for i in 0..20 {
        assert!(get_cm(&objects, "doomed", &format!("cm-{i}")).is_none());
    }
    assert!(objects.get(&secrets, Some("doomed"), "secret").is_err());
    assert!(objects.get(&namespaces, None, "kept").is_ok());
    assert!(get_cm(&objects, "kept", "cm-0").is_some());
    controllers.stop().await;
}

#[tokio::test]
async fn namespace_waits_for_finalizers_of_its_contents() {
    let objects = new_objects();
    let controllers = Controllers::start(&objects);
    create_namespace(&objects, "slow").await;
    create_cm(&objects, "slow", "held", &[], &[HOLD]).await;
    create_cm(&objects, "slow", "free", &[], &[]).await;
    let namespaces = info(&objects, "", "v1", "namespaces");
    delete(&objects, &namespaces, None, "slow", None).await;
    eventually("the free object is deleted, the held one marked", || {
        get_cm(&objects, "slow", "free").is_none()
            && get_cm(&objects, "slow", "held").is_some_and(|h| meta::is_deleting(&h))
    })
    .await;
    stays("the namespace stays terminating", || {
        objects
            .get(&namespaces, None, "slow")
            .is_ok_and(|ns| meta::is_deleting(&ns))
    })
    .await;
    let cm = configmaps(&objects);
    let refused = objects
        .create(
            &cm,
            Some("slow"),
            json!({"metadata": {"name": "late"}}),
            &WriteOptions::default(),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.code);
    assert_eq!(refused, Err(403));

    clear_finalizers(&objects, &cm, Some("slow"), "held").await;
    eventually("the namespace goes once the held object is gone", || {
        objects.get(&namespaces, None, "slow").is_err()
    })
    .await;
    controllers.stop().await;
}

#[tokio::test]
async fn namespace_terminating_at_start_is_finished() {
    let objects = new_objects();
    create_namespace(&objects, "left-over").await;
    create_cm(&objects, "left-over", "cm", &[], &[]).await;
    let namespaces = info(&objects, "", "v1", "namespaces");
    delete(&objects, &namespaces, None, "left-over", None).await;
    assert!(
        objects.get(&namespaces, None, "left-over").is_ok(),
        "without controllers the namespace only terminates"
    );
    let controllers = Controllers::start(&objects);
    eventually(
        "the terminating namespace is cleaned up after start",
        || {
            objects.get(&namespaces, None, "left-over").is_err()
                && get_cm(&objects, "left-over", "cm").is_none()
        },
    )
    .await;
    controllers.stop().await;
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.org"},
        "spec": {
            "group": "example.org",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

#[tokio::test]
async fn crd_deletion_removes_its_custom_resources_then_the_crd() {
    let objects = new_objects();
    let controllers = Controllers::start(&objects);
    let crds = info(
        &objects,
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
    );
    objects
        .create(&crds, None, widget_crd(), &WriteOptions::default())
        .await
        .expect("create CRD");
    let widgets = objects
        .registry()
        .get("example.org", "v1", "widgets")
        .expect("widgets are served once the CRD exists");
    create_namespace(&objects, "a").await;
    create_namespace(&objects, "b").await;
    let owner = create_in(&objects, &widgets, "a", "w1", &[], &[]).await;
    create_in(&objects, &widgets, "b", "w2", &[], &[HOLD]).await;
    // A built-in dependent of a custom resource is collected with it.
    create_cm(&objects, "a", "owned-by-widget", &[&owner], &[]).await;

    let deleted = delete(&objects, &crds, None, "widgets.example.org", None).await;
    assert!(
        matches!(deleted, Deleted::Pending(_)),
        "the cleanup finalizer holds the CRD"
    );
    eventually(
        "the free custom resource is deleted, the held one marked",
        || {
            objects.get(&widgets, Some("a"), "w1").is_err()
                && objects
                    .get(&widgets, Some("b"), "w2")
                    .is_ok_and(|w| meta::is_deleting(&w))
        },
    )
    .await;
    eventually("the custom resource's dependent is collected", || {
        get_cm(&objects, "a", "owned-by-widget").is_none()
    })
    .await;
    stays("the CRD waits for its custom resources", || {
        objects.get(&crds, None, "widgets.example.org").is_ok()
    })
    .await;

    clear_finalizers(&objects, &widgets, Some("b"), "w2").await;
    eventually("the CRD is deleted and no longer served", || {
        objects.get(&crds, None, "widgets.example.org").is_err()
            && objects
                .registry()
                .get("example.org", "v1", "widgets")
                .is_none()
    })
    .await;
    stays("the kind stays unserved", || {
        objects
            .registry()
            .get("example.org", "v1", "widgets")
            .is_none()
    })
    .await;
    controllers.stop().await;
}

#[tokio::test]
async fn stops_on_shutdown_and_when_the_sender_is_dropped() {
    let objects = new_objects();
    Controllers::start(&objects).stop().await;
    let (stop, rx) = watch::channel(false);
    let task = tokio::spawn(run(objects.clone(), rx, None));
    drop(stop);
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("controllers stop when the sender is dropped")
        .expect("no panic");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn plain_objects_cost_no_controller_writes() {
    let objects = new_objects();
    let controllers = Controllers::start(&objects);
    // The local APIServices are registered on start (the last one created is `v2.autoscaling`).
    let apiservices = objects
        .registry()
        .get("apiregistration.k8s.io", "v1", "apiservices")
        .expect("apiservices served");
    eventually("the local APIServices are registered", || {
        objects.get(&apiservices, None, "v2.autoscaling").is_ok()
    })
    .await;
    create_namespace(&objects, "bulk").await;
    let start = objects.storage().revision();
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let objects = objects.clone();
            tokio::spawn(async move {
                for i in 0..100 {
                    create_cm(&objects, "bulk", &format!("cm-{w}-{i}"), &[], &[]).await;
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("writer");
    }
    assert_eq!(objects.storage().revision(), start + 800);
    stays("the controllers write nothing for plain objects", || {
        objects.storage().revision() == start + 800
    })
    .await;
    controllers.stop().await;
}
