//! The enumerated string fields of the built-in API types: upstream's Go types marked `+enum`
//! (`core/v1.RestartPolicy`, `apps/v1.DeploymentStrategyType`, …), their values with the text
//! upstream's OpenAPI prints beside each, and where in the models they sit.
//!
//! The OpenAPI documents publish them (`enum` and "Possible enum values" in the description, as
//! kube-apiserver v1.36 does, so `kubectl explain pod.spec.restartPolicy` lists them), and the
//! strategies' validation reads the same constants for their `Unsupported value` causes. Facts
//! from `k8s.io/api` v0.36: the values in declaration order, each with its constant's doc
//! comment as upstream renders it (the constant's name dropped, whitespace collapsed).

use serde_json::{Value, json};

use crate::error::Cause;

/// The values of one `+enum` type in upstream's declaration order, each with its description
/// (empty when the constant has no doc comment).
#[derive(Debug)]
pub(crate) struct Enum(&'static [(&'static str, &'static str)]);

impl Enum {
    /// The values, in declaration order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().map(|(value, _)| *value)
    }

    /// The values with their descriptions, in declaration order.
    pub(crate) fn described(&self) -> &'static [(&'static str, &'static str)] {
        self.0
    }

    /// Whether `value` is one of the values.
    pub(crate) fn contains(&self, value: &str) -> bool {
        self.values().any(|v| v == value)
    }

    /// The values sorted (the order of upstream's `sets.List`).
    pub(crate) fn sorted(&self) -> Vec<&'static str> {
        let mut values: Vec<&'static str> = self.values().collect();
        values.sort_unstable();
        values
    }

    /// Upstream's `field.NotSupported` for `value` at `field`, listing the values in `order`.
    pub(crate) fn not_supported(
        &self,
        field: impl Into<String>,
        value: &Value,
        order: Order,
    ) -> Cause {
        let listed: Vec<&str> = match order {
            Order::Declared => self.values().collect(),
            Order::Sorted => self.sorted(),
        };
        let supported: Vec<Value> = listed.into_iter().map(|v| json!(v)).collect();
        Cause::not_supported(field, value, &supported)
    }
}

/// The order in which a validation message lists an enum's values, as upstream's validation
/// of that field does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// As the constants are declared (upstream spells them out in a slice).
    Declared,
    /// Sorted (upstream lists a set).
    Sorted,
}

/// Where in a model's schema an enum applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// The property itself is of the enum type.
    Field,
    /// The property is a list of it (`accessModes`): the enum is on `items`.
    Items,
    /// The property is a map to it: the enum is on `additionalProperties`.
    Values,
}

/// One property of an upstream model (named without its `io.k8s.api.` prefix) whose type is an
/// enum.
#[derive(Debug)]
pub(crate) struct Field(&'static str, &'static str, At, &'static Enum);

impl Field {
    /// The model's full name (`io.k8s.api.core.v1.PodSpec`).
    pub(crate) fn model(&self) -> String {
        format!("io.k8s.api.{}", self.0)
    }

    /// The property (`restartPolicy`).
    pub(crate) fn property(&self) -> &'static str {
        self.1
    }

    /// Where in the property's schema the values go.
    pub(crate) fn at(&self) -> At {
        self.2
    }

    /// The enum.
    pub(crate) fn values(&self) -> &'static Enum {
        self.3
    }
}

/// Every enumerated property of the built-in models.
pub(crate) fn fields() -> &'static [Field] {
    FIELDS
}

// core/v1

/// `core/v1.AppArmorProfileType`.
pub(crate) const APP_ARMOR_PROFILE_TYPE: Enum = Enum(&[
    (
        "Unconfined",
        "indicates that no AppArmor profile should be enforced.",
    ),
    (
        "RuntimeDefault",
        "indicates that the container runtime's default AppArmor profile should be used.",
    ),
    (
        "Localhost",
        "indicates that a profile pre-loaded on the node should be used.",
    ),
]);

/// `core/v1.AzureDataDiskCachingMode`.
pub(crate) const AZURE_DATA_DISK_CACHING_MODE: Enum =
    Enum(&[("None", ""), ("ReadOnly", ""), ("ReadWrite", "")]);

/// `core/v1.AzureDataDiskKind`.
pub(crate) const AZURE_DATA_DISK_KIND: Enum =
    Enum(&[("Shared", ""), ("Dedicated", ""), ("Managed", "")]);

/// `core/v1.ClaimResourceStatus`.
pub(crate) const CLAIM_RESOURCE_STATUS: Enum = Enum(&[
    (
        "ControllerResizeInProgress",
        "State set when resize controller starts resizing the volume in control-plane.",
    ),
    (
        "ControllerResizeInfeasible",
        "State set when resize has failed in resize controller with a terminal unrecoverable error. Transient errors such as timeout should not set this status and should leave allocatedResourceStatus unmodified, so as resize controller can resume the volume expansion.",
    ),
    (
        "NodeResizePending",
        "State set when resize controller has finished resizing the volume but further resizing of volume is needed on the node.",
    ),
    (
        "NodeResizeInProgress",
        "State set when kubelet starts resizing the volume.",
    ),
    (
        "NodeResizeInfeasible",
        "State set when resizing has failed in kubelet with a terminal unrecoverable error. Transient errors shouldn't set this status",
    ),
]);

/// `core/v1.DNSPolicy`.
pub(crate) const DNS_POLICY: Enum = Enum(&[
    (
        "ClusterFirstWithHostNet",
        "indicates that the pod should use cluster DNS first, if it is available, then fall back on the default (as determined by kubelet) DNS settings.",
    ),
    (
        "ClusterFirst",
        "indicates that the pod should use cluster DNS first unless hostNetwork is true, if it is available, then fall back on the default (as determined by kubelet) DNS settings.",
    ),
    (
        "Default",
        "indicates that the pod should use the default (as determined by kubelet) DNS settings.",
    ),
    (
        "None",
        "indicates that the pod should use empty DNS settings. DNS parameters such as nameservers and search paths should be defined via DNSConfig.",
    ),
]);

/// `core/v1.HostPathType`.
pub(crate) const HOST_PATH_TYPE: Enum = Enum(&[
    ("", "For backwards compatible, leave it empty if unset"),
    (
        "DirectoryOrCreate",
        "If nothing exists at the given path, an empty directory will be created there as needed with file mode 0755, having the same group and ownership with Kubelet.",
    ),
    ("Directory", "A directory must exist at the given path"),
    (
        "FileOrCreate",
        "If nothing exists at the given path, an empty file will be created there as needed with file mode 0644, having the same group and ownership with Kubelet.",
    ),
    ("File", "A file must exist at the given path"),
    ("Socket", "A UNIX socket must exist at the given path"),
    (
        "CharDevice",
        "A character device must exist at the given path",
    ),
    ("BlockDevice", "A block device must exist at the given path"),
]);

