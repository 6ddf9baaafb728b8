//! Message bytes → JSON, driven by the descriptor table, with Kubernetes' JSON conventions.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::descriptors::{Descriptors, Field, FieldType, Message, Scalar, Special, ValueType};
use super::wire::{Reader, WireValue};
use super::{MAX_DEPTH, ProtobufError};

/// Seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z) since the Unix epoch.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// The accumulated JSON of one field while its message is decoded.
enum Slot {
    /// A singular field (the last occurrence wins).
    One(Value),
    /// A repeated field.
    Many(Vec<Value>),
    /// A map field.
    Map(Map<String, Value>),
}

/// Decodes the message `idx` from `bytes` to JSON. `depth` counts enclosing messages.
pub(crate) fn decode_message(
    d: &Descriptors,
    idx: usize,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep(MAX_DEPTH));
    }
    let msg = d
        .messages
        .get(idx)
        .ok_or_else(|| ProtobufError::Descriptors(format!("no message #{idx}")))?;
    match msg.special {
        Special::None => {}
        Special::Time => return decode_time(bytes, false),
        Special::MicroTime => return decode_time(bytes, true),
        Special::Duration => return decode_duration(bytes),
        Special::IntOrString => return decode_int_or_string(bytes),
        Special::Quantity => return decode_quantity(bytes),
        Special::RawExtension => return decode_raw_extension(d, bytes, depth),
        Special::EmbeddedJson => return decode_embedded_json(bytes),
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {}
    }

    // Only fields present on the wire get a slot, so memory follows the input size.
    let mut slots: BTreeMap<usize, Slot> = BTreeMap::new();
    let mut reader = Reader::new(bytes);
    while let Some((number, wire)) = reader.read_field()? {
        let Some(pos) = msg.field_index(number) else {
            continue; // unknown field: skipped for forward compatibility
        };
        let Some(field) = msg.fields.get(pos) else {
            continue;
        };
        match field.ty {
            FieldType::Map(key_type, value_type) => {
                let WireValue::Bytes(entry) = wire else {
                    return Err(mismatch(field, &wire));
                };
                let (key, value) = decode_map_entry(d, key_type, value_type, entry, depth)?;
                match slots.entry(pos).or_insert_with(|| Slot::Map(Map::new())) {
                    Slot::Map(map) => {
                        map.insert(key, value);
                    }
                    _ => return Err(ProtobufError::Descriptors("map slot".to_owned())),
                }
            }
            FieldType::Value(value_type) if field.repeated => {
                let values = match slots.entry(pos).or_insert_with(|| Slot::Many(Vec::new())) {
                    Slot::Many(values) => values,
                    _ => return Err(ProtobufError::Descriptors("repeated slot".to_owned())),
                };
                match (value_type, wire) {
                    (ValueType::Scalar(s), WireValue::Bytes(packed)) if is_packable(s) => {
                        decode_packed(s, packed, values)?;
                    }
                    _ => values.push(decode_value(d, field, value_type, wire, depth)?),
                }
            }
            FieldType::Value(value_type) => {
                let value = decode_value(d, field, value_type, wire, depth)?;
                slots.insert(pos, Slot::One(value));
            }
        }
    }

    if msg.list_wrapper {
        // A Go named slice: JSON is the array itself.
        let items = msg
            .fields
            .iter()
            .position(|f| f.number == 1)
            .and_then(|pos| slots.remove(&pos));
        return Ok(match items {
            Some(Slot::Many(values)) => Value::Array(values),
            Some(Slot::One(value)) => Value::Array(vec![value]),
            _ => Value::Array(Vec::new()),
        });
    }

    let mut object = Map::new();
    let mut inlined: Vec<Map<String, Value>> = Vec::new();
    for (pos, slot) in slots {
        let Some(field) = msg.fields.get(pos) else {
            continue;
        };
        if field.skip {
            continue;
        }
        let value = match slot {
            Slot::One(v) => {
                if field.omit_zero && is_zero(&v) {
                    continue;
                }
                v
            }
            Slot::Many(values) => Value::Array(values),
            Slot::Map(map) => Value::Object(map),
        };
        if field.inline {
            match value {
                Value::Object(map) => inlined.push(map),
                Value::Null => {}
                _ => {
                    return Err(ProtobufError::Descriptors(format!(
                        "{}: inline field {} is not an object",
                        msg.full_name, field.json
                    )));
                }
            }
        } else {
            object.insert(field.json.clone(), value);
        }
    }
    // As Go's encoding/json: fields of embedded structs never shadow the outer ones.
    for map in inlined {
        for (k, v) in map {
            object.entry(k).or_insert(v);
        }
    }
    if msg.special.is_union() {
        return Ok(union_json(msg, object));
    }
    Ok(Value::Object(object))
}

