//! The strategies of `batch/v1`: upstream's `pkg/apis/batch/validation` rules for Jobs and
//! CronJobs on create and update.

use serde_json::Value;

use super::policies::{self, set};
use super::status;
use crate::ApiError;
use crate::defaults::{
    JOB_CONTROLLER_UID_LABEL, JOB_NAME_LABEL, LEGACY_JOB_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
};
use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::kinds::workload::{
    canonicalize_template, immutable, nonnegative, nonnegative_fields, restart_policy_in,
    validate_template,
};
use crate::meta;
use crate::objects::FieldValidation;
use crate::quantity;
use crate::registry::ResourceInfo;
use crate::selector::from_label_selector_json;
use crate::validation::enums::{self, Order};
use crate::validation::names::{child, dns1123_label, invalid_value, key as key_path};
use crate::validation::selectors::validate_label_selector;

/// The strategy of `batch/v1` Jobs.
#[derive(Debug, Clone, Copy)]
pub(super) struct JobStrategy;

impl Strategy for JobStrategy {
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
        crate::defaults::apply_builtin_defaults("batch", "Job", obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_job(obj, true)
    }

    /// The spec rules and what may change, or through `/status` the status rules alone (the
    /// spec is the stored one), as upstream's status strategy validates.
    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return status::job_status_update(obj, old);
        }
        // Jobs created before the `batch.kubernetes.io/` labels existed are not held to them.
        let old_labels = meta::path(old, "spec.template.metadata.labels");
        let prefixed = [JOB_NAME_LABEL, JOB_CONTROLLER_UID_LABEL]
            .iter()
            .all(|k| old_labels.and_then(|l| l.get(k)).is_some());
        let mut errs = validate_job(obj, prefixed);
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let old_spec = old.get("spec").unwrap_or(&Value::Null);
        errs.extend(completions_update(spec, old_spec));
        errs.extend(immutable(spec, old_spec, "selector", "spec"));
        errs.extend(template_update(spec, old_spec, old));
        for field in [
            "completionMode",
            "podFailurePolicy",
            "backoffLimitPerIndex",
            "managedBy",
            "successPolicy",
        ] {
            errs.extend(immutable(spec, old_spec, field, "spec"));
        }
        errs
    }
}

/// Upstream's `ValidateJob` after the metadata: the generated selector, the spec, the pod
/// hostnames of an Indexed Job. `prefixed` requires the `batch.kubernetes.io/` labels.
fn validate_job(obj: &Value, prefixed: bool) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = generated_selector(obj, spec, prefixed);
    errs.extend(job_spec(spec, "spec"));
    errs.extend(indexed_pod_hostname(obj, spec));
    errs
}

/// Unless `manualSelector` is set, the pod template must carry the labels the server
/// generated (name and uid, which a client may have set to something else) and the selector
/// must select them (upstream's `validateGeneratedSelector`).
fn generated_selector(obj: &Value, spec: &Value, prefixed: bool) -> Vec<Cause> {
    let mut errs = Vec::new();
    if spec.get("manualSelector") == Some(&Value::Bool(true)) {
        return errs;
    }
    let Some(selector) = set(spec, "selector") else {
        return errs;
    };
    let uid = meta::uid(obj);
    if uid.is_empty() {
        errs.push(Cause::required("metadata.uid", ""));
    }
    let name = meta::name(obj);
    let labels = meta::path(spec, "template.metadata.labels");
    let mut has_label = |key: &str, expected: &str| {
        let field = key_path("spec.template.metadata.labels", key);
        match labels.and_then(|l| l.get(key)) {
            None => errs.push(Cause::required(&field, &format!("must be '{expected}'"))),
            Some(actual) if actual.as_str() != Some(expected) => errs.push(invalid_value(
                &field,
                labels.unwrap_or(&Value::Null),
                &format!("must be '{expected}'"),
            )),
            Some(_) => {}
        }
    };
    has_label(LEGACY_JOB_CONTROLLER_UID_LABEL, uid);
    has_label(LEGACY_JOB_NAME_LABEL, name);
    let mut expected = serde_json::Map::new();
    if prefixed {
        has_label(JOB_CONTROLLER_UID_LABEL, uid);
        has_label(JOB_NAME_LABEL, name);
        expected.insert(JOB_CONTROLLER_UID_LABEL.into(), Value::from(uid));
        expected.insert(JOB_NAME_LABEL.into(), Value::from(name));
    }
    expected.insert(LEGACY_JOB_CONTROLLER_UID_LABEL.into(), Value::from(uid));
    expected.insert(LEGACY_JOB_NAME_LABEL.into(), Value::from(name));
    if let Ok(parsed) = from_label_selector_json(selector)
        && !parsed.matches(Some(&expected))
    {
        errs.push(invalid_value(
            "spec.selector",
            selector,
            "`selector` not auto-generated",
        ));
    }
    errs
}

