//! Workload simulation: Deployments, ReplicaSets, Pods, StatefulSets, Services and Jobs behave
//! as on a cluster when `ServerConfig.simulation` is on, and nothing happens when it is off.

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Endpoints, Node, Pod, ReplicationController, Service};
use korral_apiserver::ServerConfig;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);
const SAFE: &str = "bcdfghjklmnpqrstvwxz2456789";

fn deployment(name: &str, replicas: i32, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image, "ports": [{"name": "http", "containerPort": 8080}]}]}
            }
        }
    }))
    .expect("deployment")
}

fn is_safe(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| SAFE.contains(c))
}

async fn pods_with(api: &Api<Pod>, selector: &str) -> Vec<Pod> {
    api.list(&ListParams::default().labels(selector))
        .await
        .expect("pods")
        .items
}

fn ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        && pod.metadata.deletion_timestamp.is_none()
}

/// Waits until the Deployment reports `n` ready, available, updated replicas for its
/// current generation, and exactly `n` Pods exist.
async fn wait_deployment_ready(env: &TestEnv, name: &str, n: i32) {
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let selector = format!("app={name}");
    wait_until(WAIT, format!("deployment {name} {n}/{n}"), || {
        let deployments = deployments.clone();
        let pods = pods.clone();
        let selector = selector.clone();
        async move {
            let Ok(d) = deployments.get(name).await else {
                return false;
            };
            let s = d.status.clone().unwrap_or_default();
            let pods = pods_with(&pods, &selector).await;
            s.observed_generation == d.metadata.generation
                && s.replicas.unwrap_or(0) == n
                && s.ready_replicas.unwrap_or(0) == n
                && s.available_replicas.unwrap_or(0) == n
                && s.updated_replicas.unwrap_or(0) == n
                && pods.len() == n as usize
                && pods.iter().all(ready)
        }
    })
    .await
    .expect("deployment ready");
}

#[tokio::test]
async fn deployment_gets_replicaset_and_ready_pods_named_like_upstream() {
    let env = sim_env().await;
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 3, "nginx:1.27"))
        .await
        .expect("create");
    wait_deployment_ready(&env, "web", 3).await;

    let rss: Api<ReplicaSet> = Api::namespaced(env.client(), "default");
    let rs_list = rss.list(&ListParams::default()).await.expect("rs").items;
    assert_eq!(rs_list.len(), 1);
    let rs = &rs_list[0];
    let rs_name = rs.metadata.name.clone().expect("name");
    let hash = rs_name
        .strip_prefix("web-")
        .expect("rs named after the deployment");
    assert!(is_safe(hash) && hash.len() <= 10, "hash {hash}");
    let labels = rs.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("pod-template-hash").map(String::as_str),
        Some(hash)
    );
    let spec = rs.spec.clone();
    let match_labels = spec.selector.match_labels.clone().unwrap_or_default();
    assert_eq!(
        match_labels.get("pod-template-hash").map(String::as_str),
        Some(hash)
    );
    assert_eq!(spec.replicas, Some(3));
    let annotations = rs.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("deployment.kubernetes.io/revision")
            .map(String::as_str),
        Some("1")
    );
    let owner = &rs.metadata.owner_references.clone().expect("owner")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Deployment", "web")
    );
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    let rs_status = rs.status.clone().expect("rs status");
    assert_eq!(rs_status.replicas, 3);
    assert_eq!(rs_status.ready_replicas, Some(3));
    assert_eq!(rs_status.available_replicas, Some(3));
    assert_eq!(rs_status.fully_labeled_replicas, Some(3));
    assert_eq!(rs_status.observed_generation, rs.metadata.generation);

    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    for pod in pods_with(&pods, "app=web").await {
        let name = pod.metadata.name.clone().expect("name");
        let suffix = name
            .strip_prefix(&format!("{rs_name}-"))
            .expect("pod named after the rs");
        assert!(is_safe(suffix) && suffix.len() == 5, "suffix {suffix}");
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(
            labels.get("pod-template-hash").map(String::as_str),
            Some(hash)
        );
        let owner = &pod.metadata.owner_references.clone().expect("owner")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("ReplicaSet", rs_name.as_str())
        );
        assert_eq!(owner.controller, Some(true));
        let spec = pod.spec.clone().expect("spec");
        assert_eq!(spec.node_name.as_deref(), Some("korral-node"));
        let status = pod.status.clone().expect("status");
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert!(
            status
                .pod_ip
                .as_deref()
                .is_some_and(|ip| ip.starts_with("10.244."))
        );
        assert!(status.host_ip.is_some() && status.start_time.is_some());
        let cs = &status
            .container_statuses
            .clone()
            .expect("container statuses")[0];
        assert!(cs.ready && cs.started == Some(true) && cs.restart_count == 0);
        assert!(cs.state.as_ref().and_then(|s| s.running.as_ref()).is_some());
        assert!(
            cs.container_id
                .as_deref()
                .is_some_and(|id| id.starts_with("containerd://"))
        );
        assert!(cs.image_id.contains("@sha256:"));
        let conditions = status.conditions.clone().unwrap_or_default();
        for kind in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
            assert!(
                conditions
                    .iter()
                    .any(|c| c.type_ == kind && c.status == "True"),
                "{kind}"
            );
        }
    }

    let d = deployments.get("web").await.expect("get");
    let annotations = d.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations
            .get("deployment.kubernetes.io/revision")
            .map(String::as_str),
        Some("1")
    );
    let conditions = d
        .status
        .clone()
        .and_then(|s| s.conditions)
        .unwrap_or_default();
    let available = conditions
        .iter()
        .find(|c| c.type_.as_deref() == Some("Available"))
        .expect("Available");
    assert_eq!(
        (available.status.as_deref(), available.reason.as_deref()),
        (Some("True"), Some("MinimumReplicasAvailable"))
    );
    assert_eq!(
        available.message.as_deref(),
        Some("Deployment has minimum availability.")
    );
    let progressing = conditions
        .iter()
        .find(|c| c.type_.as_deref() == Some("Progressing"))
        .expect("Progressing");
    assert_eq!(
        progressing.reason.as_deref(),
        Some("NewReplicaSetAvailable")
    );
    assert_eq!(
        progressing.message.as_deref(),
        Some(format!("ReplicaSet \"{rs_name}\" has successfully progressed.").as_str())
    );
    assert!(d.status.and_then(|s| s.unavailable_replicas).is_none());

    // One simulated node, Ready.
    let nodes: Api<Node> = Api::all(env.client());
    let nodes = nodes
        .list(&ListParams::default())
        .await
        .expect("nodes")
        .items;
    assert_eq!(nodes.len(), 1);
    let node_ready = nodes[0]
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    assert!(node_ready);
}

#[tokio::test]
async fn scaling_adds_and_removes_pods() {
    let env = sim_env().await;
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("scale", 2, "nginx"))
        .await
        .expect("create");
    wait_deployment_ready(&env, "scale", 2).await;
    let patch = |n: i32| Patch::Merge(json!({"spec": {"replicas": n}}));
    deployments
        .patch("scale", &PatchParams::default(), &patch(5))
        .await
        .expect("scale up");
    wait_deployment_ready(&env, "scale", 5).await;
    deployments
        .patch("scale", &PatchParams::default(), &patch(1))
        .await
        .expect("scale down");
    wait_deployment_ready(&env, "scale", 1).await;
    let rss: Api<ReplicaSet> = Api::namespaced(env.client(), "default");
    assert_eq!(
        rss.list(&ListParams::default())
            .await
            .expect("rs")
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn template_change_rolls_to_a_new_replicaset() {
    let env = sim_env().await;
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("roll", 2, "nginx:1"))
        .await
        .expect("create");
    wait_deployment_ready(&env, "roll", 2).await;
    let rss: Api<ReplicaSet> = Api::namespaced(env.client(), "default");
    let first = rss.list(&ListParams::default()).await.expect("rs").items[0]
        .metadata
        .name
        .clone()
        .expect("name");
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}});
    deployments
        .patch("roll", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("patch image");
    wait_until(WAIT, "rolled out to a new replicaset", || {
        let rss = rss.clone();
        let deployments = deployments.clone();
        let pods: Api<Pod> = Api::namespaced(env.client(), "default");
        let first = first.clone();
        async move {
            let list = rss.list(&ListParams::default()).await.expect("rs").items;
            let d = deployments.get("roll").await.expect("get");
            let pods = pods_with(&pods, "app=roll").await;
            let old_empty = list
                .iter()
                .filter(|rs| rs.metadata.name.as_deref() == Some(&first))
                .all(|rs| {
                    rs.spec.replicas == Some(0)
                        && rs.status.as_ref().is_some_and(|s| s.replicas == 0)
                });
            let new = list
                .iter()
                .find(|rs| rs.metadata.name.as_deref() != Some(&first));
            let new_ok = new.is_some_and(|rs| {
                rs.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("deployment.kubernetes.io/revision"))
                    .map(String::as_str)
                    == Some("2")
                    && rs.status.as_ref().and_then(|s| s.ready_replicas) == Some(2)
            });
            let images_new = pods.len() == 2
                && pods.iter().all(|p| {
                    p.spec
                        .as_ref()
                        .is_some_and(|s| s.containers[0].image.as_deref() == Some("nginx:2"))
                });
            let d_rev = d
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("deployment.kubernetes.io/revision"))
                .cloned();
            list.len() == 2 && old_empty && new_ok && images_new && d_rev.as_deref() == Some("2")
        }
    })
    .await
    .expect("rollout");
    wait_deployment_ready(&env, "roll", 2).await;
}