/// The JSON form of an apiextensions union message from its decoded fields, as the Go
/// type's `MarshalJSON` writes it.
fn union_json(msg: &Message, mut fields: Map<String, Value>) -> Value {
    let mut take = |number: u32| {
        msg.json_name(number)
            .and_then(|name| fields.remove(name))
            .filter(|v| !v.is_null())
    };
    let non_empty = |v: &Option<Value>| {
        v.as_ref()
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    };
    match msg.special {
        Special::SchemaOrArray => {
            let (schema, schemas) = (take(1), take(2));
            if non_empty(&schemas) {
                schemas.unwrap_or(Value::Null)
            } else {
                schema.unwrap_or(Value::Null)
            }
        }
        Special::SchemaOrBool => {
            let (allows, schema) = (take(1), take(2));
            schema.unwrap_or_else(|| Value::Bool(allows.and_then(|v| v.as_bool()).unwrap_or(false)))
        }
        Special::SchemaOrStringArray => {
            let (schema, property) = (take(1), take(2));
            if non_empty(&property) {
                property.unwrap_or(Value::Null)
            } else {
                schema.unwrap_or(Value::Null)
            }
        }
        _ => Value::Object(fields),
    }
}

/// The error for a field carried with the wrong wire type.
fn mismatch(field: &Field, wire: &WireValue<'_>) -> ProtobufError {
    ProtobufError::WireTypeMismatch {
        field: field.json.clone(),
        wire_type: wire.wire_type(),
    }
}

/// Whether repeated values of `s` may be packed.
fn is_packable(s: Scalar) -> bool {
    !matches!(s, Scalar::String | Scalar::Bytes)
}

/// Decodes a packed run of scalars.
fn decode_packed(s: Scalar, bytes: &[u8], out: &mut Vec<Value>) -> Result<(), ProtobufError> {
    let mut r = Reader::new(bytes);
    while !r.at_end() {
        let wire = match s {
            Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => {
                WireValue::Fixed32(r.read_fixed32()?)
            }
            Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => {
                WireValue::Fixed64(r.read_fixed64()?)
            }
            _ => WireValue::Varint(r.read_varint()?),
        };
        out.push(scalar_json(s, wire).ok_or(ProtobufError::WireTypeMismatch {
            field: "packed".to_owned(),
            wire_type: 2,
        })??);
    }
    Ok(())
}

/// Decodes one value of a plain (non-map) field.
fn decode_value(
    d: &Descriptors,
    field: &Field,
    value_type: ValueType,
    wire: WireValue<'_>,
    depth: usize,
) -> Result<Value, ProtobufError> {
    match value_type {
        ValueType::Scalar(s) => scalar_json(s, wire).ok_or_else(|| mismatch(field, &wire))?,
        ValueType::Message(idx) => match wire {
            WireValue::Bytes(bytes) => decode_message(d, idx, bytes, depth + 1),
            _ => Err(mismatch(field, &wire)),
        },
    }
}

/// Decodes one map entry (key = 1, value = 2); absent parts take their zero values.
fn decode_map_entry(
    d: &Descriptors,
    key_type: Scalar,
    value_type: ValueType,
    entry: &[u8],
    depth: usize,
) -> Result<(String, Value), ProtobufError> {
    let mut key: Option<Value> = None;
    let mut value: Option<Value> = None;
    let mut r = Reader::new(entry);
    while let Some((number, wire)) = r.read_field()? {
        let bad = || ProtobufError::WireTypeMismatch {
            field: format!("map entry field {number}"),
            wire_type: wire.wire_type(),
        };
        match number {
            1 => key = Some(scalar_json(key_type, wire).ok_or_else(bad)??),
            2 => {
                value = Some(match value_type {
                    ValueType::Scalar(s) => scalar_json(s, wire).ok_or_else(bad)??,
                    ValueType::Message(idx) => match wire {
                        WireValue::Bytes(bytes) => decode_message(d, idx, bytes, depth + 1)?,
                        _ => return Err(bad()),
                    },
                })
            }
            _ => {}
        }
    }
    let key = match key {
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(), // Go encodes integer map keys as strings
        None => match zero_scalar(key_type) {
            Value::String(s) => s,
            other => other.to_string(),
        },
    };
    let value = match (value, value_type) {
        (Some(v), _) => v,
        (None, ValueType::Scalar(s)) => zero_scalar(s),
        (None, ValueType::Message(idx)) => decode_message(d, idx, &[], depth + 1)?,
    };
    Ok((key, value))
}

