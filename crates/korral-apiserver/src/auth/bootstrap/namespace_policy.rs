//! The Roles and RoleBindings of upstream's `NamespaceRoles()` and `NamespaceRoleBindings()`
//! (`bootstrappolicy/namespace_policy.go`) in `kube-system` and `kube-public`, as upstream's
//! testdata lists them (see [`super`] for the source).

use super::policy::{
    Binding, EVENTS, READ, Role, Rule, Subject, named, namespaced_binding, namespaced_role, rule,
};

/// The namespace of the control plane's components.
const KUBE_SYSTEM: &str = "kube-system";
/// The namespace readable by everyone (holds `cluster-info`).
const KUBE_PUBLIC: &str = "kube-public";
/// The core group.
const CORE: &[&str] = &[""];
/// What leader election does to its leases and lease candidates.
const LEADER_ELECTION: &[&str] = &["create", "get", "list", "update", "watch"];
/// The rules of the leader-locking Roles: leases and lease candidates for leader election.
const LEADER_LOCKING: &[Rule] = &[
    rule(&["coordination.k8s.io"], &["leases"], LEADER_ELECTION),
    rule(
        &["coordination.k8s.io"],
        &["leasecandidates"],
        LEADER_ELECTION,
    ),
];

/// Upstream's namespaced bootstrap Roles, by namespace then name.
pub static ROLES: &[Role] = &[
    namespaced_role(
        KUBE_PUBLIC,
        "system:controller:bootstrap-signer",
        &[
            rule(CORE, &["configmaps"], READ),
            named(CORE, &["configmaps"], &["cluster-info"], &["update"]),
            EVENTS,
        ],
    ),
    namespaced_role(
        KUBE_SYSTEM,
        "extension-apiserver-authentication-reader",
        &[named(
            CORE,
            &["configmaps"],
            &["extension-apiserver-authentication"],
            READ,
        )],
    ),
    namespaced_role(
        KUBE_SYSTEM,
        "system::leader-locking-kube-controller-manager",
        LEADER_LOCKING,
    ),
    namespaced_role(
        KUBE_SYSTEM,
        "system::leader-locking-kube-scheduler",
        LEADER_LOCKING,
    ),
    namespaced_role(
        KUBE_SYSTEM,
        "system:controller:bootstrap-signer",
        &[rule(CORE, &["secrets"], READ)],
    ),
    namespaced_role(
        KUBE_SYSTEM,
        "system:controller:cloud-provider",
        &[rule(
            CORE,
            &["configmaps"],
            &["create", "get", "list", "watch"],
        )],
    ),
    namespaced_role(
        KUBE_SYSTEM,
        "system:controller:token-cleaner",
        &[
            rule(CORE, &["secrets"], &["delete", "get", "list", "watch"]),
            EVENTS,
        ],
    ),
];

/// Upstream's namespaced bootstrap RoleBindings, by namespace then name.
pub static ROLE_BINDINGS: &[Binding<'static>] = &[
    namespaced_binding(
        KUBE_PUBLIC,
        "system:controller:bootstrap-signer",
        "system:controller:bootstrap-signer",
        &[Subject::ServiceAccount(KUBE_SYSTEM, "bootstrap-signer")],
    ),
    namespaced_binding(
        KUBE_SYSTEM,
        "system::extension-apiserver-authentication-reader",
        "extension-apiserver-authentication-reader",
        &[
            Subject::User("system:kube-controller-manager"),
            Subject::User("system:kube-scheduler"),
        ],
    ),
    namespaced_binding(
        KUBE_SYSTEM,
        "system::leader-locking-kube-controller-manager",
        "system::leader-locking-kube-controller-manager",
        &[
            Subject::User("system:kube-controller-manager"),
            Subject::ServiceAccount(KUBE_SYSTEM, "kube-controller-manager"),
            Subject::ServiceAccount(KUBE_SYSTEM, "leader-election-controller"),
        ],
    ),
    namespaced_binding(
        KUBE_SYSTEM,
        "system::leader-locking-kube-scheduler",
        "system::leader-locking-kube-scheduler",
        &[
            Subject::User("system:kube-scheduler"),
            Subject::ServiceAccount(KUBE_SYSTEM, "kube-scheduler"),
        ],
    ),
    namespaced_binding(
        KUBE_SYSTEM,
        "system:controller:bootstrap-signer",
        "system:controller:bootstrap-signer",
        &[Subject::ServiceAccount(KUBE_SYSTEM, "bootstrap-signer")],
    ),
    namespaced_binding(
        KUBE_SYSTEM,
        "system:controller:cloud-provider",
        "system:controller:cloud-provider",
        &[Subject::ServiceAccount(KUBE_SYSTEM, "cloud-provider")],
    ),
    namespaced_binding(
        KUBE_SYSTEM,
        "system:controller:token-cleaner",
        "system:controller:token-cleaner",
        &[Subject::ServiceAccount(KUBE_SYSTEM, "token-cleaner")],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binding_names_a_role_of_its_namespace() {
        for binding in ROLE_BINDINGS {
            assert!(
                ROLES
                    .iter()
                    .any(|r| r.namespace == binding.namespace && r.name == binding.role),
                "{:?}/{}",
                binding.namespace,
                binding.name
            );
        }
        for role in ROLES {
            assert!(matches!(role.namespace, Some(KUBE_SYSTEM | KUBE_PUBLIC)));
        }
    }
}