/// An Indexed Job's last pod hostname (`<name>-<completions-1>`) must be a DNS label
/// (upstream's `ValidateJob`).
fn indexed_pod_hostname(obj: &Value, spec: &Value) -> Option<Cause> {
    let completions = set(spec, "completions").and_then(Value::as_i64)?;
    if spec.get("completionMode").and_then(Value::as_str) != Some("Indexed") || completions <= 0 {
        return None;
    }
    let name = meta::name(obj);
    let hostname = format!("{name}-{}", completions - 1);
    if dns1123_label(&hostname).is_empty() {
        return None;
    }
    Some(invalid_value(
        "metadata.name",
        &Value::from(name),
        &format!("will not able to create pod with invalid DNS label: {hostname}"),
    ))
}

/// `completions` may change only for Indexed Jobs, together with `parallelism` (upstream's
/// `validateCompletions` with elastic Indexed Jobs, GA).
fn completions_update(spec: &Value, old_spec: &Value) -> Option<Cause> {
    let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    if !indexed {
        return immutable(spec, old_spec, "completions", "spec");
    }
    let completions = set(spec, "completions");
    if completions == set(old_spec, "completions") {
        return None;
    }
    let completions = completions?;
    (Some(completions) != set(spec, "parallelism")).then(|| {
        invalid_value(
            "spec.completions",
            completions,
            "can only be modified in tandem with spec.parallelism",
        )
    })
}

/// The template of a Job is immutable, except that a suspended Job that never started may
/// change its pods' scheduling directives (node selector, tolerations, node affinity,
/// scheduling gates), labels and annotations (upstream's `validatePodTemplateUpdate`).
fn template_update(spec: &Value, old_spec: &Value, old: &Value) -> Option<Cause> {
    let (template, old_template) = (spec.get("template"), old_spec.get("template"));
    if template == old_template {
        return None;
    }
    let suspended_unstarted = old_spec.get("suspend") == Some(&Value::Bool(true))
        && meta::path(old, "status.startTime").is_none_or(Value::is_null);
    if suspended_unstarted {
        const MUTABLE: [&str; 3] = ["nodeSelector", "tolerations", "schedulingGates"];
        let strip = |t: Option<&Value>| {
            let mut t = t.cloned().unwrap_or(Value::Null);
            if let Some(metadata) = t.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("labels");
                metadata.remove("annotations");
            }
            if let Some(pod) = t.get_mut("spec").and_then(Value::as_object_mut) {
                for field in MUTABLE {
                    pod.remove(field);
                }
                // Of the affinity, only the node affinity may change.
                if let Some(affinity) = pod.get_mut("affinity").and_then(Value::as_object_mut) {
                    affinity.remove("nodeAffinity");
                    affinity.retain(|_, v| !v.is_null());
                }
                if pod
                    .get("affinity")
                    .is_some_and(|a| a.is_null() || a.as_object().is_some_and(|a| a.is_empty()))
                {
                    pod.remove("affinity");
                }
            }
            t
        };
        if strip(template) == strip(old_template) {
            return None;
        }
    }
    Some(invalid_value(
        "spec.template",
        template.unwrap_or(&Value::Null),
        "field is immutable",
    ))
}

/// Upstream's `ValidateJobSpec`: the rest of the spec, then the selector rules.
fn job_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut errs = job_spec_rest(spec, path);
    let selector_path = child(path, "selector");
    match set(spec, "selector") {
        None => errs.push(Cause::required(&selector_path, "")),
        Some(selector) => errs.extend(validate_label_selector(selector, &selector_path)),
    }
    if let Some(Ok(selector)) = set(spec, "selector").map(from_label_selector_json) {
        let labels = meta::path(spec, "template.metadata.labels");
        if !selector.matches(labels.and_then(Value::as_object)) {
            errs.push(invalid_value(
                &child(path, "template.metadata.labels"),
                labels.unwrap_or(&Value::Null),
                "`selector` does not match template `labels`",
            ));
        }
    }
    errs
}

