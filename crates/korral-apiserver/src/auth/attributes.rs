//! Authorization attributes of a request (upstream's `RequestInfo`): verb, resource,
//! subresource, namespace, name, or a non-resource path.

use http::Method;

use super::user::UserInfo;
use crate::error::{ApiError, Details};

/// What a request asks to do, as the authorizer sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who asks.
    pub user: UserInfo,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
    /// `impersonate`, … (non-resource requests: the lowercase HTTP method).
    pub verb: String,
    /// Whether this addresses an API resource (otherwise: a non-resource path).
    pub resource_request: bool,
    /// The request path (non-resource requests).
    pub path: String,
    /// Namespace, empty when cluster-wide.
    pub namespace: String,
    /// API group, empty for core.
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource (`status`, `scale`, `token`), empty when none.
    pub subresource: String,
    /// Object name, empty for collections.
    pub name: String,
}

impl Attributes {
    /// `resource` or `resource/subresource`.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// The message upstream's authorization filter writes after `... is forbidden: `.
    fn forbidden_detail(&self) -> String {
        let user = &self.user.name;
        if !self.resource_request {
            return format!("User {user:?} cannot {} path {:?}", self.verb, self.path);
        }
        let resource = self.combined_resource();
        if self.namespace.is_empty() {
            format!(
                "User {user:?} cannot {} resource {resource:?} in API group {:?} at the cluster scope",
                self.verb, self.api_group
            )
        } else {
            format!(
                "User {user:?} cannot {} resource {resource:?} in API group {:?} in the namespace {:?}",
                self.verb, self.api_group, self.namespace
            )
        }
    }

    /// 403 `Forbidden` with upstream's message and details, `reason` appended when not empty.
    pub fn forbidden(&self, reason: &str) -> ApiError {
        let mut detail = self.forbidden_detail();
        if !reason.is_empty() {
            detail = format!("{detail}: {reason}");
        }
        if !self.resource_request {
            return ApiError::forbidden(format!("forbidden: {detail}"));
        }
        let qualified = crate::error::qualified_resource(&self.api_group, &self.resource);
        let message = if self.name.is_empty() {
            format!("{qualified} is forbidden: {detail}")
        } else {
            format!("{qualified} {:?} is forbidden: {detail}", self.name)
        };
        let mut err = ApiError::forbidden(message);
        err.details = Some(Box::new(Details {
            name: (!self.name.is_empty()).then(|| self.name.clone()),
            group: (!self.api_group.is_empty()).then(|| self.api_group.clone()),
            kind: Some(self.resource.clone()),
            ..Details::default()
        }));
        err
    }
}

/// Subresources of a namespace (`/api/v1/namespaces/<ns>/status`), not resources in it.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

fn decode(segment: &str) -> String {
    form_urlencoded::parse(format!("x={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| segment.to_string())
}

fn query_param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Builds the attributes of a request the way upstream's `RequestInfoFactory` does.
pub fn from_request(
    user: UserInfo,
    method: &Method,
    path: &str,
    query: &[(String, String)],
) -> Attributes {
    let non_resource = |user: UserInfo| Attributes {
        user,
        verb: method.as_str().to_ascii_lowercase(),
        resource_request: false,
        path: path.to_string(),
        ..Attributes::default()
    };
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let (group, version, rest) = match segments.as_slice() {
        [prefix, version, rest @ ..] if prefix == "api" && !rest.is_empty() => {
            (String::new(), version.clone(), rest)
        }
        [prefix, group, version, rest @ ..] if prefix == "apis" && !rest.is_empty() => {
            (group.clone(), version.clone(), rest)
        }
        _ => return non_resource(user),
    };
    let mut attrs = Attributes {
        user,
        resource_request: true,
        api_group: group,
        api_version: version,
        ..Attributes::default()
    };
    let mut parts: &[String] = rest;
    if parts[0] == "namespaces" && parts.len() > 1 {
        attrs.namespace = parts[1].clone();
        if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2].as_str()) {
            parts = &parts[2..];
        }
    }
    attrs.resource = parts[0].clone();
    if let Some(name) = parts.get(1) {
        attrs.name = name.clone();
    }
    if let Some(sub) = parts.get(2) {
        attrs.subresource = sub.clone();
    }
    let watch = matches!(query_param(query, "watch"), Some("true" | "1"));
    attrs.verb = request_verb(method, !attrs.name.is_empty(), watch).to_string();
    if attrs.verb.is_empty() {
        attrs.verb = method.as_str().to_ascii_lowercase();
    }
    // A list or watch of one object by field selector is authorized as that object.
    if matches!(attrs.verb.as_str(), "list" | "watch")
        && attrs.name.is_empty()
        && let Some(selector) = query_param(query, "fieldSelector")
    {
        let terms: Vec<&str> = selector.split(',').collect();
        for term in terms {
            if let Some(name) = term
                .strip_prefix("metadata.name=")
                .map(|n| n.trim_start_matches('='))
            {
                attrs.name = name.to_string();
            }
        }
    }
    attrs
}

