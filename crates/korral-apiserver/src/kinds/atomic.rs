//! The structures, maps and lists of built-in kinds that merge as a whole: upstream's
//! `+structType=atomic` types and `+mapType=atomic` and `+listType=atomic` fields (v1.36). Server-side apply owns
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

/// The list fields upstream declares `+listType=atomic` explicitly, by model (fields of an
/// inlined Go struct under the model that inlines it). Server-side apply treats every list
/// without a rule as atomic already; these are the ones upstream's OpenAPI also publishes as
/// `x-kubernetes-list-type: atomic`.
pub(crate) const LISTS: &[(&str, &[&str])] = &[
    (
        "io.k8s.api.admissionregistration.v1.MatchResources",
        &["excludeResourceRules", "resourceRules"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.MutatingAdmissionPolicySpec",
        &["mutations", "variables"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        &["admissionReviewVersions", "rules"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations",
        &["apiGroups", "apiVersions", "resourceNames", "resources"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.RuleWithOperations",
        &["apiGroups", "apiVersions", "operations", "resources"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.TypeChecking",
        &["expressionWarnings"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec",
        &["auditAnnotations", "validations"],
    ),
    (
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        &["admissionReviewVersions", "rules"],
    ),
    (
        "io.k8s.api.apps.v1.StatefulSetSpec",
        &["volumeClaimTemplates"],
    ),
    (
        "io.k8s.api.authentication.v1.TokenReviewSpec",
        &["audiences"],
    ),
    (
        "io.k8s.api.authentication.v1.TokenReviewStatus",
        &["audiences"],
    ),
    ("io.k8s.api.authentication.v1.UserInfo", &["groups"]),
    (
        "io.k8s.api.authorization.v1.FieldSelectorAttributes",
        &["requirements"],
    ),
    (
        "io.k8s.api.authorization.v1.LabelSelectorAttributes",
        &["requirements"],
    ),
    (
        "io.k8s.api.authorization.v1.NonResourceRule",
        &["nonResourceURLs", "verbs"],
    ),
    (
        "io.k8s.api.authorization.v1.ResourceRule",
        &["apiGroups", "resourceNames", "resources", "verbs"],
    ),
    (
        "io.k8s.api.authorization.v1.SubjectAccessReviewSpec",
        &["groups"],
    ),
    (
        "io.k8s.api.authorization.v1.SubjectRulesReviewStatus",
        &["nonResourceRules", "resourceRules"],
    ),
    ("io.k8s.api.autoscaling.v2.HPAScalingRules", &["policies"]),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
        &["metrics"],
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
        &["currentMetrics"],
    ),
    ("io.k8s.api.batch.v1.CronJobStatus", &["active"]),
    ("io.k8s.api.batch.v1.JobStatus", &["conditions"]),
    ("io.k8s.api.batch.v1.PodFailurePolicy", &["rules"]),
    (
        "io.k8s.api.batch.v1.PodFailurePolicyRule",
        &["onPodConditions"],
    ),
    ("io.k8s.api.batch.v1.SuccessPolicy", &["rules"]),
    (
        "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
        &["groups", "usages"],
    ),
    ("io.k8s.api.core.v1.Capabilities", &["add", "drop"]),
    (
        "io.k8s.api.core.v1.CephFSPersistentVolumeSource",
        &["monitors"],
    ),
    ("io.k8s.api.core.v1.CephFSVolumeSource", &["monitors"]),
    ("io.k8s.api.core.v1.ConfigMapProjection", &["items"]),
    ("io.k8s.api.core.v1.ConfigMapVolumeSource", &["items"]),
    (
        "io.k8s.api.core.v1.Container",
        &[
            "args",
            "command",
            "envFrom",
            "resizePolicy",
            "restartPolicyRules",
        ],
    ),
    ("io.k8s.api.core.v1.ContainerImage", &["names"]),
    ("io.k8s.api.core.v1.DownwardAPIProjection", &["items"]),
    ("io.k8s.api.core.v1.DownwardAPIVolumeSource", &["items"]),
    (
        "io.k8s.api.core.v1.EndpointSubset",
        &["addresses", "notReadyAddresses", "ports"],
    ),
    ("io.k8s.api.core.v1.Endpoints", &["subsets"]),
    (
        "io.k8s.api.core.v1.EphemeralContainer",
        &[
            "args",
            "command",
            "envFrom",
            "resizePolicy",
            "restartPolicyRules",
        ],
    ),
    ("io.k8s.api.core.v1.ExecAction", &["command"]),
    (
        "io.k8s.api.core.v1.FCVolumeSource",
        &["targetWWNs", "wwids"],
    ),
    ("io.k8s.api.core.v1.HTTPGetAction", &["httpHeaders"]),
    ("io.k8s.api.core.v1.HostAlias", &["hostnames"]),
    (
        "io.k8s.api.core.v1.ISCSIPersistentVolumeSource",
        &["portals"],
    ),
    ("io.k8s.api.core.v1.ISCSIVolumeSource", &["portals"]),
    ("io.k8s.api.core.v1.LimitRangeSpec", &["limits"]),
    (
        "io.k8s.api.core.v1.LinuxContainerUser",
        &["supplementalGroups"],
    ),
    ("io.k8s.api.core.v1.LoadBalancerIngress", &["ports"]),
    ("io.k8s.api.core.v1.LoadBalancerStatus", &["ingress"]),
    ("io.k8s.api.core.v1.NamespaceSpec", &["finalizers"]),
    (
        "io.k8s.api.core.v1.NodeAffinity",
        &["preferredDuringSchedulingIgnoredDuringExecution"],
    ),
    ("io.k8s.api.core.v1.NodeSelector", &["nodeSelectorTerms"]),
    ("io.k8s.api.core.v1.NodeSelectorRequirement", &["values"]),
    (
        "io.k8s.api.core.v1.NodeSelectorTerm",
        &["matchExpressions", "matchFields"],
    ),
    ("io.k8s.api.core.v1.NodeSpec", &["taints"]),
    (
        "io.k8s.api.core.v1.NodeStatus",
        &[
            "declaredFeatures",
            "images",
            "runtimeHandlers",
            "volumesAttached",
            "volumesInUse",
        ],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
        &["accessModes"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        &["accessModes"],
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeSpec",
        &["accessModes", "mountOptions"],
    ),
    (
        "io.k8s.api.core.v1.PodAffinity",
        &[
            "preferredDuringSchedulingIgnoredDuringExecution",
            "requiredDuringSchedulingIgnoredDuringExecution",
        ],
    ),
    (
        "io.k8s.api.core.v1.PodAffinityTerm",
        &["matchLabelKeys", "mismatchLabelKeys", "namespaces"],
    ),
    (
        "io.k8s.api.core.v1.PodAntiAffinity",
        &[
            "preferredDuringSchedulingIgnoredDuringExecution",
            "requiredDuringSchedulingIgnoredDuringExecution",
        ],
    ),
    (
        "io.k8s.api.core.v1.PodDNSConfig",
        &["nameservers", "options", "searches"],
    ),
    (
        "io.k8s.api.core.v1.PodExtendedResourceClaimStatus",
        &["requestMappings"],
    ),
    (
        "io.k8s.api.core.v1.PodSecurityContext",
        &["supplementalGroups", "sysctls"],
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        &["readinessGates", "tolerations"],
    ),
    (
        "io.k8s.api.core.v1.PodStatus",
        &[
            "containerStatuses",
            "ephemeralContainerStatuses",
            "hostIPs",
            "initContainerStatuses",
            "nodeAllocatableResourceClaimStatuses",
        ],
    ),
    ("io.k8s.api.core.v1.ProjectedVolumeSource", &["sources"]),
    (
        "io.k8s.api.core.v1.RBDPersistentVolumeSource",
        &["monitors"],
    ),
    ("io.k8s.api.core.v1.RBDVolumeSource", &["monitors"]),
    ("io.k8s.api.core.v1.ResourceQuotaSpec", &["scopes"]),
    ("io.k8s.api.core.v1.ScopeSelector", &["matchExpressions"]),
    (
        "io.k8s.api.core.v1.ScopedResourceSelectorRequirement",
        &["values"],
    ),
    ("io.k8s.api.core.v1.SecretProjection", &["items"]),
    ("io.k8s.api.core.v1.SecretVolumeSource", &["items"]),
    ("io.k8s.api.core.v1.ServiceAccount", &["imagePullSecrets"]),
    (
        "io.k8s.api.core.v1.ServiceSpec",
        &[
            "clusterIPs",
            "externalIPs",
            "ipFamilies",
            "loadBalancerSourceRanges",
        ],
    ),
    (
        "io.k8s.api.core.v1.TopologySelectorLabelRequirement",
        &["values"],
    ),
    (
        "io.k8s.api.core.v1.TopologySelectorTerm",
        &["matchLabelExpressions"],
    ),
    (
        "io.k8s.api.core.v1.TopologySpreadConstraint",
        &["matchLabelKeys"],
    ),
    (
        "io.k8s.api.discovery.v1.EndpointHints",
        &["forNodes", "forZones"],
    ),
    (
        "io.k8s.api.discovery.v1.EndpointSlice",
        &["endpoints", "ports"],
    ),
    ("io.k8s.api.flowcontrol.v1.FlowSchemaSpec", &["rules"]),
    (
        "io.k8s.api.flowcontrol.v1.PolicyRulesWithSubjects",
        &["nonResourceRules", "resourceRules", "subjects"],
    ),
    ("io.k8s.api.networking.v1.HTTPIngressRuleValue", &["paths"]),
    ("io.k8s.api.networking.v1.IPBlock", &["except"]),
    (
        "io.k8s.api.networking.v1.IngressLoadBalancerIngress",
        &["ports"],
    ),
    (
        "io.k8s.api.networking.v1.IngressLoadBalancerStatus",
        &["ingress"],
    ),
    ("io.k8s.api.networking.v1.IngressSpec", &["rules", "tls"]),
    ("io.k8s.api.networking.v1.IngressTLS", &["hosts"]),
    (
        "io.k8s.api.networking.v1.NetworkPolicyEgressRule",
        &["ports", "to"],
    ),
    (
        "io.k8s.api.networking.v1.NetworkPolicyIngressRule",
        &["from", "ports"],
    ),
    (
        "io.k8s.api.networking.v1.NetworkPolicySpec",
        &["egress", "ingress", "policyTypes"],
    ),
    ("io.k8s.api.networking.v1.ServiceCIDRSpec", &["cidrs"]),
    ("io.k8s.api.node.v1.Scheduling", &["tolerations"]),
    (
        "io.k8s.api.rbac.v1.AggregationRule",
        &["clusterRoleSelectors"],
    ),
    ("io.k8s.api.rbac.v1.ClusterRole", &["rules"]),
    ("io.k8s.api.rbac.v1.ClusterRoleBinding", &["subjects"]),
    (
        "io.k8s.api.rbac.v1.PolicyRule",
        &[
            "apiGroups",
            "nonResourceURLs",
            "resourceNames",
            "resources",
            "verbs",
        ],
    ),
    ("io.k8s.api.rbac.v1.Role", &["rules"]),
    ("io.k8s.api.rbac.v1.RoleBinding", &["subjects"]),
    (
        "io.k8s.api.resource.v1.CapacityRequestPolicy",
        &["validValues"],
    ),
    (
        "io.k8s.api.resource.v1.Device",
        &[
            "bindingConditions",
            "bindingFailureConditions",
            "consumesCounters",
            "taints",
        ],
    ),
    (
        "io.k8s.api.resource.v1.DeviceAllocationConfiguration",
        &["requests"],
    ),
    (
        "io.k8s.api.resource.v1.DeviceAllocationResult",
        &["config", "results"],
    ),
    (
        "io.k8s.api.resource.v1.DeviceAttribute",
        &["bools", "ints", "strings", "versions"],
    ),
    (
        "io.k8s.api.resource.v1.DeviceClaim",
        &["config", "constraints", "requests"],
    ),
    (
        "io.k8s.api.resource.v1.DeviceClaimConfiguration",
        &["requests"],
    ),
    (
        "io.k8s.api.resource.v1.DeviceClassSpec",
        &["config", "selectors"],
    ),
    ("io.k8s.api.resource.v1.DeviceConstraint", &["requests"]),
    ("io.k8s.api.resource.v1.DeviceRequest", &["firstAvailable"]),
    (
        "io.k8s.api.resource.v1.DeviceRequestAllocationResult",
        &[
            "bindingConditions",
            "bindingFailureConditions",
            "tolerations",
        ],
    ),
    (
        "io.k8s.api.resource.v1.DeviceSubRequest",
        &["selectors", "tolerations"],
    ),
    (
        "io.k8s.api.resource.v1.ExactDeviceRequest",
        &["selectors", "tolerations"],
    ),
    ("io.k8s.api.resource.v1.NetworkDeviceData", &["ips"]),
    (
        "io.k8s.api.resource.v1.ResourceSliceSpec",
        &["devices", "sharedCounters"],
    ),
    ("io.k8s.api.storage.v1.CSIDriverSpec", &["tokenRequests"]),
    ("io.k8s.api.storage.v1.CSINodeDriver", &["topologyKeys"]),
    (
        "io.k8s.api.storage.v1.StorageClass",
        &["allowedTopologies", "mountOptions"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames",
        &["categories", "shortNames"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec",
        &["versions"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        &["storedVersions"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion",
        &["additionalPrinterColumns", "selectableFields"],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        &[
            "allOf",
            "anyOf",
            "enum",
            "oneOf",
            "required",
            "x-kubernetes-list-map-keys",
        ],
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.WebhookConversion",
        &["conversionReviewVersions"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        &["dryRun"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement",
        &["values"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
        &["matchExpressions"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
        &["values"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        &["managedFields"],
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails",
        &["causes"],
    ),
];

/// Whether upstream declares `model.property` an atomic list.
pub(crate) fn declared_atomic_list(model: &str, property: &str) -> bool {
    LISTS
        .iter()
        .any(|(m, properties)| *m == model && properties.contains(&property))
}

/// Whether `field` of object metadata holds atomic structures (the items of
/// `ownerReferences`), for kinds whose metadata is not walked (custom resources).
pub(crate) fn in_object_meta(field: &str) -> bool {
    field == "ownerReferences"
}
