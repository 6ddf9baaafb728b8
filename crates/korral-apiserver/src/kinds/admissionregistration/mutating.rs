//! MutatingAdmissionPolicies and their bindings (`admissionregistration.k8s.io/v1`), stored
//! with upstream's defaults (`SetDefaults_MutatingAdmissionPolicySpec`, match resources) and
//! validation (`ValidateMutatingAdmissionPolicy` / `Binding`); `crate::admission` applies them.

use serde_json::{Value, json};

use super::super::printer::{AGE, Column, Printer, age, text};
use super::super::strategy::{Context, Strategy};
use super::{
    check_enum, default_binding_spec, default_policy_spec, match_conditions_unchanged,
    validate_match_resources, validate_param_kind, validate_param_ref,
    validate_policy_match_conditions, validate_policy_name, validate_variables, values,
};
use crate::admission::declarations;
use crate::error::Cause;
use crate::validation::enums;
use crate::validation::names::{child, index};

/// The operations a mutation may apply to (upstream's `supportedMutatingOperations`, sorted):
/// a delete cannot be mutated.
const MUTATING_OPERATIONS: [&str; 4] = ["*", "CONNECT", "CREATE", "UPDATE"];

/// The patch types of a mutation, as upstream lists them.
const PATCH_TYPES: [&str; 2] = ["ApplyConfiguration", "JSONPatch"];

/// Upstream's MutatingAdmissionPolicy table.
pub(super) const POLICIES: Printer = Printer {
    columns: &[
        Column::new(
            "Mutations",
            "Mutation indicates the number of mutations rules defined in this configuration",
        )
        .typed("integer"),
        Column::new(
            "ParamKind",
            "ParamKind specifies the kind of resources used to parameterize this policy",
        ),
        AGE,
    ],
    cells: |obj| {
        let n = crate::meta::path(obj, "spec.mutations")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        vec![json!(n), json!(super::param_kind_cell(obj)), age(obj)]
    },
};

/// The strategy of MutatingAdmissionPolicies.
#[derive(Debug, Clone, Copy)]
pub(super) struct Policy;

impl Strategy for Policy {
    fn finalizer_names(&self) -> super::super::FinalizerNames {
        // Upstream validates these with the generic `ValidateObjectMeta`.
        super::super::FinalizerNames::Qualified
    }

    fn default(&self, obj: &mut Value) {
        default_policy_spec(obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_policy(obj, false)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_policy(obj, match_conditions_unchanged(obj, old))
    }
}

/// Every cause of an invalid MutatingAdmissionPolicy (upstream's
/// `validateMutatingAdmissionPolicySpec`, in its order); the match conditions are left alone
/// when `stored_match_conditions` (an update that keeps them).
pub(super) fn validate_policy(obj: &Value, stored_match_conditions: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None | Some("") => errs.push(Cause::required("spec.failurePolicy", "")),
        Some(_) => check_enum(
            &mut errs,
            spec,
            "failurePolicy",
            "spec",
            &enums::FAILURE_POLICY_TYPE.sorted(),
        ),
    }
    validate_param_kind(&mut errs, spec);
    match spec.get("matchConstraints").filter(|m| m.is_object()) {
        None => errs.push(Cause::required("spec.matchConstraints", "")),
        Some(m) => {
            validate_match_resources(&mut errs, m, "spec.matchConstraints", true);
            mutable_operations(&mut errs, m, "spec.matchConstraints");
        }
    }
    if !stored_match_conditions {
        validate_policy_match_conditions(&mut errs, spec);
    }
    validate_variables(
        &mut errs,
        spec,
        &declarations::policy_composition(spec, &declarations::variables(spec)),
    );
    let mutations = spec
        .get("mutations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if mutations.is_empty() {
        errs.push(Cause::required(
            "spec.mutations",
            "mutations must contain at least one item",
        ));
    }
    for (i, mutation) in mutations.iter().enumerate() {
        validate_mutation(&mut errs, mutation, &index("spec.mutations", i));
    }
    match spec.get("reinvocationPolicy").and_then(Value::as_str) {
        None | Some("") => errs.push(Cause::required("spec.reinvocationPolicy", "")),
        Some(_) => check_enum(
            &mut errs,
            spec,
            "reinvocationPolicy",
            "spec",
            &enums::REINVOCATION_POLICY_TYPE.sorted(),
        ),
    }
    errs
}