/// `core/v1.IPFamily`.
pub(crate) const IP_FAMILY: Enum = Enum(&[
    ("IPv4", "indicates that this IP is IPv4 protocol"),
    ("IPv6", "indicates that this IP is IPv6 protocol"),
    ("", "indicates that this IP is unknown protocol"),
]);

/// `core/v1.IPFamilyPolicy`.
pub(crate) const IP_FAMILY_POLICY: Enum = Enum(&[
    (
        "SingleStack",
        "indicates that this service is required to have a single IPFamily. The IPFamily assigned is based on the default IPFamily used by the cluster or as identified by service.spec.ipFamilies field",
    ),
    (
        "PreferDualStack",
        "indicates that this service prefers dual-stack when the cluster is configured for dual-stack. If the cluster is not configured for dual-stack the service will be assigned a single IPFamily. If the IPFamily is not set in service.spec.ipFamilies then the service will be assigned the default IPFamily configured on the cluster",
    ),
    (
        "RequireDualStack",
        "indicates that this service requires dual-stack. Using IPFamilyPolicyRequireDualStack on a single stack cluster will result in validation errors. The IPFamilies (and their order) assigned to this service is based on service.spec.ipFamilies. If service.spec.ipFamilies was not provided then it will be assigned according to how they are configured on the cluster. If service.spec.ipFamilies has only one entry then the alternative IPFamily will be added by apiserver",
    ),
]);

/// `core/v1.MountPropagationMode`.
pub(crate) const MOUNT_PROPAGATION_MODE: Enum = Enum(&[
    (
        "None",
        "means that the volume in a container will not receive new mounts from the host or other containers, and filesystems mounted inside the container won't be propagated to the host or other containers. Note that this mode corresponds to \"private\" in Linux terminology.",
    ),
    (
        "HostToContainer",
        "means that the volume in a container will receive new mounts from the host or other containers, but filesystems mounted inside the container won't be propagated to the host or other containers. Note that this mode is recursively applied to all mounts in the volume (\"rslave\" in Linux terminology).",
    ),
    (
        "Bidirectional",
        "means that the volume in a container will receive new mounts from the host or other containers, and its own mounts will be propagated from the container to the host or other containers. Note that this mode is recursively applied to all mounts in the volume (\"rshared\" in Linux terminology).",
    ),
]);

/// `core/v1.NamespacePhase`.
pub(crate) const NAMESPACE_PHASE: Enum = Enum(&[
    (
        "Active",
        "means the namespace is available for use in the system",
    ),
    (
        "Terminating",
        "means the namespace is undergoing graceful termination",
    ),
]);

/// `core/v1.NodeInclusionPolicy`.
pub(crate) const NODE_INCLUSION_POLICY: Enum = Enum(&[
    (
        "Ignore",
        "means ignore this scheduling directive when calculating pod topology spread skew.",
    ),
    (
        "Honor",
        "means use this scheduling directive when calculating pod topology spread skew.",
    ),
]);

/// `core/v1.NodePhase`.
pub(crate) const NODE_PHASE: Enum = Enum(&[
    (
        "Pending",
        "means the node has been created/added by the system, but not configured.",
    ),
    (
        "Running",
        "means the node has been configured and has Kubernetes components running.",
    ),
    (
        "Terminated",
        "means the node has been removed from the cluster.",
    ),
]);

/// `core/v1.NodeSelectorOperator`.
pub(crate) const NODE_SELECTOR_OPERATOR: Enum = Enum(&[
    ("In", ""),
    ("NotIn", ""),
    ("Exists", ""),
    ("DoesNotExist", ""),
    ("Gt", ""),
    ("Lt", ""),
]);

/// `core/v1.PersistentVolumeAccessMode`.
pub(crate) const PERSISTENT_VOLUME_ACCESS_MODE: Enum = Enum(&[
    (
        "ReadWriteOnce",
        "can be mounted in read/write mode to exactly 1 host",
    ),
    (
        "ReadOnlyMany",
        "can be mounted in read-only mode to many hosts",
    ),
    (
        "ReadWriteMany",
        "can be mounted in read/write mode to many hosts",
    ),
    (
        "ReadWriteOncePod",
        "can be mounted in read/write mode to exactly 1 pod cannot be used in combination with other access modes",
    ),
]);

/// `core/v1.PersistentVolumeClaimModifyVolumeStatus`.
pub(crate) const PERSISTENT_VOLUME_CLAIM_MODIFY_VOLUME_STATUS: Enum = Enum(&[
    (
        "Pending",
        "Pending indicates that the PersistentVolumeClaim cannot be modified due to unmet requirements, such as the specified VolumeAttributesClass not existing",
    ),
    (
        "InProgress",
        "InProgress indicates that the volume is being modified",
    ),
    (
        "Infeasible",
        "Infeasible indicates that the request has been rejected as invalid by the CSI driver. To resolve the error, a valid VolumeAttributesClass needs to be specified",
    ),
]);

/// `core/v1.PersistentVolumeClaimPhase`.
pub(crate) const PERSISTENT_VOLUME_CLAIM_PHASE: Enum = Enum(&[
    (
        "Pending",
        "used for PersistentVolumeClaims that are not yet bound",
    ),
    ("Bound", "used for PersistentVolumeClaims that are bound"),
    (
        "Lost",
        "used for PersistentVolumeClaims that lost their underlying PersistentVolume. The claim was bound to a PersistentVolume and this volume does not exist any longer and all data on it was lost.",
    ),
]);

/// `core/v1.PersistentVolumeMode`.
pub(crate) const PERSISTENT_VOLUME_MODE: Enum = Enum(&[
    (
        "Block",
        "means the volume will not be formatted with a filesystem and will remain a raw block device.",
    ),
    (
        "Filesystem",
        "means the volume will be or is formatted with a filesystem.",
    ),
]);

/// `core/v1.PersistentVolumePhase`.
pub(crate) const PERSISTENT_VOLUME_PHASE: Enum = Enum(&[
    (
        "Pending",
        "used for PersistentVolumes that are not available",
    ),
    (
        "Available",
        "used for PersistentVolumes that are not yet bound Available volumes are held by the binder and matched to PersistentVolumeClaims",
    ),
    ("Bound", "used for PersistentVolumes that are bound"),
    (
        "Released",
        "used for PersistentVolumes where the bound PersistentVolumeClaim was deleted released volumes must be recycled before becoming available again this phase is used by the persistent volume claim binder to signal to another process to reclaim the resource",
    ),
    (
        "Failed",
        "used for PersistentVolumes that failed to be correctly recycled or deleted after being released from a claim",
    ),
]);

