//! The names of a CRD (`spec.names`, `status.acceptedNames`): upstream's
//! `ValidateCustomResourceDefinitionNames`, and the API-approval annotation protected groups
//! need (`validateAPIApproval`).

use serde_json::{Value, json};

use super::internal::str_of;
use crate::error::Cause;
use crate::validation::names::{child, dns1035_label, index, key};

/// `FieldValueInvalid` at `path` when `errs` is not empty: upstream joins the messages with `,`.
fn joined(path: String, value: &str, prefix: &str, errs: &[String]) -> Option<Cause> {
    (!errs.is_empty())
        .then(|| Cause::invalid(path, &json!(value), &format!("{prefix}{}", errs.join(","))))
}

/// Validates a names object at `path` (`spec.names` or `status.acceptedNames`): every name a
/// DNS-1035 label (kind and listKind lower-cased), kind and listKind different.
pub(crate) fn validate_names(names: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mixed = "may have mixed case, but should otherwise match: ";
    for (field, lower, prefix) in [
        ("plural", false, ""),
        ("singular", false, ""),
        ("kind", true, mixed),
        ("listKind", true, mixed),
    ] {
        let value = str_of(names, field);
        if value.is_empty() {
            continue;
        }
        let checked = if lower {
            dns1035_label(&value.to_lowercase())
        } else {
            dns1035_label(value)
        };
        causes.extend(joined(child(path, field), value, prefix, &checked));
    }
    for (i, short) in crate::meta::strings(names.get("shortNames"))
        .iter()
        .enumerate()
    {
        causes.extend(joined(
            index(&child(path, "shortNames"), i),
            short,
            "",
            &dns1035_label(short),
        ));
    }
    let kind = str_of(names, "kind");
    if !kind.is_empty() && kind == str_of(names, "listKind") {
        causes.push(Cause::invalid(
            child(path, "listKind"),
            &json!(kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in crate::meta::strings(names.get("categories"))
        .iter()
        .enumerate()
    {
        causes.extend(joined(
            index(&child(path, "categories"), i),
            category,
            "",
            &dns1035_label(category),
        ));
    }
    causes
}

/// The names `spec.names` must have (upstream: required for the spec, not for status).
pub(crate) fn required_spec_names(names: &Value) -> Vec<Cause> {
    ["plural", "singular", "kind", "listKind"]
        .into_iter()
        .filter(|f| str_of(names, f).is_empty())
        .map(|f| Cause::required(format!("spec.names.{f}"), ""))
        .collect()
}

/// The annotation recording the API review of a CRD in a protected group.
const API_APPROVED: &str = "api-approved.kubernetes.io";

/// Upstream's `IsProtectedCommunityGroup`: `k8s.io`, `kubernetes.io` and their subdomains.
fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// The approval state of a CRD's annotations, upstream's `GetAPIApprovalState`.
#[derive(Debug, PartialEq, Eq)]
enum Approval {
    /// No annotation.
    Missing,
    /// `unapproved...`: knowingly bypassed.
    Bypassed,
    /// A URL with scheme and host.
    Approved,
    /// Anything else.
    Invalid,
}

/// The approval state of `crd`.
fn approval(crd: &Value) -> (Approval, String) {
    let value = crate::meta::path(crd, "metadata.annotations")
        .and_then(|a| a.get(API_APPROVED))
        .and_then(Value::as_str)
        .unwrap_or("");
    if value.is_empty() {
        return (
            Approval::Missing,
            format!(
                "protected groups must have approval annotation \"{API_APPROVED}\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        );
    }
    if value.starts_with("unapproved") {
        return (Approval::Bypassed, String::new());
    }
    // Go's url.ParseRequestURI: an absolute URL with a scheme and a host.
    let approved = value.split_once("://").is_some_and(|(scheme, rest)| {
        scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            && !rest.is_empty()
            && !rest.starts_with('/')
            && !value.contains(' ')
    });
    if approved {
        (Approval::Approved, String::new())
    } else {
        (
            Approval::Invalid,
            format!(
                "protected groups must have approval annotation \"{API_APPROVED}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )
    }
}

/// Upstream's `validateAPIApproval`: a CRD in a protected group carries the approval
/// annotation; an update that leaves the state unchanged is never refused.
pub(crate) fn validate_api_approval(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    if !is_protected_group(str_of(crd.get("spec").unwrap_or(&Value::Null), "group")) {
        return Vec::new();
    }
    let (state, reason) = approval(crd);
    if old.is_some_and(|o| approval(o).0 == state) {
        return Vec::new();
    }
    let path = key("metadata.annotations", API_APPROVED);
    match state {
        Approval::Missing => vec![Cause::required(path, &reason)],
        Approval::Invalid => {
            let value = crate::meta::path(crd, "metadata.annotations")
                .and_then(|a| a.get(API_APPROVED))
                .cloned()
                .unwrap_or(json!(""));
            vec![Cause::invalid(path, &value, &reason)]
        }
        Approval::Approved | Approval::Bypassed => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summarised causes of `names` at `spec.names`.
    fn check(names: Value) -> Vec<String> {
        validate_names(&names, "spec.names")
            .iter()
            .map(Cause::summary)
            .collect()
    }

    #[test]
    fn names_follow_upstream() {
        let dns = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
        let cases: Vec<(Value, Vec<String>)> = vec![
            (
                json!({"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                       "shortNames": ["wd"], "categories": ["all"]}),
                vec![],
            ),
            (
                json!({"plural": "Widgets", "singular": "wid.get", "kind": "Wid_get", "listKind": "9List",
                       "shortNames": ["w-"], "categories": ["A"]}),
                vec![
                    format!("spec.names.plural: Invalid value: \"Widgets\": {dns}"),
                    format!("spec.names.singular: Invalid value: \"wid.get\": {dns}"),
                    format!("spec.names.kind: Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: {dns}"),
                    format!("spec.names.listKind: Invalid value: \"9List\": may have mixed case, but should otherwise match: {dns}"),
                    format!("spec.names.shortNames[0]: Invalid value: \"w-\": {dns}"),
                    format!("spec.names.categories[0]: Invalid value: \"A\": {dns}"),
                ],
            ),
            (
                json!({"plural": "widgets", "kind": "Widget", "listKind": "Widget"}),
                vec!["spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be the same".to_string()],
            ),
        ];
        for (names, want) in cases {
            assert_eq!(check(names.clone()), want, "{names}");
        }
        let required: Vec<String> = required_spec_names(&json!({"plural": "widgets"}))
            .iter()
            .map(Cause::summary)
            .collect();
        assert_eq!(
            required,
            [
                "spec.names.singular: Required value",
                "spec.names.kind: Required value",
                "spec.names.listKind: Required value"
            ]
        );
    }

    #[test]
    fn protected_groups_need_approval() {
        let crd = |annotation: Option<&str>| {
            let mut c = json!({"metadata": {"name": "x.example.k8s.io"}, "spec": {"group": "example.k8s.io"}});
            if let Some(a) = annotation {
                c["metadata"]["annotations"] = json!({API_APPROVED: a});
            }
            c
        };
        let summary = |c: &Value, old: Option<&Value>| -> Vec<String> {
            validate_api_approval(c, old)
                .iter()
                .map(Cause::summary)
                .collect()
        };
        assert_eq!(
            summary(&crd(None), None),
            [
                "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
            ]
        );
        assert!(
            summary(
                &crd(Some("https://github.com/kubernetes/kubernetes/pull/1")),
                None
            )
            .is_empty()
        );
        assert!(summary(&crd(Some("unapproved, experimental")), None).is_empty());
        assert_eq!(
            summary(&crd(Some("yes")), None),
            [
                "metadata.annotations[api-approved.kubernetes.io]: Invalid value: \"yes\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
            ]
        );
        // An update keeping the state is never refused.
        assert!(summary(&crd(None), Some(&crd(None))).is_empty());
        let other = json!({"spec": {"group": "example.com"}});
        assert!(summary(&other, None).is_empty());
    }
}
