//! Security settings of a pod spec, as upstream validates them: the pod and container security
//! contexts (`validatePodSpecSecurityContext`, `ValidateSecurityContext`: ids, seccomp and
//! AppArmor profiles, sysctls, Windows options), user namespaces (`validateHostUsers`),
//! Windows host process pods, the restrictions of `spec.os` (`validateLinux`,
//! `validateWindows`) and the deprecated AppArmor annotations of a Pod.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Value, json};

use super::{int_at, list_at, local_descending_path, not_supported, set_at, str_at};
use crate::error::Cause;
use crate::validation::enums::{self, Order};
use crate::validation::names::{self, child, dns1123_subdomain, index, invalid_value, key};
use crate::validation::ports::inclusive_range;

/// `IsValidUserID` / `IsValidGroupID` of an integer field, when set.
fn id_field(v: &Value, field: &str, path: &str, out: &mut Vec<Cause>) {
    if let Some(id) = int_at(v, field)
        && !(0..=i64::from(i32::MAX)).contains(&id)
    {
        out.push(invalid_value(
            &child(path, field),
            &json!(id),
            &inclusive_range(0, i64::from(i32::MAX)),
        ));
    }
}

/// `validateSeccompProfileField`.
fn seccomp_profile(sc: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(profile) = set_at(sc, "seccompProfile") else {
        return;
    };
    let ppath = child(path, "seccompProfile");
    let kind = str_at(profile, "type");
    let supported = &enums::SECCOMP_PROFILE_TYPE;
    if kind.is_empty() {
        out.push(Cause::required(
            child(&ppath, "type"),
            "type is required when seccompProfile is set",
        ));
    } else if !supported.contains(kind) {
        out.push(supported.not_supported(child(&ppath, "type"), &json!(kind), Order::Sorted));
    }
    let local = set_at(profile, "localhostProfile");
    if kind == "Localhost" {
        match local.and_then(Value::as_str) {
            None => out.push(Cause::required(
                child(&ppath, "localhostProfile"),
                "must be set when seccomp type is Localhost",
            )),
            Some(p) => local_descending_path(p, &child(&ppath, "localhostProfile"), out),
        }
    } else if local.is_some() {
        out.push(invalid_value(
            &child(&ppath, "localhostProfile"),
            profile,
            "can only be set when seccomp type is Localhost",
        ));
    }
}

/// A boolean field of the pod spec, `false` when absent.
fn flag(v: &Value, field: &str) -> bool {
    v.get(field).and_then(Value::as_bool) == Some(true)
}

/// Whether the pod shares the host's user namespace: `spec.hostUsers` defaults to true.
pub(super) fn host_users(spec: &Value) -> bool {
    spec.get("hostUsers").and_then(Value::as_bool) != Some(false)
}

/// Every container of a pod spec with its path, in upstream's `VisitContainersWithPath` order:
/// init containers, containers, ephemeral containers.
fn containers_with_path<'a>(spec: &'a Value, base: &str) -> Vec<(String, &'a Value)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|list| {
            let path = child(base, list);
            list_at(spec, list)
                .iter()
                .enumerate()
                .map(move |(i, c)| (index(&path, i), c))
        })
        .collect()
}

