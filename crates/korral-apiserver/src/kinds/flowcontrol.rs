//! `flowcontrol.apiserver.k8s.io`: not served yet.

use super::KindDef;

/// The kinds of `flowcontrol.apiserver.k8s.io`.
pub(super) fn kinds() -> Vec<KindDef> {
    Vec::new()
}
