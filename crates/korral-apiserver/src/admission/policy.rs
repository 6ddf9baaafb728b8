//! ValidatingAdmissionPolicies: each binding whose policy and match resources select the
//! request evaluates the policy's validations (CEL, with `object`, `oldObject`, `request`,
//! `params`, `namespaceObject` and `variables`) for each of its params; a failed validation is
//! denied, warned about or audited as the binding's `validationActions` say, with upstream's
//! messages (`ValidatingAdmissionPolicy 'p' with binding 'b' denied request: …`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use super::Request;
use super::cel::{Budget, Composition, OUT_OF_BUDGET, OutOfBudget, Typed};
use super::matching::rules_select;
use crate::error::{ApiError, Cause, Details};
use crate::meta;
use crate::objects::ListOptions;
use crate::registry::ResourceInfo;
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
/// Each policy sees the objects and the request in the version its match constraints selected.
pub(crate) async fn run(
    req: &Request<'_>,
    object: Option<&Value>,
    namespace: &NamespaceObject,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let bound = bound_policies(
        req,
        (
            "validatingadmissionpolicies",
            "validatingadmissionpolicybindings",
        ),
        object,
        namespace,
    );
    if bound.is_empty() {
        return Ok(());
    }
    let namespace = namespace_of(req, namespace);
    let authorizer = super::cel::authorizer(req);
    let mut outcome = Outcome {
        denials: Vec::new(),
        warnings: Vec::new(),
    };
    // The request and the object in each matched version, converted once, when a binding
    // with params first needs them (upstream converts only then).
    let mut seen: Vec<(&str, Converted)> = Vec::new();
    for b in &bound {
        let params = match params(req, &b.policy, &b.binding) {
            Ok(p) => p,
            Err(why) => {
                configuration_error(b, &why, &mut outcome);
                continue;
            }
        };
        if params.is_empty() {
            continue;
        }
        let at = match seen.iter().position(|(v, _)| *v == b.matched.version) {
            Some(at) => at,
            None => {
                let converted = Seen::with_object(req, &b.matched, object).await;
                seen.push((&b.matched.version, converted));
                seen.len() - 1
            }
        };
        match &seen[at].1 {
            Ok((view, converted)) => evaluate_binding(
                b,
                &params,
                view,
                converted.as_ref(),
                namespace,
                &authorizer,
                &mut outcome,
            ),
            Err(why) => configuration_error(
                b,
                &format!("failed to configure binding: {why}"),
                &mut outcome,
            ),
        }
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

/// The request and the new object in one matched version, or why they could not be
/// converted to it.
type Converted = Result<(Seen, Option<Value>), String>;

/// A binding that could not be evaluated (its params, a conversion: `why` says so, as
/// upstream's `failed to configure binding: ...`): denied unless the policy fails open.
fn configuration_error(b: &Bound, why: &str, outcome: &mut Outcome) {
    if b.policy.get("failurePolicy").and_then(Value::as_str) == Some("Ignore") {
        return;
    }
    outcome.denials.push((
        format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {why}",
            b.policy_name, b.binding_name
        ),
        "",
    ));
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
    /// The version of the resource the policy's match constraints selected (the request's,
    /// or with `matchPolicy: Equivalent` another served version): the policy sees the objects
    /// and the request in it.
    pub matched: Arc<ResourceInfo>,
}

/// A request as seen in the version of the resource a policy matched: the old object
/// converted to it and the `request` variable naming it (`kind` and `resource` the matched
/// ones, `requestKind` and `requestResource` the request's).
pub(super) struct Seen {
    /// The matched version.
    pub info: Arc<ResourceInfo>,
    /// The old object in the matched version.
    pub old: Option<Value>,
    /// The `request` variable.
    pub request: Value,
}

impl Seen {
    /// The request seen in version `matched`; a conversion that fails is answered as
    /// upstream's `failed to convert object version: ...`.
    pub(super) async fn of(
        req: &Request<'_>,
        matched: &Arc<ResourceInfo>,
        mutating: bool,
    ) -> Result<Seen, String> {
        let old = match req.old {
            Some(o) => Some(
                super::review::object_for(req, matched, o)
                    .await
                    .map_err(|e| format!("failed to convert object version: {}", e.message))?,
            ),
            None => None,
        };
        let own = super::matching::Candidate {
            hook: Value::Null,
            matched: matched.clone(),
        };
        let review = super::review::build_review(req, &own, None, None, mutating, "");
        Ok(Seen {
            info: matched.clone(),
            old,
            request: request_variable(&review),
        })
    }

    /// `object` in the matched version.
    pub(super) async fn object(&self, req: &Request<'_>, object: &Value) -> Result<Value, String> {
        super::review::object_for(req, &self.info, object)
            .await
            .map_err(|e| format!("failed to convert object version: {}", e.message))
    }

    /// The request seen in version `matched`, with `object` converted to it.
    async fn with_object(
        req: &Request<'_>,
        matched: &Arc<ResourceInfo>,
        object: Option<&Value>,
    ) -> Converted {
        let seen = Seen::of(req, matched, false).await?;
        let converted = match object {
            Some(o) => Some(seen.object(req, o).await?),
            None => None,
        };
        Ok((seen, converted))
    }
}

/// The `request` variable of a policy expression: the admission request without the objects
/// (upstream leaves them out).
pub(super) fn request_variable(review: &Value) -> Value {
    let mut request = review.get("request").cloned().unwrap_or(json!({}));
    if let Some(r) = request.as_object_mut() {
        r.remove("object");
        r.remove("oldObject");
    }
    request
}

/// The bindings (of the `(policies, bindings)` resources) whose policy's match constraints and
/// own match resources select the request, ordered by binding name; bindings of missing
/// policies are skipped, as upstream's policy source does.
pub(super) fn bound_policies(
    req: &Request<'_>,
    (policies, bindings): (&str, &str),
    object: Option<&Value>,
    namespace: &NamespaceObject,
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
    let namespace_object = namespace_of(req, namespace);
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
        let Some(matched) = matches(req, constraints, object, namespace_object, true) else {
            continue;
        };
        if let Some(resources) = spec.get("matchResources").filter(|m| m.is_object())
            && matches(req, resources, object, namespace_object, false).is_none()
        {
            continue;
        }
        bound.push(Bound {
            policy_name: policy_name.to_string(),
            policy: policy_spec,
            binding_name: meta::name(&binding).to_string(),
            binding: spec,
            matched,
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

/// The request's Namespace object, read when a policy stage first needs it and then shared
/// by the mutating and validating policies of the request.
pub(super) type NamespaceObject = OnceLock<Option<Value>>;

/// The request's Namespace object through `cell` (read once).
pub(super) fn namespace_of<'a>(req: &Request<'_>, cell: &'a NamespaceObject) -> Option<&'a Value> {
    cell.get_or_init(|| namespace_object(req)).as_ref()
}

/// The version of the request's resource that match resources (a policy's constraints or a
/// binding's) select, as upstream's matcher decides: selectors, then excluded rules, then the
/// resource rules (the request's version, else with `matchPolicy: Equivalent` another served
/// version). Without resource rules (allowed for a binding) the request's version is selected.
fn matches(
    req: &Request<'_>,
    m: &Value,
    object: Option<&Value>,
    namespace: Option<&Value>,
    require_rules: bool,
) -> Option<Arc<ResourceInfo>> {
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
        return None;
    }
    let old_selected = req.old.is_some() && selects("objectSelector", labels(req.old));
    if !(selects("objectSelector", labels(object)) || old_selected) {
        return None;
    }
    let rules = |key: &str| {
        m.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let exact = m.get("matchPolicy").and_then(Value::as_str) == Some("Exact");
    if rules_select(req, &rules("excludeResourceRules"), exact).is_some() {
        return None;
    }
    let include = rules("resourceRules");
    if include.is_empty() {
        return (!require_rules).then(|| req.info.clone());
    }
    rules_select(req, &include, exact)
}

/// Evaluates one binding of a policy, for each of its `params`, on the request as `seen` in
/// the policy's matched version (`object` converted to it).
fn evaluate_binding(
    bound: &Bound,
    params: &[Option<Value>],
    seen: &Seen,
    object: Option<&Value>,
    namespace: Option<&Value>,
    authorizer: &Typed,
    outcome: &mut Outcome,
) {
    let Bound {
        policy,
        policy_name,
        binding,
        binding_name,
        ..
    } = bound;
    let actions: Vec<&str> = binding
        .get("validationActions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fail_open = policy.get("failurePolicy").and_then(Value::as_str) == Some("Ignore");
    let null = Value::Null;
    for param in params {
        let base: Vec<(&str, &Value)> = vec![
            ("object", object.unwrap_or(&null)),
            ("oldObject", seen.old.as_ref().unwrap_or(&null)),
            ("request", &seen.request),
            ("params", param.as_ref().unwrap_or(&null)),
            ("namespaceObject", namespace.unwrap_or(&null)),
        ];
        let vars = base;
        // Match conditions that fail are the binding's one decision (none failing open).
        let (mut decisions, errors) =
            match conditions_hold(policy, &Composition::new(policy, &vars, authorizer)) {
                Ok(false) => continue,
                Err(_) if fail_open => continue,
                Err(e) => (vec![Decision::invalid(e)], Ok(Vec::new())),
                Ok(true) => (
                    validate(policy, &vars, authorizer, fail_open),
                    audit_annotations(policy, &vars, fail_open),
                ),
            };
        let errors = match errors {
            Err(OutOfBudget) => {
                // Upstream answers only that the budget ran out.
                decisions = (!fail_open)
                    .then(|| Decision::invalid(OUT_OF_BUDGET))
                    .into_iter()
                    .collect();
                Vec::new()
            }
            Ok(errors) => errors,
        };
        for decision in decisions {
            let text = decision.text;
            if actions.contains(&"Deny") {
                outcome.denials.push((
                    format!(
                        "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: {text}"
                    ),
                    decision.reason,
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
        // A failed audit annotation denies whatever the binding's actions.
        for text in errors {
            outcome.denials.push((
                format!(
                    "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: {text}"
                ),
                "",
            ));
        }
    }
}

/// Whether every match condition of `policy` holds, as upstream's matcher decides (with a
/// budget of its own): a false condition skips the policy, errors or not; otherwise the
/// conditions' errors are the error (one, or `[a, b]`), a budget run out upstream's words.
pub(super) fn conditions_hold(policy: &Value, scope: &Composition<'_>) -> Result<bool, String> {
    let conditions = policy
        .get("matchConditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let budget = Budget::new();
    let mut errors = Vec::new();
    for c in conditions {
        let expression = text(c, "expression");
        let result = scope
            .evaluate_source(expression, &budget)
            .map_err(|_| OUT_OF_BUDGET.to_string())?;
        match result {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return Ok(false),
            Ok(other) => errors.push(format!(
                "expression '{expression}' resulted in error: no such overload: {}",
                to_json(&other)
            )),
            Err(e) => errors.push(format!("expression '{expression}' resulted in error: {e}")),
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err(errors.remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
    }
}

/// A validation that denied: upstream's message and the validation's reason (`""` for
/// `Invalid`).
struct Decision {
    text: String,
    reason: &'static str,
}

impl Decision {
    /// A denial for an error (reason `Invalid`).
    fn invalid(text: impl Into<String>) -> Self {
        Decision {
            text: text.into(),
            reason: "",
        }
    }
}

/// The longest message a message expression may give (upstream's
/// `MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The denials of a policy's validations for one param, as upstream's validator decides them:
/// every validation, then every message expression (without the authorizer, their variables
/// evaluated again as upstream's message filter does), paid from one budget. A budget that runs
/// out during the validations leaves one denial (none with `failurePolicy: Ignore`); during
/// the message expressions, every validation that did not fail with an error of its own is
/// denied (`failed messageExpression: ...`).
fn validate(
    policy: &Value,
    vars: &[(&str, &Value)],
    authorizer: &Typed,
    fail_open: bool,
) -> Vec<Decision> {
    let validations = policy
        .get("validations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let budget = Budget::new();
    let scope = Composition::new(policy, vars, authorizer);
    let mut verdicts = Vec::with_capacity(validations.len());
    for v in validations {
        let expression = text(v, "expression");
        match scope.evaluate_source(expression, &budget) {
            Err(OutOfBudget) => {
                return (!fail_open)
                    .then(|| Decision::invalid(OUT_OF_BUDGET))
                    .into_iter()
                    .collect();
            }
            Ok(verdict) => verdicts.push(verdict),
        }
    }
    let mut messages: Vec<Option<String>> = vec![None; validations.len()];
    let mut messages_out_of_budget = false;
    if validations
        .iter()
        .any(|v| !text(v, "messageExpression").is_empty())
    {
        let scope = Composition::new(policy, vars, &[]);
        for (i, v) in validations.iter().enumerate() {
            let source = text(v, "messageExpression");
            if source.is_empty() {
                continue;
            }
            match scope.evaluate_source(source, &budget) {
                Err(OutOfBudget) => {
                    messages_out_of_budget = true;
                    break;
                }
                Ok(Ok(cel::Value::String(s))) => messages[i] = Some(s.trim().to_string()),
                Ok(_) => {}
            }
        }
    }
    let mut decisions = Vec::new();
    for ((v, verdict), message) in validations.iter().zip(verdicts).zip(messages) {
        let expression = text(v, "expression");
        match verdict {
            Err(e) => {
                if !fail_open {
                    decisions.push(Decision::invalid(format!(
                        "expression '{expression}' resulted in error: {e}"
                    )));
                }
            }
            Ok(_) if messages_out_of_budget => {
                if !fail_open {
                    decisions.push(Decision::invalid(format!(
                        "failed messageExpression: {OUT_OF_BUDGET}"
                    )));
                }
            }
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => {
                let from_expression = message
                    .filter(|m| !m.is_empty() && m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n'));
                let text = from_expression.unwrap_or_else(|| match text(v, "message").trim() {
                    "" => format!("failed expression: {}", expression.trim()),
                    m => m.to_string(),
                });
                let reason = match v.get("reason").and_then(Value::as_str) {
                    Some("Forbidden") => "Forbidden",
                    Some("Unauthorized") => "Unauthorized",
                    Some("RequestEntityTooLarge") => "RequestEntityTooLarge",
                    Some("Invalid") => "Invalid",
                    _ => "",
                };
                decisions.push(Decision { text, reason });
            }
            Ok(other) => {
                if !fail_open {
                    decisions.push(Decision::invalid(format!(
                        "expression '{expression}' resulted in error: no such overload: {}",
                        to_json(&other)
                    )));
                }
            }
        }
    }
    decisions
}

/// The longest audit annotation value kept (upstream's `maxAuditAnnotationValueLength`).
const MAX_AUDIT_ANNOTATION_VALUE: usize = 10 * 1024;

/// Evaluates a policy's `auditAnnotations` (from a budget of their own, without the
/// authorizer): a non-empty string is published as `<policy>/<key>` (to the log: this server
/// keeps no audit log), `null` or an empty string leaves the annotation out, and an error or
/// another type is answered as a denial text unless the policy fails open.
fn audit_annotations(
    policy: &Value,
    vars: &[(&str, &Value)],
    fail_open: bool,
) -> Result<Vec<String>, OutOfBudget> {
    let annotations = policy
        .get("auditAnnotations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if annotations.is_empty() {
        return Ok(Vec::new());
    }
    let scope = Composition::new(policy, vars, &[]);
    let budget = Budget::new();
    let mut errors = Vec::new();
    for a in annotations {
        let key = text(a, "key");
        let expression = text(a, "valueExpression");
        let failure = match scope.evaluate_source(expression, &budget)? {
            Err(e) => Some(format!("expression '{expression}' resulted in error: {e}")),
            Ok(cel::Value::String(s)) => {
                let value = s.trim();
                if !value.is_empty() {
                    let mut end = value.len().min(MAX_AUDIT_ANNOTATION_VALUE);
                    while !value.is_char_boundary(end) {
                        end -= 1;
                    }
                    tracing::info!(annotation = key, "audit annotation: {}", &value[..end]);
                }
                None
            }
            Ok(cel::Value::Null) => None,
            Ok(other) => Some(format!(
                "valueExpression '{expression}' resulted in unsupported return type: {}. Return type must be either string or null.",
                other.type_of()
            )),
        };
        if let Some(failure) = failure
            && !fail_open
        {
            errors.push(failure);
        }
    }
    Ok(errors)
}

/// A string field of a policy item (`""` when absent).
fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
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
