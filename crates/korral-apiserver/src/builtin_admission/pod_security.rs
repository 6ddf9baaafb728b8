//! The PodSecurity admission plugin: the Pod Security Standards (`baseline`, `restricted`)
//! of the namespace's `pod-security.kubernetes.io/{enforce,warn}` labels, checked as upstream's
//! `k8s.io/pod-security-admission` checks them, with its messages.
//!
//! Pods violating the `enforce` level are refused (403); a violated `warn` level, and either
//! level violated by the pod template of a workload, answer `Warning`s.

use serde_json::Value;

use crate::meta;

/// A Pod Security Standards level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// No restriction.
    Privileged,
    /// Known privilege escalations prevented.
    Baseline,
    /// Hardening best practices.
    Restricted,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Self::Privileged => "privileged",
            Self::Baseline => "baseline",
            Self::Restricted => "restricted",
        }
    }
}

/// A level and the version it is pinned to (`latest` or `v1.N`), as a namespace's labels say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    level: Level,
    version: String,
}

impl Policy {
    /// The policy of one mode (`enforce`, `warn`) in a namespace's labels. An unknown level fails
    /// closed (restricted), as upstream does; no label is privileged.
    pub(crate) fn of(namespace: &Value, mode: &str) -> Self {
        let labels = meta::labels(namespace);
        let label = |key: String| {
            labels
                .and_then(|l| l.get(&key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let level = match label(format!("pod-security.kubernetes.io/{mode}")).as_deref() {
            None | Some("privileged") => Level::Privileged,
            Some("baseline") => Level::Baseline,
            Some(_) => Level::Restricted,
        };
        let version = label(format!("pod-security.kubernetes.io/{mode}-version"))
            .filter(|v| v == "latest" || is_minor_version(v))
            .unwrap_or_else(|| "latest".to_string());
        Self { level, version }
    }

    /// `restricted:latest`, as messages name the policy.
    pub(crate) fn label(&self) -> String {
        format!("{}:{}", self.level.name(), self.version)
    }

    /// The policy's level.
    pub(crate) fn level(&self) -> Level {
        self.level
    }

    /// Whether the policy checks anything.
    pub(crate) fn is_privileged(&self) -> bool {
        self.level == Level::Privileged
    }
}

fn is_minor_version(v: &str) -> bool {
    v.strip_prefix("v1.")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// One failed check: its reason (`runAsNonRoot != true`) and detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    reason: &'static str,
    detail: String,
}

/// The violations of a pod spec (with the pod's metadata, for AppArmor annotations) against a
/// level, in the order of upstream's check IDs.
pub(crate) fn check(metadata: &Value, spec: &Value, level: Level) -> Vec<Violation> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let pod = PodView::new(metadata, spec);
    let restricted = level == Level::Restricted;
    let mut out = Vec::new();
    let mut push = |reason: &'static str, detail: Option<String>| {
        if let Some(detail) = detail {
            out.push(Violation { reason, detail });
        }
    };
    // Sorted by upstream's check IDs.
    if restricted {
        push(
            "allowPrivilegeEscalation != false",
            allow_privilege_escalation(&pod),
        );
    }
    push("forbidden AppArmor profile", app_armor(&pod));
    if restricted {
        push("unrestricted capabilities", capabilities_restricted(&pod));
    } else {
        push("non-default capabilities", capabilities_baseline(&pod));
    }
    push("host namespaces", host_namespaces(&pod));
    push("hostPath volumes", host_path_volumes(&pod));
    push("hostPort", host_ports(&pod));
    push("hostProcess", host_process(&pod));
    push("privileged", privileged(&pod));
    push("procMount", proc_mount(&pod));
    if restricted {
        push("restricted volume types", restricted_volumes(&pod));
        push("runAsNonRoot != true", run_as_non_root(&pod));
        push("runAsUser=0", run_as_user(&pod));
    }
    push("seLinuxOptions", se_linux(&pod));
    push("seccompProfile", seccomp(&pod, restricted));
    push("forbidden sysctls", sysctls(&pod));
    out
}

/// `<reason> (<detail>), ...` as upstream aggregates the violations.
pub(crate) fn describe(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| format!("{} ({})", v.reason, v.detail))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pod spec the checks read: pod-level security context and every container.
struct PodView<'a> {
    metadata: &'a Value,
    spec: &'a Value,
    containers: Vec<&'a Value>,
}

