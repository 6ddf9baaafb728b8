//! Kubernetes protobuf bodies (`application/vnd.kubernetes.protobuf`): requests decoded to
//! JSON, responses encoded from JSON.
//!
//! Typed client-go clientsets (kubectl ≥ 1.32 for `kubectl create <kind>`, `create token`,
//! `auth can-i`, ...) send objects as protobuf: the magic `k8s\0`, then a `runtime.Unknown`
//! envelope (typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
//! contentType = 4) whose `raw` is the object message. [`decode_object`] turns such a body
//! into the JSON object a JSON client would have sent for the same Go value, so the rest of
//! the server only ever sees JSON.
//!
//! The message layouts come from `descriptors.txt`, generated from the upstream
//! `generated.proto` files and Go struct tags by `tools/gen_protobuf_descriptors.py`
//! (regeneration steps are in its header). Kubernetes JSON conventions applied:
//!
//! - apiextensions' `JSON` → the embedded JSON; its `JSONSchemaPropsOr{Array,Bool,StringArray}`
//!   unions → the schema object or the array/boolean, as their Go `MarshalJSON` choose.
//! - `meta.v1.Time` → RFC 3339 seconds (`null` when empty), `MicroTime` → RFC 3339 with
//!   microseconds, `meta.v1.Duration` → Go duration string, `IntOrString` → number or
//!   string, `Quantity` → string, `RawExtension` / `FieldsV1` → the embedded JSON,
//!   `bytes` → base64, maps → objects, enums → numbers, Go named slices → arrays.
//! - Embedded Go structs (`VolumeSource` in `Volume`, ...) are inlined into the parent.
//! - gogo-protobuf writes non-pointer scalars even when zero; those the Go type tags
//!   `omitempty` are dropped when zero, as Go's JSON encoder would. Pointer (`optional`
//!   with presence) scalars are kept whenever present, zero or not.
//! - Unknown field numbers are skipped; repeated scalars are accepted packed or unpacked.
//!
//! The encoder ([`encode_object`], [`encode_list`], [`encode_watch_event`]) applies the same
//! conventions in reverse for responses to clients that prefer protobuf: RFC 3339 times →
//! `{seconds, nanos}`, duration strings → nanoseconds, IntOrString → `{type, intVal,
//! strVal}`, embedded JSON → raw bytes, base64 → bytes, objects → map entries in sorted key
//! order, inlined structs re-nested, arrays → named-slice wrappers. Fields are written in
//! number order, non-pointer Go fields (`always` in the table) even when zero, as gogo writes
//! them; JSON members the message does not know are dropped. The envelope is upstream's:
//! `k8s\0`, then `runtime.Unknown{typeMeta, raw, contentEncoding: "", contentType: ""}`.
//!
//! Malformed input (truncation, bad varints, lengths past the end, wire-type mismatches,
//! nesting deeper than [`MAX_DEPTH`]) yields a [`ProtobufError`]; nothing panics, recursion
//! is bounded, and memory grows only with the input.

mod decode;
mod descriptors;
mod encode;
mod wire;

#[cfg(test)]
mod encode_tests;
#[cfg(test)]
mod extension_tests;
#[cfg(test)]
pub(crate) mod tests;

use serde_json::{Map, Value};

use self::descriptors::Descriptors;
use self::wire::{Reader, WireValue};

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The 4-byte prefix of every Kubernetes protobuf object.
pub const MAGIC: &[u8] = b"k8s\0";

/// Deepest message nesting accepted (the envelope counts as one level).
pub const MAX_DEPTH: usize = 100;

