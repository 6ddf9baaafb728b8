//! The runtime against a control plane that misbehaves on purpose (the embedded server's fault
//! injection): retries shaped by the server's answer, error policies, per-controller backoff,
//! the shared cache's relist on 410 and watch resumption, and no hot loop under a mixed fault
//! profile. Every wait polls with a timeout.
//!
//! The reconcilers here use a client without kube's own retry layer, so every injected error
//! reaches the runtime (kube's default client would absorb most 429s and 503s itself).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use korral_apiserver::{FaultConfig, FaultLatency, FaultRule};
use korral_runtime::cache::{Cache, Scope};
use korral_runtime::controller::Controller;
use korral_runtime::metrics::Registry;
use korral_runtime::reconcile::{Action, ErrorAction, ReconcileResult, RetryHint};
use korral_testenv::{TestEnv, wait_until};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use tokio::sync::watch;

const WAIT: Duration = Duration::from_secs(30);

/// A client of `env` without kube's retry layer: errors reach the reconciler and the runtime.
async fn no_retry_client(env: &TestEnv) -> Result<Client> {
    let kubeconfig = Kubeconfig::from_yaml(env.server().kubeconfig_yaml())?;
    let mut config =
        Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    config.default_retry = false;
    Ok(Client::try_from(config)?)
}

fn configmap(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some(BTreeMap::from([("faults".to_owned(), "yes".to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), name.to_owned())])),
        ..ConfigMap::default()
    }
}

/// Polls `check` every 10 ms for `period`, failing as soon as it is false: for asserting that
/// nothing more happens (no retry, no reconcile) once work is done.
async fn stays<F, Fut>(period: Duration, what: &str, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + period;
    while tokio::time::Instant::now() < deadline {
        ensure!(check().await, "no longer true: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// A shutdown signal for a controller run.
fn stopper() -> (
    watch::Sender<bool>,
    impl Future<Output = ()> + Send + 'static,
) {
    let (tx, mut rx) = watch::channel(false);
    (tx, async move {
        let _ = rx.wait_for(|stop| *stop).await;
    })
}

/// When each reconcile of each object started.
#[derive(Default)]
struct Attempts(Mutex<HashMap<String, Vec<Instant>>>);

impl Attempts {
    fn record(&self, name: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.to_owned())
            .or_default()
            .push(Instant::now());
    }

    fn of(&self, name: &str) -> Vec<Instant> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
            .unwrap_or_default()
    }

    fn count(&self, name: &str) -> usize {
        self.of(name).len()
    }

    fn gaps(&self, name: &str) -> Vec<Duration> {
        self.of(name).windows(2).map(|w| w[1] - w[0]).collect()
    }

    fn max_per_object(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(Vec::len)
            .max()
            .unwrap_or_default()
    }
}

/// What the probing reconciler needs: a client without retries and the attempts log.
struct Probe {
    client: Client,
    attempts: Attempts,
}

/// Records the attempt, then reads the Secret `probe` (absent: fine), failing with whatever the
/// server answers; the faults target `get` on secrets, which only this reconciler issues.
async fn probe(cm: Arc<ConfigMap>, ctx: Arc<Probe>) -> ReconcileResult {
    let name = cm.metadata.name.clone().unwrap_or_default();
    ctx.attempts.record(&name);
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), "default");
    secrets.get_opt("probe").await?;
    Ok(Action::await_change())
}

fn get_secret_error(code: u16) -> FaultRule {
    FaultRule::error(code).verbs(["get"]).resources(["secrets"])
}

/// Starts a probing controller built by `build` on `env`.
async fn start_probe(
    env: &TestEnv,
    build: impl FnOnce(Controller<ConfigMap>) -> Controller<ConfigMap>,
) -> Result<(Arc<Probe>, watch::Sender<bool>)> {
    let client = no_retry_client(env).await?;
    let ctx = Arc::new(Probe {
        client: client.clone(),
        attempts: Attempts::default(),
    });
    let controller = Controller::new(Cache::new(env.client()), "probe")
        .for_::<ConfigMap>(Scope::namespace("default"))
        .metrics_registry(Registry::new());
    let (stop, shutdown) = stopper();
    tokio::spawn(build(controller).run(probe, Arc::clone(&ctx), shutdown));
    Ok((ctx, stop))
}

