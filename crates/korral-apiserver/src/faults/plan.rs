//! Compiled rules: which requests a rule matches, whether it fires, and the decision for one
//! request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::config::{FaultConfig, FaultLatency, FaultRule};
use super::rng::Rng;

/// The facts of a request that rules match on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// Whether it addresses an API resource (discovery and OpenAPI do not).
    pub resource_request: bool,
    /// Kubernetes verb, as the authorizer computes it.
    pub verb: String,
    /// API group, empty for core.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource, empty when none.
    pub subresource: String,
    /// Namespace, empty when none.
    pub namespace: String,
    /// Object name, empty for collections.
    pub name: String,
    /// Watches: the resourceVersion to resume from (`None` when starting from the current
    /// state: no resourceVersion, `0`, or `sendInitialEvents=true`).
    pub resume_from: Option<String>,
}

/// What one rule does once it fires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Delay by a drawn amount.
    Latency(FaultLatency),
    /// Answer with an error.
    Error {
        /// HTTP code.
        code: u16,
    },
    /// End the watch stream.
    CloseWatch {
        /// After this many events.
        after_events: Option<u64>,
        /// After this long.
        after: Option<Duration>,
    },
    /// Answer 410 Expired to a resuming watch.
    ExpireWatch,
}

impl Action {
    /// The `action` label of metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Action::Latency(_) => "latency",
            Action::Error { .. } => "error",
            Action::CloseWatch { .. } => "close_watch",
            Action::ExpireWatch => "expire_watch",
        }
    }

    /// The `code` label of metrics (empty when the action sends none).
    pub fn code(&self) -> Option<u16> {
        match self {
            Action::Error { code } => Some(*code),
            Action::ExpireWatch => Some(410),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Trigger {
    Always,
    Probability(f64),
    Nth(u64),
    Every(u64),
}

#[derive(Debug)]
struct RuleState {
    seen: u64,
    rng: Rng,
}

/// One compiled rule with its counters.
#[derive(Debug)]
pub struct Rule {
    /// The rule as configured.
    pub spec: FaultRule,
    /// Its label in stats and metrics: its name, or its index.
    pub label: String,
    /// Its action.
    pub action: Action,
    trigger: Trigger,
    resources: Vec<(String, Option<String>)>,
    state: Mutex<RuleState>,
    /// Matching requests seen.
    pub matched: AtomicU64,
    /// Faults injected.
    pub injected: Arc<AtomicU64>,
}

fn count(n: Option<i64>) -> Option<u64> {
    n.and_then(|n| u64::try_from(n).ok())
}

impl Rule {
    fn compile(seed: u64, index: usize, spec: &FaultRule) -> Self {
        let action = if let Some(latency) = spec.latency {
            Action::Latency(latency)
        } else if let Some(error) = &spec.error {
            Action::Error { code: error.code }
        } else if let Some(close) = spec.close_watch {
            Action::CloseWatch {
                after_events: count(close.after_events),
                after: close.after.map(|d| d.0),
            }
        } else {
            Action::ExpireWatch
        };
        let trigger = if let Some(p) = spec.probability {
            Trigger::Probability(p)
        } else if let Some(n) = count(spec.nth) {
            Trigger::Nth(n)
        } else if let Some(n) = count(spec.every) {
            Trigger::Every(n.max(1))
        } else {
            Trigger::Always
        };
        let resources = spec
            .matches
            .resources
            .iter()
            .map(|r| match r.split_once('.') {
                Some((plural, group)) => (plural.to_string(), Some(group.to_string())),
                None => (r.clone(), None),
            })
            .collect();
        Self {
            label: spec.name.clone().unwrap_or_else(|| index.to_string()),
            spec: spec.clone(),
            action,
            trigger,
            resources,
            state: Mutex::new(RuleState {
                seen: 0,
                rng: Rng::for_rule(seed, index),
            }),
            matched: AtomicU64::new(0),
            injected: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Whether the rule applies to the request (its match, and its action's kind of request).
    pub fn applies(&self, req: &Request) -> bool {
        let m = &self.spec.matches;
        let fits_action = match self.action {
            Action::CloseWatch { .. } => req.verb == "watch",
            Action::ExpireWatch => req.verb == "watch" && req.resume_from.is_some(),
            _ => true,
        };
        if !fits_action {
            return false;
        }
        if !req.resource_request {
            // Discovery and OpenAPI: only rules matching everything.
            return m.is_empty();
        }
        (m.verbs.is_empty() || m.verbs.contains(&req.verb))
            && (self.resources.is_empty()
                || self.resources.iter().any(|(plural, group)| {
                    *plural == req.resource && group.as_ref().is_none_or(|g| *g == req.group)
                }))
            && (m.namespaces.is_empty() || m.namespaces.contains(&req.namespace))
            && (m.subresources.is_empty() || m.subresources.contains(&req.subresource))
    }

    /// Counts a matching request and decides whether the rule fires on it; a firing latency
    /// rule also draws its delay (from the same stream, so the sequence is reproducible).
    fn fire(&self) -> Option<Duration> {
        self.matched.fetch_add(1, Ordering::Relaxed);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.seen += 1;
        let fires = match self.trigger {
            Trigger::Always => true,
            Trigger::Probability(p) => state.rng.next_f64() < p,
            Trigger::Nth(n) => state.seen == n,
            Trigger::Every(n) => state.seen.is_multiple_of(n),
        };
        if !fires {
            return None;
        }
        Some(match &self.action {
            Action::Latency(latency) => state.rng.delay(latency),
            _ => Duration::ZERO,
        })
    }
}

/// The compiled rules of one configuration.
#[derive(Debug)]
pub struct Plan {
    /// The configuration's seed.
    pub seed: u64,
    /// The rules, in order.
    pub rules: Vec<Arc<Rule>>,
}

/// How a watch stream is to end early.
#[derive(Debug, Clone, Default)]
pub struct Close {
    /// After this many events, counted on this rule's counter.
    pub after_events: Option<(u64, Arc<AtomicU64>)>,
    /// After this long, counted on this rule's counter.
    pub after: Option<(Duration, Arc<AtomicU64>)>,
}

/// What happens to one request.
#[derive(Debug, Default)]
pub struct Decision {
    /// Sleep this long first.
    pub delay: Duration,
    /// Answer with this rule's error (or 410) instead of handling the request.
    pub answer: Option<Arc<Rule>>,
    /// End the watch stream early.
    pub close: Option<Close>,
}

impl Plan {
    /// Compiles a (validated) configuration.
    pub fn compile(config: &FaultConfig) -> Self {
        Self {
            seed: config.seed,
            rules: config
                .rules
                .iter()
                .enumerate()
                .map(|(i, r)| Arc::new(Rule::compile(config.seed, i, r)))
                .collect(),
        }
    }

    /// Evaluates every applicable rule in order (each advances its own counter and stream,
    /// so one rule's sequence does not depend on the others): latencies add up, the first
    /// firing error or expiry answers, watch closes combine.
    pub fn decide(&self, req: &Request) -> Decision {
        let mut decision = Decision::default();
        for rule in &self.rules {
            if !rule.applies(req) {
                continue;
            }
            let Some(delay) = rule.fire() else {
                continue;
            };
            match rule.action {
                Action::Latency(_) => {
                    decision.delay += delay;
                    rule.injected.fetch_add(1, Ordering::Relaxed);
                }
                Action::Error { .. } | Action::ExpireWatch => {
                    if decision.answer.is_none() {
                        decision.answer = Some(rule.clone());
                    }
                }
                Action::CloseWatch {
                    after_events,
                    after,
                } => {
                    let close = decision.close.get_or_insert_with(Close::default);
                    if let Some(n) = after_events
                        && close.after_events.as_ref().is_none_or(|(m, _)| n < *m)
                    {
                        close.after_events = Some((n, rule.injected.clone()));
                    }
                    if let Some(d) = after
                        && close.after.as_ref().is_none_or(|(e, _)| d < *e)
                    {
                        close.after = Some((d, rule.injected.clone()));
                    }
                }
            }
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::config::FaultRule;

    fn req(verb: &str, group: &str, resource: &str, namespace: &str) -> Request {
        Request {
            resource_request: true,
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            ..Request::default()
        }
    }

    fn plan(rules: Vec<FaultRule>) -> Plan {
        let mut config = FaultConfig::new().with_seed(99);
        for r in rules {
            config = config.with_rule(r);
        }
        config.validate().expect("valid");
        Plan::compile(&config)
    }

    fn errors(plan: &Plan, req: &Request, n: usize) -> Vec<bool> {
        (0..n).map(|_| plan.decide(req).answer.is_some()).collect()
    }

    #[test]
    fn matching_by_verb_resource_group_namespace_subresource() {
        let p = plan(vec![
            FaultRule::error(500)
                .verbs(["create", "update"])
                .resources(["deployments.apps", "configmaps"])
                .namespaces(["team"]),
        ]);
        let rule = &p.rules[0];
        assert!(rule.applies(&req("create", "apps", "deployments", "team")));
        assert!(rule.applies(&req("update", "", "configmaps", "team")));
        assert!(!rule.applies(&req("get", "apps", "deployments", "team")));
        assert!(!rule.applies(&req("create", "extensions", "deployments", "team")));
        assert!(!rule.applies(&req("create", "apps", "deployments", "other")));
        assert!(!rule.applies(&req("create", "", "secrets", "team")));
        let p = plan(vec![FaultRule::error(409).subresources(["status"])]);
        let mut status = req("update", "apps", "deployments", "x");
        status.subresource = "status".into();
        assert!(p.rules[0].applies(&status));
        assert!(!p.rules[0].applies(&req("update", "apps", "deployments", "x")));
        // Discovery only for rules matching everything.
        let discovery = Request {
            verb: "get".into(),
            ..Request::default()
        };
        assert!(!p.rules[0].applies(&discovery));
        let p = plan(vec![FaultRule::latency(Duration::from_millis(1))]);
        assert!(p.rules[0].applies(&discovery));
    }

    #[test]
    fn watch_actions_only_for_watches() {
        let p = plan(vec![
            FaultRule::close_watch_after_events(2),
            FaultRule::expire_watch_resume(),
        ]);
        let list = req("list", "", "pods", "a");
        let mut watch = req("watch", "", "pods", "a");
        assert!(!p.rules[0].applies(&list) && !p.rules[1].applies(&list));
        assert!(p.rules[0].applies(&watch) && !p.rules[1].applies(&watch));
        watch.resume_from = Some("12".into());
        assert!(p.rules[1].applies(&watch));
    }

    #[test]
    fn nth_and_every_count_matching_requests_only() {
        let p = plan(vec![FaultRule::error(409).nth(3).verbs(["update"])]);
        let update = req("update", "", "pods", "a");
        let get = req("get", "", "pods", "a");
        assert!(p.decide(&get).answer.is_none());
        assert_eq!(
            errors(&p, &update, 6),
            [false, false, true, false, false, false]
        );
        let p = plan(vec![FaultRule::error(429).every(2)]);
        assert_eq!(
            errors(&p, &update, 6),
            [false, true, false, true, false, true]
        );
        assert_eq!(p.rules[0].matched.load(Ordering::Relaxed), 6);
        // Injections are counted where the answer is sent, not here.
        assert_eq!(p.rules[0].injected.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn probability_is_reproducible_from_the_seed() {
        let rules = || {
            vec![
                FaultRule::error(503).probability(0.3),
                FaultRule::latency(crate::faults::FaultLatency::uniform(
                    Duration::from_millis(1),
                    Duration::from_millis(9),
                ))
                .probability(0.5),
            ]
        };
        let r = req("get", "", "pods", "a");
        let run = |p: &Plan| -> Vec<(bool, Duration)> {
            (0..200)
                .map(|_| {
                    let d = p.decide(&r);
                    (d.answer.is_some(), d.delay)
                })
                .collect()
        };
        let first = run(&plan(rules()));
        assert_eq!(first, run(&plan(rules())));
        let errors = first.iter().filter(|(e, _)| *e).count();
        assert!(
            (30..=90).contains(&errors),
            "{errors} errors of 200 at p=0.3"
        );
        let delayed: Vec<Duration> = first
            .iter()
            .map(|(_, d)| *d)
            .filter(|d| !d.is_zero())
            .collect();
        assert!((60..=140).contains(&delayed.len()), "{}", delayed.len());
        assert!(
            delayed
                .iter()
                .all(|d| *d >= Duration::from_millis(1) && *d <= Duration::from_millis(9))
        );
        let other = FaultConfig {
            seed: 100,
            rules: rules(),
        };
        assert_ne!(first, run(&Plan::compile(&other)));
        assert!(
            plan(vec![FaultRule::error(500).probability(0.0)])
                .decide(&r)
                .answer
                .is_none()
        );
        assert!(
            plan(vec![FaultRule::error(500).probability(1.0)])
                .decide(&r)
                .answer
                .is_some()
        );
    }

    #[test]
    fn latencies_add_up_and_first_error_answers() {
        let ms = Duration::from_millis;
        let p = plan(vec![
            FaultRule::latency(ms(2)),
            FaultRule::error(429).named("throttle"),
            FaultRule::latency(ms(3)),
            FaultRule::error(500),
        ]);
        let d = p.decide(&req("get", "", "pods", "a"));
        assert_eq!(d.delay, ms(5));
        assert_eq!(d.answer.map(|r| r.label.clone()), Some("throttle".into()));
        assert_eq!(p.rules[3].matched.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn watch_closes_combine() {
        let p = plan(vec![
            FaultRule::close_watch_after_events(5),
            FaultRule::close_watch_after_events(3),
            FaultRule::close_watch_after(Duration::from_secs(2)),
        ]);
        let close = p
            .decide(&req("watch", "", "pods", "a"))
            .close
            .expect("closes");
        assert_eq!(close.after_events.map(|(n, _)| n), Some(3));
        assert_eq!(close.after.map(|(d, _)| d), Some(Duration::from_secs(2)));
    }
}
