//! Whether a request matches a FlowSchema's rules, as upstream's `rule.go` decides: a rule
//! matches when one of its subjects matches the user and, for a resource request, one of its
//! resource rules (verb, API group, `resource[/subresource]`, cluster scope or namespace), for
//! a non-resource request one of its non-resource rules (verb, URL or `prefix/*`). A list
//! holding only the wildcard `*` matches everything.

use super::spec as api;

use crate::auth::Attributes;
use crate::auth::user::SERVICE_ACCOUNT_PREFIX;

/// The wildcard of every list in a rule.
const ALL: &str = "*";

/// Whether one of `rules` (a FlowSchema's) matches the request described by `request`.
pub(super) fn matches_schema(rules: &[api::PolicyRulesWithSubjects], request: &Attributes) -> bool {
    rules.iter().any(|rule| matches_rule(rule, request))
}

/// One rule: a subject, then a resource or non-resource rule.
fn matches_rule(rule: &api::PolicyRulesWithSubjects, request: &Attributes) -> bool {
    if !rule.subjects.iter().any(|s| matches_subject(s, request)) {
        return false;
    }
    if request.resource_request {
        rule.resource_rules
            .iter()
            .any(|r| matches_resource_rule(r, request))
    } else {
        rule.non_resource_rules
            .iter()
            .any(|r| matches_non_resource_rule(r, request))
    }
}

/// A `User`, `Group` or `ServiceAccount` subject (`*` for any name; a service account named
/// `*` stands for every one of its namespace).
fn matches_subject(subject: &api::Subject, request: &Attributes) -> bool {
    let user = &request.user;
    match subject.kind.as_str() {
        "User" => subject
            .user
            .as_ref()
            .is_some_and(|u| u.name == ALL || u.name == user.name),
        "Group" => subject
            .group
            .as_ref()
            .is_some_and(|g| g.name == ALL || user.in_group(&g.name)),
        "ServiceAccount" => subject.service_account.as_ref().is_some_and(|sa| {
            let Some(rest) = user.name.strip_prefix(SERVICE_ACCOUNT_PREFIX) else {
                return false;
            };
            let Some(after) = rest.strip_prefix(sa.namespace.as_str()) else {
                return false;
            };
            if sa.name == ALL {
                after.starts_with(':')
            } else {
                after.strip_prefix(':') == Some(sa.name.as_str())
            }
        }),
        _ => false,
    }
}

/// Upstream's `containsString`: `x` is in `list`, or `list` is exactly the wildcard.
fn contains(list: &[String], x: &str) -> bool {
    (list.len() == 1 && list[0] == ALL) || list.iter().any(|y| y == x)
}

/// A resource rule: verb, `resource[/subresource]`, API group, then scope.
fn matches_resource_rule(rule: &api::ResourcePolicyRule, request: &Attributes) -> bool {
    if !contains(&rule.verbs, &request.verb) {
        return false;
    }
    let resource_matches = if request.subresource.is_empty() {
        contains(&rule.resources, &request.resource)
    } else {
        contains(&rule.resources, &request.combined_resource())
    };
    if !resource_matches || !contains(&rule.api_groups, &request.api_group) {
        return false;
    }
    if request.namespace.is_empty() {
        return rule.cluster_scope;
    }
    contains(&rule.namespaces, &request.namespace)
}

