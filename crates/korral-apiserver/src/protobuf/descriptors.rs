//! The message descriptor table (`descriptors.txt`, produced by
//! `tools/gen_protobuf_descriptors.py`), parsed once on first use.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::ProtobufError;

/// The generated table, embedded in the binary.
const TABLE: &str = include_str!("descriptors.txt");

/// The parsed table, or why it could not be parsed.
static DESCRIPTORS: LazyLock<Result<Descriptors, String>> =
    LazyLock::new(|| Descriptors::parse(TABLE));

/// The descriptor table.
pub(crate) fn descriptors() -> Result<&'static Descriptors, ProtobufError> {
    DESCRIPTORS
        .as_ref()
        .map_err(|e| ProtobufError::Descriptors(e.clone()))
}

/// A scalar protobuf type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scalar {
    /// `string`.
    String,
    /// `bytes` (base64 in JSON).
    Bytes,
    /// `bool`.
    Bool,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint32`.
    Uint32,
    /// `uint64`.
    Uint64,
    /// `sint32` (zigzag).
    Sint32,
    /// `sint64` (zigzag).
    Sint64,
    /// `double`.
    Double,
    /// `float`.
    Float,
    /// `fixed32`.
    Fixed32,
    /// `fixed64`.
    Fixed64,
    /// `sfixed32`.
    Sfixed32,
    /// `sfixed64`.
    Sfixed64,
    /// An enum, emitted as its number.
    Enum,
}

impl Scalar {
    /// The scalar named `name` in the table.
    fn parse(name: &str) -> Option<Scalar> {
        Some(match name {
            "string" => Scalar::String,
            "bytes" => Scalar::Bytes,
            "bool" => Scalar::Bool,
            "int32" => Scalar::Int32,
            "int64" => Scalar::Int64,
            "uint32" => Scalar::Uint32,
            "uint64" => Scalar::Uint64,
            "sint32" => Scalar::Sint32,
            "sint64" => Scalar::Sint64,
            "double" => Scalar::Double,
            "float" => Scalar::Float,
            "fixed32" => Scalar::Fixed32,
            "fixed64" => Scalar::Fixed64,
            "sfixed32" => Scalar::Sfixed32,
            "sfixed64" => Scalar::Sfixed64,
            "enum" => Scalar::Enum,
            _ => return None,
        })
    }
}

/// The type of a map value or a plain field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueType {
    /// A scalar.
    Scalar(Scalar),
    /// A message, by index into [`Descriptors::messages`].
    Message(usize),
}

/// A field's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldType {
    /// A scalar or message.
    Value(ValueType),
    /// `map<key, value>`: repeated entry messages with key = 1, value = 2.
    Map(Scalar, ValueType),
}

/// One field of a message.
#[derive(Debug, Clone)]
pub(crate) struct Field {
    /// The field number.
    pub(crate) number: u32,
    /// The JSON name.
    pub(crate) json: String,
    /// The type.
    pub(crate) ty: FieldType,
    /// `repeated`.
    pub(crate) repeated: bool,
    /// Omitted from JSON when zero (a non-pointer Go scalar with `omitempty`).
    pub(crate) omit_zero: bool,
    /// An embedded Go struct whose JSON fields are inlined into the parent object.
    pub(crate) inline: bool,
    /// Not part of the JSON form (`json:"-"`).
    pub(crate) skip: bool,
    /// Always written by gogo-protobuf, zero or not (a non-pointer Go field that is neither
    /// repeated, a map nor `[]byte`); the encoder writes its zero value when JSON lacks it.
    pub(crate) always: bool,
}

/// Messages whose JSON form is not an object of their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    /// An ordinary message.
    None,
    /// `meta.v1.Time`: RFC 3339 seconds, or `null`.
    Time,
    /// `meta.v1.MicroTime`: RFC 3339 with microseconds, or `null`.
    MicroTime,
    /// `meta.v1.Duration`: a Go duration string.
    Duration,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `resource.Quantity` / `QuantityValue`: a string.
    Quantity,
    /// `runtime.RawExtension`: the embedded JSON (or protobuf object).
    RawExtension,
    /// `meta.v1.FieldsV1` and apiextensions' `JSON`: the embedded JSON (`null` when empty).
    EmbeddedJson,
    /// apiextensions' `JSONSchemaPropsOrArray` (schema = 1, schemas = 2): the schema object,
    /// or the array of schemas when there are any.
    SchemaOrArray,
    /// apiextensions' `JSONSchemaPropsOrBool` (allows = 1, schema = 2): the schema object
    /// when there is one, else the boolean.
    SchemaOrBool,
    /// apiextensions' `JSONSchemaPropsOrStringArray` (schema = 1, property = 2): the array
    /// of property names when there are any, else the schema object, else `null`.
    SchemaOrStringArray,
}

impl Special {
    /// Whether the message's fields are decoded and encoded as usual, the JSON form then
    /// choosing between them (the apiextensions unions).
    pub(crate) fn is_union(self) -> bool {
        matches!(
            self,
            Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray
        )
    }

    /// The special handling of the message `full_name`.
    fn of(full_name: &str) -> Special {
        match full_name {
            "k8s.io.apimachinery.pkg.apis.meta.v1.Time" => Special::Time,
            "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => Special::MicroTime,
            "k8s.io.apimachinery.pkg.apis.meta.v1.Duration" => Special::Duration,
            "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1"
            | "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON" => {
                Special::EmbeddedJson
            }
            "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray" => {
                Special::SchemaOrArray
            }
            "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool" => {
                Special::SchemaOrBool
            }
            "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray" => {
                Special::SchemaOrStringArray
            }
            "k8s.io.apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
            "k8s.io.apimachinery.pkg.api.resource.Quantity"
            | "k8s.io.apimachinery.pkg.api.resource.QuantityValue" => Special::Quantity,
            "k8s.io.apimachinery.pkg.runtime.RawExtension" => Special::RawExtension,
            _ => Special::None,
        }
    }
}

/// One message.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    /// The fully qualified proto name, e.g. `k8s.io.api.core.v1.ConfigMap`.
    pub(crate) full_name: String,
    /// A Go named slice (`type ExtraValue []string`): JSON is the array of field `items`.
    pub(crate) list_wrapper: bool,
    /// Special JSON handling.
    pub(crate) special: Special,
    /// Fields, sorted by number.
    pub(crate) fields: Vec<Field>,
}

impl Message {
    /// The JSON name of field `number`, if the message has it.
    pub(crate) fn json_name(&self, number: u32) -> Option<&str> {
        self.field_index(number)
            .and_then(|i| self.fields.get(i))
            .map(|f| f.json.as_str())
    }

    /// The position of field `number` in [`Message::fields`].
    pub(crate) fn field_index(&self, number: u32) -> Option<usize> {
        self.fields.binary_search_by_key(&number, |f| f.number).ok()
    }
}

/// The parsed descriptor table.
#[derive(Debug)]
pub(crate) struct Descriptors {
    /// Every message.
    pub(crate) messages: Vec<Message>,
    /// Message index by full name.
    by_name: HashMap<String, usize>,
    /// Proto package by `apiVersion`.
    packages: HashMap<String, String>,
}

/// The package of the meta types (`DeleteOptions`, `Status`, ...), registered in every group.
const META_PACKAGE: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";

/// Kinds every group version serves from the meta package.
const META_KINDS: &[&str] = &[
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
    "GetOptions",
    "ListOptions",
    "Status",
    "WatchEvent",
];

/// A field line whose type refers to a message not yet resolved.
enum PendingType {
    Scalar(Scalar),
    Message(String),
}

impl Descriptors {
    /// The message index for an object of `kind` in `api_version`.
    pub(crate) fn message_for_kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        if let Some(package) = self.packages.get(api_version)
            && let Some(&idx) = self.by_name.get(&format!("{package}.{kind}"))
        {
            return Some(idx);
        }
        if META_KINDS.contains(&kind) {
            return self.by_name.get(&format!("{META_PACKAGE}.{kind}")).copied();
        }
        None
    }

    /// The message index for a fully qualified name.
    pub(crate) fn message_by_name(&self, full_name: &str) -> Option<usize> {
        self.by_name.get(full_name).copied()
    }

    /// Parses the table text.
    pub(crate) fn parse(text: &str) -> Result<Descriptors, String> {
        let mut aliases: HashMap<String, String> = HashMap::new();
        let mut packages: HashMap<String, String> = HashMap::new();
        let mut messages: Vec<Message> = Vec::new();
        let mut by_name: HashMap<String, usize> = HashMap::new();
        // (message index, field, pending value type, pending map key)
        let mut pending: Vec<(usize, Field, PendingType, Option<Scalar>)> = Vec::new();
        let mut package: Option<(String, String)> = None; // (alias, full)

        for (lineno, line) in text.lines().enumerate() {
            let lineno = lineno + 1;
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let parts: Vec<&str> = line.split_ascii_whitespace().collect();
            match parts.as_slice() {
                ["p", alias, full, api_version] => {
                    aliases.insert((*alias).to_owned(), (*full).to_owned());
                    if *api_version != "-" {
                        packages.insert((*api_version).to_owned(), (*full).to_owned());
                    }
                    package = Some(((*alias).to_owned(), (*full).to_owned()));
                }
                ["m", name, rest @ ..] => {
                    let (_, full) = package
                        .as_ref()
                        .ok_or_else(|| format!("line {lineno}: message outside a package"))?;
                    let full_name = format!("{full}.{name}");
                    let list_wrapper = match rest {
                        [] => false,
                        ["l"] => true,
                        _ => return Err(format!("line {lineno}: bad message flags")),
                    };
                    if by_name.insert(full_name.clone(), messages.len()).is_some() {
                        return Err(format!("line {lineno}: duplicate message {full_name}"));
                    }
                    messages.push(Message {
                        special: Special::of(&full_name),
                        full_name,
                        list_wrapper,
                        fields: Vec::new(),
                    });
                }
                [number, json, ty, rest @ ..] => {
                    let (alias, _) = package
                        .as_ref()
                        .ok_or_else(|| format!("line {lineno}: field outside a package"))?;
                    let msg = messages
                        .len()
                        .checked_sub(1)
                        .ok_or_else(|| format!("line {lineno}: field outside a message"))?;
                    let number: u32 = number
                        .parse()
                        .map_err(|_| format!("line {lineno}: bad field number"))?;
                    let flags = match rest {
                        [] => "",
                        [f] => f,
                        _ => return Err(format!("line {lineno}: too many tokens")),
                    };
                    if let Some(bad) = flags.chars().find(|c| !"rzixn".contains(*c)) {
                        return Err(format!("line {lineno}: unknown flag {bad}"));
                    }
                    let pending_of = |t: &str| -> PendingType {
                        match Scalar::parse(t) {
                            Some(s) => PendingType::Scalar(s),
                            None if t.contains('.') => PendingType::Message(t.to_owned()),
                            None => PendingType::Message(format!("{alias}.{t}")),
                        }
                    };
                    let (key, value) = if let Some(map) = ty.strip_prefix("map:") {
                        let (k, v) = map
                            .split_once(':')
                            .ok_or_else(|| format!("line {lineno}: bad map type"))?;
                        let k = Scalar::parse(k)
                            .ok_or_else(|| format!("line {lineno}: bad map key type"))?;
                        (Some(k), pending_of(v))
                    } else {
                        (None, pending_of(ty))
                    };
                    let field = Field {
                        number,
                        json: (*json).to_owned(),
                        ty: FieldType::Value(ValueType::Scalar(Scalar::String)),
                        repeated: flags.contains('r'),
                        omit_zero: flags.contains('z'),
                        inline: flags.contains('i'),
                        skip: flags.contains('x'),
                        always: flags.contains('n'),
                    };
                    pending.push((msg, field, value, key));
                }
                _ => return Err(format!("line {lineno}: unrecognised line")),
            }
        }

        for (msg, mut field, value, key) in pending {
            let value = match value {
                PendingType::Scalar(s) => ValueType::Scalar(s),
                PendingType::Message(aliased) => {
                    let (alias, name) = aliased
                        .rsplit_once('.')
                        .ok_or_else(|| format!("bad type reference {aliased}"))?;
                    let full = aliases
                        .get(alias)
                        .ok_or_else(|| format!("unknown package alias {alias}"))?;
                    let idx = by_name
                        .get(&format!("{full}.{name}"))
                        .copied()
                        .ok_or_else(|| format!("unknown message {full}.{name}"))?;
                    ValueType::Message(idx)
                }
            };
            field.ty = match key {
                Some(k) => FieldType::Map(k, value),
                None => FieldType::Value(value),
            };
            let message = messages
                .get_mut(msg)
                .ok_or_else(|| "field of a missing message".to_owned())?;
            message.fields.push(field);
        }
        for m in &mut messages {
            m.fields.sort_by_key(|f| f.number);
            if m.fields.windows(2).any(|w| w[0].number == w[1].number) {
                return Err(format!("{}: duplicate field number", m.full_name));
            }
        }
        Ok(Descriptors {
            messages,
            by_name,
            packages,
        })
    }
}