#[tokio::test]
async fn throttled_reconcile_is_retried_no_earlier_than_retry_after() -> Result<()> {
    let env = TestEnv::start().await?;
    env.faults().set(
        FaultConfig::default().with_rule(
            get_secret_error(429)
                .retry_after(Duration::from_secs(1))
                .nth(1),
        ),
    )?;
    let (ctx, _stop) = start_probe(&env, |c| c).await?;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    cms.create(&PostParams::default(), &configmap("throttled"))
        .await?;

    wait_until(WAIT, "two attempts", || async {
        ctx.attempts.count("throttled") >= 2
    })
    .await?;
    let gaps = ctx.attempts.gaps("throttled");
    ensure!(
        gaps[0] >= Duration::from_secs(1),
        "retried {:?} after a 429 with Retry-After 1s (the 5 ms backoff, not the server's wait)",
        gaps[0]
    );
    ensure!(
        env.faults().stats().total() == 1,
        "{:?}",
        env.faults().stats()
    );
    // The second attempt succeeded: nothing more happens.
    stays(Duration::from_millis(300), "two attempts", || async {
        ctx.attempts.count("throttled") == 2
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn server_errors_back_off_conflicts_retry_promptly_and_success_resets() -> Result<()> {
    const SERVER_ERRORS: u64 = 10;
    let env = TestEnv::start().await?;
    // The first 10 gets answer 503 or 500, the 11th 409 Conflict, the 12th succeeds; the 13th
    // (after a later change) 503 again.
    let mut faults = FaultConfig::default();
    for n in 1..=SERVER_ERRORS {
        let code = if n % 2 == 0 { 500 } else { 503 };
        faults = faults.with_rule(get_secret_error(code).nth(n));
    }
    faults = faults
        .with_rule(get_secret_error(409).nth(SERVER_ERRORS + 1))
        .with_rule(get_secret_error(503).nth(SERVER_ERRORS + 3));
    env.faults().set(faults)?;
    let (ctx, _stop) = start_probe(&env, |c| c).await?;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    cms.create(&PostParams::default(), &configmap("flaky"))
        .await?;

    let first_run = usize::try_from(SERVER_ERRORS + 2)?;
    wait_until(WAIT, "the key to get through its errors", || async {
        ctx.attempts.count("flaky") >= first_run
    })
    .await?;
    let gaps = ctx.attempts.gaps("flaky");
    // Exponential from 5 ms: 5, 10, 20, ... 2560 ms after the 10 server errors.
    for (i, gap) in gaps.iter().take(10).enumerate() {
        let want = Duration::from_millis(5) * 2u32.pow(u32::try_from(i)?);
        ensure!(*gap >= want, "retry {i} after {gap:?}, backoff is {want:?}");
    }
    // The conflict is retried promptly, not after the 5.12 s the server errors grew to.
    ensure!(
        gaps[10] < Duration::from_secs(2),
        "conflict retried after {:?}",
        gaps[10]
    );

    // Success reset the backoff: a later server error is retried after ~5 ms again.
    cms.patch(
        "flaky",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "changed"}})),
    )
    .await?;
    wait_until(WAIT, "the retry after the reset", || async {
        ctx.attempts.count("flaky") >= first_run + 2
    })
    .await?;
    let gaps = ctx.attempts.gaps("flaky");
    ensure!(
        gaps[first_run] < Duration::from_secs(2),
        "after a success, a server error was retried after {:?}",
        gaps[first_run]
    );
    stays(
        Duration::from_millis(300),
        "no attempt after success",
        || async { ctx.attempts.count("flaky") == first_run + 2 },
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn error_policy_and_backoff_settings_shape_the_retries() -> Result<()> {
    let env = TestEnv::start().await?;
    env.faults().set(
        FaultConfig::default()
            // Per object: `policy` gets a 429 asking for 30 s, `backoff` two 503s.
            .with_rule(
                get_secret_error(429)
                    .retry_after(Duration::from_secs(30))
                    .nth(1),
            )
            .with_rule(get_secret_error(503).nth(3))
            .with_rule(get_secret_error(503).nth(4)),
    )?;
    let (ctx, _stop) = start_probe(&env, |c| {
        c.backoff(Duration::from_millis(400), Duration::from_secs(60))
            .error_policy(|err, cm: &ConfigMap| {
                let throttled = matches!(err.retry_hint(), RetryHint::Throttled(_));
                if throttled && cm.metadata.name.as_deref() == Some("policy") {
                    // The kube-runtime form: an Action.
                    Action::requeue(Duration::from_millis(200)).into()
                } else {
                    ErrorAction::Default
                }
            })
    })
    .await?;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    cms.create(&PostParams::default(), &configmap("policy"))
        .await?;
    wait_until(WAIT, "the policy's retry", || async {
        ctx.attempts.count("policy") >= 2
    })
    .await?;
    let gap = ctx.attempts.gaps("policy")[0];
    ensure!(
        gap >= Duration::from_millis(200) && gap < Duration::from_secs(10),
        "the error policy asked for 200 ms instead of the 30 s Retry-After; retried after {gap:?}"
    );

    cms.create(&PostParams::default(), &configmap("backoff"))
        .await?;
    wait_until(WAIT, "two retries", || async {
        ctx.attempts.count("backoff") >= 3
    })
    .await?;
    let gaps = ctx.attempts.gaps("backoff");
    ensure!(
        gaps[0] >= Duration::from_millis(400) && gaps[1] >= Duration::from_millis(800),
        "the controller's backoff is 400 ms doubling; retried after {gaps:?}"
    );
    Ok(())
}

/// Counts list and watch requests for configmaps (zero-latency rules that fire on every match).
fn counting(config: FaultConfig) -> FaultConfig {
    config
        .with_rule(
            FaultRule::latency(FaultLatency::fixed(Duration::ZERO))
                .verbs(["list"])
                .resources(["configmaps"])
                .named("lists"),
        )
        .with_rule(
            FaultRule::latency(FaultLatency::fixed(Duration::ZERO))
                .verbs(["watch"])
                .resources(["configmaps"])
                .named("watches"),
        )
}

fn matched(env: &TestEnv, rule: &str) -> u64 {
    env.faults().stats().rule(rule).map_or(0, |r| r.matched)
}

#[tokio::test]
async fn cache_resumes_closed_watches_without_relisting_and_relists_once_on_410() -> Result<()> {
    let env = TestEnv::start().await?;
    let closing = || {
        FaultRule::close_watch_after_events(3)
            .resources(["configmaps"])
            .named("close")
    };
    env.faults()
        .set(counting(FaultConfig::default()).with_rule(closing()))?;
    let cache = Cache::new(env.client());
    let informer = cache.informer::<ConfigMap>(Scope::namespace("default"))?;
    informer.wait_synced().await?;
    let labelled = |informer: &korral_runtime::cache::Informer<ConfigMap>| {
        informer
            .list()
            .iter()
            .filter(|cm| {
                cm.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("faults"))
            })
            .count()
    };

    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..10 {
        cms.create(&PostParams::default(), &configmap(&format!("cm-{i}")))
            .await?;
    }
    wait_until(WAIT, "10 configmaps in the cache", || async {
        labelled(&informer) == 10
    })
    .await?;
    let (lists, watches) = (matched(&env, "lists"), matched(&env, "watches"));
    ensure!(
        lists == 1,
        "{lists} lists: a closed watch must resume, not relist"
    );
    ensure!(
        watches >= 4,
        "{watches} watches for 10 events closed every 3 (resumed from the last resourceVersion)"
    );
    ensure!(env.faults().stats().injected("close") >= 3);

    // Now the next resume is answered 410 Expired once: one relist, then watching again.
    env.faults().set(
        counting(FaultConfig::default())
            .with_rule(closing())
            .with_rule(
                FaultRule::expire_watch_resume()
                    .resources(["configmaps"])
                    .nth(1)
                    .named("expire"),
            ),
    )?;
    for i in 10..20 {
        cms.create(&PostParams::default(), &configmap(&format!("cm-{i}")))
            .await?;
    }
    wait_until(WAIT, "20 configmaps in the cache", || async {
        labelled(&informer) == 20
    })
    .await?;
    ensure!(env.faults().stats().injected("expire") == 1);
    wait_until(WAIT, "the relist", || async { matched(&env, "lists") >= 1 }).await?;
    // The cache keeps serving: a change after the relist arrives by watch, with no more lists.
    cms.patch(
        "cm-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "after"}})),
    )
    .await?;
    let cm0 = korral_runtime::reconcile::ObjectRef::namespaced("default", "cm-0");
    wait_until(WAIT, "the change after the relist", || async {
        informer
            .get(&cm0)
            .and_then(|cm| cm.data.clone())
            .is_some_and(|d| d.get("k").map(String::as_str) == Some("after"))
    })
    .await?;
    let lists = matched(&env, "lists");
    ensure!(
        lists == 1,
        "{lists} relists after one 410 (want exactly one)"
    );
    Ok(())
}

