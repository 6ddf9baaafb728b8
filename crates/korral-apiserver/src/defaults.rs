//! The defaults a real kube-apiserver fills into built-in objects on create and update.
//!
//! [`apply_builtin_defaults`] mirrors upstream's versioned defaulting functions
//! (`SetDefaults_*` of `core/v1`, `apps/v1`, `batch/v1`, `rbac/v1`, `apiextensions/v1`), the
//! registry strategies that fill fields on create (Job selectors, Namespace finalizers, Service
//! IP families) and the default admission plugins that touch Pods (`ServiceAccount`,
//! `DefaultTolerationSeconds`, `Priority`). It also fills the status fields upstream always
//! serializes (`status: {}` shapes, Pod `phase`/`qosClass`, Namespace `phase`).
//!
//! Rules followed everywhere: a value that is set is never changed (JSON `null` and, for string
//! fields, `""` count as unset, as they decode to Go zero values upstream); applying the
//! defaults twice changes nothing; malformed input (a string where an object belongs) is left
//! alone for validation to reject.
//!
//! Cluster IPs are not defaults: [`ServiceIpAllocator`] hands them out and
//! [`assign_cluster_ip`] fills `spec.clusterIP`/`spec.clusterIPs`.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause};

/// Label every namespace carries with its own name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Label of Job pods (and the Job's selector) holding the Job's uid.
pub const JOB_CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";

/// Label of Job pods holding the Job's name.
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

/// Legacy spelling of [`JOB_CONTROLLER_UID_LABEL`], still added by upstream.
pub const LEGACY_JOB_CONTROLLER_UID_LABEL: &str = "controller-uid";

/// Legacy spelling of [`JOB_NAME_LABEL`], still added by upstream.
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";

/// Fills the defaults upstream adds to a built-in object of `group`/`kind` on create and
/// update. Kinds without defaults (ConfigMap, Lease, custom resources, …) are left untouched.
///
/// Jobs get their generated selector and `controller-uid` labels from `metadata.uid`, which the
/// caller sets before calling.
pub fn apply_builtin_defaults(group: &str, kind: &str, obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match (group, kind) {
        ("", "Pod") => pod(root),
        ("", "PodTemplate") => {
            if let Some(template) = child(root, "template") {
                pod_template(template);
            }
        }
        ("", "ReplicationController") => replication_controller(root),
        ("", "Service") => service(root),
        ("", "Namespace") => namespace(root),
        ("", "Secret") => default_str(root, "type", "Opaque"),
        ("", "Endpoints") => endpoints(root),
        ("", "PersistentVolumeClaim") => persistent_volume_claim(root),
        ("apps", "Deployment") => deployment(root),
        ("apps", "ReplicaSet") => replica_set(root),
        ("apps", "StatefulSet") => stateful_set(root),
        ("apps", "DaemonSet") => daemon_set(root),
        ("batch", "Job") => job(root),
        ("batch", "CronJob") => cron_job(root),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => role_binding(root),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(root),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// JSON helpers
// ---------------------------------------------------------------------------------------------

/// Whether a field decodes to a Go nil/zero pointer: absent or `null`.
fn unset(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// Whether a string field decodes to Go's `""`: absent, `null` or empty.
fn unset_str(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(_) => false,
    }
}

/// Whether a field holding a list or map decodes to an empty one.
fn unset_collection(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    }
}

/// Whether a numeric field decodes to Go's `0`: absent, `null` or zero.
fn unset_number(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(_) => false,
    }
}

fn default_value(m: &mut Map<String, Value>, key: &str, value: Value) {
    if unset(m.get(key)) {
        m.insert(key.to_string(), value);
    }
}

fn default_str(m: &mut Map<String, Value>, key: &str, value: &str) {
    if unset_str(m.get(key)) {
        m.insert(key.to_string(), Value::String(value.to_string()));
    }
}

fn default_number(m: &mut Map<String, Value>, key: &str, value: i64) {
    if unset_number(m.get(key)) {
        m.insert(key.to_string(), Value::from(value));
    }
}

fn str_of<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    m.get(key).and_then(Value::as_str)
}

/// The object at `key`, if it is one.
fn child<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The object at `key`, created empty when unset; `None` when something else is there.
fn child_or_insert<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    if unset(m.get(key)) {
        m.insert(key.to_string(), Value::Object(Map::new()));
    }
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The objects of the list at `key`.
fn each<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

// ---------------------------------------------------------------------------------------------
// Pods and pod templates
// ---------------------------------------------------------------------------------------------

/// The image pull policy upstream derives from an image reference: `Always` for a `latest` tag
/// (explicit or implied by the absence of tag and digest), `IfNotPresent` otherwise, including
/// for references upstream cannot parse.
pub fn default_image_pull_policy(image: &str) -> &'static str {
    if image_tag(image).as_deref() == Some("latest") {
        "Always"
    } else {
        "IfNotPresent"
    }
}

/// The tag of an image reference as upstream's `parsers.ParseImageName` reports it: the
/// explicit tag, `latest` when there is neither tag nor digest, none for a digest-only
/// reference or an unparsable one.
fn image_tag(image: &str) -> Option<String> {
    if image.is_empty() || image.chars().any(char::is_whitespace) {
        return None;
    }
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    if digest.is_some_and(|d| !d.contains(':')) {
        return None;
    }
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (path, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    if path.is_empty() || path.ends_with('/') {
        return None;
    }
    // The first component is a registry host when it has a dot or port or is localhost; the
    // repository path after it must be lowercase.
    let repo = match path.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            rest
        }
        _ => path,
    };
    if repo.chars().any(|c| c.is_ascii_uppercase()) {
        return None;
    }
    match tag {
        Some("") => None,
        Some(t) if t.len() > 128 => None,
        Some(t) => Some(t.to_string()),
        None if digest.is_some() => None,
        None => Some("latest".to_string()),
    }
}

fn probe(p: &mut Map<String, Value>) {
    default_number(p, "timeoutSeconds", 1);
    default_number(p, "periodSeconds", 10);
    default_number(p, "successThreshold", 1);
    default_number(p, "failureThreshold", 3);
    handler(p);
    if let Some(grpc) = child(p, "grpc") {
        default_value(grpc, "service", json!(""));
    }
}

/// `httpGet` defaults of a probe or lifecycle handler.
fn handler(h: &mut Map<String, Value>) {
    if let Some(http) = child(h, "httpGet") {
        default_str(http, "path", "/");
        default_str(http, "scheme", "HTTP");
    }
}

fn object_field_selector(holder: &mut Map<String, Value>) {
    if let Some(field_ref) = child(holder, "fieldRef") {
        default_str(field_ref, "apiVersion", "v1");
    }
    if let Some(resource_ref) = child(holder, "resourceFieldRef") {
        // A zero `resource.Quantity` serializes as "0".
        default_value(resource_ref, "divisor", json!("0"));
    }
}

fn container(c: &mut Map<String, Value>) {
    if unset_str(c.get("imagePullPolicy")) {
        let policy = default_image_pull_policy(str_of(c, "image").unwrap_or(""));
        c.insert("imagePullPolicy".into(), json!(policy));
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    default_value(c, "resources", json!({}));
    for port in each(c, "ports") {
        default_str(port, "protocol", "TCP");
    }
    for env in each(c, "env") {
        if let Some(from) = child(env, "valueFrom") {
            object_field_selector(from);
        }
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = child(c, key) {
            probe(p);
        }
    }
    if let Some(lifecycle) = child(c, "lifecycle") {
        for key in ["postStart", "preStop"] {
            if let Some(h) = child(lifecycle, key) {
                handler(h);
            }
        }
    }
}

const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

fn volume(v: &mut Map<String, Value>) {
    if VOLUME_SOURCES.iter().all(|k| unset(v.get(*k))) {
        v.insert("emptyDir".into(), json!({}));
    }
    for key in ["secret", "configMap"] {
        if let Some(src) = child(v, key) {
            default_value(src, "defaultMode", json!(420));
        }
    }
    if let Some(src) = child(v, "downwardAPI") {
        default_value(src, "defaultMode", json!(420));
        for item in each(src, "items") {
            object_field_selector(item);
        }
    }
    if let Some(src) = child(v, "projected") {
        default_value(src, "defaultMode", json!(420));
        for source in each(src, "sources") {
            if let Some(token) = child(source, "serviceAccountToken") {
                default_value(token, "expirationSeconds", json!(3600));
            }
            if let Some(downward) = child(source, "downwardAPI") {
                for item in each(downward, "items") {
                    object_field_selector(item);
                }
            }
        }
    }
    volume_sources(v);
    if let Some(src) = child(v, "image")
        && unset_str(src.get("pullPolicy"))
    {
        let policy = default_image_pull_policy(str_of(src, "reference").unwrap_or(""));
        src.insert("pullPolicy".into(), json!(policy));
    }
    if let Some(template) = child(v, "ephemeral").and_then(|e| child(e, "volumeClaimTemplate"))
        && let Some(spec) = child(template, "spec")
    {
        default_value(spec, "volumeMode", json!("Filesystem"));
    }
}

/// One source's defaults: its field in the spec, whether an empty string counts as unset (a Go
/// string rather than a pointer), and each field with its default.
type SourceDefaults<'a> = (&'a str, bool, &'a [(&'a str, Value)]);

