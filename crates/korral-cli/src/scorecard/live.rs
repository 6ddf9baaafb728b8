//! `basic-check-spec` against a cluster: the bundle's CRDs are applied, each `alm-examples`
//! custom resource is created in the namespace, read back (it must still have a `spec`) and
//! deleted — what operator-sdk's scorecard pod does, done here directly through the API.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use serde_json::Value;

use super::bundle::{Bundle, describe, group_version};
use super::checks::check_spec;
use super::report::TestResult;
use crate::cluster;

/// Server-side applies the bundle's CRDs as `korral install` does (quietly, so `--output json`
/// stays JSON) and waits until each is established, at most until `deadline`.
async fn apply_crds(client: &Client, crds: &[Value], deadline: Instant) -> anyhow::Result<()> {
    for crd in crds {
        let name = crd["metadata"]["name"]
            .as_str()
            .context("a CRD of the bundle has no metadata.name")?;
        cluster::apply_one(client, crd).await?;
        tracing::info!(crd = name, "applied the bundle's CRD");
        cluster::wait_established(
            client,
            name,
            deadline.saturating_duration_since(Instant::now()),
        )
        .await?;
    }
    Ok(())
}

/// Creates `cr` in `namespace` (under a generated name), reads it back and deletes it; returns
/// the object as the server stored it.
async fn round_trip(client: &Client, cr: &Value, namespace: &str) -> Result<Value, String> {
    let (group, version) = group_version(cr);
    let kind = cr["kind"].as_str().unwrap_or_default();
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|err| {
            format!(
                "finding the API of {} ({group}/{version}): {err}",
                describe(cr)
            )
        })?;
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Namespaced => Api::namespaced_with(client.clone(), namespace, &resource),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let mut object = cr.clone();
    let base = cr["metadata"]["name"].as_str().unwrap_or("example");
    object["metadata"] = serde_json::json!({
        "generateName": format!("{base}-scorecard-"),
        "labels": cr["metadata"]["labels"],
        "annotations": cr["metadata"]["annotations"],
    });
    if let Some(meta) = object["metadata"].as_object_mut() {
        meta.retain(|_, v| !v.is_null());
    }
    let object: DynamicObject = serde_json::from_value(object)
        .map_err(|err| format!("{} is not a Kubernetes object: {err}", describe(cr)))?;
    let created = api
        .create(&PostParams::default(), &object)
        .await
        .map_err(|err| format!("creating {}: {err}", describe(cr)))?;
    let name = created.metadata.name.clone().unwrap_or_default();
    let read = api.get(&name).await;
    let deleted = api.delete(&name, &DeleteParams::default()).await;
    let read = read.map_err(|err| format!("reading back {} as {name}: {err}", describe(cr)))?;
    if let Err(err) = deleted {
        tracing::warn!(%name, %err, "deleting a scorecard example");
    }
    let mut value = serde_json::to_value(&read)
        .map_err(|err| format!("reading back {}: {err}", describe(cr)))?;
    value["metadata"]["name"] = cr["metadata"]["name"].clone();
    Ok(value)
}

/// `basic-check-spec`: the examples, created in `namespace` on the cluster, have a `spec`.
/// Examples the server rejects fail the test; an unreachable cluster is an `error`.
pub async fn basic_check_spec(
    bundle: &Bundle,
    client: &Client,
    namespace: &str,
    wait: Duration,
) -> TestResult {
    let mut result = TestResult::pass("basic-check-spec");
    let crs = match bundle.examples() {
        Ok(crs) => crs,
        Err(err) => {
            result.fail(format!("error getting custom resources: {err}"));
            return result;
        }
    };
    result.log_line(format!(
        "Loaded {} Custom Resources from alm-examples",
        crs.len()
    ));
    // Without a spec there is nothing to create faithfully: fail as operator-sdk does.
    check_spec(&mut result, &crs);
    if result.state != crate::scorecard::report::State::Pass {
        return result;
    }
    let deadline = Instant::now() + wait;
    let run = async {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        if namespaces
            .get_opt(namespace)
            .await
            .with_context(|| format!("reading namespace {namespace}"))?
            .is_none()
        {
            bail!(
                "namespace {namespace} does not exist (create it or choose one with --namespace)"
            );
        }
        apply_crds(client, &bundle.crds, deadline).await?;
        let mut stored = Vec::new();
        for cr in &crs {
            match round_trip(client, cr, namespace).await {
                Ok(value) => stored.push(value),
                Err(err) => return Ok::<_, anyhow::Error>(Err(err)),
            }
        }
        Ok(Ok(stored))
    };
    match tokio::time::timeout(wait, run).await {
        Err(_) => result.error(format!(
            "the cluster did not answer within --wait-time {wait:?}"
        )),
        Ok(Err(err)) => result.error(format!("{err:#}")),
        Ok(Ok(Err(rejected))) => result.fail(rejected),
        Ok(Ok(Ok(stored))) => {
            result.log_line(format!(
                "Applied the bundle's {} CRD(s) (they stay installed)",
                bundle.crds.len()
            ));
            result.log_line(format!(
                "Created, read back and deleted {} custom resource(s) in namespace {namespace}",
                stored.len()
            ));
            check_spec(&mut result, &stored);
        }
    }
    result
}
