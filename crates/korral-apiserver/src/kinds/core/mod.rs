//! The core group (`v1`).

mod component_status;
mod config_data;
mod configmap;
mod endpoints;
pub(crate) mod go_diff;
mod go_json;
pub(crate) mod master_endpoints;
mod namespace;
mod node;
mod pod;
pub(crate) mod pod_log;
pub(crate) mod print;
mod quota;
mod replication;
mod secret;
mod service;
mod service_families;
mod service_nodeports;
mod service_validation;
#[cfg(test)]
mod test_support;
mod volumes;

use k8s_openapi::api::core::v1 as api;

use super::KindDef;
use super::events::{self, EventStrategy};
use super::lists::{CONDITIONS, DirectiveAt, ListAt, ListRule, PatchDirective, RESOURCE_CLAIMS};
use super::strategy::Plain;
use crate::registry::NameRule;

/// Node: `spec.podCIDRs` is a set, `status.addresses` keyed by `type`.
const NODE_LISTS: &[ListAt] = &[
    ListAt {
        path: "spec.podCIDRs",
        rule: ListRule::Set,
    },
    ListAt {
        path: "status.addresses",
        rule: ListRule::keyed(&["type"]),
    },
];

/// Pod status: addresses keyed by `ip` (`hostIPs` for patches only), resource claim statuses
/// by `name`; each container status's mounts by `mountPath`, claims and allocated resources
/// by `name`, the resources of those by `resourceID` (applies only).
/// `PodStatus.resourceClaimStatuses` is `+patchStrategy=merge,retainKeys`.
const POD_DIRECTIVES: &[DirectiveAt] = &[DirectiveAt {
    path: "status.resourceClaimStatuses",
    directive: PatchDirective::RetainKeys,
}];

const POD_LISTS: &[ListAt] = &[
    ListAt {
        path: "status.podIPs",
        rule: ListRule::keyed(&["ip"]),
    },
    ListAt {
        path: "status.hostIPs",
        rule: ListRule::PatchMap { patch_key: "ip" },
    },
    ListAt {
        path: "status.resourceClaimStatuses",
        rule: ListRule::keyed(&["name"]),
    },
    ListAt {
        path: "status.resources.claims",
        rule: RESOURCE_CLAIMS,
    },
    ListAt {
        path: "status.nodeAllocatableResourceClaimStatuses.containers",
        rule: ListRule::ApplySet,
    },
    ListAt {
        path: "status.containerStatuses.volumeMounts",
        rule: ListRule::keyed(&["mountPath"]),
    },
    ListAt {
        path: "status.containerStatuses.resources.claims",
        rule: RESOURCE_CLAIMS,
    },
    ListAt {
        path: "status.containerStatuses.allocatedResourcesStatus",
        rule: ListRule::keyed(&["name"]),
    },
    ListAt {
        path: "status.containerStatuses.allocatedResourcesStatus.resources",
        rule: ListRule::ApplyMap {
            keys: &["resourceID"],
        },
    },
    ListAt {
        path: "status.initContainerStatuses.volumeMounts",
        rule: ListRule::keyed(&["mountPath"]),
    },
    ListAt {
        path: "status.initContainerStatuses.resources.claims",
        rule: RESOURCE_CLAIMS,
    },
    ListAt {
        path: "status.initContainerStatuses.allocatedResourcesStatus",
        rule: ListRule::keyed(&["name"]),
    },
    ListAt {
        path: "status.initContainerStatuses.allocatedResourcesStatus.resources",
        rule: ListRule::ApplyMap {
            keys: &["resourceID"],
        },
    },
    ListAt {
        path: "status.ephemeralContainerStatuses.volumeMounts",
        rule: ListRule::keyed(&["mountPath"]),
    },
    ListAt {
        path: "status.ephemeralContainerStatuses.resources.claims",
        rule: RESOURCE_CLAIMS,
    },
    ListAt {
        path: "status.ephemeralContainerStatuses.allocatedResourcesStatus",
        rule: ListRule::keyed(&["name"]),
    },
    ListAt {
        path: "status.ephemeralContainerStatuses.allocatedResourcesStatus.resources",
        rule: ListRule::ApplyMap {
            keys: &["resourceID"],
        },
    },
];

/// ComponentStatus `conditions` (at the root, not under `status`), keyed by `type`.
const COMPONENT_STATUS_LISTS: &[ListAt] = &[ListAt {
    path: "conditions",
    rule: CONDITIONS,
}];

/// ServiceAccount `secrets`, keyed by `name`.
const SERVICE_ACCOUNT_LISTS: &[ListAt] = &[ListAt {
    path: "secrets",
    rule: ListRule::keyed(&["name"]),
}];

/// Service `spec.ports`: patches merge by `port`, applies by `port` and `protocol`.
const SERVICE_LISTS: &[ListAt] = &[ListAt {
    path: "spec.ports",
    rule: ListRule::Map {
        patch_key: "port",
        keys: &["port", "protocol"],
    },
}];

/// The verbs of the `proxy` connect subresources (upstream's `ProxyREST`).
const PROXY_VERBS: &[&str] = &["create", "delete", "get", "patch", "update"];