/// The most pods an Indexed Job may run at once (caps `status.completedIndexes`).
const MAX_INDEXED_PARALLELISM: i64 = 100_000;
/// The most failed indexes an Indexed Job may tolerate.
const MAX_FAILED_INDEXES: i64 = 100_000;
/// Above this many completions, a per-index backoff limit needs tighter bounds.
const COMPLETIONS_SOFT_LIMIT: i64 = 100_000;
/// The most pods (and failed indexes) above [`COMPLETIONS_SOFT_LIMIT`] completions.
const HIGH_COMPLETIONS_LIMIT: i64 = 10_000;

/// Upstream's `validateJobSpec`: counts, per-index limits, `managedBy`, completion mode, the
/// policies, the template and its restart policy.
fn job_spec_rest(spec: &Value, path: &str) -> Vec<Cause> {
    let mut errs = nonnegative_fields(
        spec,
        &[
            "parallelism",
            "completions",
            "activeDeadlineSeconds",
            "backoffLimit",
            "ttlSecondsAfterFinished",
            "backoffLimitPerIndex",
        ],
        path,
    );
    let per_index = set(spec, "backoffLimitPerIndex");
    let max_failed = set(spec, "maxFailedIndexes");
    if max_failed.is_some() {
        errs.extend(nonnegative(spec, "maxFailedIndexes", path));
        if per_index.is_none() {
            errs.push(Cause::required(
                child(path, "backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    if let Some(managed_by) = set(spec, "managedBy") {
        errs.extend(policies::managed_by(managed_by, &child(path, "managedBy")));
    }
    let mode = set(spec, "completionMode");
    let indexed = mode.and_then(Value::as_str) == Some("Indexed");
    if let Some(mode) = mode {
        if !matches!(mode.as_str(), Some("NonIndexed" | "Indexed")) {
            errs.push(enums::COMPLETION_MODE.not_supported(
                child(path, "completionMode"),
                mode,
                Order::Declared,
            ));
        }
        if indexed {
            errs.extend(indexed_limits(spec, path));
        }
    }
    if !indexed {
        for (field, value) in [
            ("backoffLimitPerIndex", per_index),
            ("maxFailedIndexes", max_failed),
        ] {
            if let Some(value) = value {
                errs.push(invalid_value(
                    &child(path, field),
                    value,
                    "requires indexed completion mode",
                ));
            }
        }
    }
    let failure_policy = set(spec, "podFailurePolicy");
    if let Some(policy) = failure_policy {
        errs.extend(policies::pod_failure_policy(
            spec,
            policy,
            &child(path, "podFailurePolicy"),
        ));
    }
    if let Some(policy) = set(spec, "successPolicy") {
        errs.extend(policies::success_policy(
            spec,
            policy,
            &child(path, "successPolicy"),
        ));
    }
    errs.extend(policies::pod_replacement_policy(
        spec,
        &child(path, "podReplacementPolicy"),
    ));
    let template_path = child(path, "template");
    let template = spec.get("template").unwrap_or(&Value::Null);
    errs.extend(validate_template(template, &template_path));
    let restart_path = child(&template_path, "spec.restartPolicy");
    match meta::path(template, "spec.restartPolicy").and_then(Value::as_str) {
        None | Some("" | "Always") => errs.push(Cause::required(
            &restart_path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        Some("OnFailure") if failure_policy.is_some() => errs.push(invalid_value(
            &restart_path,
            &Value::from("OnFailure"),
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        Some("OnFailure" | "Never") => {}
        Some(_) => errs.extend(restart_policy_in(
            template,
            &template_path,
            &["OnFailure", "Never"],
        )),
    }
    errs
}

/// `value` when it is a number above `limit`.
fn above(value: Option<&Value>, limit: i64) -> Option<&Value> {
    value.filter(|v| v.as_i64().is_some_and(|n| n > limit))
}

/// The bounds of an Indexed Job: `completions` required, `parallelism` and
/// `maxFailedIndexes` capped, tighter with a per-index backoff limit and many completions.
fn indexed_limits(spec: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let completions = set(spec, "completions").and_then(Value::as_i64);
    let parallelism = set(spec, "parallelism");
    let max_failed = set(spec, "maxFailedIndexes");
    if completions.is_none() {
        errs.push(Cause::required(
            child(path, "completions"),
            "when completion mode is Indexed",
        ));
    }
    if let Some(p) = above(parallelism, MAX_INDEXED_PARALLELISM) {
        errs.push(invalid_value(
            &child(path, "parallelism"),
            p,
            &format!(
                "must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed"
            ),
        ));
    }
    if let Some(c) = completions
        && let Some(m) = above(max_failed, c)
    {
        errs.push(invalid_value(
            &child(path, "maxFailedIndexes"),
            m,
            "must be less than or equal to completions",
        ));
    }
    if let Some(m) = above(max_failed, MAX_FAILED_INDEXES) {
        errs.push(invalid_value(
            &child(path, "maxFailedIndexes"),
            m,
            &format!("must be less than or equal to {MAX_FAILED_INDEXES}"),
        ));
    }
    if completions.is_some_and(|c| c > COMPLETIONS_SOFT_LIMIT)
        && set(spec, "backoffLimitPerIndex").is_some()
    {
        if max_failed.is_none() {
            errs.push(Cause::required(
                child(path, "maxFailedIndexes"),
                &format!("must be specified when completions is above {COMPLETIONS_SOFT_LIMIT}"),
            ));
        }
        let detail = format!(
            "must be less than or equal to {HIGH_COMPLETIONS_LIMIT} when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
        );
        if let Some(p) = above(parallelism, HIGH_COMPLETIONS_LIMIT) {
            errs.push(invalid_value(&child(path, "parallelism"), p, &detail));
        }
        if let Some(m) = above(max_failed, HIGH_COMPLETIONS_LIMIT) {
            errs.push(invalid_value(&child(path, "maxFailedIndexes"), m, &detail));
        }
    }
    errs
}

/// The strategy of `batch/v1` CronJobs.
#[derive(Debug, Clone, Copy)]
pub(super) struct CronJobStrategy;

impl Strategy for CronJobStrategy {
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        canonicalize_template(obj, "spec.jobTemplate.spec.template")
            .map_err(|e| quantity::undecodable(info, e))?;
        crate::openapi_builtin::decode_builtin(info, obj, validation)
    }

    fn default(&self, obj: &mut Value) {
        crate::defaults::apply_builtin_defaults("batch", "CronJob", obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        let mut errs = Vec::new();
        // Job names get an 11-character suffix and must stay DNS-1035 labels.
        let name = meta::name(obj);
        if name.len() > 52 {
            errs.push(invalid_value(
                "metadata.name",
                &Value::from(name),
                "must be no more than 52 characters",
            ));
        }
        errs.extend(cron_job_spec(obj.get("spec").unwrap_or(&Value::Null), None));
        errs
    }

    /// The spec rules without the name limit (older, longer names stay updatable); through
    /// `/status` nothing (upstream's CronJob status strategy validates no status field).
    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return Vec::new();
        }
        cron_job_spec(
            obj.get("spec").unwrap_or(&Value::Null),
            Some(old.get("spec").unwrap_or(&Value::Null)),
        )
    }
}

/// Upstream's `validateCronJobSpec`; on update (`old_spec` set) a schedule may keep a `TZ=`
/// it already had, and the time zone is checked only when it changed.
fn cron_job_spec(spec: &Value, old_spec: Option<&Value>) -> Vec<Cause> {
    let mut errs = Vec::new();
    let time_zone = set(spec, "timeZone");
    let had_tz = old_spec
        .and_then(|old| old.get("schedule"))
        .and_then(Value::as_str)
        .is_some_and(|s| s.contains("TZ"));
    match spec.get("schedule").and_then(Value::as_str).unwrap_or("") {
        "" => errs.push(Cause::required("spec.schedule", "")),
        text => {
            let value = Value::from(text);
            if let Err(e) = crate::cron::parse(text) {
                errs.push(invalid_value("spec.schedule", &value, &e));
            }
            if text.contains("TZ") {
                let detail = match (had_tz, time_zone.is_some()) {
                    (true, true) => {
                        Some("cannot use both timeZone field and TZ or CRON_TZ in schedule")
                    }
                    (true, false) => None,
                    (false, _) => {
                        Some("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
                    }
                };
                if let Some(detail) = detail {
                    errs.push(invalid_value("spec.schedule", &value, detail));
                }
            }
        }
    }
    errs.extend(nonnegative_fields(
        spec,
        &["startingDeadlineSeconds"],
        "spec",
    ));
    let zone_changed = old_spec.is_none_or(|old| set(old, "timeZone") != time_zone);
    if let Some(zone) = time_zone.filter(|_| zone_changed) {
        errs.extend(time_zone_causes(zone));
    }
    match spec.get("concurrencyPolicy") {
        None | Some(Value::Null) => errs.push(Cause::required("spec.concurrencyPolicy", "")),
        Some(p)
            if p.as_str()
                .is_some_and(|p| enums::CONCURRENCY_POLICY.contains(p)) => {}
        Some(p) if p.as_str() == Some("") => {
            errs.push(Cause::required("spec.concurrencyPolicy", ""))
        }
        Some(p) => errs.push(enums::CONCURRENCY_POLICY.not_supported(
            "spec.concurrencyPolicy",
            p,
            Order::Declared,
        )),
    }
    let job = meta::path(spec, "jobTemplate.spec").unwrap_or(&Value::Null);
    let job_path = "spec.jobTemplate.spec";
    if let Some(selector) = job.get("selector").filter(|s| !s.is_null()) {
        errs.push(invalid_value(
            &child(job_path, "selector"),
            selector,
            "`selector` will be auto-generated",
        ));
    }
    if let Some(manual) = job
        .get("manualSelector")
        .filter(|m| **m == Value::Bool(true))
    {
        errs.push(Cause::not_supported(
            child(job_path, "manualSelector"),
            manual,
            &[Value::from("nil"), Value::from("false")],
        ));
    }
    errs.extend(job_spec_rest(job, job_path));
    errs.extend(nonnegative_fields(
        spec,
        &["successfulJobsHistoryLimit", "failedJobsHistoryLimit"],
        "spec",
    ));
    errs
}

/// Upstream's `validateTimeZone`.
fn time_zone_causes(zone: &Value) -> Option<Cause> {
    let path = "spec.timeZone";
    let text = zone.as_str().unwrap_or("");
    if text.is_empty() {
        return Some(invalid_value(
            path,
            zone,
            "timeZone must be nil or non-empty string",
        ));
    }
    let bad_part = text.split('/').any(|part| {
        part == "."
            || part == ".."
            || part.starts_with('-')
            || part.is_empty()
            || part.len() > 14
            || !part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
    });
    if bad_part {
        return Some(invalid_value(
            path,
            zone,
            &format!("unknown time zone {text}"),
        ));
    }
    if text.eq_ignore_ascii_case("Local") {
        return Some(invalid_value(
            path,
            zone,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    crate::cron::check_zone(text)
        .err()
        .map(|e| invalid_value(path, zone, &e))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn summaries(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    fn job(extra: Value) -> Value {
        let mut spec = json!({
            "selector": {"matchLabels": {"job-name": "j"}},
            "template": {
                "metadata": {"labels": {"job-name": "j"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}],
                         "initContainers": [{"name": "i", "image": "i"}]},
            },
            "backoffLimit": 6,
        });
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        crate::kinds::workload::with_template_defaults(spec)
    }

    fn cron_job_spec_new(spec: &Value) -> Vec<Cause> {
        cron_job_spec(spec, None)
    }

    /// The spec of a Job with `extra` merged in and its template's containers named `c`
    /// (init container `i`).
    fn indexed(extra: Value) -> Value {
        let mut spec = job(json!({"completionMode": "Indexed", "completions": 5}));
        for (k, v) in extra.as_object().expect("object") {
            spec[k] = v.clone();
        }
        spec
    }

    #[test]
    fn job_rules() {
        assert!(job_spec(&job(json!({})), "spec").is_empty());
        let mut always = job(json!({}));
        always["template"]["spec"]["restartPolicy"] = json!("Always");
        let mut on_failure_with_policy = job(json!({"podFailurePolicy": {"rules": []}}));
        on_failure_with_policy["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        let rule = |r: Value| job(json!({"podFailurePolicy": {"rules": [r]}}));
        let exit_codes = |op: &str, values: Value| {
            rule(json!({"action": "FailJob", "onExitCodes": {"operator": op, "values": values}}))
        };
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (
                job(json!({"parallelism": -1})),
                vec!["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"],
            ),
            (
                always,
                vec![
                    "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
                ],
            ),
            (
                on_failure_with_policy,
                vec![
                    "spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified",
                ],
            ),
            (
                job(json!({"completionMode": "Indexed"})),
                vec!["spec.completions: Required value: when completion mode is Indexed"],
            ),
            // Pod failure policies.
            (
                rule(json!({"action": "FailJob"})),
                vec![
                    "spec.podFailurePolicy.rules[0]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
                ],
            ),
            (
                rule(json!({"action": "FailJob",
                         "onExitCodes": {"containerName": "c", "operator": "In", "values": [1]},
                         "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]})),
                vec![
                    "spec.podFailurePolicy.rules[0]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported",
                ],
            ),
            (
                exit_codes("In", json!([11, 11])),
                vec!["spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Duplicate value: 11"],
            ),
            (
                exit_codes("In", json!([19, 11])),
                vec![
                    "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{19, 11}: must be ordered",
                ],
            ),
            (
                exit_codes("In", json!([])),
                vec![
                    "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{}: at least one value is required",
                ],
            ),
            (
                exit_codes("In", json!([1, 0, 2])),
                vec![
                    "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 0: must not be 0 for the In operator",
                    "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: []int32{1, 0, 2}: must be ordered",
                ],
            ),
            (exit_codes("NotIn", json!([0, 1])), vec![]),
            (
                exit_codes("", json!([1])),
                vec![
                    "spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: valid values: [\"In\" \"NotIn\"]",
                ],
            ),
            (
                exit_codes("Near", json!([1])),
                vec![
                    "spec.podFailurePolicy.rules[0].onExitCodes.operator: Unsupported value: \"Near\": supported values: \"In\", \"NotIn\"",
                ],
            ),
            (
                exit_codes("In", json!((1..=256).collect::<Vec<i64>>())),
                vec![
                    "spec.podFailurePolicy.rules[0].onExitCodes.values: Too many: 256: must have at most 255 items",
                ],
            ),
            (
                rule(json!({"onExitCodes": {"operator": "In", "values": [1]}})),
                vec![
                    "spec.podFailurePolicy.rules[0].action: Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]",
                ],
            ),
            (
                rule(
                    json!({"action": "Explode", "onExitCodes": {"operator": "In", "values": [1]}}),
                ),
                vec![
                    "spec.podFailurePolicy.rules[0].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
                ],
            ),
            (
                rule(
                    json!({"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}),
                ),
                vec![
                    "spec.podFailurePolicy.rules[0].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set",
                ],
            ),
            (
                rule(
                    json!({"action": "Ignore", "onExitCodes": {"containerName": "xyz", "operator": "In", "values": [1]}}),
                ),
                vec![
                    "spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: \"xyz\": must be one of the container or initContainer names in the pod template",
                ],
            ),
            (
                rule(
                    json!({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}),
                ),
                vec![
                    "spec.podFailurePolicy.rules[0].onPodConditions[0].status: Required value: valid values: [\"False\" \"True\" \"Unknown\"]",
                ],
            ),
            (
                rule(
                    json!({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]}),
                ),
                vec![
                    "spec.podFailurePolicy.rules[0].onPodConditions[0].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
                ],
            ),
            (
                rule(
                    json!({"action": "Ignore", "onPodConditions": [{"type": "Invalid Condition Type", "status": "True"}]}),
                ),
                vec![
                    "spec.podFailurePolicy.rules[0].onPodConditions[0].type: Invalid value: \"Invalid Condition Type\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                ],
            ),
            (
                job(
                    json!({"podFailurePolicy": {"rules": (1..=21).map(|i| json!({"action": "Count", "onExitCodes": {"operator": "In", "values": [i]}})).collect::<Vec<_>>()}}),
                ),
                vec!["spec.podFailurePolicy.rules: Too many: 21: must have at most 20 items"],
            ),
            // Pod replacement policies.
            (
                job(
                    json!({"podReplacementPolicy": "TerminatingOrFailed", "podFailurePolicy": {"rules": []}}),
                ),
                vec![
                    "spec.podReplacementPolicy: Unsupported value: \"TerminatingOrFailed\": supported values: \"Failed\"",
                ],
            ),
            (
                job(json!({"podReplacementPolicy": ""})),
                vec![
                    "spec.podReplacementPolicy: Unsupported value: \"\": supported values: \"Failed\", \"TerminatingOrFailed\"",
                ],
            ),
            (
                job(json!({"podReplacementPolicy": "Failed", "podFailurePolicy": {"rules": []}})),
                vec![],
            ),
            // Success policies.
            (
                job(json!({"successPolicy": {"rules": []}})),
                vec![
                    "spec.successPolicy: Invalid value: batch.SuccessPolicy{Rules:[]batch.SuccessPolicyRule{}}: requires indexed completion mode",
                ],
            ),
            (
                indexed(
                    json!({"successPolicy": {"rules": [{"succeededCount": 1, "succeededIndexes": "0,2,4"}, {"succeededIndexes": "1,3"}]}}),
                ),
                vec![],
            ),
            (
                indexed(json!({"successPolicy": {}})),
                vec![
                    "spec.successPolicy.rules: Required value: at least one rules must be specified when the successPolicy is specified",
                ],
            ),
            (
                indexed(json!({"successPolicy": {"rules": [{}]}})),
                vec![
                    "spec.successPolicy.rules[0]: Required value: at least one of succeededCount or succeededIndexes must be specified",
                ],
            ),
            (
                indexed(
                    json!({"successPolicy": {"rules": [{"succeededIndexes": "invalid-format"}]}}),
                ),
                vec![
                    "spec.successPolicy.rules[0].succeededIndexes: Invalid value: \"invalid-format\": error parsing succeededIndexes: cannot convert string to integer for index: \"invalid\"",
                ],
            ),
            (
                indexed(json!({"successPolicy": {"rules": [{"succeededCount": -1}]}})),
                vec![
                    "spec.successPolicy.rules[0].succeededCount: Invalid value: -1: must be greater than or equal to 0",
                ],
            ),
            (
                indexed(json!({"successPolicy": {"rules": [{"succeededCount": 6}]}})),
                vec![
                    "spec.successPolicy.rules[0].succeededCount: Invalid value: 6: must be less than or equal to 5 (the number of specified completions)",
                ],
            ),
            (
                indexed(
                    json!({"successPolicy": {"rules": [{"succeededCount": 4, "succeededIndexes": "0-2"}]}}),
                ),
                vec![
                    "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3 (the number of indexes in the specified succeededIndexes field)",
                ],
            ),
            (
                indexed(
                    json!({"successPolicy": {"rules": vec![json!({"succeededCount": 5}); 21]}}),
                ),
                vec!["spec.successPolicy.rules: Too many: 21: must have at most 20 items"],
            ),
            // Per-index backoff limits.
            (
                job(json!({"backoffLimitPerIndex": 1})),
                vec![
                    "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode",
                ],
            ),
            (
                indexed(json!({"maxFailedIndexes": 1})),
                vec![
                    "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
                ],
            ),
            (
                indexed(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 6})),
                vec![
                    "spec.maxFailedIndexes: Invalid value: 6: must be less than or equal to completions",
                ],
            ),
            (
                indexed(json!({"backoffLimitPerIndex": 1, "completions": 100_001})),
                vec![
                    "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000",
                ],
            ),
            (
                indexed(
                    json!({"backoffLimitPerIndex": 1, "completions": 100_001, "maxFailedIndexes": 100_001}),
                ),
                vec![
                    "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 100000",
                    "spec.maxFailedIndexes: Invalid value: 100001: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
                ],
            ),
            (
                indexed(
                    json!({"backoffLimitPerIndex": 1, "completions": 100_001, "maxFailedIndexes": 1, "parallelism": 50_000}),
                ),
                vec![
                    "spec.parallelism: Invalid value: 50000: must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index",
                ],
            ),
            (
                indexed(json!({"parallelism": 100_001})),
                vec![
                    "spec.parallelism: Invalid value: 100001: must be less than or equal to 100000 when completion mode is Indexed",
                ],
            ),
            // managedBy.
            (job(json!({"managedBy": "example.com/foo"})), vec![]),
            (
                job(json!({"managedBy": "invalid custom controller name"})),
                vec![
                    "spec.managedBy: Invalid value: \"invalid custom controller name\": must be a domain-prefixed path (such as \"acme.io/foo\")",
                ],
            ),
            (
                job(json!({"managedBy": format!("example.com/{}", "x".repeat(60))})),
                vec!["spec.managedBy: Too long: may not be more than 63 bytes"],
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(summaries(job_spec(&spec, "spec")), want, "{spec}");
        }
    }

    #[test]
    fn indexed_job_names_must_make_pod_hostnames() {
        let spec = json!({"completionMode": "Indexed", "completions": 10});
        let name = "x".repeat(62);
        let obj = json!({"metadata": {"name": name}, "spec": spec});
        assert_eq!(
            indexed_pod_hostname(&obj, &spec).map(|c| c.summary()),
            Some(format!(
                "metadata.name: Invalid value: \"{name}\": will not able to create pod with invalid DNS label: {name}-9"
            ))
        );
        let short = json!({"metadata": {"name": "pi"}, "spec": spec});
        assert!(indexed_pod_hostname(&short, &spec).is_none());
    }

    #[test]
    fn indexed_completions_change_with_parallelism() {
        let old = indexed(json!({"parallelism": 5}));
        let mut both = indexed(json!({"parallelism": 7}));
        both["completions"] = json!(7);
        assert!(completions_update(&both, &old).is_none());
        let mut alone = old.clone();
        alone["completions"] = json!(7);
        assert_eq!(
            completions_update(&alone, &old)
                .map(|c| c.summary())
                .as_deref(),
            Some(
                "spec.completions: Invalid value: 7: can only be modified in tandem with spec.parallelism"
            )
        );
        let plain = job(json!({"completions": 2}));
        let mut changed = plain.clone();
        changed["completions"] = json!(3);
        assert_eq!(
            completions_update(&changed, &plain)
                .map(|c| c.summary())
                .as_deref(),
            Some("spec.completions: Invalid value: 3: field is immutable")
        );
    }

    #[test]
    fn job_templates_are_immutable_unless_suspended_and_unstarted() {
        let old_spec = job(json!({}));
        let mut new_spec = old_spec.clone();
        new_spec["template"]["spec"]["containers"][0]["image"] = json!("other");
        let old = json!({"spec": old_spec});
        let cause = template_update(&new_spec, &old_spec, &old).expect("immutable");
        assert_eq!(cause.field, "spec.template");
        assert!(
            cause.message.ends_with("field is immutable"),
            "{}",
            cause.message
        );

        let suspended = job(json!({"suspend": true}));
        let mut scheduled = suspended.clone();
        scheduled["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        let old = json!({"spec": suspended});
        assert!(template_update(&scheduled, &suspended, &old).is_none());
        let started = json!({"spec": suspended, "status": {"startTime": "2026-01-01T00:00:00Z"}});
        assert!(template_update(&scheduled, &suspended, &started).is_some());
    }

    #[test]
    fn cron_job_rules() {
        let spec = |schedule: &str| {
            let job = crate::kinds::workload::with_template_defaults(json!({
                "template": {"spec": {
                    "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "i"}]}},
            }));
            json!({"schedule": schedule, "concurrencyPolicy": "Allow", "jobTemplate": {"spec": job}})
        };
        assert!(cron_job_spec_new(&spec("*/5 * * * *")).is_empty());
        assert_eq!(
            summaries(cron_job_spec_new(&spec("not a schedule"))),
            [
                "spec.schedule: Invalid value: \"not a schedule\": expected exactly 5 fields, found 3: [not a schedule]"
            ]
        );
        assert_eq!(
            summaries(cron_job_spec_new(&spec("TZ=UTC 0 * * * *"))),
            [
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            ]
        );
        let mut zoned = spec("0 * * * *");
        zoned["timeZone"] = json!("Mars/Olympus");
        assert_eq!(
            summaries(cron_job_spec_new(&zoned)),
            ["spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"]
        );
    }
}
