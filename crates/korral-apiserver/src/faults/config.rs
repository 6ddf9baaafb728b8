//! What to break: the fault file (YAML or JSON), its builders and its validation.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::duration::FaultDuration;

/// The Kubernetes verbs a rule can match, as the authorizer computes them.
pub const VERBS: [&str; 8] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// The error codes a rule can answer with.
pub const ERROR_CODES: [u16; 4] = [409, 429, 500, 503];

/// Faults to inject: a seed and rules, evaluated in order for every request.
///
/// The default (and [`FaultConfig::new`]) has no rules: nothing is injected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultConfig {
    /// Seed of the rules' random streams (one stream per rule): a given seed and request
    /// sequence injects the same faults.
    #[serde(default)]
    pub seed: u64,
    /// The rules, in order.
    #[serde(default)]
    pub rules: Vec<FaultRule>,
}

/// Why a fault configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum FaultConfigError {
    /// The file could not be read.
    #[error("reading fault file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The text is not a fault configuration (syntax, unknown field, wrong type).
    #[error("{0}")]
    Parse(String),
    /// A value is impossible; `field` is its path, e.g. `rules[1].probability`.
    #[error("{field}: {message}")]
    Validate {
        /// Path of the offending field.
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

impl FaultConfigError {
    fn at(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Validate {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// One rule: which requests it matches, when it fires and what it does (one action).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRule {
    /// Label in stats and metrics (the rule's index when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Which requests the rule applies to (all when empty).
    #[serde(
        default,
        rename = "match",
        skip_serializing_if = "FaultMatch::is_empty"
    )]
    pub matches: FaultMatch,
    /// Fire on each matching request with this probability (0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// Fire on the Nth matching request only (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<i64>,
    /// Fire on every Nth matching request (N, 2N, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<i64>,
    /// Action: delay the request (an async sleep before it is handled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<FaultLatency>,
    /// Action: answer with an error `Status` instead of handling the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<FaultError>,
    /// Action: end matching watch streams cleanly after some events or some time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_watch: Option<FaultCloseWatch>,
    /// Action (when `true`): answer a watch resuming from a resourceVersion with
    /// `410 Expired`, as a server whose history no longer holds it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expire_watch_resume: bool,
}

/// Which requests a rule matches; every non-empty list must contain the request's value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultMatch {
    /// Kubernetes verbs: get, list, watch, create, update, patch, delete, deletecollection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verbs: Vec<String>,
    /// Plural resources, optionally with their group: `pods`, `deployments.apps`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Namespaces (cluster-scoped and all-namespace requests have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Subresources (`status`, `scale`); when empty, the main resource and its subresources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subresources: Vec<String>,
}

impl FaultMatch {
    /// Whether the match selects every request.
    pub fn is_empty(&self) -> bool {
        self.verbs.is_empty()
            && self.resources.is_empty()
            && self.namespaces.is_empty()
            && self.subresources.is_empty()
    }
}

/// How long to delay a request. In a file, a map with exactly one key:
/// `{fixed: 5ms}`, `{uniform: {min: 2ms, max: 10ms}}`, `{normal: {mean: 5ms, stddev: 1ms}}`
/// or `{exponential: {mean: 5ms}}`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "LatencyRepr", into = "LatencyRepr")]
pub enum FaultLatency {
    /// Always this long.
    Fixed(FaultDuration),
    /// Uniformly between `min` and `max`.
    Uniform {
        /// Shortest delay.
        min: FaultDuration,
        /// Longest delay.
        max: FaultDuration,
    },
    /// Normally distributed, cut at zero.
    Normal {
        /// Mean delay.
        mean: FaultDuration,
        /// Standard deviation.
        stddev: FaultDuration,
    },
    /// Exponentially distributed.
    Exponential {
        /// Mean delay.
        mean: FaultDuration,
    },
}

