//! JSON → message bytes, driven by the descriptor table: the decoder's conventions in reverse.
//!
//! Fields are written in field-number order, as gogo-protobuf's generated marshalers write
//! them. A field JSON lacks (or holds `null`) is written only when the table marks it
//! `always` (a non-pointer Go field, which gogo writes zero or not), with its zero value;
//! otherwise it is left out, as gogo leaves out nil pointers, slices and maps. JSON members the
//! message does not know are dropped (the Go struct has no place for them).

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::descriptors::{Descriptors, Field, FieldType, Message, Scalar, Special, ValueType};
use super::wire::{put_bytes_field, put_fixed32_field, put_fixed64_field, put_varint_field};
use super::{MAX_DEPTH, ProtobufError};

/// Seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z) since the Unix epoch.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// The error for a JSON value of the wrong shape.
fn shape(field: &str, expected: &'static str) -> ProtobufError {
    ProtobufError::JsonShape {
        field: field.to_owned(),
        expected,
    }
}

/// Encodes `value` as the message `idx` (without a length prefix). `null` encodes the
/// message's zero value. `depth` counts enclosing messages.
pub(crate) fn encode_message(
    d: &Descriptors,
    idx: usize,
    value: &Value,
    depth: usize,
) -> Result<Vec<u8>, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep(MAX_DEPTH));
    }
    let msg = d
        .messages
        .get(idx)
        .ok_or_else(|| ProtobufError::Descriptors(format!("no message #{idx}")))?;
    match msg.special {
        Special::None => {}
        special if special.is_union() => {
            let fields = union_fields(msg, value)?;
            let mut out = Vec::new();
            encode_fields(d, msg, &fields, &[], depth, &mut out)?;
            return Ok(out);
        }
        special => return encode_special(special, value, &msg.full_name),
    }
    let mut out = Vec::new();
    if msg.list_wrapper {
        // A Go named slice: the JSON array is the repeated field `items`.
        let wrapped = match value {
            Value::Array(_) | Value::Null => {
                let mut m = Map::new();
                m.insert("items".to_owned(), value.clone());
                m
            }
            _ => return Err(shape(&msg.full_name, "an array")),
        };
        encode_fields(d, msg, &wrapped, &[], depth, &mut out)?;
        return Ok(out);
    }
    match value {
        Value::Object(obj) => encode_fields(d, msg, obj, &[], depth, &mut out)?,
        Value::Null => encode_fields(d, msg, &Map::new(), &[], depth, &mut out)?,
        _ => return Err(shape(&msg.full_name, "an object")),
    }
    Ok(out)
}

