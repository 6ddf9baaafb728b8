//! The AdmissionReview v1 wire format: decoding the request the API server posts and encoding
//! the response as upstream reads it (the JSONPatch base64-encoded, as Go encodes `[]byte`; a
//! `status` with a code on every response, as controller-runtime sends).

use base64::Engine as _;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube::core::response::StatusSummary;
use kube::core::{DynamicObject, Status};
use serde_json::{Map, Value, json};

/// The AdmissionReview API version answered unless the request used another one.
pub const ADMISSION_V1: &str = "admission.k8s.io/v1";
/// The older AdmissionReview version, answered in kind when a request uses it.
pub const ADMISSION_V1BETA1: &str = "admission.k8s.io/v1beta1";

/// Decodes an AdmissionReview body into its request; the error says what is wrong with it.
pub fn decode_request(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, String> {
    if body.is_empty() {
        return Err("request body is empty".to_owned());
    }
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_slice(body).map_err(|e| format!("decoding the AdmissionReview: {e}"))?;
    let version = review.types.api_version.as_str();
    if version != ADMISSION_V1 && version != ADMISSION_V1BETA1 {
        return Err(format!(
            "unsupported AdmissionReview apiVersion {version:?}"
        ));
    }
    review
        .try_into()
        .map_err(|_| "the AdmissionReview has no request".to_owned())
}

/// A refusal with `code` and `message` for the request `uid`, when the request could not be
/// handled (controller-runtime's `Errored`).
pub fn errored(uid: &str, code: u16, message: impl Into<String>) -> AdmissionResponse {
    let message = message.into();
    let mut response = AdmissionResponse::invalid(&message);
    response.uid = uid.to_owned();
    response.result = Status {
        status: Some(StatusSummary::Failure),
        code,
        message,
        metadata: Some(Default::default()),
        reason: String::new(),
        details: None,
    };
    response
}

/// The `status` sent for `response`: its result, with code 200 when allowed and 403 when
/// denied unless it has one, `status: Failure` on a denial, and `metadata: {}`.
fn wire_status(response: &AdmissionResponse) -> Status {
    let mut status = response.result.clone();
    if status.code == 0 {
        status.code = if response.allowed { 200 } else { 403 };
    }
    if !response.allowed && status.status.is_none() {
        status.status = Some(StatusSummary::Failure);
    }
    if status.metadata.is_none() {
        status.metadata = Some(Default::default());
    }
    status
}

/// The AdmissionReview (of `api_version`) answering with `response`.
pub fn encode_response(api_version: &str, response: &AdmissionResponse) -> Value {
    let mut body = Map::new();
    body.insert("uid".to_owned(), Value::String(response.uid.clone()));
    body.insert("allowed".to_owned(), Value::Bool(response.allowed));
    body.insert(
        "status".to_owned(),
        serde_json::to_value(wire_status(response)).unwrap_or_else(|_| json!({})),
    );
    if let Some(patch) = response.patch.as_deref().filter(|p| !p.is_empty()) {
        let encoded = base64::engine::general_purpose::STANDARD.encode(patch);
        body.insert("patch".to_owned(), Value::String(encoded));
        body.insert(
            "patchType".to_owned(),
            Value::String("JSONPatch".to_owned()),
        );
    }
    if !response.audit_annotations.is_empty() {
        let annotations: Map<String, Value> = response
            .audit_annotations
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        body.insert("auditAnnotations".to_owned(), Value::Object(annotations));
    }
    if let Some(warnings) = response.warnings.as_ref().filter(|w| !w.is_empty()) {
        body.insert("warnings".to_owned(), json!(warnings));
    }
    let version = if api_version == ADMISSION_V1BETA1 {
        ADMISSION_V1BETA1
    } else {
        ADMISSION_V1
    };
    json!({
        "kind": "AdmissionReview",
        "apiVersion": version,
        "response": Value::Object(body),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CREATE: &str = r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1",
        "request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"ConfigMap"},
        "resource":{"group":"","version":"v1","resource":"configmaps"},
        "requestKind":{"group":"","version":"v1","kind":"ConfigMap"},
        "requestResource":{"group":"","version":"v1","resource":"configmaps"},
        "name":"a","namespace":"ns","operation":"CREATE",
        "userInfo":{"username":"admin","groups":["system:masters"]},
        "object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"k":"v"}},
        "oldObject":null,"dryRun":false,
        "options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}}}"#;

    #[test]
    fn decodes_a_request_and_refuses_garbage() {
        let request = decode_request(CREATE.as_bytes()).expect("decode");
        assert_eq!(request.uid, "u1");
        assert_eq!(request.kind.kind, "ConfigMap");
        assert_eq!(request.types.api_version, ADMISSION_V1);
        assert!(decode_request(b"").is_err());
        assert!(decode_request(b"{").is_err());
        let no_request = r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}"#;
        assert!(decode_request(no_request.as_bytes()).is_err());
        let other = CREATE.replace("admission.k8s.io/v1", "admission.k8s.io/v2");
        assert!(decode_request(other.as_bytes()).is_err());
    }

    #[test]
    fn encodes_patch_as_base64_with_a_status_code() {
        let request = decode_request(CREATE.as_bytes()).expect("decode");
        let mut response = AdmissionResponse::from(&request);
        response.patch = Some(br#"[{"op":"add","path":"/x","value":1}]"#.to_vec());
        response.warnings = Some(vec!["careful".to_owned()]);
        let wire = encode_response(ADMISSION_V1, &response);
        assert_eq!(wire["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(wire["kind"], "AdmissionReview");
        let body = &wire["response"];
        assert_eq!(body["uid"], "u1");
        assert_eq!(body["allowed"], true);
        assert_eq!(body["status"], json!({"metadata": {}, "code": 200}));
        assert_eq!(body["patchType"], "JSONPatch");
        let patch = base64::engine::general_purpose::STANDARD
            .decode(body["patch"].as_str().expect("string"))
            .expect("base64");
        assert_eq!(patch, br#"[{"op":"add","path":"/x","value":1}]"#);
        assert_eq!(body["warnings"], json!(["careful"]));
    }

    #[test]
    fn kube_deny_gets_a_failure_status_with_403() {
        let request = decode_request(CREATE.as_bytes()).expect("decode");
        let response = AdmissionResponse::from(&request).deny("no");
        let wire = encode_response(ADMISSION_V1BETA1, &response);
        assert_eq!(wire["apiVersion"], ADMISSION_V1BETA1);
        assert_eq!(
            wire["response"]["status"],
            json!({"metadata": {}, "status": "Failure", "message": "no", "code": 403})
        );
        let failed = encode_response(ADMISSION_V1, &errored("u", 400, "bad"));
        assert_eq!(wire["response"]["allowed"], false);
        assert_eq!(failed["response"]["status"]["code"], 400);
        assert_eq!(failed["response"]["uid"], "u");
    }
}
