//! The RBAC bootstrap policy an RBAC server starts with: upstream kube-apiserver's
//! `bootstrappolicy` package as a default v1.36 server serves it. That is the ClusterRoles and
//! ClusterRoleBindings of `ClusterRoles()`/`ClusterRoleBindings()` ([`cluster_policy`]), the
//! controller roles and bindings of `controller_policy.go` ([`controller_policy`]), and the
//! Roles and RoleBindings of `namespace_policy.go` in `kube-system` and `kube-public`
//! ([`namespace_policy`]), each with upstream's `kubernetes.io/bootstrapping: rbac-defaults`
//! label and `rbac.authorization.kubernetes.io/autoupdate: "true"` annotation.
//!
//! At start, missing objects are created and existing ones reconciled as upstream's
//! `rbac/bootstrap-roles` hook does ([`ensure`]): what a durable server's users removed comes
//! back, what they added stays, and objects annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` are left alone. The objects are
//! rendered once per process.
//!
//! The facts come from the testdata of kubernetes/kubernetes'
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`, the newest stored versions found:
//! `controller-roles.yaml`, `namespace-roles.yaml` and `namespace-role-bindings.yaml` at
//! 008b3652959ca58af8be3fb5b6ecfe9ae7638282; the ClusterRoles from
//! `cluster-roles-featuregates.yaml` at 01899a7c86337b05a16a4155c9351cf947beaee9 (every gate
//! on) less what gates that are off by default add (`system:cluster-trust-bundle-discovery`
//! and `system:node`'s `clustertrustbundles` rule: ClusterTrustBundle; `system:kube-scheduler`'s
//! `devicetaintrules` rule: DRADeviceTaintRules; `system:monitoring`'s `/flagz` and `/statusz`
//! rules: ComponentFlagz, ComponentStatusz); the ClusterRoleBindings of
//! `cluster-role-bindings.yaml` (c60df8997f62f861cf0cd2b13ab62271464589ed) with those
//! `ClusterRoleBindings()` added since (`system:service-account-issuer-discovery`, as
//! `policy.go` at 53f1b9d6f8de259644c05a25aa7ac8c6a67258e2 binds it, and `system:monitoring`);
//! the controllers' bindings as `addControllerRole` makes them.

mod cluster_policy;
mod controller_policy;
mod ensure;
mod namespace_policy;
mod policy;

use std::sync::OnceLock;

use serde_json::Value;

pub use ensure::ensure;

/// The four RBAC resources the policy is made of.
const RESOURCES: [&str; 4] = [
    "clusterroles",
    "clusterrolebindings",
    "roles",
    "rolebindings",
];

/// One bootstrap object, rendered once per process.
struct Bootstrap {
    /// Index into [`RESOURCES`].
    resource: usize,
    /// Its namespace (Roles and RoleBindings).
    namespace: Option<&'static str>,
    /// Its name.
    name: &'static str,
    /// The object to create.
    object: Value,
}

/// Every bootstrap object: ClusterRoles, ClusterRoleBindings, Roles, RoleBindings (rendered
/// on first use).
fn all() -> &'static [Bootstrap] {
    static ALL: OnceLock<Vec<Bootstrap>> = OnceLock::new();
    ALL.get_or_init(render)
}

/// Renders every bootstrap object.
fn render() -> Vec<Bootstrap> {
    let roles = cluster_policy::CLUSTER_ROLES
        .iter()
        .chain(controller_policy::CONTROLLER_ROLES)
        .map(|r| (0, r.namespace, r.name, r.to_json()));
    let bindings = cluster_policy::CLUSTER_ROLE_BINDINGS
        .iter()
        .map(|b| (1, b.namespace, b.name, Some(b.to_json())))
        .chain(
            controller_policy::CONTROLLER_ROLES
                .iter()
                .map(|r| (1, None, r.name, controller_policy::binding(r))),
        )
        .filter_map(|(resource, namespace, name, object)| {
            object.map(|object| (resource, namespace, name, object))
        });
    let namespaced = namespace_policy::ROLES
        .iter()
        .map(|r| (2, r.namespace, r.name, r.to_json()))
        .chain(
            namespace_policy::ROLE_BINDINGS
                .iter()
                .map(|b| (3, b.namespace, b.name, b.to_json())),
        );
    roles
        .chain(bindings)
        .chain(namespaced)
        .map(|(resource, namespace, name, object)| Bootstrap {
            resource,
            namespace,
            name,
            object,
        })
        .collect()
}

/// The bootstrap objects of `RESOURCES[resource]`.
#[cfg(test)]
fn of(resource: usize) -> Vec<Value> {
    all()
        .iter()
        .filter(|b| b.resource == resource)
        .map(|b| b.object.clone())
        .collect()
}

/// The bootstrap ClusterRoles (upstream's and the controllers').
#[cfg(test)]
pub fn cluster_roles() -> Vec<Value> {
    of(0)
}

/// The bootstrap ClusterRoleBindings (upstream's and the controllers').
#[cfg(test)]
pub fn cluster_role_bindings() -> Vec<Value> {
    of(1)
}

/// The bootstrap Roles of `kube-system` and `kube-public`.
#[cfg(test)]
pub fn roles() -> Vec<Value> {
    of(2)
}

/// The bootstrap RoleBindings of `kube-system` and `kube-public`.
#[cfg(test)]
pub fn role_bindings() -> Vec<Value> {
    of(3)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn names_are_unique_per_resource_and_namespace() {
        let mut seen = BTreeSet::new();
        for b in all() {
            assert!(
                seen.insert((b.resource, b.namespace, b.name)),
                "{} {:?}/{}",
                RESOURCES[b.resource],
                b.namespace,
                b.name
            );
            assert_eq!(b.object["metadata"]["name"], b.name);
        }
    }

    #[test]
    fn every_cluster_role_binding_names_a_bootstrap_cluster_role() {
        let roles: BTreeSet<String> = cluster_roles()
            .iter()
            .map(|r| r["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect();
        for binding in cluster_role_bindings() {
            let role = binding["roleRef"]["name"].as_str().unwrap_or("");
            assert!(roles.contains(role), "{role}");
        }
    }

    #[test]
    fn every_object_carries_the_bootstrap_label_and_annotation() {
        for b in all() {
            let md = &b.object["metadata"];
            assert_eq!(md["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults");
            assert_eq!(
                md["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
                "true"
            );
            assert_eq!(md["namespace"].as_str(), b.namespace);
        }
    }

    #[test]
    fn the_policy_has_upstreams_size() {
        assert_eq!(cluster_roles().len(), 31 + 38);
        assert_eq!(cluster_role_bindings().len(), 12 + 38);
        assert_eq!(roles().len(), 7);
        assert_eq!(role_bindings().len(), 7);
    }
}
