//! The two shapes of one Event: core `v1` and `events.k8s.io/v1` name the fields of upstream's
//! internal `core.Event` differently (`involvedObject` is `regarding`, `message` is `note`...,
//! upstream's `pkg/apis/events/v1/conversion.go`). [`FIELDS`] is the one table of those names;
//! validation reads it to find a field in either shape, storage to convert between them.

use serde_json::{Map, Value, json};

use super::EventApi;

/// How Go's JSON encoder writes a field whose value is empty, in one API's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Empty {
    /// `omitempty` on a string, number or pointer: left out.
    Omitted,
    /// A `metav1.Time`/`MicroTime` (a struct, never omitted): `null`.
    Null,
    /// A struct (never omitted): `{}`.
    Object,
    /// A string without `omitempty`: `""`.
    Text,
}

/// One field of upstream's internal Event, with its name and empty form in each API.
#[derive(Debug)]
pub(super) struct Field {
    /// The internal (Go) field, named as upstream's validation paths name it.
    pub(super) internal: &'static str,
    /// Its name in core `v1`.
    core: &'static str,
    /// How core `v1` writes it empty.
    core_empty: Empty,
    /// Its name in `events.k8s.io/v1`.
    events: &'static str,
    /// How `events.k8s.io/v1` writes it empty.
    events_empty: Empty,
}

impl Field {
    /// The field's JSON name in `api`'s shape.
    pub(super) fn name(&self, api: EventApi) -> &'static str {
        match api {
            EventApi::Core => self.core,
            EventApi::EventsV1 => self.events,
        }
    }

    /// How `api`'s shape writes the field empty.
    fn empty(&self, api: EventApi) -> Empty {
        match api {
            EventApi::Core => self.core_empty,
            EventApi::EventsV1 => self.events_empty,
        }
    }
}

/// A row of [`FIELDS`].
const fn field(
    internal: &'static str,
    core: &'static str,
    core_empty: Empty,
    events: &'static str,
    events_empty: Empty,
) -> Field {
    Field {
        internal,
        core,
        core_empty,
        events,
        events_empty,
    }
}

/// Every field of an Event besides its type and object metadata, as both APIs serialize it
/// (core `v1`'s and `events.k8s.io/v1`'s Go tags).
pub(super) const FIELDS: &[Field] = &[
    field(
        "involvedObject",
        "involvedObject",
        Empty::Object,
        "regarding",
        Empty::Object,
    ),
    field("reason", "reason", Empty::Omitted, "reason", Empty::Omitted),
    field("message", "message", Empty::Omitted, "note", Empty::Omitted),
    field(
        "source",
        "source",
        Empty::Object,
        "deprecatedSource",
        Empty::Object,
    ),
    field(
        "firstTimestamp",
        "firstTimestamp",
        Empty::Null,
        "deprecatedFirstTimestamp",
        Empty::Null,
    ),
    field(
        "lastTimestamp",
        "lastTimestamp",
        Empty::Null,
        "deprecatedLastTimestamp",
        Empty::Null,
    ),
    field(
        "count",
        "count",
        Empty::Omitted,
        "deprecatedCount",
        Empty::Omitted,
    ),
    field("type", "type", Empty::Omitted, "type", Empty::Omitted),
    field(
        "eventTime",
        "eventTime",
        Empty::Null,
        "eventTime",
        Empty::Null,
    ),
    field("series", "series", Empty::Omitted, "series", Empty::Omitted),
    field("action", "action", Empty::Omitted, "action", Empty::Omitted),
    field(
        "related",
        "related",
        Empty::Omitted,
        "related",
        Empty::Omitted,
    ),
    field(
        "reportingController",
        "reportingComponent",
        Empty::Text,
        "reportingController",
        Empty::Omitted,
    ),
    field(
        "reportingInstance",
        "reportingInstance",
        Empty::Text,
        "reportingInstance",
        Empty::Omitted,
    ),
];

/// The row of the internal field `internal`.
pub(super) fn by_internal(internal: &str) -> Option<&'static Field> {
    FIELDS.iter().find(|f| f.internal == internal)
}

/// The `apiVersion` of `api`'s shape.
pub(super) fn api_version(api: EventApi) -> &'static str {
    match api {
        EventApi::Core => "v1",
        EventApi::EventsV1 => "events.k8s.io/v1",
    }
}

