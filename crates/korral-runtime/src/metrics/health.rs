//! Health probes: named liveness (`/healthz`) and readiness (`/readyz`) checks, served as
//! controller-runtime serves them.
//!
//! - `GET /healthz`, `GET /readyz`: runs every check of the endpoint in the order added. All pass:
//!   200 `ok` (with `?verbose`, one `[+]name ok` line per check and `<endpoint> check passed`).
//!   One fails: 500, always verbose, failing checks as `[-]name failed: reason withheld` (the
//!   reason is logged, not served) and a last line `<endpoint> check failed`.
//!   `?exclude=name` (repeatable) skips a check.
//! - `GET /healthz/<name>`, `GET /readyz/<name>`: runs one check: 200 `ok`, or 500
//!   `internal server error: <reason>`; 404 for an unknown name.
//! - An endpoint without checks has an implicit `ping` check that always passes.
//!
//! Checks are sync closures (`Fn() -> Result<(), String>`) or async ones; each run is bounded by
//! a timeout (10 s by default) after which it counts as failed.

use std::fmt;
use std::fmt::Write as _;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;

use super::server::{self, Body, Handler, ServeError, ServerHandle, Shutdown};

/// The default bound on one run of a check.
const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

const TEXT_PLAIN: &str = "text/plain; charset=utf-8";

type CheckFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
type CheckFn = Arc<dyn Fn() -> CheckFuture + Send + Sync>;

/// A check that always passes (controller-runtime's `healthz.Ping`).
pub fn ping() -> Result<(), String> {
    Ok(())
}

/// Which endpoint a check belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Healthz,
    Readyz,
}

impl Probe {
    fn as_str(self) -> &'static str {
        match self {
            Self::Healthz => "healthz",
            Self::Readyz => "readyz",
        }
    }
}

/// Why a check could not be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddCheckError {
    /// The name is empty, or contains `/`, whitespace or control characters.
    #[error("adding {probe} check {name:?}: invalid name")]
    InvalidName {
        /// `healthz` or `readyz`.
        probe: &'static str,
        /// The rejected name.
        name: String,
    },
    /// A check of this name exists already on this endpoint.
    #[error("adding {probe} check {name:?}: a check with this name already exists")]
    AlreadyExists {
        /// `healthz` or `readyz`.
        probe: &'static str,
        /// The name.
        name: String,
    },
}

/// The named liveness and readiness checks served by [`serve_probes`]. Cheap to clone; clones
/// share the checks, so checks added after the server started are served too.
#[derive(Clone, Default)]
pub struct HealthChecks {
    inner: Arc<RwLock<Checks>>,
}

#[derive(Default)]
struct Checks {
    healthz: Vec<(String, CheckFn)>,
    readyz: Vec<(String, CheckFn)>,
    timeout: Option<Duration>,
}

impl Checks {
    fn list(&self, probe: Probe) -> &Vec<(String, CheckFn)> {
        match probe {
            Probe::Healthz => &self.healthz,
            Probe::Readyz => &self.readyz,
        }
    }

    fn list_mut(&mut self, probe: Probe) -> &mut Vec<(String, CheckFn)> {
        match probe {
            Probe::Healthz => &mut self.healthz,
            Probe::Readyz => &mut self.readyz,
        }
    }
}

impl fmt::Debug for HealthChecks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let checks = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let names = |list: &Vec<(String, CheckFn)>| -> Vec<String> {
            list.iter().map(|(name, _)| name.clone()).collect()
        };
        f.debug_struct("HealthChecks")
            .field("healthz", &names(&checks.healthz))
            .field("readyz", &names(&checks.readyz))
            .finish()
    }
}

/// The outcome of running the checks of one endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// Each check run, in order, with its error if it failed.
    pub results: Vec<(String, Result<(), String>)>,
}

impl CheckReport {
    /// Whether every check passed.
    pub fn is_ok(&self) -> bool {
        self.results.iter().all(|(_, result)| result.is_ok())
    }