/// `ValidateSecurityContext` of a container: ids, `procMount` (`Unmasked` only in a user
/// namespace), seccomp, privilege escalation, Windows options, AppArmor.
pub(super) fn validate_security_context(
    sc: &Value,
    path: &str,
    host_users: bool,
    out: &mut Vec<Cause>,
) {
    id_field(sc, "runAsUser", path, out);
    id_field(sc, "runAsGroup", path, out);
    if set_at(sc, "procMount").is_some() {
        let mount = str_at(sc, "procMount");
        if !enums::PROC_MOUNT_TYPE.contains(mount) {
            out.push(enums::PROC_MOUNT_TYPE.not_supported(
                child(path, "procMount"),
                &json!(mount),
                Order::Declared,
            ));
        }
        if host_users && mount == "Unmasked" {
            out.push(invalid_value(
                &child(path, "procMount"),
                &json!(mount),
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    seccomp_profile(sc, path, out);
    if sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) == Some(false) {
        if flag(sc, "privileged") {
            out.push(invalid_value(
                path,
                sc,
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        let caps = sc
            .get("capabilities")
            .map_or(&[][..], |c| list_at(c, "add"));
        for cap in caps {
            if cap.as_str() == Some("CAP_SYS_ADMIN") {
                out.push(invalid_value(
                    path,
                    sc,
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                ));
            }
        }
    }
    windows_options(sc, &child(path, "windowsOptions"), out);
    app_armor_profile(sc, path, out);
}

/// `validatePodSpecSecurityContext`: ids and groups, a process namespace not shared with the
/// host's, sysctls (namespaced ones not with the host's namespace), fsGroup policy, seccomp,
/// Windows options, AppArmor, supplemental groups and SELinux change policies. Upstream's
/// internal pod security context holds `hostNetwork`, `hostPID`, `hostIPC` and
/// `shareProcessNamespace` too, so they are read from the spec and reported under
/// `securityContext`.
pub(super) fn validate_pod_security_context(spec: &Value, base: &str, out: &mut Vec<Cause>) {
    let empty = json!({});
    let sc = set_at(spec, "securityContext").unwrap_or(&empty);
    let path = &child(base, "securityContext");
    id_field(sc, "fsGroup", path, out);
    id_field(sc, "runAsUser", path, out);
    id_field(sc, "runAsGroup", path, out);
    for (i, g) in list_at(sc, "supplementalGroups").iter().enumerate() {
        if let Some(g) = g.as_i64()
            && !(0..=i64::from(i32::MAX)).contains(&g)
        {
            out.push(invalid_value(
                &index(&child(path, "supplementalGroups"), i),
                &json!(g),
                &inclusive_range(0, i64::from(i32::MAX)),
            ));
        }
    }
    if flag(spec, "shareProcessNamespace") && flag(spec, "hostPID") {
        out.push(invalid_value(
            &child(path, "shareProcessNamespace"),
            &json!(true),
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    let mut sysctls = BTreeSet::new();
    for (i, s) in list_at(sc, "sysctls").iter().enumerate() {
        let name = str_at(s, "name");
        let field = child(&index(&child(path, "sysctls"), i), "name");
        if name.is_empty() {
            out.push(Cause::required(field.clone(), ""));
        } else if !is_sysctl_name(name) {
            out.push(invalid_value(
                &field,
                &json!(name),
                "must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$",
            ));
        } else if sysctls.contains(name) {
            out.push(Cause::duplicate(field.clone(), &json!(name)));
        }
        host_sysctl(spec, name, &field, out);
        sysctls.insert(name);
    }
    if set_at(sc, "fsGroupChangePolicy").is_some() {
        let policy = str_at(sc, "fsGroupChangePolicy");
        if !enums::POD_FS_GROUP_CHANGE_POLICY.contains(policy) {
            out.push(enums::POD_FS_GROUP_CHANGE_POLICY.not_supported(
                child(path, "fsGroupChangePolicy"),
                &json!(policy),
                Order::Sorted,
            ));
        }
    }
    seccomp_profile(sc, path, out);
    windows_options(sc, &child(path, "windowsOptions"), out);
    app_armor_profile(sc, path, out);
    if set_at(sc, "supplementalGroupsPolicy").is_some() {
        let policy = str_at(sc, "supplementalGroupsPolicy");
        if !enums::SUPPLEMENTAL_GROUPS_POLICY.contains(policy) {
            out.push(enums::SUPPLEMENTAL_GROUPS_POLICY.not_supported(
                child(path, "supplementalGroupsPolicy"),
                &json!(policy),
                Order::Sorted,
            ));
        }
    }
    if set_at(sc, "seLinuxChangePolicy").is_some() {
        let policy = str_at(sc, "seLinuxChangePolicy");
        if !SE_LINUX_CHANGE_POLICIES.contains(&policy) {
            out.push(not_supported(
                &child(path, "seLinuxChangePolicy"),
                &json!(policy),
                &SE_LINUX_CHANGE_POLICIES,
            ));
        }
    }
}

/// `core.PodSELinuxChangePolicy` values, sorted as upstream lists its set.
const SE_LINUX_CHANGE_POLICIES: [&str; 2] = ["MountOption", "Recursive"];

/// `ValidateHostSysctl`: a namespaced sysctl may not be set when the pod shares that namespace
/// with the host.
fn host_sysctl(spec: &Value, name: &str, field: &str, out: &mut Vec<Cause>) {
    let name = normalize_sysctl(name);
    let ipc = name == "kernel.sem"
        || ["kernel.shm", "kernel.msg", "fs.mqueue."]
            .iter()
            .any(|p| name.starts_with(p));
    let net = name.starts_with("net.");
    let original = json!(name);
    if flag(spec, "hostNetwork") && net {
        out.push(invalid_value(
            field,
            &original,
            "may not be specified when 'hostNetwork' is true",
        ));
    } else if flag(spec, "hostIPC") && ipc {
        out.push(invalid_value(
            field,
            &original,
            "may not be specified when 'hostIPC' is true",
        ));
    }
}

/// Upstream `NormalizeName`: a sysctl written with slashes (`net/ipv4/ip_forward`) in its dotted
/// form.
fn normalize_sysctl(name: &str) -> String {
    match name.find(['.', '/']) {
        Some(i) if name.as_bytes().get(i) == Some(&b'/') => name
            .chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                other => other,
            })
            .collect(),
        _ => name.to_string(),
    }
}

/// `ValidateAppArmorProfileField` of the `appArmorProfile` of a security context at `path`.
fn app_armor_profile(sc: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(profile) = set_at(sc, "appArmorProfile") else {
        return;
    };
    let ppath = child(path, "appArmorProfile");
    let local_path = child(&ppath, "localhostProfile");
    let local = set_at(profile, "localhostProfile");
    match str_at(profile, "type") {
        "Localhost" => match local {
            None => out.push(Cause::required(
                local_path,
                "must be set when AppArmor type is Localhost",
            )),
            Some(value) => {
                let p = value.as_str().unwrap_or("");
                if p.trim() != p {
                    out.push(invalid_value(
                        &local_path,
                        value,
                        "must not be padded with whitespace",
                    ));
                } else if p.is_empty() {
                    out.push(Cause::required(
                        local_path.clone(),
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                // PATH_MAX - 1.
                if p.len() > 4095 {
                    out.push(names::too_long(&local_path, 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(value) = local {
                out.push(invalid_value(
                    &local_path,
                    value,
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => out.push(Cause::required(
            child(&ppath, "type"),
            "type is required when appArmorProfile is set",
        )),
        other => out.push(enums::APP_ARMOR_PROFILE_TYPE.not_supported(
            child(&ppath, "type"),
            &json!(other),
            Order::Sorted,
        )),
    }
}

/// Upstream's `maxGMSACredentialSpecLengthInKiB`.
const MAX_GMSA_KIB: usize = 64;

/// A Windows user domain written as a NetBIOS name.
static NET_BIOS: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r#"^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$"#).ok());

/// A Windows user domain written as a DNS name.
static DNS_DOMAIN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let label = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?";
    Regex::new(&format!("^{label}(?:\\.{label})*$")).ok()
});

/// Whether `value` matches a pattern compiled at first use.
fn matches(re: &LazyLock<Option<Regex>>, value: &str) -> bool {
    re.as_ref().is_some_and(|re| re.is_match(value))
}

/// `validateWindowsSecurityContextOptions` of the `windowsOptions` at `path`.
fn windows_options(sc: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(options) = set_at(sc, "windowsOptions") else {
        return;
    };
    if let Some(name) = set_at(options, "gmsaCredentialSpecName") {
        let value = name.as_str().unwrap_or("");
        for msg in dns1123_subdomain(value) {
            out.push(invalid_value(
                &child(path, "gmsaCredentialSpecName"),
                name,
                &msg,
            ));
        }
    }
    if let Some(spec) = set_at(options, "gmsaCredentialSpec") {
        let len = spec.as_str().map_or(0, str::len);
        let field = child(path, "gmsaCredentialSpec");
        if len == 0 {
            out.push(invalid_value(
                &field,
                spec,
                "gmsaCredentialSpec cannot be an empty string",
            ));
        } else if len > MAX_GMSA_KIB * 1024 {
            out.push(invalid_value(
                &field,
                spec,
                &format!("gmsaCredentialSpec size must be under {MAX_GMSA_KIB} KiB"),
            ));
        }
    }
    if let Some(user) = set_at(options, "runAsUserName") {
        let field = child(path, "runAsUserName");
        for msg in run_as_user_name(user.as_str().unwrap_or("")) {
            out.push(invalid_value(&field, user, msg));
        }
    }
}

/// What is wrong with a Windows `runAsUserName` (`DOMAIN\USER`, the domain optional).
fn run_as_user_name(name: &str) -> Vec<&'static str> {
    if name.is_empty() {
        return vec!["runAsUserName cannot be an empty string"];
    }
    if name.chars().any(|c| c.is_ascii_control()) {
        return vec!["runAsUserName cannot contain control characters"];
    }
    let parts: Vec<&str> = name.split('\\').collect();
    let (domain, user) = match parts.as_slice() {
        [user] => (None, *user),
        [domain, user] => (Some(*domain), *user),
        _ => return vec!["runAsUserName cannot contain more than one backslash"],
    };
    let mut errs = Vec::new();
    if domain.is_some_and(|d| d.len() >= 256) {
        errs.push("runAsUserName's Domain length must be under 256 characters");
    }
    if let Some(d) = domain
        && !matches(&NET_BIOS, d)
        && !matches(&DNS_DOMAIN, d)
    {
        errs.push("runAsUserName's Domain doesn't match the NetBios nor the DNS format");
    }
    if user.is_empty() {
        errs.push("runAsUserName's User cannot be empty");
    } else if user.len() > 104 {
        errs.push("runAsUserName's User length must not be longer than 104 characters");
    }
    if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
        errs.push("runAsUserName's User cannot contain only periods or spaces");
    }
    if user.chars().any(|c| "\"/\\:;|=,+*?<>@[]".contains(c)) {
        errs.push(
            r#"runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]"#,
        );
    }
    errs
}

/// The `windowsOptions.hostProcess` of a security context, if set.
fn host_process(holder: &Value) -> Option<bool> {
    holder
        .get("securityContext")?
        .get("windowsOptions")?
        .get("hostProcess")?
        .as_bool()
}

/// `validateWindowsHostProcessPod`: the pod's and a container's `hostProcess` agree; with one
/// host process container, all are, and the pod uses the host's network.
pub(super) fn validate_windows_host_process(spec: &Value, base: &str, out: &mut Vec<Cause>) {
    let pod = host_process(spec);
    let containers = containers_with_path(spec, base);
    let mut host_process_count = 0;
    for (path, c) in &containers {
        let own = host_process(c);
        if let (Some(pod), Some(own)) = (pod, own)
            && pod != own
        {
            out.push(invalid_value(
                &child(
                    &child(&child(path, "securityContext"), "windowsOptions"),
                    "hostProcess",
                ),
                &json!(own),
                &format!(
                    "pod hostProcess value must be identical if both are specified, was {pod}"
                ),
            ));
        }
        if own.or(pod) == Some(true) {
            host_process_count += 1;
        }
    }
    if host_process_count > 0 {
        if host_process_count != containers.len() {
            out.push(invalid_value(
                base,
                &json!(""),
                "If pod contains any hostProcess containers then all containers must be HostProcess containers",
            ));
        }
        if !flag(spec, "hostNetwork") {
            out.push(invalid_value(
                &child(base, "hostNetwork"),
                &json!(false),
                "hostNetwork must be true if pod contains any hostProcess containers",
            ));
        }
    }
}

/// `validateHostUsers`: a pod in its own user namespace shares no other namespace with the
/// host (upstream names two of the paths in Go's spelling).
pub(super) fn validate_host_users(spec: &Value, base: &str, out: &mut Vec<Cause>) {
    if host_users(spec) {
        return;
    }
    for (field, shown) in [
        ("hostNetwork", "hostNetwork"),
        ("hostPID", "HostPID"),
        ("hostIPC", "HostIPC"),
    ] {
        if flag(spec, field) {
            out.push(Cause::forbidden(
                child(base, shown),
                "when `pod.Spec.HostUsers` is false",
            ));
        }
    }
}

/// Upstream's message for a field a Windows pod may not set.
const NOT_FOR_WINDOWS: &str = "cannot be set for a windows pod";

/// `validateOS`, then `validateLinux` or `validateWindows` for a valid `spec.os.name`.
pub(super) fn validate_os(spec: &Value, base: &str, out: &mut Vec<Cause>) {
    let Some(os) = set_at(spec, "os") else {
        return;
    };
    let path = child(base, "os");
    match str_at(os, "name") {
        "" => out.push(Cause::required(child(&path, "name"), "cannot be empty")),
        "linux" => validate_linux(spec, base, out),
        "windows" => validate_windows(spec, base, out),
        other => out.push(not_supported(&path, &json!(other), &["linux", "windows"])),
    }
}

/// `validateLinux`: no Windows options on the pod or a container.
fn validate_linux(spec: &Value, base: &str, out: &mut Vec<Cause>) {
    const MESSAGE: &str = "windows options cannot be set for a linux pod";
    let sc_path = child(base, "securityContext");
    if set_at(spec, "securityContext").is_some_and(|sc| set_at(sc, "windowsOptions").is_some()) {
        out.push(Cause::forbidden(child(&sc_path, "windowsOptions"), MESSAGE));
    }
    for (path, c) in containers_with_path(spec, base) {
        if set_at(c, "securityContext").is_some_and(|sc| set_at(sc, "windowsOptions").is_some()) {
            out.push(Cause::forbidden(
                child(&child(&path, "securityContext"), "windowsOptions"),
                MESSAGE,
            ));
        }
    }
}

/// The pod security context fields a Windows pod may not set, in upstream's order, with
/// whether each sits in the spec (`true`) or in `securityContext`.
const WINDOWS_POD_FORBIDDEN: [(&str, bool); 15] = [
    ("appArmorProfile", false),
    ("seLinuxOptions", false),
    ("hostUsers", true),
    ("hostPID", true),
    ("hostIPC", true),
    ("seccompProfile", false),
    ("fsGroup", false),
    ("fsGroupChangePolicy", false),
    ("sysctls", false),
    ("shareProcessNamespace", true),
    ("runAsUser", false),
    ("runAsGroup", false),
    ("supplementalGroups", false),
    ("supplementalGroupsPolicy", false),
    ("seLinuxChangePolicy", false),
];

/// The container security context fields a Windows pod may not set, in upstream's order.
const WINDOWS_CONTAINER_FORBIDDEN: [&str; 10] = [
    "appArmorProfile",
    "seLinuxOptions",
    "seccompProfile",
    "capabilities",
    "readOnlyRootFilesystem",
    "privileged",
    "allowPrivilegeEscalation",
    "procMount",
    "runAsUser",
    "runAsGroup",
];

/// `validateWindows`: the Linux-only security settings of the pod and its containers.
fn validate_windows(spec: &Value, base: &str, out: &mut Vec<Cause>) {
    let empty = json!({});
    let sc = set_at(spec, "securityContext").unwrap_or(&empty);
    let sc_path = child(base, "securityContext");
    for (field, in_spec) in WINDOWS_POD_FORBIDDEN {
        let set = match (in_spec, field) {
            // Booleans in upstream's internal type: set when true.
            (true, "hostPID" | "hostIPC") => flag(spec, field),
            (true, _) => set_at(spec, field).is_some(),
            // A list: set when not empty.
            (false, "sysctls") => !list_at(sc, field).is_empty(),
            (false, _) => set_at(sc, field).is_some(),
        };
        if set {
            let path = if in_spec { base } else { &sc_path };
            out.push(Cause::forbidden(child(path, field), NOT_FOR_WINDOWS));
        }
    }
    for (path, c) in containers_with_path(spec, base) {
        let Some(sc) = set_at(c, "securityContext") else {
            continue;
        };
        let sc_path = child(&path, "securityContext");
        for field in WINDOWS_CONTAINER_FORBIDDEN {
            if set_at(sc, field).is_some() {
                out.push(Cause::forbidden(child(&sc_path, field), NOT_FOR_WINDOWS));
            }
        }
    }
}

/// The annotation prefix of the deprecated per-container AppArmor profiles.
const APP_ARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The annotations of an object's metadata, sorted by key (upstream walks a Go map).
fn annotations(meta: &Value) -> Vec<(&str, &str)> {
    meta.get("annotations")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default()
}

/// `ValidateAppArmorPodAnnotations`: each deprecated AppArmor annotation names a container of
/// the pod and a well-formed profile (`runtime/default`, `unconfined`, `localhost/<name>`).
/// `path` is that of the annotations (`metadata.annotations`).
pub(crate) fn validate_app_armor_annotations(meta: &Value, spec: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let names: BTreeSet<&str> = containers_with_path(spec, "")
        .into_iter()
        .map(|(_, c)| str_at(c, "name"))
        .collect();
    for (k, profile) in annotations(meta) {
        let Some(container) = k.strip_prefix(APP_ARMOR_ANNOTATION_PREFIX) else {
            continue;
        };
        let field = key(path, k);
        if !names.contains(container) {
            out.push(invalid_value(
                &field,
                &json!(container),
                "container not found",
            ));
        }
        let well_formed = matches!(profile, "" | "runtime/default" | "unconfined")
            || profile.starts_with("localhost/");
        if !well_formed {
            out.push(invalid_value(
                &field,
                &json!(profile),
                &format!(
                    "invalid AppArmor profile name: {}",
                    names::go_quote(profile)
                ),
            ));
        }
    }
    out
}

/// `validateAppArmorAnnotationsAndFieldsMatchOnCreate`: where a container has both an AppArmor
/// profile (its own or the pod's) and the deprecated annotation, they agree. Windows pods are
/// not checked.
pub(crate) fn validate_app_armor_annotations_match(
    meta: &Value,
    spec: &Value,
    base: &str,
) -> Vec<Cause> {
    let mut out = Vec::new();
    if set_at(spec, "os").is_some_and(|os| str_at(os, "name") == "windows") {
        return out;
    }
    let pod_profile = set_at(spec, "securityContext").and_then(|sc| set_at(sc, "appArmorProfile"));
    let annotations: Vec<(&str, &str)> = annotations(meta);
    for (path, c) in containers_with_path(spec, base) {
        let own = set_at(c, "securityContext").and_then(|sc| set_at(sc, "appArmorProfile"));
        let Some(profile) = own.or(pod_profile) else {
            continue;
        };
        let wanted = format!("{APP_ARMOR_ANNOTATION_PREFIX}{}", str_at(c, "name"));
        let Some((_, annotation)) = annotations.iter().find(|(k, _)| *k == wanted) else {
            continue;
        };
        let apparmor = child(&child(&path, "securityContext"), "appArmorProfile");
        let type_mismatch = Cause::forbidden(
            child(&apparmor, "type"),
            "apparmor type in annotation and field must match",
        );
        match str_at(profile, "type") {
            "Unconfined" if *annotation != "unconfined" => out.push(type_mismatch),
            "RuntimeDefault" if *annotation != "runtime/default" => out.push(type_mismatch),
            "Localhost" => match annotation.strip_prefix("localhost/") {
                None => out.push(type_mismatch),
                Some(name)
                    if set_at(profile, "localhostProfile").and_then(Value::as_str)
                        != Some(name) =>
                {
                    out.push(Cause::forbidden(
                        child(&apparmor, "localhostProfile"),
                        "apparmor profile in annotation and field must match",
                    ));
                }
                Some(_) => {}
            },
            _ => {}
        }
    }
    out
}

/// Upstream `IsValidSysctlName`: dot- or slash-separated segments of `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`.
fn is_sysctl_name(name: &str) -> bool {
    name.len() <= 253
        && name.split(['.', '/']).all(|seg| {
            let b = seg.as_bytes();
            !b.is_empty()
                && b.iter().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'_'
                })
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
        })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{validate_app_armor_annotations, validate_app_armor_annotations_match};
    use crate::error::Cause;
    use crate::validation::podspec::tests::{Change, check_table, valid};

    #[test]
    fn user_namespaces_and_host_namespaces() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                |s| {
                    s["hostUsers"] = json!(false);
                    s["hostNetwork"] = json!(true);
                    s["hostPID"] = json!(true);
                    s["hostIPC"] = json!(true);
                },
                vec![
                    "spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false",
                    "spec.HostPID: Forbidden: when `pod.Spec.HostUsers` is false",
                    "spec.HostIPC: Forbidden: when `pod.Spec.HostUsers` is false",
                ],
            ),
            (
                |s| s["containers"][0]["securityContext"] = json!({"procMount": "Unmasked"}),
                vec![
                    "spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`",
                ],
            ),
            (
                |s| {
                    s["hostUsers"] = json!(false);
                    s["containers"][0]["securityContext"] = json!({"procMount": "Unmasked"});
                },
                vec![],
            ),
            (
                |s| {
                    s["hostPID"] = json!(true);
                    s["shareProcessNamespace"] = json!(true);
                },
                vec![
                    "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
                ],
            ),
            (
                |s| {
                    s["hostNetwork"] = json!(true);
                    s["hostIPC"] = json!(true);
                    s["securityContext"] = json!({"sysctls": [
                        {"name": "net.ipv4.ip_forward", "value": "1"},
                        {"name": "kernel/shm_rmid_forced", "value": "1"},
                        {"name": "vm.swappiness", "value": "1"}
                    ]});
                },
                vec![
                    "spec.securityContext.sysctls[0].name: Invalid value: \"net.ipv4.ip_forward\": may not be specified when 'hostNetwork' is true",
                    "spec.securityContext.sysctls[1].name: Invalid value: \"kernel.shm_rmid_forced\": may not be specified when 'hostIPC' is true",
                ],
            ),
            (
                |s| {
                    s["securityContext"] = json!({"supplementalGroupsPolicy": "Loose",
                        "seLinuxChangePolicy": "Sometimes", "seLinuxOptions": {"level": "s0:c1"}})
                },
                vec![
                    "spec.securityContext.supplementalGroupsPolicy: Unsupported value: \"Loose\": supported values: \"Merge\", \"Strict\"",
                    "spec.securityContext.seLinuxChangePolicy: Unsupported value: \"Sometimes\": supported values: \"MountOption\", \"Recursive\"",
                ],
            ),
        ];
        check_table(cases, false);
    }

    #[test]
    fn app_armor_profiles() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                |s| s["securityContext"] = json!({"appArmorProfile": {"type": "Localhost"}}),
                vec![
                    "spec.securityContext.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost",
                ],
            ),
            (
                |s| {
                    s["containers"][0]["securityContext"] = json!({"appArmorProfile": {"type": "RuntimeDefault", "localhostProfile": "p"}})
                },
                vec![
                    "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Invalid value: \"p\": can only be set when AppArmor type is Localhost",
                ],
            ),
            (
                |s| s["securityContext"] = json!({"appArmorProfile": {"type": "Bogus"}}),
                vec![
                    "spec.securityContext.appArmorProfile.type: Unsupported value: \"Bogus\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"",
                ],
            ),
            (
                |s| s["securityContext"] = json!({"appArmorProfile": {}}),
                vec![
                    "spec.securityContext.appArmorProfile.type: Required value: type is required when appArmorProfile is set",
                ],
            ),
            (
                |s| {
                    s["securityContext"] =
                        json!({"appArmorProfile": {"type": "Localhost", "localhostProfile": " p"}})
                },
                vec![
                    "spec.securityContext.appArmorProfile.localhostProfile: Invalid value: \" p\": must not be padded with whitespace",
                ],
            ),
            (
                |s| {
                    s["securityContext"] = json!({"appArmorProfile":
                        {"type": "Localhost", "localhostProfile": "p".repeat(4096)}})
                },
                vec![
                    "spec.securityContext.appArmorProfile.localhostProfile: Too long: may not be more than 4095 bytes",
                ],
            ),
        ];
        check_table(cases, false);
    }

    #[test]
    fn windows_options_and_host_process_pods() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                |s| {
                    s["containers"][0]["securityContext"] =
                        json!({"windowsOptions": {"runAsUserName": "a\\b\\c"}})
                },
                vec![
                    r#"spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "a\\b\\c": runAsUserName cannot contain more than one backslash"#,
                ],
            ),
            (
                |s| {
                    s["containers"][0]["securityContext"] =
                        json!({"windowsOptions": {"runAsUserName": "DOM\\us*er"}})
                },
                vec![
                    r#"spec.containers[0].securityContext.windowsOptions.runAsUserName: Invalid value: "DOM\\us*er": runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]"#,
                ],
            ),
            (
                |s| {
                    s["securityContext"] = json!({"windowsOptions": {"runAsUserName": ".bad\\..",
                        "gmsaCredentialSpec": "", "gmsaCredentialSpecName": "Bad_Name"}})
                },
                vec![
                    "spec.securityContext.windowsOptions.gmsaCredentialSpecName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                    "spec.securityContext.windowsOptions.gmsaCredentialSpec: Invalid value: \"\": gmsaCredentialSpec cannot be an empty string",
                    r#"spec.securityContext.windowsOptions.runAsUserName: Invalid value: ".bad\\..": runAsUserName's Domain doesn't match the NetBios nor the DNS format"#,
                    r#"spec.securityContext.windowsOptions.runAsUserName: Invalid value: ".bad\\..": runAsUserName's User cannot contain only periods or spaces"#,
                ],
            ),
            (
                |s| {
                    s["securityContext"] = json!({"windowsOptions": {"hostProcess": true}});
                    s["containers"][0]["securityContext"] =
                        json!({"windowsOptions": {"hostProcess": false}});
                },
                vec![
                    "spec.containers[0].securityContext.windowsOptions.hostProcess: Invalid value: false: pod hostProcess value must be identical if both are specified, was true",
                ],
            ),
            (
                |s| {
                    s["containers"][0]["securityContext"] =
                        json!({"windowsOptions": {"hostProcess": true}});
                    s["initContainers"] = json!([{"name": "i", "image": "x",
                        "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}]);
                },
                vec![
                    "spec: Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers",
                    "spec.hostNetwork: Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers",
                ],
            ),
        ];
        check_table(cases, false);
    }

    #[test]
    fn the_os_of_a_pod_limits_its_security_settings() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                |s| {
                    s["os"] = json!({"name": "windows"});
                    s["hostPID"] = json!(true);
                    s["securityContext"] =
                        json!({"seLinuxOptions": {"level": "s0"}, "runAsUser": 1, "sysctls": []});
                    s["containers"][0]["securityContext"] =
                        json!({"privileged": false, "windowsOptions": {"runAsUserName": "u"}});
                },
                vec![
                    "spec.securityContext.seLinuxOptions: Forbidden: cannot be set for a windows pod",
                    "spec.hostPID: Forbidden: cannot be set for a windows pod",
                    "spec.securityContext.runAsUser: Forbidden: cannot be set for a windows pod",
                    "spec.containers[0].securityContext.privileged: Forbidden: cannot be set for a windows pod",
                ],
            ),
            (
                |s| {
                    s["os"] = json!({"name": "linux"});
                    s["securityContext"] = json!({"windowsOptions": {"runAsUserName": "u"}});
                    s["containers"][0]["securityContext"] =
                        json!({"windowsOptions": {"runAsUserName": "u"}});
                },
                vec![
                    "spec.securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
                    "spec.containers[0].securityContext.windowsOptions: Forbidden: windows options cannot be set for a linux pod",
                ],
            ),
            (
                |s| s["os"] = json!({"name": "plan9"}),
                vec![
                    "spec.os: Unsupported value: \"plan9\": supported values: \"linux\", \"windows\"",
                ],
            ),
            (
                |s| s["os"] = json!({}),
                vec!["spec.os.name: Required value: cannot be empty"],
            ),
        ];
        check_table(cases, false);
    }

    /// The summaries of a list of causes.
    fn summaries(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    #[test]
    fn app_armor_annotations_name_containers_and_agree_with_the_fields() {
        let meta = json!({"annotations": {
            "container.apparmor.security.beta.kubernetes.io/c": "bogus",
            "container.apparmor.security.beta.kubernetes.io/x": "runtime/default",
            "other": "bogus"
        }});
        assert_eq!(
            summaries(&validate_app_armor_annotations(
                &meta,
                &valid(),
                "metadata.annotations"
            )),
            vec![
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: Invalid value: \"bogus\": invalid AppArmor profile name: \"bogus\"",
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/x]: Invalid value: \"x\": container not found",
            ]
        );
        let annotated = |value: &str| json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/c": value}});
        let with_profile = |profile: Value| {
            let mut spec = valid();
            spec["containers"][0]["securityContext"] = json!({"appArmorProfile": profile});
            spec
        };
        let runtime = with_profile(json!({"type": "RuntimeDefault"}));
        assert_eq!(
            summaries(&validate_app_armor_annotations_match(
                &annotated("unconfined"),
                &runtime,
                "spec"
            )),
            vec![
                "spec.containers[0].securityContext.appArmorProfile.type: Forbidden: apparmor type in annotation and field must match"
            ]
        );
        assert!(
            validate_app_armor_annotations_match(&annotated("runtime/default"), &runtime, "spec")
                .is_empty()
        );
        let local = with_profile(json!({"type": "Localhost", "localhostProfile": "a"}));
        assert_eq!(
            summaries(&validate_app_armor_annotations_match(
                &annotated("localhost/b"),
                &local,
                "spec"
            )),
            vec![
                "spec.containers[0].securityContext.appArmorProfile.localhostProfile: Forbidden: apparmor profile in annotation and field must match"
            ]
        );
        // The pod's profile applies to a container without one; Windows pods are not checked.
        let mut pod_level = valid();
        pod_level["securityContext"] = json!({"appArmorProfile": {"type": "Unconfined"}});
        assert_eq!(
            validate_app_armor_annotations_match(&annotated("runtime/default"), &pod_level, "spec")
                .len(),
            1
        );
        pod_level["os"] = json!({"name": "windows"});
        assert!(
            validate_app_armor_annotations_match(&annotated("runtime/default"), &pod_level, "spec")
                .is_empty()
        );
    }
}
