//! The API priority and fairness configuration every kube-apiserver starts with (upstream's
//! `apiserver/pkg/apis/flowcontrol/bootstrap`): the *mandatory* `exempt` and `catch-all`
//! objects and the *suggested* priority levels and flow schemas, as a table of facts. The specs
//! built from it already carry the v1 defaults, so the strategy's defaulting leaves them as
//! they are and a stored spec compares with them directly.

use serde_json::{Map, Value, json};

/// How the server keeps a bootstrap object (upstream's ensure strategies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    /// Always restored: its spec and its auto-update annotation are put back at every start.
    Mandatory,
    /// Restored while annotated `apf.kubernetes.io/autoupdate-spec: "true"` (or, without a
    /// readable annotation, while its generation is 1); a user who sets `"false"` keeps theirs.
    Suggested,
}

/// Who a rule matches.
#[derive(Debug, Clone, Copy)]
enum Subject {
    /// A group of users.
    Group(&'static str),
    /// One user.
    User(&'static str),
    /// A service account of `kube-system` (`*` for all of them).
    KubeSystemAccount(&'static str),
}

/// Requests for objects a rule matches.
#[derive(Debug, Clone, Copy)]
struct ResourceRule {
    verbs: &'static [&'static str],
    api_groups: &'static [&'static str],
    resources: &'static [&'static str],
    cluster_scope: bool,
    namespaces: &'static [&'static str],
}

/// Requests for other paths a rule matches.
#[derive(Debug, Clone, Copy)]
struct NonResourceRule {
    verbs: &'static [&'static str],
    urls: &'static [&'static str],
}

/// One flow schema: its priority level, precedence, distinguisher and its single rule.
#[derive(Debug, Clone, Copy)]
struct FlowSchema {
    name: &'static str,
    class: Class,
    level: &'static str,
    precedence: i64,
    distinguisher: Option<&'static str>,
    subjects: &'static [Subject],
    resource_rules: &'static [ResourceRule],
    non_resource_rules: &'static [NonResourceRule],
}

/// What a limited level does with a request over its limit.
#[derive(Debug, Clone, Copy)]
enum Excess {
    /// Refuses it at once (429).
    Reject,
    /// Queues it (shuffle sharding over `queues`, hands of `hand_size`).
    Queue {
        queues: i64,
        hand_size: i64,
        queue_length_limit: i64,
    },
}

/// What a priority level is.
#[derive(Debug, Clone, Copy)]
enum Limit {
    /// Requests are never limited.
    Exempt,
    /// Requests share `shares` nominal seats, `lendable` percent of which others may borrow.
    Limited {
        shares: i64,
        lendable: i64,
        excess: Excess,
    },
}

/// One priority level.
#[derive(Debug, Clone, Copy)]
struct PriorityLevel {
    name: &'static str,
    class: Class,
    limit: Limit,
}

/// `system:masters`, `system:nodes` and the groups every request belongs to.
const MASTERS: Subject = Subject::Group("system:masters");
const NODES: Subject = Subject::Group("system:nodes");
const UNAUTHENTICATED: Subject = Subject::Group("system:unauthenticated");
const AUTHENTICATED: Subject = Subject::Group("system:authenticated");
const SERVICE_ACCOUNTS: Subject = Subject::Group("system:serviceaccounts");
const CONTROLLER_MANAGER: Subject = Subject::User("system:kube-controller-manager");
const SCHEDULER: Subject = Subject::User("system:kube-scheduler");
const KUBE_SYSTEM_ACCOUNTS: Subject = Subject::KubeSystemAccount("*");

/// Every verb on every resource of every group, cluster-scoped or in any namespace.
const ALL_RESOURCES: ResourceRule = ResourceRule {
    verbs: &["*"],
    api_groups: &["*"],
    resources: &["*"],
    cluster_scope: true,
    namespaces: &["*"],
};

/// Every verb on every non-resource path.
const ALL_PATHS: NonResourceRule = NonResourceRule {
    verbs: &["*"],
    urls: &["*"],
};

/// The leader-election verbs.
const LEADER_VERBS: &[&str] = &["get", "create", "update"];

/// Leases in any namespace, as leader election uses them.
const ELECTION_LEASES: ResourceRule = ResourceRule {
    verbs: LEADER_VERBS,
    api_groups: &["coordination.k8s.io"],
    resources: &["leases"],
    cluster_scope: false,
    namespaces: &["*"],
};

