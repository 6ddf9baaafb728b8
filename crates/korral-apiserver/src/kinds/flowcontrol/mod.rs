//! `flowcontrol.apiserver.k8s.io/v1`: FlowSchemas and PriorityLevelConfigurations, stored with
//! upstream's defaults and validation, and the mandatory and suggested objects of both kinds
//! every server keeps from its start (upstream's APF configuration bootstrap, see
//! [`bootstrap`] and [`ensurer`]). The server enforces them (`crate::apf`) unless API priority
//! and fairness is switched off.

mod bootstrap;
mod ensurer;
mod validation;

use std::cmp::Ordering;

use k8s_openapi::api::flowcontrol::v1 as api;
use serde_json::{Map, Value, json};

use super::KindDef;
use super::lists::{ListAt, ListRule};
use super::printer::{AGE, Column, Printer, age, int, text};
use super::strategy::{Context, Strategy};
use crate::error::Cause;
use crate::meta;
use crate::registry::ResourceInfo;
pub(crate) use ensurer::ensure_configuration;

const GROUP: &str = "flowcontrol.apiserver.k8s.io";

/// The annotation the bootstrap objects carry: the server keeps their spec up to date.
const AUTO_UPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

/// FlowSchema: the string lists of its rules, sets for applies only.
const FLOW_SCHEMA_LISTS: &[ListAt] = &[
    ListAt {
        path: "spec.rules.resourceRules.verbs",
        rule: ListRule::ApplySet,
    },
    ListAt {
        path: "spec.rules.resourceRules.apiGroups",
        rule: ListRule::ApplySet,
    },
    ListAt {
        path: "spec.rules.resourceRules.resources",
        rule: ListRule::ApplySet,
    },
    ListAt {
        path: "spec.rules.resourceRules.namespaces",
        rule: ListRule::ApplySet,
    },
    ListAt {
        path: "spec.rules.nonResourceRules.verbs",
        rule: ListRule::ApplySet,
    },
    ListAt {
        path: "spec.rules.nonResourceRules.nonResourceURLs",
        rule: ListRule::ApplySet,
    },
];

/// The kinds of `flowcontrol.apiserver.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(GROUP, "v1", "flowschemas", "FlowSchema", FlowSchemas)
            .schema::<api::FlowSchema>()
            .lists(FLOW_SCHEMA_LISTS)
            .cluster_scoped()
            .status()
            .generation()
            .printer(FLOW_SCHEMAS),
        KindDef::new(
            GROUP,
            "v1",
            "prioritylevelconfigurations",
            "PriorityLevelConfiguration",
            PriorityLevels,
        )
        .schema::<api::PriorityLevelConfiguration>()
        .cluster_scoped()
        .status()
        .generation()
        .printer(PRIORITY_LEVELS),
    ]
}

/// Sets `key` of `map` to `value` when absent, null or zero.
fn default_zero(map: &mut Map<String, Value>, key: &str, value: i64) {
    if map
        .get(key)
        .is_none_or(|v| v.is_null() || v.as_i64() == Some(0))
    {
        map.insert(key.to_string(), json!(value));
    }
}

/// Sets `key` of `map` to `value` when absent or null.
fn default_unset(map: &mut Map<String, Value>, key: &str, value: i64) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), json!(value));
    }
}

/// A new object's status: empty (upstream's zero `Status`, serialized as `{}`).
fn reset_status(obj: &mut Value) {
    if let Some(root) = obj.as_object_mut() {
        root.insert("status".into(), json!({}));
    }
}

/// FlowSchemas.
#[derive(Debug, Clone, Copy)]
struct FlowSchemas;

impl Strategy for FlowSchemas {
    fn prepare_for_create(&self, _info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        reset_status(obj);
    }

    /// `SetDefaults_FlowSchemaSpec`: `matchingPrecedence` 1000.
    fn default(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            default_zero(spec, "matchingPrecedence", 1000);
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::validate_flow_schema(obj)
    }

    /// Upstream's `printFlowSchemaList` sorts by `FlowSchemaSequence`: matching precedence,
    /// then name.
    fn table_row_order(&self) -> Option<fn(&Value, &Value) -> Ordering> {
        Some(|a, b| {
            let key = |o: &Value| (int(o, "spec.matchingPrecedence"), meta::name(o).to_string());
            key(a).cmp(&key(b))
        })
    }

    fn validate_update(&self, obj: &Value, _old: &Value, ctx: &Context) -> Vec<Cause> {
        match ctx.subresource {
            Some("status") => validation::validate_status(obj),
            _ => validation::validate_flow_schema(obj),
        }
    }
}

/// PriorityLevelConfigurations.
#[derive(Debug, Clone, Copy)]
struct PriorityLevels;

