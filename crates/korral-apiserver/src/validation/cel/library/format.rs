//! The format library (`kubernetes.format`): `format.named(name)` (an optional format) and
//! the named formats `format.dns1123Label()`, `format.dns1123Subdomain()`,
//! `format.dns1035Label()`, `format.qualifiedName()`, the `...Prefix()` forms,
//! `format.labelValue()`, `format.uri()`, `format.uuid()`, `format.byte()`, `format.date()`
//! and `format.datetime()`; `<format>.validate(string)` is `optional.none()` for a valid
//! string, else the optional list of upstream's error messages.

use std::sync::LazyLock;

use base64::Engine;
use cel::common::types::{STRING_TYPE, Type};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};
use regex::Regex;

use super::{function, opaque, opaque_arg, opaque_type, optional, string_arg, string_list};
use crate::validation::names;

/// The CEL type name of a format.
pub const TYPE_NAME: &str = "kubernetes.NamedFormat";

/// A named format as a CEL value.
#[derive(Debug, Clone, Copy)]
pub struct Format {
    /// Upstream's name of the format (`DNS1123Label`).
    pub name: &'static str,
    validate: fn(&str) -> Vec<String>,
}

impl PartialEq for Format {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// The CEL type of a format.
pub fn format_type() -> Type {
    opaque_type(TYPE_NAME)
}

/// Upstream's `maskTrailingDash`: a prefix may end in a dash.
fn mask_trailing_dash(s: &str) -> String {
    match s.strip_suffix('-') {
        Some(head) if s.len() > 1 => format!("{}a", &head[..head.len().saturating_sub(1)]),
        _ => s.to_string(),
    }
}

fn uri(s: &str) -> Vec<String> {
    super::urlparse::parse_request_uri(s)
        .err()
        .into_iter()
        .collect()
}

fn uuid(s: &str) -> Vec<String> {
    static UUID: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$").ok()
    });
    match UUID.as_ref() {
        Some(re) if re.is_match(s) => Vec::new(),
        _ => vec!["does not match the UUID format".into()],
    }
}

fn byte(s: &str) -> Vec<String> {
    match base64::engine::general_purpose::STANDARD.decode(s) {
        Ok(_) => Vec::new(),
        Err(_) => vec!["invalid base64".into()],
    }
}

fn valid_date(y: u32, m: u32, d: u32) -> bool {
    let leap = y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400));
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

fn date_ok(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    if parts.len() != 3
        || parts[0].len() != 4
        || parts[1].len() != 2
        || parts[2].len() != 2
        || !parts.iter().all(|p| p.bytes().all(|c| c.is_ascii_digit()))
    {
        return false;
    }
    let n = |p: &str| p.parse::<u32>().unwrap_or(0);
    valid_date(n(parts[0]), n(parts[1]), n(parts[2]))
}

fn date(s: &str) -> Vec<String> {
    if date_ok(s) {
        Vec::new()
    } else {
        vec!["invalid date".into()]
    }
}

fn datetime(s: &str) -> Vec<String> {
    static TIME: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"^([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$").ok()
    });
    let ok = s.len() > 11
        && s.is_char_boundary(10)
        && date_ok(&s[..10])
        && matches!(s.as_bytes()[10], b'T' | b't' | b' ')
        && TIME.as_ref().is_some_and(|re| re.is_match(&s[11..]));
    if ok {
        Vec::new()
    } else {
        vec!["invalid datetime".into()]
    }
}

/// The named formats, by the name `format.named` takes.
const FORMATS: [(&str, Format); 13] = [
    (
        "dns1123Label",
        Format {
            name: "DNS1123Label",
            validate: names::dns1123_label,
        },
    ),
    (
        "dns1123Subdomain",
        Format {
            name: "DNS1123Subdomain",
            validate: names::dns1123_subdomain,
        },
    ),
    (
        "dns1035Label",
        Format {
            name: "DNS1035Label",
            validate: names::dns1035_label,
        },
    ),
    (
        "qualifiedName",
        Format {
            name: "QualifiedName",
            validate: names::validate_qualified_name,
        },
    ),
    (
        "dns1123LabelPrefix",
        Format {
            name: "DNS1123LabelPrefix",
            validate: |s| names::dns1123_label(&mask_trailing_dash(s)),
        },
    ),
    (
        "dns1123SubdomainPrefix",
        Format {
            name: "DNS1123SubdomainPrefix",
            validate: |s| names::dns1123_subdomain(&mask_trailing_dash(s)),
        },
    ),
    (
        "dns1035LabelPrefix",
        Format {
            name: "DNS1035LabelPrefix",
            validate: |s| names::dns1035_label(&mask_trailing_dash(s)),
        },
    ),
    (
        "labelValue",
        Format {
            name: "LabelValue",
            validate: names::validate_label_value,
        },
    ),
    (
        "uri",
        Format {
            name: "URI",
            validate: uri,
        },
    ),
    (
        "uuid",
        Format {
            name: "uuid",
            validate: uuid,
        },
    ),
    (
        "byte",
        Format {
            name: "byte",
            validate: byte,
        },
    ),
    (
        "date",
        Format {
            name: "date",
            validate: date,
        },
    ),
    (
        "datetime",
        Format {
            name: "datetime",
            validate: datetime,
        },
    ),
];