/// The mixed-profile reconciler: copies each ConfigMap's data into an owned Secret, then marks
/// the ConfigMap with the data it copied (an annotation), all through a client without retries.
async fn copy_to_secret(cm: Arc<ConfigMap>, ctx: Arc<Probe>) -> ReconcileResult {
    let name = cm.metadata.name.clone().unwrap_or_default();
    ctx.attempts.record(&name);
    let value = cm
        .data
        .as_ref()
        .and_then(|d| d.get("k"))
        .cloned()
        .unwrap_or_default();
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), "default");
    let wanted = BTreeMap::from([("k".to_owned(), ByteString(value.clone().into_bytes()))]);
    match secrets.get_opt(&name).await? {
        None => {
            let secret = Secret {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some("default".into()),
                    ..ObjectMeta::default()
                },
                data: Some(wanted),
                ..Secret::default()
            };
            secrets.create(&PostParams::default(), &secret).await?;
        }
        Some(mut secret) => {
            let current = secret
                .data
                .as_ref()
                .and_then(|d| d.get("k"))
                .map(|b| String::from_utf8_lossy(&b.0).into_owned());
            if current.as_deref() != Some(value.as_str()) {
                secret.data = Some(wanted);
                secrets
                    .replace(&name, &PostParams::default(), &secret)
                    .await?;
            }
        }
    }
    let copied = cm
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("copied"));
    if copied != Some(&value) {
        let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), "default");
        cms.patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"copied": value}}})),
        )
        .await?;
    }
    Ok(Action::await_change())
}

