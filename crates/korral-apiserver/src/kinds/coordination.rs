//! `coordination.k8s.io/v1`: Leases, with upstream's `ValidateLease` / `ValidateLeaseUpdate`
//! (`pkg/apis/coordination/validation`).

use k8s_openapi::api::coordination::v1 as api;

use serde_json::{Value, json};

use super::KindDef;
use super::printer::{AGE, Column, Printer, age, text};
use super::strategy::{Context, Strategy};
use crate::error::Cause;
use crate::validation::names::{
    go_quote, invalid_rendered, invalid_value, validate_qualified_name,
};

/// The kinds of `coordination.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            LeaseStrategy,
        )
        .schema::<api::Lease>()
        .printer(LEASES),
    ]
}

/// The coordinated leader election strategies Kubernetes defines (`validLeaseStrategies`).
const LEASE_STRATEGIES: &[&str] = &["OldestEmulationVersion"];

/// Leases: a positive duration, non-negative transitions, a known or qualified strategy, and a
/// preferred holder only beside a strategy. Create and update check the same rules.
#[derive(Debug, Clone, Copy)]
struct LeaseStrategy;

impl Strategy for LeaseStrategy {
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_lease_spec(obj.get("spec").unwrap_or(&Value::Null), "spec")
    }
}

/// Upstream's `ValidateLeaseSpec`.
fn validate_lease_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let at = |name: &str| format!("{path}.{name}");
    if let Some(duration) = spec.get("leaseDurationSeconds").filter(|v| !v.is_null())
        && duration.as_i64().is_some_and(|d| d <= 0)
    {
        errs.push(invalid_value(
            &at("leaseDurationSeconds"),
            duration,
            "must be greater than 0",
        ));
    }
    if let Some(transitions) = spec.get("leaseTransitions").filter(|v| !v.is_null())
        && transitions.as_i64().is_some_and(|t| t < 0)
    {
        errs.push(invalid_value(
            &at("leaseTransitions"),
            transitions,
            "must be greater than or equal to 0",
        ));
    }
    let strategy = spec.get("strategy").and_then(Value::as_str);
    if let Some(strategy) = strategy {
        errs.extend(validate_coordinated_lease_strategy(
            strategy,
            &at("strategy"),
        ));
    }
    let preferred = spec
        .get("preferredHolder")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !preferred.is_empty() && strategy.is_none_or(str::is_empty) {
        errs.push(Cause::forbidden(
            at("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
    errs
}

/// Upstream's `ValidateCoordinatedLeaseStrategy`: a Kubernetes-defined name, or a qualified
/// name with a prefix. As upstream, its causes name `<path>.strategy` (the caller already
/// passes the `strategy` field's path).
fn validate_coordinated_lease_strategy(strategy: &str, path: &str) -> Vec<Cause> {
    let at = format!("{path}.strategy");
    if strategy.split('/').count() == 1 {
        if LEASE_STRATEGIES.contains(&strategy) {
            return Vec::new();
        }
        let supported: Vec<Value> = LEASE_STRATEGIES.iter().map(|s| json!(s)).collect();
        return vec![Cause::not_supported(at, &json!(strategy), &supported)];
    }
    validate_qualified_name(strategy)
        .into_iter()
        .map(|msg| invalid_rendered(&at, &go_quote(strategy), &msg))
        .collect()
}

const LEASES: Printer = Printer {
    columns: &[
        Column::new(
            "Holder",
            "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
        ),
        AGE,
    ],
    cells: |obj| vec![json!(text(obj, "spec.holderIdentity")), age(obj)],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn summaries(spec: Value) -> Vec<String> {
        validate_lease_spec(&spec, "spec")
            .iter()
            .map(Cause::summary)
            .collect()
    }

    #[test]
    fn lease_specs_as_upstream() {
        let cases: &[(Value, &[&str])] = &[
            (
                json!({"holderIdentity": "me", "leaseDurationSeconds": 15}),
                &[],
            ),
            (json!({}), &[]),
            (
                json!({"leaseDurationSeconds": 0}),
                &["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"],
            ),
            (
                json!({"leaseDurationSeconds": -3, "leaseTransitions": -1}),
                &[
                    "spec.leaseDurationSeconds: Invalid value: -3: must be greater than 0",
                    "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
                ],
            ),
            (json!({"leaseTransitions": 0}), &[]),
            (
                json!({"strategy": "OldestEmulationVersion", "preferredHolder": "a"}),
                &[],
            ),
            (
                json!({"strategy": "Newest"}),
                &[
                    "spec.strategy.strategy: Unsupported value: \"Newest\": supported values: \"OldestEmulationVersion\"",
                ],
            ),
            (json!({"strategy": "example.com/mine"}), &[]),
            (
                json!({"strategy": "example.com/"}),
                &[
                    "spec.strategy.strategy: Invalid value: \"example.com/\": name part must be non-empty",
                    "spec.strategy.strategy: Invalid value: \"example.com/\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                ],
            ),
            (
                json!({"preferredHolder": "a"}),
                &[
                    "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined",
                ],
            ),
            (
                json!({"preferredHolder": "a", "strategy": ""}),
                &[
                    "spec.strategy.strategy: Unsupported value: \"\": supported values: \"OldestEmulationVersion\"",
                    "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined",
                ],
            ),
            (json!({"preferredHolder": ""}), &[]),
        ];
        for (spec, want) in cases {
            assert_eq!(summaries(spec.clone()), *want, "{spec}");
        }
    }
}