/// Whether Go's `omitempty` leaves the value out (a zero string or number, a nil pointer).
fn go_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// An Event in `from`'s shape in `to`'s: each field renamed, empty fields written as `to`'s
/// Go encoder writes them; the object metadata kept as it is (`managedFields` keep the
/// `apiVersion` of their writer, as upstream's do).
pub(super) fn convert(obj: &Value, from: EventApi, to: EventApi) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(api_version(to)));
    for key in ["kind", "metadata"] {
        if let Some(value) = obj.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    for f in FIELDS {
        let value = obj.get(f.name(from)).filter(|v| !go_empty(v));
        let name = f.name(to).to_string();
        match (value, f.empty(to)) {
            (Some(v), _) => {
                out.insert(name, v.clone());
            }
            (None, Empty::Omitted) => {}
            (None, Empty::Null) => {
                out.insert(name, Value::Null);
            }
            (None, Empty::Object) => {
                out.insert(name, json!({}));
            }
            (None, Empty::Text) => {
                out.insert(name, json!(""));
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body of get-event-eventsv1-as-corev1.json's Event as events.k8s.io/v1 created it
    /// (create-event-eventsv1.json, metadata left out).
    fn events_v1() -> Value {
        json!({
            "kind": "Event",
            "apiVersion": "events.k8s.io/v1",
            "eventTime": "2026-11-23T10:00:00.000000Z",
            "reportingController": "example.com/ctl",
            "reportingInstance": "i1",
            "action": "Test",
            "reason": "Tested",
            "regarding": {"kind": "ConfigMap", "namespace": "ref3", "name": "x", "apiVersion": "v1"},
            "note": "hello",
            "type": "Normal",
            "deprecatedSource": {},
            "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": null,
        })
    }

    #[test]
    fn events_v1_as_core_v1() {
        let core = convert(&events_v1(), EventApi::EventsV1, EventApi::Core);
        assert_eq!(
            core,
            json!({
                "kind": "Event",
                "apiVersion": "v1",
                "involvedObject": {"kind": "ConfigMap", "namespace": "ref3", "name": "x", "apiVersion": "v1"},
                "reason": "Tested",
                "message": "hello",
                "source": {},
                "firstTimestamp": null,
                "lastTimestamp": null,
                "type": "Normal",
                "eventTime": "2026-11-23T10:00:00.000000Z",
                "action": "Test",
                "reportingComponent": "example.com/ctl",
                "reportingInstance": "i1",
            })
        );
        assert_eq!(
            convert(&core, EventApi::Core, EventApi::EventsV1),
            events_v1()
        );
    }

    #[test]
    fn core_v1_as_events_v1() {
        // get-event-corev1-as-eventsv1.json, metadata left out; a count carries over.
        let core = json!({
            "kind": "Event",
            "apiVersion": "v1",
            "involvedObject": {"kind": "ConfigMap", "namespace": "ref3", "name": "x", "apiVersion": "v1"},
            "reason": "Tested",
            "message": "hello",
            "source": {"component": "example.com/ctl"},
            "count": 2,
            "type": "Normal",
            "reportingComponent": "",
        });
        assert_eq!(
            convert(&core, EventApi::Core, EventApi::EventsV1),
            json!({
                "kind": "Event",
                "apiVersion": "events.k8s.io/v1",
                "eventTime": null,
                "reason": "Tested",
                "regarding": {"kind": "ConfigMap", "namespace": "ref3", "name": "x", "apiVersion": "v1"},
                "note": "hello",
                "type": "Normal",
                "deprecatedSource": {"component": "example.com/ctl"},
                "deprecatedFirstTimestamp": null,
                "deprecatedLastTimestamp": null,
                "deprecatedCount": 2,
            })
        );
    }

    #[test]
    fn every_internal_field_has_one_row() {
        for f in FIELDS {
            let rows = FIELDS.iter().filter(|g| g.internal == f.internal).count();
            assert_eq!(rows, 1, "{}", f.internal);
            assert_eq!(by_internal(f.internal).map(|g| g.core), Some(f.core));
        }
        assert!(by_internal("note").is_none());
    }
}
