//! Writes through `pods/status`: upstream's `podStatusStrategy.PrepareForUpdate` (the QoS class
//! kept, pod and host IPs read as the v1 → internal conversion reads them) and
//! `ValidatePodStatusUpdate` (`pkg/apis/core/validation/validation.go`), with upstream's
//! messages and field paths — including its quirks: custom condition types are reported under
//! `metadata.conditions[i].Type`, and container users under `...containerStatuses[i].linux`.
//!
//! Also the annotation rules every pod update follows (`ValidatePodSpecificAnnotationUpdates`):
//! the mirror-pod and AppArmor beta annotations may be neither added, changed nor removed.

use serde_json::{Map, Value, json};

use crate::error::Cause;
use crate::validation::names::{
    child, dns1123_subdomain, go_quote, index, invalid_rendered, key, validate_qualified_name,
};
use crate::validation::network::{IP_MESSAGE, parse_ip_sloppy};

/// The annotation of static (mirror) pods.
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// The prefix of the deprecated per-container AppArmor annotations.
const APPARMOR_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";
/// The conditions the system owns, whose types need not be qualified names.
const SYSTEM_CONDITIONS: [&str; 3] = ["PodScheduled", "Ready", "Initialized"];
/// Upstream's range message for user and group IDs.
const ID_RANGE: &str = "must be between 0 and 2147483647, inclusive";

/// The object at `field` of `obj`, or null.
fn at<'a>(obj: &'a Value, field: &str) -> &'a Value {
    obj.get(field).unwrap_or(&Value::Null)
}

/// The array at `field` of `obj`, or empty.
fn list<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    obj.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The string at `field` of `obj`, or empty.
fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// `podStatusStrategy.PrepareForUpdate` past what the generic store keeps (spec and metadata):
/// a status without a QoS class keeps the stored one, and the IPs are read as the conversion to
/// upstream's internal version reads them (the singular field wins over a list that disagrees).
pub(super) fn prepare_status_update(obj: &mut Value, old: &Value) {
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let stored_qos = at(at(old, "status"), "qosClass");
    if status
        .get("qosClass")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
        && !stored_qos.is_null()
    {
        status.insert("qosClass".into(), stored_qos.clone());
    }
    reconcile_ips(status, "podIP", "podIPs");
    reconcile_ips(status, "hostIP", "hostIPs");
}

/// The v1 → internal → v1 round trip of a singular IP field and its list: a singular value that
/// disagrees with the list's first entry (or has no list) replaces the list, and the singular
/// field shows the list's first entry.
fn reconcile_ips(status: &mut Map<String, Value>, single: &str, plural: &str) {
    let one = status
        .get(single)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let first = status
        .get(plural)
        .and_then(Value::as_array)
        .and_then(|l| l.first())
        .map(|ip| text(ip, "ip").to_string());
    if !one.is_empty() && first.as_deref() != Some(one.as_str()) {
        status.insert(plural.into(), json!([{ "ip": one }]));
    } else if one.is_empty()
        && single == "podIP"
        && let Some(first) = first.filter(|f| !f.is_empty())
    {
        // The internal version has no `podIP`: it is always the list's first entry. (It keeps
        // `hostIP`, which validation then compares with the list.)
        status.insert(single.into(), json!(first));
    }
}