/// The `SetDefaults_*` of the volume source types a pod volume or a PV spec holds
/// (`pkg/apis/core/v1/defaults.go`; the pod and persistent variants default alike): a hostPath
/// type, an iSCSI interface, RBD pool/user/keyring, ScaleIO storage mode and FS type, Azure
/// disk caching/kind/FS type/read-only.
pub(crate) fn volume_sources(spec: &mut Map<String, Value>) {
    let defaults: [SourceDefaults<'_>; 5] = [
        ("hostPath", false, &[("type", json!(""))]),
        ("iscsi", true, &[("iscsiInterface", json!("default"))]),
        (
            "rbd",
            true,
            &[
                ("pool", json!("rbd")),
                ("user", json!("admin")),
                ("keyring", json!("/etc/ceph/keyring")),
            ],
        ),
        (
            "scaleIO",
            true,
            &[
                ("storageMode", json!("ThinProvisioned")),
                ("fsType", json!("xfs")),
            ],
        ),
        (
            "azureDisk",
            false,
            &[
                ("cachingMode", json!("ReadWrite")),
                ("kind", json!("Shared")),
                ("fsType", json!("ext4")),
                ("readOnly", json!(false)),
            ],
        ),
    ];
    for (source, empty_is_unset, fields) in defaults {
        let Some(map) = spec.get_mut(source).and_then(Value::as_object_mut) else {
            continue;
        };
        for (field, value) in fields {
            let unset = match map.get(*field) {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => empty_is_unset && s.is_empty(),
                Some(_) => false,
            };
            if unset {
                map.insert((*field).to_string(), value.clone());
            }
        }
    }
}

/// `SetDefaults_PodSpec` and what it reaches (containers, volumes); `is_pod` adds the defaults
/// upstream applies only to Pod objects, not templates (`SetDefaults_Pod`).
fn pod_spec(spec: &mut Map<String, Value>, is_pod: bool) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_value(spec, "securityContext", json!({}));
    default_value(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        for c in each(spec, key) {
            container(c);
        }
    }
    for v in each(spec, "volumes") {
        volume(v);
    }
    if !is_pod {
        return;
    }
    default_value(spec, "enableServiceLinks", json!(true));
    for key in ["initContainers", "containers"] {
        for c in each(spec, key) {
            requests_from_limits(c);
        }
    }
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        for key in ["initContainers", "containers"] {
            for c in each(spec, key) {
                for port in each(c, "ports") {
                    if unset_number(port.get("hostPort"))
                        && let Some(p) = port.get("containerPort").cloned()
                    {
                        port.insert("hostPort".into(), p);
                    }
                }
            }
        }
    }
}

/// Requests default to limits for every resource with a limit and no request.
fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(resources) = child(c, "resources") else {
        return;
    };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    let Some(requests) = child_or_insert(resources, "requests") else {
        return;
    };
    for (name, quantity) in limits {
        requests.entry(name).or_insert(quantity);
    }
}

fn pod_template(template: &mut Map<String, Value>) {
    if let Some(spec) = child(template, "spec") {
        pod_spec(spec, false);
    }
}

/// Tolerations the `DefaultTolerationSeconds` admission plugin adds to every pod.
const DEFAULT_TOLERATION_KEYS: [&str; 2] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
];

fn pod(root: &mut Map<String, Value>) {
    let Some(spec) = child_or_insert(root, "spec") else {
        return;
    };
    pod_spec(spec, true);

    // ServiceAccount admission (and the v1 mirror of the deprecated `serviceAccount` field).
    if unset_str(spec.get("serviceAccountName")) {
        let name = str_of(spec, "serviceAccount")
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
            .to_string();
        spec.insert("serviceAccountName".into(), json!(name));
    }
    if unset_str(spec.get("serviceAccount"))
        && let Some(name) = spec.get("serviceAccountName").cloned()
    {
        spec.insert("serviceAccount".into(), name);
    }

    // DefaultTolerationSeconds admission.
    if unset(spec.get("tolerations")) {
        spec.insert("tolerations".into(), json!([]));
    }
    if let Some(tolerations) = spec.get_mut("tolerations").and_then(Value::as_array_mut) {
        for key in DEFAULT_TOLERATION_KEYS {
            let tolerated = tolerations.iter().any(|t| {
                let k = t.get("key").and_then(Value::as_str).unwrap_or("");
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
                (k == key || k.is_empty()) && (effect == "NoExecute" || effect.is_empty())
            });
            if !tolerated {
                tolerations.push(json!({
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }));
            }
        }
    }

    // A class-less pod's priority is 0 unless a global default PriorityClass exists (the
    // Priority admission plugin, `crate::builtin_admission`, sets it then, and for named
    // classes).
    if unset(spec.get("priority")) && str_of(spec, "priorityClassName").unwrap_or("").is_empty() {
        spec.insert("priority".into(), json!(0));
    }
    default_str(spec, "preemptionPolicy", "PreemptLowerPriority");

    let qos = pod_qos_class(spec);
    if let Some(status) = child_or_insert(root, "status") {
        default_str(status, "phase", "Pending");
        default_str(status, "qosClass", qos);
    }
}

/// The QoS class upstream computes for a pod spec (`BestEffort`, `Burstable`, `Guaranteed`),
/// from the cpu and memory requests and limits of its containers and init containers.
pub fn pod_qos_class(spec: &Map<String, Value>) -> &'static str {
    use crate::quantity::{self, Quantity};
    use std::cmp::Ordering;
    use std::collections::BTreeMap;
    const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];
    // Adds the positive cpu and memory quantities of a list to `sums`; returns how many.
    fn add_positive(list: Option<&Value>, sums: &mut BTreeMap<&'static str, Quantity>) -> usize {
        let mut found = 0;
        for (name, q) in list.and_then(Value::as_object).into_iter().flatten() {
            let Some(res) = QOS_RESOURCES.iter().find(|r| *r == name) else {
                continue;
            };
            let Some(v) = quantity::from_json(q)
                .ok()
                .filter(|v| !v.is_zero() && !v.is_negative())
            else {
                continue;
            };
            found += 1;
            match sums.get(res) {
                Some(sum) => {
                    if let Some(total) = sum.checked_add(&v) {
                        sums.insert(res, total);
                    }
                }
                None => {
                    sums.insert(res, v);
                }
            }
        }
        found
    }
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten();
    for c in containers {
        let resources = c.get("resources");
        add_positive(resources.and_then(|r| r.get("requests")), &mut requests);
        let found = add_positive(resources.and_then(|r| r.get("limits")), &mut limits);
        if found < QOS_RESOURCES.len() {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests.len() == limits.len()
        && requests
            .iter()
            .all(|(k, v)| limits.get(k).is_some_and(|l| l.cmp(v) == Ordering::Equal))
    {
        return "Guaranteed";
    }
    "Burstable"
}

// ---------------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------------

fn template_of(spec: &mut Map<String, Value>) {
    if let Some(template) = child(spec, "template") {
        pod_template(template);
    }
}

fn deployment(root: &mut Map<String, Value>) {
    if let Some(spec) = child_or_insert(root, "spec") {
        default_value(spec, "replicas", json!(1));
        if let Some(strategy) = child_or_insert(spec, "strategy") {
            default_str(strategy, "type", "RollingUpdate");
            if str_of(strategy, "type") == Some("RollingUpdate")
                && let Some(rolling) = child_or_insert(strategy, "rollingUpdate")
            {
                default_value(rolling, "maxUnavailable", json!("25%"));
                default_value(rolling, "maxSurge", json!("25%"));
            }
        }
        default_value(spec, "revisionHistoryLimit", json!(10));
        default_value(spec, "progressDeadlineSeconds", json!(600));
        template_of(spec);
    }
    default_value(root, "status", json!({}));
}

fn replica_set(root: &mut Map<String, Value>) {
    if let Some(spec) = child_or_insert(root, "spec") {
        default_value(spec, "replicas", json!(1));
        template_of(spec);
    }
    if let Some(status) = child_or_insert(root, "status") {
        default_value(status, "replicas", json!(0));
    }
}

fn replication_controller(root: &mut Map<String, Value>) {
    let template_labels = root
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.is_object())
        .cloned();
    if let Some(spec) = child_or_insert(root, "spec") {
        if let Some(labels) = &template_labels
            && unset_collection(spec.get("selector"))
        {
            spec.insert("selector".into(), labels.clone());
        }
        default_value(spec, "replicas", json!(1));
        template_of(spec);
    }
    if let Some(labels) = template_labels
        && let Some(metadata) = child_or_insert(root, "metadata")
        && unset_collection(metadata.get("labels"))
    {
        metadata.insert("labels".into(), labels);
    }
    if let Some(status) = child_or_insert(root, "status") {
        default_value(status, "replicas", json!(0));
    }
}

