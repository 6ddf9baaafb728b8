//! `batch/v1`: Jobs and CronJobs.

use k8s_openapi::api::batch::v1 as api;

use serde_json::{Value, json};

mod indexes;
mod policies;
mod status;
mod validation;

use super::KindDef;
use super::lists::{ListAt, ListRule};
use super::printer::{
    AGE, CONTAINERS, Column, IMAGES, Printer, age, containers, human_duration, int, or_none,
    selector_at, since, template_containers, text,
};
use crate::meta;
use validation::{CronJobStrategy, JobStrategy};

/// Job: conditions merge by `type` for patches only (`+listType=atomic`); exit codes and
/// uncounted pods are sets for applies only.
const JOB_LISTS: &[ListAt] = &[
    ListAt {
        path: "status.conditions",
        rule: ListRule::PatchMap { patch_key: "type" },
    },
    ListAt {
        path: "spec.podFailurePolicy.rules.onExitCodes.values",
        rule: ListRule::ApplySet,
    },
    ListAt {
        path: "status.uncountedTerminatedPods.succeeded",
        rule: ListRule::ApplySet,
    },
    ListAt {
        path: "status.uncountedTerminatedPods.failed",
        rule: ListRule::ApplySet,
    },
];

/// CronJob: its job template's exit codes, a set for applies.
const CRON_JOB_LISTS: &[ListAt] = &[ListAt {
    path: "spec.jobTemplate.spec.podFailurePolicy.rules.onExitCodes.values",
    rule: ListRule::ApplySet,
}];

/// The kinds of `batch/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new("batch", "v1", "jobs", "Job", JobStrategy)
            .schema::<api::Job>()
            .lists(JOB_LISTS)
            .pod_spec("spec.template.spec")
            .in_all()
            .status()
            .generation()
            .fields(&["status.successful"])
            .printer(JOBS),
        KindDef::new("batch", "v1", "cronjobs", "CronJob", CronJobStrategy)
            .schema::<api::CronJob>()
            .lists(CRON_JOB_LISTS)
            .pod_spec("spec.jobTemplate.spec.template.spec")
            .short(&["cj"])
            .printer(CRONJOBS)
            .in_all()
            .status()
            .generation(),
    ]
}

/// The wide `Selector` of Jobs and CronJobs.
const SELECTOR: Column = Column::wide(
    "Selector",
    "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
);

const JOBS: Printer = Printer {
    columns: &[
        Column::new("Status", "Status of the job."),
        Column::new(
            "Completions",
            "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
        ),
        Column::new("Duration", "Time required to complete the job."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |obj| {
        let [containers, images] = template_containers(obj);
        vec![
            json!(job_status(obj)),
            json!(completions(obj)),
            json!(duration(obj)),
            age(obj),
            containers,
            images,
            json!(selector_at(obj, "spec.selector")),
        ]
    },
};

/// Upstream's job status: the first true condition of Complete, Failed, then Terminating,
/// Suspended, FailureTarget, SuccessCriteriaMet, else Running.
fn job_status(obj: &Value) -> &'static str {
    let conditions = meta::path(obj, "status.conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let has = |t: &str| {
        conditions
            .iter()
            .any(|c| text(c, "type") == t && text(c, "status") == "True")
    };
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if meta::is_deleting(obj) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

/// `succeeded/completions`, `succeeded/1 of parallelism` for work queues.
fn completions(obj: &Value) -> String {
    let succeeded = int(obj, "status.succeeded");
    let completions = meta::path(obj, "spec.completions").and_then(Value::as_i64);
    let parallelism = meta::path(obj, "spec.parallelism").and_then(Value::as_i64);
    match (completions, parallelism) {
        (Some(c), _) => format!("{succeeded}/{c}"),
        (None, Some(p)) if p > 1 => format!("{succeeded}/1 of {p}"),
        _ => format!("{succeeded}/1"),
    }
}

/// From start to completion (or now), empty before the job started.
fn duration(obj: &Value) -> String {
    let parse = |path: &str| {
        meta::path(obj, path)
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    match (parse("status.startTime"), parse("status.completionTime")) {
        (None, _) => String::new(),
        (Some(_), None) => since(meta::path(obj, "status.startTime").and_then(Value::as_str)),
        (Some(start), Some(end)) => human_duration(end.as_second() - start.as_second()),
    }
}

const CRONJOBS: Printer = Printer {
    columns: &[
        Column::new(
            "Schedule",
            "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
        ),
        Column::new(
            "Timezone",
            "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
        ),
        Column::new(
            "Suspend",
            "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
        )
        .typed("boolean"),
        Column::new("Active", "A list of pointers to currently running jobs.").typed("integer"),
        Column::new(
            "Last Schedule",
            "Information when was the last time the job was successfully scheduled.",
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |obj| {
        let (names, images) = containers(obj, "spec.jobTemplate.spec.template.spec.containers");
        let suspend = match meta::path(obj, "spec.suspend").and_then(Value::as_bool) {
            Some(true) => "True",
            Some(false) => "False",
            None => "<unset>",
        };
        let last = match text(obj, "status.lastScheduleTime") {
            "" => "<none>".to_string(),
            t => since(Some(t)),
        };
        vec![
            json!(text(obj, "spec.schedule")),
            json!(or_none(text(obj, "spec.timeZone"))),
            json!(suspend),
            json!(
                meta::path(obj, "status.active")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len)
            ),
            json!(last),
            age(obj),
            json!(names),
            json!(images),
            json!(selector_at(obj, "spec.jobTemplate.spec.selector")),
        ]
    },
};
