//! `korral up --sample memcached`: the Memcached sample operator of `samples/memcached-operator`
//! run in process against the control plane, its sample applied and its convergence shown.
//! Built with the `sample-memcached` feature (on by default).

use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use korral_runtime::cache::Scope;
use korral_runtime::manager::Manager;
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, CustomResourceExt, ResourceExt};
use memcached_operator::Memcached;
use tokio::sync::oneshot;

use super::Args;
use super::progress::{Line, Progress};

/// The namespace the sample is applied in.
const SAMPLE_NAMESPACE: &str = "default";
/// How often the convergence display looks at the cluster.
const POLL: Duration = Duration::from_millis(200);

/// Installs the CRD, runs the operator, applies the sample and follows it.
pub(super) async fn run_memcached(
    kubeconfig_yaml: &str,
    url: &str,
    args: &Args,
) -> anyhow::Result<()> {
    let client = &client_for(kubeconfig_yaml).await?;
    let mut progress = Progress::for_stdout();
    let crd_name = Memcached::crd_name().to_string();
    install_crd(client).await?;
    progress.message(&format!("installed CRD {crd_name}"));

    let mut manager = Manager::builder(client.clone())
        .graceful_timeout(Duration::from_secs(10))
        .build()
        .context("building the operator's manager")?;
    memcached_operator::add_to_manager(&mut manager, Scope::All);
    let webhooks = super::webhooks::InProcessWebhooks::start(client)
        .await
        .context("serving the Memcached webhooks")?;
    progress.message(&format!(
        "memcached webhooks (defaulting, validating) served at {}, configurations {}",
        webhooks.url(),
        webhooks.configuration_names().join(", ")
    ));
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let mut manager_task = tokio::spawn(manager.run(async move {
        let _ = stop_rx.await;
    }));
    progress.message("memcached operator running in process");

    let sample = match apply_sample(client).await {
        Ok(sample) => sample,
        Err(e) => {
            webhooks.stop(client).await;
            return Err(e);
        }
    };
    progress.message(&sample);

    let signal = crate::apiserver::shutdown_signal();
    tokio::pin!(signal);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout);
    let mut converged_once = false;
    let mut timed_out = false;
    let mut ticker = tokio::time::interval(POLL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let result = loop {
        tokio::select! {
            () = &mut signal => break Ok(()),
            joined = &mut manager_task => {
                let why = match joined {
                    Ok(Ok(())) => "stopped".to_string(),
                    Ok(Err(e)) => format!("failed: {e}"),
                    Err(e) => format!("panicked: {e}"),
                };
                webhooks.stop(client).await;
                return Err(anyhow::anyhow!("the memcached operator {why}"));
            }
            _ = ticker.tick() => {}
        }
        let state = observe(client, &crd_name).await;
        let mut lines = vec![Line::new("control plane", url.to_string())];
        lines.extend(state.lines());
        progress.update(lines);
        if state.converged() && !converged_once {
            converged_once = true;
            progress.message(&format!(
                "converged: memcached-sample has {n}/{n} ready pods and status.nodes lists them",
                n = state.size.unwrap_or(0)
            ));
            if args.exit_after_converge {
                break Ok(());
            }
        }
        if !state.converged() {
            converged_once = false;
        }
        if !converged_once && !timed_out && tokio::time::Instant::now() >= deadline {
            timed_out = true;
            let summary = state.summary();
            if args.exit_after_converge {
                break Err(anyhow::anyhow!(
                    "memcached-sample did not converge within {}s: {summary}",
                    args.timeout
                ));
            }
            progress.message(&format!(
                "warning: memcached-sample has not converged after {}s: {summary}",
                args.timeout
            ));
        }
    };
    let _ = stop_tx.send(());
    match tokio::time::timeout(Duration::from_secs(15), manager_task).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::warn!(error = %e, "the operator stopped with an error"),
        Ok(Err(e)) => tracing::warn!(error = %e, "the operator task failed"),
        Err(_) => tracing::warn!("the operator did not stop within 15s"),
    }
    webhooks.stop(client).await;
    result
}