impl<'a> PodView<'a> {
    fn new(metadata: &'a Value, spec: &'a Value) -> Self {
        let containers = ["initContainers", "containers", "ephemeralContainers"]
            .iter()
            .filter_map(|k| spec.get(*k).and_then(Value::as_array))
            .flatten()
            .collect();
        Self {
            metadata,
            spec,
            containers,
        }
    }

    fn pod_sc(&self, path: &str) -> Option<&'a Value> {
        meta::path(self.spec, &format!("securityContext.{path}")).filter(|v| !v.is_null())
    }

    /// The names of the containers for which `bad` holds.
    fn containers_where(&self, bad: impl Fn(&Value) -> bool) -> Vec<&'a str> {
        self.containers
            .iter()
            .filter(|c| bad(c))
            .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
            .collect()
    }
}

fn sc<'a>(container: &'a Value, path: &str) -> Option<&'a Value> {
    meta::path(container, &format!("securityContext.{path}")).filter(|v| !v.is_null())
}

/// `container "a"` / `containers "a", "b"`.
fn containers_phrase(names: &[&str]) -> String {
    let quoted = quote_all(names);
    if names.len() == 1 {
        format!("container {quoted}")
    } else {
        format!("containers {quoted}")
    }
}

fn quote_all(items: &[&str]) -> String {
    items
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plural<'s>(n: usize, one: &'s str, many: &'s str) -> &'s str {
    if n == 1 { one } else { many }
}

fn allow_privilege_escalation(pod: &PodView) -> Option<String> {
    let bad =
        pod.containers_where(|c| sc(c, "allowPrivilegeEscalation") != Some(&Value::Bool(false)));
    (!bad.is_empty()).then(|| {
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&bad)
        )
    })
}

fn app_armor(pod: &PodView) -> Option<String> {
    let allowed = |t: Option<&Value>| {
        t.is_none_or(|t| matches!(t.as_str(), Some("RuntimeDefault" | "Localhost")))
    };
    let mut bad = Vec::new();
    if !allowed(pod.pod_sc("appArmorProfile.type")) {
        bad.push(format!(
            "pod must not set securityContext.appArmorProfile.type to {}",
            pod.pod_sc("appArmorProfile.type")
                .map(crate::validation::names::go_render)
                .unwrap_or_default()
        ));
    }
    let containers = pod.containers_where(|c| !allowed(sc(c, "appArmorProfile.type")));
    if !containers.is_empty() {
        bad.push(format!(
            "{} must not set securityContext.appArmorProfile.type to \"Unconfined\"",
            containers_phrase(&containers)
        ));
    }
    let annotations = meta::path(pod.metadata, "annotations").and_then(Value::as_object);
    for (key, value) in annotations.into_iter().flatten() {
        if key.starts_with("container.apparmor.security.beta.kubernetes.io/")
            && let Some(v) = value.as_str()
            && v != "runtime/default"
            && !v.starts_with("localhost/")
        {
            bad.push(format!("{key}=\"{v}\""));
        }
    }
    (!bad.is_empty()).then(|| bad.join(", "))
}

