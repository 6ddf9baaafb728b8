//! The ClusterRoles and ClusterRoleBindings of upstream's `ClusterRoles()` and
//! `ClusterRoleBindings()` (`bootstrappolicy/policy.go`) as a default kube-apiserver v1.36
//! serves them: the roles, rules and rule order of upstream's testdata, without the rules of
//! feature gates that are off by default (see [`super`] for the source and those gates).

use super::policy::{
    Binding, EVENT_VERBS, EVENTS, READ, READ_WRITE, Role, Subject, WRITE, cluster_binding,
    cluster_role, named, rule, urls,
};

/// Selects the parts of `admin`.
const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
/// Selects the parts of `edit`.
const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
/// Selects the parts of `view`.
const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// `create`.
const CREATE: &[&str] = &["create"];
/// `list`, `watch`.
const LIST_WATCH: &[&str] = &["list", "watch"];
/// `get`.
const GET: &[&str] = &["get"];
/// `patch`, `update`.
const PATCH_UPDATE: &[&str] = &["patch", "update"];
/// `get`, `list`, `patch`, `update`, `watch`.
const READ_UPDATE: &[&str] = &["get", "list", "patch", "update", "watch"];
/// `create`, `get`, `list`, `watch`.
const CREATE_READ: &[&str] = &["create", "get", "list", "watch"];
/// The signers group.
const CERTS: &[&str] = &["certificates.k8s.io"];
/// The core group.
const CORE: &[&str] = &[""];

