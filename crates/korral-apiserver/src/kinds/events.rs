//! Events: `events.k8s.io/v1` Events (the same objects as core `v1/Event`, another shape) and
//! the validation both APIs share, upstream's `ValidateEventCreate` / `ValidateEventUpdate`
//! (`pkg/apis/core/validation/events.go`).
//!
//! Upstream validates the internal (core) shape whichever API is written, so its causes name the
//! core fields (`involvedObject.namespace`, `message`, `source`, `firstTimestamp`...) even for
//! an `events.k8s.io/v1` request (`regarding`, `note`, `deprecatedSource`...); only the
//! reporting controller is named after the requested API (`reportingComponent` through core
//! `v1`). Through core `v1` only the legacy rules apply; through `events.k8s.io/v1` the strict
//! ones too (an event time, no deprecated fields, a well-formed series, and on update the
//! event's identity immutable).
//!
//! Both APIs serve one stored collection, as upstream keeps one `events` resource: objects are
//! stored in the core `v1` shape under the core `events` key (upstream stores its internal
//! version, whose fields are core `v1`'s, so core reads need no conversion and field selectors
//! read the stored fields by their core names); `events.k8s.io/v1` converts every read and write
//! (see [`convert`]). Events an older Korral stored under a separate `events.k8s.io` key are
//! left where they are and no longer served.

mod convert;

use k8s_openapi::api::events::v1 as api;

use serde_json::{Value, json};

use super::KindDef;
use super::printer::Printer;
use super::strategy::{Context, Strategy};
use crate::error::Cause;
use crate::registry::ResourceInfo;
use crate::validation::names::{
    dns1123_subdomain, go_quote, invalid_rendered, validate_qualified_name,
};

/// The kinds of `events.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            EventStrategy::EVENTS_V1,
        )
        .schema::<api::Event>()
        .short(&["ev"])
        .printer(EVENTS_V1_PRINTER)
        .fields(EVENTS_V1_FIELDS),
    ]
}

/// Upstream prints `events.k8s.io/v1` Events with the core Event printer (both are its internal
/// Event): the core columns, the cells of the Event in the core shape.
const EVENTS_V1_PRINTER: Printer = Printer {
    columns: super::core::print::EVENTS.columns,
    cells: events_v1_cells,
};

/// The core printer's cells of an `events.k8s.io/v1` Event (one already in the core shape is
/// printed as it is).
fn events_v1_cells(obj: &Value) -> Vec<Value> {
    let core = if crate::meta::api_version(obj) == "v1" {
        obj.clone()
    } else {
        convert::convert(obj, EventApi::EventsV1, EventApi::Core)
    };
    (super::core::print::EVENTS.cells)(&core)
}

/// The field selectors of `events.k8s.io/v1` Events (beyond the object's name and namespace)
/// and the field of upstream's `ToSelectableFields` each one selects on (its field label
/// conversion).
const EVENTS_V1_SELECTABLE: [(&str, &str); 11] = [
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reason", "reason"),
    ("reportingController", "reportingComponent"),
    ("source", "source"),
    ("type", "type"),
];

/// The names of [`EVENTS_V1_SELECTABLE`], as the kind declares them.
const EVENTS_V1_FIELDS: &[&str] = &{
    let mut names = [""; EVENTS_V1_SELECTABLE.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = EVENTS_V1_SELECTABLE[i].0;
        i += 1;
    }
    names
};

/// The field selectors of core `v1` Events (beyond the object's name and namespace): the
/// fields of upstream's `ToSelectableFields`.
pub(crate) const CORE_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

/// The value of a selectable field (by its core `v1` name) of a stored Event, as upstream's
/// `ToSelectableFields` gives it: `source` is the source's component, else the reporting
/// controller.
fn selectable(stored: &Value, field: &str) -> Option<String> {
    let text = |path: &str| crate::selector::json_field(stored, path).unwrap_or_default();
    match field {
        "source" => {
            let component = text("source.component");
            Some(if component.is_empty() {
                text("reportingComponent")
            } else {
                component
            })
        }
        _ if CORE_FIELDS.contains(&field) => Some(text(field)),
        _ => None,
    }
}

const REPORTING_INSTANCE_LENGTH_LIMIT: usize = 128;
const ACTION_LENGTH_LIMIT: usize = 128;
const REASON_LENGTH_LIMIT: usize = 128;
const NOTE_LENGTH_LIMIT: usize = 1024;