/// `core/v1.PersistentVolumeReclaimPolicy`.
pub(crate) const PERSISTENT_VOLUME_RECLAIM_POLICY: Enum = Enum(&[
    (
        "Recycle",
        "means the volume will be recycled back into the pool of unbound persistent volumes on release from its claim. The volume plugin must support Recycling.",
    ),
    (
        "Delete",
        "means the volume will be deleted from Kubernetes on release from its claim. The volume plugin must support Deletion.",
    ),
    (
        "Retain",
        "means the volume will be left in its current phase (Released) for manual reclamation by the administrator. The default policy is Retain.",
    ),
]);

/// `core/v1.PodFSGroupChangePolicy`.
pub(crate) const POD_FS_GROUP_CHANGE_POLICY: Enum = Enum(&[
    (
        "OnRootMismatch",
        "indicates that volume's ownership and permissions will be changed only when permission and ownership of root directory does not match with expected permissions on the volume. This can help shorten the time it takes to change ownership and permissions of a volume.",
    ),
    (
        "Always",
        "indicates that volume's ownership and permissions should always be changed whenever volume is mounted inside a Pod. This the default behavior.",
    ),
]);

/// `core/v1.PodPhase`.
pub(crate) const POD_PHASE: Enum = Enum(&[
    (
        "Pending",
        "means the pod has been accepted by the system, but one or more of the containers has not been started. This includes time before being bound to a node, as well as time spent pulling images onto the host.",
    ),
    (
        "Running",
        "means the pod has been bound to a node and all of the containers have been started. At least one container is still running or is in the process of being restarted.",
    ),
    (
        "Succeeded",
        "means that all containers in the pod have voluntarily terminated with a container exit code of 0, and the system is not going to restart any of these containers.",
    ),
    (
        "Failed",
        "means that all containers in the pod have terminated, and at least one container has terminated in a failure (exited with a non-zero exit code or was stopped by the system).",
    ),
    (
        "Unknown",
        "means that for some reason the state of the pod could not be obtained, typically due to an error in communicating with the host of the pod. Deprecated: It isn't being set since 2015 (74da3b14b0c0f658b3bb8d2def5094686d0e9095)",
    ),
]);

/// `core/v1.PodQOSClass`.
pub(crate) const POD_QOS_CLASS: Enum = Enum(&[
    ("Guaranteed", "is the Guaranteed qos class."),
    ("Burstable", "is the Burstable qos class."),
    ("BestEffort", "is the BestEffort qos class."),
]);

/// `core/v1.PreemptionPolicy`.
pub(crate) const PREEMPTION_POLICY: Enum = Enum(&[
    (
        "PreemptLowerPriority",
        "means that pod can preempt other pods with lower priority.",
    ),
    (
        "Never",
        "means that pod never preempts other pods with lower priority.",
    ),
]);

/// `core/v1.ProcMountType`.
pub(crate) const PROC_MOUNT_TYPE: Enum = Enum(&[
    (
        "Default",
        "uses the container runtime defaults for readonly and masked paths for /proc. Most container runtimes mask certain paths in /proc to avoid accidental security exposure of special devices or information.",
    ),
    (
        "Unmasked",
        "bypasses the default masking behavior of the container runtime and ensures the newly created /proc the container stays in tact with no modifications.",
    ),
]);

/// `core/v1.Protocol`.
pub(crate) const PROTOCOL: Enum = Enum(&[
    ("TCP", "is the TCP protocol."),
    ("UDP", "is the UDP protocol."),
    ("SCTP", "is the SCTP protocol."),
]);

/// `core/v1.PullPolicy`.
pub(crate) const PULL_POLICY: Enum = Enum(&[
    (
        "Always",
        "means that kubelet always attempts to pull the latest image. Container will fail If the pull fails.",
    ),
    (
        "Never",
        "means that kubelet never pulls an image, but only uses a local image. Container will fail if the image isn't present",
    ),
    (
        "IfNotPresent",
        "means that kubelet pulls if the image isn't present on disk. Container will fail if the image isn't present and the pull fails.",
    ),
]);

/// `core/v1.ResourceQuotaScope`.
pub(crate) const RESOURCE_QUOTA_SCOPE: Enum = Enum(&[
    (
        "Terminating",
        "Match all pod objects where spec.activeDeadlineSeconds >=0",
    ),
    (
        "NotTerminating",
        "Match all pod objects where spec.activeDeadlineSeconds is nil",
    ),
    (
        "BestEffort",
        "Match all pod objects that have best effort quality of service",
    ),
    (
        "NotBestEffort",
        "Match all pod objects that do not have best effort quality of service",
    ),
    (
        "PriorityClass",
        "Match all pod objects that have priority class mentioned",
    ),
    (
        "CrossNamespacePodAffinity",
        "Match all pod objects that have cross-namespace pod (anti)affinity mentioned.",
    ),
    (
        "VolumeAttributesClass",
        "Match all pvc objects that have volume attributes class mentioned.",
    ),
]);

/// `core/v1.RestartPolicy`.
pub(crate) const RESTART_POLICY: Enum = Enum(&[("Always", ""), ("OnFailure", ""), ("Never", "")]);

/// `core/v1.ScopeSelectorOperator`.
pub(crate) const SCOPE_SELECTOR_OPERATOR: Enum = Enum(&[
    ("In", ""),
    ("NotIn", ""),
    ("Exists", ""),
    ("DoesNotExist", ""),
]);

/// `core/v1.SeccompProfileType`.
pub(crate) const SECCOMP_PROFILE_TYPE: Enum = Enum(&[
    (
        "Unconfined",
        "indicates no seccomp profile is applied (A.K.A. unconfined).",
    ),
    (
        "RuntimeDefault",
        "represents the default container runtime seccomp profile.",
    ),
    (
        "Localhost",
        "indicates a profile defined in a file on the node should be used. The file's location relative to <kubelet-root-dir>/seccomp.",
    ),
]);

/// `core/v1.ServiceAffinity`.
pub(crate) const SERVICE_AFFINITY: Enum = Enum(&[
    ("ClientIP", "is the Client IP based."),
    ("None", "- no session affinity."),
]);

