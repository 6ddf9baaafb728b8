//! The built-in resources, as a real kube-apiserver registers them.

use super::{NameRule, ResourceInfo, ScalePaths, standard_verbs};

struct Spec {
    group: &'static str,
    resource: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    all: bool,
    status: bool,
    scale: bool,
    generation: bool,
    name_rule: NameRule,
    fields: &'static [&'static str],
    /// Only `create` (access reviews, TokenReview): nothing is stored.
    create_only: bool,
}

const fn spec(group: &'static str, resource: &'static str, kind: &'static str) -> Spec {
    Spec {
        group,
        resource,
        kind,
        namespaced: true,
        short: &[],
        all: false,
        status: false,
        scale: false,
        generation: false,
        name_rule: NameRule::Subdomain,
        fields: &[],
        create_only: false,
    }
}

/// A create-only review kind (nothing stored; served by `crate::auth::reviews`).
const fn review(group: &'static str, resource: &'static str, kind: &'static str) -> Spec {
    Spec {
        namespaced: false,
        create_only: true,
        ..spec(group, resource, kind)
    }
}

fn table() -> Vec<Spec> {
    let workload_fields: &'static [&'static str] = &[];
    vec![
        Spec {
            namespaced: false,
            short: &["ns"],
            status: true,
            name_rule: NameRule::Label,
            fields: &["status.phase"],
            ..spec("", "namespaces", "Namespace")
        },
        Spec {
            short: &["cm"],
            ..spec("", "configmaps", "ConfigMap")
        },
        Spec {
            fields: &["type"],
            ..spec("", "secrets", "Secret")
        },
        Spec {
            short: &["svc"],
            all: true,
            status: true,
            name_rule: NameRule::Label,
            ..spec("", "services", "Service")
        },
        Spec {
            short: &["ep"],
            ..spec("", "endpoints", "Endpoints")
        },
        Spec {
            namespaced: false,
            short: &["no"],
            status: true,
            fields: &["spec.unschedulable"],
            ..spec("", "nodes", "Node")
        },
        Spec {
            short: &["sa"],
            ..spec("", "serviceaccounts", "ServiceAccount")
        },
        Spec {
            short: &["po"],
            all: true,
            status: true,
            fields: &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ],
            ..spec("", "pods", "Pod")
        },
        Spec {
            short: &["ev"],
            fields: &[
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
            ],
            ..spec("", "events", "Event")
        },
        Spec {
            short: &["ev"],
            ..spec("events.k8s.io", "events", "Event")
        },
        Spec {
            short: &["deploy"],
            all: true,
            status: true,
            scale: true,
            generation: true,
            fields: workload_fields,
            ..spec("apps", "deployments", "Deployment")
        },
        Spec {
            short: &["rs"],
            all: true,
            status: true,
            scale: true,
            generation: true,
            fields: &["status.replicas"],
            ..spec("apps", "replicasets", "ReplicaSet")
        },
        Spec {
            short: &["sts"],
            all: true,
            status: true,
            scale: true,
            generation: true,
            ..spec("apps", "statefulsets", "StatefulSet")
        },
        Spec {
            short: &["ds"],
            all: true,
            status: true,
            generation: true,
            ..spec("apps", "daemonsets", "DaemonSet")
        },
        Spec {
            all: true,
            status: true,
            generation: true,
            fields: &["status.successful"],
            ..spec("batch", "jobs", "Job")
        },
        Spec {
            short: &["cj"],
            all: true,
            status: true,
            generation: true,
            ..spec("batch", "cronjobs", "CronJob")
        },
        spec("coordination.k8s.io", "leases", "Lease"),
        Spec {
            namespaced: false,
            short: &["crd", "crds"],
            status: true,
            generation: true,
            ..spec(
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                "CustomResourceDefinition",
            )
        },
        Spec {
            name_rule: NameRule::PathSegment,
            ..spec("rbac.authorization.k8s.io", "roles", "Role")
        },
        Spec {
            namespaced: false,
            name_rule: NameRule::PathSegment,
            ..spec("rbac.authorization.k8s.io", "clusterroles", "ClusterRole")
        },
        Spec {
            name_rule: NameRule::PathSegment,
            ..spec("rbac.authorization.k8s.io", "rolebindings", "RoleBinding")
        },
        Spec {
            namespaced: false,
            name_rule: NameRule::PathSegment,
            ..spec(
                "rbac.authorization.k8s.io",
                "clusterrolebindings",
                "ClusterRoleBinding",
            )
        },
        review(
            "authentication.k8s.io",
            "selfsubjectreviews",
            "SelfSubjectReview",
        ),
        review("authentication.k8s.io", "tokenreviews", "TokenReview"),
        Spec {
            namespaced: true,
            ..review(
                "authorization.k8s.io",
                "localsubjectaccessreviews",
                "LocalSubjectAccessReview",
            )
        },
        review(
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
        ),
        review(
            "authorization.k8s.io",
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
        ),
        review(
            "authorization.k8s.io",
            "subjectaccessreviews",
            "SubjectAccessReview",
        ),
    ]
}

/// Every built-in resource, in discovery order of their groups.
pub(super) fn resources() -> Vec<ResourceInfo> {
    table()
        .into_iter()
        .map(|s| {
            let singular = s.kind.to_ascii_lowercase();
            let mut verbs = standard_verbs();
            if s.create_only {
                verbs = vec!["create".to_string()];
            }
            if s.resource == "namespaces" {
                verbs.retain(|v| v != "deletecollection");
            }
            ResourceInfo {
                group: s.group.to_string(),
                version: "v1".to_string(),
                resource: s.resource.to_string(),
                singular,
                kind: s.kind.to_string(),
                list_kind: format!("{}List", s.kind),
                namespaced: s.namespaced,
                short_names: s.short.iter().map(|x| x.to_string()).collect(),
                categories: if s.all {
                    vec!["all".to_string()]
                } else {
                    vec![]
                },
                verbs,
                status_subresource: s.status,
                scale: s.scale.then(|| ScalePaths {
                    spec_replicas: ".spec.replicas".to_string(),
                    status_replicas: ".status.replicas".to_string(),
                    label_selector: Some(".status.selector".to_string()),
                }),
                name_rule: s.name_rule,
                tracks_generation: s.generation,
                field_selectors: s.fields.iter().map(|x| x.to_string()).collect(),
                custom: None,
            }
        })
        .collect()
}
