//! The `AdmissionReview` v1 exchange with one webhook: the request as upstream builds it, match
//! conditions, dry run and side effects, the call, and the response (allowed, status, warnings,
//! JSONPatch) turned into upstream's denials, failures and mutations.

use std::time::Duration;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::matching::Candidate;
use super::{Operation, Request, client};
use crate::error::{ApiError, Cause, Details};
use crate::meta;

/// The longest a webhook may take, whatever its configuration says.
const MAX_TIMEOUT_SECONDS: u64 = 30;

/// Calls one mutating webhook; answers whether its patch changed the object.
pub(super) async fn call_mutating(
    req: &Request<'_>,
    hook: &Candidate,
    object: &mut Option<Value>,
    warnings: &mut Vec<String>,
) -> Result<bool, ApiError> {
    let Some(response) = call(req, hook, object.as_ref(), true, warnings).await? else {
        return Ok(false);
    };
    let Some(patch) = response.get("patch").and_then(Value::as_str) else {
        return Ok(false);
    };
    let fail = |why: String| failure(hook, why);
    if response.get("patchType").and_then(Value::as_str) != Some("JSONPatch") {
        return fail("received invalid webhook response: expected patchType JSONPatch".into())
            .map(|()| false);
    }
    let Some(current) = object.as_mut() else {
        return Ok(false);
    };
    let bytes = match base64::engine::general_purpose::STANDARD.decode(patch) {
        Ok(b) => b,
        Err(e) => return fail(format!("received invalid webhook response: {e}")).map(|()| false),
    };
    let ops: json_patch::Patch = match serde_json::from_slice(&bytes) {
        Ok(p) => p,
        Err(e) => {
            return fail(format!("received invalid webhook response: {e}")).map(|()| false);
        }
    };
    // The patch applies to the object in the version the webhook matched.
    let mut view = object_for(req, &hook.matched, current).await?;
    let before = view.clone();
    if let Err(e) = json_patch::patch(&mut view, &ops) {
        return Err(ApiError::internal(e.to_string()));
    }
    if view == before {
        return Ok(false);
    }
    *current = object_back(req, &hook.matched, view).await?;
    Ok(true)
}

/// Calls the validating webhooks (in order; each sees the final object).
pub(crate) async fn run_validating(
    req: &Request<'_>,
    hooks: &[Candidate],
    object: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let calls = hooks.iter().map(|hook| async move {
        let mut own = Vec::new();
        let result = call(req, hook, object, false, &mut own).await;
        (result, own)
    });
    for (result, own) in futures::future::join_all(calls).await {
        warnings.extend(own);
        result?;
    }
    Ok(())
}

/// `object` in the shape of the matched version (the request's own when it is that version;
/// a custom resource with a conversion webhook is converted by it).
pub(super) async fn object_for(
    req: &Request<'_>,
    matched: &crate::registry::ResourceInfo,
    object: &Value,
) -> Result<Value, ApiError> {
    if matched.version == req.info.version || req.subresource_kind.is_some() {
        return Ok(object.clone());
    }
    if crate::conversion::webhook_of(req.info).is_some() {
        return crate::conversion::to_version(
            req.objects,
            req.info,
            object.clone(),
            &matched.version,
        )
        .await;
    }
    Ok(object_in_version(req, matched, object))
}

/// `object` in the matched version's shape through the kinds' own conversions.
fn object_in_version(
    req: &Request<'_>,
    matched: &crate::registry::ResourceInfo,
    object: &Value,
) -> Value {
    let stored = req.info.strategy.convert_for_storage(object.clone());
    let mut view = matched
        .strategy
        .convert_stored(matched, &stored)
        .unwrap_or(stored);
    if let Some(map) = view.as_object_mut() {
        map.insert("apiVersion".into(), json!(matched.api_version()));
    }
    view
}

/// The inverse of [`object_for`]: a matched-version object back in the request's version.
pub(super) async fn object_back(
    req: &Request<'_>,
    matched: &crate::registry::ResourceInfo,
    view: Value,
) -> Result<Value, ApiError> {
    if matched.version == req.info.version || req.subresource_kind.is_some() {
        return Ok(view);
    }
    if crate::conversion::webhook_of(req.info).is_some() {
        return crate::conversion::to_version(req.objects, matched, view, &req.info.version).await;
    }
    let stored = matched.strategy.convert_for_storage(view);
    let mut back = req
        .info
        .strategy
        .convert_stored(req.info, &stored)
        .unwrap_or(stored);
    if let Some(map) = back.as_object_mut() {
        map.insert("apiVersion".into(), json!(req.info.api_version()));
    }
    Ok(back)
}

