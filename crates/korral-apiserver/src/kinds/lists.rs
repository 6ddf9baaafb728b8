//! How the lists of built-in kinds merge: one table read both by strategic merge patch (its
//! `patchStrategy`/`patchMergeKey`) and by server-side apply (its `listType`/`listMapKeys`).
//!
//! Lists of the shared structures are declared once here: object metadata (`finalizers`,
//! `ownerReferences`, at `metadata` and at every pod or job template's metadata), the pod spec
//! (containers, volumes, resource claims, ...) at the path the kind declares with
//! [`super::KindDef::pod_spec`], the schemas of CustomResourceDefinitions (`JSONSchemaProps`,
//! recursive) and `status.conditions`. Lists only one kind has (Service `spec.ports`,
//! ServiceAccount `secrets`, Node `spec.podCIDRs`, ...) are declared on that kind with
//! [`super::KindDef::lists`], naming the rules of this module where a structure recurs
//! ([`FINALIZERS`], [`CONDITIONS`], ...). Every other list is atomic: replaced by a patch,
//! owned whole by an apply.
//!
//! The table follows upstream's published OpenAPI (v1.36): `x-kubernetes-list-type` and
//! `x-kubernetes-list-map-keys` for apply, `x-kubernetes-patch-strategy` and
//! `x-kubernetes-patch-merge-key` for patches; where a list has no list type, apply follows its
//! patch strategy (a merge key makes it a map, a merged scalar list a set), as upstream's
//! conversion of the schema does. `retainKeys` marks maps (a volume's source), not lists: the
//! patch code honours a `$retainKeys` directive wherever it is sent.

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
    /// Items merged by `patch_key` for strategic merge patch only (`+patchStrategy=merge`
    /// with `+listType=atomic`, as Job `status.conditions`): an apply owns the list whole.
    PatchMap {
        /// `patchMergeKey`.
        patch_key: &'static str,
    },
    /// A set of scalars: a patch merges them, an apply owns each value.
    Set,
    /// A set of scalars for server-side apply only (`+listType=set` without
    /// `+patchStrategy=merge`): a strategic merge patch replaces the list.
    ApplySet,
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

/// A patch strategy a field declares beside (or instead of) merging as a list:
/// `+patchStrategy=retainKeys` or `replace`. Clients that compute strategic merge patches
/// (kubectl apply) read it from the published OpenAPI and send `$retainKeys` / `$patch:
/// replace` directives, which the patch code honours wherever they are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchDirective {
    /// `retainKeys`: a patch may list the members to keep; the others are cleared.
    RetainKeys,
    /// `replace`: a patch replaces the field whole.
    Replace,
}

/// A patch directive declared at a dotted path of a kind's objects (`spec.strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirectiveAt {
    /// The field's path, dotted, from the object's root.
    pub path: &'static str,
    /// Its strategy.
    pub directive: PatchDirective,
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

/// `ObjectMeta.finalizers`: a set.
pub(crate) const FINALIZERS: ListRule = ListRule::Set;

/// `ObjectMeta.ownerReferences`: keyed by `uid`.
pub(crate) const OWNER_REFERENCES: ListRule = ListRule::keyed(&["uid"]);

/// The `conditions` of most statuses: keyed by `type` for patches and applies.
pub(crate) const CONDITIONS: ListRule = ListRule::keyed(&["type"]);

/// The `conditions` of the statuses that declare only `+listType=map` (CRDs, CSRs,
/// ValidatingAdmissionPolicies, allocated devices): keyed by `type` for applies only.
pub(crate) const APPLY_CONDITIONS: ListRule = ListRule::ApplyMap { keys: &["type"] };

/// `ResourceRequirements.claims` (of containers, pods and their statuses): keyed by `name`
/// for applies only.
pub(crate) const RESOURCE_CLAIMS: ListRule = ListRule::ApplyMap { keys: &["name"] };

/// `JSONSchemaProps.x-kubernetes-validations`: keyed by `rule`.
const X_VALIDATIONS: ListRule = ListRule::keyed(&["rule"]);

/// The group whose one kind (CustomResourceDefinition) holds `JSONSchemaProps` at
/// [`SCHEMA_ROOT`] of each version.
const SCHEMA_GROUP: &str = "apiextensions.k8s.io";

/// Where a CustomResourceDefinition holds each version's schema.
const SCHEMA_ROOT: [&str; 4] = ["spec", "versions", "schema", "openAPIV3Schema"];

