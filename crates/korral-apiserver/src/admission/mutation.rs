//! MutatingAdmissionPolicies, applied as upstream's `MutatingAdmissionPolicy` plugin applies
//! them: every binding whose policy and match resources select the write is invoked once per
//! param (ordered by binding name); an invocation whose match conditions hold evaluates the
//! policy's mutations in order on the object, each an `ApplyConfiguration` (an `Object{...}`
//! merged with server-side apply's merge rules, atomic members refused) or a `JSONPatch` list
//! (RFC 6902; a failed `test` leaves the object as it was), and the object is defaulted after
//! each. Failures are collected and, unless the policy's `failurePolicy` is `Ignore`, refuse
//! the write with upstream's 403 (`policy 'p' with binding 'b' denied request: …`).

use std::sync::Arc;

use serde_json::Value;

use super::Request;
use super::cel::{
    Budget, Composition, Mutation, OUT_OF_BUDGET, authorizer, compile_mutation_cached,
};
use super::policy::{Bound, NamespaceObject, Seen, bound_policies, params, to_json};
use crate::error::{ApiError, Cause, Details};
use crate::patch::json::{Operation, apply_operations};
use crate::registry::ResourceInfo;

/// One policy, binding and param that select the write.
pub(super) struct Invocation {
    /// The binding and its policy.
    bound: Bound,
    /// The param object (`None` without `paramKind`).
    param: Option<Value>,
}

impl Invocation {
    /// The version of the resource the policy matched.
    pub(super) fn matched(&self) -> &Arc<ResourceInfo> {
        &self.bound.matched
    }

    /// A failure of this invocation.
    pub(super) fn failure(&self, why: impl std::fmt::Display) -> Failure {
        Failure::of(&self.bound, why)
    }

    /// Whether the policy asks to run again when later mutations change the object.
    pub(super) fn reinvoked(&self) -> bool {
        self.bound
            .policy
            .get("reinvocationPolicy")
            .and_then(Value::as_str)
            == Some("IfNeeded")
    }
}

/// Why an invocation failed, as upstream's `PolicyError` words it.
pub(super) struct Failure {
    /// The error's text (`policy 'p' with binding 'b' denied request: …`).
    message: String,
    /// Whether the policy's `failurePolicy` is `Ignore`.
    ignored: bool,
}

impl Failure {
    fn of(bound: &Bound, why: impl std::fmt::Display) -> Self {
        Failure {
            message: format!(
                "policy '{}' with binding '{}' denied request: {why}",
                bound.policy_name, bound.binding_name
            ),
            ignored: bound.policy.get("failurePolicy").and_then(Value::as_str) == Some("Ignore"),
        }
    }
}

/// The invocations a write is subject to, and the failures of the bindings whose params
/// could not be resolved.
pub(super) fn plan(
    req: &Request<'_>,
    object: Option<&Value>,
    namespace: &NamespaceObject,
) -> (Vec<Invocation>, Vec<Failure>) {
    let mut invocations = Vec::new();
    let mut failures = Vec::new();
    let bound = bound_policies(
        req,
        (
            "mutatingadmissionpolicies",
            "mutatingadmissionpolicybindings",
        ),
        object,
        namespace,
    );
    for b in bound {
        match params(req, &b.policy, &b.binding) {
            Ok(found) => {
                for param in found {
                    invocations.push(Invocation {
                        bound: b.clone(),
                        param,
                    });
                }
            }
            Err(why) => failures.push(Failure::of(&b, why)),
        }
    }
    (invocations, failures)
}

/// Runs one invocation's mutations on `object` (in the request's version) in the version the
/// policy matched: the object is converted to it and, when changed, back. Answers whether
/// the mutations changed it.
pub(super) async fn invoke_seen(
    req: &Request<'_>,
    invocation: &Invocation,
    object: &mut Value,
    seen: &Seen,
    namespace: Option<&Value>,
) -> Result<bool, Failure> {
    if seen.info.version == req.info.version {
        return invoke(req, invocation, object, seen, namespace);
    }
    let mut view = seen
        .object(req, object)
        .await
        .map_err(|why| invocation.failure(why))?;
    if !invoke(req, invocation, &mut view, seen, namespace)? {
        return Ok(false);
    }
    *object = super::review::object_back(req, &seen.info, view)
        .await
        .map_err(|e| {
            invocation.failure(format!("failed to convert object version: {}", e.message))
        })?;
    Ok(true)
}