const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn added_capabilities(container: &Value) -> Vec<&str> {
    sc(container, "capabilities.add")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Containers adding capabilities outside `allowed`, and the capabilities they add.
fn forbidden_adds(pod: &PodView, allowed: &[&str]) -> Option<(Vec<String>, Vec<String>)> {
    let mut names = Vec::new();
    let mut caps: Vec<String> = Vec::new();
    for c in &pod.containers {
        let bad: Vec<&str> = added_capabilities(c)
            .into_iter()
            .filter(|cap| !allowed.contains(cap))
            .collect();
        if !bad.is_empty() {
            names.push(
                c.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            );
            for cap in bad {
                if !caps.iter().any(|c| c == cap) {
                    caps.push(cap.to_string());
                }
            }
        }
    }
    (!names.is_empty()).then_some((names, caps))
}

fn must_not_add(names: &[String], caps: &[String]) -> String {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let caps: Vec<&str> = caps.iter().map(String::as_str).collect();
    format!(
        "{} must not include {} in securityContext.capabilities.add",
        containers_phrase(&names),
        quote_all(&caps)
    )
}

fn capabilities_baseline(pod: &PodView) -> Option<String> {
    forbidden_adds(pod, &BASELINE_CAPABILITIES).map(|(names, caps)| must_not_add(&names, &caps))
}

fn capabilities_restricted(pod: &PodView) -> Option<String> {
    let mut parts = Vec::new();
    let no_drop = pod.containers_where(|c| {
        !sc(c, "capabilities.drop")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|x| x == "ALL"))
    });
    if !no_drop.is_empty() {
        parts.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&no_drop)
        ));
    }
    if let Some((names, caps)) = forbidden_adds(pod, &["NET_BIND_SERVICE"]) {
        parts.push(must_not_add(&names, &caps));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn host_namespaces(pod: &PodView) -> Option<String> {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .iter()
        .filter(|f| pod.spec.get(**f) == Some(&Value::Bool(true)))
        .map(|f| format!("{f}=true"))
        .collect();
    (!set.is_empty()).then(|| set.join(", "))
}

fn volumes<'a>(pod: &PodView<'a>) -> &'a [Value] {
    pod.spec
        .get("volumes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn volume_name(v: &Value) -> &str {
    v.get("name").and_then(Value::as_str).unwrap_or("")
}

fn host_path_volumes(pod: &PodView) -> Option<String> {
    let names: Vec<&str> = volumes(pod)
        .iter()
        .filter(|v| v.get("hostPath").is_some_and(|h| !h.is_null()))
        .map(volume_name)
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "{} {}",
            plural(names.len(), "volume", "volumes"),
            quote_all(&names)
        )
    })
}

fn host_ports(pod: &PodView) -> Option<String> {
    let mut names = Vec::new();
    let mut ports: Vec<String> = Vec::new();
    for c in &pod.containers {
        let used: Vec<i64> = c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
            .filter(|p| *p != 0)
            .collect();
        if !used.is_empty() {
            names.push(c.get("name").and_then(Value::as_str).unwrap_or(""));
            for p in used {
                let p = p.to_string();
                if !ports.contains(&p) {
                    ports.push(p);
                }
            }
        }
    }
    (!names.is_empty()).then(|| {
        format!(
            "{} {} {} {}",
            containers_phrase(&names),
            plural(names.len(), "uses", "use"),
            plural(ports.len(), "hostPort", "hostPorts"),
            ports.join(", ")
        )
    })
}

fn host_process(pod: &PodView) -> Option<String> {
    let pod_level = pod.pod_sc("windowsOptions.hostProcess") == Some(&Value::Bool(true));
    let names =
        pod.containers_where(|c| sc(c, "windowsOptions.hostProcess") == Some(&Value::Bool(true)));
    match (pod_level, names.is_empty()) {
        (false, true) => None,
        (true, true) => {
            Some("pod must not set securityContext.windowsOptions.hostProcess=true".into())
        }
        (false, false) => Some(format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            containers_phrase(&names)
        )),
        (true, false) => Some(format!(
            "pod and {} must not set securityContext.windowsOptions.hostProcess=true",
            containers_phrase(&names)
        )),
    }
}

