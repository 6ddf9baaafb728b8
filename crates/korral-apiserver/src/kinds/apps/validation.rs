//! The strategy of the `apps/v1` workloads: upstream's `pkg/apis/apps/validation` rules for
//! Deployments, ReplicaSets, StatefulSets and DaemonSets on create and update.

use serde_json::Value;

use crate::ApiError;
use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::kinds::workload::{
    StatusRules, canonicalize_template, immutable, int_or_percent, is_zero, nonnegative,
    nonnegative_fields, restart_policy_in, validate_status, validate_template,
};
use crate::objects::FieldValidation;
use crate::quantity;
use crate::registry::ResourceInfo;
use crate::validation::enums::{self, Order};
use crate::validation::names::{child, invalid_value};
use crate::validation::selectors::validate_controller_selector;

/// Which workload a [`WorkloadStrategy`] validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Workload {
    /// `Deployment`.
    Deployment,
    /// `ReplicaSet`.
    ReplicaSet,
    /// `StatefulSet`.
    StatefulSet,
    /// `DaemonSet`.
    DaemonSet,
}

impl Workload {
    /// The rules of the status its controller reports.
    fn status_rules(self) -> &'static StatusRules {
        match self {
            Self::Deployment => &DEPLOYMENT_STATUS,
            Self::ReplicaSet => &REPLICA_SET_STATUS,
            Self::StatefulSet => &STATEFUL_SET_STATUS,
            Self::DaemonSet => &DAEMON_SET_STATUS,
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::ReplicaSet => "ReplicaSet",
            Self::StatefulSet => "StatefulSet",
            Self::DaemonSet => "DaemonSet",
        }
    }
}

/// Upstream's `ValidateDeploymentStatus` (and `terminatingReplicas`, not negative when set).
const DEPLOYMENT_STATUS: StatusRules = StatusRules {
    nonnegative: &[
        "observedGeneration",
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
        "unavailableReplicas",
        "terminatingReplicas",
        "collisionCount",
    ],
    at_most_replicas: &["updatedReplicas", "readyReplicas", "availableReplicas"],
    available_over_ready: Some("cannot be greater than readyReplicas"),
    collision_count: true,
};

/// Upstream's `ValidateReplicaSetStatus`.
const REPLICA_SET_STATUS: StatusRules = StatusRules {
    nonnegative: &[
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
        "terminatingReplicas",
    ],
    at_most_replicas: &["fullyLabeledReplicas", "readyReplicas", "availableReplicas"],
    available_over_ready: Some("cannot be greater than readyReplicas"),
    collision_count: false,
};

/// Upstream's `ValidateStatefulSetStatus`.
const STATEFUL_SET_STATUS: StatusRules = StatusRules {
    nonnegative: &[
        "replicas",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
        "observedGeneration",
        "collisionCount",
    ],
    at_most_replicas: &[
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
    ],
    available_over_ready: Some("cannot be greater than status.readyReplicas"),
    collision_count: true,
};

/// Upstream's `validateDaemonSetStatus`: counters only, no bounds between them.
const DAEMON_SET_STATUS: StatusRules = StatusRules {
    nonnegative: &[
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
        "observedGeneration",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
        "collisionCount",
    ],
    at_most_replicas: &[],
    available_over_ready: None,
    collision_count: true,
};

/// The strategy of one `apps/v1` workload kind.
#[derive(Debug, Clone, Copy)]
pub(super) struct WorkloadStrategy(pub(super) Workload);

/// The annotation in which `apps/v1` shows a DaemonSet's template generation (upstream's
/// internal `spec.templateGeneration`): 1 on create, one more on each template change.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// Sets a DaemonSet's template generation annotation.
fn set_template_generation(obj: &mut Value, generation: i64) {
    if let Some(md) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = md
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if !annotations.is_object() {
            *annotations = Value::Object(Default::default());
        }
        if let Some(map) = annotations.as_object_mut() {
            map.insert(
                TEMPLATE_GENERATION.into(),
                Value::String(generation.to_string()),
            );
        }
    }
}

impl Strategy for WorkloadStrategy {
    /// A new DaemonSet's template generation is 1, as upstream's `PrepareForCreate` sets it.
    fn prepare_for_create(&self, info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        if info.status_subresource {
            crate::kinds::strategy::strip_status(obj);
        }
        if self.0 == Workload::DaemonSet {
            set_template_generation(obj, 1);
        }
    }