/// The core kinds, in upstream's discovery order (by resource name).
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "",
            "v1",
            "configmaps",
            "ConfigMap",
            configmap::ConfigMapStrategy,
        )
        .schema::<api::ConfigMap>()
        .short(&["cm"])
        .printer(print::CONFIGMAPS),
        KindDef::new(
            "",
            "v1",
            "endpoints",
            "Endpoints",
            endpoints::EndpointsStrategy,
        )
        .schema::<api::Endpoints>()
        .short(&["ep"])
        .deprecated("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
        .printer(print::ENDPOINTS),
        KindDef::new(
            "",
            "v1",
            "componentstatuses",
            "ComponentStatus",
            component_status::ComponentStatuses,
        )
        .schema::<api::ComponentStatus>()
        .lists(COMPONENT_STATUS_LISTS)
        .cluster_scoped()
        .short(&["cs"])
        .read_only()
        .deprecated(component_status::DEPRECATION)
        .printer(component_status::COMPONENT_STATUSES),
        KindDef::new("", "v1", "events", "Event", EventStrategy::CORE)
            .schema::<api::Event>()
            .names(NameRule::PathSegment)
            .short(&["ev"])
            .printer(print::EVENTS)
            .fields(events::CORE_FIELDS),
        KindDef::new(
            "",
            "v1",
            "limitranges",
            "LimitRange",
            quota::LimitRangeStrategy,
        )
        .schema::<api::LimitRange>()
        .short(&["limits"]),
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
        // Upstream's top-level `bindings`: a POST binds the pod the Binding names, as
        // `pods/<name>/binding` does (see `kinds::actions::for_collection`); nothing is stored.
        KindDef::new("", "v1", "bindings", "Binding", super::strategy::Plain)
            .schema::<api::Binding>()
            .create_only(),
        KindDef::new("", "v1", "nodes", "Node", node::NodeStrategy)
            .schema::<api::Node>()
            .lists(NODE_LISTS)
            .cluster_scoped()
            .short(&["no"])
            .printer(print::NODES)
            .status()
            .connect("proxy", "NodeProxyOptions", PROXY_VERBS)
            .fields(&["spec.unschedulable"]),
        KindDef::new(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            volumes::PersistentVolumeClaimStrategy,
        )
        .schema::<api::PersistentVolumeClaim>()
        .short(&["pvc"])
        .status()
        .printer(print::PERSISTENT_VOLUME_CLAIMS),
        KindDef::new(
            "",
            "v1",
            "persistentvolumes",
            "PersistentVolume",
            volumes::PersistentVolumeStrategy,
        )
        .schema::<api::PersistentVolume>()
        .cluster_scoped()
        .short(&["pv"])
        .status()
        .printer(print::PERSISTENT_VOLUMES),
        KindDef::new("", "v1", "pods", "Pod", pod::PodStrategy)
            .returns_deleted_object()
            .pod_spec("spec")
            .generation()
            .lists(POD_LISTS)
            .patch_directives(POD_DIRECTIVES)
            .schema::<api::Pod>()
            .action("binding", "", "v1", "Binding")
            .action("eviction", "policy", "v1", "Eviction")
            .connect("attach", "PodAttachOptions", &["create", "get"])
            .connect("exec", "PodExecOptions", &["create", "get"])
            .connect("log", "Pod", &["get"])
            .connect("portforward", "PodPortForwardOptions", &["create", "get"])
            .connect("proxy", "PodProxyOptions", PROXY_VERBS)
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
        KindDef::new(
            "",
            "v1",
            "podtemplates",
            "PodTemplate",
            replication::PodTemplateStrategy,
        )
        .schema::<api::PodTemplate>()
        .pod_spec("template.spec")
        .printer(print::POD_TEMPLATES),
        KindDef::new(
            "",
            "v1",
            "replicationcontrollers",
            "ReplicationController",
            replication::ReplicationControllerStrategy,
        )
        .schema::<api::ReplicationController>()
        .pod_spec("spec.template.spec")
        .short(&["rc"])
        .in_all()
        .status()
        .scale()
        .generation()
        .fields(&["status.replicas"])
        .printer(print::REPLICATION_CONTROLLERS),
        KindDef::new(
            "",
            "v1",
            "resourcequotas",
            "ResourceQuota",
            quota::ResourceQuotaStrategy,
        )
        .schema::<api::ResourceQuota>()
        .short(&["quota"])
        .status()
        .printer(print::RESOURCE_QUOTAS),
        KindDef::new("", "v1", "secrets", "Secret", secret::SecretStrategy)
            .schema::<api::Secret>()
            .fields(&["type"])
            .printer(print::SECRETS),
        KindDef::new("", "v1", "serviceaccounts", "ServiceAccount", Plain)
            .returns_deleted_object()
            .lists(SERVICE_ACCOUNT_LISTS)
            .action("token", "authentication.k8s.io", "v1", "TokenRequest")
            .schema::<api::ServiceAccount>()
            .short(&["sa"])
            .printer(print::AGE_ONLY),
        KindDef::new(
            "",
            "v1",
            "services",
            "Service",
            service::ServiceStrategy::new(),
        )
        .returns_deleted_object()
        .schema::<api::Service>()
        .lists(SERVICE_LISTS)
        .short(&["svc"])
        .printer(print::SERVICES)
        .in_all()
        .status()
        .fields(&["spec.clusterIP", "spec.type"])
        .connect("proxy", "ServiceProxyOptions", PROXY_VERBS)
        .names(NameRule::Label),
    ]
}