    /// The names of the checks that failed.
    pub fn failed(&self) -> impl Iterator<Item = &str> {
        self.results
            .iter()
            .filter(|(_, result)| result.is_err())
            .map(|(name, _)| name.as_str())
    }
}

fn valid_check_name(name: &str) -> bool {
    !name.is_empty()
        && !name
            .chars()
            .any(|c| c == '/' || c.is_whitespace() || c.is_control())
}

impl HealthChecks {
    /// No checks yet (each endpoint answers with an implicit `ping` until one is added).
    pub fn new() -> Self {
        Self::default()
    }

    /// Bounds each run of a check; a check still running after `timeout` counts as failed.
    /// Applies to async checks (a sync check cannot be interrupted). Default 10 s.
    pub fn set_check_timeout(&self, timeout: Duration) {
        self.write().timeout = Some(timeout);
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Checks> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn add(&self, probe: Probe, name: String, check: CheckFn) -> Result<(), AddCheckError> {
        if !valid_check_name(&name) {
            return Err(AddCheckError::InvalidName {
                probe: probe.as_str(),
                name,
            });
        }
        let mut checks = self.write();
        let list = checks.list_mut(probe);
        if list.iter().any(|(existing, _)| *existing == name) {
            return Err(AddCheckError::AlreadyExists {
                probe: probe.as_str(),
                name,
            });
        }
        tracing::debug!(probe = probe.as_str(), check = %name, "adding health check");
        list.push((name, check));
        Ok(())
    }

    fn sync_check<F>(check: F) -> CheckFn
    where
        F: Fn() -> Result<(), String> + Send + Sync + 'static,
    {
        Arc::new(move || -> CheckFuture {
            let result = check();
            Box::pin(async move { result })
        })
    }

    fn async_check<F, Fut>(check: F) -> CheckFn
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        Arc::new(move || -> CheckFuture { Box::pin(check()) })
    }

    /// Adds a liveness check, served on `/healthz` and `/healthz/<name>`.
    pub fn add_healthz<F>(&self, name: impl Into<String>, check: F) -> Result<(), AddCheckError>
    where
        F: Fn() -> Result<(), String> + Send + Sync + 'static,
    {
        self.add(Probe::Healthz, name.into(), Self::sync_check(check))
    }

    /// Adds an async liveness check, served on `/healthz` and `/healthz/<name>`.
    pub fn add_healthz_async<F, Fut>(
        &self,
        name: impl Into<String>,
        check: F,
    ) -> Result<(), AddCheckError>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.add(Probe::Healthz, name.into(), Self::async_check(check))
    }

    /// Adds a readiness check, served on `/readyz` and `/readyz/<name>`.
    pub fn add_readyz<F>(&self, name: impl Into<String>, check: F) -> Result<(), AddCheckError>
    where
        F: Fn() -> Result<(), String> + Send + Sync + 'static,
    {
        self.add(Probe::Readyz, name.into(), Self::sync_check(check))
    }

    /// Adds an async readiness check, served on `/readyz` and `/readyz/<name>`.
    pub fn add_readyz_async<F, Fut>(
        &self,
        name: impl Into<String>,
        check: F,
    ) -> Result<(), AddCheckError>
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.add(Probe::Readyz, name.into(), Self::async_check(check))
    }

    /// The checks of `probe` (with the implicit `ping` if there are none) and the timeout,
    /// copied out so no lock is held while they run.
    fn snapshot(&self, probe: Probe) -> (Vec<(String, CheckFn)>, Duration) {
        let checks = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        let mut list = checks.list(probe).clone();
        if list.is_empty() {
            list.push(("ping".to_owned(), Self::sync_check(ping)));
        }
        (list, checks.timeout.unwrap_or(DEFAULT_CHECK_TIMEOUT))
    }

    async fn run(check: &CheckFn, timeout: Duration) -> Result<(), String> {
        match tokio::time::timeout(timeout, check()).await {
            Ok(result) => result,
            Err(_) => Err(format!("timed out after {timeout:?}")),
        }
    }

    async fn report(&self, probe: Probe) -> CheckReport {
        let (list, timeout) = self.snapshot(probe);
        let mut results = Vec::with_capacity(list.len());
        for (name, check) in list {
            let result = Self::run(&check, timeout).await;
            results.push((name, result));
        }
        CheckReport { results }
    }

    /// Runs the liveness checks, as `GET /healthz` does.
    pub async fn check_healthz(&self) -> CheckReport {
        self.report(Probe::Healthz).await
    }

    /// Runs the readiness checks, as `GET /readyz` does.
    pub async fn check_readyz(&self) -> CheckReport {
        self.report(Probe::Readyz).await
    }
}