    /// A DaemonSet's template generation grows by one when its template changes and is the
    /// stored one otherwise (upstream derives it from the stored internal field; Korral keeps
    /// the stored annotation rather than reject a client that dropped or edited it).
    fn prepare_for_update(&self, obj: &mut Value, old: &Value) {
        if self.0 != Workload::DaemonSet {
            return;
        }
        let stored = crate::meta::path(old, "metadata.annotations")
            .and_then(|a| a.get(TEMPLATE_GENERATION))
            .and_then(Value::as_str)
            .and_then(|g| g.parse::<i64>().ok())
            .unwrap_or(1);
        let template = |o: &Value| crate::meta::path(o, "spec.template").cloned();
        let generation = if template(obj) == template(old) {
            stored
        } else {
            stored.saturating_add(1)
        };
        set_template_generation(obj, generation);
    }

    /// The template's quantities are read and written back in canonical form; a malformed one
    /// makes the object undecodable (400), as upstream's decoder.
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        canonicalize_template(obj, "spec.template").map_err(|e| quantity::undecodable(info, e))?;
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("apps", self.0.kind(), obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        match self.0 {
            Workload::Deployment => deployment_spec(spec),
            Workload::ReplicaSet => replica_set_spec(spec),
            Workload::StatefulSet => stateful_set_spec(spec),
            Workload::DaemonSet => daemon_set_spec(spec),
        }
    }

    /// The spec rules and what may change, or through `/status` the status rules alone (the
    /// spec is the stored one), as upstream's status strategies validate.
    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return validate_status(obj, old, self.0.status_rules());
        }
        let mut errs = self.validate(obj, ctx);
        let (spec, old_spec) = (
            obj.get("spec").unwrap_or(&Value::Null),
            old.get("spec").unwrap_or(&Value::Null),
        );
        match self.0 {
            Workload::StatefulSet => errs.extend(stateful_set_update(spec, old_spec)),
            _ => errs.extend(immutable(spec, old_spec, "selector", "spec")),
        }
        errs
    }
}