/// ReplicaSet events as a watch delivers them.
type ReplicaSetEvents =
    futures::stream::BoxStream<'static, kube::Result<kube::api::WatchEvent<ReplicaSet>>>;

/// Creates Deployment `name` (`replicas` of `nginx:1` with `strategy`), waits until it is ready,
/// then changes its image to `nginx:2` with a watch on ReplicaSets open from before the
/// change: the first ReplicaSet's name and the watch's events.
async fn roll_out(
    env: &TestEnv,
    name: &str,
    replicas: i32,
    strategy: serde_json::Value,
) -> (String, ReplicaSetEvents) {
    use futures::StreamExt;
    use kube::api::WatchParams;

    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let mut d = deployment(name, replicas, "nginx:1");
    d.spec.strategy = Some(serde_json::from_value(strategy).expect("strategy"));
    deployments
        .create(&PostParams::default(), &d)
        .await
        .expect("create");
    wait_deployment_ready(env, name, replicas).await;
    let rss: Api<ReplicaSet> = Api::namespaced(env.client(), "default");
    let listed = rss.list(&ListParams::default()).await.expect("rs");
    let first = listed.items[0].metadata.name.clone().expect("name");
    let rv = listed.metadata.resource_version.expect("rv");
    let events = rss
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .expect("watch")
        .boxed();
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}});
    deployments
        .patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("patch image");
    (first, events)
}

/// A rolling update steps as upstream's: with `maxSurge: 1, maxUnavailable: 0` the new
/// ReplicaSet grows one replica at a time, the old one shrinks one at a time, never more than
/// `replicas + 1` are asked for and never fewer than `replicas` are available.
#[tokio::test]
async fn rolling_update_steps_within_surge_and_unavailability() {
    use futures::StreamExt;
    use kube::api::WatchEvent;
    use std::collections::BTreeMap;

    let env = sim_env().await;
    let strategy =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    let (first, mut events) = roll_out(&env, "steps", 4, strategy).await;

    // The latest (spec, available) of every ReplicaSet, checked after each event.
    let mut state: BTreeMap<String, (i32, i32)> = BTreeMap::new();
    state.insert(first.clone(), (4, 4));
    let mut new_sizes: Vec<i32> = Vec::new();
    let mut old_sizes: Vec<i32> = vec![4];
    let done = tokio::time::timeout(WAIT, async {
        while let Some(event) = events.next().await {
            let rs = match event.expect("event") {
                WatchEvent::Added(rs) | WatchEvent::Modified(rs) => rs,
                _ => continue,
            };
            let name = rs.metadata.name.clone().expect("name");
            let spec = rs.spec.replicas.unwrap_or(1);
            let available = rs
                .status
                .as_ref()
                .and_then(|s| s.available_replicas)
                .unwrap_or(0);
            let sizes = if name == first {
                &mut old_sizes
            } else {
                &mut new_sizes
            };
            if sizes.last() != Some(&spec) {
                sizes.push(spec);
            }
            state.insert(name, (spec, available));
            let asked: i32 = state.values().map(|(s, _)| s).sum();
            let up: i32 = state.values().map(|(_, a)| a).sum();
            assert!(
                asked <= 5,
                "more than replicas + maxSurge asked for: {state:?}"
            );
            assert!(
                up >= 4,
                "fewer than replicas - maxUnavailable available: {state:?}"
            );
            if state.get(&first) == Some(&(0, 0))
                && state.iter().any(|(n, v)| *n != first && *v == (4, 4))
            {
                return;
            }
        }
        panic!("the watch ended before the rollout: {state:?}");
    })
    .await;
    done.expect("rollout finished");
    assert_eq!(new_sizes, vec![1, 2, 3, 4], "the new ReplicaSet's sizes");
    assert_eq!(old_sizes, vec![4, 3, 2, 1, 0], "the old ReplicaSet's sizes");
    wait_deployment_ready(&env, "steps", 4).await;
}

/// A Recreate rollout stops every old pod before the new ReplicaSet exists, as upstream's.
#[tokio::test]
async fn recreate_starts_the_new_replica_set_once_the_old_pods_are_gone() {
    use futures::StreamExt;
    use kube::api::WatchEvent;

    let env = sim_env().await;
    let (first, mut events) = roll_out(&env, "again", 2, json!({"type": "Recreate"})).await;
    let mut old_pods = 2;
    tokio::time::timeout(WAIT, async {
        while let Some(event) = events.next().await {
            let rs = match event.expect("event") {
                WatchEvent::Added(rs) | WatchEvent::Modified(rs) => rs,
                _ => continue,
            };
            let pods = rs.status.as_ref().map_or(0, |s| s.replicas);
            if rs.metadata.name.as_deref() == Some(first.as_str()) {
                old_pods = pods;
                continue;
            }
            assert_eq!(
                old_pods, 0,
                "the new ReplicaSet appeared while old pods ran"
            );
            if rs.status.as_ref().and_then(|s| s.available_replicas) == Some(2) {
                return;
            }
        }
        panic!("the watch ended before the rollout");
    })
    .await
    .expect("rollout finished");
    wait_deployment_ready(&env, "again", 2).await;
}

#[tokio::test]
async fn deleted_pod_is_replaced_and_deleting_the_deployment_collects_everything() {
    let env = sim_env().await;
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("heal", 2, "nginx"))
        .await
        .expect("create");
    wait_deployment_ready(&env, "heal", 2).await;
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let before = pods_with(&pods, "app=heal").await;
    let victim = before[0].metadata.name.clone().expect("name");
    pods.delete(&victim, &DeleteParams::default())
        .await
        .expect("delete pod");
    wait_until(WAIT, "replacement pod", || {
        let pods = pods.clone();
        let victim = victim.clone();
        async move {
            let now = pods_with(&pods, "app=heal").await;
            now.len() == 2
                && now.iter().all(ready)
                && now
                    .iter()
                    .all(|p| p.metadata.name.as_deref() != Some(victim.as_str()))
        }
    })
    .await
    .expect("self-healing");

    deployments
        .delete("heal", &DeleteParams::default())
        .await
        .expect("delete deployment");
    let rss: Api<ReplicaSet> = Api::namespaced(env.client(), "default");
    wait_until(WAIT, "replicaset and pods collected", || {
        let rss = rss.clone();
        let pods = pods.clone();
        async move {
            rss.list(&ListParams::default())
                .await
                .expect("rs")
                .items
                .is_empty()
                && pods_with(&pods, "app=heal").await.is_empty()
        }
    })
    .await
    .expect("garbage collection");
}

