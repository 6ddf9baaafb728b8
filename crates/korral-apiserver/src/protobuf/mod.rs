//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`), decoded to JSON.
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
//! Malformed input (truncation, bad varints, lengths past the end, wire-type mismatches,
//! nesting deeper than [`MAX_DEPTH`]) yields a [`ProtobufError`]; nothing panics, recursion
//! is bounded, and memory grows only with the input.

mod decode;
mod descriptors;
mod wire;

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
#[cfg(test)]
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
