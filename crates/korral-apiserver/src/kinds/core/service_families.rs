//! A Service's cluster IPs and IP families: upstream's `ValidateServiceClusterIPsRelatedFields`
//! (`pkg/apis/core/validation`) and the checks its allocator makes before validation
//! (`initIPFamilyFields` in `pkg/registry/core/service/storage/alloc.go`) on a cluster that,
//! like Korral's, serves IPv4 Services only.
//!
//! Upstream runs the allocator's checks before the strategy validates, so a Service they refuse
//! gets their causes alone; [`allocation_refusals`] gives them for the strategy to answer first.

use std::net::IpAddr;

use serde_json::Value;

use crate::error::Cause;
use crate::validation::names::{go_quote, go_string_slice, index, invalid_rendered};
use crate::validation::network::{IP_MESSAGE, parse_ip_sloppy};

/// The IP families a Service may name.
const FAMILIES: [&str; 2] = ["IPv4", "IPv6"];
/// The IP family policies.
const POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
/// The only family this server allocates cluster IPs from.
const CLUSTER_FAMILY: &str = "IPv4";

/// The strings of an array field of `spec`.
fn strings<'a>(spec: &'a Value, field: &str) -> Vec<&'a str> {
    spec.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| v.as_str().unwrap_or("")).collect())
        .unwrap_or_default()
}

/// A string field of `spec` (empty when absent).
fn text<'a>(spec: &'a Value, field: &str) -> &'a str {
    spec.get(field).and_then(Value::as_str).unwrap_or("")
}

/// The family of an address as upstream's `familyOf` names it.
fn family_of(ip: &str) -> &'static str {
    match parse_ip_sloppy(ip) {
        Some(IpAddr::V4(_)) => "IPv4",
        Some(IpAddr::V6(_)) => "IPv6",
        None => "unknown",
    }
}