#[tokio::test]
async fn no_hot_loop_and_convergence_under_mixed_faults() -> Result<()> {
    const OBJECTS: usize = 30;
    let env = TestEnv::start().await?;
    env.faults().set(FaultConfig::flaky_control_plane(7))?;
    let client = no_retry_client(&env).await?;
    let ctx = Arc::new(Probe {
        client: client.clone(),
        attempts: Attempts::default(),
    });
    let controller = Controller::new(Cache::new(client.clone()), "mixed")
        .for_::<ConfigMap>(Scope::namespace("default"))
        .max_concurrent_reconciles(4)
        .metrics_registry(Registry::new());
    let (_stop, shutdown) = stopper();
    tokio::spawn(controller.run(copy_to_secret, Arc::clone(&ctx), shutdown));

    // The test's own writes go through kube's retrying client (they are faulted too).
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..OBJECTS {
        cms.create(&PostParams::default(), &configmap(&format!("mixed-{i}")))
            .await
            .with_context(|| format!("creating mixed-{i}"))?;
    }
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let converged = || async {
        let Ok(list) = cms.list(&Default::default()).await else {
            return false;
        };
        let mut done = 0;
        for cm in list.items.iter().filter(|cm| {
            cm.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("mixed-"))
        }) {
            let name = cm.metadata.name.clone().unwrap_or_default();
            let want = cm.data.as_ref().and_then(|d| d.get("k")).cloned();
            let annotated = cm
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("copied"));
            let Ok(Some(secret)) = secrets.get_opt(&name).await else {
                return false;
            };
            let got = secret
                .data
                .as_ref()
                .and_then(|d| d.get("k"))
                .map(|b| String::from_utf8_lossy(&b.0).into_owned());
            if got.is_some() && got == want && annotated == want.as_ref() {
                done += 1;
            }
        }
        done == OBJECTS
    };
    wait_until(Duration::from_secs(60), "every object converged", converged).await?;

    let stats = env.faults().stats();
    ensure!(
        stats.by_action("error") > 0,
        "the profile injected no error: {stats:?}"
    );
    // Every object: its creation, its annotation's event, and one retry per injected fault on
    // its path; a hot loop would be orders of magnitude above.
    let max = ctx.attempts.max_per_object();
    ensure!(
        max <= 15,
        "an object was reconciled {max} times under the mixed profile (hot loop?)"
    );
    // Quiet once converged: no more reconciles without events.
    let total = |ctx: &Probe| -> usize {
        (0..OBJECTS)
            .map(|i| ctx.attempts.count(&format!("mixed-{i}")))
            .sum()
    };
    let before = total(&ctx);
    stays(
        Duration::from_secs(2),
        "no reconcile after convergence",
        || async { total(&ctx) == before },
    )
    .await?;
    Ok(())
}