/// A call failure under the webhook's failure policy: ignored with `Ignore`, else upstream's
/// `failed calling webhook` internal error.
fn failure(hook: &Candidate, why: String) -> Result<(), ApiError> {
    if hook.field("failurePolicy", "Fail") == "Ignore" {
        tracing::warn!(
            webhook = hook.name(),
            "failed calling webhook (ignored): {why}"
        );
        return Ok(());
    }
    let message = format!("failed calling webhook {:?}: {why}", hook.name());
    let mut err = ApiError::internal(message.clone());
    err.details = Some(Box::new(Details {
        causes: vec![Cause::new("", "", message)],
        ..Details::default()
    }));
    Err(err)
}

/// The user as a review's `userInfo`.
fn user_info(req: &Request<'_>) -> Value {
    let user = req.user;
    let mut info = Map::new();
    info.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        info.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        info.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        info.insert("extra".into(), json!(user.extra));
    }
    Value::Object(info)
}

/// The object a mutating webhook sees on create lacks what the server assigns after mutating
/// admission (uid, creation timestamp, generation), as upstream's.
fn as_sent(req: &Request<'_>, object: &Value, mutating: bool) -> Value {
    let mut obj = object.clone();
    if mutating
        && req.operation == Operation::Create
        && let Some(md) = meta::metadata_mut(&mut obj)
    {
        for field in ["uid", "creationTimestamp", "generation"] {
            md.remove(field);
        }
        if req.generated_name {
            md.remove("name");
        }
    }
    obj
}

/// The `AdmissionReview` request for one webhook.
/// `object` and `old` are in the matched version's shape (see [`object_for`]).
pub(crate) fn build_review(
    req: &Request<'_>,
    hook: &Candidate,
    object: Option<&Value>,
    old: Option<&Value>,
    mutating: bool,
    uid: &str,
) -> Value {
    let matched = &hook.matched;
    let mut r = Map::new();
    r.insert("uid".into(), json!(uid));
    let kind_of = |info: &crate::registry::ResourceInfo| match req.subresource_kind {
        Some((group, version, kind)) => json!({"group": group, "version": version, "kind": kind}),
        None => json!({"group": info.group, "version": info.version, "kind": info.kind}),
    };
    r.insert("kind".into(), kind_of(matched));
    r.insert(
        "resource".into(),
        json!({"group": matched.group, "version": matched.version, "resource": matched.resource}),
    );
    if let Some(sub) = req.subresource {
        r.insert("subResource".into(), json!(sub));
    }
    let info = req.info;
    r.insert("requestKind".into(), kind_of(info));
    r.insert(
        "requestResource".into(),
        json!({"group": info.group, "version": info.version, "resource": info.resource}),
    );
    if let Some(sub) = req.subresource {
        r.insert("requestSubResource".into(), json!(sub));
    }
    let unnamed = mutating && req.generated_name && req.operation == Operation::Create;
    if !req.name.is_empty() && !unnamed {
        r.insert("name".into(), json!(req.name));
    }
    if let Some(ns) = req.namespace.filter(|n| !n.is_empty() && info.namespaced) {
        r.insert("namespace".into(), json!(ns));
    }
    r.insert("operation".into(), json!(req.operation.as_str()));
    r.insert("userInfo".into(), user_info(req));
    let view = |o: &Value| as_sent(req, o, mutating);
    r.insert("object".into(), object.map(view).unwrap_or(Value::Null));
    r.insert("oldObject".into(), old.cloned().unwrap_or(Value::Null));
    r.insert("dryRun".into(), json!(req.dry_run));
    let mut options = Map::new();
    options.insert("kind".into(), json!(req.operation.options_kind()));
    options.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    if req.dry_run {
        options.insert("dryRun".into(), json!(["All"]));
    }
    for (k, v) in &req.options {
        options.insert(k.clone(), v.clone());
    }
    r.insert("options".into(), Value::Object(options));
    json!({
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": Value::Object(r),
    })
}

/// Whether every match condition of the webhook holds (`Err` with upstream's text when one
/// cannot be evaluated).
fn conditions_hold(req: &Request<'_>, hook: &Candidate, review: &Value) -> Result<bool, String> {
    let Some(conditions) = hook.hook.get("matchConditions").and_then(Value::as_array) else {
        return Ok(true);
    };
    let request = &review["request"];
    let null = Value::Null;
    let object = request.get("object").unwrap_or(&null);
    let old = request.get("oldObject").unwrap_or(&null);
    let authorizer = super::cel::authorizer(req);
    for cond in conditions {
        let name = cond.get("name").and_then(Value::as_str).unwrap_or("");
        let expression = cond.get("expression").and_then(Value::as_str).unwrap_or("");
        let program = super::cel::compile_cached(expression, false)
            .map_err(|e| format!("compilation failed for matchCondition {name:?}: {e}"))?;
        let vars = [("object", object), ("oldObject", old), ("request", request)];
        match super::cel::evaluate(&program, &vars, &authorizer) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(cel::Value::Bool(false)) => return Ok(false),
            Ok(other) => {
                return Err(format!(
                    "matchCondition {name:?} evaluated to {other:?}, not a bool"
                ));
            }
            Err(e) => return Err(format!("matchCondition {name:?}: {e}")),
        }
    }
    Ok(true)
}