/// The format `format.<key>()` names.
fn named(key: &str) -> Option<Format> {
    FORMATS.iter().find(|(k, _)| *k == key).map(|(_, f)| *f)
}

fn validate(args: &[Value]) -> Result<Value, ExecutionError> {
    let format = opaque_arg::<Format>(args, 0)?;
    let errors = (format.validate)(string_arg(args, 1)?);
    Ok(optional((!errors.is_empty()).then(|| string_list(errors))))
}

/// Registers the library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(format_type())?;
    env.add_member_overload(
        "validate",
        "format-validate",
        format_type(),
        vec![STRING_TYPE],
        function!(validate),
    )?;
    env.add_overload(
        "format.named",
        "format-named",
        vec![STRING_TYPE],
        function!(|a| Ok(optional(named(string_arg(a, 0)?).map(opaque)))),
    )?;
    macro_rules! constants {
        ($($key:literal),*) => {
            $(env.add_overload(
                concat!("format.", $key),
                concat!("format.", $key),
                vec![],
                function!(|_| named($key)
                    .map(opaque)
                    .ok_or_else(|| super::error(concat!("format.", $key), "unknown format"))),
            )?;)*
        };
    }
    constants!(
        "dns1123Label",
        "dns1123Subdomain",
        "dns1035Label",
        "qualifiedName",
        "dns1123LabelPrefix",
        "dns1123SubdomainPrefix",
        "dns1035LabelPrefix",
        "labelValue",
        "uri",
        "uuid",
        "byte",
        "date",
        "datetime"
    );
    Ok(())
}

/// The names of the constant format functions (`format.dns1123Label`, ...).
pub fn constant_names() -> impl Iterator<Item = &'static str> {
    FORMATS.iter().map(|(k, _)| *k)
}

#[cfg(test)]
mod tests {
    use super::super::testing::truth;

    #[test]
    fn upstream_cases() {
        for expr in [
            "!format.dns1123Label().validate('my-label-name').hasValue()",
            "!format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()",
            "!format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()",
            "!format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()",
            "!format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()",
            "!format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue()",
            "!format.uri().validate('http://example.com').hasValue()",
            "!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
            "!format.byte().validate('aGVsbG8=').hasValue() && format.byte().validate('!').hasValue()",
            "!format.date().validate('2024-02-29').hasValue() && format.date().validate('2023-02-29').hasValue()",
            "!format.datetime().validate('2024-01-01T00:00:00Z').hasValue()",
            "format.dns1123Label().validate('contains a space').value() == ['a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \\'-\\', and must start and end with an alphanumeric character (e.g. \\'my-name\\',  or \\'123-abc\\', regex used for validation is \\'[a-z0-9]([-a-z0-9]*[a-z0-9])?\\')']",
            "format.dns1123Subdomain().validate('contains a space').hasValue()",
            "format.dns1035Label().validate('contains a space').hasValue()",
            "format.qualifiedName().validate('contains a space').hasValue()",
            "format.dns1123LabelPrefix().validate('contains a space-').hasValue()",
            "!format.named('unknown').hasValue()",
            "format.named('dns1123Label').value() == format.dns1123Label()",
            "format.named('uri').value() != format.dns1123Label()",
            "!format.labelValue().validate('my-cool-label-Value').hasValue()",
            "format.labelValue().validate('my-cool-label-Value!!\\n\\n!!!').hasValue()",
        ] {
            assert!(truth(expr), "{expr}");
        }
    }
}
