//! The roles of kube-controller-manager's controllers (upstream's `controller_policy.go`):
//! one ClusterRole `system:controller:<name>` per controller, each bound by a ClusterRoleBinding
//! of the same name to the service account `kube-system/<name>` (upstream's
//! `addControllerRole`). Rules and their order are those of upstream's testdata for a default
//! server (see [`super`] for the source).

use serde_json::Value;

use super::policy::{Binding, EVENTS, READ, Role, Subject, cluster_role, named, rule};

/// The prefix of every controller role (upstream's `saRolePrefix`).
pub const PREFIX: &str = "system:controller:";

/// The core group.
const CORE: &[&str] = &[""];
/// `update`.
const UPDATE: &[&str] = &["update"];
/// `list`, `watch`.
const LIST_WATCH: &[&str] = &["list", "watch"];
/// `patch`, `update`.
const PATCH_UPDATE: &[&str] = &["patch", "update"];
/// `get`, `list`, `update`, `watch`.
const READ_UPDATE: &[&str] = &["get", "list", "update", "watch"];
/// Everything but `deletecollection`.
const ALL_BUT_COLLECTION: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
/// What the workload controllers do to the pods they own.
const OWN_PODS: &[&str] = &["create", "delete", "list", "patch", "watch"];
/// Managing objects one by one: everything but `patch` and `deletecollection`.
const MANAGE: &[&str] = &["create", "delete", "get", "list", "update", "watch"];
/// `apps` and `extensions`.
const APPS: &[&str] = &["apps", "extensions"];