/// Calls one webhook. `Ok(None)` when it was skipped (match conditions, ignored failure);
/// `Ok(Some(response))` when it allowed the request; a denial or failure otherwise.
async fn call(
    req: &Request<'_>,
    hook: &Candidate,
    object: Option<&Value>,
    mutating: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<Value>, ApiError> {
    let uid = uuid::Uuid::new_v4().to_string();
    let object = match object {
        Some(o) => Some(object_for(req, &hook.matched, o).await?),
        None => None,
    };
    let old = match req.old {
        Some(o) => Some(object_for(req, &hook.matched, o).await?),
        None => None,
    };
    let review = build_review(req, hook, object.as_ref(), old.as_ref(), mutating, &uid);
    match conditions_hold(req, hook, &review) {
        Ok(true) => {}
        Ok(false) => return Ok(None),
        Err(why) => return failure(hook, why).map(|()| None),
    }
    if req.dry_run && !matches!(hook.field("sideEffects", ""), "None" | "NoneOnDryRun") {
        return Err(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name()
        )));
    }
    let timeout = hook
        .hook
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(10)
        .clamp(1, MAX_TIMEOUT_SECONDS);
    let config = hook
        .hook
        .get("clientConfig")
        .cloned()
        .unwrap_or(Value::Null);
    let target = match client::target(
        req.objects,
        req.objects.webhook_services(),
        &config,
        timeout,
    ) {
        Ok(t) => t,
        Err(why) => return failure(hook, format!("failed to call webhook: {why}")).map(|()| None),
    };
    let body = serde_json::to_vec(&review).unwrap_or_default();
    let ca_bundle = config.get("caBundle").and_then(Value::as_str);
    let bytes = match client::post(&target, ca_bundle, body, Duration::from_secs(timeout)).await {
        Ok(b) => b,
        Err(why) if why.starts_with("failed to call webhook: ") => {
            return failure(hook, why).map(|()| None);
        }
        Err(why) => return failure(hook, format!("failed to call webhook: {why}")).map(|()| None),
    };
    let response = match parse_response(&bytes, &uid) {
        Ok(r) => r,
        Err(why) => {
            return failure(hook, format!("received invalid webhook response: {why}"))
                .map(|()| None);
        }
    };
    if let Some(ws) = response.get("warnings").and_then(Value::as_array) {
        warnings.extend(
            ws.iter()
                .filter_map(Value::as_str)
                .filter(|w| !w.trim().is_empty())
                .map(str::to_string),
        );
    }
    if response.get("allowed").and_then(Value::as_bool) != Some(true) {
        return Err(denial(hook, response.get("status")));
    }
    Ok(Some(response))
}

/// The review's `response`, checked against the request's uid.
fn parse_response(bytes: &[u8], uid: &str) -> Result<Value, String> {
    let review: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("response was absent")?;
    let got = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    Ok(response.clone())
}

/// Upstream's denial: the webhook's status code (403 when unset), its reason, and
/// `admission webhook "x" denied the request: <message>`.
fn denial(hook: &Candidate, status: Option<&Value>) -> ApiError {
    let status = status.cloned().unwrap_or(Value::Null);
    let text = |key: &str| status.get(key).and_then(Value::as_str).unwrap_or("");
    // No success code goes with a refusal (upstream's `ToStatusErr`).
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .map(|c| if c < 400 { 400 } else { c.min(599) })
        .unwrap_or(403);
    let (message, reason) = (text("message"), text("reason"));
    let denied = format!("admission webhook {:?} denied the request", hook.name());
    let text = match (message, reason) {
        ("", "") => format!("{denied} without explanation"),
        ("", reason) => format!("{denied}: {reason}"),
        (message, _) => format!("{denied}: {message}"),
    };
    let mut err = ApiError::new(code, known_reason(reason), text);
    // The webhook's details (causes, name, kind) reach the client as it sent them.
    if let Some(details) = status.get("details").filter(|d| d.is_object()) {
        let field = |key: &str| details.get(key).and_then(Value::as_str).map(str::to_string);
        let causes = details
            .get("causes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let part = |key: &str| c.get(key).and_then(Value::as_str).unwrap_or("");
                Cause::new(part("reason"), part("field"), part("message"))
            })
            .collect();
        err.details = Some(Box::new(crate::error::Details {
            name: field("name"),
            group: field("group"),
            kind: field("kind"),
            uid: field("uid"),
            causes,
            retry_after_seconds: details.get("retryAfterSeconds").and_then(Value::as_u64),
        }));
    }
    err
}

/// A `Status.reason` as the static text `ApiError` holds (unknown reasons are dropped).
fn known_reason(reason: &str) -> &'static str {
    const REASONS: &[&str] = &[
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    REASONS
        .iter()
        .find(|r| **r == reason)
        .copied()
        .unwrap_or("")
}
