//! End-to-end durability of `korral apiserver --data-dir`: graceful restarts keep every object,
//! the kubeconfig stays valid, resourceVersions keep growing, watches resume across the restart,
//! the data directory is locked against a second server, and a SIGKILL loses no acknowledged
//! write.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Resource};
use serde_json::json;

use support::{Failures, KORRAL, Options, Server, Storage, run_with_timeout};

const STOP_TIMEOUT: Duration = Duration::from_secs(15);

fn configmap(name: &str, data: serde_json::Value) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": data,
    }))?)
}

/// The resourceVersion of an object as a number (korral's are decimal revisions).
fn rv<K: Resource>(obj: &K) -> anyhow::Result<u64> {
    let text = obj
        .meta()
        .resource_version
        .as_deref()
        .context("object without resourceVersion")?;
    text.parse()
        .with_context(|| format!("resourceVersion {text:?} is not a decimal revision"))
}

fn widget_crd() -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ref.example.org"},
        "spec": {
            "group": "ref.example.org",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "required": ["replicas"], "properties": {
                            "color": {"type": "string", "default": "red", "enum": ["red", "blue"]},
                            "replicas": {"type": "integer", "minimum": 1}
                        }},
                        "status": {"type": "object", "properties": {"ready": {"type": "integer"}}}
                    }
                }},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]
            }]
        }
    }))?)
}

fn widgets(client: &Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("ref.example.org", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    Api::namespaced_with(client.clone(), ns, &ar)
}

async fn wait_established(client: &Client, name: &str) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let crd = crds.get(name).await?;
        let established = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("CRD {name} not Established after 10 s: {:?}", crd.status);
        }
        tokio::time::sleep(support::STEP).await;
    }
}

/// The value of the first `key:` line of a kubeconfig (e.g. the CA data or the token).
fn kubeconfig_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        line.trim()
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(|v| v.trim().trim_matches('"').to_string())
    })
}

