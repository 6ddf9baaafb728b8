//! The types of the checker, as cel-go names them, and how one type is assigned to another.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use cel::common::ast::{Expr, IdedExpr};

use crate::validation::cel::library::authz;

/// A CEL type.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// Any value: checked when the expression runs.
    Dyn,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    Str,
    /// `bytes`.
    Bytes,
    /// `null_type`.
    Null,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `google.protobuf.Duration`.
    Duration,
    /// A type value (`int`, `type(x)`).
    Type,
    /// `list(T)`.
    List(Box<Ty>),
    /// `map(K, V)`.
    Map(Box<Ty>, Box<Ty>),
    /// `optional_type(T)`.
    Optional(Box<Ty>),
    /// An object with declared fields (a schema's object, the DRA device).
    Object(Arc<Object>),
    /// A library's opaque type (`kubernetes.Quantity`, `net.IP`...).
    Opaque(&'static str),
    /// A type parameter of a signature.
    Param(char),
}

/// An object type: its name and its fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object {
    /// The type's name as messages print it.
    pub name: String,
    /// The declared fields.
    pub fields: BTreeMap<String, Ty>,
}

impl Ty {
    /// `list(t)`.
    pub fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    /// `map(k, v)`.
    pub fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v))
    }

    /// `optional_type(t)`.
    pub fn optional(t: Ty) -> Ty {
        Ty::Optional(Box::new(t))
    }

    /// An object type named `name` with `fields`.
    pub fn object(name: impl Into<String>, fields: BTreeMap<String, Ty>) -> Ty {
        Ty::Object(Arc::new(Object {
            name: name.into(),
            fields,
        }))
    }

    /// Whether this is `dyn`.
    pub fn is_dyn(&self) -> bool {
        *self == Ty::Dyn
    }

    /// Whether `null` may stand for a value of this type (cel-go's legacy nullability).
    fn nullable(&self) -> bool {
        matches!(
            self,
            Ty::Null | Ty::Dyn | Ty::Object(_) | Ty::Opaque(_) | Ty::Timestamp | Ty::Duration
        ) || matches!(self, Ty::Optional(_))
    }

    /// Whether a value of type `self` may meet one of type `other` (same type up to `dyn`
    /// parts, or null beside a nullable type).
    pub fn fits(&self, other: &Ty) -> bool {
        match (self, other) {
            (Ty::Dyn, _) | (_, Ty::Dyn) => true,
            (Ty::Null, t) | (t, Ty::Null) => t.nullable(),
            (Ty::List(a), Ty::List(b)) | (Ty::Optional(a), Ty::Optional(b)) => a.fits(b),
            (Ty::Map(ka, va), Ty::Map(kb, vb)) => ka.fits(kb) && va.fits(vb),
            (a, b) => a == b,
        }
    }

    /// The type of both: the more precise where one is `dyn` (or null), `dyn` where they differ.
    pub fn join(&self, other: &Ty) -> Ty {
        match (self, other) {
            (a, b) if a == b => a.clone(),
            (Ty::Dyn, b) => b.clone(),
            (a, Ty::Dyn) => a.clone(),
            (Ty::Null, b) if b.nullable() => b.clone(),
            (a, Ty::Null) if a.nullable() => a.clone(),
            (Ty::List(a), Ty::List(b)) => Ty::list(a.join(b)),
            (Ty::Optional(a), Ty::Optional(b)) => Ty::optional(a.join(b)),
            (Ty::Map(ka, va), Ty::Map(kb, vb)) => Ty::map(ka.join(kb), va.join(vb)),
            _ => Ty::Dyn,
        }
    }

    /// Parses a signature's type: `int`, `list(A)`, `map(K, V)`, `optional(A)`, a library
    /// type's name, or one capital letter for a type parameter.
    pub(super) fn parse(s: &str) -> Ty {
        let s = s.trim();
        if let Some(inner) = s.strip_prefix("list(").and_then(|r| r.strip_suffix(')')) {
            return Ty::list(Ty::parse(inner));
        }
        if let Some(inner) = s
            .strip_prefix("optional(")
            .and_then(|r| r.strip_suffix(')'))
        {
            return Ty::optional(Ty::parse(inner));
        }
        if let Some(inner) = s.strip_prefix("map(").and_then(|r| r.strip_suffix(')')) {
            // Keys are never compound in the tables.
            let (k, v) = inner.split_once(',').unwrap_or((inner, "dyn"));
            return Ty::map(Ty::parse(k), Ty::parse(v));
        }
        match s {
            "bool" => Ty::Bool,
            "int" => Ty::Int,
            "uint" => Ty::Uint,
            "double" => Ty::Double,
            "string" => Ty::Str,
            "bytes" => Ty::Bytes,
            "null_type" => Ty::Null,
            "timestamp" => Ty::Timestamp,
            "duration" => Ty::Duration,
            "type" => Ty::Type,
            "dyn" => Ty::Dyn,
            _ => {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) if c.is_ascii_uppercase() => Ty::Param(c),
                    _ => OPAQUE
                        .iter()
                        .find(|n| **n == s)
                        .map_or(Ty::Dyn, |n| Ty::Opaque(n)),
                }
            }
        }
    }

    /// This type with its parameters replaced by their bindings (`dyn` when unbound).
    pub(super) fn substitute(&self, bindings: &HashMap<char, Ty>) -> Ty {
        match self {
            Ty::Param(c) => bindings.get(c).cloned().unwrap_or(Ty::Dyn),
            Ty::List(t) => Ty::list(t.substitute(bindings)),
            Ty::Optional(t) => Ty::optional(t.substitute(bindings)),
            Ty::Map(k, v) => Ty::map(k.substitute(bindings), v.substitute(bindings)),
            other => other.clone(),
        }
    }

    /// Whether an argument of type `arg` may be passed for this parameter type, binding the
    /// parameters it meets (cel-go's `isAssignable`, `dyn` matching anything).
    pub(super) fn accepts(&self, arg: &Ty, bindings: &mut HashMap<char, Ty>) -> bool {
        match (self, arg) {
            (Ty::Param(c), a) => match bindings.get(c).cloned() {
                None => {
                    bindings.insert(*c, a.clone());
                    true
                }
                Some(bound) if bound.fits(a) => {
                    // cel-go keeps the more general of the two (its `mostGeneral`): a
                    // parameter that meets `dyn` is `dyn` (`c ? true : dyn(x)` is `dyn`).
                    if *a == Ty::Dyn || (bound == Ty::Null && a.nullable()) {
                        bindings.insert(*c, a.clone());
                    }
                    true
                }
                Some(_) => false,
            },
            (Ty::Dyn, _) | (_, Ty::Dyn) => true,
            (p, Ty::Null) => p.nullable(),
            (Ty::List(p), Ty::List(a)) | (Ty::Optional(p), Ty::Optional(a)) => {
                p.accepts(a, bindings)
            }
            (Ty::Map(pk, pv), Ty::Map(ak, av)) => {
                pk.accepts(ak, bindings) && pv.accepts(av, bindings)
            }
            (p, a) => p == a,
        }
    }
}