/// Creates the Memcached CRD (or updates it) and waits until it is established.
async fn install_crd(client: &Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Memcached::crd();
    let name = crd.name_any();
    match api
        .get_opt(&name)
        .await
        .context("reading the Memcached CRD")?
    {
        None => {
            api.create(&PostParams::default(), &crd)
                .await
                .context("creating the Memcached CRD")?;
        }
        Some(existing) => {
            let mut next = crd.clone();
            next.metadata.resource_version = existing.metadata.resource_version.clone();
            api.replace(&name, &PostParams::default(), &next)
                .await
                .context("updating the Memcached CRD")?;
        }
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(crd) = api
            .get_opt(&name)
            .await
            .context("reading the Memcached CRD")?
            && established(&crd)
        {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("the CRD {name} was not established within 30s");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

/// Creates `memcached-sample` unless it exists (a restart keeps what is there).
async fn apply_sample(client: &Client) -> anyhow::Result<String> {
    let api: Api<Memcached> = Api::namespaced(client.clone(), SAMPLE_NAMESPACE);
    let mut sample = memcached_operator::sample();
    let name = sample.name_any();
    if let Some(existing) = api.get_opt(&name).await.context("reading the sample")? {
        return Ok(format!(
            "memcached {SAMPLE_NAMESPACE}/{name} already exists (size {}); keeping it",
            existing.spec.size
        ));
    }
    sample.metadata.namespace = Some(SAMPLE_NAMESPACE.to_string());
    api.create(&PostParams::default(), &sample)
        .await
        .context("creating the sample Memcached")?;
    Ok(format!(
        "applied memcached {SAMPLE_NAMESPACE}/{name} (size {})",
        sample.spec.size
    ))
}

/// What the display shows about the sample.
#[derive(Debug, Default)]
struct State {
    crd: String,
    /// `spec.size`, when the resource exists.
    size: Option<i32>,
    /// `(ready, spec.replicas, status.replicas)` of the Deployment, when it exists.
    deployment: Option<(i32, i32, i32)>,
    /// Pod names with their state.
    pods: Vec<(String, String, bool)>,
    /// `status.nodes`, sorted.
    nodes: Vec<String>,
}

impl State {
    fn converged(&self) -> bool {
        let Some(size) = self.size else {
            return false;
        };
        let Some((ready, desired, replicas)) = self.deployment else {
            return false;
        };
        let mut ready_pods: Vec<String> = self
            .pods
            .iter()
            .filter(|(_, _, ready)| *ready)
            .map(|(name, _, _)| name.clone())
            .collect();
        ready_pods.sort();
        ready == size
            && desired == size
            && replicas == size
            && self.pods.len() == size as usize
            && ready_pods.len() == size as usize
            && self.nodes == ready_pods
    }

    fn deployment_text(&self) -> String {
        match self.deployment {
            Some((ready, desired, _)) => format!("memcached-sample {ready}/{desired} ready"),
            None => "memcached-sample: not created yet".to_string(),
        }
    }

    fn nodes_text(&self) -> String {
        format!("[{}]", self.nodes.join(", "))
    }

    fn summary(&self) -> String {
        format!(
            "Deployment {}, {} pods, status.nodes {} (spec.size {})",
            self.deployment_text(),
            self.pods.len(),
            self.nodes_text(),
            self.size.map_or("unknown".to_string(), |s| s.to_string())
        )
    }

    fn lines(&self) -> Vec<Line> {
        let pods = if self.pods.is_empty() {
            "none".to_string()
        } else {
            self.pods
                .iter()
                .map(|(name, phase, ready)| {
                    format!("{name} ({phase}{})", if *ready { ", ready" } else { "" })
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let size = self
            .size
            .map_or("memcached-sample: not found".to_string(), |s| {
                format!("memcached-sample size {s}")
            });
        vec![
            Line::new("CRD", self.crd.clone()),
            Line::new("Memcached", size),
            Line::new("Deployment", self.deployment_text()),
            Line::new("Pods", pods),
            Line::new("status.nodes", self.nodes_text()),
            Line::new(
                "state",
                if self.converged() {
                    "converged"
                } else {
                    "converging"
                },
            ),
        ]
    }
}

/// Reads what the display shows; errors show up as missing pieces.
async fn observe(client: &Client, crd_name: &str) -> State {
    let mut state = State::default();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    state.crd = match crds.get_opt(crd_name).await {
        Ok(Some(crd)) if established(&crd) => format!("{crd_name} established"),
        Ok(Some(_)) => format!("{crd_name} not established yet"),
        Ok(None) => format!("{crd_name} missing"),
        Err(e) => format!("{crd_name}: {e}"),
    };
    let name = memcached_operator::sample().name_any();
    let memcacheds: Api<Memcached> = Api::namespaced(client.clone(), SAMPLE_NAMESPACE);
    if let Ok(Some(m)) = memcacheds.get_opt(&name).await {
        state.size = Some(m.spec.size);
        let mut nodes = m.status.map(|s| s.nodes).unwrap_or_default();
        nodes.sort();
        state.nodes = nodes;
    }
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), SAMPLE_NAMESPACE);
    if let Ok(Some(d)) = deployments.get_opt(&name).await {
        let status = d.status.unwrap_or_default();
        state.deployment = Some((
            status.ready_replicas.unwrap_or(0),
            d.spec.replicas.unwrap_or(1),
            status.replicas.unwrap_or(0),
        ));
    }
    let selector = memcached_operator::labels_for(&name)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    let pods: Api<Pod> = Api::namespaced(client.clone(), SAMPLE_NAMESPACE);
    if let Ok(list) = pods.list(&ListParams::default().labels(&selector)).await {
        let mut pods: Vec<(String, String, bool)> =
            list.items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .map(|p| {
                    let status = p.status.unwrap_or_default();
                    let ready = status.conditions.as_ref().is_some_and(|c| {
                        c.iter().any(|c| c.type_ == "Ready" && c.status == "True")
                    });
                    (
                        p.metadata.name.unwrap_or_default(),
                        status.phase.unwrap_or_else(|| "Pending".to_string()),
                        ready,
                    )
                })
                .collect();
        pods.sort();
        state.pods = pods;
    }
    state
}

/// A kube client for the embedded server.
async fn client_for(kubeconfig_yaml: &str) -> anyhow::Result<Client> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(kubeconfig_yaml)
        .context("reading the generated kubeconfig")?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .context("loading the generated kubeconfig")?;
    Client::try_from(config).context("creating a client for the control plane")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ready: bool) -> (String, String, bool) {
        (name.to_string(), "Running".to_string(), ready)
    }

    #[test]
    fn converged_needs_ready_pods_listed_in_status_nodes() {
        let mut state = State {
            crd: String::new(),
            size: Some(2),
            deployment: Some((2, 2, 2)),
            pods: vec![pod("a", true), pod("b", true)],
            nodes: vec!["a".into(), "b".into()],
        };
        assert!(state.converged());
        state.nodes = vec!["a".into()];
        assert!(!state.converged());
        state.nodes = vec!["a".into(), "b".into()];
        state.pods[1].2 = false;
        assert!(!state.converged());
        state.pods[1].2 = true;
        state.size = Some(3);
        assert!(!state.converged());
        assert!(state.summary().contains("spec.size 3"));
    }
}