/// Why a protobuf body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    /// The body does not start with `k8s\0`.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    MissingMagic,
    /// The body holds only the prefix.
    #[error("empty body")]
    Empty,
    /// The data ends inside a value.
    #[error("unexpected end of protobuf data")]
    Truncated,
    /// A varint is longer than 64 bits.
    #[error("protobuf varint overflows 64 bits")]
    VarintOverflow,
    /// A length prefix runs past the end of its message.
    #[error("protobuf length runs past the end of the data")]
    LengthOutOfBounds,
    /// A field key carries number 0 or a number above 2^29 - 1.
    #[error("illegal protobuf field number {0}")]
    InvalidFieldNumber(u64),
    /// A field uses a wire type protobuf does not define or Kubernetes does not use (groups).
    #[error("unsupported wire type {wire_type} for field {field}")]
    UnsupportedWireType {
        /// The field number.
        field: u32,
        /// The wire type.
        wire_type: u8,
    },
    /// A known field arrived with a wire type that does not fit its type.
    #[error("wrong wire type {wire_type} for field {field}")]
    WireTypeMismatch {
        /// The field (JSON name or description).
        field: String,
        /// The wire type found.
        wire_type: u8,
    },
    /// Messages nest deeper than [`MAX_DEPTH`].
    #[error("protobuf messages nest deeper than {0} levels")]
    TooDeep(usize),
    /// The envelope names no kind.
    #[error("Object 'Kind' is missing in protobuf envelope")]
    MissingKind,
    /// The envelope names no apiVersion.
    #[error("Object 'apiVersion' is missing in protobuf envelope")]
    MissingVersion,
    /// No message is known for the envelope's apiVersion and kind.
    #[error("no kind \"{kind}\" is registered for version \"{api_version}\" in protobuf decoding")]
    UnknownKind {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// The envelope declares a content encoding (compression) other than none.
    #[error("unsupported protobuf content encoding {0:?}")]
    UnsupportedContentEncoding(String),
    /// A value cannot be represented in JSON (out-of-range time, bad IntOrString, NaN).
    #[error("invalid protobuf value: {0}")]
    InvalidValue(&'static str),
    /// Embedded JSON (`RawExtension`, `FieldsV1`) does not parse.
    #[error("invalid embedded JSON: {0}")]
    EmbeddedJson(String),
    /// A JSON value does not fit the protobuf field it is encoded into.
    #[error("cannot encode {field} as protobuf: expected {expected}")]
    JsonShape {
        /// The field (JSON name or message).
        field: String,
        /// What the field needs.
        expected: &'static str,
    },
    /// The object to encode has no `apiVersion` or `kind`.
    #[error("object has no apiVersion or kind to encode as protobuf")]
    MissingTypeMeta,
    /// The built-in descriptor table is inconsistent (a bug, not an input error).
    #[error("protobuf descriptor table: {0}")]
    Descriptors(String),
}

/// Whether a `Content-Type` header value names Kubernetes protobuf (parameters ignored).
pub fn is_protobuf_content_type(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(CONTENT_TYPE))
}

/// Decodes a `k8s\0`-prefixed protobuf object body into the JSON object (with `apiVersion`
/// and `kind`) that a JSON client would have sent.
pub fn decode_object(bytes: &[u8]) -> Result<Value, ProtobufError> {
    let d = descriptors::descriptors()?;
    decode_envelope(d, bytes, 0, None)
}

/// As [`decode_object`], but an envelope without apiVersion or kind takes them from
/// `default_api_version` / `default_kind` (upstream fills them from the request path).
#[cfg(test)]
pub fn decode_object_with_defaults(
    bytes: &[u8],
    default_api_version: &str,
    default_kind: &str,
) -> Result<Value, ProtobufError> {
    let d = descriptors::descriptors()?;
    decode_envelope(d, bytes, 0, Some((default_api_version, default_kind)))
}

/// Whether the built-in table knows the object `kind` of `api_version`.
pub fn supports_kind(api_version: &str, kind: &str) -> bool {
    descriptors::descriptors().is_ok_and(|d| d.message_for_kind(api_version, kind).is_some())
}

/// The `runtime.Unknown` envelope.
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
    content_encoding: String,
}

/// Reads the fields of a `runtime.Unknown` (after the magic).
fn read_envelope(bytes: &[u8]) -> Result<Envelope<'_>, ProtobufError> {
    let mut env = Envelope {
        api_version: String::new(),
        kind: String::new(),
        raw: &[],
        content_encoding: String::new(),
    };
    let mut r = Reader::new(bytes);
    while let Some((number, wire)) = r.read_field()? {
        let bad = |wire: WireValue<'_>| ProtobufError::WireTypeMismatch {
            field: format!("runtime.Unknown field {number}"),
            wire_type: wire.wire_type(),
        };
        match (number, wire) {
            (1, WireValue::Bytes(type_meta)) => {
                let mut tr = Reader::new(type_meta);
                while let Some((n, w)) = tr.read_field()? {
                    match (n, w) {
                        (1, WireValue::Bytes(b)) => {
                            env.api_version = String::from_utf8_lossy(b).into_owned();
                        }
                        (2, WireValue::Bytes(b)) => {
                            env.kind = String::from_utf8_lossy(b).into_owned();
                        }
                        (1 | 2, other) => {
                            return Err(ProtobufError::WireTypeMismatch {
                                field: format!("runtime.TypeMeta field {n}"),
                                wire_type: other.wire_type(),
                            });
                        }
                        _ => {}
                    }
                }
            }
            (2, WireValue::Bytes(raw)) => env.raw = raw,
            (3, WireValue::Bytes(b)) => {
                env.content_encoding = String::from_utf8_lossy(b).into_owned();
            }
            (4, WireValue::Bytes(_)) => {}
            (1..=4, other) => return Err(bad(other)),
            _ => {}
        }
    }
    Ok(env)
}

