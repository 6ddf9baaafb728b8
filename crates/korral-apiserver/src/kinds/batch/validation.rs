//! The strategies of `batch/v1`: upstream's `pkg/apis/batch/validation` rules for Jobs and
//! CronJobs on create and update.

use serde_json::Value;

use crate::ApiError;
use crate::error::Cause;
use crate::kinds::strategy::{Context, Strategy};
use crate::kinds::workload::{
    canonicalize_template, immutable, nonnegative_fields, restart_policy_in, validate_template,
};
use crate::meta;
use crate::objects::FieldValidation;
use crate::quantity;
use crate::registry::ResourceInfo;
use crate::selector::from_label_selector_json;
use crate::validation::enums::{self, Order};
use crate::validation::names::{child, invalid_value};
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
        job_spec(obj.get("spec").unwrap_or(&Value::Null), "spec")
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        let mut errs = self.validate(obj, ctx);
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let old_spec = old.get("spec").unwrap_or(&Value::Null);
        errs.extend(immutable(spec, old_spec, "completions", "spec"));
        errs.extend(immutable(spec, old_spec, "selector", "spec"));
        errs.extend(template_update(spec, old_spec, old));
        for field in [
            "completionMode",
            "podFailurePolicy",
            "backoffLimitPerIndex",
            "successPolicy",
            "managedBy",
        ] {
            errs.extend(immutable(spec, old_spec, field, "spec"));
        }
        errs
    }
}

/// The template of a Job is immutable, except that a suspended Job that never started may
/// change its pods' scheduling directives, labels and annotations (upstream's
/// `validatePodTemplateUpdate`).
fn template_update(spec: &Value, old_spec: &Value, old: &Value) -> Option<Cause> {
    let (template, old_template) = (spec.get("template"), old_spec.get("template"));
    if template == old_template {
        return None;
    }
    let suspended_unstarted = old_spec.get("suspend") == Some(&Value::Bool(true))
        && meta::path(old, "status.startTime").is_none_or(Value::is_null);
    if suspended_unstarted {
        const MUTABLE: [&str; 4] = ["nodeSelector", "tolerations", "affinity", "schedulingGates"];
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

/// Upstream's `ValidateJobSpec`: the selector rules, then the rest of the spec.
fn job_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    let selector_path = child(path, "selector");
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => errs.push(Cause::required(&selector_path, "")),
        Some(selector) => errs.extend(validate_label_selector(selector, &selector_path)),
    }
    if let Some(Ok(selector)) = spec
        .get("selector")
        .filter(|s| !s.is_null())
        .map(from_label_selector_json)
    {
        let labels = meta::path(spec, "template.metadata.labels");
        if !selector.matches(labels.and_then(Value::as_object)) {
            errs.push(invalid_value(
                &child(path, "template.metadata.labels"),
                labels.unwrap_or(&Value::Null),
                "`selector` does not match template `labels`",
            ));
        }
    }
    errs.extend(job_spec_rest(spec, path));
    errs
}

/// Upstream's `validateJobSpec`: counts, completion mode, the template and its restart policy.
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
            "maxFailedIndexes",
        ],
        path,
    );
    if let Some(mode) = spec.get("completionMode").filter(|m| !m.is_null()) {
        match mode.as_str() {
            Some("NonIndexed") => {}
            Some("Indexed") => {
                if spec.get("completions").is_none_or(Value::is_null) {
                    errs.push(Cause::required(
                        child(path, "completions"),
                        "when completion mode is Indexed",
                    ));
                }
            }
            _ => errs.push(enums::COMPLETION_MODE.not_supported(
                child(path, "completionMode"),
                mode,
                Order::Declared,
            )),
        }
    }
    let template_path = child(path, "template");
    let template = spec.get("template").unwrap_or(&Value::Null);
    errs.extend(validate_template(template, &template_path));
    errs.extend(restart_policy_in(
        template,
        &template_path,
        &["OnFailure", "Never"],
    ));
    if meta::path(template, "spec.restartPolicy").is_none() {
        errs.push(Cause::not_supported(
            child(&template_path, "spec.restartPolicy"),
            &Value::from(""),
            &[Value::from("OnFailure"), Value::from("Never")],
        ));
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
        errs.extend(cron_job_spec(obj.get("spec").unwrap_or(&Value::Null)));
        errs
    }

    fn validate_update(&self, obj: &Value, _old: &Value, _ctx: &Context) -> Vec<Cause> {
        cron_job_spec(obj.get("spec").unwrap_or(&Value::Null))
    }
}

/// Upstream's `validateCronJobSpec`.
fn cron_job_spec(spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let time_zone = spec.get("timeZone").filter(|z| !z.is_null());
    match spec.get("schedule").and_then(Value::as_str).unwrap_or("") {
        "" => errs.push(Cause::required("spec.schedule", "")),
        text => {
            let value = Value::from(text);
            if let Err(e) = crate::cron::parse(text) {
                errs.push(invalid_value("spec.schedule", &value, &e));
            }
            if text.contains("TZ") {
                let detail = if time_zone.is_some() {
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule"
                } else {
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
                };
                errs.push(invalid_value("spec.schedule", &value, detail));
            }
        }
    }
    errs.extend(nonnegative_fields(
        spec,
        &["startingDeadlineSeconds"],
        "spec",
    ));
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
    if let Some(zone) = time_zone {
        errs.extend(time_zone_causes(zone));
    }
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
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]},
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

    #[test]
    fn job_rules() {
        assert!(job_spec(&job(json!({})), "spec").is_empty());
        assert_eq!(
            summaries(job_spec(&job(json!({"parallelism": -1})), "spec")),
            ["spec.parallelism: Invalid value: -1: must be greater than or equal to 0"]
        );
        let mut always = job(json!({}));
        always["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            summaries(job_spec(&always, "spec")),
            [
                "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
            ]
        );
        assert_eq!(
            summaries(job_spec(&job(json!({"completionMode": "Indexed"})), "spec")),
            ["spec.completions: Required value: when completion mode is Indexed"]
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
        assert!(cron_job_spec(&spec("*/5 * * * *")).is_empty());
        assert_eq!(
            summaries(cron_job_spec(&spec("not a schedule"))),
            [
                "spec.schedule: Invalid value: \"not a schedule\": expected exactly 5 fields, found 3: [not a schedule]"
            ]
        );
        assert_eq!(
            summaries(cron_job_spec(&spec("TZ=UTC 0 * * * *"))),
            [
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
            ]
        );
        let mut zoned = spec("0 * * * *");
        zoned["timeZone"] = json!("Mars/Olympus");
        assert_eq!(
            summaries(cron_job_spec(&zoned)),
            ["spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"]
        );
    }
}
