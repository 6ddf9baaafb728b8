//! HelloApp conversion through korral-testenv, as envtest runs a Go operator's conversion
//! webhook: the merged two-version CRD the operator declares (what `korral generate` writes:
//! v1 and v2 served, v2 the hub and storage version, conversion by webhook) is installed with
//! its conversion pointed at a local port, the real `WebhookServer` serves the HelloApp
//! conversion there with the certificate testenv generated, and kube-rs' typed clients of
//! both versions read and write through it: created in one version, read in the other with
//! the converted fields (`size` ↔ `replicas`, `image` ↔ `repository` + `tag`), lists and
//! watches converted, updates through v1 seen in v2, `status.storedVersions` following the
//! storage version, upstream's error once the webhook is gone. The HelloApp controller (which
//! works on v1) reconciles a HelloApp written in v2, through the conversion, with the webhook
//! served by the manager as the sample's `main` wires it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use futures::{StreamExt, TryStreamExt};
use helloapp_operator::{HelloApp, HelloAppSpec, HelloAppStatus, v2};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use korral::prelude::*;
use korral::webhook::{CONVERT_PATH, WebhookServer};
use korral_testenv::{TestEnv, WebhookInstall, WebhookServing, wait_until};
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use tokio::sync::watch;

/// The merged CRD.
const CRD: &str = "helloapps.apps.example.com";
/// How long anything may take.
const WAIT: Duration = Duration::from_secs(15);

/// Writes the HelloApp CRD the operator declares with its conversion webhook (the CRD
/// `korral generate` writes to `config/crd/bases/`) into `dir`; returns the file.
fn generated_crd(dir: &Path) -> Result<PathBuf> {
    let info = korral::manifests::OperatorInfo::new("helloapp-operator", "example.com");
    let set = korral::manifests::collect(|manager| {
        helloapp_operator::add_to_manager(manager, Scope::All);
        helloapp_operator::add_webhooks(manager, WebhookServer::new())?;
        Ok(())
    })?
    .render(&info)?;
    let crd = set
        .files
        .iter()
        .flat_map(|f| &f.objects)
        .find(|o| o["kind"] == "CustomResourceDefinition" && o["metadata"]["name"] == CRD)
        .context("the HelloApp CRD in the operator's manifests")?;
    let path = dir.join("apps.example.com_helloapps.yaml");
    std::fs::write(&path, serde_yaml_ng::to_string(crd)?)?;
    Ok(path)
}

/// testenv with the merged HelloApp CRD converting through the local serving port.
async fn start(dir: &Path) -> Result<TestEnv> {
    Ok(TestEnv::builder()
        .crd_file(generated_crd(dir)?)
        .webhooks(WebhookInstall::new().conversion_crd(CRD))
        .start()
        .await?)
}

/// A webhook server listening where testenv's configurations point.
fn server_for(serving: &WebhookServing) -> WebhookServer {
    WebhookServer::new()
        .host(serving.local_serving_host())
        .port(serving.local_serving_port())
        .cert_dir(serving.local_serving_cert_dir())
        .metrics_registry(korral::metrics::Registry::new())
}

fn v1_app(name: &str, image: &str, size: i32) -> HelloApp {
    HelloApp::new(
        name,
        HelloAppSpec {
            image: image.to_owned(),
            size,
        },
    )
}

fn v2_app(name: &str, repository: &str, tag: &str, replicas: i32) -> v2::HelloApp {
    v2::HelloApp::new(
        name,
        v2::HelloAppSpec {
            replicas,
            repository: repository.to_owned(),
            tag: tag.to_owned(),
        },
    )
}

fn v2_spec(repository: &str, tag: &str, replicas: i32) -> v2::HelloAppSpec {
    v2::HelloAppSpec {
        replicas,
        repository: repository.to_owned(),
        tag: tag.to_owned(),
    }
}

fn v1_spec(image: &str, size: i32) -> HelloAppSpec {
    HelloAppSpec {
        image: image.to_owned(),
        size,
    }
}

/// The CRD as JSON.
async fn crd(env: &TestEnv) -> Result<Value> {
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    Ok(serde_json::to_value(crds.get(CRD).await?)?)
}