/// The API an Event is written through, which picks its field names and its rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventApi {
    /// Core `v1`: the legacy rules only.
    Core,
    /// `events.k8s.io/v1`: the legacy and the strict rules.
    EventsV1,
}

/// The strategy of an Event API.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventStrategy(EventApi);

impl EventStrategy {
    /// Core `v1/Event`.
    pub(crate) const CORE: Self = Self(EventApi::Core);
    /// `events.k8s.io/v1` Event.
    pub(crate) const EVENTS_V1: Self = Self(EventApi::EventsV1);
}

impl Strategy for EventStrategy {
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_event_create(&Event::new(obj, self.0))
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validate_event_update(&Event::new(obj, self.0), &Event::new(old, self.0))
    }

    /// `events.k8s.io/v1` Events live in core `v1`'s `events` collection.
    fn stored_as(&self) -> Option<(&'static str, &'static str)> {
        (self.0 == EventApi::EventsV1).then_some(("", "events"))
    }

    /// The `events.k8s.io/v1` view of a stored (core `v1`) Event. An object already in that
    /// shape (a list item the HTTP layer shows a second time) is left as it is.
    fn convert_stored(&self, _info: &ResourceInfo, stored: &Value) -> Option<Value> {
        (self.0 == EventApi::EventsV1
            && crate::meta::api_version(stored) != convert::api_version(EventApi::EventsV1))
        .then(|| convert::convert(stored, EventApi::Core, EventApi::EventsV1))
    }

    /// An Event in the stored core `v1` shape, written as upstream's encoder writes it (the
    /// empty times `null`, the empty source `{}`, the reporting component `""`). Done when it
    /// is stored, after its managed fields are recorded: those name only what the writer set.
    fn convert_for_storage(&self, obj: Value) -> Value {
        let from = if crate::meta::api_version(&obj) == convert::api_version(EventApi::Core) {
            EventApi::Core
        } else {
            self.0
        };
        convert::convert(&obj, from, EventApi::Core)
    }

    /// Selectable fields read on the stored core `v1` object; an `events.k8s.io/v1` field
    /// label is first converted to its core name, as upstream's field label conversion does.
    fn selectable_field(&self, stored: &Value, field: &str) -> Option<String> {
        let core = match self.0 {
            EventApi::Core => field,
            EventApi::EventsV1 => EVENTS_V1_SELECTABLE
                .iter()
                .find(|(name, _)| *name == field)
                .map(|(_, core)| *core)?,
        };
        selectable(stored, core)
    }
}

/// An Event read as upstream's internal `core.Event`, whichever API's shape it has.
struct Event<'a> {
    obj: &'a Value,
    api: EventApi,
}

impl<'a> Event<'a> {
    fn new(obj: &'a Value, api: EventApi) -> Self {
        Self { obj, api }
    }