fn persistent_volume_claim(root: &mut Map<String, Value>) {
    if let Some(spec) = child_or_insert(root, "spec") {
        default_value(spec, "volumeMode", json!("Filesystem"));
    }
    if let Some(status) = child_or_insert(root, "status") {
        default_str(status, "phase", "Pending");
    }
}

fn stateful_set(root: &mut Map<String, Value>) {
    if let Some(spec) = child_or_insert(root, "spec") {
        default_str(spec, "podManagementPolicy", "OrderedReady");
        if let Some(strategy) = child_or_insert(spec, "updateStrategy") {
            if unset_str(strategy.get("type")) {
                strategy.insert("type".into(), json!("RollingUpdate"));
                default_value(strategy, "rollingUpdate", json!({}));
            }
            if str_of(strategy, "type") == Some("RollingUpdate")
                && let Some(rolling) = child(strategy, "rollingUpdate")
            {
                default_value(rolling, "partition", json!(0));
            }
        }
        if let Some(policy) = child_or_insert(spec, "persistentVolumeClaimRetentionPolicy") {
            default_str(policy, "whenDeleted", "Retain");
            default_str(policy, "whenScaled", "Retain");
        }
        default_value(spec, "replicas", json!(1));
        default_value(spec, "revisionHistoryLimit", json!(10));
        template_of(spec);
        for claim in each(spec, "volumeClaimTemplates") {
            persistent_volume_claim(claim);
        }
    }
    if let Some(status) = child_or_insert(root, "status") {
        default_value(status, "replicas", json!(0));
        default_value(status, "availableReplicas", json!(0));
    }
}

fn daemon_set(root: &mut Map<String, Value>) {
    if let Some(spec) = child_or_insert(root, "spec") {
        if let Some(strategy) = child_or_insert(spec, "updateStrategy") {
            default_str(strategy, "type", "RollingUpdate");
            if str_of(strategy, "type") == Some("RollingUpdate")
                && let Some(rolling) = child_or_insert(strategy, "rollingUpdate")
            {
                default_value(rolling, "maxUnavailable", json!(1));
                default_value(rolling, "maxSurge", json!(0));
            }
        }
        default_value(spec, "revisionHistoryLimit", json!(10));
        template_of(spec);
    }
    if let Some(status) = child_or_insert(root, "status") {
        for key in [
            "currentNumberScheduled",
            "numberMisscheduled",
            "desiredNumberScheduled",
            "numberReady",
        ] {
            default_value(status, key, json!(0));
        }
    }
}

