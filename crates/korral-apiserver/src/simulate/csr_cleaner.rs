//! kube-controller-manager's CSR cleaner (`csrcleaner`): CertificateSigningRequests are
//! deleted once they are old enough, as upstream's criteria say:
//!
//! * pending (no conditions) for more than 24 hours since creation;
//! * `Approved` with an issued certificate for more than an hour since the approval's
//!   `lastUpdateTime`, or whose certificate's `notAfter` has passed;
//! * `Denied` or `Failed` for more than an hour since that condition's `lastUpdateTime`.
//!
//! Upstream checks every request hourly; here a request is looked at when it changes and
//! again when its deadline comes, so it goes at its deadline rather than up to an hour later.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use serde_json::Value;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::access::{self, Actor};
use super::csr_signing::{GROUP, RESOURCE};
use crate::error::ApiError;
use crate::meta;
use crate::objects::Objects;
use crate::storage::object_key;

/// How long an approved and issued request is kept.
const APPROVED_EXPIRATION: SignedDuration = SignedDuration::from_hours(1);
/// How long a denied (or failed) request is kept.
const DENIED_EXPIRATION: SignedDuration = SignedDuration::from_hours(1);
/// How long a request nobody handled is kept.
const PENDING_EXPIRATION: SignedDuration = SignedDuration::from_hours(24);

/// Deletes the request `name` if it is past its deadline; otherwise how long until it is.
pub(crate) async fn reconcile(objects: &Objects, name: &str) -> Result<Option<Duration>, ApiError> {
    let Some(csr) = objects
        .storage()
        .get(&object_key(GROUP, RESOURCE, None, name))
    else {
        return Ok(None);
    };
    if meta::is_deleting(&csr) {
        return Ok(None);
    }
    let Some(deadline) = deadline(&csr) else {
        return Ok(None);
    };
    let now = Timestamp::now();
    if deadline >= now {
        let wait = now.duration_until(deadline).unsigned_abs();
        // Just past the deadline, so the next look finds the request old enough.
        return Ok(Some(wait + Duration::from_millis(1)));
    }
    let info = access::info(objects, GROUP, "v1", RESOURCE)?;
    access::delete(objects, Actor::CertificateSigner, &info, &csr).await?;
    Ok(None)
}

/// When a request becomes old enough to delete (the earliest of the criteria that apply), or
/// `None` when none ever will (an approved request still waiting for its certificate).
pub(crate) fn deadline(csr: &Value) -> Option<Timestamp> {
    let conditions = meta::path(csr, "status.conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if conditions.is_empty() {
        let created = access::timestamp(csr.pointer("/metadata/creationTimestamp"))?;
        return created.checked_add(PENDING_EXPIRATION).ok();
    }
    let certificate = meta::path(csr, "status.certificate")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty());
    let mut earliest: Option<Timestamp> = None;
    let mut consider = |t: Option<Timestamp>| {
        if let Some(t) = t {
            earliest = Some(earliest.map_or(t, |e| e.min(t)));
        }
    };
    for condition in conditions {
        let updated = access::timestamp(condition.get("lastUpdateTime"));
        match condition.get("type").and_then(Value::as_str) {
            Some("Approved") if certificate.is_some() => {
                consider(updated.and_then(|t| t.checked_add(APPROVED_EXPIRATION).ok()));
                consider(certificate.and_then(not_after));
            }
            Some("Denied" | "Failed") => {
                consider(updated.and_then(|t| t.checked_add(DENIED_EXPIRATION).ok()));
            }
            _ => {}
        }
    }
    earliest
}

/// The `notAfter` of the first certificate of a base64-encoded PEM bundle.
fn not_after(certificate: &str) -> Option<Timestamp> {
    use base64::Engine as _;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(certificate)
        .ok()?;
    let der = CertificateDer::from_pem_slice(&pem).ok()?;
    let (_, cert) = X509Certificate::from_der(&der).ok()?;
    Timestamp::from_second(cert.validity().not_after.timestamp()).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().expect("timestamp")
    }

    #[test]
    fn deadlines_follow_upstreams_criteria() {
        let pending = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(deadline(&pending), Some(at("2026-01-02T00:00:00Z")));
        let denied = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"conditions": [{"type": "Denied", "status": "True",
                "lastUpdateTime": "2026-01-01T05:00:00Z"}]}});
        assert_eq!(deadline(&denied), Some(at("2026-01-01T06:00:00Z")));
        let failed = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True", "lastUpdateTime": "2026-01-01T05:00:00Z"},
            {"type": "Failed", "status": "True", "lastUpdateTime": "2026-01-01T07:00:00Z"}]}});
        assert_eq!(deadline(&failed), Some(at("2026-01-01T08:00:00Z")));
        // Approved without a certificate yet: kept.
        let waiting = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True", "lastUpdateTime": "2026-01-01T05:00:00Z"}]}});
        assert_eq!(deadline(&waiting), None);
        // A certificate that cannot be read leaves the approval's hour.
        let issued = json!({"status": {"certificate": "bm90IGEgY2VydA==", "conditions": [
            {"type": "Approved", "status": "True", "lastUpdateTime": "2026-01-01T05:00:00Z"}]}});
        assert_eq!(deadline(&issued), Some(at("2026-01-01T06:00:00Z")));
    }
}