#[tokio::test]
async fn statefulset_pods_come_up_in_order_and_scale_down_from_the_top() {
    let env = sim_env().await;
    let sts: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres"}]}}
        }
    }))
    .expect("sts");
    let api: Api<StatefulSet> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let start_rv = pods
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .expect("rv");
    api.create(&PostParams::default(), &sts)
        .await
        .expect("create");
    let wait_ready = |n: usize| {
        let api = api.clone();
        let pods = pods.clone();
        async move {
            wait_until(WAIT, format!("statefulset {n} ready"), || {
                let api = api.clone();
                let pods = pods.clone();
                async move {
                    let s = api.get("db").await.expect("get").status.unwrap_or_default();
                    let list = pods_with(&pods, "app=db").await;
                    let mut names: Vec<String> = list
                        .iter()
                        .filter_map(|p| p.metadata.name.clone())
                        .collect();
                    names.sort();
                    let expected: Vec<String> = (0..n).map(|i| format!("db-{i}")).collect();
                    s.ready_replicas.unwrap_or(0) as usize == n
                        && s.replicas as usize == n
                        && names == expected
                        && list.iter().all(ready)
                }
            })
            .await
            .expect("statefulset ready");
        }
    };
    wait_ready(3).await;
    // Ordered: a pod is created only once the one before it is Running and Ready.
    use futures::{StreamExt, TryStreamExt};
    let mut stream = pods
        .watch(
            &kube::api::WatchParams::default().labels("app=db"),
            &start_rv,
        )
        .await
        .expect("watch")
        .boxed();
    let mut ready_seen: Vec<String> = Vec::new();
    let mut added: Vec<String> = Vec::new();
    while added.len() < 3 {
        let event = tokio::time::timeout(WAIT, stream.try_next())
            .await
            .expect("event")
            .expect("ok")
            .expect("some");
        match event {
            kube::api::WatchEvent::Added(p) => {
                let name = p.metadata.name.clone().expect("name");
                let ordinal: usize = name.trim_start_matches("db-").parse().expect("ordinal");
                if ordinal > 0 {
                    assert!(
                        ready_seen.contains(&format!("db-{}", ordinal - 1)),
                        "{name} created before db-{} was ready",
                        ordinal - 1
                    );
                }
                added.push(name);
            }
            kube::api::WatchEvent::Modified(p) if ready(&p) => {
                ready_seen.extend(p.metadata.name.clone());
            }
            _ => {}
        }
    }
    assert_eq!(added, vec!["db-0", "db-1", "db-2"]);
    let mut list = pods_with(&pods, "app=db").await;
    list.sort_by_key(|p| p.metadata.name.clone());
    let pod = &list[1];
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
            .get("statefulset.kubernetes.io/pod-name")
            .map(String::as_str),
        Some("db-1")
    );
    assert!(
        labels
            .get("controller-revision-hash")
            .is_some_and(|h| h.starts_with("db-"))
    );
    assert_eq!(
        pod.spec.as_ref().and_then(|s| s.hostname.as_deref()),
        Some("db-1")
    );
    let status = api.get("db").await.expect("get").status.expect("status");
    assert_eq!(status.current_revision, status.update_revision);
    assert_eq!(status.current_replicas, Some(3));
    assert_eq!(status.updated_replicas, Some(3));
    assert_eq!(status.available_replicas, Some(3));

    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .expect("scale down");
    wait_ready(1).await;
}

#[tokio::test]
async fn service_endpoints_follow_pod_readiness() {
    let env = sim_env().await;
    let services: Api<Service> = Api::namespaced(env.client(), "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}
    }))
    .expect("svc");
    services
        .create(&PostParams::default(), &svc)
        .await
        .expect("svc");
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 2, "nginx"))
        .await
        .expect("create");
    wait_deployment_ready(&env, "web", 2).await;
    let endpoints: Api<Endpoints> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let ready_ips = || {
        let endpoints = endpoints.clone();
        async move {
            let Ok(ep) = endpoints.get("web").await else {
                return None;
            };
            let subsets = ep.subsets.unwrap_or_default();
            let mut ips: Vec<String> = subsets
                .iter()
                .flat_map(|s| s.addresses.clone().unwrap_or_default())
                .map(|a| a.ip)
                .collect();
            ips.sort();
            let ports: Vec<i32> = subsets
                .iter()
                .flat_map(|s| s.ports.clone().unwrap_or_default())
                .map(|p| p.port)
                .collect();
            Some((ips, ports))
        }
    };
    let pod_ips = |list: &[Pod]| {
        let mut ips: Vec<String> = list
            .iter()
            .filter_map(|p| p.status.as_ref()?.pod_ip.clone())
            .collect();
        ips.sort();
        ips
    };
    wait_until(
        WAIT,
        "endpoints list both pods on the named target port",
        || {
            let pods = pods.clone();
            async move {
                let list = pods_with(&pods, "app=web").await;
                ready_ips().await == Some((pod_ips(&list), vec![8080]))
            }
        },
    )
    .await
    .expect("endpoints");

    // A pod turning unready moves to notReadyAddresses.
    let list = pods_with(&pods, "app=web").await;
    let name = list[0].metadata.name.clone().expect("name");
    let mut status = serde_json::to_value(list[0].status.clone().expect("status")).expect("json");
    for c in status["conditions"].as_array_mut().expect("conditions") {
        if c["type"] == "Ready" {
            c["status"] = json!("False");
        }
    }
    pods.patch_status(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"conditions": status["conditions"]}})),
    )
    .await
    .expect("unready");
    let unready_ip = list[0]
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .expect("ip");
    wait_until(WAIT, "unready pod moved out of addresses", || {
        let endpoints = endpoints.clone();
        let unready_ip = unready_ip.clone();
        async move {
            let Ok(ep) = endpoints.get("web").await else {
                return false;
            };
            let subsets = ep.subsets.unwrap_or_default();
            let ready: Vec<String> = subsets
                .iter()
                .flat_map(|s| s.addresses.clone().unwrap_or_default())
                .map(|a| a.ip)
                .collect();
            let not_ready: Vec<String> = subsets
                .iter()
                .flat_map(|s| s.not_ready_addresses.clone().unwrap_or_default())
                .map(|a| a.ip)
                .collect();
            ready.len() == 1 && !ready.contains(&unready_ip) && not_ready == vec![unready_ip]
        }
    })
    .await
    .expect("not ready");

    // Deleting the service removes its endpoints.
    services
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete svc");
    wait_until(WAIT, "endpoints removed", || {
        let endpoints = endpoints.clone();
        async move { endpoints.get_opt("web").await.expect("get").is_none() }
    })
    .await
    .expect("endpoints gone");
}

#[tokio::test]
async fn job_runs_its_pods_to_completion() {
    let env = sim_env().await;
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "pi"},
        "spec": {"completions": 3, "parallelism": 2, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}}}
    }))
    .expect("job");
    let jobs: Api<Job> = Api::namespaced(env.client(), "default");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create");
    wait_until(WAIT, "job complete", || {
        let jobs = jobs.clone();
        async move {
            let s = jobs
                .get("pi")
                .await
                .expect("get")
                .status
                .unwrap_or_default();
            let conditions = s.conditions.unwrap_or_default();
            s.succeeded == Some(3)
                && s.completion_time.is_some()
                && s.start_time.is_some()
                && s.active.is_none()
                && ["SuccessCriteriaMet", "Complete"].iter().all(|k| {
                    conditions.iter().any(|c| {
                        c.type_ == *k
                            && c.status == "True"
                            && c.reason.as_deref() == Some("CompletionsReached")
                    })
                })
        }
    })
    .await
    .expect("job completes");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let list = pods_with(&pods, "job-name=pi").await;
    assert_eq!(list.len(), 3);
    for pod in list {
        assert!(
            pod.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("pi-"))
        );
        assert_eq!(
            pod.status.and_then(|s| s.phase).as_deref(),
            Some("Succeeded")
        );
    }

    // A suspended job starts nothing.
    let suspended: Job = serde_json::from_value(json!({
        "metadata": {"name": "later"},
        "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}
    }))
    .expect("job");
    jobs.create(&PostParams::default(), &suspended)
        .await
        .expect("create");
    wait_until(WAIT, "suspended condition", || {
        let jobs = jobs.clone();
        async move {
            let s = jobs
                .get("later")
                .await
                .expect("get")
                .status
                .unwrap_or_default();
            s.conditions
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Suspended" && c.status == "True")
        }
    })
    .await
    .expect("suspended");
    assert!(pods_with(&pods, "job-name=later").await.is_empty());
    jobs.patch(
        "later",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": false}})),
    )
    .await
    .expect("resume");
    wait_until(WAIT, "resumed job completes", || {
        let jobs = jobs.clone();
        async move {
            let s = jobs
                .get("later")
                .await
                .expect("get")
                .status
                .unwrap_or_default();
            s.succeeded == Some(1) && s.completion_time.is_some()
        }
    })
    .await
    .expect("resumed");
}

#[tokio::test]
async fn bare_pod_is_scheduled_then_runs_in_a_separate_write() {
    let env = sim_env().await;
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "solo"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
        .expect("pod");
    let created = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("create");
    let rv: u64 = created
        .metadata
        .resource_version
        .clone()
        .expect("rv")
        .parse()
        .expect("number");
    wait_until(WAIT, "bare pod ready", || {
        let pods = pods.clone();
        async move { pods.get("solo").await.is_ok_and(|p| ready(&p)) }
    })
    .await
    .expect("ready");
    // A watch from the create sees the scheduling write (Pending, PodScheduled) before Running.
    use futures::{StreamExt, TryStreamExt};
    let mut stream = pods
        .watch(
            &kube::api::WatchParams::default().fields("metadata.name=solo"),
            &rv.to_string(),
        )
        .await
        .expect("watch")
        .boxed();
    let mut phases = Vec::new();
    while phases.last().map(String::as_str) != Some("Running") {
        let event = tokio::time::timeout(WAIT, stream.try_next())
            .await
            .expect("event")
            .expect("ok")
            .expect("some");
        if let kube::api::WatchEvent::Modified(p) = event {
            phases.push(p.status.and_then(|s| s.phase).unwrap_or_default());
        }
    }
    assert_eq!(phases, vec!["Pending".to_string(), "Running".to_string()]);
}

