//! Upstream's warnings for a pod spec (`pkg/api/pod/warnings.go`): what a real cluster sends
//! back as `Warning` headers for a Pod or a pod template that is valid but likely a mistake
//! (deprecated node labels, annotations and volume plugins, fractional byte quantities,
//! duplicate env names and ports, a negative grace period, selectors matching nothing).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::quantity;
use crate::validation::names::{child, go_quote, index, key};

/// Node labels upstream deprecated, with its message for each.
const DEPRECATED_NODE_LABELS: [(&str, &str); 5] = [
    (
        "beta.kubernetes.io/arch",
        "deprecated since v1.14; use \"kubernetes.io/arch\" instead",
    ),
    (
        "beta.kubernetes.io/os",
        "deprecated since v1.14; use \"kubernetes.io/os\" instead",
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        "deprecated since v1.17; use \"topology.kubernetes.io/region\" instead",
    ),
    (
        "failure-domain.beta.kubernetes.io/zone",
        "deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead",
    ),
    (
        "beta.kubernetes.io/instance-type",
        "deprecated since v1.17; use \"node.kubernetes.io/instance-type\" instead",
    ),
];

/// Annotations upstream deprecated, with its message for each.
const DEPRECATED_ANNOTATIONS: [(&str, &str); 3] = [
    (
        "scheduler.alpha.kubernetes.io/critical-pod",
        "non-functional in v1.16+; use the \"priorityClassName\" field instead",
    ),
    (
        "security.alpha.kubernetes.io/sysctls",
        "non-functional in v1.11+; use the \"sysctls\" field instead",
    ),
    (
        "security.alpha.kubernetes.io/unsafe-sysctls",
        "non-functional in v1.11+; use the \"sysctls\" field instead",
    ),
];

/// Volume plugins upstream deprecated or removed (JSON key, name in upstream's path,
/// message).
const DEPRECATED_VOLUMES: [(&str, &str, &str); 9] = [
    (
        "photonPersistentDisk",
        "photonPersistentDisk",
        "deprecated in v1.11, non-functional in v1.16+",
    ),
    ("gitRepo", "gitRepo", "deprecated in v1.11"),
    (
        "scaleIO",
        "scaleIO",
        "deprecated in v1.16, non-functional in v1.22+",
    ),
    (
        "flocker",
        "flocker",
        "deprecated in v1.22, non-functional in v1.25+",
    ),
    (
        "storageos",
        "storageOS",
        "deprecated in v1.22, non-functional in v1.25+",
    ),
    (
        "quobyte",
        "quobyte",
        "deprecated in v1.22, non-functional in v1.25+",
    ),
    (
        "glusterfs",
        "glusterfs",
        "deprecated in v1.25, non-functional in v1.26+",
    ),
    (
        "cephfs",
        "cephfs",
        "deprecated in v1.28, non-functional in v1.31+",
    ),
    (
        "rbd",
        "rbd",
        "deprecated in v1.28, non-functional in v1.31+",
    ),
];

/// The seccomp annotations replaced by the `seccompProfile` field.
const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// Upstream's message for a deprecated node label, if `label` is one.
fn deprecated_node_label(label: &str) -> Option<&'static str> {
    DEPRECATED_NODE_LABELS
        .iter()
        .find(|(l, _)| *l == label)
        .map(|(_, m)| *m)
}

fn list<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

fn set<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    v.get(field).filter(|x| !x.is_null())
}

