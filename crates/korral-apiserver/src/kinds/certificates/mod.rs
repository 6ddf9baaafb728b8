//! `certificates.k8s.io/v1`: CertificateSigningRequests, as upstream's
//! `pkg/registry/certificates/certificates` serves them: the requester's identity filled in by
//! the server, the `status` subresource for signers (the certificate) and the `approval`
//! subresource for approvers (the `Approved`/`Denied` conditions), each write keeping what its
//! part may not change.

mod pem;
mod validation;

use base64::Engine;
use k8s_openapi::api::certificates::v1 as api;
use serde_json::{Map, Value, json};

use super::KindDef;
use super::core::go_diff::{GoValue, marshal_indent, unified};
use super::lists::{APPLY_CONDITIONS, ListAt};
use super::printer::{AGE, Column, Printer, age, human_duration, text};
use super::strategy::{Context, Strategy};
use crate::error::{ApiError, Cause};
use crate::meta;
use crate::objects::FieldValidation;
use crate::registry::{NameRule, ResourceInfo};
use validation::{Writer, conditions, find_conditions};

/// The approval subresource.
const APPROVAL: &str = "approval";

/// CertificateSigningRequest `status.conditions`: keyed by `type` for applies only.
const CSR_LISTS: &[ListAt] = &[ListAt {
    path: "status.conditions",
    rule: APPLY_CONDITIONS,
}];

/// The kinds of `certificates.k8s.io/v1` (ClusterTrustBundles are beta: not served).
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "certificates.k8s.io",
            "v1",
            "certificatesigningrequests",
            "CertificateSigningRequest",
            CsrStrategy,
        )
        .schema::<api::CertificateSigningRequest>()
        .lists(CSR_LISTS)
        .cluster_scoped()
        .short(&["csr"])
        // Upstream accepts any name (`ValidateCertificateRequestName`); it must still fit in
        // a URL path segment.
        .names(NameRule::PathSegment)
        .fields(&["spec.signerName"])
        .status()
        .printer(CSRS),
    ]
}

/// The organizations (groups) of the subject a CSR object's `spec.request` asks for, as
/// upstream's `ParseCSR` reads them; the error is Go's message when the request does not parse.
pub(crate) fn request_organizations(csr: &Value) -> Result<Vec<String>, String> {
    pem::subject_organizations(&certificate_request_der(csr)?)
}

/// The PKCS#10 request (DER) a CSR object's `spec.request` holds in its PEM `CERTIFICATE
/// REQUEST` block; the error is Go's message when there is none.
pub(crate) fn certificate_request_der(csr: &Value) -> Result<Vec<u8>, String> {
    let encoded = meta::path(csr, "spec.request")
        .and_then(Value::as_str)
        .unwrap_or("");
    let request = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| e.to_string())?;
    match pem::decode(&request) {
        Some((block, _)) if block.kind == "CERTIFICATE REQUEST" => Ok(block.bytes),
        _ => Err("PEM block type must be CERTIFICATE REQUEST".to_string()),
    }
}

/// CertificateSigningRequests.
#[derive(Debug, Clone, Copy)]
struct CsrStrategy;

impl Strategy for CsrStrategy {
    /// Who asks is who requests: the client's `username`, `uid`, `groups` and `extra` are
    /// replaced by the requesting user's; a new request has no conditions and no certificate.
    fn prepare_for_create(&self, _info: &ResourceInfo, obj: &mut Value, ctx: &Context) {
        let Some(root) = obj.as_object_mut() else {
            return;
        };
        let spec = root
            .entry("spec")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(spec) = spec {
            for field in ["username", "uid", "groups", "extra"] {
                spec.remove(field);
            }
            if let Some(user) = &ctx.user {
                set_identity(spec, user);
            }
        }
        root.insert("status".into(), json!({}));
    }

    /// `[]byte` fields that are not base64 make the object undecodable (400), as upstream's
    /// decoder answers.
    fn decode(
        &self,
        info: &ResourceInfo,
        obj: &mut Value,
        validation: FieldValidation,
        _ctx: &Context,
    ) -> Result<Vec<String>, ApiError> {
        let warnings = crate::openapi_builtin::decode_builtin(info, obj, validation)?;
        for path in ["spec.request", "status.certificate"] {
            let Some(encoded) = meta::path(obj, path).and_then(Value::as_str) else {
                continue;
            };
            if let Err(e) = base64::engine::general_purpose::STANDARD.decode(encoded) {
                let at = match e {
                    base64::DecodeError::InvalidByte(offset, _)
                    | base64::DecodeError::InvalidLastSymbol(offset, _) => offset,
                    _ => encoded.len() / 4 * 4,
                };
                return Err(ApiError::bad_request(format!(
                    "{kind} in version \"v1\" cannot be handled as a {kind}: illegal base64 data at input byte {at}",
                    kind = info.kind
                )));
            }
        }
        Ok(warnings)
    }