fn privileged(pod: &PodView) -> Option<String> {
    let names = pod.containers_where(|c| sc(c, "privileged") == Some(&Value::Bool(true)));
    (!names.is_empty()).then(|| {
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&names)
        )
    })
}

fn proc_mount(pod: &PodView) -> Option<String> {
    let names =
        pod.containers_where(|c| sc(c, "procMount").is_some_and(|p| p.as_str() != Some("Default")));
    (!names.is_empty()).then(|| {
        format!(
            "{} must not set securityContext.procMount to \"Unmasked\"",
            containers_phrase(&names)
        )
    })
}

const ALLOWED_VOLUME_TYPES: [&str; 8] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

fn restricted_volumes(pod: &PodView) -> Option<String> {
    let mut names = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for v in volumes(pod) {
        let Some(map) = v.as_object() else { continue };
        let bad: Vec<&String> = map
            .iter()
            .filter(|(k, val)| k.as_str() != "name" && !val.is_null())
            .map(|(k, _)| k)
            .filter(|k| !ALLOWED_VOLUME_TYPES.contains(&k.as_str()))
            .collect();
        if !bad.is_empty() {
            names.push(volume_name(v));
            for k in bad {
                if !kinds.contains(k) {
                    kinds.push(k.clone());
                }
            }
        }
    }
    (!names.is_empty()).then(|| {
        let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
        format!(
            "{} {} {} {} {}",
            plural(names.len(), "volume", "volumes"),
            quote_all(&names),
            plural(names.len(), "uses", "use"),
            plural(
                kinds.len(),
                "restricted volume type",
                "restricted volume types"
            ),
            quote_all(&kinds)
        )
    })
}