/// The JSON of a scalar's zero value.
fn zero_scalar(s: Scalar) -> Value {
    match s {
        Scalar::String | Scalar::Bytes => Value::String(String::new()),
        Scalar::Bool => Value::Bool(false),
        _ => Value::from(0),
    }
}

/// Whether a JSON value is Go's zero value for its scalar (what `omitempty` drops).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    }
}

/// The JSON of a scalar, or `None` when the wire type does not fit the scalar.
fn scalar_json(s: Scalar, wire: WireValue<'_>) -> Option<Result<Value, ProtobufError>> {
    let v = match (s, wire) {
        (Scalar::String, WireValue::Bytes(b)) => {
            // Go does not validate UTF-8 here; its JSON encoder substitutes U+FFFD.
            Value::String(String::from_utf8_lossy(b).into_owned())
        }
        (Scalar::Bytes, WireValue::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Scalar::Bool, WireValue::Varint(v)) => Value::Bool(v != 0),
        // Truncation to 32 bits is the protobuf rule for int32 / enum / uint32.
        (Scalar::Int32 | Scalar::Enum, WireValue::Varint(v)) => Value::from(v as u32 as i32),
        (Scalar::Int64, WireValue::Varint(v)) => Value::from(v as i64),
        (Scalar::Uint32, WireValue::Varint(v)) => Value::from(v as u32),
        (Scalar::Uint64, WireValue::Varint(v)) => Value::from(v),
        (Scalar::Sint32, WireValue::Varint(v)) => {
            let v = v as u32;
            Value::from(((v >> 1) as i32) ^ -((v & 1) as i32))
        }
        (Scalar::Sint64, WireValue::Varint(v)) => {
            Value::from(((v >> 1) as i64) ^ -((v & 1) as i64))
        }
        (Scalar::Fixed32, WireValue::Fixed32(v)) => Value::from(v),
        (Scalar::Sfixed32, WireValue::Fixed32(v)) => Value::from(v as i32),
        (Scalar::Fixed64, WireValue::Fixed64(v)) => Value::from(v),
        (Scalar::Sfixed64, WireValue::Fixed64(v)) => Value::from(v as i64),
        (Scalar::Float, WireValue::Fixed32(v)) => {
            return Some(float_json(f64::from(f32::from_bits(v))));
        }
        (Scalar::Double, WireValue::Fixed64(v)) => return Some(float_json(f64::from_bits(v))),
        _ => return None,
    };
    Some(Ok(v))
}

/// A finite float as JSON; Go's encoder rejects NaN and infinities too.
fn float_json(f: f64) -> Result<Value, ProtobufError> {
    // Go's encoding/json writes integral floats below 1e21 without a fraction (`1`, not
    // `1.0`); those that fit an i64 become JSON integers here.
    if f.fract() == 0.0 && f.abs() < 9.0e18 {
        return Ok(Value::from(f as i64));
    }
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or(ProtobufError::InvalidValue(
            "non-finite floating-point number",
        ))
}

/// Reads the varint fields of a small well-known message into `(number, value)` pairs,
/// rejecting other wire types for the listed numbers.
fn varint_fields(bytes: &[u8], numbers: &[u32]) -> Result<Vec<(u32, u64)>, ProtobufError> {
    let mut out = Vec::new();
    let mut r = Reader::new(bytes);
    while let Some((number, wire)) = r.read_field()? {
        if !numbers.contains(&number) {
            continue;
        }
        match wire {
            WireValue::Varint(v) => out.push((number, v)),
            other => {
                return Err(ProtobufError::WireTypeMismatch {
                    field: format!("field {number}"),
                    wire_type: other.wire_type(),
                });
            }
        }
    }
    Ok(out)
}