/// Decodes `%XX` escapes (and `+` as space when `plus_is_space`); malformed escapes are kept.
fn percent_decode(input: &str, plus_is_space: bool) -> String {
    fn hex(b: u8) -> Option<u8> {
        match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            b'A'..=b'F' => Some(b - b'A' + 10),
            _ => None,
        }
    }
    let bytes = input.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'%' => {
                let high = bytes.get(i + 1).copied().and_then(hex);
                let low = bytes.get(i + 2).copied().and_then(hex);
                if let (Some(high), Some(low)) = (high, low) {
                    out.push(high << 4 | low);
                    i += 3;
                    continue;
                }
                out.push(b);
            }
            b'+' if plus_is_space => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The query's `(key, value)` pairs, decoded.
fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key, true), percent_decode(value, true))
        })
        .collect()
}

async fn probe_response(checks: HealthChecks, request: Request<Incoming>) -> Response<Body> {
    let path = request.uri().path();
    let (probe, rest) = if let Some(rest) = path.strip_prefix("/healthz") {
        (Probe::Healthz, rest)
    } else if let Some(rest) = path.strip_prefix("/readyz") {
        (Probe::Readyz, rest)
    } else {
        return server::not_found();
    };
    match rest.strip_prefix('/') {
        None if rest.is_empty() => {
            let query = query_pairs(request.uri().query().unwrap_or(""));
            aggregate_response(&checks, probe, &query).await
        }
        None => server::not_found(),
        Some("") => {
            let query = query_pairs(request.uri().query().unwrap_or(""));
            aggregate_response(&checks, probe, &query).await
        }
        Some(name) => single_response(&checks, probe, &percent_decode(name, false)).await,
    }
}

async fn aggregate_response(
    checks: &HealthChecks,
    probe: Probe,
    query: &[(String, String)],
) -> Response<Body> {
    let verbose = query.iter().any(|(key, _)| key == "verbose");
    let mut excluded: Vec<&str> = query
        .iter()
        .filter(|(key, _)| key == "exclude")
        .map(|(_, value)| value.as_str())
        .collect();
    excluded.sort_unstable();
    excluded.dedup();
    let (list, timeout) = checks.snapshot(probe);
    let mut out = String::new();
    let mut failed = false;
    for (name, check) in &list {
        if let Some(at) = excluded.iter().position(|e| e == name) {
            excluded.swap_remove(at);
            let _ = writeln!(out, "[+]{name} excluded: ok");
            continue;
        }
        match HealthChecks::run(check, timeout).await {
            Ok(()) => {
                let _ = writeln!(out, "[+]{name} ok");
            }
            Err(reason) => {
                // The endpoint is public: the reason goes to the log, not the response.
                tracing::info!(probe = probe.as_str(), check = %name, %reason, "health check failed");
                let _ = writeln!(out, "[-]{name} failed: reason withheld");
                failed = true;
            }
        }
    }
    if !excluded.is_empty() {
        excluded.sort_unstable();
        excluded.dedup();
        let names: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
        let _ = writeln!(
            out,
            "warn: some health checks cannot be excluded: no matches for {}",
            names.join(",")
        );
    }
    let probe_name = probe.as_str();
    if failed {
        let _ = writeln!(out, "{probe_name} check failed");
        return server::text_response(StatusCode::INTERNAL_SERVER_ERROR, TEXT_PLAIN, out);
    }
    if !verbose {
        return server::text_response(StatusCode::OK, TEXT_PLAIN, "ok");
    }
    let _ = writeln!(out, "{probe_name} check passed");
    server::text_response(StatusCode::OK, TEXT_PLAIN, out)
}