/// A queuing limited level.
const fn queuing(shares: i64, lendable: i64, queues: i64, hand_size: i64) -> Limit {
    Limit::Limited {
        shares,
        lendable,
        excess: Excess::Queue {
            queues,
            hand_size,
            queue_length_limit: 50,
        },
    }
}

/// The priority levels, mandatory first (upstream's `MandatoryPriorityLevelConfigurations`,
/// then `SuggestedPriorityLevelConfigurations`, in their order).
const PRIORITY_LEVELS: [PriorityLevel; 8] = [
    PriorityLevel {
        name: "catch-all",
        class: Class::Mandatory,
        limit: Limit::Limited {
            shares: 5,
            lendable: 0,
            excess: Excess::Reject,
        },
    },
    PriorityLevel {
        name: "exempt",
        class: Class::Mandatory,
        limit: Limit::Exempt,
    },
    PriorityLevel {
        name: "system",
        class: Class::Suggested,
        limit: queuing(30, 33, 64, 6),
    },
    PriorityLevel {
        name: "node-high",
        class: Class::Suggested,
        limit: queuing(40, 25, 64, 6),
    },
    PriorityLevel {
        name: "leader-election",
        class: Class::Suggested,
        limit: queuing(10, 0, 16, 4),
    },
    PriorityLevel {
        name: "workload-high",
        class: Class::Suggested,
        limit: queuing(40, 50, 128, 6),
    },
    PriorityLevel {
        name: "workload-low",
        class: Class::Suggested,
        limit: queuing(100, 90, 128, 6),
    },
    PriorityLevel {
        name: "global-default",
        class: Class::Suggested,
        limit: queuing(20, 50, 128, 6),
    },
];

/// A flow schema matching every request of `subjects`.
const fn everything(
    name: &'static str,
    class: Class,
    level: &'static str,
    precedence: i64,
    distinguisher: Option<&'static str>,
    subjects: &'static [Subject],
) -> FlowSchema {
    FlowSchema {
        name,
        class,
        level,
        precedence,
        distinguisher,
        subjects,
        resource_rules: &[ALL_RESOURCES],
        non_resource_rules: &[ALL_PATHS],
    }
}

const BY_USER: Option<&str> = Some("ByUser");
const BY_NAMESPACE: Option<&str> = Some("ByNamespace");

/// The flow schemas, mandatory first (upstream's `MandatoryFlowSchemas`, then
/// `SuggestedFlowSchemas`, in their order).
const FLOW_SCHEMAS: [FlowSchema; 13] = [
    everything("exempt", Class::Mandatory, "exempt", 1, None, &[MASTERS]),
    everything(
        "catch-all",
        Class::Mandatory,
        "catch-all",
        10000,
        BY_USER,
        &[UNAUTHENTICATED, AUTHENTICATED],
    ),
    everything(
        "system-nodes",
        Class::Suggested,
        "system",
        500,
        BY_USER,
        &[NODES],
    ),
    FlowSchema {
        name: "system-node-high",
        class: Class::Suggested,
        level: "node-high",
        precedence: 400,
        distinguisher: BY_USER,
        subjects: &[NODES],
        resource_rules: &[
            ResourceRule {
                verbs: &["*"],
                api_groups: &[""],
                resources: &["nodes", "nodes/status"],
                cluster_scope: true,
                namespaces: &["*"],
            },
            ResourceRule {
                verbs: &["*"],
                ..ELECTION_LEASES
            },
        ],
        non_resource_rules: &[],
    },
    FlowSchema {
        name: "probes",
        class: Class::Suggested,
        level: "exempt",
        precedence: 2,
        distinguisher: None,
        subjects: &[UNAUTHENTICATED, AUTHENTICATED],
        resource_rules: &[],
        non_resource_rules: &[NonResourceRule {
            verbs: &["get"],
            urls: &["/healthz", "/readyz", "/livez"],
        }],
    },
    FlowSchema {
        name: "system-leader-election",
        class: Class::Suggested,
        level: "leader-election",
        precedence: 100,
        distinguisher: BY_USER,
        subjects: &[CONTROLLER_MANAGER, SCHEDULER, KUBE_SYSTEM_ACCOUNTS],
        resource_rules: &[ELECTION_LEASES],
        non_resource_rules: &[],
    },
    FlowSchema {
        name: "workload-leader-election",
        class: Class::Suggested,
        level: "leader-election",
        precedence: 200,
        distinguisher: BY_USER,
        subjects: &[KUBE_SYSTEM_ACCOUNTS],
        resource_rules: &[
            ResourceRule {
                verbs: LEADER_VERBS,
                api_groups: &[""],
                resources: &["endpoints", "configmaps"],
                cluster_scope: false,
                namespaces: &["*"],
            },
            ELECTION_LEASES,
        ],
        non_resource_rules: &[],
    },
    FlowSchema {
        name: "endpoint-controller",
        class: Class::Suggested,
        level: "workload-high",
        precedence: 150,
        distinguisher: BY_USER,
        subjects: &[
            CONTROLLER_MANAGER,
            Subject::KubeSystemAccount("endpoint-controller"),
            Subject::KubeSystemAccount("endpointslicemirroring-controller"),
        ],
        resource_rules: &[ResourceRule {
            verbs: LEADER_VERBS,
            api_groups: &[""],
            resources: &["endpoints"],
            cluster_scope: false,
            namespaces: &["*"],
        }],
        non_resource_rules: &[],
    },
    everything(
        "kube-controller-manager",
        Class::Suggested,
        "workload-high",
        800,
        BY_NAMESPACE,
        &[CONTROLLER_MANAGER],
    ),
    everything(
        "kube-scheduler",
        Class::Suggested,
        "workload-high",
        800,
        BY_NAMESPACE,
        &[SCHEDULER],
    ),
    everything(
        "kube-system-service-accounts",
        Class::Suggested,
        "workload-high",
        900,
        BY_NAMESPACE,
        &[KUBE_SYSTEM_ACCOUNTS],
    ),
    everything(
        "service-accounts",
        Class::Suggested,
        "workload-low",
        9000,
        BY_USER,
        &[SERVICE_ACCOUNTS],
    ),
    everything(
        "global-default",
        Class::Suggested,
        "global-default",
        9900,
        BY_USER,
        &[UNAUTHENTICATED, AUTHENTICATED],
    ),
];

