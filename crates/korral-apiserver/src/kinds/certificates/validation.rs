//! Upstream's `pkg/apis/certificates/validation` for CertificateSigningRequests: the request,
//! usages, signer name, expiration, conditions and certificate, with the relaxations an update
//! gets when the stored object already had a problem, and what each subresource may change.

use base64::Engine;
use serde_json::{Value, json};

use super::pem;
use crate::error::Cause;
use crate::meta;
use crate::validation::names::{
    DNS1123_LABEL_MAX_LENGTH, DNS1123_SUBDOMAIN_MAX_LENGTH, child, dns1123_label,
    dns1123_subdomain, go_bytes, go_quote, index, invalid_rendered, invalid_value, too_long,
};

/// The signer name the v1 API refuses.
pub(super) const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// Every key usage upstream knows, sorted (`allValidUsages.List()`).
const USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// The condition types that may only have the status `True`.
const TRUE_ONLY: [&str; 3] = ["Approved", "Denied", "Failed"];

/// Which part of the object the write addresses: what it may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Writer {
    /// The main resource (and creates).
    Main,
    /// `/status`: may set `status.certificate`.
    Status,
    /// `/approval`: may add or change the `Approved` and `Denied` conditions.
    Approval,
}

/// Upstream's `certificateValidationOptions`.
#[derive(Debug, Clone, Copy, Default)]
struct Options {
    allow_setting_approval_conditions: bool,
    allow_setting_certificate: bool,
    allow_both_approved_and_denied: bool,
    allow_legacy_signer_name: bool,
    allow_duplicate_condition_types: bool,
    allow_empty_condition_type: bool,
    allow_arbitrary_certificate: bool,
    allow_unknown_usages: bool,
    allow_duplicate_usages: bool,
}

impl Options {
    /// `getValidationOptions`: what the stored object (if any) already gets away with, plus
    /// what the writer may set.
    fn of(new: &Value, old: Option<&Value>, writer: Writer) -> Self {
        let old_has = |check: fn(&Value) -> bool| old.is_some_and(check);
        Self {
            allow_setting_approval_conditions: writer == Writer::Approval,
            allow_setting_certificate: writer == Writer::Status,
            allow_both_approved_and_denied: old_has(|o| {
                has_condition(o, "Approved") && has_condition(o, "Denied")
            }),
            allow_legacy_signer_name: old_has(|o| signer(o) == LEGACY_SIGNER),
            allow_duplicate_condition_types: old_has(|o| has_duplicates(&condition_types(o))),
            allow_empty_condition_type: old_has(|o| {
                condition_types(o).iter().any(String::is_empty)
            }),
            allow_arbitrary_certificate: old.is_some_and(|o| {
                certificate(new) == certificate(o)
                    || pem::check_certificates(&certificate(o)).is_err()
            }),
            allow_unknown_usages: old_has(|o| {
                usages(o).iter().any(|u| !USAGES.contains(&u.as_str()))
            }),
            allow_duplicate_usages: old_has(|o| has_duplicates(&usages(o))),
        }
    }
}

/// The bytes of a `[]byte` field (base64 in JSON); `None` when absent or null.
fn bytes_at(obj: &Value, path: &str) -> Option<Vec<u8>> {
    let text = meta::path(obj, path)?.as_str()?;
    Some(
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap_or_default(),
    )
}

/// `status.certificate` (empty when absent).
fn certificate(obj: &Value) -> Vec<u8> {
    bytes_at(obj, "status.certificate").unwrap_or_default()
}

/// `spec.signerName`.
fn signer(obj: &Value) -> &str {
    meta::path(obj, "spec.signerName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `spec.usages`.
fn usages(obj: &Value) -> Vec<String> {
    meta::strings(meta::path(obj, "spec.usages"))
}

/// `status.conditions`.
pub(super) fn conditions(obj: &Value) -> &[Value] {
    meta::path(obj, "status.conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A condition's field as a string (empty when absent).
fn field<'a>(condition: &'a Value, name: &str) -> &'a str {
    condition.get(name).and_then(Value::as_str).unwrap_or("")
}

/// The types of the conditions, in order.
fn condition_types(obj: &Value) -> Vec<String> {
    conditions(obj)
        .iter()
        .map(|c| field(c, "type").to_string())
        .collect()
}

/// Whether a condition of type `kind` is present.
pub(super) fn has_condition(obj: &Value, kind: &str) -> bool {
    conditions(obj).iter().any(|c| field(c, "type") == kind)
}

/// The conditions of type `kind`.
pub(super) fn find_conditions<'a>(obj: &'a Value, kind: &str) -> Vec<&'a Value> {
    conditions(obj)
        .iter()
        .filter(|c| field(c, "type") == kind)
        .collect()
}