fn job(root: &mut Map<String, Value>) {
    let (name, uid) = {
        let metadata = root.get("metadata");
        let get = |k: &str| {
            metadata
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        (get("name"), get("uid"))
    };
    let mut template_labels = None;
    if let Some(spec) = child_or_insert(root, "spec") {
        if unset(spec.get("completions")) && unset(spec.get("parallelism")) {
            spec.insert("completions".into(), json!(1));
            spec.insert("parallelism".into(), json!(1));
        }
        default_value(spec, "parallelism", json!(1));
        if unset(spec.get("backoffLimit")) {
            let limit = if unset(spec.get("backoffLimitPerIndex")) {
                6
            } else {
                i64::from(i32::MAX)
            };
            spec.insert("backoffLimit".into(), json!(limit));
        }
        default_value(spec, "completionMode", json!("NonIndexed"));
        default_value(spec, "suspend", json!(false));
        let has_failure_policy = !unset(spec.get("podFailurePolicy"));
        if let Some(policy) = child(spec, "podFailurePolicy") {
            for rule in each(policy, "rules") {
                for pattern in each(rule, "onPodConditions") {
                    default_str(pattern, "status", "True");
                }
            }
        }
        default_value(
            spec,
            "podReplacementPolicy",
            json!(if has_failure_policy {
                "Failed"
            } else {
                "TerminatingOrFailed"
            }),
        );
        default_value(spec, "manualSelector", json!(false));
        if spec.get("manualSelector") != Some(&Value::Bool(true)) {
            generate_job_selector(spec, &name, &uid);
        }
        template_of(spec);
        template_labels = spec
            .get("template")
            .and_then(|t| t.get("metadata"))
            .and_then(|m| m.get("labels"))
            .filter(|l| l.is_object())
            .cloned();
    }
    // Upstream copies the template labels to a label-less Job (on decode, so after the
    // selector labels were generated).
    if let Some(labels) = template_labels
        && let Some(metadata) = child_or_insert(root, "metadata")
        && unset_collection(metadata.get("labels"))
    {
        metadata.insert("labels".into(), labels);
    }
    default_value(root, "status", json!({}));
}

/// Upstream's `generateSelector`: template labels with the Job's name and uid (new and legacy
/// spellings, keeping values the user set) and a `matchLabels` selector on the uid.
fn generate_job_selector(spec: &mut Map<String, Value>, name: &str, uid: &str) {
    if uid.is_empty() {
        tracing::debug!(
            job = name,
            "no metadata.uid: not generating the Job selector"
        );
        return;
    }
    let Some(labels) = child(spec, "template")
        .and_then(|t| child_or_insert(t, "metadata"))
        .and_then(|m| child_or_insert(m, "labels"))
    else {
        return;
    };
    for (key, value) in [
        (LEGACY_JOB_NAME_LABEL, name),
        (JOB_NAME_LABEL, name),
        (LEGACY_JOB_CONTROLLER_UID_LABEL, uid),
        (JOB_CONTROLLER_UID_LABEL, uid),
    ] {
        labels.entry(key).or_insert_with(|| json!(value));
    }
    if let Some(match_labels) =
        child_or_insert(spec, "selector").and_then(|s| child_or_insert(s, "matchLabels"))
    {
        match_labels
            .entry(JOB_CONTROLLER_UID_LABEL)
            .or_insert_with(|| json!(uid));
    }
}

fn cron_job(root: &mut Map<String, Value>) {
    if let Some(spec) = child_or_insert(root, "spec") {
        default_str(spec, "concurrencyPolicy", "Allow");
        default_value(spec, "suspend", json!(false));
        default_value(spec, "successfulJobsHistoryLimit", json!(3));
        default_value(spec, "failedJobsHistoryLimit", json!(1));
        if let Some(job_spec) = child(spec, "jobTemplate").and_then(|t| child(t, "spec")) {
            template_of(job_spec);
        }
    }
    default_value(root, "status", json!({}));
}

// ---------------------------------------------------------------------------------------------
// Core kinds
// ---------------------------------------------------------------------------------------------

fn service(root: &mut Map<String, Value>) {
    if let Some(spec) = child_or_insert(root, "spec") {
        service_spec(spec);
    }
    if let Some(status) = child_or_insert(root, "status") {
        default_value(status, "loadBalancer", json!({}));
    }
}

fn service_spec(spec: &mut Map<String, Value>) {
    default_str(spec, "sessionAffinity", "None");
    if str_of(spec, "sessionAffinity") == Some("ClientIP") {
        let has_timeout = spec
            .get("sessionAffinityConfig")
            .and_then(|c| c.get("clientIP"))
            .and_then(|c| c.get("timeoutSeconds"))
            .is_some_and(|t| !t.is_null());
        if !has_timeout {
            spec.insert(
                "sessionAffinityConfig".into(),
                json!({"clientIP": {"timeoutSeconds": 10800}}),
            );
        }
    }
    default_str(spec, "type", "ClusterIP");
    let service_type = str_of(spec, "type").unwrap_or("ClusterIP").to_string();
    for port in each(spec, "ports") {
        default_str(port, "protocol", "TCP");
        let target_unset = match port.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if target_unset && let Some(p) = port.get("port").cloned() {
            port.insert("targetPort".into(), p);
        }
    }
    let has_external_ips = !unset_collection(spec.get("externalIPs"));
    let externally_accessible = matches!(service_type.as_str(), "LoadBalancer" | "NodePort")
        || (service_type == "ClusterIP" && has_external_ips);
    if externally_accessible {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(
        service_type.as_str(),
        "ClusterIP" | "NodePort" | "LoadBalancer"
    ) {
        default_value(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if service_type == "LoadBalancer" {
        default_value(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if service_type == "ExternalName" {
        return;
    }

    // clusterIP and clusterIPs mirror each other (upstream normalizes them on create).
    let cluster_ip = str_of(spec, "clusterIP").unwrap_or("").to_string();
    let first_cluster_ip = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map(str::to_string);
    if !cluster_ip.is_empty() && unset_collection(spec.get("clusterIPs")) {
        spec.insert("clusterIPs".into(), json!([cluster_ip]));
    } else if cluster_ip.is_empty()
        && let Some(first) = first_cluster_ip.filter(|f| !f.is_empty())
    {
        spec.insert("clusterIP".into(), json!(first));
    }

    // IP families, as upstream initializes them on a single-stack IPv4 cluster.
    let headless = str_of(spec, "clusterIP") == Some("None");
    let selectorless = unset_collection(spec.get("selector"));
    if unset_str(spec.get("ipFamilyPolicy")) {
        let policy = if headless && selectorless {
            "RequireDualStack"
        } else {
            "SingleStack"
        };
        spec.insert("ipFamilyPolicy".into(), json!(policy));
    }
    if unset_collection(spec.get("ipFamilies")) {
        let dual =
            headless && selectorless && str_of(spec, "ipFamilyPolicy") != Some("SingleStack");
        let families = if dual {
            json!(["IPv4", "IPv6"])
        } else {
            json!(["IPv4"])
        };
        spec.insert("ipFamilies".into(), families);
    }
}

fn namespace(root: &mut Map<String, Value>) {
    let deleting = root
        .get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null());
    if let Some(metadata) = child_or_insert(root, "metadata")
        && let Some(name) = str_of(metadata, "name").map(str::to_string)
        && !name.is_empty()
        && let Some(labels) = child_or_insert(metadata, "labels")
    {
        labels.insert(NAMESPACE_NAME_LABEL.into(), json!(name));
    }
    // Upstream sets the finalizer on create and keeps it on updates until the namespace
    // controller removes it while deleting; never put it back on a namespace being deleted.
    if !deleting && let Some(spec) = child_or_insert(root, "spec") {
        default_value(spec, "finalizers", json!(["kubernetes"]));
    }
    if let Some(status) = child_or_insert(root, "status") {
        default_str(status, "phase", "Active");
    }
}

fn endpoints(root: &mut Map<String, Value>) {
    for subset in each(root, "subsets") {
        for port in each(subset, "ports") {
            default_str(port, "protocol", "TCP");
        }
    }
}

fn role_binding(root: &mut Map<String, Value>) {
    if let Some(role_ref) = child(root, "roleRef") {
        default_str(role_ref, "apiGroup", "rbac.authorization.k8s.io");
    }
    for subject in each(root, "subjects") {
        if matches!(str_of(subject, "kind"), Some("User" | "Group")) {
            default_str(subject, "apiGroup", "rbac.authorization.k8s.io");
        }
    }
}

fn crd(root: &mut Map<String, Value>) {
    let Some(spec) = child(root, "spec") else {
        return;
    };
    if let Some(names) = child(spec, "names") {
        let kind = str_of(names, "kind").unwrap_or("").to_string();
        default_str(names, "singular", &kind.to_lowercase());
        if !kind.is_empty() {
            default_str(names, "listKind", &format!("{kind}List"));
        }
    }
    if let Some(conversion) = child_or_insert(spec, "conversion") {
        default_str(conversion, "strategy", "None");
        if let Some(service) = child(conversion, "webhook")
            .and_then(|w| child(w, "clientConfig"))
            .and_then(|c| child(c, "service"))
        {
            default_value(service, "port", json!(443));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Service cluster IPs
// ---------------------------------------------------------------------------------------------

/// Why a cluster IP could not be assigned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceIpError {
    /// The service CIDR given to [`ServiceIpAllocator::with_range`] is not an IPv4 CIDR with a
    /// prefix between /8 and /30.
    #[error("parsing the service CIDR {0:?}: expected an IPv4 CIDR between /8 and /30")]
    #[cfg(test)]
    ParseRange(String),
    /// The requested IP is not an IPv4 address.
    #[error("failed to allocate IP {ip}: {ip:?} is not a valid IPv4 address")]
    InvalidAddress {
        /// The requested value.
        ip: String,
    },
    /// The requested IP is outside the service range.
    #[error(
        "failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}"
    )]
    NotInRange {
        /// The requested IP.
        ip: Ipv4Addr,
        /// The service CIDR.
        range: String,
    },
    /// The requested IP belongs to another service.
    #[error("failed to allocate IP {ip}: provided IP is already allocated")]
    AlreadyAllocated {
        /// The requested IP.
        ip: Ipv4Addr,
    },
    /// Every address of the range is in use.
    #[error("failed to allocate a serviceIP: range is full")]
    RangeFull,
}

impl ServiceIpError {
    /// The error upstream answers with: `422 Invalid` on `spec.clusterIPs` for a requested IP
    /// that cannot be had, `500 InternalError` when the range is exhausted or misconfigured.
    pub fn to_api_error(&self, service_name: &str, requested: &[String]) -> ApiError {
        match self {
            Self::InvalidAddress { .. }
            | Self::NotInRange { .. }
            | Self::AlreadyAllocated { .. } => {
                let value = Value::from(requested.to_vec());
                ApiError::invalid(
                    "",
                    "Service",
                    service_name,
                    vec![Cause::new(
                        "FieldValueInvalid",
                        "spec.clusterIPs",
                        format!("Invalid value: {value}: {self}"),
                    )],
                )
            }
            Self::RangeFull => ApiError::internal(self.to_string()),
            #[cfg(test)]
            Self::ParseRange(_) => ApiError::internal(self.to_string()),
        }
    }
}

/// Hands out Service cluster IPs from an IPv4 range (`10.96.0.0/12` by default), never the
/// network or broadcast address nor the first address, which belongs to the `kubernetes`
/// service.
///
/// Like upstream, dynamic allocations come from the upper part of the range first and the
/// lowest addresses (the "static band", at most 256) are left for users who pick their IP
/// (`10.96.0.10` for DNS, say) until the rest is full. Allocation walks forward from the last
/// address handed out so a released IP is not reused at once. The allocator keeps no record of
/// what is in use: callers pass the addresses taken.
#[derive(Debug)]
pub struct ServiceIpAllocator {
    network: u32,
    prefix_len: u8,
    /// Offset (from the network address) to try next.
    cursor: u32,
}

impl Default for ServiceIpAllocator {
    fn default() -> Self {
        Self::new()
    }
}

impl ServiceIpAllocator {
    /// An allocator for the default service range of kubeadm and kube-apiserver,
    /// `10.96.0.0/12`.
    pub fn new() -> Self {
        Self::from_parts(u32::from(Ipv4Addr::new(10, 96, 0, 0)), 12)
    }

    /// An allocator for `cidr` (`a.b.c.d/n`, 8 ≤ n ≤ 30; host bits are ignored).
    #[cfg(test)]
    pub fn with_range(cidr: &str) -> Result<Self, ServiceIpError> {
        let err = || ServiceIpError::ParseRange(cidr.to_string());
        let (addr, len) = cidr.trim().split_once('/').ok_or_else(err)?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| err())?;
        let len: u8 = len.parse().map_err(|_| err())?;
        if !(8..=30).contains(&len) {
            return Err(err());
        }
        let mask = u32::MAX << (32 - u32::from(len));
        Ok(Self::from_parts(u32::from(addr) & mask, len))
    }

    fn from_parts(network: u32, prefix_len: u8) -> Self {
        let mut allocator = Self {
            network,
            prefix_len,
            cursor: 0,
        };
        allocator.cursor = allocator.dynamic_start();
        allocator
    }

    /// Addresses in the range, network and broadcast included.
    fn size(&self) -> u32 {
        1u32 << (32 - u32::from(self.prefix_len))
    }

    /// First offset of the dynamic band: upstream's static band is `clamp(size/16, 16, 256)`
    /// addresses starting at the first usable one.
    fn dynamic_start(&self) -> u32 {
        let usable = self.size() - 2;
        1 + (usable / 16).clamp(16, 256).min(usable)
    }

    /// The range as a CIDR string.
    pub fn range(&self) -> String {
        format!("{}/{}", Ipv4Addr::from(self.network), self.prefix_len)
    }

    /// The first usable address, reserved for the `kubernetes` service (`10.96.0.1`).
    #[cfg(test)]
    pub fn kubernetes_service_ip(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network + 1)
    }

    /// Whether `ip` is a usable address of the range (not the network or broadcast address).
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        let ip = u32::from(ip);
        ip > self.network && ip - self.network < self.size() - 1
    }

    /// Checks that a user-requested `ip` is in the range and not in `in_use`.
    pub fn check_requested(
        &self,
        ip: Ipv4Addr,
        in_use: &HashSet<Ipv4Addr>,
    ) -> Result<(), ServiceIpError> {
        if !self.contains(ip) {
            return Err(ServiceIpError::NotInRange {
                ip,
                range: self.range(),
            });
        }
        if in_use.contains(&ip) {
            return Err(ServiceIpError::AlreadyAllocated { ip });
        }
        Ok(())
    }

    /// A free address: the next one after the last handed out in the dynamic band, else in the
    /// static band; never the `kubernetes` service address nor one in `in_use`.
    pub fn allocate(&mut self, in_use: &HashSet<Ipv4Addr>) -> Result<Ipv4Addr, ServiceIpError> {
        let last = self.size() - 1; // broadcast offset, exclusive end
        let dynamic = self.dynamic_start();
        let start = self.cursor.clamp(dynamic, last.max(dynamic));
        let free = |offset: u32| {
            let ip = Ipv4Addr::from(self.network + offset);
            (offset != 1 && !in_use.contains(&ip)).then_some(ip)
        };
        let found = (start..last)
            .chain(dynamic..start)
            .chain(1..dynamic)
            .find_map(free);
        match found {
            Some(ip) => {
                let offset = u32::from(ip) - self.network;
                let next = if offset + 1 >= last {
                    dynamic
                } else {
                    offset + 1
                };
                self.cursor = next;
                Ok(ip)
            }
            None => Err(ServiceIpError::RangeFull),
        }
    }
}

impl ServiceIpAllocator {
    /// Fills the cluster IP of a Service being created (see [`assign_cluster_ip`]), given the
    /// cluster IPs of the existing Services (unparsable entries and `None` are ignored).
    /// Returns the address newly taken, if any.
    #[cfg(test)]
    pub fn assign(
        &mut self,
        service: &mut Value,
        in_use: &[String],
    ) -> Result<Option<Ipv4Addr>, ServiceIpError> {
        assign_cluster_ip(service, None, self, &parse_in_use(in_use))
    }

    /// Like [`Self::assign`] for a Service being replaced or patched: a cluster IP the update
    /// omits is carried over from `old`, one it repeats is kept without a check.
    #[cfg(test)]
    pub fn assign_update(
        &mut self,
        service: &mut Value,
        old: &Value,
        in_use: &[String],
    ) -> Result<Option<Ipv4Addr>, ServiceIpError> {
        assign_cluster_ip(service, Some(old), self, &parse_in_use(in_use))
    }
}

#[cfg(test)]
fn parse_in_use(in_use: &[String]) -> HashSet<Ipv4Addr> {
    in_use.iter().filter_map(|ip| ip.parse().ok()).collect()
}

/// The cluster IPs (IPv4) of `services` (Service objects), for [`ServiceIpAllocator`].
pub fn cluster_ips_in_use<'a>(services: impl IntoIterator<Item = &'a Value>) -> HashSet<Ipv4Addr> {
    let mut ips = HashSet::new();
    for svc in services {
        let spec = svc.get("spec");
        let single = spec
            .and_then(|s| s.get("clusterIP"))
            .and_then(Value::as_str);
        let many = spec
            .and_then(|s| s.get("clusterIPs"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str);
        for ip in single.into_iter().chain(many) {
            if let Ok(ip) = ip.parse::<Ipv4Addr>() {
                ips.insert(ip);
            }
        }
    }
    ips
}

/// Fills `spec.clusterIP` and `spec.clusterIPs` of a Service of type ClusterIP, NodePort or
/// LoadBalancer (after [`apply_builtin_defaults`]): on update (`old` given) a missing IP is
/// carried over from the old object; a requested IP is checked against the range and `in_use`
/// (unless the old object already held it); otherwise one is allocated. Headless (`None`) and
/// ExternalName services get nothing.
///
/// Returns the address newly taken, if any, for the caller to record.
pub fn assign_cluster_ip(
    service: &mut Value,
    old: Option<&Value>,
    allocator: &mut ServiceIpAllocator,
    in_use: &HashSet<Ipv4Addr>,
) -> Result<Option<Ipv4Addr>, ServiceIpError> {
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(None);
    };
    let service_type = str_of(spec, "type").unwrap_or("ClusterIP");
    if !matches!(service_type, "ClusterIP" | "NodePort" | "LoadBalancer") {
        return Ok(None);
    }
    let requested = str_of(spec, "clusterIP")
        .filter(|s| !s.is_empty())
        .or_else(|| {
            spec.get("clusterIPs")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .map(str::to_string);
    if requested.as_deref() == Some("None") {
        return Ok(None);
    }
    let old_spec = old.and_then(|o| o.get("spec"));
    let old_ip = old_spec
        .and_then(|s| s.get("clusterIP"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty() && *s != "None")
        .map(str::to_string);

    let Some(requested) = requested else {
        if let (Some(old_ip), Some(old_spec)) = (old_ip, old_spec) {
            let old_ips = old_spec
                .get("clusterIPs")
                .filter(|v| !unset_collection(Some(v)))
                .cloned()
                .unwrap_or_else(|| json!([old_ip]));
            spec.insert("clusterIP".into(), json!(old_ip));
            spec.insert("clusterIPs".into(), old_ips);
            return Ok(None);
        }
        let ip = allocator.allocate(in_use)?;
        spec.insert("clusterIP".into(), json!(ip.to_string()));
        spec.insert("clusterIPs".into(), json!([ip.to_string()]));
        tracing::debug!(%ip, "allocated service cluster IP");
        return Ok(Some(ip));
    };

    let ip: Ipv4Addr = requested
        .parse()
        .map_err(|_| ServiceIpError::InvalidAddress {
            ip: requested.clone(),
        })?;
    if !unset_str(spec.get("clusterIP")) && unset_collection(spec.get("clusterIPs")) {
        spec.insert("clusterIPs".into(), json!([requested]));
    } else if unset_str(spec.get("clusterIP")) {
        spec.insert("clusterIP".into(), json!(requested));
    }
    if old_ip.as_deref() == Some(requested.as_str()) {
        return Ok(None);
    }
    allocator.check_requested(ip, in_use)?;
    Ok(Some(ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The object without the fields a server run makes unique.
    fn strip(mut v: Value) -> Value {
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "managedFields",
                "generation",
            ] {
                m.remove(k);
            }
        }
        if let Some(m) = v.as_object_mut() {
            m.remove("status");
        }
        v
    }

    fn defaulted(group: &str, kind: &str, mut v: Value) -> Value {
        apply_builtin_defaults(group, kind, &mut v);
        let once = v.clone();
        apply_builtin_defaults(group, kind, &mut v);
        assert_eq!(once, v, "{kind} defaults are not idempotent");
        v
    }

    const POD_SPEC_DEFAULTS: [(&str, &str); 2] = [
        ("terminationMessagePath", "/dev/termination-log"),
        ("terminationMessagePolicy", "File"),
    ];

    #[test]
    fn pod_matches_reference_capture() {
        // create-pod-defaults.json: the request body and the upstream answer.
        let input = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p1", "namespace": "ref"},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}
        });
        let mut expected = json!({
            "kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "p1", "namespace": "ref"},
            "spec": {
                "containers": [{
                    "name": "c", "image": "busybox:1.36", "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"
                }],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "securityContext": {},
                "schedulerName": "default-scheduler",
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300}
                ],
                "priority": 0, "enableServiceLinks": true,
                "preemptionPolicy": "PreemptLowerPriority"
            },
            "status": {"phase": "Pending", "qosClass": "BestEffort"}
        });
        // The reference server ran without the ServiceAccount admission plugin; with it (the
        // default) the pod also gets its service account.
        expected["spec"]["serviceAccountName"] = json!("default");
        expected["spec"]["serviceAccount"] = json!("default");
        let out = defaulted("", "Pod", input);
        assert_eq!(out["status"], expected["status"]);
        assert_eq!(strip(out), strip(expected));
    }

    #[test]
    fn deployment_matches_reference_capture() {
        let input = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "ref"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                                             "ports": [{"containerPort": 80}]}]}
                }
            }
        });
        let expected = json!({
            "kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": "web", "namespace": "ref"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [{
                            "name": "nginx", "image": "nginx:1.27",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "IfNotPresent"
                        }],
                        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                        "dnsPolicy": "ClusterFirst", "securityContext": {},
                        "schedulerName": "default-scheduler"
                    }
                },
                "strategy": {"type": "RollingUpdate",
                             "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600
            },
            "status": {}
        });
        let out = defaulted("apps", "Deployment", input);
        assert_eq!(out["status"], expected["status"]);
        assert_eq!(strip(out), strip(expected));
    }

    #[test]
    fn service_matches_reference_capture() {
        let input = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "svc", "namespace": "ref"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
        });
        let expected = json!({
            "kind": "Service", "apiVersion": "v1",
            "metadata": {"name": "svc", "namespace": "ref"},
            "spec": {
                "ports": [{"protocol": "TCP", "port": 80, "targetPort": 80}],
                "selector": {"app": "web"},
                "clusterIP": "10.96.1.1", "clusterIPs": ["10.96.1.1"],
                "type": "ClusterIP", "sessionAffinity": "None",
                "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                "internalTrafficPolicy": "Cluster"
            },
            "status": {"loadBalancer": {}}
        });
        let mut out = defaulted("", "Service", input);
        let mut allocator = ServiceIpAllocator::new();
        let ip = assign_cluster_ip(&mut out, None, &mut allocator, &HashSet::new());
        assert_eq!(ip, Ok(Some(Ipv4Addr::new(10, 96, 1, 1))));
        assert_eq!(out["status"], expected["status"]);
        assert_eq!(strip(out), strip(expected));
    }

    #[test]
    fn job_matches_reference_capture() {
        let uid = "279b9b22-9510-451a-9a27-491097d90070";
        let input = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "tabs", "uid": uid},
            "spec": {"template": {"metadata": {}, "spec": {
                "containers": [{"name": "j", "image": "busybox:1.36", "resources": {}}],
                "restartPolicy": "Never"
            }}}
        });
        let labels = json!({
            "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "j",
            "controller-uid": uid, "job-name": "j"
        });
        let expected = json!({
            "kind": "Job", "apiVersion": "batch/v1",
            "metadata": {"name": "j", "namespace": "tabs", "uid": uid, "labels": labels},
            "spec": {
                "parallelism": 1, "completions": 1, "backoffLimit": 6,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                "manualSelector": false,
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [{
                            "name": "j", "image": "busybox:1.36", "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "IfNotPresent"
                        }],
                        "restartPolicy": "Never", "terminationGracePeriodSeconds": 30,
                        "dnsPolicy": "ClusterFirst", "securityContext": {},
                        "schedulerName": "default-scheduler"
                    }
                },
                "completionMode": "NonIndexed", "suspend": false,
                "podReplacementPolicy": "TerminatingOrFailed"
            },
            "status": {}
        });
        let out = defaulted("batch", "Job", input);
        assert_eq!(out["status"], expected["status"]);
        assert_eq!(strip(out), strip(expected));
    }

    #[test]
    fn statefulset_matches_reference_capture() {
        let input = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "tabs"},
            "spec": {
                "replicas": 1, "selector": {"matchLabels": {"app": "db"}}, "serviceName": "db",
                "template": {"metadata": {"labels": {"app": "db"}},
                             "spec": {"containers": [{"image": "busybox:1.36", "name": "c"}]}}
            }
        });
        let expected = json!({
            "kind": "StatefulSet", "apiVersion": "apps/v1",
            "metadata": {"name": "db", "namespace": "tabs"},
            "spec": {
                "replicas": 1, "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {
                        "containers": [{
                            "name": "c", "image": "busybox:1.36", "resources": {},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "IfNotPresent"
                        }],
                        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                        "dnsPolicy": "ClusterFirst", "securityContext": {},
                        "schedulerName": "default-scheduler"
                    }
                },
                "serviceName": "db", "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "revisionHistoryLimit": 10,
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain",
                                                         "whenScaled": "Retain"}
            },
            "status": {"replicas": 0, "availableReplicas": 0}
        });
        let out = defaulted("apps", "StatefulSet", input);
        assert_eq!(out["status"], expected["status"]);
        assert_eq!(strip(out), strip(expected));

        // serviceName stays absent when not given.
        let out = defaulted("apps", "StatefulSet", json!({"spec": {}}));
        assert!(out["spec"].get("serviceName").is_none());
    }

    #[test]
    fn set_values_are_never_overwritten() {
        let input = json!({
            "metadata": {"name": "p"},
            "spec": {
                "restartPolicy": "Never", "dnsPolicy": "Default",
                "terminationGracePeriodSeconds": 5, "securityContext": {"runAsUser": 1},
                "schedulerName": "mine", "enableServiceLinks": false,
                "serviceAccountName": "robot", "priority": 7,
                "preemptionPolicy": "Never",
                "tolerations": [{"operator": "Exists"}],
                "containers": [{
                    "name": "c", "image": "x:latest", "imagePullPolicy": "Never",
                    "terminationMessagePath": "/tmp/t", "terminationMessagePolicy": "FallbackToLogsOnError",
                    "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}},
                    "ports": [{"containerPort": 53, "protocol": "UDP"}]
                }]
            }
        });
        let out = defaulted("", "Pod", input.clone());
        for key in [
            "restartPolicy",
            "dnsPolicy",
            "terminationGracePeriodSeconds",
            "securityContext",
            "schedulerName",
            "enableServiceLinks",
            "serviceAccountName",
            "priority",
            "preemptionPolicy",
            "tolerations",
        ] {
            assert_eq!(out["spec"][key], input["spec"][key], "{key}");
        }
        assert_eq!(out["spec"]["serviceAccount"], "robot");
        let c = &out["spec"]["containers"][0];
        for (key, _) in POD_SPEC_DEFAULTS {
            assert_eq!(c[key], input["spec"]["containers"][0][key]);
        }
        assert_eq!(c["imagePullPolicy"], "Never");
        assert_eq!(c["resources"], input["spec"]["containers"][0]["resources"]);
        assert_eq!(c["ports"][0]["protocol"], "UDP");
        assert_eq!(out["status"]["qosClass"], "Burstable");
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        for (image, policy) in [
            ("busybox", "Always"),
            ("busybox:latest", "Always"),
            ("busybox:1.36", "IfNotPresent"),
            ("localhost:5000/busybox", "Always"),
            ("localhost:5000/busybox:v1", "IfNotPresent"),
            ("registry.k8s.io/pause:3.10", "IfNotPresent"),
            ("busybox@sha256:abcdef", "IfNotPresent"),
            ("busybox:latest@sha256:abcdef", "Always"),
            ("Busybox", "IfNotPresent"),
            ("", "IfNotPresent"),
        ] {
            assert_eq!(default_image_pull_policy(image), policy, "{image}");
        }
    }

    #[test]
    fn pod_only_defaults_stay_out_of_templates() {
        let out = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"template": {"spec": {"hostNetwork": true, "containers": [{
                "name": "c", "image": "x", "ports": [{"containerPort": 8080}],
                "resources": {"limits": {"memory": "1Gi"}}
            }]}}}}),
        );
        let spec = &out["spec"]["template"]["spec"];
        for key in [
            "enableServiceLinks",
            "serviceAccountName",
            "tolerations",
            "priority",
        ] {
            assert!(spec.get(key).is_none(), "{key}");
        }
        assert!(spec["containers"][0]["ports"][0].get("hostPort").is_none());
        assert!(spec["containers"][0]["resources"].get("requests").is_none());

        let pod = defaulted("", "Pod", json!({"spec": spec.clone()}));
        let c = &pod["spec"]["containers"][0];
        assert_eq!(c["ports"][0]["hostPort"], 8080);
        assert_eq!(c["resources"]["requests"], json!({"memory": "1Gi"}));
    }

    #[test]
    fn qos_classes() {
        let spec = |resources: Value| {
            let v = json!({"containers": [{"name": "c", "resources": resources}]});
            v.as_object().cloned().unwrap_or_default()
        };
        assert_eq!(pod_qos_class(&spec(json!({}))), "BestEffort");
        assert_eq!(
            pod_qos_class(&spec(json!({"requests": {"cpu": "100m"}}))),
            "Burstable"
        );
        assert_eq!(
            pod_qos_class(&spec(json!({
                "requests": {"cpu": "0.5", "memory": "128Mi"},
                "limits": {"cpu": "500m", "memory": "134217728"}
            }))),
            "Guaranteed"
        );
        assert_eq!(
            pod_qos_class(&spec(json!({
                "requests": {"cpu": "250m", "memory": "128Mi"},
                "limits": {"cpu": "500m", "memory": "128Mi"}
            }))),
            "Burstable"
        );
    }

    #[test]
    fn probes_volumes_and_env() {
        let out = defaulted(
            "",
            "Pod",
            json!({"spec": {
                "containers": [{"name": "c", "image": "x:1",
                    "livenessProbe": {"httpGet": {"port": 80}},
                    "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 3},
                    "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
                }],
                "volumes": [
                    {"name": "a"},
                    {"name": "b", "configMap": {"name": "cm"}},
                    {"name": "c", "hostPath": {"path": "/x"}},
                    {"name": "d", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                    {"name": "e", "rbd": {"monitors": ["m"], "image": "i"}},
                    {"name": "f", "scaleIO": {"gateway": "g", "system": "s", "secretRef": {"name": "x"}}}
                ]
            }}),
        );
        let c = &out["spec"]["containers"][0];
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], 3);
        assert_eq!(c["readinessProbe"]["grpc"]["service"], "");
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        let v = &out["spec"]["volumes"];
        assert_eq!(v[0], json!({"name": "a", "emptyDir": {}}));
        assert_eq!(v[1]["configMap"]["defaultMode"], 420);
        assert_eq!(v[2]["hostPath"]["type"], "");
        assert_eq!(v[3]["projected"]["defaultMode"], 420);
        assert_eq!(
            v[3]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3600
        );
        // The source defaults pod volumes share with PersistentVolumes.
        assert_eq!(v[4]["rbd"]["pool"], "rbd");
        assert_eq!(v[4]["rbd"]["keyring"], "/etc/ceph/keyring");
        assert_eq!(v[5]["scaleIO"]["storageMode"], "ThinProvisioned");
        assert_eq!(v[5]["scaleIO"]["fsType"], "xfs");
    }

    #[test]
    fn job_manual_selector_and_existing_labels() {
        let out = defaulted(
            "batch",
            "Job",
            json!({
                "metadata": {"name": "j", "uid": "u1", "labels": {"team": "a"}},
                "spec": {"manualSelector": true, "parallelism": 3,
                         "selector": {"matchLabels": {"x": "y"}},
                         "template": {"metadata": {"labels": {"x": "y"}}, "spec": {}}}
            }),
        );
        assert_eq!(out["metadata"]["labels"], json!({"team": "a"}));
        assert_eq!(out["spec"]["selector"], json!({"matchLabels": {"x": "y"}}));
        assert_eq!(
            out["spec"]["template"]["metadata"]["labels"],
            json!({"x": "y"})
        );
        assert!(out["spec"].get("completions").is_none());
        assert_eq!(out["spec"]["parallelism"], 3);

        let out = defaulted(
            "batch",
            "Job",
            json!({"metadata": {"name": "k", "uid": "u2"},
                   "spec": {"podFailurePolicy": {"rules": [{"action": "Ignore",
                       "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                            "backoffLimitPerIndex": 1, "completionMode": "Indexed",
                            "template": {"spec": {}}}}),
        );
        assert_eq!(out["spec"]["podReplacementPolicy"], "Failed");
        assert_eq!(out["spec"]["backoffLimit"], 2147483647);
        assert_eq!(out["spec"]["completionMode"], "Indexed");
        assert_eq!(
            out["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
            "True"
        );
        assert_eq!(
            out["metadata"]["labels"]["batch.kubernetes.io/job-name"],
            "k"
        );
    }

    #[test]
    fn cronjob_daemonset_replicaset() {
        let out = defaulted(
            "batch",
            "CronJob",
            json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
                "spec": {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "OnFailure"}}}}}}),
        );
        let spec = &out["spec"];
        assert_eq!(spec["concurrencyPolicy"], "Allow");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["successfulJobsHistoryLimit"], 3);
        assert_eq!(spec["failedJobsHistoryLimit"], 1);
        let job_spec = &spec["jobTemplate"]["spec"];
        assert!(job_spec.get("backoffLimit").is_none());
        assert_eq!(job_spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(
            job_spec["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );

        let out = defaulted("apps", "DaemonSet", json!({"spec": {}}));
        assert_eq!(
            out["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(out["spec"]["revisionHistoryLimit"], 10);
        let out = defaulted(
            "apps",
            "DaemonSet",
            json!({"spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(out["spec"]["updateStrategy"], json!({"type": "OnDelete"}));

        let out = defaulted("apps", "ReplicaSet", json!({"spec": {"replicas": 0}}));
        assert_eq!(out["spec"]["replicas"], 0);
        let out = defaulted("apps", "ReplicaSet", json!({"spec": {}}));
        assert_eq!(out["spec"]["replicas"], 1);
        let out = defaulted(
            "apps",
            "Deployment",
            json!({"spec": {"strategy": {"type": "Recreate"}}}),
        );
        assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn namespace_secret_and_others() {
        let out = defaulted("", "Namespace", json!({"metadata": {"name": "team-a"}}));
        assert_eq!(
            out,
            json!({
                "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"}
            })
        );
        let deleting = defaulted(
            "",
            "Namespace",
            json!({"metadata": {"name": "x", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                   "status": {"phase": "Terminating"}}),
        );
        assert!(deleting.get("spec").is_none());
        assert_eq!(deleting["status"]["phase"], "Terminating");

        let out = defaulted("", "Secret", json!({"data": {}}));
        assert_eq!(out["type"], "Opaque");
        let out = defaulted("", "Secret", json!({"type": "kubernetes.io/tls"}));
        assert_eq!(out["type"], "kubernetes.io/tls");

        let lease = json!({"spec": {"holderIdentity": "a"}});
        assert_eq!(
            defaulted("coordination.k8s.io", "Lease", lease.clone()),
            lease
        );
        let cm = json!({"data": {"a": "b"}});
        assert_eq!(defaulted("", "ConfigMap", cm.clone()), cm);
        let cr = json!({"spec": {}});
        assert_eq!(defaulted("ref.example.org", "Widget", cr.clone()), cr);

        let out = defaulted(
            "rbac.authorization.k8s.io",
            "RoleBinding",
            json!({"roleRef": {"kind": "Role", "name": "r"},
                   "subjects": [{"kind": "User", "name": "u"},
                                {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]}),
        );
        assert_eq!(out["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
        assert_eq!(out["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
        assert!(out["subjects"][1].get("apiGroup").is_none());

        let out = defaulted(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            json!({"spec": {"names": {"kind": "Widget", "plural": "widgets"}}}),
        );
        assert_eq!(out["spec"]["names"]["singular"], "widget");
        assert_eq!(out["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(out["spec"]["conversion"], json!({"strategy": "None"}));
    }

    #[test]
    fn malformed_input_is_left_alone() {
        for (group, kind) in [
            ("", "Pod"),
            ("apps", "Deployment"),
            ("batch", "Job"),
            ("", "Service"),
        ] {
            let v = json!({"spec": "nope", "metadata": 3});
            assert_eq!(defaulted(group, kind, v.clone())["spec"], "nope");
            let v = json!({"spec": {"template": 1, "containers": [1, "x"], "ports": 2}});
            defaulted(group, kind, v);
            assert_eq!(defaulted(group, kind, json!("scalar")), json!("scalar"));
        }
    }

    #[test]
    fn service_variants() {
        let out = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 443, "targetPort": "https"}]}}),
        );
        let spec = &out["spec"];
        assert_eq!(spec["externalTrafficPolicy"], "Cluster");
        assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
        assert_eq!(spec["ports"][0]["targetPort"], "https");

        let out = defaulted(
            "",
            "Service",
            json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
        );
        for key in ["ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"] {
            assert!(out["spec"].get(key).is_none(), "{key}");
        }

        let out = defaulted("", "Service", json!({"spec": {"clusterIP": "None"}}));
        assert_eq!(out["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(out["spec"]["ipFamilyPolicy"], "RequireDualStack");
        assert_eq!(out["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
        let out = defaulted(
            "",
            "Service",
            json!({"spec": {"clusterIP": "None", "selector": {"a": "b"}}}),
        );
        assert_eq!(out["spec"]["ipFamilyPolicy"], "SingleStack");
        assert_eq!(out["spec"]["ipFamilies"], json!(["IPv4"]));

        let out = defaulted(
            "",
            "Service",
            json!({"spec": {"sessionAffinity": "ClientIP"}}),
        );
        assert_eq!(
            out["spec"]["sessionAffinityConfig"],
            json!({"clientIP": {"timeoutSeconds": 10800}})
        );
    }

    #[test]
    fn allocator_ranges_and_bands() {
        let mut a = ServiceIpAllocator::new();
        assert_eq!(a.range(), "10.96.0.0/12");
        assert_eq!(a.kubernetes_service_ip(), Ipv4Addr::new(10, 96, 0, 1));
        assert!(a.contains(Ipv4Addr::new(10, 111, 255, 254)));
        assert!(!a.contains(Ipv4Addr::new(10, 111, 255, 255)));
        assert!(!a.contains(Ipv4Addr::new(10, 96, 0, 0)));
        assert!(!a.contains(Ipv4Addr::new(10, 112, 0, 1)));

        let mut in_use = HashSet::new();
        let first = a.allocate(&in_use);
        assert_eq!(first, Ok(Ipv4Addr::new(10, 96, 1, 1)));
        in_use.insert(Ipv4Addr::new(10, 96, 1, 2));
        assert_eq!(a.allocate(&in_use), Ok(Ipv4Addr::new(10, 96, 1, 3)));

        // A tiny range fills the dynamic band, then the static band, never .1.
        let mut small = ServiceIpAllocator::with_range("192.168.7.99/27").unwrap_or_default();
        assert_eq!(small.range(), "192.168.7.96/27");
        let mut taken = HashSet::new();
        let mut order = Vec::new();
        while let Ok(ip) = small.allocate(&taken) {
            taken.insert(ip);
            order.push(ip.octets()[3]);
        }
        assert_eq!(order.len(), 29);
        assert_eq!(order[0], 96 + 17);
        assert!(!order.contains(&97));
        assert!(!order.contains(&96) && !order.contains(&127));
        assert_eq!(small.allocate(&taken), Err(ServiceIpError::RangeFull));

        for bad in ["10.0.0.0", "10.0.0.0/31", "x/12", "10.0.0.0/4"] {
            assert!(ServiceIpAllocator::with_range(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn allocator_methods_take_strings() {
        let mut a = ServiceIpAllocator::default();
        let in_use = vec!["10.96.1.1".to_string(), "None".to_string(), String::new()];
        let mut svc = json!({"spec": {"type": "ClusterIP"}});
        assert_eq!(
            a.assign(&mut svc, &in_use),
            Ok(Some(Ipv4Addr::new(10, 96, 1, 2)))
        );
        assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.1.2"]));
        let old = svc.clone();
        let mut update = json!({"spec": {"type": "ClusterIP", "ports": []}});
        assert_eq!(a.assign_update(&mut update, &old, &in_use), Ok(None));
        assert_eq!(update["spec"]["clusterIP"], "10.96.1.2");
        let mut clash = json!({"spec": {"clusterIP": "10.96.1.1"}});
        assert!(a.assign(&mut clash, &in_use).is_err());
    }

    #[test]
    fn assigning_cluster_ips() {
        let mut a = ServiceIpAllocator::new();
        let in_use = HashSet::from([Ipv4Addr::new(10, 96, 0, 10)]);

        let mut svc = json!({"spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10"}});
        let err = assign_cluster_ip(&mut svc, None, &mut a, &in_use);
        assert_eq!(
            err,
            Err(ServiceIpError::AlreadyAllocated {
                ip: Ipv4Addr::new(10, 96, 0, 10)
            })
        );
        let status = err
            .err()
            .map(|e| {
                e.to_api_error("dns", &["10.96.0.10".to_string()])
                    .to_status()
            })
            .unwrap_or_default();
        assert_eq!(status["code"], 422);
        assert_eq!(
            status["message"],
            "Service \"dns\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.10\"]: failed to allocate IP 10.96.0.10: provided IP is already allocated"
        );

        let mut svc = json!({"spec": {"clusterIP": "10.0.0.1"}});
        assert!(matches!(
            assign_cluster_ip(&mut svc, None, &mut a, &in_use),
            Err(ServiceIpError::NotInRange { .. })
        ));
        let mut svc = json!({"spec": {"clusterIPs": ["10.96.0.11"]}});
        assert_eq!(
            assign_cluster_ip(&mut svc, None, &mut a, &in_use),
            Ok(Some(Ipv4Addr::new(10, 96, 0, 11)))
        );
        assert_eq!(svc["spec"]["clusterIP"], "10.96.0.11");

        // Updates keep the old address, whether repeated or omitted.
        let old = json!({"spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"]}});
        let mut svc = json!({"spec": {"type": "ClusterIP"}});
        assert_eq!(
            assign_cluster_ip(&mut svc, Some(&old), &mut a, &in_use),
            Ok(None)
        );
        assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.0.10"]));
        let mut svc = json!({"spec": {"clusterIP": "10.96.0.10"}});
        assert_eq!(
            assign_cluster_ip(&mut svc, Some(&old), &mut a, &in_use),
            Ok(None)
        );

        for spec in [
            json!({"type": "ExternalName"}),
            json!({"clusterIP": "None"}),
            json!({"clusterIPs": ["None"]}),
        ] {
            let mut svc = json!({ "spec": spec });
            let before = svc.clone();
            assert_eq!(assign_cluster_ip(&mut svc, None, &mut a, &in_use), Ok(None));
            assert_eq!(svc, before);
        }

        let services = [
            json!({"spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"]}}),
            json!({"spec": {"clusterIP": "None"}}),
        ];
        assert_eq!(
            cluster_ips_in_use(&services),
            HashSet::from([Ipv4Addr::new(10, 96, 0, 1)])
        );
    }
}