/// `Time` (seconds only, as upstream) or `MicroTime` (microseconds) → RFC 3339, or `null`.
fn decode_time(bytes: &[u8], micro: bool) -> Result<Value, ProtobufError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    let mut seconds: i64 = 0;
    let mut nanos: i32 = 0;
    for (number, v) in varint_fields(bytes, &[1, 2])? {
        if number == 1 {
            seconds = v as i64;
        } else {
            nanos = v as u32 as i32;
        }
    }
    // Upstream drops nanoseconds of Time and truncates MicroTime to microseconds.
    let sub_micros = if micro {
        i128::from(nanos / 1000) * 1000
    } else {
        0
    };
    let total = i128::from(seconds) * 1_000_000_000 + sub_micros;
    if total == i128::from(GO_ZERO_TIME_SECONDS) * 1_000_000_000 {
        return Ok(Value::Null); // Go's zero time.Time marshals as null
    }
    let ts = jiff::Timestamp::from_nanosecond(total)
        .map_err(|_| ProtobufError::InvalidValue("time out of range"))?;
    let dt = ts.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    if dt.year() < 0 {
        return Err(ProtobufError::InvalidValue("time out of range"));
    }
    let base = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    Ok(Value::String(if micro {
        format!("{base}.{:06}Z", dt.subsec_nanosecond() / 1000)
    } else {
        format!("{base}Z")
    }))
}

/// `Duration` (int64 nanoseconds in field 1) → Go's `time.Duration.String()`.
fn decode_duration(bytes: &[u8]) -> Result<Value, ProtobufError> {
    let mut nanos: i64 = 0;
    for (_, v) in varint_fields(bytes, &[1])? {
        nanos = v as i64;
    }
    Ok(Value::String(crate::go_duration::format(nanos)))
}

/// `IntOrString` (type = 1, intVal = 2, strVal = 3) → number or string.
fn decode_int_or_string(bytes: &[u8]) -> Result<Value, ProtobufError> {
    let mut kind: u64 = 0;
    let mut int_val: i32 = 0;
    let mut str_val = String::new();
    let mut r = Reader::new(bytes);
    while let Some((number, wire)) = r.read_field()? {
        match (number, wire) {
            (1, WireValue::Varint(v)) => kind = v,
            (2, WireValue::Varint(v)) => int_val = v as u32 as i32,
            (3, WireValue::Bytes(b)) => str_val = String::from_utf8_lossy(b).into_owned(),
            (1..=3, other) => {
                return Err(ProtobufError::WireTypeMismatch {
                    field: format!("IntOrString field {number}"),
                    wire_type: other.wire_type(),
                });
            }
            _ => {}
        }
    }
    match kind {
        0 => Ok(Value::from(int_val)),
        1 => Ok(Value::String(str_val)),
        _ => Err(ProtobufError::InvalidValue("impossible IntOrString.Type")),
    }
}

/// The bytes of field 1 of a single-field wrapper message, if present.
fn single_bytes_field(bytes: &[u8], what: &str) -> Result<Option<Vec<u8>>, ProtobufError> {
    let mut found = None;
    let mut r = Reader::new(bytes);
    while let Some((number, wire)) = r.read_field()? {
        match (number, wire) {
            (1, WireValue::Bytes(b)) => found = Some(b.to_vec()),
            (1, other) => {
                return Err(ProtobufError::WireTypeMismatch {
                    field: format!("{what} field 1"),
                    wire_type: other.wire_type(),
                });
            }
            _ => {}
        }
    }
    Ok(found)
}

/// `Quantity` (string = 1) → its string; an absent string is the zero quantity `"0"`.
fn decode_quantity(bytes: &[u8]) -> Result<Value, ProtobufError> {
    Ok(Value::String(
        match single_bytes_field(bytes, "Quantity")? {
            Some(b) => String::from_utf8_lossy(&b).into_owned(),
            None => "0".to_owned(),
        },
    ))
}

/// `RawExtension` (raw = 1): embedded JSON, or an embedded `k8s\0` protobuf object.
fn decode_raw_extension(
    d: &Descriptors,
    bytes: &[u8],
    depth: usize,
) -> Result<Value, ProtobufError> {
    let Some(raw) = single_bytes_field(bytes, "RawExtension")? else {
        return Ok(Value::Null);
    };
    if raw.starts_with(super::MAGIC) {
        return super::decode_envelope(d, &raw, depth + 1, None);
    }
    embedded_json(&raw)
}

/// `FieldsV1` or apiextensions' `JSON` (raw = 1): the embedded JSON.
fn decode_embedded_json(bytes: &[u8]) -> Result<Value, ProtobufError> {
    match single_bytes_field(bytes, "embedded JSON")? {
        Some(raw) => embedded_json(&raw),
        None => Ok(Value::Null),
    }
}

/// Parses embedded JSON bytes; empty means `null`.
fn embedded_json(raw: &[u8]) -> Result<Value, ProtobufError> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(raw).map_err(|e| ProtobufError::EmbeddedJson(e.to_string()))
}
