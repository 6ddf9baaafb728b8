//! The configuration requests are classified by, built from the stored FlowSchemas and
//! PriorityLevelConfigurations as upstream's APF controller digests them: a FlowSchema whose
//! priority level is missing or broken is ignored (dangling); the rest are ordered by
//! `matchingPrecedence`, then name; a missing mandatory `exempt` or `catch-all` object is
//! supplied (here: the last one stored, which the server's ensurer wrote at start). Each
//! limited level's nominal concurrency limit is `ceil(server limit × its shares / all shares)`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use http::HeaderValue;

use super::borrowing::{self, LevelInput};
use super::matching;
use super::metrics::{FlowCounters, LevelGauges, Registry};
use super::queueset::{Level, Queuing, Settings};
use super::spec::{self as api, FlowSchema, PriorityLevel};
use crate::auth::Attributes;
use crate::storage::{self, Snapshot};

/// The API group of both kinds.
pub(super) const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// The mandatory exempt FlowSchema and priority level.
const EXEMPT: &str = "exempt";
/// The mandatory catch-all FlowSchema and priority level.
const CATCH_ALL: &str = "catch-all";

/// How a FlowSchema tells the flows of its requests apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Distinguisher {
    /// One flow for all.
    None,
    /// One flow per user name.
    ByUser,
    /// One flow per namespace.
    ByNamespace,
}

/// A FlowSchema ready to match requests.
#[derive(Debug)]
pub(super) struct Schema {
    /// Its name.
    pub(super) name: String,
    /// Its uid, as the response header carries it.
    pub(super) uid: HeaderValue,
    /// Its priority level's uid, as the response header carries it.
    pub(super) level_uid: HeaderValue,
    /// Its priority level.
    pub(super) level: Arc<Level>,
    /// Whether its flows are hashed to queues (a `Queue` level with more than one queue).
    pub(super) hashed: bool,
    distinguisher: Distinguisher,
    rules: Vec<api::PolicyRulesWithSubjects>,
    /// The counters of its flow into its level.
    pub(super) flow: Arc<FlowCounters>,
}

impl Schema {
    /// The flow distinguisher of `request` under this schema.
    pub(super) fn distinguisher<'a>(&self, request: &'a Attributes) -> &'a str {
        match self.distinguisher {
            Distinguisher::None => "",
            Distinguisher::ByUser => &request.user.name,
            Distinguisher::ByNamespace => &request.namespace,
        }
    }
}

/// The classification in force: FlowSchemas in matching order.
#[derive(Debug, Default)]
pub(super) struct View {
    schemas: Vec<Schema>,
}

impl View {
    /// The first FlowSchema matching `request`; the catch-all one when none does (upstream's
    /// fallback, which its mandatory catch-all makes unreachable).
    pub(super) fn classify(&self, request: &Attributes) -> Option<&Schema> {
        self.schemas
            .iter()
            .find(|s| matching::matches_schema(&s.rules, request))
            .or_else(|| self.schemas.iter().find(|s| s.name == CATCH_ALL))
    }

    /// The FlowSchemas' names in matching order.
    #[cfg(test)]
    pub(super) fn order(&self) -> Vec<&str> {
        self.schemas.iter().map(|s| s.name.as_str()).collect()
    }
}

/// What survives configuration changes: the live priority levels and the last stored
/// mandatory objects.
#[derive(Debug, Default)]
pub(super) struct Builder {
    levels: HashMap<String, Arc<Level>>,
    /// The sum of the levels' nominal limits.
    nominal_sum: usize,
    mandatory_levels: HashMap<String, PriorityLevel>,
    mandatory_schemas: HashMap<String, FlowSchema>,
}

/// A level's spec, digested.
struct LevelSpec {
    uid: HeaderValue,
    shares: u32,
    /// `lendablePercent`.
    lendable_percent: u32,
    /// `borrowingLimitPercent`, `None` when unlimited.
    borrowing_limit_percent: Option<u32>,
    exempt: bool,
    queuing: Option<Queuing>,
}