#[tokio::test]
async fn durable_restart_keeps_simulating() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let config = || {
        let mut c = ServerConfig::durable(&data);
        c.simulation = true;
        c
    };
    {
        let env = TestEnv::builder()
            .server_config(config())
            .start()
            .await
            .expect("env");
        let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
        deployments
            .create(&PostParams::default(), &deployment("keep", 1, "nginx"))
            .await
            .expect("create");
        wait_deployment_ready(&env, "keep", 1).await;
        env.shutdown().await;
    }
    // While "down", the desired state changes: restart with simulation off to change it.
    {
        let mut off = config();
        off.simulation = false;
        let env = TestEnv::builder()
            .server_config(off)
            .start()
            .await
            .expect("env");
        let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
        deployments
            .patch(
                "keep",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": 3}})),
            )
            .await
            .expect("scale");
        env.shutdown().await;
    }
    let env = TestEnv::builder()
        .server_config(config())
        .start()
        .await
        .expect("restart");
    wait_deployment_ready(&env, "keep", 3).await;
    env.shutdown().await;
}

#[tokio::test]
async fn simulation_off_does_nothing() {
    let env = TestEnv::builder()
        .simulation(false)
        .start()
        .await
        .expect("env");
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("idle", 2, "nginx"))
        .await
        .expect("create");
    // Give a (wrongly running) simulation ample time to react to a Pod-creating workload.
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let bare: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
        .expect("pod");
    pods.create(&PostParams::default(), &bare)
        .await
        .expect("pod");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss: Api<ReplicaSet> = Api::namespaced(env.client(), "default");
    assert!(
        rss.list(&ListParams::default())
            .await
            .expect("rs")
            .items
            .is_empty()
    );
    let pod = pods.get("p").await.expect("get");
    assert!(pod.spec.and_then(|s| s.node_name).is_none());
    assert!(pod.status.and_then(|s| s.pod_ip).is_none());
    let nodes: Api<Node> = Api::all(env.client());
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .expect("nodes")
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn daemonset_runs_one_pod_on_the_node() {
    use k8s_openapi::api::apps::v1::DaemonSet;
    let env = sim_env().await;
    let ds: DaemonSet = serde_json::from_value(json!({
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "busybox"}]}}
        }
    }))
    .expect("ds");
    let api: Api<DaemonSet> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &ds)
        .await
        .expect("create");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    wait_until(WAIT, "daemonset pod ready", || {
        let api = api.clone();
        let pods = pods.clone();
        async move {
            let s = api
                .get("agent")
                .await
                .expect("get")
                .status
                .unwrap_or_default();
            let list = pods_with(&pods, "app=agent").await;
            s.desired_number_scheduled == 1
                && s.current_number_scheduled == 1
                && s.number_ready == 1
                && s.number_available == Some(1)
                && s.updated_number_scheduled == Some(1)
                && list.len() == 1
                && list.iter().all(ready)
                && list[0].spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some("korral-node")
                && list[0]
                    .metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("agent-"))
        }
    })
    .await
    .expect("daemonset");
}

#[tokio::test]
async fn simulation_settles_once_converged() {
    let env = sim_env().await;
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("calm", 3, "nginx"))
        .await
        .expect("create");
    let services: Api<Service> = Api::namespaced(env.client(), "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "calm"},
        "spec": {"selector": {"app": "calm"}, "ports": [{"port": 80, "targetPort": 8080}]}
    }))
    .expect("svc");
    services
        .create(&PostParams::default(), &svc)
        .await
        .expect("svc");
    wait_deployment_ready(&env, "calm", 3).await;
    let endpoints: Api<Endpoints> = Api::namespaced(env.client(), "default");
    wait_until(WAIT, "endpoints with three addresses", || {
        let endpoints = endpoints.clone();
        async move {
            endpoints
                .get_opt("calm")
                .await
                .expect("get")
                .is_some_and(|ep| {
                    ep.subsets
                        .unwrap_or_default()
                        .iter()
                        .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
                        .sum::<usize>()
                        == 3
                })
        }
    })
    .await
    .expect("endpoints");
    // Converged: the simulation writes nothing more (no controller keeps rewriting status).
    // Any list answers the store's current revision.
    let revision = || async {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client());
        namespaces
            .list(&ListParams::default().limit(1))
            .await
            .expect("list")
            .metadata
            .resource_version
    };
    let before = revision().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        revision().await,
        before,
        "writes continued after convergence"
    );
}

fn pod_scheduled(pod: &Pod) -> Option<(String, Option<String>)> {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"))
        .map(|c| (c.status.clone(), c.reason.clone()))
}