/// The selector, template and restart-policy rules every workload shares
/// (`ValidatePodTemplateSpecForReplicaSet`), `what` naming it in the empty-selector message.
fn selector_and_template(spec: &Value, what: &str, kind: &str) -> Vec<Cause> {
    let mut errs = validate_controller_selector(spec, "spec", "spec.template", what);
    let template = spec.get("template").unwrap_or(&Value::Null);
    errs.extend(validate_template(template, "spec.template"));
    errs.extend(restart_policy_in(template, "spec.template", &["Always"]));
    if template
        .get("spec")
        .and_then(|s| s.get("activeDeadlineSeconds"))
        .is_some_and(|v| !v.is_null())
    {
        errs.push(Cause::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errs
}

/// Upstream's `ValidateDeploymentSpec`.
fn deployment_spec(spec: &Value) -> Vec<Cause> {
    let mut errs = nonnegative_fields(spec, &["replicas"], "spec");
    errs.extend(selector_and_template(spec, "deployment", "ReplicaSet"));
    if let Some(strategy) = spec.get("strategy") {
        errs.extend(deployment_strategy(strategy, "spec.strategy"));
    }
    errs.extend(nonnegative_fields(
        spec,
        &["minReadySeconds", "revisionHistoryLimit"],
        "spec",
    ));
    if let Some(deadline) = spec.get("progressDeadlineSeconds").filter(|v| !v.is_null()) {
        errs.extend(nonnegative(spec, "progressDeadlineSeconds", "spec"));
        let min_ready = spec
            .get("minReadySeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if deadline.as_i64().is_some_and(|d| d <= min_ready) {
            errs.push(invalid_value(
                "spec.progressDeadlineSeconds",
                deadline,
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

/// Upstream's `ValidateDeploymentStrategy`.
fn deployment_strategy(strategy: &Value, path: &str) -> Vec<Cause> {
    let rolling = strategy.get("rollingUpdate").filter(|v| !v.is_null());
    match strategy.get("type").and_then(Value::as_str) {
        Some("Recreate") => rolling
            .map(|_| {
                Cause::forbidden(
                    child(path, "rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            })
            .into_iter()
            .collect(),
        Some("RollingUpdate") => match rolling {
            None => vec![Cause::required(
                child(path, "rollingUpdate"),
                "this should be defaulted and never be nil",
            )],
            Some(rolling) => rolling_update(rolling, &child(path, "rollingUpdate")),
        },
        _ => vec![enums::DEPLOYMENT_STRATEGY_TYPE.not_supported(path, strategy, Order::Declared)],
    }
}

/// Upstream's `ValidateRollingUpdateDeployment` (and the DaemonSet's equivalent):
/// `maxUnavailable` and `maxSurge` are int-or-percent values, not both zero.
fn rolling_update(rolling: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let unavailable = rolling.get("maxUnavailable").filter(|v| !v.is_null());
    let surge = rolling.get("maxSurge").filter(|v| !v.is_null());
    if let Some(v) = unavailable {
        errs.extend(int_or_percent(v, &child(path, "maxUnavailable")));
    }
    if let Some(v) = surge {
        errs.extend(int_or_percent(v, &child(path, "maxSurge")));
    }
    if is_zero(unavailable) && is_zero(surge) {
        errs.push(invalid_value(
            &child(path, "maxUnavailable"),
            unavailable.unwrap_or(&Value::Null),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    errs
}

/// Upstream's `ValidateReplicaSetSpec`.
fn replica_set_spec(spec: &Value) -> Vec<Cause> {
    let mut errs = nonnegative_fields(spec, &["replicas", "minReadySeconds"], "spec");
    // Upstream names the wrong kind in this message; kept as it answers.
    errs.extend(selector_and_template(spec, "deployment", "ReplicaSet"));
    errs
}

/// Upstream's `ValidateStatefulSetSpec`.
fn stateful_set_spec(spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    match spec.get("podManagementPolicy") {
        None | Some(Value::Null) => {}
        Some(p) if matches!(p.as_str(), Some("OrderedReady" | "Parallel")) => {}
        Some(p) => errs.push(Cause::invalid(
            "spec.podManagementPolicy",
            p,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    if let Some(strategy) = spec.get("updateStrategy").filter(|v| !v.is_null()) {
        let path = "spec.updateStrategy";
        let rolling = strategy.get("rollingUpdate").filter(|v| !v.is_null());
        match strategy.get("type").and_then(Value::as_str) {
            Some("OnDelete") if rolling.is_some() => errs.push(Cause::forbidden(
                child(path, "rollingUpdate"),
                "only allowed for updateStrategy 'RollingUpdate'",
            )),
            Some("OnDelete") => {}
            Some("RollingUpdate") => {
                if let Some(rolling) = rolling {
                    let at = child(path, "rollingUpdate");
                    errs.extend(nonnegative(rolling, "partition", &at));
                    if let Some(v) = rolling.get("maxUnavailable").filter(|v| !v.is_null()) {
                        errs.extend(int_or_percent(v, &child(&at, "maxUnavailable")));
                        if is_zero(Some(v)) {
                            errs.push(invalid_value(
                                &child(&at, "maxUnavailable"),
                                v,
                                "must be greater than 0",
                            ));
                        }
                    }
                }
            }
            _ => errs.push(invalid_value(
                path,
                strategy,
                "must be 'RollingUpdate' or 'OnDelete'",
            )),
        }
    }
    if let Some(policy) = spec
        .get("persistentVolumeClaimRetentionPolicy")
        .filter(|v| !v.is_null())
    {
        errs.extend(claim_retention_policy(
            policy,
            "spec.persistentVolumeClaimRetentionPolicy",
        ));
    }
    errs.extend(nonnegative_fields(
        spec,
        &["revisionHistoryLimit", "replicas", "minReadySeconds"],
        "spec",
    ));
    if let Some(ordinals) = spec.get("ordinals").filter(|v| !v.is_null()) {
        errs.extend(nonnegative(ordinals, "start", "spec.ordinals"));
    }
    errs.extend(selector_and_template(spec, "statefulset", "StatefulSet"));
    errs
}

/// Upstream's `ValidatePersistentVolumeClaimRetentionPolicy`: both policies are `Retain` or
/// `Delete` (the defaults fill a missing one with `Retain`).
fn claim_retention_policy(policy: &Value, path: &str) -> Vec<Cause> {
    const SUPPORTED: [&str; 2] = ["Retain", "Delete"];
    ["whenDeleted", "whenScaled"]
        .into_iter()
        .filter_map(|field| {
            let value = policy.get(field).unwrap_or(&Value::Null);
            let known = value.as_str().is_some_and(|v| SUPPORTED.contains(&v));
            let supported: Vec<Value> = SUPPORTED.iter().map(|v| Value::from(*v)).collect();
            (!known).then(|| {
                let shown = if value.is_null() {
                    Value::from("")
                } else {
                    value.clone()
                };
                Cause::not_supported(child(path, field), &shown, &supported)
            })
        })
        .collect()
}

/// Upstream's `ValidateStatefulSetUpdate`: only some spec fields may change.
fn stateful_set_update(spec: &Value, old: &Value) -> Vec<Cause> {
    const MUTABLE: [&str; 7] = [
        "replicas",
        "ordinals",
        "template",
        "updateStrategy",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
        "minReadySeconds",
    ];
    let strip = |s: &Value| {
        let mut s = s.clone();
        if let Some(map) = s.as_object_mut() {
            for field in MUTABLE {
                map.remove(field);
            }
        }
        s
    };
    if strip(spec) == strip(old) {
        return Vec::new();
    }
    vec![Cause::forbidden(
        "spec",
        "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    )]
}

/// Upstream's `ValidateDaemonSetSpec`.
fn daemon_set_spec(spec: &Value) -> Vec<Cause> {
    let mut errs = selector_and_template(spec, "daemonset", "DaemonSet");
    errs.extend(nonnegative_fields(
        spec,
        &["minReadySeconds", "templateGeneration"],
        "spec",
    ));
    if let Some(strategy) = spec.get("updateStrategy").filter(|v| !v.is_null()) {
        let path = "spec.updateStrategy";
        match strategy.get("type").and_then(Value::as_str) {
            Some("OnDelete") => {}
            Some("RollingUpdate") => match strategy.get("rollingUpdate").filter(|v| !v.is_null()) {
                None => errs.push(Cause::required(child(path, "rollingUpdate"), "")),
                Some(rolling) => {
                    errs.extend(rolling_update(rolling, &child(path, "rollingUpdate")))
                }
            },
            _ => errs.push(enums::DAEMON_SET_UPDATE_STRATEGY_TYPE.not_supported(
                path,
                strategy,
                Order::Sorted,
            )),
        }
    }
    errs.extend(nonnegative_fields(spec, &["revisionHistoryLimit"], "spec"));
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summaries(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    fn spec(extra: Value) -> Value {
        let mut spec = json!({
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "i"}]},
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "progressDeadlineSeconds": 600,
        });
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        crate::kinds::workload::with_template_defaults(spec)
    }

    #[test]
    fn valid_deployments_pass() {
        assert!(deployment_spec(&spec(json!({}))).is_empty());
    }

    #[test]
    fn deployment_rules_match_upstream() {
        assert_eq!(
            summaries(deployment_spec(&spec(json!({"replicas": -1})))),
            ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
        );
        assert_eq!(
            summaries(deployment_spec(&spec(
                json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}}})
            ))),
            [
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"
            ]
        );
        assert_eq!(
            summaries(deployment_spec(&spec(json!({"minReadySeconds": 700})))),
            [
                "spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"
            ]
        );
        let mut never = spec(json!({}));
        never["template"]["spec"]["restartPolicy"] = json!("Never");
        assert_eq!(
            summaries(deployment_spec(&never)),
            [
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""
            ]
        );
        assert_eq!(
            summaries(deployment_spec(&spec(
                json!({"strategy": {"type": "Recreate", "rollingUpdate": {}}})
            ))),
            [
                "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
            ]
        );
    }

    #[test]
    fn stateful_sets_only_change_some_fields() {
        let old = json!({"replicas": 1, "serviceName": "a", "template": {}});
        let scaled = json!({"replicas": 3, "serviceName": "a", "template": {"x": 1}});
        assert!(stateful_set_update(&scaled, &old).is_empty());
        let renamed = json!({"replicas": 1, "serviceName": "b", "template": {}});
        assert_eq!(stateful_set_update(&renamed, &old)[0].field, "spec");
    }

    #[test]
    fn stateful_set_ordinals_and_claim_retention_match_upstream() {
        let mut set = spec(json!({
            "ordinals": {"start": -2},
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Keep", "whenScaled": "Delete"},
        }));
        if let Some(m) = set.as_object_mut() {
            m.remove("strategy");
            m.remove("progressDeadlineSeconds");
        }
        assert_eq!(
            summaries(stateful_set_spec(&set)),
            [
                "spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: \"Keep\": supported values: \"Retain\", \"Delete\"",
                "spec.ordinals.start: Invalid value: -2: must be greater than or equal to 0",
            ]
        );
        set["ordinals"] = json!({"start": 3});
        set["persistentVolumeClaimRetentionPolicy"] =
            json!({"whenDeleted": "Delete", "whenScaled": "Retain"});
        assert!(summaries(stateful_set_spec(&set)).is_empty());
    }

    #[test]
    fn daemon_sets_need_a_selector() {
        let mut ds = spec(json!({"selector": {}}));
        if let Some(m) = ds.as_object_mut() {
            m.remove("strategy");
            m.remove("replicas");
            m.remove("progressDeadlineSeconds");
        }
        assert_eq!(
            summaries(daemon_set_spec(&ds)),
            ["spec.selector: Invalid value: {}: empty selector is invalid for daemonset"]
        );
    }
}