async fn single_response(checks: &HealthChecks, probe: Probe, name: &str) -> Response<Body> {
    let (list, timeout) = checks.snapshot(probe);
    let Some((_, check)) = list.iter().find(|(n, _)| n == name) else {
        return server::not_found();
    };
    match HealthChecks::run(check, timeout).await {
        Ok(()) => server::text_response(StatusCode::OK, TEXT_PLAIN, "ok"),
        Err(reason) => {
            tracing::info!(probe = probe.as_str(), check = %name, %reason, "health check failed");
            server::text_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                TEXT_PLAIN,
                format!("internal server error: {reason}\n"),
            )
        }
    }
}

/// Serves `/healthz`, `/healthz/<name>`, `/readyz` and `/readyz/<name>` from `checks` on `addr`
/// (port 0 picks a free port) until `shutdown`. See the [module docs](self) for the responses.
///
/// Binds before returning, so the returned [`ServerHandle::local_addr`] is ready for requests.
/// Must be called inside a Tokio runtime.
pub async fn serve_probes(
    addr: SocketAddr,
    checks: HealthChecks,
    shutdown: impl Into<Shutdown>,
) -> Result<ServerHandle, ServeError> {
    let handler: Handler =
        Arc::new(move |request| Box::pin(probe_response(checks.clone(), request)));
    server::start("probes", addr, handler, None, shutdown.into()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[tokio::test]
    async fn metrics_health_reports() -> Result<(), AddCheckError> {
        let checks = HealthChecks::new();
        let report = checks.check_readyz().await;
        assert!(report.is_ok());
        assert_eq!(report.results.len(), 1, "implicit ping");

        let ready = Arc::new(AtomicBool::new(false));
        let flag = ready.clone();
        checks.add_readyz("caches", move || {
            if flag.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err("caches not synced".to_owned())
            }
        })?;
        checks.add_readyz_async("async", || async { Ok(()) })?;
        let report = checks.check_readyz().await;
        assert!(!report.is_ok());
        assert_eq!(report.failed().collect::<Vec<_>>(), ["caches"]);
        ready.store(true, Ordering::SeqCst);
        assert!(checks.check_readyz().await.is_ok());
        assert!(checks.check_healthz().await.is_ok());
        Ok(())
    }

    #[tokio::test]
    async fn metrics_health_check_timeout() -> Result<(), AddCheckError> {
        let checks = HealthChecks::new();
        checks.set_check_timeout(Duration::from_millis(20));
        checks.add_healthz_async("slow", || async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(())
        })?;
        let report = checks.check_healthz().await;
        assert_eq!(report.failed().collect::<Vec<_>>(), ["slow"]);
        Ok(())
    }

    #[test]
    fn metrics_health_check_names() {
        let checks = HealthChecks::new();
        assert!(checks.add_healthz("ping", ping).is_ok());
        assert_eq!(
            checks.add_healthz("ping", ping),
            Err(AddCheckError::AlreadyExists {
                probe: "healthz",
                name: "ping".into()
            })
        );
        // The same name on the other endpoint is fine.
        assert!(checks.add_readyz("ping", ping).is_ok());
        for bad in ["", "a/b", "a b", "a\nb"] {
            assert!(matches!(
                checks.add_readyz(bad, ping),
                Err(AddCheckError::InvalidName { .. })
            ));
        }
    }

    #[test]
    fn metrics_health_query_parsing() {
        assert_eq!(
            query_pairs("verbose&exclude=a%2Fb&exclude=c+d&&x="),
            [
                ("verbose".to_owned(), String::new()),
                ("exclude".to_owned(), "a/b".to_owned()),
                ("exclude".to_owned(), "c d".to_owned()),
                ("x".to_owned(), String::new()),
            ]
        );
        assert_eq!(percent_decode("%zz%4", false), "%zz%4");
        assert_eq!(percent_decode("a+b%41", false), "a+bA");
    }
}
