//! Aggregated API servers, as kube-aggregator serves them: an APIService with a `service`
//! hands its group version to an extension API server reached over HTTPS.
//!
//! - [`front_proxy`]: the identity the server presents to extension servers (a front-proxy
//!   client certificate signed by a requestheader CA) and the
//!   `kube-system/extension-apiserver-authentication` ConfigMap telling them how to trust it.
//! - [`resolve`]: where a Service is reached (a mapped local address, else a ready endpoint of
//!   its EndpointSlices, as upstream's endpoint routing).
//! - [`transport`]: the TLS connection to an extension server (its `caBundle`, the server name
//!   `<service>.<namespace>.svc`, the client certificate), the kept-alive connections of each
//!   APIService (a new pool when its spec or address changes) and Go's wording of failures.
//! - [`proxy`]: forwarding a client's request with the user's identity in `X-Remote-*`
//!   headers, streaming the answer back.
//! - [`upgrade`]: upgrade requests (`exec`, `attach`, `port-forward`), the client's and the
//!   backend's connections spliced on `101 Switching Protocols`.
//! - [`openapi`]: the extension servers' OpenAPI documents, downloaded by the probes and
//!   merged into the server's `/openapi/v2` and `/openapi/v3`.
//! - [`probe`]: the availability controller's discovery check, which also fills the discovery
//!   cache; [`discovery`] merges the cached groups into `/apis`.
//!
//! The [`Aggregator`] holds the per-server state: the front-proxy identity, the last check of
//! each aggregated APIService, the probes running and each APIService's TLS configuration.

pub(crate) mod discovery;
pub(crate) mod front_proxy;
pub(crate) mod openapi;
pub(crate) mod probe;
pub(crate) mod proxy;
pub(crate) mod resolve;
pub(crate) mod transport;
pub(crate) mod upgrade;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde_json::Value;

use crate::kinds::printer::text;
use crate::meta;
use crate::objects::Objects;
use crate::storage::Snapshot;

/// The outcome of an APIService's last discovery check.
#[derive(Debug, Clone)]
pub(crate) struct Check {
    /// The APIService spec the check was made for (see [`fingerprint`]).
    pub fingerprint: String,
    /// Why the check failed (the message of the `FailedDiscoveryCheck` condition); `None`
    /// when it passed.
    pub error: Option<String>,
    /// The version's discovery entry (`APIVersionDiscovery` without freshness) from the last
    /// check that read one; kept, stale, while later checks fail.
    pub discovery: Option<Value>,
}

/// A running probe of one APIService.
struct Probe {
    /// The APIService spec it checks.
    fingerprint: String,
    /// The task, aborted when the APIService changes or goes.
    task: tokio::task::JoinHandle<()>,
    /// Wakes the probe for a check now.
    wake: Arc<tokio::sync::Notify>,
}

/// A connection pool with the APIService fingerprint and address it was made for.
type PoolEntry = (String, std::net::SocketAddr, Arc<transport::Pool>);

/// What probes, the proxy and discovery share.
#[derive(Default)]
struct Shared {
    /// The last check of each aggregated APIService, by name.
    checks: Mutex<HashMap<String, Check>>,
    /// The probe running for each aggregated APIService, by name.
    probes: Mutex<HashMap<String, Probe>>,
    /// The TLS client configuration of each aggregated APIService, by name, with the
    /// fingerprint it was built for (reused, so TLS sessions resume).
    tls: Mutex<HashMap<String, (String, Arc<rustls::ClientConfig>)>>,
    /// The OpenAPI documents of the aggregated APIServices.
    specs: openapi::Specs,
    /// The kept-alive connections of each aggregated APIService, by name, with the
    /// fingerprint and address they were made for.
    pools: Mutex<HashMap<String, PoolEntry>>,
}

/// The per-server state of API aggregation. Dropping it (with the server's object layer,
/// which probes only hold weakly) stops every probe.
#[derive(Default)]
pub(crate) struct Aggregator {
    /// Checks, probes and TLS configurations.
    shared: Shared,
    /// The front-proxy identity, made on first use.
    identity: OnceLock<Result<Arc<front_proxy::Identity>, String>>,
    /// The object layer, for probes writing status (weak: it owns this aggregator).
    objects: OnceLock<Weak<Objects>>,
}

impl std::fmt::Debug for Aggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aggregator").finish_non_exhaustive()
    }
}

/// What identifies an APIService's backend: the spec fields a check depends on.
pub(crate) fn fingerprint(obj: &Value) -> String {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let pick = |k: &str| spec.get(k).cloned().unwrap_or(Value::Null);
    serde_json::json!([
        pick("group"),
        pick("version"),
        pick("service"),
        pick("caBundle"),
        pick("insecureSkipTLSVerify"),
    ])
    .to_string()
}

/// The extension server of the aggregated APIService `obj`: its Service resolved (see
/// [`resolve`]) and the TLS configuration its spec asks for. Errors are what upstream reports.
pub(crate) fn backend(
    objects: &Objects,
    snapshot: &Snapshot,
    obj: &Value,
) -> Result<transport::Backend, BackendError> {
    let Some(service) = meta::path(obj, "spec.service").filter(|s| s.is_object()) else {
        return Err(BackendError::Resolve("not an aggregated APIService".into()));
    };
    let namespace = text(service, "namespace");
    let name = text(service, "name");
    let port = service
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .unwrap_or(443);
    let addr = resolve::endpoint(snapshot, objects.webhook_services(), namespace, name, port)
        .map_err(BackendError::Resolve)?;
    let aggregator = objects.aggregator();
    let tls = aggregator.tls_config(obj)?;
    let pool = aggregator.pool(obj, addr);
    Ok(transport::Backend {
        addr,
        server_name: format!("{name}.{namespace}.svc"),
        tls,
        pool,
    })
}