/// `(name, served, storage)` of every version of the CRD.
fn versions(crd: &Value) -> Vec<(String, bool, bool)> {
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| {
            (
                v["name"].as_str().unwrap_or_default().to_owned(),
                v["served"] == true,
                v["storage"] == true,
            )
        })
        .collect()
}

/// The Status of a failed request.
fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> Result<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => Ok(*status),
        other => bail!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn typed_clients_of_both_versions_convert_through_the_helloapp_webhook() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let env = start(dir.path()).await?;
    let serving = env.webhook_serving().context("webhook serving")?;

    // The CRD as generated: both versions served, v2 (the hub) stored, converting through
    // the local server's /convert.
    let installed = crd(&env).await?;
    ensure!(
        versions(&installed)
            == [
                ("v1".to_owned(), true, false),
                ("v2".to_owned(), true, true)
            ],
        "{installed}"
    );
    ensure!(
        installed["spec"]["conversion"]["strategy"] == "Webhook"
            && installed["spec"]["conversion"]["webhook"]["clientConfig"]["url"]
                == serving.url(CONVERT_PATH),
        "{}",
        installed["spec"]["conversion"]
    );

    let mut server = server_for(serving);
    server.conversion(helloapp_operator::conversion::webhook()?)?;
    let running = server.serve().await?;
    serving.wait_serving(WAIT).await?;

    let v1: Api<HelloApp> = Api::namespaced(env.client(), "default");
    let v2: Api<v2::HelloApp> = Api::namespaced(env.client(), "default");

    // Created in v1, read as v2: size becomes replicas, the image splits at its tag.
    let created = v1
        .create(
            &PostParams::default(),
            &v1_app("from-v1", "nginxdemos/hello:plain-text", 2),
        )
        .await?;
    ensure!(
        created.spec == v1_spec("nginxdemos/hello:plain-text", 2),
        "{created:?}"
    );
    let as_v2 = v2.get("from-v1").await?;
    ensure!(
        as_v2.spec == v2_spec("nginxdemos/hello", "plain-text", 2),
        "{as_v2:?}"
    );
    ensure!(
        as_v2.metadata.uid == created.metadata.uid
            && as_v2.metadata.resource_version == created.metadata.resource_version
            && as_v2.metadata.namespace.as_deref() == Some("default"),
        "{as_v2:?} vs {created:?}"
    );

    // Created in v2, read as v1: replicas become size, repository and tag join.
    let created = v2
        .create(
            &PostParams::default(),
            &v2_app("from-v2", "localhost:5000/acme/hello", "2.0", 3),
        )
        .await?;
    ensure!(
        created.spec == v2_spec("localhost:5000/acme/hello", "2.0", 3),
        "{created:?}"
    );
    let as_v1 = v1.get("from-v2").await?;
    ensure!(
        as_v1.spec == v1_spec("localhost:5000/acme/hello:2.0", 3),
        "{as_v1:?}"
    );
    ensure!(as_v1.metadata.uid == created.metadata.uid, "{as_v1:?}");

    // Lists of both versions hold both objects, each converted.
    let listed = v1.list(&ListParams::default()).await?;
    let specs: Vec<_> = listed
        .items
        .iter()
        .map(|a| (a.metadata.name.clone().unwrap_or_default(), a.spec.clone()))
        .collect();
    ensure!(
        specs
            == [
                (
                    "from-v1".to_owned(),
                    v1_spec("nginxdemos/hello:plain-text", 2)
                ),
                (
                    "from-v2".to_owned(),
                    v1_spec("localhost:5000/acme/hello:2.0", 3)
                ),
            ],
        "{specs:?}"
    );
    let v2_specs: Vec<_> = v2
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|a| (a.metadata.name.unwrap_or_default(), a.spec))
        .collect();
    ensure!(
        v2_specs
            == [
                (
                    "from-v1".to_owned(),
                    v2_spec("nginxdemos/hello", "plain-text", 2)
                ),
                (
                    "from-v2".to_owned(),
                    v2_spec("localhost:5000/acme/hello", "2.0", 3)
                ),
            ],
        "{v2_specs:?}"
    );

    // A watch of v1 sees an object created in v2 as v1.
    let list_version = listed.metadata.resource_version.unwrap_or_default();
    let mut events = v1
        .watch(&WatchParams::default().timeout(30), &list_version)
        .await?
        .boxed();
    v2.create(
        &PostParams::default(),
        &v2_app("watched", "registry.local/team/hello", "1.2", 1),
    )
    .await?;
    let event = tokio::time::timeout(WAIT, events.try_next())
        .await
        .context("no watch event")??
        .context("the watch ended")?;
    match event {
        WatchEvent::Added(app) => ensure!(
            app.metadata.name.as_deref() == Some("watched")
                && app.spec == v1_spec("registry.local/team/hello:1.2", 1),
            "{app:?}"
        ),
        other => bail!("expected the v2 object added, as v1: {other:?}"),
    }

    // Updated through v1 (replace and merge patch), seen in v2.
    let mut app = v1.get("from-v2").await?;
    app.spec = v1_spec("localhost:5000/acme/hello:2.1", 5);
    let replaced = v1.replace("from-v2", &PostParams::default(), &app).await?;
    ensure!(
        replaced.spec == v1_spec("localhost:5000/acme/hello:2.1", 5),
        "{replaced:?}"
    );
    let event = tokio::time::timeout(WAIT, events.try_next())
        .await
        .context("no watch event for the update")??
        .context("the watch ended")?;
    ensure!(
        matches!(&event, WatchEvent::Modified(app) if app.spec == v1_spec("localhost:5000/acme/hello:2.1", 5)),
        "{event:?}"
    );
    let as_v2 = v2.get("from-v2").await?;
    ensure!(
        as_v2.spec == v2_spec("localhost:5000/acme/hello", "2.1", 5)
            && as_v2.metadata.resource_version == replaced.metadata.resource_version,
        "{as_v2:?}"
    );
    v1.patch(
        "from-v1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"image": "nginxdemos/hello"}})),
    )
    .await?;
    ensure!(
        v2.get("from-v1").await?.spec == v2_spec("nginxdemos/hello", "", 2),
        "a v1 patch of the image clears the tag in v2"
    );
    // The status written through v1 is the status of v2.
    let status = HelloAppStatus {
        replicas: 2,
        ready_replicas: 1,
    };
    v1.patch_status(
        "from-v1",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await?;
    ensure!(v2.get("from-v1").await?.status == Some(status));

    // Everything was stored in v2.
    ensure!(
        crd(&env).await?["status"]["storedVersions"] == json!(["v2"]),
        "{}",
        crd(&env).await?["status"]
    );

    // v1 becomes the storage version: new writes are stored in v1, storedVersions keeps v2,
    // and objects stored in either version read in both.
    let mut switched: CustomResourceDefinition = serde_json::from_value(crd(&env).await?)?;
    for version in &mut switched.spec.versions {
        version.storage = version.name == "v1";
    }
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    crds.replace(CRD, &PostParams::default(), &switched).await?;
    wait_until(WAIT, "storedVersions [v2, v1]", || async {
        crd(&env).await.is_ok_and(|c| {
            c["status"]["storedVersions"] == json!(["v2", "v1"])
                && versions(&c)
                    == [
                        ("v1".to_owned(), true, true),
                        ("v2".to_owned(), true, false),
                    ]
        })
    })
    .await?;
    v2.create(
        &PostParams::default(),
        &v2_app("after-switch", "nginx", "1.27", 4),
    )
    .await?;
    ensure!(v1.get("after-switch").await?.spec == v1_spec("nginx:1.27", 4));
    ensure!(v2.get("after-switch").await?.spec == v2_spec("nginx", "1.27", 4));
    ensure!(v1.get("from-v1").await?.spec == v1_spec("nginxdemos/hello", 2));

    // The webhook stops: reads that need it fail as upstream's do (the message names the
    // version the object is stored in), reads in an object's stored version still work, and a
    // write that needs it stores nothing.
    running.shutdown().await;
    let status = api_error(v1.get("from-v1").await)?;
    ensure!(
        status.code == 500
            && status.message.starts_with(
                "conversion webhook for apps.example.com/v2, Kind=HelloApp failed: Post \""
            )
            && status
                .message
                .contains(&format!("{}?timeout=30s", serving.url(CONVERT_PATH))),
        "{status:?}"
    );
    let status = api_error(v2.get("after-switch").await)?;
    ensure!(
        status.code == 500
            && status
                .message
                .starts_with("conversion webhook for apps.example.com/v1, Kind=HelloApp failed: "),
        "{status:?}"
    );
    ensure!(v2.get("from-v1").await?.spec == v2_spec("nginxdemos/hello", "", 2));
    ensure!(v1.get("after-switch").await?.spec == v1_spec("nginx:1.27", 4));
    let status = api_error(v2.list(&ListParams::default()).await)?;
    ensure!(status.code == 500, "{status:?}");
    let status = api_error(
        v2.create(
            &PostParams::default(),
            &v2_app("unconverted", "nginx", "", 1),
        )
        .await,
    )?;
    ensure!(
        status.code == 500 && status.message.starts_with("conversion webhook for "),
        "{status:?}"
    );
    ensure!(v1.get_opt("unconverted").await?.is_none());

    env.shutdown().await;
    Ok(())
}