#[tokio::test]
async fn cordoned_node_leaves_new_pods_pending_until_uncordoned() {
    let env = sim_env().await;
    let nodes: Api<Node> = Api::all(env.client());
    wait_until(WAIT, "the simulated node", || {
        let nodes = nodes.clone();
        async move { nodes.get("korral-node").await.is_ok() }
    })
    .await
    .expect("node");
    let cordon = |on: bool| json!({"spec": {"unschedulable": on}});
    nodes
        .patch(
            "korral-node",
            &PatchParams::default(),
            &Patch::Merge(cordon(true)),
        )
        .await
        .expect("cordon");

    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let waiting: Pod = serde_json::from_value(
        json!({"metadata": {"name": "waiting"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    )
    .expect("pod");
    let tolerant: Pod = serde_json::from_value(json!({"metadata": {"name": "tolerant"}, "spec": {
        "containers": [{"name": "c", "image": "nginx"}],
        "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}}))
    .expect("pod");
    for pod in [&waiting, &tolerant] {
        pods.create(&PostParams::default(), pod)
            .await
            .expect("create");
    }
    // The pod that tolerates the cordon runs; the other waits, as upstream's scheduler leaves it.
    wait_until(WAIT, "tolerant pod ready, the other unschedulable", || {
        let pods = pods.clone();
        async move {
            let tolerant = pods.get("tolerant").await.is_ok_and(|p| ready(&p));
            let waiting = pods.get("waiting").await.ok();
            tolerant
                && waiting.as_ref().is_some_and(|p| {
                    pod_scheduled(p)
                        == Some(("False".to_string(), Some("Unschedulable".to_string())))
                })
        }
    })
    .await
    .expect("scheduling while cordoned");
    let pod = pods.get("waiting").await.expect("get");
    let status = pod.status.clone().unwrap_or_default();
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert!(
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_none(),
        "not bound: {pod:?}"
    );
    let message = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")
        .and_then(|c| c.message)
        .unwrap_or_default();
    assert_eq!(
        message,
        "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are \
         available: 1 Preemption is not helpful for scheduling."
    );

    nodes
        .patch(
            "korral-node",
            &PatchParams::default(),
            &Patch::Merge(cordon(false)),
        )
        .await
        .expect("uncordon");
    wait_until(WAIT, "the waiting pod runs once uncordoned", || {
        let pods = pods.clone();
        async move {
            pods.get("waiting").await.is_ok_and(|p| {
                ready(&p)
                    && p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some("korral-node")
            })
        }
    })
    .await
    .expect("scheduled after uncordon");
}

/// The simulated controllers, scheduler and kubelet write through the write pipeline as
/// upstream's components: admission sees the ReplicaSet controller's identity, a refused
/// create shows as the ReplicaSet's `ReplicaFailure` condition until admission lets it
/// through, and the managed fields name the component (status written through `/status`).
#[tokio::test]
async fn simulated_writes_go_through_admission_as_upstreams_components() {
    let env = sim_env().await;
    let client = env.client();
    let policies = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let bindings = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
    let post = |path: &'static str, body: serde_json::Value| {
        let client = client.clone();
        async move {
            raw(
                &client,
                "POST",
                path,
                Some("application/json"),
                body.to_string().into_bytes(),
            )
            .await
        }
    };
    let (code, body) = post(
        policies,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "no-blocked-pods"},
            "spec": {
                "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]},
                "validations": [{
                    "expression": "!has(object.metadata.labels) || !('blocked' in object.metadata.labels)",
                    "messageExpression": "'blocked pod from ' + request.userInfo.username",
                }],
            },
        }),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = post(
        bindings,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "no-blocked-pods"},
            "spec": {"policyName": "no-blocked-pods", "validationActions": ["Deny"]},
        }),
    )
    .await;
    assert_eq!(code, 201, "{body}");

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let replicasets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let mut blocked = serde_json::to_value(deployment("blocked", 1, "nginx")).expect("json");
    blocked["spec"]["template"]["metadata"]["labels"]["blocked"] = json!("yes");
    let blocked: Deployment = serde_json::from_value(blocked).expect("deployment");
    deployments
        .create(&PostParams::default(), &blocked)
        .await
        .expect("deployment");
    let failure = || {
        let replicasets = replicasets.clone();
        async move {
            let list = replicasets
                .list(&ListParams::default().labels("app=blocked"))
                .await
                .ok()?;
            let rs = list.items.into_iter().next()?;
            rs.status?
                .conditions?
                .into_iter()
                .find(|c| c.type_.as_deref() == Some("ReplicaFailure"))
        }
    };
    wait_until(WAIT, "the ReplicaSet reports its refused create", || {
        let failure = failure();
        async move { failure.await.is_some() }
    })
    .await
    .expect("ReplicaFailure");
    let condition = failure().await.expect("condition");
    assert_eq!(condition.status.as_deref(), Some("True"));
    assert_eq!(condition.reason.as_deref(), Some("FailedCreate"));
    let message = condition.message.unwrap_or_default();
    assert!(
        message.contains(
            "ValidatingAdmissionPolicy 'no-blocked-pods' with binding 'no-blocked-pods' denied request: blocked pod from system:serviceaccount:kube-system:replicaset-controller"
        ),
        "{message}"
    );
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    assert!(pods_with(&pods, "app=blocked").await.is_empty());

    // Admission lets the pods through once the binding is gone: the condition goes.
    let (code, body) = raw(
        &client,
        "DELETE",
        &format!("{bindings}/no-blocked-pods"),
        None,
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    wait_deployment_ready(&env, "blocked", 1).await;
    wait_until(WAIT, "the ReplicaFailure condition is removed", || {
        let failure = failure();
        async move { failure.await.is_none() }
    })
    .await
    .expect("condition removed");

    // Who wrote what: the controller created the pod, the kubelet wrote its status.
    let pod = pods_with(&pods, "app=blocked").await.remove(0);
    let managers: Vec<(String, Option<String>)> = pod
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|m| (m.manager.unwrap_or_default(), m.subresource))
        .collect();
    assert!(
        managers.contains(&("kube-controller-manager".to_string(), None)),
        "{managers:?}"
    );
    assert!(
        managers.contains(&("kubelet".to_string(), Some("status".to_string()))),
        "{managers:?}"
    );
}

/// Every namespace gets the `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap with
/// the server's CA bundle, as kube-controller-manager keeps them: re-created when deleted,
/// restored when changed.
#[tokio::test]
async fn namespaces_get_the_default_service_account_and_root_ca() {
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
    let env = sim_env().await;
    let client = env.client();
    let ca = env.server().ca_pem().expect("TLS server").to_string();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "team"}})).expect("ns"),
        )
        .await
        .expect("namespace");
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "team");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    let root_ca = || {
        let config_maps = config_maps.clone();
        let ca = ca.clone();
        async move {
            config_maps
                .get_opt("kube-root-ca.crt")
                .await
                .ok()
                .flatten()
                .is_some_and(|cm| {
                    cm.data.and_then(|d| d.get("ca.crt").cloned()) == Some(ca)
                        && cm
                            .metadata
                            .annotations
                            .and_then(|a| a.get("kubernetes.io/description").cloned())
                            .is_some_and(|d| d.starts_with("Contains a CA bundle"))
                })
        }
    };
    wait_until(WAIT, "the default service account and the root CA", || {
        let accounts = accounts.clone();
        let root_ca = root_ca();
        async move { accounts.get_opt("default").await.ok().flatten().is_some() && root_ca.await }
    })
    .await
    .expect("namespace kept");
    // The existing namespaces got them too.
    let default_cms: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    wait_until(WAIT, "kube-system has the root CA", || {
        let default_cms = default_cms.clone();
        async move {
            default_cms
                .get_opt("kube-root-ca.crt")
                .await
                .ok()
                .flatten()
                .is_some()
        }
    })
    .await
    .expect("kube-system");

    // Deleted: re-created. Changed: restored.
    accounts
        .delete("default", &DeleteParams::default())
        .await
        .expect("delete account");
    wait_until(WAIT, "the default service account is back", || {
        let accounts = accounts.clone();
        async move { accounts.get_opt("default").await.ok().flatten().is_some() }
    })
    .await
    .expect("account re-created");
    config_maps
        .patch(
            "kube-root-ca.crt",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"ca.crt": "tampered", "extra": "x"}})),
        )
        .await
        .expect("tamper");
    wait_until(WAIT, "the root CA is restored", root_ca)
        .await
        .expect("restored");
    let restored = config_maps.get("kube-root-ca.crt").await.expect("cm");
    assert_eq!(restored.data.map(|d| d.len()), Some(1));
}

/// With the simulation (a cluster's controllers), the ServiceAccount admission plugin runs as
/// on a cluster: a Pod's service account must exist (a ReplicaSet reports the refusal), and its
/// token, CA and namespace are mounted unless automounting is off. Without it (as envtest),
/// nothing is required or mounted.
#[tokio::test]
async fn service_account_admission_runs_with_the_simulation() {
    use k8s_openapi::api::core::v1::ServiceAccount;
    let env = sim_env().await;
    let client = env.client();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = |name: &str, account: Option<&str>| -> Pod {
        let mut spec = json!({"containers": [{"name": "main", "image": "nginx"}], "initContainers": [{"name": "init", "image": "busybox"}]});
        if let Some(account) = account {
            spec["serviceAccountName"] = json!(account);
        }
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("pod")
    };
    // The default account of a namespace is waited for, so a first pod right after start runs.
    let created = pods
        .create(&PostParams::default(), &pod("first", None))
        .await
        .expect("pod as default");
    let spec = serde_json::to_value(created.spec.clone()).expect("spec");
    assert_eq!(spec["serviceAccountName"], "default");
    let volume = spec["volumes"]
        .as_array()
        .and_then(|v| {
            v.iter().find(|v| {
                v["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("kube-api-access-"))
            })
        })
        .cloned()
        .expect("token volume");
    assert_eq!(
        volume["projected"]["sources"],
        json!([
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ])
    );
    assert_eq!(volume["projected"]["defaultMode"], 420);
    let mount = json!([{"name": volume["name"], "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]);
    assert_eq!(spec["containers"][0]["volumeMounts"], mount);
    assert_eq!(spec["initContainers"][0]["volumeMounts"], mount);

    // A missing account is refused with upstream's words.
    let err = pods
        .create(&PostParams::default(), &pod("lost", Some("robot")))
        .await
        .expect_err("missing account");
    let kube::Error::Api(status) = err else {
        panic!("not a Status: {err:?}");
    };
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "pods \"lost\" is forbidden: error looking up service account default/robot: serviceaccount \"robot\" not found"
    );
    // A Deployment running as it waits (FailedCreate) until the account exists.
    let mut robot = serde_json::to_value(deployment("robot", 1, "nginx")).expect("json");
    robot["spec"]["template"]["spec"]["serviceAccountName"] = json!("robot");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(robot).expect("deployment"),
        )
        .await
        .expect("deployment");
    let replicasets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    wait_until(WAIT, "the ReplicaSet reports the missing account", || {
        let replicasets = replicasets.clone();
        async move {
            replicasets
                .list(&ListParams::default().labels("app=robot"))
                .await
                .ok()
                .and_then(|l| l.items.into_iter().next())
                .and_then(|rs| rs.status?.conditions)
                .is_some_and(|c| {
                    c.iter().any(|c| {
                        c.reason.as_deref() == Some("FailedCreate")
                            && c.message
                                .as_deref()
                                .is_some_and(|m| m.contains("serviceaccount \"robot\" not found"))
                    })
                })
        }
    })
    .await
    .expect("FailedCreate");
    // Automounting turned off on the account: no volume.
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "robot"}, "automountServiceAccountToken": false}),
            )
            .expect("sa"),
        )
        .await
        .expect("account");
    wait_deployment_ready(&env, "robot", 1).await;
    let robot_pod = pods_with(&pods, "app=robot").await.remove(0);
    let spec = serde_json::to_value(robot_pod.spec).expect("spec");
    assert!(spec.get("volumes").is_none(), "{spec}");

    // Without the simulation, as envtest: no account needed, nothing mounted.
    let plain = TestEnv::start().await.expect("env");
    let plain_pods: Api<Pod> = Api::namespaced(plain.client(), "default");
    let created = plain_pods
        .create(&PostParams::default(), &pod("free", Some("nobody")))
        .await
        .expect("no ServiceAccount plugin");
    let spec = serde_json::to_value(created.spec).expect("spec");
    assert!(spec.get("volumes").is_none(), "{spec}");
}