/// Upstream's controller roles of a default server, in the order of its testdata (by name).
pub static CONTROLLER_ROLES: &[Role] = &[
    cluster_role(
        "system:controller:attachdetach-controller",
        &[
            rule(
                CORE,
                &["persistentvolumeclaims", "persistentvolumes"],
                LIST_WATCH,
            ),
            rule(CORE, &["nodes"], READ),
            rule(CORE, &["nodes/status"], PATCH_UPDATE),
            rule(CORE, &["pods"], LIST_WATCH),
            EVENTS,
            rule(
                &["storage.k8s.io"],
                &["volumeattachments"],
                &["create", "delete", "get", "list", "watch"],
            ),
            rule(&["storage.k8s.io"], &["csidrivers"], READ),
            rule(&["storage.k8s.io"], &["csinodes"], READ),
        ],
    ),
    cluster_role(
        "system:controller:certificate-controller",
        &[
            rule(
                &["certificates.k8s.io"],
                &["certificatesigningrequests"],
                &["delete", "get", "list", "watch"],
            ),
            rule(
                &["certificates.k8s.io"],
                &[
                    "certificatesigningrequests/approval",
                    "certificatesigningrequests/status",
                ],
                UPDATE,
            ),
            named(
                &["certificates.k8s.io"],
                &["signers"],
                &["kubernetes.io/kube-apiserver-client-kubelet"],
                &["approve"],
            ),
            named(
                &["certificates.k8s.io"],
                &["signers"],
                &[
                    "kubernetes.io/kube-apiserver-client",
                    "kubernetes.io/kube-apiserver-client-kubelet",
                    "kubernetes.io/kubelet-serving",
                    "kubernetes.io/legacy-unknown",
                ],
                &["sign"],
            ),
            rule(
                &["authorization.k8s.io"],
                &["subjectaccessreviews"],
                &["create"],
            ),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:clusterrole-aggregation-controller",
        &[rule(
            &["rbac.authorization.k8s.io"],
            &["clusterroles"],
            &["escalate", "get", "list", "patch", "update", "watch"],
        )],
    ),
    cluster_role(
        "system:controller:cronjob-controller",
        &[
            rule(&["batch"], &["cronjobs"], READ_UPDATE),
            rule(&["batch"], &["jobs"], ALL_BUT_COLLECTION),
            rule(&["batch"], &["cronjobs/status"], UPDATE),
            rule(&["batch"], &["cronjobs/finalizers"], UPDATE),
            rule(CORE, &["pods"], &["delete", "list", "watch"]),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:daemon-set-controller",
        &[
            rule(APPS, &["daemonsets"], READ),
            rule(APPS, &["daemonsets/status"], UPDATE),
            rule(APPS, &["daemonsets/finalizers"], UPDATE),
            rule(CORE, &["nodes"], LIST_WATCH),
            rule(CORE, &["pods"], OWN_PODS),
            rule(CORE, &["pods/binding"], &["create"]),
            rule(&["apps"], &["controllerrevisions"], ALL_BUT_COLLECTION),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:deployment-controller",
        &[
            rule(APPS, &["deployments"], READ_UPDATE),
            rule(APPS, &["deployments/status"], UPDATE),
            rule(APPS, &["deployments/finalizers"], UPDATE),
            rule(APPS, &["replicasets"], ALL_BUT_COLLECTION),
            rule(CORE, &["pods"], READ_UPDATE),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:device-taint-eviction-controller",
        &[
            rule(CORE, &["pods"], &["delete", "get", "list", "watch"]),
            rule(CORE, &["pods/status"], PATCH_UPDATE),
            rule(&["resource.k8s.io"], &["resourceclaims"], READ),
            rule(&["resource.k8s.io"], &["resourceslices"], READ),
            rule(&["resource.k8s.io"], &["deviceclasses"], READ),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:disruption-controller",
        &[
            rule(APPS, &["deployments"], READ),
            rule(APPS, &["replicasets"], READ),
            rule(CORE, &["replicationcontrollers"], READ),
            rule(&["policy"], &["poddisruptionbudgets"], READ),
            rule(&["apps"], &["statefulsets"], READ),
            rule(&["policy"], &["poddisruptionbudgets/status"], UPDATE),
            rule(CORE, &["pods/status"], PATCH_UPDATE),
            rule(&["*"], &["*/scale"], &["get"]),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:endpoint-controller",
        &[
            rule(CORE, &["pods", "services"], READ),
            rule(CORE, &["endpoints"], MANAGE),
            rule(CORE, &["endpoints/restricted"], &["create"]),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:endpointslice-controller",
        &[
            rule(CORE, &["nodes", "pods", "services"], READ),
            rule(CORE, &["services/finalizers"], UPDATE),
            rule(&["discovery.k8s.io"], &["endpointslices"], MANAGE),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:endpointslicemirroring-controller",
        &[
            rule(CORE, &["endpoints", "services"], READ),
            rule(CORE, &["services/finalizers"], UPDATE),
            rule(CORE, &["endpoints/finalizers"], UPDATE),
            rule(&["discovery.k8s.io"], &["endpointslices"], MANAGE),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:ephemeral-volume-controller",
        &[
            rule(CORE, &["pods"], READ),
            rule(CORE, &["pods/finalizers"], UPDATE),
            rule(
                CORE,
                &["persistentvolumeclaims"],
                &["create", "get", "list", "watch"],
            ),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:expand-controller",
        &[
            rule(
                CORE,
                &["persistentvolumes"],
                &["get", "list", "patch", "update", "watch"],
            ),
            rule(CORE, &["persistentvolumeclaims/status"], PATCH_UPDATE),
            rule(CORE, &["persistentvolumeclaims"], READ),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:generic-garbage-collector",
        &[
            rule(
                &["*"],
                &["*"],
                &["delete", "get", "list", "patch", "update", "watch"],
            ),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:horizontal-pod-autoscaler",
        &[
            rule(&["autoscaling"], &["horizontalpodautoscalers"], READ),
            rule(
                &["autoscaling"],
                &["horizontalpodautoscalers/status"],
                UPDATE,
            ),
            rule(&["*"], &["*/scale"], &["get", "update"]),
            rule(CORE, &["pods"], LIST_WATCH),
            rule(&["metrics.k8s.io"], &["pods"], LIST_WATCH),
            rule(&["custom.metrics.k8s.io"], &["*"], READ),
            rule(&["external.metrics.k8s.io"], &["*"], READ),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:job-controller",
        &[
            rule(
                &["batch"],
                &["jobs"],
                &["get", "list", "patch", "update", "watch"],
            ),
            rule(&["batch"], &["jobs/status"], UPDATE),
            rule(&["batch"], &["jobs/finalizers"], UPDATE),
            rule(CORE, &["pods"], OWN_PODS),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:legacy-service-account-token-cleaner",
        &[
            named(
                CORE,
                &["configmaps"],
                &["kube-apiserver-legacy-service-account-token-tracking"],
                &["get"],
            ),
            rule(CORE, &["secrets"], &["delete", "patch"]),
        ],
    ),
    cluster_role(
        "system:controller:namespace-controller",
        &[
            rule(CORE, &["namespaces"], &["delete", "get", "list", "watch"]),
            rule(CORE, &["namespaces/finalize", "namespaces/status"], UPDATE),
            rule(
                &["*"],
                &["*"],
                &["delete", "deletecollection", "get", "list", "watch"],
            ),
        ],
    ),
    cluster_role(
        "system:controller:node-controller",
        &[
            rule(
                CORE,
                &["nodes"],
                &["delete", "get", "list", "patch", "update", "watch"],
            ),
            rule(CORE, &["nodes/status"], PATCH_UPDATE),
            rule(CORE, &["pods/status"], PATCH_UPDATE),
            rule(CORE, &["pods"], &["delete", "get", "list", "watch"]),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:persistent-volume-binder",
        &[
            rule(CORE, &["persistentvolumes"], MANAGE),
            rule(CORE, &["persistentvolumes/status"], UPDATE),
            rule(CORE, &["persistentvolumeclaims"], READ_UPDATE),
            rule(CORE, &["persistentvolumeclaims/status"], UPDATE),
            rule(
                CORE,
                &["pods"],
                &["create", "delete", "get", "list", "watch"],
            ),
            rule(&["storage.k8s.io"], &["storageclasses"], READ),
            rule(CORE, &["nodes"], LIST_WATCH),
            EVENTS,
            rule(CORE, &["events"], &["watch"]),
        ],
    ),
    cluster_role(
        "system:controller:pod-garbage-collector",
        &[
            rule(CORE, &["pods"], &["delete", "list", "watch"]),
            rule(CORE, &["nodes"], READ),
            rule(CORE, &["pods/status"], &["patch"]),
        ],
    ),
    cluster_role(
        "system:controller:pv-protection-controller",
        &[rule(CORE, &["persistentvolumes"], READ_UPDATE), EVENTS],
    ),
    cluster_role(
        "system:controller:pvc-protection-controller",
        &[
            rule(CORE, &["persistentvolumeclaims"], READ_UPDATE),
            rule(CORE, &["persistentvolumeclaims/status"], UPDATE),
            rule(CORE, &["pods"], READ),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:replicaset-controller",
        &[
            rule(APPS, &["replicasets"], READ_UPDATE),
            rule(APPS, &["replicasets/status"], UPDATE),
            rule(APPS, &["replicasets/finalizers"], UPDATE),
            rule(CORE, &["pods"], OWN_PODS),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:replication-controller",
        &[
            rule(CORE, &["replicationcontrollers"], READ_UPDATE),
            rule(CORE, &["replicationcontrollers/status"], UPDATE),
            rule(CORE, &["replicationcontrollers/finalizers"], UPDATE),
            rule(CORE, &["pods"], OWN_PODS),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:resource-claim-controller",
        &[
            rule(CORE, &["pods"], READ),
            rule(CORE, &["pods/finalizers"], UPDATE),
            rule(
                &["resource.k8s.io"],
                &["resourceclaims"],
                &["create", "delete", "get", "list", "watch"],
            ),
            rule(
                &["resource.k8s.io"],
                &["resourceclaims", "resourceclaims/status"],
                PATCH_UPDATE,
            ),
            rule(CORE, &["pods/status"], PATCH_UPDATE),
            EVENTS,
            rule(
                &["resource.k8s.io"],
                &["resourceclaims/binding"],
                PATCH_UPDATE,
            ),
        ],
    ),
    cluster_role(
        "system:controller:resourcequota-controller",
        &[
            rule(&["*"], &["*"], LIST_WATCH),
            rule(CORE, &["resourcequotas/status"], UPDATE),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:root-ca-cert-publisher",
        &[rule(CORE, &["configmaps"], &["create", "update"]), EVENTS],
    ),
    cluster_role(
        "system:controller:route-controller",
        &[
            rule(CORE, &["nodes"], LIST_WATCH),
            rule(CORE, &["nodes/status"], &["patch"]),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:selinux-warning-controller",
        &[
            EVENTS,
            rule(CORE, &["persistentvolumes"], READ),
            rule(CORE, &["persistentvolumeclaims"], READ),
            rule(CORE, &["pods"], READ),
            rule(&["storage.k8s.io"], &["csidrivers"], READ),
        ],
    ),
    cluster_role(
        "system:controller:service-account-controller",
        &[rule(CORE, &["serviceaccounts"], &["create"]), EVENTS],
    ),
    cluster_role(
        "system:controller:service-cidrs-controller",
        &[
            rule(
                &["networking.k8s.io"],
                &["servicecidrs"],
                &["get", "list", "patch", "update", "watch"],
            ),
            rule(
                &["networking.k8s.io"],
                &["servicecidrs/finalizers"],
                PATCH_UPDATE,
            ),
            rule(
                &["networking.k8s.io"],
                &["servicecidrs/status"],
                PATCH_UPDATE,
            ),
            rule(&["networking.k8s.io"], &["ipaddresses"], READ),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:service-controller",
        &[
            rule(CORE, &["services"], READ),
            rule(CORE, &["services/status"], PATCH_UPDATE),
            rule(CORE, &["nodes"], LIST_WATCH),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:statefulset-controller",
        &[
            rule(CORE, &["pods"], LIST_WATCH),
            rule(&["apps"], &["statefulsets"], READ),
            rule(&["apps"], &["statefulsets/status"], UPDATE),
            rule(&["apps"], &["statefulsets/finalizers"], UPDATE),
            rule(
                CORE,
                &["pods"],
                &["create", "delete", "get", "patch", "update"],
            ),
            rule(&["apps"], &["controllerrevisions"], ALL_BUT_COLLECTION),
            rule(
                CORE,
                &["persistentvolumeclaims"],
                &["create", "get", "list", "watch"],
            ),
            rule(CORE, &["persistentvolumeclaims"], &["delete", "update"]),
            rule(CORE, &["pods/finalizers"], UPDATE),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:ttl-after-finished-controller",
        &[
            rule(&["batch"], &["jobs"], &["delete", "get", "list", "watch"]),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:ttl-controller",
        &[
            rule(CORE, &["nodes"], &["list", "patch", "update", "watch"]),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:validatingadmissionpolicy-status-controller",
        &[
            rule(
                &["admissionregistration.k8s.io"],
                &["validatingadmissionpolicies"],
                READ,
            ),
            rule(
                &["admissionregistration.k8s.io"],
                &["validatingadmissionpolicies/status"],
                &["get", "patch", "update"],
            ),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:controller:volumeattributesclass-protection-controller",
        &[
            rule(CORE, &["persistentvolumeclaims"], READ),
            rule(CORE, &["persistentvolumes"], READ),
            rule(
                &["storage.k8s.io"],
                &["volumeattributesclasses"],
                READ_UPDATE,
            ),
            EVENTS,
        ],
    ),
];

/// The service account a controller role is bound to: `kube-system/<name>` for
/// `system:controller:<name>` (upstream's `addControllerRole`).
pub fn service_account(role: &'static str) -> Option<Subject> {
    role.strip_prefix(PREFIX)
        .map(|name| Subject::ServiceAccount("kube-system", name))
}

/// The ClusterRoleBinding of a controller role to its service account.
pub fn binding(role: &Role) -> Option<Value> {
    let subjects = [service_account(role.name)?];
    Some(
        Binding {
            name: role.name,
            namespace: None,
            role: role.name,
            subjects: &subjects,
        }
        .to_json(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_is_bound_to_its_controller_service_account() {
        for role in CONTROLLER_ROLES {
            let binding = binding(role).expect("controller role");
            assert_eq!(binding["metadata"]["name"], role.name);
            assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
            assert_eq!(binding["roleRef"]["name"], role.name);
            let account = role.name.strip_prefix(PREFIX).expect("prefix");
            assert_eq!(
                binding["subjects"],
                serde_json::json!([{"kind": "ServiceAccount", "name": account, "namespace": "kube-system"}])
            );
        }
        assert_eq!(service_account("system:node"), None);
    }

    #[test]
    fn roles_are_named_and_sorted_as_upstream_lists_them() {
        let names: Vec<&str> = CONTROLLER_ROLES.iter().map(|r| r.name).collect();
        assert!(names.is_sorted(), "{names:?}");
        for role in CONTROLLER_ROLES {
            assert!(role.name.starts_with(PREFIX), "{}", role.name);
            assert!(!role.rules.is_empty(), "{}", role.name);
            for rule in role.rules {
                for list in [rule.verbs, rule.groups, rule.resources, rule.names] {
                    assert!(list.is_sorted(), "{}: {list:?}", role.name);
                }
            }
        }
    }
}