/// `core/v1.ServiceExternalTrafficPolicy`.
pub(crate) const SERVICE_EXTERNAL_TRAFFIC_POLICY: Enum = Enum(&[
    ("Cluster", "routes traffic to all endpoints."),
    (
        "Local",
        "preserves the source IP of the traffic by routing only to endpoints on the same node as the traffic was received on (dropping the traffic if there are no local endpoints).",
    ),
]);

/// `core/v1.ServiceInternalTrafficPolicy`.
pub(crate) const SERVICE_INTERNAL_TRAFFIC_POLICY: Enum = Enum(&[
    ("Cluster", "routes traffic to all endpoints."),
    (
        "Local",
        "routes traffic only to endpoints on the same node as the client pod (dropping the traffic if there are no local endpoints).",
    ),
]);

/// `core/v1.ServiceType`.
pub(crate) const SERVICE_TYPE: Enum = Enum(&[
    (
        "ClusterIP",
        "means a service will only be accessible inside the cluster, via the cluster IP.",
    ),
    (
        "NodePort",
        "means a service will be exposed on one port of every node, in addition to 'ClusterIP' type.",
    ),
    (
        "LoadBalancer",
        "means a service will be exposed via an external load balancer (if the cloud provider supports it), in addition to 'NodePort' type.",
    ),
    (
        "ExternalName",
        "means a service consists of only a reference to an external name that kubedns or equivalent will return as a CNAME record, with no exposing or proxying of any pods involved.",
    ),
]);

/// `core/v1.Signal`.
pub(crate) const SIGNAL: Enum = Enum(&[
    ("SIGABRT", ""),
    ("SIGALRM", ""),
    ("SIGBUS", ""),
    ("SIGCHLD", ""),
    ("SIGCLD", ""),
    ("SIGCONT", ""),
    ("SIGFPE", ""),
    ("SIGHUP", ""),
    ("SIGILL", ""),
    ("SIGINT", ""),
    ("SIGIO", ""),
    ("SIGIOT", ""),
    ("SIGKILL", ""),
    ("SIGPIPE", ""),
    ("SIGPOLL", ""),
    ("SIGPROF", ""),
    ("SIGPWR", ""),
    ("SIGQUIT", ""),
    ("SIGSEGV", ""),
    ("SIGSTKFLT", ""),
    ("SIGSTOP", ""),
    ("SIGSYS", ""),
    ("SIGTERM", ""),
    ("SIGTRAP", ""),
    ("SIGTSTP", ""),
    ("SIGTTIN", ""),
    ("SIGTTOU", ""),
    ("SIGURG", ""),
    ("SIGUSR1", ""),
    ("SIGUSR2", ""),
    ("SIGVTALRM", ""),
    ("SIGWINCH", ""),
    ("SIGXCPU", ""),
    ("SIGXFSZ", ""),
    ("SIGRTMIN", ""),
    ("SIGRTMIN+1", ""),
    ("SIGRTMIN+2", ""),
    ("SIGRTMIN+3", ""),
    ("SIGRTMIN+4", ""),
    ("SIGRTMIN+5", ""),
    ("SIGRTMIN+6", ""),
    ("SIGRTMIN+7", ""),
    ("SIGRTMIN+8", ""),
    ("SIGRTMIN+9", ""),
    ("SIGRTMIN+10", ""),
    ("SIGRTMIN+11", ""),
    ("SIGRTMIN+12", ""),
    ("SIGRTMIN+13", ""),
    ("SIGRTMIN+14", ""),
    ("SIGRTMIN+15", ""),
    ("SIGRTMAX-14", ""),
    ("SIGRTMAX-13", ""),
    ("SIGRTMAX-12", ""),
    ("SIGRTMAX-11", ""),
    ("SIGRTMAX-10", ""),
    ("SIGRTMAX-9", ""),
    ("SIGRTMAX-8", ""),
    ("SIGRTMAX-7", ""),
    ("SIGRTMAX-6", ""),
    ("SIGRTMAX-5", ""),
    ("SIGRTMAX-4", ""),
    ("SIGRTMAX-3", ""),
    ("SIGRTMAX-2", ""),
    ("SIGRTMAX-1", ""),
    ("SIGRTMAX", ""),
]);

/// `core/v1.SupplementalGroupsPolicy`.
pub(crate) const SUPPLEMENTAL_GROUPS_POLICY: Enum = Enum(&[
    (
        "Merge",
        "means that the container's provided SupplementalGroups and FsGroup (specified in SecurityContext) will be merged with the primary user's groups as defined in the container image (in /etc/group).",
    ),
    (
        "Strict",
        "means that the container's provided SupplementalGroups and FsGroup (specified in SecurityContext) will be used instead of any groups defined in the container image.",
    ),
]);

/// `core/v1.TaintEffect`.
pub(crate) const TAINT_EFFECT: Enum = Enum(&[
    (
        "NoSchedule",
        "Do not allow new pods to schedule onto the node unless they tolerate the taint, but allow all pods submitted to Kubelet without going through the scheduler to start, and allow all already-running pods to continue running. Enforced by the scheduler.",
    ),
    (
        "PreferNoSchedule",
        "Like TaintEffectNoSchedule, but the scheduler tries not to schedule new pods onto the node, rather than prohibiting new pods from scheduling onto the node entirely. Enforced by the scheduler.",
    ),
    (
        "NoExecute",
        "Evict any already-running pods that do not tolerate the taint. Currently enforced by NodeController.",
    ),
]);

/// `core/v1.TerminationMessagePolicy`.
pub(crate) const TERMINATION_MESSAGE_POLICY: Enum = Enum(&[
    (
        "File",
        "is the default behavior and will set the container status message to the contents of the container's terminationMessagePath when the container exits.",
    ),
    (
        "FallbackToLogsOnError",
        "will read the most recent contents of the container logs for the container status message when the container exits with an error and the terminationMessagePath has no contents.",
    ),
]);

/// `core/v1.TolerationOperator`.
pub(crate) const TOLERATION_OPERATOR: Enum =
    Enum(&[("Exists", ""), ("Equal", ""), ("Lt", ""), ("Gt", "")]);

/// `core/v1.URIScheme`.
pub(crate) const URI_SCHEME: Enum = Enum(&[
    ("HTTP", "means that the scheme used will be http://"),
    ("HTTPS", "means that the scheme used will be https://"),
]);

/// `core/v1.UnsatisfiableConstraintAction`.
pub(crate) const UNSATISFIABLE_CONSTRAINT_ACTION: Enum = Enum(&[
    (
        "DoNotSchedule",
        "instructs the scheduler not to schedule the pod when constraints are not satisfied.",
    ),
    (
        "ScheduleAnyway",
        "instructs the scheduler to schedule the pod even if constraints are not satisfied.",
    ),
]);