/// Claims bind as on a cluster: a default `WaitForFirstConsumer` class provisions a volume once
/// a Pod using the claim is scheduled; a claim without a class binds to the smallest fitting
/// volume; protection finalizers hold a claim while a Pod uses it; a released volume is
/// deleted (`Delete`) or kept `Released` (`Retain`).
#[tokio::test]
async fn claims_bind_provision_and_release_like_a_cluster() {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    use k8s_openapi::api::storage::v1::StorageClass;
    let env = sim_env().await;
    let client = env.client();
    let classes: Api<StorageClass> = Api::all(client.clone());
    let volumes: Api<PersistentVolume> = Api::all(client.clone());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    classes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "standard",
                             "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "rancher.io/local-path",
                "volumeBindingMode": "WaitForFirstConsumer",
                "reclaimPolicy": "Delete"}))
            .expect("class"),
        )
        .await
        .expect("create class");
    let claim = |name: &str, size: &str, class: Option<&str>| -> PersistentVolumeClaim {
        let mut spec =
            json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}});
        if let Some(class) = class {
            spec["storageClassName"] = json!(class);
        }
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("claim")
    };
    let data = claims
        .create(&PostParams::default(), &claim("data", "1Gi", None))
        .await
        .expect("create data");
    assert_eq!(
        data.spec
            .as_ref()
            .and_then(|s| s.storage_class_name.clone())
            .as_deref(),
        Some("standard"),
        "the default class"
    );
    assert_eq!(
        data.metadata.finalizers.clone().unwrap_or_default(),
        vec!["kubernetes.io/pvc-protection".to_string()]
    );
    let phase = |c: &PersistentVolumeClaim| c.status.as_ref().and_then(|s| s.phase.clone());
    assert_eq!(phase(&data).as_deref(), Some("Pending"));

    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "db"}, "spec": {
            "containers": [{"name": "db", "image": "postgres:17"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}}))
        .expect("pod"),
    )
    .await
    .expect("create pod");
    wait_until(WAIT, "the claim is bound to a provisioned volume", || {
        let claims = claims.clone();
        async move {
            claims
                .get("data")
                .await
                .ok()
                .and_then(|c| phase(&c))
                .as_deref()
                == Some("Bound")
        }
    })
    .await
    .expect("bound");
    let data = claims.get("data").await.expect("data");
    let uid = data.metadata.uid.clone().expect("uid");
    let pv_name = format!("pvc-{uid}");
    assert_eq!(
        data.spec.as_ref().and_then(|s| s.volume_name.clone()),
        Some(pv_name.clone())
    );
    let annotations = data.metadata.annotations.clone().unwrap_or_default();
    for (key, value) in [
        ("pv.kubernetes.io/bind-completed", "yes"),
        (
            "volume.kubernetes.io/storage-provisioner",
            "rancher.io/local-path",
        ),
        ("volume.kubernetes.io/selected-node", "korral-node"),
    ] {
        assert_eq!(
            annotations.get(key).map(String::as_str),
            Some(value),
            "{key}"
        );
    }
    let status = data.status.clone().expect("status");
    assert_eq!(
        status
            .capacity
            .and_then(|c| c.get("storage").map(|q| q.0.clone())),
        Some("1Gi".to_string())
    );
    let pv = volumes.get(&pv_name).await.expect("provisioned volume");
    let pv_spec = pv.spec.clone().expect("spec");
    assert_eq!(pv_spec.storage_class_name.as_deref(), Some("standard"));
    assert_eq!(
        pv_spec.persistent_volume_reclaim_policy.as_deref(),
        Some("Delete")
    );
    assert_eq!(pv_spec.claim_ref.and_then(|r| r.uid), Some(uid));
    assert!(pv_spec.host_path.is_some());
    assert_eq!(
        pv.metadata.finalizers.clone().unwrap_or_default(),
        vec!["kubernetes.io/pv-protection".to_string()]
    );
    assert_eq!(pv.status.and_then(|s| s.phase).as_deref(), Some("Bound"));

    // Static binding: the smallest Available volume without a class that fits.
    for (name, size) in [("big", "10Gi"), ("small", "5Gi"), ("tiny", "1Gi")] {
        volumes
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": name}, "spec": {
                    "capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                    "hostPath": {"path": format!("/tmp/{name}")}}}))
                .expect("pv"),
            )
            .await
            .expect("create pv");
    }
    claims
        .create(&PostParams::default(), &claim("static", "2Gi", Some("")))
        .await
        .expect("create static");
    wait_until(WAIT, "the static claim binds to `small`", || {
        let claims = claims.clone();
        async move {
            claims.get("static").await.ok().is_some_and(|c| {
                phase(&c).as_deref() == Some("Bound")
                    && c.spec.and_then(|s| s.volume_name).as_deref() == Some("small")
            })
        }
    })
    .await
    .expect("static bound");

    // Deleting an unused claim releases its Retain volume.
    claims
        .delete("static", &DeleteParams::default())
        .await
        .expect("delete static");
    wait_until(WAIT, "`small` is Released and the claim gone", || {
        let (claims, volumes) = (claims.clone(), volumes.clone());
        async move {
            claims.get_opt("static").await.ok().flatten().is_none()
                && volumes
                    .get("small")
                    .await
                    .ok()
                    .and_then(|v| v.status.and_then(|s| s.phase))
                    .as_deref()
                    == Some("Released")
        }
    })
    .await
    .expect("released");

    // A claim in use stays until its Pod is gone; then its Delete volume goes too.
    claims
        .delete("data", &DeleteParams::default())
        .await
        .expect("delete data");
    let held = claims.get("data").await.expect("still there");
    assert!(held.metadata.deletion_timestamp.is_some());
    pods.delete("db", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete pod");
    wait_until(
        WAIT,
        "the claim and its provisioned volume are gone",
        || {
            let (claims, volumes, pv_name) = (claims.clone(), volumes.clone(), pv_name.clone());
            async move {
                claims.get_opt("data").await.ok().flatten().is_none()
                    && volumes.get_opt(&pv_name).await.ok().flatten().is_none()
            }
        },
    )
    .await
    .expect("reclaimed");
}

/// StatefulSet Pods get the claims of the `volumeClaimTemplates` (`<template>-<set>-<ordinal>`),
/// which bind through the default class and stay when the set scales down.
#[tokio::test]
async fn statefulset_pods_get_their_claims() {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use k8s_openapi::api::storage::v1::StorageClass;
    let env = sim_env().await;
    let client = env.client();
    let classes: Api<StorageClass> = Api::all(client.clone());
    classes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "fast",
                             "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": "example.com/disk"}))
            .expect("class"),
        )
        .await
        .expect("create class");
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    sets.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "db"}, "spec": {
            "replicas": 2, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                         "spec": {"containers": [{"name": "pg", "image": "postgres:17"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}))
        .expect("sts"),
    )
    .await
    .expect("create sts");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    wait_until(WAIT, "both claims bound and both pods ready", || {
        let (claims, pods) = (claims.clone(), pods.clone());
        async move {
            let mut ok = true;
            for i in 0..2 {
                let bound = claims
                    .get(&format!("data-db-{i}"))
                    .await
                    .ok()
                    .and_then(|c| c.status.and_then(|s| s.phase))
                    .as_deref()
                    == Some("Bound");
                let up = pods
                    .get(&format!("db-{i}"))
                    .await
                    .ok()
                    .is_some_and(|p| ready(&p));
                ok &= bound && up;
            }
            ok
        }
    })
    .await
    .expect("claims and pods");
    let pod = pods.get("db-1").await.expect("pod");
    let volume = pod
        .spec
        .and_then(|s| s.volumes)
        .and_then(|v| v.into_iter().find(|v| v.name == "data"))
        .and_then(|v| v.persistent_volume_claim)
        .map(|c| c.claim_name);
    assert_eq!(volume.as_deref(), Some("data-db-1"));
    let claim = claims.get("data-db-0").await.expect("claim");
    assert_eq!(
        claim
            .metadata
            .labels
            .unwrap_or_default()
            .get("app")
            .map(String::as_str),
        Some("db")
    );
    assert!(
        claim
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty(),
        "Retain by default"
    );

    sets.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .expect("scale down");
    wait_until(WAIT, "db-1 is gone", || {
        let pods = pods.clone();
        async move { pods.get_opt("db-1").await.ok().flatten().is_none() }
    })
    .await
    .expect("scaled down");
    assert!(
        claims.get_opt("data-db-1").await.expect("get").is_some(),
        "claims outlive scale-down"
    );
}