/// Every operation of every resource rule can be mutated (not `DELETE`); the field path has no
/// index, as upstream's.
fn mutable_operations(errs: &mut Vec<Cause>, m: &Value, path: &str) {
    let at = format!("{path}.resourceRules.operations");
    let rules = m
        .get("resourceRules")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for rule in rules {
        let ops = rule
            .get("operations")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for op in ops.iter().filter_map(Value::as_str) {
            if !MUTATING_OPERATIONS.contains(&op) {
                errs.push(Cause::not_supported(
                    &at,
                    &json!(op),
                    &values(&MUTATING_OPERATIONS),
                ));
            }
        }
    }
}

/// Upstream's `validateMutation`: the patch type names which of `applyConfiguration` and
/// `jsonPatch` is given, and its expression compiles.
fn validate_mutation(errs: &mut Vec<Cause>, mutation: &Value, path: &str) {
    let apply = mutation.get("applyConfiguration").filter(|v| v.is_object());
    let patch = mutation.get("jsonPatch").filter(|v| v.is_object());
    let (given, other, other_key) = match mutation.get("patchType").and_then(Value::as_str) {
        None | Some("") => {
            errs.push(Cause::required(child(path, "patchType"), ""));
            return;
        }
        Some("JSONPatch") => (("jsonPatch", patch), apply, "applyConfiguration"),
        Some("ApplyConfiguration") => (("applyConfiguration", apply), patch, "jsonPatch"),
        Some(other) => {
            errs.push(Cause::not_supported(
                child(path, "patchType"),
                &json!(other),
                &values(&PATCH_TYPES),
            ));
            return;
        }
    };
    let patch_type = if given.0 == "jsonPatch" {
        "JSONPatch"
    } else {
        "ApplyConfiguration"
    };
    match given.1 {
        None => errs.push(Cause::required(
            child(path, given.0),
            &format!("must be specified when patchType is {patch_type}"),
        )),
        Some(body) => {
            let at = child(&child(path, given.0), "expression");
            let expression = text(body, "expression");
            if expression.trim().is_empty() {
                errs.push(Cause::required(&at, ""));
            } else if let Err(e) = crate::admission::cel::compile_mutation(expression) {
                errs.push(Cause::invalid(
                    &at,
                    &json!(expression),
                    &format!("compilation failed: {e}"),
                ));
            }
        }
    }
    if other.is_some() {
        errs.push(Cause::invalid(
            child(path, other_key),
            &json!(format!("{{{other_key}}}")),
            &format!("must not be specified when patchType is {patch_type}"),
        ));
    }
}

/// The strategy of MutatingAdmissionPolicyBindings.
#[derive(Debug, Clone, Copy)]
pub(super) struct Binding;

impl Strategy for Binding {
    fn finalizer_names(&self) -> super::super::FinalizerNames {
        // Upstream validates these with the generic `ValidateObjectMeta`.
        super::super::FinalizerNames::Qualified
    }