/// The warnings for a pod spec and its metadata. `template` is the path of the pod template
/// (`spec.template`), or `None` for a Pod itself (paths then start at `spec` and `metadata`).
pub(crate) fn pod_spec_warnings(template: Option<&str>, meta: &Value, spec: &Value) -> Vec<String> {
    let root = template.unwrap_or("");
    let spec_path = child(root, "spec");
    let annotations_path = child(&child(root, "metadata"), "annotations");
    let annotations = meta.get("annotations").and_then(Value::as_object);
    let has_annotation = |k: &str| annotations.is_some_and(|a| a.contains_key(k));
    let mut out = Vec::new();

    if let Some(selector) = spec.get("nodeSelector").and_then(Value::as_object) {
        for k in selector.keys() {
            if let Some(msg) = deprecated_node_label(k) {
                out.push(format!(
                    "{}: {msg}",
                    key(&child(&spec_path, "nodeSelector"), k)
                ));
            }
        }
    }
    if let Some(node) = spec.get("affinity").and_then(|a| set(a, "nodeAffinity")) {
        let affinity_path = child(&child(&spec_path, "affinity"), "nodeAffinity");
        if let Some(required) = set(node, "requiredDuringSchedulingIgnoredDuringExecution") {
            let terms = child(
                &child(
                    &affinity_path,
                    "requiredDuringSchedulingIgnoredDuringExecution",
                ),
                "nodeSelectorTerms",
            );
            for (i, term) in list(required, "nodeSelectorTerms").iter().enumerate() {
                node_selector_term(term, &index(&terms, i), &mut out);
            }
        }
        let preferred = child(
            &affinity_path,
            "preferredDuringSchedulingIgnoredDuringExecution",
        );
        for (i, term) in list(node, "preferredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            if let Some(preference) = set(term, "preference") {
                node_selector_term(
                    preference,
                    &child(&index(&preferred, i), "preference"),
                    &mut out,
                );
            }
        }
    }
    for (i, t) in list(spec, "topologySpreadConstraints").iter().enumerate() {
        let path = index(&child(&spec_path, "topologySpreadConstraints"), i);
        let topology_key = text(t, "topologyKey");
        if let Some(msg) = deprecated_node_label(topology_key) {
            out.push(format!(
                "{}: {topology_key} is {msg}",
                child(&path, "topologyKey")
            ));
        }
        if set(t, "labelSelector").is_none() {
            out.push(format!(
                "{}: a null labelSelector results in matching no pod",
                child(&path, "labelSelector")
            ));
        }
    }
    for (k, msg) in DEPRECATED_ANNOTATIONS {
        if has_annotation(k) {
            out.push(format!("{}: {msg}", key(&annotations_path, k)));
        }
    }
    for (i, v) in list(spec, "volumes").iter().enumerate() {
        let path = index(&child(&spec_path, "volumes"), i);
        for (source, shown, msg) in DEPRECATED_VOLUMES {
            if set(v, source).is_some() {
                out.push(format!("{}: {msg}", child(&path, shown)));
            }
        }
    }
    let mut seen_ips = BTreeSet::new();
    for (i, alias) in list(spec, "hostAliases").iter().enumerate() {
        let ip = text(alias, "ip");
        if !seen_ips.insert(ip) {
            out.push(format!(
                "{}: duplicate ip {}",
                child(&index(&child(&spec_path, "hostAliases"), i), "ip"),
                go_quote(ip)
            ));
        }
    }
    let secrets = list(spec, "imagePullSecrets");
    let mut seen_secrets = BTreeSet::new();
    for (i, secret) in secrets.iter().enumerate() {
        let name = text(secret, "name");
        if !seen_secrets.insert(name) {
            out.push(format!(
                "{}: duplicate name {}",
                child(&index(&child(&spec_path, "imagePullSecrets"), i), "name"),
                go_quote(name)
            ));
        }
    }
    for (i, secret) in secrets.iter().enumerate() {
        let name = text(secret, "name");
        if name.is_empty() {
            out.push(format!(
                "{}: invalid empty name {}",
                child(&index(&child(&spec_path, "imagePullSecrets"), i), "name"),
                go_quote(name)
            ));
        }
    }
    if let Some(overhead) = set(spec, "overhead") {
        for resource in ["memory", "ephemeral-storage"] {
            fractional_bytes(overhead, resource, &child(&spec_path, "overhead"), &mut out);
        }
    }
    let pod_seccomp = spec
        .get("securityContext")
        .and_then(|s| set(s, "seccompProfile"))
        .is_some();
    if !pod_seccomp && has_annotation(SECCOMP_POD_ANNOTATION) {
        out.push(format!(
            "{}: non-functional in v1.27+; use the \"seccompProfile\" field instead",
            key(&annotations_path, SECCOMP_POD_ANNOTATION)
        ));
    }
    for (c, path) in containers(spec, &spec_path) {
        let container_seccomp = c
            .get("securityContext")
            .and_then(|s| set(s, "seccompProfile"))
            .is_some();
        let annotation = format!("{SECCOMP_CONTAINER_PREFIX}{}", text(c, "name"));
        if !container_seccomp && has_annotation(&annotation) {
            out.push(format!(
                "{}: non-functional in v1.27+; use the \"seccompProfile\" field instead",
                key(&annotations_path, &annotation)
            ));
        }
        if let Some(resources) = set(c, "resources") {
            for resource in ["memory", "ephemeral-storage"] {
                for kind in ["limits", "requests"] {
                    if let Some(quantities) = set(resources, kind) {
                        fractional_bytes(
                            quantities,
                            resource,
                            &child(&child(&path, "resources"), kind),
                            &mut out,
                        );
                    }
                }
            }
        }
        duplicate_env(c, &path, &mut out);
    }
    port_overlaps(spec, &spec_path, &mut out);
    if let Some(grace) = spec
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        && grace < 0
    {
        out.push(format!(
            "{}: must be >= 0; negative values are invalid and will be treated as 1",
            child(&spec_path, "terminationGracePeriodSeconds")
        ));
    }
    if let Some(affinity) = set(spec, "affinity") {
        for kind in ["podAffinity", "podAntiAffinity"] {
            let Some(terms) = set(affinity, kind) else {
                continue;
            };
            let path = child(&child(&spec_path, "affinity"), kind);
            let required = "requiredDuringSchedulingIgnoredDuringExecution";
            for (i, t) in list(terms, required).iter().enumerate() {
                if set(t, "labelSelector").is_none() {
                    out.push(format!(
                        "{}: a null labelSelector results in matching no pod",
                        child(&index(&child(&path, required), i), "labelSelector")
                    ));
                }
            }
            let preferred = "preferredDuringSchedulingIgnoredDuringExecution";
            for (i, t) in list(terms, preferred).iter().enumerate() {
                let selector = t
                    .get("podAffinityTerm")
                    .and_then(|p| set(p, "labelSelector"));
                if selector.is_none() {
                    out.push(format!(
                        "{}: a null labelSelector results in matching no pod",
                        child(
                            &child(&index(&child(&path, preferred), i), "podAffinityTerm"),
                            "labelSelector"
                        )
                    ));
                }
            }
        }
    }
    out
}