fn uid_header(uid: Option<&String>) -> HeaderValue {
    uid.and_then(|u| HeaderValue::from_str(u).ok())
        .unwrap_or_else(|| HeaderValue::from_static(""))
}

fn non_negative(value: Option<i32>) -> usize {
    value.and_then(|v| usize::try_from(v).ok()).unwrap_or(0)
}

/// A level's spec; `None` when broken (upstream ignores such an object).
fn digest_level(pl: &PriorityLevel) -> Option<LevelSpec> {
    let spec = pl.spec.as_ref()?;
    let uid = uid_header(pl.metadata.uid.as_ref());
    let shares = |v: Option<i32>| v.and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
    match spec.type_.as_str() {
        "Exempt" => Some(LevelSpec {
            uid,
            shares: shares(
                spec.exempt
                    .as_ref()
                    .and_then(|e| e.nominal_concurrency_shares),
            ),
            lendable_percent: shares(spec.exempt.as_ref().and_then(|e| e.lendable_percent)),
            borrowing_limit_percent: None,
            exempt: true,
            queuing: None,
        }),
        "Limited" => {
            let limited = spec.limited.as_ref()?;
            let response = limited.limit_response.as_ref()?;
            let queuing = match response.type_.as_str() {
                "Reject" => None,
                "Queue" => {
                    let q = response.queuing.as_ref()?;
                    Some(Queuing {
                        queues: non_negative(q.queues),
                        hand_size: non_negative(q.hand_size),
                        queue_length_limit: non_negative(q.queue_length_limit),
                    })
                }
                _ => return None,
            };
            Some(LevelSpec {
                uid,
                shares: shares(limited.nominal_concurrency_shares),
                lendable_percent: shares(limited.lendable_percent),
                borrowing_limit_percent: limited
                    .borrowing_limit_percent
                    .and_then(|v| u32::try_from(v).ok()),
                exempt: false,
                queuing,
            })
        }
        _ => None,
    }
}

/// Objects of `resource` in `snapshot`, decoded; undecodable ones are skipped.
fn stored<T: serde::de::DeserializeOwned>(snapshot: &Snapshot, resource: &str) -> Vec<T> {
    let prefix = storage::collection_prefix(GROUP, resource, None);
    snapshot
        .range(&prefix, None)
        .filter_map(|(key, obj)| match serde_json::from_value((**obj).clone()) {
            Ok(value) => Some(value),
            Err(e) => {
                tracing::warn!(%key, error = %e, "ignoring an undecodable flow control object");
                None
            }
        })
        .collect()
}

/// Whether a storage key belongs to a FlowSchema or PriorityLevelConfiguration.
pub(super) fn is_config_key(key: &str) -> bool {
    key.strip_prefix('/')
        .and_then(|k| k.strip_prefix(GROUP))
        .is_some_and(|k| {
            k.starts_with("/flowschemas/") || k.starts_with("/prioritylevelconfigurations/")
        })
}

impl Builder {
    /// Ends the levels' demand period: sets each level's current limit from its demand
    /// ([`borrowing::adjust`]) and records the outcome in `metrics`.
    pub(super) fn adjust_borrowing(&self, metrics: &Registry) {
        let now = Instant::now();
        let levels: Vec<(&String, &Arc<Level>)> = self.levels.iter().collect();
        let inputs: Vec<LevelInput> = levels
            .iter()
            .map(|(_, level)| level.borrowing_input(now))
            .collect();
        let adjustment = borrowing::adjust(self.nominal_sum, &inputs);
        let mut gauges = BTreeMap::new();
        for (((name, level), input), decision) in levels.iter().zip(&inputs).zip(&adjustment.levels)
        {
            if !input.exempt {
                level.set_current(decision.current);
            }
            gauges.insert(
                (*name).clone(),
                LevelGauges {
                    input: *input,
                    current: decision.current,
                    target: decision.target,
                },
            );
        }
        metrics.set_levels(gauges, adjustment.fair_fraction);
    }