/// Why an APIService's extension server cannot be called.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum BackendError {
    /// Its Service does not resolve to an address.
    #[error("{0}")]
    Resolve(String),
    /// The TLS configuration cannot be built (upstream's transport building error).
    #[error("{0}")]
    Transport(String),
}

impl Aggregator {
    /// Binds the aggregator to the server's object layer (probes write status through it).
    pub(crate) fn attach(objects: &Arc<Objects>) {
        let _ = objects.aggregator().objects.set(Arc::downgrade(objects));
    }

    /// The front-proxy identity, generated on first use.
    pub(crate) fn identity(&self) -> Result<Arc<front_proxy::Identity>, String> {
        self.identity
            .get_or_init(|| {
                front_proxy::Identity::generate()
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }

    /// Uses the front-proxy CA kept in `dir` (see [`front_proxy::Identity::load_or_generate`])
    /// unless an identity was already made.
    pub(crate) fn load_identity(&self, dir: &std::path::Path) -> Result<(), String> {
        self.identity
            .get_or_init(|| {
                front_proxy::Identity::load_or_generate(dir)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map(|_| ())
    }

    /// The TLS client configuration of the APIService `obj`, built once per spec.
    fn tls_config(&self, obj: &Value) -> Result<Arc<rustls::ClientConfig>, BackendError> {
        let name = meta::name(obj);
        let fingerprint = fingerprint(obj);
        let mut cache = self.shared.tls.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((built_for, config)) = cache.get(name)
            && *built_for == fingerprint
        {
            return Ok(config.clone());
        }
        let identity = self.identity().map_err(BackendError::Transport)?;
        let config = transport::tls_config(obj, &identity).map_err(BackendError::Transport)?;
        cache.insert(name.to_string(), (fingerprint, config.clone()));
        Ok(config)
    }

    /// The OpenAPI documents downloaded from the extension servers.
    pub(crate) fn specs(&self) -> &openapi::Specs {
        &self.shared.specs
    }

    /// The connection pool of the APIService `obj` reached at `addr`: a new one when its
    /// spec (`caBundle`, service) or address changed.
    fn pool(&self, obj: &Value, addr: std::net::SocketAddr) -> Arc<transport::Pool> {
        let name = meta::name(obj);
        let fingerprint = fingerprint(obj);
        let mut pools = self.shared.pools.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((made_for, at, pool)) = pools.get(name)
            && *made_for == fingerprint
            && *at == addr
        {
            return pool.clone();
        }
        let pool = Arc::new(transport::Pool::default());
        pools.insert(name.to_string(), (fingerprint, addr, pool.clone()));
        pool
    }

    /// The last check of the APIService `name` for its current spec.
    pub(crate) fn check(&self, name: &str, fingerprint: &str) -> Option<Check> {
        self.shared
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .filter(|c| c.fingerprint == fingerprint)
            .cloned()
    }

    /// The last check of every aggregated APIService, by name.
    pub(crate) fn discovered(&self) -> HashMap<String, Check> {
        self.shared
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records a check.
    pub(crate) fn record(&self, name: &str, check: Check) {
        self.shared
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string(), check);
    }

    /// Makes sure the APIService `obj` (aggregated, past the availability pre-checks) is being
    /// probed for its current spec: starts a probe unless one runs for that spec.
    pub(crate) fn ensure_probe(&self, obj: &Value) {
        let name = crate::meta::name(obj).to_string();
        let fingerprint = fingerprint(obj);
        let mut probes = self.shared.probes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(running) = probes.get(&name)
            && running.fingerprint == fingerprint
            && !running.task.is_finished()
        {
            return;
        }
        let Some(objects) = self.objects.get().cloned() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if let Some(old) = probes.remove(&name) {
            old.task.abort();
        }
        let wake = Arc::new(tokio::sync::Notify::new());
        let task = handle.spawn(probe::run(
            objects,
            name.clone(),
            fingerprint.clone(),
            wake.clone(),
        ));
        probes.insert(
            name,
            Probe {
                fingerprint,
                task,
                wake,
            },
        );
    }

    /// Has the probe of the APIService `name` check again now (the proxy could not reach
    /// its server), rather than at its next round.
    pub(crate) fn recheck(&self, name: &str) {
        if let Some(probe) = self
            .shared
            .probes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
        {
            probe.wake.notify_one();
        }
    }

    /// Stops the probes of APIServices not in `probing` and forgets the checks of those not
    /// in `existing` (a check outlives failing pre-checks: its discovery stays, stale).
    pub(crate) fn retain(&self, probing: &HashSet<String>, existing: &HashSet<String>) {
        self.shared
            .probes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|name, probe| {
                let kept = probing.contains(name);
                if !kept {
                    probe.task.abort();
                }
                kept
            });
        self.shared
            .checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|name, _| existing.contains(name));
        self.shared
            .tls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|name, _| existing.contains(name));
        self.shared.specs.retain(|name| existing.contains(name));
        self.shared
            .pools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|name, _| existing.contains(name));
    }
}

impl Drop for Aggregator {
    fn drop(&mut self) {
        for (_, probe) in self
            .shared
            .probes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
        {
            probe.task.abort();
        }
    }
}
