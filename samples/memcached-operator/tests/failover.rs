//! Leader failover under crash, with the real binary: two `memcached-operator` processes share
//! one Lease on an embedded control plane that answers every request 2 ms late (a loaded
//! cluster's round trip) and runs the Deployments' pods (simulation). While the leader
//! reconciles many Memcacheds it is killed with SIGKILL. The standby must take over within
//! lease duration + retry period of the kill, must not have written anything before it held
//! the Lease (so no object is written by both processes once the leader is gone, and none while
//! it lived), and every Memcached must converge.
//!
//! Writes are attributed to a process by its own log: the reconciler logs every write it makes
//! (`created the Deployment`, `updated the Deployment`, `updated status.nodes`) with a
//! timestamp, and each process logs its leader election identity.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use korral::prelude::*;
use korral_testenv::{FaultConfig, TestEnv, wait_until};
use kube::api::{ListParams, PostParams};
use memcached_operator::{Memcached, MemcachedSpec};

const BIN: &str = env!("CARGO_BIN_EXE_memcached-operator");
const LEASE: &str = "memcached-operator.example.com";
const LEASE_DURATION: Duration = Duration::from_secs(2);
const RENEW_DEADLINE: Duration = Duration::from_millis(1500);
const RETRY_PERIOD: Duration = Duration::from_millis(250);
const OBJECTS: usize = 24;
const SIZE: i32 = 2;
const WAIT: Duration = Duration::from_secs(60);
/// The log messages of the reconciler's writes.
const WRITES: [&str; 3] = [
    "created the Deployment",
    "updated the Deployment",
    "updated status.nodes",
];

/// One operator process, its log file, and a SIGKILL on drop if still running.
struct Operator {
    child: Child,
    log: PathBuf,
}

impl Operator {
    fn start(env: &TestEnv, dir: &Path, name: &str) -> Result<Self> {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log)?;
        let err = out.try_clone()?;
        let child = Command::new(BIN)
            .env("KUBECONFIG", env.kubeconfig_path())
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .args(["--namespace", "default"])
            .args([
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "0",
            ])
            .args(["--leader-elect", "--leader-election-namespace", "default"])
            .args(["--leader-elect-lease-duration", &secs(LEASE_DURATION)])
            .args(["--leader-elect-renew-deadline", &secs(RENEW_DEADLINE)])
            .args(["--leader-elect-retry-period", &secs(RETRY_PERIOD)])
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        Ok(Self { child, log })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log)
            .map(|text| strip_ansi(&text))
            .unwrap_or_default()
    }

    /// The identity this process runs leader election with, from its log.
    fn identity(&self) -> Option<String> {
        self.log()
            .lines()
            .find(|l| l.contains("starting leader election"))
            .and_then(|l| field(l, "identity"))
    }

    /// `(when, object name)` of every write this process logged.
    fn writes(&self) -> Result<Vec<(Timestamp, String)>> {
        let mut out = Vec::new();
        for line in self.log().lines() {
            if !WRITES.iter().any(|w| line.contains(w)) {
                continue;
            }
            let when: Timestamp = line
                .split_whitespace()
                .next()
                .context("a timestamp")?
                .parse()
                .with_context(|| format!("the timestamp of {line:?}"))?;
            let name = field(line, "name").with_context(|| format!("the name in {line:?}"))?;
            out.push((when, name));
        }
        Ok(out)
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn secs(d: Duration) -> String {
    d.as_secs_f64().to_string()
}

/// `key=value` from a log line (the value ends at the next space).
fn field(line: &str, key: &str) -> Option<String> {
    let pattern = format!("{key}=");
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(pattern.as_str()))
        .map(|v| v.trim_matches('"').to_owned())
}

/// Removes ANSI colour sequences, in case the log is coloured anyway.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `name → sorted names of its Ready pods`.
async fn ready_pods(pods: &Api<Pod>) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let Ok(list) = pods
        .list(&ListParams::default().labels("app=memcached"))
        .await
    else {
        return out;
    };
    for pod in list.items {
        let ready = pod.metadata.deletion_timestamp.is_none()
            && pod
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        if let (true, Some(cr)) = (ready, pod.labels().get("memcached_cr")) {
            out.entry(cr.clone()).or_default().push(pod.name_any());
        }
    }
    for names in out.values_mut() {
        names.sort();
    }
    out
}

async fn lease_holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt(LEASE)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec?.holder_identity)
        .filter(|h| !h.is_empty())
}