// apps/v1

/// `apps/v1.DaemonSetUpdateStrategyType`.
pub(crate) const DAEMON_SET_UPDATE_STRATEGY_TYPE: Enum = Enum(&[
    (
        "RollingUpdate",
        "Replace the old daemons by new ones using rolling update i.e replace them on each node one after the other.",
    ),
    ("OnDelete", "Replace the old daemons only when it's killed"),
]);

/// `apps/v1.DeploymentStrategyType`.
pub(crate) const DEPLOYMENT_STRATEGY_TYPE: Enum = Enum(&[
    (
        "Recreate",
        "Kill all existing pods before creating new ones.",
    ),
    (
        "RollingUpdate",
        "Replace the old ReplicaSets by new one using rolling update i.e gradually scale down the old ReplicaSets and scale up the new one.",
    ),
]);

/// `apps/v1.PodManagementPolicyType`.
pub(crate) const POD_MANAGEMENT_POLICY_TYPE: Enum = Enum(&[
    (
        "OrderedReady",
        "will create pods in strictly increasing order on scale up and strictly decreasing order on scale down, progressing only when the previous pod is ready or terminated. At most one pod will be changed at any time.",
    ),
    (
        "Parallel",
        "will create and delete pods as soon as the stateful set replica count is changed, and will not wait for pods to be ready or complete termination.",
    ),
]);

/// `apps/v1.StatefulSetUpdateStrategyType`.
pub(crate) const STATEFUL_SET_UPDATE_STRATEGY_TYPE: Enum = Enum(&[
    (
        "RollingUpdate",
        "indicates that update will be applied to all Pods in the StatefulSet with respect to the StatefulSet ordering constraints. When a scale operation is performed with this strategy, new Pods will be created from the specification version indicated by the StatefulSet's updateRevision.",
    ),
    (
        "OnDelete",
        "triggers the legacy behavior. Version tracking and ordered rolling restarts are disabled. Pods are recreated from the StatefulSetSpec when they are manually deleted. When a scale operation is performed with this strategy,specification version indicated by the StatefulSet's currentRevision.",
    ),
]);

// batch/v1

/// `batch/v1.CompletionMode`.
pub(crate) const COMPLETION_MODE: Enum = Enum(&[
    (
        "NonIndexed",
        "is a Job completion mode. In this mode, the Job is considered complete when there have been .spec.completions successfully completed Pods. Pod completions are homologous to each other.",
    ),
    (
        "Indexed",
        "is a Job completion mode. In this mode, the Pods of a Job get an associated completion index from 0 to (.spec.completions - 1). The Job is considered complete when a Pod completes for each completion index.",
    ),
]);

/// `batch/v1.ConcurrencyPolicy`.
pub(crate) const CONCURRENCY_POLICY: Enum = Enum(&[
    ("Allow", "allows CronJobs to run concurrently."),
    (
        "Forbid",
        "forbids concurrent runs, skipping next run if previous hasn't finished yet.",
    ),
    (
        "Replace",
        "cancels currently running job and replaces it with a new one.",
    ),
]);

/// `batch/v1.PodFailurePolicyAction`.
pub(crate) const POD_FAILURE_POLICY_ACTION: Enum = Enum(&[
    (
        "FailJob",
        "This is an action which might be taken on a pod failure - mark the pod's job as Failed and terminate all running pods.",
    ),
    (
        "FailIndex",
        "This is an action which might be taken on a pod failure - mark the Job's index as failed to avoid restarts within this index. This action can only be used when backoffLimitPerIndex is set.",
    ),
    (
        "Ignore",
        "This is an action which might be taken on a pod failure - the counter towards .backoffLimit, represented by the job's .status.failed field, is not incremented and a replacement pod is created.",
    ),
    (
        "Count",
        "This is an action which might be taken on a pod failure - the pod failure is handled in the default way - the counter towards .backoffLimit, represented by the job's .status.failed field, is incremented.",
    ),
]);

/// `batch/v1.PodFailurePolicyOnExitCodesOperator`.
pub(crate) const POD_FAILURE_POLICY_ON_EXIT_CODES_OPERATOR: Enum =
    Enum(&[("In", ""), ("NotIn", "")]);

/// `batch/v1.PodReplacementPolicy`.
pub(crate) const POD_REPLACEMENT_POLICY: Enum = Enum(&[
    (
        "TerminatingOrFailed",
        "means that we recreate pods when they are terminating (has a metadata.deletionTimestamp) or failed.",
    ),
    (
        "Failed",
        "means to wait until a previously created Pod is fully terminated (has phase Failed or Succeeded) before creating a replacement Pod.",
    ),
]);

// networking/v1

/// `networking/v1.PathType`.
pub(crate) const PATH_TYPE: Enum = Enum(&[
    (
        "Exact",
        "matches the URL path exactly and with case sensitivity.",
    ),
    (
        "Prefix",
        "matches based on a URL path prefix split by '/'. Matching is case sensitive and done on a path element by element basis. A path element refers to the list of labels in the path split by the '/' separator. A request is a match for path p if every p is an element-wise prefix of p of the request path. Note that if the last element of the path is a substring of the last element in request path, it is not a match (e.g. /foo/bar matches /foo/bar/baz, but does not match /foo/barbaz). If multiple matching paths exist in an Ingress spec, the longest matching path is given priority. Examples: - /foo/bar does not match requests to /foo/barbaz - /foo/bar matches request to /foo/bar and /foo/bar/baz - /foo and /foo/ both match requests to /foo and /foo/. If both paths are present in an Ingress spec, the longest matching path (/foo/) is given priority.",
    ),
    (
        "ImplementationSpecific",
        "matching is up to the IngressClass. Implementations can treat this as a separate PathType or treat it identically to Prefix or Exact path types.",
    ),
]);

/// `networking/v1.PolicyType`.
pub(crate) const POLICY_TYPE: Enum = Enum(&[
    (
        "Ingress",
        "is a NetworkPolicy that affects ingress traffic on selected pods",
    ),
    (
        "Egress",
        "is a NetworkPolicy that affects egress traffic on selected pods",
    ),
]);

// discovery/v1

/// `discovery/v1.AddressType`.
pub(crate) const ADDRESS_TYPE: Enum = Enum(&[
    ("IPv4", "represents an IPv4 Address."),
    ("IPv6", "represents an IPv6 Address."),
    ("FQDN", "represents a FQDN."),
]);

// policy/v1