/// The file form of [`FaultLatency`]: one key naming the distribution.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LatencyRepr {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fixed: Option<FaultDuration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uniform: Option<UniformRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    normal: Option<NormalRepr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exponential: Option<ExponentialRepr>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct UniformRepr {
    min: FaultDuration,
    max: FaultDuration,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NormalRepr {
    mean: FaultDuration,
    stddev: FaultDuration,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExponentialRepr {
    mean: FaultDuration,
}

impl TryFrom<LatencyRepr> for FaultLatency {
    type Error = String;

    fn try_from(r: LatencyRepr) -> Result<Self, String> {
        let mut found = Vec::new();
        if let Some(d) = r.fixed {
            found.push(FaultLatency::Fixed(d));
        }
        if let Some(u) = r.uniform {
            found.push(FaultLatency::Uniform {
                min: u.min,
                max: u.max,
            });
        }
        if let Some(n) = r.normal {
            found.push(FaultLatency::Normal {
                mean: n.mean,
                stddev: n.stddev,
            });
        }
        if let Some(e) = r.exponential {
            found.push(FaultLatency::Exponential { mean: e.mean });
        }
        match found.as_slice() {
            [one] => Ok(*one),
            _ => Err(
                "latency: give exactly one of fixed, uniform, normal or exponential, e.g. {fixed: 5ms}"
                    .to_string(),
            ),
        }
    }
}

impl From<FaultLatency> for LatencyRepr {
    fn from(l: FaultLatency) -> Self {
        match l {
            FaultLatency::Fixed(d) => LatencyRepr {
                fixed: Some(d),
                ..LatencyRepr::default()
            },
            FaultLatency::Uniform { min, max } => LatencyRepr {
                uniform: Some(UniformRepr { min, max }),
                ..LatencyRepr::default()
            },
            FaultLatency::Normal { mean, stddev } => LatencyRepr {
                normal: Some(NormalRepr { mean, stddev }),
                ..LatencyRepr::default()
            },
            FaultLatency::Exponential { mean } => LatencyRepr {
                exponential: Some(ExponentialRepr { mean }),
                ..LatencyRepr::default()
            },
        }
    }
}

impl FaultLatency {
    /// Always `d`.
    pub fn fixed(d: Duration) -> Self {
        Self::Fixed(FaultDuration(d))
    }

    /// Uniformly between `min` and `max`.
    pub fn uniform(min: Duration, max: Duration) -> Self {
        Self::Uniform {
            min: FaultDuration(min),
            max: FaultDuration(max),
        }
    }

    /// Normally distributed around `mean` (never below zero).
    pub fn normal(mean: Duration, stddev: Duration) -> Self {
        Self::Normal {
            mean: FaultDuration(mean),
            stddev: FaultDuration(stddev),
        }
    }

    /// Exponentially distributed with this mean.
    pub fn exponential(mean: Duration) -> Self {
        Self::Exponential {
            mean: FaultDuration(mean),
        }
    }
}

impl From<Duration> for FaultLatency {
    fn from(d: Duration) -> Self {
        Self::fixed(d)
    }
}

/// An error answer: `{code: 429, retryAfterSeconds: 1}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultError {
    /// 409 Conflict, 429 TooManyRequests, 500 InternalError or 503 ServiceUnavailable.
    pub code: u16,
    /// `Retry-After` header and `details.retryAfterSeconds` (429 and 503; 429 defaults to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    /// The `Status` message, replacing upstream's usual one for the code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// When to end a watch stream: `{afterEvents: 20}` and/or `{after: 30s}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultCloseWatch {
    /// End the stream once this many events (bookmarks excluded) were sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_events: Option<i64>,
    /// End the stream this long after it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<FaultDuration>,
}

impl FaultConfig {
    /// No faults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses and validates a fault file's text (YAML, or JSON, which YAML reads too).
    pub fn from_yaml(text: &str) -> Result<FaultConfig, FaultConfigError> {
        let config: FaultConfig = if text.trim().is_empty() {
            FaultConfig::default()
        } else {
            serde_yaml_ng::from_str(text).map_err(|e| FaultConfigError::Parse(e.to_string()))?
        };
        config.validate()?;
        Ok(config)
    }