/// The verb of a resource request (upstream's `RequestInfoFactory`): from its method, whether
/// it names an object, and whether it watches; empty for other methods.
pub(crate) fn request_verb(method: &Method, named: bool, watch: bool) -> &'static str {
    match *method {
        Method::GET | Method::HEAD if watch => "watch",
        Method::GET | Method::HEAD if !named => "list",
        Method::GET | Method::HEAD => "get",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if !named => "deletecollection",
        Method::DELETE => "delete",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(method: Method, path: &str, query: &[(&str, &str)]) -> Attributes {
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        from_request(UserInfo::default(), &method, path, &query)
    }

    #[test]
    fn verbs_follow_upstream() {
        let a = attrs(Method::GET, "/api/v1/namespaces/default/pods", &[]);
        assert_eq!(
            (a.verb.as_str(), a.namespace.as_str(), a.resource.as_str()),
            ("list", "default", "pods")
        );
        let a = attrs(Method::GET, "/api/v1/pods", &[("watch", "true")]);
        assert_eq!((a.verb.as_str(), a.namespace.as_str()), ("watch", ""));
        let a = attrs(Method::GET, "/api/v1/namespaces/ns/pods/p", &[]);
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("get", "p"));
        let a = attrs(Method::DELETE, "/api/v1/namespaces/ns/pods", &[]);
        assert_eq!(a.verb, "deletecollection");
        let a = attrs(Method::DELETE, "/api/v1/namespaces/ns/pods/p", &[]);
        assert_eq!(a.verb, "delete");
        let a = attrs(Method::POST, "/api/v1/namespaces/ns/pods", &[]);
        assert_eq!(a.verb, "create");
        let a = attrs(
            Method::PUT,
            "/apis/apps/v1/namespaces/ns/deployments/d/scale",
            &[],
        );
        assert_eq!(
            (
                a.verb.as_str(),
                a.api_group.as_str(),
                a.subresource.as_str()
            ),
            ("update", "apps", "scale")
        );
        let a = attrs(Method::PATCH, "/api/v1/namespaces/ns/pods/p/status", &[]);
        assert_eq!(
            (a.verb.as_str(), a.combined_resource()),
            ("patch", "pods/status".to_string())
        );
        let a = attrs(
            Method::GET,
            "/api/v1/namespaces/ns/configmaps",
            &[("watch", "1"), ("fieldSelector", "metadata.name=one")],
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("watch", "one"));
    }

    #[test]
    fn namespaces_and_non_resource_paths() {
        let a = attrs(Method::GET, "/api/v1/namespaces/foo", &[]);
        assert_eq!(
            (a.resource.as_str(), a.name.as_str(), a.namespace.as_str()),
            ("namespaces", "foo", "foo")
        );
        let a = attrs(Method::PUT, "/api/v1/namespaces/foo/finalize", &[]);
        assert_eq!(
            (a.resource.as_str(), a.subresource.as_str()),
            ("namespaces", "finalize")
        );
        for path in ["/api", "/api/v1", "/apis", "/apis/apps/v1", "/metrics", "/"] {
            let a = attrs(Method::GET, path, &[]);
            assert!(!a.resource_request, "{path}");
            assert_eq!(a.verb, "get");
        }
        let a = attrs(
            Method::GET,
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Aview",
            &[],
        );
        assert_eq!(a.name, "system:view");
    }

    #[test]
    fn forbidden_messages_match_upstream() {
        let mut a = attrs(Method::GET, "/api/v1/namespaces/tabs/configmaps", &[]);
        a.user.name = "system:serviceaccount:tabs:robot".into();
        let status = a.forbidden("").to_status();
        assert_eq!(
            status["message"],
            "configmaps is forbidden: User \"system:serviceaccount:tabs:robot\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"tabs\""
        );
        assert_eq!(status["details"], serde_json::json!({"kind": "configmaps"}));
        let mut a = attrs(
            Method::GET,
            "/apis/apps/v1/namespaces/x/deployments/d/scale",
            &[],
        );
        a.user.name = "bob".into();
        assert_eq!(
            a.forbidden("").message,
            "deployments.apps \"d\" is forbidden: User \"bob\" cannot get resource \"deployments/scale\" in API group \"apps\" in the namespace \"x\""
        );
        let mut a = attrs(Method::GET, "/api/v1/nodes", &[]);
        a.user.name = "bob".into();
        assert_eq!(
            a.forbidden("").message,
            "nodes is forbidden: User \"bob\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
        );
        let mut a = attrs(Method::GET, "/metrics", &[]);
        a.user.name = "x".into();
        assert_eq!(
            a.forbidden("").message,
            "forbidden: User \"x\" cannot get path \"/metrics\""
        );
    }
}
