//! `coordination.k8s.io/v1`: Leases.

use k8s_openapi::api::coordination::v1 as api;

use serde_json::json;

use super::KindDef;
use super::printer::{AGE, Column, Printer, age, text};
use super::strategy::Plain;

/// The kinds of `coordination.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new("coordination.k8s.io", "v1", "leases", "Lease", Plain)
            .schema::<api::Lease>()
            .printer(LEASES),
    ]
}

const LEASES: Printer = Printer {
    columns: &[
        Column::new(
            "Holder",
            "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
        ),
        AGE,
    ],
    cells: |obj| vec![json!(text(obj, "spec.holderIdentity")), age(obj)],
};