/// Decodes a `k8s\0` envelope at `depth`; shared with embedded `RawExtension` objects.
pub(crate) fn decode_envelope(
    d: &Descriptors,
    bytes: &[u8],
    depth: usize,
    defaults: Option<(&str, &str)>,
) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep(MAX_DEPTH));
    }
    let body = bytes
        .strip_prefix(MAGIC)
        .ok_or(ProtobufError::MissingMagic)?;
    if body.is_empty() {
        return Err(ProtobufError::Empty);
    }
    let mut env = read_envelope(body)?;
    if !env.content_encoding.is_empty() {
        return Err(ProtobufError::UnsupportedContentEncoding(
            env.content_encoding,
        ));
    }
    if let Some((api_version, kind)) = defaults {
        if env.kind.is_empty() {
            env.kind = kind.to_owned();
        }
        if env.api_version.is_empty() {
            env.api_version = api_version.to_owned();
        }
    }
    if env.kind.is_empty() {
        return Err(ProtobufError::MissingKind);
    }
    if env.api_version.is_empty() {
        return Err(ProtobufError::MissingVersion);
    }
    let idx = d
        .message_for_kind(&env.api_version, &env.kind)
        .ok_or_else(|| ProtobufError::UnknownKind {
            api_version: env.api_version.clone(),
            kind: env.kind.clone(),
        })?;
    let decoded = decode::decode_message(d, idx, env.raw, depth + 1)?;
    let mut object = Map::new();
    object.insert("apiVersion".to_owned(), Value::String(env.api_version));
    object.insert("kind".to_owned(), Value::String(env.kind));
    match decoded {
        Value::Object(fields) => {
            for (k, v) in fields {
                object.entry(k).or_insert(v);
            }
        }
        _ => {
            return Err(ProtobufError::Descriptors(
                "top-level kind does not decode to an object".to_owned(),
            ));
        }
    }
    Ok(Value::Object(object))
}

/// The WatchEvent message's full name.
const WATCH_EVENT: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent";

/// Appends the `k8s\0` + `runtime.Unknown` envelope around the message bytes `raw`.
fn put_envelope(out: &mut Vec<u8>, api_version: &str, kind: &str, raw: &[u8]) {
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
    wire::put_bytes_field(&mut type_meta, 1, api_version.as_bytes());
    wire::put_bytes_field(&mut type_meta, 2, kind.as_bytes());
    out.extend_from_slice(MAGIC);
    wire::put_bytes_field(out, 1, &type_meta);
    wire::put_bytes_field(out, 2, raw);
    wire::put_bytes_field(out, 3, b"");
    wire::put_bytes_field(out, 4, b"");
}

/// The `apiVersion` and `kind` of a JSON object.
fn type_meta(object: &Value) -> Result<(&str, &str), ProtobufError> {
    let api_version = object.get("apiVersion").and_then(Value::as_str);
    let kind = object.get("kind").and_then(Value::as_str);
    match (api_version, kind) {
        (Some(a), Some(k)) if !a.is_empty() && !k.is_empty() => Ok((a, k)),
        _ => Err(ProtobufError::MissingTypeMeta),
    }
}

/// Encodes a JSON object (with `apiVersion` and `kind`) as a `k8s\0`-prefixed protobuf body,
/// the bytes kube-apiserver writes for the same Go value.
pub fn encode_object(object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let d = descriptors::descriptors()?;
    let (api_version, kind) = type_meta(object)?;
    let idx = d
        .message_for_kind(api_version, kind)
        .ok_or_else(|| ProtobufError::UnknownKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        })?;
    let raw = encode::encode_message(d, idx, object, 1)?;
    let mut out = Vec::with_capacity(raw.len() + api_version.len() + kind.len() + 16);
    put_envelope(&mut out, api_version, kind, &raw);
    Ok(out)
}

