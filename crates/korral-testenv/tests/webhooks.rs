//! `TestEnvBuilder::webhooks`: configurations from objects and manifest files are installed
//! pointing at the local port with the generated CA, a webhook server the test runs there on
//! the generated certificate is called by the API server (mutation, denial, conversion), and
//! the configurations are gone after shutdown and drop.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use korral_apiserver::ServerConfig;
use korral_testenv::{TestEnv, TestEnvError, WebhookInstall, WebhookServing};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// A webhook server the test runs where the environment says, on the certificate it
/// generated; stops when dropped.
struct Hook {
    _stop: oneshot::Sender<()>,
}

/// What the test webhook answers to the review `review` sent to `path`.
fn answer(path: &str, review: &Value) -> Value {
    if review["kind"] == "ConversionReview" {
        let request = &review["request"];
        let desired = request["desiredAPIVersion"].clone();
        let converted: Vec<Value> = request["objects"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|mut object| {
                object["apiVersion"] = desired.clone();
                object["spec"]["convertedBy"] = json!(path);
                object
            })
            .collect();
        return json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": {"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": converted},
        });
    }
    let uid = review["request"]["uid"].clone();
    let mut response = json!({"uid": uid, "allowed": true});
    match path {
        "/mutate" => {
            let patch = json!([{"op": "add", "path": "/metadata/annotations", "value": {"mutated-by": "testenv-hook"}}]);
            response["patchType"] = json!("JSONPatch");
            response["patch"] =
                json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
        }
        "/validate" if review["request"]["object"]["data"]["deny"].is_string() => {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": 403, "message": "no deny keys here"});
        }
        _ => {}
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// Serves [`answer`] over https on the environment's local host and port with the serving
/// certificate from its certificate directory.
async fn serve(serving: &WebhookServing) -> Result<Hook> {
    let dir = serving.local_serving_cert_dir();
    let material = korral_apiserver::tls::TlsMaterial {
        ca_cert_pem: serving.local_serving_ca_pem().to_owned(),
        cert_pem: std::fs::read_to_string(dir.join(korral_testenv::CERT_FILE))?,
        key_pem: std::fs::read_to_string(dir.join(korral_testenv::KEY_FILE))?,
    };
    let acceptor =
        tokio_rustls::TlsAcceptor::from(korral_apiserver::tls::server_config(&material)?);
    let listener =
        tokio::net::TcpListener::bind((serving.local_serving_host(), serving.local_serving_port()))
            .await?;
    let (stop, mut stopped) = oneshot::channel::<()>();
    tokio::spawn(async move {
        loop {
            let tcp = tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => match accepted {
                    Ok((tcp, _)) => tcp,
                    Err(_) => return,
                },
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    |request: http::Request<hyper::body::Incoming>| async move {
                        let path = request.uri().path().to_owned();
                        let body = request
                            .into_body()
                            .collect()
                            .await
                            .map(|c| c.to_bytes())
                            .unwrap_or_default();
                        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let reply = answer(&path, &review).to_string();
                        http::Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(bytes::Bytes::from(reply)))
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    Ok(Hook { _stop: stop })
}

/// A webhook on ConfigMaps of namespaces labelled `hooks: on`, calling a service.
fn webhook(name: &str, path: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": path}},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"hooks": "on"}},
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

const MANIFESTS: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: testenv-mutating
webhooks:
- name: mutate.testenv.example.com
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate}
  rules:
  - {operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  namespaceSelector: {matchLabels: {hooks: "on"}}
  sideEffects: None
  admissionReviewVersions: [v1]
---
apiVersion: v1
kind: Service
metadata: {name: webhook-service, namespace: system}
spec:
  ports: [{port: 443, targetPort: 9443}]
"#;

fn validating() -> Result<ValidatingWebhookConfiguration> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": "testenv-validating"},
        "webhooks": [webhook("validate.testenv.example.com", "/validate")],
    }))?)
}

fn install(dir: &Path) -> Result<WebhookInstall> {
    let manifests = dir.join("manifests.yaml");
    std::fs::write(&manifests, MANIFESTS)?;
    Ok(WebhookInstall::new()
        .path(&manifests)
        .validating(validating()?))
}

async fn hooked_namespace(env: &TestEnv) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(env.client());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"metadata": {"name": "hooked", "labels": {"hooks": "on"}}}),
            )?,
        )
        .await?;
    Ok(())
}

