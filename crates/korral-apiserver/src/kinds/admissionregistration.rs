//! `admissionregistration.k8s.io`: not served yet.

use super::KindDef;

/// The kinds of `admissionregistration.k8s.io`.
pub(super) fn kinds() -> Vec<KindDef> {
    Vec::new()
}
