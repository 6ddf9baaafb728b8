//! Dynamic resource allocation in a pod spec: the pod's `resourceClaims` (upstream's
//! `validatePodResourceClaims`) and the `resources.claims` of its containers that refer to them
//! (`validateResourceClaimNames`).

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{dns_label, list_at, not_found_because, set_at, str_at};
use crate::error::Cause;
use crate::validation::names::{
    NameRule, child, go_quote, go_render, index, invalid_rendered, invalid_value, validate_name,
};

/// Upstream `gatherPodResourceClaimNames`: the non-empty names of the pod's resource claims.
pub(super) fn pod_claim_names(spec: &Value) -> BTreeSet<String> {
    list_at(spec, "resourceClaims")
        .iter()
        .map(|c| str_at(c, "name"))
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// Go's `%#v` of a `*string` that is nil (the only case whose rendering is stable: a set
/// pointer prints its address).
const NIL_STRING: &str = "(*string)(nil)";

/// How upstream prints a `core.PodResourceClaim` in an `Invalid value` (Go's `%#v`). Its two
/// names are pointers, printed as addresses when set, so a claim with a name set is shown as
/// JSON instead.
fn render_claim(claim: &Value) -> String {
    if set_at(claim, "resourceClaimName").is_some()
        || set_at(claim, "resourceClaimTemplateName").is_some()
    {
        return go_render(claim);
    }
    format!(
        "core.PodResourceClaim{{Name:{}, ResourceClaimName:{NIL_STRING}, ResourceClaimTemplateName:{NIL_STRING}}}",
        go_quote(str_at(claim, "name"))
    )
}

/// `validatePodResourceClaims`: names unique DNS labels; exactly one of `resourceClaimName`
/// and `resourceClaimTemplateName`, each a valid object name.
pub(super) fn validate_pod_resource_claims(spec: &Value, path: &str, out: &mut Vec<Cause>) {
    let mut seen = BTreeSet::new();
    for (i, claim) in list_at(spec, "resourceClaims").iter().enumerate() {
        let cpath = index(path, i);
        let name = str_at(claim, "name");
        if name.is_empty() {
            out.push(Cause::required(child(&cpath, "name"), ""));
        } else if seen.contains(name) {
            out.push(Cause::duplicate(child(&cpath, "name"), &json!(name)));
        } else {
            dns_label(name, &child(&cpath, "name"), out);
            seen.insert(name);
        }
        let by_name = set_at(claim, "resourceClaimName");
        let by_template = set_at(claim, "resourceClaimTemplateName");
        let rendered = render_claim(claim);
        if by_name.is_some() && by_template.is_some() {
            out.push(invalid_rendered(
                &cpath,
                &rendered,
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            ));
        }
        if by_name.is_none() && by_template.is_none() {
            out.push(invalid_rendered(
                &cpath,
                &rendered,
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            ));
        }
        for (field, value) in [
            ("resourceClaimName", by_name),
            ("resourceClaimTemplateName", by_template),
        ] {
            if let Some(value) = value {
                let text = value.as_str().unwrap_or("");
                for msg in validate_name(text, NameRule::Subdomain, false) {
                    out.push(invalid_value(&child(&cpath, field), value, &msg));
                }
            }
        }
    }
}

/// `validateResourceClaimNames` for the `claims` of a resource requirements object at `path`:
/// each names a pod resource claim (optionally one of its requests), none twice.
pub(super) fn validate_container_claims(
    claims: &[Value],
    pod_claims: &BTreeSet<String>,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for (i, claim) in claims.iter().enumerate() {
        let cpath = index(path, i);
        let name = str_at(claim, "name");
        if name.is_empty() {
            out.push(Cause::required(cpath, ""));
            continue;
        }
        if names.contains(name) {
            // Every request of that claim is referenced already.
            out.push(Cause::duplicate(cpath.clone(), &json!(name)));
        } else {
            let request = str_at(claim, "request");
            let mut entry = name.to_string();
            if !request.is_empty() {
                dns_label(request, &child(&cpath, "request"), out);
                entry = format!("{name}/{request}");
            }
            if names.contains(&entry) {
                out.push(Cause::duplicate(cpath.clone(), &json!(entry)));
            } else if request.is_empty() {
                // The whole claim overlaps a request of it referenced before.
                for earlier in &names {
                    if earlier
                        .split_once('/')
                        .is_some_and(|(claim_name, _)| claim_name == name)
                    {
                        out.push(Cause::duplicate(cpath.clone(), &json!(name)));
                    }
                }
            }
            names.insert(entry);
        }
        if !pod_claims.contains(name) {
            let known: Vec<&str> = pod_claims.iter().map(String::as_str).collect();
            let detail = if known.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_string()
            } else {
                format!(
                    "must be one of the names in pod.spec.resourceClaims: {}",
                    known.join(", ")
                )
            };
            out.push(not_found_because(&cpath, &json!(name), &detail));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::validation::podspec::tests::{Change, check_table};

    #[test]
    fn pod_claims_and_the_container_claims_naming_them() {
        let cases: Vec<(Change, Vec<&str>)> = vec![
            (
                |s| {
                    s["resourceClaims"] = json!([
                        {"name": "gpu", "resourceClaimName": "c"},
                        {"name": "gpu", "resourceClaimTemplateName": "t"},
                        {"name": "x"},
                        {"name": "both", "resourceClaimName": "a", "resourceClaimTemplateName": "b"},
                        {"name": "", "resourceClaimName": "Bad_Name"}
                    ]);
                    s["containers"][0]["resources"]["claims"] =
                        json!([{"name": "gpu"}, {"name": "gpu", "request": "r"}, {"name": "nope"}]);
                },
                vec![
                    "spec.resourceClaims[1].name: Duplicate value: \"gpu\"",
                    "spec.resourceClaims[2]: Invalid value: core.PodResourceClaim{Name:\"x\", ResourceClaimName:(*string)(nil), ResourceClaimTemplateName:(*string)(nil)}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                    "spec.resourceClaims[3]: Invalid value: {\"name\":\"both\",\"resourceClaimName\":\"a\",\"resourceClaimTemplateName\":\"b\"}: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
                    "spec.resourceClaims[4].name: Required value",
                    "spec.resourceClaims[4].resourceClaimName: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                    "spec.containers[0].resources.claims[1]: Duplicate value: \"gpu\"",
                    "spec.containers[0].resources.claims[2]: Not found: \"nope\": must be one of the names in pod.spec.resourceClaims: both, gpu, x",
                ],
            ),
            (
                |s| {
                    s["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": "c"}]);
                    s["containers"][0]["resources"]["claims"] = json!([
                        {"name": "gpu", "request": "a"},
                        {"name": "gpu", "request": "a"},
                        {"name": "gpu", "request": "b"},
                        {"name": "gpu"},
                        {"name": ""}
                    ]);
                },
                vec![
                    "spec.containers[0].resources.claims[1]: Duplicate value: \"gpu/a\"",
                    "spec.containers[0].resources.claims[3]: Duplicate value: \"gpu\"",
                    "spec.containers[0].resources.claims[3]: Duplicate value: \"gpu\"",
                    "spec.containers[0].resources.claims[4]: Required value",
                ],
            ),
            (
                |s| s["containers"][0]["resources"]["claims"] = json!([{"name": "gpu"}]),
                vec![
                    "spec.containers[0].resources.claims[0]: Not found: \"gpu\": must be one of the names in pod.spec.resourceClaims which is empty",
                ],
            ),
            (
                |s| {
                    s["resourceClaims"] =
                        json!([{"name": "gpu", "resourceClaimTemplateName": "t"}]);
                    s["initContainers"] = json!([{"name": "i", "image": "x", "terminationMessagePolicy": "File",
                        "imagePullPolicy": "Always", "resources": {"claims": [{"name": "gpu", "request": "r"}]}}]);
                    s["containers"][0]["resources"]["claims"] = json!([{"name": "gpu"}]);
                },
                vec![],
            ),
        ];
        check_table(cases, false);
    }
}