fn has_duplicates(values: &[String]) -> bool {
    values
        .iter()
        .enumerate()
        .any(|(i, v)| values[..i].contains(v))
}

/// A JSON string rendered as Go's `%#v` of a named string type: quoted.
fn quoted(value: &str) -> String {
    go_quote(value)
}

/// Upstream's `ValidateSignerName`.
pub(super) fn validate_signer_name(path: &str, name: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push(Cause::required(path, ""));
        return errs;
    }
    let segments: Vec<&str> = name.split('/').collect();
    let [domain, rest] = segments.as_slice() else {
        errs.push(invalid_value(
            path,
            &json!(name),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return errs;
    };
    if domain.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(too_long(path, DNS1123_SUBDOMAIN_MAX_LENGTH as i64));
    }
    let domain_labels: Vec<&str> = domain.split('.').collect();
    for label in &domain_labels {
        let problems = dns1123_label(label);
        if !problems.is_empty() {
            for problem in problems {
                errs.push(invalid_value(
                    path,
                    &json!(domain),
                    &format!("validating label {}: {problem}", go_quote(label)),
                ));
            }
            break;
        }
    }
    if domain_labels.len() < 2 {
        errs.push(invalid_value(
            path,
            &json!(domain),
            "should be a domain with at least two segments separated by dots",
        ));
    }
    for label in rest.split('.') {
        let problems = dns1123_subdomain(label);
        if !problems.is_empty() {
            for problem in problems {
                errs.push(invalid_value(
                    path,
                    &json!(rest),
                    &format!("validating label {}: {problem}", go_quote(label)),
                ));
            }
            break;
        }
    }
    let max_path = DNS1123_SUBDOMAIN_MAX_LENGTH + DNS1123_LABEL_MAX_LENGTH + 1;
    let max = DNS1123_SUBDOMAIN_MAX_LENGTH + max_path + 1;
    if name.len() > max {
        errs.push(too_long(path, max as i64));
    }
    errs
}