/// A non-resource rule: verb, then the path (exact, `*`, or a `prefix/*`).
fn matches_non_resource_rule(rule: &api::NonResourcePolicyRule, request: &Attributes) -> bool {
    if !contains(&rule.verbs, &request.verb) {
        return false;
    }
    let path = request.path.as_str();
    rule.non_resource_urls.iter().any(|url| {
        if url == ALL || url == path {
            return true;
        }
        let prefix = url.strip_suffix('*').unwrap_or(url);
        if prefix.ends_with('/') {
            path.starts_with(prefix)
        } else {
            path.strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/'))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;
    use serde_json::json;

    fn rules(value: serde_json::Value) -> Vec<api::PolicyRulesWithSubjects> {
        serde_json::from_value(value).unwrap_or_default()
    }

    fn request(user: &str, groups: &[&str], method: http::Method, path: &str) -> Attributes {
        let user = UserInfo {
            name: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        };
        crate::auth::attributes::from_request(user, &method, path, &[])
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts_with_wildcards() {
        let resource = json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}]);
        let with = |subject: serde_json::Value| {
            rules(json!([{"subjects": [subject], "resourceRules": resource}]))
        };
        let get = |user: &str, groups: &[&str]| {
            request(
                user,
                groups,
                http::Method::GET,
                "/api/v1/namespaces/a/pods/p",
            )
        };
        let alice = get("alice", &["team"]);
        let robot = get("system:serviceaccount:ns:robot", &[]);
        let other_ns = get("system:serviceaccount:nsx:robot", &[]);
        let user = with(json!({"kind": "User", "user": {"name": "alice"}}));
        assert!(matches_schema(&user, &alice));
        assert!(!matches_schema(&user, &robot));
        let any_user = with(json!({"kind": "User", "user": {"name": "*"}}));
        assert!(matches_schema(&any_user, &robot));
        let group = with(json!({"kind": "Group", "group": {"name": "team"}}));
        assert!(matches_schema(&group, &alice));
        assert!(!matches_schema(&group, &robot));
        let any_group = with(json!({"kind": "Group", "group": {"name": "*"}}));
        assert!(matches_schema(&any_group, &robot));
        let sa = with(
            json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "ns", "name": "robot"}}),
        );
        assert!(matches_schema(&sa, &robot));
        assert!(!matches_schema(&sa, &other_ns), "namespace ns is not nsx");
        let every_sa = with(
            json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": "ns", "name": "*"}}),
        );
        assert!(matches_schema(&every_sa, &robot));
        assert!(!matches_schema(&every_sa, &other_ns));
        assert!(!matches_schema(&every_sa, &alice));
    }

    #[test]
    fn resource_rules_match_verbs_groups_subresources_and_scope() {
        let schema = |rule: serde_json::Value| {
            rules(json!([{
                "subjects": [{"kind": "Group", "group": {"name": "*"}}],
                "resourceRules": [rule],
            }]))
        };
        let pods = schema(
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/status"], "namespaces": ["a"]}),
        );
        let r = |method, path| request("u", &[], method, path);
        assert!(matches_schema(
            &pods,
            &r(http::Method::GET, "/api/v1/namespaces/a/pods")
        ));
        assert!(matches_schema(
            &pods,
            &r(http::Method::GET, "/api/v1/namespaces/a/pods/p/status")
        ));
        assert!(
            !matches_schema(
                &pods,
                &r(http::Method::GET, "/api/v1/namespaces/a/pods/p/log")
            ),
            "subresource not listed"
        );
        assert!(
            !matches_schema(&pods, &r(http::Method::GET, "/api/v1/namespaces/b/pods")),
            "other namespace"
        );
        assert!(
            !matches_schema(&pods, &r(http::Method::POST, "/api/v1/namespaces/a/pods")),
            "verb"
        );
        assert!(
            !matches_schema(&pods, &r(http::Method::GET, "/api/v1/pods")),
            "cluster scope not asked for"
        );
        assert!(
            !matches_schema(
                &pods,
                &r(http::Method::GET, "/apis/x.io/v1/namespaces/a/pods")
            ),
            "group"
        );
        let cluster = schema(
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true}),
        );
        assert!(matches_schema(
            &cluster,
            &r(http::Method::GET, "/api/v1/nodes")
        ));
        assert!(
            !matches_schema(&cluster, &r(http::Method::GET, "/api/v1/namespaces/a/pods")),
            "no namespaces"
        );
        let any_ns = schema(
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}),
        );
        assert!(matches_schema(
            &any_ns,
            &r(
                http::Method::DELETE,
                "/apis/apps/v1/namespaces/z/deployments/d"
            )
        ));
        // A wildcard is one only alone in its list.
        let mixed = schema(
            json!({"verbs": ["get", "*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"]}),
        );
        assert!(!matches_schema(
            &mixed,
            &r(http::Method::POST, "/api/v1/namespaces/a/pods")
        ));
    }

    #[test]
    fn non_resource_rules_match_paths_and_prefixes() {
        let schema = rules(json!([{
            "subjects": [{"kind": "Group", "group": {"name": "*"}}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/metrics/*", "/openapi"]}],
        }]));
        let r = |path| request("u", &[], http::Method::GET, path);
        assert!(matches_schema(&schema, &r("/healthz")));
        assert!(matches_schema(&schema, &r("/metrics/x")));
        assert!(
            matches_schema(&schema, &r("/openapi/v2")),
            "a URL is a prefix of its subpaths"
        );
        assert!(!matches_schema(&schema, &r("/openapiv2")));
        assert!(!matches_schema(&schema, &r("/version")));
        assert!(!matches_schema(
            &schema,
            &request("u", &[], http::Method::POST, "/healthz")
        ));
        // A non-resource rule never matches a resource request, nor the reverse.
        assert!(!matches_schema(&schema, &r("/api/v1/pods")));
    }
}