impl Subject {
    /// The subject as the API spells it.
    fn to_json(self) -> Value {
        match self {
            Self::Group(name) => json!({"kind": "Group", "group": {"name": name}}),
            Self::User(name) => json!({"kind": "User", "user": {"name": name}}),
            Self::KubeSystemAccount(name) => json!({"kind": "ServiceAccount",
                "serviceAccount": {"name": name, "namespace": "kube-system"}}),
        }
    }
}

impl ResourceRule {
    /// The rule as the API spells it (`clusterScope` omitted when false, as Go omits it).
    fn to_json(self) -> Value {
        let mut rule = Map::new();
        rule.insert("verbs".into(), json!(self.verbs));
        rule.insert("apiGroups".into(), json!(self.api_groups));
        rule.insert("resources".into(), json!(self.resources));
        if self.cluster_scope {
            rule.insert("clusterScope".into(), json!(true));
        }
        rule.insert("namespaces".into(), json!(self.namespaces));
        Value::Object(rule)
    }
}

impl FlowSchema {
    /// The spec (`SetDefaults_FlowSchemaSpec` changes nothing in it).
    fn spec(&self) -> Value {
        let mut rule = Map::new();
        let subjects: Vec<Value> = self.subjects.iter().map(|s| s.to_json()).collect();
        rule.insert("subjects".into(), Value::Array(subjects));
        if !self.resource_rules.is_empty() {
            let rules = self.resource_rules.iter().map(|r| r.to_json()).collect();
            rule.insert("resourceRules".into(), Value::Array(rules));
        }
        if !self.non_resource_rules.is_empty() {
            let rules = self
                .non_resource_rules
                .iter()
                .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.urls}))
                .collect();
            rule.insert("nonResourceRules".into(), Value::Array(rules));
        }
        let mut spec = Map::new();
        spec.insert(
            "priorityLevelConfiguration".into(),
            json!({"name": self.level}),
        );
        spec.insert("matchingPrecedence".into(), json!(self.precedence));
        if let Some(method) = self.distinguisher {
            spec.insert("distinguisherMethod".into(), json!({"type": method}));
        }
        spec.insert("rules".into(), json!([Value::Object(rule)]));
        Value::Object(spec)
    }
}