impl Strategy for PriorityLevels {
    fn prepare_for_create(&self, _info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        reset_status(obj);
    }

    /// Upstream's v1 defaults: limited levels get 30 shares and lend nothing, queuing gets 64
    /// queues, hands of 8 and queues of 50; the exempt settings default to zero.
    fn default(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if let Some(limited) = spec.get_mut("limited").and_then(Value::as_object_mut) {
            default_unset(limited, "nominalConcurrencyShares", 30);
            default_unset(limited, "lendablePercent", 0);
            if let Some(queuing) = limited
                .get_mut("limitResponse")
                .and_then(|r| r.get_mut("queuing"))
                .and_then(Value::as_object_mut)
            {
                default_zero(queuing, "handSize", 8);
                default_zero(queuing, "queues", 64);
                default_zero(queuing, "queueLengthLimit", 50);
            }
        }
        if let Some(exempt) = spec.get_mut("exempt").and_then(Value::as_object_mut) {
            default_unset(exempt, "nominalConcurrencyShares", 0);
            default_unset(exempt, "lendablePercent", 0);
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::validate_priority_level(obj)
    }

    fn validate_update(&self, obj: &Value, _old: &Value, ctx: &Context) -> Vec<Cause> {
        match ctx.subresource {
            Some("status") => validation::validate_status(obj),
            _ => validation::validate_priority_level(obj),
        }
    }
}

/// `NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL`, as upstream's
/// `printFlowSchema` (a list's rows are sorted by [`FlowSchemas`]' `table_row_order`).
const FLOW_SCHEMAS: Printer = Printer {
    columns: &[
        Column::new(
            "PriorityLevel",
            "`name` is the name of the priority level configuration being referenced Required.",
        ),
        Column::new(
            "MatchingPrecedence",
            "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.",
        ),
        Column::new(
            "DistinguisherMethod",
            "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.",
        ),
        AGE,
        Column::new(
            "MissingPL",
            "references a broken or non-existent PriorityLevelConfiguration",
        ),
    ],
    cells: |obj| {
        let method = text(obj, "spec.distinguisherMethod.type");
        let dangling = meta::path(obj, "status.conditions")
            .and_then(Value::as_array)
            .and_then(|list| {
                list.iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some("Dangling"))
            })
            .map_or("?", |c| {
                c.get("status").and_then(Value::as_str).unwrap_or("")
            });
        vec![
            json!(text(obj, "spec.priorityLevelConfiguration.name")),
            json!(int(obj, "spec.matchingPrecedence")),
            json!(if method.is_empty() { "<none>" } else { method }),
            age(obj),
            json!(dangling),
        ]
    },
};