fn configmap(name: &str, data: Value) -> Result<ConfigMap> {
    Ok(serde_json::from_value(
        json!({"metadata": {"name": name}, "data": data}),
    )?)
}

#[tokio::test]
async fn configurations_point_at_the_local_server_which_the_api_server_calls() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let env = TestEnv::builder()
        .webhooks(install(dir.path())?)
        .start()
        .await?;
    let serving = env.webhook_serving().context("webhook serving")?;
    ensure!(serving.local_serving_host() == "127.0.0.1");
    ensure!(serving.local_serving_port() != 0);
    let ca_bundle =
        base64::engine::general_purpose::STANDARD.encode(serving.local_serving_ca_pem());

    // Installed as given, the service replaced by the local URL with the CA.
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(env.client());
    let stored = serde_json::to_value(mutating.get("testenv-mutating").await?)?;
    ensure!(
        stored["webhooks"][0]["clientConfig"]
            == json!({"url": serving.url("/mutate"), "caBundle": ca_bundle}),
        "{stored}"
    );
    ensure!(
        serving.url("/mutate")
            == format!("https://127.0.0.1:{}/mutate", serving.local_serving_port())
    );
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(env.client());
    let stored = serde_json::to_value(validating.get("testenv-validating").await?)?;
    ensure!(
        stored["webhooks"][0]["clientConfig"]
            == json!({"url": serving.url("/validate"), "caBundle": ca_bundle}),
        "{stored}"
    );
    // Only the two webhook configurations: the Service of the manifest is not installed.
    ensure!(mutating.list(&ListParams::default()).await?.items.len() == 1);

    hooked_namespace(&env).await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client(), "hooked");
    // Nothing serves yet: the API server fails calling the webhook.
    let refused = configmaps
        .create(&PostParams::default(), &configmap("early", json!({}))?)
        .await;
    match refused {
        Err(kube::Error::Api(status)) => ensure!(
            status.message.starts_with(
                "Internal error occurred: failed calling webhook \"mutate.testenv.example.com\""
            ),
            "{status:?}"
        ),
        other => bail!("created without a webhook server: {other:?}"),
    }

    let _hook = serve(serving).await?;
    serving.wait_serving(Duration::from_secs(10)).await?;
    let created = configmaps
        .create(
            &PostParams::default(),
            &configmap("plain", json!({"a": "b"}))?,
        )
        .await?;
    ensure!(
        created
            .metadata
            .annotations
            .unwrap_or_default()
            .get("mutated-by")
            .map(String::as_str)
            == Some("testenv-hook")
    );
    match configmaps
        .create(
            &PostParams::default(),
            &configmap("denied", json!({"deny": "x"}))?,
        )
        .await
    {
        Err(kube::Error::Api(status)) => ensure!(
            status.code == 403
                && status.message
                    == "admission webhook \"validate.testenv.example.com\" denied the request: no deny keys here",
            "{status:?}"
        ),
        other => bail!("not denied: {other:?}"),
    }
    env.shutdown().await;
    Ok(())
}

/// A CRD with v1 (stored) and v2, converting `None` until the environment points it at the
/// local server.
fn widgets_crd() -> Result<CustomResourceDefinition> {
    let version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
        })
    };
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.testenv.example.com"},
        "spec": {
            "group": "testenv.example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [version("v1", true), version("v2", false)],
        },
    }))?)
}

fn widgets(env: &TestEnv, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("testenv.example.com", version, "Widget");
    Api::namespaced_with(
        env.client(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    )
}

#[tokio::test]
async fn conversion_crds_convert_through_the_local_server() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let crd_file = dir.path().join("crd.yaml");
    std::fs::write(&crd_file, serde_yaml_ng::to_string(&widgets_crd()?)?)?;
    let env = TestEnv::builder()
        .crd_file(&crd_file)
        .webhooks(WebhookInstall::new().conversion_crd("widgets.testenv.example.com"))
        .start()
        .await?;
    let serving = env.webhook_serving().context("webhook serving")?;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let crd = serde_json::to_value(crds.get("widgets.testenv.example.com").await?)?;
    ensure!(
        crd["spec"]["conversion"]
            == json!({
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {
                        "url": serving.url(korral_testenv::DEFAULT_CONVERSION_PATH),
                        "caBundle": base64::engine::general_purpose::STANDARD.encode(serving.local_serving_ca_pem()),
                    },
                    "conversionReviewVersions": ["v1"],
                },
            }),
        "{crd}"
    );

    let _hook = serve(serving).await?;
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testenv.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"color": "blue"},
    }))?;
    widgets(&env, "v1")
        .create(&PostParams::default(), &widget)
        .await?;
    let as_v2 = widgets(&env, "v2").get("w").await?;
    ensure!(
        as_v2.data["spec"] == json!({"color": "blue", "convertedBy": "/convert"}),
        "{:?}",
        as_v2.data
    );
    let as_v1 = widgets(&env, "v1").get("w").await?;
    ensure!(
        as_v1.data["spec"] == json!({"color": "blue"}),
        "{:?}",
        as_v1.data
    );
    Ok(())
}