impl PriorityLevel {
    /// The spec, with the v1 defaults (the exempt settings zero).
    fn spec(&self) -> Value {
        match self.limit {
            Limit::Exempt => json!({
                "type": "Exempt",
                "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
            }),
            Limit::Limited {
                shares,
                lendable,
                excess,
            } => {
                let response = match excess {
                    Excess::Reject => json!({"type": "Reject"}),
                    Excess::Queue {
                        queues,
                        hand_size,
                        queue_length_limit,
                    } => json!({"type": "Queue", "queuing": {"queues": queues,
                        "handSize": hand_size, "queueLengthLimit": queue_length_limit}}),
                };
                json!({"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
                    "limitResponse": response, "lendablePercent": lendable}})
            }
        }
    }
}

/// One object the server keeps: its resource, class, name and spec.
#[derive(Debug, Clone)]
pub(super) struct Bootstrap {
    /// `prioritylevelconfigurations` or `flowschemas`.
    pub resource: &'static str,
    /// How it is kept.
    pub class: Class,
    /// Its name.
    pub name: &'static str,
    /// Its spec, defaulted.
    pub spec: Value,
}

/// The priority levels of `class`, in upstream's order.
pub(super) fn priority_levels(class: Class) -> Vec<Bootstrap> {
    PRIORITY_LEVELS
        .iter()
        .filter(|l| l.class == class)
        .map(|l| Bootstrap {
            resource: "prioritylevelconfigurations",
            class,
            name: l.name,
            spec: l.spec(),
        })
        .collect()
}

/// The flow schemas of `class`, in upstream's order.
pub(super) fn flow_schemas(class: Class) -> Vec<Bootstrap> {
    FLOW_SCHEMAS
        .iter()
        .filter(|s| s.class == class)
        .map(|s| Bootstrap {
            resource: "flowschemas",
            class,
            name: s.name,
            spec: s.spec(),
        })
        .collect()
}

/// The fixed spec of a mandatory FlowSchema (upstream's `MandatoryFlowSchema*`), by name.
pub(super) fn mandatory_flow_schema(name: &str) -> Option<Value> {
    FLOW_SCHEMAS
        .iter()
        .find(|s| s.class == Class::Mandatory && s.name == name)
        .map(FlowSchema::spec)
}

/// The fixed spec of a mandatory PriorityLevelConfiguration (upstream's
/// `MandatoryPriorityLevelConfiguration*`), by name.
pub(super) fn mandatory_priority_level(name: &str) -> Option<Value> {
    PRIORITY_LEVELS
        .iter()
        .find(|l| l.class == Class::Mandatory && l.name == name)
        .map(PriorityLevel::spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flow_schema_names_a_bootstrap_level_and_names_are_unique() {
        let levels: Vec<&str> = PRIORITY_LEVELS.iter().map(|l| l.name).collect();
        for schema in &FLOW_SCHEMAS {
            assert!(levels.contains(&schema.level), "{}", schema.name);
        }
        let mut names: Vec<&str> = FLOW_SCHEMAS.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FLOW_SCHEMAS.len());
        assert_eq!(
            flow_schemas(Class::Mandatory).len() + flow_schemas(Class::Suggested).len(),
            13
        );
        assert_eq!(priority_levels(Class::Suggested).len(), 6);
    }

    #[test]
    fn specs_as_upstream_spells_them() {
        let probes = FLOW_SCHEMAS
            .iter()
            .find(|s| s.name == "probes")
            .map(FlowSchema::spec);
        assert_eq!(
            probes,
            Some(json!({
                "priorityLevelConfiguration": {"name": "exempt"},
                "matchingPrecedence": 2,
                "rules": [{
                    "subjects": [{"kind": "Group", "group": {"name": "system:unauthenticated"}},
                        {"kind": "Group", "group": {"name": "system:authenticated"}}],
                    "nonResourceRules": [{"verbs": ["get"],
                        "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
                }],
            }))
        );
        let high = FLOW_SCHEMAS
            .iter()
            .find(|s| s.name == "system-node-high")
            .map(FlowSchema::spec)
            .unwrap_or_default();
        assert_eq!(
            high["rules"][0]["resourceRules"][1],
            json!({"verbs": ["*"], "apiGroups": ["coordination.k8s.io"],
                "resources": ["leases"], "namespaces": ["*"]})
        );
        let level = PRIORITY_LEVELS
            .iter()
            .find(|l| l.name == "workload-low")
            .map(PriorityLevel::spec);
        assert_eq!(
            level,
            Some(
                json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 100,
                "lendablePercent": 90, "limitResponse": {"type": "Queue",
                "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}})
            )
        );
    }
}
