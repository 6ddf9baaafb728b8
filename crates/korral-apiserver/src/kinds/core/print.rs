//! The tables of the core kinds, as upstream's printers show them.

use serde_json::{Value, json};

use crate::kinds::printer::{
    AGE, Column, NAME_DESCRIPTION, Printer, age, count_keys, int, joined, or_none, since, text,
};
use crate::meta;

/// Namespaces: `Status`, `Age`.
pub(super) const NAMESPACES: Printer = Printer {
    columns: &[Column::new("Status", "The status of the namespace"), AGE],
    cells: |obj| vec![json!(text(obj, "status.phase")), age(obj)],
};

/// ConfigMaps: `Data`, `Age`.
pub(super) const CONFIGMAPS: Printer = Printer {
    columns: &[
        Column::new(
            "Data",
            "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
        ),
        AGE,
    ],
    cells: |obj| vec![json!(count_keys(obj, &["data", "binaryData"])), age(obj)],
};

/// Secrets: `Type`, `Data`, `Age`.
pub(super) const SECRETS: Printer = Printer {
    columns: &[
        Column::new(
            "Type",
            "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
        ),
        Column::new(
            "Data",
            "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
        ),
        AGE,
    ],
    cells: |obj| {
        vec![
            json!(text(obj, "type")),
            json!(count_keys(obj, &["data"])),
            age(obj),
        ]
    },
};

/// Kinds whose table is their age alone (ServiceAccounts).
pub(super) const AGE_ONLY: Printer = Printer {
    columns: &[AGE],
    cells: |obj| vec![age(obj)],
};

/// Endpoints: `Endpoints` (`ip:port` pairs, at most three then `+ N more...`), `Age`.
pub(super) const ENDPOINTS: Printer = Printer {
    columns: &[
        Column::new(
            "Endpoints",
            "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs they share. A single address with multiple ports, some of which are ready and some of which are not (because they come from different containers) will result in the address being displayed in different subsets for the different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of addresses and ports that comprise a service.",
        ),
        AGE,
    ],
    cells: |obj| vec![json!(endpoints(obj)), age(obj)],
};

/// Upstream's `formatEndpoints`: up to three `ip:port` pairs, then `+ N more...`.
fn endpoints(obj: &Value) -> String {
    const MAX: usize = 3;
    let mut shown = Vec::new();
    let mut total = 0usize;
    for subset in obj
        .get("subsets")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let addresses = subset
            .get("addresses")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let ports = subset
            .get("ports")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        for address in addresses {
            let ip = text(address, "ip");
            if ports.is_empty() {
                total += 1;
                if shown.len() < MAX {
                    shown.push(ip.to_string());
                }
            }
            for port in ports {
                total += 1;
                if shown.len() < MAX {
                    shown.push(format!("{ip}:{}", int(port, "port")));
                }
            }
        }
    }
    if shown.is_empty() {
        return "<none>".to_string();
    }
    let mut out = shown.join(",");
    if total > shown.len() {
        out.push_str(&format!(" + {} more...", total - shown.len()));
    }
    out
}

/// Nodes: `Status`, `Roles`, `Age`, `Version`, wide `Internal-IP`.
pub(super) const NODES: Printer = Printer {
    columns: &[
        Column::new("Status", "The status of the node"),
        Column::new("Roles", "The roles of the node"),
        AGE,
        Column::new("Version", "Kubelet Version reported by the node."),
        Column::wide("Internal-IP", "List of internal IPs for the node."),
    ],
    cells: |obj| {
        let ready = meta::path(obj, "status.conditions")
            .and_then(Value::as_array)
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
            .map(|c| text(c, "status"));
        let mut status = if ready == Some("True") {
            "Ready".to_string()
        } else {
            "NotReady".to_string()
        };
        if meta::path(obj, "spec.unschedulable") == Some(&Value::Bool(true)) {
            status.push_str(",SchedulingDisabled");
        }
        let roles: Vec<&str> = meta::labels(obj)
            .map(|l| {
                l.keys()
                    .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                    .collect()
            })
            .unwrap_or_default();
        let ip = meta::path(obj, "status.addresses")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|a| a["type"] == "InternalIP"))
            .map_or("", |a| text(a, "address"));
        vec![
            json!(status),
            json!(or_none(&roles.join(","))),
            age(obj),
            json!(text(obj, "status.nodeInfo.kubeletVersion")),
            json!(or_none(ip)),
        ]
    },
};

