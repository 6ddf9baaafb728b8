//! `rbac.authorization.k8s.io/v1`: Roles, ClusterRoles and their bindings.

use k8s_openapi::api::rbac::v1 as api;

use super::KindDef;
use super::strategy::{Defaulted, Plain};
use crate::registry::NameRule;

const GROUP: &str = "rbac.authorization.k8s.io";

/// The kinds of `rbac.authorization.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(GROUP, "v1", "roles", "Role", Plain)
            .schema::<api::Role>()
            .names(NameRule::PathSegment),
        KindDef::new(GROUP, "v1", "clusterroles", "ClusterRole", Plain)
            .schema::<api::ClusterRole>()
            .cluster_scoped()
            .names(NameRule::PathSegment),
        KindDef::new(
            GROUP,
            "v1",
            "rolebindings",
            "RoleBinding",
            Defaulted::new(GROUP, "RoleBinding"),
        )
        .schema::<api::RoleBinding>()
        .names(NameRule::PathSegment),
        KindDef::new(
            GROUP,
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            Defaulted::new(GROUP, "ClusterRoleBinding"),
        )
        .schema::<api::ClusterRoleBinding>()
        .cluster_scoped()
        .names(NameRule::PathSegment),
    ]
}