    /// Reads, parses and validates a fault file.
    pub fn from_file(path: &Path) -> Result<FaultConfig, FaultConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| FaultConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_yaml(&text)
    }

    /// Every request (all verbs, watches included) delayed by `d`.
    pub fn latency(d: Duration) -> FaultConfig {
        Self::default().with_rule(FaultRule::latency(d))
    }

    /// A control plane that misbehaves the way a loaded, flaky real one does, reproducibly from
    /// `seed`: 20% of updates and patches answered 409 Conflict (`conflicts`), 10% of writes
    /// 429 with `Retry-After: 1` (`throttled`), 5% of gets and lists 503 (`unavailable`),
    /// watches closed every 20 events (`closed`) and the third watch resume answered 410
    /// Expired (`expired`); the names are the rules' names in [`Faults::stats`]. An operator
    /// tested under it should converge, with a bounded number of reconciles.
    ///
    /// [`Faults::stats`]: super::Faults::stats
    pub fn flaky_control_plane(seed: u64) -> FaultConfig {
        Self::default()
            .with_seed(seed)
            .with_rule(
                FaultRule::error(409)
                    .verbs(["update", "patch"])
                    .probability(0.2)
                    .named("conflicts"),
            )
            .with_rule(
                FaultRule::error(429)
                    .retry_after(Duration::from_secs(1))
                    .verbs(["create", "update", "patch"])
                    .probability(0.1)
                    .named("throttled"),
            )
            .with_rule(
                FaultRule::error(503)
                    .verbs(["get", "list"])
                    .probability(0.05)
                    .named("unavailable"),
            )
            .with_rule(FaultRule::close_watch_after_events(20).named("closed"))
            .with_rule(FaultRule::expire_watch_resume().nth(3).named("expired"))
    }

    /// Sets the seed of the rules' random streams.
    pub fn with_seed(mut self, seed: u64) -> FaultConfig {
        self.seed = seed;
        self
    }

    /// Appends a rule.
    pub fn with_rule(mut self, rule: FaultRule) -> FaultConfig {
        self.rules.push(rule);
        self
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Checks every value; the error names the offending field's path.
    pub fn validate(&self) -> Result<(), FaultConfigError> {
        for (i, rule) in self.rules.iter().enumerate() {
            rule.validate(&format!("rules[{i}]"))?;
        }
        Ok(())
    }
}

fn positive(field: String, value: Option<i64>) -> Result<(), FaultConfigError> {
    match value {
        Some(n) if n <= 0 => Err(FaultConfigError::at(
            field,
            format!("must be a positive integer, got {n}"),
        )),
        _ => Ok(()),
    }
}

impl FaultRule {
    fn with_action(f: impl FnOnce(&mut FaultRule)) -> Self {
        let mut rule = Self::default();
        f(&mut rule);
        rule
    }

    /// A rule delaying requests (a [`Duration`] is a fixed delay).
    pub fn latency(latency: impl Into<FaultLatency>) -> Self {
        Self::with_action(|r| r.latency = Some(latency.into()))
    }

    /// A rule answering with an error: 409, 429, 500 or 503 (429 with `Retry-After: 1`
    /// unless [`FaultRule::retry_after`] says otherwise).
    pub fn error(code: u16) -> Self {
        Self::with_action(|r| {
            r.error = Some(FaultError {
                code,
                retry_after_seconds: None,
                message: None,
            })
        })
    }

    /// The `Retry-After` of an error rule, in whole seconds (rounded up).
    pub fn retry_after(mut self, d: Duration) -> Self {
        let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
        if let Some(error) = &mut self.error {
            error.retry_after_seconds = Some(secs);
        }
        self
    }

