//! How the lists of built-in kinds merge: one table read both by strategic merge patch (its
//! `patchStrategy`/`patchMergeKey`) and by server-side apply (its `listType`/`listMapKeys`).
//!
//! Lists of the shared structures are declared once here: object metadata (`finalizers`,
//! `ownerReferences`, at `metadata` and at every pod or job template's metadata), the pod spec
//! (containers, volumes, ...) at the path the kind declares with [`super::KindDef::pod_spec`],
//! and `status.conditions`. Lists only one kind has (Service `spec.ports`, ServiceAccount
//! `secrets`, Node `spec.podCIDRs`, ...) are declared on that kind with
//! [`super::KindDef::lists`]. Every other list is atomic: replaced by a patch, owned whole by
//! an apply.

use crate::registry::ResourceInfo;

/// How one list merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListRule {
    /// Items identified by keys: a strategic merge patch merges by `patch_key`, server-side
    /// apply by `keys` (upstream's `listMapKeys`, which may name more fields).
    Map {
        /// `patchMergeKey`.
        patch_key: &'static str,
        /// `listMapKeys`.
        keys: &'static [&'static str],
    },
    /// Items identified by keys for server-side apply only (`+listType=map` without
    /// `+patchStrategy=merge`): a strategic merge patch replaces the list.
    ApplyMap {
        /// `listMapKeys`; an item may omit some (not all) of them.
        keys: &'static [&'static str],
    },
    /// A set of scalars: a patch merges them, an apply owns each value.
    Set,
    /// Replaced whole by a patch and owned whole by an apply (what lists are by default;
    /// declared where a kind wants it said).
    Atomic,
}

/// A list declared at a dotted path of a kind's objects (`spec.ports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListAt {
    /// The list's path, dotted, from the object's root.
    pub path: &'static str,
    /// How it merges.
    pub rule: ListRule,
}

impl ListRule {
    /// Keyed by the same single field for patches and applies.
    pub(crate) const fn keyed(key: &'static [&'static str; 1]) -> Self {
        ListRule::Map {
            patch_key: key[0],
            keys: key,
        }
    }
}

/// The lists of `ObjectMeta` (custom resources' metadata follows them too).
pub(crate) fn object_meta_list(field: &str) -> Option<ListRule> {
    match field {
        "finalizers" => Some(ListRule::Set),
        "ownerReferences" => Some(ListRule::keyed(&["uid"])),
        _ => None,
    }
}

/// The lists of a `PodSpec`, by their path inside it.
fn pod_spec_list(rest: &[&str]) -> Option<ListRule> {
    let is_container_list =
        |s: &str| matches!(s, "containers" | "initContainers" | "ephemeralContainers");
    match rest {
        [c] if is_container_list(c) => Some(ListRule::keyed(&["name"])),
        [c, field] if is_container_list(c) => match *field {
            "ports" => Some(ListRule::Map {
                patch_key: "containerPort",
                keys: &["containerPort", "protocol"],
            }),
            "env" => Some(ListRule::keyed(&["name"])),
            "volumeMounts" => Some(ListRule::keyed(&["mountPath"])),
            "volumeDevices" => Some(ListRule::keyed(&["devicePath"])),
            "resizePolicy" => Some(ListRule::Atomic),
            _ => None,
        },
        ["volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"] => {
            Some(ListRule::keyed(&["name"]))
        }
        ["hostAliases"] => Some(ListRule::keyed(&["ip"])),
        ["topologySpreadConstraints"] => Some(ListRule::Map {
            patch_key: "topologyKey",
            keys: &["topologyKey", "whenUnsatisfiable"],
        }),
        _ => None,
    }
}

/// How the list at `path` of `info`'s objects merges; `None` for an atomic list.
pub(crate) fn rule(info: &ResourceInfo, path: &[String]) -> Option<ListRule> {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    let (last, parent) = p.split_last()?;
    // Object metadata: the object's own and every template's.
    let in_meta = parent == ["metadata"]
        || (parent.last() == Some(&"metadata")
            && matches!(
                parent.len().checked_sub(2).map(|i| parent[i]),
                Some("template" | "jobTemplate")
            )
            && info
                .pod_spec
                .is_some_and(|spec| spec.starts_with(&parent[..parent.len() - 1].join("."))));
    if in_meta && let Some(rule) = object_meta_list(last) {
        return Some(rule);
    }
    if let Some(spec) = info.pod_spec {
        let spec: Vec<&str> = spec.split('.').collect();
        if p.starts_with(&spec)
            && let Some(rule) = pod_spec_list(&p[spec.len()..])
        {
            return Some(rule);
        }
    }
    let dotted = p.join(".");
    if let Some(at) = info.lists.iter().find(|l| l.path == dotted) {
        return Some(at.rule);
    }
    (dotted == "status.conditions").then_some(ListRule::keyed(&["type"]))
}

