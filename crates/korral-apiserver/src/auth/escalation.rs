//! Privilege-escalation prevention for RBAC writes, as upstream: a user may create or change a
//! Role or ClusterRole only with rules they already hold (or the `escalate` verb on it), and
//! bind a role only when they hold all of its rules (or the `bind` verb on it). Only
//! `system:masters` (or `escalate`) may set an `aggregationRule`.

use serde_json::Value;

use super::Auth;
use super::attributes::Attributes;
use super::rbac::{PolicyRule, rules_of};
use super::user::MASTERS_GROUP;
use crate::error::ApiError;
use crate::server::AuthorizationMode;
use crate::storage::object_key;

const GROUP: &str = "rbac.authorization.k8s.io";

/// Whether a request needs the escalation check (an RBAC write by someone not in
/// `system:masters`, under RBAC mode).
pub fn applies(auth: &Auth, attrs: &Attributes) -> bool {
    auth.mode() == AuthorizationMode::Rbac
        && attrs.resource_request
        && attrs.api_group == GROUP
        && attrs.subresource.is_empty()
        && matches!(attrs.verb.as_str(), "create" | "update" | "patch")
        && matches!(
            attrs.resource.as_str(),
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        )
        && !attrs.user.in_group(MASTERS_GROUP)
}

/// One verb on one resource (or URL) and name: what "holding a rule" is checked against, in
/// the order of upstream's `BreakdownRule` (group, resource, verb, name; then URL, verb).
fn atoms(rule: &PolicyRule, namespace: &str, base: &Attributes) -> Vec<Attributes> {
    let mut out = Vec::new();
    let names: Vec<String> = if rule.resource_names.is_empty() {
        vec![String::new()]
    } else {
        rule.resource_names.clone()
    };
    for group in &rule.api_groups {
        for resource in &rule.resources {
            let (resource, subresource) = match resource.split_once('/') {
                Some((r, s)) if r != "*" => (r.to_string(), s.to_string()),
                _ => (resource.clone(), String::new()),
            };
            for verb in &rule.verbs {
                for name in &names {
                    out.push(Attributes {
                        user: base.user.clone(),
                        verb: verb.clone(),
                        resource_request: true,
                        namespace: namespace.to_string(),
                        api_group: group.clone(),
                        resource: resource.clone(),
                        subresource: subresource.clone(),
                        name: name.clone(),
                        ..Attributes::default()
                    });
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(Attributes {
                user: base.user.clone(),
                verb: verb.clone(),
                resource_request: false,
                path: url.clone(),
                ..Attributes::default()
            });
        }
    }
    out
}

/// The rule of one atom: one verb on one resource (and name) or one URL.
fn atom_rule(atom: &Attributes) -> PolicyRule {
    let verbs = vec![atom.verb.clone()];
    if !atom.resource_request {
        return PolicyRule {
            verbs,
            non_resource_urls: vec![atom.path.clone()],
            ..PolicyRule::default()
        };
    }
    PolicyRule {
        verbs,
        api_groups: vec![atom.api_group.clone()],
        resources: vec![atom.combined_resource()],
        resource_names: if atom.name.is_empty() {
            Vec::new()
        } else {
            vec![atom.name.clone()]
        },
        non_resource_urls: Vec::new(),
    }
}

/// Upstream's `Covers(owner, servant)`: the parts of `servant`'s rules (each one verb on one
/// resource and name, or on one URL, as upstream's `BreakdownRule` splits them) that no rule
/// of `owner` allows; empty when `owner` covers `servant`.
pub(crate) fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    let base = Attributes::default();
    servant
        .iter()
        .flat_map(|rule| atoms(rule, "", &base))
        .filter(|atom| !owner.iter().any(|rule| rule.allows(atom)))
        .map(|atom| atom_rule(&atom))
        .collect()
}

fn quoted(list: &[String]) -> String {
    list.iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn describe(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    if !rule.api_groups.is_empty() {
        parts.push(format!("APIGroups:[{}]", quoted(&rule.api_groups)));
    }
    if !rule.resources.is_empty() {
        parts.push(format!("Resources:[{}]", quoted(&rule.resources)));
    }
    if !rule.resource_names.is_empty() {
        parts.push(format!("ResourceNames:[{}]", quoted(&rule.resource_names)));
    }
    if !rule.non_resource_urls.is_empty() {
        parts.push(format!(
            "NonResourceURLs:[{}]",
            quoted(&rule.non_resource_urls)
        ));
    }
    parts.push(format!("Verbs:[{}]", quoted(&rule.verbs)));
    format!("{{{}}}", parts.join(", "))
}

fn forbidden(attrs: &Attributes, name: &str, detail: String) -> ApiError {
    let qualified = crate::error::qualified_resource(&attrs.api_group, &attrs.resource);
    let mut err = if name.is_empty() {
        ApiError::forbidden(format!("{qualified} is forbidden: {detail}"))
    } else {
        ApiError::forbidden(format!("{qualified} {name:?} is forbidden: {detail}"))
    };
    err.details = Some(Box::new(crate::error::Details {
        name: (!name.is_empty()).then(|| name.to_string()),
        group: Some(GROUP.to_string()),
        kind: Some(attrs.resource.clone()),
        ..crate::error::Details::default()
    }));
    err
}

/// The rules the user does not hold in `namespace` ("" = cluster-wide).
fn not_held(
    auth: &Auth,
    attrs: &Attributes,
    rules: &[PolicyRule],
    namespace: &str,
) -> Vec<PolicyRule> {
    rules
        .iter()
        .filter(|rule| {
            atoms(rule, namespace, attrs)
                .iter()
                .any(|atom| !auth.authorize(atom).allowed)
        })
        .cloned()
        .collect()
}

fn escalation_error(attrs: &Attributes, name: &str, missing: &[PolicyRule]) -> ApiError {
    let lines: Vec<String> = missing.iter().map(describe).collect();
    forbidden(
        attrs,
        name,
        format!(
            "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            attrs.user.name,
            quoted(&attrs.user.groups),
            lines.join("\n")
        ),
    )
}

/// Whether the user holds `verb` on the role itself (`escalate` or `bind`).
fn has_verb_on_role(
    auth: &Auth,
    attrs: &Attributes,
    verb: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> bool {
    auth.authorize(&Attributes {
        user: attrs.user.clone(),
        verb: verb.to_string(),
        resource_request: true,
        namespace: namespace.to_string(),
        api_group: GROUP.to_string(),
        resource: resource.to_string(),
        name: name.to_string(),
        ..Attributes::default()
    })
    .allowed
}

/// Checks the object a request would write (`candidate`): 403 when it grants more than the
/// requesting user holds.
pub fn check(auth: &Auth, attrs: &Attributes, candidate: &Value) -> Result<(), ApiError> {
    let name = if attrs.name.is_empty() {
        crate::meta::name(candidate).to_string()
    } else {
        attrs.name.clone()
    };
    let namespace = attrs.namespace.as_str();
    match attrs.resource.as_str() {
        "roles" | "clusterroles" => {
            if has_verb_on_role(auth, attrs, "escalate", &attrs.resource, namespace, &name) {
                return Ok(());
            }
            if candidate
                .get("aggregationRule")
                .is_some_and(|a| !a.is_null())
            {
                return Err(forbidden(
                    attrs,
                    &name,
                    format!(
                        "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\nmust have cluster-admin privileges to use the aggregationRule",
                        attrs.user.name,
                        quoted(&attrs.user.groups)
                    ),
                ));
            }
            let missing = not_held(auth, attrs, &rules_of(candidate), namespace);
            if missing.is_empty() {
                Ok(())
            } else {
                Err(escalation_error(attrs, &name, &missing))
            }
        }
        _ => {
            let role_kind = candidate["roleRef"]["kind"].as_str().unwrap_or("");
            let role_name = candidate["roleRef"]["name"].as_str().unwrap_or("");
            let (resource, key) = match role_kind {
                "ClusterRole" => (
                    "clusterroles",
                    object_key(GROUP, "clusterroles", None, role_name),
                ),
                "Role" => (
                    "roles",
                    object_key(GROUP, "roles", Some(namespace), role_name),
                ),
                // Validation reports a bad roleRef.
                _ => return Ok(()),
            };
            if has_verb_on_role(auth, attrs, "bind", resource, namespace, role_name) {
                return Ok(());
            }
            let Some(role) = auth.objects().storage().get(&key) else {
                let what = if role_kind == "Role" {
                    "role"
                } else {
                    "clusterrole"
                };
                return Err(forbidden(
                    attrs,
                    &name,
                    format!("{what}.{GROUP} {role_name:?} not found"),
                ));
            };
            let missing = not_held(auth, attrs, &rules_of(&role), namespace);
            if missing.is_empty() {
                Ok(())
            } else {
                Err(escalation_error(attrs, &name, &missing))
            }
        }
    }
}