    /// `SetDefaults_CertificateSigningRequestCondition`: a condition's status is `True` unless
    /// given.
    fn default(&self, obj: &mut Value) {
        let Some(list) = obj
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut)
        else {
            return;
        };
        for condition in list.iter_mut().filter_map(Value::as_object_mut) {
            let empty = condition
                .get("status")
                .is_none_or(|s| s.as_str().is_none_or(str::is_empty));
            if empty {
                condition.insert("status".into(), json!("True"));
            }
        }
    }

    /// The spec never changes after create (every part of the object keeps it).
    fn prepare_for_update(&self, obj: &mut Value, old: &Value) {
        if let Some(root) = obj.as_object_mut() {
            match old.get("spec") {
                Some(spec) => root.insert("spec".into(), spec.clone()),
                None => root.remove("spec"),
            };
        }
    }

    /// `/status` keeps the stored `Approved`/`Denied` conditions; `/approval` changes only the
    /// conditions. Both stamp the conditions' times.
    fn prepare_for_subresource_update(&self, subresource: &str, obj: &mut Value, old: &Value) {
        match subresource {
            "status" => {
                preserve_instances(obj, old, "Approved");
                preserve_instances(obj, old, "Denied");
                populate_timestamps(obj, old);
            }
            APPROVAL => {
                populate_timestamps(obj, old);
                let new_conditions = meta::path(obj, "status.conditions").cloned();
                let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
                if let Some(map) = status.as_object_mut() {
                    match new_conditions {
                        Some(c) => map.insert("conditions".into(), c),
                        None => map.remove("conditions"),
                    };
                }
                if let Some(root) = obj.as_object_mut() {
                    root.insert("status".into(), status);
                }
            }
            _ => {}
        }
    }

    fn subresources(&self) -> &'static [&'static str] {
        &[APPROVAL]
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::validate_create(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        let writer = match ctx.subresource {
            Some("status") => Writer::Status,
            Some(APPROVAL) => Writer::Approval,
            _ => Writer::Main,
        };
        validation::validate_update(obj, old, writer)
    }
}