/// Writes the fields of `msg` found in `obj`, in number order. `shadowed` lists the JSON
/// names an enclosing message owns (an inlined struct never sees them, as in Go).
fn encode_fields(
    d: &Descriptors,
    msg: &Message,
    obj: &Map<String, Value>,
    shadowed: &[&str],
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    // Names this message owns directly; inlined children must not take them.
    let mut own: Vec<&str> = Vec::new();
    if msg.fields.iter().any(|f| f.inline) {
        own.extend(shadowed.iter().copied());
        own.extend(
            msg.fields
                .iter()
                .filter(|f| !f.inline && !f.skip)
                .map(|f| f.json.as_str()),
        );
    }
    for field in &msg.fields {
        if field.inline {
            let FieldType::Value(ValueType::Message(child)) = field.ty else {
                return Err(ProtobufError::Descriptors(format!(
                    "{}: inline field {} is not a message",
                    msg.full_name, field.json
                )));
            };
            let child_msg = d
                .messages
                .get(child)
                .ok_or_else(|| ProtobufError::Descriptors(format!("no message #{child}")))?;
            let mut bytes = Vec::new();
            if child_msg.special == Special::None && !child_msg.list_wrapper {
                if depth + 1 > MAX_DEPTH {
                    return Err(ProtobufError::TooDeep(MAX_DEPTH));
                }
                encode_fields(d, child_msg, obj, &own, depth + 1, &mut bytes)?;
            } else {
                bytes = encode_message(d, child, &Value::Null, depth + 1)?;
            }
            put_bytes_field(out, field.number, &bytes);
            continue;
        }
        let value = if field.skip || shadowed.contains(&field.json.as_str()) {
            None
        } else {
            obj.get(&field.json).filter(|v| !v.is_null())
        };
        match field.ty {
            FieldType::Map(key_type, value_type) => {
                if let Some(value) = value {
                    encode_map(d, field, key_type, value_type, value, depth, out)?;
                }
            }
            FieldType::Value(value_type) if field.repeated => {
                let Some(value) = value else { continue };
                let Value::Array(items) = value else {
                    return Err(shape(&field.json, "an array"));
                };
                for item in items {
                    match value_type {
                        ValueType::Scalar(s) => {
                            if item.is_null() && s == Scalar::Bytes {
                                // A nil []byte in a [][]byte is written empty.
                                put_bytes_field(out, field.number, &[]);
                            } else {
                                put_scalar(out, field.number, s, item, &field.json)?;
                            }
                        }
                        ValueType::Message(idx) => {
                            let bytes = encode_message(d, idx, item, depth + 1)?;
                            put_bytes_field(out, field.number, &bytes);
                        }
                    }
                }
            }
            FieldType::Value(value_type) => {
                let value = match value {
                    Some(v) => v,
                    None if field.always => &Value::Null,
                    None => continue,
                };
                match value_type {
                    ValueType::Scalar(s) => {
                        if value.is_null() {
                            put_zero_scalar(out, field.number, s);
                        } else {
                            put_scalar(out, field.number, s, value, &field.json)?;
                        }
                    }
                    ValueType::Message(idx) => {
                        let bytes = encode_message(d, idx, value, depth + 1)?;
                        put_bytes_field(out, field.number, &bytes);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Writes a map field: one entry message (key = 1, value = 2) per key, keys in Go's sorted
/// order. A `null` value is the value type's zero (a `[]byte` value is then left out).
fn encode_map(
    d: &Descriptors,
    field: &Field,
    key_type: Scalar,
    value_type: ValueType,
    value: &Value,
    depth: usize,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let Value::Object(map) = value else {
        return Err(shape(&field.json, "an object"));
    };
    let mut keys: Vec<&String> = map.keys().collect();
    if matches!(key_type, Scalar::String | Scalar::Bytes) {
        keys.sort();
    } else {
        // Go sorts integer keys numerically.
        let mut numeric = Vec::with_capacity(keys.len());
        for k in keys {
            let n: i128 = k
                .parse()
                .map_err(|_| shape(&field.json, "integer map keys"))?;
            numeric.push((n, k));
        }
        numeric.sort();
        keys = numeric.into_iter().map(|(_, k)| k).collect();
    }
    for key in keys {
        let mut entry = Vec::new();
        match key_type {
            Scalar::String | Scalar::Bytes => put_bytes_field(&mut entry, 1, key.as_bytes()),
            s => {
                let n: Value = serde_json::from_str(key)
                    .map_err(|_| shape(&field.json, "integer map keys"))?;
                put_scalar(&mut entry, 1, s, &n, &field.json)?;
            }
        }
        let v = map.get(key.as_str()).unwrap_or(&Value::Null);
        match value_type {
            ValueType::Scalar(Scalar::Bytes) if v.is_null() => {}
            ValueType::Scalar(s) if v.is_null() => put_zero_scalar(&mut entry, 2, s),
            ValueType::Scalar(s) => put_scalar(&mut entry, 2, s, v, &field.json)?,
            ValueType::Message(idx) => {
                let bytes = encode_message(d, idx, v, depth + 1)?;
                put_bytes_field(&mut entry, 2, &bytes);
            }
        }
        put_bytes_field(out, field.number, &entry);
    }
    Ok(())
}

/// Writes a scalar's zero value.
fn put_zero_scalar(out: &mut Vec<u8>, number: u32, s: Scalar) {
    match s {
        Scalar::String | Scalar::Bytes => put_bytes_field(out, number, &[]),
        Scalar::Fixed32 | Scalar::Sfixed32 | Scalar::Float => put_fixed32_field(out, number, 0),
        Scalar::Fixed64 | Scalar::Sfixed64 | Scalar::Double => put_fixed64_field(out, number, 0),
        _ => put_varint_field(out, number, 0),
    }
}

/// An integer JSON number (or a float with no fraction, as Go's decoder accepts) in range.
fn json_integer(v: &Value, field: &str, min: i128, max: i128) -> Result<i128, ProtobufError> {
    let Value::Number(n) = v else {
        return Err(shape(field, "a number"));
    };
    let i = if let Some(i) = n.as_i64() {
        i128::from(i)
    } else if let Some(u) = n.as_u64() {
        i128::from(u)
    } else {
        match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1.8e19 => f as i128,
            _ => return Err(shape(field, "an integer")),
        }
    };
    if i < min || i > max {
        return Err(shape(field, "an integer in range"));
    }
    Ok(i)
}

/// Writes one scalar field from its JSON value.
fn put_scalar(
    out: &mut Vec<u8>,
    number: u32,
    s: Scalar,
    v: &Value,
    field: &str,
) -> Result<(), ProtobufError> {
    const I32: (i128, i128) = (i32::MIN as i128, i32::MAX as i128);
    const I64: (i128, i128) = (i64::MIN as i128, i64::MAX as i128);
    match s {
        Scalar::String => match v {
            Value::String(text) => put_bytes_field(out, number, text.as_bytes()),
            _ => return Err(shape(field, "a string")),
        },
        Scalar::Bytes => match v {
            Value::String(text) => {
                let bytes = decode_base64(text).ok_or_else(|| shape(field, "base64 data"))?;
                put_bytes_field(out, number, &bytes);
            }
            _ => return Err(shape(field, "a base64 string")),
        },
        Scalar::Bool => match v {
            Value::Bool(b) => put_varint_field(out, number, u64::from(*b)),
            _ => return Err(shape(field, "a boolean")),
        },
        // Negative int32 values are sign-extended to ten bytes, as Go writes uint64(int32).
        Scalar::Int32 | Scalar::Enum => {
            let i = json_integer(v, field, I32.0, I32.1)? as i64;
            put_varint_field(out, number, i as u64);
        }
        Scalar::Int64 => {
            let i = json_integer(v, field, I64.0, I64.1)? as i64;
            put_varint_field(out, number, i as u64);
        }
        Scalar::Uint32 => {
            let i = json_integer(v, field, 0, i128::from(u32::MAX))? as u64;
            put_varint_field(out, number, i);
        }
        Scalar::Uint64 => {
            let i = json_integer(v, field, 0, i128::from(u64::MAX))? as u64;
            put_varint_field(out, number, i);
        }
        Scalar::Sint32 => {
            let i = json_integer(v, field, I32.0, I32.1)? as i32;
            put_varint_field(out, number, u64::from(((i << 1) ^ (i >> 31)) as u32));
        }
        Scalar::Sint64 => {
            let i = json_integer(v, field, I64.0, I64.1)? as i64;
            put_varint_field(out, number, ((i << 1) ^ (i >> 63)) as u64);
        }
        Scalar::Fixed32 => {
            let i = json_integer(v, field, 0, i128::from(u32::MAX))? as u32;
            put_fixed32_field(out, number, i);
        }
        Scalar::Sfixed32 => {
            let i = json_integer(v, field, I32.0, I32.1)? as i32;
            put_fixed32_field(out, number, i as u32);
        }
        Scalar::Fixed64 => {
            let i = json_integer(v, field, 0, i128::from(u64::MAX))? as u64;
            put_fixed64_field(out, number, i);
        }
        Scalar::Sfixed64 => {
            let i = json_integer(v, field, I64.0, I64.1)? as i64;
            put_fixed64_field(out, number, i as u64);
        }
        Scalar::Float => {
            let f = v.as_f64().ok_or_else(|| shape(field, "a number"))?;
            put_fixed32_field(out, number, (f as f32).to_bits());
        }
        Scalar::Double => {
            let f = v.as_f64().ok_or_else(|| shape(field, "a number"))?;
            put_fixed64_field(out, number, f.to_bits());
        }
    }
    Ok(())
}

/// Decodes standard base64 as Go's JSON decoder does (padding optional, `\r` and `\n`
/// ignored).
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let cleaned: String = text.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    base64::engine::general_purpose::STANDARD
        .decode(cleaned.as_bytes())
        .ok()
        .or_else(|| {
            base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(cleaned.as_bytes())
                .ok()
        })
}

/// The fields of an apiextensions union message for its JSON form, as the Go type's
/// `UnmarshalJSON` reads it.
fn union_fields(msg: &Message, value: &Value) -> Result<Map<String, Value>, ProtobufError> {
    let mut fields = Map::new();
    let mut put = |number: u32, v: Value| {
        if let Some(name) = msg.json_name(number) {
            fields.insert(name.to_owned(), v);
        }
    };
    match (msg.special, value) {
        (_, Value::Null) => {}
        (Special::SchemaOrArray | Special::SchemaOrStringArray, Value::Object(_)) => {
            put(1, value.clone());
        }
        (Special::SchemaOrArray | Special::SchemaOrStringArray, Value::Array(_)) => {
            put(2, value.clone());
        }
        (Special::SchemaOrBool, Value::Object(_)) => {
            put(1, Value::Bool(true));
            put(2, value.clone());
        }
        (Special::SchemaOrBool, Value::Bool(_)) => put(1, value.clone()),
        (Special::SchemaOrBool, _) => {
            return Err(shape(&msg.full_name, "a boolean or a JSON schema"));
        }
        _ => return Err(shape(&msg.full_name, "a JSON schema or an array")),
    }
    Ok(fields)
}

/// Encodes a message with special JSON handling; `null` is its Go zero value.
fn encode_special(special: Special, v: &Value, name: &str) -> Result<Vec<u8>, ProtobufError> {
    let mut out = Vec::new();
    match special {
        Special::None => {}
        Special::Time | Special::MicroTime => {
            let micro = special == Special::MicroTime;
            let text = match v {
                Value::Null => return Ok(out),
                Value::String(s) => s,
                _ => return Err(shape(name, "an RFC 3339 time string")),
            };
            if text.is_empty() {
                return Ok(out);
            }
            let ts: jiff::Timestamp = text
                .parse()
                .map_err(|_| shape(name, "an RFC 3339 time string"))?;
            let seconds = ts.as_second();
            if seconds == GO_ZERO_TIME_SECONDS && ts.subsec_nanosecond() == 0 {
                return Ok(out); // Go's zero time.Time marshals to nothing
            }
            // Time keeps whole seconds; MicroTime truncates to microseconds.
            let nanos = if micro {
                ts.subsec_nanosecond() / 1000 * 1000
            } else {
                0
            };
            put_varint_field(&mut out, 1, seconds as u64);
            put_varint_field(&mut out, 2, i64::from(nanos) as u64);
        }
        Special::Duration => {
            let nanos = match v {
                Value::Null => 0,
                Value::String(s) => crate::go_duration::parse(s)
                    .ok()
                    .ok_or_else(|| shape(name, "a Go duration string"))?,
                _ => return Err(shape(name, "a duration string")),
            };
            put_varint_field(&mut out, 1, nanos as u64);
        }
        Special::IntOrString => {
            let (kind, int_val, str_val) = match v {
                Value::Null => (0, 0, ""),
                Value::String(s) => (1, 0, s.as_str()),
                Value::Number(_) => (
                    0,
                    json_integer(v, name, i128::from(i32::MIN), i128::from(i32::MAX))? as i32,
                    "",
                ),
                _ => return Err(shape(name, "a number or a string")),
            };
            put_varint_field(&mut out, 1, kind);
            put_varint_field(&mut out, 2, i64::from(int_val) as u64);
            put_bytes_field(&mut out, 3, str_val.as_bytes());
        }
        Special::Quantity => {
            let text = match v {
                Value::Null => "0".to_owned(),
                Value::String(s) => s.clone(),
                Value::Number(n) => number_text(n),
                _ => return Err(shape(name, "a quantity string")),
            };
            put_bytes_field(&mut out, 1, text.as_bytes());
        }
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
            return Err(ProtobufError::Descriptors(format!(
                "{name}: a union message is encoded through its fields"
            )));
        }
        Special::RawExtension | Special::EmbeddedJson => {
            if !v.is_null() {
                let raw = serde_json::to_vec(v)
                    .map_err(|e| ProtobufError::EmbeddedJson(format!("{name}: {e}")))?;
                put_bytes_field(&mut out, 1, &raw);
            }
        }
    }
    Ok(out)
}

/// A JSON number as the text it was written with.
fn number_text(n: &Number) -> String {
    n.to_string()
}