/// CronJobs start the Job of their most recent scheduled time (named after its minute, owned
/// by the CronJob, from the job template), list it as active until it completes, then record
/// the success.
#[tokio::test]
async fn cronjobs_start_jobs_on_schedule() {
    use k8s_openapi::api::batch::v1::CronJob;
    let env = sim_env().await;
    let client = env.client();
    let cron_jobs: Api<CronJob> = Api::namespaced(client.clone(), "default");
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let created = cron_jobs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "backup"}, "spec": {
                "schedule": "* * * * *",
                "jobTemplate": {"metadata": {"labels": {"task": "backup"}}, "spec": {"template": {"spec": {
                    "restartPolicy": "OnFailure",
                    "containers": [{"name": "b", "image": "busybox"}]}}}}}}))
            .expect("cronjob"),
        )
        .await
        .expect("create cronjob");
    // The CronJob was "created" ten minutes ago: its most recent missed minute is due now.
    let mut backdated = serde_json::to_value(&created).expect("json");
    let past = jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_mins(10))
        .expect("past");
    backdated["status"] =
        json!({"lastScheduleTime": past.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()});
    cron_jobs
        .replace_status(
            "backup",
            &PostParams::default(),
            &serde_json::from_value::<CronJob>(backdated).expect("cronjob"),
        )
        .await
        .expect("backdate");
    wait_until(WAIT, "the scheduled job completes and is recorded", || {
        let (cron_jobs, jobs) = (cron_jobs.clone(), jobs.clone());
        async move {
            let listed = jobs
                .list(&ListParams::default())
                .await
                .map(|l| l.items)
                .unwrap_or_default();
            let complete = listed
                .iter()
                .any(|j| j.status.as_ref().and_then(|s| s.succeeded) == Some(1));
            let recorded = cron_jobs.get("backup").await.ok().is_some_and(|c| {
                c.status.is_some_and(|s| {
                    s.last_successful_time.is_some() && s.active.unwrap_or_default().is_empty()
                })
            });
            complete && recorded
        }
    })
    .await
    .expect("job ran");
    let listed = jobs.list(&ListParams::default()).await.expect("jobs").items;
    assert_eq!(listed.len(), 1, "only the most recent missed time runs");
    let job = &listed[0];
    let name = job.metadata.name.clone().expect("name");
    let minutes: i64 = name
        .strip_prefix("backup-")
        .and_then(|m| m.parse().ok())
        .expect("backup-<minutes>");
    let now_minutes = jiff::Timestamp::now().as_second() / 60;
    assert!((now_minutes - 1..=now_minutes).contains(&minutes), "{name}");
    assert_eq!(
        job.metadata
            .labels
            .clone()
            .unwrap_or_default()
            .get("task")
            .map(String::as_str),
        Some("backup")
    );
    assert!(
        job.metadata
            .annotations
            .clone()
            .unwrap_or_default()
            .contains_key("batch.kubernetes.io/cronjob-scheduled-timestamp")
    );
    let owner = job.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(owner.first().map(|o| o.kind.as_str()), Some("CronJob"));
}

/// HorizontalPodAutoscalers keep their target within `minReplicas`..`maxReplicas` through its
/// `/scale` subresource and report upstream's conditions; without a metrics API a target
/// inside its bounds gets `ScalingActive=False` (`FailedGetResourceMetric`), and a missing
/// target `AbleToScale=False` (`FailedGetScale`).
#[tokio::test]
async fn autoscalers_keep_targets_within_bounds() {
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    let env = sim_env().await;
    let client = env.client();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 5, "nginx:1.27"))
        .await
        .expect("deployment");
    let hpa = |name: &str, target: &str| -> HorizontalPodAutoscaler {
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "minReplicas": 1, "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]}}))
        .expect("hpa")
    };
    hpas.create(&PostParams::default(), &hpa("web", "web"))
        .await
        .expect("create hpa");
    let reason = |h: &HorizontalPodAutoscaler, kind: &str| -> Option<String> {
        h.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == kind)
            .and_then(|c| c.reason.clone())
    };
    wait_until(WAIT, "the deployment is scaled down to maxReplicas", || {
        let (deployments, hpas) = (deployments.clone(), hpas.clone());
        async move {
            let scaled = deployments
                .get("web")
                .await
                .ok()
                .and_then(|d| serde_json::to_value(d).ok())
                .and_then(|d| {
                    d.pointer("/spec/replicas")
                        .and_then(serde_json::Value::as_i64)
                })
                == Some(3);
            let limited = hpas.get("web").await.ok().is_some_and(|h| {
                reason(&h, "ScalingLimited").as_deref() == Some("TooManyReplicas")
            });
            scaled && limited
        }
    })
    .await
    .expect("scaled to max");
    let status = hpas.get("web").await.expect("hpa").status.expect("status");
    assert_eq!(status.desired_replicas, 3);
    assert!(status.last_scale_time.is_some());
    // Inside the bounds now: no metrics to act on.
    wait_until(WAIT, "the HPA reports the missing metric", || {
        let hpas = hpas.clone();
        async move {
            hpas.get("web").await.ok().is_some_and(|h| {
                reason(&h, "ScalingActive").as_deref() == Some("FailedGetResourceMetric")
                    && h.status.as_ref().and_then(|s| s.current_replicas) == Some(3)
            })
        }
    })
    .await
    .expect("metric missing");

    hpas.create(&PostParams::default(), &hpa("ghost", "nowhere"))
        .await
        .expect("create ghost hpa");
    wait_until(WAIT, "a missing target cannot be scaled", || {
        let hpas = hpas.clone();
        async move {
            hpas.get("ghost")
                .await
                .ok()
                .is_some_and(|h| reason(&h, "AbleToScale").as_deref() == Some("FailedGetScale"))
        }
    })
    .await
    .expect("failed get scale");
}

/// The simulated node is created with TaintNodesByCondition's `not-ready:NoSchedule` taint
/// and, once Ready, loses it as upstream's node lifecycle controller removes it.
#[tokio::test]
async fn the_ready_node_loses_the_not_ready_taint() {
    let env = sim_env().await;
    let nodes: Api<Node> = Api::all(env.client());
    wait_until(
        WAIT,
        "the node is Ready without the not-ready taint",
        || {
            let nodes = nodes.clone();
            async move {
                let Ok(node) = nodes.get("korral-node").await else {
                    return false;
                };
                let ready = node
                    .status
                    .and_then(|s| s.conditions)
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
                let tainted = node
                    .spec
                    .and_then(|s| s.taints)
                    .is_some_and(|t| t.iter().any(|t| t.key == "node.kubernetes.io/not-ready"));
                ready && !tainted
            }
        },
    )
    .await
    .expect("ready and untainted");
}

/// Whether `pod` is controlled by the `kind` named `name` (of `api_version`).
fn controlled_by(pod: &Pod, api_version: &str, kind: &str, name: &str) -> bool {
    pod.metadata.owner_references.as_ref().is_some_and(|refs| {
        refs.iter().any(|r| {
            r.controller == Some(true)
                && r.block_owner_deletion == Some(true)
                && (r.api_version.as_str(), r.kind.as_str(), r.name.as_str())
                    == (api_version, kind, name)
        })
    })
}

