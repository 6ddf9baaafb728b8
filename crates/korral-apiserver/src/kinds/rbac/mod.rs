//! `rbac.authorization.k8s.io/v1`: Roles, ClusterRoles and their bindings, validated as
//! upstream's `pkg/registry/rbac/*/strategy.go` (see [`validation`]), with the bindings' table
//! (`NAME ROLE AGE`, wide `USERS GROUPS SERVICEACCOUNTS`); roles print upstream's default table
//! (`NAME CREATED AT`).
//!
//! Authorization against these objects and the escalation check on writing them live in
//! [`crate::auth`].

mod validation;

use k8s_openapi::api::rbac::v1 as api;
use serde_json::{Map, Value, json};

use super::KindDef;
use super::printer::{AGE, Column, Printer, age, text};
use super::strategy::{Context, Strategy};
use crate::error::Cause;
use crate::registry::NameRule;
use validation::GROUP;

/// The kinds of `rbac.authorization.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(GROUP, "v1", "roles", "Role", RoleStrategy)
            .schema::<api::Role>()
            .names(NameRule::PathSegment),
        KindDef::new(
            GROUP,
            "v1",
            "clusterroles",
            "ClusterRole",
            ClusterRoleStrategy,
        )
        .schema::<api::ClusterRole>()
        .cluster_scoped()
        .names(NameRule::PathSegment),
        KindDef::new(
            GROUP,
            "v1",
            "rolebindings",
            "RoleBinding",
            BindingStrategy { cluster: false },
        )
        .schema::<api::RoleBinding>()
        .names(NameRule::PathSegment)
        .printer(ROLE_BINDINGS),
        KindDef::new(
            GROUP,
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            BindingStrategy { cluster: true },
        )
        .schema::<api::ClusterRoleBinding>()
        .cluster_scoped()
        .names(NameRule::PathSegment)
        .printer(CLUSTER_ROLE_BINDINGS),
    ]
}

/// Roles: upstream's `ValidateRole` on create and update.
#[derive(Debug, Clone, Copy)]
struct RoleStrategy;

impl Strategy for RoleStrategy {
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::validate_role(obj)
    }
}

/// ClusterRoles: upstream's `ValidateClusterRole`; an update keeps accepting aggregation
/// selectors with invalid label values when the stored role already had them.
#[derive(Debug, Clone, Copy)]
struct ClusterRoleStrategy;

impl Strategy for ClusterRoleStrategy {
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::validate_cluster_role(obj, false)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::validate_cluster_role(obj, validation::has_invalid_aggregation_selector(old))
    }
}

/// RoleBindings (`cluster` false) and ClusterRoleBindings: `rbac/v1` defaults, upstream's
/// binding validation, and a `roleRef` that never changes.
#[derive(Debug, Clone, Copy)]
struct BindingStrategy {
    cluster: bool,
}

impl BindingStrategy {
    const fn kind(self) -> &'static str {
        if self.cluster {
            "ClusterRoleBinding"
        } else {
            "RoleBinding"
        }
    }
}

impl Strategy for BindingStrategy {
    fn default(&self, obj: &mut Value) {
        // `roleRef` is a struct upstream: a missing one decodes as empty and is defaulted.
        if let Some(root) = obj.as_object_mut()
            && root.get("roleRef").is_none_or(Value::is_null)
        {
            root.insert("roleRef".into(), Value::Object(Map::new()));
        }
        crate::defaults::apply_builtin_defaults(GROUP, self.kind(), obj);
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::validate_binding(obj, self.cluster)
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::validate_binding_update(obj, old, self.cluster)
    }
}

/// A binding table's columns after `Name`: the role (described as the kind's `roleRef`), the age,
/// and the wide subject columns, described as upstream words them per kind.
macro_rules! binding_columns {
    ($role:expr, $what:literal) => {
        &[
            Column::new("Role", $role),
            AGE,
            Column::wide("Users", concat!("Users in the ", $what)),
            Column::wide("Groups", concat!("Groups in the ", $what)),
            Column::wide("ServiceAccounts", concat!("ServiceAccounts in the ", $what)),
        ]
    };
}

/// `kubectl get rolebindings`.
const ROLE_BINDINGS: Printer = Printer {
    columns: binding_columns!(
        "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        "roleBinding"
    ),
    cells: binding_cells,
};

/// `kubectl get clusterrolebindings`.
const CLUSTER_ROLE_BINDINGS: Printer = Printer {
    columns: binding_columns!(
        "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        "clusterRoleBinding"
    ),
    cells: binding_cells,
};

/// Upstream's `printRoleBinding` / `printClusterRoleBinding` (always wide on the server):
/// `Kind/name` of the role, the age, then the subjects as `rbac.SubjectsStrings` sorts them
/// (users, groups, `namespace/name` of service accounts; other kinds left out), `, `-joined.
fn binding_cells(obj: &Value) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        text(obj, "roleRef.kind"),
        text(obj, "roleRef.name")
    );
    let (mut users, mut groups, mut accounts) = (Vec::new(), Vec::new(), Vec::new());
    let subjects = obj
        .get("subjects")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for subject in subjects {
        let name = text(subject, "name");
        match text(subject, "kind") {
            "ServiceAccount" => accounts.push(format!("{}/{name}", text(subject, "namespace"))),
            "User" => users.push(name.to_string()),
            "Group" => groups.push(name.to_string()),
            _ => {}
        }
    }
    vec![
        json!(role),
        age(obj),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(accounts.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_rows_list_subjects_by_kind() {
        let binding = json!({
            "metadata": {"name": "b", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"},
                {"kind": "Group", "name": "devs"},
                {"kind": "User", "name": "bob"},
                {"kind": "ServiceAccount", "name": "other"},
            ],
        });
        let cells = binding_cells(&binding);
        assert_eq!(cells[0], json!("ClusterRole/view"));
        assert_eq!(cells[2], json!("alice, bob"));
        assert_eq!(cells[3], json!("devs"));
        assert_eq!(cells[4], json!("ns/sa, /other"));
        assert_eq!(cells.len(), ROLE_BINDINGS.columns.len());
        let empty = binding_cells(&json!({"roleRef": {"kind": "Role", "name": "r"}}));
        assert_eq!(empty[0], json!("Role/r"));
        assert_eq!(empty[2], json!(""));
    }

    #[test]
    fn missing_role_ref_is_defaulted_then_refused() {
        let strategy = BindingStrategy { cluster: false };
        let mut obj = json!({"metadata": {"name": "b", "namespace": "ns"},
                             "subjects": [{"kind": "User", "name": "alice"}]});
        strategy.default(&mut obj);
        assert_eq!(obj["roleRef"]["apiGroup"], GROUP);
        assert_eq!(obj["subjects"][0]["apiGroup"], GROUP);
        let causes: Vec<String> = validation::validate_binding(&obj, false)
            .iter()
            .map(Cause::summary)
            .collect();
        assert_eq!(
            causes,
            vec![
                "roleRef.kind: Unsupported value: \"\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.name: Required value",
            ]
        );
    }
}