/// Upstream's ClusterRoles, in the order of its testdata (by name).
pub static CLUSTER_ROLES: &[Role] = &[
    Role {
        name: "admin",
        namespace: None,
        labels: &[],
        aggregate: Some(TO_ADMIN),
        rules: &[],
    },
    cluster_role(
        "cluster-admin",
        &[rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
    ),
    Role {
        name: "edit",
        namespace: None,
        labels: &[(TO_ADMIN, "true")],
        aggregate: Some(TO_EDIT),
        rules: &[],
    },
    Role {
        name: "system:aggregate-to-admin",
        namespace: None,
        labels: &[(TO_ADMIN, "true")],
        aggregate: None,
        rules: &[
            rule(
                &["authorization.k8s.io"],
                &["localsubjectaccessreviews"],
                CREATE,
            ),
            rule(
                &["rbac.authorization.k8s.io"],
                &["rolebindings", "roles"],
                READ_WRITE,
            ),
        ],
    },
    Role {
        name: "system:aggregate-to-edit",
        namespace: None,
        labels: &[(TO_EDIT, "true")],
        aggregate: None,
        rules: &[
            rule(
                CORE,
                &[
                    "pods/attach",
                    "pods/exec",
                    "pods/portforward",
                    "pods/proxy",
                    "secrets",
                    "services/proxy",
                ],
                READ,
            ),
            rule(CORE, &["serviceaccounts"], &["impersonate"]),
            rule(
                CORE,
                &[
                    "pods",
                    "pods/attach",
                    "pods/exec",
                    "pods/portforward",
                    "pods/proxy",
                ],
                WRITE,
            ),
            rule(CORE, &["pods/eviction"], CREATE),
            rule(
                CORE,
                &[
                    "configmaps",
                    "events",
                    "persistentvolumeclaims",
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                    "secrets",
                    "serviceaccounts",
                    "services",
                    "services/proxy",
                ],
                WRITE,
            ),
            rule(CORE, &["serviceaccounts/token"], CREATE),
            rule(
                &["apps"],
                &[
                    "daemonsets",
                    "deployments",
                    "deployments/rollback",
                    "deployments/scale",
                    "replicasets",
                    "replicasets/scale",
                    "statefulsets",
                    "statefulsets/scale",
                ],
                WRITE,
            ),
            rule(&["autoscaling"], &["horizontalpodautoscalers"], WRITE),
            rule(&["batch"], &["cronjobs", "jobs"], WRITE),
            rule(
                &["extensions"],
                &[
                    "daemonsets",
                    "deployments",
                    "deployments/rollback",
                    "deployments/scale",
                    "ingresses",
                    "networkpolicies",
                    "replicasets",
                    "replicasets/scale",
                    "replicationcontrollers/scale",
                ],
                WRITE,
            ),
            rule(&["policy"], &["poddisruptionbudgets"], WRITE),
            rule(
                &["networking.k8s.io"],
                &["ingresses", "networkpolicies"],
                WRITE,
            ),
            rule(&["coordination.k8s.io"], &["leases"], READ_WRITE),
            rule(
                &["resource.k8s.io"],
                &["resourceclaims", "resourceclaimtemplates"],
                WRITE,
            ),
        ],
    },
    Role {
        name: "system:aggregate-to-view",
        namespace: None,
        labels: &[(TO_VIEW, "true")],
        aggregate: None,
        rules: &[
            rule(
                CORE,
                &[
                    "configmaps",
                    "endpoints",
                    "persistentvolumeclaims",
                    "persistentvolumeclaims/status",
                    "pods",
                    "replicationcontrollers",
                    "replicationcontrollers/scale",
                    "serviceaccounts",
                    "services",
                    "services/status",
                ],
                READ,
            ),
            rule(
                CORE,
                &[
                    "bindings",
                    "events",
                    "limitranges",
                    "namespaces/status",
                    "pods/log",
                    "pods/status",
                    "replicationcontrollers/status",
                    "resourcequotas",
                    "resourcequotas/status",
                ],
                READ,
            ),
            rule(CORE, &["namespaces"], READ),
            rule(&["discovery.k8s.io"], &["endpointslices"], READ),
            rule(
                &["apps"],
                &[
                    "controllerrevisions",
                    "daemonsets",
                    "daemonsets/status",
                    "deployments",
                    "deployments/scale",
                    "deployments/status",
                    "replicasets",
                    "replicasets/scale",
                    "replicasets/status",
                    "statefulsets",
                    "statefulsets/scale",
                    "statefulsets/status",
                ],
                READ,
            ),
            rule(
                &["autoscaling"],
                &[
                    "horizontalpodautoscalers",
                    "horizontalpodautoscalers/status",
                ],
                READ,
            ),
            rule(
                &["batch"],
                &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
                READ,
            ),
            rule(
                &["extensions"],
                &[
                    "daemonsets",
                    "daemonsets/status",
                    "deployments",
                    "deployments/scale",
                    "deployments/status",
                    "ingresses",
                    "ingresses/status",
                    "networkpolicies",
                    "replicasets",
                    "replicasets/scale",
                    "replicasets/status",
                    "replicationcontrollers/scale",
                ],
                READ,
            ),
            rule(
                &["policy"],
                &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                READ,
            ),
            rule(
                &["networking.k8s.io"],
                &["ingresses", "ingresses/status", "networkpolicies"],
                READ,
            ),
            rule(
                &["resource.k8s.io"],
                &[
                    "resourceclaims",
                    "resourceclaims/status",
                    "resourceclaimtemplates",
                ],
                READ,
            ),
        ],
    },
    cluster_role(
        "system:auth-delegator",
        &[
            rule(&["authentication.k8s.io"], &["tokenreviews"], CREATE),
            rule(&["authorization.k8s.io"], &["subjectaccessreviews"], CREATE),
        ],
    ),
    cluster_role(
        "system:basic-user",
        &[
            rule(
                &["authorization.k8s.io"],
                &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                CREATE,
            ),
            rule(&["authentication.k8s.io"], &["selfsubjectreviews"], CREATE),
        ],
    ),
    cluster_role(
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        &[rule(
            CERTS,
            &["certificatesigningrequests/nodeclient"],
            CREATE,
        )],
    ),
    cluster_role(
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        &[rule(
            CERTS,
            &["certificatesigningrequests/selfnodeclient"],
            CREATE,
        )],
    ),
    cluster_role(
        "system:certificates.k8s.io:kube-apiserver-client-approver",
        &[named(
            CERTS,
            &["signers"],
            &["kubernetes.io/kube-apiserver-client"],
            &["approve"],
        )],
    ),
    cluster_role(
        "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
        &[named(
            CERTS,
            &["signers"],
            &["kubernetes.io/kube-apiserver-client-kubelet"],
            &["approve"],
        )],
    ),
    cluster_role(
        "system:certificates.k8s.io:kubelet-serving-approver",
        &[named(
            CERTS,
            &["signers"],
            &["kubernetes.io/kubelet-serving"],
            &["approve"],
        )],
    ),
    cluster_role(
        "system:certificates.k8s.io:legacy-unknown-approver",
        &[named(
            CERTS,
            &["signers"],
            &["kubernetes.io/legacy-unknown"],
            &["approve"],
        )],
    ),
    cluster_role(
        "system:discovery",
        &[urls(
            &[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ],
            GET,
        )],
    ),
    cluster_role(
        "system:heapster",
        &[
            rule(CORE, &["events", "namespaces", "nodes", "pods"], READ),
            rule(&["extensions"], &["deployments"], READ),
        ],
    ),
    cluster_role(
        "system:kube-aggregator",
        &[rule(CORE, &["endpoints", "services"], READ)],
    ),
    cluster_role(
        "system:kube-controller-manager",
        &[
            EVENTS,
            rule(&["coordination.k8s.io"], &["leases"], CREATE),
            named(
                &["coordination.k8s.io"],
                &["leases"],
                &["kube-controller-manager"],
                &["get", "update"],
            ),
            rule(CORE, &["secrets", "serviceaccounts"], CREATE),
            rule(CORE, &["secrets"], &["delete"]),
            rule(
                CORE,
                &["configmaps", "namespaces", "secrets", "serviceaccounts"],
                GET,
            ),
            rule(CORE, &["secrets", "serviceaccounts"], &["update"]),
            rule(&["authentication.k8s.io"], &["tokenreviews"], CREATE),
            rule(&["authorization.k8s.io"], &["subjectaccessreviews"], CREATE),
            rule(&["*"], &["*"], LIST_WATCH),
            rule(CORE, &["serviceaccounts/token"], CREATE),
        ],
    ),
    cluster_role(
        "system:kube-dns",
        &[rule(CORE, &["endpoints", "services"], LIST_WATCH)],
    ),
    cluster_role(
        "system:kube-scheduler",
        &[
            EVENTS,
            rule(&["coordination.k8s.io"], &["leases"], CREATE),
            named(
                &["coordination.k8s.io"],
                &["leases"],
                &["kube-scheduler"],
                &["get", "list", "update", "watch"],
            ),
            rule(&["coordination.k8s.io"], &["leasecandidates"], READ_WRITE),
            rule(CORE, &["nodes"], READ),
            rule(CORE, &["pods"], &["delete", "get", "list", "watch"]),
            rule(CORE, &["bindings", "pods/binding"], CREATE),
            rule(CORE, &["pods/status"], PATCH_UPDATE),
            rule(CORE, &["replicationcontrollers", "services"], READ),
            rule(&["apps", "extensions"], &["replicasets"], READ),
            rule(&["apps"], &["statefulsets"], READ),
            rule(&["policy"], &["poddisruptionbudgets"], READ),
            rule(CORE, &["persistentvolumeclaims", "persistentvolumes"], READ),
            rule(&["authentication.k8s.io"], &["tokenreviews"], CREATE),
            rule(&["authorization.k8s.io"], &["subjectaccessreviews"], CREATE),
            rule(&["storage.k8s.io"], &["csinodes"], READ),
            rule(&["storage.k8s.io"], &["volumeattachments"], READ),
            rule(CORE, &["namespaces"], READ),
            rule(&["storage.k8s.io"], &["csidrivers"], READ),
            rule(&["storage.k8s.io"], &["csistoragecapacities"], READ),
            rule(&["resource.k8s.io"], &["deviceclasses"], READ),
            rule(&["resource.k8s.io"], &["resourceclaims"], READ_UPDATE),
            rule(
                &["resource.k8s.io"],
                &["resourceclaims/status"],
                READ_UPDATE,
            ),
            rule(CORE, &["pods/finalizers"], READ_UPDATE),
            rule(&["resource.k8s.io"], &["resourceslices"], READ),
        ],
    ),
    cluster_role(
        "system:kubelet-api-admin",
        &[
            rule(CORE, &["nodes"], READ),
            rule(CORE, &["nodes"], &["proxy"]),
            rule(
                CORE,
                &["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"],
                &["*"],
            ),
            rule(
                CORE,
                &["nodes/configz", "nodes/healthz", "nodes/pods"],
                &["*"],
            ),
        ],
    ),
    cluster_role(
        "system:monitoring",
        &[urls(
            &[
                "/healthz",
                "/healthz/*",
                "/livez",
                "/livez/*",
                "/metrics",
                "/metrics/slis",
                "/readyz",
                "/readyz/*",
            ],
            GET,
        )],
    ),
    cluster_role(
        "system:node",
        &[
            rule(&["authentication.k8s.io"], &["tokenreviews"], CREATE),
            rule(
                &["authorization.k8s.io"],
                &["localsubjectaccessreviews", "subjectaccessreviews"],
                CREATE,
            ),
            rule(CORE, &["services"], READ),
            rule(CORE, &["nodes"], CREATE_READ),
            rule(CORE, &["nodes/status"], PATCH_UPDATE),
            rule(CORE, &["nodes"], PATCH_UPDATE),
            rule(CORE, &["events"], EVENT_VERBS),
            rule(CORE, &["pods"], READ),
            rule(CORE, &["pods"], &["create", "delete"]),
            rule(CORE, &["pods/status"], PATCH_UPDATE),
            rule(CORE, &["pods/eviction"], CREATE),
            rule(CORE, &["configmaps", "secrets"], READ),
            rule(CORE, &["persistentvolumeclaims", "persistentvolumes"], GET),
            rule(CORE, &["endpoints"], GET),
            rule(CERTS, &["certificatesigningrequests"], CREATE_READ),
            rule(
                &["coordination.k8s.io"],
                &["leases"],
                &["create", "delete", "get", "patch", "update"],
            ),
            rule(&["storage.k8s.io"], &["volumeattachments"], GET),
            rule(CORE, &["serviceaccounts/token"], CREATE),
            rule(
                CORE,
                &["persistentvolumeclaims/status"],
                &["get", "patch", "update"],
            ),
            rule(&["storage.k8s.io"], &["csidrivers"], READ),
            rule(
                &["storage.k8s.io"],
                &["csinodes"],
                &["create", "delete", "get", "patch", "update"],
            ),
            rule(&["node.k8s.io"], &["runtimeclasses"], READ),
            rule(&["resource.k8s.io"], &["resourceclaims"], GET),
            rule(
                &["resource.k8s.io"],
                &["resourceslices"],
                &["deletecollection"],
            ),
            rule(CORE, &["serviceaccounts"], GET),
        ],
    ),
    cluster_role(
        "system:node-bootstrapper",
        &[rule(CERTS, &["certificatesigningrequests"], CREATE_READ)],
    ),
    cluster_role(
        "system:node-problem-detector",
        &[
            rule(CORE, &["nodes"], GET),
            rule(CORE, &["nodes/status"], &["patch"]),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:node-proxier",
        &[
            rule(CORE, &["endpoints", "services"], LIST_WATCH),
            rule(CORE, &["nodes"], READ),
            EVENTS,
            rule(&["networking.k8s.io"], &["servicecidrs"], LIST_WATCH),
            rule(&["discovery.k8s.io"], &["endpointslices"], LIST_WATCH),
        ],
    ),
    cluster_role(
        "system:persistent-volume-provisioner",
        &[
            rule(
                CORE,
                &["persistentvolumes"],
                &["create", "delete", "get", "list", "watch"],
            ),
            rule(
                CORE,
                &["persistentvolumeclaims"],
                &["get", "list", "update", "watch"],
            ),
            rule(&["storage.k8s.io"], &["storageclasses"], READ),
            rule(CORE, &["events"], &["watch"]),
            EVENTS,
        ],
    ),
    cluster_role(
        "system:public-info-viewer",
        &[urls(
            &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            GET,
        )],
    ),
    cluster_role(
        "system:service-account-issuer-discovery",
        &[urls(
            &[
                "/.well-known/openid-configuration",
                "/.well-known/openid-configuration/",
                "/openid/v1/jwks",
                "/openid/v1/jwks/",
            ],
            GET,
        )],
    ),
    cluster_role(
        "system:volume-scheduler",
        &[
            rule(CORE, &["persistentvolumes"], READ_UPDATE),
            rule(&["storage.k8s.io"], &["storageclasses"], READ),
            rule(CORE, &["persistentvolumeclaims"], READ_UPDATE),
        ],
    ),
    Role {
        name: "view",
        namespace: None,
        labels: &[(TO_EDIT, "true")],
        aggregate: Some(TO_VIEW),
        rules: &[],
    },
];

/// Upstream's ClusterRoleBindings, in the order of its testdata (by name).
pub static CLUSTER_ROLE_BINDINGS: &[Binding] = &[
    cluster_binding(
        "cluster-admin",
        "cluster-admin",
        &[Subject::Group("system:masters")],
    ),
    cluster_binding(
        "system:basic-user",
        "system:basic-user",
        &[Subject::Group("system:authenticated")],
    ),
    cluster_binding(
        "system:discovery",
        "system:discovery",
        &[Subject::Group("system:authenticated")],
    ),
    cluster_binding(
        "system:kube-controller-manager",
        "system:kube-controller-manager",
        &[Subject::User("system:kube-controller-manager")],
    ),
    cluster_binding(
        "system:kube-dns",
        "system:kube-dns",
        &[Subject::ServiceAccount("kube-system", "kube-dns")],
    ),
    cluster_binding(
        "system:kube-scheduler",
        "system:kube-scheduler",
        &[Subject::User("system:kube-scheduler")],
    ),
    cluster_binding(
        "system:monitoring",
        "system:monitoring",
        &[Subject::Group("system:monitoring")],
    ),
    // Bound to nobody since the Node authorizer (upstream keeps it for reconciliation).
    cluster_binding("system:node", "system:node", &[]),
    cluster_binding(
        "system:node-proxier",
        "system:node-proxier",
        &[Subject::User("system:kube-proxy")],
    ),
    cluster_binding(
        "system:public-info-viewer",
        "system:public-info-viewer",
        &[
            Subject::Group("system:authenticated"),
            Subject::Group("system:unauthenticated"),
        ],
    ),
    cluster_binding(
        "system:service-account-issuer-discovery",
        "system:service-account-issuer-discovery",
        &[Subject::Group("system:serviceaccounts")],
    ),
    cluster_binding(
        "system:volume-scheduler",
        "system:volume-scheduler",
        &[Subject::User("system:kube-scheduler")],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregated_roles_and_their_parts_are_labelled_as_upstream() {
        let find = |name: &str| {
            CLUSTER_ROLES
                .iter()
                .find(|r| r.name == name)
                .expect("bootstrap role")
        };
        assert_eq!(find("admin").aggregate, Some(TO_ADMIN));
        assert_eq!(find("edit").aggregate, Some(TO_EDIT));
        assert_eq!(find("view").aggregate, Some(TO_VIEW));
        assert_eq!(find("edit").labels, &[(TO_ADMIN, "true")]);
        assert_eq!(find("view").labels, &[(TO_EDIT, "true")]);
        for (part, label) in [
            ("system:aggregate-to-admin", TO_ADMIN),
            ("system:aggregate-to-edit", TO_EDIT),
            ("system:aggregate-to-view", TO_VIEW),
        ] {
            assert_eq!(find(part).labels, &[(label, "true")]);
            assert!(!find(part).rules.is_empty());
        }
        // Only the aggregated roles are empty.
        for role in CLUSTER_ROLES {
            assert_eq!(
                role.rules.is_empty(),
                role.aggregate.is_some(),
                "{}",
                role.name
            );
        }
    }

    #[test]
    fn verbs_and_lists_are_sorted_as_upstream_builds_them() {
        for role in CLUSTER_ROLES {
            for rule in role.rules {
                for list in [
                    rule.verbs,
                    rule.groups,
                    rule.resources,
                    rule.names,
                    rule.urls,
                ] {
                    assert!(list.is_sorted(), "{}: {list:?}", role.name);
                }
            }
        }
    }
}