/// `ValidatePodSpecificAnnotationUpdates`' own rules: the mirror-pod and AppArmor beta
/// annotations are fixed at creation.
pub(super) fn validate_annotation_updates(new: &Value, old: &Value) -> Vec<Cause> {
    let empty = Map::new();
    let annotations = |pod: &Value| {
        crate::meta::path(pod, "metadata.annotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_else(|| empty.clone())
    };
    let (now, before) = (annotations(new), annotations(old));
    let path = "metadata.annotations";
    let mut causes = Vec::new();
    for (k, value) in &before {
        if now.get(k) == Some(value) {
            continue;
        }
        if k.starts_with(APPARMOR_PREFIX) {
            causes.push(Cause::forbidden(
                key(path, k),
                "may not remove or update AppArmor annotations",
            ));
        }
        if k == MIRROR_ANNOTATION {
            causes.push(Cause::forbidden(
                key(path, k),
                "may not remove or update mirror pod annotation",
            ));
        }
    }
    for k in now.keys().filter(|k| !before.contains_key(*k)) {
        if k.starts_with(APPARMOR_PREFIX) {
            causes.push(Cause::forbidden(
                key(path, k),
                "may not add AppArmor annotations",
            ));
        }
        if k == MIRROR_ANNOTATION {
            causes.push(Cause::forbidden(
                key(path, k),
                "may not add mirror pod annotation",
            ));
        }
    }
    causes
}

/// `ValidatePodStatusUpdate` past the metadata rules the store checks.
pub(super) fn validate_status_update(new: &Value, old: &Value) -> Vec<Cause> {
    let status = at(new, "status");
    let old_status = at(old, "status");
    let spec = at(new, "spec");
    let old_spec = at(old, "spec");
    let mut causes = validate_annotation_updates(new, old);
    causes.extend(validate_conditions(list(status, "conditions")));
    let nominated = text(status, "nominatedNodeName");
    if nominated != text(old_status, "nominatedNodeName") && !nominated.is_empty() {
        for msg in dns1123_subdomain(nominated) {
            causes.push(invalid_rendered(
                "status.nominatedNodeName",
                &go_quote(nominated),
                &msg,
            ));
        }
    }
    let qos = text(status, "qosClass");
    if qos != text(old_status, "qosClass") {
        causes.push(invalid_rendered(
            "status.qosClass",
            &go_quote(qos),
            "field is immutable",
        ));
    }
    let restart_policy = match text(old_spec, "restartPolicy") {
        "" => "Always",
        policy => policy,
    };
    causes.extend(state_transitions(
        list(status, "containerStatuses"),
        list(old_status, "containerStatuses"),
        "status.containerStatuses",
        restart_policy,
        &|_| false,
    ));
    let restartable_init = |name: &str| {
        list(old_spec, "initContainers")
            .iter()
            .find(|c| text(c, "name") == name)
            .is_some_and(|c| text(c, "restartPolicy") == "Always")
    };
    causes.extend(state_transitions(
        list(status, "initContainerStatuses"),
        list(old_status, "initContainerStatuses"),
        "status.initContainerStatuses",
        restart_policy,
        &restartable_init,
    ));
    // The kubelet never restarts ephemeral containers: their policy is `Never`.
    causes.extend(state_transitions(
        list(status, "ephemeralContainerStatuses"),
        list(old_status, "ephemeralContainerStatuses"),
        "status.ephemeralContainerStatuses",
        "Never",
        &|_| false,
    ));
    causes.extend(validate_claim_statuses(
        list(status, "resourceClaimStatuses"),
        list(spec, "resourceClaims"),
    ));
    causes.extend(validate_ips(status, "podIPs", "PodIP", None));
    if !list(status, "hostIPs").is_empty() {
        causes.extend(validate_ips(
            status,
            "hostIPs",
            "HostIP",
            Some(text(status, "hostIP")),
        ));
    }
    let windows = text(at(spec, "os"), "name") == "windows";
    for field in [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ] {
        causes.extend(validate_status_users(
            list(status, field),
            &child("status", field),
            windows,
        ));
    }
    causes
}

/// `validatePodConditions`: custom condition types are qualified names.
fn validate_conditions(conditions: &[Value]) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, condition) in conditions.iter().enumerate() {
        let ty = text(condition, "type");
        if SYSTEM_CONDITIONS.contains(&ty) {
            continue;
        }
        let path = child(&index("metadata.conditions", i), "Type");
        for msg in validate_qualified_name(ty) {
            causes.push(invalid_rendered(&path, &go_quote(ty), &msg));
        }
    }
    causes
}

/// `ValidateContainerStateTransition` / `ValidateInitContainerStateTransition`: unless the
/// container may restart, a terminated container stays terminated.
fn state_transitions(
    new: &[Value],
    old: &[Value],
    path: &str,
    restart_policy: &str,
    restartable: &dyn Fn(&str) -> bool,
) -> Vec<Cause> {
    if restart_policy == "Always" {
        return Vec::new();
    }
    let mut causes = Vec::new();
    for (i, before) in old.iter().enumerate() {
        let Some(terminated) = at(before, "state")
            .get("terminated")
            .filter(|t| !t.is_null())
        else {
            continue;
        };
        let exit_code = terminated
            .get("exitCode")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if exit_code != 0 && restart_policy == "OnFailure" {
            continue;
        }
        let name = text(before, "name");
        if restartable(name) {
            continue;
        }
        for now in new.iter().filter(|s| text(s, "name") == name) {
            if at(at(now, "state"), "terminated").is_null() {
                causes.push(Cause::forbidden(
                    child(&index(path, i), "state"),
                    "may not be transitioned to non-terminated state",
                ));
            }
        }
    }
    causes
}

