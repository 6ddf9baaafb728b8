//! `coordination.k8s.io/v1`: Leases.

use k8s_openapi::api::coordination::v1 as api;

use super::KindDef;
use super::strategy::Plain;

/// The kinds of `coordination.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![KindDef::new("coordination.k8s.io", "v1", "leases", "Lease", Plain).schema::<api::Lease>()]
}