/// `NAME TYPE NOMINALCONCURRENCYSHARES QUEUES HANDSIZE QUEUELENGTHLIMIT AGE`, as upstream's
/// `printPriorityLevelConfiguration`.
const PRIORITY_LEVELS: Printer = Printer {
    columns: &[
        Column::new(
            "Type",
            "`type` indicates whether this priority level is subject to limitation on request execution.  A value of `\"Exempt\"` means that requests of this priority level are not subject to a limit (and thus are never queued) and do not detract from the capacity made available to other priority levels.  A value of `\"Limited\"` means that (a) requests of this priority level _are_ subject to limits and (b) some of the server's limited capacity is made available exclusively to this priority level. Required.",
        ),
        Column::new(
            "NominalConcurrencyShares",
            "`nominalConcurrencyShares` (NCS) contributes to the computation of the NominalConcurrencyLimit (NominalCL) of this level. This is the number of execution seats available at this priority level. This is used both for requests dispatched from this priority level as well as requests dispatched from other priority levels borrowing seats from this level. The server's concurrency limit (ServerCL) is divided among the Limited priority levels in proportion to their NCS values:\n\nNominalCL(i)  = ceil( ServerCL * NCS(i) / sum_ncs ) sum_ncs = sum[priority level k] NCS(k)\n\nBigger numbers mean a larger nominal concurrency limit, at the expense of every other priority level.\n\nIf not specified, this field defaults to a value of 30.\n\nSetting this field to zero supports the construction of a \"jail\" for this priority level that is used to hold some request(s)",
        ),
        Column::new(
            "Queues",
            "`queues` is the number of queues for this priority level. The queues exist independently at each apiserver. The value must be positive.  Setting it to 1 effectively precludes shufflesharding and thus makes the distinguisher method of associated flow schemas irrelevant.  This field has a default value of 64.",
        ),
        Column::new(
            "HandSize",
            "`handSize` is a small positive number that configures the shuffle sharding of requests into queues.  When enqueuing a request at this priority level the request's flow identifier (a string pair) is hashed and the hash value is used to shuffle the list of queues and deal a hand of the size specified here.  The request is put into one of the shortest queues in that hand. `handSize` must be no larger than `queues`, and should be significantly smaller (so that a few heavy flows do not saturate most of the queues).  See the user-facing documentation for more extensive guidance on setting this field.  This field has a default value of 8.",
        ),
        Column::new(
            "QueueLengthLimit",
            "`queueLengthLimit` is the maximum number of requests allowed to be waiting in a given queue of this priority level at a time; excess requests are rejected.  This value must be positive.  If not specified, it will be defaulted to 50.",
        ),
        AGE,
    ],
    cells: |obj| {
        let none = || json!("<none>");
        let limited = meta::path(obj, "spec.limited").filter(|l| !l.is_null());
        let queuing = limited
            .and_then(|l| meta::path(l, "limitResponse.queuing"))
            .filter(|q| !q.is_null());
        let number = |v: &Value, f: &str| json!(v.get(f).and_then(Value::as_i64).unwrap_or(0));
        vec![
            json!(text(obj, "spec.type")),
            limited.map_or_else(none, |l| number(l, "nominalConcurrencyShares")),
            queuing.map_or_else(none, |q| number(q, "queues")),
            queuing.map_or_else(none, |q| number(q, "handSize")),
            queuing.map_or_else(none, |q| number(q, "queueLengthLimit")),
            age(obj),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_as_upstream() {
        let mut pl = json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}});
        PriorityLevels.default(&mut pl);
        assert_eq!(
            pl["spec"]["limited"],
            json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
                "limitResponse": {"type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
        );
        let mut zero =
            json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0}}});
        PriorityLevels.default(&mut zero);
        assert_eq!(zero["spec"]["limited"]["nominalConcurrencyShares"], 0);
        let mut exempt = json!({"spec": {"type": "Exempt", "exempt": {}}});
        PriorityLevels.default(&mut exempt);
        assert_eq!(
            exempt["spec"]["exempt"],
            json!({"nominalConcurrencyShares": 0, "lendablePercent": 0})
        );
        let mut fs = json!({"spec": {"priorityLevelConfiguration": {"name": "x"}}});
        FlowSchemas.default(&mut fs);
        assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
    }

    /// Every bootstrap object, as stored: levels, then schemas.
    fn bootstrap_objects() -> Vec<Value> {
        use bootstrap::{Class, flow_schemas, priority_levels};
        let all = [Class::Mandatory, Class::Suggested];
        let levels = all.into_iter().flat_map(priority_levels);
        let schemas = all.into_iter().flat_map(flow_schemas);
        levels
            .map(|b| (b, "PriorityLevelConfiguration"))
            .chain(schemas.map(|b| (b, "FlowSchema")))
            .map(|(b, kind)| json!({"kind": kind, "metadata": {"name": b.name}, "spec": b.spec}))
            .collect()
    }

    #[test]
    fn bootstrap_objects_are_valid_and_defaulted() {
        let objects = bootstrap_objects();
        assert_eq!(objects.len(), 21);
        for obj in &objects {
            let mut defaulted = obj.clone();
            match obj["kind"].as_str() {
                Some("FlowSchema") => {
                    FlowSchemas.default(&mut defaulted);
                    assert!(validation::validate_flow_schema(obj).is_empty(), "{obj}");
                }
                _ => {
                    PriorityLevels.default(&mut defaulted);
                    assert!(validation::validate_priority_level(obj).is_empty(), "{obj}");
                }
            }
            assert_eq!(&defaulted, obj, "bootstrap objects are stored as given");
        }
    }

    #[test]
    fn cells_as_upstream_prints_them() {
        let objects = bootstrap_objects();
        let named = |kind: &str, name: &str| {
            objects
                .iter()
                .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(
            (PRIORITY_LEVELS.cells)(&named("PriorityLevelConfiguration", "catch-all"))[..5],
            [
                json!("Limited"),
                json!(5),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        assert_eq!(
            (PRIORITY_LEVELS.cells)(&named("PriorityLevelConfiguration", "workload-high"))[..5],
            [json!("Limited"), json!(40), json!(128), json!(6), json!(50)]
        );
        let mut catch_all = named("FlowSchema", "catch-all");
        assert_eq!(
            (FLOW_SCHEMAS.cells)(&catch_all)[..3],
            [json!("catch-all"), json!(10000), json!("ByUser")]
        );
        assert_eq!((FLOW_SCHEMAS.cells)(&catch_all)[4], "?");
        catch_all["status"] =
            json!({"conditions": [ensurer::dangling_condition("catch-all", true)]});
        assert_eq!((FLOW_SCHEMAS.cells)(&catch_all)[4], "False");
        assert_eq!(
            (FLOW_SCHEMAS.cells)(&named("FlowSchema", "exempt"))[2],
            "<none>"
        );
    }
}