    fn default(&self, obj: &mut Value) {
        default_binding_spec(obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_binding(obj)
    }
}

/// Every cause of an invalid MutatingAdmissionPolicyBinding (upstream's
/// `validateMutatingAdmissionPolicyBindingSpec`).
pub(super) fn validate_binding(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    validate_policy_name(&mut errs, spec);
    validate_param_ref(&mut errs, spec);
    if let Some(m) = spec.get("matchResources").filter(|m| m.is_object()) {
        validate_match_resources(&mut errs, m, "spec.matchResources", false);
        mutable_operations(&mut errs, m, "spec.matchResources");
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid policy, defaulted, with `extra` merged into its spec.
    fn policy(extra: Value) -> Value {
        let mut obj = json!({"metadata": {"name": "p"}, "spec": {
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE", "UPDATE"],
                "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                "expression": "Object{metadata: Object.metadata{labels: {\"a\": \"b\"}}}"}}],
            "reinvocationPolicy": "Never",
        }});
        if let (Some(spec), Some(extra)) = (obj["spec"].as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                spec.insert(k.clone(), v.clone());
            }
        }
        Policy.default(&mut obj);
        obj
    }

    fn messages(obj: &Value) -> Vec<String> {
        validate_policy(obj, false)
            .iter()
            .map(Cause::summary)
            .collect()
    }

    #[test]
    fn defaults_and_a_valid_policy() {
        let obj = policy(json!({}));
        assert_eq!(obj["spec"]["failurePolicy"], "Fail");
        assert_eq!(obj["spec"]["matchConstraints"]["matchPolicy"], "Equivalent");
        assert_eq!(
            obj["spec"]["matchConstraints"]["resourceRules"][0]["scope"],
            "*"
        );
        assert!(messages(&obj).is_empty(), "{:?}", messages(&obj));
        let json_patch = policy(
            json!({"mutations": [{"patchType": "JSONPatch", "jsonPatch": {
            "expression": "[JSONPatch{op: \"add\", path: \"/metadata/labels/a\", value: \"b\"}]"}}]}),
        );
        assert!(
            messages(&json_patch).is_empty(),
            "{:?}",
            messages(&json_patch)
        );
    }

    #[test]
    fn refusals_with_upstream_messages() {
        let cases = [
            (
                json!({"mutations": []}),
                "spec.mutations: Required value: mutations must contain at least one item",
            ),
            (
                json!({"reinvocationPolicy": null}),
                "spec.reinvocationPolicy: Required value",
            ),
            (
                json!({"reinvocationPolicy": "Always"}),
                "spec.reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\"",
            ),
            (
                json!({"mutations": [{"patchType": "Merge"}]}),
                "spec.mutations[0].patchType: Unsupported value: \"Merge\": supported values: \"ApplyConfiguration\", \"JSONPatch\"",
            ),
            (
                json!({"mutations": [{}]}),
                "spec.mutations[0].patchType: Required value",
            ),
            (
                json!({"mutations": [{"patchType": "JSONPatch"}]}),
                "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch",
            ),
            (
                json!({"mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": "[]"},
                    "applyConfiguration": {"expression": "Object{}"}}]}),
                "spec.mutations[0].applyConfiguration: Invalid value: \"{applyConfiguration}\": must not be specified when patchType is JSONPatch",
            ),
            (
                json!({"mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": " "}}]}),
                "spec.mutations[0].applyConfiguration.expression: Required value",
            ),
            (
                json!({"mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{"}}]}),
                "spec.mutations[0].applyConfiguration.expression: Invalid value: \"Object{\": compilation failed: ",
            ),
            (
                json!({"matchConstraints": {"resourceRules": [{"operations": ["DELETE"],
                    "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}}),
                "spec.matchConstraints.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
            ),
            (
                json!({"matchConstraints": null}),
                "spec.matchConstraints: Required value",
            ),
            (
                json!({"paramKind": {"apiVersion": "v1/x/y", "kind": "Config_Map"}}),
                "spec.paramKind.apiVersion: Invalid value: \"v1/x/y\": unexpected GroupVersion string: v1/x/y",
            ),
            (
                json!({"paramKind": {"apiVersion": "v1", "kind": "Config_Map"}}),
                "spec.paramKind.kind: Invalid value: \"Config_Map\": may have mixed case, but should otherwise match: a DNS-1035 label",
            ),
            (
                json!({"variables": [{"name": "in", "expression": "1"}]}),
                "spec.variables[0].name: Invalid value: \"in\": name is not a valid CEL identifier",
            ),
            (
                json!({"variables": [{"name": "9lives", "expression": " "}]}),
                "spec.variables[0].expression: Required value: expression is not specified",
            ),
            (
                json!({"variables": [{"name": "", "expression": "1"}]}),
                "spec.variables[0].name: Required value: name is not specified",
            ),
            (
                json!({"failurePolicy": "Sometimes"}),
                "spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"",
            ),
        ];
        for (extra, want) in cases {
            let got = messages(&policy(extra));
            assert!(
                got.iter().any(|m| m.starts_with(want)),
                "want {want}\n got {got:?}"
            );
        }
    }

    #[test]
    fn bindings() {
        let mut ok = json!({"spec": {"policyName": "p", "paramRef": {"name": "cfg",
            "namespace": "default", "parameterNotFoundAction": "Deny"},
            "matchResources": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""],
                "apiVersions": ["v1"], "resources": ["configmaps"]}]}}});
        Binding.default(&mut ok);
        assert_eq!(ok["spec"]["matchResources"]["namespaceSelector"], json!({}));
        assert!(
            validate_binding(&ok).is_empty(),
            "{:?}",
            validate_binding(&ok)
        );
        let bad = json!({"spec": {"paramRef": {"name": "a", "selector": {},
            "parameterNotFoundAction": "Maybe"},
            "matchResources": {"resourceRules": [{"operations": ["DELETE"], "apiGroups": [""],
                "apiVersions": ["v1"], "resources": ["configmaps"]}]}}});
        let got: Vec<String> = validate_binding(&bad).iter().map(Cause::summary).collect();
        assert_eq!(
            got,
            vec![
                "spec.policyName: Required value",
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Maybe\": supported values: \"Deny\", \"Allow\"",
                "spec.matchResources.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
            ]
        );
    }
}