/// `validatePodResourceClaimStatuses`: each status names a claim of the spec, once.
fn validate_claim_statuses(statuses: &[Value], claims: &[Value]) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, status) in statuses.iter().enumerate() {
        let path = child(&index("status.resourceClaimStatuses", i), "name");
        let name = text(status, "name");
        if !claims.iter().any(|c| text(c, "name") == name) {
            causes.push(invalid_rendered(
                &path,
                &go_quote(name),
                "must match the name of an entry in `spec.resourceClaims`",
            ));
        }
        if !seen.insert(name) {
            causes.push(Cause::duplicate(&path, &json!(name)));
        }
        if let Some(claim) = status.get("resourceClaimName").and_then(Value::as_str) {
            for msg in dns1123_subdomain(claim) {
                causes.push(invalid_rendered(&path, &go_quote(claim), &msg));
            }
        }
    }
    causes
}

/// `validatePodIPs` / `validateHostIPs`: valid addresses, at most one per family, no repeats;
/// for host IPs the first equals `hostIP`.
fn validate_ips(status: &Value, field: &str, go_type: &str, first: Option<&str>) -> Vec<Cause> {
    let path = child("status", field);
    let ips: Vec<&str> = list(status, field)
        .iter()
        .map(|ip| text(ip, "ip"))
        .collect();
    let mut causes = Vec::new();
    if let (Some(expected), Some(actual)) = (first, ips.first())
        && expected != *actual
    {
        causes.push(invalid_rendered(
            &child(&index(&path, 0), "ip"),
            &go_quote(actual),
            "must be equal to `hostIP`",
        ));
    }
    for (i, ip) in ips.iter().enumerate() {
        if parse_ip_sloppy(ip).is_none() {
            causes.push(invalid_rendered(
                &index(&path, i),
                &go_quote(ip),
                IP_MESSAGE,
            ));
        }
    }
    if ips.len() > 1 {
        let parsed: Vec<_> = ips.iter().filter_map(|ip| parse_ip_sloppy(ip)).collect();
        let dual_stack =
            parsed.iter().any(|ip| ip.is_ipv4()) && parsed.iter().any(|ip| ip.is_ipv6());
        let render = |ip: &str| format!("core.{go_type}{{IP:{}}}", go_quote(ip));
        if !dual_stack || ips.len() > 2 {
            let all: Vec<String> = ips.iter().map(|ip| render(ip)).collect();
            causes.push(invalid_rendered(
                &path,
                &format!("[]core.{go_type}{{{}}}", all.join(", ")),
                "may specify no more than one IP for each IP family",
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, ip) in ips.iter().enumerate() {
            if !seen.insert(*ip) {
                causes.push(Cause::new(
                    "FieldValueDuplicate",
                    index(&path, i),
                    format!("Duplicate value: {}", render(ip)),
                ));
            }
        }
    }
    causes
}

/// `validateContainerStatusUsers`: a Linux pod's container users have IDs in range; a Windows
/// pod's have no Linux user.
fn validate_status_users(statuses: &[Value], path: &str, windows: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (i, status) in statuses.iter().enumerate() {
        let Some(linux) = status
            .get("user")
            .and_then(|u| u.get("linux"))
            .filter(|l| !l.is_null())
        else {
            continue;
        };
        let base = child(&index(path, i), "linux");
        if windows {
            causes.push(Cause::forbidden(&base, "cannot be set for a windows pod"));
            continue;
        }
        let mut check = |field: String, value: &Value| {
            if let Some(id) = value.as_i64()
                && !(0..=i64::from(i32::MAX)).contains(&id)
            {
                causes.push(invalid_rendered(&field, &id.to_string(), ID_RANGE));
            }
        };
        check(child(&base, "uid"), at(linux, "uid"));
        check(child(&base, "gid"), at(linux, "gid"));
        for (g, gid) in list(linux, "supplementalGroups").iter().enumerate() {
            check(index(&child(&base, "supplementalGroups"), g), gid);
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(status: Value) -> Value {
        json!({
            "metadata": {"name": "p"},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]},
            "status": status,
        })
    }

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    #[test]
    fn a_consistent_status_passes() {
        let old = pod(json!({"qosClass": "BestEffort", "phase": "Pending"}));
        let new = pod(json!({
            "qosClass": "BestEffort", "phase": "Running", "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
            "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd01::5"}],
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "example.com/ok", "status": "True"}],
            "containerStatuses": [{"name": "c", "state": {"running": {}},
                                   "user": {"linux": {"uid": 0, "gid": 0, "supplementalGroups": [1000]}}}],
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "gpu-claim"}],
        }));
        assert_eq!(
            messages(&validate_status_update(&new, &old)),
            Vec::<String>::new()
        );
    }

    #[test]
    fn upstream_rules_with_upstream_paths() {
        let old = pod(json!({"qosClass": "BestEffort",
            "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 0}}}]}));
        let new = pod(json!({
            "qosClass": "Burstable",
            "nominatedNodeName": "Bad_Node",
            "conditions": [{"type": "bad type!", "status": "True"}],
            "containerStatuses": [{"name": "c", "state": {"running": {}},
                                   "user": {"linux": {"uid": -1, "gid": 0}}}],
            "podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}],
            "hostIP": "10.0.0.9", "hostIPs": [{"ip": "10.0.0.8"}, {"ip": "nope"}],
            "resourceClaimStatuses": [{"name": "other"}],
        }));
        let got = messages(&validate_status_update(&new, &old));
        let expected = [
            "metadata.conditions[0].Type: Invalid value: \"bad type!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "status.qosClass: Invalid value: \"Burstable\": field is immutable",
            "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state",
            "status.resourceClaimStatuses[0].name: Invalid value: \"other\": must match the name of an entry in `spec.resourceClaims`",
            "status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:\"10.0.0.1\"}, core.PodIP{IP:\"10.0.0.1\"}}: may specify no more than one IP for each IP family",
            "status.podIPs[1]: Duplicate value: core.PodIP{IP:\"10.0.0.1\"}",
            "status.hostIPs[0].ip: Invalid value: \"10.0.0.8\": must be equal to `hostIP`",
            "status.hostIPs[1]: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "status.containerStatuses[0].linux.uid: Invalid value: -1: must be between 0 and 2147483647, inclusive",
        ];
        for want in expected {
            assert!(
                got.iter().any(|g| g == want),
                "missing {want:?} in {got:#?}"
            );
        }
        assert!(
            got.iter()
                .any(|g| g.starts_with("status.nominatedNodeName: Invalid value: \"Bad_Node\"")),
            "{got:#?}"
        );
    }

    #[test]
    fn restart_policies_allow_leaving_terminated() {
        let terminated = |code| json!([{"name": "c", "state": {"terminated": {"exitCode": code}}}]);
        let running = json!([{"name": "c", "state": {"running": {}}}]);
        let check = |policy: &str, code: i64| {
            state_transitions(
                running.as_array().map_or(&[], Vec::as_slice),
                terminated(code).as_array().map_or(&[], Vec::as_slice),
                "status.containerStatuses",
                policy,
                &|_| false,
            )
            .len()
        };
        assert_eq!(check("Always", 0), 0);
        assert_eq!(check("OnFailure", 1), 0);
        assert_eq!(check("OnFailure", 0), 1);
        assert_eq!(check("Never", 1), 1);
    }

    #[test]
    fn ips_are_read_as_upstreams_conversion_reads_them() {
        let old = pod(json!({"qosClass": "BestEffort"}));
        let mut new = pod(json!({"podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.6"}],
                                 "hostIPs": [{"ip": "10.0.0.1"}]}));
        prepare_status_update(&mut new, &old);
        assert_eq!(new["status"]["podIPs"], json!([{"ip": "10.0.0.5"}]));
        assert_eq!(new["status"]["qosClass"], "BestEffort");
        // No hostIP: the list stays, and validation names the mismatch.
        assert_eq!(new["status"]["hostIPs"], json!([{"ip": "10.0.0.1"}]));
        let got = messages(&validate_status_update(&new, &old));
        assert_eq!(
            got,
            vec!["status.hostIPs[0].ip: Invalid value: \"10.0.0.1\": must be equal to `hostIP`"]
        );
        let mut only_list = pod(json!({"podIPs": [{"ip": "10.0.0.7"}]}));
        prepare_status_update(&mut only_list, &old);
        assert_eq!(only_list["status"]["podIP"], "10.0.0.7");
    }

    #[test]
    fn mirror_and_apparmor_annotations_are_fixed() {
        let with = |annotations: Value| json!({"metadata": {"annotations": annotations}});
        let old = with(json!({MIRROR_ANNOTATION: "x"}));
        let new = with(json!({format!("{APPARMOR_PREFIX}c"): "runtime/default"}));
        assert_eq!(
            messages(&validate_annotation_updates(&new, &old)),
            vec![
                "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not remove or update mirror pod annotation",
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: Forbidden: may not add AppArmor annotations",
            ]
        );
        assert!(validate_annotation_updates(&old, &old).is_empty());
    }
}
