//! `events.k8s.io/v1`: Events (the same objects as core `v1/Event`, another shape).

use k8s_openapi::api::events::v1 as api;

use super::KindDef;
use super::strategy::Plain;

/// The kinds of `events.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new("events.k8s.io", "v1", "events", "Event", Plain)
            .schema::<api::Event>()
            .short(&["ev"]),
    ]
}