/// Encodes a list (`<Kind>List` of `api_version`: `metadata` = 1, `items` = 2) from its
/// `ListMeta` JSON and items, without building the list's JSON.
pub fn encode_list<'a>(
    api_version: &str,
    list_kind: &str,
    metadata: &Value,
    items: impl IntoIterator<Item = &'a Value>,
) -> Result<Vec<u8>, ProtobufError> {
    let d = descriptors::descriptors()?;
    let unknown = || ProtobufError::UnknownKind {
        api_version: api_version.to_owned(),
        kind: list_kind.to_owned(),
    };
    let idx = d
        .message_for_kind(api_version, list_kind)
        .ok_or_else(unknown)?;
    let msg = d.messages.get(idx).ok_or_else(unknown)?;
    let message_of = |number: u32| {
        msg.field_index(number)
            .and_then(|pos| msg.fields.get(pos))
            .and_then(|f| match f.ty {
                descriptors::FieldType::Value(descriptors::ValueType::Message(i)) => Some(i),
                _ => None,
            })
            .ok_or_else(|| {
                ProtobufError::Descriptors(format!("{}: not a list message", msg.full_name))
            })
    };
    let (meta_idx, item_idx) = (message_of(1)?, message_of(2)?);
    let mut raw = Vec::new();
    wire::put_bytes_field(
        &mut raw,
        1,
        &encode::encode_message(d, meta_idx, metadata, 2)?,
    );
    for item in items {
        wire::put_bytes_field(&mut raw, 2, &encode::encode_message(d, item_idx, item, 2)?);
    }
    let mut out = Vec::with_capacity(raw.len() + api_version.len() + list_kind.len() + 16);
    put_envelope(&mut out, api_version, list_kind, &raw);
    Ok(out)
}

/// One frame of a protobuf watch stream (`;stream=watch`): a 4-byte big-endian length, then
/// a bare `meta.v1.WatchEvent{type, object: RawExtension{raw}}` whose `raw` is the object's
/// own `k8s\0` envelope, as upstream's raw serializer and length-delimited framer write it.
pub fn encode_watch_event(event_type: &str, object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let d = descriptors::descriptors()?;
    let embedded = encode_object(object)?;
    let idx = d
        .message_by_name(WATCH_EVENT)
        .ok_or_else(|| ProtobufError::Descriptors(format!("no {WATCH_EVENT}")))?;
    let mut raw_extension = Vec::with_capacity(embedded.len() + 8);
    wire::put_bytes_field(&mut raw_extension, 1, &embedded);
    // Checked against the table, so a renumbering upstream cannot go unnoticed.
    let msg = d
        .messages
        .get(idx)
        .ok_or_else(|| ProtobufError::Descriptors(format!("no {WATCH_EVENT}")))?;
    let numbers: Vec<(u32, &str)> = msg
        .fields
        .iter()
        .map(|f| (f.number, f.json.as_str()))
        .collect();
    if numbers != [(1, "type"), (2, "object")] {
        return Err(ProtobufError::Descriptors(format!(
            "unexpected {WATCH_EVENT} layout"
        )));
    }
    let mut event = Vec::with_capacity(raw_extension.len() + event_type.len() + 8);
    wire::put_bytes_field(&mut event, 1, event_type.as_bytes());
    wire::put_bytes_field(&mut event, 2, &raw_extension);
    let len = u32::try_from(event.len())
        .map_err(|_| ProtobufError::InvalidValue("watch event larger than 4 GiB"))?;
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event);
    Ok(frame)
}

/// Decodes one protobuf watch frame's event (after its length prefix) to
/// `{"type": ..., "object": ...}`; for tests of the encoder and of clients.
#[doc(hidden)]
pub fn decode_watch_event(event: &[u8]) -> Result<Value, ProtobufError> {
    let d = descriptors::descriptors()?;
    let idx = d
        .message_by_name(WATCH_EVENT)
        .ok_or_else(|| ProtobufError::Descriptors(format!("no {WATCH_EVENT}")))?;
    decode::decode_message(d, idx, event, 0)
}
