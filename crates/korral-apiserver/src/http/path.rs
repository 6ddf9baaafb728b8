//! Parsing request paths into the resource they address.

/// What a request path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`.
    GroupVersion(String, String),
    /// A resource collection, object or subresource.
    Resource(ResourcePath),
}

/// A resource path: `/apis/<g>/<v>/namespaces/<ns>/<resource>/<name>/<sub>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    /// API group, `""` for core.
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace from the path.
    pub namespace: Option<String>,
    /// Plural resource name.
    pub resource: String,
    /// Object name.
    pub name: Option<String>,
    /// Subresource (`status`, `scale`).
    pub subresource: Option<String>,
}

fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a path; `None` when it is not an API path.
pub fn parse(path: &str) -> Option<Target> {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api"] => return Some(Target::CoreVersions),
        ["apis"] => return Some(Target::Groups),
        ["apis", group] => return Some(Target::Group(group.to_string())),
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    if rest.is_empty() {
        return Some(Target::GroupVersion(group.to_string(), version.to_string()));
    }
    let mk = |namespace: Option<&str>, resource: &str, name: Option<&str>, sub: Option<&str>| {
        Some(Target::Resource(ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            namespace: namespace.map(str::to_string),
            resource: resource.to_string(),
            name: name.map(str::to_string),
            subresource: sub.map(str::to_string),
        }))
    };
    match rest {
        ["namespaces", ns, resource, tail @ ..]
            if !(group.is_empty() && is_namespace_sub(resource) && tail.is_empty()) =>
        {
            match tail {
                [] => mk(Some(ns), resource, None, None),
                [name] => mk(Some(ns), resource, Some(name), None),
                [name, sub] => mk(Some(ns), resource, Some(name), Some(sub)),
                // A proxy request carries the path to reach after the subresource.
                [name, PROXY, _, ..] => mk(Some(ns), resource, Some(name), Some(PROXY)),
                _ => None,
            }
        }
        [resource] => mk(None, resource, None, None),
        [resource, name] => mk(None, resource, Some(name), None),
        [resource, name, sub] => mk(None, resource, Some(name), Some(sub)),
        [resource, name, PROXY, _, ..] => mk(None, resource, Some(name), Some(PROXY)),
        _ => None,
    }
}

/// The subresource whose requests continue with a path (`pods/<name>/proxy/<path>`).
const PROXY: &str = "proxy";

fn is_namespace_sub(s: &str) -> bool {
    matches!(s, "status" | "finalize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(path: &str) -> ResourcePath {
        match parse(path) {
            Some(Target::Resource(r)) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn parses_resource_paths() {
        let r = res("/api/v1/namespaces/default/configmaps/cm1");
        assert_eq!(
            (
                r.namespace.as_deref(),
                r.resource.as_str(),
                r.name.as_deref()
            ),
            (Some("default"), "configmaps", Some("cm1"))
        );
        let r = res("/apis/apps/v1/namespaces/ns/deployments/d/status");
        assert_eq!(
            (r.group.as_str(), r.subresource.as_deref()),
            ("apps", Some("status"))
        );
        let r = res("/api/v1/namespaces/foo");
        assert_eq!(
            (r.namespace, r.resource.as_str(), r.name.as_deref()),
            (None, "namespaces", Some("foo"))
        );
        let r = res("/api/v1/namespaces/foo/status");
        assert_eq!(
            (
                r.resource.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            ("namespaces", Some("foo"), Some("status"))
        );
        let r = res("/api/v1/pods");
        assert_eq!((r.namespace, r.name), (None, None));
        let r = res("/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Aadmin");
        assert_eq!(r.name.as_deref(), Some("system:admin"));
        assert_eq!(parse("/apis/apps"), Some(Target::Group("apps".into())));
        assert_eq!(
            parse("/api/v1"),
            Some(Target::GroupVersion(String::new(), "v1".into()))
        );
        assert_eq!(parse("/foo"), None);
    }
}