/// The lists of `ObjectMeta` (custom resources' metadata follows them too).
pub(crate) fn object_meta_list(field: &str) -> Option<ListRule> {
    match field {
        "finalizers" => Some(FINALIZERS),
        "ownerReferences" => Some(OWNER_REFERENCES),
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
        [c, "resources", "claims"] if is_container_list(c) => Some(RESOURCE_CLAIMS),
        [c, "restartPolicyRules", "exitCodes", "values"] if is_container_list(c) => {
            Some(ListRule::ApplySet)
        }
        ["volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates"] => {
            Some(ListRule::keyed(&["name"]))
        }
        [
            "volumes",
            "ephemeral",
            "volumeClaimTemplate",
            "metadata",
            field,
        ] => object_meta_list(field),
        ["resources", "claims"] => Some(RESOURCE_CLAIMS),
        ["hostAliases"] => Some(ListRule::keyed(&["ip"])),
        ["topologySpreadConstraints"] => Some(ListRule::Map {
            patch_key: "topologyKey",
            keys: &["topologyKey", "whenUnsatisfiable"],
        }),
        _ => None,
    }
}

/// The lists of a `JSONSchemaProps` (recursive: `properties.<name>`, `items`, `allOf`, ...),
/// by their path inside it. `default`, `example` and `enum` hold arbitrary JSON whose lists
/// are atomic, so the walk stops there.
fn json_schema_props_list(mut rest: &[&str]) -> Option<ListRule> {
    loop {
        rest = match rest {
            ["x-kubernetes-validations"] => return Some(X_VALIDATIONS),
            [
                "properties" | "patternProperties" | "definitions" | "dependencies",
                _,
                tail @ ..,
            ] => tail,
            [
                "items"
                | "additionalProperties"
                | "additionalItems"
                | "not"
                | "allOf"
                | "anyOf"
                | "oneOf",
                tail @ ..,
            ] => tail,
            _ => return None,
        };
    }
}