/// Pods: `Ready`, `Status`, `Restarts`, `Age`, wide `IP`, `Node`, `Nominated Node`,
/// `Readiness Gates`.
pub(super) const PODS: Printer = Printer {
    columns: &[
        Column::new(
            "Ready",
            "The aggregate readiness state of this pod for accepting traffic.",
        ),
        Column::new(
            "Status",
            "The aggregate status of the containers in this pod.",
        ),
        Column::new(
            "Restarts",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        AGE,
        Column::wide(
            "IP",
            "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        ),
        Column::wide(
            "Node",
            "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        ),
        Column::wide(
            "Nominated Node",
            "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
        ),
        Column::wide(
            "Readiness Gates",
            "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        ),
    ],
    cells: pod_cells,
};

fn pod_cells(obj: &Value) -> Vec<Value> {
    let total = meta::path(obj, "spec.containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let statuses = meta::path(obj, "status.containerStatuses")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready") == Some(&Value::Bool(true)))
        .count();
    // As upstream's `printPod`: a pod being deleted is `Terminating` until its kubelet reports
    // a terminal phase (then its containers' reason shows), `Unknown` once its node is lost.
    let finished = matches!(
        meta::path(obj, "status.phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    );
    let node_lost = meta::path(obj, "status.reason").and_then(Value::as_str) == Some("NodeLost");
    let status = match (meta::is_deleting(obj), node_lost, finished) {
        (true, true, _) => "Unknown".to_string(),
        (true, false, false) => "Terminating".to_string(),
        _ => or_none(&pod_status_reason(obj)),
    };
    let restarts: i64 = statuses.iter().map(|c| int(c, "restartCount")).sum();
    vec![
        json!(format!("{ready}/{total}")),
        json!(status),
        json!(restarts.to_string()),
        age(obj),
        json!(or_none(text(obj, "status.podIP"))),
        json!(or_none(text(obj, "spec.nodeName"))),
        json!(or_none(text(obj, "status.nominatedNodeName"))),
        json!(readiness_gates(obj)),
    ]
}

/// `<ready>/<total>` over the pod's readiness gates, `<none>` without gates.
fn readiness_gates(obj: &Value) -> String {
    let gates: Vec<&str> = meta::path(obj, "spec.readinessGates")
        .and_then(Value::as_array)
        .map(|g| g.iter().map(|g| text(g, "conditionType")).collect())
        .unwrap_or_default();
    if gates.is_empty() {
        return "<none>".to_string();
    }
    let conditions = meta::path(obj, "status.conditions").and_then(Value::as_array);
    let ready = gates
        .iter()
        .filter(|t| {
            conditions.is_some_and(|c| {
                c.iter()
                    .any(|c| text(c, "type") == **t && text(c, "status") == "True")
            })
        })
        .count();
    format!("{ready}/{}", gates.len())
}

/// A pod's STATUS as kubectl's printer derives it: the phase (or `status.reason`), replaced
/// by the last container's waiting or terminated reason (`Completed`, `CrashLoopBackOff`, …).
fn pod_status_reason(pod: &Value) -> String {
    let mut reason = text(pod, "status.reason");
    if reason.is_empty() {
        reason = text(pod, "status.phase");
    }
    let statuses = meta::path(pod, "status.containerStatuses")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for status in statuses.iter().rev() {
        let waiting = text(status, "state.waiting.reason");
        let terminated = text(status, "state.terminated.reason");
        if !waiting.is_empty() {
            reason = waiting;
        } else if !terminated.is_empty() {
            reason = terminated;
        }
    }
    reason.to_string()
}

/// Services: `Type`, `Cluster-IP`, `External-IP`, `Port(s)`, `Age`, wide `Selector`.
pub(super) const SERVICES: Printer = Printer {
    columns: &[
        Column::new(
            "Type",
            "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types",
        ),
        Column::new(
            "Cluster-IP",
            "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        ),
        Column::new(
            "External-IP",
            "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.",
        ),
        Column::new(
            "Port(s)",
            "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        ),
        AGE,
        Column::wide(
            "Selector",
            "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
        ),
    ],
    cells: service_cells,
};

fn service_cells(obj: &Value) -> Vec<Value> {
    let kind = text(obj, "spec.type");
    let cluster_ip = text(obj, "spec.clusterIP");
    let ports: Vec<String> = meta::path(obj, "spec.ports")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .map(|p| {
            let proto = match text(p, "protocol") {
                "" => "TCP",
                p => p,
            };
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(n) => format!("{}:{n}/{proto}", int(p, "port")),
                None => format!("{}/{proto}", int(p, "port")),
            }
        })
        .collect();
    let selector: Vec<String> = meta::path(obj, "spec.selector")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    vec![
        json!(kind),
        json!(or_none(cluster_ip)),
        json!(external_ip(obj, kind)),
        json!(or_none(&ports.join(","))),
        age(obj),
        json!(or_none(&selector.join(","))),
    ]
}

/// Upstream's `getServiceExternalIP`: the external name, the load balancer's ingress points
/// (`<pending>` while none), or the external IPs.
fn external_ip(obj: &Value, kind: &str) -> String {
    let external = joined(obj, "spec.externalIPs");
    match kind {
        "ExternalName" => text(obj, "spec.externalName").to_string(),
        "LoadBalancer" => {
            let ingress: Vec<&str> = meta::path(obj, "status.loadBalancer.ingress")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .map(|i| match text(i, "ip") {
                    "" => text(i, "hostname"),
                    ip => ip,
                })
                .filter(|s| !s.is_empty())
                .collect();
            let mut all: Vec<String> = ingress.iter().map(|s| s.to_string()).collect();
            if !external.is_empty() {
                all.push(external);
            }
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        _ => or_none(&external),
    }
}

/// Events (core/v1): `Last Seen`, `Type`, `Reason`, `Object`, wide `Subobject`, `Source`,
/// `Message`, wide `First Seen`, `Count`, `Name`.
pub(crate) const EVENTS: Printer = Printer {
    columns: &[
        Column::new(
            "Last Seen",
            "The time at which the most recent occurrence of this event was recorded.",
        ),
        Column::new(
            "Type",
            "Type of this event (Normal, Warning), new types could be added in the future",
        ),
        Column::new(
            "Reason",
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        ),
        Column::new("Object", "The object that this event is about."),
        Column::wide(
            "Subobject",
            "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
        ),
        Column::wide(
            "Source",
            "The component reporting this event. Should be a short machine understandable string.",
        ),
        Column::new(
            "Message",
            "A human-readable description of the status of this operation.",
        ),
        Column::wide(
            "First Seen",
            "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        ),
        Column::wide("Count", "The number of times this event has occurred."),
        Column::wide("Name", NAME_DESCRIPTION),
    ],
    cells: event_cells,
};

/// Upstream's `printEvent`.
fn event_cells(obj: &Value) -> Vec<Value> {
    let present = |path: &str| Some(text(obj, path)).filter(|t| !t.is_empty());
    let first = present("firstTimestamp").or_else(|| present("eventTime"));
    let first_seen = since(first);
    let series_last = present("series.lastObservedTime");
    let last_seen = match (series_last, present("lastTimestamp")) {
        (Some(t), _) | (None, Some(t)) => since(Some(t)),
        (None, None) => first_seen.clone(),
    };
    let count = match meta::path(obj, "series.count").and_then(Value::as_i64) {
        Some(c) if series_last.is_some() => c,
        _ => match int(obj, "count") {
            0 => 1,
            c => c,
        },
    };
    let kind = text(obj, "involvedObject.kind").to_ascii_lowercase();
    let target = match text(obj, "involvedObject.name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let component = match text(obj, "source.component") {
        "" => text(obj, "reportingComponent"),
        c => c,
    };
    let host = match text(obj, "source.host") {
        "" => text(obj, "reportingInstance"),
        h => h,
    };
    let source = if host.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {host}")
    };
    vec![
        json!(last_seen),
        json!(text(obj, "type")),
        json!(text(obj, "reason")),
        json!(target),
        json!(text(obj, "involvedObject.fieldPath")),
        json!(source),
        json!(text(obj, "message").trim()),
        json!(first_seen),
        json!(count.to_string()),
        json!(meta::name(obj)),
    ]
}

/// A map of labels (`k=v,k2=v2`, sorted) at `path`, `<none>` when empty or absent.
fn label_map(obj: &Value, path: &str) -> String {
    let pairs: Vec<String> = meta::path(obj, path)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    or_none(&pairs.join(","))
}

/// Upstream's `GetAccessModesAsString`: the short forms of the modes at `path`, in a fixed
/// order.
fn access_modes(obj: &Value, path: &str) -> String {
    let modes = joined(obj, path);
    let modes: Vec<&str> = modes.split(',').collect();
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(long, _)| modes.contains(long))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The phase at `path`, or `Terminating` for an object being deleted.
fn phase_or_terminating(obj: &Value, path: &str) -> Value {
    if meta::path(obj, "metadata.deletionTimestamp").is_some_and(|t| !t.is_null()) {
        json!("Terminating")
    } else {
        json!(text(obj, path))
    }
}

/// A string at `path`, `<unset>` when absent.
fn or_unset(obj: &Value, path: &str) -> Value {
    match meta::path(obj, path).and_then(Value::as_str) {
        Some(s) => json!(s),
        None => json!("<unset>"),
    }
}

const VOLUME_ACCESS_MODES: &str = "accessModes contains all ways the volume can be mounted. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes";
const VOLUME_MODE: &str = "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state. Value of Filesystem is implied when not included in spec.";

/// PersistentVolumes: `Capacity`, `Access Modes`, `Reclaim Policy`, `Status`, `Claim`,
/// `StorageClass`, `VolumeAttributesClass`, `Reason`, `Age`, wide `VolumeMode`.
pub(super) const PERSISTENT_VOLUMES: Printer = Printer {
    columns: &[
        Column::new(
            "Capacity",
            "capacity is the description of the persistent volume's resources and capacity. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
        ),
        Column::new("Access Modes", VOLUME_ACCESS_MODES),
        Column::new(
            "Reclaim Policy",
            "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin underlying this PersistentVolume. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
        ),
        Column::new(
            "Status",
            "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
        ),
        Column::new(
            "Claim",
            "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
        ),
        Column::new("StorageClass", "StorageClass of the pv"),
        Column::new("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
        Column::new(
            "Reason",
            "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
        ),
        AGE,
        Column::wide("VolumeMode", VOLUME_MODE),
    ],
    cells: |obj| {
        let claim = match (
            text(obj, "spec.claimRef.namespace"),
            text(obj, "spec.claimRef.name"),
        ) {
            (_, "") => String::new(),
            (ns, name) => format!("{ns}/{name}"),
        };
        vec![
            json!(text(obj, "spec.capacity.storage")),
            json!(access_modes(obj, "spec.accessModes")),
            json!(text(obj, "spec.persistentVolumeReclaimPolicy")),
            phase_or_terminating(obj, "status.phase"),
            json!(claim),
            json!(text(obj, "spec.storageClassName")),
            or_unset(obj, "spec.volumeAttributesClassName"),
            json!(text(obj, "status.reason")),
            age(obj),
            or_unset(obj, "spec.volumeMode"),
        ]
    },
};

/// PersistentVolumeClaims: `Status`, `Volume`, `Capacity`, `Access Modes`, `StorageClass`,
/// `VolumeAttributesClass`, `Age`, wide `VolumeMode` (capacity and modes once bound).
pub(super) const PERSISTENT_VOLUME_CLAIMS: Printer = Printer {
    columns: &[
        Column::new(
            "Status",
            "phase represents the current phase of PersistentVolumeClaim.",
        ),
        Column::new(
            "Volume",
            "volumeName is the binding reference to the PersistentVolume backing this claim.",
        ),
        Column::new(
            "Capacity",
            "capacity represents the actual resources of the underlying volume.",
        ),
        Column::new(
            "Access Modes",
            "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
        ),
        Column::new("StorageClass", "StorageClass of the pvc"),
        Column::new("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
        AGE,
        Column::wide(
            "VolumeMode",
            "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
        ),
    ],
    cells: |obj| {
        let bound = !text(obj, "spec.volumeName").is_empty();
        let (capacity, modes) = if bound {
            (
                text(obj, "status.capacity.storage").to_string(),
                access_modes(obj, "status.accessModes"),
            )
        } else {
            (String::new(), String::new())
        };
        vec![
            phase_or_terminating(obj, "status.phase"),
            json!(text(obj, "spec.volumeName")),
            json!(capacity),
            json!(modes),
            json!(text(obj, "spec.storageClassName")),
            or_unset(obj, "spec.volumeAttributesClassName"),
            age(obj),
            or_unset(obj, "spec.volumeMode"),
        ]
    },
};

/// ResourceQuotas: `Request` and `Limit` (`used/hard` per resource of `status.hard`, sorted;
/// `limits.*` under Limit), `Age`.
pub(super) const RESOURCE_QUOTAS: Printer = Printer {
    columns: &[
        Column::new(
            "Request",
            "Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        Column::new(
            "Limit",
            "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        ),
        AGE,
    ],
    cells: |obj| {
        let mut requests = Vec::new();
        let mut limits = Vec::new();
        for (name, hard) in meta::path(obj, "status.hard")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let used = meta::path(obj, "status.used")
                .and_then(|u| u.get(name))
                .and_then(Value::as_str)
                .unwrap_or("0");
            let entry = format!("{name}: {used}/{}", hard.as_str().unwrap_or("0"));
            if name.split('.').next() == Some("limits") && name.contains('.') {
                limits.push(entry);
            } else {
                requests.push(entry);
            }
        }
        vec![
            json!(requests.join(", ")),
            json!(limits.join(", ")),
            age(obj),
        ]
    },
};

/// PodTemplates: `Containers`, `Images`, `Pod Labels`.
pub(super) const POD_TEMPLATES: Printer = Printer {
    columns: &[
        Column::new("Containers", "Names of each container in the template."),
        Column::new(
            "Images",
            "Images referenced by each container in the template.",
        ),
        Column::new("Pod Labels", "The labels for the pod template."),
    ],
    cells: |obj| {
        let (names, images) = crate::kinds::printer::containers(obj, "template.spec.containers");
        vec![
            json!(names),
            json!(images),
            json!(label_map(obj, "template.metadata.labels")),
        ]
    },
};

/// ReplicationControllers: `Desired`, `Current`, `Ready`, `Age`, wide `Containers`, `Images`,
/// `Selector`.
pub(super) const REPLICATION_CONTROLLERS: Printer = Printer {
    columns: &[
        Column::new(
            "Desired",
            "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        ),
        Column::new(
            "Current",
            "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        ),
        Column::new(
            "Ready",
            "The number of ready replicas for this replication controller.",
        ),
        AGE,
        crate::kinds::printer::CONTAINERS,
        crate::kinds::printer::IMAGES,
        Column::wide(
            "Selector",
            "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
    ],
    cells: |obj| {
        let [containers, images] = crate::kinds::printer::template_containers(obj);
        vec![
            json!(int(obj, "spec.replicas")),
            json!(int(obj, "status.replicas")),
            json!(int(obj, "status.readyReplicas")),
            age(obj),
            containers,
            images,
            json!(label_map(obj, "spec.selector")),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_status_uses_container_reasons_like_kubectl() {
        let done = json!({"status": {"phase": "Succeeded", "containerStatuses": [
            {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        assert_eq!(pod_status_reason(&done), "Completed");
        let waiting = json!({"status": {"phase": "Pending", "containerStatuses": [
            {"state": {"waiting": {"reason": "ContainerCreating"}}}]}});
        assert_eq!(pod_status_reason(&waiting), "ContainerCreating");
        let running = json!({"status": {"phase": "Running", "containerStatuses": [
            {"state": {"running": {"startedAt": "t"}}}]}});
        assert_eq!(pod_status_reason(&running), "Running");
        let evicted = json!({"status": {"phase": "Failed", "reason": "Evicted"}});
        assert_eq!(pod_status_reason(&evicted), "Evicted");
    }

    #[test]
    fn endpoints_show_three_pairs_then_a_count() {
        let ep = json!({"subsets": [{
            "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
            "ports": [{"port": 80}, {"port": 443}],
        }]});
        assert_eq!(
            endpoints(&ep),
            "10.0.0.1:80,10.0.0.1:443,10.0.0.2:80 + 1 more..."
        );
        assert_eq!(endpoints(&json!({})), "<none>");
    }

    #[test]
    fn events_print_as_upstream() {
        let ev = json!({
            "metadata": {"name": "web.1"},
            "involvedObject": {"kind": "Pod", "name": "web"},
            "type": "Normal", "reason": "Started", "message": " started \n",
            "source": {"component": "kubelet", "host": "node-1"},
        });
        let cells = event_cells(&ev);
        assert_eq!(cells[0], "<unknown>");
        assert_eq!(cells[3], "pod/web");
        assert_eq!(cells[5], "kubelet, node-1");
        assert_eq!(cells[6], "started");
        assert_eq!(cells[8], "1");
        assert_eq!(cells[9], "web.1");
    }

    #[test]
    fn load_balancers_without_ingress_are_pending() {
        let svc =
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80, "nodePort": 30080}]}});
        let cells = service_cells(&svc);
        assert_eq!(cells[2], "<pending>");
        assert_eq!(cells[3], "80:30080/TCP");
    }
}