/// Deprecated node labels in a node selector term's expressions.
fn node_selector_term(term: &Value, path: &str, out: &mut Vec<String>) {
    for (i, expression) in list(term, "matchExpressions").iter().enumerate() {
        let label = text(expression, "key");
        if let Some(msg) = deprecated_node_label(label) {
            out.push(format!(
                "{}: {label} is {msg}",
                child(&index(&child(path, "matchExpressions"), i), "key")
            ));
        }
    }
}

/// Every container with its path, in upstream's visiting order: init, regular, ephemeral.
fn containers<'a>(spec: &'a Value, spec_path: &str) -> Vec<(&'a Value, String)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|l| {
            list(spec, l)
                .iter()
                .enumerate()
                .map(move |(i, c)| (c, index(&child(spec_path, l), i)))
        })
        .collect()
}

/// A byte quantity with a fractional part.
fn fractional_bytes(list: &Value, resource: &str, path: &str, out: &mut Vec<String>) {
    let Some(value) = set(list, resource) else {
        return;
    };
    if let Ok(q) = quantity::from_json(value)
        && !q.is_integer()
    {
        out.push(format!(
            "{}: fractional byte value {} is invalid, must be an integer",
            key(path, resource),
            go_quote(&q.canonical())
        ));
    }
}

/// An env name defined twice, where the later definition does not build on the earlier.
fn duplicate_env(c: &Value, path: &str, out: &mut Vec<String>) {
    let mut seen = BTreeSet::new();
    for (i, e) in list(c, "env").iter().enumerate() {
        let name = text(e, "name");
        if seen.insert(name) {
            continue;
        }
        let reference = format!("$({name})");
        let value = text(e, "value");
        let bad =
            set(e, "valueFrom").is_some() || value == reference || !value.contains(&reference);
        if bad {
            out.push(format!(
                "{}: hides previous definition of {}, which may be dropped when using apply",
                index(&child(path, "env"), i),
                go_quote(name)
            ));
        }
    }
}

