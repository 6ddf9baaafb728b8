//! `batch/v1`: Jobs and CronJobs.

use k8s_openapi::api::batch::v1 as api;

use super::KindDef;
use super::strategy::Defaulted;

/// The kinds of `batch/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new("batch", "v1", "jobs", "Job", Defaulted::new("batch", "Job"))
            .schema::<api::Job>()
            .in_all()
            .status()
            .generation()
            .fields(&["status.successful"]),
        KindDef::new(
            "batch",
            "v1",
            "cronjobs",
            "CronJob",
            Defaulted::new("batch", "CronJob"),
        )
        .schema::<api::CronJob>()
        .short(&["cj"])
        .in_all()
        .status()
        .generation(),
    ]
}