    /// The view of the objects in `snapshot`, for a server whose concurrency limit is
    /// `server_limit` (`0`: unlimited, every level exempt). Levels keep their seats and
    /// queues across calls; their counters live in `metrics`.
    pub(super) fn build(
        &mut self,
        snapshot: &Snapshot,
        server_limit: usize,
        metrics: &Registry,
    ) -> View {
        let mut levels: Vec<PriorityLevel> = stored(snapshot, "prioritylevelconfigurations");
        for name in [EXEMPT, CATCH_ALL] {
            match levels
                .iter()
                .find(|pl| pl.metadata.name.as_deref() == Some(name))
            {
                Some(pl) => {
                    self.mandatory_levels.insert(name.to_string(), pl.clone());
                }
                None => levels.extend(self.mandatory_levels.get(name).cloned()),
            }
        }
        let specs: Vec<(String, LevelSpec)> = levels
            .iter()
            .filter_map(|pl| {
                let name = pl.metadata.name.clone()?;
                match digest_level(pl) {
                    Some(spec) => Some((name, spec)),
                    None => {
                        tracing::warn!(%name, "ignoring a PriorityLevelConfiguration whose spec is broken");
                        None
                    }
                }
            })
            .collect();
        let share_sum: f64 = specs.iter().map(|(_, s)| f64::from(s.shares)).sum();
        let mut live = HashMap::new();
        let mut uids = HashMap::new();
        self.nominal_sum = 0;
        for (name, spec) in &specs {
            let limit = if share_sum > 0.0 {
                (server_limit as f64 * f64::from(spec.shares) / share_sum).ceil() as usize
            } else {
                0
            };
            let percent = |p: u32| (limit as f64 * f64::from(p) / 100.0).round() as usize;
            let settings = Settings {
                exempt: spec.exempt || server_limit == 0,
                limit,
                lendable: percent(spec.lendable_percent).min(limit),
                borrowing: spec.borrowing_limit_percent.map_or(server_limit, percent),
                queuing: spec.queuing,
            };
            self.nominal_sum += limit;
            let level = match self.levels.get(name) {
                Some(level) => {
                    level.configure(settings);
                    level.clone()
                }
                None => Level::new(name, settings),
            };
            uids.insert(name.clone(), (spec.uid.clone(), spec.queuing));
            live.insert(name.clone(), level);
        }
        // Levels no longer configured live on in their requests until those end.
        self.levels = live;
        self.adjust_borrowing(metrics);

        let mut stored_schemas: Vec<FlowSchema> = stored(snapshot, "flowschemas");
        for name in [EXEMPT, CATCH_ALL] {
            match stored_schemas
                .iter()
                .find(|fs| fs.metadata.name.as_deref() == Some(name))
            {
                Some(fs) => {
                    self.mandatory_schemas.insert(name.to_string(), fs.clone());
                }
                None => {
                    if let Some(fs) = self.mandatory_schemas.get(name) {
                        let mut fs = fs.clone();
                        // Upstream's supplied objects: exempt first, catch-all last.
                        if let Some(spec) = fs.spec.as_mut() {
                            spec.matching_precedence =
                                Some(if name == EXEMPT { i32::MIN } else { i32::MAX });
                        }
                        stored_schemas.push(fs);
                    }
                }
            }
        }
        let mut schemas: Vec<(i32, Schema)> = stored_schemas
            .into_iter()
            .filter_map(|fs| {
                let name = fs.metadata.name.clone()?;
                let spec = fs.spec?;
                let level_name = spec.priority_level_configuration?.name;
                let Some(level) = self.levels.get(&level_name) else {
                    tracing::debug!(%name, level = %level_name, "ignoring a dangling FlowSchema");
                    return None;
                };
                let (level_uid, queuing) = uids.get(&level_name).cloned()?;
                let distinguisher =
                    match spec.distinguisher_method.as_ref().map(|d| d.type_.as_str()) {
                        Some("ByUser") => Distinguisher::ByUser,
                        Some("ByNamespace") => Distinguisher::ByNamespace,
                        _ => Distinguisher::None,
                    };
                let flow = metrics.flow(&name, &level_name);
                Some((
                    spec.matching_precedence.unwrap_or(1000),
                    Schema {
                        uid: uid_header(fs.metadata.uid.as_ref()),
                        level_uid,
                        level: level.clone(),
                        hashed: queuing.is_some_and(|q| q.queues > 1),
                        distinguisher,
                        rules: spec.rules,
                        flow,
                        name,
                    },
                ))
            })
            .collect();
        schemas.sort_by(|(pa, a), (pb, b)| pa.cmp(pb).then_with(|| a.name.cmp(&b.name)));
        View {
            schemas: schemas.into_iter().map(|(_, s)| s).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;
    use serde_json::{Value, json};

    fn snapshot(objects: Vec<Value>) -> Snapshot {
        let mut map = imbl::OrdMap::new();
        for obj in objects {
            let resource = match obj["kind"].as_str() {
                Some("FlowSchema") => "flowschemas",
                _ => "prioritylevelconfigurations",
            };
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            map.insert(
                storage::object_key(GROUP, resource, None, &name),
                Arc::new(obj),
            );
        }
        Snapshot {
            revision: 1,
            objects: map,
        }
    }

    fn level(name: &str, spec: Value) -> Value {
        json!({"kind": "PriorityLevelConfiguration", "metadata": {"name": name, "uid": format!("uid-{name}")}, "spec": spec})
    }

    fn limited(shares: i32) -> Value {
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": shares, "limitResponse": {"type": "Reject"}}})
    }

    fn schema(name: &str, precedence: i32, level: &str, group: &str) -> Value {
        json!({"kind": "FlowSchema", "metadata": {"name": name, "uid": format!("uid-{name}")}, "spec": {
            "matchingPrecedence": precedence,
            "priorityLevelConfiguration": {"name": level},
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": group}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
            }],
        }})
    }