/// The built-in resource of `kind` (its first served version), for tests of the merge code.
#[cfg(test)]
pub(crate) fn test_info(kind: &str) -> &'static ResourceInfo {
    let registry = crate::registry::Registry::with_builtins();
    let info = registry
        .all()
        .into_iter()
        .find(|i| i.kind == kind && !i.is_custom())
        .unwrap_or_else(|| panic!("{kind} is not built in"));
    Box::leak(Box::new((*info).clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    fn at(group: &str, version: &str, resource: &str, path: &str) -> Option<ListRule> {
        let registry = Registry::with_builtins();
        let info = registry.get(group, version, resource).expect("served");
        let path: Vec<String> = path.split('.').map(str::to_string).collect();
        rule(&info, &path)
    }

    #[test]
    fn shared_structures_are_found_where_each_kind_keeps_them() {
        let name = Some(ListRule::keyed(&["name"]));
        assert_eq!(at("", "v1", "pods", "spec.containers"), name);
        assert_eq!(
            at("apps", "v1", "deployments", "spec.template.spec.containers"),
            name
        );
        assert_eq!(
            at(
                "batch",
                "v1",
                "cronjobs",
                "spec.jobTemplate.spec.template.spec.volumes"
            ),
            name
        );
        assert_eq!(
            at("", "v1", "podtemplates", "template.spec.initContainers"),
            name
        );
        // A pod spec path of one kind means nothing in another.
        assert_eq!(at("", "v1", "configmaps", "spec.containers"), None);
        assert_eq!(
            at(
                "apps",
                "v1",
                "deployments",
                "spec.template.spec.containers.ports"
            ),
            Some(ListRule::Map {
                patch_key: "containerPort",
                keys: &["containerPort", "protocol"]
            })
        );
        assert_eq!(at("", "v1", "pods", "spec.containers.args"), None);
        assert_eq!(
            at("", "v1", "configmaps", "metadata.finalizers"),
            Some(ListRule::Set)
        );
        assert_eq!(
            at(
                "batch",
                "v1",
                "cronjobs",
                "spec.jobTemplate.metadata.ownerReferences"
            ),
            Some(ListRule::keyed(&["uid"]))
        );
        assert_eq!(
            at(
                "apps",
                "v1",
                "deployments",
                "spec.template.metadata.finalizers"
            ),
            Some(ListRule::Set)
        );
        assert_eq!(at("", "v1", "configmaps", "spec.metadata.finalizers"), None);
        assert_eq!(
            at("apps", "v1", "deployments", "status.conditions"),
            Some(ListRule::keyed(&["type"]))
        );
    }

    #[test]
    fn lists_of_one_kind_are_declared_on_it() {
        assert_eq!(
            at("", "v1", "services", "spec.ports"),
            Some(ListRule::Map {
                patch_key: "port",
                keys: &["port", "protocol"]
            })
        );
        assert_eq!(at("apps", "v1", "deployments", "spec.ports"), None);
        assert_eq!(
            at("", "v1", "serviceaccounts", "secrets"),
            Some(ListRule::keyed(&["name"]))
        );
        assert_eq!(at("", "v1", "nodes", "spec.podCIDRs"), Some(ListRule::Set));
        assert_eq!(
            at("", "v1", "pods", "status.podIPs"),
            Some(ListRule::keyed(&["ip"]))
        );
        let name = Some(ListRule::keyed(&["name"]));
        for resource in [
            "validatingwebhookconfigurations",
            "mutatingwebhookconfigurations",
        ] {
            assert_eq!(
                at("admissionregistration.k8s.io", "v1", resource, "webhooks"),
                name
            );
        }
        assert_eq!(at("storage.k8s.io", "v1", "csinodes", "spec.drivers"), name);
        assert_eq!(
            at(
                "resource.k8s.io",
                "v1",
                "resourceclaims",
                "status.reservedFor"
            ),
            Some(ListRule::keyed(&["uid"]))
        );
    }
}