    /// The `Status` message of an error rule.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        if let Some(error) = &mut self.error {
            error.message = Some(message.into());
        }
        self
    }

    /// A rule ending watch streams after `n` events.
    pub fn close_watch_after_events(n: u64) -> Self {
        Self::with_action(|r| {
            r.close_watch = Some(FaultCloseWatch {
                after_events: Some(i64::try_from(n).unwrap_or(i64::MAX)),
                after: None,
            })
        })
    }

    /// A rule ending watch streams `d` after they start.
    pub fn close_watch_after(d: Duration) -> Self {
        Self::with_action(|r| {
            r.close_watch = Some(FaultCloseWatch {
                after_events: None,
                after: Some(FaultDuration(d)),
            })
        })
    }

    /// A rule answering `410 Expired` to watches resuming from a resourceVersion.
    pub fn expire_watch_resume() -> Self {
        Self::with_action(|r| r.expire_watch_resume = true)
    }

    /// Only these verbs (get, list, watch, create, update, patch, delete, deletecollection).
    pub fn verbs<I, S>(mut self, verbs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.matches.verbs = verbs.into_iter().map(Into::into).collect();
        self
    }

    /// Only these plural resources (`pods`, or with a group: `deployments.apps`).
    pub fn resources<I, S>(mut self, resources: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.matches.resources = resources.into_iter().map(Into::into).collect();
        self
    }

    /// Only these namespaces.
    pub fn namespaces<I, S>(mut self, namespaces: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.matches.namespaces = namespaces.into_iter().map(Into::into).collect();
        self
    }

    /// Only these subresources (`status`, `scale`).
    pub fn subresources<I, S>(mut self, subresources: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.matches.subresources = subresources.into_iter().map(Into::into).collect();
        self
    }

    /// Fires on each matching request with probability `p` (0..=1).
    pub fn probability(mut self, p: f64) -> Self {
        self.probability = Some(p);
        self
    }

    /// Fires on the `n`th matching request only.
    pub fn nth(mut self, n: u64) -> Self {
        self.nth = Some(i64::try_from(n).unwrap_or(i64::MAX));
        self
    }

    /// Fires on every `n`th matching request.
    pub fn every(mut self, n: u64) -> Self {
        self.every = Some(i64::try_from(n).unwrap_or(i64::MAX));
        self
    }

    /// Names the rule in stats and metrics.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The names of the actions set on this rule.
    pub(crate) fn actions(&self) -> Vec<&'static str> {
        let mut actions = Vec::new();
        if self.latency.is_some() {
            actions.push("latency");
        }
        if self.error.is_some() {
            actions.push("error");
        }
        if self.close_watch.is_some() {
            actions.push("closeWatch");
        }
        if self.expire_watch_resume {
            actions.push("expireWatchResume");
        }
        actions
    }

    fn validate(&self, at: &str) -> Result<(), FaultConfigError> {
        if let Some(name) = &self.name
            && name.trim().is_empty()
        {
            return Err(FaultConfigError::at(
                format!("{at}.name"),
                "must not be empty",
            ));
        }
        for (j, verb) in self.matches.verbs.iter().enumerate() {
            if !VERBS.contains(&verb.as_str()) {
                return Err(FaultConfigError::at(
                    format!("{at}.match.verbs[{j}]"),
                    format!(
                        "unknown verb {verb:?}: expected one of {}",
                        VERBS.join(", ")
                    ),
                ));
            }
        }
        for (field, list) in [
            ("resources", &self.matches.resources),
            ("namespaces", &self.matches.namespaces),
            ("subresources", &self.matches.subresources),
        ] {
            for (j, value) in list.iter().enumerate() {
                if value.trim().is_empty() || value.contains('/') {
                    return Err(FaultConfigError::at(
                        format!("{at}.match.{field}[{j}]"),
                        format!("invalid value {value:?}"),
                    ));
                }
            }
        }
        let triggers: Vec<&str> = [
            ("probability", self.probability.is_some()),
            ("nth", self.nth.is_some()),
            ("every", self.every.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        if triggers.len() > 1 {
            return Err(FaultConfigError::at(
                format!("{at}.{}", triggers[1]),
                format!(
                    "may not be combined with {}: give one of probability, nth or every",
                    triggers[0]
                ),
            ));
        }
        if let Some(p) = self.probability
            && !(0.0..=1.0).contains(&p)
        {
            return Err(FaultConfigError::at(
                format!("{at}.probability"),
                format!("must be between 0 and 1, got {p}"),
            ));
        }
        positive(format!("{at}.nth"), self.nth)?;
        positive(format!("{at}.every"), self.every)?;
        match self.actions().as_slice() {
            [] => {
                return Err(FaultConfigError::at(
                    at,
                    "needs an action: one of latency, error, closeWatch or expireWatchResume",
                ));
            }
            [_] => {}
            [first, second, ..] => {
                return Err(FaultConfigError::at(
                    format!("{at}.{second}"),
                    format!("a rule has one action and this one already has {first}"),
                ));
            }
        }
        if let Some(latency) = &self.latency {
            validate_latency(&format!("{at}.latency"), latency)?;
        }
        if let Some(error) = &self.error {
            if !ERROR_CODES.contains(&error.code) {
                return Err(FaultConfigError::at(
                    format!("{at}.error.code"),
                    format!("must be one of 409, 429, 500, 503, got {}", error.code),
                ));
            }
            if error.retry_after_seconds.is_some() && !matches!(error.code, 429 | 503) {
                return Err(FaultConfigError::at(
                    format!("{at}.error.retryAfterSeconds"),
                    format!("only for codes 429 and 503, not {}", error.code),
                ));
            }
        }
        if let Some(close) = &self.close_watch {
            if close.after_events.is_none() && close.after.is_none() {
                return Err(FaultConfigError::at(
                    format!("{at}.closeWatch"),
                    "needs afterEvents or after",
                ));
            }
            positive(format!("{at}.closeWatch.afterEvents"), close.after_events)?;
            if close.after.is_some_and(|d| d.0.is_zero()) {
                return Err(FaultConfigError::at(
                    format!("{at}.closeWatch.after"),
                    "must be longer than 0s",
                ));
            }
        }
        let watch_only = self.close_watch.is_some() || self.expire_watch_resume;
        if watch_only
            && !self.matches.verbs.is_empty()
            && !self.matches.verbs.iter().any(|v| v == "watch")
        {
            return Err(FaultConfigError::at(
                format!("{at}.match.verbs"),
                format!(
                    "{} applies to watches only, so the verbs must include watch",
                    self.actions().join("")
                ),
            ));
        }
        Ok(())
    }
}

fn validate_latency(at: &str, latency: &FaultLatency) -> Result<(), FaultConfigError> {
    if let FaultLatency::Uniform { min, max } = latency
        && min > max
    {
        return Err(FaultConfigError::at(
            format!("{at}.uniform.min"),
            format!("must not be longer than max ({max}), got {min}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        match FaultConfig::from_yaml(text) {
            Ok(c) => panic!("accepted: {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    const EXAMPLE: &str = r#"
seed: 42
rules:
- name: slow-writes
  match: {verbs: [create, update, patch], resources: [deployments], namespaces: [default]}
  probability: 0.5
  latency: {uniform: {min: 2ms, max: 10ms}}
- match: {resources: [memcacheds]}
  every: 4
  error: {code: 429, retryAfterSeconds: 1}
- match: {verbs: [watch]}
  closeWatch: {afterEvents: 20}
- match: {resources: [configmaps], subresources: [status]}
  nth: 3
  expireWatchResume: true
"#;

    #[test]
    fn parses_the_documented_example() {
        let config = FaultConfig::from_yaml(EXAMPLE).expect("valid");
        let expected = FaultConfig::new()
            .with_seed(42)
            .with_rule(
                FaultRule::latency(FaultLatency::uniform(
                    Duration::from_millis(2),
                    Duration::from_millis(10),
                ))
                .verbs(["create", "update", "patch"])
                .resources(["deployments"])
                .namespaces(["default"])
                .probability(0.5)
                .named("slow-writes"),
            )
            .with_rule(
                FaultRule::error(429)
                    .retry_after(Duration::from_secs(1))
                    .resources(["memcacheds"])
                    .every(4),
            )
            .with_rule(FaultRule::close_watch_after_events(20).verbs(["watch"]))
            .with_rule(
                FaultRule::expire_watch_resume()
                    .resources(["configmaps"])
                    .subresources(["status"])
                    .nth(3),
            );
        assert_eq!(config, expected);
    }

    #[test]
    fn json_and_yaml_round_trip() {
        let config = FaultConfig::from_yaml(EXAMPLE).expect("valid");
        let json = serde_json::to_string(&config).expect("serialize");
        assert_eq!(FaultConfig::from_yaml(&json).expect("json"), config);
        let yaml = serde_yaml_ng::to_string(&config).expect("serialize");
        assert_eq!(FaultConfig::from_yaml(&yaml).expect("yaml"), config);
        assert_eq!(
            FaultConfig::from_yaml("").expect("empty"),
            FaultConfig::new()
        );
    }

    #[test]
    fn latency_shapes() {
        let config = FaultConfig::from_yaml(
            "rules:\n- latency: {fixed: 5ms}\n- latency: {normal: {mean: 5ms, stddev: 1ms}}\n- latency: {exponential: {mean: 2s}}\n",
        )
        .expect("valid");
        assert_eq!(
            config.rules[0].latency,
            Some(FaultLatency::fixed(Duration::from_millis(5)))
        );
        assert_eq!(
            config.rules[2].latency,
            Some(FaultLatency::exponential(Duration::from_secs(2)))
        );
        assert_eq!(
            FaultConfig::latency(Duration::from_millis(3)).rules[0],
            FaultRule::latency(FaultLatency::fixed(Duration::from_millis(3)))
        );
    }

    #[test]
    fn impossible_values_name_their_field() {
        let cases = [
            (
                "rules:\n- error: {code: 429}\n- latency: {fixed: 1ms}\n  probability: 1.5\n",
                "rules[1].probability: must be between 0 and 1, got 1.5",
            ),
            (
                "rules:\n- error: {code: 429}\n  probability: 0.5\n  nth: 2\n",
                "rules[0].nth: may not be combined with probability",
            ),
            (
                "rules:\n- error: {code: 404}\n",
                "rules[0].error.code: must be one of 409, 429, 500, 503, got 404",
            ),
            (
                "rules:\n- error: {code: 500}\n  nth: 0\n",
                "rules[0].nth: must be a positive integer, got 0",
            ),
            (
                "rules:\n- error: {code: 500}\n  every: -3\n",
                "rules[0].every: must be a positive integer, got -3",
            ),
            (
                "rules:\n- latency: {uniform: {min: 10ms, max: 2ms}}\n",
                "rules[0].latency.uniform.min: must not be longer than max (2ms), got 10ms",
            ),
            (
                "rules:\n- match: {verbs: [get, gett]}\n  error: {code: 503}\n",
                "rules[0].match.verbs[1]: unknown verb \"gett\"",
            ),
            (
                "rules:\n- match: {verbs: [get]}\n",
                "rules[0]: needs an action",
            ),
            (
                "rules:\n- latency: {fixed: 1ms}\n  error: {code: 409}\n",
                "rules[0].error: a rule has one action and this one already has latency",
            ),
            (
                "rules:\n- error: {code: 409, retryAfterSeconds: 2}\n",
                "rules[0].error.retryAfterSeconds: only for codes 429 and 503",
            ),
            (
                "rules:\n- closeWatch: {}\n",
                "rules[0].closeWatch: needs afterEvents or after",
            ),
            (
                "rules:\n- match: {verbs: [list]}\n  closeWatch: {afterEvents: 3}\n",
                "rules[0].match.verbs: closeWatch applies to watches only",
            ),
        ];
        for (text, expected) in cases {
            let message = refused(text);
            assert!(
                message.starts_with(expected),
                "{text}\n  got: {message}\nwant: {expected}"
            );
        }
    }

    #[test]
    fn unknown_fields_and_bad_types_name_their_path() {
        let message = refused("rules:\n- error: {code: 429}\n- error: {code: 429, retry: 1}\n");
        assert!(
            message.contains("rules[1].error") && message.contains("unknown field `retry`"),
            "{message}"
        );
        let message = refused("rules:\n- latency: {fixed: 1ms, uniform: {min: 1ms, max: 2ms}}\n");
        assert!(
            message.starts_with("rules[0]: latency: give exactly one of"),
            "{message}"
        );
        let message = refused("seed: 1\nrulez: []\n");
        assert!(message.contains("unknown field `rulez`"), "{message}");
        let message = refused("rules:\n- latency: {fixed: 5parsecs}\n");
        assert!(
            message.contains("rules[0].latency") && message.contains("invalid duration"),
            "{message}"
        );
        let message = refused("{\"rules\": [{\"error\": {\"code\": 429}, \"nht\": 2}]}");
        assert!(
            message.contains("rules[0]") && message.contains("unknown field `nht`"),
            "{message}"
        );
    }

    #[test]
    fn builders_validate_too() {
        let config = FaultConfig::new().with_rule(FaultRule::error(429).probability(2.0));
        let message = config.validate().expect_err("refused").to_string();
        assert_eq!(
            message,
            "rules[0].probability: must be between 0 and 1, got 2"
        );
        assert_eq!(
            FaultRule::error(429)
                .retry_after(Duration::from_millis(1500))
                .error
                .and_then(|e| e.retry_after_seconds),
            Some(2)
        );
    }
}
