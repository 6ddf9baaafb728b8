//! DaemonSets and StatefulSets keep their history as ControllerRevisions on a simulating
//! server, as upstream's controllers do: one revision per template, a rollback (the revision's
//! data applied as a strategic merge patch, as `kubectl rollout undo` does) moves the old
//! revision to the top, and `revisionHistoryLimit` trims the oldest.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);
const REVISIONS: &str = "/apis/apps/v1/namespaces/default/controllerrevisions";

/// The revisions `owner` controls: (revision, image of its data's first container), by revision.
async fn revisions(env: &TestEnv, owner: &str) -> Vec<(i64, String)> {
    let (code, list) = raw(&env.client(), "GET", REVISIONS, None, vec![]).await;
    assert_eq!(code, 200, "{list}");
    let mut out: Vec<(i64, String)> = list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| {
            r["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|o| {
                    o.iter()
                        .any(|o| o["name"] == owner && o["controller"] == true)
                })
        })
        .map(|r| {
            (
                r["revision"].as_i64().unwrap_or(-1),
                r["data"]["spec"]["template"]["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

async fn wait_revisions(env: &TestEnv, owner: &str, want: &[(i64, &str)]) {
    let want: Vec<(i64, String)> = want.iter().map(|(r, i)| (*r, i.to_string())).collect();
    let result = wait_until(WAIT, format!("{owner} history {want:?}"), || {
        let want = want.clone();
        async move { revisions(env, owner).await == want }
    })
    .await;
    if result.is_err() {
        panic!(
            "{owner}: history {:?}, wanted {want:?}",
            revisions(env, owner).await
        );
    }
}

fn workload(kind: &str, name: &str, image: &str) -> Value {
    let mut spec = json!({
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": image}]}},
    });
    if kind == "StatefulSet" {
        spec["serviceName"] = json!(name);
        spec["replicas"] = json!(1);
    }
    json!({"apiVersion": "apps/v1", "kind": kind,
           "metadata": {"name": name, "annotations": {"kubernetes.io/change-cause": "first"}},
           "spec": spec})
}

async fn set_image(env: &TestEnv, path: &str, image: &str) {
    let patch =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
    let (code, body) = call_as(
        env,
        "PATCH",
        path,
        "application/strategic-merge-patch+json",
        &patch,
    )
    .await;
    assert_eq!(code, 200, "{body}");
}

#[tokio::test]
async fn daemon_set_and_stateful_set_history_roll_back_and_trim() {
    let env = TestEnv::builder()
        .simulation(true)
        .start()
        .await
        .expect("env");
    for (kind, resource, name) in [
        ("DaemonSet", "daemonsets", "agent"),
        ("StatefulSet", "statefulsets", "db"),
    ] {
        let collection = format!("/apis/apps/v1/namespaces/default/{resource}");
        let path = format!("{collection}/{name}");
        let (code, body) = call_as(
            &env,
            "POST",
            &collection,
            "application/json",
            &workload(kind, name, "img:1"),
        )
        .await;
        assert_eq!(code, 201, "{body}");
        wait_revisions(&env, name, &[(1, "img:1")]).await;

        // The revision as upstream writes it.
        let (_, list) = raw(&env.client(), "GET", REVISIONS, None, vec![]).await;
        let first = list["items"]
            .as_array()
            .and_then(|i| {
                i.iter()
                    .find(|r| r["metadata"]["ownerReferences"][0]["name"] == name)
            })
            .cloned()
            .expect("revision");
        assert_eq!(
            first["data"]["spec"]["template"]["$patch"], "replace",
            "{first}"
        );
        assert_eq!(first["metadata"]["labels"]["app"], name, "{first}");
        assert!(
            first["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(&format!("{name}-"))),
            "{first}"
        );
        assert_eq!(
            first["metadata"]["annotations"]["kubernetes.io/change-cause"], "first",
            "{first}"
        );

        set_image(&env, &path, "img:2").await;
        wait_revisions(&env, name, &[(1, "img:1"), (2, "img:2")]).await;

        // `kubectl rollout undo --to-revision=1`: revision 1's data as a strategic merge patch.
        let (code, body) = call_as(
            &env,
            "PATCH",
            &path,
            "application/strategic-merge-patch+json",
            &first["data"],
        )
        .await;
        assert_eq!(code, 200, "{body}");
        assert_eq!(
            body["spec"]["template"]["spec"]["containers"][0]["image"],
            "img:1"
        );
        wait_revisions(&env, name, &[(2, "img:2"), (3, "img:1")]).await;

        // A limit of one old revision: the oldest goes once a new template is recorded.
        let (code, body) = call_as(
            &env,
            "PATCH",
            &path,
            "application/merge-patch+json",
            &json!({"spec": {"revisionHistoryLimit": 1}}),
        )
        .await;
        assert_eq!(code, 200, "{body}");
        set_image(&env, &path, "img:3").await;
        let trimmed = wait_until(WAIT, format!("{name} trimmed"), || async {
            let history = revisions(&env, name).await;
            history.last() == Some(&(4, "img:3".to_string()))
                && !history.contains(&(2, "img:2".to_string()))
        })
        .await;
        if trimmed.is_err() {
            panic!("{name}: not trimmed: {:?}", revisions(&env, name).await);
        }
    }
}