/// The patch directive of the field at `path` of `info`'s objects: the pod spec's
/// `volumes` and `resourceClaims` retain keys, other fields as their kind declares with
/// [`super::KindDef::patch_directives`].
pub(crate) fn directive(info: &ResourceInfo, path: &[&str]) -> Option<PatchDirective> {
    if let Some(spec) = info.pod_spec {
        let spec: Vec<&str> = spec.split('.').collect();
        if path.len() == spec.len() + 1
            && path.starts_with(&spec)
            && matches!(path[spec.len()], "volumes" | "resourceClaims")
        {
            return Some(PatchDirective::RetainKeys);
        }
    }
    let dotted = path.join(".");
    info.patch_directives
        .iter()
        .find(|d| d.path == dotted)
        .map(|d| d.directive)
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
    if info.group == SCHEMA_GROUP
        && p.starts_with(&SCHEMA_ROOT)
        && let Some(rule) = json_schema_props_list(&p[SCHEMA_ROOT.len()..])
    {
        return Some(rule);
    }
    let dotted = p.join(".");
    if let Some(at) = info.lists.iter().find(|l| l.path == dotted) {
        return Some(at.rule);
    }
    (dotted == "status.conditions").then_some(CONDITIONS)
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

    /// One row per structure or kind whose lists follow upstream's v1.36 OpenAPI: the list's
    /// path and the rule upstream publishes for it (`None`: atomic).
    #[test]
    fn lists_follow_upstreams_declarations() {
        let name = Some(ListRule::keyed(&["name"]));
        let apply_set = Some(ListRule::ApplySet);
        let apply_name = Some(ListRule::ApplyMap { keys: &["name"] });
        let apply_type = Some(ListRule::ApplyMap { keys: &["type"] });
        let schema = "spec.versions.schema.openAPIV3Schema";
        let tpl = "spec.template.spec";
        let job_tpl = "spec.jobTemplate.spec";
        let rows: Vec<(&str, String, Option<ListRule>)> = vec![
            // Pod spec: resource claims of containers and of the pod, restart rules' codes,
            // the metadata of ephemeral volumes' claim templates.
            (
                "pods",
                "spec.containers.resources.claims".into(),
                apply_name,
            ),
            (
                "deployments",
                format!("{tpl}.initContainers.resources.claims"),
                apply_name,
            ),
            ("pods", "spec.resources.claims".into(), apply_name),
            (
                "cronjobs",
                format!("{job_tpl}.template.spec.containers.restartPolicyRules.exitCodes.values"),
                apply_set,
            ),
            ("pods", "spec.containers.restartPolicyRules".into(), None),
            (
                "daemonsets",
                format!("{tpl}.volumes.ephemeral.volumeClaimTemplate.metadata.ownerReferences"),
                Some(OWNER_REFERENCES),
            ),
            (
                "pods",
                "spec.volumes.ephemeral.volumeClaimTemplate.metadata.finalizers".into(),
                Some(FINALIZERS),
            ),
            // Pod status.
            (
                "pods",
                "status.hostIPs".into(),
                Some(ListRule::PatchMap { patch_key: "ip" }),
            ),
            (
                "pods",
                "status.containerStatuses.volumeMounts".into(),
                Some(ListRule::keyed(&["mountPath"])),
            ),
            (
                "pods",
                "status.ephemeralContainerStatuses.allocatedResourcesStatus".into(),
                name,
            ),
            (
                "pods",
                "status.initContainerStatuses.allocatedResourcesStatus.resources".into(),
                Some(ListRule::ApplyMap {
                    keys: &["resourceID"],
                }),
            ),
            (
                "pods",
                "status.containerStatuses.resources.claims".into(),
                apply_name,
            ),
            ("pods", "status.resources.claims".into(), apply_name),
            (
                "pods",
                "status.nodeAllocatableResourceClaimStatuses.containers".into(),
                apply_set,
            ),
            ("componentstatuses", "conditions".into(), Some(CONDITIONS)),
            // StatefulSet volume claim templates are whole PVCs.
            (
                "statefulsets",
                "spec.volumeClaimTemplates.metadata.finalizers".into(),
                Some(FINALIZERS),
            ),
            (
                "statefulsets",
                "spec.volumeClaimTemplates.status.conditions".into(),
                Some(CONDITIONS),
            ),
            ("statefulsets", "spec.volumeClaimTemplates".into(), None),
            // Jobs.
            (
                "jobs",
                "status.conditions".into(),
                Some(ListRule::PatchMap { patch_key: "type" }),
            ),
            (
                "jobs",
                "spec.podFailurePolicy.rules.onExitCodes.values".into(),
                apply_set,
            ),
            (
                "jobs",
                "status.uncountedTerminatedPods.failed".into(),
                apply_set,
            ),
            (
                "cronjobs",
                format!("{job_tpl}.podFailurePolicy.rules.onExitCodes.values"),
                apply_set,
            ),
            // Conditions that are maps for applies only.
            (
                "certificatesigningrequests",
                "status.conditions".into(),
                apply_type,
            ),
            (
                "customresourcedefinitions",
                "status.conditions".into(),
                apply_type,
            ),
            (
                "validatingadmissionpolicies",
                "status.conditions".into(),
                apply_type,
            ),
            (
                "resourceclaims",
                "status.devices.conditions".into(),
                apply_type,
            ),
            // Admission.
            (
                "mutatingwebhookconfigurations",
                "webhooks.matchConditions".into(),
                name,
            ),
            ("validatingadmissionpolicies", "spec.variables".into(), name),
            (
                "mutatingadmissionpolicies",
                "spec.matchConditions".into(),
                name,
            ),
            ("mutatingadmissionpolicies", "spec.variables".into(), None),
            (
                "validatingadmissionpolicybindings",
                "spec.validationActions".into(),
                apply_set,
            ),
            // CRD schemas, at every depth; the JSON of defaults is not a schema.
            (
                "customresourcedefinitions",
                format!("{schema}.x-kubernetes-validations"),
                Some(ListRule::keyed(&["rule"])),
            ),
            (
                "customresourcedefinitions",
                format!("{schema}.properties.spec.properties.items.items.x-kubernetes-validations"),
                Some(ListRule::keyed(&["rule"])),
            ),
            (
                "customresourcedefinitions",
                format!("{schema}.properties.default.allOf.x-kubernetes-validations"),
                Some(ListRule::keyed(&["rule"])),
            ),
            (
                "customresourcedefinitions",
                format!("{schema}.properties.spec.default.x-kubernetes-validations"),
                None,
            ),
            (
                "customresourcedefinitions",
                format!("{schema}.required"),
                None,
            ),
            ("customresourcedefinitions", "spec.versions".into(), None),
            // Sets for applies only.
            ("endpointslices", "endpoints.addresses".into(), apply_set),
            (
                "flowschemas",
                "spec.rules.resourceRules.verbs".into(),
                apply_set,
            ),
            (
                "flowschemas",
                "spec.rules.nonResourceRules.nonResourceURLs".into(),
                apply_set,
            ),
            ("csidrivers", "spec.volumeLifecycleModes".into(), apply_set),
            // ResourceClaimTemplate describes a claim's metadata.
            (
                "resourceclaimtemplates",
                "spec.metadata.ownerReferences".into(),
                Some(OWNER_REFERENCES),
            ),
            // Atomic upstream, whatever they look like.
            ("nodes", "status.images".into(), None),
            ("services", "spec.ipFamilies".into(), None),
            ("networkpolicies", "spec.ingress".into(), None),
            ("clusterroles", "rules".into(), None),
        ];
        for (resource, path, want) in rows {
            let info = Registry::with_builtins()
                .all()
                .into_iter()
                .find(|i| i.resource == resource && !i.is_custom())
                .unwrap_or_else(|| panic!("{resource} is not built in"));
            let segments: Vec<String> = path.split('.').map(str::to_string).collect();
            assert_eq!(rule(&info, &segments), want, "{resource} {path}");
        }
    }
}
