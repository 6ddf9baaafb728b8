//! The pod spec, shared by Pods and every pod template (Deployments, Jobs, …): its quantities
//! in canonical form and upstream's `ValidatePodSpec` essentials, with upstream's messages and
//! field paths, under any base path (`spec`, `spec.template.spec`).

// Upstream's warnings for a valid pod spec, beside its validation.
#[path = "podspec_warnings.rs"]
pub(crate) mod warnings;

mod claims;
mod security;
mod volumes;

use claims::{pod_claim_names, validate_container_claims, validate_pod_resource_claims};
use security::{
    host_users, validate_host_users, validate_os, validate_pod_security_context,
    validate_security_context, validate_windows_host_process,
};
pub(crate) use security::{validate_app_armor_annotations, validate_app_armor_annotations_match};
use volumes::{Volumes, validate_volume_devices, validate_volume_mounts, validate_volumes};

use std::cmp::Ordering;
use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::error::Cause;
use crate::quantity::{self, QuantityError};
use crate::validation::enums::{self, Enum, Order};
use crate::validation::names::{
    self, NameRule, child, dns1123_label, dns1123_subdomain, index, invalid_value, key,
    validate_label_key, validate_label_value,
};
use crate::validation::ports::{inclusive_range, port_name, port_num, port_num_or_name};
use crate::validation::selectors;

/// The container lists of a pod spec, in upstream's validation order.
pub(crate) const CONTAINER_LISTS: [&str; 3] =
    ["containers", "initContainers", "ephemeralContainers"];