/// A ReplicationController gets its Pods from upstream's ReplicaSet controller run on it:
/// named `<rc>-<5 safe characters>`, controlled by the RC, counted in its status; scaling
/// through `/scale` removes Pods, its selector adopts orphans and releases Pods it no longer
/// selects, and deleting the RC collects its Pods.
#[tokio::test]
async fn replication_controller_keeps_its_pods() {
    let env = sim_env().await;
    let rcs: Api<ReplicationController> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");
    let rc: ReplicationController = serde_json::from_value(json!({
        "metadata": {"name": "frontend"},
        "spec": {
            "replicas": 3,
            "selector": {"app": "frontend"},
            "template": {
                "metadata": {"labels": {"app": "frontend", "tier": "web"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]}
            }
        }
    }))
    .expect("rc");
    rcs.create(&PostParams::default(), &rc)
        .await
        .expect("create");

    // Waits until the RC has `n` ready Pods and reports them for its current generation.
    let settled = |n: usize| {
        let (rcs, pods) = (rcs.clone(), pods.clone());
        async move {
            wait_until(
                WAIT,
                format!("replication controller with {n} pods"),
                || {
                    let (rcs, pods) = (rcs.clone(), pods.clone());
                    async move {
                        let Ok(rc) = rcs.get("frontend").await else {
                            return false;
                        };
                        let s = rc.status.clone().unwrap_or_default();
                        let n = n as i32;
                        let pods = pods_with(&pods, "app=frontend").await;
                        pods.len() == n as usize
                            && pods.iter().all(ready)
                            && s.observed_generation == rc.metadata.generation
                            && s.replicas == n
                            && s.fully_labeled_replicas.unwrap_or(0) == n
                            && s.ready_replicas.unwrap_or(0) == n
                            && s.available_replicas.unwrap_or(0) == n
                    }
                },
            )
            .await
            .expect("replication controller settled");
        }
    };
    settled(3).await;
    let three = pods_with(&pods, "app=frontend").await;
    for pod in &three {
        let name = pod.metadata.name.clone().expect("name");
        let suffix = name.strip_prefix("frontend-").expect("named after the rc");
        assert!(suffix.len() == 5 && is_safe(suffix), "pod name {name}");
        assert_eq!(
            pod.metadata.generate_name.as_deref(),
            Some("frontend-"),
            "{name}"
        );
        assert!(
            controlled_by(pod, "v1", "ReplicationController", "frontend"),
            "{name}: {:?}",
            pod.metadata.owner_references
        );
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get("tier").map(String::as_str), Some("web"));
    }

    rcs.patch_scale(
        "frontend",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .expect("scale down");
    settled(1).await;
    let scale = rcs.get_scale("frontend").await.expect("scale");
    assert_eq!(scale.status.expect("scale status").replicas, 1);

    // As upstream's ClaimPods: an orphan the selector matches is adopted (one Pod too many,
    // so one goes), a Pod relabelled out of the selector is released (and replaced).
    let stray: Pod = serde_json::from_value(json!({
        "metadata": {"name": "stray", "labels": {"app": "frontend", "tier": "web"}},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]}
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &stray)
        .await
        .expect("create stray");
    wait_until(WAIT, "the orphan adopted and the surplus deleted", || {
        let pods = pods.clone();
        async move {
            let now = pods_with(&pods, "app=frontend").await;
            let stray = pods.get_opt("stray").await.expect("get stray");
            now.len() == 1
                && now
                    .iter()
                    .all(|p| controlled_by(p, "v1", "ReplicationController", "frontend"))
                && stray
                    .is_none_or(|p| controlled_by(&p, "v1", "ReplicationController", "frontend"))
        }
    })
    .await
    .expect("adoption");
    settled(1).await;
    let kept = pods_with(&pods, "app=frontend").await[0]
        .metadata
        .name
        .clone()
        .expect("name");
    pods.patch(
        &kept,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "moved"}}})),
    )
    .await
    .expect("relabel");
    wait_until(WAIT, "the relabelled pod released", || {
        let (pods, kept) = (pods.clone(), kept.clone());
        async move {
            pods.get(&kept).await.is_ok_and(|p| {
                p.metadata
                    .owner_references
                    .as_ref()
                    .is_none_or(|refs| refs.iter().all(|r| r.controller != Some(true)))
            })
        }
    })
    .await
    .expect("release");
    settled(1).await;
    assert!(
        pods_with(&pods, "app=frontend")
            .await
            .iter()
            .all(|p| p.metadata.name.as_deref() != Some(kept.as_str())),
        "the released pod was replaced"
    );

    rcs.delete("frontend", &DeleteParams::default())
        .await
        .expect("delete rc");
    wait_until(WAIT, "the rc's pods collected", || {
        let pods = pods.clone();
        async move { pods_with(&pods, "app=frontend").await.is_empty() }
    })
    .await
    .expect("garbage collection");
    // The released Pod is nobody's: it stays.
    assert_eq!(pods_with(&pods, "app=moved").await.len(), 1);
}

/// The sizes of a Deployment's ReplicaSets with their `desired-replicas` and `max-replicas`
/// annotations, by ReplicaSet name.
async fn replica_set_sizes(
    rss: &Api<ReplicaSet>,
) -> std::collections::BTreeMap<String, (i32, String, String)> {
    let annotation = |rs: &ReplicaSet, key: &str| {
        rs.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .cloned()
            .unwrap_or_default()
    };
    rss.list(&ListParams::default())
        .await
        .expect("rs")
        .items
        .iter()
        .map(|rs| {
            (
                rs.metadata.name.clone().unwrap_or_default(),
                (
                    rs.spec.replicas.unwrap_or(1),
                    annotation(rs, "deployment.kubernetes.io/desired-replicas"),
                    annotation(rs, "deployment.kubernetes.io/max-replicas"),
                ),
            )
        })
        .collect()
}

/// A Deployment scaled during a rollout spreads the change over its old and new ReplicaSets in
/// proportion to their sizes, as upstream's `scale` (sync.go, `GetProportion`): while
/// rolling, and while paused.
///
/// The rollout is held deterministically by cordoning the node before the template changes:
/// the new ReplicaSet's Pods stay Pending, so none of them becomes available.
#[tokio::test]
async fn scaling_during_a_rollout_is_proportional() {
    let env = sim_env().await;
    let nodes: Api<Node> = Api::all(env.client());
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let rss: Api<ReplicaSet> = Api::namespaced(env.client(), "default");
    let mut d = deployment("prop", 10, "nginx:1");
    d.spec.strategy = Some(
        serde_json::from_value(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}),
        )
        .expect("strategy"),
    );
    deployments
        .create(&PostParams::default(), &d)
        .await
        .expect("create");
    wait_deployment_ready(&env, "prop", 10).await;
    let old = rss.list(&ListParams::default()).await.expect("rs").items[0]
        .metadata
        .name
        .clone()
        .expect("name");
    nodes
        .patch(
            "korral-node",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon");
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}}}});
    deployments
        .patch("prop", &PatchParams::default(), &Patch::Strategic(image))
        .await
        .expect("patch image");

    // Waits until the old ReplicaSet has `old_size` and the new one `new_size` replicas, both
    // annotated for `desired` replicas of at most `max`.
    let sizes = |old_size: i32, new_size: i32, desired: i32, max: i32| {
        let (rss, old) = (rss.clone(), old.clone());
        async move {
            let want = (desired.to_string(), max.to_string());
            let reached = wait_until(WAIT, format!("old {old_size}, new {new_size}"), || {
                let (rss, old, want) = (rss.clone(), old.clone(), want.clone());
                async move {
                    let now = replica_set_sizes(&rss).await;
                    now.len() == 2
                        && now.iter().all(|(name, (size, d, m))| {
                            let expected = if *name == old { old_size } else { new_size };
                            *size == expected && (d, m) == (&want.0, &want.1)
                        })
                }
            })
            .await;
            if let Err(e) = reached {
                panic!("{e}: {:?}", replica_set_sizes(&rss).await);
            }
        }
    };
    // The rollout (10 replicas, maxSurge 3, maxUnavailable 2) creates the new ReplicaSet with
    // 3 (10 + 3 - 10), shrinks the old one by 2 to 8 (10 - 2 available), grows the new one to
    // 5 (13 in all) and stops there: none of the new Pods becomes available.
    sizes(8, 5, 10, 13).await;

    // Scaled to 15 while rolling: 15 + 3 - 13 = 5 replicas to add, largest ReplicaSet first,
    // each scaled from its max-replicas 13 to 18:
    //   old: round(8 * 18 / 13) = round(11.08) = 11, +3;
    //   new: round(5 * 18 / 13) = round(6.92) = 7, +2 (all that is left).
    // The rollout then stays (18 = 15 + maxSurge asked for, 8 available < 15 - 2).
    deployments
        .patch(
            "prop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 15}})),
        )
        .await
        .expect("scale up");
    sizes(11, 7, 15, 18).await;

    // Paused, then scaled to 5 through /scale: 5 + 3 - 18 = -10, largest first, each scaled
    // from 18 to 8:
    //   old: round(11 * 8 / 18) = round(4.89) = 5, -6;
    //   new: round(7 * 8 / 18) = round(3.11) = 3, -4.
    deployments
        .patch(
            "prop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": true}})),
        )
        .await
        .expect("pause");
    deployments
        .patch_scale(
            "prop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("scale down");
    sizes(5, 3, 5, 8).await;
}