fn run_as_non_root(pod: &PodView) -> Option<String> {
    let pod_value = pod.pod_sc("runAsNonRoot");
    let mut parts = Vec::new();
    if pod_value == Some(&Value::Bool(false)) {
        parts.push("pod must not set securityContext.runAsNonRoot=false".to_string());
    }
    let explicit = pod.containers_where(|c| sc(c, "runAsNonRoot") == Some(&Value::Bool(false)));
    if !explicit.is_empty() {
        parts.push(format!(
            "{} must not set securityContext.runAsNonRoot=false",
            containers_phrase(&explicit)
        ));
    }
    if pod_value != Some(&Value::Bool(true)) {
        let implicit = pod.containers_where(|c| sc(c, "runAsNonRoot").is_none());
        if !implicit.is_empty() {
            parts.push(format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_phrase(&implicit)
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn run_as_user(pod: &PodView) -> Option<String> {
    let zero = |v: Option<&Value>| v.and_then(Value::as_i64) == Some(0);
    let pod_level = zero(pod.pod_sc("runAsUser"));
    let names = pod.containers_where(|c| zero(sc(c, "runAsUser")));
    match (pod_level, names.is_empty()) {
        (false, true) => None,
        (true, true) => Some("pod must not set runAsUser=0".into()),
        (false, false) => Some(format!(
            "{} must not set runAsUser=0",
            containers_phrase(&names)
        )),
        (true, false) => Some(format!(
            "pod and {} must not set runAsUser=0",
            containers_phrase(&names)
        )),
    }
}

fn se_linux(pod: &PodView) -> Option<String> {
    const TYPES: [&str; 5] = [
        "",
        "container_t",
        "container_init_t",
        "container_kvm_t",
        "container_engine_t",
    ];
    let bad = |opts: Option<&Value>| {
        opts.is_some_and(|o| {
            let t = o.get("type").and_then(Value::as_str).unwrap_or("");
            let set = |f: &str| {
                o.get(f)
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
            };
            !TYPES.contains(&t) || set("user") || set("role")
        })
    };
    let pod_level = bad(pod.pod_sc("seLinuxOptions"));
    let names = pod.containers_where(|c| bad(sc(c, "seLinuxOptions")));
    match (pod_level, names.is_empty()) {
        (false, true) => None,
        (true, true) => Some("pod set forbidden securityContext.seLinuxOptions".into()),
        (false, false) => Some(format!(
            "{} set forbidden securityContext.seLinuxOptions",
            containers_phrase(&names)
        )),
        (true, false) => Some(format!(
            "pod and {} set forbidden securityContext.seLinuxOptions",
            containers_phrase(&names)
        )),
    }
}

fn seccomp(pod: &PodView, restricted: bool) -> Option<String> {
    let unconfined = |v: Option<&Value>| v.and_then(Value::as_str) == Some("Unconfined");
    let pod_type = pod.pod_sc("seccompProfile.type");
    let mut parts = Vec::new();
    if unconfined(pod_type) {
        parts.push(
            "pod must not set securityContext.seccompProfile.type to \"Unconfined\"".to_string(),
        );
    }
    let explicit = pod.containers_where(|c| unconfined(sc(c, "seccompProfile.type")));
    if !explicit.is_empty() {
        parts.push(format!(
            "{} must not set securityContext.seccompProfile.type to \"Unconfined\"",
            containers_phrase(&explicit)
        ));
    }
    if restricted && pod_type.is_none() {
        let implicit = pod.containers_where(|c| sc(c, "seccompProfile.type").is_none());
        if !implicit.is_empty() {
            parts.push(format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                containers_phrase(&implicit)
            ));
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn sysctls(pod: &PodView) -> Option<String> {
    const SAFE: [&str; 10] = [
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    ];
    let bad: Vec<&str> = pod
        .pod_sc("sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|n| !SAFE.contains(n))
        .collect();
    (!bad.is_empty()).then(|| bad.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn describe_pod(spec: Value, level: Level) -> String {
        describe(&check(&json!({}), &spec, level))
    }

    #[test]
    fn a_plain_pod_violates_restricted_as_upstream_says() {
        // k8s-reference/builtin/invalid-podsecurity-restricted.json
        let spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        assert_eq!(
            describe_pod(spec.clone(), Level::Restricted),
            "allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
        assert_eq!(describe_pod(spec, Level::Baseline), "");
    }

    #[test]
    fn a_hardened_pod_passes_restricted() {
        let spec = json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "image": "busybox", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}],
            "volumes": [{"name": "data", "emptyDir": {}}],
        });
        assert_eq!(describe_pod(spec, Level::Restricted), "");
    }

    #[test]
    fn baseline_violations() {
        let spec = json!({
            "hostNetwork": true,
            "containers": [
                {"name": "a", "securityContext": {"privileged": true, "capabilities": {"add": ["NET_ADMIN"]}},
                 "ports": [{"containerPort": 80, "hostPort": 8080}]},
                {"name": "b", "securityContext": {"privileged": true}},
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        });
        assert_eq!(
            describe_pod(spec, Level::Baseline),
            "non-default capabilities (container \"a\" must not include \"NET_ADMIN\" in securityContext.capabilities.add), host namespaces (hostNetwork=true), hostPath volumes (volume \"host\"), hostPort (container \"a\" uses hostPort 8080), privileged (containers \"a\", \"b\" must not set securityContext.privileged=true)"
        );
    }

    #[test]
    fn namespace_labels_choose_the_policy() {
        let ns = json!({"metadata": {"labels": {
            "pod-security.kubernetes.io/enforce": "baseline",
            "pod-security.kubernetes.io/enforce-version": "v1.30",
            "pod-security.kubernetes.io/warn": "nonsense",
        }}});
        assert_eq!(Policy::of(&ns, "enforce").label(), "baseline:v1.30");
        assert_eq!(Policy::of(&ns, "warn").label(), "restricted:latest");
        assert!(Policy::of(&ns, "audit").is_privileged());
    }
}