    fn request(groups: &[&str]) -> Attributes {
        let user = UserInfo {
            name: "u".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        crate::auth::attributes::from_request(user, &http::Method::GET, "/api/v1/pods", &[])
    }

    fn base() -> Vec<Value> {
        vec![
            level(
                "exempt",
                json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0}}),
            ),
            level("catch-all", limited(5)),
            level("low", limited(15)),
            schema("exempt", 1, "exempt", "system:masters"),
            schema("catch-all", 10000, "catch-all", "system:authenticated"),
        ]
    }

    #[test]
    fn orders_by_precedence_then_name_and_first_match_wins() {
        let mut objects = base();
        objects.push(schema("b", 500, "low", "team"));
        objects.push(schema("a", 500, "low", "team"));
        objects.push(schema("early", 100, "low", "other"));
        objects.push(schema("dangling", 50, "missing", "team"));
        let registry = Registry::default();
        let view = Builder::default().build(&snapshot(objects), 100, &registry);
        assert_eq!(view.order(), ["exempt", "early", "a", "b", "catch-all"]);
        let name = |groups: &[&str]| view.classify(&request(groups)).map(|s| s.name.clone());
        assert_eq!(
            name(&["team", "system:authenticated"]).as_deref(),
            Some("a")
        );
        assert_eq!(name(&["system:masters", "team"]).as_deref(), Some("exempt"));
        assert_eq!(
            name(&["system:authenticated"]).as_deref(),
            Some("catch-all")
        );
        assert_eq!(name(&[]).as_deref(), Some("catch-all"), "the fallback");
        let a = view.classify(&request(&["team"]));
        assert_eq!(
            a.map(|s| s.uid.clone()),
            Some(HeaderValue::from_static("uid-a"))
        );
        assert_eq!(
            a.map(|s| s.level_uid.clone()),
            Some(HeaderValue::from_static("uid-low"))
        );
    }

    #[test]
    fn limits_are_shares_of_the_server_limit_rounded_up() {
        let registry = Registry::default();
        Builder::default().build(&snapshot(base()), 100, &registry);
        let text = registry.render();
        // 100 × 15 / 20 = 75; 100 × 5 / 20 = 25; the exempt level has no shares (upstream
        // reports its nominal limit too: 0).
        assert!(
            text.contains("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"low\"} 75\n"),
            "{text}"
        );
        assert!(text.contains(
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"catch-all\"} 25\n"
        ));
        assert!(text.contains("nominal_limit_seats{priority_level=\"exempt\"} 0\n"));
        Builder::default().build(&snapshot(base()), 7, &registry);
        // ceil(7 × 15 / 20) = 6, ceil(7 × 5 / 20) = 2.
        let text = registry.render();
        assert!(text.contains("priority_level=\"low\"} 6\n"), "{text}");
        assert!(text.contains("priority_level=\"catch-all\"} 2\n"));
    }

    #[test]
    fn missing_mandatory_objects_are_supplied_from_the_last_seen() {
        let registry = Registry::default();
        let mut builder = Builder::default();
        builder.build(&snapshot(base()), 100, &registry);
        let without: Vec<Value> = base()
            .into_iter()
            .filter(|o| o["metadata"]["name"] != "exempt" && o["metadata"]["name"] != "catch-all")
            .chain([schema("first", 1, "low", "*")])
            .collect();
        let view = builder.build(&snapshot(without), 100, &registry);
        assert_eq!(view.order(), ["exempt", "first", "catch-all"]);
        assert_eq!(
            view.classify(&request(&["system:masters"]))
                .map(|s| s.level.is_exempt()),
            Some(true)
        );
    }

    #[test]
    fn flows_are_distinguished_by_user_or_namespace_when_queued() {
        let mut objects = base();
        let queue = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 10,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 8, "handSize": 2, "queueLengthLimit": 5}}}});
        objects.push(level("queued", queue));
        for (name, group, method) in [
            ("by-ns", "ns", "ByNamespace"),
            ("by-user", "user", "ByUser"),
        ] {
            let mut fs = schema(name, 100, "queued", group);
            fs["spec"]["distinguisherMethod"] = json!({"type": method});
            objects.push(fs);
        }
        objects.push(schema("plain", 100, "low", "plain"));
        let view = Builder::default().build(&snapshot(objects), 100, &Registry::default());
        let user = UserInfo {
            name: "alice".into(),
            groups: vec!["ns".into(), "user".into(), "plain".into()],
            ..UserInfo::default()
        };
        let req = crate::auth::attributes::from_request(
            user,
            &http::Method::GET,
            "/api/v1/namespaces/team/pods",
            &[],
        );
        let by_ns = view.schemas.iter().find(|s| s.name == "by-ns");
        assert_eq!(by_ns.map(|s| s.distinguisher(&req)), Some("team"));
        assert_eq!(by_ns.map(|s| s.hashed), Some(true));
        let by_user = view.schemas.iter().find(|s| s.name == "by-user");
        assert_eq!(by_user.map(|s| s.distinguisher(&req)), Some("alice"));
        let plain = view.schemas.iter().find(|s| s.name == "plain");
        assert_eq!(plain.map(|s| s.distinguisher(&req)), Some(""));
        assert_eq!(
            plain.map(|s| s.hashed),
            Some(false),
            "a Reject level has no queues"
        );
    }

    #[test]
    fn config_keys_are_recognized() {
        assert!(is_config_key("/flowcontrol.apiserver.k8s.io/flowschemas/x"));
        assert!(is_config_key(
            "/flowcontrol.apiserver.k8s.io/prioritylevelconfigurations/x"
        ));
        assert!(!is_config_key("/core/configmaps/default/x"));
    }
}