/// The libraries' opaque types.
pub const OPAQUE: &[&str] = &[
    "kubernetes.Quantity",
    "kubernetes.Semver",
    "kubernetes.URL",
    "kubernetes.NamedFormat",
    "net.IP",
    "net.CIDR",
    authz::AUTHORIZER,
    authz::PATH_CHECK,
    authz::GROUP_CHECK,
    authz::RESOURCE_CHECK,
    authz::DECISION,
];

/// The qualified type names cel-go's standard environment declares (its `stdTypes`): the
/// protobuf well-known types timestamps and durations are.
pub const STANDARD_QUALIFIED: [&str; 2] = ["google.protobuf.Timestamp", "google.protobuf.Duration"];

/// When `e` spells a qualified type name (field selections on an identifier naming a type of
/// the standard environment or of a library: `google.protobuf.Timestamp`, `net.IP`), its root
/// identifier; a variable of that name shadows the type, as in cel-go.
pub fn qualified_type_root(e: &IdedExpr) -> Option<&str> {
    let mut segments: Vec<&str> = Vec::new();
    let mut at = &e.expr;
    let root = loop {
        match at {
            Expr::Select(sel) if !sel.test => {
                segments.push(&sel.field);
                at = &sel.operand.expr;
            }
            Expr::Ident(name) => break name.as_str(),
            _ => return None,
        }
    };
    if segments.is_empty() {
        return None;
    }
    let spelled = || std::iter::once(root).chain(segments.iter().rev().copied());
    STANDARD_QUALIFIED
        .iter()
        .chain(OPAQUE)
        .any(|name| name.split('.').eq(spelled()))
        .then_some(root)
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Dyn => f.write_str("dyn"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::Str => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Null => f.write_str("null_type"),
            Ty::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Ty::Duration => f.write_str("google.protobuf.Duration"),
            Ty::Type => f.write_str("type"),
            Ty::List(t) => write!(f, "list({t})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Optional(t) => write!(f, "optional_type({t})"),
            Ty::Object(o) => f.write_str(&o.name),
            Ty::Opaque(name) => f.write_str(name),
            Ty::Param(c) => write!(f, "{c}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_signature_types() {
        for (text, shown) in [
            ("list(A)", "list(A)"),
            ("map(K, V)", "map(K, V)"),
            ("optional(list(string))", "optional_type(list(string))"),
            ("kubernetes.Quantity", "kubernetes.Quantity"),
            ("timestamp", "google.protobuf.Timestamp"),
        ] {
            assert_eq!(Ty::parse(text).to_string(), shown);
        }
    }

    #[test]
    fn parameters_bind_once() {
        let mut b = HashMap::new();
        let p = Ty::parse("A");
        assert!(p.accepts(&Ty::Int, &mut b));
        assert!(!p.accepts(&Ty::Str, &mut b));
        assert!(Ty::parse("list(A)").accepts(&Ty::list(Ty::Int), &mut b));
        assert_eq!(Ty::parse("list(A)").substitute(&b), Ty::list(Ty::Int));
        // A parameter that meets `dyn` is `dyn`, as cel-go's `mostGeneral` picks.
        assert!(p.accepts(&Ty::Dyn, &mut b));
        assert_eq!(b.get(&'A'), Some(&Ty::Dyn));
        // Null meets only nullable types.
        let mut b = HashMap::new();
        assert!(p.accepts(&Ty::Str, &mut b));
        assert!(!p.accepts(&Ty::Null, &mut b));
        let mut b = HashMap::new();
        assert!(p.accepts(&Ty::Null, &mut b));
        assert!(p.accepts(&Ty::Timestamp, &mut b));
        assert_eq!(b.get(&'A'), Some(&Ty::Timestamp));
    }
}