fn start_durable(data: &Path, port: u16, kubeconfig: &Path) -> anyhow::Result<Server> {
    Server::start(Options {
        storage: Storage::Durable(data.to_path_buf()),
        port,
        kubeconfig: kubeconfig.to_path_buf(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_restart_keeps_objects_and_resumes_watch() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let kubeconfig1 = dir.path().join("kubeconfig-1");
    let kubeconfig2 = dir.path().join("kubeconfig-2");
    let mut failures = Failures::default();

    let server = start_durable(&data, 0, &kubeconfig1)?;
    let client = server.client().await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();

    // Objects of several kinds: a namespace with a ConfigMap, a CRD with a custom resource.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "keep"}}))?,
        )
        .await
        .context("creating namespace keep")?;
    let kept = Api::<ConfigMap>::namespaced(client.clone(), "keep")
        .create(&pp, &configmap("kept", json!({"k": "v"}))?)
        .await
        .context("creating keep/kept")?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&pp, &widget_crd()?)
        .await
        .context("creating the Widget CRD")?;
    wait_established(&client, "widgets.ref.example.org").await?;
    let w1: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "ref.example.org/v1", "kind": "Widget",
        "metadata": {"name": "w1"}, "spec": {"replicas": 2}
    }))?;
    let w1 = widgets(&client, "default")
        .create(&pp, &w1)
        .await
        .context("creating widget w1")?;

    let a = cms.create(&pp, &configmap("a", json!({"v": "1"}))?).await?;
    let b = cms.create(&pp, &configmap("b", json!({"v": "1"}))?).await?;
    let rv_a1 = rv(&a)?;
    let rv0 = rv(&b)?;
    ensure!(
        rv0 > rv_a1,
        "resourceVersions must grow: a={rv_a1}, then b={rv0}"
    );

    // Changes after rv0, which a watch from rv0 must replay after the restart.
    let mut a2 = a.clone();
    a2.data = Some([("v".to_string(), "2".to_string())].into());
    let a2 = cms.replace("a", &pp, &a2).await.context("updating a")?;
    let rv_a2 = rv(&a2)?;
    cms.delete("b", &DeleteParams::default())
        .await
        .context("deleting b")?;
    let c = cms.create(&pp, &configmap("c", json!({"v": "1"}))?).await?;
    let rv_c = rv(&c)?;
    let before = cms.list(&ListParams::default()).await?;
    let list_rv_before: u64 = before
        .metadata
        .resource_version
        .as_deref()
        .unwrap_or_default()
        .parse()
        .context("list resourceVersion")?;
    let max_rv_before = list_rv_before.max(rv_c);

    // A second server on the same data directory must refuse to start.
    let second_kubeconfig = dir.path().join("kubeconfig-second");
    let args: Vec<String> = [
        "apiserver",
        "--data-dir",
        &data.display().to_string(),
        "--port",
        "0",
        "--kubeconfig",
        &second_kubeconfig.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let second = run_with_timeout(Path::new(KORRAL), &args, &[], Duration::from_secs(15))?;
    let said = format!("{}\n{}", second.stdout, second.stderr).to_lowercase();
    failures.check(
        !second.success()
            && !second.timed_out()
            && said.contains("data director")
            && said.contains("in use"),
        || {
            format!(
                "expected a second server on the same --data-dir to exit non-zero at once with an error \
                 saying the data directory is in use\nactual: {}",
                second.describe()
            )
        },
    );
    // The first server is unaffected.
    let still = cms.get("a").await;
    failures.check(
        still.as_ref().is_ok_and(|o| rv(o).ok() == Some(rv_a2)),
        || format!("expected the first server to still serve a (rv {rv_a2}) after the refused second start: {still:?}"),
    );

    // Graceful stop.
    let port = server.port()?;
    let old_kubeconfig_text = std::fs::read_to_string(&kubeconfig1)?;
    let stderr_before = server.stderr();
    let status = server.stop(STOP_TIMEOUT)?;
    failures.check(status.success(), || {
        format!(
            "expected exit status 0 after SIGTERM, got {status}\n--- stderr ---\n{stderr_before}"
        )
    });
    drop(client);

    // Restart on the same directory and port, writing the kubeconfig elsewhere.
    let server = start_durable(&data, port, &kubeconfig2)?;
    let new_kubeconfig_text = std::fs::read_to_string(&kubeconfig2)?;
    for key in ["certificate-authority-data", "token", "server"] {
        let old = kubeconfig_field(&old_kubeconfig_text, key);
        let new = kubeconfig_field(&new_kubeconfig_text, key);
        failures.check(old.is_some() && old == new, || {
            format!(
                "expected the restarted server's kubeconfig to keep `{key}` (CA and token persist in the data dir)\n\
                 old: {old:?}\nnew: {new:?}"
            )
        });
    }
    // The kubeconfig written before the restart still works.
    let client = support::client_from_kubeconfig(&kubeconfig1).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    // Every object is back, unchanged.
    let after = cms
        .list(&ListParams::default())
        .await
        .context("listing configmaps with the old kubeconfig after the restart")?;
    let by_name: BTreeMap<String, &ConfigMap> = after
        .items
        .iter()
        .map(|o| (o.metadata.name.clone().unwrap_or_default(), o))
        .collect();
    let a_after = by_name.get("a");
    failures.check(
        a_after.is_some_and(|o| {
            rv(*o).ok() == Some(rv_a2)
                && o.data.as_ref().and_then(|d| d.get("v")).map(String::as_str) == Some("2")
        }),
        || format!("expected ConfigMap a with data v=2 and resourceVersion {rv_a2} after the restart, got {a_after:?}"),
    );
    let c_after = by_name.get("c");
    failures.check(c_after.is_some_and(|o| rv(*o).ok() == Some(rv_c)), || {
        format!(
            "expected ConfigMap c with resourceVersion {rv_c} after the restart, got {c_after:?}"
        )
    });
    failures.check(!by_name.contains_key("b"), || {
        "expected the deleted ConfigMap b to stay deleted after the restart".to_string()
    });
    let kept_after = Api::<ConfigMap>::namespaced(client.clone(), "keep")
        .get("kept")
        .await;
    failures.check(
        kept_after
            .as_ref()
            .is_ok_and(|o| rv(o).ok() == rv(&kept).ok() && o.metadata.uid == kept.metadata.uid),
        || format!("expected keep/kept with the same uid and resourceVersion after the restart, got {kept_after:?}"),
    );
    let w1_after = widgets(&client, "default").get("w1").await;
    failures.check(
        w1_after.as_ref().is_ok_and(|o| {
            o.metadata.uid == w1.metadata.uid
                && o.data["spec"] == json!({"replicas": 2, "color": "red"})
        }),
        || format!("expected the CRD to be served again and widget w1 (spec replicas 2, color red) to be back, got {w1_after:?}"),
    );

    // resourceVersions continue above the old ones.
    let list_rv_after: u64 = after
        .metadata
        .resource_version
        .as_deref()
        .unwrap_or_default()
        .parse()
        .unwrap_or_default();
    failures.check(list_rv_after >= max_rv_before, || {
        format!("expected the list resourceVersion after the restart ({list_rv_after}) >= the last one before ({max_rv_before})")
    });
    let d = cms
        .create(&pp, &configmap("d", json!({"v": "1"}))?)
        .await
        .context("creating d after the restart")?;
    let rv_d = rv(&d)?;
    failures.check(rv_d > max_rv_before, || {
        format!("expected a create after the restart to get a resourceVersion above {max_rv_before}, got {rv_d}")
    });

    // A watch from rv0 (taken before the restart) replays what happened after it.
    let expected: Vec<(&str, &str, u64)> = vec![
        ("MODIFIED", "a", rv_a2),
        ("DELETED", "b", 0),
        ("ADDED", "c", rv_c),
        ("ADDED", "d", rv_d),
    ];
    let mut seen: Vec<(String, String, u64)> = Vec::new();
    let mut watch_error = None;
    let wp = WatchParams::default().timeout(10);
    match cms.watch(&wp, &rv0.to_string()).await {
        Ok(stream) => {
            let mut stream = stream.boxed();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            loop {
                let next = tokio::time::timeout_at(deadline, stream.next()).await;
                let event = match next {
                    Err(_) | Ok(None) => break,
                    Ok(Some(Err(e))) => {
                        watch_error = Some(format!("stream error: {e}"));
                        break;
                    }
                    Ok(Some(Ok(e))) => e,
                };
                let (kind, obj) = match event {
                    WatchEvent::Added(o) => ("ADDED", o),
                    WatchEvent::Modified(o) => ("MODIFIED", o),
                    WatchEvent::Deleted(o) => ("DELETED", o),
                    WatchEvent::Bookmark(_) => continue,
                    WatchEvent::Error(e) => {
                        watch_error = Some(format!("ERROR event: {e:?}"));
                        break;
                    }
                };
                let name = obj.metadata.name.clone().unwrap_or_default();
                if !["a", "b", "c", "d"].contains(&name.as_str()) {
                    continue;
                }
                let done = kind == "ADDED" && name == "d";
                seen.push((kind.to_string(), name, rv(&obj).unwrap_or_default()));
                if done {
                    break;
                }
            }
        }
        Err(e) => watch_error = Some(format!("watch request failed: {e}")),
    }
    let matches = seen.len() == expected.len()
        && seen
            .iter()
            .zip(&expected)
            .all(|((k, n, r), (ek, en, er))| k == ek && n == en && (*er == 0 || r == er));
    let increasing = seen.windows(2).all(|w| w[0].2 < w[1].2);
    failures.check(watch_error.is_none() && matches && increasing, || {
        format!(
            "expected `GET /api/v1/namespaces/default/configmaps?watch=1&resourceVersion={rv0}` after the restart \
             to replay, in order with increasing resourceVersions, {expected:?} (0 = any)\nactual events: {seen:?}\nerror: {watch_error:?}"
        )
    });

    let stderr_before = server.stderr();
    let status = server.stop(STOP_TIMEOUT)?;
    failures.check(status.success(), || {
        format!("expected exit status 0 after SIGTERM (second run), got {status}\n--- stderr ---\n{stderr_before}")
    });
    failures.finish("durable_restart_keeps_objects_and_resumes_watch");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_loses_no_acknowledged_write() -> anyhow::Result<()> {
    const WRITERS: usize = 8;
    const MIN_ACKS: usize = 300;
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let mut failures = Failures::default();

    let server = start_durable(&data, 0, &dir.path().join("kubeconfig-1"))?;
    let client = server.client().await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let acked: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
    let unexpected: Arc<Mutex<Vec<String>>> = Arc::default();
    let killing = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let cms = cms.clone();
        let acked = acked.clone();
        let unexpected = unexpected.clone();
        let killing = killing.clone();
        writers.push(tokio::spawn(async move {
            let payload = "x".repeat(256);
            for i in 0u64.. {
                let name = format!("load-{w}-{i}");
                let Ok(cm) = configmap(
                    &name,
                    json!({"writer": w.to_string(), "i": i.to_string(), "payload": payload}),
                ) else {
                    break;
                };
                match cms.create(&PostParams::default(), &cm).await {
                    Ok(created) => {
                        let revision = rv(&created).unwrap_or_default();
                        acked.lock().expect("lock").push((name, revision));
                    }
                    Err(e) => {
                        if killing.load(Ordering::SeqCst) {
                            break;
                        }
                        let count = {
                            let mut errors = unexpected.lock().expect("lock");
                            errors.push(format!("create {name}: {e}"));
                            errors.len()
                        };
                        if count > 50 {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
        }));
    }

    // Let the load run for at least a second and a few hundred acknowledgements.
    let started = Instant::now();
    loop {
        let n = acked.lock().expect("lock").len();
        let elapsed = started.elapsed();
        if (n >= MIN_ACKS && elapsed >= Duration::from_secs(1))
            || elapsed >= Duration::from_secs(20)
        {
            break;
        }
        if writers.iter().all(|w| w.is_finished()) {
            break;
        }
        tokio::time::sleep(support::STEP).await;
    }
    killing.store(true, Ordering::SeqCst);
    let pid = server.pid();
    let status = server.kill()?;
    eprintln!("SIGKILLed korral apiserver (pid {pid}): {status}");
    for writer in writers {
        match tokio::time::timeout(Duration::from_secs(30), writer).await {
            Ok(joined) => joined?,
            Err(_) => bail!("a writer did not stop within 30 s of the kill"),
        }
    }
    drop(cms);
    drop(client);
    let acked = std::mem::take(&mut *acked.lock().expect("lock"));
    let unexpected = std::mem::take(&mut *unexpected.lock().expect("lock"));
    eprintln!(
        "{} creates acknowledged with 201 before the SIGKILL (after {:?})",
        acked.len(),
        started.elapsed()
    );
    failures.check(unexpected.is_empty(), || {
        format!(
            "expected no failed creates before the kill, got {}: {:?}",
            unexpected.len(),
            unexpected.iter().take(5).collect::<Vec<_>>()
        )
    });
    ensure!(
        !acked.is_empty(),
        "no create was acknowledged before the kill: {unexpected:?}"
    );
    failures.check(acked.len() >= MIN_ACKS, || {
        format!(
            "expected at least {MIN_ACKS} acknowledged creates within 20 s from {WRITERS} writers, got {}",
            acked.len()
        )
    });

    // Restart on the same directory: every acknowledged write is there.
    let server = start_durable(&data, 0, &dir.path().join("kubeconfig-2"))
        .context("restarting on the data directory of the killed server")?;
    let client = server.client().await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let list = cms
        .list(&ListParams::default())
        .await
        .context("listing after recovery")?;
    let mut recovered: BTreeMap<String, u64> = BTreeMap::new();
    let mut max_recovered = 0;
    for item in &list.items {
        let revision = rv(item)?;
        max_recovered = max_recovered.max(revision);
        recovered.insert(item.metadata.name.clone().unwrap_or_default(), revision);
    }
    let acked_names: BTreeSet<&str> = acked.iter().map(|(n, _)| n.as_str()).collect();
    let lost: Vec<&str> = acked
        .iter()
        .filter(|(n, _)| !recovered.contains_key(n))
        .map(|(n, _)| n.as_str())
        .collect();
    let changed: Vec<String> = acked
        .iter()
        .filter_map(|(n, r)| {
            let got = recovered.get(n)?;
            (got != r).then(|| format!("{n}: acked rv {r}, recovered rv {got}"))
        })
        .collect();
    eprintln!(
        "recovered {} load objects ({} acknowledged, {} lost, {} in flight at the kill and kept)",
        recovered.keys().filter(|n| n.starts_with("load-")).count(),
        acked_names.len(),
        lost.len(),
        recovered
            .keys()
            .filter(|n| n.starts_with("load-") && !acked_names.contains(n.as_str()))
            .count()
    );
    failures.check(lost.is_empty(), || {
        format!(
            "expected every acknowledged create to survive the SIGKILL: lost {} of {}: {:?}",
            lost.len(),
            acked.len(),
            lost.iter().take(20).collect::<Vec<_>>()
        )
    });
    failures.check(changed.is_empty(), || {
        format!(
            "expected recovered objects to keep the resourceVersion their create answered: {:?}",
            changed.iter().take(20).collect::<Vec<_>>()
        )
    });

    // Fully functional: a new create, above every recovered revision; get, update, delete.
    let fresh = cms
        .create(
            &PostParams::default(),
            &configmap("after-crash", json!({"ok": "yes"}))?,
        )
        .await
        .context("creating after recovery")?;
    let rv_fresh = rv(&fresh)?;
    failures.check(rv_fresh > max_recovered, || {
        format!("expected the first create after recovery to get a resourceVersion above {max_recovered}, got {rv_fresh}")
    });
    if let Some((name, _)) = acked.first() {
        let result = async {
            let mut obj = cms.get(name).await?;
            obj.data
                .get_or_insert_with(Default::default)
                .insert("updated".into(), "yes".into());
            let updated = cms.replace(name, &PostParams::default(), &obj).await?;
            cms.delete(name, &DeleteParams::default()).await?;
            anyhow::Ok(rv(&updated)?)
        }
        .await;
        failures.check(
            result.as_ref().is_ok_and(|r| *r > rv_fresh),
            || format!("expected get/replace/delete of recovered {name} to work with a growing resourceVersion: {result:?}"),
        );
    }

    let stderr_before = server.stderr();
    let status = server.stop(STOP_TIMEOUT)?;
    failures.check(status.success(), || {
        format!(
            "expected exit status 0 after SIGTERM, got {status}\n--- stderr ---\n{stderr_before}"
        )
    });
    failures.finish("crash_loses_no_acknowledged_write");
    Ok(())
}