/// Rewrites every quantity of a pod spec in canonical form: container requests and limits,
/// pod-level resources, overhead, `emptyDir.sizeLimit` and ephemeral volume claim templates.
pub(crate) fn canonicalize_pod_spec(spec: &mut Value) -> Result<(), QuantityError> {
    for list in CONTAINER_LISTS {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                canonicalize_requirements(c.get_mut("resources"))?;
            }
        }
    }
    canonicalize_requirements(spec.get_mut("resources"))?;
    if let Some(overhead) = spec.get_mut("overhead") {
        quantity::canonicalize_resource_list(overhead)?;
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in volumes {
            if let Some(limit) = v.get_mut("emptyDir").and_then(|e| e.get_mut("sizeLimit")) {
                quantity::canonicalize_value(limit)?;
            }
            let claim = v
                .get_mut("ephemeral")
                .and_then(|e| e.get_mut("volumeClaimTemplate"))
                .and_then(|t| t.get_mut("spec"))
                .and_then(|s| s.get_mut("resources"));
            canonicalize_requirements(claim)?;
            for item in items_of(v.get_mut("downwardAPI")) {
                canonicalize_divisor(item)?;
            }
            let sources = v
                .get_mut("projected")
                .and_then(|p| p.get_mut("sources"))
                .and_then(Value::as_array_mut);
            for source in sources.into_iter().flatten() {
                for item in items_of(source.get_mut("downwardAPI")) {
                    canonicalize_divisor(item)?;
                }
            }
        }
    }
    for list in CONTAINER_LISTS {
        if let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in containers {
                if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
                    for e in env {
                        if let Some(from) = e.get_mut("valueFrom") {
                            canonicalize_divisor(from)?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The `items` of a downward API volume source.
fn items_of(source: Option<&mut Value>) -> impl Iterator<Item = &mut Value> {
    source
        .and_then(|s| s.get_mut("items"))
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// Canonicalizes `resourceFieldRef.divisor` (a quantity) under `holder`.
fn canonicalize_divisor(holder: &mut Value) -> Result<(), QuantityError> {
    match holder
        .get_mut("resourceFieldRef")
        .and_then(|r| r.get_mut("divisor"))
    {
        Some(divisor) => quantity::canonicalize_value(divisor),
        None => Ok(()),
    }
}

/// Canonicalizes the `limits` and `requests` of a resource requirements object.
fn canonicalize_requirements(resources: Option<&mut Value>) -> Result<(), QuantityError> {
    let Some(resources) = resources else {
        return Ok(());
    };
    for key in ["limits", "requests"] {
        if let Some(list) = resources.get_mut(key) {
            quantity::canonicalize_resource_list(list)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reading the JSON pod spec as upstream's typed structs see it.
// ---------------------------------------------------------------------------------------------

/// A string field, `""` when absent (Go's zero value).
fn str_at<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

/// An integer field, if set.
fn int_at(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

/// An array field, empty when absent.
fn list_at<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A field that is set (present and not `null`).
fn set_at<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    v.get(field).filter(|x| !x.is_null())
}

/// Whether a value is Go's zero value for its type once decoded (absent, null, empty).
fn is_zero(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Bool(b)) => !b,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(m)) => m.values().all(|x| is_zero(Some(x))),
    }
}

/// `FieldValueNotFound`: `Not found: <value>`.
fn not_found(field: &str, value: &Value) -> Cause {
    Cause::new(
        "FieldValueNotFound",
        field,
        format!("Not found: {}", names::go_render(value)),
    )
}

/// `FieldValueNotFound` with upstream's detail after the value.
fn not_found_because(field: &str, value: &Value, detail: &str) -> Cause {
    Cause::new(
        "FieldValueNotFound",
        field,
        format!("Not found: {}: {detail}", names::go_render(value)),
    )
}

/// `field.NotSupported` with upstream's list of supported values, in the given order.
fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Cause {
    let supported: Vec<Value> = supported.iter().map(|s| json!(s)).collect();
    Cause::not_supported(field, value, &supported)
}

/// Checks an enumerated string field: `Required` when empty, `NotSupported` (listing the
/// values in `order`) when unknown.
fn one_of(
    v: &Value,
    field: &str,
    path: &str,
    supported: &Enum,
    order: Order,
    out: &mut Vec<Cause>,
) {
    let value = str_at(v, field);
    if value.is_empty() {
        out.push(Cause::required(child(path, field), ""));
    } else if !supported.contains(value) {
        out.push(supported.not_supported(child(path, field), &json!(value), order));
    }
}

/// `ValidateDNS1123Label` of a value at `field`.
fn dns_label(value: &str, field: &str, out: &mut Vec<Cause>) {
    for msg in dns1123_label(value) {
        out.push(invalid_value(field, &json!(value), &msg));
    }
}

/// A name validated as a DNS subdomain (`NameIsDNSSubdomain`), when set.
fn subdomain_name(v: &Value, field: &str, path: &str, out: &mut Vec<Cause>) {
    let value = str_at(v, field);
    if !value.is_empty() {
        for msg in dns1123_subdomain(value) {
            out.push(invalid_value(&child(path, field), &json!(value), &msg));
        }
    }
}

/// `ValidateQualifiedName` of a value at `field`.
fn qualified_name(value: &str, field: &str, out: &mut Vec<Cause>) {
    for msg in validate_label_key(value) {
        out.push(invalid_value(field, &json!(value), &msg));
    }
}

/// `ValidateNonnegativeField` of an integer field, when set.
fn nonnegative(v: &Value, field: &str, path: &str, out: &mut Vec<Cause>) {
    out.extend(crate::validation::names::nonnegative(v, field, path));
}

// ---------------------------------------------------------------------------------------------
// The pod spec.
// ---------------------------------------------------------------------------------------------

/// How a pod spec is validated: as a Pod's own spec or as a template inside another kind.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PodSpecOptions<'a> {
    /// The spec belongs to a Pod (upstream's `ResourceIsPod`), not a template.
    pub resource_is_pod: bool,
    /// The name in the pod's (or template's) metadata: ephemeral volumes' claims are named
    /// after it (`<pod>-<volume>`), which must be a valid claim name. Empty: not checked.
    pub pod_name: &'a str,
}

/// Upstream `ValidatePodSpec`: every cause for the pod spec at `base` (`spec`,
/// `spec.template.spec`), with upstream's field paths and messages.
pub(crate) fn validate_pod_spec(spec: &Value, base: &str, opts: PodSpecOptions<'_>) -> Vec<Cause> {
    let mut out = Vec::new();
    if set_at(spec, "terminationGracePeriodSeconds").is_none() {
        out.push(Cause::required(
            child(base, "terminationGracePeriodSeconds"),
            "",
        ));
    }
    let grace = int_at(spec, "terminationGracePeriodSeconds");
    let volumes = validate_volumes(
        list_at(spec, "volumes"),
        &child(base, "volumes"),
        opts,
        &mut out,
    );
    let pod_claims = pod_claim_names(spec);
    validate_pod_resource_claims(spec, &child(base, "resourceClaims"), &mut out);
    let restart_policy = str_at(spec, "restartPolicy");
    let ctx = ContainerContext {
        volumes: &volumes,
        pod_claims: &pod_claims,
        grace,
        restart_policy,
        host_users: host_users(spec),
    };
    validate_containers(spec, &child(base, "containers"), &ctx, &mut out);
    validate_init_containers(spec, &child(base, "initContainers"), &ctx, &mut out);
    validate_ephemeral_containers(spec, &child(base, "ephemeralContainers"), &ctx, &mut out);
    if let Some(resources) = set_at(spec, "resources") {
        let path = child(base, "resources");
        if set_at(resources, "claims").is_some() {
            out.push(Cause::forbidden(
                child(&path, "claims"),
                "claims cannot be set for Resources at pod-level",
            ));
        }
        validate_resource_requirements(resources, &path, pod_resource_name, &pod_claims, &mut out);
    }
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        let containers = child(base, "containers");
        for (i, c) in list_at(spec, "containers").iter().enumerate() {
            for (j, p) in list_at(c, "ports").iter().enumerate() {
                let host = int_at(p, "hostPort").unwrap_or(0);
                let container = int_at(p, "containerPort").unwrap_or(0);
                if (opts.resource_is_pod || host != 0) && host != container {
                    out.push(invalid_value(
                        &child(
                            &index(&child(&index(&containers, i), "ports"), j),
                            "hostPort",
                        ),
                        &json!(host),
                        "must match `containerPort` when `hostNetwork` is true",
                    ));
                }
            }
        }
    }
    one_of(
        spec,
        "restartPolicy",
        base,
        &enums::RESTART_POLICY,
        Order::Declared,
        &mut out,
    );
    one_of(
        spec,
        "dnsPolicy",
        base,
        &enums::DNS_POLICY,
        Order::Declared,
        &mut out,
    );
    if let Some(selector) = set_at(spec, "nodeSelector") {
        out.extend(names::validate_labels(
            selector,
            &child(base, "nodeSelector"),
        ));
    }
    validate_pod_security_context(spec, base, &mut out);
    if let Some(affinity) = set_at(spec, "affinity") {
        validate_affinity(affinity, &child(base, "affinity"), &mut out);
    }
    validate_dns_config(spec, base, &mut out);
    for (i, gate) in list_at(spec, "readinessGates").iter().enumerate() {
        qualified_name(
            str_at(gate, "conditionType"),
            &child(&index(&child(base, "readinessGates"), i), "conditionType"),
            &mut out,
        );
    }
    let mut gates = BTreeSet::new();
    for (i, gate) in list_at(spec, "schedulingGates").iter().enumerate() {
        let name = str_at(gate, "name");
        let path = index(&child(base, "schedulingGates"), i);
        qualified_name(name, &path, &mut out);
        if !gates.insert(name) {
            out.push(Cause::duplicate(path, &json!(name)));
        }
    }
    validate_topology_spread(
        list_at(spec, "topologySpreadConstraints"),
        &child(base, "topologySpreadConstraints"),
        &mut out,
    );
    validate_windows_host_process(spec, base, &mut out);
    validate_host_users(spec, base, &mut out);
    subdomain_name(spec, "serviceAccountName", base, &mut out);
    subdomain_name(spec, "nodeName", base, &mut out);
    if let Some(deadline) = int_at(spec, "activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&deadline)
    {
        out.push(invalid_value(
            &child(base, "activeDeadlineSeconds"),
            &json!(deadline),
            &inclusive_range(1, i64::from(i32::MAX)),
        ));
    }
    for field in ["hostname", "subdomain"] {
        let value = str_at(spec, field);
        if !value.is_empty() {
            dns_label(value, &child(base, field), &mut out);
        }
    }
    out.extend(validate_tolerations(
        list_at(spec, "tolerations"),
        &child(base, "tolerations"),
    ));
    validate_host_aliases(
        list_at(spec, "hostAliases"),
        &child(base, "hostAliases"),
        &mut out,
    );
    subdomain_name(spec, "priorityClassName", base, &mut out);
    if set_at(spec, "runtimeClassName").is_some() {
        let value = str_at(spec, "runtimeClassName");
        for msg in dns1123_subdomain(value) {
            out.push(invalid_value(
                &child(base, "runtimeClassName"),
                &json!(value),
                &msg,
            ));
        }
    }
    if set_at(spec, "preemptionPolicy").is_some() {
        one_of(
            spec,
            "preemptionPolicy",
            base,
            &enums::PREEMPTION_POLICY,
            Order::Declared,
            &mut out,
        );
    }
    if let Some(overhead) = set_at(spec, "overhead").and_then(Value::as_object) {
        let path = child(base, "overhead");
        for (name, q) in overhead {
            let field = key(&path, name);
            out.extend(pod_resource_name(name, &field));
            resource_quantity(name, q, &field, &mut out);
        }
    }
    validate_os(spec, base, &mut out);
    out
}

/// The checks upstream makes only on a Pod's own spec (`validatePodMetadataAndSpec` after
/// `ValidatePodSpec`): images without surrounding whitespace, no service account token
/// projection without a service account.
pub(crate) fn validate_pod_only(spec: &Value, base: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    if str_at(spec, "serviceAccountName").is_empty() {
        for (i, v) in list_at(spec, "volumes").iter().enumerate() {
            let Some(projected) = set_at(v, "projected") else {
                continue;
            };
            let path = child(&index(&child(base, "volumes"), i), "projected");
            for (j, source) in list_at(projected, "sources").iter().enumerate() {
                if set_at(source, "serviceAccountToken").is_some() {
                    out.push(Cause::forbidden(
                        child(&index(&child(&path, "sources"), j), "serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    ));
                }
            }
        }
    }
    for list in ["containers", "initContainers"] {
        for (i, c) in list_at(spec, list).iter().enumerate() {
            image_whitespace(c, &index(&child(base, list), i), &mut out);
        }
    }
    out
}

/// `validateContainerOnlyForPod`: an image may not have leading or trailing whitespace.
fn image_whitespace(c: &Value, path: &str, out: &mut Vec<Cause>) {
    let image = str_at(c, "image");
    if image.trim() != image {
        out.push(invalid_value(
            &child(path, "image"),
            &json!(image),
            "must not have leading or trailing whitespace",
        ));
    }
}

/// What container validation needs from the rest of the pod spec.
struct ContainerContext<'a> {
    /// The valid volumes by name.
    volumes: &'a Volumes<'a>,
    /// The names of the pod's resource claims.
    pod_claims: &'a BTreeSet<String>,
    /// The pod's termination grace period.
    grace: Option<i64>,
    /// The pod's restart policy.
    restart_policy: &'a str,
    /// Whether the pod shares the host's user namespace.
    host_users: bool,
}

/// `validateContainers`: at least one, names unique, probes and lifecycle, no restartPolicy,
/// host ports unique.
fn validate_containers(spec: &Value, path: &str, ctx: &ContainerContext<'_>, out: &mut Vec<Cause>) {
    let containers = list_at(spec, "containers");
    if containers.is_empty() {
        out.push(Cause::required(path, ""));
        return;
    }
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let cpath = index(path, i);
        validate_container_common(c, &cpath, ctx, out);
        let name = str_at(c, "name");
        if !names.insert(name) {
            out.push(Cause::duplicate(child(&cpath, "name"), &json!(name)));
        }
        validate_probes_and_lifecycle(c, &cpath, ctx.grace, out);
        if set_at(c, "restartPolicy").is_some() {
            out.push(Cause::forbidden(
                child(&cpath, "restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    host_port_conflicts(containers, 0, path, out);
}

/// Lifecycle handlers and the three probes of a container that may have them.
fn validate_probes_and_lifecycle(c: &Value, path: &str, grace: Option<i64>, out: &mut Vec<Cause>) {
    if let Some(lifecycle) = set_at(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(handler) = set_at(lifecycle, hook) {
                validate_handler(
                    handler,
                    LIFECYCLE_HANDLERS,
                    grace,
                    &child(&child(path, "lifecycle"), hook),
                    out,
                );
            }
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = set_at(c, probe) {
            validate_probe(p, probe, grace, &child(path, probe), out);
        }
    }
}

/// `validateInitContainers`: names unique across regular and init containers, the container
/// restart policy (`Always` makes a sidecar), probes and lifecycle only for sidecars.
fn validate_init_containers(
    spec: &Value,
    path: &str,
    ctx: &ContainerContext<'_>,
    out: &mut Vec<Cause>,
) {
    let mut names: BTreeSet<&str> = list_at(spec, "containers")
        .iter()
        .map(|c| str_at(c, "name"))
        .collect();
    for (i, c) in list_at(spec, "initContainers").iter().enumerate() {
        let cpath = index(path, i);
        validate_container_common(c, &cpath, ctx, out);
        let mut sidecar = false;
        if set_at(c, "restartPolicy").is_some() {
            let policy = str_at(c, "restartPolicy");
            if policy == "Always" {
                sidecar = true;
            } else {
                out.push(not_supported(
                    &child(&cpath, "restartPolicy"),
                    &json!(policy),
                    &["Always"],
                ));
            }
        }
        let name = str_at(c, "name");
        if names.contains(name) {
            out.push(Cause::duplicate(child(&cpath, "name"), &json!(name)));
        } else if !name.is_empty() {
            names.insert(name);
        }
        host_port_conflicts(std::slice::from_ref(c), i, path, out);
        if sidecar {
            validate_probes_and_lifecycle(c, &cpath, ctx.grace, out);
        } else {
            for field in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if set_at(c, field).is_some() {
                    out.push(Cause::forbidden(
                        child(&cpath, field),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
}

/// The fields of an ephemeral container upstream refuses (`cannot be set for an Ephemeral
/// Container`), in the order of upstream's struct.
const EPHEMERAL_FORBIDDEN: [&str; 8] = [
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// `validateEphemeralContainers`.
fn validate_ephemeral_containers(
    spec: &Value,
    path: &str,
    ctx: &ContainerContext<'_>,
    out: &mut Vec<Cause>,
) {
    let ephemeral = list_at(spec, "ephemeralContainers");
    if ephemeral.is_empty() {
        return;
    }
    let others: BTreeSet<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|l| list_at(spec, l))
        .map(|c| str_at(c, "name"))
        .collect();
    let mut all = others.clone();
    for (i, c) in ephemeral.iter().enumerate() {
        let cpath = index(path, i);
        validate_container_common(c, &cpath, ctx, out);
        image_whitespace(c, &cpath, out);
        let name = str_at(c, "name");
        if !all.insert(name) {
            out.push(Cause::duplicate(child(&cpath, "name"), &json!(name)));
        }
        let target = str_at(c, "targetContainerName");
        if !target.is_empty() && !others.contains(target) {
            out.push(not_found(
                &child(&cpath, "targetContainerName"),
                &json!(target),
            ));
        }
        for field in EPHEMERAL_FORBIDDEN {
            if !is_zero(c.get(field)) {
                out.push(Cause::forbidden(
                    child(&cpath, field),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
        for (j, m) in list_at(c, "volumeMounts").iter().enumerate() {
            for field in ["subPath", "subPathExpr"] {
                if !str_at(m, field).is_empty() {
                    out.push(Cause::forbidden(
                        child(&index(&child(&cpath, "volumeMounts"), j), field),
                        "cannot be set for an Ephemeral Container",
                    ));
                }
            }
        }
    }
}

/// `validateContainerCommon`: what every kind of container is checked for.
fn validate_container_common(
    c: &Value,
    path: &str,
    ctx: &ContainerContext<'_>,
    out: &mut Vec<Cause>,
) {
    let name = str_at(c, "name");
    if name.is_empty() {
        out.push(Cause::required(child(path, "name"), ""));
    } else {
        dns_label(name, &child(path, "name"), out);
    }
    if str_at(c, "image").is_empty() {
        out.push(Cause::required(child(path, "image"), ""));
    }
    one_of(
        c,
        "terminationMessagePolicy",
        path,
        &enums::TERMINATION_MESSAGE_POLICY,
        Order::Declared,
        out,
    );
    validate_container_ports(list_at(c, "ports"), &child(path, "ports"), out);
    validate_env(list_at(c, "env"), &child(path, "env"), out);
    validate_env_from(list_at(c, "envFrom"), &child(path, "envFrom"), out);
    validate_volume_mounts(c, &child(path, "volumeMounts"), ctx.volumes, out);
    validate_volume_devices(c, &child(path, "volumeDevices"), ctx.volumes, out);
    one_of(
        c,
        "imagePullPolicy",
        path,
        &enums::PULL_POLICY,
        Order::Sorted,
        out,
    );
    if let Some(resources) = set_at(c, "resources") {
        validate_resource_requirements(
            resources,
            &child(path, "resources"),
            container_resource_name,
            ctx.pod_claims,
            out,
        );
    }
    validate_resize_policy(
        list_at(c, "resizePolicy"),
        &child(path, "resizePolicy"),
        ctx.restart_policy,
        out,
    );
    if let Some(sc) = set_at(c, "securityContext") {
        validate_security_context(sc, &child(path, "securityContext"), ctx.host_users, out);
    }
}

/// `validateResizePolicy`: cpu or memory, once each, with a known restart policy.
fn validate_resize_policy(policies: &[Value], path: &str, restart: &str, out: &mut Vec<Cause>) {
    let mut seen = BTreeSet::new();
    for (i, p) in policies.iter().enumerate() {
        let resource = str_at(p, "resourceName");
        if !seen.insert(resource) {
            out.push(Cause::duplicate(index(path, i), &json!(resource)));
        }
        match resource {
            "cpu" | "memory" => {}
            "" => out.push(Cause::required(path, "")),
            other => out.push(not_supported(path, &json!(other), &["cpu", "memory"])),
        }
        let policy = str_at(p, "restartPolicy");
        match policy {
            "NotRequired" | "RestartContainer" => {}
            "" => out.push(Cause::required(path, "")),
            other => out.push(not_supported(
                path,
                &json!(other),
                &["NotRequired", "RestartContainer"],
            )),
        }
        if restart == "Never" && policy != "NotRequired" {
            out.push(invalid_value(
                path,
                &json!(policy),
                "must be 'NotRequired' when `restartPolicy` is 'Never'",
            ));
        }
    }
}

/// `validateContainerPorts`.
fn validate_container_ports(ports: &[Value], path: &str, out: &mut Vec<Cause>) {
    let mut names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let ppath = index(path, i);
        let name = str_at(p, "name");
        if !name.is_empty() {
            let msgs = port_name(name);
            if !msgs.is_empty() {
                for msg in msgs {
                    out.push(invalid_value(&child(&ppath, "name"), &json!(name), &msg));
                }
            } else if !names.insert(name) {
                out.push(Cause::duplicate(child(&ppath, "name"), &json!(name)));
            }
        }
        let container = int_at(p, "containerPort").unwrap_or(0);
        if container == 0 {
            out.push(Cause::required(child(&ppath, "containerPort"), ""));
        } else {
            for msg in port_num(container) {
                out.push(invalid_value(
                    &child(&ppath, "containerPort"),
                    &json!(container),
                    &msg,
                ));
            }
        }
        let host = int_at(p, "hostPort").unwrap_or(0);
        if host != 0 {
            for msg in port_num(host) {
                out.push(invalid_value(
                    &child(&ppath, "hostPort"),
                    &json!(host),
                    &msg,
                ));
            }
        }
        let protocol = str_at(p, "protocol");
        if protocol.is_empty() {
            out.push(Cause::required(child(&ppath, "protocol"), ""));
        } else if !["SCTP", "TCP", "UDP"].contains(&protocol) {
            out.push(not_supported(
                &child(&ppath, "protocol"),
                &json!(protocol),
                &["SCTP", "TCP", "UDP"],
            ));
        }
    }
}

/// `checkHostPortConflicts`: a `protocol/hostIP/hostPort` used twice. `first` is the index of
/// the first container in `containers` within the list at `path`.
fn host_port_conflicts(containers: &[Value], first: usize, path: &str, out: &mut Vec<Cause>) {
    let mut seen = BTreeSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, p) in list_at(c, "ports").iter().enumerate() {
            let host = int_at(p, "hostPort").unwrap_or(0);
            if host == 0 {
                continue;
            }
            let entry = format!("{}/{}/{host}", str_at(p, "protocol"), str_at(p, "hostIP"));
            if seen.contains(&entry) {
                let field = child(
                    &index(&child(&index(path, first + ci), "ports"), pi),
                    "hostPort",
                );
                out.push(Cause::duplicate(field, &json!(entry)));
            } else {
                seen.insert(entry);
            }
        }
    }
}

/// Upstream `IsRelaxedEnvVarName` (the relaxed rule is GA): printable ASCII but `=`.
fn env_var_name(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push("environment variable name must be non-empty".to_string());
    }
    if name.bytes().any(|b| !(32..=126).contains(&b) || b == b'=') {
        errs.push(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
                .to_string(),
        );
    }
    errs
}

/// The downward API fields an environment variable may read.
const ENV_FIELD_PATHS: [&str; 9] = [
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

/// The container resources an environment variable may read.
const ENV_RESOURCE_FIELDS: [&str; 6] = [
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `ValidateEnv`.
fn validate_env(vars: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, e) in vars.iter().enumerate() {
        let epath = index(path, i);
        let name = str_at(e, "name");
        if name.is_empty() {
            out.push(Cause::required(child(&epath, "name"), ""));
        } else {
            for msg in env_var_name(name) {
                out.push(invalid_value(&child(&epath, "name"), &json!(name), &msg));
            }
        }
        let Some(from) = set_at(e, "valueFrom") else {
            continue;
        };
        let fpath = child(&epath, "valueFrom");
        let mut sources = 0;
        if let Some(field_ref) = set_at(from, "fieldRef") {
            sources += 1;
            validate_field_ref(field_ref, &ENV_FIELD_PATHS, &child(&fpath, "fieldRef"), out);
        }
        if let Some(resource_ref) = set_at(from, "resourceFieldRef") {
            sources += 1;
            validate_resource_field_ref(
                resource_ref,
                false,
                &child(&fpath, "resourceFieldRef"),
                out,
            );
        }
        for (source, fieldname) in [
            ("configMapKeyRef", "configMapKeyRef"),
            ("secretKeyRef", "secretKeyRef"),
        ] {
            if let Some(selector) = set_at(from, source) {
                sources += 1;
                let spath = child(&fpath, fieldname);
                let name = str_at(selector, "name");
                for msg in names::validate_name(name, NameRule::Subdomain, false) {
                    out.push(invalid_value(&child(&spath, "name"), &json!(name), &msg));
                }
                let k = str_at(selector, "key");
                if k.is_empty() {
                    out.push(Cause::required(child(&spath, "key"), ""));
                } else {
                    for msg in config_map_key(k) {
                        out.push(invalid_value(&child(&spath, "key"), &json!(k), &msg));
                    }
                }
            }
        }
        if sources == 0 {
            out.push(invalid_value(
                &fpath,
                &json!(""),
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !str_at(e, "value").is_empty() {
            out.push(invalid_value(
                &fpath,
                &json!(""),
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            out.push(invalid_value(
                &fpath,
                &json!(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// Upstream `IsConfigMapKey`: at most 253 characters of `[-._a-zA-Z0-9]`, not `.`/`..`.
pub(crate) fn config_map_key(k: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if k.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !k
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
    {
        errs.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_string());
    }
    if k == "." {
        errs.push("must not be '.'".to_string());
    } else if k == ".." {
        errs.push("must not be '..'".to_string());
    } else if k.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// `validateObjectFieldSelector`: a `fieldRef` reading one of `expressions` (or a label or an
/// annotation by key).
fn validate_field_ref(field_ref: &Value, expressions: &[&str], path: &str, out: &mut Vec<Cause>) {
    if str_at(field_ref, "apiVersion").is_empty() {
        out.push(Cause::required(child(path, "apiVersion"), ""));
        return;
    }
    let field_path = str_at(field_ref, "fieldPath");
    if field_path.is_empty() {
        out.push(Cause::required(child(path, "fieldPath"), ""));
        return;
    }
    if let Some((base, rest)) = field_path.split_once('[') {
        let subscript = rest
            .strip_suffix(']')
            .map(|s| s.trim_matches('\'').to_string())
            .unwrap_or_default();
        match base {
            "metadata.annotations" => qualified_name(&subscript.to_lowercase(), path, out),
            "metadata.labels" => qualified_name(&subscript, path, out),
            other => out.push(invalid_value(
                path,
                &json!(other),
                "does not support subscript",
            )),
        }
    } else if !expressions.contains(&field_path) {
        out.push(not_supported(
            &child(path, "fieldPath"),
            &json!(field_path),
            expressions,
        ));
    }
}

/// `validateContainerResourceFieldSelector`: a container resource (`containerName` required
/// in a volume file) and a divisor suited to it.
fn validate_resource_field_ref(
    resource_ref: &Value,
    volume: bool,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let resource = str_at(resource_ref, "resource");
    if volume && str_at(resource_ref, "containerName").is_empty() {
        out.push(Cause::required(child(path, "containerName"), ""));
    } else if resource.is_empty() {
        out.push(Cause::required(child(path, "resource"), ""));
    } else if !ENV_RESOURCE_FIELDS.contains(&resource) && !is_huge_pages_field(resource) {
        out.push(not_supported(
            &child(path, "resource"),
            &json!(resource),
            &ENV_RESOURCE_FIELDS,
        ));
    }
    resource_divisor(resource_ref, resource, path, out);
}

/// Whether a resource field selector reads huge pages (`limits.hugepages-2Mi`).
fn is_huge_pages_field(resource: &str) -> bool {
    resource.starts_with("limits.hugepages-") || resource.starts_with("requests.hugepages-")
}

/// The divisors upstream accepts for memory, ephemeral storage and huge pages.
const BYTE_DIVISORS: [&str; 13] = [
    "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
];

/// `validateContainerResourceDivisor`: a set divisor is `1m`/`1` for cpu, a power of the
/// byte units for the others.
fn resource_divisor(resource_ref: &Value, resource: &str, path: &str, out: &mut Vec<Cause>) {
    let Some(divisor) = set_at(resource_ref, "divisor")
        .and_then(|d| quantity::from_json(d).ok())
        .filter(|q| !q.is_zero())
        .map(|q| q.canonical())
    else {
        return;
    };
    let invalid = |detail: &str| invalid_value(&child(path, "divisor"), &json!(resource), detail);
    let bytes = BYTE_DIVISORS.contains(&divisor.as_str());
    match resource {
        "limits.cpu" | "requests.cpu" if divisor != "1m" && divisor != "1" => out.push(invalid(
            "only divisor's values 1m and 1 are supported with the cpu resource",
        )),
        "limits.memory" | "requests.memory" if !bytes => out.push(invalid(
            "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource",
        )),
        "limits.ephemeral-storage" | "requests.ephemeral-storage" if !bytes => out.push(invalid(
            "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource",
        )),
        _ => {}
    }
    if is_huge_pages_field(resource) && !bytes {
        out.push(invalid(
            "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource",
        ));
    }
}

/// `ValidateEnvFrom`.
fn validate_env_from(sources: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, s) in sources.iter().enumerate() {
        let spath = index(path, i);
        let prefix = str_at(s, "prefix");
        if !prefix.is_empty() {
            for msg in env_var_name(prefix) {
                out.push(invalid_value(
                    &child(&spath, "prefix"),
                    &json!(prefix),
                    &msg,
                ));
            }
        }
        let mut count = 0;
        for field in ["configMapRef", "secretRef"] {
            if let Some(reference) = set_at(s, field) {
                count += 1;
                let name = str_at(reference, "name");
                let npath = child(&child(&spath, field), "name");
                if name.is_empty() {
                    out.push(Cause::required(npath, ""));
                } else {
                    for msg in names::validate_name(name, NameRule::Subdomain, true) {
                        out.push(invalid_value(&npath, &json!(name), &msg));
                    }
                }
            }
        }
        if count == 0 {
            out.push(invalid_value(
                path,
                &json!(""),
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if count > 1 {
            out.push(invalid_value(
                path,
                &json!(""),
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// `validateLocalDescendingPath`: relative, without `..` elements.
fn local_descending_path(value: &str, field: &str, out: &mut Vec<Cause>) {
    if value.starts_with('/') {
        out.push(invalid_value(
            field,
            &json!(value),
            "must be a relative path",
        ));
    }
    if value.split(['/', '\\']).any(|part| part == "..") {
        out.push(invalid_value(field, &json!(value), "must not contain '..'"));
    }
}

// ---------------------------------------------------------------------------------------------
// Probes and handlers.
// ---------------------------------------------------------------------------------------------

/// The handler kinds of a probe, in upstream's order.
const PROBE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];

/// The handler kinds of a lifecycle hook, in upstream's order.
const LIFECYCLE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "sleep"];

/// `validateLivenessProbe` / `validateReadinessProbe` / `validateStartupProbe`.
fn validate_probe(p: &Value, kind: &str, grace: Option<i64>, path: &str, out: &mut Vec<Cause>) {
    validate_handler(p, PROBE_HANDLERS, grace, path, out);
    for field in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        nonnegative(p, field, path, out);
    }
    if let Some(tg) = int_at(p, "terminationGracePeriodSeconds")
        && tg <= 0
    {
        out.push(invalid_value(
            &child(path, "terminationGracePeriodSeconds"),
            &json!(tg),
            "must be greater than 0",
        ));
    }
    match kind {
        "readinessProbe" => {
            if let Some(tg) = set_at(p, "terminationGracePeriodSeconds") {
                out.push(invalid_value(
                    &child(path, "terminationGracePeriodSeconds"),
                    tg,
                    "must not be set for readinessProbes",
                ));
            }
        }
        _ => {
            let success = int_at(p, "successThreshold").unwrap_or(0);
            if success != 1 {
                out.push(invalid_value(
                    &child(path, "successThreshold"),
                    &json!(success),
                    "must be 1",
                ));
            }
        }
    }
}

/// `validateHandler`: exactly one handler, each checked.
fn validate_handler(
    h: &Value,
    kinds: &[&str],
    grace: Option<i64>,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let mut count = 0;
    for kind in kinds {
        let Some(handler) = set_at(h, kind) else {
            continue;
        };
        let hpath = child(path, kind);
        if count > 0 {
            out.push(Cause::forbidden(
                hpath,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        count += 1;
        match *kind {
            "exec" if list_at(handler, "command").is_empty() => {
                out.push(Cause::required(child(&hpath, "command"), ""));
            }
            "httpGet" => {
                if str_at(handler, "path").is_empty() {
                    out.push(Cause::required(child(&hpath, "path"), ""));
                }
                out.extend(port_num_or_name(
                    handler.get("port").unwrap_or(&Value::Null),
                    &child(&hpath, "port"),
                ));
                let scheme = str_at(handler, "scheme");
                if !enums::URI_SCHEME.contains(scheme) {
                    out.push(enums::URI_SCHEME.not_supported(
                        child(&hpath, "scheme"),
                        &json!(scheme),
                        Order::Declared,
                    ));
                }
                for header in list_at(handler, "httpHeaders") {
                    let name = str_at(header, "name");
                    if name.is_empty()
                        || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    {
                        out.push(invalid_value(
                            &child(&hpath, "httpHeaders"),
                            &json!(name),
                            "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')",
                        ));
                    }
                }
            }
            "tcpSocket" => out.extend(port_num_or_name(
                handler.get("port").unwrap_or(&Value::Null),
                &child(&hpath, "port"),
            )),
            "grpc" => out.extend(port_num_or_name(
                &json!(int_at(handler, "port").unwrap_or(0)),
                &child(&hpath, "port"),
            )),
            "sleep" => {
                let seconds = int_at(handler, "seconds").unwrap_or(0);
                if let Some(grace) = grace
                    && (seconds < 0 || seconds > grace)
                {
                    out.push(invalid_value(
                        &hpath,
                        &json!(seconds),
                        &format!(
                            "must be non-negative and less than terminationGracePeriodSeconds ({grace})"
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if count == 0 {
        out.push(Cause::required(path, "must specify a handler type"));
    }
}

// ---------------------------------------------------------------------------------------------
// Resources.
// ---------------------------------------------------------------------------------------------

/// The resource names upstream calls standard (`IsStandardResourceName`).
const STANDARD_RESOURCES: [&str; 20] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "requests.storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// Whether a resource is a huge page size (`hugepages-2Mi`).
fn is_huge_pages(name: &str) -> bool {
    name.starts_with("hugepages-")
}

/// `IsNativeResource`: unprefixed or in the `kubernetes.io` domain.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`: a qualified name outside the native domain.
fn is_extended(name: &str) -> bool {
    !is_native(name)
        && !name.starts_with("requests.")
        && validate_label_key(&format!("requests.{name}")).is_empty()
}

/// `validateResourceName`: a qualified name, standard when unprefixed.
pub(crate) fn resource_name(name: &str, field: &str) -> Vec<Cause> {
    let shown = json!(name);
    let mut out: Vec<Cause> = validate_label_key(name)
        .iter()
        .map(|m| invalid_value(field, &shown, m))
        .collect();
    if !out.is_empty() {
        return out;
    }
    if !name.contains('/')
        && !STANDARD_RESOURCES.contains(&name)
        && !is_huge_pages(name)
        && !name.starts_with("requests.hugepages-")
    {
        out.push(invalid_value(
            field,
            &shown,
            "must be a standard resource type or fully qualified",
        ));
    }
    out
}

/// `validateContainerResourceName`: cpu, memory, ephemeral-storage, huge pages, or an extended
/// resource.
fn container_resource_name(name: &str, field: &str) -> Vec<Cause> {
    let mut out = resource_name(name, field);
    if !name.contains('/') {
        if !["cpu", "memory", "ephemeral-storage"].contains(&name) && !is_huge_pages(name) {
            out.push(invalid_value(
                field,
                &json!(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(name) && !is_extended(name) {
        out.push(invalid_value(
            field,
            &json!(name),
            "doesn't follow extended resource name standard",
        ));
    }
    out
}

/// `validatePodResourceName`: pod-level resources (and overhead) are cpu, memory and huge
/// pages.
fn pod_resource_name(name: &str, field: &str) -> Vec<Cause> {
    let mut out = resource_name(name, field);
    if !["cpu", "memory"].contains(&name) && !is_huge_pages(name) {
        out.push(not_supported(
            field,
            &json!(name),
            &["cpu", "memory", "hugepages-<size>"],
        ));
    }
    out
}

/// `ValidateResourceQuantityValue`: not negative; whole for extended resources.
pub(crate) fn resource_quantity(name: &str, value: &Value, field: &str, out: &mut Vec<Cause>) {
    let Ok(q) = quantity::from_json(value) else {
        return;
    };
    if q.is_negative() {
        out.push(invalid_value(
            field,
            &json!(q.canonical()),
            crate::validation::names::NEGATIVE,
        ));
    }
    if is_extended(name) && !q.is_integer() {
        out.push(invalid_value(
            field,
            &json!(q.canonical()),
            "must be an integer",
        ));
    }
}

/// `validateResourceRequirements`: names, quantities, requests ≤ limits (equal for resources
/// that cannot be overcommitted), huge pages only beside cpu or memory.
fn validate_resource_requirements(
    resources: &Value,
    path: &str,
    name_rule: fn(&str, &str) -> Vec<Cause>,
    pod_claims: &BTreeSet<String>,
    out: &mut Vec<Cause>,
) {
    let limits_path = child(path, "limits");
    let requests_path = child(path, "requests");
    let limits = resources.get("limits").and_then(Value::as_object);
    let requests = resources.get("requests").and_then(Value::as_object);
    let mut compute = false;
    let mut huge_pages = false;
    // Upstream walks Go maps (random order); sorted here, as the JSON objects are.
    for (name, q) in limits.into_iter().flatten() {
        let field = key(&limits_path, name);
        out.extend(name_rule(name, &field));
        resource_quantity(name, q, &field, out);
        huge_pages |= is_huge_pages(name);
        compute |= name == "cpu" || name == "memory";
    }
    for (name, q) in requests.into_iter().flatten() {
        let field = key(&requests_path, name);
        out.extend(name_rule(name, &field));
        resource_quantity(name, q, &field, out);
        let overcommit = is_native(name) && !is_huge_pages(name);
        let request = quantity::from_json(q).ok();
        match limits.and_then(|l| l.get(name)) {
            Some(limit) => {
                let limit = quantity::from_json(limit).ok();
                if let (Some(request), Some(limit)) = (request, limit) {
                    let order = request.cmp(&limit);
                    if order != Ordering::Equal && !overcommit {
                        out.push(invalid_value(
                            &requests_path,
                            &json!(request.canonical()),
                            &format!("must be equal to {name} limit of {}", limit.canonical()),
                        ));
                    } else if order == Ordering::Greater {
                        out.push(invalid_value(
                            &requests_path,
                            &json!(request.canonical()),
                            &format!(
                                "must be less than or equal to {name} limit of {}",
                                limit.canonical()
                            ),
                        ));
                    }
                }
            }
            None if !overcommit => out.push(Cause::required(
                limits_path.clone(),
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
        huge_pages |= is_huge_pages(name);
        compute |= name == "cpu" || name == "memory";
    }
    if huge_pages && !compute {
        out.push(Cause::forbidden(path, "HugePages require cpu or memory"));
    }
    validate_container_claims(
        list_at(resources, "claims"),
        pod_claims,
        &child(path, "claims"),
        out,
    );
}

// ---------------------------------------------------------------------------------------------
// Scheduling: affinity, topology spread, host aliases.
// ---------------------------------------------------------------------------------------------

/// Upstream's `isNotPositiveErrorMsg`.
const NOT_POSITIVE: &str = "must be greater than zero";

/// `validateAffinity`: node affinity, pod affinity and anti-affinity.
fn validate_affinity(affinity: &Value, path: &str, out: &mut Vec<Cause>) {
    const REQUIRED: &str = "requiredDuringSchedulingIgnoredDuringExecution";
    const PREFERRED: &str = "preferredDuringSchedulingIgnoredDuringExecution";
    if let Some(node) = set_at(affinity, "nodeAffinity") {
        let npath = child(path, "nodeAffinity");
        if let Some(required) = set_at(node, REQUIRED) {
            let terms_path = child(&child(&npath, REQUIRED), "nodeSelectorTerms");
            let terms = list_at(required, "nodeSelectorTerms");
            if terms.is_empty() {
                out.push(Cause::required(
                    terms_path,
                    "must have at least one node selector term",
                ));
            } else {
                for (i, term) in terms.iter().enumerate() {
                    node_selector_term(term, true, &index(&terms_path, i), out);
                }
            }
        }
        for (i, term) in list_at(node, PREFERRED).iter().enumerate() {
            let tpath = index(&child(&npath, PREFERRED), i);
            weight(term, &tpath, out);
            let preference = term.get("preference").unwrap_or(&Value::Null);
            node_selector_term(preference, false, &child(&tpath, "preference"), out);
        }
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let Some(pod) = set_at(affinity, kind) else {
            continue;
        };
        let ppath = child(path, kind);
        for (i, term) in list_at(pod, REQUIRED).iter().enumerate() {
            pod_affinity_term(term, &index(&child(&ppath, REQUIRED), i), out);
        }
        for (i, term) in list_at(pod, PREFERRED).iter().enumerate() {
            let tpath = index(&child(&ppath, PREFERRED), i);
            weight(term, &tpath, out);
            let inner = term.get("podAffinityTerm").unwrap_or(&Value::Null);
            pod_affinity_term(inner, &child(&tpath, "podAffinityTerm"), out);
        }
    }
}

/// A scheduling weight: 1 to 100.
fn weight(term: &Value, path: &str, out: &mut Vec<Cause>) {
    let w = int_at(term, "weight").unwrap_or(0);
    if !(1..=100).contains(&w) {
        out.push(invalid_value(
            &child(path, "weight"),
            &json!(w),
            "must be in the range 1-100",
        ));
    }
}

/// `ValidateNodeSelectorTerm`: label expressions (values checked in required terms only, as
/// upstream allows any value in preferred ones) and field expressions on `metadata.name`.
pub(crate) fn node_selector_term(
    term: &Value,
    check_values: bool,
    path: &str,
    out: &mut Vec<Cause>,
) {
    for (i, expression) in list_at(term, "matchExpressions").iter().enumerate() {
        let epath = index(&child(path, "matchExpressions"), i);
        let operator = str_at(expression, "operator");
        let values = list_at(expression, "values");
        match operator {
            "In" | "NotIn" if values.is_empty() => out.push(Cause::required(
                child(&epath, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => out.push(Cause::forbidden(
                child(&epath, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "Gt" | "Lt" if values.len() != 1 => out.push(Cause::required(
                child(&epath, "values"),
                "must be specified single value when `operator` is 'Lt' or 'Gt'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
            other => out.push(invalid_value(
                &child(&epath, "operator"),
                &json!(other),
                "not a valid selector operator",
            )),
        }
        qualified_name(str_at(expression, "key"), &child(&epath, "key"), out);
        if check_values {
            for (j, value) in values.iter().enumerate() {
                let value = value.as_str().unwrap_or("");
                for msg in validate_label_value(value) {
                    out.push(invalid_value(
                        &index(&child(&epath, "values"), j),
                        &json!(value),
                        &msg,
                    ));
                }
            }
        }
    }
    for (i, expression) in list_at(term, "matchFields").iter().enumerate() {
        let epath = index(&child(path, "matchFields"), i);
        let operator = str_at(expression, "operator");
        let values = list_at(expression, "values");
        match operator {
            "In" | "NotIn" if values.len() != 1 => out.push(Cause::required(
                child(&epath, "values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
            )),
            "In" | "NotIn" => {}
            other => out.push(invalid_value(
                &child(&epath, "operator"),
                &json!(other),
                "not a valid selector operator",
            )),
        }
        let field_key = str_at(expression, "key");
        if field_key != "metadata.name" {
            out.push(invalid_value(
                &child(&epath, "key"),
                &json!(field_key),
                "not a valid field selector key",
            ));
        } else {
            for (j, value) in values.iter().enumerate() {
                let value = value.as_str().unwrap_or("");
                for msg in dns1123_subdomain(value) {
                    out.push(invalid_value(
                        &index(&child(&epath, "values"), j),
                        &json!(value),
                        &msg,
                    ));
                }
            }
        }
    }
}

/// `validatePodAffinityTerm`: selectors, namespaces, a topology key.
fn pod_affinity_term(term: &Value, path: &str, out: &mut Vec<Cause>) {
    for field in ["labelSelector", "namespaceSelector"] {
        if let Some(selector) = set_at(term, field) {
            out.extend(selectors::validate_label_selector(
                selector,
                &child(path, field),
            ));
        }
    }
    for namespace in list_at(term, "namespaces") {
        let namespace = namespace.as_str().unwrap_or("");
        for msg in dns1123_label(namespace) {
            out.push(invalid_value(
                &child(path, "namespace"),
                &json!(namespace),
                &msg,
            ));
        }
    }
    let topology_key = str_at(term, "topologyKey");
    if topology_key.is_empty() {
        out.push(Cause::required(
            child(path, "topologyKey"),
            "can not be empty",
        ));
    }
    qualified_name(topology_key, &child(path, "topologyKey"), out);
}

/// `validateTopologySpreadConstraints` essentials: a positive skew, a topology key, a known
/// action, no repeated `{topologyKey, whenUnsatisfiable}`, minDomains only with DoNotSchedule.
fn validate_topology_spread(constraints: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, c) in constraints.iter().enumerate() {
        let cpath = index(path, i);
        let skew = int_at(c, "maxSkew").unwrap_or(0);
        if skew <= 0 {
            out.push(invalid_value(
                &child(&cpath, "maxSkew"),
                &json!(skew),
                NOT_POSITIVE,
            ));
        }
        let topology_key = str_at(c, "topologyKey");
        if topology_key.is_empty() {
            out.push(Cause::required(
                child(&cpath, "topologyKey"),
                "can not be empty",
            ));
        }
        let action = str_at(c, "whenUnsatisfiable");
        let actions = &enums::UNSATISFIABLE_CONSTRAINT_ACTION;
        if !actions.contains(action) {
            out.push(actions.not_supported(
                child(&cpath, "whenUnsatisfiable"),
                &json!(action),
                Order::Declared,
            ));
        }
        let repeated = constraints[i + 1..].iter().any(|other| {
            str_at(other, "topologyKey") == topology_key
                && str_at(other, "whenUnsatisfiable") == action
        });
        if repeated {
            out.push(Cause::duplicate(
                child(&cpath, "{topologyKey, whenUnsatisfiable}"),
                &json!(format!("{{{topology_key}, {action}}}")),
            ));
        }
        if let Some(min) = int_at(c, "minDomains") {
            let mpath = child(&cpath, "minDomains");
            if action != "DoNotSchedule" {
                out.push(invalid_value(
                    &mpath,
                    &json!(min),
                    &format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"
                    ),
                ));
            }
            if min <= 0 {
                out.push(invalid_value(&mpath, &json!(min), NOT_POSITIVE));
            }
        }
        if let Some(selector) = set_at(c, "labelSelector") {
            out.extend(selectors::validate_label_selector(
                selector,
                &child(&cpath, "labelSelector"),
            ));
        }
    }
}

/// `ValidateHostAliases`: IP addresses and host names.
fn validate_host_aliases(aliases: &[Value], path: &str, out: &mut Vec<Cause>) {
    for (i, alias) in aliases.iter().enumerate() {
        let apath = index(path, i);
        let ip = str_at(alias, "ip");
        if ip.parse::<std::net::IpAddr>().is_err() {
            out.push(invalid_value(
                &child(&apath, "ip"),
                &json!(ip),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
        for (j, host) in list_at(alias, "hostnames").iter().enumerate() {
            let host = host.as_str().unwrap_or("");
            for msg in dns1123_subdomain(host) {
                out.push(invalid_value(
                    &index(&child(&apath, "hostnames"), j),
                    &json!(host),
                    &msg,
                ));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// DNS, tolerations.
// ---------------------------------------------------------------------------------------------

/// `validatePodDNSConfig` essentials: `None` needs nameservers; at most 3 nameservers and 32
/// search paths; options named.
fn validate_dns_config(spec: &Value, base: &str, out: &mut Vec<Cause>) {
    let path = child(base, "dnsConfig");
    let config = set_at(spec, "dnsConfig");
    if str_at(spec, "dnsPolicy") == "None" {
        match config {
            None => {
                out.push(Cause::required(
                    path,
                    "must provide `dnsConfig` when `dnsPolicy` is None",
                ));
                return;
            }
            Some(c) if list_at(c, "nameservers").is_empty() => {
                out.push(Cause::required(
                    child(&path, "nameservers"),
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                ));
                return;
            }
            Some(_) => {}
        }
    }
    let Some(config) = config else {
        return;
    };
    let nameservers = list_at(config, "nameservers");
    if nameservers.len() > 3 {
        out.push(invalid_value(
            &child(&path, "nameservers"),
            &json!(nameservers),
            "must not have more than 3 nameservers",
        ));
    }
    let searches = list_at(config, "searches");
    if searches.len() > 32 {
        out.push(invalid_value(
            &child(&path, "searches"),
            &json!(searches),
            "must not have more than 32 search paths",
        ));
    }
    for (i, option) in list_at(config, "options").iter().enumerate() {
        if str_at(option, "name").is_empty() {
            out.push(Cause::required(
                index(&child(&path, "options"), i),
                "must not be empty",
            ));
        }
    }
}

/// Upstream `ValidateTolerations`.
pub(crate) fn validate_tolerations(tolerations: &[Value], path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, t) in tolerations.iter().enumerate() {
        let tpath = index(path, i);
        let k = str_at(t, "key");
        if !k.is_empty() {
            qualified_name(k, &child(&tpath, "key"), &mut out);
        }
        let operator = str_at(t, "operator");
        if k.is_empty() && operator != "Exists" {
            out.push(invalid_value(
                &child(&tpath, "operator"),
                &json!(operator),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        let effect = str_at(t, "effect");
        if set_at(t, "tolerationSeconds").is_some() && effect != "NoExecute" {
            out.push(invalid_value(
                &child(&tpath, "effect"),
                &json!(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = str_at(t, "value");
        match operator {
            "Equal" | "" => {
                let errs = validate_label_value(value);
                if !errs.is_empty() {
                    out.push(invalid_value(
                        &child(&tpath, "operator"),
                        &json!(value),
                        &errs.join(";"),
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    out.push(invalid_value(
                        &child(&tpath, "operator"),
                        &json!(value),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => out.push(not_supported(
                &child(&tpath, "operator"),
                &json!(other),
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() && !enums::TAINT_EFFECT.contains(effect) {
            out.push(enums::TAINT_EFFECT.not_supported(
                child(&tpath, "effect"),
                &json!(effect),
                Order::Declared,
            ));
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A valid, defaulted pod spec.
    pub(crate) fn valid() -> Value {
        json!({
            "containers": [{
                "name": "c", "image": "busybox",
                "terminationMessagePolicy": "File", "imagePullPolicy": "Always",
                "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "readinessProbe": {"httpGet": {"path": "/", "port": "http", "scheme": "HTTP"},
                    "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
                "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}
            }],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]
        })
    }

    /// The `field: message` of each cause for `spec` validated as a template at `base`.
    pub(crate) fn causes(spec: &Value, base: &str) -> Vec<String> {
        validate_pod_spec(spec, base, PodSpecOptions::default())
            .iter()
            .map(Cause::summary)
            .collect()
    }

    #[test]
    fn a_valid_spec_has_no_causes() {
        assert_eq!(causes(&valid(), "spec"), Vec::<String>::new());
        let opts = PodSpecOptions {
            resource_is_pod: true,
            ..PodSpecOptions::default()
        };
        assert!(validate_pod_spec(&valid(), "spec", opts).is_empty());
        assert!(validate_pod_only(&valid(), "spec").is_empty());
    }

    #[test]
    fn causes_carry_the_base_path_of_a_template() {
        let mut spec = valid();
        spec["containers"][0]["image"] = json!("");
        assert_eq!(
            causes(&spec, "spec.template.spec"),
            vec!["spec.template.spec.containers[0].image: Required value"]
        );
    }

    /// A change to a valid spec.
    pub(crate) type Change = fn(&mut Value);

    /// Applies each change to a valid spec and checks the causes of the result (as a template
    /// at `spec`, or as a Pod's spec when `pod`) against the expected ones, in order.
    pub(crate) fn check_table(cases: Vec<(Change, Vec<&str>)>, pod: bool) {
        for (i, (change, want)) in cases.into_iter().enumerate() {
            let mut spec = valid();
            change(&mut spec);
            let opts = PodSpecOptions {
                resource_is_pod: pod,
                ..PodSpecOptions::default()
            };
            let got: Vec<String> = validate_pod_spec(&spec, "spec", opts)
                .iter()
                .map(Cause::summary)
                .collect();
            assert_eq!(got, want, "case {i}");
        }
    }

    #[test]
    fn table_of_refusals() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                |s| {
                    s["containers"][0]["resources"] =
                        json!({"limits": {"memory": "1Gi"}, "requests": {"memory": "2Gi"}})
                },
                vec![
                    "spec.containers[0].resources.requests: Invalid value: \"2Gi\": must be less than or equal to memory limit of 1Gi",
                ],
            ),
            (
                |s| s["containers"][0]["resources"] = json!({"requests": {"example.com/gpu": "1"}}),
                vec![
                    "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
                ],
            ),
            (
                |s| {
                    s["containers"][0]["resources"] =
                        json!({"limits": {"example.com/gpu": "1500m"}})
                },
                vec![
                    "spec.containers[0].resources.limits[example.com/gpu]: Invalid value: \"1500m\": must be an integer",
                ],
            ),
            (
                |s| s["containers"][0]["resources"] = json!({"limits": {"gpu": "1"}}),
                vec![
                    "spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": must be a standard resource type or fully qualified",
                    "spec.containers[0].resources.limits[gpu]: Invalid value: \"gpu\": must be a standard resource for containers",
                ],
            ),
            (
                |s| s["containers"][0]["resources"] = json!({"limits": {"hugepages-2Mi": "2Mi"}}),
                vec!["spec.containers[0].resources: Forbidden: HugePages require cpu or memory"],
            ),
            (
                |s| s["containers"][0]["ports"][0]["name"] = json!("HTTP"),
                vec![
                    "spec.containers[0].ports[0].name: Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                    "spec.containers[0].ports[0].name: Invalid value: \"HTTP\": must contain at least one letter (a-z)",
                ],
            ),
            (
                |s| s["containers"][0]["readinessProbe"]["httpGet"]["port"] = json!(0),
                vec![
                    "spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
                ],
            ),
            (
                |s| s["containers"][0]["readinessProbe"]["exec"] = json!({"command": ["true"]}),
                vec![
                    "spec.containers[0].readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type",
                ],
            ),
            (
                |s| s["containers"][0]["readinessProbe"] = json!({"periodSeconds": 1}),
                vec![
                    "spec.containers[0].readinessProbe: Required value: must specify a handler type",
                ],
            ),
            (
                |s| s["volumes"][0] = json!({"name": "data"}),
                vec![
                    "spec.volumes[0]: Required value: must specify a volume type",
                    "spec.containers[0].volumeMounts[0].name: Not found: \"data\"",
                ],
            ),
            (
                |s| s["volumes"][0] = json!({"name": "data", "secret": {"defaultMode": 1024}}),
                vec![
                    "spec.volumes[0].secret.secretName: Required value",
                    "spec.volumes[0].secret.defaultMode: Invalid value: 1024: must be a number between 0 and 0777 (octal), both inclusive",
                    "spec.containers[0].volumeMounts[0].name: Not found: \"data\"",
                ],
            ),
            (
                |s| {
                    s["volumes"]
                        .as_array_mut()
                        .expect("list")
                        .push(json!({"name": "data", "emptyDir": {}}));
                },
                vec!["spec.volumes[1].name: Duplicate value: \"data\""],
            ),
            (
                |s| s["containers"][0]["env"] = json!([{"name": "A", "valueFrom": {}}]),
                vec![
                    "spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                ],
            ),
            (
                |s| s["containers"][0]["env"] = json!([{"name": "A", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.schedulerName"}}}]),
                vec![
                    "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"spec.schedulerName\": supported values: \"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"",
                ],
            ),
            (
                |s| s["containers"][0]["securityContext"] = json!({"runAsUser": -1}),
                vec![
                    "spec.containers[0].securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                ],
            ),
            (
                |s| s["tolerations"][0] = json!({"operator": "Equal", "value": "v"}),
                vec![
                    "spec.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                ],
            ),
            (
                |s| {
                    s["tolerations"][0] =
                        json!({"key": "k", "effect": "NoSchedule", "tolerationSeconds": 1})
                },
                vec![
                    "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
                ],
            ),
            (
                |s| {
                    s["initContainers"] = json!([{"name": "i", "image": "x", "terminationMessagePolicy": "File",
                    "imagePullPolicy": "Always", "livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 1}}])
                },
                vec![
                    "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
                ],
            ),
            (
                |s| s["containers"][0]["restartPolicy"] = json!("Always"),
                vec![
                    "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
                ],
            ),
            (
                |s| {
                    s["dnsPolicy"] = json!("None");
                },
                vec![
                    "spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
                ],
            ),
            (
                |s| s["serviceAccountName"] = json!("Not_Valid"),
                vec![
                    "spec.serviceAccountName: Invalid value: \"Not_Valid\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                ],
            ),
        ];
        for (i, (change, want)) in cases.into_iter().enumerate() {
            let mut spec = valid();
            change(&mut spec);
            assert_eq!(causes(&spec, "spec"), want, "case {i}");
        }
    }

    #[test]
    fn scheduling_rules() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                |s| {
                    s["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}})
                },
                vec![
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                ],
            ),
            (
                |s| {
                    s["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": []}}})
                },
                vec![
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term",
                ],
            ),
            (
                |s| {
                    s["affinity"] = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 0, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app": "web"}}}}]}})
                },
                vec![
                    "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
                ],
            ),
            (
                |s| {
                    s["topologySpreadConstraints"] = json!([
                        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                    ])
                },
                vec![
                    "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
                    "spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: \"{zone, DoNotSchedule}\"",
                ],
            ),
            (
                |s| s["hostAliases"] = json!([{"ip": "10.0.0.300", "hostnames": ["ok.example"]}]),
                vec![
                    "spec.hostAliases[0].ip: Invalid value: \"10.0.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                ],
            ),
        ];
        for (i, (change, want)) in cases.into_iter().enumerate() {
            let mut spec = valid();
            change(&mut spec);
            assert_eq!(causes(&spec, "spec"), want, "case {i}");
        }
    }

    #[test]
    fn host_network_ports_and_host_port_conflicts() {
        let mut spec = valid();
        spec["hostNetwork"] = json!(true);
        // A template may leave hostPort unset; a pod may not.
        assert!(causes(&spec, "spec").is_empty());
        let pod = PodSpecOptions {
            resource_is_pod: true,
            ..PodSpecOptions::default()
        };
        let causes_of_pod: Vec<String> = validate_pod_spec(&spec, "spec", pod)
            .iter()
            .map(Cause::summary)
            .collect();
        assert_eq!(
            causes_of_pod,
            vec![
                "spec.containers[0].ports[0].hostPort: Invalid value: 0: must match `containerPort` when `hostNetwork` is true"
            ]
        );
        let mut spec = valid();
        spec["containers"][0]["ports"] = json!([
            {"containerPort": 80, "hostPort": 8080, "protocol": "TCP"},
            {"containerPort": 81, "hostPort": 8080, "protocol": "TCP"}
        ]);
        assert_eq!(
            causes(&spec, "spec"),
            vec!["spec.containers[0].ports[1].hostPort: Duplicate value: \"TCP//8080\""]
        );
    }

    #[test]
    fn pod_only_rules() {
        let mut spec = valid();
        spec["containers"][0]["image"] = json!(" busybox");
        spec["volumes"] = json!([{"name": "data", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]);
        let got: Vec<String> = validate_pod_only(&spec, "spec")
            .iter()
            .map(Cause::summary)
            .collect();
        assert_eq!(
            got,
            vec![
                "spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set",
                "spec.containers[0].image: Invalid value: \" busybox\": must not have leading or trailing whitespace",
            ]
        );
    }

    /// Any JSON value, a few levels deep (also used by the pod update rules' tests).
    pub(crate) fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-zA-Z0-9./:=_ -]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-zA-Z]{1,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Field names of a pod spec and its containers, where random values are put.
    const FIELDS: [&str; 24] = [
        "containers",
        "initContainers",
        "ephemeralContainers",
        "volumes",
        "tolerations",
        "affinity",
        "topologySpreadConstraints",
        "hostAliases",
        "securityContext",
        "dnsConfig",
        "overhead",
        "resources",
        "nodeSelector",
        "schedulingGates",
        "readinessGates",
        "activeDeadlineSeconds",
        "terminationGracePeriodSeconds",
        "os",
        "ports",
        "env",
        "envFrom",
        "volumeMounts",
        "livenessProbe",
        "lifecycle",
    ];

    proptest::proptest! {
        #[test]
        fn arbitrary_specs_never_panic(
            field in proptest::sample::select(FIELDS.to_vec()),
            in_container in proptest::bool::ANY,
            value in any_json(),
        ) {
            let mut spec = valid();
            if in_container {
                spec["containers"][0][field] = value;
            } else {
                spec[field] = value;
            }
            let _ = canonicalize_pod_spec(&mut spec.clone());
            let opts = PodSpecOptions {
                resource_is_pod: true,
                ..PodSpecOptions::default()
            };
            let _ = validate_pod_spec(&spec, "spec", opts);
            let _ = validate_pod_only(&spec, "spec");
            let _ = warnings::pod_spec_warnings(None, &json!({}), &spec);
            let _ = validate_tolerations(list_at(&spec, "tolerations"), "spec.tolerations");
        }
    }

    #[test]
    fn every_quantity_of_a_pod_spec_is_canonicalized() {
        let mut spec = json!({
            "containers": [{"name": "c", "resources": {
                "limits": {"cpu": "1000m", "memory": "1.5Gi"},
                "requests": {"cpu": 0.5, "memory": "1024Mi", "ephemeral-storage": "2G"}
            }}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "0.1"}}}],
            "overhead": {"cpu": "0.25"},
            "resources": {"limits": {"memory": "2048Mi"}},
            "volumes": [
                {"name": "e", "emptyDir": {"sizeLimit": "1000Mi"}},
                {"name": "x", "ephemeral": {"volumeClaimTemplate": {"spec": {
                    "resources": {"requests": {"storage": "1024Gi"}}}}}}
            ]
        });
        canonicalize_pod_spec(&mut spec).expect("valid");
        assert_eq!(
            spec["containers"][0]["resources"],
            json!({"limits": {"cpu": "1", "memory": "1536Mi"},
                   "requests": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "2G"}})
        );
        assert_eq!(
            spec["initContainers"][0]["resources"]["requests"]["cpu"],
            "100m"
        );
        assert_eq!(spec["overhead"]["cpu"], "250m");
        assert_eq!(spec["resources"]["limits"]["memory"], "2Gi");
        assert_eq!(spec["volumes"][0]["emptyDir"]["sizeLimit"], "1000Mi");
        assert_eq!(
            spec["volumes"][1]["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]
                ["storage"],
            "1Ti"
        );
        let mut bad = json!({"containers": [{"resources": {"limits": {"cpu": "one"}}}]});
        assert_eq!(canonicalize_pod_spec(&mut bad), Err(QuantityError::Format));
    }
}