/// `(replicas, image)` of the Deployment `name`.
async fn deployment_state(api: &Api<Deployment>, name: &str) -> Option<(i32, String)> {
    let deployment = api.get_opt(name).await.ok()??;
    let image = deployment
        .spec
        .template
        .spec?
        .containers
        .first()?
        .image
        .clone()?;
    Some((deployment.spec.replicas?, image))
}

#[tokio::test]
async fn the_v1_controller_reconciles_a_helloapp_written_in_v2_through_the_conversion() -> Result<()>
{
    let dir = tempfile::tempdir()?;
    let env = start(dir.path()).await?;
    let serving = env.webhook_serving().context("webhook serving")?;

    // As the sample's main wires it: the controller (on v1) and the conversion webhook in one
    // manager, the webhook server on testenv's port and certificate.
    let mut manager = Manager::builder(env.client())
        .metrics_registry(korral::metrics::Registry::new())
        .build()?;
    helloapp_operator::add_to_manager(&mut manager, Scope::namespace("default"));
    helloapp_operator::add_webhooks(&mut manager, server_for(serving))
        .map_err(anyhow::Error::from_boxed)?;
    let (stop, mut stop_rx) = watch::channel(false);
    let task = tokio::spawn(manager.run(async move {
        let _ = stop_rx.wait_for(|s| *s).await;
    }));
    serving.wait_serving(WAIT).await?;

    let v2: Api<v2::HelloApp> = Api::namespaced(env.client(), "default");
    let v1: Api<HelloApp> = Api::namespaced(env.client(), "default");
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    v2.create(
        &PostParams::default(),
        &v2_app("hello", "nginxdemos/hello", "plain-text", 2),
    )
    .await?;
    wait_until(WAIT, "the Deployment of the v2 HelloApp", || async {
        deployment_state(&deployments, "hello").await
            == Some((2, "nginxdemos/hello:plain-text".to_owned()))
    })
    .await?;
    let owners = deployments.get("hello").await?.metadata.owner_references;
    ensure!(
        owners.as_ref().is_some_and(|o| o.iter().any(|r| {
            r.api_version == "apps.example.com/v1"
                && r.kind == "HelloApp"
                && r.name == "hello"
                && r.controller == Some(true)
        })),
        "{owners:?}"
    );

    // A change through v2 reaches the Deployment.
    v2.patch(
        "hello",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"tag": "latest-v2", "replicas": 3}})),
    )
    .await?;
    wait_until(WAIT, "the new tag and replicas", || async {
        deployment_state(&deployments, "hello").await
            == Some((3, "nginxdemos/hello:latest-v2".to_owned()))
    })
    .await?;

    // The controller's status (written through v1) is read in v2.
    deployments
        .patch_status(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 3, "readyReplicas": 2}})),
        )
        .await?;
    let want = HelloAppStatus {
        replicas: 3,
        ready_replicas: 2,
    };
    wait_until(WAIT, "the ready replicas in the v2 status", || async {
        v2.get("hello").await.ok().and_then(|a| a.status) == Some(want.clone())
    })
    .await?;
    ensure!(v1.get("hello").await?.status == Some(want));

    stop.send_replace(true);
    tokio::time::timeout(WAIT, task).await???;
    env.shutdown().await;
    Ok(())
}