/// Starts a durable environment on `dir`, retrying while the previous one still releases it.
async fn reopen(dir: &Path) -> Result<TestEnv> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match TestEnv::builder()
            .server_config(ServerConfig::durable(dir))
            .start()
            .await
        {
            Ok(env) => return Ok(env),
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

async fn configuration_names(env: &TestEnv) -> Result<Vec<String>> {
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(env.client());
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(env.client());
    let mut names: Vec<String> = mutating
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .chain(
            validating
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .map(|v| MutatingWebhookConfiguration {
                    metadata: v.metadata,
                    webhooks: None,
                }),
        )
        .filter_map(|c| c.metadata.name)
        .collect();
    names.sort();
    Ok(names)
}

#[tokio::test]
async fn shutdown_removes_the_configurations() -> Result<()> {
    let data = tempfile::tempdir()?;
    let env = TestEnv::builder()
        .server_config(ServerConfig::durable(data.path()))
        .webhooks(install(data.path())?)
        .start()
        .await?;
    ensure!(configuration_names(&env).await? == ["testenv-mutating", "testenv-validating"]);
    env.shutdown().await;
    let env = reopen(data.path()).await?;
    ensure!(configuration_names(&env).await?.is_empty());
    env.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_removes_the_configurations() -> Result<()> {
    let data = tempfile::tempdir()?;
    let env = TestEnv::builder()
        .server_config(ServerConfig::durable(data.path()))
        .webhooks(install(data.path())?)
        .start()
        .await?;
    ensure!(configuration_names(&env).await?.len() == 2);
    drop(env);
    let env = reopen(data.path()).await?;
    ensure!(configuration_names(&env).await?.is_empty());
    env.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn uninstall_removes_them_while_the_server_runs() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut env = TestEnv::builder()
        .webhooks(install(dir.path())?)
        .start()
        .await?;
    env.uninstall_webhooks().await?;
    ensure!(configuration_names(&env).await?.is_empty());
    // The serving material stays until the environment goes.
    let serving = env.webhook_serving().context("webhook serving")?;
    ensure!(serving.local_serving_cert_dir().join("tls.crt").is_file());
    Ok(())
}

#[tokio::test]
async fn each_failing_step_is_named() -> Result<()> {
    let missing = TestEnv::builder()
        .webhooks(WebhookInstall::new().path("/nonexistent/config/webhook"))
        .start()
        .await;
    ensure!(
        matches!(&missing, Err(TestEnvError::WebhookManifest { path, .. }) if path == Path::new("/nonexistent/config/webhook")),
        "{:?}",
        missing.err()
    );

    let no_crd = TestEnv::builder()
        .webhooks(WebhookInstall::new().conversion_crd("gadgets.testenv.example.com"))
        .start()
        .await;
    match no_crd {
        Err(TestEnvError::PatchConversion {
            name,
            source: kube::Error::Api(status),
        }) => {
            ensure!(name == "gadgets.testenv.example.com" && status.code == 404)
        }
        other => bail!("{:?}", other.err()),
    }

    // The server refuses a webhook without sideEffects, as upstream.
    let mut bad = validating()?;
    if let Some(webhooks) = bad.webhooks.as_mut() {
        webhooks[0].side_effects = String::new();
    }
    let refused = TestEnv::builder()
        .webhooks(WebhookInstall::new().validating(bad))
        .start()
        .await;
    match refused {
        Err(TestEnvError::InstallWebhook {
            kind,
            name,
            source: kube::Error::Api(status),
        }) => ensure!(
            kind == "ValidatingWebhookConfiguration"
                && name == "testenv-validating"
                && status.code == 422
                && status.message.contains("webhooks[0].sideEffects"),
            "{status:?}"
        ),
        other => bail!("{:?}", other.err()),
    }
    Ok(())
}