/// `ValidateServiceClusterIPsRelatedFields` for a non-ExternalName Service: `clusterIPs` in step
/// with `clusterIP`, valid and at most one per family, families supported and unrepeated, a
/// known policy, and each IP of the family listed at its index.
pub(super) fn validate_cluster_ips_related(spec: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let cluster_ip = text(spec, "clusterIP");
    let ips = strings(spec, "clusterIPs");
    let families = strings(spec, "ipFamilies");
    if !cluster_ip.is_empty() {
        if ips.is_empty() {
            errs.push(Cause::required("spec.clusterIPs", ""));
        } else if ips[0] != cluster_ip {
            errs.push(invalid_rendered(
                "spec.clusterIPs",
                &go_string_slice(&ips),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errs.push(invalid_rendered(
            "spec.clusterIPs",
            &go_string_slice(&ips),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let mut seen = Vec::new();
    for (i, family) in families.iter().enumerate() {
        let path = index("spec.ipFamilies", i);
        if !FAMILIES.contains(family) {
            let supported: Vec<Value> = FAMILIES.iter().map(|f| Value::from(*f)).collect();
            errs.push(Cause::not_supported(
                &path,
                &Value::from(*family),
                &supported,
            ));
        }
        if seen.contains(family) {
            errs.push(Cause::duplicate(&path, &Value::from(*family)));
        }
        seen.push(family);
    }
    if let Some(policy) = spec.get("ipFamilyPolicy").and_then(Value::as_str)
        && !POLICIES.contains(&policy)
    {
        let supported: Vec<Value> = POLICIES.iter().map(|p| Value::from(*p)).collect();
        errs.push(Cause::not_supported(
            "spec.ipFamilyPolicy",
            &Value::from(policy),
            &supported,
        ));
    }
    let mut invalid_ips = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && *ip == "None" {
            if ips.len() > 1 {
                invalid_ips = true;
                errs.push(invalid_rendered(
                    "spec.clusterIPs",
                    &go_string_slice(&ips),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if parse_ip_sloppy(ip).is_none() {
            invalid_ips = true;
            errs.push(invalid_rendered(
                &index("spec.clusterIPs", i),
                &go_quote(ip),
                IP_MESSAGE,
            ));
        }
    }
    if ips.len() > 2 {
        errs.push(invalid_rendered(
            "spec.clusterIPs",
            &go_string_slice(&ips),
            "may only hold up to 2 values",
        ));
    }
    if invalid_ips {
        return errs;
    }
    if ips.len() > 1 {
        let dual_stack = ips.iter().any(|ip| family_of(ip) == "IPv4")
            && ips.iter().any(|ip| family_of(ip) == "IPv6");
        if !dual_stack {
            errs.push(invalid_rendered(
                "spec.clusterIPs",
                &go_string_slice(&ips),
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if cluster_ip != "None" {
        for (i, (ip, family)) in ips.iter().zip(&families).enumerate() {
            let actual = family_of(ip);
            if (*family == "IPv4" && actual == "IPv6") || (*family == "IPv6" && actual != "IPv6") {
                errs.push(invalid_rendered(
                    &index("spec.clusterIPs", i),
                    &go_quote(ip),
                    &format!("expected an {family} value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
    errs
}

/// What upstream's allocator refuses before validation (`initIPFamilyFields`) on a cluster
/// serving IPv4 only: the pre-validation of the cluster IP fields, a single-stack policy with
/// two IPs or families, an IPv6 cluster IP or family, and dual-stack demanded. `old_spec` is the
/// stored spec on update. Headless Services without a selector may name any families.
pub(super) fn allocation_refusals(spec: &Value, old_spec: Option<&Value>) -> Vec<Cause> {
    if text(spec, "type") == "ExternalName" {
        return Vec::new();
    }
    let errs = validate_cluster_ips_related(spec);
    if !errs.is_empty() {
        return errs;
    }
    let mut errs = Vec::new();
    let policy = text(spec, "ipFamilyPolicy");
    let ips = strings(spec, "clusterIPs");
    let families = strings(spec, "ipFamilies");
    let rendered_policy = go_quote(policy);
    if let Some(old_spec) = old_spec
        && policy != "SingleStack"
    {
        let old_ips = strings(old_spec, "clusterIPs");
        let old_families = strings(old_spec, "ipFamilies");
        if !ips.is_empty() && ips.len() < old_ips.len() {
            errs.push(invalid_rendered(
                "spec.ipFamilyPolicy",
                &rendered_policy,
                "must be 'SingleStack' to release the secondary cluster IP",
            ));
        }
        if !families.is_empty() && families.len() < old_families.len() {
            errs.push(invalid_rendered(
                "spec.ipFamilyPolicy",
                &rendered_policy,
                "must be 'SingleStack' to release the secondary IP family",
            ));
        }
    }
    if policy == "SingleStack" {
        if ips.len() == 2 {
            errs.push(invalid_rendered(
                "spec.ipFamilyPolicy",
                &rendered_policy,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if families.len() == 2 {
            errs.push(invalid_rendered(
                "spec.ipFamilyPolicy",
                &rendered_policy,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    for (i, ip) in ips.iter().enumerate() {
        if *ip == "None" {
            break;
        }
        let family = family_of(ip);
        if i >= families.len() && family != CLUSTER_FAMILY {
            errs.push(invalid_rendered(
                &index("spec.clusterIPs", i),
                &go_string_slice(&ips),
                &format!("{family} is not configured on this cluster"),
            ));
        }
    }
    if !errs.is_empty() {
        return errs;
    }
    let headless_selectorless = text(spec, "clusterIP") == "None"
        && spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(|s| s.is_empty());
    if headless_selectorless {
        return errs;
    }
    if policy == "RequireDualStack" {
        errs.push(invalid_rendered(
            "spec.ipFamilyPolicy",
            &rendered_policy,
            "this cluster is not configured for dual-stack services",
        ));
    }
    for (i, family) in families.iter().enumerate() {
        if *family != CLUSTER_FAMILY {
            errs.push(invalid_rendered(
                &index("spec.ipFamilies", i),
                &go_quote(family),
                "not configured on this cluster",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::summary).collect()
    }

    #[test]
    fn single_stack_ipv4_services_pass() {
        let spec = json!({"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
            "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "selector": {"a": "b"}});
        assert!(allocation_refusals(&spec, None).is_empty());
        let prefer = json!({"ipFamilies": ["IPv4"], "ipFamilyPolicy": "PreferDualStack"});
        assert!(allocation_refusals(&prefer, None).is_empty());
        // Headless without a selector may be dual-stack even here.
        let headless = json!({"clusterIP": "None", "clusterIPs": ["None"],
            "ipFamilies": ["IPv4", "IPv6"], "ipFamilyPolicy": "RequireDualStack"});
        assert!(allocation_refusals(&headless, None).is_empty());
    }

    #[test]
    fn refusals_name_upstreams_fields() {
        let cases = [
            (
                json!({"ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4"], "selector": {"a": "b"}}),
                vec![
                    "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
                ],
            ),
            (
                json!({"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv6"]}),
                vec!["spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster"],
            ),
            (
                json!({"ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4", "IPv6"]}),
                vec![
                    "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
                ],
            ),
            (
                json!({"clusterIP": "fd00::10", "clusterIPs": ["fd00::10"], "ipFamilyPolicy": "SingleStack"}),
                vec![
                    "spec.clusterIPs[0]: Invalid value: []string{\"fd00::10\"}: IPv6 is not configured on this cluster",
                ],
            ),
            (
                json!({"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.2"]}),
                vec![
                    "spec.clusterIPs: Invalid value: []string{\"10.0.0.2\"}: first value must match `clusterIP`",
                ],
            ),
            (
                json!({"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1", "10.0.0.2"], "ipFamilyPolicy": "PreferDualStack"}),
                vec![
                    "spec.clusterIPs: Invalid value: []string{\"10.0.0.1\", \"10.0.0.2\"}: may specify no more than one IP for each IP family",
                ],
            ),
            (
                json!({"ipFamilies": ["IPv5", "IPv5"], "ipFamilyPolicy": "Both"}),
                vec![
                    "spec.ipFamilies[0]: Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\"",
                    "spec.ipFamilies[1]: Unsupported value: \"IPv5\": supported values: \"IPv4\", \"IPv6\"",
                    "spec.ipFamilies[1]: Duplicate value: \"IPv5\"",
                    "spec.ipFamilyPolicy: Unsupported value: \"Both\": supported values: \"PreferDualStack\", \"RequireDualStack\", \"SingleStack\"",
                ],
            ),
            (
                json!({"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ipFamilies": ["IPv6"]}),
                vec![
                    "spec.clusterIPs[0]: Invalid value: \"10.0.0.1\": expected an IPv6 value as indicated by `ipFamilies[0]`",
                ],
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(messages(&allocation_refusals(&spec, None)), want, "{spec}");
        }
    }

    #[test]
    fn releasing_a_secondary_needs_single_stack() {
        let old = json!({"clusterIP": "None", "clusterIPs": ["None"], "ipFamilies": ["IPv4", "IPv6"],
            "ipFamilyPolicy": "RequireDualStack", "selector": {"a": "b"}});
        let mut new = old.clone();
        new["ipFamilies"] = json!(["IPv4"]);
        assert_eq!(
            messages(&allocation_refusals(&new, Some(&old))),
            vec![
                "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": must be 'SingleStack' to release the secondary IP family"
            ]
        );
    }
}