/// `policy/v1.UnhealthyPodEvictionPolicyType`.
pub(crate) const UNHEALTHY_POD_EVICTION_POLICY_TYPE: Enum = Enum(&[
    (
        "IfHealthyBudget",
        "policy means that running pods (status.phase=\"Running\"), but not yet healthy can be evicted only if the guarded application is not disrupted (status.currentHealthy is at least equal to status.desiredHealthy). Healthy pods will be subject to the PDB for eviction.",
    ),
    (
        "AlwaysAllow",
        "policy means that all running pods (status.phase=\"Running\"), but not yet healthy are considered disrupted and can be evicted regardless of whether the criteria in a PDB is met. This means perspective running pods of a disrupted application might not get a chance to become healthy. Healthy pods will be subject to the PDB for eviction.",
    ),
]);

// storage/v1

/// `storage/v1.VolumeBindingMode`.
pub(crate) const VOLUME_BINDING_MODE: Enum = Enum(&[
    (
        "Immediate",
        "indicates that PersistentVolumeClaims should be immediately provisioned and bound. This is the default mode.",
    ),
    (
        "WaitForFirstConsumer",
        "indicates that PersistentVolumeClaims should not be provisioned and bound until the first Pod is created that references the PeristentVolumeClaim. The volume provisioning and binding will occur during Pod scheduing.",
    ),
]);

// admissionregistration/v1

/// `admissionregistration/v1.FailurePolicyType`.
pub(crate) const FAILURE_POLICY_TYPE: Enum = Enum(&[
    (
        "Ignore",
        "means that an error calling the webhook is ignored.",
    ),
    (
        "Fail",
        "means that an error calling the webhook causes the admission to fail.",
    ),
]);

/// `admissionregistration/v1.MatchPolicyType`.
pub(crate) const MATCH_POLICY_TYPE: Enum = Enum(&[
    (
        "Exact",
        "means requests should only be sent to the webhook if they exactly match a given rule.",
    ),
    (
        "Equivalent",
        "means requests should be sent to the webhook if they modify a resource listed in rules via another API group or version.",
    ),
]);

/// `admissionregistration/v1.OperationType`.
pub(crate) const OPERATION_TYPE: Enum = Enum(&[
    ("*", ""),
    ("CREATE", ""),
    ("UPDATE", ""),
    ("DELETE", ""),
    ("CONNECT", ""),
]);

/// `admissionregistration/v1.ReinvocationPolicyType`.
pub(crate) const REINVOCATION_POLICY_TYPE: Enum = Enum(&[
    (
        "Never",
        "indicates that the mutation must not be called more than once in a single admission evaluation.",
    ),
    (
        "IfNeeded",
        "indicates that the mutation may be called at least one additional time as part of the admission evaluation if the object being admitted is modified by other admission plugins after the initial mutation call.",
    ),
]);

/// `admissionregistration/v1.ScopeType`.
pub(crate) const SCOPE_TYPE: Enum = Enum(&[
    (
        "Cluster",
        "means that scope is limited to cluster-scoped objects. Namespace objects are cluster-scoped.",
    ),
    (
        "Namespaced",
        "means that scope is limited to namespaced objects.",
    ),
    ("*", "means that all scopes are included."),
]);

/// `admissionregistration/v1.SideEffectClass`.
pub(crate) const SIDE_EFFECT_CLASS: Enum = Enum(&[
    (
        "Unknown",
        "means that no information is known about the side effects of calling the webhook. If a request with the dry-run attribute would trigger a call to this webhook, the request will instead fail.",
    ),
    (
        "None",
        "means that calling the webhook will have no side effects.",
    ),
    (
        "Some",
        "means that calling the webhook will possibly have side effects. If a request with the dry-run attribute would trigger a call to this webhook, the request will instead fail.",
    ),
    (
        "NoneOnDryRun",
        "means that calling the webhook will possibly have side effects, but if the request being reviewed has the dry-run attribute, the side effects will be suppressed.",
    ),
]);

/// `admissionregistration/v1.ValidationAction`.
pub(crate) const VALIDATION_ACTION: Enum = Enum(&[
    (
        "Deny",
        "specifies that a validation failure results in a denied request.",
    ),
    (
        "Warn",
        "specifies that a validation failure is reported to the request client in HTTP Warning headers, with a warning code of 299. Warnings can be sent both for allowed or denied admission responses.",
    ),
    (
        "Audit",
        "specifies that a validation failure is included in the published audit event for the request. The audit event will contain a `validation.policy.admission.k8s.io/validation_failure` audit annotation with a value containing the details of the validation failure.",
    ),
]);

// certificates/v1

/// `certificates/v1.KeyUsage`.
pub(crate) const KEY_USAGE: Enum = Enum(&[
    ("signing", ""),
    ("digital signature", ""),
    ("content commitment", ""),
    ("key encipherment", ""),
    ("key agreement", ""),
    ("data encipherment", ""),
    ("cert sign", ""),
    ("crl sign", ""),
    ("encipher only", ""),
    ("decipher only", ""),
    ("any", ""),
    ("server auth", ""),
    ("client auth", ""),
    ("code signing", ""),
    ("email protection", ""),
    ("s/mime", ""),
    ("ipsec end system", ""),
    ("ipsec tunnel", ""),
    ("ipsec user", ""),
    ("timestamping", ""),
    ("ocsp signing", ""),
    ("microsoft sgc", ""),
    ("netscape sgc", ""),
]);

// resource/v1

/// `resource/v1.AllocationConfigSource`.
pub(crate) const ALLOCATION_CONFIG_SOURCE: Enum = Enum(&[("FromClass", ""), ("FromClaim", "")]);

/// `resource/v1.DeviceAllocationMode`.
pub(crate) const DEVICE_ALLOCATION_MODE: Enum = Enum(&[("ExactCount", ""), ("All", "")]);

/// `resource/v1.DeviceTaintEffect`.
pub(crate) const DEVICE_TAINT_EFFECT: Enum = Enum(&[
    ("None", "No effect, the taint is purely informational."),
    (
        "NoSchedule",
        "Do not allow new pods to schedule which use a tainted device unless they tolerate the taint, but allow all pods submitted to Kubelet without going through the scheduler to start, and allow all already-running pods to continue running.",
    ),
    (
        "NoExecute",
        "Evict any already-running pods that do not tolerate the device taint.",
    ),
]);

/// `resource/v1.DeviceTolerationOperator`.
pub(crate) const DEVICE_TOLERATION_OPERATOR: Enum = Enum(&[("Exists", ""), ("Equal", "")]);

