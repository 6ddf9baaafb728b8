//! ValidatingAdmissionPolicies: each binding whose policy and match resources select the
//! request evaluates the policy's validations (CEL, with `object`, `oldObject`, `request`,
//! `params`, `namespaceObject` and `variables`) for each of its params; a failed validation is
//! denied, warned about or audited as the binding's `validationActions` say, with upstream's
//! messages (`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: …`).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::Request;
use super::cel::Typed;
use crate::error::{ApiError, Cause, Details};
use crate::meta;
use crate::objects::ListOptions;
use crate::selector::from_label_selector_json;

/// The group of policies and bindings.
const GROUP: &str = "admissionregistration.k8s.io";

/// Why a policy refused, and its warnings.
struct Outcome {
    /// Denials, already worded.
    denials: Vec<(String, &'static str)>,
    /// Warnings.
    warnings: Vec<String>,
}

/// Evaluates every bound policy on the request; `object` is the new object (`None` on delete).
pub(crate) fn run(
    req: &Request<'_>,
    object: Option<&Value>,
    review: impl FnOnce() -> Value,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let bound = bound_policies(
        req,
        (
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
        ),
        object,
    );
    if bound.is_empty() {
        return Ok(());
    }
    let review = review();
    let namespace_object = namespace_object(req);
    let authorizer = super::cel::authorizer(req);
    let mut outcome = Outcome {
        denials: Vec::new(),
        warnings: Vec::new(),
    };
    for b in &bound {
        evaluate_binding(
            req,
            &b.policy,
            &b.policy_name,
            &b.binding,
            &b.binding_name,
            object,
            &review,
            namespace_object.as_ref(),
            &authorizer,
            &mut outcome,
        )?;
    }
    warnings.extend(outcome.warnings);
    if let Some((message, reason)) = outcome.denials.into_iter().next() {
        let resource = crate::error::qualified_resource(&req.info.group, &req.info.resource);
        let code = if reason == "Forbidden" { 403 } else { 422 };
        let reason = if reason.is_empty() { "Invalid" } else { reason };
        let mut err = ApiError::new(
            code,
            reason,
            format!("{resource} {:?} is forbidden: {message}", req.name),
        );
        err.details = Some(Box::new(Details {
            name: Some(req.name.to_string()),
            group: (!req.info.group.is_empty()).then(|| req.info.group.clone()),
            kind: Some(req.info.resource.clone()),
            causes: vec![Cause::new("", "", message)],
            ..Details::default()
        }));
        return Err(err);
    }
    Ok(())
}

/// A binding that selects the request, with its policy.
#[derive(Clone)]
pub(super) struct Bound {
    /// The policy's name.
    pub policy_name: String,
    /// The policy's `spec`.
    pub policy: Value,
    /// The binding's name.
    pub binding_name: String,
    /// The binding's `spec`.
    pub binding: Value,
}

/// The bindings (of the `(policies, bindings)` resources) whose policy's match constraints and
/// own match resources select the request, ordered by binding name; bindings of missing
/// policies are skipped, as upstream's policy source does.
pub(super) fn bound_policies(
    req: &Request<'_>,
    (policies, bindings): (&str, &str),
    object: Option<&Value>,
) -> Vec<Bound> {
    let registry = req.objects.registry();
    let (Some(policies), Some(bindings)) = (
        registry.get(GROUP, "v1", policies),
        registry.get(GROUP, "v1", bindings),
    ) else {
        return Vec::new();
    };
    let Ok(page) = req.objects.list(&bindings, None, &ListOptions::default()) else {
        return Vec::new();
    };
    if page.items.is_empty() {
        return Vec::new();
    }
    let mut listed = page.items;
    listed.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
    let namespace_object = namespace_object(req);
    let mut bound = Vec::new();
    for binding in listed {
        let spec = binding.get("spec").cloned().unwrap_or(Value::Null);
        let policy_name = spec.get("policyName").and_then(Value::as_str).unwrap_or("");
        let Ok(policy) = req.objects.get(&policies, None, policy_name) else {
            continue;
        };
        let policy_spec = policy.get("spec").cloned().unwrap_or(Value::Null);
        let Some(constraints) = policy_spec.get("matchConstraints") else {
            continue;
        };
        if !matches(req, constraints, object, namespace_object.as_ref(), true) {
            continue;
        }
        if let Some(resources) = spec.get("matchResources").filter(|m| m.is_object())
            && !matches(req, resources, object, namespace_object.as_ref(), false)
        {
            continue;
        }
        bound.push(Bound {
            policy_name: policy_name.to_string(),
            policy: policy_spec,
            binding_name: meta::name(&binding).to_string(),
            binding: spec,
        });
    }
    bound
}

/// The request's Namespace object (`null` for cluster-scoped requests).
pub(super) fn namespace_object(req: &Request<'_>) -> Option<Value> {
    let ns = req.namespace.filter(|_| req.info.namespaced)?;
    let info = req.objects.registry().get("", "v1", "namespaces")?;
    req.objects.get(&info, None, ns).ok().map(|n| (*n).clone())
}

/// Whether match resources (a policy's constraints or a binding's) select the request.
fn matches(
    req: &Request<'_>,
    m: &Value,
    object: Option<&Value>,
    namespace: Option<&Value>,
    require_rules: bool,
) -> bool {
    let labels = |o: Option<&Value>| {
        o.and_then(|o| meta::metadata(o))
            .and_then(|md| md.get("labels"))
            .cloned()
    };
    let selects = |key: &str, target: Option<Value>| match m.get(key).filter(|s| !s.is_null()) {
        None => true,
        Some(sel) => from_label_selector_json(sel)
            .map(|s| s.matches(target.as_ref().and_then(Value::as_object)))
            .unwrap_or(false),
    };
    if namespace.is_some() && !selects("namespaceSelector", labels(namespace)) {
        return false;
    }
    let old_selected = req.old.is_some() && selects("objectSelector", labels(req.old));
    if !(selects("objectSelector", labels(object)) || old_selected) {
        return false;
    }
    let rules = |key: &str| {
        m.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let include = rules("resourceRules");
    let exact = m.get("matchPolicy").and_then(Value::as_str) == Some("Exact");
    let hit = |rule: &Value| super::matching::rule_selects(req, rule, exact);
    if include.is_empty() {
        if require_rules {
            return false;
        }
    } else if !include.iter().any(hit) {
        return false;
    }
    !rules("excludeResourceRules").iter().any(hit)
}

/// Evaluates one binding of a policy, for each of its params.
#[allow(clippy::too_many_arguments)]
fn evaluate_binding(
    req: &Request<'_>,
    policy: &Value,
    policy_name: &str,
    binding: &Value,
    binding_name: &str,
    object: Option<&Value>,
    review: &Value,
    namespace: Option<&Value>,
    authorizer: &Typed,
    outcome: &mut Outcome,
) -> Result<(), ApiError> {
    let actions: Vec<&str> = binding
        .get("validationActions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fail_open = policy.get("failurePolicy").and_then(Value::as_str) == Some("Ignore");
    let params = match params(req, policy, binding) {
        Ok(p) => p,
        Err(why) => {
            if !fail_open {
                let message = format!(
                    "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: {why}"
                );
                outcome.denials.push((message, ""));
            }
            return Ok(());
        }
    };
    let null = Value::Null;
    let request = &review["request"];
    for param in &params {
        let base: Vec<(&str, &Value)> = vec![
            ("object", object.unwrap_or(&null)),
            ("oldObject", req.old.unwrap_or(&null)),
            ("request", request),
            ("params", param.as_ref().unwrap_or(&null)),
            ("namespaceObject", namespace.unwrap_or(&null)),
        ];
        let typed = with_variables(policy, &base, authorizer);
        let vars = base;
        if let Some(conditions) = policy.get("matchConditions").and_then(Value::as_array) {
            let mut all = true;
            for c in conditions {
                let expr = c.get("expression").and_then(Value::as_str).unwrap_or("");
                match eval(expr, &vars, &typed) {
                    Ok(Value::Bool(true)) => {}
                    Ok(Value::Bool(false)) => all = false,
                    _ if fail_open => all = false,
                    _ => {}
                }
            }
            if !all {
                continue;
            }
        }
        let validations = policy
            .get("validations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        // Message expressions run without the authorizer, as upstream's (their variables
        // are evaluated again without it): computed once, when a validation first fails.
        let mut message_typed: Option<Vec<(&'static str, cel::Value)>> = None;
        for v in &validations {
            let expression = v.get("expression").and_then(Value::as_str).unwrap_or("");
            let failed = match eval(expression, &vars, &typed) {
                Ok(Value::Bool(true)) => None,
                Ok(Value::Bool(false)) => {
                    let without_authorizer =
                        message_typed.get_or_insert_with(|| with_variables(policy, &vars, &[]));
                    Some(message(v, expression, &vars, without_authorizer))
                }
                Ok(other) => (!fail_open).then(|| {
                    format!(
                        "expression '{expression}' resulted in error: no such overload: {other}"
                    )
                }),
                Err(e) => (!fail_open)
                    .then(|| format!("expression '{expression}' resulted in error: {e}")),
            };
            let Some(text) = failed else { continue };
            let reason = match v.get("reason").and_then(Value::as_str) {
                Some("Forbidden") => "Forbidden",
                Some("Unauthorized") => "Unauthorized",
                Some("RequestEntityTooLarge") => "RequestEntityTooLarge",
                Some("Invalid") => "Invalid",
                _ => "",
            };
            if actions.contains(&"Deny") {
                outcome.denials.push((
                    format!(
                        "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: {text}"
                    ),
                    reason,
                ));
            }
            if actions.contains(&"Warn") {
                outcome.warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {text}"
                ));
            }
            if actions.contains(&"Audit") {
                tracing::info!(
                    policy = policy_name,
                    binding = binding_name,
                    "validation failed (audit): {text}"
                );
            }
        }
    }
    Ok(())
}

/// The message of a failed validation: its message expression's string, else its message,
/// else `failed expression: <expression>`.
fn message(v: &Value, expression: &str, vars: &[(&str, &Value)], typed: &Typed) -> String {
    if let Some(me) = v.get("messageExpression").and_then(Value::as_str)
        && let Ok(Value::String(s)) = eval(me, vars, typed)
        && !s.trim().is_empty()
        && !s.contains('\n')
    {
        return s;
    }
    match v.get("message").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!("failed expression: {expression}"),
    }
}

/// Evaluates a CEL expression into JSON.
pub(super) fn eval(
    expression: &str,
    vars: &[(&str, &Value)],
    typed: &Typed,
) -> Result<Value, String> {
    let program = super::cel::compile_cached(expression, true)?;
    super::cel::evaluate(&program, vars, typed).map(|v| to_json(&v))
}

/// The typed variables of a policy's expressions: the request's `authorizer` and the policy's
/// `variables`, evaluated in order (each may use the previous ones) and kept as CEL values
/// (a timestamp stays a timestamp, a decision a decision); a variable that fails to evaluate
/// is left out (its use then fails the expression that reads it).
pub(super) fn with_variables(
    policy: &Value,
    base: &[(&str, &Value)],
    authorizer: &Typed,
) -> Vec<(&'static str, cel::Value)> {
    let mut values: HashMap<cel::objects::Key, cel::Value> = HashMap::new();
    let typed = |values: &HashMap<cel::objects::Key, cel::Value>| {
        let mut typed = authorizer.to_vec();
        typed.push(("variables", cel::Value::from(values.clone())));
        typed
    };
    let list = policy
        .get("variables")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for var in list {
        let name = var.get("name").and_then(Value::as_str).unwrap_or("");
        let expression = var.get("expression").and_then(Value::as_str).unwrap_or("");
        let evaluated = super::cel::compile_cached(expression, true)
            .and_then(|program| super::cel::evaluate(&program, base, &typed(&values)));
        if let Ok(v) = evaluated {
            values.insert(cel::objects::Key::String(name.to_string().into()), v);
        }
    }
    typed(&values)
}

/// A CEL value as JSON (lists, string-keyed maps, scalars).
pub(super) fn to_json(value: &cel::Value) -> Value {
    match value {
        cel::Value::Null => Value::Null,
        cel::Value::Bool(b) => json!(b),
        cel::Value::Int(i) => json!(i),
        cel::Value::UInt(u) => json!(u),
        cel::Value::Float(f) => json!(f),
        cel::Value::String(s) => json!(s.as_str()),
        cel::Value::List(items) => Value::Array(items.iter().map(to_json).collect()),
        cel::Value::Map(m) => {
            let map: HashMap<String, Value> = m
                .map
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        cel::objects::Key::String(s) => s.as_str().to_string(),
                        cel::objects::Key::Int(i) => i.to_string(),
                        cel::objects::Key::Uint(u) => u.to_string(),
                        cel::objects::Key::Bool(b) => b.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect();
            Value::Object(map.into_iter().collect())
        }
        // As cel-go converts them to JSON: RFC 3339 timestamps, durations in seconds,
        // base64 bytes.
        cel::Value::Timestamp(t) => json!(rfc3339_nano(t)),
        cel::Value::Duration(d) => json!(duration_seconds(d)),
        cel::Value::Bytes(b) => {
            use base64::Engine;
            json!(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        other => json!(format!("{other:?}")),
    }
}

/// A timestamp as Go's `RFC3339Nano` layout writes it: the fraction without trailing zeros,
/// `Z` for UTC.
fn rfc3339_nano(t: &chrono::DateTime<chrono::FixedOffset>) -> String {
    let full = t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    // `2006-01-02T15:04:05.123000000Z` or `...+07:00`: the fraction ends where the zone starts.
    let Some(dot) = full.find('.') else {
        return full;
    };
    let zone = full[dot..]
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or(full.len(), |i| dot + i);
    let fraction = full[dot + 1..zone].trim_end_matches('0');
    let head = &full[..dot];
    let tail = &full[zone..];
    if fraction.is_empty() {
        format!("{head}{tail}")
    } else {
        format!("{head}.{fraction}{tail}")
    }
}

/// A duration as CEL writes it: seconds with the fraction it needs (`90s`, `0.5s`, `-1.25s`).
fn duration_seconds(d: &chrono::Duration) -> String {
    let nanos = d
        .num_nanoseconds()
        .map_or_else(|| i128::from(d.num_seconds()) * 1_000_000_000, i128::from);
    let sign = if nanos < 0 { "-" } else { "" };
    let abs = nanos.unsigned_abs();
    let (secs, frac) = (abs / 1_000_000_000, abs % 1_000_000_000);
    if frac == 0 {
        format!("{sign}{secs}s")
    } else {
        let digits = format!("{frac:09}");
        format!("{sign}{secs}.{}s", digits.trim_end_matches('0'))
    }
}

/// The params a binding evaluates its policy with: `[None]` without `paramKind`; otherwise the
/// object named by `paramRef.name` or those its selector picks (in the request's namespace when
/// the param kind is namespaced and no namespace is given).
pub(super) fn params(
    req: &Request<'_>,
    policy: &Value,
    binding: &Value,
) -> Result<Vec<Option<Value>>, String> {
    let Some(kind) = policy.get("paramKind").filter(|k| k.is_object()) else {
        return Ok(vec![None]);
    };
    let Some(param_ref) = binding.get("paramRef").filter(|p| p.is_object()) else {
        return Err("failed to configure binding: paramRef is required".into());
    };
    let api_version = kind.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind_name = kind.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let registry = req.objects.registry();
    let Some(info) = registry.by_kind(group, version, kind_name) else {
        return Err(format!(
            "failed to configure policy: failed to find resource referenced by paramKind: '{api_version}, Kind={kind_name}'"
        ));
    };
    let namespace = match param_ref.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => Some(ns.to_string()),
        _ if info.namespaced => req.namespace.map(str::to_string),
        _ => None,
    };
    let namespace = namespace.as_deref().filter(|_| info.namespaced);
    let found: Vec<Option<Value>> = match param_ref
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        Some(name) => req
            .objects
            .get(&info, namespace, name)
            .ok()
            .map(|o| vec![Some((*o).clone())])
            .unwrap_or_default(),
        None => {
            let selector = param_ref.get("selector").cloned().unwrap_or(json!({}));
            let selector = from_label_selector_json(&selector).map_err(|e| e.to_string())?;
            let opts = ListOptions {
                labels: Some(selector),
                ..ListOptions::default()
            };
            req.objects
                .list(&info, namespace, &opts)
                .map(|p| p.items.iter().map(|o| Some((**o).clone())).collect())
                .unwrap_or_default()
        }
    };
    if found.is_empty() {
        let action = param_ref
            .get("parameterNotFoundAction")
            .and_then(Value::as_str)
            .unwrap_or("Deny");
        if action == "Allow" {
            return Ok(Vec::new());
        }
        return Err(
            "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(found)
}
