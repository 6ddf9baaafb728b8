//! Converting JSON values to CEL values.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use serde_json::Value;

/// The deepest JSON value converted; deeper parts (which request decoding already refuses)
/// become `null`.
const MAX_DEPTH: usize = 256;

/// The CEL value of a JSON value: integers as `int` (or `uint` past `int`'s range), other
/// numbers as `double`, objects as maps with string keys.
pub fn to_cel(value: &Value) -> cel::Value {
    convert(value, 0)
}

/// The CEL value of `value` under its structural `schema`: as [`to_cel`], except that the
/// properties the schema declares are keyed as CEL spells them (upstream's escaping:
/// `my-field` is `my__dash__field`, `namespace` is `__namespace__`), and strings of the
/// `duration`, `date`, `date-time` and `byte` formats are durations, timestamps and bytes, so a
/// rule reads them as the type checker typed them. Keys of `additionalProperties` maps and of
/// untyped parts stay as they are.
pub fn to_cel_in(value: &Value, schema: &Value) -> cel::Value {
    convert_in(value, schema, 0)
}

fn convert_in(value: &Value, schema: &Value, depth: usize) -> cel::Value {
    if depth > MAX_DEPTH {
        return cel::Value::Null;
    }
    match value {
        Value::Array(items) => match schema.get("items").filter(|i| i.is_object()) {
            Some(item) => cel::Value::List(Arc::new(
                items
                    .iter()
                    .map(|i| convert_in(i, item, depth + 1))
                    .collect(),
            )),
            None => convert(value, depth),
        },
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let entries: HashMap<Key, cel::Value> = map
                .iter()
                .map(|(k, v)| {
                    let (key, value) = match (properties.and_then(|p| p.get(k)), additional) {
                        (Some(sub), _) => (
                            super::check::schema::escape(k).unwrap_or_else(|| k.clone()),
                            convert_in(v, sub, depth + 1),
                        ),
                        (None, Some(sub)) => (k.clone(), convert_in(v, sub, depth + 1)),
                        (None, None) => (k.clone(), convert(v, depth + 1)),
                    };
                    (Key::String(Arc::new(key)), value)
                })
                .collect();
            cel::Value::Map(Map {
                map: Arc::new(entries),
            })
        }
        Value::String(s) => schema
            .get("format")
            .and_then(Value::as_str)
            .and_then(|format| formatted(s, format))
            .unwrap_or_else(|| cel::Value::String(Arc::new(s.clone()))),
        _ => convert(value, depth),
    }
}

/// The typed value of a string of a format CEL has a type for, as upstream's
/// `UnstructuredToVal` converts it: `duration` to a duration (strfmt's `ParseDuration`),
/// `date` to the timestamp of its midnight in UTC, `date-time` to a timestamp (strfmt's
/// layouts), `byte` to the bytes its base64 encodes. `None` for other formats and for
/// strings that do not parse (schema validation refuses those; the rule sees the string).
fn formatted(s: &str, format: &str) -> Option<cel::Value> {
    use base64::Engine;
    match format {
        "duration" => crate::validation::schema::formats::parse_duration(s)
            .map(|nanos| cel::Value::Duration(chrono::Duration::nanoseconds(nanos))),
        "date" => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .map(|d| cel::Value::Timestamp(d.and_time(chrono::NaiveTime::MIN).and_utc().into())),
        "date-time" | "datetime" => date_time(s).map(cel::Value::Timestamp),
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(s)
            .ok()
            .map(|b| cel::Value::Bytes(Arc::new(b))),
        _ => None,
    }
}

/// A `date-time` string as strfmt's `ParseDateTime` reads it: RFC 3339 (any fraction,
/// an offset with or without its colon), or a local time without an offset taken as UTC
/// (`2006-01-02T15:04:05`, `2006-01-02T15:04Z`, `2006-01-02T15:04`, `2006-01-02 15:04:05`,
/// `2006-01-02`).
fn date_time(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime};
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t);
    }
    if let Ok(t) = DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f%z") {
        return Some(t);
    }
    let local = [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%MZ",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
    ]
    .iter()
    .find_map(|layout| NaiveDateTime::parse_from_str(s, layout).ok())
    .or_else(|| {
        NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .map(|d| d.and_time(NaiveTime::MIN))
    })?;
    Some(local.and_utc().into())
}