    /// The JSON field holding the internal field `internal` (see [`convert::FIELDS`]).
    fn field(&self, internal: &'static str) -> &'static str {
        convert::by_internal(internal).map_or(internal, |f| f.name(self.api))
    }

    fn get(&self, internal: &'static str) -> Option<&'a Value> {
        self.obj.get(self.field(internal)).filter(|v| !v.is_null())
    }

    fn text(&self, internal: &'static str) -> &'a str {
        self.get(internal).and_then(Value::as_str).unwrap_or("")
    }

    fn namespace(&self) -> &'a str {
        self.obj
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn involved_namespace(&self) -> &'a str {
        self.get("involvedObject")
            .and_then(|o| o.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn count(&self) -> i64 {
        self.get("count").and_then(Value::as_i64).unwrap_or(0)
    }

    /// A timestamp field as a time (`None`: Go's zero time).
    fn time(&self, internal: &'static str) -> Option<jiff::Timestamp> {
        time_of(self.get(internal))
    }
}

/// A `metav1.Time`/`MicroTime` JSON value as a time; null, absent, empty or Go's zero time is
/// `None`.
fn time_of(value: Option<&Value>) -> Option<jiff::Timestamp> {
    let t: jiff::Timestamp = value?.as_str()?.parse().ok()?;
    (t != go_zero_time()).then_some(t)
}

/// Go's zero `time.Time`: 0001-01-01T00:00:00Z.
fn go_zero_time() -> jiff::Timestamp {
    jiff::Timestamp::from_second(-62_135_596_800).unwrap_or(jiff::Timestamp::MIN)
}

/// `field.Invalid(path, "", detail)`: upstream's event rules report an empty bad value.
fn invalid_empty(path: &str, detail: &str) -> Cause {
    invalid_rendered(path, "\"\"", detail)
}

/// Upstream's `legacyValidateEvent`: every Event, whichever API.
fn legacy_validate_event(event: &Event) -> Vec<Cause> {
    let mut errs = Vec::new();
    let ns = event.namespace();
    let involved_ns = event.involved_namespace();
    let mismatch = || {
        invalid_rendered(
            "involvedObject.namespace",
            &go_quote(involved_ns),
            "does not match event.namespace",
        )
    };
    if event.time("eventTime").is_none() {
        // Old-style events: the namespaces agree (an empty one only in "" or "default").
        let agree = if involved_ns.is_empty() {
            ns.is_empty() || ns == "default"
        } else {
            ns == involved_ns
        };
        if !agree {
            errs.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
            errs.push(mismatch());
        }
        let controller_field = event.field("reportingController");
        let controller = event.text("reportingController");
        if controller.is_empty() {
            errs.push(Cause::required(controller_field, ""));
        }
        for msg in validate_qualified_name(controller) {
            errs.push(invalid_rendered(
                controller_field,
                &go_quote(controller),
                &msg,
            ));
        }
        for (field, limit) in [
            ("reportingInstance", REPORTING_INSTANCE_LENGTH_LIMIT),
            ("action", ACTION_LENGTH_LIMIT),
            ("reason", REASON_LENGTH_LIMIT),
        ] {
            let value = event.text(field);
            if value.is_empty() {
                errs.push(Cause::required(field, ""));
            }
            if value.len() > limit {
                errs.push(invalid_empty(
                    field,
                    &format!("can have at most {limit} characters"),
                ));
            }
        }
        if event.text("message").len() > NOTE_LENGTH_LIMIT {
            errs.push(invalid_empty(
                "message",
                &format!("can have at most {NOTE_LENGTH_LIMIT} characters"),
            ));
        }
    }
    for msg in dns1123_subdomain(ns) {
        errs.push(invalid_rendered("namespace", &go_quote(ns), &msg));
    }
    errs
}

/// Upstream's `validateV1EventSeries`.
fn validate_series(event: &Event) -> Vec<Cause> {
    let mut errs = Vec::new();
    if let Some(series) = event.get("series") {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            errs.push(invalid_empty("series.count", "should be at least 2"));
        }
        if time_of(series.get("lastObservedTime")).is_none() {
            errs.push(Cause::required("series.lastObservedTime", ""));
        }
    }
    errs
}

/// Upstream's `ValidateEventCreate` (object metadata aside: the store checks it).
fn validate_event_create(event: &Event) -> Vec<Cause> {
    let mut errs = legacy_validate_event(event);
    if event.api == EventApi::Core {
        return errs;
    }
    errs.extend(validate_series(event));
    if event.time("eventTime").is_none() {
        errs.push(Cause::required("eventTime", ""));
    }
    let ty = event.text("type");
    if ty != "Normal" && ty != "Warning" {
        errs.push(invalid_empty("type", &format!("has invalid value: {ty}")));
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if event.time(field).is_some() {
            errs.push(invalid_empty(field, "needs to be unset"));
        }
    }
    if event.count() != 0 {
        errs.push(invalid_empty("count", "needs to be unset"));
    }
    let source = event.get("source");
    let source_text = |f: &str| source.and_then(|s| s.get(f)).and_then(Value::as_str);
    if source_text("component").is_some_and(|s| !s.is_empty())
        || source_text("host").is_some_and(|s| !s.is_empty())
    {
        errs.push(invalid_empty("source", "needs to be unset"));
    }
    errs
}

/// Upstream's `ValidateEventUpdate` (object metadata aside): the legacy rules, and through
/// `events.k8s.io/v1` a changed series checked and the event's identity immutable.
fn validate_event_update(new: &Event, old: &Event) -> Vec<Cause> {
    let mut errs = legacy_validate_event(new);
    if new.api == EventApi::Core {
        return errs;
    }
    if new.get("series") != old.get("series") {
        errs.extend(validate_series(new));
    }
    let immutable = |path: &str, changed: bool, rendered: String| {
        changed.then(|| invalid_rendered(path, &rendered, "field is immutable"))
    };
    let object_ref = |e: &Event, f: &'static str| e.get(f).map(object_reference);
    let text = |path: &'static str| {
        immutable(
            path,
            new.text(path) != old.text(path),
            go_quote(new.text(path)),
        )
    };
    let time = |path: &'static str| {
        immutable(
            path,
            new.time(path) != old.time(path),
            go_time(new.time(path)),
        )
    };
    let involved =
        object_ref(new, "involvedObject").unwrap_or_else(|| object_reference(&json!({})));
    let old_involved =
        object_ref(old, "involvedObject").unwrap_or_else(|| object_reference(&json!({})));
    let source = event_source(new.get("source"));
    // Sub-microsecond changes of the event time are tolerated (clients truncate).
    let micros = |e: &Event| e.time("eventTime").map(|t| t.as_microsecond());
    let related = object_ref(new, "related");
    let checks = [
        immutable("involvedObject", involved != old_involved, involved.clone()),
        text("reason"),
        text("message"),
        immutable(
            "source",
            source != event_source(old.get("source")),
            source.clone(),
        ),
        time("firstTimestamp"),
        time("lastTimestamp"),
        immutable("count", new.count() != old.count(), new.count().to_string()),
        text("reason"),
        text("type"),
        immutable(
            "eventTime",
            micros(new) != micros(old),
            go_time(new.time("eventTime")),
        ),
        text("action"),
        immutable(
            "related",
            related != object_ref(old, "related"),
            related.clone().unwrap_or_else(|| "null".to_string()),
        ),
        immutable(
            "reportingController",
            new.text("reportingController") != old.text("reportingController"),
            go_quote(new.text("reportingController")),
        ),
        text("reportingInstance"),
    ];
    errs.extend(checks.into_iter().flatten());
    errs
}

/// Go's `%#v` of a `core.ObjectReference` (equal references render equally).
fn object_reference(obj: &Value) -> String {
    let s = |f: &str| go_quote(obj.get(f).and_then(Value::as_str).unwrap_or(""));
    format!(
        "core.ObjectReference{{Kind:{}, Namespace:{}, Name:{}, UID:{}, APIVersion:{}, ResourceVersion:{}, FieldPath:{}}}",
        s("kind"),
        s("namespace"),
        s("name"),
        s("uid"),
        s("apiVersion"),
        s("resourceVersion"),
        s("fieldPath")
    )
}

/// Go's `%#v` of a `core.EventSource`.
fn event_source(source: Option<&Value>) -> String {
    let s = |f: &str| {
        go_quote(
            source
                .and_then(|o| o.get(f))
                .and_then(Value::as_str)
                .unwrap_or(""),
        )
    };
    format!(
        "core.EventSource{{Component:{}, Host:{}}}",
        s("component"),
        s("host")
    )
}

/// Go's `time.Time.String()` of a UTC time (`2026-11-23 10:00:00.5 +0000 UTC`).
fn go_time(t: Option<jiff::Timestamp>) -> String {
    let t = t.unwrap_or_else(go_zero_time);
    let base = t.strftime("%Y-%m-%d %H:%M:%S").to_string();
    let nanos = t.subsec_nanosecond();
    let fraction = if nanos == 0 {
        String::new()
    } else {
        format!(".{nanos:09}").trim_end_matches('0').to_string()
    };
    format!("{base}{fraction} +0000 UTC")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_apis_store_in_core_events() {
        let infos = crate::kinds::builtin_resources();
        for group in ["", "events.k8s.io"] {
            let info = infos
                .iter()
                .find(|i| i.group == group && i.resource == "events")
                .expect("events");
            assert_eq!(info.storage_identity(), ("", "events"), "{group}");
        }
    }

    fn create(api: EventApi, obj: Value) -> Vec<String> {
        validate_event_create(&Event::new(&obj, api))
            .iter()
            .map(Cause::summary)
            .collect()
    }

    fn update(api: EventApi, new: Value, old: Value) -> Vec<String> {
        validate_event_update(&Event::new(&new, api), &Event::new(&old, api))
            .iter()
            .map(Cause::summary)
            .collect()
    }

    fn v1_event() -> Value {
        json!({
            "metadata": {"name": "e", "namespace": "ns"},
            "eventTime": "2026-11-23T10:00:00.000000Z",
            "reportingController": "example.com/ctl",
            "reportingInstance": "i1",
            "action": "Test",
            "reason": "Tested",
            "regarding": {"kind": "ConfigMap", "namespace": "ns", "name": "x", "apiVersion": "v1"},
            "note": "hello",
            "type": "Normal",
        })
    }

    fn with(mut obj: Value, field: &str, value: Value) -> Value {
        obj[field] = value;
        obj
    }

    const QUALIFIED: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    #[test]
    fn legacy_core_events() {
        let cases: &[(Value, Vec<String>)] = &[
            (
                json!({"metadata": {"namespace": "ns"}, "involvedObject": {"namespace": "ns"}}),
                vec![],
            ),
            (json!({"metadata": {"namespace": "default"}, "involvedObject": {}}), vec![]),
            (
                json!({"metadata": {"namespace": "ns"}, "involvedObject": {}}),
                vec!["involvedObject.namespace: Invalid value: \"\": does not match event.namespace".into()],
            ),
            (
                json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "b"}}),
                vec!["involvedObject.namespace: Invalid value: \"b\": does not match event.namespace".into()],
            ),
            (
                json!({"metadata": {"namespace": "ns"}, "involvedObject": {"namespace": "ns"}, "eventTime": "2026-11-23T10:00:00.000000Z"}),
                vec![
                    "reportingComponent: Required value".into(),
                    "reportingComponent: Invalid value: \"\": name part must be non-empty".into(),
                    format!("reportingComponent: Invalid value: \"\": {QUALIFIED}"),
                    "reportingInstance: Required value".into(),
                    "action: Required value".into(),
                    "reason: Required value".into(),
                ],
            ),
            (
                json!({"metadata": {"namespace": "kube-system"}, "eventTime": "2026-11-23T10:00:00Z",
                       "reportingComponent": "kubelet", "reportingInstance": "n", "action": "a", "reason": "r",
                       "message": "m".repeat(1025)}),
                vec!["message: Invalid value: \"\": can have at most 1024 characters".into()],
            ),
            (
                // The strict rules are not those of core v1: deprecated fields and any type pass.
                json!({"metadata": {"namespace": "ns"}, "involvedObject": {"namespace": "ns"},
                       "count": 3, "type": "Odd", "source": {"component": "c"}, "firstTimestamp": "2026-11-23T10:00:00Z"}),
                vec![],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(&create(EventApi::Core, obj.clone()), want, "{obj}");
        }
    }

    #[test]
    fn strict_events_k8s_io_creates() {
        assert!(create(EventApi::EventsV1, v1_event()).is_empty());
        let long = "x".repeat(129);
        let cases: &[(Value, Vec<String>)] = &[
            (
                with(v1_event(), "eventTime", Value::Null),
                vec!["eventTime: Required value".into()],
            ),
            (
                with(
                    with(v1_event(), "reportingController", json!("")),
                    "action",
                    json!(long),
                ),
                vec![
                    "reportingController: Required value".into(),
                    "reportingController: Invalid value: \"\": name part must be non-empty".into(),
                    format!("reportingController: Invalid value: \"\": {QUALIFIED}"),
                    "action: Invalid value: \"\": can have at most 128 characters".into(),
                ],
            ),
            (
                with(v1_event(), "note", json!("n".repeat(1025))),
                vec!["message: Invalid value: \"\": can have at most 1024 characters".into()],
            ),
            (
                with(
                    v1_event(),
                    "regarding",
                    json!({"kind": "Node", "name": "n"}),
                ),
                vec![
                    "involvedObject.namespace: Invalid value: \"\": does not match event.namespace"
                        .into(),
                ],
            ),
            (
                with(v1_event(), "type", json!("Odd")),
                vec!["type: Invalid value: \"\": has invalid value: Odd".into()],
            ),
            (
                with(
                    with(
                        with(v1_event(), "deprecatedCount", json!(2)),
                        "deprecatedSource",
                        json!({"host": "h"}),
                    ),
                    "deprecatedLastTimestamp",
                    json!("2026-11-23T10:00:00Z"),
                ),
                vec![
                    "lastTimestamp: Invalid value: \"\": needs to be unset".into(),
                    "count: Invalid value: \"\": needs to be unset".into(),
                    "source: Invalid value: \"\": needs to be unset".into(),
                ],
            ),
            (with(v1_event(), "deprecatedSource", json!({})), vec![]),
            (
                with(v1_event(), "series", json!({"count": 1})),
                vec![
                    "series.count: Invalid value: \"\": should be at least 2".into(),
                    "series.lastObservedTime: Required value".into(),
                ],
            ),
            (
                with(
                    v1_event(),
                    "series",
                    json!({"count": 2, "lastObservedTime": "2026-11-23T10:00:01.000000Z"}),
                ),
                vec![],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(&create(EventApi::EventsV1, obj.clone()), want, "{obj}");
        }
    }

    #[test]
    fn strict_updates_keep_the_identity() {
        let old = v1_event();
        assert!(update(EventApi::EventsV1, old.clone(), old.clone()).is_empty());
        // A series bump is the one expected change.
        let bumped = with(
            old.clone(),
            "series",
            json!({"count": 2, "lastObservedTime": "2026-11-23T10:00:05.000000Z"}),
        );
        assert!(update(EventApi::EventsV1, bumped, old.clone()).is_empty());
        assert_eq!(
            update(
                EventApi::EventsV1,
                with(old.clone(), "series", json!({"count": 1})),
                old.clone()
            ),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
            ]
        );
        // Sub-microsecond changes of the event time are tolerated, others are not.
        let same_micro = with(
            old.clone(),
            "eventTime",
            json!("2026-11-23T10:00:00.000000400Z"),
        );
        assert!(update(EventApi::EventsV1, same_micro, old.clone()).is_empty());
        assert_eq!(
            update(
                EventApi::EventsV1,
                with(old.clone(), "eventTime", json!("2026-11-23T10:00:00.5Z")),
                old.clone()
            ),
            ["eventTime: Invalid value: 2026-11-23 10:00:00.5 +0000 UTC: field is immutable"]
        );
        assert_eq!(
            update(
                EventApi::EventsV1,
                with(old.clone(), "reason", json!("Other")),
                old.clone()
            ),
            [
                "reason: Invalid value: \"Other\": field is immutable",
                "reason: Invalid value: \"Other\": field is immutable",
            ]
        );
        let moved = with(
            old.clone(),
            "regarding",
            json!({"kind": "ConfigMap", "namespace": "ns", "name": "y", "apiVersion": "v1"}),
        );
        assert_eq!(
            update(EventApi::EventsV1, moved, old.clone()),
            [
                "involvedObject: Invalid value: core.ObjectReference{Kind:\"ConfigMap\", Namespace:\"ns\", Name:\"y\", UID:\"\", APIVersion:\"v1\", ResourceVersion:\"\", FieldPath:\"\"}: field is immutable"
            ]
        );
        assert_eq!(
            update(
                EventApi::EventsV1,
                with(
                    with(old.clone(), "note", json!("bye")),
                    "related",
                    json!({"kind": "Pod"})
                ),
                old.clone()
            ),
            [
                "message: Invalid value: \"bye\": field is immutable",
                "related: Invalid value: core.ObjectReference{Kind:\"Pod\", Namespace:\"\", Name:\"\", UID:\"\", APIVersion:\"\", ResourceVersion:\"\", FieldPath:\"\"}: field is immutable",
            ]
        );
        // Through core v1 only the legacy rules hold: anything may change.
        let core_old = json!({"metadata": {"namespace": "ns"}, "involvedObject": {"namespace": "ns"}, "reason": "A"});
        let core_new = with(core_old.clone(), "reason", json!("B"));
        assert!(update(EventApi::Core, core_new, core_old).is_empty());
    }

    #[test]
    fn go_times() {
        assert_eq!(go_time(None), "0001-01-01 00:00:00 +0000 UTC");
        assert_eq!(
            go_time(time_of(Some(&json!("2026-11-23T10:00:00.123000Z")))),
            "2026-11-23 10:00:00.123 +0000 UTC"
        );
        assert_eq!(time_of(Some(&json!("0001-01-01T00:00:00Z"))), None);
    }
}
