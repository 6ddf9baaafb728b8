//! The structures and maps of built-in kinds that merge as a whole: upstream's
//! `+structType=atomic` types and `+mapType=atomic` fields (v1.36). Server-side apply owns
//! them whole (a manager owns `k:{"uid":…}` of an owner reference, not its members) and
//! replaces them whole; the OpenAPI publishes them as `x-kubernetes-map-type: atomic`.
//!
//! Facts about types, not paths: a kind meets them wherever its models use the types
//! ([`crate::openapi_builtin`] finds the paths by walking each kind's models).

/// The models upstream declares `+structType=atomic`.
pub(crate) const STRUCTS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "io.k8s.api.admissionregistration.v1.MatchResources",
    "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations",
    "io.k8s.api.admissionregistration.v1.ParamKind",
    "io.k8s.api.admissionregistration.v1.ParamRef",
    "io.k8s.api.admissionregistration.v1.Variable",
    "io.k8s.api.admissionregistration.v1beta1.MatchResources",
    "io.k8s.api.admissionregistration.v1beta1.NamedRuleWithOperations",
    "io.k8s.api.admissionregistration.v1beta1.ParamKind",
    "io.k8s.api.admissionregistration.v1beta1.ParamRef",
    "io.k8s.api.admissionregistration.v1beta1.Variable",
    "io.k8s.api.autoscaling.v1.CrossVersionObjectReference",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.EndpointAddress",
    "io.k8s.api.core.v1.EndpointPort",
    "io.k8s.api.core.v1.FileKeySelector",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.NodeSelectorTerm",
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.ResourceFieldSelector",
    "io.k8s.api.core.v1.ScopeSelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.SecretReference",
    "io.k8s.api.core.v1.TopologySelectorTerm",
    "io.k8s.api.core.v1.TypedLocalObjectReference",
    "io.k8s.api.discovery.v1.EndpointPort",
    "io.k8s.api.networking.v1.ServiceBackendPort",
    "io.k8s.api.rbac.v1.RoleRef",
    "io.k8s.api.rbac.v1.Subject",
];

/// The map fields upstream declares `+mapType=atomic`: `(model, property)`.
pub(crate) const MAPS: &[(&str, &str)] = &[
    ("io.k8s.api.core.v1.PodSpec", "nodeSelector"),
    ("io.k8s.api.core.v1.ReplicationControllerSpec", "selector"),
    ("io.k8s.api.core.v1.ServiceSpec", "selector"),
    ("io.k8s.api.node.v1.Scheduling", "nodeSelector"),
];

/// Whether `field` of object metadata holds atomic structures (the items of
/// `ownerReferences`), for kinds whose metadata is not walked (custom resources).
pub(crate) fn in_object_meta(field: &str) -> bool {
    field == "ownerReferences"
}