/// Runs one invocation's mutations on `object` (in the matched version `seen`); answers
/// whether they changed it.
fn invoke(
    req: &Request<'_>,
    invocation: &Invocation,
    object: &mut Value,
    seen: &Seen,
    namespace: Option<&Value>,
) -> Result<bool, Failure> {
    let bound = &invocation.bound;
    let policy = &bound.policy;
    let fail = |why: String| Failure::of(bound, why);
    if !conditions_hold(req, invocation, object, seen, namespace).map_err(fail)? {
        return Ok(false);
    }
    let before = object.clone();
    let mutations = policy
        .get("mutations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for m in &mutations {
        let (patch_type, body) = match m.get("patchType").and_then(Value::as_str) {
            Some("JSONPatch") => (PatchType::Json, m.get("jsonPatch")),
            _ => (PatchType::Apply, m.get("applyConfiguration")),
        };
        let source = body
            .and_then(|b| b.get("expression"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let compiled = compile_mutation_cached(source).map_err(fail)?;
        let result =
            evaluate(req, invocation, &compiled, source, object, seen, namespace).map_err(fail)?;
        let next = match patch_type {
            PatchType::Apply => apply_configuration(&seen.info, object, &result)
                .map_err(|e| fail(format!("error applying patch: {e}")))?,
            PatchType::Json => json_patch(object, &result).map_err(fail)?,
        };
        if let Some(mut next) = next {
            if req.subresource_kind.is_none() {
                seen.info.strategy.default(&mut next);
            }
            *object = next;
        }
    }
    Ok(*object != before)
}

/// The two kinds of mutation.
#[derive(Clone, Copy)]
enum PatchType {
    /// `ApplyConfiguration`.
    Apply,
    /// `JSONPatch`.
    Json,
}

/// The variables of an invocation's expressions, `variables` last.
fn variables<'a>(
    invocation: &'a Invocation,
    object: &'a Value,
    seen: &'a Seen,
    namespace: Option<&'a Value>,
    null: &'a Value,
) -> Vec<(&'a str, &'a Value)> {
    vec![
        ("object", object),
        ("oldObject", seen.old.as_ref().unwrap_or(null)),
        ("request", &seen.request),
        ("params", invocation.param.as_ref().unwrap_or(null)),
        ("namespaceObject", namespace.unwrap_or(null)),
    ]
}

/// Whether every match condition of the policy holds for the current object, as upstream's
/// matcher decides: a false condition skips the policy; otherwise a failed expression is an
/// error (the policy's `failurePolicy` decides what it does).
fn conditions_hold(
    req: &Request<'_>,
    invocation: &Invocation,
    object: &Value,
    seen: &Seen,
    namespace: Option<&Value>,
) -> Result<bool, String> {
    if invocation.bound.policy.get("matchConditions").is_none() {
        return Ok(true);
    }
    let null = Value::Null;
    let vars = variables(invocation, object, seen, namespace, &null);
    let authorizer = authorizer(req);
    let scope = Composition::new(&invocation.bound.policy, &vars, &authorizer);
    super::policy::conditions_hold(&invocation.bound.policy, &scope)
}

/// Evaluates a compiled mutation into JSON.
fn evaluate(
    req: &Request<'_>,
    invocation: &Invocation,
    compiled: &Mutation,
    source: &str,
    object: &Value,
    seen: &Seen,
    namespace: Option<&Value>,
) -> Result<Value, String> {
    let null = Value::Null;
    let vars = variables(invocation, object, seen, namespace, &null);
    let authorizer = authorizer(req);
    // Each mutation is evaluated on its own, with a full budget (upstream's patcher).
    let scope = Composition::new(&invocation.bound.policy, &vars, &authorizer);
    let value = scope
        .evaluate_mutation(compiled, &Budget::new())
        .map_err(|_| OUT_OF_BUDGET.to_string())?
        .map_err(|e| format!("expression '{source}' resulted in error: {e}"))?;
    if let Some(mismatch) = compiled.mismatch() {
        return Err(mismatch);
    }
    Ok(to_json(&value))
}

/// Merges an `ApplyConfiguration`'s object into `object` once it types with the kind's
/// schema (upstream's type converter); `None` when nothing changes.
fn apply_configuration(
    info: &ResourceInfo,
    object: &Value,
    result: &Value,
) -> Result<Option<Value>, String> {
    if !result.is_object() {
        return Err(format!(
            "unsupported return type from ApplyConfiguration expression: {}",
            kind_of(result)
        ));
    }
    if let Some(e) = super::typed::check(info, result) {
        return Err(format!(
            "failed to convert patch object to typed object: {e}"
        ));
    }
    let merged = crate::apply::merge_unowned(info, object, result)?;
    Ok((merged != *object).then_some(merged))
}

/// Applies a `JSONPatch` list to `object`; `None` when nothing changes (a failed `test` included).
fn json_patch(object: &Value, result: &Value) -> Result<Option<Value>, String> {
    let Value::Array(items) = result else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".to_string());
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(fields) = item else {
            return Err(format!(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of {}",
                kind_of(item)
            ));
        };
        let text = |key: &str| fields.get(key).and_then(Value::as_str).map(str::to_string);
        ops.push(Operation {
            op: text("op").unwrap_or_default(),
            path: Some(text("path").unwrap_or_default()),
            from: text("from").filter(|f| !f.is_empty()),
            value: fields.get("value").cloned(),
        });
    }
    match apply_operations(object, &ops) {
        Ok(next) => Ok((next != *object).then_some(next)),
        Err(e) if e.is_test_failure() => Ok(None),
        Err(e) => Err(format!("JSONPath: {e}")),
    }
}

/// A JSON value's CEL type name, for messages.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null_type",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "double",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// Upstream's refusal when any failure is not ignored: 403 `Invalid`, the first failure's
/// text as the message and every failure as a cause.
pub(super) fn refuse(req: &Request<'_>, failures: Vec<Failure>) -> Result<(), ApiError> {
    let messages: Vec<String> = failures
        .into_iter()
        .filter(|f| {
            if f.ignored {
                tracing::warn!("mutating admission policy failed (ignored): {}", f.message);
            }
            !f.ignored
        })
        .map(|f| f.message)
        .collect();
    let Some(first) = messages.first() else {
        return Ok(());
    };
    let mut err = ApiError::new(403, "Invalid", first.clone());
    err.details = Some(Box::new(Details {
        name: Some(req.name.to_string()),
        group: (!req.info.group.is_empty()).then(|| req.info.group.clone()),
        kind: Some(req.info.resource.clone()),
        causes: messages
            .iter()
            .map(|m| Cause::new("", "", m.clone()))
            .collect(),
        ..Details::default()
    }));
    Err(err)
}