/// Ports defined twice across containers: duplicate, overlapping or ambiguous.
fn port_overlaps(spec: &Value, spec_path: &str, out: &mut Vec<String>) {
    // By `containerPort/protocol`: the earlier ports with their paths.
    let mut all: BTreeMap<String, Vec<(String, &Value)>> = BTreeMap::new();
    for (c, path) in containers(spec, spec_path) {
        for (i, port) in list(c, "ports").iter().enumerate() {
            let field = index(&child(&path, "ports"), i);
            let k = format!(
                "{}/{}",
                port.get("containerPort")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
                text(port, "protocol")
            );
            let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            let host_ip = text(port, "hostIP");
            let others = all.entry(k).or_default();
            for (other_field, other) in others.iter() {
                let other_port = other.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
                let other_ip = text(other, "hostIP");
                if host_ip == other_ip && host_port == other_port {
                    out.push(format!(
                        "{field}: duplicate port definition with {other_field}"
                    ));
                } else if host_port == 0 || other_port == 0 {
                    out.push(format!(
                        "{field}: overlapping port definition with {other_field}"
                    ));
                } else if host_port == other_port && (host_ip.is_empty() != other_ip.is_empty()) {
                    out.push(format!(
                        "{field}: dangerously ambiguous port definition with {other_field}"
                    ));
                }
            }
            others.push((field, port));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn warnings_for_a_pod_and_a_template() {
        let meta = json!({"annotations": {
            "scheduler.alpha.kubernetes.io/critical-pod": "",
            "seccomp.security.alpha.kubernetes.io/pod": "runtime/default"
        }});
        let spec = json!({
            "nodeSelector": {"beta.kubernetes.io/os": "linux"},
            "volumes": [{"name": "g", "gitRepo": {"repository": "r"}}],
            "imagePullSecrets": [{"name": "a"}, {"name": "a"}, {"name": ""}],
            "initContainers": [{"name": "i", "resources": {"limits": {"memory": "1.5"}}}],
            "containers": [
                {"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"},
                                       {"name": "A", "value": "$(A)x"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "d", "ports": [{"containerPort": 80, "protocol": "TCP"}]}
            ],
            "terminationGracePeriodSeconds": -1,
            "topologySpreadConstraints": [{"topologyKey": "failure-domain.beta.kubernetes.io/zone"}]
        });
        let want = vec![
            "spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use \"kubernetes.io/os\" instead",
            "spec.topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead",
            "spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod",
            "metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the \"priorityClassName\" field instead",
            "spec.volumes[0].gitRepo: deprecated in v1.11",
            "spec.imagePullSecrets[1].name: duplicate name \"a\"",
            "spec.imagePullSecrets[2].name: invalid empty name \"\"",
            "metadata.annotations[seccomp.security.alpha.kubernetes.io/pod]: non-functional in v1.27+; use the \"seccompProfile\" field instead",
            "spec.initContainers[0].resources.limits[memory]: fractional byte value \"1500m\" is invalid, must be an integer",
            "spec.containers[0].env[1]: hides previous definition of \"A\", which may be dropped when using apply",
            "spec.containers[1].ports[0]: duplicate port definition with spec.containers[0].ports[0]",
            "spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1",
        ];
        assert_eq!(pod_spec_warnings(None, &meta, &spec), want);
        let template = pod_spec_warnings(Some("spec.template"), &json!({}), &spec);
        assert!(
            template.contains(
                &"spec.template.spec.volumes[0].gitRepo: deprecated in v1.11".to_string()
            )
        );
        assert!(
            pod_spec_warnings(None, &json!({}), &json!({"containers": [{"name": "c"}]})).is_empty()
        );
    }
}