fn convert(value: &Value, depth: usize) -> cel::Value {
    if depth > MAX_DEPTH {
        return cel::Value::Null;
    }
    match value {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                cel::Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                cel::Value::UInt(u)
            } else {
                cel::Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(
            items.iter().map(|i| convert(i, depth + 1)).collect(),
        )),
        Value::Object(map) => {
            let entries: HashMap<Key, cel::Value> = map
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), convert(v, depth + 1)))
                .collect();
            cel::Value::Map(Map {
                map: Arc::new(entries),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_keep_their_kind() {
        assert_eq!(to_cel(&json!(3)), cel::Value::Int(3));
        assert_eq!(to_cel(&json!(u64::MAX)), cel::Value::UInt(u64::MAX));
        assert_eq!(to_cel(&json!(1.5)), cel::Value::Float(1.5));
    }

    #[test]
    fn declared_properties_are_keyed_as_cel_spells_them() {
        let schema = json!({"type": "object", "properties": {
            "my-field": {"type": "string"},
            "namespace": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "a.b": {"type": "integer"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}});
        let v = to_cel_in(
            &json!({"my-field": "x", "namespace": "n", "items": [{"a.b": 1}],
                    "labels": {"app-name": "y"}, "undeclared-key": 2}),
            &schema,
        );
        let cel::Value::Map(m) = v else {
            panic!("not a map")
        };
        let get = |m: &Map, k: &str| m.map.get(&Key::String(Arc::new(k.to_string()))).cloned();
        assert_eq!(
            get(&m, "my__dash__field"),
            Some(cel::Value::String(Arc::new("x".into())))
        );
        assert_eq!(
            get(&m, "__namespace__"),
            Some(cel::Value::String(Arc::new("n".into())))
        );
        assert_eq!(get(&m, "undeclared-key"), Some(cel::Value::Int(2)));
        let Some(cel::Value::Map(labels)) = get(&m, "labels") else {
            panic!("labels not a map")
        };
        assert!(
            get(&labels, "app-name").is_some(),
            "map keys stay as they are"
        );
        let Some(cel::Value::List(items)) = get(&m, "items") else {
            panic!("items not a list")
        };
        let cel::Value::Map(item) = &items[0] else {
            panic!("item not a map")
        };
        assert_eq!(get(item, "a__dot__b"), Some(cel::Value::Int(1)));
    }

    #[test]
    fn formatted_strings_become_typed_values() {
        let schema = json!({"type": "object", "properties": {
            "ttl": {"type": "string", "format": "duration"},
            "long": {"type": "string", "format": "duration"},
            "at": {"type": "string", "format": "date-time"},
            "local": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "blob": {"type": "string", "format": "byte"},
            "bad": {"type": "string", "format": "duration"},
            "plain": {"type": "string"}}});
        let v = to_cel_in(
            &json!({"ttl": "1m30.5s", "long": "3 days", "at": "2026-01-02T03:04:05.5+01:00",
                    "local": "2026-01-02T03:04:05", "day": "2026-01-02", "blob": "aGk=",
                    "bad": "forever", "plain": "1s"}),
            &schema,
        );
        let cel::Value::Map(m) = v else {
            panic!("not a map")
        };
        let get = |k: &str| m.map.get(&Key::String(Arc::new(k.to_string()))).cloned();
        assert_eq!(
            get("ttl"),
            Some(cel::Value::Duration(chrono::Duration::milliseconds(90_500)))
        );
        assert_eq!(
            get("long"),
            Some(cel::Value::Duration(chrono::Duration::days(3)))
        );
        let ts = |s: &str| {
            cel::Value::Timestamp(chrono::DateTime::parse_from_rfc3339(s).expect("literal"))
        };
        assert_eq!(get("at"), Some(ts("2026-01-02T02:04:05.5Z")));
        assert_eq!(get("local"), Some(ts("2026-01-02T03:04:05Z")));
        assert_eq!(get("day"), Some(ts("2026-01-02T00:00:00Z")));
        assert_eq!(
            get("blob"),
            Some(cel::Value::Bytes(Arc::new(b"hi".to_vec())))
        );
        assert_eq!(
            get("bad"),
            Some(cel::Value::String(Arc::new("forever".into())))
        );
        assert_eq!(
            get("plain"),
            Some(cel::Value::String(Arc::new("1s".into())))
        );
    }

    #[test]
    fn objects_become_maps() {
        let v = to_cel(&json!({"a": [1, "x"], "b": null}));
        let cel::Value::Map(m) = v else {
            panic!("not a map")
        };
        assert_eq!(m.map.len(), 2);
    }
}