#[tokio::test]
async fn standby_takes_over_a_sigkilled_leader_without_double_writes_and_converges() -> Result<()> {
    let env = TestEnv::builder()
        .crd::<Memcached>()
        .simulation(true)
        .faults(FaultConfig::latency(Duration::from_millis(2)))
        .start()
        .await?;
    let dir = tempfile::tempdir()?;
    let leases: Api<Lease> = Api::namespaced(env.client(), "default");
    let memcacheds: Api<Memcached> = Api::namespaced(env.client(), "default");
    let pods: Api<Pod> = Api::namespaced(env.client(), "default");

    // The first process takes the Lease, then the second waits as a standby.
    let mut leader = Operator::start(&env, dir.path(), "first")?;
    wait_until(WAIT, "the first process to lead", || async {
        leader.identity().is_some() && lease_holder(&leases).await == leader.identity()
    })
    .await?;
    let leader_id = leader.identity().context("the leader's identity")?;
    let standby = Operator::start(&env, dir.path(), "second")?;
    wait_until(WAIT, "the second process to observe the leader", || async {
        standby
            .log()
            .lines()
            .any(|l| l.contains("new leader observed") && l.contains(leader_id.as_str()))
    })
    .await?;
    let standby_id = standby.identity().context("the standby's identity")?;
    ensure!(standby_id != leader_id, "both processes are {leader_id}");

    // Many Memcacheds; kill the leader while it is in the middle of them.
    for i in 0..OBJECTS {
        memcacheds
            .create(
                &PostParams::default(),
                &Memcached::new(&format!("memcached-{i}"), MemcachedSpec { size: SIZE }),
            )
            .await?;
    }
    wait_until(WAIT, "the leader to have written a few objects", || async {
        leader.writes().map(|w| w.len()).unwrap_or_default() >= OBJECTS / 2
    })
    .await?;
    let killed = Timestamp::now();
    leader.child.kill().context("SIGKILL")?;
    let status = leader.child.wait()?;
    ensure!(
        !status.success(),
        "the leader exited with {status} after SIGKILL"
    );
    let done_before_kill = {
        let ready = ready_pods(&pods).await;
        let list = memcacheds.list(&ListParams::default()).await?;
        list.items
            .iter()
            .filter(|m| {
                let want = ready.get(&m.name_any());
                want.is_some_and(|w| w.len() == SIZE as usize)
                    && m.status.as_ref().map(|s| &s.nodes) == want
            })
            .count()
    };

    // The standby takes over within lease duration + retry period of the kill.
    wait_until(WAIT, "the standby to hold the Lease", || async {
        lease_holder(&leases).await.as_deref() == Some(standby_id.as_str())
    })
    .await?;
    let spec = leases.get(LEASE).await?.spec.context("the Lease's spec")?;
    let acquired = spec.acquire_time.clone().context("acquireTime")?.0;
    let takeover = acquired.duration_since(killed);
    let bound = SignedDuration::try_from(LEASE_DURATION + RETRY_PERIOD)?;
    eprintln!(
        "took over {takeover:#} after the SIGKILL (bound {bound:#}); {done_before_kill} of {OBJECTS} converged at the kill"
    );
    ensure!(
        takeover > SignedDuration::ZERO,
        "the standby acquired the Lease {:#} before the leader was killed",
        -takeover
    );
    ensure!(takeover <= bound, "took over {takeover:#} after the kill");
    ensure!(
        spec.lease_transitions == Some(1),
        "one change of holder: {spec:?}"
    );

    // Everything converges under the new leader.
    wait_until(WAIT, "every Memcached lists its ready pods", || async {
        let ready = ready_pods(&pods).await;
        let Ok(list) = memcacheds.list(&ListParams::default()).await else {
            return false;
        };
        list.items.len() == OBJECTS
            && list.items.iter().all(|m| {
                let want = ready.get(&m.name_any());
                want.is_some_and(|w| w.len() == SIZE as usize)
                    && m.status.as_ref().map(|s| &s.nodes) == want
            })
    })
    .await?;

    // Who wrote what, and when: the killed leader only before the kill, the standby only once
    // it held the Lease; so no object was written by both after the takeover (nor while the
    // first process led).
    let first = leader.writes()?;
    let second = standby.writes()?;
    ensure!(!first.is_empty(), "the leader logged no write");
    ensure!(
        !second.is_empty(),
        "the standby wrote nothing after the takeover ({done_before_kill} of {OBJECTS} had converged)"
    );
    if let Some((when, name)) = first.iter().find(|(when, _)| *when > killed) {
        bail!("the killed leader wrote {name} at {when}, after the kill at {killed}");
    }
    if let Some((when, name)) = second.iter().find(|(when, _)| *when < acquired) {
        bail!("the standby wrote {name} at {when}, before it acquired the Lease at {acquired}");
    }
    let by_first: BTreeSet<&String> = first.iter().map(|(_, n)| n).collect();
    let by_second: BTreeSet<&String> = second.iter().map(|(_, n)| n).collect();
    eprintln!(
        "writes: {} by the first process ({} objects), {} by the second ({} objects)",
        first.len(),
        by_first.len(),
        second.len(),
        by_second.len()
    );
    Ok(())
}