/// The requesting user as `spec.username`, `uid`, `groups` and `extra` (empty ones omitted).
fn set_identity(spec: &mut Map<String, Value>, user: &crate::auth::UserInfo) {
    if !user.name.is_empty() {
        spec.insert("username".into(), json!(user.name));
    }
    if !user.uid.is_empty() {
        spec.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
}

/// Upstream's `preserveConditionInstances`: when the write kept the number of conditions of
/// type `kind`, they are the stored ones.
fn preserve_instances(obj: &mut Value, old: &Value, kind: &str) {
    let indices = |v: &Value| -> Vec<usize> {
        conditions(v)
            .iter()
            .enumerate()
            .filter(|(_, c)| c.get("type").and_then(Value::as_str) == Some(kind))
            .map(|(i, _)| i)
            .collect()
    };
    let (old_at, new_at) = (indices(old), indices(obj));
    if old_at.len() != new_at.len() {
        return;
    }
    let stored = conditions(old).to_vec();
    if let Some(list) = obj
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    {
        for (n, o) in new_at.into_iter().zip(old_at) {
            list[n] = stored[o].clone();
        }
    }
}

/// Whether a condition's time field is unset (absent, null or empty).
fn unset(condition: &Map<String, Value>, field: &str) -> bool {
    condition
        .get(field)
        .is_none_or(|t| t.as_str().is_none_or(str::is_empty))
}

/// Upstream's `populateConditionTimestamps`: an unset `lastUpdateTime` is now; an unset
/// `lastTransitionTime` is the stored condition's of the same type and status, else now.
fn populate_timestamps(obj: &mut Value, old: &Value) {
    let now = meta::now_rfc3339();
    let stored = conditions(old).to_vec();
    let Some(list) = obj
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in list.iter_mut().filter_map(Value::as_object_mut) {
        if unset(condition, "lastUpdateTime") {
            condition.insert("lastUpdateTime".into(), json!(now));
        }
        if unset(condition, "lastTransitionTime") {
            let kept = stored
                .iter()
                .filter_map(Value::as_object)
                .find(|c| {
                    c.get("type") == condition.get("type")
                        && c.get("status") == condition.get("status")
                        && !unset(c, "lastTransitionTime")
                })
                .and_then(|c| c.get("lastTransitionTime").cloned());
            condition.insert(
                "lastTransitionTime".into(),
                kept.unwrap_or_else(|| json!(now)),
            );
        }
    }
}

/// Upstream's `diff.Diff` of two lists of conditions (the internal type: fields in declaration
/// order, unset times `null`).
fn conditions_diff(before: &[&Value], after: &[&Value]) -> String {
    let go = |list: &[&Value]| {
        GoValue::List(
            list.iter()
                .map(|c| {
                    let text = |f: &str| {
                        GoValue::Json(json!(c.get(f).and_then(Value::as_str).unwrap_or("")))
                    };
                    let time = |f: &str| {
                        GoValue::Json(
                            c.get(f)
                                .filter(|t| t.as_str().is_some_and(|s| !s.is_empty()))
                                .cloned()
                                .unwrap_or(Value::Null),
                        )
                    };
                    GoValue::Struct(vec![
                        ("Type", text("type")),
                        ("Status", text("status")),
                        ("Reason", text("reason")),
                        ("Message", text("message")),
                        ("LastUpdateTime", time("lastUpdateTime")),
                        ("LastTransitionTime", time("lastTransitionTime")),
                    ])
                })
                .collect(),
        )
    };
    unified(&marshal_indent(&go(before)), &marshal_indent(&go(after)))
}

/// Upstream's `extractCSRStatus`: `Denied` over `Approved` over `Pending`, then `,Failed` and
/// `,Issued`.
fn condition_summary(obj: &Value) -> String {
    let has = |kind: &str| !find_conditions(obj, kind).is_empty();
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text(obj, "status.certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// `NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION`, as upstream's
/// `printCertificateSigningRequest`.
const CSRS: Printer = Printer {
    columns: &[
        AGE,
        Column::new(
            "SignerName",
            "signerName indicates the requested signer, and is a qualified name.\n\nList/watch requests for CertificateSigningRequests can filter on this field using a \"spec.signerName=NAME\" fieldSelector.\n\nWell-known Kubernetes signers are:\n 1. \"kubernetes.io/kube-apiserver-client\": issues client certificates that can be used to authenticate to kube-apiserver.\n  Requests for this signer are never auto-approved by kube-controller-manager, can be issued by the \"csrsigning\" controller in kube-controller-manager.\n 2. \"kubernetes.io/kube-apiserver-client-kubelet\": issues client certificates that kubelets use to authenticate to kube-apiserver.\n  Requests for this signer can be auto-approved by the \"csrapproving\" controller in kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n 3. \"kubernetes.io/kubelet-serving\" issues serving certificates that kubelets use to serve TLS endpoints, which kube-apiserver can connect to securely.\n  Requests for this signer are never auto-approved by kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n\nMore details are available at https://k8s.io/docs/reference/access-authn-authz/certificate-signing-requests/#kubernetes-signers\n\nCustom signerNames can also be specified. The signer defines:\n 1. Trust distribution: how trust (CA bundles) are distributed.\n 2. Permitted subjects: and behavior when a disallowed subject is requested.\n 3. Required, permitted, or forbidden x509 extensions in the request (including whether subjectAltNames are allowed, which types, restrictions on allowed values) and behavior when a disallowed extension is requested.\n 4. Required, permitted, or forbidden key usages / extended key usages.\n 5. Expiration/certificate lifetime: whether it is fixed by the signer, configurable by the admin.\n 6. Whether or not requests for CA certificates are allowed.",
        ),
        Column::new(
            "Requestor",
            "request contains an x509 certificate signing request encoded in a \"CERTIFICATE REQUEST\" PEM block. When serialized as JSON or YAML, the data is additionally base64-encoded.",
        ),
        Column::new(
            "RequestedDuration",
            "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.",
        ),
        Column::new(
            "Condition",
            "conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\".",
        ),
    ],
    cells: |obj| {
        let signer = text(obj, "spec.signerName");
        let duration = meta::path(obj, "spec.expirationSeconds")
            .and_then(Value::as_i64)
            .map_or_else(|| "<none>".to_string(), human_duration);
        vec![
            age(obj),
            json!(if signer.is_empty() { "<none>" } else { signer }),
            json!(text(obj, "spec.username")),
            json!(duration),
            json!(condition_summary(obj)),
        ]
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(conditions: Value) -> Value {
        json!({"spec": {"signerName": "example.com/s"}, "status": {"conditions": conditions}})
    }

    #[test]
    fn status_writes_keep_the_approval_conditions() {
        let old = csr(json!([{"type": "Approved", "status": "True", "reason": "R",
            "lastUpdateTime": "2020-01-01T00:00:00Z", "lastTransitionTime": "2020-01-01T00:00:00Z"}]));
        let mut new = csr(json!([
            {"type": "Approved", "status": "True", "reason": "changed"},
            {"type": "Failed", "status": "True"},
        ]));
        CsrStrategy.prepare_for_subresource_update("status", &mut new, &old);
        let list = conditions(&new);
        assert_eq!(list[0], conditions(&old)[0]);
        assert_eq!(list[1]["type"], "Failed");
        assert!(list[1]["lastUpdateTime"].is_string());
        assert!(list[1]["lastTransitionTime"].is_string());
    }

    #[test]
    fn approval_writes_change_only_conditions() {
        let mut old = csr(json!([]));
        old["status"]["certificate"] = json!("Y2VydA==");
        let mut new = csr(json!([{"type": "Approved", "status": "True"}]));
        new["status"]["certificate"] = json!("b3RoZXI=");
        new["spec"]["signerName"] = json!("example.com/other");
        CsrStrategy.prepare_for_update(&mut new, &old);
        CsrStrategy.prepare_for_subresource_update(APPROVAL, &mut new, &old);
        assert_eq!(new["spec"], old["spec"]);
        assert_eq!(new["status"]["certificate"], "Y2VydA==");
        assert_eq!(new["status"]["conditions"][0]["type"], "Approved");
    }

    #[test]
    fn transition_times_carry_over_for_the_same_status() {
        let old = csr(json!([{"type": "Failed", "status": "True",
            "lastTransitionTime": "2020-01-01T00:00:00Z"}]));
        let mut new = csr(json!([{"type": "Failed", "status": "True"}]));
        populate_timestamps(&mut new, &old);
        assert_eq!(
            new["status"]["conditions"][0]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
    }

    #[test]
    fn conditions_default_to_true() {
        let mut obj = csr(json!([{"type": "Approved"}]));
        CsrStrategy.default(&mut obj);
        assert_eq!(obj["status"]["conditions"][0]["status"], "True");
    }

    #[test]
    fn summaries_and_cells_as_upstream_prints_them() {
        assert_eq!(condition_summary(&csr(json!([]))), "Pending");
        let mut obj = csr(json!([{"type": "Approved"}, {"type": "Failed"}]));
        assert_eq!(condition_summary(&obj), "Approved,Failed");
        obj["status"]["certificate"] = json!("Y2VydA==");
        obj["spec"]["username"] = json!("alice");
        obj["spec"]["expirationSeconds"] = json!(3600);
        assert_eq!(condition_summary(&obj), "Approved,Failed,Issued");
        let cells = (CSRS.cells)(&obj);
        assert_eq!(
            cells[1..],
            [
                json!("example.com/s"),
                json!("alice"),
                json!("60m"),
                json!("Approved,Failed,Issued")
            ]
        );
        let denied = csr(json!([{"type": "Approved"}, {"type": "Denied"}]));
        assert_eq!(condition_summary(&denied), "Denied");
    }

    #[test]
    fn a_modified_condition_is_shown_as_upstreams_diff() {
        let a = json!({"type": "Approved", "status": "True", "reason": "A"});
        let b = json!({"type": "Approved", "status": "True", "reason": "B"});
        assert_eq!(
            conditions_diff(&[&a], &[&b]),
            "@@ -2,7 +2,7 @@\n  {\n   \"Type\": \"Approved\",\n   \"Status\": \"True\",\n-  \"Reason\": \"A\",\n+  \"Reason\": \"B\",\n   \"Message\": \"\",\n   \"LastUpdateTime\": null,\n   \"LastTransitionTime\": null\n"
        );
    }
}
