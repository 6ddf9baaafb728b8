//! The core group (`v1`).

mod namespace;
mod pod;
mod print;
mod service;

use k8s_openapi::api::core::v1 as api;

use super::KindDef;
use super::strategy::{Defaulted, Plain};
use crate::registry::NameRule;

/// The core kinds, in upstream's discovery order of registration.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "",
            "v1",
            "namespaces",
            "Namespace",
            namespace::NamespaceStrategy,
        )
        .schema::<api::Namespace>()
        .cluster_scoped()
        .short(&["ns"])
        .status()
        .names(NameRule::Label)
        .fields(&["status.phase"])
        .printer(print::NAMESPACES)
        .without_delete_collection(),
        KindDef::new("", "v1", "configmaps", "ConfigMap", Plain)
            .schema::<api::ConfigMap>()
            .short(&["cm"])
            .printer(print::CONFIGMAPS),
        KindDef::new("", "v1", "secrets", "Secret", Defaulted::new("", "Secret"))
            .schema::<api::Secret>()
            .fields(&["type"])
            .printer(print::SECRETS),
        KindDef::new(
            "",
            "v1",
            "services",
            "Service",
            service::ServiceStrategy::new(),
        )
        .schema::<api::Service>()
        .short(&["svc"])
        .printer(print::SERVICES)
        .in_all()
        .status()
        .names(NameRule::Label),
        KindDef::new(
            "",
            "v1",
            "endpoints",
            "Endpoints",
            Defaulted::new("", "Endpoints"),
        )
        .schema::<api::Endpoints>()
        .short(&["ep"])
        .printer(print::ENDPOINTS),
        KindDef::new("", "v1", "nodes", "Node", Plain)
            .schema::<api::Node>()
            .cluster_scoped()
            .short(&["no"])
            .printer(print::NODES)
            .status()
            .fields(&["spec.unschedulable"]),
        KindDef::new("", "v1", "serviceaccounts", "ServiceAccount", Plain)
            .schema::<api::ServiceAccount>()
            .short(&["sa"])
            .printer(print::AGE_ONLY),
        KindDef::new("", "v1", "pods", "Pod", pod::PodStrategy)
            .schema::<api::Pod>()
            .short(&["po"])
            .printer(print::PODS)
            .in_all()
            .status()
            .fields(&[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ]),
        KindDef::new("", "v1", "events", "Event", Plain)
            .schema::<api::Event>()
            .short(&["ev"])
            .printer(print::EVENTS)
            .fields(&[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ]),
    ]
}
