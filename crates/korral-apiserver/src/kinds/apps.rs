//! `apps/v1`: Deployments, ReplicaSets, StatefulSets, DaemonSets.

use k8s_openapi::api::apps::v1 as api;

use super::KindDef;
use super::strategy::Defaulted;

/// The kinds of `apps/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            Defaulted::new("apps", "Deployment"),
        )
        .schema::<api::Deployment>()
        .short(&["deploy"])
        .in_all()
        .status()
        .scale()
        .generation(),
        KindDef::new(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            Defaulted::new("apps", "ReplicaSet"),
        )
        .schema::<api::ReplicaSet>()
        .short(&["rs"])
        .in_all()
        .status()
        .scale()
        .generation()
        .fields(&["status.replicas"]),
        KindDef::new(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            Defaulted::new("apps", "StatefulSet"),
        )
        .schema::<api::StatefulSet>()
        .short(&["sts"])
        .in_all()
        .status()
        .scale()
        .generation(),
        KindDef::new(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            Defaulted::new("apps", "DaemonSet"),
        )
        .schema::<api::DaemonSet>()
        .short(&["ds"])
        .in_all()
        .status()
        .generation(),
    ]
}