/// Upstream's `validateCertificateSigningRequest` with the given options.
fn validate_with(obj: &Value, opts: Options) -> Vec<Cause> {
    let mut errs = Vec::new();
    let request = bytes_at(obj, "spec.request");
    if let Err(problem) = pem::check_request(request.as_deref().unwrap_or_default()) {
        let rendered = match &request {
            None => "[]byte(nil)".to_string(),
            Some(bytes) => go_bytes("[]byte", bytes),
        };
        errs.push(invalid_rendered("spec.request", &rendered, &problem));
    }
    let usages = usages(obj);
    if usages.is_empty() {
        errs.push(Cause::required("spec.usages", ""));
    }
    if !opts.allow_unknown_usages {
        for (i, usage) in usages.iter().enumerate() {
            if !USAGES.contains(&usage.as_str()) {
                errs.push(Cause::new(
                    "FieldValueNotSupported",
                    index("spec.usages", i),
                    format!(
                        "Unsupported value: {}: supported values: {}",
                        quoted(usage),
                        USAGES.map(go_quote).join(", ")
                    ),
                ));
            }
        }
    }
    if !opts.allow_duplicate_usages {
        for (i, usage) in usages.iter().enumerate() {
            if usages[..i].contains(usage) {
                errs.push(Cause::new(
                    "FieldValueDuplicate",
                    index("spec.usages", i),
                    format!("Duplicate value: {}", quoted(usage)),
                ));
            }
        }
    }
    let signer = signer(obj);
    if !opts.allow_legacy_signer_name && signer == LEGACY_SIGNER {
        errs.push(invalid_value(
            "spec.signerName",
            &json!(signer),
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(validate_signer_name("spec.signerName", signer));
    }
    if let Some(seconds) = meta::path(obj, "spec.expirationSeconds").and_then(Value::as_i64)
        && seconds < 600
    {
        errs.push(invalid_value(
            "spec.expirationSeconds",
            &json!(seconds),
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    errs.extend(validate_conditions(obj, opts));
    if !opts.allow_arbitrary_certificate
        && let Err(problem) = pem::check_certificates(&certificate(obj))
    {
        errs.push(invalid_value(
            "status.certificate",
            &json!("<certificate data>"),
            &problem,
        ));
    }
    errs
}

/// Upstream's `validateConditions`.
fn validate_conditions(obj: &Value, opts: Options) -> Vec<Cause> {
    let mut errs = Vec::new();
    let path = "status.conditions";
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in conditions(obj).iter().enumerate() {
        let at = index(path, i);
        let kind = field(c, "type");
        if !opts.allow_empty_condition_type && kind.is_empty() {
            errs.push(Cause::required(child(&at, "type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&kind) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        let status = field(c, "status");
        if status.is_empty() {
            errs.push(Cause::required(child(&at, "status"), ""));
        } else if !allowed.contains(&status) {
            errs.push(Cause::new(
                "FieldValueNotSupported",
                child(&at, "status"),
                format!(
                    "Unsupported value: {}: supported values: {}",
                    quoted(status),
                    allowed
                        .iter()
                        .map(|s| go_quote(s))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        if !opts.allow_both_approved_and_denied {
            let clash = match kind {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                errs.push(invalid_rendered(
                    path,
                    &quoted(kind),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !opts.allow_duplicate_condition_types {
            if seen.contains(&kind) {
                errs.push(Cause::new(
                    "FieldValueDuplicate",
                    child(&at, "type"),
                    format!("Duplicate value: {}", quoted(kind)),
                ));
            }
            seen.push(kind);
        }
    }
    errs
}

/// Upstream's `ValidateCertificateSigningRequestCreate`.
pub(super) fn validate_create(obj: &Value) -> Vec<Cause> {
    validate_with(obj, Options::of(obj, None, Writer::Main))
}

/// Upstream's `ValidateCertificateSigningRequest{,Status,Approval}Update`, by writer.
pub(super) fn validate_update(new: &Value, old: &Value, writer: Writer) -> Vec<Cause> {
    let opts = Options::of(new, Some(old), writer);
    let mut errs = validate_with(new, opts);
    for kind in TRUE_ONLY {
        if find_conditions(new, kind).len() < find_conditions(old, kind).len() {
            errs.push(Cause::forbidden(
                "status.conditions",
                &format!(
                    "updates may not remove a condition of type {}",
                    go_quote(kind)
                ),
            ));
        }
    }
    if !opts.allow_setting_approval_conditions {
        for kind in ["Approved", "Denied"] {
            let (before, after) = (find_conditions(old, kind), find_conditions(new, kind));
            if after.len() > before.len() {
                errs.push(Cause::forbidden(
                    "status.conditions",
                    &format!("updates may not add a condition of type {}", go_quote(kind)),
                ));
            } else if after.len() == before.len() && after != before {
                errs.push(Cause::forbidden(
                    "status.conditions",
                    &format!(
                        "updates may not modify a condition of type {}\n{}",
                        go_quote(kind),
                        super::conditions_diff(&before, &after)
                    ),
                ));
            }
        }
    }
    let (new_cert, old_cert) = (certificate(new), certificate(old));
    if new_cert != old_cert {
        if !opts.allow_setting_certificate {
            errs.push(Cause::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !old_cert.is_empty() {
            errs.push(Cause::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A valid request: a signed CSR for a custom signer, one usage.
    fn valid() -> Value {
        let pem = pem::tests::csr_pem();
        json!({
            "metadata": {"name": "r"},
            "spec": {
                "request": base64::engine::general_purpose::STANDARD.encode(pem),
                "signerName": "example.com/signer",
                "usages": ["client auth"],
            },
            "status": {},
        })
    }

    fn messages(errs: &[Cause]) -> Vec<String> {
        errs.iter().map(Cause::summary).collect()
    }

    #[test]
    fn a_signed_request_with_usages_and_signer_is_valid() {
        assert!(validate_create(&valid()).is_empty());
    }

    #[test]
    fn request_usages_signer_and_expiration_as_upstream() {
        let mut obj = valid();
        obj["spec"]["request"] = json!("aGk=");
        obj["spec"]["usages"] = json!(["client auth", "bogus", "client auth"]);
        obj["spec"]["signerName"] = json!(LEGACY_SIGNER);
        obj["spec"]["expirationSeconds"] = json!(599);
        let got = messages(&validate_create(&obj));
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(
            got[0],
            "spec.request: Invalid value: []byte{0x68, 0x69}: PEM block type must be CERTIFICATE REQUEST"
        );
        assert!(got[1].starts_with(
            "spec.usages[1]: Unsupported value: \"bogus\": supported values: \"any\", \"cert sign\", "
        ));
        assert_eq!(got[2], "spec.usages[2]: Duplicate value: \"client auth\"");
        assert_eq!(
            got[3],
            "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version"
        );
        assert_eq!(
            got[4],
            "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)"
        );
        let mut none = valid();
        none["spec"] = json!({});
        assert_eq!(
            messages(&validate_create(&none)),
            vec![
                "spec.request: Invalid value: []byte(nil): PEM block type must be CERTIFICATE REQUEST",
                "spec.usages: Required value",
                "spec.signerName: Required value",
            ]
        );
    }

    #[test]
    fn signer_names_are_qualified() {
        let m = |name: &str| messages(&validate_signer_name("spec.signerName", name));
        assert!(m("example.com/a.b").is_empty());
        assert_eq!(
            m("nodomain"),
            vec![
                "spec.signerName: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form 'example.com/signer-name'"
            ]
        );
        assert_eq!(
            m("example/x"),
            vec![
                "spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"
            ]
        );
        assert_eq!(
            m("Example.com/x"),
            vec![
                "spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }

    #[test]
    fn conditions_are_exclusive_unique_and_true_only() {
        let mut obj = valid();
        obj["status"]["conditions"] = json!([
            {"type": "Approved", "status": "True"},
            {"type": "Denied", "status": "False"},
            {"type": "Approved", "status": "True"},
            {"type": "", "status": ""},
        ]);
        assert_eq!(
            messages(&validate_create(&obj)),
            vec![
                "status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
                "status.conditions: Invalid value: \"Approved\": Approved and Denied conditions are mutually exclusive",
                "status.conditions[2].type: Duplicate value: \"Approved\"",
                "status.conditions[3].type: Required value",
                "status.conditions[3].status: Required value",
            ]
        );
    }

    #[test]
    fn each_writer_sets_only_its_part() {
        let old = valid();
        let mut approved = valid();
        approved["spec"] = old["spec"].clone();
        approved["status"]["conditions"] = json!([{"type": "Approved", "status": "True"}]);
        assert!(validate_update(&approved, &old, Writer::Approval).is_empty());
        assert_eq!(
            messages(&validate_update(&approved, &old, Writer::Status)),
            vec![
                "status.conditions: Forbidden: updates may not add a condition of type \"Approved\""
            ]
        );
        // Approval conditions cannot be removed, even by approvers.
        assert_eq!(
            messages(&validate_update(&old, &approved, Writer::Approval)),
            vec![
                "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
            ]
        );
        let cert = pem::tests::certificate_pem();
        let mut issued = old.clone();
        issued["status"]["certificate"] =
            json!(base64::engine::general_purpose::STANDARD.encode(&cert));
        assert!(validate_update(&issued, &old, Writer::Status).is_empty());
        assert_eq!(
            messages(&validate_update(&issued, &old, Writer::Main)),
            vec!["status.certificate: Forbidden: updates may not set certificate content"]
        );
        let mut reissued = issued.clone();
        reissued["status"]["certificate"] =
            json!(base64::engine::general_purpose::STANDARD.encode(pem::tests::certificate_pem()));
        assert_eq!(
            messages(&validate_update(&reissued, &issued, Writer::Status)),
            vec![
                "status.certificate: Forbidden: updates may not modify existing certificate content"
            ]
        );
        let mut junk = old.clone();
        junk["status"]["certificate"] = json!("aGk=");
        assert_eq!(
            messages(&validate_update(&junk, &old, Writer::Status)),
            vec![
                "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"
            ]
        );
    }

    #[test]
    fn stored_problems_are_tolerated_on_update() {
        let mut old = valid();
        old["spec"]["usages"] = json!(["bogus", "bogus"]);
        old["status"]["conditions"] = json!([
            {"type": "Approved", "status": "True"},
            {"type": "Denied", "status": "True"},
        ]);
        assert!(validate_update(&old, &old, Writer::Main).is_empty());
        // Two unknown usages, a duplicate, Approved with Denied.
        assert_eq!(validate_create(&old).len(), 4);
    }
}