/// Where the enums sit in the upstream models, by model and property.
#[rustfmt::skip]
const FIELDS: &[Field] = &[
    Field("admissionregistration.v1.MatchResources", "matchPolicy", At::Field, &MATCH_POLICY_TYPE),
    Field("admissionregistration.v1.MutatingWebhook", "failurePolicy", At::Field, &FAILURE_POLICY_TYPE),
    Field("admissionregistration.v1.MutatingWebhook", "matchPolicy", At::Field, &MATCH_POLICY_TYPE),
    Field("admissionregistration.v1.MutatingWebhook", "reinvocationPolicy", At::Field, &REINVOCATION_POLICY_TYPE),
    Field("admissionregistration.v1.MutatingWebhook", "sideEffects", At::Field, &SIDE_EFFECT_CLASS),
    Field("admissionregistration.v1.NamedRuleWithOperations", "operations", At::Items, &OPERATION_TYPE),
    Field("admissionregistration.v1.NamedRuleWithOperations", "scope", At::Field, &SCOPE_TYPE),
    Field("admissionregistration.v1.RuleWithOperations", "operations", At::Items, &OPERATION_TYPE),
    Field("admissionregistration.v1.RuleWithOperations", "scope", At::Field, &SCOPE_TYPE),
    Field("admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec", "validationActions", At::Items, &VALIDATION_ACTION),
    Field("admissionregistration.v1.ValidatingAdmissionPolicySpec", "failurePolicy", At::Field, &FAILURE_POLICY_TYPE),
    Field("admissionregistration.v1.ValidatingWebhook", "failurePolicy", At::Field, &FAILURE_POLICY_TYPE),
    Field("admissionregistration.v1.ValidatingWebhook", "matchPolicy", At::Field, &MATCH_POLICY_TYPE),
    Field("admissionregistration.v1.ValidatingWebhook", "sideEffects", At::Field, &SIDE_EFFECT_CLASS),
    Field("apps.v1.DaemonSetUpdateStrategy", "type", At::Field, &DAEMON_SET_UPDATE_STRATEGY_TYPE),
    Field("apps.v1.DeploymentStrategy", "type", At::Field, &DEPLOYMENT_STRATEGY_TYPE),
    Field("apps.v1.StatefulSetSpec", "podManagementPolicy", At::Field, &POD_MANAGEMENT_POLICY_TYPE),
    Field("apps.v1.StatefulSetUpdateStrategy", "type", At::Field, &STATEFUL_SET_UPDATE_STRATEGY_TYPE),
    Field("batch.v1.CronJobSpec", "concurrencyPolicy", At::Field, &CONCURRENCY_POLICY),
    Field("batch.v1.JobSpec", "completionMode", At::Field, &COMPLETION_MODE),
    Field("batch.v1.JobSpec", "podReplacementPolicy", At::Field, &POD_REPLACEMENT_POLICY),
    Field("batch.v1.PodFailurePolicyOnExitCodesRequirement", "operator", At::Field, &POD_FAILURE_POLICY_ON_EXIT_CODES_OPERATOR),
    Field("batch.v1.PodFailurePolicyRule", "action", At::Field, &POD_FAILURE_POLICY_ACTION),
    Field("certificates.v1.CertificateSigningRequestSpec", "usages", At::Items, &KEY_USAGE),
    Field("core.v1.AppArmorProfile", "type", At::Field, &APP_ARMOR_PROFILE_TYPE),
    Field("core.v1.AzureDiskVolumeSource", "cachingMode", At::Field, &AZURE_DATA_DISK_CACHING_MODE),
    Field("core.v1.AzureDiskVolumeSource", "kind", At::Field, &AZURE_DATA_DISK_KIND),
    Field("core.v1.Container", "imagePullPolicy", At::Field, &PULL_POLICY),
    Field("core.v1.Container", "terminationMessagePolicy", At::Field, &TERMINATION_MESSAGE_POLICY),
    Field("core.v1.ContainerPort", "protocol", At::Field, &PROTOCOL),
    Field("core.v1.ContainerStatus", "stopSignal", At::Field, &SIGNAL),
    Field("core.v1.EndpointPort", "protocol", At::Field, &PROTOCOL),
    Field("core.v1.EphemeralContainer", "imagePullPolicy", At::Field, &PULL_POLICY),
    Field("core.v1.EphemeralContainer", "terminationMessagePolicy", At::Field, &TERMINATION_MESSAGE_POLICY),
    Field("core.v1.HTTPGetAction", "scheme", At::Field, &URI_SCHEME),
    Field("core.v1.HostPathVolumeSource", "type", At::Field, &HOST_PATH_TYPE),
    Field("core.v1.ImageVolumeSource", "pullPolicy", At::Field, &PULL_POLICY),
    Field("core.v1.Lifecycle", "stopSignal", At::Field, &SIGNAL),
    Field("core.v1.ModifyVolumeStatus", "status", At::Field, &PERSISTENT_VOLUME_CLAIM_MODIFY_VOLUME_STATUS),
    Field("core.v1.NamespaceStatus", "phase", At::Field, &NAMESPACE_PHASE),
    Field("core.v1.NodeSelectorRequirement", "operator", At::Field, &NODE_SELECTOR_OPERATOR),
    Field("core.v1.NodeStatus", "phase", At::Field, &NODE_PHASE),
    Field("core.v1.PersistentVolumeClaimSpec", "accessModes", At::Items, &PERSISTENT_VOLUME_ACCESS_MODE),
    Field("core.v1.PersistentVolumeClaimSpec", "volumeMode", At::Field, &PERSISTENT_VOLUME_MODE),
    Field("core.v1.PersistentVolumeClaimStatus", "accessModes", At::Items, &PERSISTENT_VOLUME_ACCESS_MODE),
    Field("core.v1.PersistentVolumeClaimStatus", "allocatedResourceStatuses", At::Values, &CLAIM_RESOURCE_STATUS),
    Field("core.v1.PersistentVolumeClaimStatus", "phase", At::Field, &PERSISTENT_VOLUME_CLAIM_PHASE),
    Field("core.v1.PersistentVolumeSpec", "accessModes", At::Items, &PERSISTENT_VOLUME_ACCESS_MODE),
    Field("core.v1.PersistentVolumeSpec", "persistentVolumeReclaimPolicy", At::Field, &PERSISTENT_VOLUME_RECLAIM_POLICY),
    Field("core.v1.PersistentVolumeSpec", "volumeMode", At::Field, &PERSISTENT_VOLUME_MODE),
    Field("core.v1.PersistentVolumeStatus", "phase", At::Field, &PERSISTENT_VOLUME_PHASE),
    Field("core.v1.PodSecurityContext", "fsGroupChangePolicy", At::Field, &POD_FS_GROUP_CHANGE_POLICY),
    Field("core.v1.PodSecurityContext", "supplementalGroupsPolicy", At::Field, &SUPPLEMENTAL_GROUPS_POLICY),
    Field("core.v1.PodSpec", "dnsPolicy", At::Field, &DNS_POLICY),
    Field("core.v1.PodSpec", "preemptionPolicy", At::Field, &PREEMPTION_POLICY),
    Field("core.v1.PodSpec", "restartPolicy", At::Field, &RESTART_POLICY),
    Field("core.v1.PodStatus", "phase", At::Field, &POD_PHASE),
    Field("core.v1.PodStatus", "qosClass", At::Field, &POD_QOS_CLASS),
    Field("core.v1.PortStatus", "protocol", At::Field, &PROTOCOL),
    Field("core.v1.ResourceQuotaSpec", "scopes", At::Items, &RESOURCE_QUOTA_SCOPE),
    Field("core.v1.ScopedResourceSelectorRequirement", "operator", At::Field, &SCOPE_SELECTOR_OPERATOR),
    Field("core.v1.ScopedResourceSelectorRequirement", "scopeName", At::Field, &RESOURCE_QUOTA_SCOPE),
    Field("core.v1.SeccompProfile", "type", At::Field, &SECCOMP_PROFILE_TYPE),
    Field("core.v1.SecurityContext", "procMount", At::Field, &PROC_MOUNT_TYPE),
    Field("core.v1.ServicePort", "protocol", At::Field, &PROTOCOL),
    Field("core.v1.ServiceSpec", "externalTrafficPolicy", At::Field, &SERVICE_EXTERNAL_TRAFFIC_POLICY),
    Field("core.v1.ServiceSpec", "internalTrafficPolicy", At::Field, &SERVICE_INTERNAL_TRAFFIC_POLICY),
    Field("core.v1.ServiceSpec", "ipFamilies", At::Items, &IP_FAMILY),
    Field("core.v1.ServiceSpec", "ipFamilyPolicy", At::Field, &IP_FAMILY_POLICY),
    Field("core.v1.ServiceSpec", "sessionAffinity", At::Field, &SERVICE_AFFINITY),
    Field("core.v1.ServiceSpec", "type", At::Field, &SERVICE_TYPE),
    Field("core.v1.Taint", "effect", At::Field, &TAINT_EFFECT),
    Field("core.v1.Toleration", "effect", At::Field, &TAINT_EFFECT),
    Field("core.v1.Toleration", "operator", At::Field, &TOLERATION_OPERATOR),
    Field("core.v1.TopologySpreadConstraint", "nodeAffinityPolicy", At::Field, &NODE_INCLUSION_POLICY),
    Field("core.v1.TopologySpreadConstraint", "nodeTaintsPolicy", At::Field, &NODE_INCLUSION_POLICY),
    Field("core.v1.TopologySpreadConstraint", "whenUnsatisfiable", At::Field, &UNSATISFIABLE_CONSTRAINT_ACTION),
    Field("core.v1.VolumeMount", "mountPropagation", At::Field, &MOUNT_PROPAGATION_MODE),
    Field("discovery.v1.EndpointPort", "protocol", At::Field, &PROTOCOL),
    Field("discovery.v1.EndpointSlice", "addressType", At::Field, &ADDRESS_TYPE),
    Field("networking.v1.HTTPIngressPath", "pathType", At::Field, &PATH_TYPE),
    Field("networking.v1.IngressPortStatus", "protocol", At::Field, &PROTOCOL),
    Field("networking.v1.NetworkPolicyPort", "protocol", At::Field, &PROTOCOL),
    Field("networking.v1.NetworkPolicySpec", "policyTypes", At::Items, &POLICY_TYPE),
    Field("policy.v1.PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy", At::Field, &UNHEALTHY_POD_EVICTION_POLICY_TYPE),
    Field("resource.v1.DeviceAllocationConfiguration", "source", At::Field, &ALLOCATION_CONFIG_SOURCE),
    Field("resource.v1.DeviceSubRequest", "allocationMode", At::Field, &DEVICE_ALLOCATION_MODE),
    Field("resource.v1.DeviceTaint", "effect", At::Field, &DEVICE_TAINT_EFFECT),
    Field("resource.v1.DeviceToleration", "effect", At::Field, &DEVICE_TAINT_EFFECT),
    Field("resource.v1.DeviceToleration", "operator", At::Field, &DEVICE_TOLERATION_OPERATOR),
    Field("resource.v1.ExactDeviceRequest", "allocationMode", At::Field, &DEVICE_ALLOCATION_MODE),
    Field("scheduling.v1.PriorityClass", "preemptionPolicy", At::Field, &PREEMPTION_POLICY),
    Field("storage.v1.StorageClass", "reclaimPolicy", At::Field, &PERSISTENT_VOLUME_RECLAIM_POLICY),
    Field("storage.v1.StorageClass", "volumeBindingMode", At::Field, &VOLUME_BINDING_MODE),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_declaration_order_and_sort_on_demand() {
        assert_eq!(
            PULL_POLICY.values().collect::<Vec<_>>(),
            ["Always", "Never", "IfNotPresent"]
        );
        assert_eq!(PULL_POLICY.sorted(), ["Always", "IfNotPresent", "Never"]);
        assert!(RESTART_POLICY.contains("OnFailure"));
        assert!(!RESTART_POLICY.contains("onfailure"));
        assert!(HOST_PATH_TYPE.contains(""));
        assert_eq!(HOST_PATH_TYPE.sorted()[0], "");
    }

    #[test]
    fn not_supported_lists_values_in_the_order_asked() {
        let declared = DNS_POLICY.not_supported("spec.dnsPolicy", &json!("Bogus"), Order::Declared);
        assert_eq!(
            declared.message,
            "Unsupported value: \"Bogus\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\""
        );
        assert_eq!(declared.reason, "FieldValueNotSupported");
        assert_eq!(declared.field, "spec.dnsPolicy");
        let sorted = PROTOCOL.not_supported("ports[0].protocol", &json!("ICMP"), Order::Sorted);
        assert_eq!(
            sorted.message,
            "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        );
    }

    #[test]
    fn the_table_names_each_property_once_and_every_enum_has_values() {
        let mut seen = std::collections::BTreeSet::new();
        for field in fields() {
            assert!(
                seen.insert((field.model(), field.property())),
                "{}.{} twice",
                field.model(),
                field.property()
            );
            assert!(field.values().values().next().is_some());
            let distinct: std::collections::BTreeSet<&str> = field.values().values().collect();
            assert_eq!(distinct.len(), field.values().described().len());
        }
    }
}
